/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uzura RDMA NIC: shared receive queues (CREATE_SRQ, MODIFY_SRQ,
 * RESIZE_SRQ, DESTROY_SRQ) and their doorbells.  Tag matching SRQs add
 * their lists in uzura-tm.c.
 */
#include "qemu/osdep.h"
#include "qemu/bitops.h"
#include "qemu/host-utils.h"
#include "uzura-core.h"
#include "trace.h"

uint8_t uzura_cmd_create_srq(UzuraCore *core, const struct uz_admin_cmd *cmd,
                             struct uz_admin_cqe *cqe)
{
    const struct uz_cmd_create_srq *c = (const void *)cmd->raw;
    uint32_t uctx = le32_to_cpu(c->uctx), limit = le32_to_cpu(c->limit), db;
    uint32_t ops_db = 0;
    uint64_t ring = le64_to_cpu(c->ring_addr), len;
    bool xrc = c->flags & UZ_SRQF_XRC, tm = c->flags & UZ_SRQF_TM;
    UzuraRdma *r = &core->rdma;
    UzuraXrcd *xrcd = NULL;
    UzuraCq *cq = NULL;
    UzuraPd *pd;
    uint8_t st;
    int64_t i;

    /* Tag matching is for RC QPs; an XRC SRQ serves XRC targets. */
    if (xrc && tm) {
        trace_uzura_srq_err_create_xrc_tm(c->flags);
        return UZ_CMD_BAD_PARAM;
    }
    pd = uzura_pd_lookup(core, le32_to_cpu(c->pdn), uctx);
    if (!pd) {
        trace_uzura_srq_err_create_pd(le32_to_cpu(c->pdn), uctx);
        return UZ_CMD_BAD_HANDLE;
    }
    if (xrc) {
        xrcd = uzura_xrcd_lookup(core, le32_to_cpu(c->xrcd));
        if (!xrcd) {
            trace_uzura_srq_err_create_xrcd(le32_to_cpu(c->xrcd));
            return UZ_CMD_BAD_HANDLE;
        }
    }
    if (xrc || tm) {
        cq = uzura_cq_lookup(core, le32_to_cpu(c->cqn), uctx);
        if (!cq) {
            trace_uzura_srq_err_create_cq(le32_to_cpu(c->cqn), uctx);
            return UZ_CMD_BAD_HANDLE;
        }
    }
    if (c->flags & ~(UZ_SRQF_XRC | UZ_SRQF_TM)) {
        trace_uzura_srq_err_create_flags(c->flags, UZ_SRQF_XRC | UZ_SRQF_TM);
        return UZ_CMD_BAD_PARAM;
    }
    if (c->log_depth < 1 || c->log_depth > 16) {
        trace_uzura_srq_err_create_log_depth(c->log_depth, 16);
        return UZ_CMD_BAD_PARAM;
    }
    if ((1u << c->log_depth) > r->lim.max_srq_wr) {
        trace_uzura_srq_err_create_depth(1u << c->log_depth,
                                         r->lim.max_srq_wr);
        return UZ_CMD_BAD_PARAM;
    }
    if (c->log_wqe_size < 4 || c->log_wqe_size > 9) {
        trace_uzura_srq_err_create_wqe_size(c->log_wqe_size, 4, 9);
        return UZ_CMD_BAD_PARAM;
    }
    if (limit >= (1u << c->log_depth)) {
        trace_uzura_srq_err_create_limit(limit, 1u << c->log_depth);
        return UZ_CMD_BAD_PARAM;
    }
    st = tm ? uzura_tm_srq_check(core, c) : UZ_CMD_OK;
    if (st != UZ_CMD_OK) {
        return st;
    }
    len = (uint64_t)1 << (c->log_depth + c->log_wqe_size);
    if (!uzura_dma_ok(core, ring, len, false)) {
        trace_uzura_srq_err_create_ring_addr(ring, len);
        return UZ_CMD_BAD_ADDR;
    }
    i = UZ_FIND_FREE(r->srq, r->lim.max_srq, 0);
    if (i < 0) {
        trace_uzura_srq_err_create_full(r->lim.max_srq);
        return UZ_CMD_NO_RESOURCES;
    }
    if (!uzura_db_alloc(core, uctx, UZ_DBK_SRQ, i, &db)) {
        trace_uzura_srq_err_create_db(uctx);
        return UZ_CMD_NO_RESOURCES;
    }
    /* A TM SRQ's list operations ring a second slot of the page. */
    if (tm && !uzura_db_alloc(core, uctx, UZ_DBK_TM, i, &ops_db)) {
        trace_uzura_srq_err_create_tm_db(uctx);
        uzura_db_free(core, db);
        return UZ_CMD_NO_RESOURCES;
    }
    r->srq[i] = (UzuraSrq) {
        .valid = true, .xrc = xrc, .uctx = uctx, .pdn = le32_to_cpu(c->pdn),
        .xrcd = xrc ? le32_to_cpu(c->xrcd) : 0,
        .cqn = cq ? le32_to_cpu(c->cqn) : 0,
        .ring_addr = ring, .log_depth = c->log_depth,
        .log_wqe_size = c->log_wqe_size, .limit = limit, .db_offset = db,
    };
    if (tm) {
        uzura_tm_srq_init(&r->srq[i], c, ops_db);
    }
    pd->users++;
    if (xrc) {
        xrcd->users++;
    }
    if (cq) {
        cq->users++;
    }
    uzura_uctx_get(core, uctx);
    cqe->out0 = cpu_to_le32(i);
    cqe->out1 = cpu_to_le32(db);
    cqe->out2 = cpu_to_le32(ops_db);
    return UZ_CMD_OK;
}

