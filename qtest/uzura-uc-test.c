/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uzura: unreliable connected QPs (spec 9.8).  A UC QP sends RC's SEND
 * and WRITE packets with UC opcodes and no ACK request, and completes a
 * message once it is on the wire.  Its responder answers nothing: a
 * message that cannot be taken (a packet lost, no receive WQE, a bad
 * rkey) is dropped whole, uc_dropped counts it, the receive WQE waits for
 * the next message, and both QPs go on; an absent ODP page is such a
 * message too.  UC takes no READ or atomic, and RC and UC packets do not
 * reach each other's QPs.
 */
#include "uzura-pair.h"

#define UC_PSN      0x000777

/*
 * UC RESET -> INIT -> RTR -> RTS of @qp towards @peer: RC's READ and RNR
 * attributes and its timer are not UC's (BAD_PARAM).
 */
static void uc_up(UzQp *qp, UzQp *peer)
{
    uz_uc_init(qp);
    g_assert_cmpint(uz_uc_rtr_try(qp, peer, UC_PSN,
                                  UZ_QP_ATTR_MAX_DEST_RD_ATOMIC), ==,
                    UZ_CMD_BAD_PARAM);
    g_assert_cmpint(uz_uc_rtr_try(qp, peer, UC_PSN, 0), ==, UZ_CMD_OK);
    g_assert_cmpint(uz_uc_rts_try(qp, UC_PSN, UZ_QP_ATTR_TIMEOUT), ==,
                    UZ_CMD_BAD_PARAM);
    g_assert_cmpint(uz_uc_rts_try(qp, UC_PSN, 0), ==, UZ_CMD_OK);
}

typedef struct Uc {
    Pair p;
    UzQp *a, *b;                /* UC: a on uz0 sends to b on uz1 */
} Uc;

static void uc_start(Uc *u)
{
    pair_start(&u->p);
    u->a = uz_qp_create(&u->p.n[0], UZ_QPT_UC, NULL, NULL, NULL, 0);
    u->b = uz_qp_create(&u->p.n[1], UZ_QPT_UC, NULL, NULL, NULL, 0);
    uc_up(u->a, u->b);
    uc_up(u->b, u->a);
}

/*
 * Post @op of @len bytes of pattern @seed on a (a WRITE to @roff of
 * @dst, through @rkey); it completes at once.
 */
static void uc_post_to(Uc *u, uint8_t op, uint32_t len, uint32_t seed,
                       UzMr *dst, uint32_t rkey, uint64_t roff)
{
    g_autofree uint8_t *data = g_malloc(len);
    UzSge s = uz_mr_sge(u->p.ma, 0, len);
    UzWr wr = {
        .wr_id = 0x0c00 + seed, .opcode = op, .flags = UZ_WQE_F_SIGNALED,
        .sge = &s, .num_sge = 1, .remote_addr = uz_mr_va(dst, roff),
        .rkey = rkey, .imm = 0x1e00 + seed,
    };

    uz_pattern(data, len, seed);
    uz_mr_write(u->p.ma, 0, data, len);
    uz_post_send(u->a, &wr);
    uz_sq_done(u->a, wr.wr_id, uz_wc_opcode(op), len);
}

/* The same into mb. */
static void uc_post(Uc *u, uint8_t op, uint32_t len, uint32_t seed,
                    uint32_t rkey, uint64_t roff)
{
    uc_post_to(u, op, len, seed, u->p.mb, rkey, roff);
}

/* What b's receive CQ holds next: a receive of @len bytes of @seed. */
static void uc_received(Uc *u, uint64_t wr_id, uint8_t opcode, uint32_t len,
                        uint32_t seed, uint64_t off)
{
    g_autofree uint8_t *data = g_malloc(len);
    struct uz_cqe c;

    uz_cq_wait(u->b->rcq, &c);
    uz_cqe_expect(&c, wr_id, opcode, UZ_WC_STATUS_SUCCESS, 0, u->b->qpn);
    g_assert_cmpuint(le32_to_cpu(c.byte_len), ==, len);
    uz_pattern(data, len, seed);
    uz_assert_mr(u->p.mb, off, data, len, "the UC message");
}

