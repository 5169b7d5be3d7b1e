/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uzura RDMA NIC: the requester: send queue processing, segmentation, and
 * the completer that matches ACKs, NAKs and responses to WQEs.
 *
 * The requester sends messages, kept in PSN order in a ring of small
 * records (PSN range, status, and where the message came from): one per
 * SQ WQE, plus those of the sources no SQ WQE stands for, which join the
 * stream between SQ WQEs through the hooks of UzuraReqSource: tag
 * matching's rendezvous READs and FINs (uzura-tm.c) and matched
 * conditional RDMA writes (uzura-crw.c).  A message is loaded from its
 * source when it starts and again on retransmission: an SQ WQE stays in
 * host memory until it completes.  Reliability is go-back-N: an ACK
 * timeout, a sequence NAK or a missing READ response rewinds the send
 * position to the oldest unacknowledged message, and the responder
 * answers duplicates.  Completions are written in message order, which
 * is SQ order for everything but CRWs.
 */
#include "qemu/osdep.h"
#include "qemu/main-loop.h"
#include "qemu/timer.h"
#include "uzura-core.h"
#include "trace.h"

static UzuraSwqe *uzura_msg(UzuraQp *qp, uint32_t m)
{
    return &qp->x->req.msg[m & qp->x->req.msg_mask];
}

static uint32_t uzura_next(uint32_t idx)
{
    return (idx + 1) & UZ_IDX_MASK;
}

/* The sources asked before the SQ, in this order. */
static const UzuraReqSource *const uzura_req_sources[UZ_REQ_SRC_NUM] = {
    [UZ_REQ_SRC_RNDV] = &uzura_tm_rndv_source,
    [UZ_REQ_SRC_CRW] = &uzura_crw_source,
};

static uint32_t uzura_req_mtu(UzuraCore *core, UzuraQp *qp)
{
    return 128u << (uzura_qp_is_ud(qp) ? uzura_qp_active_mtu(core) :
                                        qp->attr.path_mtu);
}

/* The requests the responder answers, and that take its READ slots. */
static bool uzura_wr_is_rd_atomic(uint8_t op)
{
    return op == UZ_WR_RDMA_READ || op == UZ_WR_ATOMIC_CMP_SWP ||
           op == UZ_WR_ATOMIC_FETCH_ADD || op == UZ_WR_FLUSH ||
           op == UZ_WR_ATOMIC_WRITE;
}

/* Answered by a READ response of no bytes (IBA 1.5). */
static bool uzura_wr_is_placement(uint8_t op)
{
    return op == UZ_WR_FLUSH || op == UZ_WR_ATOMIC_WRITE;
}

/* Started and not yet completed messages, or a partly sent one. */
static bool uzura_req_outstanding(UzuraQp *qp)
{
    return qp->x->req.oldest != qp->x->req.next || qp->x->req.cur_active;
}

/* Read send WQE @idx from the ring and decode it (format checks only). */
static uint8_t uzura_sq_load(UzuraCore *core, UzuraQp *qp, uint32_t idx,
                             UzuraSendWr *wr)
{
    uint32_t size = 1u << qp->sq_log_wqe_size, i;
    uint64_t addr = qp->sq_addr +
                    ((uint64_t)(idx & ((1u << qp->sq_log_depth) - 1)) <<
                     qp->sq_log_wqe_size);
    uint8_t buf[512];
    struct uz_send_wqe *h = &wr->h;
    uint32_t off = sizeof(*h);

    if (!uzura_dma_read(core, addr, buf, size)) {
        memset(h, 0, sizeof(*h));
        return UZ_VERR_DMA;
    }
    memcpy(h, buf, sizeof(*h));
    h->wr_id = le64_to_cpu(h->wr_id);
    h->inline_len = le32_to_cpu(h->inline_len);
    h->rkey = le32_to_cpu(h->rkey);
    h->remote_addr = le64_to_cpu(h->remote_addr);
    h->xrc_srqn = le32_to_cpu(h->xrc_srqn);
    /* The union, as the QP type and opcode say. */
    if (uzura_qp_is_ud(qp)) {
        h->ud.ahn = le32_to_cpu(h->ud.ahn);
        h->ud.remote_qpn = le32_to_cpu(h->ud.remote_qpn);
        h->ud.remote_qkey = le32_to_cpu(h->ud.remote_qkey);
    } else if (h->opcode == UZ_WR_CRW || h->opcode == UZ_WR_STCRW) {
        h->crw.tag = le64_to_cpu(h->crw.tag);
        h->crw.length = le32_to_cpu(h->crw.length);
    } else if (h->opcode == UZ_WR_BIND_MW) {
        h->bind.length = le64_to_cpu(h->bind.length);
        h->bind.access = le32_to_cpu(h->bind.access);
        h->bind.mr_key = le32_to_cpu(h->bind.mr_key);
    } else if (h->opcode == UZ_WR_REG_MR) {
        h->reg.length = le64_to_cpu(h->reg.length);
        h->reg.access = le32_to_cpu(h->reg.access);
        h->reg.npages = le16_to_cpu(h->reg.npages);
    } else if (h->opcode == UZ_WR_FLUSH) {
        h->flush.length = le64_to_cpu(h->flush.length);
    } else {
        h->atomic.compare_add = le64_to_cpu(h->atomic.compare_add);
        h->atomic.swap = le64_to_cpu(h->atomic.swap);
    }
    wr->sgl.num = 0;
    wr->sgl.len = 0;
    if (uzura_qp_is_ud(qp) && (h->flags & UZ_WQE_F_AV)) {
        if (off + sizeof(wr->av) > size) {
            return UZ_VERR_BAD_WQE;
        }
        memcpy(&wr->av, buf + off, sizeof(wr->av));
        off += sizeof(wr->av);
    }
    if (h->flags & UZ_WQE_F_INLINE) {
        if (h->num_sge || h->inline_len > core->rdma.lim.max_inline ||
            h->inline_len > size - off) {
            return UZ_VERR_BAD_WQE;
        }
        memcpy(wr->inl, buf + off, h->inline_len);
        wr->len = h->inline_len;
        return UZ_VERR_NONE;
    }
    if (h->num_sge > core->rdma.lim.max_sge ||
        off + h->num_sge * sizeof(struct uz_sge) > size) {
        return UZ_VERR_BAD_WQE;
    }
    for (i = 0; i < h->num_sge; i++) {
        const uint8_t *s = buf + off + i * sizeof(struct uz_sge);

        wr->sgl.sge[i].addr = ldq_le_p(s);
        wr->sgl.sge[i].length = ldl_le_p(s + 8);
        wr->sgl.sge[i].lkey = ldl_le_p(s + 12);
        wr->sgl.len += wr->sgl.sge[i].length;
    }
    wr->sgl.num = h->num_sge;
    wr->len = wr->sgl.len;
    return UZ_VERR_NONE;
}

