/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uzura: raw packet QPs and flow rules (device 0.17, UZ_CAP_RAW, spec
 * 8.18).  A raw QP's SEND is a whole Ethernet frame: to a group it goes
 * on the link and to this NIC's own rules, to the NIC's own MAC only to
 * its rules.  Every frame is matched against the rules first; each raw
 * QP with a matching rule gets it once, and nothing else sees it.
 */
#include "uzura-pair.h"

#define FRAME_MAX   256

static const uint8_t group_mac[6] = { 0x01, 0x50, 0x56, 0x19, 0x20, 0xa7 };
static const uint8_t uz0_mac[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x50 };
static const uint8_t src_mac[6] = { 0x24, 0x8a, 0x07, 0xa5, 0x28, 0xc8 };
static const uint8_t ones[16] = {
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
};

typedef struct Raw {
    UzNode *n;
    UzQp *qp;
    UzMr *mr;                   /* receive buffers at 0, frames sent at 8K */
    uint64_t next_id;           /* of the next receive WQE posted */
    uint64_t got_id;            /* ... and completed */
} Raw;

/* A raw QP on @n, RESET -> INIT (port) -> RTR -> RTS. */
static void raw_up(Raw *r, UzNode *n)
{
    struct uz_qp_attr a = { .state = UZ_QPS_INIT, .port = 1 };

    r->n = n;
    r->qp = uz_qp_create(n, UZ_QPT_RAW, NULL, NULL, NULL, 0);
    r->mr = uz_mr_reg(n, 16384, UZ_ACCESS_LOCAL_WRITE);
    r->next_id = r->got_id = 0x100;
    g_assert_cmpint(uz_qp_modify(r->qp, UZ_QP_ATTR_STATE | UZ_QP_ATTR_PORT,
                                 &a), ==, UZ_CMD_OK);
    uz_qp_set_state(r->qp, UZ_QPS_RTR);
    uz_qp_set_state(r->qp, UZ_QPS_RTS);
}

static void raw_recv(Raw *r, uint32_t len)
{
    UzSge s = uz_mr_sge(r->mr, 0, len);

    uz_post_recv(r->qp, r->next_id++, &s, 1);
}

/* Send @len bytes of @frame from @r; completes with @status. */
static void raw_send(Raw *r, const uint8_t *frame, uint32_t len,
                     uint8_t status)
{
    UzSge s = uz_mr_sge(r->mr, 8192, len);
    UzWr wr = { .wr_id = 0x5000 + len, .opcode = UZ_WR_SEND,
                .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1 };
    struct uz_cqe c;

    uz_mr_write(r->mr, 8192, frame, len);
    uz_post_send(r->qp, &wr);
    uz_cq_wait_clock(r->qp->scq, &c, STEP_NS, 100);
    uz_cqe_expect(&c, wr.wr_id, UZ_WC_SEND, status, 0, r->qp->qpn);
}

/* @r received @frame (@len bytes) in its next receive WQE. */
static void raw_got(Raw *r, const uint8_t *frame, uint32_t len)
{
    struct uz_cqe c;

    uz_cq_wait_clock(r->qp->rcq, &c, STEP_NS, 100);
    uz_cqe_expect(&c, r->got_id++, UZ_WC_RECV, UZ_WC_STATUS_SUCCESS, 0,
                  r->qp->qpn);
    g_assert_cmpuint(c.byte_len, ==, len);
    uz_assert_mr(r->mr, 0, frame, len, "raw frame received");
}

static void raw_none(Raw *r)
{
    qtest_clock_step(r->n->d.qts, STEP_NS);
    uz_cq_assert_empty(r->qp->rcq, 10);
}

