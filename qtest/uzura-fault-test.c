/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uzura: the fault injector (the fault-* properties) and the RC transport
 * under its faults (spec 9.6).  Two NICs on one hub run RC traffic in
 * both directions, SEND, WRITE, READ and atomics of mixed sizes, while
 * both NICs drop, duplicate, reorder, corrupt or delay what they send,
 * so requests, ACKs, NAKs and responses are all hit.  Every message must
 * arrive exactly once, in order and intact.  Also: a link flap within
 * the retry budget, loss beyond it (RETRY_EXC_ERR, flush, ERR), the
 * properties' range checks, and a seed that repeats its faults.
 *
 * Timers run on the virtual clock, which moves only when the test steps
 * it: when nothing completes for a while, the test steps it by less than
 * an ACK timeout.  Every test boots its own machine; seeds are fixed.
 */
#include "uzura-verbs.h"
#include "qobject/qbool.h"
#include "qobject/qnum.h"
#include "qemu/cutils.h"

#define US                  1000ll
#define MS                  (1000 * US)

/* RC attributes of the streams: an ACK timeout of 4.096 us << 8, 1 ms. */
#define TIMEOUT             8
#define TIMEOUT_NS          (4096ll << TIMEOUT)
#define RETRY_CNT           7

/*
 * Clock steps: longer than the 50 us a reordered frame waits, shorter
 * than an ACK timeout, so that a step never lets two timeouts of one QP
 * pass without the retransmission in between.
 */
#define STEP_NS             (250 * US)
#define IDLE_POLLS          24      /* polls without a CQE before a step */
#define STALL_STEPS         64      /* steps without progress: a hang */

#define NMSG                1000    /* messages of a stream, both ways */
#define BATCH_MAX           24      /* WQEs posted per doorbell */
#define SLOT                8192    /* buffer bytes of each message */
#define LEN_MAX             6000    /* 6 packets at MTU 1024 */
#define RSRC_LEN            65536   /* what READs read, written once */
#define GUARD_LEN           16
#define WORK_SEED           0x5eed0000u
#define FAULT_SEED          0xfa017000ull

/* UZURA_FAULT_SALT=<n> varies the seeds of the streams: a hunting aid. */
static unsigned int salt;

/* The requester's MR: sources, READ targets, atomic results. */
#define L_SRC               0
#define L_READ              (BATCH_MAX * SLOT)
#define L_ATOM              (2 * BATCH_MAX * SLOT)
#define L_LEN               (L_ATOM + BATCH_MAX * 8)
/* The responder's MR: receives, WRITE targets, READ source, atomics. */
#define R_RECV              0
#define R_WRITE             (BATCH_MAX * SLOT)
#define R_RSRC              (2 * BATCH_MAX * SLOT)
#define R_FADD              (R_RSRC + RSRC_LEN)
#define R_CAS               (R_FADD + 8)
#define R_LEN               (R_CAS + 8)

/* One message of a stream. */
typedef struct Msg {
    uint32_t seq;
    uint8_t op;                 /* UZ_WR_* */
    uint32_t len;               /* atomics: 8 */
    uint32_t roff;              /* READ: offset in the READ source */
    uint64_t compare;           /* CMP_SWP */
    uint64_t operand;           /* FETCH_ADD: addend; CMP_SWP: swap */
    uint64_t orig;              /* atomics: the value that must return */
    int recv;                   /* index of its receive WQE, -1: none */
} Msg;

/* RC traffic one way: a requester QP on one NIC, its peer on the other. */
typedef struct Flow {
    int id;                     /* also the requester's NIC */
    UzQp *req, *resp;
    UzMr *lmr, *rmr;
    GRand *r;
    uint8_t *rsrc;              /* our copy of the READ source */
    uint32_t seq;               /* of the next message */
    uint64_t fadd, cas;         /* what the atomic words must hold */
    Msg m[BATCH_MAX];           /* the batch in flight */
    int recv_of[BATCH_MAX];     /* message of each receive WQE */
    int n, nrecv, sq_got, rq_got;
} Flow;

enum {
    C_DROPS, C_DUPS, C_REORDERS, C_CORRUPTS, C_DELAYED, C_RETRANSMITS,
    C_TIMEOUTS, C_NAKS_SENT, C_NAKS_RCVD, C_SEQ_SENT, C_SEQ_RCVD,
    C_DUPLICATES, C_ICRC, C_MALFORMED, C_STALE, C_TX_DROPPED,
    C_COALESCED, C_CQES, C_CQES_ERROR, C_N,
};

static const char *const counter_name[C_N] = {
    "fault_drops", "fault_dups", "fault_reorders", "fault_corrupts",
    "fault_delayed", "retransmits", "retry_timeouts", "naks_sent",
    "naks_rcvd", "nak_seq_sent", "nak_seq_rcvd", "duplicates",
    "icrc_errors", "rx_malformed", "rx_stale", "roce_tx_dropped",
    "acks_coalesced", "cqes", "cqes_error",
};

typedef struct Counters {
    uint64_t v[2][C_N];         /* by NIC */
} Counters;

typedef struct Run {
    UzMachine m;
    UzNode n[2];
    Flow f[2];                  /* f[0]: uz0 -> uz1, f[1]: uz1 -> uz0 */
    unsigned steps;             /* clock steps taken */
    unsigned batches;
    /* Called after flow 0's batch is posted (@phase 0), and flow 1's. */
    void (*hook)(struct Run *t, int phase);
    unsigned flaps[2];          /* link flaps, by NIC */
} Run;

/* ------------------------------------------------------------------ */
/* Machine, properties, counters                                      */
/* ------------------------------------------------------------------ */

static void run_start(Run *t)
{
    memset(t, 0, sizeof(*t));
    uz_machine_start(&t->m, 2, NULL);
    uz_node_start(&t->n[0], &t->m, 0);
    uz_node_start(&t->n[1], &t->m, 1);
}

static void run_stop(Run *t)
{
    int i;

    for (i = 0; i < 2; i++) {
        if (t->f[i].r) {
            g_rand_free(t->f[i].r);
            g_free(t->f[i].rsrc);
        }
    }
    uz_node_stop(&t->n[0]);
    uz_node_stop(&t->n[1]);
    uz_machine_stop(&t->m);
}

static QTestState *qts(Run *t)
{
    return t->m.qs->qts;
}

/* qom-set of a number; returns the response, for the caller to check. */
static QDict *prop_set_num(Run *t, int nic, const char *prop, double v)
{
    g_autofree char *path = g_strdup_printf("/machine/peripheral/uz%d", nic);

    return qtest_qmp(qts(t), "{'execute': 'qom-set', 'arguments': "
                     "{'path': %s, 'property': %s, 'value': %f}}",
                     path, prop, v);
}

static QDict *prop_set_uint(Run *t, int nic, const char *prop, uint64_t v)
{
    g_autofree char *path = g_strdup_printf("/machine/peripheral/uz%d", nic);

    return qtest_qmp(qts(t), "{'execute': 'qom-set', 'arguments': "
                     "{'path': %s, 'property': %s, 'value': %" PRIu64 "}}",
                     path, prop, v);
}

static QObject *prop_get(Run *t, int nic, const char *prop, QDict **rsp)
{
    g_autofree char *path = g_strdup_printf("/machine/peripheral/uz%d", nic);

    *rsp = qtest_qmp(qts(t), "{'execute': 'qom-get', 'arguments': "
                     "{'path': %s, 'property': %s}}", path, prop);
    g_assert(qdict_haskey(*rsp, "return"));
    return qdict_get(*rsp, "return");
}

