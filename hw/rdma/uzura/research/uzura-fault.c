/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uzura RDMA NIC, research layer: the fault injector.
 *
 * It sits between the port (uzura-link.c) and the wire.  While it is
 * active, every frame the NIC sends passes uzura_fault_tx(); every RoCE
 * frame it receives from the link passes uzura_fault_rx() while receive
 * rules are loaded.  Rules (the
 * fault-rules property, uzura-fault-rule.c) aim a fault at chosen frames
 * in either direction; frames no rule acts on meet the random faults of
 * the fault-* probabilities on transmit.  Random decisions come from one
 * seeded generator, so the same seed and the same traffic give the same
 * faults.  Frames held back or delayed wait in queues released by a
 * virtual-clock timer, so qtests control the time.  Link flaps take the
 * link down and up again on the same clock.
 */
#include "qemu/osdep.h"
#include "qemu/main-loop.h"
#include "qemu/timer.h"
#include "net/net.h"
#include "net/checksum.h"
#include "../uzura-core.h"
#include "trace.h"

/* How long a reordered frame waits for later ones to overtake it. */
#define UZ_FAULT_REORDER_NS     (50 * SCALE_US)

typedef struct UzuraFaultFrame {
    QTAILQ_ENTRY(UzuraFaultFrame) next;
    int64_t due;                /* virtual clock, ns */
    int copies;                 /* more than 1 when duplicated */
    uint32_t behind;            /* held: frames still to overtake it */
    size_t len;
    uint8_t data[];
} UzuraFaultFrame;

/* xorshift64*: small, fast, and the same everywhere for a given seed. */
static uint64_t uzura_fault_rand(UzuraFault *f)
{
    uint64_t x = f->rng;

    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    f->rng = x;
    return x * 0x2545f4914f6cdd1dull;
}

/* True with probability @p (0..1). */
bool uzura_fault_roll(UzuraFault *f, double p)
{
    if (p <= 0) {
        return false;
    }
    /* 53 random bits, uniform in [0, 1) */
    return (uzura_fault_rand(f) >> 11) / (double)(1ull << 53) < p;
}

void uzura_fault_set_seed(UzuraFault *f, uint64_t seed)
{
    f->seed = seed;
    /* The generator's state must not be 0. */
    f->rng = seed ^ 0x9e3779b97f4a7c15ull;
    if (!f->rng) {
        f->rng = 1;
    }
}

/* Whether transmitted frames go through the injector (uzura_fault_tx). */
bool uzura_fault_tx_active(UzuraFault *f)
{
    return f->drop > 0 || f->dup > 0 || f->reorder > 0 || f->corrupt > 0 ||
           f->delay_us || f->nrules > f->nrules_rx || f->pipe[0].frames ||
           !QTAILQ_EMPTY(&f->queue);
}

static int64_t uzura_now(void)
{
    return qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
}

/*
 * The timer fires for the earliest deadline of any waiting frame.  One
 * already due goes to the bottom half, the next turn of the main loop:
 * QEMU runs a timer armed in the past again in the same pass over the
 * timers, and so would release without end in one turn.
 */
static void uzura_fault_arm(UzuraCore *core)
{
    UzuraFault *f = &core->fault;
    UzuraFaultFrame *fr;
    int64_t when = INT64_MAX;
    int d;

    if (f->releasing) {
        return;                 /* the release arms once, when done */
    }
    fr = QTAILQ_FIRST(&f->queue);
    if (fr) {
        when = fr->due;
    }
    for (d = 0; d < 2; d++) {
        fr = QTAILQ_FIRST(&f->pipe[d].timed);
        if (fr) {
            when = MIN(when, fr->due);
        }
        QTAILQ_FOREACH(fr, &f->pipe[d].held, next) {
            when = MIN(when, fr->due);
        }
    }
    if (when == INT64_MAX) {
        timer_del(f->timer);
    } else if (when <= uzura_now()) {
        timer_del(f->timer);
        qemu_bh_schedule(f->more);
    } else {
        timer_mod(f->timer, when);
    }
}

/*
 * What every frame the injector holds costs, and all of them together
 * may: a peer chooses the frames, so the bound is in bytes.
 */
