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
           f->delay_us || !QTAILQ_EMPTY(&f->queue);
}

static void uzura_fault_arm(UzuraCore *core)
{
    UzuraFaultFrame *fr = QTAILQ_FIRST(&core->fault.queue);

    if (fr) {
        timer_mod(core->fault.timer, fr->due);
    } else {
        timer_del(core->fault.timer);
    }
}

/*
 * Queue a copy of the frame for @due.  The queue stays sorted by due time
 * (stable), so frames with the same delay keep their order.
 */
static void uzura_fault_enqueue(UzuraCore *core, const uint8_t *buf,
                                size_t len, int64_t due)
{
    UzuraFaultFrame *fr = g_malloc(sizeof(*fr) + len), *it;

    fr->due = due;
    fr->len = len;
    memcpy(fr->data, buf, len);
    QTAILQ_FOREACH_REVERSE(it, &core->fault.queue, next) {
        if (it->due <= due) {
            QTAILQ_INSERT_AFTER(&core->fault.queue, it, fr, next);
            goto out;
        }
    }
    QTAILQ_INSERT_HEAD(&core->fault.queue, fr, next);
out:
    uzura_fault_arm(core);
}

static void uzura_fault_wire(UzuraCore *core, const uint8_t *buf, size_t len)
{
    qemu_send_packet(qemu_get_queue(core->owner_nic), buf, len);
}

/* Frames whose time has come go on the wire, in queue order. */
void uzura_fault_timer(void *opaque)
{
    UzuraCore *core = opaque;
    int64_t now = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
    UzuraFaultFrame *fr;

    while ((fr = QTAILQ_FIRST(&core->fault.queue)) && fr->due <= now) {
        QTAILQ_REMOVE(&core->fault.queue, fr, next);
        if (fr == core->fault.held) {
            core->fault.held = NULL;
        }
        /* A link that went down meanwhile loses what was in flight. */
        if (uzura_core_link_up(core)) {
            trace_uzura_fault_release(fr->len);
            uzura_fault_wire(core, fr->data, fr->len);
        }
        g_free(fr);
    }
    uzura_fault_arm(core);
}

/* One copy of a frame past the drop and corrupt decisions. */
static void uzura_fault_emit(UzuraCore *core, const uint8_t *buf, size_t len,
                             bool reorder)
{
    UzuraFault *f = &core->fault;
    int64_t now = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
    int64_t due = now + (int64_t)f->delay_us * SCALE_US;

    if (reorder) {
        /*
         * Held back: the next frame sent passes it.  It goes out right
         * after that frame, or on its own when none follows in time.
         */
        core->counters.fault_reorders++;
        trace_uzura_fault("reorder", len);
        uzura_fault_enqueue(core, buf, len, due + UZ_FAULT_REORDER_NS);
        f->held = QTAILQ_LAST(&core->fault.queue);
        return;
    }
    if (due > now || !QTAILQ_EMPTY(&f->queue)) {
        if (f->delay_us) {
            core->counters.fault_delayed++;
        }
        uzura_fault_enqueue(core, buf, len, due);
    } else {
        uzura_fault_wire(core, buf, len);
    }
    if (f->held) {
        /* The held frame follows the one that overtook it. */
        UzuraFaultFrame *h = f->held;

        f->held = NULL;
        QTAILQ_REMOVE(&f->queue, h, next);
        h->due = due;
        QTAILQ_INSERT_TAIL(&f->queue, h, next);
        if (due <= now) {
            uzura_fault_timer(core);
        } else {
            uzura_fault_arm(core);
        }
    }
}

/* Send a frame on the link, through the fault injector.  @buf is kept. */
void uzura_link_send(UzuraCore *core, uint8_t *buf, size_t len)
{
    UzuraFault *f = &core->fault;
    g_autofree uint8_t *copy = NULL;
    bool dup, reorder;

    if (!uzura_fault_active(f)) {
        uzura_fault_wire(core, buf, len);
        return;
    }
    /* One draw per kind of fault and frame, always in this order. */
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
    dup = uzura_fault_roll(f, f->dup);
    reorder = !f->held && uzura_fault_roll(f, f->reorder);
    uzura_fault_emit(core, buf, len, reorder);
    if (dup) {
        core->counters.fault_dups++;
        trace_uzura_fault("duplicate", len);
        uzura_fault_emit(core, buf, len, false);
    }
}

/*
 * A new seed starts a new sequence: a frame still held back for
 * reordering (which would skip the next reorder draw) goes out now.
 */
void uzura_fault_reseed(UzuraCore *core, uint64_t seed)
{
    UzuraFaultFrame *h = core->fault.held;

    uzura_fault_set_seed(&core->fault, seed);
    if (h) {
        core->fault.held = NULL;
        QTAILQ_REMOVE(&core->fault.queue, h, next);
        if (uzura_core_link_up(core)) {
            uzura_fault_wire(core, h->data, h->len);
        }
        g_free(h);
        uzura_fault_arm(core);
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
