/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Migration for the uzura qtests: a machine moves to a new QEMU process
 * of the same command line, through QEMU's migration qtest helpers, and
 * the NICs' handles follow it.
 */
#ifndef UZURA_MIGRATE_H
#define UZURA_MIGRATE_H

#include "uzura-qtest.h"

/* Live-migrate @m to a new process; the handles @devs[0..n) follow. */
void uz_migrate(UzMachine *m, UzDev *const *devs, int n);

/* A migration of @m that is refused: the error QEMU gives for it. */
char *uz_migrate_refused(UzMachine *m);

/* Save @m's state into the file @path; @m is left stopped. */
void uz_save(UzMachine *m, const char *path);

/*
 * Start a machine of @m's command line that loads @path, as a new
 * incoming side that stays up when the load fails: NULL when it loaded,
 * else QEMU's error.  The machine is returned in @to either way.
 */
char *uz_load(UzMachine *m, const char *path, QOSState **to);

#endif /* UZURA_MIGRATE_H */
