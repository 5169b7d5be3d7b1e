// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * uzura RDMA NIC driver: receive side scaling (device spec 8.18.1).
 *
 * A WQ is a device raw QP with UZ_QPF_NO_SQ: an RQ whose ring the process
 * maps as it maps a QP's.  An indirection table is ib_core's list of WQs
 * and nothing on the device; a raw packet QP over one is a device RSS QP,
 * which copies the table at creation and keeps its WQs from being
 * destroyed (ib_core keeps the same order with its use counts).
 */
#include <linux/dma-mapping.h>
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>
#include <rdma/uzura-abi.h>

#include "uz.h"

#define UZ_RQ_LOG_WQE_MIN	4
#define UZ_RQ_LOG_WQE_MAX	9

#define UZ_RSS_FIELDS	(UZ_RSS_F_SRC_IPV4 | UZ_RSS_F_DST_IPV4 | \
			 UZ_RSS_F_SRC_IPV6 | UZ_RSS_F_DST_IPV6 | \
			 UZ_RSS_F_SRC_PORT_TCP | UZ_RSS_F_DST_PORT_TCP | \
			 UZ_RSS_F_SRC_PORT_UDP | UZ_RSS_F_DST_PORT_UDP)
#define UZ_RX_HASH_INNER	BIT_ULL(31)	/* IBV_RX_HASH_INNER */

static struct uz_rwq *to_uz_rwq(struct ib_wq *ibwq)
{
	return container_of(ibwq, struct uz_rwq, ibwq);
}

/* Entries of the largest table the device takes, log2. */
static u32 uz_rss_log_max(struct uz_dev *uz)
{
	return min_t(u32, UZ_RSS_LOG_MAX,
		     ilog2(max_t(u32, le32_to_cpu(uz->attr.max_rss_tbl), 1)));
}

void uz_rss_caps(struct uz_dev *uz, struct ib_device_attr *props)
{
	if (!(uz->caps & UZ_CAP_RSS))
		return;
	/* Tables are the RSS QPs' own: as many as QPs. */
	props->rss_caps.supported_qpts = BIT(IB_QPT_RAW_PACKET);
	props->rss_caps.max_rwq_indirection_tables = props->max_qp;
	props->rss_caps.max_rwq_indirection_table_size =
		1u << uz_rss_log_max(uz);
	props->max_wq_type_rq = props->max_qp;
}

struct ib_wq *uz_create_wq(struct ib_pd *ibpd, struct ib_wq_init_attr *init,
			   struct ib_udata *udata)
{
	struct ib_device *ibdev = ibpd->device;
	struct uz_dev *uz = ibdev_to_uz(ibdev);
	u32 max_sge = le32_to_cpu(uz->attr.max_sge);
	struct uz_admin_cmd cmd = { .opcode = UZ_CMD_CREATE_QP };
	struct uz_cmd_create_qp *c = (struct uz_cmd_create_qp *)cmd.raw;
	struct uzura_create_wq_resp resp = {};
	struct uzura_create_wq ucmd = {};
	struct uz_admin_cqe cqe;
	struct uz_rwq *wq;
	u64 key = 0;
	int log, err;

	if (!udata || !(uz->caps & UZ_CAP_RSS)) {
		ibdev_dbg(ibdev, "WQ: for user space only, on a device with RSS\n");
		return ERR_PTR(-EOPNOTSUPP);
	}
	if (init->wq_type != IB_WQT_RQ || init->create_flags) {
		ibdev_dbg(ibdev, "WQ: type %d, flags 0x%x not supported\n",
			  init->wq_type, init->create_flags);
		return ERR_PTR(-EOPNOTSUPP);
	}
	if (init->max_sge > max_sge) {
		ibdev_dbg(ibdev, "WQ: %u SGEs, at most %u\n", init->max_sge,
			  max_sge);
		return ERR_PTR(-EINVAL);
	}
	if (!uz_udata_known(ibdev, udata, sizeof(ucmd), "WQ"))
		return ERR_PTR(-EOPNOTSUPP);
	err = ib_copy_from_udata(&ucmd, udata, min(udata->inlen, sizeof(ucmd)));
	if (err)
		return ERR_PTR(err);
	if (ucmd.comp_mask) {
		ibdev_dbg(ibdev, "WQ comp_mask 0x%x unknown\n", ucmd.comp_mask);
		return ERR_PTR(-EINVAL);
	}
	log = uz_log_depth(ibdev, "WQ", init->max_wr,
			   le32_to_cpu(uz->attr.max_qp_wr));
	if (log < 0)
		return ERR_PTR(log);

