// SPDX-License-Identifier: GPL-2.0-or-later OR BSD-2-Clause
/*
 * uzura provider: the uzuradv direct verbs (uzuradv.h, docs/uzuradv.md):
 * device attributes, Conditional RDMA Write and tag offers (device-spec
 * 8.12), and the NIC counters the kernel exports as hw counters.
 *
 * CRW completions come out of SQ order, and a CRW's SQ slot completes
 * without a CQE of its own.  Two things follow for the provider:
 *
 *  - SQ slots: n CRW completions free the SQ slots up to the n-th CRW
 *    posted since the QP's last RESET (the spec's rule); ordinary
 *    completions pass over CRW slots (uz_sq_complete).
 *  - wr_id and signalling: every CRW is signalled to the device, so each
 *    one completes exactly once and the count above holds.  The WQE
 *    carries a cookie instead of the caller's wr_id; the completion
 *    finds the caller's wr_id by it, and a successful completion of a
 *    CRW posted without IBV_SEND_SIGNALED is not reported.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <util/udma_barrier.h>

#include "uzura.h"

/* A CRW WQE's wr_id: this in the high half, cookie + 1 in the low half. */
#define UZ_CRW_COOKIE_MAGIC	0x757a6377ull	/* "uzcw" */

#define UZ_CRW_SEND_FLAGS	(IBV_SEND_SIGNALED | IBV_SEND_SOLICITED | \
				 IBV_SEND_FENCE | IBV_SEND_INLINE)
#define UZ_STCRW_SEND_FLAGS	(IBV_SEND_SIGNALED | IBV_SEND_FENCE)

struct uzura_crw_ent {
	uint64_t wr_id;			/* the caller's */
	uint32_t next_free;
	bool used;
	bool signaled;			/* the caller asked for a completion */
	bool stale;			/* posted before the last RESET */
	bool keep;			/* scratch of uzura_crw_reset */
};

/*
 * Outstanding CRWs of a QP, by cookie.  A CRW holds its cookie from its
 * post until its completion is polled: it is then in the SQ, in the
 * device's tag table, or its CQE waits in the CQ.  Twice the SQ depth
 * and the tag table leaves room for unpolled completions; past that the
 * post fails with ENOMEM.
 */
struct uzura_crw_table {
	uint32_t size;
	uint32_t free_head;		/* size: none free */
	struct uzura_crw_ent ent[];
};

/* ---- device ---- */

bool uzuradv_is_supported(struct ibv_device *device)
{
	return device && is_uzura_dev(device);
}

static bool uz_crw_supported(struct uzura_context *ctx)
{
	return ctx->max_crw_tags && (ctx->caps & UZ_CAP_CRW);
}

int uzuradv_query_device(struct ibv_context *context,
			 struct uzuradv_device_attr *attr, uint32_t inlen)
{
	struct uzuradv_device_attr a = {};
	struct uzura_context *ctx;

	if (!context || !attr)
		return EINVAL;
	if (!is_uzura_dev(context->device))
		return EOPNOTSUPP;
	if (inlen < offsetofend(struct uzuradv_device_attr, max_crw_tags))
		return EINVAL;

	ctx = to_uctx(context);
	if (uz_crw_supported(ctx)) {
		a.device_caps |= UZURADV_DEVICE_CAP_CRW;
		a.max_crw_tags = ctx->max_crw_tags;
		a.max_crw_inline = ctx->max_inline;
		a.max_crw_sge = ctx->max_sge;
	}
	memset(attr, 0, inlen);
	memcpy(attr, &a, min_t(size_t, inlen, sizeof(a)));
	return 0;
}

/* ---- CRW and STCRW ---- */

static struct uzura_crw_table *uz_crw_table(struct uzura_qp *qp)
{
	struct uzura_context *ctx = to_uctx(qp->ibqp.context);
	struct uzura_crw_table *t = qp->crw;
	uint32_t size, i;

	if (t)
		return t;
	size = 2 * ((1u << qp->sq.log_depth) + ctx->max_crw_tags);
	t = calloc(1, sizeof(*t) + size * sizeof(t->ent[0]));
	if (!t)
		return NULL;
	t->size = size;
	for (i = 0; i < size; i++)
		t->ent[i].next_free = i + 1;
	t->free_head = 0;
	qp->crw = t;
	return t;
}

static void uz_crw_put(struct uzura_crw_table *t, uint32_t i)
{
	t->ent[i].used = false;
	t->ent[i].next_free = t->free_head;
	t->free_head = i;
}

