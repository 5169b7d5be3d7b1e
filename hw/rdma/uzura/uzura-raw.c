/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uzura RDMA NIC: raw packet QPs and flow rules (spec 8.18).
 *
 * A raw QP sends whole Ethernet frames that its WQEs hold and receives
 * the frames its flow rules match.  Rules are the device's (UZ_FLOW_MAX),
 * each attached to one raw QP; every frame from the link, and every
 * frame a raw QP sends to this NIC's own MAC or to a group, is matched
 * against all of them before RoCE and the Ethernet function see it, and
 * a frame some rule matched goes only to the raw QPs that match it (for
 * a rule on an RSS QP, the one its table picks, uzura-rss.c).
 */
#include "qemu/osdep.h"
#include "qemu/cutils.h"
#include "uzura-core.h"
#include "trace.h"

#define ETHERTYPE_VLAN      0x8100
#define ETHERTYPE_IPV4      0x0800
#define ETHERTYPE_IPV6      0x86dd

static uint16_t uzura_raw_be16(const uint8_t *p)
{
    uint16_t v;

    memcpy(&v, p, sizeof(v));
    return v;
}

/* Parse what the rules match on; @size >= UZ_ETH_HDR_LEN. */
static void uzura_raw_key(const uint8_t *buf, size_t size, UzuraFrameKey *k)
{
    size_t l3 = UZ_ETH_HDR_LEN, l4 = 0;
    uint16_t type = lduw_be_p(buf + 12);

    memset(k, 0, sizeof(*k));
    k->dmac = buf;
    k->smac = buf + 6;
    if (type == ETHERTYPE_VLAN && size >= UZ_ETH_HDR_LEN + 4) {
        k->vlan_tci = uzura_raw_be16(buf + 14);
        type = lduw_be_p(buf + 16);
        l3 += 4;
    }
    k->ethertype = cpu_to_be16(type);
    if (type == ETHERTYPE_IPV4 && size >= l3 + 20 &&
        (buf[l3] >> 4) == 4 && (buf[l3] & 0xf) >= 5 &&
        size >= l3 + (buf[l3] & 0xf) * 4) {
        k->ip_ver = 4;
        k->ip_proto = buf[l3 + 9];
        memcpy(k->src_ip, buf + l3 + 12, 4);
        memcpy(k->dst_ip, buf + l3 + 16, 4);
        /* A fragment after the first has no ports. */
        if (!(lduw_be_p(buf + l3 + 6) & 0x1fff)) {
            l4 = l3 + (buf[l3] & 0xf) * 4;
        }
    } else if (type == ETHERTYPE_IPV6 && size >= l3 + 40 &&
               (buf[l3] >> 4) == 6) {
        k->ip_ver = 6;
        k->ip_proto = buf[l3 + 6];
        memcpy(k->src_ip, buf + l3 + 8, 16);
        memcpy(k->dst_ip, buf + l3 + 24, 16);
        l4 = l3 + 40;
    }
    if (l4 && (k->ip_proto == UZ_FLOW_L4_TCP ||
               k->ip_proto == UZ_FLOW_L4_UDP) && size >= l4 + 4) {
        k->l4 = true;
        k->sport = uzura_raw_be16(buf + l4);
        k->dport = uzura_raw_be16(buf + l4 + 2);
    }
}

static bool uzura_raw_eq(const uint8_t *a, const uint8_t *v,
                         const uint8_t *mask, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        if ((a[i] ^ v[i]) & mask[i]) {
            return false;
        }
    }
    return true;
}

static bool uzura_raw_eq16(uint16_t a, uint16_t v, uint16_t mask)
{
    return !((a ^ v) & mask);
}

static bool uzura_raw_match(const struct uz_flow_spec *s,
                            const UzuraFrameKey *k)
{
    size_t alen = s->ip_ver == 6 ? 16 : 4;

    if (!uzura_raw_eq(k->dmac, s->dmac, s->dmac_mask, 6) ||
        !uzura_raw_eq(k->smac, s->smac, s->smac_mask, 6) ||
        !uzura_raw_eq16(k->ethertype, s->ethertype, s->ethertype_mask) ||
        !uzura_raw_eq16(k->vlan_tci, s->vlan_tci, s->vlan_tci_mask)) {
        return false;
    }
    if (s->ip_ver && (k->ip_ver != s->ip_ver ||
                      !uzura_raw_eq(k->src_ip, s->src_ip, s->src_ip_mask,
                                    alen) ||
                      !uzura_raw_eq(k->dst_ip, s->dst_ip, s->dst_ip_mask,
                                    alen) ||
                      ((k->ip_proto ^ s->ip_proto) & s->ip_proto_mask))) {
        return false;
    }
    if (s->l4 && (!k->l4 || k->ip_proto != s->l4 ||
                  !uzura_raw_eq16(k->sport, s->sport, s->sport_mask) ||
                  !uzura_raw_eq16(k->dport, s->dport, s->dport_mask))) {
        return false;
    }
    return true;
}

/*
 * Hand @buf to every raw QP a rule matches, once each; true if any rule
 * matched, and the frame is theirs alone.  At most UZ_FLOW_MAX rules.
 */
