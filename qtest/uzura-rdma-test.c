/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qtest for the uzura RDMA objects: contexts, PDs, CQs, SRQs, MRs, AHs and
 * QPs through the admin queue, their limits, references and doorbells, and
 * the modify-QP state machine with its attribute checks.
 */
#include "uzura-qtest.h"

typedef struct UzRdma {
    UzMachine m;
    UzDev d;
    UzEq eq;
    uint64_t buf;               /* scratch for attributes */
} UzRdma;

static void rdma_start(UzRdma *t, const char *extra)
{
    uz_machine_start(&t->m, 1, extra);
    uz_dev_init(&t->d, &t->m, 0);
    uz_admin_start(&t->d, 5);
    g_assert_cmpint(uz_create_eq(&t->d, &t->eq, 4, 1, UZ_EQ_F_ASYNC), ==,
                    UZ_CMD_OK);
    t->buf = uz_alloc(&t->d, 4096);
}

static void rdma_stop(UzRdma *t)
{
    uz_dev_fini(&t->d);
    uz_machine_stop(&t->m);
}

/* Run a command whose payload is @args; returns the status, out0 in @out. */
static uint8_t rdma_cmd(UzRdma *t, uint8_t op, const void *args, size_t len,
                        struct uz_admin_cqe *cqe)
{
    struct uz_admin_cmd cmd = { .opcode = op };

    if (len) {
        memcpy(cmd.raw, args, len);
    }
    return uz_admin(&t->d, &cmd, cqe);
}

static uint8_t obj_cmd(UzRdma *t, uint8_t op, uint32_t handle, uint32_t uctx,
                       uint32_t *out)
{
    struct uz_cmd_obj c = {
        .handle = cpu_to_le32(handle), .uctx = cpu_to_le32(uctx),
    };
    struct uz_admin_cqe cqe;
    uint8_t st = rdma_cmd(t, op, &c, sizeof(c), &cqe);

    if (out) {
        *out = le32_to_cpu(cqe.out0);
    }
    return st;
}

static uint32_t alloc_pd(UzRdma *t, uint32_t uctx)
{
    uint32_t pdn;

    g_assert_cmpint(obj_cmd(t, UZ_CMD_ALLOC_PD, 0, uctx, &pdn), ==,
                    UZ_CMD_OK);
    return pdn;
}

static uint8_t create_cq(UzRdma *t, uint32_t uctx, uint8_t log_depth,
                         uint32_t eqn, uint32_t *cqn, uint32_t *db)
{
    struct uz_cmd_create_cq c = {
        .ring_addr = cpu_to_le64(uz_alloc(&t->d, 32 << log_depth)),
        .uctx = cpu_to_le32(uctx), .eqn = cpu_to_le32(eqn),
        .log_depth = log_depth,
    };
    struct uz_admin_cqe cqe;
    uint8_t st = rdma_cmd(t, UZ_CMD_CREATE_CQ, &c, sizeof(c), &cqe);

    *cqn = le32_to_cpu(cqe.out0);
    if (db) {
        *db = le32_to_cpu(cqe.out1);
    }
    return st;
}

static uint8_t create_qp(UzRdma *t, uint8_t type, uint32_t pdn, uint32_t cqn,
                         uint32_t srqn, uint32_t *qpn,
                         struct uz_admin_cqe *cqe)
{
    struct uz_cmd_create_qp c = {
        .sq_addr = cpu_to_le64(uz_alloc(&t->d, 64 * 16)),
        .rq_addr = cpu_to_le64(uz_alloc(&t->d, 32 * 16)),
        .pdn = cpu_to_le32(pdn), .send_cqn = cpu_to_le32(cqn),
        .recv_cqn = cpu_to_le32(cqn), .srqn = cpu_to_le32(srqn),
        .type = type, .sq_log_depth = 4, .rq_log_depth = 4,
        .sq_log_wqe_size = 6, .rq_log_wqe_size = 5,
    };
    struct uz_admin_cqe local;
    uint8_t st;

    cqe = cqe ? cqe : &local;
    st = rdma_cmd(t, UZ_CMD_CREATE_QP, &c, sizeof(c), cqe);
    *qpn = le32_to_cpu(cqe->out0);
    return st;
}

static uint8_t modify_qp(UzRdma *t, uint32_t qpn, uint32_t mask,
                         const struct uz_qp_attr *a)
{
    struct uz_cmd_modify_qp c = {
        .buf_addr = cpu_to_le64(t->buf), .qpn = cpu_to_le32(qpn),
        .attr_mask = cpu_to_le32(mask),
    };

    qtest_memwrite(t->d.qts, t->buf, a, sizeof(*a));
    return rdma_cmd(t, UZ_CMD_MODIFY_QP, &c, sizeof(c), NULL);
}

static void query_qp(UzRdma *t, uint32_t qpn, struct uz_qp_attr *a)
{
    struct uz_cmd_query c = {
        .buf_addr = cpu_to_le64(t->buf + 1024),
        .buf_len = cpu_to_le32(sizeof(*a)), .handle = cpu_to_le32(qpn),
    };

    g_assert_cmpint(rdma_cmd(t, UZ_CMD_QUERY_QP, &c, sizeof(c), NULL), ==,
                    UZ_CMD_OK);
    qtest_memread(t->d.qts, t->buf + 1024, a, sizeof(*a));
}

static uint8_t reg_mr(UzRdma *t, uint32_t pdn, uint64_t iova, uint64_t len,
                      uint8_t shift, uint32_t npages, uint32_t access,
                      uint64_t pbl, uint32_t *key)
{
    struct uz_cmd_reg_mr c = {
        .iova = cpu_to_le64(iova), .length = cpu_to_le64(len),
        .pbl_addr = cpu_to_le64(pbl), .npages = cpu_to_le32(npages),
        .pdn = cpu_to_le32(pdn), .access = cpu_to_le32(access),
        .page_shift = shift, .key = 0x5a,
    };
    struct uz_admin_cqe cqe;
    uint8_t st = rdma_cmd(t, UZ_CMD_REG_MR, &c, sizeof(c), &cqe);

    if (key) {
        *key = le32_to_cpu(cqe.out0);
    }
    return st;
}

static void test_limits(void)
{
    UzRdma t;
    struct uz_admin_cmd cmd = { .opcode = UZ_CMD_QUERY_DEVICE };
    struct uz_device_attr attr;

    rdma_start(&t, "-global uzura.max-qp=8 -global uzura.max-mr=4 "
               "-global uzura.max-qp-wr=256 -global uzura.max-sge=4");
    cmd.query_device.buf_addr = cpu_to_le64(t.buf);
    cmd.query_device.buf_len = cpu_to_le32(sizeof(attr));
    g_assert_cmpint(uz_admin(&t.d, &cmd, NULL), ==, UZ_CMD_OK);
    qtest_memread(t.d.qts, t.buf, &attr, sizeof(attr));
    g_assert_cmpint(le32_to_cpu(attr.max_qp), ==, 8);
    g_assert_cmpint(le32_to_cpu(attr.max_mr), ==, 4);
    g_assert_cmpint(le32_to_cpu(attr.max_qp_wr), ==, 256);
    g_assert_cmpint(le32_to_cpu(attr.max_sge), ==, 4);
    g_assert_cmpint(le32_to_cpu(attr.max_cq), ==, 1024);
    g_assert_cmpint(le32_to_cpu(attr.max_cqe), ==, 1u << 22);
    g_assert_cmpint(le32_to_cpu(attr.xlat_cache_entries), ==, 4096);
    g_assert_cmpint(le32_to_cpu(attr.max_crw_tags), ==, 64);
    g_assert_cmpint(le64_to_cpu(attr.max_mr_size), ==, 1ull << 32);
    g_assert_cmphex(le32_to_cpu(attr.page_size_cap) & 0x1000, ==, 0x1000);
    rdma_stop(&t);
}

