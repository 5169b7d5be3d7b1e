// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * xrc-test: XRC on uzura0 (device spec 8.16, guest-lib/README.md), the way
 * software uses it: processes of a node share an XRC domain through a
 * file, each receives into XRC SRQs of its own, and one initiator QP
 * reaches all of them through one target QP.  Run in a guest; speaks
 * TAP, exits 0 only if every check passes.  The QPs are connected to
 * each other on the port's IPv4 RoCE v2 GID: the traffic loops back
 * inside the NIC.
 *
 *  - caps: ibv_query_device has IBV_DEVICE_XRC, ibv_query_device_ex's
 *    xrc_odp_caps (in ibv_device_attr_ex) SEND and SRQ_RECV.
 *  - two processes, one domain: the parent opens an XRCD through a temp
 *    file (O_CREAT) and makes an XRC SRQ S1 with its CQ, a target QP T
 *    and an initiator QP I connected to it; a forked child opens its own
 *    context, the same XRCD through the file (no O_CREAT), T with
 *    ibv_open_qp (it reads RTS), an XRC SRQ S2 with its CQ and a target
 *    QP of its own, and hands their numbers to the parent through a
 *    pipe; the parent opens that target.  SENDs (ibv_post_send with
 *    remote_srqn, then ibv_wr_send/_send_imm with ibv_wr_set_xrc_srqn),
 *    alternately to S1 and S2, some of several packets, land each in its
 *    SRQ's CQ, the parent's or the child's, with the wr_id of the SRQ's
 *    next receive, byte_len, qp_num T, src_qp the SRQ, the immediate and
 *    the data, and nothing else there.  An RDMA WRITE with immediate into
 *    the child's MR through S2 (its PD) lands and completes in the
 *    child's CQ; an RDMA READ through S2 reads what the child wrote in
 *    its MR.  The child's teardown (its SRQ, its handles on the targets,
 *    its domain handle) succeeds while the parent holds the domain.
 *  - after the child exits: a SEND to S2's number is REM_INV_REQ_ERR at
 *    the initiator (T, answering, is still there), and the parent's
 *    async fd has IBV_EVENT_QP_REQ_ERR for T; a fresh I/T pair carries a
 *    SEND to S1; so does the child's target QP, which outlived the child
 *    since the parent has it open, connected through the parent's handle.
 *  - bad input: ibv_post_recv on an XRC_SEND and on an XRC_RECV QP,
 *    ibv_post_send on an XRC_RECV QP, IBV_WR_BIND_MW on an XRC_SEND QP:
 *    EINVAL (the provider), and the QP goes on; ibv_wr_complete of a
 *    batch without ibv_wr_set_xrc_srqn: EINVAL, with ibv_wr_bind_mw:
 *    EOPNOTSUPP, posting nothing; an XRC SRQ without a CQ, without an
 *    XRCD, or with another context's CQ: EINVAL (the provider);
 *    ibv_open_xrcd of a file with no domain and no O_CREAT: EAGAIN,
 *    ibv_close_xrcd while an XRC SRQ or a target QP uses the domain:
 *    EBUSY, ibv_open_qp of a number that is no target QP of the domain:
 *    EINVAL, an XRC_SEND QP given an SRQ: EINVAL (ib_core); a required
 *    attribute missing from an XRC QP's modify: EINVAL (ib_core's
 *    table), while RC's masks are taken (ib_uverbs drops what the XRC
 *    types ignore); a SEND to an XRC SRQ of another domain:
 *    REM_INV_REQ_ERR, no completion in its CQ, and another I/T pair goes
 *    on; through S1, a WRITE and a READ of an MR of S1's PD go, a READ
 *    of an MR of another PD is REM_ACCESS_ERR.
 *  - an XRC SRQ's life: a SEND before any receive is posted is RNR NAKed
 *    until one is; receives into untouched ODP pages, and a WRITE into an
 *    ODP MR through the SRQ, go; destroyed with a receive not polled, the
 *    receive leaves the CQ, and a new SRQ given the same number does not
 *    take it; a CQ shared by an initiator's sends and an SRQ's receives
 *    keeps the receive when the initiator goes to RESET; the pair reset
 *    and connected again goes on; the SRQ resized with a receive
 *    outstanding takes more receives than it first held, in order.
 *  - more of what software does: an XRC_SEND QP created with a receive
 *    CQ and receive caps (recv_cq NULL, the CQ not held), inline SENDs
 *    with immediate through both post APIs read through an ibv_cq_ex,
 *    IBV_EVENT_SRQ_LIMIT_REACHED for an XRC SRQ, FETCH_ADD and CMP_SWP
 *    through one; two initiators to two targets and one SRQ at once,
 *    messages of several packets each landing whole, in each initiator's
 *    order; a SEND longer than the receive: REM_INV_REQ_ERR at the
 *    initiator, LOC_LEN_ERR for the receive in the SRQ's CQ, the other
 *    target going on; a second child killed with an XRC SRQ: SENDs to it
 *    are refused, S1 is unaffected.
 *  - teardown: every QP, SRQ, CQ, MR and PD goes, and ibv_close_xrcd of
 *    the shared domain succeeds at the end.
 *
 * Every wait has a timeout: completions, events and counters 5 s, the
 * pipes between the processes and a child's exit 10 s.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <endian.h>

#include <infiniband/verbs.h>

#include "child.h"
#include "self-qp.h"
#include "tap.h"

#define MSGS		8	/* SENDs of phase 2: even to S1, odd to S2 */
#define EXT_FROM	4	/* from this one on through ibv_wr_* */
#define IMM_FROM	6	/* from this one on with an immediate */
#define SLOT		4096	/* a receive buffer, a send buffer */
#define NRECV		8	/* receives posted to each XRC SRQ */
#define WLEN		2048	/* the WRITE with immediate: two packets */
#define RLEN		3000	/* the READ: three packets */
#define WIMM		0x57524954u

#define ACCESS		(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
			 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

/* Attribute masks of the XRC QP types (ib_core's qp_state_table). */
#define INIT_MASK	(IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)
#define INI_RTR		(IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | \
			 IBV_QP_RQ_PSN)
#define TGT_RTR		(INI_RTR | IBV_QP_MAX_DEST_RD_ATOMIC | \
			 IBV_QP_MIN_RNR_TIMER)
#define INI_RTS		(IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | \
			 IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | \
			 IBV_QP_MAX_QP_RD_ATOMIC)
#define TGT_RTS		(IBV_QP_TIMEOUT | IBV_QP_SQ_PSN)

static const uint32_t msg_len[MSGS] = {
	8, 1500, 300, 4000, 64, 2500, 1024, 3333,
};

/* Parent -> child. */
enum { C_GO = 1, C_SENT, C_WIMM, C_EXIT };
struct cmd {
	uint32_t op;
	uint32_t tqpn;
};

/* Child -> parent: a check's result, or the end of a step. */
enum { R_CHECK = 1, R_READY, R_DONE };
struct rec {
	uint32_t kind;
	int32_t ok;
	uint32_t srqn;
	uint32_t rkey;
	uint64_t addr;
	uint32_t tqpn;
	char text[200];
};

struct node {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	int gidx;
};

static uint8_t pattern(int k, uint32_t i)
{
	return (uint8_t)(k * 31 + i * 7 + 1);
}

static void fill(char *buf, int k, uint32_t len)
{
	uint32_t i;

	for (i = 0; i < len; i++)
		buf[i] = pattern(k, i);
}

/* The first byte of @buf that is not message @k, or -1. */
static long wrong_at(const char *buf, int k, uint32_t len)
{
	uint32_t i;

	for (i = 0; i < len; i++)
		if ((uint8_t)buf[i] != pattern(k, i))
			return i;
	return -1;
}

static const char *wc_str(int st)
{
	return st >= 0 ? ibv_wc_status_str(st) : "no completion";
}

/* ---- QP set-up ---- */

/*
 * ibv_modify_qp of XRC QP @qp to @state with the attributes of @mask: an
 * AV towards this port's own GID, initiator or target QP @dest.
 */
static int xrc_modify(struct node *nd, struct ibv_qp *qp,
		      enum ibv_qp_state state, uint32_t dest, int mask)
{
	struct ibv_qp_attr a = {
		.qp_state = state, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_REMOTE_ATOMIC,
		.path_mtu = IBV_MTU_1024, .dest_qp_num = dest,
		.rq_psn = 1, .sq_psn = 1,
		.max_dest_rd_atomic = 4, .min_rnr_timer = 12,
		.timeout = 14, .retry_cnt = 7, .rnr_retry = 7,
		.max_rd_atomic = 4,
		.ah_attr = { .is_global = 1, .port_num = 1,
			     .grh = { .sgid_index = nd->gidx,
				      .hop_limit = 64 } },
	};

	ibv_query_gid(nd->ctx, 1, nd->gidx, &a.ah_attr.grh.dgid);
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | mask);
}

/* RESET -> INIT -> RTR -> RTS with the masks of the QP's type. */
static int xrc_connect(struct node *nd, struct ibv_qp *qp, uint32_t dest)
{
	bool tgt = qp->qp_type == IBV_QPT_XRC_RECV;
	int ret;

	ret = xrc_modify(nd, qp, IBV_QPS_INIT, dest, INIT_MASK);
	ret = ret ? ret : xrc_modify(nd, qp, IBV_QPS_RTR, dest,
				     tgt ? TGT_RTR : INI_RTR);
	return ret ? ret : xrc_modify(nd, qp, IBV_QPS_RTS, dest,
				      tgt ? TGT_RTS : INI_RTS);
}

/* An XRC_SEND QP on @cq; @ext: with ibv_create_qp_ex and send ops. */
static struct ibv_qp *xrc_ini(struct node *nd, struct ibv_cq *cq, bool ext)
{
	struct ibv_qp_init_attr_ex a = {
		.send_cq = cq, .qp_type = IBV_QPT_XRC_SEND,
		.cap = { .max_send_wr = 32, .max_send_sge = 1 },
		.comp_mask = IBV_QP_INIT_ATTR_PD, .pd = nd->pd,
	};

	if (!ext)
		return ibv_create_qp(nd->pd, (struct ibv_qp_init_attr *)&a);
	a.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	a.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
			   IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
			   IBV_QP_EX_WITH_RDMA_READ;
	return ibv_create_qp_ex(nd->ctx, &a);
}

/* An XRC_RECV QP of @xrcd. */
static struct ibv_qp *xrc_tgt(struct node *nd, struct ibv_xrcd *xrcd)
{
	struct ibv_qp_init_attr_ex a = {
		.qp_type = IBV_QPT_XRC_RECV,
		.comp_mask = IBV_QP_INIT_ATTR_XRCD, .xrcd = xrcd,
	};

	return ibv_create_qp_ex(nd->ctx, &a);
}

/* An initiator in *@ini and a target of @xrcd, connected to each other. */
static struct ibv_qp *xrc_pair(struct node *nd, struct ibv_xrcd *xrcd,
			       struct ibv_cq *cq, bool ext,
			       struct ibv_qp **ini)
{
	struct ibv_qp *t = xrc_tgt(nd, xrcd);

