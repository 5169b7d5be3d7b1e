/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uzura RDMA NIC: the Ethernet function.
 *
 * One TX and one RX descriptor ring.  TX runs in the work bottom half;
 * RX runs when the backend delivers a frame.  With no RX descriptor posted
 * a frame waits in the device's hold queue, UZ_ETH_HOLD_FRAMES frames and
 * UZ_ETH_HOLD_BYTES at most, and goes into the ring once the driver posts
 * one; past that it is dropped and counted (rx_out_of_buffer).  The link
 * is never stopped for the Ethernet function: RoCE frames behind a frame
 * it cannot take would wait too, and the RDMA engine with them.  Each
 * batch ends with one EQE on the ring's EQ.
 */
#include "qemu/osdep.h"
#include "qemu/main-loop.h"
#include "qemu/units.h"
#include "net/net.h"
#include "uzura-core.h"
#include "trace.h"

#define UZ_ETH_TX_BUDGET    256     /* descriptors per bottom-half run */
#define UZ_ETH_HOLD_BUDGET  256     /* held frames per bottom-half run */
#define UZ_ETH_HOLD_FRAMES  256     /* the hold queue's bounds (spec 6.2) */
#define UZ_ETH_HOLD_BYTES   (1 * MiB)

/* A frame that came with no RX descriptor posted. */
typedef struct UzuraEthHeld {
    QSIMPLEQ_ENTRY(UzuraEthHeld) next;
    size_t len;
    uint8_t data[];
} UzuraEthHeld;

static uint32_t uzura_eth_size(const UzuraEthRing *r)
{
    return 1u << r->log_depth;
}

static uint64_t uzura_eth_desc_addr(const UzuraEthRing *r, uint32_t idx)
{
    return r->ring_addr +
           (idx & (uzura_eth_size(r) - 1)) * sizeof(struct uz_eth_desc);
}

static UzuraEthRing *uzura_eth_ring(UzuraCore *core, bool tx)
{
    return tx ? &core->eth_tx : &core->eth_rx;
}

static void uzura_eth_event(UzuraCore *core, UzuraEthRing *r, bool tx)
{
    if (r->event_owed) {
        r->event_owed = false;
        uzura_eq_post(core, r->eqn, tx ? UZ_EQE_ETH_TX : UZ_EQE_ETH_RX, 0,
                      r->ci);
    }
}

static void uzura_eth_tx_status(UzuraCore *core, UzuraEthRing *r,
                                uint32_t idx, uint32_t status)
{
    uint32_t le = cpu_to_le32(status);

    uzura_dma_write(core, uzura_eth_desc_addr(r, idx) +
                    offsetof(struct uz_eth_desc, status), &le, sizeof(le));
}

/*
 * Send the frame whose descriptors start at r->ci.  Returns false when the
 * frame is not complete yet (its last descriptor is not posted).
 */
static bool uzura_eth_tx_frame(UzuraCore *core, UzuraEthRing *r)
{
    uint32_t max = UZ_ETH_FRAME_MAX(core->mtu);
    uint32_t idx = r->ci, len = 0, err = UZ_ETH_ERR_NONE, n, count = 0;
    struct uz_eth_desc d;

    /* Gather: walk the chain, copying while it fits. */
    do {
        if (count == uzura_eth_size(r)) {
            err = UZ_ETH_ERR_TOO_LONG;      /* a chain as long as the ring */
            break;
        }
        if (idx == r->pi) {
            return false;
        }
        count++;
        if (!uzura_dma_read(core, uzura_eth_desc_addr(r, idx), &d,
                            sizeof(d))) {
            err = UZ_ETH_ERR_DMA;
            d.flags = 0;
        } else if (err == UZ_ETH_ERR_NONE) {
            uint16_t dlen = le16_to_cpu(d.len);

            if (len + dlen > max) {
                err = UZ_ETH_ERR_TOO_LONG;
            } else if (!uzura_dma_read(core, le64_to_cpu(d.addr),
                                       core->tx_frame + len, dlen)) {
                err = UZ_ETH_ERR_DMA;
            }
            len += dlen;
        }
        idx = (idx + 1) & UZ_IDX_MASK;
    } while (le16_to_cpu(d.flags) & UZ_ETH_TX_MORE);

    if (err == UZ_ETH_ERR_NONE && len < UZ_ETH_HDR_LEN) {
        err = UZ_ETH_ERR_TOO_SHORT;
    }
    if (err == UZ_ETH_ERR_NONE && !uzura_core_link_up(core)) {
        err = UZ_ETH_ERR_LINK_DOWN;
    }
    if (err == UZ_ETH_ERR_NONE) {
        trace_uzura_eth_tx(r->ci, len);
        uzura_link_send(core, core->tx_frame, len);
        core->counters.tx_frames++;
        core->counters.tx_bytes += len;
    } else {
        core->counters.tx_errors++;
        if (err != UZ_ETH_ERR_LINK_DOWN) {
            uzura_guest_error(trace_uzura_eth_err_tx(r->ci, len, err),
                              "TX frame at descriptor %u (%u bytes) "
                              "dropped: error %u", r->ci, len, err);
        }
    }
    for (n = r->ci; n != idx; n = (n + 1) & UZ_IDX_MASK) {
        uzura_eth_tx_status(core, r, n, UZ_ETH_DONE | err);
    }
    r->ci = idx;
    r->event_owed = true;
    return true;
}

