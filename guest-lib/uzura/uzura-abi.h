/* SPDX-License-Identifier: GPL-2.0-or-later OR BSD-2-Clause */
/*
 * uzura provider: the uverbs command wrappers around the driver's udata
 * (rdma/uzura-abi.h).  The wrapper names differ from the kernel structs
 * because DECLARE_DRV_CMD appends _resp to the first argument.
 */
#ifndef __UZURA_ABI_H__
#define __UZURA_ABI_H__

#include <infiniband/kern-abi.h>
#include <kernel-abi/uzura-abi.h>
#include <rdma/uzura-abi.h>

DECLARE_DRV_CMD(uzv_alloc_ucontext, IB_USER_VERBS_CMD_GET_CONTEXT,
		empty, uzura_alloc_ucontext_resp);
DECLARE_DRV_CMD(uzv_create_cq, IB_USER_VERBS_CMD_CREATE_CQ,
		empty, uzura_create_cq_resp);
DECLARE_DRV_CMD(uzv_create_cq_ex, IB_USER_VERBS_EX_CMD_CREATE_CQ,
		empty, uzura_create_cq_resp);
DECLARE_DRV_CMD(uzv_resize_cq, IB_USER_VERBS_CMD_RESIZE_CQ,
		uzura_resize_cq, uzura_resize_cq_resp);
DECLARE_DRV_CMD(uzv_create_qp, IB_USER_VERBS_CMD_CREATE_QP,
		uzura_create_qp, uzura_create_qp_resp);
/* An RSS QP: the extended command carries the indirection table. */
DECLARE_DRV_CMD(uzv_create_qp_rss, IB_USER_VERBS_EX_CMD_CREATE_QP,
		uzura_create_qp, uzura_create_qp_resp);
DECLARE_DRV_CMD(uzv_create_wq, IB_USER_VERBS_EX_CMD_CREATE_WQ,
		uzura_create_wq, uzura_create_wq_resp);
/* Basic and XRC SRQs, with the same driver data. */
DECLARE_DRV_CMD(uzv_create_xsrq, IB_USER_VERBS_CMD_CREATE_XSRQ,
		uzura_create_srq, uzura_create_srq_resp);
DECLARE_DRV_CMD(uzv_modify_srq, IB_USER_VERBS_CMD_MODIFY_SRQ,
		uzura_modify_srq, empty);
DECLARE_DRV_CMD(uzv_create_ah, IB_USER_VERBS_CMD_CREATE_AH,
		empty, uzura_create_ah_resp);

#endif /* __UZURA_ABI_H__ */