bool uzura_raw_receive(UzuraCore *core, const uint8_t *buf, size_t size)
{
    UzuraRdma *r = &core->rdma;
    UzuraFrameKey k;
    bool matched = false;
    uint32_t i;

    if (!r->nflows || size < UZ_ETH_HDR_LEN) {
        return false;
    }
    uzura_raw_key(buf, size, &k);
    r->raw_seq++;
    for (i = 0; i < UZ_FLOW_MAX; i++) {
        UzuraFlow *f = &r->flow[i];
        UzuraQp *qp;

        if (!f->valid || !uzura_raw_match(&f->spec, &k)) {
            continue;
        }
        matched = true;
        qp = &r->qp[f->qpn];
        if (qp->type == UZ_QPT_RSS) {
            qp = uzura_rss_target(core, qp, &k);
        }
        if (qp->raw_seq == r->raw_seq) {
            continue;           /* another rule took it there */
        }
        qp->raw_seq = r->raw_seq;
        trace_uzura_raw_rx(i, qp->x->qpn, size);
        uzura_resp_raw(core, qp, buf, size);
    }
    return matched;
}

/*
 * A frame a raw QP sends: to its own MAC only this NIC's rules, to a
 * group those and the link, else the link.
 */
void uzura_raw_transmit(UzuraCore *core, const uint8_t *buf, size_t len)
{
    bool own = uzura_loop_is_own(core, buf);

    trace_uzura_raw_tx(len, own);
    if (own || (buf[0] & 1)) {
        uzura_loop_send_raw(core, buf, len);
    }
    if (own) {
        return;
    }
    if (!uzura_core_link_up(core)) {
        return;                 /* the link is down: gone, as UD's */
    }
    uzura_link_send(core, buf, len);
}

uint8_t uzura_cmd_create_flow(UzuraCore *core, const struct uz_admin_cmd *cmd,
                              struct uz_admin_cqe *cqe)
{
    const struct uz_cmd_create_flow *c = (const void *)cmd->raw;
    UzuraRdma *r = &core->rdma;
    UzuraQp *qp = uzura_qp_lookup(core, le32_to_cpu(c->qpn));
    struct uz_flow_spec s;
    int64_t i;

    if (!qp) {
        trace_uzura_flow_err_qp(le32_to_cpu(c->qpn), le32_to_cpu(c->uctx));
        return UZ_CMD_BAD_HANDLE;
    }
    if (qp->uctx != le32_to_cpu(c->uctx)) {
        trace_uzura_flow_err_qp_uctx(le32_to_cpu(c->qpn), le32_to_cpu(c->uctx),
                                     qp->uctx);
        return UZ_CMD_BAD_HANDLE;
    }
    if (qp->type != UZ_QPT_RAW && qp->type != UZ_QPT_RSS) {
        trace_uzura_flow_err_qp_type(le32_to_cpu(c->qpn), qp->type);
        return UZ_CMD_BAD_HANDLE;
    }
    if (!uzura_dma_read(core, le64_to_cpu(c->spec_addr), &s, sizeof(s))) {
        trace_uzura_flow_err_spec_addr(le64_to_cpu(c->spec_addr));
        return UZ_CMD_BAD_ADDR;
    }
    if (s.ip_ver && s.ip_ver != 4 && s.ip_ver != 6) {
        trace_uzura_flow_err_ip_ver(s.ip_ver);
        return UZ_CMD_BAD_PARAM;
    }
    if (s.l4 && s.l4 != UZ_FLOW_L4_TCP && s.l4 != UZ_FLOW_L4_UDP) {
        trace_uzura_flow_err_l4(s.l4);
        return UZ_CMD_BAD_PARAM;
    }
    if (!buffer_is_zero(s.reserved, sizeof(s.reserved))) {
        trace_uzura_flow_err_reserved(le64_to_cpu(c->spec_addr));
        return UZ_CMD_BAD_PARAM;
    }
    i = UZ_FIND_FREE(r->flow, UZ_FLOW_MAX, 0);
    if (i < 0) {
        trace_uzura_flow_err_full(UZ_FLOW_MAX);
        return UZ_CMD_NO_RESOURCES;
    }
    r->flow[i] = (UzuraFlow) { .valid = true, .qpn = le32_to_cpu(c->qpn),
                               .uctx = qp->uctx, .spec = s };
    r->nflows++;
    qp->flows++;
    trace_uzura_raw_flow(i, le32_to_cpu(c->qpn), true);
    cqe->out0 = cpu_to_le32(i);
    return UZ_CMD_OK;
}

uint8_t uzura_cmd_destroy_flow(UzuraCore *core, const struct uz_admin_cmd *cmd,
                               struct uz_admin_cqe *cqe)
{
    const struct uz_cmd_obj *c = (const void *)cmd->raw;
    UzuraRdma *r = &core->rdma;
    uint32_t i = le32_to_cpu(c->handle);

    if (i >= UZ_FLOW_MAX) {
        trace_uzura_flow_err_index(i, UZ_FLOW_MAX);
        return UZ_CMD_BAD_HANDLE;
    }
    if (!r->flow[i].valid || r->flow[i].uctx != le32_to_cpu(c->uctx)) {
        trace_uzura_flow_err_handle(i, le32_to_cpu(c->uctx));
        return UZ_CMD_BAD_HANDLE;
    }
    r->flow[i].valid = false;
    r->nflows--;
    r->qp[r->flow[i].qpn].flows--;
    trace_uzura_raw_flow(i, r->flow[i].qpn, false);
    return UZ_CMD_OK;
}