static void uzura_eth_tx_work(UzuraCore *core)
{
    UzuraEthRing *r = &core->eth_tx;
    unsigned budget = UZ_ETH_TX_BUDGET;

    /* Paused by the link (9.1.3): descriptors wait in the ring. */
    if (uzura_pause_active(core)) {
        return;
    }
    /* budget-- only for a frame taken: at 0, the rest waits for a rerun. */
    while (r->valid && r->ci != r->pi && budget) {
        if (!uzura_eth_tx_frame(core, r)) {
            break;
        }
        budget--;
    }
    if (r->valid) {
        uzura_eth_event(core, r, true);
        if (!budget && r->ci != r->pi) {
            uzura_work_schedule(core);
        }
    }
}

static void uzura_eth_hold_work(UzuraCore *core);

void uzura_eth_work(UzuraCore *core)
{
    uzura_eth_tx_work(core);
    uzura_eth_hold_work(core);
    if (core->eth_rx.valid) {
        uzura_eth_event(core, &core->eth_rx, false);
    }
}

static bool uzura_eth_rx_accept(UzuraCore *core, const uint8_t *buf,
                                size_t size)
{
    /* Unicast to us, broadcast and multicast (group bit set). */
    return size >= UZ_ETH_HDR_LEN &&
           ((buf[0] & 1) || !memcmp(buf, core->mac, sizeof(core->mac)));
}

/* Put a frame into the next RX descriptor, which the driver posted. */
static void uzura_eth_deliver(UzuraCore *core, const uint8_t *buf,
                              size_t size)
{
    UzuraEthRing *r = &core->eth_rx;
    uint64_t daddr = uzura_eth_desc_addr(r, r->ci);
    struct uz_eth_desc d;
    uint32_t status;

    if (!uzura_dma_read(core, daddr, &d, sizeof(d))) {
        uzura_guest_error(trace_uzura_eth_err_rx_ring(daddr),
                          "RX descriptor at 0x%" PRIx64 " not accessible",
                          daddr);
        core->counters.rx_dropped++;
        return;
    }
    if (size > le16_to_cpu(d.len)) {
        uzura_guest_error(trace_uzura_eth_err_rx_small(r->ci, size,
                                                       le16_to_cpu(d.len)),
                          "RX frame of %zu bytes dropped: descriptor %u "
                          "holds %u", size, r->ci, le16_to_cpu(d.len));
        core->counters.rx_dropped++;
        return;
    }
    if (uzura_dma_write(core, le64_to_cpu(d.addr), buf, size)) {
        status = UZ_ETH_DONE;
        core->counters.rx_frames++;
        core->counters.rx_bytes += size;
    } else {
        uint64_t baddr = le64_to_cpu(d.addr);

        uzura_guest_error(trace_uzura_eth_err_rx_buf(r->ci, baddr),
                          "RX buffer of descriptor %u not accessible", r->ci);
        status = UZ_ETH_DONE | UZ_ETH_ERR_DMA;
        core->counters.rx_dropped++;
    }
    trace_uzura_eth_rx(r->ci, size, status);
    d.len = cpu_to_le16(size);
    d.status = cpu_to_le32(status);
    uzura_dma_write_entry(core, daddr, &d, sizeof(d));
    r->ci = (r->ci + 1) & UZ_IDX_MASK;
    /* One event per batch: the bottom half posts it. */
    r->event_owed = true;
    uzura_work_schedule(core);
    return;
}

