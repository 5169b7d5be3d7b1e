/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uzura RDMA NIC: protection domains (ALLOC_PD, DEALLOC_PD).
 */
#include "qemu/osdep.h"
#include "uzura-core.h"
#include "trace.h"

/*
 * A PD that context @uctx may use.  A valid object's context is valid
 * too (a context with objects cannot go), so lookups by context need no
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

uint8_t uzura_cmd_alloc_pd(UzuraCore *core, const struct uz_admin_cmd *cmd,
                           struct uz_admin_cqe *cqe)
{
    const struct uz_cmd_obj *c = (const void *)cmd->raw;
    uint32_t uctx = le32_to_cpu(c->uctx);
    UzuraRdma *r = &core->rdma;
    int64_t i;

    if (!uzura_uctx_ok(core, uctx)) {
        trace_uzura_pd_err_alloc_uctx(uctx);
        return UZ_CMD_BAD_HANDLE;
    }
    i = UZ_FIND_FREE(r->pd, r->lim.max_pd, 0);
    if (i < 0) {
        trace_uzura_pd_err_alloc_full(r->lim.max_pd);
        return UZ_CMD_NO_RESOURCES;
    }
    r->pd[i] = (UzuraPd) { .valid = true, .uctx = uctx };
    uzura_uctx_get(core, uctx);
    cqe->out0 = cpu_to_le32(i);
    return UZ_CMD_OK;
}

uint8_t uzura_cmd_dealloc_pd(UzuraCore *core, const struct uz_admin_cmd *cmd,
                             struct uz_admin_cqe *cqe)
{
    const struct uz_cmd_obj *c = (const void *)cmd->raw;
    uint32_t pdn = le32_to_cpu(c->handle), uctx = le32_to_cpu(c->uctx);
    UzuraPd *pd = uzura_pd_lookup(core, pdn, uctx);

    if (!pd) {
        trace_uzura_pd_err_dealloc_handle(pdn, uctx);
        return UZ_CMD_BAD_HANDLE;
    }
    if (pd->users) {
        trace_uzura_pd_err_dealloc_busy(pdn, pd->users);
        return UZ_CMD_BUSY;
    }
    uzura_uctx_put(core, pd->uctx);
    pd->valid = false;
    return UZ_CMD_OK;
}

