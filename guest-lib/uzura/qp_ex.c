// SPDX-License-Identifier: GPL-2.0-or-later OR BSD-2-Clause
/*
 * uzura provider: ibv_create_qp_ex and the work request API of
 * ibv_qp_ex (ibv_wr_*).  The builders write WQEs straight into the SQ
 * ring (uzura_io_defs.h, docs/device-spec.md 8.6) from the producer index on;
 * ibv_wr_complete rings the doorbell once for the whole batch, and
 * ibv_wr_abort, or any error in the batch, leaves the producer index
 * where it was, so the device never sees the batch.  Between wr_start and
 * wr_complete/wr_abort the SQ lock is held.
 */
#include <assert.h>
#include <errno.h>
#include <string.h>

#include <util/udma_barrier.h>

#include "uzura.h"

#define UZ_QP_COMP_MASK		(IBV_QP_INIT_ATTR_PD | \
				 IBV_QP_INIT_ATTR_CREATE_FLAGS | \
				 IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)

#define UZ_RC_SEND_OPS		(IBV_QP_EX_WITH_SEND | \
				 IBV_QP_EX_WITH_SEND_WITH_IMM | \
				 IBV_QP_EX_WITH_RDMA_WRITE | \
				 IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | \
				 IBV_QP_EX_WITH_RDMA_READ | \
				 IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | \
				 IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | \
				 IBV_QP_EX_WITH_BIND_MW | \
				 IBV_QP_EX_WITH_LOCAL_INV | \
				 IBV_QP_EX_WITH_SEND_WITH_INV)
/* IBA 1.5's FLUSH and ATOMIC WRITE, on a device with UZ_CAP_PLACEMENT. */
#define UZ_RC_PLACEMENT_OPS	(IBV_QP_EX_WITH_FLUSH | \
				 IBV_QP_EX_WITH_ATOMIC_WRITE)
#define UZ_UD_SEND_OPS		(IBV_QP_EX_WITH_SEND | \
				 IBV_QP_EX_WITH_SEND_WITH_IMM)
#define UZ_UC_SEND_OPS		(UZ_UD_SEND_OPS | \
				 IBV_QP_EX_WITH_RDMA_WRITE | \
				 IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM)
/* Raw packet: a SEND of a whole frame. */
#define UZ_RAW_SEND_OPS		IBV_QP_EX_WITH_SEND
/* XRC_SEND: RC's, but windows are bound on RC QPs only. */
#define UZ_XRC_SEND_OPS		(UZ_RC_SEND_OPS & ~IBV_QP_EX_WITH_BIND_MW)

/*
 * wr_flags the device has a WQE flag for; IBV_SEND_INLINE is allowed and
 * ignored, the inline setters being what makes a WQE inline.
 */
#define UZ_WR_FLAGS		(IBV_SEND_SIGNALED | IBV_SEND_SOLICITED | \
				 IBV_SEND_FENCE | IBV_SEND_INLINE)

static struct uzura_qp *qpx_to_uqp(struct ibv_qp_ex *ibqpx)
{
	return container_of(ibqpx, struct uzura_qp, vqp.qp_ex);
}

static void uz_wr_fail(struct uzura_qp *qp, int err)
{
	if (!qp->wr_err)
		qp->wr_err = err;
	qp->wr_wqe = NULL;
}

/*
 * Begin the next WQE of the batch: a zeroed header in the slot of
 * qp->wr_pi, with wr_id and the flags of wr_flags.  NULL once the batch
 * has failed.
 */
static struct uz_send_wqe *uz_wr_begin(struct uzura_qp *qp, uint8_t opcode)
{
	struct ibv_qp_ex *ibqpx = &qp->vqp.qp_ex;
	struct uzura_wq *sq = &qp->sq;
	struct uzura_sq_slot *slot;
	struct uz_send_wqe *wqe;
	bool signaled;