/* The entry a CQE's wr_id names, or NULL. */
static struct uzura_crw_ent *uz_crw_lookup(struct uzura_crw_table *t,
					   uint64_t hw_wr_id, uint32_t *idx)
{
	uint32_t i = (uint32_t)hw_wr_id - 1;

	if (!t || (hw_wr_id >> 32) != UZ_CRW_COOKIE_MAGIC || i >= t->size ||
	    !t->ent[i].used)
		return NULL;
	*idx = i;
	return &t->ent[i];
}

static int uz_fill_crw(struct uzura_qp *qp, struct uz_send_wqe *wqe,
		       const void *arg)
{
	const struct uzuradv_crw_wr *wr = arg;
	struct uzura_crw_table *t;
	struct uzura_crw_ent *e;
	uint32_t i, cookie, len = 0;

	/* Called with the SQ lock held, which guards the table. */
	t = uz_crw_table(qp);
	if (!t || t->free_head == t->size)
		return ENOMEM;

	memset(wqe, 0, sizeof(*wqe));
	wqe->opcode = UZ_WR_CRW;
	/* Always signalled to the device: see the top of this file. */
	wqe->flags = UZ_WQE_F_SIGNALED;
	if (wr->send_flags & IBV_SEND_SOLICITED)
		wqe->flags |= UZ_WQE_F_SOLICITED;
	if (wr->send_flags & IBV_SEND_FENCE)
		wqe->flags |= UZ_WQE_F_FENCE;
	wqe->crw.tag = htole64(wr->tag);

	if (wr->send_flags & IBV_SEND_INLINE) {
		uint8_t *dst = (uint8_t *)(wqe + 1);

		for (i = 0; i < wr->num_sge; i++) {
			memcpy(dst + len, (void *)(uintptr_t)wr->sg_list[i].addr,
			       wr->sg_list[i].length);
			len += wr->sg_list[i].length;
		}
		wqe->flags |= UZ_WQE_F_INLINE;
		wqe->inline_len = htole32(len);
	} else {
		struct uz_sge *sge = (struct uz_sge *)(wqe + 1);

		for (i = 0; i < wr->num_sge; i++) {
			sge[i].addr = htole64(wr->sg_list[i].addr);
			sge[i].length = htole32(wr->sg_list[i].length);
			sge[i].lkey = htole32(wr->sg_list[i].lkey);
		}
		wqe->num_sge = wr->num_sge;
	}

	cookie = t->free_head;
	e = &t->ent[cookie];
	t->free_head = e->next_free;
	e->used = true;
	e->stale = false;
	e->wr_id = wr->wr_id;
	e->signaled = qp->sig_all || (wr->send_flags & IBV_SEND_SIGNALED);
	wqe->wr_id = htole64(UZ_CRW_COOKIE_MAGIC << 32 | (cookie + 1));
	return 0;
}

/* Checks common to CRW and STCRW; the QP is a uzura RC QP after it. */
static int uz_crw_check_qp(struct ibv_qp *ibqp)
{
	if (!ibqp)
		return EINVAL;
	if (!is_uzura_dev(ibqp->context->device) ||
	    !uz_crw_supported(to_uctx(ibqp->context)))
		return EOPNOTSUPP;
	if (ibqp->qp_type != IBV_QPT_RC)
		return EINVAL;
	return 0;
}

int uzuradv_post_crw(struct ibv_qp *ibqp, const struct uzuradv_crw_wr *wr)
{
	struct uzura_qp *qp;
	uint64_t len = 0;
	uint32_t i;
	int ret;

	ret = uz_crw_check_qp(ibqp);
	if (ret)
		return ret;
	qp = to_uqp(ibqp);
	if (!wr || wr->comp_mask || (wr->send_flags & ~UZ_CRW_SEND_FLAGS) ||
	    (wr->num_sge && !wr->sg_list))
		return EINVAL;
	if (wr->send_flags & IBV_SEND_INLINE) {
		for (i = 0; i < wr->num_sge; i++)
			len += wr->sg_list[i].length;
		if (len > qp->max_inline)
			return EINVAL;
	} else if (wr->num_sge > qp->sq.max_sge) {
		return EINVAL;
	}
	return uzura_post_wqe(qp, uz_fill_crw, wr, wr->wr_id, false, true);
}

