// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * crw-test: Conditional RDMA Write through uzuradv between two nodes.
 *
 *   node 2:  crw-test [-d DEV] [-g GIDX] [-p PORT]          (server)
 *   node 1:  crw-test [-d DEV] [-g GIDX] [-p PORT] SERVER   (client)
 *
 * The client is the data source: it posts CRWs.  The server is the
 * target: it offers buffers with STCRWs and receives the writes (RDMA
 * WRITE with immediate, consuming receive WQEs).  They exchange QPN, GID,
 * PSN and the buffer's rkey over TCP, as ibv_rc_pingpong does, and then
 * go through the cases in lock step over the same socket: the client
 * sends a command, the server offers, answers, and reports what its
 * completions and buffers showed.  The client prints TAP for both sides
 * and exits 0 only if every check passed.
 *
 * Cases: both arrival orders (CRW first: the client knows its CRW is
 * parked once a later signalled WQE completed; STCRW first: the server's
 * STCRW completes once the client's NIC holds the offer) for sizes 0 to
 * 1 MiB; several tags in flight, matched out of posting order; more CRWs
 * than the SQ has slots, half unsignalled (the provider frees CRW slots
 * by the CRW completion count and hides unsignalled completions);
 * uzuradv argument errors; the NIC's crw_* counters when the driver
 * exports them; and last a duplicate tag, which fails the CRW with
 * LOC_QP_OP_ERR / vendor_err UZ_VERR_CRW_DUP_TAG (0x11) and flushes the
 * parked one.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/uzuradv.h>
#include <infiniband/verbs.h>

#include "tap.h"

#define GUARD		64
#define MAX_SIZE	(1u << 20)
#define SLOTS		4
#define SLOT_STRIDE	(MAX_SIZE + 2 * GUARD)
#define SQ_DEPTH	16
#define RQ_DEPTH	64
#define WAIT_MS		60000
#define VERR_DUP_TAG	0x11	/* UZ_VERR_CRW_DUP_TAG, device-spec 8.5 */
#define MARKER_WR_ID	0xfeedull

static void bail(const char *what)
{
	printf("Bail out! %s\n", what);
	fflush(stdout);
	exit(1);
}

static uint8_t pattern(uint64_t tag, uint32_t i)
{
	return (uint8_t)(tag * 131 + i * 7 + (i >> 8));
}

/* ---- the verbs side ---- */

struct node {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *scq, *rcq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;
	size_t buf_len;
	int gidx;
	union ibv_gid gid;
	enum ibv_mtu mtu;
	unsigned int rq_posted;
};

/* What the peers exchange at start. */
struct conn {
	uint32_t qpn;
	uint32_t psn;
	uint8_t gid[16];
	uint64_t addr;
	uint32_t rkey;
	uint32_t reserved;
};

static struct ibv_context *open_dev(const char *name)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	int i, num;

	list = ibv_get_device_list(&num);
	for (i = 0; list && i < num && !ctx; i++) {
		if (name ? strcmp(ibv_get_device_name(list[i]), name) :
			   !uzuradv_is_supported(list[i]))
			continue;
		ctx = ibv_open_device(list[i]);
	}
	if (list)
		ibv_free_device_list(list);
	return ctx;
}

/* The port's RoCE v2 GID of an IPv4 address, or -1. */
static int roce_v2_ipv4_gid(struct ibv_context *ctx)
{
	struct ibv_gid_entry e;
	int i;

	for (i = 0; i < 32; i++)
		if (!ibv_query_gid_ex(ctx, 1, i, &e, 0) &&
		    e.gid_type == IBV_GID_TYPE_ROCE_V2 &&
		    !e.gid.global.subnet_prefix && e.gid.raw[10] == 0xff &&
		    e.gid.raw[11] == 0xff)
			return i;
	return -1;
}

static struct ibv_qp *make_qp(struct node *nd, enum ibv_qp_type type,
			      uint32_t send_wr, uint32_t recv_wr)
{
	struct ibv_qp_init_attr a = {
		.send_cq = nd->scq,
		.recv_cq = nd->rcq,
		.qp_type = type,
		.cap = {
			.max_send_wr = send_wr,
			.max_recv_wr = recv_wr,
			.max_send_sge = 4,
			.max_recv_sge = 1,
			.max_inline_data = 64,
		},
	};

	return ibv_create_qp(nd->pd, &a);
}

static int to_init(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.port_num = 1,
		.qp_access_flags = IBV_ACCESS_LOCAL_WRITE |
				   IBV_ACCESS_REMOTE_WRITE,
	};

	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			     IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

