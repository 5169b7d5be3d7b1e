/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uzura: the IBA 1.5 placement operations (device 0.13, UZ_CAP_PLACEMENT).
 * An ATOMIC WRITE puts the 8 bytes its WQE holds, whole, at an aligned
 * address of a peer's MR that allows REMOTE_WRITE, through a QP that
 * does; a FLUSH asks the peer to make the writes before it globally
 * visible in a range, or in the whole MR its rkey names, which must allow
 * UZ_ACCESS_FLUSH_GLOBAL; persistence, which no memory here has, is
 * refused.  Both are answered by a READ response of no bytes, take a slot
 * of the responder's READ/atomic ring and complete in order with READs;
 * a duplicate is answered again from its slot and not executed again.  A
 * WQE the requester cannot send completes LOC_QP_OP_ERR, a request the
 * responder refuses REM_ACCESS_ERR.
 */
#include "uzura-pair.h"

#define FLUSH_MR_LEN    (3 * UZ_PAGE_SIZE)
#define ROUNDS          8           /* READ, FLUSH, ATOMIC WRITE each */

/* The pair, and on uz1 an MR that also takes FLUSHes. */
static UzMr *pl_start(Pair *p)
{
    pair_start(p);
    g_assert(uz_rd(&p->n[0].d, UZ_REG_CAPS) & UZ_CAP_PLACEMENT);
    return uz_mr_reg(&p->n[1], FLUSH_MR_LEN,
                     UZ_ACCESS_ALL | UZ_ACCESS_FLUSH_GLOBAL);
}

static void word_put(UzMr *mr, uint64_t off, uint64_t v)
{
    uint64_t le = cpu_to_le64(v);

    uz_mr_write(mr, off, &le, 8);
}

static uint64_t word_get(UzMr *mr, uint64_t off)
{
    uint64_t le;

    uz_mr_read(mr, off, &le, 8);
    return le64_to_cpu(le);
}

static UzWr aw_wr(uint64_t wr_id, UzMr *mr, uint64_t roff, uint64_t val)
{
    return (UzWr) {
        .wr_id = wr_id, .opcode = UZ_WR_ATOMIC_WRITE,
        .flags = UZ_WQE_F_SIGNALED, .remote_addr = uz_mr_va(mr, roff),
        .rkey = mr->key, .compare_add = val,
    };
}

static UzWr flush_wr(uint64_t wr_id, UzMr *mr, uint64_t roff, uint64_t len,
                     uint8_t type, uint8_t level)
{
    return (UzWr) {
        .wr_id = wr_id, .opcode = UZ_WR_FLUSH, .flags = UZ_WQE_F_SIGNALED,
        .remote_addr = uz_mr_va(mr, roff), .rkey = mr->key,
        .flush_length = len, .flush_type = type, .flush_level = level,
    };
}

static UzWr read_wr(uint64_t wr_id, const UzSge *s, UzMr *mr, uint64_t roff)
{
    return (UzWr) {
        .wr_id = wr_id, .opcode = UZ_WR_RDMA_READ,
        .flags = UZ_WQE_F_SIGNALED, .sge = s, .num_sge = 1,
        .remote_addr = uz_mr_va(mr, roff), .rkey = mr->key,
    };
}

/* An ATOMIC WRITE of @val at @roff of mb; the bytes around stay. */
static void aw_case(Pair *p, uint64_t roff, uint64_t val, uint64_t wr_id)
{
    UzWr wr = aw_wr(wr_id, p->mb, roff, val);

    uz_mr_fill(p->mb, roff - 8, UZ_GUARD, 24);
    word_put(p->mb, roff, ~val);
    uz_post_send(p->qa, &wr);
    uz_sq_done(p->qa, wr_id, UZ_WC_ATOMIC_WRITE, 8);
    g_assert_cmphex(word_get(p->mb, roff), ==, val);
    uz_assert_mr_fill(p->mb, roff - 8, UZ_GUARD, 8, "before the target");
    uz_assert_mr_fill(p->mb, roff + 8, UZ_GUARD, 8, "after the target");
}

static void flush_ok(Pair *p, const UzWr *wr)
{
    uz_post_send(p->qa, wr);
    uz_sq_done(p->qa, wr->wr_id, UZ_WC_FLUSH, 0);
}

/*
 * @wr on fresh QPs, the responder's accepting remote rights @access: it
 * is refused with a NAK, the requester completes @status (refused:
 * REM_ACCESS_ERR), and both QPs fail.
 */
