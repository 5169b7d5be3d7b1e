/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uzura RDMA NIC: RDMA objects (contexts, PDs, CQs, SRQs, QPs, MRs, AHs)
 * as the device keeps them.  Tables are sized by device properties.
 */
#ifndef HW_RDMA_UZURA_RDMA_H
#define HW_RDMA_UZURA_RDMA_H

#include "standard-headers/drivers/infiniband/hw/uzura/uzura_regs_defs.h"
#include "standard-headers/drivers/infiniband/hw/uzura/uzura_admin_defs.h"
#include "standard-headers/drivers/infiniband/hw/uzura/uzura_admin_cmds_defs.h"
#include "standard-headers/drivers/infiniband/hw/uzura/uzura_io_defs.h"
#include "standard-headers/drivers/infiniband/hw/uzura/uzura_roce_defs.h"
#include "uzura-transport.h"

typedef struct UzuraCore UzuraCore;

/*
 * An admin command's handler, in uzura-admin.c's table: returns the
 * completion's status and may set its out0 and out1.
 */
typedef uint8_t UzuraCmdFn(UzuraCore *core, const struct uz_admin_cmd *cmd,
                           struct uz_admin_cqe *cqe);

/* Limits, from device properties; reported by QUERY_DEVICE. */
typedef struct UzuraLimits {
    uint32_t max_uctx;          /* = doorbell pages - 1 */
    uint32_t max_pd;
    uint32_t max_cq;
    uint32_t max_cqe;           /* power of 2 */
    uint32_t max_qp;
    uint32_t max_qp_wr;         /* power of 2 */
    uint32_t max_sge;
    uint32_t max_inline;
    uint32_t max_srq;
    uint32_t max_srq_wr;        /* power of 2 */
    uint32_t max_mr;
    uint64_t max_mr_size;
    uint32_t max_ah;
    uint32_t max_qp_rd_atom;
    uint32_t xlat_cache_entries;
    uint32_t max_crw_tags;      /* per QP */
    uint32_t max_fast_reg_pages;
} UzuraLimits;

typedef struct UzuraUctx {
    bool valid;
    uint32_t users;             /* objects created in this context */
} UzuraUctx;

typedef struct UzuraPd {
    bool valid;
    uint32_t uctx;
    uint32_t users;
} UzuraPd;

#define UZ_CQ_NO_PAGE UINT64_MAX

typedef struct UzuraCq {
    bool valid;
    bool error;                 /* overflowed: no more CQEs */
    uint8_t arm;                /* 0, UZ_DB_ARM or UZ_DB_ARM_SOLICITED */
    uint32_t uctx;
    uint32_t eqn;
    uint64_t ring_addr;         /* the ring, or its page list (paged) */
    bool paged;
    bool ts;                    /* UZ_CQF_TIMESTAMP: 64-byte CQEs */
    uint32_t page;              /* ring page whose address is cached */
    uint64_t page_addr;         /* ... or UZ_CQ_NO_PAGE */
    uint32_t log_depth;
    uint32_t pi;                /* next CQE the device writes */
    uint32_t ci;                /* from the doorbell */
    uint32_t db_offset;
    uint32_t users;             /* QPs that complete into this CQ */
} UzuraCq;

typedef struct UzuraTm UzuraTm;

typedef struct UzuraSrq {
    bool valid;
    bool xrc;                   /* an XRC SRQ: xrcd and cqn are its own */
    UzuraTm *tm;                /* UZ_SRQF_TM: tag list, ops (uzura-tm.c) */
    uint32_t uctx;
    uint32_t pdn;
    uint32_t xrcd;
    uint32_t cqn;
    uint64_t ring_addr;
    uint32_t log_depth;
    uint32_t log_wqe_size;
    uint32_t limit;
    uint32_t pi;                /* from the doorbell */
    uint32_t ci;
    uint32_t db_offset;
    uint32_t users;
} UzuraSrq;

/*
 * Congestion control's knobs (spec 9.1.2): device properties with mlx5's
 * names (under ecn/roce_np and ecn/roce_rp), settable at run time.  Rates in
 * Mb/s, times in microseconds, alpha and g in 1/1024.
 */
