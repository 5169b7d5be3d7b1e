// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * uzura RDMA NIC driver: QPs (RC, UC, UD, the GSI QP1, XRC and raw packet)
 * and SRQs.
 *
 * Every ring is one DMA-contiguous allocation; user rings are handed to
 * the process through mmap entries (docs/verbs-abi.md).  For kernel QPs
 * the driver writes WQEs and rings the doorbells itself.  CQEs carry the
 * wr_id, not the SQ slot, so the driver keeps each slot's wr_id and
 * signalled flag to find how far a send completion reaches.
 */
#include <linux/dma-mapping.h>
#include <linux/etherdevice.h>
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>
#include <rdma/uzura-abi.h>

#include "uz.h"

#define UZ_SQ_LOG_WQE_MIN	6
#define UZ_SQ_LOG_WQE_MAX	9
#define UZ_RQ_LOG_WQE_MIN	4
#define UZ_RQ_LOG_WQE_MAX	9

static u32 uz_wq_depth(const struct uz_wq *wq)
{
	return 1u << wq->log_depth;
}

static void *uz_wq_slot(struct uz_wq *wq, u32 idx)
{
	return wq->ring.buf + ((idx & (uz_wq_depth(wq) - 1)) << wq->log_wqe);
}

static bool uz_wq_full(const struct uz_wq *wq)
{
	return ((wq->pi - wq->ci) & UZ_DB_PI_MASK) >= uz_wq_depth(wq);
}

/* log2 of a ring depth for wr entries, or -EINVAL above the device's. */
int uz_log_depth(struct ib_device *ibdev, const char *what, u32 wr,
		 u32 max_wr)
{
	u32 depth = roundup_pow_of_two(max_t(u32, wr, 2));

	if (wr > max_wr || depth > max_wr) {
		ibdev_dbg(ibdev, "%s of %u WRs rounds to %u: at most %u\n",
			  what, wr, depth, max_wr);
		return -EINVAL;
	}
	return ilog2(depth);
}

/* Allocate a work queue's ring, and hand it to the process for user QPs. */
int uz_wq_alloc(struct uz_dev *uz, struct uz_wq *wq, struct ib_udata *udata,
		u64 *key)
{
	int err;

	spin_lock_init(&wq->lock);
	err = uz_ring_alloc(uz, &wq->ring,
			    ((size_t)uz_wq_depth(wq) << wq->log_wqe) + wq->extra);
	if (err)
		return err;
	if (!udata)
		return 0;
	wq->mmap = uz_ring_mmap(uz, udata, &wq->ring, key);
	if (IS_ERR(wq->mmap)) {
		err = PTR_ERR(wq->mmap);
		wq->mmap = NULL;
		uz_ring_free(uz, &wq->ring);
		return err;
	}
	return 0;
}

void uz_wq_free(struct uz_dev *uz, struct uz_wq *wq)
{
	if (wq->mmap)
		rdma_user_mmap_entry_remove(wq->mmap);
	else
		uz_ring_free(uz, &wq->ring);
	wq->mmap = NULL;
}

/* Ring size as the process maps it: the whole page-aligned allocation. */
u32 uz_wq_map_size(const struct uz_wq *wq)
{
	return PAGE_ALIGN(((size_t)uz_wq_depth(wq) << wq->log_wqe) + wq->extra);
}

/* Every QP but an XRC target has an SQ and a send CQ. */
static bool uz_qp_has_sq(const struct uz_qp *qp)
{
	return uz_qpt_has_sq(qp->type);
}

/*
 * A QP with a receive side of its own, and so a receive CQ: an XRC
 * initiator has none, and an XRC target's receives are its SRQs'.
 */
static bool uz_qp_receives(const struct uz_qp *qp)
{
	return uz_qpt_receives(qp->type);
}

/* A QP with an RQ of its own. */
static bool uz_qp_has_rq(const struct uz_qp *qp)
{
	return uz_qp_receives(qp) && !qp->srq;
}

static bool uz_qp_connected(const struct uz_qp *qp)
{
	return qp->type == UZ_QPT_RC || qp->type == UZ_QPT_UC ||
	       qp->type == UZ_QPT_XRC_INI || qp->type == UZ_QPT_XRC_TGT;
}

/* ---- QP creation ---- */

static int uz_qp_sizes(struct uz_dev *uz, struct uz_qp *qp,
		       struct ib_qp_init_attr *init, struct ib_udata *udata)
{
	u32 max_sge = le32_to_cpu(uz->attr.max_sge);
	u32 max_inline = le32_to_cpu(uz->attr.max_inline);
	u32 max_wr = le32_to_cpu(uz->attr.max_qp_wr);
	struct ib_qp_cap *cap = &init->cap;
	struct uzura_create_qp ucmd = {};
	int sq_log, rq_log;
	u32 need, hdr = sizeof(struct uz_send_wqe);
	int err;

	/* As uverbs does: an XRC initiator's receive caps mean nothing. */
	if (!uz_qp_receives(qp)) {
		cap->max_recv_wr = 0;
		cap->max_recv_sge = 0;
	}
	if (cap->max_send_sge > max_sge || cap->max_recv_sge > max_sge ||
	    cap->max_inline_data > max_inline) {
		ibdev_dbg(qp->ibqp.device,
			  "QP: SGEs %u send, %u recv, inline %u: at most %u, %u\n",
			  cap->max_send_sge, cap->max_recv_sge,
			  cap->max_inline_data, max_sge, max_inline);
		return -EINVAL;
	}
	sq_log = uz_log_depth(qp->ibqp.device, "QP: SQ", cap->max_send_wr,
			      max_wr);
	if (sq_log < 0)
		return sq_log;
	qp->sq.log_depth = sq_log;
	if (uz_qp_has_rq(qp)) {
		rq_log = uz_log_depth(qp->ibqp.device, "QP: RQ",
				      cap->max_recv_wr, max_wr);
		if (rq_log < 0)
			return rq_log;
		qp->rq.log_depth = rq_log;
	}

	/* The kernel's UD WQEs carry their AV (UZ_WQE_F_AV). */
	if (!udata && init->qp_type != IB_QPT_RC)
		hdr += sizeof(struct uz_av);
	need = hdr + max_t(u32, cap->max_send_sge * sizeof(struct uz_sge),
			   cap->max_inline_data);
	qp->sq.log_wqe = max_t(u32, order_base_2(need), UZ_SQ_LOG_WQE_MIN);
	need = sizeof(struct uz_recv_wqe) +
	       cap->max_recv_sge * sizeof(struct uz_sge);
	qp->rq.log_wqe = max_t(u32, order_base_2(need), UZ_RQ_LOG_WQE_MIN);

	if (udata && udata->inlen) {
		if (!uz_udata_known(qp->ibqp.device, udata, sizeof(ucmd), "QP"))
			return -EOPNOTSUPP;
		err = ib_copy_from_udata(&ucmd, udata,
					 min(udata->inlen, sizeof(ucmd)));
		if (err)
			return err;
		if (ucmd.comp_mask & ~UZURA_CREATE_QP_SQ_SHADOW) {
			ibdev_dbg(qp->ibqp.device, "QP comp_mask 0x%x unknown\n",
				  ucmd.comp_mask);
			return -EINVAL;
		}
		/* Granted when the device has it; else doorbells only. */
		if ((ucmd.comp_mask & UZURA_CREATE_QP_SQ_SHADOW) &&
		    (uz->caps & UZ_CAP_SQ_SHADOW))
			qp->sq.extra = sizeof(struct uz_sq_shadow);
		/* The provider chose sizes that fit its own caps. */
		if (ucmd.sq_log_wqe)
			qp->sq.log_wqe = ucmd.sq_log_wqe;
		if (ucmd.rq_log_wqe && uz_qp_receives(qp))
			qp->rq.log_wqe = ucmd.rq_log_wqe;
	}
	if (qp->sq.log_wqe < UZ_SQ_LOG_WQE_MIN ||
	    qp->sq.log_wqe > UZ_SQ_LOG_WQE_MAX ||
	    qp->rq.log_wqe < UZ_RQ_LOG_WQE_MIN ||
	    qp->rq.log_wqe > UZ_RQ_LOG_WQE_MAX) {
		ibdev_dbg(qp->ibqp.device,
			  "QP: log WQE sizes SQ %u (%u..%u), RQ %u (%u..%u)\n",
			  qp->sq.log_wqe, UZ_SQ_LOG_WQE_MIN, UZ_SQ_LOG_WQE_MAX,
			  qp->rq.log_wqe, UZ_RQ_LOG_WQE_MIN, UZ_RQ_LOG_WQE_MAX);
		return -EINVAL;
	}

