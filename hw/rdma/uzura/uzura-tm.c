/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uzura RDMA NIC: tag matching SRQs (spec 8.19).
 *
 * A TM SRQ keeps a list of tagged receive buffers that software edits
 * through a ring of list operations (ADD, DEL, SYNC) with a doorbell of
 * its own; the work bottom half carries them out in ring order, within a
 * budget.  A SEND arriving at an RC QP of the SRQ starts with a TMH: an
 * EAGER message whose tag matches the oldest matching entry lands in
 * that entry's buffer; a matched RNDV message makes this QP's requester
 * READ the sender's buffer into it and then send a FIN; everything else
 * takes an ordinary receive WQE of the SRQ.  Every message delivered
 * unexpected counts in U; matching stays off until software, by a SYNC,
 * says it has seen them all (S == U), because a tag it posted before
 * seeing an unexpected message must not match a later one out of order.
 */
#include "qemu/osdep.h"
#include "qemu/main-loop.h"
#include "uzura-core.h"
#include "trace.h"

#define UZ_TM_OPS_BUDGET    32      /* list operations per SRQ per turn */

/* ---- the SRQ's side: creation, list operations ---- */

/* The checks of CREATE_SRQ's tag matching fields (handles aside). */
uint8_t uzura_tm_srq_check(UzuraCore *core, const struct uz_cmd_create_srq *c)
{
    uint16_t max_tags = le16_to_cpu(c->max_tags);
    uint64_t len;

    if (c->flags & UZ_SRQF_XRC) {
        trace_uzura_tm_err_srq_xrc(c->flags);
        return UZ_CMD_BAD_PARAM;
    }
    if (max_tags < 1 || max_tags > UZ_TM_MAX_TAGS) {
        trace_uzura_tm_err_srq_max_tags(max_tags, UZ_TM_MAX_TAGS);
        return UZ_CMD_BAD_PARAM;
    }
    if (c->ops_log_depth < 1 || c->ops_log_depth > UZ_TM_LOG_MAX_OPS) {
        trace_uzura_tm_err_srq_ops_depth(c->ops_log_depth, UZ_TM_LOG_MAX_OPS);
        return UZ_CMD_BAD_PARAM;
    }
    len = sizeof(struct uz_tm_op) << c->ops_log_depth;
    if (!uzura_dma_ok(core, le64_to_cpu(c->ops_addr), len, false)) {
        trace_uzura_tm_err_srq_ops_addr(le64_to_cpu(c->ops_addr), len);
        return UZ_CMD_BAD_ADDR;
    }
    return UZ_CMD_OK;
}

void uzura_tm_srq_init(UzuraSrq *srq, const struct uz_cmd_create_srq *c,
                       uint32_t ops_db)
{
    UzuraTm *tm = g_new0(UzuraTm, 1);

    tm->max_tags = le16_to_cpu(c->max_tags);
    tm->e = g_new0(UzuraTmEntry, tm->max_tags);
    tm->ops_addr = le64_to_cpu(c->ops_addr);
    tm->ops_log_depth = c->ops_log_depth;
    tm->ops_db = ops_db;
    srq->tm = tm;
}

/* DESTROY_SRQ (no QP uses it) and reset: posted entries just go. */
void uzura_tm_srq_destroy(UzuraCore *core, UzuraSrq *srq)
{
    if (srq->tm) {
        if (core) {
            uzura_db_free(core, srq->tm->ops_db);
        }
        g_free(srq->tm->e);
        g_free(srq->tm);
        srq->tm = NULL;
    }
}

static bool uzura_tm_ops(UzuraCore *core, uint32_t srqn, unsigned budget);

/*
 * The ops doorbell: the new producer index.  The operations run in the
 * store itself, as an SQ doorbell's first turn does, so that a message
 * the guest sends after posting an ADD finds the entry in the list (the
 * loopback delivers it in the bottom half, which could otherwise run
 * first); what the budget leaves goes to the bottom half.
 */
