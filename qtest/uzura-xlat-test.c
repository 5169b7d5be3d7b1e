/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qtest for the uzura NIC's translation table: the on-NIC cache of page
 * translations in front of the driver's page lists (spec 8.10).  RDMA
 * WRITEs from NIC 0 land in an MR of NIC 1, whose cache counters must
 * move exactly as the spec's direct-mapped cache says; invalidation,
 * re-registration and DMA MRs must never let a stale translation through.
 */
#include "uzura-verbs.h"

typedef struct Xlat {
    UzMachine m;
    UzNode a, b;
    UzQp *qa, *qb;
    UzMr *src;                  /* on NIC 0 */
} Xlat;

#define SRC_LEN     (256 * 1024)

static void xlat_start(Xlat *t, const char *extra)
{
    uz_machine_start(&t->m, 2, extra);
    uz_node_start(&t->a, &t->m, 0);
    uz_node_start(&t->b, &t->m, 1);
    t->qa = uz_qp_create(&t->a, UZ_QPT_RC, NULL, NULL, NULL, 0);
    t->qb = uz_qp_create(&t->b, UZ_QPT_RC, NULL, NULL, NULL, 0);
    uz_rc_connect(t->qa, t->qb, NULL);
    /* The source is a DMA MR: NIC 0's reads do not blur the picture. */
    t->src = uz_mr_reg_dma(&t->a, SRC_LEN, UZ_ACCESS_ALL);
}

static void xlat_stop(Xlat *t)
{
    uz_node_stop(&t->a);
    uz_node_stop(&t->b);
    uz_machine_stop(&t->m);
}

/* WRITE @len bytes of @byte into @dst at @off and wait for it. */
static void xlat_write(Xlat *t, UzMr *dst, uint64_t off, uint32_t len,
                       uint8_t byte)
{
    UzSge s = uz_mr_sge(t->src, 0, len);
    UzWr wr = {
        .wr_id = off, .opcode = UZ_WR_RDMA_WRITE,
        .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1,
        .remote_addr = uz_mr_va(dst, off), .rkey = dst->key,
    };
    struct uz_cqe c;

    uz_mr_fill(t->src, 0, byte, len);
    uz_post_send(t->qa, &wr);
    uz_cq_wait(t->qa->scq, &c);
    uz_cqe_expect(&c, off, UZ_WC_RDMA_WRITE, UZ_WC_STATUS_SUCCESS, 0,
                  t->qa->qpn);
}

static void expect_gpa_bytes(Xlat *t, uint64_t gpa, uint32_t len,
                             uint8_t byte)
{
    g_autofree uint8_t *buf = g_malloc(len);
    uint32_t i;

    qtest_memread(t->b.d.qts, gpa, buf, len);
    for (i = 0; i < len; i++) {
        g_assert_cmphex(buf[i], ==, byte);
    }
}

typedef struct Counts {
    uint64_t hits, misses, evictions;
} Counts;

static Counts xlat_counts(Xlat *t)
{
    return (Counts) {
        .hits = uz_counter(&t->m, 1, "xlat_hits"),
        .misses = uz_counter(&t->m, 1, "xlat_misses"),
        .evictions = uz_counter(&t->m, 1, "xlat_evictions"),
    };
}

/*
 * 64 pages written by 1024-byte packets: each page is one miss and three
 * hits.  A cache of 16 entries forgets a page before it comes round
 * again, so the second pass misses as much as the first and evicts every
 * time; the default cache keeps all 64 and the second pass only hits.
 */