	/* What the rings can really hold, reported back to the caller. */
	qp->sq.max_sge = min_t(u32, max_sge,
			       ((1u << qp->sq.log_wqe) - hdr) /
			       sizeof(struct uz_sge));
	qp->max_inline = min_t(u32, max_inline, (1u << qp->sq.log_wqe) - hdr);
	qp->rq.max_sge = min_t(u32, max_sge,
			       ((1u << qp->rq.log_wqe) - sizeof(struct uz_recv_wqe)) /
			       sizeof(struct uz_sge));
	cap->max_send_wr = uz_wq_depth(&qp->sq);
	cap->max_send_sge = qp->sq.max_sge;
	cap->max_inline_data = qp->max_inline;
	if (uz_qp_has_rq(qp)) {
		cap->max_recv_wr = uz_wq_depth(&qp->rq);
		cap->max_recv_sge = qp->rq.max_sge;
	} else {
		cap->max_recv_wr = 0;
		cap->max_recv_sge = 0;
	}
	qp->cap = *cap;
	return 0;
}

int uz_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
		 struct ib_udata *udata)
{
	struct uz_qp *qp = to_uz_qp(ibqp);
	struct uz_ibdev *ib = to_uzib(ibqp->device);
	struct uz_dev *uz = ib->uz;
	struct uz_admin_cmd cmd = { .opcode = UZ_CMD_CREATE_QP };
	struct uz_cmd_create_qp *c = (struct uz_cmd_create_qp *)cmd.raw;
	struct uzura_create_qp_resp resp = {};
	struct uz_admin_cqe cqe;
	u64 sq_key = 0, rq_key = 0;
	int err;

	switch (init->qp_type) {
	case IB_QPT_RC:
		qp->type = UZ_QPT_RC;
		break;
	case IB_QPT_UC:
		/* No kernel user has a use for UC: its posting is RC and UD. */
		if (!udata || !(uz->caps & UZ_CAP_UC)) {
			ibdev_dbg(ibqp->device, "QP: UC for user space only, on a device with UC\n");
			return -EOPNOTSUPP;
		}
		qp->type = UZ_QPT_UC;
		break;
	case IB_QPT_UD:
		qp->type = UZ_QPT_UD;
		break;
	case IB_QPT_GSI:
		if (udata) {
			ibdev_dbg(ibqp->device,
				  "QP: no GSI QP for user space\n");
			return -EINVAL;
		}
		qp->type = UZ_QPT_GSI;
		break;
	case IB_QPT_XRC_INI:
		/* The kernel's posting path has no XRC SRQ number to give. */
		if (!udata || !(uz->caps & UZ_CAP_XRC)) {
			ibdev_dbg(ibqp->device, "QP: XRC initiator for user space only, on a device with XRC\n");
			return -EOPNOTSUPP;
		}
		qp->type = UZ_QPT_XRC_INI;
		break;
	case IB_QPT_XRC_TGT:
		if (!(uz->caps & UZ_CAP_XRC)) {
			ibdev_dbg(ibqp->device, "QP: XRC not supported\n");
			return -EOPNOTSUPP;
		}
		qp->type = UZ_QPT_XRC_TGT;
		break;
	case IB_QPT_RAW_PACKET:
		/*
		 * Whole Ethernet frames, and UD's queues (uverbs checked
		 * CAP_NET_RAW); the kernel has the netdev for its frames.
		 */
		if (!udata || !(uz->caps & UZ_CAP_RAW)) {
			ibdev_dbg(ibqp->device, "QP: raw packet for user space only, on a device with raw QPs\n");
			return -EOPNOTSUPP;
		}
		qp->type = UZ_QPT_RAW;
		break;
	default:
		ibdev_dbg(ibqp->device, "QP type %d not supported\n",
			  init->qp_type);
		return -EOPNOTSUPP;
	}
	if (init->create_flags) {
		ibdev_dbg(ibqp->device, "QP create flags 0x%x not supported\n",
			  init->create_flags);
		return -EOPNOTSUPP;
	}
	/* Over an indirection table: an RSS QP, with no queue (uz_rss.c). */
	if (init->rwq_ind_tbl)
		return uz_rss_create_qp(qp, init, udata);
	if (qp->type == UZ_QPT_XRC_TGT)
		return uz_xrc_create_tgt(qp, init);
	/* ib_core may give an XRC initiator a receive CQ, or none. */
	if (!init->send_cq || (uz_qp_receives(qp) && !init->recv_cq)) {
		ibdev_dbg(ibqp->device, "QP: needs a send CQ%s\n",
			  uz_qp_receives(qp) ? " and a receive CQ" : "");
		return -EINVAL;
	}

	/* ib_core gives an XRC initiator no SRQ. */
	qp->srq = init->srq && uz_qp_receives(qp) ? to_uz_srq(init->srq) : NULL;
	err = uz_qp_sizes(uz, qp, init, udata);
	if (err)
		return err;
	qp->uctx = uz_udata_uctx(udata);
	qp->sig_all = init->sq_sig_type == IB_SIGNAL_ALL_WR;
	qp->state = IB_QPS_RESET;
	uz_obj_ref_init(&qp->ref);

	if (!udata) {
		qp->sq_slots = kcalloc(uz_wq_depth(&qp->sq),
				       sizeof(*qp->sq_slots), GFP_KERNEL);
		if (!qp->sq_slots)
			return -ENOMEM;
	}
	err = uz_wq_alloc(uz, &qp->sq, udata, &sq_key);
	if (err)
		goto err_slots;
	if (uz_qp_has_rq(qp)) {
		err = uz_wq_alloc(uz, &qp->rq, udata, &rq_key);
		if (err)
			goto err_sq;
	}

	/* ring.dma stays valid when the mmap entry owns a user ring */
	c->sq_addr = cpu_to_le64(qp->sq.ring.dma);
	if (uz_qp_has_rq(qp))
		c->rq_addr = cpu_to_le64(qp->rq.ring.dma);
	c->uctx = cpu_to_le32(qp->uctx);
	c->pdn = cpu_to_le32(to_uz_pd(ibqp->pd)->pdn);
	c->send_cqn = cpu_to_le32(to_uz_cq(init->send_cq)->cqn);
	if (uz_qp_receives(qp))
		c->recv_cqn = cpu_to_le32(to_uz_cq(init->recv_cq)->cqn);
	c->srqn = cpu_to_le32(qp->srq ? qp->srq->srqn : UZ_NO_SRQ);
	c->type = qp->type;
	c->sq_log_depth = qp->sq.log_depth;
	c->rq_log_depth = uz_qp_has_rq(qp) ? qp->rq.log_depth : 0;
	c->sq_log_wqe_size = qp->sq.log_wqe;
	c->rq_log_wqe_size = qp->rq.log_wqe;
	c->flags = qp->sig_all ? UZ_QPF_SIG_ALL : 0;
	if (qp->sq.extra)
		c->flags |= UZ_QPF_SQ_SHADOW;
	err = uz_admin_exec(uz, &cmd, &cqe);
	if (err)
		goto err_rq;
	qp->qpn = le32_to_cpu(cqe.out0);
	qp->sq.db = le32_to_cpu(cqe.out1);
	qp->rq.db = le32_to_cpu(cqe.out2);
	ibqp->qp_num = qp->qpn;

