/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uzura RDMA NIC: the responder: incoming RC requests and UD sends.
 *
 * A request with the expected PSN is executed at once: SENDs consume a
 * receive WQE (or are answered with an RNR NAK), WRITEs land in the MR
 * the RETH names, READs and atomics are queued for their responses, which
 * the work bottom half sends in PSN order.  ACKs are coalesced: requests
 * asking for one only mark it owed, and the bottom half sends one ACK for
 * everything received.  Duplicates are answered again (READs re-read,
 * atomics replay their saved result); a gap is answered with one
 * sequence NAK.
 */
#include "qemu/osdep.h"
#include "qemu/main-loop.h"
#include "uzura-core.h"
#include "trace.h"

static uint32_t uzura_resp_mtu(UzuraQp *qp)
{
    return 128u << qp->attr.path_mtu;
}

void uzura_resp_fill(UzuraQp *qp, UzuraPkt *pkt, uint8_t opcode,
                     uint32_t psn)
{
    const struct uz_qp_attr *a = &qp->attr;

    uzura_roce_fill_av(pkt, a->dmac, a->sgid, a->dgid, a->hop_limit,
                       a->traffic_class, qp->x->qpn);
    pkt->opcode = opcode;
    pkt->xrc = qp->type == UZ_QPT_XRC_TGT;
    pkt->dqpn = a->dest_qpn;
    pkt->psn = psn & UZ_PSN_MASK;
    pkt->msn = qp->x->resp.msn;
}

/* An ACK (credits unused: all ones) or a NAK for @psn. */
static void uzura_resp_ack(UzuraCore *core, UzuraQp *qp, uint8_t syndrome,
                           uint32_t psn)
{
    UzuraPkt pkt = { 0 };

    uzura_resp_fill(qp, &pkt, UZ_BTH_OP_ACK, psn);
    pkt.syndrome = syndrome;
    trace_uzura_resp_ack(qp->x->qpn, psn, syndrome);
    uzura_roce_send(core, &pkt, NULL, NULL);
}

static void uzura_resp_nak(UzuraCore *core, UzuraQp *qp, uint8_t syndrome,
                           uint32_t psn)
{
    core->counters.naks_sent++;
    if (syndrome == UZ_AETH_NAK_SEQ) {
        core->counters.nak_seq_sent++;
    }
    uzura_resp_ack(core, qp, syndrome, psn);
}

/* Read and decode the receive WQE at @addr of @size (<= 512) bytes. */
static uint8_t uzura_rwqe_load(UzuraCore *core, uint64_t addr, uint32_t size,
                               UzuraRecvWr *rw)
{
    uint8_t buf[1u << 9];               /* rq_log_wqe_size <= 9 */
    uint32_t i, n;

    memset(rw, 0, sizeof(rw->wr_id) + sizeof(rw->sgl.num) +
           sizeof(rw->sgl.len));
    if (!uzura_dma_read(core, addr, buf, size)) {
        return UZ_VERR_DMA;
    }
    rw->wr_id = ldq_le_p(buf);
    n = buf[8];
    if (n > core->rdma.lim.max_sge || n > UZ_SGL_MAX ||
        sizeof(struct uz_recv_wqe) + n * sizeof(struct uz_sge) > size) {
        return UZ_VERR_BAD_WQE;
    }
    rw->sgl.len = 0;
    for (i = 0; i < n; i++) {
        const uint8_t *s = buf + sizeof(struct uz_recv_wqe) +
                           i * sizeof(struct uz_sge);

        rw->sgl.sge[i].addr = ldq_le_p(s);
        rw->sgl.sge[i].length = ldl_le_p(s + 8);
        rw->sgl.sge[i].lkey = ldl_le_p(s + 12);
        rw->sgl.len += rw->sgl.sge[i].length;
    }
    rw->sgl.num = n;
    return UZ_VERR_NONE;
}

/*
 * Take the next receive WQE of the QP's RQ or SRQ into qp->x->resp.rwqe.
 * Returns 1, 0 when none is posted, or -1 for a WQE that cannot be used
 * (its error in *verr).
 */
static int uzura_resp_take(UzuraCore *core, UzuraQp *qp, uint8_t *verr)
{
    UzuraXfer *x = qp->x;
    UzuraSrq *srq = qp->srqn != UZ_NO_SRQ ? &core->rdma.srq[qp->srqn] : NULL;
    uint64_t ring = srq ? srq->ring_addr : qp->rq_addr;
    uint32_t log_depth = srq ? srq->log_depth : qp->rq_log_depth;
    uint32_t log_size = srq ? srq->log_wqe_size : qp->rq_log_wqe_size;
    uint32_t ci = srq ? srq->ci : qp->rq_ci;

    if (ci == (srq ? srq->pi : qp->rq_pi)) {
        return 0;
    }
    *verr = uzura_rwqe_load(core, ring + ((uint64_t)(ci & ((1u << log_depth) -
                                                           1)) << log_size),
                            1u << log_size, &x->resp.rwqe);
    /* An SRQ WQE is the QP's once taken; an RQ's slot frees on completion. */
    if (srq) {
        srq->ci = (srq->ci + 1) & UZ_IDX_MASK;
        if (srq->limit && uzura_ring_used(srq->pi, srq->ci) < srq->limit) {
            srq->limit = 0;
            uzura_eq_post_async(core, UZ_EQE_SRQ_LIMIT, qp->srqn, 0);
        }
    }
    x->resp.have_rwqe = true;
    x->resp.recv_off = 0;
    return *verr ? -1 : 1;
}

/* Complete the receive WQE in hand. */
static void uzura_resp_complete(UzuraCore *core, UzuraQp *qp,
                                struct uz_cqe *cqe, bool solicited)
{
    UzuraXfer *x = qp->x;

    cqe->wr_id = cpu_to_le64(x->resp.rwqe.wr_id);
    cqe->qpn = cpu_to_le32(x->qpn);
    x->resp.rwqe_failed |= cqe->status != UZ_WC_STATUS_SUCCESS;
    if (x->resp.tm_kind) {
        /* A SEND of a TM SRQ: to its CQ, as tag matching says. */
        uzura_tm_complete(core, qp, cqe, solicited);
    } else {
        uzura_xrc_cqe(qp, cqe);
        uzura_cq_post(core, qp->recv_cqn, cqe, solicited);
    }
    trace_uzura_resp_complete(x->qpn, le32_to_cpu(cqe->byte_len),
                              cqe->status);
    x->resp.have_rwqe = false;
    if (qp->srqn == UZ_NO_SRQ) {
        qp->rq_ci = (qp->rq_ci + 1) & UZ_IDX_MASK;
    }
}

/*
 * The end of a refused request (uzura_resp_error), its answers sent; UC
 * answers nothing (uzura_resp_rwqe_error).
 */
