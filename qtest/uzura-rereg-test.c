/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uzura: REREG_MR (spec 8.10.2): an MR changes its translation, PD or
 * access in place and keeps its key, so a peer holding the key reaches
 * the new memory, under the new rules, and never the old pages; every
 * refused REREG_MR leaves the MR exactly as it was.
 */
#include "uzura-pair.h"

#define LEN         (2 * UZ_PAGE_SIZE)

/* REREG_MR of @mr's key in its context, with the parts @c names. */
static uint8_t rereg(UzMr *mr, struct uz_cmd_rereg_mr c)
{
    c.key = cpu_to_le32(mr->key);
    c.uctx = cpu_to_le32(mr->n->uctx);
    return uz_cmd(mr->n, UZ_CMD_REREG_MR, &c, sizeof(c), NULL);
}

/*
 * Move @mr to @npages new pages (in reverse order) at @iova, @len bytes:
 * our copy follows when the device takes it.
 */
static void rereg_trans(UzMr *mr, uint64_t iova, uint64_t len,
                        uint32_t npages)
{
    uint64_t base = uz_alloc_pages(mr->n, npages);
    g_autofree uint64_t *pages = g_new(uint64_t, npages);
    uint64_t pbl;
    uint32_t k;

    for (k = 0; k < npages; k++) {
        pages[k] = base + (uint64_t)(npages - 1 - k) * UZ_PAGE_SIZE;
    }
    pbl = uz_pbl_put(mr->n, pages, npages);
    g_assert_cmpint(rereg(mr, (struct uz_cmd_rereg_mr) {
        .change = UZ_REREG_TRANS, .iova = cpu_to_le64(iova),
        .length = cpu_to_le64(len), .pbl_addr = cpu_to_le64(pbl),
        .npages = cpu_to_le32(npages), .page_shift = UZ_PAGE_SHIFT,
    }), ==, UZ_CMD_OK);
    mr->iova = iova;
    mr->len = len;
    mr->pbl = pbl;
    mr->npages = npages;
    mr->pages = uz_own(mr->n, npages * sizeof(uint64_t));
    memcpy(mr->pages, pages, npages * sizeof(uint64_t));
}

static void assert_pattern(UzMr *mr, uint64_t off, uint32_t len,
                           uint32_t seed)
{
    g_autofree uint8_t *want = g_malloc(len);

    uz_pattern(want, len, seed);
    uz_assert_mr(mr, off, want, len, "re-registered MR");
}

/* The guest pages @pages (@n of them) still hold @len bytes of @seed. */
static void assert_pages(Pair *p, const uint64_t *pages, uint32_t n,
                         uint64_t iova, uint32_t len, uint32_t seed)
{
    g_autofree uint8_t *want = g_malloc(len);
    g_autofree uint8_t *got = g_malloc(len);
    UzMr old = {
        .n = &p->n[1], .iova = iova, .len = len, .npages = n,
        .pages = (uint64_t *)pages,
    };

    uz_pattern(want, len, seed);
    uz_mr_read(&old, 0, got, len);
    g_assert(!memcmp(got, want, len));
}

/*
 * A new translation, twice: the same iova on new pages (the cached
 * translations of the old ones must go), then a new iova and length.  The
 * peer's key reaches the new pages, the old ones keep what they had, the
 * key works locally too, and the old range is out of bounds.
 */