	err = xa_insert_bh(&ib->qp_xa, qp->qpn, qp, GFP_KERNEL);
	if (err)
		goto err_destroy;

	if (udata) {
		resp.qpn = qp->qpn;
		resp.sq_mmap_key = sq_key;
		resp.rq_mmap_key = rq_key;
		resp.sq_size = uz_wq_map_size(&qp->sq);
		resp.sq_log_depth = qp->sq.log_depth;
		resp.sq_log_wqe = qp->sq.log_wqe;
		resp.rq_log_wqe = qp->rq.log_wqe;
		resp.sq_db_offset = uz_db_page_off(qp->sq.db);
		if (qp->sq.extra)
			resp.comp_mask |= UZURA_CREATE_QP_RESP_SQ_SHADOW;
		if (uz_qp_has_rq(qp)) {
			resp.rq_size = uz_wq_map_size(&qp->rq);
			resp.rq_log_depth = qp->rq.log_depth;
			resp.rq_db_offset = uz_db_page_off(qp->rq.db);
		}
		err = ib_copy_to_udata(udata, &resp,
				       min(udata->outlen, sizeof(resp)));
		if (err)
			goto err_xa;
	}
	return 0;

err_xa:
	xa_erase_bh(&ib->qp_xa, qp->qpn);
	uz_obj_ref_wait(&qp->ref);
err_destroy:
	uz_obj_cmd(uz, UZ_CMD_DESTROY_QP, qp->qpn, qp->uctx);
err_rq:
	if (uz_qp_has_rq(qp))
		uz_wq_free(uz, &qp->rq);
err_sq:
	uz_wq_free(uz, &qp->sq);
err_slots:
	kfree(qp->sq_slots);
	return err;
}

/* Wait out a poll_cq that may still look at the QP. */
static void uz_cq_sync(struct ib_cq *ibcq)
{
	struct uz_cq *cq = to_uz_cq(ibcq);
	unsigned long flags;

	spin_lock_irqsave(&cq->lock, flags);
	spin_unlock_irqrestore(&cq->lock, flags);
}

int uz_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata)
{
	struct uz_qp *qp = to_uz_qp(ibqp);
	struct uz_ibdev *ib = to_uzib(ibqp->device);
	int err;

	err = uz_obj_destroy(ib->uz, &ib->qp_xa, qp, &qp->ref,
			     UZ_CMD_DESTROY_QP, qp->qpn, qp->uctx);
	/*
	 * Only the CQs the QP completes into: an XRC target has none (its
	 * receives complete into its SRQs' CQs, and the poll of those
	 * takes nothing from the QP but its ib_qp's address).
	 */
	if (uz_qp_has_sq(qp))
		uz_cq_sync(ibqp->send_cq);
	if (uz_qp_receives(qp))
		uz_cq_sync(ibqp->recv_cq);
	if (err) {
		/* The device may still read the rings: leak them. */
		dev_err(&ib->uz->pdev->dev, "destroying QP %u failed: %d\n",
			qp->qpn, err);
		return 0;
	}
	if (uz_qp_has_rq(qp))
		uz_wq_free(ib->uz, &qp->rq);
	if (uz_qp_has_sq(qp))
		uz_wq_free(ib->uz, &qp->sq);
	kfree(qp->sq_slots);
	return 0;
}

/* ---- modify and query ---- */

struct uz_mask_map {
	int ib;
	u32 uz;
};

static const struct uz_mask_map uz_qp_masks[] = {
	{ IB_QP_STATE, UZ_QP_ATTR_STATE },
	{ IB_QP_ACCESS_FLAGS, UZ_QP_ATTR_ACCESS },
	{ IB_QP_PKEY_INDEX, UZ_QP_ATTR_PKEY_INDEX },
	{ IB_QP_PORT, UZ_QP_ATTR_PORT },
	{ IB_QP_QKEY, UZ_QP_ATTR_QKEY },
	{ IB_QP_AV, UZ_QP_ATTR_AV },
	{ IB_QP_PATH_MTU, UZ_QP_ATTR_PATH_MTU },
	{ IB_QP_TIMEOUT, UZ_QP_ATTR_TIMEOUT },
	{ IB_QP_RETRY_CNT, UZ_QP_ATTR_RETRY_CNT },
	{ IB_QP_RNR_RETRY, UZ_QP_ATTR_RNR_RETRY },
	{ IB_QP_RQ_PSN, UZ_QP_ATTR_RQ_PSN },
	{ IB_QP_MAX_QP_RD_ATOMIC, UZ_QP_ATTR_MAX_QP_RD_ATOMIC },
	{ IB_QP_MIN_RNR_TIMER, UZ_QP_ATTR_MIN_RNR_TIMER },
	{ IB_QP_SQ_PSN, UZ_QP_ATTR_SQ_PSN },
	{ IB_QP_MAX_DEST_RD_ATOMIC, UZ_QP_ATTR_MAX_DEST_RD_ATOMIC },
	{ IB_QP_DEST_QPN, UZ_QP_ATTR_DEST_QPN },
};

#define UZ_QP_MODIFY_MASK	(IB_QP_CUR_STATE | IB_QP_STATE | \
				 IB_QP_ACCESS_FLAGS | IB_QP_PKEY_INDEX | \
				 IB_QP_PORT | IB_QP_QKEY | IB_QP_AV | \
				 IB_QP_PATH_MTU | IB_QP_TIMEOUT | \
				 IB_QP_RETRY_CNT | IB_QP_RNR_RETRY | \
				 IB_QP_RQ_PSN | IB_QP_MAX_QP_RD_ATOMIC | \
				 IB_QP_MIN_RNR_TIMER | IB_QP_SQ_PSN | \
				 IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_DEST_QPN)

static int uz_qp_av(struct ib_device *ibdev, struct uz_qp_attr *a,
		    const struct rdma_ah_attr *ah)
{
	const struct ib_global_route *grh;

	if (ah->type != RDMA_AH_ATTR_TYPE_ROCE ||
	    !(rdma_ah_get_ah_flags(ah) & IB_AH_GRH)) {
		ibdev_dbg(ibdev, "QP: AV of RoCE with a GRH only\n");
		return -EINVAL;
	}
	grh = rdma_ah_read_grh(ah);
	if (!grh->sgid_attr || !is_valid_ether_addr(ah->roce.dmac)) {
		ibdev_dbg(ibdev, "QP: AV without source GID or bad MAC %pM\n",
			  ah->roce.dmac);
		return -EINVAL;
	}
	memcpy(a->dgid, grh->dgid.raw, sizeof(a->dgid));
	memcpy(a->sgid, grh->sgid_attr->gid.raw, sizeof(a->sgid));
	ether_addr_copy(a->dmac, ah->roce.dmac);
	a->hop_limit = grh->hop_limit;
	a->traffic_class = grh->traffic_class;
	a->flow_label = cpu_to_le32(grh->flow_label);
	return 0;
}

static void uz_wq_reset(struct uz_wq *wq)
{
	unsigned long flags;

	spin_lock_irqsave(&wq->lock, flags);
	wq->pi = 0;
	wq->ci = 0;
	spin_unlock_irqrestore(&wq->lock, flags);
}

