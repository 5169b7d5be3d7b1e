// SPDX-License-Identifier: GPL-2.0-or-later OR BSD-2-Clause
/*
 * uzura provider: verbs.  Control operations go through the uverbs
 * commands; posting and polling write WQEs and read CQEs in the rings the
 * kernel mapped for us (formats in uzura_io_defs.h, docs/device-spec.md 8.5,
 * 8.6) and ring the doorbells in the context's doorbell page.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <util/mmio.h>
#include <util/udma_barrier.h>

#include "uzura.h"

#define UZ_SQ_LOG_WQE_MIN	6
#define UZ_RQ_LOG_WQE_MIN	4

/* ---- helpers ---- */

static void *uz_map(struct ibv_context *ibctx, size_t size, uint64_t key)
{
	void *p;

	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED,
		 ibctx->cmd_fd, key);
	return p == MAP_FAILED ? NULL : p;
}

static uint32_t uz_log2_up(uint32_t n)
{
	uint32_t l = 0;

	while ((1u << l) < n)
		l++;
	return l;
}

int uz_wq_init(struct uzura_context *ctx, struct uzura_wq *wq, uint64_t key,
	       uint32_t size, uint32_t log_depth, uint32_t log_wqe,
	       uint32_t db_offset)
{
	if (db_offset + 4 > ctx->db_page_size)
		return EINVAL;
	wq->ring = uz_map(&ctx->ibvctx.context, size, key);
	if (!wq->ring)
		return errno;
	wq->map_size = size;
	wq->log_depth = log_depth;
	wq->log_wqe = log_wqe;
	wq->db = (uint8_t *)ctx->db_page + db_offset;
	wq->pi = 0;
	wq->ci = 0;
	pthread_spin_init(&wq->lock, PTHREAD_PROCESS_PRIVATE);
	return 0;
}

void uz_wq_fini(struct uzura_wq *wq)
{
	if (!wq->ring)
		return;
	munmap(wq->ring, wq->map_size);
	pthread_spin_destroy(&wq->lock);
	wq->ring = NULL;
}

/* ---- device, port, PD, MR ---- */

int uzura_query_device_ex(struct ibv_context *context,
			  const struct ibv_query_device_ex_input *input,
			  struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct ib_uverbs_ex_query_device_resp resp;
	size_t resp_size = sizeof(resp);
	uint64_t fw;
	int ret;

	ret = ibv_cmd_query_device_any(context, input, attr, attr_size,
				       &resp, &resp_size);
	if (ret)
		return ret;

	/* fw_ver is the device's UZ_VERSION: major << 16 | minor. */
	fw = resp.base.fw_ver;
	snprintf(attr->orig_attr.fw_ver, sizeof(attr->orig_attr.fw_ver),
		 "%u.%u", (unsigned int)((fw >> 16) & 0xffff),
		 (unsigned int)(fw & 0xffff));
	return 0;
}

int uzura_query_port(struct ibv_context *context, uint8_t port,
		     struct ibv_port_attr *attr)
{
	struct ibv_query_port cmd;

	return ibv_cmd_query_port(context, port, attr, &cmd, sizeof(cmd));
}

struct ibv_mr *uzura_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
			    uint64_t hca_va, int access)
{
	struct ib_uverbs_reg_mr_resp resp;
	struct ibv_reg_mr cmd;
	struct verbs_mr *vmr;
	int ret;

	vmr = calloc(1, sizeof(*vmr));
	if (!vmr)
		return NULL;
	ret = ibv_cmd_reg_mr(pd, addr, length, hca_va, access, vmr, &cmd,
			     sizeof(cmd), &resp, sizeof(resp));
	if (ret) {
		free(vmr);
		errno = ret;
		return NULL;
	}
	return &vmr->ibv_mr;
}

/* The kernel changes the MR in place: its keys stay. */
int uzura_rereg_mr(struct verbs_mr *vmr, int flags, struct ibv_pd *pd,
		   void *addr, size_t length, int access)
{
	struct ib_uverbs_rereg_mr_resp resp;
	struct ibv_rereg_mr cmd;

	return ibv_cmd_rereg_mr(vmr, flags, addr, length, (uintptr_t)addr,
				access, pd, &cmd, sizeof(cmd), &resp,
				sizeof(resp));
}

/* Prefetch into an ODP MR: the kernel maps the pages before it returns. */
int uzura_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice,
		    uint32_t flags, struct ibv_sge *sg_list, uint32_t num_sge)
{
	return ibv_cmd_advise_mr(pd, advice, flags, sg_list, num_sge);
}

int uzura_dereg_mr(struct verbs_mr *vmr)
{
	int ret;

	ret = ibv_cmd_dereg_mr(vmr);
	if (ret)
		return ret;
	free(vmr);
	return 0;
}

/*
 * An MR of this kernel context by its handle: the kernel gives its keys,
 * address and length; ibv_unimport_mr leaves it registered.
 */
struct ibv_mr *uzura_import_mr(struct ibv_pd *pd, uint32_t mr_handle)
{
	struct verbs_mr *vmr;
	int ret;

	vmr = calloc(1, sizeof(*vmr));
	if (!vmr) {
		errno = ENOMEM;
		return NULL;
	}
	ret = ibv_cmd_query_mr(pd, vmr, mr_handle);
	if (ret) {
		free(vmr);
		errno = ret;
		return NULL;
	}
	return &vmr->ibv_mr;
}

void uzura_unimport_mr(struct ibv_mr *ibmr)
{
	free(verbs_get_mr(ibmr));
}

/* ---- QP table: poll_cq finds the QP of a CQE by its qpn ---- */

struct list_head *uz_qp_bucket(struct uzura_context *ctx, uint32_t qpn)
{
	return &ctx->qp_table[qpn % UZURA_QP_TABLE_SIZE];
}

/* Called with the CQ lock held; destroy_qp takes the CQ locks to unlink. */
static struct uzura_qp *uz_qp_lookup(struct uzura_context *ctx, uint32_t qpn)
{
	struct uzura_qp *qp, *found = NULL;

	pthread_spin_lock(&ctx->qp_table_lock);
	list_for_each(uz_qp_bucket(ctx, qpn), qp, entry) {
		if (qp->ibqp.qp_num == qpn) {
			found = qp;
			break;
		}
	}
	pthread_spin_unlock(&ctx->qp_table_lock);
	return found;
}

/*
 * XRC SRQ table: a receive through an XRC target QP, which may be another
 * process's, names the SRQ it consumed (uz_cqe.src_qp).  Like the QP
 * table, looked up with the CQ lock held (the SRQ's CQ: an XRC SRQ's
 * receives complete there only), and destroy_srq unlinks under that lock.
 */
static struct list_head *uz_srq_bucket(struct uzura_context *ctx,
				       uint32_t srqn)
{
	return &ctx->srq_table[srqn % UZURA_SRQ_TABLE_SIZE];
}

/*
 * Newest first: an SRQ another thread destroys may still be linked when
 * the device gives its number to a new one, whose receives are then found.
 */
void uzura_srq_table_add(struct uzura_context *ctx, struct uzura_srq *srq)
{
	pthread_spin_lock(&ctx->srq_table_lock);
	list_add(uz_srq_bucket(ctx, srq->srqn), &srq->entry);
	pthread_spin_unlock(&ctx->srq_table_lock);
}

