/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uzura: errors of work requests.  Local and remote access violations,
 * malformed WQEs, RNR and retransmission, the error state and flushing
 * (spec 8.5, 8.7, 8.9-8.11, 9.6), and a fuzzer that posts random send
 * WQEs and checks that every one completes, in order, as the spec allows.
 *
 * Every test boots its own machine with two NICs on one hub.
 */
#include "uzura-verbs.h"

#define MS                  (1000 * 1000ll)
#define MR_LEN              (64 * 1024)

/* Guest-physical page far outside guest RAM (and any device). */
#define BAD_GPA             0xfffff00000000ull

typedef struct Env {
    UzMachine m;
    UzNode n[2];
} Env;

/* An RC pair: q[0] on NIC 0, q[1] on NIC 1, and an MR on each side. */
typedef struct Pair {
    UzQp *q[2];
    UzMr *mr[2];                /* MR_LEN bytes, UZ_ACCESS_ALL */
} Pair;

static void env_start(Env *e)
{
    uz_machine_start(&e->m, 2, NULL);
    uz_node_start(&e->n[0], &e->m, 0);
    uz_node_start(&e->n[1], &e->m, 1);
}

static void env_stop(Env *e)
{
    uz_node_stop(&e->n[0]);
    uz_node_stop(&e->n[1]);
    uz_machine_stop(&e->m);
}

/* The QPs and MRs of a pair, QPs left in RESET. */
static void pair_create(Env *e, Pair *p)
{
    int i;

    for (i = 0; i < 2; i++) {
        p->q[i] = uz_qp_create(&e->n[i], UZ_QPT_RC, NULL, NULL, NULL, 0);
        p->mr[i] = uz_mr_reg(&e->n[i], MR_LEN, UZ_ACCESS_ALL);
    }
}

static void pair_init(Env *e, Pair *p, const UzRcOpts *o)
{
    pair_create(e, p);
    uz_rc_connect(p->q[0], p->q[1], o);
}

/*
 * Wait for a CQE that needs no timer: the virtual clock stays where it
 * is.  Gives up sooner than uz_cq_wait(), and says why.
 */
static void cq_wait_noclock(UzCq *cq, struct uz_cqe *c)
{
    int i;

    for (i = 0; i < 20000; i++) {
        if (uz_cq_poll(cq, c)) {
            return;
        }
        uz_poll_pause(&cq->n->d);
    }
    g_error("uz%d: no CQE on CQ %u without the clock (it needs no timer)",
            cq->n->idx, cq->cqn);
}

/* Wait for a CQE; with @step_ns, stepping the virtual clock. */
static void cq_wait(UzCq *cq, struct uz_cqe *c, int64_t step_ns)
{
    if (step_ns) {
        uz_cq_wait_clock(cq, c, step_ns, 200);
    } else {
        cq_wait_noclock(cq, c);
    }
}

/* ------------------------------------------------------------------ */
/* A pair that moves data                                             */
/* ------------------------------------------------------------------ */

/*
 * SEND, RDMA WRITE and RDMA READ from p->q[0] to p->q[1], RTS both, with
 * data checked; p->q[1] must have no receive posted.
 */
static void check_pair_works(Pair *p, uint32_t seed)
{
    UzQp *qa = p->q[0], *qb = p->q[1];
    UzMr *ma = p->mr[0], *mb = p->mr[1];
    const size_t len = 3000;
    g_autofree uint8_t *data = g_malloc(len);
    g_autofree uint8_t *out = g_malloc(len);
    struct uz_cqe c;
    UzSge s, r;
    UzWr wr;

    /* SEND */
    uz_pattern(data, len, seed);
    uz_mr_write(ma, 0, data, len);
    uz_mr_fill(mb, 0, 0, 2 * len);
    r = uz_mr_sge(mb, 0, 2 * len);
    uz_post_recv(qb, 0xa000 + seed, &r, 1);
    s = uz_mr_sge(ma, 0, len);
    wr = (UzWr) { .wr_id = 0xb000 + seed, .opcode = UZ_WR_SEND,
                  .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1 };
    uz_post_send(qa, &wr);
    uz_cq_wait(qa->scq, &c);
    uz_cqe_expect(&c, 0xb000 + seed, UZ_WC_SEND, UZ_WC_STATUS_SUCCESS, 0,
                  qa->qpn);
    uz_cq_wait(qb->rcq, &c);
    uz_cqe_expect(&c, 0xa000 + seed, UZ_WC_RECV, UZ_WC_STATUS_SUCCESS, 0,
                  qb->qpn);
    g_assert_cmpint(c.byte_len, ==, len);
    uz_mr_read(mb, 0, out, len);
    g_assert(!memcmp(data, out, len));

    /* RDMA WRITE */
    uz_pattern(data, len, seed + 1);
    uz_mr_write(ma, 0, data, len);
    wr = (UzWr) { .wr_id = 0xc000 + seed, .opcode = UZ_WR_RDMA_WRITE,
                  .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1,
                  .remote_addr = uz_mr_va(mb, 8192), .rkey = mb->key };
    uz_post_send(qa, &wr);
    uz_cq_wait(qa->scq, &c);
    uz_cqe_expect(&c, 0xc000 + seed, UZ_WC_RDMA_WRITE, UZ_WC_STATUS_SUCCESS,
                  0, qa->qpn);
    uz_mr_read(mb, 8192, out, len);
    g_assert(!memcmp(data, out, len));

    /* RDMA READ of it back */
    uz_mr_fill(ma, 16384, 0, len);
    s = uz_mr_sge(ma, 16384, len);
    wr = (UzWr) { .wr_id = 0xd000 + seed, .opcode = UZ_WR_RDMA_READ,
                  .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1,
                  .remote_addr = uz_mr_va(mb, 8192), .rkey = mb->key };
    uz_post_send(qa, &wr);
    uz_cq_wait(qa->scq, &c);
    uz_cqe_expect(&c, 0xd000 + seed, UZ_WC_RDMA_READ, UZ_WC_STATUS_SUCCESS,
                  0, qa->qpn);
    g_assert_cmpint(c.byte_len, ==, len);
    uz_mr_read(ma, 16384, out, len);
    g_assert(!memcmp(data, out, len));

    g_assert_cmpint(uz_qp_state(qa), ==, UZ_QPS_RTS);
    g_assert_cmpint(uz_qp_state(qb), ==, UZ_QPS_RTS);
}

/* A new RC pair on the same NICs works. */
static void check_fresh_pair(Env *e)
{
    Pair p;

    pair_init(e, &p, NULL);
    check_pair_works(&p, 0x42);
}

/* ------------------------------------------------------------------ */
/* The failing-WQE check                                              */
/* ------------------------------------------------------------------ */

enum {
    PEER_RTS,                   /* the peer QP is untouched */
    PEER_ERR,                   /* the peer QP fails too */
};

typedef struct Expect {
    uint8_t opcode;             /* UZ_WC_* of the failing CQE, UZ_WC_ANY */
    uint8_t status;
    uint8_t verr;
    int peer;
    uint8_t peer_event;         /* PEER_ERR: its async event, 0 none */
    int64_t step_ns;            /* wait stepping the clock; 0: no clock */
    bool link_down;             /* NIC 0's link down while it runs */
} Expect;

/*
 * Post the raw WQE @wqe on p->q[0] followed by a healthy RDMA WRITE, and
 * check: the WQE fails as @x says, the WRITE is flushed, the QP is in ERR
 * with no async event (its CQE says it), the peer as @x says, and a new
 * pair on the same NICs still moves data.
 */
static void check_bad_wqe(Env *e, Pair *p, const void *wqe, size_t len,
                          const Expect *x)
{
    UzQp *qp = p->q[0], *peer = p->q[1];
    uint64_t wr_id = ldq_le_p(wqe);
    UzSge s = uz_mr_sge(p->mr[0], 0, 64);
    UzWr next = {
        .wr_id = wr_id + 1, .opcode = UZ_WR_RDMA_WRITE,
        .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1,
        .remote_addr = uz_mr_va(p->mr[1], MR_LEN - 64), .rkey = p->mr[1]->key,
    };
    struct uz_cqe c;

    if (x->link_down) {
        uz_link_set(&e->m, 0, false);
    }
    uz_sq_put(qp, wqe, len);
    uz_sq_post(qp, &next);
    uz_sq_ring(qp);

    cq_wait(qp->scq, &c, x->step_ns);
    uz_cqe_expect(&c, wr_id, x->opcode, x->status, x->verr, qp->qpn);
    cq_wait(qp->scq, &c, x->step_ns);
    uz_cqe_expect(&c, wr_id + 1, UZ_WC_RDMA_WRITE, UZ_WC_STATUS_WR_FLUSH_ERR,
                  0, qp->qpn);
    uz_qp_failed(qp, 0);
    uz_cq_assert_empty(qp->scq, 10);
    if (x->link_down) {
        uz_link_set(&e->m, 0, true);
    }

    if (x->peer == PEER_ERR) {
        uz_qp_failed(peer, x->peer_event);
    } else {
        g_assert_cmpint(uz_qp_state(peer), ==, UZ_QPS_RTS);
    }
    check_fresh_pair(e);
}

static void check_bad_wr(Env *e, Pair *p, const UzWr *wr, const Expect *x)
{
    uint64_t buf[UZ_SQ_WQE_SIZE / 8];
    size_t len = uz_wqe_build(wr, false, buf);

    check_bad_wqe(e, p, buf, len, x);
}

/* A SEND from the one SGE @s, which fails a local check (8.10). */
static void check_bad_send_sge(Env *e, Pair *p, UzSge s, uint8_t verr)
{
    UzWr wr = { .wr_id = 0x1000, .opcode = UZ_WR_SEND,
                .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1 };
    Expect x = { .opcode = UZ_WC_SEND, .status = UZ_WC_STATUS_LOC_PROT_ERR,
                 .verr = verr, .peer = PEER_RTS };

    check_bad_wr(e, p, &wr, &x);
}

/* ------------------------------------------------------------------ */
/* 1. Local access checks                                             */
/* ------------------------------------------------------------------ */

static void case_local_bad_lkey(Env *e)
{
    Pair p;
    uint32_t key;

    pair_init(e, &p, NULL);
    /* Right index, wrong key byte. */
    key = p.mr[0]->key ^ 0x80;
    check_bad_send_sge(e, &p, (UzSge) { uz_mr_va(p.mr[0], 0), 64, key },
                       UZ_VERR_BAD_LKEY);
}

static void case_local_lkey_index0(Env *e)
{
    Pair p;

    pair_init(e, &p, NULL);
    check_bad_send_sge(e, &p, (UzSge) { uz_mr_va(p.mr[0], 0), 64,
                                        p.mr[0]->key & 0xff },
                       UZ_VERR_BAD_LKEY);
}

static void case_local_lkey_no_mr(Env *e)
{
    Pair p;

    pair_init(e, &p, NULL);
    /* An index past max_mr (4096), and one in range with no MR. */
    check_bad_send_sge(e, &p, (UzSge) { uz_mr_va(p.mr[0], 0), 64,
                                        (0xfff0u << 8) | 0x11 },
                       UZ_VERR_BAD_LKEY);
    pair_init(e, &p, NULL);
    check_bad_send_sge(e, &p, (UzSge) { uz_mr_va(p.mr[0], 0), 64,
                                        (4000u << 8) | 0x11 },
                       UZ_VERR_BAD_LKEY);
}

static void case_local_other_pd(Env *e)
{
    Pair p;
    uint32_t pd2 = uz_pd_alloc(&e->n[0]);
    UzMr *mr;

    g_assert_cmpint(pd2, !=, e->n[0].pdn);
    mr = uz_mr_reg_pd(&e->n[0], pd2, 4096, UZ_ACCESS_ALL);
    pair_init(e, &p, NULL);
    check_bad_send_sge(e, &p, uz_mr_sge(mr, 0, 64), UZ_VERR_PD);
}

