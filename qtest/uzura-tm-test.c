/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uzura: tag matching SRQs (spec 8.19).  uz1 has a TM SRQ with its CQ and
 * an RC QP on it; uz0's RC QP, connected to it, sends messages that start
 * with a TMH.  The tag list is edited through the SRQ's ring of list
 * operations; EAGER messages land in the matched tag's buffer after
 * their TMH, RNDV messages make uz1 READ the sender's buffer and send a
 * FIN back, the rest take the SRQ's receive WQEs, and matching stays off
 * after an unexpected message until software SYNCs.
 */
#include "uzura-pair.h"
#include "uzura-migrate.h"

#define TM_TAGS         16
#define TM_OPS_LOG      4
#define TAG_A           0x1122334455667788ull
#define ALL             UINT64_MAX

typedef struct Tm {
    Pair p;
    UzCq *cq;                   /* uz1: the TM SRQ's CQ, every TM CQE */
    UzSrq *srq;                 /* uz1: the TM SRQ */
    uint64_t ops;               /* its ring of list operations */
    uint32_t ops_db;
    uint32_t ops_pi;
    uint32_t ops_log;
    UzQp *cli;                  /* uz0: the sender, with an RQ for FINs */
    UzQp *srv;                  /* uz1: on the TM SRQ */
    UzMr *mc;                   /* uz0: message and rendezvous buffers */
    UzMr *ms;                   /* uz1: tagged and SRQ buffers */
    uint32_t seq;
} Tm;

/* CREATE_SRQ of a TM SRQ; the status, and *tm's SRQ fields on success. */
static uint8_t tm_srq_try(Tm *t, UzNode *n, uint32_t cqn, uint8_t flags,
                          uint16_t max_tags, uint8_t ops_log, uint64_t ops)
{
    UzSrq *srq = uz_own(n, sizeof(*srq));
    struct uz_cmd_create_srq c = {
        .uctx = cpu_to_le32(n->uctx), .pdn = cpu_to_le32(n->pdn),
        .log_depth = 4, .log_wqe_size = UZ_RQ_LOG_WQE, .flags = flags,
        .cqn = cpu_to_le32(cqn), .max_tags = cpu_to_le16(max_tags),
        .ops_log_depth = ops_log,
    };
    struct uz_admin_cqe cqe;
    uint8_t st;

    srq->n = n;
    srq->uctx = n->uctx;
    srq->log_depth = 4;
    srq->ring = uz_alloc(&n->d, UZ_RQ_WQE_SIZE << 4);
    if (!ops) {
        ops = uz_alloc(&n->d, sizeof(struct uz_tm_op) << MIN(ops_log, 12));
    }
    c.ring_addr = cpu_to_le64(srq->ring);
    c.ops_addr = cpu_to_le64(ops);
    st = uz_cmd(n, UZ_CMD_CREATE_SRQ, &c, sizeof(c), &cqe);
    if (st == UZ_CMD_OK && t) {
        srq->srqn = le32_to_cpu(cqe.out0);
        srq->db = le32_to_cpu(cqe.out1);
        t->srq = srq;
        t->ops = ops;
        t->ops_db = le32_to_cpu(cqe.out2);
        t->ops_log = ops_log;
        t->ops_pi = 0;
        g_assert_cmpuint(t->ops_db, !=, srq->db);
    }
    return st;
}

static uint8_t obj_destroy(UzNode *n, uint8_t op, uint32_t handle)
{
    struct uz_cmd_obj c = {
        .handle = cpu_to_le32(handle), .uctx = cpu_to_le32(n->uctx),
    };

    return uz_cmd(n, op, &c, sizeof(c), NULL);
}

static void tm_start(Tm *t)
{
    UzNode *n1;

    memset(t, 0, sizeof(*t));
    uz_machine_start(&t->p.m, 2, NULL);
    uz_node_start(&t->p.n[0], &t->p.m, 0);
    uz_node_start(&t->p.n[1], &t->p.m, 1);
    n1 = &t->p.n[1];
    t->cq = uz_cq_create(n1, UZ_CQ_LOG_DEPTH);
    g_assert_cmpint(tm_srq_try(t, n1, t->cq->cqn, UZ_SRQF_TM, TM_TAGS,
                               TM_OPS_LOG, 0), ==, UZ_CMD_OK);
    t->cli = uz_qp_create(&t->p.n[0], UZ_QPT_RC, NULL, NULL, NULL, 0);
    t->srv = uz_qp_create(n1, UZ_QPT_RC, NULL, t->cq, t->srq, 0);
    uz_rc_connect(t->cli, t->srv, NULL);
    t->mc = uz_mr_reg(&t->p.n[0], 65536, UZ_ACCESS_ALL);
    t->ms = uz_mr_reg(n1, 65536, UZ_ACCESS_ALL);
}

static void tm_stop(Tm *t)
{
    uz_node_stop(&t->p.n[0]);
    uz_node_stop(&t->p.n[1]);
    uz_machine_stop(&t->p.m);
}

/* Put operation @op into the ring and ring its doorbell; its ring index. */
static uint32_t tm_post(Tm *t, const struct uz_tm_op *op)
{
    uint32_t pos = t->ops_pi & ((1u << t->ops_log) - 1), idx = t->ops_pi;

    qtest_memwrite(qts(&t->p), t->ops + pos * sizeof(*op), op, sizeof(*op));
    t->ops_pi = (t->ops_pi + 1) & UZ_DB_PI_MASK;
    uz_ring(&t->p.n[1].d, t->ops_db, t->ops_pi);
    return idx;
}

/* An operation, in the device's byte order. */
static struct uz_tm_op tm_op(uint8_t opcode, uint8_t flags, uint64_t wr_id,
                             uint16_t index)
{
    return (struct uz_tm_op) {
        .opcode = opcode, .flags = flags, .wr_id = cpu_to_le64(wr_id),
        .index = cpu_to_le16(index),
    };
}

