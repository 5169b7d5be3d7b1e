/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uzura RDMA NIC: completion queues.
 *
 * CREATE_CQ, RESIZE_CQ and DESTROY_CQ, the CQ doorbell, and writing
 * completions.  A CQE goes to the CQ's next slot with the pass's phase;
 * an armed CQ then posts one UZ_EQE_COMPLETION to its EQ.  A CQ that
 * would overwrite an entry its consumer has not reported stops (overflow
 * is an error in InfiniBand) and raises UZ_EQE_CQ_ERROR.
 */
#include "qemu/osdep.h"
#include "qemu/bitops.h"
#include "qemu/host-utils.h"
#include "uzura-core.h"
#include "trace.h"

UzuraCq *uzura_cq_lookup(UzuraCore *core, uint32_t cqn, uint32_t uctx)
{
    UzuraRdma *r = &core->rdma;

    if (cqn >= r->lim.max_cq || !r->cq[cqn].valid || r->cq[cqn].uctx != uctx) {
        return NULL;
    }
    return &r->cq[cqn];
}

/* Every page of a paged CQ ring is aligned and writable. */
static bool uzura_cq_pages_ok(UzuraCore *core, uint64_t list,
                              uint8_t log_depth, uint8_t flags)
{
    uint64_t bytes = (uint64_t)uzura_cqe_size(flags) << log_depth;
    uint32_t n = MAX(1, bytes >> UZ_CQ_PAGE_SHIFT);
    uint32_t page = MIN(bytes, 1u << UZ_CQ_PAGE_SHIFT);
    uint64_t pa[64];
    uint32_t i, j, k;

    if (!uzura_dma_ok(core, list, (uint64_t)n * sizeof(pa[0]), false)) {
        trace_uzura_cq_err_page_list(list, n);
        return false;
    }
    uzura_admin_charge(core, n);
    for (i = 0; i < n; i += k) {
        k = MIN(n - i, ARRAY_SIZE(pa));
        if (!uzura_dma_read(core, list + (uint64_t)i * sizeof(pa[0]), pa,
                            k * sizeof(pa[0]))) {
            trace_uzura_cq_err_page_list_read(list, i);
            return false;
        }
        for (j = 0; j < k; j++) {
            uint64_t a = le64_to_cpu(pa[j]);

            if (a & MAKE_64BIT_MASK(0, UZ_CQ_PAGE_SHIFT)) {
                trace_uzura_cq_err_page_align(i + j, a);
                return false;
            }
            if (!uzura_dma_ok(core, a, page, true)) {
                trace_uzura_cq_err_page_addr(i + j, a, page);
                return false;
            }
        }
    }
    return true;
}

/* A CQ ring of CREATE_CQ or RESIZE_CQ: its depth, flags and reach. */
static uint8_t uzura_cq_ring_check(UzuraCore *core, uint64_t ring,
                                   uint8_t log_depth, uint8_t flags)
{
    uint64_t bytes;

    if (log_depth < 1 || log_depth > UZ_CQ_LOG_DEPTH_MAX) {
        trace_uzura_cq_err_log_depth(log_depth, UZ_CQ_LOG_DEPTH_MAX);
        return UZ_CMD_BAD_PARAM;
    }
    if ((1u << log_depth) > core->rdma.lim.max_cqe) {
        trace_uzura_cq_err_depth(1u << log_depth, core->rdma.lim.max_cqe);
        return UZ_CMD_BAD_PARAM;
    }
    if (flags & ~(UZ_CQF_PAGE_LIST | UZ_CQF_TIMESTAMP)) {
        trace_uzura_cq_err_flags(flags, UZ_CQF_PAGE_LIST | UZ_CQF_TIMESTAMP);
        return UZ_CMD_BAD_PARAM;
    }
    bytes = (uint64_t)uzura_cqe_size(flags) << log_depth;
    if (flags & UZ_CQF_PAGE_LIST) {
        /* uzura_cq_pages_ok traces which page failed. */
        if (!uzura_cq_pages_ok(core, ring, log_depth, flags)) {
            return UZ_CMD_BAD_ADDR;
        }
    } else if (!uzura_dma_ok(core, ring, bytes, true)) {
        trace_uzura_cq_err_ring_addr(ring, bytes);
        return UZ_CMD_BAD_ADDR;
    }
    return UZ_CMD_OK;
}

uint8_t uzura_cmd_create_cq(UzuraCore *core, const struct uz_admin_cmd *cmd,
                            struct uz_admin_cqe *cqe)
{
    const struct uz_cmd_create_cq *c = (const void *)cmd->raw;
    uint32_t uctx = le32_to_cpu(c->uctx), eqn = le32_to_cpu(c->eqn), db;
    uint64_t ring = le64_to_cpu(c->ring_addr);
    UzuraRdma *r = &core->rdma;
    int64_t i;
    uint8_t st;