static uint8_t flow_try(Raw *r, const struct uz_flow_spec *s, uint32_t *id)
{
    uint64_t buf = uz_alloc(&r->n->d, sizeof(*s));
    struct uz_cmd_create_flow c = {
        .spec_addr = cpu_to_le64(buf), .qpn = cpu_to_le32(r->qp->qpn),
        .uctx = cpu_to_le32(r->qp->uctx),
    };
    struct uz_admin_cqe cqe;
    uint8_t st;

    qtest_memwrite(r->n->d.qts, buf, s, sizeof(*s));
    st = uz_cmd(r->n, UZ_CMD_CREATE_FLOW, &c, sizeof(c), &cqe);
    *id = le32_to_cpu(cqe.out0);
    return st;
}

static uint32_t flow(Raw *r, const struct uz_flow_spec *s)
{
    uint32_t id;

    g_assert_cmpint(flow_try(r, s, &id), ==, UZ_CMD_OK);
    return id;
}

static uint8_t flow_destroy(Raw *r, uint32_t id)
{
    struct uz_cmd_obj c = { .handle = cpu_to_le32(id),
                            .uctx = cpu_to_le32(r->qp->uctx) };

    return uz_cmd(r->n, UZ_CMD_DESTROY_FLOW, &c, sizeof(c), NULL);
}

/* The group MAC and our source, both masked whole: the tests' rule. */
static struct uz_flow_spec spec_eth(void)
{
    struct uz_flow_spec s = { .ethertype = cpu_to_be16(0x0800),
                              .ethertype_mask = 0xffff };

    memcpy(s.dmac, group_mac, 6);
    memcpy(s.dmac_mask, ones, 6);
    memcpy(s.smac, src_mac, 6);
    memcpy(s.smac_mask, ones, 6);
    return s;
}

/*
 * An Ethernet frame (VLAN @vid if non-zero) from src_mac to @dmac with
 * IPv4 (@v6 false) or IPv6, protocol @proto, ports 1234 -> @dport and
 * a payload; returns its length.
 */
static uint32_t frame_build(uint8_t *f, const uint8_t *dmac, uint16_t vid,
                            bool v6, uint8_t proto, uint16_t dport)
{
    uint8_t *p = f;
    uint32_t l4len = (proto == UZ_FLOW_L4_TCP ? 20 : 8) + 32;

    memcpy(p, dmac, 6);
    memcpy(p + 6, src_mac, 6);
    p += 12;
    if (vid) {
        stw_be_p(p, 0x8100);
        stw_be_p(p + 2, vid);
        p += 4;
    }
    stw_be_p(p, v6 ? 0x86dd : 0x0800);
    p += 2;
    if (v6) {
        memset(p, 0, 40);
        p[0] = 0x60;
        stw_be_p(p + 4, l4len);
        p[6] = proto;
        p[7] = 64;
        memset(p + 8, 0xa0, 16);
        memset(p + 24, 0xb0, 16);
        p += 40;
    } else {
        memset(p, 0, 20);
        p[0] = 0x45;
        stw_be_p(p + 2, 20 + l4len);
        p[8] = 64;
        p[9] = proto;
        stl_be_p(p + 12, 0x01010101);   /* 1.1.1.1 */
        stl_be_p(p + 16, 0x02020202);   /* 2.2.2.2 */
        p += 20;
    }
    memset(p, 0, l4len);
    stw_be_p(p, 1234);
    stw_be_p(p + 2, dport);
    uz_pattern(p + l4len - 32, 32, dport);
    return p + l4len - f;
}

/*
 * A frame to a group from uz0's raw QP reaches uz0's own rule and, over
 * the link, uz1's; to uz0's own MAC only uz0's.  No rule, no delivery;
 * a rule destroyed delivers no more; from the link, a rule sees only
 * what the MAC filter passes.
 */
