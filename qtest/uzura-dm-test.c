/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uzura: device memory (device 0.16, UZ_CAP_DM, spec 8.17).  RAM on the
 * NIC at dm_offset of BAR 4, handed to contexts in zeroed pages by
 * ALLOC_DM; the host reads and writes it through the BAR, and DM MRs map
 * it for traffic: SENDs from and into it, WRITEs, READs and atomics at
 * it, windows over it.  An allocation is its context's, stays while an MR
 * maps it, and goes with a reset.
 */
#include "uzura-pair.h"

#define DM_SIZE     (256 * 1024)        /* the default dm-size */
#define DB_BYTES    (64 * UZ_DB_PAGE_SIZE)

typedef struct Dm {
    uint32_t handle;
    uint32_t bar_off;                   /* in BAR 4 */
} Dm;

static uint8_t dm_alloc_try(UzNode *n, uint64_t len, uint8_t log_align,
                            Dm *dm)
{
    struct uz_cmd_alloc_dm c = {
        .length = cpu_to_le64(len), .uctx = cpu_to_le32(n->uctx),
        .log_align = log_align,
    };
    struct uz_admin_cqe cqe;
    uint8_t st = uz_cmd(n, UZ_CMD_ALLOC_DM, &c, sizeof(c), &cqe);

    *dm = (Dm) { le32_to_cpu(cqe.out0), le32_to_cpu(cqe.out1) };
    return st;
}

static Dm dm_alloc(UzNode *n, uint64_t len)
{
    Dm dm;

    g_assert_cmpint(dm_alloc_try(n, len, 0, &dm), ==, UZ_CMD_OK);
    return dm;
}

static uint8_t obj_cmd(UzNode *n, uint8_t op, uint32_t handle)
{
    struct uz_cmd_obj c = {
        .handle = cpu_to_le32(handle), .uctx = cpu_to_le32(n->uctx),
    };

    return uz_cmd(n, op, &c, sizeof(c), NULL);
}

static void dm_write(UzNode *n, const Dm *dm, uint64_t off, const void *buf,
                     size_t len)
{
    qpci_memwrite(n->d.pdev, n->d.db, dm->bar_off + off, buf, len);
}

static void dm_read(UzNode *n, const Dm *dm, uint64_t off, void *buf,
                    size_t len)
{
    qpci_memread(n->d.pdev, n->d.db, dm->bar_off + off, buf, len);
}

static void dm_assert(UzNode *n, const Dm *dm, uint64_t off,
                      const uint8_t *want, size_t len, const char *what)
{
    g_autofree uint8_t *got = g_malloc(len);

    dm_read(n, dm, off, got, len);
    uz_assert_bytes(got, want, len, what);
}

/* REG_MR of [off, off + len) of @dm as a zero-based MR with @access. */
static uint8_t dm_mr_try(UzNode *n, const Dm *dm, uint64_t off, uint64_t len,
                         uint32_t access, uint8_t flags, uint32_t *key)
{
    struct uz_cmd_reg_mr c = {
        .length = cpu_to_le64(len), .dm_offset = cpu_to_le64(off),
        .dm = cpu_to_le32(dm->handle), .pdn = cpu_to_le32(n->pdn),
        .access = cpu_to_le32(access), .key = n->next_key++,
        .flags = flags, .uctx = cpu_to_le32(n->uctx),
    };
    struct uz_admin_cqe cqe;
    uint8_t st = uz_cmd(n, UZ_CMD_REG_MR, &c, sizeof(c), &cqe);

    *key = le32_to_cpu(cqe.out0);
    return st;
}

static uint32_t dm_mr(UzNode *n, const Dm *dm, uint64_t off, uint64_t len,
                      uint32_t access)
{
    uint32_t key;

    g_assert_cmpint(dm_mr_try(n, dm, off, len, access, UZ_MR_F_DM, &key), ==,
                    UZ_CMD_OK);
    return key;
}

/*
 * Allocations: whole pages after the doorbell pages, zeroed even where
 * another allocation wrote before, aligned as asked, as many as fit; bad
 * lengths, alignments and contexts refused, and a context with device
 * memory stays until it is freed.
 */
