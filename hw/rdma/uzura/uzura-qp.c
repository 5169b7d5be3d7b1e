/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uzura RDMA NIC: queue pairs: creation, the modify-QP state machine with
 * its attribute checks, query and destroy.
 *
 * The transition table follows the InfiniBand specification's "QP state
 * transition properties": for each legal (from, to) pair, the attributes
 * that must be given and those that may be.  Anything else is refused
 * without changing the QP.
 */
#include "qemu/osdep.h"
#include "qemu/bitops.h"
#include "qemu/main-loop.h"
#include "qemu/timer.h"
#include "uzura-core.h"
#include "trace.h"

#define UZ_GSI_QPN          1
#define UZ_FIRST_QPN        2   /* 0 and 1 are the special QPs */

/* Attributes of the primary path, as a group. */
#define A_RC_PATH   (UZ_QP_ATTR_AV | UZ_QP_ATTR_PATH_MTU | \
                     UZ_QP_ATTR_DEST_QPN | UZ_QP_ATTR_RQ_PSN | \
                     UZ_QP_ATTR_MAX_DEST_RD_ATOMIC | UZ_QP_ATTR_MIN_RNR_TIMER)
#define A_RC_SEND   (UZ_QP_ATTR_SQ_PSN | UZ_QP_ATTR_TIMEOUT | \
                     UZ_QP_ATTR_RETRY_CNT | UZ_QP_ATTR_RNR_RETRY | \
                     UZ_QP_ATTR_MAX_QP_RD_ATOMIC)
#define A_INIT_RC   (UZ_QP_ATTR_PKEY_INDEX | UZ_QP_ATTR_PORT | \
                     UZ_QP_ATTR_ACCESS)
#define A_INIT_UD   (UZ_QP_ATTR_PKEY_INDEX | UZ_QP_ATTR_PORT | \
                     UZ_QP_ATTR_QKEY)
/* UC: RC's path without the READ and RNR parts, and no ACK timer. */
#define A_UC_PATH   (UZ_QP_ATTR_AV | UZ_QP_ATTR_PATH_MTU | \
                     UZ_QP_ATTR_DEST_QPN | UZ_QP_ATTR_RQ_PSN)
/* XRC target: a responder, whose RTS needs no send attributes but these. */
#define A_XT_SEND   (UZ_QP_ATTR_TIMEOUT | UZ_QP_ATTR_SQ_PSN)
#define A_RTS_OPT   (UZ_QP_ATTR_ACCESS | UZ_QP_ATTR_MIN_RNR_TIMER)
#define A_SQD_RC    (A_RTS_OPT | UZ_QP_ATTR_TIMEOUT | UZ_QP_ATTR_RETRY_CNT | \
                     UZ_QP_ATTR_RNR_RETRY | UZ_QP_ATTR_MAX_QP_RD_ATOMIC | \
                     UZ_QP_ATTR_MAX_DEST_RD_ATOMIC)

/*
 * XRC initiators and targets: RC's columns, as ib_core has them; raw
 * packet QPs need a port and nothing else.
 */
enum { QPK_RC, QPK_UD, QPK_UC, QPK_XI, QPK_XT, QPK_RAW, QPK_NUM };

typedef struct UzuraQpTransition {
    /* required, by kind: RC, UD (and GSI), UC, XI, XT, RAW */
    uint32_t req[QPK_NUM];
    uint32_t opt[QPK_NUM];      /* optional */
    bool valid;
} UzuraQpTransition;

#define K(rc, ud, uc, xi, xt, raw) { (rc), (ud), (uc), (xi), (xt), (raw) }
#define T(r, o)                 { .req = r, .opt = o, .valid = true }

/* [from][to]; the moves to RESET and ERR are legal from everywhere. */
static const UzuraQpTransition uzura_qp_fsm[UZ_QPS_ERR + 1][UZ_QPS_ERR + 1] = {
    [UZ_QPS_RESET][UZ_QPS_INIT] =
        T(K(A_INIT_RC, A_INIT_UD, A_INIT_RC, A_INIT_RC, A_INIT_RC,
            UZ_QP_ATTR_PORT),
          K(0, 0, 0, 0, 0, 0)),
    [UZ_QPS_INIT][UZ_QPS_INIT] =
        T(K(0, 0, 0, 0, 0, 0),
          K(A_INIT_RC, A_INIT_UD, A_INIT_RC, A_INIT_RC, A_INIT_RC,
            UZ_QP_ATTR_PORT)),
    [UZ_QPS_INIT][UZ_QPS_RTR] =
        T(K(A_RC_PATH, 0, A_UC_PATH, A_UC_PATH, A_RC_PATH, 0),
          K(UZ_QP_ATTR_ACCESS | UZ_QP_ATTR_PKEY_INDEX,
            UZ_QP_ATTR_PKEY_INDEX | UZ_QP_ATTR_QKEY,
            UZ_QP_ATTR_ACCESS | UZ_QP_ATTR_PKEY_INDEX,
            UZ_QP_ATTR_ACCESS | UZ_QP_ATTR_PKEY_INDEX,
            UZ_QP_ATTR_ACCESS | UZ_QP_ATTR_PKEY_INDEX, 0)),
    [UZ_QPS_RTR][UZ_QPS_RTS] =
        T(K(A_RC_SEND, UZ_QP_ATTR_SQ_PSN, UZ_QP_ATTR_SQ_PSN, A_RC_SEND,
            A_XT_SEND, 0),
          K(A_RTS_OPT, UZ_QP_ATTR_QKEY, UZ_QP_ATTR_ACCESS, UZ_QP_ATTR_ACCESS,
            A_RTS_OPT, 0)),
    [UZ_QPS_RTS][UZ_QPS_RTS] =
        T(K(0, 0, 0, 0, 0, 0),
          K(A_RTS_OPT, UZ_QP_ATTR_QKEY, UZ_QP_ATTR_ACCESS, UZ_QP_ATTR_ACCESS,
            A_RTS_OPT, 0)),
    [UZ_QPS_RTS][UZ_QPS_SQD] = T(K(0, 0, 0, 0, 0, 0), K(0, 0, 0, 0, 0, 0)),
    [UZ_QPS_SQD][UZ_QPS_SQD] =
        T(K(0, 0, 0, 0, 0, 0),
          K(A_SQD_RC, UZ_QP_ATTR_QKEY, UZ_QP_ATTR_ACCESS,
            A_SQD_RC & ~(UZ_QP_ATTR_MIN_RNR_TIMER |
                         UZ_QP_ATTR_MAX_DEST_RD_ATOMIC),
            A_RTS_OPT | UZ_QP_ATTR_TIMEOUT | UZ_QP_ATTR_MAX_DEST_RD_ATOMIC, 0)),
    [UZ_QPS_SQD][UZ_QPS_RTS] =
        T(K(0, 0, 0, 0, 0, 0),
          K(A_RTS_OPT, UZ_QP_ATTR_QKEY, UZ_QP_ATTR_ACCESS, UZ_QP_ATTR_ACCESS,
            A_RTS_OPT, 0)),
    [UZ_QPS_SQE][UZ_QPS_RTS] =
        T(K(0, 0, 0, 0, 0, 0), K(0, UZ_QP_ATTR_QKEY, 0, 0, 0, 0)),
};