static int to_rts(struct node *nd, const struct conn *local,
		  const struct conn *remote)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR,
		.path_mtu = nd->mtu,
		.dest_qp_num = remote->qpn,
		.rq_psn = remote->psn,
		.max_dest_rd_atomic = 1,
		.min_rnr_timer = 12,
		.ah_attr = {
			.is_global = 1,
			.port_num = 1,
			.grh = { .sgid_index = nd->gidx, .hop_limit = 64 },
		},
	};
	int ret;

	memcpy(a.ah_attr.grh.dgid.raw, remote->gid, 16);
	ret = ibv_modify_qp(nd->qp, &a, IBV_QP_STATE | IBV_QP_AV |
			    IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			    IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
			    IBV_QP_MIN_RNR_TIMER);
	if (ret)
		return ret;
	a = (struct ibv_qp_attr) {
		.qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 7,
		.rnr_retry = 7, .sq_psn = local->psn, .max_rd_atomic = 1,
	};
	return ibv_modify_qp(nd->qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
			     IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			     IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

static void setup(struct node *nd, const char *dev, int gidx)
{
	struct ibv_port_attr pa;

	nd->ctx = open_dev(dev);
	if (!nd->ctx)
		bail("no uzura device");
	nd->gidx = gidx >= 0 ? gidx : roce_v2_ipv4_gid(nd->ctx);
	if (nd->gidx < 0 || ibv_query_gid(nd->ctx, 1, nd->gidx, &nd->gid) ||
	    ibv_query_port(nd->ctx, 1, &pa))
		bail("no RoCE v2 GID of an IPv4 address on port 1");
	nd->mtu = pa.active_mtu;
	nd->pd = ibv_alloc_pd(nd->ctx);
	nd->scq = nd->pd ? ibv_create_cq(nd->ctx, 256, NULL, NULL, 0) : NULL;
	nd->rcq = nd->scq ? ibv_create_cq(nd->ctx, 256, NULL, NULL, 0) : NULL;
	nd->buf_len = (size_t)SLOTS * SLOT_STRIDE;
	nd->buf = aligned_alloc(4096, nd->buf_len);
	if (!nd->rcq || !nd->buf)
		bail("cannot create PD, CQs or buffer");
	memset(nd->buf, 0, nd->buf_len);
	nd->mr = ibv_reg_mr(nd->pd, nd->buf, nd->buf_len,
			    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	nd->qp = nd->mr ? make_qp(nd, IBV_QPT_RC, SQ_DEPTH, RQ_DEPTH) : NULL;
	if (!nd->qp || to_init(nd->qp))
		bail("cannot register the buffer or create the RC QP");
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Poll one completion; false on timeout. */
static bool poll_one(struct ibv_cq *cq, struct ibv_wc *wc, unsigned int ms)
{
	uint64_t end = now_ms() + ms;
	int got;

	do {
		got = ibv_poll_cq(cq, 1, wc);
		if (got > 0)
			return true;
		if (got < 0)
			return false;
		usleep(200);
	} while (now_ms() < end);
	return false;
}

static int post_recvs(struct node *nd, unsigned int count)
{
	struct ibv_recv_wr wr = { .num_sge = 0 }, *bad;
	unsigned int i;
	int ret;

	for (i = 0; i < count; i++) {
		wr.wr_id = nd->rq_posted++;
		ret = ibv_post_recv(nd->qp, &wr, &bad);
		if (ret)
			return ret;
	}
	return 0;
}

/* ---- the socket ---- */

static void xwrite(int fd, const void *p, size_t len)
{
	const char *c = p;
	ssize_t w;

	while (len) {
		w = write(fd, c, len);
		if (w <= 0)
			bail("peer socket write failed");
		c += w;
		len -= w;
	}
}

static void xread(int fd, void *p, size_t len)
{
	char *c = p;
	ssize_t r;

	while (len) {
		r = read(fd, c, len);
		if (r <= 0)
			bail("peer socket closed");
		c += r;
		len -= r;
	}
}

static int tcp_listen_accept(int port)
{
	struct sockaddr_in sa = {
		.sin_family = AF_INET, .sin_port = htons(port),
		.sin_addr.s_addr = htonl(INADDR_ANY),
	};
	int one = 1, ls, fd;

	ls = socket(AF_INET, SOCK_STREAM, 0);
	if (ls < 0 || setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one,
				 sizeof(one)) ||
	    bind(ls, (struct sockaddr *)&sa, sizeof(sa)) || listen(ls, 1))
		bail("cannot listen");
	fd = accept(ls, NULL, NULL);
	close(ls);
	if (fd < 0)
		bail("accept failed");
	return fd;
}

static int tcp_connect(const char *host, int port)
{
	struct addrinfo hints = { .ai_family = AF_INET,
				  .ai_socktype = SOCK_STREAM };
	struct addrinfo *res;
	char ports[16];
	int fd = -1, tries;

	snprintf(ports, sizeof(ports), "%d", port);
	if (getaddrinfo(host, ports, &hints, &res))
		bail("cannot resolve the server");
	for (tries = 0; tries < 100; tries++) {
		fd = socket(AF_INET, SOCK_STREAM, 0);
		if (fd >= 0 && !connect(fd, res->ai_addr, res->ai_addrlen))
			break;
		if (fd >= 0)
			close(fd);
		fd = -1;
		usleep(100000);
	}
	freeaddrinfo(res);
	if (fd < 0)
		bail("cannot connect to the server");
	return fd;
}

/* ---- the lock-step protocol ---- */

enum { OP_OFFER = 1, OP_DONE };

struct item {
	uint64_t tag;
	uint32_t size;
	uint32_t slot;
};

/* Offer items (in this order), then verify the expected writes. */
struct cmd {
	uint32_t op;
	uint32_t n_offer;
	uint32_t n_expect;
	uint32_t reserved;
	struct item offer[SLOTS];
	struct item expect[SLOTS];
};

/* What the target saw: one entry per write, in completion order. */
struct seen {
	uint64_t tag;			/* of the expected item matched by imm */
	int32_t status;
	uint32_t opcode;
	uint32_t byte_len;
	uint32_t imm;			/* host order */
	uint32_t with_imm;
	uint32_t data_ok;
	uint32_t guard_ok;
	uint32_t reserved;
};

struct report {
	int32_t stcrw_status;		/* the worst of the STCRW completions */
	uint32_t stcrw_opcode_ok;
	uint32_t n_seen;
	uint32_t reserved;
	struct seen seen[SLOTS];
};

static uint8_t *target(struct node *nd, uint32_t slot)
{
	return nd->buf + (size_t)slot * SLOT_STRIDE + GUARD;
}

/* Guards of 0xa5 around the target area, which holds ~pattern. */
static void prepare_slot(struct node *nd, const struct item *it)
{
	uint8_t *t = target(nd, it->slot);
	uint32_t i;

	memset(t - GUARD, 0xa5, GUARD);
	memset(t + it->size, 0xa5, GUARD);
	for (i = 0; i < it->size; i++)
		t[i] = ~pattern(it->tag, i);
}

static void verify_slot(struct node *nd, const struct item *it,
			struct seen *s)
{
	uint8_t *t = target(nd, it->slot);
	uint32_t i;

	s->data_ok = 1;
	s->guard_ok = 1;
	for (i = 0; i < it->size && s->data_ok; i++)
		s->data_ok = t[i] == pattern(it->tag, i);
	for (i = 0; i < GUARD; i++)
		if (t[-1 - (int)i] != 0xa5 || t[it->size + i] != 0xa5)
			s->guard_ok = 0;
}

static void server_offer(struct node *nd, int fd, const struct cmd *c)
{
	struct report r = { .stcrw_opcode_ok = 1 };
	struct ibv_wc wc;
	uint32_t i, k;
	int ret;

	for (i = 0; i < c->n_offer; i++) {
		const struct item *it = &c->offer[i];
		struct uzuradv_stcrw_wr wr = {
			.wr_id = it->tag,
			.tag = it->tag,
			.addr = (uintptr_t)target(nd, it->slot),
			.rkey = nd->mr->rkey,
			.length = it->size,
			.send_flags = IBV_SEND_SIGNALED,
		};

		prepare_slot(nd, it);
		ret = uzuradv_post_stcrw(nd->qp, &wr);
		if (ret) {
			fprintf(stderr, "server: post_stcrw: %s\n",
				strerror(ret));
			r.stcrw_status = -1;
		}
	}
	for (i = 0; i < c->n_offer && r.stcrw_status >= 0; i++) {
		if (!poll_one(nd->scq, &wc, WAIT_MS)) {
			r.stcrw_status = -2;
			break;
		}
		if (wc.status)
			r.stcrw_status = wc.status;
		if (wc.opcode != UZURADV_WC_STCRW)
			r.stcrw_opcode_ok = 0;
	}
	/* The offers are in place: the client may go on. */
	xwrite(fd, &r.stcrw_status, sizeof(r.stcrw_status));

	for (k = 0; k < c->n_expect; k++) {
		struct seen *s = &r.seen[k];

		if (!poll_one(nd->rcq, &wc, WAIT_MS)) {
			fprintf(stderr, "server: no write completion\n");
			break;
		}
		r.n_seen++;
		s->status = wc.status;
		s->opcode = wc.opcode;
		s->byte_len = wc.byte_len;
		s->with_imm = !!(wc.wc_flags & IBV_WC_WITH_IMM);
		s->imm = be32toh(wc.imm_data);
		post_recvs(nd, 1);
		for (i = 0; i < c->n_expect; i++) {
			const struct item *it = &c->expect[i];

			if ((uint32_t)it->tag == s->imm) {
				s->tag = it->tag;
				verify_slot(nd, it, s);
				break;
			}
		}
	}
	xwrite(fd, &r, sizeof(r));
}

static int run_server(struct node *nd, int port)
{
	struct conn local = {}, remote;
	struct cmd c;
	int fd;

	local.qpn = nd->qp->qp_num;
	local.psn = 0x2000;
	memcpy(local.gid, nd->gid.raw, 16);
	local.addr = (uintptr_t)nd->buf;
	local.rkey = nd->mr->rkey;
	if (post_recvs(nd, RQ_DEPTH))
		bail("server: cannot post receives");
	fd = tcp_listen_accept(port);
	xread(fd, &remote, sizeof(remote));
	xwrite(fd, &local, sizeof(local));
	if (to_rts(nd, &local, &remote))
		bail("server: cannot bring the QP to RTS");
	for (;;) {
		xread(fd, &c, sizeof(c));
		if (c.op == OP_DONE)
			break;
		if (c.op != OP_OFFER || c.n_offer > SLOTS ||
		    c.n_expect > SLOTS)
			bail("server: bad command");
		server_offer(nd, fd, &c);
	}
	xwrite(fd, &c.op, sizeof(c.op));
	close(fd);
	return 0;
}

/* ---- the client: the cases ---- */

struct client {
	struct node nd;
	int fd;
	struct conn remote;
	uint32_t depth;			/* the SQ's, as created */
	struct ibv_wc stash[SLOTS];	/* completions polled by fence_marker */
	uint32_t n_stash;
};

/* The next send completion: one fence_marker put aside, or a new one. */
static bool next_wc(struct client *cl, struct ibv_wc *wc)
{
	if (cl->n_stash) {
		*wc = cl->stash[0];
		memmove(cl->stash, cl->stash + 1,
			--cl->n_stash * sizeof(cl->stash[0]));
		return true;
	}
	return poll_one(cl->nd.scq, wc, WAIT_MS);
}

static uint8_t *source(struct node *nd, uint32_t slot)
{
	return nd->buf + (size_t)slot * SLOT_STRIDE;
}

static int post_crw(struct client *cl, const struct item *it, bool signaled,
		    bool inl)
{
	uint8_t *src = source(&cl->nd, it->slot);
	struct ibv_sge sge = {
		.addr = (uintptr_t)src, .length = it->size,
		.lkey = cl->nd.mr->lkey,
	};
	struct uzuradv_crw_wr wr = {
		.wr_id = it->tag,
		.tag = it->tag,
		.sg_list = &sge,
		.num_sge = it->size ? 1 : 0,
		.send_flags = (signaled ? IBV_SEND_SIGNALED : 0) |
			      (inl ? IBV_SEND_INLINE : 0),
	};
	uint32_t i;

	for (i = 0; i < it->size; i++)
		src[i] = pattern(it->tag, i);
	return uzuradv_post_crw(cl->nd.qp, &wr);
}

/*
 * A signalled zero-length RDMA WRITE behind the CRWs: the SQ runs in
 * order, so once it completes, every CRW before it is parked (or matched).
 * CRW completions that come first are kept for next_wc.
 */
static bool fence_marker(struct client *cl)
{
	struct ibv_send_wr wr = {
		.wr_id = MARKER_WR_ID, .opcode = IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = cl->remote.addr,
			     .rkey = cl->remote.rkey },
	}, *bad;
	struct ibv_wc wc;

	if (ibv_post_send(cl->nd.qp, &wr, &bad))
		return false;
	while (poll_one(cl->nd.scq, &wc, WAIT_MS)) {
		if (wc.wr_id == MARKER_WR_ID)
			return !wc.status;
		if (cl->n_stash == SLOTS)
			return false;
		cl->stash[cl->n_stash++] = wc;
	}
	return false;
}

static int32_t send_offer(struct client *cl, const struct item *offer,
			  uint32_t n_offer, const struct item *expect,
			  uint32_t n_expect)
{
	struct cmd c = { .op = OP_OFFER, .n_offer = n_offer,
			 .n_expect = n_expect };
	int32_t st;

	memcpy(c.offer, offer, n_offer * sizeof(*offer));
	memcpy(c.expect, expect, n_expect * sizeof(*expect));
	xwrite(cl->fd, &c, sizeof(c));
	xread(cl->fd, &st, sizeof(st));
	return st;
}

/* Collect n CRW completions of the client, in order. */
static uint32_t crw_completions(struct client *cl, struct ibv_wc *wc,
				uint32_t n_wc)
{
	uint32_t got;

	for (got = 0; got < n_wc; got++)
		if (!next_wc(cl, &wc[got]))
			break;
	return got;
}

static bool seen_ok(const struct seen *s, const struct item *it)
{
	return s->status == IBV_WC_SUCCESS &&
	       s->opcode == IBV_WC_RECV_RDMA_WITH_IMM && s->with_imm &&
	       s->imm == (uint32_t)it->tag && s->byte_len == it->size;
}

static bool crw_wc_ok(const struct ibv_wc *wc, const struct item *it)
{
	return wc->status == IBV_WC_SUCCESS && wc->opcode == UZURADV_WC_CRW &&
	       wc->wr_id == it->tag && wc->byte_len == it->size;
}

/* One CRW and its offer, in the given order, then all the checks. */
static void one_crw(struct client *cl, const struct item *it, bool crw_first,
		    bool inl)
{
	const char *order = crw_first ? "CRW first" : "STCRW first";
	struct report r;
	struct ibv_wc wc;
	int32_t st;
	int ret = 0;
	bool got;

	if (crw_first) {
		ret = post_crw(cl, it, true, inl);
		if (!ret && !fence_marker(cl))
			ret = -1;
		st = send_offer(cl, it, 1, it, 1);
	} else {
		st = send_offer(cl, it, 1, it, 1);
		if (!st)
			ret = post_crw(cl, it, true, inl);
	}
	xread(cl->fd, &r, sizeof(r));
	got = crw_completions(cl, &wc, 1) == 1;

	check(!ret && !st && r.stcrw_opcode_ok,
	      "%s, %u B%s: posts, and the target's STCRW completes "
	      "(UZURADV_WC_STCRW) (post %d, STCRW status %d)", order,
	      it->size, inl ? " inline" : "", ret, st);
	check(r.n_seen == 1 && seen_ok(&r.seen[0], it),
	      "%s, %u B: the target sees RDMA_WRITE_WITH_IMM, imm = tag's "
	      "low 32 bits, byte_len %u (status %d, opcode %u, imm 0x%x, "
	      "len %u)", order, it->size, it->size, r.seen[0].status,
	      r.seen[0].opcode, r.seen[0].imm, r.seen[0].byte_len);
	check(r.n_seen == 1 && r.seen[0].data_ok && r.seen[0].guard_ok,
	      "%s, %u B: target bytes written, guard bytes intact "
	      "(data %u, guards %u)", order, it->size, r.seen[0].data_ok,
	      r.seen[0].guard_ok);
	check(got && crw_wc_ok(&wc, it),
	      "%s, %u B: the initiator's CRW completes (UZURADV_WC_CRW, "
	      "wr_id, byte_len) (status %d, opcode %d, len %u)", order,
	      it->size, got ? (int)wc.status : -1, got ? (int)wc.opcode : -1,
	      got ? wc.byte_len : 0);
}

static bool all_seen(const struct report *r, const struct item *exp,
		     uint32_t n_exp)
{
	uint32_t i, k, hits = 0;

	if (r->n_seen != n_exp)
		return false;
	for (i = 0; i < n_exp; i++)
		for (k = 0; k < r->n_seen; k++)
			if (r->seen[k].tag == exp[i].tag &&
			    seen_ok(&r->seen[k], &exp[i]) &&
			    r->seen[k].data_ok && r->seen[k].guard_ok)
				hits++;
	return hits == n_exp;
}

/* Four CRWs parked, offered in reverse: they match out of posting order. */
static void reverse_order(struct client *cl)
{
	static const uint32_t sizes[SLOTS] = { 100, 5000, 1, 70000 };
	struct item it[SLOTS], rev[SLOTS];
	struct ibv_wc wc[SLOTS];
	struct report r;
	uint32_t i, got;
	bool order_ok = true, posted = true;
	int32_t st;

	for (i = 0; i < SLOTS; i++) {
		it[i] = (struct item) { .tag = 0x1000000a0ull + i,
					.size = sizes[i], .slot = i };
		rev[SLOTS - 1 - i] = it[i];
		posted &= !post_crw(cl, &it[i], true, false);
	}
	posted &= fence_marker(cl);
	st = send_offer(cl, rev, SLOTS, it, SLOTS);
	xread(cl->fd, &r, sizeof(r));
	got = crw_completions(cl, wc, SLOTS);

	check(posted && !st, "4 tags in flight: 4 CRWs parked, offered in "
	      "reverse order (STCRW status %d)", st);
	check(all_seen(&r, it, SLOTS), "4 tags in flight: each write lands "
	      "in its own buffer with its tag as imm (%u writes)", r.n_seen);
	for (i = 0; i < r.n_seen; i++)
		order_ok &= r.seen[i].tag == rev[i].tag;
	for (i = 0; i < got; i++)
		order_ok &= crw_wc_ok(&wc[i], &rev[i]);
	check(order_ok && got == SLOTS, "4 tags in flight: writes and CRW "
	      "completions come in match order, not posting order (%u "
	      "completions)", got);
}

/* Two offers waiting and two CRWs parked, all four in flight at once. */
static void mixed_order(struct client *cl)
{
	struct item a = { 0x2000000a1ull, 3000, 0 }, b = { 0x2000000b2ull, 1, 1 };
	struct item c = { 0x2000000c3ull, 4097, 2 }, d = { 0x2000000d4ull, 64, 3 };
	struct item ab[2] = { a, b }, dc[2] = { d, c }, all[4] = { a, b, c, d };
	struct ibv_wc wc[4];
	struct report r;
	uint32_t got, i, k, hits = 0;
	bool posted;
	int32_t st1, st2;

	st1 = send_offer(cl, ab, 2, NULL, 0);
	xread(cl->fd, &r, sizeof(r));
	posted = !post_crw(cl, &c, true, false) &&
		 !post_crw(cl, &d, true, false) &&
		 !post_crw(cl, &b, true, false) &&
		 !post_crw(cl, &a, true, false) && fence_marker(cl);
	st2 = send_offer(cl, dc, 2, all, 4);
	xread(cl->fd, &r, sizeof(r));
	got = crw_completions(cl, wc, 4);
	for (i = 0; i < got; i++)
		for (k = 0; k < 4; k++)
			hits += crw_wc_ok(&wc[i], &all[k]);

	check(posted && !st1 && !st2, "2 offers waiting, 2 CRWs parked: "
	      "posts and STCRWs complete (%d, %d)", st1, st2);
	check(all_seen(&r, all, 4) && got == 4 && hits == 4,
	      "2 offers waiting, 2 CRWs parked: all 4 writes land and all 4 "
	      "CRWs complete (%u writes, %u completions)", r.n_seen, got);
}

/*
 * Three SQs' worth of STCRW-first rounds, every other CRW unsignalled and
 * half of them inline: no other WQE frees SQ slots, so only the CRW
 * completion count can; the unsignalled ones must not be reported.
 */
static void slot_accounting(struct client *cl)
{
	uint32_t rounds = 3 * cl->depth, i, bad_post = 0, bad_data = 0;
	uint32_t bad_wc = 0, extra = 0;
	struct ibv_wc wc;
	struct report r;

	for (i = 0; i < rounds; i++) {
		struct item it = { 0x300000000ull + i, 48, i % SLOTS };
		bool sig = i % 2 == 0;

		if (send_offer(cl, &it, 1, &it, 1) ||
		    post_crw(cl, &it, sig, i % 4 < 2))
			bad_post++;
		xread(cl->fd, &r, sizeof(r));
		if (!all_seen(&r, &it, 1))
			bad_data++;
		if (sig && !(next_wc(cl, &wc) && crw_wc_ok(&wc, &it)))
			bad_wc++;
		if (bad_post || bad_data || bad_wc)
			break;	/* the server has waited for it: once is enough */
	}
	usleep(200000);
	while (ibv_poll_cq(cl->nd.scq, 1, &wc) > 0)
		extra++;
	check(!bad_post, "%u CRWs through an SQ of %u: no post fails with "
	      "ENOMEM (%u failed)", rounds, cl->depth, bad_post);
	check(!bad_data && !bad_wc, "%u CRWs: every write lands, every "
	      "signalled CRW completes (%u bad writes, %u bad completions)",
	      rounds, bad_data, bad_wc);
	check(!extra, "unsignalled CRWs report no completion (%u extra)",
	      extra);
}

/* Bad input gets the documented errno; nothing reaches the wire. */
static void api_errors(struct client *cl)
{
	struct node *nd = &cl->nd;
	struct uzuradv_device_attr attr;
	struct ibv_sge sge[8];
	struct uzuradv_crw_wr crw = { .tag = 1, .sg_list = sge, .num_sge = 1 };
	struct uzuradv_stcrw_wr st = { .tag = 1, .rkey = nd->mr->rkey,
				       .addr = (uintptr_t)nd->buf, .length = 8 };
	struct ibv_qp *ud, *rc;
	uint32_t i, posted = 0;
	int ret;

	for (i = 0; i < 8; i++)
		sge[i] = (struct ibv_sge) { .addr = (uintptr_t)nd->buf,
					    .length = 100,
					    .lkey = nd->mr->lkey };
	ret = uzuradv_query_device(nd->ctx, &attr, 8);
	check(ret == EINVAL, "query_device with a short inlen: EINVAL (%d)",
	      ret);
	check(uzuradv_post_crw(NULL, &crw) == EINVAL &&
	      uzuradv_post_crw(nd->qp, NULL) == EINVAL,
	      "post_crw without a QP or WR: EINVAL");

	ud = make_qp(nd, IBV_QPT_UD, 4, 4);
	rc = make_qp(nd, IBV_QPT_RC, 4, 4);
	if (!ud || !rc)
		bail("cannot create the QPs for the argument checks");
	check(uzuradv_post_crw(ud, &crw) == EINVAL &&
	      uzuradv_post_stcrw(ud, &st) == EINVAL,
	      "CRW and STCRW on a UD QP: EINVAL");
	ret = uzuradv_post_crw(rc, &crw);
	check(ret == EINVAL, "CRW on a QP in RESET: EINVAL (%d)", ret);
	if (to_init(rc))
		bail("cannot move a QP to INIT");
	crw.send_flags = IBV_SEND_IP_CSUM;
	ret = uzuradv_post_crw(rc, &crw);
	check(ret == EINVAL, "CRW with IBV_SEND_IP_CSUM: EINVAL (%d)", ret);
	crw.send_flags = 0;
	crw.comp_mask = 1;
	ret = uzuradv_post_crw(rc, &crw);
	check(ret == EINVAL, "CRW with an unknown comp_mask bit: EINVAL (%d)",
	      ret);
	crw.comp_mask = 0;
	crw.num_sge = 8;
	ret = uzuradv_post_crw(rc, &crw);
	check(ret == EINVAL, "CRW with 8 SGEs on a QP of 4: EINVAL (%d)", ret);
	crw.num_sge = 1;
	crw.send_flags = IBV_SEND_INLINE;
	sge[0].length = 4096;
	ret = uzuradv_post_crw(rc, &crw);
	check(ret == EINVAL, "inline CRW of 4096 B: EINVAL (%d)", ret);
	sge[0].length = 100;
	crw.send_flags = 0;
	st.send_flags = IBV_SEND_INLINE;
	ret = uzuradv_post_stcrw(rc, &st);
	check(ret == EINVAL, "STCRW with IBV_SEND_INLINE: EINVAL (%d)", ret);
	st.send_flags = IBV_SEND_SIGNALED;
	st.reserved = 1;
	ret = uzuradv_post_stcrw(rc, &st);
	check(ret == EINVAL, "STCRW with reserved set: EINVAL (%d)", ret);

	/* In INIT the device takes WQEs but runs none: the SQ fills. */
	do {
		crw.tag = posted;
		ret = uzuradv_post_crw(rc, &crw);
	} while (!ret && ++posted < 4096);
	check(ret == ENOMEM && posted >= 4, "a full SQ: ENOMEM after %u CRWs "
	      "(%d)", posted, ret);
	{
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };
		uint32_t again = 0;

		ret = ibv_modify_qp(rc, &a, IBV_QP_STATE) || to_init(rc);
		do {
			crw.tag = again;
			ret = ret ? ret : uzuradv_post_crw(rc, &crw);
		} while (!ret && ++again < posted);
		check(!ret && again == posted, "after RESET the SQ takes %u "
		      "CRWs again (%u, %d)", posted, again, ret);
	}
	ibv_destroy_qp(rc);
	ibv_destroy_qp(ud);
}

