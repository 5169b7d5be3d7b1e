/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qtest for the uzura NIC's counters read by the guest: UZ_CMD_QUERY_COUNTERS
 * (spec 10.1) against the same counters read with qom-get, after RC
 * traffic of every kind and after a fault; the index list (spec 10.2);
 * short and long buffers; and bad lengths and addresses, after which the
 * device still answers.
 */
#include "uzura-verbs.h"

#define CNT_BYTES       (UZ_CNT_NUM * 8)
#define BUF_BYTES       4096
#define PINGS           5
#define MSG             100         /* bytes of each ping */
#define WRITE_LEN       3000        /* 3 packets at MTU 1024 */
#define READ_LEN        2000        /* 2 response packets */

/* The index list, spec 10.2: the ABI the driver and provider rely on. */
static const char *const cnt_name[UZ_CNT_NUM] = {
    [UZ_CNT_TX_FRAMES] = "tx_frames",
    [UZ_CNT_TX_BYTES] = "tx_bytes",
    [UZ_CNT_TX_ERRORS] = "tx_errors",
    [UZ_CNT_RX_FRAMES] = "rx_frames",
    [UZ_CNT_RX_BYTES] = "rx_bytes",
    [UZ_CNT_RX_DROPPED] = "rx_dropped",
    [UZ_CNT_ADMIN_CMDS] = "admin_cmds",
    [UZ_CNT_ADMIN_ERRORS] = "admin_errors",
    [UZ_CNT_EQ_EVENTS] = "eq_events",
    [UZ_CNT_EQ_OVERFLOWS] = "eq_overflows",
    [UZ_CNT_IRQS] = "irqs",
    [UZ_CNT_DOORBELLS] = "doorbells",
    [UZ_CNT_CQES] = "cqes",
    [UZ_CNT_CQES_ERROR] = "cqes_error",
    [UZ_CNT_TX_PKTS_SEND] = "tx_pkts_send",
    [UZ_CNT_TX_BYTES_SEND] = "tx_bytes_send",
    [UZ_CNT_RX_PKTS_SEND] = "rx_pkts_send",
    [UZ_CNT_RX_BYTES_SEND] = "rx_bytes_send",
    [UZ_CNT_TX_PKTS_WRITE] = "tx_pkts_write",
    [UZ_CNT_TX_BYTES_WRITE] = "tx_bytes_write",
    [UZ_CNT_RX_PKTS_WRITE] = "rx_pkts_write",
    [UZ_CNT_RX_BYTES_WRITE] = "rx_bytes_write",
    [UZ_CNT_TX_PKTS_READ_REQ] = "tx_pkts_read_req",
    [UZ_CNT_TX_BYTES_READ_REQ] = "tx_bytes_read_req",
    [UZ_CNT_RX_PKTS_READ_REQ] = "rx_pkts_read_req",
    [UZ_CNT_RX_BYTES_READ_REQ] = "rx_bytes_read_req",
    [UZ_CNT_TX_PKTS_READ_RESP] = "tx_pkts_read_resp",
    [UZ_CNT_TX_BYTES_READ_RESP] = "tx_bytes_read_resp",
    [UZ_CNT_RX_PKTS_READ_RESP] = "rx_pkts_read_resp",
    [UZ_CNT_RX_BYTES_READ_RESP] = "rx_bytes_read_resp",
    [UZ_CNT_TX_PKTS_ATOMIC] = "tx_pkts_atomic",
    [UZ_CNT_TX_BYTES_ATOMIC] = "tx_bytes_atomic",
    [UZ_CNT_RX_PKTS_ATOMIC] = "rx_pkts_atomic",
    [UZ_CNT_RX_BYTES_ATOMIC] = "rx_bytes_atomic",
    [UZ_CNT_TX_PKTS_ACK] = "tx_pkts_ack",
    [UZ_CNT_TX_BYTES_ACK] = "tx_bytes_ack",
    [UZ_CNT_RX_PKTS_ACK] = "rx_pkts_ack",
    [UZ_CNT_RX_BYTES_ACK] = "rx_bytes_ack",
    [UZ_CNT_TX_PKTS_UD] = "tx_pkts_ud",
    [UZ_CNT_TX_BYTES_UD] = "tx_bytes_ud",
    [UZ_CNT_RX_PKTS_UD] = "rx_pkts_ud",
    [UZ_CNT_RX_BYTES_UD] = "rx_bytes_ud",
    [UZ_CNT_TX_PKTS_CRW] = "tx_pkts_crw",
    [UZ_CNT_TX_BYTES_CRW] = "tx_bytes_crw",
    [UZ_CNT_RX_PKTS_CRW] = "rx_pkts_crw",
    [UZ_CNT_RX_BYTES_CRW] = "rx_bytes_crw",
    [UZ_CNT_RETRANSMITS] = "retransmits",
    [UZ_CNT_RETRY_TIMEOUTS] = "retry_timeouts",
    [UZ_CNT_NAKS_SENT] = "naks_sent",
    [UZ_CNT_NAKS_RCVD] = "naks_rcvd",
    [UZ_CNT_NAK_SEQ_SENT] = "nak_seq_sent",
    [UZ_CNT_NAK_SEQ_RCVD] = "nak_seq_rcvd",
    [UZ_CNT_NAK_INV_REQ_RCVD] = "nak_inv_req_rcvd",
    [UZ_CNT_NAK_REM_ACCESS_RCVD] = "nak_rem_access_rcvd",
    [UZ_CNT_NAK_REM_OP_RCVD] = "nak_rem_op_rcvd",
    [UZ_CNT_RNR_NAKS_SENT] = "rnr_naks_sent",
    [UZ_CNT_RNR_NAKS_RCVD] = "rnr_naks_rcvd",
    [UZ_CNT_ACKS_COALESCED] = "acks_coalesced",
    [UZ_CNT_DUPLICATES] = "duplicates",
    [UZ_CNT_ICRC_ERRORS] = "icrc_errors",
    [UZ_CNT_RX_MALFORMED] = "rx_malformed",
    [UZ_CNT_RX_NO_QP] = "rx_no_qp",
    [UZ_CNT_RX_QKEY_ERRORS] = "rx_qkey_errors",
    [UZ_CNT_RX_UD_NO_WQE] = "rx_ud_no_wqe",
    [UZ_CNT_RX_STALE] = "rx_stale",
    [UZ_CNT_ROCE_TX_DROPPED] = "roce_tx_dropped",
    [UZ_CNT_XLAT_HITS] = "xlat_hits",
    [UZ_CNT_XLAT_MISSES] = "xlat_misses",
    [UZ_CNT_XLAT_EVICTIONS] = "xlat_evictions",
    [UZ_CNT_CRW_PARKED] = "crw_parked",
    [UZ_CNT_CRW_OFFERS] = "crw_offers",
    [UZ_CNT_CRW_MATCHED_CRW_FIRST] = "crw_matched_crw_first",
    [UZ_CNT_CRW_MATCHED_STCRW_FIRST] = "crw_matched_stcrw_first",
    [UZ_CNT_CRW_FLUSHED] = "crw_flushed",
    [UZ_CNT_CRW_ERRORS] = "crw_errors",
    [UZ_CNT_FAULT_DROPS] = "fault_drops",
    [UZ_CNT_FAULT_CORRUPTS] = "fault_corrupts",
    [UZ_CNT_FAULT_DUPS] = "fault_dups",
    [UZ_CNT_FAULT_REORDERS] = "fault_reorders",
    [UZ_CNT_FAULT_DELAYED] = "fault_delayed",
    [UZ_CNT_LOOP_FRAMES] = "loop_frames",
    [UZ_CNT_LOOP_DROPPED] = "loop_dropped",
    [UZ_CNT_RX_NOT_OURS] = "rx_not_ours",
    [UZ_CNT_NP_ECN_MARKED_ROCE_PACKETS] = "np_ecn_marked_roce_packets",
    [UZ_CNT_NP_CNP_SENT] = "np_cnp_sent",
    [UZ_CNT_RP_CNP_HANDLED] = "rp_cnp_handled",
    [UZ_CNT_RP_CNP_IGNORED] = "rp_cnp_ignored",
    [UZ_CNT_RX_OUT_OF_BUFFER] = "rx_out_of_buffer",
    [UZ_CNT_RX_PAUSE_CTRL_PHY] = "rx_pause_ctrl_phy",
    [UZ_CNT_RX_PAUSE_TRANSITION] = "rx_pause_transition",
    [UZ_CNT_RX_PAUSE_DURATION] = "rx_pause_duration",
    [UZ_CNT_RX_UD_TOO_LONG] = "rx_ud_too_long",
    [UZ_CNT_SACKS_SENT] = "sacks_sent",
    [UZ_CNT_SACKS_RCVD] = "sacks_rcvd",
    [UZ_CNT_SR_KEPT] = "sr_kept",
    [UZ_CNT_SR_RESENT] = "sr_resent",
    [UZ_CNT_XLAT_FAULTS] = "xlat_faults",
    [UZ_CNT_XLAT_INVALIDATIONS] = "xlat_invalidations",
    [UZ_CNT_UC_DROPPED] = "uc_dropped",
    [UZ_CNT_RX_MCAST] = "rx_mcast",
    [UZ_CNT_SQ_SHADOW_TAKES] = "sq_shadow_takes",
};