/* The column of the transition table a QP's type reads. */
static int uzura_qp_kind(const UzuraQp *qp)
{
    switch (qp->type) {
    case UZ_QPT_UD:
    case UZ_QPT_GSI:
        return QPK_UD;
    case UZ_QPT_UC:
        return QPK_UC;
    case UZ_QPT_XRC_INI:
        return QPK_XI;
    case UZ_QPT_XRC_TGT:
        return QPK_XT;
    case UZ_QPT_RAW:
        return QPK_RAW;
    default:
        return QPK_RC;
    }
}

static const uint8_t zero_mac[6];

UzuraQp *uzura_qp_lookup(UzuraCore *core, uint32_t qpn)
{
    UzuraRdma *r = &core->rdma;

    return qpn < r->lim.max_qp && r->qp[qpn].valid ? &r->qp[qpn] : NULL;
}

/* The RoCE active MTU: the largest IB MTU that fits the Ethernet MTU. */
uint8_t uzura_qp_active_mtu(UzuraCore *core)
{
    /* IB payload plus BTH, RETH, ICRC, IPv4 and UDP headers: 70 bytes. */
    uint8_t m = UZ_MTU_4096;

    while (m > UZ_MTU_256 && (128u << m) + 70 > core->mtu) {
        m--;
    }
    return m;
}

/* Range checks of the attributes the mask names. */
static bool uzura_qp_attr_ok(UzuraCore *core, uint32_t qpn,
                             const struct uz_qp_attr *a, uint32_t mask)
{
    const UzuraLimits *l = &core->rdma.lim;
    const uint32_t access_known = UZ_ACCESS_REMOTE_WRITE |
                                  UZ_ACCESS_REMOTE_READ |
                                  UZ_ACCESS_REMOTE_ATOMIC |
                                  UZ_ACCESS_LOCAL_WRITE;

    if ((mask & UZ_QP_ATTR_PORT) && a->port != 1) {
        trace_uzura_qp_err_attr_port(qpn, a->port);
        return false;
    }
    if ((mask & UZ_QP_ATTR_PKEY_INDEX) && le16_to_cpu(a->pkey_index) != 0) {
        trace_uzura_qp_err_attr_pkey_index(qpn, le16_to_cpu(a->pkey_index));
        return false;
    }
    if ((mask & UZ_QP_ATTR_ACCESS) &&
        (le32_to_cpu(a->access_flags) & ~access_known)) {
        trace_uzura_qp_err_attr_access(qpn, le32_to_cpu(a->access_flags),
                                       access_known);
        return false;
    }
    if ((mask & UZ_QP_ATTR_PATH_MTU) &&
        (a->path_mtu < UZ_MTU_256 || a->path_mtu > uzura_qp_active_mtu(core))) {
        trace_uzura_qp_err_attr_path_mtu(qpn, a->path_mtu, UZ_MTU_256,
                                         uzura_qp_active_mtu(core));
        return false;
    }
    if ((mask & UZ_QP_ATTR_AV) && (a->dmac[0] & 1)) {
        trace_uzura_qp_err_attr_dmac_group(qpn, a->dmac[0]);
        return false;
    }
    if ((mask & UZ_QP_ATTR_AV) && !memcmp(a->dmac, zero_mac, 6)) {
        trace_uzura_qp_err_attr_dmac_zero(qpn);
        return false;
    }
    if ((mask & UZ_QP_ATTR_SQ_PSN) && le32_to_cpu(a->sq_psn) > UZ_PSN_MASK) {
        trace_uzura_qp_err_attr_sq_psn(qpn, le32_to_cpu(a->sq_psn),
                                       UZ_PSN_MASK);
        return false;
    }
    if ((mask & UZ_QP_ATTR_RQ_PSN) && le32_to_cpu(a->rq_psn) > UZ_PSN_MASK) {
        trace_uzura_qp_err_attr_rq_psn(qpn, le32_to_cpu(a->rq_psn),
                                       UZ_PSN_MASK);
        return false;
    }
    if ((mask & UZ_QP_ATTR_DEST_QPN) &&
        le32_to_cpu(a->dest_qpn) > UZ_PSN_MASK) {
        trace_uzura_qp_err_attr_dest_qpn(qpn, le32_to_cpu(a->dest_qpn),
                                         UZ_PSN_MASK);
        return false;
    }
    if ((mask & UZ_QP_ATTR_TIMEOUT) && a->timeout > 31) {
        trace_uzura_qp_err_attr_timeout(qpn, a->timeout, 31);
        return false;
    }
    if ((mask & UZ_QP_ATTR_RETRY_CNT) && a->retry_cnt > 7) {
        trace_uzura_qp_err_attr_retry_cnt(qpn, a->retry_cnt, 7);
        return false;
    }
    if ((mask & UZ_QP_ATTR_RNR_RETRY) && a->rnr_retry > 7) {
        trace_uzura_qp_err_attr_rnr_retry(qpn, a->rnr_retry, 7);
        return false;
    }
    if ((mask & UZ_QP_ATTR_MIN_RNR_TIMER) && a->min_rnr_timer > 31) {
        trace_uzura_qp_err_attr_min_rnr_timer(qpn, a->min_rnr_timer, 31);
        return false;
    }
    if ((mask & UZ_QP_ATTR_MAX_QP_RD_ATOMIC) &&
        a->max_rd_atomic > l->max_qp_rd_atom) {
        trace_uzura_qp_err_attr_max_rd_atomic(qpn, a->max_rd_atomic,
                                              l->max_qp_rd_atom);
        return false;
    }
    if ((mask & UZ_QP_ATTR_MAX_DEST_RD_ATOMIC) &&
        a->max_dest_rd_atomic > l->max_qp_rd_atom) {
        trace_uzura_qp_err_attr_max_dest_rd_atomic(qpn, a->max_dest_rd_atomic,
                                                   l->max_qp_rd_atom);
        return false;
    }
    return true;
}