static void test_uctx_pd_ah(void)
{
    UzRdma t;
    struct uz_admin_cqe cqe;
    struct uz_cmd_create_ah ah = { .dmac = { 0x52, 0x54, 0, 1, 2, 3 } };
    uint32_t uctx, pdn, ahn;

    rdma_start(&t, NULL);
    g_assert_cmpint(rdma_cmd(&t, UZ_CMD_CREATE_UCTX, NULL, 0, &cqe), ==,
                    UZ_CMD_OK);
    uctx = le32_to_cpu(cqe.out0);
    g_assert_cmpint(uctx, ==, 1);
    g_assert_cmphex(le32_to_cpu(cqe.out1), ==, UZ_DB_PAGE_SIZE);

    /* PDs belong to a context; a PD of another context is invisible. */
    pdn = alloc_pd(&t, uctx);
    g_assert_cmpint(obj_cmd(&t, UZ_CMD_ALLOC_PD, 0, 9, NULL), ==,
                    UZ_CMD_BAD_HANDLE);
    g_assert_cmpint(obj_cmd(&t, UZ_CMD_DESTROY_UCTX, uctx, 0, NULL), ==,
                    UZ_CMD_BUSY);

    ah.pdn = cpu_to_le32(pdn);
    ah.uctx = cpu_to_le32(uctx);
    g_assert_cmpint(rdma_cmd(&t, UZ_CMD_CREATE_AH, &ah, sizeof(ah), &cqe), ==,
                    UZ_CMD_OK);
    ahn = le32_to_cpu(cqe.out0);
    g_assert_cmpint(obj_cmd(&t, UZ_CMD_DEALLOC_PD, pdn, uctx, NULL), ==,
                    UZ_CMD_BUSY);
    ah.dmac[0] = 0x01;          /* a group address */
    g_assert_cmpint(rdma_cmd(&t, UZ_CMD_CREATE_AH, &ah, sizeof(ah), NULL), ==,
                    UZ_CMD_BAD_PARAM);
    ah.uctx = 0;                /* the kernel does not own this PD */
    ah.dmac[0] = 0x52;
    g_assert_cmpint(rdma_cmd(&t, UZ_CMD_CREATE_AH, &ah, sizeof(ah), NULL), ==,
                    UZ_CMD_BAD_HANDLE);

    g_assert_cmpint(obj_cmd(&t, UZ_CMD_DESTROY_AH, ahn, uctx, NULL), ==,
                    UZ_CMD_OK);
    g_assert_cmpint(obj_cmd(&t, UZ_CMD_DESTROY_AH, ahn, uctx, NULL), ==,
                    UZ_CMD_BAD_HANDLE);
    g_assert_cmpint(obj_cmd(&t, UZ_CMD_DEALLOC_PD, pdn, uctx, NULL), ==,
                    UZ_CMD_OK);
    g_assert_cmpint(obj_cmd(&t, UZ_CMD_DESTROY_UCTX, uctx, 0, NULL), ==,
                    UZ_CMD_OK);
    g_assert_cmpint(obj_cmd(&t, UZ_CMD_DESTROY_UCTX, uctx, 0, NULL), ==,
                    UZ_CMD_BAD_HANDLE);
    g_assert_cmpint(obj_cmd(&t, UZ_CMD_DESTROY_UCTX, 0, 0, NULL), ==,
                    UZ_CMD_BAD_HANDLE);
    rdma_stop(&t);
}

static void test_cq(void)
{
    UzRdma t;
    struct uz_admin_cqe cqe;
    struct uz_cmd_create_cq c;
    uint32_t cqn, db, uctx, ucq, udb, pdn, qpn;

    rdma_start(&t, NULL);
    g_assert_cmpint(create_cq(&t, 0, 0, t.eq.eqn, &cqn, NULL), ==,
                    UZ_CMD_BAD_PARAM);
    c = (struct uz_cmd_create_cq) {
        .ring_addr = cpu_to_le64(t.buf), .eqn = cpu_to_le32(t.eq.eqn),
        .log_depth = UZ_CQ_LOG_DEPTH_MAX + 1,
    };
    g_assert_cmpint(rdma_cmd(&t, UZ_CMD_CREATE_CQ, &c, sizeof(c), NULL),
                    ==, UZ_CMD_BAD_PARAM);
    g_assert_cmpint(create_cq(&t, 0, 4, 5, &cqn, NULL), ==,
                    UZ_CMD_BAD_HANDLE);
    c = (struct uz_cmd_create_cq) {
        .ring_addr = cpu_to_le64(0xfff0000000000ull), .log_depth = 4,
    };
    g_assert_cmpint(rdma_cmd(&t, UZ_CMD_CREATE_CQ, &c, sizeof(c), NULL),
                    ==, UZ_CMD_BAD_ADDR);
    g_assert_cmpint(create_cq(&t, 0, 4, t.eq.eqn, &cqn, &db), ==, UZ_CMD_OK);
    g_assert_cmpint(db, <, UZ_DB_PAGE_SIZE);

    /* A user CQ's doorbell is in its context's page. */
    g_assert_cmpint(rdma_cmd(&t, UZ_CMD_CREATE_UCTX, NULL, 0, &cqe), ==,
                    UZ_CMD_OK);
    uctx = le32_to_cpu(cqe.out0);
    g_assert_cmpint(create_cq(&t, uctx, 4, t.eq.eqn, &ucq, &udb), ==,
                    UZ_CMD_OK);
    g_assert_cmpint(udb / UZ_DB_PAGE_SIZE, ==, uctx);

    /* Arming and a consumer index that did not pass the producer. */
    uz_ring(&t.d, db, 0 | UZ_DB_ARM);
    g_assert_cmpint(uz_rd(&t.d, UZ_REG_ERR_COUNT), ==, 0);
    uz_ring(&t.d, db, 5);
    g_assert_cmpint(uz_rd(&t.d, UZ_REG_ERR_STATUS), ==, UZ_ERR_BAD_VALUE);

    /* The EQ and the CQ are held by their users. */
    g_assert_cmpint(obj_cmd(&t, UZ_CMD_DESTROY_EQ, t.eq.eqn, 0, NULL), ==,
                    UZ_CMD_BUSY);
    pdn = alloc_pd(&t, 0);
    g_assert_cmpint(create_qp(&t, UZ_QPT_RC, pdn, cqn, UZ_NO_SRQ, &qpn, NULL),
                    ==, UZ_CMD_OK);
    g_assert_cmpint(obj_cmd(&t, UZ_CMD_DESTROY_CQ, cqn, 0, NULL), ==,
                    UZ_CMD_BUSY);
    /* A QP cannot use a CQ of another context. */
    g_assert_cmpint(create_qp(&t, UZ_QPT_RC, pdn, ucq, UZ_NO_SRQ, &udb, NULL),
                    ==, UZ_CMD_BAD_HANDLE);
    g_assert_cmpint(obj_cmd(&t, UZ_CMD_DESTROY_QP, qpn, 0, NULL), ==,
                    UZ_CMD_OK);
    g_assert_cmpint(obj_cmd(&t, UZ_CMD_DESTROY_CQ, cqn, 0, NULL), ==,
                    UZ_CMD_OK);
    uz_ring(&t.d, db, 0);
    g_assert_cmpint(uz_rd(&t.d, UZ_REG_ERR_STATUS), ==, UZ_ERR_BAD_DOORBELL);
    rdma_stop(&t);
}

