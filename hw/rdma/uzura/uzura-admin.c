/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uzura RDMA NIC: the admin queue.
 *
 * Commands are read from the command ring and executed in a bottom half,
 * never on the vCPU that rang the doorbell.  Each command gets exactly one
 * completion with a status; a command the device cannot even read stops
 * the queue (ADMIN_STATUS.ERROR) and raises a fatal async event.
 */
#include "qemu/osdep.h"
#include "qemu/main-loop.h"
#include "uzura-core.h"
#include "trace.h"

#define UZ_ADMIN_BUDGET     64      /* commands per bottom-half run */

typedef uint8_t (*UzuraCmdHandler)(UzuraCore *core,
                                   const struct uz_admin_cmd *cmd,
                                   struct uz_admin_cqe *cqe);

static uint32_t uzura_admin_size(UzuraCore *core)
{
    return 1u << core->admin.log_depth;
}

static uint8_t uzura_cmd_query_device(UzuraCore *core,
                                      const struct uz_admin_cmd *cmd,
                                      struct uz_admin_cqe *cqe)
{
    const struct uz_cmd_query_device *q = &cmd->query_device;
    struct uz_device_attr attr = {
        .version = cpu_to_le32(UZ_VERSION),
        .caps = cpu_to_le32(UZURA_CAPS),
        .mtu = cpu_to_le32(core->mtu),
        .max_mtu = cpu_to_le32(UZ_MAX_MTU),
        .num_vectors = cpu_to_le32(core->num_vectors),
        .db_pages = cpu_to_le32(core->db_pages),
        .max_eq = cpu_to_le32(UZ_MAX_EQ),
        .max_eq_depth = cpu_to_le32(1u << UZ_EQ_DEPTH_MAX),
        .max_eth_depth = cpu_to_le32(1u << UZ_ETH_DEPTH_MAX),
    };

    if (le32_to_cpu(q->buf_len) < sizeof(attr)) {
        return UZ_CMD_BAD_PARAM;
    }
    memcpy(attr.mac, core->mac, sizeof(attr.mac));
    uzura_rdma_fill_attr(core, &attr);
    if (!uzura_dma_write(core, le64_to_cpu(q->buf_addr), &attr,
                         sizeof(attr))) {
        return UZ_CMD_BAD_ADDR;
    }
    cqe->out0 = cpu_to_le32(sizeof(attr));
    return UZ_CMD_OK;
}

static uint8_t uzura_cmd_set_mac(UzuraCore *core,
                                 const struct uz_admin_cmd *cmd,
                                 struct uz_admin_cqe *cqe)
{
    static const uint8_t zero[6];
    const uint8_t *mac = cmd->set_mac.mac;

    if ((mac[0] & 1) || !memcmp(mac, zero, sizeof(zero))) {
        return UZ_CMD_BAD_PARAM;
    }
    memcpy(core->mac, mac, sizeof(core->mac));
    return UZ_CMD_OK;
}

static uint8_t uzura_cmd_set_mtu(UzuraCore *core,
                                 const struct uz_admin_cmd *cmd,
                                 struct uz_admin_cqe *cqe)
{
    uint32_t mtu = le32_to_cpu(cmd->set_mtu.mtu);

    if (mtu < UZ_MIN_MTU || mtu > UZ_MAX_MTU) {
        return UZ_CMD_BAD_PARAM;
    }
    core->mtu = mtu;
    return UZ_CMD_OK;
}

static uint8_t uzura_cmd_create_eq(UzuraCore *core,
                                   const struct uz_admin_cmd *cmd,
                                   struct uz_admin_cqe *cqe)
{
    uint32_t eqn = 0, db = 0;
    uint8_t st = uzura_eq_create(core, &cmd->create_eq, &eqn, &db);

    cqe->out0 = cpu_to_le32(eqn);
    cqe->out1 = cpu_to_le32(db);
    return st;
}

static uint8_t uzura_cmd_destroy_eq(UzuraCore *core,
                                    const struct uz_admin_cmd *cmd,
                                    struct uz_admin_cqe *cqe)
{
    return uzura_eq_destroy(core, le32_to_cpu(cmd->destroy.handle));
}