static void uzura_resp_fail(UzuraCore *core, UzuraQp *qp)
{
    UzuraXfer *x = qp->x;

    x->resp.err_owed = false;
    uzura_guest_error(trace_uzura_resp_err(x->qpn, x->resp.err_psn,
                                           x->resp.err_syndrome,
                                           x->resp.err_verr),
                      "QP %u: request at PSN %u refused (NAK 0x%x, "
                      "detail %u)", x->qpn, x->resp.err_psn,
                      x->resp.err_syndrome, x->resp.err_verr);
    if (uzura_xrc_held(core, qp)) {
        struct uz_cqe cqe = {
            .status = x->resp.err_status ? x->resp.err_status :
                                      UZ_WC_STATUS_GENERAL_ERR,
            .vendor_err = x->resp.err_verr, .opcode = UZ_WC_RECV,
        };

        uzura_resp_complete(core, qp, &cqe, false);
    }
    if (!uzura_qp_is_uc(qp)) {
        uzura_resp_nak(core, qp, x->resp.err_syndrome, x->resp.err_psn);
    }
    /*
     * A receive CQE that reported the error is all the driver hears;
     * else the event of the NAK's kind, as ConnectX's (spec 8.11).
     */
    uzura_qp_fail(core, qp,
                  x->resp.rwqe_failed ? 0 :
                  x->resp.err_syndrome == UZ_AETH_NAK_INV_REQ ?
                  UZ_EQE_QP_REQ_ERR :
                  x->resp.err_syndrome == UZ_AETH_NAK_REM_ACCESS ?
                  UZ_EQE_QP_ACCESS_ERR : UZ_EQE_QP_FATAL);
}

/*
 * UC (spec 9.8) answers nothing: a message the responder cannot take (a
 * PSN gap, no receive WQE, an absent ODP page, a check that fails) is
 * dropped whole and silently.  Its packets up to the next First or Only
 * are ignored, the receive WQE it took waits for the next message, and
 * the QP goes on.
 */
static void uzura_resp_uc_drop(UzuraCore *core, UzuraQp *qp, uint32_t psn,
                               const char *why)
{
    UzuraXfer *x = qp->x;

    if (!x->resp.uc_drop) {
        core->counters.uc_dropped++;
        trace_uzura_resp_uc_drop(x->qpn, psn, why);
    }
    x->resp.uc_drop = true;
    x->resp.in_msg = 0;
    x->resp.recv_off = 0;
}

/*
 * UC: follow the sender's PSNs.  A First or Only starts a message
 * wherever it is; a packet after a gap ends the message it belongs to.
 * False when the packet is dropped.
 */
static bool uzura_resp_uc_accept(UzuraCore *core, UzuraQp *qp,
                                 const UzuraPkt *pkt)
{
    UzuraXfer *x = qp->x;

    if (uzura_ops[pkt->opcode].hdrs & UZ_H_FIRST) {
        /* The message before it never ended: its Last was lost. */
        if (x->resp.in_msg) {
            uzura_resp_uc_drop(core, qp, pkt->psn, "message cut short");
        }
        x->resp.uc_drop = false;
        x->resp.in_msg = 0;
        x->resp.recv_off = 0;
        x->resp.epsn = pkt->psn;
        return true;
    }
    if (pkt->psn != x->resp.epsn) {
        uzura_resp_uc_drop(core, qp, pkt->psn, "PSN gap");
    }
    if (x->resp.uc_drop) {
        x->resp.epsn = (pkt->psn + 1) & UZ_PSN_MASK;
        return false;
    }
    return true;
}

/* Is a READ or atomic answer for a PSN before @psn still to be sent? */
static bool uzura_resp_owed_before(UzuraCore *core, UzuraQp *qp, uint32_t psn)
{
    UzuraXfer *x = qp->x;
    uint32_t k;

    for (k = 0; k < core->rdma.lim.max_qp_rd_atom; k++) {
        if (x->resp.rd[k].pending &&
            uzura_psn_diff(x->resp.rd[k].psn, psn) < 0) {
            return true;
        }
    }
    return false;
}

/* What uzura_resp_fail reports: the request, its NAK and status. */
static void uzura_resp_refusal(UzuraXfer *x, uint32_t psn, uint8_t syndrome,
                               uint8_t status, uint8_t verr)
{
    x->resp.err_psn = psn;
    x->resp.err_syndrome = syndrome;
    x->resp.err_status = status;
    x->resp.err_verr = verr;
}

/*
 * The responder side of an error: the READ and atomic answers owed for
 * earlier PSNs go out first (answers keep PSN order, and the NAK ends
 * the QP's traffic), then the receive WQE in hand (if any) completes with
 * @status, the requester gets a NAK for @psn, and the QP goes to the
 * error state.  The answers may be many megabytes: the work bottom half
 * sends them within its budget, and ends the QP after them; until then
 * the QP takes no new request.
 */
static void uzura_resp_error(UzuraCore *core, UzuraQp *qp, uint32_t psn,
                             uint8_t syndrome, uint8_t status, uint8_t verr)
{
    UzuraXfer *x = qp->x;

    if (uzura_qp_is_uc(qp)) {
        uzura_resp_uc_drop(core, qp, psn, "refused");
        return;
    }
    if (x->resp.err_owed && uzura_psn_diff(psn, x->resp.err_psn) >= 0) {
        return;                 /* an earlier refusal already ends it */
    }
    x->resp.err_owed = true;
    uzura_resp_refusal(x, psn, syndrome, status, verr);
    if (uzura_resp_owed_before(core, qp, psn)) {
        uzura_work_schedule(core);
        return;
    }
    uzura_resp_fail(core, qp);
}

/*
 * The receive WQE in hand cannot take a message (malformed, or its buffer
 * fails the checks): a local error.  RC refuses the request (remote
 * operational error); UC, which answers nothing, completes the WQE with
 * @status and ends in the error state, as for any local error.
 */
static void uzura_resp_rwqe_error(UzuraCore *core, UzuraQp *qp, uint32_t psn,
                                  uint8_t status, uint8_t verr)
{
    if (!uzura_qp_is_uc(qp)) {
        uzura_resp_error(core, qp, psn, UZ_AETH_NAK_REM_OP, status, verr);
        return;
    }
    uzura_resp_refusal(qp->x, psn, UZ_AETH_NAK_REM_OP, status, verr);
    uzura_resp_fail(core, qp);
}

/*
 * The request was executed: move on (a message's last packet counts in
 * the MSN, any other leaves the message open), and owe an ACK if asked.
 * A READ or atomic is answered by its response and never by an ACK: the
 * response also acknowledges every request before it, so an ACK owed
 * for those is folded into it; and an ACK for the READ's PSN would tell
 * the requester that all of the READ's data had come, which rxe takes
 * it to mean even when a response packet was lost.
 */