    if (!uzura_uctx_ok(core, uctx)) {
        trace_uzura_cq_err_create_uctx(uctx);
        return UZ_CMD_BAD_HANDLE;
    }
    st = uzura_cq_ring_check(core, ring, c->log_depth, c->flags);
    if (st != UZ_CMD_OK) {
        return st;
    }
    i = UZ_FIND_FREE(r->cq, r->lim.max_cq, 0);
    if (i < 0) {
        trace_uzura_cq_err_create_full(r->lim.max_cq);
        return UZ_CMD_NO_RESOURCES;
    }
    if (!uzura_eq_get(core, eqn)) {
        trace_uzura_cq_err_create_eq(eqn);
        return UZ_CMD_BAD_HANDLE;
    }
    if (!uzura_db_alloc(core, uctx, UZ_DBK_CQ, i, &db)) {
        trace_uzura_cq_err_create_db(uctx);
        uzura_eq_put(core, eqn);
        return UZ_CMD_NO_RESOURCES;
    }
    r->cq[i] = (UzuraCq) {
        .valid = true, .uctx = uctx, .eqn = eqn, .ring_addr = ring,
        .paged = c->flags & UZ_CQF_PAGE_LIST, .page_addr = UZ_CQ_NO_PAGE,
        .ts = c->flags & UZ_CQF_TIMESTAMP,
        .log_depth = c->log_depth, .db_offset = db,
    };
    uzura_uctx_get(core, uctx);
    trace_uzura_obj_cq_create(i, ring, c->log_depth, eqn, db);
    cqe->out0 = cpu_to_le32(i);
    cqe->out1 = cpu_to_le32(db);
    return UZ_CMD_OK;
}

/*
 * The CQ moves to a new ring in O(1): the CQEs its driver has not
 * consumed stay where they are, for the driver to copy, and the device
 * leaves their slots free in the new ring.
 */
uint8_t uzura_cmd_resize_cq(UzuraCore *core, const struct uz_admin_cmd *cmd,
                            struct uz_admin_cqe *cqe)
{
    const struct uz_cmd_resize_cq *c = (const void *)cmd->raw;
    uint32_t cqn = le32_to_cpu(c->cqn), uctx = le32_to_cpu(c->uctx);
    UzuraCq *cq = uzura_cq_lookup(core, cqn, uctx);
    uint64_t ring = le64_to_cpu(c->ring_addr);
    uint32_t ci = le32_to_cpu(c->ci) & UZ_IDX_MASK, n;
    uint8_t st;

    if (!cq) {
        trace_uzura_cq_err_resize_handle(cqn, uctx);
        return UZ_CMD_BAD_HANDLE;
    }
    /* The CQEs keep their size, which the consumer copies across. */
    if (!(c->flags & UZ_CQF_TIMESTAMP) != !cq->ts) {
        trace_uzura_cq_err_resize_timestamp(cqn, c->flags, cq->ts);
        return UZ_CMD_BAD_PARAM;
    }
    st = uzura_cq_ring_check(core, ring, c->log_depth, c->flags);
    if (st != UZ_CMD_OK) {
        return st;
    }
    /* The consumer cannot be ahead of the device, nor a ring behind. */
    n = uzura_ring_used(cq->pi, ci);
    if (n > (1u << cq->log_depth)) {
        trace_uzura_cq_err_resize_ci(cqn, ci, cq->pi, 1u << cq->log_depth);
        return UZ_CMD_BAD_PARAM;
    }
    if (n > (1u << c->log_depth)) {
        trace_uzura_cq_err_resize_used(cqn, n, 1u << c->log_depth);
        return UZ_CMD_BAD_PARAM;
    }
    trace_uzura_obj_cq_resize(le32_to_cpu(c->cqn), ring, c->log_depth, n);
    cq->ring_addr = ring;
    cq->paged = c->flags & UZ_CQF_PAGE_LIST;
    cq->page_addr = UZ_CQ_NO_PAGE;
    cq->log_depth = c->log_depth;
    cq->pi = n;
    cq->ci = 0;
    cqe->out0 = cpu_to_le32(n);
    return UZ_CMD_OK;
}

uint8_t uzura_cmd_destroy_cq(UzuraCore *core, const struct uz_admin_cmd *cmd,
                             struct uz_admin_cqe *cqe)
{
    const struct uz_cmd_obj *c = (const void *)cmd->raw;
    uint32_t cqn = le32_to_cpu(c->handle), uctx = le32_to_cpu(c->uctx);
    UzuraCq *cq = uzura_cq_lookup(core, cqn, uctx);

    if (!cq) {
        trace_uzura_cq_err_destroy_handle(cqn, uctx);
        return UZ_CMD_BAD_HANDLE;
    }
    if (cq->users) {
        trace_uzura_cq_err_destroy_busy(cqn, cq->users);
        return UZ_CMD_BUSY;
    }
    uzura_eq_put(core, cq->eqn);
    uzura_db_free(core, cq->db_offset);
    uzura_uctx_put(core, cq->uctx);
    cq->valid = false;
    return UZ_CMD_OK;
}

