/* SPDX-License-Identifier: GPL-2.0-or-later OR BSD-2-Clause */
/*
 * uzura provider: objects of the user-space driver for the uzura RoCEv2
 * NIC.  Rings and the doorbell page are mapped from the kernel driver
 * (docs/verbs-abi.md); the data path runs here without system calls.
 */
#ifndef __UZURA_H__
#define __UZURA_H__

#include <endian.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ccan/list.h>
#include <ccan/minmax.h>
#include <infiniband/driver.h>
#include <util/mmio.h>
#include <util/udma_barrier.h>
#include <util/util.h>

#include "uzura-abi.h"
#include "uzura_regs_defs.h"
#include "uzura_admin_defs.h"
#include "uzura_admin_cmds_defs.h"
#include "uzura_io_defs.h"
#include "uzura_roce_defs.h"
#include "uzuradv.h"

/* ibv_wc.sl of a RoCE UD receive: the frame's L3 header type, as ConnectX. */
#define UZ_WC_SL_L3_IPV6	1
#define UZ_WC_SL_L3_IPV4	2

/* Buckets of the context's qpn -> QP table (poll_cq looks QPs up). */
#define UZURA_QP_TABLE_SIZE	256
/* Buckets of its srqn -> XRC SRQ table (XRC receives name their SRQ). */
#define UZURA_SRQ_TABLE_SIZE	64

struct uzura_device {
	struct verbs_device vdev;
};

/* A PD, or a parent domain (domain.c): then protection is its PD. */
struct uzura_pd {
	struct ibv_pd ibpd;
	struct uzura_pd *protection;
	struct uzura_td *td;
	atomic_int users;		/* parent domains; on one: its objects */
	void *(*alloc)(struct ibv_pd *pd, void *pd_context, size_t size,
		       size_t alignment, uint64_t resource_type);
	void (*free)(struct ibv_pd *pd, void *pd_context, void *ptr,
		     uint64_t resource_type);
	void *pd_context;
};

struct uzura_td {
	struct ibv_td ibtd;
	atomic_int users;		/* parent domains */
};

struct uzura_context {
	struct verbs_context ibvctx;
	void *db_page;			/* this context's doorbell page */
	uint32_t db_page_size;
	uint32_t uctx;
	uint32_t max_sge;
	uint32_t max_inline;
	uint32_t sq_max_log_wqe;
	uint32_t rq_max_log_wqe;
	uint32_t max_crw_tags;		/* 0: no CRW */
	uint32_t caps;
	uint32_t max_cqe;		/* the device's, 0 if unknown */
	uint64_t max_dm_size;		/* device memory; 0: none or unknown */
	/*
	 * UZ_CAP_TIMESTAMP: CLOCK_REALTIME minus the device clock, in ns,
	 * measured at open and by each ibv_query_rt_values_ex (clock.c).
	 */
	_Atomic(int64_t) clock_offset;
	pthread_spinlock_t qp_table_lock;
	struct list_head qp_table[UZURA_QP_TABLE_SIZE];
	pthread_spinlock_t srq_table_lock;
	struct list_head srq_table[UZURA_SRQ_TABLE_SIZE];
};

/* A CQ, SQ, RQ or SRQ ring mapped from the kernel. */
struct uzura_wq {
	void *ring;
	size_t map_size;
	uint32_t log_depth;
	uint32_t log_wqe;
	uint32_t max_sge;
	uint32_t pi;			/* free running, UZ_DB_PI_MASK */
	uint32_t ci;			/* slots before it are free */
	void *db;
	struct uz_sq_shadow *shadow;	/* an SQ's shadow doorbell, or NULL */
	pthread_spinlock_t lock;
	bool lost;			/* the device moved to a ring we lack */
};

