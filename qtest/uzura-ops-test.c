/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qtest for the uzura NIC's RDMA operations between two NICs on one hub:
 * RC SEND, RDMA WRITE, RDMA READ and atomics at many sizes and with
 * scatter/gather lists, completion signalling and fences, solicited
 * events, UD and GSI traffic with its GRH area, SRQs and their limit,
 * concurrent QPs racing on the same memory, WQEs posted before RTS, and
 * many QPs sharing the link.  Every test boots its own machine; data is
 * checked byte for byte and every field of every CQE is checked.
 */
#include "uzura-verbs.h"

#define BIG             (4u << 20)
#define QKEY            0x11223344u

typedef struct Ops {
    UzMachine m;
    UzNode a, b;                /* NIC 0 (10.0.0.1) and NIC 1 (10.0.0.2) */
} Ops;

static const size_t sizes[] = {
    0, 1, 1023, 1024, 1025, 4096, 65536, BIG,
};

static void ops_start(Ops *t)
{
    uz_machine_start(&t->m, 2, NULL);
    uz_node_start(&t->a, &t->m, 0);
    uz_node_start(&t->b, &t->m, 1);
}

static void ops_stop(Ops *t)
{
    uz_node_stop(&t->a);
    uz_node_stop(&t->b);
    uz_machine_stop(&t->m);
}

/* An RC QP on each NIC, each with CQs of its own, connected. */
static void rc_pair(Ops *t, UzQp **qa, UzQp **qb, uint8_t flags_a)
{
    *qa = uz_qp_create(&t->a, UZ_QPT_RC, NULL, NULL, NULL, flags_a);
    *qb = uz_qp_create(&t->b, UZ_QPT_RC, NULL, NULL, NULL, 0);
    uz_rc_connect(*qa, *qb, NULL);
}

/* ------------------------------------------------------------------ */
/* 1. RC SEND                                                         */
/* ------------------------------------------------------------------ */

static void test_rc_send(void)
{
    Ops t;
    UzQp *qa, *qb;
    UzMr *ma, *mb;
    g_autofree uint8_t *buf = g_malloc(BIG);
    int k, imm;

    ops_start(&t);
    rc_pair(&t, &qa, &qb, 0);
    ma = uz_mr_reg(&t.a, BIG + 64, UZ_ACCESS_ALL);
    mb = uz_mr_reg(&t.b, BIG + 512, UZ_ACCESS_ALL);
    for (k = 0; k < ARRAY_SIZE(sizes); k++) {
        for (imm = 0; imm < 2; imm++) {
            size_t len = sizes[k];
            uint32_t id = k * 2 + imm;
            uint32_t immv = 0xa0b0c000u | id;
            UzSge s = uz_mr_sge(ma, 5, len);
            /* With immediate: a receive buffer of exactly the size. */
            UzSge r = uz_mr_sge(mb, 3, imm ? len : len + 256);
            UzWr wr = {
                .wr_id = 0x5e0d0000ull | id,
                .opcode = imm ? UZ_WR_SEND_IMM : UZ_WR_SEND,
                .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1,
                .imm = immv,
            };

            g_test_message("SEND%s of %zu bytes", imm ? " with imm" : "",
                           len);
            uz_pattern(buf, len, id);
            uz_mr_write(ma, 5, buf, len);
            uz_mr_fill(mb, 0, UZ_GUARD, len + 256 + 3);
            uz_post_recv(qb, 0x7ec0000ull | id, &r, 1);
            uz_post_send(qa, &wr);
            uz_sq_done(qa, wr.wr_id, UZ_WC_SEND, len);
            uz_rq_done(qb, 0x7ec0000ull | id, UZ_WC_RECV, len,
                       imm ? UZ_WC_F_IMM : 0, immv);
            uz_assert_mr(mb, 3, buf, len, "received data");
            uz_assert_mr_fill(mb, 0, UZ_GUARD, 3, "before the receive buffer");
            uz_assert_mr_fill(mb, 3 + len, UZ_GUARD, 256, "after the message");
        }
    }
    uz_cq_assert_empty(qa->scq, 10);
    uz_cq_assert_empty(qb->rcq, 10);
    uz_cq_assert_empty(qa->rcq, 1);
    uz_cq_assert_empty(qb->scq, 1);
    ops_stop(&t);
}

/*
 * CQ rings in pages (UZ_CQF_PAGE_LIST): the send CQ spans two pages that
 * lie in reverse order in memory, the receive CQ a part of one page; both
 * wrap several times, every CQE in order.  A bad page list is refused, and
 * a page entry made bad after creation stops the CQ with an error event.
 */
static void test_cq_pages(void)
{
    Ops t;
    UzCq *scq, *rcq;
    UzQp *qa, *qb;
    UzMr *ma, *mb;
    struct uz_cmd_create_cq c = { 0 };
    uint64_t list, bad;
    int i, k;

    ops_start(&t);
    scq = uz_cq_create_paged(&t.a, 8);
    rcq = uz_cq_create_paged(&t.b, 3);
    qa = uz_qp_create(&t.a, UZ_QPT_RC, scq, NULL, NULL, 0);
    qb = uz_qp_create(&t.b, UZ_QPT_RC, NULL, rcq, NULL, 0);
    uz_rc_connect(qa, qb, NULL);
    ma = uz_mr_reg(&t.a, 4096, UZ_ACCESS_ALL);
    mb = uz_mr_reg(&t.b, 4096, UZ_ACCESS_ALL);
    for (i = 0; i < 600; i += 4) {
        for (k = i; k < i + 4; k++) {
            UzSge r = uz_mr_sge(mb, 64 * (k % 4), 64);
            UzSge s = uz_mr_sge(ma, 0, 1 + k % 64);
            UzWr wr = {
                .wr_id = 0xc9000 + k, .opcode = UZ_WR_SEND,
                .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1,
            };

            uz_post_recv(qb, 0xc9800 + k, &r, 1);
            uz_post_send(qa, &wr);
        }
        for (k = i; k < i + 4; k++) {
            uz_sq_done(qa, 0xc9000 + k, UZ_WC_SEND, 1 + k % 64);
            uz_rq_done(qb, 0xc9800 + k, UZ_WC_RECV, 1 + k % 64, 0, 0);
        }
    }
    uz_cq_assert_empty(scq, 10);
    uz_cq_assert_empty(rcq, 10);

    /* Unaligned page, unreadable list, unknown flag, too deep. */
    list = uz_alloc_pages(&t.a, 1);
    bad = cpu_to_le64(uz_alloc_pages(&t.a, 1) + 32);
    qtest_memwrite(t.a.d.qts, list, &bad, sizeof(bad));
    c.ring_addr = cpu_to_le64(list);
    c.eqn = cpu_to_le32(t.a.comp_eq.eqn);
    c.log_depth = 4;
    c.flags = UZ_CQF_PAGE_LIST;
    g_assert_cmpint(uz_cmd(&t.a, UZ_CMD_CREATE_CQ, &c, sizeof(c), NULL), ==,
                    UZ_CMD_BAD_ADDR);
    c.ring_addr = cpu_to_le64(0xfff0000000000ull);
    g_assert_cmpint(uz_cmd(&t.a, UZ_CMD_CREATE_CQ, &c, sizeof(c), NULL), ==,
                    UZ_CMD_BAD_ADDR);
    c.flags = 0x80;
    g_assert_cmpint(uz_cmd(&t.a, UZ_CMD_CREATE_CQ, &c, sizeof(c), NULL), ==,
                    UZ_CMD_BAD_PARAM);
    c.flags = UZ_CQF_PAGE_LIST;
    c.log_depth = UZ_CQ_LOG_DEPTH_MAX + 1;
    g_assert_cmpint(uz_cmd(&t.a, UZ_CMD_CREATE_CQ, &c, sizeof(c), NULL), ==,
                    UZ_CMD_BAD_PARAM);

    /*
     * The send CQ's next CQE is its 88th of the pass: 40 more reach its
     * second page, whose entry is now unaligned.  The device reads the
     * entry as it moves into the page, stops the CQ and says so.
     */
    bad = cpu_to_le64(scq->pages[1] + 8);
    qtest_memwrite(t.a.d.qts, scq->list + sizeof(bad), &bad, sizeof(bad));
    for (k = 0; k < 41; k++) {
        UzSge s = uz_mr_sge(ma, 0, 8);
        UzSge r = uz_mr_sge(mb, 0, 64);
        UzWr wr = {
            .wr_id = 0xca000 + k, .opcode = UZ_WR_SEND,
            .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1,
        };

        uz_post_recv(qb, 0xca800 + k, &r, 1);
        uz_post_send(qa, &wr);
        uz_rq_done(qb, 0xca800 + k, UZ_WC_RECV, 8, 0, 0);
        if (k < 40) {
            uz_sq_done(qa, 0xca000 + k, UZ_WC_SEND, 8);
        }
    }
    uz_event_wait(&t.a, &t.a.async_eq, UZ_EQE_CQ_ERROR, scq->cqn);
    uz_cq_assert_empty(scq, 10);
    ops_stop(&t);
}

/* ------------------------------------------------------------------ */
/* 2. Scatter/gather and inline                                       */
/* ------------------------------------------------------------------ */

static void sgl_case(Ops *t, UzQp *qa, UzQp *qb, const UzSge *s, int ns,
                     const UzSge *r, int nr, UzMr *mb1, UzMr *mb2,
                     uint32_t seed, bool with_imm)
{
    size_t total = 0, room = 0;
    g_autofree uint8_t *msg = NULL;
    g_autofree uint8_t *img1 = NULL;
    g_autofree uint8_t *img2 = NULL;
    uint32_t immv = 0x51600000u | seed;
    UzWr wr = {
        .wr_id = 0x5900 + seed,
        .opcode = with_imm ? UZ_WR_SEND_IMM : UZ_WR_SEND,
        .flags = UZ_WQE_F_SIGNALED, .sge = s, .num_sge = ns, .imm = immv,
    };
    size_t off;
    int i;

    for (i = 0; i < ns; i++) {
        total += s[i].length;
    }
    for (i = 0; i < nr; i++) {
        room += r[i].length;
    }
    g_assert_cmpuint(total, <=, room);
    msg = g_malloc(total);
    uz_pattern(msg, total, seed);
    uz_sges_write(&t->a, s, ns, msg);

    /* What the receive MRs must hold afterwards: guard, data where due. */
    img1 = g_malloc(mb1->len);
    img2 = g_malloc(mb2->len);
    memset(img1, UZ_GUARD, mb1->len);
    memset(img2, UZ_GUARD, mb2->len);
    uz_mr_write(mb1, 0, img1, mb1->len);
    uz_mr_write(mb2, 0, img2, mb2->len);
    for (i = 0, off = 0; i < nr && off < total; i++) {
        UzMr *mr = r[i].lkey == mb1->key ? mb1 : mb2;
        uint8_t *img = mr == mb1 ? img1 : img2;
        size_t n = MIN(r[i].length, total - off);

        memcpy(img + (r[i].addr - mr->iova), msg + off, n);
        off += n;
    }

    uz_post_recv(qb, 0x7e00 + seed, r, nr);
    uz_post_send(qa, &wr);
    uz_sq_done(qa, wr.wr_id, UZ_WC_SEND, total);
    uz_rq_done(qb, 0x7e00 + seed, UZ_WC_RECV, total,
               with_imm ? UZ_WC_F_IMM : 0, immv);
    uz_assert_mr(mb1, 0, img1, mb1->len, "first receive MR");
    uz_assert_mr(mb2, 0, img2, mb2->len, "second receive MR");
}

