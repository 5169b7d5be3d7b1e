/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uzura RDMA NIC: RoCEv2 frames.
 *
 * Building (Ethernet / IPv4 / UDP 4791 / BTH / extended headers / payload
 * / ICRC) and parsing, and the receive demultiplexer that hands requests
 * to the responder and responses to the requester.  A frame that makes no
 * sense is dropped and counted here, before any QP sees it.
 */
#include "qemu/osdep.h"
#include "net/net.h"
#include "net/checksum.h"
#include "qemu/host-utils.h"
#include "uzura-core.h"
#include "trace.h"

#define ETH_HLEN        14
#define IP_HLEN         20
#define UDP_HLEN        8
#define ROCE_HDRS       UZ_ROCE_BTH_OFF
#define ETHERTYPE_IPV4  0x0800
#define IPPROTO_UDP_    17

#define RETH_LEN        16
#define AETH_LEN        4
#define ATOMIC_LEN      28
#define ATOMIC_ACK_LEN  8
#define IMM_LEN         4
#define DETH_LEN        8
#define CRW_LEN         ((int)sizeof(struct uz_crweth))
#define SACK_LEN        ((int)sizeof(struct uz_sacketh))
#define FETH_LEN        4

#define SEND    (UZ_H_PAYLOAD | UZ_H_REQ)
#define WRITE   (UZ_H_PAYLOAD | UZ_H_REQ)
#define F       UZ_H_FIRST
#define L       UZ_H_LAST
#define OP(h, fam) { .hdrs = (h), .family = (fam) }
#define RC_UC(op, h, fam) \
    [op] = OP(h, fam), [UZ_BTH_OP_UC | (op)] = OP((h) | UZ_H_UC, fam)

const UzuraOpInfo uzura_ops[256] = {
    /* SEND and WRITE: RC's, and UC's with the same headers (9.8). */
    RC_UC(UZ_BTH_OP_SEND_FIRST, SEND | F, UZ_FAM_SEND),
    RC_UC(UZ_BTH_OP_SEND_MIDDLE, SEND, UZ_FAM_SEND),
    RC_UC(UZ_BTH_OP_SEND_LAST, SEND | L, UZ_FAM_SEND),
    RC_UC(UZ_BTH_OP_SEND_LAST_IMM, SEND | L | UZ_H_IMM, UZ_FAM_SEND),
    RC_UC(UZ_BTH_OP_SEND_ONLY, SEND | F | L, UZ_FAM_SEND),
    RC_UC(UZ_BTH_OP_SEND_ONLY_IMM, SEND | F | L | UZ_H_IMM, UZ_FAM_SEND),
    [UZ_BTH_OP_SEND_LAST_INV] = OP(SEND | L | UZ_H_IETH, UZ_FAM_SEND),
    [UZ_BTH_OP_SEND_ONLY_INV] = OP(SEND | F | L | UZ_H_IETH, UZ_FAM_SEND),
    RC_UC(UZ_BTH_OP_WRITE_FIRST, WRITE | F | UZ_H_RETH, UZ_FAM_WRITE),
    RC_UC(UZ_BTH_OP_WRITE_MIDDLE, WRITE, UZ_FAM_WRITE),
    RC_UC(UZ_BTH_OP_WRITE_LAST, WRITE | L, UZ_FAM_WRITE),
    RC_UC(UZ_BTH_OP_WRITE_LAST_IMM, WRITE | L | UZ_H_IMM, UZ_FAM_WRITE),
    RC_UC(UZ_BTH_OP_WRITE_ONLY, WRITE | F | L | UZ_H_RETH, UZ_FAM_WRITE),
    RC_UC(UZ_BTH_OP_WRITE_ONLY_IMM, WRITE | F | L | UZ_H_RETH | UZ_H_IMM,
          UZ_FAM_WRITE),
    [UZ_BTH_OP_READ_REQ] = OP(UZ_H_REQ | F | L | UZ_H_RETH, UZ_FAM_READ_REQ),
    [UZ_BTH_OP_READ_RESP_FIRST] = OP(UZ_H_PAYLOAD | F | UZ_H_AETH,
                                     UZ_FAM_READ_RESP),
    [UZ_BTH_OP_READ_RESP_MIDDLE] = OP(UZ_H_PAYLOAD, UZ_FAM_READ_RESP),
    [UZ_BTH_OP_READ_RESP_LAST] = OP(UZ_H_PAYLOAD | L | UZ_H_AETH,
                                    UZ_FAM_READ_RESP),
    [UZ_BTH_OP_READ_RESP_ONLY] = OP(UZ_H_PAYLOAD | F | L | UZ_H_AETH,
                                    UZ_FAM_READ_RESP),
    [UZ_BTH_OP_ACK] = OP(UZ_H_AETH, UZ_FAM_ACK),
    [UZ_BTH_OP_ATOMIC_ACK] = OP(UZ_H_AETH | UZ_H_ATOMIC_ACK, UZ_FAM_ATOMIC),
    [UZ_BTH_OP_CMP_SWP] = OP(UZ_H_REQ | F | L | UZ_H_ATOMIC, UZ_FAM_ATOMIC),
    [UZ_BTH_OP_FETCH_ADD] = OP(UZ_H_REQ | F | L | UZ_H_ATOMIC,
                               UZ_FAM_ATOMIC),
    /* IBA 1.5: answered by a READ response of no bytes, as a READ is. */
    [UZ_BTH_OP_FLUSH] = OP(UZ_H_REQ | F | L | UZ_H_FETH | UZ_H_RETH,
                           UZ_FAM_READ_REQ),
    [UZ_BTH_OP_ATOMIC_WRITE] = OP(UZ_H_REQ | F | L | UZ_H_RETH | UZ_H_PAYLOAD,
                                  UZ_FAM_ATOMIC),
    [UZ_BTH_OP_UD_SEND_ONLY] = OP(SEND | F | L | UZ_H_DETH, UZ_FAM_UD),
    [UZ_BTH_OP_UD_SEND_ONLY_IMM] = OP(SEND | F | L | UZ_H_DETH | UZ_H_IMM,
                                      UZ_FAM_UD),
    [UZ_BTH_OP_RC_STCRW] = OP(UZ_H_REQ | F | L | UZ_H_CRW, UZ_FAM_CRW),
    [UZ_BTH_OP_RC_SACK] = OP(UZ_H_AETH | UZ_H_SACK, UZ_FAM_ACK),
    [UZ_BTH_OP_CNP] = OP(UZ_H_PAYLOAD, UZ_FAM_CNP),
};

