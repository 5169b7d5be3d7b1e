/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uzura RDMA NIC: memory regions, the commands that register, change and
 * deregister them, and the lookup of a key.
 *
 * An MR is a table entry; its page list stays in host memory, owned by
 * the driver (spec 8.10).  Fast-reg MRs change with work requests too
 * (uzura-fastreg.c).
 */
#include "qemu/osdep.h"
#include "qemu/bitops.h"
#include "qemu/host-utils.h"
#include "uzura-core.h"
#include "trace.h"

/* The kinds of MR; at most one of them. */
#define UZ_MR_F_KINDS (UZ_MR_F_DMA | UZ_MR_F_FAST | UZ_MR_F_ODP | UZ_MR_F_DM | \
                       UZ_MR_F_IMPLICIT)

/* Remote write and atomic need local write, as in the IB spec. */
static bool uzura_mr_access_ok(uint32_t access)
{
    if (access & ~UZ_ACCESS_ALL) {
        trace_uzura_mr_err_access_unknown(access, UZ_ACCESS_ALL);
        return false;
    }
    if ((access & (UZ_ACCESS_REMOTE_WRITE | UZ_ACCESS_REMOTE_ATOMIC)) &&
        !(access & UZ_ACCESS_LOCAL_WRITE)) {
        trace_uzura_mr_err_access_local_write(access);
        return false;
    }
    return true;
}

/* @npages pages of 2^@shift bytes cover [iova, iova + len). */
static bool uzura_mr_pages_cover(uint64_t iova, uint64_t len, uint8_t shift,
                                 uint64_t npages)
{
    uint64_t first;

    if (shift < 12 || shift > 30) {
        trace_uzura_mr_err_page_shift(shift, 12, 30);
        return false;
    }
    if (!npages) {
        trace_uzura_mr_err_npages_zero();
        return false;
    }
    if (iova + len < iova) {
        trace_uzura_mr_err_wrap(iova, len);
        return false;
    }
    first = iova & ~MAKE_64BIT_MASK(0, shift);
    if (iova + len > first + (npages << shift)) {
        trace_uzura_mr_err_cover(iova, len, npages, shift);
        return false;
    }
    return true;
}

/*
 * An MR's access, length and, unless it is a DMA MR (!@paged), pages, as
 * REG_MR, REREG_MR and the REG_MR work request all check them.
 */
bool uzura_mr_shape_ok(UzuraCore *core, uint32_t access, uint64_t iova,
                       uint64_t len, uint8_t shift, uint64_t npages,
                       bool paged)
{
    if (!uzura_mr_access_ok(access)) {
        return false;
    }
    if (len > core->rdma.lim.max_mr_size) {
        trace_uzura_mr_err_length(len, core->rdma.lim.max_mr_size);
        return false;
    }
    return !paged || uzura_mr_pages_cover(iova, len, shift, npages);
}

/* @mr, found by @key, is there and @uctx's; traced when not. */
static bool uzura_mr_owned(const UzuraMr *mr, uint32_t key, uint32_t uctx)
{
    if (!mr) {
        trace_uzura_mr_err_key(key, uctx);
        return false;
    }
    if (mr->uctx != uctx) {
        trace_uzura_mr_err_key_uctx(key, uctx, mr->uctx);
        return false;
    }
    return true;
}

uint8_t uzura_cmd_reg_mr(UzuraCore *core, const struct uz_admin_cmd *cmd,
                         struct uz_admin_cqe *cqe)
{
    const struct uz_cmd_reg_mr *c = (const void *)cmd->raw;
    uint32_t uctx = le32_to_cpu(c->uctx), access = le32_to_cpu(c->access);
    uint32_t npages = le32_to_cpu(c->npages);
    uint64_t iova = le64_to_cpu(c->iova), len = le64_to_cpu(c->length);
    uint64_t pbl = le64_to_cpu(c->pbl_addr);
    UzuraRdma *r = &core->rdma;
    UzuraMr next;
    UzuraPd *pd;
    int64_t i;

