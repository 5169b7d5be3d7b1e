// SPDX-License-Identifier: GPL-2.0-or-later OR BSD-2-Clause
/*
 * uzura provider: tag matching SRQs (device spec 8.19, UZ_CAP_TM).
 *
 * A TM SRQ is an SRQ, whose ring of receive WQEs takes the unexpected and
 * untagged messages, with a list of tagged buffers that the device
 * matches incoming messages against and a ring of list operations
 * (struct uz_tm_op) that ibv_post_srq_ops writes.  The provider hands out
 * the list entries (the verbs "handle") and keeps, per entry, how many
 * CQEs it still expects: its ADD's, its DEL's, and the one that ends its
 * use by a message (mlx5 counts the same way).  The entry is free again
 * when none is left.
 *
 * Every operation asks the device for a CQE (UZ_TM_OP_F_SIGNALED), which
 * is how the provider learns that the ring slot, and an entry that a DEL
 * released, are free; it carries the operation's ring index in byte_len.
 * Those of operations the user did not ask to signal are not reported,
 * unless they failed.  So a list operation stays outstanding until the
 * SRQ's CQ is polled past its completion, and the CQ must have room for
 * max_ops completions besides the user's.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "uzura.h"

#define UZ_TM_OP_LOG_SIZE	6
static_assert(sizeof(struct uz_tm_op) == 1u << UZ_TM_OP_LOG_SIZE,
	      "TM operation size");

#define UZ_TM_OPS_FLAGS		(IBV_OPS_SIGNALED | IBV_OPS_TM_SYNC)
#define UZ_TM_SRQ_MASK		(IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | \
				 IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_TM)

/* The operation ring of an SRQ asked for @max_ops: a power of two >= 2. */
static uint32_t uz_tm_ops_log(uint32_t max_ops)
{
	uint32_t l = 1;

	while ((1u << l) < max_ops)
		l++;
	return l;
}

/*
 * A TM SRQ: a PD and a CQ of this context, and a tag list and operation
 * ring within the device's limits (the ring rounded up to a power of
 * two).  The CQ may be a plain or an extended one.
 */
struct ibv_srq *uzura_create_tm_srq(struct ibv_context *context,
				    struct ibv_srq_init_attr_ex *attr)
{
	struct ibv_device_attr_ex dev = {};
	uint32_t tags = attr->tm_cap.max_num_tags;
	uint32_t max_ops = attr->tm_cap.max_ops;
	int ret;

