/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Verbs-style helpers for the uzura data-path qtests.  A UzNode is one NIC
 * brought up the way a kernel driver does it: admin queue, an async EQ, a
 * completion EQ and a PD.  On top of it: CQs, MRs with page lists, QPs and
 * SRQs whose rings live in guest memory, WQE building and posting, and the
 * RC and UD state transitions that connect QPs of two NICs on one hub;
 * and the checks the tests share: of CQEs, and of MR contents against
 * pattern data.
 *
 * The helpers allocate their objects and the node owns them: everything is
 * freed by uz_node_stop().  Fields of the helpers' own structures are in
 * host order; the helpers convert where they meet guest memory.
 */
#ifndef UZURA_VERBS_H
#define UZURA_VERBS_H

#include "uzura-qtest.h"

#define UZ_PAGE_SHIFT       12
#define UZ_PAGE_SIZE        (1u << UZ_PAGE_SHIFT)
#define UZ_PAGE_MASK        ((uint64_t)UZ_PAGE_SIZE - 1)

/* Every QP's rings: 64 WQEs of 256 bytes, room for 12 SGEs or 192 bytes. */
#define UZ_SQ_LOG_DEPTH     6
#define UZ_RQ_LOG_DEPTH     6
#define UZ_SQ_LOG_WQE       8
#define UZ_RQ_LOG_WQE       8
#define UZ_SQ_WQE_SIZE      (1u << UZ_SQ_LOG_WQE)
#define UZ_RQ_WQE_SIZE      (1u << UZ_RQ_LOG_WQE)
#define UZ_SQ_MAX_SGE       ((UZ_SQ_WQE_SIZE - 64) / 16)
#define UZ_SQ_MAX_INLINE    (UZ_SQ_WQE_SIZE - 64)
#define UZ_RQ_MAX_SGE       ((UZ_RQ_WQE_SIZE - 16) / 16)
#define UZ_CQ_LOG_DEPTH     8

/* Outstanding READ/atomic per QP: the device's default max-qp-rd-atom. */
#define UZ_RD_ATOMIC        16

#define UZ_GSI_QKEY         0x80010000u
#define UZ_ACCESS_ALL       (UZ_ACCESS_LOCAL_WRITE | UZ_ACCESS_REMOTE_WRITE | \
                             UZ_ACCESS_REMOTE_READ | UZ_ACCESS_REMOTE_ATOMIC)

/* uz_cqe_expect(): do not check the opcode. */
#define UZ_WC_ANY           0xff

typedef struct UzNode {
    UzMachine *m;
    int idx;                    /* NIC uz<idx> */
    UzDev d;
    UzEq async_eq;              /* UZ_EQ_F_ASYNC, vector 1 */
    UzEq comp_eq;               /* completion events of every CQ, vector 2 */
    uint32_t pdn;
    uint32_t uctx;              /* context of what is created next; 0 kernel */
    uint64_t attr_buf;          /* scratch page for MODIFY_QP, QUERY_QP */
    uint64_t next_iova;         /* where uz_mr_reg() puts the next MR */
    uint8_t next_key;           /* key byte of the next MR */
    GPtrArray *mrs;             /* UzMr *, to find an MR by its key */
    GPtrArray *owned;           /* freed by uz_node_stop() */
} UzNode;

typedef struct UzCq {
    UzNode *n;
    uint32_t cqn;
    uint32_t db;
    uint64_t ring;              /* contiguous ring, or 0 */
    uint64_t *pages;            /* paged ring: its pages, in ring order */
    uint64_t list;              /* ... and their list as the device reads it */
    uint32_t log_depth;
    uint32_t ci;
    uint32_t cqe_size;          /* 32, or 64 with UZ_CQF_TIMESTAMP */
    uint64_t ts;                /* the timestamp of the last CQE polled */
} UzCq;

