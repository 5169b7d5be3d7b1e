/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uzura RDMA NIC: address handles (CREATE_AH, DESTROY_AH).
 */
#include "qemu/osdep.h"
#include "uzura-core.h"
#include "trace.h"

static const uint8_t zero_mac[6];

uint8_t uzura_cmd_create_ah(UzuraCore *core, const struct uz_admin_cmd *cmd,
                            struct uz_admin_cqe *cqe)
{
    const struct uz_cmd_create_ah *c = (const void *)cmd->raw;
    uint32_t uctx = le32_to_cpu(c->uctx);
    UzuraRdma *r = &core->rdma;
    UzuraPd *pd;
    int64_t i;

    pd = uzura_pd_lookup(core, le32_to_cpu(c->pdn), uctx);
    if (!pd) {
        trace_uzura_ah_err_create_pd(le32_to_cpu(c->pdn), uctx);
        return UZ_CMD_BAD_HANDLE;
    }
    /* A group MAC only for a multicast group. */
    if ((c->dmac[0] & 1) != uzura_mcast_gid(c->dgid)) {
        trace_uzura_ah_err_create_dmac_group(c->dmac[0] & 1,
                                             uzura_mcast_gid(c->dgid));
        return UZ_CMD_BAD_PARAM;
    }
    if (!memcmp(c->dmac, zero_mac, sizeof(zero_mac))) {
        trace_uzura_ah_err_create_dmac_zero();
        return UZ_CMD_BAD_PARAM;
    }
    i = UZ_FIND_FREE(r->ah, r->lim.max_ah, 0);
    if (i < 0) {
        trace_uzura_ah_err_create_full(r->lim.max_ah);
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

uint8_t uzura_cmd_destroy_ah(UzuraCore *core, const struct uz_admin_cmd *cmd,
                             struct uz_admin_cqe *cqe)
{
    const struct uz_cmd_obj *c = (const void *)cmd->raw;
    uint32_t i = le32_to_cpu(c->handle), uctx = le32_to_cpu(c->uctx);
    UzuraRdma *r = &core->rdma;

    if (i >= r->lim.max_ah || !r->ah[i].valid) {
        trace_uzura_ah_err_destroy_handle(i, r->lim.max_ah);
        return UZ_CMD_BAD_HANDLE;
    }
    if (r->ah[i].uctx != uctx) {
        trace_uzura_ah_err_destroy_uctx(i, uctx, r->ah[i].uctx);
        return UZ_CMD_BAD_HANDLE;
    }
    r->pd[r->ah[i].pdn].users--;
    r->ah[i].valid = false;
    return UZ_CMD_OK;
}