static void inline_case(Ops *t, UzQp *qa, UzQp *qb, UzMr *mb, uint32_t len,
                        uint8_t opcode)
{
    uint8_t data[UZ_SQ_MAX_INLINE];
    uint32_t immv = 0x1e100000u | len;
    UzSge r = uz_mr_sge(mb, 7, 512);
    UzWr wr = {
        .wr_id = 0x1000 + len, .opcode = opcode,
        .flags = UZ_WQE_F_SIGNALED | UZ_WQE_F_INLINE,
        .inline_data = data, .inline_len = len, .imm = immv,
    };
    bool imm = opcode == UZ_WR_SEND_IMM;

    g_assert_cmpuint(len, <=, sizeof(data));
    uz_pattern(data, len, 1000 + len + opcode);
    uz_mr_fill(mb, 0, UZ_GUARD, 1024);
    uz_post_recv(qb, 0x2000 + len, &r, 1);
    uz_post_send(qa, &wr);
    uz_sq_done(qa, wr.wr_id, UZ_WC_SEND, len);
    uz_rq_done(qb, 0x2000 + len, UZ_WC_RECV, len, imm ? UZ_WC_F_IMM : 0, immv);
    uz_assert_mr_fill(mb, 0, UZ_GUARD, 7, "before the inline message");
    uz_assert_mr(mb, 7, data, len, "inline message");
    uz_assert_mr_fill(mb, 7 + len, UZ_GUARD, 1024 - 7 - len,
                      "after the inline message");
}

static void test_rc_sgl(void)
{
    Ops t;
    UzQp *qa, *qb;
    UzMr *ma1, *ma2, *mb1, *mb2;
    UzSge s[3], r[4], many[UZ_SQ_MAX_SGE];
    uint8_t data[UZ_SQ_MAX_INLINE];
    UzWr wr;
    int i;

    ops_start(&t);
    rc_pair(&t, &qa, &qb, 0);
    ma1 = uz_mr_reg(&t.a, 16384, UZ_ACCESS_ALL);
    ma2 = uz_mr_reg(&t.a, 12288, UZ_ACCESS_ALL);
    mb1 = uz_mr_reg(&t.b, 16384, UZ_ACCESS_ALL);
    mb2 = uz_mr_reg(&t.b, 8192, UZ_ACCESS_ALL);

    /* 333 + 1501 + 999 = 2833 bytes; the middle SGE crosses a page. */
    s[0] = uz_mr_sge(ma1, 7, 333);
    s[1] = uz_mr_sge(ma2, 4091, 1501);
    s[2] = uz_mr_sge(ma1, 5003, 999);

    /* Receive SGEs of exactly the message's size, over two MRs. */
    r[0] = uz_mr_sge(mb1, 1, 1000);
    r[1] = uz_mr_sge(mb2, 4093, 777);
    r[2] = uz_mr_sge(mb1, 8191, 555);
    r[3] = uz_mr_sge(mb2, 101, 501);
    sgl_case(&t, qa, qb, s, 3, r, 4, mb1, mb2, 1, false);
    sgl_case(&t, qa, qb, s, 3, r, 4, mb1, mb2, 2, true);

    /* Room to spare: the last SGE takes only part of the message. */
    r[3].length = 800;
    sgl_case(&t, qa, qb, s, 3, r, 4, mb1, mb2, 3, false);

    /* A message ending exactly at the end of the second receive SGE. */
    s[0].length = 500;
    s[1].length = 1277;
    s[2].length = 0;
    sgl_case(&t, qa, qb, s, 3, r, 4, mb1, mb2, 4, true);

    /* One-byte SGEs everywhere. */
    s[0].length = s[1].length = s[2].length = 1;
    r[0].length = r[1].length = r[2].length = r[3].length = 1;
    sgl_case(&t, qa, qb, s, 3, r, 4, mb1, mb2, 5, false);

    /* Twelve send SGEs, the most a WQE of 256 bytes holds. */
    for (i = 0; i < UZ_SQ_MAX_SGE; i++) {
        many[i] = uz_mr_sge(i % 2 ? ma2 : ma1, 4000 + i * 617, 97 + i);
    }
    r[0] = uz_mr_sge(mb1, 3, 4000);
    sgl_case(&t, qa, qb, many, UZ_SQ_MAX_SGE, r, 1, mb1, mb2, 6, false);

    inline_case(&t, qa, qb, mb1, 0, UZ_WR_SEND);
    inline_case(&t, qa, qb, mb1, 100, UZ_WR_SEND);
    inline_case(&t, qa, qb, mb1, UZ_SQ_MAX_INLINE, UZ_WR_SEND);
    inline_case(&t, qa, qb, mb1, 100, UZ_WR_SEND_IMM);
    inline_case(&t, qa, qb, mb1, UZ_SQ_MAX_INLINE, UZ_WR_SEND_IMM);

    /* An inline RDMA WRITE. */
    uz_pattern(data, sizeof(data), 77);
    uz_mr_fill(mb1, 0, UZ_GUARD, 1024);
    wr = (UzWr) {
        .wr_id = 0x3000, .opcode = UZ_WR_RDMA_WRITE,
        .flags = UZ_WQE_F_SIGNALED | UZ_WQE_F_INLINE,
        .inline_data = data, .inline_len = 150,
        .remote_addr = uz_mr_va(mb1, 13), .rkey = mb1->key,
    };
    uz_post_send(qa, &wr);
    uz_sq_done(qa, 0x3000, UZ_WC_RDMA_WRITE, 150);
    uz_assert_mr_fill(mb1, 0, UZ_GUARD, 13, "before the inline write");
    uz_assert_mr(mb1, 13, data, 150, "inline write");
    uz_assert_mr_fill(mb1, 163, UZ_GUARD, 1024 - 163, "after the inline write");

    uz_cq_assert_empty(qa->scq, 10);
    uz_cq_assert_empty(qb->rcq, 10);
    ops_stop(&t);
}

/* ------------------------------------------------------------------ */
/* 3. RDMA WRITE                                                      */
/* ------------------------------------------------------------------ */

static void test_rc_write(void)
{
    Ops t;
    UzQp *qa, *qb;
    UzMr *ma, *mb;
    int k, imm;

    ops_start(&t);
    rc_pair(&t, &qa, &qb, 0);
    ma = uz_mr_reg(&t.a, BIG + 64, UZ_ACCESS_ALL);
    mb = uz_mr_reg(&t.b, BIG + 8192, UZ_ACCESS_ALL);
    for (k = 0; k < ARRAY_SIZE(sizes); k++) {
        for (imm = 0; imm < 2; imm++) {
            size_t len = sizes[k];

            g_test_message("WRITE%s of %zu bytes", imm ? " with imm" : "",
                           len);
            uz_check_write(qa, qb, ma, mb, len, imm, k * 2 + imm);
        }
    }
    uz_cq_assert_empty(qa->scq, 10);
    uz_cq_assert_empty(qb->rcq, 10);
    uz_cq_assert_empty(qb->scq, 1);
    ops_stop(&t);
}

/* ------------------------------------------------------------------ */
/* 4. RDMA READ                                                       */
/* ------------------------------------------------------------------ */

static void test_rc_read(void)
{
    Ops t;
    UzQp *qa, *qb;
    UzMr *ma1, *ma2, *mb;
    g_autofree uint8_t *buf = g_malloc(BIG);
    const uint64_t roff = 4093;
    int k;

    ops_start(&t);
    rc_pair(&t, &qa, &qb, 0);
    ma1 = uz_mr_reg(&t.a, BIG + 8192, UZ_ACCESS_ALL);
    ma2 = uz_mr_reg(&t.a, BIG / 2 + 8192, UZ_ACCESS_ALL);
    mb = uz_mr_reg(&t.b, BIG + 8192, UZ_ACCESS_ALL);
    for (k = 0; k < ARRAY_SIZE(sizes); k++) {
        size_t len = sizes[k];
        UzSge s[3];
        int ns, i;
        size_t off;
        UzWr wr;

        g_test_message("READ of %zu bytes", len);
        if (len < 3) {
            ns = 1;
            s[0] = uz_mr_sge(ma1, 1, len);
        } else {
            size_t l0 = len / 3, l1 = len / 4;

            ns = 3;
            s[0] = uz_mr_sge(ma1, 1, l0);
            s[1] = uz_mr_sge(ma2, 4095, l1);
            s[2] = uz_mr_sge(ma1, l0 + 1 + 64, len - l0 - l1);
        }
        for (i = 0; i < ns; i++) {
            UzMr *mr = uz_mr_by_key(&t.a, s[i].lkey);
            uint64_t o = s[i].addr - mr->iova;

            uz_mr_fill(mr, o - 1, UZ_GUARD, s[i].length + 2);
        }
        uz_pattern(buf, len, 200 + k);
        uz_mr_write(mb, roff, buf, len);
        wr = (UzWr) {
            .wr_id = 0x7ead00 + k, .opcode = UZ_WR_RDMA_READ,
            .flags = UZ_WQE_F_SIGNALED, .sge = s, .num_sge = ns,
            .remote_addr = uz_mr_va(mb, roff), .rkey = mb->key,
        };
        uz_post_send(qa, &wr);
        uz_sq_done(qa, wr.wr_id, UZ_WC_RDMA_READ, len);
        for (i = 0, off = 0; i < ns; i++) {
            UzMr *mr = uz_mr_by_key(&t.a, s[i].lkey);
            uint64_t o = s[i].addr - mr->iova;

            uz_assert_mr(mr, o, buf + off, s[i].length, "read data");
            uz_assert_mr_fill(mr, o - 1, UZ_GUARD, 1, "before a read SGE");
            uz_assert_mr_fill(mr, o + s[i].length, UZ_GUARD, 1,
                              "after a read SGE");
            off += s[i].length;
        }
        /* The source is left alone. */
        uz_assert_mr(mb, roff, buf, len, "read source");
    }
    uz_cq_assert_empty(qa->scq, 10);
    uz_cq_assert_empty(qb->rcq, 1);
    uz_cq_assert_empty(qb->scq, 1);
    ops_stop(&t);
}

/* ------------------------------------------------------------------ */
/* 5. Atomics                                                         */
/* ------------------------------------------------------------------ */

static void atomic_case(UzQp *qa, UzMr *ma, UzMr *mb, uint64_t roff,
                        uint8_t opcode, uint64_t initial, uint64_t cmp_add,
                        uint64_t swap, uint64_t expect_remote, uint64_t wr_id)
{
    const uint64_t loff = 4093;     /* the result crosses a page boundary */
    UzSge s = uz_mr_sge(ma, loff, 8);
    UzWr wr = {
        .wr_id = wr_id, .opcode = opcode, .flags = UZ_WQE_F_SIGNALED,
        .sge = &s, .num_sge = 1, .remote_addr = uz_mr_va(mb, roff),
        .rkey = mb->key, .compare_add = cmp_add, .swap = swap,
    };
    uint64_t v = cpu_to_le64(initial);
    uint64_t got;

    uz_mr_fill(ma, loff - 8, UZ_GUARD, 24);
    uz_mr_fill(mb, roff - 8, UZ_GUARD, 24);
    uz_mr_write(mb, roff, &v, 8);
    uz_post_send(qa, &wr);
    uz_sq_done(qa, wr_id, opcode == UZ_WR_ATOMIC_CMP_SWP ? UZ_WC_COMP_SWAP :
                                                           UZ_WC_FETCH_ADD, 8);
    uz_mr_read(ma, loff, &got, 8);
    g_assert_cmphex(le64_to_cpu(got), ==, initial);
    uz_mr_read(mb, roff, &got, 8);
    g_assert_cmphex(le64_to_cpu(got), ==, expect_remote);
    uz_assert_mr_fill(ma, loff - 8, UZ_GUARD, 8, "before the atomic result");
    uz_assert_mr_fill(ma, loff + 8, UZ_GUARD, 8, "after the atomic result");
    uz_assert_mr_fill(mb, roff - 8, UZ_GUARD, 8, "before the atomic target");
    uz_assert_mr_fill(mb, roff + 8, UZ_GUARD, 8, "after the atomic target");
}