/* Copy the attributes named by @mask into the QP. */
static void uzura_qp_attr_apply(UzuraQp *qp, const struct uz_qp_attr *a,
                                uint32_t mask)
{
    struct uz_qp_attr *q = &qp->attr;

    if (mask & UZ_QP_ATTR_ACCESS) {
        q->access_flags = le32_to_cpu(a->access_flags);
    }
    if (mask & UZ_QP_ATTR_PKEY_INDEX) {
        q->pkey_index = le16_to_cpu(a->pkey_index);
    }
    if (mask & UZ_QP_ATTR_PORT) {
        q->port = a->port;
    }
    if (mask & UZ_QP_ATTR_QKEY) {
        q->qkey = le32_to_cpu(a->qkey);
    }
    if (mask & UZ_QP_ATTR_AV) {
        memcpy(q->dgid, a->dgid, sizeof(q->dgid));
        memcpy(q->sgid, a->sgid, sizeof(q->sgid));
        memcpy(q->dmac, a->dmac, sizeof(q->dmac));
        q->hop_limit = a->hop_limit;
        q->traffic_class = a->traffic_class;
        q->flow_label = le32_to_cpu(a->flow_label);
    }
    if (mask & UZ_QP_ATTR_PATH_MTU) {
        q->path_mtu = a->path_mtu;
    }
    if (mask & UZ_QP_ATTR_TIMEOUT) {
        q->timeout = a->timeout;
    }
    if (mask & UZ_QP_ATTR_RETRY_CNT) {
        q->retry_cnt = a->retry_cnt;
    }
    if (mask & UZ_QP_ATTR_RNR_RETRY) {
        q->rnr_retry = a->rnr_retry;
    }
    if (mask & UZ_QP_ATTR_RQ_PSN) {
        q->rq_psn = le32_to_cpu(a->rq_psn);
    }
    if (mask & UZ_QP_ATTR_SQ_PSN) {
        q->sq_psn = le32_to_cpu(a->sq_psn);
    }
    if (mask & UZ_QP_ATTR_MAX_QP_RD_ATOMIC) {
        q->max_rd_atomic = a->max_rd_atomic;
    }
    if (mask & UZ_QP_ATTR_MAX_DEST_RD_ATOMIC) {
        q->max_dest_rd_atomic = a->max_dest_rd_atomic;
    }
    if (mask & UZ_QP_ATTR_MIN_RNR_TIMER) {
        q->min_rnr_timer = a->min_rnr_timer;
    }
    if (mask & UZ_QP_ATTR_DEST_QPN) {
        q->dest_qpn = le32_to_cpu(a->dest_qpn);
    }
}

/* A WQE the QP took from its SRQ and holds is the QP's to flush. */
static void uzura_qp_flush_held(UzuraCore *core, UzuraQp *qp)
{
    UzuraXfer *x = qp->x;

    if (uzura_xrc_held(core, qp) && qp->srqn != UZ_NO_SRQ) {
        struct uz_cqe cqe = {
            .wr_id = cpu_to_le64(x->resp.rwqe.wr_id),
            .status = UZ_WC_STATUS_WR_FLUSH_ERR,
            .qpn = cpu_to_le32(x->qpn), .opcode = UZ_WC_RECV,
        };

        x->resp.have_rwqe = false;
        trace_uzura_qp_flush(x->qpn, false, 0, x->resp.rwqe.wr_id);
        if (x->resp.tm_kind) {
            /* A TM SRQ's: to its CQ, and a tagged entry is free again. */
            uzura_tm_complete(core, qp, &cqe, false);
            return;
        }
        uzura_xrc_cqe(qp, &cqe);
        uzura_cq_post(core, qp->recv_cqn, &cqe, false);
    }
}

/* Back to RESET: the attributes and the queues start over, silently. */
static void uzura_qp_to_reset(UzuraCore *core, UzuraQp *qp)
{
    /*
     * An XRC target's WQE is another QP's SRQ's (a process's, maybe), and
     * no Last WQE Reached tells of it: it completes, flushed.
     */
    if (qp->type == UZ_QPT_XRC_TGT) {
        uzura_qp_flush_held(core, qp);
    }
    uzura_req_reset(core, qp);
    uzura_crw_flush(core, qp);
    uzura_tm_qp_flush(core, qp);
    uzura_resp_init(core, qp);
    uzura_shadow_reset(core, qp);
    memset(&qp->attr, 0, sizeof(qp->attr));
    qp->sq_pi = qp->rq_pi = 0;
    qp->sq_ci = qp->rq_ci = 0;
}

static void uzura_qp_free_xfer(UzuraCore *core, UzuraQp *qp)
{
    if (qp->x) {
        uzura_sr_free(core, qp);
        uzura_rp_free(qp);
        timer_free(qp->x->timer);
        g_free(qp->x->req.msg);
        g_free(qp->x->resp.rd);
        g_free(qp->x->crw);
        g_free(qp->x->crw_ready);
        g_free(qp->x->rndv);
        g_free(qp->x);
        qp->x = NULL;
    }
}

/* Work requests complete with their own opcode. */
static const uint8_t uzura_wr_wc[256] = {
    [UZ_WR_SEND] = UZ_WC_SEND,
    [UZ_WR_SEND_IMM] = UZ_WC_SEND,
    [UZ_WR_SEND_INV] = UZ_WC_SEND,
    [UZ_WR_RDMA_WRITE] = UZ_WC_RDMA_WRITE,
    [UZ_WR_RDMA_WRITE_IMM] = UZ_WC_RDMA_WRITE,
    [UZ_WR_RDMA_READ] = UZ_WC_RDMA_READ,
    [UZ_WR_ATOMIC_CMP_SWP] = UZ_WC_COMP_SWAP,
    [UZ_WR_ATOMIC_FETCH_ADD] = UZ_WC_FETCH_ADD,
    [UZ_WR_LOCAL_INV] = UZ_WC_LOCAL_INV,
    [UZ_WR_REG_MR] = UZ_WC_REG_MR,
    [UZ_WR_BIND_MW] = UZ_WC_BIND_MW,
    [UZ_WR_FLUSH] = UZ_WC_FLUSH,
    [UZ_WR_ATOMIC_WRITE] = UZ_WC_ATOMIC_WRITE,
    [UZ_WR_CRW] = UZ_WC_CRW,
    [UZ_WR_STCRW] = UZ_WC_STCRW,
};

uint8_t uzura_wr_to_wc(uint8_t wr_opcode)
{
    return uzura_wr_wc[wr_opcode];
}

/*
 * Complete the oldest outstanding WQE of a queue with WR_FLUSH_ERR.
 * Returns false when the queue is empty.
 */