struct uzura_cq {
	union {
		struct ibv_cq ibcq;
		struct verbs_cq vcq;	/* ibv_cq_ex: ibv_create_cq_ex */
	};
	void *ring;
	size_t map_size;
	uint32_t log_depth;
	uint32_t cqe_size;		/* 32, or 64: struct uz_cqe_ts */
	uint32_t ci;			/* free running, UZ_DB_CI_MASK */
	uint32_t ci_reported;		/* the ci the device last heard of */
	uint32_t report_every;		/* report ci after this many CQEs */
	uint32_t cqn;
	void *db;
	struct ibv_pd *parent;		/* the parent domain it was created on */
	pthread_spinlock_t lock;
	/* A resize whose new ring is not mapped yet (uzura_resize_cq). */
	bool moving;
	uint64_t move_key;
	uint32_t move_size;
	uint32_t move_log;
	uint32_t move_kept;
	uint32_t move_cqe;
	/* ibv_cq_ex polling (cq_ex.c): the completion the read_* return */
	struct ibv_wc cur;
	uint64_t cur_ts;		/* its timestamp, device clock ns */
	uint64_t cur_tag;		/* its TM tag (read_tm_info) */
};

struct uzura_sq_slot {
	uint64_t wr_id;
	bool signaled;
	bool crw;			/* a CRW: completes out of SQ order */
	uint32_t crw_seq;		/* its number among the QP's CRWs */
};

struct uzura_crw_table;			/* outstanding CRWs (uzuradv.c) */

/* A list operation of a TM SRQ between its posting and its CQE (tm.c). */
struct uzura_tm_op_slot {
	uint64_t wr_id;
	uint16_t index;			/* ADD, DEL: the tag list entry */
	uint8_t opcode;			/* UZ_TM_OP_* */
	bool signaled;			/* the user asked for a completion */
};

/*
 * The tag matching side of a TM SRQ (tm.c): the operation ring, whose
 * lock guards all of it, and the provider's view of the tag list.
 */
struct uzura_tm {
	struct uzura_wq ops;		/* of struct uz_tm_op */
	struct uzura_tm_op_slot *slots;	/* one per ring entry */
	uint8_t *refs;			/* per entry: CQEs to come; 0: free */
	uint16_t *free;			/* free entries, oldest first */
	uint32_t free_head;
	uint32_t free_cnt;
	uint32_t max_tags;
	uint32_t max_ops;		/* as created, for query_srq */
};

struct uzura_srq {
	union {
		struct ibv_srq ibsrq;
		struct verbs_srq vsrq;	/* ibv_create_srq_ex: XRC, TM SRQs */
	};
	struct uzura_wq rq;
	uint32_t srqn;
	struct list_node entry;		/* XRC, TM: in the context's srq_table */
	struct uzura_tm *tm;		/* TM SRQs only */
};

struct uzura_qp {
	union {
		struct ibv_qp ibqp;
		struct verbs_qp vqp;	/* ibv_qp_ex: ibv_create_qp_ex */
	};
	/*
	 * An XRC_SEND QP has no RQ, SRQ or receive CQ; an XRC_RECV QP
	 * (created or opened) has no queues, CQs or PD here at all.
	 */
	struct uzura_wq sq;
	struct uzura_wq rq;		/* unused with an SRQ */
	struct uzura_sq_slot *slots;	/* one per SQ ring entry */
	struct uzura_srq *srq;
	struct uzura_crw_table *crw;	/* allocated by the first CRW */
	uint32_t crw_posted;		/* CRWs posted since RESET */
	uint32_t crw_done;		/* their completions seen */
	uint32_t max_inline;
	bool sig_all;
	enum ibv_qp_state state;	/* as last set or queried */
	struct list_node entry;		/* in the context's qp_table */
	/* ibv_wr_* between wr_start and wr_complete (qp_ex.c) */
	struct uz_send_wqe *wr_wqe;	/* the WQE being built, or NULL */
	uint32_t wr_pi;			/* SQ index of the next WQE */
	int wr_err;			/* first error since wr_start */
	bool wr_need_dest;		/* WQE still without wr_set_ud_addr (UD)
					 * or wr_set_xrc_srqn (XRC) */
	bool rss;			/* an RSS QP: no queues, no CQs (rss.c) */
};

/*
 * A WQ (ibv_create_wq, rss.c): an RQ whose receives complete as a QP's
 * do, so it has a QP's part for posting and polling: qp.rq, and qp.entry
 * in the context's QP table under the wqn, with qp.ibqp.recv_cq its CQ.
 */
