/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uzura RDMA NIC: event queues and interrupts.
 *
 * The device writes events into EQ rings in host memory and raises an EQ's
 * MSI-X vector only when the driver armed it: completions are polled, an
 * interrupt is for a driver that chose to wait.
 */
#include "qemu/osdep.h"
#include "uzura-core.h"
#include "trace.h"

static uint32_t uzura_eq_size(const UzuraEq *eq)
{
    return 1u << eq->log_depth;
}

static uint32_t uzura_eq_used(const UzuraEq *eq)
{
    return uzura_ring_used(eq->pi, eq->ci);
}

static UzuraEq *uzura_eq_lookup(UzuraCore *core, uint32_t eqn)
{
    return eqn < UZ_MAX_EQ && core->eq[eqn].valid ? &core->eq[eqn] : NULL;
}

static void uzura_eq_fire(UzuraCore *core, UzuraEq *eq)
{
    eq->armed = false;
    uzura_irq(core, eq->vector);
}

/* Write one entry; the caller made sure there is room. */
static void uzura_eq_write(UzuraCore *core, uint32_t eqn, UzuraEq *eq,
                           uint8_t type, uint32_t handle, uint32_t data)
{
    uint32_t pos = eq->pi & (uzura_eq_size(eq) - 1);
    struct uz_eqe eqe = {
        .type = type,
        .handle = cpu_to_le32(handle),
        .data = cpu_to_le32(data),
    };

    if (!((eq->pi >> eq->log_depth) & 1)) {
        eqe.flags = cpu_to_le32(UZ_EQE_PHASE);
    }
    trace_uzura_eq_post(eqn, type, handle, data, eq->pi);
    if (!uzura_dma_write_entry(core, eq->ring_addr + pos * sizeof(eqe),
                               &eqe, sizeof(eqe))) {
        /* The ring went away under the device: lose the event, say so. */
        uzura_guest_error(trace_uzura_eq_err_dma(eqn, eq->ring_addr),
                          "EQ %u ring not accessible; event 0x%02x lost",
                          eqn, type);
        if (!eq->async) {
            uzura_eq_post_async(core, UZ_EQE_DEVICE_FATAL, eqn,
                                UZ_FATAL_EQ_DMA);
        }
        return;
    }
    eq->pi = (eq->pi + 1) & UZ_IDX_MASK;
    core->counters.eq_events++;
}

/* Post an event; false when it was lost (no such EQ, or no room). */
bool uzura_eq_post(UzuraCore *core, uint32_t eqn, uint8_t type,
                   uint32_t handle, uint32_t data)
{
    UzuraEq *eq = uzura_eq_lookup(core, eqn);
    uint32_t room;

    if (!eq) {
        return false;
    }
    room = uzura_eq_size(eq) - uzura_eq_used(eq);
    if (eq->overflowed && room >= 2) {
        uzura_eq_write(core, eqn, eq, UZ_EQE_EQ_OVERFLOW, eqn, 0);
        eq->overflowed = false;
        room--;
    }
    if (eq->overflowed || !room) {
        uzura_guest_error(trace_uzura_eq_err_overflow(eqn, type),
                          "EQ %u full, event 0x%02x lost", eqn, type);
        eq->overflowed = true;
        core->counters.eq_overflows++;
        return false;
    }
    uzura_eq_write(core, eqn, eq, type, handle, data);
    if (eq->armed) {
        uzura_eq_fire(core, eq);
    }
    return true;
}

bool uzura_eq_post_async(UzuraCore *core, uint8_t type, uint32_t handle,
                         uint32_t data)
{
    unsigned i;

    for (i = 0; i < UZ_MAX_EQ; i++) {
        if (core->eq[i].valid && core->eq[i].async) {
            return uzura_eq_post(core, i, type, handle, data);
        }
    }
    trace_uzura_eq_async_dropped(type, handle);
    return false;
}

void uzura_eq_doorbell(UzuraCore *core, uint32_t eqn, uint32_t val)
{
    UzuraEq *eq = uzura_eq_lookup(core, eqn);
    uint32_t ci = val & UZ_DB_CI_MASK;

    if (!eq) {
        return;
    }
    /* The consumer index may not pass what the device has written. */
    if (!uzura_ring_ci_ok(ci, eq->ci, eq->pi)) {
        uzura_guest_error(trace_uzura_eq_err_doorbell(eqn, val, eq->pi),
                          "EQ %u doorbell: consumer index %u is past the "
                          "producer index %u", eqn, ci, eq->pi);
        uzura_core_record_error(core, UZ_ERR_BAD_VALUE, eq->db_offset);
        return;
    }
    trace_uzura_eq_doorbell(eqn, ci, !!(val & UZ_DB_ARM));
    eq->ci = ci;
    if (eq->overflowed && uzura_eq_size(eq) - uzura_eq_used(eq) >= 1) {
        uzura_eq_write(core, eqn, eq, UZ_EQE_EQ_OVERFLOW, eqn, 0);
        eq->overflowed = false;
    }
    if (val & UZ_DB_ARM) {
        eq->armed = true;
        if (eq->pi != eq->ci) {
            uzura_eq_fire(core, eq);
        }
    }
}

