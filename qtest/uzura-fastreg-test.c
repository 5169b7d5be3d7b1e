/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uzura: fast registration (spec 8.11): a fast-reg MR made valid by a
 * REG_MR work request over a page list the driver wrote, freed by
 * LOCAL_INV or by a SEND with invalidate from the peer; a freed or
 * remapped MR never lets an old key or an old page through; every bad
 * REG_MR, LOCAL_INV or invalidating SEND fails with the IB status and
 * harms no other QP or MR.
 */
#include "uzura-pair.h"

#define IOVA        0x7f1234560100ull  /* not page-aligned */
#define LEN         (3 * 4096)
#define CAP         8                  /* pages of the fast-reg MRs */

/* Post @wr on @qp and check its completion. */
static void local_ok(UzQp *qp, const UzWr *wr)
{
    uz_post_send(qp, wr);
    uz_sq_done(qp, wr->wr_id, uz_wc_opcode(wr->opcode), 0);
}

/* Register fast-reg MR @mr at IOVA with key byte @kb, on @qp. */
static void fast_reg(UzQp *qp, UzMr *mr, uint8_t kb)
{
    UzWr wr = uz_fast_map(mr, IOVA, LEN, UZ_ACCESS_ALL, kb);

    local_ok(qp, &wr);
}

static void local_inv(UzQp *qp, uint32_t key)
{
    UzWr wr = { .wr_id = 0x1170 + (key & 0xff), .opcode = UZ_WR_LOCAL_INV,
                .flags = UZ_WQE_F_SIGNALED, .imm = key };

    local_ok(qp, &wr);
}

/* The MR's bytes at @off are the pattern of @seed. */
static void assert_pattern(UzMr *mr, uint64_t off, uint32_t len,
                           uint32_t seed)
{
    g_autofree uint8_t *want = g_malloc(len);

    uz_pattern(want, len, seed);
    uz_assert_mr(mr, off, want, len, "fast-reg MR");
}

/*
 * REG_MR makes the MR reachable through its new key, at its iova; after
 * LOCAL_INV the key reaches nothing, and the responder says so.
 */
static void test_reg_write_inv(void)
{
    Pair p;
    UzMr *fb;

    pair_start(&p);
    fb = uz_mr_alloc_fast(&p.n[1], p.n[1].pdn, CAP);
    /* Free: its key reaches nothing yet. */
    pair_write(&p, fb->key, IOVA, 64, 1, UZ_WC_STATUS_REM_ACCESS_ERR);
    pair_stop(&p);

    pair_start(&p);
    fb = uz_mr_alloc_fast(&p.n[1], p.n[1].pdn, CAP);
    fast_reg(p.qb, fb, 0x5a);
    g_assert_cmphex(fb->key & 0xff, ==, 0x5a);
    pair_write(&p, fb->key, IOVA + 100, 5000, 2, UZ_WC_STATUS_SUCCESS);
    assert_pattern(fb, 100, 5000, 2);
    local_inv(p.qb, fb->key);
    pair_write(&p, fb->key, IOVA + 100, 64, 3, UZ_WC_STATUS_REM_ACCESS_ERR);
    assert_pattern(fb, 100, 5000, 2);
    pair_stop(&p);
}

/*
 * A SEND with invalidate frees the MR it names at the receiver, which
 * sees the key in its completion.
 */
static void test_send_inv(void)
{
    UzSge s, r;
    UzWr wr;
    Pair p;
    UzMr *fb;

    pair_start(&p);
    fb = uz_mr_alloc_fast(&p.n[1], p.n[1].pdn, CAP);
    fast_reg(p.qb, fb, 0x21);
    pair_write(&p, fb->key, IOVA, 4096, 4, UZ_WC_STATUS_SUCCESS);

    s = uz_mr_sge(p.ma, 0, 3000);
    r = uz_mr_sge(p.mb, 0, 4096);
    uz_post_recv(p.qb, 0x7100, &r, 1);
    wr = (UzWr) { .wr_id = 0x7000, .opcode = UZ_WR_SEND_INV,
                  .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1,
                  .imm = fb->key };
    uz_post_send(p.qa, &wr);
    uz_sq_done(p.qa, 0x7000, UZ_WC_SEND, 3000);
    uz_rq_done(p.qb, 0x7100, UZ_WC_RECV, 3000, UZ_WC_F_INV, fb->key);

    pair_write(&p, fb->key, IOVA, 64, 5, UZ_WC_STATUS_REM_ACCESS_ERR);
    assert_pattern(fb, 0, 4096, 4);
    pair_stop(&p);
}

