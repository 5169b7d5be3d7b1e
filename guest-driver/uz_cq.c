// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * uzura RDMA NIC driver: completion queues.
 *
 * A CQ is a ring of 32-byte CQEs the device writes, valid when the phase
 * bit matches the pass of the ring.  User CQs are polled by the provider
 * in the process; the kernel polls its own CQs here, frees the SQ/RQ slots
 * of kernel QPs as their completions come in, and reports its consumer
 * index through the CQ doorbell (the device refuses to overwrite entries
 * not yet consumed, spec 8.5).  A user CQ that asks for completion
 * timestamps has 64-byte entries (struct uz_cqe_ts, UZ_CQF_TIMESTAMP),
 * which only the provider reads; kernel CQs never have them.
 */
#include <linux/dma-mapping.h>
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>
#include <rdma/uzura-abi.h>

#include "uz.h"

/* The device's CQ flags for @cq's ring (CREATE_CQ, RESIZE_CQ). */
static u8 uz_cq_flags(const struct uz_cq *cq)
{
	u8 flags = UZ_CQF_PAGE_LIST;

	if (cq->cqe_size == sizeof(struct uz_cqe_ts))
		flags |= UZ_CQF_TIMESTAMP;
	return flags;
}

int uz_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		 struct uverbs_attr_bundle *attrs)
{
	struct ib_udata *udata = attrs ? &attrs->driver_udata : NULL;
	struct uz_cq *cq = to_uz_cq(ibcq);
	struct uz_ibdev *ib = to_uzib(ibcq->device);
	struct uz_dev *uz = ib->uz;
	struct uz_admin_cmd cmd = { .opcode = UZ_CMD_CREATE_CQ };
	struct uz_cmd_create_cq *c = (struct uz_cmd_create_cq *)cmd.raw;
	u32 max_cqe = le32_to_cpu(uz->attr.max_cqe);
	struct uzura_create_cq_resp resp = {};
	struct uz_admin_cqe cqe;
	bool ts = attr->flags & IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION;
	u64 key = 0;
	u32 depth;
	int err;

	/* uverbs takes TIMESTAMP_COMPLETION and IGNORE_OVERRUN: no overruns. */
	if (attr->flags & ~IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION) {
		ibdev_dbg(ibcq->device, "CQ flags 0x%x not supported\n",
			  attr->flags);
		return -EOPNOTSUPP;
	}
	if (ts && !(uz->caps & UZ_CAP_TIMESTAMP)) {
		ibdev_dbg(ibcq->device,
			  "CQ timestamps: the device has no clock\n");
		return -EOPNOTSUPP;
	}
	if (ts && !udata) {
		ibdev_dbg(ibcq->device, "CQ timestamps: not for kernel CQs\n");
		return -EOPNOTSUPP;
	}
	if (!uz_udata_known(ibcq->device, udata, 0, "CQ"))
		return -EOPNOTSUPP;
	if (attr->cqe < 1 || attr->cqe > max_cqe) {
		ibdev_dbg(ibcq->device, "CQ of %u entries: 1..%u\n", attr->cqe,
			  max_cqe);
		return -EINVAL;
	}
	/* The device fills the whole ring: 2^n CQEs hold n entries. */
	depth = roundup_pow_of_two(max_t(u32, attr->cqe, 2));
	if (depth > max_cqe || ilog2(depth) > UZ_CQ_LOG_DEPTH_MAX) {
		ibdev_dbg(ibcq->device, "CQ of %u entries rounds to %u: 1..%u\n",
			  attr->cqe, depth, max_cqe);
		return -EINVAL;
	}

	cq->log_depth = ilog2(depth);
	cq->cqe_size = ts ? sizeof(struct uz_cqe_ts) : sizeof(struct uz_cqe);
	cq->uctx = uz_udata_uctx(udata);
	spin_lock_init(&cq->lock);
	mutex_init(&cq->resize_mutex);
	uz_obj_ref_init(&cq->ref);

	err = uz_pring_alloc(uz, &cq->ring, (size_t)depth * cq->cqe_size);
	if (err)
		return err;
	c->ring_addr = cpu_to_le64(cq->ring.pbl.dma);
	c->flags = uz_cq_flags(cq);
	resp.ring_size = cq->ring.size;
	if (udata) {
		cq->mmap = uz_pring_mmap(uz, udata, &cq->ring, &key);
		if (IS_ERR(cq->mmap)) {
			err = PTR_ERR(cq->mmap);
			cq->mmap = NULL;
			goto err_ring;
		}
	}

	c->uctx = cpu_to_le32(cq->uctx);
	c->eqn = cpu_to_le32(uz->eq.eqn);
	c->log_depth = cq->log_depth;
	err = uz_admin_exec(uz, &cmd, &cqe);
	if (err)
		goto err_ring;
	cq->cqn = le32_to_cpu(cqe.out0);
	cq->db = le32_to_cpu(cqe.out1);
	cq->ibcq.cqe = depth;

	err = xa_insert_bh(&ib->cq_xa, cq->cqn, cq, GFP_KERNEL);
	if (err)
		goto err_destroy;

	if (udata) {
		resp.cqn = cq->cqn;
		resp.ring_mmap_key = key;
		resp.log_depth = cq->log_depth;
		resp.db_offset = uz_db_page_off(cq->db);
		resp.cqe_size = cq->cqe_size;
		err = ib_copy_to_udata(udata, &resp,
				       min(udata->outlen, sizeof(resp)));
		if (err)
			goto err_xa;
	}
	return 0;

err_xa:
	xa_erase_bh(&ib->cq_xa, cq->cqn);
	uz_obj_ref_wait(&cq->ref);
err_destroy:
	uz_obj_cmd(uz, UZ_CMD_DESTROY_CQ, cq->cqn, cq->uctx);
err_ring:
	if (cq->mmap)
		rdma_user_mmap_entry_remove(cq->mmap);
	else
		uz_pring_free(uz, &cq->ring);
	return err;
}

