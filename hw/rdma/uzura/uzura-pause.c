/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uzura RDMA NIC: link-level flow control received (spec 9.1.3), the
 * pause frames of IEEE 802.3x (PAUSE) and 802.1Qbb (PFC).
 *
 * The NIC sends every frame in one priority, pfc-prio.  A PAUSE frame,
 * or a PFC frame whose class-enable vector names that priority, stops
 * the NIC's sending for the time it gives, in quanta of 512 bit times at
 * the link's speed; a time of 0 lets it go on at once, and a later frame
 * replaces the time left.  While paused the work loop sends nothing new
 * (no request, READ answer or Ethernet TX descriptor is taken) and the
 * frames the receive path makes meanwhile (ACKs, NAKs, CNPs) wait in a
 * hold queue, bounded in frames and bytes; past that they are dropped
 * and counted, as the transport recovers from a lost ACK.  MAC control
 * frames never reach the Ethernet function, as a MAC consumes them.
 *
 * A pause lasts UZ_PAUSE_STORM_NS in a row at most: then, as ConnectX's
 * PFC storm prevention does, the NIC stops honouring pause frames for as
 * long again, so that a peer that never stops pausing cannot hold the
 * QPs' posted work forever.
 *
 * Nothing here sends pause frames: the Linux bridge of the fabric sends
 * none, and a NIC that does not drop needs none.
 */
#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/timer.h"
#include "qemu/units.h"
#include "uzura-core.h"
#include "trace.h"

#define UZ_ETHERTYPE_MAC_CTRL   0x8808
#define UZ_MAC_CTRL_PAUSE       0x0001  /* 802.3x: the whole link */
#define UZ_MAC_CTRL_PFC         0x0101  /* 802.1Qbb: per priority */
#define UZ_PAUSE_BITS_PER_QUANTUM 512
#define UZ_PAUSE_STORM_NS       (100 * SCALE_MS)

/* Frames the receive path makes while paused, held at most. */
#define UZ_PAUSE_HOLD_FRAMES    256
#define UZ_PAUSE_HOLD_BYTES     (1 * MiB)

typedef struct UzuraPauseHeld {
    QSIMPLEQ_ENTRY(UzuraPauseHeld) next;
    size_t len;
    uint8_t data[];
} UzuraPauseHeld;

static const uint8_t uzura_pause_group[6] = {
    0x01, 0x80, 0xc2, 0x00, 0x00, 0x01
};

static int64_t uzura_pause_now(void)
{
    return qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
}

bool uzura_pause_active(UzuraCore *core)
{
    return core->pause.paused;
}

/* The NIC may send again: what was held goes first, then the queues. */
static void uzura_pause_end(UzuraCore *core, int64_t now)
{
    UzuraPause *p = &core->pause;
    UzuraPauseHeld *h;

    if (!p->paused) {
        return;
    }
    p->paused = false;
    timer_del(p->timer);
    core->counters.rx_pause_duration += (now - p->since) / SCALE_US;
    trace_uzura_pause_end(p->held_frames);
    while ((h = QSIMPLEQ_FIRST(&p->held))) {
        QSIMPLEQ_REMOVE_HEAD(&p->held, next);
        p->held_frames--;
        p->held_bytes -= h->len;
        if (uzura_core_link_up(core)) {
            uzura_link_send(core, h->data, h->len);
        } else {
            core->counters.roce_tx_dropped++;
        }
        g_free(h);
    }
    uzura_work_schedule(core);
}

static void uzura_pause_timer(void *opaque)
{
    UzuraCore *core = opaque;
    bool g = uzura_enter(core);

    uzura_pause_end(core, uzura_pause_now());
    uzura_leave(core, g);
}

/* Pause for @quanta, from now; 0 ends a pause. */
static void uzura_pause_for(UzuraCore *core, uint16_t quanta)
{
    UzuraPause *p = &core->pause;
    int64_t now = uzura_pause_now();
    int64_t ns = (int64_t)quanta * UZ_PAUSE_BITS_PER_QUANTUM * 1000 /
                 MAX(core->link_speed, 1);

    trace_uzura_pause_rx(quanta, ns);
    if (!quanta) {
        uzura_pause_end(core, now);
        return;
    }
    if (now < p->storm_until) {
        return;                 /* a storm: not honoured for a while */
    }
    if (!p->paused) {
        p->paused = true;
        p->since = now;
        core->counters.rx_pause_transition++;
    }
    /* Paused too long in a row: go on, and deaf to pauses as long again. */
    if (now + ns - p->since > UZ_PAUSE_STORM_NS) {
        ns = MAX(p->since + UZ_PAUSE_STORM_NS - now, 0);
        p->storm_until = p->since + 2 * UZ_PAUSE_STORM_NS;
        uzura_guest_error(trace_uzura_pause_storm(UZ_PAUSE_STORM_NS /
                                                  SCALE_MS),
                          "pause frames held the link %" PRId64 " ms in a "
                          "row: not honoured for as long",
                          (int64_t)(UZ_PAUSE_STORM_NS / SCALE_MS));
    }
    timer_mod(p->timer, now + ns);
}