struct uzura_rwq {
	struct ibv_wq ibwq;
	struct uzura_qp qp;
};

struct uzura_ah {
	struct ibv_ah ibah;
	uint32_t ahn;
};

static inline void uz_ring_db(void *db, uint32_t val)
{
	mmio_write32_le(db, htole32(val));
}

/*
 * Publish an SQ's new producer index, which was @old.  With a shadow
 * record (device spec 8.6.1) the doorbell store, a trap out of the guest,
 * is needed only when the device has stopped reading the record.
 */
static inline void uz_sq_publish(struct uzura_wq *sq, uint32_t old)
{
	/* The WQEs are in memory before the device hears of them. */
	udma_to_device_barrier();
	if (sq->shadow) {
		uint32_t event;

		atomic_store_explicit((_Atomic(uint32_t) *)&sq->shadow->pi,
				      htole32(sq->pi), memory_order_relaxed);
		/* pi out before event is read, as the device does the reverse */
		atomic_thread_fence(memory_order_seq_cst);
		event = le32toh(atomic_load_explicit(
			(_Atomic(uint32_t) *)&sq->shadow->event,
			memory_order_relaxed));
		if (!UZ_SQ_SHADOW_NEED_DB(event, sq->pi, old))
			return;
	}
	uz_ring_db(sq->db, sq->pi);
}

/*
 * Tell the device how far the CQ has been consumed.  Each report is a
 * doorbell store, which traps to the hypervisor, so a CQ made with twice
 * the room asked for reports only every half ring: with at most half a
 * ring of completions outstanding and less than half a ring unreported,
 * the device never sees it full.  @now reports whatever is unreported.
 */
static inline void uzura_cq_report(struct uzura_cq *cq, bool now)
{
	uint32_t lag = (cq->ci - cq->ci_reported) & UZ_DB_CI_MASK;

	if (!lag || (!now && lag < cq->report_every))
		return;
	uz_ring_db(cq->db, cq->ci);
	cq->ci_reported = cq->ci;
}

/*
 * The phase a CQE at free-running index @idx has once the device wrote
 * it: 1 on even passes of the ring, 0 on odd ones.
 */
static inline uint8_t uz_cq_phase(const struct uzura_cq *cq, uint32_t idx)
{
	return ((idx >> cq->log_depth) & 1) ? 0 : UZ_CQE_PHASE;
}

/*
 * The entry of ring slot @idx (free running): cq->cqe_size bytes, which
 * moving a CQE copies whole.
 */
static inline void *uz_cq_entry(const struct uzura_cq *cq, uint32_t idx)
{
	return (uint8_t *)cq->ring +
	       (size_t)(idx & ((1u << cq->log_depth) - 1)) * cq->cqe_size;
}

/*
 * The struct uz_cqe in @entry, an entry of @cq's size: the whole entry,
 * or the last 32 bytes of a struct uz_cqe_ts, whose phase is the entry's
 * last byte.
 */
static inline struct uz_cqe *uz_cq_entry_cqe(const struct uzura_cq *cq,
					     void *entry)
{
	return (struct uz_cqe *)((uint8_t *)entry + cq->cqe_size -
				 sizeof(struct uz_cqe));
}

/* The struct uz_cqe of ring slot @idx (free running). */
static inline struct uz_cqe *uz_cq_slot(const struct uzura_cq *cq,
					uint32_t idx)
{
	return uz_cq_entry_cqe(cq, uz_cq_entry(cq, idx));
}

/* The device clock when it wrote @cqe, of a CQ with timestamps. */
static inline uint64_t uz_cqe_timestamp(const struct uz_cqe *cqe)
{
	return le64toh(container_of(cqe, struct uz_cqe_ts, cqe)->timestamp);
}

/* The CQE at index @idx if the device has written it, or NULL. */
static inline struct uz_cqe *uz_cq_written(struct uzura_cq *cq, uint32_t idx)
{
	struct uz_cqe *cqe = uz_cq_slot(cq, idx);

	if ((atomic_load_explicit((_Atomic(uint8_t) *)&cqe->flags,
				  memory_order_relaxed) &
	     UZ_CQE_PHASE) != uz_cq_phase(cq, idx))
		return NULL;
	/* The device wrote the rest of the CQE before its phase. */
	udma_from_device_barrier();
	return cqe;
}