	/* The previous WQE never got its UD address or XRC SRQ. */
	if (qp->wr_need_dest)
		uz_wr_fail(qp, EINVAL);
	if (qp->wr_err)
		return NULL;
	if (ibqpx->wr_flags & ~UZ_WR_FLAGS) {
		uz_wr_fail(qp, EINVAL);
		return NULL;
	}
	if (uz_wq_full_at(sq, qp->wr_pi)) {
		uz_wr_fail(qp, ENOMEM);
		return NULL;
	}

	signaled = qp->sig_all || (ibqpx->wr_flags & IBV_SEND_SIGNALED);
	wqe = uz_wq_slot(sq, qp->wr_pi);
	memset(wqe, 0, sizeof(*wqe));
	wqe->wr_id = htole64(ibqpx->wr_id);
	wqe->opcode = opcode;
	if (signaled)
		wqe->flags |= UZ_WQE_F_SIGNALED;
	if (ibqpx->wr_flags & IBV_SEND_SOLICITED)
		wqe->flags |= UZ_WQE_F_SOLICITED;
	if (ibqpx->wr_flags & IBV_SEND_FENCE)
		wqe->flags |= UZ_WQE_F_FENCE;

	slot = &qp->slots[qp->wr_pi & (uz_wq_depth(sq) - 1)];
	slot->wr_id = ibqpx->wr_id;
	slot->signaled = signaled;
	slot->crw = false;

	qp->wr_pi = (qp->wr_pi + 1) & UZ_DB_PI_MASK;
	qp->wr_wqe = wqe;
	/* A LOCAL_INV goes nowhere. */
	qp->wr_need_dest = qp->ibqp.qp_type == IBV_QPT_UD ||
			   (qp->ibqp.qp_type == IBV_QPT_XRC_SEND &&
			    opcode != UZ_WR_LOCAL_INV);
	return wqe;
}

/* The WQE the setters apply to; a setter without a builder fails. */
static struct uz_send_wqe *uz_wr_cur(struct uzura_qp *qp)
{
	if (!qp->wr_wqe && !qp->wr_err)
		qp->wr_err = EINVAL;
	return qp->wr_wqe;
}

static bool uz_wr_no_data(const struct uz_send_wqe *wqe)
{
	return wqe->opcode == UZ_WR_RDMA_READ ||
	       wqe->opcode == UZ_WR_ATOMIC_CMP_SWP ||
	       wqe->opcode == UZ_WR_ATOMIC_FETCH_ADD ||
	       wqe->opcode == UZ_WR_ATOMIC_WRITE ||
	       wqe->opcode == UZ_WR_FLUSH ||
	       wqe->opcode == UZ_WR_LOCAL_INV ||
	       wqe->opcode == UZ_WR_BIND_MW;
}

/* ---- builders ---- */

static void uz_wr_send(struct ibv_qp_ex *ibqpx)
{
	uz_wr_begin(qpx_to_uqp(ibqpx), UZ_WR_SEND);
}

static void uz_wr_send_imm(struct ibv_qp_ex *ibqpx, __be32 imm_data)
{
	struct uz_send_wqe *wqe = uz_wr_begin(qpx_to_uqp(ibqpx),
					      UZ_WR_SEND_IMM);

	/* Network order in the WQE, as in the work request. */
	if (wqe)
		wqe->imm_data = (__force uint32_t)imm_data;
}

static void uz_wr_rdma(struct uzura_qp *qp, uint8_t opcode, uint32_t rkey,
		       uint64_t remote_addr, __be32 imm_data)
{
	struct uz_send_wqe *wqe = uz_wr_begin(qp, opcode);

	if (!wqe)
		return;
	wqe->rkey = htole32(rkey);
	wqe->remote_addr = htole64(remote_addr);
	wqe->imm_data = (__force uint32_t)imm_data;
}

static void uz_wr_rdma_write(struct ibv_qp_ex *ibqpx, uint32_t rkey,
			     uint64_t remote_addr)
{
	uz_wr_rdma(qpx_to_uqp(ibqpx), UZ_WR_RDMA_WRITE, rkey, remote_addr, 0);
}