/* Checks of a decoded WQE against the QP; returns a UZ_WC_STATUS_*. */
static uint8_t uzura_req_validate(UzuraCore *core, UzuraQp *qp,
                                  UzuraSendWr *wr, uint8_t *verr)
{
    const struct uz_send_wqe *h = &wr->h;
    bool inl = h->flags & UZ_WQE_F_INLINE;
    UzuraRdma *r = &core->rdma;

    *verr = UZ_VERR_BAD_WQE;
    if (uzura_qp_is_raw(qp)) {
        /* One whole frame a SEND (spec 8.18). */
        if (h->opcode != UZ_WR_SEND) {
            return UZ_WC_STATUS_LOC_QP_OP_ERR;
        }
        if (wr->len < UZ_ETH_HDR_LEN ||
            wr->len > UZ_ETH_FRAME_MAX(core->mtu)) {
            *verr = UZ_VERR_NONE;
            return UZ_WC_STATUS_LOC_LEN_ERR;
        }
    } else if (uzura_qp_is_ud(qp)) {
        if (h->opcode != UZ_WR_SEND && h->opcode != UZ_WR_SEND_IMM) {
            return UZ_WC_STATUS_LOC_QP_OP_ERR;
        }
        if (h->flags & UZ_WQE_F_AV) {
            /* A user QP names AHs the kernel checked; its own AV is not. */
            if (qp->uctx) {
                return UZ_WC_STATUS_LOC_QP_OP_ERR;
            }
        } else if (h->ud.ahn >= r->lim.max_ah || !r->ah[h->ud.ahn].valid ||
                   r->ah[h->ud.ahn].pdn != qp->pdn) {
            return UZ_WC_STATUS_LOC_QP_OP_ERR;
        } else {
            wr->av = r->ah[h->ud.ahn].av;
        }
        if (wr->len > uzura_req_mtu(core, qp)) {
            *verr = UZ_VERR_NONE;
            return UZ_WC_STATUS_LOC_LEN_ERR;
        }
    } else {
        /* UC: SENDs and WRITEs, nothing a responder answers (spec 9.8). */
        if (uzura_qp_is_uc(qp) && h->opcode != UZ_WR_SEND &&
            h->opcode != UZ_WR_SEND_IMM && h->opcode != UZ_WR_RDMA_WRITE &&
            h->opcode != UZ_WR_RDMA_WRITE_IMM) {
            return UZ_WC_STATUS_LOC_QP_OP_ERR;
        }
        /* XRC: no CRW, and neither windows nor fast-reg (spec 8.16). */
        if (qp->type == UZ_QPT_XRC_INI &&
            (h->opcode == UZ_WR_CRW || h->opcode == UZ_WR_STCRW ||
             h->opcode == UZ_WR_BIND_MW || h->opcode == UZ_WR_REG_MR)) {
            return UZ_WC_STATUS_LOC_QP_OP_ERR;
        }
        switch (h->opcode) {
        case UZ_WR_SEND:
        case UZ_WR_SEND_IMM:
        case UZ_WR_SEND_INV:
        case UZ_WR_RDMA_WRITE:
        case UZ_WR_RDMA_WRITE_IMM:
            break;
        case UZ_WR_RDMA_READ:
            if (inl) {
                return UZ_WC_STATUS_LOC_QP_OP_ERR;
            }
            break;
        case UZ_WR_ATOMIC_CMP_SWP:
        case UZ_WR_ATOMIC_FETCH_ADD:
            if (inl || (h->remote_addr & 7) || wr->sgl.num != 1 ||
                wr->sgl.sge[0].length != 8) {
                return UZ_WC_STATUS_LOC_QP_OP_ERR;
            }
            break;
        case UZ_WR_FLUSH:
            /* A RETH names at most 2^31 bytes; a whole MR, no range. */
            if (inl || wr->sgl.num ||
                !uzura_flush_valid(h->flush.type, h->flush.level) ||
                (h->flush.level == UZ_FLUSH_RANGE &&
                 h->flush.length > UZ_MAX_MSG)) {
                return UZ_WC_STATUS_LOC_QP_OP_ERR;
            }
            break;
        case UZ_WR_ATOMIC_WRITE:
            /* The 8 bytes are in the WQE. */
            if (inl || wr->sgl.num || (h->remote_addr & 7)) {
                return UZ_WC_STATUS_LOC_QP_OP_ERR;
            }
            break;
        case UZ_WR_CRW:
            break;
        case UZ_WR_STCRW:
        case UZ_WR_LOCAL_INV:
        case UZ_WR_REG_MR:
        case UZ_WR_BIND_MW:
            /* A buffer's address, or a key: no data. */
            if (inl || wr->sgl.num) {
                return UZ_WC_STATUS_LOC_QP_OP_ERR;
            }
            break;
        default:
            return UZ_WC_STATUS_LOC_QP_OP_ERR;
        }
        if (wr->len > UZ_MAX_MSG ||
            wr->len > (uint64_t)uzura_req_mtu(core, qp) *
                      (UZ_PSN_OUT_MAX - 1)) {
            *verr = UZ_VERR_NONE;
            return UZ_WC_STATUS_LOC_LEN_ERR;
        }
    }
    *verr = uzura_sgl_check(core, &wr->sgl, qp->pdn,
                            uzura_wr_is_rd_atomic(h->opcode) ?
                            UZ_ACCESS_LOCAL_WRITE : 0);
    return *verr ? UZ_WC_STATUS_LOC_PROT_ERR : UZ_WC_STATUS_SUCCESS;
}

/* The QP's ACK timeout, 4.096 us * 2^timeout, at most ack-timeout-max-us. */
static int64_t uzura_req_full_timeout(UzuraQp *qp)
{
    UzuraRdma *r = &qp->x->core->rdma;
    int64_t ns = 4096ll << qp->attr.timeout;

    if (r->ack_timeout_max_us) {
        ns = MIN(ns, (int64_t)r->ack_timeout_max_us * SCALE_US);
    }
    return ns;
}

/*
 * recovery=sr's RTO_low, for when few packets are in flight (IRN's: with
 * few packets after a loss, no SACK may come): RFC 6298's SRTT + 4 *
 * RTTVAR from the round trips measured, at least sr-rto-low-us, doubled
 * at each of its timeouts since the last progress, at most the QP's.
 */
static int64_t uzura_req_rto_low(UzuraQp *qp)
{
    UzuraXfer *x = qp->x;
    int64_t rto = MAX((int64_t)x->core->rdma.sr_rto_low_us * SCALE_US,
                      x->comp.srtt_ns + 4 * x->comp.rttvar_ns);

    return MIN(rto << x->comp.rto_shift, uzura_req_full_timeout(qp));
}

/*
 * A round trip of @r ns measured (Karn: never of a packet sent again),
 * at most the QP's timeout: an ACK held longer says nothing more.
 */
static void uzura_req_rtt(UzuraQp *qp, int64_t r)
{
    UzuraXfer *x = qp->x;

    r = MIN(r, uzura_req_full_timeout(qp));
    if (!x->comp.srtt_ns) {
        x->comp.srtt_ns = MAX(r, 1);
        x->comp.rttvar_ns = r / 2;
    } else {
        x->comp.rttvar_ns = (3 * x->comp.rttvar_ns +
                             llabs(x->comp.srtt_ns - r)) / 4;
        x->comp.srtt_ns = MAX((7 * x->comp.srtt_ns + r) / 8, 1);
    }
    trace_uzura_sr_rtt(x->qpn, r, x->comp.srtt_ns, x->comp.rttvar_ns);
}

/*
 * The ACK timeout: the QP's (above), and with recovery=sr at most
 * RTO_low while few packets are in flight.
 */
static void uzura_req_arm_timer(UzuraQp *qp, bool restart)
{
    UzuraXfer *x = qp->x;
    UzuraRdma *r = &x->core->rdma;
    int64_t ns;

    if (!qp->attr.timeout || x->comp.rnr_wait ||
        (!restart && timer_pending(x->timer))) {
        return;
    }
    ns = uzura_req_full_timeout(qp);
    if (r->recovery == UZ_RECOVERY_SR && r->sr_rto_low_us &&
        uzura_psn_diff(x->req.end_psn, x->comp.acked_psn) - 1 <= UZ_SR_FEW) {
        ns = MIN(ns, uzura_req_rto_low(qp));
    }
    timer_mod(x->timer, qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL) + ns);
}

/*
 * A packet the QP's rate limiter held may go now (spec 9.1.2): an ACK
 * timeout pending runs again from it, since the time the QP waited on
 * its own limiter is no time an ACK was late.
 */
void uzura_req_paced(UzuraCore *core, UzuraXfer *x)
{
    UzuraQp *qp = uzura_qp_lookup(core, x->qpn);

    if (qp && qp->x == x && timer_pending(x->timer)) {
        uzura_req_arm_timer(qp, true);
    }
}