	*ini = t ? xrc_ini(nd, cq, ext) : NULL;
	if (*ini && !xrc_connect(nd, t, (*ini)->qp_num) &&
	    !xrc_connect(nd, *ini, t->qp_num))
		return t;
	if (*ini)
		ibv_destroy_qp(*ini);
	if (t)
		ibv_destroy_qp(t);
	*ini = NULL;
	return NULL;
}

/* An XRC SRQ of @xrcd with @cq, or NULL with errno; @mask: what to give. */
static struct ibv_srq *xrc_srq(struct ibv_context *ctx, struct ibv_pd *pd,
			       struct ibv_xrcd *xrcd, struct ibv_cq *cq,
			       uint32_t mask)
{
	struct ibv_srq_init_attr_ex a = {
		.attr = { .max_wr = NRECV, .max_sge = 1 },
		.comp_mask = mask, .srq_type = IBV_SRQT_XRC,
		.pd = pd, .xrcd = xrcd, .cq = cq,
	};

	return ibv_create_srq_ex(ctx, &a);
}

#define SRQ_ALL	(IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | \
		 IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ)

static int post_srq(struct ibv_srq *srq, uint64_t id, void *buf,
		    uint32_t lkey)
{
	struct ibv_sge sge = { (uintptr_t)buf, SLOT, lkey };
	struct ibv_recv_wr wr = {
		.wr_id = id, .sg_list = &sge, .num_sge = 1,
	}, *bad;

	return ibv_post_srq_recv(srq, &wr, &bad);
}

static struct ibv_xrcd *open_xrcd(struct ibv_context *ctx, int fd,
				  int oflags)
{
	struct ibv_xrcd_init_attr a = {
		.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
		.fd = fd, .oflags = oflags,
	};

	return ibv_open_xrcd(ctx, &a);
}

static struct ibv_qp *open_tgt(struct ibv_context *ctx,
			       struct ibv_xrcd *xrcd, uint32_t qpn)
{
	struct ibv_qp_open_attr a = {
		.comp_mask = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD |
			     IBV_QP_OPEN_ATTR_TYPE,
		.qp_num = qpn, .xrcd = xrcd, .qp_type = IBV_QPT_XRC_RECV,
	};

	return ibv_open_qp(ctx, &a);
}

/*
 * Receive completion @wc must be message @k (@len bytes in @buf, an
 * immediate from IMM_FROM on) through target @tqpn into XRC SRQ @srqn, on
 * the receive posted with @id.  A description of what is wrong, or NULL.
 */
static const char *recv_wrong(const struct ibv_wc *wc, uint64_t id, int k,
			      uint32_t len, const char *buf, uint32_t tqpn,
			      uint32_t srqn)
{
	bool imm = k >= IMM_FROM && k < MSGS;

	if (wc->status != IBV_WC_SUCCESS)
		return ibv_wc_status_str(wc->status);
	if (wc->opcode != IBV_WC_RECV)
		return "opcode";
	if (wc->wr_id != id)
		return "wr_id";
	if (wc->byte_len != len)
		return "byte_len";
	if (wc->qp_num != tqpn)
		return "qp_num";
	if (wc->src_qp != srqn)
		return "src_qp";
	if (!!(wc->wc_flags & IBV_WC_WITH_IMM) != imm ||
	    (imm && wc->imm_data != htobe32(0x5800 + k)))
		return "immediate";
	if (wrong_at(buf, k, len) >= 0)
		return "data";
	return NULL;
}

/* ---- the child: a second process of the domain ---- */

static int up_fd;
static int child_fails;

static void __attribute__((format(printf, 2, 3)))
report(int ok, const char *fmt, ...)
{
	struct rec r = { .kind = R_CHECK, .ok = ok };
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r.text, sizeof(r.text), fmt, ap);
	va_end(ap);
	if (!ok)
		child_fails++;
	if (!pipe_write(up_fd, &r, sizeof(r)))
		_exit(4);
}

static void send_rec(uint32_t kind, uint32_t srqn, uint64_t addr,
		     uint32_t rkey, uint32_t tqpn)
{
	struct rec r = {
		.kind = kind, .srqn = srqn, .addr = addr, .rkey = rkey,
		.tqpn = tqpn,
	};

	if (!pipe_write(up_fd, &r, sizeof(r)))
		_exit(4);
}

/* The next command from the parent, which must be @op. */
static void get_cmd(int down, uint32_t op, struct cmd *c)
{
	if (!pipe_read(down, c, sizeof(*c)) || c->op != op)
		_exit(3);
}

/* The read source in the child's MR: what the parent's READ must see. */
static uint8_t child_byte(pid_t pid, uint32_t i)
{
	return (uint8_t)(pid * 5 + i * 3);
}

static void child(const char *path, int down, int up)
{
	struct node nd = {};
	struct ibv_xrcd *xrcd = NULL;
	struct ibv_qp *t = NULL, *mine = NULL;
	struct ibv_cq *cq = NULL;
	struct ibv_srq *srq = NULL;
	struct ibv_mr *mr = NULL;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qia;
	struct ibv_wc wc;
	uint32_t srqn = 0, i;
	char *buf, *wbuf, *rbuf;
	const char *bad;
	struct cmd c;
	int fd, k, ret, j, err;
	bool ok;

	up_fd = up;
	buf = aligned_alloc(SLOT, (NRECV + 2) * SLOT);
	wbuf = buf + NRECV * SLOT;
	rbuf = wbuf + SLOT;
	get_cmd(down, C_GO, &c);

	nd.ctx = open_uzura();
	fd = open(path, O_RDONLY);
	errno = 0;
	xrcd = nd.ctx && fd >= 0 ? open_xrcd(nd.ctx, fd, 0) : NULL;
	err = errno;
	report(xrcd != NULL,
	       "child: its own context, and open_xrcd of the same file without O_CREAT: the parent's domain (errno %d)",
	       err);
	errno = 0;
	t = xrcd ? open_tgt(nd.ctx, xrcd, c.tqpn) : NULL;
	err = errno;
	ret = t ? ibv_query_qp(t, &qa, IBV_QP_STATE, &qia) : -1;
	report(t && t->qp_num == c.tqpn && !ret && qa.qp_state == IBV_QPS_RTS,
	       "child: open_qp of T (QP %u, XRC_RECV): query_qp reads RTS (errno %d, ret %d, state %d)",
	       c.tqpn, err, ret, ret ? -1 : (int)qa.qp_state);

	nd.pd = nd.ctx ? ibv_alloc_pd(nd.ctx) : NULL;
	cq = nd.pd ? ibv_create_cq(nd.ctx, 4 * NRECV, NULL, NULL, 0) : NULL;
	mr = cq && buf ? ibv_reg_mr(nd.pd, buf, (NRECV + 2) * SLOT, ACCESS) :
			 NULL;
	srq = mr && xrcd ? xrc_srq(nd.ctx, nd.pd, xrcd, cq, SRQ_ALL) : NULL;
	ret = srq ? ibv_get_srq_num(srq, &srqn) : -1;
	for (j = 0; !ret && j < NRECV; j++)
		ret = post_srq(srq, 200 + j, buf + j * SLOT, mr->lkey);
	report(srq && !ret && srqn,
	       "child: PD, CQ, MR, XRC SRQ S2 %u with its CQ, %d receives posted (ret %d)",
	       srqn, NRECV, ret);
	/* A target QP of its own, for the parent to open. */
	mine = srq ? xrc_tgt(&nd, xrcd) : NULL;
	report(mine != NULL, "child: a target QP %u of its own in the domain",
	       mine ? mine->qp_num : 0);
	if (!srq || ret || !mine) {
		send_rec(R_READY, 0, 0, 0, 0);
		_exit(1);
	}
	memset(wbuf, 0, SLOT);
	for (i = 0; i < SLOT; i++)
		rbuf[i] = child_byte(getpid(), i);
	send_rec(R_READY, srqn, (uintptr_t)buf, mr->rkey, mine->qp_num);

	/* The parent's SENDs to S2: the odd messages, in order. */
	get_cmd(down, C_SENT, &c);
	for (k = 1, j = 0; k < MSGS; k += 2, j++) {
		ok = wait_wc(cq, &wc);
		bad = ok ? recv_wrong(&wc, 200 + j, k, msg_len[k],
				      buf + j * SLOT, c.tqpn, srqn) :
			   "no completion";
		report(!bad,
		       "child: S2's CQ: message %d (%u bytes, %s) on receive %d, qp_num T %u, src_qp S2: %s",
		       k, msg_len[k], k >= EXT_FROM ? "ibv_wr_send" : "post_send",
		       200 + j, c.tqpn, bad ? bad : "right");
	}
	report(ibv_poll_cq(cq, 1, &wc) == 0,
	       "child: nothing else in S2's CQ (S1's messages are the parent's)");
	send_rec(R_DONE, 0, 0, 0, 0);

	/* The WRITE with immediate through S2: its next receive. */
	get_cmd(down, C_WIMM, &c);
	ok = wait_wc(cq, &wc);
	report(ok && wc.status == IBV_WC_SUCCESS &&
	       wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM &&
	       wc.wr_id == 200 + MSGS / 2 && wc.byte_len == WLEN &&
	       wc.qp_num == c.tqpn && (wc.wc_flags & IBV_WC_WITH_IMM) &&
	       wc.imm_data == htobe32(WIMM),
	       "child: the WRITE with immediate completes in S2's CQ: status %s, opcode %d, wr_id %llu, byte_len %u, qp_num %u, imm 0x%x",
	       ok ? ibv_wc_status_str(wc.status) : "none",
	       ok ? (int)wc.opcode : -1,
	       ok ? (unsigned long long)wc.wr_id : 0ull,
	       ok ? wc.byte_len : 0, ok ? wc.qp_num : 0,
	       ok ? be32toh(wc.imm_data) : 0);
	report(wrong_at(wbuf, MSGS + 1, WLEN) < 0 && !wbuf[WLEN],
	       "child: its %d bytes landed in the child's MR, and no more",
	       WLEN);
	send_rec(R_DONE, 0, 0, 0, 0);

	/* Teardown while the parent still uses the domain and T. */
	get_cmd(down, C_EXIT, &c);
	ret = ibv_destroy_srq(srq);
	report(!ret, "child: destroy_srq of S2 (%d)", ret);
	ret = ibv_destroy_qp(t);
	report(!ret, "child: destroy_qp of its handle on T (%d)", ret);
	ret = ibv_destroy_qp(mine);
	report(!ret, "child: destroy_qp of its own target QP, which the parent has open (%d)",
	       ret);
	ret = ibv_close_xrcd(xrcd);
	report(!ret,
	       "child: close_xrcd while the parent holds the domain (%d)",
	       ret);
	ret = ibv_dereg_mr(mr) || ibv_destroy_cq(cq) ||
	      ibv_dealloc_pd(nd.pd) || ibv_close_device(nd.ctx);
	report(!ret, "child: MR, CQ, PD and context go");
	send_rec(R_DONE, 0, 0, 0, 0);
	close(fd);
	_exit(child_fails ? 1 : 0);
}

/* ---- the parent ---- */

struct par {
	struct node nd;
	struct ibv_xrcd *xrcd;
	struct ibv_cq *scq;	/* the initiators' send CQ */
	struct ibv_cq *rcq;	/* S1's CQ */
	struct ibv_srq *s1;
	uint32_t s1n;
	struct ibv_mr *smr, *rmr;
	char *sbuf, *rbuf;	/* send slots; S1's receive slots */
	uint32_t s2n;		/* the child's XRC SRQ */
	struct ibv_qp *tc;	/* the child's target QP, opened */
	int s1_posted, s1_got;
	int down, up;		/* the pipes to and from the child */
	pid_t pid;
};