/* Several in one go on one word: each sees the previous result. */
static void atomic_chain(UzQp *qa, UzMr *ma, UzMr *mb)
{
    uint64_t v = cpu_to_le64(1000), got;
    UzSge s[4];
    UzWr wr;
    int i;

    uz_mr_write(mb, 64, &v, 8);
    for (i = 0; i < 4; i++) {
        s[i] = uz_mr_sge(ma, 256 + 8 * i, 8);
        wr = (UzWr) {
            .wr_id = 0x40 + i,
            .opcode = i == 2 ? UZ_WR_ATOMIC_CMP_SWP :
                               UZ_WR_ATOMIC_FETCH_ADD,
            .flags = UZ_WQE_F_SIGNALED, .sge = &s[i], .num_sge = 1,
            .remote_addr = uz_mr_va(mb, 64), .rkey = mb->key,
            .compare_add = i == 2 ? 1030 : 10 + i, .swap = 5000,
        };
        uz_sq_post(qa, &wr);
    }
    uz_sq_ring(qa);
    for (i = 0; i < 4; i++) {
        uz_sq_done(qa, 0x40 + i, i == 2 ? UZ_WC_COMP_SWAP : UZ_WC_FETCH_ADD,
                   8);
    }
    /* 1000 +10 -> 1010 +11 -> 1021; cmp 1030 fails; +13 -> 1034. */
    uz_mr_read(ma, 256, &got, 8);
    g_assert_cmpuint(le64_to_cpu(got), ==, 1000);
    uz_mr_read(ma, 264, &got, 8);
    g_assert_cmpuint(le64_to_cpu(got), ==, 1010);
    uz_mr_read(ma, 272, &got, 8);
    g_assert_cmpuint(le64_to_cpu(got), ==, 1021);
    uz_mr_read(ma, 280, &got, 8);
    g_assert_cmpuint(le64_to_cpu(got), ==, 1021);
    uz_mr_read(mb, 64, &got, 8);
    g_assert_cmpuint(le64_to_cpu(got), ==, 1034);
}

static void test_rc_atomic(void)
{
    Ops t;
    UzQp *qa, *qb;
    UzMr *ma, *mb;
    const uint64_t v0 = 0x1122334455667788ull;
    const uint64_t v1 = 0xdeadbeefcafef00dull;

    ops_start(&t);
    rc_pair(&t, &qa, &qb, 0);
    ma = uz_mr_reg(&t.a, 16384, UZ_ACCESS_ALL);
    mb = uz_mr_reg(&t.b, 16384, UZ_ACCESS_ALL);

    /* CMP_SWP that matches: swapped. */
    atomic_case(qa, ma, mb, 4088, UZ_WR_ATOMIC_CMP_SWP, v0, v0, v1, v1, 1);
    /* CMP_SWP that does not: unchanged, the original comes back. */
    atomic_case(qa, ma, mb, 4088, UZ_WR_ATOMIC_CMP_SWP, v0, v0 ^ 1, v1, v0,
                2);
    atomic_case(qa, ma, mb, 8192, UZ_WR_ATOMIC_CMP_SWP, v1, v0, 0, v1, 3);
    /* FETCH_ADD, with carries across bytes and words, and wrapping. */
    atomic_case(qa, ma, mb, 4096, UZ_WR_ATOMIC_FETCH_ADD, v0,
                0x00000001000000ffull, 0, v0 + 0x00000001000000ffull, 4);
    atomic_case(qa, ma, mb, 16, UZ_WR_ATOMIC_FETCH_ADD,
                0xffffffffffffff00ull, 0x101, 0, 0x1, 5);
    atomic_case(qa, ma, mb, 16, UZ_WR_ATOMIC_FETCH_ADD, v1, 0, 0, v1, 6);

    atomic_chain(qa, ma, mb);
    uz_cq_assert_empty(qa->scq, 10);
    uz_cq_assert_empty(qb->rcq, 1);
    ops_stop(&t);
}

/* ------------------------------------------------------------------ */
/* 6. Signalling and fences                                           */
/* ------------------------------------------------------------------ */

/* The two QP pairs and the memory of test_signalling's steps. */
typedef struct Sig {
    Ops t;
    UzQp *qa, *qb;              /* a plain pair */
    UzQp *qs, *qsb;             /* qs with UZ_QPF_SIG_ALL */
    UzMr *ma, *mb;
    uint8_t buf[4096];          /* pattern 6, at 0 of ma */
} Sig;

/*
 * 63 unsignalled WRITEs and one signalled, twice: only the signalled
 * ones complete, and the second batch finds the whole ring free.
 */
static void sig_unsignalled_writes(Sig *g)
{
    UzQp *qa = g->qa;
    UzMr *ma = g->ma, *mb = g->mb;
    UzSge s[64];
    UzWr wr;
    int round, i;

    for (round = 0; round < 2; round++) {
        uz_mr_fill(mb, 0, UZ_GUARD, 64 * 64);
        for (i = 0; i < 64; i++) {
            s[i] = uz_mr_sge(ma, i * 13 + round, 64);
            wr = (UzWr) {
                .wr_id = 0x600 + round * 64 + i, .opcode = UZ_WR_RDMA_WRITE,
                .flags = i == 63 ? UZ_WQE_F_SIGNALED : 0,
                .sge = &s[i], .num_sge = 1,
                .remote_addr = uz_mr_va(mb, i * 64), .rkey = mb->key,
            };
            uz_sq_post(qa, &wr);
        }
        uz_sq_ring(qa);
        uz_sq_done(qa, 0x600 + round * 64 + 63, UZ_WC_RDMA_WRITE, 64);
        uz_cq_assert_empty(qa->scq, 20);
        for (i = 0; i < 64; i++) {
            uz_assert_mr(mb, i * 64, g->buf + i * 13 + round, 64,
                         "unsignalled write");
        }
    }
}

/* Unsignalled SENDs: no send CQE, but every receive completes. */
static void sig_unsignalled_sends(Sig *g)
{
    UzQp *qa = g->qa, *qb = g->qb;
    UzMr *ma = g->ma, *mb = g->mb;
    UzSge s[3];
    UzWr wr;
    int i;

    for (i = 0; i < 3; i++) {
        UzSge r = uz_mr_sge(mb, 8192 + i * 256, 256);

        uz_post_recv(qb, 0x6a0 + i, &r, 1);
    }
    for (i = 0; i < 3; i++) {
        s[i] = uz_mr_sge(ma, 100 * i, 100 + i);
        wr = (UzWr) {
            .wr_id = 0x690 + i, .opcode = UZ_WR_SEND,
            .flags = i == 2 ? UZ_WQE_F_SIGNALED : 0,
            .sge = &s[i], .num_sge = 1,
        };
        uz_sq_post(qa, &wr);
    }
    uz_sq_ring(qa);
    uz_sq_done(qa, 0x692, UZ_WC_SEND, 102);
    for (i = 0; i < 3; i++) {
        uz_rq_done(qb, 0x6a0 + i, UZ_WC_RECV, 100 + i, 0, 0);
        uz_assert_mr(mb, 8192 + i * 256, g->buf + 100 * i, 100 + i,
                     "sent data");
    }
    uz_cq_assert_empty(qa->scq, 20);
}

/* UZ_QPF_SIG_ALL: WQEs without UZ_WQE_F_SIGNALED complete too. */
static void sig_all(Sig *g)
{
    UzQp *qs = g->qs;
    UzMr *ma = g->ma, *mb = g->mb;
    UzSge s[4];
    UzWr wr;
    int i;

    for (i = 0; i < 4; i++) {
        s[i] = uz_mr_sge(ma, 7 * i, 32);
        wr = (UzWr) {
            .wr_id = 0x6c0 + i, .opcode = UZ_WR_RDMA_WRITE,
            .flags = i == 3 ? UZ_WQE_F_SIGNALED : 0,
            .sge = &s[i], .num_sge = 1,
            .remote_addr = uz_mr_va(mb, 16384 + 32 * i), .rkey = mb->key,
        };
        uz_sq_post(qs, &wr);
    }
    uz_sq_ring(qs);
    for (i = 0; i < 4; i++) {
        uz_sq_done(qs, 0x6c0 + i, UZ_WC_RDMA_WRITE, 32);
        uz_assert_mr(mb, 16384 + 32 * i, g->buf + 7 * i, 32,
                     "SIG_ALL write");
    }
    uz_cq_assert_empty(qs->scq, 20);
}

/*
 * A fenced WRITE after a READ of the same remote buffer: the READ
 * sees the old data, the WRITE completes after it and its data stays.
 * @new is left at 65536 of ma.
 */
static void sig_fence_after_read(Sig *g, const uint8_t *old,
                                 const uint8_t *new)
{
    UzQp *qa = g->qa;
    UzMr *ma = g->ma, *mb = g->mb;
    UzSge s[2];
    UzWr wr;

    uz_mr_write(mb, 65536, old, 65536);
    uz_mr_write(ma, 65536, new, 65536);
    uz_mr_fill(ma, 131072, UZ_GUARD, 65536);
    s[0] = uz_mr_sge(ma, 131072, 65536);
    s[1] = uz_mr_sge(ma, 65536, 65536);
    wr = (UzWr) {
        .wr_id = 0x6f0, .opcode = UZ_WR_RDMA_READ,
        .flags = UZ_WQE_F_SIGNALED, .sge = &s[0], .num_sge = 1,
        .remote_addr = uz_mr_va(mb, 65536), .rkey = mb->key,
    };
    uz_sq_post(qa, &wr);
    wr = (UzWr) {
        .wr_id = 0x6f1, .opcode = UZ_WR_RDMA_WRITE,
        .flags = UZ_WQE_F_SIGNALED | UZ_WQE_F_FENCE,
        .sge = &s[1], .num_sge = 1,
        .remote_addr = uz_mr_va(mb, 65536), .rkey = mb->key,
    };
    uz_sq_post(qa, &wr);
    uz_sq_ring(qa);
    uz_sq_done(qa, 0x6f0, UZ_WC_RDMA_READ, 65536);
    uz_sq_done(qa, 0x6f1, UZ_WC_RDMA_WRITE, 65536);
    uz_assert_mr(ma, 131072, old, 65536, "READ before the fenced WRITE");
    uz_assert_mr(mb, 65536, new, 65536, "fenced WRITE");
}

/*
 * A fenced signalled WRITE behind unsignalled READs and an atomic; it
 * sends @new, still at 65536 of ma from sig_fence_after_read().
 */
static void sig_fence_after_reads(Sig *g, const uint8_t *old,
                                  const uint8_t *new)
{
    UzQp *qa = g->qa;
    UzMr *ma = g->ma, *mb = g->mb;
    UzSge s[6];
    UzWr wr;
    int i;

    uz_mr_write(mb, 65536, old, 65536);
    uz_mr_fill(ma, 131072, UZ_GUARD, 65536);
    for (i = 0; i < 4; i++) {
        s[i] = uz_mr_sge(ma, 131072 + i * 16384, 16384);
        wr = (UzWr) {
            .wr_id = 0x700 + i, .opcode = UZ_WR_RDMA_READ,
            .sge = &s[i], .num_sge = 1,
            .remote_addr = uz_mr_va(mb, 65536 + i * 16384), .rkey = mb->key,
        };
        uz_sq_post(qa, &wr);
    }
    s[4] = uz_mr_sge(ma, 200000, 8);
    wr = (UzWr) {
        .wr_id = 0x704, .opcode = UZ_WR_ATOMIC_FETCH_ADD,
        .flags = UZ_WQE_F_SIGNALED, .sge = &s[4], .num_sge = 1,
        .remote_addr = uz_mr_va(mb, 200000), .rkey = mb->key,
        .compare_add = 1,
    };
    uz_sq_post(qa, &wr);
    s[5] = uz_mr_sge(ma, 65536, 65536);
    wr = (UzWr) {
        .wr_id = 0x705, .opcode = UZ_WR_RDMA_WRITE,
        .flags = UZ_WQE_F_SIGNALED | UZ_WQE_F_FENCE,
        .sge = &s[5], .num_sge = 1,
        .remote_addr = uz_mr_va(mb, 65536), .rkey = mb->key,
    };
    uz_sq_post(qa, &wr);
    uz_sq_ring(qa);
    uz_sq_done(qa, 0x704, UZ_WC_FETCH_ADD, 8);
    uz_sq_done(qa, 0x705, UZ_WC_RDMA_WRITE, 65536);
    uz_cq_assert_empty(qa->scq, 20);
    uz_assert_mr(ma, 131072, old, 65536, "READs before the fenced WRITE");
    uz_assert_mr(mb, 65536, new, 65536, "second fenced WRITE");
}

