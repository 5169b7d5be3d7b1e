/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uzura: fault rules and link flaps (spec 7.5.2, 7.5.3).  Each test
 * aims one rule at chosen frames of an RC exchange between two NICs on
 * one hub and checks that the rule acted on exactly those frames, that
 * the transport repaired what it did in the way it must (an ACK timeout,
 * a sequence NAK, a duplicate), and that the data arrived intact.  Also:
 * the rules text, its refusals, and flaps on the virtual clock.
 */
#include "uzura-pair.h"
#include "qemu/host-utils.h"

/* ------------------------------------------------------------------ */
/* The rules text                                                     */
/* ------------------------------------------------------------------ */

static void refused(Pair *p, const char *text, const char *why,
                    const char *keep)
{
    QDict *rsp = rules_try(p, 1, text);
    QDict *err = qdict_get_qdict(rsp, "error");
    g_autofree char *now = NULL;

    g_assert(err);
    if (!strstr(qdict_get_str(err, "desc"), why)) {
        g_error("rules '%s': error '%s' does not say '%s'", text,
                qdict_get_str(err, "desc"), why);
    }
    qobject_unref(rsp);
    now = rules_get(p, 1);
    g_assert_cmpstr(now, ==, keep);
}

static void test_text(void)
{
    static const struct {
        const char *text, *why;
    } bad[] = {
        { "drop drop", "one action" },
        { "op=frob drop", "unknown opcode" },
        { "op=256 drop", "unknown opcode" },
        { "op=uc-ack drop", "unknown opcode" },
        { "op=uc-send-only-inv drop", "unknown opcode" },
        { "prob=1.5 drop", "probability in 0..1" },
        { "prob=-0.1 drop", "probability in 0..1" },
        { "prob=half drop", "probability in 0..1" },
        { "qpn=0x1000000 drop", "qpn takes" },
        { "psn=9-5 drop", "psn takes" },
        { "psn=-5 drop", "psn takes" },
        { "delay", "delay=US" },
        { "delay=0", "delay=US" },
        { "reorder=65", "reorder=K" },
        { "dup=17", "dup=N" },
        { "corrupt=crc", "unknown field" },
        { "ce=1", "ce takes no value" },
        { "dir=rx kind=eth drop", "kind=eth is for dir=tx" },
        { "dir=up drop", "dir takes" },
        { "kind=bogus drop", "unknown kind" },
        { "frob", "unknown word" },
        { "color=red drop", "unknown match" },
        { "op=write-first", "no action" },
        { "nth=0 drop", "nth takes" },
        { "count=0 drop", "count takes" },
        { "drop; op=ack frob", "rule 2" },
    };
    const char *in =
        "dir=tx op=ack nth=2 drop   # the second ACK\n"
        "kind=request,stcrw psn=5-9 prob=0.5 corrupt=payload;"
        "dir=rx qpn=0x12 psn=7 count=3 reorder=4\n"
        "\n"
        "op=0x41 dup=2; kind=nak delay=250\n"
        "op=0x24 drop; op=uc-write-first drop";
    const char *want =
        "dir=tx op=ack nth=2 count=1 drop  # matched 0, acted 0\n"
        "dir=tx kind=request,stcrw psn=5-9 prob=0.5 corrupt=payload"
        "  # matched 0, acted 0\n"
        "dir=rx qpn=0x12 psn=7 count=3 reorder=4  # matched 0, acted 0\n"
        "dir=tx op=0x41 dup=2  # matched 0, acted 0\n"
        "dir=tx kind=nak delay=250  # matched 0, acted 0\n"
        "dir=tx op=uc-send-only drop  # matched 0, acted 0\n"
        "dir=tx op=uc-write-first drop  # matched 0, acted 0\n";
    g_autofree char *many = NULL;
    g_autofree char *text = NULL;
    GString *s = g_string_new(NULL);
    Pair p;
    int i;

    pair_start(&p);
    text = rules_get(&p, 1);
    g_assert_cmpstr(text, ==, "");
    rules_set(&p, 1, in);
    g_free(text);
    text = rules_get(&p, 1);
    g_assert_cmpstr(text, ==, want);
    /* What comes out goes back in as the same rules. */
    rules_set(&p, 1, text);
    g_free(text);
    text = rules_get(&p, 1);
    g_assert_cmpstr(text, ==, want);

    for (i = 0; i < ARRAY_SIZE(bad); i++) {
        refused(&p, bad[i].text, bad[i].why, want);
    }
    for (i = 0; i <= 64; i++) {
        g_string_append(s, "drop\n");
    }
    many = g_string_free(s, false);
    refused(&p, many, "at most 64 rules", want);
    /* The other NIC's rules are its own. */
    g_free(text);
    text = rules_get(&p, 0);
    g_assert_cmpstr(text, ==, "");

    rules_set(&p, 1, "");
    g_free(text);
    text = rules_get(&p, 1);
    g_assert_cmpstr(text, ==, "");
    exchange(&p, UZ_WR_SEND, 100);
    pair_stop(&p);
}

