/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uzura: UD multicast (spec 8.14).  UD QPs attach to IPv4-mapped
 * multicast GIDs; a UD send to QPN 0xffffff addressed to a group reaches
 * every attached QP that can receive it, on the sender's NIC (through
 * the loopback) and on the others (through the link), and no QP that is
 * not attached.  The group table and its limits, and what the commands
 * refuse, are checked against the register interface.
 */
#include "uzura-verbs.h"

#define QKEY        0x11110000u
#define GROUP       0xe6010203u     /* 230.1.2.3 */

typedef struct Mc {
    UzMachine m;
    UzNode n[2];
} Mc;

static void mc_start(Mc *t)
{
    memset(t, 0, sizeof(*t));
    uz_machine_start(&t->m, 2, NULL);
    uz_node_start(&t->n[0], &t->m, 0);
    uz_node_start(&t->n[1], &t->m, 1);
}

static void mc_stop(Mc *t)
{
    uz_node_stop(&t->n[0]);
    uz_node_stop(&t->n[1]);
    uz_machine_stop(&t->m);
}

/* ::ffff:a.b.c.d */
static void mc_gid(uint8_t *gid, uint32_t addr)
{
    memset(gid, 0, 16);
    gid[10] = gid[11] = 0xff;
    stl_be_p(gid + 12, addr);
}

static uint8_t mc_cmd(UzQp *qp, uint8_t op, uint32_t addr)
{
    struct uz_cmd_mcast c = {
        .qpn = cpu_to_le32(qp->qpn), .uctx = cpu_to_le32(qp->n->uctx),
    };

    mc_gid(c.mgid, addr);
    return uz_cmd(qp->n, op, &c, sizeof(c), NULL);
}

static void mc_destroy(UzQp *qp)
{
    struct uz_cmd_obj c = {
        .handle = cpu_to_le32(qp->qpn), .uctx = cpu_to_le32(qp->n->uctx),
    };

    g_assert_cmpint(uz_cmd(qp->n, UZ_CMD_DESTROY_QP, &c, sizeof(c), NULL),
                    ==, UZ_CMD_OK);
}

static void mc_attach(UzQp *qp, uint32_t addr)
{
    g_assert_cmpint(mc_cmd(qp, UZ_CMD_ATTACH_MCAST, addr), ==, UZ_CMD_OK);
}

static UzQp *mc_ud(UzNode *n, uint32_t qkey)
{
    UzQp *qp = uz_qp_create(n, UZ_QPT_UD, NULL, NULL, NULL, 0);

    uz_ud_up(qp, qkey, 0);
    return qp;
}

/* An AH to @addr: the IPv4 multicast MAC 01:00:5e and the low 23 bits. */
static uint8_t mc_ah_try(UzNode *n, uint32_t addr, bool group_mac,
                         uint32_t *ahn)
{
    struct uz_cmd_create_ah c = {
        .hop_limit = 64, .pdn = cpu_to_le32(n->pdn),
        .uctx = cpu_to_le32(n->uctx),
        .dmac = { 0x01, 0x00, 0x5e, (addr >> 16) & 0x7f, addr >> 8, addr },
    };
    struct uz_admin_cqe cqe;
    uint8_t st;

    if (!group_mac) {
        uz_node_mac(1, c.dmac);
    }
    mc_gid(c.dgid, addr);
    uz_node_gid(n->idx, c.sgid);
    st = uz_cmd(n, UZ_CMD_CREATE_AH, &c, sizeof(c), &cqe);
    *ahn = le32_to_cpu(cqe.out0);
    return st;
}

static uint32_t mc_ah(UzNode *n, uint32_t addr)
{
    uint32_t ahn;

    g_assert_cmpint(mc_ah_try(n, addr, true, &ahn), ==, UZ_CMD_OK);
    return ahn;
}

/* Send @len bytes of pattern @seed from @qp to the group of @ahn. */
static void mc_send(UzQp *qp, UzMr *mr, uint32_t ahn, uint32_t len,
                    uint32_t seed)
{
    uint8_t data[256];
    UzSge s = uz_mr_sge(mr, 0, len);
    UzWr wr = {
        .wr_id = 0x5e00 + seed, .opcode = UZ_WR_SEND,
        .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1, .ahn = ahn,
        .remote_qpn = UZ_MCAST_QPN, .remote_qkey = QKEY,
    };
    struct uz_cqe c;

    uz_pattern(data, len, seed);
    uz_mr_write(mr, 0, data, len);
    uz_post_send(qp, &wr);
    uz_cq_wait(qp->scq, &c);
    uz_expect_sq(&c, wr.wr_id, UZ_WC_SEND, qp, len);
}

