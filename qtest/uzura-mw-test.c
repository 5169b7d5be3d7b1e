/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uzura: memory windows (spec 8.10.3).  A type 1 window bound to a range
 * of an MR serves every QP of its PD with its own rights, is bound again
 * and unbound by a bind of length 0; a type 2 window serves only the QP
 * that bound it and is unbound by LOCAL_INV, a SEND with invalidate, or
 * that QP going.  Old key bytes and unbound windows reach nothing; an MR
 * with windows bound neither goes nor changes; every bad bind fails its
 * own QP with MW_BIND_ERR and changes no window.  Windows share the MR
 * table and belong to their context.
 */
#include "uzura-pair.h"

#define WIN_OFF     4096                /* the window's range in mb */
#define WIN_LEN     8192
#define RW          (UZ_ACCESS_REMOTE_WRITE | UZ_ACCESS_REMOTE_READ)

static uint32_t mw_alloc_try(UzNode *n, uint32_t pdn, uint8_t type,
                             uint8_t kb, uint8_t *status)
{
    struct uz_cmd_alloc_mw c = {
        .pdn = cpu_to_le32(pdn), .uctx = cpu_to_le32(n->uctx),
        .type = type, .key = kb,
    };
    struct uz_admin_cqe cqe;

    *status = uz_cmd(n, UZ_CMD_ALLOC_MW, &c, sizeof(c), &cqe);
    return le32_to_cpu(cqe.out0);
}

static uint32_t mw_alloc(UzNode *n, uint32_t pdn, uint8_t type)
{
    uint8_t status;
    uint32_t key = mw_alloc_try(n, pdn, type, n->next_key++, &status);

    g_assert_cmpint(status, ==, UZ_CMD_OK);
    return key;
}

static uint8_t obj_cmd(UzNode *n, uint8_t op, uint32_t handle)
{
    struct uz_cmd_obj c = {
        .handle = cpu_to_le32(handle), .uctx = cpu_to_le32(n->uctx),
    };

    return uz_cmd(n, op, &c, sizeof(c), NULL);
}

/* The BIND_MW WR giving window @mw key byte @kb over @len bytes of @mr. */
static UzWr bind_wr(uint32_t mw, uint8_t kb, UzMr *mr, uint64_t off,
                    uint64_t len, uint32_t access)
{
    return (UzWr) {
        .wr_id = 0xb100 + kb, .opcode = UZ_WR_BIND_MW,
        .flags = UZ_WQE_F_SIGNALED, .rkey = (mw & ~0xffu) | kb,
        .remote_addr = uz_mr_va(mr, off), .reg_length = len,
        .reg_access = access, .bind_mr_key = mr->key,
    };
}

/* Bind on @qp and see it complete; returns the window's new key. */
static uint32_t bind_ok(UzQp *qp, uint32_t mw, uint8_t kb, UzMr *mr,
                        uint64_t off, uint64_t len, uint32_t access)
{
    UzWr wr = bind_wr(mw, kb, mr, off, len, access);

    uz_post_send(qp, &wr);
    uz_sq_done(qp, wr.wr_id, UZ_WC_BIND_MW, 0);
    return wr.rkey;
}

/* @op (WRITE or READ) of @len bytes from @qa through @key at @va. */
static void rdma_via(UzQp *qa, UzMr *ma, uint8_t op, uint32_t key,
                     uint64_t va, uint32_t len, uint8_t status)
{
    UzSge s = uz_mr_sge(ma, 0, len);
    UzWr wr = {
        .wr_id = 0x3a00 + op, .opcode = op, .flags = UZ_WQE_F_SIGNALED,
        .sge = &s, .num_sge = 1, .remote_addr = va, .rkey = key,
    };
    struct uz_cqe c;

    uz_post_send(qa, &wr);
    uz_cq_wait_clock(qa->scq, &c, STEP_NS, 100);
    g_assert_cmpint(c.status, ==, status);
}

/* The pair, with mb an MR windows may bind to. */
static void pair_start_bindable(Pair *p)
{
    pair_start(p);
    p->mb = uz_mr_reg(&p->n[1], 65536, UZ_ACCESS_ALL | UZ_ACCESS_MW_BIND);
}