typedef struct UzuraCcParams {
    bool np_enable;                     /* roce_np_enable */
    bool rp_enable;                     /* roce_rp_enable */
    uint32_t min_time_between_cnps;
    uint32_t cnp_dscp;
    uint32_t rpg_time_reset;
    uint32_t rpg_byte_reset;
    uint32_t rpg_threshold;
    uint32_t rpg_max_rate;              /* 0: the link's speed */
    uint32_t rpg_ai_rate;
    uint32_t rpg_hai_rate;
    uint32_t rpg_gd;
    uint32_t rpg_min_dec_fac;           /* percent */
    uint32_t rpg_min_rate;
    uint32_t rate_to_set_on_first_cnp;  /* 0: the link's speed */
    uint32_t rate_reduce_monitor_period;
    uint32_t dce_tcp_g;
    uint32_t dce_tcp_rtt;
    uint32_t initial_alpha_value;
} UzuraCcParams;

typedef struct UzuraQp {
    bool valid;
    uint8_t type;               /* UZ_QPT_* */
    uint8_t flags;
    uint32_t uctx;
    uint32_t pdn;
    uint32_t send_cqn;
    uint32_t recv_cqn;
    uint32_t srqn;
    uint64_t sq_addr;
    uint64_t rq_addr;
    uint32_t sq_log_depth;
    uint32_t rq_log_depth;
    uint32_t sq_log_wqe_size;
    uint32_t rq_log_wqe_size;
    uint32_t sq_db;
    uint32_t rq_db;
    uint32_t sq_pi;             /* from the doorbells */
    bool shadow_armed;          /* UZ_QPF_SQ_SHADOW: event = shadow_event */
    bool shadow_bad;            /* shadow_bad_pi was said to be bad */
    uint32_t shadow_event;
    uint32_t shadow_bad_pi;
    uint32_t rq_pi;
    uint32_t sq_ci;             /* WQEs the device has completed */
    uint32_t rq_ci;
    struct uz_qp_attr attr;     /* current attributes, host order */
    uint32_t mw_count;          /* type 2 windows it bound */
    uint32_t xrcd;              /* XRC target: its domain */
    uint32_t flows;             /* raw, RSS: flow rules attached */
    uint64_t raw_seq;           /* raw: the last frame it took */
    uint32_t rss_refs;          /* raw: RSS table entries naming it */
    struct UzuraRss *rss;       /* UZ_QPT_RSS: its table (uzura-rss.c) */
    UzuraXfer *x;               /* transport state */
} UzuraQp;

/* An MR, or a memory window (mw_type 1 or 2): keys of one space. */
typedef struct UzuraMr {
    bool valid;
    bool free;                  /* unbound window, free fast-reg MR */
    uint8_t mw_type;            /* 0: an MR; UZ_MW_TYPE_*: a window */
    uint8_t key;                /* the key byte */
    uint8_t flags;
    uint8_t page_shift;
    uint32_t uctx;
    uint32_t pdn;
    uint32_t access;
    uint64_t iova;
    uint64_t length;
    uint64_t pbl_addr;
    uint32_t npages;
    uint32_t max_pages;         /* fast-reg MR: its page list's capacity */
    uint64_t gen;               /* tags its cached translations */
    uint32_t mw_count;          /* MR: windows bound to it */
    uint32_t mw_mr;             /* bound window: its MR's index */
    uint32_t mw_qpn;            /* bound window: the QP that bound it */
    bool fault_posted;          /* ODP: a page fault not yet resumed */
    uint32_t dm;                /* DM MR: its allocation */
    uint64_t dm_base;           /* DM MR: where iova is in device memory */
    uint64_t imr_chunk;         /* implicit MR: the chunk whose child ... */
    uint32_t imr_key;           /* ... was found last, or 0 */
} UzuraMr;

typedef struct UzuraAh {
    bool valid;
    uint32_t uctx;
    uint32_t pdn;
    struct uz_av av;            /* as a WQE with UZ_WQE_F_AV carries it */
} UzuraAh;

/* One cached translation: (MR, generation, page) -> DMA address. */
typedef struct UzuraXlatEntry {
    uint32_t mr;                /* MR index, 0 = empty */
    uint64_t gen;               /* 64 bits: never wraps to a stale one */
    uint64_t page;
    uint64_t addr;
} UzuraXlatEntry;

/* A multicast group: its IPv4 address and the QPs attached; nqp 0 = free. */
typedef struct UzuraMcastGroup {
    uint32_t addr;
    uint32_t nqp;
    uint32_t qpn[UZ_MCAST_MAX_QP_ATTACH];
} UzuraMcastGroup;