static void test_mr(void)
{
    UzRdma t;
    uint64_t pbl;
    uint32_t pdn, key, key2, key3;
    const uint32_t rw = UZ_ACCESS_LOCAL_WRITE | UZ_ACCESS_REMOTE_WRITE |
                        UZ_ACCESS_REMOTE_READ;

    rdma_start(&t, "-global uzura.max-mr=4");
    pdn = alloc_pd(&t, 0);
    pbl = uz_alloc(&t.d, 4 * 8);

    /* Four 4 KiB pages cover 16 KiB from a page-aligned iova. */
    g_assert_cmpint(reg_mr(&t, pdn, 0x10000, 16384, 12, 4, rw, pbl, &key),
                    ==, UZ_CMD_OK);
    g_assert_cmphex(UZ_KEY_BYTE(key), ==, 0x5a);
    g_assert_cmpint(UZ_KEY_INDEX(key), ==, 1);
    /* ...but not one byte more, nor from an offset inside the page. */
    g_assert_cmpint(reg_mr(&t, pdn, 0x10000, 16385, 12, 4, rw, pbl, NULL),
                    ==, UZ_CMD_BAD_PARAM);
    g_assert_cmpint(reg_mr(&t, pdn, 0x10800, 16384, 12, 4, rw, pbl, NULL),
                    ==, UZ_CMD_BAD_PARAM);
    g_assert_cmpint(reg_mr(&t, pdn, 0x10800, 14336, 12, 4, rw, pbl, &key2),
                    ==, UZ_CMD_OK);
    /* Remote write without local write, unknown bits, page sizes. */
    g_assert_cmpint(reg_mr(&t, pdn, 0, 4096, 12, 1, UZ_ACCESS_REMOTE_WRITE,
                           pbl, NULL), ==, UZ_CMD_BAD_PARAM);
    g_assert_cmpint(reg_mr(&t, pdn, 0, 4096, 12, 1, 0x20, pbl, NULL), ==,
                    UZ_CMD_BAD_PARAM);
    g_assert_cmpint(reg_mr(&t, pdn, 0, 4096, 12, 1, 0x200, pbl, NULL), ==,
                    UZ_CMD_BAD_PARAM);
    g_assert_cmpint(reg_mr(&t, pdn, 0, 4096, 11, 2, rw, pbl, NULL), ==,
                    UZ_CMD_BAD_PARAM);
    g_assert_cmpint(reg_mr(&t, pdn, 0, 4096, 12, 0, rw, pbl, NULL), ==,
                    UZ_CMD_BAD_PARAM);
    g_assert_cmpint(reg_mr(&t, pdn, 0, (1ull << 32) + 4096, 30, 5, rw, pbl,
                           NULL), ==, UZ_CMD_BAD_PARAM);
    g_assert_cmpint(reg_mr(&t, pdn, 0, 4096, 12, 1, rw, 0xfff0000000000ull,
                           NULL), ==, UZ_CMD_BAD_ADDR);
    g_assert_cmpint(reg_mr(&t, pdn + 1, 0, 4096, 12, 1, rw, pbl, NULL), ==,
                    UZ_CMD_BAD_HANDLE);
    /* Three MRs fit a table of four (index 0 is never used). */
    g_assert_cmpint(reg_mr(&t, pdn, 0, 4096, 12, 1, rw, pbl, &key3), ==,
                    UZ_CMD_OK);
    g_assert_cmpint(reg_mr(&t, pdn, 0, 4096, 12, 1, rw, pbl, NULL), ==,
                    UZ_CMD_NO_RESOURCES);

    /* A PD with MRs stays; a key with the wrong key byte misses. */
    g_assert_cmpint(obj_cmd(&t, UZ_CMD_DEALLOC_PD, pdn, 0, NULL), ==,
                    UZ_CMD_BUSY);
    g_assert_cmpint(obj_cmd(&t, UZ_CMD_DEREG_MR, key ^ 1, 0, NULL), ==,
                    UZ_CMD_BAD_HANDLE);
    g_assert_cmpint(obj_cmd(&t, UZ_CMD_DEREG_MR, key, 0, NULL), ==,
                    UZ_CMD_OK);
    g_assert_cmpint(obj_cmd(&t, UZ_CMD_DEREG_MR, key, 0, NULL), ==,
                    UZ_CMD_BAD_HANDLE);
    g_assert_cmpint(obj_cmd(&t, UZ_CMD_DEREG_MR, key2, 0, NULL), ==,
                    UZ_CMD_OK);
    g_assert_cmpint(obj_cmd(&t, UZ_CMD_DEREG_MR, key3, 0, NULL), ==,
                    UZ_CMD_OK);
    g_assert_cmpint(obj_cmd(&t, UZ_CMD_DEALLOC_PD, pdn, 0, NULL), ==,
                    UZ_CMD_OK);
    rdma_stop(&t);
}

/* The QP @qpn is not another context's, to modify or to query. */
static void other_context_qp(UzRdma *t, uint32_t qpn)
{
    struct uz_qp_attr a = { .state = UZ_QPS_INIT };
    struct uz_cmd_modify_qp mq = {
        .buf_addr = cpu_to_le64(t->buf), .qpn = cpu_to_le32(qpn),
        .attr_mask = cpu_to_le32(UZ_QP_ATTR_STATE), .uctx = cpu_to_le32(1),
    };
    struct uz_cmd_query q = {
        .buf_addr = cpu_to_le64(t->buf), .buf_len = cpu_to_le32(sizeof(a)),
        .handle = cpu_to_le32(qpn), .uctx = cpu_to_le32(1),
    };

    qtest_memwrite(t->d.qts, t->buf, &a, sizeof(a));
    g_assert_cmpint(rdma_cmd(t, UZ_CMD_MODIFY_QP, &mq, sizeof(mq), NULL),
                    ==, UZ_CMD_BAD_HANDLE);
    g_assert_cmpint(rdma_cmd(t, UZ_CMD_QUERY_QP, &q, sizeof(q), NULL),
                    ==, UZ_CMD_BAD_HANDLE);
}

