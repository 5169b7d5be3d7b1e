/* SPDX-License-Identifier: (GPL-2.0-or-later OR BSD-2-Clause) */
/*
 * uzura RDMA NIC, hardware interface: the admin queue and device commands.
 *
 * Part of the hardware interface header set: see uzura_regs_defs.h.
 */
#ifndef UZURA_ADMIN_DEFS_H
#define UZURA_ADMIN_DEFS_H

#include "uzura_regs_defs.h"

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

#endif /* UZURA_ADMIN_DEFS_H */