/* READ and atomic results into an MR without LOCAL_WRITE. */
static void case_local_access(Env *e)
{
    UzMr *ro = uz_mr_reg(&e->n[0], 4096, UZ_ACCESS_REMOTE_READ);
    Expect x = { .status = UZ_WC_STATUS_LOC_PROT_ERR,
                 .verr = UZ_VERR_ACCESS, .peer = PEER_RTS };
    uint8_t data[256], out[256];
    struct uz_cqe c;
    Pair p;
    UzSge s;
    UzWr wr;

    pair_init(e, &p, NULL);
    /* Local reads are always allowed: a WRITE from it works. */
    uz_pattern(data, sizeof(data), 9);
    uz_mr_write(ro, 0, data, sizeof(data));
    s = uz_mr_sge(ro, 0, sizeof(data));
    wr = (UzWr) { .wr_id = 0x1100, .opcode = UZ_WR_RDMA_WRITE,
                  .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1,
                  .remote_addr = uz_mr_va(p.mr[1], 0), .rkey = p.mr[1]->key };
    uz_post_send(p.q[0], &wr);
    uz_cq_wait(p.q[0]->scq, &c);
    uz_cqe_expect(&c, 0x1100, UZ_WC_RDMA_WRITE, UZ_WC_STATUS_SUCCESS, 0,
                  p.q[0]->qpn);
    uz_mr_read(p.mr[1], 0, out, sizeof(out));
    g_assert(!memcmp(data, out, sizeof(data)));

    s = uz_mr_sge(ro, 0, 256);
    wr = (UzWr) { .wr_id = 0x1110, .opcode = UZ_WR_RDMA_READ,
                  .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1,
                  .remote_addr = uz_mr_va(p.mr[1], 0), .rkey = p.mr[1]->key };
    x.opcode = UZ_WC_RDMA_READ;
    check_bad_wr(e, &p, &wr, &x);

    pair_init(e, &p, NULL);
    s = uz_mr_sge(ro, 8, 8);
    wr = (UzWr) { .wr_id = 0x1120, .opcode = UZ_WR_ATOMIC_FETCH_ADD,
                  .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1,
                  .remote_addr = uz_mr_va(p.mr[1], 8), .rkey = p.mr[1]->key,
                  .compare_add = 1 };
    x.opcode = UZ_WC_FETCH_ADD;
    check_bad_wr(e, &p, &wr, &x);
}

/* A SEND whose second SGE of three is the byte just past the MR. */
static void check_bad_second_sge(Env *e, Pair *p)
{
    UzSge s[3] = {
        uz_mr_sge(p->mr[0], 0, 16),
        { uz_mr_va(p->mr[0], MR_LEN), 1, p->mr[0]->key },
        uz_mr_sge(p->mr[0], 32, 16),
    };
    UzWr wr = { .wr_id = 0x1200, .opcode = UZ_WR_SEND,
                .flags = UZ_WQE_F_SIGNALED, .sge = s, .num_sge = 3 };
    Expect x = { .opcode = UZ_WC_SEND,
                 .status = UZ_WC_STATUS_LOC_PROT_ERR,
                 .verr = UZ_VERR_BOUNDS, .peer = PEER_RTS };

    check_bad_wr(e, p, &wr, &x);
}

static void case_local_bounds(Env *e)
{
    Pair p;

    /* Runs past the end. */
    pair_init(e, &p, NULL);
    check_bad_send_sge(e, &p, (UzSge) { uz_mr_va(p.mr[0], MR_LEN - 100),
                                        200, p.mr[0]->key },
                       UZ_VERR_BOUNDS);
    /* Starts before the MR. */
    pair_init(e, &p, NULL);
    check_bad_send_sge(e, &p, (UzSge) { uz_mr_va(p.mr[0], 0) - 8, 16,
                                        p.mr[0]->key },
                       UZ_VERR_BOUNDS);
    /* Second SGE of three out of bounds. */
    pair_init(e, &p, NULL);
    check_bad_second_sge(e, &p);
}

/*
 * uz_mr_set_page() rewrites entry k of the MR's page list in guest memory
 * (and the test's own copy): the device, which has not translated the
 * page yet, reads the new address, which no RAM or device backs.
 */
static void case_local_dma(Env *e)
{
    UzMr *bad = uz_mr_reg(&e->n[0], 2 * UZ_PAGE_SIZE, UZ_ACCESS_ALL);
    UzMr *bad2 = uz_mr_reg(&e->n[0], 2 * UZ_PAGE_SIZE, UZ_ACCESS_ALL);
    Pair p;

    uz_mr_set_page(bad, 0, BAD_GPA);
    pair_init(e, &p, NULL);
    check_bad_send_sge(e, &p, uz_mr_sge(bad, 0, 64), UZ_VERR_DMA);

    /* Only the second page of the data is bad. */
    uz_mr_set_page(bad2, 1, BAD_GPA + UZ_PAGE_SIZE);
    pair_init(e, &p, NULL);
    check_bad_send_sge(e, &p, uz_mr_sge(bad2, UZ_PAGE_SIZE - 32, 64),
                       UZ_VERR_DMA);
}

/* ------------------------------------------------------------------ */
/* 2. Malformed WQEs                                                  */
/* ------------------------------------------------------------------ */

static void check_malformed(Env *e, Pair *p, const void *wqe, size_t len,
                            uint8_t opcode)
{
    Expect x = { .opcode = opcode, .status = UZ_WC_STATUS_LOC_QP_OP_ERR,
                 .verr = UZ_VERR_BAD_WQE, .peer = PEER_RTS };

    check_bad_wqe(e, p, wqe, len, &x);
}

static void check_malformed_wr(Env *e, Pair *p, const UzWr *wr,
                               uint8_t opcode)
{
    uint64_t buf[UZ_SQ_WQE_SIZE / 8];
    size_t len = uz_wqe_build(wr, false, buf);

    check_malformed(e, p, buf, len, opcode);
}

static void case_bad_opcode(Env *e)
{
    static const uint8_t ops[] = { 0x3f, 0x0d, 0x12, 0x80, 0xff };
    Pair p;
    UzSge s;
    UzWr wr;
    int i;

    for (i = 0; i < ARRAY_SIZE(ops); i++) {
        pair_init(e, &p, NULL);
        s = uz_mr_sge(p.mr[0], 0, 64);
        wr = (UzWr) { .wr_id = 0x2000 + i * 16, .opcode = ops[i],
                      .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1,
                      .remote_addr = uz_mr_va(p.mr[1], 0),
                      .rkey = p.mr[1]->key };
        /* The opcode of the error CQE of an unknown opcode is not set. */
        check_malformed_wr(e, &p, &wr, UZ_WC_ANY);
    }
}

/* A SEND of 12 valid SGEs whose num_sge then says @num_sge. */
static void check_num_sge(Env *e, uint8_t num_sge)
{
    uint64_t buf[UZ_SQ_WQE_SIZE / 8];
    struct uz_send_wqe *w = (struct uz_send_wqe *)buf;
    UzSge s[UZ_SQ_MAX_SGE];
    Pair p;
    UzWr wr;
    int i;

    pair_init(e, &p, NULL);
    for (i = 0; i < UZ_SQ_MAX_SGE; i++) {
        s[i] = uz_mr_sge(p.mr[0], i * 16, 16);
    }
    wr = (UzWr) { .wr_id = 0x2100 + num_sge * 16, .opcode = UZ_WR_SEND,
                  .flags = UZ_WQE_F_SIGNALED, .sge = s,
                  .num_sge = UZ_SQ_MAX_SGE };
    uz_wqe_build(&wr, false, buf);
    w->num_sge = num_sge;
    check_malformed(e, &p, buf, sizeof(buf), UZ_WC_SEND);
}

/* num_sge > max_sge (16). */
static void case_num_sge_max(Env *e)
{
    check_num_sge(e, 17);
    check_num_sge(e, 255);
}

/* num_sge <= max_sge, but 64 + 16 * 13 bytes exceed the 256-byte WQE. */
static void case_num_sge_wqe_size(Env *e)
{
    check_num_sge(e, UZ_SQ_MAX_SGE + 1);
}

static void case_inline_with_sge(Env *e)
{
    uint64_t buf[UZ_SQ_WQE_SIZE / 8];
    struct uz_send_wqe *w = (struct uz_send_wqe *)buf;
    uint8_t data[16] = "inline and sges";
    size_t len;
    Pair p;
    UzWr wr;

    pair_init(e, &p, NULL);
    wr = (UzWr) { .wr_id = 0x2200, .opcode = UZ_WR_SEND,
                  .flags = UZ_WQE_F_SIGNALED | UZ_WQE_F_INLINE,
                  .inline_data = data, .inline_len = sizeof(data) };
    len = uz_wqe_build(&wr, false, buf);
    w->num_sge = 1;
    check_malformed(e, &p, buf, len, UZ_WC_SEND);
}

/* inline_len beyond the WQE (192 bytes fit) and beyond max_inline. */
static void case_inline_too_long(Env *e)
{
    static const uint32_t lens[] = { UZ_SQ_MAX_INLINE + 1, 257, 0x10000 };
    uint64_t buf[UZ_SQ_WQE_SIZE / 8];
    struct uz_send_wqe *w = (struct uz_send_wqe *)buf;
    uint8_t data[UZ_SQ_MAX_INLINE];
    Pair p;
    UzWr wr;
    int i;

    uz_pattern(data, sizeof(data), 3);
    for (i = 0; i < ARRAY_SIZE(lens); i++) {
        pair_init(e, &p, NULL);
        wr = (UzWr) { .wr_id = 0x2300 + i * 16, .opcode = UZ_WR_RDMA_WRITE,
                      .flags = UZ_WQE_F_SIGNALED | UZ_WQE_F_INLINE,
                      .inline_data = data, .inline_len = sizeof(data),
                      .remote_addr = uz_mr_va(p.mr[1], 0),
                      .rkey = p.mr[1]->key };
        uz_wqe_build(&wr, false, buf);
        w->inline_len = cpu_to_le32(lens[i]);
        check_malformed(e, &p, buf, sizeof(buf), UZ_WC_RDMA_WRITE);
    }
}

static void case_inline_read(Env *e)
{
    uint8_t data[8] = { 0 };
    Pair p;
    UzWr wr;

    pair_init(e, &p, NULL);
    wr = (UzWr) { .wr_id = 0x2400, .opcode = UZ_WR_RDMA_READ,
                  .flags = UZ_WQE_F_SIGNALED | UZ_WQE_F_INLINE,
                  .inline_data = data, .inline_len = sizeof(data),
                  .remote_addr = uz_mr_va(p.mr[1], 0), .rkey = p.mr[1]->key };
    check_malformed_wr(e, &p, &wr, UZ_WC_RDMA_READ);

    pair_init(e, &p, NULL);
    wr = (UzWr) { .wr_id = 0x2410, .opcode = UZ_WR_ATOMIC_CMP_SWP,
                  .flags = UZ_WQE_F_SIGNALED | UZ_WQE_F_INLINE,
                  .inline_data = data, .inline_len = sizeof(data),
                  .remote_addr = uz_mr_va(p.mr[1], 0), .rkey = p.mr[1]->key };
    check_malformed_wr(e, &p, &wr, UZ_WC_COMP_SWAP);
}

static void case_atomic_misaligned(Env *e)
{
    static const int offs[] = { 4, 1, 7 };
    Pair p;
    UzSge s;
    UzWr wr;
    int i;

    for (i = 0; i < ARRAY_SIZE(offs); i++) {
        pair_init(e, &p, NULL);
        s = uz_mr_sge(p.mr[0], 0, 8);
        wr = (UzWr) { .wr_id = 0x2500 + i * 16,
                      .opcode = i ? UZ_WR_ATOMIC_CMP_SWP :
                                    UZ_WR_ATOMIC_FETCH_ADD,
                      .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1,
                      .remote_addr = uz_mr_va(p.mr[1], 64) + offs[i],
                      .rkey = p.mr[1]->key, .compare_add = 1 };
        check_malformed_wr(e, &p, &wr, i ? UZ_WC_COMP_SWAP :
                                           UZ_WC_FETCH_ADD);
    }
}

