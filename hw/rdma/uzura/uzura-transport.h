/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uzura RDMA NIC: the data path's internal interfaces: RoCEv2 packets
 * (uzura-roce.c), memory access through keys and the translation cache
 * (uzura-xlat.c), the requester (uzura-req.c) and the responder
 * (uzura-resp.c), and the per-QP transport state they share.
 */
#ifndef HW_RDMA_UZURA_TRANSPORT_H
#define HW_RDMA_UZURA_TRANSPORT_H

#include "standard-headers/drivers/infiniband/hw/uzura/uzura_regs_defs.h"
#include "standard-headers/drivers/infiniband/hw/uzura/uzura_admin_defs.h"
#include "standard-headers/drivers/infiniband/hw/uzura/uzura_admin_cmds_defs.h"
#include "standard-headers/drivers/infiniband/hw/uzura/uzura_io_defs.h"
#include "standard-headers/drivers/infiniband/hw/uzura/uzura_roce_defs.h"

typedef struct UzuraCore UzuraCore;
typedef struct UzuraQp UzuraQp;
typedef struct UzuraMr UzuraMr;
typedef struct UzuraTxMap UzuraTxMap;
typedef struct QEMUTimer QEMUTimer;

#define UZ_PSN_MASK         0x00ffffffu
/*
 * PSNs a requester has outstanding before it starts a new message, and
 * the most one message may take: together below 2^23, within which PSN
 * comparisons hold (IBA's window).  A message of more packets than this
 * at its path MTU fails with LOC_LEN_ERR (1 GiB at MTU 256).
 */
#define UZ_PSN_OUT_MAX      (1u << 22)
#define UZ_SGL_MAX          28      /* SGEs in the largest (512 B) WQE */
#define UZ_INLINE_MAX       448     /* inline bytes in the largest WQE */
#define UZ_MAX_MSG          UZ_MAX_MSG_SZ
#define UZ_GRH_LEN          40
#define UZ_ROCE_IP_OFF      14              /* after the Ethernet header */
#define UZ_ROCE_BTH_OFF     (14 + 20 + 8)   /* Ethernet, IPv4, UDP */

/* Signed distance a - b between two PSNs, modulo 2^24. */
static inline int32_t uzura_psn_diff(uint32_t a, uint32_t b)
{
    return (int32_t)((a - b) << 8) >> 8;
}

/* ---- packets (uzura-roce.c) ---- */

/* Extended headers an opcode carries, and where it sits in a message. */
#define UZ_H_RETH       (1u << 0)
#define UZ_H_AETH       (1u << 1)
#define UZ_H_ATOMIC     (1u << 2)
#define UZ_H_ATOMIC_ACK (1u << 3)
#define UZ_H_IMM        (1u << 4)
#define UZ_H_IETH       (1u << 5)
#define UZ_H_DETH       (1u << 6)
#define UZ_H_CRW        (1u << 7)
#define UZ_H_PAYLOAD    (1u << 8)
#define UZ_H_FIRST      (1u << 9)
#define UZ_H_LAST       (1u << 10)
#define UZ_H_REQ        (1u << 11)  /* a request (not a response) */
#define UZ_H_SACK       (1u << 12)
#define UZ_H_UC         (1u << 13)  /* an unreliable connected opcode */
#define UZ_H_FETH       (1u << 14)

/* Opcode families, for the per-kind counters. */
typedef enum UzuraFamily {
    UZ_FAM_NONE = 0,
    UZ_FAM_SEND,
    UZ_FAM_WRITE,
    UZ_FAM_READ_REQ,
    UZ_FAM_READ_RESP,
    UZ_FAM_ATOMIC,
    UZ_FAM_ACK,
    UZ_FAM_UD,
    UZ_FAM_CRW,
    UZ_FAM_CNP,                 /* counted by np_cnp_sent, rp_cnp_* */
    UZ_FAM_MAX,
} UzuraFamily;

typedef struct UzuraOpInfo {
    uint16_t hdrs;              /* UZ_H_* */
    uint8_t family;             /* UzuraFamily, 0 = not an opcode we speak */
} UzuraOpInfo;

extern const UzuraOpInfo uzura_ops[256];