UzuraSrq *uzura_srq_lookup(UzuraCore *core, uint32_t srqn)
{
    UzuraRdma *r = &core->rdma;

    return srqn < r->lim.max_srq && r->srq[srqn].valid ? &r->srq[srqn] : NULL;
}

uint8_t uzura_cmd_modify_srq(UzuraCore *core, const struct uz_admin_cmd *cmd,
                             struct uz_admin_cqe *cqe)
{
    const struct uz_cmd_modify_srq *c = (const void *)cmd->raw;
    uint32_t srqn = le32_to_cpu(c->srqn), uctx = le32_to_cpu(c->uctx);
    UzuraSrq *srq = uzura_srq_lookup(core, srqn);
    uint32_t limit = le32_to_cpu(c->limit);

    if (!srq) {
        trace_uzura_srq_err_modify_handle(srqn);
        return UZ_CMD_BAD_HANDLE;
    }
    if (srq->uctx != uctx) {
        trace_uzura_srq_err_modify_uctx(srqn, uctx, srq->uctx);
        return UZ_CMD_BAD_HANDLE;
    }
    if (limit >= (1u << srq->log_depth)) {
        trace_uzura_srq_err_modify_limit(srqn, limit, 1u << srq->log_depth);
        return UZ_CMD_BAD_PARAM;
    }
    srq->limit = limit;
    return UZ_CMD_OK;
}

uint8_t uzura_cmd_resize_srq(UzuraCore *core, const struct uz_admin_cmd *cmd,
                             struct uz_admin_cqe *cqe)
{
    const struct uz_cmd_resize_srq *c = (const void *)cmd->raw;
    uint32_t srqn = le32_to_cpu(c->srqn), uctx = le32_to_cpu(c->uctx);
    UzuraSrq *srq = uzura_srq_lookup(core, srqn);
    uint64_t ring = le64_to_cpu(c->ring_addr), len;
    uint32_t depth = 1u << (c->log_depth & 31), limit, used;