static void case_atomic_sge(Env *e)
{
    Pair p;
    UzSge s[2];
    UzWr wr;

    /* One SGE of 4 bytes. */
    pair_init(e, &p, NULL);
    s[0] = uz_mr_sge(p.mr[0], 0, 4);
    wr = (UzWr) { .wr_id = 0x2600, .opcode = UZ_WR_ATOMIC_FETCH_ADD,
                  .flags = UZ_WQE_F_SIGNALED, .sge = s, .num_sge = 1,
                  .remote_addr = uz_mr_va(p.mr[1], 64), .rkey = p.mr[1]->key,
                  .compare_add = 1 };
    check_malformed_wr(e, &p, &wr, UZ_WC_FETCH_ADD);

    /* Two SGEs of 4 bytes: 8 bytes, but not one SGE. */
    pair_init(e, &p, NULL);
    s[0] = uz_mr_sge(p.mr[0], 0, 4);
    s[1] = uz_mr_sge(p.mr[0], 4, 4);
    wr = (UzWr) { .wr_id = 0x2610, .opcode = UZ_WR_ATOMIC_CMP_SWP,
                  .flags = UZ_WQE_F_SIGNALED, .sge = s, .num_sge = 2,
                  .remote_addr = uz_mr_va(p.mr[1], 64), .rkey = p.mr[1]->key };
    check_malformed_wr(e, &p, &wr, UZ_WC_COMP_SWAP);

    /* No SGE. */
    pair_init(e, &p, NULL);
    wr = (UzWr) { .wr_id = 0x2620, .opcode = UZ_WR_ATOMIC_FETCH_ADD,
                  .flags = UZ_WQE_F_SIGNALED, .num_sge = 0,
                  .remote_addr = uz_mr_va(p.mr[1], 64), .rkey = p.mr[1]->key };
    check_malformed_wr(e, &p, &wr, UZ_WC_FETCH_ADD);
}

/* Local operations (REG_MR, LOCAL_INV) carry a key, never data (8.7). */
static void case_local_with_data(Env *e)
{
    static const uint8_t ops[] = { UZ_WR_LOCAL_INV, UZ_WR_REG_MR };
    static const uint8_t wc[] = { UZ_WC_LOCAL_INV, UZ_WC_REG_MR };
    Pair p;
    UzSge s;
    UzWr wr;
    int i;

    for (i = 0; i < ARRAY_SIZE(ops); i++) {
        pair_init(e, &p, NULL);
        s = uz_mr_sge(p.mr[0], 0, 64);
        wr = (UzWr) { .wr_id = 0x2700 + i, .opcode = ops[i],
                      .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1,
                      .imm = p.mr[0]->key, .rkey = p.mr[0]->key };
        check_malformed_wr(e, &p, &wr, wc[i]);
    }
}

/* An STCRW offers a buffer: local data makes it malformed. */
static void case_stcrw_with_data(Env *e)
{
    Pair p;
    UzSge s;
    UzWr wr;

    pair_init(e, &p, NULL);
    s = uz_mr_sge(p.mr[0], 0, 64);
    wr = (UzWr) { .wr_id = 0x2710, .opcode = UZ_WR_STCRW,
                  .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1,
                  .remote_addr = uz_mr_va(p.mr[1], 0),
                  .rkey = p.mr[1]->key, .tag = 7, .crw_length = 64 };
    check_malformed_wr(e, &p, &wr, uz_wc_opcode(UZ_WR_STCRW));
}

/* ------------------------------------------------------------------ */
/* 3. Remote errors                                                   */
/* ------------------------------------------------------------------ */

/* An RDMA op of 64 bytes at @raddr/@rkey on a fresh pair set up by @p. */
static void check_remote(Env *e, Pair *p, uint8_t opcode, uint64_t raddr,
                         uint32_t rkey, uint8_t status)
{
    bool atomic = uz_wr_is_atomic(opcode);
    UzSge s = uz_mr_sge(p->mr[0], 256, atomic ? 8 : 64);
    UzWr wr = { .wr_id = 0x3000 + opcode, .opcode = opcode,
                .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1,
                .imm = 0x1234, .remote_addr = raddr, .rkey = rkey,
                .compare_add = 5, .swap = 6 };
    Expect x = { .opcode = uz_wc_opcode(opcode), .status = status,
                 .verr = 0, .peer = PEER_ERR,
                 .peer_event = status == UZ_WC_STATUS_REM_ACCESS_ERR ?
                               UZ_EQE_QP_ACCESS_ERR : UZ_EQE_QP_FATAL };

    check_bad_wr(e, p, &wr, &x);
}

static void case_remote_bad_rkey(Env *e)
{
    static const uint8_t ops[] = { UZ_WR_RDMA_WRITE, UZ_WR_RDMA_READ,
                                   UZ_WR_ATOMIC_FETCH_ADD,
                                   UZ_WR_ATOMIC_CMP_SWP,
                                   UZ_WR_RDMA_WRITE_IMM };
    Pair p;
    int i;

    for (i = 0; i < ARRAY_SIZE(ops); i++) {
        pair_init(e, &p, NULL);
        if (ops[i] == UZ_WR_RDMA_WRITE_IMM) {
            UzSge r = uz_mr_sge(p.mr[1], 0, 64);

            uz_post_recv(p.q[1], 0x3900, &r, 1);
        }
        check_remote(e, &p, ops[i], uz_mr_va(p.mr[1], 64),
                     p.mr[1]->key ^ 0x80, UZ_WC_STATUS_REM_ACCESS_ERR);
    }
    /* An index with no MR. */
    pair_init(e, &p, NULL);
    check_remote(e, &p, UZ_WR_RDMA_WRITE, uz_mr_va(p.mr[1], 64),
                 (3000u << 8) | 0x51, UZ_WC_STATUS_REM_ACCESS_ERR);
}

static void case_remote_bounds(Env *e)
{
    static const uint8_t ops[] = { UZ_WR_RDMA_WRITE, UZ_WR_RDMA_READ,
                                   UZ_WR_ATOMIC_FETCH_ADD };
    Pair p;
    int i;

    for (i = 0; i < ARRAY_SIZE(ops); i++) {
        pair_init(e, &p, NULL);
        /* 64 bytes (8 for the atomic) just past the end. */
        check_remote(e, &p, ops[i], uz_mr_va(p.mr[1], MR_LEN),
                     p.mr[1]->key, UZ_WC_STATUS_REM_ACCESS_ERR);
    }
    pair_init(e, &p, NULL);
    check_remote(e, &p, UZ_WR_RDMA_WRITE, uz_mr_va(p.mr[1], MR_LEN - 8),
                 p.mr[1]->key, UZ_WC_STATUS_REM_ACCESS_ERR);
    pair_init(e, &p, NULL);
    check_remote(e, &p, UZ_WR_RDMA_READ, uz_mr_va(p.mr[1], 0) - 16,
                 p.mr[1]->key, UZ_WC_STATUS_REM_ACCESS_ERR);
}

/* The MR lacks the remote right. */
static void case_remote_mr_access(Env *e)
{
    UzMr *rd = uz_mr_reg(&e->n[1], 4096, UZ_ACCESS_LOCAL_WRITE |
                         UZ_ACCESS_REMOTE_READ);
    UzMr *wr = uz_mr_reg(&e->n[1], 4096, UZ_ACCESS_LOCAL_WRITE |
                         UZ_ACCESS_REMOTE_WRITE);
    Pair p;

    pair_init(e, &p, NULL);
    check_remote(e, &p, UZ_WR_RDMA_WRITE, uz_mr_va(rd, 0), rd->key,
                 UZ_WC_STATUS_REM_ACCESS_ERR);
    pair_init(e, &p, NULL);
    check_remote(e, &p, UZ_WR_RDMA_READ, uz_mr_va(wr, 0), wr->key,
                 UZ_WC_STATUS_REM_ACCESS_ERR);
    pair_init(e, &p, NULL);
    check_remote(e, &p, UZ_WR_ATOMIC_FETCH_ADD, uz_mr_va(wr, 0), wr->key,
                 UZ_WC_STATUS_REM_ACCESS_ERR);
}

static void case_remote_other_pd(Env *e)
{
    uint32_t pd2 = uz_pd_alloc(&e->n[1]);
    UzMr *mr = uz_mr_reg_pd(&e->n[1], pd2, 4096, UZ_ACCESS_ALL);
    Pair p;

    pair_init(e, &p, NULL);
    check_remote(e, &p, UZ_WR_RDMA_WRITE, uz_mr_va(mr, 0), mr->key,
                 UZ_WC_STATUS_REM_ACCESS_ERR);
}

/* The responder QP lacks the remote right its MR has. */
static void case_remote_qp_access(Env *e)
{
    static const struct {
        uint8_t opcode;
        uint32_t access;
    } c[] = {
        { UZ_WR_RDMA_READ, UZ_ACCESS_REMOTE_WRITE | UZ_ACCESS_REMOTE_ATOMIC },
        { UZ_WR_RDMA_WRITE, UZ_ACCESS_REMOTE_READ | UZ_ACCESS_REMOTE_ATOMIC },
        { UZ_WR_ATOMIC_FETCH_ADD,
          UZ_ACCESS_REMOTE_READ | UZ_ACCESS_REMOTE_WRITE },
    };
    Pair p;
    int i;

    for (i = 0; i < ARRAY_SIZE(c); i++) {
        pair_create(e, &p);
        uz_rc_connect_access(p.q[0], p.q[1], c[i].access, NULL);
        check_remote(e, &p, c[i].opcode, uz_mr_va(p.mr[1], 64),
                     p.mr[1]->key, UZ_WC_STATUS_REM_ACCESS_ERR);
    }
}

/* The responder cannot reach its page: NAK remote operational error. */
static void case_remote_dma(Env *e)
{
    UzMr *bad = uz_mr_reg(&e->n[1], 2 * UZ_PAGE_SIZE, UZ_ACCESS_ALL);
    Pair p;

    uz_mr_set_page(bad, 0, BAD_GPA);
    pair_init(e, &p, NULL);
    check_remote(e, &p, UZ_WR_RDMA_READ, uz_mr_va(bad, 0), bad->key,
                 UZ_WC_STATUS_REM_OP_ERR);
}

/* A SEND longer than the receive buffer. */
static void case_remote_recv_too_small(Env *e)
{
    UzSge s, r;
    UzWr wr;
    Pair p;
    Expect x = { .opcode = UZ_WC_SEND,
                 .status = UZ_WC_STATUS_REM_INV_REQ_ERR, .peer = PEER_ERR };
    struct uz_cqe c;

    pair_init(e, &p, NULL);
    r = uz_mr_sge(p.mr[1], 0, 16);
    uz_post_recv(p.q[1], 0x3a00, &r, 1);
    r = uz_mr_sge(p.mr[1], 64, 4096);
    uz_post_recv(p.q[1], 0x3a01, &r, 1);
    s = uz_mr_sge(p.mr[0], 0, 100);
    wr = (UzWr) { .wr_id = 0x3a10, .opcode = UZ_WR_SEND,
                  .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1 };
    check_bad_wr(e, &p, &wr, &x);

    /* The receiver's side: LOC_LEN_ERR, the next receive flushed. */
    uz_cq_wait(p.q[1]->rcq, &c);
    uz_cqe_expect(&c, 0x3a00, UZ_WC_RECV, UZ_WC_STATUS_LOC_LEN_ERR, 0,
                  p.q[1]->qpn);
    uz_cq_wait(p.q[1]->rcq, &c);
    uz_cqe_expect(&c, 0x3a01, UZ_WC_RECV, UZ_WC_STATUS_WR_FLUSH_ERR, 0,
                  p.q[1]->qpn);
    uz_cq_assert_empty(p.q[1]->rcq, 10);

    /* Also over several packets, the overflow in a later one. */
    pair_init(e, &p, NULL);
    r = uz_mr_sge(p.mr[1], 0, 3000);
    uz_post_recv(p.q[1], 0x3b00, &r, 1);
    s = uz_mr_sge(p.mr[0], 0, 5000);
    wr = (UzWr) { .wr_id = 0x3b10, .opcode = UZ_WR_SEND,
                  .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1 };
    check_bad_wr(e, &p, &wr, &x);
    uz_cq_wait(p.q[1]->rcq, &c);
    uz_cqe_expect(&c, 0x3b00, UZ_WC_RECV, UZ_WC_STATUS_LOC_LEN_ERR, 0,
                  p.q[1]->qpn);
}