int uz_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata)
{
	struct uz_cq *cq = to_uz_cq(ibcq);
	struct uz_ibdev *ib = to_uzib(ibcq->device);
	int err;

	err = uz_obj_destroy(ib->uz, &ib->cq_xa, cq, &cq->ref,
			     UZ_CMD_DESTROY_CQ, cq->cqn, cq->uctx);
	if (err == -EBUSY)
		return err;	/* still used by a QP: the CQ stays */
	if (err) {
		/* The device may still write the ring: leak it, not corrupt. */
		dev_err(&ib->uz->pdev->dev, "destroying CQ %u failed: %d\n",
			cq->cqn, err);
		return 0;
	}
	if (cq->mmap)
		rdma_user_mmap_entry_remove(cq->mmap);
	else
		uz_pring_free(ib->uz, &cq->ring);
	return 0;
}

static struct uz_cqe *uz_cq_next(struct uz_cq *cq);

/*
 * Kernel CQ (32-byte CQEs): copy the @kept CQEs from @ci on to the new
 * ring's start.
 */
static void uz_cq_move(struct uz_cq *cq, struct uz_pring *nr, u32 ci,
		       u32 kept)
{
	struct uz_cqe *old = cq->ring.buf, *new = nr->buf;
	u32 i;

	for (i = 0; i < kept; i++) {
		new[i] = old[(ci + i) & ((1u << cq->log_depth) - 1)];
		new[i].flags |= UZ_CQE_PHASE;	/* the first pass */
	}
}

/*
 * The CQ continues in a new ring (device spec 8.5.1).  The device keeps
 * the slots of the CQEs not yet consumed free in the new ring and the
 * consumer copies them there: the kernel for its CQs, stopping its
 * pollers meanwhile; the provider for a user CQ, holding its own lock.
 */
