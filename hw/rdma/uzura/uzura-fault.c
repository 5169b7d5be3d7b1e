/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uzura RDMA NIC: the link's transmit side and its fault injector.
 *
 * Every frame the NIC sends, Ethernet or RoCE, leaves through
 * uzura_link_send().  With faults configured (the fault-* properties,
 * settable at run time with qom-set), each frame may be dropped,
 * corrupted, duplicated, held back behind the next frame, or delayed.
 * The decisions come from a seeded generator, so the same seed and the
 * same traffic give the same faults.  Frames held back or delayed wait in
 * a queue released by a virtual-clock timer, so qtests control the time.
 */
#include "qemu/osdep.h"
#include "qemu/timer.h"
#include "net/net.h"
#include "uzura-core.h"
#include "trace.h"

/* How long a reordered frame waits for a later one to overtake it. */
#define UZ_FAULT_REORDER_NS     (50 * SCALE_US)

typedef struct UzuraFaultFrame {
    QTAILQ_ENTRY(UzuraFaultFrame) next;
    int64_t due;                /* virtual clock, ns */
    int copies;                 /* 2 when duplicated */
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
static bool uzura_fault_roll(UzuraFault *f, double p)
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

static bool uzura_fault_active(UzuraFault *f)
{
    return f->drop > 0 || f->dup > 0 || f->reorder > 0 || f->corrupt > 0 ||
           f->delay_us || f->held || !QTAILQ_EMPTY(&f->queue);
}

/* The timer fires for the queue's head or the held frame's deadline. */
static void uzura_fault_arm(UzuraCore *core)
{
    UzuraFault *f = &core->fault;
    UzuraFaultFrame *fr = QTAILQ_FIRST(&f->queue);
    int64_t when = INT64_MAX;

    if (fr) {
        when = fr->due;
    }
    if (f->held) {
        when = MIN(when, f->held->due);
    }
    if (when == INT64_MAX) {
        timer_del(f->timer);
    } else {
        timer_mod(f->timer, when);
    }
}

static UzuraFaultFrame *uzura_fault_copy(const uint8_t *buf, size_t len,
                                         int copies, int64_t due)
{
    UzuraFaultFrame *fr = g_malloc(sizeof(*fr) + len);

    fr->due = due;
    fr->len = len;
    fr->copies = copies;
    memcpy(fr->data, buf, len);
    return fr;
}

static void uzura_fault_wire(UzuraCore *core, const uint8_t *buf, size_t len,
                             int copies)
{
    while (copies--) {
        qemu_send_packet(qemu_get_queue(core->owner_nic), buf, len);
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
    int64_t due = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL) +
                  (int64_t)f->delay_us * SCALE_US;
    UzuraFaultFrame *tail = QTAILQ_LAST(&f->queue);

    if (!f->delay_us && !tail) {
        uzura_fault_wire(core, fr ? fr->data : buf, len, copies);
        g_free(fr);
        return;
    }
    if (f->queued >= UZ_FAULT_QUEUE_MAX) {
        core->counters.fault_drops++;
        trace_uzura_fault("queue full: drop", len);
        g_free(fr);
        return;
    }
    if (f->delay_us) {
        core->counters.fault_delayed++;
    }
    if (!fr) {
        fr = uzura_fault_copy(buf, len, copies, 0);
    }
    fr->copies = copies;
    fr->due = tail ? MAX(due, tail->due) : due;
    QTAILQ_INSERT_TAIL(&f->queue, fr, next);
    f->queued++;
    uzura_fault_arm(core);
}

/* The held frame goes out: after the frame that overtook it, or alone. */
static void uzura_fault_release_held(UzuraCore *core)
{
    UzuraFaultFrame *h = core->fault.held;

    core->fault.held = NULL;
    uzura_fault_out(core, h, NULL, h->len, h->copies);
}

/* Frames whose time has come go on the wire, in queue order. */
static void uzura_fault_timer(void *opaque)
{
    UzuraCore *core = opaque;
    UzuraFault *f = &core->fault;
    int64_t now = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
    UzuraFaultFrame *fr;
    bool g = uzura_enter(core);

    if (f->held && f->held->due <= now) {
        uzura_fault_release_held(core);
    }
    while ((fr = QTAILQ_FIRST(&f->queue)) && fr->due <= now) {
        QTAILQ_REMOVE(&f->queue, fr, next);
        f->queued--;
        trace_uzura_fault_release(fr->len);
        /* A link that went down meanwhile loses what was in flight. */
        if (uzura_core_link_up(core)) {
            uzura_fault_wire(core, fr->data, fr->len, fr->copies);
        }
        g_free(fr);
    }
    uzura_fault_arm(core);
    uzura_leave(core, g);
}

/* Send a frame on the link, through the fault injector. */
void uzura_link_send(UzuraCore *core, const uint8_t *buf, size_t len)
{
    UzuraFault *f = &core->fault;
    g_autofree uint8_t *copy = NULL;
    int copies = 1;

    if (!uzura_fault_active(f)) {
        uzura_fault_wire(core, buf, len, 1);
        return;
    }
    /* The decisions of spec 7.5, always in this order. */
    if (uzura_fault_roll(f, f->drop)) {
        core->counters.fault_drops++;
        trace_uzura_fault("drop", len);
        return;
    }
    if (uzura_fault_roll(f, f->corrupt)) {
        uint64_t r = uzura_fault_rand(f);

        /* One bit anywhere in the frame. */
        copy = g_memdup2(buf, len);
        copy[(r >> 8) % len] ^= 1u << (r & 7);
        buf = copy;
        core->counters.fault_corrupts++;
        trace_uzura_fault("corrupt", len);
    }
    if (uzura_fault_roll(f, f->dup)) {
        core->counters.fault_dups++;
        trace_uzura_fault("duplicate", len);
        copies = 2;
    }
    if (!f->held && uzura_fault_roll(f, f->reorder)) {
        /* Held back (with its duplicate) until the next frame passes it. */
        core->counters.fault_reorders++;
        trace_uzura_fault("reorder", len);
        f->held = uzura_fault_copy(buf, len, copies,
                                   qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL) +
                                   UZ_FAULT_REORDER_NS);
        uzura_fault_arm(core);
        return;
    }
    uzura_fault_out(core, NULL, buf, len, copies);
    if (f->held) {
        uzura_fault_release_held(core);
    }
}