static void test_cache_counters(void)
{
    const uint32_t len = 64 * UZ_PAGE_SIZE;
    Xlat t;
    UzMr *dst;
    Counts c0, c1, c2, c3;
    int i;

    xlat_start(&t, "-global uzura.xlat-cache-entries=16");
    dst = uz_mr_reg(&t.b, len, UZ_ACCESS_ALL);
    c0 = xlat_counts(&t);
    xlat_write(&t, dst, 0, len, 0x5a);
    c1 = xlat_counts(&t);
    g_assert_cmpint(c1.misses - c0.misses, ==, 64);
    g_assert_cmpint(c1.hits - c0.hits, ==, 3 * 64);
    g_assert_cmpint(c1.evictions - c0.evictions, ==, 64 - 16);
    uz_assert_mr_fill(dst, 0, 0x5a, len, "the first pass");

    xlat_write(&t, dst, 0, len, 0xa5);
    c2 = xlat_counts(&t);
    g_assert_cmpint(c2.misses - c1.misses, ==, 64);
    g_assert_cmpint(c2.evictions - c1.evictions, ==, 64);

    /* One page again and again: one miss at most, then hits only. */
    for (i = 0; i < 8; i++) {
        xlat_write(&t, dst, 5 * UZ_PAGE_SIZE, 512, i);
    }
    c3 = xlat_counts(&t);
    g_assert_cmpint(c3.misses - c2.misses, <=, 1);
    g_assert_cmpint(c3.hits - c2.hits, >=, 7);
    uz_assert_mr_fill(dst, 5 * UZ_PAGE_SIZE, 7, 512, "the page written again");
    xlat_stop(&t);

    /* The default cache (4096 entries) holds all 64 pages. */
    xlat_start(&t, NULL);
    dst = uz_mr_reg(&t.b, len, UZ_ACCESS_ALL);
    xlat_write(&t, dst, 0, len, 0x5a);
    c1 = xlat_counts(&t);
    xlat_write(&t, dst, 0, len, 0xa5);
    c2 = xlat_counts(&t);
    g_assert_cmpint(c2.misses, ==, c1.misses);
    g_assert_cmpint(c2.hits - c1.hits, ==, 4 * 64);
    g_assert_cmpint(c2.evictions, ==, c1.evictions);
    uz_assert_mr_fill(dst, 0, 0xa5, len, "the second pass");
    xlat_stop(&t);
}

/*
 * The driver moves a page: it rewrites the page list entry and issues
 * INVALIDATE_XLAT; the next WRITE lands in the new page, the old one
 * keeps what it had.  Ranges are checked by key, clipped to the MR;
 * xlat_invalidations counts the commands carried out.
 */
static void test_invalidate(void)
{
    Xlat t;
    UzMr *dst;
    uint64_t old_gpa, new_gpa, inv0;
    Counts c0, c1;

    xlat_start(&t, NULL);
    dst = uz_mr_reg(&t.b, 4 * UZ_PAGE_SIZE, UZ_ACCESS_ALL);
    inv0 = uz_counter(&t.m, 1, "xlat_invalidations");
    xlat_write(&t, dst, UZ_PAGE_SIZE, 100, 0x11);
    old_gpa = uz_mr_gpa(dst, UZ_PAGE_SIZE);
    expect_gpa_bytes(&t, old_gpa, 100, 0x11);

    new_gpa = uz_alloc_pages(&t.b, 1);
    uz_mr_set_page(dst, 1, new_gpa);
    /* Ranges around page 1 leave it cached; only one that holds it drops. */
    g_assert_cmpint(uz_invalidate_xlat(&t.b, dst->key, 0, uz_mr_va(dst, 0),
                                       1), ==, UZ_CMD_OK);
    g_assert_cmpint(uz_invalidate_xlat(&t.b, dst->key, 0,
                                       uz_mr_va(dst, 2 * UZ_PAGE_SIZE),
                                       UZ_PAGE_SIZE), ==, UZ_CMD_OK);
    /* The range that holds page 1's last byte drops it. */
    g_assert_cmpint(uz_invalidate_xlat(&t.b, dst->key, 0,
                                       uz_mr_va(dst, 2 * UZ_PAGE_SIZE - 1),
                                       1), ==, UZ_CMD_OK);
    c0 = xlat_counts(&t);
    xlat_write(&t, dst, UZ_PAGE_SIZE, 100, 0x22);
    c1 = xlat_counts(&t);
    g_assert_cmpint(c1.misses - c0.misses, ==, 1);
    expect_gpa_bytes(&t, new_gpa, 100, 0x22);
    expect_gpa_bytes(&t, old_gpa, 100, 0x11);

    /* Length 0 is the whole MR; ranges outside it drop nothing, fail not. */
    uz_mr_set_page(dst, 1, old_gpa);
    g_assert_cmpint(uz_invalidate_xlat(&t.b, dst->key, 0, 0, 0), ==,
                    UZ_CMD_OK);
    g_assert_cmpint(uz_invalidate_xlat(&t.b, dst->key, 0, 0, 16), ==,
                    UZ_CMD_OK);
    g_assert_cmpint(uz_invalidate_xlat(&t.b, dst->key, 0, ~0ull - 8, 64), ==,
                    UZ_CMD_OK);
    xlat_write(&t, dst, UZ_PAGE_SIZE, 100, 0x33);
    expect_gpa_bytes(&t, old_gpa, 100, 0x33);
    expect_gpa_bytes(&t, new_gpa, 100, 0x22);

    /* A key that names no MR, a stale key byte, another context. */
    g_assert_cmpint(uz_invalidate_xlat(&t.b, 0, 0, 0, 0), ==,
                    UZ_CMD_BAD_HANDLE);
    g_assert_cmpint(uz_invalidate_xlat(&t.b, dst->key ^ 1, 0, 0, 0), ==,
                    UZ_CMD_BAD_HANDLE);
    g_assert_cmpint(uz_invalidate_xlat(&t.b, dst->key, 3, 0, 0), ==,
                    UZ_CMD_BAD_HANDLE);
    g_assert_cmpint(uz_invalidate_xlat(&t.b, 0xffffff00, 0, 0, 0), ==,
                    UZ_CMD_BAD_HANDLE);
    g_assert_cmpuint(uz_counter(&t.m, 1, "xlat_invalidations") - inv0, ==, 6);
    xlat_stop(&t);
}

