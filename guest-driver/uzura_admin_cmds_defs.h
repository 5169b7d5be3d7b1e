/* SPDX-License-Identifier: (GPL-2.0-or-later OR BSD-2-Clause) */
/*
 * uzura RDMA NIC, hardware interface: the admin commands that
 * create RDMA objects (contexts, PDs, CQs, QPs, SRQs, MRs, windows, AHs).
 *
 * Part of the hardware interface header set: see uzura_regs_defs.h.
 */
#ifndef UZURA_ADMIN_CMDS_DEFS_H
#define UZURA_ADMIN_CMDS_DEFS_H

#include "uzura_admin_defs.h"

/* ------------------------------------------------------------------ */
/* RDMA objects                                                       */
/* ------------------------------------------------------------------ */

/*
 * RDMA objects are created through the admin queue with the commands
 * below, which are written into the raw[] payload of struct uz_admin_cmd.
 * Handles: PD, CQ, SRQ, AH numbers and QP numbers (24 bits; QP1 is the
 * GSI QP), and memory keys: key = (MR index << 8) | key byte, the key byte
 * chosen by the driver so that a stale key misses after re-registration.
 * A queue created for a user context gets its doorbell in that context's
 * page; uctx 0 is the kernel.
 */
#define UZ_CMD_CREATE_UCTX          0x10 /* out0: uctx (doorbell page) */
#define UZ_CMD_DESTROY_UCTX         0x11
#define UZ_CMD_ALLOC_PD             0x12 /* out0: pdn */
#define UZ_CMD_DEALLOC_PD           0x13
#define UZ_CMD_CREATE_CQ            0x14 /* out0: cqn, out1: doorbell */
#define UZ_CMD_DESTROY_CQ           0x15
/* out0: qpn, out1: SQ doorbell, out2: RQ doorbell */
#define UZ_CMD_CREATE_QP            0x16
#define UZ_CMD_MODIFY_QP            0x17
#define UZ_CMD_QUERY_QP             0x18 /* writes uz_qp_attr to buf */
#define UZ_CMD_DESTROY_QP           0x19
/* out0: srqn, out1: doorbell, out2: UZ_SRQF_TM ops doorbell */
#define UZ_CMD_CREATE_SRQ           0x1a
#define UZ_CMD_MODIFY_SRQ           0x1b
#define UZ_CMD_DESTROY_SRQ          0x1c
#define UZ_CMD_REG_MR               0x1d /* out0: lkey = rkey */
#define UZ_CMD_DEREG_MR             0x1e
#define UZ_CMD_CREATE_AH            0x1f /* out0: ahn */
#define UZ_CMD_DESTROY_AH           0x20
/* writes u64 counters to buf, out0: how many, out1: UZ_CNT_NUM */
#define UZ_CMD_QUERY_COUNTERS       0x21
#define UZ_CMD_INVALIDATE_XLAT      0x22 /* drop cached translations */
#define UZ_CMD_RESIZE_CQ            0x23 /* out0: CQEs the driver moves */
#define UZ_CMD_REREG_MR             0x24 /* the key stays */
#define UZ_CMD_ALLOC_MW             0x25 /* out0: rkey */
#define UZ_CMD_DEALLOC_MW           0x26
#define UZ_CMD_PAGE_RESUME          0x27 /* ODP: faults of an MR handled */
#define UZ_CMD_ATTACH_MCAST         0x28 /* UD QP joins a multicast group */
#define UZ_CMD_DETACH_MCAST         0x29
#define UZ_CMD_RESIZE_SRQ           0x2a /* the SRQ continues in a new ring */
#define UZ_CMD_ALLOC_XRCD           0x2b /* out0: xrcd (uz_cmd_obj) */
#define UZ_CMD_DEALLOC_XRCD         0x2c
#define UZ_CMD_ALLOC_DM             0x2d /* out0: dm, out1: BAR 4 offset */
#define UZ_CMD_DEALLOC_DM           0x2e /* uz_cmd_obj */
#define UZ_CMD_CREATE_FLOW          0x2f /* out0: the flow rule */
#define UZ_CMD_DESTROY_FLOW         0x30 /* uz_cmd_obj */

struct uz_cmd_create_uctx {
	uint32_t reserved[14];
};

struct uz_cmd_obj {                 /* ALLOC_PD, DEALLOC_*, DESTROY_* */
	uint32_t handle;            /* the object (ignored by ALLOC_PD) */
	uint32_t uctx;              /* owning context, 0 = kernel */
};

/*
 * RESIZE_CQ: the CQ continues in a new ring.  The @ci the driver gives is
 * its consumer index; the n = (device's producer index - @ci) CQEs it has
 * not consumed stay in the old ring, and the device writes the next CQE
 * to slot n of the new ring (out0 = n), so the driver copies those n
 * CQEs to slots 0 .. n - 1, with the phase of the new ring's first pass,
 * before it polls again from index 0.
 */
struct uz_cmd_resize_cq {
	uint64_t ring_addr;         /* as in create */
	uint32_t cqn;
	uint32_t uctx;
	uint32_t ci;                /* the driver's consumer index */
	uint8_t log_depth;
	uint8_t flags;              /* UZ_CQF_PAGE_LIST, UZ_CQF_TIMESTAMP */
	uint16_t reserved_16;
};

struct uz_cmd_create_cq {
	/*
	 * 2^log_depth entries of uz_cqe (of uz_cqe_ts with UZ_CQF_TIMESTAMP),
	 * or the ring's page list (UZ_CQF_PAGE_LIST)
	 */
	uint64_t ring_addr;
	uint32_t uctx;
	uint32_t eqn;               /* EQ for completion events */
	uint8_t log_depth;          /* 1 .. log2(max_cqe), at most 22 */
	uint8_t flags;              /* UZ_CQF_* */
	uint8_t reserved_8[2];
	uint32_t reserved_32;
};