static size_t uzura_fault_cost(size_t len)
{
    return sizeof(UzuraFaultFrame) + len;
}

static bool uzura_fault_affords(UzuraCore *core, size_t len)
{
    return core->fault.held_bytes + uzura_fault_cost(len) <=
           UZ_FAULT_HELD_BYTES_MAX;
}

static void uzura_fault_free(UzuraCore *core, UzuraFaultFrame *fr)
{
    if (fr) {
        core->fault.held_bytes -= uzura_fault_cost(fr->len);
        g_free(fr);
    }
}

static UzuraFaultFrame *uzura_fault_copy(UzuraCore *core, const uint8_t *buf,
                                         size_t len, int copies, int64_t due)
{
    UzuraFaultFrame *fr = g_malloc(sizeof(*fr) + len);

    core->fault.held_bytes += uzura_fault_cost(len);

    fr->due = due;
    fr->len = len;
    fr->copies = copies;
    fr->behind = 0;
    memcpy(fr->data, buf, len);
    return fr;
}

static void uzura_fault_wire(UzuraCore *core, const uint8_t *buf, size_t len,
                             int copies)
{
    while (copies--) {
        uzura_link_wire(core, buf, len);
    }
}

/*
 * Send @copies of a frame now, or after the delay.  The queue is a FIFO:
 * a frame never leaves before one queued earlier, even when the delay was
 * lowered in between.  A full queue drops the frame.
 */
static void uzura_fault_out(UzuraCore *core, UzuraFaultFrame *fr,
                            const uint8_t *buf, size_t len, int copies)
{
    UzuraFault *f = &core->fault;
    int64_t due = uzura_now() + (int64_t)f->delay_us * SCALE_US;
    UzuraFaultFrame *tail = QTAILQ_LAST(&f->queue);

    if (!f->delay_us && !tail) {
        uzura_fault_wire(core, fr ? fr->data : buf, len, copies);
        uzura_fault_free(core, fr);
        return;
    }
    if (f->queued >= UZ_FAULT_QUEUE_MAX ||
        (!fr && !uzura_fault_affords(core, len))) {
        core->counters.fault_drops++;
        trace_uzura_fault("queue full: drop", len);
        uzura_fault_free(core, fr);
        return;
    }
    if (f->delay_us) {
        core->counters.fault_delayed++;
    }
    if (!fr) {
        fr = uzura_fault_copy(core, buf, len, copies, 0);
    }
    fr->copies = copies;
    fr->due = tail ? MAX(due, tail->due) : due;
    QTAILQ_INSERT_TAIL(&f->queue, fr, next);
    f->queued++;
    uzura_fault_arm(core);
}

/* A received RoCE frame goes to the transport, unless the link went down. */
static void uzura_fault_deliver(UzuraCore *core, const uint8_t *buf,
                                size_t len, int copies)
{
    while (copies-- && uzura_core_link_up(core)) {
        uzura_core_receive_roce(core, buf, len);
    }
}

/* A frame leaves direction @rx of the injector: to the link or the QPs. */
static void uzura_fault_emit(UzuraCore *core, bool rx, UzuraFaultFrame *fr,
                             const uint8_t *buf, size_t len, int copies)
{
    if (rx) {
        uzura_fault_deliver(core, fr ? fr->data : buf, len, copies);
        uzura_fault_free(core, fr);
    } else {
        uzura_fault_out(core, fr, buf, len, copies);
    }
}

/*
 * Emit the frames of @out in order.  Lists are walked first and emitted
 * from after: a frame emitted may come straight back (a QP of this NIC,
 * a peer on the same hub) and its answer pass or free frames of the list
 * being walked.
 */
static void uzura_fault_emit_all(UzuraCore *core, bool rx,
                                 UzuraFaultList *out)
{
    UzuraFaultFrame *fr;

    while ((fr = QTAILQ_FIRST(out))) {
        QTAILQ_REMOVE(out, fr, next);
        uzura_fault_emit(core, rx, fr, NULL, fr->len, fr->copies);
    }
}