/* Progress: the retries start over (retry_cnt counts timeouts in a row). */
static void uzura_req_progress(UzuraQp *qp)
{
    qp->x->comp.retry_left = qp->attr.retry_cnt;
    qp->x->comp.progress_ns = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
    qp->x->comp.rto_shift = 0;
}

/* Go back N: send again from the oldest WQE not completed. */
static void uzura_req_rewind(UzuraCore *core, UzuraQp *qp)
{
    UzuraXfer *x = qp->x;

    if (!uzura_req_outstanding(qp)) {
        return;
    }
    x->req.next_psn = uzura_msg(qp, x->req.oldest)->first_psn;
    x->comp.rtt_on = false;          /* Karn: no sample across a resend */
    trace_uzura_req_rewind(x->qpn, uzura_msg(qp, x->req.oldest)->sq_idx,
                           x->req.next_psn);
    x->req.next = x->req.oldest;
    x->req.cur_active = false;
    x->req.blocked = false;
    x->comp.resend_left = 0;             /* all of it goes again anyway */
    uzura_work_schedule(core);
}

/*
 * Complete finished messages in PSN order, so SQ WQEs in SQ order; an
 * error ends in the error state.
 */
static void uzura_req_retire(UzuraCore *core, UzuraQp *qp)
{
    UzuraXfer *x = qp->x;
    bool progress = false;

    while (x->req.oldest != x->req.next) {
        UzuraSwqe *w = uzura_msg(qp, x->req.oldest);
        const UzuraReqSource *src = uzura_req_sources[w->src];

        if (!w->done) {
            if (uzura_wr_is_rd_atomic(w->opcode) ||
                uzura_psn_diff(w->first_psn + w->npkts - 1,
                               x->comp.acked_psn) > 0) {
                break;
            }
            w->done = true;
            w->status = UZ_WC_STATUS_SUCCESS;
        }
        if ((!src || !src->own_cqe) &&
            (w->status != UZ_WC_STATUS_SUCCESS || w->signaled)) {
            struct uz_cqe cqe = {
                .wr_id = cpu_to_le64(w->wr_id),
                .byte_len = cpu_to_le32(w->byte_len),
                .qpn = cpu_to_le32(x->qpn),
                .opcode = uzura_wr_to_wc(w->opcode),
                .status = w->status,
                .vendor_err = w->verr,
            };

            uzura_cq_post(core, qp->send_cqn, &cqe, false);
        }
        if (src) {
            src->retired(core, qp, w);
        }
        trace_uzura_req_complete(x->qpn, w->sq_idx, w->status);
        x->req.oldest = uzura_next(x->req.oldest);
        if (!src) {
            qp->sq_ci = uzura_next(qp->sq_ci);
        }
        if (w->park) {
            uzura_crw_unpin(qp, w->src_id);
        }
        if (w->status != UZ_WC_STATUS_SUCCESS) {
            uzura_qp_fail(core, qp, 0);     /* the CQE says it */
            return;
        }
        progress = true;
    }
    if (progress) {
        uzura_req_progress(qp);
        x->comp.rnr_left = qp->attr.rnr_retry;
        if (uzura_req_outstanding(qp)) {
            uzura_req_arm_timer(qp, true);
        } else if (!x->comp.rnr_wait) {
            timer_del(x->timer);
        }
        /* Room for READs and atomics, or a fence lifted. */
        uzura_work_schedule(core);
    }
}

/* End a started message with @status; it completes in order. */
static void uzura_req_finish(UzuraCore *core, UzuraQp *qp, UzuraSwqe *w,
                             uint8_t status, uint8_t verr)
{
    w->done = true;
    w->status = status;
    w->verr = verr;
    uzura_req_retire(core, qp);
}

/*
 * The message whose PSN range holds @psn, among those ever started and
 * not completed: a rewind or a message still being sent leaves some of
 * them at or after req.next, with their PSNs still valid.
 */
static UzuraSwqe *uzura_req_find(UzuraQp *qp, uint32_t psn, uint32_t *idx)
{
    uint32_t i;

    for (i = qp->x->req.oldest; i != qp->x->req.end; i = uzura_next(i)) {
        UzuraSwqe *w = uzura_msg(qp, i);

        if (uzura_psn_diff(psn, w->first_psn) >= 0 &&
            uzura_psn_diff(psn, w->first_psn + w->npkts) < 0) {
            *idx = i;
            return w;
        }
    }
    return NULL;
}

/* A message found at or after req.next ends now: count it as started. */
static void uzura_req_claim(UzuraQp *qp, uint32_t idx)
{
    UzuraXfer *x = qp->x;

    if (uzura_psn_diff(idx, x->req.next) >= 0) {
        UzuraSwqe *w = uzura_msg(qp, idx);

        x->req.cur_active = false;
        x->req.next = uzura_next(idx);
        x->req.next_psn = (w->first_psn + w->npkts) & UZ_PSN_MASK;
    }
}

/*
 * READs and atomics started from the oldest one not answered yet on,
 * that one included: those answered after it count too.  A responder
 * keeps the answers of its last max_dest_rd_atomic READs and atomics
 * only (rxe and uzura both keep a ring of them), so a READ or atomic
 * whose answer was lost can be sent again and answered only while no
 * more than that many were sent from it on.
 */
static uint32_t uzura_req_rd_out(UzuraQp *qp)
{
    uint32_t i, n = 0;

    for (i = qp->x->req.oldest; i != qp->x->req.next; i = uzura_next(i)) {
        UzuraSwqe *w = uzura_msg(qp, i);

        n += uzura_wr_is_rd_atomic(w->opcode) && (n || !w->done);
    }
    return n;
}

/*
 * The next new message: the oldest ready one of the first source that
 * has one, else the next SQ WQE (with an SQ shadow record, one the guest
 * posted there: uzura-shadow.c).  False when there is none.
 */
static bool uzura_req_next_new(UzuraCore *core, UzuraQp *qp, UzuraSwqe *m)
{
    UzuraXfer *x = qp->x;
    int32_t id;
    unsigned i;

    for (i = 0; i < UZ_REQ_SRC_NUM; i++) {
        const UzuraReqSource *src = uzura_req_sources[i];

        if (!src) {
            continue;           /* the SQ: asked last, below */
        }
        id = src->ready(qp);
        if (id >= 0) {
            *m = (UzuraSwqe) { .src = i, .src_id = id };
            src->describe(qp, id, m);
            return true;
        }
    }
    if (x->req.sq_next == qp->sq_pi &&
        (uzura_shadow_asked(qp) || !uzura_shadow_poll(core, qp))) {
        return false;
    }
    *m = (UzuraSwqe) {
        .src = UZ_REQ_SRC_SQ, .src_id = -1, .sq_idx = x->req.sq_next,
    };
    return true;
}

/*
 * Message @w's work request, from its source, in @wr: an SQ WQE is read
 * from the ring again.  Returns a UZ_WC_STATUS_*.
 */
static uint8_t uzura_req_load(UzuraCore *core, UzuraQp *qp,
                              const UzuraSwqe *w, UzuraSendWr *wr,
                              uint8_t *verr)
{
    const UzuraReqSource *src = uzura_req_sources[w->src];

    if (src) {
        return src->load(core, qp, w, wr, verr);
    }
    *verr = uzura_sq_load(core, qp, w->sq_idx, wr);
    return *verr ? UZ_WC_STATUS_LOC_QP_OP_ERR : UZ_WC_STATUS_SUCCESS;
}

/*
 * (Re)start message req.next.  One started before a rewind is sent again
 * from the same source; a new one is the next of uzura_req_next_new().
 * A CRW WQE is parked and sends nothing (cur_active stays false).
 * False when it must wait, or failed.
 */