static double prop_get_num(Run *t, int nic, const char *prop)
{
    QDict *rsp;
    double v = qnum_get_double(qobject_to(QNum, prop_get(t, nic, prop,
                                                         &rsp)));

    qobject_unref(rsp);
    return v;
}

static uint64_t prop_get_uint(Run *t, int nic, const char *prop)
{
    QDict *rsp;
    uint64_t v;

    g_assert(qnum_get_try_uint(qobject_to(QNum, prop_get(t, nic, prop,
                                                         &rsp)), &v));
    qobject_unref(rsp);
    return v;
}

static bool prop_get_bool(Run *t, int nic, const char *prop)
{
    QDict *rsp;
    bool v = qbool_get_bool(qobject_to(QBool, prop_get(t, nic, prop,
                                                       &rsp)));

    qobject_unref(rsp);
    return v;
}

/* A setting the device must take. */
static void fault_set(Run *t, int nic, const char *prop, double v)
{
    QDict *rsp = prop_set_num(t, nic, prop, v);

    if (!qdict_haskey(rsp, "return")) {
        g_error("uz%d: qom-set %s %g refused", nic, prop, v);
    }
    qobject_unref(rsp);
}

static void fault_set_uint(Run *t, int nic, const char *prop, uint64_t v)
{
    QDict *rsp = prop_set_uint(t, nic, prop, v);

    if (!qdict_haskey(rsp, "return")) {
        g_error("uz%d: qom-set %s %" PRIu64 " refused", nic, prop, v);
    }
    qobject_unref(rsp);
}

/* The same fault on both NICs, each with a seed of its own. */
static void fault_both(Run *t, const char *prop, double v, uint64_t seed)
{
    int i;

    for (i = 0; i < 2; i++) {
        fault_set_uint(t, i, "fault-seed", seed + i);
        fault_set(t, i, prop, v);
    }
}

/* A setting the device must refuse, leaving the old value. */
static void prop_refused(Run *t, int nic, QDict *rsp, const char *prop,
                         double old)
{
    QDict *err = qdict_get_qdict(rsp, "error");

    g_assert(err);
    g_assert_cmpstr(qdict_get_str(err, "class"), ==, "GenericError");
    g_assert(strstr(qdict_get_str(err, "desc"), prop));
    qobject_unref(rsp);
    g_assert_cmpfloat(prop_get_num(t, nic, prop), ==, old);
}

static void counters_get(Run *t, Counters *c)
{
    int i, k;

    for (i = 0; i < 2; i++) {
        for (k = 0; k < C_N; k++) {
            c->v[i][k] = uz_counter(&t->m, i, counter_name[k]);
        }
    }
}

/* Since @c0, on NIC @nic (0, 1) or both (-1). */
static uint64_t delta(const Counters *c0, const Counters *c1, int nic, int k)
{
    if (nic < 0) {
        return delta(c0, c1, 0, k) + delta(c0, c1, 1, k);
    }
    return c1->v[nic][k] - c0->v[nic][k];
}

/* ------------------------------------------------------------------ */
/* Data                                                               */
/* ------------------------------------------------------------------ */

/* A SEND's or WRITE's bytes: its flow and sequence number, a pattern. */
static void payload(const Flow *f, const Msg *m, uint8_t *buf)
{
    uz_pattern(buf, m->len, (f->id << 24) ^ m->seq);
    stl_le_p(buf, (f->id << 24) | m->seq);
}

static uint64_t sq_id(const Flow *f, uint32_t seq)
{
    return 0x5100000000ull | ((uint64_t)f->id << 24) | seq;
}

static uint64_t rq_id(const Flow *f, uint32_t seq)
{
    return 0x7e00000000ull | ((uint64_t)f->id << 24) | seq;
}

static uint32_t imm_of(const Flow *f, uint32_t seq)
{
    return 0xa0000000u | (f->id << 24) | seq;
}

static const char *op_name(uint8_t op)
{
    switch (op) {
    case UZ_WR_SEND:
        return "SEND";
    case UZ_WR_SEND_IMM:
        return "SEND_IMM";
    case UZ_WR_RDMA_WRITE:
        return "WRITE";
    case UZ_WR_RDMA_WRITE_IMM:
        return "WRITE_IMM";
    case UZ_WR_RDMA_READ:
        return "READ";
    case UZ_WR_ATOMIC_CMP_SWP:
        return "CMP_SWP";
    default:
        return "FETCH_ADD";
    }
}

static bool op_recv(uint8_t op)
{
    return op == UZ_WR_SEND || op == UZ_WR_SEND_IMM ||
           op == UZ_WR_RDMA_WRITE_IMM;
}

/* The bytes at @off of @mr are @want, followed by GUARD_LEN guards. */
static void check_bytes(UzMr *mr, uint64_t off, const uint8_t *want,
                        uint32_t len, const Flow *f, const Msg *m,
                        const char *what)
{
    g_autofree uint8_t *got = g_malloc(len + GUARD_LEN);
    uint32_t i;

    uz_mr_read(mr, off, got, len + GUARD_LEN);
    /* A SEND or WRITE: whose bytes are these? */
    if (m->op != UZ_WR_RDMA_READ && len >= 4 &&
        ldl_le_p(got) != ldl_le_p(want) && ldl_le_p(got) >> 24 == f->id) {
        g_error("flow %d: %s of message %u (%s, %u bytes) holds message "
                "%u", f->id, what, m->seq, op_name(m->op), m->len,
                ldl_le_p(got) & 0xffffff);
    }
    for (i = 0; i < len + GUARD_LEN; i++) {
        uint8_t w = i < len ? want[i] : UZ_GUARD;

        if (got[i] != w) {
            g_error("flow %d: %s of message %u (%s, %u bytes): byte %u is "
                    "0x%02x, expected 0x%02x", f->id, what, m->seq,
                    op_name(m->op), m->len, i, got[i], w);
        }
    }
}

/* ------------------------------------------------------------------ */
/* Flows                                                              */
/* ------------------------------------------------------------------ */

static void flow_init(Run *t, Flow *f, int id, const UzRcOpts *o)
{
    UzNode *a = &t->n[id], *b = &t->n[!id];
    uint64_t v;

    memset(f, 0, sizeof(*f));
    f->id = id;
    f->r = g_rand_new_with_seed(WORK_SEED + id + 2 * salt);
    f->req = uz_qp_create(a, UZ_QPT_RC, NULL, NULL, NULL, 0);
    f->resp = uz_qp_create(b, UZ_QPT_RC, NULL, NULL, NULL, 0);
    uz_rc_connect(f->req, f->resp, o);
    f->lmr = uz_mr_reg(a, L_LEN, UZ_ACCESS_ALL);
    f->rmr = uz_mr_reg(b, R_LEN, UZ_ACCESS_ALL);
    f->rsrc = g_malloc(RSRC_LEN);
    uz_pattern(f->rsrc, RSRC_LEN, 0x5a5a0000u + id);
    uz_mr_write(f->rmr, R_RSRC, f->rsrc, RSRC_LEN);
    /* FETCH_ADDs carry out of the low word soon. */
    f->fadd = 0xfffffffff0000000ull + id;
    f->cas = 0xc0000000ull + id;
    v = cpu_to_le64(f->fadd);
    uz_mr_write(f->rmr, R_FADD, &v, 8);
    v = cpu_to_le64(f->cas);
    uz_mr_write(f->rmr, R_CAS, &v, 8);
}

/* Both flows, with RC timeout @timeout and @retry_cnt. */
static void flows_init(Run *t, uint8_t timeout, uint8_t retry_cnt)
{
    UzRcOpts o = UZ_RC_OPTS_DEFAULT;

    o.timeout = timeout;
    o.retry_cnt = retry_cnt;
    flow_init(t, &t->f[0], 0, &o);
    /* The other way, PSNs that wrap within the first message or two. */
    o.psn[0] = 0xfffffe;
    o.psn[1] = 0x7ffffd;
    flow_init(t, &t->f[1], 1, &o);
}