static void uzura_resp_done(UzuraCore *core, UzuraQp *qp, const UzuraPkt *pkt,
                            uint32_t npkts)
{
    UzuraXfer *x = qp->x;
    bool answered;

    if (uzura_ops[pkt->opcode].hdrs & UZ_H_LAST) {
        x->resp.msn = (x->resp.msn + 1) & UZ_PSN_MASK;
        x->resp.in_msg = 0;
    } else {
        x->resp.in_msg = uzura_ops[pkt->opcode].family;
    }
    x->resp.epsn = (x->resp.epsn + npkts) & UZ_PSN_MASK;
    answered = uzura_ops[pkt->opcode].family == UZ_FAM_READ_REQ ||
               uzura_ops[pkt->opcode].family == UZ_FAM_ATOMIC;
    if ((answered || pkt->ack_req) && !uzura_qp_is_uc(qp)) {
        if (x->resp.ack_owed) {
            core->counters.acks_coalesced++;
        }
        x->resp.ack_owed = !answered;
        uzura_work_schedule(core);
    }
}

/*
 * Receiver not ready.  The rest of the message, already on its way, is
 * dropped without a sequence NAK: the requester sends it all again after
 * the RNR wait.
 */
static void uzura_resp_rnr(UzuraCore *core, UzuraQp *qp, uint32_t psn)
{
    if (uzura_qp_is_uc(qp)) {
        uzura_resp_uc_drop(core, qp, psn, "receiver not ready");
        return;
    }
    qp->x->resp.nak_seq_sent = true;
    core->counters.rnr_naks_sent++;
    trace_uzura_resp_rnr(qp->x->qpn, psn);
    uzura_resp_ack(core, qp, UZ_AETH_RNR_NAK | (qp->attr.min_rnr_timer & 0x1f),
                   psn);
}

/*
 * The receive WQE a message consumes; false when there is none (RNR NAK
 * sent) or it cannot be used (error handled).
 */
static bool uzura_resp_take_or_nak(UzuraCore *core, UzuraQp *qp,
                                   const UzuraPkt *pkt)
{
    uint8_t verr = UZ_VERR_NONE;
    int got = uzura_resp_take(core, qp, &verr);

    if (!got) {
        uzura_resp_rnr(core, qp, pkt->psn);
    } else if (got < 0) {
        uzura_resp_rwqe_error(core, qp, pkt->psn,
                              UZ_WC_STATUS_LOC_QP_OP_ERR, verr);
    }
    return got > 0;
}

/*
 * The first packet of a SEND at a QP of a TM SRQ (spec 8.19): a matched
 * EAGER message takes its tag's buffer, a matched RNDV message starts a
 * rendezvous and is done with, the others take a receive WQE of the
 * SRQ.  False when the message is done with or refused.
 */
static bool uzura_resp_tm_first(UzuraCore *core, UzuraQp *qp,
                                const UzuraPkt *pkt)
{
    UzuraXfer *x = qp->x;
    uint8_t kind;
    int32_t idx;

    kind = uzura_tm_classify(core, qp, pkt, &idx);
    switch (kind) {
    case UZ_TMK_EAGER:
        uzura_tm_take_eager(core, qp, idx, x->resp.tm_tag);
        return true;
    case UZ_TMK_RNDV:
        switch (uzura_tm_rndv_start(core, qp, pkt, idx)) {
        case 0:
            uzura_resp_done(core, qp, pkt, 1);
            break;
        case 1:
            uzura_resp_rnr(core, qp, pkt->psn);    /* no rendezvous slot */
            break;
        default:
            uzura_resp_error(core, qp, pkt->psn, UZ_AETH_NAK_INV_REQ,
                             UZ_WC_STATUS_REM_INV_REQ_ERR, 0);
            break;
        }
        return false;
    default:
        x->resp.tm_kind = kind;
        if (!uzura_resp_take_or_nak(core, qp, pkt)) {
            /* None posted: the message comes again, classified again. */
            if (!x->resp.have_rwqe) {
                x->resp.tm_kind = UZ_TMK_NONE;
            }
            return false;
        }
        return true;
    }
}

static void uzura_resp_send(UzuraCore *core, UzuraQp *qp, const UzuraPkt *pkt)
{
    UzuraXfer *x = qp->x;
    uint16_t h = uzura_ops[pkt->opcode].hdrs;
    uint32_t skip = 0;
    uint8_t verr;

    /* A first packet that met an absent ODP page has its WQE already. */
    if ((h & UZ_H_FIRST) && !x->resp.have_rwqe) {
        if (uzura_tm_qp(core, qp) ? !uzura_resp_tm_first(core, qp, pkt) :
                                    !uzura_resp_take_or_nak(core, qp, pkt)) {
            return;
        }
    }
    /* A matched EAGER message's data follows its TMH. */
    if ((h & UZ_H_FIRST) && x->resp.tm_kind == UZ_TMK_EAGER) {
        skip = UZ_TMH_LEN;
    }
    if (x->resp.recv_off + (uint64_t)pkt->paylen - skip >
        x->resp.rwqe.sgl.len) {
        uzura_resp_error(core, qp, pkt->psn, UZ_AETH_NAK_INV_REQ,
                         UZ_WC_STATUS_LOC_LEN_ERR, UZ_VERR_NONE);
        return;
    }
    verr = uzura_sgl_copy(core, &x->resp.rwqe.sgl, qp->pdn, x->resp.recv_off,
                          (void *)pkt->payload + skip, pkt->paylen - skip,
                          true);
    if (verr == UZURA_VERR_FAULT) {
        /* The requester sends it again after the RNR wait. */
        uzura_resp_rnr(core, qp, pkt->psn);
        return;
    }
    if (verr) {
        uzura_resp_rwqe_error(core, qp, pkt->psn, UZ_WC_STATUS_LOC_PROT_ERR,
                              verr);
        return;
    }
    x->resp.recv_off += pkt->paylen - skip;
    if (h & UZ_H_LAST) {
        struct uz_cqe cqe = {
            .byte_len = cpu_to_le32(x->resp.recv_off), .imm_data = pkt->imm,
            .opcode = UZ_WC_RECV,
            .wc_flags = (h & UZ_H_IMM ? UZ_WC_F_IMM : 0) |
                        (h & UZ_H_IETH ? UZ_WC_F_INV : 0),
        };

        /*
         * SEND with invalidate frees the fast-reg MR or unbinds the type 2
         * window it names (class J: a key this QP may not free fails the
         * receive and the QP); the key is reported in host order, as
         * verbs do.
         */
        if (h & UZ_H_IETH) {
            uint32_t key = be32_to_cpu(pkt->imm);

            verr = uzura_fastreg_inv(core, qp, key, true);
            if (verr) {
                uzura_resp_error(core, qp, pkt->psn, UZ_AETH_NAK_INV_REQ,
                                 UZ_WC_STATUS_REM_INV_REQ_ERR, verr);
                return;
            }
            cqe.imm_data = cpu_to_le32(key);
        }
        uzura_resp_complete(core, qp, &cqe, pkt->se);
    }
    uzura_resp_done(core, qp, pkt, 1);
}