static void test_srq_and_qp_create(void)
{
    UzRdma t;
    struct uz_admin_cqe cqe;
    struct uz_cmd_create_srq srq = { .log_depth = 4, .log_wqe_size = 5 };
    struct uz_cmd_modify_srq msrq;
    uint32_t pdn, cqn, srqn, qpn, gsi, qps[8];
    int i;

    rdma_start(&t, "-global uzura.max-qp=8");
    pdn = alloc_pd(&t, 0);
    g_assert_cmpint(create_cq(&t, 0, 6, t.eq.eqn, &cqn, NULL), ==, UZ_CMD_OK);

    srq.ring_addr = cpu_to_le64(uz_alloc(&t.d, 16 * 32));
    srq.pdn = cpu_to_le32(pdn);
    srq.limit = cpu_to_le32(16);
    g_assert_cmpint(rdma_cmd(&t, UZ_CMD_CREATE_SRQ, &srq, sizeof(srq), NULL),
                    ==, UZ_CMD_BAD_PARAM);
    srq.limit = cpu_to_le32(4);
    g_assert_cmpint(rdma_cmd(&t, UZ_CMD_CREATE_SRQ, &srq, sizeof(srq), &cqe),
                    ==, UZ_CMD_OK);
    srqn = le32_to_cpu(cqe.out0);
    msrq = (struct uz_cmd_modify_srq) { .srqn = cpu_to_le32(srqn),
                                        .limit = cpu_to_le32(8) };
    g_assert_cmpint(rdma_cmd(&t, UZ_CMD_MODIFY_SRQ, &msrq, sizeof(msrq), NULL),
                    ==, UZ_CMD_OK);
    msrq.limit = cpu_to_le32(99);
    g_assert_cmpint(rdma_cmd(&t, UZ_CMD_MODIFY_SRQ, &msrq, sizeof(msrq), NULL),
                    ==, UZ_CMD_BAD_PARAM);
    /* Another context's SRQ is not there (the kernel's here). */
    msrq.limit = cpu_to_le32(2);
    msrq.uctx = cpu_to_le32(1);
    g_assert_cmpint(rdma_cmd(&t, UZ_CMD_MODIFY_SRQ, &msrq, sizeof(msrq), NULL),
                    ==, UZ_CMD_BAD_HANDLE);

    /* The GSI QP is QP1 and unique; others start at 2. */
    g_assert_cmpint(create_qp(&t, UZ_QPT_GSI, pdn, cqn, UZ_NO_SRQ, &gsi, NULL),
                    ==, UZ_CMD_OK);
    g_assert_cmpint(gsi, ==, 1);
    g_assert_cmpint(create_qp(&t, UZ_QPT_GSI, pdn, cqn, UZ_NO_SRQ, &qpn, NULL),
                    ==, UZ_CMD_EXISTS);
    /* A QP on the SRQ has no RQ doorbell. */
    g_assert_cmpint(create_qp(&t, UZ_QPT_RC, pdn, cqn, srqn, &qpn, &cqe), ==,
                    UZ_CMD_OK);
    g_assert_cmpint(qpn, ==, 2);
    g_assert_cmpint(le32_to_cpu(cqe.out2), ==, 0);
    g_assert_cmpint(le32_to_cpu(cqe.out1), !=, 0);
    other_context_qp(&t, qpn);
    g_assert_cmpint(obj_cmd(&t, UZ_CMD_DESTROY_SRQ, srqn, 0, NULL), ==,
                    UZ_CMD_BUSY);
    g_assert_cmpint(create_qp(&t, 0x0b, pdn, cqn, UZ_NO_SRQ, &qpn, NULL), ==,
                    UZ_CMD_BAD_PARAM);
    g_assert_cmpint(create_qp(&t, UZ_QPT_UD, pdn, cqn, 77, &qpn, NULL), ==,
                    UZ_CMD_BAD_HANDLE);
    g_assert_cmpint(create_qp(&t, UZ_QPT_UD, pdn + 3, cqn, UZ_NO_SRQ, &qpn,
                              NULL), ==, UZ_CMD_BAD_HANDLE);
    /* QPNs 2..7 exist with max-qp=8; then the table is full. */
    for (i = 3; i < 8; i++) {
        g_assert_cmpint(create_qp(&t, UZ_QPT_UD, pdn, cqn, UZ_NO_SRQ, &qps[i],
                                  NULL), ==, UZ_CMD_OK);
        g_assert_cmpint(qps[i], ==, i);
    }
    g_assert_cmpint(create_qp(&t, UZ_QPT_UD, pdn, cqn, UZ_NO_SRQ, &qpn, NULL),
                    ==, UZ_CMD_NO_RESOURCES);
    g_assert_cmpint(obj_cmd(&t, UZ_CMD_DESTROY_QP, 2, 0, NULL), ==,
                    UZ_CMD_OK);
    g_assert_cmpint(obj_cmd(&t, UZ_CMD_DESTROY_QP, 2, 0, NULL), ==,
                    UZ_CMD_BAD_HANDLE);
    g_assert_cmpint(obj_cmd(&t, UZ_CMD_DESTROY_SRQ, srqn, 0, NULL), ==,
                    UZ_CMD_OK);
    rdma_stop(&t);
}

static struct uz_qp_attr rc_init_attr(void)
{
    return (struct uz_qp_attr) {
        .state = UZ_QPS_INIT, .port = 1,
        .access_flags = cpu_to_le32(UZ_ACCESS_REMOTE_WRITE |
                                    UZ_ACCESS_REMOTE_READ),
    };
}

static struct uz_qp_attr rc_rtr_attr(uint8_t mtu)
{
    return (struct uz_qp_attr) {
        .state = UZ_QPS_RTR, .path_mtu = mtu, .dest_qpn = cpu_to_le32(0x123),
        .rq_psn = cpu_to_le32(0xabcdef), .max_dest_rd_atomic = 4,
        .min_rnr_timer = 12, .hop_limit = 64, .traffic_class = 0x10,
        .dmac = { 0x52, 0x54, 0, 0x12, 0x34, 0x51 },
        .dgid = { [10] = 0xff, [11] = 0xff, [12] = 10, [13] = 77, [15] = 2 },
    };
}

#define RTR_MASK    (UZ_QP_ATTR_STATE | UZ_QP_ATTR_AV | UZ_QP_ATTR_PATH_MTU | \
                     UZ_QP_ATTR_DEST_QPN | UZ_QP_ATTR_RQ_PSN | \
                     UZ_QP_ATTR_MAX_DEST_RD_ATOMIC | \
                     UZ_QP_ATTR_MIN_RNR_TIMER)
#define RTS_MASK    (UZ_QP_ATTR_STATE | UZ_QP_ATTR_SQ_PSN | \
                     UZ_QP_ATTR_TIMEOUT | UZ_QP_ATTR_RETRY_CNT | \
                     UZ_QP_ATTR_RNR_RETRY | UZ_QP_ATTR_MAX_QP_RD_ATOMIC)
#define INIT_MASK   (UZ_QP_ATTR_STATE | UZ_QP_ATTR_PKEY_INDEX | \
                     UZ_QP_ATTR_PORT | UZ_QP_ATTR_ACCESS)

/* RESET -> INIT, with the queues refusing work in RESET and INIT. */
static void qsm_to_init(UzRdma *t, uint32_t qpn, uint32_t sq_db)
{
    struct uz_qp_attr a, rtr;

    /* In RESET the queues do not take work. */
    uz_ring(&t->d, sq_db, 1);
    g_assert_cmpint(uz_rd(&t->d, UZ_REG_ERR_STATUS), ==, UZ_ERR_BAD_STATE);

    /* RESET -> RTR skips INIT. */
    rtr = rc_rtr_attr(UZ_MTU_1024);
    g_assert_cmpint(modify_qp(t, qpn, RTR_MASK, &rtr), ==, UZ_CMD_BAD_STATE);
    /* RESET -> INIT needs the access flags for RC. */
    a = rc_init_attr();
    g_assert_cmpint(modify_qp(t, qpn, INIT_MASK & ~UZ_QP_ATTR_ACCESS, &a),
                    ==, UZ_CMD_BAD_PARAM);
    g_assert_cmpint(modify_qp(t, qpn, INIT_MASK | UZ_QP_ATTR_QKEY, &a), ==,
                    UZ_CMD_BAD_PARAM);
    a.port = 2;
    g_assert_cmpint(modify_qp(t, qpn, INIT_MASK, &a), ==, UZ_CMD_BAD_PARAM);
    a.port = 1;
    g_assert_cmpint(modify_qp(t, qpn, INIT_MASK, &a), ==, UZ_CMD_OK);
    uz_ring(&t->d, sq_db, 1);
    g_assert_cmpint(uz_rd(&t->d, UZ_REG_ERR_STATUS), ==, UZ_ERR_BAD_STATE);
    g_assert_cmpint(uz_rd(&t->d, UZ_REG_ERR_COUNT), ==, 1);
}

/*
 * INIT -> RTR: the path MTU may not exceed the port's (1024 at 1500).
 * @rtr: the attributes the QP took.
 */