/* A frame went by: held frames it was the last to overtake follow it. */
static void uzura_fault_pass(UzuraCore *core, bool rx)
{
    UzuraFaultPipe *p = &core->fault.pipe[rx];
    UzuraFaultList out = QTAILQ_HEAD_INITIALIZER(out);
    UzuraFaultFrame *fr, *tmp;

    QTAILQ_FOREACH_SAFE(fr, &p->held, next, tmp) {
        if (--fr->behind) {
            continue;
        }
        QTAILQ_REMOVE(&p->held, fr, next);
        p->frames--;
        QTAILQ_INSERT_TAIL(&out, fr, next);
    }
    uzura_fault_emit_all(core, rx, &out);
}

/* Room for one more waiting frame in a direction, or a counted drop. */
static bool uzura_fault_room(UzuraCore *core, bool rx, size_t len)
{
    if (core->fault.pipe[rx].frames < UZ_FAULT_QUEUE_MAX &&
        uzura_fault_affords(core, len)) {
        return true;
    }
    core->counters.fault_drops++;
    trace_uzura_fault("queue full: drop", len);
    return false;
}

/* Hold a frame back until @k later frames went by, or the timeout. */
static void uzura_fault_hold(UzuraCore *core, bool rx, const uint8_t *buf,
                             size_t len, int copies, uint32_t k)
{
    UzuraFaultPipe *p = &core->fault.pipe[rx];
    UzuraFaultFrame *fr;

    if (!uzura_fault_room(core, rx, len)) {
        return;
    }
    fr = uzura_fault_copy(core, buf, len, copies,
                          uzura_now() + UZ_FAULT_REORDER_NS);
    fr->behind = k;
    QTAILQ_INSERT_TAIL(&p->held, fr, next);
    p->frames++;
    uzura_fault_arm(core);
}

/* Delay one frame; later frames may overtake it. */
static void uzura_fault_delay(UzuraCore *core, bool rx, const uint8_t *buf,
                              size_t len, uint32_t us)
{
    UzuraFaultPipe *p = &core->fault.pipe[rx];
    UzuraFaultFrame *fr, *at;

    if (!uzura_fault_room(core, rx, len)) {
        return;
    }
    fr = uzura_fault_copy(core, buf, len, 1,
                          uzura_now() + (int64_t)us * SCALE_US);
    /* After every frame due no later: equal delays keep their order. */
    QTAILQ_FOREACH_REVERSE(at, &p->timed, next) {
        if (at->due <= fr->due) {
            break;
        }
    }
    if (at) {
        QTAILQ_INSERT_AFTER(&p->timed, at, fr, next);
    } else {
        QTAILQ_INSERT_HEAD(&p->timed, fr, next);
    }
    p->frames++;
    uzura_fault_arm(core);
}

/* A frame goes on, @copies times; frames held behind it may follow. */
static void uzura_fault_forward(UzuraCore *core, bool rx, const uint8_t *buf,
                                size_t len, int copies)
{
    uzura_fault_emit(core, rx, NULL, buf, len, copies);
    uzura_fault_pass(core, rx);
}

/*
 * Mark an ECN-capable frame CE, as a switch whose queue fills does: the
 * IPv4 checksum is made again; the ICRC leaves the TOS byte out.  A
 * frame that is not ECN-capable goes on as it is.
 */
static void uzura_fault_mark_ce(uint8_t *buf, size_t len)
{
    uint8_t *ip = buf + UZ_ROCE_IP_OFF;
    size_t ihl;

    if (len < UZ_ROCE_IP_OFF + 20 || !(ip[1] & UZ_IP_ECN_MASK)) {
        return;
    }
    ihl = (ip[0] & 0x0f) * 4;
    if (ihl < 20 || len < UZ_ROCE_IP_OFF + ihl) {
        return;
    }
    ip[1] |= UZ_IP_ECN_CE;
    stw_be_p(ip + 10, 0);
    stw_be_p(ip + 10, net_checksum_finish(net_checksum_add(ihl, ip)));
}