static inline uint32_t uz_wq_depth(const struct uzura_wq *wq)
{
	return 1u << wq->log_depth;
}

static inline void *uz_wq_slot(struct uzura_wq *wq, uint32_t idx)
{
	return (uint8_t *)wq->ring +
	       ((size_t)(idx & (uz_wq_depth(wq) - 1)) << wq->log_wqe);
}

/* Slots in use from the consumer index up to the producer index pi. */
static inline bool uz_wq_full_at(const struct uzura_wq *wq, uint32_t pi)
{
	return ((pi - wq->ci) & UZ_DB_PI_MASK) >= uz_wq_depth(wq);
}

static inline bool uz_wq_full(const struct uzura_wq *wq)
{
	return uz_wq_full_at(wq, wq->pi);
}

static inline struct uzura_pd *to_upd(struct ibv_pd *ibpd)
{
	return container_of(ibpd, struct uzura_pd, ibpd);
}

static inline struct uzura_td *to_utd(struct ibv_td *ibtd)
{
	return container_of(ibtd, struct uzura_td, ibtd);
}

static inline struct uzura_context *to_uctx(struct ibv_context *ibctx)
{
	return container_of(ibctx, struct uzura_context, ibvctx.context);
}

static inline struct uzura_cq *to_ucq(struct ibv_cq *ibcq)
{
	return container_of(ibcq, struct uzura_cq, ibcq);
}

static inline struct uzura_qp *to_uqp(struct ibv_qp *ibqp)
{
	return container_of(ibqp, struct uzura_qp, ibqp);
}

static inline struct uzura_srq *to_usrq(struct ibv_srq *ibsrq)
{
	return container_of(ibsrq, struct uzura_srq, ibsrq);
}

static inline struct uzura_ah *to_uah(struct ibv_ah *ibah)
{
	return container_of(ibah, struct uzura_ah, ibah);
}

int uzura_query_device_ex(struct ibv_context *context,
			  const struct ibv_query_device_ex_input *input,
			  struct ibv_device_attr_ex *attr, size_t attr_size);
int uzura_query_port(struct ibv_context *context, uint8_t port,
		     struct ibv_port_attr *attr);

/* clock.c: the device clock (UZ_CAP_TIMESTAMP). */
uint64_t uzura_read_clock(struct uzura_context *ctx);
uint64_t uzura_clock_sync(struct uzura_context *ctx);
int uzura_query_rt_values(struct ibv_context *context,
			  struct ibv_values_ex *values);

struct ibv_pd *uzura_alloc_pd(struct ibv_context *context);
int uzura_dealloc_pd(struct ibv_pd *pd);
struct ibv_pd *uzura_import_pd(struct ibv_context *context,
			       uint32_t pd_handle);
void uzura_unimport_pd(struct ibv_pd *pd);
struct ibv_td *uzura_alloc_td(struct ibv_context *context,
			      struct ibv_td_init_attr *attr);
int uzura_dealloc_td(struct ibv_td *td);
struct ibv_pd *
uzura_alloc_parent_domain(struct ibv_context *context,
			  struct ibv_parent_domain_init_attr *attr);
void uzura_pd_get(struct ibv_pd *pd);
void uzura_pd_put(struct ibv_pd *pd);
bool uzura_is_parent_domain(struct ibv_pd *pd);
struct ibv_mr *uzura_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
			    uint64_t hca_va, int access);
int uzura_rereg_mr(struct verbs_mr *vmr, int flags, struct ibv_pd *pd,
		   void *addr, size_t length, int access);
int uzura_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice,
		    uint32_t flags, struct ibv_sge *sg_list, uint32_t num_sge);
int uzura_dereg_mr(struct verbs_mr *vmr);
struct ibv_mr *uzura_import_mr(struct ibv_pd *pd, uint32_t mr_handle);
void uzura_unimport_mr(struct ibv_mr *mr);
int uzura_resize_cq(struct ibv_cq *ibcq, int cqe);