/*
 * UZ_CQF_PAGE_LIST: ring_addr holds max(1, ring bytes / 4096) little-endian
 * 64-bit addresses of 4 KiB-aligned pages; the ring is their concatenation.
 * A large CQ needs no physically contiguous memory.
 */
#define UZ_CQF_PAGE_LIST            (1u << 0)
#define UZ_CQF_TIMESTAMP            (1u << 1)
#define UZ_CQ_PAGE_SHIFT            12
#define UZ_CQ_LOG_DEPTH_MAX         22

struct uz_cmd_create_qp {
	uint64_t sq_addr;           /* 2^sq_log_depth WQEs of sq_wqe_size */
	uint64_t rq_addr;           /* 2^rq_log_depth RQ WQEs (no SRQ) */
	uint32_t uctx;
	uint32_t pdn;
	uint32_t send_cqn;
	uint32_t recv_cqn;
	uint32_t srqn;              /* UZ_NO_SRQ when the QP has an RQ */
	uint8_t type;               /* UZ_QPT_* */
	uint8_t sq_log_depth;
	uint8_t rq_log_depth;
	uint8_t sq_log_wqe_size;    /* log2 bytes, 6 .. 9 (64 .. 512) */
	uint8_t rq_log_wqe_size;    /* log2 bytes, 4 .. 9 (16 .. 512) */
	uint8_t flags;              /* UZ_QPF_* */
	uint16_t reserved_16;
	uint32_t xrcd;              /* UZ_QPT_XRC_TGT: its XRC domain */
};

#define UZ_NO_SRQ                   0xffffffffu
#define UZ_QPF_SIG_ALL              (1u << 0)  /* every WQE signalled */
/* UZ_QPT_RAW: a receive queue only (a WQ); sq_* and send_cqn ignored */
#define UZ_QPF_NO_SQ                (1u << 1)
/* a struct uz_sq_shadow follows the SQ ring (UZ_CAP_SQ_SHADOW) */
#define UZ_QPF_SQ_SHADOW            (1u << 2)

#define UZ_QPT_RC                   0x02
#define UZ_QPT_UC                   0x03       /* unreliable connected */
#define UZ_QPT_UD                   0x04
#define UZ_QPT_GSI                  0x05       /* QP1, UD semantics */
#define UZ_QPT_RAW                  0x08       /* raw Ethernet frames */
#define UZ_QPT_XRC_INI              0x09       /* XRC initiator: an SQ only */
#define UZ_QPT_XRC_TGT              0x0a       /* XRC target: no queues */
#define UZ_QPT_RSS                  0x0b       /* spreads raw frames */

/*
 * XRC (UZ_CAP_XRC).  An XRC domain (ALLOC_XRCD; it belongs to the device,
 * not to a context, since processes share it) groups XRC SRQs and XRC
 * target QPs.  An initiator QP is an RC requester with an SQ and a send
 * CQ and no receive side (rq_*, recv_cqn and srqn are ignored); each of
 * its WQEs names the XRC SRQ it is for (xrc_srqn).  A target QP is an RC
 * responder with no rings, CQs, PD or SRQ of its own (only uctx, type and
 * xrcd count): each request it takes uses the SRQ its XRCETH names, which
 * must be an XRC SRQ of the target's domain, for its receive WQEs, its
 * PD (the rkey checks) and its CQ.
 */
#define UZ_XRCD_MAX                 64

/*
 * Raw packet QPs (UZ_CAP_RAW).  A SEND on a raw QP transmits its data, a
 * whole Ethernet frame of UZ_ETH_HDR_LEN .. UZ_ETH_FRAME_MAX(mtu) bytes,
 * as it is; one addressed to the NIC's own MAC, or to a group, also
 * reaches this NIC's flow rules, and one to its own MAC goes no further.
 * A raw QP receives the frames its flow rules match: CREATE_FLOW attaches
 * a rule (struct uz_flow_spec, read from host memory at spec_addr) to a
 * raw QP of the context.  Every frame, from the link or turned around, is
 * matched against the rules first; each raw QP with a matching rule gets
 * a copy in its next receive WQE (byte_len the frame's length), and a
 * frame that a rule matches goes nowhere else (neither RoCE nor the
 * Ethernet function).  DESTROY_QP of a QP with rules is UZ_CMD_BUSY.
 */
struct uz_cmd_create_flow {
	uint64_t spec_addr;         /* struct uz_flow_spec */
	uint32_t qpn;
	uint32_t uctx;
};

/*
 * A frame matches when every field ANDed with its mask equals the value
 * ANDed with it, over the Ethernet header (the VLAN tag, if the frame has
 * one), then with ip_ver 4 or 6 the IPv4 or IPv6 header (ip_proto is the
 * protocol or the next header; addresses of IPv4 in their first 4
 * bytes), then with l4 the TCP or UDP header.  16-bit fields are in
 * network order, as in the frame.
 */
struct uz_flow_spec {
	uint8_t dmac[6];
	uint8_t dmac_mask[6];
	uint8_t smac[6];
	uint8_t smac_mask[6];
	uint16_t ethertype;
	uint16_t ethertype_mask;
	uint16_t vlan_tci;          /* a frame without a tag has TCI 0 */
	uint16_t vlan_tci_mask;
	uint8_t ip_ver;             /* 0, 4 or 6 */
	uint8_t ip_proto;
	uint8_t ip_proto_mask;
	uint8_t l4;                 /* 0, UZ_FLOW_L4_TCP or UZ_FLOW_L4_UDP */
	uint16_t sport;
	uint16_t sport_mask;
	uint16_t dport;
	uint16_t dport_mask;
	uint8_t src_ip[16];
	uint8_t src_ip_mask[16];
	uint8_t dst_ip[16];
	uint8_t dst_ip_mask[16];
	uint8_t reserved[20];
};
UZ_ASSERT_SIZE(struct uz_flow_spec, 128);