static uint8_t uzura_cmd_create_eth(UzuraCore *core, bool tx,
                                    const struct uz_admin_cmd *cmd,
                                    struct uz_admin_cqe *cqe)
{
    uint32_t db = 0;
    uint8_t st = uzura_eth_create(core, tx, &cmd->create_eth_queue, &db);

    cqe->out1 = cpu_to_le32(db);
    return st;
}

static uint8_t uzura_cmd_create_eth_txq(UzuraCore *core,
                                        const struct uz_admin_cmd *cmd,
                                        struct uz_admin_cqe *cqe)
{
    return uzura_cmd_create_eth(core, true, cmd, cqe);
}

static uint8_t uzura_cmd_create_eth_rxq(UzuraCore *core,
                                        const struct uz_admin_cmd *cmd,
                                        struct uz_admin_cqe *cqe)
{
    return uzura_cmd_create_eth(core, false, cmd, cqe);
}

static uint8_t uzura_cmd_destroy_eth_txq(UzuraCore *core,
                                         const struct uz_admin_cmd *cmd,
                                         struct uz_admin_cqe *cqe)
{
    return uzura_eth_destroy(core, true, le32_to_cpu(cmd->destroy.handle));
}

static uint8_t uzura_cmd_destroy_eth_rxq(UzuraCore *core,
                                         const struct uz_admin_cmd *cmd,
                                         struct uz_admin_cqe *cqe)
{
    return uzura_eth_destroy(core, false, le32_to_cpu(cmd->destroy.handle));
}

/* RDMA object commands: uzura-obj.c and uzura-qp.c. */
static uint8_t uzura_cmd_rdma(UzuraCore *core, const struct uz_admin_cmd *cmd,
                              struct uz_admin_cqe *cqe)
{
    return uzura_rdma_cmd(core, cmd, cqe);
}

static const UzuraCmdHandler uzura_cmd_handlers[256] = {
    [UZ_CMD_QUERY_DEVICE] = uzura_cmd_query_device,
    [UZ_CMD_SET_MAC] = uzura_cmd_set_mac,
    [UZ_CMD_SET_MTU] = uzura_cmd_set_mtu,
    [UZ_CMD_CREATE_EQ] = uzura_cmd_create_eq,
    [UZ_CMD_DESTROY_EQ] = uzura_cmd_destroy_eq,
    [UZ_CMD_CREATE_ETH_TXQ] = uzura_cmd_create_eth_txq,
    [UZ_CMD_CREATE_ETH_RXQ] = uzura_cmd_create_eth_rxq,
    [UZ_CMD_DESTROY_ETH_TXQ] = uzura_cmd_destroy_eth_txq,
    [UZ_CMD_DESTROY_ETH_RXQ] = uzura_cmd_destroy_eth_rxq,
    [UZ_CMD_RDMA_FIRST ... UZ_CMD_RDMA_LAST] = uzura_cmd_rdma,
};

static void uzura_admin_execute(UzuraCore *core,
                                const struct uz_admin_cmd *cmd,
                                struct uz_admin_cqe *cqe)
{
    UzuraCmdHandler handler = uzura_cmd_handlers[cmd->opcode];
    uint8_t status;

    status = handler ? handler(core, cmd, cqe) : UZ_CMD_BAD_OPCODE;
    cqe->cmd_id = cmd->cmd_id;
    cqe->status = status;
    core->counters.admin_cmds++;
    trace_uzura_admin_cmd(cmd->opcode, le16_to_cpu(cmd->cmd_id), status,
                          le32_to_cpu(cqe->out0), le32_to_cpu(cqe->out1));
    if (status != UZ_CMD_OK) {
        core->counters.admin_errors++;
        uzura_guest_error(trace_uzura_admin_err_cmd(cmd->opcode, status),
                          "admin command 0x%02x (id %u) failed with "
                          "status 0x%02x", cmd->opcode,
                          le16_to_cpu(cmd->cmd_id), status);
    }
}

/* The admin rings became inaccessible: stop and tell the driver. */
static void uzura_admin_fault(UzuraCore *core, uint64_t addr)
{
    uzura_guest_error(trace_uzura_admin_err_dma(addr),
                      "admin ring not accessible at 0x%" PRIx64
                      "; admin queue stopped", addr);
    core->admin.enabled = false;
    core->admin.error = true;
    uzura_eq_post_async(core, UZ_EQE_DEVICE_FATAL, 0, UZ_FATAL_ADMIN_DMA);
}

