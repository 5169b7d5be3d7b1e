/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qtest for the uzura NIC's RoCE loopback: QPs of one NIC talking to each
 * other through frames to the NIC's own MAC, which the NIC turns around
 * before its port (spec 9.1).  RC SEND, WRITE, READ and atomics at several
 * sizes, UD, a QP talking to itself, with the link down and with the fault
 * injector dropping every frame, a reset with work in flight, a long run of
 * messages, and a burst that overflows the loopback FIFO.  A socket on the
 * hub watches the link: no looped frame may show up there, while a frame
 * to another NIC still does.  Data is checked byte for byte, with guard
 * bytes around it.
 */
#include "uzura-verbs.h"
#include "uzura-wire.h"

#define QKEY            0x1009beefu
#define MSG_MAX         65536u
#define MR_LEN          (MSG_MAX + 8192)

typedef struct Loop {
    UzMachine m;
    UzNode a;                   /* NIC 0, MAC 52:54:00:12:34:50 */
    int sock;                   /* our end of the hub's socket port */
} Loop;

/* Message sizes: empty, one byte, one page, 64 packets of the path MTU. */
static const uint32_t sizes[] = { 0, 1, 4096, MSG_MAX };

static void loop_start(Loop *t)
{
    t->sock = uz_wire_machine_start(&t->m, 1, NULL);
    uz_node_start(&t->a, &t->m, 0);
}

static void loop_stop(Loop *t)
{
    close(t->sock);
    uz_node_stop(&t->a);
    uz_machine_stop(&t->m);
}

static uint64_t loop_counter(Loop *t, const char *name)
{
    return uz_counter(&t->m, 0, name);
}

/* Let the device run until the link is quiet: no RoCE frame on it. */
static void assert_wire_quiet(int sock, UzDev *d)
{
    UzFrame fr;

    while (uz_wire_recv(sock, d, &fr)) {
        if (uz_frame_is_roce(&fr)) {
            g_error("a RoCE frame of %zu bytes, BTH opcode 0x%02x, to "
                    "%02x:%02x:%02x:%02x:%02x:%02x went to the link",
                    fr.len, fr.data[UZ_OFF_BTH], fr.data[0], fr.data[1],
                    fr.data[2], fr.data[3], fr.data[4], fr.data[5]);
        }
    }
}

/* Poll until no frame has been looped for a while. */
static void wait_loop_quiet(Loop *t)
{
    uint64_t last = loop_counter(t, "loop_frames");
    int i, quiet = 0;

    for (i = 0; i < UZ_POLL_LIMIT && quiet < 50; i++) {
        uint64_t now;

        uz_poll_pause(&t->a.d);
        now = loop_counter(t, "loop_frames");
        quiet = now == last ? quiet + 1 : 0;
        last = now;
    }
    g_assert_cmpint(quiet, ==, 50);
}

/* The frames a packet-per-MTU message of @len bytes takes (MTU 1024). */
static uint64_t npkts(uint32_t len)
{
    return MAX(1, DIV_ROUND_UP(len, 1024));
}

/* Two RC QPs of NIC 0 connected to each other through its own MAC. */
static void rc_loop_pair(UzNode *n, UzQp **qa, UzQp **qb)
{
    *qa = uz_qp_create(n, UZ_QPT_RC, NULL, NULL, NULL, 0);
    *qb = uz_qp_create(n, UZ_QPT_RC, NULL, NULL, NULL, 0);
    /* The peer is on the same NIC: dmac, sgid and dgid are all its own. */
    uz_rc_connect(*qa, *qb, NULL);
}

/* An RC QP whose destination QP is itself. */
static UzQp *rc_self(UzNode *n, UzCq *scq, UzCq *rcq)
{
    static const UzRcOpts o = UZ_RC_OPTS_DEFAULT;
    UzQp *q = uz_qp_create(n, UZ_QPT_RC, scq, rcq, NULL, 0);

    uz_rc_init(q);
    uz_rc_rtr(q, q, o.psn[0], &o);
    uz_rc_rts(q, o.psn[0], &o);
    return q;
}

/* ------------------------------------------------------------------ */
/* RC operations, from @qs (MR @ms) to @qr (MR @mr); @qs may be @qr   */
/* ------------------------------------------------------------------ */

static void do_send(UzQp *qs, UzQp *qr, UzMr *ms, UzMr *mr, uint32_t len,
                    bool imm, uint32_t id)
{
    g_autofree uint8_t *buf = g_malloc(len + 1);
    uint32_t immv = 0x5e0d0000u | id;
    UzSge s = uz_mr_sge(ms, 5, len);
    UzSge r = uz_mr_sge(mr, 64, len + 256);
    UzWr wr = {
        .wr_id = 0x5e000000ull | id,
        .opcode = imm ? UZ_WR_SEND_IMM : UZ_WR_SEND,
        .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1, .imm = immv,
    };

    uz_pattern(buf, len, id);
    uz_mr_write(ms, 5, buf, len);
    uz_mr_fill(mr, 0, UZ_GUARD, 64 + len + 512);
    uz_post_recv(qr, 0x7ec00000ull | id, &r, 1);
    uz_post_send(qs, &wr);
    uz_sq_done(qs, wr.wr_id, UZ_WC_SEND, len);
    uz_rq_done(qr, 0x7ec00000ull | id, UZ_WC_RECV, len,
               imm ? UZ_WC_F_IMM : 0, immv);
    uz_assert_mr(mr, 64, buf, len, "received data");
    uz_assert_mr_fill(mr, 0, UZ_GUARD, 64, "before the receive buffer");
    uz_assert_mr_fill(mr, 64 + len, UZ_GUARD, 512, "after the message");
}