/* The UC WRITEs of test_traffic landed in @mb: patterns 3 and 4. */
static void assert_writes_landed(UzMr *mb)
{
    g_autofree uint8_t *data = g_malloc(MSG_LEN);

    uz_pattern(data, MSG_LEN, 3);
    uz_assert_mr(mb, 8192, data, MSG_LEN, "the UC WRITE");
    uz_pattern(data, 10, 4);
    uz_assert_mr(mb, 16384, data, 10, "the short UC WRITE");
}

/*
 * SEND, SEND with immediate, WRITE and WRITE with immediate of three
 * packets and of one: the data lands, no ACK flows, nothing retries.
 */
static void test_traffic(void)
{
    uint64_t acks0, sent0;
    UzSge r;
    Uc u;

    uc_start(&u);
    acks0 = uz_counter(&u.p.m, 1, "tx_pkts_ack");
    sent0 = uz_counter(&u.p.m, 0, "retransmits");
    r = uz_mr_sge(u.p.mb, 0, 4096);
    uz_post_recv(u.b, 0x5001, &r, 1);
    uc_post(&u, UZ_WR_SEND, MSG_LEN, 1, 0, 0);
    uc_received(&u, 0x5001, UZ_WC_RECV, MSG_LEN, 1, 0);
    uz_post_recv(u.b, 0x5002, &r, 1);
    uc_post(&u, UZ_WR_SEND_IMM, 100, 2, 0, 0);
    uc_received(&u, 0x5002, UZ_WC_RECV, 100, 2, 0);

    uc_post(&u, UZ_WR_RDMA_WRITE, MSG_LEN, 3, u.p.mb->key, 8192);
    uc_post(&u, UZ_WR_RDMA_WRITE, 10, 4, u.p.mb->key, 16384);
    uz_post_recv(u.b, 0x5003, &r, 1);
    uc_post(&u, UZ_WR_RDMA_WRITE_IMM, MSG_LEN, 5, u.p.mb->key, 20480);
    uc_received(&u, 0x5003, UZ_WC_RECV_RDMA_WITH_IMM, MSG_LEN, 5, 20480);
    assert_writes_landed(u.p.mb);
    g_assert_cmpuint(uz_counter(&u.p.m, 1, "tx_pkts_ack"), ==, acks0);
    g_assert_cmpuint(uz_counter(&u.p.m, 0, "retransmits"), ==, sent0);
    g_assert_cmpuint(uz_counter(&u.p.m, 1, "uc_dropped"), ==, 0);
    /* The RC pair beside it is not disturbed. */
    exchange(&u.p, UZ_WR_SEND, 3000);
    pair_stop(&u.p);
}

/*
 * What a UC responder cannot take it drops, whole and silently: a SEND
 * whose middle packet was lost (the next SEND fills the same receive
 * WQE), a SEND with no receive WQE, a WRITE with a bad rkey.  The sender
 * completes each; the QPs stay in RTS.  A receive WQE that cannot take
 * the data is a local error, as on RC: it fails, and its QP.
 */