#define UZ_FLOW_L4_TCP              6
#define UZ_FLOW_L4_UDP              17
#define UZ_FLOW_MAX                 256 /* rules, the device's */

/*
 * Receive side scaling (UZ_CAP_RSS, docs/device-spec.md 8.18.1).  An RSS
 * QP (UZ_QPT_RSS) has no queues and no state to move through: from its
 * creation on, each frame its flow rules match goes to one raw QP of its
 * table, the entry that the low log_size bits of the Toeplitz hash of the
 * frame's fields (in the order src IP, dst IP, src port, dst port, those
 * of fields that the frame has) select.  The table's QPs are raw QPs of
 * the same context, usually with UZ_QPF_NO_SQ (the verbs' WQs); one that
 * is not in RTR or RTS drops the frame.  CREATE_QP of an RSS QP reads
 * this structure at sq_addr (pdn, uctx and type count; the rest is
 * ignored).  DESTROY_QP of a QP an RSS table names is UZ_CMD_BUSY.
 */
struct uz_rss_conf {
	uint8_t key[40];            /* Toeplitz key */
	uint32_t fields;            /* UZ_RSS_F_* */
	uint8_t log_size;           /* 2^log_size entries, 0 .. 8 */
	uint8_t func;               /* UZ_RSS_TOEPLITZ */
	uint16_t reserved_16;
	uint32_t qpn[256];          /* 2^log_size used */
};
UZ_ASSERT_SIZE(struct uz_rss_conf, 1072);

#define UZ_RSS_TOEPLITZ             1
#define UZ_RSS_LOG_MAX              8
#define UZ_RSS_F_SRC_IPV4           (1u << 0)
#define UZ_RSS_F_DST_IPV4           (1u << 1)
#define UZ_RSS_F_SRC_IPV6           (1u << 2)
#define UZ_RSS_F_DST_IPV6           (1u << 3)
#define UZ_RSS_F_SRC_PORT_TCP       (1u << 4)
#define UZ_RSS_F_DST_PORT_TCP       (1u << 5)
#define UZ_RSS_F_SRC_PORT_UDP       (1u << 6)
#define UZ_RSS_F_DST_PORT_UDP       (1u << 7)

/* The queues a QP type has of its own, for device and driver alike. */
static inline int uz_qpt_has_sq(uint8_t type)
{
	return type != UZ_QPT_XRC_TGT && type != UZ_QPT_RSS;
}

static inline int uz_qpt_receives(uint8_t type)
{
	return type != UZ_QPT_XRC_INI && type != UZ_QPT_XRC_TGT &&
	       type != UZ_QPT_RSS;
}

/* MODIFY_QP: the attributes named in attr_mask are applied. */
struct uz_cmd_modify_qp {
	uint64_t buf_addr;          /* struct uz_qp_attr in host memory */
	uint32_t qpn;
	uint32_t attr_mask;         /* UZ_QP_ATTR_* */
	uint32_t uctx;              /* the QP's context */
	uint32_t reserved_32;
};

struct uz_cmd_query {               /* QUERY_QP, QUERY_COUNTERS */
	uint64_t buf_addr;
	uint32_t buf_len;
	uint32_t handle;            /* qpn for QUERY_QP */
	uint32_t uctx;              /* QUERY_QP: the QP's context */
	uint32_t reserved_32;
};

/*
 * QUERY_COUNTERS writes min(buf_len / 8, UZ_CNT_NUM) little-endian 64-bit
 * counters to buf_addr, counter i at byte offset 8 * i, and returns how
 * many in out0 (and UZ_CNT_NUM in out1).  buf_len must be a non-zero
 * multiple of 8 (else BAD_PARAM).  The index of a counter is ABI: new
 * counters are added at the end only, so a driver that knows fewer gets
 * the ones it knows, and one that knows more learns how many there are.
 * The comment names each counter as the device's qom-get property and the
 * driver's hw_counters file (docs/device-spec.md section 10).
 */
