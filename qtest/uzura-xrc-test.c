/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uzura: XRC (spec 8.16).  An XRC initiator on uz0 sends through one XRC
 * target QP on uz1 to either of two XRC SRQs of the target's domain; each
 * message takes a WQE of the SRQ its XRCETH names, is checked against
 * that SRQ's PD and completes into that SRQ's CQ, naming the SRQ.  A
 * request for an SRQ that is no XRC SRQ of the domain is an invalid
 * request, and a domain, SRQ and CQ in use cannot go.  The RC pair beside
 * them goes on undisturbed.
 */
#include "uzura-pair.h"
#include "uzura-wire.h"

#define XRC_PSN     0x000abc

typedef struct Xrc {
    Pair p;
    uint32_t xrcd;              /* uz1's domain */
    UzCq *cq[2];                /* uz1: the CQs of the two SRQs */
    UzSrq *srq[2];              /* uz1: two XRC SRQs of the domain */
    UzQp *ini;                  /* uz0: the initiator */
    UzQp *tgt;                  /* uz1: the target */
} Xrc;

static uint8_t xrcd_alloc_try(UzNode *n, uint32_t *xrcd)
{
    struct uz_cmd_obj c = { 0 };
    struct uz_admin_cqe cqe;
    uint8_t st = uz_cmd(n, UZ_CMD_ALLOC_XRCD, &c, sizeof(c), &cqe);

    *xrcd = le32_to_cpu(cqe.out0);
    return st;
}

static uint32_t xrcd_alloc(UzNode *n)
{
    uint32_t xrcd;

    g_assert_cmpint(xrcd_alloc_try(n, &xrcd), ==, UZ_CMD_OK);
    return xrcd;
}

static uint8_t xrcd_dealloc(UzNode *n, uint32_t xrcd)
{
    struct uz_cmd_obj c = { .handle = cpu_to_le32(xrcd) };

    return uz_cmd(n, UZ_CMD_DEALLOC_XRCD, &c, sizeof(c), NULL);
}

static uint8_t obj_destroy(UzNode *n, uint8_t op, uint32_t handle)
{
    struct uz_cmd_obj c = {
        .handle = cpu_to_le32(handle), .uctx = cpu_to_le32(n->uctx),
    };

    return uz_cmd(n, op, &c, sizeof(c), NULL);
}

/* CREATE_SRQ of an XRC SRQ in PD @pdn; the status, *out on success. */
static uint8_t xrc_srq_try(UzNode *n, uint32_t xrcd, uint32_t cqn,
                           uint32_t pdn, uint8_t flags, UzSrq **out)
{
    UzSrq *srq = uz_own(n, sizeof(*srq));
    struct uz_cmd_create_srq c = {
        .uctx = cpu_to_le32(n->uctx), .pdn = cpu_to_le32(pdn),
        .log_depth = 4, .log_wqe_size = UZ_RQ_LOG_WQE, .flags = flags,
        .xrcd = cpu_to_le32(xrcd), .cqn = cpu_to_le32(cqn),
    };
    struct uz_admin_cqe cqe;
    uint8_t st;

    srq->n = n;
    srq->uctx = n->uctx;
    srq->log_depth = 4;
    srq->ring = uz_alloc(&n->d, UZ_RQ_WQE_SIZE << 4);
    c.ring_addr = cpu_to_le64(srq->ring);
    st = uz_cmd(n, UZ_CMD_CREATE_SRQ, &c, sizeof(c), &cqe);
    srq->srqn = le32_to_cpu(cqe.out0);
    srq->db = le32_to_cpu(cqe.out1);
    *out = srq;
    return st;
}

static UzSrq *xrc_srq(UzNode *n, uint32_t xrcd, UzCq *cq, uint32_t pdn)
{
    UzSrq *srq;

    g_assert_cmpint(xrc_srq_try(n, xrcd, cq->cqn, pdn, UZ_SRQF_XRC, &srq),
                    ==, UZ_CMD_OK);
    return srq;
}

/* CREATE_QP of an XRC initiator (with an SQ and a send CQ) or target. */
static uint8_t xrc_qp_try(UzNode *n, uint8_t type, uint32_t xrcd, UzQp **out)
{
    UzQp *qp = uz_own(n, sizeof(*qp));
    struct uz_cmd_create_qp c = {
        .uctx = cpu_to_le32(n->uctx), .type = type,
        .srqn = cpu_to_le32(UZ_NO_SRQ), .xrcd = cpu_to_le32(xrcd),
        .sq_log_depth = UZ_SQ_LOG_DEPTH, .sq_log_wqe_size = UZ_SQ_LOG_WQE,
    };
    struct uz_admin_cqe cqe;
    uint8_t st;

    qp->n = n;
    qp->uctx = n->uctx;
    qp->type = type;
    qp->sq_log_depth = UZ_SQ_LOG_DEPTH;
    if (type == UZ_QPT_XRC_INI) {
        qp->scq = uz_cq_create(n, UZ_CQ_LOG_DEPTH);
        qp->sq = uz_alloc(&n->d, UZ_SQ_WQE_SIZE << UZ_SQ_LOG_DEPTH);
        c.sq_addr = cpu_to_le64(qp->sq);
        c.pdn = cpu_to_le32(n->pdn);
        c.send_cqn = cpu_to_le32(qp->scq->cqn);
        /* No receive side: these are ignored. */
        c.recv_cqn = cpu_to_le32(0xdead);
        c.rq_log_depth = 99;
    }
    st = uz_cmd(n, UZ_CMD_CREATE_QP, &c, sizeof(c), &cqe);
    qp->qpn = le32_to_cpu(cqe.out0);
    qp->sq_db = le32_to_cpu(cqe.out1);
    qp->rq_db = le32_to_cpu(cqe.out2);
    *out = qp;
    return st;
}

