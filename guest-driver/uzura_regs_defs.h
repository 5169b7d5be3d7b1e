/* SPDX-License-Identifier: (GPL-2.0-or-later OR BSD-2-Clause) */
/*
 * uzura RDMA NIC, hardware interface: the PCI function and its registers.
 *
 * The uzura_*_defs.h headers are the single definition of the device's
 * programming model (docs/device-spec.md).  They live with the driver, as
 * efa's do; QEMU takes them into include/standard-headers/ and the
 * rdma-core provider into providers/uzura/, so they depend only on
 * fixed-width integer types.  All multi-byte fields in device
 * registers and host-memory structures are little-endian; reserved
 * fields are written as zero by the driver and ignored by the device.
 */
#ifndef UZURA_REGS_DEFS_H
#define UZURA_REGS_DEFS_H

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
/* UZ_MR_F_FAST, REG_MR and LOCAL_INV WRs, SEND_INV */
#define UZ_CAP_FAST_REG             (1u << 8)
#define UZ_CAP_CQ_RESIZE            (1u << 9)  /* UZ_CMD_RESIZE_CQ */
#define UZ_CAP_MR_REREG             (1u << 10) /* UZ_CMD_REREG_MR */
/* memory windows: ALLOC_MW, UZ_WR_BIND_MW */
#define UZ_CAP_MW                   (1u << 11)
#define UZ_CAP_ODP                  (1u << 12) /* UZ_MR_F_ODP, page faults */
#define UZ_CAP_UC                   (1u << 13) /* UZ_QPT_UC */
#define UZ_CAP_MCAST                (1u << 14) /* UD multicast: ATTACH_MCAST */
#define UZ_CAP_SRQ_RESIZE           (1u << 15) /* UZ_CMD_RESIZE_SRQ */
/* UZ_WR_FLUSH, UZ_WR_ATOMIC_WRITE */
#define UZ_CAP_PLACEMENT            (1u << 16)
/* XRC: ALLOC_XRCD, XRC SRQs, UZ_QPT_XRC_INI, _TGT */
#define UZ_CAP_XRC                  (1u << 17)
/* the clock (UZ_DB_CLOCK), UZ_CQF_TIMESTAMP */
#define UZ_CAP_TIMESTAMP            (1u << 18)
/* device memory: ALLOC_DM, UZ_MR_F_DM, dm_size */
#define UZ_CAP_DM                   (1u << 19)
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

#endif /* UZURA_REGS_DEFS_H */
