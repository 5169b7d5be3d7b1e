// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * uzura: XRC (UZ_CAP_XRC; the XRC parts of uzura_*_defs.h).  XRC domains, the
 * XRC fields of an SRQ, and XRC target QPs.  An XRCD belongs to the
 * device, not to a context: ib_core shares one between processes through
 * the file they open it with.  A target QP has no rings, CQs, PD or SRQ
 * of its own: ib_core creates it as a kernel QP (no udata, no PD) even for
 * a process, and hands the processes handles that point to it; each
 * request it takes names the XRC SRQ that receives it.
 */
#include "uz.h"

int uz_alloc_xrcd(struct ib_xrcd *ibxrcd, struct ib_udata *udata)
{
	struct uz_xrcd *xrcd = to_uz_xrcd(ibxrcd);
	struct uz_dev *uz = ibdev_to_uz(ibxrcd->device);
	struct uz_admin_cmd cmd = { .opcode = UZ_CMD_ALLOC_XRCD };
	struct uz_admin_cqe cqe;
	int err;

	if (!(uz->caps & UZ_CAP_XRC)) {
		ibdev_dbg(ibxrcd->device, "XRC domains not supported\n");
		return -EOPNOTSUPP;
	}
	if (!uz_udata_known(ibxrcd->device, udata, 0, "XRCD"))
		return -EOPNOTSUPP;
	/* The command's uz_cmd_obj names no object and no context. */
	err = uz_admin_exec(uz, &cmd, &cqe);
	if (err)
		return err;
	xrcd->xrcdn = le32_to_cpu(cqe.out0);
	return 0;
}

/* ib_core calls this once no SRQ or QP counts on the domain. */
int uz_dealloc_xrcd(struct ib_xrcd *ibxrcd, struct ib_udata *udata)
{
	return uz_obj_cmd(ibdev_to_uz(ibxrcd->device), UZ_CMD_DEALLOC_XRCD,
			  to_uz_xrcd(ibxrcd)->xrcdn, 0);
}

/*
 * The CQ that ib_core passes in init->ext for an XRC or TM SRQ: there
 * must be one, of the SRQ's own context (the device checks it again).
 */
struct uz_cq *uz_srq_ext_cq(struct uz_srq *srq, struct ib_srq_init_attr *init)
{
	struct ib_device *ibdev = srq->ibsrq.device;
	struct uz_cq *cq;

	if (!init->ext.cq) {
		ibdev_dbg(ibdev, "SRQ: an XRC or TM SRQ needs a CQ\n");
		return ERR_PTR(-EINVAL);
	}
	cq = to_uz_cq(init->ext.cq);
	if (cq->uctx != srq->uctx) {
		ibdev_dbg(ibdev, "SRQ: CQ %u is of context %u, the SRQ of %u\n",
			  cq->cqn, cq->uctx, srq->uctx);
		return ERR_PTR(-EINVAL);
	}
	return cq;
}

/* The XRC fields of a CREATE_SRQ command @c: the domain and the CQ. */
int uz_xrc_srq_cmd(struct uz_srq *srq, struct ib_srq_init_attr *init,
		   struct uz_cmd_create_srq *c)
{
	struct ib_device *ibdev = srq->ibsrq.device;
	struct uz_cq *cq;

	if (!(ibdev_to_uz(ibdev)->caps & UZ_CAP_XRC)) {
		ibdev_dbg(ibdev, "SRQ: XRC not supported\n");
		return -EOPNOTSUPP;
	}
	if (!init->ext.xrc.xrcd) {
		ibdev_dbg(ibdev, "SRQ: an XRC SRQ needs an XRCD\n");
		return -EINVAL;
	}
	cq = uz_srq_ext_cq(srq, init);
	if (IS_ERR(cq))
		return PTR_ERR(cq);
	c->flags = UZ_SRQF_XRC;
	c->xrcd = cpu_to_le32(to_uz_xrcd(init->ext.xrc.xrcd)->xrcdn);
	c->cqn = cpu_to_le32(cq->cqn);
	return 0;
}

/*
 * An XRC target QP.  ib_core (create_qp() for IB_QPT_XRC_TGT in
 * drivers/infiniband/core/verbs.c) calls create_qp with udata NULL and
 * ibqp->pd NULL even for a process, and no CQs or SRQ: init->xrcd is the
 * domain.  After this returns it sets ibqp->xrcd, keeps pd, send_cq,
 * recv_cq and srq NULL, and sends the QP's events to the handles it
 * opened on it.  So the QP belongs to the kernel (uctx 0) and has no
 * rings or doorbells; the device needs only its domain.
 */
int uz_xrc_create_tgt(struct uz_qp *qp, struct ib_qp_init_attr *init)
{
	struct ib_device *ibdev = qp->ibqp.device;
	struct uz_ibdev *ib = to_uzib(ibdev);
	struct uz_admin_cmd cmd = { .opcode = UZ_CMD_CREATE_QP };
	struct uz_cmd_create_qp *c = (struct uz_cmd_create_qp *)cmd.raw;
	struct uz_admin_cqe cqe;
	int err;

	if (!init->xrcd) {
		ibdev_dbg(ibdev, "QP: an XRC target QP needs an XRCD\n");
		return -EINVAL;
	}
	/* What a QP with no queues can hold, reported back to the caller. */
	memset(&init->cap, 0, sizeof(init->cap));
	qp->cap = init->cap;
	qp->uctx = 0;
	qp->state = IB_QPS_RESET;
	uz_obj_ref_init(&qp->ref);

	c->uctx = 0;
	c->type = UZ_QPT_XRC_TGT;
	c->srqn = cpu_to_le32(UZ_NO_SRQ);
	c->xrcd = cpu_to_le32(to_uz_xrcd(init->xrcd)->xrcdn);
	err = uz_admin_exec(ib->uz, &cmd, &cqe);
	if (err)
		return err;
	qp->qpn = le32_to_cpu(cqe.out0);
	qp->ibqp.qp_num = qp->qpn;

	/* For its events, and the receive CQEs it brings to XRC SRQs. */
	err = xa_insert_bh(&ib->qp_xa, qp->qpn, qp, GFP_KERNEL);
	if (err) {
		uz_obj_cmd(ib->uz, UZ_CMD_DESTROY_QP, qp->qpn, 0);
		return err;
	}
	return 0;
}
