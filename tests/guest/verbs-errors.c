// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * verbs-errors: bad input to the verbs on uzura0 gets the documented error
 * (libibverbs: create calls return NULL with errno set, post and modify
 * calls return a positive errno).  Run in a guest; speaks TAP, exits 0
 * only if every check passes.
 *
 * Where each error comes from:
 *  - CQ with cqe > max_cqe: the driver, EINVAL (uz_create_cq).
 *  - QP with max_send_wr > max_qp_wr: the driver, EINVAL (uz_qp_sizes);
 *    max_send_sge > max_sge: the provider, EINVAL (uz_qp_sizes).
 *  - UC QP: created; one asking for READs (a send op UC lacks): the
 *    provider, EOPNOTSUPP (qp_ex.c).
 *  - reg_mr of an unmapped range: ib_umem_get, EFAULT; of length 0: the
 *    driver, EINVAL (uz_reg_user_mr).
 *  - RESET -> RTS: the driver, EINVAL (ib_modify_qp_is_ok).
 *  - posting to a QP in RESET: the provider, EINVAL with *bad_wr at the
 *    first WR; a full RQ: ENOMEM with *bad_wr at the first WR not posted
 *    (guest-lib/README.md).
 *  - a WQE the device refuses: its CQE status and no async event; a
 *    request its responder refuses: IBV_EVENT_QP_ACCESS_ERR on the async
 *    fd (the device's QP_ACCESS_ERR event, through the driver).
 *  - resize_cq below the completions not polled: the device, EINVAL
 *    (UZ_CMD_RESIZE_CQ); a resize with completions outstanding keeps
 *    them, in order (the provider copies them, uzura_resize_cq).
 *  - rereg_mr changes an MR in place and keeps its keys (the driver,
 *    UZ_CMD_REREG_MR): a WRITE with the old rkey lands in the new pages;
 *    a new translation the kernel cannot pin is IBV_REREG_MR_ERR_CMD and
 *    leaves the MR as it was; a PD an MR moved to is busy until it
 *    leaves; taking remote write away fails the next WRITE.
 *  - memory windows (the provider's mw.c, the device's BIND_MW): an
 *    unknown type is EINVAL; ibv_bind_mw of a type 2 window, or
 *    IBV_WR_BIND_MW of a type 1 window, EINVAL; a bound window lets a
 *    WRITE in where its MR does not, and LOCAL_INV takes that back;
 *    dereg_mr of an MR with a window bound is EBUSY (the IB rule).
 *  - completion timestamps (the provider's clock.c, the device's
 *    UZ_CAP_TIMESTAMP): a CQ asking for them and ibv_query_rt_values_ex
 *    are EOPNOTSUPP without the clock; an unknown rt_values comp_mask
 *    bit is EINVAL; timestamps survive the provider's moves of CQEs.
 *  - extended verbs (the provider's qp_ex.c and cq_ex.c): a CQ asking for
 *    IGNORE_OVERRUN, a QP asking for send ops the
 *    device lacks (RDMA and windows on UD) or create flags:
 *    EOPNOTSUPP; cqe > max_cqe: EINVAL (the driver).  ibv_wr_complete
 *    fails the whole batch, posting nothing: EINVAL in RESET, for inline
 *    data over max_inline_data, too many SGEs, an unaligned atomic or
 *    atomic write, a FLUSH of no placement type or an unknown level, a
 *    setter with no WR, a UD WR without wr_set_ud_addr, an unknown
 *    wr_flags bit; ENOMEM past the SQ's depth; EOPNOTSUPP for a WR the
 *    QP type or the device lacks (guest-lib/README.md).
 *  - FLUSH and ATOMIC WRITE (the device's UZ_CAP_PLACEMENT): an MR with
 *    IBV_ACCESS_FLUSH_PERSISTENT is EOPNOTSUPP (ib_core: the device has
 *    no persistent memory); a FLUSH to an MR without
 *    IBV_ACCESS_FLUSH_GLOBAL completes REM_ACCESS_ERR.
 *  - thread and parent domains (the provider's domain.c): a thread domain
 *    with a comp_mask, a parent domain without a PD or of another parent
 *    domain, a CQ whose domain is a plain PD: EINVAL; a PD with a parent
 *    domain, a thread domain in one and a parent domain with a QP or CQ
 *    on it: EBUSY; a QP and a CQ on a parent domain carry a SEND.
 *  - tag matching SRQs (the provider's tm.c, the device's UZ_CAP_TM): a
 *    tag list or operation ring beyond tm_caps, or no CQ: EINVAL;
 *    post_srq_ops on an SRQ without tag matching, with two SGEs, an
 *    unknown flag or a handle no ADD gave: EINVAL, a full tag list:
 *    ENOMEM, *bad_wr at that WR; an ADD the device refuses (a bad lkey)
 *    completes IBV_WC_TM_ERR though unsignalled, the completions of
 *    unsignalled operations that succeed are not reported, and an entry
 *    is handed out again once its DEL's completion was polled.
 */
#include <endian.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>

#include "self-qp.h"
#include "tap.h"

/* A create call must have failed with exactly want. */
static void check_null(const void *obj, int err, int want, const char *what)
{
	check(!obj && err == want, "%s: NULL with errno %s (got %s, errno %d %s)",
	      what, strerror(want), obj ? "an object" : "NULL", err,
	      strerror(err));
}

static void check_ret(int ret, int want, const char *what)
{
	check(ret == want, "%s: returns %d %s (got %d %s)", what, want,
	      strerror(want), ret, strerror(ret));
}

static struct ibv_qp *make_qp(struct ibv_pd *pd, struct ibv_cq *cq,
			      enum ibv_qp_type type, uint32_t send_wr,
			      uint32_t send_sge, uint32_t recv_wr, int *err)
{
	struct ibv_qp_init_attr a = {
		.send_cq = cq,
		.recv_cq = cq,
		.qp_type = type,
		.cap = {
			.max_send_wr = send_wr,
			.max_send_sge = send_sge,
			.max_recv_wr = recv_wr,
			.max_recv_sge = 1,
		},
	};
	struct ibv_qp *qp;

	errno = 0;
	qp = ibv_create_qp(pd, &a);
	*err = errno;
	return qp;
}

/* The next async event within @ms milliseconds, acknowledged; false if none. */
static bool next_async(struct ibv_context *ctx, int ms,
		       struct ibv_async_event *ev)
{
	struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };

	if (poll(&pfd, 1, ms) != 1 || ibv_get_async_event(ctx, ev))
		return false;
	ibv_ack_async_event(ev);
	return true;
}

/*
 * Device errors reach the user as a ConnectX's do (spec 8.11).  An RC QP
 * (connected to itself; nothing goes on the wire) posts a SEND with a bad
 * lkey: the WQE completes with LOC_PROT_ERR, the QP goes to ERR, and no
 * async event comes (the CQE says it all).  Another, connected without
 * remote write, sends itself an RDMA WRITE: its responder side refuses
 * it (NAK remote access), the WRITE completes with an error, and the
 * driver turns the device's QP_ACCESS_ERR into IBV_EVENT_QP_ACCESS_ERR
 * on the async fd.
 */
static void check_qp_events(struct ibv_context *ctx, struct ibv_pd *pd,
			    struct ibv_mr *mr, char *buf)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
	struct ibv_mr *rmr = ibv_reg_mr(pd, buf + 512, 64,
					IBV_ACCESS_LOCAL_WRITE |
					IBV_ACCESS_REMOTE_WRITE);
	int gidx = ipv4_gid_index(ctx), ret, err, k;
	struct ibv_qp *qp[2] = { NULL, NULL };
	struct ibv_sge sge = {
		.addr = (uintptr_t)buf, .length = 64, .lkey = mr->lkey ^ 0x100,
	};
	struct ibv_send_wr wr = {
		.wr_id = 7, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
	}, *bad = NULL;
	struct ibv_async_event ev;
	struct ibv_wc wc;
	bool got;

	for (k = 0; cq && k < 2; k++)
		qp[k] = make_qp(pd, cq, IBV_QPT_RC, 4, 1, 4, &err);
	check(qp[0] && qp[1] && rmr && gidx >= 0,
	      "two RC QPs, an MR with remote write, the port's IPv4 GID (%d)",
	      gidx);
	if (!qp[0] || !qp[1] || !rmr || gidx < 0)
		goto out;

	ret = connect_self(ctx, qp[0], gidx, IBV_ACCESS_LOCAL_WRITE);
	check_ret(ret, 0, "modify_qp to RTS, connected to itself");
	ret = ret ? ret : ibv_post_send(qp[0], &wr, &bad);
	check_ret(ret, 0, "post_send of a SEND with a bad lkey");
	got = !ret && wait_wc(cq, &wc);
	check(got && wc.wr_id == 7 && wc.status == IBV_WC_LOC_PROT_ERR,
	      "the SEND completes with LOC_PROT_ERR (status %d)",
	      got ? (int)wc.status : -1);
	got = next_async(ctx, 1000, &ev);
	check(!got, "no async event: the CQE says it (got %s)",
	      got ? ibv_event_type_str(ev.event_type) : "none");

	ret = connect_self(ctx, qp[1], gidx, IBV_ACCESS_LOCAL_WRITE);
	check_ret(ret, 0, "a QP without remote write, connected to itself");
	sge.lkey = mr->lkey;
	wr = (struct ibv_send_wr) {
		.wr_id = 8, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = (uintptr_t)buf + 512,
			     .rkey = rmr->rkey },
	};
	ret = ret ? ret : ibv_post_send(qp[1], &wr, &bad);
	check_ret(ret, 0, "post_send of an RDMA WRITE to itself");
	got = !ret && wait_wc(cq, &wc);
	check(got && wc.wr_id == 8 && wc.status != IBV_WC_SUCCESS,
	      "the WRITE completes with an error (status %d)",
	      got ? (int)wc.status : -1);
	got = next_async(ctx, 5000, &ev);
	check(got && ev.event_type == IBV_EVENT_QP_ACCESS_ERR &&
	      ev.element.qp == qp[1],
	      "async event IBV_EVENT_QP_ACCESS_ERR for the QP (got %s)",
	      got ? ibv_event_type_str(ev.event_type) : "none");
out:
	for (k = 0; k < 2; k++)
		if (qp[k])
			ibv_destroy_qp(qp[k]);
	if (rmr)
		ibv_dereg_mr(rmr);
	if (cq)
		ibv_destroy_cq(cq);
}

/* @n signalled RDMA WRITEs of 8 bytes from @buf to itself, wr_id from @id. */
static int self_writes(struct ibv_qp *qp, struct ibv_mr *mr, char *buf,
		       int n, uint64_t id)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)buf, .length = 8, .lkey = mr->lkey,
	};
	struct ibv_send_wr wr = {
		.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = (uintptr_t)buf + 64,
			     .rkey = mr->rkey },
	}, *bad;
	int i, ret = 0;

	for (i = 0; i < n && !ret; i++) {
		wr.wr_id = id + i;
		ret = ibv_post_send(qp, &wr, &bad);
	}
	return ret;
}