/*
 * The steps run on the same QPs one after another: the later ones post
 * where the 128 WRITEs of the first left the rings.
 */
static void test_signalling(void)
{
    Sig g;
    g_autofree uint8_t *old = g_malloc(65536);
    g_autofree uint8_t *new = g_malloc(65536);

    ops_start(&g.t);
    rc_pair(&g.t, &g.qa, &g.qb, 0);
    rc_pair(&g.t, &g.qs, &g.qsb, UZ_QPF_SIG_ALL);
    g.ma = uz_mr_reg(&g.t.a, 256 * 1024, UZ_ACCESS_ALL);
    g.mb = uz_mr_reg(&g.t.b, 256 * 1024, UZ_ACCESS_ALL);
    uz_pattern(g.buf, sizeof(g.buf), 6);
    uz_mr_write(g.ma, 0, g.buf, sizeof(g.buf));

    sig_unsignalled_writes(&g);
    sig_unsignalled_sends(&g);
    sig_all(&g);
    uz_pattern(old, 65536, 61);
    uz_pattern(new, 65536, 62);
    sig_fence_after_read(&g, old, new);
    sig_fence_after_reads(&g, old, new);
    ops_stop(&g.t);
}

/* ------------------------------------------------------------------ */
/* 7. Solicited events                                                */
/* ------------------------------------------------------------------ */

/* 300 bytes by @opcode with @flags from @qa, received by @qb. */
static void solicit_one(UzQp *qa, UzQp *qb, UzMr *ma, UzMr *mb,
                        uint8_t opcode, uint8_t flags, uint64_t wr_id)
{
    UzSge s = uz_mr_sge(ma, 0, 300);
    UzSge r = uz_mr_sge(mb, 0, 1024);
    bool write = opcode == UZ_WR_RDMA_WRITE_IMM;
    UzWr wr = {
        .wr_id = wr_id, .opcode = opcode,
        .flags = UZ_WQE_F_SIGNALED | flags, .sge = &s, .num_sge = 1,
        .imm = 0x50110000u | wr_id,
        .remote_addr = uz_mr_va(mb, 2048), .rkey = mb->key,
    };

    uz_post_recv(qb, wr_id + 0x100, &r, 1);
    uz_post_send(qa, &wr);
    uz_sq_done(qa, wr_id, write ? UZ_WC_RDMA_WRITE : UZ_WC_SEND, 300);
    uz_rq_done(qb, wr_id + 0x100,
               write ? UZ_WC_RECV_RDMA_WITH_IMM : UZ_WC_RECV, 300,
               opcode == UZ_WR_SEND ? 0 : UZ_WC_F_IMM, 0x50110000u | wr_id);
}

static void test_solicited(void)
{
    Ops t;
    UzQp *qa, *qb;
    UzMr *ma, *mb;
    UzCq *cq;
    uint8_t buf[300];

    ops_start(&t);
    rc_pair(&t, &qa, &qb, 0);
    ma = uz_mr_reg(&t.a, 4096, UZ_ACCESS_ALL);
    mb = uz_mr_reg(&t.b, 4096, UZ_ACCESS_ALL);
    uz_pattern(buf, sizeof(buf), 7);
    uz_mr_write(ma, 0, buf, sizeof(buf));
    cq = qb->rcq;
    uz_eq_drain(&t.b, &t.b.comp_eq, UZ_EQE_COMPLETION);

    /* Armed for solicited: an unsolicited SEND raises no event. */
    uz_cq_arm(cq, UZ_DB_ARM_SOLICITED);
    solicit_one(qa, qb, ma, mb, UZ_WR_SEND, 0, 1);
    uz_assert_mr(mb, 0, buf, 300, "unsolicited SEND");
    g_assert_cmpint(uz_events_count(&t.b, &t.b.comp_eq, UZ_EQE_COMPLETION,
                                    cq->cqn, 100), ==, 0);
    solicit_one(qa, qb, ma, mb, UZ_WR_SEND_IMM, 0, 2);
    g_assert_cmpint(uz_events_count(&t.b, &t.b.comp_eq, UZ_EQE_COMPLETION,
                                    cq->cqn, 100), ==, 0);

    /* A solicited SEND raises exactly one event, about this CQ. */
    solicit_one(qa, qb, ma, mb, UZ_WR_SEND, UZ_WQE_F_SOLICITED, 3);
    g_assert_cmpint(uz_events_count(&t.b, &t.b.comp_eq, UZ_EQE_COMPLETION,
                                    cq->cqn, 100), ==, 1);
    g_assert_cmpint(uz_eq_drain(&t.b, &t.b.comp_eq, UZ_EQE_COMPLETION), ==,
                    0);

    /* Disarmed by that event: another solicited SEND raises none. */
    solicit_one(qa, qb, ma, mb, UZ_WR_SEND, UZ_WQE_F_SOLICITED, 4);
    g_assert_cmpint(uz_events_count(&t.b, &t.b.comp_eq, UZ_EQE_COMPLETION,
                                    cq->cqn, 100), ==, 0);

    /* A solicited WRITE with immediate counts as solicited. */
    uz_cq_arm(cq, UZ_DB_ARM_SOLICITED);
    solicit_one(qa, qb, ma, mb, UZ_WR_RDMA_WRITE_IMM, 0, 5);
    g_assert_cmpint(uz_events_count(&t.b, &t.b.comp_eq, UZ_EQE_COMPLETION,
                                    cq->cqn, 100), ==, 0);
    solicit_one(qa, qb, ma, mb, UZ_WR_RDMA_WRITE_IMM, UZ_WQE_F_SOLICITED, 6);
    g_assert_cmpint(uz_events_count(&t.b, &t.b.comp_eq, UZ_EQE_COMPLETION,
                                    cq->cqn, 100), ==, 1);
    uz_assert_mr(mb, 2048, buf, 300, "solicited WRITE with immediate");

    /* Armed for any completion: the unsolicited one raises the event. */
    uz_cq_arm(cq, UZ_DB_ARM);
    solicit_one(qa, qb, ma, mb, UZ_WR_SEND, 0, 7);
    g_assert_cmpint(uz_events_count(&t.b, &t.b.comp_eq, UZ_EQE_COMPLETION,
                                    cq->cqn, 100), ==, 1);

    /* Both bits: UZ_DB_ARM wins. */
    uz_cq_arm(cq, UZ_DB_ARM | UZ_DB_ARM_SOLICITED);
    solicit_one(qa, qb, ma, mb, UZ_WR_SEND, 0, 8);
    g_assert_cmpint(uz_events_count(&t.b, &t.b.comp_eq, UZ_EQE_COMPLETION,
                                    cq->cqn, 100), ==, 1);
    solicit_one(qa, qb, ma, mb, UZ_WR_SEND, UZ_WQE_F_SOLICITED, 9);
    g_assert_cmpint(uz_events_count(&t.b, &t.b.comp_eq, UZ_EQE_COMPLETION,
                                    cq->cqn, 100), ==, 0);

    /* The sender's CQs were never armed. */
    g_assert_cmpint(uz_eq_drain(&t.a, &t.a.comp_eq, UZ_EQE_COMPLETION), ==,
                    0);
    ops_stop(&t);
}

/* ------------------------------------------------------------------ */
/* 8. UD and GSI                                                      */
/* ------------------------------------------------------------------ */

typedef struct UdSide {
    UzNode *n;
    UzQp *qp;
    UzMr *mr;
    uint32_t ahn;               /* towards the other side */
} UdSide;