	wq = kzalloc(sizeof(*wq), GFP_KERNEL);
	if (!wq)
		return ERR_PTR(-ENOMEM);
	wq->uctx = uz_udata_uctx(udata);
	wq->rq.log_depth = log;
	wq->rq.log_wqe = ucmd.rq_log_wqe ? ucmd.rq_log_wqe :
		max_t(u32, order_base_2(sizeof(struct uz_recv_wqe) +
					init->max_sge * sizeof(struct uz_sge)),
		      UZ_RQ_LOG_WQE_MIN);
	if (wq->rq.log_wqe < UZ_RQ_LOG_WQE_MIN ||
	    wq->rq.log_wqe > UZ_RQ_LOG_WQE_MAX) {
		ibdev_dbg(ibdev, "WQ: log WQE size %u, not %u..%u\n",
			  wq->rq.log_wqe, UZ_RQ_LOG_WQE_MIN, UZ_RQ_LOG_WQE_MAX);
		err = -EINVAL;
		goto err_free;
	}
	wq->rq.max_sge = min_t(u32, max_sge,
			       ((1u << wq->rq.log_wqe) -
				sizeof(struct uz_recv_wqe)) /
			       sizeof(struct uz_sge));
	err = uz_wq_alloc(uz, &wq->rq, udata, &key);
	if (err)
		goto err_free;

	c->rq_addr = cpu_to_le64(wq->rq.ring.dma);
	c->uctx = cpu_to_le32(wq->uctx);
	c->pdn = cpu_to_le32(to_uz_pd(ibpd)->pdn);
	c->recv_cqn = cpu_to_le32(to_uz_cq(init->cq)->cqn);
	c->srqn = cpu_to_le32(UZ_NO_SRQ);
	c->type = UZ_QPT_RAW;
	c->flags = UZ_QPF_NO_SQ;
	c->rq_log_depth = wq->rq.log_depth;
	c->rq_log_wqe_size = wq->rq.log_wqe;
	err = uz_admin_exec(uz, &cmd, &cqe);
	if (err)
		goto err_ring;
	wq->qpn = le32_to_cpu(cqe.out0);
	wq->rq.db = le32_to_cpu(cqe.out2);
	wq->ibwq.wq_num = wq->qpn;
	wq->ibwq.state = IB_WQS_RESET;
	init->max_wr = 1u << wq->rq.log_depth;
	init->max_sge = wq->rq.max_sge;

	resp.wqn = wq->qpn;
	resp.rq_mmap_key = key;
	resp.rq_size = uz_wq_map_size(&wq->rq);
	resp.rq_db_offset = uz_db_page_off(wq->rq.db);
	resp.rq_log_depth = wq->rq.log_depth;
	resp.rq_log_wqe = wq->rq.log_wqe;
	err = ib_copy_to_udata(udata, &resp, min(udata->outlen, sizeof(resp)));
	if (err)
		goto err_destroy;
	return &wq->ibwq;

err_destroy:
	uz_obj_cmd(uz, UZ_CMD_DESTROY_QP, wq->qpn, wq->uctx);
err_ring:
	uz_wq_free(uz, &wq->rq);
err_free:
	kfree(wq);
	return ERR_PTR(err);
}

/* Move the WQ's device QP to @state (with the port on the way to INIT). */
static int uz_rwq_qp_state(struct uz_dev *uz, struct uz_rwq *wq, u8 state)
{
	struct uz_admin_cmd cmd = { .opcode = UZ_CMD_MODIFY_QP };
	struct uz_cmd_modify_qp *c = (struct uz_cmd_modify_qp *)cmd.raw;
	struct uz_qp_attr *a;
	dma_addr_t dma;
	int err;

	a = dma_alloc_coherent(&uz->pdev->dev, sizeof(*a), &dma, GFP_KERNEL);
	if (!a)
		return -ENOMEM;
	a->state = state;
	a->port = 1;
	c->buf_addr = cpu_to_le64(dma);
	c->qpn = cpu_to_le32(wq->qpn);
	c->attr_mask = cpu_to_le32(UZ_QP_ATTR_STATE |
				   (state == UZ_QPS_INIT ? UZ_QP_ATTR_PORT : 0));
	c->uctx = cpu_to_le32(wq->uctx);
	err = uz_admin_exec(uz, &cmd, NULL);
	dma_free_coherent(&uz->pdev->dev, sizeof(*a), a, dma);
	return err;
}

/*
 * RESET, RDY and ERR are the device QP's RESET, RTR (through INIT: a raw
 * QP receives from RTR on) and ERR, which flushes the posted receives.
 */
int uz_modify_wq(struct ib_wq *ibwq, struct ib_wq_attr *attr, u32 mask,
		 struct ib_udata *udata)
{
	struct uz_rwq *wq = to_uz_rwq(ibwq);
	struct uz_dev *uz = ibdev_to_uz(ibwq->device);
	enum ib_wq_state cur, new;
	int err = 0;