/* Records from the child until the end of a step: false on none. */
static bool child_step(struct par *p, struct rec *end)
{
	struct rec r;

	while (pipe_read(p->up, &r, sizeof(r))) {
		r.text[sizeof(r.text) - 1] = 0;
		if (r.kind != R_CHECK) {
			*end = r;
			return true;
		}
		check(r.ok, "%s", r.text);
	}
	check(0, "the child reports (none in %d ms, or it exited)", PIPE_MS);
	return false;
}

static bool tell(struct par *p, uint32_t op, uint32_t tqpn)
{
	struct cmd c = { .op = op, .tqpn = tqpn };

	return pipe_write(p->down, &c, sizeof(c));
}

static int s1_post(struct par *p)
{
	int j = p->s1_posted, ret;

	ret = post_srq(p->s1, 100 + j, p->rbuf + (j % NRECV) * SLOT,
		       p->rmr->lkey);
	if (!ret)
		p->s1_posted++;
	return ret;
}

/* The next completion of S1's CQ must be message @k through @tqpn. */
static void s1_expect(struct par *p, int k, uint32_t len, uint32_t tqpn,
		      const char *how)
{
	int j = p->s1_got;
	const char *bad = "no completion";
	struct ibv_wc wc;

	if (wait_wc(p->rcq, &wc)) {
		bad = recv_wrong(&wc, 100 + j, k, len,
				 p->rbuf + (j % NRECV) * SLOT, tqpn, p->s1n);
		p->s1_got++;
		s1_post(p);
	}
	check(!bad,
	      "%s: S1's CQ: message %d (%u bytes) on receive %d, qp_num T %u, src_qp S1 %u: %s",
	      how, k, len, 100 + j, tqpn, p->s1n, bad ? bad : "right");
}

/* Nothing in @cq (after the initiator's completion, or its error). */
static bool cq_empty(struct ibv_cq *cq)
{
	struct ibv_wc wc;

	return ibv_poll_cq(cq, 1, &wc) == 0;
}

/* Post one signalled SEND of message @k (@len bytes) from @ini to @srqn. */
static int xpost(struct par *p, struct ibv_qp *ini, uint32_t srqn, int k,
		 uint32_t len)
{
	char *src = p->sbuf + (k % MSGS) * SLOT;
	struct ibv_sge sge = { (uintptr_t)src, len, p->smr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = k, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
		.qp_type.xrc.remote_srqn = srqn,
	}, *bad;

	fill(src, k, len);
	return ibv_post_send(ini, &wr, &bad);
}

/* xpost, and the status of its completion in @cq, or -1. */
static int xsend_cq(struct par *p, struct ibv_qp *ini, struct ibv_cq *cq,
		    uint32_t srqn, int k, uint32_t len)
{
	struct ibv_wc wc;

	if (xpost(p, ini, srqn, k, len) || !wait_wc(cq, &wc) ||
	    wc.wr_id != (uint64_t)k)
		return -1;
	return wc.status;
}

/* A SEND of message @k from @ini to XRC SRQ @srqn: its status, or -1. */
static int xsend(struct par *p, struct ibv_qp *ini, uint32_t srqn, int k,
		 uint32_t len)
{
	return xsend_cq(p, ini, p->scq, srqn, k, len);
}

/* Wait up to 5 s for counter @name to reach @want: its value. */
static uint64_t counter_reach(const char *name, uint64_t want)
{
	uint64_t v = counter(name);
	int i;

	for (i = 0; i < 250 && v < want; i++)
		v = counter(name);
	return v;
}

static void check_caps(struct node *nd)
{
	struct ibv_device_attr_ex ax = {};
	struct ibv_device_attr a;
	uint32_t want = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_SRQ_RECV;
	uint32_t xrc;
	int ret;

	ret = ibv_query_device(nd->ctx, &a);
	check(!ret && (a.device_cap_flags & IBV_DEVICE_XRC),
	      "query_device: IBV_DEVICE_XRC (flags 0x%x, ret %d)",
	      a.device_cap_flags, ret);
	ret = ibv_query_device_ex(nd->ctx, NULL, &ax);
	xrc = ax.xrc_odp_caps;
	check(!ret && (xrc & want) == want,
	      "query_device_ex: xrc_odp_caps has SEND and SRQ_RECV (0x%x, ret %d)",
	      xrc, ret);
}

/*
 * SENDs 0..MSGS-1 from @ini, alternately to S1 and S2: the first
 * EXT_FROM in one chain of ibv_post_send, the others in one ibv_wr_*
 * batch.  Then WRITE with immediate and READ through S2.
 */
static void two_processes(struct par *p, struct ibv_qp *ini,
			  struct ibv_qp *t)
{
	struct ibv_qp_ex *qx = ibv_qp_to_qp_ex(ini);
	struct ibv_send_wr wr[EXT_FROM], *bad;
	struct ibv_sge sge[EXT_FROM];
	char *wsrc = p->sbuf + MSGS * SLOT, *rdst = wsrc + SLOT;
	uint32_t s2n, rkey, i;
	uint64_t raddr;
	struct ibv_wc wc;
	struct rec r;
	int k, ret, got, ok;
	long at;

	if (!tell(p, C_GO, t->qp_num) || !child_step(p, &r) || !r.srqn) {
		check(0, "the child's XRC SRQ S2");
		return;
	}
	s2n = p->s2n = r.srqn;
	raddr = r.addr;
	rkey = r.rkey;
	errno = 0;
	p->tc = open_tgt(p->nd.ctx, p->xrcd, r.tqpn);
	check(p->tc && p->tc->qp_num == r.tqpn,
	      "open_qp of the child's target QP %u (errno %d)", r.tqpn, errno);
	check(s2n != p->s1n, "the child's S2 (%u) through the pipe; S1 is %u",
	      s2n, p->s1n);

	for (k = 0; k < MSGS; k++)
		fill(p->sbuf + k * SLOT, k, msg_len[k]);
	for (k = 0; k < EXT_FROM; k++) {
		sge[k] = (struct ibv_sge) { (uintptr_t)p->sbuf + k * SLOT,
					    msg_len[k], p->smr->lkey };
		wr[k] = (struct ibv_send_wr) {
			.wr_id = k, .sg_list = &sge[k], .num_sge = 1,
			.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
			.next = k + 1 < EXT_FROM ? &wr[k + 1] : NULL,
			.qp_type.xrc.remote_srqn = k & 1 ? s2n : p->s1n,
		};
	}
	ret = ibv_post_send(ini, wr, &bad);
	check(!ret, "post_send of SENDs 0..%d with remote_srqn S1, S2, ... (%d)",
	      EXT_FROM - 1, ret);
	ibv_wr_start(qx);
	for (k = EXT_FROM; k < MSGS; k++) {
		qx->wr_id = k;
		qx->wr_flags = IBV_SEND_SIGNALED;
		if (k >= IMM_FROM)
			ibv_wr_send_imm(qx, htobe32(0x5800 + k));
		else
			ibv_wr_send(qx);
		ibv_wr_set_xrc_srqn(qx, k & 1 ? s2n : p->s1n);
		ibv_wr_set_sge(qx, p->smr->lkey,
			       (uintptr_t)p->sbuf + k * SLOT, msg_len[k]);
	}
	ret = ibv_wr_complete(qx);
	check(!ret, "ibv_wr_send/_send_imm + ibv_wr_set_xrc_srqn of SENDs %d..%d (%d)",
	      EXT_FROM, MSGS - 1, ret);
	for (k = 0, ok = 0, got = 0; k < MSGS && wait_wc(p->scq, &wc); k++) {
		got++;
		ok += wc.status == IBV_WC_SUCCESS && wc.wr_id == (uint64_t)k &&
		      wc.opcode == IBV_WC_SEND;
	}
	check(ok == MSGS, "the %d SENDs complete at the initiator, in order (%d of %d right)",
	      MSGS, ok, got);
	for (k = 0; k < MSGS; k += 2)
		s1_expect(p, k, msg_len[k], t->qp_num,
			  k >= EXT_FROM ? "ibv_wr_send" : "post_send");
	check(cq_empty(p->rcq), "nothing else in S1's CQ (S2's messages are the child's)");
	if (!tell(p, C_SENT, t->qp_num) || !child_step(p, &r))
		return;

	/* WRITE with immediate into the child's MR: its PD, through S2. */
	fill(wsrc, MSGS + 1, WLEN);
	sge[0] = (struct ibv_sge) { (uintptr_t)wsrc, WLEN, p->smr->lkey };
	wr[0] = (struct ibv_send_wr) {
		.wr_id = 50, .sg_list = sge, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
		.send_flags = IBV_SEND_SIGNALED, .imm_data = htobe32(WIMM),
		.wr.rdma = { .remote_addr = raddr + NRECV * SLOT,
			     .rkey = rkey },
		.qp_type.xrc.remote_srqn = s2n,
	};
	ret = ibv_post_send(ini, wr, &bad);
	got = !ret && wait_wc(p->scq, &wc);
	check(got && wc.status == IBV_WC_SUCCESS && wc.wr_id == 50 &&
	      wc.opcode == IBV_WC_RDMA_WRITE,
	      "RDMA WRITE with immediate of %d bytes into the child's MR through S2: %s",
	      WLEN, got ? ibv_wc_status_str(wc.status) : "no completion");
	check(cq_empty(p->rcq), "... which takes no receive of S1");
	if (!tell(p, C_WIMM, t->qp_num) || !child_step(p, &r))
		return;

	/* READ of what the child wrote, through S2, with ibv_wr_rdma_read. */
	memset(rdst, 0, SLOT);
	ibv_wr_start(qx);
	qx->wr_id = 51;
	qx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_read(qx, rkey, raddr + (NRECV + 1) * SLOT);
	ibv_wr_set_xrc_srqn(qx, s2n);
	ibv_wr_set_sge(qx, p->smr->lkey, (uintptr_t)rdst, RLEN);
	ret = ibv_wr_complete(qx);
	got = !ret && wait_wc(p->scq, &wc);
	for (i = 0, at = -1; i < RLEN && at < 0; i++)
		if ((uint8_t)rdst[i] != child_byte(p->pid, i))
			at = i;
	check(got && wc.status == IBV_WC_SUCCESS && wc.wr_id == 51 &&
	      wc.opcode == IBV_WC_RDMA_READ && wc.byte_len == RLEN &&
	      at < 0 && !rdst[RLEN],
	      "RDMA READ of %d bytes of the child's MR through S2: %s, byte_len %u, reads what the child wrote (first wrong byte %ld)",
	      RLEN, got ? ibv_wc_status_str(wc.status) : "no completion",
	      got ? wc.byte_len : 0, at);

	if (tell(p, C_EXIT, t->qp_num))
		child_step(p, &r);
}