/* A MAC control frame too short for its opcode's fields: dropped. */
static bool uzura_pause_short(UzuraCore *core, const char *why, size_t size)
{
    core->counters.rx_dropped++;
    uzura_guest_error(trace_uzura_pause_err(why, size),
                      "MAC control frame of %zu bytes dropped: %s", size, why);
    return true;
}

/*
 * A frame from the link: true when it is a MAC control frame (EtherType
 * 0x8808) to us or to the MAC control group, which the MAC takes.
 */
bool uzura_pause_receive(UzuraCore *core, const uint8_t *buf, size_t size)
{
    uint16_t opcode, vector, quanta;

    if (size < UZ_ETH_HDR_LEN || lduw_be_p(buf + 12) != UZ_ETHERTYPE_MAC_CTRL ||
        (memcmp(buf, uzura_pause_group, 6) && memcmp(buf, core->mac, 6))) {
        return false;
    }
    if (size < UZ_ETH_HDR_LEN + 4) {
        return uzura_pause_short(core, "shorter than an opcode and a time",
                                 size);
    }
    opcode = lduw_be_p(buf + UZ_ETH_HDR_LEN);
    if (opcode == UZ_MAC_CTRL_PAUSE) {
        quanta = lduw_be_p(buf + UZ_ETH_HDR_LEN + 2);
    } else if (opcode == UZ_MAC_CTRL_PFC) {
        /* Opcode, class-enable vector, a time for each of 8 priorities. */
        if (size < UZ_ETH_HDR_LEN + 4 + 16) {
            return uzura_pause_short(core, "a PFC frame shorter than its 8 "
                                     "times", size);
        }
        vector = lduw_be_p(buf + UZ_ETH_HDR_LEN + 2);
        quanta = lduw_be_p(buf + UZ_ETH_HDR_LEN + 4 + 2 * core->pause.prio);
        if (!(vector & BIT(core->pause.prio))) {
            /* Another priority's: nothing the NIC sends. */
            core->counters.rx_pause_ctrl_phy++;
            trace_uzura_pause_other_prio(vector, core->pause.prio);
            return true;
        }
    } else {
        core->counters.rx_dropped++;
        trace_uzura_pause_err("a MAC control opcode other than PAUSE and "
                              "PFC", size);
        return true;
    }
    core->counters.rx_pause_ctrl_phy++;
    if (core->pause.rx) {
        uzura_pause_for(core, quanta);
    }
    return true;
}

/*
 * Before a frame goes on the link: true when the NIC is paused and the
 * frame was kept (or dropped, the hold queue being full) for later.
 */
bool uzura_pause_hold(UzuraCore *core, const uint8_t *buf, size_t len)
{
    UzuraPause *p = &core->pause;
    UzuraPauseHeld *h;

    if (!p->paused) {
        return false;
    }
    if (p->held_frames >= UZ_PAUSE_HOLD_FRAMES ||
        p->held_bytes + len > UZ_PAUSE_HOLD_BYTES) {
        core->counters.roce_tx_dropped++;
        trace_uzura_pause_hold_full(len, p->held_frames);
        return true;
    }
    h = g_malloc(sizeof(*h) + len);
    h->len = len;
    memcpy(h->data, buf, len);
    QSIMPLEQ_INSERT_TAIL(&p->held, h, next);
    p->held_frames++;
    p->held_bytes += len;
    return true;
}

void uzura_pause_init(UzuraCore *core)
{
    core->pause.timer = timer_new_ns(QEMU_CLOCK_VIRTUAL, uzura_pause_timer,
                                     core);
    QSIMPLEQ_INIT(&core->pause.held);
}

/* Reset: the pause ends and what it held is dropped. */
void uzura_pause_reset(UzuraCore *core)
{
    UzuraPause *p = &core->pause;
    UzuraPauseHeld *h;

    timer_del(p->timer);
    p->paused = false;
    p->storm_until = 0;
    while ((h = QSIMPLEQ_FIRST(&p->held))) {
        QSIMPLEQ_REMOVE_HEAD(&p->held, next);
        g_free(h);
    }
    p->held_frames = 0;
    p->held_bytes = 0;
}

void uzura_pause_uninit(UzuraCore *core)
{
    uzura_pause_reset(core);
    timer_free(core->pause.timer);
}