void uzura_tm_doorbell(UzuraCore *core, uint32_t srqn, uint32_t val)
{
    UzuraSrq *srq = &core->rdma.srq[srqn];
    UzuraTm *tm = srq->tm;
    uint32_t pi = val & UZ_DB_PI_MASK, depth;

    if (!srq->valid || !tm) {
        return;                 /* the slot goes with the SRQ */
    }
    depth = 1u << tm->ops_log_depth;
    /* Neither past a ring's worth nor backwards. */
    if (!uzura_ring_pi_ok(pi, tm->ops_ci, depth) ||
        !uzura_ring_pi_ok(pi, tm->ops_pi, depth)) {
        uzura_guest_error(trace_uzura_tm_err_doorbell(srqn, val, tm->ops_ci),
                          "SRQ %u ops doorbell %u overruns the ring", srqn,
                          pi);
        uzura_core_record_error(core, UZ_ERR_BAD_VALUE, tm->ops_db);
        return;
    }
    trace_uzura_tm_doorbell(srqn, pi);
    tm->ops_pi = pi;
    if (!core->busy && !core->model.on) {
        bool more;

        core->busy = true;
        more = uzura_tm_ops(core, srqn, UZ_TM_OPS_BUDGET);
        core->busy = false;
        if (!more && !core->rx_flush_owed) {
            return;
        }
    }
    core->rdma.tm_owed = true;
    uzura_work_schedule(core);
}

/* ADD: why it fails, or NULL. */
static const char *uzura_tm_add(UzuraCore *core, UzuraSrq *srq,
                                const struct uz_tm_op *op, uint16_t index)
{
    UzuraTm *tm = srq->tm;
    UzuraSgl sgl = { .num = op->num_sge };
    UzuraTmEntry *e;
    uint8_t verr;

    if (index >= tm->max_tags) {
        return "entry out of range";
    }
    if (op->num_sge > UZ_TM_MAX_SGE) {
        return "more than one SGE";
    }
    e = &tm->e[index];
    if (e->state != UZ_TME_FREE) {
        return "entry in use";
    }
    sgl.sge[0] = (struct uz_sge) {
        .addr = le64_to_cpu(op->addr), .length = le32_to_cpu(op->length),
        .lkey = le32_to_cpu(op->lkey),
    };
    sgl.len = op->num_sge ? sgl.sge[0].length : 0;
    verr = uzura_sgl_check(core, &sgl, srq->pdn, UZ_ACCESS_LOCAL_WRITE);
    if (verr) {
        return "the SGE is no local write buffer of the SRQ's PD";
    }
    *e = (UzuraTmEntry) {
        .state = UZ_TME_POSTED, .num_sge = op->num_sge,
        .seq = tm->add_seq++, .tag = le64_to_cpu(op->tag),
        .mask = le64_to_cpu(op->mask),
        .recv_wr_id = le64_to_cpu(op->recv_wr_id), .sge = sgl.sge[0],
    };
    return NULL;
}

/* DEL: why it fails, or NULL.  A consumed entry is the message's now. */
static const char *uzura_tm_del(UzuraTm *tm, uint16_t index)
{
    if (index >= tm->max_tags) {
        return "entry out of range";
    }
    if (tm->e[index].state != UZ_TME_POSTED) {
        return "entry not posted";
    }
    tm->e[index].state = UZ_TME_FREE;
    return NULL;
}