int uz_resize_cq(struct ib_cq *ibcq, int entries, struct ib_udata *udata)
{
	struct uz_cq *cq = to_uz_cq(ibcq);
	struct uz_dev *uz = ibdev_to_uz(ibcq->device);
	struct uz_admin_cmd cmd = { .opcode = UZ_CMD_RESIZE_CQ };
	struct uz_cmd_resize_cq *c = (struct uz_cmd_resize_cq *)cmd.raw;
	u32 max_cqe = le32_to_cpu(uz->attr.max_cqe), depth, kept;
	struct rdma_user_mmap_entry *mmap = NULL;
	struct uzura_resize_cq_resp resp = {};
	struct uzura_resize_cq req = {};
	struct uz_admin_cqe cqe;
	struct uz_pring ring;
	unsigned long flags;
	bool event = false;
	u64 key = 0;
	int err;

	if (!(uz->caps & UZ_CAP_CQ_RESIZE)) {
		ibdev_dbg(ibcq->device, "CQ %u: the device cannot resize CQs\n",
			  cq->cqn);
		return -EOPNOTSUPP;
	}
	depth = roundup_pow_of_two(max_t(u32, entries, 2));
	if (entries < 1 || depth > max_cqe ||
	    ilog2(depth) > UZ_CQ_LOG_DEPTH_MAX) {
		ibdev_dbg(ibcq->device, "CQ %u resized to %d entries: 1..%u\n",
			  cq->cqn, entries, max_cqe);
		return -EINVAL;
	}
	if (udata) {
		/* The answer must fit: the device moves before it is given. */
		if (udata->inlen < sizeof(req) || udata->outlen < sizeof(resp)) {
			ibdev_dbg(ibcq->device,
				  "CQ %u resize: %zu bytes in, %zu out\n",
				  cq->cqn, udata->inlen, udata->outlen);
			return -EINVAL;
		}
		err = ib_copy_from_udata(&req, udata, sizeof(req));
		if (err)
			return err;
		if (req.comp_mask) {
			ibdev_dbg(ibcq->device, "CQ %u resize: comp_mask 0x%x\n",
				  cq->cqn, req.comp_mask);
			return -EOPNOTSUPP;
		}
	}

	mutex_lock(&cq->resize_mutex);
	/* A timestamped CQ keeps its 64-byte CQEs (UZ_CQF_TIMESTAMP). */
	err = uz_pring_alloc(uz, &ring, (size_t)depth * cq->cqe_size);
	if (err)
		goto out;
	if (udata) {
		mmap = uz_pring_mmap(uz, udata, &ring, &key);
		if (IS_ERR(mmap)) {
			uz_pring_free(uz, &ring);
			err = PTR_ERR(mmap);
			goto out;
		}
	} else {
		spin_lock_irqsave(&cq->lock, flags);
		cq->resizing = true;
		req.ci = cq->ci;
		spin_unlock_irqrestore(&cq->lock, flags);
	}

	c->ring_addr = cpu_to_le64(ring.pbl.dma);
	c->cqn = cpu_to_le32(cq->cqn);
	c->uctx = cpu_to_le32(cq->uctx);
	c->ci = cpu_to_le32(req.ci);
	c->log_depth = ilog2(depth);
	c->flags = uz_cq_flags(cq);
	err = uz_admin_exec(uz, &cmd, &cqe);
	if (err == -ETIMEDOUT) {
		/* The device may still move: the CQ stays stopped, the ring kept. */
		dev_err(&uz->pdev->dev, "resizing CQ %u timed out\n", cq->cqn);
		goto out;
	}
	if (err) {
		ibdev_dbg(ibcq->device, "CQ %u resize to %u: %d\n", cq->cqn,
			  depth, err);
		if (mmap)
			rdma_user_mmap_entry_remove(mmap);
		else
			uz_pring_free(uz, &ring);
		mmap = NULL;
	}
	kept = err ? 0 : le32_to_cpu(cqe.out0);

	if (!udata) {
		struct uz_pring old = cq->ring;

		spin_lock_irqsave(&cq->lock, flags);
		if (!err) {
			uz_cq_move(cq, &ring, req.ci, kept);
			cq->ring = ring;
			cq->log_depth = ilog2(depth);
			cq->ci = 0;
		}
		cq->resizing = false;
		if (cq->arm_pending) {
			uz_ring_db(uz, cq->db, cq->ci | cq->arm_pending);
			/* Arming covers later CQEs only: these need an event. */
			event = uz_cq_next(cq) != NULL;
		}
		cq->arm_pending = 0;
		spin_unlock_irqrestore(&cq->lock, flags);
		if (!err)
			uz_pring_free(uz, &old);
		if (event && cq->ibcq.comp_handler)
			cq->ibcq.comp_handler(&cq->ibcq, cq->ibcq.cq_context);
	} else if (!err) {
		/* The process still maps the old ring: it goes at munmap. */
		rdma_user_mmap_entry_remove(cq->mmap);
		cq->mmap = mmap;
		cq->ring = ring;
		cq->log_depth = ilog2(depth);
		resp.kept = kept;
		resp.ring_mmap_key = key;
		resp.ring_size = ring.size;
		resp.log_depth = cq->log_depth;
		err = ib_copy_to_udata(udata, &resp, sizeof(resp));
	}
	if (!err)
		cq->ibcq.cqe = depth;
out:
	mutex_unlock(&cq->resize_mutex);
	return err;
}

