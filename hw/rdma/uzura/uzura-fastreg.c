/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uzura RDMA NIC: fast registration.
 *
 * A kernel user allocates a fast-reg MR once (UZ_MR_F_FAST: free, its key
 * reaches nothing), then for each I/O writes the MR's page list, posts a
 * REG_MR work request that makes the MR valid with a new key byte, hands
 * the key to its peer, and frees the MR again with a LOCAL_INV work
 * request, or has the peer free it with a SEND with invalidate.  Both work
 * requests are local: they run when the requester reaches them in the SQ
 * and send nothing (uzura-req.c).
 */
#include "qemu/osdep.h"
#include "qemu/log.h"
#include "uzura-core.h"
#include "trace.h"

/* REG_MR: the MR named by the WQE's key, free, of the QP's PD. */
static uint8_t uzura_fastreg_reg(UzuraCore *core, UzuraQp *qp,
                                 const struct uz_send_wqe *h, uint8_t *verr)
{
    UzuraMr *mr = uzura_mr_slot(core, h->rkey);

    if (!mr || !(mr->flags & UZ_MR_F_FAST) || mr->uctx != qp->uctx) {
        *verr = UZ_VERR_BAD_LKEY;
        return UZ_WC_STATUS_LOC_PROT_ERR;
    }
    if (mr->pdn != qp->pdn) {
        *verr = UZ_VERR_PD;
        return UZ_WC_STATUS_LOC_PROT_ERR;
    }
    if (!mr->free) {
        *verr = UZ_VERR_MR_STATE;
        return UZ_WC_STATUS_LOC_PROT_ERR;
    }
    if (h->reg.npages > mr->max_pages ||
        !uzura_mr_shape_ok(core, h->reg.access, h->remote_addr, h->reg.length,
                           h->reg.page_shift, h->reg.npages, true)) {
        *verr = UZ_VERR_BAD_WQE;
        return UZ_WC_STATUS_LOC_QP_OP_ERR;
    }
    mr->key = UZ_KEY_BYTE(h->rkey);
    mr->iova = h->remote_addr;
    mr->length = h->reg.length;
    mr->access = h->reg.access;
    mr->page_shift = h->reg.page_shift;
    mr->npages = h->reg.npages;
    mr->free = false;
    uzura_xlat_drop_mr(core, mr);
    trace_uzura_fastreg_reg(qp->x->qpn, h->rkey, mr->iova, mr->length,
                            mr->npages);
    return UZ_WC_STATUS_SUCCESS;
}

/*
 * Free the fast-reg MR @key for QP @qp (LOCAL_INV, or a SEND with
 * invalidate received: @remote), or unbind the window @key.  Freeing a
 * free MR again is no error, as a key the peer already invalidated may be
 * invalidated locally too.  Returns a UZ_VERR_*.
 */
uint8_t uzura_fastreg_inv(UzuraCore *core, UzuraQp *qp, uint32_t key,
                          bool remote)
{
    UzuraMr *mr = uzura_mr_slot(core, key);

    if (uzura_mw_slot(core, key)) {
        return uzura_mw_inv(core, qp, key, remote);
    }
    if (!mr || mr->key != UZ_KEY_BYTE(key) || mr->uctx != qp->uctx) {
        return UZ_VERR_BAD_RKEY;
    }
    if (!(mr->flags & UZ_MR_F_FAST)) {
        return UZ_VERR_MR_STATE;
    }
    if (mr->pdn != qp->pdn) {
        return UZ_VERR_PD;
    }
    mr->free = true;
    uzura_xlat_drop_mr(core, mr);
    trace_uzura_fastreg_inv(qp->x->qpn, key);
    return UZ_VERR_NONE;
}

/* Run a REG_MR, BIND_MW or LOCAL_INV WQE; returns a UZ_WC_STATUS_*. */
uint8_t uzura_fastreg_exec(UzuraCore *core, UzuraQp *qp,
                           const struct uz_send_wqe *h, uint8_t *verr)
{
    if (h->opcode == UZ_WR_REG_MR) {
        return uzura_fastreg_reg(core, qp, h, verr);
    }
    if (h->opcode == UZ_WR_BIND_MW) {
        return uzura_mw_bind(core, qp, h, verr);
    }
    *verr = uzura_fastreg_inv(core, qp, le32_to_cpu(h->imm_data), false);
    return *verr ? UZ_WC_STATUS_LOC_PROT_ERR : UZ_WC_STATUS_SUCCESS;
}