static bool uzura_qp_flush_one(UzuraCore *core, uint32_t qpn, UzuraQp *qp,
                               bool sq)
{
    uint32_t *ci = sq ? &qp->sq_ci : &qp->rq_ci;
    uint32_t pi = sq ? qp->sq_pi : qp->rq_pi;
    uint32_t log_depth = sq ? qp->sq_log_depth : qp->rq_log_depth;
    uint32_t log_size = sq ? qp->sq_log_wqe_size : qp->rq_log_wqe_size;
    uint64_t ring = sq ? qp->sq_addr : qp->rq_addr;
    uint8_t hdr[16] = { 0 };            /* wr_id, and the SQ's opcode */
    struct uz_cqe cqe = {
        .status = UZ_WC_STATUS_WR_FLUSH_ERR,
        .qpn = cpu_to_le32(qpn),
        .opcode = UZ_WC_RECV,
    };

    if (*ci == pi) {
        return false;
    }
    /* An unreadable WQE still completes, with wr_id 0. */
    uzura_dma_read(core, ring + ((uint64_t)(*ci & ((1u << log_depth) - 1)) <<
                                 log_size), hdr, sizeof(hdr));
    cqe.wr_id = cpu_to_le64(ldq_le_p(hdr));
    if (sq) {
        uint8_t op = hdr[offsetof(struct uz_send_wqe, opcode)];

        cqe.opcode = uzura_wr_to_wc(op);
        core->counters.crw_flushed += op == UZ_WR_CRW;
    }
    trace_uzura_qp_flush(qpn, sq, *ci, ldq_le_p(hdr));
    uzura_cq_post(core, sq ? qp->send_cqn : qp->recv_cqn, &cqe, false);
    *ci = (*ci + 1) & UZ_IDX_MASK;
    return true;
}

#define UZ_FLUSH_BUDGET     64      /* WQEs per QP per turn */
#define UZ_QP_BUDGET        32      /* packets per QP per turn */

/* Flush a QP in the error state; true when it has more to flush. */
static bool uzura_qp_flush(UzuraCore *core, uint32_t qpn, UzuraQp *qp)
{
    int n;

    uzura_qp_flush_held(core, qp);
    /* WQEs posted to a shadow record with no doorbell flush too. */
    uzura_shadow_poll(core, qp);

    for (n = 0; n < UZ_FLUSH_BUDGET; n++) {
        if (uzura_qp_has_sq(qp) && uzura_qp_flush_one(core, qpn, qp, true)) {
            continue;
        }
        /* Empty: later posts ring the doorbell, which flushes them. */
        if (uzura_qp_has_sq(qp) && !uzura_shadow_idle(core, qp)) {
            continue;
        }
        if (!uzura_qp_has_rq(qp) ||
            !uzura_qp_flush_one(core, qpn, qp, false)) {
            /* Parked CRWs last: their SQ WQEs completed long ago. */
            uzura_crw_flush(core, qp);
            uzura_tm_qp_flush(core, qp);
            return false;
        }
    }
    return true;
}

/*
 * The QP part of the work bottom half, round-robin over the QPs with a
 * budget each: QPs in the error state complete what was posted to them
 * with flush errors; the others answer requests (READ responses, atomic
 * results, ACKs) and send.
 */
void uzura_qp_work(UzuraCore *core)
{
    UzuraRdma *r = &core->rdma;
    uint32_t max = r->lim.max_qp, start = r->rr_next % max, pass, qpn;
    bool flush = r->flush_owed, more = false;
    /* Paused by the link (9.1.3): nothing goes on the wire, flushes do. */
    bool paused = uzura_pause_active(core);

    r->flush_owed = false;
    /* The QPs that exist, from the round-robin start round to it again. */
    for (pass = 0; pass < 2; pass++) {
        uint32_t end = pass ? start : max;

        for (qpn = find_next_bit(r->qp_live, end, pass ? 0 : start);
             qpn < end; qpn = find_next_bit(r->qp_live, end, qpn + 1)) {
            UzuraQp *qp = &r->qp[qpn];
            unsigned budget = UZ_QP_BUDGET;

            if (!qp->valid || qp->attr.state < UZ_QPS_RTR) {
                continue;
            }
            if (qp->attr.state == UZ_QPS_ERR) {
                if (flush && uzura_qp_flush(core, qpn, qp)) {
                    r->flush_owed = true;
                }
                continue;
            }
            if (paused) {
                continue;       /* the pause's end schedules the work */
            }
            uzura_resp_work(core, qp, &budget);
            uzura_req_work(core, qp, &budget);
            more |= !budget;
        }
    }
    r->rr_next = (start + 1) % max;
    if (more || r->flush_owed) {
        uzura_work_schedule(core);
    }
}

/* Free the transport state of every QP (reset, unrealize). */
void uzura_qp_free_all(UzuraCore *core)
{
    UzuraRdma *r = &core->rdma;
    uint32_t i;

    for (i = 0; i < r->lim.max_qp; i++) {
        uzura_qp_free_xfer(core, &r->qp[i]);
        g_clear_pointer(&r->qp[i].rss, g_free);
    }
}

void uzura_qp_flush_later(UzuraCore *core)
{
    core->rdma.flush_owed = true;
    uzura_work_schedule(core);
}

/*
 * A QP attached to an SRQ went to ERR: tell the driver (spec 8.8), after
 * the CQE of the SRQ WQE it holds, which a drain polls for once the event
 * came.
 */
static void uzura_qp_last_wqe(UzuraCore *core, UzuraQp *qp)
{
    if (qp->srqn != UZ_NO_SRQ && !uzura_qp_is_xrc(qp)) {
        uzura_qp_flush_held(core, qp);
        uzura_eq_post_async(core, UZ_EQE_QP_LAST_WQE, qp->x->qpn, 0);
    }
}

/*
 * The data path failed a WQE or a request of this QP: the error state,
 * flushing, the affiliated async @event for the driver unless 0 (an
 * error a CQE reports has none, as on ConnectX: spec 8.11), and Last WQE
 * Reached on an SRQ.
 */
void uzura_qp_fail(UzuraCore *core, UzuraQp *qp, uint8_t event)
{
    uint32_t qpn = qp->x->qpn;

    if (qp->attr.state == UZ_QPS_ERR) {
        return;
    }
    trace_uzura_qp_fail(qpn, qp->attr.state);
    qp->attr.state = UZ_QPS_ERR;
    uzura_req_reset(core, qp);
    uzura_qp_flush_later(core);
    if (event) {
        uzura_eq_post_async(core, event, qpn, 0);
    }
    uzura_qp_last_wqe(core, qp);
}