typedef struct Cnt {
    UzMachine m;
    UzNode n[2];
    uint64_t buf[2];            /* BUF_BYTES of guest memory per node */
} Cnt;

static void cnt_start(Cnt *t, int nodes)
{
    int i;

    uz_machine_start(&t->m, nodes, NULL);
    for (i = 0; i < nodes; i++) {
        uz_node_start(&t->n[i], &t->m, i);
        t->buf[i] = uz_alloc(&t->n[i].d, BUF_BYTES);
    }
}

static void cnt_stop(Cnt *t, int nodes)
{
    int i;

    for (i = 0; i < nodes; i++) {
        uz_node_stop(&t->n[i]);
    }
    uz_machine_stop(&t->m);
}

static uint8_t query(UzNode *n, uint64_t addr, uint32_t len,
                     struct uz_admin_cqe *cqe)
{
    struct uz_cmd_query c = {
        .buf_addr = cpu_to_le64(addr), .buf_len = cpu_to_le32(len),
        .handle = cpu_to_le32(0xdeadbeef),     /* ignored */
    };

    return uz_cmd(n, UZ_CMD_QUERY_COUNTERS, &c, sizeof(c), cqe);
}

static void guard_fill(Cnt *t, int i)
{
    qtest_memset(t->n[i].d.qts, t->buf[i], UZ_GUARD, BUF_BYTES);
}

