/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uzura RDMA NIC: memory windows (spec 8.10.3).
 *
 * A window is an entry of the MR table (mw_type 1 or 2) with a key of the
 * same form, created unbound.  A BIND_MW work request points it at a range
 * of an MR with UZ_ACCESS_MW_BIND and gives it its own remote rights and a
 * new key byte; a peer's RDMA through the window's key is checked against
 * the window, then reaches the MR's pages.  A type 1 window serves every
 * QP of its PD; a type 2 window only the QP that bound it.  The MR keeps a
 * count of the windows bound to it and cannot change or go while any is.
 */
#include "qemu/osdep.h"
#include "uzura-core.h"
#include "trace.h"

#define UZ_MW_ACCESS    (UZ_ACCESS_REMOTE_WRITE | UZ_ACCESS_REMOTE_READ | \
                         UZ_ACCESS_REMOTE_ATOMIC)

/* The window at a key's index, if allocated; the key byte is not checked. */
UzuraMr *uzura_mw_slot(UzuraCore *core, uint32_t key)
{
    UzuraRdma *r = &core->rdma;
    uint32_t i = UZ_KEY_INDEX(key);

    if (i == 0 || i >= r->lim.max_mr || !r->mr[i].valid ||
        !r->mr[i].mw_type) {
        return NULL;
    }
    return &r->mr[i];
}

/*
 * Unbind a bound window: its MR (and, type 2, its QP) loses a window, its
 * key reaches nothing.
 */
static void uzura_mw_unbind(UzuraCore *core, UzuraMr *mw)
{
    UzuraRdma *r = &core->rdma;

    if (!mw->free) {
        r->mr[mw->mw_mr].mw_count--;
        if (mw->mw_type == UZ_MW_TYPE_2) {
            r->qp[mw->mw_qpn].mw_count--;
        }
        mw->free = true;
        mw->mw_mr = 0;
    }
}

uint8_t uzura_cmd_alloc_mw(UzuraCore *core, const struct uz_admin_cmd *cmd,
                           struct uz_admin_cqe *cqe)
{
    const struct uz_cmd_alloc_mw *c = (const void *)cmd->raw;
    uint32_t uctx = le32_to_cpu(c->uctx), pdn = le32_to_cpu(c->pdn);
    UzuraRdma *r = &core->rdma;
    UzuraPd *pd = uzura_pd_lookup(core, pdn, uctx);
    int64_t i;

    if (!pd) {
        trace_uzura_mw_err_pd(pdn, uctx);
        return UZ_CMD_BAD_HANDLE;
    }
    if (c->type != UZ_MW_TYPE_1 && c->type != UZ_MW_TYPE_2) {
        trace_uzura_mw_err_type(c->type);
        return UZ_CMD_BAD_PARAM;
    }
    i = UZ_FIND_FREE(r->mr, r->lim.max_mr, 1);
    if (i < 0) {
        trace_uzura_mw_err_full(r->lim.max_mr);
        return UZ_CMD_NO_RESOURCES;
    }
    r->mr[i] = (UzuraMr) {
        .valid = true, .free = true, .mw_type = c->type, .key = c->key,
        .page_shift = 12, .uctx = uctx, .pdn = pdn,
    };
    pd->users++;
    trace_uzura_mw_alloc(UZ_KEY(i, c->key), c->type, pdn);
    cqe->out0 = cpu_to_le32(UZ_KEY(i, c->key));
    return UZ_CMD_OK;
}

/* DEALLOC_MW names the window by index: its key byte changes with binds. */
uint8_t uzura_cmd_dealloc_mw(UzuraCore *core, const struct uz_admin_cmd *cmd,
                             struct uz_admin_cqe *cqe)
{
    const struct uz_cmd_obj *c = (const void *)cmd->raw;
    UzuraMr *mw = uzura_mw_slot(core, le32_to_cpu(c->handle));

    if (!mw) {
        trace_uzura_mw_err_handle(le32_to_cpu(c->handle), le32_to_cpu(c->uctx));
        return UZ_CMD_BAD_HANDLE;
    }
    if (mw->uctx != le32_to_cpu(c->uctx)) {
        trace_uzura_mw_err_handle_uctx(le32_to_cpu(c->handle),
                                       le32_to_cpu(c->uctx), mw->uctx);
        return UZ_CMD_BAD_HANDLE;
    }
    uzura_mw_unbind(core, mw);
    core->rdma.pd[mw->pdn].users--;
    mw->valid = false;
    return UZ_CMD_OK;
}

/* The MR a bind names, if the window may take its range: a UZ_VERR_*. */
static uint8_t uzura_mw_bind_mr(UzuraCore *core, UzuraQp *qp,
                                const struct uz_send_wqe *h, UzuraMr **out)
{
    UzuraMr *mr = uzura_mr_lookup(core, h->bind.mr_key);
    uint64_t addr = h->remote_addr, len = h->bind.length;
    uint32_t writes = UZ_ACCESS_REMOTE_WRITE | UZ_ACCESS_REMOTE_ATOMIC;

    *out = mr;
    if (!mr || mr->uctx != qp->uctx) {
        return UZ_VERR_BAD_LKEY;
    }
    if (mr->pdn != qp->pdn) {
        return UZ_VERR_PD;
    }
    /* The kernel's MRs change by their own means: none binds. */
    if (mr->flags & (UZ_MR_F_DMA | UZ_MR_F_FAST)) {
        return UZ_VERR_MR_STATE;
    }
    if (!(mr->access & UZ_ACCESS_MW_BIND) ||
        ((h->bind.access & writes) && !(mr->access & UZ_ACCESS_LOCAL_WRITE))) {
        return UZ_VERR_ACCESS;
    }
    if (!uzura_in_range(addr, len, mr->iova, mr->length)) {
        return UZ_VERR_BOUNDS;
    }
    return UZ_VERR_NONE;
}

