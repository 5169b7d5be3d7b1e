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

/*
 * A bottom-half run executes commands until they cost UZ_ADMIN_BUDGET:
 * each UZ_ADMIN_CMD_WORK, and one more per page or entry it walks
 * (uzura_admin_charge), so a ring of commands with long page lists
 * cannot hold the main loop; a single command always runs whole.
 */
#define UZ_ADMIN_CMD_WORK   256
#define UZ_ADMIN_BUDGET     (64 * UZ_ADMIN_CMD_WORK)

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
        .caps = cpu_to_le32(uzura_caps(core)),
        .mtu = cpu_to_le32(core->mtu),
        .max_mtu = cpu_to_le32(UZ_MAX_MTU),
        .num_vectors = cpu_to_le32(core->num_vectors),
        .db_pages = cpu_to_le32(core->db_pages),
        .max_eq = cpu_to_le32(UZ_MAX_EQ),
        .max_eq_depth = cpu_to_le32(1u << UZ_EQ_DEPTH_MAX),
        .max_eth_depth = cpu_to_le32(1u << UZ_ETH_DEPTH_MAX),
    };

    if (le32_to_cpu(q->buf_len) < sizeof(attr)) {
        trace_uzura_admin_err_query_device_len(le32_to_cpu(q->buf_len),
                                               sizeof(attr));
        return UZ_CMD_BAD_PARAM;
    }
    memcpy(attr.mac, core->mac, sizeof(attr.mac));
    uzura_rdma_fill_attr(core, &attr);
    if (!uzura_dma_write(core, le64_to_cpu(q->buf_addr), &attr,
                         sizeof(attr))) {
        trace_uzura_admin_err_query_device_addr(le64_to_cpu(q->buf_addr),
                                                sizeof(attr));
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

    if (mac[0] & 1) {
        trace_uzura_admin_err_set_mac_group((uint64_t)ldl_be_p(mac) << 16 |
                                            lduw_be_p(mac + 4));
        return UZ_CMD_BAD_PARAM;
    }
    if (!memcmp(mac, zero, sizeof(zero))) {
        trace_uzura_admin_err_set_mac_zero();
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
        trace_uzura_admin_err_set_mtu(mtu, UZ_MIN_MTU, UZ_MAX_MTU);
        return UZ_CMD_BAD_PARAM;
    }
    core->mtu = mtu;
    return UZ_CMD_OK;
}

/*
 * The counters by UZ_CNT_* index (uzura_admin_cmds_defs.h; the order is
 * ABI).  Each name is the counter's qom-get property and the driver's
 * hw_counters file: spec section 10.
 */