static struct uzura_srq *uz_srq_lookup(struct uzura_context *ctx,
				       uint32_t srqn)
{
	struct uzura_srq *srq, *found = NULL;

	pthread_spin_lock(&ctx->srq_table_lock);
	list_for_each(uz_srq_bucket(ctx, srqn), srq, entry) {
		if (srq->srqn == srqn) {
			found = srq;
			break;
		}
	}
	pthread_spin_unlock(&ctx->srq_table_lock);
	return found;
}

/* ---- CQ ---- */

struct ibv_cq *uzura_create_cq(struct ibv_context *context, int cqe,
			       struct ibv_comp_channel *channel,
			       int comp_vector)
{
	struct uzura_context *ctx = to_uctx(context);
	struct uzv_create_cq_resp resp = {};
	struct uzv_create_cq cmd = {};
	struct uzura_cq *cq;
	int ret;

	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return NULL;
	ret = ibv_cmd_create_cq(context, uzura_cq_ask(ctx, cqe), channel,
				comp_vector, &cq->ibcq,
				&cmd.ibv_cmd, sizeof(cmd), &resp.ibv_resp,
				sizeof(resp));
	if (ret) {
		errno = ret;
		goto err_free;
	}
	ret = uzura_cq_init(ctx, cq, &resp.drv_payload, cqe, false);
	if (ret) {
		ibv_cmd_destroy_cq(&cq->ibcq);
		errno = ret;
		goto err_free;
	}
	return &cq->ibcq;

err_free:
	free(cq);
	return NULL;
}

/* How many CQEs to ask the kernel for: twice @cqe where the device allows. */
uint32_t uzura_cq_ask(struct uzura_context *ctx, uint32_t cqe)
{
	return cqe && cqe <= ctx->max_cqe / 2 ? 2 * cqe : cqe;
}

/*
 * Map the ring of a CQ the kernel created for @cqe completions; 0 or an
 * errno.  A ring of at least twice that reports its consumer index every
 * half ring (uzura_cq_report) and offers half its depth.  Its entries
 * are of the size the kernel says, struct uz_cqe_ts for a CQ with
 * timestamps (@ts), struct uz_cqe otherwise (a kernel from before
 * timestamps says 0).
 */
int uzura_cq_init(struct uzura_context *ctx, struct uzura_cq *cq,
		  const struct uzura_create_cq_resp *resp, uint32_t cqe,
		  bool ts)
{
	uint32_t depth = 1u << resp->log_depth;
	uint32_t cqe_size = resp->cqe_size ? resp->cqe_size :
					     sizeof(struct uz_cqe);

	if (resp->db_offset + 4 > ctx->db_page_size ||
	    cqe_size != (ts ? sizeof(struct uz_cqe_ts) :
			      sizeof(struct uz_cqe)) ||
	    resp->ring_size < ((uint64_t)cqe_size << resp->log_depth))
		return EINVAL;
	cq->ring = uz_map(&ctx->ibvctx.context, resp->ring_size,
			  resp->ring_mmap_key);
	if (!cq->ring)
		return errno;
	cq->map_size = resp->ring_size;
	cq->log_depth = resp->log_depth;
	cq->cqe_size = cqe_size;
	cq->cqn = resp->cqn;
	cq->db = (uint8_t *)ctx->db_page + resp->db_offset;
	cq->report_every = 1;
	if (cqe && depth / 2 >= cqe) {
		cq->report_every = depth / 2;
		cq->ibcq.cqe = depth / 2;
	}
	pthread_spin_init(&cq->lock, PTHREAD_PROCESS_PRIVATE);
	return 0;
}

/*
 * Finish a resize: map the new ring, copy the CQEs not polled yet to its
 * first slots, which the device left to us, with the phase of its first
 * pass (device spec 8.5.1), and poll it from index 0.  0 or an errno;
 * until it succeeds the CQ shows no completions, and loses none.  The
 * entries keep their size (and timestamps).
 */
static int uzura_cq_move(struct uzura_cq *cq)
{
	uint32_t i, depth = 1u << cq->move_log;
	uint8_t *new;

	new = uz_map(cq->ibcq.context, cq->move_size, cq->move_key);
	if (!new)
		return errno;
	for (i = 0; i < cq->move_kept; i++) {
		void *to = new + (size_t)i * cq->cqe_size;

		memcpy(to, uz_cq_entry(cq, cq->ci + i), cq->cqe_size);
		uz_cq_entry_cqe(cq, to)->flags |= UZ_CQE_PHASE;
	}
	munmap(cq->ring, cq->map_size);
	cq->ring = new;
	cq->map_size = cq->move_size;
	cq->log_depth = cq->move_log;
	cq->ci = 0;
	cq->ci_reported = 0;
	cq->report_every = 1;
	cq->ibcq.cqe = depth;
	if (depth / 2 >= cq->move_cqe) {
		cq->report_every = depth / 2;
		cq->ibcq.cqe = depth / 2;
	}
	cq->moving = false;
	return 0;
}

/*
 * The kernel moves the CQ to a new ring; the CQ's lock keeps pollers out
 * until the CQEs not polled yet are in it.
 */
int uzura_resize_cq(struct ibv_cq *ibcq, int cqe)
{
	struct uzura_context *ctx = to_uctx(ibcq->context);
	struct uzura_cq *cq = to_ucq(ibcq);
	struct uzv_resize_cq_resp resp = {};
	struct uzv_resize_cq cmd = {};
	int ret;

	if (cqe < 1)
		return EINVAL;
	pthread_spin_lock(&cq->lock);
	if (cq->moving) {
		ret = uzura_cq_move(cq);
		if (ret)
			goto out;
	}
	cmd.ci = cq->ci;
	ret = ibv_cmd_resize_cq(ibcq, uzura_cq_ask(ctx, cqe), &cmd.ibv_cmd,
				sizeof(cmd), &resp.ibv_resp, sizeof(resp));
	if (ret)
		goto out;
	/* The kernel checked these against the ring it made. */
	cq->moving = true;
	cq->move_key = resp.ring_mmap_key;
	cq->move_size = resp.ring_size;
	cq->move_log = resp.log_depth;
	cq->move_kept = resp.kept;
	cq->move_cqe = cqe;
	ret = uzura_cq_move(cq);
out:
	pthread_spin_unlock(&cq->lock);
	return ret;
}

int uzura_destroy_cq(struct ibv_cq *ibcq)
{
	struct uzura_cq *cq = to_ucq(ibcq);
	int ret;

	ret = ibv_cmd_destroy_cq(ibcq);
	if (ret)
		return ret;
	uzura_pd_put(cq->parent);
	munmap(cq->ring, cq->map_size);
	pthread_spin_destroy(&cq->lock);
	free(cq);
	return 0;
}

/* The CQE at the consumer index if the device has written it, or NULL. */
struct uz_cqe *uzura_cq_next(struct uzura_cq *cq)
{
	/* A resize that could not map the new ring tries again. */
	if (cq->moving && uzura_cq_move(cq))
		return NULL;
	return uz_cq_written(cq, cq->ci);
}