static void refused_as(Pair *p, const UzWr *wr, uint32_t access,
                       uint8_t status)
{
    UzQp *a = uz_qp_create(&p->n[0], UZ_QPT_RC, NULL, NULL, NULL, 0);
    UzQp *b = uz_qp_create(&p->n[1], UZ_QPT_RC, NULL, NULL, NULL, 0);

    uz_rc_connect_access(a, b, access, NULL);
    uz_post_send(a, wr);
    uz_sq_err(a, wr->wr_id, uz_wc_opcode(wr->opcode), status, 0);
    g_assert_cmpint(uz_qp_state(a), ==, UZ_QPS_ERR);
    g_assert_cmpint(uz_qp_state(b), ==, UZ_QPS_ERR);
    uz_cq_assert_empty(a->scq, 5);
}

static void refused(Pair *p, const UzWr *wr, uint32_t access)
{
    refused_as(p, wr, access, UZ_WC_STATUS_REM_ACCESS_ERR);
}

/*
 * @wr, which the requester cannot send, and a WRITE behind it on @a:
 * LOC_QP_OP_ERR with BAD_WQE, the WRITE flushed, the peer @b untouched.
 */
static void malformed(Pair *p, UzQp *a, UzQp *b, const UzWr *wr)
{
    UzSge s = uz_mr_sge(p->ma, 0, 64);
    UzWr next = {
        .wr_id = wr->wr_id + 0x80, .opcode = UZ_WR_RDMA_WRITE,
        .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1,
        .remote_addr = uz_mr_va(p->mb, 0), .rkey = p->mb->key,
    };

    uz_sq_post(a, wr);
    uz_sq_post(a, &next);
    uz_sq_ring(a);
    uz_sq_err(a, wr->wr_id, uz_wc_opcode(wr->opcode),
              UZ_WC_STATUS_LOC_QP_OP_ERR, UZ_VERR_BAD_WQE);
    uz_sq_err(a, next.wr_id, UZ_WC_RDMA_WRITE, UZ_WC_STATUS_WR_FLUSH_ERR, 0);
    g_assert_cmpint(uz_qp_state(a), ==, UZ_QPS_ERR);
    g_assert_cmpint(uz_qp_state(b), ==, UZ_QPS_RTS);
    uz_cq_assert_empty(a->scq, 5);
}

/* ------------------------------------------------------------------ */

static void test_atomic_write(void)
{
    const uint64_t v = 0x0102030405060708ull;
    static const uint8_t bytes[8] = { 8, 7, 6, 5, 4, 3, 2, 1 };
    UzSge s;
    UzMr *nw, *dev;
    UzWr wr;
    Pair p;
    int i;

    pl_start(&p);
    /* Within a page, the last 8 bytes of one, the first of the next. */
    aw_case(&p, 16, v, 0x100);
    uz_assert_mr(p.mb, 16, bytes, 8, "the value in memory order");
    aw_case(&p, UZ_PAGE_SIZE - 8, ~v, 0x101);
    aw_case(&p, 2 * UZ_PAGE_SIZE, 0, 0x102);

    /* Three to one word in a batch: the last stays, a READ after sees it. */
    for (i = 0; i < 3; i++) {
        wr = aw_wr(0x110 + i, p.mb, 256, v + i);
        uz_sq_post(p.qa, &wr);
    }
    s = uz_mr_sge(p.ma, 64, 8);
    wr = read_wr(0x113, &s, p.mb, 256);
    uz_sq_post(p.qa, &wr);
    uz_sq_ring(p.qa);
    for (i = 0; i < 3; i++) {
        uz_sq_done(p.qa, 0x110 + i, UZ_WC_ATOMIC_WRITE, 8);
    }
    uz_sq_done(p.qa, 0x113, UZ_WC_RDMA_READ, 8);
    g_assert_cmphex(word_get(p.ma, 64), ==, v + 2);
    g_assert_cmphex(word_get(p.mb, 256), ==, v + 2);
    uz_cq_assert_empty(p.qb->rcq, 1);

    /* An MR with the atomic right but not REMOTE_WRITE. */
    nw = uz_mr_reg(&p.n[1], UZ_PAGE_SIZE, UZ_ACCESS_LOCAL_WRITE |
                   UZ_ACCESS_REMOTE_READ | UZ_ACCESS_REMOTE_ATOMIC);
    word_put(nw, 64, v);
    wr = aw_wr(0x120, nw, 64, ~v);
    refused(&p, &wr, UZ_ACCESS_ALL);
    g_assert_cmphex(word_get(nw, 64), ==, v);
    /* A wrong key byte; a QP without REMOTE_WRITE; past the MR's end. */
    word_put(p.mb, 64, v);
    wr = aw_wr(0x121, p.mb, 64, ~v);
    wr.rkey ^= 0x80;
    refused(&p, &wr, UZ_ACCESS_ALL);
    wr = aw_wr(0x122, p.mb, 64, ~v);
    refused(&p, &wr, UZ_ACCESS_REMOTE_READ | UZ_ACCESS_REMOTE_ATOMIC);
    g_assert_cmphex(word_get(p.mb, 64), ==, v);
    wr = aw_wr(0x123, p.mb, p.mb->len, ~v);
    refused(&p, &wr, UZ_ACCESS_ALL);
    /* An MR whose page is the responder's own doorbell BAR: no DMA. */
    dev = uz_mr_reg(&p.n[1], UZ_PAGE_SIZE, UZ_ACCESS_ALL);
    uz_mr_set_page(dev, 0, p.n[1].d.db.addr);
    wr = aw_wr(0x125, dev, 0, ~v);
    refused_as(&p, &wr, UZ_ACCESS_ALL, UZ_WC_STATUS_REM_OP_ERR);
    /* The pair's own QPs go on. */
    aw_case(&p, 64, ~v, 0x124);
    pair_stop(&p);
}