    pd = uzura_pd_lookup(core, le32_to_cpu(c->pdn), uctx);
    if (!pd) {
        trace_uzura_mr_err_pd(le32_to_cpu(c->pdn), uctx);
        return UZ_CMD_BAD_HANDLE;
    }
    /* At most one of DMA, fast-reg, ODP, DM and implicit. */
    if (c->flags & ~UZ_MR_F_KINDS) {
        trace_uzura_mr_err_reg_flags(c->flags, UZ_MR_F_KINDS);
        return UZ_CMD_BAD_PARAM;
    }
    if (ctpop8(c->flags) > 1) {
        trace_uzura_mr_err_reg_kinds(c->flags);
        return UZ_CMD_BAD_PARAM;
    }
    /* DMA and fast-reg MRs are the kernel's only. */
    if ((c->flags & (UZ_MR_F_DMA | UZ_MR_F_FAST)) && uctx) {
        trace_uzura_mr_err_reg_kernel_only(c->flags, uctx);
        return UZ_CMD_BAD_PARAM;
    }
    if (c->flags & UZ_MR_F_FAST) {
        /* Free until a REG_MR WR: only the page list counts now. */
        if (!npages || npages > r->lim.max_fast_reg_pages) {
            trace_uzura_mr_err_reg_fast_pages(npages,
                                              r->lim.max_fast_reg_pages);
            return UZ_CMD_BAD_PARAM;
        }
        iova = len = access = 0;
    } else if (c->flags & UZ_MR_F_IMPLICIT) {
        /* The whole address space, through a table of chunks. */
        if (iova) {
            trace_uzura_mr_err_implicit_iova(iova);
            return UZ_CMD_BAD_PARAM;
        }
        if (len != UINT64_MAX) {
            trace_uzura_mr_err_implicit_len(len);
            return UZ_CMD_BAD_PARAM;
        }
        if (c->page_shift != UZ_IMR_SHIFT) {
            trace_uzura_mr_err_implicit_shift(c->page_shift, UZ_IMR_SHIFT);
            return UZ_CMD_BAD_PARAM;
        }
        if (npages != UZ_IMR_ENTRIES) {
            trace_uzura_mr_err_implicit_npages(npages, UZ_IMR_ENTRIES);
            return UZ_CMD_BAD_PARAM;
        }
        if (!uzura_mr_shape_ok(core, access, 0, 0, 0, 0, false)) {
            trace_uzura_mr_err_reg_implicit(iova, len, c->page_shift, npages,
                                            access);
            return UZ_CMD_BAD_PARAM;
        }
    } else if (!uzura_mr_shape_ok(core, access, iova, len, c->page_shift,
                                  npages,
                                  !(c->flags & (UZ_MR_F_DMA | UZ_MR_F_DM)))) {
        trace_uzura_mr_err_shape(iova, len, c->page_shift, npages, access);
        return UZ_CMD_BAD_PARAM;
    }
    if (!(c->flags & (UZ_MR_F_DMA | UZ_MR_F_DM)) &&
        !uzura_dma_ok(core, pbl, (uint64_t)npages * 8, false)) {
        trace_uzura_mr_err_pbl(pbl, npages);
        return UZ_CMD_BAD_ADDR;
    }
    /* Index 0 is never used, so that key 0 is never valid. */
    i = UZ_FIND_FREE(r->mr, r->lim.max_mr, 1);
    if (i < 0) {
        trace_uzura_mr_err_reg_full(r->lim.max_mr);
        return UZ_CMD_NO_RESOURCES;
    }
    next = (UzuraMr) {
        .valid = true, .key = c->key, .flags = c->flags,
        .free = c->flags & UZ_MR_F_FAST,
        .max_pages = (c->flags & UZ_MR_F_FAST) ? npages : 0,
        /*
         * A DMA MR has no pages, and a fast-reg MR gets its page size
         * from REG_MR: their shift is never unchecked guest input.
         */
        .page_shift = (c->flags & (UZ_MR_F_DMA | UZ_MR_F_FAST | UZ_MR_F_DM)) ?
                      12 : c->page_shift,
        .uctx = uctx,
        .pdn = le32_to_cpu(c->pdn), .access = access, .iova = iova,
        .length = len, .pbl_addr = pbl, .npages = npages,
    };
    if (c->flags & UZ_MR_F_DM) {
        uint8_t st = uzura_dm_mr_reg(core, c, &next);

        if (st) {
            return st;
        }
        next.pbl_addr = next.npages = 0;
    }
    r->mr[i] = next;
    uzura_xlat_drop_mr(core, &r->mr[i]);
    pd->users++;
    trace_uzura_obj_mr_reg(UZ_KEY(i, c->key), iova, len, access);
    cqe->out0 = cpu_to_le32(UZ_KEY(i, c->key));
    return UZ_CMD_OK;
}