/* Carry out operation @op, the ring's entry @ci, and complete it. */
static void uzura_tm_op(UzuraCore *core, uint32_t srqn, UzuraSrq *srq,
                        const struct uz_tm_op *op, uint32_t ci)
{
    UzuraTm *tm = srq->tm;
    uint16_t index = le16_to_cpu(op->index);
    const char *why = NULL;
    uint8_t wc, status;

    /* The count first: an ADD that comes with it is already in sync. */
    if (op->flags & UZ_TM_OP_F_SYNC) {
        tm->sw = le32_to_cpu(op->unexpected_cnt);
    }
    switch (op->opcode) {
    case UZ_TM_OP_ADD:
        wc = UZ_WC_TM_ADD;
        why = uzura_tm_add(core, srq, op, index);
        break;
    case UZ_TM_OP_DEL:
        wc = UZ_WC_TM_DEL;
        why = uzura_tm_del(tm, index);
        break;
    case UZ_TM_OP_SYNC:
        wc = UZ_WC_TM_SYNC;
        break;
    default:
        wc = UZ_WC_TM_SYNC;
        why = "unknown opcode";
        break;
    }
    status = why ? UZ_WC_STATUS_TM_ERR : UZ_WC_STATUS_SUCCESS;
    if (why) {
        uzura_guest_error(trace_uzura_tm_err_op(srqn, ci, op->opcode, index),
                          "SRQ %u: list operation %u (opcode %u, entry %u) "
                          "fails: %s", srqn, ci, op->opcode, index, why);
    }
    trace_uzura_tm_op(srqn, ci, op->opcode, index, status, tm->sw,
                      tm->unexp);
    if (why || (op->flags & UZ_TM_OP_F_SIGNALED)) {
        struct uz_cqe cqe = {
            .wr_id = op->wr_id,         /* little-endian as it came */
            .byte_len = cpu_to_le32(ci & UZ_IDX_MASK),
            .qpn = cpu_to_le32(srqn),
            .opcode = wc, .status = status,
            .wc_flags = tm->sw != tm->unexp ? UZ_WC_F_TM_SYNC_REQ : 0,
            .pkey_index = cpu_to_le16(wc == UZ_WC_TM_SYNC ? 0 : index),
        };

        uzura_cq_post(core, srq->cqn, &cqe, false);
    }
}

/*
 * The list operations of SRQ @srqn up to its producer index, at most
 * @budget of them; true when some are left.  An operation the ring
 * cannot give stops the SRQ until its next doorbell.
 */
static bool uzura_tm_ops(UzuraCore *core, uint32_t srqn, unsigned budget)
{
    UzuraSrq *srq = &core->rdma.srq[srqn];
    UzuraTm *tm = srq->tm;

    while (tm->ops_ci != tm->ops_pi) {
        uint32_t ci = tm->ops_ci;
        uint64_t addr = tm->ops_addr +
                        (uint64_t)(ci & ((1u << tm->ops_log_depth) - 1)) *
                        sizeof(struct uz_tm_op);
        struct uz_tm_op op;

        if (!budget--) {
            return true;
        }
        if (!uzura_dma_read(core, addr, &op, sizeof(op))) {
            uzura_guest_error(trace_uzura_tm_err_ring(srqn, ci),
                              "SRQ %u: list operation %u unreadable at "
                              "0x%" PRIx64, srqn, ci, addr);
            return false;
        }
        tm->ops_ci = (ci + 1) & UZ_IDX_MASK;
        uzura_tm_op(core, srqn, srq, &op, ci);
        /* Its CQE may have reset the device. */
        if (!srq->valid || srq->tm != tm) {
            return false;
        }
    }
    return false;
}

/* The work bottom half's part: the SRQs whose ops doorbell rang. */
void uzura_tm_work(UzuraCore *core)
{
    UzuraRdma *r = &core->rdma;
    bool more = false;
    uint32_t i;

    if (!r->tm_owed) {
        return;
    }
    r->tm_owed = false;
    for (i = 0; i < r->lim.max_srq; i++) {
        if (r->srq[i].valid && r->srq[i].tm &&
            uzura_tm_ops(core, i, UZ_TM_OPS_BUDGET)) {
            more = true;
        }
    }
    if (more) {
        r->tm_owed = true;
        uzura_work_schedule(core);
    }
}

/* ---- the data path's side ---- */

/* An RC QP of a TM SRQ: its SENDs carry a TMH. */
bool uzura_tm_qp(UzuraCore *core, UzuraQp *qp)
{
    return qp->type == UZ_QPT_RC && qp->srqn != UZ_NO_SRQ &&
           core->rdma.srq[qp->srqn].tm;
}

static UzuraTm *uzura_tm_of(UzuraCore *core, UzuraQp *qp)
{
    return core->rdma.srq[qp->srqn].tm;
}

