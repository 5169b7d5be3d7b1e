/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uzura RDMA NIC: UD multicast (spec 8.14).
 *
 * The device keeps a table of UZ_MCAST_MAX_GRP groups, each an IPv4
 * multicast address with up to UZ_MCAST_MAX_QP_ATTACH UD QPs attached.
 * A UD send to QPN UZ_MCAST_QPN carries the group in its destination
 * IPv4 address; the receiver hands a copy to every attached QP, which
 * checks the Q_Key and takes a receive WQE as for a unicast datagram.
 * The sender's frame goes both to the link and through the loopback, so
 * the QPs of its own device that joined receive it too, as on a switch.
 */
#include "qemu/osdep.h"
#include "uzura-core.h"
#include "trace.h"

/* The IPv4 group of an IPv4-mapped multicast GID, or 0. */
static uint32_t uzura_mcast_group_addr(const uint8_t *mgid)
{
    static const uint8_t v4mapped[12] = {
        [10] = 0xff, [11] = 0xff,
    };
    uint32_t addr = ldl_be_p(mgid + 12);

    if (memcmp(mgid, v4mapped, sizeof(v4mapped)) ||
        (addr >> 28) != 0xe) {
        return 0;
    }
    return addr;
}

bool uzura_mcast_gid(const uint8_t *gid)
{
    return uzura_mcast_group_addr(gid) != 0;
}

static UzuraMcastGroup *uzura_mcast_find(UzuraCore *core, uint32_t addr)
{
    UzuraMcastGroup *g = core->rdma.mcast;
    int i;

    for (i = 0; i < UZ_MCAST_MAX_GRP; i++) {
        if (g[i].nqp && g[i].addr == addr) {
            return &g[i];
        }
    }
    return NULL;
}

static int uzura_mcast_member(const UzuraMcastGroup *g, uint32_t qpn)
{
    int i;

    for (i = 0; i < g->nqp; i++) {
        if (g->qpn[i] == qpn) {
            return i;
        }
    }
    return -1;
}

static void uzura_mcast_remove(UzuraMcastGroup *g, int i)
{
    g->qpn[i] = g->qpn[--g->nqp];
}

/* The QP of an attach or detach: a UD QP of the context. */
static uint8_t uzura_mcast_args(UzuraCore *core, const struct uz_cmd_mcast *c,
                                uint32_t *addr)
{
    UzuraQp *qp = uzura_qp_lookup(core, le32_to_cpu(c->qpn));

    if (!qp) {
        trace_uzura_mcast_err_qp(le32_to_cpu(c->qpn), le32_to_cpu(c->uctx));
        return UZ_CMD_BAD_HANDLE;
    }
    if (qp->uctx != le32_to_cpu(c->uctx)) {
        trace_uzura_mcast_err_qp_uctx(le32_to_cpu(c->qpn), le32_to_cpu(c->uctx),
                                      qp->uctx);
        return UZ_CMD_BAD_HANDLE;
    }
    *addr = uzura_mcast_group_addr(c->mgid);
    if (!uzura_qp_is_ud(qp)) {
        trace_uzura_mcast_err_qp_type(le32_to_cpu(c->qpn), qp->type);
        return UZ_CMD_BAD_PARAM;
    }
    if (!*addr) {
        trace_uzura_mcast_err_mgid(le32_to_cpu(c->qpn));
        return UZ_CMD_BAD_PARAM;
    }
    return UZ_CMD_OK;
}

uint8_t uzura_cmd_attach_mcast(UzuraCore *core, const struct uz_admin_cmd *cmd,
                               struct uz_admin_cqe *cqe)
{
    const struct uz_cmd_mcast *c = (const void *)cmd->raw;
    uint32_t qpn = le32_to_cpu(c->qpn), addr;
    uint8_t st = uzura_mcast_args(core, c, &addr);
    UzuraMcastGroup *g;

    if (st != UZ_CMD_OK) {
        return st;
    }
    g = uzura_mcast_find(core, addr);
    if (!g) {
        /* A new group takes the first entry no QP is attached to. */
        g = core->rdma.mcast;
        while (g < core->rdma.mcast + UZ_MCAST_MAX_GRP && g->nqp) {
            g++;
        }
        if (g == core->rdma.mcast + UZ_MCAST_MAX_GRP) {
            trace_uzura_mcast_err_groups(UZ_MCAST_MAX_GRP);
            return UZ_CMD_NO_RESOURCES;
        }
        g->addr = addr;
    } else if (uzura_mcast_member(g, qpn) >= 0) {
        return UZ_CMD_OK;                   /* attached already */
    } else if (g->nqp == UZ_MCAST_MAX_QP_ATTACH) {
        trace_uzura_mcast_err_group_full(addr, UZ_MCAST_MAX_QP_ATTACH);
        return UZ_CMD_NO_RESOURCES;
    }
    g->qpn[g->nqp++] = qpn;
    trace_uzura_mcast_attach(qpn, addr, g->nqp);
    return UZ_CMD_OK;
}

uint8_t uzura_cmd_detach_mcast(UzuraCore *core, const struct uz_admin_cmd *cmd,
                               struct uz_admin_cqe *cqe)
{
    const struct uz_cmd_mcast *c = (const void *)cmd->raw;
    uint32_t qpn = le32_to_cpu(c->qpn), addr;
    uint8_t st = uzura_mcast_args(core, c, &addr);
    UzuraMcastGroup *g;
    int i;

    if (st != UZ_CMD_OK) {
        return st;
    }
    g = uzura_mcast_find(core, addr);
    i = g ? uzura_mcast_member(g, qpn) : -1;
    if (i < 0) {
        trace_uzura_mcast_err_not_attached(qpn, addr);
        return UZ_CMD_BAD_PARAM;
    }
    uzura_mcast_remove(g, i);
    trace_uzura_mcast_detach(qpn, addr, g->nqp);
    return UZ_CMD_OK;
}

/* A destroyed QP leaves every group it is in. */
void uzura_mcast_qp_gone(UzuraCore *core, uint32_t qpn)
{
    UzuraMcastGroup *g = core->rdma.mcast;
    int i, j;

    for (i = 0; i < UZ_MCAST_MAX_GRP; i++) {
        j = uzura_mcast_member(&g[i], qpn);
        if (j >= 0) {
            uzura_mcast_remove(&g[i], j);
        }
    }
}

/*
 * A UD send to UZ_MCAST_QPN: a copy to each attached QP that can receive.
 * The walk is bounded by the group's size; a member that fails its
 * receive leaves the others untouched.
 */
void uzura_mcast_receive(UzuraCore *core, const UzuraPkt *pkt)
{
    UzuraMcastGroup *g = uzura_mcast_find(core, ldl_be_p(pkt->daddr));
    int i, got = 0;
    UzuraQp *qp;

    if (!(uzura_ops[pkt->opcode].hdrs & UZ_H_DETH) || !g) {
        trace_uzura_roce_rx_drop("no multicast group");
        core->counters.rx_no_qp++;
        return;
    }
    /* Only commands change the group: a member's failure leaves it. */
    for (i = 0; i < g->nqp; i++) {
        qp = uzura_qp_lookup(core, g->qpn[i]);
        if (!qp || !uzura_qp_receives(qp)) {
            continue;
        }
        trace_uzura_mcast_rx(g->qpn[i], ldl_be_p(pkt->daddr));
        core->counters.rx_mcast++;
        got++;
        uzura_resp_ud(core, qp, pkt);
    }
    if (!got) {
        trace_uzura_roce_rx_drop("no multicast member can receive");
        core->counters.rx_no_qp++;
    }
}