static bool uzura_req_start(UzuraCore *core, UzuraQp *qp)
{
    UzuraXfer *x = qp->x;
    UzuraSendWr *wr = &x->req.cur;
    UzuraSwqe *w = uzura_msg(qp, x->req.next);
    bool resend = x->req.next != x->req.end;
    uint32_t mtu = uzura_req_mtu(core, qp);
    UzuraSwqe m;                /* the message's source and description */
    uint8_t status, verr;

    if (resend) {
        m = *w;
    } else if (qp->attr.state != UZ_QPS_RTS) {
        return false;           /* SQD starts nothing new */
    } else if (uzura_psn_diff(x->req.next_psn, x->comp.acked_psn) >
               UZ_PSN_OUT_MAX) {
        return false;           /* PSN comparisons hold within 2^23 */
    } else if (!uzura_req_next_new(core, qp, &m)) {
        return false;
    }
    status = uzura_req_load(core, qp, &m, wr, &verr);
    if (m.src == UZ_REQ_SRC_SQ) {
        if (status == UZ_WC_STATUS_SUCCESS) {
            status = uzura_req_validate(core, qp, wr, &verr);
        }
        m.opcode = wr->h.opcode;
        m.signaled = (wr->h.flags & UZ_WQE_F_SIGNALED) ||
                     (qp->flags & UZ_QPF_SIG_ALL);
    }
    if (status == UZ_WC_STATUS_SUCCESS &&
        ((wr->h.flags & UZ_WQE_F_FENCE) ||
         uzura_wr_is_rd_atomic(wr->h.opcode))) {
        uint32_t rd_out = uzura_req_rd_out(qp);

        /* Fences wait for READs and atomics; those for a free slot. */
        if (((wr->h.flags & UZ_WQE_F_FENCE) && rd_out) ||
            (uzura_wr_is_rd_atomic(wr->h.opcode) &&
             rd_out >= MAX(qp->attr.max_rd_atomic, 1))) {
            return false;
        }
    }
    /*
     * LOCAL_INV waits for every earlier message to complete: one sent
     * again must still reach the memory it named.
     */
    if (status == UZ_WC_STATUS_SUCCESS && !resend &&
        wr->h.opcode == UZ_WR_LOCAL_INV && x->req.oldest != x->req.next) {
        return false;
    }
    *w = (UzuraSwqe) {
        .wr_id = wr->h.wr_id, .opcode = m.opcode, .sq_idx = m.sq_idx,
        .seq = resend ? m.seq : ++x->req.started,
        .src = m.src, .src_id = m.src_id, .first_psn = x->req.next_psn,
        .byte_len = wr->len, .signaled = m.signaled,
        /* A READ sent again keeps the response packets it has. */
        .resp_got = m.resp_got, .resp_bits = m.resp_bits,
        .resp_from = m.resp_got,
    };
    if (!resend) {
        x->req.end = uzura_next(x->req.end);
        if (m.src == UZ_REQ_SRC_SQ) {
            x->req.sq_next = uzura_next(x->req.sq_next);
        } else {
            uzura_req_sources[m.src]->take(qp, m.src_id);
        }
    }
    trace_uzura_req_start(x->qpn, w->sq_idx, w->opcode, wr->len,
                          x->req.next_psn);
    if (status == UZ_WC_STATUS_SUCCESS &&
        (w->opcode == UZ_WR_REG_MR || w->opcode == UZ_WR_LOCAL_INV ||
         w->opcode == UZ_WR_BIND_MW)) {
        /* Local: done now, no packets; completes in order. */
        status = uzura_fastreg_exec(core, qp, &wr->h, &verr);
        if (status == UZ_WC_STATUS_SUCCESS) {
            w->byte_len = 0;
            x->req.next = uzura_next(x->req.next);
            uzura_req_finish(core, qp, w, status, UZ_VERR_NONE);
            return true;
        }
    }
    if (status == UZ_WC_STATUS_SUCCESS && w->src == UZ_REQ_SRC_SQ &&
        w->opcode == UZ_WR_CRW) {
        /*
         * Parked: the SQ WQE is done (no CQE of its own), later WQEs go
         * on, and the CRW completes when its write does.
         */
        status = uzura_crw_park(core, qp, wr, w->sq_idx, w->signaled,
                                &w->src_id, &verr);
        if (status == UZ_WC_STATUS_SUCCESS) {
            w->park = true;
            w->signaled = false;
            w->byte_len = 0;
            x->req.next = uzura_next(x->req.next);
            uzura_req_finish(core, qp, w, status, UZ_VERR_NONE);
            return true;
        }
    }
    if (status != UZ_WC_STATUS_SUCCESS) {
        uzura_guest_error(trace_uzura_req_err_wqe(x->qpn, w->sq_idx, status,
                                                  verr),
                          "QP %u: send WQE %u fails: status %u, detail %u",
                          x->qpn, w->sq_idx, status, verr);
        x->req.next = uzura_next(x->req.next);
        x->req.blocked = true;
        uzura_req_finish(core, qp, w, status, verr);
        return false;
    }
    if (wr->h.opcode == UZ_WR_ATOMIC_CMP_SWP ||
        wr->h.opcode == UZ_WR_ATOMIC_FETCH_ADD ||
        wr->h.opcode == UZ_WR_ATOMIC_WRITE) {
        w->npkts = 1;
        w->byte_len = 8;
    } else if (wr->h.opcode == UZ_WR_STCRW || wr->h.opcode == UZ_WR_FLUSH ||
               uzura_qp_is_raw(qp)) {
        w->npkts = 1;
    } else {
        w->npkts = MAX(DIV_ROUND_UP(wr->len, mtu), 1);
    }
    x->req.cur_active = true;
    x->req.cur_off = 0;
    return true;
}

/* Where a packet's payload comes from: a WQE, from an offset. */
typedef struct UzuraPayloadSrc {
    UzuraQp *qp;
    const UzuraSendWr *wr;
    uint32_t off;
} UzuraPayloadSrc;

static bool uzura_req_gather(UzuraCore *core, void *opaque, uint8_t *dst,
                             uint32_t len, UzuraTxMap *m, uint8_t *verr)
{
    UzuraPayloadSrc *src = opaque;

    if (src->wr->h.flags & UZ_WQE_F_INLINE) {
        memcpy(dst, src->wr->inl + src->off, len);
        if (m) {
            uzura_tx_add(m, dst, len, false);
        }
        return true;
    }
    *verr = uzura_sgl_read_tx(core, &src->wr->sgl, src->qp->pdn, src->off,
                              dst, len, m);
    return *verr == UZ_VERR_NONE;
}

/* Message position to opcode: [only, first, middle, last], plain/imm. */
static uint8_t uzura_req_opcode(uint8_t wr_op, bool first, bool last)
{
    static const uint8_t send[3][4] = {
        { UZ_BTH_OP_SEND_ONLY, UZ_BTH_OP_SEND_FIRST, UZ_BTH_OP_SEND_MIDDLE,
          UZ_BTH_OP_SEND_LAST },
        { UZ_BTH_OP_SEND_ONLY_IMM, UZ_BTH_OP_SEND_FIRST,
          UZ_BTH_OP_SEND_MIDDLE, UZ_BTH_OP_SEND_LAST_IMM },
        { UZ_BTH_OP_SEND_ONLY_INV, UZ_BTH_OP_SEND_FIRST,
          UZ_BTH_OP_SEND_MIDDLE, UZ_BTH_OP_SEND_LAST_INV },
    };
    static const uint8_t write[2][4] = {
        { UZ_BTH_OP_WRITE_ONLY, UZ_BTH_OP_WRITE_FIRST,
          UZ_BTH_OP_WRITE_MIDDLE, UZ_BTH_OP_WRITE_LAST },
        { UZ_BTH_OP_WRITE_ONLY_IMM, UZ_BTH_OP_WRITE_FIRST,
          UZ_BTH_OP_WRITE_MIDDLE, UZ_BTH_OP_WRITE_LAST_IMM },
    };
    int pos = first && last ? 0 : first ? 1 : last ? 3 : 2;

    switch (wr_op) {
    case UZ_WR_SEND:
        return send[0][pos];
    case UZ_WR_SEND_IMM:
        return send[1][pos];
    case UZ_WR_SEND_INV:
        return send[2][pos];
    case UZ_WR_RDMA_WRITE:
        return write[0][pos];
    case UZ_WR_RDMA_WRITE_IMM:
        return write[1][pos];
    case UZ_WR_RDMA_READ:
        return UZ_BTH_OP_READ_REQ;
    case UZ_WR_ATOMIC_CMP_SWP:
        return UZ_BTH_OP_CMP_SWP;
    case UZ_WR_STCRW:
        return UZ_BTH_OP_RC_STCRW;
    case UZ_WR_FLUSH:
        return UZ_BTH_OP_FLUSH;
    case UZ_WR_ATOMIC_WRITE:
        return UZ_BTH_OP_ATOMIC_WRITE;
    default:
        return UZ_BTH_OP_FETCH_ADD;
    }
}