	if (!(to_uctx(context)->caps & UZ_CAP_TM)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if ((attr->comp_mask & UZ_TM_SRQ_MASK) != UZ_TM_SRQ_MASK ||
	    !attr->pd || attr->pd->context != context ||
	    !attr->cq || attr->cq->context != context) {
		errno = EINVAL;
		return NULL;
	}
	ret = ibv_query_device_ex(context, NULL, &dev);
	if (ret) {
		errno = ret;
		return NULL;
	}
	if (!tags || tags > dev.tm_caps.max_num_tags || !max_ops ||
	    max_ops > dev.tm_caps.max_ops ||
	    (1u << uz_tm_ops_log(max_ops)) > dev.tm_caps.max_ops) {
		errno = EINVAL;
		return NULL;
	}
	return uzura_srq_create(context, attr);
}

uint32_t uzura_tm_ops_log_depth(const struct ibv_srq_init_attr_ex *attr)
{
	return uz_tm_ops_log(attr->tm_cap.max_ops);
}

/* Map the operation ring the kernel made; 0 or an errno. */
int uzura_tm_init(struct uzura_context *ctx, struct uzura_srq *srq,
		  const struct ibv_srq_init_attr_ex *attr,
		  const struct uzura_create_srq_resp *resp)
{
	uint32_t log = uz_tm_ops_log(attr->tm_cap.max_ops);
	uint32_t i, tags = attr->tm_cap.max_num_tags;
	struct uzura_tm *tm;
	int ret;

	/* A kernel from before tag matching would have refused the SRQ. */
	if (resp->ops_size < (1ull << (log + UZ_TM_OP_LOG_SIZE)))
		return EINVAL;
	tm = calloc(1, sizeof(*tm));
	if (!tm)
		return ENOMEM;
	tm->slots = calloc(1u << log, sizeof(*tm->slots));
	tm->refs = calloc(tags, sizeof(*tm->refs));
	tm->free = calloc(tags, sizeof(*tm->free));
	if (!tm->slots || !tm->refs || !tm->free) {
		ret = ENOMEM;
		goto err_free;
	}
	ret = uz_wq_init(ctx, &tm->ops, resp->ops_mmap_key, resp->ops_size,
			 log, UZ_TM_OP_LOG_SIZE, resp->ops_db_offset);
	if (ret)
		goto err_free;
	for (i = 0; i < tags; i++)
		tm->free[i] = i;
	tm->free_cnt = tags;
	tm->max_tags = tags;
	tm->max_ops = 1u << log;
	srq->tm = tm;
	return 0;

err_free:
	free(tm->free);
	free(tm->refs);
	free(tm->slots);
	free(tm);
	return ret;
}

void uzura_tm_fini(struct uzura_srq *srq)
{
	struct uzura_tm *tm = srq->tm;

	if (!tm)
		return;
	uz_wq_fini(&tm->ops);
	free(tm->free);
	free(tm->refs);
	free(tm->slots);
	free(tm);
	srq->tm = NULL;
}

/* @n of entry @index's expected CQEs came (or will not); ops lock held. */
static void uz_tm_put(struct uzura_tm *tm, uint32_t index, uint8_t n)
{
	uint8_t *refs;

	/* A CQE for an entry not in use is the device's mistake: ignore it. */
	if (index >= tm->max_tags || !tm->refs[index])
		return;
	refs = &tm->refs[index];
	*refs = *refs > n ? *refs - n : 0;
	if (!*refs) {
		tm->free[(tm->free_head + tm->free_cnt) % tm->max_tags] = index;
		tm->free_cnt++;
	}
}

/* Write @wr into the ring slot @pi; 0 or an errno. Ops lock held. */
static int uz_tm_op_fill(struct uzura_tm *tm, struct ibv_ops_wr *wr,
			 uint32_t pi)
{
	struct uzura_tm_op_slot *slot;
	uint32_t index = 0;
	struct uz_tm_op *op;
	uint8_t opcode;

	if (wr->flags & ~UZ_TM_OPS_FLAGS)
		return EINVAL;
	switch (wr->opcode) {
	case IBV_WR_TAG_ADD:
		if (wr->tm.add.num_sge < 0 ||
		    wr->tm.add.num_sge > UZ_TM_MAX_SGE ||
		    (wr->tm.add.num_sge && !wr->tm.add.sg_list))
			return EINVAL;
		if (!tm->free_cnt)
			return ENOMEM;	/* the tag list is full */
		index = tm->free[tm->free_head];
		opcode = UZ_TM_OP_ADD;
		break;
	case IBV_WR_TAG_DEL:
		if (wr->tm.handle >= tm->max_tags || !tm->refs[wr->tm.handle])
			return EINVAL;	/* no entry of an ADD */
		index = wr->tm.handle;
		opcode = UZ_TM_OP_DEL;
		break;
	case IBV_WR_TAG_SYNC:
		opcode = UZ_TM_OP_SYNC;
		break;
	default:
		return EINVAL;
	}
	if (uz_wq_full_at(&tm->ops, pi))
		return ENOMEM;

	op = uz_wq_slot(&tm->ops, pi);
	memset(op, 0, sizeof(*op));
	op->wr_id = htole64(wr->wr_id);
	op->opcode = opcode;
	/* Every operation completes: that frees its slot (see above). */
	op->flags = UZ_TM_OP_F_SIGNALED;
	if (wr->flags & IBV_OPS_TM_SYNC) {
		op->flags |= UZ_TM_OP_F_SYNC;
		op->unexpected_cnt = htole32(wr->tm.unexpected_cnt);
	}
	op->index = htole16(index);
	if (opcode == UZ_TM_OP_ADD) {
		op->recv_wr_id = htole64(wr->tm.add.recv_wr_id);
		op->tag = htole64(wr->tm.add.tag);
		op->mask = htole64(wr->tm.add.mask);
		/* An empty buffer takes empty messages only. */
		if (wr->tm.add.num_sge && wr->tm.add.sg_list->length) {
			op->num_sge = 1;
			op->addr = htole64(wr->tm.add.sg_list->addr);
			op->length = htole32(wr->tm.add.sg_list->length);
			op->lkey = htole32(wr->tm.add.sg_list->lkey);
		}
		tm->free_head = (tm->free_head + 1) % tm->max_tags;
		tm->free_cnt--;
		/* its ADD's CQE and the one that ends its use */
		tm->refs[index] = 2;
		wr->tm.handle = index;
	} else if (opcode == UZ_TM_OP_DEL) {
		tm->refs[index]++;
	}

	slot = &tm->slots[pi & (uz_wq_depth(&tm->ops) - 1)];
	slot->wr_id = wr->wr_id;
	slot->index = index;
	slot->opcode = opcode;
	slot->signaled = wr->flags & IBV_OPS_SIGNALED;
	return 0;
}

int uzura_post_srq_ops(struct ibv_srq *ibsrq, struct ibv_ops_wr *wr,
		       struct ibv_ops_wr **bad_wr)
{
	struct uzura_tm *tm = to_usrq(ibsrq)->tm;
	struct uzura_wq *ops;
	uint32_t pi;
	int ret = 0;