typedef struct UzMr {
    UzNode *n;
    uint32_t key;
    uint32_t pdn;
    uint32_t access;
    bool dma;                   /* UZ_MR_F_DMA: iova is the address */
    bool odp;                   /* UZ_MR_F_ODP: pages served on faults */
    uint64_t iova;
    uint64_t len;
    uint64_t pbl;               /* page list in guest memory */
    uint32_t npages;
    uint64_t *pages;            /* our copy of the page list */
    uint8_t page_shift;         /* of the pages; 0 = UZ_PAGE_SHIFT */
    uint32_t max_pages;         /* fast-reg MR: page list capacity */
} UzMr;

typedef struct UzSrq {
    UzNode *n;
    uint32_t srqn;
    uint32_t uctx;
    uint32_t db;
    uint64_t ring;
    uint32_t log_depth;
    uint32_t pi;
} UzSrq;

typedef struct UzQp {
    UzNode *n;
    uint32_t qpn;
    uint32_t uctx;
    uint8_t type;
    UzCq *scq;
    UzCq *rcq;
    UzSrq *srq;
    uint64_t sq;
    uint64_t rq;                /* 0 on an SRQ */
    uint8_t sq_log_depth;       /* the SQ ring: 2^sq_log_depth WQEs */
    uint32_t sq_db;
    uint32_t rq_db;
    uint32_t sq_pi;
    uint32_t rq_pi;
} UzQp;

/* A scatter/gather entry, host order. */
typedef struct UzSge {
    uint64_t addr;
    uint32_t length;
    uint32_t lkey;
} UzSge;

/* A send work request, host order; uz_wqe_build() makes the WQE. */
typedef struct UzWr {
    uint64_t wr_id;
    uint8_t opcode;             /* UZ_WR_* */
    uint8_t flags;              /* UZ_WQE_F_* */
    const UzSge *sge;
    int num_sge;
    const void *inline_data;    /* with UZ_WQE_F_INLINE */
    uint32_t inline_len;
    uint32_t imm;               /* immediate, or the rkey for SEND_INV */
    uint64_t remote_addr;
    uint32_t rkey;
    uint64_t compare_add;       /* ATOMIC_WRITE: the 8 bytes to write */
    uint64_t swap;
    uint32_t ahn;               /* UD and GSI */
    const struct uz_av *av;     /* UD and GSI: sent in the WQE (F_AV) */
    uint32_t remote_qpn;
    uint32_t remote_qkey;
    uint64_t tag;               /* CRW and STCRW */
    uint32_t crw_length;        /* STCRW: bytes offered */
    uint64_t reg_length;        /* REG_MR, BIND_MW: rkey is the new key, */
    uint32_t reg_access;        /* remote_addr the iova */
    uint32_t bind_mr_key;       /* BIND_MW: the MR */
    uint16_t reg_npages;
    uint8_t reg_page_shift;     /* 0 = UZ_PAGE_SHIFT */
    uint64_t flush_length;      /* FLUSH: bytes from remote_addr */
    uint8_t flush_type;         /* FLUSH: UZ_FLUSH_GLOBAL, _PERSISTENT */
    uint8_t flush_level;        /* FLUSH: UZ_FLUSH_RANGE, UZ_FLUSH_MR */
    uint32_t xrc_srqn;          /* XRC initiator: the peer's XRC SRQ */
} UzWr;

/* RC connection parameters; UZ_RC_OPTS_DEFAULT is what tests start from. */
typedef struct UzRcOpts {
    uint8_t path_mtu;
    uint8_t timeout;
    uint8_t retry_cnt;
    uint8_t rnr_retry;
    uint8_t min_rnr_timer;
    uint32_t psn[2];            /* first send PSN of each side */
} UzRcOpts;

/*
 * MTU 1024 is the active MTU at Ethernet MTU 1500.  The first side's PSNs
 * wrap after six packets; min_rnr_timer 1 is 0.01 ms.
 */
