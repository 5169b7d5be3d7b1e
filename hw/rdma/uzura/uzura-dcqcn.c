/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uzura RDMA NIC: congestion control (spec 9.1.2), DCQCN as RoCE NICs
 * run it (Zhu et al., SIGCOMM 2015; the knobs of mlx5's ecn/roce_np and
 * ecn/roce_rp).
 *
 * The notification point: a RoCE packet that arrives marked CE at a
 * connected QP makes the NIC send a CNP to the QP's peer, at most one
 * per QP every min_time_between_cnps.
 *
 * The reaction point: a QP's first CNP gives it a rate limiter, a
 * current rate Rc and a target rate Rt.  Each CNP cuts Rc by alpha / 2
 * (at most once per rate_reduce_monitor_period) and raises alpha; alpha
 * decays every dce_tcp_rtt without one.  Rc climbs back towards Rt in
 * steps, each rpg_time_reset of time and each rpg_byte_reset of bytes
 * sent: fast recovery, then additive, then hyper increase.  Once back at
 * the maximum rate the limiter is released.  The limiter paces the
 * requester's packets, first sends and resends alike: a packet that may
 * not go yet waits for the QP's pacing timer.
 *
 * The timer and byte steps are counted when the QP next sends or takes
 * a CNP, not by a timer of their own: the result is the same for the
 * next packet, and an idle QP costs nothing.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qapi/visitor.h"
#include "qemu/timer.h"
#include "qom/object.h"
#include "uzura-core.h"
#include "trace.h"

/* Steps of alpha's decay or of the increase counted at once, at most. */
#define UZ_RP_CATCH_UP  2048


static int64_t uzura_cc_now(void)
{
    return qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
}

/* The rate the limiter climbs back to, kb/s: the link's, or rpg_max_rate. */
static uint64_t uzura_rp_max(UzuraCore *core)
{
    uint32_t max = core->rdma.cc.rpg_max_rate;

    return (uint64_t)(max && max < core->link_speed ? max :
                      core->link_speed) * 1000;
}

/* ---- the notification point ---- */

/*
 * A packet for @qp arrived marked CE: tell the sender, at most once per
 * min_time_between_cnps.  Only a connected QP knows its peer.
 */
void uzura_np_marked(UzuraCore *core, UzuraQp *qp)
{
    UzuraXfer *x = qp->x;
    const UzuraCcParams *p = &core->rdma.cc;
    static const uint8_t zero[UZ_CNP_PAYLOAD_LEN];
    UzuraPkt pkt = { 0 };
    int64_t now = uzura_cc_now();

    if (!p->np_enable || uzura_qp_is_ud(qp) || uzura_qp_is_raw(qp) ||
        qp->attr.state < UZ_QPS_RTR) {
        return;
    }
    if (x->resp.np_cnp_once &&
        now - x->resp.np_cnp_ns <
        (int64_t)p->min_time_between_cnps * SCALE_US) {
        return;
    }
    x->resp.np_cnp_once = true;
    x->resp.np_cnp_ns = now;
    uzura_resp_fill(qp, &pkt, UZ_BTH_OP_CNP, 0);
    pkt.xrc = false;
    pkt.becn = true;
    pkt.tos = p->cnp_dscp << 2;
    pkt.payload = zero;
    pkt.paylen = sizeof(zero);
    core->counters.np_cnp_sent++;
    trace_uzura_np_cnp(x->qpn, qp->attr.dest_qpn);
    uzura_roce_send(core, &pkt, NULL, NULL);
}

/* ---- the reaction point ---- */

/* alpha's periods since alpha_ns, each without a CNP: alpha decays. */
static void uzura_rp_alpha_decay(const UzuraCcParams *p, UzuraRp *rp,
                                 int64_t now)
{
    int64_t period = (int64_t)MAX(p->dce_tcp_rtt, 1) * SCALE_US;
    int64_t n = (now - rp->alpha_ns) / period, i;

    if (n <= 0) {
        return;
    }
    for (i = 0; i < MIN(n, UZ_RP_CATCH_UP) && rp->alpha; i++) {
        rp->alpha = (uint64_t)rp->alpha * p->dce_tcp_g / UZ_ALPHA_ONE;
    }
    if (n > UZ_RP_CATCH_UP) {
        rp->alpha = 0;
    }
    rp->alpha_ns += n * period;
}