static void qsm_to_rtr(UzRdma *t, uint32_t qpn, struct uz_qp_attr *rtr)
{
    struct uz_admin_cmd mtu = { .opcode = UZ_CMD_SET_MTU };

    *rtr = rc_rtr_attr(UZ_MTU_4096);
    g_assert_cmpint(modify_qp(t, qpn, RTR_MASK, rtr), ==, UZ_CMD_BAD_PARAM);
    mtu.set_mtu.mtu = cpu_to_le32(9000);
    g_assert_cmpint(uz_admin(&t->d, &mtu, NULL), ==, UZ_CMD_OK);
    g_assert_cmpint(modify_qp(t, qpn, RTR_MASK & ~UZ_QP_ATTR_RQ_PSN, rtr),
                    ==, UZ_CMD_BAD_PARAM);
    rtr->rq_psn = cpu_to_le32(0x1000000);
    g_assert_cmpint(modify_qp(t, qpn, RTR_MASK, rtr), ==, UZ_CMD_BAD_PARAM);
    rtr->rq_psn = cpu_to_le32(0xabcdef);
    rtr->dmac[0] = 0x33;
    g_assert_cmpint(modify_qp(t, qpn, RTR_MASK, rtr), ==, UZ_CMD_BAD_PARAM);
    rtr->dmac[0] = 0x52;
    rtr->max_dest_rd_atomic = 17;
    g_assert_cmpint(modify_qp(t, qpn, RTR_MASK, rtr), ==, UZ_CMD_BAD_PARAM);
    rtr->max_dest_rd_atomic = 4;
    g_assert_cmpint(modify_qp(t, qpn, RTR_MASK, rtr), ==, UZ_CMD_OK);
}

/* RTR -> RTS with the send attributes, range-checked. */
static void qsm_to_rts(UzRdma *t, uint32_t qpn, uint32_t sq_db)
{
    struct uz_qp_attr a = {
        .state = UZ_QPS_RTS, .sq_psn = cpu_to_le32(0x654321), .timeout = 14,
        .retry_cnt = 8, .rnr_retry = 7, .max_rd_atomic = 4,
    };

    g_assert_cmpint(modify_qp(t, qpn, RTS_MASK, &a), ==, UZ_CMD_BAD_PARAM);
    a.retry_cnt = 7;
    a.timeout = 32;
    g_assert_cmpint(modify_qp(t, qpn, RTS_MASK, &a), ==, UZ_CMD_BAD_PARAM);
    a.timeout = 14;
    g_assert_cmpint(modify_qp(t, qpn, RTS_MASK & ~UZ_QP_ATTR_TIMEOUT, &a),
                    ==, UZ_CMD_BAD_PARAM);
    g_assert_cmpint(modify_qp(t, qpn, RTS_MASK, &a), ==, UZ_CMD_OK);
    uz_ring(&t->d, sq_db, 1);
    g_assert_cmpint(uz_rd(&t->d, UZ_REG_ERR_COUNT), ==, 1);
}

/* Query returns what was set (@rtr and qsm_to_rts()'s), byte for byte. */
static void qsm_query_rts(UzRdma *t, uint32_t qpn,
                          const struct uz_qp_attr *rtr)
{
    struct uz_qp_attr q;

    query_qp(t, qpn, &q);
    g_assert_cmpint(q.state, ==, UZ_QPS_RTS);
    g_assert_cmpint(q.path_mtu, ==, UZ_MTU_4096);
    g_assert_cmphex(le32_to_cpu(q.dest_qpn), ==, 0x123);
    g_assert_cmphex(le32_to_cpu(q.rq_psn), ==, 0xabcdef);
    g_assert_cmphex(le32_to_cpu(q.sq_psn), ==, 0x654321);
    g_assert_cmphex(le32_to_cpu(q.access_flags), ==,
                    UZ_ACCESS_REMOTE_WRITE | UZ_ACCESS_REMOTE_READ);
    g_assert_cmpint(q.timeout, ==, 14);
    g_assert_cmpint(q.retry_cnt, ==, 7);
    g_assert_cmpint(q.rnr_retry, ==, 7);
    g_assert_cmpint(q.min_rnr_timer, ==, 12);
    g_assert_cmpint(q.max_rd_atomic, ==, 4);
    g_assert_cmpint(q.max_dest_rd_atomic, ==, 4);
    g_assert_cmpint(q.port, ==, 1);
    g_assert_cmpint(q.hop_limit, ==, 64);
    g_assert(memcmp(q.dmac, rtr->dmac, 6) == 0);
    g_assert(memcmp(q.dgid, rtr->dgid, 16) == 0);
}

/* RTS -> SQD -> RTS; RTS -> RTR is illegal; RTS -> RTS keeps the path. */
static void qsm_from_rts(UzRdma *t, uint32_t qpn,
                         const struct uz_qp_attr *rtr)
{
    struct uz_qp_attr a = { .state = UZ_QPS_SQD };
    struct uz_qp_attr q;

    g_assert_cmpint(modify_qp(t, qpn, UZ_QP_ATTR_STATE, &a), ==, UZ_CMD_OK);
    a.state = UZ_QPS_RTS;
    g_assert_cmpint(modify_qp(t, qpn, UZ_QP_ATTR_STATE, &a), ==, UZ_CMD_OK);
    a.state = UZ_QPS_RTR;
    g_assert_cmpint(modify_qp(t, qpn, UZ_QP_ATTR_STATE, &a), ==,
                    UZ_CMD_BAD_STATE);
    g_assert_cmpint(modify_qp(t, qpn, UZ_QP_ATTR_PATH_MTU, rtr), ==,
                    UZ_CMD_BAD_PARAM);
    a.state = 9;
    g_assert_cmpint(modify_qp(t, qpn, UZ_QP_ATTR_STATE, &a), ==,
                    UZ_CMD_BAD_PARAM);

    /* Any state -> ERR; ERR -> RTS is illegal; ERR -> RESET clears. */
    a.state = UZ_QPS_ERR;
    g_assert_cmpint(modify_qp(t, qpn, UZ_QP_ATTR_STATE, &a), ==, UZ_CMD_OK);
    a.state = UZ_QPS_RTS;
    g_assert_cmpint(modify_qp(t, qpn, UZ_QP_ATTR_STATE, &a), ==,
                    UZ_CMD_BAD_STATE);
    a.state = UZ_QPS_RESET;
    g_assert_cmpint(modify_qp(t, qpn, UZ_QP_ATTR_STATE, &a), ==, UZ_CMD_OK);
    query_qp(t, qpn, &q);
    g_assert_cmpint(q.state, ==, UZ_QPS_RESET);
    g_assert_cmphex(le32_to_cpu(q.dest_qpn), ==, 0);

    g_assert_cmpint(modify_qp(t, 77, UZ_QP_ATTR_STATE, &a), ==,
                    UZ_CMD_BAD_HANDLE);
}

/* One QP through the states in turn, each step from where the last left. */
static void test_qp_state_machine(void)
{
    UzRdma t;
    struct uz_admin_cqe cqe;
    struct uz_qp_attr rtr;
    uint32_t pdn, cqn, qpn, sq_db;
    g_autofree char *log = NULL;

    rdma_start(&t, NULL);
    pdn = alloc_pd(&t, 0);
    g_assert_cmpint(create_cq(&t, 0, 6, t.eq.eqn, &cqn, NULL), ==, UZ_CMD_OK);
    g_assert_cmpint(create_qp(&t, UZ_QPT_RC, pdn, cqn, UZ_NO_SRQ, &qpn, &cqe),
                    ==, UZ_CMD_OK);
    sq_db = le32_to_cpu(cqe.out1);

    qsm_to_init(&t, qpn, sq_db);
    qsm_to_rtr(&t, qpn, &rtr);
    qsm_to_rts(&t, qpn, sq_db);
    qsm_query_rts(&t, qpn, &rtr);
    qsm_from_rts(&t, qpn, &rtr);
    log = uz_machine_log(&t.m);
    g_assert(strstr(log, "no transition from state 0 to 2"));
    g_assert(strstr(log, "not valid from state"));
    rdma_stop(&t);
}