static struct uz_tm_op tm_add_op(uint16_t index, uint64_t tag, uint64_t mask,
                                 uint64_t recv_wr_id, const UzSge *s)
{
    struct uz_tm_op op = tm_op(UZ_TM_OP_ADD, UZ_TM_OP_F_SIGNALED,
                               0xadd00000ull | index, index);

    op.tag = cpu_to_le64(tag);
    op.mask = cpu_to_le64(mask);
    op.recv_wr_id = cpu_to_le64(recv_wr_id);
    if (s) {
        op.num_sge = 1;
        op.addr = cpu_to_le64(s->addr);
        op.length = cpu_to_le32(s->length);
        op.lkey = cpu_to_le32(s->lkey);
    }
    return op;
}

/* The tag a TM CQE carries (imm_data low, src_qp high, little-endian). */
static uint64_t cqe_tag(const struct uz_cqe *c)
{
    /* uz_cqe_to_host took imm_data for a network-order immediate. */
    return (uint64_t)c->src_qp << 32 | le32_to_cpu(cpu_to_be32(c->imm_data));
}

/* The next CQE of the TM CQ: a list operation's, checked. */
static void tm_op_done(Tm *t, uint64_t wr_id, uint8_t opcode, uint8_t status,
                       uint16_t index, uint32_t ring_idx, uint8_t wc_flags)
{
    struct uz_cqe c;

    uz_cq_wait(t->cq, &c);
    g_assert_cmphex(c.wr_id, ==, wr_id);
    g_assert_cmphex(c.opcode, ==, opcode);
    g_assert_cmpint(c.status, ==, status);
    g_assert_cmpuint(c.qpn, ==, t->srq->srqn);
    g_assert_cmpuint(c.pkey_index, ==, opcode == UZ_WC_TM_SYNC ? 0 : index);
    g_assert_cmpuint(c.byte_len, ==, ring_idx);
    g_assert_cmphex(c.wc_flags, ==, wc_flags);
}

/* ADD entry @index (signaled) and check its CQE. */
static void tm_add(Tm *t, uint16_t index, uint64_t tag, uint64_t mask,
                   uint64_t recv_wr_id, const UzSge *s, uint8_t wc_flags)
{
    struct uz_tm_op op = tm_add_op(index, tag, mask, recv_wr_id, s);
    uint32_t idx = tm_post(t, &op);

    tm_op_done(t, 0xadd00000ull | index, UZ_WC_TM_ADD, UZ_WC_STATUS_SUCCESS,
               index, idx, wc_flags);
}

/* A SYNC with count @cnt, signaled; @sync_req: still out of sync. */
static void tm_sync(Tm *t, uint32_t cnt, bool sync_req)
{
    struct uz_tm_op op = tm_op(UZ_TM_OP_SYNC,
                               UZ_TM_OP_F_SIGNALED | UZ_TM_OP_F_SYNC,
                               0x5c00 + cnt, 0);
    uint32_t idx;

    op.unexpected_cnt = cpu_to_le32(cnt);
    idx = tm_post(t, &op);
    tm_op_done(t, 0x5c00 + cnt, UZ_WC_TM_SYNC, UZ_WC_STATUS_SUCCESS, 0, idx,
               sync_req ? UZ_WC_F_TM_SYNC_REQ : 0);
}

/* An operation that fails: its CQE comes even unsignaled. */
static void tm_op_fails(Tm *t, const struct uz_tm_op *op, uint8_t wc_op)
{
    uint32_t idx = tm_post(t, op);

    tm_op_done(t, le64_to_cpu(op->wr_id), wc_op, UZ_WC_STATUS_TM_ERR,
               le16_to_cpu(op->index), idx, 0);
}

/*
 * Build a message in uz0's MR at @off: a TMH (@hop, @tag), then @len
 * bytes of a pattern (seed @seed); the message's length.
 */
static uint32_t tm_msg(Tm *t, uint64_t off, uint8_t hop, uint64_t tag,
                       uint32_t len, uint32_t seed)
{
    g_autofree uint8_t *buf = g_malloc0(UZ_TMH_LEN + len);

    buf[UZ_TMH_OPCODE] = hop;
    stl_be_p(buf + UZ_TMH_APP_CTX, 0xc0ffee);
    stq_be_p(buf + UZ_TMH_TAG, tag);
    uz_pattern(buf + UZ_TMH_LEN, len, seed);
    uz_mr_write(t->mc, off, buf, UZ_TMH_LEN + len);
    return UZ_TMH_LEN + len;
}

/* SEND @len bytes of uz0's MR at @off; it completes at the sender. */
static void tm_send(Tm *t, uint64_t off, uint32_t len)
{
    UzSge s = uz_mr_sge(t->mc, off, len);
    UzWr wr = {
        .wr_id = 0x5e000 + t->seq++, .opcode = UZ_WR_SEND,
        .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = len ? 1 : 0,
    };
    struct uz_cqe c;

    uz_post_send(t->cli, &wr);
    uz_cq_wait_clock(t->cli->scq, &c, STEP_NS, 100);
    uz_expect_sq(&c, wr.wr_id, UZ_WC_SEND, t->cli, len);
}

/* A receive CQE of the TM SRQ, checked field by field. */
static void tm_recv_done(Tm *t, uint64_t wr_id, uint8_t opcode,
                         uint8_t status, uint8_t wc_flags, uint32_t byte_len,
                         uint64_t tag, uint16_t index)
{
    struct uz_cqe c;

    uz_cq_wait(t->cq, &c);
    g_assert_cmphex(c.wr_id, ==, wr_id);
    g_assert_cmphex(c.opcode, ==, opcode);
    g_assert_cmpint(c.status, ==, status);
    g_assert_cmphex(c.wc_flags, ==, wc_flags);
    g_assert_cmpuint(c.byte_len, ==, byte_len);
    g_assert_cmpuint(c.qpn, ==, t->srv->qpn);
    g_assert_cmphex(cqe_tag(&c), ==, tag);
    g_assert_cmpuint(c.pkey_index, ==, index);
}