static UzQp *xrc_qp(UzNode *n, uint8_t type, uint32_t xrcd)
{
    UzQp *qp;

    g_assert_cmpint(xrc_qp_try(n, type, xrcd, &qp), ==, UZ_CMD_OK);
    if (type == UZ_QPT_XRC_TGT) {
        g_assert_cmpuint(qp->sq_db, ==, 0);
    }
    g_assert_cmpuint(qp->rq_db, ==, 0);
    return qp;
}

/*
 * Connect initiator @ini and target @tgt with the attributes of their
 * columns (ib_core's): RC's receive attributes are not an initiator's,
 * RC's send attributes not a target's.
 */
static void xrc_connect(UzQp *ini, UzQp *tgt)
{
    UzRcOpts o = UZ_RC_OPTS_DEFAULT;

    uz_rc_init(ini);
    uz_rc_init(tgt);
    g_assert_cmpint(uz_uc_rtr_try(ini, tgt, XRC_PSN,
                                  UZ_QP_ATTR_MAX_DEST_RD_ATOMIC), ==,
                    UZ_CMD_BAD_PARAM);
    g_assert_cmpint(uz_uc_rtr_try(ini, tgt, XRC_PSN, 0), ==, UZ_CMD_OK);
    uz_rc_rtr(tgt, ini, XRC_PSN, &o);
    uz_rc_rts(ini, XRC_PSN, &o);
    g_assert_cmpint(uz_uc_rts_try(tgt, XRC_PSN, UZ_QP_ATTR_TIMEOUT |
                                  UZ_QP_ATTR_RETRY_CNT), ==,
                    UZ_CMD_BAD_PARAM);
    g_assert_cmpint(uz_uc_rts_try(tgt, XRC_PSN, UZ_QP_ATTR_TIMEOUT), ==,
                    UZ_CMD_OK);
}

/* The domain, SRQs, initiator and target, on the pair started. */
static void xrc_init(Xrc *x)
{
    UzNode *n1;
    int i;

    n1 = &x->p.n[1];
    g_assert(uz_rd(&n1->d, UZ_REG_CAPS) & UZ_CAP_XRC);
    x->xrcd = xrcd_alloc(n1);
    for (i = 0; i < 2; i++) {
        x->cq[i] = uz_cq_create(n1, UZ_CQ_LOG_DEPTH);
        x->srq[i] = xrc_srq(n1, x->xrcd, x->cq[i], n1->pdn);
    }
    x->ini = xrc_qp(&x->p.n[0], UZ_QPT_XRC_INI, 0);
    x->tgt = xrc_qp(n1, UZ_QPT_XRC_TGT, x->xrcd);
    xrc_connect(x->ini, x->tgt);
}

static void xrc_start(Xrc *x)
{
    pair_start(&x->p);
    xrc_init(x);
}

/* A fresh initiator and target, after one of a test failed both. */
static void xrc_fresh(Xrc *x)
{
    x->ini = xrc_qp(&x->p.n[0], UZ_QPT_XRC_INI, 0);
    x->tgt = xrc_qp(&x->p.n[1], UZ_QPT_XRC_TGT, x->xrcd);
    xrc_connect(x->ini, x->tgt);
}

/* Post @op of @len bytes of pattern @seed from ma on the initiator. */
static void xrc_post(Xrc *x, uint8_t op, uint32_t len, uint32_t seed,
                     uint32_t srqn, uint64_t roff)
{
    g_autofree uint8_t *data = g_malloc(len);
    UzSge s = uz_mr_sge(x->p.ma, 0, len);
    UzWr wr = {
        .wr_id = 0x3c00 + seed, .opcode = op, .flags = UZ_WQE_F_SIGNALED,
        .sge = &s, .num_sge = 1, .remote_addr = uz_mr_va(x->p.mb, roff),
        .rkey = x->p.mb->key, .imm = 0x1e00 + seed, .xrc_srqn = srqn,
    };

    uz_pattern(data, len, seed);
    uz_mr_write(x->p.ma, 0, data, len);
    uz_post_send(x->ini, &wr);
}

/* The next CQE of XRC SRQ @k's CQ: a receive through the target. */
static void xrc_received(Xrc *x, int k, uint64_t wr_id, uint8_t opcode,
                         uint32_t len, uint8_t flags, uint32_t imm)
{
    struct uz_cqe c;

    uz_cq_wait(x->cq[k], &c);
    uz_expect_rq(&c, wr_id, opcode, x->tgt->qpn, len, UZ_WC_F_XRC | flags,
                 imm, x->srq[k]->srqn);
}

/*
 * SEND and SEND with immediate to each SRQ, WRITE, WRITE with immediate,
 * READ and an atomic through the one target: data and completions where
 * the XRCETH sends them, the other SRQ's CQ untouched.
 */