/*
 * Registered again over new pages with a new key byte, the MR reaches
 * the new pages only: no translation of the old mapping survives, and
 * the old key misses.
 */
static void test_remap(void)
{
    Pair p;
    UzMr *fb, old;

    pair_start(&p);
    fb = uz_mr_alloc_fast(&p.n[1], p.n[1].pdn, CAP);
    fast_reg(p.qb, fb, 0x31);
    pair_write(&p, fb->key, IOVA, LEN, 6, UZ_WC_STATUS_SUCCESS);
    local_inv(p.qb, fb->key);

    old = *fb;
    old.pages = g_memdup2(fb->pages, CAP * sizeof(uint64_t));
    fast_reg(p.qb, fb, 0x32);
    g_assert_cmphex(fb->key, !=, old.key);
    pair_write(&p, fb->key, IOVA, LEN, 7, UZ_WC_STATUS_SUCCESS);
    assert_pattern(fb, 0, LEN, 7);
    assert_pattern(&old, 0, LEN, 6);
    pair_write(&p, old.key, IOVA, 64, 8, UZ_WC_STATUS_REM_ACCESS_ERR);
    assert_pattern(fb, 0, LEN, 7);
    g_free(old.pages);
    pair_stop(&p);
}

/*
 * Bad REG_MR and LOCAL_INV work requests: each fails its own QP with the
 * IB status and the detail of 8.11, and changes no MR.
 */
