/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uzura: the device clock and completion timestamps (device 0.15,
 * UZ_CAP_TIMESTAMP).  The last 8 bytes of every doorbell page read the
 * virtual clock, in nanoseconds, and are no queue's doorbell; a CQ created
 * with UZ_CQF_TIMESTAMP has 64-byte entries whose first 8 bytes are the
 * clock when the device wrote the CQE.  Under the qtest accelerator the
 * virtual clock moves only when the test steps it, so every value is
 * exact.
 */
#include "uzura-pair.h"

static uint64_t clock_read(UzDev *d, uint32_t page)
{
    return qpci_io_readq(d->pdev, d->db, page * UZ_DB_PAGE_SIZE + UZ_DB_CLOCK);
}

/*
 * The clock reads the same in the kernel's page and a context's, whole or
 * as two words, and moves exactly as the virtual clock is stepped; a load
 * of any other slot, and a store to the clock, are guest errors.
 */
static void test_clock(void)
{
    struct uz_admin_cqe cqe;
    uint64_t now;
    uint32_t uctx;
    Pair p;
    UzDev *d;

    pair_start(&p);
    d = &p.n[0].d;
    g_assert(uz_rd(d, UZ_REG_CAPS) & UZ_CAP_TIMESTAMP);
    g_assert_cmpint(uz_cmd(&p.n[0], UZ_CMD_CREATE_UCTX, NULL, 0, &cqe), ==,
                    UZ_CMD_OK);
    uctx = le32_to_cpu(cqe.out0);

    now = qtest_clock_step(qts(&p), 12345);
    g_assert_cmpuint(clock_read(d, 0), ==, now);
    g_assert_cmpuint(clock_read(d, uctx), ==, now);
    g_assert_cmphex(qpci_io_readl(d->pdev, d->db, UZ_DB_CLOCK), ==,
                    (uint32_t)now);
    g_assert_cmphex(qpci_io_readl(d->pdev, d->db,
                                  uctx * UZ_DB_PAGE_SIZE + UZ_DB_CLOCK + 4),
                    ==, now >> 32);
    /* Past 2^32 ns the high word moves. */
    now = qtest_clock_step(qts(&p), 5000000000ll);
    g_assert_cmpuint(now >> 32, >, 0);
    g_assert_cmpuint(clock_read(d, uctx), ==, now);
    g_assert_cmphex(qpci_io_readl(d->pdev, d->db, UZ_DB_CLOCK + 4), ==,
                    now >> 32);

    /* A store to the clock, a load of a doorbell: errors, nothing else. */
    qpci_io_writel(d->pdev, d->db, UZ_DB_CLOCK, 7);
    g_assert_cmpint(uz_rd(d, UZ_REG_ERR_STATUS), ==, UZ_ERR_BAD_DOORBELL);
    g_assert_cmphex(qpci_io_readl(d->pdev, d->db, UZ_DB_CLOCK - 4), ==, 0);
    g_assert_cmpint(uz_rd(d, UZ_REG_ERR_STATUS), ==, UZ_ERR_WRITE_ONLY);
    g_assert_cmphex(qpci_io_readw(d->pdev, d->db, UZ_DB_CLOCK), ==, 0);
    g_assert_cmpuint(clock_read(d, 0), ==, now);
    exchange(&p, UZ_WR_SEND, 100);
    pair_stop(&p);
}

/* A context's page gives its queues 1022 doorbells, never the clock's. */
static void test_slots(void)
{
    struct uz_admin_cqe cqe;
    UzMachine m;
    UzNode n;
    int count = 0;

    uz_machine_start(&m, 1, "-global uzura.max-cq=1100");
    uz_node_start(&n, &m, 0);
    g_assert_cmpint(uz_cmd(&n, UZ_CMD_CREATE_UCTX, NULL, 0, &cqe), ==,
                    UZ_CMD_OK);
    n.uctx = le32_to_cpu(cqe.out0);
    for (;;) {
        struct uz_cmd_create_cq c = {
            .uctx = cpu_to_le32(n.uctx), .eqn = cpu_to_le32(n.comp_eq.eqn),
            .log_depth = 1, .ring_addr = cpu_to_le64(uz_alloc(&n.d, 64)),
        };
        uint8_t st = uz_cmd(&n, UZ_CMD_CREATE_CQ, &c, sizeof(c), &cqe);

        if (st != UZ_CMD_OK) {
            g_assert_cmpint(st, ==, UZ_CMD_NO_RESOURCES);
            break;
        }
        g_assert_cmpuint(le32_to_cpu(cqe.out1) / UZ_DB_PAGE_SIZE, ==, n.uctx);
        g_assert_cmphex(le32_to_cpu(cqe.out1) % UZ_DB_PAGE_SIZE, <,
                        UZ_DB_CLOCK);
        count++;
    }
    g_assert_cmpint(count, ==, UZ_DB_CLOCK / 4);
    n.uctx = 0;
    uz_node_stop(&n);
    uz_machine_stop(&m);
}

typedef struct Ts {
    Pair p;
    UzCq *scq, *rcq;            /* uz0's send CQ, uz1's receive CQ */
    UzQp *a, *b;
} Ts;

static void ts_start(Ts *t, uint8_t scq_flags, uint32_t scq_log)
{
    pair_start(&t->p);
    t->scq = uz_cq_create_flags(&t->p.n[0], scq_log,
                                UZ_CQF_TIMESTAMP | scq_flags);
    t->rcq = uz_cq_create_flags(&t->p.n[1], UZ_CQ_LOG_DEPTH,
                                UZ_CQF_TIMESTAMP);
    t->a = uz_qp_create(&t->p.n[0], UZ_QPT_RC, t->scq, NULL, NULL, 0);
    t->b = uz_qp_create(&t->p.n[1], UZ_QPT_RC, NULL, t->rcq, NULL, 0);
    uz_rc_connect(t->a, t->b, NULL);
}