int uz_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		 struct ib_udata *udata)
{
	struct uz_qp *qp = to_uz_qp(ibqp);
	struct uz_dev *uz = ibdev_to_uz(ibqp->device);
	struct uz_admin_cmd cmd = { .opcode = UZ_CMD_MODIFY_QP };
	struct uz_cmd_modify_qp *c = (struct uz_cmd_modify_qp *)cmd.raw;
	enum ib_qp_state cur, new;
	struct uz_qp_attr *a;
	dma_addr_t dma;
	u32 uz_mask = 0;
	int i, err;

	if (mask & ~UZ_QP_MODIFY_MASK) {
		ibdev_dbg(ibqp->device, "QP: modify mask 0x%x not supported\n",
			  mask & ~UZ_QP_MODIFY_MASK);
		return -EOPNOTSUPP;
	}
	if (qp->type == UZ_QPT_RSS) {
		ibdev_dbg(ibqp->device, "QP %u: an RSS QP has no states\n",
			  qp->qpn);
		return -EOPNOTSUPP;
	}
	cur = (mask & IB_QP_CUR_STATE) ? attr->cur_qp_state : READ_ONCE(qp->state);
	new = (mask & IB_QP_STATE) ? attr->qp_state : cur;
	if (!ib_modify_qp_is_ok(cur, new, ibqp->qp_type, mask)) {
		ibdev_dbg(ibqp->device,
			  "QP %u: state %d -> %d with mask 0x%x not allowed\n",
			  qp->qpn, cur, new, mask);
		return -EINVAL;
	}
	/*
	 * Access flags the device has no use for (flush, relaxed ordering,
	 * ...) are ignored, as other RDMA drivers do; unknown bits are not.
	 */
	if ((mask & IB_QP_ACCESS_FLAGS) &&
	    (attr->qp_access_flags & ~IB_ACCESS_SUPPORTED)) {
		ibdev_dbg(ibqp->device, "QP access flags 0x%x not supported\n",
			  attr->qp_access_flags);
		return -EINVAL;
	}

	a = dma_alloc_coherent(&uz->pdev->dev, sizeof(*a), &dma, GFP_KERNEL);
	if (!a)
		return -ENOMEM;
	for (i = 0; i < ARRAY_SIZE(uz_qp_masks); i++)
		if (mask & uz_qp_masks[i].ib)
			uz_mask |= uz_qp_masks[i].uz;
	/*
	 * The device wants the port at RESET->INIT for every type; ib_core
	 * does not require it for the GSI QP (ib_mad leaves it out).
	 */
	if (cur == IB_QPS_RESET && new == IB_QPS_INIT &&
	    !(mask & IB_QP_PORT))
		uz_mask |= UZ_QP_ATTR_PORT;
	a->state = new;
	a->path_mtu = attr->path_mtu;
	a->timeout = attr->timeout;
	a->retry_cnt = attr->retry_cnt;
	a->rnr_retry = attr->rnr_retry;
	a->min_rnr_timer = attr->min_rnr_timer;
	a->max_rd_atomic = attr->max_rd_atomic;
	a->max_dest_rd_atomic = attr->max_dest_rd_atomic;
	a->access_flags = cpu_to_le32(attr->qp_access_flags &
				      (IB_ACCESS_LOCAL_WRITE |
				       IB_ACCESS_REMOTE_WRITE |
				       IB_ACCESS_REMOTE_READ |
				       IB_ACCESS_REMOTE_ATOMIC));
	a->sq_psn = cpu_to_le32(attr->sq_psn & 0xffffff);
	a->rq_psn = cpu_to_le32(attr->rq_psn & 0xffffff);
	a->dest_qpn = cpu_to_le32(attr->dest_qp_num & 0xffffff);
	a->qkey = cpu_to_le32(attr->qkey);
	a->pkey_index = cpu_to_le16(attr->pkey_index);
	a->port = (mask & IB_QP_PORT) ? attr->port_num : 1;
	if (mask & IB_QP_AV) {
		err = uz_qp_av(ibqp->device, a, &attr->ah_attr);
		if (err)
			goto out;
	}
	c->buf_addr = cpu_to_le64(dma);
	c->qpn = cpu_to_le32(qp->qpn);
	c->attr_mask = cpu_to_le32(uz_mask);
	c->uctx = cpu_to_le32(qp->uctx);
	err = uz_admin_exec(uz, &cmd, NULL);
	if (err)
		goto out;
	WRITE_ONCE(qp->state, new);
	if (mask & IB_QP_AV)
		qp->sgid_index = rdma_ah_read_grh(&attr->ah_attr)->sgid_index;
	/* The device restarts every index at 0 after RESET. */
	if (new == IB_QPS_RESET && !qp->uctx) {
		if (uz_qp_has_sq(qp))
			uz_wq_reset(&qp->sq);
		if (uz_qp_has_rq(qp))
			uz_wq_reset(&qp->rq);
	}
out:
	dma_free_coherent(&uz->pdev->dev, sizeof(*a), a, dma);
	return err;
}

int uz_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		struct ib_qp_init_attr *init)
{
	struct uz_qp *qp = to_uz_qp(ibqp);
	struct uz_dev *uz = ibdev_to_uz(ibqp->device);
	struct uz_admin_cmd cmd = { .opcode = UZ_CMD_QUERY_QP };
	struct uz_cmd_query *c = (struct uz_cmd_query *)cmd.raw;
	struct uz_qp_attr *a;
	dma_addr_t dma;
	int err;

	a = dma_alloc_coherent(&uz->pdev->dev, sizeof(*a), &dma, GFP_KERNEL);
	if (!a)
		return -ENOMEM;
	c->buf_addr = cpu_to_le64(dma);
	c->buf_len = cpu_to_le32(sizeof(*a));
	c->handle = cpu_to_le32(qp->qpn);
	c->uctx = cpu_to_le32(qp->uctx);
	err = uz_admin_exec(uz, &cmd, NULL);
	if (err)
		goto out;

	memset(attr, 0, sizeof(*attr));
	attr->qp_state = a->state;
	attr->cur_qp_state = a->state;
	WRITE_ONCE(qp->state, a->state);
	attr->path_mtu = a->path_mtu ? a->path_mtu : IB_MTU_1024;
	attr->timeout = a->timeout;
	attr->retry_cnt = a->retry_cnt;
	attr->rnr_retry = a->rnr_retry;
	attr->min_rnr_timer = a->min_rnr_timer;
	attr->max_rd_atomic = a->max_rd_atomic;
	attr->max_dest_rd_atomic = a->max_dest_rd_atomic;
	attr->qp_access_flags = le32_to_cpu(a->access_flags);
	attr->sq_psn = le32_to_cpu(a->sq_psn);
	attr->rq_psn = le32_to_cpu(a->rq_psn);
	attr->dest_qp_num = le32_to_cpu(a->dest_qpn);
	attr->qkey = le32_to_cpu(a->qkey);
	attr->pkey_index = le16_to_cpu(a->pkey_index);
	attr->port_num = a->port;
	attr->sq_draining = a->sq_draining;
	attr->cap = qp->cap;
	if (uz_qp_connected(qp)) {
		/* The device keeps the GID itself, the driver its index. */
		attr->ah_attr.type = RDMA_AH_ATTR_TYPE_ROCE;
		rdma_ah_set_port_num(&attr->ah_attr, 1);
		rdma_ah_set_grh(&attr->ah_attr, NULL,
				le32_to_cpu(a->flow_label), qp->sgid_index,
				a->hop_limit, a->traffic_class);
		rdma_ah_set_dgid_raw(&attr->ah_attr, a->dgid);
		memcpy(attr->ah_attr.roce.dmac, a->dmac, ETH_ALEN);
	}

	memset(init, 0, sizeof(*init));
	init->send_cq = ibqp->send_cq;
	init->recv_cq = ibqp->recv_cq;
	init->srq = ibqp->srq;
	init->xrcd = ibqp->xrcd;
	init->qp_type = ibqp->qp_type;
	init->cap = qp->cap;
	init->sq_sig_type = qp->sig_all ? IB_SIGNAL_ALL_WR : IB_SIGNAL_REQ_WR;
out:
	dma_free_coherent(&uz->pdev->dev, sizeof(*a), a, dma);
	return err;
}

/* ---- kernel posting ---- */