static void test_flush(void)
{
    g_autofree uint8_t *data = g_malloc(MSG_LEN);
    UzSge s;
    UzMr *mf;
    UzWr wr;
    Pair p;

    mf = pl_start(&p);
    /* A WRITE, then a FLUSH of what it wrote: in order. */
    uz_pattern(data, MSG_LEN, 7);
    uz_mr_write(p.ma, 0, data, MSG_LEN);
    s = uz_mr_sge(p.ma, 0, MSG_LEN);
    wr = (UzWr) {
        .wr_id = 0x200, .opcode = UZ_WR_RDMA_WRITE,
        .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1,
        .remote_addr = uz_mr_va(mf, 100), .rkey = mf->key,
    };
    uz_sq_post(p.qa, &wr);
    wr = flush_wr(0x201, mf, 100, MSG_LEN, UZ_FLUSH_GLOBAL, UZ_FLUSH_RANGE);
    uz_sq_post(p.qa, &wr);
    uz_sq_ring(p.qa);
    uz_sq_done(p.qa, 0x200, UZ_WC_RDMA_WRITE, MSG_LEN);
    uz_sq_done(p.qa, 0x201, UZ_WC_FLUSH, 0);
    uz_assert_mr(mf, 100, data, MSG_LEN, "written data");

    /* The MR's last bytes; all of it; at MR level, any address and length. */
    wr = flush_wr(0x202, mf, FLUSH_MR_LEN - 64, 64, UZ_FLUSH_GLOBAL,
                  UZ_FLUSH_RANGE);
    flush_ok(&p, &wr);
    wr = flush_wr(0x203, mf, 0, FLUSH_MR_LEN, UZ_FLUSH_GLOBAL,
                  UZ_FLUSH_RANGE);
    flush_ok(&p, &wr);
    wr = flush_wr(0x204, mf, 0, 12345678, UZ_FLUSH_GLOBAL, UZ_FLUSH_MR);
    wr.remote_addr = 0;
    flush_ok(&p, &wr);
    uz_cq_assert_empty(p.qb->rcq, 1);

    /* mb does not allow FLUSH_GLOBAL, in a range or as a whole. */
    wr = flush_wr(0x210, p.mb, 0, 64, UZ_FLUSH_GLOBAL, UZ_FLUSH_RANGE);
    refused(&p, &wr, UZ_ACCESS_ALL);
    wr = flush_wr(0x211, p.mb, 0, 0, UZ_FLUSH_GLOBAL, UZ_FLUSH_MR);
    refused(&p, &wr, UZ_ACCESS_ALL);
    /* No MR persists. */
    wr = flush_wr(0x212, mf, 0, 64, UZ_FLUSH_PERSISTENT, UZ_FLUSH_RANGE);
    refused(&p, &wr, UZ_ACCESS_ALL);
    wr = flush_wr(0x213, mf, 0, 0, UZ_FLUSH_GLOBAL | UZ_FLUSH_PERSISTENT,
                  UZ_FLUSH_MR);
    refused(&p, &wr, UZ_ACCESS_ALL);
    /* Past the end, before the start; a wrong key byte at MR level. */
    wr = flush_wr(0x214, mf, FLUSH_MR_LEN - 64, 128, UZ_FLUSH_GLOBAL,
                  UZ_FLUSH_RANGE);
    refused(&p, &wr, UZ_ACCESS_ALL);
    wr = flush_wr(0x215, mf, 0, 64, UZ_FLUSH_GLOBAL, UZ_FLUSH_RANGE);
    wr.remote_addr -= 8;
    refused(&p, &wr, UZ_ACCESS_ALL);
    wr = flush_wr(0x216, mf, 0, 0, UZ_FLUSH_GLOBAL, UZ_FLUSH_MR);
    wr.rkey ^= 0x80;
    refused(&p, &wr, UZ_ACCESS_ALL);
    /* An empty range still needs a key that allows the FLUSH. */
    wr = flush_wr(0x217, p.mb, 0, 0, UZ_FLUSH_GLOBAL, UZ_FLUSH_RANGE);
    refused(&p, &wr, UZ_ACCESS_ALL);
    wr = flush_wr(0x218, mf, 0, 0, UZ_FLUSH_GLOBAL, UZ_FLUSH_RANGE);
    wr.rkey ^= 0x80;
    refused(&p, &wr, UZ_ACCESS_ALL);
    pair_stop(&p);
}