static void test_translation(void)
{
    g_autofree uint64_t *old = NULL;
    g_autofree uint8_t *want = NULL;
    uint64_t iova, va2;
    UzMr *mr;
    UzSge s;
    UzWr wr;
    Pair p;

    pair_start(&p);
    mr = uz_mr_reg(&p.n[1], LEN, UZ_ACCESS_ALL);
    iova = mr->iova;
    pair_write(&p, mr->key, iova, LEN, 1, UZ_WC_STATUS_SUCCESS);
    assert_pattern(mr, 0, LEN, 1);
    old = g_memdup2(mr->pages, mr->npages * sizeof(uint64_t));

    rereg_trans(mr, iova, LEN, 2);
    pair_write(&p, mr->key, iova, LEN, 2, UZ_WC_STATUS_SUCCESS);
    assert_pattern(mr, 0, LEN, 2);
    assert_pages(&p, old, 2, iova, LEN, 1);

    /* Not page-aligned, three pages. */
    va2 = iova + 0x100000 + 0x100;
    rereg_trans(mr, va2, 3 * UZ_PAGE_SIZE - 0x100, 3);
    pair_write(&p, mr->key, va2 + 0x80, 2 * UZ_PAGE_SIZE, 3,
               UZ_WC_STATUS_SUCCESS);
    assert_pattern(mr, 0x80, 2 * UZ_PAGE_SIZE, 3);

    /* The lkey, from the other side: qb WRITEs from it into ma. */
    s = uz_mr_sge(mr, 0x80, 1000);
    wr = (UzWr) {
        .wr_id = 0x5100, .opcode = UZ_WR_RDMA_WRITE,
        .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1,
        .remote_addr = uz_mr_va(p.ma, 0), .rkey = p.ma->key,
    };
    uz_post_send(p.qb, &wr);
    uz_sq_done(p.qb, 0x5100, UZ_WC_RDMA_WRITE, 1000);
    want = g_malloc(2 * UZ_PAGE_SIZE);
    uz_pattern(want, 2 * UZ_PAGE_SIZE, 3);
    uz_assert_mr(p.ma, 0, want, 1000, "bytes sent with the lkey");

    /* The old range is gone. */
    pair_write(&p, mr->key, iova, 64, 4, UZ_WC_STATUS_REM_ACCESS_ERR);
    pair_stop(&p);
}

/*
 * Access and PD: taking remote write away refuses the peer's WRITE;
 * giving it back (same key) lets the next one in.  An MR moved to
 * another PD is out of reach of the QPs of its old one, holds the new PD
 * (which cannot go meanwhile), and comes back.
 */
static void test_access_pd(void)
{
    UzQp *a, *b;
    uint32_t pd2;
    UzMr *mr;
    Pair p;
    struct uz_cmd_obj dealloc = { 0 };

    pair_start(&p);
    mr = uz_mr_reg(&p.n[1], LEN, UZ_ACCESS_ALL);
    g_assert_cmpint(rereg(mr, (struct uz_cmd_rereg_mr) {
        .change = UZ_REREG_ACCESS,
        .access = cpu_to_le32(UZ_ACCESS_LOCAL_WRITE | UZ_ACCESS_REMOTE_READ),
    }), ==, UZ_CMD_OK);
    pair_write(&p, mr->key, mr->iova, 64, 1, UZ_WC_STATUS_REM_ACCESS_ERR);
    g_assert_cmpint(rereg(mr, (struct uz_cmd_rereg_mr) {
        .change = UZ_REREG_ACCESS, .access = cpu_to_le32(UZ_ACCESS_ALL),
    }), ==, UZ_CMD_OK);
    pair_fresh_qps(&p, &a, &b);
    p.qa = a;
    p.qb = b;
    pair_write(&p, mr->key, mr->iova, LEN, 2, UZ_WC_STATUS_SUCCESS);
    assert_pattern(mr, 0, LEN, 2);

    pd2 = uz_pd_alloc(&p.n[1]);
    g_assert_cmpint(rereg(mr, (struct uz_cmd_rereg_mr) {
        .change = UZ_REREG_PD, .pdn = cpu_to_le32(pd2),
    }), ==, UZ_CMD_OK);
    dealloc.handle = cpu_to_le32(pd2);
    g_assert_cmpint(uz_cmd(&p.n[1], UZ_CMD_DEALLOC_PD, &dealloc,
                           sizeof(dealloc), NULL), ==, UZ_CMD_BUSY);
    pair_write(&p, mr->key, mr->iova, 64, 3, UZ_WC_STATUS_REM_ACCESS_ERR);
    assert_pattern(mr, 0, LEN, 2);

    g_assert_cmpint(rereg(mr, (struct uz_cmd_rereg_mr) {
        .change = UZ_REREG_PD, .pdn = cpu_to_le32(p.n[1].pdn),
    }), ==, UZ_CMD_OK);
    g_assert_cmpint(uz_cmd(&p.n[1], UZ_CMD_DEALLOC_PD, &dealloc,
                           sizeof(dealloc), NULL), ==, UZ_CMD_OK);
    pair_fresh_qps(&p, &a, &b);
    p.qa = a;
    p.qb = b;
    pair_write(&p, mr->key, mr->iova, LEN, 4, UZ_WC_STATUS_SUCCESS);
    assert_pattern(mr, 0, LEN, 4);
    pair_stop(&p);
}