/* A RoCEv2 packet, parsed or to be built; header fields in host order. */
typedef struct UzuraPkt {
    uint8_t opcode;             /* XRC's as RC's, with xrc set */
    bool xrc;                   /* an XRC opcode (UZ_BTH_OP_XRC) */
    uint32_t xrc_srqn;          /* XRCETH, of an XRC request */
    bool se;
    bool ack_req;
    bool becn;                  /* BTH: a CNP's BECN bit */
    bool sr;                    /* BTH: the requester takes SACKs */
    uint32_t dqpn;
    uint32_t psn;
    uint64_t va;                /* RETH, AtomicETH */
    uint32_t rkey;
    uint32_t dma_len;
    uint8_t syndrome;           /* AETH */
    uint32_t msn;
    uint64_t swap_add;          /* AtomicETH */
    uint64_t compare;
    uint64_t orig;              /* AtomicAckETH */
    uint8_t flush_type;         /* FETH: UZ_FLUSH_GLOBAL, _PERSISTENT */
    uint8_t flush_level;        /* FETH: UZ_FLUSH_RANGE, UZ_FLUSH_MR */
    uint32_t imm;               /* ImmDt or IETH, as on the wire (BE) */
    uint32_t qkey;              /* DETH */
    uint32_t sqpn;
    struct uz_crweth crw;       /* host order */
    struct uz_sacketh sack;     /* host order */
    const uint8_t *payload;
    uint32_t paylen;
    /* Addressing: where to send, or where it came from. */
    uint8_t dmac[6];
    uint8_t saddr[4];           /* IPv4 */
    uint8_t daddr[4];
    uint8_t ttl;
    uint8_t tos;
    uint16_t sport;             /* UDP source port (flow entropy) */
    const uint8_t *ip_hdr;      /* received: the IPv4 header */
} UzuraPkt;

/*
 * Payload source for a packet being built: gathered into the frame at
 * @dst by the caller-supplied function, so that each byte is copied once,
 * or, with @m, made pieces of a frame built in place from guest memory
 * (uzura_sgl_read_tx, uzura_mr_read_tx) with @dst for what is copied.
 */
typedef bool (*UzuraGather)(UzuraCore *core, void *opaque, uint8_t *dst,
                            uint32_t len, UzuraTxMap *m, uint8_t *verr);

bool uzura_roce_is_roce(const uint8_t *buf, size_t size);
void uzura_roce_receive(UzuraCore *core, const uint8_t *buf, size_t size);
uint8_t uzura_roce_rc_opcode(uint8_t opcode, bool *xrc);
unsigned uzura_roce_hdrs_len(uint8_t opcode);
size_t uzura_roce_ip_len(const uint8_t *frame, size_t size);
void uzura_roce_reseal(uint8_t *frame, size_t size);
uint8_t uzura_roce_send(UzuraCore *core, UzuraPkt *pkt, UzuraGather gather,
                        void *opaque);
void uzura_roce_fill_av(UzuraPkt *pkt, const uint8_t *dmac,
                        const uint8_t *sgid, const uint8_t *dgid,
                        uint8_t hop_limit, uint8_t tclass, uint32_t sqpn);
uint32_t uzura_roce_icrc(const uint8_t *ip, size_t len);

/* A FLUSH's placement type and selectivity level (FETH) are ones we know. */
static inline bool uzura_flush_valid(uint8_t type, uint8_t level)
{
    return type && !(type & ~(UZ_FLUSH_GLOBAL | UZ_FLUSH_PERSISTENT)) &&
           level <= UZ_FLUSH_MR;
}

/* ---- memory through keys (uzura-xlat.c) ---- */

/* A scatter/gather list, host order. */
typedef struct UzuraSgl {
    uint32_t num;
    uint64_t len;               /* sum of the lengths */
    struct uz_sge sge[UZ_SGL_MAX];
} UzuraSgl;

uint8_t uzura_mr_check(UzuraCore *core, uint32_t key, uint32_t pdn,
                       uint64_t addr, uint64_t len, uint32_t access,
                       UzuraMr **out);
/* Internal, never in a CQE: an ODP page is absent, the access waits. */
#define UZURA_VERR_FAULT        0xfe

