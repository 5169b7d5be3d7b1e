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
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ccan/list.h>
#include <ccan/minmax.h>
#include <infiniband/driver.h>
#include <util/util.h>

#include "uzura-abi.h"
#include "uzura-hw.h"

/* Buckets of the context's qpn -> QP table (poll_cq looks QPs up). */
#define UZURA_QP_TABLE_SIZE	256

struct uzura_device {
	struct verbs_device vdev;
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
	uint32_t caps;
	pthread_spinlock_t qp_table_lock;
	struct list_head qp_table[UZURA_QP_TABLE_SIZE];
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
	pthread_spinlock_t lock;
};

struct uzura_cq {
	struct ibv_cq ibcq;
	void *ring;
	size_t map_size;
	uint32_t log_depth;
	uint32_t ci;			/* free running, UZ_DB_CI_MASK */
	uint32_t cqn;
	void *db;
	pthread_spinlock_t lock;
};

struct uzura_sq_slot {
	uint64_t wr_id;
	bool signaled;
};

struct uzura_srq {
	struct ibv_srq ibsrq;
	struct uzura_wq rq;
	uint32_t srqn;
};

struct uzura_qp {
	struct ibv_qp ibqp;
	struct uzura_wq sq;
	struct uzura_wq rq;		/* unused with an SRQ */
	struct uzura_sq_slot *slots;	/* one per SQ ring entry */
	struct uzura_srq *srq;
	uint32_t max_inline;
	bool sig_all;
	enum ibv_qp_state state;	/* as last set or queried */
	struct list_node entry;		/* in the context's qp_table */
};

struct uzura_ah {
	struct ibv_ah ibah;
	uint32_t ahn;
};

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

struct ibv_pd *uzura_alloc_pd(struct ibv_context *context);
int uzura_dealloc_pd(struct ibv_pd *pd);
struct ibv_mr *uzura_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
			    uint64_t hca_va, int access);
int uzura_dereg_mr(struct verbs_mr *vmr);

struct ibv_cq *uzura_create_cq(struct ibv_context *context, int cqe,
			       struct ibv_comp_channel *channel,
			       int comp_vector);
int uzura_destroy_cq(struct ibv_cq *cq);
int uzura_poll_cq(struct ibv_cq *cq, int ne, struct ibv_wc *wc);
int uzura_req_notify_cq(struct ibv_cq *cq, int solicited_only);

struct ibv_qp *uzura_create_qp(struct ibv_pd *pd,
			       struct ibv_qp_init_attr *attr);
int uzura_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
		    int attr_mask);
int uzura_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
		   int attr_mask, struct ibv_qp_init_attr *init_attr);
int uzura_destroy_qp(struct ibv_qp *qp);
int uzura_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
		    struct ibv_send_wr **bad_wr);
int uzura_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
		    struct ibv_recv_wr **bad_wr);

struct ibv_srq *uzura_create_srq(struct ibv_pd *pd,
				 struct ibv_srq_init_attr *attr);
int uzura_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr,
		     int attr_mask);
int uzura_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr);
int uzura_destroy_srq(struct ibv_srq *srq);
int uzura_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
			struct ibv_recv_wr **bad_wr);

struct ibv_ah *uzura_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr);
int uzura_destroy_ah(struct ibv_ah *ah);

#endif /* __UZURA_H__ */