/* The NAK for memory a checked key reaches but cannot be moved. */
static uint8_t uzura_resp_copy_nak(uint8_t verr)
{
    return verr == UZ_VERR_DMA ? UZ_AETH_NAK_REM_OP : UZ_AETH_NAK_REM_ACCESS;
}

/*
 * After a copy to or from a peer's memory: an absent ODP page is an RNR
 * NAK (the requester sends again), any other failure ends the request.
 * True when the copy failed.
 */
static bool uzura_resp_copy_failed(UzuraCore *core, UzuraQp *qp,
                                   uint32_t psn, uint8_t status, uint8_t verr)
{
    if (verr == UZURA_VERR_FAULT) {
        uzura_resp_rnr(core, qp, psn);
    } else if (verr) {
        uzura_resp_error(core, qp, psn, uzura_resp_copy_nak(verr), status,
                         verr);
    }
    return verr;
}

/* A request whose rkey does not allow it: a remote access NAK. */
static void uzura_resp_key_refused(UzuraCore *core, UzuraQp *qp,
                                   uint32_t psn, uint8_t verr)
{
    uzura_resp_error(core, qp, psn, UZ_AETH_NAK_REM_ACCESS, 0,
                     verr == UZ_VERR_BAD_LKEY ? UZ_VERR_BAD_RKEY : verr);
}

/* A remote access through an rkey: the QP's rights, then the key's. */
static uint8_t uzura_resp_check(UzuraCore *core, UzuraQp *qp, uint32_t rkey,
                                uint64_t va, uint64_t len, uint32_t access,
                                UzuraMr **mr)
{
    if (!(qp->attr.access_flags & access)) {
        *mr = NULL;
        return UZ_VERR_ACCESS;
    }
    return uzura_rkey_check(core, qp, rkey, va, len, access, mr);
}

static void uzura_resp_write(UzuraCore *core, UzuraQp *qp,
                             const UzuraPkt *pkt)
{
    UzuraXfer *x = qp->x;
    uint16_t h = uzura_ops[pkt->opcode].hdrs;
    uint8_t verr = UZ_VERR_NONE;
    UzuraMr *mr;

    if (h & UZ_H_FIRST) {
        verr = uzura_resp_check(core, qp, pkt->rkey, pkt->va, pkt->dma_len,
                                UZ_ACCESS_REMOTE_WRITE, &mr);
        if (verr) {
            uzura_resp_key_refused(core, qp, pkt->psn, verr);
            return;
        }
        x->resp.wr_va = pkt->va;
        x->resp.wr_rkey = pkt->rkey;
        x->resp.wr_len = pkt->dma_len;
        x->resp.wr_off = 0;
    }
    if (x->resp.wr_off + (uint64_t)pkt->paylen > x->resp.wr_len ||
        ((h & UZ_H_LAST) && x->resp.wr_off + pkt->paylen != x->resp.wr_len)) {
        uzura_resp_error(core, qp, pkt->psn, UZ_AETH_NAK_INV_REQ, 0, 0);
        return;
    }
    /* With immediate data the message needs a receive WQE: check first. */
    if ((h & UZ_H_IMM) && !x->resp.have_rwqe &&
        !uzura_resp_take_or_nak(core, qp, pkt)) {
        return;
    }
    if (pkt->paylen) {
        verr = uzura_rkey_check(core, qp, x->resp.wr_rkey,
                                x->resp.wr_va + x->resp.wr_off,
                                pkt->paylen, UZ_ACCESS_REMOTE_WRITE, &mr);
        if (verr) {
            uzura_resp_error(core, qp, pkt->psn, UZ_AETH_NAK_REM_ACCESS,
                             UZ_WC_STATUS_LOC_ACCESS_ERR, verr);
            return;
        }
        verr = uzura_mr_copy(core, mr, x->resp.wr_va + x->resp.wr_off,
                             (void *)pkt->payload, pkt->paylen, true);
        if (uzura_resp_copy_failed(core, qp, pkt->psn,
                                   UZ_WC_STATUS_LOC_PROT_ERR, verr)) {
            return;
        }
    }
    x->resp.wr_off += pkt->paylen;
    if (h & UZ_H_IMM) {
        struct uz_cqe cqe = {
            .byte_len = cpu_to_le32(x->resp.wr_len), .imm_data = pkt->imm,
            .opcode = UZ_WC_RECV_RDMA_WITH_IMM, .wc_flags = UZ_WC_F_IMM,
        };

        uzura_resp_complete(core, qp, &cqe, pkt->se);
    }
    uzura_resp_done(core, qp, pkt, 1);
}

/*
 * The next slot of the ring for a READ or atomic answer, or NULL when
 * more are outstanding than it holds (the request is refused then: an
 * invalid request NAK); uzura_resp_keep takes it.  A
 * slot still answering a duplicate is taken all the same: a requester
 * that keeps to max_rd_atomic sends a new READ or atomic only once the
 * oldest of the ring is complete at its end, so that answer is no longer
 * wanted (a requester that went back N may send it again, and a READ
 * response arrive while it does).
 */
static UzuraRdAtom *uzura_resp_slot(UzuraCore *core, UzuraQp *qp,
                                    uint32_t psn)
{
    UzuraXfer *x = qp->x;
    UzuraResp *rs = &x->resp;
    UzuraRdAtom *s = &rs->rd[rs->rd_head % core->rdma.lim.max_qp_rd_atom];

    if (s->pending && !s->again) {
        uzura_resp_error(core, qp, psn, UZ_AETH_NAK_INV_REQ, 0, 0);
        return NULL;
    }
    return s;
}

/*
 * Take slot @s for the answer @a to request @pkt (the fields of the
 * request are filled in here) and have the bottom half send it.
 */
static void uzura_resp_keep(UzuraCore *core, UzuraQp *qp,
                            const UzuraPkt *pkt, UzuraRdAtom *s,
                            UzuraRdAtom a)
{
    UzuraResp *rs = &qp->x->resp;

    rs->rd_head = (rs->rd_head + 1) % core->rdma.lim.max_qp_rd_atom;
    a.valid = true;
    a.opcode = pkt->opcode;
    a.xrc_srqn = qp->x->resp.xrc_srqn;
    a.pending = true;
    a.psn = pkt->psn;
    *s = a;
    uzura_resp_done(core, qp, pkt, a.npkts);
    uzura_work_schedule(core);
}