static enum ibv_wc_opcode uz_wc_opcode(uint8_t op)
{
	switch (op) {
	case UZ_WC_RDMA_WRITE:
		return IBV_WC_RDMA_WRITE;
	case UZ_WC_RDMA_READ:
		return IBV_WC_RDMA_READ;
	case UZ_WC_COMP_SWAP:
		return IBV_WC_COMP_SWAP;
	case UZ_WC_FETCH_ADD:
		return IBV_WC_FETCH_ADD;
	case UZ_WC_BIND_MW:
		return IBV_WC_BIND_MW;
	case UZ_WC_LOCAL_INV:
		return IBV_WC_LOCAL_INV;
	case UZ_WC_FLUSH:
		return IBV_WC_FLUSH;
	case UZ_WC_ATOMIC_WRITE:
		return IBV_WC_ATOMIC_WRITE;
	case UZ_WC_RECV:
		return IBV_WC_RECV;
	case UZ_WC_RECV_RDMA_WITH_IMM:
		return IBV_WC_RECV_RDMA_WITH_IMM;
	case UZ_WC_CRW:
		return UZURADV_WC_CRW;
	case UZ_WC_STCRW:
		return UZURADV_WC_STCRW;
	case UZ_WC_TM_ADD:
		return IBV_WC_TM_ADD;
	case UZ_WC_TM_DEL:
		return IBV_WC_TM_DEL;
	case UZ_WC_TM_SYNC:
		return IBV_WC_TM_SYNC;
	case UZ_WC_TM_RECV:
		return IBV_WC_TM_RECV;
	case UZ_WC_TM_NO_TAG:
		return IBV_WC_TM_NO_TAG;
	default:
		return IBV_WC_SEND;
	}
}

/*
 * A send CQE frees its WQE's slot and every earlier one (unsignalled WQEs
 * that succeeded have no CQE).  Completions come in SQ order and every
 * signalled WQE has one, so the CQE's WQE lies at or before the first
 * signalled outstanding slot: a success is exactly that slot; an error or
 * flush (written for unsignalled WQEs too) is the first slot up to there
 * with the CQE's wr_id.  CRW slots complete without a CQE of their own
 * (uzura_crw_complete).
 */
static void uz_sq_complete(struct uzura_qp *qp, const struct uz_cqe *cqe)
{
	struct uzura_wq *sq = &qp->sq;
	uint64_t wr_id = le64toh(cqe->wr_id);
	uint32_t mask = uz_wq_depth(sq) - 1;
	bool ok = cqe->status == UZ_WC_STATUS_SUCCESS;
	uint32_t i;

	pthread_spin_lock(&sq->lock);
	for (i = sq->ci; i != sq->pi; i = (i + 1) & UZ_DB_PI_MASK) {
		struct uzura_sq_slot *s = &qp->slots[i & mask];

		if (s->crw)
			continue;
		if (ok ? s->signaled : s->wr_id == wr_id)
			break;
		if (s->signaled) {
			/* No match: the device could not read the WQE. */
			i = sq->ci;
			break;
		}
	}
	if (i == sq->pi && !ok && sq->ci != sq->pi)
		i = sq->ci;	/* unreadable WQE among unsignalled ones */
	if (i != sq->pi)
		sq->ci = (i + 1) & UZ_DB_PI_MASK;
	pthread_spin_unlock(&sq->lock);
}

/* Receive WQEs of an RQ or SRQ are taken in ring order. */
void uz_rq_complete(struct uzura_wq *wq)
{
	pthread_spin_lock(&wq->lock);
	if (wq->ci != wq->pi)
		wq->ci = (wq->ci + 1) & UZ_DB_PI_MASK;
	pthread_spin_unlock(&wq->lock);
}

/* The fields of wc every CQE has; qp_num is the QP in uz_cqe.qpn. */
static void uz_wc_fill(const struct uz_cqe *cqe, struct ibv_wc *wc)
{
	memset(wc, 0, sizeof(*wc));
	wc->wr_id = le64toh(cqe->wr_id);
	wc->status = cqe->status;
	wc->opcode = uz_wc_opcode(cqe->opcode);
	wc->vendor_err = cqe->vendor_err;
	wc->byte_len = le32toh(cqe->byte_len);
	wc->qp_num = le32toh(cqe->qpn) & 0xffffff;
}

/* The fields of a receive's wc. */
static void uz_wc_recv(const struct uz_cqe *cqe, struct ibv_wc *wc)
{
	if (cqe->wc_flags & UZ_WC_F_IMM) {
		/* Both the CQE and ibv_wc keep it in network order. */
		wc->imm_data = (__force __be32)cqe->imm_data;
		wc->wc_flags |= IBV_WC_WITH_IMM;
	} else if (cqe->wc_flags & UZ_WC_F_INV) {
		wc->invalidated_rkey = le32toh(cqe->imm_data);
		wc->wc_flags |= IBV_WC_WITH_INV;
	}
	if (cqe->wc_flags & UZ_WC_F_GRH) {
		wc->wc_flags |= IBV_WC_GRH;
		/*
		 * RoCE has no SL on the wire.  Like ConnectX, report the L3
		 * header type of the frame (RoCE Annex A17.4.5.1) in sl: UCX's
		 * UD transport up to 1.18 takes it from there to find the
		 * destination address in the GRH area, and drops every packet
		 * of a device that leaves sl at 0.
		 */
		wc->sl = (cqe->wc_flags & UZ_WC_F_IPV4) ? UZ_WC_SL_L3_IPV4 :
							 UZ_WC_SL_L3_IPV6;
	}
	wc->src_qp = le32toh(cqe->src_qp) & 0xffffff;
	wc->pkey_index = le16toh(cqe->pkey_index);
}

/*
 * A receive through an XRC target QP, which may be another process's or
 * the kernel's: qp_num is that QP, and src_qp the XRC SRQ whose WQE it
 * consumed (as mlx4 reports it; the CQE does not carry the initiator's
 * QP).  False when the SRQ is not this context's.
 */
static bool uz_xrc_convert(struct uzura_context *ctx,
			   const struct uz_cqe *cqe, struct ibv_wc *wc)
{
	struct uzura_srq *srq;

	srq = uz_srq_lookup(ctx, le32toh(cqe->src_qp) & 0xffffff);
	if (!srq)
		return false;
	uz_wc_fill(cqe, wc);
	uz_rq_complete(&srq->rq);
	uz_wc_recv(cqe, wc);
	return true;
}

/*
 * A list operation of a TM SRQ, which the CQE names in qpn: false when
 * the SRQ is not this context's, or the operation's completion is one
 * the provider asked for itself (tm.c).
 */
static bool uz_tm_op_convert(struct uzura_context *ctx,
			     const struct uz_cqe *cqe, struct ibv_wc *wc)
{
	struct uzura_srq *srq;

	srq = uz_srq_lookup(ctx, le32toh(cqe->qpn) & 0xffffff);
	if (!srq || !srq->tm)
		return false;
	uz_wc_fill(cqe, wc);
	return uzura_tm_op_convert(srq, cqe, wc);
}

/*
 * Fill wc from a CQE; false when its QP (or SRQ) is gone or the CQE is
 * the provider's own (the CQE is dropped).
 */
bool uzura_cq_convert(struct uzura_context *ctx, const struct uz_cqe *cqe,
		      struct ibv_wc *wc)
{
	struct uzura_wq *rq;
	struct uzura_qp *qp;

	if (cqe->wc_flags & UZ_WC_F_XRC)
		return uz_xrc_convert(ctx, cqe, wc);
	if (uzura_tm_op_cqe(cqe))
		return uz_tm_op_convert(ctx, cqe, wc);
	qp = uz_qp_lookup(ctx, le32toh(cqe->qpn) & 0xffffff);
	if (!qp)
		return false;