/* Bytes of the extended headers an opcode carries, in wire order. */
static unsigned uzura_ext_len(uint16_t h)
{
    return (h & UZ_H_RETH ? RETH_LEN : 0) + (h & UZ_H_AETH ? AETH_LEN : 0) +
           (h & UZ_H_ATOMIC ? ATOMIC_LEN : 0) +
           (h & UZ_H_ATOMIC_ACK ? ATOMIC_ACK_LEN : 0) +
           (h & UZ_H_IMM ? IMM_LEN : 0) + (h & UZ_H_IETH ? IMM_LEN : 0) +
           (h & UZ_H_DETH ? DETH_LEN : 0) + (h & UZ_H_CRW ? CRW_LEN : 0) +
           (h & UZ_H_SACK ? SACK_LEN : 0) + (h & UZ_H_FETH ? FETH_LEN : 0);
}

/*
 * The ICRC: CRC-32 over 8 bytes of ones (the masked LRH of IBA Annex
 * A17), the IPv4 and UDP headers and the BTH with their variant fields
 * (TOS, TTL, IP checksum, UDP checksum, BTH reserved byte) set to ones,
 * then the rest of the packet up to the ICRC.  @ip starts at the IPv4
 * header; @len counts up to (not including) the ICRC.
 */
#define ICRC_PSEUDO     (IP_HLEN + UDP_HLEN + UZ_BTH_LEN)

/* The ICRC's CRC up to the end of the BTH, to be continued from there. */
static uint32_t uzura_roce_icrc_bth(const uint8_t *ip)
{
    static const uint8_t ones[8] = {
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    };
    uint8_t pseudo[ICRC_PSEUDO];
    uint32_t crc;

    memcpy(pseudo, ip, sizeof(pseudo));
    pseudo[1] = 0xff;                           /* TOS */
    pseudo[8] = 0xff;                           /* TTL */
    pseudo[10] = pseudo[11] = 0xff;             /* header checksum */
    pseudo[IP_HLEN + 6] = pseudo[IP_HLEN + 7] = 0xff; /* UDP checksum */
    pseudo[IP_HLEN + UDP_HLEN + 4] = 0xff;      /* BTH resv8a */
    crc = uzura_crc32(0, ones, sizeof(ones));
    return uzura_crc32(crc, pseudo, sizeof(pseudo));
}