static int uz_fill_stcrw(struct uzura_qp *qp, struct uz_send_wqe *wqe,
			 const void *arg)
{
	const struct uzuradv_stcrw_wr *wr = arg;

	memset(wqe, 0, sizeof(*wqe));
	wqe->wr_id = htole64(wr->wr_id);
	wqe->opcode = UZ_WR_STCRW;
	if (qp->sig_all || (wr->send_flags & IBV_SEND_SIGNALED))
		wqe->flags |= UZ_WQE_F_SIGNALED;
	if (wr->send_flags & IBV_SEND_FENCE)
		wqe->flags |= UZ_WQE_F_FENCE;
	wqe->rkey = htole32(wr->rkey);
	wqe->remote_addr = htole64(wr->addr);
	wqe->crw.tag = htole64(wr->tag);
	wqe->crw.length = htole32(wr->length);
	return 0;
}

int uzuradv_post_stcrw(struct ibv_qp *ibqp, const struct uzuradv_stcrw_wr *wr)
{
	struct uzura_qp *qp;
	int ret;

	ret = uz_crw_check_qp(ibqp);
	if (ret)
		return ret;
	qp = to_uqp(ibqp);
	if (!wr || wr->comp_mask || wr->reserved ||
	    (wr->send_flags & ~UZ_STCRW_SEND_FLAGS))
		return EINVAL;
	return uzura_post_wqe(qp, uz_fill_stcrw, wr, wr->wr_id,
			      qp->sig_all ||
			      (wr->send_flags & IBV_SEND_SIGNALED), false);
}

/*
 * A CQE with opcode UZ_WC_CRW, from poll_cq with the CQ lock held: give
 * wc the caller's wr_id, free SQ slots by the CRW count.  False when the
 * completion is not reported (a successful unsignalled CRW).
 */
bool uzura_crw_complete(struct uzura_qp *qp, const struct uz_cqe *cqe,
			struct ibv_wc *wc)
{
	struct uzura_wq *sq = &qp->sq;
	uint32_t mask = (1u << sq->log_depth) - 1;
	struct uzura_crw_ent *e;
	bool count = true, report = true;
	uint32_t i, end, idx;

	pthread_spin_lock(&sq->lock);
	e = uz_crw_lookup(qp->crw, le64toh(cqe->wr_id), &idx);
	if (e) {
		wc->wr_id = e->wr_id;
		count = !e->stale;
		report = e->signaled || cqe->status != UZ_WC_STATUS_SUCCESS;
		uz_crw_put(qp->crw, idx);
	}
	/* Else a WQE the device could not read: wr_id 0, still a CRW. */

	if (count) {
		qp->crw_done++;
		end = sq->ci;
		for (i = sq->ci; i != sq->pi; i = (i + 1) & UZ_DB_PI_MASK) {
			const struct uzura_sq_slot *s = &qp->slots[i & mask];

			if (!s->crw)
				continue;
			if ((int32_t)(s->crw_seq - qp->crw_done) >= 0)
				break;
			end = (i + 1) & UZ_DB_PI_MASK;
		}
		sq->ci = end;
	}
	pthread_spin_unlock(&sq->lock);
	return report;
}

/*
 * The QP went to RESET.  The device has discarded the CRWs still in its
 * SQ, without completions, and has written a flush completion for each
 * CRW its tag table held before the modify returned: those CQEs, not
 * polled yet, are in the send CQ.  Keep the cookies they name (their
 * completions no longer count for the SQ, which starts over) and forget
 * the others.
 */
void uzura_crw_reset(struct uzura_qp *qp)
{
	struct uzura_cq *cq = to_ucq(qp->ibqp.send_cq);
	struct uzura_crw_table *t;
	uint32_t k, n, ci, idx;

	pthread_spin_lock(&cq->lock);
	pthread_spin_lock(&qp->sq.lock);
	qp->crw_posted = 0;
	qp->crw_done = 0;
	t = qp->crw;
	if (!t)
		goto out;
	for (k = 0; k < t->size; k++)
		t->ent[k].keep = false;

	n = 1u << cq->log_depth;
	for (k = 0; k < n; k++) {
		struct uz_cqe *cqe;
		struct uzura_crw_ent *e;

		ci = (cq->ci + k) & UZ_DB_CI_MASK;
		cqe = uz_cq_written(cq, ci);
		if (!cqe)
			break;
		if (cqe->opcode != UZ_WC_CRW ||
		    (le32toh(cqe->qpn) & 0xffffff) != qp->ibqp.qp_num)
			continue;
		e = uz_crw_lookup(t, le64toh(cqe->wr_id), &idx);
		if (e)
			e->keep = true;
	}
	for (k = 0; k < t->size; k++) {
		if (!t->ent[k].used)
			continue;
		if (t->ent[k].keep)
			t->ent[k].stale = true;
		else
			uz_crw_put(t, k);
	}
out:
	pthread_spin_unlock(&qp->sq.lock);
	pthread_spin_unlock(&cq->lock);
}