/* Put raw receive WQE bytes in the next RQ slot of @qp and ring. */
static void post_raw_recv(UzQp *qp, const void *wqe, size_t len)
{
    uint64_t slot[UZ_RQ_WQE_SIZE / 8] = { 0 };
    uint32_t pos = qp->rq_pi & ((1u << UZ_RQ_LOG_DEPTH) - 1);

    memcpy(slot, wqe, len);
    qtest_memwrite(qp->n->d.qts, qp->rq + pos * UZ_RQ_WQE_SIZE, slot,
                   sizeof(slot));
    qp->rq_pi = (qp->rq_pi + 1) & UZ_DB_PI_MASK;
    uz_ring(&qp->n->d, qp->rq_db, qp->rq_pi);
}

/*
 * A receive WQE the receiver cannot use: too many SGEs (malformed), or
 * an SGE with a bad lkey.  The receiver completes it with the error and
 * goes to ERR; the requester gets a remote operational error.
 */
static void case_remote_bad_recv_wqe(Env *e)
{
    Expect x = { .opcode = UZ_WC_SEND, .status = UZ_WC_STATUS_REM_OP_ERR,
                 .peer = PEER_ERR };
    struct uz_recv_wqe bad = { .wr_id = cpu_to_le64(0x3e00),
                               .num_sge = 17 };
    struct uz_cqe c;
    UzSge s, r;
    UzWr wr;
    Pair p;

    pair_init(e, &p, NULL);
    post_raw_recv(p.q[1], &bad, sizeof(bad));
    s = uz_mr_sge(p.mr[0], 0, 100);
    wr = (UzWr) { .wr_id = 0x3e10, .opcode = UZ_WR_SEND,
                  .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1 };
    check_bad_wr(e, &p, &wr, &x);
    uz_cq_wait(p.q[1]->rcq, &c);
    uz_cqe_expect(&c, 0x3e00, UZ_WC_RECV, UZ_WC_STATUS_LOC_QP_OP_ERR,
                  UZ_VERR_BAD_WQE, p.q[1]->qpn);

    pair_init(e, &p, NULL);
    r = uz_mr_sge(p.mr[1], 0, 4096);
    r.lkey ^= 0x80;
    uz_post_recv(p.q[1], 0x3e01, &r, 1);
    wr.wr_id = 0x3e11;
    check_bad_wr(e, &p, &wr, &x);
    uz_cq_wait(p.q[1]->rcq, &c);
    uz_cqe_expect(&c, 0x3e01, UZ_WC_RECV, UZ_WC_STATUS_LOC_PROT_ERR,
                  UZ_VERR_BAD_LKEY, p.q[1]->qpn);
}

/*
 * A NAK for a message of many packets: the responder refuses the first
 * packet while the requester is still sending the rest (64 packets, more
 * than one turn of the work loop).
 */
static void case_remote_bad_rkey_long(Env *e)
{
    Pair p;
    UzSge s;
    UzWr wr;
    Expect x = { .opcode = UZ_WC_RDMA_WRITE,
                 .status = UZ_WC_STATUS_REM_ACCESS_ERR, .peer = PEER_ERR,
                 .peer_event = UZ_EQE_QP_ACCESS_ERR };

    pair_init(e, &p, NULL);
    s = uz_mr_sge(p.mr[0], 0, MR_LEN);
    wr = (UzWr) { .wr_id = 0x3c00, .opcode = UZ_WR_RDMA_WRITE,
                  .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1,
                  .remote_addr = uz_mr_va(p.mr[1], 0),
                  .rkey = p.mr[1]->key ^ 0x80 };
    check_bad_wr(e, &p, &wr, &x);
}

/* The same for a long SEND that overflows the receive buffer early. */
static void case_remote_recv_too_small_long(Env *e)
{
    Pair p;
    UzSge s, r;
    UzWr wr;
    Expect x = { .opcode = UZ_WC_SEND,
                 .status = UZ_WC_STATUS_REM_INV_REQ_ERR, .peer = PEER_ERR };
    struct uz_cqe c;

    pair_init(e, &p, NULL);
    r = uz_mr_sge(p.mr[1], 0, 3000);
    uz_post_recv(p.q[1], 0x3d00, &r, 1);
    s = uz_mr_sge(p.mr[0], 0, MR_LEN);
    wr = (UzWr) { .wr_id = 0x3d10, .opcode = UZ_WR_SEND,
                  .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1 };
    check_bad_wr(e, &p, &wr, &x);
    uz_cq_wait(p.q[1]->rcq, &c);
    uz_cqe_expect(&c, 0x3d00, UZ_WC_RECV, UZ_WC_STATUS_LOC_LEN_ERR, 0,
                  p.q[1]->qpn);
}

/*
 * A READ and an atomic that the responder executes, then a WRITE it
 * refuses: the READ response and the atomic ACK come first (responses in
 * PSN order), so the READ and the atomic succeed, the WRITE fails with
 * REM_ACCESS_ERR, and what follows is flushed.
 */
static void case_remote_nak_after_read(Env *e)
{
    uint8_t data[64], out[64];
    uint64_t v = 1000, orig = 0;
    struct uz_cqe c;
    Pair p;
    UzSge s[4];
    UzWr wr;

    pair_init(e, &p, NULL);
    uz_pattern(data, sizeof(data), 77);
    uz_mr_write(p.mr[1], 4096, data, sizeof(data));
    uz_mr_write(p.mr[1], 8192, &v, 8);
    uz_mr_fill(p.mr[0], 0, 0, 256);

    s[0] = uz_mr_sge(p.mr[0], 0, 64);
    wr = (UzWr) { .wr_id = 0x3e00, .opcode = UZ_WR_RDMA_READ,
                  .flags = UZ_WQE_F_SIGNALED, .sge = &s[0], .num_sge = 1,
                  .remote_addr = uz_mr_va(p.mr[1], 4096),
                  .rkey = p.mr[1]->key };
    uz_sq_post(p.q[0], &wr);
    s[1] = uz_mr_sge(p.mr[0], 128, 8);
    wr = (UzWr) { .wr_id = 0x3e01, .opcode = UZ_WR_ATOMIC_FETCH_ADD,
                  .flags = UZ_WQE_F_SIGNALED, .sge = &s[1], .num_sge = 1,
                  .remote_addr = uz_mr_va(p.mr[1], 8192),
                  .rkey = p.mr[1]->key, .compare_add = 5 };
    uz_sq_post(p.q[0], &wr);
    s[2] = uz_mr_sge(p.mr[0], 192, 64);
    wr = (UzWr) { .wr_id = 0x3e02, .opcode = UZ_WR_RDMA_WRITE,
                  .flags = UZ_WQE_F_SIGNALED, .sge = &s[2], .num_sge = 1,
                  .remote_addr = uz_mr_va(p.mr[1], 0),
                  .rkey = p.mr[1]->key ^ 0x80 };
    uz_sq_post(p.q[0], &wr);
    s[3] = uz_mr_sge(p.mr[0], 192, 64);
    wr = (UzWr) { .wr_id = 0x3e03, .opcode = UZ_WR_RDMA_WRITE,
                  .flags = UZ_WQE_F_SIGNALED, .sge = &s[3], .num_sge = 1,
                  .remote_addr = uz_mr_va(p.mr[1], 0),
                  .rkey = p.mr[1]->key };
    uz_sq_post(p.q[0], &wr);
    uz_sq_ring(p.q[0]);

    cq_wait_noclock(p.q[0]->scq, &c);
    uz_cqe_expect(&c, 0x3e00, UZ_WC_RDMA_READ, UZ_WC_STATUS_SUCCESS, 0,
                  p.q[0]->qpn);
    g_assert_cmpint(c.byte_len, ==, 64);
    uz_mr_read(p.mr[0], 0, out, sizeof(out));
    g_assert(!memcmp(data, out, sizeof(data)));
    cq_wait_noclock(p.q[0]->scq, &c);
    uz_cqe_expect(&c, 0x3e01, UZ_WC_FETCH_ADD, UZ_WC_STATUS_SUCCESS, 0,
                  p.q[0]->qpn);
    uz_mr_read(p.mr[0], 128, &orig, 8);
    g_assert_cmpint(le64_to_cpu(orig), ==, 1000);
    cq_wait_noclock(p.q[0]->scq, &c);
    uz_cqe_expect(&c, 0x3e02, UZ_WC_RDMA_WRITE, UZ_WC_STATUS_REM_ACCESS_ERR,
                  0, p.q[0]->qpn);
    cq_wait_noclock(p.q[0]->scq, &c);
    uz_cqe_expect(&c, 0x3e03, UZ_WC_RDMA_WRITE, UZ_WC_STATUS_WR_FLUSH_ERR, 0,
                  p.q[0]->qpn);
    uz_qp_failed(p.q[0], 0);
    uz_qp_failed(p.q[1], UZ_EQE_QP_ACCESS_ERR);
    check_fresh_pair(e);
}

/* ------------------------------------------------------------------ */
/* 4. RNR                                                             */
/* ------------------------------------------------------------------ */

static void case_rnr_wait(Env *e)
{
    const size_t len = 2000;
    g_autofree uint8_t *data = g_malloc(len);
    g_autofree uint8_t *out = g_malloc(len + 16);
    uint64_t rnr0 = uz_counter(&e->m, 0, "rnr_naks_rcvd");
    struct uz_cqe c;
    Pair p;
    UzSge s, r;
    UzWr wr;
    int i;

    pair_init(e, &p, NULL);
    uz_pattern(data, len, 21);
    uz_mr_write(p.mr[0], 0, data, len);
    s = uz_mr_sge(p.mr[0], 0, len);
    wr = (UzWr) { .wr_id = 0x4000, .opcode = UZ_WR_SEND_IMM,
                  .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1,
                  .imm = 0xfeed };
    uz_post_send(p.q[0], &wr);

    /* No receive: RNR NAKs, retried without end (rnr_retry 7). */
    uz_cq_assert_empty(p.q[0]->scq, 50);
    for (i = 0; i < 10; i++) {
        qtest_clock_step(e->m.qs->qts, MS);
        uz_cq_assert_empty(p.q[0]->scq, 20);
    }
    g_assert_cmpuint(uz_counter(&e->m, 0, "rnr_naks_rcvd"), >, rnr0);
    g_assert_cmpuint(uz_counter(&e->m, 1, "rnr_naks_sent"), >=, 1);
    uz_cq_assert_empty(p.q[1]->rcq, 5);

    uz_mr_fill(p.mr[1], 0, 0, len + 16);
    r = uz_mr_sge(p.mr[1], 0, MR_LEN);
    uz_post_recv(p.q[1], 0x4001, &r, 1);
    uz_cq_wait_clock(p.q[0]->scq, &c, MS, 100);
    uz_cqe_expect(&c, 0x4000, UZ_WC_SEND, UZ_WC_STATUS_SUCCESS, 0,
                  p.q[0]->qpn);
    uz_cq_wait(p.q[1]->rcq, &c);
    uz_cqe_expect(&c, 0x4001, UZ_WC_RECV, UZ_WC_STATUS_SUCCESS, 0,
                  p.q[1]->qpn);
    g_assert_cmpint(c.wc_flags, ==, UZ_WC_F_IMM);
    g_assert_cmphex(c.imm_data, ==, 0xfeed);
    g_assert_cmpint(c.byte_len, ==, len);
    uz_mr_read(p.mr[1], 0, out, len + 16);
    g_assert(!memcmp(data, out, len));
    for (i = 0; i < 16; i++) {
        g_assert_cmpint(out[len + i], ==, 0);
    }
    /* Exactly one copy was delivered. */
    uz_cq_assert_empty(p.q[1]->rcq, 20);
    uz_cq_assert_empty(p.q[0]->scq, 5);

    /* RNR is no error: the pair goes on. */
    check_pair_works(&p, 0x43);
}