#define UZ_RC_OPTS_DEFAULT { \
    .path_mtu = UZ_MTU_1024, .timeout = 14, .retry_cnt = 7, \
    .rnr_retry = 7, .min_rnr_timer = 1, .psn = { 0xfffffa, 0x000123 }, \
}

/* ------------------------------------------------------------------ */
/* Nodes                                                              */
/* ------------------------------------------------------------------ */

void *uz_own(UzNode *n, size_t size);

/* Run a command whose payload is @args; returns its status. */
uint8_t uz_cmd(UzNode *n, uint8_t op, const void *args,
               size_t len, struct uz_admin_cqe *cqe);

/* QUERY_DEVICE into @attr. */
void uz_query_device(UzNode *n, struct uz_device_attr *attr);

uint32_t uz_pd_alloc(UzNode *n);

/* NIC i has MAC 52:54:00:12:34:5i (uz_machine_start) and 10.0.0.(i+1). */
void uz_node_mac(int idx, uint8_t *mac);

void uz_node_ip(int idx, uint8_t *ip);

/* The IPv4-mapped GID ::ffff:10.0.0.(i+1). */
void uz_node_gid(int idx, uint8_t *gid);

/* A node whose async EQ holds 2^@async_log events. */
void uz_node_start_eq(UzNode *n, UzMachine *m, int idx,
                      uint32_t async_log);

void uz_node_start(UzNode *n, UzMachine *m, int idx);

void uz_node_stop(UzNode *n);

/* The link property of NIC @nic: the cable (spec 7.1). */
void uz_link_set(UzMachine *m, int nic, bool up);

/* Wait until counter @name of the node's NIC reaches @min. */
uint64_t uz_counter_wait(UzNode *n, const char *name,
                         uint64_t min);

/* ------------------------------------------------------------------ */
/* Events                                                             */
/* ------------------------------------------------------------------ */

/*
 * Consume events of @eq for at most @polls polls until one of @type about
 * @handle arrives; other events are consumed and logged.  The consumer
 * index goes to the doorbell (unarmed) so that the EQ never overflows.
 */
bool uz_event_seen(UzNode *n, UzEq *eq, uint8_t type,
                   uint32_t handle, int polls);

void uz_event_wait(UzNode *n, UzEq *eq, uint8_t type,
                   uint32_t handle);

/* Poll @eq for @polls turns; count events of @type about @handle. */
int uz_events_count(UzNode *n, UzEq *eq, uint8_t type,
                    uint32_t handle, int polls);

/* Consume every event written so far; returns how many of @type. */
int uz_eq_drain(UzNode *n, UzEq *eq, uint8_t type);

/* ------------------------------------------------------------------ */
/* Completion queues                                                  */
/* ------------------------------------------------------------------ */

/* libqos hands out whole 4 KiB pages from 1 MiB up: aligned already. */
uint64_t uz_alloc_pages(UzNode *n, uint32_t npages);

/* A page list in guest memory, as the device reads it: its address. */
uint64_t uz_pbl_put(UzNode *n, const uint64_t *pages,
                    uint32_t npages);

/*
 * A CQ of 2^@log_depth CQEs with @flags: UZ_CQF_TIMESTAMP gives 64-byte
 * CQEs; with UZ_CQF_PAGE_LIST the device reaches the ring through a page
 * list, its pages taken from the allocator in reverse so no two
 * neighbours in the ring are neighbours in memory.
 */
UzCq *uz_cq_create_flags(UzNode *n, uint32_t log_depth,
                         uint8_t flags);

UzCq *uz_cq_create(UzNode *n, uint32_t log_depth);

UzCq *uz_cq_create_paged(UzNode *n, uint32_t log_depth);

/* Where entry @pos of @cq starts in guest memory. */
uint64_t uz_cq_entry(UzCq *cq, uint32_t pos);

/* Where the struct uz_cqe of slot @pos lies: the end of its entry. */
uint64_t uz_cq_slot(UzCq *cq, uint32_t pos);