/* A WRITE through @key from a fresh QP pair fails REM_ACCESS_ERR. */
static void refused(Pair *p, uint32_t key, uint64_t va)
{
    UzQp *a, *b;

    pair_fresh_qps(p, &a, &b);
    rdma_via(a, p->ma, UZ_WR_RDMA_WRITE, key, va, 64,
             UZ_WC_STATUS_REM_ACCESS_ERR);
}

/*
 * A SEND with invalidate of @key, on a fresh pair of QPs, fails at both
 * ends: the receive with REM_INV_REQ_ERR and @verr.
 */
static void send_inv_fails(Pair *p, uint32_t key, uint8_t verr)
{
    UzSge s = uz_mr_sge(p->ma, 0, 100), r = uz_mr_sge(p->mb, 0, 4096);
    UzWr wr = { .wr_id = 0x7301, .opcode = UZ_WR_SEND_INV,
                .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1,
                .imm = key };
    struct uz_cqe c;
    UzQp *a, *b;

    pair_fresh_qps(p, &a, &b);
    uz_post_recv(b, 0x7300, &r, 1);
    uz_post_send(a, &wr);
    uz_sq_err(a, 0x7301, UZ_WC_SEND, UZ_WC_STATUS_REM_INV_REQ_ERR, 0);
    uz_cq_wait(b->rcq, &c);
    uz_expect_err(&c, 0x7300, UZ_WC_RECV, UZ_WC_STATUS_REM_INV_REQ_ERR, verr,
                  b);
}

/* A pattern WRITE through @key lands in mb at @off, from @qa. */
static void write_lands(Pair *p, UzQp *qa, uint32_t key, uint64_t off,
                        uint32_t len, uint32_t seed)
{
    g_autofree uint8_t *data = g_malloc(len);

    uz_pattern(data, len, seed);
    uz_mr_write(p->ma, 0, data, len);
    rdma_via(qa, p->ma, UZ_WR_RDMA_WRITE, key, uz_mr_va(p->mb, off), len,
             UZ_WC_STATUS_SUCCESS);
    uz_assert_mr(p->mb, off, data, len, "through the window");
}

/* A FETCH_ADD from @qa through @key at @va fails REM_ACCESS_ERR. */
static void atomic_refused(UzQp *qa, UzMr *ma, uint64_t va, uint32_t key)
{
    UzSge s = uz_mr_sge(ma, 0, 8);
    UzWr wr = {
        .wr_id = 0xa7, .opcode = UZ_WR_ATOMIC_FETCH_ADD,
        .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1,
        .remote_addr = va, .rkey = key, .compare_add = 1,
    };
    struct uz_cqe c;

    uz_post_send(qa, &wr);
    uz_cq_wait_clock(qa->scq, &c, STEP_NS, 100);
    g_assert_cmpint(c.status, ==, UZ_WC_STATUS_REM_ACCESS_ERR);
}

/*
 * Type 1 window @mw bound to other MRs in turn: the first may go, the
 * second not, until a bind of length 0 unbinds it.
 */
static void type1_other_mrs(Pair *p, uint32_t mw)
{
    UzMr *mr2 = uz_mr_reg(&p->n[1], 8192, UZ_ACCESS_LOCAL_WRITE |
                                          UZ_ACCESS_MW_BIND);
    UzMr *mr3 = uz_mr_reg(&p->n[1], 8192, UZ_ACCESS_LOCAL_WRITE |
                                          UZ_ACCESS_MW_BIND);
    uint32_t k2;

    k2 = bind_ok(p->qb, mw, 0x14, mr2, 0, 4096, RW);
    g_assert_cmpint(obj_cmd(&p->n[1], UZ_CMD_DEREG_MR, mr2->key), ==,
                    UZ_CMD_BUSY);
    k2 = bind_ok(p->qb, mw, 0x15, mr3, 4096, 4096, RW);
    g_assert_cmpint(obj_cmd(&p->n[1], UZ_CMD_DEREG_MR, mr2->key), ==,
                    UZ_CMD_OK);
    g_assert_cmpint(obj_cmd(&p->n[1], UZ_CMD_DEREG_MR, mr3->key), ==,
                    UZ_CMD_BUSY);
    /* A type 1 window is not invalidated by a SEND either. */
    send_inv_fails(p, k2, UZ_VERR_MR_STATE);
    bind_ok(p->qb, mw, 0x16, mr3, 0, 0, 0);
    g_assert_cmpint(obj_cmd(&p->n[1], UZ_CMD_DEREG_MR, mr3->key), ==,
                    UZ_CMD_OK);
}