	uz_wc_fill(cqe, wc);
	if (cqe->opcode == UZ_WC_CRW)
		return uzura_crw_complete(qp, cqe, wc);
	if (!(cqe->opcode & UZ_WC_RECV)) {
		uz_sq_complete(qp, cqe);
		return true;
	}
	/* An XRC_SEND QP has no receive side to complete. */
	rq = qp->srq ? &qp->srq->rq : &qp->rq;
	if (!rq->ring)
		return false;
	/* A tagged buffer's, or an SRQ WQE's (tm.c) */
	if (qp->srq && qp->srq->tm && uzura_tm_recv_cqe(cqe)) {
		uzura_tm_recv_convert(qp->srq, cqe, wc);
		return true;
	}
	uz_rq_complete(rq);
	uz_wc_recv(cqe, wc);
	return true;
}

int uzura_poll_cq(struct ibv_cq *ibcq, int ne, struct ibv_wc *wc)
{
	struct uzura_context *ctx = to_uctx(ibcq->context);
	struct uzura_cq *cq = to_ucq(ibcq);
	struct uz_cqe *cqe;
	int n = 0;

	pthread_spin_lock(&cq->lock);
	while (n < ne && (cqe = uzura_cq_next(cq))) {
		if (uzura_cq_convert(ctx, cqe, &wc[n]))
			n++;
		cq->ci = (cq->ci + 1) & UZ_DB_CI_MASK;
	}
	uzura_cq_report(cq, false);
	pthread_spin_unlock(&cq->lock);
	return n;
}

int uzura_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	struct uzura_cq *cq = to_ucq(ibcq);

	pthread_spin_lock(&cq->lock);
	uz_ring_db(cq->db, cq->ci | (solicited_only ? UZ_DB_ARM_SOLICITED :
						       UZ_DB_ARM));
	cq->ci_reported = cq->ci;
	pthread_spin_unlock(&cq->lock);
	return 0;
}

/* ---- QP ---- */

/* The CQs of a QP with an SQ; an XRC_SEND QP has no receive CQ. */
static void uz_lock_cqs(struct ibv_qp *ibqp)
{
	struct uzura_cq *scq = to_ucq(ibqp->send_cq);
	struct uzura_cq *rcq = ibqp->recv_cq ? to_ucq(ibqp->recv_cq) : scq;

	/* Address order, so that two destroys cannot deadlock. */
	if (scq == rcq) {
		pthread_spin_lock(&scq->lock);
	} else if (scq < rcq) {
		pthread_spin_lock(&scq->lock);
		pthread_spin_lock(&rcq->lock);
	} else {
		pthread_spin_lock(&rcq->lock);
		pthread_spin_lock(&scq->lock);
	}
}

static void uz_unlock_cqs(struct ibv_qp *ibqp)
{
	struct uzura_cq *scq = to_ucq(ibqp->send_cq);
	struct uzura_cq *rcq = ibqp->recv_cq ? to_ucq(ibqp->recv_cq) : scq;

	pthread_spin_unlock(&scq->lock);
	if (scq != rcq)
		pthread_spin_unlock(&rcq->lock);
}

/* WQE sizes for the caps asked for, within what the device accepts. */
static int uz_qp_sizes(struct uzura_context *ctx,
		       const struct ibv_qp_init_attr_ex *attr,
		       struct uzura_create_qp *ucmd)
{
	const struct ibv_qp_cap *cap = &attr->cap;
	uint32_t need;

	if (cap->max_send_sge > ctx->max_sge ||
	    cap->max_recv_sge > ctx->max_sge ||
	    cap->max_inline_data > ctx->max_inline)
		return EINVAL;
	need = sizeof(struct uz_send_wqe) +
	       max_t(uint32_t, cap->max_send_sge * sizeof(struct uz_sge),
		     cap->max_inline_data);
	ucmd->sq_log_wqe = max_t(uint32_t, uz_log2_up(need),
				 UZ_SQ_LOG_WQE_MIN);
	need = sizeof(struct uz_recv_wqe) +
	       (attr->srq ? 0 : cap->max_recv_sge) * sizeof(struct uz_sge);
	ucmd->rq_log_wqe = max_t(uint32_t, uz_log2_up(need),
				 UZ_RQ_LOG_WQE_MIN);
	if (ucmd->sq_log_wqe > ctx->sq_max_log_wqe ||
	    ucmd->rq_log_wqe > ctx->rq_max_log_wqe)
		return EINVAL;
	return 0;
}

static bool uz_qp_type_ok(struct uzura_context *ctx, enum ibv_qp_type type)
{
	switch (type) {
	case IBV_QPT_RC:
	case IBV_QPT_UD:
		return true;
	case IBV_QPT_UC:
		return ctx->caps & UZ_CAP_UC;
	case IBV_QPT_XRC_SEND:
		return ctx->caps & UZ_CAP_XRC;
	case IBV_QPT_RAW_PACKET:
		return ctx->caps & UZ_CAP_RAW;
	default:
		return false;
	}
}

/*
 * An RC, UC, UD, raw packet or XRC_SEND QP, for create_qp and
 * create_qp_ex (which checks the rest of attr); NULL with errno set.  A
 * raw packet QP has UD's queues.  An XRC_SEND QP is made like an RC QP
 * with no receive side: the kernel gives it no RQ, and it keeps no
 * receive CQ or SRQ (ib_core takes none for it either).
 */
struct uzura_qp *uzura_qp_create(struct ibv_context *context,
				 struct ibv_qp_init_attr_ex *attr)
{
	struct uzura_context *ctx = to_uctx(context);
	struct uzv_create_qp_resp resp = {};
	struct uzv_create_qp cmd = {};
	bool xrc = attr->qp_type == IBV_QPT_XRC_SEND;
	struct uzura_qp *qp;
	uint32_t wqe;
	int ret;