/*
 * Move @cq to a new ring of 2^@log_depth CQEs, contiguous or (@paged)
 * through a page list, as a driver does (spec 8.5.1): RESIZE_CQ with our
 * consumer index, then copy the CQEs not consumed yet to the first slots
 * of the new ring, with the phase of its first pass.  Returns the
 * command's status; on success the CQ polls from the new ring.
 */
uint8_t uz_cq_resize_to(UzCq *cq, uint32_t log_depth,
                        bool paged);

uint8_t uz_cq_resize(UzCq *cq, uint32_t log_depth);

/*
 * A CQE as the device wrote it into host order, imm_data as a number: an
 * immediate comes in network order, an invalidated key in little-endian.
 */
void uz_cqe_to_host(struct uz_cqe *cqe);

/*
 * Take the next CQE if the device wrote it: its phase bit is 1 on the
 * first pass of the ring, 0 on the second, and so on.  The CQE comes back
 * in host order, imm_data turned from network order into a number.  The
 * new consumer index goes to the doorbell without arm bits, which leaves
 * the arming as it was.
 */
bool uz_cq_poll(UzCq *cq, struct uz_cqe *cqe);

/*
 * Take up to @max CQEs (at most 32, and none past the end of the ring)
 * with one read of the ring and one doorbell; returns how many, in host
 * order as uz_cq_poll() gives them.
 */
int uz_cq_poll_many(UzCq *cq, struct uz_cqe *out, int max);

void uz_cq_wait(UzCq *cq, struct uz_cqe *cqe);

/*
 * Wait for a CQE that needs timers (retransmission, RNR): poll a while,
 * then advance the virtual clock by @step_ns, at most @steps times.
 */
void uz_cq_wait_clock(UzCq *cq, struct uz_cqe *cqe,
                      int64_t step_ns, int steps);

/* Let the device run for @polls turns; the CQ must stay empty. */
void uz_cq_assert_empty(UzCq *cq, int polls);

/* Arm the CQ: UZ_DB_ARM or UZ_DB_ARM_SOLICITED. */
void uz_cq_arm(UzCq *cq, uint32_t how);

/* The fields every CQE has; the rest is the caller's to check. */
void uz_cqe_expect(const struct uz_cqe *c, uint64_t wr_id,
                   uint8_t opcode, uint8_t status,
                   uint8_t vendor_err, uint32_t qpn);

/* A successful send-side CQE: RC has no immediate, no flags, no src_qp. */
void uz_expect_sq(const struct uz_cqe *c, uint64_t wr_id,
                  uint8_t op, UzQp *qp, uint32_t byte_len);

/* A successful receive CQE; imm_data is checked with UZ_WC_F_IMM/INV. */
void uz_expect_rq(const struct uz_cqe *c, uint64_t wr_id,
                  uint8_t op, uint32_t qpn, uint32_t byte_len,
                  uint8_t wc_flags, uint32_t imm,
                  uint32_t src_qp);

/* An RC error or flush CQE: no flags, no immediate, no src_qp. */
void uz_expect_err(const struct uz_cqe *c, uint64_t wr_id,
                   uint8_t op, uint8_t status, uint8_t verr,
                   UzQp *qp);

/* Wait for the next send CQE of @qp and check it: uz_expect_sq(). */
void uz_sq_done(UzQp *qp, uint64_t wr_id, uint8_t op,
                uint32_t byte_len);

/* Wait for the next RC receive CQE of @qp and check it: uz_expect_rq(). */
void uz_rq_done(UzQp *qp, uint64_t wr_id, uint8_t op,
                uint32_t byte_len, uint8_t wc_flags,
                uint32_t imm);

/* Wait for the next send CQE of @qp and check it: uz_expect_err(). */
void uz_sq_err(UzQp *qp, uint64_t wr_id, uint8_t op,
               uint8_t status, uint8_t verr);

