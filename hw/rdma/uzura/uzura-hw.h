/* SPDX-License-Identifier: (GPL-2.0-or-later OR BSD-2-Clause) */
/*
 * uzura RDMA NIC: the hardware interface.
 *
 * This header is the single definition of the device's programming model
 * (see docs/device-spec.md).  It is shared by the QEMU device model, the
 * qtests, the Linux driver and the rdma-core provider, so it depends only on
 * fixed-width integer types.  All multi-byte fields in device registers and
 * host-memory structures are little-endian.
 */
#ifndef UZURA_HW_H
#define UZURA_HW_H

#ifdef __KERNEL__
#include <linux/types.h>
#else
#include <stdint.h>
#endif

/* PCI identity (QEMU's experimental vendor range, as used by edu). */
#define UZ_PCI_VENDOR_ID            0x1234
#define UZ_PCI_DEVICE_ID            0x7a75
#define UZ_PCI_REVISION             0x01

/* BARs */
#define UZ_BAR_REGS                 0   /* registers, 64-bit memory */
#define UZ_BAR_MSIX                 2   /* MSI-X table and PBA */
#define UZ_BAR_REGS_SIZE            0x1000
#define UZ_BAR_MSIX_SIZE            0x1000
#define UZ_MSIX_TABLE_OFFSET        0x0000
#define UZ_MSIX_PBA_OFFSET          0x0800

/* MSI-X vectors: vector 0 is the admin/async vector, the rest serve EQs. */
#define UZ_MSIX_VEC_ADMIN           0
#define UZ_MSIX_MAX_VECTORS         32

/* Identification */
#define UZ_MAGIC                    0x41525a55u /* "UZRA" */
#define UZ_VERSION_MAJOR            0
#define UZ_VERSION_MINOR            1
#define UZ_VERSION          ((UZ_VERSION_MAJOR << 16) | UZ_VERSION_MINOR)

/*
 * Register map of BAR 0.  Every register is 32 bits wide and must be
 * accessed with aligned 32-bit loads and stores; any other access, and any
 * access to an offset not listed here, is a guest error: it is ignored
 * (reads return 0) and recorded in UZ_REG_ERR_STATUS.
 */
#define UZ_REG_MAGIC                0x000 /* RO  UZ_MAGIC */
#define UZ_REG_VERSION              0x004 /* RO  UZ_VERSION */
#define UZ_REG_CAPS                 0x008 /* RO  UZ_CAP_* */
#define UZ_REG_NUM_VECTORS          0x00c /* RO  MSI-X vectors implemented */
#define UZ_REG_STATUS               0x010 /* RO  UZ_STATUS_* */
#define UZ_REG_RESET                0x014 /* WO  write UZ_RESET_KEY */
#define UZ_REG_MAC_LO               0x018 /* RO  MAC bytes 0..3 */
#define UZ_REG_MAC_HI               0x01c /* RO  MAC bytes 4..5 in bits 15:0 */
#define UZ_REG_SCRATCH              0x020 /* RW  free for the driver */
#define UZ_REG_ERR_STATUS           0x024 /* RO  UZ_ERR_* of the last error */
#define UZ_REG_ERR_COUNT            0x028 /* RO  guest errors since reset */
#define UZ_REG_ERR_ADDR             0x02c /* RO  offset of the last error */

#define UZ_REG_LAST                 UZ_REG_ERR_ADDR

/* UZ_REG_CAPS: functions this device implements. */
#define UZ_CAP_MSIX                 (1u << 0)  /* MSI-X, UZ_REG_NUM_VECTORS */
#define UZ_CAP_LINK_STATE           (1u << 1)  /* UZ_STATUS_LINK_UP is valid */

/* UZ_REG_STATUS */
#define UZ_STATUS_READY             (1u << 0)  /* reset complete */
#define UZ_STATUS_LINK_UP           (1u << 1)  /* the Ethernet link is up */
#define UZ_STATUS_FATAL             (1u << 31) /* device error, reset needed */

/* UZ_REG_RESET: the key guards against stray writes. */
#define UZ_RESET_KEY                0x52534554u /* "RSET" */

/* UZ_REG_ERR_STATUS codes */
#define UZ_ERR_NONE                 0
#define UZ_ERR_BAD_OFFSET           1  /* no register at this offset */
#define UZ_ERR_BAD_SIZE             2  /* access not 32 bits wide and aligned */
#define UZ_ERR_READ_ONLY            3  /* store to a read-only register */
#define UZ_ERR_WRITE_ONLY           4  /* load from a write-only register */
#define UZ_ERR_BAD_VALUE            5  /* value not accepted (e.g. reset key) */

#endif /* UZURA_HW_H */