static void test_alloc(void)
{
    uint8_t data[64], zero[64] = { 0 };
    struct uz_device_attr attr;
    struct uz_admin_cqe cqe;
    Dm a, b, c, all[64];
    uint32_t uctx, i;
    Pair p;
    UzNode *n;

    pair_start(&p);
    n = &p.n[1];
    g_assert(uz_rd(&n->d, UZ_REG_CAPS) & UZ_CAP_DM);
    uz_query_device(n, &attr);
    g_assert(le32_to_cpu(attr.caps) & UZ_CAP_DM);
    g_assert_cmpint(le32_to_cpu(attr.dm_size), ==, DM_SIZE);
    g_assert_cmphex(le32_to_cpu(attr.dm_offset), ==, DB_BYTES);
    g_assert_cmpint(le32_to_cpu(attr.max_dm), ==, DM_SIZE / UZ_DM_PAGE_SIZE);

    a = dm_alloc(n, 100);
    g_assert_cmphex(a.bar_off, ==, DB_BYTES);
    b = dm_alloc(n, UZ_DM_PAGE_SIZE + 1);
    g_assert_cmphex(b.bar_off, ==, DB_BYTES + UZ_DM_PAGE_SIZE);
    g_assert_cmpint(a.handle, !=, b.handle);

    /* The host's stores stay, in their allocation. */
    uz_pattern(data, sizeof(data), 0xd1);
    dm_write(n, &a, 36, data, sizeof(data));
    dm_assert(n, &a, 36, data, sizeof(data), "DM written through the BAR");
    dm_assert(n, &b, 0, zero, sizeof(zero), "the next allocation");

    /* A freed page comes back zeroed. */
    g_assert_cmpint(obj_cmd(n, UZ_CMD_DEALLOC_DM, a.handle), ==, UZ_CMD_OK);
    g_assert_cmpint(obj_cmd(n, UZ_CMD_DEALLOC_DM, a.handle), ==,
                    UZ_CMD_BAD_HANDLE);
    c = dm_alloc(n, 8);
    g_assert_cmphex(c.bar_off, ==, DB_BYTES);
    dm_assert(n, &c, 36, zero, sizeof(zero), "a page allocated again");

    /* 64 KiB alignment skips to the next 64 KiB of device memory. */
    g_assert_cmpint(dm_alloc_try(n, 4096, 16, &a), ==, UZ_CMD_OK);
    g_assert_cmphex(a.bar_off, ==, DB_BYTES + 65536);
    g_assert_cmpint(obj_cmd(n, UZ_CMD_DEALLOC_DM, a.handle), ==, UZ_CMD_OK);

    /* Bad lengths and alignments. */
    g_assert_cmpint(dm_alloc_try(n, 0, 0, &a), ==, UZ_CMD_BAD_PARAM);
    g_assert_cmpint(dm_alloc_try(n, DM_SIZE + 1, 0, &a), ==,
                    UZ_CMD_BAD_PARAM);
    g_assert_cmpint(dm_alloc_try(n, UINT64_MAX, 0, &a), ==, UZ_CMD_BAD_PARAM);
    g_assert_cmpint(dm_alloc_try(n, 4, 32, &a), ==, UZ_CMD_BAD_PARAM);
    /* Aligned to the whole of it: only offset 0 would do, and is taken. */
    g_assert_cmpint(dm_alloc_try(n, 4, 18, &a), ==, UZ_CMD_NO_RESOURCES);

    /* Fill it page by page: 62 more pages, then no room. */
    for (i = 0; i < DM_SIZE / UZ_DM_PAGE_SIZE - 3; i++) {
        all[i] = dm_alloc(n, 1);
    }
    g_assert_cmpint(dm_alloc_try(n, 1, 0, &a), ==, UZ_CMD_NO_RESOURCES);
    /* Free every other page: a two-page allocation still finds no run. */
    for (i = 0; i < DM_SIZE / UZ_DM_PAGE_SIZE - 3; i += 2) {
        g_assert_cmpint(obj_cmd(n, UZ_CMD_DEALLOC_DM, all[i].handle), ==,
                        UZ_CMD_OK);
    }
    g_assert_cmpint(dm_alloc_try(n, 2 * UZ_DM_PAGE_SIZE, 0, &a), ==,
                    UZ_CMD_NO_RESOURCES);
    g_assert_cmpint(dm_alloc_try(n, UZ_DM_PAGE_SIZE, 0, &a), ==, UZ_CMD_OK);
    g_assert_cmphex(a.bar_off, ==, all[0].bar_off);

    /* Another context neither frees nor maps ours; its own holds it. */
    g_assert_cmpint(uz_cmd(n, UZ_CMD_CREATE_UCTX, NULL, 0, &cqe), ==,
                    UZ_CMD_OK);
    uctx = le32_to_cpu(cqe.out0);
    n->uctx = uctx;
    g_assert_cmpint(obj_cmd(n, UZ_CMD_DEALLOC_DM, b.handle), ==,
                    UZ_CMD_BAD_HANDLE);
    g_assert_cmpint(dm_alloc_try(n, 1, 0, &c), ==, UZ_CMD_OK);
    n->uctx = 0;
    g_assert_cmpint(obj_cmd(n, UZ_CMD_DESTROY_UCTX, uctx), ==, UZ_CMD_BUSY);
    n->uctx = uctx;
    g_assert_cmpint(obj_cmd(n, UZ_CMD_DEALLOC_DM, c.handle), ==, UZ_CMD_OK);
    n->uctx = 0;
    g_assert_cmpint(obj_cmd(n, UZ_CMD_DESTROY_UCTX, uctx), ==, UZ_CMD_OK);
    n->uctx = uctx;
    g_assert_cmpint(dm_alloc_try(n, 1, 0, &c), ==, UZ_CMD_BAD_HANDLE);
    n->uctx = 0;
    pair_stop(&p);
}

