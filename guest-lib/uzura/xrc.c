// SPDX-License-Identifier: GPL-2.0-or-later OR BSD-2-Clause
/*
 * uzura provider: XRC (device spec 8.16, UZ_CAP_XRC).  Domains are the
 * kernel's, shared between processes through a file; an XRC SRQ is a
 * plain SRQ of a domain, with a CQ of its own, that the context finds by
 * number when a receive through an XRC target QP completes
 * (uzura_cq_convert); an XRC target (XRC_RECV) QP is made or opened by
 * the kernel alone, and has no queues, CQs or doorbells here.  XRC_SEND
 * QPs are made and posted to as RC QPs are (verbs.c, qp_ex.c).
 */
#include <errno.h>
#include <stdlib.h>

#include "uzura.h"

static bool uz_xrc_supported(struct ibv_context *context)
{
	return to_uctx(context)->caps & UZ_CAP_XRC;
}

struct ibv_xrcd *uzura_open_xrcd(struct ibv_context *context,
				 struct ibv_xrcd_init_attr *attr)
{
	struct ib_uverbs_open_xrcd_resp resp;
	struct ibv_open_xrcd cmd;
	struct verbs_xrcd *xrcd;
	int ret;

	if (!uz_xrc_supported(context)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	xrcd = calloc(1, sizeof(*xrcd));
	if (!xrcd)
		return NULL;
	ret = ibv_cmd_open_xrcd(context, xrcd, sizeof(*xrcd), attr, &cmd,
				sizeof(cmd), &resp, sizeof(resp));
	if (ret) {
		free(xrcd);
		errno = ret;
		return NULL;
	}
	return &xrcd->xrcd;
}

int uzura_close_xrcd(struct ibv_xrcd *ibxrcd)
{
	struct verbs_xrcd *xrcd = container_of(ibxrcd, struct verbs_xrcd, xrcd);
	int ret;

	ret = ibv_cmd_close_xrcd(xrcd);
	if (ret)
		return ret;
	free(xrcd);
	return 0;
}

/* An XRC SRQ: a PD, a domain and a CQ, the PD's and CQ's of this context. */
static struct ibv_srq *uz_create_xrc_srq(struct ibv_context *context,
					 struct ibv_srq_init_attr_ex *attr)
{
	if (!uz_xrc_supported(context)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !attr->pd ||
	    attr->pd->context != context ||
	    !(attr->comp_mask & IBV_SRQ_INIT_ATTR_XRCD) || !attr->xrcd ||
	    !(attr->comp_mask & IBV_SRQ_INIT_ATTR_CQ) || !attr->cq ||
	    attr->cq->context != context) {
		errno = EINVAL;
		return NULL;
	}
	return uzura_srq_create(context, attr);
}

/* Basic SRQs as ibv_create_srq makes them, XRC SRQs and TM SRQs (tm.c). */
struct ibv_srq *uzura_create_srq_ex(struct ibv_context *context,
				    struct ibv_srq_init_attr_ex *attr)
{
	if (attr->comp_mask & ~(IBV_SRQ_INIT_ATTR_RESERVED - 1)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	switch (attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE ? attr->srq_type :
							   IBV_SRQT_BASIC) {
	case IBV_SRQT_BASIC:
		if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !attr->pd ||
		    attr->pd->context != context) {
			errno = EINVAL;
			return NULL;
		}
		return uzura_srq_create(context, attr);
	case IBV_SRQT_XRC:
		return uz_create_xrc_srq(context, attr);
	case IBV_SRQT_TM:
		return uzura_create_tm_srq(context, attr);
	default:
		errno = EOPNOTSUPP;
		return NULL;
	}
}

/* The device's number of the SRQ, which XRC initiators name. */
int uzura_get_srq_num(struct ibv_srq *ibsrq, uint32_t *srq_num)
{
	*srq_num = to_usrq(ibsrq)->srqn;
	return 0;
}

/*
 * An XRC target QP: the kernel creates it, in the domain, with no driver
 * data, and the device gives it no rings or doorbells.  It keeps no PD or
 * CQs (its receives complete through the XRC SRQs they name), so those
 * of attr are not kept either, as for an opened QP.
 */
struct ibv_qp *uzura_create_xrc_recv_qp(struct ibv_context *context,
					struct ibv_qp_init_attr_ex *attr)
{
	struct ib_uverbs_create_qp_resp resp;
	struct ibv_qp_init_attr_ex attr_cmd;
	struct ibv_create_qp cmd;
	struct uzura_qp *qp;
	int ret;

	if (!uz_xrc_supported(context) ||
	    attr->comp_mask & ~(IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_XRCD |
				IBV_QP_INIT_ATTR_CREATE_FLAGS) ||
	    ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) &&
	     attr->create_flags)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_XRCD) || !attr->xrcd) {
		errno = EINVAL;
		return NULL;
	}
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return NULL;
	attr_cmd = *attr;
	attr_cmd.comp_mask = IBV_QP_INIT_ATTR_XRCD;
	ret = ibv_cmd_create_qp_ex(context, &qp->vqp, &attr_cmd, &cmd,
				   sizeof(cmd), &resp, sizeof(resp));
	if (ret) {
		free(qp);
		errno = ret;
		return NULL;
	}
	qp->ibqp.pd = NULL;
	qp->ibqp.send_cq = NULL;
	qp->ibqp.recv_cq = NULL;
	qp->ibqp.srq = NULL;
	qp->state = IBV_QPS_RESET;
	attr->cap = attr_cmd.cap;
	return &qp->ibqp;
}

/* Another process's XRC target QP, through the domain they share. */
struct ibv_qp *uzura_open_qp(struct ibv_context *context,
			     struct ibv_qp_open_attr *attr)
{
	struct ib_uverbs_create_qp_resp resp;
	struct ibv_open_qp cmd;
	struct uzura_qp *qp;
	int ret;

	if (!uz_xrc_supported(context)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	/* ib_core opens XRC target QPs only. */
	if (!(attr->comp_mask & IBV_QP_OPEN_ATTR_TYPE) ||
	    attr->qp_type != IBV_QPT_XRC_RECV) {
		errno = EINVAL;
		return NULL;
	}
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return NULL;
	ret = ibv_cmd_open_qp(context, &qp->vqp, sizeof(qp->vqp), attr, &cmd,
			      sizeof(cmd), &resp, sizeof(resp));
	if (ret) {
		free(qp);
		errno = ret;
		return NULL;
	}
	qp->state = IBV_QPS_UNKNOWN;
	return &qp->ibqp;
}