/* READ @len bytes of @mr (the responder's) into @ms (the requester's). */
static void do_read(UzQp *qs, UzMr *ms, UzMr *mr, uint32_t len, uint32_t id)
{
    const uint64_t roff = 4093, loff = 7;
    g_autofree uint8_t *buf = g_malloc(len + 1);
    UzSge s = uz_mr_sge(ms, loff, len);
    UzWr wr = {
        .wr_id = 0x7ead0000ull | id, .opcode = UZ_WR_RDMA_READ,
        .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1,
        .remote_addr = uz_mr_va(mr, roff), .rkey = mr->key,
    };

    uz_pattern(buf, len, 200 + id);
    uz_mr_write(mr, roff, buf, len);
    uz_mr_fill(ms, 0, UZ_GUARD, loff + len + 64);
    uz_post_send(qs, &wr);
    uz_sq_done(qs, wr.wr_id, UZ_WC_RDMA_READ, len);
    uz_assert_mr(ms, loff, buf, len, "read data");
    uz_assert_mr_fill(ms, 0, UZ_GUARD, loff, "before the read buffer");
    uz_assert_mr_fill(ms, loff + len, UZ_GUARD, 64, "after the read buffer");
    uz_assert_mr(mr, roff, buf, len, "read source");
}

static void do_atomic(UzQp *qs, UzMr *ms, UzMr *mr, uint8_t opcode,
                      uint64_t initial, uint64_t cmp_add, uint64_t swap,
                      uint64_t expect_remote, uint32_t id)
{
    const uint64_t loff = 4093;     /* the result crosses a page boundary */
    const uint64_t roff = 8192;
    UzSge s = uz_mr_sge(ms, loff, 8);
    UzWr wr = {
        .wr_id = 0xa7000000ull | id, .opcode = opcode,
        .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1,
        .remote_addr = uz_mr_va(mr, roff), .rkey = mr->key,
        .compare_add = cmp_add, .swap = swap,
    };
    uint64_t v = cpu_to_le64(initial);
    uint64_t got;

    uz_mr_fill(ms, loff - 8, UZ_GUARD, 24);
    uz_mr_fill(mr, roff - 8, UZ_GUARD, 24);
    uz_mr_write(mr, roff, &v, 8);
    uz_post_send(qs, &wr);
    uz_sq_done(qs, wr.wr_id, opcode == UZ_WR_ATOMIC_CMP_SWP ?
               UZ_WC_COMP_SWAP : UZ_WC_FETCH_ADD, 8);
    uz_mr_read(ms, loff, &got, 8);
    g_assert_cmphex(le64_to_cpu(got), ==, initial);
    uz_mr_read(mr, roff, &got, 8);
    g_assert_cmphex(le64_to_cpu(got), ==, expect_remote);
    uz_assert_mr_fill(ms, loff - 8, UZ_GUARD, 8, "before the atomic result");
    uz_assert_mr_fill(ms, loff + 8, UZ_GUARD, 8, "after the atomic result");
    uz_assert_mr_fill(mr, roff - 8, UZ_GUARD, 8, "before the atomic target");
    uz_assert_mr_fill(mr, roff + 8, UZ_GUARD, 8, "after the atomic target");
}

/*
 * Every RC operation at every size from @qa to @qb (MRs @ma, @mb), and
 * back where @qb is another QP; returns the least number of frames that
 * took (requests and READ responses; ACKs not counted).
 */
static uint64_t run_rc_ops(UzQp *qa, UzQp *qb, UzMr *ma, UzMr *mb)
{
    const uint64_t v0 = 0x0123456789abcdefull, v1 = 0xfedcba9876543210ull;
    uint64_t frames = 0;
    int k, imm;

    for (k = 0; k < ARRAY_SIZE(sizes); k++) {
        uint32_t len = sizes[k];

        g_test_message("SEND, WRITE, READ of %u bytes", len);
        for (imm = 0; imm < 2; imm++) {
            do_send(qa, qb, ma, mb, len, imm, k * 2 + imm);
            uz_check_write(qa, qb, ma, mb, len, imm, k * 2 + imm);
        }
        do_read(qa, ma, mb, len, k);
        frames += 5 * npkts(len) + 1;
        if (qb != qa) {
            do_send(qb, qa, mb, ma, len, false, 0x80 + k);
            uz_check_write(qb, qa, mb, ma, len, true, 0x80 + k);
            do_read(qb, mb, ma, len, 0x80 + k);
            frames += 3 * npkts(len) + 1;
        }
    }
    do_atomic(qa, ma, mb, UZ_WR_ATOMIC_FETCH_ADD, v0, 0x1111, 0,
              v0 + 0x1111, 1);
    do_atomic(qa, ma, mb, UZ_WR_ATOMIC_FETCH_ADD, UINT64_MAX, 2, 0, 1, 2);
    do_atomic(qa, ma, mb, UZ_WR_ATOMIC_CMP_SWP, v0, v0, v1, v1, 3);
    do_atomic(qa, ma, mb, UZ_WR_ATOMIC_CMP_SWP, v0, v0 ^ 1, v1, v0, 4);
    frames += 4 * 2;
    return frames;
}