/*
 * RNR with rnr_retry @retry < 7 and never a receive: RNR_RETRY_EXC_ERR
 * for a message of @len bytes.
 */
static void check_rnr_exhaust(Env *e, uint8_t retry, uint8_t opcode,
                              uint32_t len)
{
    UzRcOpts o = UZ_RC_OPTS_DEFAULT;
    uint64_t rnr0 = uz_counter(&e->m, 0, "rnr_naks_rcvd");
    Expect x = { .opcode = uz_wc_opcode(opcode),
                 .status = UZ_WC_STATUS_RNR_RETRY_EXC_ERR,
                 .peer = PEER_RTS, .step_ns = MS };
    Pair p;
    UzSge s;
    UzWr wr;

    o.rnr_retry = retry;
    pair_init(e, &p, &o);
    s = uz_mr_sge(p.mr[0], 0, len);
    wr = (UzWr) { .wr_id = 0x4100 + retry * 16, .opcode = opcode,
                  .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1,
                  .remote_addr = uz_mr_va(p.mr[1], 0),
                  .rkey = p.mr[1]->key, .imm = 7 };
    check_bad_wr(e, &p, &wr, &x);
    g_assert_cmpuint(uz_counter(&e->m, 0, "rnr_naks_rcvd"), >=,
                     rnr0 + retry + 1);
}

static void case_rnr_exhaust(Env *e)
{
    check_rnr_exhaust(e, 0, UZ_WR_SEND, 64);
}

static void case_rnr_exhaust_retry2(Env *e)
{
    check_rnr_exhaust(e, 2, UZ_WR_SEND, 64);
}

/* WRITE with immediate needs a receive WQE too. */
static void case_rnr_exhaust_write_imm(Env *e)
{
    check_rnr_exhaust(e, 0, UZ_WR_RDMA_WRITE_IMM, 64);
}

/* A message of several packets. */
static void case_rnr_exhaust_multi(Env *e)
{
    check_rnr_exhaust(e, 0, UZ_WR_SEND, 3000);
}

/* rnr_retry 0, and nothing posted behind the SEND. */
static void case_rnr_exhaust_alone(Env *e)
{
    UzRcOpts o = UZ_RC_OPTS_DEFAULT;
    struct uz_cqe c;
    Pair p;
    UzSge s;
    UzWr wr;

    o.rnr_retry = 0;
    pair_init(e, &p, &o);
    s = uz_mr_sge(p.mr[0], 0, 64);
    wr = (UzWr) { .wr_id = 0x4200, .opcode = UZ_WR_SEND,
                  .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1 };
    uz_post_send(p.q[0], &wr);
    uz_cq_wait_clock(p.q[0]->scq, &c, MS, 200);
    uz_cqe_expect(&c, 0x4200, UZ_WC_SEND, UZ_WC_STATUS_RNR_RETRY_EXC_ERR, 0,
                  p.q[0]->qpn);
    uz_qp_failed(p.q[0], 0);
    g_assert_cmpint(uz_qp_state(p.q[1]), ==, UZ_QPS_RTS);
    check_fresh_pair(e);
}

/* ------------------------------------------------------------------ */
/* 5. Retransmission                                                  */
/* ------------------------------------------------------------------ */

static void case_retry_recover(Env *e)
{
    const size_t wlen = 10 * 1024, slen = 3000;
    g_autofree uint8_t *wdata = g_malloc(wlen);
    g_autofree uint8_t *sdata = g_malloc(slen);
    g_autofree uint8_t *out = g_malloc(wlen);
    uint64_t rt0 = uz_counter(&e->m, 0, "retransmits");
    uint64_t to0 = uz_counter(&e->m, 0, "retry_timeouts");
    struct uz_cqe c;
    Pair p;
    UzSge s, r;
    UzWr wr;
    int i;

    pair_init(e, &p, NULL);
    uz_pattern(wdata, wlen, 31);
    uz_pattern(sdata, slen, 32);
    uz_mr_write(p.mr[0], 0, wdata, wlen);
    uz_mr_write(p.mr[0], 32768, sdata, slen);
    uz_mr_fill(p.mr[1], 0, 0, MR_LEN);
    r = uz_mr_sge(p.mr[1], 32768, 8192);
    uz_post_recv(p.q[1], 0x5000, &r, 1);

    uz_link_set(&e->m, 0, false);
    s = uz_mr_sge(p.mr[0], 0, wlen);
    wr = (UzWr) { .wr_id = 0x5001, .opcode = UZ_WR_RDMA_WRITE,
                  .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1,
                  .remote_addr = uz_mr_va(p.mr[1], 0), .rkey = p.mr[1]->key };
    uz_sq_post(p.q[0], &wr);
    s = uz_mr_sge(p.mr[0], 32768, slen);
    wr = (UzWr) { .wr_id = 0x5002, .opcode = UZ_WR_SEND,
                  .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1 };
    uz_sq_post(p.q[0], &wr);
    uz_sq_ring(p.q[0]);

    /* Timeout 14 is about 67 ms: a few of them pass, link down. */
    uz_cq_assert_empty(p.q[0]->scq, 50);
    for (i = 0; i < 4; i++) {
        qtest_clock_step(e->m.qs->qts, 50 * MS);
        uz_cq_assert_empty(p.q[0]->scq, 20);
    }
    uz_cq_assert_empty(p.q[1]->rcq, 5);
    uz_link_set(&e->m, 0, true);

    uz_cq_wait_clock(p.q[0]->scq, &c, 20 * MS, 100);
    uz_cqe_expect(&c, 0x5001, UZ_WC_RDMA_WRITE, UZ_WC_STATUS_SUCCESS, 0,
                  p.q[0]->qpn);
    uz_cq_wait_clock(p.q[0]->scq, &c, 20 * MS, 100);
    uz_cqe_expect(&c, 0x5002, UZ_WC_SEND, UZ_WC_STATUS_SUCCESS, 0,
                  p.q[0]->qpn);
    uz_cq_wait(p.q[1]->rcq, &c);
    uz_cqe_expect(&c, 0x5000, UZ_WC_RECV, UZ_WC_STATUS_SUCCESS, 0,
                  p.q[1]->qpn);
    g_assert_cmpint(c.byte_len, ==, slen);
    uz_cq_assert_empty(p.q[1]->rcq, 10);

    uz_mr_read(p.mr[1], 0, out, wlen);
    g_assert(!memcmp(wdata, out, wlen));
    uz_mr_read(p.mr[1], 32768, out, slen);
    g_assert(!memcmp(sdata, out, slen));

    g_assert_cmpuint(uz_counter(&e->m, 0, "retransmits"), >, rt0);
    g_assert_cmpuint(uz_counter(&e->m, 0, "retry_timeouts"), >, to0);
    check_pair_works(&p, 0x44);
}

static void case_retry_exhaust(Env *e)
{
    UzRcOpts o = UZ_RC_OPTS_DEFAULT;
    Expect x = { .opcode = UZ_WC_RDMA_WRITE,
                 .status = UZ_WC_STATUS_RETRY_EXC_ERR, .peer = PEER_RTS,
                 .step_ns = 20 * MS, .link_down = true };
    uint64_t to0 = uz_counter(&e->m, 0, "retry_timeouts");
    Pair p;
    UzSge s;
    UzWr wr;

    o.retry_cnt = 2;
    pair_init(e, &p, &o);
    s = uz_mr_sge(p.mr[0], 0, 5000);
    wr = (UzWr) { .wr_id = 0x5100, .opcode = UZ_WR_RDMA_WRITE,
                  .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1,
                  .remote_addr = uz_mr_va(p.mr[1], 0), .rkey = p.mr[1]->key };
    check_bad_wr(e, &p, &wr, &x);
    /* Two timeouts use the two retries, the third ends the WQE. */
    g_assert_cmpuint(uz_counter(&e->m, 0, "retry_timeouts") - to0, ==,
                     o.retry_cnt + 1);
}

/* ------------------------------------------------------------------ */
/* 6. Flushing                                                        */
/* ------------------------------------------------------------------ */

static void case_flush(Env *e)
{
    static const uint8_t ops[10] = {
        UZ_WR_RDMA_WRITE, UZ_WR_SEND, UZ_WR_RDMA_READ,
        UZ_WR_ATOMIC_FETCH_ADD, UZ_WR_SEND_IMM, UZ_WR_RDMA_WRITE_IMM,
        UZ_WR_ATOMIC_CMP_SWP, UZ_WR_RDMA_WRITE, UZ_WR_RDMA_READ, UZ_WR_SEND,
    };
    UzNode *n0 = &e->n[0];
    struct uz_cqe c;
    Pair p;
    UzSge s, r;
    UzWr wr;
    int i;

    pair_init(e, &p, NULL);
    /* Two receives outstanding before the error, on the failing QP. */
    r = uz_mr_sge(p.mr[0], 49152, 4096);
    uz_post_recv(p.q[0], 0x6100, &r, 1);
    uz_post_recv(p.q[0], 0x6101, &r, 1);

    /* Link down: the 10 WQEs are sent and wait for their answers. */
    uz_link_set(&e->m, 0, false);
    for (i = 0; i < 10; i++) {
        bool atomic = uz_wr_is_atomic(ops[i]);

        s = uz_mr_sge(p.mr[0], i * 1024, atomic ? 8 : 1024);
        wr = (UzWr) { .wr_id = 0x6000 + i, .opcode = ops[i],
                      /* every other one unsignalled: flushed anyway */
                      .flags = (i & 1) ? 0 : UZ_WQE_F_SIGNALED,
                      .sge = &s, .num_sge = 1, .imm = i,
                      .remote_addr = uz_mr_va(p.mr[1], i * 1024),
                      .rkey = p.mr[1]->key, .compare_add = 1 };
        uz_sq_post(p.q[0], &wr);
    }
    uz_sq_ring(p.q[0]);
    uz_cq_assert_empty(p.q[0]->scq, 50);

    uz_qp_set_state(p.q[0], UZ_QPS_ERR);
    for (i = 0; i < 10; i++) {
        uz_cq_wait(p.q[0]->scq, &c);
        uz_cqe_expect(&c, 0x6000 + i, uz_wc_opcode(ops[i]),
                      UZ_WC_STATUS_WR_FLUSH_ERR, 0, p.q[0]->qpn);
    }
    for (i = 0; i < 2; i++) {
        uz_cq_wait(p.q[0]->rcq, &c);
        uz_cqe_expect(&c, 0x6100 + i, UZ_WC_RECV, UZ_WC_STATUS_WR_FLUSH_ERR,
                      0, p.q[0]->qpn);
    }
    g_assert_cmpint(uz_qp_state(p.q[0]), ==, UZ_QPS_ERR);

    /* Posted in ERR: flushed too, receives and sends. */
    for (i = 0; i < 3; i++) {
        uz_post_recv(p.q[0], 0x6110 + i, &r, 1);
    }
    s = uz_mr_sge(p.mr[0], 0, 64);
    wr = (UzWr) { .wr_id = 0x6200, .opcode = UZ_WR_RDMA_READ, .flags = 0,
                  .sge = &s, .num_sge = 1,
                  .remote_addr = uz_mr_va(p.mr[1], 0), .rkey = p.mr[1]->key };
    uz_post_send(p.q[0], &wr);
    for (i = 0; i < 3; i++) {
        uz_cq_wait(p.q[0]->rcq, &c);
        uz_cqe_expect(&c, 0x6110 + i, UZ_WC_RECV, UZ_WC_STATUS_WR_FLUSH_ERR,
                      0, p.q[0]->qpn);
    }
    uz_cq_wait(p.q[0]->scq, &c);
    uz_cqe_expect(&c, 0x6200, UZ_WC_RDMA_READ, UZ_WC_STATUS_WR_FLUSH_ERR, 0,
                  p.q[0]->qpn);
    uz_cq_assert_empty(p.q[0]->scq, 10);
    uz_cq_assert_empty(p.q[0]->rcq, 10);

    /* A modify the driver asked for posts no QP_FATAL. */
    g_assert_cmpint(uz_eq_drain(n0, &n0->async_eq, UZ_EQE_QP_FATAL), ==, 0);
    /* The peer saw nothing. */
    g_assert_cmpint(uz_qp_state(p.q[1]), ==, UZ_QPS_RTS);

    /* RESET and connect again: it works. */
    uz_link_set(&e->m, 0, true);
    uz_qp_set_state(p.q[0], UZ_QPS_RESET);
    uz_qp_set_state(p.q[1], UZ_QPS_RESET);
    uz_rc_connect(p.q[0], p.q[1], NULL);
    check_pair_works(&p, 0x45);
    uz_cq_assert_empty(p.q[0]->rcq, 5);
}

