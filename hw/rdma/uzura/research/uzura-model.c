/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uzura RDMA NIC: the timing model (spec 8.20).
 *
 * Off by default.  With model=on a frame's way through the NIC has the
 * stages of the UZURA paper's latency table, each with a duration in
 * QEMU's virtual clock:
 *
 *   doorbell -> host-to-NIC DMA (and translations) -> sending NIC ->
 *   link -> receiving NIC -> NIC-to-host DMA
 *
 * A doorbell starts the data path doorbell_ns after the guest rang it (a
 * timer instead of the bottom half).  A frame the data path builds then
 * waits for the host-to-NIC DMA engine and for the wire, both serial, so
 * they bound the bandwidth; a frame's effects on the receiving node (its
 * data, completions, an ACK) happen when its NIC-to-host DMA ends.
 *
 * Two QEMU processes have unrelated virtual clocks.  Unsynchronised, the
 * sender holds a frame until it arrives by its own clock and the receiver
 * adds its own stages by its clock: the model adds to what the host
 * spends.  With model-sync, which needs -icount, the two nodes advance in
 * quanta no longer than the shortest time a frame takes from leaving one
 * NIC to landing in the other node's memory.  At the end of each quantum
 * a node sends a mark and waits for the peer's, so every frame reaches the
 * receiver before the receiver's clock passes the frame's time, which a
 * stamp sent just before the frame carries.  Guest time is then the
 * guest's instructions plus the modeled stages, whatever the host's speed.
 */
#include "qemu/osdep.h"
#include "qemu/error-report.h"
#include "qemu/main-loop.h"
#include "qapi/error.h"
#include "hw/core/cpu.h"
#include "system/cpus.h"
#include "system/cpu-timers.h"
#include "system/runstate.h"
#include "net/net.h"
#include "../uzura-core.h"
#include "../uzura-transport.h"
#include "trace.h"

struct UzuraModelFrame {
    QSIMPLEQ_ENTRY(UzuraModelFrame) next;
    int64_t due;
    size_t len;
    uint8_t data[];
};

/*
 * Control frames between two modeling NICs: the IEEE's local experimental
 * EtherType, broadcast, a magic number, a kind and a time.
 */
#define UZ_MODEL_ETHERTYPE      0x88b5
#define UZ_MODEL_MAGIC          0x555a4d44u     /* "UZMD" */
#define UZ_MODEL_MSG_LEN        60
#define UZ_MODEL_OFF_MAGIC      14
#define UZ_MODEL_OFF_KIND       18
#define UZ_MODEL_OFF_TIME       22

enum {
    UZ_MODEL_HELLO = 1,         /* engaged; time: the quantum */
    UZ_MODEL_MARK,              /* passed this time (from the epoch) */
    UZ_MODEL_STAMP,             /* the next frame arrives at this time */
    UZ_MODEL_BYE,               /* no longer engaged */
};

#define UZ_MODEL_BTH_OFF        (14 + 20 + 8)   /* Ethernet, IPv4, UDP */

static int64_t uzura_model_now(void)
{
    return qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
}

static int64_t uzura_model_bytes_ns(uint32_t ps, size_t len)
{
    return (int64_t)len * ps / 1000;
}

static void uzura_model_ctl(UzuraCore *core, uint8_t kind, int64_t t)
{
    uint8_t f[UZ_MODEL_MSG_LEN] = { 0 };

    memset(f, 0xff, 6);
    memcpy(f + 6, core->mac, 6);
    stw_be_p(f + 12, UZ_MODEL_ETHERTYPE);
    stl_be_p(f + UZ_MODEL_OFF_MAGIC, UZ_MODEL_MAGIC);
    f[UZ_MODEL_OFF_KIND] = kind;
    stq_be_p(f + UZ_MODEL_OFF_TIME, t);
    qemu_send_packet(qemu_get_queue(core->owner_nic), f, sizeof(f));
}