/*
 * The CQ doorbell reports the consumer index and may arm the CQ: the next
 * completion (with UZ_DB_ARM_SOLICITED: the next solicited one) raises one
 * UZ_EQE_COMPLETION on the CQ's EQ.
 */
void uzura_cq_doorbell(UzuraCore *core, uint32_t cqn, uint32_t val)
{
    UzuraCq *cq = &core->rdma.cq[cqn];
    uint32_t ci = val & UZ_DB_CI_MASK;

    if (!uzura_ring_ci_ok(ci, cq->ci, cq->pi)) {
        uzura_guest_error(trace_uzura_obj_err_cq_doorbell(cqn, val, cq->pi),
                          "CQ %u doorbell: consumer index %u is past the "
                          "producer index %u", cqn, ci, cq->pi);
        uzura_core_record_error(core, UZ_ERR_BAD_VALUE, cq->db_offset);
        return;
    }
    cq->ci = ci;
    if (val & UZ_DB_ARM) {
        cq->arm = UZ_DB_ARM >> 24;
    } else if (val & UZ_DB_ARM_SOLICITED) {
        cq->arm = UZ_DB_ARM_SOLICITED >> 24;
    }
    trace_uzura_obj_cq_doorbell(cqn, ci, cq->arm);
}

/*
 * The address of CQE slot pos.  A paged ring's page address is read from
 * its page list once per page the device moves into, not once per CQE.
 */
static bool uzura_cq_slot(UzuraCore *core, UzuraCq *cq, uint32_t pos,
                          uint64_t *addr)
{
    uint64_t off = (uint64_t)pos *
                   uzura_cqe_size(cq->ts ? UZ_CQF_TIMESTAMP : 0);
    uint32_t page = off >> UZ_CQ_PAGE_SHIFT;
    uint64_t pa;

    if (!cq->paged) {
        *addr = cq->ring_addr + off;
        return true;
    }
    if (cq->page_addr == UZ_CQ_NO_PAGE || cq->page != page) {
        if (!uzura_dma_read(core, cq->ring_addr + page * sizeof(pa), &pa,
                            sizeof(pa))) {
            return false;
        }
        pa = le64_to_cpu(pa);
        if (pa & MAKE_64BIT_MASK(0, UZ_CQ_PAGE_SHIFT)) {
            return false;
        }
        cq->page = page;
        cq->page_addr = pa;
    }
    *addr = cq->page_addr + (off & MAKE_64BIT_MASK(0, UZ_CQ_PAGE_SHIFT));
    return true;
}

bool uzura_cq_post(UzuraCore *core, uint32_t cqn, const struct uz_cqe *cqe,
                   bool solicited)
{
    UzuraCq *cq = cqn < core->rdma.lim.max_cq ? &core->rdma.cq[cqn] : NULL;
    uint32_t size, pos;
    struct uz_cqe_ts t = { .cqe = *cqe };
    struct uz_cqe *e = &t.cqe;
    uint64_t addr;
    bool written;

    /* An XRC target QP without an SRQ names no CQ. */
    if (!cq || !cq->valid || cq->error) {
        return false;
    }
    size = 1u << cq->log_depth;
    pos = cq->pi & (size - 1);
    if (uzura_ring_used(cq->pi, cq->ci) >= size) {
        uzura_guest_error(trace_uzura_cq_err_overflow(cqn),
                          "CQ %u overflowed; it stops", cqn);
        cq->error = true;
        uzura_eq_post_async(core, UZ_EQE_CQ_ERROR, cqn, 0);
        return false;
    }
    e->flags = ((cq->pi >> cq->log_depth) & 1) ? 0 : UZ_CQE_PHASE;
    if (!uzura_cq_slot(core, cq, pos, &addr)) {
        written = false;
    } else if (cq->ts) {
        t.timestamp = cpu_to_le64(uzura_clock_ns());
        written = uzura_dma_write_entry(core, addr, &t, sizeof(t));
    } else {
        written = uzura_dma_write_entry(core, addr, e, sizeof(*e));
    }
    if (!written) {
        uzura_guest_error(trace_uzura_cq_err_dma(cqn, cq->ring_addr),
                          "CQ %u ring not accessible; it stops", cqn);
        cq->error = true;
        uzura_eq_post_async(core, UZ_EQE_CQ_ERROR, cqn, 0);
        return false;
    }
    trace_uzura_cq_post(cqn, cq->pi, le32_to_cpu(e->qpn), e->opcode,
                        e->status);
    cq->pi = (cq->pi + 1) & UZ_IDX_MASK;
    core->counters.cqes++;
    if (e->status != UZ_WC_STATUS_SUCCESS) {
        core->counters.cqes_error++;
    }
    if (cq->arm == (UZ_DB_ARM >> 24) ||
        (cq->arm == (UZ_DB_ARM_SOLICITED >> 24) && solicited)) {
        cq->arm = 0;
        uzura_eq_post(core, cq->eqn, UZ_EQE_COMPLETION, cqn, 0);
    }
    return true;
}