/* Poll @n completions: they must be the WRITEs @id, @id + 1, ... */
static bool poll_in_order(struct ibv_cq *cq, int n, uint64_t id)
{
	struct ibv_wc wc;
	int got = 0, i;

	for (i = 0; i < 1000 && got < n; i++) {
		int k = ibv_poll_cq(cq, 1, &wc);

		if (k < 0 || (k == 1 && (wc.status != IBV_WC_SUCCESS ||
					 wc.wr_id != id + got))) {
			printf("# poll %d: wr_id %llu status %d, wanted %llu\n",
			       k, k == 1 ? (unsigned long long)wc.wr_id : 0ull,
			       k == 1 ? (int)wc.status : -1,
			       (unsigned long long)(id + got));
			return false;
		}
		got += k;
		if (!k)
			usleep(10000);
	}
	if (got != n)
		printf("# %d of %d completions\n", got, n);
	return got == n;
}

/*
 * ibv_resize_cq keeps the completions not polled yet (the provider
 * copies them into the new ring, device spec 8.5.1), larger or smaller,
 * and refuses to go below them with EINVAL, changing nothing.  WRITEs of
 * an RC QP to itself make the completions; those not yet written when
 * the CQ moves come in the new ring: either way each comes once, in order.
 */
static void check_cq_resize(struct ibv_context *ctx, struct ibv_pd *pd,
			    char *buf)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
	int gidx = ipv4_gid_index(ctx), ret, err;
	struct ibv_qp *qp = cq ? make_qp(pd, cq, IBV_QPT_RC, 32, 1, 4, &err) :
				 NULL;
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, 128, IBV_ACCESS_LOCAL_WRITE |
				       IBV_ACCESS_REMOTE_WRITE);
	struct ibv_wc wc;

	check(qp && mr && gidx >= 0, "a CQ of 4, an RC QP, an MR to write to");
	if (!qp || !mr || gidx < 0)
		goto out;
	ret = connect_self(ctx, qp, gidx, IBV_ACCESS_LOCAL_WRITE |
			   IBV_ACCESS_REMOTE_WRITE);
	ret = ret ? ret : self_writes(qp, mr, buf, 3, 100);
	check(!ret && poll_in_order(cq, 1, 100), "3 WRITEs, the first polled");
	usleep(200000);
	ret = ibv_resize_cq(cq, 24);
	check(!ret && cq->cqe >= 24, "resize_cq to 24 with completions "
	      "outstanding (cqe %d, ret %d)", cq->cqe, ret);
	ret = ret ? ret : self_writes(qp, mr, buf, 20, 103);
	check(!ret && poll_in_order(cq, 22, 101),
	      "then 20 WRITEs: the 22 completions come once each, in order");
	ret = self_writes(qp, mr, buf, 6, 200);
	usleep(300000);
	check_ret(ibv_resize_cq(cq, 2), EINVAL,
		  "resize_cq below the 6 completions not polled");
	check(poll_in_order(cq, 6, 200), "... which are still there, in order");
	ret = ibv_resize_cq(cq, 3);
	check(!ret && self_writes(qp, mr, buf, 3, 300) == 0 &&
	      poll_in_order(cq, 3, 300), "resize_cq down to 3, 3 WRITEs");
	usleep(100000);
	check(ibv_poll_cq(cq, 1, &wc) == 0, "and no completion more");
out:
	if (qp)
		ibv_destroy_qp(qp);
	if (mr)
		ibv_dereg_mr(mr);
	if (cq)
		ibv_destroy_cq(cq);
}

/* One signalled WRITE of 8 bytes at @src to @dst with @rkey: its status. */
static int self_write_to(struct ibv_qp *qp, struct ibv_cq *cq,
			 struct ibv_mr *mr, char *src, char *dst, uint32_t rkey)
{
	return rdma_wait(qp, cq, IBV_WR_RDMA_WRITE, src, mr->lkey, dst, rkey);
}

/*
 * ibv_rereg_mr in place: the keys stay, so a peer's old rkey reaches the
 * new memory (here the QP's own WRITEs, to itself).
 */
static void check_rereg(struct ibv_context *ctx, struct ibv_pd *pd)
{
	long page = sysconf(_SC_PAGESIZE);
	struct ibv_cq *cq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
	int gidx = ipv4_gid_index(ctx), ret, err;
	struct ibv_qp *qp = cq ? make_qp(pd, cq, IBV_QPT_RC, 4, 1, 4, &err) :
				 NULL;
	int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	char *a = aligned_alloc(page, page), *b = aligned_alloc(page, 2 * page);
	struct ibv_mr *mr = a ? ibv_reg_mr(pd, a, page, acc) : NULL;
	struct ibv_pd *pd2 = ibv_alloc_pd(ctx);
	uint32_t lkey, rkey;
	void *hole;

	check(qp && mr && b && pd2 && gidx >= 0,
	      "rereg: a QP, an MR of a page, a second PD");
	if (!qp || !mr || !b || !pd2 || gidx < 0)
		goto out;
	memset(a, 0, page);
	memset(b, 0, 2 * page);
	lkey = mr->lkey;
	rkey = mr->rkey;
	ret = connect_self(ctx, qp, gidx, acc);
	check(!ret && self_write_to(qp, cq, mr, a, a + 64, rkey) == 0,
	      "a WRITE into the MR");

	ret = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL,
			   b + page / 2, page, 0);
	check(!ret && mr->lkey == lkey && mr->rkey == rkey &&
	      mr->addr == b + page / 2, "rereg_mr to two pages elsewhere "
	      "(ret %d): the keys stay", ret);
	memcpy(b + page / 2, "rereg-ok", 8);
	check(self_write_to(qp, cq, mr, b + page / 2, b + page + 8, rkey) == 0 &&
	      !memcmp(b + page + 8, "rereg-ok", 8) && !a[page / 2 + 8],
	      "a WRITE with the old keys lands in the new pages only");

	hole = mmap(NULL, 2 * page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
		    -1, 0);
	if (hole != MAP_FAILED)
		munmap(hole, 2 * page);
	ret = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, hole,
			   page, 0);
	memcpy(b + page / 2, "stillok!", 8);
	check(ret == IBV_REREG_MR_ERR_CMD && mr->addr == b + page / 2 &&
	      self_write_to(qp, cq, mr, b + page / 2, b + page + 16, rkey) == 0 &&
	      !memcmp(b + page + 16, "stillok!", 8),
	      "rereg_mr to an unmapped range fails (ret %d), the MR stays", ret);

	ret = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_PD, pd2, NULL, 0, 0);
	check(!ret && mr->pd == pd2, "rereg_mr to another PD (ret %d)", ret);
	check_ret(ibv_dealloc_pd(pd2), EBUSY, "dealloc_pd of the MR's new PD");
	ret = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_PD, pd, NULL, 0, 0);
	check(!ret && ibv_dealloc_pd(pd2) == 0,
	      "rereg_mr back, then the PD goes (ret %d)", ret);
	pd2 = NULL;

	/*
	 * The QP is its own responder: the access error moves it to ERR,
	 * which may flush the WRITE before the NAK comes back.
	 */
	ret = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			   IBV_ACCESS_LOCAL_WRITE);
	memcpy(b + page / 2, "notthere", 8);
	err = ret ? -1 : self_write_to(qp, cq, mr, b + page / 2, b + page + 24,
				       rkey);
	check(!ret && (err == IBV_WC_REM_ACCESS_ERR ||
		       err == IBV_WC_WR_FLUSH_ERR) &&
	      memcmp(b + page + 24, "notthere", 8),
	      "without remote write, a WRITE fails and writes nothing "
	      "(ret %d, status %d)", ret, err);
out:
	if (qp)
		ibv_destroy_qp(qp);
	if (mr)
		ibv_dereg_mr(mr);
	if (pd2)
		ibv_dealloc_pd(pd2);
	if (cq)
		ibv_destroy_cq(cq);
	free(a);
	free(b);
}

/* One SEND of 8 bytes from @buf to the next receive of @qp (itself). */
static int self_send(struct ibv_qp *qp, struct ibv_cq *cq,
		     struct ibv_mr *mr, char *buf)
{
	struct ibv_sge sge = { (uintptr_t)buf, 8, mr->lkey };
	struct ibv_recv_wr rwr = { .sg_list = &sge, .num_sge = 1 }, *rbad;
	struct ibv_send_wr wr = {
		.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
	};
	enum ibv_wc_opcode op;
	int st;

	if (ibv_post_recv(qp, &rwr, &rbad))
		return -1;
	st = post_wait(qp, cq, &wr, &op);
	return st ? st : poll_one(cq, &op);
}

static void check_domains(struct ibv_context *ctx, struct ibv_pd *pd,
			  struct ibv_mr *mr, char *buf)
{
	struct ibv_td_init_attr tda = {};
	struct ibv_parent_domain_init_attr pda = {};
	struct ibv_cq_init_attr_ex cqa = {
		.cqe = 8, .comp_mask = IBV_CQ_INIT_ATTR_MASK_PD,
	};
	struct ibv_qp_init_attr qpa = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 2, .max_recv_wr = 2,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_pd *par = NULL, *bad;
	struct ibv_cq_ex *cqx = NULL;
	struct ibv_qp *qp = NULL;
	struct ibv_td *td;
	int err, gidx = ipv4_gid_index(ctx);

	tda.comp_mask = 1;
	errno = 0;
	td = ibv_alloc_td(ctx, &tda);
	check_null(td, errno, EINVAL, "alloc_td with a comp_mask");
	tda.comp_mask = 0;
	td = ibv_alloc_td(ctx, &tda);
	check(td != NULL, "alloc_td");
	errno = 0;
	bad = ibv_alloc_parent_domain(ctx, &pda);
	check_null(bad, errno, EINVAL, "alloc_parent_domain without a PD");
	pda.pd = pd;
	pda.td = td;
	par = ibv_alloc_parent_domain(ctx, &pda);
	check(par != NULL, "alloc_parent_domain with a PD and a thread domain");
	if (!td || !par)
		goto out;
	pda.pd = par;
	pda.td = NULL;
	errno = 0;
	bad = ibv_alloc_parent_domain(ctx, &pda);
	check_null(bad, errno, EINVAL, "alloc_parent_domain of a parent domain");
	check_ret(ibv_dealloc_pd(pd), EBUSY, "dealloc_pd of a PD with a parent domain");
	check_ret(ibv_dealloc_td(td), EBUSY, "dealloc_td of a thread domain in use");