static void test_traffic(void)
{
    g_autofree uint8_t *data = g_malloc(MSG_LEN);
    g_autofree uint8_t *got = g_malloc(MSG_LEN);
    uint64_t val = cpu_to_le64(5);
    UzSge r[2];
    UzSge s;
    UzWr wr;
    Xrc x;

    xrc_start(&x);
    r[0] = uz_mr_sge(x.p.mb, 0, 4096);
    r[1] = uz_mr_sge(x.p.mb, 4096, 4096);
    uz_srq_post(x.srq[0], 0x9001, &r[0], 1);
    uz_srq_post(x.srq[1], 0x9101, &r[1], 1);

    /* Three packets to SRQ 1, then one with immediate to SRQ 0. */
    xrc_post(&x, UZ_WR_SEND, MSG_LEN, 1, x.srq[1]->srqn, 0);
    uz_sq_done(x.ini, 0x3c01, UZ_WC_SEND, MSG_LEN);
    xrc_received(&x, 1, 0x9101, UZ_WC_RECV, MSG_LEN, 0, 0);
    uz_cq_assert_empty(x.cq[0], 8);
    uz_pattern(data, MSG_LEN, 1);
    uz_assert_mr(x.p.mb, 4096, data, MSG_LEN, "the SEND to SRQ 1");
    xrc_post(&x, UZ_WR_SEND_IMM, 100, 2, x.srq[0]->srqn, 0);
    uz_sq_done(x.ini, 0x3c02, UZ_WC_SEND, 100);
    xrc_received(&x, 0, 0x9001, UZ_WC_RECV, 100, UZ_WC_F_IMM, 0x1e02);

    /* WRITE, and WRITE with immediate, which takes SRQ 1's next WQE. */
    xrc_post(&x, UZ_WR_RDMA_WRITE, MSG_LEN, 3, x.srq[0]->srqn, 16384);
    uz_sq_done(x.ini, 0x3c03, UZ_WC_RDMA_WRITE, MSG_LEN);
    uz_pattern(data, MSG_LEN, 3);
    uz_assert_mr(x.p.mb, 16384, data, MSG_LEN, "the WRITE");
    uz_srq_post(x.srq[1], 0x9102, &r[1], 1);
    xrc_post(&x, UZ_WR_RDMA_WRITE_IMM, 64, 4, x.srq[1]->srqn, 20480);
    uz_sq_done(x.ini, 0x3c04, UZ_WC_RDMA_WRITE, 64);
    xrc_received(&x, 1, 0x9102, UZ_WC_RECV_RDMA_WITH_IMM, 64, UZ_WC_F_IMM,
                 0x1e04);

    /* READ back what the WRITE put there, and a fetch-and-add. */
    uz_mr_fill(x.p.ma, 0, 0, MSG_LEN);
    s = uz_mr_sge(x.p.ma, 0, MSG_LEN);
    wr = (UzWr) {
        .wr_id = 0x3d01, .opcode = UZ_WR_RDMA_READ,
        .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1,
        .remote_addr = uz_mr_va(x.p.mb, 16384), .rkey = x.p.mb->key,
        .xrc_srqn = x.srq[0]->srqn,
    };
    uz_post_send(x.ini, &wr);
    uz_sq_done(x.ini, 0x3d01, UZ_WC_RDMA_READ, MSG_LEN);
    uz_mr_read(x.p.ma, 0, got, MSG_LEN);
    uz_assert_bytes(got, data, MSG_LEN, "the READ");
    uz_mr_write(x.p.mb, 40000, &val, 8);
    s = uz_mr_sge(x.p.ma, 8192, 8);
    wr = (UzWr) {
        .wr_id = 0x3d02, .opcode = UZ_WR_ATOMIC_FETCH_ADD,
        .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1,
        .remote_addr = uz_mr_va(x.p.mb, 40000), .rkey = x.p.mb->key,
        .compare_add = 3, .xrc_srqn = x.srq[1]->srqn,
    };
    uz_post_send(x.ini, &wr);
    uz_sq_done(x.ini, 0x3d02, UZ_WC_FETCH_ADD, 8);
    uz_mr_read(x.p.ma, 8192, &val, 8);
    g_assert_cmpuint(le64_to_cpu(val), ==, 5);
    uz_mr_read(x.p.mb, 40000, &val, 8);
    g_assert_cmpuint(le64_to_cpu(val), ==, 8);

    uz_cq_assert_empty(x.cq[0], 8);
    uz_cq_assert_empty(x.cq[1], 8);
    g_assert_cmpint(uz_qp_state(x.tgt), ==, UZ_QPS_RTS);
    exchange(&x.p, UZ_WR_SEND, 3000);

    /*
     * The target took SRQ 1's CQ for its last message; that SRQ, not the
     * target, counts the CQ: once both are gone the CQ goes too.
     */
    g_assert_cmpint(obj_destroy(&x.p.n[1], UZ_CMD_DESTROY_QP, x.tgt->qpn),
                    ==, UZ_CMD_OK);
    g_assert_cmpint(obj_destroy(&x.p.n[1], UZ_CMD_DESTROY_CQ,
                                x.cq[1]->cqn), ==, UZ_CMD_BUSY);
    g_assert_cmpint(obj_destroy(&x.p.n[1], UZ_CMD_DESTROY_SRQ,
                                x.srq[1]->srqn), ==, UZ_CMD_OK);
    g_assert_cmpint(obj_destroy(&x.p.n[1], UZ_CMD_DESTROY_CQ,
                                x.cq[1]->cqn), ==, UZ_CMD_OK);
    pair_stop(&x.p);
}