uint8_t uzura_mr_copy(UzuraCore *core, UzuraMr *mr, uint64_t addr, void *buf,
                      uint64_t len, bool to_mr);
uint8_t uzura_sgl_check(UzuraCore *core, const UzuraSgl *sgl, uint32_t pdn,
                        uint32_t access);
uint8_t uzura_sgl_copy(UzuraCore *core, const UzuraSgl *sgl, uint32_t pdn,
                       uint64_t off, void *buf, uint64_t len, bool to_mem);
uint8_t uzura_mr_read_tx(UzuraCore *core, UzuraMr *mr, uint64_t addr,
                         uint8_t *buf, uint64_t len, UzuraTxMap *m);
uint8_t uzura_sgl_read_tx(UzuraCore *core, const UzuraSgl *sgl, uint32_t pdn,
                          uint64_t off, uint8_t *buf, uint64_t len,
                          UzuraTxMap *m);
void uzura_xlat_init(UzuraCore *core);
void uzura_xlat_uninit(UzuraCore *core);
void uzura_xlat_reset(UzuraCore *core);
void uzura_xlat_drop_mr(UzuraCore *core, UzuraMr *mr);

/*
 * uzura-fastreg.c: REG_MR, BIND_MW and LOCAL_INV WRs, remote invalidation
 * (of fast-reg MRs and, through uzura-mw.c, of type 2 windows)
 */
uint8_t uzura_fastreg_exec(UzuraCore *core, UzuraQp *qp,
                           const struct uz_send_wqe *h, uint8_t *verr);
uint8_t uzura_fastreg_inv(UzuraCore *core, UzuraQp *qp, uint32_t key,
                          bool remote);

/* ---- per-QP transport state ---- */

/*
 * Where the requester's messages come from: its SQ, and the sources of
 * messages no SQ WQE stands for (UzuraReqSource), asked before the SQ in
 * this order.
 */
enum {
    UZ_REQ_SRC_SQ,              /* the SQ's WQEs */
    UZ_REQ_SRC_RNDV,            /* rendezvous' READs and FINs (uzura-tm.c) */
    UZ_REQ_SRC_CRW,             /* matched CRWs' writes (uzura-crw.c) */
    UZ_REQ_SRC_NUM
};

/*
 * A message as the requester tracks it from start to completion.  Most
 * come from one SQ WQE each; a CRW's parking takes its SQ WQE and sends
 * nothing; the others come from a source of their own.
 */
typedef struct UzuraSwqe {
    uint64_t wr_id;
    uint64_t seq;               /* which message of the QP's life, from 1 */
    /* the SQ WQE it came from; a rendezvous' slot number, in traces */
    uint32_t sq_idx;
    uint8_t src;                /* UZ_REQ_SRC_* */
    bool park;                  /* parks the CRW of src_id: sends nothing */
    /*
     * The source's id of it: a CRW's tag table entry, a rendezvous slot;
     * for an SQ WQE -1, or the entry of the CRW it parks.
     */
    int32_t src_id;
    uint32_t first_psn;
    uint32_t npkts;             /* PSNs it consumes */
    uint32_t byte_len;
    uint8_t opcode;             /* UZ_WR_* */
    bool signaled;
    bool done;                  /* acknowledged, answered or failed */
    uint32_t resp_got;          /* READ response packets in order */
    uint64_t resp_bits;         /* and those received past a gap */
    uint32_t resp_from;         /* the packet the last request began at */
    uint8_t status;             /* UZ_WC_STATUS_* once done */
    uint8_t verr;
} UzuraSwqe;

/* A send WQE read from the ring, decoded. */
typedef struct UzuraSendWr {
    struct uz_send_wqe h;       /* host order */
    struct uz_av av;            /* UD: from the WQE or its AH */
    UzuraSgl sgl;               /* without UZ_WQE_F_INLINE */
    uint8_t inl[UZ_INLINE_MAX]; /* with it */
    uint64_t len;               /* message bytes */
} UzuraSendWr;

/*
 * A source of messages besides the SQ, with the requester's hooks into
 * it: the requester asks for a message ready before it takes the next
 * SQ WQE, loads it when it starts and again when it is sent again, and
 * tells the source when it completed.
 */