/* An XRC domain; its SRQs and target QPs count as users. */
typedef struct UzuraXrcd {
    bool valid;
    uint32_t users;
} UzuraXrcd;

/* An allocation of device memory: pages [first, first + npages). */
typedef struct UzuraDm {
    bool valid;
    uint32_t uctx;
    uint32_t first;
    uint32_t npages;
    uint32_t users;             /* DM MRs */
} UzuraDm;

/* An RSS QP's table: a frame goes to qpn[hash & mask]. */
/* The fields an RSS table may hash. */
#define UZ_RSS_F_ALL    (UZ_RSS_F_SRC_IPV4 | UZ_RSS_F_DST_IPV4 | \
                         UZ_RSS_F_SRC_IPV6 | UZ_RSS_F_DST_IPV6 | \
                         UZ_RSS_F_SRC_PORT_TCP | UZ_RSS_F_DST_PORT_TCP | \
                         UZ_RSS_F_SRC_PORT_UDP | UZ_RSS_F_DST_PORT_UDP)

typedef struct UzuraRss {
    uint8_t key[40];
    uint32_t fields;            /* UZ_RSS_F_* */
    uint32_t mask;              /* entries - 1 */
    uint32_t qpn[];
} UzuraRss;

/* What flow rules and RSS look at in a frame; 16-bit fields as sent. */
typedef struct UzuraFrameKey {
    const uint8_t *dmac;
    const uint8_t *smac;
    uint16_t ethertype;
    uint16_t vlan_tci;
    uint8_t ip_ver;             /* 0: neither IPv4 nor IPv6 */
    uint8_t ip_proto;
    uint8_t src_ip[16];
    uint8_t dst_ip[16];
    bool l4;                    /* ports below are valid */
    uint16_t sport;
    uint16_t dport;
} UzuraFrameKey;

/* A flow rule: frames it matches go to raw QP qpn. */
typedef struct UzuraFlow {
    bool valid;
    uint32_t qpn;
    uint32_t uctx;
    struct uz_flow_spec spec;
} UzuraFlow;

typedef struct UzuraRdma {
    UzuraLimits lim;
    UzuraUctx *uctx;
    UzuraPd *pd;
    UzuraCq *cq;
    UzuraSrq *srq;
    UzuraQp *qp;
    UzuraMr *mr;
    UzuraAh *ah;
    UzuraMcastGroup mcast[UZ_MCAST_MAX_GRP];
    UzuraXrcd xrcd[UZ_XRCD_MAX];
    bool flush_owed;            /* a QP in ERR may hold WQEs */
    UzuraXlatEntry *xlat;       /* xlat_cache_entries */
    uint64_t xlat_gen;
    uint32_t rr_next;           /* round-robin start of the work loop */
    unsigned long *qp_live;     /* bitmap of valid QPs, for that loop */
    /* device memory (uzura-dm.c): RAM of BAR 4, from dm_offset */
    uint8_t *dm_mem;
    MemoryRegion *dm_region;
    uint32_t dm_size;           /* bytes; 0: none */
    bool sq_shadow;             /* UZ_CAP_SQ_SHADOW (property sq-shadow) */
    bool ecn;                   /* send RoCE frames ECT(0) (property ecn) */
    uint32_t dm_offset;
    uint32_t max_dm;            /* = its pages */
    unsigned long *dm_used;     /* a bit a page */
    UzuraDm *dm;
    UzuraFlow flow[UZ_FLOW_MAX];
    uint32_t nflows;
    uint64_t raw_seq;           /* frames matched against the rules */
    /* loss recovery (9.6), device properties */
    uint8_t recovery;           /* UzuraRecovery */
    uint32_t ack_timeout_max_us;    /* 0: the QP's IB timeout as is */
    uint32_t sr_rto_low_us;     /* recovery=sr, few packets in flight */
    uint32_t sr_kept;           /* packets all QPs keep */
    size_t sr_kept_bytes;       /* and what they hold */
    bool tm_owed;               /* a TM SRQ has list operations to do */
    UzuraCcParams cc;           /* congestion control (uzura-dcqcn.c) */
} UzuraRdma;

#define UZ_ACCESS_ALL   (UZ_ACCESS_LOCAL_WRITE | UZ_ACCESS_REMOTE_WRITE | \
                         UZ_ACCESS_REMOTE_READ | UZ_ACCESS_REMOTE_ATOMIC | \
                         UZ_ACCESS_MW_BIND | UZ_ACCESS_FLUSH_GLOBAL)