/* ------------------------------------------------------------------ */
/* Aimed faults                                                       */
/* ------------------------------------------------------------------ */

/*
 * The responder's first ACK is lost: the requester times out once and
 * sends the SEND again, which the responder takes as a duplicate and
 * acknowledges.  Nothing else is hit.
 */
static void test_ack_drop(void)
{
    Pair p;
    uint64_t to, dup, drops;

    pair_start(&p);
    rules_set(&p, 1, "kind=ack nth=1 drop");
    to = uz_counter(&p.m, 0, "retry_timeouts");
    dup = uz_counter(&p.m, 1, "duplicates");
    drops = uz_counter(&p.m, 1, "fault_drops");
    exchange(&p, UZ_WR_SEND, MSG_LEN);
    g_assert_cmpuint(rule_acted(&p, 1, 1), ==, 1);
    g_assert_cmpuint(MOVED(&p, 1, "fault_drops", drops), ==, 1);
    g_assert_cmpuint(MOVED(&p, 0, "retry_timeouts", to), ==, 1);
    g_assert_cmpuint(MOVED(&p, 1, "duplicates", dup), >=, 1);
    /* The rule is spent: the next exchange needs no timeout. */
    exchange(&p, UZ_WR_SEND, MSG_LEN);
    g_assert_cmpuint(MOVED(&p, 0, "retry_timeouts", to), ==, 1);
    g_assert_cmpuint(rule_acted(&p, 1, 1), ==, 1);
    pair_stop(&p);
}

/*
 * The middle packet of a three-packet SEND is lost on receive: the
 * responder sends one sequence NAK, the requester goes back at once, and
 * no timeout is needed.  Only the named PSN is hit, once.
 */
static void test_rx_psn_drop(void)
{
    g_autofree char *rule = g_strdup_printf("dir=rx kind=request psn=%u "
                                            "count=1 drop", PSN0 + 1);
    Pair p;
    uint64_t to, nak, drops, rtx;

    pair_start(&p);
    rules_set(&p, 1, rule);
    to = uz_counter(&p.m, 0, "retry_timeouts");
    nak = uz_counter(&p.m, 1, "nak_seq_sent");
    drops = uz_counter(&p.m, 1, "fault_drops");
    rtx = uz_counter(&p.m, 0, "retransmits");
    exchange(&p, UZ_WR_SEND, MSG_LEN);
    g_assert_cmpuint(rule_acted(&p, 1, 1), ==, 1);
    g_assert_cmpuint(MOVED(&p, 1, "fault_drops", drops), ==, 1);
    g_assert_cmpuint(MOVED(&p, 1, "nak_seq_sent", nak), ==, 1);
    g_assert_cmpuint(MOVED(&p, 0, "retry_timeouts", to), ==, 0);
    g_assert_cmpuint(MOVED(&p, 0, "retransmits", rtx), >=, 2);
    /* The rule is spent. */
    exchange(&p, UZ_WR_SEND, MSG_LEN);
    g_assert_cmpuint(rule_acted(&p, 1, 1), ==, 1);
    g_assert_cmpuint(MOVED(&p, 1, "nak_seq_sent", nak), ==, 1);
    pair_stop(&p);
}

/*
 * The first packet of a WRITE is held back behind the next two: it
 * arrives last, the responder NAKs the sequence once, and go-back-N
 * delivers the WRITE.  Then every packet of a WRITE is sent three times
 * more: the responder sees the copies as duplicates.
 */
