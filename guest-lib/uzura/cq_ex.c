// SPDX-License-Identifier: GPL-2.0-or-later OR BSD-2-Clause
/*
 * uzura provider: ibv_create_cq_ex and polling through ibv_cq_ex
 * (start_poll/next_poll/end_poll and the read_* callbacks).  The CQ is
 * the same ring as ibv_create_cq's and may be polled with ibv_poll_cq as
 * well.  start_poll takes the CQ lock and end_poll releases it; each CQE
 * taken is converted to the ibv_wc that ibv_poll_cq would return (which
 * also retires SQ and RQ slots), and the read_* callbacks return its
 * fields.  On a device with UZ_CAP_TIMESTAMP a CQ asking for completion
 * timestamps (device clock or wallclock: either) gets 64-byte CQEs that
 * carry the device clock, which read_completion_wallclock_ns converts
 * with the context's clock offset (clock.c).  On a device with UZ_CAP_TM
 * read_tm_info gives the tag of a matched receive (tm.c) and 0 as the
 * TMH's app_ctx, which the device does not report.  The device gives no
 * VLANs or flow tags: CQs asking for them, for timestamps without the
 * clock or for tag matching without UZ_CAP_TM, are refused with
 * EOPNOTSUPP.
 */
#include <errno.h>
#include <stdlib.h>

#include "uzura.h"

/* What a CQE holds (SLID, SL and DLID path bits read as 0 on RoCE). */
#define UZ_CQ_WC_FLAGS		IBV_WC_STANDARD_FLAGS
/* With UZ_CAP_TIMESTAMP */
#define UZ_CQ_WC_FLAGS_TS	(IBV_WC_EX_WITH_COMPLETION_TIMESTAMP | \
				 IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK)
#define UZ_CQ_COMP_MASK		(IBV_CQ_INIT_ATTR_MASK_FLAGS | \
				 IBV_CQ_INIT_ATTR_MASK_PD)
#define UZ_CQ_FLAGS		IBV_CREATE_CQ_ATTR_SINGLE_THREADED

static struct uzura_cq *cqx_to_ucq(struct ibv_cq_ex *ibcqx)
{
	return to_ucq(ibv_cq_ex_to_cq(ibcqx));
}

/* Take the next CQE that is reported into cq->cur; 0 or ENOENT. */
static int uz_cqx_fetch(struct uzura_cq *cq)
{
	struct uzura_context *ctx = to_uctx(cq->ibcq.context);
	struct uz_cqe *cqe;
	bool reported;

	while ((cqe = uzura_cq_next(cq))) {
		if (cq->cqe_size == sizeof(struct uz_cqe_ts))
			cq->cur_ts = uz_cqe_timestamp(cqe);
		reported = uzura_cq_convert(ctx, cqe, &cq->cur);
		if (reported)
			cq->cur_tag = uzura_tm_cqe_tag(cqe);
		cq->ci = (cq->ci + 1) & UZ_DB_CI_MASK;
		if (reported) {
			cq->vcq.cq_ex.wr_id = cq->cur.wr_id;
			cq->vcq.cq_ex.status = cq->cur.status;
			return 0;
		}
	}
	return ENOENT;
}

/* Tell the device what was consumed since start_poll, and unlock. */
static void uz_cqx_done(struct uzura_cq *cq)
{
	uzura_cq_report(cq, false);
	pthread_spin_unlock(&cq->lock);
}

static int uz_start_poll(struct ibv_cq_ex *ibcqx,
			 struct ibv_poll_cq_attr *attr)
{
	struct uzura_cq *cq = cqx_to_ucq(ibcqx);
	int ret;

	if (attr->comp_mask)
		return EINVAL;
	pthread_spin_lock(&cq->lock);
	ret = uz_cqx_fetch(cq);
	/* No end_poll follows an empty start_poll. */
	if (ret)
		uz_cqx_done(cq);
	return ret;
}

static int uz_next_poll(struct ibv_cq_ex *ibcqx)
{
	return uz_cqx_fetch(cqx_to_ucq(ibcqx));
}

static void uz_end_poll(struct ibv_cq_ex *ibcqx)
{
	uz_cqx_done(cqx_to_ucq(ibcqx));
}

static enum ibv_wc_opcode uz_read_opcode(struct ibv_cq_ex *ibcqx)
{
	return cqx_to_ucq(ibcqx)->cur.opcode;
}

static uint32_t uz_read_vendor_err(struct ibv_cq_ex *ibcqx)
{
	return cqx_to_ucq(ibcqx)->cur.vendor_err;
}

static uint32_t uz_read_byte_len(struct ibv_cq_ex *ibcqx)
{
	return cqx_to_ucq(ibcqx)->cur.byte_len;
}

static __be32 uz_read_imm_data(struct ibv_cq_ex *ibcqx)
{
	return cqx_to_ucq(ibcqx)->cur.imm_data;
}

static uint32_t uz_read_qp_num(struct ibv_cq_ex *ibcqx)
{
	return cqx_to_ucq(ibcqx)->cur.qp_num;
}

static uint32_t uz_read_src_qp(struct ibv_cq_ex *ibcqx)
{
	return cqx_to_ucq(ibcqx)->cur.src_qp;
}