/* @qp received @len bytes of pattern @seed from @src into @mr. */
static void mc_got(UzQp *qp, UzMr *mr, UzQp *src, uint32_t len,
                   uint32_t seed)
{
    uint8_t want[256], got[40 + 256];
    struct uz_cqe c;

    uz_cq_wait(qp->rcq, &c);
    uz_expect_rq(&c, 0x7e00 + seed, UZ_WC_RECV, qp->qpn, 40 + len,
                 UZ_WC_F_GRH | UZ_WC_F_IPV4, 0, src->qpn);
    uz_mr_read(mr, 0, got, 40 + len);
    /* The GRH area's IPv4 header names the group as destination. */
    g_assert_cmphex((uint32_t)ldl_be_p(got + 20 + 16), ==, GROUP);
    uz_pattern(want, len, seed);
    uz_assert_bytes(got + 40, want, len, "multicast payload");
}

static void mc_post_recv(UzQp *qp, UzMr *mr, uint32_t seed)
{
    UzSge r = uz_mr_sge(mr, 0, 40 + 256);

    uz_post_recv(qp, 0x7e00 + seed, &r, 1);
}

/*
 * What ATTACH and DETACH refuse; 64 groups of 16 QPs; a destroyed QP
 * leaves its groups; an AH takes a group MAC only for a group GID.
 */
static void test_attach(void)
{
    Mc t;
    UzNode *n = &t.n[0];
    UzQp *ud, *rc, *q[UZ_MCAST_MAX_QP_ATTACH + 1];
    struct uz_cmd_mcast c = { 0 };
    struct uz_device_attr attr;
    uint32_t ahn;
    int i;

    mc_start(&t);
    uz_query_device(n, &attr);
    g_assert_cmpuint(le32_to_cpu(attr.max_mcast_grp), ==, UZ_MCAST_MAX_GRP);
    g_assert_cmpuint(le32_to_cpu(attr.max_mcast_qp_attach), ==,
                     UZ_MCAST_MAX_QP_ATTACH);
    ud = mc_ud(n, QKEY);
    rc = uz_qp_create(n, UZ_QPT_RC, NULL, NULL, NULL, 0);

    /* Only a UD QP of the caller's context, only an IPv4 group. */
    g_assert_cmpint(mc_cmd(rc, UZ_CMD_ATTACH_MCAST, GROUP), ==,
                    UZ_CMD_BAD_PARAM);
    g_assert_cmpint(mc_cmd(ud, UZ_CMD_ATTACH_MCAST, 0x0a4d0001), ==,
                    UZ_CMD_BAD_PARAM);
    c.qpn = cpu_to_le32(ud->qpn);
    c.uctx = cpu_to_le32(n->uctx + 1);
    mc_gid(c.mgid, GROUP);
    g_assert_cmpint(uz_cmd(n, UZ_CMD_ATTACH_MCAST, &c, sizeof(c), NULL), ==,
                    UZ_CMD_BAD_HANDLE);
    c.uctx = cpu_to_le32(n->uctx);
    c.mgid[0] = 0xff;               /* ff0e::ffff:230.1.2.3, IPv6 */
    c.mgid[1] = 0x0e;
    g_assert_cmpint(uz_cmd(n, UZ_CMD_ATTACH_MCAST, &c, sizeof(c), NULL), ==,
                    UZ_CMD_BAD_PARAM);

    /* Attaching twice is one attachment; detaching twice is refused. */
    mc_attach(ud, GROUP);
    mc_attach(ud, GROUP);
    g_assert_cmpint(mc_cmd(ud, UZ_CMD_DETACH_MCAST, GROUP), ==, UZ_CMD_OK);
    g_assert_cmpint(mc_cmd(ud, UZ_CMD_DETACH_MCAST, GROUP), ==,
                    UZ_CMD_BAD_PARAM);
    g_assert_cmpint(mc_cmd(ud, UZ_CMD_DETACH_MCAST, GROUP + 1), ==,
                    UZ_CMD_BAD_PARAM);

    /* 64 groups, then no more until one empties. */
    for (i = 0; i < UZ_MCAST_MAX_GRP; i++) {
        mc_attach(ud, GROUP + i);
    }
    g_assert_cmpint(mc_cmd(ud, UZ_CMD_ATTACH_MCAST, GROUP + i), ==,
                    UZ_CMD_NO_RESOURCES);
    g_assert_cmpint(mc_cmd(ud, UZ_CMD_DETACH_MCAST, GROUP + 7), ==,
                    UZ_CMD_OK);
    mc_attach(ud, GROUP + i);

    /* 16 QPs in a group, then no more. */
    for (i = 0; i < ARRAY_SIZE(q); i++) {
        q[i] = mc_ud(n, QKEY);
    }
    for (i = 0; i < UZ_MCAST_MAX_QP_ATTACH - 1; i++) {
        mc_attach(q[i], GROUP);
    }
    g_assert_cmpint(mc_cmd(q[i], UZ_CMD_ATTACH_MCAST, GROUP), ==,
                    UZ_CMD_NO_RESOURCES);
    mc_destroy(q[0]);
    mc_attach(q[i], GROUP);

    /* A destroyed QP leaves every group: 64 free entries again. */
    mc_destroy(ud);
    for (i = 1; i < UZ_MCAST_MAX_QP_ATTACH; i++) {
        mc_destroy(q[i]);
    }
    for (i = 0; i < UZ_MCAST_MAX_GRP; i++) {
        mc_attach(q[UZ_MCAST_MAX_QP_ATTACH], 0xe7000000u + i);
    }

    /* A group MAC with a group GID only, and the other way round. */
    g_assert_cmpint(mc_ah_try(n, GROUP, false, &ahn), ==, UZ_CMD_BAD_PARAM);
    g_assert_cmpint(mc_ah_try(n, 0x0a4d0002, true, &ahn), ==,
                    UZ_CMD_BAD_PARAM);
    g_assert_cmpint(mc_ah_try(n, GROUP, true, &ahn), ==, UZ_CMD_OK);
    mc_stop(&t);
}

