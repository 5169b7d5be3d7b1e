// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Host unit test of the hardware-interface header: it compiles as strict
 * C11 user space code (as the provider will use it), and its register map
 * is consistent: every register aligned, inside BAR 0, and unique.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "uzura_regs_defs.h"
#include "uzura_admin_defs.h"
#include "uzura_admin_cmds_defs.h"
#include "uzura_io_defs.h"
#include "uzura_roce_defs.h"
#include "tap.h"

static const unsigned int regs[] = {
	UZ_REG_MAGIC, UZ_REG_VERSION, UZ_REG_CAPS, UZ_REG_NUM_VECTORS,
	UZ_REG_STATUS, UZ_REG_RESET, UZ_REG_MAC_LO, UZ_REG_MAC_HI,
	UZ_REG_SCRATCH, UZ_REG_ERR_STATUS, UZ_REG_ERR_COUNT, UZ_REG_ERR_ADDR,
	UZ_REG_DB_PAGES, UZ_REG_LINK_SPEED, UZ_REG_ADMIN_SQ_LO,
	UZ_REG_ADMIN_SQ_HI, UZ_REG_ADMIN_CQ_LO, UZ_REG_ADMIN_CQ_HI,
	UZ_REG_ADMIN_DEPTH, UZ_REG_ADMIN_CTRL, UZ_REG_ADMIN_STATUS,
	UZ_REG_ADMIN_CI,
};