	cqa.parent_domain = pd;
	errno = 0;
	cqx = ibv_create_cq_ex(ctx, &cqa);
	check_null(cqx, errno, EINVAL, "create_cq_ex on a plain PD as its domain");
	cqa.parent_domain = par;
	cqx = ibv_create_cq_ex(ctx, &cqa);
	qpa.send_cq = qpa.recv_cq = cqx ? ibv_cq_ex_to_cq(cqx) : NULL;
	qp = cqx ? ibv_create_qp(par, &qpa) : NULL;
	check(qp && !connect_self(ctx, qp, gidx, 0),
	      "a CQ and an RC QP on the parent domain");
	if (!qp)
		goto out;
	check_ret(ibv_dealloc_pd(par), EBUSY,
		  "dealloc_pd of a parent domain with a QP and a CQ on it");
	err = self_send(qp, ibv_cq_ex_to_cq(cqx), mr, buf);
	check(err == IBV_WC_SUCCESS, "a SEND on it, to itself (status %d)", err);
out:
	if (qp)
		ibv_destroy_qp(qp);
	if (cqx)
		ibv_destroy_cq(ibv_cq_ex_to_cq(cqx));
	if (par)
		check_ret(ibv_dealloc_pd(par), 0, "dealloc_pd of the parent domain");
	if (td)
		check_ret(ibv_dealloc_td(td), 0, "dealloc_td");
}

/*
 * Memory windows over an MR that grants no remote access itself: WRITEs
 * of the QP to itself get in through a bound window, and not once it is
 * unbound.
 */
static void check_mw(struct ibv_context *ctx, struct ibv_pd *pd)
{
	long page = sysconf(_SC_PAGESIZE);
	struct ibv_cq *cq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
	int gidx = ipv4_gid_index(ctx), ret, err, st;
	struct ibv_qp *qp = cq ? make_qp(pd, cq, IBV_QPT_RC, 4, 1, 4, &err) :
				 NULL;
	char *a = aligned_alloc(page, page);
	struct ibv_mr *mr = a ? ibv_reg_mr(pd, a, page, IBV_ACCESS_LOCAL_WRITE |
					   IBV_ACCESS_MW_BIND) : NULL;
	struct ibv_mw *mw1 = ibv_alloc_mw(pd, IBV_MW_TYPE_1);
	struct ibv_mw *mw2 = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
	struct ibv_mw_bind bind = {
		.wr_id = 5, .send_flags = IBV_SEND_SIGNALED,
		.bind_info = { .mr = mr, .addr = (uintptr_t)a + 256,
			       .length = 256,
			       .mw_access_flags = IBV_ACCESS_REMOTE_WRITE },
	};
	struct ibv_send_wr wr = { .wr_id = 6, .opcode = IBV_WR_BIND_MW,
				  .send_flags = IBV_SEND_SIGNALED };
	struct ibv_send_wr *bad_wr;
	enum ibv_wc_opcode op;
	struct ibv_mw *bad_mw;
	uint32_t rkey;

	bad_mw = ibv_alloc_mw(pd, 3);
	check_null(bad_mw, errno, EINVAL, "alloc_mw of type 3");
	check(qp && mr && mw1 && mw2 && gidx >= 0,
	      "windows of both types, an MR they may bind to, a QP");
	if (!qp || !mr || !mw1 || !mw2 || gidx < 0)
		goto out;
	memset(a, 0, page);
	memcpy(a, "window!!", 8);
	ret = connect_self(ctx, qp, gidx, IBV_ACCESS_LOCAL_WRITE |
			   IBV_ACCESS_REMOTE_WRITE);
	check_ret(ibv_bind_mw(qp, mw2, &bind), EINVAL,
		  "bind_mw of a type 2 window");
	wr.bind_mw.mw = mw1;
	wr.bind_mw.rkey = ibv_inc_rkey(mw1->rkey);
	wr.bind_mw.bind_info = bind.bind_info;
	check_ret(ibv_post_send(qp, &wr, &bad_wr), EINVAL,
		  "IBV_WR_BIND_MW of a type 1 window");

	rkey = mw1->rkey;
	ret = ret ? ret : ibv_bind_mw(qp, mw1, &bind);
	st = ret ? -1 : poll_one(cq, &op);
	check(!ret && st == IBV_WC_SUCCESS && op == IBV_WC_BIND_MW &&
	      mw1->rkey != rkey, "bind_mw of a type 1 window (ret %d, status "
	      "%d): a new rkey", ret, st);
	st = self_write_to(qp, cq, mr, a, a + 300, mw1->rkey);
	check(st == IBV_WC_SUCCESS && !memcmp(a + 300, "window!!", 8),
	      "a WRITE through the window lands (status %d)", st);
	check_ret(ibv_dereg_mr(mr), EBUSY, "dereg_mr with a window bound");

	wr.bind_mw.mw = mw2;
	wr.bind_mw.rkey = ibv_inc_rkey(mw2->rkey);
	st = post_wait(qp, cq, &wr, &op);
	check(st == IBV_WC_SUCCESS && op == IBV_WC_BIND_MW,
	      "IBV_WR_BIND_MW of a type 2 window completes (status %d, "
	      "opcode %d)", st, op);
	memcpy(a, "window2!", 8);
	st = self_write_to(qp, cq, mr, a, a + 400, wr.bind_mw.rkey);
	check(st == IBV_WC_SUCCESS && !memcmp(a + 400, "window2!", 8),
	      "a WRITE through the type 2 window lands (status %d)", st);
	wr = (struct ibv_send_wr){ .wr_id = 7, .opcode = IBV_WR_LOCAL_INV,
				   .send_flags = IBV_SEND_SIGNALED,
				   .invalidate_rkey = wr.bind_mw.rkey };
	st = post_wait(qp, cq, &wr, &op);
	check(st == IBV_WC_SUCCESS && op == IBV_WC_LOCAL_INV,
	      "LOCAL_INV of the type 2 window (status %d, opcode %d)", st, op);
	/*
	 * The QP is its own responder: the access error moves it to ERR,
	 * which may flush the WRITE before the NAK comes back.
	 */
	memcpy(a, "notthere", 8);
	st = self_write_to(qp, cq, mr, a, a + 480, wr.invalidate_rkey);
	check((st == IBV_WC_REM_ACCESS_ERR || st == IBV_WC_WR_FLUSH_ERR) &&
	      memcmp(a + 480, "notthere", 8),
	      "once invalidated, a WRITE through it fails (status %d)", st);
out:
	if (qp)
		ibv_destroy_qp(qp);
	if (mw1)
		check_ret(ibv_dealloc_mw(mw1), 0, "dealloc_mw, bound");
	if (mw2)
		check_ret(ibv_dealloc_mw(mw2), 0, "dealloc_mw");
	if (mr)
		check_ret(ibv_dereg_mr(mr), 0, "dereg_mr once no window is bound");
	if (cq)
		ibv_destroy_cq(cq);
	free(a);
}

/* A QP with ibv_create_qp_ex; NULL with *err set. */
static struct ibv_qp *make_qp_ex(struct ibv_context *ctx, struct ibv_pd *pd,
				 struct ibv_cq *cq, enum ibv_qp_type type,
				 uint64_t send_ops, uint32_t create_flags,
				 int *err)
{
	struct ibv_qp_init_attr_ex a = {
		.send_cq = cq,
		.recv_cq = cq,
		.qp_type = type,
		.cap = {
			.max_send_wr = 4,
			.max_send_sge = 1,
			.max_recv_wr = 4,
			.max_recv_sge = 1,
			.max_inline_data = 16,
		},
		.comp_mask = IBV_QP_INIT_ATTR_PD |
			     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = pd,
		.send_ops_flags = send_ops,
	};
	struct ibv_qp *qp;

	if (create_flags) {
		a.comp_mask |= IBV_QP_INIT_ATTR_CREATE_FLAGS;
		a.create_flags = create_flags;
	}
	errno = 0;
	qp = ibv_create_qp_ex(ctx, &a);
	*err = errno;
	return qp;
}

static struct ibv_cq_ex *make_cq_ex(struct ibv_context *ctx, int cqe,
				    uint64_t wc_flags, uint32_t flags,
				    int *err)
{
	struct ibv_cq_init_attr_ex a = {
		.cqe = cqe,
		.wc_flags = wc_flags,
	};
	struct ibv_cq_ex *cq;

	if (flags) {
		a.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS;
		a.flags = flags;
	}
	errno = 0;
	cq = ibv_create_cq_ex(ctx, &a);
	*err = errno;
	return cq;
}

/* The device clock through ibv_query_rt_values_ex, in ns; 0 if it fails. */
static uint64_t raw_clock_ns(struct ibv_context *ctx)
{
	struct ibv_values_ex v = { .comp_mask = IBV_VALUES_MASK_RAW_CLOCK };

	if (ibv_query_rt_values_ex(ctx, &v) ||
	    v.comp_mask != IBV_VALUES_MASK_RAW_CLOCK ||
	    v.raw_clock.tv_nsec >= 1000000000)
		return 0;
	return v.raw_clock.tv_sec * 1000000000ull + v.raw_clock.tv_nsec;
}

static uint64_t realtime_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	return t.tv_sec * 1000000000ull + t.tv_nsec;
}

/*
 * Poll @n completions of @cqx with ibv_start_poll: the WRITEs @id,
 * @id + 1, ..., with their device and wallclock timestamps.
 */
static bool poll_ts(struct ibv_cq_ex *cqx, int n, uint64_t id, uint64_t *ts,
		    uint64_t *wall)
{
	struct ibv_poll_cq_attr pa = {};
	int got = 0, i, ret;
	bool ok = true;

	for (i = 0; i < 500 && got < n && ok; i++) {
		ret = ibv_start_poll(cqx, &pa);
		if (ret) {
			if (ret != ENOENT)
				return false;
			usleep(10000);
			continue;
		}
		do {
			ok = cqx->status == IBV_WC_SUCCESS &&
			     cqx->wr_id == id + got;
			if (!ok) {
				printf("# wr_id %llu status %d, wanted %llu\n",
				       (unsigned long long)cqx->wr_id,
				       (int)cqx->status,
				       (unsigned long long)(id + got));
				break;
			}
			ts[got] = ibv_wc_read_completion_ts(cqx);
			wall[got] = ibv_wc_read_completion_wallclock_ns(cqx);
			got++;
		} while (got < n && !ibv_next_poll(cqx));
		ibv_end_poll(cqx);
	}
	if (ok && got != n)
		printf("# %d of %d completions\n", got, n);
	return ok && got == n;
}

/*
 * Are @n timestamps in order and within [@lo, @hi], their wallclocks
 * within 50 ms of [@rlo, @rhi] (realtime read beside @lo and @hi)?
 */