/* dm.c: device memory (UZ_CAP_DM). */
struct ibv_dm *uzura_alloc_dm(struct ibv_context *context,
			      struct ibv_alloc_dm_attr *attr);
int uzura_free_dm(struct ibv_dm *dm);
struct ibv_dm *uzura_import_dm(struct ibv_context *context,
			       uint32_t dm_handle);
void uzura_unimport_dm(struct ibv_dm *dm);
struct ibv_mr *uzura_reg_dm_mr(struct ibv_pd *pd, struct ibv_dm *dm,
			       uint64_t dm_offset, size_t length,
			       unsigned int access);

struct ibv_cq *uzura_create_cq(struct ibv_context *context, int cqe,
			       struct ibv_comp_channel *channel,
			       int comp_vector);
struct ibv_cq_ex *uzura_create_cq_ex(struct ibv_context *context,
				     struct ibv_cq_init_attr_ex *attr);
uint32_t uzura_cq_ask(struct uzura_context *ctx, uint32_t cqe);
int uzura_cq_init(struct uzura_context *ctx, struct uzura_cq *cq,
		  const struct uzura_create_cq_resp *resp, uint32_t cqe,
		  bool ts);
struct uz_cqe *uzura_cq_next(struct uzura_cq *cq);
bool uzura_cq_convert(struct uzura_context *ctx, const struct uz_cqe *cqe,
		      struct ibv_wc *wc);
int uzura_destroy_cq(struct ibv_cq *cq);
int uzura_poll_cq(struct ibv_cq *cq, int ne, struct ibv_wc *wc);
int uzura_req_notify_cq(struct ibv_cq *cq, int solicited_only);

struct ibv_qp *uzura_create_qp(struct ibv_pd *pd,
			       struct ibv_qp_init_attr *attr);
struct ibv_qp *uzura_create_qp_ex(struct ibv_context *context,
				  struct ibv_qp_init_attr_ex *attr);
struct uzura_qp *uzura_qp_create(struct ibv_context *context,
				 struct ibv_qp_init_attr_ex *attr);
int uzura_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
		    int attr_mask);
int uzura_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
		   int attr_mask, struct ibv_qp_init_attr *init_attr);
int uzura_destroy_qp(struct ibv_qp *qp);
struct ibv_mw *uzura_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type);
int uzura_dealloc_mw(struct ibv_mw *mw);
int uzura_bind_mw(struct ibv_qp *ibqp, struct ibv_mw *mw,
		  struct ibv_mw_bind *mw_bind);
int uzura_bind_wqe(struct uz_send_wqe *wqe, struct ibv_mw *mw, uint32_t rkey,
		   const struct ibv_mw_bind_info *bi);
int uzura_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
		    struct ibv_send_wr **bad_wr);
int uzura_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
		    struct ibv_recv_wr **bad_wr);
struct list_head *uz_qp_bucket(struct uzura_context *ctx, uint32_t qpn);
void uzura_cq_clean(struct uzura_cq *cq, struct uzura_qp *qp);
void uz_wq_reset(struct uzura_wq *wq);

/*
 * Post one send WQE that fill() writes into the SQ slot (2^sq.log_wqe
 * bytes) and ring the doorbell; fill's error is returned.  A CRW slot
 * (crw) is freed by the CRW completion count (docs/uzuradv.md).
 */
typedef int (*uzura_wqe_fill_fn)(struct uzura_qp *qp, struct uz_send_wqe *wqe,
				 const void *arg);
int uzura_post_wqe(struct uzura_qp *qp, uzura_wqe_fill_fn fill,
		   const void *arg, uint64_t wr_id, bool signaled, bool crw);

bool is_uzura_dev(struct ibv_device *device);

/* uzuradv.c: CRW completions and QP reset. */
bool uzura_crw_complete(struct uzura_qp *qp, const struct uz_cqe *cqe,
			struct ibv_wc *wc);
void uzura_crw_reset(struct uzura_qp *qp);

struct ibv_srq *uzura_create_srq(struct ibv_pd *pd,
				 struct ibv_srq_init_attr *attr);