static void test_bad_local(void)
{
    Pair p;
    UzMr *fb, *other_pd, *fresh;
    UzWr wr, reg;
    uint32_t pd2;

    pair_start(&p);
    fb = uz_mr_alloc_fast(&p.n[1], p.n[1].pdn, CAP);
    fast_reg(p.qb, fb, 0x41);
    pair_write(&p, fb->key, IOVA, 4096, 9, UZ_WC_STATUS_SUCCESS);

    /* REG_MR of an MR that is valid already. */
    reg = (UzWr) { .wr_id = 0x4101, .opcode = UZ_WR_REG_MR,
                   .flags = UZ_WQE_F_SIGNALED, .rkey = (fb->key & ~0xffu) | 7,
                   .remote_addr = IOVA, .reg_length = 4096,
                   .reg_access = UZ_ACCESS_ALL, .reg_npages = 1 };
    pair_local_fails(&p, &reg, UZ_WC_STATUS_LOC_PROT_ERR, UZ_VERR_MR_STATE);

    /* REG_MR of a plain MR. */
    wr = reg;
    wr.wr_id = 0x4102;
    wr.rkey = p.mb->key;
    pair_local_fails(&p, &wr, UZ_WC_STATUS_LOC_PROT_ERR, UZ_VERR_BAD_LKEY);

    /* REG_MR of a fast-reg MR of another PD. */
    pd2 = uz_pd_alloc(&p.n[1]);
    other_pd = uz_mr_alloc_fast(&p.n[1], pd2, CAP);
    wr.wr_id = 0x4103;
    wr.rkey = other_pd->key;
    pair_local_fails(&p, &wr, UZ_WC_STATUS_LOC_PROT_ERR, UZ_VERR_PD);

    /* More pages than the MR's list holds; pages short of the length. */
    fresh = uz_mr_alloc_fast(&p.n[1], p.n[1].pdn, CAP);
    wr.rkey = fresh->key;
    wr.wr_id = 0x4104;
    wr.reg_npages = CAP + 1;
    wr.reg_length = (CAP + 1) * 4096ull;
    pair_local_fails(&p, &wr, UZ_WC_STATUS_LOC_QP_OP_ERR, UZ_VERR_BAD_WQE);
    wr.wr_id = 0x4105;
    wr.reg_npages = 1;
    wr.reg_length = 2 * 4096;
    pair_local_fails(&p, &wr, UZ_WC_STATUS_LOC_QP_OP_ERR, UZ_VERR_BAD_WQE);
    /* Remote write without local write; a page shift out of range. */
    wr.wr_id = 0x4106;
    wr.reg_length = 4096;
    wr.reg_access = UZ_ACCESS_REMOTE_WRITE;
    pair_local_fails(&p, &wr, UZ_WC_STATUS_LOC_QP_OP_ERR, UZ_VERR_BAD_WQE);
    wr.wr_id = 0x4107;
    wr.reg_access = UZ_ACCESS_ALL;
    wr.reg_page_shift = 31;
    pair_local_fails(&p, &wr, UZ_WC_STATUS_LOC_QP_OP_ERR, UZ_VERR_BAD_WQE);

    /* LOCAL_INV of a plain MR, of a stale key byte, of a key of nothing. */
    wr = (UzWr) { .wr_id = 0x4108, .opcode = UZ_WR_LOCAL_INV,
                  .flags = UZ_WQE_F_SIGNALED, .imm = p.mb->key };
    pair_local_fails(&p, &wr, UZ_WC_STATUS_LOC_PROT_ERR, UZ_VERR_MR_STATE);
    wr.wr_id = 0x4109;
    wr.imm = fb->key ^ 0x80;
    pair_local_fails(&p, &wr, UZ_WC_STATUS_LOC_PROT_ERR, UZ_VERR_BAD_RKEY);
    wr.wr_id = 0x410a;
    wr.imm = 0xfff00;
    pair_local_fails(&p, &wr, UZ_WC_STATUS_LOC_PROT_ERR, UZ_VERR_BAD_RKEY);
    /* LOCAL_INV of another PD's fast-reg MR. */
    wr.wr_id = 0x410b;
    wr.imm = other_pd->key;
    pair_local_fails(&p, &wr, UZ_WC_STATUS_LOC_PROT_ERR, UZ_VERR_PD);

    /* Nothing changed: both MRs and the first pair still work. */
    pair_write(&p, fb->key, IOVA + 4096, 4096, 10, UZ_WC_STATUS_SUCCESS);
    assert_pattern(fb, 0, 4096, 9);
    assert_pattern(fb, 4096, 4096, 10);
    exchange(&p, UZ_WR_RDMA_WRITE, 3000);
    /* The fresh MR is still free: a valid REG_MR takes it now. */
    fast_reg(p.qb, fresh, 0x42);
    pair_stop(&p);
}

/*
 * A SEND with invalidate of a key the receiver's QP may not free fails
 * both ends with REM_INV_REQ_ERR; the MR it named stays valid.
 */
static void test_bad_send_inv(void)
{
    UzSge s, r;
    UzWr wr;
    Pair p;
    struct uz_cqe c;
    UzQp *a, *b;

    pair_start(&p);
    s = uz_mr_sge(p.ma, 0, 100);
    r = uz_mr_sge(p.mb, 0, 4096);
    uz_post_recv(p.qb, 0x7200, &r, 1);
    wr = (UzWr) { .wr_id = 0x7201, .opcode = UZ_WR_SEND_INV,
                  .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1,
                  .imm = p.mb->key };
    uz_post_send(p.qa, &wr);
    uz_sq_err(p.qa, 0x7201, UZ_WC_SEND, UZ_WC_STATUS_REM_INV_REQ_ERR, 0);
    uz_cq_wait(p.qb->rcq, &c);
    uz_expect_err(&c, 0x7200, UZ_WC_RECV, UZ_WC_STATUS_REM_INV_REQ_ERR,
                  UZ_VERR_MR_STATE, p.qb);

    /* The plain MR still takes writes, from another pair of QPs. */
    pair_fresh_qps(&p, &a, &b);
    p.qa = a;
    p.qb = b;
    exchange(&p, UZ_WR_RDMA_WRITE, 3000);
    pair_stop(&p);
}