/* One increase step, the paper's: by the stage the two counters say. */
static void uzura_rp_increase(UzuraCore *core, UzuraRp *rp)
{
    const UzuraCcParams *p = &core->rdma.cc;
    uint32_t f = p->rpg_threshold;
    uint32_t lo = MIN(rp->t_count, rp->bc_count);
    uint32_t hi = MAX(rp->t_count, rp->bc_count);
    uint64_t max = uzura_rp_max(core);

    if (hi < f) {
        /* fast recovery: Rc halves its distance to Rt */
    } else if (lo > f) {
        rp->rt += (uint64_t)(lo - f) * p->rpg_hai_rate * 1000;
    } else {
        rp->rt += (uint64_t)p->rpg_ai_rate * 1000;
    }
    rp->rt = MIN(rp->rt, max);
    rp->rc = MIN((rp->rt + rp->rc) / 2 + 1, rp->rt);
}

/* What passed since the QP last looked: alpha's decay, timer steps. */
static void uzura_rp_catch_up(UzuraCore *core, UzuraQp *qp, int64_t now)
{
    const UzuraCcParams *p = &core->rdma.cc;
    UzuraRp *rp = qp->x->rp;
    int64_t period = (int64_t)MAX(p->rpg_time_reset, 1) * SCALE_US;
    int64_t n = (now - rp->inc_ns) / period, i;
    uint64_t old = rp->rc;

    uzura_rp_alpha_decay(p, rp, now);
    if (n <= 0) {
        return;
    }
    for (i = 0; i < MIN(n, UZ_RP_CATCH_UP); i++) {
        rp->t_count++;
        uzura_rp_increase(core, rp);
    }
    rp->inc_ns = n > UZ_RP_CATCH_UP ? now : rp->inc_ns + n * period;
    if (rp->rc != old) {
        trace_uzura_rp_rate(qp->x->qpn, "timer", old, rp->rc, rp->rt,
                            rp->alpha);
    }
}

void uzura_rp_free(UzuraQp *qp)
{
    UzuraXfer *x = qp->x;

    if (x->rp) {
        timer_free(x->rp->timer);
        g_free(x->rp);
        x->rp = NULL;
    }
    x->req.rp_wait = false;
}

/*
 * The pacing timer: the held packet may go.  The time it waited on its
 * own QP's limiter is no time an ACK is late: the ACK timeout runs again
 * from this packet.  Without it, a QP cut to a rate at which a message
 * takes longer to send than the ACK timeout timed out on every message
 * and ended in RETRY_EXC_ERR (bench/incast found it).
 */
static void uzura_rp_timer(void *opaque)
{
    UzuraXfer *x = opaque;
    UzuraCore *core = x->core;
    bool g = uzura_enter(core);

    uzura_req_paced(core, x);
    x->req.rp_wait = false;
    uzura_work_schedule(core);
    uzura_leave(core, g);
}

/* A QP's rate limiter, its state yet to set: a CNP's, or a stream's. */
UzuraRp *uzura_rp_new(UzuraXfer *x)
{
    x->rp = g_new0(UzuraRp, 1);
    x->rp->x = x;
    x->rp->timer = timer_new_ns(QEMU_CLOCK_VIRTUAL, uzura_rp_timer, x);
    return x->rp;
}

/*
 * A CNP for @qp.  It cuts the rate of a QP that sends (RC, UC, XRC
 * initiator, in RTS or SQD); any other, or with roce_rp_enable off, it is
 * counted and ignored.
 */