/* What test_refused's steps try to change, and with what. */
typedef struct Refused {
    Pair p;
    UzMr *mr;                   /* every refusal is about this one ... */
    UzMr *dma, *fast;           /* ... or one that may not be changed */
    uint32_t pd2;               /* a PD of the kernel's, unused */
    uint64_t pbl;               /* a good page list of one page */
    uint64_t db;                /* the device's BAR 4: no RAM */
} Refused;

/*
 * No such MR: index 0, a stale key byte, another context, free; the
 * kernel's DMA MR, and its fast-reg MR once registered.
 */
static void refused_no_mr(Refused *r)
{
    Pair *p = &r->p;
    UzMr *mr = r->mr;
    struct uz_cmd_rereg_mr c;
    UzWr wr;

    c = (struct uz_cmd_rereg_mr) { .change = UZ_REREG_ACCESS,
                                   .access = cpu_to_le32(UZ_ACCESS_ALL) };
    c.key = cpu_to_le32(mr->key & 0xff);
    g_assert_cmpint(uz_cmd(&p->n[1], UZ_CMD_REREG_MR, &c, sizeof(c), NULL),
                    ==, UZ_CMD_BAD_HANDLE);
    c.key = cpu_to_le32(mr->key ^ 1);
    g_assert_cmpint(uz_cmd(&p->n[1], UZ_CMD_REREG_MR, &c, sizeof(c), NULL),
                    ==, UZ_CMD_BAD_HANDLE);
    c.key = cpu_to_le32(mr->key);
    c.uctx = cpu_to_le32(3);
    g_assert_cmpint(uz_cmd(&p->n[1], UZ_CMD_REREG_MR, &c, sizeof(c), NULL),
                    ==, UZ_CMD_BAD_HANDLE);
    g_assert_cmpint(rereg(r->fast, c), ==, UZ_CMD_BAD_HANDLE);
    /* The kernel's DMA MR, and its fast-reg MR once registered. */
    g_assert_cmpint(rereg(r->dma, c), ==, UZ_CMD_BAD_PARAM);
    wr = uz_fast_map(r->fast, 0x10000, UZ_PAGE_SIZE, UZ_ACCESS_ALL, 0x61);
    uz_post_send(p->qb, &wr);
    uz_sq_done(p->qb, wr.wr_id, UZ_WC_REG_MR, 0);
    g_assert_cmpint(rereg(r->fast, c), ==, UZ_CMD_BAD_PARAM);
    /* The key is checked first: a bad key with nothing to change too. */
    c = (struct uz_cmd_rereg_mr) { .change = 0,
                                   .key = cpu_to_le32(mr->key ^ 1) };
    g_assert_cmpint(uz_cmd(&p->n[1], UZ_CMD_REREG_MR, &c, sizeof(c), NULL),
                    ==, UZ_CMD_BAD_HANDLE);
}