static void test_drops(void)
{
    struct uz_cqe c;
    UzSge r;
    Uc u;

    uc_start(&u);
    r = uz_mr_sge(u.p.mb, 0, 4096);
    uz_post_recv(u.b, 0x6001, &r, 1);
    rules_set(&u.p, 0, "op=uc-send-middle nth=1 drop");
    uc_post(&u, UZ_WR_SEND, MSG_LEN, 11, 0, 0);
    qtest_clock_step(qts(&u.p), STEP_NS);
    g_assert(!uz_cq_poll(u.b->rcq, &c));
    g_assert_cmpuint(uz_counter(&u.p.m, 1, "uc_dropped"), ==, 1);
    uc_post(&u, UZ_WR_SEND, 2000, 12, 0, 0);
    uc_received(&u, 0x6001, UZ_WC_RECV, 2000, 12, 0);

    /* No receive WQE: the SEND goes; then one is there for the next. */
    uc_post(&u, UZ_WR_SEND, 64, 13, 0, 0);
    qtest_clock_step(qts(&u.p), STEP_NS);
    g_assert_cmpuint(uz_counter(&u.p.m, 1, "uc_dropped"), ==, 2);
    uz_post_recv(u.b, 0x6002, &r, 1);
    uc_post(&u, UZ_WR_SEND, 64, 14, 0, 0);
    uc_received(&u, 0x6002, UZ_WC_RECV, 64, 14, 0);

    /* A bad rkey, and a WRITE with immediate's: the WQE stays. */
    uz_post_recv(u.b, 0x6003, &r, 1);
    uc_post(&u, UZ_WR_RDMA_WRITE, MSG_LEN, 15, u.p.mb->key ^ 0x80, 8192);
    uc_post(&u, UZ_WR_RDMA_WRITE_IMM, 64, 16, u.p.mb->key ^ 0x80, 8192);
    qtest_clock_step(qts(&u.p), STEP_NS);
    g_assert_cmpuint(uz_counter(&u.p.m, 1, "uc_dropped"), ==, 4);
    g_assert(!uz_cq_poll(u.b->rcq, &c));
    uc_post(&u, UZ_WR_RDMA_WRITE_IMM, 64, 17, u.p.mb->key, 8192);
    uc_received(&u, 0x6003, UZ_WC_RECV_RDMA_WITH_IMM, 64, 17, 8192);
    g_assert_cmpint(uz_qp_state(u.a), ==, UZ_QPS_RTS);
    g_assert_cmpint(uz_qp_state(u.b), ==, UZ_QPS_RTS);

    /* A receive WQE that cannot take data is a local error: b fails. */
    r.lkey ^= 0x80;
    uz_post_recv(u.b, 0x6004, &r, 1);
    uc_post(&u, UZ_WR_SEND, 64, 18, 0, 0);
    uz_cq_wait(u.b->rcq, &c);
    g_assert_cmphex(c.wr_id, ==, 0x6004);
    g_assert_cmpint(c.status, ==, UZ_WC_STATUS_LOC_PROT_ERR);
    g_assert_cmpint(uz_qp_state(u.b), ==, UZ_QPS_ERR);
    g_assert_cmpint(uz_qp_state(u.a), ==, UZ_QPS_RTS);
    pair_stop(&u.p);
}

/*
 * UC has no READ or atomic (the WQE fails locally); an RC QP's packets
 * reach no UC QP of the same number and the other way round.
 */
