// SPDX-License-Identifier: GPL-2.0-or-later OR BSD-2-Clause
/*
 * uzura provider: device matching and contexts.
 *
 * The out-of-tree kernel driver registers with RDMA_DRIVER_UNKNOWN, so the
 * device is matched by its PCI identity.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "uzura.h"

static void uzura_free_context(struct ibv_context *ibctx);

static const struct verbs_match_ent uzura_table[] = {
	VERBS_PCI_MATCH(UZ_PCI_VENDOR_ID, UZ_PCI_DEVICE_ID, NULL),
	{},
};

static const struct verbs_context_ops uzura_ctx_ops = {
	.query_device_ex = uzura_query_device_ex,
	.query_port = uzura_query_port,
	.query_rt_values = uzura_query_rt_values,
	.alloc_pd = uzura_alloc_pd,
	.dealloc_pd = uzura_dealloc_pd,
	.import_pd = uzura_import_pd,
	.unimport_pd = uzura_unimport_pd,
	.alloc_td = uzura_alloc_td,
	.dealloc_td = uzura_dealloc_td,
	.alloc_parent_domain = uzura_alloc_parent_domain,
	.reg_mr = uzura_reg_mr,
	.dereg_mr = uzura_dereg_mr,
	.rereg_mr = uzura_rereg_mr,
	.advise_mr = uzura_advise_mr,
	.import_mr = uzura_import_mr,
	.unimport_mr = uzura_unimport_mr,
	.alloc_dm = uzura_alloc_dm,
	.free_dm = uzura_free_dm,
	.reg_dm_mr = uzura_reg_dm_mr,
	.import_dm = uzura_import_dm,
	.unimport_dm = uzura_unimport_dm,
	.alloc_mw = uzura_alloc_mw,
	.dealloc_mw = uzura_dealloc_mw,
	.bind_mw = uzura_bind_mw,
	.create_cq = uzura_create_cq,
	.create_cq_ex = uzura_create_cq_ex,
	.destroy_cq = uzura_destroy_cq,
	.resize_cq = uzura_resize_cq,
	.poll_cq = uzura_poll_cq,
	.req_notify_cq = uzura_req_notify_cq,
	.create_qp = uzura_create_qp,
	.create_qp_ex = uzura_create_qp_ex,
	.modify_qp = uzura_modify_qp,
	.query_qp = uzura_query_qp,
	.destroy_qp = uzura_destroy_qp,
	.post_send = uzura_post_send,
	.post_recv = uzura_post_recv,
	.create_srq = uzura_create_srq,
	.modify_srq = uzura_modify_srq,
	.query_srq = uzura_query_srq,
	.destroy_srq = uzura_destroy_srq,
	.post_srq_recv = uzura_post_srq_recv,
	.post_srq_ops = uzura_post_srq_ops,
	.create_srq_ex = uzura_create_srq_ex,
	.get_srq_num = uzura_get_srq_num,
	.open_xrcd = uzura_open_xrcd,
	.close_xrcd = uzura_close_xrcd,
	.open_qp = uzura_open_qp,
	.create_ah = uzura_create_ah,
	.destroy_ah = uzura_destroy_ah,
	.attach_mcast = ibv_cmd_attach_mcast,
	.detach_mcast = ibv_cmd_detach_mcast,
	.create_flow = uzura_create_flow,
	.destroy_flow = uzura_destroy_flow,
	.create_wq = uzura_create_wq,
	.modify_wq = uzura_modify_wq,
	.destroy_wq = uzura_destroy_wq,
	.create_rwq_ind_table = uzura_create_rwq_ind_table,
	.destroy_rwq_ind_table = uzura_destroy_rwq_ind_table,
	.free_context = uzura_free_context,
};

/*
 * Maps the doorbell page and takes the limits of the kernel context that
 * alloc_ucontext created or, for an imported context, QUERY_CONTEXT
 * described: the same answer, the same page.  0 or an errno.
 */
