/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uzura RDMA NIC: the device core, independent of the PCI glue.
 *
 * The core sees the PCI function only through its owner pointer (for DMA
 * and MSI-X) and the NIC only through owner_nic.  uzura-core.c holds its
 * life, entries and work loop; its parts live in files of their own:
 * registers (uzura-regs.c), doorbells (uzura-db.c), the admin queue
 * (uzura-admin.c), event queues (uzura-eq.c), the Ethernet function
 * (uzura-eth.c), the RDMA engine (uzura-rdma.h) and the port
 * (uzura-link.c).  Between the port and the link sit the research layers
 * (research/: fault injection and the timing model), off unless set.
 */
#ifndef HW_RDMA_UZURA_CORE_H
#define HW_RDMA_UZURA_CORE_H

#include "exec/hwaddr.h"
#include "qemu/bswap.h"
#include "qemu/log.h"
#include "qemu/queue.h"
#include "standard-headers/drivers/infiniband/hw/uzura/uzura_regs_defs.h"
#include "standard-headers/drivers/infiniband/hw/uzura/uzura_admin_defs.h"
#include "standard-headers/drivers/infiniband/hw/uzura/uzura_admin_cmds_defs.h"
#include "standard-headers/drivers/infiniband/hw/uzura/uzura_io_defs.h"
#include "standard-headers/drivers/infiniband/hw/uzura/uzura_roce_defs.h"
#include "uzura-rdma.h"
#include "research/uzura-fault.h"
#include "research/uzura-model.h"

typedef struct PCIDevice PCIDevice;
typedef struct NICState NICState;
typedef struct QEMUBH QEMUBH;

#define UZ_IDX_MASK             0x00ffffffu  /* free running ring indices */
#define UZ_SPEED_MIN            10      /* link speed, Mb/s: 10BASE-T .. */
#define UZ_SPEED_MAX            400000  /* .. 400GbE */

/* What this device implements: UZ_REG_CAPS and QUERY_DEVICE. */
#define UZURA_CAPS  (UZ_CAP_MSIX | UZ_CAP_LINK_STATE | UZ_CAP_ADMIN | \
                     UZ_CAP_ETH | UZ_CAP_RDMA | UZ_CAP_CRW | \
                     UZ_CAP_LINK_SPEED | UZ_CAP_CQ_PAGES | \
                     UZ_CAP_FAST_REG | UZ_CAP_CQ_RESIZE | \
                     UZ_CAP_MR_REREG | UZ_CAP_MW | UZ_CAP_ODP | \
                     UZ_CAP_UC | UZ_CAP_MCAST | \
                     UZ_CAP_SRQ_RESIZE | UZ_CAP_PLACEMENT | UZ_CAP_XRC | \
                     UZ_CAP_TIMESTAMP | UZ_CAP_RAW | UZ_CAP_ODP_IMPLICIT | \
                     UZ_CAP_TM | UZ_CAP_RSS)

/* Entries between two ring indices. */
static inline uint32_t uzura_ring_used(uint32_t pi, uint32_t ci)
{
    return (pi - ci) & UZ_IDX_MASK;
}

/*
 * A producer doorbell: the new index may not put more than @size entries
 * ahead of the consumer @ci.
 */
static inline bool uzura_ring_pi_ok(uint32_t new_pi, uint32_t ci,
                                    uint32_t size)
{
    return uzura_ring_used(new_pi, ci) <= size;
}

/* A consumer doorbell: the new index lies between the old one and @pi. */
static inline bool uzura_ring_ci_ok(uint32_t new_ci, uint32_t ci, uint32_t pi)
{
    return uzura_ring_used(pi, new_ci) <= uzura_ring_used(pi, ci);
}

/* A guest mistake: an error trace event and a guest-error log line. */
#define uzura_guest_error(trace_call, fmt, ...) do {                   \
        trace_call;                                                     \
        qemu_log_mask(LOG_GUEST_ERROR, "uzura: " fmt "\n", ## __VA_ARGS__); \
    } while (0)

/* What a doorbell slot rings; the slot map stores kind << 24 | index. */
typedef enum UzuraDbKind {
    UZ_DBK_NONE = 0,
    UZ_DBK_ADMIN,
    UZ_DBK_EQ,
    UZ_DBK_ETH_TX,
    UZ_DBK_ETH_RX,
    UZ_DBK_CQ,
    UZ_DBK_SRQ,
    UZ_DBK_SQ,
    UZ_DBK_RQ,
    UZ_DBK_TM,                  /* a TM SRQ's list operations */
    UZ_DBK_MAX,
} UzuraDbKind;