/* The posted entry that matches @tag and was added first, or -1. */
static int32_t uzura_tm_match(UzuraTm *tm, uint64_t tag)
{
    int32_t best = -1;
    uint32_t i;

    for (i = 0; i < tm->max_tags; i++) {
        const UzuraTmEntry *e = &tm->e[i];

        if (e->state == UZ_TME_POSTED && !((tag ^ e->tag) & e->mask) &&
            (best < 0 || e->seq < tm->e[best].seq)) {
            best = i;
        }
    }
    return best;
}

/*
 * The first packet of a SEND at a TM QP: what the message is
 * (UzuraTmKind); for EAGER and RNDV the entry it matched in *idx, and
 * its tag in qp->x->resp.tm_tag.
 */
uint8_t uzura_tm_classify(UzuraCore *core, UzuraQp *qp, const UzuraPkt *pkt,
                          int32_t *idx)
{
    UzuraTm *tm = uzura_tm_of(core, qp);
    uint8_t op;

    *idx = -1;
    qp->x->resp.tm_tag = 0;
    if (pkt->paylen < UZ_TMH_LEN) {
        return UZ_TMK_NO_TAG;
    }
    op = pkt->payload[UZ_TMH_OPCODE];
    if (op != UZ_TMH_EAGER && op != UZ_TMH_RNDV) {
        return UZ_TMK_NO_TAG;
    }
    qp->x->resp.tm_tag = ldq_be_p(pkt->payload + UZ_TMH_TAG);
    /* Out of sync, software may hold an unexpected one for this tag. */
    if (tm->sw == tm->unexp) {
        *idx = uzura_tm_match(tm, qp->x->resp.tm_tag);
    }
    trace_uzura_tm_match(qp->x->qpn, qp->srqn, qp->x->resp.tm_tag, *idx, op);
    if (*idx < 0) {
        return UZ_TMK_UNEXP;
    }
    return op == UZ_TMH_EAGER ? UZ_TMK_EAGER : UZ_TMK_RNDV;
}

/* A matched EAGER message takes entry @idx as its receive WQE. */
void uzura_tm_take_eager(UzuraCore *core, UzuraQp *qp, int32_t idx,
                         uint64_t tag)
{
    UzuraTmEntry *e = &uzura_tm_of(core, qp)->e[idx];
    UzuraXfer *x = qp->x;

    e->state = UZ_TME_BUSY;
    x->resp.rwqe.wr_id = e->recv_wr_id;
    x->resp.rwqe.sgl.num = e->num_sge;
    x->resp.rwqe.sgl.sge[0] = e->sge;
    x->resp.rwqe.sgl.len = e->num_sge ? e->sge.length : 0;
    x->resp.have_rwqe = true;
    x->resp.recv_off = 0;
    x->resp.tm_kind = UZ_TMK_EAGER;
    x->resp.tm_idx = idx;
    x->resp.tm_tag = tag;
}

/* The tag fields of a CQE of a tagged buffer. */
static void uzura_tm_cqe_tag(struct uz_cqe *cqe, uint16_t idx, uint64_t tag)
{
    cqe->pkey_index = cpu_to_le16(idx);
    cqe->imm_data = cpu_to_le32((uint32_t)tag);
    cqe->src_qp = cpu_to_le32(tag >> 32);
}

/*
 * The receive the responder holds completes (uzura_resp_complete, which
 * filled wr_id, qpn, status and byte_len): as the TM kind says, to the
 * SRQ's CQ.
 */