/* Wait for the next receive CQE of @qp: receive WQE @wr_id flushed. */
void uz_rq_flushed(UzQp *qp, uint64_t wr_id);

/* ------------------------------------------------------------------ */
/* Memory regions                                                     */
/* ------------------------------------------------------------------ */

/* Issue REG_MR for @mr as filled in; returns the status, sets the key. */
uint8_t uz_mr_reg_cmd(UzMr *mr, uint8_t key_byte);

/*
 * Register @len bytes at virtual address @iova (any alignment) in PD
 * @pdn.  The pages are one guest allocation, listed in reverse order, so
 * that the device must translate every page through the page list.
 */
/*
 * Register @len bytes at @iova in PD @pdn whose page list is the @npages
 * pages of 2^@shift bytes at @pages (the uz_mr_* data helpers need @shift
 * UZ_PAGE_SHIFT).
 */
UzMr *uz_mr_reg_list(UzNode *n, uint32_t pdn, uint64_t iova,
                     uint64_t len, uint8_t shift,
                     const uint64_t *pages, uint32_t npages,
                     uint32_t access);

UzMr *uz_mr_reg_full(UzNode *n, uint32_t pdn, uint64_t iova,
                     uint64_t len, uint32_t access);

/* An MR in PD @pdn at the next free, page-aligned iova. */
UzMr *uz_mr_reg_pd(UzNode *n, uint32_t pdn, uint64_t len,
                   uint32_t access);

/* An MR in the node's PD at the next free, page-aligned iova. */
UzMr *uz_mr_reg(UzNode *n, uint64_t len, uint32_t access);

/*
 * An ODP MR (UZ_MR_F_ODP, spec 8.10.4) of @npages pages at the next free
 * iova, registered with no page present; mr->pages are the pages a
 * driver maps when they fault (uz_odp_serve).
 */
UzMr *uz_mr_reg_odp(UzNode *n, uint32_t npages);

uint8_t uz_page_resume(UzMr *mr);

/* What a driver does for a fault: map page @k (or mark it bad), resume. */
void uz_odp_serve(UzMr *mr, uint32_t k, bool bad);

/* A DMA MR (UZ_MR_F_DMA) of @len bytes at guest address @addr. */
UzMr *uz_mr_reg_dma_at(UzNode *n, uint64_t addr, uint64_t len,
                       uint32_t access);

/* A DMA MR over @len bytes of new guest memory: iova = its address. */
UzMr *uz_mr_reg_dma(UzNode *n, uint64_t len, uint32_t access);

/*
 * A fast-reg MR (UZ_MR_F_FAST) in PD @pdn whose page list holds
 * @max_pages entries: free until a REG_MR WR (uz_fast_map, uz_fast_wr).
 */
UzMr *uz_mr_alloc_fast(UzNode *n, uint32_t pdn,
                       uint32_t max_pages);

/*
 * Map @len bytes at @iova of fast-reg MR @mr onto new guest pages (in
 * reverse order), as a driver's map_mr_sg writes the page list, and give
 * the MR key byte @key_byte and @access in our copy; returns the REG_MR
 * WR that makes the device agree.
 */
UzWr uz_fast_map(UzMr *mr, uint64_t iova, uint64_t len,
                 uint32_t access, uint8_t key_byte);

UzMr *uz_mr_by_key(UzNode *n, uint32_t key);

/* Point page @k of the MR at @gpa, in the device's page list too. */
void uz_mr_set_page(UzMr *mr, uint32_t k, uint64_t gpa);

uint64_t uz_mr_va(UzMr *mr, uint64_t off);

UzSge uz_mr_sge(UzMr *mr, uint64_t off, uint32_t len);

/* The guest address of byte @off of the MR. */
uint64_t uz_mr_gpa(UzMr *mr, uint64_t off);

/* Bytes from @off on that are contiguous in guest memory, at most @len. */
size_t uz_mr_chunk(UzMr *mr, uint64_t off, size_t len);

