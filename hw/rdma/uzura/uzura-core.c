/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uzura RDMA NIC: the device core.
 *
 * Its life (init, reset), the entries every caller goes through
 * (uzura_enter/uzura_leave), the link's state, the work loop that runs
 * the queues (uzura_work_bh) and where a received frame goes.  The parts
 * it drives have files of their own: uzura-core.h lists them.
 */
#include "qemu/osdep.h"
#include "qemu/defer-call.h"
#include "qemu/main-loop.h"
#include "qemu/timer.h"
#include "hw/qdev-core.h"
#include "net/net.h"
#include "uzura-core.h"
#include "trace.h"

/*
 * The device clock (UZ_DB_CLOCK): the virtual clock, which runs with the
 * guest's own (under -icount, with its instructions) and stops with it.
 */
uint64_t uzura_clock_ns(void)
{
    return qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
}

void uzura_core_init(UzuraCore *core)
{
    MemReentrancyGuard *guard = &DEVICE(core->owner)->mem_reentrancy_guard;

    core->in_io = &guard->engaged_in_io;
    core->admin.bh = qemu_bh_new_guarded(uzura_admin_bh, core, guard);
    core->work_bh = qemu_bh_new_guarded(uzura_work_bh, core, guard);
    core->db_map = g_new0(uint32_t, core->db_pages * UZ_DB_SLOTS_PER_PAGE);
    uzura_rdma_init(core);
    core->tx_frame = g_malloc(UZ_ETH_FRAME_MAX(UZ_MAX_MTU));
    core->roce_frame = g_malloc(UZ_ETH_FRAME_MAX(UZ_MAX_MTU));
    uzura_fault_init(core);
    uzura_model_init(core);
    uzura_pause_init(core);
    QSIMPLEQ_INIT(&core->loop);
    QSIMPLEQ_INIT(&core->eth_hold);
}

void uzura_core_uninit(UzuraCore *core)
{
    qemu_bh_delete(core->admin.bh);
    qemu_bh_delete(core->work_bh);
    g_free(core->db_map);
    g_free(core->tx_frame);
    g_free(core->roce_frame);
    uzura_fault_uninit(core);
    uzura_model_uninit(core);
    uzura_pause_uninit(core);
    uzura_loop_flush(core);
    uzura_eth_reset(core);
    uzura_rdma_uninit(core);
}

/*
 * Every entry into the device (MMIO, bottom halves, timers, frames from
 * the link) runs between uzura_enter and uzura_leave.  The entry holds the
 * device's re-entrancy guard, as QEMU's guarded bottom halves do, so a
 * DMA or MSI-X message of the device that lands in its own BARs is
 * refused; and a reset that arrives meanwhile is held until the outermost
 * entry leaves.  Such a reset comes through config space, which the guard
 * does not cover: an FLR written by an MSI-X message the guest aimed at
 * the device's own PCIe capability.  Nothing then runs on state a reset
 * freed.  Returns the guard's previous state, for uzura_leave.
 */
bool uzura_enter(UzuraCore *core)
{
    bool was = *core->in_io;

    *core->in_io = true;
    core->depth++;
    return was;
}

void uzura_leave(UzuraCore *core, bool guard_was)
{
    *core->in_io = guard_was;
    if (--core->depth == 0 && core->reset_owed) {
        core->reset_owed = false;
        uzura_core_reset(core);
    }
}

/*
 * Stop every queue and forget its configuration.  Pending bottom halves are
 * cancelled and the queue state they would use is gone, so no DMA and no
 * interrupt follows a reset.  Inside an entry (uzura_enter) the reset
 * waits for the entry to end.
 */
void uzura_core_reset(UzuraCore *core)
{
    if (core->depth) {
        trace_uzura_regs_reset_held(core->depth);
        core->reset_owed = true;
        return;
    }
    trace_uzura_regs_reset();
    uzura_admin_reset(core);
    uzura_rdma_reset(core);
    uzura_eth_reset(core);
    uzura_eq_reset(core);
    uzura_db_reset(core);
    qemu_bh_cancel(core->work_bh);
    core->work_owed = false;
    core->rx_flush_owed = false;
    uzura_fault_flush(core);
    uzura_model_reset(core);
    uzura_pause_reset(core);
    uzura_loop_flush(core);

    memcpy(core->mac, core->perm_mac, sizeof(core->mac));
    core->mtu = UZ_DEFAULT_MTU;
    core->status &= UZ_STATUS_LINK_UP;
    core->scratch = 0;
    core->err_status = UZ_ERR_NONE;
    core->err_count = 0;
    core->err_addr = 0;
    core->status |= UZ_STATUS_READY;
}

bool uzura_core_link_up(UzuraCore *core)
{
    return core->status & UZ_STATUS_LINK_UP;
}

/*
 * The link is up when the backend's link and the link property are, and
 * no flap (7.5.3) holds it down.
 */