void uzura_admin_bh(void *opaque)
{
    UzuraCore *core = opaque;
    UzuraAdmin *a = &core->admin;
    unsigned budget = UZ_ADMIN_BUDGET;
    bool done = false;

    while (a->enabled && a->ci != a->pi && budget--) {
        uint32_t pos = a->ci & (uzura_admin_size(core) - 1);
        uint64_t cmd_addr = a->sq_addr + pos * sizeof(struct uz_admin_cmd);
        uint64_t cqe_addr = a->cq_addr + pos * sizeof(struct uz_admin_cqe);
        struct uz_admin_cmd cmd;
        struct uz_admin_cqe cqe = { 0 };

        if (!uzura_dma_read(core, cmd_addr, &cmd, sizeof(cmd))) {
            uzura_admin_fault(core, cmd_addr);
            break;
        }
        uzura_admin_execute(core, &cmd, &cqe);
        /* Phase is 1 on the first pass of the ring, then alternates. */
        if (!((a->ci >> a->log_depth) & 1)) {
            cqe.flags = UZ_ADMIN_CQE_PHASE;
        }
        if (!uzura_dma_write_entry(core, cqe_addr, &cqe, sizeof(cqe))) {
            uzura_admin_fault(core, cqe_addr);
            break;
        }
        a->ci = (a->ci + 1) & UZ_IDX_MASK;
        done = true;
    }
    if (done && a->intr) {
        uzura_irq(core, UZ_MSIX_VEC_ADMIN);
    }
    if (a->enabled && a->ci != a->pi) {
        qemu_bh_schedule(a->bh);
    }
}

void uzura_admin_doorbell(UzuraCore *core, uint32_t index, uint32_t val)
{
    UzuraAdmin *a = &core->admin;
    uint32_t pi = val & UZ_IDX_MASK;

    if (!a->enabled) {
        uzura_guest_error(trace_uzura_admin_err_doorbell(val),
                          "admin doorbell rung while the admin queue is "
                          "disabled");
        uzura_core_record_error(core, UZ_ERR_BAD_STATE, UZ_DB_ADMIN);
        return;
    }
    if (!uzura_ring_pi_ok(pi, a->ci, uzura_admin_size(core))) {
        uzura_guest_error(trace_uzura_admin_err_doorbell(val),
                          "admin doorbell %u overruns the ring (consumed "
                          "%u, %u entries)", pi, a->ci,
                          uzura_admin_size(core));
        uzura_core_record_error(core, UZ_ERR_BAD_VALUE, UZ_DB_ADMIN);
        return;
    }
    a->pi = pi;
    qemu_bh_schedule(a->bh);
}

bool uzura_admin_enable(UzuraCore *core, bool enable, bool intr)
{
    UzuraAdmin *a = &core->admin;
    uint32_t n;

    a->intr = intr;
    if (!enable) {
        a->enabled = false;
        qemu_bh_cancel(a->bh);
        return true;
    }
    if (a->enabled) {
        return true;
    }
    if (a->log_depth < UZ_ADMIN_DEPTH_MIN ||
        a->log_depth > UZ_ADMIN_DEPTH_MAX) {
        return false;
    }
    n = 1u << a->log_depth;
    if (!uzura_dma_ok(core, a->sq_addr, n * sizeof(struct uz_admin_cmd),
                      false) ||
        !uzura_dma_ok(core, a->cq_addr, n * sizeof(struct uz_admin_cqe),
                      true)) {
        return false;
    }
    a->pi = a->ci = 0;
    a->error = false;
    a->enabled = true;
    trace_uzura_admin_enable(a->sq_addr, a->cq_addr, n);
    return true;
}

void uzura_admin_reset(UzuraCore *core)
{
    UzuraAdmin *a = &core->admin;

    qemu_bh_cancel(a->bh);
    a->sq_addr = a->cq_addr = 0;
    a->log_depth = 0;
    a->enabled = a->intr = a->error = false;
    a->pi = a->ci = 0;
}
