/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The host unit tests' TAP output: CHECK(cond) prints one "ok"/"not ok"
 * line per check; tap_done() prints the plan and gives the exit status.
 */
#ifndef UZ_UNIT_TAP_H
#define UZ_UNIT_TAP_H

#include <stdio.h>

static int failures, tests;

#define CHECK(cond)							\
	do {								\
		tests++;						\
		if (cond) {						\
			printf("ok %d - %s\n", tests, #cond);		\
		} else {						\
			printf("not ok %d - %s\n", tests, #cond);	\
			failures++;					\
		}							\
	} while (0)

static inline int tap_done(void)
{
	printf("1..%d\n", tests);
	return failures != 0;
}

#endif /* UZ_UNIT_TAP_H */