static void test_reorder_dup(void)
{
    Pair p;
    uint64_t nak, reo, dup, dups;

    pair_start(&p);
    rules_set(&p, 0, "kind=request nth=1 reorder=2");
    nak = uz_counter(&p.m, 1, "nak_seq_sent");
    reo = uz_counter(&p.m, 0, "fault_reorders");
    exchange(&p, UZ_WR_RDMA_WRITE, MSG_LEN);
    g_assert_cmpuint(rule_acted(&p, 0, 1), ==, 1);
    g_assert_cmpuint(MOVED(&p, 0, "fault_reorders", reo), ==, 1);
    g_assert_cmpuint(MOVED(&p, 1, "nak_seq_sent", nak), >=, 1);

    rules_set(&p, 0, "kind=request dup=3");
    dup = uz_counter(&p.m, 1, "duplicates");
    dups = uz_counter(&p.m, 0, "fault_dups");
    exchange(&p, UZ_WR_RDMA_WRITE, MSG_LEN);
    g_assert_cmpuint(rule_acted(&p, 0, 1), ==, 3);
    g_assert_cmpuint(MOVED(&p, 0, "fault_dups", dups), ==, 3);
    g_assert_cmpuint(MOVED(&p, 1, "duplicates", dup), ==, 9);
    pair_stop(&p);
}

/*
 * A delayed request: no completion before its delay has passed on the
 * virtual clock, one right after; no timeout meanwhile.
 */
static void test_delay(void)
{
    Pair p;
    UzSge s, r;
    UzWr wr = {
        .wr_id = 0xde1a, .opcode = UZ_WR_SEND, .flags = UZ_WQE_F_SIGNALED,
        .sge = &s, .num_sge = 1,
    };
    struct uz_cqe c;
    uint64_t to, del;

    pair_start(&p);
    s = uz_mr_sge(p.ma, 0, 64);
    r = uz_mr_sge(p.mb, 0, 64);
    rules_set(&p, 0, "kind=request delay=5000");
    to = uz_counter(&p.m, 0, "retry_timeouts");
    del = uz_counter(&p.m, 0, "fault_delayed");
    uz_post_recv(p.qb, 0x7ec, &r, 1);
    uz_post_send(p.qa, &wr);
    uz_cq_assert_empty(p.qa->scq, 50);
    qtest_clock_step(qts(&p), 4 * MS);
    uz_cq_assert_empty(p.qa->scq, 50);
    g_assert_cmpuint(MOVED(&p, 0, "fault_delayed", del), ==, 1);
    qtest_clock_step(qts(&p), 1 * MS);
    uz_cq_wait(p.qa->scq, &c);
    uz_cqe_expect(&c, 0xde1a, UZ_WC_SEND, UZ_WC_STATUS_SUCCESS, 0,
                  p.qa->qpn);
    uz_cq_wait(p.qb->rcq, &c);
    g_assert_cmpuint(MOVED(&p, 0, "retry_timeouts", to), ==, 0);
    pair_stop(&p);
}

/*
 * Corruption of named fields: a bad ICRC is dropped by the receiver and
 * repaired by a timeout; a payload bit under a good ICRC reaches memory
 * (a faulty sender, which only the application can notice); a PSN under
 * a good ICRC is a sequence error or a duplicate, and is repaired.
 */
