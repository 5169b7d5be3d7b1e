/* SPDX-License-Identifier: (GPL-2.0-or-later OR BSD-2-Clause) */
/*
 * uzura RDMA NIC, hardware interface: the queues of the data path
 * (event queues, Ethernet rings, send and receive queues, completions).
 *
 * Part of the hardware interface header set: see uzura_regs_defs.h.
 */
#ifndef UZURA_IO_DEFS_H
#define UZURA_IO_DEFS_H

#include "uzura_regs_defs.h"

/* ------------------------------------------------------------------ */
/* Event queues                                                       */
/* ------------------------------------------------------------------ */

/*
 * An EQ is a ring of 16-byte entries in host memory written by the device.
 * An entry is valid when its phase bit equals the pass of the ring (1 on
 * the first pass).  The driver reports consumption by writing its consumer
 * index to the EQ's doorbell, with UZ_DB_ARM to have the next event raise
 * the EQ's MSI-X vector once.  Exactly one EQ may carry UZ_EQ_F_ASYNC and
 * receive the asynchronous events.
 */
struct uz_eqe {
	uint8_t type;               /* UZ_EQE_* */
	uint8_t reserved_8;
	uint16_t reserved_16;
	uint32_t handle;            /* object the event is about */
	uint32_t data;              /* event specific */
	uint32_t flags;             /* bit 31: phase */
};
UZ_ASSERT_SIZE(struct uz_eqe, 16);

#define UZ_EQE_PHASE                (1u << 31)

#define UZ_EQ_F_ASYNC               (1u << 0)

#define UZ_EQ_DEPTH_MIN             1  /* log2 */
#define UZ_EQ_DEPTH_MAX             16
#define UZ_MAX_EQ                   32

/* EQE types */
#define UZ_EQE_COMPLETION           0x01 /* handle: CQ with new CQEs */
#define UZ_EQE_ETH_TX               0x02 /* handle: TX queue, data: CI */
#define UZ_EQE_ETH_RX               0x03 /* handle: RX queue, data: CI */
#define UZ_EQE_PORT_ACTIVE          0x10 /* link came up */
#define UZ_EQE_PORT_DOWN            0x11 /* link went down */
#define UZ_EQE_QP_FATAL             0x12 /* handle: QP now in error */
#define UZ_EQE_CQ_ERROR             0x13 /* handle: CQ overflowed */
#define UZ_EQE_SRQ_LIMIT            0x14 /* handle: SRQ below its limit */
#define UZ_EQE_QP_LAST_WQE          0x15 /* handle: QP on SRQ drained */
#define UZ_EQE_EQ_OVERFLOW          0x16 /* handle: EQ that lost events */
#define UZ_EQE_DEVICE_FATAL         0x17 /* data: UZ_FATAL_* */
#define UZ_EQE_PAGE_FAULT           0x18 /* handle: ODP MR's key, data: page */
#define UZ_EQE_QP_REQ_ERR           0x19 /* handle: QP refused a request */
#define UZ_EQE_QP_ACCESS_ERR        0x1a /* handle: QP refused an access */

#define UZ_FATAL_ADMIN_DMA          0x01 /* admin ring not accessible */
#define UZ_FATAL_EQ_DMA             0x02 /* an EQ ring not accessible */

/* ------------------------------------------------------------------ */
/* Ethernet function                                                  */
/* ------------------------------------------------------------------ */

/*
 * One TX and one RX ring of 16-byte descriptors.  The driver fills
 * descriptors and stores the new producer index into the ring's doorbell;
 * the device writes each descriptor back with UZ_ETH_DONE and posts an
 * EQE (UZ_EQE_ETH_TX/RX, data = device consumer index) to the ring's EQ.
 *
 * TX: a frame is one or more descriptors; all but the last carry
 * UZ_ETH_TX_MORE.  RX: one frame per descriptor; the device writes its
 * length into len.  Frames carry no FCS; checksums are not offloaded.
 */