    if (!srq) {
        trace_uzura_srq_err_resize_handle(srqn);
        return UZ_CMD_BAD_HANDLE;
    }
    if (srq->uctx != uctx) {
        trace_uzura_srq_err_resize_uctx(srqn, uctx, srq->uctx);
        return UZ_CMD_BAD_HANDLE;
    }
    limit = c->flags & UZ_SRQ_RESIZE_LIMIT ? le32_to_cpu(c->limit) :
                                             srq->limit;
    if (c->log_depth < 1 || c->log_depth > 16) {
        trace_uzura_srq_err_resize_log_depth(srqn, c->log_depth, 16);
        return UZ_CMD_BAD_PARAM;
    }
    if (c->flags & ~UZ_SRQ_RESIZE_LIMIT) {
        trace_uzura_srq_err_resize_flags(srqn, c->flags,
                                         UZ_SRQ_RESIZE_LIMIT);
        return UZ_CMD_BAD_PARAM;
    }
    if (depth > core->rdma.lim.max_srq_wr) {
        trace_uzura_srq_err_resize_depth(srqn, depth,
                                         core->rdma.lim.max_srq_wr);
        return UZ_CMD_BAD_PARAM;
    }
    if (limit >= depth) {
        trace_uzura_srq_err_resize_limit(srqn, limit, depth);
        return UZ_CMD_BAD_PARAM;
    }
    /* The posted WQEs the device has not taken must fit the new ring. */
    used = uzura_ring_used(srq->pi, srq->ci);
    if (used > depth) {
        trace_uzura_srq_err_resize_used(srqn, used, depth);
        return UZ_CMD_BAD_PARAM;
    }
    len = (uint64_t)depth << srq->log_wqe_size;
    if (!uzura_dma_ok(core, ring, len, false)) {
        trace_uzura_srq_err_resize_ring_addr(srqn, ring, len);
        return UZ_CMD_BAD_ADDR;
    }
    trace_uzura_obj_srq_resize(le32_to_cpu(c->srqn), ring, c->log_depth,
                               uzura_ring_used(srq->pi, srq->ci));
    srq->ring_addr = ring;
    srq->log_depth = c->log_depth;
    srq->limit = limit;
    return UZ_CMD_OK;
}

uint8_t uzura_cmd_destroy_srq(UzuraCore *core, const struct uz_admin_cmd *cmd,
                              struct uz_admin_cqe *cqe)
{
    const struct uz_cmd_obj *c = (const void *)cmd->raw;
    uint32_t srqn = le32_to_cpu(c->handle), uctx = le32_to_cpu(c->uctx);
    UzuraSrq *srq = uzura_srq_lookup(core, srqn);

    if (!srq) {
        trace_uzura_srq_err_destroy_handle(srqn);
        return UZ_CMD_BAD_HANDLE;
    }
    if (srq->uctx != uctx) {
        trace_uzura_srq_err_destroy_uctx(srqn, uctx, srq->uctx);
        return UZ_CMD_BAD_HANDLE;
    }
    if (srq->users) {
        trace_uzura_srq_err_destroy_busy(srqn, srq->users);
        return UZ_CMD_BUSY;
    }
    core->rdma.pd[srq->pdn].users--;
    if (srq->xrc) {
        core->rdma.xrcd[srq->xrcd].users--;
        core->rdma.cq[srq->cqn].users--;
        uzura_xrc_srq_gone(core, le32_to_cpu(c->handle));
    }
    if (srq->tm) {
        core->rdma.cq[srq->cqn].users--;
        uzura_tm_srq_destroy(core, srq);
    }
    uzura_db_free(core, srq->db_offset);
    uzura_uctx_put(core, srq->uctx);
    srq->valid = false;
    return UZ_CMD_OK;
}

void uzura_srq_doorbell(UzuraCore *core, uint32_t srqn, uint32_t val)
{
    UzuraSrq *srq = &core->rdma.srq[srqn];
    uint32_t pi = val & UZ_DB_PI_MASK;

    if (!uzura_ring_pi_ok(pi, srq->ci, 1u << srq->log_depth)) {
        uzura_guest_error(trace_uzura_obj_err_srq_doorbell(srqn, val, srq->ci),
                          "SRQ %u doorbell %u overruns the ring", srqn, pi);
        uzura_core_record_error(core, UZ_ERR_BAD_VALUE, srq->db_offset);
        return;
    }
    srq->pi = pi;
}