/* The counters that no looped frame may touch are still 0. */
static void assert_no_link_counts(Loop *t)
{
    static const char *const names[] = {
        "roce_tx_dropped", "loop_dropped", "fault_drops", "fault_corrupts",
        "fault_dups", "fault_reorders", "fault_delayed", "icrc_errors",
        "rx_malformed", "rx_no_qp", "retransmits",
    };
    int i;

    for (i = 0; i < ARRAY_SIZE(names); i++) {
        g_assert_cmpuint(loop_counter(t, names[i]), ==, 0);
    }
}

/*
 * Two RC QPs of one NIC: every operation at every size completes with the
 * right data, none of it on the link, all of it through the loopback.
 */
static void test_rc_ops(void)
{
    Loop t;
    UzQp *qa, *qb;
    UzMr *ma, *mb;
    uint64_t frames;

    loop_start(&t);
    rc_loop_pair(&t.a, &qa, &qb);
    ma = uz_mr_reg(&t.a, MR_LEN, UZ_ACCESS_ALL);
    mb = uz_mr_reg(&t.a, MR_LEN, UZ_ACCESS_ALL);
    g_assert_cmpuint(loop_counter(&t, "loop_frames"), ==, 0);
    frames = run_rc_ops(qa, qb, ma, mb);
    assert_wire_quiet(t.sock, &t.a.d);
    g_assert_cmpuint(loop_counter(&t, "loop_frames"), >=, frames);
    /* Each looped frame is sent and received once. */
    g_assert_cmpuint(loop_counter(&t, "tx_pkts_send"), ==,
                     loop_counter(&t, "rx_pkts_send"));
    g_assert_cmpuint(loop_counter(&t, "tx_pkts_write"), ==,
                     loop_counter(&t, "rx_pkts_write"));
    g_assert_cmpuint(loop_counter(&t, "tx_pkts_read_resp"), ==,
                     loop_counter(&t, "rx_pkts_read_resp"));
    assert_no_link_counts(&t);
    uz_cq_assert_empty(qa->scq, 5);
    uz_cq_assert_empty(qa->rcq, 1);
    uz_cq_assert_empty(qb->scq, 1);
    uz_cq_assert_empty(qb->rcq, 1);
    loop_stop(&t);
}

/* One RC QP whose destination is itself: requester and responder at once. */
static void test_self_qp(void)
{
    Loop t;
    UzQp *q;
    UzMr *ma, *mb;
    uint64_t frames;

    loop_start(&t);
    q = rc_self(&t.a, NULL, NULL);
    ma = uz_mr_reg(&t.a, MR_LEN, UZ_ACCESS_ALL);
    mb = uz_mr_reg(&t.a, MR_LEN, UZ_ACCESS_ALL);
    frames = run_rc_ops(q, q, ma, mb);
    assert_wire_quiet(t.sock, &t.a.d);
    g_assert_cmpuint(loop_counter(&t, "loop_frames"), >=, frames);
    assert_no_link_counts(&t);
    uz_cq_assert_empty(q->scq, 5);
    uz_cq_assert_empty(q->rcq, 1);
    loop_stop(&t);
}

/* ------------------------------------------------------------------ */
/* UD                                                                 */
/* ------------------------------------------------------------------ */