/* Bytes [@from, BUF_BYTES) of node @i's buffer still hold the guard. */
static void guard_check(Cnt *t, int i, size_t from)
{
    g_autofree uint8_t *b = g_malloc(BUF_BYTES);
    size_t k;

    qtest_memread(t->n[i].d.qts, t->buf[i], b, BUF_BYTES);
    for (k = from; k < BUF_BYTES; k++) {
        if (b[k] != UZ_GUARD) {
            g_error("uz%d: QUERY_COUNTERS wrote byte %zu (0x%02x), past "
                    "the %zu bytes it may write", i, k, b[k], from);
        }
    }
}

/* Every counter with QUERY_COUNTERS, into @v in host order. */
static void query_all(Cnt *t, int i, uint64_t *v)
{
    struct uz_admin_cqe cqe;
    int k;

    guard_fill(t, i);
    g_assert_cmpint(query(&t->n[i], t->buf[i], CNT_BYTES, &cqe), ==,
                    UZ_CMD_OK);
    g_assert_cmpuint(le32_to_cpu(cqe.out0), ==, UZ_CNT_NUM);
    g_assert_cmpuint(le32_to_cpu(cqe.out1), ==, UZ_CNT_NUM);
    qtest_memread(t->n[i].d.qts, t->buf[i], v, CNT_BYTES);
    for (k = 0; k < UZ_CNT_NUM; k++) {
        v[k] = le64_to_cpu(v[k]);
    }
    guard_check(t, i, CNT_BYTES);
}