static int uzura_set_context(struct uzura_context *ctx,
			     const struct uzura_alloc_ucontext_resp *resp)
{
	struct ibv_context *context = &ctx->ibvctx.context;
	struct ibv_device_attr_ex attr;
	int i;

	if (!resp->db_page_size) {
		verbs_err(&ctx->ibvctx, "uzura: no doorbell page\n");
		return EINVAL;
	}
	ctx->uctx = resp->uctx;
	ctx->db_page_size = resp->db_page_size;
	ctx->max_sge = resp->max_sge;
	ctx->max_inline = resp->max_inline;
	ctx->sq_max_log_wqe = resp->sq_max_log_wqe;
	ctx->rq_max_log_wqe = resp->rq_max_log_wqe;
	ctx->max_crw_tags = resp->max_crw_tags;
	ctx->caps = resp->caps;

	/*
	 * The kernel maps the page uncached; doorbells are 32-bit stores,
	 * the clock (UZ_DB_CLOCK) a load.
	 */
	ctx->db_page = mmap(NULL, ctx->db_page_size, PROT_READ | PROT_WRITE,
			    MAP_SHARED, context->cmd_fd, resp->db_mmap_key);
	if (ctx->db_page == MAP_FAILED) {
		verbs_err(&ctx->ibvctx, "uzura: cannot map doorbells: %m\n");
		return errno;
	}

	pthread_spin_init(&ctx->qp_table_lock, PTHREAD_PROCESS_PRIVATE);
	for (i = 0; i < UZURA_QP_TABLE_SIZE; i++)
		list_head_init(&ctx->qp_table[i]);
	pthread_spin_init(&ctx->srq_table_lock, PTHREAD_PROCESS_PRIVATE);
	for (i = 0; i < UZURA_SRQ_TABLE_SIZE; i++)
		list_head_init(&ctx->srq_table[i]);

	verbs_set_ops(&ctx->ibvctx, &uzura_ctx_ops);
	/* CQ sizing (uzura_cq_ask) and alloc_dm need the device's limits. */
	if (!uzura_query_device_ex(context, NULL, &attr, sizeof(attr))) {
		ctx->max_cqe = attr.orig_attr.max_cqe;
		ctx->max_dm_size = attr.max_dm_size;
	}
	/* The wallclock of completion timestamps. */
	if (ctx->caps & UZ_CAP_TIMESTAMP)
		uzura_clock_sync(ctx);
	return 0;
}

static struct verbs_context *uzura_alloc_context(struct ibv_device *ibdev,
						 int cmd_fd,
						 void *private_data)
{
	struct uzv_alloc_ucontext_resp resp = {};
	struct uzv_alloc_ucontext cmd = {};
	struct uzura_context *ctx;
	int ret;

	ctx = verbs_init_and_alloc_context(ibdev, cmd_fd, ctx, ibvctx,
					   RDMA_DRIVER_UNKNOWN);
	if (!ctx)
		return NULL;

	if (ibv_cmd_get_context(&ctx->ibvctx, &cmd.ibv_cmd, sizeof(cmd),
				&resp.ibv_resp, sizeof(resp)))
		goto err_free;
	ret = uzura_set_context(ctx, &resp.drv_payload);
	if (ret) {
		errno = ret;
		goto err_free;
	}
	return &ctx->ibvctx;

err_free:
	verbs_uninit_context(&ctx->ibvctx);
	free(ctx);
	return NULL;
}

/*
 * ibv_import_device: cmd_fd is the command FD of a context, maybe of
 * another process; the kernel context behind it describes itself again.
 */
static struct verbs_context *uzura_import_context(struct ibv_device *ibdev,
						  int cmd_fd)
{
	DECLARE_COMMAND_BUFFER_LINK(driver_attr, UVERBS_OBJECT_DEVICE,
				    UVERBS_METHOD_QUERY_CONTEXT, 1, NULL);
	struct uzura_alloc_ucontext_resp resp = {};
	struct uzura_context *ctx;
	int ret;

	ctx = verbs_init_and_alloc_context(ibdev, cmd_fd, ctx, ibvctx,
					   RDMA_DRIVER_UNKNOWN);
	if (!ctx)
		return NULL;

	fill_attr_out_ptr(driver_attr, UZURA_IB_ATTR_QUERY_CONTEXT_RESP_UCTX,
			  &resp);
	ret = ibv_cmd_query_context(&ctx->ibvctx.context, driver_attr);
	if (!ret)
		ret = uzura_set_context(ctx, &resp);
	if (ret) {
		verbs_uninit_context(&ctx->ibvctx);
		free(ctx);
		errno = ret;
		return NULL;
	}
	return &ctx->ibvctx;
}

static void uzura_free_context(struct ibv_context *ibctx)
{
	struct uzura_context *ctx = to_uctx(ibctx);

	munmap(ctx->db_page, ctx->db_page_size);
	pthread_spin_destroy(&ctx->qp_table_lock);
	pthread_spin_destroy(&ctx->srq_table_lock);
	verbs_uninit_context(&ctx->ibvctx);
	free(ctx);
}

static struct verbs_device *uzura_device_alloc(struct verbs_sysfs_dev *sdev)
{
	struct uzura_device *dev;

	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return NULL;
	return &dev->vdev;
}

static void uzura_uninit_device(struct verbs_device *vdev)
{
	free(container_of(vdev, struct uzura_device, vdev));
}

static const struct verbs_device_ops uzura_dev_ops = {
	.name = "uzura",
	.match_min_abi_version = UZURA_UVERBS_ABI_VERSION,
	.match_max_abi_version = UZURA_UVERBS_ABI_VERSION,
	.match_table = uzura_table,
	.alloc_device = uzura_device_alloc,
	.uninit_device = uzura_uninit_device,
	.alloc_context = uzura_alloc_context,
	.import_context = uzura_import_context,
};

bool is_uzura_dev(struct ibv_device *device)
{
	return verbs_get_device(device)->ops == &uzura_dev_ops;
}

PROVIDER_DRIVER(uzura, uzura_dev_ops);