/* The GRH area of a UD receive: 20 zero bytes, then the IPv4 header. */
static void check_grh(const uint8_t *g, uint32_t ip_len)
{
    uint8_t ip[4];
    uint32_t sum = 0;
    int i;

    for (i = 0; i < 20; i++) {
        g_assert_cmphex(g[i], ==, 0);
    }
    g += 20;
    g_assert_cmphex(g[0], ==, 0x45);
    g_assert_cmpuint(lduw_be_p(g + 2), ==, ip_len);
    g_assert_cmpuint(g[9], ==, 17);
    for (i = 0; i < 20; i += 2) {
        sum += lduw_be_p(g + i);
    }
    while (sum >> 16) {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    g_assert_cmphex(sum, ==, 0xffff);
    /* From and to the one NIC's address. */
    uz_node_ip(0, ip);
    g_assert_cmpmem(g + 12, 4, ip, 4);
    g_assert_cmpmem(g + 16, 4, ip, 4);
}

/* A UD SEND of @len bytes from @qs to @qr through the AH @ahn. */
static void ud_xfer(UzQp *qs, UzQp *qr, UzMr *ms, UzMr *mr, uint32_t ahn,
                    uint32_t len, bool imm, uint32_t id)
{
    uint8_t data[1024];
    uint8_t got[40 + 1024 + 64];
    UzSge s = uz_mr_sge(ms, 11, len);
    UzSge r = uz_mr_sge(mr, 0, 40 + 1024);
    uint32_t immv = 0xd0d00000u | id;
    UzWr wr = {
        .wr_id = 0xd000 + id, .opcode = imm ? UZ_WR_SEND_IMM : UZ_WR_SEND,
        .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1, .imm = immv,
        .ahn = ahn, .remote_qpn = qr->qpn, .remote_qkey = QKEY,
    };
    struct uz_cqe c;
    size_t i;

    g_assert_cmpuint(len, <=, sizeof(data));
    uz_pattern(data, len, id);
    uz_mr_write(ms, 11, data, len);
    uz_mr_fill(mr, 0, UZ_GUARD, sizeof(got));
    uz_post_recv(qr, 0xe000 + id, &r, 1);
    uz_post_send(qs, &wr);
    uz_cq_wait(qs->scq, &c);
    uz_expect_sq(&c, wr.wr_id, UZ_WC_SEND, qs, len);
    uz_cq_wait(qr->rcq, &c);
    uz_expect_rq(&c, 0xe000 + id, UZ_WC_RECV, qr->qpn, 40 + len,
                 UZ_WC_F_GRH | UZ_WC_F_IPV4 | (imm ? UZ_WC_F_IMM : 0), immv,
                 qs->qpn);
    uz_mr_read(mr, 0, got, sizeof(got));
    /* IPv4 + UDP + BTH + DETH (+ ImmDt) + padded payload + ICRC. */
    check_grh(got, 20 + 8 + 12 + 8 + (imm ? 4 : 0) + ROUND_UP(len, 4) + 4);
    uz_assert_bytes(got + 40, data, len, "UD payload");
    for (i = 40 + len; i < sizeof(got); i++) {
        g_assert_cmphex(got[i], ==, UZ_GUARD);
    }
}

/* UD QPs of one NIC, and a UD QP to itself, through an AH to its MAC. */
static void test_ud(void)
{
    static const uint32_t ud_sizes[] = { 0, 1, 333, 1024 };
    Loop t;
    UzQp *ua, *ub;
    UzMr *ma, *mb;
    uint32_t ahn, id = 0;
    uint64_t before;
    int k, imm;

    loop_start(&t);
    ua = uz_qp_create(&t.a, UZ_QPT_UD, NULL, NULL, NULL, 0);
    ub = uz_qp_create(&t.a, UZ_QPT_UD, NULL, NULL, NULL, 0);
    uz_ud_up(ua, QKEY, 0x100);
    uz_ud_up(ub, QKEY, 0x200);
    ma = uz_mr_reg(&t.a, 8192, UZ_ACCESS_ALL);
    mb = uz_mr_reg(&t.a, 8192, UZ_ACCESS_ALL);
    ahn = uz_ah_create(&t.a, 0);
    before = loop_counter(&t, "loop_frames");
    for (k = 0; k < ARRAY_SIZE(ud_sizes); k++) {
        for (imm = 0; imm < 2; imm++) {
            ud_xfer(ua, ub, ma, mb, ahn, ud_sizes[k], imm, id++);
            ud_xfer(ub, ua, mb, ma, ahn, ud_sizes[k], imm, id++);
            ud_xfer(ua, ua, ma, mb, ahn, ud_sizes[k], imm, id++);
        }
    }
    assert_wire_quiet(t.sock, &t.a.d);
    g_assert_cmpuint(loop_counter(&t, "loop_frames"), ==, before + id);
    g_assert_cmpuint(loop_counter(&t, "tx_pkts_ud"), ==, id);
    g_assert_cmpuint(loop_counter(&t, "rx_pkts_ud"), ==, id);
    assert_no_link_counts(&t);
    loop_stop(&t);
}

/* ------------------------------------------------------------------ */
/* The link's state and faults do not apply                           */
/* ------------------------------------------------------------------ */

/*
 * A UD SEND to NIC 1's MAC (no such NIC here): it completes, as UD does
 * once sent, but goes to the link, unlike the looped frames.
 */
static void ud_to_other_mac(Loop *t, uint64_t wr_id)
{
    UzQp *u = uz_qp_create(&t->a, UZ_QPT_UD, NULL, NULL, NULL, 0);
    UzMr *m = uz_mr_reg(&t->a, 4096, UZ_ACCESS_ALL);
    UzSge s = uz_mr_sge(m, 0, 64);
    UzWr wr = {
        .wr_id = wr_id, .opcode = UZ_WR_SEND, .flags = UZ_WQE_F_SIGNALED,
        .sge = &s, .num_sge = 1, .ahn = uz_ah_create(&t->a, 1),
        .remote_qpn = 2, .remote_qkey = QKEY,
    };

    uz_ud_up(u, QKEY, 0);
    uz_post_send(u, &wr);
    uz_sq_done(u, wr_id, UZ_WC_SEND, 64);
}

static void test_link_down(void)
{
    Loop t;
    UzQp *qa, *qb, *q;
    UzMr *ma, *mb;
    uint64_t frames, before;

    loop_start(&t);
    rc_loop_pair(&t.a, &qa, &qb);
    q = rc_self(&t.a, NULL, NULL);
    ma = uz_mr_reg(&t.a, MR_LEN, UZ_ACCESS_ALL);
    mb = uz_mr_reg(&t.a, MR_LEN, UZ_ACCESS_ALL);
    uz_link_set(&t.m, 0, false);
    g_assert_cmphex(uz_rd(&t.a.d, UZ_REG_STATUS) & UZ_STATUS_LINK_UP, ==, 0);
    uz_event_wait(&t.a, &t.a.async_eq, UZ_EQE_PORT_DOWN, 1);

    before = loop_counter(&t, "loop_frames");
    frames = run_rc_ops(qa, qb, ma, mb);
    do_send(q, q, ma, mb, MSG_MAX, true, 0x99);
    uz_check_write(q, q, ma, mb, MSG_MAX, false, 0x99);
    do_read(q, ma, mb, MSG_MAX, 0x99);
    g_assert_cmpuint(loop_counter(&t, "loop_frames") - before, >=, frames);
    assert_wire_quiet(t.sock, &t.a.d);
    assert_no_link_counts(&t);

    /* A frame to another MAC is dropped for the link. */
    ud_to_other_mac(&t, 0xd0);
    g_assert_cmpuint(loop_counter(&t, "roce_tx_dropped"), ==, 1);
    assert_wire_quiet(t.sock, &t.a.d);
    loop_stop(&t);
}

static void test_fault_drop(void)
{
    Loop t;
    UzQp *qa, *qb, *q;
    UzMr *ma, *mb;
    uint64_t frames, before;

    loop_start(&t);
    rc_loop_pair(&t.a, &qa, &qb);
    q = rc_self(&t.a, NULL, NULL);
    ma = uz_mr_reg(&t.a, MR_LEN, UZ_ACCESS_ALL);
    mb = uz_mr_reg(&t.a, MR_LEN, UZ_ACCESS_ALL);
    qtest_qmp_assert_success(t.m.qs->qts, "{'execute': 'qom-set', "
                             "'arguments': {'path': '/machine/peripheral/uz0',"
                             " 'property': 'fault-drop', 'value': 1.0}}");

    before = loop_counter(&t, "loop_frames");
    frames = run_rc_ops(qa, qb, ma, mb);
    do_send(q, q, ma, mb, MSG_MAX, false, 0x99);
    uz_check_write(q, q, ma, mb, MSG_MAX, true, 0x99);
    do_read(q, ma, mb, MSG_MAX, 0x99);
    g_assert_cmpuint(loop_counter(&t, "loop_frames") - before, >=, frames);
    assert_wire_quiet(t.sock, &t.a.d);
    assert_no_link_counts(&t);

    /* The injector does drop a frame to another MAC. */
    ud_to_other_mac(&t, 0xd1);
    g_assert_cmpuint(loop_counter(&t, "fault_drops"), ==, 1);
    g_assert_cmpuint(loop_counter(&t, "roce_tx_dropped"), ==, 0);
    assert_wire_quiet(t.sock, &t.a.d);
    loop_stop(&t);
}

/* ------------------------------------------------------------------ */
/* Reset with looped frames in flight                                 */
/* ------------------------------------------------------------------ */

/* RoCE packets received, of every kind. */
static uint64_t rx_pkts(Loop *t)
{
    static const char *const names[] = {
        "rx_pkts_send", "rx_pkts_write", "rx_pkts_read_req",
        "rx_pkts_read_resp", "rx_pkts_atomic", "rx_pkts_ack", "rx_pkts_ud",
        "rx_pkts_crw",
    };
    uint64_t sum = 0;
    int i;

    for (i = 0; i < ARRAY_SIZE(names); i++) {
        sum += loop_counter(t, names[i]);
    }
    return sum;
}

/*
 * Fill the SQs of two looped pairs with multi-packet WRITEs and READs,
 * ring, and reset the NIC through UZ_REG_RESET a few polls later (0 the
 * first time: right behind the doorbell, whose store starts sending).
 * Frames still in the loopback FIFO are lost; the NIC then works as new.
 */
static void test_reset(void)
{
    Loop t;
    int round, i, k;

    loop_start(&t);
    for (round = 0; round < 3; round++) {
        UzQp *qp[4];
        UzMr *ma, *mb;
        uint64_t looped, received;

        rc_loop_pair(&t.a, &qp[0], &qp[1]);
        rc_loop_pair(&t.a, &qp[2], &qp[3]);
        ma = uz_mr_reg(&t.a, MR_LEN, UZ_ACCESS_ALL);
        mb = uz_mr_reg(&t.a, MR_LEN, UZ_ACCESS_ALL);
        looped = loop_counter(&t, "loop_frames");
        received = rx_pkts(&t);
        for (k = 0; k < 4; k++) {
            UzMr *mr = k & 1 ? ma : mb;
            UzSge s = uz_mr_sge(k & 1 ? mb : ma, 0, MSG_MAX);

            for (i = 0; i < (1 << UZ_SQ_LOG_DEPTH) - 1; i++) {
                UzWr wr = {
                    .wr_id = i, .flags = UZ_WQE_F_SIGNALED,
                    .opcode = i % 4 == 3 ? UZ_WR_RDMA_READ : UZ_WR_RDMA_WRITE,
                    .sge = &s, .num_sge = 1,
                    .remote_addr = uz_mr_va(mr, 0), .rkey = mr->key,
                };

                uz_sq_post(qp[k], &wr);
            }
        }
        for (k = 0; k < 4; k++) {
            uz_sq_ring(qp[k]);
        }
        for (i = 0; i < round * 3; i++) {
            uz_poll_pause(&t.a.d);
        }
        uz_wr(&t.a.d, UZ_REG_RESET, UZ_RESET_KEY);
        g_assert_cmphex(uz_rd(&t.a.d, UZ_REG_STATUS), ==,
                        UZ_STATUS_READY | UZ_STATUS_LINK_UP);
        g_assert_cmphex(uz_rd(&t.a.d, UZ_REG_ADMIN_STATUS), ==, 0);
        looped = loop_counter(&t, "loop_frames") - looped;
        received = rx_pkts(&t) - received;
        g_test_message("round %d: %" PRIu64 " frames looped, %" PRIu64
                       " received before the reset", round, looped,
                       received);
        g_assert_cmpuint(received, <=, looped);
        /* The reset is complete: nothing more is looped or received. */
        looped = loop_counter(&t, "loop_frames");
        received = rx_pkts(&t);
        for (i = 0; i < 50; i++) {
            uz_poll_pause(&t.a.d);
        }
        g_assert_cmpuint(loop_counter(&t, "loop_frames"), ==, looped);
        g_assert_cmpuint(rx_pkts(&t), ==, received);

        /*
         * Start again from scratch, with the same QPNs, keys and PSNs as
         * before: the loopback works, and what it receives now is only
         * what it looped since the reset, none of the lost frames.
         */
        uz_node_stop(&t.a);
        uz_node_start(&t.a, &t.m, 0);
        rc_loop_pair(&t.a, &qp[0], &qp[1]);
        ma = uz_mr_reg(&t.a, MR_LEN, UZ_ACCESS_ALL);
        mb = uz_mr_reg(&t.a, MR_LEN, UZ_ACCESS_ALL);
        do_send(qp[0], qp[1], ma, mb, MSG_MAX, true, 0x10 + round);
        uz_check_write(qp[1], qp[0], mb, ma, MSG_MAX, false, 0x10 + round);
        do_read(qp[0], ma, mb, MSG_MAX, 0x10 + round);
        do_atomic(qp[1], mb, ma, UZ_WR_ATOMIC_FETCH_ADD, 41, 1, 0, 42,
                  0x10 + round);
        wait_loop_quiet(&t);
        g_assert_cmpuint(rx_pkts(&t) - received, ==,
                         loop_counter(&t, "loop_frames") - looped);
        g_assert_cmpuint(loop_counter(&t, "rx_no_qp"), ==, 0);
        g_assert_cmpuint(loop_counter(&t, "rx_stale"), ==, 0);
        g_assert_cmpuint(loop_counter(&t, "duplicates"), ==, 0);
    }
    assert_wire_quiet(t.sock, &t.a.d);
    g_assert_cmpuint(loop_counter(&t, "roce_tx_dropped"), ==, 0);
    loop_stop(&t);
}

/* ------------------------------------------------------------------ */
/* Many messages                                                      */
/* ------------------------------------------------------------------ */

#define MANY            1000
#define MANY_LEN        64
#define MANY_WINDOW     32

/*
 * MANY SENDs from one looped QP to the other, up to MANY_WINDOW in flight
 * and every receive posted before its SEND: each send and each receive
 * completes, in order, with its own data in its own buffer.
 */
static void test_many(void)
{
    Loop t;
    UzQp *qa, *qb;
    UzMr *ms, *mr;
    g_autofree uint8_t *data = g_malloc(MANY * MANY_LEN);
    uint32_t posted = 0, sent = 0, sdone = 0, rdone = 0;
    uint64_t before;
    int idle = 0;

    loop_start(&t);
    rc_loop_pair(&t.a, &qa, &qb);
    ms = uz_mr_reg(&t.a, MANY * MANY_LEN, UZ_ACCESS_ALL);
    mr = uz_mr_reg(&t.a, MANY * MANY_LEN + 64, UZ_ACCESS_ALL);
    uz_pattern(data, MANY * MANY_LEN, 4242);
    uz_mr_write(ms, 0, data, MANY * MANY_LEN);
    uz_mr_fill(mr, 0, UZ_GUARD, MANY * MANY_LEN + 64);
    before = loop_counter(&t, "loop_frames");

    while (sdone < MANY || rdone < MANY) {
        struct uz_cqe c[32];
        bool ring = false;
        int n, i;

        /* Receives ahead, as many as the RQ holds. */
        while (posted < MANY && posted - rdone < (1u << UZ_RQ_LOG_DEPTH)) {
            UzSge r = uz_mr_sge(mr, posted * MANY_LEN, MANY_LEN);

            uz_recv_put(&t.a, qb->rq, UZ_RQ_LOG_DEPTH, qb->rq_pi,
                        0x7ec00000ull + posted, &r, 1);
            qb->rq_pi = (qb->rq_pi + 1) & UZ_DB_PI_MASK;
            posted++;
            ring = true;
        }
        if (ring) {
            uz_ring(&t.a.d, qb->rq_db, qb->rq_pi);
        }
        /* SENDs behind them, never one without its receive posted. */
        ring = false;
        while (sent < posted && sent - sdone < MANY_WINDOW) {
            UzSge s = uz_mr_sge(ms, sent * MANY_LEN, MANY_LEN);
            UzWr wr = {
                .wr_id = 0x5e000000ull + sent, .opcode = UZ_WR_SEND,
                .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1,
            };

            uz_sq_post(qa, &wr);
            sent++;
            ring = true;
        }
        if (ring) {
            uz_sq_ring(qa);
        }

        n = uz_cq_poll_many(qa->scq, c, ARRAY_SIZE(c));
        for (i = 0; i < n; i++) {
            uz_expect_sq(&c[i], 0x5e000000ull + sdone, UZ_WC_SEND, qa,
                         MANY_LEN);
            sdone++;
        }
        idle = n ? 0 : idle + 1;
        n = uz_cq_poll_many(qb->rcq, c, ARRAY_SIZE(c));
        for (i = 0; i < n; i++) {
            uz_expect_rq(&c[i], 0x7ec00000ull + rdone, UZ_WC_RECV, qb->qpn,
                         MANY_LEN, 0, 0, 0);
            rdone++;
        }
        idle = n ? 0 : idle;
        if (idle > UZ_POLL_LIMIT) {
            g_error("stuck at %u sends and %u receives completed", sdone,
                    rdone);
        }
        uz_poll_pause(&t.a.d);
    }
    g_assert_cmpuint(sdone, ==, MANY);
    g_assert_cmpuint(rdone, ==, MANY);
    uz_cq_assert_empty(qa->scq, 10);
    uz_cq_assert_empty(qb->rcq, 1);
    uz_assert_mr(mr, 0, data, MANY * MANY_LEN, "the received messages");
    uz_assert_mr_fill(mr, MANY * MANY_LEN, UZ_GUARD, 64, "after the messages");
    g_assert_cmpuint(loop_counter(&t, "loop_frames") - before, >=, MANY);
    assert_wire_quiet(t.sock, &t.a.d);
    assert_no_link_counts(&t);
    loop_stop(&t);
}

/* ------------------------------------------------------------------ */
/* A full loopback FIFO                                               */
/* ------------------------------------------------------------------ */

/*
 * More QPs than the FIFO holds turns of UZ_QP_BUDGET (32) packets each:
 * 160 QPs, each talking to itself, each with a SEND and a WRITE of 32
 * packets.  The SENDs find no receive WQE and are RNR NAKed; the virtual
 * clock stands still, so every QP waits for its RNR timer.  Receives are
 * posted, then one clock step ends every wait at once: the work that
 * follows sends 160 * 32 frames in one turn, more than the FIFO's 4096.
 * The excess is dropped and counted, and the transport recovers it.
 */
#define BURST_QPS       160
#define BURST_SLOT      (32 * 1024)
#define BURST_LEN       (BURST_SLOT - 16)
#define BURST_SEND      16

/* The QPs and memory of test_fifo_full. */
typedef struct Burst {
    Loop t;
    UzQp *q[BURST_QPS];         /* each talking to itself */
    UzCq *scq, *rcq;            /* shared by all */
    /* Slot i: QP i's source; slot BURST_QPS + i: its WRITE's target. */
    UzMr *mr;
    UzMr *rmr;                  /* 64 bytes for each QP's receive */
} Burst;

/* Each QP posts its SEND and its WRITE of 32 packets, and rings. */
static void burst_post(Burst *u)
{
    UzMr *mr = u->mr;
    int i;

    for (i = 0; i < BURST_QPS; i++) {
        UzSge s = uz_mr_sge(mr, (uint64_t)i * BURST_SLOT, BURST_SEND);
        UzSge w = uz_mr_sge(mr, (uint64_t)i * BURST_SLOT, BURST_LEN);
        UzWr send = {
            .wr_id = (uint64_t)i << 8, .opcode = UZ_WR_SEND,
            .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1,
        };
        UzWr write = {
            .wr_id = (uint64_t)i << 8 | 1, .opcode = UZ_WR_RDMA_WRITE,
            .flags = UZ_WQE_F_SIGNALED, .sge = &w, .num_sge = 1,
            .remote_addr = uz_mr_va(mr, (uint64_t)(BURST_QPS + i) *
                                        BURST_SLOT + 8),
            .rkey = mr->key,
        };

        uz_sq_post(u->q[i], &send);
        uz_sq_post(u->q[i], &write);
        uz_sq_ring(u->q[i]);
    }
}

/* Per QP, the SEND completes and then the WRITE; every receive too. */
static void burst_completions(Burst *u)
{
    uint8_t next[BURST_QPS] = { 0 };
    struct uz_cqe c;
    int got;

    for (got = 0; got < 2 * BURST_QPS; got++) {
        uint32_t qi;

        uz_cq_wait_clock(u->scq, &c, 100 * 1000 * 1000, 100);
        qi = c.wr_id >> 8;
        g_assert_cmpuint(qi, <, BURST_QPS);
        g_assert_cmpuint(c.wr_id & 0xff, ==, next[qi]);
        uz_expect_sq(&c, c.wr_id, next[qi] ? UZ_WC_RDMA_WRITE : UZ_WC_SEND,
                     u->q[qi], next[qi] ? BURST_LEN : BURST_SEND);
        next[qi]++;
    }
    for (got = 0; got < BURST_QPS; got++) {
        uint32_t qi;

        uz_cq_wait_clock(u->rcq, &c, 100 * 1000 * 1000, 100);
        qi = c.wr_id - 0x7ec00000ull;
        g_assert_cmpuint(qi, <, BURST_QPS);
        uz_expect_rq(&c, c.wr_id, UZ_WC_RECV, u->q[qi]->qpn, BURST_SEND, 0, 0,
                     0);
    }
    uz_cq_assert_empty(u->scq, 10);
    uz_cq_assert_empty(u->rcq, 1);
}

/* Every SEND's and every WRITE's data, with the guard bytes around. */
static void burst_check_data(Burst *u)
{
    uint8_t msg[BURST_SEND];
    int i;

    for (i = 0; i < BURST_QPS; i++) {
        uint64_t slot = (uint64_t)(BURST_QPS + i) * BURST_SLOT;

        memset(msg, i + 1, sizeof(msg));
        uz_assert_mr(u->rmr, i * 64, msg, sizeof(msg), "a SEND's data");
        uz_assert_mr_fill(u->rmr, i * 64 + BURST_SEND, UZ_GUARD,
                          64 - BURST_SEND, "after a SEND's data");
        uz_assert_mr_fill(u->mr, slot, UZ_GUARD, 8, "before a WRITE's target");
        uz_assert_mr_fill(u->mr, slot + 8, i + 1, BURST_LEN,
                          "a WRITE's data");
        uz_assert_mr_fill(u->mr, slot + 8 + BURST_LEN, UZ_GUARD, 8,
                          "after a WRITE's target");
    }
}

static void test_fifo_full(void)
{
    Burst u;
    Loop *t = &u.t;
    uint64_t dropped;
    int i;

    loop_start(t);
    u.scq = uz_cq_create(&t->a, 10);
    u.rcq = uz_cq_create(&t->a, 10);
    /* Slot i: QP i's source; slot BURST_QPS + i: its WRITE's target. */
    u.mr = uz_mr_reg(&t->a, 2 * BURST_QPS * BURST_SLOT, UZ_ACCESS_ALL);
    u.rmr = uz_mr_reg(&t->a, BURST_QPS * 64, UZ_ACCESS_ALL);
    uz_mr_fill(u.mr, BURST_QPS * BURST_SLOT, UZ_GUARD,
               BURST_QPS * BURST_SLOT);
    uz_mr_fill(u.rmr, 0, UZ_GUARD, BURST_QPS * 64);
    for (i = 0; i < BURST_QPS; i++) {
        u.q[i] = rc_self(&t->a, u.scq, u.rcq);
        uz_mr_fill(u.mr, (uint64_t)i * BURST_SLOT, i + 1, BURST_SLOT);
    }

    burst_post(&u);
    /* Every QP is RNR NAKed, and all wait for the clock. */
    uz_counter_wait(&t->a, "rnr_naks_rcvd", BURST_QPS);
    wait_loop_quiet(t);
    uz_cq_assert_empty(u.scq, 1);
    g_assert_cmpuint(loop_counter(t, "loop_dropped"), ==, 0);

    for (i = 0; i < BURST_QPS; i++) {
        UzSge r = uz_mr_sge(u.rmr, i * 64, 64);

        uz_post_recv(u.q[i], 0x7ec00000ull + i, &r, 1);
    }
    qtest_clock_step(t->m.qs->qts, 1000 * 1000);
    burst_completions(&u);

    dropped = loop_counter(t, "loop_dropped");
    g_test_message("%" PRIu64 " looped frames dropped, %" PRIu64
                   " retransmitted", dropped,
                   loop_counter(t, "retransmits"));
    g_assert_cmpuint(dropped, >, 0);
    burst_check_data(&u);
    assert_wire_quiet(t->sock, &t->a.d);
    g_assert_cmpuint(loop_counter(t, "roce_tx_dropped"), ==, 0);
    g_assert_cmpuint(loop_counter(t, "fault_drops"), ==, 0);
    loop_stop(t);
}

/* ------------------------------------------------------------------ */
/* Two NICs: what is for the peer still goes to the link              */
/* ------------------------------------------------------------------ */

/*
 * NIC 0 has a looped pair and a QP connected to NIC 1.  The looped WRITE
 * leaves nothing on the link; the WRITE to NIC 1 goes out as RoCE frames
 * from NIC 0's MAC to NIC 1's, and NIC 1's ACK comes back the same way.
 */
static void test_two_nics(void)
{
    UzMachine m;
    UzNode a, b;
    UzQp *la, *lb, *xa, *xb;
    UzMr *ma, *mb, *mx;
    UzFrame fr;
    uint8_t mac0[6], mac1[6];
    uint64_t looped;
    int sock, writes = 0, acks = 0;

    sock = uz_wire_machine_start(&m, 2, NULL);
    uz_node_start(&a, &m, 0);
    uz_node_start(&b, &m, 1);
    uz_node_mac(0, mac0);
    uz_node_mac(1, mac1);
    rc_loop_pair(&a, &la, &lb);
    xa = uz_qp_create(&a, UZ_QPT_RC, NULL, NULL, NULL, 0);
    xb = uz_qp_create(&b, UZ_QPT_RC, NULL, NULL, NULL, 0);
    uz_rc_connect(xa, xb, NULL);
    ma = uz_mr_reg(&a, MR_LEN, UZ_ACCESS_ALL);
    mb = uz_mr_reg(&a, MR_LEN, UZ_ACCESS_ALL);
    mx = uz_mr_reg(&b, MR_LEN, UZ_ACCESS_ALL);

    uz_check_write(la, lb, ma, mb, 8192, false, 1);
    do_send(lb, la, mb, ma, 4096, true, 2);
    assert_wire_quiet(sock, &a.d);
    looped = uz_counter(&m, 0, "loop_frames");
    g_assert_cmpuint(looped, >=, 8 + 4);

    uz_check_write(xa, xb, ma, mx, 8192, false, 3);
    while (uz_wire_recv(sock, &a.d, &fr)) {
        const uint8_t *bth = fr.data + UZ_OFF_BTH;

        g_assert(uz_frame_is_roce(&fr));
        if (!memcmp(fr.data, mac1, 6)) {
            g_assert(!memcmp(fr.data + 6, mac0, 6));
            g_assert_cmpint(ldl_be_p(bth + 4) & 0xffffff, ==, xb->qpn);
            writes++;
        } else {
            g_assert(!memcmp(fr.data, mac0, 6));
            g_assert(!memcmp(fr.data + 6, mac1, 6));
            g_assert_cmpint(ldl_be_p(bth + 4) & 0xffffff, ==, xa->qpn);
            g_assert_cmphex(bth[0], ==, UZ_BTH_OP_ACK);
            acks++;
        }
    }
    g_assert_cmpint(writes, ==, 8);
    g_assert_cmpint(acks, >=, 1);
    /* Neither NIC looped any of it. */
    g_assert_cmpuint(uz_counter(&m, 0, "loop_frames"), ==, looped);
    g_assert_cmpuint(uz_counter(&m, 1, "loop_frames"), ==, 0);

    close(sock);
    uz_node_stop(&a);
    uz_node_stop(&b);
    uz_machine_stop(&m);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);

    qtest_add_func("/uzura/loop/rc-ops", test_rc_ops);
    qtest_add_func("/uzura/loop/self-qp", test_self_qp);
    qtest_add_func("/uzura/loop/ud", test_ud);
    qtest_add_func("/uzura/loop/link-down", test_link_down);
    qtest_add_func("/uzura/loop/fault-drop", test_fault_drop);
    qtest_add_func("/uzura/loop/reset", test_reset);
    qtest_add_func("/uzura/loop/many", test_many);
    qtest_add_func("/uzura/loop/fifo-full", test_fifo_full);
    qtest_add_func("/uzura/loop/two-nics", test_two_nics);

    return g_test_run();
}
