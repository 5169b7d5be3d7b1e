/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uzura RDMA NIC: device memory (spec 8.17): RAM on the NIC, in BAR 4
 * after the doorbell pages, handed to contexts in whole pages, and the
 * MRs that map it.
 *
 * The host reads and writes an allocation through its BAR mapping; the
 * data path reaches it through a DM MR as it reaches host memory through
 * any other MR, but with no translation and no DMA: the memory is ours.
 */
#include "qemu/osdep.h"
#include "qemu/bitmap.h"
#include "exec/memory.h"
#include "uzura-core.h"
#include "trace.h"

void uzura_dm_init(UzuraCore *core, MemoryRegion *region, uint32_t size,
                   uint32_t offset)
{
    UzuraRdma *r = &core->rdma;

    r->dm_size = size;
    if (!size) {
        return;
    }
    r->dm_region = region;
    r->dm_mem = memory_region_get_ram_ptr(region);
    r->dm_offset = offset;
    r->max_dm = size / UZ_DM_PAGE_SIZE;
    r->dm_used = bitmap_new(r->max_dm);
    r->dm = g_new0(UzuraDm, r->max_dm);
}

void uzura_dm_uninit(UzuraCore *core)
{
    g_free(core->rdma.dm_used);
    g_free(core->rdma.dm);
}

/* Every allocation goes, and what it held with it. */
void uzura_dm_reset(UzuraCore *core)
{
    UzuraRdma *r = &core->rdma;

    if (!r->dm_size) {
        return;
    }
    bitmap_zero(r->dm_used, r->max_dm);
    memset(r->dm, 0, r->max_dm * sizeof(*r->dm));
    memset(r->dm_mem, 0, r->dm_size);
    memory_region_set_dirty(r->dm_region, 0, r->dm_size);
}

static UzuraDm *uzura_dm_lookup(UzuraCore *core, uint32_t dm, uint32_t uctx)
{
    UzuraRdma *r = &core->rdma;

    return dm < r->max_dm && r->dm[dm].valid && r->dm[dm].uctx == uctx ?
           &r->dm[dm] : NULL;
}

/*
 * The first run of @n free pages that starts at a multiple of @step, or
 * -1.  At most max_dm starts, each looking at up to @n bits.
 */
static int64_t uzura_dm_find(UzuraRdma *r, uint32_t n, uint64_t step)
{
    uint64_t p;

    for (p = 0; p + n <= r->max_dm; p += step) {
        unsigned long used = find_next_bit(r->dm_used, p + n, p);

        if (used >= p + n) {
            return p;
        }
        /* No run starting at or before the used page fits. */
        p = QEMU_ALIGN_DOWN(used, step);
    }
    return -1;
}

/*
 * ALLOC_DM: whole pages, zeroed (the last owner's data stays its own),
 * aligned to 2^log_align bytes.
 */
uint8_t uzura_cmd_alloc_dm(UzuraCore *core, const struct uz_admin_cmd *cmd,
                           struct uz_admin_cqe *cqe)
{
    const struct uz_cmd_alloc_dm *c = (const void *)cmd->raw;
    uint64_t len = le64_to_cpu(c->length);
    uint32_t uctx = le32_to_cpu(c->uctx), n;
    UzuraRdma *r = &core->rdma;
    uint64_t step;
    int64_t i, p;