/*
 * @v, read with QUERY_COUNTERS, holds what qom-get reports now for every
 * counter, by name: the device is idle, and only the query itself has
 * counted since (one admin command, one admin interrupt).
 */
static void assert_as_qom(Cnt *t, int i, const uint64_t *v)
{
    int k;

    for (k = 0; k < UZ_CNT_NUM; k++) {
        uint64_t q = uz_counter(&t->m, i, cnt_name[k]);
        uint64_t since = k == UZ_CNT_ADMIN_CMDS || k == UZ_CNT_IRQS;

        if (v[k] + since != q) {
            g_error("uz%d: counter %d (%s): QUERY_COUNTERS %" PRIu64
                    ", qom-get %" PRIu64, i, k, cnt_name[k], v[k], q);
        }
    }
}

static void fault_set(Cnt *t, int nic, const char *prop, double v)
{
    g_autofree char *path = g_strdup_printf("/machine/peripheral/uz%d", nic);

    qtest_qmp_assert_success(t->m.qs->qts, "{'execute': 'qom-set', "
                             "'arguments': {'path': %s, 'property': %s, "
                             "'value': %f}}", path, prop, v);
}

/* ------------------------------------------------------------------ */

/*
 * A fresh NIC: all counters, equal to qom-get; the qom counters are
 * exactly the index list; the snapshot is taken before the query counts.
 */
static void test_all(void)
{
    Cnt t;
    uint64_t v[UZ_CNT_NUM], v2[UZ_CNT_NUM];
    QDict *rsp;
    QList *props;
    QListEntry *e;
    int k, named = 0;

    cnt_start(&t, 1);
    query_all(&t, 0, v);
    /* Two EQs and a PD before, each rung by a doorbell; then this one. */
    g_assert_cmpuint(v[UZ_CNT_ADMIN_CMDS], ==, 3);
    g_assert_cmpuint(v[UZ_CNT_ADMIN_ERRORS], ==, 0);
    g_assert_cmpuint(v[UZ_CNT_DOORBELLS], ==, 4);
    assert_as_qom(&t, 0, v);

    /* Reading counts: one more command each time. */
    query_all(&t, 0, v2);
    g_assert_cmpuint(v2[UZ_CNT_ADMIN_CMDS], ==, v[UZ_CNT_ADMIN_CMDS] + 1);
    g_assert_cmpuint(v2[UZ_CNT_DOORBELLS], ==, v[UZ_CNT_DOORBELLS] + 1);
    for (k = 0; k < UZ_CNT_NUM; k++) {
        g_assert_cmpuint(v2[k], >=, v[k]);
    }

    /* Every uint64 counter property of the device has an index. */
    rsp = qtest_qmp(t.m.qs->qts, "{'execute': 'qom-list', 'arguments': "
                    "{'path': '/machine/peripheral/uz0'}}");
    props = qdict_get_qlist(rsp, "return");
    QLIST_FOREACH_ENTRY(props, e) {
        QDict *p = qobject_to(QDict, qlist_entry_obj(e));
        const char *name = qdict_get_str(p, "name");
        bool found = false;

        if (strcmp(qdict_get_str(p, "type"), "uint64") || strchr(name, '-')) {
            continue;
        }
        for (k = 0; k < UZ_CNT_NUM; k++) {
            found |= !strcmp(name, cnt_name[k]);
        }
        if (!found) {
            g_error("counter %s has no QUERY_COUNTERS index", name);
        }
        named++;
    }
    g_assert_cmpint(named, ==, UZ_CNT_NUM);
    qobject_unref(rsp);
    cnt_stop(&t, 1);
}