static void uzura_resp_read(UzuraCore *core, UzuraQp *qp, const UzuraPkt *pkt)
{
    /* 64-bit: a DMA length near 4 GiB must not wrap to one packet. */
    uint32_t npkts = MAX(DIV_ROUND_UP((uint64_t)pkt->dma_len,
                                      uzura_resp_mtu(qp)), 1);
    UzuraRdAtom *s;
    UzuraMr *mr;
    uint8_t verr;

    /* No message is longer than 2^31 bytes, and no READ answer either. */
    if (pkt->dma_len > UZ_MAX_MSG) {
        uzura_resp_error(core, qp, pkt->psn, UZ_AETH_NAK_INV_REQ, 0, 0);
        return;
    }
    verr = uzura_resp_check(core, qp, pkt->rkey, pkt->va, pkt->dma_len,
                            UZ_ACCESS_REMOTE_READ, &mr);
    if (verr) {
        uzura_resp_key_refused(core, qp, pkt->psn, verr);
        return;
    }
    s = uzura_resp_slot(core, qp, pkt->psn);
    if (!s) {
        return;
    }
    uzura_resp_keep(core, qp, pkt, s, (UzuraRdAtom) {
        .npkts = npkts, .va = pkt->va, .rkey = pkt->rkey,
        .len = pkt->dma_len,
    });
}

/*
 * What an atomic or ATOMIC WRITE passes before memory changes: 8 aligned
 * bytes the QP and the key allow @access to, and a slot for the answer,
 * so that a NAK changes nothing.  NULL once refused.
 */
static UzuraRdAtom *uzura_resp_atomic_slot(UzuraCore *core, UzuraQp *qp,
                                           const UzuraPkt *pkt,
                                           uint32_t access, UzuraMr **mr)
{
    uint8_t verr;

    if (pkt->va & 7) {
        uzura_resp_error(core, qp, pkt->psn, UZ_AETH_NAK_INV_REQ, 0, 0);
        return NULL;
    }
    verr = uzura_resp_check(core, qp, pkt->rkey, pkt->va, 8, access, mr);
    if (verr) {
        uzura_resp_key_refused(core, qp, pkt->psn, verr);
        return NULL;
    }
    return uzura_resp_slot(core, qp, pkt->psn);
}

/*
 * Atomics run to completion here, on the one thread that runs every QP
 * of the device, so no other access to the location interleaves.
 */
static void uzura_resp_atomic(UzuraCore *core, UzuraQp *qp,
                              const UzuraPkt *pkt)
{
    uint64_t val, orig;
    UzuraRdAtom *s;
    UzuraMr *mr;
    uint8_t verr;

    s = uzura_resp_atomic_slot(core, qp, pkt, UZ_ACCESS_REMOTE_ATOMIC, &mr);
    if (!s) {
        return;
    }
    verr = uzura_mr_copy(core, mr, pkt->va, &val, 8, false);
    if (uzura_resp_copy_failed(core, qp, pkt->psn, 0, verr)) {
        return;
    }
    orig = le64_to_cpu(val);
    if (pkt->opcode == UZ_BTH_OP_FETCH_ADD) {
        val = cpu_to_le64(orig + pkt->swap_add);
    } else if (orig == pkt->compare) {
        val = cpu_to_le64(pkt->swap_add);
    }
    /* The same 8 bytes: the page the read found is there. */
    if (uzura_mr_copy(core, mr, pkt->va, &val, 8, true)) {
        uzura_resp_error(core, qp, pkt->psn, UZ_AETH_NAK_REM_OP, 0,
                         UZ_VERR_DMA);
        return;
    }
    uzura_resp_keep(core, qp, pkt, s,
                    (UzuraRdAtom) { .npkts = 1, .orig = orig });
}

/*
 * FLUSH (IBA 1.5): the writes before it are in memory already, each
 * placed as it arrived, so global visibility asks only that the key
 * allow it; no memory here persists, so no MR allows persistence.  The
 * range, or with UZ_FLUSH_MR the whole region the key names, whatever
 * the RETH says (a window's key carries no FLUSH right).  The answer
 * goes after those of earlier READs.
 */
static void uzura_resp_flush(UzuraCore *core, UzuraQp *qp,
                             const UzuraPkt *pkt)
{
    uint64_t va = pkt->va, len = pkt->dma_len;
    UzuraRdAtom *s;
    UzuraMr *mr;
    uint8_t verr;

    if (!uzura_flush_valid(pkt->flush_type, pkt->flush_level)) {
        uzura_resp_error(core, qp, pkt->psn, UZ_AETH_NAK_INV_REQ, 0, 0);
        return;
    }
    /* An empty range still names a key that must allow the FLUSH. */
    if (pkt->flush_level == UZ_FLUSH_MR || !len) {
        mr = uzura_mw_slot(core, pkt->rkey);
        mr = mr ? mr : uzura_mr_lookup(core, pkt->rkey);
        va = mr ? mr->iova : 0;
        len = mr ? MAX(mr->length, 1) : 1;
    }
    verr = uzura_rkey_check(core, qp, pkt->rkey, va, len,
                            UZ_ACCESS_FLUSH_GLOBAL, &mr);
    if (!verr && (pkt->flush_type & UZ_FLUSH_PERSISTENT)) {
        verr = UZ_VERR_ACCESS;
    }
    if (verr) {
        uzura_resp_key_refused(core, qp, pkt->psn, verr);
        return;
    }
    s = uzura_resp_slot(core, qp, pkt->psn);
    if (!s) {
        return;
    }
    /* Answered by a READ response of no bytes. */
    uzura_resp_keep(core, qp, pkt, s, (UzuraRdAtom) { .npkts = 1 });
}

/*
 * ATOMIC WRITE (IBA 1.5): 8 aligned bytes written whole as it arrives,
 * in PSN order with the QP's other requests (one thread runs them all).
 * A READ before it reads its data when answered, so may see the write,
 * as IB allows; a fence orders them.  A duplicate is answered again and
 * not written again.
 */
static void uzura_resp_atomic_write(UzuraCore *core, UzuraQp *qp,
                                    const UzuraPkt *pkt)
{
    UzuraRdAtom *s;
    UzuraMr *mr;
    uint8_t verr;

    if (pkt->dma_len != 8 || pkt->paylen != 8) {
        uzura_resp_error(core, qp, pkt->psn, UZ_AETH_NAK_INV_REQ, 0, 0);
        return;
    }
    s = uzura_resp_atomic_slot(core, qp, pkt, UZ_ACCESS_REMOTE_WRITE, &mr);
    if (!s) {
        return;
    }
    verr = uzura_mr_copy(core, mr, pkt->va, (void *)pkt->payload, 8, true);
    if (uzura_resp_copy_failed(core, qp, pkt->psn, 0, verr)) {
        return;
    }
    /* Answered by a READ response of no bytes. */
    uzura_resp_keep(core, qp, pkt, s, (UzuraRdAtom) { .npkts = 1 });
}

/*
 * An STCRW names the buffer the peer offers for a tag: the tag table
 * takes it (and may start a parked CRW's write).  A full table or a tag
 * already offered is an invalid request.
 */