/*
 * DM MRs: within their allocation, of their context, one flag at a time;
 * the allocation stays while one maps it; no re-registration.
 */
static void test_mr(void)
{
    struct uz_cmd_rereg_mr rr = { .change = UZ_REREG_ACCESS };
    struct uz_admin_cqe cqe;
    uint32_t key, k2, uctx, pdn;
    Dm dm, other;
    Pair p;
    UzNode *n;

    pair_start(&p);
    n = &p.n[1];
    dm = dm_alloc(n, 100);                      /* one page */
    key = dm_mr(n, &dm, 0, 100, UZ_ACCESS_ALL);
    g_assert_cmpint(dm_mr_try(n, &dm, 0, 0, UZ_ACCESS_LOCAL_WRITE,
                              UZ_MR_F_DM, &k2), ==, UZ_CMD_OK);
    g_assert_cmpint(obj_cmd(n, UZ_CMD_DEREG_MR, k2), ==, UZ_CMD_OK);
    /* The page is the allocation's: its last byte, not one past it. */
    g_assert_cmpint(dm_mr_try(n, &dm, 4095, 1, 0, UZ_MR_F_DM, &k2), ==,
                    UZ_CMD_OK);
    g_assert_cmpint(obj_cmd(n, UZ_CMD_DEREG_MR, k2), ==, UZ_CMD_OK);
    g_assert_cmpint(dm_mr_try(n, &dm, 4095, 2, 0, UZ_MR_F_DM, &k2), ==,
                    UZ_CMD_BAD_PARAM);
    g_assert_cmpint(dm_mr_try(n, &dm, 4097, 0, 0, UZ_MR_F_DM, &k2), ==,
                    UZ_CMD_BAD_PARAM);
    g_assert_cmpint(dm_mr_try(n, &dm, 8, UINT64_MAX - 4, 0, UZ_MR_F_DM,
                              &k2), ==, UZ_CMD_BAD_PARAM);
    /* Remote write needs local write; DM with ODP is two kinds at once. */
    g_assert_cmpint(dm_mr_try(n, &dm, 0, 64, UZ_ACCESS_REMOTE_WRITE,
                              UZ_MR_F_DM, &k2), ==, UZ_CMD_BAD_PARAM);
    g_assert_cmpint(dm_mr_try(n, &dm, 0, 64, 0, UZ_MR_F_DM | UZ_MR_F_ODP,
                              &k2), ==, UZ_CMD_BAD_PARAM);
    other = (Dm) { .handle = dm.handle + 7 };
    g_assert_cmpint(dm_mr_try(n, &other, 0, 64, 0, UZ_MR_F_DM, &k2), ==,
                    UZ_CMD_BAD_HANDLE);

    /* Another context cannot map it. */
    g_assert_cmpint(uz_cmd(n, UZ_CMD_CREATE_UCTX, NULL, 0, &cqe), ==,
                    UZ_CMD_OK);
    uctx = le32_to_cpu(cqe.out0);
    n->uctx = uctx;
    pdn = n->pdn;
    n->pdn = uz_pd_alloc(n);
    g_assert_cmpint(dm_mr_try(n, &dm, 0, 64, 0, UZ_MR_F_DM, &k2), ==,
                    UZ_CMD_BAD_HANDLE);
    n->uctx = 0;
    n->pdn = pdn;

    /* Busy while mapped; no rereg. */
    g_assert_cmpint(obj_cmd(n, UZ_CMD_DEALLOC_DM, dm.handle), ==,
                    UZ_CMD_BUSY);
    rr.key = cpu_to_le32(key);
    rr.access = cpu_to_le32(UZ_ACCESS_LOCAL_WRITE);
    g_assert_cmpint(uz_cmd(n, UZ_CMD_REREG_MR, &rr, sizeof(rr), NULL), ==,
                    UZ_CMD_BAD_PARAM);
    g_assert_cmpint(obj_cmd(n, UZ_CMD_DEREG_MR, key), ==, UZ_CMD_OK);
    g_assert_cmpint(obj_cmd(n, UZ_CMD_DEALLOC_DM, dm.handle), ==, UZ_CMD_OK);
    pair_stop(&p);
}