static bool ts_within(const uint64_t *ts, const uint64_t *wall, int n,
		      uint64_t lo, uint64_t hi, uint64_t rlo, uint64_t rhi)
{
	const uint64_t slack = 50000000;
	int i;

	for (i = 0; i < n; i++) {
		if (ts[i] < lo || ts[i] > hi || (i && ts[i] < ts[i - 1]) ||
		    wall[i] + slack < rlo || wall[i] > rhi + slack) {
			printf("# %d: ts %llu in [%llu, %llu]? wallclock %llu "
			       "in [%llu, %llu]?\n", i,
			       (unsigned long long)ts[i],
			       (unsigned long long)lo, (unsigned long long)hi,
			       (unsigned long long)wall[i],
			       (unsigned long long)rlo, (unsigned long long)rhi);
			return false;
		}
	}
	return true;
}

/*
 * Completion timestamps and the device clock (UZ_CAP_TIMESTAMP, device
 * 0.15; guest-lib/README.md).  Without them a CQ asking for either
 * timestamp and ibv_query_rt_values_ex are EOPNOTSUPP.  With them the
 * clock is 1 GHz and moves on; an unknown comp_mask bit is EINVAL; the
 * WRITEs of RC QPs to themselves complete in a CQ of 64-byte CQEs with
 * timestamps in order between the clock readings around them, and
 * wallclocks near CLOCK_REALTIME; the CQEs keep their timestamps when
 * the provider moves them: through a resize with CQEs outstanding (into
 * a ring of 4 pages, which 80 WRITEs go round) and when a QP moved to
 * RESET takes its CQEs out from after another QP's.
 */
static void check_timestamps(struct ibv_context *ctx, struct ibv_pd *pd,
			     char *buf)
{
	const uint64_t both = IBV_WC_EX_WITH_COMPLETION_TIMESTAMP |
			      IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK;
	struct ibv_values_ex v = { .comp_mask = IBV_VALUES_MASK_RAW_CLOCK };
	struct ibv_qp_attr reset = { .qp_state = IBV_QPS_RESET };
	uint64_t ts[20], wall[20], t0, t1, r0, r1;
	int gidx = ipv4_gid_index(ctx), err, ret, k;
	struct ibv_qp *qp = NULL, *qp2 = NULL;
	struct ibv_device_attr_ex dx;
	struct ibv_cq_ex *cqx;
	struct ibv_mr *mr;
	struct ibv_wc wc;

	ret = ibv_query_device_ex(ctx, NULL, &dx);
	check_ret(ret, 0, "query_device_ex");
	if (ret)
		return;
	if (!dx.completion_timestamp_mask) {
		cqx = make_cq_ex(ctx, 16, IBV_WC_EX_WITH_COMPLETION_TIMESTAMP,
				 0, &err);
		check_null(cqx, err, EOPNOTSUPP, "no clock: create_cq_ex with "
			   "IBV_WC_EX_WITH_COMPLETION_TIMESTAMP");
		cqx = make_cq_ex(ctx, 16,
				 IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK,
				 0, &err);
		check_null(cqx, err, EOPNOTSUPP, "no clock: create_cq_ex with "
			   "IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK");
		check_ret(ibv_query_rt_values_ex(ctx, &v), EOPNOTSUPP,
			  "no clock: query_rt_values_ex");
		return;
	}
	check(dx.completion_timestamp_mask == ~0ull &&
	      dx.hca_core_clock == 1000000,
	      "query_device_ex: timestamp mask ~0, clock 1000000 kHz (%#llx, "
	      "%llu)", (unsigned long long)dx.completion_timestamp_mask,
	      (unsigned long long)dx.hca_core_clock);
	t0 = raw_clock_ns(ctx);
	usleep(10000);
	t1 = raw_clock_ns(ctx);
	check(t0 && t1 >= t0 + 10000000,
	      "query_rt_values_ex: the clock moves with time (%llu, %llu)",
	      (unsigned long long)t0, (unsigned long long)t1);
	v.comp_mask = IBV_VALUES_MASK_RAW_CLOCK | IBV_VALUES_MASK_RESERVED;
	check_ret(ibv_query_rt_values_ex(ctx, &v), EINVAL,
		  "query_rt_values_ex with an unknown comp_mask bit");
	v.comp_mask = 0;
	check(!ibv_query_rt_values_ex(ctx, &v) && !v.comp_mask,
	      "query_rt_values_ex asking for nothing gets nothing");

	for (k = 0; k < 2; k++) {
		uint64_t f = k ? IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK :
				 IBV_WC_EX_WITH_COMPLETION_TIMESTAMP;

		cqx = make_cq_ex(ctx, 16, f, 0, &err);
		check(cqx && cqx->read_completion_ts &&
		      cqx->read_completion_wallclock_ns,
		      "create_cq_ex with %s (errno %d)", k ?
		      "TIMESTAMP_WALLCLOCK" : "TIMESTAMP", cqx ? 0 : err);
		if (cqx)
			ibv_destroy_cq(ibv_cq_ex_to_cq(cqx));
	}

	cqx = make_cq_ex(ctx, 4, IBV_WC_STANDARD_FLAGS | both, 0, &err);
	mr = ibv_reg_mr(pd, buf, 128, IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_WRITE);
	if (cqx) {
		qp = make_qp(pd, ibv_cq_ex_to_cq(cqx), IBV_QPT_RC, 32, 1, 4,
			     &err);
		qp2 = make_qp(pd, ibv_cq_ex_to_cq(cqx), IBV_QPT_RC, 32, 1, 4,
			      &err);
	}
	check(qp && qp2 && mr && gidx >= 0 &&
	      !connect_self(ctx, qp, gidx, IBV_ACCESS_REMOTE_WRITE) &&
	      !connect_self(ctx, qp2, gidx, IBV_ACCESS_REMOTE_WRITE),
	      "a CQ of 4 with both timestamps, two RC QPs connected to "
	      "themselves");
	if (!qp || !qp2 || !mr || gidx < 0)
		goto out;

	/* Three CQEs outstanding move to the new ring, each whole. */
	t0 = raw_clock_ns(ctx);
	r0 = realtime_ns();
	ret = self_writes(qp, mr, buf, 3, 100);
	usleep(200000);
	ret = ret ? ret : ibv_resize_cq(ibv_cq_ex_to_cq(cqx), 100);
	check(!ret, "3 WRITEs, resize_cq to 100 before they are polled");
	ret = ret ? ret : self_writes(qp, mr, buf, 3, 103);
	usleep(100000);
	t1 = raw_clock_ns(ctx);
	r1 = realtime_ns();
	check(!ret && poll_ts(cqx, 6, 100, ts, wall) &&
	      ts_within(ts, wall, 6, t0, t1, r0, r1),
	      "3 more: the 6 completions carry timestamps in order, between "
	      "the clock's readings, and wallclocks near CLOCK_REALTIME");

	/* 80 more go round the pages of the new ring (64 CQEs a page). */
	for (k = 0; k < 4; k++) {
		t0 = raw_clock_ns(ctx);
		r0 = realtime_ns();
		ret = self_writes(qp, mr, buf, 20, 200 + 20 * k);
		usleep(50000);
		t1 = raw_clock_ns(ctx);
		r1 = realtime_ns();
		if (ret || !poll_ts(cqx, 20, 200 + 20 * k, ts, wall) ||
		    !ts_within(ts, wall, 20, t0, t1, r0, r1))
			break;
	}
	check(k == 4, "80 WRITEs in 4 batches, all with timestamps (%d "
	      "batches)", k);

	/*
	 * qp2's CQEs, older than qp's, move over qp's when qp goes to
	 * RESET: their timestamps, before t1, move with them.
	 */
	t0 = raw_clock_ns(ctx);
	r0 = realtime_ns();
	ret = self_writes(qp2, mr, buf, 2, 400);
	usleep(100000);
	t1 = raw_clock_ns(ctx);
	r1 = realtime_ns();
	ret = ret ? ret : self_writes(qp, mr, buf, 2, 500);
	usleep(100000);
	ret = ret ? ret : ibv_modify_qp(qp, &reset, IBV_QP_STATE);
	check(!ret && poll_ts(cqx, 2, 400, ts, wall) &&
	      ts_within(ts, wall, 2, t0, t1, r0, r1) &&
	      ibv_poll_cq(ibv_cq_ex_to_cq(cqx), 1, &wc) == 0,
	      "a QP moved to RESET takes its CQEs out; the other QP's, "
	      "older, keep their timestamps (before %llu)",
	      (unsigned long long)t1);
out:
	if (qp)
		ibv_destroy_qp(qp);
	if (qp2)
		ibv_destroy_qp(qp2);
	if (mr)
		ibv_dereg_mr(mr);
	if (cqx)
		ibv_destroy_cq(ibv_cq_ex_to_cq(cqx));
}

static int to_init(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.port_num = 1,
		.qkey = 0x11111111,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE,
	};

	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			     IBV_QP_PORT | (qp->qp_type == IBV_QPT_UD ?
					    IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS));
}

/* Post n SENDs of one SGE in one wr_start..wr_complete batch. */
static int wr_sends(struct ibv_qp_ex *qpx, struct ibv_mr *mr, char *buf,
		    int n)
{
	int i;

	ibv_wr_start(qpx);
	for (i = 0; i < n; i++) {
		qpx->wr_id = i;
		qpx->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_send(qpx);
		ibv_wr_set_sge(qpx, mr->lkey, (uintptr_t)buf, 8);
	}
	return ibv_wr_complete(qpx);
}