/*
 * Build and send the packet of message @wr that starts at byte @off, with
 * PSN @psn; @sent and @last say what it carried.  Returns the local
 * access error that stopped it, if any.
 */
static uint8_t uzura_req_emit(UzuraCore *core, UzuraQp *qp,
                              const UzuraSendWr *wr, uint32_t psn,
                              uint32_t off, uint32_t *sent, bool *plast)
{
    UzuraXfer *x = qp->x;
    const struct uz_send_wqe *h = &wr->h;
    uint32_t mtu = uzura_req_mtu(core, qp), n = 0;
    bool first = off == 0, last, data;
    UzuraPkt pkt = { .psn = psn };
    UzuraPayloadSrc src = { .qp = qp, .wr = wr, .off = off };

    if (uzura_qp_is_raw(qp)) {
        uint8_t verr = UZ_VERR_NONE;

        /* The frame as the WQE has it. */
        *sent = wr->len;
        *plast = true;
        if (!uzura_req_gather(core, &src, core->roce_frame, wr->len, NULL,
                              &verr)) {
            return verr;
        }
        uzura_raw_transmit(core, core->roce_frame, wr->len);
        return UZ_VERR_NONE;
    }
    data = !uzura_wr_is_rd_atomic(h->opcode) && h->opcode != UZ_WR_STCRW;
    if (data) {
        n = MIN(wr->len - off, mtu);
    }
    last = !data || off + n == wr->len;

    if (uzura_qp_is_ud(qp)) {
        const struct uz_av *av = &wr->av;

        uzura_roce_fill_av(&pkt, av->dmac, av->sgid, av->dgid,
                           av->hop_limit, av->traffic_class, x->qpn);
        pkt.opcode = h->opcode == UZ_WR_SEND_IMM ?
                     UZ_BTH_OP_UD_SEND_ONLY_IMM : UZ_BTH_OP_UD_SEND_ONLY;
        pkt.dqpn = h->ud.remote_qpn;
        /* A Q_Key with the high bit set means "the QP's own". */
        pkt.qkey = (h->ud.remote_qkey & 0x80000000u) ? qp->attr.qkey :
                                                       h->ud.remote_qkey;
        pkt.sqpn = x->qpn;
    } else {
        const struct uz_qp_attr *a = &qp->attr;

        uzura_roce_fill_av(&pkt, a->dmac, a->sgid, a->dgid, a->hop_limit,
                           a->traffic_class, x->qpn);
        pkt.opcode = uzura_req_opcode(h->opcode, first, last);
        pkt.dqpn = a->dest_qpn;
        /* XRC: RC's packets, for the SRQ the WQE names. */
        pkt.xrc = qp->type == UZ_QPT_XRC_INI;
        pkt.xrc_srqn = h->xrc_srqn;
        if (uzura_qp_is_uc(qp)) {
            /* The same SEND and WRITE packets, unanswered. */
            pkt.opcode |= UZ_BTH_OP_UC;
        } else {
            pkt.ack_req = last;
            pkt.sr = core->rdma.recovery == UZ_RECOVERY_SR;
        }
    }
    pkt.se = last && (h->flags & UZ_WQE_F_SOLICITED);
    /* The key to invalidate goes in the IETH, in network order. */
    pkt.imm = h->opcode == UZ_WR_SEND_INV ?
              cpu_to_be32(le32_to_cpu(h->imm_data)) : h->imm_data;
    pkt.va = h->remote_addr;
    pkt.rkey = h->rkey;
    pkt.dma_len = wr->len;
    if (h->opcode == UZ_WR_RDMA_READ) {
        /* Sent again: only the bytes not received, from @off (as rxe). */
        pkt.va += off;
        pkt.dma_len -= off;
    }
    pkt.swap_add = h->opcode == UZ_WR_ATOMIC_CMP_SWP ? h->atomic.swap :
                                                      h->atomic.compare_add;
    pkt.compare = h->atomic.compare_add;
    pkt.crw = (struct uz_crweth) {
        .tag = h->crw.tag, .va = h->remote_addr, .rkey = h->rkey,
        .length = h->crw.length,
    };
    pkt.paylen = n;
    *sent = n;
    *plast = last;
    if (h->opcode == UZ_WR_FLUSH) {
        pkt.dma_len = h->flush.level == UZ_FLUSH_RANGE ? h->flush.length : 0;
        pkt.flush_type = h->flush.type;
        pkt.flush_level = h->flush.level;
    } else if (h->opcode == UZ_WR_ATOMIC_WRITE) {
        uint64_t val = cpu_to_le64(h->atomic.compare_add);

        /* The bytes as the WQE holds them, from the WQE. */
        pkt.dma_len = pkt.paylen = sizeof(val);
        pkt.payload = (const uint8_t *)&val;
        return uzura_roce_send(core, &pkt, NULL, NULL);
    }
    return uzura_roce_send(core, &pkt, uzura_req_gather, &src);
}

/* Send the next packet of the current message. */
static void uzura_req_packet(UzuraCore *core, UzuraQp *qp)
{
    UzuraXfer *x = qp->x;
    const struct uz_send_wqe *h = &x->req.cur.h;
    UzuraSwqe *w = uzura_msg(qp, x->req.next);
    uint32_t psn = x->req.next_psn, off = x->req.cur_off, n;
    bool last;
    uint8_t verr;

    if (h->opcode == UZ_WR_RDMA_READ && w->resp_from) {
        /*
         * A READ sent again whose first packets came asks for the rest
         * only, at the PSN of the first missing one: a long READ on a
         * slow path would otherwise start over at every timeout.
         */
        psn = (psn + w->resp_from) & UZ_PSN_MASK;
        off = w->resp_from * uzura_req_mtu(core, qp);
    }
    verr = uzura_req_emit(core, qp, &x->req.cur, psn, off, &n, &last);
    if (verr == UZURA_VERR_FAULT) {
        /* Nothing went out: the packet goes when its page is mapped. */
        x->req.fault_wait = true;
        return;
    }
    if (verr) {
        /* The memory went away under a message in flight. */
        uzura_guest_error(trace_uzura_req_err_wqe(x->qpn, w->sq_idx,
                                                  UZ_WC_STATUS_LOC_PROT_ERR,
                                                  verr),
                          "QP %u: send WQE %u: local access failed (%u)",
                          x->qpn, w->sq_idx, verr);
        x->req.cur_active = false;
        x->req.next = uzura_next(x->req.next);
        x->req.blocked = true;
        uzura_req_finish(core, qp, w, UZ_WC_STATUS_LOC_PROT_ERR, verr);
        return;
    }
    uzura_rp_sent(core, qp, n + UZ_ROCE_FRAME_OVERHEAD);
    if (uzura_psn_diff(x->req.next_psn, x->req.end_psn) < 0) {
        core->counters.retransmits++;
    } else if (!x->comp.rtt_on && last && !uzura_wr_is_rd_atomic(h->opcode) &&
               core->rdma.recovery == UZ_RECOVERY_SR) {
        /* A message's last packet, sent for the first time: time its ACK. */
        x->comp.rtt_on = true;
        x->comp.rtt_psn = x->req.next_psn;
        x->comp.rtt_start = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
    }
    x->req.next_psn = (x->req.next_psn +
                       (h->opcode == UZ_WR_RDMA_READ ? w->npkts : 1)) &
                      UZ_PSN_MASK;
    if (uzura_psn_diff(x->req.next_psn, x->req.end_psn) > 0) {
        x->req.end_psn = x->req.next_psn;
    }
    x->req.cur_off += n;
    if (!last) {
        return;
    }
    x->req.cur_active = false;
    x->req.next = uzura_next(x->req.next);
    if (uzura_qp_is_ud(qp) || uzura_qp_is_uc(qp) || uzura_qp_is_raw(qp)) {
        /* Unreliable: done once on the wire. */
        uzura_req_finish(core, qp, w, UZ_WC_STATUS_SUCCESS, UZ_VERR_NONE);
    } else {
        uzura_req_arm_timer(qp, false);
    }
}

