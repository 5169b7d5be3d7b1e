/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qtest for the uzura NIC's wire side: the RoCEv2 frames it sends, and
 * what it does with bad frames.  A socket joins the NICs' hub, so the
 * test sees every frame on the link and can put its own on it: real
 * frames captured and sent again (duplicates), and the same frames with
 * a bit flipped, cut short, or with headers that make no sense.  Every
 * bad frame must be dropped and counted, and the QP must keep working;
 * forged SACKs make the requester send nothing again; a UC frame that
 * asks for an ACK gets none.
 */
#include "uzura-verbs.h"
#include "uzura-wire.h"

typedef struct Wire {
    UzMachine m;
    UzNode a, b;
    UzQp *qa, *qb;
    UzMr *ma, *mb;
    int sock;                   /* our end of the hub's socket port */
} Wire;

static void fix_icrc(UzFrame *fr)
{
    stl_le_p(fr->data + fr->len - 4, uz_icrc(fr->data, fr->len));
}

/* Two NICs on a hub with our socket; @extra: more QEMU arguments. */
static void wire_start_with(Wire *w, const char *extra)
{
    w->sock = uz_wire_machine_start(&w->m, 2, extra);
    uz_node_start(&w->a, &w->m, 0);
    uz_node_start(&w->b, &w->m, 1);
    w->qa = uz_qp_create(&w->a, UZ_QPT_RC, NULL, NULL, NULL, 0);
    w->qb = uz_qp_create(&w->b, UZ_QPT_RC, NULL, NULL, NULL, 0);
    uz_rc_connect(w->qa, w->qb, NULL);
    w->ma = uz_mr_reg(&w->a, 65536, UZ_ACCESS_ALL);
    w->mb = uz_mr_reg(&w->b, 65536, UZ_ACCESS_ALL);
}

static void wire_start(Wire *w)
{
    wire_start_with(w, NULL);
}

static void wire_stop(Wire *w)
{
    close(w->sock);
    uz_node_stop(&w->a);
    uz_node_stop(&w->b);
    uz_machine_stop(&w->m);
}

static void wire_send(Wire *w, const uint8_t *data, size_t len)
{
    uint8_t hdr[4];

    stl_be_p(hdr, len);
    g_assert_cmpint(send(w->sock, hdr, 4, 0), ==, 4);
    g_assert_cmpint(send(w->sock, data, len, 0), ==, len);
    uz_poll_pause(&w->a.d);
}

/* The first RoCE frame on the link with BTH opcode @op. */
static void wire_capture(Wire *w, uint8_t op, UzFrame *out)
{
    UzFrame fr;

    while (uz_wire_recv(w->sock, &w->a.d, &fr)) {
        if (uz_frame_is_roce(&fr) && fr.data[UZ_OFF_BTH] == op) {
            *out = fr;
            return;
        }
    }
    g_error("no frame with opcode 0x%02x on the link", op);
}

/* An RDMA WRITE of @len bytes of @byte from a to b at offset @off. */
static void post_write(Wire *w, uint64_t wr_id, uint32_t off, uint32_t len,
                       uint8_t byte)
{
    UzSge s = uz_mr_sge(w->ma, 0, len);
    UzWr wr = {
        .wr_id = wr_id, .opcode = UZ_WR_RDMA_WRITE,
        .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1,
        .remote_addr = uz_mr_va(w->mb, off), .rkey = w->mb->key,
    };

    uz_mr_fill(w->ma, 0, byte, len);
    uz_post_send(w->qa, &wr);
}

static void expect_write_done(Wire *w, uint64_t wr_id)
{
    struct uz_cqe c;

    uz_cq_wait(w->qa->scq, &c);
    uz_cqe_expect(&c, wr_id, UZ_WC_RDMA_WRITE, UZ_WC_STATUS_SUCCESS, 0,
                  w->qa->qpn);
}

/*
 * The frames the NIC sends are RoCEv2 as the spec says: addresses,
 * lengths, IPv4 checksum, BTH, RETH, pad and an ICRC that an independent
 * implementation of 9.7 computes the same.
 */