static uint64_t round_val(int k)
{
    return 0x5a5a5a5a00000000ull + k * 0x10001ull;
}

static void test_order(void)
{
    static const struct {
        uint8_t opcode, type, level;
        uint64_t roff, len;
        bool sge;
    } bad[] = {
        /* No placement type, an unknown one, an unknown level. */
        { UZ_WR_FLUSH, 0, UZ_FLUSH_RANGE, 0, 64, false },
        { UZ_WR_FLUSH, 1u << 2, UZ_FLUSH_RANGE, 0, 64, false },
        { UZ_WR_FLUSH, UZ_FLUSH_GLOBAL, 2, 0, 64, false },
        /* Longer than a RETH names; with data. */
        { UZ_WR_FLUSH, UZ_FLUSH_GLOBAL, UZ_FLUSH_RANGE, 0,
          (1ull << 31) + 1, false },
        { UZ_WR_FLUSH, UZ_FLUSH_GLOBAL, UZ_FLUSH_RANGE, 0, 64, true },
        /* Not 8-aligned; with data. */
        { UZ_WR_ATOMIC_WRITE, 0, 0, 4, 0, false },
        { UZ_WR_ATOMIC_WRITE, 0, 0, 0, 0, true },
    };
    UzQp *a, *b;
    UzSge s;
    UzMr *mf;
    UzWr wr;
    Pair p;
    int k;

    mf = pl_start(&p);
    /*
     * Round k READs word k - 1 of mf, FLUSHes them all and ATOMIC WRITEs
     * word k: more requests than the responder's ring has slots, each
     * READ after the ATOMIC WRITE whose word it reads.
     */
    word_put(mf, 0, round_val(0));
    for (k = 1; k <= ROUNDS; k++) {
        s = uz_mr_sge(p.ma, 8 * (k - 1), 8);
        wr = read_wr(0x300 + 4 * k, &s, mf, 8 * (k - 1));
        uz_sq_post(p.qa, &wr);
        wr = flush_wr(0x301 + 4 * k, mf, 0, 8 * (ROUNDS + 1),
                      UZ_FLUSH_GLOBAL, UZ_FLUSH_RANGE);
        uz_sq_post(p.qa, &wr);
        wr = aw_wr(0x302 + 4 * k, mf, 8 * k, round_val(k));
        uz_sq_post(p.qa, &wr);
    }
    uz_sq_ring(p.qa);
    for (k = 1; k <= ROUNDS; k++) {
        uz_sq_done(p.qa, 0x300 + 4 * k, UZ_WC_RDMA_READ, 8);
        uz_sq_done(p.qa, 0x301 + 4 * k, UZ_WC_FLUSH, 0);
        uz_sq_done(p.qa, 0x302 + 4 * k, UZ_WC_ATOMIC_WRITE, 8);
    }
    for (k = 1; k <= ROUNDS; k++) {
        g_assert_cmphex(word_get(p.ma, 8 * (k - 1)), ==, round_val(k - 1));
        g_assert_cmphex(word_get(mf, 8 * k), ==, round_val(k));
    }
    uz_cq_assert_empty(p.qa->scq, 5);

    /* WQEs no requester sends: the pair's QPs first, then fresh ones. */
    for (k = 0; k < ARRAY_SIZE(bad); k++) {
        s = uz_mr_sge(p.ma, 0, 8);
        wr = (UzWr) {
            .wr_id = 0x380 + k, .opcode = bad[k].opcode,
            .flags = UZ_WQE_F_SIGNALED, .sge = &s,
            .num_sge = bad[k].sge ? 1 : 0,
            .remote_addr = uz_mr_va(mf, bad[k].roff), .rkey = mf->key,
            .compare_add = round_val(k), .flush_length = bad[k].len,
            .flush_type = bad[k].type, .flush_level = bad[k].level,
        };
        if (k) {
            pair_fresh_qps(&p, &a, &b);
        } else {
            a = p.qa;
            b = p.qb;
        }
        malformed(&p, a, b, &wr);
    }
    /* Nothing was written by the ATOMIC WRITEs refused. */
    g_assert_cmphex(word_get(mf, 0), ==, round_val(0));
    pair_stop(&p);
}