/*
 * Type 1: bound over a range of an MR that grants no remote right itself,
 * the window lets WRITE and READ in, from any QP of its PD, within its
 * range and rights only; bound again, the old key misses; bound with
 * length 0, nothing gets in.  The MR can neither go nor change meanwhile.
 */
static void test_type1(void)
{
    struct uz_cmd_rereg_mr rr = { .change = UZ_REREG_ACCESS };
    UzQp *a2, *b2;
    uint32_t mw, k1, k2;
    UzMr *mr;
    Pair p;

    pair_start(&p);
    mr = uz_mr_reg(&p.n[1], 65536, UZ_ACCESS_LOCAL_WRITE | UZ_ACCESS_MW_BIND);
    p.mb = mr;
    mw = mw_alloc(&p.n[1], p.n[1].pdn, UZ_MW_TYPE_1);
    /* Unbound, and the MR itself grants nothing remote. */
    refused(&p, mw, uz_mr_va(mr, WIN_OFF));
    refused(&p, mr->key, uz_mr_va(mr, WIN_OFF));

    k1 = bind_ok(p.qb, mw, 0x11, mr, WIN_OFF, WIN_LEN, RW);
    write_lands(&p, p.qa, k1, WIN_OFF, WIN_LEN, 1);
    rdma_via(p.qa, p.ma, UZ_WR_RDMA_READ, k1, uz_mr_va(mr, WIN_OFF + 100),
             1000, UZ_WC_STATUS_SUCCESS);
    /* Any QP of the PD. */
    pair_fresh_qps(&p, &a2, &b2);
    write_lands(&p, a2, k1, WIN_OFF + 4000, 200, 2);
    /* Past either end of the window; a right it lacks. */
    refused(&p, k1, uz_mr_va(mr, WIN_OFF - 1));
    refused(&p, k1, uz_mr_va(mr, WIN_OFF + WIN_LEN - 63));
    pair_fresh_qps(&p, &a2, &b2);
    atomic_refused(a2, p.ma, uz_mr_va(mr, WIN_OFF), k1);

    /* Bound with windows: the MR neither goes nor changes. */
    g_assert_cmpint(obj_cmd(&p.n[1], UZ_CMD_DEREG_MR, mr->key), ==,
                    UZ_CMD_BUSY);
    rr.uctx = cpu_to_le32(p.n[1].uctx);
    rr.key = cpu_to_le32(mr->key);
    rr.access = cpu_to_le32(UZ_ACCESS_ALL);
    g_assert_cmpint(uz_cmd(&p.n[1], UZ_CMD_REREG_MR, &rr, sizeof(rr), NULL),
                    ==, UZ_CMD_BUSY);

    /* Bound again, read-only at another range: the old key misses. */
    k2 = bind_ok(p.qb, mw, 0x12, mr, 0, 4096, UZ_ACCESS_REMOTE_READ);
    refused(&p, k1, uz_mr_va(mr, WIN_OFF));
    refused(&p, k2, uz_mr_va(mr, 0));
    pair_fresh_qps(&p, &a2, &b2);
    rdma_via(a2, p.ma, UZ_WR_RDMA_READ, k2, uz_mr_va(mr, 0), 4096,
             UZ_WC_STATUS_SUCCESS);

    type1_other_mrs(&p, mw);

    /* Length 0 unbinds: nothing gets in, and the MR may go. */
    bind_ok(p.qb, mw, 0x13, mr, 0, 0, 0);
    pair_fresh_qps(&p, &a2, &b2);
    rdma_via(a2, p.ma, UZ_WR_RDMA_READ, (mw & ~0xffu) | 0x13,
             uz_mr_va(mr, 0), 64, UZ_WC_STATUS_REM_ACCESS_ERR);
    g_assert_cmpint(obj_cmd(&p.n[1], UZ_CMD_DEALLOC_MW, mw), ==, UZ_CMD_OK);
    g_assert_cmpint(obj_cmd(&p.n[1], UZ_CMD_DEREG_MR, mr->key), ==,
                    UZ_CMD_OK);
    pair_stop(&p);
}