/* The pattern @seed of @len bytes is in uz1's MR at @off. */
static void tm_assert_data(Tm *t, uint64_t off, uint32_t len, uint32_t seed)
{
    g_autofree uint8_t *want = g_malloc(len);

    uz_pattern(want, len, seed);
    uz_assert_mr(t->ms, off, want, len, "tagged data");
}

/* Post a receive WQE of the SRQ: @len bytes of uz1's MR at @off. */
/*
 * Send the @len-byte message at the sender's offset 0; it must take the
 * SRQ WQE @wr_id (completing with @opcode) and land, TMH and all, at the
 * receiver's @off.
 */
static void tm_took_wqe(Tm *t, uint64_t wr_id, uint8_t opcode, uint64_t off,
                        uint32_t len, const char *what)
{
    g_autofree uint8_t *msg = g_malloc(len);

    tm_send(t, 0, len);
    tm_recv_done(t, wr_id, opcode, UZ_WC_STATUS_SUCCESS, 0, len, 0, 0);
    uz_mr_read(t->mc, 0, msg, len);
    uz_assert_mr(t->ms, off, msg, len, what);
}

static void tm_srq_post(Tm *t, uint64_t wr_id, uint64_t off, uint32_t len)
{
    UzSge s = uz_mr_sge(t->ms, off, len);

    uz_srq_post(t->srq, wr_id, &s, 1);
}

/*
 * ADD then EAGER: the data after the TMH lands in the tag's buffer, and
 * one CQE says so with the tag and the entry; a message of several
 * packets too.
 */
static void test_eager(void)
{
    Tm t;
    UzSge s;
    uint32_t len;

    tm_start(&t);
    s = uz_mr_sge(t.ms, 4096, 200);
    uz_mr_fill(t.ms, 4096, UZ_GUARD, 400);
    tm_add(&t, 3, TAG_A, ALL, 0x7a3, &s, 0);
    len = tm_msg(&t, 0, UZ_TMH_EAGER, TAG_A, 100, 11);
    tm_send(&t, 0, len);
    tm_recv_done(&t, 0x7a3, UZ_WC_TM_RECV, UZ_WC_STATUS_SUCCESS,
                 UZ_WC_F_TM_MATCH | UZ_WC_F_TM_DATA_VALID, 100, TAG_A, 3);
    tm_assert_data(&t, 4096, 100, 11);
    uz_assert_mr_fill(t.ms, 4096 + 100, UZ_GUARD, 300, "after the data");

    /* Three packets at MTU 1024; the entry is free again for the ADD. */
    s = uz_mr_sge(t.ms, 8192, 4000);
    tm_add(&t, 3, 0xabcd, ALL, 0x7a4, &s, 0);
    len = tm_msg(&t, 0, UZ_TMH_EAGER, 0xabcd, 3000, 12);
    tm_send(&t, 0, len);
    tm_recv_done(&t, 0x7a4, UZ_WC_TM_RECV, UZ_WC_STATUS_SUCCESS,
                 UZ_WC_F_TM_MATCH | UZ_WC_F_TM_DATA_VALID, 3000, 0xabcd, 3);
    tm_assert_data(&t, 8192, 3000, 12);
    uz_cq_assert_empty(t.cq, 5);
    tm_stop(&t);
}

/* The oldest posted entry that matches under its mask wins. */
static void test_order(void)
{
    Tm t;
    UzSge s[3];
    uint32_t len;
    int i;

    tm_start(&t);
    for (i = 0; i < 3; i++) {
        s[i] = uz_mr_sge(t.ms, 4096 * (i + 1), 64);
    }
    /* 9 first: 0x10..0x1f; then 2: 0x15 only; then 5: anything. */
    tm_add(&t, 9, 0x10, 0xf0, 0x709, &s[0], 0);
    tm_add(&t, 2, 0x15, ALL, 0x702, &s[1], 0);
    tm_add(&t, 5, 0x7777, 0, 0x705, &s[2], 0);
    len = tm_msg(&t, 0, UZ_TMH_EAGER, 0x15, 8, 1);
    tm_send(&t, 0, len);
    tm_recv_done(&t, 0x709, UZ_WC_TM_RECV, UZ_WC_STATUS_SUCCESS,
                 UZ_WC_F_TM_MATCH | UZ_WC_F_TM_DATA_VALID, 8, 0x15, 9);
    tm_assert_data(&t, 4096, 8, 1);
    len = tm_msg(&t, 0, UZ_TMH_EAGER, 0x15, 8, 2);
    tm_send(&t, 0, len);
    tm_recv_done(&t, 0x702, UZ_WC_TM_RECV, UZ_WC_STATUS_SUCCESS,
                 UZ_WC_F_TM_MATCH | UZ_WC_F_TM_DATA_VALID, 8, 0x15, 2);
    tm_assert_data(&t, 8192, 8, 2);
    /* Mask 0 matches every tag; the CQE names the message's. */
    len = tm_msg(&t, 0, UZ_TMH_EAGER, 0xfeed00000015ull, 8, 3);
    tm_send(&t, 0, len);
    tm_recv_done(&t, 0x705, UZ_WC_TM_RECV, UZ_WC_STATUS_SUCCESS,
                 UZ_WC_F_TM_MATCH | UZ_WC_F_TM_DATA_VALID, 8,
                 0xfeed00000015ull, 5);
    tm_assert_data(&t, 12288, 8, 3);
    tm_stop(&t);
}

/*
 * The message of @len bytes at 0 of mc finds no WQE: it waits (RNR) until
 * one is posted, 0x5a4 at 28672.
 */