static void uz_wr_rdma_write_imm(struct ibv_qp_ex *ibqpx, uint32_t rkey,
				 uint64_t remote_addr, __be32 imm_data)
{
	uz_wr_rdma(qpx_to_uqp(ibqpx), UZ_WR_RDMA_WRITE_IMM, rkey, remote_addr,
		   imm_data);
}

static void uz_wr_rdma_read(struct ibv_qp_ex *ibqpx, uint32_t rkey,
			    uint64_t remote_addr)
{
	uz_wr_rdma(qpx_to_uqp(ibqpx), UZ_WR_RDMA_READ, rkey, remote_addr, 0);
}

static void uz_wr_atomic(struct uzura_qp *qp, uint8_t opcode, uint32_t rkey,
			 uint64_t remote_addr, uint64_t compare_add,
			 uint64_t swap)
{
	struct uz_send_wqe *wqe;

	/* The device would fail the WQE and the QP with it (spec 8.7). */
	if (remote_addr & 7) {
		uz_wr_fail(qp, EINVAL);
		return;
	}
	wqe = uz_wr_begin(qp, opcode);
	if (!wqe)
		return;
	wqe->rkey = htole32(rkey);
	wqe->remote_addr = htole64(remote_addr);
	wqe->atomic.compare_add = htole64(compare_add);
	wqe->atomic.swap = htole64(swap);
}

static void uz_wr_atomic_cmp_swp(struct ibv_qp_ex *ibqpx, uint32_t rkey,
				 uint64_t remote_addr, uint64_t compare,
				 uint64_t swap)
{
	uz_wr_atomic(qpx_to_uqp(ibqpx), UZ_WR_ATOMIC_CMP_SWP, rkey,
		     remote_addr, compare, swap);
}

static void uz_wr_atomic_fetch_add(struct ibv_qp_ex *ibqpx, uint32_t rkey,
				   uint64_t remote_addr, uint64_t add)
{
	uz_wr_atomic(qpx_to_uqp(ibqpx), UZ_WR_ATOMIC_FETCH_ADD, rkey,
		     remote_addr, add, 0);
}

/* The device takes FLUSH's type and level as verbs numbers them (IBA's). */
static_assert(IBV_FLUSH_GLOBAL == UZ_FLUSH_GLOBAL &&
	      IBV_FLUSH_PERSISTENT == UZ_FLUSH_PERSISTENT &&
	      IBV_FLUSH_RANGE == UZ_FLUSH_RANGE && IBV_FLUSH_MR == UZ_FLUSH_MR,
	      "FLUSH numbers");

/* The 8 bytes go in the WQE as they are in memory, written whole. */
static void uz_wr_atomic_write(struct ibv_qp_ex *ibqpx, uint32_t rkey,
			       uint64_t remote_addr, const void *atomic_wr)
{
	struct uzura_qp *qp = qpx_to_uqp(ibqpx);
	struct uz_send_wqe *wqe;

	if (remote_addr & 7) {
		uz_wr_fail(qp, EINVAL);
		return;
	}
	wqe = uz_wr_begin(qp, UZ_WR_ATOMIC_WRITE);
	if (!wqe)
		return;
	wqe->rkey = htole32(rkey);
	wqe->remote_addr = htole64(remote_addr);
	memcpy(&wqe->atomic.compare_add, atomic_wr, 8);
}