static void test_loop(void)
{
    uint8_t f[FRAME_MAX], own[FRAME_MAX];
    struct uz_flow_spec s = spec_eth();
    uint32_t len, olen, id0, id1;
    Raw a, b, c;
    Pair p;

    pair_start(&p);
    g_assert(uz_rd(&p.n[0].d, UZ_REG_CAPS) & UZ_CAP_RAW);
    raw_up(&a, &p.n[0]);
    raw_up(&b, &p.n[0]);
    raw_up(&c, &p.n[1]);
    len = frame_build(f, group_mac, 0, false, UZ_FLOW_L4_UDP, 5678);

    /* No rule yet: the frame goes out, nothing takes it. */
    raw_recv(&b, FRAME_MAX);
    raw_recv(&c, FRAME_MAX);
    raw_send(&a, f, len, UZ_WC_STATUS_SUCCESS);
    raw_none(&b);
    raw_none(&c);

    id0 = flow(&b, &s);
    id1 = flow(&c, &s);
    raw_send(&a, f, len, UZ_WC_STATUS_SUCCESS);
    raw_got(&b, f, len);
    raw_got(&c, f, len);

    /* To uz0's own MAC: uz0's rule only. */
    olen = frame_build(own, uz0_mac, 0, false, UZ_FLOW_L4_UDP, 5678);
    s = spec_eth();
    memcpy(s.dmac, own, 6);
    g_assert_cmpint(flow_destroy(&b, id0), ==, UZ_CMD_OK);
    g_assert_cmpint(flow_destroy(&b, id0), ==, UZ_CMD_BAD_HANDLE);
    id0 = flow(&b, &s);
    g_assert_cmpint(flow_destroy(&c, id1), ==, UZ_CMD_OK);
    id1 = flow(&c, &s);
    raw_recv(&b, FRAME_MAX);
    raw_recv(&c, FRAME_MAX);
    raw_send(&a, own, olen, UZ_WC_STATUS_SUCCESS);
    raw_got(&b, own, olen);
    raw_none(&c);
    g_assert_cmpint(flow_destroy(&b, id0), ==, UZ_CMD_OK);
    g_assert_cmpint(flow_destroy(&c, id1), ==, UZ_CMD_OK);

    /*
     * A rule open to any destination takes, from the link, what the MAC
     * filter lets through: uz1's own MAC, not another host's.
     */
    s = spec_eth();
    memset(s.dmac_mask, 0, 6);
    id1 = flow(&c, &s);
    own[5] = 0x59;                      /* 52:54:00:12:34:59, no one's */
    raw_send(&a, own, olen, UZ_WC_STATUS_SUCCESS);
    raw_none(&c);
    own[5] = 0x51;                      /* uz1 */
    raw_send(&a, own, olen, UZ_WC_STATUS_SUCCESS);
    raw_got(&c, own, olen);
    g_assert_cmpint(flow_destroy(&c, id1), ==, UZ_CMD_OK);
    pair_stop(&p);
}

/*
 * A VLAN rule of @c's: tag 7 matches, tag 8 and no tag do not; @c has a
 * receive WQE posted.
 */
static void match_vlan(Raw *a, Raw *c)
{
    struct uz_flow_spec s = spec_eth();
    uint8_t f[FRAME_MAX], g2[6];
    uint32_t len;

    s.vlan_tci = cpu_to_be16(7);
    s.vlan_tci_mask = cpu_to_be16(0x0fff);
    memset(s.smac_mask, 0, 6);
    s.dmac[5] = 0xa8;
    flow(c, &s);
    memcpy(g2, group_mac, 6);
    g2[5] = 0xa8;
    len = frame_build(f, g2, 8, false, UZ_FLOW_L4_UDP, 1);
    raw_send(a, f, len, UZ_WC_STATUS_SUCCESS);
    len = frame_build(f, g2, 0, false, UZ_FLOW_L4_UDP, 1);
    raw_send(a, f, len, UZ_WC_STATUS_SUCCESS);
    raw_none(c);
    len = frame_build(f, g2, 7, false, UZ_FLOW_L4_UDP, 1);
    raw_send(a, f, len, UZ_WC_STATUS_SUCCESS);
    raw_got(c, f, len);
}

/*
 * Each field of a rule: IPv4 and IPv6 addresses and protocol, UDP and
 * TCP ports, the VLAN tag.  A frame two rules of one QP match arrives
 * once; two QPs' rules matching one frame both get it.
 */