uint8_t uzura_cmd_modify_qp(UzuraCore *core, const struct uz_admin_cmd *cmd,
                            struct uz_admin_cqe *cqe)
{
    const struct uz_cmd_modify_qp *c = (const void *)cmd->raw;
    uint32_t qpn = le32_to_cpu(c->qpn), mask = le32_to_cpu(c->attr_mask);
    UzuraQp *qp = uzura_qp_lookup(core, qpn);
    const UzuraQpTransition *t;
    struct uz_qp_attr a;
    uint8_t from, to;
    int k;

    if (!qp) {
        trace_uzura_qp_err_handle(qpn, le32_to_cpu(c->uctx));
        return UZ_CMD_BAD_HANDLE;
    }
    if (qp->uctx != le32_to_cpu(c->uctx)) {
        trace_uzura_qp_err_handle_uctx(qpn, le32_to_cpu(c->uctx), qp->uctx);
        return UZ_CMD_BAD_HANDLE;
    }
    if (qp->type == UZ_QPT_RSS) {
        /* Active from its creation, with no state to move through. */
        uzura_guest_error(trace_uzura_qp_err_modify_rss(qpn),
                          "QP %u: an RSS QP has no states", qpn);
        return UZ_CMD_BAD_STATE;
    }
    if (!uzura_dma_read(core, le64_to_cpu(c->buf_addr), &a, sizeof(a))) {
        trace_uzura_qp_err_attr_buf(qpn, le64_to_cpu(c->buf_addr));
        return UZ_CMD_BAD_ADDR;
    }
    from = qp->attr.state;
    to = (mask & UZ_QP_ATTR_STATE) ? a.state : from;
    if (to > UZ_QPS_ERR) {
        trace_uzura_qp_err_state(qpn, to);
        return UZ_CMD_BAD_PARAM;
    }
    if (to == UZ_QPS_RESET || to == UZ_QPS_ERR) {
        /* Always legal; nothing else may change on the way. */
        if (mask & ~UZ_QP_ATTR_STATE) {
            trace_uzura_qp_err_attr_extra(qpn, from, to, mask,
                                          UZ_QP_ATTR_STATE);
            return UZ_CMD_BAD_PARAM;
        }
        if (to == UZ_QPS_RESET) {
            uzura_qp_to_reset(core, qp);
        }
        qp->attr.state = to;
        if (to == UZ_QPS_ERR) {
            uzura_req_reset(core, qp);
            uzura_qp_flush_later(core);
            if (from != UZ_QPS_ERR && from != UZ_QPS_RESET) {
                uzura_qp_last_wqe(core, qp);
            }
        }
        trace_uzura_qp_modify(qpn, from, to, mask);
        return UZ_CMD_OK;
    }
    t = &uzura_qp_fsm[from][to];
    if (!t->valid) {
        uzura_guest_error(trace_uzura_qp_err_transition(qpn, from, to),
                          "QP %u: no transition from state %u to %u",
                          qpn, from, to);
        return UZ_CMD_BAD_STATE;
    }
    k = uzura_qp_kind(qp);
    mask &= ~UZ_QP_ATTR_STATE;
    if ((mask & t->req[k]) != t->req[k]) {
        uzura_guest_error(trace_uzura_qp_err_attr_missing(qpn, from, to, mask,
                                                          t->req[k]),
                          "QP %u: attributes 0x%x not valid from state %u "
                          "to %u", qpn, mask, from, to);
        return UZ_CMD_BAD_PARAM;
    }
    if (mask & ~(t->req[k] | t->opt[k])) {
        uzura_guest_error(trace_uzura_qp_err_attr_extra(qpn, from, to, mask,
                                                        t->req[k] | t->opt[k]),
                          "QP %u: attributes 0x%x not valid from state %u "
                          "to %u", qpn, mask, from, to);
        return UZ_CMD_BAD_PARAM;
    }
    if (!uzura_qp_attr_ok(core, qpn, &a, mask)) {
        uzura_guest_error(trace_uzura_qp_err_attr(qpn, from, to, mask),
                          "QP %u: attributes 0x%x not valid from state %u "
                          "to %u", qpn, mask, from, to);
        return UZ_CMD_BAD_PARAM;
    }
    uzura_qp_attr_apply(qp, &a, mask);
    qp->attr.state = to;
    if (from == UZ_QPS_INIT && to == UZ_QPS_RTR) {
        uzura_resp_init(core, qp);
    } else if (from == UZ_QPS_RTR && to == UZ_QPS_RTS) {
        uzura_req_init(core, qp);
    } else if (to == UZ_QPS_RTS) {
        uzura_work_schedule(core);   /* SQD or SQE resume */
    }
    trace_uzura_qp_modify(qpn, from, to, mask);
    return UZ_CMD_OK;
}

uint8_t uzura_cmd_query_qp(UzuraCore *core, const struct uz_admin_cmd *cmd,
                           struct uz_admin_cqe *cqe)
{
    const struct uz_cmd_query *c = (const void *)cmd->raw;
    UzuraQp *qp = uzura_qp_lookup(core, le32_to_cpu(c->handle));
    const struct uz_qp_attr *q;
    struct uz_qp_attr a;

    if (!qp) {
        trace_uzura_qp_err_handle(le32_to_cpu(c->handle),
                                  le32_to_cpu(c->uctx));
        return UZ_CMD_BAD_HANDLE;
    }
    if (qp->uctx != le32_to_cpu(c->uctx)) {
        trace_uzura_qp_err_handle_uctx(le32_to_cpu(c->handle),
                                       le32_to_cpu(c->uctx), qp->uctx);
        return UZ_CMD_BAD_HANDLE;
    }
    if (le32_to_cpu(c->buf_len) < sizeof(a)) {
        trace_uzura_qp_err_query_len(le32_to_cpu(c->buf_len), sizeof(a));
        return UZ_CMD_BAD_PARAM;
    }
    q = &qp->attr;
    a = *q;
    a.access_flags = cpu_to_le32(q->access_flags);
    a.sq_psn = cpu_to_le32(q->sq_psn);
    a.rq_psn = cpu_to_le32(q->rq_psn);
    a.dest_qpn = cpu_to_le32(q->dest_qpn);
    a.qkey = cpu_to_le32(q->qkey);
    a.pkey_index = cpu_to_le16(q->pkey_index);
    a.flow_label = cpu_to_le32(q->flow_label);
    a.sq_draining = 0;
    if (!uzura_dma_write(core, le64_to_cpu(c->buf_addr), &a, sizeof(a))) {
        trace_uzura_qp_err_attr_buf(le32_to_cpu(c->handle),
                                    le64_to_cpu(c->buf_addr));
        return UZ_CMD_BAD_ADDR;
    }
    return UZ_CMD_OK;
}

