/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uzura RDMA NIC: the RDMA engine's object tables and user contexts.
 *
 * Tables are sized by device properties at realize.  Every object belongs
 * to a context (0 is the kernel's); objects that others refer to count
 * their users and refuse to go while used.  Each kind of object has its
 * file: PDs uzura-pd.c, AHs uzura-ah.c, CQs uzura-cq.c, SRQs
 * uzura-srq.c, QPs uzura-qp.c, MRs uzura-mr.c, windows uzura-mw.c.
 */
#include "qemu/osdep.h"
#include "qemu/bitmap.h"
#include "qemu/bitops.h"
#include "uzura-core.h"
#include "trace.h"

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

/* ---- contexts ---- */

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

uint8_t uzura_cmd_create_uctx(UzuraCore *core, const struct uz_admin_cmd *cmd,
                              struct uz_admin_cqe *cqe)
{
    UzuraRdma *r = &core->rdma;
    int64_t i = UZ_FIND_FREE(r->uctx, r->lim.max_uctx + 1, 1);

    if (i < 0) {
        trace_uzura_rdma_err_create_uctx_full(r->lim.max_uctx);
        return UZ_CMD_NO_RESOURCES;
    }
    r->uctx[i] = (UzuraUctx) { .valid = true };
    cqe->out0 = cpu_to_le32(i);
    cqe->out1 = cpu_to_le32(i * UZ_DB_PAGE_SIZE);
    return UZ_CMD_OK;
}

uint8_t uzura_cmd_destroy_uctx(UzuraCore *core, const struct uz_admin_cmd *cmd,
                               struct uz_admin_cqe *cqe)
{
    const struct uz_cmd_obj *c = (const void *)cmd->raw;
    uint32_t i = le32_to_cpu(c->handle);
    UzuraRdma *r = &core->rdma;

    if (i == 0) {
        trace_uzura_rdma_err_destroy_uctx_kernel();
        return UZ_CMD_BAD_HANDLE;
    }
    if (i > r->lim.max_uctx || !r->uctx[i].valid) {
        trace_uzura_rdma_err_destroy_uctx_handle(i, r->lim.max_uctx);
        return UZ_CMD_BAD_HANDLE;
    }
    if (r->uctx[i].users) {
        trace_uzura_rdma_err_destroy_uctx_busy(i, r->uctx[i].users);
        return UZ_CMD_BUSY;
    }
    r->uctx[i].valid = false;
    return UZ_CMD_OK;
}