void uz_mr_write(UzMr *mr, uint64_t off, const void *buf,
                 size_t len);

void uz_mr_read(UzMr *mr, uint64_t off, void *buf, size_t len);

void uz_mr_fill(UzMr *mr, uint64_t off, uint8_t byte,
                size_t len);

/* Read the bytes an SGE list names, one after the other, into @out. */
void uz_sges_read(UzNode *n, const UzSge *sge, int nsge,
                  uint8_t *out);

/* Write @data into the bytes an SGE list names, one after the other. */
void uz_sges_write(UzNode *n, const UzSge *sge, int nsge,
                   const uint8_t *data);

/* Fill @buf with @len pseudo-random bytes, a sequence that @seed picks. */
void uz_pattern(uint8_t *buf, size_t len, uint32_t seed);

/* The @len bytes at @got are @want; names the first byte that is not. */
void uz_assert_bytes(const uint8_t *got, const uint8_t *want,
                     size_t len, const char *what);

/* The @len bytes at @off of @mr are @want. */
void uz_assert_mr(UzMr *mr, uint64_t off, const uint8_t *want,
                  size_t len, const char *what);

/* What tests fill around a target: bytes the device must not touch. */
#define UZ_GUARD            0xee

/* The @len bytes at @off of @mr all are @byte. */
void uz_assert_mr_fill(UzMr *mr, uint64_t off, uint8_t byte,
                       size_t len, const char *what);

/* UZ_CMD_INVALIDATE_XLAT of [iova, iova + len) of MR @key; 0: whole MR. */
uint8_t uz_invalidate_xlat(UzNode *n, uint32_t key,
                           uint32_t uctx, uint64_t iova,
                           uint64_t len);

/* ------------------------------------------------------------------ */
/* SRQs and QPs                                                       */
/* ------------------------------------------------------------------ */

UzSrq *uz_srq_create(UzNode *n, uint32_t log_depth,
                     uint32_t limit);

uint8_t uz_srq_modify(UzSrq *srq, uint32_t limit);

/*
 * A QP in the node's PD.  @scq and @rcq may be NULL: the QP then gets a
 * CQ of its own for each.  With @srq the QP has no RQ.
 */
/* A QP as uz_qp_create() makes it, with an SQ of 2^@sq_log_depth WQEs. */
UzQp *uz_qp_create_sq(UzNode *n, uint8_t type, UzCq *scq,
                      UzCq *rcq, UzSrq *srq, uint8_t flags,
                      uint8_t sq_log_depth);

UzQp *uz_qp_create(UzNode *n, uint8_t type, UzCq *scq,
                   UzCq *rcq, UzSrq *srq, uint8_t flags);

/* MODIFY_QP with @a (little-endian fields) and @mask; returns status. */
uint8_t uz_qp_modify(UzQp *qp, uint32_t mask,
                     const struct uz_qp_attr *a);

void uz_qp_query(UzQp *qp, struct uz_qp_attr *a);

uint8_t uz_qp_state(UzQp *qp);

/* Move to @state with no other attribute (RESET, ERR, SQD, ...). */
void uz_qp_set_state(UzQp *qp, uint8_t state);

/*
 * @qp went to ERR by itself (spec 8.11): QUERY_QP says so, and the
 * affiliated event @type (UZ_EQE_QP_REQ_ERR, _ACCESS_ERR or _FATAL) came
 * for it, once; with @type 0 none of them comes, as for an error its CQE
 * reports.  Other events are consumed.
 */
void uz_qp_failed(UzQp *qp, uint8_t type);

/* RC RESET -> INIT with remote rights @access. */
void uz_rc_init_access(UzQp *qp, uint32_t access);

/* RC RESET -> INIT: every remote access allowed. */
void uz_rc_init(UzQp *qp);

/* The address vector of a connected QP: @qp's node to @peer's. */
void uz_attr_path(struct uz_qp_attr *a, UzQp *qp, UzQp *peer);