/* Bad input to ibv_create_cq_ex, ibv_create_qp_ex and the ibv_wr_* API. */
static void check_ex_verbs(struct ibv_context *ctx, struct ibv_pd *pd,
			   struct ibv_cq *cq, struct ibv_mr *mr, char *buf,
			   const struct ibv_device_attr *dattr)
{
	const uint64_t rc_ops = IBV_QP_EX_WITH_SEND |
		IBV_QP_EX_WITH_SEND_WITH_IMM | IBV_QP_EX_WITH_RDMA_WRITE |
		IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_RDMA_READ |
		IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
		IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
	struct ibv_poll_cq_attr pattr = {};
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr qattr;
	struct ibv_cq_ex *cqx;
	struct ibv_qp_ex *qpx;
	struct ibv_qp *qp;
	struct ibv_sge sgl[64];
	struct ibv_wc wc;
	char big[4096];
	uint32_t depth;
	int err, ret, i;

	memset(big, 0x5a, sizeof(big));

	/* CQs (timestamps: check_timestamps) */
	cqx = make_cq_ex(ctx, 16, 0, IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN, &err);
	check_null(cqx, err, EOPNOTSUPP,
		   "create_cq_ex with IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN");
	cqx = make_cq_ex(ctx, dattr->max_cqe + 1, 0, 0, &err);
	check_null(cqx, err, EINVAL, "create_cq_ex with cqe = max_cqe + 1");
	cqx = make_cq_ex(ctx, 16, IBV_WC_STANDARD_FLAGS,
			 IBV_CREATE_CQ_ATTR_SINGLE_THREADED, &err);
	check(cqx != NULL, "create_cq_ex with IBV_WC_STANDARD_FLAGS (errno %d)",
	      cqx ? 0 : err);
	if (cqx) {
		check_ret(ibv_start_poll(cqx, &pattr), ENOENT,
			  "start_poll on an empty CQ");
		check_ret(ibv_poll_cq(ibv_cq_ex_to_cq(cqx), 1, &wc), 0,
			  "poll_cq on the same CQ finds nothing either");
		check_ret(ibv_destroy_cq(ibv_cq_ex_to_cq(cqx)), 0,
			  "destroy_cq of an extended CQ");
	}

	/* QPs */
	qp = make_qp_ex(ctx, pd, cq, IBV_QPT_RC, IBV_QP_EX_WITH_BIND_MW |
			IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_SEND_WITH_INV,
			0, &err);
	check(qp != NULL, "create_qp_ex RC with BIND_MW, LOCAL_INV, SEND_WITH_INV "
	      "(errno %d)", qp ? 0 : err);
	if (qp)
		ibv_destroy_qp(qp);
	qp = make_qp_ex(ctx, pd, cq, IBV_QPT_UD, IBV_QP_EX_WITH_BIND_MW, 0, &err);
	check_null(qp, err, EOPNOTSUPP, "create_qp_ex UD with IBV_QP_EX_WITH_BIND_MW");
	qp = make_qp_ex(ctx, pd, cq, IBV_QPT_UD, IBV_QP_EX_WITH_RDMA_WRITE, 0,
			&err);
	check_null(qp, err, EOPNOTSUPP,
		   "create_qp_ex UD with IBV_QP_EX_WITH_RDMA_WRITE");
	qp = make_qp_ex(ctx, pd, cq, IBV_QPT_RC, IBV_QP_EX_WITH_SEND,
			IBV_QP_CREATE_SCATTER_FCS, &err);
	check_null(qp, err, EOPNOTSUPP,
		   "create_qp_ex with IBV_QP_CREATE_SCATTER_FCS");
	qp = make_qp_ex(ctx, pd, cq, IBV_QPT_UC, IBV_QP_EX_WITH_RDMA_READ, 0,
			&err);
	check_null(qp, err, EOPNOTSUPP, "create_qp_ex UC with IBV_QP_EX_WITH_RDMA_READ");
	qp = make_qp_ex(ctx, pd, cq, IBV_QPT_UC, IBV_QP_EX_WITH_SEND |
			IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM, 0, &err);
	check(qp != NULL, "create_qp_ex UC with SEND and WRITE_WITH_IMM (errno %d)",
	      qp ? 0 : err);
	if (qp)
		ibv_destroy_qp(qp);

	/* ibv_wr_* on an RC QP with every op the device has */
	qp = make_qp_ex(ctx, pd, cq, IBV_QPT_RC, rc_ops, 0, &err);
	qpx = qp ? ibv_qp_to_qp_ex(qp) : NULL;
	check(qpx != NULL, "create_qp_ex RC with SEND, WRITE, READ and atomics "
	      "(errno %d)", qp ? 0 : err);
	if (!qpx)
		goto out_qp;
	check_ret(wr_sends(qpx, mr, buf, 1), EINVAL,
		  "wr_complete of a SEND on a QP in RESET");
	check_ret(to_init(qp), 0, "modify_qp RESET -> INIT");
	ret = ibv_query_qp(qp, &qattr, IBV_QP_CAP, &init);
	depth = ret ? 0 : init.cap.max_send_wr;
	check(!ret && depth >= 4 && depth <= 64 &&
	      init.cap.max_inline_data >= 16 &&
	      init.cap.max_inline_data < sizeof(big),
	      "query_qp: max_send_wr %u, max_inline_data %u", depth,
	      init.cap.max_inline_data);
	if (ret || depth < 4 || depth > 64 ||
	    init.cap.max_inline_data >= sizeof(big))
		goto out_qp;

	ibv_wr_start(qpx);
	ibv_wr_send(qpx);
	ibv_wr_set_inline_data(qpx, big, init.cap.max_inline_data + 1);
	check_ret(ibv_wr_complete(qpx), EINVAL,
		  "wr_set_inline_data of max_inline_data + 1 bytes");
	ibv_wr_start(qpx);
	ibv_wr_rdma_read(qpx, mr->rkey, (uintptr_t)buf);
	ibv_wr_set_inline_data(qpx, big, 8);
	check_ret(ibv_wr_complete(qpx), EINVAL, "inline data on an RDMA READ");
	for (i = 0; i < (int)(sizeof(sgl) / sizeof(sgl[0])); i++)
		sgl[i] = (struct ibv_sge){ .addr = (uintptr_t)buf, .length = 8,
					   .lkey = mr->lkey };
	ibv_wr_start(qpx);
	ibv_wr_rdma_write(qpx, mr->rkey, (uintptr_t)buf);
	ibv_wr_set_sge_list(qpx, (size_t)dattr->max_sge + 1 < 64 ?
			    (size_t)dattr->max_sge + 1 : 64, sgl);
	check_ret(ibv_wr_complete(qpx), EINVAL,
		  "wr_set_sge_list with more SGEs than the QP has");
	ibv_wr_start(qpx);
	ibv_wr_atomic_fetch_add(qpx, mr->rkey, (uintptr_t)buf + 4, 1);
	ibv_wr_set_sge(qpx, mr->lkey, (uintptr_t)buf, 8);
	check_ret(ibv_wr_complete(qpx), EINVAL,
		  "wr_atomic_fetch_add at an address not 8-byte aligned");
	ibv_wr_start(qpx);
	ibv_wr_set_sge(qpx, mr->lkey, (uintptr_t)buf, 8);
	check_ret(ibv_wr_complete(qpx), EINVAL, "wr_set_sge with no WR");
	ibv_wr_start(qpx);
	qpx->wr_flags = IBV_SEND_IP_CSUM;
	ibv_wr_send(qpx);
	check_ret(ibv_wr_complete(qpx), EINVAL, "wr_flags IBV_SEND_IP_CSUM");
	ibv_wr_start(qpx);
	ibv_wr_atomic_write(qpx, mr->rkey, (uintptr_t)buf + 4, buf);
	check_ret(ibv_wr_complete(qpx), EINVAL,
		  "wr_atomic_write at an address not 8-byte aligned");
	ibv_wr_start(qpx);
	ibv_wr_flush(qpx, mr->rkey, (uintptr_t)buf, 8, 0, IBV_FLUSH_RANGE);
	check_ret(ibv_wr_complete(qpx), EINVAL, "wr_flush of no placement type");
	ibv_wr_start(qpx);
	ibv_wr_flush(qpx, mr->rkey, (uintptr_t)buf, 8, IBV_FLUSH_GLOBAL, 2);
	check_ret(ibv_wr_complete(qpx), EINVAL, "wr_flush of selectivity 2");
	/* An aborted batch posts nothing either. */
	ibv_wr_start(qpx);
	ibv_wr_send(qpx);
	ibv_wr_set_sge(qpx, mr->lkey, (uintptr_t)buf, 8);
	ibv_wr_abort(qpx);
	check_ret(wr_sends(qpx, mr, buf, depth + 1), ENOMEM,
		  "max_send_wr + 1 SENDs in one batch");
	check_ret(wr_sends(qpx, mr, buf, depth), 0,
		  "max_send_wr SENDs: none of the failed batches was posted");
	check_ret(wr_sends(qpx, mr, buf, 1), ENOMEM, "one more SEND on a full SQ");
out_qp:
	if (qp)
		check_ret(ibv_destroy_qp(qp), 0, "destroy_qp of an extended QP");

	/* A UD WR needs its address. */
	qp = make_qp_ex(ctx, pd, cq, IBV_QPT_UD, IBV_QP_EX_WITH_SEND, 0, &err);
	qpx = qp ? ibv_qp_to_qp_ex(qp) : NULL;
	check(qpx != NULL && !to_init(qp), "create_qp_ex UD, to INIT (errno %d)",
	      qp ? 0 : err);
	if (qpx) {
		check_ret(wr_sends(qpx, mr, buf, 1), EINVAL,
			  "a UD SEND without wr_set_ud_addr");
		ibv_wr_start(qpx);
		ibv_wr_rdma_write(qpx, mr->rkey, (uintptr_t)buf);
		check_ret(ibv_wr_complete(qpx), EOPNOTSUPP,
			  "wr_rdma_write on a UD QP");
	}
	if (qp)
		ibv_destroy_qp(qp);

	/* A QP from ibv_create_qp has no ibv_qp_ex. */
	qp = make_qp(pd, cq, IBV_QPT_RC, 4, 1, 4, &err);
	check(qp && !ibv_qp_to_qp_ex(qp), "ibv_qp_to_qp_ex of an ibv_create_qp QP is NULL");
	if (qp)
		ibv_destroy_qp(qp);
}

/* One ibv_wr_flush or ibv_wr_atomic_write, and its completion. */
static int placement_wait(struct ibv_qp_ex *qpx, struct ibv_cq *cq,
			  bool flush, uint32_t rkey, void *addr, size_t len,
			  uint8_t type, uint8_t level, enum ibv_wc_opcode *op)
{
	uint64_t val = 0x0123456789abcdefull;

	ibv_wr_start(qpx);
	qpx->wr_flags = IBV_SEND_SIGNALED;
	if (flush)
		ibv_wr_flush(qpx, rkey, (uintptr_t)addr, len, type, level);
	else
		ibv_wr_atomic_write(qpx, rkey, (uintptr_t)addr, &val);
	if (ibv_wr_complete(qpx))
		return -1;
	return poll_one(cq, op);
}

/*
 * FLUSH and ATOMIC WRITE (IBA 1.5) through ibv_wr_*: the device flushes
 * to global visibility (there is no persistent memory) and writes 8
 * bytes whole; an MR without IBV_ACCESS_FLUSH_GLOBAL, or a persistent
 * FLUSH, is the peer's REM_ACCESS_ERR.
 */