/* WQEs posted in INIT are not processed; ERR flushes them. */
static void case_flush_init(Env *e)
{
    struct uz_cqe c;
    Pair p;
    UzSge s, r;
    UzWr wr;
    int i;

    pair_create(e, &p);
    uz_rc_init(p.q[0]);
    s = uz_mr_sge(p.mr[0], 0, 64);
    r = uz_mr_sge(p.mr[0], 4096, 64);
    for (i = 0; i < 4; i++) {
        wr = (UzWr) { .wr_id = 0x6300 + i, .opcode = UZ_WR_SEND,
                      .flags = 0, .sge = &s, .num_sge = 1 };
        uz_post_send(p.q[0], &wr);
        uz_post_recv(p.q[0], 0x6400 + i, &r, 1);
    }
    uz_cq_assert_empty(p.q[0]->scq, 20);
    uz_cq_assert_empty(p.q[0]->rcq, 5);
    uz_qp_set_state(p.q[0], UZ_QPS_ERR);
    for (i = 0; i < 4; i++) {
        uz_cq_wait(p.q[0]->scq, &c);
        uz_cqe_expect(&c, 0x6300 + i, UZ_WC_SEND, UZ_WC_STATUS_WR_FLUSH_ERR,
                      0, p.q[0]->qpn);
    }
    for (i = 0; i < 4; i++) {
        uz_cq_wait(p.q[0]->rcq, &c);
        uz_cqe_expect(&c, 0x6400 + i, UZ_WC_RECV, UZ_WC_STATUS_WR_FLUSH_ERR,
                      0, p.q[0]->qpn);
    }
    uz_qp_set_state(p.q[0], UZ_QPS_RESET);
    uz_rc_connect(p.q[0], p.q[1], NULL);
    check_pair_works(&p, 0x46);
}

/* ------------------------------------------------------------------ */
/* 7. Fuzz                                                            */
/* ------------------------------------------------------------------ */

#define FUZZ_WQES           10000
#define FUZZ_BATCH          16
#define FUZZ_SEED           0x75a07a
#define FUZZ_RECV_LEN       (1024 * 1024)
#define FUZZ_RECVS          40
#define FUZZ_IDLE_POLLS     300

typedef struct Fuzz {
    Env *e;
    GRand *r;
    UzQp *qa, *qb;
    UzMr *ma;                   /* every right */
    UzMr *ma_ro;                /* no local write */
    UzMr *ma_pd;                /* another PD */
    UzMr *mb;                   /* peer, every right */
    UzMr *mb_ro;                /* peer, remote read only */
    UzMr *mrecv;                /* peer, receive buffers */
    uint64_t wr_id;
    uint64_t recv_posted;       /* wr_id of the next receive */
    uint64_t recv_expect;       /* wr_id of the next receive CQE */
    unsigned qa_errs;           /* times qa was found in ERR */
    unsigned resets;
    unsigned stalls;            /* batches that needed the clock */
    unsigned status[32];
    unsigned malformed;
} Fuzz;

typedef struct FuzzWqe {
    uint8_t opcode;
    bool malformed;             /* certainly malformed (8.7) */
    uint64_t len;               /* message bytes */
} FuzzWqe;

static uint32_t fz_range(Fuzz *f, uint32_t lo, uint32_t hi)
{
    return g_rand_int_range(f->r, lo, hi);
}

static bool fz_chance(Fuzz *f, int pct)
{
    return fz_range(f, 0, 100) < pct;
}

static uint64_t fz_u64(Fuzz *f)
{
    return ((uint64_t)g_rand_int(f->r) << 32) | g_rand_int(f->r);
}

/* Mostly short, sometimes up to 64 KiB. */
static uint32_t fz_len(Fuzz *f)
{
    int k = fz_range(f, 0, 20);

    if (k < 12) {
        return fz_range(f, 0, 257);
    }
    if (k < 19) {
        return fz_range(f, 0, 4097);
    }
    return fz_range(f, 0, 65537);
}

static UzSge fz_sge(Fuzz *f)
{
    UzMr *ma = f->ma;
    uint32_t len = fz_len(f), off;

    switch (fz_range(f, 0, 24)) {
    default:
        /* inside the MR */
        len = MIN(len, MR_LEN);
        off = fz_range(f, 0, MR_LEN - len + 1);
        return (UzSge) { ma->iova + off, len, ma->key };
    case 20:
        /* valid key, crossing the end or before the start */
        if (fz_chance(f, 50)) {
            off = fz_range(f, MR_LEN - 64, MR_LEN + 4096);
            return (UzSge) { ma->iova + off, MAX(len, 65), ma->key };
        }
        return (UzSge) { ma->iova - fz_range(f, 1, 8192), MAX(len, 1),
                         ma->key };
    case 21:
        /* the key of another MR, a flipped bit, or garbage */
        off = fz_range(f, 0, 4096);
        switch (fz_range(f, 0, 5)) {
        case 0:
            return (UzSge) { f->ma_ro->iova + off, len, f->ma_ro->key };
        case 1:
            return (UzSge) { f->ma_pd->iova + off, len, f->ma_pd->key };
        case 2:
            return (UzSge) { ma->iova + off, len,
                             ma->key ^ (1u << fz_range(f, 0, 32)) };
        case 3:
            return (UzSge) { ma->iova + off, len, f->mb->key };
        default:
            return (UzSge) { ma->iova + off, len, g_rand_int(f->r) };
        }
    case 22:
        /* valid key, random address */
        return (UzSge) { fz_u64(f), len, ma->key };
    case 23:
        /* all random, the length too */
        return (UzSge) { fz_u64(f),
                         fz_chance(f, 50) ? g_rand_int(f->r) : len,
                         g_rand_int(f->r) };
    }
}

/* Remote address and rkey for @len bytes. */
static void fz_remote(Fuzz *f, uint64_t len, bool atomic, uint64_t *addr,
                      uint32_t *rkey)
{
    UzMr *mb = f->mb;
    uint64_t off;

    switch (fz_range(f, 0, 20)) {
    default:
        /* inside the peer's MR */
        off = len >= MR_LEN ? 0 : fz_range(f, 0, MR_LEN - len + 1);
        if (atomic) {
            off = MIN(off, MR_LEN - 8) & ~7ull;
        }
        *addr = mb->iova + off;
        *rkey = mb->key;
        break;
    case 16:
        /* remote read only */
        off = fz_range(f, 0, 4096 - 8) & ~7u;
        *addr = f->mb_ro->iova + off;
        *rkey = f->mb_ro->key;
        break;
    case 17:
        /* out of bounds */
        *addr = mb->iova + fz_range(f, MR_LEN - 64, MR_LEN + 64);
        *addr &= atomic ? ~7ull : ~0ull;
        *rkey = mb->key;
        break;
    case 18:
        /* bad rkey */
        *addr = mb->iova + (fz_range(f, 0, 4096) & ~7u);
        *rkey = fz_chance(f, 50) ? g_rand_int(f->r) :
                mb->key ^ (1u << fz_range(f, 0, 32));
        break;
    case 19:
        *addr = fz_u64(f);
        *rkey = g_rand_int(f->r);
        break;
    }
}

/* An opcode the spec does not define: the WQE is malformed. */
#define FZ_UNDEFINED_OP 0x0d

/* A random send WQE as fz_wqe() builds it, in host order. */
typedef struct FuzzBuild {
    uint8_t op, flags;
    bool inl, atomic;
    bool too_long;              /* more than 2^31 bytes */
    uint32_t inline_len;
    int nsge;
    UzSge sge[20];
    uint64_t msg;               /* message bytes */
    uint64_t raddr;
    uint32_t rkey;
} FuzzBuild;

/* Mostly an opcode the fuzz test may send, else undefined or random. */
static uint8_t fz_opcode(Fuzz *f)
{
    int k = fz_range(f, 0, 100);
    uint8_t op;

    if (k < 86) {
        static const uint8_t ok[] = {
            UZ_WR_SEND, UZ_WR_SEND_IMM, UZ_WR_RDMA_WRITE,
            UZ_WR_RDMA_WRITE_IMM, UZ_WR_RDMA_READ, UZ_WR_ATOMIC_CMP_SWP,
            UZ_WR_ATOMIC_FETCH_ADD,
        };

        op = ok[fz_range(f, 0, ARRAY_SIZE(ok))];
    } else if (k < 90) {
        op = FZ_UNDEFINED_OP;
    } else {
        op = g_rand_int(f->r);
    }
    /*
     * CRWs wait for a peer's STCRW, and STCRWs fill the peer's tag table:
     * neither completes on its own (uzura-crw-test covers them); SEND_INV,
     * LOCAL_INV, REG_MR and BIND_MW name keys (uzura-fastreg-test and
     * uzura-mw-test cover them), as do FLUSH and ATOMIC WRITE
     * (uzura-placement-test).
     */
    if (op == UZ_WR_CRW || op == UZ_WR_STCRW || op == UZ_WR_SEND_INV ||
        op == UZ_WR_LOCAL_INV || op == UZ_WR_REG_MR || op == UZ_WR_BIND_MW ||
        op == UZ_WR_FLUSH || op == UZ_WR_ATOMIC_WRITE) {
        op = FZ_UNDEFINED_OP;
    }
    return op;
}

/* Signalled; at times solicited or fenced, at times with reserved bits. */
static uint8_t fz_flags(Fuzz *f)
{
    uint8_t flags = UZ_WQE_F_SIGNALED;

    if (fz_chance(f, 30)) {
        flags |= g_rand_int(f->r) & (UZ_WQE_F_SOLICITED | UZ_WQE_F_FENCE);
    }
    if (fz_chance(f, 10)) {
        flags |= g_rand_int(f->r) & 0xf0;   /* reserved: ignored */
    }
    return flags;
}

/* Random inline data at @tail, at times too long, at times with SGEs. */
static void fz_inline(Fuzz *f, FuzzBuild *b, uint8_t *tail)
{
    int i;

    b->flags |= UZ_WQE_F_INLINE;
    b->inline_len = fz_chance(f, 90) ? fz_range(f, 0, UZ_SQ_MAX_INLINE + 1)
                                     : fz_range(f, 0, 1024);
    for (i = 0; i < MIN(b->inline_len, UZ_SQ_MAX_INLINE); i++) {
        tail[i] = g_rand_int(f->r);
    }
    b->nsge = fz_chance(f, 10) ? fz_range(f, 1, 21) : 0;
    b->msg = b->inline_len;
}