/* The QP types CREATE_QP takes. */
static inline bool uzura_qpt_known(uint8_t type)
{
    switch (type) {
    case UZ_QPT_RC:
    case UZ_QPT_UC:
    case UZ_QPT_UD:
    case UZ_QPT_GSI:
    case UZ_QPT_RAW:
    case UZ_QPT_XRC_INI:
    case UZ_QPT_XRC_TGT:
    case UZ_QPT_RSS:
        return true;
    }
    return false;
}

/* The transport of a QP, asked for on every packet. */
static inline bool uzura_qp_is_ud(const UzuraQp *qp)
{
    return qp->type == UZ_QPT_UD || qp->type == UZ_QPT_GSI;
}

static inline bool uzura_qp_is_raw(const UzuraQp *qp)
{
    return qp->type == UZ_QPT_RAW;
}

static inline bool uzura_qp_is_uc(const UzuraQp *qp)
{
    return qp->type == UZ_QPT_UC;
}

static inline bool uzura_qp_is_xrc(const UzuraQp *qp)
{
    return qp->type == UZ_QPT_XRC_INI || qp->type == UZ_QPT_XRC_TGT;
}

/*
 * Queues of its own: an XRC target and an RSS QP have none, an XRC
 * initiator no RQ, a UZ_QPF_NO_SQ raw QP (a WQ) no SQ.
 */
static inline bool uzura_qp_has_sq(const UzuraQp *qp)
{
    return uz_qpt_has_sq(qp->type) && !(qp->flags & UZ_QPF_NO_SQ);
}

static inline bool uzura_qp_has_rq(const UzuraQp *qp)
{
    return qp->srqn == UZ_NO_SRQ && uz_qpt_receives(qp->type);
}

/* A receive through an XRC target names the SRQ it came from. */
static inline void uzura_xrc_cqe(const UzuraQp *qp, struct uz_cqe *cqe)
{
    if (qp->type == UZ_QPT_XRC_TGT) {
        cqe->wc_flags |= UZ_WC_F_XRC;
        cqe->src_qp = cpu_to_le32(qp->srqn);
    }
}

/* A QP takes packets from RTR until the error state. */
static inline bool uzura_qp_receives(const UzuraQp *qp)
{
    return qp->attr.state >= UZ_QPS_RTR && qp->attr.state <= UZ_QPS_SQE;
}

/* [addr, addr + len) lies within [base, base + size), without wrapping. */
static inline bool uzura_in_range(uint64_t addr, uint64_t len, uint64_t base,
                                  uint64_t size)
{
    return addr >= base && addr + len >= addr && addr + len <= base + size;
}

/* A table slot that is free, from index @first; -1 when full. */
#define UZ_FIND_FREE(tab, n, first) ({                      \
        int64_t _i, _r = -1;                                \
        for (_i = (first); _i < (n); _i++) {                \
            if (!(tab)[_i].valid) {                         \
                _r = _i;                                    \
                break;                                      \
            }                                               \
        }                                                   \
        _r;                                                 \
    })

/* uzura-rdma.c: the object tables and contexts */
void uzura_rdma_init(UzuraCore *core);
void uzura_rdma_uninit(UzuraCore *core);
void uzura_rdma_reset(UzuraCore *core);
void uzura_rdma_fill_attr(UzuraCore *core, struct uz_device_attr *attr);
bool uzura_uctx_ok(UzuraCore *core, uint32_t uctx);
void uzura_uctx_get(UzuraCore *core, uint32_t uctx);
void uzura_uctx_put(UzuraCore *core, uint32_t uctx);
UzuraCmdFn uzura_cmd_create_uctx;
UzuraCmdFn uzura_cmd_destroy_uctx;

/* uzura-pd.c, uzura-ah.c */
UzuraPd *uzura_pd_lookup(UzuraCore *core, uint32_t pdn, uint32_t uctx);
UzuraCmdFn uzura_cmd_alloc_pd;
UzuraCmdFn uzura_cmd_dealloc_pd;
UzuraCmdFn uzura_cmd_create_ah;
UzuraCmdFn uzura_cmd_destroy_ah;