typedef struct UzuraReqSource {
    /* The id of the oldest message ready to start, or -1. */
    int32_t (*ready)(UzuraQp *qp);
    /* What message @id records: sq_idx, opcode, signaled. */
    void (*describe)(UzuraQp *qp, int32_t id, UzuraSwqe *w);
    /* @w's work request, as it is sent (again); a UZ_WC_STATUS_*. */
    uint8_t (*load)(UzuraCore *core, UzuraQp *qp, const UzuraSwqe *w,
                    UzuraSendWr *wr, uint8_t *verr);
    /* Message @id started: the source's next one may be ready. */
    void (*take)(UzuraQp *qp, int32_t id);
    /* @w completed with w->status (after its CQE, unless own_cqe). */
    void (*retired)(UzuraCore *core, UzuraQp *qp, const UzuraSwqe *w);
    bool own_cqe;               /* retired posts its completions itself */
} UzuraReqSource;

/*
 * A message's work request loaded again from its source (an SQ WQE read
 * back from the ring) for a message started before.  It is keyed by the
 * message's seq, which never wraps, not by its index: 2^24 messages
 * later the same index names another WQE.
 */
typedef struct UzuraWqeCache {
    UzuraSendWr wr;
    uint64_t seq;               /* its message's UzuraSwqe.seq, 0 none */
} UzuraWqeCache;

/* A receive WQE taken from the RQ or the SRQ. */
typedef struct UzuraRecvWr {
    uint64_t wr_id;
    UzuraSgl sgl;
} UzuraRecvWr;

/*
 * A READ, atomic, FLUSH or ATOMIC WRITE the responder answered, kept for
 * duplicates.  The last two are answered by a READ response of no bytes.
 */
typedef struct UzuraRdAtom {
    bool valid;
    uint8_t opcode;             /* the request's BTH opcode */
    bool pending;               /* response (again) to send */
    bool again;                 /* the pending one answers a duplicate */
    uint32_t psn;
    uint32_t npkts;
    uint64_t va;
    uint32_t rkey;
    uint32_t len;
    uint64_t orig;              /* atomic: the value returned */
    uint32_t sent;              /* response packets sent so far */
    uint32_t xrc_srqn;          /* XRC target: the request's SRQ */
} UzuraRdAtom;

/* Loss recovery (9.6): the property "recovery". */
typedef enum UzuraRecovery {
    UZ_RECOVERY_GBN,            /* go-back-N, as IB specifies */
    UZ_RECOVERY_SR,             /* selective repeat, SACKs */
} UzuraRecovery;

#define UZ_SR_WINDOW        512     /* PSNs past a hole a responder keeps */
#define UZ_SR_KEPT_MAX      8192    /* packets all QPs of a NIC keep */
#define UZ_SR_KEPT_BYTES_MAX (16u << 20) /* and the bytes they hold */
#define UZ_SR_FEW           3       /* packets in flight for rto-low */
#define UZ_SR_RTO_LOW_US    4000    /* sr-rto-low-us by default */

typedef struct UzuraSrSlot UzuraSrSlot;
typedef struct UzuraRp UzuraRp;

/*
 * Tag matching (uzura-tm.c): how the responder classified the SEND in
 * progress at a QP of a TM SRQ, and the rendezvous a matched RNDV
 * message starts: a READ of the sender's buffer into the tag's, then a
 * FIN to the sender, both messages of this QP's requester.
 */
typedef enum UzuraTmKind {
    UZ_TMK_NONE = 0,            /* not a TM SRQ's, or not classified yet */
    UZ_TMK_NO_TAG,              /* into an SRQ WQE, UZ_WC_TM_NO_TAG */
    UZ_TMK_UNEXP,               /* into an SRQ WQE, unexpected */
    UZ_TMK_EAGER,               /* into the tag list entry tm_idx */
    UZ_TMK_RNDV,                /* matched: a rendezvous (never held) */
} UzuraTmKind;

#define UZ_TM_RNDV_SLOTS    8       /* rendezvous in progress per QP */