static void send_until_wqe(Tm *t, uint32_t len)
{
    UzSge m = uz_mr_sge(t->mc, 0, len);
    UzWr wr = {
        .wr_id = 0x5eee, .opcode = UZ_WR_SEND,
        .flags = UZ_WQE_F_SIGNALED, .sge = &m, .num_sge = 1,
    };
    struct uz_cqe c;

    uz_post_send(t->cli, &wr);
    uz_cq_assert_empty(t->cq, 20);
    tm_srq_post(t, 0x5a4, 28672, 1024);
    uz_cq_wait_clock(t->cli->scq, &c, STEP_NS, 100);
    uz_expect_sq(&c, wr.wr_id, UZ_WC_SEND, t->cli, len);
}

/*
 * No match: the whole message takes an SRQ WQE, with no tag and no
 * flags, and from then on even a matching message is unexpected, until
 * a SYNC says software saw both.
 */
static void test_unexpected(void)
{
    Tm t;
    UzSge s;
    uint32_t len;

    tm_start(&t);
    s = uz_mr_sge(t.ms, 4096, 256);
    tm_add(&t, 0, TAG_A, ALL, 0x700, &s, 0);
    tm_srq_post(&t, 0x5a1, 16384, 1024);
    tm_srq_post(&t, 0x5a2, 20480, 1024);

    len = tm_msg(&t, 0, UZ_TMH_EAGER, 0x999, 40, 5);
    tm_took_wqe(&t, 0x5a1, UZ_WC_TM_RECV, 16384, len,
                "unexpected message, TMH and all");

    /* U = 1, S = 0: the matching tag is unexpected too. */
    len = tm_msg(&t, 0, UZ_TMH_EAGER, TAG_A, 40, 6);
    tm_took_wqe(&t, 0x5a2, UZ_WC_TM_RECV, 20480, len,
                "unexpected matching message");

    /* Operations tell of it; a SYNC for one of the two is not enough. */
    s = uz_mr_sge(t.ms, 8192, 256);
    tm_add(&t, 1, 0x1, ALL, 0x701, &s, UZ_WC_F_TM_SYNC_REQ);
    tm_sync(&t, 1, true);
    tm_sync(&t, 2, false);

    /* In sync: entry 0, posted all along, matches. */
    len = tm_msg(&t, 0, UZ_TMH_EAGER, TAG_A, 40, 7);
    tm_send(&t, 0, len);
    tm_recv_done(&t, 0x700, UZ_WC_TM_RECV, UZ_WC_STATUS_SUCCESS,
                 UZ_WC_F_TM_MATCH | UZ_WC_F_TM_DATA_VALID, 40, TAG_A, 0);
    tm_assert_data(&t, 4096, 40, 7);

    /* An unexpected RNDV lands whole too: TMH and RVH. */
    tm_srq_post(&t, 0x5a3, 24576, 1024);
    len = tm_msg(&t, 0, UZ_TMH_RNDV, 0x4242, 16, 8);
    tm_send(&t, 0, len);
    tm_recv_done(&t, 0x5a3, UZ_WC_TM_RECV, UZ_WC_STATUS_SUCCESS, 0, len, 0,
                 0);
    /* No WQE for the next unexpected one: RNR until there is. */
    len = tm_msg(&t, 0, UZ_TMH_EAGER, 0x31, 8, 9);
    send_until_wqe(&t, len);
    tm_recv_done(&t, 0x5a4, UZ_WC_TM_RECV, UZ_WC_STATUS_SUCCESS, 0, len, 0,
                 0);
    tm_sync(&t, 3, true);
    tm_sync(&t, 4, false);
    tm_stop(&t);
}

/*
 * NO_TAG, and whatever is no EAGER or RNDV (a FIN, a message shorter
 * than a TMH), takes an SRQ WQE whole as UZ_WC_TM_NO_TAG, and does not
 * count as unexpected: matching goes on.
 */
static void test_no_tag(void)
{
    Tm t;
    UzSge s;
    uint32_t len;

    tm_start(&t);
    s = uz_mr_sge(t.ms, 4096, 64);
    tm_add(&t, 4, 0x77, ALL, 0x704, &s, 0);
    tm_srq_post(&t, 0x5b1, 16384, 1024);
    tm_srq_post(&t, 0x5b2, 20480, 1024);
    tm_srq_post(&t, 0x5b3, 24576, 1024);

    len = tm_msg(&t, 0, UZ_TMH_NO_TAG, 0x77, 24, 1);
    tm_took_wqe(&t, 0x5b1, UZ_WC_TM_NO_TAG, 16384, len, "NO_TAG message");

    len = tm_msg(&t, 0, UZ_TMH_FIN, 0x77, 0, 2);
    tm_send(&t, 0, len);
    tm_recv_done(&t, 0x5b2, UZ_WC_TM_NO_TAG, UZ_WC_STATUS_SUCCESS, 0, len, 0,
                 0);

    tm_send(&t, 0, 8);
    tm_recv_done(&t, 0x5b3, UZ_WC_TM_NO_TAG, UZ_WC_STATUS_SUCCESS, 0, 8, 0,
                 0);

    /* Still in sync. */
    len = tm_msg(&t, 0, UZ_TMH_EAGER, 0x77, 16, 3);
    tm_send(&t, 0, len);
    tm_recv_done(&t, 0x704, UZ_WC_TM_RECV, UZ_WC_STATUS_SUCCESS,
                 UZ_WC_F_TM_MATCH | UZ_WC_F_TM_DATA_VALID, 16, 0x77, 4);
    tm_assert_data(&t, 4096, 16, 3);
    tm_stop(&t);
}

/* Write a RNDV message at uz0's MR offset 0 for @len bytes at @data_off. */
static uint32_t tm_rndv_msg(Tm *t, uint64_t tag, uint64_t data_off,
                            uint32_t len, uint32_t rkey)
{
    uint8_t rvh[UZ_RVH_LEN];

    tm_msg(t, 0, UZ_TMH_RNDV, tag, 0, 0);
    stq_be_p(rvh, uz_mr_va(t->mc, data_off));
    stl_be_p(rvh + 8, rkey);
    stl_be_p(rvh + 12, len);
    uz_mr_write(t->mc, UZ_TMH_LEN, rvh, sizeof(rvh));
    return UZ_TMH_LEN + UZ_RVH_LEN;
}