static UzuraXfer *uzura_qp_new_xfer(UzuraCore *core, uint32_t qpn,
                                    uint32_t sq_log_depth, bool rc)
{
    UzuraXfer *x = g_new0(UzuraXfer, 1);
    /*
     * Messages in flight: SQ WQEs, and (RC) the writes of matched CRWs and
     * a READ or FIN of each rendezvous slot.
     */
    uint32_t nmsg = pow2ceil((1u << sq_log_depth) +
                             (rc ? core->rdma.lim.max_crw_tags +
                                   UZ_TM_RNDV_SLOTS : 0));

    x->core = core;
    x->qpn = qpn;
    x->req.msg = g_new0(UzuraSwqe, nmsg);
    x->req.nmsg = nmsg;
    x->req.msg_mask = nmsg - 1;
    x->resp.nrd = core->rdma.lim.max_qp_rd_atom;
    x->resp.rd = g_new0(UzuraRdAtom, x->resp.nrd);
    x->comp.answer.seq = x->comp.resend.seq = 0;
    x->timer = timer_new_ns(QEMU_CLOCK_VIRTUAL, uzura_req_timer, x);
    return x;
}

/*
 * The transport of a QP that comes in a migration stream
 * (uzura-migration.c), as CREATE_QP makes it, for the stream to fill.
 */
void uzura_qp_restore_xfer(UzuraCore *core, UzuraQp *qp, uint32_t qpn)
{
    qp->x = uzura_qp_new_xfer(core, qpn, qp->sq_log_depth,
                              qp->type == UZ_QPT_RC);
    qp->x->resp.xrc_srqn = UZ_NO_SRQ;
}

/*
 * CREATE_QP's objects, other than an XRC target's: each must be the
 * context's own, and an SRQ neither an XRC SRQ nor one that matches tags
 * for a QP that is not RC (a TM SRQ's SENDs carry a TMH).
 */
static uint8_t uzura_qp_create_handles(UzuraCore *core,
                                       const struct uz_cmd_create_qp *c,
                                       uint32_t uctx, bool has_sq,
                                       uint32_t srqn, UzuraPd **pd,
                                       UzuraCq **scq, UzuraCq **rcq,
                                       UzuraSrq **srq)
{
    uint32_t pdn = le32_to_cpu(c->pdn);
    uint32_t send_cqn = le32_to_cpu(c->send_cqn);
    uint32_t recv_cqn = le32_to_cpu(c->recv_cqn);

    *pd = uzura_pd_lookup(core, pdn, uctx);
    if (!*pd) {
        trace_uzura_qp_err_create_pd(pdn, uctx);
        return UZ_CMD_BAD_HANDLE;
    }
    if (has_sq) {
        *scq = uzura_cq_lookup(core, send_cqn, uctx);
        if (!*scq) {
            trace_uzura_qp_err_create_cq(1, send_cqn, uctx);
            return UZ_CMD_BAD_HANDLE;
        }
    }
    if (uz_qpt_receives(c->type)) {
        *rcq = uzura_cq_lookup(core, recv_cqn, uctx);
        if (!*rcq) {
            trace_uzura_qp_err_create_cq(0, recv_cqn, uctx);
            return UZ_CMD_BAD_HANDLE;
        }
    }
    if (srqn == UZ_NO_SRQ) {
        return UZ_CMD_OK;
    }
    *srq = uzura_srq_lookup(core, srqn);
    if (!*srq || (*srq)->uctx != uctx) {
        trace_uzura_qp_err_create_srq(srqn, uctx);
    } else if ((*srq)->xrc) {
        trace_uzura_qp_err_create_srq_xrc(srqn);
    } else if ((*srq)->tm && c->type != UZ_QPT_RC) {
        trace_uzura_qp_err_create_srq_tm(srqn, c->type);
    } else {
        return UZ_CMD_OK;
    }
    *srq = NULL;
    return UZ_CMD_BAD_HANDLE;
}

/* A queue's depth and WQE size (log2): within the device's limits. */
static bool uzura_qp_queue_ok(UzuraRdma *r, bool sq, uint8_t log_depth,
                              uint8_t log_wqe)
{
    uint8_t min_wqe = sq ? 6 : 4;

    if (log_depth < 1 || log_depth > 16) {
        trace_uzura_qp_err_create_depth(sq, log_depth, 1, 16);
        return false;
    }
    if ((1u << log_depth) > r->lim.max_qp_wr) {
        trace_uzura_qp_err_create_max_wr(sq, log_depth, r->lim.max_qp_wr);
        return false;
    }
    if (log_wqe < min_wqe || log_wqe > 9) {
        trace_uzura_qp_err_create_wqe_size(sq, log_wqe, min_wqe, 9);
        return false;
    }
    return true;
}

/* CREATE_QP's type, flags and queues, and the queues' memory. */
static uint8_t uzura_qp_create_shape(UzuraCore *core,
                                     const struct uz_cmd_create_qp *c,
                                     bool has_sq, bool has_rq)
{
    const uint8_t known = UZ_QPF_SIG_ALL | UZ_QPF_NO_SQ | UZ_QPF_SQ_SHADOW;
    UzuraRdma *r = &core->rdma;
    uint64_t sq = le64_to_cpu(c->sq_addr), rq = le64_to_cpu(c->rq_addr);
    uint64_t len;

    if (!uzura_qpt_known(c->type)) {
        trace_uzura_qp_err_create_type(c->type);
        return UZ_CMD_BAD_PARAM;
    }
    if (c->flags & ~known) {
        trace_uzura_qp_err_create_flags(c->flags, known);
        return UZ_CMD_BAD_PARAM;
    }
    if ((c->flags & UZ_QPF_NO_SQ) && c->type != UZ_QPT_RAW) {
        trace_uzura_qp_err_create_no_sq(c->type);
        return UZ_CMD_BAD_PARAM;
    }
    if ((c->flags & UZ_QPF_SQ_SHADOW) && !has_sq) {
        trace_uzura_qp_err_create_shadow_no_sq(c->type, c->flags);
        return UZ_CMD_BAD_PARAM;
    }
    if ((c->flags & UZ_QPF_SQ_SHADOW) && !r->sq_shadow) {
        trace_uzura_qp_err_create_shadow_off(c->flags);
        return UZ_CMD_BAD_PARAM;
    }
    if (has_sq &&
        !uzura_qp_queue_ok(r, true, c->sq_log_depth, c->sq_log_wqe_size)) {
        return UZ_CMD_BAD_PARAM;
    }
    if (has_rq &&
        !uzura_qp_queue_ok(r, false, c->rq_log_depth, c->rq_log_wqe_size)) {
        return UZ_CMD_BAD_PARAM;
    }
    if (has_sq) {
        len = ((uint64_t)1 << (c->sq_log_depth + c->sq_log_wqe_size)) +
              ((c->flags & UZ_QPF_SQ_SHADOW) ?
               sizeof(struct uz_sq_shadow) : 0);
        if (!uzura_dma_ok(core, sq, len, false)) {
            trace_uzura_qp_err_create_ring(1, sq, len);
            return UZ_CMD_BAD_ADDR;
        }
    }
    if (has_rq) {
        len = (uint64_t)1 << (c->rq_log_depth + c->rq_log_wqe_size);
        if (!uzura_dma_ok(core, rq, len, false)) {
            trace_uzura_qp_err_create_ring(0, rq, len);
            return UZ_CMD_BAD_ADDR;
        }
    }
    return UZ_CMD_OK;
}

