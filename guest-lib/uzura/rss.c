// SPDX-License-Identifier: GPL-2.0-or-later OR BSD-2-Clause
/*
 * uzura provider: receive side scaling (UZ_CAP_RSS, docs/device-spec.md
 * 8.18.1).  A WQ is a receive queue the kernel makes as a raw QP with no
 * SQ; it is posted and polled as a QP's RQ.  An indirection table is the
 * kernel's list of WQs.  An RSS QP (a raw packet QP over a table) has no
 * queue: the device spreads the frames its flow rules match over the
 * table's WQs by the Toeplitz hash given here.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "uzura.h"

#define UZ_RQ_LOG_WQE_MIN	4

#define UZ_RSS_FIELDS	(IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4 | \
			 IBV_RX_HASH_SRC_IPV6 | IBV_RX_HASH_DST_IPV6 | \
			 IBV_RX_HASH_SRC_PORT_TCP | IBV_RX_HASH_DST_PORT_TCP | \
			 IBV_RX_HASH_SRC_PORT_UDP | IBV_RX_HASH_DST_PORT_UDP)

/* The verbs' hash field bits are the device's. */
static_assert(IBV_RX_HASH_SRC_IPV4 == UZ_RSS_F_SRC_IPV4 &&
	      IBV_RX_HASH_DST_IPV6 == UZ_RSS_F_DST_IPV6 &&
	      IBV_RX_HASH_DST_PORT_UDP == UZ_RSS_F_DST_PORT_UDP &&
	      IBV_RX_HASH_FUNC_TOEPLITZ == UZ_RSS_TOEPLITZ, "RSS bits");

static struct uzura_rwq *to_urwq(struct ibv_wq *ibwq)
{
	return container_of(ibwq, struct uzura_rwq, ibwq);
}

static int uzura_wq_post_recv(struct ibv_wq *ibwq, struct ibv_recv_wr *wr,
			      struct ibv_recv_wr **bad_wr)
{
	return uzura_post_recv(&to_urwq(ibwq)->qp.ibqp, wr, bad_wr);
}

struct ibv_wq *uzura_create_wq(struct ibv_context *context,
			       struct ibv_wq_init_attr *attr)
{
	struct uzura_context *ctx = to_uctx(context);
	struct uzv_create_wq_resp resp = {};
	struct uzv_create_wq cmd = {};
	struct uzura_rwq *wq;
	uint32_t log_wqe = UZ_RQ_LOG_WQE_MIN;
	int ret;

	if (!(ctx->caps & UZ_CAP_RSS) || attr->wq_type != IBV_WQT_RQ ||
	    (attr->comp_mask & ~IBV_WQ_INIT_ATTR_FLAGS) ||
	    ((attr->comp_mask & IBV_WQ_INIT_ATTR_FLAGS) &&
	     attr->create_flags)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!attr->pd || !attr->cq || attr->max_sge > ctx->max_sge) {
		errno = EINVAL;
		return NULL;
	}
	while ((1u << log_wqe) < sizeof(struct uz_recv_wqe) +
				 attr->max_sge * sizeof(struct uz_sge))
		log_wqe++;
	if (log_wqe > ctx->rq_max_log_wqe) {
		errno = EINVAL;
		return NULL;
	}
	cmd.rq_log_wqe = log_wqe;
	wq = calloc(1, sizeof(*wq));
	if (!wq)
		return NULL;
	ret = ibv_cmd_create_wq(context, attr, &wq->ibwq, &cmd.ibv_cmd,
				sizeof(cmd), &resp.ibv_resp, sizeof(resp));
	if (ret) {
		errno = ret;
		goto err_free;
	}
	ret = uz_wq_init(ctx, &wq->qp.rq, resp.rq_mmap_key, resp.rq_size,
			 resp.rq_log_depth, resp.rq_log_wqe, resp.rq_db_offset);
	if (ret) {
		verbs_err(&ctx->ibvctx, "uzura: cannot map WQ %u: %s\n",
			  wq->ibwq.wq_num, strerror(ret));
		goto err_destroy;
	}
	wq->qp.rq.max_sge = min_t(uint32_t, ctx->max_sge,
				  ((1u << wq->qp.rq.log_wqe) -
				   sizeof(struct uz_recv_wqe)) /
				  sizeof(struct uz_sge));
	/* What poll_cq and post_recv look at. */
	wq->qp.ibqp.context = context;
	wq->qp.ibqp.qp_num = wq->ibwq.wq_num;
	wq->qp.ibqp.recv_cq = attr->cq;
	wq->qp.state = IBV_QPS_RESET;
	pthread_spin_init(&wq->qp.sq.lock, PTHREAD_PROCESS_PRIVATE);
	wq->ibwq.post_recv = uzura_wq_post_recv;
	wq->ibwq.state = IBV_WQS_RESET;

	pthread_spin_lock(&ctx->qp_table_lock);
	list_add_tail(uz_qp_bucket(ctx, wq->ibwq.wq_num), &wq->qp.entry);
	pthread_spin_unlock(&ctx->qp_table_lock);
	return &wq->ibwq;

err_destroy:
	ibv_cmd_destroy_wq(&wq->ibwq);
	errno = ret;
err_free:
	free(wq);
	return NULL;
}

/*
 * The kernel moves the device QP (RDY: able to receive); on RESET the
 * device restarts the ring at 0, and completions from before are dropped
 * as a QP's are.
 */