/* Do what rule @r says to a frame; the injector owns the frame after. */
static void uzura_fault_apply(UzuraCore *core, bool rx,
                              const UzuraFaultRule *r, const uint8_t *buf,
                              size_t len)
{
    g_autofree uint8_t *copy = NULL;
    UzuraCounters *c = &core->counters;

    trace_uzura_fault_rule(r - core->fault.rules + 1, rx, r->act, len);
    switch (r->act) {
    case UZ_FA_DROP:
        c->fault_drops++;
        break;
    case UZ_FA_CORRUPT:
        copy = g_memdup2(buf, len);
        uzura_fault_corrupt(copy, len, r->field,
                            uzura_fault_rand(&core->fault));
        c->fault_corrupts++;
        uzura_fault_forward(core, rx, copy, len, 1);
        break;
    case UZ_FA_DUP:
        c->fault_dups++;
        uzura_fault_forward(core, rx, buf, len, 1 + r->arg);
        break;
    case UZ_FA_DELAY:
        c->fault_delayed++;
        uzura_fault_delay(core, rx, buf, len, r->arg);
        break;
    case UZ_FA_REORDER:
        c->fault_reorders++;
        uzura_fault_hold(core, rx, buf, len, 1, r->arg);
        break;
    case UZ_FA_CE:
        copy = g_memdup2(buf, len);
        uzura_fault_mark_ce(copy, len);
        uzura_fault_forward(core, rx, copy, len, 1);
        break;
    }
}

/*
 * Release what is due in one direction: held frames, then delayed ones,
 * *budget of them at most.
 */
static void uzura_fault_release(UzuraCore *core, bool rx, int64_t now,
                                int *budget)
{
    UzuraFaultPipe *p = &core->fault.pipe[rx];
    UzuraFaultList out = QTAILQ_HEAD_INITIALIZER(out);
    UzuraFaultFrame *fr, *tmp;

    QTAILQ_FOREACH_SAFE(fr, &p->held, next, tmp) {
        if (!*budget) {
            break;
        }
        if (fr->due <= now) {
            --*budget;
            QTAILQ_REMOVE(&p->held, fr, next);
            p->frames--;
            trace_uzura_fault_release(fr->len);
            QTAILQ_INSERT_TAIL(&out, fr, next);
        }
    }
    uzura_fault_emit_all(core, rx, &out);
    while (*budget && (fr = QTAILQ_FIRST(&p->timed)) && fr->due <= now) {
        --*budget;
        QTAILQ_REMOVE(&p->timed, fr, next);
        p->frames--;
        trace_uzura_fault_release(fr->len);
        /* A delayed frame overtakes held ones like any other. */
        uzura_fault_emit(core, rx, fr, NULL, fr->len, 1);
        uzura_fault_pass(core, rx);
    }
}

/*
 * Frames whose time has come go on, in order: UZ_FAULT_RELEASE_BUDGET in
 * this turn of the main loop, the rest in the next (a bottom half), so
 * that thousands due at once (a delay of the whole queue, a clock that
 * jumped) do not stall it.
 */
static void uzura_fault_timer(void *opaque)
{
    UzuraCore *core = opaque;
    UzuraFault *f = &core->fault;
    int64_t now = uzura_now();
    UzuraFaultFrame *fr;
    int budget = UZ_FAULT_RELEASE_BUDGET;
    bool g = uzura_enter(core);

    /* Not once per frame sent: arming walks every frame held back. */
    f->releasing = true;
    uzura_fault_release(core, false, now, &budget);
    uzura_fault_release(core, true, now, &budget);
    while (budget && (fr = QTAILQ_FIRST(&f->queue)) && fr->due <= now) {
        budget--;
        QTAILQ_REMOVE(&f->queue, fr, next);
        f->queued--;
        trace_uzura_fault_release(fr->len);
        /* A link that went down meanwhile loses what was in flight. */
        if (uzura_core_link_up(core)) {
            uzura_fault_wire(core, fr->data, fr->len, fr->copies);
        }
        uzura_fault_free(core, fr);
    }
    f->releasing = false;
    uzura_fault_arm(core);
    uzura_leave(core, g);
}

/*
 * A frame the port sends (uzura_link_send), while uzura_fault_tx_active:
 * the rules and random faults act on it, and it goes on to the wire now,
 * later or not at all.
 */