/*
 * The answer to an ATOMIC WRITE is lost: the requester times out and
 * sends it again, the responder answers the duplicate from its slot and
 * does not write again (the word changed meanwhile stays changed).  The
 * same for a FLUSH.
 */
static void test_duplicate(void)
{
    const uint64_t v = 0x1122334455667788ull;
    uint64_t to, dups, drops;
    struct uz_cqe c;
    UzMr *mf;
    UzWr wr;
    Pair p;

    mf = pl_start(&p);
    to = uz_counter(&p.m, 0, "retry_timeouts");
    dups = uz_counter(&p.m, 1, "duplicates");
    drops = uz_counter(&p.m, 1, "fault_drops");

    rules_set(&p, 1, "op=read-response-only nth=1 drop");
    word_put(p.mb, 512, 0);
    wr = aw_wr(0x400, p.mb, 512, v);
    uz_post_send(p.qa, &wr);
    uz_counter_wait(&p.n[1], "fault_drops", drops + 1);
    g_assert_cmphex(word_get(p.mb, 512), ==, v);
    word_put(p.mb, 512, ~v);
    uz_cq_wait_clock(p.qa->scq, &c, STEP_NS, 100);
    uz_expect_sq(&c, 0x400, UZ_WC_ATOMIC_WRITE, p.qa, 8);
    g_assert_cmphex(word_get(p.mb, 512), ==, ~v);
    g_assert_cmpuint(rule_acted(&p, 1, 1), ==, 1);
    g_assert_cmpuint(MOVED(&p, 0, "retry_timeouts", to), ==, 1);
    g_assert_cmpuint(MOVED(&p, 1, "duplicates", dups), ==, 1);

    rules_set(&p, 1, "op=read-response-only nth=1 drop");
    wr = flush_wr(0x401, mf, 0, 64, UZ_FLUSH_GLOBAL, UZ_FLUSH_RANGE);
    uz_post_send(p.qa, &wr);
    uz_counter_wait(&p.n[1], "fault_drops", drops + 2);
    uz_cq_wait_clock(p.qa->scq, &c, STEP_NS, 100);
    uz_expect_sq(&c, 0x401, UZ_WC_FLUSH, p.qa, 0);
    g_assert_cmpuint(rule_acted(&p, 1, 1), ==, 1);
    g_assert_cmpuint(MOVED(&p, 0, "retry_timeouts", to), ==, 2);
    g_assert_cmpuint(MOVED(&p, 1, "duplicates", dups), ==, 2);

    /* Both QPs go on. */
    aw_case(&p, 1024, v, 0x402);
    g_assert_cmpint(uz_qp_state(p.qb), ==, UZ_QPS_RTS);
    pair_stop(&p);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qtest_add_func("/uzura/placement/atomic-write", test_atomic_write);
    qtest_add_func("/uzura/placement/flush", test_flush);
    qtest_add_func("/uzura/placement/order", test_order);
    qtest_add_func("/uzura/placement/duplicate", test_duplicate);
    return g_test_run();
}