static void test_corrupt(void)
{
    uint8_t data[MSG_LEN], got[MSG_LEN];
    UzSge s, r;
    UzWr wr = {
        .wr_id = 0xc0, .opcode = UZ_WR_SEND, .flags = UZ_WQE_F_SIGNALED,
        .sge = &s, .num_sge = 1,
    };
    struct uz_cqe c;
    Pair p;
    uint64_t icrc, to, seq, dup;
    int i, bits = 0;

    pair_start(&p);
    rules_set(&p, 0, "kind=request count=1 corrupt=icrc");
    icrc = uz_counter(&p.m, 1, "icrc_errors");
    to = uz_counter(&p.m, 0, "retry_timeouts");
    exchange(&p, UZ_WR_SEND, 200);
    g_assert_cmpuint(MOVED(&p, 1, "icrc_errors", icrc), ==, 1);
    g_assert_cmpuint(MOVED(&p, 0, "retry_timeouts", to), ==, 1);

    rules_set(&p, 0, "op=send-only count=1 corrupt=payload");
    s = uz_mr_sge(p.ma, 0, sizeof(data));
    r = uz_mr_sge(p.mb, 0, sizeof(data));
    uz_pattern(data, sizeof(data), 0xc0c0);
    uz_mr_write(p.ma, 0, data, sizeof(data));
    /* Three packets: the rule waits for a SEND Only. */
    uz_post_recv(p.qb, 0x7e1, &r, 1);
    uz_post_send(p.qa, &wr);
    uz_cq_wait(p.qa->scq, &c);
    uz_cq_wait(p.qb->rcq, &c);
    g_assert_cmpuint(rule_acted(&p, 0, 1), ==, 0);
    s.length = r.length = 1000;
    uz_post_recv(p.qb, 0x7e2, &r, 1);
    uz_post_send(p.qa, &wr);
    uz_cq_wait(p.qa->scq, &c);
    uz_cqe_expect(&c, 0xc0, UZ_WC_SEND, UZ_WC_STATUS_SUCCESS, 0, p.qa->qpn);
    uz_cq_wait(p.qb->rcq, &c);
    uz_cqe_expect(&c, 0x7e2, UZ_WC_RECV, UZ_WC_STATUS_SUCCESS, 0, p.qb->qpn);
    g_assert_cmpuint(rule_acted(&p, 0, 1), ==, 1);
    uz_mr_read(p.mb, 0, got, 1000);
    for (i = 0; i < 1000; i++) {
        bits += ctpop8(got[i] ^ data[i]);
    }
    g_assert_cmpint(bits, ==, 1);

    rules_set(&p, 0, "op=send-only count=1 corrupt=psn");
    seq = uz_counter(&p.m, 1, "nak_seq_sent");
    dup = uz_counter(&p.m, 1, "duplicates");
    exchange(&p, UZ_WR_SEND, 500);
    g_assert_cmpuint(rule_acted(&p, 0, 1), ==, 1);
    g_assert_cmpuint(MOVED(&p, 1, "nak_seq_sent", seq) +
                     MOVED(&p, 1, "duplicates", dup), >=, 1);
    pair_stop(&p);
}

/*
 * A ce rule marks a node's requests CE as a congested switch would
 * (spec 7.5.2, 9.1.2): the responder counts each, answers with CNPs,
 * and the requester's QP takes them in rp_cnp_handled; the data arrives
 * intact, with no retry.
 */
static void test_ce(void)
{
    Pair p;
    uint64_t marked, cnps, handled, to;

    pair_start(&p);
    rules_set(&p, 0, "kind=request ce");
    marked = uz_counter(&p.m, 1, "np_ecn_marked_roce_packets");
    cnps = uz_counter(&p.m, 1, "np_cnp_sent");
    handled = uz_counter(&p.m, 0, "rp_cnp_handled");
    to = uz_counter(&p.m, 0, "retry_timeouts");
    exchange(&p, UZ_WR_SEND, MSG_LEN);
    g_assert_cmpuint(rule_acted(&p, 0, 1), >=, 1);
    g_assert_cmpuint(MOVED(&p, 1, "np_ecn_marked_roce_packets", marked), ==,
                     rule_acted(&p, 0, 1));
    g_assert_cmpuint(MOVED(&p, 1, "np_cnp_sent", cnps), >=, 1);
    g_assert_cmpuint(MOVED(&p, 0, "rp_cnp_handled", handled), ==,
                     MOVED(&p, 1, "np_cnp_sent", cnps));
    g_assert_cmpuint(MOVED(&p, 0, "retry_timeouts", to), ==, 0);
    g_assert_cmpuint(uz_counter(&p.m, 1, "icrc_errors"), ==, 0);
    pair_stop(&p);
}

/*
 * Rules loaded while frames are held back or delayed, then cleared:
 * what they held goes on in time and nothing is lost.
 */
static void test_clear_in_flight(void)
{
    Pair p;
    UzSge s[8], r[8];
    struct uz_cqe c;
    int i;

    pair_start(&p);
    rules_set(&p, 0, "kind=request psn=256-258 delay=3000; "
              "kind=request reorder=3");
    rules_set(&p, 1, "dir=rx kind=request nth=5 reorder=2; kind=ack "
              "delay=2000");
    for (i = 0; i < 8; i++) {
        UzWr wr = {
            .wr_id = 0xc1 + i, .opcode = UZ_WR_SEND,
            .flags = UZ_WQE_F_SIGNALED, .sge = &s[i], .num_sge = 1,
        };

        s[i] = uz_mr_sge(p.ma, i * 4096, 2000);
        r[i] = uz_mr_sge(p.mb, i * 4096, 4096);
        uz_post_recv(p.qb, 0x7c1 + i, &r[i], 1);
        uz_sq_post(p.qa, &wr);
    }
    uz_sq_ring(p.qa);
    for (i = 0; i < 20; i++) {
        uz_poll_pause(&p.n[0].d);
    }
    rules_set(&p, 0, "");
    rules_set(&p, 1, "");
    for (i = 0; i < 8; i++) {
        uz_cq_wait_clock(p.qa->scq, &c, STEP_NS, 100);
        uz_cqe_expect(&c, 0xc1 + i, UZ_WC_SEND, UZ_WC_STATUS_SUCCESS, 0,
                      p.qa->qpn);
        uz_cq_wait(p.qb->rcq, &c);
        uz_cqe_expect(&c, 0x7c1 + i, UZ_WC_RECV, UZ_WC_STATUS_SUCCESS, 0,
                      p.qb->qpn);
    }
    exchange(&p, UZ_WR_SEND, MSG_LEN);
    pair_stop(&p);
}

