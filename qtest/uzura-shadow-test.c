/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uzura: SQ shadow doorbells (UZ_CAP_SQ_SHADOW, spec 8.6.1).  The test
 * posts as the provider does: the WQE, then the producer index into the
 * QP's shadow record, then the doorbell only when the record's event
 * index asks for it.
 */
#include "qemu/osdep.h"
#include "qemu/units.h"
#include "uzura-pair.h"

#define SHADOW_OFF      (UZ_SQ_WQE_SIZE << UZ_SQ_LOG_DEPTH)

static uint64_t shadow(UzQp *qp)
{
    return qp->sq + SHADOW_OFF;
}

/* The event index, once the device's bottom halves have run. */
static uint32_t shadow_event(UzQp *qp)
{
    uz_poll_pause(&qp->n->d);
    uz_poll_pause(&qp->n->d);
    return qtest_readl(qp->n->d.qts, shadow(qp) +
                       offsetof(struct uz_sq_shadow, event));
}

/* Post @wr as the provider does; returns whether the doorbell rang. */
static bool shadow_post(UzQp *qp, const UzWr *wr)
{
    uint32_t old = qp->sq_pi;

    uz_sq_post(qp, wr);
    qtest_writel(qp->n->d.qts, shadow(qp), qp->sq_pi);
    if (!UZ_SQ_SHADOW_NEED_DB(shadow_event(qp), qp->sq_pi, old)) {
        return false;
    }
    uz_sq_ring(qp);
    return true;
}

/* A fresh RC pair whose sender, on uz0, has a shadow record. */
static UzQp *shadow_qps(Pair *p, UzQp **b)
{
    UzQp *a = uz_qp_create(&p->n[0], UZ_QPT_RC, NULL, NULL, NULL,
                           UZ_QPF_SQ_SHADOW);

    *b = uz_qp_create(&p->n[1], UZ_QPT_RC, NULL, NULL, NULL, 0);
    uz_rc_connect(a, *b, NULL);
    return a;
}

static UzWr shadow_write(Pair *p, uint32_t id, UzSge *s)
{
    *s = uz_mr_sge(p->ma, id * 64, 64);
    return (UzWr) {
        .wr_id = 0x5400 + id, .opcode = UZ_WR_RDMA_WRITE,
        .flags = UZ_WQE_F_SIGNALED, .sge = s, .num_sge = 1,
        .remote_addr = uz_mr_va(p->mb, id * 64), .rkey = p->mb->key,
    };
}

static void expect_written(Pair *p, uint32_t id)
{
    uint8_t want[64];

    uz_mr_read(p->ma, id * 64, want, sizeof(want));
    uz_assert_mr(p->mb, id * 64, want, sizeof(want), "written");
}

/*
 * An idle QP asks for the doorbell; a QP with a message in flight takes
 * the next post from its record when the ACK brings it back, unrung.
 */
static void test_busy(void)
{
    Pair p;
    UzQp *a, *b;
    UzSge s[3];
    UzWr wr[3];
    struct uz_cqe c;
    uint64_t takes;
    int i;

    pair_start(&p);
    a = shadow_qps(&p, &b);
    for (i = 0; i < 3; i++) {
        uz_mr_fill(p.ma, i * 64, 0x10 + i, 64);
        wr[i] = shadow_write(&p, i, &s[i]);
    }
    g_assert_cmphex(shadow_event(a), ==, 0);

    /* Idle: the first post rings, and the device asks again after it. */
    g_assert(shadow_post(a, &wr[0]));
    uz_sq_done(a, wr[0].wr_id, UZ_WC_RDMA_WRITE, 64);
    g_assert_cmphex(shadow_event(a), ==, 1);

    /* Its ACK lost, WRITE 1 stays in flight; WRITE 2 is not rung. */
    rules_set(&p, 1, "kind=ack count=1 drop");
    takes = uz_counter(&p.m, 0, "sq_shadow_takes");
    g_assert(shadow_post(a, &wr[1]));
    g_assert(!shadow_post(a, &wr[2]));
    uz_cq_wait_clock(a->scq, &c, STEP_NS, 100);
    uz_expect_sq(&c, wr[1].wr_id, UZ_WC_RDMA_WRITE, a, 64);
    uz_cq_wait_clock(a->scq, &c, STEP_NS, 100);
    uz_expect_sq(&c, wr[2].wr_id, UZ_WC_RDMA_WRITE, a, 64);
    g_assert_cmpuint(MOVED(&p, 0, "sq_shadow_takes", takes), ==, 1);
    g_assert_cmpuint(rule_acted(&p, 1, 1), ==, 1);
    for (i = 0; i < 3; i++) {
        expect_written(&p, i);
    }
    /* Idle again: the next post rings. */
    g_assert_cmphex(shadow_event(a), ==, 3);
    pair_stop(&p);
}