/* The FIN uz0 receives: a SEND of a TMH alone, opcode FIN, @tag. */
static void tm_fin_done(Tm *t, uint64_t wr_id, uint64_t off, uint64_t tag)
{
    uint8_t fin[UZ_TMH_LEN];

    uz_rq_done(t->cli, wr_id, UZ_WC_RECV, UZ_TMH_LEN, 0, 0);
    uz_mr_read(t->mc, off, fin, sizeof(fin));
    g_assert_cmpuint(fin[UZ_TMH_OPCODE], ==, UZ_TMH_FIN);
    g_assert_cmpuint(ldl_be_p(fin + UZ_TMH_APP_CTX), ==, 0);
    g_assert_cmphex(ldq_be_p(fin + UZ_TMH_TAG), ==, tag);
}

/*
 * RNDV end to end: the MATCH CQE at once, uz1 READs the sender's buffer
 * into the tag's, the DATA_VALID CQE, and a FIN at the sender; then one
 * whose data does not fit: RNDV_INCOMPLETE, no READ, no FIN.
 */
static void test_rndv(void)
{
    Tm t;
    UzSge s, r;
    g_autofree uint8_t *data = g_malloc(5000);
    uint32_t len;

    tm_start(&t);
    r = uz_mr_sge(t.mc, 60000, 64);
    uz_pattern(data, 5000, 77);
    uz_mr_write(t.mc, 8192, data, 5000);
    s = uz_mr_sge(t.ms, 16384, 8192);
    uz_mr_fill(t.ms, 16384, UZ_GUARD, 8192);
    tm_add(&t, 7, 0xbeef, ALL, 0x707, &s, 0);
    uz_post_recv(t.cli, 0xf1, &r, 1);
    len = tm_rndv_msg(&t, 0xbeef, 8192, 5000, t.mc->key);
    tm_send(&t, 0, len);
    tm_recv_done(&t, 0x707, UZ_WC_TM_RECV, UZ_WC_STATUS_SUCCESS,
                 UZ_WC_F_TM_MATCH, 0, 0xbeef, 7);
    tm_recv_done(&t, 0x707, UZ_WC_TM_RECV, UZ_WC_STATUS_SUCCESS,
                 UZ_WC_F_TM_DATA_VALID, 5000, 0xbeef, 7);
    uz_assert_mr(t.ms, 16384, data, 5000, "rendezvous data");
    uz_assert_mr_fill(t.ms, 16384 + 5000, UZ_GUARD, 64, "after the data");
    tm_fin_done(&t, 0xf1, 60000, 0xbeef);
    /* No send CQE of uz1's for the READ or the FIN. */
    uz_cq_assert_empty(t.srv->scq, 5);

    /* 5000 bytes into 1000: the second CQE at once, the entry free. */
    s = uz_mr_sge(t.ms, 16384, 1000);
    tm_add(&t, 7, 0xbeef, ALL, 0x708, &s, 0);
    uz_post_recv(t.cli, 0xf2, &r, 1);
    len = tm_rndv_msg(&t, 0xbeef, 8192, 5000, t.mc->key);
    tm_send(&t, 0, len);
    tm_recv_done(&t, 0x708, UZ_WC_TM_RECV, UZ_WC_STATUS_SUCCESS,
                 UZ_WC_F_TM_MATCH, 0, 0xbeef, 7);
    tm_recv_done(&t, 0x708, UZ_WC_TM_RECV, UZ_WC_STATUS_TM_RNDV_INCOMPLETE,
                 UZ_WC_F_TM_DATA_VALID, 0, 0xbeef, 7);
    uz_cq_assert_empty(t.cli->rcq, 10);
    tm_add(&t, 7, 0x1, ALL, 0x709, &s, 0);

    /* The QP goes on: an EAGER message after it. */
    s = uz_mr_sge(t.ms, 32768, 100);
    tm_add(&t, 8, 0x2, ALL, 0x70a, &s, 0);
    len = tm_msg(&t, 0, UZ_TMH_EAGER, 0x2, 50, 4);
    tm_send(&t, 0, len);
    tm_recv_done(&t, 0x70a, UZ_WC_TM_RECV, UZ_WC_STATUS_SUCCESS,
                 UZ_WC_F_TM_MATCH | UZ_WC_F_TM_DATA_VALID, 50, 0x2, 8);
    /* The FIN WQE posted for the incomplete one takes nothing. */
    uz_cq_assert_empty(t.cli->rcq, 5);
    tm_stop(&t);
}

/*
 * A rendezvous whose READ fails (a bad rkey): the second CQE carries the
 * READ's error and the QP goes to the error state; one still waiting
 * when the QP fails (uz1 in RTR only) is flushed.
 */