/* Check the 40-byte GRH area of a UD receive from NIC @from to @to. */
static void check_grh(const uint8_t *g, int from, int to, uint32_t wire_len)
{
    uint8_t ip[4];
    uint32_t sum = 0;
    int i;

    for (i = 0; i < 20; i++) {
        g_assert_cmphex(g[i], ==, 0);
    }
    g += 20;
    g_assert_cmphex(g[0], ==, 0x45);
    /* Traffic class 0, and the NIC's ECN field: ECT(0) as received. */
    g_assert_cmphex(g[1], ==, UZ_IP_ECN_ECT0);
    g_assert_cmpuint(lduw_be_p(g + 2), ==, wire_len);
    g_assert_cmphex(lduw_be_p(g + 4), ==, 0);       /* identification */
    g_assert_cmphex(lduw_be_p(g + 6), ==, 0x4000);  /* DF */
    g_assert_cmpuint(g[8], ==, 64);                 /* TTL */
    g_assert_cmpuint(g[9], ==, 17);                 /* UDP */
    for (i = 0; i < 20; i += 2) {
        sum += lduw_be_p(g + i);
    }
    while (sum >> 16) {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    g_assert_cmphex(sum, ==, 0xffff);
    uz_node_ip(from, ip);
    g_assert_cmpmem(g + 12, 4, ip, 4);
    uz_node_ip(to, ip);
    g_assert_cmpmem(g + 16, 4, ip, 4);
}

/*
 * Send @len bytes from @s to @r's QP @dqpn with @qkey in the WQE; the
 * receive must arrive with its GRH area and the payload at byte 40.
 */
static void ud_xfer(UdSide *s, UdSide *r, uint32_t dqpn, uint32_t qkey,
                    uint32_t len, bool imm, uint32_t seed)
{
    uint8_t data[1024];
    uint8_t got[40 + 1024 + 64];
    UzSge ss = uz_mr_sge(s->mr, 11, len);
    UzSge rs = uz_mr_sge(r->mr, 0, 40 + 1024);
    uint32_t immv = 0xd0d00000u | seed;
    UzWr wr = {
        .wr_id = 0xd000 + seed, .opcode = imm ? UZ_WR_SEND_IMM : UZ_WR_SEND,
        .flags = UZ_WQE_F_SIGNALED, .sge = &ss, .num_sge = 1, .imm = immv,
        .ahn = s->ahn, .remote_qpn = dqpn, .remote_qkey = qkey,
    };
    struct uz_cqe c;
    size_t i;

    g_assert_cmpuint(len, <=, sizeof(data));
    uz_pattern(data, len, seed);
    uz_mr_write(s->mr, 11, data, len);
    uz_mr_fill(r->mr, 0, UZ_GUARD, sizeof(got));
    uz_post_recv(r->qp, 0xe000 + seed, &rs, 1);
    uz_post_send(s->qp, &wr);
    uz_cq_wait(s->qp->scq, &c);
    uz_expect_sq(&c, wr.wr_id, UZ_WC_SEND, s->qp, len);
    uz_cq_wait(r->qp->rcq, &c);
    uz_expect_rq(&c, 0xe000 + seed, UZ_WC_RECV, r->qp->qpn, 40 + len,
                 UZ_WC_F_GRH | UZ_WC_F_IPV4 | (imm ? UZ_WC_F_IMM : 0), immv,
                 s->qp->qpn);
    uz_mr_read(r->mr, 0, got, sizeof(got));
    /* IPv4 + UDP + BTH + DETH (+ ImmDt) + padded payload + ICRC. */
    check_grh(got, s->n->idx, r->n->idx,
              20 + 8 + 12 + 8 + (imm ? 4 : 0) + ROUND_UP(len, 4) + 4);
    uz_assert_bytes(got + 40, data, len, "UD payload");
    for (i = 40 + len; i < sizeof(got); i++) {
        g_assert_cmphex(got[i], ==, UZ_GUARD);
    }
}

/*
 * From @sender (a UD QP of @a's node) to @b's QP with Q_Key @wqe_qkey in
 * the WQE, which @b must drop and count; then a good packet from @a's QP
 * takes the receive WQE that is still posted.
 */
static void qkey_drop(Ops *t, UdSide *a, UdSide *b, UzQp *sender,
                      uint32_t wqe_qkey, uint32_t id)
{
    uint64_t before = uz_counter(&t->m, b->n->idx, "rx_qkey_errors");
    uint8_t data[64];
    UzSge ss = uz_mr_sge(a->mr, 0, sizeof(data));
    UzSge rs = uz_mr_sge(b->mr, 0, 40 + 1024);
    UzWr wr = {
        .wr_id = 0xf00 + id, .opcode = UZ_WR_SEND,
        .flags = UZ_WQE_F_SIGNALED, .sge = &ss, .num_sge = 1,
        .ahn = a->ahn, .remote_qpn = b->qp->qpn, .remote_qkey = wqe_qkey,
    };
    struct uz_cqe c;

    uz_pattern(data, sizeof(data), id);
    uz_mr_write(a->mr, 0, data, sizeof(data));
    uz_mr_fill(b->mr, 0, UZ_GUARD, 40 + 1024);
    uz_post_recv(b->qp, 0xf80 + id, &rs, 1);
    uz_post_send(sender, &wr);
    uz_cq_wait(sender->scq, &c);
    uz_expect_sq(&c, wr.wr_id, UZ_WC_SEND, sender, sizeof(data));
    uz_counter_wait(b->n, "rx_qkey_errors", before + 1);
    uz_cq_assert_empty(b->qp->rcq, 50);
    uz_assert_mr_fill(b->mr, 0, UZ_GUARD, 40 + 1024,
                      "buffer of a dropped packet");

    wr.wr_id = 0xf40 + id;
    wr.remote_qkey = QKEY;
    uz_post_send(a->qp, &wr);
    uz_cq_wait(a->qp->scq, &c);
    uz_expect_sq(&c, wr.wr_id, UZ_WC_SEND, a->qp, sizeof(data));
    uz_cq_wait(b->qp->rcq, &c);
    uz_expect_rq(&c, 0xf80 + id, UZ_WC_RECV, b->qp->qpn, 40 + sizeof(data),
                 UZ_WC_F_GRH | UZ_WC_F_IPV4, 0, a->qp->qpn);
    uz_assert_mr(b->mr, 40, data, sizeof(data), "UD payload after a drop");
    g_assert_cmpuint(uz_counter(&t->m, b->n->idx, "rx_qkey_errors"), ==,
                     before + 1);
}

/* A machine with a UD QP on each NIC, for each of the UD cases. */
typedef struct Ud {
    Ops t;
    UdSide a, b;
} Ud;

static void ud_start(Ud *u)
{
    Ops *t = &u->t;

    ops_start(t);
    u->a = (UdSide) { .n = &t->a };
    u->b = (UdSide) { .n = &t->b };
    u->a.qp = uz_qp_create(&t->a, UZ_QPT_UD, NULL, NULL, NULL, 0);
    u->b.qp = uz_qp_create(&t->b, UZ_QPT_UD, NULL, NULL, NULL, 0);
    uz_ud_up(u->a.qp, QKEY, 0x100);
    uz_ud_up(u->b.qp, QKEY, 0x200);
    u->a.mr = uz_mr_reg(&t->a, 8192, UZ_ACCESS_ALL);
    u->b.mr = uz_mr_reg(&t->b, 8192, UZ_ACCESS_ALL);
    u->a.ahn = uz_ah_create(&t->a, 1);
    u->b.ahn = uz_ah_create(&t->b, 0);
}

/* Both ways, with and without immediate, up to the MTU. */
static void ud_case_xfer(Ud *u)
{
    UdSide *a = &u->a, *b = &u->b;

    ud_xfer(a, b, b->qp->qpn, QKEY, 100, false, 1);
    ud_xfer(a, b, b->qp->qpn, QKEY, 100, true, 2);
    ud_xfer(a, b, b->qp->qpn, QKEY, 0, false, 3);
    ud_xfer(a, b, b->qp->qpn, QKEY, 1, true, 4);
    ud_xfer(a, b, b->qp->qpn, QKEY, 1023, false, 5);
    ud_xfer(a, b, b->qp->qpn, QKEY, 1024, true, 6);
    ud_xfer(b, a, a->qp->qpn, QKEY, 333, false, 7);
    ud_xfer(b, a, a->qp->qpn, QKEY, 1024, true, 8);
}

/* A receive SGE list that splits the GRH area and the payload. */
static void ud_case_split_sge(Ud *u)
{
    UdSide *a = &u->a, *b = &u->b;
    uint8_t data[300], got[40 + 300];
    UzSge rs[3] = {
        uz_mr_sge(b->mr, 0, 24), uz_mr_sge(b->mr, 100, 30),
        uz_mr_sge(b->mr, 200, 1000),
    };
    struct uz_cqe c;
    UzSge ss;
    UzWr wr;

    ss = uz_mr_sge(a->mr, 5, sizeof(data));
    uz_pattern(data, sizeof(data), 9);
    uz_mr_write(a->mr, 5, data, sizeof(data));
    uz_mr_fill(b->mr, 0, UZ_GUARD, 2048);
    uz_post_recv(b->qp, 0xe009, rs, 3);
    wr = (UzWr) {
        .wr_id = 0xd009, .opcode = UZ_WR_SEND_IMM,
        .flags = UZ_WQE_F_SIGNALED, .sge = &ss, .num_sge = 1,
        .imm = 0x99, .ahn = a->ahn, .remote_qpn = b->qp->qpn,
        .remote_qkey = QKEY,
    };
    uz_post_send(a->qp, &wr);
    uz_cq_wait(a->qp->scq, &c);
    uz_expect_sq(&c, 0xd009, UZ_WC_SEND, a->qp, sizeof(data));
    uz_cq_wait(b->qp->rcq, &c);
    uz_expect_rq(&c, 0xe009, UZ_WC_RECV, b->qp->qpn, sizeof(got),
                 UZ_WC_F_GRH | UZ_WC_F_IPV4 | UZ_WC_F_IMM, 0x99, a->qp->qpn);
    rs[2].length = sizeof(got) - 24 - 30;
    uz_sges_read(&u->t.b, rs, 3, got);
    check_grh(got, 0, 1, 20 + 8 + 12 + 8 + 4 + sizeof(data) + 4);
    uz_assert_bytes(got + 40, data, sizeof(data), "split UD payload");
    uz_assert_mr_fill(b->mr, 24, UZ_GUARD, 100 - 24, "between receive SGEs");
    uz_assert_mr_fill(b->mr, 130, UZ_GUARD, 200 - 130,
                      "between receive SGEs");
    uz_assert_mr_fill(b->mr, 200 + rs[2].length, UZ_GUARD, 1000,
                      "after the split UD payload");
}

/*
 * The address vector in the WQE (UZ_WQE_F_AV), as the kernel sends:
 * the AH number is ignored, the AV after the header is used, and
 * the SGE and inline data follow it.
 */
static void ud_case_av(Ud *u)
{
    UdSide *a = &u->a, *b = &u->b;
    struct uz_av av = { .hop_limit = 64 };
    uint8_t data[100], got[40 + 100];
    UzSge rs = uz_mr_sge(b->mr, 0, sizeof(got));
    struct uz_cqe c;
    UzSge ss;
    UzWr wr;

    uz_node_mac(1, av.dmac);
    uz_node_gid(1, av.dgid);
    uz_node_gid(0, av.sgid);
    uz_pattern(data, sizeof(data), 10);
    uz_mr_write(a->mr, 5, data, sizeof(data));
    for (int k = 0; k < 2; k++) {
        ss = uz_mr_sge(a->mr, 5, sizeof(data));
        wr = (UzWr) {
            .wr_id = 0xd00a + k, .opcode = UZ_WR_SEND,
            .flags = UZ_WQE_F_SIGNALED, .ahn = 0x7fffff, .av = &av,
            .remote_qpn = b->qp->qpn, .remote_qkey = QKEY,
        };
        if (k) {
            wr.flags |= UZ_WQE_F_INLINE;
            wr.inline_data = data;
            wr.inline_len = sizeof(data);
        } else {
            wr.sge = &ss;
            wr.num_sge = 1;
        }
        uz_mr_fill(b->mr, 0, UZ_GUARD, sizeof(got));
        uz_post_recv(b->qp, 0xe00a + k, &rs, 1);
        uz_post_send(a->qp, &wr);
        uz_cq_wait(a->qp->scq, &c);
        uz_expect_sq(&c, 0xd00a + k, UZ_WC_SEND, a->qp, sizeof(data));
        uz_cq_wait(b->qp->rcq, &c);
        uz_expect_rq(&c, 0xe00a + k, UZ_WC_RECV, b->qp->qpn, sizeof(got),
                     UZ_WC_F_GRH | UZ_WC_F_IPV4, 0, a->qp->qpn);
        uz_mr_read(b->mr, 0, got, sizeof(got));
        uz_assert_bytes(got + 40, data, sizeof(data), "UD payload, AV");
    }
}

/* The GSI QPs: QP1 on both NICs, Q_Key 0x80010000. */
static void ud_case_gsi(Ud *u)
{
    Ops *t = &u->t;
    UdSide ga = u->a, gb = u->b;
    UzCq *gcq;

    gcq = uz_cq_create(&t->a, UZ_CQ_LOG_DEPTH);
    ga.qp = uz_qp_create(&t->a, UZ_QPT_GSI, gcq, gcq, NULL, 0);
    gb.qp = uz_qp_create(&t->b, UZ_QPT_GSI, NULL, NULL, NULL, 0);
    g_assert_cmpuint(ga.qp->qpn, ==, 1);
    g_assert_cmpuint(gb.qp->qpn, ==, 1);
    uz_ud_up(ga.qp, UZ_GSI_QKEY, 0);
    uz_ud_up(gb.qp, UZ_GSI_QKEY, 0);
    ud_xfer(&ga, &gb, 1, UZ_GSI_QKEY, 256, false, 10);
    ud_xfer(&ga, &gb, 1, UZ_GSI_QKEY, 256, true, 11);
    ud_xfer(&gb, &ga, 1, UZ_GSI_QKEY, 1000, false, 12);
    ud_xfer(&gb, &ga, 1, UZ_GSI_QKEY, 17, true, 13);
}

/* A wrong Q_Key is dropped and counted; the WQE waits for a good one. */
static void ud_case_qkey(Ud *u)
{
    Ops *t = &u->t;
    UdSide *a = &u->a, *b = &u->b;
    UzQp *qa2;

    qkey_drop(t, a, b, a->qp, QKEY ^ 0x10, 0x10);
    qkey_drop(t, a, b, a->qp, 0x7fffffffu, 0x20);

    /* Bit 31 of the WQE's Q_Key: the sender QP's own Q_Key is sent. */
    ud_xfer(a, b, b->qp->qpn, 0x80000000u, 200, false, 20);
    ud_xfer(a, b, b->qp->qpn, 0xdeadbeefu, 200, true, 21);
    /* ... which, for a sender whose own Q_Key differs, does not match. */
    qa2 = uz_qp_create(&t->a, UZ_QPT_UD, NULL, NULL, NULL, 0);
    uz_ud_up(qa2, QKEY + 1, 0x300);
    qkey_drop(t, a, b, qa2, 0x80000000u | QKEY, 0x30);
}

/* Longer than the MTU: LOC_LEN_ERR, nothing sent, the QP in ERR. */
static void ud_case_too_long(Ud *u)
{
    Ops *t = &u->t;
    UdSide *a = &u->a, *b = &u->b;
    struct uz_cqe c;
    uint64_t tx_before;
    UzSge ss;
    UzWr wr;

    tx_before = uz_counter(&t->m, 0, "tx_pkts_ud");
    ss = uz_mr_sge(a->mr, 0, 1025);
    wr = (UzWr) {
        .wr_id = 0xf20, .opcode = UZ_WR_SEND, .flags = UZ_WQE_F_SIGNALED,
        .sge = &ss, .num_sge = 1, .ahn = a->ahn, .remote_qpn = b->qp->qpn,
        .remote_qkey = QKEY,
    };
    uz_post_send(a->qp, &wr);
    uz_cq_wait(a->qp->scq, &c);
    uz_cqe_expect(&c, 0xf20, UZ_WC_SEND, UZ_WC_STATUS_LOC_LEN_ERR,
                  UZ_VERR_NONE, a->qp->qpn);
    g_assert_cmphex(c.wc_flags, ==, 0);
    g_assert_cmpuint(c.src_qp, ==, 0);
    g_assert_cmpuint(uz_counter(&t->m, 0, "tx_pkts_ud"), ==, tx_before);
    uz_cq_assert_empty(b->qp->rcq, 50);
    uz_qp_failed(a->qp, 0);
}

typedef struct UdCase {
    const char *name;
    void (*fn)(Ud *u);
} UdCase;

/* Each case on a machine of its own: none uses what another left. */
static const UdCase ud_cases[] = {
    { "xfer", ud_case_xfer },
    { "split-sge", ud_case_split_sge },
    { "av", ud_case_av },
    { "gsi", ud_case_gsi },
    { "qkey", ud_case_qkey },
    { "too-long", ud_case_too_long },
};

static void test_ud(gconstpointer data)
{
    const UdCase *c = data;
    Ud u;

    ud_start(&u);
    c->fn(&u);
    ops_stop(&u.t);
}

/* ------------------------------------------------------------------ */
/* 9. SRQ                                                             */
/* ------------------------------------------------------------------ */

/* Post a SEND of @len bytes (pattern @seed) on @qa; no waiting. */
static void send_plain(UzQp *qa, UzMr *ma, uint32_t len, uint32_t seed,
                       uint64_t wr_id)
{
    g_autofree uint8_t *data = g_malloc(len + 1);
    UzSge s = uz_mr_sge(ma, 1, len);
    UzWr wr = {
        .wr_id = wr_id, .opcode = UZ_WR_SEND, .flags = UZ_WQE_F_SIGNALED,
        .sge = &s, .num_sge = 1,
    };

    uz_pattern(data, len, seed);
    uz_mr_write(ma, 1, data, len);
    uz_post_send(qa, &wr);
}

/* Two RC pairs whose receivers share one SRQ and one receive CQ. */
typedef struct SrqPairs {
    Ops t;
    UzQp *qa1, *qa2, *qb1, *qb2;
    UzSrq *srq;                 /* 24 WQEs posted, at 1024 * i + 3 of mb */
    UzCq *rcq;
    UzMr *ma1, *ma2, *mb;
} SrqPairs;

/* Alternately, one at a time: the SRQ's WQEs in order. */
static void srq_in_order(SrqPairs *s)
{
    struct uz_cqe c;
    uint8_t data[600];
    int i;

    for (i = 0; i < 8; i++) {
        UzQp *qa = i % 2 ? s->qa2 : s->qa1;
        UzQp *qb = i % 2 ? s->qb2 : s->qb1;
        uint32_t len = 100 + i * 50;

        send_plain(qa, i % 2 ? s->ma2 : s->ma1, len, 300 + i, 0x900 + i);
        uz_sq_done(qa, 0x900 + i, UZ_WC_SEND, len);
        uz_cq_wait(s->rcq, &c);
        uz_expect_rq(&c, 0x5000 + i, UZ_WC_RECV, qb->qpn, len, 0, 0, 0);
        uz_pattern(data, len, 300 + i);
        uz_assert_mr(s->mb, i * 1024 + 3, data, len, "SRQ receive");
        uz_assert_mr_fill(s->mb, i * 1024 + 3 + len, UZ_GUARD,
                          1024 - 3 - len, "after an SRQ receive");
    }
}

/* Both at once: each CQE names the QP that received into that WQE. */
static void srq_both_at_once(SrqPairs *s)
{
    UzQp *qb1 = s->qb1, *qb2 = s->qb2;
    struct uz_cqe c;
    uint8_t data[600];
    int i, k;

    for (k = 0; k < 8; k++) {
        bool seen[2] = { false, false };

        send_plain(s->qa1, s->ma1, 200, 400 + 2 * k, 0xa00 + 2 * k);
        send_plain(s->qa2, s->ma2, 300, 401 + 2 * k, 0xa01 + 2 * k);
        for (i = 0; i < 2; i++) {
            uint64_t idx;
            int who;

            uz_cq_wait(s->rcq, &c);
            idx = c.wr_id - 0x5000;
            g_assert_cmpuint(idx, ==, 8 + 2 * k + i);
            g_assert(c.qpn == qb1->qpn || c.qpn == qb2->qpn);
            who = c.qpn == qb2->qpn;
            g_assert(!seen[who]);
            seen[who] = true;
            uz_expect_rq(&c, c.wr_id, UZ_WC_RECV, who ? qb2->qpn : qb1->qpn,
                         who ? 300 : 200, 0, 0, 0);
            uz_pattern(data, who ? 300 : 200, 400 + 2 * k + who);
            uz_assert_mr(s->mb, idx * 1024 + 3, data, who ? 300 : 200,
                         "concurrent SRQ receive");
        }
        uz_sq_done(s->qa1, 0xa00 + 2 * k, UZ_WC_SEND, 200);
        uz_sq_done(s->qa2, 0xa01 + 2 * k, UZ_WC_SEND, 300);
    }
    uz_cq_assert_empty(s->rcq, 20);
    uz_cq_assert_empty(qb1->scq, 1);
}

/*
 * The limit, on a second SRQ of another pair: 8 posted, limit 4; the
 * event when fewer than 4 remain.
 */
static void srq_limit(SrqPairs *s)
{
    Ops *t = &s->t;
    UzQp *qa3, *qb3;
    UzSrq *srq2;
    int i;

    srq2 = uz_srq_create(&t->b, 4, 4);
    qa3 = uz_qp_create(&t->a, UZ_QPT_RC, NULL, NULL, NULL, 0);
    qb3 = uz_qp_create(&t->b, UZ_QPT_RC, NULL, NULL, srq2, 0);
    uz_rc_connect(qa3, qb3, NULL);
    uz_eq_drain(&t->b, &t->b.async_eq, UZ_EQE_SRQ_LIMIT);
    for (i = 0; i < 8; i++) {
        UzSge r = uz_mr_sge(s->mb, i * 1024, 600);

        uz_srq_post(srq2, 0x6000 + i, &r, 1);
    }
    for (i = 0; i < 8; i++) {
        int remaining = 8 - (i + 1);
        int want = i == 4 || i == 6;

        if (i == 6) {
            /* Re-arm; no event for the WQEs already below the limit. */
            g_assert_cmpint(uz_srq_modify(srq2, 4), ==, UZ_CMD_OK);
            g_assert_cmpint(uz_events_count(&t->b, &t->b.async_eq,
                                            UZ_EQE_SRQ_LIMIT, srq2->srqn, 50),
                            ==, 0);
        }
        send_plain(qa3, s->ma1, 64, 500 + i, 0xb00 + i);
        uz_sq_done(qa3, 0xb00 + i, UZ_WC_SEND, 64);
        uz_rq_done(qb3, 0x6000 + i, UZ_WC_RECV, 64, 0, 0);
        g_test_message("SRQ limit 4, %d posted: %d event(s) expected",
                       remaining, want);
        g_assert_cmpint(uz_events_count(&t->b, &t->b.async_eq,
                                        UZ_EQE_SRQ_LIMIT, srq2->srqn, 50),
                        ==, want);
    }
}

static void test_srq(void)
{
    SrqPairs s;
    Ops *t = &s.t;
    int i;

    ops_start(t);
    s.srq = uz_srq_create(&t->b, 5, 0);
    s.rcq = uz_cq_create(&t->b, UZ_CQ_LOG_DEPTH);
    s.qa1 = uz_qp_create(&t->a, UZ_QPT_RC, NULL, NULL, NULL, 0);
    s.qa2 = uz_qp_create(&t->a, UZ_QPT_RC, NULL, NULL, NULL, 0);
    s.qb1 = uz_qp_create(&t->b, UZ_QPT_RC, NULL, s.rcq, s.srq, 0);
    s.qb2 = uz_qp_create(&t->b, UZ_QPT_RC, NULL, s.rcq, s.srq, 0);
    uz_rc_connect(s.qa1, s.qb1, NULL);
    uz_rc_connect(s.qa2, s.qb2, NULL);
    s.ma1 = uz_mr_reg(&t->a, 4096, UZ_ACCESS_ALL);
    s.ma2 = uz_mr_reg(&t->a, 4096, UZ_ACCESS_ALL);
    s.mb = uz_mr_reg(&t->b, 32 * 1024, UZ_ACCESS_ALL);
    uz_mr_fill(s.mb, 0, UZ_GUARD, 32 * 1024);
    for (i = 0; i < 24; i++) {
        UzSge r = uz_mr_sge(s.mb, i * 1024 + 3, 600);

        uz_srq_post(s.srq, 0x5000 + i, &r, 1);
    }

    /* The second step takes the WQEs the first left, from the ninth on. */
    srq_in_order(&s);
    srq_both_at_once(&s);
    srq_limit(&s);
    /* The first SRQ never had a limit. */
    g_assert_cmpint(uz_events_count(&t->b, &t->b.async_eq, UZ_EQE_SRQ_LIMIT,
                                    s.srq->srqn, 10), ==, 0);
    ops_stop(t);
}

/*
 * RESIZE_SRQ (spec 8.8.1): the SRQ goes on in a new ring with its indices
 * unchanged, the WQEs posted and not taken copied to the slots their
 * indices select; what does not fit, a limit not below the new depth and
 * a bad depth or context are refused.
 */
static uint8_t srq_resize_limit(UzSrq *srq, uint32_t log_depth,
                                uint32_t uctx, bool copy, int limit)
{
    struct uz_cmd_resize_srq c = {
        .srqn = cpu_to_le32(srq->srqn), .uctx = cpu_to_le32(uctx),
        .log_depth = log_depth,
        .flags = limit >= 0 ? UZ_SRQ_RESIZE_LIMIT : 0,
        .limit = cpu_to_le32(limit),
    };
    uint64_t ring = uz_alloc(&srq->n->d, (uint64_t)UZ_RQ_WQE_SIZE << 5);
    uint8_t wqe[UZ_RQ_WQE_SIZE], st;
    uint32_t i, n = 1u << srq->log_depth;

    g_assert_cmpuint(log_depth, <=, 5);
    for (i = srq->pi - n; copy && i != srq->pi; i++) {
        qtest_memread(srq->n->d.qts, srq->ring +
                      (i & (n - 1)) * UZ_RQ_WQE_SIZE, wqe, sizeof(wqe));
        qtest_memwrite(srq->n->d.qts, ring +
                       (i & ((1u << log_depth) - 1)) * UZ_RQ_WQE_SIZE,
                       wqe, sizeof(wqe));
    }
    c.ring_addr = cpu_to_le64(ring);
    st = uz_cmd(srq->n, UZ_CMD_RESIZE_SRQ, &c, sizeof(c), NULL);
    if (st == UZ_CMD_OK) {
        srq->ring = ring;
        srq->log_depth = log_depth;
    }
    return st;
}

static uint8_t srq_resize(UzSrq *srq, uint32_t log_depth, uint32_t uctx,
                          bool copy)
{
    return srq_resize_limit(srq, log_depth, uctx, copy, -1);
}

/* A depth past 2^16, an unknown flag, a ring that is no RAM. */
static void srq_resize_refused(Ops *t, UzSrq *srq)
{
    struct uz_cmd_resize_srq c = {
        .srqn = cpu_to_le32(srq->srqn), .uctx = cpu_to_le32(srq->uctx),
        .ring_addr = cpu_to_le64(srq->ring), .log_depth = 17,
    };

    g_assert_cmpint(uz_cmd(&t->b, UZ_CMD_RESIZE_SRQ, &c, sizeof(c), NULL),
                    ==, UZ_CMD_BAD_PARAM);
    c.log_depth = 4;
    c.flags = 2;
    g_assert_cmpint(uz_cmd(&t->b, UZ_CMD_RESIZE_SRQ, &c, sizeof(c), NULL),
                    ==, UZ_CMD_BAD_PARAM);
    c.flags = 0;
    c.ring_addr = cpu_to_le64(t->b.d.db.addr);
    g_assert_cmpint(uz_cmd(&t->b, UZ_CMD_RESIZE_SRQ, &c, sizeof(c), NULL),
                    ==, UZ_CMD_BAD_ADDR);
}

static void test_srq_resize(void)
{
    Ops t;
    UzQp *qa, *qb;
    UzSrq *srq;
    UzMr *ma, *mb;
    UzSge last;
    uint8_t data[64];
    int i;

    ops_start(&t);
    srq = uz_srq_create(&t.b, 2, 0);
    qa = uz_qp_create(&t.a, UZ_QPT_RC, NULL, NULL, NULL, 0);
    qb = uz_qp_create(&t.b, UZ_QPT_RC, NULL, NULL, srq, 0);
    uz_rc_connect(qa, qb, NULL);
    ma = uz_mr_reg(&t.a, 4096, UZ_ACCESS_ALL);
    mb = uz_mr_reg(&t.b, 64 * 64, UZ_ACCESS_ALL);

    /* Four WQEs, one taken: three outstanding fit no ring of two. */
    for (i = 0; i < 4; i++) {
        UzSge r = uz_mr_sge(mb, i * 64, 64);

        uz_srq_post(srq, 0x7000 + i, &r, 1);
    }
    send_plain(qa, ma, 64, 700, 0xc00);
    uz_sq_done(qa, 0xc00, UZ_WC_SEND, 64);
    uz_rq_done(qb, 0x7000, UZ_WC_RECV, 64, 0, 0);
    g_assert_cmpint(srq_resize(srq, 1, srq->uctx, true), ==,
                    UZ_CMD_BAD_PARAM);
    g_assert_cmpint(srq_resize(srq, 0, srq->uctx, true), ==,
                    UZ_CMD_BAD_PARAM);
    g_assert_cmpint(srq_resize(srq, 4, srq->uctx + 1, true), ==,
                    UZ_CMD_BAD_HANDLE);
    srq_resize_refused(&t, srq);

    /* Grown to 16: the three come out of the new ring, 13 more fill it. */
    g_assert_cmpint(srq_resize(srq, 4, srq->uctx, true), ==, UZ_CMD_OK);
    for (i = 4; i < 17; i++) {
        UzSge r = uz_mr_sge(mb, i * 64, 64);

        uz_srq_post(srq, 0x7000 + i, &r, 1);
    }
    for (i = 1; i < 17; i++) {
        send_plain(qa, ma, 64, 700 + i, 0xc00 + i);
        uz_sq_done(qa, 0xc00 + i, UZ_WC_SEND, 64);
        uz_rq_done(qb, 0x7000 + i, UZ_WC_RECV, 64, 0, 0);
        uz_pattern(data, 64, 700 + i);
        uz_assert_mr(mb, i * 64, data, 64, "receive after an SRQ resize");
    }

    /*
     * Empty: shrunk to 2, but not below its limit, unless the command
     * lowers the limit too; a new limit must fit the new depth.
     */
    g_assert_cmpint(uz_srq_modify(srq, 3), ==, UZ_CMD_OK);
    g_assert_cmpint(srq_resize(srq, 1, srq->uctx, false), ==,
                    UZ_CMD_BAD_PARAM);
    g_assert_cmpint(srq_resize_limit(srq, 1, srq->uctx, false, 2), ==,
                    UZ_CMD_BAD_PARAM);
    g_assert_cmpint(srq_resize_limit(srq, 1, srq->uctx, false, 1), ==,
                    UZ_CMD_OK);
    /* The limit of 1 is armed: taking the only WQE raises the event. */
    uz_eq_drain(&t.b, &t.b.async_eq, UZ_EQE_SRQ_LIMIT);
    last = uz_mr_sge(mb, 0, 64);
    uz_srq_post(srq, 0x7100, &last, 1);
    send_plain(qa, ma, 64, 800, 0xd00);
    uz_sq_done(qa, 0xd00, UZ_WC_SEND, 64);
    uz_rq_done(qb, 0x7100, UZ_WC_RECV, 64, 0, 0);
    g_assert_cmpint(uz_events_count(&t.b, &t.b.async_eq, UZ_EQE_SRQ_LIMIT,
                                    srq->srqn, 50), ==, 1);
    ops_stop(&t);
}

/* ------------------------------------------------------------------ */
/* 10. Races between QPs                                              */
/* ------------------------------------------------------------------ */

#define RACE_N      200
#define RACE_BATCH  50

/* Two RC pairs between the NICs, on the same memory. */
typedef struct Races {
    Ops t;
    UzQp *qa[2], *qb[2];
    UzMr *ma, *mb, *mr_read, *mw;
} Races;

/* The originals chain from the initial value to the final one. */
static void races_check_chain(UzMr *ma, const uint64_t *addend,
                              uint64_t initial, uint64_t sum)
{
    uint64_t orig[RACE_N];
    g_autoptr(GHashTable) by_orig = g_hash_table_new(g_int64_hash,
                                                     g_int64_equal);
    uint64_t v, cur;
    int i;

    for (i = 0; i < RACE_N; i++) {
        uz_mr_read(ma, 8 * i, &v, 8);
        orig[i] = le64_to_cpu(v);
        if (g_hash_table_contains(by_orig, &orig[i])) {
            g_error("original value 0x%" PRIx64 " returned twice", orig[i]);
        }
        g_hash_table_insert(by_orig, &orig[i], GINT_TO_POINTER(i + 1));
    }
    cur = initial;
    for (i = 0; i < RACE_N; i++) {
        gpointer idx = g_hash_table_lookup(by_orig, &cur);

        if (!idx) {
            g_error("no FETCH_ADD returned 0x%" PRIx64 " (step %d)", cur, i);
        }
        cur += addend[GPOINTER_TO_INT(idx) - 1];
    }
    g_assert_cmphex(cur, ==, initial + sum);
}

/*
 * RACE_N FETCH_ADDs on one word, by turns from the two QPs, in batches:
 * the word ends at the sum, each original comes back once.
 */
static void races_fetch_add(Races *ra)
{
    const uint64_t initial = 0xffffffffff000000ull;
    UzMr *ma = ra->ma, *mb = ra->mb;
    uint64_t addend[RACE_N];
    uint64_t v, sum = 0;
    int i, r;

    v = cpu_to_le64(initial);
    uz_mr_write(mb, 4096, &v, 8);
    for (r = 0; r < RACE_N / RACE_BATCH; r++) {
        for (i = r * RACE_BATCH; i < (r + 1) * RACE_BATCH; i++) {
            UzSge s = uz_mr_sge(ma, 8 * i, 8);
            UzWr wr;

            addend[i] = 1 + (i * 7919u) % 1000 + ((uint64_t)(i % 7) << 33);
            sum += addend[i];
            wr = (UzWr) {
                .wr_id = 0xfa000 + i, .opcode = UZ_WR_ATOMIC_FETCH_ADD,
                .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1,
                .remote_addr = uz_mr_va(mb, 4096), .rkey = mb->key,
                .compare_add = addend[i],
            };
            uz_post_send(ra->qa[i % 2], &wr);
        }
        for (i = r * RACE_BATCH; i < (r + 1) * RACE_BATCH; i++) {
            uz_sq_done(ra->qa[i % 2], 0xfa000 + i, UZ_WC_FETCH_ADD, 8);
        }
    }
    uz_mr_read(mb, 4096, &v, 8);
    g_assert_cmphex(le64_to_cpu(v), ==, initial + sum);
    races_check_chain(ma, addend, initial, sum);
}

/*
 * READs on one pair racing WRITEs from the other to the same bytes:
 * all posted, then all waited for.
 */
static void races_read_write(Races *ra)
{
    UzMr *mb = ra->mb, *mr_read = ra->mr_read, *mw = ra->mw;
    g_autofree uint8_t *pat = g_malloc(65536);
    int r, p;

    for (r = 0; r < 4; r++) {
        UzQp *qr = ra->qa[r % 2], *qw = ra->qa[(r + 1) % 2];

        for (p = 0; p < 4; p++) {
            uz_pattern(pat, 65536, 1000 + r * 4 + p);
            uz_mr_write(mw, 65536 * p, pat, 65536);
        }
        for (p = 0; p < 8; p++) {
            UzSge s = uz_mr_sge(mr_read, 65536 * p, 65536);
            UzWr wr = {
                .wr_id = 0x4ead0 + p, .opcode = UZ_WR_RDMA_READ,
                .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1,
                .remote_addr = uz_mr_va(mb, 65536), .rkey = mb->key,
            };

            uz_sq_post(qr, &wr);
            if (p % 2) {
                UzSge sw = uz_mr_sge(mw, 65536 * (p / 2), 65536);
                UzWr ww = {
                    .wr_id = 0x3e170 + p / 2, .opcode = UZ_WR_RDMA_WRITE,
                    .flags = UZ_WQE_F_SIGNALED, .sge = &sw, .num_sge = 1,
                    .remote_addr = uz_mr_va(mb, 65536), .rkey = mb->key,
                };

                uz_sq_ring(qr);
                uz_post_send(qw, &ww);
            }
        }
        for (p = 0; p < 4; p++) {
            uz_sq_done(qw, 0x3e170 + p, UZ_WC_RDMA_WRITE, 65536);
        }
        for (p = 0; p < 8; p++) {
            uz_sq_done(qr, 0x4ead0 + p, UZ_WC_RDMA_READ, 65536);
        }
        /* The WRITEs of one QP land in order: the last one stays. */
        uz_assert_mr(mb, 65536, pat, 65536, "last WRITE");
    }
}

/*
 * One test: the READs and WRITEs follow the atomics on the same QPs,
 * whose small send CQs the atomics have wrapped several times.
 */
static void test_races(void)
{
    Races ra;
    Ops *t = &ra.t;
    int i;

    ops_start(t);
    for (i = 0; i < 2; i++) {
        /* Small send CQs: their rings wrap several times. */
        UzCq *scq = uz_cq_create(&t->a, 5);

        ra.qa[i] = uz_qp_create(&t->a, UZ_QPT_RC, scq, NULL, NULL, 0);
        ra.qb[i] = uz_qp_create(&t->b, UZ_QPT_RC, NULL, NULL, NULL, 0);
        uz_rc_connect(ra.qa[i], ra.qb[i], NULL);
    }
    ra.ma = uz_mr_reg(&t->a, 8 * RACE_N + 4096, UZ_ACCESS_ALL);
    ra.mb = uz_mr_reg(&t->b, 128 * 1024, UZ_ACCESS_ALL);
    ra.mr_read = uz_mr_reg(&t->a, 8 * 65536, UZ_ACCESS_ALL);
    ra.mw = uz_mr_reg(&t->a, 4 * 65536, UZ_ACCESS_ALL);

    races_fetch_add(&ra);
    races_read_write(&ra);
    for (i = 0; i < 2; i++) {
        uz_cq_assert_empty(ra.qa[i]->scq, 5);
        uz_cq_assert_empty(ra.qb[i]->rcq, 1);
    }
    ops_stop(t);
}

/* ------------------------------------------------------------------ */
/* 11. WQEs posted before RTS                                         */
/* ------------------------------------------------------------------ */

static void test_not_before_rts(void)
{
    static const UzRcOpts o = UZ_RC_OPTS_DEFAULT;
    Ops t;
    UzQp *qa, *qb;
    UzMr *ma, *mb;
    uint8_t data[3000];
    UzSge s[4], r[3];
    UzWr wr;

    ops_start(&t);
    qa = uz_qp_create(&t.a, UZ_QPT_RC, NULL, NULL, NULL, 0);
    qb = uz_qp_create(&t.b, UZ_QPT_RC, NULL, NULL, NULL, 0);
    ma = uz_mr_reg(&t.a, 16384, UZ_ACCESS_ALL);
    mb = uz_mr_reg(&t.b, 16384, UZ_ACCESS_ALL);
    uz_pattern(data, sizeof(data), 11);
    uz_mr_write(ma, 0, data, sizeof(data));
    uz_mr_write(mb, 8192, data, sizeof(data));
    uz_mr_fill(mb, 0, UZ_GUARD, 8192);
    uz_mr_fill(ma, 8192, UZ_GUARD, 8192);

    /* INIT: both QPs take WQEs and do nothing with them. */
    uz_rc_init(qa);
    uz_rc_init(qb);
    r[0] = uz_mr_sge(mb, 0, 2048);
    r[1] = uz_mr_sge(mb, 2048, 2048);
    uz_post_recv(qb, 0xb0, &r[0], 1);
    uz_post_recv(qb, 0xb1, &r[1], 1);
    r[2] = uz_mr_sge(ma, 8192, 2048);
    uz_post_recv(qa, 0xa0, &r[2], 1);
    s[0] = uz_mr_sge(ma, 0, 1500);
    wr = (UzWr) {
        .wr_id = 1, .opcode = UZ_WR_RDMA_WRITE, .flags = UZ_WQE_F_SIGNALED,
        .sge = &s[0], .num_sge = 1, .remote_addr = uz_mr_va(mb, 4096),
        .rkey = mb->key,
    };
    uz_post_send(qa, &wr);
    s[1] = uz_mr_sge(ma, 1, 1200);
    wr = (UzWr) {
        .wr_id = 2, .opcode = UZ_WR_SEND_IMM, .flags = UZ_WQE_F_SIGNALED,
        .sge = &s[1], .num_sge = 1, .imm = 0x1234,
    };
    uz_post_send(qa, &wr);
    s[2] = uz_mr_sge(mb, 8192, 999);
    wr = (UzWr) {
        .wr_id = 0xbb, .opcode = UZ_WR_SEND, .flags = UZ_WQE_F_SIGNALED,
        .sge = &s[2], .num_sge = 1,
    };
    uz_post_send(qb, &wr);
    uz_cq_assert_empty(qa->scq, 100);
    uz_cq_assert_empty(qa->rcq, 1);
    uz_cq_assert_empty(qb->scq, 1);
    uz_cq_assert_empty(qb->rcq, 1);

    /* RTR: still nothing is sent. */
    uz_rc_rtr(qa, qb, o.psn[1], &o);
    uz_rc_rtr(qb, qa, o.psn[0], &o);
    s[3] = uz_mr_sge(ma, 2, 2000);
    wr = (UzWr) {
        .wr_id = 3, .opcode = UZ_WR_SEND, .flags = UZ_WQE_F_SIGNALED,
        .sge = &s[3], .num_sge = 1,
    };
    uz_post_send(qa, &wr);
    uz_cq_assert_empty(qa->scq, 100);
    uz_cq_assert_empty(qa->rcq, 1);
    uz_cq_assert_empty(qb->scq, 1);
    uz_cq_assert_empty(qb->rcq, 1);
    uz_assert_mr_fill(mb, 0, UZ_GUARD, 8192, "target before RTS");
    uz_assert_mr_fill(ma, 8192, UZ_GUARD, 8192, "target before RTS");

    /* qa to RTS: its three WQEs run; qb, in RTR, receives and answers. */
    uz_rc_rts(qa, o.psn[0], &o);
    uz_sq_done(qa, 1, UZ_WC_RDMA_WRITE, 1500);
    uz_sq_done(qa, 2, UZ_WC_SEND, 1200);
    uz_sq_done(qa, 3, UZ_WC_SEND, 2000);
    uz_rq_done(qb, 0xb0, UZ_WC_RECV, 1200, UZ_WC_F_IMM, 0x1234);
    uz_rq_done(qb, 0xb1, UZ_WC_RECV, 2000, 0, 0);
    uz_assert_mr(mb, 4096, data, 1500, "WRITE posted in INIT");
    uz_assert_mr(mb, 0, data + 1, 1200, "SEND posted in INIT");
    uz_assert_mr(mb, 2048, data + 2, 2000, "SEND posted in RTR");
    uz_cq_assert_empty(qb->scq, 100);
    uz_cq_assert_empty(qa->rcq, 1);
    uz_assert_mr_fill(ma, 8192, UZ_GUARD, 8192, "qb's SEND before its RTS");

    /* qb to RTS: its SEND, posted in INIT, runs. */
    uz_rc_rts(qb, o.psn[1], &o);
    uz_sq_done(qb, 0xbb, UZ_WC_SEND, 999);
    uz_rq_done(qa, 0xa0, UZ_WC_RECV, 999, 0, 0);
    uz_assert_mr(ma, 8192, data, 999, "SEND of qb");
    uz_cq_assert_empty(qa->scq, 10);
    uz_cq_assert_empty(qb->rcq, 1);
    ops_stop(&t);
}

/* ------------------------------------------------------------------ */
/* 12. Many QPs at once                                               */
/* ------------------------------------------------------------------ */

#define NPAIRS      8
#define WLEN        65536
#define SLEN        5000

static void test_many_qps(void)
{
    Ops t;
    UzQp *qa[NPAIRS], *qb[NPAIRS];
    UzMr *ma, *mb;
    g_autofree uint8_t *buf = g_malloc(NPAIRS * (WLEN + SLEN));
    int sq_got[NPAIRS] = { 0 }, rq_got[NPAIRS] = { 0 };
    int left = 3 * NPAIRS;
    int i, polls;
    const uint64_t rsend = NPAIRS * WLEN;

    ops_start(&t);
    for (i = 0; i < NPAIRS; i++) {
        rc_pair(&t, &qa[i], &qb[i], 0);
    }
    ma = uz_mr_reg(&t.a, NPAIRS * (WLEN + SLEN), UZ_ACCESS_ALL);
    mb = uz_mr_reg(&t.b, NPAIRS * (WLEN + SLEN + 64), UZ_ACCESS_ALL);
    uz_pattern(buf, NPAIRS * (WLEN + SLEN), 12);
    uz_mr_write(ma, 0, buf, NPAIRS * (WLEN + SLEN));
    uz_mr_fill(mb, 0, UZ_GUARD, NPAIRS * (WLEN + SLEN + 64));

    /* Post everything, then ring every SQ. */
    for (i = 0; i < NPAIRS; i++) {
        UzSge r = uz_mr_sge(mb, rsend + i * (SLEN + 64), SLEN + 64);

        uz_post_recv(qb[i], 0x8000 + i, &r, 1);
    }
    for (i = 0; i < NPAIRS; i++) {
        UzSge sw = uz_mr_sge(ma, i * WLEN, WLEN);
        UzSge ss = uz_mr_sge(ma, NPAIRS * WLEN + i * SLEN, SLEN);
        UzWr wr = {
            .wr_id = 0x100 + i, .opcode = UZ_WR_RDMA_WRITE,
            .flags = UZ_WQE_F_SIGNALED, .sge = &sw, .num_sge = 1,
            .remote_addr = uz_mr_va(mb, i * WLEN), .rkey = mb->key,
        };

        uz_sq_post(qa[i], &wr);
        wr = (UzWr) {
            .wr_id = 0x200 + i, .opcode = UZ_WR_SEND,
            .flags = UZ_WQE_F_SIGNALED, .sge = &ss, .num_sge = 1,
        };
        uz_sq_post(qa[i], &wr);
    }
    for (i = 0; i < NPAIRS; i++) {
        uz_sq_ring(qa[i]);
    }

    /* Poll every CQ until all 24 completions are in. */
    for (polls = 0; left && polls < UZ_POLL_LIMIT; polls++) {
        for (i = 0; i < NPAIRS; i++) {
            struct uz_cqe c;

            while (uz_cq_poll(qa[i]->scq, &c)) {
                g_assert_cmpint(sq_got[i], <, 2);
                if (sq_got[i] == 0) {
                    uz_expect_sq(&c, 0x100 + i, UZ_WC_RDMA_WRITE, qa[i], WLEN);
                } else {
                    uz_expect_sq(&c, 0x200 + i, UZ_WC_SEND, qa[i], SLEN);
                }
                sq_got[i]++;
                left--;
            }
            while (uz_cq_poll(qb[i]->rcq, &c)) {
                g_assert_cmpint(rq_got[i], <, 1);
                uz_expect_rq(&c, 0x8000 + i, UZ_WC_RECV, qb[i]->qpn, SLEN, 0,
                             0, 0);
                rq_got[i]++;
                left--;
            }
        }
        uz_poll_pause(&t.a.d);
    }
    g_assert_cmpint(left, ==, 0);
    for (i = 0; i < NPAIRS; i++) {
        uz_assert_mr(mb, i * WLEN, buf + i * WLEN, WLEN, "write of a pair");
        uz_assert_mr(mb, rsend + i * (SLEN + 64),
                     buf + NPAIRS * WLEN + i * SLEN, SLEN, "send of a pair");
        uz_assert_mr_fill(mb, rsend + i * (SLEN + 64) + SLEN, UZ_GUARD, 64,
                          "after a send");
        uz_cq_assert_empty(qa[i]->scq, 1);
        uz_cq_assert_empty(qb[i]->rcq, 1);
    }
    ops_stop(&t);
}

int main(int argc, char **argv)
{
    int i;

    g_test_init(&argc, &argv, NULL);
    qtest_add_func("/uzura/ops/rc-send", test_rc_send);
    qtest_add_func("/uzura/ops/cq-pages", test_cq_pages);
    qtest_add_func("/uzura/ops/rc-sgl", test_rc_sgl);
    qtest_add_func("/uzura/ops/rc-write", test_rc_write);
    qtest_add_func("/uzura/ops/rc-read", test_rc_read);
    qtest_add_func("/uzura/ops/rc-atomic", test_rc_atomic);
    qtest_add_func("/uzura/ops/signalling", test_signalling);
    qtest_add_func("/uzura/ops/solicited", test_solicited);
    for (i = 0; i < ARRAY_SIZE(ud_cases); i++) {
        g_autofree char *path = g_strdup_printf("/uzura/ops/ud/%s",
                                                ud_cases[i].name);

        qtest_add_data_func(path, &ud_cases[i], test_ud);
    }
    qtest_add_func("/uzura/ops/srq", test_srq);
    qtest_add_func("/uzura/ops/srq-resize", test_srq_resize);
    qtest_add_func("/uzura/ops/races", test_races);
    qtest_add_func("/uzura/ops/not-before-rts", test_not_before_rts);
    qtest_add_func("/uzura/ops/many-qps", test_many_qps);
    return g_test_run();
}