/*
 * WQEs posted to the record of a QP that then fails flush, the error
 * state asks for the doorbell, and RESET starts the record over.
 */
static void test_flush(void)
{
    Pair p;
    UzQp *a, *b;
    UzSge s[3];
    UzWr wr[3];
    struct uz_cqe c;
    int i;

    pair_start(&p);
    a = shadow_qps(&p, &b);
    for (i = 0; i < 3; i++) {
        wr[i] = shadow_write(&p, i, &s[i]);
    }
    /* uz1 answers nothing: WRITE 0 stays in flight, WRITE 1 unrung. */
    rules_set(&p, 1, "kind=ack drop");
    g_assert(shadow_post(a, &wr[0]));
    g_assert(!shadow_post(a, &wr[1]));
    uz_qp_set_state(a, UZ_QPS_ERR);
    uz_cq_wait(a->scq, &c);
    uz_expect_err(&c, wr[0].wr_id, UZ_WC_RDMA_WRITE,
                  UZ_WC_STATUS_WR_FLUSH_ERR, 0, a);
    uz_cq_wait(a->scq, &c);
    uz_expect_err(&c, wr[1].wr_id, UZ_WC_RDMA_WRITE,
                  UZ_WC_STATUS_WR_FLUSH_ERR, 0, a);
    /* In the error state every post rings, and flushes. */
    g_assert_cmphex(shadow_event(a), ==, 2);
    g_assert(shadow_post(a, &wr[2]));
    uz_cq_wait(a->scq, &c);
    uz_expect_err(&c, wr[2].wr_id, UZ_WC_RDMA_WRITE,
                  UZ_WC_STATUS_WR_FLUSH_ERR, 0, a);
    uz_cq_assert_empty(a->scq, 5);

    /* RESET: event 0, and the indices start over from 0. */
    uz_qp_set_state(a, UZ_QPS_RESET);
    g_assert_cmphex(shadow_event(a), ==, 0);
    pair_stop(&p);
}

/*
 * A producer index in the record that overruns the ring is a guest
 * error, said once, and ignored: the QP goes on with its doorbells.
 */
static void test_bad_index(void)
{
    Pair p;
    UzQp *a, *b;
    UzSge s[2];
    UzWr wr[2];
    struct uz_cqe c;
    uint32_t errs;
    g_autofree char *log = NULL;

    pair_start(&p);
    a = shadow_qps(&p, &b);
    wr[0] = shadow_write(&p, 0, &s[0]);
    wr[1] = shadow_write(&p, 1, &s[1]);
    uz_sq_post(a, &wr[0]);
    qtest_writel(a->n->d.qts, shadow(a), a->sq_pi + 1000);
    uz_sq_ring(a);
    uz_cq_wait(a->scq, &c);
    uz_expect_sq(&c, wr[0].wr_id, UZ_WC_RDMA_WRITE, a, 64);
    g_assert_cmpint(uz_rd(&p.n[0].d, UZ_REG_ERR_STATUS), ==,
                    UZ_ERR_BAD_VALUE);
    g_assert_cmphex(uz_rd(&p.n[0].d, UZ_REG_ERR_ADDR), ==, a->sq_db);
    errs = uz_rd(&p.n[0].d, UZ_REG_ERR_COUNT);
    /* The device's next turns read the same bad value: no new error. */
    uz_poll_pause(&p.n[0].d);
    uz_poll_pause(&p.n[0].d);
    g_assert_cmpint(uz_rd(&p.n[0].d, UZ_REG_ERR_COUNT), ==, errs);
    /* Idle at the index the doorbell gave. */
    g_assert_cmphex(shadow_event(a), ==, 1);

    /* A good index and its doorbell: the QP works as before. */
    g_assert(shadow_post(a, &wr[1]));
    uz_sq_done(a, wr[1].wr_id, UZ_WC_RDMA_WRITE, 64);
    g_assert_cmpint(uz_qp_state(a), ==, UZ_QPS_RTS);
    log = uz_machine_log(&p.m);
    g_assert(strstr(log, "SQ shadow index"));
    pair_stop(&p);
}