/*
 * An MR index used again after DEREG_MR: translations cached for the old
 * MR must not serve the new one, even at the same iova.
 */
static void test_reregister(void)
{
    Xlat t;
    UzMr *first, *second;
    struct uz_cmd_obj dereg = { 0 };
    uint64_t iova;

    xlat_start(&t, NULL);
    first = uz_mr_reg(&t.b, 2 * UZ_PAGE_SIZE, UZ_ACCESS_ALL);
    iova = first->iova;
    xlat_write(&t, first, 0, 2 * UZ_PAGE_SIZE, 0x44);
    dereg.handle = cpu_to_le32(first->key);
    g_assert_cmpint(uz_cmd(&t.b, UZ_CMD_DEREG_MR, &dereg, sizeof(dereg),
                           NULL), ==, UZ_CMD_OK);
    second = uz_mr_reg_full(&t.b, t.b.pdn, iova, 2 * UZ_PAGE_SIZE,
                            UZ_ACCESS_ALL);
    g_assert_cmpint(UZ_KEY_INDEX(second->key), ==, UZ_KEY_INDEX(first->key));
    xlat_write(&t, second, 0, 2 * UZ_PAGE_SIZE, 0x55);
    uz_assert_mr_fill(second, 0, 0x55, 2 * UZ_PAGE_SIZE, "the new MR");
    uz_assert_mr_fill(first, 0, 0x44, 2 * UZ_PAGE_SIZE, "the old MR");
    xlat_stop(&t);
}

/* A DMA MR translates 1:1 and never touches the cache. */
static void test_dma_mr(void)
{
    Xlat t;
    UzMr *dst;
    Counts c0, c1;

    xlat_start(&t, NULL);
    dst = uz_mr_reg_dma(&t.b, 3 * UZ_PAGE_SIZE, UZ_ACCESS_ALL);
    c0 = xlat_counts(&t);
    xlat_write(&t, dst, 100, 2 * UZ_PAGE_SIZE, 0x66);
    c1 = xlat_counts(&t);
    g_assert_cmpint(c1.hits, ==, c0.hits);
    g_assert_cmpint(c1.misses, ==, c0.misses);
    expect_gpa_bytes(&t, dst->iova + 100, 2 * UZ_PAGE_SIZE, 0x66);
    expect_gpa_bytes(&t, dst->iova + 99, 1, 0);
    xlat_stop(&t);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qtest_add_func("/uzura/xlat/cache-counters", test_cache_counters);
    qtest_add_func("/uzura/xlat/invalidate", test_invalidate);
    qtest_add_func("/uzura/xlat/reregister", test_reregister);
    qtest_add_func("/uzura/xlat/dma-mr", test_dma_mr);
    return g_test_run();
}