	if (!uz_qp_type_ok(ctx, attr->qp_type)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (xrc) {
		attr->cap.max_recv_wr = 0;
		attr->cap.max_recv_sge = 0;
	}
	ret = uz_qp_sizes(ctx, attr, &cmd.drv_payload);
	if (ret) {
		errno = ret;
		return NULL;
	}
	if (ctx->caps & UZ_CAP_SQ_SHADOW)
		cmd.drv_payload.comp_mask |= UZURA_CREATE_QP_SQ_SHADOW;
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return NULL;

	ret = ibv_cmd_create_qp_ex(context, &qp->vqp, attr, &cmd.ibv_cmd,
				   sizeof(cmd), &resp.ibv_resp, sizeof(resp));
	if (ret == EINVAL &&
	    (cmd.drv_payload.comp_mask & UZURA_CREATE_QP_SQ_SHADOW)) {
		/* A kernel from before shadow doorbells refuses the bit. */
		cmd.drv_payload.comp_mask &= ~UZURA_CREATE_QP_SQ_SHADOW;
		ret = ibv_cmd_create_qp_ex(context, &qp->vqp, attr,
					   &cmd.ibv_cmd, sizeof(cmd),
					   &resp.ibv_resp, sizeof(resp));
	}
	if (ret) {
		errno = ret;
		goto err_free;
	}

	if (xrc) {
		qp->ibqp.recv_cq = NULL;
		qp->ibqp.srq = NULL;
	}
	qp->srq = qp->ibqp.srq ? to_usrq(qp->ibqp.srq) : NULL;
	qp->sig_all = attr->sq_sig_all;
	qp->state = IBV_QPS_RESET;
	ret = uz_wq_init(ctx, &qp->sq, resp.sq_mmap_key, resp.sq_size,
			 resp.sq_log_depth, resp.sq_log_wqe, resp.sq_db_offset);
	if (ret)
		goto err_destroy;
	if (resp.comp_mask & UZURA_CREATE_QP_RESP_SQ_SHADOW) {
		size_t ring = (size_t)1 << (qp->sq.log_depth + qp->sq.log_wqe);

		if (ring + sizeof(struct uz_sq_shadow) > qp->sq.map_size) {
			verbs_err(&ctx->ibvctx,
				  "uzura: QP %u: no room for the SQ shadow\n",
				  qp->ibqp.qp_num);
			ret = EINVAL;
			goto err_sq;
		}
		qp->sq.shadow = (struct uz_sq_shadow *)((uint8_t *)qp->sq.ring +
							ring);
	}
	wqe = 1u << qp->sq.log_wqe;
	qp->sq.max_sge = min_t(uint32_t, ctx->max_sge,
			       (wqe - sizeof(struct uz_send_wqe)) /
			       sizeof(struct uz_sge));
	qp->max_inline = min_t(uint32_t, ctx->max_inline,
			       wqe - sizeof(struct uz_send_wqe));
	if (!qp->srq && !xrc) {
		if (!resp.rq_mmap_key) {
			verbs_err(&ctx->ibvctx, "uzura: QP %u without an RQ\n",
				  qp->ibqp.qp_num);
			ret = EINVAL;
			goto err_sq;
		}
		ret = uz_wq_init(ctx, &qp->rq, resp.rq_mmap_key, resp.rq_size,
				 resp.rq_log_depth, resp.rq_log_wqe,
				 resp.rq_db_offset);
		if (ret)
			goto err_sq;
		qp->rq.max_sge = min_t(uint32_t, ctx->max_sge,
				       ((1u << qp->rq.log_wqe) -
					sizeof(struct uz_recv_wqe)) /
				       sizeof(struct uz_sge));
	}
	qp->slots = calloc(uz_wq_depth(&qp->sq), sizeof(*qp->slots));
	if (!qp->slots) {
		ret = ENOMEM;
		goto err_rq;
	}

	pthread_spin_lock(&ctx->qp_table_lock);
	list_add_tail(uz_qp_bucket(ctx, qp->ibqp.qp_num), &qp->entry);
	pthread_spin_unlock(&ctx->qp_table_lock);
	uzura_pd_get(attr->pd);
	return qp;

err_rq:
	uz_wq_fini(&qp->rq);
err_sq:
	uz_wq_fini(&qp->sq);
err_destroy:
	ibv_cmd_destroy_qp(&qp->ibqp);
	errno = ret;
err_free:
	free(qp);
	return NULL;
}

struct ibv_qp *uzura_create_qp(struct ibv_pd *pd,
			       struct ibv_qp_init_attr *attr)
{
	struct ibv_qp_init_attr_ex attr_ex = {
		.qp_context = attr->qp_context,
		.send_cq = attr->send_cq,
		.recv_cq = attr->recv_cq,
		.srq = attr->srq,
		.cap = attr->cap,
		.qp_type = attr->qp_type,
		.sq_sig_all = attr->sq_sig_all,
		.comp_mask = IBV_QP_INIT_ATTR_PD,
		.pd = pd,
	};
	struct uzura_qp *qp;

	qp = uzura_qp_create(pd->context, &attr_ex);
	if (!qp)
		return NULL;
	attr->cap = attr_ex.cap;
	return &qp->ibqp;
}

/* The device restarts every index of a QP at 0 after RESET. */
void uz_wq_reset(struct uzura_wq *wq)
{
	if (!wq->ring)
		return;
	pthread_spin_lock(&wq->lock);
	wq->pi = 0;
	wq->ci = 0;
	/* The device wrote event 0 at RESET. */
	if (wq->shadow)
		atomic_store_explicit((_Atomic(uint32_t) *)&wq->shadow->pi, 0,
				      memory_order_relaxed);
	pthread_spin_unlock(&wq->lock);
}

/*
 * Whether uz_cq_drop drops @c: a CQE of @qp other than a CRW completion,
 * or a receive of XRC SRQ @xsrq (a receive through an XRC target QP is
 * its XRC SRQ's, never @qp's), or a list operation of TM SRQ @xsrq
 * (whose qpn is the SRQ's number).
 */
static bool uz_cqe_dropped(const struct uz_cqe *c, const struct uzura_qp *qp,
			   const struct uzura_srq *xsrq)
{
	if (c->wc_flags & UZ_WC_F_XRC)
		return xsrq && (le32toh(c->src_qp) & 0xffffff) == xsrq->srqn;
	if (uzura_tm_op_cqe(c))
		return xsrq && xsrq->tm &&
		       (le32toh(c->qpn) & 0xffffff) == xsrq->srqn;
	return qp && (le32toh(c->qpn) & 0xffffff) == qp->ibqp.qp_num &&
	       c->opcode != UZ_WC_CRW;
}

/*
 * Drop the CQEs not polled yet of @qp, or of XRC SRQ @xsrq, from @cq,
 * keeping the others in order, with the CQ lock held.  A QP moved to
 * RESET starts afresh, and completions (flushes, mostly) from before must
 * not be taken for its new work, as on other verbs devices; a destroyed
 * XRC SRQ's number may come back with a new one (as mlx4 does).  The CQEs
 * the device has written are moved towards the producer, over the dropped
 * ones, each with the phase of its new slot; the device writes only
 * beyond them.  A dropped receive of @qp's SRQ frees its slot, as polling
 * it would; CRW completions stay, since they alone tell when a CRW's
 * buffers are free (uzura_crw_reset marks them stale).
 */
static void uz_cq_drop(struct uzura_cq *cq, struct uzura_qp *qp,
		       struct uzura_srq *xsrq)
{
	uint32_t mask, n, i, dropped = 0;

	if (cq->moving && uzura_cq_move(cq))
		return;
	mask = (1u << cq->log_depth) - 1;
	for (n = 0; n <= mask && uz_cq_written(cq, cq->ci + n); n++)
		;
	for (i = n; i-- > 0;) {
		struct uz_cqe *c = uz_cq_slot(cq, cq->ci + i);
		uint32_t to = cq->ci + i + dropped;

		if (uz_cqe_dropped(c, qp, xsrq)) {
			if (qp && qp->srq && qp->srq->tm &&
			    uzura_tm_recv_cqe(c))
				uzura_tm_recv_retire(qp->srq, c);
			else if (qp && qp->srq && (c->opcode & UZ_WC_RECV))
				uz_rq_complete(&qp->srq->rq);
			dropped++;
		} else if (dropped) {
			/* The whole entry: a timestamp goes with its CQE. */
			memcpy(uz_cq_entry(cq, to), uz_cq_entry(cq, cq->ci + i),
			       cq->cqe_size);
			uz_cq_slot(cq, to)->flags =
				(c->flags & ~UZ_CQE_PHASE) | uz_cq_phase(cq, to);
		}
	}
	cq->ci = (cq->ci + dropped) & UZ_DB_CI_MASK;
	/* The device must know the slots are free before they are used. */
	uzura_cq_report(cq, true);
}

void uzura_cq_clean(struct uzura_cq *cq, struct uzura_qp *qp)
{
	pthread_spin_lock(&cq->lock);
	uz_cq_drop(cq, qp, NULL);
	pthread_spin_unlock(&cq->lock);
}

int uzura_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
		    int attr_mask)
{
	struct uzura_qp *qp = to_uqp(ibqp);
	struct ibv_modify_qp cmd;
	int ret;

	ret = ibv_cmd_modify_qp(ibqp, attr, attr_mask, &cmd, sizeof(cmd));
	if (ret)
		return ret;
	if (!(attr_mask & IBV_QP_STATE))
		return 0;
	/* An XRC_RECV QP has nothing here to start afresh. */
	if (attr->qp_state == IBV_QPS_RESET &&
	    ibqp->qp_type != IBV_QPT_XRC_RECV) {
		uzura_cq_clean(to_ucq(ibqp->send_cq), qp);
		if (ibqp->recv_cq && ibqp->recv_cq != ibqp->send_cq)
			uzura_cq_clean(to_ucq(ibqp->recv_cq), qp);
		/* A TM SRQ's CQ takes its QPs' receives. */
		if (qp->srq && qp->srq->tm &&
		    qp->srq->vsrq.cq != ibqp->send_cq &&
		    qp->srq->vsrq.cq != ibqp->recv_cq)
			uzura_cq_clean(to_ucq(qp->srq->vsrq.cq), qp);
		uz_wq_reset(&qp->sq);
		uzura_crw_reset(qp);
		if (!qp->srq)
			uz_wq_reset(&qp->rq);
	}
	qp->state = attr->qp_state;
	return 0;
}