/* Random SGEs, at @tail as many as a WQE holds. */
static void fz_sges(Fuzz *f, FuzzBuild *b, uint8_t *tail)
{
    int i;

    if (b->atomic && fz_chance(f, 85)) {
        b->nsge = 1;
        b->sge[0] = (UzSge) { f->ma->iova + (fz_range(f, 0, MR_LEN) & ~7u),
                              8, f->ma->key };
    } else {
        b->nsge = fz_chance(f, 85) ? fz_range(f, 0, 5) : fz_range(f, 0, 21);
        for (i = 0; i < b->nsge; i++) {
            b->sge[i] = fz_sge(f);
        }
    }
    for (i = 0; i < b->nsge; i++) {
        b->msg += b->sge[i].length;
    }
    /* 8.7: longer than 2^31 is LOC_LEN_ERR, not malformed. */
    b->too_long = b->msg > (1ull << 31);
    for (i = 0; i < MIN(b->nsge, UZ_SQ_MAX_SGE); i++) {
        struct uz_sge s = {
            .addr = cpu_to_le64(b->sge[i].addr),
            .length = cpu_to_le32(b->sge[i].length),
            .lkey = cpu_to_le32(b->sge[i].lkey),
        };

        memcpy(tail + i * sizeof(s), &s, sizeof(s));
    }
}

/* The header of @b's WQE at @w, with @wr_id; the fields left random. */
static void fz_header(Fuzz *f, struct uz_send_wqe *w, uint64_t wr_id,
                      const FuzzBuild *b)
{
    w->wr_id = cpu_to_le64(wr_id);
    w->opcode = b->op;
    w->flags = b->flags;
    w->num_sge = b->nsge;
    w->inline_len = cpu_to_le32(b->inline_len);
    w->imm_data = g_rand_int(f->r);
    w->rkey = cpu_to_le32(b->rkey);
    w->remote_addr = cpu_to_le64(b->raddr);
    w->atomic.compare_add = cpu_to_le64(fz_u64(f));
    w->atomic.swap = cpu_to_le64(fz_u64(f));
    if (fz_chance(f, 10)) {
        w->xrc_srqn = g_rand_int(f->r);     /* RC: ignored */
        w->reserved_448 = fz_u64(f);        /* reserved: ignored */
        w->reserved_8 = g_rand_int(f->r);
    }
}

/* Whether @b is certainly malformed (8.7). */
static bool fz_malformed(const FuzzBuild *b)
{
    bool malformed =
        !(b->op <= UZ_WR_ATOMIC_FETCH_ADD && b->op != UZ_WR_SEND_INV) ||
        b->nsge > 16 ||
        (!b->inl && 64 + 16 * b->nsge > UZ_SQ_WQE_SIZE) ||
        (b->inl && (b->nsge || b->inline_len > UZ_SQ_MAX_INLINE ||
                    b->op == UZ_WR_RDMA_READ || b->atomic)) ||
        (b->atomic && ((b->raddr & 7) ||
                       (!b->inl && (b->nsge != 1 ||
                                    b->sge[0].length != 8))));

    if (b->too_long) {
        malformed = false;
    }
    return malformed;
}

/*
 * Build a random send WQE into @slot; say what it is in @fw.  The parts
 * draw from f->r in this order, which makes the run: opcode, flags,
 * inline data or SGEs, remote address, header.
 */
static void fz_wqe(Fuzz *f, uint64_t *slot, uint64_t wr_id, FuzzWqe *fw)
{
    struct uz_send_wqe *w = (struct uz_send_wqe *)slot;
    uint8_t *tail = (uint8_t *)(w + 1);
    FuzzBuild b = { 0 };

    memset(slot, 0, UZ_SQ_WQE_SIZE);
    b.op = fz_opcode(f);
    b.atomic = uz_wr_is_atomic(b.op);
    b.flags = fz_flags(f);
    b.inl = fz_chance(f, 10);
    if (b.inl) {
        fz_inline(f, &b, tail);
    } else {
        fz_sges(f, &b, tail);
    }
    fz_remote(f, b.atomic ? 8 : b.msg, b.atomic, &b.raddr, &b.rkey);
    fz_header(f, w, wr_id, &b);

    fw->opcode = b.op;
    fw->len = b.atomic ? 8 : b.msg;
    fw->malformed = fz_malformed(&b);
}

/* Log the WQE in @slot: for the report of a failure. */
static void fz_dump(const uint64_t *slot)
{
    const struct uz_send_wqe *w = (const struct uz_send_wqe *)slot;
    const struct uz_sge *s = (const struct uz_sge *)(w + 1);
    int i;

    g_test_message("fuzz: wr_id 0x%" PRIx64 " opcode 0x%x flags 0x%x "
                   "num_sge %u inline_len %u rkey 0x%x remote_addr 0x%" PRIx64
                   " compare_add 0x%" PRIx64 " swap 0x%" PRIx64,
                   le64_to_cpu(w->wr_id), w->opcode, w->flags, w->num_sge,
                   le32_to_cpu(w->inline_len), le32_to_cpu(w->rkey),
                   le64_to_cpu(w->remote_addr),
                   le64_to_cpu(w->atomic.compare_add),
                   le64_to_cpu(w->atomic.swap));
    if (w->flags & UZ_WQE_F_INLINE) {
        return;
    }
    for (i = 0; i < MIN(w->num_sge, UZ_SQ_MAX_SGE); i++) {
        g_test_message("fuzz:   sge %d: addr 0x%" PRIx64 " length 0x%x "
                       "lkey 0x%x", i, le64_to_cpu(s[i].addr),
                       le32_to_cpu(s[i].length), le32_to_cpu(s[i].lkey));
    }
}

/* Write @n WQE slots at the SQ's producer index, as few writes as can. */
static void sq_put_many(UzQp *qp, const uint64_t *slots, int n)
{
    const uint32_t depth = 1u << UZ_SQ_LOG_DEPTH;
    const size_t words = UZ_SQ_WQE_SIZE / 8;
    int i = 0;

    while (i < n) {
        uint32_t pos = qp->sq_pi & (depth - 1);
        int k = MIN(n - i, (int)(depth - pos));

        qtest_memwrite(qp->n->d.qts, qp->sq + pos * UZ_SQ_WQE_SIZE,
                       slots + i * words, k * UZ_SQ_WQE_SIZE);
        qp->sq_pi = (qp->sq_pi + k) & UZ_DB_PI_MASK;
        i += k;
    }
}

/* Keep FUZZ_RECVS big receives posted on the peer. */
static void fz_top_up(Fuzz *f)
{
    UzSge r = uz_mr_sge(f->mrecv, 0, FUZZ_RECV_LEN);
    UzQp *qb = f->qb;
    bool any = false;

    while (f->recv_posted - f->recv_expect < FUZZ_RECVS) {
        uz_recv_put(qb->n, qb->rq, UZ_RQ_LOG_DEPTH, qb->rq_pi,
                    f->recv_posted++, &r, 1);
        qb->rq_pi = (qb->rq_pi + 1) & UZ_DB_PI_MASK;
        any = true;
    }
    if (any) {
        uz_ring(&qb->n->d, qb->rq_db, qb->rq_pi);
    }
}

/* Consume the peer's receive CQEs; true if one reports an error. */
static bool fz_drain_peer(Fuzz *f)
{
    struct uz_cqe c[32];
    bool err = false;
    int n, i;

    while ((n = uz_cq_poll_many(f->qb->rcq, c, ARRAY_SIZE(c)))) {
        for (i = 0; i < n; i++) {
            g_assert_cmphex(c[i].wr_id, ==, f->recv_expect);
            g_assert_cmpint(c[i].qpn, ==, f->qb->qpn);
            f->recv_expect++;
            f->status[c[i].status & 31]++;
            if (c[i].status == UZ_WC_STATUS_SUCCESS) {
                g_assert(c[i].opcode == UZ_WC_RECV ||
                         c[i].opcode == UZ_WC_RECV_RDMA_WITH_IMM);
            } else {
                err = true;
                if (c[i].status == UZ_WC_STATUS_WR_FLUSH_ERR) {
                    g_assert_cmphex(c[i].opcode, ==, UZ_WC_RECV);
                }
            }
        }
    }
    g_assert(!uz_cq_poll(f->qb->scq, &c[0]));
    g_assert(!uz_cq_poll(f->qa->rcq, &c[0]));
    return err;
}

/* Consume QP error events about @qp on its node; returns how many. */
static int fz_qp_events(UzQp *qp)
{
    UzEq *eq = &qp->n->async_eq;
    struct uz_eqe eqe;
    int count = 0;

    while (uz_eq_next(&qp->n->d, eq, &eqe)) {
        uz_ring(&qp->n->d, eq->db, eq->ci);
        g_assert_cmpint(eqe.type, !=, UZ_EQE_CQ_ERROR);
        g_assert_cmpint(eqe.type, !=, UZ_EQE_EQ_OVERFLOW);
        if (eqe.type == UZ_EQE_QP_FATAL || eqe.type == UZ_EQE_QP_REQ_ERR ||
            eqe.type == UZ_EQE_QP_ACCESS_ERR) {
            g_assert_cmpint(le32_to_cpu(eqe.handle), ==, qp->qpn);
            count++;
        }
    }
    return count;
}

/* Both QPs through RESET and connected again, with new PSNs. */
static void fz_reconnect(Fuzz *f)
{
    UzRcOpts o = UZ_RC_OPTS_DEFAULT;

    uz_qp_set_state(f->qa, UZ_QPS_RESET);
    uz_qp_set_state(f->qb, UZ_QPS_RESET);
    /* Flush CQEs written before the RESET; no later ones. */
    fz_drain_peer(f);
    g_assert(!uz_cq_poll(f->qa->scq, &(struct uz_cqe) { 0 }));
    f->recv_expect = f->recv_posted;
    o.psn[0] = g_rand_int(f->r) & 0xffffff;
    o.psn[1] = g_rand_int(f->r) & 0xffffff;
    uz_rc_connect(f->qa, f->qb, &o);
    f->resets++;
}

/*
 * No CQE for @idle polls, at CQE @got of the batch of @n in @slots.
 * Nothing moves.  The hub loses no frame, so no WQE should need a
 * timer; count it, report the first ones, and step the clock so that
 * the run goes on.
 */
static void fz_stalled(Fuzz *f, const uint64_t *slots, int n, int got,
                       int idle)
{
    UzQp *qa = f->qa;
    int i;

    if (idle == FUZZ_IDLE_POLLS && ++f->stalls <= 3) {
        g_test_message("fuzz: stalled: wr_id 0x%" PRIx64 " (%d of %d "
                       "CQEs); QP states %u %u; MR keys a 0x%x b 0x%x",
                       f->wr_id + got, got, n, uz_qp_state(qa),
                       uz_qp_state(f->qb), f->ma->key, f->mb->key);
        for (i = 0; i < n; i++) {
            fz_dump(slots + i * (UZ_SQ_WQE_SIZE / 8));
        }
    }
    if (idle > FUZZ_IDLE_POLLS * 20) {
        g_error("fuzz: wr_id 0x%" PRIx64 " never completes, even "
                "with the clock", f->wr_id + got);
    }
    qtest_clock_step(qa->n->d.qts, 1000 * MS);
}

/*
 * The CQE @e of the batch's WQE @w, its @got'th: as the WQE says, and
 * only flushes after the batch's first error (*@first_err, which the
 * first error CQE sets).
 */