/* PINGS SENDs of MSG bytes from @qa to @qb, each answered by one back. */
static void ping_pong(UzQp *qa, UzQp *qb, UzMr *ma, UzMr *mb)
{
    int k;

    for (k = 0; k < PINGS; k++) {
        UzSge sa = uz_mr_sge(ma, 0, MSG), ra = uz_mr_sge(ma, 4096, MSG);
        UzSge sb = uz_mr_sge(mb, 0, MSG), rb = uz_mr_sge(mb, 4096, MSG);
        UzWr ping = {
            .wr_id = 0x9100 + k, .opcode = UZ_WR_SEND,
            .flags = UZ_WQE_F_SIGNALED, .sge = &sa, .num_sge = 1,
        };
        UzWr pong = {
            .wr_id = 0x9200 + k, .opcode = UZ_WR_SEND,
            .flags = UZ_WQE_F_SIGNALED, .sge = &sb, .num_sge = 1,
        };

        uz_post_recv(qb, 0x9300 + k, &rb, 1);
        uz_post_recv(qa, 0x9400 + k, &ra, 1);
        uz_post_send(qa, &ping);
        uz_sq_done(qa, ping.wr_id, UZ_WC_SEND, MSG);
        uz_rq_done(qb, 0x9300 + k, UZ_WC_RECV, MSG, 0, 0);
        uz_post_send(qb, &pong);
        uz_sq_done(qb, pong.wr_id, UZ_WC_SEND, MSG);
        uz_rq_done(qa, 0x9400 + k, UZ_WC_RECV, MSG, 0, 0);
    }
}

/* An RDMA WRITE of WRITE_LEN bytes from @qa, then a READ of READ_LEN. */
static void write_and_read(UzQp *qa, UzMr *ma, UzMr *mb)
{
    UzSge sw = uz_mr_sge(ma, 0, WRITE_LEN);
    UzSge sr = uz_mr_sge(ma, 4096, READ_LEN);
    UzWr w = {
        .wr_id = 0x9500, .opcode = UZ_WR_RDMA_WRITE,
        .flags = UZ_WQE_F_SIGNALED, .sge = &sw, .num_sge = 1,
        .remote_addr = uz_mr_va(mb, 0), .rkey = mb->key,
    };
    UzWr r = {
        .wr_id = 0x9501, .opcode = UZ_WR_RDMA_READ,
        .flags = UZ_WQE_F_SIGNALED, .sge = &sr, .num_sge = 1,
        .remote_addr = uz_mr_va(mb, 4096), .rkey = mb->key,
    };

    uz_post_send(qa, &w);
    uz_sq_done(qa, w.wr_id, UZ_WC_RDMA_WRITE, WRITE_LEN);
    uz_post_send(qa, &r);
    uz_sq_done(qa, r.wr_id, UZ_WC_RDMA_READ, READ_LEN);
}

/*
 * RC traffic between two NICs: pings both ways, an RDMA WRITE and an
 * RDMA READ.  Both NICs' counters equal qom-get's, and count the packets
 * sent, by kind, in the right place.
 */