uint32_t uzura_roce_icrc(const uint8_t *ip, size_t len)
{
    return uzura_crc32(uzura_roce_icrc_bth(ip), ip + ICRC_PSEUDO,
                       len - ICRC_PSEUDO);
}

/*
 * The RC opcode an XRC opcode is the twin of (spec 9.9), with *xrc set;
 * any other opcode as it is.
 */
uint8_t uzura_roce_rc_opcode(uint8_t opcode, bool *xrc)
{
    uint8_t rc = opcode & ~UZ_BTH_OP_XRC;

    *xrc = (opcode & 0xe0) == UZ_BTH_OP_XRC && uzura_ops[rc].family;
    return *xrc ? rc : opcode;
}

/* Bytes of the extended headers after the BTH of @opcode. */
unsigned uzura_roce_hdrs_len(uint8_t opcode)
{
    bool xrc;
    uint16_t h = uzura_ops[uzura_roce_rc_opcode(opcode, &xrc)].hdrs;

    return uzura_ext_len(h) + (xrc && (h & UZ_H_REQ) ? UZ_XRCETH_LEN : 0);
}

/*
 * The IPv4 total length of a RoCEv2 frame of @size bytes, or 0 when it
 * cannot hold the headers, a BTH and the ICRC, or exceeds the frame.
 */
size_t uzura_roce_ip_len(const uint8_t *frame, size_t size)
{
    size_t ip_len = lduw_be_p(frame + ETH_HLEN + 2);

    return ip_len >= IP_HLEN + UDP_HLEN + UZ_BTH_LEN + UZ_ICRC_LEN &&
           ip_len <= size - ETH_HLEN ? ip_len : 0;
}

/* A new ICRC for a RoCE frame whose transport headers or payload changed. */
void uzura_roce_reseal(uint8_t *frame, size_t size)
{
    uint8_t *ip = frame + ETH_HLEN;
    size_t ip_len = uzura_roce_ip_len(frame, size);

    if (ip_len) {
        stl_le_p(ip + ip_len - UZ_ICRC_LEN,
                 uzura_roce_icrc(ip, ip_len - UZ_ICRC_LEN));
    }
}

/* RoCEv2: IPv4 (no options) carrying UDP to port 4791. */
bool uzura_roce_is_roce(const uint8_t *buf, size_t size)
{
    return size >= ROCE_HDRS &&
           lduw_be_p(buf + 12) == ETHERTYPE_IPV4 &&
           buf[ETH_HLEN] == 0x45 && buf[ETH_HLEN + 9] == IPPROTO_UDP_ &&
           lduw_be_p(buf + ETH_HLEN + IP_HLEN + 2) == UZ_ROCE_UDP_PORT;
}

/* Address a packet from a QP's path or an AH; GIDs are IPv4-mapped. */
void uzura_roce_fill_av(UzuraPkt *pkt, const uint8_t *dmac,
                        const uint8_t *sgid, const uint8_t *dgid,
                        uint8_t hop_limit, uint8_t tclass, uint32_t sqpn)
{
    memcpy(pkt->dmac, dmac, 6);
    memcpy(pkt->saddr, sgid + 12, 4);
    memcpy(pkt->daddr, dgid + 12, 4);
    pkt->ttl = hop_limit ? hop_limit : 64;
    pkt->tos = tclass;
    /* Flow entropy from the QPN, in the range RoCEv2 suggests. */
    pkt->sport = 0xc000 | (sqpn & 0x3fff);
}

static void uzura_count(uint64_t *pkts, uint64_t *bytes, uint8_t opcode,
                        size_t len)
{
    uint8_t fam = uzura_ops[opcode].family;

    pkts[fam]++;
    bytes[fam] += len;
}

/*
 * Payloads from this size up go to the link in place, as pieces of guest
 * memory; below it, copying them into the frame costs less than mapping.
 */
#define UZ_TX_INPLACE_MIN   512

/*
 * Whether a frame whose headers are in @f may be sent in place: only to
 * a peer on the link (a frame to this device or a group also goes to the
 * loopback, which keeps a copy), when nothing on the way to the netdev
 * needs it whole (uzura_link_direct).
 */
