/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uzura RDMA NIC: the port, where the NIC's frames meet the link.
 *
 * Every frame the NIC sends, Ethernet or RoCE, leaves through
 * uzura_link_send() (or, as pieces, uzura_link_sendv()); every frame of
 * the link enters through uzura_link_receive().  A paused link holds the
 * NIC's frames here (uzura-pause.c).  Between the port and the netdev
 * sit the research layers (research/), each off unless set: the fault
 * injector, which drops, corrupts, duplicates, reorders and delays
 * frames, and the timing model, which gives the wire, the NIC and its
 * DMA a duration in virtual time.
 */
#include "qemu/osdep.h"
#include "net/net.h"
#include "uzura-core.h"

/*
 * Whether a frame may go straight to the netdev as pieces
 * (uzura_link_sendv): no fault is injected on transmit and the timing
 * model is off, for both take the frame as one buffer.
 */
bool uzura_link_direct(UzuraCore *core)
{
    return !core->model.on && !uzura_fault_tx_active(&core->fault) &&
           !uzura_pause_active(core);
}

/* Send a frame in pieces, when uzura_link_direct() says it may. */
void uzura_link_sendv(UzuraCore *core, const struct iovec *iov, int n)
{
    qemu_sendv_packet(qemu_get_queue(core->owner_nic), iov, n);
}

/* Send a frame on the link. */
void uzura_link_send(UzuraCore *core, const uint8_t *buf, size_t len)
{
    /* A paused link (9.1.3) holds the frame before the wire. */
    if (uzura_pause_hold(core, buf, len)) {
        return;
    }
    if (uzura_fault_tx_active(&core->fault)) {
        uzura_fault_tx(core, buf, len);
        return;
    }
    uzura_link_wire(core, buf, len);
}

/* Put a frame on the wire: the timing model's, or the netdev itself. */
void uzura_link_wire(UzuraCore *core, const uint8_t *buf, size_t len)
{
    if (core->model.on) {
        uzura_model_send(core, buf, len);
    } else {
        qemu_send_packet(qemu_get_queue(core->owner_nic), buf, len);
    }
}

/*
 * A frame from the link.  The timing model keeps it until its time has
 * come; the fault injector's receive rules see RoCE frames in
 * uzura_core_receive.
 */
ssize_t uzura_link_receive(UzuraCore *core, const uint8_t *buf, size_t size)
{
    return core->model.on ? uzura_model_receive(core, buf, size) :
                            uzura_core_receive(core, buf, size);
}