/* The PD of a user context of its own: not the MR's to move to. */
static void refused_other_context_pd(Refused *r)
{
    UzNode *n = &r->p.n[1];
    struct uz_admin_cqe cqe;
    uint32_t upd;

    g_assert_cmpint(uz_cmd(n, UZ_CMD_CREATE_UCTX, NULL, 0, &cqe), ==,
                    UZ_CMD_OK);
    n->uctx = le32_to_cpu(cqe.out0);
    upd = uz_pd_alloc(n);
    n->uctx = 0;
    g_assert_cmpint(rereg(r->mr, (struct uz_cmd_rereg_mr) {
        .change = UZ_REREG_PD, .pdn = cpu_to_le32(upd) }), ==,
        UZ_CMD_BAD_HANDLE);
    g_assert_cmpint(rereg(r->mr, (struct uz_cmd_rereg_mr) {
        .change = UZ_REREG_PD | UZ_REREG_ACCESS,
        .pdn = cpu_to_le32(upd), .access = cpu_to_le32(0x20) }), ==,
        UZ_CMD_BAD_HANDLE);
}

/* The parts to change, the PD and the access: each bad in one way. */
static void refused_pd_access(Refused *r)
{
    UzMr *mr = r->mr;

    /* Nothing to change, or an unknown part. */
    g_assert_cmpint(rereg(mr, (struct uz_cmd_rereg_mr) { .change = 0 }), ==,
                    UZ_CMD_BAD_PARAM);
    g_assert_cmpint(rereg(mr, (struct uz_cmd_rereg_mr) {
        .change = UZ_REREG_ACCESS | 0x08,
        .access = cpu_to_le32(UZ_ACCESS_ALL) }), ==, UZ_CMD_BAD_PARAM);
    /* A PD that is not there, or another context's; before the access. */
    g_assert_cmpint(rereg(mr, (struct uz_cmd_rereg_mr) {
        .change = UZ_REREG_PD, .pdn = cpu_to_le32(200) }), ==,
        UZ_CMD_BAD_HANDLE);
    refused_other_context_pd(r);
    /* Access: remote write without local write; an unknown bit. */
    g_assert_cmpint(rereg(mr, (struct uz_cmd_rereg_mr) {
        .change = UZ_REREG_ACCESS,
        .access = cpu_to_le32(UZ_ACCESS_REMOTE_WRITE) }), ==,
        UZ_CMD_BAD_PARAM);
    g_assert_cmpint(rereg(mr, (struct uz_cmd_rereg_mr) {
        .change = UZ_REREG_ACCESS, .access = cpu_to_le32(0x20) }), ==,
        UZ_CMD_BAD_PARAM);
    /* Bad access with a good PD: the PD does not move either. */
    g_assert_cmpint(rereg(mr, (struct uz_cmd_rereg_mr) {
        .change = UZ_REREG_PD | UZ_REREG_ACCESS, .pdn = cpu_to_le32(r->pd2),
        .access = cpu_to_le32(UZ_ACCESS_REMOTE_ATOMIC) }), ==,
        UZ_CMD_BAD_PARAM);
}

/* Translations: each bad in one way. */
static void refused_translations(Refused *r)
{
    struct uz_cmd_rereg_mr bad[] = {
        /* no pages */
        { .iova = 0, .length = 16, .npages = 0 },
        /* pages below 4 KiB, above 1 GiB */
        { .iova = 0, .length = 16, .npages = 1, .page_shift = 11 },
        { .iova = 0, .length = 16, .npages = 1, .page_shift = 31 },
        /* one page for two */
        { .iova = 0x800, .length = UZ_PAGE_SIZE, .npages = 1 },
        /* past 2^64 */
        { .iova = ~0ull - 8, .length = 64, .npages = 1 },
        /* above max_mr_size (4 GiB) */
        { .iova = 0, .length = (1ull << 32) + 1,
          .npages = (1u << 20) + 1 },
        /* the page list in the device's BAR 4 */
        { .iova = 0, .length = 16, .npages = 1, .pbl_addr = r->db },
    };
    const uint8_t want[] = {
        UZ_CMD_BAD_PARAM, UZ_CMD_BAD_PARAM, UZ_CMD_BAD_PARAM,
        UZ_CMD_BAD_PARAM, UZ_CMD_BAD_PARAM, UZ_CMD_BAD_PARAM,
        UZ_CMD_BAD_ADDR,
    };
    struct uz_cmd_rereg_mr c;
    unsigned i;

    /* Written in host order above. */
    for (i = 0; i < ARRAY_SIZE(bad); i++) {
        c = (struct uz_cmd_rereg_mr) {
            .change = UZ_REREG_TRANS, .iova = cpu_to_le64(bad[i].iova),
            .length = cpu_to_le64(bad[i].length),
            .npages = cpu_to_le32(bad[i].npages),
            .pbl_addr = cpu_to_le64(bad[i].pbl_addr ?: r->pbl),
            .page_shift = bad[i].page_shift ?: UZ_PAGE_SHIFT,
        };
        g_test_message("translation %u", i);
        g_assert_cmpint(rereg(r->mr, c), ==, want[i]);
    }
}