static unsigned int uz_read_wc_flags(struct ibv_cq_ex *ibcqx)
{
	return cqx_to_ucq(ibcqx)->cur.wc_flags;
}

static uint32_t uz_read_slid(struct ibv_cq_ex *ibcqx)
{
	return cqx_to_ucq(ibcqx)->cur.slid;
}

static uint8_t uz_read_sl(struct ibv_cq_ex *ibcqx)
{
	return cqx_to_ucq(ibcqx)->cur.sl;
}

static uint8_t uz_read_dlid_path_bits(struct ibv_cq_ex *ibcqx)
{
	return cqx_to_ucq(ibcqx)->cur.dlid_path_bits;
}

/* The TMH's tag of a matched receive; uzura reports no app_ctx. */
static void uz_read_tm_info(struct ibv_cq_ex *ibcqx,
			    struct ibv_wc_tm_info *tm_info)
{
	tm_info->tag = cqx_to_ucq(ibcqx)->cur_tag;
	tm_info->priv = 0;
}

/* Device clock ticks: ns (hca_core_clock is UZ_CLOCK_KHZ). */
static uint64_t uz_read_completion_ts(struct ibv_cq_ex *ibcqx)
{
	return cqx_to_ucq(ibcqx)->cur_ts;
}

/* The device clock moved to CLOCK_REALTIME by the context's offset. */
static uint64_t uz_read_completion_wallclock_ns(struct ibv_cq_ex *ibcqx)
{
	struct uzura_cq *cq = cqx_to_ucq(ibcqx);
	struct uzura_context *ctx = to_uctx(cq->ibcq.context);

	return cq->cur_ts + atomic_load_explicit(&ctx->clock_offset,
						 memory_order_relaxed);
}

struct ibv_cq_ex *uzura_create_cq_ex(struct ibv_context *context,
				     struct ibv_cq_init_attr_ex *attr)
{
	struct uzura_context *ctx = to_uctx(context);
	struct uzv_create_cq_ex_resp resp = {};
	struct uzv_create_cq_ex cmd = {};
	uint64_t wc_flags = UZ_CQ_WC_FLAGS;
	struct ibv_cq_init_attr_ex ask;
	struct ibv_cq_ex *cqx;
	struct uzura_cq *cq;
	bool ts;
	int ret;

	if (ctx->caps & UZ_CAP_TIMESTAMP)
		wc_flags |= UZ_CQ_WC_FLAGS_TS;
	if (ctx->caps & UZ_CAP_TM)
		wc_flags |= IBV_WC_EX_WITH_TM_INFO;
	/* No timestamps without the clock, ignoring overruns, ... */
	if (attr->comp_mask & ~UZ_CQ_COMP_MASK ||
	    attr->wc_flags & ~wc_flags ||
	    (attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS &&
	     attr->flags & ~UZ_CQ_FLAGS)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	/* A CQ's domain is a parent domain of this context (as in mlx5). */
	if (attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD &&
	    (!uzura_is_parent_domain(attr->parent_domain) ||
	     attr->parent_domain->context != context)) {
		errno = EINVAL;
		return NULL;
	}
	ts = attr->wc_flags & UZ_CQ_WC_FLAGS_TS;
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return NULL;
	/* The kernel makes 64-byte CQEs for either timestamp flag. */
	ask = *attr;
	ask.cqe = uzura_cq_ask(ctx, attr->cqe);
	/* The kernel has no use for the domain. */
	ask.comp_mask &= ~IBV_CQ_INIT_ATTR_MASK_PD;
	ret = ibv_cmd_create_cq_ex(context, &ask, &cq->vcq, &cmd.ibv_cmd,
				   sizeof(cmd), &resp.ibv_resp, sizeof(resp),
				   0);
	if (ret) {
		errno = ret;
		goto err_free;
	}
	ret = uzura_cq_init(ctx, cq, &resp.drv_payload, attr->cqe, ts);
	if (ret) {
		ibv_cmd_destroy_cq(&cq->ibcq);
		errno = ret;
		goto err_free;
	}
	if (attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) {
		cq->parent = attr->parent_domain;
		uzura_pd_get(cq->parent);
	}

	cqx = &cq->vcq.cq_ex;
	cqx->start_poll = uz_start_poll;
	cqx->next_poll = uz_next_poll;
	cqx->end_poll = uz_end_poll;
	cqx->read_opcode = uz_read_opcode;
	cqx->read_vendor_err = uz_read_vendor_err;
	cqx->read_wc_flags = uz_read_wc_flags;
	/* Every field a CQE has, whether asked for or not. */
	cqx->read_byte_len = uz_read_byte_len;
	cqx->read_imm_data = uz_read_imm_data;
	cqx->read_qp_num = uz_read_qp_num;
	cqx->read_src_qp = uz_read_src_qp;
	cqx->read_slid = uz_read_slid;
	cqx->read_sl = uz_read_sl;
	cqx->read_dlid_path_bits = uz_read_dlid_path_bits;
	if (attr->wc_flags & IBV_WC_EX_WITH_TM_INFO)
		cqx->read_tm_info = uz_read_tm_info;
	if (ts) {
		cqx->read_completion_ts = uz_read_completion_ts;
		cqx->read_completion_wallclock_ns =
			uz_read_completion_wallclock_ns;
	}
	return cqx;

err_free:
	free(cq);
	return NULL;
}