/* Bad input to the provider on XRC QPs and SRQs; @ini (ext) goes on. */
static void bad_posts(struct par *p, struct ibv_qp *ini, struct ibv_qp *t)
{
	struct ibv_qp_ex *qx = ibv_qp_to_qp_ex(ini);
	struct ibv_sge sge = { (uintptr_t)p->sbuf, 8, p->smr->lkey };
	struct ibv_recv_wr rwr = { .wr_id = 9, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *rbad = NULL;
	struct ibv_send_wr wr = {
		.wr_id = 9, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
		.qp_type.xrc.remote_srqn = p->s1n,
	}, *bad = NULL;
	struct ibv_mw *mw = ibv_alloc_mw(p->nd.pd, IBV_MW_TYPE_2);
	struct ibv_wc wc;
	int ret, st, got;

	ret = ibv_post_recv(ini, &rwr, &rbad);
	check(ret == EINVAL && rbad == &rwr,
	      "post_recv on an XRC_SEND QP: EINVAL, bad_wr the WR (%d %s)",
	      ret, strerror(ret));
	rbad = NULL;
	ret = ibv_post_recv(t, &rwr, &rbad);
	check(ret == EINVAL && rbad == &rwr,
	      "post_recv on an XRC_RECV QP: EINVAL, bad_wr the WR (%d %s)",
	      ret, strerror(ret));
	ret = ibv_post_send(t, &wr, &bad);
	check(ret == EINVAL && bad == &wr,
	      "post_send on an XRC_RECV QP: EINVAL, bad_wr the WR (%d %s)",
	      ret, strerror(ret));

	check(mw != NULL, "a type 2 memory window");
	if (mw) {
		wr.opcode = IBV_WR_BIND_MW;
		wr.bind_mw.mw = mw;
		wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
		wr.bind_mw.bind_info = (struct ibv_mw_bind_info) {
			.mr = p->smr, .addr = (uintptr_t)p->sbuf,
			.length = SLOT, .mw_access_flags = IBV_ACCESS_REMOTE_WRITE,
		};
		bad = NULL;
		ret = ibv_post_send(ini, &wr, &bad);
		check(ret == EINVAL && bad == &wr,
		      "IBV_WR_BIND_MW on an XRC_SEND QP: EINVAL, bad_wr the WR (%d %s)",
		      ret, strerror(ret));
	}
	st = xsend(p, ini, p->s1n, 20, 100);
	check(st == IBV_WC_SUCCESS,
	      "the initiator goes on: a SEND to S1 completes first (%d %s)",
	      st, wc_str(st));
	s1_expect(p, 20, 100, t->qp_num, "after the refused posts");

	/* A batch with no XRC SRQ: nothing goes. */
	ibv_wr_start(qx);
	qx->wr_id = 21;
	qx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(qx);
	ibv_wr_set_sge(qx, p->smr->lkey, (uintptr_t)p->sbuf, 8);
	ret = ibv_wr_complete(qx);
	check(ret == EINVAL,
	      "ibv_wr_send without ibv_wr_set_xrc_srqn: ibv_wr_complete fails, EINVAL (%d %s)",
	      ret, strerror(ret));
	if (mw) {
		ibv_wr_start(qx);
		qx->wr_id = 22;
		ibv_wr_bind_mw(qx, mw, ibv_inc_rkey(mw->rkey),
			       &wr.bind_mw.bind_info);
		ret = ibv_wr_complete(qx);
		check(ret == EOPNOTSUPP,
		      "ibv_wr_bind_mw on an XRC_SEND QP: ibv_wr_complete fails, EOPNOTSUPP (%d %s)",
		      ret, strerror(ret));
	}
	/* The next batch, right, is all that comes out. */
	fill(p->sbuf + 7 * SLOT, 23, 40);
	ibv_wr_start(qx);
	qx->wr_id = 23;
	qx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(qx);
	ibv_wr_set_xrc_srqn(qx, p->s1n);
	ibv_wr_set_sge(qx, p->smr->lkey, (uintptr_t)p->sbuf + 7 * SLOT, 40);
	ret = ibv_wr_complete(qx);
	got = !ret && wait_wc(p->scq, &wc);
	check(got && wc.wr_id == 23 && wc.status == IBV_WC_SUCCESS &&
	      cq_empty(p->scq),
	      "then a batch with the XRC SRQ: its SEND alone completes (ret %d, wr_id %llu, %s)",
	      ret, got ? (unsigned long long)wc.wr_id : 0ull,
	      got ? ibv_wc_status_str(wc.status) : "no completion");
	s1_expect(p, 23, 40, t->qp_num, "the batch");
	if (mw)
		ibv_dealloc_mw(mw);
}

/* XRC SRQs the provider refuses. */
static void bad_srqs(struct par *p)
{
	struct ibv_context *ctx2 = open_uzura();
	struct ibv_cq *cq2 = ctx2 ? ibv_create_cq(ctx2, 4, NULL, NULL, 0) :
				    NULL;
	struct ibv_srq *srq;
	int err;

	errno = 0;
	srq = xrc_srq(p->nd.ctx, p->nd.pd, p->xrcd, NULL,
		      SRQ_ALL & ~IBV_SRQ_INIT_ATTR_CQ);
	err = errno;
	check(!srq && err == EINVAL, "XRC SRQ without a CQ: EINVAL (errno %d %s)",
	      err, strerror(err));
	if (srq)
		ibv_destroy_srq(srq);
	errno = 0;
	srq = xrc_srq(p->nd.ctx, p->nd.pd, NULL, p->rcq,
		      SRQ_ALL & ~IBV_SRQ_INIT_ATTR_XRCD);
	err = errno;
	check(!srq && err == EINVAL, "XRC SRQ without an XRCD: EINVAL (errno %d %s)",
	      err, strerror(err));
	if (srq)
		ibv_destroy_srq(srq);
	if (cq2) {
		errno = 0;
		srq = xrc_srq(p->nd.ctx, p->nd.pd, p->xrcd, cq2, SRQ_ALL);
		err = errno;
		check(!srq && err == EINVAL,
		      "XRC SRQ with a CQ of another context: EINVAL (errno %d %s)",
		      err, strerror(err));
		if (srq)
			ibv_destroy_srq(srq);
		ibv_destroy_cq(cq2);
	} else {
		check(0, "a second context and a CQ in it");
	}
	if (ctx2)
		ibv_close_device(ctx2);
}

/*
 * A second domain: its SRQ is no SRQ of T's domain, and the domain is busy
 * while an SRQ or a target QP uses it.  @i2 goes on.
 */
static void other_domain(struct par *p, struct ibv_qp *i2, struct ibv_qp *t2,
			 const char *dir)
{
	struct ibv_cq *cqx = ibv_create_cq(p->nd.ctx, 4, NULL, NULL, 0);
	struct ibv_xrcd *x2 = NULL, *none;
	struct ibv_srq *sx = NULL;
	struct ibv_qp *i3 = NULL, *t3 = NULL, *tx = NULL, *bad;
	char path[256];
	uint32_t sxn = 0;
	int fd, err, ret, st;

	/* A file with no domain, and no O_CREAT. */
	snprintf(path, sizeof(path), "%s/xrc-test-none.XXXXXX", dir);
	fd = mkstemp(path);
	errno = 0;
	none = fd >= 0 ? open_xrcd(p->nd.ctx, fd, 0) : NULL;
	err = errno;
	check(!none && err == EAGAIN,
	      "open_xrcd of a file with no domain, without O_CREAT: EAGAIN (errno %d %s)",
	      err, strerror(err));
	if (none)
		ibv_close_xrcd(none);
	if (fd >= 0) {
		close(fd);
		unlink(path);
	}

	/* A domain of no file: the process's alone. */
	x2 = open_xrcd(p->nd.ctx, -1, O_CREAT);
	sx = x2 && cqx ? xrc_srq(p->nd.ctx, p->nd.pd, x2, cqx, SRQ_ALL) : NULL;
	ret = sx ? ibv_get_srq_num(sx, &sxn) : -1;
	ret = ret ? ret : post_srq(sx, 300, p->rbuf, p->rmr->lkey);
	check(!ret, "a second XRCD (no file) with an XRC SRQ %u, a receive posted",
	      sxn);
	if (!sx)
		goto out;
	ret = ibv_close_xrcd(x2);
	check(ret == EBUSY, "close_xrcd of a domain with an XRC SRQ: EBUSY (%d %s)",
	      ret, strerror(ret));
	ret = ibv_close_xrcd(p->xrcd);
	check(ret == EBUSY,
	      "close_xrcd of the shared domain, with S1 and target QPs: EBUSY (%d %s)",
	      ret, strerror(ret));

	errno = 0;
	bad = open_tgt(p->nd.ctx, p->xrcd, i2->qp_num);
	err = errno;
	check(!bad && err == EINVAL,
	      "open_qp of an initiator's number: EINVAL (errno %d %s)", err,
	      strerror(err));
	if (bad)
		ibv_destroy_qp(bad);
	errno = 0;
	bad = open_tgt(p->nd.ctx, x2, t2->qp_num);
	err = errno;
	check(!bad && err == EINVAL,
	      "open_qp of a target QP through another domain: EINVAL (errno %d %s)",
	      err, strerror(err));
	if (bad)
		ibv_destroy_qp(bad);

	/*
	 * A pair made by hand.  A required attribute missing is refused
	 * (ib_core's table); RC's masks are taken, ib_uverbs dropping the
	 * attributes the XRC type has no use for (modify_qp_mask).
	 */
	t3 = xrc_tgt(&p->nd, p->xrcd);
	i3 = t3 ? xrc_ini(&p->nd, p->scq, false) : NULL;
	check(i3 && !xrc_modify(&p->nd, i3, IBV_QPS_INIT, 0, INIT_MASK) &&
	      !xrc_modify(&p->nd, t3, IBV_QPS_INIT, 0, INIT_MASK),
	      "an initiator (ibv_create_qp) and a target, in INIT");
	if (!i3)
		goto out;
	ret = xrc_modify(&p->nd, i3, IBV_QPS_RTR, t3->qp_num,
			 INI_RTR & ~IBV_QP_RQ_PSN);
	check(ret == EINVAL,
	      "initiator INIT->RTR without RQ_PSN: EINVAL (%d %s)", ret,
	      strerror(ret));
	ret = xrc_modify(&p->nd, t3, IBV_QPS_RTR, i3->qp_num,
			 TGT_RTR & ~IBV_QP_MIN_RNR_TIMER);
	check(ret == EINVAL,
	      "target INIT->RTR without MIN_RNR_TIMER: EINVAL (%d %s)", ret,
	      strerror(ret));
	ret = xrc_modify(&p->nd, i3, IBV_QPS_RTR, t3->qp_num, TGT_RTR);
	check(!ret,
	      "initiator INIT->RTR with RC's mask (MAX_DEST_RD_ATOMIC, MIN_RNR_TIMER ignored): 0 (%d %s)",
	      ret, strerror(ret));
	ret = xrc_modify(&p->nd, t3, IBV_QPS_RTR, i3->qp_num, TGT_RTR);
	check(!ret, "target INIT->RTR (%d)", ret);
	ret = xrc_modify(&p->nd, t3, IBV_QPS_RTS, i3->qp_num,
			 TGT_RTS & ~IBV_QP_SQ_PSN);
	check(ret == EINVAL,
	      "target RTR->RTS without SQ_PSN: EINVAL (%d %s)", ret,
	      strerror(ret));
	ret = xrc_modify(&p->nd, t3, IBV_QPS_RTS, i3->qp_num, INI_RTS);
	check(!ret,
	      "target RTR->RTS with RC's mask (RETRY_CNT, RNR_RETRY, MAX_QP_RD_ATOMIC ignored): 0 (%d %s)",
	      ret, strerror(ret));
	ret = xrc_modify(&p->nd, i3, IBV_QPS_RTS, t3->qp_num, INI_RTS);
	check(!ret, "initiator RTR->RTS (%d)", ret);

	st = xsend(p, i3, sxn, 30, 64);
	check(st == IBV_WC_REM_INV_REQ_ERR,
	      "SEND to the XRC SRQ of another domain: REM_INV_REQ_ERR at the initiator (%d %s)",
	      st, wc_str(st));
	check(cq_empty(cqx) && cq_empty(p->rcq),
	      "... and no completion in that SRQ's CQ or S1's");
	st = xsend(p, i2, p->s1n, 31, 500);
	check(st == IBV_WC_SUCCESS, "another pair goes on: a SEND to S1 (%d %s)",
	      st, wc_str(st));
	s1_expect(p, 31, 500, t2->qp_num, "the other pair");

	tx = xrc_tgt(&p->nd, x2);
	ret = ibv_destroy_srq(sx);
	check(tx && !ret, "a target QP in the second domain; its SRQ destroyed (%d)",
	      ret);
	sx = NULL;
	ret = ibv_close_xrcd(x2);
	check(ret == EBUSY, "close_xrcd of a domain with a target QP: EBUSY (%d %s)",
	      ret, strerror(ret));
	ret = tx ? ibv_destroy_qp(tx) : -1;
	tx = NULL;
	ret = ret ? ret : ibv_close_xrcd(x2);
	check(!ret, "without it, close_xrcd of the second domain (%d)", ret);
	if (!ret)
		x2 = NULL;
out:
	if (tx)
		ibv_destroy_qp(tx);
	if (i3)
		ibv_destroy_qp(i3);
	if (t3)
		ibv_destroy_qp(t3);
	if (sx)
		ibv_destroy_srq(sx);
	if (x2)
		ibv_close_xrcd(x2);
	if (cqx)
		ibv_destroy_cq(cqx);
}

/*
 * One signalled RDMA @op of @len bytes between @local and @remote from
 * @ini through XRC SRQ @srqn: the status of its completion, or -1.
 */
static int xrdma(struct par *p, struct ibv_qp *ini, enum ibv_wr_opcode op,
		 uint32_t srqn, void *local, uint32_t len, uint64_t remote,
		 uint32_t rkey)
{
	struct ibv_sge sge = { (uintptr_t)local, len, p->smr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = 60, .sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = remote, .rkey = rkey },
		.qp_type.xrc.remote_srqn = srqn,
	}, *bad;
	struct ibv_wc wc;

	if (ibv_post_send(ini, &wr, &bad) || !wait_wc(p->scq, &wc) ||
	    wc.wr_id != 60)
		return -1;
	return wc.status;
}

