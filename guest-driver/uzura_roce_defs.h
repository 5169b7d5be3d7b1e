/* SPDX-License-Identifier: (GPL-2.0-or-later OR BSD-2-Clause) */
/*
 * uzura RDMA NIC, hardware interface: the wire format (RoCEv2).
 *
 * Part of the hardware interface header set: see uzura_regs_defs.h.
 */
#ifndef UZURA_ROCE_DEFS_H
#define UZURA_ROCE_DEFS_H

#include "uzura_regs_defs.h"

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

#endif /* UZURA_ROCE_DEFS_H */
