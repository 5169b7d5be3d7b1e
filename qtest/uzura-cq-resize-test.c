/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uzura: resizing a CQ (spec 8.5.1).  The CQEs not consumed when the CQ
 * moves are kept, in order, before those written after; a resize that
 * would lose one, names no CQ or a ring the device cannot reach is
 * refused and changes nothing.
 */
#include "uzura-pair.h"

typedef struct Rz {
    Pair p;
    UzCq *scq;                  /* qa's send CQ, 4 entries at first */
    UzQp *qa;
    uint64_t next;              /* wr_id of the next WRITE */
    uint64_t taken;             /* wr_id of the next CQE to poll */
} Rz;

static void rz_start(Rz *t)
{
    UzRcOpts o = UZ_RC_OPTS_DEFAULT;

    pair_start(&t->p);
    t->scq = uz_cq_create(&t->p.n[0], 2);
    t->qa = uz_qp_create(&t->p.n[0], UZ_QPT_RC, t->scq, NULL, NULL, 0);
    t->p.qb = uz_qp_create(&t->p.n[1], UZ_QPT_RC, NULL, NULL, NULL, 0);
    uz_rc_connect(t->qa, t->p.qb, &o);
    t->next = t->taken = 0x100;
}

/* Is CQE slot @idx of the CQ written for its pass? */
static bool written(Rz *t, uint32_t idx)
{
    UzCq *cq = t->scq;
    struct uz_cqe e;

    qtest_memread(qts(&t->p),
                  uz_cq_slot(cq, idx & ((1u << cq->log_depth) - 1)), &e,
                  sizeof(e));
    return (e.flags & UZ_CQE_PHASE) ==
           (((idx >> cq->log_depth) & 1) ? 0 : UZ_CQE_PHASE);
}

/* One signalled 64-byte WRITE from qa. */
static void post_write(Rz *t)
{
    UzSge s = uz_mr_sge(t->p.ma, 0, 64);
    UzWr wr = {
        .wr_id = t->next++, .opcode = UZ_WR_RDMA_WRITE,
        .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1,
        .remote_addr = uz_mr_va(t->p.mb, 0), .rkey = t->p.mb->key,
    };

    uz_post_send(t->qa, &wr);
}

/*
 * @k signalled WRITEs from qa, their CQEs written but not consumed; in
 * batches of at most 32, so that the SQ (64 WQEs) never fills.
 */
static void writes(Rz *t, int k)
{
    int i, j;

    while (k > 0) {
        for (i = 0; i < MIN(k, 32); i++) {
            post_write(t);
        }
        k -= i;
        for (j = 0; !written(t, t->scq->ci + (t->next - t->taken) - 1);
             j++) {
            g_assert_cmpint(j, <, 10000);
            uz_poll_pause(&t->p.n[0].d);
        }
    }
}

/* Poll @k CQEs: the WRITEs' in order. */
static void take(Rz *t, int k)
{
    struct uz_cqe c;

    while (k--) {
        uz_cq_wait(t->scq, &c);
        uz_expect_sq(&c, t->taken++, UZ_WC_RDMA_WRITE, t->qa, 64);
    }
}

static uint8_t resize_raw(Rz *t, uint32_t cqn, uint32_t uctx, uint32_t ci,
                          uint64_t ring, uint8_t log_depth, uint8_t flags)
{
    struct uz_cmd_resize_cq c = {
        .ring_addr = cpu_to_le64(ring), .cqn = cpu_to_le32(cqn),
        .uctx = cpu_to_le32(uctx), .ci = cpu_to_le32(ci),
        .log_depth = log_depth, .flags = flags,
    };
    struct uz_admin_cqe cqe;

    return uz_cmd(&t->p.n[0], UZ_CMD_RESIZE_CQ, &c, sizeof(c), &cqe);
}

/*
 * Grow a CQ whose unconsumed CQEs wrap around the end of its ring: they
 * come first from the new ring, in order, then the new ones, well past
 * where the old ring would have overflowed.
 */
static void test_grow(void)
{
    Rz t;

    rz_start(&t);
    writes(&t, 3);
    take(&t, 3);
    writes(&t, 3);              /* slots 3, 0, 1 */
    g_assert_cmpint(uz_cq_resize(t.scq, 4), ==, UZ_CMD_OK);
    writes(&t, 10);
    take(&t, 13);
    uz_cq_assert_empty(t.scq, 32);
    /* And around the new ring, twice. */
    writes(&t, 12);
    take(&t, 12);
    writes(&t, 14);
    take(&t, 14);
    pair_stop(&t.p);
}

/*
 * Into rings reached through page lists, as the driver makes them, and
 * back: the device reads the new list, not the page it had cached.
 */
static void test_paged(void)
{
    Rz t;

    rz_start(&t);
    writes(&t, 3);
    take(&t, 1);
    g_assert_cmpint(uz_cq_resize_to(t.scq, 8, true), ==, UZ_CMD_OK);
    writes(&t, 200);            /* 202 outstanding: the ring's 2 pages */
    take(&t, 150);
    g_assert_cmpint(uz_cq_resize_to(t.scq, 7, true), ==, UZ_CMD_OK);
    writes(&t, 60);
    take(&t, 112);
    g_assert_cmpint(uz_cq_resize_to(t.scq, 3, false), ==, UZ_CMD_OK);
    writes(&t, 7);
    take(&t, 7);
    pair_stop(&t.p);
}