typedef enum UzuraRndvState {
    UZ_RNDV_FREE = 0,
    UZ_RNDV_READ_READY,         /* the READ waits to start */
    UZ_RNDV_READ,               /* the READ is a message being sent */
    UZ_RNDV_FIN_READY,          /* the data is in: the FIN waits */
    UZ_RNDV_FIN,                /* the FIN is a message being sent */
} UzuraRndvState;

typedef struct UzuraRndv {
    uint8_t state;              /* UzuraRndvState */
    uint16_t idx;               /* the tag list entry */
    uint32_t srqn;
    uint64_t seq;               /* when it became ready: FIFO order */
    uint64_t tag;
    uint64_t recv_wr_id;
    struct uz_sge sge;          /* the entry's buffer, host order */
    uint8_t num_sge;
    uint64_t va;                /* the sender's buffer (RVH) */
    uint32_t rkey;
    uint32_t len;
} UzuraRndv;

/* A conditional RDMA write's tag table entry (uzura-crw.c). */
typedef enum UzuraCrwState {
    UZ_CRW_FREE = 0,
    UZ_CRW_PARKED,              /* a CRW waits for its STCRW */
    UZ_CRW_OFFERED,             /* an STCRW arrived first, waits for its CRW */
    UZ_CRW_READY,               /* matched: the write waits to start */
    UZ_CRW_SENDING,             /* the write is a message being sent */
} UzuraCrwState;

typedef struct UzuraCrw {
    uint8_t state;              /* UzuraCrwState */
    bool in_sq;                 /* its SQ WQE has not completed yet */
    bool signaled;
    uint64_t tag;
    uint32_t sq_idx;            /* where the CRW WQE was, for traces */
    UzuraSendWr wr;             /* the CRW WQE, once posted */
    uint64_t va;                /* the target, once the STCRW arrived */
    uint32_t rkey;
    uint32_t length;
} UzuraCrw;

/*
 * The requester: turns SQ WQEs into messages and the messages into
 * packets.  Messages sit in PSN order in a ring of free-running indices.
 */
typedef struct UzuraReq {
    UzuraSwqe *msg;
    uint32_t nmsg;              /* its entries */
    uint32_t msg_mask;          /* entries - 1 */
    uint32_t oldest;            /* oldest message not completed */
    uint32_t next;              /* next message to (re)start */
    uint32_t end;               /* one past the last ever started */
    uint64_t started;           /* messages started in the QP's life */
    uint32_t sq_next;           /* next SQ WQE to turn into a message */
    UzuraSendWr cur;            /* the message being sent */
    bool cur_active;
    uint32_t cur_off;           /* bytes of it already sent */
    uint32_t next_psn;          /* next PSN to send */
    uint32_t end_psn;           /* PSN after the highest ever sent */
    bool blocked;               /* a failed WQE waits for its turn */
    bool fault_wait;            /* an ODP page absent: wait for a resume */
    bool fault_rewind;          /* ... then send again from the oldest */
    bool rp_wait;               /* the rate limiter holds the next packet */
} UzuraReq;

/*
 * The completer: what comes back for the requester's messages (ACKs,
 * NAKs, SACKs, READ and atomic responses), the ACK and RNR timers and
 * the retries they count.
 */
typedef struct UzuraComp {
    uint32_t acked_psn;         /* highest cumulatively acknowledged */
    uint8_t retry_left;
    int64_t progress_ns;        /* virtual clock of the last progress */
    uint8_t rnr_left;
    bool rnr_wait;              /* the timer is an RNR wait */
    UzuraWqeCache answer;       /* the READ/atomic WQE its response is for */
    bool rtt_on;                /* sr: a packet is being timed: */
    uint32_t rtt_psn;           /*   this one, */
    int64_t rtt_start;          /*   sent then */
    int64_t srtt_ns;            /* sr: smoothed round trip, 0 none yet */
    int64_t rttvar_ns;          /*   and its variation (RFC 6298) */
    uint8_t rto_shift;          /* sr: RTO_low doublings since progress */
    uint32_t resend_psn;        /* next PSN a SACK asked for */
    uint32_t resend_left;       /* PSNs from resend_psn still to send */
    UzuraWqeCache resend;       /* the WQE of the packets being resent */
} UzuraComp;