/* Sizes around the path MTU, and up to six packets. */
static uint32_t msg_len(GRand *r)
{
    static const uint32_t edge[] = { 4, 1023, 1024, 1025, 2048, LEN_MAX };

    switch (g_rand_int_range(r, 0, 4)) {
    case 0:
        return g_rand_int_range(r, 4, 257);
    case 1:
        return edge[g_rand_int_range(r, 0, ARRAY_SIZE(edge))];
    case 2:
        return g_rand_int_range(r, 257, 1025);
    default:
        return g_rand_int_range(r, 1025, LEN_MAX + 1);
    }
}

static uint8_t msg_op(GRand *r)
{
    static const struct {
        uint8_t op;
        int weight;
    } mix[] = {
        { UZ_WR_SEND, 28 }, { UZ_WR_SEND_IMM, 6 },
        { UZ_WR_RDMA_WRITE, 20 }, { UZ_WR_RDMA_WRITE_IMM, 6 },
        { UZ_WR_RDMA_READ, 22 }, { UZ_WR_ATOMIC_FETCH_ADD, 12 },
        { UZ_WR_ATOMIC_CMP_SWP, 6 },
    };
    int pick = g_rand_int_range(r, 0, 100), i;

    for (i = 0; pick >= mix[i].weight; i++) {
        pick -= mix[i].weight;
    }
    return mix[i].op;
}

/* Make message @i of the batch, its buffers and its receive WQE. */
static void msg_make(Flow *f, int i, UzWr *wr, UzSge *s)
{
    Msg *m = &f->m[i];
    g_autofree uint8_t *buf = NULL;
    uint64_t v = ~0ull;

    *m = (Msg) { .seq = f->seq++, .op = msg_op(f->r), .recv = -1 };
    *wr = (UzWr) {
        .wr_id = sq_id(f, m->seq), .opcode = m->op,
        .flags = UZ_WQE_F_SIGNALED, .sge = s, .num_sge = 1,
        .imm = imm_of(f, m->seq), .rkey = f->rmr->key,
    };
    switch (m->op) {
    case UZ_WR_RDMA_READ:
        m->len = msg_len(f->r);
        m->roff = g_rand_int_range(f->r, 0, RSRC_LEN - m->len + 1);
        uz_mr_fill(f->lmr, L_READ + i * SLOT, UZ_GUARD, m->len + GUARD_LEN);
        *s = uz_mr_sge(f->lmr, L_READ + i * SLOT, m->len);
        wr->remote_addr = uz_mr_va(f->rmr, R_RSRC + m->roff);
        break;
    case UZ_WR_ATOMIC_FETCH_ADD:
    case UZ_WR_ATOMIC_CMP_SWP:
        m->len = 8;
        m->orig = m->op == UZ_WR_ATOMIC_CMP_SWP ? f->cas : f->fadd;
        if (m->op == UZ_WR_ATOMIC_FETCH_ADD) {
            m->operand = g_rand_int_range(f->r, 1, 1 << 20) |
                         (uint64_t)g_rand_int_range(f->r, 0, 8) << 40;
            f->fadd += m->operand;
            wr->remote_addr = uz_mr_va(f->rmr, R_FADD);
        } else {
            /* A quarter of them must not swap. */
            m->operand = (uint64_t)g_rand_int(f->r) << 32 | m->seq;
            m->compare = f->cas ^ (g_rand_int_range(f->r, 0, 4) ? 0 : 1);
            if (m->compare == f->cas) {
                f->cas = m->operand;
            }
            wr->remote_addr = uz_mr_va(f->rmr, R_CAS);
        }
        wr->compare_add = m->op == UZ_WR_ATOMIC_CMP_SWP ? m->compare :
                                                         m->operand;
        wr->swap = m->operand;
        uz_mr_write(f->lmr, L_ATOM + i * 8, &v, 8);
        *s = uz_mr_sge(f->lmr, L_ATOM + i * 8, 8);
        break;
    default:
        m->len = msg_len(f->r);
        buf = g_malloc(m->len);
        payload(f, m, buf);
        uz_mr_write(f->lmr, L_SRC + i * SLOT, buf, m->len);
        *s = uz_mr_sge(f->lmr, L_SRC + i * SLOT, m->len);
        if (m->op == UZ_WR_RDMA_WRITE || m->op == UZ_WR_RDMA_WRITE_IMM) {
            uz_mr_fill(f->rmr, R_WRITE + i * SLOT, UZ_GUARD,
                       m->len + GUARD_LEN);
            wr->remote_addr = uz_mr_va(f->rmr, R_WRITE + i * SLOT);
        }
        break;
    }
    if (op_recv(m->op)) {
        UzSge r = uz_mr_sge(f->rmr, R_RECV + f->nrecv * SLOT, SLOT);

        m->recv = f->nrecv;
        f->recv_of[f->nrecv++] = i;
        if (m->op != UZ_WR_RDMA_WRITE_IMM) {
            uz_mr_fill(f->rmr, R_RECV + m->recv * SLOT, UZ_GUARD,
                       m->len + GUARD_LEN);
        }
        uz_post_recv(f->resp, rq_id(f, m->seq), &r, 1);
    }
}

/* Post @n messages, receives first, and ring the SQ once. */
static void flow_post(Flow *f, int n)
{
    UzSge s[BATCH_MAX];
    UzWr wr[BATCH_MAX];
    int i;

    f->n = n;
    f->nrecv = f->sq_got = f->rq_got = 0;
    for (i = 0; i < n; i++) {
        msg_make(f, i, &wr[i], &s[i]);
    }
    for (i = 0; i < n; i++) {
        uz_sq_post(f->req, &wr[i]);
    }
    uz_sq_ring(f->req);
}

static bool flow_done(const Flow *f)
{
    return f->sq_got == f->n && f->rq_got == f->nrecv;
}

static void sq_check(Flow *f, const struct uz_cqe *c)
{
    const Msg *m = &f->m[f->sq_got];

    if (c->wr_id != sq_id(f, m->seq) ||
        c->status != UZ_WC_STATUS_SUCCESS) {
        g_error("flow %d: send CQE wr_id 0x%" PRIx64 " status %u (detail "
                "%u); expected message %u (%s, %u bytes), success%s",
                f->id, c->wr_id, c->status, c->vendor_err, m->seq,
                op_name(m->op), m->len,
                c->status == UZ_WC_STATUS_RETRY_EXC_ERR ?
                " (retries exhausted: see uzura_req_timeout in a trace)" :
                "");
    }
    uz_cqe_expect(c, sq_id(f, m->seq), uz_wc_opcode(m->op),
                  UZ_WC_STATUS_SUCCESS, UZ_VERR_NONE, f->req->qpn);
    g_assert_cmpuint(c->byte_len, ==, m->len);
    g_assert_cmphex(c->wc_flags, ==, 0);
}

static void rq_check(Flow *f, const struct uz_cqe *c)
{
    const Msg *m = &f->m[f->recv_of[f->rq_got]];
    bool wimm = m->op == UZ_WR_RDMA_WRITE_IMM;
    bool imm = wimm || m->op == UZ_WR_SEND_IMM;

    if (c->wr_id != rq_id(f, m->seq) ||
        c->status != UZ_WC_STATUS_SUCCESS || c->byte_len != m->len) {
        g_error("flow %d: receive CQE wr_id 0x%" PRIx64 " status %u "
                "(detail %u) of %u bytes; expected message %u (%s, %u "
                "bytes), success", f->id, c->wr_id, c->status,
                c->vendor_err, c->byte_len, m->seq, op_name(m->op), m->len);
    }
    uz_cqe_expect(c, rq_id(f, m->seq),
                  wimm ? UZ_WC_RECV_RDMA_WITH_IMM : UZ_WC_RECV,
                  UZ_WC_STATUS_SUCCESS, UZ_VERR_NONE, f->resp->qpn);
    g_assert_cmphex(c->wc_flags, ==, imm ? UZ_WC_F_IMM : 0);
    g_assert_cmphex(c->imm_data, ==, imm ? imm_of(f, m->seq) : 0);
}