static void uz_wr_flush(struct ibv_qp_ex *ibqpx, uint32_t rkey,
			uint64_t remote_addr, size_t len, uint8_t type,
			uint8_t level)
{
	struct uzura_qp *qp = qpx_to_uqp(ibqpx);
	struct uz_send_wqe *wqe;

	if (!type || type & ~(IBV_FLUSH_GLOBAL | IBV_FLUSH_PERSISTENT) ||
	    (level != IBV_FLUSH_RANGE && level != IBV_FLUSH_MR) ||
	    (level == IBV_FLUSH_RANGE && len > UZ_MAX_MSG_SZ)) {
		uz_wr_fail(qp, EINVAL);
		return;
	}
	wqe = uz_wr_begin(qp, UZ_WR_FLUSH);
	if (!wqe)
		return;
	wqe->rkey = htole32(rkey);
	wqe->remote_addr = htole64(remote_addr);
	/* The whole MR: the RETH's range means nothing. */
	if (level == IBV_FLUSH_RANGE)
		wqe->flush.length = htole64(len);
	wqe->flush.type = type;
	wqe->flush.level = level;
}

/* A key to invalidate: little-endian in imm_data, like every key. */
static void uz_wr_inv(struct uzura_qp *qp, uint8_t opcode, uint32_t rkey)
{
	struct uz_send_wqe *wqe = uz_wr_begin(qp, opcode);

	if (wqe)
		wqe->imm_data = htole32(rkey);
}

static void uz_wr_local_inv(struct ibv_qp_ex *ibqpx, uint32_t invalidate_rkey)
{
	uz_wr_inv(qpx_to_uqp(ibqpx), UZ_WR_LOCAL_INV, invalidate_rkey);
}

static void uz_wr_send_inv(struct ibv_qp_ex *ibqpx, uint32_t invalidate_rkey)
{
	uz_wr_inv(qpx_to_uqp(ibqpx), UZ_WR_SEND_INV, invalidate_rkey);
}

/* A type 2 window; type 1 windows are bound by ibv_bind_mw. */
static void uz_wr_bind_mw(struct ibv_qp_ex *ibqpx, struct ibv_mw *mw,
			  uint32_t rkey,
			  const struct ibv_mw_bind_info *bind_info)
{
	struct uzura_qp *qp = qpx_to_uqp(ibqpx);
	struct uz_send_wqe *wqe;
	int err;

	if (!mw || mw->type != IBV_MW_TYPE_2) {
		uz_wr_fail(qp, EINVAL);
		return;
	}
	wqe = uz_wr_begin(qp, UZ_WR_BIND_MW);
	if (!wqe)
		return;
	err = uzura_bind_wqe(wqe, mw, rkey, bind_info);
	if (err)
		uz_wr_fail(qp, err);
}

/* ---- setters ---- */

static void uz_wr_set_ud_addr(struct ibv_qp_ex *ibqpx, struct ibv_ah *ah,
			      uint32_t remote_qpn, uint32_t remote_qkey)
{
	struct uzura_qp *qp = qpx_to_uqp(ibqpx);
	struct uz_send_wqe *wqe = uz_wr_cur(qp);

	if (!wqe)
		return;
	if (!ah || qp->ibqp.qp_type != IBV_QPT_UD) {
		uz_wr_fail(qp, EINVAL);
		return;
	}
	wqe->ud.ahn = htole32(to_uah(ah)->ahn);
	wqe->ud.remote_qpn = htole32(remote_qpn);
	wqe->ud.remote_qkey = htole32(remote_qkey);
	qp->wr_need_dest = false;
}

/* The peer's XRC SRQ the WQE is for (XRC_SEND QPs only). */
static void uz_wr_set_xrc_srqn(struct ibv_qp_ex *ibqpx, uint32_t remote_srqn)
{
	struct uzura_qp *qp = qpx_to_uqp(ibqpx);
	struct uz_send_wqe *wqe = uz_wr_cur(qp);

	if (!wqe)
		return;
	wqe->xrc_srqn = htole32(remote_srqn);
	qp->wr_need_dest = false;
}