typedef struct UzuraCounters {
    uint64_t tx_frames;
    uint64_t tx_bytes;
    uint64_t tx_errors;
    uint64_t rx_frames;
    uint64_t rx_bytes;
    uint64_t rx_dropped;
    uint64_t admin_cmds;
    uint64_t admin_errors;
    uint64_t eq_events;
    uint64_t eq_overflows;
    uint64_t irqs;
    uint64_t doorbells;
    uint64_t cqes;
    uint64_t cqes_error;
    /* RoCE packets and bytes (whole frames) by kind, UzuraFamily order */
    uint64_t roce_tx_pkts[UZ_FAM_MAX];
    uint64_t roce_tx_bytes[UZ_FAM_MAX];
    uint64_t roce_rx_pkts[UZ_FAM_MAX];
    uint64_t roce_rx_bytes[UZ_FAM_MAX];
    uint64_t retransmits;       /* packets sent again */
    uint64_t retry_timeouts;    /* ACK timeouts */
    uint64_t naks_sent;
    uint64_t naks_rcvd;
    uint64_t nak_seq_sent;
    uint64_t nak_seq_rcvd;
    uint64_t nak_inv_req_rcvd;
    uint64_t nak_rem_access_rcvd;
    uint64_t nak_rem_op_rcvd;
    uint64_t rnr_naks_sent;
    uint64_t rnr_naks_rcvd;
    uint64_t acks_coalesced;    /* requests acknowledged by a later ACK */
    uint64_t duplicates;        /* duplicate requests answered again */
    uint64_t icrc_errors;
    uint64_t rx_malformed;      /* RoCE frames that make no sense */
    uint64_t rx_no_qp;          /* no such QP, or not receiving */
    uint64_t rx_qkey_errors;    /* UD: Q_Key mismatch */
    uint64_t rx_ud_no_wqe;      /* UD: no receive WQE posted */
    uint64_t rx_ud_too_long;    /* UD: larger than the receive WQE */
    uint64_t sacks_sent;        /* selective repeat (9.6) */
    uint64_t sacks_rcvd;
    uint64_t sr_kept;
    uint64_t sr_resent;
    uint64_t rx_stale;          /* responses that match nothing */
    uint64_t roce_tx_dropped;   /* link down */
    uint64_t loop_frames;       /* RoCE frames looped back to this NIC */
    uint64_t loop_dropped;      /* the loopback FIFO was full */
    uint64_t rx_not_ours;       /* unicast frames to another MAC */
    uint64_t np_ecn_marked_roce_packets;    /* RoCE packets marked CE */
    uint64_t np_cnp_sent;       /* congestion control (uzura-dcqcn.c) */
    uint64_t rp_cnp_handled;
    uint64_t rp_cnp_ignored;
    uint64_t rx_out_of_buffer;  /* Ethernet: no descriptor, hold queue full */
    uint64_t rx_pause_ctrl_phy; /* PAUSE and PFC frames (uzura-pause.c) */
    uint64_t rx_pause_transition;   /* times sending was paused */
    uint64_t rx_pause_duration; /* microseconds paused, virtual time */
    uint64_t xlat_hits;
    uint64_t xlat_misses;
    uint64_t xlat_evictions;
    uint64_t xlat_faults;       /* ODP pages found absent */
    uint64_t xlat_invalidations; /* INVALIDATE_XLAT commands carried out */
    uint64_t uc_dropped;        /* UC messages dropped by the responder */
    uint64_t rx_mcast;          /* multicast datagrams handed to members */
    uint64_t sq_shadow_takes;   /* SQ indices read from shadow records */
    /* faults injected on transmit (research/uzura-fault.c) */
    uint64_t fault_drops;
    uint64_t fault_dups;
    uint64_t fault_reorders;
    uint64_t fault_corrupts;
    uint64_t fault_delayed;
    /* conditional RDMA write (uzura-crw.c) */
    uint64_t crw_parked;        /* CRWs that waited for their STCRW */
    uint64_t crw_offers;        /* STCRWs that waited for their CRW */
    uint64_t crw_matched_crw_first;
    uint64_t crw_matched_stcrw_first;
    uint64_t crw_flushed;
    uint64_t crw_errors;        /* table full or duplicate tag */
} UzuraCounters;

/*
 * The one table of the counters (uzura-admin.c), by their UZ_CNT_* index:
 * the name (the qom-get property, spec section 10) and the field.  Both
 * QUERY_COUNTERS and the QOM properties are built from it.
 */