void uzura_fault_tx(UzuraCore *core, const uint8_t *buf, size_t len)
{
    UzuraFault *f = &core->fault;
    const UzuraFaultRule *r;
    g_autofree uint8_t *copy = NULL;
    int copies = 1;

    /* Sorting a frame for the rules costs a parse: only with tx rules. */
    r = f->nrules > f->nrules_rx ? uzura_fault_rules_pick(f, false, buf, len)
                                 : NULL;
    if (r) {
        uzura_fault_apply(core, false, r, buf, len);
        return;
    }
    /* The random decisions of spec 7.5.1, always in this order. */
    if (uzura_fault_roll(f, f->drop)) {
        core->counters.fault_drops++;
        trace_uzura_fault("drop", len);
        return;
    }
    if (uzura_fault_roll(f, f->corrupt)) {
        copy = g_memdup2(buf, len);
        uzura_fault_corrupt(copy, len, UZ_FF_BIT, uzura_fault_rand(f));
        buf = copy;
        core->counters.fault_corrupts++;
        trace_uzura_fault("corrupt", len);
    }
    if (uzura_fault_roll(f, f->dup)) {
        core->counters.fault_dups++;
        trace_uzura_fault("duplicate", len);
        copies = 2;
    }
    if (QTAILQ_EMPTY(&f->pipe[0].held) && uzura_fault_roll(f, f->reorder)) {
        /* Held back (with its duplicate) until the next frame passes it. */
        core->counters.fault_reorders++;
        trace_uzura_fault("reorder", len);
        uzura_fault_hold(core, false, buf, len, copies, 1);
        return;
    }
    uzura_fault_forward(core, false, buf, len, copies);
}

/*
 * A RoCE frame for this NIC from the link: false when no receive rule is
 * loaded and nothing waits, so the caller hands it to the transport.
 */
bool uzura_fault_rx(UzuraCore *core, const uint8_t *buf, size_t len)
{
    UzuraFault *f = &core->fault;
    const UzuraFaultRule *r;

    if (!f->nrules_rx && !f->pipe[1].frames) {
        return false;
    }
    r = uzura_fault_rules_pick(f, true, buf, len);
    if (r) {
        uzura_fault_apply(core, true, r, buf, len);
    } else {
        uzura_fault_forward(core, true, buf, len, 1);
    }
    return true;
}

/* Every frame held back goes on, from the next turn of the main loop. */
static void uzura_fault_release_held(UzuraCore *core)
{
    UzuraFaultFrame *fr;
    int64_t now = uzura_now();
    int d;

    /* Due now: they go from the next turn on, 64 a turn. */
    for (d = 0; d < 2; d++) {
        QTAILQ_FOREACH(fr, &core->fault.pipe[d].held, next) {
            fr->due = MIN(fr->due, now);
        }
    }
    uzura_fault_arm(core);
}

/*
 * A new seed starts a new sequence: frames still held back for
 * reordering (which would skip the next reorder draw) go out now.
 */
void uzura_fault_reseed(UzuraCore *core, uint64_t seed)
{
    uzura_fault_set_seed(&core->fault, seed);
    uzura_fault_release_held(core);
}

/*
 * Load new rules, replacing the old ones and their counts; on an error
 * nothing changes.  Frames the old rules hold back still go on in time.
 */
bool uzura_fault_set_rules(UzuraCore *core, const char *text, char **why)
{
    UzuraFaultRule *rules;
    uint32_t n = 0;

    rules = uzura_fault_rules_parse(text, &n, why);
    if (*why) {
        return false;
    }
    uzura_fault_take_rules(core, rules, n);
    return true;
}

/* @rules, parsed, replace the old ones; the fault state owns them. */
void uzura_fault_take_rules(UzuraCore *core, UzuraFaultRule *rules,
                            uint32_t n)
{
    UzuraFault *f = &core->fault;
    uint32_t i;

    g_free(f->rules);
    f->rules = rules;
    f->nrules = n;
    f->nrules_rx = 0;
    for (i = 0; i < n; i++) {
        f->nrules_rx += rules[i].rx;
    }
}

