/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uzura: loss recovery (spec 9.6): go-back-N against selective repeat
 * for the same aimed loss, the two modes meeting on one link, the short
 * timeout of selective repeat with few packets in flight and how it
 * follows the round trips measured, and the cap on the ACK timeout.
 * Losses are aimed with fault rules (7.5.2); times are on the virtual
 * clock, which moves only when the test steps it.
 */
#include "uzura-pair.h"

#define LONG_LEN            5000            /* five packets at MTU 1024 */

static void recovery(Pair *p, const char *r0, const char *r1)
{
    pair_set_str(p, 0, "recovery", r0, true);
    pair_set_str(p, 1, "recovery", r1, true);
}

typedef struct Moved {
    uint64_t rtx, to, seq, sacks_sent, sacks_rcvd, kept, resent;
} Moved;

static void moved_get(Pair *p, Moved *m)
{
    m->rtx = uz_counter(&p->m, 0, "retransmits");
    m->to = uz_counter(&p->m, 0, "retry_timeouts");
    m->seq = uz_counter(&p->m, 1, "nak_seq_sent");
    m->sacks_sent = uz_counter(&p->m, 1, "sacks_sent");
    m->sacks_rcvd = uz_counter(&p->m, 0, "sacks_rcvd");
    m->kept = uz_counter(&p->m, 1, "sr_kept");
    m->resent = uz_counter(&p->m, 0, "sr_resent");
}

static void moved_since(Pair *p, const Moved *a, Moved *d)
{
    Moved b;

    moved_get(p, &b);
    d->rtx = b.rtx - a->rtx;
    d->to = b.to - a->to;
    d->seq = b.seq - a->seq;
    d->sacks_sent = b.sacks_sent - a->sacks_sent;
    d->sacks_rcvd = b.sacks_rcvd - a->sacks_rcvd;
    d->kept = b.kept - a->kept;
    d->resent = b.resent - a->resent;
}

/* Lose the second packet of a five-packet SEND, once; returns counts. */
static void lose_second(Pair *p, Moved *d)
{
    g_autofree char *rule = g_strdup_printf("kind=request psn=%u count=1 "
                                            "drop", PSN0 + 1);
    Moved a;

    rules_set(p, 0, rule);
    moved_get(p, &a);
    exchange(p, UZ_WR_SEND, LONG_LEN);
    g_assert_cmpuint(rule_acted(p, 0, 1), ==, 1);
    moved_since(p, &a, d);
}

/*
 * Go-back-N: one sequence NAK, and the whole message is sent again (it
 * goes back to the oldest WQE not completed).  Selective repeat: the
 * responder keeps the three, one SACK names the hole, and only the lost
 * packet is sent again.
 * Neither needs a timeout.
 */
static void test_hole(void)
{
    Pair p;
    Moved d;

    pair_start(&p);
    lose_second(&p, &d);
    g_assert_cmpuint(d.seq, ==, 1);
    g_assert_cmpuint(d.rtx, ==, 5);
    g_assert_cmpuint(d.to, ==, 0);
    g_assert_cmpuint(d.sacks_sent + d.kept + d.resent, ==, 0);
    pair_stop(&p);

    pair_start(&p);
    recovery(&p, "sr", "sr");
    lose_second(&p, &d);
    g_assert_cmpuint(d.seq, ==, 0);
    g_assert_cmpuint(d.sacks_sent, ==, 1);
    g_assert_cmpuint(d.sacks_rcvd, ==, 1);
    g_assert_cmpuint(d.kept, ==, 3);
    g_assert_cmpuint(d.resent, ==, 1);
    g_assert_cmpuint(d.rtx, ==, 1);
    g_assert_cmpuint(d.to, ==, 0);
    /* And again, with everything in place after it. */
    exchange(&p, UZ_WR_RDMA_WRITE, LONG_LEN);
    pair_stop(&p);
}

/*
 * A requester in go-back-N never asks for SACKs, and a responder in
 * go-back-N never sends them: either way round, the pair goes back N.
 */
static void test_mixed_modes(void)
{
    static const char *const modes[2][2] = {
        { "sr", "gbn" }, { "gbn", "sr" },
    };
    Pair p;
    Moved d;
    int i;

    for (i = 0; i < 2; i++) {
        pair_start(&p);
        recovery(&p, modes[i][0], modes[i][1]);
        lose_second(&p, &d);
        g_assert_cmpuint(d.seq, ==, 1);
        g_assert_cmpuint(d.rtx, ==, 5);
        g_assert_cmpuint(d.sacks_sent + d.kept + d.resent, ==, 0);
        pair_stop(&p);
    }
}