/*
 * A lost request packet: go-back-N sends the message again from its
 * first packet, XRCETH and all, and it lands once.
 */
static void test_loss(void)
{
    g_autofree uint8_t *data = g_malloc(MSG_LEN);
    struct uz_cqe c;
    UzSge r;
    Xrc x;

    xrc_start(&x);
    r = uz_mr_sge(x.p.mb, 0, 4096);
    uz_srq_post(x.srq[0], 0x9201, &r, 1);
    rules_set(&x.p, 0, "kind=request nth=2 drop");
    xrc_post(&x, UZ_WR_SEND, MSG_LEN, 7, x.srq[0]->srqn, 0);
    uz_cq_wait_clock(x.ini->scq, &c, STEP_NS, 100);
    uz_expect_sq(&c, 0x3c07, UZ_WC_SEND, x.ini, MSG_LEN);
    g_assert_cmpuint(rule_acted(&x.p, 0, 1), ==, 1);
    xrc_received(&x, 0, 0x9201, UZ_WC_RECV, MSG_LEN, 0, 0);
    uz_pattern(data, MSG_LEN, 7);
    uz_assert_mr(x.p.mb, 0, data, MSG_LEN, "the SEND sent again");
    uz_cq_assert_empty(x.cq[0], 8);
    pair_stop(&x.p);
}

/*
 * Selective repeat: the target keeps what follows a lost packet and asks
 * for the hole with a SACK (uzura's opcode, which has no XRC twin), which
 * reaches the initiator.
 */
static void test_sr(void)
{
    g_autofree uint8_t *data = g_malloc(5000);
    uint64_t sacks;
    struct uz_cqe c;
    UzSge r;
    Xrc x;

    xrc_start(&x);
    pair_set_str(&x.p, 0, "recovery", "sr", true);
    pair_set_str(&x.p, 1, "recovery", "sr", true);
    sacks = uz_counter(&x.p.m, 0, "sacks_rcvd");
    r = uz_mr_sge(x.p.mb, 0, 8192);
    uz_srq_post(x.srq[1], 0x9401, &r, 1);
    rules_set(&x.p, 0, "kind=request nth=2 drop");
    xrc_post(&x, UZ_WR_SEND, 5000, 0x31, x.srq[1]->srqn, 0);
    uz_cq_wait_clock(x.ini->scq, &c, STEP_NS, 100);
    uz_expect_sq(&c, 0x3c31, UZ_WC_SEND, x.ini, 5000);
    g_assert_cmpuint(uz_counter(&x.p.m, 0, "sacks_rcvd"), >, sacks);
    xrc_received(&x, 1, 0x9401, UZ_WC_RECV, 5000, 0, 0);
    uz_pattern(data, 5000, 0x31);
    uz_assert_mr(x.p.mb, 0, data, 5000, "the SEND repaired by SACK");
    pair_stop(&x.p);
}

/*
 * Start a SEND of three packets to SRQ 1 whose middle packet is lost
 * until the rule goes: the target holds SRQ 1's WQE @wr_id in the middle
 * of the message.
 */
static void xrc_stall(Xrc *x, uint64_t wr_id)
{
    uint64_t naks = uz_counter(&x->p.m, 1, "nak_seq_sent");
    UzSge r = uz_mr_sge(x->p.mb, 0, 4096);

    uz_srq_post(x->srq[1], wr_id, &r, 1);
    rules_set(&x->p, 0, "kind=request psn=0xabd drop");
    xrc_post(x, UZ_WR_SEND, MSG_LEN, 0x60, x->srq[1]->srqn, 0);
    /* The Last found the hole: the First has taken the WQE. */
    uz_counter_wait(&x->p.n[1], "nak_seq_sent", naks + 1);
}

/*
 * An SRQ destroyed in the middle of a message, and a new one given its
 * number: the rest of the message reaches neither the new SRQ nor the
 * WQE the target held, but fails (invalid request); the new SRQ's WQE
 * and CQ are untouched.
 */
static void test_srq_reused(void)
{
    UzNode *n1;
    UzSrq *old;
    struct uz_cqe c;
    UzSge r;
    Xrc x;

    xrc_start(&x);
    n1 = &x.p.n[1];
    xrc_stall(&x, 0x9501);
    old = x.srq[1];
    g_assert_cmpint(obj_destroy(n1, UZ_CMD_DESTROY_SRQ, old->srqn), ==,
                    UZ_CMD_OK);
    x.srq[1] = xrc_srq(n1, x.xrcd, x.cq[1], n1->pdn);
    g_assert_cmpuint(x.srq[1]->srqn, ==, old->srqn);
    r = uz_mr_sge(x.p.mb, 8192, 4096);
    uz_srq_post(x.srq[1], 0x9601, &r, 1);
    rules_set(&x.p, 0, "");
    uz_cq_wait_clock(x.ini->scq, &c, STEP_NS, 100);
    uz_cqe_expect(&c, 0x3c60, UZ_WC_SEND, UZ_WC_STATUS_REM_INV_REQ_ERR, 0,
                  x.ini->qpn);
    uz_cq_assert_empty(x.cq[1], 8);

    xrc_fresh(&x);
    xrc_post(&x, UZ_WR_SEND, 64, 0x61, x.srq[1]->srqn, 0);
    uz_sq_done(x.ini, 0x3c61, UZ_WC_SEND, 64);
    xrc_received(&x, 1, 0x9601, UZ_WC_RECV, 64, 0, 0);
    pair_stop(&x.p);
}