void uzura_core_set_link(UzuraCore *core, bool nc_up, bool prop_up)
{
    bool was_up = uzura_core_link_up(core);
    bool up = nc_up && prop_up && !core->flap_down;

    core->nc_link_up = nc_up;
    core->link_prop = prop_up;
    if (up == was_up) {
        return;
    }
    trace_uzura_regs_link(up);
    if (up) {
        core->status |= UZ_STATUS_LINK_UP;
        /* Frames the backend queued while the link was down may flow. */
        core->rx_flush_owed = true;
        uzura_work_schedule(core);
    } else {
        core->status &= ~UZ_STATUS_LINK_UP;
        /* Frames in flight on the cable are lost with it. */
        uzura_fault_flush(core);
        uzura_model_link_down(core);
    }
    uzura_eq_post_async(core, up ? UZ_EQE_PORT_ACTIVE : UZ_EQE_PORT_DOWN,
                        1, 0);
}

/* The bottom half, or with the timing model the same at this moment. */
void uzura_work_schedule(UzuraCore *core)
{
    if (core->model.on) {
        uzura_model_kick(core, 0);
    } else {
        core->work_owed = true;
        qemu_bh_schedule(core->work_bh);
    }
}

/*
 * A turn of the device's sending (its work, a doorbell) is a defer_call
 * section: a netdev that batches (the stream link) writes the frames of
 * the turn at its end, in one system call.  While any device is in such a
 * turn, received frames do not run work at a section's end (below), so
 * two NICs on one hub do not call into each other without bound.
 */
static unsigned uzura_turns;

/* Property tx-batch=off: no section, each frame written as it is sent. */
bool uzura_turn_begin(UzuraCore *core)
{
    if (!core->tx_batch) {
        return false;
    }
    uzura_turns++;
    defer_call_begin();
    return true;
}

void uzura_turn_end(bool opened)
{
    if (opened) {
        defer_call_end();
        uzura_turns--;
    }
}

/* The work the bottom half owes, run now. */
static void uzura_work_now(void *opaque)
{
    UzuraCore *core = opaque;

    if (core->work_owed && !*core->in_io) {
        trace_uzura_regs_work_batch_end();
        qemu_bh_cancel(core->work_bh);
        uzura_work_bh(core);
    }
}

/*
 * A frame received inside a netdev's defer_call section (a batch the
 * stream or shm link hands over) leaves the work it caused (ACKs, READ
 * answers, completions) to the batch's end, in this iteration of the main
 * loop rather than in a bottom half of the next.
 */
void uzura_work_after_batch(UzuraCore *core)
{
    if (core->work_owed && core->rx_batch && !uzura_turns &&
        defer_call_deferring()) {
        defer_call(uzura_work_now, core);
    }
}

/*
 * Frames that arrive while the device is in its data path (a peer on a
 * hub answers within our send) wait in the backend's queue, flushed here
 * once the data path is done.
 */
void uzura_work_bh(void *opaque)
{
    UzuraCore *core = opaque;
    bool g = uzura_enter(core), turn;

    core->work_owed = false;
    turn = uzura_turn_begin(core);
    core->busy = true;
    uzura_eth_work(core);
    /* List operations rung before a looped-back message go first. */
    uzura_tm_work(core);
    uzura_loop_work(core);
    uzura_qp_work(core);
    core->busy = false;
    uzura_turn_end(turn);
    if (core->rx_flush_owed) {
        core->rx_flush_owed = false;
        qemu_flush_queued_packets(qemu_get_queue(core->owner_nic));
    }
    uzura_leave(core, g);
}

/* RoCEv2 frames to our MAC go to the RDMA engine, the rest to Ethernet. */
ssize_t uzura_core_receive(UzuraCore *core, const uint8_t *buf, size_t size)
{
    if (core->busy) {
        core->rx_flush_owed = true;
        uzura_work_schedule(core);
        return 0;
    }
    /* PAUSE and PFC frames are the MAC's: no one else sees them. */
    if (uzura_pause_receive(core, buf, size)) {
        return size;
    }
    /*
     * Frames a flow rule matches are its raw QP's alone: those to us or
     * to a group, as the MAC filter lets through, and not our own group
     * frames a multicast link hands back (the loopback had them).
     */
    if (uzura_core_link_up(core) && size >= UZ_ETH_HDR_LEN &&
        ((buf[0] & 1) ? memcmp(buf + 6, core->mac, 6)
                      : !memcmp(buf, core->mac, 6))) {
        bool taken;

        core->busy = true;
        taken = uzura_raw_receive(core, buf, size);
        core->busy = false;
        if (taken) {
            return size;
        }
    }
    /*
     * RoCE to us or to a group (multicast).  Our own group frames, which a
     * multicast link hands back, went through the loopback already.
     */
    if (size >= UZ_ETH_HDR_LEN && uzura_roce_is_roce(buf, size) &&
        ((buf[0] & 1) || !memcmp(buf, core->mac, 6))) {
        bool echo = (buf[0] & 1) && !memcmp(buf + 6, core->mac, 6);

        if (!echo && uzura_core_link_up(core) &&
            !uzura_fault_rx(core, buf, size)) {
            uzura_core_receive_roce(core, buf, size);
        }
        return size;
    }
    if (size >= UZ_ETH_HDR_LEN && !(buf[0] & 1) &&
        memcmp(buf, core->mac, 6)) {
        core->counters.rx_not_ours++;
        return size;
    }
    return uzura_eth_receive(core, buf, size);
}

/* A RoCE frame from the link, past the fault injector. */
void uzura_core_receive_roce(UzuraCore *core, const uint8_t *buf,
                             size_t size)
{
    core->busy = true;
    uzura_roce_receive(core, buf, size);
    core->busy = false;
}