/*
 * The work request of message @idx, loaded again from its source (an SQ
 * WQE decoded again), kept in @c while the same message needs it (its
 * READ response packets, its packets a SACK asked for); NULL when the
 * source no longer gives a valid one.
 */
static UzuraSendWr *uzura_req_wqe_at(UzuraCore *core, UzuraQp *qp,
                                     UzuraWqeCache *c, uint32_t idx)
{
    UzuraSwqe *w = uzura_msg(qp, idx);
    uint8_t verr;

    if (!c->seq || c->seq != w->seq) {
        c->seq = 0;
        if (uzura_req_load(core, qp, w, &c->wr, &verr)) {
            return NULL;
        }
        c->seq = w->seq;
    }
    return &c->wr;
}

/*
 * Send again the next packet a SACK asked for, if it was sent before and
 * is not acknowledged; the stream of new packets goes on after it.
 */
static void uzura_req_resend(UzuraCore *core, UzuraQp *qp)
{
    UzuraXfer *x = qp->x;
    uint32_t psn = x->comp.resend_psn, idx, off = 0, n;
    const UzuraSendWr *wr;
    UzuraSwqe *w;
    bool last;

    x->comp.resend_psn = (psn + 1) & UZ_PSN_MASK;
    x->comp.resend_left--;
    if (uzura_psn_diff(psn, x->comp.acked_psn) <= 0 ||
        uzura_psn_diff(psn, x->req.end_psn) >= 0) {
        return;
    }
    w = uzura_req_find(qp, psn, &idx);
    if (!w || w->done || w->park) {
        return;
    }
    if (uzura_wr_is_rd_atomic(w->opcode) || w->opcode == UZ_WR_STCRW) {
        if (psn != w->first_psn) {
            return;             /* the PSNs of a READ's response */
        }
    } else {
        off = uzura_psn_diff(psn, w->first_psn) * uzura_req_mtu(core, qp);
    }
    wr = uzura_req_wqe_at(core, qp, &x->comp.resend, idx);
    if (!wr || off >= MAX(wr->len, 1)) {
        return;
    }
    core->counters.retransmits++;
    core->counters.sr_resent++;
    x->comp.rtt_on = false;          /* Karn: the ACK may come late for it */
    trace_uzura_sr_resend(x->qpn, psn);
    if (uzura_req_emit(core, qp, wr, psn, off, &n, &last)) {
        /* The memory went away: the packet path finds out in order. */
        x->comp.resend_left = 0;
        uzura_req_rewind(core, qp);
        return;
    }
    uzura_rp_sent(core, qp, n + UZ_ROCE_FRAME_OVERHEAD);
}

/* The send queue's part of the work bottom half. */
static void uzura_req_run(UzuraCore *core, UzuraQp *qp, unsigned *budget)
{
    UzuraXfer *x = qp->x;

    while (*budget && !x->comp.rnr_wait && !x->req.blocked &&
           !x->req.fault_wait && !x->req.rp_wait &&
           (qp->attr.state == UZ_QPS_RTS || qp->attr.state == UZ_QPS_SQD)) {
        UzuraSwqe *w = uzura_msg(qp, x->req.next);

        /* What a SACK asked for goes before anything new. */
        if (x->comp.resend_left) {
            if (uzura_rp_hold(core, qp)) {
                return;         /* paced: the rate limiter's timer calls */
            }
            uzura_req_resend(core, qp);
            (*budget)--;
            continue;
        }
        if (!x->req.cur_active && x->req.next != x->req.end && w->done) {
            x->req.next = uzura_next(x->req.next);
            if (w->status != UZ_WC_STATUS_SUCCESS) {
                /* Failed before the rewind: it waits for its turn. */
                x->req.blocked = true;
                uzura_req_retire(core, qp);
                return;
            }
            /* Answered after a rewind (or parked): nothing to resend. */
            x->req.next_psn = (w->first_psn + w->npkts) & UZ_PSN_MASK;
            uzura_req_retire(core, qp);
            continue;
        }
        if (!x->req.cur_active) {
            /* SQD starts nothing new, but resends what it started. */
            if (!uzura_req_start(core, qp)) {
                return;
            }
            if (!x->req.cur_active) {
                /*
                 * A CRW parked or a local WQE done: a share of the turn
                 * too, or a guest re-posting them through a shadow record
                 * would keep the device here.
                 */
                (*budget)--;
                continue;
            }
        }
        if (uzura_rp_hold(core, qp)) {
            return;
        }
        uzura_req_packet(core, qp);
        (*budget)--;
    }
}

/*
 * With an SQ shadow record (uzura-shadow.c), whether the device may stop
 * running the QP.  While an ACK, a response, a timer or an ODP resume is
 * due, or the budget left the rest to the bottom half, the device comes
 * back and reads the record then; otherwise it asks for the doorbell.
 * False when new WQEs came in meanwhile.
 */
static bool uzura_req_settle(UzuraCore *core, UzuraQp *qp, unsigned budget)
{
    UzuraXfer *x = qp->x;
    bool sending = qp->attr.state == UZ_QPS_RTS ||
                   qp->attr.state == UZ_QPS_SQD;

    if (!(qp->flags & UZ_QPF_SQ_SHADOW) || !budget) {
        return true;
    }
    if (sending && (uzura_req_outstanding(qp) || x->comp.rnr_wait ||
                    x->req.fault_wait || x->comp.resend_left ||
                    x->req.rp_wait)) {
        return true;
    }
    /* Not sending: the next turn or the doorbell takes what came. */
    return uzura_shadow_idle(core, qp) || !sending;
}

void uzura_req_work(UzuraCore *core, UzuraQp *qp, unsigned *budget)
{
    do {
        uzura_req_run(core, qp, budget);
    } while (!uzura_req_settle(core, qp, *budget));
}

/* A cumulative ACK up to @psn. */
static void uzura_req_ack(UzuraCore *core, UzuraQp *qp, uint32_t psn)
{
    UzuraXfer *x = qp->x;

    if (uzura_psn_diff(psn, x->comp.acked_psn) > 0) {
        x->comp.acked_psn = psn & UZ_PSN_MASK;
        uzura_req_progress(qp);
        if (x->comp.rtt_on && uzura_psn_diff(psn, x->comp.rtt_psn) >= 0) {
            uzura_req_rtt(qp, qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL) -
                              x->comp.rtt_start);
            x->comp.rtt_on = false;
        }
    }
    uzura_req_retire(core, qp);
}

/*
 * A SACK (recovery=sr): everything before its PSN arrived, and the
 * responder keeps what came after the hole it names; send the hole
 * again.  A SACK while another is still being served widens the range.
 */