/* Take what completed; true if anything did. */
static bool flow_poll(Flow *f)
{
    struct uz_cqe c[BATCH_MAX];
    int k, i;
    bool moved = false;

    k = uz_cq_poll_many(f->req->scq, c, f->n - f->sq_got);
    for (i = 0; i < k; i++, f->sq_got++) {
        sq_check(f, &c[i]);
        moved = true;
    }
    k = uz_cq_poll_many(f->resp->rcq, c, f->nrecv - f->rq_got);
    for (i = 0; i < k; i++, f->rq_got++) {
        rq_check(f, &c[i]);
        moved = true;
    }
    return moved;
}

/* Every message of the batch did what it should, exactly once. */
static void flow_verify(Flow *f)
{
    g_autofree uint8_t *want = g_malloc(SLOT);
    uint64_t v;
    int i;

    for (i = 0; i < f->n; i++) {
        const Msg *m = &f->m[i];

        switch (m->op) {
        case UZ_WR_SEND:
        case UZ_WR_SEND_IMM:
            payload(f, m, want);
            check_bytes(f->rmr, R_RECV + m->recv * SLOT, want, m->len, f, m,
                        "receive buffer");
            break;
        case UZ_WR_RDMA_WRITE:
        case UZ_WR_RDMA_WRITE_IMM:
            payload(f, m, want);
            check_bytes(f->rmr, R_WRITE + i * SLOT, want, m->len, f, m,
                        "WRITE target");
            break;
        case UZ_WR_RDMA_READ:
            check_bytes(f->lmr, L_READ + i * SLOT, f->rsrc + m->roff,
                        m->len, f, m, "READ target");
            break;
        default:
            uz_mr_read(f->lmr, L_ATOM + i * 8, &v, 8);
            if (le64_to_cpu(v) != m->orig) {
                g_error("flow %d: %s %u returned 0x%" PRIx64 ", expected 0x%"
                        PRIx64, f->id, op_name(m->op), m->seq,
                        le64_to_cpu(v), m->orig);
            }
            break;
        }
    }
}

/* The atomic words hold every FETCH_ADD and successful CMP_SWP once. */
static void flow_finish(Flow *f)
{
    struct uz_cqe c;
    uint64_t v;

    uz_mr_read(f->rmr, R_FADD, &v, 8);
    g_assert_cmphex(le64_to_cpu(v), ==, f->fadd);
    uz_mr_read(f->rmr, R_CAS, &v, 8);
    g_assert_cmphex(le64_to_cpu(v), ==, f->cas);
    g_assert(!uz_cq_poll(f->req->scq, &c));
    g_assert(!uz_cq_poll(f->req->rcq, &c));
    g_assert(!uz_cq_poll(f->resp->scq, &c));
    g_assert(!uz_cq_poll(f->resp->rcq, &c));
    g_assert_cmpint(uz_qp_state(f->req), ==, UZ_QPS_RTS);
    g_assert_cmpint(uz_qp_state(f->resp), ==, UZ_QPS_RTS);
}

/* ------------------------------------------------------------------ */
/* Streams                                                            */
/* ------------------------------------------------------------------ */

static void run_stalled(Run *t)
{
    int i;

    for (i = 0; i < 2; i++) {
        Flow *f = &t->f[i];

        g_test_message("flow %d: %d of %d send CQEs, %d of %d receive "
                       "CQEs; QP states %u %u; next message %u", i,
                       f->sq_got, f->n, f->rq_got, f->nrecv,
                       uz_qp_state(f->req), uz_qp_state(f->resp),
                       f->m[MIN(f->sq_got, f->n - 1)].seq);
    }
    for (i = 0; i < C_N; i++) {
        g_test_message("%s: %" PRIu64 " %" PRIu64, counter_name[i],
                       uz_counter(&t->m, 0, counter_name[i]),
                       uz_counter(&t->m, 1, counter_name[i]));
    }
    g_error("batch %u: no completion for %d clock steps of %lld us",
            t->batches, STALL_STEPS, STEP_NS / US);
}

/*
 * Wait for every CQE of the batch.  The device runs between our polls;
 * when nothing completes for a while it waits for a timer (ACK timeout,
 * a reordered or delayed frame): step the clock.
 */
static void run_wait(Run *t)
{
    int idle = 0, stalled = 0;

    while (!flow_done(&t->f[0]) || !flow_done(&t->f[1])) {
        bool moved = flow_poll(&t->f[0]);

        moved |= flow_poll(&t->f[1]);
        if (moved) {
            idle = stalled = 0;
            continue;
        }
        if (++idle < IDLE_POLLS) {
            uz_poll_pause(&t->n[0].d);
            continue;
        }
        idle = 0;
        if (++stalled > STALL_STEPS) {
            run_stalled(t);
        }
        qtest_clock_step(qts(t), STEP_NS);
        t->steps++;
    }
}

/* @nmsg messages, half each way, in batches of 1 to BATCH_MAX. */
static void run_stream(Run *t, int nmsg)
{
    int left[2] = { nmsg / 2, nmsg - nmsg / 2 };
    int i;

    while (left[0] || left[1]) {
        for (i = 0; i < 2; i++) {
            Flow *f = &t->f[i];
            int n = MIN(g_rand_int_range(f->r, 1, BATCH_MAX + 1), left[i]);

            flow_post(f, n);
            left[i] -= n;
            if (t->hook) {
                t->hook(t, i);
            }
        }
        run_wait(t);
        for (i = 0; i < 2; i++) {
            flow_verify(&t->f[i]);
        }
        t->batches++;
    }
    for (i = 0; i < 2; i++) {
        flow_finish(&t->f[i]);
    }
}

/* No QP failed on its own, no CQ overflowed; returns the link events. */
static void run_events(Run *t, int nic, int *down, int *up)
{
    UzNode *n = &t->n[nic];
    struct uz_eqe eqe;

    *down = *up = 0;
    while (uz_eq_next(&n->d, &n->async_eq, &eqe)) {
        uz_ring(&n->d, n->async_eq.db, n->async_eq.ci);
        switch (eqe.type) {
        case UZ_EQE_PORT_DOWN:
            (*down)++;
            break;
        case UZ_EQE_PORT_ACTIVE:
            (*up)++;
            break;
        default:
            g_error("uz%d: unexpected event 0x%x handle %u", nic, eqe.type,
                    le32_to_cpu(eqe.handle));
        }
    }
}