/* Post @wr on @qp and see it complete with @status. */
static void post_expect(UzQp *qp, const UzWr *wr, uint8_t status)
{
    struct uz_cqe c;

    uz_post_send(qp, wr);
    uz_cq_wait_clock(qp->scq, &c, STEP_NS, 100);
    g_assert_cmphex(c.wr_id, ==, wr->wr_id);
    g_assert_cmpint(c.status, ==, status);
}

/* WRITE: three packets land at MR offset 100, DM offset 612; READ back. */
static void traffic_write_read(Pair *p, const Dm *dm, uint32_t key,
                               uint8_t *data)
{
    UzSge s;
    UzWr wr;

    uz_pattern(data, MSG_LEN, 0xd2);
    pair_write(p, key, 100, MSG_LEN, 0xd2, UZ_WC_STATUS_SUCCESS);
    dm_assert(&p->n[1], dm, 612, data, MSG_LEN, "WRITE into DM");

    /* READ it back into host memory. */
    uz_mr_fill(p->ma, 0, 0, MSG_LEN);
    s = uz_mr_sge(p->ma, 0, MSG_LEN);
    wr = (UzWr) { .wr_id = 0xd3, .opcode = UZ_WR_RDMA_READ,
                  .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1,
                  .remote_addr = 100, .rkey = key };
    post_expect(p->qa, &wr, UZ_WC_STATUS_SUCCESS);
    uz_assert_mr(p->ma, 0, data, MSG_LEN, "READ of DM");
}

/* Atomics at MR offset 4000. */
static void traffic_atomics(Pair *p, const Dm *dm, uint32_t key)
{
    uint64_t v;
    UzSge s;
    UzWr wr;

    v = cpu_to_le64(40);
    dm_write(&p->n[1], dm, 4512, &v, 8);
    s = uz_mr_sge(p->ma, 0, 8);
    wr = (UzWr) { .wr_id = 0xd4, .opcode = UZ_WR_ATOMIC_FETCH_ADD,
                  .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1,
                  .remote_addr = 4000, .rkey = key, .compare_add = 2 };
    post_expect(p->qa, &wr, UZ_WC_STATUS_SUCCESS);
    uz_mr_read(p->ma, 0, &v, 8);
    g_assert_cmpuint(le64_to_cpu(v), ==, 40);
    wr = (UzWr) { .wr_id = 0xd5, .opcode = UZ_WR_ATOMIC_CMP_SWP,
                  .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1,
                  .remote_addr = 4000, .rkey = key, .compare_add = 42,
                  .swap = 0x1122334455667788ull };
    post_expect(p->qa, &wr, UZ_WC_STATUS_SUCCESS);
    dm_read(&p->n[1], dm, 4512, &v, 8);
    g_assert_cmphex(le64_to_cpu(v), ==, 0x1122334455667788ull);
}