void uzura_tm_complete(UzuraCore *core, UzuraQp *qp, struct uz_cqe *cqe,
                       bool solicited)
{
    UzuraSrq *srq = &core->rdma.srq[qp->srqn];
    UzuraXfer *x = qp->x;
    bool ok = cqe->status == UZ_WC_STATUS_SUCCESS;

    switch (x->resp.tm_kind) {
    case UZ_TMK_EAGER:
        cqe->opcode = UZ_WC_TM_RECV;
        cqe->wc_flags = UZ_WC_F_TM_MATCH | (ok ? UZ_WC_F_TM_DATA_VALID : 0);
        uzura_tm_cqe_tag(cqe, x->resp.tm_idx, x->resp.tm_tag);
        srq->tm->e[x->resp.tm_idx].state = UZ_TME_FREE;
        break;
    case UZ_TMK_UNEXP:
        cqe->opcode = UZ_WC_TM_RECV;
        if (ok) {
            srq->tm->unexp++;
        }
        trace_uzura_tm_unexpected(x->qpn, qp->srqn, x->resp.tm_kind,
                                  srq->tm->unexp);
        break;
    default:
        cqe->opcode = UZ_WC_TM_NO_TAG;
        trace_uzura_tm_unexpected(x->qpn, qp->srqn, x->resp.tm_kind,
                                  srq->tm->unexp);
        break;
    }
    x->resp.tm_kind = UZ_TMK_NONE;
    uzura_cq_post(core, srq->cqn, cqe, solicited);
}

/* The QP's rendezvous slots; also for a migration stream that has them. */
void uzura_tm_rndv_alloc(UzuraXfer *x)
{
    if (!x->rndv) {
        x->rndv = g_new0(UzuraRndv, UZ_TM_RNDV_SLOTS);
    }
}

/* The QP's rendezvous slots, allocated when first needed. */
static UzuraRndv *uzura_tm_slots(UzuraQp *qp)
{
    uzura_tm_rndv_alloc(qp->x);
    return qp->x->rndv;
}

/* A rendezvous' second CQE: the data is in, or it failed. */
static void uzura_tm_rndv_cqe(UzuraCore *core, UzuraQp *qp, int32_t s,
                              uint8_t status, uint8_t verr)
{
    UzuraRndv *r = &qp->x->rndv[s];
    UzuraSrq *srq = &core->rdma.srq[r->srqn];
    struct uz_cqe cqe = {
        .wr_id = cpu_to_le64(r->recv_wr_id), .qpn = cpu_to_le32(qp->x->qpn),
        .opcode = UZ_WC_TM_RECV, .status = status, .vendor_err = verr,
        /* The entry's last CQE, whatever its status (an error included). */
        .wc_flags = UZ_WC_F_TM_DATA_VALID,
        .byte_len = cpu_to_le32(status ? 0 : r->len),
    };

    uzura_tm_cqe_tag(&cqe, r->idx, r->tag);
    trace_uzura_tm_rndv_done(qp->x->qpn, s, r->idx, status);
    if (srq->tm && r->idx < srq->tm->max_tags) {
        srq->tm->e[r->idx].state = UZ_TME_FREE;
    }
    uzura_cq_post(core, srq->cqn, &cqe, false);
}

/*
 * A matched RNDV message, entry @idx: its first CQE, then a READ of the
 * sender's buffer queued for the requester, or, when the buffer is too
 * small, the second CQE at once.  Returns 0 when done with, 1 when no
 * slot is free (the caller answers RNR), -1 for a malformed one.
 */