typedef struct UzuraCounterDesc {
    const char *name;
    size_t offset;              /* of the uint64_t in UzuraCounters */
} UzuraCounterDesc;

extern const UzuraCounterDesc uzura_counter_descs[UZ_CNT_NUM];

static inline uint64_t *uzura_counter(UzuraCounters *c, unsigned int index)
{
    return (uint64_t *)((uint8_t *)c + uzura_counter_descs[index].offset);
}

typedef struct UzuraLoopFrame UzuraLoopFrame;

#define UZ_LOOP_QUEUE_MAX       4096    /* looped-back frames, then drops */

typedef struct UzuraAdmin {
    uint64_t sq_addr;
    uint64_t cq_addr;
    uint32_t log_depth;
    bool enabled;
    bool intr;
    bool error;
    uint32_t pi;                /* from the doorbell */
    uint32_t ci;                /* commands consumed */
    uint32_t work;              /* the command running: what it cost */
    uint64_t yields;            /* turns the budget ended early */
    QEMUBH *bh;
} UzuraAdmin;

typedef struct UzuraEq {
    bool valid;
    bool async;
    bool armed;
    bool overflowed;            /* events lost, overflow EQE owed */
    uint64_t ring_addr;
    uint32_t log_depth;
    uint16_t vector;
    uint32_t pi;                /* next entry the device writes */
    uint32_t ci;                /* from the doorbell */
    uint32_t db_offset;
    uint32_t users;             /* queues that post to this EQ */
} UzuraEq;

typedef struct UzuraEthRing {
    bool valid;
    bool event_owed;            /* work done since the last EQE */
    uint64_t ring_addr;
    uint32_t log_depth;
    uint32_t eqn;
    uint32_t pi;                /* from the doorbell */
    uint32_t ci;                /* next descriptor the device uses */
    uint32_t db_offset;
} UzuraEthRing;

/* Link-level flow control received (uzura-pause.c, spec 9.1.3). */
typedef struct UzuraPause {
    bool rx;                    /* pause-rx: honour PAUSE and PFC frames */
    uint8_t prio;               /* pfc-prio: the priority the NIC sends in */
    bool paused;
    int64_t since;              /* virtual ns, while paused */
    int64_t storm_until;        /* pauses not honoured before then */
    QEMUTimer *timer;           /* the pause's end */
    /* frames made while paused, to send at its end */
    QSIMPLEQ_HEAD(, UzuraPauseHeld) held;
    uint32_t held_frames;
    size_t held_bytes;
} UzuraPause;

typedef struct UzuraCore {
    PCIDevice *owner;
    NICState *owner_nic;
    uint8_t perm_mac[6];        /* from the mac property */
    uint8_t mac[6];             /* current, SET_MAC */
    uint32_t mtu;
    uint32_t num_vectors;
    uint32_t db_pages;
    uint32_t link_speed;        /* Mb/s, advertised only */

    /* register file */
    uint32_t status;
    uint32_t scratch;
    uint32_t err_status;
    uint32_t err_count;
    uint32_t err_addr;

    /* link: the backend's, the link property's and a flap's (7.5) */
    bool nc_link_up;
    bool link_prop;
    bool flap_down;

    UzuraAdmin admin;
    UzuraEq eq[UZ_MAX_EQ];
    UzuraEthRing eth_tx;
    UzuraEthRing eth_rx;
    /* RX frames that came with no descriptor posted (uzura-eth.c) */
    QSIMPLEQ_HEAD(, UzuraEthHeld) eth_hold;
    uint32_t eth_hold_frames;
    size_t eth_hold_bytes;
    uint32_t *db_map;           /* db_pages * UZ_DB_SLOTS_PER_PAGE */

    UzuraRdma rdma;

    QEMUBH *work_bh;            /* Ethernet and RDMA queues */
    bool rx_flush_owed;
    bool busy;                  /* in the data path: receive later */
    bool work_owed;             /* work_bh scheduled and not yet run */
    bool tx_batch;              /* a turn's frames as one batch (7.1) */
    bool rx_batch;              /* work at a received batch's end */
    bool *in_io;                /* the owner's re-entrancy guard */
    unsigned depth;             /* uzura_enter nesting */
    bool reset_owed;            /* a reset arrived at depth > 0 */
    uint8_t *tx_frame;          /* UZ_ETH_FRAME_MAX(UZ_MAX_MTU) bytes */
    uint8_t *roce_frame;        /* the same, for RoCE frames */

    UzuraFault fault;
    UzuraPause pause;
    UzuraModel model;
    QSIMPLEQ_HEAD(, UzuraLoopFrame) loop;   /* RoCE frames to our own MAC */
    uint32_t loop_queued;
    UzuraCounters counters;
} UzuraCore;