static void run_summary(Run *t, const char *what, const Counters *c0,
                        const Counters *c1)
{
    g_test_message("%s: faults %" PRIu64 " (drop %" PRIu64 " dup %" PRIu64
                   " reorder %" PRIu64 " corrupt %" PRIu64 " delayed %"
                   PRIu64 "), retransmits %" PRIu64 ", retry_timeouts %"
                   PRIu64 ", seq NAKs sent %" PRIu64 " rcvd %" PRIu64
                   ", duplicates %" PRIu64 ", rx_stale %" PRIu64
                   ", icrc_errors %" PRIu64 ", rx_malformed %" PRIu64
                   ", acks_coalesced %" PRIu64 "; %u batches, %u clock "
                   "steps", what,
                   delta(c0, c1, -1, C_DROPS) + delta(c0, c1, -1, C_DUPS) +
                   delta(c0, c1, -1, C_REORDERS) +
                   delta(c0, c1, -1, C_CORRUPTS),
                   delta(c0, c1, -1, C_DROPS), delta(c0, c1, -1, C_DUPS),
                   delta(c0, c1, -1, C_REORDERS),
                   delta(c0, c1, -1, C_CORRUPTS),
                   delta(c0, c1, -1, C_DELAYED),
                   delta(c0, c1, -1, C_RETRANSMITS),
                   delta(c0, c1, -1, C_TIMEOUTS),
                   delta(c0, c1, -1, C_SEQ_SENT),
                   delta(c0, c1, -1, C_SEQ_RCVD),
                   delta(c0, c1, -1, C_DUPLICATES),
                   delta(c0, c1, -1, C_STALE), delta(c0, c1, -1, C_ICRC),
                   delta(c0, c1, -1, C_MALFORMED),
                   delta(c0, c1, -1, C_COALESCED), t->batches, t->steps);
}

/* ------------------------------------------------------------------ */
/* 1. Each fault at 1, 5 and 20 %                                     */
/* ------------------------------------------------------------------ */

typedef struct FaultCase {
    int kind;                   /* C_DROPS .. C_CORRUPTS */
    int pct;
} FaultCase;

static const char *const kind_prop[] = {
    [C_DROPS] = "fault-drop", [C_DUPS] = "fault-dup",
    [C_REORDERS] = "fault-reorder", [C_CORRUPTS] = "fault-corrupt",
};

/*
 * NMSG messages with one kind of fault on both NICs.  At 20 % the retry
 * budget can legitimately run out: an exchange of one request and one
 * answer fails with probability 1 - 0.8 * 0.8 = 0.36, eight times in a
 * row with 3e-4.  The fixed seeds here stay within it (once the READ bug
 * noted in main() is fixed); with other seeds, read a trace of
 * uzura_req_timeout before calling a RETRY_EXC_ERR at 20 % a bug.
 */
static void test_stream(gconstpointer data)
{
    const FaultCase *fc = data;
    g_autofree char *what = g_strdup_printf("%s %d%%", kind_prop[fc->kind],
                                            fc->pct);
    Counters c0, c1;
    Run t;
    int i, down, up;

    run_start(&t);
    flows_init(&t, TIMEOUT, RETRY_CNT);
    fault_both(&t, kind_prop[fc->kind], fc->pct / 100.0,
               (FAULT_SEED + fc->kind * 256 + fc->pct * 2) ^
               (uint64_t)salt << 32);
    counters_get(&t, &c0);
    run_stream(&t, NMSG);
    counters_get(&t, &c1);
    run_summary(&t, what, &c0, &c1);

    for (i = 0; i < 2; i++) {
        run_events(&t, i, &down, &up);
        g_assert_cmpint(down + up, ==, 0);
        g_assert_cmpuint(delta(&c0, &c1, i, C_CQES_ERROR), ==, 0);
        /* Faults of this kind on each NIC, of no other. */
        g_assert_cmpuint(delta(&c0, &c1, i, fc->kind), >, 0);
        g_assert_cmpuint(delta(&c0, &c1, i, C_DROPS) +
                         delta(&c0, &c1, i, C_DUPS) +
                         delta(&c0, &c1, i, C_REORDERS) +
                         delta(&c0, &c1, i, C_CORRUPTS), ==,
                         delta(&c0, &c1, i, fc->kind));
        g_assert_cmpuint(delta(&c0, &c1, i, C_DELAYED), ==, 0);
        g_assert_cmpuint(delta(&c0, &c1, i, C_TX_DROPPED), ==, 0);
    }
    /* The repair each kind of fault needs. */
    switch (fc->kind) {
    case C_DROPS:
        g_assert_cmpuint(delta(&c0, &c1, -1, C_RETRANSMITS), >, 0);
        break;
    case C_CORRUPTS:
        g_assert_cmpuint(delta(&c0, &c1, -1, C_ICRC) +
                         delta(&c0, &c1, -1, C_MALFORMED), >, 0);
        g_assert_cmpuint(delta(&c0, &c1, -1, C_RETRANSMITS), >, 0);
        break;
    case C_DUPS:
        /* A copy of a request is a duplicate; of an answer, stale. */
        g_assert_cmpuint(delta(&c0, &c1, -1, C_DUPLICATES), >, 0);
        /* Nothing is lost: nothing needs the clock. */
        g_assert_cmpuint(delta(&c0, &c1, -1, C_TIMEOUTS), ==, 0);
        break;
    default:
        /*
         * A request overtaken by the next one is a gap (a sequence NAK),
         * then a duplicate when sent again; an answer overtaken, stale.
         * Timeouts may be needed: the responder drops what comes after
         * a gap it has NAKed already, and nothing may follow the drop.
         */
        g_assert_cmpuint(delta(&c0, &c1, -1, C_SEQ_SENT) +
                         delta(&c0, &c1, -1, C_DUPLICATES) +
                         delta(&c0, &c1, -1, C_STALE), >, 0);
        break;
    }
    run_stop(&t);
}

#define MIXED_PCT           5
#define MIXED_DELAY_US      20

/*
 * All four at once, and a delay; with @data "sr", both NICs recover by
 * selective repeat, which must be as lossless as go-back-N.
 */
static void test_mixed(const void *data)
{
    static const int kinds[] = { C_DROPS, C_DUPS, C_REORDERS, C_CORRUPTS };
    const char *mode = data;
    Counters c0, c1;
    Run t;
    int i, k, down, up;

    run_start(&t);
    flows_init(&t, TIMEOUT, RETRY_CNT);
    for (i = 0; i < 2; i++) {
        g_autofree char *path = g_strdup_printf("/machine/peripheral/uz%d",
                                                i);

        qtest_qmp_assert_success(qts(&t), "{'execute': 'qom-set', "
                                 "'arguments': {'path': %s, 'property': "
                                 "'recovery', 'value': %s}}", path, mode);
        fault_set_uint(&t, i, "fault-seed",
                       (FAULT_SEED + 0x10000 + i) ^ (uint64_t)salt << 32);
        for (k = 0; k < ARRAY_SIZE(kinds); k++) {
            fault_set(&t, i, kind_prop[kinds[k]], MIXED_PCT / 100.0);
        }
        fault_set_uint(&t, i, "fault-delay-us", MIXED_DELAY_US);
    }
    counters_get(&t, &c0);
    run_stream(&t, NMSG);
    counters_get(&t, &c1);
    run_summary(&t, "all faults 5% and fault-delay-us 20", &c0, &c1);
    for (i = 0; i < 2; i++) {
        run_events(&t, i, &down, &up);
        g_assert_cmpint(down + up, ==, 0);
        g_assert_cmpuint(delta(&c0, &c1, i, C_CQES_ERROR), ==, 0);
        for (k = C_DROPS; k <= C_DELAYED; k++) {
            g_assert_cmpuint(delta(&c0, &c1, i, k), >, 0);
        }
    }
    g_assert_cmpuint(delta(&c0, &c1, -1, C_RETRANSMITS), >, 0);
    if (!strcmp(mode, "sr")) {
        g_test_message("sacks sent %" PRIu64 ", packets kept %" PRIu64
                       ", resent for SACKs %" PRIu64,
                       uz_counter(&t.m, 0, "sacks_sent") +
                       uz_counter(&t.m, 1, "sacks_sent"),
                       uz_counter(&t.m, 0, "sr_kept") +
                       uz_counter(&t.m, 1, "sr_kept"),
                       uz_counter(&t.m, 0, "sr_resent") +
                       uz_counter(&t.m, 1, "sr_resent"));
        for (i = 0; i < 2; i++) {
            g_assert_cmpuint(uz_counter(&t.m, i, "sacks_sent"), >, 0);
            g_assert_cmpuint(uz_counter(&t.m, i, "sr_resent"), >, 0);
        }
    }
    run_stop(&t);
}