/* A SEND received into DM at MR offset 5000 (DM 5512, second page). */
static void traffic_send_into(Pair *p, const Dm *dm, uint32_t key,
                              uint8_t *data)
{
    struct uz_cqe c;
    UzSge s, r;
    UzWr wr;

    uz_pattern(data, 1500, 0xd6);
    uz_mr_write(p->ma, 0, data, 1500);
    r = (UzSge) { .addr = 5000, .length = 2000, .lkey = key };
    uz_post_recv(p->qb, 0xd6, &r, 1);
    s = uz_mr_sge(p->ma, 0, 1500);
    wr = (UzWr) { .wr_id = 0xd7, .opcode = UZ_WR_SEND,
                  .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1 };
    post_expect(p->qa, &wr, UZ_WC_STATUS_SUCCESS);
    uz_cq_wait(p->qb->rcq, &c);
    uz_cqe_expect(&c, 0xd6, UZ_WC_RECV, UZ_WC_STATUS_SUCCESS, 0, p->qb->qpn);
    g_assert_cmpuint(c.byte_len, ==, 1500);
    dm_assert(&p->n[1], dm, 5512, data, 1500, "SEND into DM");
}

/* A SEND from DM on node 0, two SGEs of one DM MR. */
static void traffic_send_from(Pair *p, uint8_t *data)
{
    struct uz_cqe c;
    uint32_t lkey;
    UzSge two[2], r;
    UzWr wr;
    Dm dm0;

    dm0 = dm_alloc(&p->n[0], 4096);
    lkey = dm_mr(&p->n[0], &dm0, 0, 4096, UZ_ACCESS_LOCAL_WRITE);
    uz_pattern(data, 2000, 0xd8);
    dm_write(&p->n[0], &dm0, 0, data, 2000);
    two[0] = (UzSge) { .addr = 1000, .length = 1000, .lkey = lkey };
    two[1] = (UzSge) { .addr = 0, .length = 1000, .lkey = lkey };
    r = uz_mr_sge(p->mb, 0, 4096);
    uz_post_recv(p->qb, 0xd8, &r, 1);
    wr = (UzWr) { .wr_id = 0xd9, .opcode = UZ_WR_SEND,
                  .flags = UZ_WQE_F_SIGNALED, .sge = two, .num_sge = 2 };
    post_expect(p->qa, &wr, UZ_WC_STATUS_SUCCESS);
    uz_cq_wait(p->qb->rcq, &c);
    uz_cqe_expect(&c, 0xd8, UZ_WC_RECV, UZ_WC_STATUS_SUCCESS, 0, p->qb->qpn);
    g_assert_cmpuint(c.byte_len, ==, 2000);
    uz_assert_mr(p->mb, 0, data + 1000, 1000, "first SGE from DM");
    uz_assert_mr(p->mb, 1000, data, 1000, "second SGE from DM");
}

/* A type 2 window over part of the DM MR @key. */
static void traffic_window(Pair *p, const Dm *dm, uint32_t key,
                           uint8_t *data)
{
    struct uz_cmd_alloc_mw a = {
        .pdn = cpu_to_le32(p->n[1].pdn), .type = UZ_MW_TYPE_2,
        .key = 0x40,
    };
    struct uz_admin_cqe cqe;
    uint32_t mw;
    UzWr wr;

    g_assert_cmpint(uz_cmd(&p->n[1], UZ_CMD_ALLOC_MW, &a, sizeof(a),
                           &cqe), ==, UZ_CMD_OK);
    mw = (le32_to_cpu(cqe.out0) & ~0xffu) | 0x41;
    wr = (UzWr) { .wr_id = 0xda, .opcode = UZ_WR_BIND_MW,
                  .flags = UZ_WQE_F_SIGNALED, .rkey = mw,
                  .remote_addr = 6000, .reg_length = 1000,
                  .reg_access = UZ_ACCESS_REMOTE_WRITE, .bind_mr_key = key };
    post_expect(p->qb, &wr, UZ_WC_STATUS_SUCCESS);
    uz_pattern(data, 600, 0xdb);
    pair_write(p, mw, 6100, 600, 0xdb, UZ_WC_STATUS_SUCCESS);
    dm_assert(&p->n[1], dm, 6612, data, 600, "WRITE through a window");
}