int main(void)
{
	unsigned int n = sizeof(regs) / sizeof(regs[0]);
	int aligned = 1, inside = 1, unique = 1, last = 1;
	unsigned int i, j;

	for (i = 0; i < n; i++) {
		aligned &= (regs[i] & 3) == 0;
		inside &= regs[i] + 4 <= UZ_BAR_REGS_SIZE;
		last &= regs[i] <= UZ_REG_LAST;
		for (j = i + 1; j < n; j++)
			unique &= regs[i] != regs[j];
	}
	CHECK(aligned);
	CHECK(inside);
	CHECK(unique);
	CHECK(last);
	CHECK(memcmp((const char[]){ 'U', 'Z', 'R', 'A' },
		     &(const unsigned int){ UZ_MAGIC }, 4) == 0);
	CHECK(UZ_MSIX_PBA_OFFSET >= UZ_MSIX_TABLE_OFFSET +
	      16 * UZ_MSIX_MAX_VECTORS);
	CHECK(UZ_MSIX_PBA_OFFSET + UZ_MSIX_MAX_VECTORS / 8 <= UZ_BAR_MSIX_SIZE);
	CHECK(UZ_BAR_REGS != UZ_BAR_MSIX);
	CHECK((UZ_STATUS_READY & UZ_STATUS_LINK_UP) == 0);
	/* The device writes a ring entry's last word last: phase lives there. */
	CHECK(offsetof(struct uz_admin_cqe, flags) == 15);
	CHECK(offsetof(struct uz_eqe, flags) == 12);
	CHECK(offsetof(struct uz_cqe, flags) == 31);
	CHECK(offsetof(struct uz_eth_desc, status) == 12);
	/* The admin payload starts after the 8-byte command header. */
	CHECK(offsetof(struct uz_admin_cmd, raw) == 8);
	CHECK(offsetof(struct uz_send_wqe, opcode) == 8);
	CHECK(UZ_ETH_FRAME_MAX(UZ_MAX_MTU) == 9018);
	CHECK(UZ_DB_ADMIN == 0 && UZ_DB_SLOTS_PER_PAGE == 1024);
	/* Completion statuses are the InfiniBand (ibv_wc_status) values. */
	CHECK(UZ_WC_STATUS_WR_FLUSH_ERR == 5 && UZ_WC_STATUS_REM_ACCESS_ERR == 10);
	CHECK(UZ_WC_STATUS_RNR_RETRY_EXC_ERR == 13 &&
	      UZ_WC_STATUS_REM_ABORT_ERR == 16 && UZ_WC_STATUS_FATAL_ERR == 19 &&
	      UZ_WC_STATUS_GENERAL_ERR == 21);
	/*
	 * Counter indices are ABI (spec 10.2): pinned at both ends and at
	 * the edges of the blocks, four counters for each RoCE kind.
	 */
	CHECK(UZ_CNT_TX_FRAMES == 0 && UZ_CNT_CQES_ERROR == 13);
	CHECK(UZ_CNT_TX_PKTS_SEND == 14 && UZ_CNT_RX_BYTES_CRW == 45);
	CHECK(UZ_CNT_TX_PKTS_WRITE - UZ_CNT_TX_PKTS_SEND == 4 &&
	      UZ_CNT_TX_PKTS_CRW - UZ_CNT_TX_PKTS_UD == 4);
	CHECK(UZ_CNT_RETRANSMITS == 46 && UZ_CNT_FAULT_DELAYED == 79);
	CHECK(UZ_CNT_LOOP_FRAMES == 80 && UZ_CNT_LOOP_DROPPED == 81);
	CHECK(UZ_CNT_RX_UD_TOO_LONG == 82 && UZ_CNT_SACKS_SENT == 83);
	CHECK(UZ_CNT_SR_RESENT == 86 && UZ_CNT_XLAT_FAULTS == 87 &&
	      UZ_CNT_RX_MCAST == 90);
	/* Version 0.5: selective repeat's SACK and its BTH bit. */
	CHECK(UZ_BTH_OP_RC_SACK == 0xc1 && UZ_BTH_B8_SR == 0x40 &&
	      sizeof(struct uz_sacketh) == 8);
	/*
	 * Version 0.6: fast registration (spec 8.10.1) and CQ resize
	 * (8.5.1): the WQE's reg union, the opcodes, the command.
	 */
	CHECK(UZ_WR_LOCAL_INV == 0x08 &&
	      UZ_WR_REG_MR == 0x09 && UZ_WC_LOCAL_INV == 0x06 &&
	      UZ_WC_REG_MR == 0x07 && UZ_MR_F_FAST == 0x02);
	CHECK(offsetof(struct uz_send_wqe, reg.length) == 32 &&
	      offsetof(struct uz_send_wqe, reg.access) == 40 &&
	      offsetof(struct uz_send_wqe, reg.npages) == 44 &&
	      offsetof(struct uz_send_wqe, reg.page_shift) == 46);
	CHECK(UZ_CMD_RESIZE_CQ == 0x23 && sizeof(struct uz_cmd_resize_cq) == 24 &&
	      offsetof(struct uz_cmd_resize_cq, ci) == 16 &&
	      offsetof(struct uz_device_attr, max_fast_reg_pages) == 112);
	/* Version 0.7: REREG_MR (spec 8.10.2). */
	CHECK(UZ_CMD_REREG_MR == 0x24 &&
	      UZ_CAP_MR_REREG == 0x400 &&
	      sizeof(struct uz_cmd_rereg_mr) == 48 &&
	      offsetof(struct uz_cmd_rereg_mr, change) == 37 &&
	      offsetof(struct uz_cmd_rereg_mr, uctx) == 40 &&
	      offsetof(struct uz_cmd_rereg_mr, key) == 44);
	/* Version 0.8: memory windows (spec 8.10.3). */
	CHECK(UZ_CAP_MW == 0x800 &&
	      UZ_CMD_ALLOC_MW == 0x25 && UZ_CMD_DEALLOC_MW == 0x26 &&
	      UZ_WR_BIND_MW == 0x0a && UZ_WC_BIND_MW == 0x05 &&
	      UZ_ACCESS_MW_BIND == 0x10 && UZ_MW_TYPE_1 == 1 &&
	      UZ_MW_TYPE_2 == 2 && sizeof(struct uz_cmd_alloc_mw) == 12);
	/* Version 0.9: on-demand paging (spec 8.10.4). */
	CHECK(UZ_CAP_ODP == 0x1000 &&
	      UZ_MR_F_ODP == 0x04 && UZ_EQE_PAGE_FAULT == 0x18 &&
	      UZ_CMD_PAGE_RESUME == 0x27 && UZ_PTE_PRESENT == 1 &&
	      UZ_PTE_ERROR == 2);
	/* Version 0.10: unreliable connected QPs (spec 9.8). */
	CHECK(UZ_CAP_UC == 0x2000 &&
	      UZ_QPT_UC == 3 && UZ_BTH_OP_UC == 0x20 &&
	      UZ_CNT_UC_DROPPED == 89);
	/* Version 0.11: UD multicast (spec 8.14). */
	CHECK(UZ_CAP_MCAST == 0x4000 &&
	      UZ_CMD_ATTACH_MCAST == 0x28 && UZ_CMD_DETACH_MCAST == 0x29 &&
	      sizeof(struct uz_cmd_mcast) == 24 && UZ_MCAST_QPN == 0xffffff &&
	      offsetof(struct uz_device_attr, max_mcast_grp) == 116 &&
	      offsetof(struct uz_device_attr, max_mcast_qp_attach) == 120 &&
	      UZ_CNT_RX_MCAST == 90);
	/* Version 0.12: SRQ resize (spec 8.8.1). */
	CHECK(UZ_CAP_SRQ_RESIZE == 0x8000 &&
	      UZ_CMD_RESIZE_SRQ == 0x2a && sizeof(struct uz_cmd_resize_srq) == 24 &&
	      offsetof(struct uz_cmd_resize_srq, log_depth) == 16 &&
	      offsetof(struct uz_cmd_resize_srq, limit) == 20 &&
	      UZ_SRQ_RESIZE_LIMIT == 1);
	/* Version 0.13: FLUSH and ATOMIC WRITE (spec 8.15). */
	CHECK(UZ_CAP_PLACEMENT == 0x10000 &&
	      UZ_WR_FLUSH == 0x0b && UZ_WR_ATOMIC_WRITE == 0x0c &&
	      UZ_WC_FLUSH == 0x08 && UZ_WC_ATOMIC_WRITE == 0x09 &&
	      UZ_ACCESS_FLUSH_GLOBAL == 0x100 &&
	      UZ_BTH_OP_FLUSH == 0x1c && UZ_BTH_OP_ATOMIC_WRITE == 0x1d &&
	      offsetof(struct uz_send_wqe, flush.length) == 32 &&
	      offsetof(struct uz_send_wqe, flush.type) == 40 &&
	      offsetof(struct uz_send_wqe, flush.level) == 41 &&
	      UZ_MAX_MSG_SZ == 0x80000000u);
	/* Version 0.14: XRC (spec 8.16). */
	CHECK(UZ_CAP_XRC == 0x20000 &&
	      UZ_CMD_ALLOC_XRCD == 0x2b && UZ_CMD_DEALLOC_XRCD == 0x2c &&
	      UZ_QPT_XRC_INI == 9 && UZ_QPT_XRC_TGT == 10 &&
	      UZ_SRQF_XRC == 1 && UZ_WC_F_XRC == 0x10 &&
	      UZ_BTH_OP_XRC == 0xa0 && UZ_XRCETH_LEN == 4 &&
	      offsetof(struct uz_send_wqe, xrc_srqn) == 48 &&
	      offsetof(struct uz_cmd_create_srq, flags) == 22 &&
	      offsetof(struct uz_cmd_create_srq, xrcd) == 24 &&
	      offsetof(struct uz_cmd_create_srq, cqn) == 28 &&
	      offsetof(struct uz_cmd_create_qp, xrcd) == 44 &&
	      offsetof(struct uz_device_attr, max_xrcd) == 124);
	/* Version 0.15: the device clock, CQE timestamps (spec 8.5.2). */
	CHECK(UZ_CAP_TIMESTAMP == 0x40000 &&
	      UZ_CQF_TIMESTAMP == 2 && UZ_DB_CLOCK == 0xff8 &&
	      UZ_CLOCK_KHZ == 1000000 && sizeof(struct uz_cqe_ts) == 64 &&
	      offsetof(struct uz_cqe_ts, timestamp) == 0 &&
	      offsetof(struct uz_cqe_ts, cqe) == 32);
	/* Version 0.16: device memory (spec 8.17). */
	CHECK(UZ_CAP_DM == 0x80000 &&
	      UZ_CMD_ALLOC_DM == 0x2d && UZ_CMD_DEALLOC_DM == 0x2e &&
	      UZ_MR_F_DM == 8 && UZ_DM_PAGE_SIZE == 4096 &&
	      sizeof(struct uz_cmd_alloc_dm) == 16 &&
	      offsetof(struct uz_cmd_alloc_dm, uctx) == 8 &&
	      offsetof(struct uz_cmd_alloc_dm, log_align) == 12 &&
	      offsetof(struct uz_cmd_reg_mr, dm_offset) == 16 &&
	      offsetof(struct uz_cmd_reg_mr, dm) == 24 &&
	      offsetof(struct uz_device_attr, dm_size) == 128 &&
	      offsetof(struct uz_device_attr, dm_offset) == 132 &&
	      offsetof(struct uz_device_attr, max_dm) == 136);
	/* Version 0.17: raw packet QPs and flow rules (spec 8.18). */
	CHECK(UZ_CAP_RAW == 0x100000 &&
	      UZ_QPT_RAW == 8 && UZ_CMD_CREATE_FLOW == 0x2f &&
	      UZ_CMD_DESTROY_FLOW == 0x30 && UZ_CMD_RDMA_LAST == 0x3f &&
	      sizeof(struct uz_cmd_create_flow) == 16 &&
	      sizeof(struct uz_flow_spec) == 128 &&
	      offsetof(struct uz_flow_spec, ethertype) == 24 &&
	      offsetof(struct uz_flow_spec, vlan_tci) == 28 &&
	      offsetof(struct uz_flow_spec, ip_ver) == 32 &&
	      offsetof(struct uz_flow_spec, l4) == 35 &&
	      offsetof(struct uz_flow_spec, sport) == 36 &&
	      offsetof(struct uz_flow_spec, src_ip) == 44 &&
	      offsetof(struct uz_flow_spec, dst_ip_mask) == 92 &&
	      UZ_FLOW_L4_TCP == 6 && UZ_FLOW_L4_UDP == 17 &&
	      UZ_FLOW_MAX == 256);
	/* Version 0.18: implicit ODP MRs (spec 8.10.5). */
	CHECK(UZ_CAP_ODP_IMPLICIT == 0x200000 &&
	      UZ_MR_F_IMPLICIT == 0x10 && UZ_IMR_SHIFT == 30 &&
	      UZ_IMR_ENTRIES == 0x20000 &&
	      UZ_IMR_ENTRY(0x1234) == 0x0000123400000001ull &&
	      UZ_IMR_KEY(0xabcd000000000001ull) == 0xabcd0000u);
	/* Version 0.21: QP error events by kind (spec 5.3, 8.11). */
	CHECK(UZ_VERSION_MINOR == 23 && UZ_EQE_QP_REQ_ERR == 0x19 &&
	      UZ_EQE_QP_ACCESS_ERR == 0x1a && UZ_EQE_QP_FATAL == 0x12);
	/* Version 0.20: SQ shadow doorbells (spec 8.6.1). */
	CHECK(UZ_CAP_SQ_SHADOW == 0x1000000 &&
	      UZ_QPF_SQ_SHADOW == 4 && sizeof(struct uz_sq_shadow) == 64 &&
	      offsetof(struct uz_sq_shadow, event) == 4 &&
	      UZ_CNT_SQ_SHADOW_TAKES == 91 && UZ_CNT_RX_NOT_OURS == 92 &&
	      UZ_CNT_NP_ECN_MARKED_ROCE_PACKETS == 93);
	/* Version 0.23: CNPs and DCQCN (spec 9.1.2). */
	CHECK(UZ_CNT_NP_CNP_SENT == 94 && UZ_CNT_RP_CNP_HANDLED == 95 &&
	      UZ_CNT_RP_CNP_IGNORED == 96 && UZ_CNT_RX_OUT_OF_BUFFER == 97 &&
	      UZ_BTH_OP_CNP == 0x81 && UZ_BTH_BECN == 0x40 &&
	      UZ_CNP_PAYLOAD_LEN == 16);
	/* PAUSE and PFC received (spec 9.1.3). */
	CHECK(UZ_CNT_RX_PAUSE_CTRL_PHY == 98 &&
	      UZ_CNT_RX_PAUSE_TRANSITION == 99 &&
	      UZ_CNT_RX_PAUSE_DURATION == 100 && UZ_CNT_NUM == 101);
	/* The doorbell is needed when event lies in [old, new), mod 2^24. */
	CHECK(UZ_SQ_SHADOW_NEED_DB(5, 6, 5) && !UZ_SQ_SHADOW_NEED_DB(5, 7, 6) &&
	      UZ_SQ_SHADOW_NEED_DB(5, 21, 5) && !UZ_SQ_SHADOW_NEED_DB(4, 6, 5) &&
	      UZ_SQ_SHADOW_NEED_DB(0xffffff, 2, 0xffffff) &&
	      !UZ_SQ_SHADOW_NEED_DB(0xfffffe, 2, 0xffffff));
	/* Version 0.19: tag matching (spec 8.19) and RSS (spec 8.18.1). */
	CHECK(UZ_CAP_TM == 0x400000 &&
	      UZ_CAP_RSS == 0x800000 && UZ_SRQF_TM == 2 &&
	      sizeof(struct uz_cmd_create_srq) == 48 &&
	      offsetof(struct uz_cmd_create_srq, ops_addr) == 32 &&
	      offsetof(struct uz_cmd_create_srq, max_tags) == 40 &&
	      offsetof(struct uz_cmd_create_srq, ops_log_depth) == 42 &&
	      sizeof(struct uz_tm_op) == 64 &&
	      offsetof(struct uz_tm_op, unexpected_cnt) == 32 &&
	      offsetof(struct uz_tm_op, index) == 36 &&
	      offsetof(struct uz_tm_op, opcode) == 38 &&
	      offsetof(struct uz_tm_op, num_sge) == 40 &&
	      offsetof(struct uz_tm_op, addr) == 48 &&
	      UZ_WC_TM_ADD == 0x20 && UZ_WC_TM_RECV == 0x82 &&
	      UZ_WC_F_TM_DATA_VALID == 0x80 && UZ_WC_STATUS_TM_ERR == 22 &&
	      offsetof(struct uz_device_attr, max_tm_tags) == 140 &&
	      offsetof(struct uz_device_attr, max_rss_tbl) == 148 &&
	      UZ_QPT_RSS == 0x0b && UZ_QPF_NO_SQ == 2 &&
	      offsetof(struct uz_rss_conf, fields) == 40 &&
	      offsetof(struct uz_rss_conf, qpn) == 48);
	CHECK(offsetof(struct uz_send_wqe, bind.length) == 32 &&
	      offsetof(struct uz_send_wqe, bind.access) == 40 &&
	      offsetof(struct uz_send_wqe, bind.mr_key) == 44);
	/* A QUERY_COUNTERS payload fits the command. */
	CHECK(sizeof(struct uz_cmd_query) == 24 && UZ_CMD_QUERY_COUNTERS == 0x21);
	/* Version 0.4: paged CQ rings, AVs in UD WQEs, contexts named. */
	CHECK(offsetof(struct uz_cmd_create_cq, flags) == 17 &&
	      UZ_CQF_PAGE_LIST == 1 && UZ_CQ_LOG_DEPTH_MAX == 22);
	CHECK(sizeof(struct uz_av) == 64 && UZ_WQE_F_AV == 0x10);
	CHECK(offsetof(struct uz_cmd_modify_qp, uctx) == 16 &&
	      offsetof(struct uz_cmd_modify_srq, uctx) == 8);

	return tap_done();
}