static bool uzura_model_is_ctl(const uint8_t *buf, size_t len)
{
    return len >= UZ_MODEL_OFF_TIME + 8 &&
           lduw_be_p(buf + 12) == UZ_MODEL_ETHERTYPE &&
           ldl_be_p(buf + UZ_MODEL_OFF_MAGIC) == UZ_MODEL_MAGIC;
}

/* An ACK is built on the NIC; every other frame carries what it read. */
static bool uzura_model_reads_host(const uint8_t *buf, size_t len)
{
    uint8_t op;

    if (!uzura_roce_is_roce(buf, len) || len <= UZ_MODEL_BTH_OFF) {
        return true;
    }
    op = buf[UZ_MODEL_BTH_OFF];
    return op != UZ_BTH_OP_ACK && op != UZ_BTH_OP_ATOMIC_ACK;
}

/*
 * Whether @q takes a frame of @len bytes; else it is dropped, counted,
 * and charges no stage of the model (a flood of them delays nothing).
 */
static bool uzura_model_room(UzuraModel *m, UzuraModelQueue *q, size_t len)
{
    /* No NIC takes a frame over its largest MTU: holding one is waste. */
    if (len > UZ_ETH_FRAME_MAX(UZ_MAX_MTU)) {
        m->drops++;
        trace_uzura_model_drop(len, "frame too long");
        return false;
    }
    if (q->frames >= UZ_MODEL_QUEUE_MAX ||
        q->bytes + len > UZ_MODEL_QUEUE_BYTES_MAX) {
        m->drops++;
        trace_uzura_model_drop(len, "queue full");
        return false;
    }
    return true;
}

/* Hold a frame that uzura_model_room() made room for. */
static void uzura_model_enqueue(UzuraModelQueue *q, const uint8_t *buf,
                                size_t len, int64_t due)
{
    UzuraModelFrame *fr;

    fr = g_malloc(sizeof(*fr) + len);
    fr->due = due;
    fr->len = len;
    memcpy(fr->data, buf, len);
    QSIMPLEQ_INSERT_TAIL(&q->head, fr, next);
    q->frames++;
    q->bytes += len;
}

static void uzura_model_arm(QEMUTimer *t, UzuraModelQueue *q)
{
    UzuraModelFrame *fr = QSIMPLEQ_FIRST(&q->head);

    if (fr) {
        timer_mod(t, fr->due);
    } else {
        timer_del(t);
    }
}

/* The queue's first frame if its time has come, taken off the queue. */
static UzuraModelFrame *uzura_model_due(UzuraModelQueue *q, int64_t now)
{
    UzuraModelFrame *fr = QSIMPLEQ_FIRST(&q->head);

    if (!fr || fr->due > now) {
        return NULL;
    }
    QSIMPLEQ_REMOVE_HEAD(&q->head, next);
    q->frames--;
    q->bytes -= fr->len;
    return fr;
}

static void uzura_model_free_queue(UzuraModelQueue *q)
{
    UzuraModelFrame *fr;

    while ((fr = uzura_model_due(q, INT64_MAX))) {
        g_free(fr);
    }
}

/*
 * A frame for the link: it waits for the DMA engine (frames that carry
 * host data) and the wire, then takes link_ns to the peer's MAC.  The
 * translations the data path made since the last frame delay this one.
 */