/* Post a SEND of @len bytes whose last packet is lost once. */
static void post_tail_loss(Pair *p, uint32_t len, uint32_t npkts)
{
    g_autofree char *rule = g_strdup_printf("kind=request psn=%u count=1 "
                                            "drop", PSN0 + npkts - 1);
    static UzSge s, r;
    UzWr wr = {
        .wr_id = 0x7a11, .opcode = UZ_WR_SEND, .flags = UZ_WQE_F_SIGNALED,
        .sge = &s, .num_sge = 1,
    };

    rules_set(p, 0, rule);
    s = uz_mr_sge(p->ma, 0, len);
    r = uz_mr_sge(p->mb, 0, len);
    uz_post_recv(p->qb, 0x7a12, &r, 1);
    uz_post_send(p->qa, &wr);
}

/* No CQE until the clock has moved @before ns; one by @after ns. */
static void cqe_between(Pair *p, int64_t before, int64_t after)
{
    struct uz_cqe c;

    uz_cq_assert_empty(p->qa->scq, 50);
    qtest_clock_step(qts(p), before);
    uz_cq_assert_empty(p->qa->scq, 50);
    qtest_clock_step(qts(p), after - before);
    uz_cq_wait(p->qa->scq, &c);
    uz_cqe_expect(&c, 0x7a11, UZ_WC_SEND, UZ_WC_STATUS_SUCCESS, 0,
                  p->qa->qpn);
    uz_cq_wait(p->qb->rcq, &c);
}

/*
 * The tail of a message is lost: nothing comes after it, so no SACK or
 * NAK can; the ACK timeout repairs it.  In go-back-N that is the QP's
 * 67 ms; selective repeat with three packets in flight uses
 * sr-rto-low-us (4 ms).  With more in flight it too waits the full
 * timeout.
 */
static void test_rto_low(void)
{
    Pair p;

    pair_start(&p);
    post_tail_loss(&p, MSG_LEN, 3);
    cqe_between(&p, 60 * MS, 70 * MS);
    pair_stop(&p);

    pair_start(&p);
    recovery(&p, "sr", "sr");
    post_tail_loss(&p, MSG_LEN, 3);
    cqe_between(&p, MS * 39 / 10, MS * 41 / 10);
    pair_stop(&p);

    pair_start(&p);
    recovery(&p, "sr", "sr");
    pair_set_uint(&p, 0, "sr-rto-low-us", 20000, true);
    post_tail_loss(&p, MSG_LEN, 3);
    cqe_between(&p, 19 * MS, 21 * MS);
    pair_stop(&p);

    pair_start(&p);
    recovery(&p, "sr", "sr");
    post_tail_loss(&p, LONG_LEN, 5);
    cqe_between(&p, 60 * MS, 70 * MS);
    pair_stop(&p);
}

/*
 * Short timeouts resend, each twice as long as the one before (RFC
 * 6298's backoff), and do not use retries faster than the QP's own
 * timeout: with every request lost, the first 100 ms see four (at 4,
 * 12, 28 and 60 ms) and leave the QP alive (retry_cnt 7 of 67 ms lasts
 * 0.5 s); once the loss ends, the next resend (at 124 ms) completes the
 * SEND.
 */
static void test_rto_low_retries(void)
{
    struct uz_cqe c;
    Pair p;
    uint64_t to;
    int i;

    pair_start(&p);
    recovery(&p, "sr", "sr");
    to = uz_counter(&p.m, 0, "retry_timeouts");
    post_tail_loss(&p, 100, 1);
    rules_set(&p, 0, "kind=request drop");
    for (i = 0; i < 25; i++) {
        qtest_clock_step(qts(&p), 4 * MS);
        uz_cq_assert_empty(p.qa->scq, 5);
    }
    g_assert_cmpuint(uz_counter(&p.m, 0, "retry_timeouts") - to, ==, 4);
    g_assert_cmpint(uz_qp_state(p.qa), ==, UZ_QPS_RTS);
    rules_set(&p, 0, "");
    qtest_clock_step(qts(&p), 20 * MS);
    uz_cq_assert_empty(p.qa->scq, 5);
    qtest_clock_step(qts(&p), 5 * MS);
    uz_cq_wait(p.qa->scq, &c);
    uz_cqe_expect(&c, 0x7a11, UZ_WC_SEND, UZ_WC_STATUS_SUCCESS, 0,
                  p.qa->qpn);
    pair_stop(&p);
}