/* Drop every held frame: the RX ring or the link went away. */
static void uzura_eth_hold_flush(UzuraCore *core)
{
    UzuraEthHeld *h;

    while ((h = QSIMPLEQ_FIRST(&core->eth_hold))) {
        QSIMPLEQ_REMOVE_HEAD(&core->eth_hold, next);
        core->counters.rx_dropped++;
        g_free(h);
    }
    core->eth_hold_frames = 0;
    core->eth_hold_bytes = 0;
}

/* Held frames into the descriptors the driver posted since, in order. */
static void uzura_eth_hold_work(UzuraCore *core)
{
    UzuraEthRing *r = &core->eth_rx;
    unsigned budget = UZ_ETH_HOLD_BUDGET;
    UzuraEthHeld *h;

    if (!r->valid || !uzura_core_link_up(core)) {
        uzura_eth_hold_flush(core);
        return;
    }
    while ((h = QSIMPLEQ_FIRST(&core->eth_hold)) && r->ci != r->pi) {
        if (!budget--) {
            uzura_work_schedule(core);
            return;
        }
        QSIMPLEQ_REMOVE_HEAD(&core->eth_hold, next);
        core->eth_hold_frames--;
        core->eth_hold_bytes -= h->len;
        uzura_eth_deliver(core, h->data, h->len);
        g_free(h);
    }
}

ssize_t uzura_eth_receive(UzuraCore *core, const uint8_t *buf, size_t size)
{
    UzuraEthRing *r = &core->eth_rx;
    UzuraEthHeld *h;

    if (!r->valid || !uzura_core_link_up(core)) {
        core->counters.rx_dropped++;
        return size;
    }
    if (!uzura_eth_rx_accept(core, buf, size)) {
        return size;
    }
    if (size > UZ_ETH_FRAME_MAX(core->mtu)) {
        trace_uzura_eth_rx_drop(size, core->mtu);
        core->counters.rx_dropped++;
        return size;
    }
    if (r->ci != r->pi && QSIMPLEQ_EMPTY(&core->eth_hold)) {
        uzura_eth_deliver(core, buf, size);
        return size;
    }
    /* No descriptor (or frames before it wait): hold it, within bounds. */
    if (core->eth_hold_frames >= UZ_ETH_HOLD_FRAMES ||
        core->eth_hold_bytes + size > UZ_ETH_HOLD_BYTES) {
        trace_uzura_eth_rx_no_buffer(size, core->eth_hold_frames);
        core->counters.rx_out_of_buffer++;
        return size;
    }
    h = g_malloc(sizeof(*h) + size);
    h->len = size;
    memcpy(h->data, buf, size);
    QSIMPLEQ_INSERT_TAIL(&core->eth_hold, h, next);
    core->eth_hold_frames++;
    core->eth_hold_bytes += size;
    if (r->ci != r->pi) {
        uzura_work_schedule(core);
    }
    return size;
}

void uzura_eth_doorbell(UzuraCore *core, bool tx, uint32_t val)
{
    UzuraEthRing *r = uzura_eth_ring(core, tx);
    uint32_t pi = val & UZ_DB_PI_MASK;

    if (!uzura_ring_pi_ok(pi, r->ci, uzura_eth_size(r))) {
        uzura_guest_error(trace_uzura_eth_err_doorbell(tx, val, r->ci),
                          "%s doorbell %u overruns the ring (device at %u)",
                          tx ? "TX" : "RX", pi, r->ci);
        uzura_core_record_error(core, UZ_ERR_BAD_VALUE, r->db_offset);
        return;
    }
    trace_uzura_eth_doorbell(tx, pi);
    r->pi = pi;
    if (!tx) {
        /* Held frames go in by the bottom half. */
    } else if (core->model.on) {
        uzura_model_kick(core, core->model.p.doorbell_ns);
        return;
    }
    uzura_work_schedule(core);
}