/*
 * A target moved to RESET in the middle of a message completes the WQE
 * it held into that SRQ's CQ, flushed: it is a process's, and no Last WQE
 * Reached would tell it.
 */
static void test_reset_held(void)
{
    struct uz_cqe c;
    Xrc x;

    xrc_start(&x);
    xrc_stall(&x, 0x9701);
    uz_qp_set_state(x.tgt, UZ_QPS_RESET);
    uz_cq_wait(x.cq[1], &c);
    uz_cqe_expect(&c, 0x9701, UZ_WC_RECV, UZ_WC_STATUS_WR_FLUSH_ERR, 0,
                  x.tgt->qpn);
    g_assert_cmphex(c.wc_flags, ==, UZ_WC_F_XRC);
    g_assert_cmpuint(c.src_qp, ==, x.srq[1]->srqn);
    uz_qp_set_state(x.ini, UZ_QPS_ERR);
    rules_set(&x.p, 0, "");
    xrc_fresh(&x);
    exchange(&x.p, UZ_WR_SEND, 3000);
    pair_stop(&x.p);
}

/* @fr onto the hub through @sock, after its length (4 bytes, BE). */
static void wire_send_frame(int sock, const UzFrame *fr)
{
    uint8_t hdr[4];

    stl_be_p(hdr, fr->len);
    g_assert_cmpint(send(sock, hdr, 4, 0), ==, 4);
    g_assert_cmpint(send(sock, fr->data, fr->len, 0), ==, fr->len);
}

/*
 * A peer that sends again, for another SRQ, a message whose receive WQE
 * the target took and holds (its buffer's ODP page was absent: an RNR
 * NAK): an invalid request, and the WQE completes, failed, into its own
 * SRQ's CQ, never the other's.  The frame is the initiator's, captured
 * from the link, its XRCETH changed.
 */
static void test_forged_srq(void)
{
    uint8_t op = UZ_BTH_OP_XRC | UZ_BTH_OP_SEND_ONLY;
    struct uz_eqe eqe;
    struct uz_cqe c;
    UzFrame fr, got;
    UzNode *n1;
    UzMr *odp;
    UzSge r;
    Xrc x;
    int sock, i;

    memset(&x, 0, sizeof(x));
    sock = uz_wire_machine_start(&x.p.m, 2, NULL);
    pair_init(&x.p);
    xrc_init(&x);
    n1 = &x.p.n[1];
    odp = uz_mr_reg_odp(n1, 1);
    r = uz_mr_sge(odp, 0, 4096);
    uz_srq_post(x.srq[0], 0x9801, &r, 1);
    r = uz_mr_sge(x.p.mb, 0, 4096);
    uz_srq_post(x.srq[1], 0x9802, &r, 1);
    uz_wire_drain(sock, &x.p.n[0].d);

    xrc_post(&x, UZ_WR_SEND, 64, 0x70, x.srq[0]->srqn, 0);
    fr.len = 0;
    while (uz_wire_recv(sock, &x.p.n[0].d, &got)) {
        if (uz_frame_is_roce(&got) && got.data[UZ_OFF_BTH] == op) {
            fr = got;
            break;
        }
    }
    g_assert_cmpuint(fr.len, >, 0);
    g_assert_cmpuint(ldl_be_p(fr.data + UZ_OFF_BTH + UZ_BTH_LEN), ==,
                     x.srq[0]->srqn);
    /* The target took the WQE, met the absent page and said RNR. */
    for (i = 0; i < UZ_POLL_LIMIT; i++) {
        if (uz_eq_next(&n1->d, &n1->async_eq, &eqe)) {
            break;
        }
        uz_poll_pause(&n1->d);
    }
    g_assert_cmpint(eqe.type, ==, UZ_EQE_PAGE_FAULT);
    uz_ring(&n1->d, n1->async_eq.db, n1->async_eq.ci);
    uz_odp_serve(odp, le32_to_cpu(eqe.data), false);

    stl_be_p(fr.data + UZ_OFF_BTH + UZ_BTH_LEN, x.srq[1]->srqn);
    stl_le_p(fr.data + fr.len - 4, uz_icrc(fr.data, fr.len));
    wire_send_frame(sock, &fr);
    uz_cq_wait(x.cq[0], &c);
    uz_cqe_expect(&c, 0x9801, UZ_WC_RECV, UZ_WC_STATUS_REM_INV_REQ_ERR, 0,
                  x.tgt->qpn);
    g_assert_cmphex(c.wc_flags, ==, UZ_WC_F_XRC);
    g_assert_cmpuint(c.src_qp, ==, x.srq[0]->srqn);
    uz_cq_wait(x.ini->scq, &c);
    uz_cqe_expect(&c, 0x3c70, UZ_WC_SEND, UZ_WC_STATUS_REM_INV_REQ_ERR, 0,
                  x.ini->qpn);
    uz_cq_assert_empty(x.cq[1], 8);
    g_assert_cmpint(uz_qp_state(x.tgt), ==, UZ_QPS_ERR);
    close(sock);
    pair_stop(&x.p);
}