	if (!tm) {
		*bad_wr = wr;
		return EINVAL;
	}
	ops = &tm->ops;
	pthread_spin_lock(&ops->lock);
	for (pi = ops->pi; wr; wr = wr->next) {
		ret = uz_tm_op_fill(tm, wr, pi);
		if (ret) {
			*bad_wr = wr;
			break;
		}
		pi = (pi + 1) & UZ_DB_PI_MASK;
	}
	if (pi != ops->pi) {
		ops->pi = pi;
		/* The operations reach memory before the device is told. */
		udma_to_device_barrier();
		uz_ring_db(ops->db, pi);
	}
	pthread_spin_unlock(&ops->lock);
	return ret;
}

bool uzura_tm_op_cqe(const struct uz_cqe *cqe)
{
	return cqe->opcode == UZ_WC_TM_ADD || cqe->opcode == UZ_WC_TM_DEL ||
	       cqe->opcode == UZ_WC_TM_SYNC;
}

bool uzura_tm_recv_cqe(const struct uz_cqe *cqe)
{
	return cqe->opcode == UZ_WC_TM_RECV || cqe->opcode == UZ_WC_TM_NO_TAG;
}

/* A receive into a tagged buffer, not into an SRQ WQE. */
static bool uz_tm_on_entry(const struct uz_cqe *cqe)
{
	return cqe->opcode == UZ_WC_TM_RECV &&
	       (cqe->wc_flags & (UZ_WC_F_TM_MATCH | UZ_WC_F_TM_DATA_VALID));
}

static unsigned int uz_tm_wc_flags(uint8_t flags)
{
	return (flags & UZ_WC_F_TM_SYNC_REQ ? IBV_WC_TM_SYNC_REQ : 0) |
	       (flags & UZ_WC_F_TM_MATCH ? IBV_WC_TM_MATCH : 0) |
	       (flags & UZ_WC_F_TM_DATA_VALID ? IBV_WC_TM_DATA_VALID : 0);
}

/*
 * The CQE of a list operation (@wc filled from it as any CQE): retire
 * its ring slot and account for its entry; false when the user did not
 * ask for it and it succeeded.  Operations complete in ring order, so
 * the CQE's index must be one outstanding.
 */
bool uzura_tm_op_convert(struct uzura_srq *srq, const struct uz_cqe *cqe,
			 struct ibv_wc *wc)
{
	struct uzura_tm *tm = srq->tm;
	struct uzura_wq *ops = &tm->ops;
	uint32_t idx = le32toh(cqe->byte_len) & UZ_DB_PI_MASK;
	bool ok = cqe->status == UZ_WC_STATUS_SUCCESS;
	struct uzura_tm_op_slot *slot;
	bool report;