/* Kernel CQ (32-byte CQEs): the CQE at the consumer index, if written. */
static struct uz_cqe *uz_cq_next(struct uz_cq *cq)
{
	struct uz_cqe *cqe;
	u8 phase;

	cqe = (struct uz_cqe *)cq->ring.buf + (cq->ci & ((1u << cq->log_depth) - 1));
	phase = ((cq->ci >> cq->log_depth) & 1) ? 0 : UZ_CQE_PHASE;
	if ((READ_ONCE(cqe->flags) & UZ_CQE_PHASE) != phase)
		return NULL;
	/* The rest of the CQE was written before its phase. */
	dma_rmb();
	return cqe;
}

static enum ib_wc_opcode uz_wc_opcode(u8 op)
{
	switch (op) {
	case UZ_WC_RDMA_WRITE:
		return IB_WC_RDMA_WRITE;
	case UZ_WC_RDMA_READ:
		return IB_WC_RDMA_READ;
	case UZ_WC_COMP_SWAP:
		return IB_WC_COMP_SWAP;
	case UZ_WC_FETCH_ADD:
		return IB_WC_FETCH_ADD;
	case UZ_WC_LOCAL_INV:
		return IB_WC_LOCAL_INV;
	case UZ_WC_REG_MR:
		return IB_WC_REG_MR;
	case UZ_WC_RECV:
		return IB_WC_RECV;
	case UZ_WC_RECV_RDMA_WITH_IMM:
		return IB_WC_RECV_RDMA_WITH_IMM;
	default:
		return IB_WC_SEND;
	}
}

/* Fill wc from a CQE and free the WQE's slots; false if its QP is gone. */
static bool uz_cq_convert(struct uz_ibdev *ib, const struct uz_cqe *cqe,
			  struct ib_wc *wc)
{
	u32 qpn = le32_to_cpu(cqe->qpn) & 0xffffff;
	struct uz_qp *qp;

	/*
	 * Safe without a reference: destroy_qp syncs with our lock.  An XRC
	 * target QP, which has no CQ to sync with, is only named in wc.
	 */
	qp = xa_load(&ib->qp_xa, qpn);
	/* An XRC receive frees its SRQ's slot whatever became of the QP. */
	if ((cqe->opcode & UZ_WC_RECV) && (cqe->wc_flags & UZ_WC_F_XRC))
		uz_srq_recv_done(ib, le32_to_cpu(cqe->src_qp) & 0xffffff);
	if (!qp)
		return false;