/*
 * An overflowed CQ stays stopped when it moves (8.5): only its CQEs from
 * before the overflow are there, and it writes no more.
 */
static void test_overflowed(void)
{
    Rz t;

    rz_start(&t);
    writes(&t, 4);
    uz_eq_drain(&t.p.n[0], &t.p.n[0].async_eq, UZ_EQE_CQ_ERROR);
    post_write(&t);
    uz_event_wait(&t.p.n[0], &t.p.n[0].async_eq, UZ_EQE_CQ_ERROR,
                  t.scq->cqn);
    g_assert_cmpint(uz_cq_resize(t.scq, 4), ==, UZ_CMD_OK);
    take(&t, 4);
    uz_cq_assert_empty(t.scq, 64);
    pair_stop(&t.p);
}

/* Shrink to exactly what is outstanding, then fill it to the brim. */
static void test_shrink(void)
{
    Rz t;

    rz_start(&t);
    g_assert_cmpint(uz_cq_resize(t.scq, 5), ==, UZ_CMD_OK);
    writes(&t, 20);
    take(&t, 18);
    g_assert_cmpint(uz_cq_resize(t.scq, 1), ==, UZ_CMD_OK);
    take(&t, 2);
    writes(&t, 2);
    take(&t, 2);
    pair_stop(&t.p);
}

/*
 * Refused: fewer entries than CQEs outstanding, a consumer index ahead
 * of the device or more than a ring behind, no such CQ, another
 * context's CQ, a depth out of range, an unknown flag, a ring the device
 * cannot reach, in its own BAR 4 included.  The CQ goes on as before.
 */
static void test_refused(void)
{
    uint64_t ring, db;
    uint32_t cqn, ci;
    Rz t;

    rz_start(&t);
    writes(&t, 3);
    cqn = t.scq->cqn;
    ci = t.scq->ci;
    ring = uz_alloc(&t.p.n[0].d, 64 * sizeof(struct uz_cqe));
    g_assert_cmpint(resize_raw(&t, cqn, 0, ci, ring, 1, 0), ==,
                    UZ_CMD_BAD_PARAM);
    g_assert_cmpint(resize_raw(&t, cqn, 0, ci + 4, ring, 6, 0), ==,
                    UZ_CMD_BAD_PARAM);
    g_assert_cmpint(resize_raw(&t, cqn, 0, ci - 2, ring, 6, 0), ==,
                    UZ_CMD_BAD_PARAM);
    g_assert_cmpint(resize_raw(&t, 999, 0, ci, ring, 6, 0), ==,
                    UZ_CMD_BAD_HANDLE);
    g_assert_cmpint(resize_raw(&t, cqn, 1, ci, ring, 6, 0), ==,
                    UZ_CMD_BAD_HANDLE);
    g_assert_cmpint(resize_raw(&t, cqn, 0, ci, ring, 0, 0), ==,
                    UZ_CMD_BAD_PARAM);
    g_assert_cmpint(resize_raw(&t, cqn, 0, ci, ring, 23, 0), ==,
                    UZ_CMD_BAD_PARAM);
    g_assert_cmpint(resize_raw(&t, cqn, 0, ci, ring, 6, 0x80), ==,
                    UZ_CMD_BAD_PARAM);
    g_assert_cmpint(resize_raw(&t, cqn, 0, ci, 1ull << 50, 6, 0), ==,
                    UZ_CMD_BAD_ADDR);
    g_assert_cmpint(resize_raw(&t, cqn, 0, ci, 1ull << 50, 6,
                               UZ_CQF_PAGE_LIST), ==, UZ_CMD_BAD_ADDR);
    /* A ring in the device's own BAR 4, or a page list naming it. */
    db = t.p.n[0].d.db.addr;
    g_assert_cmphex(db & UZ_PAGE_MASK, ==, 0);
    g_assert_cmpint(resize_raw(&t, cqn, 0, ci, db, 6, 0), ==,
                    UZ_CMD_BAD_ADDR);
    qtest_writeq(qts(&t.p), ring, db);
    g_assert_cmpint(resize_raw(&t, cqn, 0, ci, ring, 7, UZ_CQF_PAGE_LIST), ==,
                    UZ_CMD_BAD_ADDR);
    /* Nothing moved: the three CQEs, then more, in the old ring. */
    take(&t, 3);
    writes(&t, 4);
    take(&t, 4);
    pair_stop(&t.p);
}

/* An armed CQ stays armed across the move. */
static void test_armed(void)
{
    Rz t;

    rz_start(&t);
    uz_cq_arm(t.scq, UZ_DB_ARM);
    g_assert_cmpint(uz_cq_resize(t.scq, 3), ==, UZ_CMD_OK);
    uz_eq_drain(&t.p.n[0], &t.p.n[0].comp_eq, UZ_EQE_COMPLETION);
    writes(&t, 1);
    uz_event_wait(&t.p.n[0], &t.p.n[0].comp_eq, UZ_EQE_COMPLETION,
                  t.scq->cqn);
    take(&t, 1);
    pair_stop(&t.p);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qtest_add_func("/uzura/cq-resize/grow", test_grow);
    qtest_add_func("/uzura/cq-resize/shrink", test_shrink);
    qtest_add_func("/uzura/cq-resize/paged", test_paged);
    qtest_add_func("/uzura/cq-resize/overflowed", test_overflowed);
    qtest_add_func("/uzura/cq-resize/refused", test_refused);
    qtest_add_func("/uzura/cq-resize/armed", test_armed);
    return g_test_run();
}