static void test_match(void)
{
    uint8_t f[FRAME_MAX];
    struct uz_flow_spec s;
    uint32_t len;
    Raw a, b, c;
    Pair p;

    pair_start(&p);
    raw_up(&a, &p.n[0]);
    raw_up(&b, &p.n[0]);
    raw_up(&c, &p.n[0]);

    /* b: IPv4 1.1.1.1 -> 2.2.2.2, UDP to port 5678. */
    s = spec_eth();
    s.ip_ver = 4;
    stl_be_p(s.src_ip, 0x01010101);
    stl_be_p(s.dst_ip, 0x02020202);
    memcpy(s.src_ip_mask, ones, 4);
    memcpy(s.dst_ip_mask, ones, 4);
    s.ip_proto = UZ_FLOW_L4_UDP;
    s.ip_proto_mask = 0xff;
    s.l4 = UZ_FLOW_L4_UDP;
    s.dport = cpu_to_be16(5678);
    s.dport_mask = 0xffff;
    flow(&b, &s);
    /* ... and a wider rule of the same QP: the Ethernet header only. */
    s = spec_eth();
    flow(&b, &s);
    /* c: TCP to port 5678 over IPv4 or IPv6 (ethertype left open). */
    s = spec_eth();
    s.ethertype_mask = 0;
    s.l4 = UZ_FLOW_L4_TCP;
    s.dport = cpu_to_be16(5678);
    s.dport_mask = 0xffff;
    flow(&c, &s);

    raw_recv(&b, FRAME_MAX);
    raw_recv(&b, FRAME_MAX);
    raw_recv(&c, FRAME_MAX);
    raw_recv(&c, FRAME_MAX);

    /* UDP to 5678: b once (two rules), not c. */
    len = frame_build(f, group_mac, 0, false, UZ_FLOW_L4_UDP, 5678);
    raw_send(&a, f, len, UZ_WC_STATUS_SUCCESS);
    raw_got(&b, f, len);
    raw_none(&b);
    raw_none(&c);
    /* TCP over IPv4 to 5678: b by its Ethernet rule, and c. */
    len = frame_build(f, group_mac, 0, false, UZ_FLOW_L4_TCP, 5678);
    raw_send(&a, f, len, UZ_WC_STATUS_SUCCESS);
    raw_got(&b, f, len);
    raw_got(&c, f, len);
    /* TCP over IPv6 to 5678: c only (b's rules want IPv4). */
    len = frame_build(f, group_mac, 0, true, UZ_FLOW_L4_TCP, 5678);
    raw_recv(&b, FRAME_MAX);
    raw_recv(&c, FRAME_MAX);
    raw_send(&a, f, len, UZ_WC_STATUS_SUCCESS);
    raw_got(&c, f, len);
    raw_none(&b);
    /* TCP to another port: b's Ethernet rule; UDP over IPv6: nobody. */
    len = frame_build(f, group_mac, 0, false, UZ_FLOW_L4_TCP, 5679);
    raw_send(&a, f, len, UZ_WC_STATUS_SUCCESS);
    raw_got(&b, f, len);
    len = frame_build(f, group_mac, 0, true, UZ_FLOW_L4_UDP, 5678);
    raw_send(&a, f, len, UZ_WC_STATUS_SUCCESS);
    raw_none(&b);
    raw_none(&c);

    match_vlan(&a, &c);
    pair_stop(&p);
}

/*
 * 13 bytes is no frame; MTU 1500 + 18 is the largest there is; a raw
 * QP sends nothing but SENDs.  Each failure takes @a to ERR, and a
 * fresh @a replaces it.
 */