int uzura_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
		   int attr_mask, struct ibv_qp_init_attr *init_attr)
{
	struct uzura_qp *qp = to_uqp(ibqp);
	struct ibv_query_qp cmd;
	int ret;

	ret = ibv_cmd_query_qp(ibqp, attr, attr_mask, init_attr, &cmd,
			       sizeof(cmd));
	if (ret)
		return ret;
	qp->state = attr->qp_state;
	return 0;
}

int uzura_destroy_qp(struct ibv_qp *ibqp)
{
	struct uzura_context *ctx = to_uctx(ibqp->context);
	struct uzura_qp *qp = to_uqp(ibqp);
	int ret;

	ret = ibv_cmd_destroy_qp(ibqp);
	if (ret)
		return ret;
	/* An XRC_RECV QP is in no table and holds no rings or PD here. */
	if (ibqp->qp_type == IBV_QPT_XRC_RECV) {
		free(qp);
		return 0;
	}
	/* Nor an RSS QP any ring or CQ: nothing completes to it. */
	if (qp->rss) {
		uzura_pd_put(ibqp->pd);
		free(qp);
		return 0;
	}

	/* No poll_cq may hold the QP after this. */
	uz_lock_cqs(ibqp);
	pthread_spin_lock(&ctx->qp_table_lock);
	list_del(&qp->entry);
	pthread_spin_unlock(&ctx->qp_table_lock);
	uz_unlock_cqs(ibqp);
	/* Nor a poll of a TM SRQ's CQ, which takes the QP's receives. */
	if (qp->srq && qp->srq->tm) {
		struct uzura_cq *tcq = to_ucq(qp->srq->vsrq.cq);

		pthread_spin_lock(&tcq->lock);
		pthread_spin_unlock(&tcq->lock);
	}

	uzura_pd_put(ibqp->pd);
	uz_wq_fini(&qp->rq);
	uz_wq_fini(&qp->sq);
	free(qp->slots);
	free(qp->crw);
	free(qp);
	return 0;
}

/* ---- posting ---- */

static int uz_wr_opcode(enum ibv_qp_type type, enum ibv_wr_opcode op)
{
	if (type == IBV_QPT_UD && op != IBV_WR_SEND &&
	    op != IBV_WR_SEND_WITH_IMM)
		return -1;
	/* Raw packet: a SEND's data is the whole frame. */
	if (type == IBV_QPT_RAW_PACKET && op != IBV_WR_SEND)
		return -1;
	/* UC: SENDs and WRITEs, nothing the responder answers. */
	if (type == IBV_QPT_UC && op != IBV_WR_SEND &&
	    op != IBV_WR_SEND_WITH_IMM && op != IBV_WR_RDMA_WRITE &&
	    op != IBV_WR_RDMA_WRITE_WITH_IMM)
		return -1;
	/* XRC: RC's operations, but windows are bound on RC QPs only. */
	if (type == IBV_QPT_XRC_SEND && op == IBV_WR_BIND_MW)
		return -1;
	switch (op) {
	case IBV_WR_SEND:
		return UZ_WR_SEND;
	case IBV_WR_SEND_WITH_IMM:
		return UZ_WR_SEND_IMM;
	case IBV_WR_RDMA_WRITE:
		return UZ_WR_RDMA_WRITE;
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return UZ_WR_RDMA_WRITE_IMM;
	case IBV_WR_RDMA_READ:
		return UZ_WR_RDMA_READ;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		return UZ_WR_ATOMIC_CMP_SWP;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return UZ_WR_ATOMIC_FETCH_ADD;
	case IBV_WR_SEND_WITH_INV:
		return UZ_WR_SEND_INV;
	case IBV_WR_LOCAL_INV:
		return UZ_WR_LOCAL_INV;
	case IBV_WR_BIND_MW:
		return UZ_WR_BIND_MW;
	default:
		/* TSO, atomic write, flush: not in the device */
		return -1;
	}
}

static int uz_build_send(struct uzura_qp *qp, const struct ibv_send_wr *wr,
			 struct uz_send_wqe *wqe)
{
	int op = uz_wr_opcode(qp->ibqp.qp_type, wr->opcode);
	uint32_t len = 0;
	int i;

	if (op < 0)
		return EINVAL;
	if (wr->num_sge < 0)
		return EINVAL;

	memset(wqe, 0, sizeof(*wqe));
	wqe->wr_id = htole64(wr->wr_id);
	wqe->opcode = op;
	if (qp->sig_all || (wr->send_flags & IBV_SEND_SIGNALED))
		wqe->flags |= UZ_WQE_F_SIGNALED;
	if (wr->send_flags & IBV_SEND_SOLICITED)
		wqe->flags |= UZ_WQE_F_SOLICITED;
	if (wr->send_flags & IBV_SEND_FENCE)
		wqe->flags |= UZ_WQE_F_FENCE;
	if (op == UZ_WR_SEND_IMM || op == UZ_WR_RDMA_WRITE_IMM)
		wqe->imm_data = (__force uint32_t)wr->imm_data;
	/* The key to invalidate, little-endian like every key. */
	if (op == UZ_WR_SEND_INV || op == UZ_WR_LOCAL_INV)
		wqe->imm_data = htole32(wr->invalidate_rkey);
	if (qp->ibqp.qp_type == IBV_QPT_XRC_SEND)
		wqe->xrc_srqn = htole32(wr->qp_type.xrc.remote_srqn);

	switch (op) {
	case UZ_WR_LOCAL_INV:
		return 0;
	case UZ_WR_BIND_MW:
		/* Type 1 windows are bound by ibv_bind_mw. */
		if (!wr->bind_mw.mw || wr->bind_mw.mw->type != IBV_MW_TYPE_2)
			return EINVAL;
		return uzura_bind_wqe(wqe, wr->bind_mw.mw, wr->bind_mw.rkey,
				      &wr->bind_mw.bind_info);
	case UZ_WR_RDMA_WRITE:
	case UZ_WR_RDMA_WRITE_IMM:
	case UZ_WR_RDMA_READ:
		wqe->rkey = htole32(wr->wr.rdma.rkey);
		wqe->remote_addr = htole64(wr->wr.rdma.remote_addr);
		break;
	case UZ_WR_ATOMIC_CMP_SWP:
	case UZ_WR_ATOMIC_FETCH_ADD:
		wqe->rkey = htole32(wr->wr.atomic.rkey);
		wqe->remote_addr = htole64(wr->wr.atomic.remote_addr);
		wqe->atomic.compare_add = htole64(wr->wr.atomic.compare_add);
		wqe->atomic.swap = htole64(wr->wr.atomic.swap);
		break;
	default:
		if (qp->ibqp.qp_type == IBV_QPT_UD) {
			if (!wr->wr.ud.ah)
				return EINVAL;
			wqe->ud.ahn = htole32(to_uah(wr->wr.ud.ah)->ahn);
			wqe->ud.remote_qpn = htole32(wr->wr.ud.remote_qpn);
			wqe->ud.remote_qkey = htole32(wr->wr.ud.remote_qkey);
		}
		break;
	}