static int uz_wr_opcode(const struct uz_qp *qp, enum ib_wr_opcode op)
{
	if (qp->type != UZ_QPT_RC && op != IB_WR_SEND &&
	    op != IB_WR_SEND_WITH_IMM) {
		ibdev_dbg(qp->ibqp.device, "QP %u: opcode %d on RC QPs only\n",
			  qp->qpn, op);
		return -EINVAL;
	}
	switch (op) {
	case IB_WR_SEND:
		return UZ_WR_SEND;
	case IB_WR_SEND_WITH_IMM:
		return UZ_WR_SEND_IMM;
	case IB_WR_RDMA_WRITE:
		return UZ_WR_RDMA_WRITE;
	case IB_WR_RDMA_WRITE_WITH_IMM:
		return UZ_WR_RDMA_WRITE_IMM;
	case IB_WR_RDMA_READ:
		return UZ_WR_RDMA_READ;
	case IB_WR_ATOMIC_CMP_AND_SWP:
		return UZ_WR_ATOMIC_CMP_SWP;
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		return UZ_WR_ATOMIC_FETCH_ADD;
	case IB_WR_SEND_WITH_INV:
		return UZ_WR_SEND_INV;
	case IB_WR_LOCAL_INV:
		return UZ_WR_LOCAL_INV;
	case IB_WR_REG_MR:
		return UZ_WR_REG_MR;
	default:
		ibdev_dbg(qp->ibqp.device, "QP %u: opcode %d not supported\n",
			  qp->qpn, op);
		return -EINVAL;
	}
}

static int uz_build_send(struct uz_qp *qp, const struct ib_send_wr *wr,
			 struct uz_send_wqe *wqe)
{
	int op = uz_wr_opcode(qp, wr->opcode);
	u8 *body = (u8 *)(wqe + 1);	/* the AV, then SGEs or inline data */
	u32 len = 0;
	int i;

	if (op < 0)
		return op;
	memset(wqe, 0, sizeof(*wqe));
	wqe->wr_id = cpu_to_le64(wr->wr_id);
	wqe->opcode = op;
	if (wr->send_flags & IB_SEND_SIGNALED)
		wqe->flags |= UZ_WQE_F_SIGNALED;
	if (wr->send_flags & IB_SEND_SOLICITED)
		wqe->flags |= UZ_WQE_F_SOLICITED;
	if (wr->send_flags & IB_SEND_FENCE)
		wqe->flags |= UZ_WQE_F_FENCE;
	if (op == UZ_WR_SEND_IMM || op == UZ_WR_RDMA_WRITE_IMM)
		wqe->imm_data = (__force u32)wr->ex.imm_data;
	if (op == UZ_WR_SEND_INV || op == UZ_WR_LOCAL_INV)
		wqe->imm_data = cpu_to_le32(wr->ex.invalidate_rkey);

	switch (op) {
	case UZ_WR_LOCAL_INV:
		return 0;
	case UZ_WR_REG_MR:
		return uz_build_reg_mr(qp, reg_wr(wr), wqe);
	case UZ_WR_RDMA_WRITE:
	case UZ_WR_RDMA_WRITE_IMM:
	case UZ_WR_RDMA_READ:
		wqe->rkey = cpu_to_le32(rdma_wr(wr)->rkey);
		wqe->remote_addr = cpu_to_le64(rdma_wr(wr)->remote_addr);
		break;
	case UZ_WR_ATOMIC_CMP_SWP:
	case UZ_WR_ATOMIC_FETCH_ADD:
		wqe->rkey = cpu_to_le32(atomic_wr(wr)->rkey);
		wqe->remote_addr = cpu_to_le64(atomic_wr(wr)->remote_addr);
		wqe->atomic.compare_add = cpu_to_le64(atomic_wr(wr)->compare_add);
		wqe->atomic.swap = cpu_to_le64(atomic_wr(wr)->swap);
		break;
	default:
		if (qp->type != UZ_QPT_RC) {
			/* The AV travels in the WQE, after the header. */
			wqe->flags |= UZ_WQE_F_AV;
			memcpy(body, &to_uz_ah(ud_wr(wr)->ah)->av,
			       sizeof(struct uz_av));
			body += sizeof(struct uz_av);
			wqe->ud.remote_qpn = cpu_to_le32(ud_wr(wr)->remote_qpn);
			wqe->ud.remote_qkey = cpu_to_le32(ud_wr(wr)->remote_qkey);
		}
		break;
	}

	if (wr->send_flags & IB_SEND_INLINE) {
		u8 *dst = body;

		if (op == UZ_WR_RDMA_READ || op == UZ_WR_ATOMIC_CMP_SWP ||
		    op == UZ_WR_ATOMIC_FETCH_ADD) {
			ibdev_dbg(qp->ibqp.device,
				  "QP %u: opcode %d cannot be inline\n",
				  qp->qpn, wr->opcode);
			return -EINVAL;
		}
		/* Kernel inline SGEs carry kernel virtual addresses. */
		for (i = 0; i < wr->num_sge; i++) {
			if (wr->sg_list[i].length > qp->max_inline - len) {
				ibdev_dbg(qp->ibqp.device,
					  "QP %u: inline data over %u bytes\n",
					  qp->qpn, qp->max_inline);
				return -EINVAL;
			}
			memcpy(dst + len,
			       (void *)(uintptr_t)wr->sg_list[i].addr,
			       wr->sg_list[i].length);
			len += wr->sg_list[i].length;
		}
		wqe->flags |= UZ_WQE_F_INLINE;
		wqe->inline_len = cpu_to_le32(len);
		return 0;
	}

	if (wr->num_sge > qp->sq.max_sge) {
		ibdev_dbg(qp->ibqp.device, "QP %u: %d send SGEs: at most %u\n",
			  qp->qpn, wr->num_sge, qp->sq.max_sge);
		return -EINVAL;
	}
	for (i = 0; i < wr->num_sge; i++) {
		struct uz_sge *sge = (struct uz_sge *)body + i;

		sge->addr = cpu_to_le64(wr->sg_list[i].addr);
		sge->length = cpu_to_le32(wr->sg_list[i].length);
		sge->lkey = cpu_to_le32(wr->sg_list[i].lkey);
	}
	wqe->num_sge = wr->num_sge;
	return 0;
}

int uz_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		 const struct ib_send_wr **bad_wr)
{
	struct uz_qp *qp = to_uz_qp(ibqp);
	struct uz_dev *uz = ibdev_to_uz(ibqp->device);
	struct uz_wq *sq = &qp->sq;
	unsigned long flags;
	u32 start;
	int err = 0;

	if (!uz_qp_has_sq(qp)) {
		ibdev_dbg(ibqp->device, "QP %u: an XRC target QP has no SQ\n",
			  qp->qpn);
		*bad_wr = wr;
		return -EINVAL;
	}
	if (!qp->sq_slots) {
		/* user QPs post from the provider */
		ibdev_dbg(ibqp->device, "QP %u: a user QP, no posting here\n",
			  qp->qpn);
		return -EOPNOTSUPP;
	}
	spin_lock_irqsave(&sq->lock, flags);
	start = sq->pi;
	if (READ_ONCE(qp->state) == IB_QPS_RESET) {
		/* The device refuses doorbells in RESET. */
		ibdev_dbg(ibqp->device, "QP %u: post_send in RESET\n", qp->qpn);
		err = -EINVAL;
		goto out;
	}
	for (; wr; wr = wr->next) {
		struct uz_sq_slot *slot;

		if (uz_wq_full(sq)) {
			ibdev_dbg(ibqp->device,
				  "QP %u: send queue full (%u WRs)\n",
				  qp->qpn, uz_wq_depth(sq));
			err = -ENOMEM;
			break;
		}
		err = uz_build_send(qp, wr, uz_wq_slot(sq, sq->pi));
		if (err)
			break;
		slot = &qp->sq_slots[sq->pi & (uz_wq_depth(sq) - 1)];
		slot->wr_id = wr->wr_id;
		slot->signaled = qp->sig_all ||
				 (wr->send_flags & IB_SEND_SIGNALED);
		sq->pi = (sq->pi + 1) & UZ_DB_PI_MASK;
	}
out:
	if (sq->pi != start) {
		/* The WQEs are in memory before the device hears of them. */
		dma_wmb();
		uz_ring_db(uz, sq->db, sq->pi);
	}
	spin_unlock_irqrestore(&sq->lock, flags);
	if (err)
		*bad_wr = wr;
	return err;
}