static bool uzura_roce_inplace(UzuraCore *core, const uint8_t *f,
                               uint32_t paylen)
{
    return paylen >= UZ_TX_INPLACE_MIN && !(f[0] & 1) &&
           !uzura_loop_is_own(core, f) && uzura_core_link_up(core) &&
           uzura_link_direct(core);
}

/*
 * Build and send one packet.  The payload (pkt->paylen bytes) comes from
 * @gather when given, else from pkt->payload.  Returns UZ_VERR_NONE, or
 * the gather's error (nothing is sent then).  A link that is down drops
 * the frame, as a cable would: the transport recovers.
 *
 * A large gathered payload bound for the link is not copied: the frame
 * goes to the netdev as pieces (UzuraTxMap), the headers from the frame
 * buffer, the payload mapped from guest memory, except what cannot be
 * mapped, which the gather copies into the frame buffer where a linear
 * frame would have it.  The checks and their errors are the same.
 */
uint8_t uzura_roce_send(UzuraCore *core, UzuraPkt *pkt, UzuraGather gather,
                        void *opaque)
{
    uint16_t h = uzura_ops[pkt->opcode].hdrs;
    uint8_t *f = core->roce_frame, *ip = f + ETH_HLEN, *udp = ip + IP_HLEN;
    uint8_t *p = udp + UDP_HLEN, pad = -pkt->paylen & 3, verr = UZ_VERR_NONE;
    size_t ip_len, len;
    UzuraTxMap map, *m = NULL;
    uint32_t crc;

    /* Ethernet */
    memcpy(f, pkt->dmac, 6);
    memcpy(f + 6, core->mac, 6);
    stw_be_p(f + 12, ETHERTYPE_IPV4);

    /* BTH */
    /* uzura's own opcodes (SACK, 0xc1) have no XRC twin: as they are. */
    p[0] = pkt->opcode | (pkt->xrc && pkt->opcode < UZ_BTH_OP_UC ?
                          UZ_BTH_OP_XRC : 0);
    p[1] = (pkt->se ? 0x80 : 0) | pad << 4;
    stw_be_p(p + 2, 0xffff);
    stl_be_p(p + 4, (pkt->becn ? (uint32_t)UZ_BTH_BECN << 24 : 0) |
             (pkt->dqpn & UZ_PSN_MASK));
    stl_be_p(p + 8, (pkt->ack_req ? 0x80000000u : 0) |
             (pkt->sr ? UZ_BTH_B8_SR << 24 : 0) | (pkt->psn & UZ_PSN_MASK));
    p += UZ_BTH_LEN;

    /* Extended headers, in the order IBA gives them. */
    if (h & UZ_H_DETH) {
        stl_be_p(p, pkt->qkey);
        stl_be_p(p + 4, pkt->sqpn & UZ_PSN_MASK);
        p += DETH_LEN;
    }
    if (pkt->xrc && (h & UZ_H_REQ)) {
        stl_be_p(p, pkt->xrc_srqn & UZ_PSN_MASK);
        p += UZ_XRCETH_LEN;
    }
    if (h & UZ_H_FETH) {
        stl_be_p(p, pkt->flush_level << UZ_FETH_LEVEL_SHIFT |
                 (pkt->flush_type & UZ_FETH_TYPE_MASK));
        p += FETH_LEN;
    }
    if (h & UZ_H_RETH) {
        stq_be_p(p, pkt->va);
        stl_be_p(p + 8, pkt->rkey);
        stl_be_p(p + 12, pkt->dma_len);
        p += RETH_LEN;
    }
    if (h & UZ_H_ATOMIC) {
        stq_be_p(p, pkt->va);
        stl_be_p(p + 8, pkt->rkey);
        stq_be_p(p + 12, pkt->swap_add);
        stq_be_p(p + 20, pkt->compare);
        p += ATOMIC_LEN;
    }
    if (h & UZ_H_CRW) {
        stq_be_p(p, pkt->crw.tag);
        stq_be_p(p + 8, pkt->crw.va);
        stl_be_p(p + 16, pkt->crw.rkey);
        stl_be_p(p + 20, pkt->crw.length);
        p += CRW_LEN;
    }
    if (h & UZ_H_AETH) {
        stl_be_p(p, (uint32_t)pkt->syndrome << 24 | (pkt->msn & UZ_PSN_MASK));
        p += AETH_LEN;
    }
    if (h & UZ_H_ATOMIC_ACK) {
        stq_be_p(p, pkt->orig);
        p += ATOMIC_ACK_LEN;
    }
    if (h & UZ_H_SACK) {
        stl_be_p(p, pkt->sack.missing_psn & UZ_PSN_MASK);
        stl_be_p(p + 4, pkt->sack.count);
        p += SACK_LEN;
    }
    if (h & (UZ_H_IMM | UZ_H_IETH)) {
        memcpy(p, &pkt->imm, IMM_LEN);  /* already in network order */
        p += IMM_LEN;
    }

    /* Payload, gathered straight into the frame or in place, and its pad. */
    if (pkt->paylen) {
        if (gather) {
            if (uzura_roce_inplace(core, f, pkt->paylen)) {
                m = &map;
                m->iov[0] = (struct iovec) { .iov_base = f,
                                             .iov_len = p - f };
                m->niov = 1;
                m->mapped = 0;
            }
            if (!gather(core, opaque, p, pkt->paylen, m, &verr)) {
                if (m) {
                    uzura_dma_unmap_tx(core, m);
                }
                return verr;
            }
        } else {
            memcpy(p, pkt->payload, pkt->paylen);
        }
        p += pkt->paylen;
    }
    memset(p, 0, pad);
    p += pad;

    /* IPv4 and UDP, now that the length is known. */
    ip_len = p + UZ_ICRC_LEN - ip;
    ip[0] = 0x45;
    /*
     * The DSCP is the traffic class's; the ECN field is the NIC's, as on
     * RoCE NICs: ECT(0) (property ecn), so that a switch that would drop
     * the frame may mark it CE instead.  A traffic class copied from a
     * received header (ibv_init_ah_from_wc) carries the marks it had,
     * which must not go out again.  The ICRC leaves the TOS byte out, so
     * a mark keeps the frame whole.
     */
    ip[1] = (pkt->tos & ~UZ_IP_ECN_MASK) |
            (core->rdma.ecn && pkt->opcode != UZ_BTH_OP_CNP ?
             UZ_IP_ECN_ECT0 : 0);
    stw_be_p(ip + 2, ip_len);
    stw_be_p(ip + 4, 0);
    stw_be_p(ip + 6, 0x4000);               /* DF */
    ip[8] = pkt->ttl;
    ip[9] = IPPROTO_UDP_;
    stw_be_p(ip + 10, 0);
    memcpy(ip + 12, pkt->saddr, 4);
    memcpy(ip + 16, pkt->daddr, 4);
    stw_be_p(ip + 10, net_checksum_finish(net_checksum_add(IP_HLEN, ip)));
    stw_be_p(udp, pkt->sport);
    stw_be_p(udp + 2, UZ_ROCE_UDP_PORT);
    stw_be_p(udp + 4, ip_len - IP_HLEN);
    stw_be_p(udp + 6, 0);                   /* no UDP checksum */
    len = p + UZ_ICRC_LEN - f;
    trace_uzura_roce_tx(pkt->opcode, pkt->dqpn, pkt->psn, pkt->paylen);
    if (m) {
        /* Headers, the payload's pieces, then the pad: one CRC. */
        crc = uzura_roce_icrc_bth(ip);
        crc = uzura_crc32(crc, ip + ICRC_PSEUDO,
                          (uint8_t *)m->iov[0].iov_base + m->iov[0].iov_len -
                          (ip + ICRC_PSEUDO));
        crc = uzura_crc32_iov(crc, m->iov + 1, m->niov - 1);
        crc = uzura_crc32(crc, p - pad, pad);
        stl_le_p(p, crc);
        uzura_tx_add(m, p - pad, pad + UZ_ICRC_LEN, false);
        trace_uzura_roce_tx_inplace(m->niov, ctpop32(m->mapped));
        uzura_count(core->counters.roce_tx_pkts,
                    core->counters.roce_tx_bytes, pkt->opcode, len);
        uzura_link_sendv(core, m->iov, m->niov);
        uzura_dma_unmap_tx(core, m);
        return UZ_VERR_NONE;
    }
    stl_le_p(p, uzura_roce_icrc(ip, p - ip));
    if (uzura_loop_is_own(core, f)) {
        uzura_count(core->counters.roce_tx_pkts, core->counters.roce_tx_bytes,
                    pkt->opcode, len);
        uzura_loop_send(core, f, len);
        return UZ_VERR_NONE;
    }
    if (f[0] & 1) {
        /* Multicast: this device's members get it as the link's do. */
        uzura_loop_send(core, f, len);
    }
    if (!uzura_core_link_up(core)) {
        core->counters.roce_tx_dropped++;
        return UZ_VERR_NONE;
    }
    uzura_count(core->counters.roce_tx_pkts, core->counters.roce_tx_bytes,
                pkt->opcode, len);
    uzura_link_send(core, f, len);
    return UZ_VERR_NONE;
}