static void check_placement(struct ibv_context *ctx, struct ibv_pd *pd,
			    char *buf)
{
	struct ibv_device_attr_ex dx;
	struct ibv_cq *cq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, 64, IBV_ACCESS_LOCAL_WRITE |
				       IBV_ACCESS_REMOTE_WRITE |
				       IBV_ACCESS_FLUSH_GLOBAL);
	struct ibv_mr *plain = ibv_reg_mr(pd, buf + 64, 64,
					  IBV_ACCESS_LOCAL_WRITE |
					  IBV_ACCESS_REMOTE_WRITE);
	struct ibv_mr *pers;
	int gidx = ipv4_gid_index(ctx), err, st;
	uint64_t *word = (uint64_t *)(buf + 8);
	struct ibv_qp_ex *qpx = NULL;
	struct ibv_qp *qp = NULL;
	enum ibv_wc_opcode op;

	check(!ibv_query_device_ex(ctx, NULL, &dx) &&
	      (dx.device_cap_flags_ex & IB_UVERBS_DEVICE_FLUSH_GLOBAL) &&
	      (dx.device_cap_flags_ex & IB_UVERBS_DEVICE_ATOMIC_WRITE) &&
	      !(dx.device_cap_flags_ex & IB_UVERBS_DEVICE_FLUSH_PERSISTENT),
	      "query_device_ex: FLUSH_GLOBAL and ATOMIC_WRITE, not FLUSH_PERSISTENT");
	errno = 0;
	pers = ibv_reg_mr(pd, buf, 64, IBV_ACCESS_LOCAL_WRITE |
			  IBV_ACCESS_FLUSH_PERSISTENT);
	check_null(pers, errno, EOPNOTSUPP,
		   "reg_mr with IBV_ACCESS_FLUSH_PERSISTENT");
	if (cq && gidx >= 0)
		qp = make_qp_ex(ctx, pd, cq, IBV_QPT_RC, IBV_QP_EX_WITH_FLUSH |
				IBV_QP_EX_WITH_ATOMIC_WRITE, 0, &err);
	qpx = qp ? ibv_qp_to_qp_ex(qp) : NULL;
	check(mr && plain && qpx &&
	      !connect_self(ctx, qp, gidx, IBV_ACCESS_REMOTE_WRITE),
	      "MRs with and without IBV_ACCESS_FLUSH_GLOBAL, an RC QP with "
	      "FLUSH and ATOMIC_WRITE connected to itself");
	if (!mr || !plain || !qpx)
		goto out;

	*word = 0;
	st = placement_wait(qpx, cq, false, mr->rkey, word, 8, 0, 0, &op);
	check(st == IBV_WC_SUCCESS && op == IBV_WC_ATOMIC_WRITE &&
	      *word == 0x0123456789abcdefull,
	      "wr_atomic_write: %s, opcode %d, 0x%llx written",
	      st >= 0 ? ibv_wc_status_str(st) : "none", op,
	      (unsigned long long)*word);
	st = placement_wait(qpx, cq, true, mr->rkey, word, 8, IBV_FLUSH_GLOBAL,
			    IBV_FLUSH_RANGE, &op);
	check(st == IBV_WC_SUCCESS && op == IBV_WC_FLUSH,
	      "wr_flush GLOBAL of the range: %s, opcode %d",
	      st >= 0 ? ibv_wc_status_str(st) : "none", op);
	st = placement_wait(qpx, cq, true, mr->rkey, NULL, 12345678,
			    IBV_FLUSH_GLOBAL, IBV_FLUSH_MR, &op);
	check(st == IBV_WC_SUCCESS,
	      "wr_flush GLOBAL of the MR, whatever the range says: %s",
	      st >= 0 ? ibv_wc_status_str(st) : "none");
	st = placement_wait(qpx, cq, true, plain->rkey, buf + 64, 8,
			    IBV_FLUSH_GLOBAL, IBV_FLUSH_RANGE, &op);
	/* The QP's own responder refuses it and takes the QP down: flushed. */
	check(st == IBV_WC_REM_ACCESS_ERR || st == IBV_WC_WR_FLUSH_ERR,
	      "wr_flush to an MR without IBV_ACCESS_FLUSH_GLOBAL: %s",
	      st >= 0 ? ibv_wc_status_str(st) : "none");
out:
	if (qp)
		ibv_destroy_qp(qp);
	if (plain)
		ibv_dereg_mr(plain);
	if (mr)
		ibv_dereg_mr(mr);
	if (cq)
		ibv_destroy_cq(cq);
}

/* A receive of 16 bytes into slot @id of @buf, on @srq. */
static int srq_recv(struct ibv_srq *srq, struct ibv_mr *mr, char *buf, int id)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(buf + 16 * id), .length = 16,
		.lkey = mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad;

	return ibv_post_srq_recv(srq, &wr, &bad);
}

/*
 * SENDs @from .. @to - 1 from @qp to itself, each 8 bytes naming itself:
 * true if each is received, in order, by the receive of the same number
 * and into its slot.
 */
static bool srq_sends(struct ibv_qp *qp, struct ibv_cq *scq,
		      struct ibv_cq *rcq, struct ibv_mr *mr, char *buf,
		      int from, int to)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(buf + 1024), .length = 8, .lkey = mr->lkey,
	};
	struct ibv_send_wr wr = {
		.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
	};
	enum ibv_wc_opcode op;
	struct ibv_wc wc;
	int id;

	for (id = from; id < to; id++) {
		snprintf(buf + 1024, 8, "m%06d", id);
		if (post_wait(qp, scq, &wr, &op) != IBV_WC_SUCCESS)
			return false;
		if (!wait_wc(rcq, &wc) || wc.status != IBV_WC_SUCCESS ||
		    wc.wr_id != (uint64_t)id || strcmp(buf + 16 * id, buf + 1024))
			return false;
	}
	return true;
}

/*
 * SRQ resize (device spec 8.8.1) with receives outstanding: they come
 * out of the new ring in order, the ring takes the new depth, and a
 * size below what is outstanding is refused.
 */
static void check_srq_resize(struct ibv_context *ctx, struct ibv_pd *pd,
			     char *buf)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 4, .max_sge = 1 } };
	struct ibv_srq *srq = ibv_create_srq(pd, &sa);
	struct ibv_cq *scq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
	struct ibv_cq *rcq = ibv_create_cq(ctx, 32, NULL, NULL, 0);
	struct ibv_qp_init_attr qa = {
		.send_cq = scq, .recv_cq = rcq, .srq = srq,
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_send_sge = 1 },
	};
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, 2048, IBV_ACCESS_LOCAL_WRITE);
	struct ibv_qp *qp = srq && scq && rcq ? ibv_create_qp(pd, &qa) : NULL;
	struct ibv_srq_attr attr;
	int gidx = ipv4_gid_index(ctx), i, ret = 0;

	check(qp && mr && gidx >= 0, "an SRQ of 4, an RC QP on it, an MR");
	if (!qp || !mr || gidx < 0)
		goto out;
	ret = connect_self(ctx, qp, gidx, IBV_ACCESS_LOCAL_WRITE);
	for (i = 0; i < 4 && !ret; i++)
		ret = srq_recv(srq, mr, buf, i);
	check(!ret && srq_sends(qp, scq, rcq, mr, buf, 0, 1),
	      "4 receives posted, the first taken");
	attr.max_wr = 2;
	check_ret(ibv_modify_srq(srq, &attr, IBV_SRQ_MAX_WR), EINVAL,
		  "modify_srq to 2 WRs with 3 receives outstanding");
	attr.max_wr = 16;
	check_ret(ibv_modify_srq(srq, &attr, IBV_SRQ_MAX_WR), 0,
		  "modify_srq to 16 WRs with 3 receives outstanding");
	ret = ibv_query_srq(srq, &attr);
	check(!ret && attr.max_wr == 16, "query_srq: max_wr %u", attr.max_wr);
	for (i = 4; i < 17 && !ret; i++)
		ret = srq_recv(srq, mr, buf, i);
	check(!ret, "13 receives more: the new ring holds 16");
	check(srq_sends(qp, scq, rcq, mr, buf, 1, 17),
	      "16 SENDs: the receives from before the resize, then the new");
	attr.max_wr = 4;
	attr.srq_limit = 4;
	check_ret(ibv_modify_srq(srq, &attr, IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT),
		  EINVAL, "modify_srq to 4 WRs with a limit of 4");
	ret = ibv_query_srq(srq, &attr);
	check(!ret && attr.max_wr == 16 && attr.srq_limit == 0,
	      "... which changed neither (max_wr %u, limit %u)", attr.max_wr,
	      attr.srq_limit);
	attr.max_wr = 2;
	attr.srq_limit = 1;
	ret = ibv_modify_srq(srq, &attr, IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT);
	check(!ret && !ibv_query_srq(srq, &attr) && attr.max_wr == 2 &&
	      attr.srq_limit == 1, "modify_srq to 2 WRs and a limit of 1 "
	      "at once (ret %d, max_wr %u, limit %u)", ret, attr.max_wr,
	      attr.srq_limit);
	ret = ret ? ret : srq_recv(srq, mr, buf, 17);
	ret = ret ? ret : srq_recv(srq, mr, buf, 18);
	check(!ret && srq_recv(srq, mr, buf, 19) == ENOMEM &&
	      srq_sends(qp, scq, rcq, mr, buf, 17, 19),
	      "modify_srq down to 2 once empty: 2 receives fit, a third not");
out:
	if (qp)
		ibv_destroy_qp(qp);
	if (mr)
		ibv_dereg_mr(mr);
	if (srq)
		ibv_destroy_srq(srq);
	if (rcq)
		ibv_destroy_cq(rcq);
	if (scq)
		ibv_destroy_cq(scq);
}

/* ::ffff:a.b.c.d, or an IPv6 group with @v6 */
/*
 * The next completion of @cq other than a SEND's: true if it has opcode
 * @op and status @status.
 */
static bool tm_wait(struct ibv_cq *cq, enum ibv_wc_opcode op,
		    enum ibv_wc_status status, struct ibv_wc *wc)
{
	int i;

	for (i = 0; i < 4; i++) {
		if (!wait_wc(cq, wc))
			return false;
		if (wc->opcode != IBV_WC_SEND || wc->status != IBV_WC_SUCCESS)
			return wc->opcode == op && wc->status == status;
	}
	return false;
}

/* Post one list operation; the post's error. */
static int tm_op(struct ibv_srq *srq, struct ibv_ops_wr *wr)
{
	struct ibv_ops_wr *bad = NULL;
	int ret = ibv_post_srq_ops(srq, wr, &bad);

	return ret || bad == NULL ? ret : -1;
}

/* A SEND of a TMH of @opcode and @tag and 16 bytes of @text. */
static int tm_send(struct ibv_qp *qp, struct ibv_mr *mr, char *msg,
		   uint8_t opcode, uint64_t tag, const char *text)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)msg, .length = 32, .lkey = mr->lkey,
	};
	struct ibv_send_wr wr = {
		.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	uint64_t be = htobe64(tag);

	memset(msg, 0, 32);
	msg[0] = opcode;
	memcpy(msg + 8, &be, 8);
	strncpy(msg + 16, text, 16);
	return ibv_post_send(qp, &wr, &bad);
}