static void fz_check_cqe(Fuzz *f, const FuzzWqe *w, const struct uz_cqe *e,
                         int got, int *first_err)
{
    /* In SQ order, every WQE (all are signalled). */
    g_assert_cmphex(e->wr_id, ==, f->wr_id + got);
    g_assert_cmpint(e->qpn, ==, f->qa->qpn);
    g_assert_cmphex(e->flags & ~UZ_CQE_PHASE, ==, 0);
    f->status[e->status & 31]++;
    if (*first_err >= 0) {
        /* After an error completion, only flushes. */
        g_assert_cmpint(e->status, ==, UZ_WC_STATUS_WR_FLUSH_ERR);
    }
    switch (e->status) {
    case UZ_WC_STATUS_SUCCESS:
        g_assert(!w->malformed);
        g_assert(w->opcode <= UZ_WR_ATOMIC_FETCH_ADD &&
                 w->opcode != UZ_WR_SEND_INV);
        g_assert_cmphex(e->opcode, ==, uz_wc_opcode(w->opcode));
        g_assert_cmpint(e->vendor_err, ==, 0);
        if (w->opcode == UZ_WR_RDMA_READ || uz_wr_is_atomic(w->opcode)) {
            g_assert_cmpint(e->byte_len, ==, w->len);
        }
        break;
    case UZ_WC_STATUS_WR_FLUSH_ERR:
        /* The first error of a batch is the QP's own. */
        g_assert_cmpint(*first_err, >=, 0);
        g_assert_cmphex(e->opcode, ==, uz_wc_opcode(w->opcode));
        g_assert_cmpint(e->vendor_err, ==, 0);
        break;
    default:
        *first_err = got;
        if (w->malformed) {
            g_assert_cmpint(e->status, ==, UZ_WC_STATUS_LOC_QP_OP_ERR);
            g_assert_cmpint(e->vendor_err, ==, UZ_VERR_BAD_WQE);
            f->malformed++;
        }
        if (e->status == UZ_WC_STATUS_LOC_PROT_ERR) {
            g_assert(e->vendor_err >= UZ_VERR_BAD_LKEY &&
                     e->vendor_err <= UZ_VERR_DMA &&
                     e->vendor_err != UZ_VERR_BAD_RKEY);
        }
        break;
    }
}

/*
 * After a batch whose first error CQE was @first_err (or -1): the
 * peer's CQEs taken, a QP in ERR connected again, the peer's receives
 * topped up.
 */
static void fz_after_batch(Fuzz *f, int first_err)
{
    bool peer_err = fz_drain_peer(f);

    if (first_err >= 0 || peer_err) {
        bool a_err = uz_qp_state(f->qa) == UZ_QPS_ERR;
        bool b_err = uz_qp_state(f->qb) == UZ_QPS_ERR;

        /* An error completion on qa leaves it in ERR (8.11). */
        g_assert(first_err < 0 || a_err);
        f->qa_errs += a_err;
        if (a_err || b_err) {
            fz_reconnect(f);
        }
    }
    fz_top_up(f);
}

static void fz_batch(Fuzz *f, int n)
{
    uint64_t slots[FUZZ_BATCH * UZ_SQ_WQE_SIZE / 8];
    FuzzWqe fw[FUZZ_BATCH];
    struct uz_cqe c[FUZZ_BATCH];
    UzQp *qa = f->qa;
    int got = 0, idle = 0, first_err = -1, k, i;

    for (i = 0; i < n; i++) {
        fz_wqe(f, slots + i * (UZ_SQ_WQE_SIZE / 8), f->wr_id + i, &fw[i]);
    }
    sq_put_many(qa, slots, n);
    uz_sq_ring(qa);

    while (got < n) {
        k = uz_cq_poll_many(qa->scq, c, n - got);
        if (!k) {
            if (++idle % FUZZ_IDLE_POLLS) {
                uz_poll_pause(&qa->n->d);
                continue;
            }
            fz_stalled(f, slots, n, got, idle);
            continue;
        }
        idle = 0;
        for (i = 0; i < k; i++, got++) {
            fz_check_cqe(f, &fw[got], &c[i], got, &first_err);
        }
    }
    f->wr_id += n;
    fz_after_batch(f, first_err);
}

static void case_fuzz(Env *e)
{
    UzNode *a = &e->n[0], *b = &e->n[1];
    uint64_t cqes_err0 = uz_counter(&e->m, 0, "cqes_error");
    uint32_t pd2 = uz_pd_alloc(a);
    Fuzz f = { .e = e };
    QDict *rsp;
    int done = 0, fatal = 0, i;

    g_test_timer_start();
    f.r = g_rand_new_with_seed(FUZZ_SEED);
    f.qa = uz_qp_create(a, UZ_QPT_RC, NULL, NULL, NULL, 0);
    f.qb = uz_qp_create(b, UZ_QPT_RC, NULL, NULL, NULL, 0);
    f.ma = uz_mr_reg(a, MR_LEN, UZ_ACCESS_ALL);
    f.ma_ro = uz_mr_reg(a, 4096, UZ_ACCESS_REMOTE_READ);
    f.ma_pd = uz_mr_reg_pd(a, pd2, 4096, UZ_ACCESS_ALL);
    f.mb = uz_mr_reg(b, MR_LEN, UZ_ACCESS_ALL);
    f.mb_ro = uz_mr_reg(b, 4096, UZ_ACCESS_LOCAL_WRITE |
                        UZ_ACCESS_REMOTE_READ);
    f.mrecv = uz_mr_reg(b, FUZZ_RECV_LEN, UZ_ACCESS_LOCAL_WRITE);
    f.wr_id = 1ull << 40;
    f.recv_posted = f.recv_expect = 1ull << 48;
    uz_rc_connect(f.qa, f.qb, NULL);
    fz_top_up(&f);

    while (done < FUZZ_WQES) {
        int n = MIN(fz_range(&f, 1, FUZZ_BATCH + 1), FUZZ_WQES - done);

        fz_batch(&f, n);
        done += n;
        /* Keep the async EQs from filling up. */
        fatal += fz_qp_events(f.qa);
        fz_qp_events(f.qb);
    }

    for (i = 0; i < ARRAY_SIZE(f.status); i++) {
        if (f.status[i]) {
            g_test_message("fuzz: status %d: %u CQEs", i, f.status[i]);
        }
    }
    g_test_message("fuzz: %d WQEs, %u malformed, %u resets, %u stalls, "
                   "%.1f s", done, f.malformed, f.resets, f.stalls,
                   g_test_timer_elapsed());

    /* QEMU is alive and counted the errors. */
    rsp = qtest_qmp(e->m.qs->qts, "{'execute': 'query-status'}");
    g_assert(qdict_haskey(rsp, "return"));
    qobject_unref(rsp);
    g_assert_cmpuint(uz_counter(&e->m, 0, "cqes_error"), >, cqes_err0);
    g_assert_cmpuint(f.status[UZ_WC_STATUS_SUCCESS], >, 0);
    g_assert_cmpuint(f.malformed, >, 0);
    /*
     * qa, the requester, entered the error state f.qa_errs times, each
     * told by its error CQE and by no async event (spec 8.11).
     */
    fatal += fz_qp_events(f.qa);
    g_assert_cmpint(f.qa_errs, >, 0);
    g_assert_cmpint(fatal, ==, 0);

    /* A fresh pair moves data. */
    check_fresh_pair(e);
    g_rand_free(f.r);
    /* Every WQE completed without the clock. */
    g_assert_cmpuint(f.stalls, ==, 0);
}

/*
 * A QP attached to an SRQ that the driver moves to ERR gets Last WQE
 * Reached (spec 8.8), as one the device fails does: Linux's ib_drain_qp
 * waits for that event on such a QP (ib_core's srq_completion), and
 * without it a kernel ULP hung at disconnect.  Once: ERR to ERR again
 * and RESET to ERR post none, nor any QP error event.
 */
static void case_srq_last_wqe(Env *e)
{
    UzNode *b = &e->n[1];
    UzSrq *srq = uz_srq_create(b, 4, 0);
    UzQp *qa = uz_qp_create(&e->n[0], UZ_QPT_RC, NULL, NULL, NULL, 0);
    UzQp *qb = uz_qp_create(b, UZ_QPT_RC, NULL, NULL, srq, 0);

    uz_rc_connect(qa, qb, NULL);
    uz_qp_set_state(qb, UZ_QPS_ERR);
    uz_event_wait(b, &b->async_eq, UZ_EQE_QP_LAST_WQE, qb->qpn);
    uz_qp_set_state(qb, UZ_QPS_ERR);
    g_assert_cmpint(uz_events_count(b, &b->async_eq, UZ_EQE_QP_LAST_WQE,
                                    qb->qpn, 10), ==, 0);
    uz_qp_set_state(qb, UZ_QPS_RESET);
    uz_qp_set_state(qb, UZ_QPS_ERR);
    g_assert_cmpint(uz_eq_drain(b, &b->async_eq, UZ_EQE_QP_LAST_WQE), ==, 0);
    uz_qp_failed(qb, 0);
    g_assert_cmpint(uz_qp_state(qa), ==, UZ_QPS_RTS);
}

/* ------------------------------------------------------------------ */

typedef struct Case {
    const char *name;
    void (*fn)(Env *e);
} Case;

static const Case cases[] = {
    { "local/bad-lkey", case_local_bad_lkey },
    { "local/lkey-index0", case_local_lkey_index0 },
    { "local/lkey-no-mr", case_local_lkey_no_mr },
    { "local/other-pd", case_local_other_pd },
    { "local/access", case_local_access },
    { "local/bounds", case_local_bounds },
    { "local/dma", case_local_dma },
    { "malformed/opcode", case_bad_opcode },
    { "malformed/num-sge-max", case_num_sge_max },
    { "malformed/num-sge-wqe-size", case_num_sge_wqe_size },
    { "malformed/inline-with-sge", case_inline_with_sge },
    { "malformed/inline-too-long", case_inline_too_long },
    { "malformed/inline-read", case_inline_read },
    { "malformed/atomic-misaligned", case_atomic_misaligned },
    { "malformed/atomic-sge", case_atomic_sge },
    { "malformed/local-with-data", case_local_with_data },
    { "malformed/stcrw-with-data", case_stcrw_with_data },
    { "remote/bad-rkey", case_remote_bad_rkey },
    { "remote/bounds", case_remote_bounds },
    { "remote/mr-access", case_remote_mr_access },
    { "remote/other-pd", case_remote_other_pd },
    { "remote/qp-access", case_remote_qp_access },
    { "remote/dma", case_remote_dma },
    { "remote/recv-too-small", case_remote_recv_too_small },
    { "remote/bad-recv-wqe", case_remote_bad_recv_wqe },
    { "remote/bad-rkey-long", case_remote_bad_rkey_long },
    { "remote/recv-too-small-long", case_remote_recv_too_small_long },
    { "remote/nak-after-read", case_remote_nak_after_read },
    { "rnr/wait", case_rnr_wait },
    { "rnr/exhaust-alone", case_rnr_exhaust_alone },
    { "rnr/exhaust", case_rnr_exhaust },
    { "rnr/exhaust-retry2", case_rnr_exhaust_retry2 },
    { "rnr/exhaust-write-imm", case_rnr_exhaust_write_imm },
    { "rnr/exhaust-multi", case_rnr_exhaust_multi },
    { "retry/recover", case_retry_recover },
    { "retry/exhaust", case_retry_exhaust },
    { "flush/err", case_flush },
    { "flush/init", case_flush_init },
    { "srq/last-wqe", case_srq_last_wqe },
    { "fuzz/send-wqes", case_fuzz },
};

static void run_case(gconstpointer data)
{
    const Case *c = data;
    Env e;

    env_start(&e);
    c->fn(&e);
    env_stop(&e);
}

int main(int argc, char **argv)
{
    int i;

    g_test_init(&argc, &argv, NULL);
    for (i = 0; i < ARRAY_SIZE(cases); i++) {
        g_autofree char *path = g_strdup_printf("/uzura/errors/%s",
                                                cases[i].name);

        qtest_add_data_func(path, &cases[i], run_case);
    }
    return g_test_run();
}