	if (wr->send_flags & IBV_SEND_INLINE) {
		uint8_t *dst = (uint8_t *)(wqe + 1);

		/* READ and atomics have no outgoing data to inline. */
		if (op == UZ_WR_RDMA_READ || op == UZ_WR_ATOMIC_CMP_SWP ||
		    op == UZ_WR_ATOMIC_FETCH_ADD)
			return EINVAL;
		for (i = 0; i < wr->num_sge; i++) {
			const struct ibv_sge *sge = &wr->sg_list[i];

			if (sge->length > qp->max_inline - len)
				return EINVAL;
			memcpy(dst + len, (void *)(uintptr_t)sge->addr,
			       sge->length);
			len += sge->length;
		}
		wqe->flags |= UZ_WQE_F_INLINE;
		wqe->inline_len = htole32(len);
		return 0;
	}

	if ((uint32_t)wr->num_sge > qp->sq.max_sge)
		return EINVAL;
	for (i = 0; i < wr->num_sge; i++) {
		struct uz_sge *sge = (struct uz_sge *)(wqe + 1) + i;

		sge->addr = htole64(wr->sg_list[i].addr);
		sge->length = htole32(wr->sg_list[i].length);
		sge->lkey = htole32(wr->sg_list[i].lkey);
	}
	wqe->num_sge = wr->num_sge;
	return 0;
}

int uzura_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		    struct ibv_send_wr **bad_wr)
{
	struct uzura_qp *qp = to_uqp(ibqp);
	struct uzura_wq *sq = &qp->sq;
	uint32_t start;
	int ret = 0;

	/* An XRC_RECV QP has no SQ. */
	if (ibqp->qp_type == IBV_QPT_XRC_RECV) {
		*bad_wr = wr;
		return EINVAL;
	}
	pthread_spin_lock(&sq->lock);
	start = sq->pi;
	/* The device refuses doorbells of a QP in RESET. */
	if (qp->state == IBV_QPS_RESET) {
		ret = EINVAL;
		goto out;
	}
	for (; wr; wr = wr->next) {
		struct uzura_sq_slot *slot;

		if (uz_wq_full(sq)) {
			ret = ENOMEM;
			break;
		}
		ret = uz_build_send(qp, wr, uz_wq_slot(sq, sq->pi));
		if (ret)
			break;
		slot = &qp->slots[sq->pi & (uz_wq_depth(sq) - 1)];
		slot->wr_id = wr->wr_id;
		slot->signaled = qp->sig_all ||
				 (wr->send_flags & IBV_SEND_SIGNALED);
		slot->crw = false;
		sq->pi = (sq->pi + 1) & UZ_DB_PI_MASK;
	}
out:
	if (sq->pi != start)
		uz_sq_publish(sq, start);
	pthread_spin_unlock(&sq->lock);
	if (ret)
		*bad_wr = wr;
	return ret;
}

int uzura_post_wqe(struct uzura_qp *qp, uzura_wqe_fill_fn fill,
		   const void *arg, uint64_t wr_id, bool signaled, bool crw)
{
	struct uzura_wq *sq = &qp->sq;
	struct uzura_sq_slot *slot;
	int ret;

	pthread_spin_lock(&sq->lock);
	if (qp->state == IBV_QPS_RESET) {
		ret = EINVAL;
		goto out;
	}
	if (uz_wq_full(sq)) {
		ret = ENOMEM;
		goto out;
	}
	ret = fill(qp, uz_wq_slot(sq, sq->pi), arg);
	if (ret)
		goto out;
	slot = &qp->slots[sq->pi & (uz_wq_depth(sq) - 1)];
	slot->wr_id = wr_id;
	slot->signaled = signaled && !crw;
	slot->crw = crw;
	if (crw)
		slot->crw_seq = qp->crw_posted++;
	sq->pi = (sq->pi + 1) & UZ_DB_PI_MASK;
	uz_sq_publish(sq, (sq->pi - 1) & UZ_DB_PI_MASK);
out:
	pthread_spin_unlock(&sq->lock);
	return ret;
}

static int uz_post_rq(struct uzura_wq *wq, struct ibv_recv_wr *wr,
		      struct ibv_recv_wr **bad_wr)
{
	uint32_t start;
	int ret = 0;
	int i;

	pthread_spin_lock(&wq->lock);
	start = wq->pi;
	for (; wr; wr = wr->next) {
		struct uz_recv_wqe *wqe;
		struct uz_sge *sge;

		if (wq->lost) {
			ret = EIO;
			break;
		}
		if (uz_wq_full(wq)) {
			ret = ENOMEM;
			break;
		}
		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > wq->max_sge) {
			ret = EINVAL;
			break;
		}
		wqe = uz_wq_slot(wq, wq->pi);
		memset(wqe, 0, sizeof(*wqe));
		wqe->wr_id = htole64(wr->wr_id);
		wqe->num_sge = wr->num_sge;
		sge = (struct uz_sge *)(wqe + 1);
		for (i = 0; i < wr->num_sge; i++) {
			sge[i].addr = htole64(wr->sg_list[i].addr);
			sge[i].length = htole32(wr->sg_list[i].length);
			sge[i].lkey = htole32(wr->sg_list[i].lkey);
		}
		wq->pi = (wq->pi + 1) & UZ_DB_PI_MASK;
	}
	if (wq->pi != start) {
		udma_to_device_barrier();
		uz_ring_db(wq->db, wq->pi);
	}
	pthread_spin_unlock(&wq->lock);
	if (ret)
		*bad_wr = wr;
	return ret;
}

int uzura_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		    struct ibv_recv_wr **bad_wr)
{
	struct uzura_qp *qp = to_uqp(ibqp);

	/*
	 * No RQ with an SRQ or on an XRC QP; the device refuses doorbells in
	 * RESET.
	 */
	if (qp->srq || !qp->rq.ring || qp->state == IBV_QPS_RESET) {
		*bad_wr = wr;
		return EINVAL;
	}
	return uz_post_rq(&qp->rq, wr, bad_wr);
}

/* ---- SRQ ---- */

/* log2 of the receive WQE size for @max_sge SGEs; 0 if the device has none. */
static uint32_t uzura_srq_log_wqe(struct uzura_context *ctx, uint32_t max_sge)
{
	uint32_t log_wqe;

	if (max_sge > ctx->max_sge)
		return 0;
	log_wqe = max_t(uint32_t,
			uz_log2_up(sizeof(struct uz_recv_wqe) +
				   max_sge * sizeof(struct uz_sge)),
			UZ_RQ_LOG_WQE_MIN);
	return log_wqe <= ctx->rq_max_log_wqe ? log_wqe : 0;
}