static const char *const crw_counters[] = {
	"crw_parked", "crw_offers", "crw_matched_crw_first",
	"crw_matched_stcrw_first",
};
#define N_CRW_COUNTERS	4

static int read_crw_counters(struct ibv_context *ctx, uint64_t *val)
{
	struct uzuradv_counter c[N_CRW_COUNTERS];
	int i, ret;

	memset(c, 0, sizeof(c));
	for (i = 0; i < N_CRW_COUNTERS; i++)
		snprintf(c[i].name, sizeof(c[i].name), "%s", crw_counters[i]);
	ret = uzuradv_query_counters(ctx, 1, c, N_CRW_COUNTERS);
	for (i = 0; !ret && i < N_CRW_COUNTERS; i++)
		val[i] = c[i].value;
	return ret;
}

static void dup_tag(struct client *cl)
{
	struct item it = { 0x4000000d0ull, 200, 0 };
	struct ibv_wc wc[3];
	uint32_t got;
	int r1, r2, r3;

	r1 = post_crw(cl, &it, true, false);
	it.tag = 0x4000000d0ull;
	r2 = post_crw(cl, &it, true, false);
	got = crw_completions(cl, wc, 2);
	check(!r1 && !r2 && got >= 1 && wc[0].status == IBV_WC_LOC_QP_OP_ERR &&
	      wc[0].vendor_err == VERR_DUP_TAG &&
	      wc[0].opcode == UZURADV_WC_CRW,
	      "a second CRW with a parked tag completes LOC_QP_OP_ERR, "
	      "vendor_err 0x11 (CRW_DUP_TAG) (status %d, vendor_err 0x%x)",
	      got ? (int)wc[0].status : -1, got ? wc[0].vendor_err : 0);
	check(got == 2 && wc[1].status == IBV_WC_WR_FLUSH_ERR &&
	      wc[1].opcode == UZURADV_WC_CRW && wc[1].wr_id == it.tag,
	      "the parked CRW is flushed (WR_FLUSH_ERR, UZURADV_WC_CRW) "
	      "(status %d)", got == 2 ? (int)wc[1].status : -1);
	it.tag = 0x4000000d1ull;
	r3 = post_crw(cl, &it, false, false);
	got = crw_completions(cl, wc, 1);
	check(!r3 && got == 1 && wc[0].status == IBV_WC_WR_FLUSH_ERR &&
	      wc[0].wr_id == it.tag, "a CRW posted in ERR, even unsignalled, "
	      "completes WR_FLUSH_ERR (%d, status %d)", r3,
	      got ? (int)wc[0].status : -1);
}