struct uz_eth_desc {
	uint64_t addr;              /* buffer */
	uint16_t len;               /* TX: bytes; RX: buffer size, then frame */
	uint16_t flags;             /* UZ_ETH_TX_* by the driver */
	uint32_t status;            /* written by the device: UZ_ETH_* */
};
UZ_ASSERT_SIZE(struct uz_eth_desc, 16);

#define UZ_ETH_TX_MORE              (1u << 0)  /* frame continues */

#define UZ_ETH_DONE                 (1u << 31) /* descriptor completed */
#define UZ_ETH_ERR_MASK             0xffu
#define UZ_ETH_ERR_NONE             0x00
#define UZ_ETH_ERR_DMA              0x01 /* buffer not accessible */
#define UZ_ETH_ERR_TOO_LONG         0x02 /* above UZ_ETH_FRAME_MAX */
#define UZ_ETH_ERR_TOO_SHORT        0x03 /* TX frame below 14 bytes */
#define UZ_ETH_ERR_LINK_DOWN        0x04 /* TX while the link is down */

#define UZ_ETH_DEPTH_MIN            1  /* log2 */
#define UZ_ETH_DEPTH_MAX            12
#define UZ_ETH_HDR_LEN              14
#define UZ_ETH_VLAN_LEN             4
#define UZ_MIN_MTU                  68
#define UZ_MAX_MTU                  9000
#define UZ_DEFAULT_MTU              1500
/* Largest frame for an MTU: header and one VLAN tag, no FCS. */
#define UZ_ETH_FRAME_MAX(mtu)       ((mtu) + UZ_ETH_HDR_LEN + UZ_ETH_VLAN_LEN)

/* ------------------------------------------------------------------ */
/* Work queues                                                        */
/* ------------------------------------------------------------------ */

/*
 * Send queue: a ring of 2^sq_log_depth WQEs of 2^sq_log_wqe_size bytes,
 * each a 64-byte header followed by scatter/gather entries or inline data.
 * Receive queue and SRQ: WQEs of a 16-byte header and SGEs.  The driver
 * writes WQEs and stores the new producer index (free running, modulo 2^24)
 * into the queue's doorbell; the device reads them by DMA.
 */
/*
 * SQ shadow doorbell (UZ_QPF_SQ_SHADOW, docs/device-spec.md 8.6.1): 64
 * bytes right after the SQ ring.  The driver stores each new producer
 * index in pi, then (after a full barrier) reads event, and rings the
 * doorbell only when UZ_SQ_SHADOW_NEED_DB() says the device has stopped
 * reading pi.  While the QP has messages in flight the device reads pi
 * whenever it runs the QP, so a busy sender rings once.  As virtio's
 * event index: the device writes event = the producer index it last saw
 * before it stops, then reads pi once more.
 */
struct uz_sq_shadow {
	uint32_t pi;                /* driver: the SQ's producer index */
	uint32_t event;             /* device: ring once pi passes this */
	uint32_t reserved[14];
};

/* Ring the doorbell when a post moved pi from @old past @event to @pi. */
#define UZ_SQ_SHADOW_NEED_DB(event, pi, old) \
	((((pi) - (event) - 1) & 0x00ffffffu) < (((pi) - (old)) & 0x00ffffffu))

struct uz_sge {
	uint64_t addr;
	uint32_t length;
	uint32_t lkey;
};
UZ_ASSERT_SIZE(struct uz_sge, 16);
UZ_ASSERT_SIZE(struct uz_sq_shadow, 64);