/* ---- counters ---- */

#define UZ_COUNTER_DIR_MAX	(IBV_SYSFS_PATH_MAX + 64)

/* The directory of the port's hw counters (or the device's), or errno. */
static int uz_counter_dir(struct ibv_context *context, uint8_t port_num,
			  char *dir, size_t len)
{
	const char *ibdev = context->device->ibdev_path;
	char base[IBV_SYSFS_PATH_MAX];
	struct stat st;

	if (!ibdev[0]) {
		snprintf(base, sizeof(base), "/sys/class/infiniband/%s",
			 ibv_get_device_name(context->device));
		ibdev = base;
	}
	snprintf(dir, len, "%s/ports/%u", ibdev, port_num);
	if (stat(dir, &st) || !S_ISDIR(st.st_mode))
		return EINVAL;		/* no such port */
	snprintf(dir, len, "%s/ports/%u/hw_counters", ibdev, port_num);
	if (!stat(dir, &st) && S_ISDIR(st.st_mode))
		return 0;
	snprintf(dir, len, "%s/hw_counters", ibdev);
	if (!stat(dir, &st) && S_ISDIR(st.st_mode))
		return 0;
	return EOPNOTSUPP;
}

/* A counter's name: a file name, not ib_core's "lifespan" setting. */
static int uz_counter_name_ok(const char *name)
{
	size_t len = strnlen(name, UZURADV_COUNTER_NAME_MAX);

	if (!len || len == UZURADV_COUNTER_NAME_MAX || strchr(name, '/') ||
	    !strcmp(name, ".") || !strcmp(name, ".."))
		return EINVAL;
	if (!strcmp(name, "lifespan"))
		return ENOENT;
	return 0;
}

static int uz_read_counter(const char *dir, const char *name, uint64_t *val)
{
	char path[UZ_COUNTER_DIR_MAX + UZURADV_COUNTER_NAME_MAX + 2];
	char buf[32], *end;
	ssize_t n;
	int fd, err;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	n = read(fd, buf, sizeof(buf) - 1);
	err = errno;
	close(fd);
	if (n < 0)
		return err;
	buf[n] = 0;
	errno = 0;
	*val = strtoull(buf, &end, 10);
	if (errno || end == buf || (*end && *end != '\n'))
		return EIO;
	return 0;
}

int uzuradv_query_counters(struct ibv_context *context, uint8_t port_num,
			   struct uzuradv_counter *counters, size_t num)
{
	char dir[UZ_COUNTER_DIR_MAX];
	size_t i;
	int ret;

	if (!context || (num && !counters))
		return EINVAL;
	if (!is_uzura_dev(context->device))
		return EOPNOTSUPP;
	ret = uz_counter_dir(context, port_num, dir, sizeof(dir));
	if (ret)
		return ret;
	for (i = 0; i < num; i++) {
		ret = uz_counter_name_ok(counters[i].name);
		if (!ret)
			ret = uz_read_counter(dir, counters[i].name,
					      &counters[i].value);
		if (ret)
			return ret;
	}
	return 0;
}

static int uz_name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int uzuradv_list_counters(struct ibv_context *context, uint8_t port_num,
			  struct uzuradv_counter *counters, size_t max,
			  size_t *num)
{
	char dir[UZ_COUNTER_DIR_MAX];
	char **names = NULL, **more;
	size_t n = 0, cap = 0, i;
	struct dirent *de;
	DIR *d;
	int ret;

	if (!context || !num || (max && !counters))
		return EINVAL;
	if (!is_uzura_dev(context->device))
		return EOPNOTSUPP;
	ret = uz_counter_dir(context, port_num, dir, sizeof(dir));
	if (ret)
		return ret;
	d = opendir(dir);
	if (!d)
		return errno;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.' || uz_counter_name_ok(de->d_name))
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 64;
			more = realloc(names, cap * sizeof(*names));
			if (!more) {
				ret = ENOMEM;
				goto out;
			}
			names = more;
		}
		names[n] = strdup(de->d_name);
		if (!names[n]) {
			ret = ENOMEM;
			goto out;
		}
		n++;
	}
	if (n)
		qsort(names, n, sizeof(*names), uz_name_cmp);
	for (i = 0; i < n && i < max; i++) {
		memset(counters[i].name, 0, sizeof(counters[i].name));
		strcpy(counters[i].name, names[i]);
		ret = uz_read_counter(dir, names[i], &counters[i].value);
		if (ret)
			goto out;
	}
	*num = n;
out:
	closedir(d);
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return ret;
}
