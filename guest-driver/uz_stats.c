// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * uzura RDMA NIC driver: the NIC's counters as ib_core hw counters.
 *
 * The device keeps its counters (spec section 10) and writes them, by
 * their UZ_CNT_* index, into a DMA buffer on UZ_CMD_QUERY_COUNTERS.  They
 * appear as the port's hw counters, under the device's own names:
 * /sys/class/infiniband/<ibdev>/ports/1/hw_counters/<name> and
 * `rdma statistic show`.  ib_core caches the values for a lifespan
 * (10 ms), so a burst of reads costs one admin command.
 */
#include <linux/dma-mapping.h>
#include <linux/minmax.h>

#include "uz.h"

/* The names are ABI: the provider and users read the files by name. */
static const struct rdma_stat_desc uz_stat_descs[] = {
	[UZ_CNT_TX_FRAMES].name = "tx_frames",
	[UZ_CNT_TX_BYTES].name = "tx_bytes",
	[UZ_CNT_TX_ERRORS].name = "tx_errors",
	[UZ_CNT_RX_FRAMES].name = "rx_frames",
	[UZ_CNT_RX_BYTES].name = "rx_bytes",
	[UZ_CNT_RX_DROPPED].name = "rx_dropped",
	[UZ_CNT_ADMIN_CMDS].name = "admin_cmds",
	[UZ_CNT_ADMIN_ERRORS].name = "admin_errors",
	[UZ_CNT_EQ_EVENTS].name = "eq_events",
	[UZ_CNT_EQ_OVERFLOWS].name = "eq_overflows",
	[UZ_CNT_IRQS].name = "irqs",
	[UZ_CNT_DOORBELLS].name = "doorbells",
	[UZ_CNT_CQES].name = "cqes",
	[UZ_CNT_CQES_ERROR].name = "cqes_error",
	[UZ_CNT_TX_PKTS_SEND].name = "tx_pkts_send",
	[UZ_CNT_TX_BYTES_SEND].name = "tx_bytes_send",
	[UZ_CNT_RX_PKTS_SEND].name = "rx_pkts_send",
	[UZ_CNT_RX_BYTES_SEND].name = "rx_bytes_send",
	[UZ_CNT_TX_PKTS_WRITE].name = "tx_pkts_write",
	[UZ_CNT_TX_BYTES_WRITE].name = "tx_bytes_write",
	[UZ_CNT_RX_PKTS_WRITE].name = "rx_pkts_write",
	[UZ_CNT_RX_BYTES_WRITE].name = "rx_bytes_write",
	[UZ_CNT_TX_PKTS_READ_REQ].name = "tx_pkts_read_req",
	[UZ_CNT_TX_BYTES_READ_REQ].name = "tx_bytes_read_req",
	[UZ_CNT_RX_PKTS_READ_REQ].name = "rx_pkts_read_req",
	[UZ_CNT_RX_BYTES_READ_REQ].name = "rx_bytes_read_req",
	[UZ_CNT_TX_PKTS_READ_RESP].name = "tx_pkts_read_resp",
	[UZ_CNT_TX_BYTES_READ_RESP].name = "tx_bytes_read_resp",
	[UZ_CNT_RX_PKTS_READ_RESP].name = "rx_pkts_read_resp",
	[UZ_CNT_RX_BYTES_READ_RESP].name = "rx_bytes_read_resp",
	[UZ_CNT_TX_PKTS_ATOMIC].name = "tx_pkts_atomic",
	[UZ_CNT_TX_BYTES_ATOMIC].name = "tx_bytes_atomic",
	[UZ_CNT_RX_PKTS_ATOMIC].name = "rx_pkts_atomic",
	[UZ_CNT_RX_BYTES_ATOMIC].name = "rx_bytes_atomic",
	[UZ_CNT_TX_PKTS_ACK].name = "tx_pkts_ack",
	[UZ_CNT_TX_BYTES_ACK].name = "tx_bytes_ack",
	[UZ_CNT_RX_PKTS_ACK].name = "rx_pkts_ack",
	[UZ_CNT_RX_BYTES_ACK].name = "rx_bytes_ack",
	[UZ_CNT_TX_PKTS_UD].name = "tx_pkts_ud",
	[UZ_CNT_TX_BYTES_UD].name = "tx_bytes_ud",
	[UZ_CNT_RX_PKTS_UD].name = "rx_pkts_ud",
	[UZ_CNT_RX_BYTES_UD].name = "rx_bytes_ud",
	[UZ_CNT_TX_PKTS_CRW].name = "tx_pkts_crw",
	[UZ_CNT_TX_BYTES_CRW].name = "tx_bytes_crw",
	[UZ_CNT_RX_PKTS_CRW].name = "rx_pkts_crw",
	[UZ_CNT_RX_BYTES_CRW].name = "rx_bytes_crw",
	[UZ_CNT_RETRANSMITS].name = "retransmits",
	[UZ_CNT_RETRY_TIMEOUTS].name = "retry_timeouts",
	[UZ_CNT_NAKS_SENT].name = "naks_sent",
	[UZ_CNT_NAKS_RCVD].name = "naks_rcvd",
	[UZ_CNT_NAK_SEQ_SENT].name = "nak_seq_sent",
	[UZ_CNT_NAK_SEQ_RCVD].name = "nak_seq_rcvd",
	[UZ_CNT_NAK_INV_REQ_RCVD].name = "nak_inv_req_rcvd",
	[UZ_CNT_NAK_REM_ACCESS_RCVD].name = "nak_rem_access_rcvd",
	[UZ_CNT_NAK_REM_OP_RCVD].name = "nak_rem_op_rcvd",
	[UZ_CNT_RNR_NAKS_SENT].name = "rnr_naks_sent",
	[UZ_CNT_RNR_NAKS_RCVD].name = "rnr_naks_rcvd",
	[UZ_CNT_ACKS_COALESCED].name = "acks_coalesced",
	[UZ_CNT_DUPLICATES].name = "duplicates",
	[UZ_CNT_ICRC_ERRORS].name = "icrc_errors",
	[UZ_CNT_RX_MALFORMED].name = "rx_malformed",
	[UZ_CNT_RX_NO_QP].name = "rx_no_qp",
	[UZ_CNT_RX_QKEY_ERRORS].name = "rx_qkey_errors",
	[UZ_CNT_RX_UD_NO_WQE].name = "rx_ud_no_wqe",
	[UZ_CNT_RX_STALE].name = "rx_stale",
	[UZ_CNT_ROCE_TX_DROPPED].name = "roce_tx_dropped",
	[UZ_CNT_XLAT_HITS].name = "xlat_hits",
	[UZ_CNT_XLAT_MISSES].name = "xlat_misses",
	[UZ_CNT_XLAT_EVICTIONS].name = "xlat_evictions",
	[UZ_CNT_CRW_PARKED].name = "crw_parked",
	[UZ_CNT_CRW_OFFERS].name = "crw_offers",
	[UZ_CNT_CRW_MATCHED_CRW_FIRST].name = "crw_matched_crw_first",
	[UZ_CNT_CRW_MATCHED_STCRW_FIRST].name = "crw_matched_stcrw_first",
	[UZ_CNT_CRW_FLUSHED].name = "crw_flushed",
	[UZ_CNT_CRW_ERRORS].name = "crw_errors",
	[UZ_CNT_FAULT_DROPS].name = "fault_drops",
	[UZ_CNT_FAULT_CORRUPTS].name = "fault_corrupts",
	[UZ_CNT_FAULT_DUPS].name = "fault_dups",
	[UZ_CNT_FAULT_REORDERS].name = "fault_reorders",
	[UZ_CNT_FAULT_DELAYED].name = "fault_delayed",
	[UZ_CNT_LOOP_FRAMES].name = "loop_frames",
	[UZ_CNT_LOOP_DROPPED].name = "loop_dropped",
	[UZ_CNT_RX_NOT_OURS].name = "rx_not_ours",
	[UZ_CNT_NP_ECN_MARKED_ROCE_PACKETS].name = "np_ecn_marked_roce_packets",
	[UZ_CNT_NP_CNP_SENT].name = "np_cnp_sent",
	[UZ_CNT_RP_CNP_HANDLED].name = "rp_cnp_handled",
	[UZ_CNT_RP_CNP_IGNORED].name = "rp_cnp_ignored",
	[UZ_CNT_RX_OUT_OF_BUFFER].name = "rx_out_of_buffer",
	[UZ_CNT_RX_PAUSE_CTRL_PHY].name = "rx_pause_ctrl_phy",
	[UZ_CNT_RX_PAUSE_TRANSITION].name = "rx_pause_transition",
	[UZ_CNT_RX_PAUSE_DURATION].name = "rx_pause_duration",
	[UZ_CNT_RX_UD_TOO_LONG].name = "rx_ud_too_long",
	[UZ_CNT_SACKS_SENT].name = "sacks_sent",
	[UZ_CNT_SACKS_RCVD].name = "sacks_rcvd",
	[UZ_CNT_SR_KEPT].name = "sr_kept",
	[UZ_CNT_SR_RESENT].name = "sr_resent",
	[UZ_CNT_XLAT_FAULTS].name = "xlat_faults",
	[UZ_CNT_XLAT_INVALIDATIONS].name = "xlat_invalidations",
	[UZ_CNT_UC_DROPPED].name = "uc_dropped",
	[UZ_CNT_RX_MCAST].name = "rx_mcast",
	[UZ_CNT_SQ_SHADOW_TAKES].name = "sq_shadow_takes",
};