/* RC INIT -> RTR towards @peer, expecting its first PSN @rq_psn. */
void uz_rc_rtr(UzQp *qp, UzQp *peer, uint32_t rq_psn,
               const UzRcOpts *o);

/* RC RTR -> RTS, sending from PSN @sq_psn. */
void uz_rc_rts(UzQp *qp, uint32_t sq_psn, const UzRcOpts *o);

/*
 * Connect RC QPs @a and @b, both in RESET, @b accepting only the remote
 * rights @b_access; @o NULL: the defaults.
 */
void uz_rc_connect_access(UzQp *a, UzQp *b, uint32_t b_access,
                          const UzRcOpts *o);

/* Connect RC QPs @a and @b, both in RESET; @o NULL: the defaults. */
void uz_rc_connect(UzQp *a, UzQp *b, const UzRcOpts *o);

/*
 * UC (spec 9.8): RESET -> INIT with every remote right, INIT -> RTR
 * towards @peer expecting PSN @psn, RTR -> RTS sending from @psn, with
 * the attributes of the UC column; uz_uc_up does all three.
 */
void uz_uc_init(UzQp *qp);

uint8_t uz_uc_rtr_try(UzQp *qp, UzQp *peer, uint32_t psn,
                      uint32_t more);

uint8_t uz_uc_rts_try(UzQp *qp, uint32_t psn, uint32_t more);

void uz_uc_up(UzQp *qp, UzQp *peer, uint32_t psn);

/* UD or GSI RESET -> INIT -> RTR -> RTS with Q_Key @qkey. */
void uz_ud_up(UzQp *qp, uint32_t qkey, uint32_t sq_psn);

/* An AH in the node's PD towards NIC @peer. */
uint32_t uz_ah_create(UzNode *n, int peer);

/* ------------------------------------------------------------------ */
/* Posting                                                            */
/* ------------------------------------------------------------------ */

bool uz_wr_is_atomic(uint8_t opcode);

/* The CQE opcode of a send work request (8.5, 8.9). */
uint8_t uz_wc_opcode(uint8_t wr_opcode);

/*
 * Build the WQE of @wr into @buf (UZ_SQ_WQE_SIZE bytes, 8-byte aligned);
 * @ud selects the UD/GSI form of the union.  Immediate data goes in
 * network order; the rkey of SEND_INV in little-endian order like every
 * other key.  Returns the bytes used.
 */
size_t uz_wqe_build(const UzWr *wr, bool ud, void *buf);

/* Put a WQE of @len bytes into the next SQ slot (zero-padded); no ring. */
void uz_sq_put(UzQp *qp, const void *wqe, size_t len);

void uz_sq_ring(UzQp *qp);

/* Build and place a send WQE without ringing: for batches. */
void uz_sq_post(UzQp *qp, const UzWr *wr);

void uz_post_send(UzQp *qp, const UzWr *wr);

/* Write a receive WQE at index @idx of a ring of 2^log_depth RQ WQEs. */
void uz_recv_put(UzNode *n, uint64_t ring, uint32_t log_depth,
                 uint32_t idx, uint64_t wr_id,
                 const UzSge *sge, int nsge);

void uz_post_recv(UzQp *qp, uint64_t wr_id, const UzSge *sge,
                  int nsge);

void uz_srq_post(UzSrq *srq, uint64_t wr_id, const UzSge *sge,
                 int nsge);

/*
 * An RDMA WRITE (with immediate data if @imm) of @len bytes from @ms to
 * @mr at an offset just before a page end, and its checks: both
 * completions, the data, and the guard bytes on either side untouched.
 * @id tells the work requests of one test apart.
 */
void uz_check_write(UzQp *qs, UzQp *qr, UzMr *ms, UzMr *mr,
                    size_t len, bool imm, uint32_t id);

#endif /* UZURA_VERBS_H */