static void test_ud_state_machine(void)
{
    UzRdma t;
    struct uz_qp_attr a = { .state = UZ_QPS_INIT, .port = 1,
                            .qkey = cpu_to_le32(0x11111111) };
    struct uz_qp_attr q;
    struct uz_cmd_query c;
    uint32_t pdn, cqn, qpn;

    rdma_start(&t, NULL);
    pdn = alloc_pd(&t, 0);
    g_assert_cmpint(create_cq(&t, 0, 6, t.eq.eqn, &cqn, NULL), ==, UZ_CMD_OK);
    g_assert_cmpint(create_qp(&t, UZ_QPT_UD, pdn, cqn, UZ_NO_SRQ, &qpn, NULL),
                    ==, UZ_CMD_OK);
    /* UD takes a Q_Key, not access flags. */
    g_assert_cmpint(modify_qp(&t, qpn, INIT_MASK, &a), ==, UZ_CMD_BAD_PARAM);
    g_assert_cmpint(modify_qp(&t, qpn, UZ_QP_ATTR_STATE |
                              UZ_QP_ATTR_PKEY_INDEX | UZ_QP_ATTR_PORT |
                              UZ_QP_ATTR_QKEY, &a), ==, UZ_CMD_OK);
    /* INIT -> RTR needs nothing for UD, and takes no path. */
    a.state = UZ_QPS_RTR;
    a.path_mtu = UZ_MTU_1024;
    g_assert_cmpint(modify_qp(&t, qpn, UZ_QP_ATTR_STATE |
                              UZ_QP_ATTR_PATH_MTU, &a), ==, UZ_CMD_BAD_PARAM);
    g_assert_cmpint(modify_qp(&t, qpn, UZ_QP_ATTR_STATE, &a), ==, UZ_CMD_OK);
    a.state = UZ_QPS_RTS;
    g_assert_cmpint(modify_qp(&t, qpn, UZ_QP_ATTR_STATE, &a), ==,
                    UZ_CMD_BAD_PARAM);
    a.sq_psn = cpu_to_le32(7);
    g_assert_cmpint(modify_qp(&t, qpn, UZ_QP_ATTR_STATE | UZ_QP_ATTR_SQ_PSN,
                              &a), ==, UZ_CMD_OK);
    query_qp(&t, qpn, &q);
    g_assert_cmpint(q.state, ==, UZ_QPS_RTS);
    g_assert_cmphex(le32_to_cpu(q.qkey), ==, 0x11111111);
    g_assert_cmpint(le32_to_cpu(q.sq_psn), ==, 7);

    /* A reset forgets every RDMA object. */
    uz_wr(&t.d, UZ_REG_RESET, UZ_RESET_KEY);
    uz_admin_start(&t.d, 5);
    c = (struct uz_cmd_query) {
        .buf_addr = cpu_to_le64(t.buf), .buf_len = cpu_to_le32(96),
        .handle = cpu_to_le32(qpn),
    };
    g_assert_cmpint(rdma_cmd(&t, UZ_CMD_QUERY_QP, &c, sizeof(c), NULL),
                    ==, UZ_CMD_BAD_HANDLE);
    g_assert_cmpint(obj_cmd(&t, UZ_CMD_DEALLOC_PD, pdn, 0, NULL), ==,
                    UZ_CMD_BAD_HANDLE);
    rdma_stop(&t);
}

/* Write a send WQE at SQ index @idx of a 16 x 64-byte SQ. */
static void put_send_wqe(UzRdma *t, uint64_t sq, uint32_t idx,
                         uint64_t wr_id, uint8_t opcode)
{
    struct uz_send_wqe w = {
        .wr_id = cpu_to_le64(wr_id), .opcode = opcode,
        .flags = UZ_WQE_F_SIGNALED,
    };

    qtest_memwrite(t->d.qts, sq + (idx % 16) * 64, &w, sizeof(w));
}

static void put_recv_wqe(UzRdma *t, uint64_t rq, uint32_t idx,
                         uint64_t wr_id)
{
    struct uz_recv_wqe w = { .wr_id = cpu_to_le64(wr_id) };

    qtest_memwrite(t->d.qts, rq + (idx % 16) * 32, &w, sizeof(w));
}

/* Wait for CQE @idx of a CQ of 2^log_depth entries at @ring. */
static void wait_cqe(UzRdma *t, uint64_t ring, uint32_t log_depth,
                     uint32_t idx, struct uz_cqe *cqe)
{
    uint8_t phase = ((idx >> log_depth) & 1) ? 0 : UZ_CQE_PHASE;
    uint64_t addr = ring + (idx & ((1u << log_depth) - 1)) * sizeof(*cqe);
    int i;

    for (i = 0; i < UZ_POLL_LIMIT; i++) {
        qtest_memread(t->d.qts, addr, cqe, sizeof(*cqe));
        if ((cqe->flags & UZ_CQE_PHASE) == phase) {
            return;
        }
        uz_poll_pause(&t->d);
    }
    g_error("no CQE %u", idx);
}

static bool cqe_ready(UzRdma *t, uint64_t ring, uint32_t log_depth,
                      uint32_t idx)
{
    struct uz_cqe cqe;
    uint8_t phase = ((idx >> log_depth) & 1) ? 0 : UZ_CQE_PHASE;

    qtest_memread(t->d.qts, ring + (idx & ((1u << log_depth) - 1)) * 32,
                  &cqe, sizeof(cqe));
    return (cqe.flags & UZ_CQE_PHASE) == phase;
}

/* An RC QP whose queues share a CQ of 8 CQEs, for test_flush_and_cq. */
typedef struct Flush {
    UzRdma t;
    uint64_t sq, rq, ring;      /* 16 x 64 bytes, 16 x 32, 8 CQEs */
    uint32_t cqn, cq_db, qpn, sq_db, rq_db;
} Flush;

static void flush_start(Flush *f)
{
    UzRdma *t = &f->t;
    struct uz_cmd_create_qp c = {
        .type = UZ_QPT_RC, .srqn = cpu_to_le32(UZ_NO_SRQ),
        .sq_log_depth = 4, .rq_log_depth = 4,
        .sq_log_wqe_size = 6, .rq_log_wqe_size = 5,
    };
    struct uz_cmd_create_cq cc = { .log_depth = 3 };
    struct uz_admin_cqe cqe;
    struct uz_qp_attr a = rc_init_attr();
    uint32_t pdn;

    rdma_start(t, NULL);
    pdn = alloc_pd(t, 0);
    f->ring = uz_alloc(&t->d, 32 * 8);
    cc.ring_addr = cpu_to_le64(f->ring);
    cc.eqn = cpu_to_le32(t->eq.eqn);
    g_assert_cmpint(rdma_cmd(t, UZ_CMD_CREATE_CQ, &cc, sizeof(cc), &cqe), ==,
                    UZ_CMD_OK);
    f->cqn = le32_to_cpu(cqe.out0);
    f->cq_db = le32_to_cpu(cqe.out1);
    f->sq = uz_alloc(&t->d, 16 * 64);
    f->rq = uz_alloc(&t->d, 16 * 32);
    c.sq_addr = cpu_to_le64(f->sq);
    c.rq_addr = cpu_to_le64(f->rq);
    c.pdn = cpu_to_le32(pdn);
    c.send_cqn = c.recv_cqn = cpu_to_le32(f->cqn);
    g_assert_cmpint(rdma_cmd(t, UZ_CMD_CREATE_QP, &c, sizeof(c), &cqe), ==,
                    UZ_CMD_OK);
    f->qpn = le32_to_cpu(cqe.out0);
    f->sq_db = le32_to_cpu(cqe.out1);
    f->rq_db = le32_to_cpu(cqe.out2);
    g_assert_cmpint(modify_qp(t, f->qpn, INIT_MASK, &a), ==, UZ_CMD_OK);
}