static void check_tm(struct ibv_context *ctx, struct ibv_pd *pd)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 32, NULL, NULL, 0);
	struct ibv_srq_init_attr basic = { .attr = { .max_wr = 2, .max_sge = 1 } };
	struct ibv_srq_init_attr_ex sa = {
		.attr = { .max_wr = 4, .max_sge = 1 },
		.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
			     IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_TM,
		.srq_type = IBV_SRQT_TM, .pd = pd, .cq = cq,
	};
	char *buf = aligned_alloc(4096, 4096);
	struct ibv_mr *mr = buf ? ibv_reg_mr(pd, buf, 4096,
					     IBV_ACCESS_LOCAL_WRITE) : NULL;
	struct ibv_sge sge[2] = {
		{ .addr = (uintptr_t)buf, .length = 64 },
		{ .addr = (uintptr_t)buf + 64, .length = 64 },
	};
	struct ibv_ops_wr add[3], del = { .wr_id = 5, .opcode = IBV_WR_TAG_DEL };
	struct ibv_ops_wr sync = {
		.wr_id = 9, .opcode = IBV_WR_TAG_SYNC,
		.flags = IBV_OPS_SIGNALED,
	}, *bad;
	struct ibv_srq *srq = NULL, *bsrq = NULL;
	struct ibv_qp *qp = NULL;
	struct ibv_device_attr_ex dx;
	struct ibv_wc wc;
	uint32_t h0, h1;
	int i, err, gidx = ipv4_gid_index(ctx);

	if (ibv_query_device_ex(ctx, NULL, &dx) || !cq || !mr) {
		check(false, "tag matching: query_device_ex, a CQ and an MR");
		goto out;
	}
	check(dx.tm_caps.flags & IBV_TM_CAP_RC && dx.tm_caps.max_num_tags &&
	      dx.tm_caps.max_ops && dx.tm_caps.max_sge == 1 &&
	      dx.tm_caps.max_rndv_hdr_size >= 32,
	      "tm_caps: flags 0x%x, %u tags, %u ops, %u SGE, RNDV header %u",
	      dx.tm_caps.flags, dx.tm_caps.max_num_tags, dx.tm_caps.max_ops,
	      dx.tm_caps.max_sge, dx.tm_caps.max_rndv_hdr_size);
	sge[0].lkey = sge[1].lkey = mr->lkey;

	sa.tm_cap.max_num_tags = dx.tm_caps.max_num_tags + 1;
	sa.tm_cap.max_ops = 2;
	errno = 0;
	srq = ibv_create_srq_ex(ctx, &sa);
	err = errno;
	check_null(srq, err, EINVAL, "TM SRQ of max_num_tags + 1 tags");
	sa.tm_cap.max_num_tags = 2;
	sa.tm_cap.max_ops = dx.tm_caps.max_ops + 1;
	errno = 0;
	srq = srq ? srq : ibv_create_srq_ex(ctx, &sa);
	err = errno;
	check_null(srq, err, EINVAL, "TM SRQ of max_ops + 1 operations");
	sa.tm_cap.max_ops = 3;
	sa.comp_mask &= ~IBV_SRQ_INIT_ATTR_CQ;
	errno = 0;
	srq = srq ? srq : ibv_create_srq_ex(ctx, &sa);
	err = errno;
	check_null(srq, err, EINVAL, "TM SRQ without a CQ");
	sa.comp_mask |= IBV_SRQ_INIT_ATTR_CQ;
	if (srq)
		ibv_destroy_srq(srq);
	srq = ibv_create_srq_ex(ctx, &sa);
	bsrq = ibv_create_srq(pd, &basic);
	check(srq && bsrq, "a TM SRQ of 2 tags and 3 operations, a basic SRQ");
	if (!srq || !bsrq)
		goto out;

	memset(add, 0, sizeof(add));
	for (i = 0; i < 3; i++) {
		add[i].wr_id = 1 + i;
		add[i].opcode = IBV_WR_TAG_ADD;
		add[i].tm.add.recv_wr_id = 100 + i;
		add[i].tm.add.sg_list = &sge[0];
		add[i].tm.add.num_sge = 1;
		add[i].tm.add.tag = 1 + i;
		add[i].tm.add.mask = ~0ULL;
		add[i].next = i < 2 ? &add[i + 1] : NULL;
	}
	check_ret(ibv_post_srq_ops(bsrq, &sync, &bad), EINVAL,
		  "post_srq_ops on a basic SRQ");
	add[0].tm.add.num_sge = 2;
	bad = NULL;
	check(ibv_post_srq_ops(srq, add, &bad) == EINVAL && bad == &add[0],
	      "post_srq_ops: an ADD of 2 SGEs is EINVAL, bad_wr at it");
	add[0].tm.add.num_sge = 1;
	add[0].flags = 1 << 7;
	bad = NULL;
	check(ibv_post_srq_ops(srq, add, &bad) == EINVAL && bad == &add[0],
	      "post_srq_ops: an unknown flag is EINVAL, bad_wr at it");
	add[0].flags = 0;
	del.tm.handle = 0;
	check_ret(tm_op(srq, &del), EINVAL, "post_srq_ops: DEL of no ADD's entry");
	bad = NULL;
	check(ibv_post_srq_ops(srq, add, &bad) == ENOMEM && bad == &add[2],
	      "post_srq_ops: a third ADD to a list of 2 is ENOMEM, bad_wr at it");
	h0 = add[0].tm.handle;
	h1 = add[1].tm.handle;
	check(h0 < 2 && h1 < 2 && h0 != h1, "ADDs: handles %u and %u", h0, h1);
	check(!tm_op(srq, &sync) &&
	      tm_wait(cq, IBV_WC_TM_SYNC, IBV_WC_SUCCESS, &wc) && wc.wr_id == 9,
	      "unsignalled ADDs complete unseen: the SYNC after them first");

	del.tm.handle = h0;
	del.next = &sync;
	sync.wr_id = 10;
	check(!tm_op(srq, &del) &&
	      tm_wait(cq, IBV_WC_TM_SYNC, IBV_WC_SUCCESS, &wc) && wc.wr_id == 10,
	      "an unsignalled DEL completes unseen: the SYNC after it first");
	del.next = NULL;
	add[2].next = NULL;
	add[2].wr_id = 11;
	sge[1].lkey = mr->lkey ^ 0x100;
	add[2].tm.add.sg_list = &sge[1];
	check(!tm_op(srq, &add[2]) && add[2].tm.handle == h0 &&
	      tm_wait(cq, IBV_WC_TM_ADD, IBV_WC_TM_ERR, &wc) && wc.wr_id == 11,
	      "an unsignalled ADD of a bad lkey reuses the DELeted entry and "
	      "completes IBV_WC_TM_ERR (got opcode %d status %d wr_id %llu)",
	      wc.opcode, wc.status, (unsigned long long)wc.wr_id);

	/* Traffic from an RC QP on the SRQ to itself */
	{
		struct ibv_qp_init_attr qa = {
			.send_cq = cq, .recv_cq = cq, .srq = srq,
			.qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = 4, .max_send_sge = 1 },
		};
		struct ibv_sge rsge = {
			.addr = (uintptr_t)buf + 1024, .length = 64,
			.lkey = mr->lkey,
		};
		struct ibv_recv_wr rwr = {
			.wr_id = 7, .sg_list = &rsge, .num_sge = 1,
		}, *rbad;

		qp = gidx >= 0 ? ibv_create_qp(pd, &qa) : NULL;
		if (!qp || connect_self(ctx, qp, gidx, IBV_ACCESS_LOCAL_WRITE) ||
		    ibv_post_srq_recv(srq, &rwr, &rbad)) {
			check(false, "an RC QP on the TM SRQ, a receive on it");
			goto out;
		}
	}
	add[2].tm.add.sg_list = &sge[0];
	add[2].tm.add.tag = 0x5000000000000004ULL;
	check(!tm_op(srq, &add[2]) && add[2].tm.handle == h0,
	      "an ADD once the failed one completed: entry %u again", h0);
	check(!tm_send(qp, mr, buf + 512, 3, 0x5000000000000004ULL,
		       "tagged payload") &&
	      tm_wait(cq, IBV_WC_TM_RECV, IBV_WC_SUCCESS, &wc) &&
	      wc.wr_id == 102 && wc.byte_len == 16 &&
	      wc.wc_flags == (IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID) &&
	      !strcmp(buf, "tagged payload"),
	      "an EAGER message lands in the matching entry's buffer, TMH "
	      "stripped (opcode %d, status %d, wr_id %llu, %u bytes, "
	      "flags 0x%x)", wc.opcode, wc.status,
	      (unsigned long long)wc.wr_id, wc.byte_len, wc.wc_flags);
	check(!tm_send(qp, mr, buf + 512, 0, 0, "no tag") &&
	      tm_wait(cq, IBV_WC_TM_NO_TAG, IBV_WC_SUCCESS, &wc) &&
	      wc.wr_id == 7 && wc.byte_len == 32 && !wc.wc_flags &&
	      !strcmp(buf + 1024 + 16, "no tag"),
	      "an untagged message takes the SRQ's receive, TMH and all "
	      "(opcode %d, status %d, wr_id %llu, %u bytes, flags 0x%x)",
	      wc.opcode, wc.status, (unsigned long long)wc.wr_id,
	      wc.byte_len, wc.wc_flags);
out:
	if (qp)
		ibv_destroy_qp(qp);
	if (srq)
		ibv_destroy_srq(srq);
	if (bsrq)
		ibv_destroy_srq(bsrq);
	if (mr)
		ibv_dereg_mr(mr);
	if (cq)
		ibv_destroy_cq(cq);
	free(buf);
}

static union ibv_gid mcast_gid(uint32_t addr, bool v6)
{
	union ibv_gid gid = {};

	if (v6) {
		gid.raw[0] = 0xff;
		gid.raw[1] = 0x0e;
	} else {
		gid.raw[10] = gid.raw[11] = 0xff;
	}
	gid.raw[12] = addr >> 24;
	gid.raw[13] = addr >> 16;
	gid.raw[14] = addr >> 8;
	gid.raw[15] = addr;
	return gid;
}

/*
 * Multicast attach (device spec 8.14): UD QPs and IPv4 groups only, 16
 * QPs in a group, a QP detached is not detached again, and a QP with a
 * group attached is busy.
 */