/* The initiator's request fails at the target: both QPs end in ERR. */
static void xrc_refused(Xrc *x, uint8_t op, uint32_t srqn, uint8_t status)
{
    struct uz_cqe c;

    xrc_post(x, op, 64, 0x40, srqn, 0);
    uz_cq_wait_clock(x->ini->scq, &c, STEP_NS, 100);
    uz_cqe_expect(&c, 0x3c40, uz_wc_opcode(op), status, 0, x->ini->qpn);
    g_assert_cmpint(uz_qp_state(x->tgt), ==, UZ_QPS_ERR);
    xrc_fresh(x);
}

/*
 * Requests no SRQ of the target's domain can take: an XRC SRQ of another
 * domain, a plain SRQ, no SRQ, one destroyed; a WRITE through an rkey of
 * a PD the SRQ is not in; CRW and window binds on an initiator.  Each
 * fails, and the SRQs, their WQEs and the RC pair go on.
 */
static void test_bad(void)
{
    UzNode *n1;
    UzSrq *other, *plain, *gone, *pd2;
    UzCq *cq2;
    struct uz_cqe c;
    uint32_t xrcd2;
    UzSge r;
    UzWr wr;
    Xrc x;

    xrc_start(&x);
    n1 = &x.p.n[1];
    xrcd2 = xrcd_alloc(n1);
    cq2 = uz_cq_create(n1, UZ_CQ_LOG_DEPTH);
    other = xrc_srq(n1, xrcd2, cq2, n1->pdn);
    plain = uz_srq_create(n1, 4, 0);
    gone = xrc_srq(n1, x.xrcd, cq2, n1->pdn);
    pd2 = xrc_srq(n1, x.xrcd, cq2, uz_pd_alloc(n1));
    g_assert_cmpint(obj_destroy(n1, UZ_CMD_DESTROY_SRQ, gone->srqn), ==,
                    UZ_CMD_OK);
    r = uz_mr_sge(x.p.mb, 0, 4096);
    uz_srq_post(x.srq[0], 0x9301, &r, 1);
    uz_srq_post(other, 0x9302, &r, 1);
    uz_srq_post(plain, 0x9303, &r, 1);
    uz_srq_post(pd2, 0x9304, &r, 1);

    xrc_refused(&x, UZ_WR_SEND, other->srqn, UZ_WC_STATUS_REM_INV_REQ_ERR);
    xrc_refused(&x, UZ_WR_SEND, plain->srqn, UZ_WC_STATUS_REM_INV_REQ_ERR);
    xrc_refused(&x, UZ_WR_SEND, 0x123456, UZ_WC_STATUS_REM_INV_REQ_ERR);
    xrc_refused(&x, UZ_WR_RDMA_WRITE, gone->srqn,
                UZ_WC_STATUS_REM_INV_REQ_ERR);
    /* mb is in the node's first PD; pd2's SRQ gives its own. */
    xrc_refused(&x, UZ_WR_RDMA_WRITE, pd2->srqn, UZ_WC_STATUS_REM_ACCESS_ERR);
    uz_cq_assert_empty(cq2, 8);

    /* No CRW and no window on an initiator: local errors. */
    wr = (UzWr) { .wr_id = 0x3e01, .opcode = UZ_WR_CRW,
                  .flags = UZ_WQE_F_SIGNALED, .tag = 1 };
    uz_post_send(x.ini, &wr);
    uz_cq_wait(x.ini->scq, &c);
    uz_cqe_expect(&c, 0x3e01, UZ_WC_CRW, UZ_WC_STATUS_LOC_QP_OP_ERR,
                  UZ_VERR_BAD_WQE, x.ini->qpn);
    xrc_fresh(&x);
    wr = (UzWr) { .wr_id = 0x3e02, .opcode = UZ_WR_BIND_MW,
                  .flags = UZ_WQE_F_SIGNALED, .rkey = 0x100,
                  .bind_mr_key = x.p.ma->key, .reg_length = 8 };
    uz_post_send(x.ini, &wr);
    uz_cq_wait(x.ini->scq, &c);
    uz_cqe_expect(&c, 0x3e02, UZ_WC_BIND_MW, UZ_WC_STATUS_LOC_QP_OP_ERR,
                  UZ_VERR_BAD_WQE, x.ini->qpn);
    xrc_fresh(&x);

    /* The WQE posted before all this is still SRQ 0's first. */
    xrc_post(&x, UZ_WR_SEND, 200, 9, x.srq[0]->srqn, 0);
    uz_sq_done(x.ini, 0x3c09, UZ_WC_SEND, 200);
    xrc_received(&x, 0, 0x9301, UZ_WC_RECV, 200, 0, 0);
    exchange(&x.p, UZ_WR_SEND, 3000);
    pair_stop(&x.p);
}

/*
 * RC opcodes reach no XRC target and XRC opcodes no RC QP (rx_no_qp):
 * an RC QP connected to a target's number, an initiator to an RC QP's.
 */