/*
 * A new seed starts a new sequence: a frame still held back for
 * reordering (which would skip the next reorder draw) goes out now.
 */
void uzura_fault_reseed(UzuraCore *core, uint64_t seed)
{
    uzura_fault_set_seed(&core->fault, seed);
    if (core->fault.held) {
        uzura_fault_release_held(core);
    }
}

void uzura_fault_init(UzuraCore *core)
{
    QTAILQ_INIT(&core->fault.queue);
    core->fault.timer = timer_new_ns(QEMU_CLOCK_VIRTUAL, uzura_fault_timer,
                                     core);
}

/* Frames in flight are lost: a reset or a cable pulled. */
void uzura_fault_flush(UzuraCore *core)
{
    UzuraFaultFrame *fr, *tmp;

    QTAILQ_FOREACH_SAFE(fr, &core->fault.queue, next, tmp) {
        QTAILQ_REMOVE(&core->fault.queue, fr, next);
        g_free(fr);
    }
    core->fault.queued = 0;
    g_free(core->fault.held);
    core->fault.held = NULL;
    if (core->fault.timer) {
        timer_del(core->fault.timer);
    }
}

void uzura_fault_uninit(UzuraCore *core)
{
    uzura_fault_flush(core);
    timer_free(core->fault.timer);
    core->fault.timer = NULL;
}