static void uz_wr_set_sge_list(struct ibv_qp_ex *ibqpx, size_t num_sge,
			       const struct ibv_sge *sg_list)
{
	struct uzura_qp *qp = qpx_to_uqp(ibqpx);
	struct uz_send_wqe *wqe = uz_wr_cur(qp);
	struct uz_sge *sge;
	size_t i;

	if (!wqe)
		return;
	if (num_sge > qp->sq.max_sge || (num_sge && !sg_list)) {
		uz_wr_fail(qp, EINVAL);
		return;
	}
	sge = (struct uz_sge *)(wqe + 1);
	for (i = 0; i < num_sge; i++) {
		sge[i].addr = htole64(sg_list[i].addr);
		sge[i].length = htole32(sg_list[i].length);
		sge[i].lkey = htole32(sg_list[i].lkey);
	}
	wqe->num_sge = num_sge;
}

static void uz_wr_set_sge(struct ibv_qp_ex *ibqpx, uint32_t lkey,
			  uint64_t addr, uint32_t length)
{
	struct ibv_sge sge = { .addr = addr, .length = length, .lkey = lkey };

	uz_wr_set_sge_list(ibqpx, 1, &sge);
}

static void uz_wr_set_inline_data_list(struct ibv_qp_ex *ibqpx,
				       size_t num_buf,
				       const struct ibv_data_buf *buf_list)
{
	struct uzura_qp *qp = qpx_to_uqp(ibqpx);
	struct uz_send_wqe *wqe = uz_wr_cur(qp);
	uint8_t *dst;
	size_t len = 0, i;

	if (!wqe)
		return;
	/* READ, atomics and local WRs have no outgoing data to inline. */
	if (uz_wr_no_data(wqe) || (num_buf && !buf_list)) {
		uz_wr_fail(qp, EINVAL);
		return;
	}
	dst = (uint8_t *)(wqe + 1);
	for (i = 0; i < num_buf; i++) {
		if (buf_list[i].length > qp->max_inline - len) {
			uz_wr_fail(qp, EINVAL);
			return;
		}
		memcpy(dst + len, buf_list[i].addr, buf_list[i].length);
		len += buf_list[i].length;
	}
	wqe->num_sge = 0;
	wqe->flags |= UZ_WQE_F_INLINE;
	wqe->inline_len = htole32(len);
}

static void uz_wr_set_inline_data(struct ibv_qp_ex *ibqpx, void *addr,
				  size_t length)
{
	struct ibv_data_buf buf = { .addr = addr, .length = length };

	uz_wr_set_inline_data_list(ibqpx, 1, &buf);
}

/*
 * Builders of work requests the QP cannot carry: the batch fails with
 * EOPNOTSUPP (the QP was created without them, so they are not called by
 * a correct program; these stand in for NULL pointers).
 */
static void uz_wr_unsupported(struct ibv_qp_ex *ibqpx)
{
	uz_wr_fail(qpx_to_uqp(ibqpx), EOPNOTSUPP);
}

static void uz_wr_no_atomic_cmp_swp(struct ibv_qp_ex *ibqpx, uint32_t rkey,
				    uint64_t remote_addr, uint64_t compare,
				    uint64_t swap)
{
	uz_wr_unsupported(ibqpx);
}

static void uz_wr_no_atomic_fetch_add(struct ibv_qp_ex *ibqpx, uint32_t rkey,
				      uint64_t remote_addr, uint64_t add)
{
	uz_wr_unsupported(ibqpx);
}

static void uz_wr_no_bind_mw(struct ibv_qp_ex *ibqpx, struct ibv_mw *mw,
			     uint32_t rkey,
			     const struct ibv_mw_bind_info *bind_info)
{
	uz_wr_unsupported(ibqpx);
}

static void uz_wr_no_rkey(struct ibv_qp_ex *ibqpx, uint32_t rkey)
{
	uz_wr_unsupported(ibqpx);
}

static void uz_wr_no_rdma(struct ibv_qp_ex *ibqpx, uint32_t rkey,
			  uint64_t remote_addr)
{
	uz_wr_unsupported(ibqpx);
}

static void uz_wr_no_rdma_write_imm(struct ibv_qp_ex *ibqpx, uint32_t rkey,
				    uint64_t remote_addr, __be32 imm_data)
{
	uz_wr_unsupported(ibqpx);
}

