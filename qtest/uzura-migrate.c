/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Migration for the uzura qtests (uzura-migrate.h).
 */
#include "uzura-migrate.h"
#include "libqos/libqos-malloc.h"
#include "migration/migration-qmp.h"

/* The status an incoming side ends in, "completed" or "failed". */
static char *uz_incoming_end(QTestState *to)
{
    int i;

    for (i = 0; i < UZ_POLL_LIMIT; i++) {
        char *st = migrate_query_status(to);

        if (!strcmp(st, "completed") || !strcmp(st, "failed")) {
            return st;
        }
        g_free(st);
        g_usleep(1000);
    }
    g_error("the incoming migration never ended");
}

static char *uz_migrate_error(QTestState *qts)
{
    QDict *rsp = qtest_qmp_assert_success_ref(qts,
                                              "{'execute': 'query-migrate'}");
    char *err = g_strdup(qdict_get_try_str(rsp, "error-desc"));

    qobject_unref(rsp);
    return err;
}

void uz_migrate(UzMachine *m, UzDev *const *devs, int n)
{
    g_autofree char *dir = g_dir_make_tmp("uzura-migrate-XXXXXX", NULL);
    g_autofree char *uri = g_strdup_printf("unix:%s/sock", dir);
    g_autofree char *sock = g_strdup_printf("%s/sock", dir);
    g_autofree char *st = NULL;
    QOSState *to = qtest_pc_boot("%s -incoming defer", m->cmdline);
    int i;

    migrate_incoming_qmp(to->qts, uri, NULL, "{}");
    migrate_qmp(m->qs->qts, to->qts, uri, NULL, "{}");
    wait_for_migration_complete(m->qs->qts);
    st = uz_incoming_end(to->qts);
    g_assert_cmpstr(st, ==, "completed");
    /* What the test allocated in guest memory moved with it. */
    migrate_allocator(&m->qs->alloc, &to->alloc);
    for (i = 0; i < n; i++) {
        devs[i]->qts = to->qts;
        devs[i]->alloc = &to->alloc;
        devs[i]->pdev->bus = to->pcibus;
    }
    qtest_shutdown(m->qs);
    m->qs = to;
    unlink(sock);
    rmdir(dir);
}

char *uz_migrate_refused(UzMachine *m)
{
    g_autofree char *dir = g_dir_make_tmp("uzura-migrate-XXXXXX", NULL);
    g_autofree char *path = g_strdup_printf("%s/state", dir);
    g_autofree char *uri = g_strdup_printf("file:%s", path);
    char *err;

    migrate_qmp(m->qs->qts, NULL, uri, NULL, "{}");
    wait_for_migration_fail(m->qs->qts, false);
    err = uz_migrate_error(m->qs->qts);
    g_assert(err);
    unlink(path);
    rmdir(dir);
    return err;
}

void uz_save(UzMachine *m, const char *path)
{
    g_autofree char *uri = g_strdup_printf("file:%s", path);

    migrate_qmp(m->qs->qts, NULL, uri, NULL, "{}");
    wait_for_migration_complete(m->qs->qts);
}

char *uz_load(UzMachine *m, const char *path, QOSState **to)
{
    g_autofree char *uri = g_strdup_printf("file:%s", path);
    g_autofree char *st = NULL;

    *to = qtest_pc_boot("%s -incoming defer", m->cmdline);
    migrate_incoming_qmp((*to)->qts, uri, NULL, "{'exit-on-error': false}");
    st = uz_incoming_end((*to)->qts);
    if (!strcmp(st, "completed")) {
        return NULL;
    }
    return uz_migrate_error((*to)->qts);
}