static void test_rndv_fail(void)
{
    static const UzRcOpts o = UZ_RC_OPTS_DEFAULT;
    Tm t;
    UzSge s;
    uint32_t len;
    UzQp *cli, *srv;
    struct uz_cqe c;

    tm_start(&t);
    s = uz_mr_sge(t.ms, 16384, 8192);
    tm_add(&t, 1, 0xbad, ALL, 0x701, &s, 0);
    len = tm_rndv_msg(&t, 0xbad, 8192, 100, t.mc->key ^ 0x80);
    tm_send(&t, 0, len);
    tm_recv_done(&t, 0x701, UZ_WC_TM_RECV, UZ_WC_STATUS_SUCCESS,
                 UZ_WC_F_TM_MATCH, 0, 0xbad, 1);
    uz_cq_wait_clock(t.cq, &c, STEP_NS, 100);
    g_assert_cmphex(c.wr_id, ==, 0x701);
    g_assert_cmpint(c.status, ==, UZ_WC_STATUS_REM_ACCESS_ERR);
    g_assert_cmphex(c.opcode, ==, UZ_WC_TM_RECV);
    /* The entry's last CQE: DATA_VALID tells it from an unexpected. */
    g_assert_cmphex(c.wc_flags, ==, UZ_WC_F_TM_DATA_VALID);
    g_assert_cmpuint(c.pkey_index, ==, 1);
    g_assert_cmpint(uz_qp_state(t.srv), ==, UZ_QPS_ERR);
    /* The entry is free again. */
    tm_add(&t, 1, 0xbad, ALL, 0x702, &s, 0);

    /* A second QP on the SRQ, its requester never started. */
    cli = uz_qp_create(&t.p.n[0], UZ_QPT_RC, NULL, NULL, NULL, 0);
    srv = uz_qp_create(&t.p.n[1], UZ_QPT_RC, NULL, t.cq, t.srq, 0);
    uz_rc_init(cli);
    uz_rc_init(srv);
    uz_rc_rtr(cli, srv, o.psn[1], &o);
    uz_rc_rtr(srv, cli, o.psn[0], &o);
    uz_rc_rts(cli, o.psn[0], &o);
    t.cli = cli;
    t.srv = srv;
    len = tm_rndv_msg(&t, 0xbad, 8192, 100, t.mc->key);
    tm_send(&t, 0, len);
    tm_recv_done(&t, 0x702, UZ_WC_TM_RECV, UZ_WC_STATUS_SUCCESS,
                 UZ_WC_F_TM_MATCH, 0, 0xbad, 1);
    uz_cq_assert_empty(t.cq, 10);
    uz_qp_set_state(srv, UZ_QPS_ERR);
    tm_recv_done(&t, 0x702, UZ_WC_TM_RECV, UZ_WC_STATUS_WR_FLUSH_ERR,
                 UZ_WC_F_TM_DATA_VALID, 0, 0xbad, 1);
    tm_add(&t, 1, 0xbad, ALL, 0x703, &s, 0);
    tm_stop(&t);
}

/* DEL of a posted entry frees it; of a free one fails. */
static void test_del(void)
{
    Tm t;
    UzSge s;
    struct uz_tm_op op;
    uint32_t idx, len;

    tm_start(&t);
    s = uz_mr_sge(t.ms, 4096, 64);
    tm_add(&t, 6, 0x66, ALL, 0x706, &s, 0);
    op = tm_op(UZ_TM_OP_DEL, UZ_TM_OP_F_SIGNALED, 0xde106, 6);
    idx = tm_post(&t, &op);
    tm_op_done(&t, 0xde106, UZ_WC_TM_DEL, UZ_WC_STATUS_SUCCESS, 6, idx, 0);
    op = tm_op(UZ_TM_OP_DEL, 0, 0xde107, 6);
    tm_op_fails(&t, &op, UZ_WC_TM_DEL);
    /* Deleted: a message for it is unexpected. */
    tm_srq_post(&t, 0x5c1, 16384, 1024);
    len = tm_msg(&t, 0, UZ_TMH_EAGER, 0x66, 8, 1);
    tm_send(&t, 0, len);
    tm_recv_done(&t, 0x5c1, UZ_WC_TM_RECV, UZ_WC_STATUS_SUCCESS, 0, len, 0,
                 0);
    /* An unsignaled DEL that works gives no CQE. */
    tm_sync(&t, 1, false);
    tm_add(&t, 6, 0x66, ALL, 0x707, &s, 0);
    op = tm_op(UZ_TM_OP_DEL, 0, 0xde108, 6);
    tm_post(&t, &op);
    tm_add(&t, 6, 0x67, ALL, 0x708, &s, 0);
    tm_stop(&t);
}

/*
 * Operations the device refuses complete with TM_ERR whether signaled or
 * not, and change nothing; the SRQ goes on working.
 */
static void test_bad_ops(void)
{
    Tm t;
    UzSge s, bad;
    struct uz_tm_op op;
    uint32_t len;

    tm_start(&t);
    s = uz_mr_sge(t.ms, 4096, 64);
    op = tm_add_op(TM_TAGS, 0x1, ALL, 0x1, &s);
    op.flags = 0;
    tm_op_fails(&t, &op, UZ_WC_TM_ADD);
    op = tm_add_op(2, 0x1, ALL, 0x1, &s);
    op.num_sge = 2;
    tm_op_fails(&t, &op, UZ_WC_TM_ADD);
    bad = s;
    bad.lkey ^= 0x80;
    op = tm_add_op(2, 0x1, ALL, 0x1, &bad);
    tm_op_fails(&t, &op, UZ_WC_TM_ADD);
    op = tm_op(9, UZ_TM_OP_F_SIGNALED, 0xbad9, 2);
    tm_op_fails(&t, &op, UZ_WC_TM_SYNC);
    op = tm_op(UZ_TM_OP_DEL, 0, 0xbadde1, 999);
    tm_op_fails(&t, &op, UZ_WC_TM_DEL);
    tm_add(&t, 2, 0x22, ALL, 0x702, &s, 0);
    op = tm_add_op(2, 0x23, ALL, 0x1, &s);
    tm_op_fails(&t, &op, UZ_WC_TM_ADD);

    /* Entry 2 holds its first ADD. */
    len = tm_msg(&t, 0, UZ_TMH_EAGER, 0x22, 30, 9);
    tm_send(&t, 0, len);
    tm_recv_done(&t, 0x702, UZ_WC_TM_RECV, UZ_WC_STATUS_SUCCESS,
                 UZ_WC_F_TM_MATCH | UZ_WC_F_TM_DATA_VALID, 30, 0x22, 2);
    tm_assert_data(&t, 4096, 30, 9);
    /* A doorbell past the ring is refused; the ring goes on. */
    uz_ring(&t.p.n[1].d, t.ops_db, t.ops_pi + (1u << TM_OPS_LOG) + 1);
    g_assert_cmpuint(uz_rd(&t.p.n[1].d, UZ_REG_ERR_STATUS), ==,
                     UZ_ERR_BAD_VALUE);
    tm_add(&t, 3, 0x33, ALL, 0x703, &s, 0);
    tm_stop(&t);
}