/*
 * Type 2: the window serves the QP that bound it and no other; it is
 * bound only while unbound; LOCAL_INV and a SEND with invalidate unbind
 * it, and so does its QP going; dealloc while bound lets the MR go.
 */
static void test_type2(void)
{
    UzQp *a2, *b2;
    uint32_t mw, k;
    UzSge s, r;
    UzWr wr;
    Pair p;

    pair_start_bindable(&p);
    mw = mw_alloc(&p.n[1], p.n[1].pdn, UZ_MW_TYPE_2);
    k = bind_ok(p.qb, mw, 0x21, p.mb, WIN_OFF, WIN_LEN, RW);
    write_lands(&p, p.qa, k, WIN_OFF, 3000, 3);
    /* Another QP of the PD does not get in, nor invalidates it. */
    refused(&p, k, uz_mr_va(p.mb, WIN_OFF));
    send_inv_fails(&p, k, UZ_VERR_PD);
    /* Bound: another bind fails, and changes nothing. */
    wr = bind_wr(mw, 0x22, p.mb, 0, 4096, RW);
    pair_local_fails(&p, &wr, UZ_WC_STATUS_MW_BIND_ERR, UZ_VERR_MR_STATE);
    write_lands(&p, p.qa, k, WIN_OFF + 3000, 100, 4);

    /* LOCAL_INV unbinds, from any QP of the PD. */
    pair_fresh_qps(&p, &a2, &b2);
    wr = (UzWr) { .wr_id = 0x1a1, .opcode = UZ_WR_LOCAL_INV,
                  .flags = UZ_WQE_F_SIGNALED, .imm = k };
    uz_post_send(b2, &wr);
    uz_sq_done(b2, 0x1a1, UZ_WC_LOCAL_INV, 0);
    /* Unbound: a type 2 bind on a QP of its own takes it. */
    k = bind_ok(b2, mw, 0x23, p.mb, WIN_OFF, WIN_LEN, RW);
    refused(&p, (k & ~0xffu) | 0x21, uz_mr_va(p.mb, WIN_OFF));
    write_lands(&p, a2, k, WIN_OFF, 500, 5);

    /* A SEND with invalidate from the peer unbinds; the receive says so. */
    s = uz_mr_sge(p.ma, 0, 100);
    r = uz_mr_sge(p.mb, 0, 4096);
    uz_post_recv(b2, 0x7200, &r, 1);
    wr = (UzWr) { .wr_id = 0x7201, .opcode = UZ_WR_SEND_INV,
                  .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1,
                  .imm = k };
    uz_post_send(a2, &wr);
    uz_sq_done(a2, 0x7201, UZ_WC_SEND, 100);
    uz_rq_done(b2, 0x7200, UZ_WC_RECV, 100, UZ_WC_F_INV, k);
    rdma_via(a2, p.ma, UZ_WR_RDMA_WRITE, k, uz_mr_va(p.mb, WIN_OFF), 64,
             UZ_WC_STATUS_REM_ACCESS_ERR);

    /* Bound on a QP that then goes: unbound, so another QP binds it. */
    pair_fresh_qps(&p, &a2, &b2);
    k = bind_ok(b2, mw, 0x24, p.mb, WIN_OFF, WIN_LEN, RW);
    g_assert_cmpint(obj_cmd(&p.n[1], UZ_CMD_DESTROY_QP, b2->qpn), ==,
                    UZ_CMD_OK);
    k = bind_ok(p.qb, mw, 0x25, p.mb, WIN_OFF, WIN_LEN, RW);
    write_lands(&p, p.qa, k, WIN_OFF, 700, 6);

    /* Dealloc while bound: the key misses, the MR may go. */
    g_assert_cmpint(obj_cmd(&p.n[1], UZ_CMD_DEREG_MR, p.mb->key), ==,
                    UZ_CMD_BUSY);
    g_assert_cmpint(obj_cmd(&p.n[1], UZ_CMD_DEALLOC_MW, mw), ==, UZ_CMD_OK);
    rdma_via(p.qa, p.ma, UZ_WR_RDMA_WRITE, k, uz_mr_va(p.mb, WIN_OFF), 64,
             UZ_WC_STATUS_REM_ACCESS_ERR);
    g_assert_cmpint(obj_cmd(&p.n[1], UZ_CMD_DEREG_MR, p.mb->key), ==,
                    UZ_CMD_OK);
    pair_stop(&p);
}