	pthread_spin_lock(&ops->lock);
	if (((idx - ops->ci) & UZ_DB_PI_MASK) >=
	    ((ops->pi - ops->ci) & UZ_DB_PI_MASK)) {
		pthread_spin_unlock(&ops->lock);
		return false;
	}
	slot = &tm->slots[idx & (uz_wq_depth(ops) - 1)];
	ops->ci = (idx + 1) & UZ_DB_PI_MASK;
	/*
	 * An ADD that failed leaves no entry to use; a DEL that succeeded
	 * ends the entry's use, one that failed leaves it to the message
	 * that took the entry meanwhile.
	 */
	if (slot->opcode == UZ_TM_OP_ADD)
		uz_tm_put(tm, slot->index, ok ? 1 : 2);
	else if (slot->opcode == UZ_TM_OP_DEL)
		uz_tm_put(tm, slot->index, ok ? 2 : 1);
	wc->wr_id = slot->wr_id;
	report = slot->signaled || !ok;
	pthread_spin_unlock(&ops->lock);

	wc->byte_len = 0;
	wc->wc_flags = uz_tm_wc_flags(cqe->wc_flags);
	return report;
}

/*
 * The SRQ side of a receive CQE of a QP on TM SRQ @srq, polled or
 * dropped: an SRQ WQE taken, or the end of a tagged buffer's use (its
 * data there, or an error; a RNDV's first CQE, MATCH alone, announces
 * the read that its second ends).
 */
void uzura_tm_recv_retire(struct uzura_srq *srq, const struct uz_cqe *cqe)
{
	struct uzura_tm *tm = srq->tm;

	if (!uz_tm_on_entry(cqe)) {
		uz_rq_complete(&srq->rq);
		return;
	}
	if (!(cqe->wc_flags & UZ_WC_F_TM_DATA_VALID) &&
	    cqe->status == UZ_WC_STATUS_SUCCESS)
		return;
	pthread_spin_lock(&tm->ops.lock);
	uz_tm_put(tm, le16toh(cqe->pkey_index), 1);
	pthread_spin_unlock(&tm->ops.lock);
}

/* A receive CQE of a QP on TM SRQ @srq (@wc filled as any CQE's). */
void uzura_tm_recv_convert(struct uzura_srq *srq, const struct uz_cqe *cqe,
			   struct ibv_wc *wc)
{
	uzura_tm_recv_retire(srq, cqe);
	wc->wc_flags = uz_tm_wc_flags(cqe->wc_flags);
	/* A matched CQE's src_qp holds the tag (uzura_tm_cqe_tag). */
	if (!uz_tm_on_entry(cqe))
		wc->src_qp = le32toh(cqe->src_qp) & 0xffffff;
}

/*
 * The tag of a matched receive's CQE (MATCH: an EAGER's, a RNDV's
 * first); 0 for any other, a RNDV's second included, as on mlx5.
 */
uint64_t uzura_tm_cqe_tag(const struct uz_cqe *cqe)
{
	if (cqe->opcode != UZ_WC_TM_RECV ||
	    !(cqe->wc_flags & UZ_WC_F_TM_MATCH))
		return 0;
	return (uint64_t)le32toh(cqe->src_qp) << 32 | le32toh(cqe->imm_data);
}