void uzura_rp_cnp(UzuraCore *core, UzuraQp *qp)
{
    const UzuraCcParams *p = &core->rdma.cc;
    UzuraXfer *x = qp->x;
    UzuraRp *rp = x->rp;
    int64_t now = uzura_cc_now();
    uint64_t old, dec;

    if (!p->rp_enable || !uzura_qp_has_sq(qp) || uzura_qp_is_ud(qp) ||
        uzura_qp_is_raw(qp) || qp->type == UZ_QPT_XRC_TGT ||
        (qp->attr.state != UZ_QPS_RTS && qp->attr.state != UZ_QPS_SQD)) {
        core->counters.rp_cnp_ignored++;
        trace_uzura_rp_cnp_ignored(x->qpn, p->rp_enable ?
                                   "not a sending connected QP" :
                                   "roce_rp_enable off");
        return;
    }
    core->counters.rp_cnp_handled++;
    if (!rp) {
        uint64_t first = (uint64_t)p->rate_to_set_on_first_cnp * 1000;

        rp = uzura_rp_new(x);
        rp->rc = rp->rt = first && first < uzura_rp_max(core) ?
                          first : uzura_rp_max(core);
        rp->alpha = MIN(p->initial_alpha_value, UZ_ALPHA_ONE - 1);
        rp->alpha_ns = rp->inc_ns = rp->next_ns = now;
        rp->cut_ns = now - (int64_t)p->rate_reduce_monitor_period *
                     SCALE_US - 1;
        trace_uzura_rp_start(x->qpn, rp->rc);
    }
    uzura_rp_catch_up(core, qp, now);
    old = rp->rc;
    if (now - rp->cut_ns >=
        (int64_t)p->rate_reduce_monitor_period * SCALE_US) {
        /* Rc * (1 - alpha / 2^rpg_gd), by rpg_min_dec_fac at most. */
        dec = MIN(rp->rc * rp->alpha >> MIN(p->rpg_gd, 63),
                  rp->rc * p->rpg_min_dec_fac / 100);
        rp->rt = rp->rc;
        rp->rc = MAX(rp->rc - dec, (uint64_t)p->rpg_min_rate * 1000);
        rp->cut_ns = now;
    }
    /* alpha = (1 - g) alpha + g, g = (1024 - dce_tcp_g) / 1024 */
    rp->alpha = MIN((uint64_t)rp->alpha * p->dce_tcp_g / UZ_ALPHA_ONE +
                    (UZ_ALPHA_ONE - p->dce_tcp_g), UZ_ALPHA_ONE - 1);
    rp->alpha_ns = now;
    rp->t_count = rp->bc_count = 0;
    rp->bytes = 0;
    rp->inc_ns = now;
    trace_uzura_rp_rate(x->qpn, "cnp", old, rp->rc, rp->rt, rp->alpha);
}

/*
 * Before the requester sends a packet: true when the rate limiter holds
 * it (the QP waits for its pacing timer).  A limiter back at the maximum
 * rate is released.
 */
bool uzura_rp_hold(UzuraCore *core, UzuraQp *qp)
{
    UzuraXfer *x = qp->x;
    UzuraRp *rp = x->rp;
    int64_t now;

    if (!rp) {
        return false;
    }
    now = uzura_cc_now();
    uzura_rp_catch_up(core, qp, now);
    if (rp->rc >= uzura_rp_max(core) && rp->rt >= uzura_rp_max(core)) {
        trace_uzura_rp_release(x->qpn);
        uzura_rp_free(qp);
        return false;
    }
    if (rp->next_ns <= now) {
        return false;
    }
    x->req.rp_wait = true;
    timer_mod(rp->timer, rp->next_ns);
    return true;
}

/* After the requester sent a packet of @bytes on the wire. */
void uzura_rp_sent(UzuraCore *core, UzuraQp *qp, uint32_t bytes)
{
    UzuraRp *rp = qp->x->rp;
    uint32_t reset = MAX(core->rdma.cc.rpg_byte_reset, 1);
    int64_t now;
    uint64_t old;

    if (!rp) {
        return;
    }
    now = uzura_cc_now();
    /* The wire time of the packet at Rc; an idle QP saves no credit. */
    rp->next_ns = MAX(rp->next_ns, now) +
                  (int64_t)((uint64_t)bytes * 8 * 1000000 / MAX(rp->rc, 1));
    rp->bytes += bytes;
    if (rp->bytes >= reset) {
        old = rp->rc;
        while (rp->bytes >= reset) {
            rp->bytes -= reset;
            rp->bc_count++;
            uzura_rp_increase(core, rp);
        }
        trace_uzura_rp_rate(qp->x->qpn, "bytes", old, rp->rc, rp->rt,
                            rp->alpha);
    }
}

/* ---- the knobs ---- */

typedef struct UzuraCcKnob {
    const char *name;
    size_t offset;
    uint32_t def, min, max;
} UzuraCcKnob;