/* A SEND of @len bytes from qa, signalled as @wr_id. */
static void post_send(Pair *p, uint32_t len, uint64_t wr_id)
{
    static UzSge s, r;
    UzWr wr = {
        .wr_id = wr_id, .opcode = UZ_WR_SEND, .flags = UZ_WQE_F_SIGNALED,
        .sge = &s, .num_sge = 1,
    };

    s = uz_mr_sge(p->ma, 0, len);
    r = uz_mr_sge(p->mb, 0, len);
    uz_post_recv(p->qb, wr_id + 1, &r, 1);
    uz_post_send(p->qa, &wr);
}

/*
 * The short timeout follows the round trips measured (RFC 6298): with
 * every ACK 3 ms late (a fault rule on the responder), one SEND measures
 * 3 ms, so SRTT 3 ms, RTTVAR 1.5 ms, and RTO_low = 3 + 4 * 1.5 = 9 ms,
 * above sr-rto-low-us (4 ms, the floor).  The next SEND's only packet
 * is lost: it is sent again at 9 ms, not 4, and completes 3 ms later.
 */
static void test_rto_measured(void)
{
    g_autofree char *lose = g_strdup_printf("kind=request psn=%u count=1 "
                                            "drop", PSN0 + 1);
    struct uz_cqe c;
    uint64_t rtx;
    Pair p;

    pair_start(&p);
    recovery(&p, "sr", "sr");
    rules_set(&p, 1, "kind=ack delay=3000");
    post_send(&p, 100, 0x7a20);
    uz_cq_assert_empty(p.qa->scq, 20);
    qtest_clock_step(qts(&p), 3 * MS);
    uz_cq_wait(p.qa->scq, &c);
    uz_cqe_expect(&c, 0x7a20, UZ_WC_SEND, UZ_WC_STATUS_SUCCESS, 0,
                  p.qa->qpn);
    uz_cq_wait(p.qb->rcq, &c);

    rules_set(&p, 0, lose);
    rtx = uz_counter(&p.m, 0, "retransmits");
    post_send(&p, 100, 0x7a30);
    uz_cq_assert_empty(p.qa->scq, 20);
    qtest_clock_step(qts(&p), MS * 89 / 10);
    uz_cq_assert_empty(p.qa->scq, 20);
    g_assert_cmpuint(uz_counter(&p.m, 0, "retransmits"), ==, rtx);
    qtest_clock_step(qts(&p), MS * 2 / 10);
    g_assert_cmpuint(uz_counter(&p.m, 0, "retransmits"), ==, rtx + 1);
    qtest_clock_step(qts(&p), 3 * MS);
    uz_cq_wait(p.qa->scq, &c);
    uz_cqe_expect(&c, 0x7a30, UZ_WC_SEND, UZ_WC_STATUS_SUCCESS, 0,
                  p.qa->qpn);
    uz_cq_wait(p.qb->rcq, &c);
    pair_stop(&p);
}

/* ack-timeout-max-us caps the QP's timeout; refused values change nothing. */
static void test_timeout_cap(void)
{
    Pair p;

    pair_start(&p);
    pair_set_uint(&p, 0, "ack-timeout-max-us", 5000, true);
    post_tail_loss(&p, LONG_LEN, 5);
    cqe_between(&p, 4 * MS, 6 * MS);
    pair_set_uint(&p, 0, "ack-timeout-max-us", 20000000, false);
    pair_set_str(&p, 0, "recovery", "irn", false);
    pair_set_str(&p, 0, "recovery", "", false);
    pair_set_uint(&p, 0, "ack-timeout-max-us", 0, true);
    exchange(&p, UZ_WR_SEND, MSG_LEN);
    pair_stop(&p);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qtest_add_func("/uzura/recovery/hole", test_hole);
    qtest_add_func("/uzura/recovery/mixed-modes", test_mixed_modes);
    qtest_add_func("/uzura/recovery/rto-low", test_rto_low);
    qtest_add_func("/uzura/recovery/rto-low-retries", test_rto_low_retries);
    qtest_add_func("/uzura/recovery/rto-measured", test_rto_measured);
    qtest_add_func("/uzura/recovery/timeout-cap", test_timeout_cap);
    return g_test_run();
}