/* UZURA_CAPS, and device memory where the device has some. */
static inline uint32_t uzura_caps(const UzuraCore *core)
{
    return UZURA_CAPS | (core->rdma.dm_size ? UZ_CAP_DM : 0) |
           (core->rdma.sq_shadow ? UZ_CAP_SQ_SHADOW : 0);
}

/* uzura-core.c: life, entries, the link's state */
void uzura_core_init(UzuraCore *core);
void uzura_core_uninit(UzuraCore *core);
void uzura_core_reset(UzuraCore *core);
bool uzura_enter(UzuraCore *core);
void uzura_leave(UzuraCore *core, bool guard_was);
void uzura_core_set_link(UzuraCore *core, bool nc_up, bool prop_up);
bool uzura_core_link_up(UzuraCore *core);
uint64_t uzura_clock_ns(void);

/* uzura-regs.c: the BAR 0 register table */
uint64_t uzura_core_reg_read(UzuraCore *core, hwaddr addr, unsigned size);
void uzura_core_reg_write(UzuraCore *core, hwaddr addr, uint64_t val,
                          unsigned size);
void uzura_core_record_error(UzuraCore *core, uint32_t err, hwaddr addr);

/* uzura-dma.c */
bool uzura_dma_ok(UzuraCore *core, uint64_t addr, uint64_t len, bool write);
bool uzura_dma_read(UzuraCore *core, uint64_t addr, void *buf, uint64_t len);

/*
 * A RoCE frame sent from guest memory in place (uzura-roce.c): iov[0] is
 * the headers, then the payload's pieces, then the pad and ICRC.  A piece
 * is either a mapping of guest RAM (its bit in @mapped set) or bytes of
 * the linear frame buffer, at the place they would have in a linear
 * frame, so that consecutive such pieces merge.
 */
#define UZ_TX_PIECES    16
struct UzuraTxMap {
    struct iovec iov[UZ_TX_PIECES];
    uint32_t mapped;
    unsigned niov;
};

void uzura_tx_add(UzuraTxMap *m, void *p, size_t len, bool mapped);
bool uzura_dma_read_tx(UzuraCore *core, UzuraTxMap *m, uint64_t addr,
                       uint8_t *buf, uint64_t len);
void uzura_dma_unmap_tx(UzuraCore *core, UzuraTxMap *m);
bool uzura_dma_write(UzuraCore *core, uint64_t addr, const void *buf,
                     uint64_t len);
bool uzura_dma_write_entry(UzuraCore *core, uint64_t addr, const void *entry,
                           uint64_t len);
void uzura_irq(UzuraCore *core, unsigned vector);

/* uzura-db.c */
void uzura_db_reset(UzuraCore *core);
bool uzura_db_alloc(UzuraCore *core, uint32_t page, UzuraDbKind kind,
                    uint32_t index, uint32_t *offset);
void uzura_db_free(UzuraCore *core, uint32_t offset);
void uzura_db_write(UzuraCore *core, hwaddr addr, uint64_t val,
                    unsigned size);
uint64_t uzura_db_read(UzuraCore *core, hwaddr addr, unsigned size);

/* uzura-admin.c */
void uzura_admin_reset(UzuraCore *core);
bool uzura_admin_enable(UzuraCore *core, bool enable, bool intr);
void uzura_admin_doorbell(UzuraCore *core, uint32_t index, uint32_t val);
void uzura_admin_bh(void *opaque);
void uzura_admin_charge(UzuraCore *core, uint32_t n);

/* uzura-eq.c */
void uzura_eq_reset(UzuraCore *core);
UzuraCmdFn uzura_cmd_create_eq;
UzuraCmdFn uzura_cmd_destroy_eq;
bool uzura_eq_get(UzuraCore *core, uint32_t eqn);
void uzura_eq_put(UzuraCore *core, uint32_t eqn);
bool uzura_eq_post(UzuraCore *core, uint32_t eqn, uint8_t type,
                   uint32_t handle, uint32_t data);
bool uzura_eq_post_async(UzuraCore *core, uint8_t type, uint32_t handle,
                         uint32_t data);
void uzura_eq_doorbell(UzuraCore *core, uint32_t eqn, uint32_t val);