static void test_traffic(void)
{
    Cnt t;
    UzQp *qa, *qb;
    UzMr *ma, *mb;
    uint64_t va[UZ_CNT_NUM], vb[UZ_CNT_NUM];

    cnt_start(&t, 2);
    qa = uz_qp_create(&t.n[0], UZ_QPT_RC, NULL, NULL, NULL, 0);
    qb = uz_qp_create(&t.n[1], UZ_QPT_RC, NULL, NULL, NULL, 0);
    uz_rc_connect(qa, qb, NULL);
    ma = uz_mr_reg(&t.n[0], 8192, UZ_ACCESS_ALL);
    mb = uz_mr_reg(&t.n[1], 8192, UZ_ACCESS_ALL);

    ping_pong(qa, qb, ma, mb);
    write_and_read(qa, ma, mb);

    query_all(&t, 0, va);
    query_all(&t, 1, vb);
    assert_as_qom(&t, 0, va);
    assert_as_qom(&t, 1, vb);

    /* Each ping is one packet; the WRITE three, the READ one and two. */
    g_assert_cmpuint(va[UZ_CNT_TX_PKTS_SEND], ==, PINGS);
    g_assert_cmpuint(va[UZ_CNT_RX_PKTS_SEND], ==, PINGS);
    g_assert_cmpuint(vb[UZ_CNT_TX_PKTS_SEND], ==, PINGS);
    g_assert_cmpuint(vb[UZ_CNT_RX_PKTS_SEND], ==, PINGS);
    g_assert_cmpuint(va[UZ_CNT_TX_BYTES_SEND], >, PINGS * MSG);
    g_assert_cmpuint(va[UZ_CNT_TX_BYTES_SEND], ==, vb[UZ_CNT_RX_BYTES_SEND]);
    g_assert_cmpuint(vb[UZ_CNT_TX_BYTES_SEND], ==, va[UZ_CNT_RX_BYTES_SEND]);
    g_assert_cmpuint(va[UZ_CNT_TX_PKTS_WRITE], ==, 3);
    g_assert_cmpuint(vb[UZ_CNT_RX_PKTS_WRITE], ==, 3);
    g_assert_cmpuint(va[UZ_CNT_RX_PKTS_WRITE], ==, 0);
    g_assert_cmpuint(va[UZ_CNT_TX_BYTES_WRITE], >, WRITE_LEN);
    g_assert_cmpuint(va[UZ_CNT_TX_PKTS_READ_REQ], ==, 1);
    g_assert_cmpuint(vb[UZ_CNT_RX_PKTS_READ_REQ], ==, 1);
    g_assert_cmpuint(vb[UZ_CNT_TX_PKTS_READ_RESP], ==, 2);
    g_assert_cmpuint(va[UZ_CNT_RX_PKTS_READ_RESP], ==, 2);
    g_assert_cmpuint(va[UZ_CNT_RX_BYTES_READ_RESP], >, READ_LEN);
    /* ACKs, perhaps coalesced, went both ways; every one arrived. */
    g_assert_cmpuint(va[UZ_CNT_RX_PKTS_ACK], >=, 1);
    g_assert_cmpuint(vb[UZ_CNT_RX_PKTS_ACK], >=, 1);
    g_assert_cmpuint(va[UZ_CNT_TX_PKTS_ACK], ==, vb[UZ_CNT_RX_PKTS_ACK]);
    g_assert_cmpuint(vb[UZ_CNT_TX_PKTS_ACK], ==, va[UZ_CNT_RX_PKTS_ACK]);
    /* CQEs: the pings sent and received, the WRITE and the READ. */
    g_assert_cmpuint(va[UZ_CNT_CQES], ==, 2 * PINGS + 2);
    g_assert_cmpuint(vb[UZ_CNT_CQES], ==, 2 * PINGS);
    g_assert_cmpuint(va[UZ_CNT_CQES_ERROR], ==, 0);
    g_assert_cmpuint(va[UZ_CNT_RETRANSMITS], ==, 0);
    g_assert_cmpuint(va[UZ_CNT_FAULT_DROPS], ==, 0);
    cnt_stop(&t, 2);
}

/*
 * A fault: NIC 0 drops the first SEND; the request is retransmitted after
 * an ACK timeout.  The fault and transport counters say so, as qom-get
 * does.
 */