static void test_wire(void)
{
    UzRcOpts o = UZ_RC_OPTS_DEFAULT;
    uint64_t noqp;
    UzQp *rc, *ini;
    UzSge s;
    UzWr wr;
    Xrc x;

    xrc_start(&x);
    noqp = uz_counter(&x.p.m, 1, "rx_no_qp");
    rc = uz_qp_create(&x.p.n[0], UZ_QPT_RC, NULL, NULL, NULL, 0);
    uz_rc_init(rc);
    uz_rc_rtr(rc, x.tgt, XRC_PSN, &o);
    uz_rc_rts(rc, XRC_PSN, &o);
    s = uz_mr_sge(x.p.ma, 0, 64);
    wr = (UzWr) { .wr_id = 0x3f01, .opcode = UZ_WR_RDMA_WRITE, .sge = &s,
                  .num_sge = 1, .remote_addr = uz_mr_va(x.p.mb, 0),
                  .rkey = x.p.mb->key, .flags = UZ_WQE_F_SIGNALED };
    uz_post_send(rc, &wr);
    uz_counter_wait(&x.p.n[1], "rx_no_qp", noqp + 1);

    noqp = uz_counter(&x.p.m, 1, "rx_no_qp");
    ini = xrc_qp(&x.p.n[0], UZ_QPT_XRC_INI, 0);
    uz_rc_init(ini);
    g_assert_cmpint(uz_uc_rtr_try(ini, x.p.qb, XRC_PSN, 0), ==, UZ_CMD_OK);
    uz_rc_rts(ini, XRC_PSN, &o);
    wr.wr_id = 0x3f02;
    wr.xrc_srqn = x.srq[0]->srqn;
    uz_post_send(ini, &wr);
    uz_counter_wait(&x.p.n[1], "rx_no_qp", noqp + 1);
    g_assert_cmpint(uz_qp_state(x.p.qb), ==, UZ_QPS_RTS);
    uz_qp_set_state(rc, UZ_QPS_ERR);
    uz_qp_set_state(ini, UZ_QPS_ERR);
    exchange(&x.p, UZ_WR_RDMA_WRITE, 3000);
    pair_stop(&x.p);
}

/*
 * The commands: 64 domains; what names no domain, CQ or XRC SRQ is
 * refused; a domain with an SRQ or target, and the CQ of an XRC SRQ,
 * cannot go until they have gone; no RC QP takes an XRC SRQ.
 */
static void test_cmds(void)
{
    UzQp *tgt, *rc;
    UzSrq *srq;
    UzCq *cq;
    uint32_t xrcd, d[UZ_XRCD_MAX];
    struct uz_cmd_create_qp c;
    struct uz_admin_cqe cqe;
    int i, n;
    Xrc x;
    UzNode *n1;
    UzSge r;

    xrc_start(&x);
    n1 = &x.p.n[1];
    for (n = 0; xrcd_alloc_try(n1, &d[n]) == UZ_CMD_OK; n++) {
        g_assert_cmpint(n, <, UZ_XRCD_MAX);
    }
    g_assert_cmpint(n, ==, UZ_XRCD_MAX - 1);    /* x.xrcd is the 64th */
    g_assert_cmpint(xrcd_alloc_try(n1, &xrcd), ==, UZ_CMD_NO_RESOURCES);
    for (i = 0; i < n; i++) {
        g_assert_cmpint(xrcd_dealloc(n1, d[i]), ==, UZ_CMD_OK);
    }
    g_assert_cmpint(xrcd_dealloc(n1, d[0]), ==, UZ_CMD_BAD_HANDLE);
    g_assert_cmpint(xrcd_dealloc(n1, UZ_XRCD_MAX), ==, UZ_CMD_BAD_HANDLE);

    xrcd = xrcd_alloc(n1);
    cq = uz_cq_create(n1, UZ_CQ_LOG_DEPTH);
    g_assert_cmpint(xrc_srq_try(n1, xrcd + 1, cq->cqn, n1->pdn, UZ_SRQF_XRC,
                                &srq), ==, UZ_CMD_BAD_HANDLE);
    g_assert_cmpint(xrc_srq_try(n1, xrcd, 0xffff, n1->pdn, UZ_SRQF_XRC,
                                &srq), ==, UZ_CMD_BAD_HANDLE);
    g_assert_cmpint(xrc_srq_try(n1, xrcd, cq->cqn, n1->pdn, 0x82, &srq), ==,
                    UZ_CMD_BAD_PARAM);
    g_assert_cmpint(xrc_qp_try(n1, UZ_QPT_XRC_TGT, xrcd + 1, &tgt), ==,
                    UZ_CMD_BAD_HANDLE);
    srq = xrc_srq(n1, xrcd, cq, n1->pdn);
    tgt = xrc_qp(n1, UZ_QPT_XRC_TGT, xrcd);

    /* An RC QP cannot have an XRC SRQ. */
    rc = uz_own(n1, sizeof(*rc));
    c = (struct uz_cmd_create_qp) {
        .uctx = cpu_to_le32(n1->uctx), .type = UZ_QPT_RC,
        .pdn = cpu_to_le32(n1->pdn), .send_cqn = cpu_to_le32(cq->cqn),
        .recv_cqn = cpu_to_le32(cq->cqn), .srqn = cpu_to_le32(srq->srqn),
        .sq_addr = cpu_to_le64(uz_alloc(&n1->d, 4096)),
        .sq_log_depth = 4, .sq_log_wqe_size = 6,
    };
    g_assert_cmpint(uz_cmd(n1, UZ_CMD_CREATE_QP, &c, sizeof(c), &cqe), ==,
                    UZ_CMD_BAD_HANDLE);
    (void)rc;

    g_assert_cmpint(xrcd_dealloc(n1, xrcd), ==, UZ_CMD_BUSY);
    g_assert_cmpint(obj_destroy(n1, UZ_CMD_DESTROY_CQ, cq->cqn), ==,
                    UZ_CMD_BUSY);
    g_assert_cmpint(obj_destroy(n1, UZ_CMD_DESTROY_QP, tgt->qpn), ==,
                    UZ_CMD_OK);
    g_assert_cmpint(xrcd_dealloc(n1, xrcd), ==, UZ_CMD_BUSY);
    g_assert_cmpint(obj_destroy(n1, UZ_CMD_DESTROY_SRQ, srq->srqn), ==,
                    UZ_CMD_OK);
    g_assert_cmpint(obj_destroy(n1, UZ_CMD_DESTROY_CQ, cq->cqn), ==,
                    UZ_CMD_OK);
    g_assert_cmpint(xrcd_dealloc(n1, xrcd), ==, UZ_CMD_OK);

    /* The traffic of the domain set up before goes on. */
    r = uz_mr_sge(x.p.mb, 0, 4096);
    uz_srq_post(x.srq[0], 0x9401, &r, 1);
    xrc_post(&x, UZ_WR_SEND, 64, 10, x.srq[0]->srqn, 0);
    uz_sq_done(x.ini, 0x3c0a, UZ_WC_SEND, 64);
    xrc_received(&x, 0, 0x9401, UZ_WC_RECV, 64, 0, 0);
    pair_stop(&x.p);
}