/*
 * LOCAL_INV waits for the messages before it: the ACK of a SEND from a
 * fast-reg MR is lost, the SEND goes again after the timeout and still
 * reads its data through the MR, then the MR is freed.
 */
static void test_inv_waits(void)
{
    UzSge s, r;
    UzWr wr[2];
    Pair p;
    UzMr *fa;
    struct uz_cqe c;
    g_autofree uint8_t *data = g_malloc(3000);
    uint64_t rtx;

    pair_start(&p);
    fa = uz_mr_alloc_fast(&p.n[0], p.n[0].pdn, CAP);
    fast_reg(p.qa, fa, 0x51);
    uz_pattern(data, 3000, 11);
    uz_mr_write(fa, 0, data, 3000);
    r = uz_mr_sge(p.mb, 0, 4096);
    uz_post_recv(p.qb, 0x7300, &r, 1);

    rules_set(&p, 1, "kind=ack count=1 drop");
    rtx = uz_counter(&p.m, 0, "retransmits");
    s = uz_mr_sge(fa, 0, 3000);
    wr[0] = (UzWr) { .wr_id = 0x7301, .opcode = UZ_WR_SEND,
                     .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1 };
    wr[1] = (UzWr) { .wr_id = 0x7302, .opcode = UZ_WR_LOCAL_INV,
                     .flags = UZ_WQE_F_SIGNALED, .imm = fa->key };
    uz_sq_post(p.qa, &wr[0]);
    uz_sq_post(p.qa, &wr[1]);
    uz_sq_ring(p.qa);
    uz_cq_wait_clock(p.qa->scq, &c, STEP_NS, 100);
    uz_expect_sq(&c, 0x7301, UZ_WC_SEND, p.qa, 3000);
    uz_cq_wait_clock(p.qa->scq, &c, STEP_NS, 100);
    uz_expect_sq(&c, 0x7302, UZ_WC_LOCAL_INV, p.qa, 0);
    g_assert_cmpuint(rule_acted(&p, 1, 1), ==, 1);
    g_assert_cmpuint(uz_counter(&p.m, 0, "retransmits") - rtx, >=, 1);
    uz_rq_done(p.qb, 0x7300, UZ_WC_RECV, 3000, 0, 0);
    uz_assert_mr(p.mb, 0, data, 3000, "received");
    pair_stop(&p);
}

/* REG_MR commands for fast-reg MRs: what the device refuses. */
static void test_cmd(void)
{
    Pair p;
    UzNode *n;
    struct uz_admin_cqe cqe;
    struct uz_cmd_reg_mr c;
    struct uz_cmd_obj o = { 0 };
    uint64_t pbl;
    UzMr *fb;

    pair_start(&p);
    n = &p.n[1];
    pbl = uz_alloc(&n->d, 1024 * 8);
    c = (struct uz_cmd_reg_mr) {
        .pdn = cpu_to_le32(n->pdn), .pbl_addr = cpu_to_le64(pbl),
        .flags = UZ_MR_F_FAST, .key = 1,
    };
    /* No pages, more than max-fast-reg-pages (512), DMA and fast. */
    c.npages = 0;
    g_assert_cmpint(uz_cmd(n, UZ_CMD_REG_MR, &c, sizeof(c), &cqe), ==,
                    UZ_CMD_BAD_PARAM);
    c.npages = cpu_to_le32(513);
    g_assert_cmpint(uz_cmd(n, UZ_CMD_REG_MR, &c, sizeof(c), &cqe), ==,
                    UZ_CMD_BAD_PARAM);
    c.npages = cpu_to_le32(512);
    c.flags = UZ_MR_F_FAST | UZ_MR_F_DMA;
    g_assert_cmpint(uz_cmd(n, UZ_CMD_REG_MR, &c, sizeof(c), &cqe), ==,
                    UZ_CMD_BAD_PARAM);
    /* A page list the device cannot read. */
    c.flags = UZ_MR_F_FAST;
    c.pbl_addr = cpu_to_le64(1ull << 50);
    g_assert_cmpint(uz_cmd(n, UZ_CMD_REG_MR, &c, sizeof(c), &cqe), ==,
                    UZ_CMD_BAD_ADDR);
    c.pbl_addr = cpu_to_le64(pbl);
    g_assert_cmpint(uz_cmd(n, UZ_CMD_REG_MR, &c, sizeof(c), &cqe), ==,
                    UZ_CMD_OK);

    /* Deregistered by its index, whatever key byte REG_MR gave it. */
    fb = uz_mr_alloc_fast(n, n->pdn, CAP);
    fast_reg(p.qb, fb, 0x61);
    o.handle = cpu_to_le32(fb->key & ~0xffu);
    g_assert_cmpint(uz_cmd(n, UZ_CMD_DEREG_MR, &o, sizeof(o), &cqe), ==,
                    UZ_CMD_OK);
    pair_write(&p, fb->key, IOVA, 64, 12, UZ_WC_STATUS_REM_ACCESS_ERR);
    pair_stop(&p);
}