/*
 * 8 bytes from @a0 to the group's address @ahn but a single QP's number
 * @qpn, with Q_Key QKEY + 1: the send completes.
 */
static void send_to_group_qpn(UzQp *a0, UzMr *ma0, uint32_t ahn,
                              uint32_t qpn)
{
    UzSge s = uz_mr_sge(ma0, 0, 8);
    UzWr wr = {
        .wr_id = 0x5eff, .opcode = UZ_WR_SEND,
        .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1,
        .ahn = ahn, .remote_qpn = qpn, .remote_qkey = QKEY + 1,
    };
    struct uz_cqe c;

    uz_post_send(a0, &wr);
    uz_cq_wait(a0->scq, &c);
    uz_expect_sq(&c, wr.wr_id, UZ_WC_SEND, a0, 8);
}

/*
 * One send reaches the attached QPs of both NICs, the sender's own
 * included, and nothing else; a wrong Q_Key or a missing receive WQE
 * loses that member's copy only; a detached QP gets no more.
 */
static void test_traffic(void)
{
    Mc t;
    UzQp *a0, *a1, *b0, *b1, *b2;
    UzMr *ma0, *ma1, *ma2, *mb0, *mb1, *mb2;
    uint32_t ahn;

    mc_start(&t);
    a0 = mc_ud(&t.n[0], QKEY);
    a1 = mc_ud(&t.n[0], QKEY);
    b0 = mc_ud(&t.n[1], QKEY);
    b1 = mc_ud(&t.n[1], QKEY);
    b2 = mc_ud(&t.n[1], QKEY);      /* not attached */
    ma0 = uz_mr_reg(&t.n[0], 4096, UZ_ACCESS_ALL);
    ma1 = uz_mr_reg(&t.n[0], 4096, UZ_ACCESS_ALL);
    ma2 = uz_mr_reg(&t.n[0], 4096, UZ_ACCESS_ALL);
    mb0 = uz_mr_reg(&t.n[1], 4096, UZ_ACCESS_ALL);
    mb1 = uz_mr_reg(&t.n[1], 4096, UZ_ACCESS_ALL);
    mb2 = uz_mr_reg(&t.n[1], 4096, UZ_ACCESS_ALL);
    mc_attach(a0, GROUP);
    mc_attach(a1, GROUP);
    mc_attach(b0, GROUP);
    mc_attach(b1, GROUP);
    ahn = mc_ah(&t.n[0], GROUP);

    mc_post_recv(a0, ma2, 1);       /* the sender's receive buffer */
    mc_post_recv(a1, ma1, 1);
    mc_post_recv(b0, mb0, 1);
    mc_post_recv(b1, mb1, 1);
    mc_post_recv(b2, mb2, 1);
    mc_send(a0, ma0, ahn, 200, 1);
    mc_got(b0, mb0, a0, 200, 1);
    mc_got(b1, mb1, a0, 200, 1);
    mc_got(a1, ma1, a0, 200, 1);
    mc_got(a0, ma2, a0, 200, 1);
    uz_cq_assert_empty(b2->rcq, 20);
    g_assert_cmpuint(uz_counter(&t.m, 0, "rx_mcast"), ==, 2);
    g_assert_cmpuint(uz_counter(&t.m, 1, "rx_mcast"), ==, 2);

    /* b1 takes another Q_Key, a0 has no receive WQE: the others get it. */
    mc_destroy(b1);
    b1 = mc_ud(&t.n[1], QKEY + 1);
    mc_attach(b1, GROUP);
    mc_post_recv(b1, mb1, 2);
    mc_post_recv(a1, ma1, 2);
    mc_post_recv(b0, mb0, 2);
    mc_send(a0, ma0, ahn, 77, 2);
    mc_got(a1, ma1, a0, 77, 2);
    mc_got(b0, mb0, a0, 77, 2);
    g_assert_cmpuint(uz_counter_wait(&t.n[1], "rx_qkey_errors", 1), ==, 1);
    g_assert_cmpuint(uz_counter_wait(&t.n[0], "rx_ud_no_wqe", 1), ==, 1);
    uz_cq_assert_empty(b1->rcq, 20);
    uz_cq_assert_empty(a0->rcq, 20);

    /* Detached, b0 receives no more; a1 still does. */
    g_assert_cmpint(mc_cmd(b0, UZ_CMD_DETACH_MCAST, GROUP), ==, UZ_CMD_OK);
    mc_post_recv(b0, mb0, 3);
    mc_post_recv(a1, ma1, 3);
    mc_send(a0, ma0, ahn, 5, 3);
    mc_got(a1, ma1, a0, 5, 3);
    uz_cq_assert_empty(b0->rcq, 20);
    /* Handed to b0 and b1, then b0 and b1 (its Q_Key refused), then b1. */
    g_assert_cmpuint(uz_counter(&t.m, 1, "rx_mcast"), ==, 2 + 2 + 1);
    g_assert_cmpuint(uz_counter(&t.m, 0, "rx_mcast"), ==, 2 + 2 + 2);

    /* A group address with a single QP's number reaches no QP. */
    mc_post_recv(b1, mb1, 4);
    mc_post_recv(a1, ma1, 4);
    send_to_group_qpn(a0, ma0, ahn, b1->qpn);
    g_assert_cmpuint(uz_counter_wait(&t.n[1], "rx_no_qp", 1), ==, 1);
    g_assert_cmpuint(uz_counter_wait(&t.n[0], "rx_no_qp", 1), ==, 1);
    uz_cq_assert_empty(b1->rcq, 20);
    uz_cq_assert_empty(a1->rcq, 20);
    mc_stop(&t);
}

