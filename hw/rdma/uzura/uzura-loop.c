/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uzura RDMA NIC: RoCE loopback.
 *
 * A RoCE frame addressed to the NIC's own MAC (two QPs of one device
 * talking to each other, as rdma-core's tests do) never reaches the link:
 * the NIC turns it around before its port, like a real one.  It waits in
 * a FIFO that the work bottom half drains, so a frame is never received
 * while the one that caused it is still being built.  The link state and
 * the fault injector apply to the link only.  A full FIFO drops the frame;
 * the RC transport recovers it as a loss.
 */
#include "qemu/osdep.h"
#include "qemu/main-loop.h"
#include "uzura-core.h"
#include "trace.h"

typedef struct UzuraLoopFrame {
    QSIMPLEQ_ENTRY(UzuraLoopFrame) next;
    bool raw;                   /* a raw QP's: for the flow rules only */
    size_t len;
    uint8_t data[];
} UzuraLoopFrame;

bool uzura_loop_is_own(UzuraCore *core, const uint8_t *frame)
{
    return !memcmp(frame, core->mac, sizeof(core->mac));
}

static void uzura_loop_queue(UzuraCore *core, const uint8_t *buf, size_t len,
                             bool raw)
{
    UzuraLoopFrame *fr;

    if (core->loop_queued >= UZ_LOOP_QUEUE_MAX) {
        trace_uzura_loop_drop(len);
        core->counters.loop_dropped++;
        return;
    }
    fr = g_malloc(sizeof(*fr) + len);
    fr->raw = raw;
    fr->len = len;
    memcpy(fr->data, buf, len);
    QSIMPLEQ_INSERT_TAIL(&core->loop, fr, next);
    core->loop_queued++;
    core->counters.loop_frames++;
    trace_uzura_loop_send(len, core->loop_queued);
    uzura_work_schedule(core);
}

void uzura_loop_send(UzuraCore *core, const uint8_t *buf, size_t len)
{
    uzura_loop_queue(core, buf, len, false);
}

/* A raw QP's frame to this NIC: the flow rules take it or nothing does. */
void uzura_loop_send_raw(UzuraCore *core, const uint8_t *buf, size_t len)
{
    uzura_loop_queue(core, buf, len, true);
}

/*
 * Receive the frames queued so far; those their receipt sends back to us
 * wait for the next round of the bottom half, which bounds one round.
 */
void uzura_loop_work(UzuraCore *core)
{
    uint32_t n = core->loop_queued;
    UzuraLoopFrame *fr;

    while (n-- && (fr = QSIMPLEQ_FIRST(&core->loop))) {
        QSIMPLEQ_REMOVE_HEAD(&core->loop, next);
        core->loop_queued--;
        if (fr->raw) {
            uzura_raw_receive(core, fr->data, fr->len);
        } else {
            uzura_roce_receive(core, fr->data, fr->len);
        }
        g_free(fr);
    }
    if (!QSIMPLEQ_EMPTY(&core->loop)) {
        uzura_work_schedule(core);
    }
}

/* Frames turned around but not yet received are lost on reset. */
void uzura_loop_flush(UzuraCore *core)
{
    UzuraLoopFrame *fr;

    while ((fr = QSIMPLEQ_FIRST(&core->loop))) {
        QSIMPLEQ_REMOVE_HEAD(&core->loop, next);
        g_free(fr);
    }
    core->loop_queued = 0;
}