/*
 * Traffic through DM MRs, between host memory on one node and device
 * memory on the other: a three-packet WRITE into it, a READ of it, both
 * atomics on it, a SEND received into it and one sent from it, a WRITE
 * through a window over it; past the MR's end, a remote access error.
 * All on one pair and one DM MR, in turn.
 */
static void test_traffic(void)
{
    g_autofree uint8_t *data = g_malloc(MSG_LEN);
    g_autofree uint8_t *got = g_malloc(MSG_LEN);
    uint32_t key;
    Dm dm;
    Pair p;

    pair_start(&p);
    dm = dm_alloc(&p.n[1], 8192);
    key = dm_mr(&p.n[1], &dm, 512, 7000,
                UZ_ACCESS_ALL | UZ_ACCESS_MW_BIND);

    traffic_write_read(&p, &dm, key, data);
    traffic_atomics(&p, &dm, key);
    traffic_send_into(&p, &dm, key, data);
    traffic_send_from(&p, data);
    traffic_window(&p, &dm, key, data);

    /* Past the MR's end (7000): refused, nothing lands. */
    memset(got, 0, 64);
    pair_write(&p, key, 6990, 64, 0xdc, UZ_WC_STATUS_REM_ACCESS_ERR);
    dm_read(&p.n[1], &dm, 7502, data, 64);
    g_assert(!memcmp(data, got, 64));
    pair_stop(&p);
}

/* A reset frees every allocation and clears what it held. */
static void test_reset(void)
{
    uint8_t data[256], zero[256] = { 0 };
    UzMachine m;
    UzNode n;
    Dm dm;

    uz_machine_start(&m, 1, NULL);
    uz_node_start(&n, &m, 0);
    dm = dm_alloc(&n, DM_SIZE);
    uz_pattern(data, sizeof(data), 0xe1);
    dm_write(&n, &dm, DM_SIZE - sizeof(data), data, sizeof(data));
    dm_assert(&n, &dm, DM_SIZE - sizeof(data), data, sizeof(data),
              "device memory before the reset");
    uz_wr(&n.d, UZ_REG_RESET, UZ_RESET_KEY);
    uz_node_stop(&n);
    uz_node_start(&n, &m, 0);
    dm_assert(&n, &dm, DM_SIZE - sizeof(data), zero, sizeof(zero),
              "device memory after a reset");
    dm = dm_alloc(&n, DM_SIZE);
    uz_node_stop(&n);
    uz_machine_stop(&m);
}

/* dm-size=0: no capability, no commands, a BAR of doorbells only. */
static void test_none(void)
{
    struct uz_device_attr attr;
    UzMachine m;
    UzNode n;
    Dm dm;

    uz_machine_start(&m, 1, "-global uzura.dm-size=0");
    uz_node_start(&n, &m, 0);
    g_assert_false(uz_rd(&n.d, UZ_REG_CAPS) & UZ_CAP_DM);
    uz_query_device(&n, &attr);
    g_assert_cmpint(le32_to_cpu(attr.dm_size), ==, 0);
    g_assert_cmpint(le32_to_cpu(attr.max_dm), ==, 0);
    g_assert_cmpint(dm_alloc_try(&n, 1, 0, &dm), ==, UZ_CMD_NOT_SUPPORTED);
    dm = (Dm) { 0 };
    g_assert_cmpint(dm_mr_try(&n, &dm, 0, 0, 0, UZ_MR_F_DM, &dm.handle), ==,
                    UZ_CMD_BAD_HANDLE);
    uz_node_stop(&n);
    uz_machine_stop(&m);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qtest_add_func("/uzura/dm/alloc", test_alloc);
    qtest_add_func("/uzura/dm/mr", test_mr);
    qtest_add_func("/uzura/dm/traffic", test_traffic);
    qtest_add_func("/uzura/dm/reset", test_reset);
    qtest_add_func("/uzura/dm/none", test_none);
    return g_test_run();
}