static void uz_wr_no_send_imm(struct ibv_qp_ex *ibqpx, __be32 imm_data)
{
	uz_wr_unsupported(ibqpx);
}

static void uz_wr_no_send_tso(struct ibv_qp_ex *ibqpx, void *hdr,
			      uint16_t hdr_sz, uint16_t mss)
{
	uz_wr_unsupported(ibqpx);
}

static void uz_wr_no_atomic_write(struct ibv_qp_ex *ibqpx, uint32_t rkey,
				  uint64_t remote_addr, const void *atomic_wr)
{
	uz_wr_unsupported(ibqpx);
}

static void uz_wr_no_flush(struct ibv_qp_ex *ibqpx, uint32_t rkey,
			   uint64_t remote_addr, size_t len, uint8_t type,
			   uint8_t level)
{
	uz_wr_unsupported(ibqpx);
}

/* ---- the batch ---- */

static void uz_wr_start(struct ibv_qp_ex *ibqpx)
{
	struct uzura_qp *qp = qpx_to_uqp(ibqpx);

	pthread_spin_lock(&qp->sq.lock);
	qp->wr_pi = qp->sq.pi;
	qp->wr_wqe = NULL;
	qp->wr_err = 0;
	qp->wr_need_dest = false;
}

static int uz_wr_complete(struct ibv_qp_ex *ibqpx)
{
	struct uzura_qp *qp = qpx_to_uqp(ibqpx);
	struct uzura_wq *sq = &qp->sq;
	int ret = qp->wr_err;

	if (!ret && qp->wr_need_dest)
		ret = EINVAL;
	/* The device refuses doorbells of a QP in RESET. */
	if (!ret && qp->state == IBV_QPS_RESET && qp->wr_pi != sq->pi)
		ret = EINVAL;
	if (!ret && qp->wr_pi != sq->pi) {
		uint32_t old = sq->pi;

		sq->pi = qp->wr_pi;
		uz_sq_publish(sq, old);
	}
	qp->wr_wqe = NULL;
	pthread_spin_unlock(&sq->lock);
	return ret;
}

static void uz_wr_abort(struct ibv_qp_ex *ibqpx)
{
	struct uzura_qp *qp = qpx_to_uqp(ibqpx);

	qp->wr_wqe = NULL;
	pthread_spin_unlock(&qp->sq.lock);
}

/*
 * Every builder the QP type has works, asked for in send_ops_flags or not;
 * the others, and those of operations the device lacks, fail the batch.
 */