/* A frame dropped before any QP saw it. */
static void uzura_roce_drop(UzuraCore *core, const char *why)
{
    trace_uzura_roce_rx_drop(why);
    core->counters.rx_malformed++;
}

/* Parse the transport headers of a frame that passed its ICRC check. */
static bool uzura_roce_parse(UzuraPkt *pkt, const uint8_t *bth,
                             size_t len)
{
    uint16_t h;
    const uint8_t *p = bth + UZ_BTH_LEN;
    size_t ext;
    uint8_t pad;

    memset(pkt, 0, sizeof(*pkt));
    pkt->opcode = uzura_roce_rc_opcode(bth[0], &pkt->xrc);
    h = uzura_ops[pkt->opcode].hdrs;
    if (!uzura_ops[pkt->opcode].family || (bth[1] & 0x0f) ||
        lduw_be_p(bth + 2) != 0xffff) {
        return false;
    }
    pad = (bth[1] >> 4) & 3;
    pkt->se = bth[1] & 0x80;
    pkt->dqpn = ldl_be_p(bth + 4) & UZ_PSN_MASK;
    pkt->ack_req = bth[8] & 0x80;
    pkt->sr = bth[8] & UZ_BTH_B8_SR;
    pkt->psn = ldl_be_p(bth + 8) & UZ_PSN_MASK;
    ext = uzura_roce_hdrs_len(bth[0]);
    if (len < UZ_BTH_LEN + ext + pad ||
        (!(h & UZ_H_PAYLOAD) && len != UZ_BTH_LEN + ext + pad)) {
        return false;
    }
    if (h & UZ_H_DETH) {
        pkt->qkey = ldl_be_p(p);
        pkt->sqpn = ldl_be_p(p + 4) & UZ_PSN_MASK;
        p += DETH_LEN;
    }
    if (pkt->xrc && (h & UZ_H_REQ)) {
        pkt->xrc_srqn = ldl_be_p(p) & UZ_PSN_MASK;
        p += UZ_XRCETH_LEN;
    }
    if (h & UZ_H_FETH) {
        pkt->flush_type = ldl_be_p(p) & UZ_FETH_TYPE_MASK;
        pkt->flush_level = (ldl_be_p(p) & UZ_FETH_LEVEL_MASK) >>
                           UZ_FETH_LEVEL_SHIFT;
        p += FETH_LEN;
    }
    if (h & UZ_H_RETH) {
        pkt->va = ldq_be_p(p);
        pkt->rkey = ldl_be_p(p + 8);
        pkt->dma_len = ldl_be_p(p + 12);
        p += RETH_LEN;
    }
    if (h & UZ_H_ATOMIC) {
        pkt->va = ldq_be_p(p);
        pkt->rkey = ldl_be_p(p + 8);
        pkt->swap_add = ldq_be_p(p + 12);
        pkt->compare = ldq_be_p(p + 20);
        p += ATOMIC_LEN;
    }
    if (h & UZ_H_CRW) {
        pkt->crw.tag = ldq_be_p(p);
        pkt->crw.va = ldq_be_p(p + 8);
        pkt->crw.rkey = ldl_be_p(p + 16);
        pkt->crw.length = ldl_be_p(p + 20);
        p += CRW_LEN;
    }
    if (h & UZ_H_AETH) {
        pkt->syndrome = p[0];
        pkt->msn = ldl_be_p(p) & UZ_PSN_MASK;
        p += AETH_LEN;
    }
    if (h & UZ_H_ATOMIC_ACK) {
        pkt->orig = ldq_be_p(p);
        p += ATOMIC_ACK_LEN;
    }
    if (h & UZ_H_SACK) {
        pkt->sack.missing_psn = ldl_be_p(p) & UZ_PSN_MASK;
        pkt->sack.count = ldl_be_p(p + 4);
        p += SACK_LEN;
    }
    if (h & (UZ_H_IMM | UZ_H_IETH)) {
        memcpy(&pkt->imm, p, IMM_LEN);
        p += IMM_LEN;
    }
    pkt->payload = p;
    pkt->paylen = len - UZ_BTH_LEN - ext - pad;
    return true;
}

