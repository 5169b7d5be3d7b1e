/* SPDX-License-Identifier: (GPL-2.0-or-later OR BSD-2-Clause) */
/*
 * uzura RDMA NIC: the hardware interface.
 *
 * This header is the single definition of the device's programming model
 * (see docs/device-spec.md).  It is shared by the QEMU device model, the
 * qtests, the Linux driver and the rdma-core provider, so it depends only on
 * fixed-width integer types.  All multi-byte fields in device registers and
 * host-memory structures are little-endian; reserved fields are written as
 * zero by the driver and ignored by the device.
 */
#ifndef UZURA_HW_H
#define UZURA_HW_H

#ifdef __KERNEL__
#include <linux/types.h>
#else
#include <stdint.h>
#endif

#define UZ_ASSERT_SIZE(type, size) \
	_Static_assert(sizeof(type) == (size), #type " is " #size " bytes")

/* PCI identity (QEMU's experimental vendor range, as used by edu). */
#define UZ_PCI_VENDOR_ID            0x1234
#define UZ_PCI_DEVICE_ID            0x7a75
#define UZ_PCI_REVISION             0x01

/* ------------------------------------------------------------------ */
/* BARs                                                               */
/* ------------------------------------------------------------------ */

#define UZ_BAR_REGS                 0   /* registers, 64-bit memory */
#define UZ_BAR_MSIX                 2   /* MSI-X table and PBA */
#define UZ_BAR_DB                   4   /* doorbell pages */
#define UZ_BAR_REGS_SIZE            0x1000
#define UZ_BAR_MSIX_SIZE            0x1000
#define UZ_MSIX_TABLE_OFFSET        0x0000
#define UZ_MSIX_PBA_OFFSET          0x0800

/*
 * BAR 4 holds one 4 KiB doorbell page per context: page 0 belongs to the
 * kernel driver (admin queue, EQs, Ethernet queues, kernel QPs), pages
 * 1..max_uctx to user contexts.  A page holds 1024 32-bit doorbell slots;
 * the device assigns a slot to each queue at creation and returns its byte
 * offset in BAR 4.  Slot 0 of page 0 is the admin queue's doorbell.
 */
#define UZ_DB_PAGE_SIZE             0x1000
#define UZ_DB_SLOTS_PER_PAGE        (UZ_DB_PAGE_SIZE / 4)
#define UZ_DB_MAX_PAGES             1024
#define UZ_DB_ADMIN                 0x000 /* page 0, slot 0 */

/*
 * The device clock (UZ_CAP_TIMESTAMP): the nanoseconds of the machine's
 * virtual clock, which also times CQEs (UZ_CQF_TIMESTAMP).  The last two
 * slots of every doorbell page are no queue's: an aligned 8-byte load at
 * UZ_DB_CLOCK reads the clock, a 4-byte load there its low and at
 * UZ_DB_CLOCK + 4 its high 32 bits.  Stores to them are guest errors.
 */
#define UZ_DB_CLOCK                 0xff8 /* in every page */
#define UZ_CLOCK_KHZ                1000000 /* ticks are nanoseconds */

/* Queue doorbell values. */
#define UZ_DB_PI_MASK               0x00ffffffu /* SQ/RQ/SRQ/ETH: new PI */
#define UZ_DB_CI_MASK               0x00ffffffu /* CQ/EQ: new CI */
#define UZ_DB_ARM                   (1u << 31)  /* CQ/EQ: arm, any event */
#define UZ_DB_ARM_SOLICITED         (1u << 30)  /* CQ: arm, solicited only */

/* MSI-X vectors: vector 0 is the admin vector, EQs choose theirs. */
#define UZ_MSIX_VEC_ADMIN           0
#define UZ_MSIX_MAX_VECTORS         32

/* ------------------------------------------------------------------ */
/* Identification                                                     */
/* ------------------------------------------------------------------ */

#define UZ_MAGIC                    0x41525a55u /* "UZRA" */
#define UZ_VERSION_MAJOR            0
#define UZ_VERSION_MINOR            23
#define UZ_VERSION          ((UZ_VERSION_MAJOR << 16) | UZ_VERSION_MINOR)

/* ------------------------------------------------------------------ */
/* Registers (BAR 0)                                                  */
/* ------------------------------------------------------------------ */

/*
 * Every register is 32 bits wide and must be accessed with aligned 32-bit
 * loads and stores; any other access, and any access to an offset not
 * listed here, is a guest error: it is ignored (reads return 0) and
 * recorded in UZ_REG_ERR_*.
 */
#define UZ_REG_MAGIC                0x000 /* RO  UZ_MAGIC */
#define UZ_REG_VERSION              0x004 /* RO  UZ_VERSION */
#define UZ_REG_CAPS                 0x008 /* RO  UZ_CAP_* */
#define UZ_REG_NUM_VECTORS          0x00c /* RO  MSI-X vectors implemented */
#define UZ_REG_STATUS               0x010 /* RO  UZ_STATUS_* */
#define UZ_REG_RESET                0x014 /* WO  write UZ_RESET_KEY */
#define UZ_REG_MAC_LO               0x018 /* RO  MAC bytes 0..3 */
#define UZ_REG_MAC_HI               0x01c /* RO  MAC bytes 4..5 in 15:0 */
#define UZ_REG_SCRATCH              0x020 /* RW  free for the driver */
#define UZ_REG_ERR_STATUS           0x024 /* RO  UZ_ERR_* of the last error */
#define UZ_REG_ERR_COUNT            0x028 /* RO  guest errors since reset */
#define UZ_REG_ERR_ADDR             0x02c /* RO  offset of the last error */
#define UZ_REG_DB_PAGES             0x030 /* RO  doorbell pages in BAR 4 */
#define UZ_REG_LINK_SPEED           0x034 /* RO  advertised rate, Mb/s */

/* Admin queue: rings in host memory, see struct uz_admin_cmd/_cqe. */
#define UZ_REG_ADMIN_SQ_LO          0x040 /* RW  command ring, bits 31:0 */
#define UZ_REG_ADMIN_SQ_HI          0x044 /* RW  command ring, bits 63:32 */
#define UZ_REG_ADMIN_CQ_LO          0x048 /* RW  completion ring, 31:0 */
#define UZ_REG_ADMIN_CQ_HI          0x04c /* RW  completion ring, 63:32 */
#define UZ_REG_ADMIN_DEPTH          0x050 /* RW  log2 of entries, 1..12 */
#define UZ_REG_ADMIN_CTRL           0x054 /* RW  UZ_ADMIN_CTRL_* */
#define UZ_REG_ADMIN_STATUS         0x058 /* RO  UZ_ADMIN_STATUS_* */
#define UZ_REG_ADMIN_CI             0x05c /* RO  commands consumed */

#define UZ_REG_LAST                 UZ_REG_ADMIN_CI

/* UZ_REG_CAPS: functions this device implements. */
#define UZ_CAP_MSIX                 (1u << 0)  /* MSI-X, UZ_REG_NUM_VECTORS */
#define UZ_CAP_LINK_STATE           (1u << 1)  /* UZ_STATUS_LINK_UP valid */
#define UZ_CAP_ADMIN                (1u << 2)  /* admin queue */
#define UZ_CAP_ETH                  (1u << 3)  /* Ethernet function */
#define UZ_CAP_RDMA                 (1u << 4)  /* RDMA objects and queues */
#define UZ_CAP_CRW                  (1u << 5)  /* conditional RDMA write */
#define UZ_CAP_LINK_SPEED           (1u << 6)  /* UZ_REG_LINK_SPEED valid */
#define UZ_CAP_CQ_PAGES             (1u << 7)  /* UZ_CQF_PAGE_LIST */
#define UZ_CAP_FAST_REG             (1u << 8)  /* UZ_MR_F_FAST, REG_MR and
                                                * LOCAL_INV WRs, SEND_INV */
#define UZ_CAP_CQ_RESIZE            (1u << 9)  /* UZ_CMD_RESIZE_CQ */
#define UZ_CAP_MR_REREG             (1u << 10) /* UZ_CMD_REREG_MR */
#define UZ_CAP_MW                   (1u << 11) /* memory windows: ALLOC_MW,
                                                * UZ_WR_BIND_MW */
#define UZ_CAP_ODP                  (1u << 12) /* UZ_MR_F_ODP, page faults */
#define UZ_CAP_UC                   (1u << 13) /* UZ_QPT_UC */
#define UZ_CAP_MCAST                (1u << 14) /* UD multicast: ATTACH_MCAST */
#define UZ_CAP_SRQ_RESIZE           (1u << 15) /* UZ_CMD_RESIZE_SRQ */
#define UZ_CAP_PLACEMENT            (1u << 16) /* UZ_WR_FLUSH,
                                                * UZ_WR_ATOMIC_WRITE */
#define UZ_CAP_XRC                  (1u << 17) /* XRC: ALLOC_XRCD, XRC SRQs,
                                                * UZ_QPT_XRC_INI, _TGT */
#define UZ_CAP_TIMESTAMP            (1u << 18) /* the clock (UZ_DB_CLOCK),
                                                * UZ_CQF_TIMESTAMP */
#define UZ_CAP_DM                   (1u << 19) /* device memory: ALLOC_DM,
                                                * UZ_MR_F_DM, dm_size */
#define UZ_CAP_RAW                  (1u << 20) /* UZ_QPT_RAW, CREATE_FLOW */
#define UZ_CAP_ODP_IMPLICIT         (1u << 21) /* UZ_MR_F_IMPLICIT */
#define UZ_CAP_TM                   (1u << 22) /* tag matching SRQs */
#define UZ_CAP_RSS                  (1u << 23) /* UZ_QPT_RSS, UZ_QPF_NO_SQ */
#define UZ_CAP_SQ_SHADOW            (1u << 24) /* UZ_QPF_SQ_SHADOW */

/* UZ_REG_STATUS */
#define UZ_STATUS_READY             (1u << 0)  /* reset complete */
#define UZ_STATUS_LINK_UP           (1u << 1)  /* the Ethernet link is up */
#define UZ_STATUS_FATAL             (1u << 31) /* device error, reset */

/* UZ_REG_RESET: the key guards against stray writes. */
#define UZ_RESET_KEY                0x52534554u /* "RSET" */

/* UZ_REG_ADMIN_CTRL */
#define UZ_ADMIN_CTRL_ENABLE        (1u << 0)  /* start the admin queue */
#define UZ_ADMIN_CTRL_INTR          (1u << 1)  /* MSI-X 0 per batch */

/* UZ_REG_ADMIN_STATUS */
#define UZ_ADMIN_STATUS_ENABLED     (1u << 0)  /* queue is running */
#define UZ_ADMIN_STATUS_ERROR       (1u << 1)  /* stopped on a DMA fault */

#define UZ_ADMIN_DEPTH_MIN          1
#define UZ_ADMIN_DEPTH_MAX          12

/* UZ_REG_ERR_STATUS codes */
#define UZ_ERR_NONE                 0
#define UZ_ERR_BAD_OFFSET           1  /* no register at this offset */
#define UZ_ERR_BAD_SIZE             2  /* not an aligned 32-bit access */
#define UZ_ERR_READ_ONLY            3  /* store to a read-only register */
#define UZ_ERR_WRITE_ONLY           4  /* load from a write-only register */
#define UZ_ERR_BAD_VALUE            5  /* value not accepted */
#define UZ_ERR_BAD_DOORBELL         6  /* doorbell slot not assigned */
#define UZ_ERR_BAD_STATE            7  /* not valid in this state */

/* ------------------------------------------------------------------ */
/* Admin queue                                                        */
/* ------------------------------------------------------------------ */

/*
 * The driver writes 64-byte commands into the command ring and stores the
 * new producer index (free running, modulo 2^24) into the admin doorbell.
 * The device executes them in order and writes one 16-byte completion per
 * command into the completion ring, at the same ring position as the
 * command.  A completion is valid when its phase bit equals the pass of
 * the ring: 1 on the first pass after enabling, 0 on the second, and so on.
 * Every device-written ring entry (admin completion, EQE, CQE) keeps its
 * phase in its last 32 bits, which the device writes after the rest.
 */
struct uz_admin_cmd {
	uint8_t opcode;             /* UZ_CMD_* */
	uint8_t flags;              /* reserved */
	uint16_t cmd_id;            /* echoed in the completion */
	uint32_t reserved_32;
	union {
		uint8_t raw[56];
		struct uz_cmd_query_device {
			uint64_t buf_addr;  /* receives struct uz_device_attr */
			uint32_t buf_len;   /* bytes available at buf_addr */
			uint32_t reserved;
		} query_device;
		struct uz_cmd_set_mac {
			uint8_t mac[6];
			uint16_t reserved;
		} set_mac;
		struct uz_cmd_set_mtu {
			uint32_t mtu;       /* 68 .. UZ_MAX_MTU */
			uint32_t reserved;
		} set_mtu;
		struct uz_cmd_create_eq {
			uint64_t ring_addr; /* 2^log_depth uz_eqe */
			uint8_t log_depth;  /* UZ_EQ_DEPTH_MIN .. _MAX */
			uint8_t flags;      /* UZ_EQ_F_* */
			uint16_t vector;    /* MSI-X vector */
			uint32_t reserved;
		} create_eq;
		struct uz_cmd_destroy {
			uint32_t handle;    /* eqn, qpn, cqn, ... of the object */
			uint32_t reserved;
		} destroy;
		struct uz_cmd_create_eth_queue {
			uint64_t ring_addr; /* descriptors, uz_eth_desc */
			uint8_t log_depth;  /* UZ_ETH_DEPTH_MIN .. _MAX */
			uint8_t reserved_8;
			uint16_t reserved_16;
			uint32_t eqn;       /* EQ that receives its events */
		} create_eth_queue;
		/* RDMA object commands: see "RDMA objects" below. */
	};
};
UZ_ASSERT_SIZE(struct uz_admin_cmd, 64);

/* The phase bit is in the last byte, which the device writes last. */
struct uz_admin_cqe {
	uint32_t out0;              /* object handle (eqn, qpn, ...) */
	uint32_t out1;              /* BAR 4 doorbell offset of the object */
	uint32_t out2;              /* command specific */
	uint16_t cmd_id;            /* from the command */
	uint8_t status;             /* UZ_CMD_OK or an error below */
	uint8_t flags;              /* bit 0: phase */
};
UZ_ASSERT_SIZE(struct uz_admin_cqe, 16);

#define UZ_ADMIN_CQE_PHASE          (1u << 0)

/* Admin opcodes */
#define UZ_CMD_QUERY_DEVICE         0x01
#define UZ_CMD_SET_MAC              0x02
#define UZ_CMD_SET_MTU              0x03
#define UZ_CMD_CREATE_EQ            0x04
#define UZ_CMD_DESTROY_EQ           0x05
#define UZ_CMD_CREATE_ETH_TXQ       0x06
#define UZ_CMD_CREATE_ETH_RXQ       0x07
#define UZ_CMD_DESTROY_ETH_TXQ      0x08
#define UZ_CMD_DESTROY_ETH_RXQ      0x09
/* RDMA objects: 0x10 .. 0x3f, see "RDMA objects" below */
#define UZ_CMD_RDMA_FIRST           0x10
#define UZ_CMD_RDMA_LAST            0x3f

/* Admin completion status */
#define UZ_CMD_OK                   0x00
#define UZ_CMD_BAD_OPCODE           0x01 /* unknown opcode */
#define UZ_CMD_BAD_PARAM            0x02 /* a field is out of range */
#define UZ_CMD_BAD_ADDR             0x03 /* host memory not accessible */
#define UZ_CMD_NO_RESOURCES         0x04 /* object table full */
#define UZ_CMD_BAD_HANDLE           0x05 /* no such object */
#define UZ_CMD_BUSY                 0x06 /* object still in use */
#define UZ_CMD_NOT_SUPPORTED        0x07 /* valid but not implemented */
#define UZ_CMD_BAD_STATE            0x08 /* not valid in this state */
#define UZ_CMD_EXISTS               0x09 /* object already exists */

/* Returned by UZ_CMD_QUERY_DEVICE. */
struct uz_device_attr {
	uint32_t version;           /* UZ_VERSION */
	uint32_t caps;              /* UZ_CAP_* */
	uint8_t mac[6];             /* current MAC address */
	uint16_t reserved_112;
	uint32_t mtu;               /* current MTU */
	uint32_t max_mtu;           /* UZ_MAX_MTU */
	uint32_t num_vectors;       /* MSI-X vectors */
	uint32_t db_pages;          /* doorbell pages in BAR 4 */
	uint32_t max_eq;            /* event queues */
	uint32_t max_eq_depth;      /* entries per EQ */
	uint32_t max_eth_depth;     /* descriptors per Ethernet ring */
	uint32_t max_qp;            /* RDMA limits, 0 until implemented */
	uint32_t max_qp_wr;
	uint32_t max_sge;
	uint32_t max_inline;
	uint32_t max_cq;
	uint32_t max_cqe;
	uint32_t max_mr;
	uint64_t max_mr_size;
	uint32_t max_pd;
	uint32_t max_srq;
	uint32_t max_srq_wr;
	uint32_t max_ah;
	uint32_t max_qp_rd_atom;    /* outstanding READ/atomic per QP */
	uint32_t max_crw_tags;      /* conditional write tag table */
	uint32_t xlat_cache_entries; /* on-NIC translation cache */
	uint32_t page_size_cap;     /* bit n: pages of 2^n bytes */
	uint32_t max_fast_reg_pages; /* page list of a UZ_MR_F_FAST MR */
	uint32_t max_mcast_grp;     /* multicast groups (UZ_CAP_MCAST) */
	uint32_t max_mcast_qp_attach; /* QPs attached to one group */
	uint32_t max_xrcd;          /* XRC domains (UZ_CAP_XRC) */
	uint32_t dm_size;           /* device memory, bytes (UZ_CAP_DM) */
	uint32_t dm_offset;         /* where it starts in BAR 4 */
	uint32_t max_dm;            /* allocations of it */
	uint32_t max_tm_tags;       /* tag list of a TM SRQ (UZ_CAP_TM) */
	uint32_t max_tm_ops;        /* its ops ring, entries */
	uint32_t max_rss_tbl;       /* RSS table entries (UZ_CAP_RSS) */
	uint32_t reserved[2];
};
UZ_ASSERT_SIZE(struct uz_device_attr, 160);

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
#define UZ_CMD_CREATE_QP            0x16 /* out0: qpn, out1: SQ doorbell,
					  * out2: RQ doorbell */
#define UZ_CMD_MODIFY_QP            0x17
#define UZ_CMD_QUERY_QP             0x18 /* writes uz_qp_attr to buf */
#define UZ_CMD_DESTROY_QP           0x19
#define UZ_CMD_CREATE_SRQ           0x1a /* out0: srqn, out1: doorbell,
					  * out2: UZ_SRQF_TM ops doorbell */
#define UZ_CMD_MODIFY_SRQ           0x1b
#define UZ_CMD_DESTROY_SRQ          0x1c
#define UZ_CMD_REG_MR               0x1d /* out0: lkey = rkey */
#define UZ_CMD_DEREG_MR             0x1e
#define UZ_CMD_CREATE_AH            0x1f /* out0: ahn */
#define UZ_CMD_DESTROY_AH           0x20
#define UZ_CMD_QUERY_COUNTERS       0x21 /* writes u64 counters to buf,
					  * out0: how many, out1: UZ_CNT_NUM */
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
	uint64_t ring_addr;         /* 2^log_depth entries of uz_cqe (of
				     * uz_cqe_ts with UZ_CQF_TIMESTAMP), or
				     * the ring's page list
				     * (UZ_CQF_PAGE_LIST) */
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
#define UZ_QPF_NO_SQ                (1u << 1)  /* UZ_QPT_RAW: a receive
						* queue only (a WQ); sq_*
						* and send_cqn ignored */
#define UZ_QPF_SQ_SHADOW            (1u << 2)  /* a struct uz_sq_shadow
						* follows the SQ ring
						* (UZ_CAP_SQ_SHADOW) */

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
	UZ_CNT_SQ_SHADOW_TAKES = 91,    /* sq_shadow_takes: SQ producer
					 * indices read from shadow records */
	/* the link */
	UZ_CNT_RX_NOT_OURS = 92,    /* rx_not_ours: unicast frames to another
				     * MAC, which a hub delivers */
	/* ECN (mlx5's name) */
	UZ_CNT_NP_ECN_MARKED_ROCE_PACKETS = 93, /* np_ecn_marked_roce_packets:
						 * RoCE packets marked CE */
	/* congestion control (mlx5's names) */
	UZ_CNT_NP_CNP_SENT = 94,    /* np_cnp_sent: CNPs sent */
	UZ_CNT_RP_CNP_HANDLED = 95, /* rp_cnp_handled: CNPs that cut a rate */
	UZ_CNT_RP_CNP_IGNORED = 96, /* rp_cnp_ignored: CNPs taken, no effect */
	/* Ethernet */
	UZ_CNT_RX_OUT_OF_BUFFER = 97,   /* rx_out_of_buffer: no RX descriptor
					 * and the hold queue full */
	/* link-level flow control received (mlx5's names) */
	UZ_CNT_RX_PAUSE_CTRL_PHY = 98,  /* rx_pause_ctrl_phy: PAUSE and PFC
					 * frames */
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
	uint64_t mask;              /* ADD: a message matches when its tag
				     * & mask == tag & mask */
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
#define UZ_ACCESS_FLUSH_GLOBAL      (1u << 8)  /* MR: a peer's FLUSH to global
                                                * visibility (UZ_CAP_PLACEMENT);
                                                * IB's bit, as those above */

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
	uint32_t imm_data;          /* immediate (network order), or the key
				     * to invalidate (SEND_INV, LOCAL_INV;
				     * little-endian) */
	uint32_t rkey;              /* RDMA, atomic, STCRW: remote key;
				     * REG_MR, BIND_MW: the MR's or MW's
				     * new key */
	uint64_t remote_addr;       /* RDMA, atomic, STCRW; REG_MR: iova;
				     * BIND_MW: the window's address */
	union {
		struct {
			uint64_t compare_add; /* CMP_SWP compare, FETCH_ADD
					       * add, ATOMIC_WRITE the 8
					       * bytes to write */
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
#define UZ_WR_LOCAL_INV             0x08 /* local: free a fast-reg MR or
					  * unbind a type 2 MW */
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
#define UZ_WC_F_XRC                 (1u << 4)  /* a receive through an XRC
                                                * target QP (qpn): src_qp
                                                * is the XRC SRQ's number */
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
#define UZ_VERR_MR_STATE            0x08 /* REG_MR of a valid MR,
                                          * invalidation of a non-fast MR
                                          * or type 1 MW, BIND_MW of a
                                          * bound type 2 MW */
#define UZ_VERR_CRW_TABLE_FULL      0x10
#define UZ_VERR_CRW_DUP_TAG         0x11

/* ------------------------------------------------------------------ */
/* Wire format (RoCEv2)                                               */
/* ------------------------------------------------------------------ */

/*
 * Frames are Ethernet / IPv4 / UDP (destination port 4791) / BTH / ... /
 * ICRC, with the InfiniBand transport opcodes for RC and UD.  Conditional
 * writes use one manufacturer-specific RC opcode: STCRW carries the target
 * buffer for a tag to the requester, which then performs an RDMA WRITE
 * with immediate (immediate = low 32 bits of the tag).
 */
#define UZ_ROCE_UDP_PORT            4791
#define UZ_BTH_LEN                  12
#define UZ_ICRC_LEN                 4

/* The ECN field, the low two bits of the IPv4 TOS byte (RFC 3168). */
#define UZ_IP_ECN_MASK              0x03
#define UZ_IP_ECN_ECT0              0x02    /* ECN-capable, as sent */
#define UZ_IP_ECN_CE                0x03    /* congestion experienced */

/* BTH opcodes (InfiniBand transport opcodes, RC and UD). */
#define UZ_BTH_OP_SEND_FIRST        0x00
#define UZ_BTH_OP_SEND_MIDDLE       0x01
#define UZ_BTH_OP_SEND_LAST         0x02
#define UZ_BTH_OP_SEND_LAST_IMM     0x03
#define UZ_BTH_OP_SEND_ONLY         0x04
#define UZ_BTH_OP_SEND_ONLY_IMM     0x05
#define UZ_BTH_OP_WRITE_FIRST       0x06
#define UZ_BTH_OP_WRITE_MIDDLE      0x07
#define UZ_BTH_OP_WRITE_LAST        0x08
#define UZ_BTH_OP_WRITE_LAST_IMM    0x09
#define UZ_BTH_OP_WRITE_ONLY        0x0a
#define UZ_BTH_OP_WRITE_ONLY_IMM    0x0b
#define UZ_BTH_OP_READ_REQ          0x0c
#define UZ_BTH_OP_READ_RESP_FIRST   0x0d
#define UZ_BTH_OP_READ_RESP_MIDDLE  0x0e
#define UZ_BTH_OP_READ_RESP_LAST    0x0f
#define UZ_BTH_OP_READ_RESP_ONLY    0x10
#define UZ_BTH_OP_ACK               0x11
#define UZ_BTH_OP_ATOMIC_ACK        0x12
#define UZ_BTH_OP_CMP_SWP           0x13
#define UZ_BTH_OP_FETCH_ADD         0x14
#define UZ_BTH_OP_SEND_LAST_INV     0x16
#define UZ_BTH_OP_SEND_ONLY_INV     0x17
#define UZ_BTH_OP_FLUSH             0x1c /* FETH, RETH */
#define UZ_BTH_OP_ATOMIC_WRITE      0x1d /* RETH, 8 bytes of payload */
/* UC: the SEND and WRITE opcodes of RC (0x00..0x0b) with bit 5 set. */
#define UZ_BTH_OP_UC                0x20
/*
 * XRC: the RC opcodes 0x00..0x1d with bits 7:5 = 101; every request
 * carries an XRCETH (8 reserved bits, the 24-bit number of the XRC SRQ it
 * is for) right after the BTH.
 */
#define UZ_BTH_OP_XRC               0xa0
#define UZ_XRCETH_LEN               4
#define UZ_BTH_OP_UD_SEND_ONLY      0x64
#define UZ_BTH_OP_UD_SEND_ONLY_IMM  0x65
#define UZ_BTH_OP_RC_STCRW          0xc0
#define UZ_BTH_OP_RC_SACK           0xc1 /* selective ACK (recovery=sr) */
/*
 * RoCEv2's Congestion Notification Packet (IBA annex A17): a BTH with
 * BECN set, DestQP the QP whose packet arrived marked CE, PSN 0, then 16
 * reserved bytes and the ICRC.
 */
#define UZ_BTH_OP_CNP               0x81
#define UZ_BTH_BECN                 0x40 /* BTH byte 4, bit 6 */
#define UZ_CNP_PAYLOAD_LEN          16

/*
 * BTH byte 8 holds AckReq (bit 7) and 7 reserved bits; uzura's requester
 * sets bit 6 of them in RC requests when it takes SACKs (recovery=sr).
 */
#define UZ_BTH_B8_SR                0x40

/* FETH (FLUSH): placement type in bits 3:0, selectivity in bits 5:4. */
#define UZ_FETH_TYPE_MASK           0x0f
#define UZ_FETH_LEVEL_SHIFT         4
#define UZ_FETH_LEVEL_MASK          0x30

/* AETH syndromes: type in bits 6:5, value in bits 4:0. */
#define UZ_AETH_ACK                 0x00 /* | credits (unused: 0x1f) */
#define UZ_AETH_RNR_NAK             0x20 /* | min_rnr_timer */
#define UZ_AETH_NAK_SEQ             0x60
#define UZ_AETH_NAK_INV_REQ         0x61
#define UZ_AETH_NAK_REM_ACCESS      0x62
#define UZ_AETH_NAK_REM_OP          0x63
#define UZ_AETH_TYPE_MASK           0x60

/* Extended header of UZ_BTH_OP_RC_STCRW, after the BTH. */
struct uz_crweth {
	uint64_t tag;               /* big-endian on the wire */
	uint64_t va;
	uint32_t rkey;
	uint32_t length;
};
UZ_ASSERT_SIZE(struct uz_crweth, 24);

/*
 * Extended header of UZ_BTH_OP_RC_SACK, after its AETH: the responder
 * holds the packets after a hole and asks for the @count PSNs from
 * @missing_psn; the BTH PSN acknowledges everything before the hole.
 */
struct uz_sacketh {
	uint32_t missing_psn;       /* big-endian on the wire, 24 bits */
	uint32_t count;
};
UZ_ASSERT_SIZE(struct uz_sacketh, 8);

#endif /* UZURA_HW_H */