struct ibv_srq *uzura_srq_create(struct ibv_context *context,
				 struct ibv_srq_init_attr_ex *attr);
void uzura_srq_table_add(struct uzura_context *ctx, struct uzura_srq *srq);
int uzura_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr,
		     int attr_mask);
int uzura_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr);
int uzura_destroy_srq(struct ibv_srq *srq);
int uzura_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
			struct ibv_recv_wr **bad_wr);
int uz_wq_init(struct uzura_context *ctx, struct uzura_wq *wq, uint64_t key,
	       uint32_t size, uint32_t log_depth, uint32_t log_wqe,
	       uint32_t db_offset);
void uz_wq_fini(struct uzura_wq *wq);
void uz_rq_complete(struct uzura_wq *wq);

/* tm.c: tag matching SRQs (UZ_CAP_TM). */
struct ibv_srq *uzura_create_tm_srq(struct ibv_context *context,
				    struct ibv_srq_init_attr_ex *attr);
uint32_t uzura_tm_ops_log_depth(const struct ibv_srq_init_attr_ex *attr);
int uzura_tm_init(struct uzura_context *ctx, struct uzura_srq *srq,
		  const struct ibv_srq_init_attr_ex *attr,
		  const struct uzura_create_srq_resp *resp);
void uzura_tm_fini(struct uzura_srq *srq);
int uzura_post_srq_ops(struct ibv_srq *srq, struct ibv_ops_wr *wr,
		       struct ibv_ops_wr **bad_wr);
bool uzura_tm_op_cqe(const struct uz_cqe *cqe);
bool uzura_tm_recv_cqe(const struct uz_cqe *cqe);
bool uzura_tm_op_convert(struct uzura_srq *srq, const struct uz_cqe *cqe,
			 struct ibv_wc *wc);
void uzura_tm_recv_convert(struct uzura_srq *srq, const struct uz_cqe *cqe,
			   struct ibv_wc *wc);
void uzura_tm_recv_retire(struct uzura_srq *srq, const struct uz_cqe *cqe);
uint64_t uzura_tm_cqe_tag(const struct uz_cqe *cqe);

/* xrc.c: XRC domains, XRC SRQs, XRC target QPs. */
struct ibv_xrcd *uzura_open_xrcd(struct ibv_context *context,
				 struct ibv_xrcd_init_attr *attr);
int uzura_close_xrcd(struct ibv_xrcd *xrcd);
struct ibv_srq *uzura_create_srq_ex(struct ibv_context *context,
				    struct ibv_srq_init_attr_ex *attr);
int uzura_get_srq_num(struct ibv_srq *srq, uint32_t *srq_num);
struct ibv_qp *uzura_create_xrc_recv_qp(struct ibv_context *context,
					struct ibv_qp_init_attr_ex *attr);
struct ibv_qp *uzura_open_qp(struct ibv_context *context,
			     struct ibv_qp_open_attr *attr);

struct ibv_ah *uzura_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr);
int uzura_destroy_ah(struct ibv_ah *ah);

/* rss.c: receive side scaling (UZ_CAP_RSS): WQs, tables, RSS QPs. */
struct ibv_wq *uzura_create_wq(struct ibv_context *context,
			       struct ibv_wq_init_attr *attr);
int uzura_modify_wq(struct ibv_wq *wq, struct ibv_wq_attr *attr);
int uzura_destroy_wq(struct ibv_wq *wq);
struct ibv_rwq_ind_table *
uzura_create_rwq_ind_table(struct ibv_context *context,
			   struct ibv_rwq_ind_table_init_attr *attr);
int uzura_destroy_rwq_ind_table(struct ibv_rwq_ind_table *tbl);
struct ibv_qp *uzura_create_rss_qp(struct ibv_context *context,
				   struct ibv_qp_init_attr_ex *attr);

/* flow.c: flow steering rules of raw packet QPs (UZ_CAP_RAW). */
struct ibv_flow *uzura_create_flow(struct ibv_qp *qp,
				   struct ibv_flow_attr *flow_attr);
int uzura_destroy_flow(struct ibv_flow *flow);

#endif /* __UZURA_H__ */