void uzura_model_send(UzuraCore *core, const uint8_t *buf, size_t len)
{
    UzuraModel *m = &core->model;
    UzuraModelParams *p = &m->p;
    UzuraCounters *c = &core->counters;
    int64_t now = uzura_model_now();
    int64_t ready, depart, arrive;

    if (!m->engaged && !uzura_model_room(m, &m->txq, len)) {
        return;
    }
    ready = now + (c->xlat_hits - m->xlat_hits_seen) * p->xlat_hit_ns +
            (c->xlat_misses - m->xlat_misses_seen) * p->xlat_miss_ns;
    m->xlat_hits_seen = c->xlat_hits;
    m->xlat_misses_seen = c->xlat_misses;
    if (uzura_model_reads_host(buf, len)) {
        ready = MAX(ready, m->dma_rd_free) + p->dma_rd_ns +
                uzura_model_bytes_ns(p->dma_rd_ps, len);
        m->dma_rd_free = ready;
    }
    ready += p->nic_tx_ns;
    depart = MAX(ready, m->wire_free);
    m->wire_free = depart + (int64_t)len * 8000 / p->link_mbps;
    arrive = depart + p->link_ns;
    trace_uzura_model_tx(len, now, ready, depart, arrive);

    if (m->engaged) {
        /* The peer keeps it until then: our clocks are in step. */
        uzura_model_ctl(core, UZ_MODEL_STAMP, arrive - m->epoch);
        qemu_send_packet(qemu_get_queue(core->owner_nic), buf, len);
        return;
    }
    uzura_model_enqueue(&m->txq, buf, len, arrive);
    if (m->txq.frames == 1) {
        uzura_model_arm(m->tx_timer, &m->txq);
    }
}

/* Send the held frames whose time has come (all of them: INT64_MAX). */
static void uzura_model_send_due(UzuraCore *core, int64_t now)
{
    UzuraModel *m = &core->model;
    UzuraModelFrame *fr;

    while ((fr = uzura_model_due(&m->txq, now))) {
        qemu_send_packet(qemu_get_queue(core->owner_nic), fr->data, fr->len);
        g_free(fr);
    }
    uzura_model_arm(m->tx_timer, &m->txq);
}

static void uzura_model_tx_timer(void *opaque)
{
    uzura_model_send_due(opaque, uzura_model_now());
}

static void uzura_model_send_held(UzuraCore *core)
{
    uzura_model_send_due(core, INT64_MAX);
}

/* Frames on the cable are lost with it. */
void uzura_model_link_down(UzuraCore *core)
{
    UzuraModel *m = &core->model;

    if (m->tx_timer) {
        timer_del(m->tx_timer);
        uzura_model_free_queue(&m->txq);
    }
}

/* Frames whose data is in memory by now: the NIC receives them. */
static void uzura_model_rx_timer(void *opaque)
{
    UzuraCore *core = opaque;
    UzuraModel *m = &core->model;
    int64_t now = uzura_model_now();
    UzuraModelFrame *fr;
    bool g = uzura_enter(core);

    while ((fr = uzura_model_due(&m->rxq, now))) {
        trace_uzura_model_deliver(fr->len, fr->due);
        /* Frames find the data path idle here; else no RX buffer. */
        if (!uzura_core_receive(core, fr->data, fr->len)) {
            m->drops++;
            trace_uzura_model_drop(fr->len, "no receive buffer");
        }
        g_free(fr);
    }
    uzura_model_arm(m->rx_timer, &m->rxq);
    uzura_leave(core, g);
}

static bool uzura_model_step(UzuraCore *core);

static void uzura_model_ctl_rx(UzuraCore *core, const uint8_t *buf)
{
    UzuraModel *m = &core->model;
    int64_t t = ldq_be_p(buf + UZ_MODEL_OFF_TIME);

    switch (buf[UZ_MODEL_OFF_KIND]) {
    case UZ_MODEL_HELLO:
        trace_uzura_model_sync("peer engaged", t);
        m->peer_on = true;
        m->peer_mark = -1;
        if (m->engaged && t != m->quantum && !m->warned) {
            m->warned = true;
            warn_report("uzura: model-sync: the peer's quantum is %" PRId64
                        " ns, ours %" PRId64 ": set the same model-* "
                        "properties on both nodes", t, m->quantum);
        }
        break;
    case UZ_MODEL_MARK:
        /*
         * Marks only go forward, and never past where our own mark lets
         * the peer be; a bad one from the wire is counted and ignored.
         */
        if (t < m->peer_mark ||
            (m->engaged && t > m->barrier - m->epoch + m->quantum)) {
            m->bad++;
            trace_uzura_model_bad("mark", t);
            return;
        }
        m->peer_mark = t;
        break;
    case UZ_MODEL_STAMP:
        m->stamp = t;
        m->has_stamp = true;
        memcpy(m->stamp_src, buf + 6, sizeof(m->stamp_src));
        break;
    case UZ_MODEL_BYE:
        trace_uzura_model_sync("peer left", t);
        m->peer_on = false;
        m->peer_mark = -1;
        /* Waiting for a peer that left would stop our guest for good. */
        uzura_model_set_sync(core, false, NULL);
        break;
    default:
        return;
    }
    qemu_cond_broadcast(&m->cond);
    uzura_model_step(core);
}