enum uz_counter {
	UZ_CNT_TX_FRAMES = 0,       /* tx_frames: Ethernet frames sent */
	UZ_CNT_TX_BYTES = 1,        /* tx_bytes */
	UZ_CNT_TX_ERRORS = 2,       /* tx_errors */
	UZ_CNT_RX_FRAMES = 3,       /* rx_frames */
	UZ_CNT_RX_BYTES = 4,        /* rx_bytes */
	UZ_CNT_RX_DROPPED = 5,      /* rx_dropped */
	UZ_CNT_ADMIN_CMDS = 6,      /* admin_cmds */
	UZ_CNT_ADMIN_ERRORS = 7,    /* admin_errors */
	UZ_CNT_EQ_EVENTS = 8,       /* eq_events */
	UZ_CNT_EQ_OVERFLOWS = 9,    /* eq_overflows */
	UZ_CNT_IRQS = 10,           /* irqs */
	UZ_CNT_DOORBELLS = 11,      /* doorbells */
	UZ_CNT_CQES = 12,           /* cqes */
	UZ_CNT_CQES_ERROR = 13,     /* cqes_error */
	/* RoCE packets and their frame bytes, by kind */
	UZ_CNT_TX_PKTS_SEND = 14,   /* tx_pkts_send */
	UZ_CNT_TX_BYTES_SEND = 15,  /* tx_bytes_send */
	UZ_CNT_RX_PKTS_SEND = 16,   /* rx_pkts_send */
	UZ_CNT_RX_BYTES_SEND = 17,  /* rx_bytes_send */
	UZ_CNT_TX_PKTS_WRITE = 18,  /* tx_pkts_write */
	UZ_CNT_TX_BYTES_WRITE = 19, /* tx_bytes_write */
	UZ_CNT_RX_PKTS_WRITE = 20,  /* rx_pkts_write */
	UZ_CNT_RX_BYTES_WRITE = 21, /* rx_bytes_write */
	UZ_CNT_TX_PKTS_READ_REQ = 22,   /* tx_pkts_read_req */
	UZ_CNT_TX_BYTES_READ_REQ = 23,  /* tx_bytes_read_req */
	UZ_CNT_RX_PKTS_READ_REQ = 24,   /* rx_pkts_read_req */
	UZ_CNT_RX_BYTES_READ_REQ = 25,  /* rx_bytes_read_req */
	UZ_CNT_TX_PKTS_READ_RESP = 26,  /* tx_pkts_read_resp */
	UZ_CNT_TX_BYTES_READ_RESP = 27, /* tx_bytes_read_resp */
	UZ_CNT_RX_PKTS_READ_RESP = 28,  /* rx_pkts_read_resp */
	UZ_CNT_RX_BYTES_READ_RESP = 29, /* rx_bytes_read_resp */
	UZ_CNT_TX_PKTS_ATOMIC = 30, /* tx_pkts_atomic */
	UZ_CNT_TX_BYTES_ATOMIC = 31,    /* tx_bytes_atomic */
	UZ_CNT_RX_PKTS_ATOMIC = 32, /* rx_pkts_atomic */
	UZ_CNT_RX_BYTES_ATOMIC = 33,    /* rx_bytes_atomic */
	UZ_CNT_TX_PKTS_ACK = 34,    /* tx_pkts_ack */
	UZ_CNT_TX_BYTES_ACK = 35,   /* tx_bytes_ack */
	UZ_CNT_RX_PKTS_ACK = 36,    /* rx_pkts_ack */
	UZ_CNT_RX_BYTES_ACK = 37,   /* rx_bytes_ack */
	UZ_CNT_TX_PKTS_UD = 38,     /* tx_pkts_ud */
	UZ_CNT_TX_BYTES_UD = 39,    /* tx_bytes_ud */
	UZ_CNT_RX_PKTS_UD = 40,     /* rx_pkts_ud */
	UZ_CNT_RX_BYTES_UD = 41,    /* rx_bytes_ud */
	UZ_CNT_TX_PKTS_CRW = 42,    /* tx_pkts_crw */
	UZ_CNT_TX_BYTES_CRW = 43,   /* tx_bytes_crw */
	UZ_CNT_RX_PKTS_CRW = 44,    /* rx_pkts_crw */
	UZ_CNT_RX_BYTES_CRW = 45,   /* rx_bytes_crw */
	/* RC transport */
	UZ_CNT_RETRANSMITS = 46,    /* retransmits */
	UZ_CNT_RETRY_TIMEOUTS = 47, /* retry_timeouts */
	UZ_CNT_NAKS_SENT = 48,      /* naks_sent */
	UZ_CNT_NAKS_RCVD = 49,      /* naks_rcvd */
	UZ_CNT_NAK_SEQ_SENT = 50,   /* nak_seq_sent */
	UZ_CNT_NAK_SEQ_RCVD = 51,   /* nak_seq_rcvd */
	UZ_CNT_NAK_INV_REQ_RCVD = 52,   /* nak_inv_req_rcvd */
	UZ_CNT_NAK_REM_ACCESS_RCVD = 53, /* nak_rem_access_rcvd */
	UZ_CNT_NAK_REM_OP_RCVD = 54,    /* nak_rem_op_rcvd */
	UZ_CNT_RNR_NAKS_SENT = 55,  /* rnr_naks_sent */
	UZ_CNT_RNR_NAKS_RCVD = 56,  /* rnr_naks_rcvd */
	UZ_CNT_ACKS_COALESCED = 57, /* acks_coalesced */
	UZ_CNT_DUPLICATES = 58,     /* duplicates */
	/* RoCE frames dropped on receive or transmit */
	UZ_CNT_ICRC_ERRORS = 59,    /* icrc_errors */
	UZ_CNT_RX_MALFORMED = 60,   /* rx_malformed */
	UZ_CNT_RX_NO_QP = 61,       /* rx_no_qp */
	UZ_CNT_RX_QKEY_ERRORS = 62, /* rx_qkey_errors */
	UZ_CNT_RX_UD_NO_WQE = 63,   /* rx_ud_no_wqe */
	UZ_CNT_RX_STALE = 64,       /* rx_stale */
	UZ_CNT_ROCE_TX_DROPPED = 65,    /* roce_tx_dropped */
	/* translation cache */
	UZ_CNT_XLAT_HITS = 66,      /* xlat_hits */
	UZ_CNT_XLAT_MISSES = 67,    /* xlat_misses */
	UZ_CNT_XLAT_EVICTIONS = 68, /* xlat_evictions */
	/* conditional RDMA write */
	UZ_CNT_CRW_PARKED = 69,     /* crw_parked */
	UZ_CNT_CRW_OFFERS = 70,     /* crw_offers */
	UZ_CNT_CRW_MATCHED_CRW_FIRST = 71,      /* crw_matched_crw_first */
	UZ_CNT_CRW_MATCHED_STCRW_FIRST = 72,    /* crw_matched_stcrw_first */
	UZ_CNT_CRW_FLUSHED = 73,    /* crw_flushed */
	UZ_CNT_CRW_ERRORS = 74,     /* crw_errors */
	/* fault injection on transmit */
	UZ_CNT_FAULT_DROPS = 75,    /* fault_drops */
	UZ_CNT_FAULT_CORRUPTS = 76, /* fault_corrupts */
	UZ_CNT_FAULT_DUPS = 77,     /* fault_dups */
	UZ_CNT_FAULT_REORDERS = 78, /* fault_reorders */
	UZ_CNT_FAULT_DELAYED = 79,  /* fault_delayed */
	/* loopback: RoCE frames to the NIC's own MAC */
	UZ_CNT_LOOP_FRAMES = 80,    /* loop_frames */
	UZ_CNT_LOOP_DROPPED = 81,   /* loop_dropped */
	UZ_CNT_RX_UD_TOO_LONG = 82, /* rx_ud_too_long */
	/* selective repeat (recovery=sr) */
	UZ_CNT_SACKS_SENT = 83,     /* sacks_sent */
	UZ_CNT_SACKS_RCVD = 84,     /* sacks_rcvd */
	UZ_CNT_SR_KEPT = 85,        /* sr_kept: out-of-order packets kept */
	UZ_CNT_SR_RESENT = 86,      /* sr_resent: packets a SACK named, sent again */
	/* on-demand paging */
	UZ_CNT_XLAT_FAULTS = 87,    /* xlat_faults: ODP pages found absent */
	UZ_CNT_XLAT_INVALIDATIONS = 88, /* xlat_invalidations: INVALIDATE_XLAT */
	/* unreliable connected */
	UZ_CNT_UC_DROPPED = 89,     /* uc_dropped: UC messages a responder lost */
	/* multicast */
	UZ_CNT_RX_MCAST = 90,       /* rx_mcast: datagrams handed to members */
	/* SQ shadow doorbells */
	/* sq_shadow_takes: SQ producer indices read from shadow records */
	UZ_CNT_SQ_SHADOW_TAKES = 91,
	/* the link */
	/* rx_not_ours: unicast frames to another MAC, which a hub delivers */
	UZ_CNT_RX_NOT_OURS = 92,
	/* ECN (mlx5's name) */
	/* np_ecn_marked_roce_packets: RoCE packets marked CE */
	UZ_CNT_NP_ECN_MARKED_ROCE_PACKETS = 93,
	/* congestion control (mlx5's names) */
	UZ_CNT_NP_CNP_SENT = 94,    /* np_cnp_sent: CNPs sent */
	UZ_CNT_RP_CNP_HANDLED = 95, /* rp_cnp_handled: CNPs that cut a rate */
	UZ_CNT_RP_CNP_IGNORED = 96, /* rp_cnp_ignored: CNPs taken, no effect */
	/* Ethernet */
	/* rx_out_of_buffer: no RX descriptor and the hold queue full */
	UZ_CNT_RX_OUT_OF_BUFFER = 97,
	/* link-level flow control received (mlx5's names) */
	/* rx_pause_ctrl_phy: PAUSE and PFC frames */
	UZ_CNT_RX_PAUSE_CTRL_PHY = 98,
	UZ_CNT_RX_PAUSE_TRANSITION = 99, /* rx_pause_transition: pauses */
	UZ_CNT_RX_PAUSE_DURATION = 100, /* rx_pause_duration: microseconds */
	UZ_CNT_NUM                  /* 101: counters of this version */
};