static void test_fault(void)
{
    Cnt t;
    UzRcOpts o = UZ_RC_OPTS_DEFAULT;
    UzQp *qa, *qb;
    UzMr *ma, *mb;
    uint64_t v[UZ_CNT_NUM];
    UzSge s, r;
    UzWr wr;
    struct uz_cqe c;

    cnt_start(&t, 2);
    qa = uz_qp_create(&t.n[0], UZ_QPT_RC, NULL, NULL, NULL, 0);
    qb = uz_qp_create(&t.n[1], UZ_QPT_RC, NULL, NULL, NULL, 0);
    o.timeout = 8;                  /* 4.096 us << 8: about 1 ms */
    uz_rc_connect(qa, qb, &o);
    ma = uz_mr_reg(&t.n[0], 4096, UZ_ACCESS_ALL);
    mb = uz_mr_reg(&t.n[1], 4096, UZ_ACCESS_ALL);
    s = uz_mr_sge(ma, 0, MSG);
    r = uz_mr_sge(mb, 0, MSG);
    wr = (UzWr) {
        .wr_id = 0xfa01, .opcode = UZ_WR_SEND, .flags = UZ_WQE_F_SIGNALED,
        .sge = &s, .num_sge = 1,
    };

    uz_post_recv(qb, 0xfa02, &r, 1);
    fault_set(&t, 0, "fault-drop", 1);
    uz_post_send(qa, &wr);
    uz_counter_wait(&t.n[0], "fault_drops", 1);
    fault_set(&t, 0, "fault-drop", 0);
    /* The ACK timeout runs on the virtual clock: step it. */
    uz_cq_wait_clock(qa->scq, &c, 250 * 1000, 100);
    uz_expect_sq(&c, 0xfa01, UZ_WC_SEND, qa, MSG);
    uz_rq_done(qb, 0xfa02, UZ_WC_RECV, MSG, 0, 0);

    query_all(&t, 0, v);
    assert_as_qom(&t, 0, v);
    g_assert_cmpuint(v[UZ_CNT_FAULT_DROPS], ==, 1);
    g_assert_cmpuint(v[UZ_CNT_RETRY_TIMEOUTS], >=, 1);
    g_assert_cmpuint(v[UZ_CNT_RETRANSMITS], >=, 1);
    /* The dropped first try and the retransmission were both sent. */
    g_assert_cmpuint(v[UZ_CNT_TX_PKTS_SEND], ==, 1 + v[UZ_CNT_RETRANSMITS]);
    query_all(&t, 1, v);
    assert_as_qom(&t, 1, v);
    g_assert_cmpuint(v[UZ_CNT_RX_PKTS_SEND], ==, 1);
    g_assert_cmpuint(v[UZ_CNT_FAULT_DROPS], ==, 0);
    cnt_stop(&t, 2);
}

/* A short buffer gets that many counters; a long one all, and no more. */
static void test_lengths(void)
{
    static const uint32_t lens[] = {
        8, 8 * (UZ_CNT_ADMIN_CMDS + 1), CNT_BYTES - 8, CNT_BYTES,
        CNT_BYTES + 8, BUF_BYTES,
    };
    Cnt t;
    struct uz_admin_cqe cqe;
    uint64_t v[UZ_CNT_NUM];
    int i, k;

    cnt_start(&t, 1);
    for (i = 0; i < ARRAY_SIZE(lens); i++) {
        uint32_t n = MIN(lens[i] / 8, UZ_CNT_NUM);
        uint64_t admin_cmds = uz_counter(&t.m, 0, "admin_cmds");

        g_test_message("buf_len %u: %u counters", lens[i], n);
        guard_fill(&t, 0);
        g_assert_cmpint(query(&t.n[0], t.buf[0], lens[i], &cqe), ==,
                        UZ_CMD_OK);
        g_assert_cmpuint(le32_to_cpu(cqe.out0), ==, n);
        g_assert_cmpuint(le32_to_cpu(cqe.out1), ==, UZ_CNT_NUM);
        guard_check(&t, 0, n * 8);
        qtest_memread(t.n[0].d.qts, t.buf[0], v, n * 8);
        /* The first counters are where they belong. */
        g_assert_cmpuint(le64_to_cpu(v[UZ_CNT_TX_FRAMES]), ==,
                         uz_counter(&t.m, 0, "tx_frames"));
        if (n > UZ_CNT_ADMIN_CMDS) {
            g_assert_cmpuint(le64_to_cpu(v[UZ_CNT_ADMIN_CMDS]), ==,
                             admin_cmds);
        }
        if (n == UZ_CNT_NUM) {
            for (k = 0; k < UZ_CNT_NUM; k++) {
                v[k] = le64_to_cpu(v[k]);
            }
            assert_as_qom(&t, 0, v);
        }
    }
    cnt_stop(&t, 1);
}