/*
 * Keys are checked against the PD of the SRQ a request names: through
 * S1, a WRITE and a READ of an MR of S1's PD go, a READ of an MR of
 * another PD is refused.
 */
static void other_pd(struct par *p)
{
	struct ibv_pd *pd2 = ibv_alloc_pd(p->nd.ctx);
	char *buf = aligned_alloc(SLOT, 2 * SLOT), *b2 = buf + SLOT;
	struct ibv_mr *mr1 = buf ? ibv_reg_mr(p->nd.pd, buf, SLOT, ACCESS) :
				   NULL;
	struct ibv_mr *mr2 = pd2 && buf ? ibv_reg_mr(pd2, b2, SLOT, ACCESS) :
					  NULL;
	char *src = p->sbuf + MSGS * SLOT, *dst = src + SLOT;
	struct ibv_qp *i4 = NULL, *t4 = NULL;
	int st;

	t4 = mr1 && mr2 ? xrc_pair(&p->nd, p->xrcd, p->scq, false, &i4) : NULL;
	check(t4 != NULL, "MRs of S1's PD and of another PD; a fresh I/T pair");
	if (!t4)
		goto out;
	memset(buf, 0, 2 * SLOT);
	fill(src, 43, 256);
	st = xrdma(p, i4, IBV_WR_RDMA_WRITE, p->s1n, src, 256,
		   (uintptr_t)buf + 64, mr1->rkey);
	check(st == IBV_WC_SUCCESS && wrong_at(buf + 64, 43, 256) < 0,
	      "RDMA WRITE through S1 into an MR of its PD (%d %s)", st,
	      wc_str(st));
	memset(dst, 0, 512);
	st = xrdma(p, i4, IBV_WR_RDMA_READ, p->s1n, dst, 256,
		   (uintptr_t)buf + 64, mr1->rkey);
	check(st == IBV_WC_SUCCESS && wrong_at(dst, 43, 256) < 0,
	      "RDMA READ through S1 of that MR (%d %s)", st, wc_str(st));
	fill(b2, 42, 64);
	memset(dst, 0, 512);
	st = xrdma(p, i4, IBV_WR_RDMA_READ, p->s1n, dst, 64,
		   (uintptr_t)b2, mr2->rkey);
	check(st == IBV_WC_REM_ACCESS_ERR && !memcmp(dst, dst + 64, 64),
	      "RDMA READ through S1 of an MR of another PD: REM_ACCESS_ERR, nothing read (%d %s)",
	      st, wc_str(st));
	check(cq_empty(p->rcq), "... and nothing in S1's CQ");
out:
	if (i4)
		ibv_destroy_qp(i4);
	if (t4)
		ibv_destroy_qp(t4);
	if (mr1)
		ibv_dereg_mr(mr1);
	if (mr2)
		ibv_dereg_mr(mr2);
	if (pd2)
		ibv_dealloc_pd(pd2);
	free(buf);
}

/*
 * An XRC SRQ's life: a SEND to it before any receive is posted waits
 * (RNR NAKs) until one is; its receive buffers and the MRs reached through
 * it may be ODP (xrc_odp_caps); destroying it takes its receives not
 * polled out of its CQ, so that an SRQ given its number later does not
 * take them for its own (guest-lib/README.md).
 */
static void srq_life(struct par *p)
{
	long page = sysconf(_SC_PAGESIZE);
	struct ibv_cq *cq = ibv_create_cq(p->nd.ctx, 8, NULL, NULL, 0);
	char *odp = mmap(NULL, 3 * page, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct ibv_mr *omr = NULL;
	struct ibv_srq *s3 = NULL, *s4 = NULL;
	struct ibv_qp *i5 = NULL, *t5 = NULL;
	const char *bad = "no completion";
	uint32_t s3n = 0, s4n = 0;
	uint64_t rnr0, rnr;
	struct ibv_wc wc;
	int st, ret;

	if (odp != MAP_FAILED)
		omr = ibv_reg_mr(p->nd.pd, odp, 3 * page,
				 ACCESS | IBV_ACCESS_ON_DEMAND);
	s3 = omr && cq ? xrc_srq(p->nd.ctx, p->nd.pd, p->xrcd, cq, SRQ_ALL) :
			 NULL;
	t5 = s3 && !ibv_get_srq_num(s3, &s3n) ?
	     xrc_pair(&p->nd, p->xrcd, p->scq, false, &i5) : NULL;
	check(t5 != NULL,
	      "XRC SRQ S3 %u with its CQ and no receive; an ODP MR of 3 untouched pages; a fresh pair",
	      s3n);
	if (!t5)
		goto out;

	rnr0 = counter("rnr_naks_sent");
	ret = xpost(p, i5, s3n, 50, 1000);
	rnr = counter_reach("rnr_naks_sent", rnr0 + 1);
	check(!ret && rnr > rnr0 && cq_empty(p->scq),
	      "a SEND to S3 before any receive: RNR NAKs (%llu), no completion",
	      (unsigned long long)(rnr - rnr0));
	ret = post_srq(s3, 300, odp, omr->lkey);
	st = !ret && wait_wc(p->scq, &wc) && wc.wr_id == 50 ? (int)wc.status :
							    -1;
	if (wait_wc(cq, &wc))
		bad = recv_wrong(&wc, 300, 50, 1000, odp, t5->qp_num, s3n);
	check(st == IBV_WC_SUCCESS && !bad,
	      "a receive posted (an untouched ODP page): the SEND completes (%d %s), and lands in S3's CQ: %s",
	      st, wc_str(st), bad ? bad : "right");
	fill(p->sbuf + MSGS * SLOT, 51, 300);
	st = xrdma(p, i5, IBV_WR_RDMA_WRITE, s3n, p->sbuf + MSGS * SLOT, 300,
		   (uintptr_t)odp + page + 8, omr->rkey);
	check(st == IBV_WC_SUCCESS && wrong_at(odp + page + 8, 51, 300) < 0,
	      "an RDMA WRITE through S3 into an untouched page of the ODP MR (%d %s)",
	      st, wc_str(st));

	/* A receive left in the CQ when its SRQ goes. */
	ret = post_srq(s3, 301, odp + 2 * page, omr->lkey);
	st = ret ? -1 : xsend(p, i5, s3n, 52, 200);
	ret = ibv_destroy_srq(s3);
	check(st == IBV_WC_SUCCESS && !ret,
	      "a SEND to S3 completes (%d %s); S3 destroyed with its receive not polled (%d)",
	      st, wc_str(st), ret);
	s3 = NULL;
	s4 = xrc_srq(p->nd.ctx, p->nd.pd, p->xrcd, cq, SRQ_ALL);
	ret = s4 ? ibv_get_srq_num(s4, &s4n) : -1;
	check(!ret && cq_empty(cq),
	      "XRC SRQ S4 %u (S3 was %u) on that CQ: S3's receive went with S3",
	      s4n, s3n);
	if (ret)
		goto out;
	ret = post_srq(s4, 400, odp, omr->lkey);
	st = ret ? -1 : xsend(p, i5, s4n, 53, 700);
	bad = "no completion";
	if (wait_wc(cq, &wc))
		bad = recv_wrong(&wc, 400, 53, 700, odp, t5->qp_num, s4n);
	check(st == IBV_WC_SUCCESS && !bad && cq_empty(cq),
	      "a SEND to S4 (%d %s): S4's CQ has its receive alone: %s", st,
	      wc_str(st), bad ? bad : "right");
out:
	if (i5)
		ibv_destroy_qp(i5);
	if (t5)
		ibv_destroy_qp(t5);
	if (s3)
		ibv_destroy_srq(s3);
	if (s4)
		ibv_destroy_srq(s4);
	if (omr)
		ibv_dereg_mr(omr);
	if (cq)
		ibv_destroy_cq(cq);
	if (odp != MAP_FAILED)
		munmap(odp, 3 * page);
}

#define RESIZED		64	/* an XRC SRQ's depth after a resize */
#define AFTER		(2 * NRECV)	/* receives posted after it */

/*
 * One CQ for an initiator's sends and an XRC SRQ's receives, as software
 * with one CQ does: the initiator moved to RESET takes its completions
 * out of it, not the XRC receives.  The pair, reset and connected again,
 * carries SENDs; the SRQ, resized with a receive outstanding, takes more
 * receives than it first held, in order.
 */
static void shared_cq(struct par *p)
{
	struct ibv_cq *cq = ibv_create_cq(p->nd.ctx, 2 * RESIZED, NULL, NULL,
					  0);
	char *buf = aligned_alloc(SLOT, (AFTER + 2) * SLOT);
	struct ibv_mr *mr = buf ? ibv_reg_mr(p->nd.pd, buf, (AFTER + 2) * SLOT,
					     ACCESS) : NULL;
	struct ibv_srq *srq = mr && cq ? xrc_srq(p->nd.ctx, p->nd.pd, p->xrcd,
						 cq, SRQ_ALL) : NULL;
	struct ibv_srq_attr sa = { .max_wr = RESIZED };
	struct ibv_qp *i6 = NULL, *t6 = NULL;
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };
	const char *bad = "no completion";
	uint32_t sn = 0;
	uint64_t c0, c1;
	struct ibv_wc wc;
	int ret, st, j, ok, sends;
	bool got;

	t6 = srq && !ibv_get_srq_num(srq, &sn) && !post_srq(srq, 500, buf,
							    mr->lkey) ?
	     xrc_pair(&p->nd, p->xrcd, cq, false, &i6) : NULL;
	check(t6 != NULL,
	      "one CQ for an initiator's sends and XRC SRQ %u's receives", sn);
	if (!t6)
		goto out;
	c0 = counter("cqes");
	ret = xpost(p, i6, sn, 54, 600);
	c1 = counter_reach("cqes", c0 + 2);
	check(!ret && c1 >= c0 + 2,
	      "a SEND to that SRQ: both completions written (%llu CQEs)",
	      (unsigned long long)(c1 - c0));
	ret = ibv_modify_qp(i6, &a, IBV_QP_STATE);
	if (wait_wc(cq, &wc))
		bad = recv_wrong(&wc, 500, 54, 600, buf, t6->qp_num, sn);
	check(!ret && !bad && cq_empty(cq),
	      "the initiator to RESET (%d): the CQ keeps the receive alone: %s",
	      ret, bad ? bad : "right");

	/* Both to RESET and connected again. */
	ret = ibv_modify_qp(t6, &a, IBV_QP_STATE) ||
	      xrc_connect(&p->nd, t6, i6->qp_num) ||
	      xrc_connect(&p->nd, i6, t6->qp_num) ||
	      post_srq(srq, 501, buf, mr->lkey);
	ret = ret ? ret : xpost(p, i6, sn, 55, 700);
	/* The SEND's and the receive's completions, in either order. */
	for (j = 0, st = -1, bad = "no completion"; !ret && j < 2 &&
	     wait_wc(cq, &wc); j++) {
		if (wc.opcode & IBV_WC_RECV)
			bad = recv_wrong(&wc, 501, 55, 700, buf, t6->qp_num,
					 sn);
		else if (wc.wr_id == 55)
			st = wc.status;
	}
	check(st == IBV_WC_SUCCESS && !bad,
	      "initiator and target to RESET and connected again: a SEND (%d %s): %s",
	      st, wc_str(st), bad ? bad : "right");

	/* Resize with one receive outstanding, then more than it held. */
	ret = post_srq(srq, 502, buf, mr->lkey);
	ret = ret ? ret : ibv_modify_srq(srq, &sa, IBV_SRQ_MAX_WR);
	memset(&sa, 0, sizeof(sa));
	ret = ret ? ret : ibv_query_srq(srq, &sa);
	for (j = 0; !ret && j < AFTER; j++)
		ret = post_srq(srq, 503 + j, buf + (j + 1) * SLOT, mr->lkey);
	check(!ret && sa.max_wr >= RESIZED,
	      "XRC SRQ resized from %d to %d with a receive outstanding (max_wr %u), %d more posted (%d)",
	      NRECV, RESIZED, sa.max_wr, AFTER, ret);
	for (j = 0, ok = 0, sends = 0; !ret && j <= AFTER; j++) {
		/* The send completions come in the same CQ: skip them. */
		sends += xpost(p, i6, sn, 56 + j % 2, 100 + j) == 0;
		for (got = false; !got && wait_wc(cq, &wc);)
			got = wc.opcode & IBV_WC_RECV;
		ok += got && !recv_wrong(&wc, 502 + j, 56 + j % 2, 100 + j,
					 buf + j * SLOT, t6->qp_num, sn);
	}
	check(ok == AFTER + 1,
	      "%d SENDs to it (%d posted) take those receives in order (%d right)",
	      AFTER + 1, sends, ok);
out:
	if (i6)
		ibv_destroy_qp(i6);
	if (t6)
		ibv_destroy_qp(t6);
	if (srq)
		ibv_destroy_srq(srq);
	if (mr)
		ibv_dereg_mr(mr);
	if (cq)
		ibv_destroy_cq(cq);
	free(buf);
}