struct uz_send_wqe {
	uint64_t wr_id;
	uint8_t opcode;             /* UZ_WR_* */
	uint8_t flags;              /* UZ_WQE_F_* */
	uint8_t num_sge;            /* or 0 with UZ_WQE_F_INLINE */
	uint8_t reserved_8;
	uint32_t inline_len;        /* bytes of inline data after the header */
	/*
	 * immediate (network order), or the key to invalidate (SEND_INV,
	 * LOCAL_INV; little-endian)
	 */
	uint32_t imm_data;
	/*
	 * RDMA, atomic, STCRW: remote key; REG_MR, BIND_MW: the MR's or MW's
	 * new key
	 */
	uint32_t rkey;
	/* RDMA, atomic, STCRW; REG_MR: iova; BIND_MW: the window's address */
	uint64_t remote_addr;
	union {
		struct {
			/*
			 * CMP_SWP compare, FETCH_ADD add, ATOMIC_WRITE the 8
			 * bytes to write
			 */
			uint64_t compare_add;
			uint64_t swap;
		} atomic;
		struct {
			uint32_t ahn;
			uint32_t remote_qpn;
			uint32_t remote_qkey;
			uint32_t reserved;
		} ud;
		struct {
			uint64_t length;    /* REG_MR: bytes from remote_addr */
			uint32_t access;    /* UZ_ACCESS_* */
			uint16_t npages;    /* page list entries to use */
			uint8_t page_shift; /* 12 .. 30 */
			uint8_t reserved;
		} reg;
		struct {
			uint64_t length;    /* BIND_MW: bytes from remote_addr */
			uint32_t access;    /* UZ_ACCESS_REMOTE_* */
			uint32_t mr_key;    /* the MR the window binds to */
		} bind;
		struct {
			uint64_t length;    /* FLUSH: bytes from remote_addr */
			uint8_t type;       /* UZ_FLUSH_GLOBAL, _PERSISTENT */
			uint8_t level;      /* UZ_FLUSH_RANGE, UZ_FLUSH_MR */
			uint16_t reserved_16;
			uint32_t reserved;
		} flush;
		struct {
			uint64_t tag;       /* CRW and STCRW */
			uint32_t length;    /* STCRW: bytes the target accepts */
			uint32_t reserved;
		} crw;
	};
	uint32_t xrc_srqn;          /* XRC initiator: the peer's XRC SRQ */
	uint32_t reserved_416;
	uint64_t reserved_448;
	/* followed by uz_sge[num_sge] or inline data */
};
UZ_ASSERT_SIZE(struct uz_send_wqe, 64);

/* The longest message, and the longest range a RETH names. */
#define UZ_MAX_MSG_SZ               0x80000000u

#define UZ_WR_SEND                  0x00
#define UZ_WR_SEND_IMM              0x01
#define UZ_WR_SEND_INV              0x02
#define UZ_WR_RDMA_WRITE            0x03
#define UZ_WR_RDMA_WRITE_IMM        0x04
#define UZ_WR_RDMA_READ             0x05
#define UZ_WR_ATOMIC_CMP_SWP        0x06
#define UZ_WR_ATOMIC_FETCH_ADD      0x07
/* local: free a fast-reg MR or unbind a type 2 MW */
#define UZ_WR_LOCAL_INV             0x08
#define UZ_WR_REG_MR                0x09 /* local: register a fast-reg MR */
#define UZ_WR_BIND_MW               0x0a /* local: bind an MW */
#define UZ_WR_FLUSH                 0x0b /* make a peer's range visible */
#define UZ_WR_ATOMIC_WRITE          0x0c /* 8 bytes, written whole */
#define UZ_WR_CRW                   0x10 /* conditional write, by tag */
#define UZ_WR_STCRW                 0x11 /* offer a buffer for a tag */

/*
 * FLUSH (UZ_CAP_PLACEMENT, IBA 1.5): the placement type names what the
 * peer makes of the writes before it (global visibility, persistence),
 * the selectivity level which memory: [remote_addr, + length) or the
 * whole MR the rkey names.
 */
#define UZ_FLUSH_GLOBAL             (1u << 0)
#define UZ_FLUSH_PERSISTENT         (1u << 1)
#define UZ_FLUSH_RANGE              0
#define UZ_FLUSH_MR                 1