static void test_frame_format(void)
{
    Wire w;
    UzFrame req, ack;
    uint8_t mac_a[6], mac_b[6], ip_a[4], ip_b[4];
    uint32_t sum = 0;
    int i;

    wire_start(&w);
    uz_node_mac(0, mac_a);
    uz_node_mac(1, mac_b);
    uz_node_ip(0, ip_a);
    uz_node_ip(1, ip_b);
    post_write(&w, 1, 64, 13, 0xab);        /* 13 bytes: 3 pad bytes */
    wire_capture(&w, UZ_BTH_OP_WRITE_ONLY, &req);
    wire_capture(&w, UZ_BTH_OP_ACK, &ack);
    expect_write_done(&w, 1);

    /* Ethernet, IPv4, UDP */
    g_assert(!memcmp(req.data, mac_b, 6));
    g_assert(!memcmp(req.data + 6, mac_a, 6));
    g_assert_cmphex(lduw_be_p(req.data + 12), ==, 0x0800);
    g_assert_cmphex(req.data[UZ_OFF_IP], ==, 0x45);
    g_assert_cmpint(lduw_be_p(req.data + UZ_OFF_IP + 2), ==,
                    req.len - UZ_OFF_IP);
    g_assert_cmphex(req.data[UZ_OFF_IP + 9], ==, 17);
    g_assert(!memcmp(req.data + UZ_OFF_IP + 12, ip_a, 4));
    g_assert(!memcmp(req.data + UZ_OFF_IP + 16, ip_b, 4));
    for (i = 0; i < 20; i += 2) {
        sum += lduw_be_p(req.data + UZ_OFF_IP + i);
    }
    while (sum >> 16) {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    g_assert_cmphex(sum, ==, 0xffff);
    g_assert_cmpint(lduw_be_p(req.data + UZ_OFF_UDP + 2), ==, UZ_ROCE_UDP_PORT);
    g_assert_cmpint(lduw_be_p(req.data + UZ_OFF_UDP + 4), ==,
                    req.len - UZ_OFF_UDP);

    /* BTH: opcode, pad 3, P_Key, destination QP, AckReq, PSN */
    g_assert_cmphex(req.data[UZ_OFF_BTH + 1], ==, 3 << 4);
    g_assert_cmphex(lduw_be_p(req.data + UZ_OFF_BTH + 2), ==, 0xffff);
    g_assert_cmpint(ldl_be_p(req.data + UZ_OFF_BTH + 4), ==, w.qb->qpn);
    g_assert_cmphex(req.data[UZ_OFF_BTH + 8], ==, 0x80);
    g_assert_cmphex(ldl_be_p(req.data + UZ_OFF_BTH + 8) & 0xffffff, ==,
                    0xfffffa);
    /* RETH, 13 bytes of payload, 3 of pad, ICRC */
    g_assert_cmphex(ldq_be_p(req.data + UZ_OFF_BTH + 12), ==,
                    uz_mr_va(w.mb, 64));
    g_assert_cmphex((uint32_t)ldl_be_p(req.data + UZ_OFF_BTH + 20), ==,
                    w.mb->key);
    g_assert_cmpint(ldl_be_p(req.data + UZ_OFF_BTH + 24), ==, 13);
    g_assert_cmpint(req.len, ==, UZ_OFF_BTH + 12 + 16 + 16 + 4);
    g_assert_cmphex(req.data[UZ_OFF_BTH + 28], ==, 0xab);
    g_assert_cmphex((uint32_t)ldl_le_p(req.data + req.len - 4), ==,
                    uz_icrc(req.data, req.len));

    /* The ACK: AETH with an ACK syndrome for the same PSN */
    g_assert(!memcmp(ack.data, mac_a, 6));
    g_assert_cmpint(ldl_be_p(ack.data + UZ_OFF_BTH + 4), ==, w.qa->qpn);
    g_assert_cmphex(ldl_be_p(ack.data + UZ_OFF_BTH + 8) & 0xffffff, ==,
                    0xfffffa);
    g_assert_cmphex(ack.data[UZ_OFF_BTH + 12] & UZ_AETH_TYPE_MASK, ==,
                    UZ_AETH_ACK);
    g_assert_cmpint(ack.len, ==, UZ_OFF_BTH + 12 + 4 + 4);
    g_assert_cmphex((uint32_t)ldl_le_p(ack.data + ack.len - 4), ==,
                    uz_icrc(ack.data, ack.len));
    wire_stop(&w);
}

/* Write the IPv4 header checksum of the frame @f. */
static void set_ip_csum(uint8_t *f)
{
    uint32_t sum = 0;
    int k;

    stw_be_p(f + UZ_OFF_IP + 10, 0);
    for (k = 0; k < 20; k += 2) {
        sum += lduw_be_p(f + UZ_OFF_IP + k);
    }
    while (sum >> 16) {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    stw_be_p(f + UZ_OFF_IP + 10, ~sum);
}

/* The captured request @req sent again: answered, not executed. */
static void bad_frames_duplicate(Wire *w, const UzFrame *req)
{
    uint64_t dups = uz_counter(&w->m, 1, "duplicates");

    wire_send(w, req->data, req->len);
    g_assert_cmpint(uz_counter_wait(&w->b, "duplicates", dups + 1), ==,
                    dups + 1);
    uz_assert_mr_fill(w->mb, 0, 0x22, 100, "after the duplicate");
}

/* A flipped payload bit: the ICRC catches it. */
static void bad_frames_icrc(Wire *w, const UzFrame *req)
{
    uint64_t icrc_err = uz_counter(&w->m, 1, "icrc_errors");
    UzFrame bad = *req;

    bad.data[UZ_OFF_BTH + 28 + 7] ^= 0x10;
    wire_send(w, bad.data, bad.len);
    g_assert_cmpint(uz_counter_wait(&w->b, "icrc_errors", icrc_err + 1), ==,
                    icrc_err + 1);
}

/*
 * Five malformed frames, counted in rx_malformed: returns the counter
 * as it was before them.
 */
static uint64_t bad_frames_malformed(Wire *w, const UzFrame *req)
{
    uint64_t malformed = uz_counter(&w->m, 1, "rx_malformed");
    UzFrame bad;

    /* Cut short: the IPv4 length runs past the frame. */
    wire_send(w, req->data, UZ_OFF_BTH + 20);
    /* An IPv4 header checksum that is wrong. */
    bad = *req;
    bad.data[UZ_OFF_IP + 8] ^= 1;
    wire_send(w, bad.data, bad.len);
    /* An opcode no one speaks (RD SEND Only), with a good ICRC. */
    bad = *req;
    bad.data[UZ_OFF_BTH] = 0x44;
    fix_icrc(&bad);
    wire_send(w, bad.data, bad.len);
    /* A P_Key other than the default, with a good ICRC. */
    bad = *req;
    bad.data[UZ_OFF_BTH + 3] = 0x01;
    fix_icrc(&bad);
    wire_send(w, bad.data, bad.len);
    /* An ACK with a payload: the length does not fit the opcode. */
    bad = *req;
    bad.data[UZ_OFF_BTH] = UZ_BTH_OP_ACK;
    fix_icrc(&bad);
    wire_send(w, bad.data, bad.len);
    g_assert_cmpint(uz_counter_wait(&w->b, "rx_malformed", malformed + 5), ==,
                    malformed + 5);
    return malformed;
}

/* A QP that does not exist. */
static void bad_frames_no_qp(Wire *w, const UzFrame *req)
{
    uint64_t no_qp = uz_counter(&w->m, 1, "rx_no_qp");
    UzFrame bad = *req;

    stl_be_p(bad.data + UZ_OFF_BTH + 4, 0x00abcdef);
    fix_icrc(&bad);
    wire_send(w, bad.data, bad.len);
    g_assert_cmpint(uz_counter_wait(&w->b, "rx_no_qp", no_qp + 1), ==,
                    no_qp + 1);
}

/*
 * Unicast to another MAC, as a hub hands on: a good RoCE request and
 * a plain frame are counted and not taken.
 */
static void bad_frames_not_ours(Wire *w, const UzFrame *req)
{
    uint64_t not_ours = uz_counter(&w->m, 1, "rx_not_ours");
    uint64_t dups = uz_counter(&w->m, 1, "duplicates");
    UzFrame bad = *req;

    bad.data[5] ^= 0x40;
    wire_send(w, bad.data, bad.len);
    stw_be_p(bad.data + 12, 0x88b5);
    wire_send(w, bad.data, 60);
    g_assert_cmpint(uz_counter_wait(&w->b, "rx_not_ours", not_ours + 2), ==,
                    not_ours + 2);
    g_assert_cmpint(uz_counter(&w->m, 1, "duplicates"), ==, dups);
}

/*
 * Random bytes behind valid Ethernet/IPv4/UDP headers, with and
 * without a correct ICRC: nothing may crash, hang or write memory.
 */
static void bad_frames_garbage(Wire *w, const UzFrame *req)
{
    GRand *rnd = g_rand_new_with_seed(4791);
    UzFrame bad;
    int i;

    for (i = 0; i < 300; i++) {
        uint32_t j, len = UZ_OFF_BTH + g_rand_int_range(rnd, 0, 200);

        bad = *req;
        for (j = UZ_OFF_BTH; j < len; j++) {
            bad.data[j] = g_rand_int(rnd);
        }
        if (g_rand_boolean(rnd)) {
            stl_be_p(bad.data + UZ_OFF_BTH + 4, w->qb->qpn);
        }
        stw_be_p(bad.data + UZ_OFF_IP + 2, len - UZ_OFF_IP);
        stw_be_p(bad.data + UZ_OFF_UDP + 4, len - UZ_OFF_UDP);
        set_ip_csum(bad.data);
        bad.len = len;
        if (len >= UZ_OFF_BTH + 16 && g_rand_boolean(rnd)) {
            fix_icrc(&bad);
        }
        wire_send(w, bad.data, bad.len);
    }
    g_rand_free(rnd);
}

/*
 * A captured request sent again is a duplicate: answered, not executed.
 * The same frame damaged is dropped and counted in the right counter;
 * none of it touches memory or the QP, which keeps working.  All of it
 * on one link and one QP.
 */
static void test_bad_frames(void)
{
    Wire w;
    UzFrame req;
    uint64_t malformed;

    wire_start(&w);
    post_write(&w, 1, 0, 100, 0x11);
    wire_capture(&w, UZ_BTH_OP_WRITE_ONLY, &req);
    expect_write_done(&w, 1);
    uz_wire_drain(w.sock, &w.a.d);
    /* Memory changes after the write: a replay must not undo this. */
    uz_mr_fill(w.mb, 0, 0x22, 100);

    bad_frames_duplicate(&w, &req);
    bad_frames_icrc(&w, &req);
    malformed = bad_frames_malformed(&w, &req);
    bad_frames_no_qp(&w, &req);
    bad_frames_not_ours(&w, &req);
    bad_frames_garbage(&w, &req);
    uz_wire_drain(w.sock, &w.a.d);
    uz_assert_mr_fill(w.mb, 0, 0x22, 100, "after the garbage");
    g_assert_cmpint(uz_counter(&w.m, 1, "rx_malformed") +
                    uz_counter(&w.m, 1, "icrc_errors") +
                    uz_counter(&w.m, 1, "rx_no_qp") +
                    uz_counter(&w.m, 1, "duplicates") +
                    uz_counter(&w.m, 1, "naks_sent"), >, malformed + 5);

    /*
     * Whatever the garbage did to QP b (a random valid request may have
     * been refused, moving it to ERR), a fresh pair works.
     */
    w.qa = uz_qp_create(&w.a, UZ_QPT_RC, NULL, NULL, NULL, 0);
    w.qb = uz_qp_create(&w.b, UZ_QPT_RC, NULL, NULL, NULL, 0);
    uz_rc_connect(w.qa, w.qb, NULL);
    post_write(&w, 2, 200, 3000, 0x33);
    expect_write_done(&w, 2);
    uz_assert_mr_fill(w.mb, 200, 0x33, 3000, "a fresh pair's WRITE");
    wire_stop(&w);
}

/*
 * A request from beyond the expected PSN means packets were lost: the
 * responder answers the first with a sequence NAK for the PSN it
 * expects, stays silent for the rest of the gap, and executes nothing.
 */
static void test_sequence_nak(void)
{
    Wire w;
    UzFrame req, nak, ahead;
    uint64_t naks;
    uint32_t psn;

    wire_start(&w);
    post_write(&w, 1, 0, 64, 0x11);
    wire_capture(&w, UZ_BTH_OP_WRITE_ONLY, &req);
    expect_write_done(&w, 1);
    uz_wire_drain(w.sock, &w.a.d);
    psn = ldl_be_p(req.data + UZ_OFF_BTH + 8) & 0xffffff;

    naks = uz_counter(&w.m, 1, "nak_seq_sent");
    ahead = req;
    stl_be_p(ahead.data + UZ_OFF_BTH + 8, 0x80000000u | ((psn + 5) & 0xffffff));
    ahead.data[UZ_OFF_BTH + 28] = 0x99;
    fix_icrc(&ahead);
    wire_send(&w, ahead.data, ahead.len);
    wire_capture(&w, UZ_BTH_OP_ACK, &nak);
    g_assert_cmphex(nak.data[UZ_OFF_BTH + 12], ==, UZ_AETH_NAK_SEQ);
    g_assert_cmphex(ldl_be_p(nak.data + UZ_OFF_BTH + 8) & 0xffffff, ==,
                    (psn + 1) & 0xffffff);
    stl_be_p(ahead.data + UZ_OFF_BTH + 8, 0x80000000u | ((psn + 6) & 0xffffff));
    fix_icrc(&ahead);
    wire_send(&w, ahead.data, ahead.len);
    uz_wire_drain(w.sock, &w.a.d);
    g_assert_cmpint(uz_counter(&w.m, 1, "nak_seq_sent"), ==, naks + 1);
    uz_assert_mr_fill(w.mb, 0, 0x11, 64, "after the request ahead");

    /* The QP is fine: the next real request has the expected PSN. */
    post_write(&w, 2, 0, 64, 0x22);
    expect_write_done(&w, 2);
    uz_assert_mr_fill(w.mb, 0, 0x22, 64, "the next request");
    wire_stop(&w);
}

/* qom-set of a string property of NIC @nic, which must take it. */
static void nic_set(Wire *w, int nic, const char *prop, const char *val)
{
    g_autofree char *path = g_strdup_printf("/machine/peripheral/uz%d", nic);

    qtest_qmp_assert_success(w->m.qs->qts, "{'execute': 'qom-set', "
                             "'arguments': {'path': %s, 'property': %s, "
                             "'value': %s}}", path, prop, val);
}

/*
 * SACKs from the wire that no responder would send: they name PSNs
 * never sent, PSNs already acknowledged, every PSN there is, none, or
 * acknowledge what was never sent.  The requester sends nothing again
 * for them (only what it sent and is not acknowledged may go again),
 * counts the stray one, and its QP keeps working.
 */
static void test_forged_sack(void)
{
    static const struct {
        uint32_t ack, missing, count;
    } forged[] = {
        { 2, 100, 5 }, { 2, 0, 0xffffffffu }, { 2, 1, 0 }, { 2, 0x800000, 64 },
        { 50, 1, 1 },
    };
    Wire w;
    UzFrame sack, f;
    uint64_t resent, stale;
    uint32_t psn;
    int i;

    wire_start(&w);
    nic_set(&w, 0, "recovery", "sr");
    nic_set(&w, 1, "recovery", "sr");
    /* A real SACK: the middle of a three-packet WRITE is lost once. */
    nic_set(&w, 0, "fault-rules", "op=write-middle count=1 drop");
    post_write(&w, 1, 0, 3000, 0x33);
    wire_capture(&w, UZ_BTH_OP_RC_SACK, &sack);
    expect_write_done(&w, 1);
    uz_wire_drain(w.sock, &w.a.d);
    uz_assert_mr_fill(w.mb, 0, 0x33, 3000, "the WRITE repaired by a SACK");
    psn = ldl_be_p(sack.data + UZ_OFF_BTH + 8) & 0xffffff;
    g_assert_cmphex(ldl_be_p(sack.data + UZ_OFF_BTH + 16), ==,
                    (psn + 1) & 0xffffff);
    g_assert_cmpuint(ldl_be_p(sack.data + UZ_OFF_BTH + 20), ==, 1);

    resent = uz_counter(&w.m, 0, "sr_resent");
    stale = uz_counter(&w.m, 0, "rx_stale");
    for (i = 0; i < ARRAY_SIZE(forged); i++) {
        f = sack;
        stl_be_p(f.data + UZ_OFF_BTH + 8, (psn + forged[i].ack) & 0xffffff);
        stl_be_p(f.data + UZ_OFF_BTH + 16,
                 (psn + forged[i].missing) & 0xffffff);
        stl_be_p(f.data + UZ_OFF_BTH + 20, forged[i].count);
        fix_icrc(&f);
        wire_send(&w, f.data, f.len);
    }
    uz_wire_drain(w.sock, &w.a.d);
    g_assert_cmpuint(uz_counter(&w.m, 0, "sr_resent"), ==, resent);
    g_assert_cmpuint(uz_counter(&w.m, 0, "rx_stale"), ==, stale + 1);
    g_assert_cmpint(uz_qp_state(w.qa), ==, UZ_QPS_RTS);

    post_write(&w, 2, 0, 3000, 0x44);
    expect_write_done(&w, 2);
    uz_assert_mr_fill(w.mb, 0, 0x44, 3000, "the next WRITE");
    wire_stop(&w);
}

/*
 * UC answers nothing, even a frame that asks: a UC WRITE with AckReq set
 * (a captured RC WRITE, made UC and aimed at b's UC QP) lands, and b
 * sends no ACK.  The RC frame itself reaches no UC QP.
 */
static void test_uc_unanswered(void)
{
    uint64_t acks, writes, no_qp;
    UzFrame req, uc;
    UzQp *ua, *ub;
    Wire w;

    wire_start(&w);
    ua = uz_qp_create(&w.a, UZ_QPT_UC, NULL, NULL, NULL, 0);
    ub = uz_qp_create(&w.b, UZ_QPT_UC, NULL, NULL, NULL, 0);
    uz_uc_up(ua, ub, 0x100);
    uz_uc_up(ub, ua, 0x100);
    post_write(&w, 1, 0, 100, 0x11);
    wire_capture(&w, UZ_BTH_OP_WRITE_ONLY, &req);
    expect_write_done(&w, 1);
    uz_wire_drain(w.sock, &w.a.d);
    uz_mr_fill(w.mb, 0, 0x22, 100);
    g_assert_cmphex(req.data[UZ_OFF_BTH + 8] & 0x80, ==, 0x80);

    uc = req;
    uc.data[UZ_OFF_BTH] = UZ_BTH_OP_UC | UZ_BTH_OP_WRITE_ONLY;
    stl_be_p(uc.data + UZ_OFF_BTH + 4, ub->qpn);
    fix_icrc(&uc);
    acks = uz_counter(&w.m, 1, "tx_pkts_ack");
    writes = uz_counter(&w.m, 1, "rx_pkts_write");
    wire_send(&w, uc.data, uc.len);
    g_assert_cmpint(uz_counter_wait(&w.b, "rx_pkts_write", writes + 1), ==,
                    writes + 1);
    uz_assert_mr_fill(w.mb, 0, 0x11, 100, "the UC WRITE");
    g_assert_cmpuint(uz_counter(&w.m, 1, "tx_pkts_ack"), ==, acks);

    no_qp = uz_counter(&w.m, 1, "rx_no_qp");
    uc = req;
    stl_be_p(uc.data + UZ_OFF_BTH + 4, ub->qpn);
    fix_icrc(&uc);
    wire_send(&w, uc.data, uc.len);
    g_assert_cmpint(uz_counter_wait(&w.b, "rx_no_qp", no_qp + 1), ==,
                    no_qp + 1);
    wire_stop(&w);
}

/* @fr with its IPv4 header checksum made right again. */
static void fix_ip_csum(UzFrame *fr)
{
    uint32_t sum = 0;
    int i;

    stw_be_p(fr->data + UZ_OFF_IP + 10, 0);
    for (i = 0; i < 20; i += 2) {
        sum += lduw_be_p(fr->data + UZ_OFF_IP + i);
    }
    while (sum >> 16) {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    stw_be_p(fr->data + UZ_OFF_IP + 10, ~sum);
}

/* And its ICRC. */
static void fix_ip(UzFrame *fr)
{
    fix_ip_csum(fr);
    fix_icrc(fr);
}

/*
 * Requests leave ECN-capable, ECT(0).  One a switch marked CE on the
 * way (the IPv4 checksum redone, the ICRC not: it leaves the TOS out)
 * is taken, here as a duplicate, and counted as marked.
 */
static void test_ecn(void)
{
    Wire w;
    UzFrame req, ce;
    uint64_t marked, dups;

    wire_start(&w);
    post_write(&w, 1, 0, 100, 0x11);
    wire_capture(&w, UZ_BTH_OP_WRITE_ONLY, &req);
    expect_write_done(&w, 1);
    uz_wire_drain(w.sock, &w.a.d);
    g_assert_cmphex(req.data[UZ_OFF_IP + 1] & UZ_IP_ECN_MASK, ==,
                    UZ_IP_ECN_ECT0);

    marked = uz_counter(&w.m, 1, "np_ecn_marked_roce_packets");
    dups = uz_counter(&w.m, 1, "duplicates");
    ce = req;
    ce.data[UZ_OFF_IP + 1] |= UZ_IP_ECN_CE;
    fix_ip_csum(&ce);
    wire_send(&w, ce.data, ce.len);
    g_assert_cmpint(uz_counter_wait(&w.b, "duplicates", dups + 1), ==,
                    dups + 1);
    g_assert_cmpint(uz_counter(&w.m, 1, "np_ecn_marked_roce_packets"), ==,
                    marked + 1);
    g_assert_cmpint(uz_counter(&w.m, 1, "icrc_errors"), ==, 0);
    wire_stop(&w);
}

#define UZ_NS_PER_US    1000

/* qom-set of a number, or of a flag, of NIC @nic. */
static void nic_set_num(Wire *w, int nic, const char *prop, int64_t val)
{
    g_autofree char *path = g_strdup_printf("/machine/peripheral/uz%d", nic);

    qtest_qmp_assert_success(w->m.qs->qts, "{'execute': 'qom-set', "
                             "'arguments': {'path': %s, 'property': %s, "
                             "'value': %" PRId64 "}}", path, prop, val);
}

static void nic_set_flag(Wire *w, int nic, const char *prop, bool on)
{
    g_autofree char *path = g_strdup_printf("/machine/peripheral/uz%d", nic);

    qtest_qmp_assert_success(w->m.qs->qts, "{'execute': 'qom-set', "
                             "'arguments': {'path': %s, 'property': %s, "
                             "'value': %i}}", path, prop, on);
}

/* A's WRITE, captured, then marked CE and sent again to b: a duplicate. */
static void send_marked(Wire *w, const UzFrame *req)
{
    UzFrame ce = *req;
    uint64_t dups = uz_counter(&w->m, 1, "duplicates");

    ce.data[UZ_OFF_IP + 1] |= UZ_IP_ECN_CE;
    fix_ip_csum(&ce);
    wire_send(w, ce.data, ce.len);
    uz_counter_wait(&w->b, "duplicates", dups + 1);
}

/*
 * The CNP @cnp sent again for no QP is dropped and counted, nothing else
 * moves: NIC 0 handled two CNPs before it, ignored none.
 */
static void cnp_for_no_qp(Wire *w, const UzFrame *cnp)
{
    UzFrame bad = *cnp;
    uint64_t no_qp = uz_counter(&w->m, 0, "rx_no_qp");

    stl_be_p(bad.data + UZ_OFF_BTH + 4, UZ_BTH_BECN << 24 | 0xabcdef);
    fix_icrc(&bad);
    wire_send(w, bad.data, bad.len);
    g_assert_cmpint(uz_counter_wait(&w->a, "rx_no_qp", no_qp + 1), ==,
                    no_qp + 1);
    g_assert_cmpint(uz_counter(&w->m, 0, "rp_cnp_handled"), ==, 2);
    g_assert_cmpint(uz_counter(&w->m, 0, "rp_cnp_ignored"), ==, 0);
}

/*
 * Congestion control's notification point (spec 9.1.2).  A request that
 * arrives marked CE makes the responder send a CNP to the requester's QP
 * as RoCEv2 gives it: BTH opcode 0x81 with BECN, PSN 0, 16 reserved bytes
 * and an ICRC, DSCP cnp_dscp, Not-ECT.  A second within
 * min_time_between_cnps (virtual time stands still in a qtest) makes none,
 * one after it another; with roce_np_enable off, none.  The requester
 * takes each in rp_cnp_handled.
 */
static void test_cnp(void)
{
    Wire w;
    UzFrame req, cnp;
    uint8_t mac_a[6], ip_a[4], zero[UZ_CNP_PAYLOAD_LEN] = { 0 };
    const uint8_t *bth;

    wire_start(&w);
    uz_node_mac(0, mac_a);
    uz_node_ip(0, ip_a);
    post_write(&w, 1, 0, 100, 0x11);
    wire_capture(&w, UZ_BTH_OP_WRITE_ONLY, &req);
    expect_write_done(&w, 1);
    uz_wire_drain(w.sock, &w.a.d);

    send_marked(&w, &req);
    wire_capture(&w, UZ_BTH_OP_CNP, &cnp);
    bth = cnp.data + UZ_OFF_BTH;
    g_assert_cmpuint(cnp.len, ==, UZ_OFF_BTH + UZ_BTH_LEN +
                     UZ_CNP_PAYLOAD_LEN + UZ_ICRC_LEN);
    g_assert(!memcmp(cnp.data, mac_a, 6));
    g_assert(!memcmp(cnp.data + UZ_OFF_IP + 16, ip_a, 4));
    g_assert_cmphex(cnp.data[UZ_OFF_IP + 1], ==, 48 << 2);
    g_assert_cmphex(bth[4], ==, UZ_BTH_BECN);
    g_assert_cmphex(ldl_be_p(bth + 4) & 0xffffff, ==, w.qa->qpn);
    g_assert_cmphex(ldl_be_p(bth + 8) & 0xffffff, ==, 0);
    g_assert(!memcmp(bth + UZ_BTH_LEN, zero, sizeof(zero)));
    g_assert_cmphex((uint32_t)ldl_le_p(cnp.data + cnp.len - 4), ==,
                    uz_icrc(cnp.data, cnp.len));
    g_assert_cmpint(uz_counter(&w.m, 1, "np_cnp_sent"), ==, 1);
    g_assert_cmpint(uz_counter_wait(&w.a, "rp_cnp_handled", 1), ==, 1);

    /* Within min_time_between_cnps (4 us): counted as marked, no CNP. */
    send_marked(&w, &req);
    g_assert_cmpint(uz_counter(&w.m, 1, "np_ecn_marked_roce_packets"), ==, 2);
    g_assert_cmpint(uz_counter(&w.m, 1, "np_cnp_sent"), ==, 1);

    qtest_clock_step(w.a.d.qts, 4 * UZ_NS_PER_US);
    send_marked(&w, &req);
    g_assert_cmpint(uz_counter(&w.m, 1, "np_cnp_sent"), ==, 2);
    g_assert_cmpint(uz_counter_wait(&w.a, "rp_cnp_handled", 2), ==, 2);

    nic_set_flag(&w, 1, "roce_np_enable", false);
    qtest_clock_step(w.a.d.qts, 4 * UZ_NS_PER_US);
    send_marked(&w, &req);
    g_assert_cmpint(uz_counter(&w.m, 1, "np_ecn_marked_roce_packets"), ==, 4);
    g_assert_cmpint(uz_counter(&w.m, 1, "np_cnp_sent"), ==, 2);

    cnp_for_no_qp(&w, &cnp);

    /* With roce_rp_enable off the requester counts CNPs and ignores them. */
    nic_set_flag(&w, 1, "roce_np_enable", true);
    nic_set_flag(&w, 0, "roce_rp_enable", false);
    qtest_clock_step(w.a.d.qts, 4 * UZ_NS_PER_US);
    send_marked(&w, &req);
    g_assert_cmpint(uz_counter_wait(&w.a, "rp_cnp_ignored", 1), ==, 1);
    g_assert_cmpint(uz_counter(&w.m, 0, "rp_cnp_handled"), ==, 2);
    wire_stop(&w);
}

/*
 * RoCE frames that reach the wire now with a BTH opcode in @lo..@hi, all
 * of them counted; from a's MAC only when @from_a.
 */
static int ops_out(Wire *w, uint8_t lo, uint8_t hi, bool from_a)
{
    uint8_t mac_a[6];
    UzFrame fr;
    int n = 0;

    uz_node_mac(0, mac_a);
    while (uz_wire_recv(w->sock, &w->a.d, &fr)) {
        uint8_t op = uz_frame_is_roce(&fr) ? fr.data[UZ_OFF_BTH] : 0xff;

        n += op >= lo && op <= hi &&
             (!from_a || !memcmp(fr.data + 6, mac_a, 6));
    }
    return n;
}

/* WRITE Only/First/Middle/Last frames that reach the wire now. */
static int writes_out(Wire *w)
{
    return ops_out(w, UZ_BTH_OP_WRITE_FIRST, UZ_BTH_OP_WRITE_ONLY_IMM, false);
}

/*
 * NIC @nic's first CNP sets its rate to 100 Mb/s, and neither the timer
 * nor the byte counter raises it again during a test.
 */
static void pace_at_100(Wire *w, int nic)
{
    nic_set_num(w, nic, "rate_to_set_on_first_cnp", 100);
    nic_set_num(w, nic, "rpg_time_reset", 1000000);
    nic_set_num(w, nic, "rpg_byte_reset", 1 << 30);
}

/*
 * An 8-packet message paced at the rate pace_at_100() sets: one packet
 * (counted by @out) on the wire now, one more each 200 us of virtual time.
 */
static void expect_paced(Wire *w, int (*out)(Wire *))
{
    int sent = out(w), k;

    g_assert_cmpint(sent, ==, 1);
    for (k = 0; k < 7; k++) {
        qtest_clock_step(w->a.d.qts, 200 * UZ_NS_PER_US);
        sent += out(w);
        g_assert_cmpint(sent, ==, k + 2);
    }
}

/*
 * The reaction point paces the QP (spec 9.1.2).  With the rate a first
 * CNP sets at 100 Mb/s and alpha at its initial 1023/1024, the CNP's cut
 * leaves 50.05 Mb/s, at which a packet of 1024 bytes and 58 of headers
 * takes 173 us.  An 8 KiB WRITE at path MTU 1024 then sends one packet,
 * and one more each time the virtual clock passes another 200 us.  Without a
 * CNP, the QP has no limiter and sends the whole WRITE at once.
 */
static void test_rp_pacing(void)
{
    Wire w;
    UzFrame req;
    struct uz_cqe c;

    wire_start(&w);
    pace_at_100(&w, 0);
    post_write(&w, 1, 0, 8192, 0x22);
    wire_capture(&w, UZ_BTH_OP_WRITE_FIRST, &req);
    g_assert_cmpint(writes_out(&w) + 1, ==, 8);
    expect_write_done(&w, 1);

    send_marked(&w, &req);
    uz_counter_wait(&w.a, "rp_cnp_handled", 1);
    uz_wire_drain(w.sock, &w.a.d);
    post_write(&w, 2, 0, 8192, 0x33);
    expect_paced(&w, writes_out);
    uz_cq_wait(w.qa->scq, &c);
    uz_cqe_expect(&c, 2, UZ_WC_RDMA_WRITE, UZ_WC_STATUS_SUCCESS, 0,
                  w.qa->qpn);
    uz_assert_mr_fill(w.mb, 0, 0x33, 8192, "the paced WRITE");
    wire_stop(&w);
}

/* READ response frames that reach the wire now. */
static int read_resps_out(Wire *w)
{
    return ops_out(w, UZ_BTH_OP_READ_RESP_FIRST, UZ_BTH_OP_READ_RESP_ONLY,
                   false);
}

/* An RDMA READ by a of @len bytes of b's MR into a's, both at offset 0. */
static void post_read(Wire *w, uint64_t wr_id, uint32_t len)
{
    UzSge s = uz_mr_sge(w->ma, 0, len);
    UzWr wr = {
        .wr_id = wr_id, .opcode = UZ_WR_RDMA_READ,
        .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1,
        .remote_addr = uz_mr_va(w->mb, 0), .rkey = w->mb->key,
    };

    uz_post_send(w->qa, &wr);
}

/*
 * The responder's READ answers go through its QP's rate limiter too
 * (spec 9.1.2).  A READ response marked CE on its way to a makes a send
 * a CNP to b's QP, which cuts b's rate as test_rp_pacing's CNP cut a's:
 * an 8 KiB READ is then answered one packet at a time, one more each
 * time the virtual clock passes another 200 us, and its data arrives
 * whole.  Before, b sent the whole answer at once.
 */
static void test_rp_read_pacing(void)
{
    Wire w;
    UzFrame resp;
    struct uz_cqe c;

    wire_start(&w);
    pace_at_100(&w, 1);
    uz_mr_fill(w.mb, 0, 0x22, 8192);
    post_read(&w, 1, 8192);
    wire_capture(&w, UZ_BTH_OP_READ_RESP_FIRST, &resp);
    g_assert_cmpint(read_resps_out(&w) + 1, ==, 8);
    uz_cq_wait(w.qa->scq, &c);
    uz_cqe_expect(&c, 1, UZ_WC_RDMA_READ, UZ_WC_STATUS_SUCCESS, 0,
                  w.qa->qpn);
    g_assert_cmpuint(le32_to_cpu(c.byte_len), ==, 8192);

    resp.data[UZ_OFF_IP + 1] |= UZ_IP_ECN_CE;
    fix_ip_csum(&resp);
    wire_send(&w, resp.data, resp.len);
    g_assert_cmpint(uz_counter_wait(&w.b, "rp_cnp_handled", 1), ==, 1);
    g_assert_cmpint(uz_counter(&w.m, 0, "np_cnp_sent"), ==, 1);
    uz_wire_drain(w.sock, &w.a.d);

    uz_mr_fill(w.mb, 0, 0x33, 8192);
    post_read(&w, 2, 8192);
    expect_paced(&w, read_resps_out);
    uz_cq_wait(w.qa->scq, &c);
    uz_cqe_expect(&c, 2, UZ_WC_RDMA_READ, UZ_WC_STATUS_SUCCESS, 0,
                  w.qa->qpn);
    g_assert_cmpuint(le32_to_cpu(c.byte_len), ==, 8192);
    uz_assert_mr_fill(w.ma, 0, 0x33, 8192, "the paced READ's data");
    wire_stop(&w);
}

/*
 * A MAC control frame to a's MAC (not the group, which b would take too)
 * of @len bytes: PFC with @vector and @quanta for every priority, or an
 * 802.3x PAUSE of @quanta when @vector is 0.
 */
static void send_pause(Wire *w, uint16_t vector, uint16_t quanta, size_t len)
{
    uint8_t f[64] = { 0 };
    int p;

    g_assert_cmpuint(len, <=, sizeof(f));
    uz_node_mac(0, f);
    uz_node_mac(1, f + 6);
    stw_be_p(f + 12, 0x8808);
    stw_be_p(f + 14, vector ? 0x0101 : 0x0001);
    if (vector) {
        stw_be_p(f + 16, vector);
        for (p = 0; p < 8; p++) {
            stw_be_p(f + 18 + 2 * p, quanta);
        }
    } else {
        stw_be_p(f + 16, quanta);
    }
    wire_send(w, f, len);
}

/* A MAC control frame to a's MAC with opcode 802.3 GATE, not ours. */
static void send_gate(Wire *w)
{
    uint8_t f[64] = { 0 };

    uz_node_mac(0, f);
    uz_node_mac(1, f + 6);
    stw_be_p(f + 12, 0x8808);
    stw_be_p(f + 14, 0x0002);           /* 802.3 GATE, not ours */
    stw_be_p(f + 16, 65535);
    wire_send(w, f, sizeof(f));
}

/* Frames a sends that reach the wire now, with BTH opcode @op. */
static int frames_out(Wire *w, uint8_t op)
{
    return ops_out(w, op, op, true);
}

/*
 * Link-level flow control received (spec 9.1.3).  The NIC sends in
 * priority pfc-prio (3).  A PFC frame naming it stops a's sending for its
 * quanta, 512 bit times each at the link's 25 Gb/s (65535: 1.342 ms of
 * virtual time): a WRITE posted meanwhile, and the ACK for b's WRITE,
 * leave only when the time is over, and the WRITE's data is whole.  A PFC
 * frame for another priority changes nothing; an 802.3x PAUSE pauses the
 * whole link, and one of 0 quanta ends the pause at once.  A MAC control
 * frame too short for its times is dropped and counted.  Each pause
 * frame counts in rx_pause_ctrl_phy, each pause in rx_pause_transition,
 * its time in rx_pause_duration (microseconds).
 */
static void test_pause(void)
{
    Wire w;
    struct uz_cqe c;
    UzSge sb;
    UzWr wr = { .wr_id = 9, .opcode = UZ_WR_RDMA_WRITE,
                .flags = UZ_WQE_F_SIGNALED, .sge = &sb, .num_sge = 1 };
    uint64_t dropped, us;

    wire_start(&w);
    uz_wire_drain(w.sock, &w.a.d);
    send_pause(&w, 1 << 3, 65535, 64);
    g_assert_cmpint(uz_counter(&w.m, 0, "rx_pause_ctrl_phy"), ==, 1);
    g_assert_cmpint(uz_counter(&w.m, 0, "rx_pause_transition"), ==, 1);
    g_assert_cmpint(uz_counter(&w.m, 1, "rx_pause_ctrl_phy"), ==, 0);

    post_write(&w, 1, 0, 4096, 0x11);
    sb = uz_mr_sge(w.mb, 8192, 1024);
    wr.remote_addr = uz_mr_va(w.ma, 8192);
    wr.rkey = w.ma->key;
    uz_mr_fill(w.mb, 8192, 0x22, 1024);
    uz_post_send(w.qb, &wr);
    g_assert_cmpint(frames_out(&w, UZ_BTH_OP_WRITE_FIRST), ==, 0);
    qtest_clock_step(w.a.d.qts, 1000 * UZ_NS_PER_US);
    g_assert_cmpint(frames_out(&w, UZ_BTH_OP_ACK), ==, 0);
    g_assert_cmpint(uz_counter(&w.m, 0, "rx_pause_duration"), ==, 0);

    qtest_clock_step(w.a.d.qts, 400 * UZ_NS_PER_US);
    expect_write_done(&w, 1);
    uz_assert_mr_fill(w.mb, 0, 0x11, 4096, "the WRITE held by the pause");
    uz_cq_wait(w.qb->scq, &c);
    uz_cqe_expect(&c, 9, UZ_WC_RDMA_WRITE, UZ_WC_STATUS_SUCCESS, 0,
                  w.qb->qpn);
    uz_assert_mr_fill(w.ma, 8192, 0x22, 1024, "b's WRITE, ACKed late");
    us = uz_counter(&w.m, 0, "rx_pause_duration");
    g_assert_cmpint(us, >=, 1342);
    g_assert_cmpint(us, <, 1400);

    /* Another priority's pause: a's next WRITE goes at once. */
    send_pause(&w, 1 << 0, 65535, 64);
    post_write(&w, 2, 0, 4096, 0x33);
    expect_write_done(&w, 2);
    g_assert_cmpint(uz_counter(&w.m, 0, "rx_pause_ctrl_phy"), ==, 2);
    g_assert_cmpint(uz_counter(&w.m, 0, "rx_pause_transition"), ==, 1);

    /* 802.3x PAUSE, then a PAUSE of 0 quanta: on again, no time passed. */
    uz_wire_drain(w.sock, &w.a.d);
    send_pause(&w, 0, 65535, 64);
    post_write(&w, 3, 0, 4096, 0x44);
    g_assert_cmpint(frames_out(&w, UZ_BTH_OP_WRITE_FIRST), ==, 0);
    send_pause(&w, 0, 0, 64);
    expect_write_done(&w, 3);
    uz_assert_mr_fill(w.mb, 0, 0x44, 4096, "the WRITE a zero PAUSE let go");
    g_assert_cmpint(uz_counter(&w.m, 0, "rx_pause_ctrl_phy"), ==, 4);
    g_assert_cmpint(uz_counter(&w.m, 0, "rx_pause_transition"), ==, 2);

    /*
     * Dropped and counted, no pause: a PFC frame cut before its times, a
     * PAUSE cut before its time, a MAC control opcode other than both.
     */
    dropped = uz_counter(&w.m, 0, "rx_dropped");
    send_pause(&w, 1 << 3, 65535, 20);
    send_pause(&w, 0, 65535, 17);
    send_gate(&w);
    g_assert_cmpint(uz_counter(&w.m, 0, "rx_dropped"), ==, dropped + 3);
    g_assert_cmpint(uz_counter(&w.m, 0, "rx_pause_ctrl_phy"), ==, 4);
    g_assert_cmpint(uz_counter(&w.m, 0, "rx_pause_transition"), ==, 2);
    post_write(&w, 4, 0, 4096, 0x55);
    expect_write_done(&w, 4);

    /*
     * A QP that fails during a pause has its WQEs flushed at once: only
     * what goes on the wire waits for the pause's end.
     */
    uz_wire_drain(w.sock, &w.a.d);
    send_pause(&w, 1 << 3, 65535, 64);
    post_write(&w, 5, 0, 4096, 0x66);
    uz_qp_set_state(w.qa, UZ_QPS_ERR);
    uz_cq_wait(w.qa->scq, &c);
    uz_cqe_expect(&c, 5, UZ_WC_ANY, UZ_WC_STATUS_WR_FLUSH_ERR, 0, w.qa->qpn);
    g_assert_cmpint(frames_out(&w, UZ_BTH_OP_WRITE_FIRST), ==, 0);
    wire_stop(&w);
}

/*
 * A peer that never stops pausing (a PFC frame every millisecond of
 * virtual time) holds the NIC for 100 ms at most (spec 9.1.3): then a's
 * WRITE, posted at the start, goes and completes, and the pause frames of
 * the next 100 ms change nothing.
 */
static void test_pause_storm(void)
{
    Wire w;
    int k, sent = 0;

    wire_start(&w);
    uz_wire_drain(w.sock, &w.a.d);
    send_pause(&w, 1 << 3, 65535, 64);
    post_write(&w, 1, 0, 4096, 0x66);
    for (k = 1; k <= 150; k++) {
        qtest_clock_step(w.a.d.qts, 1000 * UZ_NS_PER_US);
        sent += frames_out(&w, UZ_BTH_OP_WRITE_FIRST);
        g_assert_cmpint(sent, ==, k >= 100);
        send_pause(&w, 1 << 3, 65535, 64);
    }
    expect_write_done(&w, 1);
    uz_assert_mr_fill(w.mb, 0, 0x66, 4096, "the WRITE a pause storm held");
    g_assert_cmpint(uz_counter(&w.m, 0, "rx_pause_ctrl_phy"), ==, 151);
    g_assert_cmpint(uz_counter(&w.m, 0, "rx_pause_transition"), ==, 1);
    g_assert_cmpint(uz_counter(&w.m, 0, "rx_pause_duration"), ==, 100000);
    wire_stop(&w);
}

/* With pause-rx off, pause frames are counted and change nothing. */
static void test_pause_off(void)
{
    Wire w;

    wire_start_with(&w, "-global uzura.pause-rx=off");
    send_pause(&w, 1 << 3, 65535, 64);
    g_assert_cmpint(uz_counter(&w.m, 0, "rx_pause_ctrl_phy"), ==, 1);
    post_write(&w, 1, 0, 4096, 0x11);
    expect_write_done(&w, 1);
    g_assert_cmpint(uz_counter(&w.m, 0, "rx_pause_transition"), ==, 0);
    wire_stop(&w);
}

/*
 * Time a packet waits on its own QP's rate limiter does not count toward
 * the ACK timeout (spec 9.1.2).  Cut to 1 Mb/s, an 8 KiB WRITE and then
 * a 56 KiB one: the first's ACK restarts the ACK timeout (timeout 14,
 * 67 ms) while the second, 0.5 s of virtual time to send, is still going
 * out.  Before, every timeout started the second over and it ended in
 * RETRY_EXC_ERR.  Both complete, and nothing is sent again.
 */
/* a's next send CQE, stepping the clock 10 ms at a time (0.8 s at most). */
static void slow_cqe(Wire *w, struct uz_cqe *c)
{
    int k;

    for (k = 0; k < 80 && !uz_cq_poll(w->qa->scq, c); k++) {
        qtest_clock_step(w->a.d.qts, 10 * 1000 * UZ_NS_PER_US);
        writes_out(w);
    }
    g_assert_cmpint(k, <, 80);
}

static void test_rp_slow_message(void)
{
    Wire w;
    UzFrame req;
    struct uz_cqe c;
    uint64_t resent;

    wire_start(&w);
    nic_set_num(&w, 0, "rate_to_set_on_first_cnp", 1);
    nic_set_num(&w, 0, "rpg_time_reset", 1000000);  /* no timer steps */
    nic_set_num(&w, 0, "rpg_byte_reset", 1 << 30);  /* nor byte steps */
    post_write(&w, 1, 0, 8192, 0x22);
    wire_capture(&w, UZ_BTH_OP_WRITE_FIRST, &req);
    writes_out(&w);
    expect_write_done(&w, 1);
    send_marked(&w, &req);
    uz_counter_wait(&w.a, "rp_cnp_handled", 1);
    uz_wire_drain(w.sock, &w.a.d);

    resent = uz_counter(&w.m, 0, "retransmits");
    post_write(&w, 2, 0, 8192, 0x44);
    post_write(&w, 3, 8192, 65536 - 8192, 0x44);
    slow_cqe(&w, &c);
    uz_cqe_expect(&c, 2, UZ_WC_RDMA_WRITE, UZ_WC_STATUS_SUCCESS, 0,
                  w.qa->qpn);
    slow_cqe(&w, &c);
    uz_cqe_expect(&c, 3, UZ_WC_RDMA_WRITE, UZ_WC_STATUS_SUCCESS, 0,
                  w.qa->qpn);
    uz_assert_mr_fill(w.mb, 0, 0x44, 65536, "the slow WRITEs");
    g_assert_cmpuint(uz_counter(&w.m, 0, "retransmits"), ==, resent);
    wire_stop(&w);
}

/* An Ethernet frame (IPv4, not RoCE) of @len bytes from a to b. */
static void send_eth_frame(Wire *w, size_t len, uint8_t seed)
{
    uint8_t f[1514] = { 0 };

    g_assert_cmpuint(len, <=, sizeof(f));
    uz_node_mac(1, f);
    uz_node_mac(0, f + 6);
    stw_be_p(f + 12, 0x0800);
    memset(f + 14, seed, len - 14);
    wire_send(w, f, len);
}

/*
 * The RDMA engine never waits for the Ethernet function (spec 6.2).  Node
 * b has an RX ring with no descriptor posted, as a driver that could not
 * allocate buffers leaves it, and Ethernet frames arrive: they wait in
 * the hold queue, 256 at most, the rest dropped and counted in
 * rx_out_of_buffer.  Meanwhile a's RDMA WRITEs to b complete: before,
 * the NIC stopped taking frames from the link while the ring was empty,
 * and the RoCE frames behind an Ethernet frame waited with it.
 */
static void test_eth_hold(void)
{
    Wire w;
    struct uz_admin_cmd cmd = { .opcode = UZ_CMD_CREATE_ETH_RXQ };
    int k;

    wire_start(&w);
    cmd.create_eth_queue.ring_addr = cpu_to_le64(uz_alloc(&w.b.d, 4096));
    cmd.create_eth_queue.log_depth = 4;
    cmd.create_eth_queue.eqn = cpu_to_le32(w.b.async_eq.eqn);
    g_assert_cmpint(uz_admin(&w.b.d, &cmd, NULL), ==, UZ_CMD_OK);

    send_eth_frame(&w, 200, 1);
    post_write(&w, 1, 0, 4096, 0x44);
    expect_write_done(&w, 1);
    uz_assert_mr_fill(w.mb, 0, 0x44, 4096, "a WRITE behind a held frame");

    for (k = 0; k < 300; k++) {
        send_eth_frame(&w, 200, k);
    }
    g_assert_cmpint(uz_counter_wait(&w.b, "rx_out_of_buffer", 301 - 256),
                    ==, 301 - 256);
    post_write(&w, 2, 0, 4096, 0x55);
    expect_write_done(&w, 2);
    uz_assert_mr_fill(w.mb, 0, 0x55, 4096, "a WRITE past a full hold queue");
    g_assert_cmpint(uz_counter(&w.m, 1, "rx_frames"), ==, 0);
    wire_stop(&w);
}

#define GROUP       0xe6010203u     /* 230.1.2.3 */

/* @fr again, from MAC @smac to MAC @dmac, IPv4 @daddr and QP @dqpn. */
static void forge_to(Wire *w, const UzFrame *fr, const uint8_t *smac,
                     const uint8_t *dmac, uint32_t daddr, uint32_t dqpn)
{
    UzFrame f = *fr;

    memcpy(f.data, dmac, 6);
    memcpy(f.data + 6, smac, 6);
    stl_be_p(f.data + UZ_OFF_IP + 16, daddr);
    stl_be_p(f.data + UZ_OFF_BTH + 4, dqpn);
    fix_ip(&f);
    wire_send(w, f.data, f.len);
}

/*
 * Multicast frames a peer forges (spec 8.14): a UD SEND to QPN 0xffffff
 * for a group reaches its member; the same to an address that is no
 * group, an RC WRITE to QPN 0xffffff and a group frame from the NIC's
 * own MAC (a multicast link's echo) reach no QP, and the member goes on.
 */
static void test_mcast_forged(void)
{
    static const uint8_t gmac[6] = { 0x01, 0x00, 0x5e, 0x01, 0x02, 0x03 };
    struct uz_cmd_mcast mc = { 0 };
    uint8_t mac_a[6], mac_b[6], ip_b[4];
    UzFrame ud, rc;
    UzQp *ua, *ub;
    UzSge r, s;
    struct uz_cqe c;
    uint64_t no_qp, ud_rx;
    Wire w;

    wire_start(&w);
    uz_node_mac(0, mac_a);
    uz_node_mac(1, mac_b);
    uz_node_ip(1, ip_b);
    ua = uz_qp_create(&w.a, UZ_QPT_UD, NULL, NULL, NULL, 0);
    ub = uz_qp_create(&w.b, UZ_QPT_UD, NULL, NULL, NULL, 0);
    uz_ud_up(ua, 0x1234, 0);
    uz_ud_up(ub, 0x1234, 0);
    mc.mgid[10] = mc.mgid[11] = 0xff;
    stl_be_p(mc.mgid + 12, GROUP);
    mc.qpn = cpu_to_le32(ub->qpn);
    mc.uctx = cpu_to_le32(w.b.uctx);
    g_assert_cmpint(uz_cmd(&w.b, UZ_CMD_ATTACH_MCAST, &mc, sizeof(mc), NULL),
                    ==, UZ_CMD_OK);

    /* A UD SEND and an RC WRITE as a sends them, to forge from. */
    s = uz_mr_sge(w.ma, 0, 32);
    uz_post_send(ua, &(UzWr) {
        .wr_id = 0x5e, .opcode = UZ_WR_SEND, .flags = UZ_WQE_F_SIGNALED,
        .sge = &s, .num_sge = 1, .ahn = uz_ah_create(&w.a, 1),
        .remote_qpn = ub->qpn, .remote_qkey = 0x1234,
    });
    wire_capture(&w, UZ_BTH_OP_UD_SEND_ONLY, &ud);
    uz_sq_done(ua, 0x5e, UZ_WC_SEND, 32);
    post_write(&w, 1, 0, 32, 0x11);
    wire_capture(&w, UZ_BTH_OP_WRITE_ONLY, &rc);
    expect_write_done(&w, 1);
    uz_wire_drain(w.sock, &w.a.d);

    r = uz_mr_sge(w.mb, 0, 40 + 32);
    uz_post_recv(ub, 0x7e, &r, 1);
    forge_to(&w, &ud, mac_a, gmac, GROUP, UZ_MCAST_QPN);
    uz_cq_wait(ub->rcq, &c);
    uz_expect_rq(&c, 0x7e, UZ_WC_RECV, ub->qpn, 40 + 32,
                 UZ_WC_F_GRH | UZ_WC_F_IPV4, 0, ua->qpn);
    g_assert_cmpuint(uz_counter(&w.m, 1, "rx_mcast"), ==, 1);

    uz_post_recv(ub, 0x7f, &r, 1);
    no_qp = uz_counter(&w.m, 1, "rx_no_qp");
    ud_rx = uz_counter(&w.m, 1, "rx_pkts_ud");
    forge_to(&w, &ud, mac_a, mac_b, ldl_be_p(ip_b), UZ_MCAST_QPN);
    forge_to(&w, &rc, mac_a, gmac, GROUP, UZ_MCAST_QPN);
    g_assert_cmpuint(uz_counter_wait(&w.b, "rx_no_qp", no_qp + 2), ==,
                     no_qp + 2);
    forge_to(&w, &ud, mac_b, gmac, GROUP, UZ_MCAST_QPN);
    uz_cq_assert_empty(ub->rcq, 20);
    g_assert_cmpuint(uz_counter(&w.m, 1, "rx_pkts_ud"), ==, ud_rx + 1);
    g_assert_cmpuint(uz_counter(&w.m, 1, "rx_no_qp"), ==, no_qp + 2);
    g_assert_cmpuint(uz_counter(&w.m, 1, "rx_mcast"), ==, 1);

    /* The member is unharmed: the next datagram takes its WQE. */
    forge_to(&w, &ud, mac_a, gmac, GROUP, UZ_MCAST_QPN);
    uz_cq_wait(ub->rcq, &c);
    uz_expect_rq(&c, 0x7f, UZ_WC_RECV, ub->qpn, 40 + 32,
                 UZ_WC_F_GRH | UZ_WC_F_IPV4, 0, ua->qpn);
    wire_stop(&w);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qtest_add_func("/uzura/wire/frame-format", test_frame_format);
    qtest_add_func("/uzura/wire/bad-frames", test_bad_frames);
    qtest_add_func("/uzura/wire/sequence-nak", test_sequence_nak);
    qtest_add_func("/uzura/wire/forged-sack", test_forged_sack);
    qtest_add_func("/uzura/wire/uc-unanswered", test_uc_unanswered);
    qtest_add_func("/uzura/wire/mcast-forged", test_mcast_forged);
    qtest_add_func("/uzura/wire/ecn", test_ecn);
    qtest_add_func("/uzura/wire/cnp", test_cnp);
    qtest_add_func("/uzura/wire/rp-pacing", test_rp_pacing);
    qtest_add_func("/uzura/wire/rp-slow-message", test_rp_slow_message);
    qtest_add_func("/uzura/wire/rp-read-pacing", test_rp_read_pacing);
    qtest_add_func("/uzura/wire/pause", test_pause);
    qtest_add_func("/uzura/wire/pause-off", test_pause_off);
    qtest_add_func("/uzura/wire/pause-storm", test_pause_storm);
    qtest_add_func("/uzura/wire/eth-hold", test_eth_hold);
    return g_test_run();
}