/* ------------------------------------------------------------------ */
/* 2. Link flaps within the retry budget                              */
/* ------------------------------------------------------------------ */

#define FLAP_MSG            400
#define FLAP_EVERY          4       /* batches */

/*
 * Every FLAP_EVERY batches, pull one NIC's cable once flow 0's batch is
 * on its way and before flow 1's is posted, and plug it in again 1 to 4
 * ms later: fewer ACK timeouts than retry_cnt allows.  What flow 0 sent
 * before the cable went depends on how far the device got; flow 1's
 * batch is surely lost and needs the ACK timeout.
 */
static void flap_hook(Run *t, int phase)
{
    int nic = (t->batches / FLAP_EVERY) % 2;
    int steps = 4 + 4 * ((t->batches / (2 * FLAP_EVERY)) % 4);
    int i;

    if (t->batches % FLAP_EVERY != 1) {
        return;
    }
    if (phase == 0) {
        uz_link_set(&t->m, nic, false);
        return;
    }
    for (i = 0; i < steps; i++) {
        qtest_clock_step(qts(t), STEP_NS);
        uz_poll_pause(&t->n[0].d);
    }
    uz_link_set(&t->m, nic, true);
    t->flaps[nic]++;
    g_assert_cmpuint((steps * STEP_NS) / TIMEOUT_NS + 1, <, RETRY_CNT);
}

static void test_link_flap(void)
{
    Counters c0, c1;
    Run t;
    int i, down, up;

    run_start(&t);
    flows_init(&t, TIMEOUT, RETRY_CNT);
    t.hook = flap_hook;
    counters_get(&t, &c0);
    run_stream(&t, FLAP_MSG);
    counters_get(&t, &c1);
    run_summary(&t, "link flaps", &c0, &c1);
    g_test_message("link flaps: uz0 %u, uz1 %u; %" PRIu64 " RoCE frames "
                   "not sent", t.flaps[0], t.flaps[1],
                   delta(&c0, &c1, -1, C_TX_DROPPED));

    for (i = 0; i < 2; i++) {
        g_assert_cmpuint(t.flaps[i], >, 0);
        run_events(&t, i, &down, &up);
        g_assert_cmpint(down, ==, t.flaps[i]);
        g_assert_cmpint(up, ==, t.flaps[i]);
        g_assert_cmpuint(delta(&c0, &c1, i, C_CQES_ERROR), ==, 0);
        g_assert_cmpuint(delta(&c0, &c1, i, C_DROPS), ==, 0);
    }
    /* The cable lost frames, and the transport sent them again. */
    g_assert_cmpuint(delta(&c0, &c1, -1, C_TIMEOUTS), >, 0);
    g_assert_cmpuint(delta(&c0, &c1, -1, C_RETRANSMITS), >, 0);
    run_stop(&t);
}

/* ------------------------------------------------------------------ */
/* 3. Loss beyond the retry budget                                    */
/* ------------------------------------------------------------------ */

#define EXH_RETRY           2

/* A fresh pair on the same NICs: a SEND round trip. */
static void check_fresh_pair(Run *t)
{
    UzQp *qa = uz_qp_create(&t->n[0], UZ_QPT_RC, NULL, NULL, NULL, 0);
    UzQp *qb = uz_qp_create(&t->n[1], UZ_QPT_RC, NULL, NULL, NULL, 0);
    UzMr *ma = uz_mr_reg(&t->n[0], 8192, UZ_ACCESS_ALL);
    UzMr *mb = uz_mr_reg(&t->n[1], 8192, UZ_ACCESS_ALL);
    uint8_t data[3000], out[3000];
    UzSge s = uz_mr_sge(ma, 0, sizeof(data));
    UzSge r = uz_mr_sge(mb, 0, 8192);
    UzWr wr = {
        .wr_id = 0xf5e5, .opcode = UZ_WR_SEND, .flags = UZ_WQE_F_SIGNALED,
        .sge = &s, .num_sge = 1,
    };
    struct uz_cqe c;

    uz_rc_connect(qa, qb, NULL);
    uz_pattern(data, sizeof(data), 0xf5e5);
    uz_mr_write(ma, 0, data, sizeof(data));
    uz_post_recv(qb, 0xf7e7, &r, 1);
    uz_post_send(qa, &wr);
    uz_cq_wait(qa->scq, &c);
    uz_cqe_expect(&c, 0xf5e5, UZ_WC_SEND, UZ_WC_STATUS_SUCCESS, 0, qa->qpn);
    uz_cq_wait(qb->rcq, &c);
    uz_cqe_expect(&c, 0xf7e7, UZ_WC_RECV, UZ_WC_STATUS_SUCCESS, 0, qb->qpn);
    g_assert_cmpuint(c.byte_len, ==, sizeof(data));
    uz_mr_read(mb, 0, out, sizeof(out));
    g_assert(!memcmp(data, out, sizeof(data)));
}

/*
 * Everything NIC @nic sends is lost: NIC 0's requests, or NIC 1's
 * answers.  The requester's first WQE fails with RETRY_EXC_ERR after
 * retry_cnt retries, the rest are flushed, the QP goes to ERR with no
 * async event (the CQE says it); the responder keeps its QP, and has
 * executed what reached it exactly once.
 */