/* The windows and MRs test_bad's binds name. */
typedef struct MwBad {
    uint32_t pd2;               /* a second PD of uz1 */
    uint32_t mw1, mw2;          /* type 1 and type 2, in the pair's PD */
    uint32_t mw_pd2;            /* type 1, in pd2 */
    UzMr *nobind;               /* no MW_BIND */
    UzMr *ro;                   /* MW_BIND without local write */
    UzMr *mr_pd2;               /* in pd2 */
} MwBad;

/* Each bad bind fails its QP with MW_BIND_ERR and its detail. */
static void bad_binds(Pair *p, const MwBad *m)
{
    UzWr wr;

    /* The window's key names nothing; a window of another PD. */
    wr = bind_wr(0xfff00, 1, p->mb, 0, 4096, RW);
    pair_local_fails(p, &wr, UZ_WC_STATUS_MW_BIND_ERR, UZ_VERR_BAD_RKEY);
    wr = bind_wr(m->mw_pd2, 2, p->mb, 0, 4096, RW);
    pair_local_fails(p, &wr, UZ_WC_STATUS_MW_BIND_ERR, UZ_VERR_PD);
    /* A type 2 window bound over nothing. */
    wr = bind_wr(m->mw2, 0x0c, p->mb, 0, 0, RW);
    pair_local_fails(p, &wr, UZ_WC_STATUS_MW_BIND_ERR, UZ_VERR_BAD_WQE);
    /* A local right; the MR's key a window's, stale, of another PD. */
    wr = bind_wr(m->mw1, 3, p->mb, 0, 4096, RW | UZ_ACCESS_LOCAL_WRITE);
    pair_local_fails(p, &wr, UZ_WC_STATUS_MW_BIND_ERR, UZ_VERR_BAD_WQE);
    wr = bind_wr(m->mw1, 4, p->mb, 0, 4096, RW);
    wr.bind_mr_key = m->mw2;
    pair_local_fails(p, &wr, UZ_WC_STATUS_MW_BIND_ERR, UZ_VERR_BAD_LKEY);
    wr.bind_mr_key = p->mb->key ^ 0x40;
    pair_local_fails(p, &wr, UZ_WC_STATUS_MW_BIND_ERR, UZ_VERR_BAD_LKEY);
    wr = bind_wr(m->mw1, 5, m->mr_pd2, 0, 4096, RW);
    pair_local_fails(p, &wr, UZ_WC_STATUS_MW_BIND_ERR, UZ_VERR_PD);
    /* An MR without MW_BIND; remote write over one without local write. */
    wr = bind_wr(m->mw1, 6, m->nobind, 0, 4096, RW);
    pair_local_fails(p, &wr, UZ_WC_STATUS_MW_BIND_ERR, UZ_VERR_ACCESS);
    wr = bind_wr(m->mw1, 7, m->ro, 0, 4096, UZ_ACCESS_REMOTE_WRITE);
    pair_local_fails(p, &wr, UZ_WC_STATUS_MW_BIND_ERR, UZ_VERR_ACCESS);
    /* Past the MR's end; a length that wraps. */
    wr = bind_wr(m->mw1, 8, p->mb, 65536 - 4096, 4097, RW);
    pair_local_fails(p, &wr, UZ_WC_STATUS_MW_BIND_ERR, UZ_VERR_BOUNDS);
    wr = bind_wr(m->mw1, 9, p->mb, 4096, ~0ull - 100, RW);
    pair_local_fails(p, &wr, UZ_WC_STATUS_MW_BIND_ERR, UZ_VERR_BOUNDS);
}