    if (!r->dm_size) {
        trace_uzura_dm_err_none();
        return UZ_CMD_NOT_SUPPORTED;
    }
    if (!uzura_uctx_ok(core, uctx)) {
        trace_uzura_dm_err_uctx(uctx);
        return UZ_CMD_BAD_HANDLE;
    }
    if (!len) {
        trace_uzura_dm_err_alloc_len_zero(uctx);
        return UZ_CMD_BAD_PARAM;
    }
    if (len > r->dm_size) {
        trace_uzura_dm_err_alloc_len(len, r->dm_size);
        return UZ_CMD_BAD_PARAM;
    }
    if (c->log_align > 31) {
        trace_uzura_dm_err_alloc_align(c->log_align, 31);
        return UZ_CMD_BAD_PARAM;
    }
    n = DIV_ROUND_UP(len, UZ_DM_PAGE_SIZE);
    step = MAX(1ull << c->log_align, UZ_DM_PAGE_SIZE) / UZ_DM_PAGE_SIZE;
    i = UZ_FIND_FREE(r->dm, r->max_dm, 0);
    if (i < 0) {
        trace_uzura_dm_err_alloc_full(uctx, r->max_dm);
        return UZ_CMD_NO_RESOURCES;
    }
    p = uzura_dm_find(r, n, step);
    if (p < 0) {
        trace_uzura_dm_err_alloc_room(uctx, len, c->log_align);
        return UZ_CMD_NO_RESOURCES;
    }
    bitmap_set(r->dm_used, p, n);
    memset(r->dm_mem + p * UZ_DM_PAGE_SIZE, 0, (uint64_t)n * UZ_DM_PAGE_SIZE);
    memory_region_set_dirty(r->dm_region, p * UZ_DM_PAGE_SIZE,
                            (uint64_t)n * UZ_DM_PAGE_SIZE);
    r->dm[i] = (UzuraDm) { .valid = true, .uctx = uctx, .first = p,
                           .npages = n };
    uzura_uctx_get(core, uctx);
    trace_uzura_dm_alloc(i, uctx, p, n);
    cqe->out0 = cpu_to_le32(i);
    cqe->out1 = cpu_to_le32(r->dm_offset + p * UZ_DM_PAGE_SIZE);
    return UZ_CMD_OK;
}

uint8_t uzura_cmd_dealloc_dm(UzuraCore *core, const struct uz_admin_cmd *cmd,
                             struct uz_admin_cqe *cqe)
{
    const struct uz_cmd_obj *c = (const void *)cmd->raw;
    UzuraDm *dm = uzura_dm_lookup(core, le32_to_cpu(c->handle),
                                  le32_to_cpu(c->uctx));

    if (!dm) {
        trace_uzura_dm_err_handle(le32_to_cpu(c->handle),
                                  le32_to_cpu(c->uctx));
        return UZ_CMD_BAD_HANDLE;
    }
    if (dm->users) {
        trace_uzura_dm_err_busy(le32_to_cpu(c->handle), dm->users);
        return UZ_CMD_BUSY;
    }
    bitmap_clear(core->rdma.dm_used, dm->first, dm->npages);
    uzura_uctx_put(core, dm->uctx);
    dm->valid = false;
    trace_uzura_dm_dealloc(le32_to_cpu(c->handle));
    return UZ_CMD_OK;
}

/*
 * The DM side of REG_MR with UZ_MR_F_DM: [dm_offset, dm_offset + length)
 * of an allocation of the MR's context.  Fills in @mr's DM fields.
 */
uint8_t uzura_dm_mr_reg(UzuraCore *core, const struct uz_cmd_reg_mr *c,
                        UzuraMr *mr)
{
    uint64_t off = le64_to_cpu(c->dm_offset), len = le64_to_cpu(c->length);
    UzuraDm *dm = uzura_dm_lookup(core, le32_to_cpu(c->dm),
                                  le32_to_cpu(c->uctx));
    uint64_t size;

    if (!dm) {
        trace_uzura_dm_err_handle(le32_to_cpu(c->dm), le32_to_cpu(c->uctx));
        return UZ_CMD_BAD_HANDLE;
    }
    size = (uint64_t)dm->npages * UZ_DM_PAGE_SIZE;
    if (off > size || len > size - off) {
        trace_uzura_dm_err_mr_range(off, len, size);
        return UZ_CMD_BAD_PARAM;
    }
    mr->dm = le32_to_cpu(c->dm);
    mr->dm_base = (uint64_t)dm->first * UZ_DM_PAGE_SIZE + off;
    dm->users++;
    return UZ_CMD_OK;
}

void uzura_dm_mr_dereg(UzuraCore *core, UzuraMr *mr)
{
    core->rdma.dm[mr->dm].users--;
}

/* Move @len bytes at @addr of DM MR @mr (checked against the MR). */
void uzura_dm_copy(UzuraCore *core, UzuraMr *mr, uint64_t addr, void *buf,
                   uint64_t len, bool to_mr)
{
    UzuraRdma *r = &core->rdma;
    uint64_t off = mr->dm_base + (addr - mr->iova);

    trace_uzura_dm_copy(mr->dm, off, len, to_mr);
    if (to_mr) {
        memcpy(r->dm_mem + off, buf, len);
        memory_region_set_dirty(r->dm_region, off, len);
    } else {
        memcpy(buf, r->dm_mem + off, len);
    }
}