/*
 * A frame from the link.  Its data is in our memory after the receiving
 * NIC's stage and the NIC-to-host DMA, which is serial: until then it
 * waits in the receive queue.
 */
ssize_t uzura_model_receive(UzuraCore *core, const uint8_t *buf, size_t len)
{
    UzuraModel *m = &core->model;
    UzuraModelParams *p = &m->p;
    int64_t now = uzura_model_now();
    int64_t arrive = now, due;

    if (uzura_model_is_ctl(buf, len)) {
        uzura_model_ctl_rx(core, buf);
        return len;
    }
    if (!uzura_model_room(m, &m->rxq, len)) {
        m->has_stamp = false;
        return len;
    }
    /*
     * A stamp is for the next frame from the same sender, and says when
     * it arrives: not long before now, nor far ahead (the wire's word).
     */
    if (m->has_stamp && m->engaged && m->peer_on && len >= 12 &&
        !memcmp(buf + 6, m->stamp_src, sizeof(m->stamp_src))) {
        if (m->stamp >= now - m->epoch - m->quantum &&
            m->stamp <= now - m->epoch + UZ_MODEL_AHEAD_MAX_NS) {
            arrive = m->epoch + m->stamp;
        } else {
            m->bad++;
            trace_uzura_model_bad("stamp", m->stamp);
        }
    }
    m->has_stamp = false;
    due = MAX(arrive + p->nic_rx_ns, m->rx_free) + p->dma_wr_ns +
          uzura_model_bytes_ns(p->dma_wr_ps, len);
    if (due < now) {
        /* Only without lockstep, or with a peer of other parameters. */
        m->late++;
        trace_uzura_model_late(len, due, now);
        due = now;
    }
    m->rx_free = due;
    trace_uzura_model_rx(len, now, arrive, due);
    uzura_model_enqueue(&m->rxq, buf, len, due);
    if (m->rxq.frames == 1) {
        uzura_model_arm(m->rx_timer, &m->rxq);
    }
    return len;
}

/* Start the data path after @delay_ns, or keep an earlier start. */
void uzura_model_kick(UzuraCore *core, int64_t delay_ns)
{
    UzuraModel *m = &core->model;
    int64_t when = uzura_model_now() + delay_ns;

    if (!timer_pending(m->kick) || timer_expire_time_ns(m->kick) > when) {
        timer_mod(m->kick, when);
    }
}

static void uzura_model_kick_timer(void *opaque)
{
    uzura_work_bh(opaque);
}

/*
 * At the barrier: send our mark once, and pass when the peer has passed
 * the same time (frames it sent before its mark came before the mark, so
 * they wait in the receive queue by now).  Never waits: true when the
 * barrier holds.
 */
static bool uzura_model_step(UzuraCore *core)
{
    UzuraModel *m = &core->model;
    bool held = false;

    if (m->in_poll) {
        return false;
    }
    m->in_poll = true;
    while (m->engaged && uzura_model_now() >= m->barrier) {
        int64_t rel = m->barrier - m->epoch;
        int64_t rt;

        if (!m->marked) {
            uzura_model_ctl(core, UZ_MODEL_MARK, rel);
            m->marked = true;
        }
        if (m->peer_on && m->peer_mark >= rel) {
            m->barrier += m->quantum;
            m->marked = false;
            m->wait_since = 0;
            m->quanta++;
            timer_mod(&m->sync_timer, m->barrier);
            continue;
        }
        /* A stopped VM does not wait for its peer. */
        rt = runstate_is_running() ? qemu_clock_get_ms(QEMU_CLOCK_REALTIME)
                                   : 0;
        if (!m->wait_since || !rt) {
            m->wait_since = rt;
        } else if (rt - m->wait_since > UZ_MODEL_WAIT_MAX_MS) {
            error_report("uzura: model-sync: no mark from the peer for %d "
                         "ms; the clocks run free", UZ_MODEL_WAIT_MAX_MS);
            m->in_poll = false;
            uzura_model_set_sync(core, false, NULL);
            return false;
        }
        held = true;
        break;
    }
    m->in_poll = false;
    return held;
}