static_assert(ARRAY_SIZE(uz_stat_descs) == UZ_CNT_NUM);

/*
 * The buffer the device writes the counters into, one query at a time.
 * It lives as long as the device is bound, so even the late answer to a
 * query that timed out lands in it.
 */
int uz_stats_init(struct uz_ibdev *ib)
{
	struct device *dev = &ib->uz->pdev->dev;

	mutex_init(&ib->stats_lock);
	ib->stats_buf = dmam_alloc_coherent(dev, UZ_CNT_NUM * sizeof(__le64),
					    &ib->stats_dma, GFP_KERNEL);
	return ib->stats_buf ? 0 : -ENOMEM;
}

struct rdma_hw_stats *uz_alloc_hw_port_stats(struct ib_device *ibdev,
					     u32 port)
{
	return rdma_alloc_hw_stats_struct(uz_stat_descs,
					  ARRAY_SIZE(uz_stat_descs),
					  RDMA_HW_STATS_DEFAULT_LIFESPAN);
}

/*
 * All counters at once, whatever @index asks for.  A device that has
 * fewer counters than the driver knows leaves the others at 0.
 */
int uz_get_hw_stats(struct ib_device *ibdev, struct rdma_hw_stats *stats,
		    u32 port, int index)
{
	struct uz_ibdev *ib = to_uzib(ibdev);
	struct uz_admin_cmd cmd = { .opcode = UZ_CMD_QUERY_COUNTERS };
	struct uz_cmd_query *q = (struct uz_cmd_query *)cmd.raw;
	u32 num = min_t(u32, stats->num_counters, UZ_CNT_NUM);
	struct uz_admin_cqe cqe;
	u32 i, n;
	int err;

	q->buf_addr = cpu_to_le64(ib->stats_dma);
	q->buf_len = cpu_to_le32(num * sizeof(__le64));
	mutex_lock(&ib->stats_lock);
	err = uz_admin_exec(ib->uz, &cmd, &cqe);
	if (err) {
		ibdev_dbg(ibdev, "QUERY_COUNTERS failed: %d\n", err);
		goto out;
	}
	n = min(le32_to_cpu(cqe.out0), num);
	for (i = 0; i < n; i++)
		stats->value[i] = le64_to_cpu(ib->stats_buf[i]);
	err = stats->num_counters;
out:
	mutex_unlock(&ib->stats_lock);
	return err;
}