#define UZ_KNOB(n, d, lo, hi) \
    { #n, offsetof(UzuraCcParams, n), d, lo, hi }

/*
 * mlx5's names and ConnectX's defaults (ConnectX-4 and later), in its
 * units: microseconds, bytes, Mb/s, percent, 1/1024.
 */
static const UzuraCcKnob uzura_cc_knobs[] = {
    UZ_KNOB(min_time_between_cnps, 4, 0, 1000000),
    UZ_KNOB(cnp_dscp, 48, 0, 63),
    UZ_KNOB(rpg_time_reset, 300, 1, 1000000),
    UZ_KNOB(rpg_byte_reset, 32767, 1, UZ_RP_BYTES_MAX),
    UZ_KNOB(rpg_threshold, 1, 1, 31),
    UZ_KNOB(rpg_max_rate, 0, 0, 400000),
    UZ_KNOB(rpg_ai_rate, 5, 1, 400000),
    UZ_KNOB(rpg_hai_rate, 50, 1, 400000),
    UZ_KNOB(rpg_gd, 11, 1, 15),
    UZ_KNOB(rpg_min_dec_fac, 50, 1, 100),
    UZ_KNOB(rpg_min_rate, 1, 1, 400000),
    UZ_KNOB(rate_to_set_on_first_cnp, 0, 0, 400000),
    UZ_KNOB(rate_reduce_monitor_period, 4, 0, 1000000),
    UZ_KNOB(dce_tcp_g, 1019, 0, 1023),
    UZ_KNOB(dce_tcp_rtt, 1, 1, 131071),
    UZ_KNOB(initial_alpha_value, 1023, 0, 1023),
};

/* A knob's property; opaque is its field in core->rdma.cc. */
static void uzura_cc_get(Object *obj, Visitor *v, const char *name,
                         void *opaque, Error **errp)
{
    visit_type_uint32(v, name, opaque, errp);
}

static void uzura_cc_set(Object *obj, Visitor *v, const char *name,
                         void *opaque, Error **errp)
{
    const UzuraCcKnob *k = NULL;
    uint32_t val;
    size_t i;

    for (i = 0; i < ARRAY_SIZE(uzura_cc_knobs) && !k; i++) {
        if (!strcmp(uzura_cc_knobs[i].name, name)) {
            k = &uzura_cc_knobs[i];
        }
    }
    if (!visit_type_uint32(v, name, &val, errp)) {
        return;
    }
    if (val < k->min || val > k->max) {
        error_setg(errp, "%s takes %u..%u", name, k->min, k->max);
        return;
    }
    *(uint32_t *)opaque = val;
}

/* roce_np_enable and roce_rp_enable; opaque is the core. */
static void uzura_cc_get_enable(Object *obj, Visitor *v, const char *name,
                                void *opaque, Error **errp)
{
    UzuraCore *core = opaque;
    bool on = strstr(name, "_rp_") ? core->rdma.cc.rp_enable :
                                     core->rdma.cc.np_enable;

    visit_type_bool(v, name, &on, errp);
}

/* roce_rp_enable off: every rate limiter goes (rp_cnp_ignored counts). */
static void uzura_cc_set_enable(Object *obj, Visitor *v, const char *name,
                                void *opaque, Error **errp)
{
    UzuraCore *core = opaque;
    uint32_t i;
    bool on;

    if (!visit_type_bool(v, name, &on, errp)) {
        return;
    }
    if (!strstr(name, "_rp_")) {
        core->rdma.cc.np_enable = on;
        return;
    }
    core->rdma.cc.rp_enable = on;
    if (on || !core->rdma.qp) {
        return;
    }
    for (i = 0; i < core->rdma.lim.max_qp; i++) {
        UzuraQp *qp = &core->rdma.qp[i];

        if (qp->valid && qp->x) {
            uzura_rp_free(qp);
        }
    }
    uzura_work_schedule(core);
}

/* The knobs as properties of the device, with their defaults. */
void uzura_cc_instance_init(Object *obj, UzuraCore *core)
{
    UzuraCcParams *p = &core->rdma.cc;
    size_t i;

    p->np_enable = p->rp_enable = true;
    object_property_add(obj, "roce_np_enable", "bool", uzura_cc_get_enable,
                        uzura_cc_set_enable, NULL, core);
    object_property_add(obj, "roce_rp_enable", "bool", uzura_cc_get_enable,
                        uzura_cc_set_enable, NULL, core);
    for (i = 0; i < ARRAY_SIZE(uzura_cc_knobs); i++) {
        const UzuraCcKnob *k = &uzura_cc_knobs[i];
        uint32_t *field = (uint32_t *)((uint8_t *)p + k->offset);

        *field = k->def;
        object_property_add(obj, k->name, "uint32", uzura_cc_get,
                            uzura_cc_set, NULL, field);
    }
}