static void check_exhaust(Run *t, int nic)
{
    static const uint8_t ops[4] = {
        UZ_WR_SEND, UZ_WR_RDMA_WRITE, UZ_WR_ATOMIC_FETCH_ADD,
        UZ_WR_RDMA_READ,
    };
    UzRcOpts o = UZ_RC_OPTS_DEFAULT;
    UzQp *qa = uz_qp_create(&t->n[0], UZ_QPT_RC, NULL, NULL, NULL, 0);
    UzQp *qb = uz_qp_create(&t->n[1], UZ_QPT_RC, NULL, NULL, NULL, 0);
    UzMr *ma = uz_mr_reg(&t->n[0], 16384, UZ_ACCESS_ALL);
    UzMr *mb = uz_mr_reg(&t->n[1], 16384, UZ_ACCESS_ALL);
    uint64_t to0 = uz_counter(&t->m, 0, "retry_timeouts");
    uint64_t drops0 = uz_counter(&t->m, nic, "fault_drops");
    uint64_t dup0 = uz_counter(&t->m, 1, "duplicates");
    uint64_t v = cpu_to_le64(1000);
    uint8_t data[2500], out[2500];
    UzSge s[4], r = uz_mr_sge(mb, 0, 4096);
    struct uz_cqe c;
    int i;

    o.timeout = TIMEOUT;
    o.retry_cnt = EXH_RETRY;
    uz_rc_connect(qa, qb, &o);
    uz_pattern(data, sizeof(data), 0xe0 + nic);
    uz_mr_write(ma, 0, data, sizeof(data));
    uz_mr_write(mb, 8192, &v, 8);
    uz_post_recv(qb, 0xe100, &r, 1);
    fault_set(t, nic, "fault-drop", 1);

    for (i = 0; i < 4; i++) {
        bool atomic = uz_wr_is_atomic(ops[i]);
        UzWr wr = {
            .wr_id = 0xe000 + i, .opcode = ops[i],
            /* Flushed WQEs complete, signalled or not. */
            .flags = i == 1 ? 0 : UZ_WQE_F_SIGNALED,
            .sge = &s[i], .num_sge = 1, .compare_add = 5,
            .remote_addr = uz_mr_va(mb, atomic ? 8192 : 4096),
            .rkey = mb->key,
        };

        s[i] = uz_mr_sge(ma, atomic ? 4096 : i == 3 ? 6144 : 0,
                         atomic ? 8 : sizeof(data));
        uz_sq_post(qa, &wr);
    }
    uz_sq_ring(qa);

    uz_cq_wait_clock(qa->scq, &c, STEP_NS, 200);
    uz_cqe_expect(&c, 0xe000, UZ_WC_SEND, UZ_WC_STATUS_RETRY_EXC_ERR,
                  UZ_VERR_NONE, qa->qpn);
    for (i = 1; i < 4; i++) {
        uz_cq_wait(qa->scq, &c);
        uz_cqe_expect(&c, 0xe000 + i, uz_wc_opcode(ops[i]),
                      UZ_WC_STATUS_WR_FLUSH_ERR, UZ_VERR_NONE, qa->qpn);
    }
    uz_qp_failed(qa, 0);
    /* One timeout for each retry, and the last one that fails. */
    g_assert_cmpuint(uz_counter(&t->m, 0, "retry_timeouts") - to0, ==,
                     EXH_RETRY + 1);
    g_assert_cmpuint(uz_counter(&t->m, nic, "fault_drops") - drops0, >=,
                     EXH_RETRY + 1);
    /* Nothing more: no CQE, not even after more timeouts' worth. */
    qtest_clock_step(qts(t), 5 * TIMEOUT_NS);
    uz_cq_assert_empty(qa->scq, 20);
    g_assert_cmpint(uz_qp_state(qb), ==, UZ_QPS_RTS);

    uz_mr_read(mb, 8192, &v, 8);
    if (nic == 0) {
        /* Nothing reached the responder. */
        uz_cq_assert_empty(qb->rcq, 5);
        g_assert_cmpuint(le64_to_cpu(v), ==, 1000);
    } else {
        /* All of it did, each request retry_cnt + 1 times. */
        uz_cq_wait(qb->rcq, &c);
        uz_cqe_expect(&c, 0xe100, UZ_WC_RECV, UZ_WC_STATUS_SUCCESS, 0,
                      qb->qpn);
        g_assert_cmpuint(c.byte_len, ==, sizeof(data));
        uz_mr_read(mb, 0, out, sizeof(out));
        g_assert(!memcmp(out, data, sizeof(data)));
        uz_mr_read(mb, 4096, out, sizeof(out));
        g_assert(!memcmp(out, data, sizeof(data)));
        g_assert_cmpuint(le64_to_cpu(v), ==, 1005);
        uz_cq_assert_empty(qb->rcq, 5);
        g_assert_cmpuint(uz_counter(&t->m, 1, "duplicates") - dup0, >=,
                         4 * EXH_RETRY);
    }

    fault_set(t, nic, "fault-drop", 0);
    check_fresh_pair(t);
}

static void test_retry_exhaust(void)
{
    Run t;
    int i, down, up;

    run_start(&t);
    check_exhaust(&t, 0);
    check_exhaust(&t, 1);
    for (i = 0; i < 2; i++) {
        run_events(&t, i, &down, &up);
    }
    run_stop(&t);
}

/* ------------------------------------------------------------------ */
/* 4. The properties                                                  */
/* ------------------------------------------------------------------ */

static void test_props(void)
{
    static const char *const probs[] = {
        "fault-drop", "fault-dup", "fault-reorder", "fault-corrupt",
    };
    static const double bad[] = { 1.5, -0.1, 1.0000001, -0.000000001, 1e300 };
    QDict *rsp;
    Run t;
    int i, k;

    run_start(&t);
    for (i = 0; i < ARRAY_SIZE(probs); i++) {
        g_assert_cmpfloat(prop_get_num(&t, 1, probs[i]), ==, 0);
        fault_set(&t, 1, probs[i], 0.25);
        g_assert_cmpfloat(prop_get_num(&t, 1, probs[i]), ==, 0.25);
        for (k = 0; k < ARRAY_SIZE(bad); k++) {
            prop_refused(&t, 1, prop_set_num(&t, 1, probs[i], bad[k]),
                         probs[i], 0.25);
        }
        /* Not a number at all. */
        rsp = qtest_qmp(qts(&t), "{'execute': 'qom-set', 'arguments': "
                        "{'path': '/machine/peripheral/uz1', 'property': "
                        "%s, 'value': 'half'}}", probs[i]);
        prop_refused(&t, 1, rsp, probs[i], 0.25);
        fault_set(&t, 1, probs[i], 1);
        g_assert_cmpfloat(prop_get_num(&t, 1, probs[i]), ==, 1);
        fault_set(&t, 1, probs[i], 0);
        g_assert_cmpfloat(prop_get_num(&t, 1, probs[i]), ==, 0);
        /* The other NIC's settings are its own. */
        g_assert_cmpfloat(prop_get_num(&t, 0, probs[i]), ==, 0);
    }

    g_assert_cmpuint(prop_get_uint(&t, 1, "fault-delay-us"), ==, 0);
    fault_set_uint(&t, 1, "fault-delay-us", 200);
    g_assert_cmpuint(prop_get_uint(&t, 1, "fault-delay-us"), ==, 200);
    rsp = prop_set_uint(&t, 1, "fault-delay-us", 1000001);
    g_assert(qdict_haskey(rsp, "error"));
    qobject_unref(rsp);
    g_assert_cmpuint(prop_get_uint(&t, 1, "fault-delay-us"), ==, 200);
    fault_set_uint(&t, 1, "fault-delay-us", 1000000);
    g_assert_cmpuint(prop_get_uint(&t, 1, "fault-delay-us"), ==, 1000000);
    fault_set_uint(&t, 1, "fault-delay-us", 0);

    fault_set_uint(&t, 1, "fault-seed", 0xfedcba9876543210ull);
    g_assert_cmphex(prop_get_uint(&t, 1, "fault-seed"), ==,
                    0xfedcba9876543210ull);

    /* The counters are read-only. */
    rsp = prop_set_uint(&t, 1, "fault_drops", 5);
    g_assert(qdict_haskey(rsp, "error"));
    qobject_unref(rsp);
    for (i = C_DROPS; i <= C_DELAYED; i++) {
        g_assert_cmpuint(uz_counter(&t.m, 1, counter_name[i]), ==, 0);
    }

    uz_link_set(&t.m, 1, false);
    g_assert(!prop_get_bool(&t, 1, "link"));
    uz_link_set(&t.m, 1, true);
    g_assert(prop_get_bool(&t, 1, "link"));
    run_stop(&t);
}

/* ------------------------------------------------------------------ */
/* 5. The same seed, the same faults                                  */
/* ------------------------------------------------------------------ */

#define SEED_MSG            200

static void seed_run(Run *t, Counters *d)
{
    static const char *const kinds[] = {
        "fault-drop", "fault-dup", "fault-reorder", "fault-corrupt",
    };
    Counters c0, c1;
    int i, k, nic;

    /* A new pair each way, from the same work seed. */
    for (i = 0; i < 2; i++) {
        if (t->f[i].r) {
            g_rand_free(t->f[i].r);
            g_free(t->f[i].rsrc);
        }
    }
    flows_init(t, TIMEOUT, RETRY_CNT);
    t->batches = t->steps = 0;
    for (nic = 0; nic < 2; nic++) {
        fault_set_uint(t, nic, "fault-seed", 0x5eed + nic);
        for (k = 0; k < ARRAY_SIZE(kinds); k++) {
            fault_set(t, nic, kinds[k], 0.05);
        }
    }
    counters_get(t, &c0);
    run_stream(t, SEED_MSG);
    counters_get(t, &c1);
    for (nic = 0; nic < 2; nic++) {
        for (k = 0; k < ARRAY_SIZE(kinds); k++) {
            fault_set(t, nic, kinds[k], 0);
        }
        for (k = 0; k < C_N; k++) {
            d->v[nic][k] = delta(&c0, &c1, nic, k);
        }
    }
    run_summary(t, "seed run", &c0, &c1);
    /*
     * A frame held back for reordering stays held after the last CQE,
     * and would change the next run's faults: let it go now.
     */
    qtest_clock_step(qts(t), MS);
    uz_poll_pause(&t->n[0].d);
}