/*
 * A fast-reg MR aimed at the device itself: a page list in its BAR 4 is
 * refused when the MR is created; a REG_MR over a page list whose entry
 * is BAR 4 succeeds (the device reads the list, not the page), but a
 * WRITE into it fails at the responder with a DMA error and leaves the
 * device's doorbells alone; its other QPs go on.
 */
static void test_device_pages(void)
{
    struct uz_cmd_reg_mr c;
    struct uz_admin_cqe cqe;
    uint64_t db;
    UzQp *a, *b;
    UzWr wr;
    UzMr *fb;
    Pair p;

    pair_start(&p);
    db = p.n[1].d.db.addr;
    c = (struct uz_cmd_reg_mr) {
        .pdn = cpu_to_le32(p.n[1].pdn), .pbl_addr = cpu_to_le64(db),
        .npages = cpu_to_le32(CAP), .flags = UZ_MR_F_FAST, .key = 1,
    };
    g_assert_cmpint(uz_cmd(&p.n[1], UZ_CMD_REG_MR, &c, sizeof(c), &cqe), ==,
                    UZ_CMD_BAD_ADDR);

    fb = uz_mr_alloc_fast(&p.n[1], p.n[1].pdn, CAP);
    wr = uz_fast_map(fb, IOVA, 4096, UZ_ACCESS_ALL, 0x81);
    qtest_writeq(qts(&p), fb->pbl, db);
    fb->pages[0] = db;
    local_ok(p.qb, &wr);
    pair_write(&p, fb->key, IOVA, 64, 13, UZ_WC_STATUS_REM_OP_ERR);
    g_assert_cmphex(uz_rd(&p.n[1].d, UZ_REG_ADMIN_STATUS), ==,
                    UZ_ADMIN_STATUS_ENABLED);
    pair_fresh_qps(&p, &a, &b);
    p.qa = a;
    p.qb = b;
    exchange(&p, UZ_WR_SEND, 3000);
    pair_stop(&p);
}

/*
 * A user context cannot reach the kernel's fast-reg MRs: its QP can
 * neither register nor invalidate one, a SEND with invalidate it receives
 * for one fails both ends, and it cannot create one.  The MR stays valid
 * for the kernel.
 */