uint8_t uzura_cmd_create_qp(UzuraCore *core, const struct uz_admin_cmd *cmd,
                            struct uz_admin_cqe *cqe)
{
    const struct uz_cmd_create_qp *c = (const void *)cmd->raw;
    UzuraRdma *r = &core->rdma;
    uint32_t uctx = le32_to_cpu(c->uctx), pdn = le32_to_cpu(c->pdn);
    uint32_t srqn = le32_to_cpu(c->srqn), sq_db = 0, rq_db = 0;
    uint64_t sq = le64_to_cpu(c->sq_addr), rq = le64_to_cpu(c->rq_addr);
    bool tgt = c->type == UZ_QPT_XRC_TGT, ini = c->type == UZ_QPT_XRC_INI;
    bool rss = c->type == UZ_QPT_RSS;
    /* A raw QP with UZ_QPF_NO_SQ is a verbs WQ: a receive queue only. */
    bool has_sq = uz_qpt_has_sq(c->type) && !(c->flags & UZ_QPF_NO_SQ);
    bool has_srq, has_rq;
    UzuraPd *pd = NULL;
    UzuraCq *scq = NULL, *rcq = NULL;
    UzuraSrq *srq = NULL;
    UzuraXrcd *xrcd = NULL;
    UzuraRss *table = NULL;
    int64_t qpn = -1, i;
    uint8_t st;

    /*
     * XRC: an initiator has no receive side, a target no queue at all;
     * nor has an RSS QP.
     */
    if (tgt || ini || rss) {
        srqn = UZ_NO_SRQ;
    }
    has_srq = srqn != UZ_NO_SRQ;
    has_rq = !has_srq && uz_qpt_receives(c->type);
    if (tgt) {
        xrcd = uzura_xrcd_lookup(core, le32_to_cpu(c->xrcd));
        if (!xrcd) {
            trace_uzura_qp_err_create_xrcd(le32_to_cpu(c->xrcd));
            return UZ_CMD_BAD_HANDLE;
        }
        if (!uzura_uctx_ok(core, uctx)) {
            trace_uzura_qp_err_create_uctx(uctx);
            return UZ_CMD_BAD_HANDLE;
        }
    } else {
        st = uzura_qp_create_handles(core, c, uctx, has_sq, srqn,
                                     &pd, &scq, &rcq, &srq);
        if (st != UZ_CMD_OK) {
            return st;
        }
    }
    st = uzura_qp_create_shape(core, c, has_sq, has_rq);
    if (st != UZ_CMD_OK) {
        return st;
    }

    /* The GSI QP is QP1, one per device; the others from QPN 2. */
    if (c->type == UZ_QPT_GSI) {
        if (r->qp[UZ_GSI_QPN].valid) {
            trace_uzura_qp_err_create_gsi_exists();
            return UZ_CMD_EXISTS;
        }
        qpn = UZ_GSI_QPN;
    } else {
        for (i = UZ_FIRST_QPN; i < r->lim.max_qp && qpn < 0; i++) {
            if (!r->qp[i].valid) {
                qpn = i;
            }
        }
        if (qpn < 0) {
            trace_uzura_qp_err_create_full(r->lim.max_qp);
            return UZ_CMD_NO_RESOURCES;
        }
    }
    /* RSS: the table at sq_addr, its QPs raw QPs of this context. */
    if (rss) {
        st = uzura_rss_create(core, sq, uctx, &table);
        if (st != UZ_CMD_OK) {
            return st;
        }
    }
    if (has_sq && !uzura_db_alloc(core, uctx, UZ_DBK_SQ, qpn, &sq_db)) {
        trace_uzura_qp_err_create_doorbell(1, uctx);
        return UZ_CMD_NO_RESOURCES;
    }
    if (has_rq && !uzura_db_alloc(core, uctx, UZ_DBK_RQ, qpn, &rq_db)) {
        trace_uzura_qp_err_create_doorbell(0, uctx);
        if (has_sq) {
            uzura_db_free(core, sq_db);
        }
        return UZ_CMD_NO_RESOURCES;
    }
    r->qp[qpn] = (UzuraQp) {
        .valid = true, .type = c->type, .flags = c->flags, .uctx = uctx,
        .pdn = tgt ? UINT32_MAX : pdn,
        .send_cqn = scq ? le32_to_cpu(c->send_cqn) : UINT32_MAX,
        .recv_cqn = rcq ? le32_to_cpu(c->recv_cqn) : UINT32_MAX,
        .srqn = srqn, .xrcd = tgt ? le32_to_cpu(c->xrcd) : 0,
        .sq_addr = has_sq ? sq : 0, .rq_addr = has_rq ? rq : 0,
        .sq_log_depth = has_sq ? c->sq_log_depth : 0,
        .rq_log_depth = has_rq ? c->rq_log_depth : 0,
        .sq_log_wqe_size = has_sq ? c->sq_log_wqe_size : 0,
        .rq_log_wqe_size = has_rq ? c->rq_log_wqe_size : 0,
        .sq_db = sq_db, .rq_db = rq_db,
    };
    set_bit(qpn, r->qp_live);
    r->qp[qpn].x = uzura_qp_new_xfer(core, qpn, has_sq ? c->sq_log_depth : 0,
                                     c->type == UZ_QPT_RC);
    r->qp[qpn].x->resp.xrc_srqn = UZ_NO_SRQ;
    if (tgt) {
        xrcd->users++;
    } else {
        pd->users++;
    }
    if (scq) {
        scq->users++;
    }
    if (table) {
        uzura_rss_attach(core, &r->qp[qpn], table);
        trace_uzura_rss_create(qpn, table->mask + 1, table->fields);
    }
    if (rcq) {
        rcq->users++;
    }
    if (srq) {
        srq->users++;
    }
    uzura_uctx_get(core, uctx);
    trace_uzura_qp_create(qpn, c->type, sq_db, rq_db);
    cqe->out0 = cpu_to_le32(qpn);
    cqe->out1 = cpu_to_le32(sq_db);
    cqe->out2 = cpu_to_le32(rq_db);
    return UZ_CMD_OK;
}