/* CREATE_SRQ's tag matching fields, QUERY_DEVICE, and what is in use. */
static void test_create(void)
{
    Tm t;
    UzNode *n1;
    struct uz_device_attr attr;
    struct uz_cmd_create_qp c = { 0 };
    uint64_t cq_ok;
    UzSge s;

    tm_start(&t);
    n1 = &t.p.n[1];
    cq_ok = t.cq->cqn;
    uz_query_device(n1, &attr);
    g_assert_cmpuint(le32_to_cpu(attr.max_tm_tags), ==, 256);
    g_assert_cmpuint(le32_to_cpu(attr.max_tm_ops), ==, 1024);
    g_assert_cmpint(tm_srq_try(NULL, n1, cq_ok, UZ_SRQF_TM | UZ_SRQF_XRC, 8,
                               4, 0), ==, UZ_CMD_BAD_PARAM);
    g_assert_cmpint(tm_srq_try(NULL, n1, cq_ok, UZ_SRQF_TM, 0, 4, 0), ==,
                    UZ_CMD_BAD_PARAM);
    g_assert_cmpint(tm_srq_try(NULL, n1, cq_ok, UZ_SRQF_TM, 257, 4, 0), ==,
                    UZ_CMD_BAD_PARAM);
    g_assert_cmpint(tm_srq_try(NULL, n1, cq_ok, UZ_SRQF_TM, 8, 0, 0), ==,
                    UZ_CMD_BAD_PARAM);
    g_assert_cmpint(tm_srq_try(NULL, n1, cq_ok, UZ_SRQF_TM, 8, 11, 0), ==,
                    UZ_CMD_BAD_PARAM);
    g_assert_cmpint(tm_srq_try(NULL, n1, cq_ok, 1u << 7, 8, 4, 0), ==,
                    UZ_CMD_BAD_PARAM);
    g_assert_cmpint(tm_srq_try(NULL, n1, 999, UZ_SRQF_TM, 8, 4, 0), ==,
                    UZ_CMD_BAD_HANDLE);
    g_assert_cmpint(tm_srq_try(NULL, n1, cq_ok, UZ_SRQF_TM, 8, 4,
                               0xfffffffffff00000ull), ==, UZ_CMD_BAD_ADDR);
    /* The limits themselves are fine. */
    g_assert_cmpint(tm_srq_try(NULL, n1, cq_ok, UZ_SRQF_TM, 256, 10, 0), ==,
                    UZ_CMD_OK);

    /* Tag matching is RC's: a UD QP may not use the SRQ. */
    c.uctx = cpu_to_le32(n1->uctx);
    c.pdn = cpu_to_le32(n1->pdn);
    c.send_cqn = c.recv_cqn = cpu_to_le32(t.cq->cqn);
    c.srqn = cpu_to_le32(t.srq->srqn);
    c.type = UZ_QPT_UD;
    c.sq_addr = cpu_to_le64(uz_alloc(&n1->d, UZ_SQ_WQE_SIZE << 4));
    c.sq_log_depth = 4;
    c.sq_log_wqe_size = UZ_SQ_LOG_WQE;
    g_assert_cmpint(uz_cmd(n1, UZ_CMD_CREATE_QP, &c, sizeof(c), NULL), ==,
                    UZ_CMD_BAD_HANDLE);

    /* In use: the SRQ by its QP, the CQ by the SRQ. */
    g_assert_cmpint(obj_destroy(n1, UZ_CMD_DESTROY_SRQ, t.srq->srqn), ==,
                    UZ_CMD_BUSY);
    g_assert_cmpint(obj_destroy(n1, UZ_CMD_DESTROY_QP, t.srv->qpn), ==,
                    UZ_CMD_OK);
    /* Entries still posted go with the SRQ, and no CQE. */
    s = uz_mr_sge(t.ms, 0, 64);
    tm_add(&t, 0, 0x1, ALL, 0x1, &s, 0);
    g_assert_cmpint(obj_destroy(n1, UZ_CMD_DESTROY_CQ, t.cq->cqn), ==,
                    UZ_CMD_BUSY);
    g_assert_cmpint(obj_destroy(n1, UZ_CMD_DESTROY_SRQ, t.srq->srqn), ==,
                    UZ_CMD_OK);
    uz_cq_assert_empty(t.cq, 5);
    /* The ops doorbell went with it: a store there is an error. */
    uz_ring(&n1->d, t.ops_db, 1);
    g_assert_cmpuint(uz_rd(&n1->d, UZ_REG_ERR_STATUS), ==,
                     UZ_ERR_BAD_DOORBELL);
    tm_stop(&t);
}

/* Poll until rule @idx of NIC 0 acted: a frame it aims at was sent. */
static void rule_waits(Tm *t, int idx)
{
    int i;

    for (i = 0; i < 1000 && !rule_acted(&t->p, 0, idx); i++) {
        uz_poll_pause(&t->p.n[0].d);
    }
    g_assert_cmpuint(rule_acted(&t->p, 0, idx), >=, 1);
}

/*
 * Both NICs move to a new process (spec 7.4), twice.  First while uz1's
 * tag list holds posted entries, U = S = 1, and an EAGER message has
 * come in part (the wire lost its last packet) on a QP that has had no
 * rendezvous; then while a rendezvous waits for its READ's data (the
 * wire lost that too).  On the new side each message completes once,
 * with its bytes and its FIN; an entry posted before the moves still
 * matches; the ring of list operations goes on from where it was (each
 * CQE names its ring index); and U came along: after one more
 * unexpected message a SYNC of 2 is in sync.
 */