static void uzura_resp_stcrw(UzuraCore *core, UzuraQp *qp,
                             const UzuraPkt *pkt)
{
    uint8_t verr = uzura_crw_offer(core, qp, pkt);

    if (verr) {
        uzura_resp_error(core, qp, pkt->psn, UZ_AETH_NAK_INV_REQ, 0, verr);
        return;
    }
    uzura_resp_done(core, qp, pkt, 1);
}

/* Send a kept READ or atomic answer again, for a duplicate request. */
static void uzura_resp_again(UzuraCore *core, UzuraRdAtom *s)
{
    s->pending = true;
    s->again = true;
    s->sent = 0;
    uzura_work_schedule(core);
}

/*
 * A READ request sent again for part of a READ we answered: an IB
 * requester that has the first packets of a response may ask again for
 * the rest only, with the PSN of the first packet it misses and the RETH
 * moved on to match (Linux rxe does, and hardware answers it).  The rest
 * is answered as a READ of its own (First/Middle/Last, or Only, from
 * that PSN), and the slot keeps it in place of the original.  A request
 * that is no such rest (another rkey, bytes outside the original,
 * packets past its last PSN) is dropped, as rxe drops it.
 */
static void uzura_resp_read_rest(UzuraCore *core, UzuraQp *qp, UzuraRdAtom *s,
                                 const UzuraPkt *pkt)
{
    uint32_t mtu = uzura_resp_mtu(qp);
    uint32_t npkts = MAX(DIV_ROUND_UP((uint64_t)pkt->dma_len, mtu), 1);
    uint32_t skip = uzura_psn_diff(pkt->psn, s->psn);

    if (pkt->rkey != s->rkey || pkt->va < s->va ||
        pkt->va - s->va > s->len ||
        pkt->dma_len > s->len - (pkt->va - s->va) ||
        skip + npkts > s->npkts) {
        trace_uzura_roce_rx_drop("READ sent again beyond the original");
        return;
    }
    s->psn = pkt->psn;
    s->va = pkt->va;
    s->len = pkt->dma_len;
    s->npkts = npkts;
    uzura_resp_again(core, s);
}

/* A request we executed before: answer it again, change nothing. */
static void uzura_resp_duplicate(UzuraCore *core, UzuraQp *qp,
                                 const UzuraPkt *pkt)
{
    UzuraXfer *x = qp->x;
    uint8_t fam = uzura_ops[pkt->opcode].family;
    uint32_t i;

    core->counters.duplicates++;
    trace_uzura_resp_duplicate(x->qpn, pkt->psn, x->resp.epsn);
    if (fam == UZ_FAM_READ_REQ || fam == UZ_FAM_ATOMIC) {
        uint32_t n = core->rdma.lim.max_qp_rd_atom;

        /*
         * Newest first: PSNs wrap, and an answer kept 2^24 PSNs ago may
         * cover the same PSN as the one this duplicate is of.
         */
        for (i = 1; i <= n; i++) {
            UzuraRdAtom *s = &x->resp.rd[(x->resp.rd_head + n - i) % n];
            int32_t d = uzura_psn_diff(pkt->psn, s->psn);

            if (!s->valid || s->opcode != pkt->opcode ||
                d < 0 || d >= (int32_t)s->npkts) {
                continue;
            }
            if (s->opcode == UZ_BTH_OP_READ_REQ &&
                (d > 0 || pkt->va != s->va || pkt->dma_len != s->len)) {
                uzura_resp_read_rest(core, qp, s, pkt);
                return;
            }
            uzura_resp_again(core, s);
            return;
        }
        return;
    }
    /* For its own PSN: the last one received may be a READ's (above). */
    if (pkt->ack_req) {
        uzura_resp_ack(core, qp, UZ_AETH_ACK | 0x1f, pkt->psn);
    }
}

/*
 * An XRC target serves each request from the XRC SRQ its XRCETH names
 * (spec 8.16): one of the target's domain, the same for all the packets
 * of a message and for the sending again of one whose receive WQE it
 * holds (after an RNR NAK); else the request is invalid.
 */
static bool uzura_resp_xrc(UzuraCore *core, UzuraQp *qp, const UzuraPkt *pkt)
{
    UzuraXfer *x = qp->x;

    if (((x->resp.in_msg || x->resp.have_rwqe) &&
         pkt->xrc_srqn != x->resp.xrc_srqn) ||
        !uzura_xrc_adopt(core, qp, pkt->xrc_srqn)) {
        uzura_resp_error(core, qp, pkt->psn, UZ_AETH_NAK_INV_REQ,
                         UZ_WC_STATUS_REM_INV_REQ_ERR, 0);
        return false;
    }
    x->resp.xrc_srqn = pkt->xrc_srqn;
    return true;
}

/* An RC request for this QP: execute it, keep it, or drop it. */
void uzura_resp_packet(UzuraCore *core, UzuraQp *qp, const UzuraPkt *pkt)
{
    UzuraXfer *x = qp->x;
    uint16_t h = uzura_ops[pkt->opcode].hdrs;
    uint8_t fam = uzura_ops[pkt->opcode].family;
    int32_t d = uzura_psn_diff(pkt->psn, x->resp.epsn);

    if (uzura_qp_is_uc(qp)) {
        if (!uzura_resp_uc_accept(core, qp, pkt)) {
            return;
        }
        d = 0;
    }
    if (x->resp.err_owed) {
        trace_uzura_roce_rx_drop("RC request behind a refused one");
        return;
    }
    if (d < 0) {
        uzura_resp_duplicate(core, qp, pkt);
        return;
    }
    if (d > 0) {
        /*
         * Past a hole, for a requester that takes SACKs: keep it, unless
         * its payload is more than it may be (it fails when it comes in
         * order): what a peer can make us hold is bounded in bytes.
         */
        if (pkt->sr && core->rdma.recovery == UZ_RECOVERY_SR) {
            if ((h & UZ_H_PAYLOAD) && pkt->paylen > uzura_resp_mtu(qp)) {
                trace_uzura_sr_not_kept(x->qpn, pkt->psn,
                                        "payload over the path MTU");
            } else if (uzura_sr_keep(core, qp, pkt)) {
                return;
            }
        }
        /* A gap: say so once, then drop until the expected PSN comes. */
        if (!x->resp.nak_seq_sent) {
            x->resp.nak_seq_sent = true;
            uzura_resp_nak(core, qp, UZ_AETH_NAK_SEQ, x->resp.epsn);
        }
        return;
    }
    x->resp.nak_seq_sent = false;
    if (qp->type == UZ_QPT_XRC_TGT && !uzura_resp_xrc(core, qp, pkt)) {
        return;
    }
    /* Packets of one message come in order, First to Last. */
    if (x->resp.in_msg ? (fam != x->resp.in_msg || (h & UZ_H_FIRST)) :
                    !(h & UZ_H_FIRST)) {
        uzura_resp_error(core, qp, pkt->psn, UZ_AETH_NAK_INV_REQ,
                         UZ_WC_STATUS_REM_INV_REQ_ERR, 0);
        return;
    }
    if ((h & UZ_H_PAYLOAD) &&
        (pkt->paylen > uzura_resp_mtu(qp) ||
         (!(h & UZ_H_LAST) && pkt->paylen != uzura_resp_mtu(qp)))) {
        uzura_resp_error(core, qp, pkt->psn, UZ_AETH_NAK_INV_REQ,
                         UZ_WC_STATUS_REM_INV_REQ_ERR, 0);
        return;
    }
    switch (fam) {
    case UZ_FAM_SEND:
        uzura_resp_send(core, qp, pkt);
        break;
    case UZ_FAM_WRITE:
        uzura_resp_write(core, qp, pkt);
        break;
    case UZ_FAM_READ_REQ:
        if (pkt->opcode == UZ_BTH_OP_FLUSH) {
            uzura_resp_flush(core, qp, pkt);
        } else {
            uzura_resp_read(core, qp, pkt);
        }
        break;
    case UZ_FAM_ATOMIC:
        if (pkt->opcode == UZ_BTH_OP_ATOMIC_WRITE) {
            uzura_resp_atomic_write(core, qp, pkt);
        } else {
            uzura_resp_atomic(core, qp, pkt);
        }
        break;
    case UZ_FAM_CRW:
        uzura_resp_stcrw(core, qp, pkt);
        break;
    default:
        uzura_resp_error(core, qp, pkt->psn, UZ_AETH_NAK_INV_REQ, 0, 0);
        break;
    }
}