#define UZ_WQE_F_SIGNALED           (1u << 0)
#define UZ_WQE_F_SOLICITED          (1u << 1)
#define UZ_WQE_F_FENCE              (1u << 2)
#define UZ_WQE_F_INLINE             (1u << 3)
#define UZ_WQE_F_AV                 (1u << 4)  /* struct uz_av follows */

/*
 * UZ_WQE_F_AV, for the kernel's UD and GSI QPs (uctx 0) only: the WQE
 * carries its address vector right after the header, instead of naming
 * an AH (ud.ahn is ignored); the SGEs or inline data follow the AV.  The
 * kernel creates AHs where it must not sleep (the MAD and CM layers), so
 * its AHs are made with no command, and a WQE's AV is copied when it is
 * posted, as ConnectX's datagram segment is.
 */
struct uz_av {
	uint8_t dgid[16];
	uint8_t sgid[16];
	uint8_t dmac[6];
	uint8_t hop_limit;
	uint8_t traffic_class;
	uint32_t flow_label;
	uint32_t reserved[5];
};
UZ_ASSERT_SIZE(struct uz_av, 64);

struct uz_recv_wqe {
	uint64_t wr_id;
	uint8_t num_sge;
	uint8_t reserved_8[7];
	/* followed by uz_sge[num_sge] */
};
UZ_ASSERT_SIZE(struct uz_recv_wqe, 16);

/*
 * Completion queue: a ring of 2^log_depth 32-byte CQEs written by the
 * device, valid when the phase bit equals the pass of the ring (1 on the
 * first pass).  The driver writes its consumer index to the CQ doorbell,
 * with UZ_DB_ARM (or UZ_DB_ARM_SOLICITED) to request one completion event.
 */
struct uz_cqe {
	uint64_t wr_id;
	uint32_t byte_len;
	uint32_t imm_data;          /* immediate (network order) or rkey */
	uint32_t qpn;               /* local QP, 24 bits */
	uint32_t src_qp;            /* UD receive: sender's QP */
	uint8_t opcode;             /* UZ_WC_* */
	uint8_t status;             /* UZ_WC_STATUS_* */
	uint8_t wc_flags;           /* UZ_WC_F_* */
	uint8_t vendor_err;
	uint16_t pkey_index;
	uint8_t reserved_8;
	uint8_t flags;              /* bit 0: phase */
};
UZ_ASSERT_SIZE(struct uz_cqe, 32);

#define UZ_CQE_PHASE                (1u << 0)

/*
 * The 64-byte CQE of a CQ with UZ_CQF_TIMESTAMP (UZ_CAP_TIMESTAMP): the
 * device clock (UZ_DB_CLOCK) when the device wrote it, then the CQE, last
 * so that its phase stays in the entry's last byte.  RESIZE_CQ keeps the
 * size: its flags must have UZ_CQF_TIMESTAMP exactly when the CQ has.
 */
struct uz_cqe_ts {
	uint64_t timestamp;
	uint64_t reserved[3];
	struct uz_cqe cqe;
};
UZ_ASSERT_SIZE(struct uz_cqe_ts, 64);

#define UZ_WC_SEND                  0x00
#define UZ_WC_RDMA_WRITE            0x01
#define UZ_WC_RDMA_READ             0x02
#define UZ_WC_COMP_SWAP             0x03
#define UZ_WC_FETCH_ADD             0x04
#define UZ_WC_BIND_MW               0x05
#define UZ_WC_LOCAL_INV             0x06
#define UZ_WC_REG_MR                0x07
#define UZ_WC_FLUSH                 0x08
#define UZ_WC_ATOMIC_WRITE          0x09
#define UZ_WC_CRW                   0x10
#define UZ_WC_STCRW                 0x11
#define UZ_WC_TM_ADD                0x20 /* TM SRQ list operations */
#define UZ_WC_TM_DEL                0x21
#define UZ_WC_TM_SYNC               0x22
#define UZ_WC_RECV                  0x80
#define UZ_WC_RECV_RDMA_WITH_IMM    0x81
#define UZ_WC_TM_RECV               0x82 /* EAGER or RNDV, matched or not */
#define UZ_WC_TM_NO_TAG             0x83