int uzura_tm_rndv_start(UzuraCore *core, UzuraQp *qp, const UzuraPkt *pkt,
                        int32_t idx)
{
    UzuraSrq *srq = &core->rdma.srq[qp->srqn];
    UzuraTmEntry *e = &srq->tm->e[idx];
    UzuraXfer *x = qp->x;
    UzuraRndv *slots;
    struct uz_cqe cqe = {
        .wr_id = cpu_to_le64(e->recv_wr_id), .qpn = cpu_to_le32(x->qpn),
        .opcode = UZ_WC_TM_RECV, .wc_flags = UZ_WC_F_TM_MATCH,
    };
    uint32_t len;
    int32_t s;

    /* One packet holds the TMH and the RVH. */
    if (!(uzura_ops[pkt->opcode].hdrs & UZ_H_LAST) ||
        pkt->paylen < UZ_TMH_LEN + UZ_RVH_LEN) {
        trace_uzura_tm_err_rndv(x->qpn, pkt->psn);
        return -1;
    }
    len = ldl_be_p(pkt->payload + UZ_RVH_DLEN);
    if (len > UZ_MAX_MSG) {
        trace_uzura_tm_err_rndv(x->qpn, pkt->psn);
        return -1;
    }
    slots = uzura_tm_slots(qp);
    for (s = 0; s < UZ_TM_RNDV_SLOTS && slots[s].state != UZ_RNDV_FREE;
         s++) {
        ;
    }
    if (s == UZ_TM_RNDV_SLOTS) {
        return 1;
    }
    slots[s] = (UzuraRndv) {
        .state = UZ_RNDV_READ_READY, .idx = idx, .srqn = qp->srqn,
        .seq = x->rndv_seq++, .tag = x->resp.tm_tag,
        .recv_wr_id = e->recv_wr_id,
        .sge = e->sge, .num_sge = e->num_sge,
        .va = ldq_be_p(pkt->payload + UZ_RVH_VA),
        .rkey = ldl_be_p(pkt->payload + UZ_RVH_RKEY), .len = len,
    };
    uzura_tm_cqe_tag(&cqe, idx, x->resp.tm_tag);
    uzura_cq_post(core, srq->cqn, &cqe, false);
    if (len > (e->num_sge ? e->sge.length : 0)) {
        uzura_tm_rndv_cqe(core, qp, s, UZ_WC_STATUS_TM_RNDV_INCOMPLETE,
                          UZ_VERR_NONE);
        slots[s].state = UZ_RNDV_FREE;
        return 0;
    }
    e->state = UZ_TME_BUSY;
    trace_uzura_tm_rndv_start(x->qpn, s, idx, slots[s].va, len);
    uzura_work_schedule(core);
    return 0;
}

/* The oldest slot whose READ or FIN may start, or -1. */
static int32_t uzura_tm_rndv_ready(UzuraQp *qp)
{
    const UzuraRndv *slots = qp->x->rndv;
    int32_t s, best = -1;

    if (!slots) {
        return -1;
    }
    for (s = 0; s < UZ_TM_RNDV_SLOTS; s++) {
        if ((slots[s].state == UZ_RNDV_READ_READY ||
             slots[s].state == UZ_RNDV_FIN_READY) &&
            (best < 0 || slots[s].seq < slots[best].seq)) {
            best = s;
        }
    }
    return best;
}

/*
 * What slot @s sends next: its READ or its FIN, neither of them with a
 * CQE of the SQ's.  The slot stands for its SQ index in traces.
 */
static void uzura_tm_rndv_describe(UzuraQp *qp, int32_t s, UzuraSwqe *w)
{
    uint8_t st = qp->x->rndv[s].state;

    w->sq_idx = s;
    w->opcode = st == UZ_RNDV_READ_READY ? UZ_WR_RDMA_READ : UZ_WR_SEND;
    w->signaled = false;
}

static void uzura_tm_rndv_take(UzuraQp *qp, int32_t s)
{
    UzuraRndv *r = &qp->x->rndv[s];

    r->state = r->state == UZ_RNDV_READ_READY ? UZ_RNDV_READ : UZ_RNDV_FIN;
}

/*
 * The message @w of a slot: a READ of the sender's buffer into the
 * entry's, or the FIN, a SEND of a TMH alone.  Returns a UZ_WC_STATUS_*.
 */