/* QP attributes, as modify takes and query returns them. */
struct uz_qp_attr {
	uint8_t state;              /* UZ_QPS_* */
	uint8_t path_mtu;           /* UZ_MTU_256 .. UZ_MTU_4096 */
	uint8_t timeout;            /* 4.096 us * 2^timeout, 0 = none */
	uint8_t retry_cnt;          /* 0 .. 7 */
	uint8_t rnr_retry;          /* 0 .. 7, 7 = infinite */
	uint8_t min_rnr_timer;      /* IB encoding 0 .. 31 */
	uint8_t max_rd_atomic;      /* outstanding as requester */
	uint8_t max_dest_rd_atomic; /* outstanding as responder */
	uint32_t access_flags;      /* UZ_ACCESS_REMOTE_* allowed */
	uint32_t sq_psn;            /* 24 bits */
	uint32_t rq_psn;            /* 24 bits */
	uint32_t dest_qpn;          /* 24 bits */
	uint32_t qkey;              /* UD */
	uint16_t pkey_index;
	uint8_t port;               /* 1 */
	uint8_t sq_draining;        /* query only */
	uint8_t dgid[16];           /* RoCEv2: IPv4-mapped or IPv6 GID */
	uint8_t sgid[16];
	uint8_t dmac[6];
	uint8_t hop_limit;
	uint8_t traffic_class;
	uint32_t flow_label;
	uint32_t reserved[5];
};
UZ_ASSERT_SIZE(struct uz_qp_attr, 96);

#define UZ_QPS_RESET                0
#define UZ_QPS_INIT                 1
#define UZ_QPS_RTR                  2
#define UZ_QPS_RTS                  3
#define UZ_QPS_SQD                  4
#define UZ_QPS_SQE                  5
#define UZ_QPS_ERR                  6

#define UZ_QP_ATTR_STATE            (1u << 0)
#define UZ_QP_ATTR_ACCESS           (1u << 1)
#define UZ_QP_ATTR_PKEY_INDEX       (1u << 2)
#define UZ_QP_ATTR_PORT             (1u << 3)
#define UZ_QP_ATTR_QKEY             (1u << 4)
#define UZ_QP_ATTR_AV               (1u << 5)  /* dgid, sgid, dmac, ... */
#define UZ_QP_ATTR_PATH_MTU         (1u << 6)
#define UZ_QP_ATTR_TIMEOUT          (1u << 7)
#define UZ_QP_ATTR_RETRY_CNT        (1u << 8)
#define UZ_QP_ATTR_RNR_RETRY        (1u << 9)
#define UZ_QP_ATTR_RQ_PSN           (1u << 10)
#define UZ_QP_ATTR_MAX_QP_RD_ATOMIC (1u << 11)
#define UZ_QP_ATTR_MIN_RNR_TIMER    (1u << 12)
#define UZ_QP_ATTR_SQ_PSN           (1u << 13)
#define UZ_QP_ATTR_MAX_DEST_RD_ATOMIC (1u << 14)
#define UZ_QP_ATTR_DEST_QPN         (1u << 15)

