/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * TAP output of the guest test programs: check() prints one "ok"/"not ok"
 * line, skip() an "ok # SKIP" line; n counts them, fails the failures.
 */
#ifndef UZ_GUEST_TAP_H
#define UZ_GUEST_TAP_H

#include <stdarg.h>
#include <stdio.h>

static int n, fails;

static inline void __attribute__((format(printf, 2, 3)))
check(int ok, const char *fmt, ...)
{
	va_list ap;

	n++;
	printf("%sok %d - ", ok ? "" : "not ", n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	if (!ok)
		fails++;
}

static inline void __attribute__((format(printf, 1, 2)))
skip(const char *fmt, ...)
{
	va_list ap;

	n++;
	printf("ok %d # SKIP ", n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

#endif /* UZ_GUEST_TAP_H */