static void uzura_req_sack(UzuraCore *core, UzuraQp *qp, const UzuraPkt *pkt)
{
    UzuraXfer *x = qp->x;
    uint32_t lo = pkt->sack.missing_psn;
    uint32_t end = lo + MIN(pkt->sack.count, UZ_SR_WINDOW);
    int32_t d;

    core->counters.sacks_rcvd++;
    uzura_req_ack(core, qp, pkt->psn);
    if (qp->attr.state == UZ_QPS_ERR || !pkt->sack.count) {
        return;
    }
    if (x->comp.resend_left) {
        if (uzura_psn_diff(x->comp.resend_psn, lo) < 0) {
            lo = x->comp.resend_psn;
        }
        if (uzura_psn_diff(x->comp.resend_psn + x->comp.resend_left,
                           end) > 0) {
            end = x->comp.resend_psn + x->comp.resend_left;
        }
    }
    /* Not before what is acknowledged, nor past what was ever sent. */
    if (uzura_psn_diff(lo, x->comp.acked_psn) <= 0) {
        lo = x->comp.acked_psn + 1;
    }
    if (uzura_psn_diff(end, x->req.end_psn) > 0) {
        end = x->req.end_psn;
    }
    d = uzura_psn_diff(end, lo);
    if (d <= 0) {
        return;
    }
    x->comp.resend_psn = lo & UZ_PSN_MASK;
    x->comp.resend_left = MIN(d, 2 * UZ_SR_WINDOW);
    uzura_work_schedule(core);
}

/* RNR timer values of the IB encoding, in microseconds. */
static const uint32_t uzura_rnr_us[32] = {
    655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960,
    1280, 1920, 2560, 3840, 5120, 7680, 10240, 15360, 20480, 30720,
    40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520,
};

static void uzura_req_nak(UzuraCore *core, UzuraQp *qp, const UzuraPkt *pkt)
{
    UzuraXfer *x = qp->x;
    uint8_t syn = pkt->syndrome;
    UzuraSwqe *w;
    uint32_t idx;

    uzura_req_ack(core, qp, pkt->psn - 1);
    if (qp->attr.state == UZ_QPS_ERR) {
        return;
    }
    if ((syn & UZ_AETH_TYPE_MASK) == UZ_AETH_RNR_NAK) {
        core->counters.rnr_naks_rcvd++;
        w = uzura_req_find(qp, pkt->psn, &idx);
        if (!w || w->done) {
            return;
        }
        if (qp->attr.rnr_retry != 7) {
            if (!x->comp.rnr_left) {
                uzura_req_finish(core, qp, w, UZ_WC_STATUS_RNR_RETRY_EXC_ERR,
                                 UZ_VERR_NONE);
                return;
            }
            x->comp.rnr_left--;
        }
        uzura_req_rewind(core, qp);
        x->comp.rnr_wait = true;
        timer_mod(x->timer, qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL) +
                  uzura_rnr_us[syn & 0x1f] * SCALE_US);
        return;
    }
    core->counters.naks_rcvd++;
    if (syn == UZ_AETH_NAK_SEQ) {
        core->counters.nak_seq_rcvd++;
        uzura_req_rewind(core, qp);
        return;
    }
    w = uzura_req_find(qp, pkt->psn, &idx);
    if (!w || w->done) {
        core->counters.rx_stale++;
        return;
    }
    uzura_req_claim(qp, idx);
    switch (syn) {
    case UZ_AETH_NAK_INV_REQ:
        core->counters.nak_inv_req_rcvd++;
        uzura_req_finish(core, qp, w, UZ_WC_STATUS_REM_INV_REQ_ERR, 0);
        break;
    case UZ_AETH_NAK_REM_ACCESS:
        core->counters.nak_rem_access_rcvd++;
        uzura_req_finish(core, qp, w, UZ_WC_STATUS_REM_ACCESS_ERR, 0);
        break;
    default:
        core->counters.nak_rem_op_rcvd++;
        uzura_req_finish(core, qp, w, UZ_WC_STATUS_REM_OP_ERR, 0);
        break;
    }
}

/*
 * A READ response packet.  Packets may come out of order (a hub, a
 * fault): each lands at its own offset, and a window of 64 packets past
 * the first missing one remembers what arrived.  One beyond the window
 * means packets were lost: ask again.
 */
static void uzura_req_read_resp(UzuraCore *core, UzuraQp *qp,
                                const UzuraPkt *pkt, UzuraSwqe *w,
                                uint32_t idx)
{
    uint16_t h = uzura_ops[pkt->opcode].hdrs;
    uint32_t mtu = uzura_req_mtu(core, qp);
    uint32_t k = uzura_psn_diff(pkt->psn, w->first_psn);
    uint32_t off = k * mtu, expect_len = MIN(w->byte_len - off, mtu);
    UzuraSendWr *wr;
    uint8_t verr;

    if (k < w->resp_got) {
        core->counters.rx_stale++;      /* a duplicate */
        return;
    }
    /* The window first: a shift by 64 or more is undefined. */
    if (k - w->resp_got >= 64) {
        core->counters.rx_stale++;
        uzura_req_rewind(core, qp);
        return;
    }
    if ((w->resp_bits >> (k - w->resp_got)) & 1) {
        core->counters.rx_stale++;      /* a duplicate */
        return;
    }
    /* An answer to the rest only begins at the packet it asked from. */
    if (((h & UZ_H_FIRST) ? k != 0 && k != w->resp_from : k == 0) ||
        !!(h & UZ_H_LAST) != (k + 1 == w->npkts) ||
        pkt->paylen != expect_len) {
        uzura_guest_error(trace_uzura_req_err_resp(qp->x->qpn, pkt->psn,
                                                   pkt->opcode),
                          "QP %u: READ response at PSN %u does not fit",
                          qp->x->qpn, pkt->psn);
        uzura_req_claim(qp, idx);
        uzura_req_finish(core, qp, w, UZ_WC_STATUS_BAD_RESP_ERR, 0);
        return;
    }
    wr = uzura_req_wqe_at(core, qp, &qp->x->comp.answer, idx);
    verr = !wr ? UZ_VERR_DMA :
           uzura_sgl_copy(core, &wr->sgl, qp->pdn, off, (void *)pkt->payload,
                          pkt->paylen, true);
    if (verr == UZURA_VERR_FAULT) {
        /* Dropped: the READ goes again once the page is mapped. */
        qp->x->req.fault_wait = qp->x->req.fault_rewind = true;
        return;
    }
    if (verr) {
        uzura_req_claim(qp, idx);
        uzura_req_finish(core, qp, w, UZ_WC_STATUS_LOC_PROT_ERR, verr);
        return;
    }
    w->resp_bits |= 1ull << (k - w->resp_got);
    while (w->resp_bits & 1) {
        w->resp_bits >>= 1;
        w->resp_got++;
    }
    uzura_req_progress(qp);     /* a packet not received before */
    if (w->resp_got == w->npkts) {
        uzura_req_finish(core, qp, w, UZ_WC_STATUS_SUCCESS, UZ_VERR_NONE);
    } else {
        uzura_req_arm_timer(qp, true);
    }
}

static void uzura_req_atomic_resp(UzuraCore *core, UzuraQp *qp,
                                  const UzuraPkt *pkt, UzuraSwqe *w,
                                  uint32_t idx)
{
    UzuraSendWr *wr = uzura_req_wqe_at(core, qp, &qp->x->comp.answer, idx);
    uint64_t orig = cpu_to_le64(pkt->orig);
    uint8_t verr;

    verr = !wr ? UZ_VERR_DMA :
           uzura_sgl_copy(core, &wr->sgl, qp->pdn, 0, &orig, 8, true);
    if (verr == UZURA_VERR_FAULT) {
        /*
         * Dropped: the atomic goes again once the page is mapped, and the
         * responder answers the duplicate from its saved result.
         */
        qp->x->req.fault_wait = qp->x->req.fault_rewind = true;
        return;
    }
    uzura_req_finish(core, qp, w, verr ? UZ_WC_STATUS_LOC_PROT_ERR :
                                         UZ_WC_STATUS_SUCCESS, verr);
}