/* uzura-srq.c */
UzuraSrq *uzura_srq_lookup(UzuraCore *core, uint32_t srqn);
UzuraCmdFn uzura_cmd_create_srq;
UzuraCmdFn uzura_cmd_modify_srq;
UzuraCmdFn uzura_cmd_resize_srq;
UzuraCmdFn uzura_cmd_destroy_srq;
void uzura_srq_doorbell(UzuraCore *core, uint32_t srqn, uint32_t val);

/* uzura-mr.c: memory regions */
UzuraCmdFn uzura_cmd_invalidate_xlat;   /* uzura-xlat.c */
UzuraCmdFn uzura_cmd_reg_mr;
UzuraCmdFn uzura_cmd_rereg_mr;
UzuraCmdFn uzura_cmd_dereg_mr;
UzuraCmdFn uzura_cmd_page_resume;
UzuraMr *uzura_mr_slot(UzuraCore *core, uint32_t key);
UzuraMr *uzura_mr_lookup(UzuraCore *core, uint32_t key);
bool uzura_mr_shape_ok(UzuraCore *core, uint32_t access, uint64_t iova,
                       uint64_t len, uint8_t shift, uint64_t npages,
                       bool paged);

/* uzura-mw.c: memory windows */
UzuraMr *uzura_mw_slot(UzuraCore *core, uint32_t key);
UzuraCmdFn uzura_cmd_alloc_mw;
UzuraCmdFn uzura_cmd_dealloc_mw;
uint8_t uzura_mw_bind(UzuraCore *core, UzuraQp *qp,
                      const struct uz_send_wqe *h, uint8_t *verr);
uint8_t uzura_mw_inv(UzuraCore *core, UzuraQp *qp, uint32_t key, bool remote);
void uzura_mw_qp_gone(UzuraCore *core, uint32_t qpn);
uint8_t uzura_rkey_check(UzuraCore *core, UzuraQp *qp, uint32_t key,
                         uint64_t addr, uint64_t len, uint32_t access,
                         UzuraMr **out);

/* uzura-xrc.c: XRC domains and the target side's SRQ */
UzuraCmdFn uzura_cmd_alloc_xrcd;
UzuraCmdFn uzura_cmd_dealloc_xrcd;
UzuraXrcd *uzura_xrcd_lookup(UzuraCore *core, uint32_t xrcd);
bool uzura_xrc_adopt(UzuraCore *core, UzuraQp *qp, uint32_t srqn);
bool uzura_xrc_held(UzuraCore *core, UzuraQp *qp);
void uzura_xrc_srq_gone(UzuraCore *core, uint32_t srqn);

/* uzura-dm.c: device memory */
void uzura_dm_init(UzuraCore *core, MemoryRegion *region, uint32_t size,
                   uint32_t offset);
void uzura_dm_uninit(UzuraCore *core);
void uzura_dm_reset(UzuraCore *core);
UzuraCmdFn uzura_cmd_alloc_dm;
UzuraCmdFn uzura_cmd_dealloc_dm;
uint8_t uzura_dm_mr_reg(UzuraCore *core, const struct uz_cmd_reg_mr *c,
                        UzuraMr *mr);
void uzura_dm_mr_dereg(UzuraCore *core, UzuraMr *mr);
void uzura_dm_copy(UzuraCore *core, UzuraMr *mr, uint64_t addr, void *buf,
                   uint64_t len, bool to_mr);

/* uzura-raw.c: raw packet QPs and flow rules */
bool uzura_raw_receive(UzuraCore *core, const uint8_t *buf, size_t size);
void uzura_raw_transmit(UzuraCore *core, const uint8_t *buf, size_t len);
UzuraCmdFn uzura_cmd_create_flow;
UzuraCmdFn uzura_cmd_destroy_flow;

/* uzura-rss.c: receive side scaling (spec 8.18.1) */
uint32_t uzura_rss_toeplitz(const uint8_t *key, const uint8_t *in,
                            size_t len);
uint8_t uzura_rss_create(UzuraCore *core, uint64_t addr, uint32_t uctx,
                         UzuraRss **out);
void uzura_rss_attach(UzuraCore *core, UzuraQp *qp, UzuraRss *rss);
void uzura_rss_release(UzuraCore *core, UzuraQp *qp);
UzuraQp *uzura_rss_target(UzuraCore *core, const UzuraQp *qp,
                          const UzuraFrameKey *k);

/* uzura-tm.c: tag matching SRQs (spec 8.19) */
#define UZ_TM_MAX_TAGS          256     /* max_tm_tags */
#define UZ_TM_LOG_MAX_OPS       10      /* max_tm_ops = 1024 */

