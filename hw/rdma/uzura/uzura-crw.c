/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uzura RDMA NIC: Conditional RDMA Write: the per-QP tag table.
 *
 * A CRW WQE names a tag and local data but no target.  The requester
 * parks it here and moves on to later WQEs; the peer's STCRW, arriving at
 * this QP's responder, names the target for the tag.  Whichever comes
 * second makes the entry READY, and the requester then sends an RDMA
 * WRITE with immediate (the tag's low 32 bits) as its next message.  The
 * entry keeps the CRW's WQE until that write completes, because a
 * retransmission reads it again.
 */
#include "qemu/osdep.h"
#include "uzura-core.h"
#include "trace.h"

static uint32_t uzura_crw_cap(UzuraCore *core)
{
    return core->rdma.lim.max_crw_tags;
}

/* The QP's table; also for a migration stream that carries one. */
void uzura_crw_alloc(UzuraCore *core, UzuraXfer *x)
{
    if (!x->crw) {
        x->ncrw = uzura_crw_cap(core);
        x->crw = g_new0(UzuraCrw, x->ncrw);
        x->crw_ready = g_new0(uint32_t, x->ncrw);
    }
}

/* The QP's table, allocated when it is first needed. */
static UzuraCrw *uzura_crw_table(UzuraCore *core, UzuraQp *qp)
{
    uzura_crw_alloc(core, qp->x);
    return qp->x->crw;
}

/*
 * The entry holding @tag, or -1; and a free entry in *free_e, or -1.  A
 * CRW whose write has started no longer holds its tag (the entry only
 * keeps the WQE for retransmission): the peer, which may have seen the
 * write land before its ACK got here, can offer the tag again at once.
 */
static int32_t uzura_crw_find(UzuraCore *core, UzuraQp *qp, uint64_t tag,
                              int32_t *free_e)
{
    UzuraCrw *t = uzura_crw_table(core, qp);
    uint32_t i;

    *free_e = -1;
    for (i = 0; i < uzura_crw_cap(core); i++) {
        if (t[i].state == UZ_CRW_FREE) {
            if (*free_e < 0) {
                *free_e = i;
            }
        } else if (t[i].tag == tag && t[i].state != UZ_CRW_SENDING) {
            return i;
        }
    }
    return -1;
}

static void uzura_crw_make_ready(UzuraCore *core, UzuraQp *qp, int32_t e)
{
    UzuraXfer *x = qp->x;

    x->crw[e].state = UZ_CRW_READY;
    x->crw_ready[(x->crw_rhead + x->crw_rnum) % uzura_crw_cap(core)] = e;
    x->crw_rnum++;
    uzura_work_schedule(core);
}

/*
 * The requester reached a CRW WQE: park it, or match it with an STCRW
 * that came first.  Returns a UZ_WC_STATUS_* with its detail in *verr;
 * on success *entry is the entry.
 */
uint8_t uzura_crw_park(UzuraCore *core, UzuraQp *qp, const UzuraSendWr *wr,
                       uint32_t sq_idx, bool signaled, int32_t *entry,
                       uint8_t *verr)
{
    UzuraXfer *x = qp->x;
    uint64_t tag = wr->h.crw.tag;
    int32_t e, free_e;

    e = uzura_crw_find(core, qp, tag, &free_e);
    if (e >= 0 && x->crw[e].state != UZ_CRW_OFFERED) {
        core->counters.crw_errors++;
        *verr = UZ_VERR_CRW_DUP_TAG;
        return UZ_WC_STATUS_LOC_QP_OP_ERR;
    }
    if (e < 0 && free_e < 0) {
        core->counters.crw_errors++;
        *verr = UZ_VERR_CRW_TABLE_FULL;
        return UZ_WC_STATUS_LOC_QP_OP_ERR;
    }
    if (e < 0) {
        e = free_e;
        x->crw[e] = (UzuraCrw) { .state = UZ_CRW_PARKED, .tag = tag };
        core->counters.crw_parked++;
    }
    x->crw[e].wr = *wr;
    x->crw[e].sq_idx = sq_idx;
    x->crw[e].signaled = signaled;
    x->crw[e].in_sq = true;
    trace_uzura_crw_park(x->qpn, tag, e, x->crw[e].state);
    if (x->crw[e].state == UZ_CRW_OFFERED) {
        core->counters.crw_matched_stcrw_first++;
        uzura_crw_make_ready(core, qp, e);
    }
    *entry = e;
    return UZ_WC_STATUS_SUCCESS;
}

/*
 * An STCRW arrived at this QP's responder: match it with a parked CRW,
 * or keep it for the CRW to come.  Returns a UZ_VERR_* (0: taken).
 */
uint8_t uzura_crw_offer(UzuraCore *core, UzuraQp *qp, const UzuraPkt *pkt)
{
    UzuraXfer *x = qp->x;
    int32_t e, free_e;

    e = uzura_crw_find(core, qp, pkt->crw.tag, &free_e);
    if (e >= 0 && x->crw[e].state != UZ_CRW_PARKED) {
        /* An offer for this tag is already here, or matched. */
        core->counters.crw_errors++;
        return UZ_VERR_CRW_DUP_TAG;
    }
    if (e < 0 && free_e < 0) {
        core->counters.crw_errors++;
        return UZ_VERR_CRW_TABLE_FULL;
    }
    if (e < 0) {
        e = free_e;
        x->crw[e] = (UzuraCrw) { .state = UZ_CRW_OFFERED,
                                 .tag = pkt->crw.tag };
        core->counters.crw_offers++;
    }
    x->crw[e].va = pkt->crw.va;
    x->crw[e].rkey = pkt->crw.rkey;
    x->crw[e].length = pkt->crw.length;
    trace_uzura_crw_offer(x->qpn, pkt->crw.tag, e, x->crw[e].state);
    if (x->crw[e].state == UZ_CRW_PARKED) {
        core->counters.crw_matched_crw_first++;
        uzura_crw_make_ready(core, qp, e);
    }
    return UZ_VERR_NONE;
}

/* The oldest matched CRW whose write may start, or -1. */
static int32_t uzura_crw_ready(UzuraQp *qp)
{
    UzuraXfer *x = qp->x;

    return x->crw_rnum ? (int32_t)x->crw_ready[x->crw_rhead] : -1;
}

/* The write completes as the CRW, on its SQ WQE's terms. */
static void uzura_crw_describe(UzuraQp *qp, int32_t e, UzuraSwqe *w)
{
    w->sq_idx = qp->x->crw[e].sq_idx;
    w->opcode = UZ_WR_CRW;
    w->signaled = qp->x->crw[e].signaled;
}

/* The writes start in the order their CRWs matched: @e is the oldest. */
static void uzura_crw_take(UzuraQp *qp, int32_t e)
{
    UzuraXfer *x = qp->x;

    x->crw[e].state = UZ_CRW_SENDING;
    x->crw_rhead = (x->crw_rhead + 1) % uzura_crw_cap(x->core);
    x->crw_rnum--;
}

/*
 * The write a matched CRW turns into: the CRW's data to the STCRW's
 * buffer, with the tag's low 32 bits as immediate data.  Returns a
 * UZ_WC_STATUS_*.
 */
static uint8_t uzura_crw_load(UzuraCore *core, UzuraQp *qp,
                              const UzuraSwqe *w, UzuraSendWr *wr,
                              uint8_t *verr)
{
    const UzuraCrw *c = &qp->x->crw[w->src_id];

    *wr = c->wr;
    wr->h.opcode = UZ_WR_RDMA_WRITE_IMM;
    wr->h.flags &= ~UZ_WQE_F_FENCE;
    wr->h.remote_addr = c->va;
    wr->h.rkey = c->rkey;
    wr->h.imm_data = cpu_to_be32((uint32_t)c->tag);
    *verr = UZ_VERR_NONE;
    if (wr->len > c->length) {
        return UZ_WC_STATUS_LOC_LEN_ERR;
    }
    /* The MRs may have changed while the CRW waited. */
    *verr = uzura_sgl_check(core, &wr->sgl, qp->pdn, 0);
    return *verr ? UZ_WC_STATUS_LOC_PROT_ERR : UZ_WC_STATUS_SUCCESS;
}

/* The CRW's write completed (or failed), with its CQE: the entry is free. */
static void uzura_crw_retired(UzuraCore *core, UzuraQp *qp,
                              const UzuraSwqe *w)
{
    qp->x->crw[w->src_id].state = UZ_CRW_FREE;
}

const UzuraReqSource uzura_crw_source = {
    .ready = uzura_crw_ready,
    .describe = uzura_crw_describe,
    .load = uzura_crw_load,
    .take = uzura_crw_take,
    .retired = uzura_crw_retired,
};

/* The CRW's SQ WQE completed: from now on only the table holds it. */
void uzura_crw_unpin(UzuraQp *qp, int32_t e)
{
    qp->x->crw[e].in_sq = false;
}

/*
 * The QP leaves the data path (error, reset, destroy): every CRW the
 * table holds completes with a flush error, unless its SQ WQE is still
 * outstanding (that one belongs to the SQ, which flushes it in ERR and
 * discards it on reset and destroy), and offers are forgotten.
 */
void uzura_crw_flush(UzuraCore *core, UzuraQp *qp)
{
    UzuraXfer *x = qp->x;
    uint32_t i;

    if (!x->crw) {
        return;
    }
    for (i = 0; i < uzura_crw_cap(core); i++) {
        UzuraCrw *c = &x->crw[i];

        if (c->state != UZ_CRW_FREE && c->state != UZ_CRW_OFFERED &&
            !c->in_sq) {
            struct uz_cqe cqe = {
                .wr_id = cpu_to_le64(c->wr.h.wr_id),
                .qpn = cpu_to_le32(x->qpn),
                .opcode = UZ_WC_CRW,
                .status = UZ_WC_STATUS_WR_FLUSH_ERR,
            };

            trace_uzura_crw_flush(x->qpn, c->tag, i);
            core->counters.crw_flushed++;
            uzura_cq_post(core, qp->send_cqn, &cqe, false);
        }
        c->state = UZ_CRW_FREE;
    }
    x->crw_rhead = 0;
    x->crw_rnum = 0;
}