int uzura_modify_wq(struct ibv_wq *ibwq, struct ibv_wq_attr *attr)
{
	struct uzura_rwq *wq = to_urwq(ibwq);
	struct ibv_modify_wq cmd = {};
	int ret;

	if (attr->attr_mask & ~(IBV_WQ_ATTR_STATE | IBV_WQ_ATTR_CURR_STATE))
		return EOPNOTSUPP;
	ret = ibv_cmd_modify_wq(ibwq, attr, &cmd, sizeof(cmd));
	if (ret)
		return ret;
	if (!(attr->attr_mask & IBV_WQ_ATTR_STATE))
		return 0;
	switch (attr->wq_state) {
	case IBV_WQS_RESET:
		uzura_cq_clean(to_ucq(ibwq->cq), &wq->qp);
		uz_wq_reset(&wq->qp.rq);
		wq->qp.state = IBV_QPS_RESET;
		break;
	case IBV_WQS_RDY:
		wq->qp.state = IBV_QPS_RTR;
		break;
	default:
		wq->qp.state = IBV_QPS_ERR;
		break;
	}
	return 0;
}

int uzura_destroy_wq(struct ibv_wq *ibwq)
{
	struct uzura_context *ctx = to_uctx(ibwq->context);
	struct uzura_rwq *wq = to_urwq(ibwq);
	struct uzura_cq *cq = to_ucq(ibwq->cq);
	int ret;

	ret = ibv_cmd_destroy_wq(ibwq);
	if (ret)
		return ret;
	/* No poll_cq may hold the WQ after this. */
	pthread_spin_lock(&cq->lock);
	pthread_spin_lock(&ctx->qp_table_lock);
	list_del(&wq->qp.entry);
	pthread_spin_unlock(&ctx->qp_table_lock);
	pthread_spin_unlock(&cq->lock);
	uz_wq_fini(&wq->qp.rq);
	free(wq);
	return 0;
}

struct ibv_rwq_ind_table *
uzura_create_rwq_ind_table(struct ibv_context *context,
			   struct ibv_rwq_ind_table_init_attr *attr)
{
	struct ib_uverbs_ex_create_rwq_ind_table_resp resp = {};
	struct ibv_rwq_ind_table *tbl;
	int ret;

	if (!(to_uctx(context)->caps & UZ_CAP_RSS) || attr->comp_mask) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	tbl = calloc(1, sizeof(*tbl));
	if (!tbl)
		return NULL;
	ret = ibv_cmd_create_rwq_ind_table(context, attr, tbl, &resp,
					   sizeof(resp));
	if (ret) {
		free(tbl);
		errno = ret;
		return NULL;
	}
	return tbl;
}

int uzura_destroy_rwq_ind_table(struct ibv_rwq_ind_table *tbl)
{
	int ret;

	ret = ibv_cmd_destroy_rwq_ind_table(tbl);
	if (ret)
		return ret;
	free(tbl);
	return 0;
}

/*
 * A raw packet QP over an indirection table, with the hash that picks
 * each frame's WQ; it takes flow rules and nothing else.
 */
struct ibv_qp *uzura_create_rss_qp(struct ibv_context *context,
				   struct ibv_qp_init_attr_ex *attr)
{
	const struct ibv_rx_hash_conf *h = &attr->rx_hash_conf;
	struct uzura_context *ctx = to_uctx(context);
	struct uzv_create_qp_rss_resp resp = {};
	struct uzv_create_qp_rss cmd = {};
	struct uzura_qp *qp;
	int ret;

	if (!(ctx->caps & UZ_CAP_RSS) ||
	    attr->qp_type != IBV_QPT_RAW_PACKET ||
	    (attr->comp_mask & ~(IBV_QP_INIT_ATTR_PD |
				 IBV_QP_INIT_ATTR_CREATE_FLAGS |
				 IBV_QP_INIT_ATTR_RX_HASH |
				 IBV_QP_INIT_ATTR_IND_TABLE)) ||
	    ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) &&
	     attr->create_flags) ||
	    h->rx_hash_function != IBV_RX_HASH_FUNC_TOEPLITZ ||
	    (h->rx_hash_fields_mask & ~(uint64_t)UZ_RSS_FIELDS)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	/* Both a hash and a table; no SQ, no receive caps. */
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_RX_HASH) ||
	    !(attr->comp_mask & IBV_QP_INIT_ATTR_IND_TABLE) ||
	    !(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd ||
	    !attr->rwq_ind_tbl || attr->cap.max_send_wr ||
	    h->rx_hash_key_len != UZURA_RX_HASH_KEY_LEN || !h->rx_hash_key) {
		errno = EINVAL;
		return NULL;
	}
	cmd.drv_payload.comp_mask = UZURA_CREATE_QP_RX_HASH;
	cmd.drv_payload.rx_hash_function = h->rx_hash_function;
	cmd.drv_payload.rx_hash_key_len = h->rx_hash_key_len;
	cmd.drv_payload.rx_hash_fields_mask = h->rx_hash_fields_mask;
	memcpy(cmd.drv_payload.rx_hash_key, h->rx_hash_key,
	       UZURA_RX_HASH_KEY_LEN);
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return NULL;
	ret = ibv_cmd_create_qp_ex2(context, &qp->vqp, attr, &cmd.ibv_cmd,
				    sizeof(cmd), &resp.ibv_resp, sizeof(resp));
	if (ret) {
		free(qp);
		errno = ret;
		return NULL;
	}
	qp->rss = true;
	qp->state = IBV_QPS_RESET;
	pthread_spin_init(&qp->sq.lock, PTHREAD_PROCESS_PRIVATE);
	pthread_spin_init(&qp->rq.lock, PTHREAD_PROCESS_PRIVATE);
	uzura_pd_get(attr->pd);
	return &qp->ibqp;
}