	if (mask & ~(IB_WQ_STATE | IB_WQ_CUR_STATE)) {
		ibdev_dbg(ibwq->device, "WQ %u: modify mask 0x%x not supported\n",
			  wq->qpn, mask);
		return -EOPNOTSUPP;
	}
	if (!uz_udata_known(ibwq->device, udata, 0, "WQ modify"))
		return -EOPNOTSUPP;
	cur = (mask & IB_WQ_CUR_STATE) ? attr->curr_wq_state : ibwq->state;
	new = (mask & IB_WQ_STATE) ? attr->wq_state : cur;
	if (cur > IB_WQS_ERR || new > IB_WQS_ERR ||
	    (cur == IB_WQS_ERR && new == IB_WQS_RDY)) {
		ibdev_dbg(ibwq->device, "WQ %u: state %d -> %d not allowed\n",
			  wq->qpn, cur, new);
		return -EINVAL;
	}
	if (new == cur)
		return 0;
	switch (new) {
	case IB_WQS_RESET:
		err = uz_rwq_qp_state(uz, wq, UZ_QPS_RESET);
		break;
	case IB_WQS_RDY:
		err = uz_rwq_qp_state(uz, wq, UZ_QPS_INIT);
		if (!err)
			err = uz_rwq_qp_state(uz, wq, UZ_QPS_RTR);
		break;
	case IB_WQS_ERR:
		err = uz_rwq_qp_state(uz, wq, UZ_QPS_ERR);
		break;
	}
	if (err)
		return err;
	ibwq->state = new;
	return 0;
}

int uz_destroy_wq(struct ib_wq *ibwq, struct ib_udata *udata)
{
	struct uz_rwq *wq = to_uz_rwq(ibwq);
	struct uz_dev *uz = ibdev_to_uz(ibwq->device);
	int err;

	err = uz_obj_cmd(uz, UZ_CMD_DESTROY_QP, wq->qpn, wq->uctx);
	if (err == -EBUSY)
		return err;	/* an RSS QP still names it */
	if (err) {
		/* The device may still write the ring: leak it. */
		dev_err(&uz->pdev->dev, "destroying WQ %u failed: %d\n",
			wq->qpn, err);
		kfree(wq);
		return 0;
	}
	uz_wq_free(uz, &wq->rq);
	kfree(wq);
	return 0;
}

int uz_create_rwq_ind_table(struct ib_rwq_ind_table *ibtbl,
			    struct ib_rwq_ind_table_init_attr *init,
			    struct ib_udata *udata)
{
	struct uz_ibdev *ib = to_uzib(ibtbl->device);

	if (!(ib->uz->caps & UZ_CAP_RSS)) {
		ibdev_dbg(ibtbl->device, "indirection table: no RSS\n");
		return -EOPNOTSUPP;
	}
	if (init->log_ind_tbl_size > uz_rss_log_max(ib->uz)) {
		ibdev_dbg(ibtbl->device,
			  "indirection table of 2^%u WQs: at most 2^%u\n",
			  init->log_ind_tbl_size, uz_rss_log_max(ib->uz));
		return -EINVAL;
	}
	if (!uz_udata_known(ibtbl->device, udata, 0, "indirection table"))
		return -EOPNOTSUPP;
	ibtbl->ind_tbl_num = atomic_inc_return(&ib->rss_tbl_num);
	return 0;
}

int uz_destroy_rwq_ind_table(struct ib_rwq_ind_table *ibtbl)
{
	return 0;
}

/* The hash the provider asked for, checked against what the device does. */
static int uz_rss_hash(struct ib_device *ibdev, struct ib_udata *udata,
		       struct uz_rss_conf *conf)
{
	struct uzura_create_qp ucmd = {};
	int err;