/*
 * Where the vCPU thread waits at the barrier: queued work of the first
 * vCPU, which its thread runs with no device code on its stack (the
 * notification can come from within another device's MMIO handler).
 * The vCPU cannot run past the barrier meanwhile: its instruction budget
 * ends there.  The device is referenced until the wait ends.
 */
static void uzura_model_wait(CPUState *cpu, run_on_cpu_data data)
{
    UzuraCore *core = data.host_ptr;
    UzuraModel *m = &core->model;

    m->wait_queued = false;
    while (uzura_model_step(core) && runstate_is_running() && !cpu->stop) {
        qemu_cond_timedwait_bql(&m->cond, 20);
    }
    object_unref(OBJECT(core->owner));
}

/*
 * The sync timer list's notification: what the main list's does (kick a
 * vCPU to take the new deadline), then the barrier: the mark, and the
 * wait queued on the first vCPU if the peer's mark is not in yet.
 */
static void uzura_model_notify(void *opaque, QEMUClockType type)
{
    UzuraCore *core = opaque;
    UzuraModel *m = &core->model;

    qemu_timer_notify_cb(opaque, type);
    if (type == QEMU_CLOCK_VIRTUAL && bql_locked() && uzura_model_step(core) &&
        !m->wait_queued && first_cpu) {
        m->wait_queued = true;
        object_ref(OBJECT(core->owner));
        async_run_on_cpu(first_cpu, uzura_model_wait,
                         RUN_ON_CPU_HOST_PTR(core));
    }
}

static void uzura_model_sync_timer(void *opaque)
{
    /* Never runs: nothing runs the timers of this list. */
}

bool uzura_model_set_sync(UzuraCore *core, bool on, Error **errp)
{
    UzuraModel *m = &core->model;
    UzuraModelParams *p = &m->p;

    if (on == m->engaged) {
        return true;
    }
    if (!on) {
        trace_uzura_model_sync("disengage", uzura_model_now() - m->epoch);
        m->engaged = false;
        timer_del(&m->sync_timer);
        uzura_model_ctl(core, UZ_MODEL_BYE, 0);
        qemu_cond_broadcast(&m->cond);
        return true;
    }
    if (!m->on) {
        error_setg(errp, "model-sync: needs model=on");
        return false;
    }
    if (!icount_enabled()) {
        error_setg(errp, "model-sync: needs guest time from instructions "
                   "(-icount)");
        return false;
    }
    m->quantum = (int64_t)p->link_ns + p->nic_rx_ns + p->dma_wr_ns;
    if (m->quantum < UZ_MODEL_QUANTUM_MIN_NS) {
        error_setg(errp, "model-sync: model-link-ns + model-nic-rx-ns + "
                   "model-dma-write-ns must be at least %d ns",
                   UZ_MODEL_QUANTUM_MIN_NS);
        return false;
    }
    /* Frames held unsynchronised go now, ahead of the stamped ones. */
    uzura_model_send_held(core);
    /* A peer engaged before us waits at its first barrier, time 0. */
    if (m->peer_mark > 0) {
        m->bad++;
        trace_uzura_model_bad("mark", m->peer_mark);
        m->peer_mark = -1;
    }
    m->engaged = true;
    m->marked = false;
    m->has_stamp = false;
    m->wait_since = 0;
    m->epoch = uzura_model_now();
    m->barrier = m->epoch;
    trace_uzura_model_sync("engage", m->quantum);
    uzura_model_ctl(core, UZ_MODEL_HELLO, m->quantum);
    timer_mod(&m->sync_timer, m->barrier);
    return true;
}