static void uz_qp_set_send_ops(struct uzura_qp *qp)
{
	struct ibv_qp_ex *qpx = &qp->vqp.qp_ex;
	bool xrc = qp->ibqp.qp_type == IBV_QPT_XRC_SEND;
	/* RC's operations; XRC_SEND has them but for binding windows. */
	bool rc = qp->ibqp.qp_type == IBV_QPT_RC || xrc;
	bool write = rc || qp->ibqp.qp_type == IBV_QPT_UC;
	bool placement = rc && (to_uctx(qp->ibqp.context)->caps &
				UZ_CAP_PLACEMENT);
	bool raw = qp->ibqp.qp_type == IBV_QPT_RAW_PACKET;

	qpx->wr_send = uz_wr_send;
	qpx->wr_send_imm = raw ? uz_wr_no_send_imm : uz_wr_send_imm;
	qpx->wr_rdma_write = write ? uz_wr_rdma_write : uz_wr_no_rdma;
	qpx->wr_rdma_write_imm = write ? uz_wr_rdma_write_imm :
					 uz_wr_no_rdma_write_imm;
	qpx->wr_rdma_read = rc ? uz_wr_rdma_read : uz_wr_no_rdma;
	qpx->wr_atomic_cmp_swp = rc ? uz_wr_atomic_cmp_swp :
				      uz_wr_no_atomic_cmp_swp;
	qpx->wr_atomic_fetch_add = rc ? uz_wr_atomic_fetch_add :
					uz_wr_no_atomic_fetch_add;
	qpx->wr_bind_mw = rc && !xrc ? uz_wr_bind_mw : uz_wr_no_bind_mw;
	qpx->wr_local_inv = rc ? uz_wr_local_inv : uz_wr_no_rkey;
	qpx->wr_send_inv = rc ? uz_wr_send_inv : uz_wr_no_rkey;
	qpx->wr_send_tso = uz_wr_no_send_tso;
	qpx->wr_set_xrc_srqn = xrc ? uz_wr_set_xrc_srqn : uz_wr_no_rkey;
	qpx->wr_atomic_write = placement ? uz_wr_atomic_write :
					   uz_wr_no_atomic_write;
	qpx->wr_flush = placement ? uz_wr_flush : uz_wr_no_flush;

	qpx->wr_set_sge = uz_wr_set_sge;
	qpx->wr_set_sge_list = uz_wr_set_sge_list;
	qpx->wr_set_inline_data = uz_wr_set_inline_data;
	qpx->wr_set_inline_data_list = uz_wr_set_inline_data_list;
	qpx->wr_set_ud_addr = uz_wr_set_ud_addr;

	qpx->wr_start = uz_wr_start;
	qpx->wr_complete = uz_wr_complete;
	qpx->wr_abort = uz_wr_abort;
}

struct ibv_qp *uzura_create_qp_ex(struct ibv_context *context,
				  struct ibv_qp_init_attr_ex *attr)
{
	struct ibv_qp_init_attr_ex attr_cmd;
	uint64_t ops = 0;
	struct uzura_qp *qp;

	/* Made by the kernel alone, with no queues here (xrc.c). */
	if (attr->qp_type == IBV_QPT_XRC_RECV)
		return uzura_create_xrc_recv_qp(context, attr);
	/* Over an indirection table, with no queues either (rss.c). */
	if (attr->comp_mask &
	    (IBV_QP_INIT_ATTR_RX_HASH | IBV_QP_INIT_ATTR_IND_TABLE))
		return uzura_create_rss_qp(context, attr);
	if (attr->comp_mask & ~UZ_QP_COMP_MASK ||
	    ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) &&
	     attr->create_flags)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd) {
		errno = EINVAL;
		return NULL;
	}
	if (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) {
		uint64_t rc_ops = UZ_RC_SEND_OPS, xrc_ops = UZ_XRC_SEND_OPS;

		if (to_uctx(context)->caps & UZ_CAP_PLACEMENT) {
			rc_ops |= UZ_RC_PLACEMENT_OPS;
			xrc_ops |= UZ_RC_PLACEMENT_OPS;
		}
		ops = attr->send_ops_flags;
		if ((attr->qp_type == IBV_QPT_RC && ops & ~rc_ops) ||
		    (attr->qp_type == IBV_QPT_XRC_SEND && ops & ~xrc_ops) ||
		    (attr->qp_type == IBV_QPT_UC && ops & ~UZ_UC_SEND_OPS) ||
		    (attr->qp_type == IBV_QPT_UD && ops & ~UZ_UD_SEND_OPS) ||
		    (attr->qp_type == IBV_QPT_RAW_PACKET &&
		     ops & ~UZ_RAW_SEND_OPS)) {
			errno = EOPNOTSUPP;
			return NULL;
		}
	}

	/* No create flag is supported: the legacy command carries none. */
	attr_cmd = *attr;
	attr_cmd.comp_mask &= ~IBV_QP_INIT_ATTR_CREATE_FLAGS;
	qp = uzura_qp_create(context, &attr_cmd);
	if (!qp)
		return NULL;
	attr->cap = attr_cmd.cap;
	if (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) {
		uz_qp_set_send_ops(qp);
		qp->vqp.comp_mask |= VERBS_QP_EX;
	}
	return &qp->ibqp;
}