static int uz_post_rq(struct ib_device *ibdev, const char *what, u32 num,
		      struct uz_wq *wq, const struct ib_recv_wr *wr,
		      const struct ib_recv_wr **bad_wr)
{
	struct uz_dev *uz = ibdev_to_uz(ibdev);
	unsigned long flags;
	u32 start;
	int err = 0;
	int i;

	spin_lock_irqsave(&wq->lock, flags);
	start = wq->pi;
	for (; wr; wr = wr->next) {
		struct uz_recv_wqe *wqe;
		struct uz_sge *sge;

		if (uz_wq_full(wq)) {
			ibdev_dbg(ibdev, "%s %u: receive queue full (%u WRs)\n",
				  what, num, uz_wq_depth(wq));
			err = -ENOMEM;
			break;
		}
		if (wr->num_sge > wq->max_sge) {
			ibdev_dbg(ibdev, "%s %u: %d recv SGEs: at most %u\n",
				  what, num, wr->num_sge, wq->max_sge);
			err = -EINVAL;
			break;
		}
		wqe = uz_wq_slot(wq, wq->pi);
		memset(wqe, 0, sizeof(*wqe));
		wqe->wr_id = cpu_to_le64(wr->wr_id);
		wqe->num_sge = wr->num_sge;
		sge = (struct uz_sge *)(wqe + 1);
		for (i = 0; i < wr->num_sge; i++) {
			sge[i].addr = cpu_to_le64(wr->sg_list[i].addr);
			sge[i].length = cpu_to_le32(wr->sg_list[i].length);
			sge[i].lkey = cpu_to_le32(wr->sg_list[i].lkey);
		}
		wq->pi = (wq->pi + 1) & UZ_DB_PI_MASK;
	}
	if (wq->pi != start) {
		dma_wmb();
		uz_ring_db(uz, wq->db, wq->pi);
	}
	spin_unlock_irqrestore(&wq->lock, flags);
	if (err)
		*bad_wr = wr;
	return err;
}

int uz_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		 const struct ib_recv_wr **bad_wr)
{
	struct uz_qp *qp = to_uz_qp(ibqp);

	if (!uz_qp_receives(qp)) {
		ibdev_dbg(ibqp->device, "QP %u: an XRC QP has no RQ\n",
			  qp->qpn);
		*bad_wr = wr;
		return -EINVAL;
	}
	if (qp->uctx) {
		ibdev_dbg(ibqp->device, "QP %u: a user QP, no posting here\n",
			  qp->qpn);
		return -EOPNOTSUPP;
	}
	if (qp->srq || READ_ONCE(qp->state) == IB_QPS_RESET) {
		ibdev_dbg(ibqp->device, "QP %u: post_recv %s\n", qp->qpn,
			  qp->srq ? "on a QP with an SRQ" : "in RESET");
		*bad_wr = wr;
		return -EINVAL;
	}
	return uz_post_rq(ibqp->device, "QP", qp->qpn, &qp->rq, wr, bad_wr);
}

/*
 * A send CQE of a kernel QP (poll_cq, CQ lock held): a flushed WQE frees
 * exactly one slot; otherwise the CQE frees every slot up to the first
 * signalled (or, for an error, any) slot with its wr_id.
 */
void uz_qp_send_done(struct uz_qp *qp, const struct uz_cqe *cqe)
{
	struct uz_wq *sq = &qp->sq;
	u64 wr_id = le64_to_cpu(cqe->wr_id);
	u32 i;

	if (!qp->sq_slots)
		return;
	spin_lock(&sq->lock);
	if (cqe->status == UZ_WC_STATUS_WR_FLUSH_ERR) {
		if (sq->ci != sq->pi)
			sq->ci = (sq->ci + 1) & UZ_DB_PI_MASK;
		goto out;
	}
	for (i = sq->ci; i != sq->pi; i = (i + 1) & UZ_DB_PI_MASK) {
		struct uz_sq_slot *s = &qp->sq_slots[i & (uz_wq_depth(sq) - 1)];

		if (s->wr_id == wr_id &&
		    (s->signaled || cqe->status != UZ_WC_STATUS_SUCCESS)) {
			sq->ci = (i + 1) & UZ_DB_PI_MASK;
			break;
		}
	}
out:
	spin_unlock(&sq->lock);
}

static void uz_wq_recv_done(struct uz_wq *wq)
{
	spin_lock(&wq->lock);
	if (wq->ci != wq->pi)
		wq->ci = (wq->ci + 1) & UZ_DB_PI_MASK;
	spin_unlock(&wq->lock);
}

/* A receive CQE of a kernel QP: its RQ (or SRQ) completes in order. */
void uz_qp_recv_done(struct uz_qp *qp)
{
	if (qp->uctx || !uz_qp_receives(qp))
		return;
	uz_wq_recv_done(qp->srq ? &qp->srq->rq : &qp->rq);
}

/*
 * A receive CQE through an XRC target QP (UZ_WC_F_XRC, poll_cq with the
 * CQ's lock): the XRC SRQ it names completes in order.  Safe without a
 * reference: destroy_srq syncs with the lock of the SRQ's CQ, the only
 * CQ its CQEs reach.
 */
void uz_srq_recv_done(struct uz_ibdev *ib, u32 srqn)
{
	struct uz_srq *srq = xa_load(&ib->srq_xa, srqn);

	if (srq && !srq->uctx && srq->ibsrq.srq_type == IB_SRQT_XRC)
		uz_wq_recv_done(&srq->rq);
}

/* ---- SRQs ---- */

/* A TM SRQ's list operation, as the ring holds it. */
#define UZ_TM_OP_LOG_SIZE	6
static_assert(sizeof(struct uz_tm_op) == BIT(UZ_TM_OP_LOG_SIZE));

/*
 * The tag matching fields of a CREATE_SRQ command @c (device spec 8.19):
 * the CQ that ib_core passes in init->ext (uz_srq_ext_cq), the tag list of
 * init->ext.tag_matching.max_num_tags entries, and an operation ring of
 * 2^@ops_log, which the provider sized from its ibv_srq_init_attr_ex.
 */
static int uz_tm_srq_cmd(struct uz_srq *srq, struct ib_srq_init_attr *init,
			 u32 ops_log, struct uz_cmd_create_srq *c)
{
	struct ib_device *ibdev = srq->ibsrq.device;
	struct uz_dev *uz = ibdev_to_uz(ibdev);
	u32 max_tags = le32_to_cpu(uz->attr.max_tm_tags);
	u32 max_ops = le32_to_cpu(uz->attr.max_tm_ops);
	u32 tags = init->ext.tag_matching.max_num_tags;
	struct uz_cq *cq;

	if (!(uz->caps & UZ_CAP_TM)) {
		ibdev_dbg(ibdev, "SRQ: tag matching not supported\n");
		return -EOPNOTSUPP;
	}
	cq = uz_srq_ext_cq(srq, init);
	if (IS_ERR(cq))
		return PTR_ERR(cq);
	if (!tags || tags > max_tags) {
		ibdev_dbg(ibdev, "SRQ: %u tags: 1 .. %u\n", tags, max_tags);
		return -EINVAL;
	}
	if (!ops_log || ops_log > 31 || BIT(ops_log) > max_ops) {
		ibdev_dbg(ibdev, "SRQ: TM operation ring of 2^%u: 2 .. %u\n",
			  ops_log, max_ops);
		return -EINVAL;
	}
	srq->ops.log_depth = ops_log;
	srq->ops.log_wqe = UZ_TM_OP_LOG_SIZE;
	c->flags = UZ_SRQF_TM;
	c->cqn = cpu_to_le32(cq->cqn);
	c->max_tags = cpu_to_le16(tags);
	c->ops_log_depth = ops_log;
	return 0;
}