static void check_mcast(struct ibv_pd *pd, struct ibv_cq *cq,
			const struct ibv_device_attr *dattr)
{
	union ibv_gid group = mcast_gid(0xe6090909, false);
	union ibv_gid v6 = mcast_gid(0xe6090909, true);
	union ibv_gid unicast = mcast_gid(0x0a4d0001, false);
	struct ibv_qp *ud[17] = {}, *rc;
	int i, err, ret;

	check(dattr->max_mcast_grp == 64 && dattr->max_mcast_qp_attach == 16 &&
	      dattr->max_total_mcast_qp_attach == 64 * 16,
	      "query_device: %d multicast groups of %d QPs, %d in all",
	      dattr->max_mcast_grp, dattr->max_mcast_qp_attach,
	      dattr->max_total_mcast_qp_attach);
	for (i = 0; i < 17; i++)
		ud[i] = make_qp(pd, cq, IBV_QPT_UD, 4, 1, 4, &err);
	rc = make_qp(pd, cq, IBV_QPT_RC, 4, 1, 4, &err);
	for (i = 0, ret = 0; i < 17; i++)
		ret |= !ud[i];
	check(!ret && rc, "create 17 UD QPs and an RC QP");
	if (ret || !rc)
		goto out;

	check_ret(ibv_attach_mcast(rc, &group, 0), EINVAL,
		  "attach_mcast of an RC QP");
	check_ret(ibv_attach_mcast(ud[0], &v6, 0), EINVAL,
		  "attach_mcast to an IPv6 group");
	check_ret(ibv_attach_mcast(ud[0], &unicast, 0), EINVAL,
		  "attach_mcast to a unicast GID");
	check_ret(ibv_attach_mcast(ud[0], &group, 0), 0, "attach_mcast");
	check_ret(ibv_detach_mcast(ud[1], &group, 0), EINVAL,
		  "detach_mcast of a QP not attached");
	check_ret(ibv_destroy_qp(ud[0]), EBUSY,
		  "destroy_qp with a group attached");
	check_ret(ibv_detach_mcast(ud[0], &group, 0), 0, "detach_mcast");
	for (i = 0, ret = 0; i < 16 && !ret; i++)
		ret = ibv_attach_mcast(ud[i], &group, 0);
	check_ret(ret, 0, "attach_mcast of 16 QPs to one group");
	check_ret(ibv_attach_mcast(ud[16], &group, 0), ENOMEM,
		  "attach_mcast of a 17th QP");
	for (i = 0; i < 16; i++)
		ibv_detach_mcast(ud[i], &group, 0);
	check_ret(ibv_attach_mcast(ud[16], &group, 0), 0,
		  "attach_mcast once the others left");
	check_ret(ibv_detach_mcast(ud[16], &group, 0), 0,
		  "detach_mcast of the last QP");
out:
	for (i = 0; i < 17; i++)
		if (ud[i])
			ibv_destroy_qp(ud[i]);
	if (rc)
		ibv_destroy_qp(rc);
}

int main(void)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	struct ibv_device_attr dattr;
	struct ibv_pd *pd = NULL;
	struct ibv_cq *cq = NULL, *bad_cq;
	struct ibv_qp *qp = NULL, *bad_qp;
	struct ibv_mr *mr = NULL, *bad_mr;
	long page = sysconf(_SC_PAGESIZE);
	char *buf = NULL;
	void *hole;
	int i, num, err, ret;

	list = ibv_get_device_list(&num);
	for (i = 0; list && i < num; i++)
		if (!strcmp(ibv_get_device_name(list[i]), "uzura0"))
			ctx = ibv_open_device(list[i]);
	check(ctx != NULL, "open uzura0");
	if (!ctx) {
		printf("Bail out! no uzura0\n");
		return 1;
	}
	ret = ibv_query_device(ctx, &dattr);
	check(ret == 0, "query_device (max_cqe %d, max_qp_wr %d, max_sge %d)",
	      dattr.max_cqe, dattr.max_qp_wr, dattr.max_sge);
	pd = ibv_alloc_pd(ctx);
	check(pd != NULL, "alloc_pd");
	cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	check(cq != NULL, "create_cq with 16 entries");
	if (ret || !pd || !cq) {
		printf("Bail out! no PD or CQ\n");
		return 1;
	}

	/* CQ larger than the device's */
	errno = 0;
	bad_cq = ibv_create_cq(ctx, dattr.max_cqe + 1, NULL, NULL, 0);
	err = errno;
	check_null(bad_cq, err, EINVAL, "create_cq with cqe = max_cqe + 1");
	if (bad_cq)
		ibv_destroy_cq(bad_cq);

	/* QP caps beyond the device's, and a type the device lacks */
	bad_qp = make_qp(pd, cq, IBV_QPT_RC, dattr.max_qp_wr + 1, 1, 1, &err);
	check_null(bad_qp, err, EINVAL, "create_qp with max_send_wr = max_qp_wr + 1");
	if (bad_qp)
		ibv_destroy_qp(bad_qp);
	bad_qp = make_qp(pd, cq, IBV_QPT_RC, 4, dattr.max_sge + 1, 1, &err);
	check_null(bad_qp, err, EINVAL, "create_qp with max_send_sge = max_sge + 1");
	if (bad_qp)
		ibv_destroy_qp(bad_qp);
	bad_qp = make_qp(pd, cq, IBV_QPT_UC, 4, 1, 1, &err);
	check(bad_qp != NULL, "create_qp of type UC (errno %d)", err);
	if (bad_qp)
		ibv_destroy_qp(bad_qp);

	/* MRs: an unmapped range, and an empty one */
	hole = mmap(NULL, 4 * page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
		    -1, 0);
	check(hole != MAP_FAILED && munmap(hole, 4 * page) == 0,
	      "map and unmap a 4-page hole");
	errno = 0;
	bad_mr = ibv_reg_mr(pd, hole, 4 * page, IBV_ACCESS_LOCAL_WRITE);
	err = errno;
	check_null(bad_mr, err, EFAULT, "reg_mr of an unmapped range");
	if (bad_mr)
		ibv_dereg_mr(bad_mr);
	buf = aligned_alloc(page, page);
	check(buf != NULL, "allocate a page");
	if (!buf)
		return 1;
	memset(buf, 0, page);
	errno = 0;
	bad_mr = ibv_reg_mr(pd, buf, 0, IBV_ACCESS_LOCAL_WRITE);
	err = errno;
	check_null(bad_mr, err, EINVAL, "reg_mr of length 0");
	if (bad_mr)
		ibv_dereg_mr(bad_mr);
	mr = ibv_reg_mr(pd, buf, page, IBV_ACCESS_LOCAL_WRITE);
	check(mr != NULL, "reg_mr of a page");

	/* A QP in RESET: no skipping to RTS, no posting */
	qp = make_qp(pd, cq, IBV_QPT_RC, 4, 1, 4, &err);
	check(qp != NULL, "create_qp RC with 4 send and 4 receive WRs (errno %d)",
	      qp ? 0 : err);
	if (!qp || !mr) {
		printf("Bail out! no QP or MR\n");
		return 1;
	}
	{
		struct ibv_qp_attr attr = { .qp_state = IBV_QPS_RTS };

		ret = ibv_modify_qp(qp, &attr, IBV_QP_STATE);
		check_ret(ret, EINVAL, "modify_qp RESET -> RTS");
	}
	{
		struct ibv_sge sge = {
			.addr = (uintptr_t)buf, .length = 64, .lkey = mr->lkey,
		};
		struct ibv_send_wr swr[2] = {
			{ .wr_id = 1, .sg_list = &sge, .num_sge = 1,
			  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
			  .next = &swr[1] },
			{ .wr_id = 2, .sg_list = &sge, .num_sge = 1,
			  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED },
		};
		struct ibv_recv_wr rwr[2] = {
			{ .wr_id = 1, .sg_list = &sge, .num_sge = 1,
			  .next = &rwr[1] },
			{ .wr_id = 2, .sg_list = &sge, .num_sge = 1 },
		};
		struct ibv_send_wr *bad_swr = NULL;
		struct ibv_recv_wr *bad_rwr = NULL;

		ret = ibv_post_send(qp, swr, &bad_swr);
		check_ret(ret, EINVAL, "post_send on a QP in RESET");
		check(bad_swr == &swr[0], "post_send on RESET: bad_wr is the first WR");
		ret = ibv_post_recv(qp, rwr, &bad_rwr);
		check_ret(ret, EINVAL, "post_recv on a QP in RESET");
		check(bad_rwr == &rwr[0], "post_recv on RESET: bad_wr is the first WR");
	}

	/* A full RQ: max_recv_wr + 1 receives on a QP in INIT */
	{
		struct ibv_qp_attr attr = {
			.qp_state = IBV_QPS_INIT,
			.pkey_index = 0,
			.port_num = 1,
			.qp_access_flags = IBV_ACCESS_LOCAL_WRITE,
		};
		struct ibv_qp_init_attr init;
		struct ibv_qp_attr qattr;
		struct ibv_sge sge = {
			.addr = (uintptr_t)buf, .length = 64, .lkey = mr->lkey,
		};
		struct ibv_recv_wr *rwr, *bad_rwr = NULL;
		uint32_t depth;

		ret = ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				    IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
		check_ret(ret, 0, "modify_qp RESET -> INIT");
		ret = ibv_query_qp(qp, &qattr, IBV_QP_CAP, &init);
		depth = ret ? 0 : init.cap.max_recv_wr;
		check(ret == 0 && depth >= 4 && depth <= 4096,
		      "query_qp: max_recv_wr %u", depth);
		if (depth < 4 || depth > 4096)
			depth = 4;
		rwr = calloc(depth + 1, sizeof(*rwr));
		if (!rwr)
			return 1;
		for (i = 0; i <= (int)depth; i++) {
			rwr[i].wr_id = i;
			rwr[i].sg_list = &sge;
			rwr[i].num_sge = 1;
			rwr[i].next = i < (int)depth ? &rwr[i + 1] : NULL;
		}
		ret = ibv_post_recv(qp, rwr, &bad_rwr);
		check_ret(ret, ENOMEM, "post_recv of max_recv_wr + 1 receives in INIT");
		check(bad_rwr == &rwr[depth],
		      "full RQ: bad_wr is the last WR (got index %ld)",
		      bad_rwr ? (long)(bad_rwr - rwr) : -1L);
		bad_rwr = NULL;
		rwr[depth].next = NULL;
		ret = ibv_post_recv(qp, &rwr[depth], &bad_rwr);
		check(ret == ENOMEM && bad_rwr == &rwr[depth],
		      "full RQ: one more receive is refused too (got %d)", ret);
		free(rwr);
	}

	check_ret(ibv_destroy_qp(qp), 0, "destroy_qp");
	check_qp_events(ctx, pd, mr, buf);
	check_cq_resize(ctx, pd, buf + 1024);
	check_timestamps(ctx, pd, buf + 2048);
	check_rereg(ctx, pd);
	check_mw(ctx, pd);
	check_domains(ctx, pd, mr, buf);
	check_mcast(pd, cq, &dattr);
	check_srq_resize(ctx, pd, buf);
	check_tm(ctx, pd);
	check_placement(ctx, pd, buf);
	check_ex_verbs(ctx, pd, cq, mr, buf, &dattr);
	check_ret(ibv_dereg_mr(mr), 0, "dereg_mr");
	check_ret(ibv_destroy_cq(cq), 0, "destroy_cq");
	check_ret(ibv_dealloc_pd(pd), 0, "dealloc_pd");
	check_ret(ibv_close_device(ctx), 0, "close_device");
	ibv_free_device_list(list);
	free(buf);

	printf("1..%d\n", n);
	return fails ? 1 : 0;
}
