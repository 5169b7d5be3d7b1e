/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uzura RDMA NIC: selective repeat, the responder's side (spec 9.6).
 *
 * With the device property recovery=sr, a responder whose requester says
 * in its requests that it takes SACKs (UZ_BTH_B8_SR) keeps the packets
 * that arrive after a hole instead of dropping them, and names the hole
 * in a SACK (UZ_BTH_OP_RC_SACK); the requester sends only what the hole
 * lacks.  Once the hole is filled, the kept packets are executed in PSN
 * order as if they had just arrived.  This follows IRN (Mittal et al.,
 * SIGCOMM 2018), except that kept packets wait in the device rather than
 * being placed in host memory at once: the window of UZ_SR_WINDOW PSNs
 * per QP, of at most a path MTU each, and UZ_SR_KEPT_MAX packets and
 * UZ_SR_KEPT_BYTES_MAX bytes per NIC stand for its memory.
 */
#include "qemu/osdep.h"
#include "uzura-core.h"
#include "trace.h"

struct UzuraSrSlot {
    UzuraPkt pkt;               /* payload points into data */
    uint8_t data[];
};

/* What a kept packet holds of the NIC's UZ_SR_KEPT_BYTES_MAX. */
static size_t uzura_sr_bytes(const UzuraPkt *pkt)
{
    return sizeof(UzuraSrSlot) + pkt->paylen;
}

/* Take a kept packet out of its slot; the caller frees it. */
static UzuraSrSlot *uzura_sr_take(UzuraCore *core, UzuraQp *qp,
                                  UzuraSrSlot **slot)
{
    UzuraSrSlot *s = *slot;

    *slot = NULL;
    qp->x->resp.sr_kept--;
    core->rdma.sr_kept--;
    core->rdma.sr_kept_bytes -= uzura_sr_bytes(&s->pkt);
    return s;
}

static void uzura_sr_drop(UzuraCore *core, UzuraQp *qp, UzuraSrSlot **slot)
{
    g_free(uzura_sr_take(core, qp, slot));
}

/* Ask for @count PSNs from @psn; everything before the hole is in. */
static void uzura_sr_sack(UzuraCore *core, UzuraQp *qp, uint32_t psn,
                          uint32_t count)
{
    UzuraXfer *x = qp->x;
    UzuraPkt pkt = { 0 };

    uzura_resp_fill(qp, &pkt, UZ_BTH_OP_RC_SACK, x->resp.epsn - 1);
    pkt.syndrome = UZ_AETH_ACK | 0x1f;
    pkt.sack.missing_psn = psn & UZ_PSN_MASK;
    pkt.sack.count = count;
    core->counters.sacks_sent++;
    trace_uzura_sr_sack(x->qpn, x->resp.epsn, psn & UZ_PSN_MASK, count);
    uzura_roce_send(core, &pkt, NULL, NULL);
}

/*
 * A request past the expected PSN: keep it, and SACK the hole before it
 * if it is a new one.  False when it does not fit the window or the
 * NIC's room; the caller then goes back N.
 */
bool uzura_sr_keep(UzuraCore *core, UzuraQp *qp, const UzuraPkt *pkt)
{
    UzuraXfer *x = qp->x;
    int32_t d = uzura_psn_diff(pkt->psn, x->resp.epsn);
    uint32_t high = x->resp.epsn - 1;
    UzuraSrSlot **slot, *s;

    if (d <= 0 || d >= UZ_SR_WINDOW) {
        return false;
    }
    /* The highest PSN received: kept, or else the last one in order. */
    if (x->resp.sr_kept &&
        uzura_psn_diff(x->resp.sr_high, x->resp.epsn) >= 0) {
        high = x->resp.sr_high;
    }
    if (!x->resp.sr_slot) {
        x->resp.sr_slot = g_new0(UzuraSrSlot *, UZ_SR_WINDOW);
    }
    slot = &x->resp.sr_slot[pkt->psn % UZ_SR_WINDOW];
    /*
     * A kept PSN is a duplicate only while it is still ahead: 2^24 PSNs
     * later the same PSN is another packet.
     */
    if (*slot && (*slot)->pkt.psn == pkt->psn &&
        uzura_psn_diff((*slot)->pkt.psn, x->resp.epsn) > 0) {
        core->counters.duplicates++;
        return true;
    }
    if (*slot) {
        uzura_sr_drop(core, qp, slot);  /* left behind by a long READ */
    }
    if (core->rdma.sr_kept >= UZ_SR_KEPT_MAX ||
        core->rdma.sr_kept_bytes + uzura_sr_bytes(pkt) >
        UZ_SR_KEPT_BYTES_MAX) {
        trace_uzura_sr_not_kept(x->qpn, pkt->psn, "the NIC's store is full");
        return false;
    }
    s = g_malloc(sizeof(*s) + pkt->paylen);
    s->pkt = *pkt;
    memcpy(s->data, pkt->payload, pkt->paylen);
    s->pkt.payload = s->data;
    s->pkt.ip_hdr = NULL;
    *slot = s;
    x->resp.sr_kept++;
    core->rdma.sr_kept++;
    core->rdma.sr_kept_bytes += uzura_sr_bytes(pkt);
    core->counters.sr_kept++;
    if (uzura_psn_diff(pkt->psn, high) > 0) {
        if (uzura_psn_diff(pkt->psn, high) > 1) {
            uzura_sr_sack(core, qp, high + 1, uzura_psn_diff(pkt->psn, high)
                          - 1);
        }
        x->resp.sr_high = pkt->psn;
    }
    return true;
}

/*
 * Execute the kept packets that are now in order.  One the expected PSN
 * passed without it (inside a long READ's PSNs) stays until its slot is
 * wanted again or the QP starts over.
 */
void uzura_sr_drain(UzuraCore *core, UzuraQp *qp)
{
    UzuraXfer *x = qp->x;
    UzuraSrSlot **slot, *s;

    while (x->resp.sr_kept && !x->resp.err_owed &&
           qp->attr.state >= UZ_QPS_RTR && qp->attr.state <= UZ_QPS_SQE) {
        slot = &x->resp.sr_slot[x->resp.epsn % UZ_SR_WINDOW];
        if (!*slot || (*slot)->pkt.psn != x->resp.epsn) {
            break;
        }
        s = uzura_sr_take(core, qp, slot);
        uzura_resp_packet(core, qp, &s->pkt);
        g_free(s);
    }
}

/* Forget every kept packet: a new connection, or the QP goes. */
void uzura_sr_free(UzuraCore *core, UzuraQp *qp)
{
    UzuraXfer *x = qp->x;
    uint32_t i;

    if (!x->resp.sr_slot) {
        return;
    }
    for (i = 0; i < UZ_SR_WINDOW; i++) {
        if (x->resp.sr_slot[i]) {
            uzura_sr_drop(core, qp, &x->resp.sr_slot[i]);
        }
    }
    g_free(x->resp.sr_slot);
    x->resp.sr_slot = NULL;
}