/*
 * Work posted in INIT waits; the error state flushes it all, in order,
 * with one completion event for the arming, and its interrupt.
 */
static void flush_posted_in_init(Flush *f)
{
    static const uint8_t ops[3] = { UZ_WR_SEND, UZ_WR_RDMA_WRITE,
                                    UZ_WR_RDMA_READ };
    static const uint8_t wcs[3] = { UZ_WC_SEND, UZ_WC_RDMA_WRITE,
                                    UZ_WC_RDMA_READ };
    UzRdma *t = &f->t;
    struct uz_qp_attr a;
    struct uz_cqe wc;
    struct uz_eqe eqe;
    int i;

    for (i = 0; i < 3; i++) {
        put_send_wqe(t, f->sq, i, 0x100 + i, ops[i]);
    }
    put_recv_wqe(t, f->rq, 0, 0x200);
    put_recv_wqe(t, f->rq, 1, 0x201);
    uz_ring(&t->d, f->sq_db, 3);
    uz_ring(&t->d, f->rq_db, 2);
    g_assert(!cqe_ready(t, f->ring, 3, 0));
    /* Arm the CQ and the EQ; the error state flushes everything. */
    uz_ring(&t->d, f->cq_db, 0 | UZ_DB_ARM);
    uz_ring(&t->d, t->eq.db, t->eq.ci | UZ_DB_ARM);
    a = (struct uz_qp_attr) { .state = UZ_QPS_ERR };
    g_assert_cmpint(modify_qp(t, f->qpn, UZ_QP_ATTR_STATE, &a), ==,
                    UZ_CMD_OK);
    for (i = 0; i < 5; i++) {
        wait_cqe(t, f->ring, 3, i, &wc);
        g_assert_cmpint(wc.status, ==, UZ_WC_STATUS_WR_FLUSH_ERR);
        g_assert_cmpint(le32_to_cpu(wc.qpn), ==, f->qpn);
        if (i < 3) {
            g_assert_cmphex(le64_to_cpu(wc.wr_id), ==, 0x100 + i);
            g_assert_cmpint(wc.opcode, ==, wcs[i]);
        } else {
            g_assert_cmphex(le64_to_cpu(wc.wr_id), ==, 0x200 + i - 3);
            g_assert_cmpint(wc.opcode, ==, UZ_WC_RECV);
        }
    }
    g_assert(!cqe_ready(t, f->ring, 3, 5));
    /* One completion event for the arming, and its interrupt. */
    uz_eq_wait(&t->d, &t->eq, &eqe);
    g_assert_cmpint(eqe.type, ==, UZ_EQE_COMPLETION);
    g_assert_cmpint(le32_to_cpu(eqe.handle), ==, f->cqn);
    uz_wait_msix(&t->d, 1);
    uz_clear_msix(&t->d, 1);
    g_assert(!uz_eq_next(&t->d, &t->eq, &eqe));
}

/*
 * Eight entries, none consumed: the ninth CQE overflows the CQ, which
 * stops and writes nothing more, even with room.
 */
static void flush_overflow(Flush *f)
{
    UzRdma *t = &f->t;
    struct uz_cqe wc;
    struct uz_eqe eqe;
    int i;

    for (i = 4; i < 7; i++) {
        put_send_wqe(t, f->sq, i, 0x100 + i, UZ_WR_SEND);
    }
    uz_ring(&t->d, f->sq_db, 7);
    wait_cqe(t, f->ring, 3, 7, &wc);
    g_assert_cmphex(le64_to_cpu(wc.wr_id), ==, 0x105);
    uz_eq_wait(&t->d, &t->eq, &eqe);
    g_assert_cmpint(eqe.type, ==, UZ_EQE_CQ_ERROR);
    g_assert_cmpint(le32_to_cpu(eqe.handle), ==, f->cqn);
    g_assert_cmpint(uz_counter(&t->m, 0, "cqes"), ==, 8);
    g_assert_cmpint(uz_counter(&t->m, 0, "cqes_error"), ==, 8);
    /* The stopped CQ writes nothing more, even with room. */
    uz_ring(&t->d, f->cq_db, 8);
    put_send_wqe(t, f->sq, 7, 0x107, UZ_WR_SEND);
    uz_ring(&t->d, f->sq_db, 8);
    for (i = 0; i < 50; i++) {
        uz_poll_pause(&t->d);
    }
    g_assert(!cqe_ready(t, f->ring, 3, 8));
}

/*
 * A QP moved to the error state completes everything posted to it with
 * WR_FLUSH_ERR, in order, through its CQ: the CQ's phase, arming (one
 * COMPLETION event and MSI-X), and overflow (CQ_ERROR, the CQ stops).
 * The steps fill the one CQ in turn.
 */
static void test_flush_and_cq(void)
{
    Flush f;
    UzRdma *t = &f.t;
    struct uz_cqe wc;
    struct uz_eqe eqe;

    flush_start(&f);
    flush_posted_in_init(&f);

    /* Posting in the error state flushes at once; not armed: no event. */
    put_send_wqe(t, f.sq, 3, 0x103, UZ_WR_SEND);
    uz_ring(&t->d, f.sq_db, 4);
    wait_cqe(t, f.ring, 3, 5, &wc);
    g_assert_cmphex(le64_to_cpu(wc.wr_id), ==, 0x103);
    g_assert(!uz_eq_next(&t->d, &t->eq, &eqe));

    flush_overflow(&f);
    rdma_stop(t);
}

/* CQE phases across many passes of a small CQ. */
static void test_cq_wrap(void)
{
    UzRdma t;
    struct uz_cmd_create_qp c = {
        .type = UZ_QPT_UD, .srqn = cpu_to_le32(UZ_NO_SRQ),
        .sq_log_depth = 4, .rq_log_depth = 4,
        .sq_log_wqe_size = 6, .rq_log_wqe_size = 5,
    };
    struct uz_cmd_create_cq cc = { .log_depth = 2 };
    struct uz_admin_cqe cqe;
    struct uz_qp_attr a = { .state = UZ_QPS_ERR };
    struct uz_cqe wc;
    uint64_t sq, ring;
    uint32_t cqn, cq_db, qpn, sq_db, n = 0;
    int round, i;

    rdma_start(&t, NULL);
    ring = uz_alloc(&t.d, 32 * 4);
    cc.ring_addr = cpu_to_le64(ring);
    cc.eqn = cpu_to_le32(t.eq.eqn);
    g_assert_cmpint(rdma_cmd(&t, UZ_CMD_CREATE_CQ, &cc, sizeof(cc), &cqe), ==,
                    UZ_CMD_OK);
    cqn = le32_to_cpu(cqe.out0);
    cq_db = le32_to_cpu(cqe.out1);
    sq = uz_alloc(&t.d, 16 * 64);
    c.sq_addr = cpu_to_le64(sq);
    c.rq_addr = cpu_to_le64(uz_alloc(&t.d, 16 * 32));
    c.pdn = cpu_to_le32(alloc_pd(&t, 0));
    c.send_cqn = c.recv_cqn = cpu_to_le32(cqn);
    g_assert_cmpint(rdma_cmd(&t, UZ_CMD_CREATE_QP, &c, sizeof(c), &cqe), ==,
                    UZ_CMD_OK);
    qpn = le32_to_cpu(cqe.out0);
    sq_db = le32_to_cpu(cqe.out1);
    g_assert_cmpint(modify_qp(&t, qpn, UZ_QP_ATTR_STATE, &a), ==, UZ_CMD_OK);

    for (round = 0; round < 7; round++) {
        for (i = 0; i < 3; i++) {
            put_send_wqe(&t, sq, n + i, 0x1000 + n + i, UZ_WR_SEND);
        }
        uz_ring(&t.d, sq_db, (n + 3) & UZ_DB_PI_MASK);
        for (i = 0; i < 3; i++) {
            wait_cqe(&t, ring, 2, n + i, &wc);
            g_assert_cmphex(le64_to_cpu(wc.wr_id), ==, 0x1000 + n + i);
        }
        n += 3;
        uz_ring(&t.d, cq_db, n);
    }
    g_assert_cmpint(uz_counter(&t.m, 0, "cqes"), ==, 21);
    rdma_stop(&t);
}