static void bad_sends(Pair *p, Raw *a)
{
    uint8_t f[FRAME_MAX] = { 0 };
    g_autofree uint8_t *big = g_malloc0(1600);
    UzSge sg;
    UzWr wr;

    raw_send(a, f, 13, UZ_WC_STATUS_LOC_LEN_ERR);
    g_assert_cmpint(uz_qp_state(a->qp), ==, UZ_QPS_ERR);
    raw_up(a, &p->n[0]);
    memcpy(big, group_mac, 6);
    uz_mr_write(a->mr, 8192, big, 1519);
    sg = uz_mr_sge(a->mr, 8192, 1519);
    wr = (UzWr) { .wr_id = 0x77, .opcode = UZ_WR_SEND,
                  .flags = UZ_WQE_F_SIGNALED, .sge = &sg, .num_sge = 1 };
    uz_post_send(a->qp, &wr);
    uz_sq_err(a->qp, 0x77, UZ_WC_SEND, UZ_WC_STATUS_LOC_LEN_ERR, 0);
    raw_up(a, &p->n[0]);
    wr = (UzWr) { .wr_id = 0x78, .opcode = UZ_WR_RDMA_WRITE,
                  .flags = UZ_WQE_F_SIGNALED, .sge = &sg, .num_sge = 1,
                  .rkey = a->mr->key };
    sg.length = 64;
    uz_post_send(a->qp, &wr);
    uz_sq_err(a->qp, 0x78, UZ_WC_RDMA_WRITE, UZ_WC_STATUS_LOC_QP_OP_ERR,
              UZ_VERR_BAD_WQE);
    raw_up(a, &p->n[0]);
}

/*
 * Rules: an RC QP, another context, bad fields, an unreadable spec; a
 * QP with a rule does not go, nor does another context destroy the
 * rule.  Returns that rule of @b's, which stays.
 */
static uint32_t bad_rules(Pair *p, Raw *b)
{
    struct uz_flow_spec s = spec_eth();
    struct uz_cmd_create_flow cf = {
        .spec_addr = cpu_to_le64(0xfff0000000ull),
    };
    struct uz_cmd_obj co = { 0 };
    uint32_t id;

    g_assert_cmpint(flow_try(&(Raw) { .n = &p->n[0], .qp = p->qa }, &s, &id),
                    ==, UZ_CMD_BAD_HANDLE);
    s.ip_ver = 5;
    g_assert_cmpint(flow_try(b, &s, &id), ==, UZ_CMD_BAD_PARAM);
    s = spec_eth();
    s.l4 = 1;
    g_assert_cmpint(flow_try(b, &s, &id), ==, UZ_CMD_BAD_PARAM);
    s = spec_eth();
    s.reserved[19] = 1;
    g_assert_cmpint(flow_try(b, &s, &id), ==, UZ_CMD_BAD_PARAM);
    cf.qpn = cpu_to_le32(b->qp->qpn);
    g_assert_cmpint(uz_cmd(&p->n[0], UZ_CMD_CREATE_FLOW, &cf, sizeof(cf),
                           NULL), ==, UZ_CMD_BAD_ADDR);
    cf.uctx = cpu_to_le32(3);
    g_assert_cmpint(uz_cmd(&p->n[0], UZ_CMD_CREATE_FLOW, &cf, sizeof(cf),
                           NULL), ==, UZ_CMD_BAD_HANDLE);
    s = spec_eth();
    id = flow(b, &s);
    co.handle = cpu_to_le32(b->qp->qpn);
    g_assert_cmpint(uz_cmd(&p->n[0], UZ_CMD_DESTROY_QP, &co, sizeof(co),
                           NULL), ==, UZ_CMD_BUSY);
    co.handle = cpu_to_le32(id);
    co.uctx = cpu_to_le32(1);
    g_assert_cmpint(uz_cmd(&p->n[0], UZ_CMD_DESTROY_FLOW, &co, sizeof(co),
                           NULL), ==, UZ_CMD_BAD_HANDLE);
    return id;
}