#define UZ_MTU_256                  1
#define UZ_MTU_512                  2
#define UZ_MTU_1024                 3
#define UZ_MTU_2048                 4
#define UZ_MTU_4096                 5

struct uz_cmd_create_srq {
	uint64_t ring_addr;         /* 2^log_depth RQ WQEs */
	uint32_t uctx;
	uint32_t pdn;
	uint32_t limit;             /* arm: UZ_EQE_SRQ_LIMIT below this */
	uint8_t log_depth;
	uint8_t log_wqe_size;       /* as rq_log_wqe_size */
	uint8_t flags;              /* UZ_SRQF_* */
	uint8_t reserved_8;
	uint32_t xrcd;              /* UZ_SRQF_XRC: its XRC domain */
	uint32_t cqn;               /* UZ_SRQF_XRC, UZ_SRQF_TM: its CQ */
	uint64_t ops_addr;          /* UZ_SRQF_TM: 2^ops_log_depth uz_tm_op */
	uint16_t max_tags;          /* UZ_SRQF_TM: tag list entries */
	uint8_t ops_log_depth;      /* UZ_SRQF_TM: 1 .. log2(max_tm_ops) */
	uint8_t reserved_8b;
	uint32_t reserved_32;
};

/*
 * An XRC SRQ (UZ_SRQF_XRC, UZ_CAP_XRC) belongs to an XRC domain and has a
 * CQ of its own: a message an XRC initiator sends to its number (in the
 * XRCETH) through any XRC target QP of the same domain consumes one of
 * its WQEs, is checked against its PD and completes into its CQ.
 */
#define UZ_SRQF_XRC                 (1u << 0)

/*
 * Tag matching (UZ_CAP_TM, docs/device-spec.md 8.19).  A TM SRQ
 * (UZ_SRQF_TM) has, besides its ring of receive WQEs (the buffers of
 * unexpected and untagged messages), a list of max_tags tagged buffers
 * and a ring of list operations (struct uz_tm_op) with a doorbell of its
 * own (out2 of CREATE_SRQ; the value is the new producer index).  Each
 * SEND to a QP on the SRQ starts with a tag matching header (TMH); an
 * EAGER or RNDV message whose tag matches an entry lands in, or is read
 * by the device into, that entry's buffer; everything else takes a
 * receive WQE.  Completions of operations and receives go to the SRQ's
 * CQ (cqn).
 */
#define UZ_SRQF_TM                  (1u << 1)

struct uz_tm_op {
	uint64_t wr_id;             /* of the operation's own completion */
	uint64_t recv_wr_id;        /* ADD: of the tagged receive's CQEs */
	uint64_t tag;               /* ADD */
	/* ADD: a message matches when its tag & mask == tag & mask */
	uint64_t mask;
	uint32_t unexpected_cnt;    /* with UZ_TM_OP_F_SYNC */
	uint16_t index;             /* ADD, DEL: the tag list entry */
	uint8_t opcode;             /* UZ_TM_OP_* */
	uint8_t flags;              /* UZ_TM_OP_F_* */
	uint8_t num_sge;            /* ADD: 0 or 1 */
	uint8_t reserved[7];
	uint64_t addr;              /* ADD: the tagged buffer, an SGE */
	uint32_t length;
	uint32_t lkey;
};
UZ_ASSERT_SIZE(struct uz_tm_op, 64);

#define UZ_TM_OP_ADD                1
#define UZ_TM_OP_DEL                2
#define UZ_TM_OP_SYNC               3
#define UZ_TM_OP_F_SIGNALED         (1u << 0)  /* a CQE when done */
#define UZ_TM_OP_F_SYNC             (1u << 1)  /* unexpected_cnt is valid */

/*
 * The TMH (16 bytes, first in the payload of every SEND to a TM SRQ) and,
 * after it in a RNDV message, the rendezvous header (16 bytes); fields in
 * network order.
 */
#define UZ_TMH_LEN                  16
#define UZ_TMH_OPCODE               0   /* 1 byte: UZ_TMH_* */
#define UZ_TMH_APP_CTX              4   /* 4 bytes */
#define UZ_TMH_TAG                  8   /* 8 bytes */
#define UZ_RVH_LEN                  16
#define UZ_RVH_VA                   16  /* 8 bytes: the sender's buffer */
#define UZ_RVH_RKEY                 24  /* 4 bytes */
#define UZ_RVH_DLEN                 28  /* 4 bytes: its length */
#define UZ_TMH_NO_TAG               0
#define UZ_TMH_RNDV                 1
#define UZ_TMH_FIN                  2
#define UZ_TMH_EAGER                3
#define UZ_TM_RNDV_HDR_MAX          64  /* longest RNDV message (bytes) */
#define UZ_TM_MAX_SGE               1

struct uz_cmd_modify_srq {
	uint32_t srqn;
	uint32_t limit;             /* new limit, 0 disarms */
	uint32_t uctx;              /* the SRQ's context */
};

/*
 * RESIZE_SRQ: the SRQ continues in a ring of 2^log_depth WQEs (of the same
 * size) with its indices unchanged: the driver has copied each WQE posted
 * and not yet consumed, at index i, to slot i mod 2^log_depth of the new
 * ring.  The WQEs outstanding must fit, and the limit (the SRQ's, or with
 * UZ_SRQ_RESIZE_LIMIT the new one given) stay below the depth.
 */