/* An RC request from the link; then what it let through of those kept. */
void uzura_resp_request(UzuraCore *core, UzuraQp *qp, const UzuraPkt *pkt)
{
    uzura_resp_packet(core, qp, pkt);
    if (qp->x->resp.sr_kept) {
        uzura_sr_drain(core, qp);
    }
}

/* A UD send: Q_Key check, GRH area, payload, completion. */
void uzura_resp_ud(UzuraCore *core, UzuraQp *qp, const UzuraPkt *pkt)
{
    UzuraXfer *x = qp->x;
    uint8_t grh[UZ_GRH_LEN] = { 0 }, verr = UZ_VERR_NONE;
    struct uz_cqe cqe = {
        .opcode = UZ_WC_RECV, .imm_data = pkt->imm,
        .src_qp = cpu_to_le32(pkt->sqpn),
        .byte_len = cpu_to_le32(UZ_GRH_LEN + pkt->paylen),
        .wc_flags = UZ_WC_F_GRH | UZ_WC_F_IPV4 |
                    (uzura_ops[pkt->opcode].hdrs & UZ_H_IMM ? UZ_WC_F_IMM : 0),
    };
    int got;

    if (pkt->qkey != qp->attr.qkey) {
        trace_uzura_roce_rx_drop("UD Q_Key mismatch");
        core->counters.rx_qkey_errors++;
        return;
    }
    /* A WQE kept from a packet that did not fit is used first. */
    got = x->resp.have_rwqe ? 1 : uzura_resp_take(core, qp, &verr);
    if (!got) {
        /* Unreliable: nothing to receive into, nothing received. */
        trace_uzura_roce_rx_drop("UD without a receive WQE");
        core->counters.rx_ud_no_wqe++;
        return;
    }
    if (got > 0 && UZ_GRH_LEN + (uint64_t)pkt->paylen > x->resp.rwqe.sgl.len) {
        /*
         * Any host on the link can send one: drop it and keep the WQE
         * and the QP (QP1 serves the RDMA CM of every process).
         */
        uzura_guest_error(trace_uzura_roce_rx_drop("UD larger than the WQE"),
                          "QP %u: UD message of %u bytes dropped, the "
                          "receive WQE holds %" PRIu64, x->qpn,
                          UZ_GRH_LEN + pkt->paylen, x->resp.rwqe.sgl.len);
        core->counters.rx_ud_too_long++;
        return;
    } else if (got > 0) {
        /* IPv4 in a GRH area: the header in its last 20 bytes. */
        memcpy(grh + 20, pkt->ip_hdr, 20);
        verr = uzura_sgl_copy(core, &x->resp.rwqe.sgl, qp->pdn, 0, grh,
                              UZ_GRH_LEN, true);
        if (!verr) {
            verr = uzura_sgl_copy(core, &x->resp.rwqe.sgl, qp->pdn, UZ_GRH_LEN,
                                  (void *)pkt->payload, pkt->paylen, true);
        }
        if (verr == UZURA_VERR_FAULT && qp->srqn == UZ_NO_SRQ) {
            /* A datagram may be lost: the WQE waits for the next one. */
            x->resp.have_rwqe = false;
            core->counters.rx_dropped++;
            return;
        }
        if (verr == UZURA_VERR_FAULT) {
            verr = UZ_VERR_DMA;     /* an SRQ WQE cannot go back */
        }
        cqe.status = verr ? UZ_WC_STATUS_LOC_PROT_ERR : UZ_WC_STATUS_SUCCESS;
    } else {
        cqe.status = UZ_WC_STATUS_LOC_QP_OP_ERR;
    }
    cqe.vendor_err = verr;
    uzura_resp_complete(core, qp, &cqe, pkt->se);
    if (cqe.status != UZ_WC_STATUS_SUCCESS) {
        uzura_guest_error(trace_uzura_resp_err(x->qpn, 0, 0, verr),
                          "QP %u: UD receive failed: status %u, detail %u",
                          x->qpn, cqe.status, verr);
        uzura_qp_fail(core, qp, 0);
    }
}

/*
 * A frame a flow rule of raw QP @qp matched: into its next receive WQE
 * whole; unreliable, as UD: no WQE or too small a one drops the frame.
 */