#define BURST_N		8	/* SENDs from each of two initiators */
#define BURST_LEN	3000	/* three packets each */

/*
 * Two initiators, two targets, one XRC SRQ, as when many processes send
 * to one: SENDs of several packets posted on both at once, their packets
 * interleaved, each land whole in a receive of their own, in the order
 * each initiator sent them.  Then a SEND longer than the receive: the
 * receive the target took completes LOC_LEN_ERR in the SRQ's CQ, the
 * initiator gets REM_INV_REQ_ERR.
 */
static void two_targets(struct par *p)
{
	struct ibv_cq *cq = ibv_create_cq(p->nd.ctx, 4 * BURST_N, NULL, NULL, 0);
	int nbuf = 2 * BURST_N + 1;
	char *rbuf = aligned_alloc(SLOT, nbuf * SLOT);
	char *sbuf = aligned_alloc(SLOT, 2 * BURST_N * SLOT);
	struct ibv_mr *rmr = rbuf ? ibv_reg_mr(p->nd.pd, rbuf, nbuf * SLOT,
					      ACCESS) : NULL;
	struct ibv_mr *smr = sbuf ? ibv_reg_mr(p->nd.pd, sbuf,
					      2 * BURST_N * SLOT, ACCESS) :
				    NULL;
	struct ibv_srq_init_attr_ex sa = {
		.attr = { .max_wr = nbuf, .max_sge = 1 },
		.comp_mask = SRQ_ALL, .srq_type = IBV_SRQT_XRC,
		.pd = p->nd.pd, .xrcd = p->xrcd, .cq = cq,
	};
	struct ibv_srq *srq = rmr && smr && cq ?
			      ibv_create_srq_ex(p->nd.ctx, &sa) : NULL;
	struct ibv_qp *ini[2] = {}, *tgt[2] = {};
	struct ibv_sge sge;
	struct ibv_send_wr wr, *bad;
	struct ibv_wc wc;
	const char *what = NULL;
	int next[2] = { 0, 0 }, j, k, ret, ok, got, st;
	bool seen[2 * BURST_N] = {};
	uint32_t sn = 0;
	uint64_t slot;

	ret = srq ? ibv_get_srq_num(srq, &sn) : -1;
	for (j = 0; !ret && j < nbuf; j++)
		ret = post_srq(srq, 800 + j, rbuf + j * SLOT, rmr->lkey);
	for (k = 0; !ret && k < 2; k++) {
		tgt[k] = xrc_pair(&p->nd, p->xrcd, p->scq, false, &ini[k]);
		ret = !tgt[k];
	}
	check(!ret, "XRC SRQ %u with %d receives; two initiators, each to a target of its own",
	      sn, nbuf);
	if (ret)
		goto out;

	/* A0, B0, A1, B1, ...: message 80 + 10 * k + j from initiator k. */
	for (j = 0, ret = 0; j < BURST_N && !ret; j++) {
		for (k = 0; k < 2 && !ret; k++) {
			int m = 80 + 10 * k + j;
			char *src = sbuf + (k * BURST_N + j) * SLOT;

			fill(src, m, BURST_LEN);
			sge = (struct ibv_sge) { (uintptr_t)src, BURST_LEN,
						 smr->lkey };
			wr = (struct ibv_send_wr) {
				.wr_id = m, .sg_list = &sge, .num_sge = 1,
				.opcode = IBV_WR_SEND,
				.send_flags = IBV_SEND_SIGNALED,
				.qp_type.xrc.remote_srqn = sn,
			};
			ret = ibv_post_send(ini[k], &wr, &bad);
		}
	}
	for (j = 0, ok = 0, got = 0; !ret && j < 2 * BURST_N &&
	     wait_wc(p->scq, &wc); j++) {
		got++;
		ok += wc.status == IBV_WC_SUCCESS;
	}
	check(!ret && ok == 2 * BURST_N,
	      "%d SENDs of %d bytes posted on both at once complete (%d of %d)",
	      2 * BURST_N, BURST_LEN, ok, got);
	for (j = 0, ok = 0; !ret && j < 2 * BURST_N && !what; j++) {
		if (!wait_wc(cq, &wc)) {
			what = "no completion";
			break;
		}
		k = wc.qp_num == tgt[0]->qp_num ? 0 :
		    wc.qp_num == tgt[1]->qp_num ? 1 : -1;
		if (k < 0) {
			what = "qp_num";
			break;
		}
		/*
		 * Messages of the two may complete out of the order they
		 * took receives in; each initiator's come in its order.
		 */
		slot = wc.wr_id - 800;
		if (slot >= 2 * BURST_N || seen[slot]) {
			what = "wr_id";
			break;
		}
		seen[slot] = true;
		what = recv_wrong(&wc, wc.wr_id, 80 + 10 * k + next[k],
				  BURST_LEN, rbuf + slot * SLOT,
				  tgt[k]->qp_num, sn);
		next[k]++;
		ok += !what;
	}
	check(!ret && ok == 2 * BURST_N && next[0] == BURST_N,
	      "each lands whole in a receive of its own, in its initiator's order (%d right, %d and %d from the two; %s)",
	      ok, next[0], next[1], what ? what : "right");

	st = xsend_cq(p, ini[0], p->scq, sn, 88, SLOT + 100);
	got = wait_wc(cq, &wc);
	check(st == IBV_WC_REM_INV_REQ_ERR && got &&
	      wc.status == IBV_WC_LOC_LEN_ERR && wc.wr_id == 800 + 2 * BURST_N &&
	      wc.qp_num == tgt[0]->qp_num && wc.src_qp == sn,
	      "a SEND longer than the receive: REM_INV_REQ_ERR at the initiator (%d %s); the receive completes %s in the SRQ's CQ (wr_id %llu, qp_num %u, src_qp %u)",
	      st, wc_str(st), got ? ibv_wc_status_str(wc.status) : "never",
	      got ? (unsigned long long)wc.wr_id : 0ull, got ? wc.qp_num : 0,
	      got ? wc.src_qp : 0);
	/* The SRQ and the other target go on. */
	ret = post_srq(srq, 900, rbuf, rmr->lkey);
	st = ret ? -1 : xsend_cq(p, ini[1], p->scq, sn, 89, 64);
	what = "no completion";
	if (wait_wc(cq, &wc))
		what = recv_wrong(&wc, 900, 89, 64, rbuf, tgt[1]->qp_num, sn);
	check(st == IBV_WC_SUCCESS && !what,
	      "the other initiator's next SEND to the SRQ (%d %s): %s", st,
	      wc_str(st), what ? what : "right");
out:
	for (k = 0; k < 2; k++) {
		if (ini[k])
			ibv_destroy_qp(ini[k]);
		if (tgt[k])
			ibv_destroy_qp(tgt[k]);
	}
	if (srq)
		ibv_destroy_srq(srq);
	if (rmr)
		ibv_dereg_mr(rmr);
	if (smr)
		ibv_dereg_mr(smr);
	if (cq)
		ibv_destroy_cq(cq);
	free(rbuf);
	free(sbuf);
}