/* Two parts, one of them bad: neither happens. */
static void refused_two_parts(Refused *r)
{
    /* A PD move with an unreadable page list. */
    g_assert_cmpint(rereg(r->mr, (struct uz_cmd_rereg_mr) {
        .change = UZ_REREG_TRANS | UZ_REREG_PD, .pdn = cpu_to_le32(r->pd2),
        .iova = 0, .length = 16, .npages = 1, .pbl_addr = cpu_to_le64(r->db),
        .page_shift = UZ_PAGE_SHIFT }), ==, UZ_CMD_BAD_ADDR);
    /* A good translation with a bad access. */
    g_assert_cmpint(rereg(r->mr, (struct uz_cmd_rereg_mr) {
        .change = UZ_REREG_TRANS | UZ_REREG_ACCESS, .iova = 0,
        .length = 16, .npages = 1, .pbl_addr = cpu_to_le64(r->pbl),
        .page_shift = UZ_PAGE_SHIFT, .access = cpu_to_le32(0x20) }), ==,
        UZ_CMD_BAD_PARAM);
}

/*
 * Every refusal, each with its status, and none changes anything: the
 * MR keeps its pages, PD and access (a PD it was to move to can go), and
 * the peer's next WRITE lands where it did before.  The steps refuse
 * one after another on the same MR, which the end checks.
 */
static void test_refused(void)
{
    uint64_t pages[1];
    struct uz_cmd_obj dealloc = { 0 };
    Refused r;
    Pair *p = &r.p;

    pair_start(p);
    r.mr = uz_mr_reg(&p->n[1], LEN, UZ_ACCESS_ALL);
    r.dma = uz_mr_reg_dma(&p->n[1], UZ_PAGE_SIZE, UZ_ACCESS_ALL);
    r.fast = uz_mr_alloc_fast(&p->n[1], p->n[1].pdn, 4);
    r.pd2 = uz_pd_alloc(&p->n[1]);
    pages[0] = uz_alloc_pages(&p->n[1], 1);
    r.pbl = uz_pbl_put(&p->n[1], pages, 1);
    r.db = p->n[1].d.db.addr;

    refused_no_mr(&r);
    refused_pd_access(&r);
    refused_translations(&r);
    refused_two_parts(&r);

    /* As it was: the PD it nearly moved to goes, the WRITE lands. */
    dealloc.handle = cpu_to_le32(r.pd2);
    g_assert_cmpint(uz_cmd(&p->n[1], UZ_CMD_DEALLOC_PD, &dealloc,
                           sizeof(dealloc), NULL), ==, UZ_CMD_OK);
    pair_write(p, r.mr->key, r.mr->iova, LEN, 7, UZ_WC_STATUS_SUCCESS);
    assert_pattern(r.mr, 0, LEN, 7);
    pair_stop(p);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qtest_add_func("/uzura/rereg/translation", test_translation);
    qtest_add_func("/uzura/rereg/access-pd", test_access_pd);
    qtest_add_func("/uzura/rereg/refused", test_refused);
    return g_test_run();
}
