/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uzura RDMA NIC: RDMA object commands for contexts, protection domains,
 * completion queues, shared receive queues and address handles.  QPs
 * live in uzura-qp.c, memory regions in uzura-mr.c.
 *
 * Every object belongs to a context (0 is the kernel's); objects that
 * others refer to count their users and refuse to go while used.
 */
#include "qemu/osdep.h"
#include "qemu/bitmap.h"
#include "qemu/bitops.h"
#include "qemu/host-utils.h"
#include "uzura-core.h"
#include "trace.h"

static const uint8_t zero_mac[6];

void uzura_rdma_init(UzuraCore *core)
{
    UzuraRdma *r = &core->rdma;

    r->lim.max_uctx = core->db_pages - 1;
    r->uctx = g_new0(UzuraUctx, r->lim.max_uctx + 1);
    r->pd = g_new0(UzuraPd, r->lim.max_pd);
    r->cq = g_new0(UzuraCq, r->lim.max_cq);
    r->srq = g_new0(UzuraSrq, r->lim.max_srq);
    r->qp = g_new0(UzuraQp, r->lim.max_qp);
    r->qp_live = bitmap_new(r->lim.max_qp);
    r->mr = g_new0(UzuraMr, r->lim.max_mr);
    r->ah = g_new0(UzuraAh, r->lim.max_ah);
    uzura_xlat_init(core);
}

void uzura_rdma_uninit(UzuraCore *core)
{
    UzuraRdma *r = &core->rdma;
    uint32_t i;

    uzura_qp_free_all(core);
    uzura_xlat_uninit(core);
    for (i = 0; r->srq && i < r->lim.max_srq; i++) {
        uzura_tm_srq_destroy(NULL, &r->srq[i]);
    }
    g_free(r->uctx);
    g_free(r->pd);
    g_free(r->cq);
    g_free(r->srq);
    g_free(r->qp);
    g_free(r->qp_live);
    g_free(r->mr);
    g_free(r->ah);
    uzura_dm_uninit(core);
}

/* Forget every object; the doorbell map is cleared by the caller. */
void uzura_rdma_reset(UzuraCore *core)
{
    UzuraRdma *r = &core->rdma;
    uint32_t i;

    uzura_qp_free_all(core);
    uzura_xlat_reset(core);
    for (i = 0; i < r->lim.max_srq; i++) {
        uzura_tm_srq_destroy(NULL, &r->srq[i]);     /* the map is cleared */
    }
    r->tm_owed = false;
    memset(r->uctx, 0, (r->lim.max_uctx + 1) * sizeof(*r->uctx));
    memset(r->pd, 0, r->lim.max_pd * sizeof(*r->pd));
    memset(r->cq, 0, r->lim.max_cq * sizeof(*r->cq));
    memset(r->srq, 0, r->lim.max_srq * sizeof(*r->srq));
    memset(r->qp, 0, r->lim.max_qp * sizeof(*r->qp));
    bitmap_zero(r->qp_live, r->lim.max_qp);
    memset(r->mr, 0, r->lim.max_mr * sizeof(*r->mr));
    memset(r->ah, 0, r->lim.max_ah * sizeof(*r->ah));
    memset(r->mcast, 0, sizeof(r->mcast));
    memset(r->xrcd, 0, sizeof(r->xrcd));
    memset(r->flow, 0, sizeof(r->flow));
    r->nflows = 0;
    uzura_dm_reset(core);
}

void uzura_rdma_fill_attr(UzuraCore *core, struct uz_device_attr *attr)
{
    const UzuraLimits *l = &core->rdma.lim;

    attr->max_qp = cpu_to_le32(l->max_qp);
    attr->max_qp_wr = cpu_to_le32(l->max_qp_wr);
    attr->max_sge = cpu_to_le32(l->max_sge);
    attr->max_inline = cpu_to_le32(l->max_inline);
    attr->max_cq = cpu_to_le32(l->max_cq);
    attr->max_cqe = cpu_to_le32(l->max_cqe);
    attr->max_mr = cpu_to_le32(l->max_mr);
    attr->max_mr_size = cpu_to_le64(l->max_mr_size);
    attr->max_pd = cpu_to_le32(l->max_pd);
    attr->max_srq = cpu_to_le32(l->max_srq);
    attr->max_srq_wr = cpu_to_le32(l->max_srq_wr);
    attr->max_ah = cpu_to_le32(l->max_ah);
    attr->max_qp_rd_atom = cpu_to_le32(l->max_qp_rd_atom);
    attr->xlat_cache_entries = cpu_to_le32(l->xlat_cache_entries);
    attr->max_crw_tags = cpu_to_le32(l->max_crw_tags);
    attr->max_fast_reg_pages = cpu_to_le32(l->max_fast_reg_pages);
    attr->max_mcast_grp = cpu_to_le32(UZ_MCAST_MAX_GRP);
    attr->max_mcast_qp_attach = cpu_to_le32(UZ_MCAST_MAX_QP_ATTACH);
    attr->max_xrcd = cpu_to_le32(UZ_XRCD_MAX);
    attr->dm_size = cpu_to_le32(core->rdma.dm_size);
    attr->dm_offset = cpu_to_le32(core->rdma.dm_offset);
    attr->max_dm = cpu_to_le32(core->rdma.max_dm);
    attr->max_tm_tags = cpu_to_le32(UZ_TM_MAX_TAGS);
    attr->max_tm_ops = cpu_to_le32(1u << UZ_TM_LOG_MAX_OPS);
    attr->max_rss_tbl = cpu_to_le32(1u << UZ_RSS_LOG_MAX);
    /* Pages of 4 KiB up to 1 GiB. */
    attr->page_size_cap = cpu_to_le32(MAKE_64BIT_MASK(12, 19));
}

/* ---- contexts and lookups ---- */

bool uzura_uctx_ok(UzuraCore *core, uint32_t uctx)
{
    return uctx == 0 ||
           (uctx <= core->rdma.lim.max_uctx && core->rdma.uctx[uctx].valid);
}

void uzura_uctx_get(UzuraCore *core, uint32_t uctx)
{
    core->rdma.uctx[uctx].users++;
}

void uzura_uctx_put(UzuraCore *core, uint32_t uctx)
{
    core->rdma.uctx[uctx].users--;
}

/*
 * Lookups of objects a context may use.  A valid object's context is
 * valid too (a context with objects cannot go), so these need no
 * separate context check.
 */
UzuraPd *uzura_pd_lookup(UzuraCore *core, uint32_t pdn, uint32_t uctx)
{
    UzuraRdma *r = &core->rdma;

    if (pdn >= r->lim.max_pd || !r->pd[pdn].valid || r->pd[pdn].uctx != uctx) {
        return NULL;
    }
    return &r->pd[pdn];
}

static uint8_t uzura_cmd_create_uctx(UzuraCore *core,
                                     const struct uz_admin_cmd *cmd,
                                     struct uz_admin_cqe *cqe)
{
    UzuraRdma *r = &core->rdma;
    int64_t i = UZ_FIND_FREE(r->uctx, r->lim.max_uctx + 1, 1);

    if (i < 0) {
        return UZ_CMD_NO_RESOURCES;
    }
    r->uctx[i] = (UzuraUctx) { .valid = true };
    cqe->out0 = cpu_to_le32(i);
    cqe->out1 = cpu_to_le32(i * UZ_DB_PAGE_SIZE);
    return UZ_CMD_OK;
}

static uint8_t uzura_cmd_destroy_uctx(UzuraCore *core,
                                      const struct uz_admin_cmd *cmd,
                                      struct uz_admin_cqe *cqe)
{
    const struct uz_cmd_obj *c = (const void *)cmd->raw;
    uint32_t i = le32_to_cpu(c->handle);
    UzuraRdma *r = &core->rdma;

    if (i == 0 || i > r->lim.max_uctx || !r->uctx[i].valid) {
        return UZ_CMD_BAD_HANDLE;
    }
    if (r->uctx[i].users) {
        return UZ_CMD_BUSY;
    }
    r->uctx[i].valid = false;
    return UZ_CMD_OK;
}

/* ---- protection domains ---- */

static uint8_t uzura_cmd_alloc_pd(UzuraCore *core,
                                  const struct uz_admin_cmd *cmd,
                                  struct uz_admin_cqe *cqe)
{
    const struct uz_cmd_obj *c = (const void *)cmd->raw;
    uint32_t uctx = le32_to_cpu(c->uctx);
    UzuraRdma *r = &core->rdma;
    int64_t i;

    if (!uzura_uctx_ok(core, uctx)) {
        return UZ_CMD_BAD_HANDLE;
    }
    i = UZ_FIND_FREE(r->pd, r->lim.max_pd, 0);
    if (i < 0) {
        return UZ_CMD_NO_RESOURCES;
    }
    r->pd[i] = (UzuraPd) { .valid = true, .uctx = uctx };
    uzura_uctx_get(core, uctx);
    cqe->out0 = cpu_to_le32(i);
    return UZ_CMD_OK;
}

static uint8_t uzura_cmd_dealloc_pd(UzuraCore *core,
                                    const struct uz_admin_cmd *cmd,
                                    struct uz_admin_cqe *cqe)
{
    const struct uz_cmd_obj *c = (const void *)cmd->raw;
    UzuraPd *pd = uzura_pd_lookup(core, le32_to_cpu(c->handle),
                                  le32_to_cpu(c->uctx));

    if (!pd) {
        return UZ_CMD_BAD_HANDLE;
    }
    if (pd->users) {
        return UZ_CMD_BUSY;
    }
    uzura_uctx_put(core, pd->uctx);
    pd->valid = false;
    return UZ_CMD_OK;
}

/* ---- address handles ---- */

static uint8_t uzura_cmd_create_ah(UzuraCore *core,
                                   const struct uz_admin_cmd *cmd,
                                   struct uz_admin_cqe *cqe)
{
    const struct uz_cmd_create_ah *c = (const void *)cmd->raw;
    uint32_t uctx = le32_to_cpu(c->uctx);
    UzuraRdma *r = &core->rdma;
    UzuraPd *pd;
    int64_t i;

    pd = uzura_pd_lookup(core, le32_to_cpu(c->pdn), uctx);
    if (!pd) {
        return UZ_CMD_BAD_HANDLE;
    }
    /* A group MAC only for a multicast group. */
    if ((c->dmac[0] & 1) != uzura_mcast_gid(c->dgid) ||
        !memcmp(c->dmac, zero_mac, sizeof(zero_mac))) {
        return UZ_CMD_BAD_PARAM;
    }
    i = UZ_FIND_FREE(r->ah, r->lim.max_ah, 0);
    if (i < 0) {
        return UZ_CMD_NO_RESOURCES;
    }
    r->ah[i] = (UzuraAh) {
        .valid = true, .uctx = uctx, .pdn = le32_to_cpu(c->pdn),
        .av = {
            .hop_limit = c->hop_limit, .traffic_class = c->traffic_class,
            .flow_label = c->flow_label,
        },
    };
    memcpy(r->ah[i].av.dgid, c->dgid, sizeof(c->dgid));
    memcpy(r->ah[i].av.sgid, c->sgid, sizeof(c->sgid));
    memcpy(r->ah[i].av.dmac, c->dmac, sizeof(c->dmac));
    pd->users++;
    cqe->out0 = cpu_to_le32(i);
    return UZ_CMD_OK;
}

static uint8_t uzura_cmd_destroy_ah(UzuraCore *core,
                                    const struct uz_admin_cmd *cmd,
                                    struct uz_admin_cqe *cqe)
{
    const struct uz_cmd_obj *c = (const void *)cmd->raw;
    uint32_t i = le32_to_cpu(c->handle);
    UzuraRdma *r = &core->rdma;

    if (i >= r->lim.max_ah || !r->ah[i].valid ||
        r->ah[i].uctx != le32_to_cpu(c->uctx)) {
        return UZ_CMD_BAD_HANDLE;
    }
    r->pd[r->ah[i].pdn].users--;
    r->ah[i].valid = false;
    return UZ_CMD_OK;
}

/* ---- completion queues ---- */

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
        return false;
    }
    uzura_admin_charge(core, n);
    for (i = 0; i < n; i += k) {
        k = MIN(n - i, ARRAY_SIZE(pa));
        if (!uzura_dma_read(core, list + (uint64_t)i * sizeof(pa[0]), pa,
                            k * sizeof(pa[0]))) {
            return false;
        }
        for (j = 0; j < k; j++) {
            uint64_t a = le64_to_cpu(pa[j]);

            if ((a & MAKE_64BIT_MASK(0, UZ_CQ_PAGE_SHIFT)) ||
                !uzura_dma_ok(core, a, page, true)) {
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
    if (log_depth < 1 || log_depth > UZ_CQ_LOG_DEPTH_MAX ||
        (1u << log_depth) > core->rdma.lim.max_cqe ||
        (flags & ~(UZ_CQF_PAGE_LIST | UZ_CQF_TIMESTAMP))) {
        return UZ_CMD_BAD_PARAM;
    }
    if (flags & UZ_CQF_PAGE_LIST) {
        if (!uzura_cq_pages_ok(core, ring, log_depth, flags)) {
            return UZ_CMD_BAD_ADDR;
        }
    } else if (!uzura_dma_ok(core, ring,
                             (uint64_t)uzura_cqe_size(flags) << log_depth,
                             true)) {
        return UZ_CMD_BAD_ADDR;
    }
    return UZ_CMD_OK;
}

static uint8_t uzura_cmd_create_cq(UzuraCore *core,
                                   const struct uz_admin_cmd *cmd,
                                   struct uz_admin_cqe *cqe)
{
    const struct uz_cmd_create_cq *c = (const void *)cmd->raw;
    uint32_t uctx = le32_to_cpu(c->uctx), eqn = le32_to_cpu(c->eqn), db;
    uint64_t ring = le64_to_cpu(c->ring_addr);
    UzuraRdma *r = &core->rdma;
    int64_t i;
    uint8_t st;

    if (!uzura_uctx_ok(core, uctx)) {
        return UZ_CMD_BAD_HANDLE;
    }
    st = uzura_cq_ring_check(core, ring, c->log_depth, c->flags);
    if (st != UZ_CMD_OK) {
        return st;
    }
    i = UZ_FIND_FREE(r->cq, r->lim.max_cq, 0);
    if (i < 0) {
        return UZ_CMD_NO_RESOURCES;
    }
    if (!uzura_eq_get(core, eqn)) {
        return UZ_CMD_BAD_HANDLE;
    }
    if (!uzura_db_alloc(core, uctx, UZ_DBK_CQ, i, &db)) {
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
static uint8_t uzura_cmd_resize_cq(UzuraCore *core,
                                   const struct uz_admin_cmd *cmd,
                                   struct uz_admin_cqe *cqe)
{
    const struct uz_cmd_resize_cq *c = (const void *)cmd->raw;
    UzuraCq *cq = uzura_cq_lookup(core, le32_to_cpu(c->cqn),
                                  le32_to_cpu(c->uctx));
    uint64_t ring = le64_to_cpu(c->ring_addr);
    uint32_t ci = le32_to_cpu(c->ci) & UZ_IDX_MASK, n;
    uint8_t st;

    if (!cq) {
        return UZ_CMD_BAD_HANDLE;
    }
    /* The CQEs keep their size, which the consumer copies across. */
    if (!(c->flags & UZ_CQF_TIMESTAMP) != !cq->ts) {
        return UZ_CMD_BAD_PARAM;
    }
    st = uzura_cq_ring_check(core, ring, c->log_depth, c->flags);
    if (st != UZ_CMD_OK) {
        return st;
    }
    /* The consumer cannot be ahead of the device, nor a ring behind. */
    n = uzura_ring_used(cq->pi, ci);
    if (n > (1u << cq->log_depth) || n > (1u << c->log_depth)) {
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

static uint8_t uzura_cmd_destroy_cq(UzuraCore *core,
                                    const struct uz_admin_cmd *cmd,
                                    struct uz_admin_cqe *cqe)
{
    const struct uz_cmd_obj *c = (const void *)cmd->raw;
    UzuraCq *cq = uzura_cq_lookup(core, le32_to_cpu(c->handle),
                                  le32_to_cpu(c->uctx));

    if (!cq) {
        return UZ_CMD_BAD_HANDLE;
    }
    if (cq->users) {
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

/* ---- shared receive queues ---- */

static uint8_t uzura_cmd_create_srq(UzuraCore *core,
                                    const struct uz_admin_cmd *cmd,
                                    struct uz_admin_cqe *cqe)
{
    const struct uz_cmd_create_srq *c = (const void *)cmd->raw;
    uint32_t uctx = le32_to_cpu(c->uctx), limit = le32_to_cpu(c->limit), db;
    uint32_t ops_db = 0;
    uint64_t ring = le64_to_cpu(c->ring_addr);
    bool xrc = c->flags & UZ_SRQF_XRC, tm = c->flags & UZ_SRQF_TM;
    UzuraRdma *r = &core->rdma;
    UzuraXrcd *xrcd = NULL;
    UzuraCq *cq = NULL;
    UzuraPd *pd;
    uint8_t st;
    int64_t i;

    /* Tag matching is for RC QPs; an XRC SRQ serves XRC targets. */
    if (xrc && tm) {
        return UZ_CMD_BAD_PARAM;
    }
    pd = uzura_pd_lookup(core, le32_to_cpu(c->pdn), uctx);
    if (xrc) {
        xrcd = uzura_xrcd_lookup(core, le32_to_cpu(c->xrcd));
    }
    if (xrc || tm) {
        cq = uzura_cq_lookup(core, le32_to_cpu(c->cqn), uctx);
    }
    if (!pd || (xrc && !xrcd) || ((xrc || tm) && !cq)) {
        return UZ_CMD_BAD_HANDLE;
    }
    if ((c->flags & ~(UZ_SRQF_XRC | UZ_SRQF_TM)) || c->log_depth < 1 ||
        c->log_depth > 16 || (1u << c->log_depth) > r->lim.max_srq_wr ||
        c->log_wqe_size < 4 || c->log_wqe_size > 9 ||
        limit >= (1u << c->log_depth)) {
        return UZ_CMD_BAD_PARAM;
    }
    st = tm ? uzura_tm_srq_check(core, c) : UZ_CMD_OK;
    if (st != UZ_CMD_OK) {
        return st;
    }
    if (!uzura_dma_ok(core, ring, (uint64_t)1 << (c->log_depth +
                                                  c->log_wqe_size), false)) {
        return UZ_CMD_BAD_ADDR;
    }
    i = UZ_FIND_FREE(r->srq, r->lim.max_srq, 0);
    if (i < 0 || !uzura_db_alloc(core, uctx, UZ_DBK_SRQ, i, &db)) {
        return UZ_CMD_NO_RESOURCES;
    }
    /* A TM SRQ's list operations ring a second slot of the page. */
    if (tm && !uzura_db_alloc(core, uctx, UZ_DBK_TM, i, &ops_db)) {
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

static uint8_t uzura_cmd_modify_srq(UzuraCore *core,
                                    const struct uz_admin_cmd *cmd,
                                    struct uz_admin_cqe *cqe)
{
    const struct uz_cmd_modify_srq *c = (const void *)cmd->raw;
    UzuraSrq *srq = uzura_srq_lookup(core, le32_to_cpu(c->srqn));
    uint32_t limit = le32_to_cpu(c->limit);

    if (!srq || srq->uctx != le32_to_cpu(c->uctx)) {
        return UZ_CMD_BAD_HANDLE;
    }
    if (limit >= (1u << srq->log_depth)) {
        return UZ_CMD_BAD_PARAM;
    }
    srq->limit = limit;
    return UZ_CMD_OK;
}

static uint8_t uzura_cmd_resize_srq(UzuraCore *core,
                                    const struct uz_admin_cmd *cmd,
                                    struct uz_admin_cqe *cqe)
{
    const struct uz_cmd_resize_srq *c = (const void *)cmd->raw;
    UzuraSrq *srq = uzura_srq_lookup(core, le32_to_cpu(c->srqn));
    uint64_t ring = le64_to_cpu(c->ring_addr);
    uint32_t depth = 1u << (c->log_depth & 31), limit;

    if (!srq || srq->uctx != le32_to_cpu(c->uctx)) {
        return UZ_CMD_BAD_HANDLE;
    }
    limit = c->flags & UZ_SRQ_RESIZE_LIMIT ? le32_to_cpu(c->limit) :
                                             srq->limit;
    /* The posted WQEs the device has not taken must fit the new ring. */
    if (c->log_depth < 1 || c->log_depth > 16 ||
        (c->flags & ~UZ_SRQ_RESIZE_LIMIT) ||
        depth > core->rdma.lim.max_srq_wr || limit >= depth ||
        uzura_ring_used(srq->pi, srq->ci) > depth) {
        return UZ_CMD_BAD_PARAM;
    }
    if (!uzura_dma_ok(core, ring, (uint64_t)depth << srq->log_wqe_size,
                      false)) {
        return UZ_CMD_BAD_ADDR;
    }
    trace_uzura_obj_srq_resize(le32_to_cpu(c->srqn), ring, c->log_depth,
                               uzura_ring_used(srq->pi, srq->ci));
    srq->ring_addr = ring;
    srq->log_depth = c->log_depth;
    srq->limit = limit;
    return UZ_CMD_OK;
}

static uint8_t uzura_cmd_destroy_srq(UzuraCore *core,
                                     const struct uz_admin_cmd *cmd,
                                     struct uz_admin_cqe *cqe)
{
    const struct uz_cmd_obj *c = (const void *)cmd->raw;
    UzuraSrq *srq = uzura_srq_lookup(core, le32_to_cpu(c->handle));

    if (!srq || srq->uctx != le32_to_cpu(c->uctx)) {
        return UZ_CMD_BAD_HANDLE;
    }
    if (srq->users) {
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

/* ---- memory regions, forwarded ---- */

static uint8_t uzura_cmd_reg_mr(UzuraCore *core,
                                const struct uz_admin_cmd *cmd,
                                struct uz_admin_cqe *cqe)
{
    return uzura_mr_reg(core, (const void *)cmd->raw, cqe);
}

static uint8_t uzura_cmd_rereg_mr(UzuraCore *core,
                                  const struct uz_admin_cmd *cmd,
                                  struct uz_admin_cqe *cqe)
{
    return uzura_mr_rereg(core, (const void *)cmd->raw);
}

static uint8_t uzura_cmd_dereg_mr(UzuraCore *core,
                                  const struct uz_admin_cmd *cmd,
                                  struct uz_admin_cqe *cqe)
{
    return uzura_mr_dereg(core, (const void *)cmd->raw);
}

static uint8_t uzura_cmd_alloc_mw(UzuraCore *core,
                                  const struct uz_admin_cmd *cmd,
                                  struct uz_admin_cqe *cqe)
{
    return uzura_mw_alloc(core, (const void *)cmd->raw, cqe);
}

static uint8_t uzura_cmd_dealloc_mw(UzuraCore *core,
                                    const struct uz_admin_cmd *cmd,
                                    struct uz_admin_cqe *cqe)
{
    return uzura_mw_dealloc(core, (const void *)cmd->raw);
}

static uint8_t uzura_cmd_page_resume(UzuraCore *core,
                                     const struct uz_admin_cmd *cmd,
                                     struct uz_admin_cqe *cqe)
{
    return uzura_mr_page_resume(core, (const void *)cmd->raw);
}

static uint8_t uzura_cmd_attach_mcast(UzuraCore *core,
                                      const struct uz_admin_cmd *cmd,
                                      struct uz_admin_cqe *cqe)
{
    return uzura_mcast_attach(core, (const void *)cmd->raw);
}

static uint8_t uzura_cmd_detach_mcast(UzuraCore *core,
                                      const struct uz_admin_cmd *cmd,
                                      struct uz_admin_cqe *cqe)
{
    return uzura_mcast_detach(core, (const void *)cmd->raw);
}

static uint8_t uzura_cmd_alloc_xrcd(UzuraCore *core,
                                    const struct uz_admin_cmd *cmd,
                                    struct uz_admin_cqe *cqe)
{
    return uzura_xrcd_alloc(core, cqe);
}

static uint8_t uzura_cmd_dealloc_xrcd(UzuraCore *core,
                                      const struct uz_admin_cmd *cmd,
                                      struct uz_admin_cqe *cqe)
{
    return uzura_xrcd_dealloc(core, (const void *)cmd->raw);
}

static uint8_t uzura_cmd_invalidate_xlat(UzuraCore *core,
                                         const struct uz_admin_cmd *cmd,
                                         struct uz_admin_cqe *cqe)
{
    return uzura_xlat_invalidate(core, (const void *)cmd->raw);
}

/* ---- QP commands, forwarded ---- */

static uint8_t uzura_cmd_create_qp(UzuraCore *core,
                                   const struct uz_admin_cmd *cmd,
                                   struct uz_admin_cqe *cqe)
{
    return uzura_qp_create(core, (const void *)cmd->raw, cqe);
}

static uint8_t uzura_cmd_modify_qp(UzuraCore *core,
                                   const struct uz_admin_cmd *cmd,
                                   struct uz_admin_cqe *cqe)
{
    return uzura_qp_modify(core, (const void *)cmd->raw);
}

static uint8_t uzura_cmd_query_qp(UzuraCore *core,
                                  const struct uz_admin_cmd *cmd,
                                  struct uz_admin_cqe *cqe)
{
    return uzura_qp_query(core, (const void *)cmd->raw);
}

static uint8_t uzura_cmd_destroy_qp(UzuraCore *core,
                                    const struct uz_admin_cmd *cmd,
                                    struct uz_admin_cqe *cqe)
{
    return uzura_qp_destroy(core, (const void *)cmd->raw);
}

static uint8_t uzura_cmd_alloc_dm(UzuraCore *core,
                                  const struct uz_admin_cmd *cmd,
                                  struct uz_admin_cqe *cqe)
{
    return uzura_dm_alloc(core, (const void *)cmd->raw, cqe);
}

static uint8_t uzura_cmd_dealloc_dm(UzuraCore *core,
                                    const struct uz_admin_cmd *cmd,
                                    struct uz_admin_cqe *cqe)
{
    return uzura_dm_dealloc(core, (const void *)cmd->raw);
}

static uint8_t uzura_cmd_create_flow(UzuraCore *core,
                                     const struct uz_admin_cmd *cmd,
                                     struct uz_admin_cqe *cqe)
{
    return uzura_flow_create(core, (const void *)cmd->raw, cqe);
}

static uint8_t uzura_cmd_destroy_flow(UzuraCore *core,
                                      const struct uz_admin_cmd *cmd,
                                      struct uz_admin_cqe *cqe)
{
    return uzura_flow_destroy(core, (const void *)cmd->raw);
}

typedef uint8_t (*UzuraRdmaCmd)(UzuraCore *core,
                                const struct uz_admin_cmd *cmd,
                                struct uz_admin_cqe *cqe);

static const UzuraRdmaCmd uzura_rdma_cmds[UZ_CMD_RDMA_LAST + 1] = {
    [UZ_CMD_CREATE_UCTX] = uzura_cmd_create_uctx,
    [UZ_CMD_DESTROY_UCTX] = uzura_cmd_destroy_uctx,
    [UZ_CMD_ALLOC_PD] = uzura_cmd_alloc_pd,
    [UZ_CMD_DEALLOC_PD] = uzura_cmd_dealloc_pd,
    [UZ_CMD_CREATE_CQ] = uzura_cmd_create_cq,
    [UZ_CMD_RESIZE_CQ] = uzura_cmd_resize_cq,
    [UZ_CMD_DESTROY_CQ] = uzura_cmd_destroy_cq,
    [UZ_CMD_CREATE_QP] = uzura_cmd_create_qp,
    [UZ_CMD_MODIFY_QP] = uzura_cmd_modify_qp,
    [UZ_CMD_QUERY_QP] = uzura_cmd_query_qp,
    [UZ_CMD_DESTROY_QP] = uzura_cmd_destroy_qp,
    [UZ_CMD_CREATE_SRQ] = uzura_cmd_create_srq,
    [UZ_CMD_MODIFY_SRQ] = uzura_cmd_modify_srq,
    [UZ_CMD_RESIZE_SRQ] = uzura_cmd_resize_srq,
    [UZ_CMD_DESTROY_SRQ] = uzura_cmd_destroy_srq,
    [UZ_CMD_REG_MR] = uzura_cmd_reg_mr,
    [UZ_CMD_DEREG_MR] = uzura_cmd_dereg_mr,
    [UZ_CMD_REREG_MR] = uzura_cmd_rereg_mr,
    [UZ_CMD_ALLOC_MW] = uzura_cmd_alloc_mw,
    [UZ_CMD_DEALLOC_MW] = uzura_cmd_dealloc_mw,
    [UZ_CMD_PAGE_RESUME] = uzura_cmd_page_resume,
    [UZ_CMD_ATTACH_MCAST] = uzura_cmd_attach_mcast,
    [UZ_CMD_DETACH_MCAST] = uzura_cmd_detach_mcast,
    [UZ_CMD_ALLOC_XRCD] = uzura_cmd_alloc_xrcd,
    [UZ_CMD_DEALLOC_XRCD] = uzura_cmd_dealloc_xrcd,
    [UZ_CMD_ALLOC_DM] = uzura_cmd_alloc_dm,
    [UZ_CMD_DEALLOC_DM] = uzura_cmd_dealloc_dm,
    [UZ_CMD_CREATE_FLOW] = uzura_cmd_create_flow,
    [UZ_CMD_DESTROY_FLOW] = uzura_cmd_destroy_flow,
    [UZ_CMD_CREATE_AH] = uzura_cmd_create_ah,
    [UZ_CMD_DESTROY_AH] = uzura_cmd_destroy_ah,
    [UZ_CMD_INVALIDATE_XLAT] = uzura_cmd_invalidate_xlat,
};

/* Opcodes of the RDMA range without a handler are not implemented yet. */
uint8_t uzura_rdma_cmd(UzuraCore *core, const struct uz_admin_cmd *cmd,
                       struct uz_admin_cqe *cqe)
{
    UzuraRdmaCmd fn = cmd->opcode <= UZ_CMD_RDMA_LAST ?
                      uzura_rdma_cmds[cmd->opcode] : NULL;

    return fn ? fn(core, cmd, cqe) : UZ_CMD_NOT_SUPPORTED;
}