/*
 * REREG_MR: the parts named change in place and the key stays, so peers
 * that hold it reach the new memory.  The MR that results is checked as
 * a whole, as REG_MR would check it.
 */
uint8_t uzura_cmd_rereg_mr(UzuraCore *core, const struct uz_admin_cmd *cmd,
                           struct uz_admin_cqe *cqe)
{
    const struct uz_cmd_rereg_mr *c = (const void *)cmd->raw;
    uint32_t uctx = le32_to_cpu(c->uctx), key = le32_to_cpu(c->key);
    UzuraMr *mr = uzura_mr_lookup(core, key);
    UzuraRdma *r = &core->rdma;
    UzuraMr next;
    UzuraPd *pd;

    if (!uzura_mr_owned(mr, key, uctx)) {
        return UZ_CMD_BAD_HANDLE;
    }
    if (mr->mw_count) {
        trace_uzura_mr_err_windows(key, mr->mw_count);
        return UZ_CMD_BUSY;
    }
    /* DMA, fast-reg, ODP, DM and implicit MRs have their own ways. */
    if (mr->flags & UZ_MR_F_KINDS) {
        trace_uzura_mr_err_rereg_kind(key, mr->flags);
        return UZ_CMD_BAD_PARAM;
    }
    if (!c->change) {
        trace_uzura_mr_err_rereg_no_change(key);
        return UZ_CMD_BAD_PARAM;
    }
    if (c->change & ~(UZ_REREG_TRANS | UZ_REREG_PD | UZ_REREG_ACCESS)) {
        trace_uzura_mr_err_rereg_change(key, c->change,
                                        UZ_REREG_TRANS | UZ_REREG_PD |
                                        UZ_REREG_ACCESS);
        return UZ_CMD_BAD_PARAM;
    }
    next = *mr;
    if (c->change & UZ_REREG_PD) {
        pd = uzura_pd_lookup(core, le32_to_cpu(c->pdn), uctx);
        if (!pd) {
            trace_uzura_mr_err_pd(le32_to_cpu(c->pdn), uctx);
            return UZ_CMD_BAD_HANDLE;
        }
        next.pdn = le32_to_cpu(c->pdn);
    }
    if (c->change & UZ_REREG_ACCESS) {
        next.access = le32_to_cpu(c->access);
    }
    if (c->change & UZ_REREG_TRANS) {
        next.iova = le64_to_cpu(c->iova);
        next.length = le64_to_cpu(c->length);
        next.pbl_addr = le64_to_cpu(c->pbl_addr);
        next.npages = le32_to_cpu(c->npages);
        next.page_shift = c->page_shift;
    }
    if (!uzura_mr_shape_ok(core, next.access, next.iova, next.length,
                           next.page_shift, next.npages, true)) {
        trace_uzura_mr_err_shape(next.iova, next.length, next.page_shift,
                                 next.npages, next.access);
        return UZ_CMD_BAD_PARAM;
    }
    if (c->change & UZ_REREG_TRANS &&
        !uzura_dma_ok(core, next.pbl_addr, (uint64_t)next.npages * 8, false)) {
        trace_uzura_mr_err_pbl(next.pbl_addr, next.npages);
        return UZ_CMD_BAD_ADDR;
    }
    r->pd[mr->pdn].users--;
    r->pd[next.pdn].users++;
    *mr = next;
    uzura_xlat_drop_mr(core, mr);
    trace_uzura_obj_mr_rereg(key, c->change, mr->iova, mr->length,
                             mr->access);
    return UZ_CMD_OK;
}

/*
 * Every QP of context @uctx that waits for an ODP page tries again: one
 * whose page is still absent faults again, one whose MR went fails.
 */