int uz_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
		  struct ib_udata *udata)
{
	struct uz_srq *srq = to_uz_srq(ibsrq);
	struct uz_ibdev *ib = to_uzib(ibsrq->device);
	struct uz_dev *uz = ib->uz;
	struct uz_admin_cmd cmd = { .opcode = UZ_CMD_CREATE_SRQ };
	struct uz_cmd_create_srq *c = (struct uz_cmd_create_srq *)cmd.raw;
	struct uzura_create_srq_resp resp = {};
	struct uzura_create_srq ucmd = {};
	struct ib_srq_attr *attr = &init->attr;
	struct uz_admin_cqe cqe;
	u64 key = 0, ops_key = 0;
	u32 need;
	int log, err;

	srq->uctx = uz_udata_uctx(udata);
	if (init->srq_type == IB_SRQT_XRC) {
		err = uz_xrc_srq_cmd(srq, init, c);
		if (err)
			return err;
	} else if (init->srq_type == IB_SRQT_TM) {
		/* Only the provider drives an operation ring. */
		if (!udata) {
			ibdev_dbg(ibsrq->device,
				  "SRQ: kernel TM SRQs not supported\n");
			return -EOPNOTSUPP;
		}
	} else if (init->srq_type != IB_SRQT_BASIC) {
		ibdev_dbg(ibsrq->device, "SRQ type %d not supported\n",
			  init->srq_type);
		return -EOPNOTSUPP;
	}
	if (attr->max_sge > le32_to_cpu(uz->attr.max_sge)) {
		ibdev_dbg(ibsrq->device, "SRQ of %u SGEs: at most %u\n",
			  attr->max_sge, le32_to_cpu(uz->attr.max_sge));
		return -EINVAL;
	}
	log = uz_log_depth(ibsrq->device, "SRQ", attr->max_wr,
			   le32_to_cpu(uz->attr.max_srq_wr));
	if (log < 0)
		return log;
	srq->rq.log_depth = log;
	if (attr->srq_limit >= uz_wq_depth(&srq->rq)) {
		ibdev_dbg(ibsrq->device, "SRQ limit %u: below %u\n",
			  attr->srq_limit, uz_wq_depth(&srq->rq));
		return -EINVAL;
	}
	need = sizeof(struct uz_recv_wqe) + attr->max_sge * sizeof(struct uz_sge);
	srq->rq.log_wqe = max_t(u32, order_base_2(need), UZ_RQ_LOG_WQE_MIN);
	if (udata && udata->inlen) {
		if (!uz_udata_known(ibsrq->device, udata, sizeof(ucmd), "SRQ"))
			return -EOPNOTSUPP;
		err = ib_copy_from_udata(&ucmd, udata,
					 min(udata->inlen, sizeof(ucmd)));
		if (err)
			return err;
		if (ucmd.comp_mask || ucmd.reserved) {
			ibdev_dbg(ibsrq->device,
				  "SRQ comp_mask 0x%x unknown, reserved 0x%x\n",
				  ucmd.comp_mask, ucmd.reserved);
			return -EINVAL;
		}
		if (ucmd.log_wqe)
			srq->rq.log_wqe = ucmd.log_wqe;
	}
	if (init->srq_type == IB_SRQT_TM) {
		err = uz_tm_srq_cmd(srq, init, ucmd.ops_log_depth, c);
		if (err)
			return err;
	} else if (ucmd.ops_log_depth) {
		ibdev_dbg(ibsrq->device,
			  "SRQ: TM operation ring of 2^%u for SRQ type %d\n",
			  ucmd.ops_log_depth, init->srq_type);
		return -EINVAL;
	}
	if (srq->rq.log_wqe < UZ_RQ_LOG_WQE_MIN ||
	    srq->rq.log_wqe > UZ_RQ_LOG_WQE_MAX) {
		ibdev_dbg(ibsrq->device, "SRQ: log WQE size %u: %u..%u\n",
			  srq->rq.log_wqe, UZ_RQ_LOG_WQE_MIN, UZ_RQ_LOG_WQE_MAX);
		return -EINVAL;
	}
	srq->rq.max_sge = min_t(u32, le32_to_cpu(uz->attr.max_sge),
				((1u << srq->rq.log_wqe) - sizeof(struct uz_recv_wqe)) /
				sizeof(struct uz_sge));
	srq->limit = attr->srq_limit;
	mutex_init(&srq->resize_mutex);
	uz_obj_ref_init(&srq->ref);

	err = uz_wq_alloc(uz, &srq->rq, udata, &key);
	if (err)
		return err;
	if (init->srq_type == IB_SRQT_TM) {
		err = uz_wq_alloc(uz, &srq->ops, udata, &ops_key);
		if (err)
			goto err_wq;
		c->ops_addr = cpu_to_le64(srq->ops.ring.dma);
	}
	c->ring_addr = cpu_to_le64(srq->rq.ring.dma);
	c->uctx = cpu_to_le32(srq->uctx);
	c->pdn = cpu_to_le32(to_uz_pd(ibsrq->pd)->pdn);
	c->limit = cpu_to_le32(srq->limit);
	c->log_depth = srq->rq.log_depth;
	c->log_wqe_size = srq->rq.log_wqe;
	err = uz_admin_exec(uz, &cmd, &cqe);
	if (err)
		goto err_wq;
	srq->srqn = le32_to_cpu(cqe.out0);
	srq->rq.db = le32_to_cpu(cqe.out1);
	if (init->srq_type == IB_SRQT_TM)
		srq->ops.db = le32_to_cpu(cqe.out2);
	/* uverbs answers create_srq with it; XRC senders name the SRQ so. */
	if (init->srq_type == IB_SRQT_XRC)
		ibsrq->ext.xrc.srq_num = srq->srqn;

	err = xa_insert_bh(&ib->srq_xa, srq->srqn, srq, GFP_KERNEL);
	if (err)
		goto err_destroy;
	attr->max_wr = uz_wq_depth(&srq->rq);
	attr->max_sge = srq->rq.max_sge;

	if (udata) {
		resp.srqn = srq->srqn;
		resp.ring_mmap_key = key;
		resp.ring_size = uz_wq_map_size(&srq->rq);
		resp.log_depth = srq->rq.log_depth;
		resp.log_wqe = srq->rq.log_wqe;
		resp.db_offset = uz_db_page_off(srq->rq.db);
		if (init->srq_type == IB_SRQT_TM) {
			resp.ops_mmap_key = ops_key;
			resp.ops_size = uz_wq_map_size(&srq->ops);
			resp.ops_db_offset = uz_db_page_off(srq->ops.db);
		}
		err = ib_copy_to_udata(udata, &resp,
				       min(udata->outlen, sizeof(resp)));
		if (err)
			goto err_xa;
	}
	return 0;

err_xa:
	xa_erase_bh(&ib->srq_xa, srq->srqn);
	uz_obj_ref_wait(&srq->ref);
err_destroy:
	uz_obj_cmd(uz, UZ_CMD_DESTROY_SRQ, srq->srqn, srq->uctx);
err_wq:
	uz_wq_free(uz, &srq->ops);
	uz_wq_free(uz, &srq->rq);
	return err;
}

/* Arm (or disarm, with 0) the SRQ limit event below @limit WQEs. */
static int uz_srq_limit(struct uz_srq *srq, u32 limit)
{
	struct ib_device *ibdev = srq->ibsrq.device;
	struct uz_admin_cmd cmd = { .opcode = UZ_CMD_MODIFY_SRQ };
	struct uz_cmd_modify_srq *c = (struct uz_cmd_modify_srq *)cmd.raw;
	int err;

	if (limit >= uz_wq_depth(&srq->rq)) {
		ibdev_dbg(ibdev, "SRQ limit %u: below %u\n", limit,
			  uz_wq_depth(&srq->rq));
		return -EINVAL;
	}
	c->srqn = cpu_to_le32(srq->srqn);
	c->limit = cpu_to_le32(limit);
	c->uctx = cpu_to_le32(srq->uctx);
	err = uz_admin_exec(ibdev_to_uz(ibdev), &cmd, NULL);
	if (!err)
		WRITE_ONCE(srq->limit, limit);
	return err;
}