void uzura_resp_raw(UzuraCore *core, UzuraQp *qp, const uint8_t *buf,
                    size_t size)
{
    UzuraXfer *x = qp->x;
    uint8_t verr = UZ_VERR_NONE;
    struct uz_cqe cqe = {
        .opcode = UZ_WC_RECV, .byte_len = cpu_to_le32(size),
    };
    int got;

    if (qp->attr.state < UZ_QPS_RTR || qp->attr.state == UZ_QPS_ERR) {
        core->counters.rx_dropped++;
        return;
    }
    got = x->resp.have_rwqe ? 1 : uzura_resp_take(core, qp, &verr);
    if (!got) {
        trace_uzura_roce_rx_drop("raw frame without a receive WQE");
        core->counters.rx_dropped++;
        return;
    }
    if (got > 0 && size > x->resp.rwqe.sgl.len) {
        /* Any host on the link can send one: the WQE stays. */
        uzura_guest_error(trace_uzura_roce_rx_drop("raw frame too long"),
                          "QP %u: raw frame of %zu bytes dropped, the "
                          "receive WQE holds %" PRIu64, x->qpn, size,
                          x->resp.rwqe.sgl.len);
        core->counters.rx_dropped++;
        return;
    } else if (got > 0) {
        verr = uzura_sgl_copy(core, &x->resp.rwqe.sgl, qp->pdn, 0, (void *)buf,
                              size, true);
        if (verr == UZURA_VERR_FAULT && qp->srqn == UZ_NO_SRQ) {
            /* Lost: the WQE waits for the next frame. */
            x->resp.have_rwqe = false;
            core->counters.rx_dropped++;
            return;
        }
        if (verr == UZURA_VERR_FAULT) {
            verr = UZ_VERR_DMA;
        }
        cqe.status = verr ? UZ_WC_STATUS_LOC_PROT_ERR : UZ_WC_STATUS_SUCCESS;
    } else {
        cqe.status = UZ_WC_STATUS_LOC_QP_OP_ERR;
    }
    cqe.vendor_err = verr;
    uzura_resp_complete(core, qp, &cqe, false);
    if (cqe.status != UZ_WC_STATUS_SUCCESS) {
        uzura_guest_error(trace_uzura_resp_err(x->qpn, 0, 0, verr),
                          "QP %u: raw receive failed: status %u, detail %u",
                          x->qpn, cqe.status, verr);
        uzura_qp_fail(core, qp, 0);
    }
}

typedef struct UzuraReadSrc {
    UzuraQp *qp;
    UzuraRdAtom *s;
    uint32_t off;
} UzuraReadSrc;

static bool uzura_resp_gather(UzuraCore *core, void *opaque, uint8_t *dst,
                              uint32_t len, UzuraTxMap *m, uint8_t *verr)
{
    UzuraReadSrc *src = opaque;
    UzuraMr *mr;

    /* The MR may have gone since the request was checked. */
    *verr = uzura_rkey_check(core, src->qp, src->s->rkey,
                             src->s->va + src->off, len, UZ_ACCESS_REMOTE_READ,
                             &mr);
    if (!*verr) {
        *verr = uzura_mr_read_tx(core, mr, src->s->va + src->off, dst, len,
                                 m);
    }
    return !*verr;
}

/* Send the next response packet of a READ or atomic. */
static void uzura_resp_answer(UzuraCore *core, UzuraQp *qp, UzuraRdAtom *s)
{
    uint32_t mtu = uzura_resp_mtu(qp);
    UzuraReadSrc src = { .qp = qp, .s = s, .off = s->sent * mtu };
    bool first = s->sent == 0, last = s->sent + 1 == s->npkts;
    UzuraPkt pkt = { 0 };
    uint8_t verr;

    /* An XRC target reads through the PD of the request's SRQ. */
    if (qp->type == UZ_QPT_XRC_TGT &&
        !uzura_xrc_adopt(core, qp, s->xrc_srqn)) {
        s->pending = false;
        uzura_resp_error(core, qp, s->psn + s->sent, UZ_AETH_NAK_REM_OP, 0,
                         0);
        return;
    }
    if (s->opcode == UZ_BTH_OP_CMP_SWP || s->opcode == UZ_BTH_OP_FETCH_ADD) {
        uzura_resp_fill(qp, &pkt, UZ_BTH_OP_ATOMIC_ACK, s->psn);
        pkt.orig = s->orig;
    } else {
        uzura_resp_fill(qp, &pkt, first && last ? UZ_BTH_OP_READ_RESP_ONLY :
                        first ? UZ_BTH_OP_READ_RESP_FIRST :
                        last ? UZ_BTH_OP_READ_RESP_LAST :
                        UZ_BTH_OP_READ_RESP_MIDDLE, s->psn + s->sent);
        pkt.paylen = MIN(s->len - src.off, mtu);
    }
    pkt.syndrome = UZ_AETH_ACK | 0x1f;
    verr = uzura_roce_send(core, &pkt, uzura_resp_gather, &src);
    if (verr == UZURA_VERR_FAULT) {
        /* The answer goes on when the page is mapped. */
        qp->x->resp.answer_fault_wait = true;
        return;
    }
    if (verr) {
        s->pending = false;
        uzura_resp_error(core, qp, s->psn + s->sent,
                         uzura_resp_copy_nak(verr), 0, verr);
        return;
    }
    uzura_rp_sent(core, qp, pkt.paylen + UZ_ROCE_FRAME_OVERHEAD);
    if (++s->sent == s->npkts) {
        s->pending = false;
    }
}

/*
 * The responder's part of the work bottom half: READ and atomic answers
 * oldest first, then the owed ACK, which must not overtake them.  The
 * answers go through the QP's rate limiter, as its requests do: a CNP for
 * READ responses cuts the rate of the QP that sends them (spec 9.1.2).
 */
void uzura_resp_work(UzuraCore *core, UzuraQp *qp, unsigned *budget)
{
    UzuraXfer *x = qp->x;
    uint32_t n = core->rdma.lim.max_qp_rd_atom, k;

    if (x->resp.answer_fault_wait) {
        return;
    }
    for (k = 0; k < n; k++) {
        UzuraRdAtom *s = &x->resp.rd[(x->resp.rd_head + k) % n];

        if (x->resp.err_owed && s->pending &&
            uzura_psn_diff(s->psn, x->resp.err_psn) >= 0) {
            s->pending = false;     /* behind the refused request */
        }
        while (s->pending && *budget) {
            if (uzura_rp_hold(core, qp)) {
                return;         /* paced: the rate limiter's timer calls */
            }
            uzura_resp_answer(core, qp, s);
            (*budget)--;
            if (qp->attr.state == UZ_QPS_ERR || x->resp.answer_fault_wait) {
                return;
            }
        }
        if (s->pending) {
            return;
        }
    }
    if (x->resp.err_owed) {
        uzura_resp_fail(core, qp);
        return;
    }
    if (x->resp.ack_owed) {
        x->resp.ack_owed = false;
        uzura_resp_ack(core, qp, UZ_AETH_ACK | 0x1f, x->resp.epsn - 1);
    }
}

/* INIT -> RTR: the receive side starts at rq_psn. */
void uzura_resp_init(UzuraCore *core, UzuraQp *qp)
{
    UzuraXfer *x = qp->x;

    x->resp.epsn = qp->attr.rq_psn;
    x->resp.msn = 0;
    x->resp.nak_seq_sent = false;
    x->resp.uc_drop = false;
    x->resp.ack_owed = false;
    x->resp.in_msg = 0;
    x->resp.have_rwqe = false;
    x->resp.rwqe_failed = false;
    x->resp.tm_kind = UZ_TMK_NONE;
    x->resp.xrc_srqn = UZ_NO_SRQ;
    x->resp.answer_fault_wait = false;
    x->resp.err_owed = false;
    x->resp.rd_head = 0;
    memset(x->resp.rd, 0, core->rdma.lim.max_qp_rd_atom * sizeof(*x->resp.rd));
    uzura_sr_free(core, qp);
}