/* ------------------------------------------------------------------ */
/* Link flaps                                                         */
/* ------------------------------------------------------------------ */

/* Port events of NIC @nic's async EQ since the last call. */
static void port_events(Pair *p, int nic, int *down, int *up)
{
    UzNode *n = &p->n[nic];
    struct uz_eqe eqe;
    int i;

    *down = *up = 0;
    for (i = 0; i < 20; i++) {
        while (uz_eq_next(&n->d, &n->async_eq, &eqe)) {
            uz_ring(&n->d, n->async_eq.db, n->async_eq.ci);
            g_assert_cmpuint(le32_to_cpu(eqe.handle), ==, 1);
            if (eqe.type == UZ_EQE_PORT_DOWN) {
                (*down)++;
            } else {
                g_assert_cmphex(eqe.type, ==, UZ_EQE_PORT_ACTIVE);
                (*up)++;
            }
        }
        uz_poll_pause(&n->d);
    }
}

/*
 * Down for 2 ms every 5 ms: by 11 ms the link went down three times and
 * came up twice; stopping the flap brings it up.  A flap within the
 * retry budget loses nothing.
 */
static void test_flap(void)
{
    Pair p;
    int i, d, u, down = 0, up = 0;

    pair_start(&p);
    pair_set_uint(&p, 1, "fault-flap-period-us", 5000, true);
    pair_set_uint(&p, 1, "fault-flap-down-us", 5000, false);
    pair_set_uint(&p, 1, "fault-flap-down-us", 2000, true);
    pair_set_uint(&p, 1, "fault-flap-period-us", 1000, false);
    for (i = 0; i < 22; i++) {
        qtest_clock_step(qts(&p), MS / 2);
        port_events(&p, 1, &d, &u);
        down += d;
        up += u;
    }
    g_assert_cmpint(down, ==, 3);
    g_assert_cmpint(up, ==, 2);
    pair_set_uint(&p, 1, "fault-flap-down-us", 0, true);
    port_events(&p, 1, &d, &u);
    g_assert_cmpint(d, ==, 0);
    g_assert_cmpint(u, ==, 1);
    exchange(&p, UZ_WR_SEND, MSG_LEN);

    /* Once, for 30 ms, while a SEND is on its way. */
    pair_set_uint(&p, 1, "fault-flap-period-us", 0, true);
    pair_set_uint(&p, 1, "fault-flap-down-us", 30000, true);
    exchange(&p, UZ_WR_SEND, MSG_LEN);
    qtest_clock_step(qts(&p), 40 * MS);
    port_events(&p, 1, &d, &u);
    g_assert_cmpint(d, ==, 1);
    g_assert_cmpint(u, ==, 1);
    qtest_clock_step(qts(&p), 100 * MS);
    port_events(&p, 1, &d, &u);
    g_assert_cmpint(d + u, ==, 0);
    pair_stop(&p);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qtest_add_func("/uzura/fault-rule/text", test_text);
    qtest_add_func("/uzura/fault-rule/ack-drop", test_ack_drop);
    qtest_add_func("/uzura/fault-rule/rx-psn-drop", test_rx_psn_drop);
    qtest_add_func("/uzura/fault-rule/reorder-dup", test_reorder_dup);
    qtest_add_func("/uzura/fault-rule/delay", test_delay);
    qtest_add_func("/uzura/fault-rule/corrupt", test_corrupt);
    qtest_add_func("/uzura/fault-rule/ce", test_ce);
    qtest_add_func("/uzura/fault-rule/clear-in-flight",
                   test_clear_in_flight);
    qtest_add_func("/uzura/fault-rule/flap", test_flap);
    return g_test_run();
}