/* The responder: requests from the peer, and the ACKs owed for them. */
typedef struct UzuraResp {
    uint32_t epsn;              /* expected PSN */
    uint32_t msn;
    bool nak_seq_sent;          /* one sequence NAK per gap */
    bool uc_drop;               /* UC: dropping until a First or Only */
    bool ack_owed;
    uint8_t in_msg;             /* 0, UZ_FAM_SEND or UZ_FAM_WRITE */
    bool have_rwqe;
    bool rwqe_failed;           /* a receive CQE reported an error */
    UzuraRecvWr rwqe;
    uint32_t xrc_srqn;          /* XRC target: the message's SRQ */
    uint8_t tm_kind;            /* UzuraTmKind of the message in hand */
    uint16_t tm_idx;            /* UZ_TMK_EAGER: its tag list entry */
    uint64_t tm_tag;            /* UZ_TMK_EAGER: the message's tag */
    uint32_t recv_off;
    uint64_t wr_va;             /* multi-packet WRITE in progress */
    uint32_t wr_rkey;
    uint32_t wr_len;
    uint32_t wr_off;
    UzuraRdAtom *rd;            /* a ring of nrd = max_qp_rd_atom entries */
    uint32_t nrd;
    uint32_t rd_head;           /* next entry to use = the oldest */
    bool answer_fault_wait;     /* an answer to send met an absent ODP page */
    /* selective repeat: packets after a hole, by PSN % UZ_SR_WINDOW */
    UzuraSrSlot **sr_slot;      /* allocated on the first one kept */
    uint32_t sr_kept;
    uint32_t sr_high;           /* highest PSN kept */
    /* a refused request, waiting for the answers owed before it */
    bool err_owed;
    uint32_t err_psn;
    uint8_t err_syndrome;
    uint8_t err_status;
    uint8_t err_verr;
    /* congestion control's notification point (uzura-dcqcn.c) */
    int64_t np_cnp_ns;          /* when it last sent a CNP */
    bool np_cnp_once;           /*   ... if it ever did */
} UzuraResp;

/*
 * Congestion control's reaction point (uzura-dcqcn.c): a QP's rate
 * limiter, from its first CNP until it is back at the maximum rate.
 */
#define UZ_ALPHA_ONE    1024
#define UZ_RP_BYTES_MAX (1u << 30)      /* rpg_byte_reset's maximum */

struct UzuraRp {
    struct UzuraXfer *x;
    QEMUTimer *timer;           /* the next packet's time, while rp_wait */
    uint64_t rc;                /* current rate, kb/s */
    uint64_t rt;                /* target rate, kb/s */
    uint32_t alpha;             /* 1/1024 */
    int64_t alpha_ns;           /* start of alpha's period */
    int64_t inc_ns;             /* start of the increase timer's period */
    int64_t cut_ns;             /* the last cut */
    uint32_t t_count;           /* timer steps since the last cut */
    uint32_t bc_count;          /* byte-counter steps since the last cut */
    uint64_t bytes;             /* sent since the last byte-counter step */
    int64_t next_ns;            /* the next packet may go then */
};

/* A QP's transport: its three sides, as rxe keeps req, comp and resp. */
typedef struct UzuraXfer {
    UzuraCore *core;
    uint32_t qpn;
    QEMUTimer *timer;           /* ACK timeout or RNR wait */
    UzuraReq req;
    UzuraComp comp;
    UzuraResp resp;

    /* conditional RDMA writes: the tag table, allocated on first use */
    UzuraCrw *crw;              /* ncrw = max_crw_tags entries */
    uint32_t ncrw;
    uint32_t *crw_ready;        /* FIFO of READY entries */
    uint32_t crw_rhead;
    uint32_t crw_rnum;

    /* tag matching: rendezvous slots, allocated on first use */
    UzuraRndv *rndv;            /* UZ_TM_RNDV_SLOTS entries */
    uint64_t rndv_seq;

    /* congestion control's reaction point: the rate limiter, from a CNP */
    UzuraRp *rp;
} UzuraXfer;