/*
 * What CREATE_QP refuses: the flag on a device without the capability,
 * and on a QP with no SQ; a ring whose record is not in RAM.
 */
static void test_refused(void)
{
    UzMachine m;
    UzNode n;
    struct uz_cmd_create_qp c;
    struct uz_admin_cqe cqe;
    UzCq *cq;

    uz_machine_start(&m, 1, "-global uzura.sq-shadow=off");
    uz_node_start(&n, &m, 0);
    g_assert(!(uz_rd(&n.d, UZ_REG_CAPS) & UZ_CAP_SQ_SHADOW));
    cq = uz_cq_create(&n, UZ_CQ_LOG_DEPTH);
    c = (struct uz_cmd_create_qp) {
        .sq_addr = cpu_to_le64(uz_alloc(&n.d, SHADOW_OFF + 64)),
        .rq_addr = cpu_to_le64(uz_alloc(&n.d, UZ_RQ_WQE_SIZE <<
                                                UZ_RQ_LOG_DEPTH)),
        .uctx = cpu_to_le32(n.uctx), .pdn = cpu_to_le32(n.pdn),
        .send_cqn = cpu_to_le32(cq->cqn), .recv_cqn = cpu_to_le32(cq->cqn),
        .srqn = cpu_to_le32(UZ_NO_SRQ), .type = UZ_QPT_RC,
        .sq_log_depth = UZ_SQ_LOG_DEPTH, .rq_log_depth = UZ_RQ_LOG_DEPTH,
        .sq_log_wqe_size = UZ_SQ_LOG_WQE, .rq_log_wqe_size = UZ_RQ_LOG_WQE,
        .flags = UZ_QPF_SQ_SHADOW,
    };
    g_assert_cmpint(uz_cmd(&n, UZ_CMD_CREATE_QP, &c, sizeof(c), &cqe), ==,
                    UZ_CMD_BAD_PARAM);
    c.flags = 0;
    g_assert_cmpint(uz_cmd(&n, UZ_CMD_CREATE_QP, &c, sizeof(c), &cqe), ==,
                    UZ_CMD_OK);
    uz_node_stop(&n);
    uz_machine_stop(&m);

    uz_machine_start(&m, 1, NULL);
    uz_node_start(&n, &m, 0);
    g_assert(uz_rd(&n.d, UZ_REG_CAPS) & UZ_CAP_SQ_SHADOW);
    cq = uz_cq_create(&n, UZ_CQ_LOG_DEPTH);
    c.send_cqn = c.recv_cqn = cpu_to_le32(cq->cqn);
    c.uctx = cpu_to_le32(n.uctx);
    c.pdn = cpu_to_le32(n.pdn);
    c.flags = UZ_QPF_SQ_SHADOW;
    /* The ring ends where RAM does (128 MiB): no room for a record. */
    c.sq_addr = cpu_to_le64(128 * MiB - SHADOW_OFF);
    g_assert_cmpint(uz_cmd(&n, UZ_CMD_CREATE_QP, &c, sizeof(c), &cqe), ==,
                    UZ_CMD_BAD_ADDR);
    uz_node_stop(&n);
    uz_machine_stop(&m);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qtest_add_func("/uzura/shadow/busy", test_busy);
    qtest_add_func("/uzura/shadow/flush", test_flush);
    qtest_add_func("/uzura/shadow/bad-index", test_bad_index);
    qtest_add_func("/uzura/shadow/refused", test_refused);
    return g_test_run();
}