/*
 * A TM SRQ's tag list and its ring of list operations; here, not in
 * uzura-tm.c, because the migration stream carries them.
 */
typedef enum UzuraTmEntryState {
    UZ_TME_FREE = 0,
    UZ_TME_POSTED,              /* waits for a message */
    UZ_TME_BUSY,                /* a message is landing in it */
} UzuraTmEntryState;

typedef struct UzuraTmEntry {
    uint8_t state;              /* UzuraTmEntryState */
    uint8_t num_sge;            /* 0 or 1 */
    uint64_t seq;               /* add order: the oldest match wins */
    uint64_t tag;
    uint64_t mask;
    uint64_t recv_wr_id;
    struct uz_sge sge;          /* host order */
} UzuraTmEntry;

struct UzuraTm {
    uint32_t max_tags;
    UzuraTmEntry *e;
    uint64_t ops_addr;
    uint32_t ops_log_depth;
    uint32_t ops_pi;            /* from the doorbell */
    uint32_t ops_ci;            /* next operation to carry out */
    uint32_t ops_db;
    uint32_t unexp;             /* U: messages delivered unexpected */
    uint32_t sw;                /* S: what software last said it saw */
    uint64_t add_seq;
};

uint8_t uzura_tm_srq_check(UzuraCore *core,
                           const struct uz_cmd_create_srq *c);
void uzura_tm_srq_init(UzuraSrq *srq, const struct uz_cmd_create_srq *c,
                       uint32_t ops_db);
void uzura_tm_srq_destroy(UzuraCore *core, UzuraSrq *srq);
void uzura_tm_doorbell(UzuraCore *core, uint32_t srqn, uint32_t val);
void uzura_tm_work(UzuraCore *core);

/* uzura-mcast.c: UD multicast groups */
bool uzura_mcast_gid(const uint8_t *gid);
UzuraCmdFn uzura_cmd_attach_mcast;
UzuraCmdFn uzura_cmd_detach_mcast;
void uzura_mcast_qp_gone(UzuraCore *core, uint32_t qpn);

/* uzura-qp.c: queue pairs and their state machine */
UzuraCmdFn uzura_cmd_create_qp;
UzuraCmdFn uzura_cmd_modify_qp;
UzuraCmdFn uzura_cmd_query_qp;
UzuraCmdFn uzura_cmd_destroy_qp;
void uzura_qp_doorbell(UzuraCore *core, uint32_t qpn, bool sq, uint32_t val);
uint8_t uzura_qp_active_mtu(UzuraCore *core);
void uzura_qp_work(UzuraCore *core);
UzuraQp *uzura_qp_lookup(UzuraCore *core, uint32_t qpn);
void uzura_qp_fail(UzuraCore *core, UzuraQp *qp, uint8_t event);
void uzura_qp_flush_later(UzuraCore *core);
void uzura_qp_restore_xfer(UzuraCore *core, UzuraQp *qp, uint32_t qpn);

/* uzura-shadow.c */
bool uzura_shadow_poll(UzuraCore *core, UzuraQp *qp);
bool uzura_shadow_asked(const UzuraQp *qp);
bool uzura_shadow_idle(UzuraCore *core, UzuraQp *qp);
void uzura_shadow_reset(UzuraCore *core, UzuraQp *qp);
void uzura_qp_free_all(UzuraCore *core);
uint8_t uzura_wr_to_wc(uint8_t wr_opcode);

/* uzura-cq.c: completion queues and completions */
UzuraCq *uzura_cq_lookup(UzuraCore *core, uint32_t cqn, uint32_t uctx);
UzuraCmdFn uzura_cmd_create_cq;
UzuraCmdFn uzura_cmd_resize_cq;
UzuraCmdFn uzura_cmd_destroy_cq;
void uzura_cq_doorbell(UzuraCore *core, uint32_t cqn, uint32_t val);
static inline uint32_t uzura_cqe_size(uint8_t cq_flags)
{
    return cq_flags & UZ_CQF_TIMESTAMP ? sizeof(struct uz_cqe_ts) :
                                         sizeof(struct uz_cqe);
}
bool uzura_cq_post(UzuraCore *core, uint32_t cqn, const struct uz_cqe *cqe,
                   bool solicited);

#endif /* HW_RDMA_UZURA_RDMA_H */