static uint8_t uzura_eth_create(UzuraCore *core, bool tx,
                                const struct uz_admin_cmd *cmd,
                                struct uz_admin_cqe *cqe)
{
    const struct uz_cmd_create_eth_queue *c = &cmd->create_eth_queue;
    uint32_t db_offset;
    UzuraEthRing *r = uzura_eth_ring(core, tx);
    uint64_t ring = le64_to_cpu(c->ring_addr);
    uint32_t eqn = le32_to_cpu(c->eqn);

    if (r->valid) {
        trace_uzura_eth_err_exists(tx);
        return UZ_CMD_EXISTS;
    }
    if (c->log_depth < UZ_ETH_DEPTH_MIN ||
        c->log_depth > UZ_ETH_DEPTH_MAX) {
        trace_uzura_eth_err_depth(tx, c->log_depth, UZ_ETH_DEPTH_MIN,
                                  UZ_ETH_DEPTH_MAX);
        return UZ_CMD_BAD_PARAM;
    }
    if (!uzura_dma_ok(core, ring,
                      sizeof(struct uz_eth_desc) << c->log_depth, true)) {
        trace_uzura_eth_err_ring(tx, ring, c->log_depth);
        return UZ_CMD_BAD_ADDR;
    }
    if (!uzura_eq_get(core, eqn)) {
        trace_uzura_eth_err_eq(tx, eqn);
        return UZ_CMD_BAD_HANDLE;
    }
    if (!uzura_db_alloc(core, 0, tx ? UZ_DBK_ETH_TX : UZ_DBK_ETH_RX, 0,
                        &db_offset)) {
        trace_uzura_eth_err_db_slot(tx);
        uzura_eq_put(core, eqn);
        return UZ_CMD_NO_RESOURCES;
    }
    *r = (UzuraEthRing) {
        .valid = true,
        .ring_addr = ring,
        .log_depth = c->log_depth,
        .eqn = eqn,
        .db_offset = db_offset,
    };
    trace_uzura_eth_create(tx, ring, c->log_depth, eqn);
    cqe->out1 = cpu_to_le32(db_offset);
    return UZ_CMD_OK;
}

static uint8_t uzura_eth_destroy(UzuraCore *core, bool tx,
                                 const struct uz_admin_cmd *cmd)
{
    uint32_t handle = le32_to_cpu(cmd->destroy.handle);
    UzuraEthRing *r = uzura_eth_ring(core, tx);

    if (handle != 0) {
        trace_uzura_eth_err_handle(tx, handle);
        return UZ_CMD_BAD_HANDLE;
    }
    if (!r->valid) {
        trace_uzura_eth_err_no_ring(tx);
        return UZ_CMD_BAD_HANDLE;
    }
    uzura_eq_put(core, r->eqn);
    uzura_db_free(core, r->db_offset);
    memset(r, 0, sizeof(*r));
    if (!tx) {
        uzura_eth_hold_flush(core);
    }
    trace_uzura_eth_destroy(tx);
    return UZ_CMD_OK;
}

uint8_t uzura_cmd_create_eth_txq(UzuraCore *core,
                                 const struct uz_admin_cmd *cmd,
                                 struct uz_admin_cqe *cqe)
{
    return uzura_eth_create(core, true, cmd, cqe);
}

uint8_t uzura_cmd_create_eth_rxq(UzuraCore *core,
                                 const struct uz_admin_cmd *cmd,
                                 struct uz_admin_cqe *cqe)
{
    return uzura_eth_create(core, false, cmd, cqe);
}

uint8_t uzura_cmd_destroy_eth_txq(UzuraCore *core,
                                  const struct uz_admin_cmd *cmd,
                                  struct uz_admin_cqe *cqe)
{
    return uzura_eth_destroy(core, true, cmd);
}

uint8_t uzura_cmd_destroy_eth_rxq(UzuraCore *core,
                                  const struct uz_admin_cmd *cmd,
                                  struct uz_admin_cqe *cqe)
{
    return uzura_eth_destroy(core, false, cmd);
}

void uzura_eth_reset(UzuraCore *core)
{
    memset(&core->eth_tx, 0, sizeof(core->eth_tx));
    memset(&core->eth_rx, 0, sizeof(core->eth_rx));
    uzura_eth_hold_flush(core);
}