/* The kernel's view of a ring it handed to the process. */
static void *uz_wq_user_buf(struct uz_wq *wq)
{
	return container_of(wq->mmap, struct uz_mmap_entry, rdma)->ring.buf;
}

/*
 * Resize a user SRQ (device spec 8.8.1), with its limit if @mask has
 * IB_SRQ_LIMIT: a new ring holding the WQEs the provider posted and has
 * not seen complete, at the slots their indices select, mapped for the
 * process, which the device then continues in.  One command moves the
 * device and sets the limit, so a failure changes nothing.  Kernel ULPs
 * never resize their SRQs, so a kernel SRQ cannot be.
 */
static int uz_srq_resize(struct uz_srq *srq, const struct ib_srq_attr *attr,
			 enum ib_srq_attr_mask mask, struct ib_udata *udata)
{
	struct ib_device *ibdev = srq->ibsrq.device;
	struct uz_dev *uz = ibdev_to_uz(ibdev);
	struct uz_admin_cmd cmd = { .opcode = UZ_CMD_RESIZE_SRQ };
	struct uz_cmd_resize_srq *c = (struct uz_cmd_resize_srq *)cmd.raw;
	struct uzura_modify_srq_resp resp = {};
	struct uzura_modify_srq req = {};
	struct uz_wq nw = srq->rq;
	u32 n, i, old_mask, new_mask, limit;
	void *from, *to;
	u64 key;
	int log, err;

	if (!(uz->caps & UZ_CAP_SRQ_RESIZE) || !srq->uctx) {
		ibdev_dbg(ibdev, "SRQ %u: resize of a %s SRQ not supported\n",
			  srq->srqn, srq->uctx ? "user" : "kernel");
		return -EOPNOTSUPP;
	}
	if (udata->inlen < sizeof(req)) {
		ibdev_dbg(ibdev, "SRQ %u resize: %zu bytes of driver data\n",
			  srq->srqn, udata->inlen);
		return -EINVAL;
	}
	err = ib_copy_from_udata(&req, udata, sizeof(req));
	if (err)
		return err;
	n = (req.pi - req.ci) & UZ_DB_PI_MASK;
	log = uz_log_depth(ibdev, "SRQ", attr->max_wr,
			   le32_to_cpu(uz->attr.max_srq_wr));
	if (log < 0)
		return log;
	limit = mask & IB_SRQ_LIMIT ? attr->srq_limit : READ_ONCE(srq->limit);
	if (req.comp_mask || n > uz_wq_depth(&srq->rq) || n > BIT(log) ||
	    limit >= BIT(log)) {
		ibdev_dbg(ibdev,
			  "SRQ %u resize to %lu: comp_mask 0x%x, %u posted, limit %u\n",
			  srq->srqn, BIT(log), req.comp_mask, n, limit);
		return -EINVAL;
	}

	nw.log_depth = log;
	err = uz_wq_alloc(uz, &nw, udata, &key);
	if (err)
		return err;
	from = uz_wq_user_buf(&srq->rq);
	to = uz_wq_user_buf(&nw);
	old_mask = uz_wq_depth(&srq->rq) - 1;
	new_mask = uz_wq_depth(&nw) - 1;
	for (i = req.ci; i != req.pi; i = (i + 1) & UZ_DB_PI_MASK)
		memcpy(to + ((size_t)(i & new_mask) << nw.log_wqe),
		       from + ((size_t)(i & old_mask) << nw.log_wqe),
		       BIT(nw.log_wqe));
	/* The answer first: once the device moves there is no going back. */
	resp.ring_size = uz_wq_map_size(&nw);
	resp.ring_mmap_key = key;
	resp.log_depth = log;
	if (copy_to_user(u64_to_user_ptr(req.resp_addr), &resp,
			 sizeof(resp))) {
		err = -EFAULT;
		goto err_wq;
	}
	c->ring_addr = cpu_to_le64(nw.ring.dma);
	c->srqn = cpu_to_le32(srq->srqn);
	c->uctx = cpu_to_le32(srq->uctx);
	c->log_depth = log;
	if (mask & IB_SRQ_LIMIT) {
		c->flags = UZ_SRQ_RESIZE_LIMIT;
		c->limit = cpu_to_le32(limit);
	}
	err = uz_admin_exec(uz, &cmd, NULL);
	if (err)
		goto err_wq;
	uz_wq_free(uz, &srq->rq);
	srq->rq.ring = nw.ring;
	srq->rq.mmap = nw.mmap;
	srq->rq.log_depth = log;
	if (mask & IB_SRQ_LIMIT)
		WRITE_ONCE(srq->limit, limit);
	return 0;

err_wq:
	ibdev_dbg(ibdev, "SRQ %u resize to %lu: %d\n", srq->srqn, BIT(log),
		  err);
	uz_wq_free(uz, &nw);
	return err;
}

int uz_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		  enum ib_srq_attr_mask mask, struct ib_udata *udata)
{
	struct uz_srq *srq = to_uz_srq(ibsrq);
	int err;

	if (mask & ~(IB_SRQ_LIMIT | IB_SRQ_MAX_WR)) {
		ibdev_dbg(ibsrq->device, "SRQ: modify mask 0x%x not supported\n",
			  mask & ~(IB_SRQ_LIMIT | IB_SRQ_MAX_WR));
		return -EOPNOTSUPP;
	}
	/* The limit is checked against the depth, which a resize changes. */
	mutex_lock(&srq->resize_mutex);
	if (mask & IB_SRQ_MAX_WR)
		err = uz_srq_resize(srq, attr, mask, udata);
	else if (mask & IB_SRQ_LIMIT)
		err = uz_srq_limit(srq, attr->srq_limit);
	else
		err = 0;
	mutex_unlock(&srq->resize_mutex);
	return err;
}

int uz_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr)
{
	struct uz_srq *srq = to_uz_srq(ibsrq);

	attr->max_wr = uz_wq_depth(&srq->rq);
	attr->max_sge = srq->rq.max_sge;
	attr->srq_limit = READ_ONCE(srq->limit);
	return 0;
}

int uz_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata)
{
	struct uz_srq *srq = to_uz_srq(ibsrq);
	struct uz_ibdev *ib = to_uzib(ibsrq->device);
	int err;

	err = uz_obj_destroy(ib->uz, &ib->srq_xa, srq, &srq->ref,
			     UZ_CMD_DESTROY_SRQ, srq->srqn, srq->uctx);
	if (err == -EBUSY)
		return err;	/* still used by a QP: the SRQ stays */
	/* A poll of its CQ may have it from a CQE (uz_srq_recv_done). */
	if (ibsrq->srq_type == IB_SRQT_XRC)
		uz_cq_sync(ibsrq->ext.cq);
	if (err) {
		dev_err(&ib->uz->pdev->dev, "destroying SRQ %u failed: %d\n",
			srq->srqn, err);
		return 0;
	}
	uz_wq_free(ib->uz, &srq->ops);
	uz_wq_free(ib->uz, &srq->rq);
	return 0;
}

int uz_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
		     const struct ib_recv_wr **bad_wr)
{
	struct uz_srq *srq = to_uz_srq(ibsrq);

	if (srq->uctx) {
		ibdev_dbg(ibsrq->device, "SRQ %u: a user SRQ, no posting here\n",
			  srq->srqn);
		return -EOPNOTSUPP;
	}
	return uz_post_rq(ibsrq->device, "SRQ", srq->srqn, &srq->rq, wr,
			  bad_wr);
}