uint8_t uzura_cmd_destroy_qp(UzuraCore *core, const struct uz_admin_cmd *cmd,
                             struct uz_admin_cqe *cqe)
{
    const struct uz_cmd_obj *c = (const void *)cmd->raw;
    UzuraQp *qp = uzura_qp_lookup(core, le32_to_cpu(c->handle));
    UzuraRdma *r = &core->rdma;

    if (!qp) {
        trace_uzura_qp_err_handle(le32_to_cpu(c->handle),
                                  le32_to_cpu(c->uctx));
        return UZ_CMD_BAD_HANDLE;
    }
    if (qp->uctx != le32_to_cpu(c->uctx)) {
        trace_uzura_qp_err_handle_uctx(le32_to_cpu(c->handle),
                                       le32_to_cpu(c->uctx), qp->uctx);
        return UZ_CMD_BAD_HANDLE;
    }
    if (qp->flows) {
        trace_uzura_qp_err_destroy_flows(le32_to_cpu(c->handle), qp->flows);
        return UZ_CMD_BUSY;
    }
    if (qp->rss_refs) {
        /* Not a guest error: ib_core keeps the order; say who holds it. */
        trace_uzura_rss_err_busy(le32_to_cpu(c->handle), qp->rss_refs);
        return UZ_CMD_BUSY;
    }
    if (uzura_qp_has_sq(qp)) {
        uzura_db_free(core, qp->sq_db);
    }
    if (uzura_qp_has_rq(qp)) {
        uzura_db_free(core, qp->rq_db);
    } else if (qp->srqn != UZ_NO_SRQ && !uzura_qp_is_xrc(qp)) {
        r->srq[qp->srqn].users--;
    }
    if (qp->type == UZ_QPT_XRC_TGT) {
        r->xrcd[qp->xrcd].users--;
    } else {
        r->pd[qp->pdn].users--;
    }
    if (qp->send_cqn != UINT32_MAX) {
        r->cq[qp->send_cqn].users--;
    }
    /* An XRC target's recv_cqn is its last SRQ's, which that SRQ counts. */
    if (qp->recv_cqn != UINT32_MAX && !uzura_qp_is_xrc(qp)) {
        r->cq[qp->recv_cqn].users--;
    }
    uzura_rss_release(core, qp);
    uzura_uctx_put(core, qp->uctx);
    if (qp->type == UZ_QPT_XRC_TGT) {
        uzura_qp_flush_held(core, qp);     /* as at RESET */
    }
    trace_uzura_qp_destroy(le32_to_cpu(c->handle));
    /* Parked CRWs have no SQ WQE left to find them by: complete them. */
    uzura_crw_flush(core, qp);
    uzura_tm_qp_flush(core, qp);
    uzura_mw_qp_gone(core, le32_to_cpu(c->handle));
    uzura_mcast_qp_gone(core, le32_to_cpu(c->handle));
    uzura_qp_free_xfer(core, qp);
    qp->valid = false;
    clear_bit(le32_to_cpu(c->handle), core->rdma.qp_live);
    return UZ_CMD_OK;
}

/*
 * Start sending within the doorbell store itself.  Leaving it to the bottom
 * half would first wake the main loop, which on a busy host costs more than
 * the send; that wake-up is most of a small message's latency.  What the
 * budget leaves, or a doorbell rung while the data path is busy, goes to
 * the bottom half as before.
 */
static void uzura_qp_send_now(UzuraCore *core, UzuraQp *qp)
{
    unsigned budget = UZ_QP_BUDGET;

    /* The timing model's doorbell takes its time to reach the NIC. */
    if (core->model.on) {
        uzura_model_kick(core, core->model.p.doorbell_ns);
        return;
    }
    /* A paused link (9.1.3) keeps the WQEs in the ring: its end runs them. */
    if (core->busy || qp->attr.state < UZ_QPS_RTR ||
        uzura_pause_active(core)) {
        uzura_work_schedule(core);
        return;
    }
    core->busy = true;
    uzura_req_work(core, qp, &budget);
    core->busy = false;
    if (!budget || core->rx_flush_owed) {
        uzura_work_schedule(core);
    }
}

/*
 * SQ and RQ doorbells record the producer index.  In the error state the
 * new WQEs are flushed; the other states keep them for the data path.
 */
void uzura_qp_doorbell(UzuraCore *core, uint32_t qpn, bool sq, uint32_t val)
{
    UzuraQp *qp = &core->rdma.qp[qpn];
    uint32_t pi = val & UZ_DB_PI_MASK;
    uint32_t log_depth = sq ? qp->sq_log_depth : qp->rq_log_depth;
    uint32_t *cur = sq ? &qp->sq_pi : &qp->rq_pi;
    uint32_t ci = sq ? qp->sq_ci : qp->rq_ci;

    if (qp->attr.state == UZ_QPS_RESET) {
        uzura_guest_error(trace_uzura_qp_err_doorbell(qpn, sq, val),
                          "QP %u %s doorbell rung in the RESET state", qpn,
                          sq ? "SQ" : "RQ");
        uzura_core_record_error(core, UZ_ERR_BAD_STATE,
                                sq ? qp->sq_db : qp->rq_db);
        return;
    }
    /* Neither past a ring's worth nor backwards. */
    if (!uzura_ring_pi_ok(pi, ci, 1u << log_depth) ||
        !uzura_ring_pi_ok(pi, *cur, 1u << log_depth)) {
        uzura_guest_error(trace_uzura_qp_err_doorbell(qpn, sq, val),
                          "QP %u %s doorbell %u overruns the ring", qpn,
                          sq ? "SQ" : "RQ", pi);
        uzura_core_record_error(core, UZ_ERR_BAD_VALUE,
                                sq ? qp->sq_db : qp->rq_db);
        return;
    }
    *cur = pi;
    if (qp->attr.state == UZ_QPS_ERR) {
        uzura_qp_flush_later(core);
    } else if (sq) {
        uzura_qp_send_now(core, qp);
    }
}