/*
 * LOCAL_INV of a type 1 window; of a type 2 one by a stale key.  Both
 * fail and unbind nothing.  Returns the key of the type 2 window, bound.
 */
static uint32_t bad_local_inv(Pair *p, const MwBad *m)
{
    UzQp *a2, *b2;
    uint32_t k;
    UzWr wr;

    k = bind_ok(p->qb, m->mw1, 0x31, p->mb, 0, 4096, RW);
    wr = (UzWr) { .wr_id = 0x1b1, .opcode = UZ_WR_LOCAL_INV,
                  .flags = UZ_WQE_F_SIGNALED, .imm = k };
    pair_local_fails(p, &wr, UZ_WC_STATUS_LOC_PROT_ERR, UZ_VERR_MR_STATE);
    pair_fresh_qps(p, &a2, &b2);
    write_lands(p, a2, k, 0, 64, 7);
    k = bind_ok(p->qb, m->mw2, 0x32, p->mb, 0, 4096, RW);
    wr.imm = k ^ 1;
    pair_local_fails(p, &wr, UZ_WC_STATUS_LOC_PROT_ERR, UZ_VERR_BAD_RKEY);
    write_lands(p, p->qa, k, 0, 64, 8);
    return k;
}

/* A window's key @k as an lkey, on a fresh QP: a local protection error. */
static void bad_key_as_lkey(Pair *p, uint32_t k)
{
    UzSge s = { .addr = uz_mr_va(p->mb, 0), .length = 64, .lkey = k };
    UzQp *a2, *b2;
    UzWr wr;

    pair_fresh_qps(p, &a2, &b2);
    wr = (UzWr) { .wr_id = 0x1b2, .opcode = UZ_WR_RDMA_WRITE,
                  .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1,
                  .remote_addr = uz_mr_va(p->ma, 0), .rkey = p->ma->key };
    uz_post_send(b2, &wr);
    uz_sq_err(b2, 0x1b2, UZ_WC_RDMA_WRITE, UZ_WC_STATUS_LOC_PROT_ERR,
              UZ_VERR_BAD_LKEY);
}

/* Commands: a bad type or PD; MR commands on window @k and back. */
static void bad_commands(Pair *p, uint32_t k)
{
    struct uz_cmd_invalidate_xlat c = {
        .key = cpu_to_le32(k), .uctx = cpu_to_le32(p->n[1].uctx),
    };
    uint8_t status;

    mw_alloc_try(&p->n[1], p->n[1].pdn, 3, 1, &status);
    g_assert_cmpint(status, ==, UZ_CMD_BAD_PARAM);
    mw_alloc_try(&p->n[1], p->n[1].pdn, 0, 1, &status);
    g_assert_cmpint(status, ==, UZ_CMD_BAD_PARAM);
    mw_alloc_try(&p->n[1], 0xffff, UZ_MW_TYPE_1, 1, &status);
    g_assert_cmpint(status, ==, UZ_CMD_BAD_HANDLE);
    g_assert_cmpint(obj_cmd(&p->n[1], UZ_CMD_DEREG_MR, k), ==,
                    UZ_CMD_BAD_HANDLE);
    g_assert_cmpint(obj_cmd(&p->n[1], UZ_CMD_DEALLOC_MW, p->mb->key), ==,
                    UZ_CMD_BAD_HANDLE);
    g_assert_cmpint(uz_cmd(&p->n[1], UZ_CMD_INVALIDATE_XLAT, &c,
                           sizeof(c), NULL), ==, UZ_CMD_BAD_HANDLE);
}

/*
 * Bad binds and invalidations fail the QP that posts them with the
 * status and detail of 8.10.3; the window stays as it was.  A window's
 * key is never an lkey, nor a key the MR commands take.  The steps use
 * the same windows in turn, and the end checks what they left.
 */
