/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uzura: receive side scaling (device 0.19, UZ_CAP_RSS, spec 8.18.1).
 * Raw QPs with UZ_QPF_NO_SQ are the receive queues (verbs' WQs); an RSS
 * QP over a table of them owns a flow rule, and each frame the rule
 * matches lands in the WQ that the Toeplitz hash of its addresses and
 * ports picks.  The expected WQ comes from the test's own Toeplitz
 * routine, itself checked first against Microsoft's published vectors.
 */
#include "uzura-verbs.h"
#include "uzura-migrate.h"
#include "qemu/cutils.h"
#include "qemu/host-utils.h"

#define STEP_NS     (10 * 1000000ll)
#define NWQ_LOG     2
#define NWQ         (1u << NWQ_LOG)
#define SLOTS       16                  /* receive WQEs posted per WQ */
#define BUF         256                 /* bytes per receive WQE */
#define TX_OFF      (NWQ * SLOTS * BUF) /* where frames sent are built */

static const uint8_t ms_key[40] = {
    0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2,
    0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0,
    0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4,
    0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30, 0xf2, 0x0c,
    0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
};
static const uint8_t uz0_mac[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x50 };
static const uint8_t src_mac[6] = { 0x24, 0x8a, 0x07, 0xa5, 0x28, 0xc8 };

/*
 * Toeplitz, written as its definition: input bit i (from the most
 * significant bit of byte 0) selects the 32 key bits i .. i + 31.
 */
static uint32_t toeplitz(const uint8_t *key, const uint8_t *in, size_t len)
{
    uint32_t hash = 0;
    size_t i, j;

    for (i = 0; i < len * 8; i++) {
        uint32_t win = 0;

        if (!(in[i / 8] & (0x80 >> (i % 8)))) {
            continue;
        }
        for (j = 0; j < 32; j++) {
            win = (win << 1) | ((key[(i + j) / 8] >> (7 - (i + j) % 8)) & 1);
        }
        hash ^= win;
    }
    return hash;
}

/* Hash input: addresses, then ports if @ports, as on the wire. */
static size_t tuple(uint8_t *in, uint32_t src, uint32_t dst, bool ports,
                    uint16_t sport, uint16_t dport)
{
    stl_be_p(in, src);
    stl_be_p(in + 4, dst);
    if (!ports) {
        return 8;
    }
    stw_be_p(in + 8, sport);
    stw_be_p(in + 10, dport);
    return 12;
}

/* The Microsoft RSS verification suite, IPv4 rows and the first IPv6. */
static void test_toeplitz(void)
{
    static const struct {
        uint32_t src, dst;
        uint16_t sport, dport;
        uint32_t ip, tcp;
    } v4[] = {
        { 0x420995bb, 0xa18e6450, 2794, 1766, 0x323e8fc2, 0x51ccc178 },
        { 0xc75c6f02, 0x41458c53, 14230, 4739, 0xd718262a, 0xc626b0ea },
        { 0x1813c65f, 0x0c16cfb8, 12898, 38024, 0xd2d0a5de, 0x5c2b394a },
        { 0x261bcd1e, 0xd18ea306, 48228, 2217, 0x82989176, 0xafc7327f },
        { 0x9927a3bf, 0xcabc7f02, 44251, 1303, 0x5d1809c5, 0x10e828a2 },
    };
    uint8_t in[36];
    size_t i, len;

    for (i = 0; i < ARRAY_SIZE(v4); i++) {
        len = tuple(in, v4[i].src, v4[i].dst, false, 0, 0);
        g_assert_cmphex(toeplitz(ms_key, in, len), ==, v4[i].ip);
        len = tuple(in, v4[i].src, v4[i].dst, true, v4[i].sport,
                    v4[i].dport);
        g_assert_cmphex(toeplitz(ms_key, in, len), ==, v4[i].tcp);
    }
    /* 3ffe:2501:200:1fff::7 port 2794 -> 3ffe:2501:200:3::1 port 1766 */
    memset(in, 0, sizeof(in));
    stq_be_p(in, 0x3ffe250102001fffull);
    in[15] = 7;
    stq_be_p(in + 16, 0x3ffe250102000003ull);
    in[31] = 1;
    g_assert_cmphex(toeplitz(ms_key, in, 32), ==, 0x2cc18cd5);
    stw_be_p(in + 32, 2794);
    stw_be_p(in + 34, 1766);
    g_assert_cmphex(toeplitz(ms_key, in, 36), ==, 0x40207d3d);
}

typedef struct Rss {
    UzMachine m;
    UzNode n;
    UzQp *tx;                   /* a raw QP that sends the frames */
    UzCq *cq;                   /* of every WQ */
    UzQp *wq[NWQ + 1];          /* the last one stays in INIT */
    uint32_t posted[NWQ + 1];
    uint32_t got[NWQ + 1];
    UzMr *mr;
} Rss;

static void raw_to(UzQp *qp, uint8_t state)
{
    struct uz_qp_attr a = { .state = UZ_QPS_INIT, .port = 1 };

    g_assert_cmpint(uz_qp_modify(qp, UZ_QP_ATTR_STATE | UZ_QP_ATTR_PORT,
                                 &a), ==, UZ_CMD_OK);
    if (state >= UZ_QPS_RTR) {
        uz_qp_set_state(qp, UZ_QPS_RTR);
    }
    if (state >= UZ_QPS_RTS) {
        uz_qp_set_state(qp, UZ_QPS_RTS);
    }
}

static void wq_post(Rss *t, int w)
{
    uint32_t slot = t->posted[w] % SLOTS;
    UzSge s = uz_mr_sge(t->mr, ((uint64_t)w * SLOTS + slot) * BUF, BUF);

    uz_post_recv(t->wq[w], ((uint64_t)w << 16) | t->posted[w], &s, 1);
    t->posted[w]++;
}

static void rss_start(Rss *t)
{
    int w, i;

    memset(t, 0, sizeof(*t));
    uz_machine_start(&t->m, 1, NULL);
    uz_node_start(&t->n, &t->m, 0);
    g_assert(uz_rd(&t->n.d, UZ_REG_CAPS) & UZ_CAP_RSS);
    t->mr = uz_mr_reg(&t->n, TX_OFF + 4096, UZ_ACCESS_LOCAL_WRITE);
    t->tx = uz_qp_create(&t->n, UZ_QPT_RAW, NULL, NULL, NULL, 0);
    raw_to(t->tx, UZ_QPS_RTS);
    t->cq = uz_cq_create(&t->n, 8);
    for (w = 0; w <= NWQ; w++) {
        t->wq[w] = uz_qp_create(&t->n, UZ_QPT_RAW, t->cq, t->cq, NULL,
                                UZ_QPF_NO_SQ);
        /* No SQ, no SQ doorbell. */
        g_assert_cmphex(t->wq[w]->sq_db, ==, 0);
        g_assert_cmphex(t->wq[w]->rq_db, !=, 0);
        raw_to(t->wq[w], w < NWQ ? UZ_QPS_RTR : UZ_QPS_INIT);
        for (i = 0; i < 4; i++) {
            wq_post(t, w);
        }
    }
}

static void rss_stop(Rss *t)
{
    uz_node_stop(&t->n);
    uz_machine_stop(&t->m);
}

static uint8_t rss_try(UzNode *n, const struct uz_rss_conf *conf,
                       uint64_t addr, uint32_t *qpn)
{
    struct uz_cmd_create_qp c = {
        .uctx = cpu_to_le32(n->uctx), .pdn = cpu_to_le32(n->pdn),
        .srqn = cpu_to_le32(UZ_NO_SRQ), .type = UZ_QPT_RSS,
    };
    struct uz_admin_cqe cqe;
    uint8_t st;

    if (!addr) {
        addr = uz_alloc(&n->d, sizeof(*conf));
        qtest_memwrite(n->d.qts, addr, conf, sizeof(*conf));
    }
    c.sq_addr = cpu_to_le64(addr);
    st = uz_cmd(n, UZ_CMD_CREATE_QP, &c, sizeof(c), &cqe);
    if (st == UZ_CMD_OK) {
        /* Neither queue has a doorbell. */
        g_assert_cmphex(le32_to_cpu(cqe.out1), ==, 0);
        g_assert_cmphex(le32_to_cpu(cqe.out2), ==, 0);
    }
    *qpn = le32_to_cpu(cqe.out0);
    return st;
}

static struct uz_rss_conf rss_conf(const uint32_t *qpn, uint8_t log_size,
                                   uint32_t fields)
{
    struct uz_rss_conf c = {
        .fields = cpu_to_le32(fields), .log_size = log_size,
        .func = UZ_RSS_TOEPLITZ,
    };
    uint32_t i;

    memcpy(c.key, ms_key, sizeof(c.key));
    for (i = 0; i < (1u << log_size); i++) {
        c.qpn[i] = cpu_to_le32(qpn[i]);
    }
    return c;
}

static uint8_t qp_destroy(UzNode *n, uint32_t qpn)
{
    struct uz_cmd_obj c = { .handle = cpu_to_le32(qpn),
                            .uctx = cpu_to_le32(n->uctx) };

    return uz_cmd(n, UZ_CMD_DESTROY_QP, &c, sizeof(c), NULL);
}

/* A rule on @qpn for IPv4 frames to uz0's MAC (+ dst port if @dport). */
static uint32_t flow(UzNode *n, uint32_t qpn, uint16_t dport)
{
    struct uz_flow_spec s = { .ethertype = cpu_to_be16(0x0800),
                              .ethertype_mask = 0xffff };
    uint64_t buf = uz_alloc(&n->d, sizeof(s));
    struct uz_cmd_create_flow c = {
        .spec_addr = cpu_to_le64(buf), .qpn = cpu_to_le32(qpn),
        .uctx = cpu_to_le32(n->uctx),
    };
    struct uz_admin_cqe cqe;

    memcpy(s.dmac, uz0_mac, 6);
    memset(s.dmac_mask, 0xff, 6);
    if (dport) {
        s.l4 = UZ_FLOW_L4_UDP;
        s.dport = cpu_to_be16(dport);
        s.dport_mask = 0xffff;
    }
    qtest_memwrite(n->d.qts, buf, &s, sizeof(s));
    g_assert_cmpint(uz_cmd(n, UZ_CMD_CREATE_FLOW, &c, sizeof(c), &cqe), ==,
                    UZ_CMD_OK);
    return le32_to_cpu(cqe.out0);
}

static void flow_destroy(UzNode *n, uint32_t id)
{
    struct uz_cmd_obj c = { .handle = cpu_to_le32(id),
                            .uctx = cpu_to_le32(n->uctx) };

    g_assert_cmpint(uz_cmd(n, UZ_CMD_DESTROY_FLOW, &c, sizeof(c), NULL), ==,
                    UZ_CMD_OK);
}

/* Send an IPv4 frame to uz0 from @tx; returns its length. */
static uint32_t send_frame(Rss *t, uint8_t *f, uint32_t src, uint32_t dst,
                           uint8_t proto, uint16_t sport, uint16_t dport)
{
    uint32_t l4len = (proto == UZ_FLOW_L4_TCP ? 20 : 8) + 32, len;
    uint8_t *p = f + 14;
    UzSge s;
    UzWr wr = { .wr_id = 0x77, .opcode = UZ_WR_SEND,
                .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1 };
    struct uz_cqe c;

    memcpy(f, uz0_mac, 6);
    memcpy(f + 6, src_mac, 6);
    stw_be_p(f + 12, 0x0800);
    memset(p, 0, 20 + l4len);
    p[0] = 0x45;
    stw_be_p(p + 2, 20 + l4len);
    p[8] = 64;
    p[9] = proto;
    stl_be_p(p + 12, src);
    stl_be_p(p + 16, dst);
    stw_be_p(p + 20, sport);
    stw_be_p(p + 22, dport);
    uz_pattern(p + 20 + l4len - 32, 32, src);
    len = 14 + 20 + l4len;
    s = uz_mr_sge(t->mr, TX_OFF, len);
    uz_mr_write(t->mr, TX_OFF, f, len);
    uz_post_send(t->tx, &wr);
    uz_cq_wait_clock(t->tx->scq, &c, STEP_NS, 100);
    uz_cqe_expect(&c, wr.wr_id, UZ_WC_SEND, UZ_WC_STATUS_SUCCESS, 0,
                  t->tx->qpn);
    return len;
}

/* WQ @w received frame @f (@len bytes) in its next receive WQE. */
static void wq_got(Rss *t, int w, const uint8_t *f, uint32_t len)
{
    uint32_t slot = t->got[w] % SLOTS;
    struct uz_cqe c;

    uz_cq_wait_clock(t->cq, &c, STEP_NS, 100);
    uz_cqe_expect(&c, ((uint64_t)w << 16) | t->got[w], UZ_WC_RECV,
                  UZ_WC_STATUS_SUCCESS, 0, t->wq[w]->qpn);
    g_assert_cmpuint(c.byte_len, ==, len);
    uz_assert_mr(t->mr, ((uint64_t)w * SLOTS + slot) * BUF, f, len,
                 "frame in the hashed WQ");
    t->got[w]++;
    wq_post(t, w);
}

static int wq_index(Rss *t, uint32_t qpn)
{
    int w;

    for (w = 0; w <= NWQ; w++) {
        if (t->wq[w]->qpn == qpn) {
            return w;
        }
    }
    g_assert_not_reached();
}

/*
 * Frames from 16 sources land where the hash says; TCP ports are not in
 * a UDP-port hash; a WQ both a plain rule and the RSS rule reach gets
 * one copy; a WQ not yet in RTR drops; the table holds its WQs.
 */
static void test_spread(void)
{
    const uint32_t dst = 0x0a000001, fields = UZ_RSS_F_SRC_IPV4 |
        UZ_RSS_F_DST_IPV4 | UZ_RSS_F_SRC_PORT_UDP | UZ_RSS_F_DST_PORT_UDP;
    uint32_t tbl[NWQ], rssq, rss1, id, id2, len, hits = 0, i, src;
    uint64_t dropped;
    struct uz_rss_conf conf;
    struct uz_qp_attr a = { .state = UZ_QPS_RTS };
    uint8_t f[256], in[36];
    Rss t;
    int w;

    rss_start(&t);
    /* The table in an order of its own, to see it indexed. */
    for (i = 0; i < NWQ; i++) {
        tbl[i] = t.wq[(i + 1) % NWQ]->qpn;
    }
    conf = rss_conf(tbl, NWQ_LOG, fields);
    g_assert_cmpint(rss_try(&t.n, &conf, 0, &rssq), ==, UZ_CMD_OK);
    id = flow(&t.n, rssq, 0);

    for (i = 0; i < 16; i++) {
        src = 0x01020304 + i * 0x01010101;
        len = send_frame(&t, f, src, dst, UZ_FLOW_L4_UDP, 1000 + i, 4791);
        tuple(in, src, dst, true, 1000 + i, 4791);
        w = wq_index(&t, tbl[toeplitz(ms_key, in, 12) & (NWQ - 1)]);
        hits |= 1u << w;
        wq_got(&t, w, f, len);
    }
    g_assert_cmpint(ctpop32(hits), >, 1);   /* it does spread */

    /* TCP: the UDP port fields are not the frame's; addresses only. */
    src = 0xc0a80105;
    len = send_frame(&t, f, src, dst, UZ_FLOW_L4_TCP, 1, 2);
    tuple(in, src, dst, false, 0, 0);
    w = wq_index(&t, tbl[toeplitz(ms_key, in, 8) & (NWQ - 1)]);
    wq_got(&t, w, f, len);
    uz_cq_assert_empty(t.cq, 10);

    /* A plain rule on the WQ the hash picks as well: one copy. */
    id2 = flow(&t.n, t.wq[w]->qpn, 0);
    len = send_frame(&t, f, src, dst, UZ_FLOW_L4_TCP, 1, 2);
    wq_got(&t, w, f, len);
    qtest_clock_step(t.n.d.qts, STEP_NS);
    uz_cq_assert_empty(t.cq, 10);
    flow_destroy(&t.n, id2);

    /* An RSS QP has no states; its WQs, its flows keep it. */
    g_assert_cmpint(uz_qp_modify(&(UzQp){ .n = &t.n, .qpn = rssq,
                                          .uctx = t.n.uctx },
                                 UZ_QP_ATTR_STATE, &a), ==,
                    UZ_CMD_BAD_STATE);
    g_assert_cmpint(qp_destroy(&t.n, t.wq[0]->qpn), ==, UZ_CMD_BUSY);
    g_assert_cmpint(qp_destroy(&t.n, rssq), ==, UZ_CMD_BUSY);
    flow_destroy(&t.n, id);

    /* A table of one WQ in INIT: the frame is dropped, then taken. */
    conf = rss_conf(&t.wq[NWQ]->qpn, 0, fields);
    g_assert_cmpint(rss_try(&t.n, &conf, 0, &rss1), ==, UZ_CMD_OK);
    id = flow(&t.n, rss1, 4791);
    dropped = uz_counter(t.n.m, 0, "rx_dropped");
    len = send_frame(&t, f, 0x05050505, dst, UZ_FLOW_L4_UDP, 7, 4791);
    uz_counter_wait(&t.n, "rx_dropped", dropped + 1);
    uz_cq_assert_empty(t.cq, 10);
    uz_qp_set_state(t.wq[NWQ], UZ_QPS_RTR);
    len = send_frame(&t, f, 0x05050505, dst, UZ_FLOW_L4_UDP, 7, 4791);
    wq_got(&t, NWQ, f, len);
    flow_destroy(&t.n, id);

    /* Gone with their tables: the WQs go too. */
    g_assert_cmpint(qp_destroy(&t.n, t.wq[NWQ]->qpn), ==, UZ_CMD_BUSY);
    g_assert_cmpint(qp_destroy(&t.n, rss1), ==, UZ_CMD_OK);
    g_assert_cmpint(qp_destroy(&t.n, t.wq[NWQ]->qpn), ==, UZ_CMD_OK);
    g_assert_cmpint(qp_destroy(&t.n, t.wq[1]->qpn), ==, UZ_CMD_BUSY);
    g_assert_cmpint(qp_destroy(&t.n, rssq), ==, UZ_CMD_OK);
    g_assert_cmpint(qp_destroy(&t.n, rssq), ==, UZ_CMD_BAD_HANDLE);
    for (w = 0; w < NWQ; w++) {
        g_assert_cmpint(qp_destroy(&t.n, t.wq[w]->qpn), ==, UZ_CMD_OK);
    }
    rss_stop(&t);
}

/*
 * The node moves to a new process (spec 7.4) with an RSS QP over the
 * WQs, its flow rule and a plain rule on another WQ: after the move
 * frames land where the hash and the rules say, and the table and the
 * rules still hold their QPs.
 */
static void test_migrate(void)
{
    const uint32_t dst = 0x0a000001, fields = UZ_RSS_F_SRC_IPV4 |
        UZ_RSS_F_DST_IPV4 | UZ_RSS_F_SRC_PORT_UDP | UZ_RSS_F_DST_PORT_UDP;
    uint32_t tbl[NWQ], rssq, id, id2, len, hits = 0, i, src;
    struct uz_rss_conf conf;
    uint8_t f[256], in[36];
    UzDev *devs[1];
    Rss t;
    int w;

    rss_start(&t);
    devs[0] = &t.n.d;
    for (i = 0; i < NWQ; i++) {
        tbl[i] = t.wq[(i + 3) % NWQ]->qpn;
    }
    conf = rss_conf(tbl, NWQ_LOG, fields);
    g_assert_cmpint(rss_try(&t.n, &conf, 0, &rssq), ==, UZ_CMD_OK);
    id = flow(&t.n, rssq, 4791);
    uz_qp_set_state(t.wq[NWQ], UZ_QPS_RTR);
    id2 = flow(&t.n, t.wq[NWQ]->qpn, 4792);

    uz_migrate(&t.m, devs, 1);

    for (i = 0; i < 12; i++) {
        src = 0x0b0c0d0e + i * 0x01020304;
        len = send_frame(&t, f, src, dst, UZ_FLOW_L4_UDP, 2000 + i, 4791);
        tuple(in, src, dst, true, 2000 + i, 4791);
        w = wq_index(&t, tbl[toeplitz(ms_key, in, 12) & (NWQ - 1)]);
        hits |= 1u << w;
        wq_got(&t, w, f, len);
    }
    g_assert_cmpint(ctpop32(hits), >, 1);
    len = send_frame(&t, f, 0x05050505, dst, UZ_FLOW_L4_UDP, 7, 4792);
    wq_got(&t, NWQ, f, len);
    uz_cq_assert_empty(t.cq, 10);

    /* The table holds its WQs, the rule its RSS QP, as before. */
    g_assert_cmpint(qp_destroy(&t.n, t.wq[0]->qpn), ==, UZ_CMD_BUSY);
    g_assert_cmpint(qp_destroy(&t.n, rssq), ==, UZ_CMD_BUSY);
    g_assert_cmpint(qp_destroy(&t.n, t.wq[NWQ]->qpn), ==, UZ_CMD_BUSY);
    flow_destroy(&t.n, id);
    flow_destroy(&t.n, id2);
    g_assert_cmpint(qp_destroy(&t.n, rssq), ==, UZ_CMD_OK);
    for (w = 0; w <= NWQ; w++) {
        g_assert_cmpint(qp_destroy(&t.n, t.wq[w]->qpn), ==, UZ_CMD_OK);
    }
    rss_stop(&t);
}

/* What CREATE_QP refuses for RSS and NO_SQ, each with its status. */
static void test_bad(void)
{
    uint32_t tbl[2], qpn, pdn = 0, uctx;
    struct uz_cmd_create_qp c = { .srqn = cpu_to_le32(UZ_NO_SRQ),
                                  .type = UZ_QPT_RC, .flags = UZ_QPF_NO_SQ,
                                  .sq_log_depth = 4, .rq_log_depth = 4,
                                  .sq_log_wqe_size = 6,
                                  .rq_log_wqe_size = 6 };
    struct uz_rss_conf conf;
    struct uz_admin_cqe cqe;
    UzQp *rc;
    g_autofree char *log = NULL;
    Rss t;

    rss_start(&t);
    tbl[0] = t.wq[0]->qpn;
    tbl[1] = t.wq[1]->qpn;

    conf = rss_conf(tbl, 1, UZ_RSS_F_SRC_IPV6);
    conf.log_size = UZ_RSS_LOG_MAX + 1;
    g_assert_cmpint(rss_try(&t.n, &conf, 0, &qpn), ==, UZ_CMD_BAD_PARAM);
    conf = rss_conf(tbl, 1, UZ_RSS_F_SRC_IPV6);
    conf.func = 0;
    g_assert_cmpint(rss_try(&t.n, &conf, 0, &qpn), ==, UZ_CMD_BAD_PARAM);
    conf.func = UZ_RSS_TOEPLITZ + 1;
    g_assert_cmpint(rss_try(&t.n, &conf, 0, &qpn), ==, UZ_CMD_BAD_PARAM);
    conf = rss_conf(tbl, 1, UZ_RSS_F_DST_PORT_UDP << 1);
    g_assert_cmpint(rss_try(&t.n, &conf, 0, &qpn), ==, UZ_CMD_BAD_PARAM);
    g_assert_cmpint(rss_try(&t.n, &conf, 1ull << 50, &qpn), ==,
                    UZ_CMD_BAD_ADDR);

    /* Entries: raw QPs of this context only, every one of 2^log_size. */
    rc = uz_qp_create(&t.n, UZ_QPT_RC, NULL, NULL, NULL, 0);
    tbl[1] = rc->qpn;
    conf = rss_conf(tbl, 1, 0);
    g_assert_cmpint(rss_try(&t.n, &conf, 0, &qpn), ==, UZ_CMD_BAD_HANDLE);
    tbl[1] = 0x3fff;
    conf = rss_conf(tbl, 1, 0);
    g_assert_cmpint(rss_try(&t.n, &conf, 0, &qpn), ==, UZ_CMD_BAD_HANDLE);
    conf = rss_conf(tbl, 0, 0);
    conf.qpn[1] = cpu_to_le32(0x3fff);          /* beyond the table */
    g_assert_cmpint(rss_try(&t.n, &conf, 0, &qpn), ==, UZ_CMD_OK);
    g_assert_cmpint(qp_destroy(&t.n, qpn), ==, UZ_CMD_OK);
    /* Another context's RSS QP over this context's WQ. */
    g_assert_cmpint(uz_cmd(&t.n, UZ_CMD_CREATE_UCTX, NULL, 0, &cqe), ==,
                    UZ_CMD_OK);
    uctx = le32_to_cpu(cqe.out0);
    t.n.uctx = uctx;
    pdn = t.n.pdn;
    t.n.pdn = uz_pd_alloc(&t.n);
    g_assert_cmpint(rss_try(&t.n, &conf, 0, &qpn), ==, UZ_CMD_BAD_HANDLE);
    t.n.uctx = 0;
    t.n.pdn = pdn;

    /* NO_SQ is a raw QP's alone. */
    c.pdn = cpu_to_le32(t.n.pdn);
    c.send_cqn = c.recv_cqn = cpu_to_le32(t.cq->cqn);
    c.sq_addr = c.rq_addr = cpu_to_le64(uz_alloc(&t.n.d, 16 << 9));
    g_assert_cmpint(uz_cmd(&t.n, UZ_CMD_CREATE_QP, &c, sizeof(c), NULL), ==,
                    UZ_CMD_BAD_PARAM);
    c.type = UZ_QPT_UD;
    g_assert_cmpint(uz_cmd(&t.n, UZ_CMD_CREATE_QP, &c, sizeof(c), NULL), ==,
                    UZ_CMD_BAD_PARAM);
    /* ... whose send CQ and SQ fields are not looked at. */
    c.type = UZ_QPT_RAW;
    c.send_cqn = cpu_to_le32(0xffff);
    c.sq_log_depth = 0;
    c.sq_addr = cpu_to_le64(1ull << 50);
    g_assert_cmpint(uz_cmd(&t.n, UZ_CMD_CREATE_QP, &c, sizeof(c), &cqe), ==,
                    UZ_CMD_OK);
    g_assert_cmphex(le32_to_cpu(cqe.out1), ==, 0);
    g_assert_cmpint(qp_destroy(&t.n, le32_to_cpu(cqe.out0)), ==, UZ_CMD_OK);
    /* Receive WQEs of up to 512 bytes: max_sge (16) SGEs fit. */
    c.rq_log_wqe_size = 10;
    g_assert_cmpint(uz_cmd(&t.n, UZ_CMD_CREATE_QP, &c, sizeof(c), NULL), ==,
                    UZ_CMD_BAD_PARAM);
    c.rq_log_wqe_size = 9;
    g_assert_cmpint(uz_cmd(&t.n, UZ_CMD_CREATE_QP, &c, sizeof(c), &cqe), ==,
                    UZ_CMD_OK);
    g_assert_cmpint(qp_destroy(&t.n, le32_to_cpu(cqe.out0)), ==, UZ_CMD_OK);

    log = uz_machine_log(&t.m);
    g_assert(strstr(log, "RSS: function 0"));
    g_assert(strstr(log, "is no raw QP of context"));
    rss_stop(&t);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qtest_add_func("/uzura/rss/toeplitz", test_toeplitz);
    qtest_add_func("/uzura/rss/spread", test_spread);
    qtest_add_func("/uzura/rss/bad", test_bad);
    qtest_add_func("/uzura/rss/migrate", test_migrate);
    return g_test_run();
}
