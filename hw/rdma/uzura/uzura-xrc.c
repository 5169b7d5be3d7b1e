/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uzura RDMA NIC: XRC (spec 8.16): domains, and the SRQ an XRC target QP
 * serves a request from.
 *
 * An XRC target QP has no receive queue, PD or CQ of its own: each
 * request names (XRCETH) an XRC SRQ of the target's domain, which gives
 * the receive WQE, the PD that rkeys are checked against and the CQ.  The
 * QP's srqn, pdn and recv_cqn are those of the SRQ it last took, and the
 * responder takes one before each use: a request its SRQ, an answer the
 * SRQ of its request, a failure or flush the SRQ of the message in hand.
 */
#include "qemu/osdep.h"
#include "uzura-core.h"
#include "trace.h"

UzuraXrcd *uzura_xrcd_lookup(UzuraCore *core, uint32_t xrcd)
{
    return xrcd < UZ_XRCD_MAX && core->rdma.xrcd[xrcd].valid ?
           &core->rdma.xrcd[xrcd] : NULL;
}

/* A domain belongs to the device: processes share it through the kernel. */
uint8_t uzura_cmd_alloc_xrcd(UzuraCore *core, const struct uz_admin_cmd *cmd,
                             struct uz_admin_cqe *cqe)
{
    int64_t i = UZ_FIND_FREE(core->rdma.xrcd, UZ_XRCD_MAX, 0);

    if (i < 0) {
        trace_uzura_xrc_err_full(UZ_XRCD_MAX);
        return UZ_CMD_NO_RESOURCES;
    }
    core->rdma.xrcd[i] = (UzuraXrcd) { .valid = true };
    trace_uzura_xrc_xrcd(i, true);
    cqe->out0 = cpu_to_le32(i);
    return UZ_CMD_OK;
}

uint8_t uzura_cmd_dealloc_xrcd(UzuraCore *core, const struct uz_admin_cmd *cmd,
                               struct uz_admin_cqe *cqe)
{
    const struct uz_cmd_obj *c = (const void *)cmd->raw;
    UzuraXrcd *d = uzura_xrcd_lookup(core, le32_to_cpu(c->handle));

    if (!d) {
        trace_uzura_xrc_err_handle(le32_to_cpu(c->handle));
        return UZ_CMD_BAD_HANDLE;
    }
    if (d->users) {
        trace_uzura_xrc_err_busy(le32_to_cpu(c->handle), d->users);
        return UZ_CMD_BUSY;
    }
    d->valid = false;
    trace_uzura_xrc_xrcd(le32_to_cpu(c->handle), false);
    return UZ_CMD_OK;
}

/*
 * Make XRC SRQ @srqn the target QP's: false, changing nothing, unless it
 * is an XRC SRQ of the QP's domain.
 */
bool uzura_xrc_adopt(UzuraCore *core, UzuraQp *qp, uint32_t srqn)
{
    UzuraSrq *srq = uzura_srq_lookup(core, srqn);

    if (!srq || !srq->xrc || srq->xrcd != qp->xrcd) {
        trace_uzura_xrc_err_srq(qp->x->qpn, srqn);
        return false;
    }
    qp->srqn = srqn;
    qp->pdn = srq->pdn;
    qp->recv_cqn = srq->cqn;
    return true;
}

/*
 * The receive WQE an XRC target holds is of its message's SRQ: take that
 * SRQ for it.  False, the WQE dropped, when the SRQ is gone; true for a
 * QP of another type holding one.
 */
bool uzura_xrc_held(UzuraCore *core, UzuraQp *qp)
{
    UzuraXfer *x = qp->x;

    if (x->resp.have_rwqe && qp->type == UZ_QPT_XRC_TGT &&
        !uzura_xrc_adopt(core, qp, x->resp.xrc_srqn)) {
        x->resp.have_rwqe = false;
    }
    return x->resp.have_rwqe;
}

/*
 * XRC SRQ @srqn is destroyed: a target QP that holds one of its WQEs
 * drops it (the SRQ's WQEs go with it), and no target keeps its number,
 * for its message or for a READ to answer: a new SRQ may get the number,
 * and what was the old SRQ's must not reach it.
 */
void uzura_xrc_srq_gone(UzuraCore *core, uint32_t srqn)
{
    UzuraRdma *r = &core->rdma;
    uint32_t i, k;

    for (i = 0; i < r->lim.max_qp; i++) {
        UzuraQp *qp = &r->qp[i];
        UzuraXfer *x = qp->x;

        if (!qp->valid || qp->type != UZ_QPT_XRC_TGT) {
            continue;
        }
        if (x->resp.xrc_srqn == srqn) {
            x->resp.have_rwqe = false;
            x->resp.xrc_srqn = UZ_NO_SRQ;
        }
        for (k = 0; k < r->lim.max_qp_rd_atom; k++) {
            if (x->resp.rd[k].xrc_srqn == srqn) {
                x->resp.rd[k].xrc_srqn = UZ_NO_SRQ;
            }
        }
        if (qp->srqn == srqn) {
            qp->srqn = UZ_NO_SRQ;
            qp->pdn = UINT32_MAX;
            qp->recv_cqn = UINT32_MAX;
        }
    }
}