/* Too small a WQE: dropped, and the WQE takes the next frame. */
static void bad_small_wqe(Raw *a, Raw *b)
{
    uint8_t f[FRAME_MAX] = { 0 };
    uint32_t len;

    len = frame_build(f, group_mac, 0, false, UZ_FLOW_L4_UDP, 5678);
    raw_recv(b, len - 1);
    raw_send(a, f, len, UZ_WC_STATUS_SUCCESS);
    raw_none(b);
    len = frame_build(f, group_mac, 0, false, UZ_FLOW_L4_UDP, 5);
    len -= 10;
    raw_send(a, f, len, UZ_WC_STATUS_SUCCESS);
    raw_got(b, f, len);
    g_assert_cmpint(uz_qp_state(b->qp), ==, UZ_QPS_RTS);
}

/* A UD datagram for a raw QP's number on uz1 is no one's. */
static void bad_ud_for_raw(Pair *p)
{
    uint64_t no_qp = uz_counter(&p->m, 1, "rx_no_qp");
    UzQp *ud = uz_qp_create(&p->n[0], UZ_QPT_UD, NULL, NULL, NULL, 0);
    UzMr *m = uz_mr_reg(&p->n[0], 4096, UZ_ACCESS_LOCAL_WRITE);
    UzSge us = uz_mr_sge(m, 0, 64);
    UzWr uw = { .wr_id = 0x99, .opcode = UZ_WR_SEND,
                .flags = UZ_WQE_F_SIGNALED, .sge = &us, .num_sge = 1,
                .ahn = uz_ah_create(&p->n[0], 1),
                .remote_qkey = 0x11 };
    Raw rb;

    raw_up(&rb, &p->n[1]);
    raw_recv(&rb, FRAME_MAX);
    uw.remote_qpn = rb.qp->qpn;
    uz_ud_up(ud, 0x11, 0);
    uz_post_send(ud, &uw);
    uz_sq_done(ud, 0x99, UZ_WC_SEND, 64);
    uz_counter_wait(&p->n[1], "rx_no_qp", no_qp + 1);
    raw_none(&rb);
}

/*
 * Bad input: frames too short or too long, other opcodes, rules on
 * other QPs or with bad fields, a QP with rules destroyed, a receive WQE
 * too small (the frame is dropped, the WQE kept), RoCE for a raw QP, a
 * full rule table.  One machine takes it all, a and b all along.
 */
static void test_bad(void)
{
    struct uz_flow_spec s = spec_eth();
    uint32_t id, ids[UZ_FLOW_MAX], i;
    struct uz_cmd_obj co = { 0 };
    Raw a, b;
    Pair p;

    pair_start(&p);
    raw_up(&a, &p.n[0]);
    raw_up(&b, &p.n[0]);

    bad_sends(&p, &a);
    id = bad_rules(&p, &b);
    bad_small_wqe(&a, &b);
    bad_ud_for_raw(&p);

    /* The rule table is the device's: 256 in all. */
    for (i = 1; i < UZ_FLOW_MAX; i++) {
        g_assert_cmpint(flow_try(&a, &s, &ids[i]), ==, UZ_CMD_OK);
    }
    g_assert_cmpint(flow_try(&a, &s, &ids[0]), ==, UZ_CMD_NO_RESOURCES);
    for (i = 1; i < UZ_FLOW_MAX; i++) {
        g_assert_cmpint(flow_destroy(&a, ids[i]), ==, UZ_CMD_OK);
    }
    g_assert_cmpint(flow_destroy(&b, id), ==, UZ_CMD_OK);
    co.handle = cpu_to_le32(b.qp->qpn);
    co.uctx = 0;
    g_assert_cmpint(uz_cmd(&p.n[0], UZ_CMD_DESTROY_QP, &co, sizeof(co), NULL),
                    ==, UZ_CMD_OK);
    pair_stop(&p);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qtest_add_func("/uzura/raw/loop", test_loop);
    qtest_add_func("/uzura/raw/match", test_match);
    qtest_add_func("/uzura/raw/bad", test_bad);
    return g_test_run();
}