/*
 * A process of the domain killed with receives posted and one not polled:
 * the kernel's cleanup of its context takes its XRC SRQ, so a SEND to it
 * is refused, and the domain and S1 are unaffected.
 */
static void killed_child(struct par *p, const char *path)
{
	int up[2], down[2], status = 0, st, st2;
	struct ibv_qp *ik = NULL, *tk = NULL, *ik2 = NULL, *tk2 = NULL;
	uint32_t srqn = 0;
	pid_t pid;

	if (pipe(up) || pipe(down)) {
		check(0, "pipes for a second child");
		return;
	}
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		struct node nd = { .ctx = open_uzura() };
		int fd = open(path, O_RDONLY), j;
		struct ibv_xrcd *xrcd = nd.ctx && fd >= 0 ?
					open_xrcd(nd.ctx, fd, 0) : NULL;
		char *buf = aligned_alloc(SLOT, 4 * SLOT);
		struct ibv_cq *cq;
		struct ibv_srq *srq;
		struct ibv_mr *mr;
		char c;

		close(up[0]);
		close(down[1]);
		nd.pd = xrcd ? ibv_alloc_pd(nd.ctx) : NULL;
		cq = nd.pd ? ibv_create_cq(nd.ctx, 8, NULL, NULL, 0) : NULL;
		mr = cq && buf ? ibv_reg_mr(nd.pd, buf, 4 * SLOT, ACCESS) : NULL;
		srq = mr ? xrc_srq(nd.ctx, nd.pd, xrcd, cq, SRQ_ALL) : NULL;
		if (!srq || ibv_get_srq_num(srq, &srqn))
			srqn = 0;
		for (j = 0; srqn && j < 4; j++)
			if (post_srq(srq, j, buf + j * SLOT, mr->lkey))
				srqn = 0;
		if (!pipe_write(up[1], &srqn, sizeof(srqn)))
			_exit(1);
		/* Until killed; not forever if the parent is gone. */
		pipe_read(down[0], &c, 1);
		_exit(1);
	}
	close(up[1]);
	close(down[0]);
	tk = pid > 0 && pipe_read(up[0], &srqn, sizeof(srqn)) && srqn ?
	     xrc_pair(&p->nd, p->xrcd, p->scq, false, &ik) : NULL;
	st = tk ? xsend(p, ik, srqn, 60, 500) : -1;
	check(st == IBV_WC_SUCCESS,
	      "a second child's XRC SRQ %u with receives: a SEND to it (%d %s)",
	      srqn, st, wc_str(st));
	if (pid > 0) {
		kill(pid, SIGKILL);
		status = reap(pid);
	}
	st = tk ? xsend(p, ik, srqn, 61, 500) : -1;
	tk2 = xrc_pair(&p->nd, p->xrcd, p->scq, false, &ik2);
	st2 = tk2 ? xsend(p, ik2, p->s1n, 62, 600) : -1;
	check(status >= 0 && WIFSIGNALED(status) &&
	      st == IBV_WC_REM_INV_REQ_ERR && st2 == IBV_WC_SUCCESS,
	      "the child killed (status 0x%x): a SEND to its SRQ is REM_INV_REQ_ERR (%d %s), a fresh pair's SEND to S1 goes (%d %s)",
	      status, st, wc_str(st), st2, wc_str(st2));
	if (st2 == IBV_WC_SUCCESS)
		s1_expect(p, 62, 600, tk2->qp_num, "after the kill");
	close(up[0]);
	close(down[1]);
	if (ik)
		ibv_destroy_qp(ik);
	if (tk)
		ibv_destroy_qp(tk);
	if (ik2)
		ibv_destroy_qp(ik2);
	if (tk2)
		ibv_destroy_qp(tk2);
}

/*
 * Read the async fd (up to 10 events, 5 s each) until an event of @type
 * for @obj, a QP or an SRQ: true if it came.
 */
static bool got_event(struct ibv_context *ctx, enum ibv_event_type type,
		      const void *obj)
{
	struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };
	struct ibv_async_event ev;
	bool found = false;
	int i;

	/* The async fd blocks: read it only once poll says so. */
	for (i = 0; i < 10 && !found && poll(&pfd, 1, 5000) == 1; i++) {
		if (ibv_get_async_event(ctx, &ev))
			break;
		found = ev.event_type == type &&
			(type == IBV_EVENT_SRQ_LIMIT_REACHED ?
			 (const void *)ev.element.srq :
			 (const void *)ev.element.qp) == obj;
		ibv_ack_async_event(&ev);
	}
	return found;
}

/* The next completion of @cq, waiting up to 5 s: 0, or ENOENT, or an error. */
static int wait_ex(struct ibv_cq_ex *cq)
{
	struct ibv_poll_cq_attr pa = {};
	int i, ret = ibv_start_poll(cq, &pa);

	for (i = 0; i < 500 && ret == ENOENT; i++) {
		usleep(10000);
		ret = ibv_start_poll(cq, &pa);
	}
	return ret;
}

/*
 * What the initiator's software does besides plain SENDs: an XRC_SEND QP
 * created with a receive CQ and receive caps (not used, not held), inline
 * SENDs with immediate through both post APIs to an XRC SRQ whose CQ is
 * an ibv_cq_ex, the SRQ's limit event, and atomics through the SRQ.
 */
static void more_ops(struct par *p)
{
	struct ibv_cq_init_attr_ex ca = {
		.cqe = 8,
		.wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_QP_NUM |
			    IBV_WC_EX_WITH_SRC_QP | IBV_WC_EX_WITH_IMM,
	};
	struct ibv_cq_ex *cx = ibv_create_cq_ex(p->nd.ctx, &ca);
	struct ibv_cq *rcq = ibv_create_cq(p->nd.ctx, 4, NULL, NULL, 0);
	struct ibv_srq_init_attr ba = { .attr = { .max_wr = 4, .max_sge = 1 } };
	struct ibv_srq *basic = ibv_create_srq(p->nd.pd, &ba);
	char *buf = aligned_alloc(SLOT, 5 * SLOT), *word = buf + 4 * SLOT;
	struct ibv_mr *mr = buf ? ibv_reg_mr(p->nd.pd, buf, 5 * SLOT, ACCESS) :
				  NULL;
	struct ibv_srq *srq = NULL;
	struct ibv_qp_init_attr_ex ia = {
		.send_cq = p->scq, .recv_cq = rcq, .srq = basic,
		.qp_type = IBV_QPT_XRC_SEND,
		.cap = { .max_send_wr = 8, .max_send_sge = 1,
			 .max_recv_wr = 4, .max_recv_sge = 1,
			 .max_inline_data = 128 },
		.comp_mask = IBV_QP_INIT_ATTR_PD |
			     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = p->nd.pd,
		.send_ops_flags = IBV_QP_EX_WITH_SEND |
				  IBV_QP_EX_WITH_SEND_WITH_IMM |
				  IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD |
				  IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP,
	};
	struct ibv_srq_attr sa = { .srq_limit = 2 };
	uint64_t *res = (uint64_t *)(p->sbuf + MSGS * SLOT);
	struct ibv_qp *i7 = NULL, *t7 = NULL;
	struct ibv_send_wr wr, *bad;
	struct ibv_qp_ex *qx;
	struct ibv_sge sge;
	struct ibv_wc wc;
	char data[128];
	uint32_t sn = 0;
	int j, ret, st, got, err;
	bool right;

	srq = cx && mr ? xrc_srq(p->nd.ctx, p->nd.pd, p->xrcd,
				 ibv_cq_ex_to_cq(cx), SRQ_ALL) : NULL;
	ret = srq ? ibv_get_srq_num(srq, &sn) : -1;
	for (j = 0; !ret && j < 4; j++)
		ret = post_srq(srq, 700 + j, buf + j * SLOT, mr->lkey);
	ret = ret ? ret : ibv_modify_srq(srq, &sa, IBV_SRQ_LIMIT);
	check(!ret, "XRC SRQ %u with an ibv_cq_ex, 4 receives, limit 2 (%d)",
	      sn, ret);
	errno = 0;
	i7 = basic ? ibv_create_qp_ex(p->nd.ctx, &ia) : NULL;
	err = errno;
	check(!i7 && err == EINVAL,
	      "XRC_SEND QP given an SRQ: EINVAL (ib_core) (errno %d %s)", err,
	      strerror(err));
	if (i7)
		ibv_destroy_qp(i7);
	ia.srq = NULL;
	errno = 0;
	i7 = rcq && !ret ? ibv_create_qp_ex(p->nd.ctx, &ia) : NULL;
	err = errno;
	check(i7 && !i7->recv_cq && !i7->srq,
	      "XRC_SEND QP (create_qp_ex) given a receive CQ and receive caps: created, its recv_cq and srq NULL (errno %d %s)",
	      err, strerror(err));
	if (!i7)
		goto out;
	ret = ibv_destroy_cq(rcq);
	check(!ret, "destroy_cq of that receive CQ: the QP does not hold it (%d)",
	      ret);
	if (!ret)
		rcq = NULL;
	t7 = xrc_tgt(&p->nd, p->xrcd);
	ret = t7 ? xrc_connect(&p->nd, t7, i7->qp_num) ||
		   xrc_connect(&p->nd, i7, t7->qp_num) : -1;
	check(!ret, "connected to a target QP");
	if (ret)
		goto out;

	/* An inline SEND with immediate: ibv_post_send. */
	for (j = 0; j < (int)sizeof(data); j++)
		data[j] = pattern(70, j);
	sge = (struct ibv_sge) { (uintptr_t)data, 48, 0 };
	wr = (struct ibv_send_wr) {
		.wr_id = 70, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_SEND_WITH_IMM, .imm_data = htobe32(0x7000),
		.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE,
		.qp_type.xrc.remote_srqn = sn,
	};
	ret = ibv_post_send(i7, &wr, &bad);
	memset(data, 0, sizeof(data));
	st = !ret && wait_wc(p->scq, &wc) && wc.wr_id == 70 ? (int)wc.status :
							    -1;
	ret = ret ? ret : wait_ex(cx);
	right = !ret && cx->wr_id == 700 && cx->status == IBV_WC_SUCCESS &&
		ibv_wc_read_opcode(cx) == IBV_WC_RECV &&
		ibv_wc_read_byte_len(cx) == 48 &&
		ibv_wc_read_qp_num(cx) == t7->qp_num &&
		ibv_wc_read_src_qp(cx) == sn &&
		(ibv_wc_read_wc_flags(cx) & IBV_WC_WITH_IMM) &&
		ibv_wc_read_imm_data(cx) == htobe32(0x7000) &&
		wrong_at(buf, 70, 48) < 0;
	if (!ret)
		ibv_end_poll(cx);
	check(st == IBV_WC_SUCCESS && right,
	      "an inline SEND with immediate (post_send, %d %s): ibv_cq_ex reads wr_id, byte_len, qp_num T, src_qp the SRQ, the immediate; the data lands",
	      st, wc_str(st));

	/* Inline with ibv_wr_*, the SRQ named after the data. */
	for (j = 0; j < (int)sizeof(data); j++)
		data[j] = pattern(71, j);
	qx = ibv_qp_to_qp_ex(i7);
	ibv_wr_start(qx);
	qx->wr_id = 71;
	qx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send_imm(qx, htobe32(0x7100));
	ibv_wr_set_inline_data(qx, data, 100);
	ibv_wr_set_xrc_srqn(qx, sn);
	ret = ibv_wr_complete(qx);
	memset(data, 0, sizeof(data));
	st = !ret && wait_wc(p->scq, &wc) && wc.wr_id == 71 ? (int)wc.status :
							    -1;
	ret = ret ? ret : wait_ex(cx);
	right = !ret && cx->wr_id == 701 && cx->status == IBV_WC_SUCCESS &&
		ibv_wc_read_byte_len(cx) == 100 &&
		ibv_wc_read_qp_num(cx) == t7->qp_num &&
		ibv_wc_read_src_qp(cx) == sn &&
		ibv_wc_read_imm_data(cx) == htobe32(0x7100) &&
		wrong_at(buf + SLOT, 71, 100) < 0;
	if (!ret)
		ibv_end_poll(cx);
	check(st == IBV_WC_SUCCESS && right,
	      "an inline SEND with immediate (ibv_wr_set_inline_data, then ibv_wr_set_xrc_srqn; %d %s) lands, read by ibv_cq_ex",
	      st, wc_str(st));

	/* The third receive taken leaves one, under the limit of 2. */
	st = xsend(p, i7, sn, 72, 64);
	ret = wait_ex(cx);
	if (!ret)
		ibv_end_poll(cx);
	check(st == IBV_WC_SUCCESS && !ret && got_event(p->nd.ctx, IBV_EVENT_SRQ_LIMIT_REACHED, srq),
	      "a third SEND (%d %s) leaves 1 receive: IBV_EVENT_SRQ_LIMIT_REACHED for the XRC SRQ",
	      st, wc_str(st));

	/* Atomics through the SRQ (its PD's MR). */
	*(uint64_t *)word = 1000;
	res[0] = res[1] = 0;
	ibv_wr_start(qx);
	qx->wr_id = 73;
	qx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_atomic_fetch_add(qx, mr->rkey, (uintptr_t)word, 5);
	ibv_wr_set_xrc_srqn(qx, sn);
	ibv_wr_set_sge(qx, p->smr->lkey, (uintptr_t)&res[0], 8);
	qx->wr_id = 74;
	ibv_wr_atomic_cmp_swp(qx, mr->rkey, (uintptr_t)word, 1005, 77);
	ibv_wr_set_xrc_srqn(qx, sn);
	ibv_wr_set_sge(qx, p->smr->lkey, (uintptr_t)&res[1], 8);
	ret = ibv_wr_complete(qx);
	for (j = 0, got = 0; !ret && j < 2 && wait_wc(p->scq, &wc); j++)
		got += wc.status == IBV_WC_SUCCESS &&
		       wc.wr_id == (uint64_t)(73 + j);
	check(got == 2 && res[0] == 1000 && res[1] == 1005 &&
	      *(uint64_t *)word == 77,
	      "FETCH_ADD and CMP_SWP through the SRQ: old values %llu, %llu, now %llu (%d of 2 complete)",
	      (unsigned long long)res[0], (unsigned long long)res[1],
	      (unsigned long long)*(uint64_t *)word, got);
out:
	if (i7)
		ibv_destroy_qp(i7);
	if (t7)
		ibv_destroy_qp(t7);
	if (srq)
		ibv_destroy_srq(srq);
	if (mr)
		ibv_dereg_mr(mr);
	if (rcq)
		ibv_destroy_cq(rcq);
	if (basic)
		ibv_destroy_srq(basic);
	if (cx)
		ibv_destroy_cq(ibv_cq_ex_to_cq(cx));
	free(buf);
}