char *uzura_fault_get_rules(UzuraCore *core)
{
    return uzura_fault_rules_print(core->fault.rules, core->fault.nrules,
                                   true);
}

static void uzura_fault_flap_link(UzuraCore *core, bool down)
{
    if (core->flap_down != down) {
        core->flap_down = down;
        trace_uzura_fault_flap(down);
        uzura_core_set_link(core, core->nc_link_up, core->link_prop);
    }
}

/* A flap's next change: down at flap_next, then up after flap_down_us. */
static void uzura_fault_flap_timer(void *opaque)
{
    UzuraCore *core = opaque;
    UzuraFault *f = &core->fault;
    bool g = uzura_enter(core);
    bool down = !core->flap_down;

    if (down) {
        f->flap_next += (int64_t)f->flap_down_us * SCALE_US;
        timer_mod(f->flap_timer, f->flap_next);
    } else if (f->flap_period_us) {
        f->flap_next += (int64_t)(f->flap_period_us - f->flap_down_us) *
                        SCALE_US;
        timer_mod(f->flap_timer, f->flap_next);
    }
    uzura_fault_flap_link(core, down);
    uzura_leave(core, g);
}

/*
 * Start flapping the link: down now for @down_us, again every @period_us
 * (0: once).  @down_us 0 stops a flap and brings the link back.
 */
void uzura_fault_set_flap(UzuraCore *core, uint32_t down_us,
                          uint32_t period_us)
{
    UzuraFault *f = &core->fault;

    f->flap_down_us = down_us;
    f->flap_period_us = period_us;
    timer_del(f->flap_timer);
    if (!down_us) {
        uzura_fault_flap_link(core, false);
        return;
    }
    /* The timer takes it down at once, in the main loop's next turn. */
    core->flap_down = false;
    f->flap_next = uzura_now();
    timer_mod(f->flap_timer, f->flap_next);
}

void uzura_fault_init(UzuraCore *core)
{
    MemReentrancyGuard *guard = &DEVICE(core->owner)->mem_reentrancy_guard;
    int d;

    QTAILQ_INIT(&core->fault.queue);
    for (d = 0; d < 2; d++) {
        QTAILQ_INIT(&core->fault.pipe[d].timed);
        QTAILQ_INIT(&core->fault.pipe[d].held);
    }
    core->fault.timer = timer_new_ns(QEMU_CLOCK_VIRTUAL, uzura_fault_timer,
                                     core);
    core->fault.more = qemu_bh_new_guarded(uzura_fault_timer, core, guard);
    core->fault.flap_timer = timer_new_ns(QEMU_CLOCK_VIRTUAL,
                                          uzura_fault_flap_timer, core);
}

static void uzura_fault_free_list(UzuraCore *core, UzuraFaultList *list)
{
    UzuraFaultFrame *fr;

    while ((fr = QTAILQ_FIRST(list))) {
        QTAILQ_REMOVE(list, fr, next);
        uzura_fault_free(core, fr);
    }
}

/* Frames in flight are lost: a reset or a cable pulled. */
void uzura_fault_flush(UzuraCore *core)
{
    UzuraFault *f = &core->fault;
    int d;

    uzura_fault_free_list(core, &f->queue);
    f->queued = 0;
    for (d = 0; d < 2; d++) {
        uzura_fault_free_list(core, &f->pipe[d].timed);
        uzura_fault_free_list(core, &f->pipe[d].held);
        f->pipe[d].frames = 0;
    }
    if (f->timer) {
        timer_del(f->timer);
    }
    if (f->more) {
        qemu_bh_cancel(f->more);
    }
}

void uzura_fault_uninit(UzuraCore *core)
{
    uzura_fault_flush(core);
    timer_free(core->fault.timer);
    core->fault.timer = NULL;
    qemu_bh_delete(core->fault.more);
    core->fault.more = NULL;
    timer_free(core->fault.flap_timer);
    core->fault.flap_timer = NULL;
    g_free(core->fault.rules);
    core->fault.rules = NULL;
    core->fault.nrules = core->fault.nrules_rx = 0;
}
