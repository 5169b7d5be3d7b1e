// SPDX-License-Identifier: GPL-2.0-or-later OR BSD-2-Clause
/*
 * uzura provider: memory windows (docs/device-spec.md 8.10.3).  The
 * kernel allocates and frees them; binding is a BIND_MW work request the
 * device runs in SQ order: ibv_bind_mw posts one for a type 1 window with
 * the next key byte, and a type 2 window is bound with IBV_WR_BIND_MW or
 * ibv_wr_bind_mw, the consumer choosing its key.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "uzura.h"

#define UZ_MW_REMOTE	(IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
			 IBV_ACCESS_REMOTE_ATOMIC)

struct ibv_mw *uzura_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	struct ib_uverbs_alloc_mw_resp resp;
	struct ibv_alloc_mw cmd;
	struct ibv_mw *mw;

	if (type != IBV_MW_TYPE_1 && type != IBV_MW_TYPE_2) {
		errno = EINVAL;
		return NULL;
	}
	mw = calloc(1, sizeof(*mw));
	if (!mw)
		return NULL;
	if (ibv_cmd_alloc_mw(pd, type, mw, &cmd, sizeof(cmd), &resp,
			     sizeof(resp))) {
		free(mw);
		return NULL;
	}
	return mw;
}

int uzura_dealloc_mw(struct ibv_mw *mw)
{
	int ret = ibv_cmd_dealloc_mw(mw);

	if (ret)
		return ret;
	free(mw);
	return 0;
}

/*
 * The body of a BIND_MW WQE: window @mw gets key @rkey (same index) over
 * the MR range of @bi.  Local write, which a window cannot grant, is
 * dropped as other providers drop it; the device checks the rest.
 */
int uzura_bind_wqe(struct uz_send_wqe *wqe, struct ibv_mw *mw, uint32_t rkey,
		   const struct ibv_mw_bind_info *bi)
{
	unsigned int access = bi->mw_access_flags & ~IBV_ACCESS_LOCAL_WRITE;

	if (access & ~UZ_MW_REMOTE || (rkey >> 8) != (mw->rkey >> 8) ||
	    (bi->length && !bi->mr))
		return EINVAL;
	wqe->opcode = UZ_WR_BIND_MW;
	wqe->rkey = htole32(rkey);
	wqe->remote_addr = htole64(bi->addr);
	wqe->bind.length = htole64(bi->length);
	wqe->bind.access = htole32(access);
	wqe->bind.mr_key = htole32(bi->mr ? bi->mr->lkey : 0);
	return 0;
}

struct uz_bind_arg {
	struct ibv_mw *mw;
	uint32_t rkey;
	const struct ibv_mw_bind *bind;
};

static int uz_bind_fill(struct uzura_qp *qp, struct uz_send_wqe *wqe,
			const void *arg)
{
	const struct uz_bind_arg *a = arg;

	memset(wqe, 0, sizeof(*wqe));
	wqe->wr_id = htole64(a->bind->wr_id);
	if (qp->sig_all || (a->bind->send_flags & IBV_SEND_SIGNALED))
		wqe->flags |= UZ_WQE_F_SIGNALED;
	if (a->bind->send_flags & IBV_SEND_FENCE)
		wqe->flags |= UZ_WQE_F_FENCE;
	return uzura_bind_wqe(wqe, a->mw, a->rkey, &a->bind->bind_info);
}

/* ibv_bind_mw: a type 1 window, bound (or, length 0, unbound) on an RC QP. */
int uzura_bind_mw(struct ibv_qp *ibqp, struct ibv_mw *mw,
		  struct ibv_mw_bind *mw_bind)
{
	struct uz_bind_arg a = {
		.mw = mw, .rkey = ibv_inc_rkey(mw->rkey), .bind = mw_bind,
	};
	struct uzura_qp *qp = to_uqp(ibqp);
	int ret;

	if (mw->type != IBV_MW_TYPE_1 || ibqp->qp_type != IBV_QPT_RC)
		return EINVAL;
	ret = uzura_post_wqe(qp, uz_bind_fill, &a, mw_bind->wr_id,
			     qp->sig_all ||
			     (mw_bind->send_flags & IBV_SEND_SIGNALED), false);
	if (!ret)
		mw->rkey = a.rkey;
	return ret;
}