int main(void)
{
	const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	struct par p = {};
	struct ibv_qp *ini = NULL, *t = NULL, *i2 = NULL, *t2 = NULL;
	struct ibv_qp *ic = NULL;
	int down[2], up[2], fd, status, st, ret, j;
	char path[256];

	signal(SIGPIPE, SIG_IGN);
	snprintf(path, sizeof(path), "%s/xrc-test.XXXXXX", dir);
	fd = mkstemp(path);
	if (fd < 0 || pipe(down) || pipe(up)) {
		printf("Bail out! no temp file or pipes\n");
		return 1;
	}
	/* Before any verbs: the child opens a context of its own. */
	fflush(stdout);
	p.pid = fork();
	if (p.pid == 0) {
		close(down[1]);
		close(up[0]);
		child(path, down[0], up[1]);
	}
	close(down[0]);
	close(up[1]);
	p.down = down[1];
	p.up = up[0];

	p.nd.ctx = open_uzura();
	p.nd.pd = p.nd.ctx ? ibv_alloc_pd(p.nd.ctx) : NULL;
	p.nd.gidx = p.nd.ctx ? ipv4_gid_index(p.nd.ctx) : -1;
	check(p.nd.pd && p.nd.gidx >= 0 && p.pid > 0,
	      "uzura0: a PD, the IPv4 GID (index %d); a child process",
	      p.nd.gidx);
	if (!p.nd.pd || p.nd.gidx < 0 || p.pid < 0) {
		printf("Bail out! no device\n");
		if (p.pid > 0)
			kill(p.pid, SIGKILL);
		unlink(path);
		return 1;
	}
	check_caps(&p.nd);

	errno = 0;
	p.xrcd = open_xrcd(p.nd.ctx, fd, O_CREAT);
	check(p.xrcd != NULL, "open_xrcd of a temp file with O_CREAT (errno %d)",
	      errno);
	p.scq = ibv_create_cq(p.nd.ctx, 64, NULL, NULL, 0);
	p.rcq = ibv_create_cq(p.nd.ctx, 64, NULL, NULL, 0);
	p.sbuf = aligned_alloc(SLOT, (MSGS + 2) * SLOT);
	p.rbuf = aligned_alloc(SLOT, NRECV * SLOT);
	p.smr = p.sbuf ? ibv_reg_mr(p.nd.pd, p.sbuf, (MSGS + 2) * SLOT,
				    ACCESS) : NULL;
	p.rmr = p.rbuf ? ibv_reg_mr(p.nd.pd, p.rbuf, NRECV * SLOT, ACCESS) :
			 NULL;
	p.s1 = p.xrcd && p.rcq ? xrc_srq(p.nd.ctx, p.nd.pd, p.xrcd, p.rcq,
					 SRQ_ALL) : NULL;
	ret = p.s1 ? ibv_get_srq_num(p.s1, &p.s1n) : -1;
	for (j = 0; !ret && p.rmr && j < NRECV; j++)
		ret = s1_post(&p);
	check(p.s1 && p.smr && p.rmr && !ret,
	      "XRC SRQ S1 %u with its own CQ, %d receives posted", p.s1n,
	      NRECV);
	t = p.s1 && p.scq ? xrc_pair(&p.nd, p.xrcd, p.scq, true, &ini) : NULL;
	check(t && ini,
	      "target QP T %u (create_qp_ex, XRC_RECV) and initiator I %u (create_qp_ex, XRC_SEND) connected to each other, in RTS",
	      t ? t->qp_num : 0, ini ? ini->qp_num : 0);
	if (!t || !p.s1 || !p.smr || !p.rmr) {
		printf("Bail out! no XRC set-up\n");
		kill(p.pid, SIGKILL);
		unlink(path);
		return 1;
	}

	two_processes(&p, ini, t);
	close(p.down);
	status = reap(p.pid);
	check(status >= 0 && WIFEXITED(status) && !WEXITSTATUS(status),
	      "the child exits 0 (status 0x%x)", status);
	close(p.up);

	/* S2 went with the child; T (which answers) and the domain stay. */
	st = xsend(&p, ini, p.s2n, 40, 64);
	check(st == IBV_WC_REM_INV_REQ_ERR,
	      "after the child's exit, a SEND to S2 %u: REM_INV_REQ_ERR at the initiator (%d %s)",
	      p.s2n, st, wc_str(st));
	check(cq_empty(p.rcq), "... and nothing in S1's CQ");
	check(got_event(p.nd.ctx, IBV_EVENT_QP_REQ_ERR, t),
	      "the parent's async fd: IBV_EVENT_QP_REQ_ERR for T");
	t2 = xrc_pair(&p.nd, p.xrcd, p.scq, true, &i2);
	check(t2 != NULL, "a fresh pair: target %u, initiator %u",
	      t2 ? t2->qp_num : 0, i2 ? i2->qp_num : 0);
	if (t2) {
		st = xsend(&p, i2, p.s1n, 41, 2000);
		check(st == IBV_WC_SUCCESS,
		      "it carries a SEND to S1 (%d %s)", st, wc_str(st));
		s1_expect(&p, 41, 2000, t2->qp_num, "the fresh pair");

		bad_posts(&p, i2, t2);
	}

	/* The child's target QP outlives the child: the parent has it open. */
	ic = p.tc ? xrc_ini(&p.nd, p.scq, false) : NULL;
	ret = ic ? xrc_connect(&p.nd, p.tc, ic->qp_num) ||
		   xrc_connect(&p.nd, ic, p.tc->qp_num) : -1;
	st = ret ? -1 : xsend(&p, ic, p.s1n, 42, 900);
	check(st == IBV_WC_SUCCESS,
	      "the child's target QP, its maker gone, connected through the parent's handle to a new initiator: a SEND to S1 (%d %s)",
	      st, wc_str(st));
	if (!ret)
		s1_expect(&p, 42, 900, p.tc->qp_num, "the child's target QP");
	bad_srqs(&p);
	if (t2)
		other_domain(&p, i2, t2, dir);
	other_pd(&p);
	srq_life(&p);
	shared_cq(&p);
	more_ops(&p);
	two_targets(&p);
	killed_child(&p, path);

	/* Teardown: the shared domain goes last. */
	ret = ibv_destroy_qp(ini) || ibv_destroy_qp(t) ||
	      (i2 && ibv_destroy_qp(i2)) || (t2 && ibv_destroy_qp(t2)) ||
	      (ic && ibv_destroy_qp(ic)) || (p.tc && ibv_destroy_qp(p.tc));
	check(!ret, "destroy_qp of the initiators, the targets, the handle on the child's target");
	ret = ibv_destroy_srq(p.s1) || ibv_destroy_cq(p.rcq) ||
	      ibv_destroy_cq(p.scq) || ibv_dereg_mr(p.smr) ||
	      ibv_dereg_mr(p.rmr);
	check(!ret, "destroy_srq of S1, its CQ, the send CQ, the MRs");
	ret = ibv_close_xrcd(p.xrcd);
	check(!ret, "close_xrcd of the shared domain at the end (%d)", ret);
	ret = ibv_dealloc_pd(p.nd.pd) || ibv_close_device(p.nd.ctx);
	check(!ret, "dealloc_pd, close_device");
	unlink(path);
	close(fd);
	free(p.sbuf);
	free(p.rbuf);
	printf("1..%d\n", n);
	return fails ? 1 : 0;
}