/* A FLUSH or ATOMIC WRITE is done when its READ response of no bytes is. */
static void uzura_req_placement_resp(UzuraCore *core, UzuraQp *qp,
                                     const UzuraPkt *pkt, UzuraSwqe *w,
                                     uint32_t idx)
{
    if (pkt->opcode != UZ_BTH_OP_READ_RESP_ONLY || pkt->paylen) {
        uzura_guest_error(trace_uzura_req_err_resp(qp->x->qpn, pkt->psn,
                                                   pkt->opcode),
                          "QP %u: response at PSN %u is no answer to a "
                          "FLUSH or ATOMIC WRITE", qp->x->qpn, pkt->psn);
        uzura_req_claim(qp, idx);
        uzura_req_finish(core, qp, w, UZ_WC_STATUS_BAD_RESP_ERR, 0);
        return;
    }
    uzura_req_finish(core, qp, w, UZ_WC_STATUS_SUCCESS, UZ_VERR_NONE);
}

/* An ACK, NAK, READ response or atomic ACK for this requester. */
void uzura_req_response(UzuraCore *core, UzuraQp *qp, const UzuraPkt *pkt)
{
    UzuraXfer *x = qp->x;
    UzuraSwqe *w;
    uint32_t idx;

    /* Nothing we sent has this PSN: a stray. */
    if (uzura_psn_diff(pkt->psn, x->req.end_psn) >= 0) {
        core->counters.rx_stale++;
        return;
    }
    if (pkt->opcode == UZ_BTH_OP_RC_SACK) {
        uzura_req_sack(core, qp, pkt);
        return;
    }
    if (pkt->opcode == UZ_BTH_OP_ACK) {
        if ((pkt->syndrome & UZ_AETH_TYPE_MASK) == UZ_AETH_ACK) {
            uzura_req_ack(core, qp, pkt->psn);
        } else {
            uzura_req_nak(core, qp, pkt);
        }
        return;
    }
    /* A response acknowledges every request before it. */
    uzura_req_ack(core, qp, pkt->psn - 1);
    if (qp->attr.state == UZ_QPS_ERR) {
        return;
    }
    w = uzura_req_find(qp, pkt->psn, &idx);
    if (!w || w->done || !uzura_wr_is_rd_atomic(w->opcode) ||
        (pkt->opcode == UZ_BTH_OP_ATOMIC_ACK) !=
        (w->opcode == UZ_WR_ATOMIC_CMP_SWP ||
         w->opcode == UZ_WR_ATOMIC_FETCH_ADD)) {
        core->counters.rx_stale++;
        return;
    }
    if (pkt->opcode == UZ_BTH_OP_ATOMIC_ACK) {
        uzura_req_atomic_resp(core, qp, pkt, w, idx);
    } else if (uzura_wr_is_placement(w->opcode)) {
        uzura_req_placement_resp(core, qp, pkt, w, idx);
    } else {
        uzura_req_read_resp(core, qp, pkt, w, idx);
    }
}

/* ACK timeout, or the end of an RNR wait. */
static void uzura_req_timeout(UzuraCore *core, UzuraXfer *x)
{
    UzuraQp *qp = uzura_qp_lookup(core, x->qpn);
    UzuraSwqe *w;

    if (!qp || qp->x != x || qp->attr.state == UZ_QPS_ERR) {
        return;
    }
    if (x->comp.rnr_wait) {
        x->comp.rnr_wait = false;
        uzura_work_schedule(core);
        return;
    }
    if (!uzura_req_outstanding(qp)) {
        return;
    }
    /*
     * Waiting for an ODP page is no lost packet: no retry is used, and
     * the timer starts again (the resume rewinds if a response was
     * dropped).
     */
    if (x->req.fault_wait) {
        uzura_req_progress(qp);
        uzura_req_arm_timer(qp, true);
        return;
    }
    core->counters.retry_timeouts++;
    trace_uzura_req_timeout(x->qpn, uzura_msg(qp, x->req.oldest)->sq_idx,
                            x->comp.retry_left);
    /*
     * A short timeout (sr-rto-low-us) may fire before an ACK that is only
     * late: it sends again, but uses a retry only once the QP's whole
     * timeout has passed without progress, so retry_cnt keeps IB's
     * meaning.
     */
    if (core->rdma.recovery == UZ_RECOVERY_SR &&
        qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL) - x->comp.progress_ns <
        uzura_req_full_timeout(qp)) {
        x->comp.rto_shift = MIN(x->comp.rto_shift + 1, 16);
        uzura_req_rewind(core, qp);
        uzura_req_arm_timer(qp, true);
        return;
    }
    x->comp.progress_ns = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
    if (!x->comp.retry_left) {
        uzura_req_claim(qp, x->req.oldest);
        w = uzura_msg(qp, x->req.oldest);
        uzura_req_finish(core, qp, w, UZ_WC_STATUS_RETRY_EXC_ERR,
                         UZ_VERR_NONE);
        return;
    }
    x->comp.retry_left--;
    uzura_req_rewind(core, qp);
    uzura_req_arm_timer(qp, true);
}

/* The QP's ACK/RNR timer: an entry into the device like any other. */
void uzura_req_timer(void *opaque)
{
    UzuraXfer *x = opaque;
    UzuraCore *core = x->core;
    bool g = uzura_enter(core);

    uzura_req_timeout(core, x);
    uzura_leave(core, g);
}

/* RTR -> RTS: the send side starts at sq_psn. */
void uzura_req_init(UzuraCore *core, UzuraQp *qp)
{
    UzuraXfer *x = qp->x;

    x->req.next_psn = x->req.end_psn = qp->attr.sq_psn;
    x->comp.acked_psn = (qp->attr.sq_psn - 1) & UZ_PSN_MASK;
    x->req.oldest = x->req.next = x->req.end = 0;
    x->req.sq_next = qp->sq_ci;
    uzura_req_progress(qp);
    x->comp.rnr_left = qp->attr.rnr_retry;
    x->comp.answer.seq = x->comp.resend.seq = 0;
    x->comp.resend_left = 0;
    x->req.fault_wait = x->req.fault_rewind = false;
    x->comp.rtt_on = false;
    x->comp.srtt_ns = x->comp.rttvar_ns = 0;
    x->comp.rto_shift = 0;
    uzura_work_schedule(core);
}

/* PAGE_RESUME: a QP that waited for an ODP page goes on. */
void uzura_req_fault_resume(UzuraCore *core, UzuraQp *qp)
{
    UzuraXfer *x = qp->x;

    if (x->req.fault_wait) {
        x->req.fault_wait = false;
        if (x->req.fault_rewind) {
            x->req.fault_rewind = false;
            uzura_req_rewind(core, qp);
        }
    }
    x->resp.answer_fault_wait = false;
}

/*
 * A QP's transport just came in a migration stream, without the message
 * in progress, the rate limiter or the cached WQEs.  The message in
 * progress starts over from its source; a reliable QP goes back to its
 * oldest unacknowledged message, as after a timeout, since the ACKs for
 * it went to the old side (the peer answers duplicates again).
 */
void uzura_req_migrated(UzuraCore *core, UzuraQp *qp)
{
    UzuraXfer *x = qp->x;

    if (x->req.cur_active) {
        x->req.cur_active = false;
        x->req.next_psn = uzura_msg(qp, x->req.next)->first_psn;
    }
    x->req.rp_wait = false;
    if (!uzura_qp_is_ud(qp) && !uzura_qp_is_uc(qp) && !uzura_qp_is_raw(qp)) {
        uzura_req_rewind(core, qp);
    }
}

/* Stop the send side: RESET, ERR, destroy. */
void uzura_req_reset(UzuraCore *core, UzuraQp *qp)
{
    UzuraXfer *x = qp->x;

    timer_del(x->timer);
    uzura_rp_free(qp);
    x->resp.np_cnp_once = false;
    x->req.cur_active = false;
    x->comp.rnr_wait = false;
    x->req.blocked = false;
    x->req.fault_wait = x->req.fault_rewind = false;
    x->comp.answer.seq = x->comp.resend.seq = 0;
    x->comp.resend_left = 0;
}