/*
 * A RoCEv2 frame for this device: check it, then hand it to the QP.
 * Requests go to the responder, responses to the requester, UD sends to
 * the UD receive path.
 */
void uzura_roce_receive(UzuraCore *core, const uint8_t *buf, size_t size)
{
    const uint8_t *ip = buf + ETH_HLEN;
    size_t ip_len = uzura_roce_ip_len(buf, size), udp_len;
    UzuraPkt pkt;
    UzuraQp *qp;
    uint16_t h;
    bool xrc, ce;

    if (!ip_len) {
        uzura_roce_drop(core, "bad IPv4 length");
        return;
    }
    udp_len = lduw_be_p(ip + IP_HLEN + 4);
    if (udp_len != ip_len - IP_HLEN ||
        net_checksum_finish(net_checksum_add(IP_HLEN, (uint8_t *)ip))) {
        uzura_roce_drop(core, "bad IPv4 or UDP header");
        return;
    }
    if (ldl_le_p(ip + ip_len - UZ_ICRC_LEN) !=
        uzura_roce_icrc(ip, ip_len - UZ_ICRC_LEN)) {
        trace_uzura_roce_rx_drop("bad ICRC");
        core->counters.icrc_errors++;
        return;
    }
    if (!uzura_roce_parse(&pkt, ip + IP_HLEN + UDP_HLEN,
                          ip_len - IP_HLEN - UDP_HLEN - UZ_ICRC_LEN)) {
        uzura_roce_drop(core, "malformed transport headers");
        return;
    }
    memcpy(pkt.saddr, ip + 12, 4);
    memcpy(pkt.daddr, ip + 16, 4);
    pkt.ip_hdr = ip;
    uzura_count(core->counters.roce_rx_pkts, core->counters.roce_rx_bytes,
                pkt.opcode, ETH_HLEN + ip_len);
    trace_uzura_roce_rx(pkt.opcode, pkt.dqpn, pkt.psn, pkt.paylen);
    /* The notification point's count (its CNP once the QP is known). */
    ce = (ip[1] & UZ_IP_ECN_MASK) == UZ_IP_ECN_CE;
    if (ce) {
        core->counters.np_ecn_marked_roce_packets++;
    }

    if (pkt.dqpn == UZ_MCAST_QPN) {
        uzura_mcast_receive(core, &pkt);
        return;
    }
    if (buf[0] & 1) {
        /* A group address reaches members only (DestQP 0xffffff). */
        trace_uzura_roce_rx_drop("group frame to a single QP");
        core->counters.rx_no_qp++;
        return;
    }
    h = uzura_ops[pkt.opcode].hdrs;
    qp = uzura_qp_lookup(core, pkt.dqpn);
    if (pkt.opcode == UZ_BTH_OP_CNP) {
        /* To the reaction point of the QP whose packet was marked. */
        if (!qp || !qp->x) {
            trace_uzura_roce_rx_drop("CNP for no QP");
            core->counters.rx_no_qp++;
            return;
        }
        uzura_rp_cnp(core, qp);
        return;
    }
    /* An XRC target's SACKs keep their opcode. */
    xrc = pkt.xrc || (pkt.opcode == UZ_BTH_OP_RC_SACK && qp &&
                      qp->type == UZ_QPT_XRC_INI);
    /* Each transport's opcodes reach its own QPs; XRC's by direction. */
    if (!qp || !uzura_qp_receives(qp) || uzura_qp_is_raw(qp) ||
        uzura_qp_is_ud(qp) != !!(h & UZ_H_DETH) ||
        uzura_qp_is_uc(qp) != !!(h & UZ_H_UC) ||
        uzura_qp_is_xrc(qp) != xrc ||
        (xrc && (qp->type == UZ_QPT_XRC_TGT) != !!(h & UZ_H_REQ))) {
        trace_uzura_roce_rx_drop("no QP to receive");
        core->counters.rx_no_qp++;
        return;
    }
    if (ce) {
        uzura_np_marked(core, qp);
    }
    if (h & UZ_H_DETH) {
        uzura_resp_ud(core, qp, &pkt);
    } else if (h & UZ_H_REQ) {
        uzura_resp_request(core, qp, &pkt);
    } else if (qp->attr.state >= UZ_QPS_RTS) {
        uzura_req_response(core, qp, &pkt);
    } else {
        core->counters.rx_stale++;
    }
}