static void uzura_mr_odp_wake(UzuraCore *core, uint32_t uctx)
{
    UzuraRdma *r = &core->rdma;
    uint32_t i;

    /* XRC targets (the kernel's) serve every context's SRQs' PDs. */
    for (i = 0; i < r->lim.max_qp; i++) {
        if (r->qp[i].valid && r->qp[i].x &&
            (r->qp[i].uctx == uctx || r->qp[i].type == UZ_QPT_XRC_TGT)) {
            uzura_req_fault_resume(core, &r->qp[i]);
        }
    }
    uzura_work_schedule(core);
}

/*
 * PAGE_RESUME: the driver handled the page faults of ODP MR @key (its
 * page list now maps the pages, or marks them UZ_PTE_ERROR): the MR may
 * fault again, and the QPs that waited go on.
 */
uint8_t uzura_cmd_page_resume(UzuraCore *core, const struct uz_admin_cmd *cmd,
                              struct uz_admin_cqe *cqe)
{
    const struct uz_cmd_obj *c = (const void *)cmd->raw;
    uint32_t key = le32_to_cpu(c->handle);
    UzuraMr *mr = uzura_mr_lookup(core, key);

    if (!uzura_mr_owned(mr, key, le32_to_cpu(c->uctx))) {
        return UZ_CMD_BAD_HANDLE;
    }
    if (!(mr->flags & (UZ_MR_F_ODP | UZ_MR_F_IMPLICIT))) {
        trace_uzura_mr_err_resume(key, mr->flags);
        return UZ_CMD_BAD_HANDLE;
    }
    mr->fault_posted = false;
    uzura_mr_odp_wake(core, mr->uctx);
    return UZ_CMD_OK;
}

/* The MR at a key's index (1 .. max_mr - 1), if registered; no window. */
UzuraMr *uzura_mr_slot(UzuraCore *core, uint32_t key)
{
    UzuraRdma *r = &core->rdma;
    uint32_t i = UZ_KEY_INDEX(key);

    if (i == 0 || i >= r->lim.max_mr || !r->mr[i].valid ||
        r->mr[i].mw_type) {
        return NULL;
    }
    return &r->mr[i];
}

/* The MR a key reaches memory through: its slot, key byte, not free. */
UzuraMr *uzura_mr_lookup(UzuraCore *core, uint32_t key)
{
    UzuraMr *mr = uzura_mr_slot(core, key);

    if (!mr || mr->free || mr->key != UZ_KEY_BYTE(key)) {
        return NULL;
    }
    return mr;
}

uint8_t uzura_cmd_dereg_mr(UzuraCore *core, const struct uz_admin_cmd *cmd,
                           struct uz_admin_cqe *cqe)
{
    const struct uz_cmd_obj *c = (const void *)cmd->raw;
    uint32_t key = le32_to_cpu(c->handle);
    UzuraMr *mr = uzura_mr_slot(core, key);

    /*
     * A fast-reg MR's key byte changes with each REG_MR WR, one the
     * driver may not have seen through: its index is enough.
     */
    if (!uzura_mr_owned(mr, key, le32_to_cpu(c->uctx))) {
        return UZ_CMD_BAD_HANDLE;
    }
    if (!(mr->flags & UZ_MR_F_FAST) && mr->key != UZ_KEY_BYTE(key)) {
        trace_uzura_mr_err_key_byte(key, mr->key);
        return UZ_CMD_BAD_HANDLE;
    }
    if (mr->mw_count) {
        trace_uzura_mr_err_windows(key, mr->mw_count);
        return UZ_CMD_BUSY;
    }
    core->rdma.pd[mr->pdn].users--;
    if (mr->flags & UZ_MR_F_DM) {
        uzura_dm_mr_dereg(core, mr);
    }
    uzura_xlat_drop_mr(core, mr);
    mr->valid = false;
    /* QPs waiting for its pages find it gone, and fail. */
    if (mr->flags & (UZ_MR_F_ODP | UZ_MR_F_IMPLICIT)) {
        uzura_mr_odp_wake(core, mr->uctx);
    }
    return UZ_CMD_OK;
}