static void test_bad(void)
{
    MwBad m;
    uint32_t k;
    Pair p;

    pair_start_bindable(&p);
    m.pd2 = uz_pd_alloc(&p.n[1]);
    m.mw1 = mw_alloc(&p.n[1], p.n[1].pdn, UZ_MW_TYPE_1);
    m.mw2 = mw_alloc(&p.n[1], p.n[1].pdn, UZ_MW_TYPE_2);
    m.mw_pd2 = mw_alloc(&p.n[1], m.pd2, UZ_MW_TYPE_1);
    m.nobind = uz_mr_reg(&p.n[1], 8192, UZ_ACCESS_LOCAL_WRITE |
                                        UZ_ACCESS_REMOTE_WRITE);
    m.ro = uz_mr_reg(&p.n[1], 8192, UZ_ACCESS_MW_BIND);
    m.mr_pd2 = uz_mr_reg_pd(&p.n[1], m.pd2, 8192,
                            UZ_ACCESS_ALL | UZ_ACCESS_MW_BIND);

    bad_binds(&p, &m);
    /* None bound anything: both keys still reach nothing. */
    refused(&p, (m.mw1 & ~0xffu) | 4, uz_mr_va(p.mb, 0));
    refused(&p, (m.mw1 & ~0xffu) | 9, uz_mr_va(p.mb, 4096));
    k = bad_local_inv(&p, &m);
    bad_key_as_lkey(&p, k);
    bad_commands(&p, k);

    /* The PD with a window in it does not go. */
    g_assert_cmpint(obj_cmd(&p.n[1], UZ_CMD_DEREG_MR, m.mr_pd2->key), ==,
                    UZ_CMD_OK);
    g_assert_cmpint(obj_cmd(&p.n[1], UZ_CMD_DEALLOC_PD, m.pd2), ==,
                    UZ_CMD_BUSY);
    g_assert_cmpint(obj_cmd(&p.n[1], UZ_CMD_DEALLOC_MW, m.mw_pd2), ==,
                    UZ_CMD_OK);
    g_assert_cmpint(obj_cmd(&p.n[1], UZ_CMD_DEALLOC_PD, m.pd2), ==,
                    UZ_CMD_OK);

    /* After all that, the first pair and the type 2 window still work. */
    exchange(&p, UZ_WR_RDMA_WRITE, 3000);
    write_lands(&p, p.qa, k, 100, 64, 9);
    pair_stop(&p);
}

/* A DMA MR's REG_MR on @n: its status (it needs no page list). */
static uint8_t dma_reg_try(UzNode *n)
{
    struct uz_cmd_reg_mr c = {
        .length = cpu_to_le64(4096), .pdn = cpu_to_le32(n->pdn),
        .access = cpu_to_le32(UZ_ACCESS_LOCAL_WRITE), .key = 1,
        .flags = UZ_MR_F_DMA, .uctx = cpu_to_le32(n->uctx),
    };

    return uz_cmd(n, UZ_CMD_REG_MR, &c, sizeof(c), NULL);
}

/*
 * Windows take entries of the MR table: a device of 8 (entry 0 unused)
 * gives out 7 windows, then ALLOC_MW and REG_MR are NO_RESOURCES until a
 * window goes.  A window is its context's: another context can neither
 * allocate one in this context's PD nor free this one.
 */