/* Map the ring of an SRQ the kernel created; 0 or an errno. */
static int uzura_srq_init(struct uzura_context *ctx, struct uzura_srq *srq,
			  const struct uzura_create_srq_resp *resp)
{
	int ret;

	ret = uz_wq_init(ctx, &srq->rq, resp->ring_mmap_key, resp->ring_size,
			 resp->log_depth, resp->log_wqe, resp->db_offset);
	if (ret)
		return ret;
	srq->rq.max_sge = min_t(uint32_t, ctx->max_sge,
				((1u << srq->rq.log_wqe) -
				 sizeof(struct uz_recv_wqe)) /
				sizeof(struct uz_sge));
	srq->srqn = resp->srqn;
	return 0;
}

/*
 * A basic, XRC or TM SRQ (xrc.c and tm.c check the others' domain, CQ
 * and limits): the kernel makes all with the same driver command and
 * answer, a TM SRQ with its operation ring.
 */
struct ibv_srq *uzura_srq_create(struct ibv_context *context,
				 struct ibv_srq_init_attr_ex *attr)
{
	struct uzura_context *ctx = to_uctx(context);
	struct uzv_create_xsrq_resp resp = {};
	struct uzv_create_xsrq cmd = {};
	bool tm = (attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) &&
		  attr->srq_type == IBV_SRQT_TM;
	struct uzura_srq *srq;
	int ret;

	cmd.log_wqe = uzura_srq_log_wqe(ctx, attr->attr.max_sge);
	if (!cmd.log_wqe) {
		errno = EINVAL;
		return NULL;
	}
	/* tm.c checked it against the device's limit */
	if (tm)
		cmd.ops_log_depth = uzura_tm_ops_log_depth(attr);
	srq = calloc(1, sizeof(*srq));
	if (!srq)
		return NULL;
	ret = ibv_cmd_create_srq_ex(context, &srq->vsrq, attr, &cmd.ibv_cmd,
				    sizeof(cmd), &resp.ibv_resp, sizeof(resp));
	if (ret)
		goto err_free;
	ret = uzura_srq_init(ctx, srq, &resp.drv_payload);
	if (!ret && tm) {
		ret = uzura_tm_init(ctx, srq, attr, &resp.drv_payload);
		if (ret)
			uz_wq_fini(&srq->rq);
	}
	if (ret) {
		verbs_err(&ctx->ibvctx, "uzura: cannot map SRQ %u: %s\n",
			  resp.drv_payload.srqn, strerror(ret));
		ibv_cmd_destroy_srq(&srq->ibsrq);
		goto err_free;
	}
	/* ibv_create_srq sets these for the SRQs of create_srq only. */
	srq->ibsrq.pd = attr->pd;
	srq->ibsrq.srq_context = attr->srq_context;
	uzura_pd_get(attr->pd);
	/* CQEs name them: XRC receives, TM list operations */
	if ((attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) &&
	    (attr->srq_type == IBV_SRQT_XRC || tm))
		uzura_srq_table_add(ctx, srq);
	return &srq->ibsrq;

err_free:
	free(srq);
	errno = ret;
	return NULL;
}

struct ibv_srq *uzura_create_srq(struct ibv_pd *pd,
				 struct ibv_srq_init_attr *attr)
{
	struct ibv_srq_init_attr_ex ex = {
		.srq_context = attr->srq_context, .attr = attr->attr,
		.comp_mask = IBV_SRQ_INIT_ATTR_PD, .pd = pd,
	};
	struct ibv_srq *srq = uzura_srq_create(pd->context, &ex);

	if (srq)
		attr->attr = ex.attr;
	return srq;
}

/*
 * IBV_SRQ_MAX_WR moves the SRQ to a new ring (device spec 8.8.1): the
 * kernel copies the WQEs between our ci and pi there and tells where it
 * is, through resp (modify_srq has no response of its own); posting waits
 * on the ring's lock until it is mapped in place of the old one.
 */
int uzura_modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr,
		     int attr_mask)
{
	struct uzura_context *ctx = to_uctx(ibsrq->context);
	struct uzura_wq *wq = &to_usrq(ibsrq)->rq;
	struct uzura_modify_srq_resp resp = {};
	struct uzv_modify_srq cmd = {};
	void *ring;
	int ret;

	if (!(attr_mask & IBV_SRQ_MAX_WR))
		return ibv_cmd_modify_srq(ibsrq, attr, attr_mask, &cmd.ibv_cmd,
					  sizeof(cmd.ibv_cmd));
	pthread_spin_lock(&wq->lock);
	cmd.pi = wq->pi;
	cmd.ci = wq->ci;
	cmd.resp_addr = (uintptr_t)&resp;
	ret = ibv_cmd_modify_srq(ibsrq, attr, attr_mask, &cmd.ibv_cmd,
				 sizeof(cmd));
	if (ret)
		goto out;	/* the kernel fails before the device moves */
	ring = uz_map(&ctx->ibvctx.context, resp.ring_size, resp.ring_mmap_key);
	if (!ring) {
		/* The device is on the new ring: this SRQ cannot post again. */
		ret = errno;
		wq->lost = true;
		goto out;
	}
	munmap(wq->ring, wq->map_size);
	wq->ring = ring;
	wq->map_size = resp.ring_size;
	wq->log_depth = resp.log_depth;
out:
	pthread_spin_unlock(&wq->lock);
	return ret;
}

int uzura_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr)
{
	struct ibv_query_srq cmd;

	return ibv_cmd_query_srq(srq, attr, &cmd, sizeof(cmd));
}

int uzura_destroy_srq(struct ibv_srq *ibsrq)
{
	struct uzura_context *ctx = to_uctx(ibsrq->context);
	struct uzura_srq *srq = to_usrq(ibsrq);
	struct uzura_cq *cq;
	int ret;

	ret = ibv_cmd_destroy_srq(ibsrq);
	if (ret)
		return ret;
	if (srq->vsrq.srq_type == IBV_SRQT_XRC ||
	    srq->vsrq.srq_type == IBV_SRQT_TM) {
		/* No poll_cq may hold the SRQ after this. */
		cq = to_ucq(srq->vsrq.cq);
		pthread_spin_lock(&cq->lock);
		pthread_spin_lock(&ctx->srq_table_lock);
		list_del(&srq->entry);
		pthread_spin_unlock(&ctx->srq_table_lock);
		uz_cq_drop(cq, NULL, srq);
		pthread_spin_unlock(&cq->lock);
	}
	uzura_pd_put(ibsrq->pd);
	uzura_tm_fini(srq);
	uz_wq_fini(&srq->rq);
	free(srq);
	return 0;
}

int uzura_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
			struct ibv_recv_wr **bad_wr)
{
	return uz_post_rq(&to_usrq(ibsrq)->rq, wr, bad_wr);
}

/* ---- AH ---- */

struct ibv_ah *uzura_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	struct uzv_create_ah_resp resp = {};
	struct uzura_ah *ah;
	int ret;

	/* RoCE: the kernel resolves the destination MAC from the GID. */
	if (!attr->is_global) {
		errno = EINVAL;
		return NULL;
	}
	ah = calloc(1, sizeof(*ah));
	if (!ah)
		return NULL;
	ret = ibv_cmd_create_ah(pd, &ah->ibah, attr, &resp.ibv_resp,
				sizeof(resp));
	if (ret) {
		free(ah);
		errno = ret;
		return NULL;
	}
	ah->ahn = resp.ahn;
	return &ah->ibah;
}

int uzura_destroy_ah(struct ibv_ah *ibah)
{
	int ret;

	ret = ibv_cmd_destroy_ah(ibah);
	if (ret)
		return ret;
	free(to_uah(ibah));
	return 0;
}