/*
 * A target is the kernel's (context 0); the SRQ a READ names and the ODP
 * MR it reads are a process's.  The answer meets an absent page and waits
 * for it: the process's resume of its MR wakes the target too.
 */
static void test_odp(void)
{
    g_autofree uint8_t *data = g_malloc(4096);
    uint32_t uctx, pdn0, faults = 0;
    struct uz_admin_cqe cqe;
    struct uz_cqe c;
    struct uz_eqe eqe;
    UzSrq *srq;
    UzMr *mr;
    UzSge s;
    UzWr wr;
    UzNode *n1;
    Xrc x;
    int i;

    xrc_start(&x);
    n1 = &x.p.n[1];
    g_assert_cmpint(uz_cmd(n1, UZ_CMD_CREATE_UCTX, NULL, 0, &cqe), ==,
                    UZ_CMD_OK);
    uctx = le32_to_cpu(cqe.out0);
    pdn0 = n1->pdn;
    n1->uctx = uctx;
    n1->pdn = uz_pd_alloc(n1);
    srq = xrc_srq(n1, x.xrcd, uz_cq_create(n1, UZ_CQ_LOG_DEPTH), n1->pdn);
    mr = uz_mr_reg_odp(n1, 1);
    uz_pattern(data, 4096, 21);
    qtest_memwrite(n1->d.qts, mr->pages[0], data, 4096);

    s = uz_mr_sge(x.p.ma, 0, 4096);
    wr = (UzWr) { .wr_id = 0x3f10, .opcode = UZ_WR_RDMA_READ,
                  .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1,
                  .remote_addr = mr->iova, .rkey = mr->key,
                  .xrc_srqn = srq->srqn };
    uz_post_send(x.ini, &wr);
    for (i = 0; i < 100 && !uz_cq_poll(x.ini->scq, &c); i++) {
        while (uz_eq_next(&n1->d, &n1->async_eq, &eqe)) {
            uz_ring(&n1->d, n1->async_eq.db, n1->async_eq.ci);
            g_assert_cmpint(eqe.type, ==, UZ_EQE_PAGE_FAULT);
            g_assert_cmphex(le32_to_cpu(eqe.handle), ==, mr->key);
            uz_odp_serve(mr, le32_to_cpu(eqe.data), false);
            faults++;
        }
        qtest_clock_step(n1->d.qts, STEP_NS);
    }
    g_assert_cmpint(i, <, 100);
    g_assert_cmpuint(faults, ==, 1);
    uz_expect_sq(&c, 0x3f10, UZ_WC_RDMA_READ, x.ini, 4096);
    uz_assert_mr(x.p.ma, 0, data, 4096, "the READ of the ODP page");
    n1->uctx = 0;
    n1->pdn = pdn0;
    pair_stop(&x.p);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qtest_add_func("/uzura/xrc/traffic", test_traffic);
    qtest_add_func("/uzura/xrc/loss", test_loss);
    qtest_add_func("/uzura/xrc/sr", test_sr);
    qtest_add_func("/uzura/xrc/srq-reused", test_srq_reused);
    qtest_add_func("/uzura/xrc/reset-held", test_reset_held);
    qtest_add_func("/uzura/xrc/forged-srq", test_forged_srq);
    qtest_add_func("/uzura/xrc/bad", test_bad);
    qtest_add_func("/uzura/xrc/wire", test_wire);
    qtest_add_func("/uzura/xrc/cmds", test_cmds);
    qtest_add_func("/uzura/xrc/odp", test_odp);
    return g_test_run();
}