struct uz_cmd_resize_srq {
	uint64_t ring_addr;
	uint32_t srqn;
	uint32_t uctx;
	uint8_t log_depth;
	uint8_t flags;              /* UZ_SRQ_RESIZE_LIMIT */
	uint16_t reserved_16;
	uint32_t limit;             /* with UZ_SRQ_RESIZE_LIMIT: as MODIFY_SRQ */
};

#define UZ_SRQ_RESIZE_LIMIT         (1u << 0)

/*
 * Memory regions.  The NIC keeps one entry per MR (key, PD, access, iova,
 * length, page size and the address of its page list); the page list, an
 * array of 64-bit DMA addresses of the MR's pages, stays in host memory,
 * owned by the driver.  The NIC caches translations (MR, page) -> address
 * in an on-NIC translation cache of xlat_cache_entries entries and reads
 * the page list on a miss.  A DMA MR (UZ_MR_F_DMA) translates iova 1:1.
 */
struct uz_cmd_reg_mr {
	uint64_t iova;
	uint64_t length;
	union {
		uint64_t pbl_addr;  /* page list: npages x uint64_t */
		uint64_t dm_offset; /* UZ_MR_F_DM: byte offset in the DM */
	};
	union {
		uint32_t npages;
		uint32_t dm;        /* UZ_MR_F_DM: the allocation */
	};
	uint32_t pdn;
	uint32_t access;            /* UZ_ACCESS_* */
	uint8_t page_shift;         /* 12 .. 30 */
	uint8_t key;                /* low 8 bits of the key */
	uint8_t flags;              /* UZ_MR_F_* */
	uint8_t reserved_8;
	uint32_t uctx;
};

#define UZ_MR_F_DMA                 (1u << 0)
#define UZ_MR_F_FAST                (1u << 1)
#define UZ_MR_F_ODP                 (1u << 2)
#define UZ_MR_F_DM                  (1u << 3)
#define UZ_MR_F_IMPLICIT            (1u << 4)

/*
 * Device memory (UZ_CAP_DM): dm_size bytes of RAM on the NIC, at
 * dm_offset in BAR 4 (after the doorbell pages), handed out in 4 KiB
 * pages so that each allocation can be mapped into one process alone.
 * ALLOC_DM gives a context an allocation, zeroed, at a multiple of
 * 2^log_align bytes (at least a page); the host reads and writes it
 * through the BAR.  A DM MR (UZ_MR_F_DM, REG_MR with dm and dm_offset
 * instead of a page list; page_shift ignored) maps [iova, iova + length)
 * to the allocation from dm_offset, which it must fit; the allocation
 * and the MR belong to the same context, and DEALLOC_DM of an allocation
 * an MR still uses is UZ_CMD_BUSY.  A DM MR cannot be re-registered.
 */
struct uz_cmd_alloc_dm {
	uint64_t length;            /* bytes, 1 .. dm_size */
	uint32_t uctx;
	uint8_t log_align;          /* 0 .. 31 */
	uint8_t reserved_8;
	uint16_t reserved_16;
};

#define UZ_DM_PAGE_SIZE             0x1000

/*
 * An on-demand-paging MR (UZ_MR_F_ODP) has a page list whose entries may
 * be absent: an entry maps its page only with UZ_PTE_PRESENT; with
 * UZ_PTE_ERROR the page cannot be mapped and an access fails.  An access
 * to an absent page raises UZ_EQE_PAGE_FAULT (at most one outstanding per
 * MR) and waits: a responder answers RNR NAK, a requester stops the QP
 * until UZ_CMD_PAGE_RESUME names the MR.
 */
#define UZ_PTE_PRESENT              (1ull << 0)
#define UZ_PTE_ERROR                (1ull << 1)

/*
 * An implicit ODP MR (UZ_MR_F_IMPLICIT, UZ_CAP_ODP_IMPLICIT) covers a
 * process's whole address space: iova 0, length UINT64_MAX, page_shift
 * UZ_IMR_SHIFT, and instead of a page list a table of UZ_IMR_ENTRIES
 * 64-bit entries, one per 1 GiB chunk of the lower 2^47 bytes.  A
 * present entry (UZ_PTE_PRESENT) names in its high 32 bits the key of a
 * child: an ODP MR of the same context and PD whose iova and length are
 * exactly that chunk, through whose page list the access goes (faulting
 * on the child as any ODP MR's).  An absent entry raises
 * UZ_EQE_PAGE_FAULT on the implicit MR with data = the chunk; with
 * UZ_PTE_ERROR, or past the table, the access fails as for a page that
 * cannot be mapped.
 */
#define UZ_IMR_SHIFT                30
#define UZ_IMR_ENTRIES              (1u << 17)
#define UZ_IMR_ENTRY(key)           ((uint64_t)(key) << 32 | UZ_PTE_PRESENT)
#define UZ_IMR_KEY(entry)           ((uint32_t)((entry) >> 32))

/*
 * A fast-registration MR (UZ_MR_F_FAST, kernel only) is created free: its
 * key reaches nothing.  REG_MR takes pbl_addr and npages as the page list
 * and its capacity (1 .. max_fast_reg_pages), and ignores iova, length,
 * access and page_shift.  A UZ_WR_REG_MR work request on a QP of its PD
 * makes it valid with a new key byte, iova, length, access and page size,
 * reading the first npages entries of that same page list (the driver
 * writes them while the MR is free); UZ_WR_LOCAL_INV, or a SEND with
 * invalidate received on a QP of its PD, makes it free again.
 */
/*
 * REREG_MR: an MR with a page list (neither DMA nor fast-reg) changes in
 * place, keeping its key: its translation (iova, length and page list,
 * UZ_REREG_TRANS), PD (UZ_REREG_PD) or access (UZ_REREG_ACCESS), checked
 * as REG_MR checks them; fields of parts not named are ignored.  Its
 * cached translations are dropped.
 */