static void test_bad(void)
{
    UzSge s, r;
    UzWr wr;
    UzQp *rc;
    Uc u;
    uint64_t noqp;

    uc_start(&u);
    s = uz_mr_sge(u.p.ma, 0, 8);
    wr = (UzWr) { .wr_id = 0xbad, .opcode = UZ_WR_RDMA_READ,
                  .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1,
                  .remote_addr = uz_mr_va(u.p.mb, 0), .rkey = u.p.mb->key };
    uz_post_send(u.a, &wr);
    uz_sq_err(u.a, 0xbad, UZ_WC_RDMA_READ, UZ_WC_STATUS_LOC_QP_OP_ERR,
              UZ_VERR_BAD_WQE);
    u.a = uz_qp_create(&u.p.n[0], UZ_QPT_UC, NULL, NULL, NULL, 0);
    uc_up(u.a, u.b);
    wr.opcode = UZ_WR_ATOMIC_FETCH_ADD;
    wr.wr_id = 0xbad1;
    uz_post_send(u.a, &wr);
    uz_sq_err(u.a, 0xbad1, UZ_WC_FETCH_ADD, UZ_WC_STATUS_LOC_QP_OP_ERR,
              UZ_VERR_BAD_WQE);

    /* An RC QP aimed at the UC QP b: its WRITE reaches nothing. */
    noqp = uz_counter(&u.p.m, 1, "rx_no_qp");
    rc = uz_qp_create(&u.p.n[0], UZ_QPT_RC, NULL, NULL, NULL, 0);
    uz_rc_init(rc);
    uz_rc_rtr(rc, u.b, UC_PSN, &(UzRcOpts)UZ_RC_OPTS_DEFAULT);
    uz_rc_rts(rc, UC_PSN, &(UzRcOpts)UZ_RC_OPTS_DEFAULT);
    wr = (UzWr) { .wr_id = 0xbad2, .opcode = UZ_WR_RDMA_WRITE,
                  .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1,
                  .remote_addr = uz_mr_va(u.p.mb, 0), .rkey = u.p.mb->key };
    uz_post_send(rc, &wr);
    qtest_clock_step(qts(&u.p), STEP_NS);
    g_assert_cmpuint(uz_counter(&u.p.m, 1, "rx_no_qp"), >, noqp);

    /* The UC pair still works. */
    u.a = uz_qp_create(&u.p.n[0], UZ_QPT_UC, NULL, NULL, NULL, 0);
    u.b = uz_qp_create(&u.p.n[1], UZ_QPT_UC, NULL, NULL, NULL, 0);
    uc_up(u.a, u.b);
    uc_up(u.b, u.a);
    r = uz_mr_sge(u.p.mb, 0, 4096);
    uz_post_recv(u.b, 0x7001, &r, 1);
    uc_post(&u, UZ_WR_RDMA_WRITE_IMM, 64, 21, u.p.mb->key, 4096);
    uc_received(&u, 0x7001, UZ_WC_RECV_RDMA_WITH_IMM, 64, 21, 4096);
    pair_stop(&u.p);
}

/*
 * A UC WRITE into an absent ODP page cannot wait: the page faults and the
 * message is dropped.  Once the driver has mapped the page, the next
 * WRITE lands.
 */
static void test_odp(void)
{
    g_autofree uint8_t *data = g_malloc(64);
    struct uz_cqe c;
    UzMr *odp;
    UzSge r;
    Uc u;

    uc_start(&u);
    odp = uz_mr_reg_odp(&u.p.n[1], 2);
    uc_post_to(&u, UZ_WR_RDMA_WRITE, 64, 31, odp, odp->key, 4096 + 8);
    uz_event_wait(&u.p.n[1], &u.p.n[1].async_eq, UZ_EQE_PAGE_FAULT,
                  odp->key);
    g_assert_cmpuint(uz_counter(&u.p.m, 1, "uc_dropped"), ==, 1);
    uz_odp_serve(odp, 1, false);
    r = uz_mr_sge(u.p.mb, 0, 4096);
    uz_post_recv(u.b, 0x8001, &r, 1);
    uc_post_to(&u, UZ_WR_RDMA_WRITE_IMM, 64, 32, odp, odp->key, 4096 + 8);
    uz_cq_wait(u.b->rcq, &c);
    uz_cqe_expect(&c, 0x8001, UZ_WC_RECV_RDMA_WITH_IMM, UZ_WC_STATUS_SUCCESS,
                  0, u.b->qpn);
    uz_pattern(data, 64, 32);
    uz_assert_mr(odp, 4096 + 8, data, 64, "the UC WRITE after the fault");
    g_assert_cmpuint(uz_counter(&u.p.m, 1, "uc_dropped"), ==, 1);
    pair_stop(&u.p);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qtest_add_func("/uzura/uc/traffic", test_traffic);
    qtest_add_func("/uzura/uc/drops", test_drops);
    qtest_add_func("/uzura/uc/bad", test_bad);
    qtest_add_func("/uzura/uc/odp", test_odp);
    return g_test_run();
}