/* uzura-eth.c */
void uzura_eth_reset(UzuraCore *core);
UzuraCmdFn uzura_cmd_create_eth_txq;
UzuraCmdFn uzura_cmd_create_eth_rxq;
UzuraCmdFn uzura_cmd_destroy_eth_txq;
UzuraCmdFn uzura_cmd_destroy_eth_rxq;
void uzura_eth_doorbell(UzuraCore *core, bool tx, uint32_t val);
void uzura_eth_work(UzuraCore *core);
ssize_t uzura_eth_receive(UzuraCore *core, const uint8_t *buf, size_t size);

/* uzura-pause.c */
bool uzura_pause_receive(UzuraCore *core, const uint8_t *buf, size_t size);
bool uzura_pause_active(UzuraCore *core);
bool uzura_pause_hold(UzuraCore *core, const uint8_t *buf, size_t len);
void uzura_pause_init(UzuraCore *core);
void uzura_pause_reset(UzuraCore *core);
void uzura_pause_uninit(UzuraCore *core);

/* uzura-link.c: the port */
void uzura_link_send(UzuraCore *core, const uint8_t *buf, size_t len);
bool uzura_link_direct(UzuraCore *core);
void uzura_link_sendv(UzuraCore *core, const struct iovec *iov, int n);
void uzura_link_wire(UzuraCore *core, const uint8_t *buf, size_t len);
ssize_t uzura_link_receive(UzuraCore *core, const uint8_t *buf, size_t size);

/* research/uzura-fault.c: the fault injector */
bool uzura_fault_tx_active(UzuraFault *f);
void uzura_fault_tx(UzuraCore *core, const uint8_t *buf, size_t len);
void uzura_fault_init(UzuraCore *core);
void uzura_fault_uninit(UzuraCore *core);
void uzura_fault_flush(UzuraCore *core);
bool uzura_fault_rx(UzuraCore *core, const uint8_t *buf, size_t len);
bool uzura_fault_set_rules(UzuraCore *core, const char *text, char **why);
void uzura_fault_take_rules(UzuraCore *core, UzuraFaultRule *rules,
                            uint32_t n);
char *uzura_fault_get_rules(UzuraCore *core);
void uzura_fault_set_flap(UzuraCore *core, uint32_t down_us,
                          uint32_t period_us);

/* research/uzura-model.c: the timing model */
void uzura_model_init(UzuraCore *core);
void uzura_model_uninit(UzuraCore *core);
void uzura_model_reset(UzuraCore *core);
void uzura_model_instance_init(UzuraCore *core);
void uzura_model_finalize(UzuraCore *core);
void uzura_model_link_down(UzuraCore *core);
bool uzura_model_check(const UzuraModelParams *p, Error **errp);
bool uzura_model_set_sync(UzuraCore *core, bool on, Error **errp);
void uzura_model_kick(UzuraCore *core, int64_t delay_ns);
void uzura_model_send(UzuraCore *core, const uint8_t *buf, size_t len);
ssize_t uzura_model_receive(UzuraCore *core, const uint8_t *buf, size_t len);

/* uzura-migration.c: what moves, and what blocks a move (spec 7.4) */
extern const VMStateDescription vmstate_uzura_core;
bool uzura_migration_check(UzuraCore *core, Error **errp);

/* uzura-crc.c */
uint32_t uzura_crc32(uint32_t crc, const uint8_t *p, size_t len);
uint32_t uzura_crc32_iov(uint32_t crc, const struct iovec *iov, unsigned n);

/* uzura-loop.c */
bool uzura_loop_is_own(UzuraCore *core, const uint8_t *frame);
void uzura_loop_send(UzuraCore *core, const uint8_t *buf, size_t len);
void uzura_loop_send_raw(UzuraCore *core, const uint8_t *buf, size_t len);
void uzura_loop_work(UzuraCore *core);
void uzura_loop_flush(UzuraCore *core);
void uzura_fault_set_seed(UzuraFault *f, uint64_t seed);
void uzura_fault_reseed(UzuraCore *core, uint64_t seed);

/*
 * uzura-core.c: the work bottom half (everything a data doorbell asked
 * for), device turns, and received frames
 */
void uzura_work_bh(void *opaque);
bool uzura_turn_begin(UzuraCore *core);
void uzura_turn_end(bool opened);
void uzura_work_after_batch(UzuraCore *core);
void uzura_work_schedule(UzuraCore *core);
ssize_t uzura_core_receive(UzuraCore *core, const uint8_t *buf, size_t size);
void uzura_core_receive_roce(UzuraCore *core, const uint8_t *buf,
                             size_t size);

#endif /* HW_RDMA_UZURA_CORE_H */