static void test_seed(void)
{
    Counters d[2];
    Run t;
    int nic, k;

    run_start(&t);
    seed_run(&t, &d[0]);
    seed_run(&t, &d[1]);
    for (nic = 0; nic < 2; nic++) {
        g_assert_cmpuint(d[0].v[nic][C_DROPS] + d[0].v[nic][C_DUPS] +
                         d[0].v[nic][C_REORDERS] + d[0].v[nic][C_CORRUPTS],
                         >, 0);
        for (k = C_DROPS; k <= C_CORRUPTS; k++) {
            if (d[0].v[nic][k] != d[1].v[nic][k]) {
                g_error("uz%d: %s %" PRIu64 " then %" PRIu64, nic,
                        counter_name[k], d[0].v[nic][k], d[1].v[nic][k]);
            }
        }
        /* What the transport did about them: reported, not asserted. */
        for (k = C_RETRANSMITS; k < C_N; k++) {
            if (d[0].v[nic][k] != d[1].v[nic][k]) {
                g_test_message("uz%d: %s %" PRIu64 " then %" PRIu64, nic,
                               counter_name[k], d[0].v[nic][k],
                               d[1].v[nic][k]);
            }
        }
    }
    run_stop(&t);
}

/* ------------------------------------------------------------------ */
/* 6. Delay                                                           */
/* ------------------------------------------------------------------ */

#define DELAY_US            200
#define DELAY_MSG           300

static void test_delay(void)
{
    Counters c0, c1;
    Run t;
    int i;

    run_start(&t);
    flows_init(&t, TIMEOUT, RETRY_CNT);
    for (i = 0; i < 2; i++) {
        fault_set_uint(&t, i, "fault-delay-us", DELAY_US);
    }
    counters_get(&t, &c0);
    run_stream(&t, DELAY_MSG);
    counters_get(&t, &c1);
    run_summary(&t, "fault-delay-us 200", &c0, &c1);
    for (i = 0; i < 2; i++) {
        g_assert_cmpuint(delta(&c0, &c1, i, C_CQES_ERROR), ==, 0);
        /* Every frame waits; every message is at least one. */
        g_assert_cmpuint(delta(&c0, &c1, i, C_DELAYED), >=, DELAY_MSG / 2);
        g_assert_cmpuint(delta(&c0, &c1, i, C_DROPS) +
                         delta(&c0, &c1, i, C_DUPS) +
                         delta(&c0, &c1, i, C_REORDERS) +
                         delta(&c0, &c1, i, C_CORRUPTS), ==, 0);
    }
    run_stop(&t);
}

/* ------------------------------------------------------------------ */
/* 7. Rules in both directions                                        */
/* ------------------------------------------------------------------ */

#define RULES_MSG           300

/*
 * Rules on both NICs hit every kind of frame, on transmit and on
 * receive, with faults the transport must repair (a corrupted ICRC, not
 * a corrupted field that a good ICRC would vouch for).
 */
static const char rules_mix[] =
    "kind=ack,nak prob=0.04 drop\n"
    "kind=response prob=0.03 delay=300\n"
    "kind=request prob=0.03 reorder=3\n"
    "dir=rx kind=request prob=0.03 drop\n"
    "dir=rx kind=response prob=0.03 dup=2\n"
    "dir=rx prob=0.02 reorder=2\n"
    "prob=0.02 corrupt=icrc\n";

static void test_rules(void)
{
    Counters c0, c1;
    Run t;
    int i, k;

    run_start(&t);
    flows_init(&t, TIMEOUT, RETRY_CNT);
    for (i = 0; i < 2; i++) {
        g_autofree char *path = g_strdup_printf("/machine/peripheral/uz%d",
                                                i);

        fault_set_uint(&t, i, "fault-seed", FAULT_SEED + 0x40 + i);
        qtest_qmp_assert_success(qts(&t), "{'execute': 'qom-set', "
                                 "'arguments': {'path': %s, 'property': "
                                 "'fault-rules', 'value': %s}}", path,
                                 rules_mix);
    }
    counters_get(&t, &c0);
    run_stream(&t, RULES_MSG);
    counters_get(&t, &c1);
    run_summary(&t, "rules", &c0, &c1);
    for (i = 0; i < 2; i++) {
        g_autofree char *path = g_strdup_printf("/machine/peripheral/uz%d",
                                                i);
        QDict *rsp = qtest_qmp(qts(&t), "{'execute': 'qom-get', "
                               "'arguments': {'path': %s, 'property': "
                               "'fault-rules'}}", path);
        g_auto(GStrv) lines = g_strsplit(qdict_get_str(rsp, "return"), "\n",
                                         -1);

        g_assert_cmpuint(delta(&c0, &c1, i, C_CQES_ERROR), ==, 0);
        /* Every rule acted on both NICs. */
        for (k = 0; lines[k] && *lines[k]; k++) {
            g_test_message("uz%d: %s", i, lines[k]);
            g_assert(!strstr(lines[k], "acted 0"));
        }
        g_assert_cmpint(k, ==, 7);
        qobject_unref(rsp);
    }
    g_assert_cmpuint(delta(&c0, &c1, -1, C_ICRC), >, 0);
    run_stop(&t);
}

int main(int argc, char **argv)
{
    static const int kinds[] = { C_DROPS, C_DUPS, C_REORDERS, C_CORRUPTS };
    static const int pcts[] = { 1, 5, 20 };
    static FaultCase cases[ARRAY_SIZE(kinds) * ARRAY_SIZE(pcts)];
    const char *env = g_getenv("UZURA_FAULT_SALT");
    int i, k;

    g_test_init(&argc, &argv, NULL);
    if (env) {
        g_assert(!qemu_strtoui(env, NULL, 0, &salt));
    }
    qtest_add_func("/uzura/fault/props", test_props);
    for (i = 0; i < ARRAY_SIZE(kinds); i++) {
        for (k = 0; k < ARRAY_SIZE(pcts); k++) {
            FaultCase *fc = &cases[i * ARRAY_SIZE(pcts) + k];

            fc->kind = kinds[i];
            fc->pct = pcts[k];
        }
    }
    for (i = 0; i < ARRAY_SIZE(cases); i++) {
        FaultCase *fc = &cases[i];
        g_autofree char *path = g_strdup_printf("/uzura/fault/%s-%d",
                                                kind_prop[fc->kind] + 6,
                                                fc->pct);

        qtest_add_data_func(path, fc, test_stream);
    }
    qtest_add_data_func("/uzura/fault/mixed-5", "gbn", test_mixed);
    qtest_add_data_func("/uzura/fault/mixed-5-sr", "sr", test_mixed);
    qtest_add_func("/uzura/fault/link-flap", test_link_flap);
    qtest_add_func("/uzura/fault/retry-exhaust", test_retry_exhaust);
    qtest_add_func("/uzura/fault/seed", test_seed);
    qtest_add_func("/uzura/fault/rules", test_rules);
    qtest_add_func("/uzura/fault/delay", test_delay);
    return g_test_run();
}