#define UZ_CNT(idx, field) \
    [UZ_CNT_##idx] = { #field, offsetof(UzuraCounters, field) }
/* RoCE packets and bytes by kind: tx_pkts_send is roce_tx_pkts[SEND]. */
#define UZ_CNT_ROCE(DIR, dir, FAM, fam) \
    [UZ_CNT_##DIR##_##FAM] = { \
        #dir "_" #fam, offsetof(UzuraCounters, roce_##dir[UZ_FAM_##FAM]) }

const UzuraCounterDesc uzura_counter_descs[] = {
    UZ_CNT(TX_FRAMES, tx_frames),
    UZ_CNT(TX_BYTES, tx_bytes),
    UZ_CNT(TX_ERRORS, tx_errors),
    UZ_CNT(RX_FRAMES, rx_frames),
    UZ_CNT(RX_BYTES, rx_bytes),
    UZ_CNT(RX_DROPPED, rx_dropped),
    UZ_CNT(ADMIN_CMDS, admin_cmds),
    UZ_CNT(ADMIN_ERRORS, admin_errors),
    UZ_CNT(EQ_EVENTS, eq_events),
    UZ_CNT(EQ_OVERFLOWS, eq_overflows),
    UZ_CNT(IRQS, irqs),
    UZ_CNT(DOORBELLS, doorbells),
    UZ_CNT(CQES, cqes),
    UZ_CNT(CQES_ERROR, cqes_error),
    UZ_CNT_ROCE(TX_PKTS, tx_pkts, SEND, send),
    UZ_CNT_ROCE(TX_BYTES, tx_bytes, SEND, send),
    UZ_CNT_ROCE(RX_PKTS, rx_pkts, SEND, send),
    UZ_CNT_ROCE(RX_BYTES, rx_bytes, SEND, send),
    UZ_CNT_ROCE(TX_PKTS, tx_pkts, WRITE, write),
    UZ_CNT_ROCE(TX_BYTES, tx_bytes, WRITE, write),
    UZ_CNT_ROCE(RX_PKTS, rx_pkts, WRITE, write),
    UZ_CNT_ROCE(RX_BYTES, rx_bytes, WRITE, write),
    UZ_CNT_ROCE(TX_PKTS, tx_pkts, READ_REQ, read_req),
    UZ_CNT_ROCE(TX_BYTES, tx_bytes, READ_REQ, read_req),
    UZ_CNT_ROCE(RX_PKTS, rx_pkts, READ_REQ, read_req),
    UZ_CNT_ROCE(RX_BYTES, rx_bytes, READ_REQ, read_req),
    UZ_CNT_ROCE(TX_PKTS, tx_pkts, READ_RESP, read_resp),
    UZ_CNT_ROCE(TX_BYTES, tx_bytes, READ_RESP, read_resp),
    UZ_CNT_ROCE(RX_PKTS, rx_pkts, READ_RESP, read_resp),
    UZ_CNT_ROCE(RX_BYTES, rx_bytes, READ_RESP, read_resp),
    UZ_CNT_ROCE(TX_PKTS, tx_pkts, ATOMIC, atomic),
    UZ_CNT_ROCE(TX_BYTES, tx_bytes, ATOMIC, atomic),
    UZ_CNT_ROCE(RX_PKTS, rx_pkts, ATOMIC, atomic),
    UZ_CNT_ROCE(RX_BYTES, rx_bytes, ATOMIC, atomic),
    UZ_CNT_ROCE(TX_PKTS, tx_pkts, ACK, ack),
    UZ_CNT_ROCE(TX_BYTES, tx_bytes, ACK, ack),
    UZ_CNT_ROCE(RX_PKTS, rx_pkts, ACK, ack),
    UZ_CNT_ROCE(RX_BYTES, rx_bytes, ACK, ack),
    UZ_CNT_ROCE(TX_PKTS, tx_pkts, UD, ud),
    UZ_CNT_ROCE(TX_BYTES, tx_bytes, UD, ud),
    UZ_CNT_ROCE(RX_PKTS, rx_pkts, UD, ud),
    UZ_CNT_ROCE(RX_BYTES, rx_bytes, UD, ud),
    UZ_CNT_ROCE(TX_PKTS, tx_pkts, CRW, crw),
    UZ_CNT_ROCE(TX_BYTES, tx_bytes, CRW, crw),
    UZ_CNT_ROCE(RX_PKTS, rx_pkts, CRW, crw),
    UZ_CNT_ROCE(RX_BYTES, rx_bytes, CRW, crw),
    UZ_CNT(RETRANSMITS, retransmits),
    UZ_CNT(RETRY_TIMEOUTS, retry_timeouts),
    UZ_CNT(NAKS_SENT, naks_sent),
    UZ_CNT(NAKS_RCVD, naks_rcvd),
    UZ_CNT(NAK_SEQ_SENT, nak_seq_sent),
    UZ_CNT(NAK_SEQ_RCVD, nak_seq_rcvd),
    UZ_CNT(NAK_INV_REQ_RCVD, nak_inv_req_rcvd),
    UZ_CNT(NAK_REM_ACCESS_RCVD, nak_rem_access_rcvd),
    UZ_CNT(NAK_REM_OP_RCVD, nak_rem_op_rcvd),
    UZ_CNT(RNR_NAKS_SENT, rnr_naks_sent),
    UZ_CNT(RNR_NAKS_RCVD, rnr_naks_rcvd),
    UZ_CNT(ACKS_COALESCED, acks_coalesced),
    UZ_CNT(DUPLICATES, duplicates),
    UZ_CNT(ICRC_ERRORS, icrc_errors),
    UZ_CNT(RX_MALFORMED, rx_malformed),
    UZ_CNT(RX_NO_QP, rx_no_qp),
    UZ_CNT(RX_QKEY_ERRORS, rx_qkey_errors),
    UZ_CNT(RX_UD_NO_WQE, rx_ud_no_wqe),
    UZ_CNT(RX_UD_TOO_LONG, rx_ud_too_long),
    UZ_CNT(SACKS_SENT, sacks_sent),
    UZ_CNT(SACKS_RCVD, sacks_rcvd),
    UZ_CNT(SR_KEPT, sr_kept),
    UZ_CNT(SR_RESENT, sr_resent),
    UZ_CNT(XLAT_FAULTS, xlat_faults),
    UZ_CNT(XLAT_INVALIDATIONS, xlat_invalidations),
    UZ_CNT(UC_DROPPED, uc_dropped),
    UZ_CNT(RX_MCAST, rx_mcast),
    UZ_CNT(SQ_SHADOW_TAKES, sq_shadow_takes),
    UZ_CNT(RX_STALE, rx_stale),
    UZ_CNT(ROCE_TX_DROPPED, roce_tx_dropped),
    UZ_CNT(XLAT_HITS, xlat_hits),
    UZ_CNT(XLAT_MISSES, xlat_misses),
    UZ_CNT(XLAT_EVICTIONS, xlat_evictions),
    UZ_CNT(CRW_PARKED, crw_parked),
    UZ_CNT(CRW_OFFERS, crw_offers),
    UZ_CNT(CRW_MATCHED_CRW_FIRST, crw_matched_crw_first),
    UZ_CNT(CRW_MATCHED_STCRW_FIRST, crw_matched_stcrw_first),
    UZ_CNT(CRW_FLUSHED, crw_flushed),
    UZ_CNT(CRW_ERRORS, crw_errors),
    UZ_CNT(FAULT_DROPS, fault_drops),
    UZ_CNT(FAULT_CORRUPTS, fault_corrupts),
    UZ_CNT(FAULT_DUPS, fault_dups),
    UZ_CNT(FAULT_REORDERS, fault_reorders),
    UZ_CNT(FAULT_DELAYED, fault_delayed),
    UZ_CNT(LOOP_FRAMES, loop_frames),
    UZ_CNT(LOOP_DROPPED, loop_dropped),
    UZ_CNT(RX_NOT_OURS, rx_not_ours),
    UZ_CNT(NP_ECN_MARKED_ROCE_PACKETS, np_ecn_marked_roce_packets),
    UZ_CNT(NP_CNP_SENT, np_cnp_sent),
    UZ_CNT(RP_CNP_HANDLED, rp_cnp_handled),
    UZ_CNT(RP_CNP_IGNORED, rp_cnp_ignored),
    UZ_CNT(RX_OUT_OF_BUFFER, rx_out_of_buffer),
    UZ_CNT(RX_PAUSE_CTRL_PHY, rx_pause_ctrl_phy),
    UZ_CNT(RX_PAUSE_TRANSITION, rx_pause_transition),
    UZ_CNT(RX_PAUSE_DURATION, rx_pause_duration),
};

#undef UZ_CNT
#undef UZ_CNT_ROCE

/*
 * A snapshot of min(buf_len / 8, UZ_CNT_NUM) counters, taken before this
 * command itself counts in admin_cmds: out0 says how many were written,
 * out1 how many the device has.
 */
static uint8_t uzura_cmd_query_counters(UzuraCore *core,
                                        const struct uz_admin_cmd *cmd,
                                        struct uz_admin_cqe *cqe)
{
    const struct uz_cmd_query *q = (const void *)cmd->raw;
    uint32_t len = le32_to_cpu(q->buf_len);
    uint64_t addr = le64_to_cpu(q->buf_addr);
    uint64_t vals[UZ_CNT_NUM];
    uint32_t n, i;

    if (!len) {
        trace_uzura_admin_err_query_counters_len_zero();
        return UZ_CMD_BAD_PARAM;
    }
    if (len % sizeof(vals[0])) {
        trace_uzura_admin_err_query_counters_len(len, sizeof(vals[0]));
        return UZ_CMD_BAD_PARAM;
    }
    n = MIN(len / sizeof(vals[0]), UZ_CNT_NUM);
    /* All or nothing: no partial write into a buffer that ends early. */
    if (!uzura_dma_ok(core, addr, n * sizeof(vals[0]), true)) {
        trace_uzura_admin_err_query_counters_addr(addr, n * sizeof(vals[0]));
        return UZ_CMD_BAD_ADDR;
    }
    for (i = 0; i < n; i++) {
        vals[i] = cpu_to_le64(*uzura_counter(&core->counters, i));
    }
    if (!uzura_dma_write(core, addr, vals, n * sizeof(vals[0]))) {
        trace_uzura_admin_err_query_counters_dma(addr, n * sizeof(vals[0]));
        return UZ_CMD_BAD_ADDR;
    }
    cqe->out0 = cpu_to_le32(n);
    cqe->out1 = cpu_to_le32(UZ_CNT_NUM);
    return UZ_CMD_OK;
}

/* Every command, by opcode: the handlers live with their objects. */
static UzuraCmdFn *const uzura_cmd_handlers[256] = {
    [UZ_CMD_QUERY_DEVICE] = uzura_cmd_query_device,
    [UZ_CMD_SET_MAC] = uzura_cmd_set_mac,
    [UZ_CMD_SET_MTU] = uzura_cmd_set_mtu,
    [UZ_CMD_CREATE_EQ] = uzura_cmd_create_eq,
    [UZ_CMD_DESTROY_EQ] = uzura_cmd_destroy_eq,
    [UZ_CMD_CREATE_ETH_TXQ] = uzura_cmd_create_eth_txq,
    [UZ_CMD_CREATE_ETH_RXQ] = uzura_cmd_create_eth_rxq,
    [UZ_CMD_DESTROY_ETH_TXQ] = uzura_cmd_destroy_eth_txq,
    [UZ_CMD_DESTROY_ETH_RXQ] = uzura_cmd_destroy_eth_rxq,
    [UZ_CMD_CREATE_UCTX] = uzura_cmd_create_uctx,
    [UZ_CMD_DESTROY_UCTX] = uzura_cmd_destroy_uctx,
    [UZ_CMD_ALLOC_PD] = uzura_cmd_alloc_pd,
    [UZ_CMD_DEALLOC_PD] = uzura_cmd_dealloc_pd,
    [UZ_CMD_CREATE_CQ] = uzura_cmd_create_cq,
    [UZ_CMD_DESTROY_CQ] = uzura_cmd_destroy_cq,
    [UZ_CMD_CREATE_QP] = uzura_cmd_create_qp,
    [UZ_CMD_MODIFY_QP] = uzura_cmd_modify_qp,
    [UZ_CMD_QUERY_QP] = uzura_cmd_query_qp,
    [UZ_CMD_DESTROY_QP] = uzura_cmd_destroy_qp,
    [UZ_CMD_CREATE_SRQ] = uzura_cmd_create_srq,
    [UZ_CMD_MODIFY_SRQ] = uzura_cmd_modify_srq,
    [UZ_CMD_DESTROY_SRQ] = uzura_cmd_destroy_srq,
    [UZ_CMD_REG_MR] = uzura_cmd_reg_mr,
    [UZ_CMD_DEREG_MR] = uzura_cmd_dereg_mr,
    [UZ_CMD_CREATE_AH] = uzura_cmd_create_ah,
    [UZ_CMD_DESTROY_AH] = uzura_cmd_destroy_ah,
    [UZ_CMD_QUERY_COUNTERS] = uzura_cmd_query_counters,
    [UZ_CMD_INVALIDATE_XLAT] = uzura_cmd_invalidate_xlat,
    [UZ_CMD_RESIZE_CQ] = uzura_cmd_resize_cq,
    [UZ_CMD_REREG_MR] = uzura_cmd_rereg_mr,
    [UZ_CMD_ALLOC_MW] = uzura_cmd_alloc_mw,
    [UZ_CMD_DEALLOC_MW] = uzura_cmd_dealloc_mw,
    [UZ_CMD_PAGE_RESUME] = uzura_cmd_page_resume,
    [UZ_CMD_ATTACH_MCAST] = uzura_cmd_attach_mcast,
    [UZ_CMD_DETACH_MCAST] = uzura_cmd_detach_mcast,
    [UZ_CMD_RESIZE_SRQ] = uzura_cmd_resize_srq,
    [UZ_CMD_ALLOC_XRCD] = uzura_cmd_alloc_xrcd,
    [UZ_CMD_DEALLOC_XRCD] = uzura_cmd_dealloc_xrcd,
    [UZ_CMD_ALLOC_DM] = uzura_cmd_alloc_dm,
    [UZ_CMD_DEALLOC_DM] = uzura_cmd_dealloc_dm,
    [UZ_CMD_CREATE_FLOW] = uzura_cmd_create_flow,
    [UZ_CMD_DESTROY_FLOW] = uzura_cmd_destroy_flow,
};

static void uzura_admin_execute(UzuraCore *core,
                                const struct uz_admin_cmd *cmd,
                                struct uz_admin_cqe *cqe)
{
    UzuraCmdFn *handler = uzura_cmd_handlers[cmd->opcode];
    uint8_t status;

    if (handler) {
        status = handler(core, cmd, cqe);
    } else if (cmd->opcode >= UZ_CMD_RDMA_FIRST &&
               cmd->opcode <= UZ_CMD_RDMA_LAST) {
        trace_uzura_admin_err_opcode_rdma(cmd->opcode, UZ_CMD_RDMA_FIRST,
                                          UZ_CMD_RDMA_LAST);
        status = UZ_CMD_NOT_SUPPORTED;  /* reserved for RDMA commands */
    } else {
        trace_uzura_admin_err_opcode(cmd->opcode);
        status = UZ_CMD_BAD_OPCODE;
    }
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

/* The command running walked @n pages or entries more. */
void uzura_admin_charge(UzuraCore *core, uint32_t n)
{
    core->admin.work = MIN((uint64_t)core->admin.work + n, UZ_ADMIN_BUDGET);
}

void uzura_admin_bh(void *opaque)
{
    UzuraCore *core = opaque;
    UzuraAdmin *a = &core->admin;
    uint32_t spent = 0;
    bool done = false, g = uzura_enter(core);

    while (a->enabled && a->ci != a->pi && spent < UZ_ADMIN_BUDGET) {
        uint32_t pos = a->ci & (uzura_admin_size(core) - 1);
        uint64_t cmd_addr = a->sq_addr + pos * sizeof(struct uz_admin_cmd);
        uint64_t cqe_addr = a->cq_addr + pos * sizeof(struct uz_admin_cqe);
        struct uz_admin_cmd cmd;
        struct uz_admin_cqe cqe = { 0 };

        if (!uzura_dma_read(core, cmd_addr, &cmd, sizeof(cmd))) {
            uzura_admin_fault(core, cmd_addr);
            break;
        }
        a->work = UZ_ADMIN_CMD_WORK;
        uzura_admin_execute(core, &cmd, &cqe);
        spent += a->work;
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
        a->yields++;
        trace_uzura_admin_yield(a->ci, a->pi, spent);
        qemu_bh_schedule(a->bh);
    }
    uzura_leave(core, g);
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