uint8_t uzura_cmd_create_eq(UzuraCore *core, const struct uz_admin_cmd *cmd,
                            struct uz_admin_cqe *cqe)
{
    const struct uz_cmd_create_eq *c = &cmd->create_eq;
    uint32_t eqn, db_offset;
    uint64_t ring = le64_to_cpu(c->ring_addr);
    uint16_t vector = le16_to_cpu(c->vector);
    bool async = c->flags & UZ_EQ_F_ASYNC;
    UzuraEq *eq = NULL;
    unsigned i;

    if (c->log_depth < UZ_EQ_DEPTH_MIN || c->log_depth > UZ_EQ_DEPTH_MAX) {
        trace_uzura_eq_err_depth(c->log_depth, UZ_EQ_DEPTH_MIN,
                                 UZ_EQ_DEPTH_MAX);
        return UZ_CMD_BAD_PARAM;
    }
    if (vector >= core->num_vectors) {
        trace_uzura_eq_err_vector(vector, core->num_vectors);
        return UZ_CMD_BAD_PARAM;
    }
    if (c->flags & ~UZ_EQ_F_ASYNC) {
        trace_uzura_eq_err_flags(c->flags);
        return UZ_CMD_BAD_PARAM;
    }
    if (!uzura_dma_ok(core, ring, sizeof(struct uz_eqe) << c->log_depth,
                      true)) {
        trace_uzura_eq_err_ring(ring, c->log_depth);
        return UZ_CMD_BAD_ADDR;
    }
    for (i = 0; i < UZ_MAX_EQ; i++) {
        if (async && core->eq[i].valid && core->eq[i].async) {
            trace_uzura_eq_err_async_exists(i);
            return UZ_CMD_EXISTS;
        }
    }
    for (i = 0; i < UZ_MAX_EQ && !eq; i++) {
        if (!core->eq[i].valid) {
            eq = &core->eq[i];
        }
    }
    if (!eq) {
        trace_uzura_eq_err_full(UZ_MAX_EQ);
        return UZ_CMD_NO_RESOURCES;
    }
    eqn = eq - core->eq;
    if (!uzura_db_alloc(core, 0, UZ_DBK_EQ, eqn, &db_offset)) {
        trace_uzura_eq_err_db_slot(eqn);
        return UZ_CMD_NO_RESOURCES;
    }
    *eq = (UzuraEq) {
        .valid = true,
        .async = async,
        .ring_addr = ring,
        .log_depth = c->log_depth,
        .vector = vector,
        .db_offset = db_offset,
    };
    trace_uzura_eq_create(eqn, ring, c->log_depth, vector, async);
    cqe->out0 = cpu_to_le32(eqn);
    cqe->out1 = cpu_to_le32(db_offset);
    return UZ_CMD_OK;
}

uint8_t uzura_cmd_destroy_eq(UzuraCore *core, const struct uz_admin_cmd *cmd,
                             struct uz_admin_cqe *cqe)
{
    uint32_t eqn = le32_to_cpu(cmd->destroy.handle);
    UzuraEq *eq = uzura_eq_lookup(core, eqn);

    if (!eq) {
        trace_uzura_eq_err_handle(eqn);
        return UZ_CMD_BAD_HANDLE;
    }
    if (eq->users) {
        trace_uzura_eq_err_busy(eqn, eq->users);
        return UZ_CMD_BUSY;
    }
    uzura_db_free(core, eq->db_offset);
    memset(eq, 0, sizeof(*eq));
    trace_uzura_eq_destroy(eqn);
    return UZ_CMD_OK;
}

/* Queues that post to an EQ hold a reference, so it cannot go first. */
bool uzura_eq_get(UzuraCore *core, uint32_t eqn)
{
    UzuraEq *eq = uzura_eq_lookup(core, eqn);

    if (eq) {
        eq->users++;
    }
    return eq;
}

void uzura_eq_put(UzuraCore *core, uint32_t eqn)
{
    UzuraEq *eq = uzura_eq_lookup(core, eqn);

    if (eq && eq->users) {
        eq->users--;
    }
}

void uzura_eq_reset(UzuraCore *core)
{
    memset(core->eq, 0, sizeof(core->eq));
}