/* A send to a group nobody joined is dropped where it arrives. */
static void test_no_group(void)
{
    Mc t;
    UzQp *a, *b;
    UzMr *ma, *mb;

    mc_start(&t);
    a = mc_ud(&t.n[0], QKEY);
    b = mc_ud(&t.n[1], QKEY);
    ma = uz_mr_reg(&t.n[0], 4096, UZ_ACCESS_ALL);
    mb = uz_mr_reg(&t.n[1], 4096, UZ_ACCESS_ALL);
    mc_attach(b, GROUP + 1);
    mc_post_recv(b, mb, 1);
    mc_send(a, ma, mc_ah(&t.n[0], GROUP), 64, 1);
    g_assert_cmpuint(uz_counter_wait(&t.n[1], "rx_no_qp", 1), ==, 1);
    g_assert_cmpuint(uz_counter_wait(&t.n[0], "rx_no_qp", 1), ==, 1);
    uz_cq_assert_empty(b->rcq, 20);
    g_assert_cmpuint(uz_counter(&t.m, 1, "rx_mcast"), ==, 0);
    mc_stop(&t);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qtest_add_func("/uzura/mcast/attach", test_attach);
    qtest_add_func("/uzura/mcast/traffic", test_traffic);
    qtest_add_func("/uzura/mcast/no-group", test_no_group);
    return g_test_run();
}