static void test_limits(void)
{
    struct uz_admin_cqe cqe;
    uint32_t mw[8], uctx;
    uint8_t status = UZ_CMD_OK;
    UzMachine m;
    UzNode n;
    int got;

    uz_machine_start(&m, 1, "-global uzura.max-mr=8");
    uz_node_start(&n, &m, 0);
    for (got = 0; got < 8; got++) {
        mw[got] = mw_alloc_try(&n, n.pdn, UZ_MW_TYPE_1 + got % 2,
                               n.next_key++, &status);
        if (status != UZ_CMD_OK) {
            break;
        }
    }
    g_assert_cmpint(got, ==, 7);
    g_assert_cmpint(status, ==, UZ_CMD_NO_RESOURCES);
    g_assert_cmpint(dma_reg_try(&n), ==, UZ_CMD_NO_RESOURCES);

    uctx = n.uctx;
    g_assert_cmpint(uz_cmd(&n, UZ_CMD_CREATE_UCTX, NULL, 0, &cqe), ==,
                    UZ_CMD_OK);
    n.uctx = le32_to_cpu(cqe.out0);
    g_assert_cmpint(obj_cmd(&n, UZ_CMD_DEALLOC_MW, mw[3]), ==,
                    UZ_CMD_BAD_HANDLE);
    g_assert_cmpint(obj_cmd(&n, UZ_CMD_DEALLOC_MW, mw[4]), ==,
                    UZ_CMD_BAD_HANDLE);
    n.uctx = uctx;

    g_assert_cmpint(obj_cmd(&n, UZ_CMD_DEALLOC_MW, mw[3]), ==, UZ_CMD_OK);
    g_assert_cmpint(dma_reg_try(&n), ==, UZ_CMD_OK);
    g_assert_cmpint(obj_cmd(&n, UZ_CMD_DEALLOC_MW, mw[4]), ==, UZ_CMD_OK);
    n.uctx = le32_to_cpu(cqe.out0);
    mw_alloc_try(&n, n.pdn, UZ_MW_TYPE_1, 1, &status);
    g_assert_cmpint(status, ==, UZ_CMD_BAD_HANDLE);
    n.uctx = uctx;
    mw[4] = mw_alloc(&n, n.pdn, UZ_MW_TYPE_2);
    uz_node_stop(&n);
    uz_machine_stop(&m);
}

/*
 * A window unbound in the middle of a WRITE through it: what arrived
 * before stays, the rest of the message is refused (a remote access
 * error), and no byte reaches the MR through the dead key.
 */
static void test_unbound_mid(void)
{
    g_autofree uint8_t *data = g_malloc(MSG_LEN);
    uint64_t naks;
    uint32_t mw, k;
    struct uz_cqe c;
    UzSge s;
    UzWr wr;
    Pair p;

    pair_start_bindable(&p);
    mw = mw_alloc(&p.n[1], p.n[1].pdn, UZ_MW_TYPE_2);
    k = bind_ok(p.qb, mw, 0x31, p.mb, WIN_OFF, WIN_LEN, RW);
    uz_mr_fill(p.mb, WIN_OFF, UZ_GUARD, MSG_LEN);
    uz_pattern(data, MSG_LEN, 0x31);
    uz_mr_write(p.ma, 0, data, MSG_LEN);
    naks = uz_counter(&p.m, 1, "nak_seq_sent");
    /* The middle packet is lost until the window is gone. */
    rules_set(&p, 0, "kind=request psn=0x101 drop");
    s = uz_mr_sge(p.ma, 0, MSG_LEN);
    wr = (UzWr) { .wr_id = 0x3b01, .opcode = UZ_WR_RDMA_WRITE,
                  .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1,
                  .remote_addr = uz_mr_va(p.mb, WIN_OFF), .rkey = k };
    uz_post_send(p.qa, &wr);
    uz_counter_wait(&p.n[1], "nak_seq_sent", naks + 1);
    wr = (UzWr) { .wr_id = 0x1b1, .opcode = UZ_WR_LOCAL_INV,
                  .flags = UZ_WQE_F_SIGNALED, .imm = k };
    uz_post_send(p.qb, &wr);
    uz_sq_done(p.qb, 0x1b1, UZ_WC_LOCAL_INV, 0);
    rules_set(&p, 0, "");
    uz_cq_wait_clock(p.qa->scq, &c, STEP_NS, 100);
    uz_cqe_expect(&c, 0x3b01, UZ_WC_RDMA_WRITE, UZ_WC_STATUS_REM_ACCESS_ERR,
                  0, p.qa->qpn);
    uz_assert_mr(p.mb, WIN_OFF, data, 1024, "the packet before the unbind");
    uz_assert_mr_fill(p.mb, WIN_OFF + 1024, UZ_GUARD, MSG_LEN - 1024,
                      "the packets after it");
    g_assert_cmpint(uz_qp_state(p.qb), ==, UZ_QPS_ERR);
    pair_stop(&p);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qtest_add_func("/uzura/mw/type1", test_type1);
    qtest_add_func("/uzura/mw/type2", test_type2);
    qtest_add_func("/uzura/mw/bad", test_bad);
    qtest_add_func("/uzura/mw/limits", test_limits);
    qtest_add_func("/uzura/mw/unbound-mid", test_unbound_mid);
    return g_test_run();
}