	if (!uz_udata_known(ibdev, udata, sizeof(ucmd), "RSS QP"))
		return -EOPNOTSUPP;
	err = ib_copy_from_udata(&ucmd, udata, min(udata->inlen, sizeof(ucmd)));
	if (err)
		return err;
	if (ucmd.comp_mask != UZURA_CREATE_QP_RX_HASH) {
		ibdev_dbg(ibdev, "RSS QP: comp_mask 0x%x, not the RX hash\n",
			  ucmd.comp_mask);
		return -EINVAL;
	}
	if (ucmd.rx_hash_function != UZ_RSS_TOEPLITZ) {
		ibdev_dbg(ibdev, "RSS QP: hash function %u, only Toeplitz\n",
			  ucmd.rx_hash_function);
		return -EOPNOTSUPP;
	}
	if (ucmd.rx_hash_key_len != sizeof(conf->key)) {
		ibdev_dbg(ibdev, "RSS QP: key of %u bytes, not %zu\n",
			  ucmd.rx_hash_key_len, sizeof(conf->key));
		return -EINVAL;
	}
	if (ucmd.rx_hash_fields_mask & UZ_RX_HASH_INNER) {
		ibdev_dbg(ibdev, "RSS QP: no inner header fields\n");
		return -EOPNOTSUPP;
	}
	if (ucmd.rx_hash_fields_mask & ~(u64)UZ_RSS_FIELDS) {
		ibdev_dbg(ibdev, "RSS QP: hash fields 0x%llx not supported\n",
			  ucmd.rx_hash_fields_mask & ~(u64)UZ_RSS_FIELDS);
		return -EOPNOTSUPP;
	}
	memcpy(conf->key, ucmd.rx_hash_key, sizeof(conf->key));
	conf->fields = cpu_to_le32(ucmd.rx_hash_fields_mask);
	conf->func = UZ_RSS_TOEPLITZ;
	return 0;
}

/*
 * A raw packet QP over an indirection table: a device RSS QP, whose
 * table CREATE_QP reads at sq_addr.  Nothing is posted to it.
 */
int uz_rss_create_qp(struct uz_qp *qp, struct ib_qp_init_attr *init,
		     struct ib_udata *udata)
{
	struct ib_qp *ibqp = &qp->ibqp;
	struct ib_rwq_ind_table *tbl = init->rwq_ind_tbl;
	struct uz_ibdev *ib = to_uzib(ibqp->device);
	struct uz_dev *uz = ib->uz;
	struct uz_admin_cmd cmd = { .opcode = UZ_CMD_CREATE_QP };
	struct uz_cmd_create_qp *c = (struct uz_cmd_create_qp *)cmd.raw;
	struct uzura_create_qp_resp resp = {};
	struct uz_admin_cqe cqe;
	struct uz_rss_conf *conf;
	dma_addr_t dma;
	u32 i;
	int err;

	if (qp->type != UZ_QPT_RAW || !udata || !(uz->caps & UZ_CAP_RSS)) {
		ibdev_dbg(ibqp->device, "QP: an indirection table is for user raw packet QPs, on a device with RSS\n");
		return -EOPNOTSUPP;
	}
	if (init->send_cq || init->cap.max_send_wr) {
		ibdev_dbg(ibqp->device, "RSS QP: no send queue\n");
		return -EOPNOTSUPP;
	}
	if (tbl->log_ind_tbl_size > uz_rss_log_max(uz)) {
		ibdev_dbg(ibqp->device, "RSS QP: table of 2^%u WQs\n",
			  tbl->log_ind_tbl_size);
		return -EINVAL;
	}
	conf = dma_alloc_coherent(&uz->pdev->dev, sizeof(*conf), &dma,
				  GFP_KERNEL);
	if (!conf)
		return -ENOMEM;
	err = uz_rss_hash(ibqp->device, udata, conf);
	if (err)
		goto out;
	conf->log_size = tbl->log_ind_tbl_size;
	for (i = 0; i < (1u << tbl->log_ind_tbl_size); i++)
		conf->qpn[i] = cpu_to_le32(to_uz_rwq(tbl->ind_tbl[i])->qpn);

	qp->uctx = uz_udata_uctx(udata);
	qp->type = UZ_QPT_RSS;
	qp->state = IB_QPS_RESET;
	uz_obj_ref_init(&qp->ref);
	c->sq_addr = cpu_to_le64(dma);
	c->uctx = cpu_to_le32(qp->uctx);
	c->pdn = cpu_to_le32(to_uz_pd(ibqp->pd)->pdn);
	c->srqn = cpu_to_le32(UZ_NO_SRQ);
	c->type = UZ_QPT_RSS;
	err = uz_admin_exec(uz, &cmd, &cqe);
	if (err)
		goto out;
	qp->qpn = le32_to_cpu(cqe.out0);
	ibqp->qp_num = qp->qpn;
	err = xa_insert_bh(&ib->qp_xa, qp->qpn, qp, GFP_KERNEL);
	if (err)
		goto err_destroy;
	resp.qpn = qp->qpn;
	err = ib_copy_to_udata(udata, &resp, min(udata->outlen, sizeof(resp)));
	if (!err)
		goto out;
	xa_erase_bh(&ib->qp_xa, qp->qpn);
	uz_obj_ref_wait(&qp->ref);
err_destroy:
	uz_obj_cmd(uz, UZ_CMD_DESTROY_QP, qp->qpn, qp->uctx);
out:
	dma_free_coherent(&uz->pdev->dev, sizeof(*conf), conf, dma);
	return err;
}