	memset(wc, 0, sizeof(*wc));
	wc->wr_id = le64_to_cpu(cqe->wr_id);
	wc->status = cqe->status;
	wc->opcode = uz_wc_opcode(cqe->opcode);
	wc->vendor_err = cqe->vendor_err;
	wc->byte_len = le32_to_cpu(cqe->byte_len);
	wc->qp = &qp->ibqp;
	wc->port_num = 1;

	if (!(cqe->opcode & UZ_WC_RECV)) {
		uz_qp_send_done(qp, cqe);
		return true;
	}
	if (!(cqe->wc_flags & UZ_WC_F_XRC))
		uz_qp_recv_done(qp);
	if (cqe->wc_flags & UZ_WC_F_IMM) {
		wc->ex.imm_data = cqe->imm_data;	/* network order */
		wc->wc_flags |= IB_WC_WITH_IMM;
	} else if (cqe->wc_flags & UZ_WC_F_INV) {
		wc->ex.invalidate_rkey = le32_to_cpu(cqe->imm_data);
		wc->wc_flags |= IB_WC_WITH_INVALIDATE;
	}
	if (cqe->wc_flags & UZ_WC_F_GRH) {
		wc->wc_flags |= IB_WC_GRH;
		if (cqe->wc_flags & UZ_WC_F_IPV4) {
			/* IPv4 header in the last 20 of the 40 GRH bytes */
			wc->network_hdr_type = RDMA_NETWORK_IPV4;
			wc->wc_flags |= IB_WC_WITH_NETWORK_HDR_TYPE;
		}
	}
	/* Through an XRC target QP: the XRC SRQ's, as the provider says. */
	wc->src_qp = le32_to_cpu(cqe->src_qp) & 0xffffff;
	wc->pkey_index = le16_to_cpu(cqe->pkey_index);
	return true;
}

int uz_poll_cq(struct ib_cq *ibcq, int num_entries, struct ib_wc *wc)
{
	struct uz_cq *cq = to_uz_cq(ibcq);
	struct uz_ibdev *ib = to_uzib(ibcq->device);
	unsigned long flags;
	struct uz_cqe *cqe;
	u32 start;
	int n = 0;

	if (cq->mmap) {
		/* user CQs are polled by the provider */
		ibdev_dbg(ibcq->device, "CQ %u: a user CQ, not polled here\n",
			  cq->cqn);
		return -EOPNOTSUPP;
	}

	spin_lock_irqsave(&cq->lock, flags);
	start = cq->ci;
	while (!cq->resizing && n < num_entries && (cqe = uz_cq_next(cq))) {
		cq->ci = (cq->ci + 1) & UZ_DB_CI_MASK;
		if (uz_cq_convert(ib, cqe, &wc[n]))
			n++;
	}
	if (cq->ci != start)
		uz_ring_db(ib->uz, cq->db, cq->ci);
	spin_unlock_irqrestore(&cq->lock, flags);
	return n;
}

int uz_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags)
{
	struct uz_cq *cq = to_uz_cq(ibcq);
	unsigned long irqflags;
	u32 arm;
	int ret = 0;

	if (cq->mmap) {
		ibdev_dbg(ibcq->device, "CQ %u: a user CQ, not armed here\n",
			  cq->cqn);
		return -EOPNOTSUPP;
	}
	arm = (flags & IB_CQ_SOLICITED_MASK) == IB_CQ_SOLICITED ?
	      UZ_DB_ARM_SOLICITED : UZ_DB_ARM;
	spin_lock_irqsave(&cq->lock, irqflags);
	if (cq->resizing) {
		/* Armed when the resize is done (uz_resize_cq). */
		cq->arm_pending = arm;
		spin_unlock_irqrestore(&cq->lock, irqflags);
		return 0;
	}
	uz_ring_db(to_uzib(ibcq->device)->uz, cq->db, cq->ci | arm);
	/* Arming covers only later CQEs: tell the caller about earlier ones. */
	if ((flags & IB_CQ_REPORT_MISSED_EVENTS) && uz_cq_next(cq))
		ret = 1;
	spin_unlock_irqrestore(&cq->lock, irqflags);
	return ret;
}
