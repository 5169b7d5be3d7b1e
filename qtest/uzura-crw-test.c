/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qtest for the uzura NIC's Conditional RDMA Write (spec 8.12).  A CRW
 * names a 64-bit tag and its data but no target; the peer's STCRW names
 * the target for the tag; whichever comes second turns the CRW into an
 * RDMA WRITE with immediate (the tag's low 32 bits) to the offered
 * buffer.  Covered: both orders at sizes from 0 to 1 MiB, scatter/gather
 * and inline data, CRWs that let later WQEs pass, unsignalled CRWs, full
 * tag tables, 64-bit and per-QP matching, symmetric exchanges, the STCRW
 * frame on the wire, every error of 8.12, the flush on ERR, RESET and
 * destroy, and conditional writes over a lossy link.
 *
 * NIC 0 posts the CRWs and NIC 1 the STCRWs unless a case says otherwise.
 * Every case boots its own machine; data is checked byte for byte with
 * guard bytes around each target, every CQE field is checked, and the
 * crw_* counters (section 10) of both NICs must move by exactly what the
 * case did.  Nothing depends on timing: a case that needs the device's
 * timers steps the virtual clock.
 */
#include "uzura-verbs.h"
#include "uzura-wire.h"
#include "uzura-migrate.h"

#define MIB             (1u << 20)
#define KIB             1024u
#define MS              (1000 * 1000ll)
#define MTU             1024u       /* path MTU of UZ_RC_OPTS_DEFAULT */
#define WIN             256u        /* guard bytes checked after a target */
#define TAGS            64          /* the default max-crw-tags */
#define SMALL_TABLE     "-global uzura.max-crw-tags=4"

typedef struct Env {
    UzMachine m;
    UzNode n[2];
    int sock;                   /* the wire case's end of the hub, or -1 */
} Env;

/* One RC connection: a on NIC 0, b on NIC 1. */
typedef struct Pair {
    UzQp *a;                    /* posts the CRWs */
    UzQp *b;                    /* posts the STCRWs and is written */
    UzMr *src;                  /* NIC 0: the CRWs' data */
    UzMr *dst;                  /* NIC 1: the offered buffers */
} Pair;

typedef struct PairOpts {
    uint64_t src_len;           /* 0: 64 KiB */
    uint64_t dst_len;           /* 0: 64 KiB */
    uint8_t a_flags;            /* UZ_QPF_* of a */
    bool a_shared_cq;           /* a completes sends and receives in one CQ */
    uint32_t b_access;          /* b's remote rights; 0: all */
    const UzRcOpts *rc;         /* NULL: UZ_RC_OPTS_DEFAULT */
} PairOpts;

/* The crw_* counters of one NIC. */
typedef struct CrwCnt {
    uint64_t parked, offers, crw_first, st_first, flushed, errors;
} CrwCnt;

typedef struct Snap {
    CrwCnt c[2];
} Snap;

/* ------------------------------------------------------------------ */
/* Machine, pairs, counters                                           */
/* ------------------------------------------------------------------ */

/* Two NICs, with @wire a socket on their hub too. */
static void env_start(Env *e, const char *extra, bool wire)
{
    if (wire) {
        e->sock = uz_wire_machine_start(&e->m, 2, extra);
    } else {
        e->sock = -1;
        uz_machine_start(&e->m, 2, extra);
    }
    uz_node_start(&e->n[0], &e->m, 0);
    uz_node_start(&e->n[1], &e->m, 1);
}

static void env_stop(Env *e)
{
    if (e->sock >= 0) {
        close(e->sock);
    }
    uz_node_stop(&e->n[0]);
    uz_node_stop(&e->n[1]);
    uz_machine_stop(&e->m);
}

static QTestState *qts(Env *e)
{
    return e->m.qs->qts;
}

static void pair_make(Env *e, Pair *p, const PairOpts *o)
{
    static const PairOpts defaults = { 0 };
    UzCq *cq = NULL;

    o = o ? o : &defaults;
    if (o->a_shared_cq) {
        cq = uz_cq_create(&e->n[0], UZ_CQ_LOG_DEPTH);
    }
    p->a = uz_qp_create(&e->n[0], UZ_QPT_RC, cq, cq, NULL, o->a_flags);
    p->b = uz_qp_create(&e->n[1], UZ_QPT_RC, NULL, NULL, NULL, 0);
    p->src = uz_mr_reg(&e->n[0], o->src_len ? o->src_len : 64 * KIB,
                       UZ_ACCESS_ALL);
    p->dst = uz_mr_reg(&e->n[1], o->dst_len ? o->dst_len : 64 * KIB,
                       UZ_ACCESS_ALL);
    uz_rc_connect_access(p->a, p->b,
                         o->b_access ? o->b_access : UZ_ACCESS_ALL, o->rc);
}

static uint64_t counter(Env *e, int nic, const char *name)
{
    return uz_counter(&e->m, nic, name);
}

static void crw_cnt_read(Env *e, int nic, CrwCnt *c)
{
    c->parked = counter(e, nic, "crw_parked");
    c->offers = counter(e, nic, "crw_offers");
    c->crw_first = counter(e, nic, "crw_matched_crw_first");
    c->st_first = counter(e, nic, "crw_matched_stcrw_first");
    c->flushed = counter(e, nic, "crw_flushed");
    c->errors = counter(e, nic, "crw_errors");
}

static void snap_take(Env *e, Snap *s)
{
    crw_cnt_read(e, 0, &s->c[0]);
    crw_cnt_read(e, 1, &s->c[1]);
}

static void cnt_check(int nic, const char *name, uint64_t then, uint64_t now,
                      uint64_t delta)
{
    if (now - then != delta) {
        g_error("uz%d: counter %s moved by %" PRIu64 ", expected %" PRIu64,
                nic, name, now - then, delta);
    }
}

/* The crw_* counters of NIC @nic moved by exactly @d since @s. */
static void snap_expect(Env *e, const Snap *s, int nic, CrwCnt d)
{
    const CrwCnt *t = &s->c[nic];
    CrwCnt n;

    crw_cnt_read(e, nic, &n);
    cnt_check(nic, "crw_parked", t->parked, n.parked, d.parked);
    cnt_check(nic, "crw_offers", t->offers, n.offers, d.offers);
    cnt_check(nic, "crw_matched_crw_first", t->crw_first, n.crw_first,
              d.crw_first);
    cnt_check(nic, "crw_matched_stcrw_first", t->st_first, n.st_first,
              d.st_first);
    cnt_check(nic, "crw_flushed", t->flushed, n.flushed, d.flushed);
    cnt_check(nic, "crw_errors", t->errors, n.errors, d.errors);
}

/* NIC 0's crw_* counters moved by exactly @d since @s, NIC 1's not. */
static void snap_expect_a(Env *e, const Snap *s, CrwCnt d)
{
    snap_expect(e, s, 0, d);
    snap_expect(e, s, 1, (CrwCnt) { 0 });
}

/* qom-set of a fault-* probability (spec 7.5). */
static void fault_set(Env *e, int nic, const char *prop, double v)
{
    g_autofree char *path = g_strdup_printf("/machine/peripheral/uz%d", nic);

    qtest_qmp_assert_success(qts(e), "{'execute': 'qom-set', 'arguments': "
                             "{'path': %s, 'property': %s, 'value': %f}}",
                             path, prop, v);
}

static void fault_seed(Env *e, int nic, uint64_t seed)
{
    g_autofree char *path = g_strdup_printf("/machine/peripheral/uz%d", nic);

    qtest_qmp_assert_success(qts(e), "{'execute': 'qom-set', 'arguments': "
                             "{'path': %s, 'property': 'fault-seed', "
                             "'value': %" PRIu64 "}}", path, seed);
}

/* NIC @nic drops every frame it sends (@on) or none. */
static void drop_all(Env *e, int nic, bool on)
{
    fault_set(e, nic, "fault-drop", on ? 1 : 0);
}

/* Tags with distinct high and low halves; low halves distinct too. */
static uint64_t tag_of(uint32_t i)
{
    return ((uint64_t)(0xa5c30000u + i) << 32) |
           (uint32_t)(0x3c5a1234u ^ (i * 2654435761u));
}

/* @len bytes of pattern @seed into @data and @off of p->src: their SGE. */
static UzSge src_data(Pair *p, uint64_t off, uint8_t *data, uint32_t len,
                      uint32_t seed)
{
    uz_pattern(data, len, seed);
    uz_mr_write(p->src, off, data, len);
    return uz_mr_sge(p->src, off, len);
}

/* ------------------------------------------------------------------ */
/* Work requests and completions                                      */
/* ------------------------------------------------------------------ */

/*
 * A signalled CRW of the SGEs @s.  remote_addr, rkey, crw.length and
 * imm_data are ignored by a CRW (8.12): they hold garbage.
 */
static UzWr crw_wr(uint64_t wr_id, uint64_t tag, const UzSge *s, int ns)
{
    return (UzWr) {
        .wr_id = wr_id, .opcode = UZ_WR_CRW, .flags = UZ_WQE_F_SIGNALED,
        .sge = s, .num_sge = ns, .tag = tag,
        .remote_addr = 0xbad0000000001000ull, .rkey = 0xbadbad,
        .crw_length = 1, .imm = 0xdeadbeef,
    };
}

/* crw_wr() with the @len bytes at @data inline. */
static UzWr crw_inline_wr(uint64_t wr_id, uint64_t tag, const void *data,
                          uint32_t len)
{
    UzWr w = crw_wr(wr_id, tag, NULL, 0);

    w.flags |= UZ_WQE_F_INLINE;
    w.inline_data = data;
    w.inline_len = len;
    return w;
}

/* A signalled STCRW offering @len bytes at @off of @mr. */
static UzWr stcrw_wr(uint64_t wr_id, uint64_t tag, UzMr *mr, uint64_t off,
                     uint32_t len)
{
    return (UzWr) {
        .wr_id = wr_id, .opcode = UZ_WR_STCRW, .flags = UZ_WQE_F_SIGNALED,
        .tag = tag, .remote_addr = uz_mr_va(mr, off), .rkey = mr->key,
        .crw_length = len,
    };
}

/* A signalled RDMA WRITE of @len bytes from @s_mr to @d_mr. */
static UzWr write_wr(uint64_t wr_id, const UzSge *s, UzMr *d_mr,
                     uint64_t d_off)
{
    return (UzWr) {
        .wr_id = wr_id, .opcode = UZ_WR_RDMA_WRITE,
        .flags = UZ_WQE_F_SIGNALED, .sge = s, .num_sge = 1,
        .remote_addr = uz_mr_va(d_mr, d_off), .rkey = d_mr->key,
    };
}

/* b offers @len bytes at @off of p->dst for @tag; its STCRW completes. */
static void stcrw_done(Pair *p, uint64_t st_id, uint64_t tag, uint64_t off,
                       uint32_t len)
{
    UzWr w = stcrw_wr(st_id, tag, p->dst, off, len);

    uz_post_send(p->b, &w);
    uz_sq_done(p->b, st_id, UZ_WC_STCRW, 0);
}

/* a posts @crw, which parks: wait until crw_parked has moved. */
static void crw_park(Env *e, Pair *p, const UzWr *crw)
{
    uint64_t parked = counter(e, 0, "crw_parked");

    uz_post_send(p->a, crw);
    uz_counter_wait(&e->n[0], "crw_parked", parked + 1);
}

/*
 * a posts @crw and after it a signalled 64-byte WRITE (the next wr_id)
 * to @off of p->dst, and rings once.
 */
static void post_crw_then_write(Pair *p, const UzWr *crw, uint64_t off)
{
    UzSge sw = uz_mr_sge(p->src, 0, 64);
    UzWr w = write_wr(crw->wr_id + 1, &sw, p->dst, off);

    uz_sq_post(p->a, crw);
    uz_sq_post(p->a, &w);
    uz_sq_ring(p->a);
}

/* a's CRW @id fails with @status and @verr; the WRITE after it flushes. */
static void expect_crw_failed(Pair *p, uint64_t id, uint8_t status,
                              uint8_t verr)
{
    uz_sq_err(p->a, id, UZ_WC_CRW, status, verr);
    uz_sq_err(p->a, id + 1, UZ_WC_RDMA_WRITE, UZ_WC_STATUS_WR_FLUSH_ERR, 0);
}

/* The target's receive CQE for a conditional write of @len with @tag. */
static void expect_recv_imm(const struct uz_cqe *c, uint64_t wr_id, UzQp *qp,
                            uint32_t len, uint64_t tag)
{
    uz_expect_rq(c, wr_id, UZ_WC_RECV_RDMA_WITH_IMM, qp->qpn, len,
                 UZ_WC_F_IMM, (uint32_t)tag, 0);
}

/* Wait for the next receive CQE of @qp and check it: expect_recv_imm(). */
static void rq_done_imm(UzQp *qp, uint64_t wr_id, uint32_t len, uint64_t tag)
{
    uz_rq_done(qp, wr_id, UZ_WC_RECV_RDMA_WITH_IMM, len, UZ_WC_F_IMM,
               (uint32_t)tag);
}

/* Wait for a CQE; with @step_ns, stepping the virtual clock. */
static void cq_wait_step(UzCq *cq, struct uz_cqe *c, int64_t step_ns)
{
    if (step_ns) {
        uz_cq_wait_clock(cq, c, step_ns, 1000);
    } else {
        uz_cq_wait(cq, c);
    }
}

/*
 * Take @n CQEs from @cq whose wr_ids are the @n of @ids, in any order,
 * each exactly once; out[i] is the CQE of ids[i].
 */
static void cq_take_set(UzCq *cq, const uint64_t *ids, int n,
                        struct uz_cqe *out, int64_t step_ns)
{
    g_autofree bool *seen = g_new0(bool, n);
    struct uz_cqe c;
    int k, i;

    for (k = 0; k < n; k++) {
        cq_wait_step(cq, &c, step_ns);
        for (i = 0; i < n && ids[i] != c.wr_id; i++) {
            continue;
        }
        if (i == n) {
            g_error("uz%d: CQE for wr_id 0x%" PRIx64 " (opcode 0x%x, status "
                    "%u) not expected", cq->n->idx, c.wr_id, c.opcode,
                    c.status);
        }
        if (seen[i]) {
            g_error("uz%d: second CQE for wr_id 0x%" PRIx64, cq->n->idx,
                    c.wr_id);
        }
        seen[i] = true;
        out[i] = c;
    }
}

/* a's CRWs @ids complete with flush errors, each once, in any order. */
static void expect_crws_flushed(Pair *p, const uint64_t *ids, int n)
{
    g_autofree struct uz_cqe *c = g_new(struct uz_cqe, n);
    int i;

    cq_take_set(p->a->scq, ids, n, c, 0);
    for (i = 0; i < n; i++) {
        uz_expect_err(&c[i], ids[i], UZ_WC_CRW, UZ_WC_STATUS_WR_FLUSH_ERR, 0,
                      p->a);
    }
}

/* A send WQE posted to @qp now (in ERR) completes with a flush error. */
static void expect_post_flushed(UzQp *qp, UzMr *local, UzMr *remote,
                                uint64_t wr_id)
{
    UzSge s = uz_mr_sge(local, 0, 16);
    UzWr wr = write_wr(wr_id, &s, remote, 0);

    uz_post_send(qp, &wr);
    uz_sq_err(qp, wr_id, UZ_WC_RDMA_WRITE, UZ_WC_STATUS_WR_FLUSH_ERR, 0);
}

/*
 * Only a failed: it went to ERR by itself, a WRITE posted now with wr_id
 * @flush_id (unless 0) is flushed, no other CQE comes, b is still RTS.
 */
static void expect_a_failed(Pair *p, uint64_t flush_id)
{
    uz_qp_failed(p->a, 0);
    if (flush_id) {
        expect_post_flushed(p->a, p->src, p->dst, flush_id);
    }
    uz_cq_assert_empty(p->a->scq, 10);
    g_assert_cmpint(uz_qp_state(p->b), ==, UZ_QPS_RTS);
}

static void cmd_obj(UzNode *n, uint8_t op, uint32_t handle)
{
    struct uz_cmd_obj c = { .handle = cpu_to_le32(handle) };

    g_assert_cmpint(uz_cmd(n, op, &c, sizeof(c), NULL), ==, UZ_CMD_OK);
}

/* The guest-error log has a line with both @a and @b. */
static void expect_log_line(Env *e, const char *a, const char *b)
{
    g_autofree char *log = uz_machine_log(&e->m);
    g_auto(GStrv) lines = g_strsplit(log, "\n", -1);
    int i;

    for (i = 0; lines[i]; i++) {
        if (strstr(lines[i], a) && strstr(lines[i], b)) {
            return;
        }
    }
    g_error("no guest-error line with \"%s\" and \"%s\" in:\n%s", a, b, log);
}

/* ------------------------------------------------------------------ */
/* One conditional write                                              */
/* ------------------------------------------------------------------ */

typedef struct Xchg {
    UzWr crw;                   /* wr_id, tag, flags and data of the CRW */
    const uint8_t *data;        /* the bytes it carries */
    uint32_t len;
    uint64_t doff;              /* the offered buffer: at doff in p->dst */
    uint32_t offer_len;         /* its length, at least len */
} Xchg;

static uint32_t npkts(uint32_t len)
{
    return MAX(1, DIV_ROUND_UP(len, MTU));
}

/*
 * Run one CRW/STCRW pair on @p, the CRW first (it must park: a counter
 * moves, no CQE, nothing written) or the STCRW first (it completes once
 * NIC 0's table holds the offer), and check every CQE, the data with its
 * guard bytes, the crw_* counters of both NICs and the packets on the
 * wire: one STCRW from NIC 1, an RDMA WRITE of the CRW's data from
 * NIC 0, no SEND.
 */
static void xchg_run(Env *e, Pair *p, const Xchg *x, bool crw_first)
{
    uint64_t st_id = x->crw.wr_id ^ 0x5c00000000000000ull;
    uint64_t rv_id = x->crw.wr_id ^ 0x7e00000000000000ull;
    UzWr st = stcrw_wr(st_id, x->crw.tag, p->dst, x->doff, x->offer_len);
    uint64_t end = MIN(x->doff + x->offer_len + WIN, p->dst->len);
    uint64_t tx_write = counter(e, 0, "tx_pkts_write");
    uint64_t tx_send = counter(e, 0, "tx_pkts_send");
    uint64_t tx_crw = counter(e, 1, "tx_pkts_crw");
    uint64_t rx_crw = counter(e, 0, "rx_pkts_crw");
    Snap s;

    g_test_message("%s first: %u bytes, tag 0x%" PRIx64 ", offer of %u",
                   crw_first ? "CRW" : "STCRW", x->len, x->crw.tag,
                   x->offer_len);
    g_assert_cmpuint(x->offer_len, >=, x->len);
    g_assert_cmpuint(x->doff + x->len, <=, end);
    uz_mr_fill(p->dst, 0, UZ_GUARD, end);
    snap_take(e, &s);
    if (p->b->srq) {
        uz_srq_post(p->b->srq, rv_id, NULL, 0);
    } else {
        uz_post_recv(p->b, rv_id, NULL, 0);
    }
    if (crw_first) {
        uz_post_send(p->a, &x->crw);
        uz_counter_wait(&e->n[0], "crw_parked", s.c[0].parked + 1);
        uz_cq_assert_empty(p->a->scq, 5);
        uz_cq_assert_empty(p->b->rcq, 1);
        uz_assert_mr_fill(p->dst, x->doff, UZ_GUARD, MIN(x->len, WIN),
                          "target while the CRW is parked");
        uz_post_send(p->b, &st);
        uz_sq_done(p->b, st_id, UZ_WC_STCRW, 0);
    } else {
        uz_post_send(p->b, &st);
        uz_sq_done(p->b, st_id, UZ_WC_STCRW, 0);
        snap_expect(e, &s, 0, (CrwCnt) { .offers = 1 });
        uz_cq_assert_empty(p->b->rcq, 5);
        uz_assert_mr_fill(p->dst, x->doff, UZ_GUARD, MIN(x->len, WIN),
                          "target while the offer waits");
        uz_post_send(p->a, &x->crw);
    }
    uz_sq_done(p->a, x->crw.wr_id, UZ_WC_CRW, x->len);
    rq_done_imm(p->b, rv_id, x->len, x->crw.tag);

    uz_assert_mr_fill(p->dst, 0, UZ_GUARD, x->doff, "before the target");
    uz_assert_mr(p->dst, x->doff, x->data, x->len, "conditional write");
    uz_assert_mr_fill(p->dst, x->doff + x->len, UZ_GUARD,
                      end - x->doff - x->len, "after the written bytes");
    if (crw_first) {
        snap_expect(e, &s, 0, (CrwCnt) { .parked = 1, .crw_first = 1 });
    } else {
        snap_expect(e, &s, 0, (CrwCnt) { .offers = 1, .st_first = 1 });
    }
    snap_expect(e, &s, 1, (CrwCnt) { 0 });
    g_assert_cmpuint(counter(e, 0, "tx_pkts_write") - tx_write, ==,
                     npkts(x->len));
    g_assert_cmpuint(counter(e, 0, "tx_pkts_send") - tx_send, ==, 0);
    g_assert_cmpuint(counter(e, 1, "tx_pkts_crw") - tx_crw, ==, 1);
    g_assert_cmpuint(counter(e, 0, "rx_pkts_crw") - rx_crw, ==, 1);
    uz_cq_assert_empty(p->a->scq, 2);
    uz_cq_assert_empty(p->b->scq, 1);
    uz_cq_assert_empty(p->a->rcq, 1);
    uz_cq_assert_empty(p->b->rcq, 1);
}

/* A CRW of @len bytes at @soff of p->src, to @doff of p->dst. */
static void xchg_simple(Env *e, Pair *p, bool crw_first, uint32_t len,
                        uint64_t soff, uint64_t doff, uint32_t offer_len,
                        uint32_t id)
{
    g_autofree uint8_t *data = g_malloc(len + 1);
    UzSge s = src_data(p, soff, data, len, id);
    Xchg x = {
        .crw = crw_wr(0x0c2a000000000000ull | id, tag_of(id), &s, 1),
        .data = data, .len = len, .doff = doff, .offer_len = offer_len,
    };

    xchg_run(e, p, &x, crw_first);
}

/* A new pair on the same NICs moves conditional writes both ways. */
static void check_fresh_pair(Env *e)
{
    Pair p;

    pair_make(e, &p, NULL);
    xchg_simple(e, &p, true, 3000, 11, 4000, 3000, 0xf00);
    xchg_simple(e, &p, false, 100, 7, 9000, 200, 0xf01);
    g_assert_cmpint(uz_qp_state(p.a), ==, UZ_QPS_RTS);
    g_assert_cmpint(uz_qp_state(p.b), ==, UZ_QPS_RTS);
}

/* ------------------------------------------------------------------ */
/* 1, 2. Sizes, in both orders                                        */
/* ------------------------------------------------------------------ */

static const uint32_t sizes[] = { 0, 1, 4095, 4096, 4097, 65536, MIB };

static void sizes_case(Env *e, bool crw_first)
{
    PairOpts o = { .src_len = MIB + 8 * KIB, .dst_len = MIB + 16 * KIB };
    Pair p;
    int k;

    pair_make(e, &p, &o);
    for (k = 0; k < ARRAY_SIZE(sizes); k++) {
        /* Unaligned source and target; offers exact or larger. */
        xchg_simple(e, &p, crw_first, sizes[k], 7, 4093,
                    sizes[k] + (k % 2 ? 0 : 1000), k + (crw_first ? 0 : 32));
    }
}

static void case_crw_first(Env *e)
{
    sizes_case(e, true);
}

static void case_stcrw_first(Env *e)
{
    sizes_case(e, false);
}

/*
 * The offer's length is an upper bound: an offer of 0 takes a CRW of 0
 * bytes; an offer at the end of the MR that claims more than the MR has
 * takes a CRW that fits, because the target checks the write like any
 * WRITE (8.12), not the offer.
 */
static void case_offer_length(Env *e)
{
    Pair p;

    pair_make(e, &p, NULL);
    xchg_simple(e, &p, true, 0, 0, 100, 0, 0x50);
    xchg_simple(e, &p, false, 0, 0, 100, 0, 0x53);
    xchg_simple(e, &p, true, 100, 0, p.dst->len - 100 - WIN, MIB, 0x51);
    xchg_simple(e, &p, false, 2000, 0, p.dst->len - 2000 - WIN,
                UINT32_MAX - WIN, 0x52);
}

/* ------------------------------------------------------------------ */
/* 3. Scatter/gather and inline data                                  */
/* ------------------------------------------------------------------ */

static void case_sgl_inline(Env *e)
{
    static const uint32_t inl_lens[] = { 0, 1, 100, UZ_SQ_MAX_INLINE };
    static const uint32_t sge_lens[UZ_SQ_MAX_SGE] = {
        333, 1501, 0, 1, 999, 4096, 17, 2048, 1, 700, 64, 1200,
    };
    UzMr *src2 = uz_mr_reg(&e->n[0], 32 * KIB, UZ_ACCESS_ALL);
    uint8_t inl[UZ_SQ_MAX_INLINE];
    UzSge s[UZ_SQ_MAX_SGE];
    uint32_t total = 0;
    Pair p;
    int i, k, first;

    pair_make(e, &p, NULL);
    /* Twelve SGEs over two MRs; several cross a page boundary. */
    for (i = 0; i < UZ_SQ_MAX_SGE; i++) {
        s[i] = uz_mr_sge(i % 2 ? src2 : p.src, 2000 + i * 2437, sge_lens[i]);
        total += sge_lens[i];
    }
    for (first = 0; first < 2; first++) {
        g_autofree uint8_t *data = g_malloc(total);
        Xchg x = {
            .crw = crw_wr(0x5610 + first, tag_of(0x100 + first), s,
                          UZ_SQ_MAX_SGE),
            .data = data, .len = total, .doff = 1001,
            .offer_len = total + first,
        };

        uz_pattern(data, total, 0x100 + first);
        uz_sges_write(&e->n[0], s, UZ_SQ_MAX_SGE, data);
        xchg_run(e, &p, &x, first);
    }

    for (k = 0; k < ARRAY_SIZE(inl_lens); k++) {
        for (first = 0; first < 2; first++) {
            uint32_t id = 0x200 + k * 2 + first;
            Xchg x = {
                .crw = crw_inline_wr(0x1e1000 + id, tag_of(id), inl,
                                     inl_lens[k]),
                .data = inl, .len = inl_lens[k], .doff = 4000 + k,
                .offer_len = inl_lens[k],
            };

            uz_pattern(inl, sizeof(inl), id);
            xchg_run(e, &p, &x, first);
        }
    }
}

/* ------------------------------------------------------------------ */
/* 4. A parked CRW does not block; unsignalled CRWs                   */
/* ------------------------------------------------------------------ */

/* What case_no_block's steps post and check. */
typedef struct NoBlock {
    Pair p;
    Snap snap;
    uint8_t crw_data[3000], inl[150], send_data[500], wr_data[2000];
    uint8_t rd_data[1500];
} NoBlock;

/*
 * Two CRWs, one from an SGE, one inline; then a SEND, an RDMA WRITE and
 * an RDMA READ: posted together, rung once.
 */
static void no_block_post(NoBlock *nb)
{
    Pair *p = &nb->p;
    UzSge s_crw, s_send, s_wr, s_rd, r_send;
    UzWr wr[5];
    int i;

    s_crw = src_data(p, 0, nb->crw_data, sizeof(nb->crw_data), 1);
    uz_pattern(nb->inl, sizeof(nb->inl), 2);
    s_send = src_data(p, 4096, nb->send_data, sizeof(nb->send_data), 3);
    s_wr = src_data(p, 8192, nb->wr_data, sizeof(nb->wr_data), 4);
    uz_pattern(nb->rd_data, sizeof(nb->rd_data), 5);
    s_rd = uz_mr_sge(p->src, 16384, sizeof(nb->rd_data));
    uz_mr_fill(p->src, 16384, 0, sizeof(nb->rd_data));
    uz_mr_fill(p->dst, 0, UZ_GUARD, 64 * KIB);
    uz_mr_write(p->dst, 40000, nb->rd_data, sizeof(nb->rd_data));
    r_send = uz_mr_sge(p->dst, 30000, 1000);
    uz_post_recv(p->b, 0x7e01, &r_send, 1);

    wr[0] = crw_wr(0x10, tag_of(10), &s_crw, 1);
    wr[1] = crw_inline_wr(0x11, tag_of(11), nb->inl, sizeof(nb->inl));
    wr[2] = (UzWr) { .wr_id = 0x12, .opcode = UZ_WR_SEND,
                     .flags = UZ_WQE_F_SIGNALED, .sge = &s_send,
                     .num_sge = 1 };
    wr[3] = write_wr(0x13, &s_wr, p->dst, 20000);
    wr[4] = (UzWr) { .wr_id = 0x14, .opcode = UZ_WR_RDMA_READ,
                     .flags = UZ_WQE_F_SIGNALED, .sge = &s_rd, .num_sge = 1,
                     .remote_addr = uz_mr_va(p->dst, 40000),
                     .rkey = p->dst->key };
    for (i = 0; i < 5; i++) {
        uz_sq_post(p->a, &wr[i]);
    }
    uz_sq_ring(p->a);
}

/* The later WQEs complete, in order, before either CRW. */
static void no_block_later_done(Env *e, NoBlock *nb)
{
    Pair *p = &nb->p;
    struct uz_cqe rc;

    uz_sq_done(p->a, 0x12, UZ_WC_SEND, sizeof(nb->send_data));
    uz_sq_done(p->a, 0x13, UZ_WC_RDMA_WRITE, sizeof(nb->wr_data));
    uz_sq_done(p->a, 0x14, UZ_WC_RDMA_READ, sizeof(nb->rd_data));
    uz_cq_wait(p->b->rcq, &rc);
    uz_cqe_expect(&rc, 0x7e01, UZ_WC_RECV, UZ_WC_STATUS_SUCCESS, 0,
                  p->b->qpn);
    g_assert_cmpuint(rc.byte_len, ==, sizeof(nb->send_data));
    g_assert_cmphex(rc.wc_flags, ==, 0);
    uz_assert_mr(p->dst, 30000, nb->send_data, sizeof(nb->send_data),
                 "SEND data");
    uz_assert_mr(p->dst, 20000, nb->wr_data, sizeof(nb->wr_data),
                 "WRITE data");
    uz_assert_mr(p->src, 16384, nb->rd_data, sizeof(nb->rd_data),
                 "READ data");
    snap_expect(e, &nb->snap, 0, (CrwCnt) { .parked = 2 });
    uz_cq_assert_empty(p->a->scq, 5);
}

/*
 * The CRWs' SQ slots completed: the ring takes 64 more WQEs, which
 * overwrite them (a device still holding them would refuse the
 * doorbell, and its copy of the CRWs would be gone).
 */
static void no_block_ring_wrap(Pair *p)
{
    uint8_t small[8];
    UzSge s_small;
    int i;

    uz_pattern(small, sizeof(small), 6);
    uz_mr_write(p->src, 24576, small, sizeof(small));
    s_small = uz_mr_sge(p->src, 24576, sizeof(small));
    for (i = 0; i < 1 << UZ_SQ_LOG_DEPTH; i++) {
        UzWr w = write_wr(0x100 + i, &s_small, p->dst, 50000 + i * 8);

        w.flags = i == (1 << UZ_SQ_LOG_DEPTH) - 1 ? UZ_WQE_F_SIGNALED : 0;
        uz_sq_post(p->a, &w);
    }
    uz_sq_ring(p->a);
    uz_sq_done(p->a, 0x100 + (1 << UZ_SQ_LOG_DEPTH) - 1, UZ_WC_RDMA_WRITE,
               sizeof(small));
    for (i = 0; i < 1 << UZ_SQ_LOG_DEPTH; i++) {
        uz_assert_mr(p->dst, 50000 + i * 8, small, sizeof(small),
                     "ring wrap");
    }
    uz_cq_assert_empty(p->a->scq, 5);
}

/* The STCRWs, the inline CRW's first: writes in match order. */
static void no_block_stcrws(Env *e, NoBlock *nb)
{
    Pair *p = &nb->p;
    uint64_t ids[2] = { 0x10, 0x11 };
    struct uz_cqe c[2];
    UzWr st;

    uz_post_recv(p->b, 0x7e02, NULL, 0);
    uz_post_recv(p->b, 0x7e03, NULL, 0);
    st = stcrw_wr(0x5c11, tag_of(11), p->dst, 1000, sizeof(nb->inl));
    uz_sq_post(p->b, &st);
    st = stcrw_wr(0x5c10, tag_of(10), p->dst, 5000, sizeof(nb->crw_data));
    uz_sq_post(p->b, &st);
    uz_sq_ring(p->b);
    uz_sq_done(p->b, 0x5c11, UZ_WC_STCRW, 0);
    uz_sq_done(p->b, 0x5c10, UZ_WC_STCRW, 0);
    rq_done_imm(p->b, 0x7e02, sizeof(nb->inl), tag_of(11));
    rq_done_imm(p->b, 0x7e03, sizeof(nb->crw_data), tag_of(10));
    cq_take_set(p->a->scq, ids, 2, c, 0);
    uz_expect_sq(&c[0], 0x10, UZ_WC_CRW, p->a, sizeof(nb->crw_data));
    uz_expect_sq(&c[1], 0x11, UZ_WC_CRW, p->a, sizeof(nb->inl));
    uz_assert_mr_fill(p->dst, 0, UZ_GUARD, 1000, "before the inline target");
    uz_assert_mr(p->dst, 1000, nb->inl, sizeof(nb->inl), "inline CRW");
    uz_assert_mr_fill(p->dst, 1150, UZ_GUARD, 5000 - 1150,
                      "between the targets");
    uz_assert_mr(p->dst, 5000, nb->crw_data, sizeof(nb->crw_data),
                 "SGE CRW");
    uz_assert_mr_fill(p->dst, 8000, UZ_GUARD, 20000 - 8000,
                      "after the targets");
    snap_expect_a(e, &nb->snap, (CrwCnt) { .parked = 2, .crw_first = 2 });
    uz_cq_assert_empty(p->a->scq, 5);
    uz_cq_assert_empty(p->b->rcq, 1);
}

/*
 * Two parked CRWs (one from an SGE, one inline) let a SEND, an RDMA
 * WRITE and an RDMA READ posted after them complete first.  Their SQ
 * slots are free: 64 more WQEs wrap the ring over them.  Then the STCRWs
 * come, in the other order, and the writes happen oldest match first.
 * Each step goes on from where the last left the pair.
 */
static void case_no_block(Env *e)
{
    NoBlock nb;

    pair_make(e, &nb.p, NULL);
    snap_take(e, &nb.snap);
    no_block_post(&nb);
    no_block_later_done(e, &nb);
    no_block_ring_wrap(&nb.p);
    no_block_stcrws(e, &nb);
}

/*
 * case_ready_first's receive WQEs, posted at last: when the RNR wait
 * ends they are taken by the first CRW's write (@len1 bytes), the
 * second's (@len2), then the SEND (@msg_len).
 */
static void ready_first_receives(Pair *p, uint32_t len1, uint32_t len2,
                                 uint32_t msg_len)
{
    UzSge r = uz_mr_sge(p->dst, 8 * KIB, 1000);
    struct uz_cqe c;

    uz_post_recv(p->b, 0x7ef0, &r, 1);
    uz_post_recv(p->b, 0x7ef1, &r, 1);
    uz_post_recv(p->b, 0x7ef2, &r, 1);
    uz_cq_wait_clock(p->b->rcq, &c, MS, 100);
    expect_recv_imm(&c, 0x7ef0, p->b, len1, tag_of(0x5f0));
    rq_done_imm(p->b, 0x7ef1, len2, tag_of(0x5f1));
    uz_cq_wait(p->b->rcq, &c);
    uz_cqe_expect(&c, 0x7ef2, UZ_WC_RECV, UZ_WC_STATUS_SUCCESS, 0,
                  p->b->qpn);
    g_assert_cmpuint(c.byte_len, ==, msg_len);
}

/*
 * Matched writes go out before the next SQ WQE.  The requester is held
 * by RNR NAKs for the first CRW's write (b has no receive WQE, the clock
 * does not move) while a second CRW is matched and a SEND is posted;
 * when the RNR wait ends, the target's receive WQEs are taken by the
 * first write again, the second write, then the SEND.
 */
static void case_ready_first(Env *e)
{
    uint8_t d1[300], d2[200], msg[100];
    UzSge s1, s2, sm;
    uint64_t rnr;
    UzWr w;
    Snap snap;
    Pair p;

    pair_make(e, &p, NULL);
    snap_take(e, &snap);
    s1 = src_data(&p, 0, d1, sizeof(d1), 0x5f0);
    s2 = src_data(&p, KIB, d2, sizeof(d2), 0x5f1);
    sm = src_data(&p, 2 * KIB, msg, sizeof(msg), 0x5f2);
    uz_mr_fill(p.dst, 0, UZ_GUARD, 16 * KIB);
    w = crw_wr(0x5f0, tag_of(0x5f0), &s1, 1);
    uz_sq_post(p.a, &w);
    w = crw_wr(0x5f1, tag_of(0x5f1), &s2, 1);
    uz_sq_post(p.a, &w);
    uz_sq_ring(p.a);
    uz_counter_wait(&e->n[0], "crw_parked", snap.c[0].parked + 2);
    stcrw_done(&p, 0x5cf0, tag_of(0x5f0), 0, sizeof(d1));
    rnr = uz_counter_wait(&e->n[0], "rnr_naks_rcvd", 1);
    stcrw_done(&p, 0x5cf1, tag_of(0x5f1), 4 * KIB, sizeof(d2));
    w = (UzWr) { .wr_id = 0x5f2, .opcode = UZ_WR_SEND,
                 .flags = UZ_WQE_F_SIGNALED, .sge = &sm, .num_sge = 1 };
    uz_post_send(p.a, &w);
    uz_cq_assert_empty(p.a->scq, 5);
    g_assert_cmpuint(counter(e, 0, "rnr_naks_rcvd"), ==, rnr);

    ready_first_receives(&p, sizeof(d1), sizeof(d2), sizeof(msg));
    uz_sq_done(p.a, 0x5f0, UZ_WC_CRW, sizeof(d1));
    uz_sq_done(p.a, 0x5f1, UZ_WC_CRW, sizeof(d2));
    uz_sq_done(p.a, 0x5f2, UZ_WC_SEND, sizeof(msg));
    uz_assert_mr(p.dst, 0, d1, sizeof(d1), "the first write");
    uz_assert_mr(p.dst, 4 * KIB, d2, sizeof(d2), "the second write");
    uz_assert_mr(p.dst, 8 * KIB, msg, sizeof(msg), "the SEND");
    uz_assert_mr_fill(p.dst, sizeof(d1), UZ_GUARD, 4 * KIB - sizeof(d1),
                      "after the first write");
    uz_assert_mr_fill(p.dst, 4 * KIB + sizeof(d2), UZ_GUARD,
                      4 * KIB - sizeof(d2), "after the second write");
    snap_expect_a(e, &snap, (CrwCnt) { .parked = 2, .crw_first = 2 });
}

/*
 * An unsignalled CRW writes no CQE when it succeeds, in either order; an
 * unsignalled STCRW neither; a QP with UZ_QPF_SIG_ALL signals every CRW.
 */
static void case_unsignaled(Env *e)
{
    uint8_t data[700];
    UzSge s;
    PairOpts sig_all = { .a_flags = UZ_QPF_SIG_ALL };
    UzWr crw, st, wr;
    Snap snap;
    Pair p, q;
    int first;

    pair_make(e, &p, NULL);
    for (first = 0; first < 2; first++) {
        uint64_t tag = tag_of(0x300 + first);

        s = src_data(&p, 100, data, sizeof(data), 0x300 + first);
        uz_mr_fill(p.dst, 0, UZ_GUARD, 8 * KIB);
        snap_take(e, &snap);
        crw = crw_wr(0x20 + first, tag, &s, 1);
        crw.flags = 0;
        st = stcrw_wr(0x5c20 + first, tag, p.dst, 2000, sizeof(data));
        st.flags = 0;
        uz_post_recv(p.b, 0x7e20 + first, NULL, 0);
        if (first) {
            crw_park(e, &p, &crw);
            uz_post_send(p.b, &st);
        } else {
            uz_post_send(p.b, &st);
            uz_counter_wait(&e->n[0], "crw_offers", snap.c[0].offers + 1);
            uz_post_send(p.a, &crw);
        }
        rq_done_imm(p.b, 0x7e20 + first, sizeof(data), tag);
        uz_assert_mr_fill(p.dst, 0, UZ_GUARD, 2000, "before the target");
        uz_assert_mr(p.dst, 2000, data, sizeof(data), "unsignalled CRW");
        uz_assert_mr_fill(p.dst, 2700, UZ_GUARD, 8 * KIB - 2700, "after it");

        /*
         * A signalled WRITE from each side: its CQE is the first, so the
         * unsignalled CRW and STCRW (done before it) wrote none.
         */
        wr = write_wr(0x30 + first, &s, p.dst, 4 * KIB);
        uz_post_send(p.a, &wr);
        uz_sq_done(p.a, 0x30 + first, UZ_WC_RDMA_WRITE, sizeof(data));
        {
            UzSge sb = uz_mr_sge(p.dst, 0, 16);
            UzWr wb = write_wr(0x40 + first, &sb, p.src, 8 * KIB);

            uz_post_send(p.b, &wb);
            uz_sq_done(p.b, 0x40 + first, UZ_WC_RDMA_WRITE, 16);
        }
        if (first) {
            snap_expect(e, &snap, 0, (CrwCnt) { .parked = 1,
                                                .crw_first = 1 });
        } else {
            snap_expect(e, &snap, 0, (CrwCnt) { .offers = 1,
                                                .st_first = 1 });
        }
        uz_cq_assert_empty(p.a->scq, 5);
        uz_cq_assert_empty(p.b->scq, 1);
    }

    /* UZ_QPF_SIG_ALL: an unsignalled CRW completes with a CQE. */
    pair_make(e, &q, &sig_all);
    for (first = 0; first < 2; first++) {
        UzSge sq = uz_mr_sge(q.src, 0, sizeof(data));
        Xchg x = {
            .crw = crw_wr(0x50 + first, tag_of(0x310 + first), &sq, 1),
            .data = data, .len = sizeof(data), .doff = 64,
            .offer_len = sizeof(data),
        };

        x.crw.flags = 0;
        uz_pattern(data, sizeof(data), 0x310 + first);
        uz_mr_write(q.src, 0, data, sizeof(data));
        xchg_run(e, &q, &x, first);
    }
}

/* ------------------------------------------------------------------ */
/* 5. A full table of tags                                            */
/* ------------------------------------------------------------------ */

#define MT_SLOT         (8 * KIB)

static uint32_t mt_len(int i, int round)
{
    return 1 + (i * 397 + round * 1009) % 5000;
}

static uint64_t mt_doff(int i, int round)
{
    return (uint64_t)i * MT_SLOT + 17 + round * 100;
}

/*
 * Check round @round of the many-tags case: 64 CRW CQEs in any order,
 * @nst STCRW CQEs in SQ order, 64 receive CQEs in RQ order whose
 * immediates name every tag once, the data of each at its target.
 * @order, when given, is the order the writes must arrive in.
 */
static void mt_check(Env *e, Pair *p, int round, uint8_t **data,
                     const int *st_order, int nst, const int *order)
{
    uint64_t ids[TAGS];
    struct uz_cqe c[TAGS];
    bool seen[TAGS] = { false };
    int i, k;

    for (i = 0; i < TAGS; i++) {
        ids[i] = 0xc000 + round * 0x100 + i;
    }
    for (k = 0; k < nst; k++) {
        uz_sq_done(p->b, 0x5c000 + round * 0x100 + st_order[k], UZ_WC_STCRW,
                   0);
    }
    for (k = 0; k < TAGS; k++) {
        struct uz_cqe r;

        uz_cq_wait(p->b->rcq, &r);
        for (i = 0; i < TAGS && (uint32_t)tag_of(i) != r.imm_data; i++) {
            continue;
        }
        g_assert_cmpint(i, <, TAGS);
        g_assert(!seen[i]);
        seen[i] = true;
        if (order) {
            g_assert_cmpint(i, ==, order[k]);
        }
        expect_recv_imm(&r, 0x7e000 + round * 0x100 + k, p->b,
                        mt_len(i, round), tag_of(i));
    }
    cq_take_set(p->a->scq, ids, TAGS, c, 0);
    for (i = 0; i < TAGS; i++) {
        uz_expect_sq(&c[i], ids[i], UZ_WC_CRW, p->a, mt_len(i, round));
    }
    for (i = 0; i < TAGS; i++) {
        uint64_t off = mt_doff(i, round);

        uz_assert_mr_fill(p->dst, i * MT_SLOT, UZ_GUARD, off - i * MT_SLOT,
                          "before a target");
        uz_assert_mr(p->dst, off, data[i], mt_len(i, round), "tag's data");
        uz_assert_mr_fill(p->dst, off + mt_len(i, round), UZ_GUARD,
                          (i + 1) * MT_SLOT - off - mt_len(i, round),
                          "after a target");
    }
    uz_cq_assert_empty(p->a->scq, 5);
    uz_cq_assert_empty(p->b->scq, 1);
    uz_cq_assert_empty(p->b->rcq, 1);
}

static void mt_post_crw(Pair *p, int round, int i, uint8_t *data)
{
    UzSge s = uz_mr_sge(p->src, i * MT_SLOT + 3, mt_len(i, round));
    UzWr w = crw_wr(0xc000 + round * 0x100 + i, tag_of(i), &s, 1);

    uz_pattern(data, mt_len(i, round), round * 100 + i);
    uz_mr_write(p->src, i * MT_SLOT + 3, data, mt_len(i, round));
    uz_sq_post(p->a, &w);
}

static void mt_post_stcrw(Pair *p, int round, int i)
{
    UzWr w = stcrw_wr(0x5c000 + round * 0x100 + i, tag_of(i), p->dst,
                      mt_doff(i, round), mt_len(i, round) + i % 3);

    uz_sq_post(p->b, &w);
}

/*
 * Round 0: 64 CRWs fill the table, then the STCRWs come in a shuffled
 * order; the writes happen in that order (oldest match first).  Round 1,
 * with the same tags again: 32 CRWs parked and 32 offers fill the table,
 * then the other halves come, shuffled, on both sides at once.
 */
static void case_many_tags(Env *e)
{
    PairOpts o = { .src_len = TAGS * MT_SLOT, .dst_len = TAGS * MT_SLOT };
    uint8_t *data[TAGS];
    int perm[TAGS], st1[TAGS];
    Snap snap;
    Pair p;
    int i, k;

    pair_make(e, &p, &o);
    for (i = 0; i < TAGS; i++) {
        data[i] = g_malloc(5000);
        perm[i] = (i * 37 + 11) % TAGS;        /* 37 is prime to 64 */
    }

    /* Round 0 */
    snap_take(e, &snap);
    uz_mr_fill(p.dst, 0, UZ_GUARD, TAGS * MT_SLOT);
    for (i = 0; i < TAGS; i++) {
        mt_post_crw(&p, 0, i, data[i]);
    }
    uz_sq_ring(p.a);
    uz_counter_wait(&e->n[0], "crw_parked", snap.c[0].parked + TAGS);
    uz_cq_assert_empty(p.a->scq, 5);
    for (k = 0; k < TAGS; k++) {
        uz_post_recv(p.b, 0x7e000 + k, NULL, 0);
    }
    for (k = 0; k < TAGS; k++) {
        mt_post_stcrw(&p, 0, perm[k]);
    }
    uz_sq_ring(p.b);
    mt_check(e, &p, 0, data, perm, TAGS, perm);
    snap_expect_a(e, &snap, (CrwCnt) { .parked = TAGS,
                                       .crw_first = TAGS });

    /* Round 1 */
    snap_take(e, &snap);
    uz_mr_fill(p.dst, 0, UZ_GUARD, TAGS * MT_SLOT);
    for (i = 0; i < TAGS / 2; i++) {
        mt_post_crw(&p, 1, i, data[i]);
    }
    uz_sq_ring(p.a);
    for (i = TAGS / 2; i < TAGS; i++) {
        mt_post_stcrw(&p, 1, i);
        st1[i - TAGS / 2] = i;
    }
    uz_sq_ring(p.b);
    for (i = TAGS / 2; i < TAGS; i++) {
        uz_sq_done(p.b, 0x5c000 + 0x100 + i, UZ_WC_STCRW, 0);
    }
    snap_expect(e, &snap, 0, (CrwCnt) { .parked = TAGS / 2,
                                        .offers = TAGS / 2 });
    for (k = 0; k < TAGS; k++) {
        uz_post_recv(p.b, 0x7e100 + k, NULL, 0);
    }
    k = TAGS / 2;
    for (i = 0; i < TAGS; i++) {
        int t = perm[i];

        if (t < TAGS / 2) {
            mt_post_stcrw(&p, 1, t);
            st1[k++] = t;
        } else {
            mt_post_crw(&p, 1, t, data[t]);
        }
    }
    uz_sq_ring(p.b);
    uz_sq_ring(p.a);
    mt_check(e, &p, 1, data, st1 + TAGS / 2, TAGS / 2, NULL);
    snap_expect_a(e, &snap, (CrwCnt) {
        .parked = TAGS / 2, .offers = TAGS / 2,
        .crw_first = TAGS / 2, .st_first = TAGS / 2,
    });
    for (i = 0; i < TAGS; i++) {
        g_free(data[i]);
    }
}

/* ------------------------------------------------------------------ */
/* Matching: 64-bit tags, per QP                                      */
/* ------------------------------------------------------------------ */

/*
 * Tags that share a half are different tags; tag 0 and all-ones are
 * tags like any other; a CRW matches only its own QP's peer's STCRW.
 */
static void case_tag_match(Env *e)
{
    static const uint64_t tags[5] = {
        0x1111111122222222ull,  /* X1 */
        0x3333333322222222ull,  /* same low half as X1 */
        0x1111111144444444ull,  /* same high half as X1 */
        0,
        ~0ull,
    };
    static const int st_order[5] = { 1, 0, 3, 4, 2 };
    uint8_t data[5][600], other[300];
    UzSge s[5], s2;
    UzWr w;
    Snap snap;
    Pair p, q;
    int i, k;

    pair_make(e, &p, NULL);
    pair_make(e, &q, NULL);
    uz_mr_fill(p.dst, 0, UZ_GUARD, 64 * KIB);
    uz_mr_fill(q.dst, 0, UZ_GUARD, 64 * KIB);
    snap_take(e, &snap);

    /* Five CRWs on p, all parked: no duplicate among them. */
    for (i = 0; i < 5; i++) {
        uz_pattern(data[i], sizeof(data[i]), 0x400 + i);
        uz_mr_write(p.src, i * KIB, data[i], sizeof(data[i]));
        s[i] = uz_mr_sge(p.src, i * KIB, sizeof(data[i]) - i);
        w = crw_wr(0x60 + i, tags[i], &s[i], 1);
        uz_sq_post(p.a, &w);
        uz_post_recv(p.b, 0x7e60 + i, NULL, 0);
    }
    uz_sq_ring(p.a);
    uz_counter_wait(&e->n[0], "crw_parked", snap.c[0].parked + 5);

    /* q's peer offers the tag of p's second CRW: an offer on q only. */
    stcrw_done(&q, 0x5c70, tags[1], 0, 4 * KIB);
    snap_expect(e, &snap, 0, (CrwCnt) { .parked = 5, .offers = 1 });
    uz_cq_assert_empty(p.a->scq, 5);
    uz_cq_assert_empty(p.b->rcq, 1);

    /* p's peer offers each tag: each CRW's data to its own target. */
    for (k = 0; k < 5; k++) {
        i = st_order[k];
        stcrw_done(&p, 0x5c60 + i, tags[i], 4 * KIB * (i + 1), 600);
        uz_sq_done(p.a, 0x60 + i, UZ_WC_CRW, sizeof(data[i]) - i);
        rq_done_imm(p.b, 0x7e60 + k, sizeof(data[i]) - i, tags[i]);
        uz_assert_mr(p.dst, 4 * KIB * (i + 1), data[i], sizeof(data[i]) - i,
                     "data of the matching tag");
        uz_cq_assert_empty(p.a->scq, 1);
    }
    for (i = 0; i < 5; i++) {
        uint32_t len = sizeof(data[i]) - i;

        uz_assert_mr_fill(p.dst, 4 * KIB * (i + 1) + len, UZ_GUARD,
                          4 * KIB - len, "after a target");
    }
    uz_assert_mr_fill(p.dst, 0, UZ_GUARD, 4 * KIB, "no target");

    /* q's CRW with that tag takes q's offer, not p's. */
    uz_pattern(other, sizeof(other), 0x410);
    uz_mr_write(q.src, 0, other, sizeof(other));
    s2 = uz_mr_sge(q.src, 0, sizeof(other));
    w = crw_wr(0x71, tags[1], &s2, 1);
    uz_post_recv(q.b, 0x7e71, NULL, 0);
    uz_post_send(q.a, &w);
    uz_sq_done(q.a, 0x71, UZ_WC_CRW, sizeof(other));
    rq_done_imm(q.b, 0x7e71, sizeof(other), tags[1]);
    uz_assert_mr(q.dst, 0, other, sizeof(other), "q's write");
    uz_assert_mr_fill(q.dst, sizeof(other), UZ_GUARD, 64 * KIB - sizeof(other),
                      "after q's write");
    snap_expect_a(e, &snap, (CrwCnt) { .parked = 5, .offers = 1,
                                       .crw_first = 5, .st_first = 1 });
    uz_cq_assert_empty(q.a->scq, 1);
    uz_cq_assert_empty(q.b->rcq, 1);
}

/* ------------------------------------------------------------------ */
/* 6. Symmetric exchange on one connection                            */
/* ------------------------------------------------------------------ */

/*
 * Each side posts a CRW, then an STCRW for the other's tag, on the same
 * connection: both writes happen.  Rounds alternate which side rings
 * first, sizes go up to 64 KiB, and every other round both sides use
 * the same tag: each side's table holds its own CRW and the peer's offer.
 */
static void case_symmetric(Env *e)
{
    static const uint32_t lens[] = { 1, 1000, 1025, 4096, 9999, 65536,
                                     0, 30000 };
    PairOpts o = { .src_len = 72 * KIB, .dst_len = 72 * KIB };
    g_autofree uint8_t *da = g_malloc(64 * KIB);
    g_autofree uint8_t *db = g_malloc(64 * KIB);
    UzMr *adst, *bsrc;
    Snap snap;
    Pair p;
    int r, side;

    pair_make(e, &p, &o);
    adst = uz_mr_reg(&e->n[0], 72 * KIB, UZ_ACCESS_ALL);
    bsrc = uz_mr_reg(&e->n[1], 72 * KIB, UZ_ACCESS_ALL);
    snap_take(e, &snap);
    for (r = 0; r < ARRAY_SIZE(lens); r++) {
        uint32_t la = lens[r], lb = lens[(r + 3) % ARRAY_SIZE(lens)];
        /* Odd rounds: the same tag both ways, in two tables. */
        uint64_t ta = tag_of(0x500 + r);
        uint64_t tb = r % 2 ? ta : tag_of(0x580 + r);
        UzSge sa = uz_mr_sge(p.src, 5, la), sb = uz_mr_sge(bsrc, 9, lb);
        UzWr a_crw = crw_wr(0xa0 + r, ta, &sa, 1);
        UzWr a_st = stcrw_wr(0xa5c0 + r, tb, adst, 100, lb);
        UzWr b_crw = crw_wr(0xb0 + r, tb, &sb, 1);
        UzWr b_st = stcrw_wr(0xb5c0 + r, ta, p.dst, 200, la);
        uint64_t ida[2] = { 0xa0 + r, 0xa5c0 + r };
        uint64_t idb[2] = { 0xb0 + r, 0xb5c0 + r };
        struct uz_cqe c[2];

        g_test_message("round %d: %u bytes one way, %u the other", r, la,
                       lb);
        uz_pattern(da, la, 0x500 + r);
        uz_pattern(db, lb, 0x580 + r);
        uz_mr_write(p.src, 5, da, la);
        uz_mr_write(bsrc, 9, db, lb);
        uz_mr_fill(p.dst, 0, UZ_GUARD, 200 + la + WIN);
        uz_mr_fill(adst, 0, UZ_GUARD, 100 + lb + WIN);
        uz_post_recv(p.a, 0x7ea0 + r, NULL, 0);
        uz_post_recv(p.b, 0x7eb0 + r, NULL, 0);
        uz_sq_post(p.a, &a_crw);
        uz_sq_post(p.a, &a_st);
        uz_sq_post(p.b, &b_crw);
        uz_sq_post(p.b, &b_st);
        for (side = 0; side < 2; side++) {
            uz_sq_ring((side ^ r) & 1 ? p.b : p.a);
        }

        /* The CRW and STCRW of a side complete in either order. */
        cq_take_set(p.a->scq, ida, 2, c, 0);
        uz_expect_sq(&c[0], ida[0], UZ_WC_CRW, p.a, la);
        uz_expect_sq(&c[1], ida[1], UZ_WC_STCRW, p.a, 0);
        cq_take_set(p.b->scq, idb, 2, c, 0);
        uz_expect_sq(&c[0], idb[0], UZ_WC_CRW, p.b, lb);
        uz_expect_sq(&c[1], idb[1], UZ_WC_STCRW, p.b, 0);
        rq_done_imm(p.a, 0x7ea0 + r, lb, tb);
        rq_done_imm(p.b, 0x7eb0 + r, la, ta);
        uz_assert_mr_fill(p.dst, 0, UZ_GUARD, 200, "before b's target");
        uz_assert_mr(p.dst, 200, da, la, "a's CRW at b");
        uz_assert_mr_fill(p.dst, 200 + la, UZ_GUARD, WIN, "after b's target");
        uz_assert_mr_fill(adst, 0, UZ_GUARD, 100, "before a's target");
        uz_assert_mr(adst, 100, db, lb, "b's CRW at a");
        uz_assert_mr_fill(adst, 100 + lb, UZ_GUARD, WIN, "after a's target");
    }
    /* Each side parked or was offered once a round, and matched once. */
    for (side = 0; side < 2; side++) {
        CrwCnt n;

        crw_cnt_read(e, side, &n);
        g_assert_cmpuint(n.parked + n.offers - snap.c[side].parked -
                         snap.c[side].offers, ==, ARRAY_SIZE(lens));
        g_assert_cmpuint(n.crw_first + n.st_first - snap.c[side].crw_first -
                         snap.c[side].st_first, ==, ARRAY_SIZE(lens));
        g_assert_cmpuint(n.parked - snap.c[side].parked, ==,
                         n.crw_first - snap.c[side].crw_first);
        g_assert_cmpuint(n.flushed, ==, snap.c[side].flushed);
        g_assert_cmpuint(n.errors, ==, snap.c[side].errors);
    }
    uz_cq_assert_empty(p.a->scq, 2);
    uz_cq_assert_empty(p.b->scq, 1);
    uz_cq_assert_empty(p.a->rcq, 1);
    uz_cq_assert_empty(p.b->rcq, 1);
}

/* ------------------------------------------------------------------ */
/* The STCRW on the wire                                              */
/* ------------------------------------------------------------------ */

/* Every RoCE frame the hub sent us so far, in order. */
static int wire_collect(Env *e, UzFrame *frames, int max)
{
    int n = 0;

    while (n < max && uz_wire_recv(e->sock, &e->n[0].d, &frames[n])) {
        if (uz_frame_is_roce(&frames[n])) {
            n++;
        }
    }
    g_assert_cmpint(n, <, max);
    return n;
}

/* The @nth frame (from 0) with BTH opcode @op. */
static const UzFrame *wire_find(const UzFrame *frames, int n, uint8_t op,
                                int nth)
{
    int i;

    for (i = 0; i < n; i++) {
        if (frames[i].data[UZ_OFF_BTH] == op && !nth--) {
            return &frames[i];
        }
    }
    g_error("no frame with opcode 0x%02x on the link", op);
}

static uint32_t bth_psn(const UzFrame *f)
{
    return ldl_be_p(f->data + UZ_OFF_BTH + 8) & 0xffffff;
}

/* BTH fields of a request to @dst, and the frame's ICRC. */
static void expect_bth(const UzFrame *f, UzQp *dst, uint32_t psn,
                       bool ack_req, uint32_t pad)
{
    g_assert_cmphex(f->data[UZ_OFF_BTH + 1], ==, pad << 4);
    g_assert_cmphex(lduw_be_p(f->data + UZ_OFF_BTH + 2), ==, 0xffff);
    g_assert_cmpint(ldl_be_p(f->data + UZ_OFF_BTH + 4), ==, dst->qpn);
    g_assert_cmphex(f->data[UZ_OFF_BTH + 8] & 0x80, ==, ack_req ? 0x80 : 0);
    g_assert_cmphex(bth_psn(f), ==, psn);
    g_assert_cmphex((uint32_t)ldl_le_p(f->data + f->len - 4), ==,
                    uz_icrc(f->data, f->len));
}

/*
 * The STCRW is one packet, opcode UZ_BTH_OP_RC_STCRW, with a big-endian
 * CRWETH and no payload; it consumes one PSN and no receive WQE, and
 * needs none.  A parked CRW sends nothing; the match sends an RDMA WRITE
 * with immediate (the tag's low 32 bits) to the offered buffer.
 */
static void case_wire(Env *e)
{
    const uint32_t len = 2500;          /* First, Middle, Last with imm */
    const uint64_t tag = 0x0123456789abcdefull;
    static const UzRcOpts rc = UZ_RC_OPTS_DEFAULT;
    g_autofree UzFrame *frames = g_new(UzFrame, 32);
    const UzFrame *f;
    uint8_t data[2500], msg[10];
    UzSge s, r, sm;
    UzWr w;
    struct uz_cqe c;
    UzFrame one;
    Pair p;
    int n;

    pair_make(e, &p, NULL);
    uz_wire_drain(e->sock, &e->n[0].d);
    s = src_data(&p, 0, data, len, 0x600);
    w = crw_wr(0x90, tag, &s, 1);
    crw_park(e, &p, &w);
    /* Parked: nothing on the link. */
    g_assert(!uz_wire_recv(e->sock, &e->n[0].d, &one));

    r = uz_mr_sge(p.src, 16 * KIB, 64);
    uz_post_recv(p.a, 0x7e90, &r, 1);
    uz_post_recv(p.b, 0x7e91, NULL, 0);
    stcrw_done(&p, 0x5c90, tag, 1234, len + 66);
    uz_sq_done(p.a, 0x90, UZ_WC_CRW, len);
    rq_done_imm(p.b, 0x7e91, len, tag);
    /* The STCRW took no receive WQE of a. */
    uz_cq_assert_empty(p.a->rcq, 5);
    g_assert_cmpuint(counter(e, 0, "rnr_naks_sent"), ==, 0);

    /* The next message of b has the next PSN and takes a's receive. */
    uz_pattern(msg, sizeof(msg), 0x601);
    uz_mr_write(p.dst, 32 * KIB, msg, sizeof(msg));
    sm = uz_mr_sge(p.dst, 32 * KIB, sizeof(msg));
    w = (UzWr) { .wr_id = 0x91, .opcode = UZ_WR_SEND,
                 .flags = UZ_WQE_F_SIGNALED, .sge = &sm, .num_sge = 1 };
    uz_post_send(p.b, &w);
    uz_sq_done(p.b, 0x91, UZ_WC_SEND, sizeof(msg));
    uz_cq_wait(p.a->rcq, &c);
    uz_cqe_expect(&c, 0x7e90, UZ_WC_RECV, UZ_WC_STATUS_SUCCESS, 0, p.a->qpn);
    g_assert_cmpuint(c.byte_len, ==, sizeof(msg));

    n = wire_collect(e, frames, 32);

    /* The STCRW: BTH, CRWETH, no payload, ICRC. */
    f = wire_find(frames, n, UZ_BTH_OP_RC_STCRW, 0);
    g_assert_cmpint(f->len, ==, UZ_OFF_BTH + 12 + 24 + 4);
    expect_bth(f, p.a, rc.psn[1], true, 0);
    g_assert_cmphex(ldq_be_p(f->data + UZ_OFF_BTH + 12), ==, tag);
    g_assert_cmphex(ldq_be_p(f->data + UZ_OFF_BTH + 20), ==,
                    uz_mr_va(p.dst, 1234));
    g_assert_cmphex((uint32_t)ldl_be_p(f->data + UZ_OFF_BTH + 28), ==,
                    p.dst->key);
    g_assert_cmpuint(ldl_be_p(f->data + UZ_OFF_BTH + 32), ==, len + 66);
    g_assert_cmpuint(counter(e, 1, "tx_pkts_crw"), ==, 1);
    g_assert_cmpuint(counter(e, 0, "rx_pkts_crw"), ==, 1);

    /* The write: First with the RETH, Middle, Last with immediate. */
    f = wire_find(frames, n, UZ_BTH_OP_WRITE_FIRST, 0);
    g_assert_cmpint(f->len, ==, UZ_OFF_BTH + 12 + 16 + MTU + 4);
    expect_bth(f, p.b, rc.psn[0], false, 0);
    g_assert_cmphex(ldq_be_p(f->data + UZ_OFF_BTH + 12), ==,
                    uz_mr_va(p.dst, 1234));
    g_assert_cmphex((uint32_t)ldl_be_p(f->data + UZ_OFF_BTH + 20), ==,
                    p.dst->key);
    g_assert_cmpuint(ldl_be_p(f->data + UZ_OFF_BTH + 24), ==, len);
    uz_assert_bytes(f->data + UZ_OFF_BTH + 28, data, MTU, "First payload");
    f = wire_find(frames, n, UZ_BTH_OP_WRITE_MIDDLE, 0);
    g_assert_cmpint(f->len, ==, UZ_OFF_BTH + 12 + MTU + 4);
    expect_bth(f, p.b, (rc.psn[0] + 1) & 0xffffff, false, 0);
    uz_assert_bytes(f->data + UZ_OFF_BTH + 12, data + MTU, MTU,
                    "Middle payload");
    f = wire_find(frames, n, UZ_BTH_OP_WRITE_LAST_IMM, 0);
    g_assert_cmpint(f->len, ==, UZ_OFF_BTH + 12 + 4 + len - 2 * MTU + 4);
    expect_bth(f, p.b, (rc.psn[0] + 2) & 0xffffff, true, 0);
    g_assert_cmphex((uint32_t)ldl_be_p(f->data + UZ_OFF_BTH + 12), ==,
                    (uint32_t)tag);
    uz_assert_bytes(f->data + UZ_OFF_BTH + 16, data + 2 * MTU, len - 2 * MTU,
                    "Last payload");

    /* b's SEND: the PSN after the STCRW's. */
    f = wire_find(frames, n, UZ_BTH_OP_SEND_ONLY, 0);
    expect_bth(f, p.a, rc.psn[1] + 1, true, 2);
}

/* ------------------------------------------------------------------ */
/* Waiting, SRQ targets, retransmission                               */
/* ------------------------------------------------------------------ */

/*
 * A parked CRW and a parked offer wait without a time limit: a minute of
 * virtual time (many ACK timeouts' worth) changes nothing, then both
 * match.
 */
static void case_no_time_limit(Env *e)
{
    uint64_t ta = tag_of(0x5a0), tb = tag_of(0x5b0);
    uint8_t da[2000], db[3000];
    UzSge sa, sb;
    UzWr w;
    Snap snap;
    Pair p;
    int i;

    pair_make(e, &p, NULL);
    snap_take(e, &snap);
    sa = src_data(&p, 0, da, sizeof(da), 0x5a0);
    sb = src_data(&p, 4 * KIB, db, sizeof(db), 0x5b0);
    uz_mr_fill(p.dst, 0, UZ_GUARD, 16 * KIB);
    w = crw_wr(0x5a0, ta, &sa, 1);
    uz_post_send(p.a, &w);
    stcrw_done(&p, 0x5cb0, tb, 8 * KIB, sizeof(db));
    uz_counter_wait(&e->n[0], "crw_parked", snap.c[0].parked + 1);

    for (i = 0; i < 60; i++) {
        qtest_clock_step(qts(e), 1000 * MS);
        uz_poll_pause(&e->n[0].d);
    }
    uz_cq_assert_empty(p.a->scq, 5);
    uz_cq_assert_empty(p.b->scq, 1);
    g_assert_cmpint(uz_qp_state(p.a), ==, UZ_QPS_RTS);
    g_assert_cmpint(uz_qp_state(p.b), ==, UZ_QPS_RTS);
    g_assert_cmpuint(counter(e, 0, "retry_timeouts"), ==, 0);
    g_assert_cmpuint(counter(e, 1, "retry_timeouts"), ==, 0);
    uz_assert_mr_fill(p.dst, 0, UZ_GUARD, 16 * KIB, "targets while waiting");

    uz_post_recv(p.b, 0x7ea0, NULL, 0);
    uz_post_recv(p.b, 0x7eb0, NULL, 0);
    stcrw_done(&p, 0x5ca0, ta, 1000, sizeof(da));
    uz_sq_done(p.a, 0x5a0, UZ_WC_CRW, sizeof(da));
    rq_done_imm(p.b, 0x7ea0, sizeof(da), ta);
    w = crw_wr(0x5b0, tb, &sb, 1);
    uz_post_send(p.a, &w);
    uz_sq_done(p.a, 0x5b0, UZ_WC_CRW, sizeof(db));
    rq_done_imm(p.b, 0x7eb0, sizeof(db), tb);
    uz_assert_mr(p.dst, 1000, da, sizeof(da), "the parked CRW's data");
    uz_assert_mr(p.dst, 8 * KIB, db, sizeof(db), "at the parked offer");
    uz_assert_mr_fill(p.dst, 1000 + sizeof(da), UZ_GUARD,
                      8 * KIB - 1000 - sizeof(da), "between the targets");
    snap_expect_a(e, &snap, (CrwCnt) { .parked = 1, .offers = 1,
                                       .crw_first = 1, .st_first = 1 });
}

/* The target takes its receive WQE from an SRQ. */
static void case_target_srq(Env *e)
{
    UzSrq *srq = uz_srq_create(&e->n[1], 6, 0);
    Pair p;
    int first;

    p.a = uz_qp_create(&e->n[0], UZ_QPT_RC, NULL, NULL, NULL, 0);
    p.b = uz_qp_create(&e->n[1], UZ_QPT_RC, NULL, NULL, srq, 0);
    p.src = uz_mr_reg(&e->n[0], 64 * KIB, UZ_ACCESS_ALL);
    p.dst = uz_mr_reg(&e->n[1], 64 * KIB, UZ_ACCESS_ALL);
    uz_rc_connect(p.a, p.b, NULL);
    for (first = 0; first < 2; first++) {
        xchg_simple(e, &p, first, 5000, 1, 333, 5000, 0x5c0 + first);
    }
}

/*
 * A matched CRW's write is lost and sent again from the tag table's copy
 * of the CRW: the CRWs' SQ slots were overwritten long before.  The
 * STCRWs' ACKs are lost too, so the STCRWs arrive twice: the second copy
 * is a duplicate, not a second offer.
 */
static void case_retransmit(Env *e)
{
    uint8_t d1[3000], d2[UZ_SQ_MAX_INLINE], junk[UZ_SQ_WQE_SIZE];
    uint64_t ids[2] = { 0x5d0, 0x5d1 };
    uint64_t tx_write;
    struct uz_cqe c[2];
    UzSge s1, sw;
    UzWr w;
    Snap snap;
    Pair p;
    int i;

    pair_make(e, &p, NULL);
    snap_take(e, &snap);
    s1 = src_data(&p, 0, d1, sizeof(d1), 0x5d0);
    uz_pattern(d2, sizeof(d2), 0x5d1);
    uz_mr_fill(p.dst, 0, UZ_GUARD, 16 * KIB);
    sw = uz_mr_sge(p.src, 0, 64);
    w = crw_wr(0x5d0, tag_of(0x5d0), &s1, 1);
    uz_sq_post(p.a, &w);
    w = crw_inline_wr(0x5d1, tag_of(0x5d1), d2, sizeof(d2));
    uz_sq_post(p.a, &w);
    w = write_wr(0x5d2, &sw, p.dst, 12 * KIB);
    uz_sq_post(p.a, &w);
    uz_sq_ring(p.a);
    /* The WRITE after them completed: their slots are the driver's. */
    uz_sq_done(p.a, 0x5d2, UZ_WC_RDMA_WRITE, 64);
    memset(junk, 0xff, sizeof(junk));
    for (i = 0; i < 2; i++) {
        qtest_memwrite(qts(e), p.a->sq + i * UZ_SQ_WQE_SIZE, junk,
                       sizeof(junk));
    }

    drop_all(e, 0, true);
    tx_write = counter(e, 0, "tx_pkts_write");
    uz_post_recv(p.b, 0x7ed0, NULL, 0);
    uz_post_recv(p.b, 0x7ed1, NULL, 0);
    w = stcrw_wr(0x5cd0, tag_of(0x5d0), p.dst, 100, sizeof(d1));
    uz_sq_post(p.b, &w);
    w = stcrw_wr(0x5cd1, tag_of(0x5d1), p.dst, 8 * KIB, sizeof(d2));
    uz_sq_post(p.b, &w);
    uz_sq_ring(p.b);
    uz_counter_wait(&e->n[0], "tx_pkts_write",
                    tx_write + npkts(sizeof(d1)) + 1);
    drop_all(e, 0, false);

    cq_take_set(p.a->scq, ids, 2, c, MS);
    uz_expect_sq(&c[0], 0x5d0, UZ_WC_CRW, p.a, sizeof(d1));
    uz_expect_sq(&c[1], 0x5d1, UZ_WC_CRW, p.a, sizeof(d2));
    for (i = 0; i < 2; i++) {
        struct uz_cqe one;

        cq_wait_step(p.b->scq, &one, MS);
        uz_expect_sq(&one, 0x5cd0 + i, UZ_WC_STCRW, p.b, 0);
    }
    rq_done_imm(p.b, 0x7ed0, sizeof(d1), tag_of(0x5d0));
    rq_done_imm(p.b, 0x7ed1, sizeof(d2), tag_of(0x5d1));
    uz_assert_mr_fill(p.dst, 0, UZ_GUARD, 100, "before the first target");
    uz_assert_mr(p.dst, 100, d1, sizeof(d1), "SGE CRW, sent again");
    uz_assert_mr_fill(p.dst, 100 + sizeof(d1), UZ_GUARD,
                      8 * KIB - 100 - sizeof(d1), "between the targets");
    uz_assert_mr(p.dst, 8 * KIB, d2, sizeof(d2), "inline CRW, sent again");
    uz_assert_mr_fill(p.dst, 8 * KIB + sizeof(d2), UZ_GUARD,
                      4 * KIB - sizeof(d2), "after the targets");
    g_assert_cmpuint(counter(e, 0, "retransmits"), >, 0);
    g_assert_cmpuint(counter(e, 0, "duplicates"), >, 0);
    snap_expect_a(e, &snap, (CrwCnt) { .parked = 2, .crw_first = 2 });
    uz_cq_assert_empty(p.a->scq, 5);
    uz_cq_assert_empty(p.b->scq, 1);
    uz_cq_assert_empty(p.b->rcq, 1);
}

/* ------------------------------------------------------------------ */
/* 7. Errors                                                          */
/* ------------------------------------------------------------------ */

/*
 * A second CRW with the tag of a parked one: LOC_QP_OP_ERR/CRW_DUP_TAG,
 * the WRITE after it and then the parked CRW are flushed, only a's QP
 * fails.
 */
static void case_err_dup_tag(Env *e)
{
    uint64_t tag = tag_of(0x700);
    UzSge s;
    UzWr w;
    Snap snap;
    Pair p;

    pair_make(e, &p, NULL);
    snap_take(e, &snap);
    s = uz_mr_sge(p.src, 0, 500);
    w = crw_wr(0x101, tag, &s, 1);
    crw_park(e, &p, &w);
    w = crw_wr(0x102, tag, &s, 1);
    post_crw_then_write(&p, &w, 0);

    expect_crw_failed(&p, 0x102, UZ_WC_STATUS_LOC_QP_OP_ERR,
                      UZ_VERR_CRW_DUP_TAG);
    uz_sq_err(p.a, 0x101, UZ_WC_CRW, UZ_WC_STATUS_WR_FLUSH_ERR, 0);
    expect_a_failed(&p, 0x104);
    snap_expect_a(e, &snap, (CrwCnt) { .parked = 1, .flushed = 1,
                                       .errors = 1 });
    check_fresh_pair(e);
}

/*
 * A CRW whose write has started no longer holds its tag (8.12).  a's
 * first CRW is matched and its write held by RNR NAKs (b has no receive
 * WQE); meanwhile the tag is used again, by a second CRW (@crw_again) or
 * by a second STCRW from b.  The new CRW parks or the new offer is kept,
 * the two meet, and both writes land once, each at its own target, with
 * nothing refused.  The RNR waits need the clock.
 */
static void tag_reuse(Env *e, bool crw_again)
{
    uint64_t tag = tag_of(0x701);
    uint8_t data[100];
    struct uz_cqe c;
    UzSge s;
    UzWr w;
    Snap snap;
    Pair p;

    pair_make(e, &p, NULL);
    snap_take(e, &snap);
    s = src_data(&p, 0, data, sizeof(data), 0x701);
    uz_mr_fill(p.dst, 0, UZ_GUARD, 4 * KIB);
    w = crw_wr(0x111, tag, &s, 1);
    crw_park(e, &p, &w);
    stcrw_done(&p, 0x5c11, tag, 1000, sizeof(data));
    uz_counter_wait(&e->n[0], "rnr_naks_rcvd", 1);

    /* The requester reaches the second CRW after an RNR wait. */
    w = crw_wr(0x112, tag, &s, 1);
    if (crw_again) {
        uz_post_send(p.a, &w);
        qtest_clock_step(qts(e), MS);
        uz_counter_wait(&e->n[0], "crw_parked", snap.c[0].parked + 2);
        stcrw_done(&p, 0x5c12, tag, 2000, sizeof(data));
    } else {
        stcrw_done(&p, 0x5c12, tag, 2000, sizeof(data));
        uz_counter_wait(&e->n[0], "crw_offers", snap.c[0].offers + 1);
        uz_post_send(p.a, &w);
        qtest_clock_step(qts(e), MS);
        uz_counter_wait(&e->n[0], "crw_matched_stcrw_first",
                        snap.c[0].st_first + 1);
    }
    uz_post_recv(p.b, 0x7e11, NULL, 0);
    uz_post_recv(p.b, 0x7e12, NULL, 0);
    uz_cq_wait_clock(p.a->scq, &c, MS, 1000);
    uz_expect_sq(&c, 0x111, UZ_WC_CRW, p.a, sizeof(data));
    uz_cq_wait_clock(p.a->scq, &c, MS, 1000);
    uz_expect_sq(&c, 0x112, UZ_WC_CRW, p.a, sizeof(data));
    rq_done_imm(p.b, 0x7e11, sizeof(data), tag);
    rq_done_imm(p.b, 0x7e12, sizeof(data), tag);
    uz_assert_mr_fill(p.dst, 0, UZ_GUARD, 1000, "before the first write");
    uz_assert_mr(p.dst, 1000, data, sizeof(data), "the first write");
    uz_assert_mr_fill(p.dst, 1100, UZ_GUARD, 900, "between the writes");
    uz_assert_mr(p.dst, 2000, data, sizeof(data), "the second write");
    uz_assert_mr_fill(p.dst, 2100, UZ_GUARD, 4 * KIB - 2100, "after them");
    uz_cq_assert_empty(p.a->scq, 5);
    g_assert_cmpint(uz_qp_state(p.a), ==, UZ_QPS_RTS);
    g_assert_cmpint(uz_qp_state(p.b), ==, UZ_QPS_RTS);
    snap_expect_a(e, &snap, crw_again ?
                  (CrwCnt) { .parked = 2, .crw_first = 2 } :
                  (CrwCnt) { .parked = 1, .crw_first = 1, .offers = 1,
                             .st_first = 1 });
}

static void case_tag_reuse_crw(Env *e)
{
    tag_reuse(e, true);
}

static void case_tag_reuse_stcrw(Env *e)
{
    tag_reuse(e, false);
}

/*
 * CRW and STCRW exist on RC QPs only (8.6), and an STCRW carries no data
 * (8.7): each is a malformed WQE, LOC_QP_OP_ERR/BAD_WQE, and the QP
 * fails.
 */
static void case_err_malformed(Env *e)
{
    uint8_t byte = 0x42;
    int k;

    for (k = 0; k < 3; k++) {
        uint8_t op = k ? UZ_WR_STCRW : UZ_WR_CRW;
        uint8_t wc = k ? UZ_WC_STCRW : UZ_WC_CRW;
        UzQp *qp, *peer = NULL;
        UzMr *mr = uz_mr_reg(&e->n[0], 4 * KIB, UZ_ACCESS_ALL);
        UzWr w = {
            .wr_id = 0x5e0 + k, .opcode = op, .flags = UZ_WQE_F_SIGNALED,
            .tag = tag_of(0x5e0 + k), .remote_addr = uz_mr_va(mr, 0),
            .rkey = mr->key, .crw_length = 64,
        };
        UzWr next = {
            .wr_id = 0x5f0 + k, .opcode = UZ_WR_SEND,
            .flags = UZ_WQE_F_SIGNALED,
        };
        Snap snap;

        snap_take(e, &snap);
        if (k < 2) {
            /* UD */
            qp = uz_qp_create(&e->n[0], UZ_QPT_UD, NULL, NULL, NULL, 0);
            uz_ud_up(qp, 0x11223344u, 0);
            next.ahn = uz_ah_create(&e->n[0], 1);
            next.remote_qkey = 0x11223344u;
            if (op == UZ_WR_CRW) {
                w.flags |= UZ_WQE_F_INLINE;
                w.inline_data = &byte;
                w.inline_len = 1;
            }
        } else {
            /* RC, an STCRW with inline data of no bytes */
            Pair p;

            pair_make(e, &p, NULL);
            qp = p.a;
            peer = p.b;
            w.flags |= UZ_WQE_F_INLINE;
            w.inline_data = &byte;
            w.inline_len = 0;
        }
        uz_sq_post(qp, &w);
        uz_sq_post(qp, &next);
        uz_sq_ring(qp);
        uz_sq_err(qp, w.wr_id, wc, UZ_WC_STATUS_LOC_QP_OP_ERR,
                  UZ_VERR_BAD_WQE);
        uz_sq_err(qp, next.wr_id, UZ_WC_SEND, UZ_WC_STATUS_WR_FLUSH_ERR, 0);
        uz_qp_failed(qp, 0);
        uz_cq_assert_empty(qp->scq, 10);
        if (peer) {
            g_assert_cmpint(uz_qp_state(peer), ==, UZ_QPS_RTS);
        }
        snap_expect_a(e, &snap, (CrwCnt) { 0 });
    }
    check_fresh_pair(e);
}

/*
 * A matched CRW's write is an ordinary RC message: with its packets lost
 * (transport retries exhausted) or its target without a receive WQE (RNR
 * retries exhausted) the CRW completes RETRY_EXC_ERR or
 * RNR_RETRY_EXC_ERR, with its own wr_id and opcode, and a fails.
 */
static void case_err_retry_exhausted(Env *e)
{
    int rnr;

    for (rnr = 0; rnr < 2; rnr++) {
        UzRcOpts rc = UZ_RC_OPTS_DEFAULT;
        PairOpts o = { .rc = &rc };
        uint64_t tag = tag_of(0x5e8 + rnr);
        struct uz_cqe c;
        UzSge s;
        UzWr w;
        Snap snap;
        Pair p;

        rc.timeout = 8;
        rc.retry_cnt = 2;
        rc.rnr_retry = 1;
        pair_make(e, &p, &o);
        snap_take(e, &snap);
        uz_mr_fill(p.dst, 0, UZ_GUARD, 4 * KIB);
        s = uz_mr_sge(p.src, 0, 2000);
        if (!rnr) {
            uz_post_recv(p.b, 0x7ee8, NULL, 0);
        }
        stcrw_done(&p, 0x5ce8 + rnr, tag, 0, 2000);
        if (!rnr) {
            drop_all(e, 0, true);
        }
        w = crw_wr(0x3e8 + rnr, tag, &s, 1);
        uz_post_send(p.a, &w);
        uz_cq_wait_clock(p.a->scq, &c, MS, 1000);
        uz_expect_err(&c, 0x3e8 + rnr, UZ_WC_CRW, rnr ?
                      UZ_WC_STATUS_RNR_RETRY_EXC_ERR :
                      UZ_WC_STATUS_RETRY_EXC_ERR, 0, p.a);
        uz_qp_failed(p.a, 0);
        uz_cq_assert_empty(p.a->scq, 10);
        if (!rnr) {
            drop_all(e, 0, false);
            uz_assert_mr_fill(p.dst, 0, UZ_GUARD, 4 * KIB, "the target");
        }
        g_assert_cmpint(uz_qp_state(p.b), ==, UZ_QPS_RTS);
        uz_cq_assert_empty(p.b->rcq, 1);
        snap_expect_a(e, &snap, (CrwCnt) { .offers = 1, .st_first = 1 });
    }
    check_fresh_pair(e);
}

/*
 * max-crw-tags=4: four parked CRWs fill the table, the fifth fails with
 * LOC_QP_OP_ERR/CRW_TABLE_FULL; the WRITE after it and the four parked
 * CRWs are flushed.
 */
static void case_err_table_full(Env *e)
{
    uint64_t ids[4] = { 0x200, 0x201, 0x202, 0x203 };
    UzSge s;
    UzWr w;
    Snap snap;
    Pair p;
    int i;

    pair_make(e, &p, NULL);
    snap_take(e, &snap);
    s = uz_mr_sge(p.src, 0, 300);
    for (i = 0; i < 4; i++) {
        w = crw_wr(0x200 + i, tag_of(0x710 + i), &s, 1);
        w.flags = i == 2 ? 0 : UZ_WQE_F_SIGNALED;
        uz_sq_post(p.a, &w);
    }
    uz_sq_ring(p.a);
    uz_counter_wait(&e->n[0], "crw_parked", snap.c[0].parked + 4);
    uz_cq_assert_empty(p.a->scq, 5);
    w = crw_wr(0x204, tag_of(0x714), &s, 1);
    post_crw_then_write(&p, &w, 0);

    expect_crw_failed(&p, 0x204, UZ_WC_STATUS_LOC_QP_OP_ERR,
                      UZ_VERR_CRW_TABLE_FULL);
    expect_crws_flushed(&p, ids, 4);
    expect_a_failed(&p, 0x206);
    snap_expect_a(e, &snap, (CrwCnt) { .parked = 4, .flushed = 4,
                                       .errors = 1 });
    check_fresh_pair(e);
}

/*
 * max-crw-tags=4, the table full of offers: a CRW for an offered tag
 * matches (it needs no new entry) and frees its entry; a CRW with a new
 * tag parks there; the next new tag fails with CRW_TABLE_FULL.  The
 * parked CRW is flushed, the offers are discarded without a CQE.
 */
static void case_err_table_full_offers(Env *e)
{
    uint8_t data[400];
    UzSge s;
    UzWr w;
    Snap snap;
    Pair p;
    int i;

    pair_make(e, &p, NULL);
    snap_take(e, &snap);
    uz_mr_fill(p.dst, 0, UZ_GUARD, 16 * KIB);
    for (i = 0; i < 4; i++) {
        w = stcrw_wr(0x5c20 + i, tag_of(0x720 + i), p.dst, i * 2 * KIB,
                     sizeof(data));
        uz_sq_post(p.b, &w);
    }
    uz_sq_ring(p.b);
    for (i = 0; i < 4; i++) {
        uz_sq_done(p.b, 0x5c20 + i, UZ_WC_STCRW, 0);
    }
    snap_expect(e, &snap, 0, (CrwCnt) { .offers = 4 });

    s = src_data(&p, 0, data, sizeof(data), 0x722);
    uz_post_recv(p.b, 0x7e22, NULL, 0);
    w = crw_wr(0x222, tag_of(0x722), &s, 1);
    uz_post_send(p.a, &w);
    uz_sq_done(p.a, 0x222, UZ_WC_CRW, sizeof(data));
    rq_done_imm(p.b, 0x7e22, sizeof(data), tag_of(0x722));
    uz_assert_mr(p.dst, 4 * KIB, data, sizeof(data), "matched in a full table");

    w = crw_wr(0x230, tag_of(0x730), &s, 1);
    crw_park(e, &p, &w);
    w = crw_wr(0x231, tag_of(0x731), &s, 1);
    post_crw_then_write(&p, &w, 15 * KIB);
    expect_crw_failed(&p, 0x231, UZ_WC_STATUS_LOC_QP_OP_ERR,
                      UZ_VERR_CRW_TABLE_FULL);
    uz_sq_err(p.a, 0x230, UZ_WC_CRW, UZ_WC_STATUS_WR_FLUSH_ERR, 0);
    expect_a_failed(&p, 0);
    /* Nothing reached the other offered buffers. */
    for (i = 0; i < 4; i++) {
        if (i != 2) {
            uz_assert_mr_fill(p.dst, i * 2 * KIB, UZ_GUARD, 2 * KIB,
                              "an offer never used");
        }
    }
    snap_expect_a(e, &snap, (CrwCnt) { .offers = 4, .st_first = 1,
                                       .parked = 1, .flushed = 1,
                                       .errors = 1 });
    check_fresh_pair(e);
}

/*
 * A refused STCRW: the CRW side NAKs it as an invalid request, logs the
 * detail, and goes to ERR; the STCRW completes REM_INV_REQ_ERR, and the
 * WQE after it is flushed.
 */
static void expect_stcrw_refused(Env *e, Pair *p, uint64_t st_id,
                                 uint8_t detail)
{
    g_autofree char *who = g_strdup_printf("QP %u: ", p->a->qpn);
    g_autofree char *what = g_strdup_printf("detail %u)", detail);

    uz_sq_err(p->b, st_id, UZ_WC_STCRW, UZ_WC_STATUS_REM_INV_REQ_ERR, 0);
    uz_sq_err(p->b, st_id + 1, UZ_WC_RDMA_WRITE, UZ_WC_STATUS_WR_FLUSH_ERR, 0);
    uz_qp_failed(p->b, 0);
    uz_qp_failed(p->a, UZ_EQE_QP_REQ_ERR);
    expect_log_line(e, who, what);
    g_assert_cmpuint(counter(e, 1, "nak_inv_req_rcvd"), ==, 1);
}

/* b posts an STCRW for @tag and a WRITE to a after it. */
static void post_stcrw_then_write(Pair *p, uint64_t st_id, uint64_t tag)
{
    UzSge sw = uz_mr_sge(p->dst, 0, 64);
    UzWr w = stcrw_wr(st_id, tag, p->dst, 8 * KIB, 100);

    uz_sq_post(p->b, &w);
    w = write_wr(st_id + 1, &sw, p->src, 0);
    uz_sq_post(p->b, &w);
    uz_sq_ring(p->b);
}

/* A second STCRW for a tag already offered. */
static void case_err_stcrw_dup(Env *e)
{
    uint64_t tag = tag_of(0x740);
    Snap snap;
    Pair p;

    pair_make(e, &p, NULL);
    snap_take(e, &snap);
    uz_post_recv(p.a, 0x7e40, NULL, 0);
    stcrw_done(&p, 0x340, tag, 0, 100);
    post_stcrw_then_write(&p, 0x341, tag);
    expect_stcrw_refused(e, &p, 0x341, UZ_VERR_CRW_DUP_TAG);
    /* a's receive WQE is flushed; the offer goes without a CQE. */
    uz_rq_flushed(p.a, 0x7e40);
    uz_cq_assert_empty(p.a->scq, 10);
    uz_cq_assert_empty(p.a->rcq, 1);
    expect_post_flushed(p.b, p.dst, p.src, 0x343);
    snap_expect_a(e, &snap, (CrwCnt) { .offers = 1, .errors = 1 });
    check_fresh_pair(e);
}

/*
 * max-crw-tags=4: an STCRW with a fifth tag when the table holds a CRW
 * being written (held by RNR NAKs: b has no receive WQE and the clock
 * does not move), one matched behind it and two parked: refused.  Each
 * of the four CRWs is flushed once.
 */
static void case_err_stcrw_full(Env *e)
{
    uint64_t ids[4] = { 0x360, 0x361, 0x362, 0x363 };
    UzSge s;
    UzWr w;
    Snap snap;
    Pair p;
    int i;

    pair_make(e, &p, NULL);
    snap_take(e, &snap);
    uz_mr_fill(p.dst, 0, UZ_GUARD, 16 * KIB);
    s = uz_mr_sge(p.src, 0, 100);
    for (i = 0; i < 4; i++) {
        w = crw_wr(0x360 + i, tag_of(0x760 + i), &s, 1);
        uz_sq_post(p.a, &w);
    }
    uz_sq_ring(p.a);
    uz_counter_wait(&e->n[0], "crw_parked", snap.c[0].parked + 4);
    for (i = 0; i < 2; i++) {
        stcrw_done(&p, 0x5c60 + i, tag_of(0x760 + i), i * KIB, 100);
        uz_counter_wait(&e->n[0], "rnr_naks_rcvd", 1);
    }
    post_stcrw_then_write(&p, 0x364, tag_of(0x764));
    expect_stcrw_refused(e, &p, 0x364, UZ_VERR_CRW_TABLE_FULL);
    expect_crws_flushed(&p, ids, 4);
    uz_cq_assert_empty(p.a->scq, 10);
    uz_assert_mr_fill(p.dst, 0, UZ_GUARD, 16 * KIB, "no write happened");
    snap_expect_a(e, &snap, (CrwCnt) { .parked = 4, .crw_first = 2,
                                       .flushed = 4, .errors = 1 });
    check_fresh_pair(e);
}

/* How the offered buffer fails the target's checks (8.10). */
enum {
    BAD_RKEY,                   /* key byte mismatch */
    BAD_MR_ACCESS,              /* the MR lacks REMOTE_WRITE */
    BAD_QP_ACCESS,              /* b's QP lacks REMOTE_WRITE */
    BAD_BOUNDS,                 /* the data runs past the MR */
};

/*
 * The target NAKs the CRW's write as a remote access error: the CRW
 * completes REM_ACCESS_ERR, both QPs go to ERR, b's receive WQEs are
 * flushed without data, the target is untouched.
 */
static void remote_case(Env *e, int how, bool crw_first)
{
    PairOpts o = { .b_access = how == BAD_QP_ACCESS ?
                               UZ_ACCESS_REMOTE_READ : 0 };

    uint64_t tag = tag_of(0x780 + how);
    const uint32_t len = 1500;
    uint64_t doff = 1000;
    UzMr *dst, *ro;
    UzSge s, sw;
    UzWr crw, st, w;
    Snap snap;
    Pair p;

    /* With the CRW parked first, b must accept the WRITE after it. */
    g_assert(!(crw_first && how == BAD_QP_ACCESS));
    pair_make(e, &p, &o);
    snap_take(e, &snap);
    ro = uz_mr_reg(&e->n[1], 16 * KIB,
                   UZ_ACCESS_LOCAL_WRITE | UZ_ACCESS_REMOTE_READ);
    dst = how == BAD_MR_ACCESS ? ro : p.dst;
    if (how == BAD_BOUNDS) {
        doff = dst->len - len + 1;
    }
    uz_mr_fill(dst, 0, UZ_GUARD, dst->len);
    s = uz_mr_sge(p.src, 0, len);
    sw = uz_mr_sge(p.src, 0, 64);
    crw = crw_wr(0x380, tag, &s, 1);
    if (!crw_first && how == BAD_RKEY) {
        crw.flags = 0;          /* an error completes anyway */
    }
    st = stcrw_wr(0x5c80, tag, dst, doff, len);
    if (how == BAD_RKEY) {
        st.rkey ^= 0x80;
    }
    uz_post_recv(p.b, 0x7e80, NULL, 0);
    uz_post_recv(p.b, 0x7e81, NULL, 0);
    if (crw_first) {
        crw_park(e, &p, &crw);
        /* It does not block: a WRITE after it completes. */
        w = write_wr(0x381, &sw, p.dst, 15 * KIB);
        uz_post_send(p.a, &w);
        uz_sq_done(p.a, 0x381, UZ_WC_RDMA_WRITE, 64);
        uz_post_send(p.b, &st);
        uz_sq_done(p.b, 0x5c80, UZ_WC_STCRW, 0);
    } else {
        uz_post_send(p.b, &st);
        uz_sq_done(p.b, 0x5c80, UZ_WC_STCRW, 0);
        post_crw_then_write(&p, &crw, 15 * KIB);
    }
    uz_sq_err(p.a, 0x380, UZ_WC_CRW, UZ_WC_STATUS_REM_ACCESS_ERR, 0);
    if (!crw_first) {
        uz_sq_err(p.a, 0x381, UZ_WC_RDMA_WRITE, UZ_WC_STATUS_WR_FLUSH_ERR, 0);
    }
    uz_qp_failed(p.a, 0);
    uz_qp_failed(p.b, UZ_EQE_QP_ACCESS_ERR);
    uz_rq_flushed(p.b, 0x7e80);
    uz_rq_flushed(p.b, 0x7e81);
    expect_post_flushed(p.a, p.src, p.dst, 0x382);
    uz_cq_assert_empty(p.a->scq, 10);
    uz_cq_assert_empty(p.b->rcq, 1);
    uz_cq_assert_empty(p.b->scq, 1);
    uz_assert_mr_fill(dst, 0, UZ_GUARD, MIN(dst->len, 15 * KIB), "the target");
    g_assert_cmpuint(counter(e, 0, "nak_rem_access_rcvd"), ==, 1);
    snap_expect_a(e, &snap, crw_first ?
                  (CrwCnt) { .parked = 1, .crw_first = 1 } :
                  (CrwCnt) { .offers = 1, .st_first = 1 });
    check_fresh_pair(e);
}

static void case_err_remote_rkey(Env *e)
{
    remote_case(e, BAD_RKEY, true);
}

static void case_err_remote_rkey_offer_first(Env *e)
{
    remote_case(e, BAD_RKEY, false);
}

static void case_err_remote_mr_access(Env *e)
{
    remote_case(e, BAD_MR_ACCESS, false);
}

static void case_err_remote_qp_access(Env *e)
{
    remote_case(e, BAD_QP_ACCESS, false);
}

static void case_err_remote_bounds(Env *e)
{
    remote_case(e, BAD_BOUNDS, true);
}

/*
 * A CRW longer than the offer: LOC_LEN_ERR, nothing is sent, only a's
 * QP fails; b's receive WQE stays unused.  Both orders; in one the CRW
 * is unsignalled, and its error completes all the same.
 */
static void case_err_too_long(Env *e)
{
    int first;

    for (first = 0; first < 2; first++) {
        uint64_t tag = tag_of(0x790 + first);
        uint32_t len = first ? 3000 : 1;
        uint64_t tx_write;
        UzSge s;
        UzWr crw;
        Snap snap;
        Pair p;

        pair_make(e, &p, NULL);
        snap_take(e, &snap);
        tx_write = counter(e, 0, "tx_pkts_write");
        uz_mr_fill(p.dst, 0, UZ_GUARD, 8 * KIB);
        s = uz_mr_sge(p.src, 0, len);
        crw = crw_wr(0x390, tag, &s, 1);
        if (first) {
            crw.flags = 0;      /* an error completes anyway */
        }
        uz_post_recv(p.b, 0x7e90, NULL, 0);
        if (first) {
            crw_park(e, &p, &crw);
            stcrw_done(&p, 0x5c90, tag, 100, len - 1);
            uz_sq_err(p.a, 0x390, UZ_WC_CRW, UZ_WC_STATUS_LOC_LEN_ERR, 0);
            expect_post_flushed(p.a, p.src, p.dst, 0x391);
        } else {
            stcrw_done(&p, 0x5c90, tag, 100, len - 1);
            post_crw_then_write(&p, &crw, 7 * KIB);
            expect_crw_failed(&p, 0x390, UZ_WC_STATUS_LOC_LEN_ERR, 0);
        }
        uz_qp_failed(p.a, 0);
        uz_cq_assert_empty(p.a->scq, 10);
        g_assert_cmpuint(counter(e, 0, "tx_pkts_write"), ==, tx_write);
        g_assert_cmpint(uz_qp_state(p.b), ==, UZ_QPS_RTS);
        uz_cq_assert_empty(p.b->rcq, 1);
        uz_assert_mr_fill(p.dst, 0, UZ_GUARD, 8 * KIB, "the target");
        snap_expect_a(e, &snap, first ?
                      (CrwCnt) { .parked = 1, .crw_first = 1 } :
                      (CrwCnt) { .offers = 1, .st_first = 1 });
    }
    check_fresh_pair(e);
}

/*
 * A CRW whose SGE fails the local checks when it is parked: LOC_PROT_ERR
 * with the detail (bad lkey; outside the MR), nothing parked; and one
 * whose MR is deregistered while it is parked: LOC_PROT_ERR/BAD_LKEY
 * when its write starts, nothing sent.
 */
static void case_err_local(Env *e)
{
    static const struct {
        uint8_t verr;
        uint32_t key_xor;
        uint64_t off;
    } bad[] = {
        { UZ_VERR_BAD_LKEY, 0x80, 0 },
        { UZ_VERR_BOUNDS, 0, 64 * KIB - 10 },
    };
    uint64_t tx_write;
    UzMr *gone;
    UzSge s, sw;
    UzWr w;
    Snap snap;
    Pair p;
    int i;

    for (i = 0; i < ARRAY_SIZE(bad); i++) {
        pair_make(e, &p, NULL);
        snap_take(e, &snap);
        s = uz_mr_sge(p.src, bad[i].off, 100);
        s.lkey ^= bad[i].key_xor;
        sw = uz_mr_sge(p.src, 0, 64);
        w = crw_wr(0x3a0 + i, tag_of(0x7a0), &s, 1);
        uz_sq_post(p.a, &w);
        w = write_wr(0x3b0 + i, &sw, p.dst, 0);
        uz_sq_post(p.a, &w);
        uz_sq_ring(p.a);
        uz_sq_err(p.a, 0x3a0 + i, UZ_WC_CRW, UZ_WC_STATUS_LOC_PROT_ERR,
                  bad[i].verr);
        uz_sq_err(p.a, 0x3b0 + i, UZ_WC_RDMA_WRITE, UZ_WC_STATUS_WR_FLUSH_ERR,
                  0);
        expect_a_failed(&p, 0);
        snap_expect_a(e, &snap, (CrwCnt) { 0 });
    }

    /* The MR goes away while the CRW is parked. */
    pair_make(e, &p, NULL);
    snap_take(e, &snap);
    tx_write = counter(e, 0, "tx_pkts_write");
    gone = uz_mr_reg(&e->n[0], 4 * KIB, UZ_ACCESS_ALL);
    s = uz_mr_sge(gone, 0, 200);
    w = crw_wr(0x3c0, tag_of(0x7c0), &s, 1);
    crw_park(e, &p, &w);
    cmd_obj(&e->n[0], UZ_CMD_DEREG_MR, gone->key);
    uz_mr_fill(p.dst, 0, UZ_GUARD, 4 * KIB);
    uz_post_recv(p.b, 0x7ec0, NULL, 0);
    stcrw_done(&p, 0x5cc0, tag_of(0x7c0), 0, 200);
    uz_sq_err(p.a, 0x3c0, UZ_WC_CRW, UZ_WC_STATUS_LOC_PROT_ERR,
              UZ_VERR_BAD_LKEY);
    uz_qp_failed(p.a, 0);
    expect_post_flushed(p.a, p.src, p.dst, 0x3c1);
    uz_cq_assert_empty(p.a->scq, 10);
    g_assert_cmpuint(counter(e, 0, "tx_pkts_write"), ==, tx_write);
    g_assert_cmpint(uz_qp_state(p.b), ==, UZ_QPS_RTS);
    uz_cq_assert_empty(p.b->rcq, 1);
    uz_assert_mr_fill(p.dst, 0, UZ_GUARD, 4 * KIB, "the target");
    snap_expect_a(e, &snap, (CrwCnt) { .parked = 1, .crw_first = 1 });
    check_fresh_pair(e);
}

/* ------------------------------------------------------------------ */
/* 8. Flush                                                           */
/* ------------------------------------------------------------------ */

/*
 * Three parked CRWs (one unsignalled) and an offer; modify a to ERR.  a
 * sends and receives into one CQ: the receive WQE's flush comes first
 * (the SQ has nothing left), then each CRW once; no QP_FATAL.  RESET and
 * destroy afterwards write nothing more.
 */
static void case_flush_err(Env *e)
{
    PairOpts o = { .a_shared_cq = true };
    uint64_t ids[3] = { 0x401, 0x402, 0x403 };
    UzSge s;
    UzWr w;
    Snap snap;
    Pair p;
    int i;

    pair_make(e, &p, &o);
    snap_take(e, &snap);
    s = uz_mr_sge(p.src, 0, 1000);
    uz_post_recv(p.a, 0x7e40, NULL, 0);
    for (i = 0; i < 3; i++) {
        w = crw_wr(ids[i], tag_of(0x800 + i), &s, 1);
        w.flags = i == 1 ? 0 : UZ_WQE_F_SIGNALED;
        uz_sq_post(p.a, &w);
    }
    uz_sq_ring(p.a);
    stcrw_done(&p, 0x5c40, tag_of(0x810), 0, 100);
    uz_counter_wait(&e->n[0], "crw_parked", snap.c[0].parked + 3);
    uz_cq_assert_empty(p.a->scq, 5);

    uz_qp_set_state(p.a, UZ_QPS_ERR);
    uz_rq_flushed(p.a, 0x7e40);
    expect_crws_flushed(&p, ids, 3);
    uz_cq_assert_empty(p.a->scq, 10);
    g_assert_cmpint(uz_events_count(p.a->n, &p.a->n->async_eq, UZ_EQE_QP_FATAL,
                                    p.a->qpn, 5), ==, 0);
    snap_expect(e, &snap, 0, (CrwCnt) { .parked = 3, .offers = 1,
                                        .flushed = 3 });
    uz_qp_set_state(p.a, UZ_QPS_RESET);
    cmd_obj(&e->n[0], UZ_CMD_DESTROY_QP, p.a->qpn);
    uz_cq_assert_empty(p.a->scq, 10);
    snap_expect_a(e, &snap, (CrwCnt) { .parked = 3, .offers = 1,
                                       .flushed = 3 });
    g_assert_cmpint(uz_qp_state(p.b), ==, UZ_QPS_RTS);
    check_fresh_pair(e);
}

/*
 * CRWs parked behind a WRITE that is never acknowledged (NIC 0 drops its
 * frames; the requester is not held up) have not completed their SQ
 * slots, even the second one, matched and its write sent: the SQ flush
 * completes them, each once, in SQ order, before the receive WQE, and
 * the table flush adds nothing.
 */
static void case_flush_err_in_sq(Env *e)
{
    PairOpts o = { .a_shared_cq = true };
    UzSge s;
    UzWr w;
    Snap snap;
    Pair p;
    int i;

    pair_make(e, &p, &o);
    snap_take(e, &snap);
    drop_all(e, 0, true);
    s = uz_mr_sge(p.src, 0, 100);
    w = write_wr(0x411, &s, p.dst, 0);
    uz_post_send(p.a, &w);
    uz_counter_wait(&e->n[0], "fault_drops", 1);
    for (i = 0; i < 2; i++) {
        w = crw_wr(0x412 + i, tag_of(0x820 + i), &s, 1);
        uz_sq_post(p.a, &w);
    }
    uz_sq_ring(p.a);
    uz_counter_wait(&e->n[0], "crw_parked", snap.c[0].parked + 2);
    uz_post_recv(p.b, 0x7e42, NULL, 0);
    w = stcrw_wr(0x5c41, tag_of(0x821), p.dst, 0, 100);
    uz_post_send(p.b, &w);
    uz_counter_wait(&e->n[0], "crw_matched_crw_first",
                    snap.c[0].crw_first + 1);
    uz_counter_wait(&e->n[0], "tx_pkts_write", 2);
    uz_post_recv(p.a, 0x7e41, NULL, 0);
    uz_cq_assert_empty(p.a->scq, 5);

    uz_qp_set_state(p.a, UZ_QPS_ERR);
    uz_sq_err(p.a, 0x411, UZ_WC_RDMA_WRITE, UZ_WC_STATUS_WR_FLUSH_ERR, 0);
    uz_sq_err(p.a, 0x412, UZ_WC_CRW, UZ_WC_STATUS_WR_FLUSH_ERR, 0);
    uz_sq_err(p.a, 0x413, UZ_WC_CRW, UZ_WC_STATUS_WR_FLUSH_ERR, 0);
    uz_rq_flushed(p.a, 0x7e41);
    uz_cq_assert_empty(p.a->scq, 10);
    uz_qp_set_state(p.a, UZ_QPS_RESET);
    cmd_obj(&e->n[0], UZ_CMD_DESTROY_QP, p.a->qpn);
    uz_cq_assert_empty(p.a->scq, 10);
    drop_all(e, 0, false);
    check_fresh_pair(e);
}

/*
 * Park CRW @id and, with @writing, match it and hold its write with RNR
 * NAKs (b has no receive WQE and the clock does not move).
 */
static void park_crw(Env *e, Pair *p, uint64_t id, uint32_t t, bool writing)
{
    uint64_t rnr = counter(e, 0, "rnr_naks_rcvd");
    UzSge s = uz_mr_sge(p->src, 0, 300);
    UzWr w = crw_wr(id, tag_of(t), &s, 1);

    w.flags = id & 1 ? 0 : UZ_WQE_F_SIGNALED;
    crw_park(e, p, &w);
    if (writing) {
        stcrw_done(p, id ^ 0x5c0000, tag_of(t), 0, 300);
        uz_counter_wait(&e->n[0], "rnr_naks_rcvd", rnr + 1);
    }
}

/* A matched CRW whose write is held by RNR NAKs, then ERR: flushed once. */
static void case_flush_err_writing(Env *e)
{
    Snap snap;
    Pair p;

    pair_make(e, &p, NULL);
    snap_take(e, &snap);
    uz_mr_fill(p.dst, 0, UZ_GUARD, 4 * KIB);
    park_crw(e, &p, 0x420, 0x830, true);
    uz_cq_assert_empty(p.a->scq, 5);
    uz_qp_set_state(p.a, UZ_QPS_ERR);
    uz_sq_err(p.a, 0x420, UZ_WC_CRW, UZ_WC_STATUS_WR_FLUSH_ERR, 0);
    uz_cq_assert_empty(p.a->scq, 10);
    uz_assert_mr_fill(p.dst, 0, UZ_GUARD, 4 * KIB, "the target");
    snap_expect(e, &snap, 0, (CrwCnt) { .parked = 1, .crw_first = 1,
                                        .flushed = 1 });
    uz_qp_set_state(p.a, UZ_QPS_RESET);
    uz_cq_assert_empty(p.a->scq, 10);
    snap_expect(e, &snap, 0, (CrwCnt) { .parked = 1, .crw_first = 1,
                                        .flushed = 1 });
    check_fresh_pair(e);
}

/*
 * max-crw-tags=4.  RESET: a parked CRW, one being written (held by RNR
 * NAKs) and one matched but waiting behind it complete with flush
 * errors; the receive WQE is discarded without a completion.  After
 * reconnecting, the whole table is free: four new CRWs park and match,
 * and nothing left from before is sent.
 */
static void case_flush_reset(Env *e)
{
    uint64_t ids[4] = { 0x430, 0x431, 0x432, 0x433 };
    uint8_t data[4][500];
    struct uz_cqe c[4];
    UzWr w;
    Snap snap;
    Pair p;
    int i;

    pair_make(e, &p, NULL);
    snap_take(e, &snap);
    uz_post_recv(p.a, 0x7e43, NULL, 0);
    uz_mr_fill(p.dst, 0, UZ_GUARD, 16 * KIB);
    park_crw(e, &p, 0x430, 0x840, false);
    park_crw(e, &p, 0x431, 0x841, false);
    park_crw(e, &p, 0x432, 0x842, true);
    /* Matched while the requester waits: READY, not started. */
    stcrw_done(&p, 0x5c31, tag_of(0x841), 4 * KIB, 300);
    uz_cq_assert_empty(p.a->scq, 5);
    uz_qp_set_state(p.a, UZ_QPS_RESET);
    expect_crws_flushed(&p, ids, 3);
    uz_cq_assert_empty(p.a->scq, 10);
    uz_cq_assert_empty(p.a->rcq, 1);
    g_assert_cmpint(uz_qp_state(p.a), ==, UZ_QPS_RESET);
    g_assert_cmpint(uz_events_count(p.a->n, &p.a->n->async_eq, UZ_EQE_QP_FATAL,
                                    p.a->qpn, 5), ==, 0);
    snap_expect(e, &snap, 0, (CrwCnt) { .parked = 3, .crw_first = 2,
                                        .flushed = 3 });
    uz_assert_mr_fill(p.dst, 0, UZ_GUARD, 16 * KIB, "no write happened");

    /* Reconnected: four entries free, nothing stale. */
    uz_qp_set_state(p.b, UZ_QPS_RESET);
    uz_rc_connect(p.a, p.b, NULL);
    snap_take(e, &snap);
    for (i = 0; i < 4; i++) {
        UzSge s = src_data(&p, i * KIB, data[i], sizeof(data[i]),
                           0x850 + i);

        w = crw_wr(0x440 + i, tag_of(0x850 + i), &s, 1);
        uz_sq_post(p.a, &w);
        uz_post_recv(p.b, 0x7e50 + i, NULL, 0);
    }
    uz_sq_ring(p.a);
    uz_counter_wait(&e->n[0], "crw_parked", snap.c[0].parked + 4);
    for (i = 0; i < 4; i++) {
        w = stcrw_wr(0x5c50 + i, tag_of(0x850 + i), p.dst, 8 * KIB + i * KIB,
                     sizeof(data[i]));
        uz_sq_post(p.b, &w);
    }
    uz_sq_ring(p.b);
    for (i = 0; i < 4; i++) {
        uz_sq_done(p.b, 0x5c50 + i, UZ_WC_STCRW, 0);
        rq_done_imm(p.b, 0x7e50 + i, sizeof(data[i]), tag_of(0x850 + i));
        ids[i] = 0x440 + i;
    }
    cq_take_set(p.a->scq, ids, 4, c, 0);
    for (i = 0; i < 4; i++) {
        uz_expect_sq(&c[i], ids[i], UZ_WC_CRW, p.a, sizeof(data[i]));
        uz_assert_mr(p.dst, 8 * KIB + i * KIB, data[i], sizeof(data[i]),
                     "after the reset");
        uz_assert_mr_fill(p.dst, 8 * KIB + i * KIB + sizeof(data[i]), UZ_GUARD,
                          KIB - sizeof(data[i]), "after a target");
    }
    uz_assert_mr_fill(p.dst, 0, UZ_GUARD, 8 * KIB, "no stale write");
    uz_cq_assert_empty(p.a->scq, 10);
    uz_cq_assert_empty(p.b->rcq, 1);
    snap_expect_a(e, &snap, (CrwCnt) { .parked = 4, .crw_first = 4 });
    cmd_obj(&e->n[0], UZ_CMD_DESTROY_QP, p.a->qpn);
    uz_cq_assert_empty(p.a->scq, 10);
    check_fresh_pair(e);
}

/*
 * Destroy: the parked CRWs' flush CQEs are in the send CQ when the
 * DESTROY_QP command completes.
 */
static void case_flush_destroy(Env *e)
{
    uint64_t ids[3] = { 0x440, 0x441, 0x442 };
    struct uz_cqe c;
    bool seen[3] = { false };
    Snap snap;
    Pair p;
    int i, k;

    pair_make(e, &p, NULL);
    snap_take(e, &snap);
    park_crw(e, &p, 0x440, 0x850, false);
    park_crw(e, &p, 0x441, 0x851, false);
    park_crw(e, &p, 0x442, 0x852, true);
    uz_cq_assert_empty(p.a->scq, 5);
    cmd_obj(&e->n[0], UZ_CMD_DESTROY_QP, p.a->qpn);
    for (k = 0; k < 3; k++) {
        /* No waiting: they are there already. */
        g_assert(uz_cq_poll(p.a->scq, &c));
        for (i = 0; i < 3 && ids[i] != c.wr_id; i++) {
            continue;
        }
        g_assert_cmpint(i, <, 3);
        g_assert(!seen[i]);
        seen[i] = true;
        uz_expect_err(&c, ids[i], UZ_WC_CRW, UZ_WC_STATUS_WR_FLUSH_ERR, 0, p.a);
    }
    uz_cq_assert_empty(p.a->scq, 10);
    snap_expect_a(e, &snap, (CrwCnt) { .parked = 3, .crw_first = 1,
                                       .flushed = 3 });
    check_fresh_pair(e);
}

/*
 * An offer waiting on a is forgotten when a is reset (directly, or after
 * ERR) and reconnected: a CRW with that tag parks, and a new STCRW puts
 * its data at the new target, not the old one.
 */
static void case_flush_offers_forgotten(Env *e)
{
    uint8_t data[800];
    int via_err;

    for (via_err = 0; via_err < 2; via_err++) {
        uint64_t tag = tag_of(0x860 + via_err);
        UzSge s;
        UzWr w;
        Snap snap;
        Pair p;

        pair_make(e, &p, NULL);
        snap_take(e, &snap);
        uz_mr_fill(p.dst, 0, UZ_GUARD, 8 * KIB);
        stcrw_done(&p, 0x5c60, tag, 0, sizeof(data));
        snap_expect(e, &snap, 0, (CrwCnt) { .offers = 1 });
        if (via_err) {
            uz_qp_set_state(p.a, UZ_QPS_ERR);
            uz_cq_assert_empty(p.a->scq, 10);
        }
        uz_qp_set_state(p.a, UZ_QPS_RESET);
        uz_qp_set_state(p.b, UZ_QPS_RESET);
        uz_cq_assert_empty(p.a->scq, 5);
        uz_rc_connect(p.a, p.b, NULL);

        s = src_data(&p, 0, data, sizeof(data), 0x860);
        w = crw_wr(0x460, tag, &s, 1);
        uz_post_recv(p.b, 0x7e60, NULL, 0);
        crw_park(e, &p, &w);
        uz_cq_assert_empty(p.a->scq, 5);
        uz_cq_assert_empty(p.b->rcq, 1);
        stcrw_done(&p, 0x5c61, tag, 4 * KIB, sizeof(data));
        uz_sq_done(p.a, 0x460, UZ_WC_CRW, sizeof(data));
        rq_done_imm(p.b, 0x7e60, sizeof(data), tag);
        uz_assert_mr_fill(p.dst, 0, UZ_GUARD, 4 * KIB, "the forgotten offer");
        uz_assert_mr(p.dst, 4 * KIB, data, sizeof(data), "the new offer");
        snap_expect_a(e, &snap, (CrwCnt) { .offers = 1, .parked = 1,
                                           .crw_first = 1 });
    }
}

/* ------------------------------------------------------------------ */
/* 9. Loss                                                            */
/* ------------------------------------------------------------------ */

#define LOSS_PAIRS      100
#define LOSS_BATCH      10
#define LOSS_MAX        (16 * KIB)
#define LOSS_SLOT       (LOSS_MAX + 512)
#define LOSS_STEP       (MS / 2)

/* One batch of case_loss: LOSS_BATCH pairs, at slot k of src and dst. */
typedef struct LossBatch {
    int b;                      /* the batch's number */
    uint64_t crw_ids[LOSS_BATCH], tags[LOSS_BATCH];
    uint32_t lens[LOSS_BATCH];
} LossBatch;

/* Batch @lb's data, its lengths, tags and ids, and b's receive WQEs. */
static void loss_prepare(Pair *p, LossBatch *lb, uint8_t *data)
{
    int k;

    uz_mr_fill(p->dst, 0, UZ_GUARD, LOSS_BATCH * LOSS_SLOT);
    for (k = 0; k < LOSS_BATCH; k++) {
        int i = lb->b * LOSS_BATCH + k;

        lb->lens[k] = (i * 7919u + 13) % (LOSS_MAX + 1);
        lb->tags[k] = tag_of(0x900 + i);
        lb->crw_ids[k] = 0xc900 + i;
        uz_pattern(data + k * LOSS_MAX, lb->lens[k], 0x900 + i);
        uz_mr_write(p->src, k * LOSS_SLOT, data + k * LOSS_MAX, lb->lens[k]);
        uz_post_recv(p->b, 0x7e900 + i, NULL, 0);
    }
}

/* a posts the CRWs of batch @lb from @from to before @to, and rings. */
static void loss_post_crws(Pair *p, const LossBatch *lb, int from, int to)
{
    int k;

    for (k = from; k < to; k++) {
        UzSge s = uz_mr_sge(p->src, k * LOSS_SLOT, lb->lens[k]);
        UzWr w = crw_wr(lb->crw_ids[k], lb->tags[k], &s, 1);

        uz_sq_post(p->a, &w);
    }
    uz_sq_ring(p->a);
}

/* b posts the STCRWs of batch @lb from @from to before @to, and rings. */
static void loss_post_stcrws(Pair *p, const LossBatch *lb, int from, int to)
{
    int k;

    for (k = from; k < to; k++) {
        UzWr w = stcrw_wr(0x5c900 + lb->b * LOSS_BATCH + k, lb->tags[k],
                          p->dst, k * LOSS_SLOT + 64, lb->lens[k]);

        uz_sq_post(p->b, &w);
    }
    uz_sq_ring(p->b);
}

/* b's STCRWs of batch @lb from @from to before @to complete, in order. */
static void loss_stcrws_done(Pair *p, const LossBatch *lb, int from, int to)
{
    struct uz_cqe c;
    int k;

    for (k = from; k < to; k++) {
        cq_wait_step(p->b->scq, &c, LOSS_STEP);
        uz_expect_sq(&c, 0x5c900 + lb->b * LOSS_BATCH + k, UZ_WC_STCRW,
                     p->b, 0);
    }
}

/*
 * Every CRW of batch @lb completes once, every STCRW, and every target
 * receives its write once with its data (@data) and guard bytes.
 */
static void loss_check(Pair *p, const LossBatch *lb, const uint8_t *data)
{
    int half = LOSS_BATCH / 2;
    bool seen[LOSS_BATCH] = { false };
    struct uz_cqe c[LOSS_BATCH];
    int k;

    cq_take_set(p->a->scq, lb->crw_ids, LOSS_BATCH, c, LOSS_STEP);
    for (k = 0; k < LOSS_BATCH; k++) {
        uz_expect_sq(&c[k], lb->crw_ids[k], UZ_WC_CRW, p->a, lb->lens[k]);
    }
    loss_stcrws_done(p, lb, 0, half);
    for (k = 0; k < LOSS_BATCH; k++) {
        int i;

        cq_wait_step(p->b->rcq, &c[0], LOSS_STEP);
        for (i = 0; i < LOSS_BATCH && (uint32_t)lb->tags[i] != c[0].imm_data;
             i++) {
            continue;
        }
        g_assert_cmpint(i, <, LOSS_BATCH);
        g_assert(!seen[i]);
        seen[i] = true;
        expect_recv_imm(&c[0], 0x7e900 + lb->b * LOSS_BATCH + k, p->b,
                        lb->lens[i], lb->tags[i]);
    }
    for (k = 0; k < LOSS_BATCH; k++) {
        uint64_t off = k * LOSS_SLOT;

        uz_assert_mr_fill(p->dst, off, UZ_GUARD, 64, "before a target");
        uz_assert_mr(p->dst, off + 64, data + k * LOSS_MAX, lb->lens[k],
                     "data over a lossy link");
        uz_assert_mr_fill(p->dst, off + 64 + lb->lens[k], UZ_GUARD,
                          LOSS_SLOT - 64 - lb->lens[k], "after a target");
    }
}

/*
 * After the batches: stray retransmissions and duplicates settle, then
 * nothing more comes; the counters tell of the CRWs, the drops and the
 * retransmissions; the fault rules go.
 */
static void loss_settle(Env *e, Pair *p, const Snap *snap)
{
    int k, nic;

    /* Let stray retransmissions and duplicates settle, then: nothing. */
    for (k = 0; k < 20; k++) {
        qtest_clock_step(qts(e), 5 * MS);
        uz_poll_pause(&e->n[0].d);
    }
    uz_cq_assert_empty(p->a->scq, 5);
    uz_cq_assert_empty(p->b->scq, 1);
    uz_cq_assert_empty(p->b->rcq, 1);
    g_assert_cmpint(uz_qp_state(p->a), ==, UZ_QPS_RTS);
    g_assert_cmpint(uz_qp_state(p->b), ==, UZ_QPS_RTS);
    snap_expect_a(e, snap, (CrwCnt) {
        .parked = LOSS_PAIRS / 2, .offers = LOSS_PAIRS / 2,
        .crw_first = LOSS_PAIRS / 2, .st_first = LOSS_PAIRS / 2,
    });
    g_test_message("drops %" PRIu64 "+%" PRIu64 ", retransmits %" PRIu64
                   "+%" PRIu64, counter(e, 0, "fault_drops"),
                   counter(e, 1, "fault_drops"),
                   counter(e, 0, "retransmits"),
                   counter(e, 1, "retransmits"));
    g_assert_cmpuint(counter(e, 0, "fault_drops") +
                     counter(e, 1, "fault_drops"), >, 0);
    g_assert_cmpuint(counter(e, 0, "retransmits") +
                     counter(e, 1, "retransmits"), >, 0);
    for (nic = 0; nic < 2; nic++) {
        fault_set(e, nic, "fault-drop", 0);
    }
}

/*
 * fault-drop 0.05 on both NICs: 100 CRW/STCRW pairs, in batches of ten,
 * half CRW first and half STCRW first, up to 16 KiB each: every one
 * completes exactly once with its data; the transport retransmitted.
 */
static void case_loss(Env *e)
{
    UzRcOpts rc = UZ_RC_OPTS_DEFAULT;
    PairOpts o = { .src_len = LOSS_BATCH * LOSS_SLOT,
                   .dst_len = LOSS_BATCH * LOSS_SLOT, .rc = &rc };
    g_autofree uint8_t *data = g_malloc(LOSS_BATCH * LOSS_MAX);
    int half = LOSS_BATCH / 2;
    LossBatch lb;
    Snap snap;
    Pair p;
    int b, nic;

    rc.timeout = 8;                     /* about 1 ms */
    pair_make(e, &p, &o);
    snap_take(e, &snap);
    for (nic = 0; nic < 2; nic++) {
        fault_seed(e, nic, nic ? 4242 : 1717);
        fault_set(e, nic, "fault-drop", 0.05);
    }
    for (b = 0; b < LOSS_PAIRS / LOSS_BATCH; b++) {
        lb.b = b;
        loss_prepare(&p, &lb, data);
        /* CRWs first for the first half: they park without the wire. */
        loss_post_crws(&p, &lb, 0, half);
        uz_counter_wait(&e->n[0], "crw_parked",
                        snap.c[0].parked + (b + 1) * half);
        /* STCRWs first for the second half: acknowledged offers. */
        loss_post_stcrws(&p, &lb, half, LOSS_BATCH);
        loss_stcrws_done(&p, &lb, half, LOSS_BATCH);
        /* The other halves. */
        loss_post_stcrws(&p, &lb, 0, half);
        loss_post_crws(&p, &lb, half, LOSS_BATCH);
        loss_check(&p, &lb, data);
    }
    loss_settle(e, &p, &snap);
}

/*
 * The same with selective repeat: a SACK names the lost packets of
 * matched CRWs' writes, which are rebuilt from the tag table and sent
 * again alone, as any other message.
 */
static void case_loss_sr(Env *e)
{
    case_loss(e);
    g_assert_cmpuint(counter(e, 0, "sr_resent") +
                     counter(e, 1, "sr_resent"), >, 0);
}

/* ------------------------------------------------------------------ */
/* Migration (spec 7.4)                                               */
/* ------------------------------------------------------------------ */

#define MIG_LEN         3000u       /* three packets */
#define MIG_SLOT        (4 * KIB)   /* each write's place in p->dst */
#define MIG_OFF         64u         /* its target in the place */

/*
 * Both NICs move to a new process while NIC 0's table holds a parked
 * CRW, an offer, and a matched CRW whose write the wire lost: on the
 * new side the write is sent again and completes once; the offer takes
 * a CRW posted now and the parked CRW an STCRW; each write lands once
 * with its bytes, and the crw_* counters came along.
 */
static void case_migrate(Env *e)
{
    g_autofree uint8_t *data = g_malloc(3 * MIG_LEN);
    UzDev *devs[2] = { &e->n[0].d, &e->n[1].d };
    struct uz_cqe c;
    UzSge s[3];
    UzWr crw[3];
    uint64_t drops;
    Snap snap;
    Pair p;
    int i;

    pair_make(e, &p, NULL);
    uz_mr_fill(p.dst, 0, UZ_GUARD, 3 * MIG_SLOT);
    for (i = 0; i < 3; i++) {
        s[i] = src_data(&p, i * MIG_SLOT, data + i * MIG_LEN, MIG_LEN,
                        0x3a0 + i);
        crw[i] = crw_wr(0x0c2a0000000003a0ull + i, tag_of(0x3a0 + i), &s[i],
                        1);
        uz_post_recv(p.b, 0x7e0 + i, NULL, 0);
    }
    snap_take(e, &snap);
    crw_park(e, &p, &crw[0]);
    stcrw_done(&p, 0x5c1, crw[1].tag, MIG_SLOT + MIG_OFF, MIG_LEN);
    stcrw_done(&p, 0x5c2, crw[2].tag, 2 * MIG_SLOT + MIG_OFF, MIG_LEN);
    drops = counter(e, 0, "fault_drops");
    drop_all(e, 0, true);
    uz_post_send(p.a, &crw[2]);
    uz_counter_wait(&e->n[0], "fault_drops", drops + npkts(MIG_LEN));

    uz_migrate(&e->m, devs, 2);
    drop_all(e, 0, false);
    /* The links come up on the new side as its virtual clock runs. */
    cq_wait_step(p.a->scq, &c, MS);
    uz_expect_sq(&c, crw[2].wr_id, UZ_WC_CRW, p.a, MIG_LEN);
    rq_done_imm(p.b, 0x7e0, MIG_LEN, crw[2].tag);
    uz_post_send(p.a, &crw[1]);
    uz_sq_done(p.a, crw[1].wr_id, UZ_WC_CRW, MIG_LEN);
    rq_done_imm(p.b, 0x7e1, MIG_LEN, crw[1].tag);
    stcrw_done(&p, 0x5c0, crw[0].tag, MIG_OFF, MIG_LEN);
    uz_sq_done(p.a, crw[0].wr_id, UZ_WC_CRW, MIG_LEN);
    rq_done_imm(p.b, 0x7e2, MIG_LEN, crw[0].tag);

    for (i = 0; i < 3; i++) {
        uint64_t at = i * MIG_SLOT;

        uz_assert_mr_fill(p.dst, at, UZ_GUARD, MIG_OFF, "before the write");
        uz_assert_mr(p.dst, at + MIG_OFF, data + i * MIG_LEN, MIG_LEN,
                     "conditional write");
        uz_assert_mr_fill(p.dst, at + MIG_OFF + MIG_LEN, UZ_GUARD,
                          MIG_SLOT - MIG_OFF - MIG_LEN, "after the write");
    }
    snap_expect(e, &snap, 0, (CrwCnt) { .parked = 1, .offers = 2,
                                        .crw_first = 1, .st_first = 2 });
    snap_expect(e, &snap, 1, (CrwCnt) { 0 });
    uz_cq_assert_empty(p.a->scq, 2);
    uz_cq_assert_empty(p.b->rcq, 1);
    g_assert_cmpint(uz_qp_state(p.a), ==, UZ_QPS_RTS);
    g_assert_cmpint(uz_qp_state(p.b), ==, UZ_QPS_RTS);
    check_fresh_pair(e);
}

/* ------------------------------------------------------------------ */

/*
 * The table size is a device property of 1..4096 entries (spec 1.5): a
 * device hot-plugged with 0 or 4097 is refused with a message naming it,
 * and one with 4096 is created.
 */
static void case_table_size_prop(Env *e)
{
    static const struct {
        int val;
        bool ok;
    } sizes[] = { { 0, false }, { 4097, false }, { 4096, true } };
    int i;

    for (i = 0; i < ARRAY_SIZE(sizes); i++) {
        g_autofree char *id = g_strdup_printf("uzp%d", i);
        QDict *r = qtest_qmp(qts(e), "{'execute': 'device_add', 'arguments': "
                             "{'driver': 'uzura', 'id': %s, 'bus': 'rp0', "
                             "'max-crw-tags': %d}}", id, sizes[i].val);

        if (sizes[i].ok) {
            g_assert(qdict_haskey(r, "return"));
        } else {
            const char *desc;

            g_assert(qdict_haskey(r, "error"));
            desc = qdict_get_str(qdict_get_qdict(r, "error"), "desc");
            g_test_message("device_add: %s", desc);
            g_assert(strstr(desc, "max-crw-tags takes 1..4096"));
        }
        qobject_unref(r);
    }
}

typedef struct Case {
    const char *name;
    void (*fn)(Env *e);
    const char *extra;          /* QEMU arguments */
    bool wire;                  /* a socket on the hub */
} Case;

static const Case cases[] = {
    { "crw-first", case_crw_first },
    { "stcrw-first", case_stcrw_first },
    { "offer-length", case_offer_length },
    { "sgl-inline", case_sgl_inline },
    { "no-block", case_no_block },
    { "ready-first", case_ready_first },
    { "unsignaled", case_unsignaled },
    { "many-tags", case_many_tags },
    { "tag-match", case_tag_match },
    { "symmetric", case_symmetric },
    { "wire", case_wire, NULL, true },
    { "no-time-limit", case_no_time_limit },
    { "target-srq", case_target_srq },
    { "retransmit", case_retransmit },
    { "err/dup-tag", case_err_dup_tag },
    { "tag-reuse/crw", case_tag_reuse_crw },
    { "tag-reuse/stcrw", case_tag_reuse_stcrw },
    { "err/malformed", case_err_malformed },
    { "err/retry-exhausted", case_err_retry_exhausted },
    { "err/table-size-prop", case_table_size_prop,
      "-device pcie-root-port,id=rp0,chassis=1,addr=06.0" },
    { "err/table-full", case_err_table_full, SMALL_TABLE },
    { "err/table-full-offers", case_err_table_full_offers, SMALL_TABLE },
    { "err/stcrw-dup", case_err_stcrw_dup },
    { "err/stcrw-table-full", case_err_stcrw_full, SMALL_TABLE },
    { "err/remote-rkey", case_err_remote_rkey },
    { "err/remote-rkey-offer-first", case_err_remote_rkey_offer_first },
    { "err/remote-mr-access", case_err_remote_mr_access },
    { "err/remote-qp-access", case_err_remote_qp_access },
    { "err/remote-bounds", case_err_remote_bounds },
    { "err/too-long", case_err_too_long },
    { "err/local", case_err_local },
    { "flush/err", case_flush_err },
    { "flush/err-in-sq", case_flush_err_in_sq },
    { "flush/err-writing", case_flush_err_writing },
    { "flush/reset", case_flush_reset, SMALL_TABLE },
    { "flush/destroy", case_flush_destroy },
    { "flush/offers-forgotten", case_flush_offers_forgotten },
    { "loss", case_loss },
    { "loss-sr", case_loss_sr, "-global uzura.recovery=sr" },
    { "migrate", case_migrate },
};

static void run_case(gconstpointer data)
{
    const Case *c = data;
    Env e;

    env_start(&e, c->extra, c->wire);
    c->fn(&e);
    env_stop(&e);
}

int main(int argc, char **argv)
{
    int i;

    g_test_init(&argc, &argv, NULL);
    for (i = 0; i < ARRAY_SIZE(cases); i++) {
        g_autofree char *path = g_strdup_printf("/uzura/crw/%s",
                                                cases[i].name);

        qtest_add_data_func(path, &cases[i], run_case);
    }
    return g_test_run();
}