#define UZ_WC_F_IMM                 (1u << 0)
#define UZ_WC_F_INV                 (1u << 1)
#define UZ_WC_F_GRH                 (1u << 2)  /* UD: 40-byte GRH first */
#define UZ_WC_F_IPV4                (1u << 3)  /* GRH holds an IPv4 hdr */
/* a receive through an XRC target QP (qpn): src_qp is the XRC SRQ's number */
#define UZ_WC_F_XRC                 (1u << 4)
#define UZ_WC_F_TM_SYNC_REQ         (1u << 5)  /* TM: out of sync */
#define UZ_WC_F_TM_MATCH            (1u << 6)  /* TM: a tag matched */
#define UZ_WC_F_TM_DATA_VALID       (1u << 7)  /* TM: the data is there */

/*
 * TM SRQ completions (qpn: the QP of a receive, the SRQ's number for an
 * operation).  Those of a tagged buffer (UZ_WC_F_TM_MATCH, and a RNDV's
 * second, UZ_WC_F_TM_DATA_VALID alone) and of ADD and DEL have the entry
 * in pkey_index; a matched receive's has the message's tag in imm_data
 * (low 32 bits) and src_qp (high 32 bits), both little-endian like every
 * CQE field but an immediate, and recv_wr_id as wr_id.  An operation's
 * has its ring index (the producer index it was posted at) in byte_len.
 */

/* Completion status: the InfiniBand work completion status values. */
#define UZ_WC_STATUS_SUCCESS        0
#define UZ_WC_STATUS_LOC_LEN_ERR    1
#define UZ_WC_STATUS_LOC_QP_OP_ERR  2
#define UZ_WC_STATUS_LOC_PROT_ERR   4
#define UZ_WC_STATUS_WR_FLUSH_ERR   5
#define UZ_WC_STATUS_MW_BIND_ERR    6
#define UZ_WC_STATUS_BAD_RESP_ERR   7
#define UZ_WC_STATUS_LOC_ACCESS_ERR 8
#define UZ_WC_STATUS_REM_INV_REQ_ERR 9
#define UZ_WC_STATUS_REM_ACCESS_ERR 10
#define UZ_WC_STATUS_REM_OP_ERR     11
#define UZ_WC_STATUS_RETRY_EXC_ERR  12
#define UZ_WC_STATUS_RNR_RETRY_EXC_ERR 13
#define UZ_WC_STATUS_REM_ABORT_ERR  16
#define UZ_WC_STATUS_FATAL_ERR      19
#define UZ_WC_STATUS_GENERAL_ERR    21
#define UZ_WC_STATUS_TM_ERR         22 /* a TM list operation failed */
#define UZ_WC_STATUS_TM_RNDV_INCOMPLETE 23

/* Vendor error detail in uz_cqe.vendor_err. */
#define UZ_VERR_NONE                0x00
#define UZ_VERR_BAD_WQE             0x01 /* malformed WQE */
#define UZ_VERR_BAD_LKEY            0x02
#define UZ_VERR_BAD_RKEY            0x03
#define UZ_VERR_BOUNDS              0x04 /* outside the MR */
#define UZ_VERR_ACCESS              0x05 /* MR lacks the access right */
#define UZ_VERR_PD                  0x06 /* MR of another PD */
#define UZ_VERR_DMA                 0x07 /* host page not accessible */
/*
 * REG_MR of a valid MR, invalidation of a non-fast MR or type 1 MW, BIND_MW of
 * a bound type 2 MW
 */
#define UZ_VERR_MR_STATE            0x08
#define UZ_VERR_CRW_TABLE_FULL      0x10
#define UZ_VERR_CRW_DUP_TAG         0x11

#endif /* UZURA_IO_DEFS_H */