static void test_migrate(void)
{
    Tm t;
    UzDev *devs[2];
    g_autofree uint8_t *data = g_malloc(5000);
    UzSge s, r, es;
    UzWr eager;
    struct uz_cqe c;
    uint32_t len;

    tm_start(&t);
    devs[0] = &t.p.n[0].d;
    devs[1] = &t.p.n[1].d;
    tm_srq_post(&t, 0x5a1, 0, 1024);
    len = tm_msg(&t, 0, UZ_TMH_EAGER, 0x999, 40, 5);
    tm_took_wqe(&t, 0x5a1, UZ_WC_TM_RECV, 0, len, "unexpected message");
    tm_sync(&t, 1, false);
    s = uz_mr_sge(t.ms, 4096, 4000);
    tm_add(&t, 3, TAG_A, ALL, 0x7a3, &s, 0);
    s = uz_mr_sge(t.ms, 16384, 8192);
    uz_mr_fill(t.ms, 16384, UZ_GUARD, 8192);
    tm_add(&t, 7, 0xbeef, ALL, 0x707, &s, 0);
    s = uz_mr_sge(t.ms, 32768, 256);
    tm_add(&t, 9, 0x99, ALL, 0x709, &s, 0);

    /* An EAGER message of three packets, its last lost. */
    rules_set(&t.p, 0, "op=send-last drop");
    len = tm_msg(&t, 0, UZ_TMH_EAGER, TAG_A, 3000, 12);
    es = uz_mr_sge(t.mc, 0, len);
    eager = (UzWr) {
        .wr_id = 0x5e0e, .opcode = UZ_WR_SEND, .flags = UZ_WQE_F_SIGNALED,
        .sge = &es, .num_sge = 1,
    };
    uz_post_send(t.cli, &eager);
    rule_waits(&t, 1);
    uz_migrate(&t.p.m, devs, 2);
    rules_set(&t.p, 0, "");
    /* It is sent again at once and completes once. */
    uz_cq_wait_clock(t.cli->scq, &c, STEP_NS, 100);
    uz_expect_sq(&c, eager.wr_id, UZ_WC_SEND, t.cli, len);
    tm_recv_done(&t, 0x7a3, UZ_WC_TM_RECV, UZ_WC_STATUS_SUCCESS,
                 UZ_WC_F_TM_MATCH | UZ_WC_F_TM_DATA_VALID, 3000, TAG_A, 3);
    tm_assert_data(&t, 4096, 3000, 12);

    /* A rendezvous whose READ's data is lost: uz0 drops its responses. */
    rules_set(&t.p, 0, "kind=response drop");
    uz_pattern(data, 5000, 77);
    uz_mr_write(t.mc, 8192, data, 5000);
    r = uz_mr_sge(t.mc, 60000, 64);
    uz_post_recv(t.cli, 0xf1, &r, 1);
    len = tm_rndv_msg(&t, 0xbeef, 8192, 5000, t.mc->key);
    tm_send(&t, 0, len);
    tm_recv_done(&t, 0x707, UZ_WC_TM_RECV, UZ_WC_STATUS_SUCCESS,
                 UZ_WC_F_TM_MATCH, 0, 0xbeef, 7);
    rule_waits(&t, 1);
    uz_migrate(&t.p.m, devs, 2);
    rules_set(&t.p, 0, "");
    uz_cq_wait_clock(t.cq, &c, STEP_NS, 100);
    g_assert_cmphex(c.wr_id, ==, 0x707);
    g_assert_cmpuint(c.opcode, ==, UZ_WC_TM_RECV);
    g_assert_cmpint(c.status, ==, UZ_WC_STATUS_SUCCESS);
    g_assert_cmphex(c.wc_flags, ==, UZ_WC_F_TM_DATA_VALID);
    g_assert_cmpuint(c.byte_len, ==, 5000);
    g_assert_cmpuint(c.qpn, ==, t.srv->qpn);
    g_assert_cmphex(cqe_tag(&c), ==, 0xbeef);
    g_assert_cmpuint(c.pkey_index, ==, 7);
    uz_assert_mr(t.ms, 16384, data, 5000, "rendezvous data");
    uz_assert_mr_fill(t.ms, 16384 + 5000, UZ_GUARD, 64, "after the data");
    tm_fin_done(&t, 0xf1, 60000, 0xbeef);

    /* Entry 9, posted before the moves, matches. */
    len = tm_msg(&t, 0, UZ_TMH_EAGER, 0x99, 50, 13);
    tm_send(&t, 0, len);
    tm_recv_done(&t, 0x709, UZ_WC_TM_RECV, UZ_WC_STATUS_SUCCESS,
                 UZ_WC_F_TM_MATCH | UZ_WC_F_TM_DATA_VALID, 50, 0x99, 9);
    tm_assert_data(&t, 32768, 50, 13);

    /* U is 2 after one more unexpected message: a SYNC of 2 is in sync. */
    tm_srq_post(&t, 0x5a2, 40960, 1024);
    len = tm_msg(&t, 0, UZ_TMH_EAGER, 0x998, 40, 14);
    tm_took_wqe(&t, 0x5a2, UZ_WC_TM_RECV, 40960, len,
                "unexpected message after the moves");
    tm_sync(&t, 2, false);
    uz_cq_assert_empty(t.cq, 5);
    uz_cq_assert_empty(t.srv->scq, 5);
    g_assert_cmpint(uz_qp_state(t.cli), ==, UZ_QPS_RTS);
    g_assert_cmpint(uz_qp_state(t.srv), ==, UZ_QPS_RTS);
    tm_stop(&t);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qtest_add_func("/uzura/tm/eager", test_eager);
    qtest_add_func("/uzura/tm/order", test_order);
    qtest_add_func("/uzura/tm/unexpected", test_unexpected);
    qtest_add_func("/uzura/tm/no-tag", test_no_tag);
    qtest_add_func("/uzura/tm/rndv", test_rndv);
    qtest_add_func("/uzura/tm/rndv-fail", test_rndv_fail);
    qtest_add_func("/uzura/tm/del", test_del);
    qtest_add_func("/uzura/tm/bad-ops", test_bad_ops);
    qtest_add_func("/uzura/tm/create", test_create);
    qtest_add_func("/uzura/tm/migrate", test_migrate);
    return g_test_run();
}