static void test_user_context(void)
{
    UzNode *n;
    UzQp *k, *u;
    UzSge s, r;
    UzWr wr;
    UzMr *fb;
    Pair p;
    struct uz_admin_cqe cqe;
    struct uz_cmd_reg_mr c;
    struct uz_cqe e;
    uint32_t kpdn;
    int i;

    pair_start(&p);
    n = &p.n[1];
    fb = uz_mr_alloc_fast(n, n->pdn, CAP);
    fast_reg(p.qb, fb, 0x91);

    /* Node 1's objects from here on are a user context's. */
    g_assert_cmpint(uz_cmd(n, UZ_CMD_CREATE_UCTX, NULL, 0, &cqe), ==,
                    UZ_CMD_OK);
    kpdn = n->pdn;
    n->uctx = le32_to_cpu(cqe.out0);
    n->pdn = uz_pd_alloc(n);
    c = (struct uz_cmd_reg_mr) {
        .pdn = cpu_to_le32(n->pdn), .uctx = cpu_to_le32(n->uctx),
        .pbl_addr = cpu_to_le64(uz_alloc(&n->d, CAP * 8)),
        .npages = cpu_to_le32(CAP), .flags = UZ_MR_F_FAST, .key = 1,
    };
    g_assert_cmpint(uz_cmd(n, UZ_CMD_REG_MR, &c, sizeof(c), &cqe), ==,
                    UZ_CMD_BAD_PARAM);

    for (i = 0; i < 3; i++) {
        UzRcOpts o = UZ_RC_OPTS_DEFAULT;

        k = uz_qp_create(&p.n[0], UZ_QPT_RC, NULL, NULL, NULL, 0);
        u = uz_qp_create(n, UZ_QPT_RC, NULL, NULL, NULL, 0);
        uz_rc_connect(k, u, &o);
        if (i == 0) {
            wr = (UzWr) { .wr_id = 0x9100, .opcode = UZ_WR_REG_MR,
                          .flags = UZ_WQE_F_SIGNALED, .remote_addr = IOVA,
                          .rkey = (fb->key & ~0xffu) | 0x92,
                          .reg_length = 4096, .reg_access = UZ_ACCESS_ALL,
                          .reg_npages = 1 };
            uz_post_send(u, &wr);
            uz_sq_err(u, 0x9100, UZ_WC_REG_MR, UZ_WC_STATUS_LOC_PROT_ERR,
                      UZ_VERR_BAD_LKEY);
        } else if (i == 1) {
            wr = (UzWr) { .wr_id = 0x9101, .opcode = UZ_WR_LOCAL_INV,
                          .flags = UZ_WQE_F_SIGNALED, .imm = fb->key };
            uz_post_send(u, &wr);
            uz_sq_err(u, 0x9101, UZ_WC_LOCAL_INV, UZ_WC_STATUS_LOC_PROT_ERR,
                      UZ_VERR_BAD_RKEY);
        } else {
            UzMr *um = uz_mr_reg(n, 4096, UZ_ACCESS_ALL);

            r = uz_mr_sge(um, 0, 4096);
            uz_post_recv(u, 0x9102, &r, 1);
            s = uz_mr_sge(p.ma, 0, 100);
            wr = (UzWr) { .wr_id = 0x9103, .opcode = UZ_WR_SEND_INV,
                          .flags = UZ_WQE_F_SIGNALED, .sge = &s,
                          .num_sge = 1, .imm = fb->key };
            uz_post_send(k, &wr);
            uz_sq_err(k, 0x9103, UZ_WC_SEND, UZ_WC_STATUS_REM_INV_REQ_ERR, 0);
            uz_cq_wait(u->rcq, &e);
            uz_expect_err(&e, 0x9102, UZ_WC_RECV,
                          UZ_WC_STATUS_REM_INV_REQ_ERR, UZ_VERR_BAD_RKEY, u);
        }
    }

    /* Back to the kernel: its MR was left valid. */
    n->uctx = 0;
    n->pdn = kpdn;
    pair_write(&p, fb->key, IOVA, 4096, 14, UZ_WC_STATUS_SUCCESS);
    assert_pattern(fb, 0, 4096, 14);
    pair_stop(&p);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qtest_add_func("/uzura/fastreg/reg-write-inv", test_reg_write_inv);
    qtest_add_func("/uzura/fastreg/send-inv", test_send_inv);
    qtest_add_func("/uzura/fastreg/remap", test_remap);
    qtest_add_func("/uzura/fastreg/bad-local", test_bad_local);
    qtest_add_func("/uzura/fastreg/bad-send-inv", test_bad_send_inv);
    qtest_add_func("/uzura/fastreg/inv-waits", test_inv_waits);
    qtest_add_func("/uzura/fastreg/cmd", test_cmd);
    qtest_add_func("/uzura/fastreg/device-pages", test_device_pages);
    qtest_add_func("/uzura/fastreg/user-context", test_user_context);
    return g_test_run();
}