/* uzura-req.c */
void uzura_req_init(UzuraCore *core, UzuraQp *qp);
void uzura_req_fault_resume(UzuraCore *core, UzuraQp *qp);
void uzura_req_reset(UzuraCore *core, UzuraQp *qp);
void uzura_req_work(UzuraCore *core, UzuraQp *qp, unsigned *budget);
void uzura_req_paced(UzuraCore *core, UzuraXfer *x);
void uzura_req_response(UzuraCore *core, UzuraQp *qp, const UzuraPkt *pkt);
void uzura_req_timer(void *opaque);
void uzura_req_migrated(UzuraCore *core, UzuraQp *qp);

/* uzura-crw.c */
uint8_t uzura_crw_park(UzuraCore *core, UzuraQp *qp, const UzuraSendWr *wr,
                       uint32_t sq_idx, bool signaled, int32_t *entry,
                       uint8_t *verr);
uint8_t uzura_crw_offer(UzuraCore *core, UzuraQp *qp, const UzuraPkt *pkt);
extern const UzuraReqSource uzura_crw_source;
void uzura_crw_unpin(UzuraQp *qp, int32_t e);
void uzura_crw_flush(UzuraCore *core, UzuraQp *qp);
void uzura_crw_alloc(UzuraCore *core, UzuraXfer *x);

/* uzura-tm.c: the data path's side of tag matching */
bool uzura_tm_qp(UzuraCore *core, UzuraQp *qp);
uint8_t uzura_tm_classify(UzuraCore *core, UzuraQp *qp, const UzuraPkt *pkt,
                          int32_t *idx);
void uzura_tm_take_eager(UzuraCore *core, UzuraQp *qp, int32_t idx,
                         uint64_t tag);
int uzura_tm_rndv_start(UzuraCore *core, UzuraQp *qp, const UzuraPkt *pkt,
                        int32_t idx);
void uzura_tm_complete(UzuraCore *core, UzuraQp *qp, struct uz_cqe *cqe,
                       bool solicited);
extern const UzuraReqSource uzura_tm_rndv_source;
void uzura_tm_qp_flush(UzuraCore *core, UzuraQp *qp);
void uzura_tm_rndv_alloc(UzuraXfer *x);

/* uzura-resp.c */
void uzura_resp_init(UzuraCore *core, UzuraQp *qp);
void uzura_resp_request(UzuraCore *core, UzuraQp *qp, const UzuraPkt *pkt);
void uzura_resp_packet(UzuraCore *core, UzuraQp *qp, const UzuraPkt *pkt);
void uzura_resp_fill(UzuraQp *qp, UzuraPkt *pkt, uint8_t opcode,
                     uint32_t psn);
void uzura_resp_ud(UzuraCore *core, UzuraQp *qp, const UzuraPkt *pkt);
void uzura_resp_raw(UzuraCore *core, UzuraQp *qp, const uint8_t *buf,
                    size_t size);
void uzura_mcast_receive(UzuraCore *core, const UzuraPkt *pkt);
void uzura_resp_work(UzuraCore *core, UzuraQp *qp, unsigned *budget);

/* uzura-sr.c */
bool uzura_sr_keep(UzuraCore *core, UzuraQp *qp, const UzuraPkt *pkt);
void uzura_sr_drain(UzuraCore *core, UzuraQp *qp);
void uzura_sr_free(UzuraCore *core, UzuraQp *qp);

/* uzura-dcqcn.c */
/* Bytes of a RoCEv2 frame besides its payload and extended headers. */
#define UZ_ROCE_FRAME_OVERHEAD  (UZ_ROCE_BTH_OFF + 12 + 4)
void uzura_np_marked(UzuraCore *core, UzuraQp *qp);
void uzura_rp_cnp(UzuraCore *core, UzuraQp *qp);
bool uzura_rp_hold(UzuraCore *core, UzuraQp *qp);
void uzura_rp_sent(UzuraCore *core, UzuraQp *qp, uint32_t bytes);
void uzura_rp_free(UzuraQp *qp);
UzuraRp *uzura_rp_new(UzuraXfer *x);
void uzura_cc_instance_init(Object *obj, UzuraCore *core);

#endif /* HW_RDMA_UZURA_TRANSPORT_H */