static uint8_t uzura_tm_rndv_load(UzuraCore *core, UzuraQp *qp,
                                  const UzuraSwqe *w, UzuraSendWr *wr,
                                  uint8_t *verr)
{
    const UzuraRndv *r = &qp->x->rndv[w->src_id];
    uint8_t opcode = w->opcode;

    memset(&wr->h, 0, sizeof(wr->h));
    wr->h.wr_id = r->recv_wr_id;
    wr->h.opcode = opcode;
    wr->sgl.num = 0;
    wr->sgl.len = 0;
    *verr = UZ_VERR_NONE;
    if (opcode == UZ_WR_SEND) {
        wr->h.flags = UZ_WQE_F_INLINE;
        wr->h.inline_len = UZ_TMH_LEN;
        memset(wr->inl, 0, UZ_TMH_LEN);
        wr->inl[UZ_TMH_OPCODE] = UZ_TMH_FIN;
        stq_be_p(wr->inl + UZ_TMH_TAG, r->tag);
        wr->len = UZ_TMH_LEN;
        return UZ_WC_STATUS_SUCCESS;
    }
    wr->h.remote_addr = r->va;
    wr->h.rkey = r->rkey;
    wr->sgl.num = r->num_sge;
    wr->sgl.sge[0] = r->sge;
    wr->sgl.len = r->num_sge ? r->sge.length : 0;
    wr->len = r->len;
    /* The MR may have changed since the ADD. */
    *verr = uzura_sgl_check(core, &wr->sgl, qp->pdn, UZ_ACCESS_LOCAL_WRITE);
    return *verr ? UZ_WC_STATUS_LOC_PROT_ERR : UZ_WC_STATUS_SUCCESS;
}

/*
 * The requester completed a slot's message @w: after the READ the second
 * CQE, and on success the FIN; after the FIN the slot is free.  A slot
 * flushed meanwhile (the QP failed) has nothing left to do.
 */
static void uzura_tm_rndv_retired(UzuraCore *core, UzuraQp *qp,
                                  const UzuraSwqe *w)
{
    UzuraXfer *x = qp->x;
    int32_t s = w->src_id;
    UzuraRndv *r = &x->rndv[s];
    uint8_t status = w->status;

    if (w->opcode != UZ_WR_RDMA_READ) {
        if (r->state == UZ_RNDV_FIN) {
            r->state = UZ_RNDV_FREE;
        }
        return;
    }
    if (r->state != UZ_RNDV_READ) {
        return;
    }
    uzura_tm_rndv_cqe(core, qp, s, status, w->verr);
    if (status != UZ_WC_STATUS_SUCCESS) {
        r->state = UZ_RNDV_FREE;
        return;
    }
    r->state = UZ_RNDV_FIN_READY;
    r->seq = x->rndv_seq++;
    uzura_work_schedule(core);
}

const UzuraReqSource uzura_tm_rndv_source = {
    .ready = uzura_tm_rndv_ready,
    .describe = uzura_tm_rndv_describe,
    .load = uzura_tm_rndv_load,
    .take = uzura_tm_rndv_take,
    .retired = uzura_tm_rndv_retired,
    .own_cqe = true,
};

/*
 * The QP leaves the data path (error, reset, destroy): an EAGER message
 * half received and every rendezvous not yet read complete their entry
 * with a flush error; the slots are free.
 */
void uzura_tm_qp_flush(UzuraCore *core, UzuraQp *qp)
{
    UzuraXfer *x = qp->x;
    int32_t s;

    if (!x || !uzura_tm_qp(core, qp)) {
        return;
    }
    if (x->resp.have_rwqe && x->resp.tm_kind == UZ_TMK_EAGER) {
        struct uz_cqe cqe = { .status = UZ_WC_STATUS_WR_FLUSH_ERR };

        trace_uzura_tm_flush(x->qpn, x->resp.tm_idx);
        cqe.wr_id = cpu_to_le64(x->resp.rwqe.wr_id);
        cqe.qpn = cpu_to_le32(x->qpn);
        x->resp.have_rwqe = false;
        uzura_tm_complete(core, qp, &cqe, false);
    }
    if (!x->rndv) {
        return;
    }
    for (s = 0; s < UZ_TM_RNDV_SLOTS; s++) {
        UzuraRndv *r = &x->rndv[s];

        if (r->state == UZ_RNDV_READ_READY || r->state == UZ_RNDV_READ) {
            trace_uzura_tm_flush(x->qpn, r->idx);
            uzura_tm_rndv_cqe(core, qp, s, UZ_WC_STATUS_WR_FLUSH_ERR,
                              UZ_VERR_NONE);
        }
        r->state = UZ_RNDV_FREE;
    }
}