/* BIND_MW work request on RC QP @qp; returns a UZ_WC_STATUS_*. */
uint8_t uzura_mw_bind(UzuraCore *core, UzuraQp *qp,
                      const struct uz_send_wqe *h, uint8_t *verr)
{
    UzuraMr *mw = uzura_mw_slot(core, h->rkey), *mr;

    if (!mw || mw->uctx != qp->uctx) {
        *verr = UZ_VERR_BAD_RKEY;
    } else if (mw->pdn != qp->pdn) {
        *verr = UZ_VERR_PD;
    } else if (mw->mw_type == UZ_MW_TYPE_2 && !mw->free) {
        *verr = UZ_VERR_MR_STATE;
    } else if (h->bind.access & ~UZ_MW_ACCESS) {
        *verr = UZ_VERR_BAD_WQE;
    } else if (!h->bind.length) {
        /*
         * A type 1 window is unbound by binding nothing; a type 2 window
         * is unbound by invalidation, and binding nothing is an error.
         */
        if (mw->mw_type == UZ_MW_TYPE_2) {
            *verr = UZ_VERR_BAD_WQE;
        } else {
            uzura_mw_unbind(core, mw);
            mw->key = UZ_KEY_BYTE(h->rkey);
            *verr = UZ_VERR_NONE;
        }
    } else {
        *verr = uzura_mw_bind_mr(core, qp, h, &mr);
        if (!*verr) {
            uzura_mw_unbind(core, mw);
            mw->free = false;
            mw->key = UZ_KEY_BYTE(h->rkey);
            mw->iova = h->remote_addr;
            mw->length = h->bind.length;
            mw->access = h->bind.access;
            mw->mw_mr = UZ_KEY_INDEX(h->bind.mr_key);
            mw->mw_qpn = qp->x->qpn;
            mr->mw_count++;
            if (mw->mw_type == UZ_MW_TYPE_2) {
                qp->mw_count++;
            }
        }
    }
    if (*verr) {
        return UZ_WC_STATUS_MW_BIND_ERR;
    }
    trace_uzura_mw_bind(qp->x->qpn, h->rkey, mw->free ? 0 : h->bind.mr_key,
                        mw->iova, mw->free ? 0 : mw->length, mw->access);
    return UZ_WC_STATUS_SUCCESS;
}

/*
 * Invalidate window @key for QP @qp: LOCAL_INV (the window's PD), or a
 * SEND with invalidate received (@remote: the QP it is bound to).  Only
 * type 2 windows are invalidated; an unbound one again is no error, as
 * for fast-reg MRs.  Returns a UZ_VERR_*.
 */
uint8_t uzura_mw_inv(UzuraCore *core, UzuraQp *qp, uint32_t key, bool remote)
{
    UzuraMr *mw = uzura_mw_slot(core, key);

    if (!mw || mw->key != UZ_KEY_BYTE(key) || mw->uctx != qp->uctx) {
        return UZ_VERR_BAD_RKEY;
    }
    if (mw->mw_type != UZ_MW_TYPE_2) {
        return UZ_VERR_MR_STATE;
    }
    if (mw->pdn != qp->pdn ||
        (remote && !mw->free && mw->mw_qpn != qp->x->qpn)) {
        return UZ_VERR_PD;
    }
    uzura_mw_unbind(core, mw);
    trace_uzura_mw_inv(qp->x->qpn, key);
    return UZ_VERR_NONE;
}

/* QP @qpn goes: the type 2 windows bound to it are unbound. */
void uzura_mw_qp_gone(UzuraCore *core, uint32_t qpn)
{
    UzuraRdma *r = &core->rdma;
    uint32_t i;

    /* Most QPs have none: the table is not walked for them. */
    for (i = 1; i < r->lim.max_mr && r->qp[qpn].mw_count; i++) {
        UzuraMr *mw = &r->mr[i];

        if (mw->valid && mw->mw_type == UZ_MW_TYPE_2 && !mw->free &&
            mw->mw_qpn == qpn) {
            uzura_mw_unbind(core, mw);
        }
    }
}

/*
 * A peer's access through @key on @qp: a window's PD (type 1) or QP
 * (type 2), rights and range, then the MR it is bound to, which must
 * still hold the range.  Any other key is an MR's.
 */
uint8_t uzura_rkey_check(UzuraCore *core, UzuraQp *qp, uint32_t key,
                         uint64_t addr, uint64_t len, uint32_t access,
                         UzuraMr **out)
{
    UzuraMr *mw = uzura_mw_slot(core, key), *mr;

    if (!mw) {
        return uzura_mr_check(core, key, qp->pdn, addr, len, access, out);
    }
    *out = NULL;
    if (!len) {
        return UZ_VERR_NONE;
    }
    if (mw->free || mw->key != UZ_KEY_BYTE(key)) {
        return UZ_VERR_BAD_RKEY;
    }
    if (mw->mw_type == UZ_MW_TYPE_1 ? mw->pdn != qp->pdn :
                                      mw->mw_qpn != qp->x->qpn) {
        return UZ_VERR_PD;
    }
    if (access & ~mw->access) {
        return UZ_VERR_ACCESS;
    }
    if (!uzura_in_range(addr, len, mw->iova, mw->length)) {
        return UZ_VERR_BOUNDS;
    }
    mr = &core->rdma.mr[mw->mw_mr];
    return uzura_mr_check(core, UZ_KEY(mw->mw_mr, mr->key), qp->pdn, addr,
                          len, 0, out);
}