/* A SEND of @len bytes; both CQEs carry the clock @now. */
static void ts_send(Ts *t, uint64_t wr_id, uint32_t len, uint64_t now)
{
    UzSge s = uz_mr_sge(t->p.ma, 0, len), r = uz_mr_sge(t->p.mb, 0, len);
    UzWr wr = { .wr_id = wr_id, .opcode = UZ_WR_SEND,
                .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1 };

    uz_post_recv(t->b, wr_id + 1, &r, 1);
    uz_post_send(t->a, &wr);
    uz_sq_done(t->a, wr_id, UZ_WC_SEND, len);
    g_assert_cmpuint(t->scq->ts, ==, now);
    uz_rq_done(t->b, wr_id + 1, UZ_WC_RECV, len, 0, 0);
    g_assert_cmpuint(t->rcq->ts, ==, now);
}

/*
 * CQEs of a timestamped CQ are 64 bytes, the time in the first 8: each
 * the clock when the device wrote it, on both sides, through the wrap
 * of a paged ring; the 32 reserved bytes stay zero.  A plain CQ beside it
 * is unchanged.
 */
static void test_cqe(void)
{
    uint64_t now, rsv[3];
    int i;
    Ts t;

    ts_start(&t, UZ_CQF_PAGE_LIST, 7);     /* 8 KiB: two pages */
    for (i = 0; i < 140; i++) {
        now = qtest_clock_step(qts(&t.p), 1000 + i);
        ts_send(&t, 0x100 + 2 * i, 64 + i, now);
    }
    /* Slot 140 - 128 = 12 of the second pass: the reserved bytes. */
    qtest_memread(qts(&t.p), uz_cq_entry(t.scq, 12) + 8, rsv, sizeof(rsv));
    g_assert_cmphex(rsv[0] | rsv[1] | rsv[2], ==, 0);
    exchange(&t.p, UZ_WR_SEND, 3000);
    pair_stop(&t.p);
}

/* Two CQEs wait in the old ring, at two times, then move. */
static void resize_moves_stamps(Ts *t)
{
    UzSge s = uz_mr_sge(t->p.ma, 0, 8);
    UzWr wr = { .wr_id = 0x501, .opcode = UZ_WR_RDMA_WRITE,
                .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1,
                .remote_addr = uz_mr_va(t->p.mb, 0), .rkey = t->p.mb->key };
    struct uz_cqe e;
    uint64_t t1, t2;

    t1 = qtest_clock_step(qts(&t->p), 777);
    uz_post_send(t->a, &wr);
    while (qtest_readb(qts(&t->p), uz_cq_slot(t->scq, 0) + 31) == 0) {
        uz_poll_pause(&t->p.n[0].d);
    }
    t2 = qtest_clock_step(qts(&t->p), 888);
    wr.wr_id = 0x502;
    uz_post_send(t->a, &wr);
    while (qtest_readb(qts(&t->p), uz_cq_slot(t->scq, 1) + 31) == 0) {
        uz_poll_pause(&t->p.n[0].d);
    }
    g_assert_cmpint(uz_cq_resize_to(t->scq, 5, true), ==, UZ_CMD_OK);
    uz_cq_wait(t->scq, &e);
    g_assert_cmphex(e.wr_id, ==, 0x501);
    g_assert_cmpuint(t->scq->ts, ==, t1);
    uz_cq_wait(t->scq, &e);
    g_assert_cmphex(e.wr_id, ==, 0x502);
    g_assert_cmpuint(t->scq->ts, ==, t2);
}

/*
 * RESIZE_CQ keeps the entry size: a timestamped CQ moves only to a
 * timestamped ring (else BAD_PARAM, nothing changed), a plain one only to
 * a plain ring; CQEs not polled move with their timestamps.
 */
static void test_resize(void)
{
    struct uz_cmd_resize_cq c;
    Ts t;

    ts_start(&t, 0, UZ_CQ_LOG_DEPTH);
    c = (struct uz_cmd_resize_cq) {
        .cqn = cpu_to_le32(t.scq->cqn), .uctx = 0, .log_depth = 6,
        .ring_addr = cpu_to_le64(uz_alloc(&t.p.n[0].d, 64 * 32)),
    };
    g_assert_cmpint(uz_cmd(&t.p.n[0], UZ_CMD_RESIZE_CQ, &c, sizeof(c), NULL),
                    ==, UZ_CMD_BAD_PARAM);
    c.cqn = cpu_to_le32(t.p.qa->scq->cqn);
    c.flags = UZ_CQF_TIMESTAMP;
    g_assert_cmpint(uz_cmd(&t.p.n[0], UZ_CMD_RESIZE_CQ, &c, sizeof(c), NULL),
                    ==, UZ_CMD_BAD_PARAM);

    resize_moves_stamps(&t);
    ts_send(&t, 0x600, 100, qtest_clock_step(qts(&t.p), 99));
    pair_stop(&t.p);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qtest_add_func("/uzura/clock/clock", test_clock);
    qtest_add_func("/uzura/clock/slots", test_slots);
    qtest_add_func("/uzura/clock/cqe", test_cqe);
    qtest_add_func("/uzura/clock/resize", test_resize);
    return g_test_run();
}