/* A QP in another context cannot use SRQ 0, the kernel's. */
static void other_context_srq(UzRdma *t)
{
    struct uz_admin_cqe cqe;
    struct uz_cmd_create_qp c;
    uint32_t uctx, upd, ucq;

    g_assert_cmpint(rdma_cmd(t, UZ_CMD_CREATE_UCTX, NULL, 0, &cqe), ==,
                    UZ_CMD_OK);
    uctx = le32_to_cpu(cqe.out0);
    upd = alloc_pd(t, uctx);
    g_assert_cmpint(create_cq(t, uctx, 4, t->eq.eqn, &ucq, NULL), ==,
                    UZ_CMD_OK);
    c = (struct uz_cmd_create_qp) {
        .sq_addr = cpu_to_le64(uz_alloc(&t->d, 64 * 16)),
        .uctx = cpu_to_le32(uctx), .pdn = cpu_to_le32(upd),
        .send_cqn = cpu_to_le32(ucq), .recv_cqn = cpu_to_le32(ucq),
        .srqn = cpu_to_le32(0), .type = UZ_QPT_RC,
        .sq_log_depth = 4, .sq_log_wqe_size = 6,
    };
    g_assert_cmpint(rdma_cmd(t, UZ_CMD_CREATE_QP, &c, sizeof(c), &cqe), ==,
                    UZ_CMD_BAD_HANDLE);
}

/* Bad addresses, lengths and indices on the QP and SRQ paths. */
static void test_qp_bad_input(void)
{
    UzRdma t;
    struct uz_admin_cqe cqe;
    struct uz_qp_attr a = rc_init_attr();
    struct uz_cmd_create_srq srq = { .log_depth = 2, .log_wqe_size = 5 };
    struct uz_cmd_modify_qp mq;
    struct uz_cmd_query q;
    uint32_t pdn, cqn, qpn, sq_db, srq_db;

    rdma_start(&t, NULL);
    pdn = alloc_pd(&t, 0);
    g_assert_cmpint(create_cq(&t, 0, 6, t.eq.eqn, &cqn, NULL), ==, UZ_CMD_OK);
    g_assert_cmpint(create_qp(&t, UZ_QPT_RC, pdn, cqn, UZ_NO_SRQ, &qpn, &cqe),
                    ==, UZ_CMD_OK);
    sq_db = le32_to_cpu(cqe.out1);

    /* Attributes from outside guest memory; a short query buffer. */
    mq = (struct uz_cmd_modify_qp) {
        .buf_addr = cpu_to_le64(0xfff0000000000ull), .qpn = cpu_to_le32(qpn),
        .attr_mask = cpu_to_le32(INIT_MASK),
    };
    g_assert_cmpint(rdma_cmd(&t, UZ_CMD_MODIFY_QP, &mq, sizeof(mq), NULL), ==,
                    UZ_CMD_BAD_ADDR);
    q = (struct uz_cmd_query) {
        .buf_addr = cpu_to_le64(t.buf), .buf_len = cpu_to_le32(95),
        .handle = cpu_to_le32(qpn),
    };
    g_assert_cmpint(rdma_cmd(&t, UZ_CMD_QUERY_QP, &q, sizeof(q), NULL), ==,
                    UZ_CMD_BAD_PARAM);
    q.buf_len = cpu_to_le32(96);
    q.buf_addr = cpu_to_le64(0xfff0000000000ull);
    g_assert_cmpint(rdma_cmd(&t, UZ_CMD_QUERY_QP, &q, sizeof(q), NULL), ==,
                    UZ_CMD_BAD_ADDR);

    /* SQ doorbells: more than the 16-entry ring, and backwards. */
    g_assert_cmpint(modify_qp(&t, qpn, INIT_MASK, &a), ==, UZ_CMD_OK);
    uz_ring(&t.d, sq_db, 17);
    g_assert_cmpint(uz_rd(&t.d, UZ_REG_ERR_STATUS), ==, UZ_ERR_BAD_VALUE);
    uz_ring(&t.d, sq_db, 16);
    g_assert_cmpint(uz_rd(&t.d, UZ_REG_ERR_COUNT), ==, 1);
    uz_ring(&t.d, sq_db, 3);
    g_assert_cmpint(uz_rd(&t.d, UZ_REG_ERR_COUNT), ==, 2);

    /* SRQ: a ring outside guest memory, then a doorbell overrun. */
    srq.pdn = cpu_to_le32(pdn);
    srq.ring_addr = cpu_to_le64(0xfff0000000000ull);
    g_assert_cmpint(rdma_cmd(&t, UZ_CMD_CREATE_SRQ, &srq, sizeof(srq), NULL),
                    ==, UZ_CMD_BAD_ADDR);
    srq.ring_addr = cpu_to_le64(uz_alloc(&t.d, 4 * 32));
    g_assert_cmpint(rdma_cmd(&t, UZ_CMD_CREATE_SRQ, &srq, sizeof(srq), &cqe),
                    ==, UZ_CMD_OK);
    srq_db = le32_to_cpu(cqe.out1);
    uz_ring(&t.d, srq_db, 4);
    g_assert_cmpint(uz_rd(&t.d, UZ_REG_ERR_COUNT), ==, 2);
    uz_ring(&t.d, srq_db, 5);
    g_assert_cmpint(uz_rd(&t.d, UZ_REG_ERR_STATUS), ==, UZ_ERR_BAD_VALUE);
    g_assert_cmphex(uz_rd(&t.d, UZ_REG_ERR_ADDR), ==, srq_db);
    other_context_srq(&t);
    rdma_stop(&t);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);

    qtest_add_func("/uzura/rdma/limits", test_limits);
    qtest_add_func("/uzura/rdma/uctx-pd-ah", test_uctx_pd_ah);
    qtest_add_func("/uzura/rdma/cq", test_cq);
    qtest_add_func("/uzura/rdma/mr", test_mr);
    qtest_add_func("/uzura/rdma/srq-qp-create", test_srq_and_qp_create);
    qtest_add_func("/uzura/rdma/qp-state-machine", test_qp_state_machine);
    qtest_add_func("/uzura/rdma/ud-state-machine", test_ud_state_machine);
    qtest_add_func("/uzura/rdma/flush-and-cq", test_flush_and_cq);
    qtest_add_func("/uzura/rdma/cq-wrap", test_cq_wrap);
    qtest_add_func("/uzura/rdma/qp-bad-input", test_qp_bad_input);

    return g_test_run();
}