static int run_client(struct client *cl, const char *host, int port)
{
	static const uint32_t sizes[] = { 0, 1, 4095, 4096, 4097, 65536,
					  MAX_SIZE };
	struct node *nd = &cl->nd;
	struct conn local = {};
	struct uzuradv_device_attr attr = {};
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr qa;
	uint64_t before[N_CRW_COUNTERS], after[N_CRW_COUNTERS];
	int cnt_ret, ret;
	uint32_t i;
	unsigned int s, order;

	check(uzuradv_is_supported(nd->ctx->device), "uzuradv_is_supported");
	ret = uzuradv_query_device(nd->ctx, &attr, sizeof(attr));
	check(!ret && (attr.device_caps & UZURADV_DEVICE_CAP_CRW) &&
	      attr.max_crw_tags >= SLOTS && !attr.comp_mask,
	      "uzuradv_query_device: CRW supported, max_crw_tags %u (%d)",
	      attr.max_crw_tags, ret);
	ret = ibv_query_qp(nd->qp, &qa, IBV_QP_CAP, &init);
	cl->depth = ret ? SQ_DEPTH : init.cap.max_send_wr;
	api_errors(cl);

	local.qpn = nd->qp->qp_num;
	local.psn = 0x1000;
	memcpy(local.gid, nd->gid.raw, 16);
	local.addr = (uintptr_t)nd->buf;
	local.rkey = nd->mr->rkey;
	cl->fd = tcp_connect(host, port);
	xwrite(cl->fd, &local, sizeof(local));
	xread(cl->fd, &cl->remote, sizeof(cl->remote));
	ret = to_rts(nd, &local, &cl->remote);
	check(!ret, "QP connected to the server's (QPN %u)", cl->remote.qpn);
	if (ret)
		bail("cannot bring the QP to RTS");

	cnt_ret = read_crw_counters(nd->ctx, before);
	for (order = 0; order < 2; order++)
		for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
			struct item it = {
				.tag = 0xc0ffee0000000000ull |
				       (uint64_t)order << 32 | (s + 1),
				.size = sizes[s], .slot = s % SLOTS,
			};

			one_crw(cl, &it, order == 0, false);
		}
	{
		struct item it = { 0x5000000e0ull, 60, 0 };

		one_crw(cl, &it, true, true);
		it.tag++;
		one_crw(cl, &it, false, true);
	}
	reverse_order(cl);
	mixed_order(cl);
	slot_accounting(cl);

	if (cnt_ret == EOPNOTSUPP || cnt_ret == ENOENT) {
		skip("crw_* hw counters: the driver does not export them (%s)",
		     strerror(cnt_ret));
	} else {
		usleep(50000);	/* past ib_core's counter lifespan */
		ret = cnt_ret ? cnt_ret : read_crw_counters(nd->ctx, after);
		for (i = 0; !ret && i < N_CRW_COUNTERS; i++)
			if (after[i] <= before[i])
				ret = -1;
		check(!ret, "uzuradv_query_counters: crw_parked, crw_offers, "
		      "crw_matched_crw_first and crw_matched_stcrw_first grew "
		      "(%d)", ret);
	}
	{
		struct uzuradv_counter c = { .name = "no_such_counter" };
		size_t total = 0;
		int lret;

		ret = uzuradv_query_counters(nd->ctx, 1, &c, 1);
		lret = uzuradv_list_counters(nd->ctx, 1, NULL, 0, &total);
		if (cnt_ret == EOPNOTSUPP || cnt_ret == ENOENT)
			check(ret == cnt_ret || ret == EOPNOTSUPP,
			      "query_counters without hw counters: %s (%d)",
			      strerror(cnt_ret), ret);
		else
			check(ret == ENOENT && !lret && total > N_CRW_COUNTERS,
			      "query_counters of an unknown name: ENOENT (%d); "
			      "list_counters: %zu counters (%d)", ret, total,
			      lret);
	}

	dup_tag(cl);

	{
		struct cmd c = { .op = OP_DONE };
		uint32_t ack = 0;

		xwrite(cl->fd, &c, sizeof(c));
		xread(cl->fd, &ack, sizeof(ack));
		check(ack == OP_DONE, "the server finished");
	}
	close(cl->fd);
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: crw-test [-d DEV] [-g GID-INDEX] [-p PORT] "
		"[SERVER]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *dev = NULL;
	int gidx = -1, port = 18600, opt;

	while ((opt = getopt(argc, argv, "d:g:p:")) != -1) {
		switch (opt) {
		case 'd':
			dev = optarg;
			break;
		case 'g':
			gidx = atoi(optarg);
			break;
		case 'p':
			port = atoi(optarg);
			break;
		default:
			usage();
		}
	}
	if (argc - optind > 1)
		usage();

	if (optind == argc) {
		struct node nd = {};

		setup(&nd, dev, gidx);
		return run_server(&nd, port);
	} else {
		struct client cl = {};

		setup(&cl.nd, dev, gidx);
		run_client(&cl, argv[optind], port);
		printf("1..%d\n", n);
		return fails ? 1 : 0;
	}
}