/*
 * Bad lengths and addresses: BAD_PARAM or BAD_ADDR, nothing written, a
 * guest error logged; then the queue and the command still work.
 */
static void test_bad_input(void)
{
    static const uint32_t bad_lens[] = { 0, 4, 7, 12, CNT_BYTES + 4, 1001 };
    Cnt t;
    struct uz_admin_cqe cqe;
    uint64_t v[UZ_CNT_NUM], before, ram_end;
    g_autofree char *log = NULL;
    uint8_t tail[8], got[8];
    QDict *rsp;
    int i, bad = 0;

    cnt_start(&t, 1);
    before = uz_counter(&t.m, 0, "admin_errors");
    for (i = 0; i < ARRAY_SIZE(bad_lens); i++) {
        guard_fill(&t, 0);
        g_assert_cmpint(query(&t.n[0], t.buf[0], bad_lens[i], &cqe), ==,
                        UZ_CMD_BAD_PARAM);
        guard_check(&t, 0, 0);
        bad++;
    }

    /* Outside guest memory, and past 2^64. */
    g_assert_cmpint(query(&t.n[0], 0xfff0000000000ull, CNT_BYTES, NULL), ==,
                    UZ_CMD_BAD_ADDR);
    g_assert_cmpint(query(&t.n[0], 0xfffffffffffffff8ull, 16, NULL), ==,
                    UZ_CMD_BAD_ADDR);
    bad += 2;

    /* A buffer that runs off the end of RAM: refused, and not begun. */
    rsp = qtest_qmp(t.m.qs->qts, "{'execute': 'query-memory-size-summary'}");
    ram_end = qdict_get_int(qdict_get_qdict(rsp, "return"), "base-memory");
    qobject_unref(rsp);
    g_assert_cmpuint(ram_end, <, 2ull << 30);     /* all of it below 4 GiB */
    memset(tail, 0x5a, sizeof(tail));
    qtest_memwrite(t.n[0].d.qts, ram_end - 8, tail, sizeof(tail));
    g_assert_cmpint(query(&t.n[0], ram_end - 8, 16, NULL), ==,
                    UZ_CMD_BAD_ADDR);
    qtest_memread(t.n[0].d.qts, ram_end - 8, got, sizeof(got));
    g_assert(!memcmp(got, tail, sizeof(got)));
    bad++;
    /* The last 8 bytes of RAM alone are fine. */
    g_assert_cmpint(query(&t.n[0], ram_end - 8, 8, &cqe), ==, UZ_CMD_OK);
    g_assert_cmpuint(le32_to_cpu(cqe.out0), ==, 1);

    /* Counted, logged, and the device still answers. */
    g_assert_cmpuint(uz_counter(&t.m, 0, "admin_errors") - before, ==, bad);
    g_assert_cmphex(uz_rd(&t.n[0].d, UZ_REG_ADMIN_STATUS), ==,
                    UZ_ADMIN_STATUS_ENABLED);
    query_all(&t, 0, v);
    assert_as_qom(&t, 0, v);
    g_assert_cmpuint(v[UZ_CNT_ADMIN_ERRORS] - before, ==, bad);
    log = uz_machine_log(&t.m);
    g_assert(strstr(log, "uzura: admin command 0x21 (id "));
    g_assert(strstr(log, ") failed with status 0x02"));
    g_assert(strstr(log, ") failed with status 0x03"));
    cnt_stop(&t, 1);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);

    qtest_add_func("/uzura/counters/all", test_all);
    qtest_add_func("/uzura/counters/traffic", test_traffic);
    qtest_add_func("/uzura/counters/fault", test_fault);
    qtest_add_func("/uzura/counters/lengths", test_lengths);
    qtest_add_func("/uzura/counters/bad-input", test_bad_input);

    return g_test_run();
}