struct uz_cmd_rereg_mr {
	uint64_t iova;
	uint64_t length;
	uint64_t pbl_addr;          /* page list: npages x uint64_t */
	uint32_t npages;
	uint32_t pdn;
	uint32_t access;            /* UZ_ACCESS_* */
	uint8_t page_shift;         /* 12 .. 30 */
	uint8_t change;             /* UZ_REREG_* */
	uint16_t reserved_16;
	uint32_t uctx;
	uint32_t key;               /* the MR */
};

#define UZ_REREG_TRANS              (1u << 0)
#define UZ_REREG_PD                 (1u << 1)
#define UZ_REREG_ACCESS             (1u << 2)

/*
 * INVALIDATE_XLAT: the driver changed pages of an MR's page list; the NIC
 * drops its cached translations of [iova, iova + length) of that MR
 * (length 0: the whole MR) before it completes the command.
 */
struct uz_cmd_invalidate_xlat {
	uint32_t key;
	uint32_t uctx;
	uint64_t iova;
	uint64_t length;
};

#define UZ_ACCESS_LOCAL_WRITE       (1u << 0)
#define UZ_ACCESS_REMOTE_WRITE      (1u << 1)
#define UZ_ACCESS_REMOTE_READ       (1u << 2)
#define UZ_ACCESS_REMOTE_ATOMIC     (1u << 3)
#define UZ_ACCESS_MW_BIND           (1u << 4)  /* MR: windows may bind to it */
/*
 * MR: a peer's FLUSH to global visibility (UZ_CAP_PLACEMENT); IB's bit, as
 * those above
 */
#define UZ_ACCESS_FLUSH_GLOBAL      (1u << 8)

#define UZ_KEY_INDEX(key)           ((key) >> 8)
#define UZ_KEY_BYTE(key)            ((key) & 0xff)
#define UZ_KEY(index, byte)         ((uint32_t)(index) << 8 | (byte))

/*
 * Memory windows (UZ_CAP_MW) take entries of the MR table and keys of the
 * same form: MRs and MWs together number at most max_mr.  An MW is
 * allocated unbound (its key reaches nothing) in a PD, of type 1 or 2.
 * A UZ_WR_BIND_MW work request on an RC QP of the same PD binds it to a
 * range of an MR with UZ_ACCESS_MW_BIND and gives it remote rights and a
 * new key byte; a peer's RDMA through the window's key then reaches that
 * range of the MR.  A type 1 window serves every QP of its PD, is bound
 * again by another BIND_MW, and unbound by one of length 0.  A type 2
 * window serves only the QP that bound it, is bound only while unbound
 * and never with length 0, and is unbound by UZ_WR_LOCAL_INV on a QP of
 * its PD, by a SEND with invalidate received on the QP that bound it, and
 * when that QP is destroyed.  An MR with windows bound to it
 * can neither be deregistered nor re-registered (UZ_CMD_BUSY).
 */
struct uz_cmd_alloc_mw {
	uint32_t pdn;
	uint32_t uctx;
	uint8_t type;               /* UZ_MW_TYPE_* */
	uint8_t key;                /* low 8 bits of the key */
	uint16_t reserved_16;
};

#define UZ_MW_TYPE_1                1
#define UZ_MW_TYPE_2                2

/*
 * UD multicast (UZ_CAP_MCAST).  A group is an IPv4-mapped multicast GID
 * (::ffff:224.0.0.0/4); a UD send to QPN UZ_MCAST_QPN addressed to a
 * group is delivered to every QP attached to it on each device of the
 * link, the sender's own included.
 */
struct uz_cmd_mcast {               /* ATTACH_MCAST, DETACH_MCAST */
	uint8_t mgid[16];
	uint32_t qpn;               /* a UD QP of uctx */
	uint32_t uctx;
};

#define UZ_MCAST_QPN                0xffffffu
#define UZ_MCAST_MAX_GRP            64
#define UZ_MCAST_MAX_QP_ATTACH      16

/* Address handles for UD: where to send. */
struct uz_cmd_create_ah {
	uint8_t dgid[16];
	uint8_t dmac[6];
	uint8_t hop_limit;
	uint8_t traffic_class;
	uint32_t flow_label;
	uint32_t pdn;
	uint32_t uctx;
	uint8_t sgid_index;
	uint8_t reserved_8[3];
	uint8_t sgid[16];
};

/* Every command fits the 56-byte payload of struct uz_admin_cmd. */
#define UZ_ASSERT_CMD(type) \
	_Static_assert(sizeof(type) <= 56, #type " fits a command")
UZ_ASSERT_CMD(struct uz_cmd_create_uctx);
UZ_ASSERT_CMD(struct uz_cmd_obj);
UZ_ASSERT_CMD(struct uz_cmd_create_cq);
UZ_ASSERT_CMD(struct uz_cmd_resize_cq);
UZ_ASSERT_CMD(struct uz_cmd_create_qp);
UZ_ASSERT_CMD(struct uz_cmd_modify_qp);
UZ_ASSERT_CMD(struct uz_cmd_query);
UZ_ASSERT_CMD(struct uz_cmd_create_srq);
UZ_ASSERT_CMD(struct uz_cmd_modify_srq);
UZ_ASSERT_CMD(struct uz_cmd_resize_srq);
UZ_ASSERT_CMD(struct uz_cmd_reg_mr);
UZ_ASSERT_CMD(struct uz_cmd_rereg_mr);
UZ_ASSERT_CMD(struct uz_cmd_create_ah);
UZ_ASSERT_CMD(struct uz_cmd_invalidate_xlat);
UZ_ASSERT_CMD(struct uz_cmd_alloc_mw);
UZ_ASSERT_CMD(struct uz_cmd_mcast);

#endif /* UZURA_ADMIN_CMDS_DEFS_H */