/* Frames in the model's queues are lost with a reset; lockstep stays. */
void uzura_model_reset(UzuraCore *core)
{
    UzuraModel *m = &core->model;

    if (!m->kick) {
        return;
    }
    timer_del(m->kick);
    timer_del(m->tx_timer);
    timer_del(m->rx_timer);
    uzura_model_free_queue(&m->txq);
    uzura_model_free_queue(&m->rxq);
    m->dma_rd_free = 0;
    m->wire_free = 0;
    m->rx_free = 0;
    m->xlat_hits_seen = core->counters.xlat_hits;
    m->xlat_misses_seen = core->counters.xlat_misses;
}

bool uzura_model_check(const UzuraModelParams *p, Error **errp)
{
    const uint32_t ns[] = {
        p->doorbell_ns, p->dma_rd_ns, p->xlat_hit_ns, p->xlat_miss_ns,
        p->nic_tx_ns, p->link_ns, p->nic_rx_ns, p->dma_wr_ns,
    };
    int i;

    for (i = 0; i < ARRAY_SIZE(ns); i++) {
        if (ns[i] > UZ_MODEL_STAGE_MAX_NS) {
            error_setg(errp, "uzura: model: a stage takes at most %u ns, "
                       "not %u", UZ_MODEL_STAGE_MAX_NS, ns[i]);
            return false;
        }
    }
    if (p->dma_rd_ps > UZ_MODEL_PS_MAX || p->dma_wr_ps > UZ_MODEL_PS_MAX) {
        error_setg(errp, "uzura: model: DMA takes at most %u ps per byte",
                   UZ_MODEL_PS_MAX);
        return false;
    }
    if (p->link_mbps < 10 || p->link_mbps > 10000000) {
        error_setg(errp, "uzura: model-link-mbps takes 10..10000000, "
                   "not %u", p->link_mbps);
        return false;
    }
    return true;
}

void uzura_model_init(UzuraCore *core)
{
    UzuraModel *m = &core->model;

    if (!m->on) {
        return;
    }
    QSIMPLEQ_INIT(&m->txq.head);
    QSIMPLEQ_INIT(&m->rxq.head);
    m->kick = timer_new_ns(QEMU_CLOCK_VIRTUAL, uzura_model_kick_timer, core);
    m->tx_timer = timer_new_ns(QEMU_CLOCK_VIRTUAL, uzura_model_tx_timer,
                               core);
    m->rx_timer = timer_new_ns(QEMU_CLOCK_VIRTUAL, uzura_model_rx_timer,
                               core);
    timerlistgroup_init(&m->sync_tlg, uzura_model_notify, core);
    timer_init_full(&m->sync_timer, &m->sync_tlg, QEMU_CLOCK_VIRTUAL,
                    SCALE_NS, 0, uzura_model_sync_timer, core);
    m->peer_mark = -1;
}

/*
 * After the owner has left the lockstep (it does before its NIC goes): a
 * vCPU still in uzura_model_wait() finds it disengaged and returns.
 */
void uzura_model_uninit(UzuraCore *core)
{
    UzuraModel *m = &core->model;

    if (!m->kick) {
        return;
    }
    m->engaged = false;
    qemu_cond_broadcast(&m->cond);
    uzura_model_reset(core);
    timer_free(m->kick);
    timer_free(m->tx_timer);
    timer_free(m->rx_timer);
    m->kick = NULL;
    m->tx_timer = NULL;
    timer_del(&m->sync_timer);
    timerlistgroup_deinit(&m->sync_tlg);
}

/* The condition lives as long as the object, which a waiting vCPU holds. */
void uzura_model_instance_init(UzuraCore *core)
{
    qemu_cond_init(&core->model.cond);
}

void uzura_model_finalize(UzuraCore *core)
{
    qemu_cond_destroy(&core->model.cond);
}
