/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uzura RDMA NIC: receive side scaling (spec 8.18.1).
 *
 * An RSS QP (UZ_QPT_RSS) owns flow rules like a raw QP but has no queue:
 * a frame one of its rules matches goes to the raw QP of its table that
 * the Toeplitz hash of the frame's addresses and ports selects.  The
 * table is fixed at CREATE_QP; the raw QPs it names cannot be destroyed
 * before it (rss_refs).
 */
#include "qemu/osdep.h"
#include "uzura-core.h"
#include "trace.h"

/* Longest hash input: two IPv6 addresses and two ports. */
#define UZ_RSS_IN_MAX   36

/*
 * The Toeplitz hash: for each set bit of the input, XOR in the 32 key
 * bits that start at that bit's position.  @len <= sizeof(key) - 4.
 */
uint32_t uzura_rss_toeplitz(const uint8_t *key, const uint8_t *in,
                            size_t len)
{
    uint32_t hash = 0, win = ldl_be_p(key);
    size_t i;
    int b;

    for (i = 0; i < len; i++) {
        for (b = 7; b >= 0; b--) {
            if (in[i] & (1u << b)) {
                hash ^= win;
            }
            win = (win << 1) | ((key[i + 4] >> b) & 1);
        }
    }
    return hash;
}

/*
 * Read and check the table of a new RSS QP of @uctx at @addr; on
 * UZ_CMD_OK *@out is its copy, the caller's.
 */
uint8_t uzura_rss_create(UzuraCore *core, uint64_t addr, uint32_t uctx,
                         UzuraRss **out)
{
    g_autofree struct uz_rss_conf *c = g_new(struct uz_rss_conf, 1);
    uint32_t n, i;
    UzuraRss *rss;

    if (!uzura_dma_read(core, addr, c, sizeof(*c))) {
        trace_uzura_rss_err_addr(addr);
        return UZ_CMD_BAD_ADDR;
    }
    c->fields = le32_to_cpu(c->fields);
    if (c->func != UZ_RSS_TOEPLITZ) {
        uzura_guest_error(trace_uzura_rss_err_func(c->func, UZ_RSS_TOEPLITZ),
                          "RSS: function %u, log_size %u or fields 0x%x "
                          "not supported", c->func, c->log_size, c->fields);
        return UZ_CMD_BAD_PARAM;
    }
    if (c->log_size > UZ_RSS_LOG_MAX) {
        uzura_guest_error(trace_uzura_rss_err_log_size(c->log_size,
                                                       UZ_RSS_LOG_MAX),
                          "RSS: function %u, log_size %u or fields 0x%x "
                          "not supported", c->func, c->log_size, c->fields);
        return UZ_CMD_BAD_PARAM;
    }
    if (c->fields & ~UZ_RSS_F_ALL) {
        uzura_guest_error(trace_uzura_rss_err_fields(c->fields, UZ_RSS_F_ALL),
                          "RSS: function %u, log_size %u or fields 0x%x "
                          "not supported", c->func, c->log_size, c->fields);
        return UZ_CMD_BAD_PARAM;
    }
    n = 1u << c->log_size;
    for (i = 0; i < n; i++) {
        UzuraQp *t = uzura_qp_lookup(core, le32_to_cpu(c->qpn[i]));

        if (!t || t->uctx != uctx) {
            uzura_guest_error(trace_uzura_rss_err_entry_qp(i,
                                                   le32_to_cpu(c->qpn[i]),
                                                   uctx),
                              "RSS: entry %u (QP %u) is no raw QP of "
                              "context %u", i, le32_to_cpu(c->qpn[i]), uctx);
            return UZ_CMD_BAD_HANDLE;
        }
        if (t->type != UZ_QPT_RAW) {
            uzura_guest_error(trace_uzura_rss_err_entry_type(i,
                                                   le32_to_cpu(c->qpn[i]),
                                                   t->type),
                              "RSS: entry %u (QP %u) is no raw QP of "
                              "context %u", i, le32_to_cpu(c->qpn[i]), uctx);
            return UZ_CMD_BAD_HANDLE;
        }
    }
    rss = g_malloc(sizeof(*rss) + n * sizeof(rss->qpn[0]));
    memcpy(rss->key, c->key, sizeof(rss->key));
    rss->fields = c->fields;
    rss->mask = n - 1;
    for (i = 0; i < n; i++) {
        rss->qpn[i] = le32_to_cpu(c->qpn[i]);
    }
    *out = rss;
    return UZ_CMD_OK;
}

/* RSS QP @qp takes @rss; its raw QPs are held until it goes. */
void uzura_rss_attach(UzuraCore *core, UzuraQp *qp, UzuraRss *rss)
{
    uint32_t i;

    qp->rss = rss;
    for (i = 0; i <= rss->mask; i++) {
        core->rdma.qp[rss->qpn[i]].rss_refs++;
    }
}

/* DESTROY_QP of RSS QP @qp: let go of its raw QPs and free the table. */
void uzura_rss_release(UzuraCore *core, UzuraQp *qp)
{
    uint32_t i;

    if (!qp->rss) {
        return;
    }
    for (i = 0; i <= qp->rss->mask; i++) {
        core->rdma.qp[qp->rss->qpn[i]].rss_refs--;
    }
    g_free(qp->rss);
    qp->rss = NULL;
}

/*
 * The raw QP a frame matched by a rule of RSS QP @qp goes to.  The hash
 * input is what the frame has of the selected fields, in the order src
 * address, dst address, src port, dst port.
 */
UzuraQp *uzura_rss_target(UzuraCore *core, const UzuraQp *qp,
                          const UzuraFrameKey *k)
{
    const UzuraRss *rss = qp->rss;
    uint32_t f = rss->fields, hash, qpn;
    uint8_t in[UZ_RSS_IN_MAX];
    size_t len = 0, alen = k->ip_ver == 6 ? 16 : 4;
    bool src = false, dst = false, sport = false, dport = false;

    if (k->ip_ver == 4) {
        src = f & UZ_RSS_F_SRC_IPV4;
        dst = f & UZ_RSS_F_DST_IPV4;
    } else if (k->ip_ver == 6) {
        src = f & UZ_RSS_F_SRC_IPV6;
        dst = f & UZ_RSS_F_DST_IPV6;
    }
    if (k->l4 && k->ip_proto == UZ_FLOW_L4_TCP) {
        sport = f & UZ_RSS_F_SRC_PORT_TCP;
        dport = f & UZ_RSS_F_DST_PORT_TCP;
    } else if (k->l4 && k->ip_proto == UZ_FLOW_L4_UDP) {
        sport = f & UZ_RSS_F_SRC_PORT_UDP;
        dport = f & UZ_RSS_F_DST_PORT_UDP;
    }
    if (src) {
        memcpy(in + len, k->src_ip, alen);
        len += alen;
    }
    if (dst) {
        memcpy(in + len, k->dst_ip, alen);
        len += alen;
    }
    if (sport) {
        memcpy(in + len, &k->sport, 2);     /* as sent: big-endian */
        len += 2;
    }
    if (dport) {
        memcpy(in + len, &k->dport, 2);
        len += 2;
    }
    hash = uzura_rss_toeplitz(rss->key, in, len);
    qpn = rss->qpn[hash & rss->mask];
    trace_uzura_rss_rx(qp->x->qpn, hash, qpn);
    return &core->rdma.qp[qpn];
}
