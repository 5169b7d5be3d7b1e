// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * frrwp-bench: the FRRWP paper's experiment (docs/experiments/frrwp.md):
 * how long one RDMA write transaction takes when both sides must first
 * register their buffers, in three flows, and what a registration costs.
 *
 *   node 2:  frrwp-bench [-g GIDX] [-n ITERS]           (target)
 *   node 1:  frrwp-bench [-g GIDX] [-n ITERS] TARGET    (source)
 *
 * A transaction moves P pages (P = 1, 2, 4 .. 128) from the source's
 * buffer to the target's; neither buffer is registered when it starts,
 * and both are deregistered after it.  The source times it, from its
 * start to the completion of its write (the write is acknowledged, so it
 * is in the target's memory):
 *
 *   seq      the typical flow (the paper's figure 3): the source
 *            registers, sends START; the target registers, answers with
 *            its rkey; the source writes (WRITE with immediate).
 *   overlap  registration overlapped (figure 4): the source sends START
 *            first and registers while the target does; then as seq.
 *   crw      FRRWP: overlap, and the source posts a Conditional RDMA
 *            Write right after its registration; the target answers with
 *            an STCRW instead of a message, and the source's NIC writes
 *            on its own (figure 6).
 *
 * Then the source times ibv_reg_mr and ibv_dereg_mr alone at each size
 * (flows reg and dereg), for the fit T = a * p + b.  Output, on the
 * source's stdout: CSV rows "flow,pages,iters,median_us,mean_us,min_us".
 * Control (QPN, GID, PSN) goes over TCP port 18610; everything timed goes
 * over the RDMA NIC.  Build: cc frrwp-bench.c -luzura -libverbs
 */
#include <endian.h>
#include <stdint.h>

#include "bench-verbs.h"

#define PAGE		4096u
#define MAX_PAGES	128u
#define NRECV		32
#define WARMUP		3
#define MAX_ITERS	10000

enum { SEQ, OVERLAP, CRW, NFLOWS };
static const char *const flow_name[NFLOWS] = { "seq", "overlap", "crw" };

enum { MSG_START = 1, MSG_RKEY, MSG_END };

struct msg {
	uint32_t kind;
	uint32_t flow;
	uint32_t pages;
	uint32_t rkey;
	uint64_t addr;
	uint64_t tag;
};

enum { WR_MSG = 1, WR_WRITE, WR_CRW, WR_STCRW };

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_qp *qp;
static struct ibv_mr *ctl_mr;
static struct msg *ctl;		/* NRECV receive slots, then one to send */
static char *data;		/* MAX_PAGES pages, touched once */

/* What the completions seen so far tell. */
static int nap_us;		/* -s: sleep between empty polls */
static struct msg got;		/* the last message received */
static int got_msg, got_imm, send_done[WR_STCRW + 1];



static void post_recv(int slot)
{
	struct ibv_sge sge = { (uintptr_t)&ctl[slot], sizeof(struct msg),
			       ctl_mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = slot, .sg_list = &sge,
				  .num_sge = 1 }, *bad;

	if (ibv_post_recv(qp, &wr, &bad))
		die("post receive");
}

/* Take one completion, waiting for it, and note what it means. */
static void poll_one(void)
{
	struct ibv_wc wc;
	int n;

	while ((n = ibv_poll_cq(cq, 1, &wc)) == 0)
		if (nap_us)
			usleep(nap_us);
	if (n < 0)
		die("poll CQ");
	if (wc.status) {
		fprintf(stderr, "frrwp-bench: wr_id %llu opcode %d: %s\n",
			(unsigned long long)wc.wr_id, wc.opcode,
			ibv_wc_status_str(wc.status));
		exit(1);
	}
	if (wc.opcode == IBV_WC_RECV) {
		got = ctl[wc.wr_id];
		got_msg = 1;
		post_recv(wc.wr_id);
	} else if (wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
		got_imm = 1;
		post_recv(wc.wr_id);
	} else if (wc.wr_id <= WR_STCRW) {
		send_done[wc.wr_id] = 1;
	}
}

static void send_msg(const struct msg *m)
{
	struct ibv_sge sge = { (uintptr_t)&ctl[NRECV], sizeof(*m),
			       ctl_mr->lkey };
	struct ibv_send_wr wr = { .wr_id = WR_MSG, .sg_list = &sge,
				  .num_sge = 1, .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;

	ctl[NRECV] = *m;
	send_done[WR_MSG] = 0;
	if (ibv_post_send(qp, &wr, &bad))
		die("post SEND");
}

static void wait_send(int id)
{
	while (!send_done[id])
		poll_one();
	send_done[id] = 0;
}

static struct msg wait_msg(void)
{
	while (!got_msg)
		poll_one();
	got_msg = 0;
	return got;
}

static struct ibv_mr *reg(uint32_t pages)
{
	struct ibv_mr *mr = ibv_reg_mr(pd, data, (size_t)pages * PAGE,
				       IBV_ACCESS_LOCAL_WRITE |
				       IBV_ACCESS_REMOTE_WRITE);

	if (!mr)
		die("ibv_reg_mr");
	return mr;
}

/* The target's side of one transaction, START in hand. */
static void target(const struct msg *start)
{
	struct ibv_mr *mr = reg(start->pages);
	struct msg m = { .kind = MSG_RKEY, .addr = (uintptr_t)data,
			 .rkey = mr->rkey };

	got_imm = 0;
	if (start->flow == CRW) {
		struct uzuradv_stcrw_wr st = {
			.wr_id = WR_STCRW, .tag = start->tag,
			.addr = (uintptr_t)data, .rkey = mr->rkey,
			.length = start->pages * PAGE,
			.send_flags = IBV_SEND_SIGNALED,
		};

		send_done[WR_STCRW] = 0;
		if (uzuradv_post_stcrw(qp, &st))
			die("post STCRW");
		wait_send(WR_STCRW);
	} else {
		send_msg(&m);
		wait_send(WR_MSG);
	}
	while (!got_imm)
		poll_one();
	if (ibv_dereg_mr(mr))
		die("ibv_dereg_mr");
}

/* The source's side of one transaction; returns its time in us. */
static double source(int flow, uint32_t pages, uint64_t tag)
{
	struct msg start = { .kind = MSG_START, .flow = flow, .pages = pages,
			     .tag = tag };
	struct ibv_sge sge = { (uintptr_t)data, pages * PAGE, 0 };
	struct ibv_mr *mr = NULL;
	double t0 = now_us(), t;

	if (flow == SEQ)
		mr = reg(pages);
	send_msg(&start);
	if (flow != SEQ)
		mr = reg(pages);
	sge.lkey = mr->lkey;
	if (flow == CRW) {
		struct uzuradv_crw_wr crw = {
			.wr_id = WR_CRW, .tag = tag, .sg_list = &sge,
			.num_sge = 1, .send_flags = IBV_SEND_SIGNALED,
		};

		send_done[WR_CRW] = 0;
		if (uzuradv_post_crw(qp, &crw))
			die("post CRW");
		wait_send(WR_CRW);
	} else {
		struct msg rk = wait_msg();
		struct ibv_send_wr wr = {
			.wr_id = WR_WRITE, .sg_list = &sge, .num_sge = 1,
			.opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
			.send_flags = IBV_SEND_SIGNALED,
			.imm_data = htobe32((uint32_t)tag),
			.wr.rdma = { .remote_addr = rk.addr, .rkey = rk.rkey },
		}, *bad;

		if (rk.kind != MSG_RKEY)
			die("expected the target's rkey");
		send_done[WR_WRITE] = 0;
		if (ibv_post_send(qp, &wr, &bad))
			die("post WRITE");
		wait_send(WR_WRITE);
	}
	t = now_us() - t0;
	wait_send(WR_MSG);	/* START's own completion, long since */
	if (ibv_dereg_mr(mr))
		die("ibv_dereg_mr");
	return t;
}


static void report(const char *flow, uint32_t pages, double *t, int n)
{
	double sum = 0, med;
	int i;

	for (i = 0; i < n; i++)
		sum += t[i];
	med = median(t, n);
	printf("%s,%u,%d,%.2f,%.2f,%.2f\n", flow, pages, n, med, sum / n,
	       t[0]);
	fflush(stdout);
}

static void post_recvs(void)
{
	int i;

	for (i = 0; i < NRECV; i++)
		post_recv(i);
}

static void setup(int gidx, int fd)
{
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 16, .max_recv_wr = NRECV,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};

	bench_open(&ctx, &pd, &cq, 2 * NRECV + 32);
	ctl = calloc(NRECV + 1, sizeof(*ctl));
	if (!ctl || posix_memalign((void **)&data, PAGE, MAX_PAGES * PAGE))
		die("cannot allocate the buffers");
	memset(data, 0x5a, MAX_PAGES * PAGE);
	ctl_mr = ibv_reg_mr(pd, ctl, (NRECV + 1) * sizeof(*ctl),
			    IBV_ACCESS_LOCAL_WRITE);
	init.send_cq = init.recv_cq = cq;
	qp = ctl_mr ? ibv_create_qp(pd, &init) : NULL;
	if (!qp)
		die("cannot create the QP");
	bench_connect(qp, gidx, fd, IBV_ACCESS_REMOTE_WRITE, post_recvs);
}

/* ibv_reg_mr and ibv_dereg_mr alone, at each size. */
static void reg_cost(int iters, double *t, double *d)
{
	uint32_t p;
	int i;

	for (p = 1; p <= MAX_PAGES; p *= 2) {
		for (i = -WARMUP; i < iters; i++) {
			double t0 = now_us(), t1;
			struct ibv_mr *mr = reg(p);

			t1 = now_us();
			if (ibv_dereg_mr(mr))
				die("ibv_dereg_mr");
			if (i >= 0) {
				t[i] = t1 - t0;
				d[i] = now_us() - t1;
			}
		}
		report("reg", p, t, iters);
		report("dereg", p, d, iters);
	}
}



int main(int argc, char **argv)
{
	int gidx = 1, iters = 100, opt, fd, flow, i;
	uint64_t tag = 1;
	double *t, *d;
	uint32_t p;

	bench_name = "frrwp-bench";
	while ((opt = getopt(argc, argv, "g:n:s:")) != -1) {
		if (opt == 'g')
			gidx = atoi(optarg);
		else if (opt == 's')
			nap_us = atoi(optarg);
		else if (opt == 'n')
			iters = atoi(optarg);
		else
			die("usage: frrwp-bench [-g GIDX] [-n ITERS] [-s NAP-US] [TARGET]");
	}
	if (iters < 1 || iters > MAX_ITERS)
		die("-n takes 1..10000");
	fd = tcp_connect(optind < argc ? argv[optind] : NULL, "18610");
	setup(gidx, fd);

	if (optind >= argc) {
		struct msg m;

		while ((m = wait_msg()).kind == MSG_START) {
			if (m.flow >= NFLOWS || !m.pages || m.pages > MAX_PAGES)
				die("bad START");
			target(&m);
		}
		return 0;
	}
	t = calloc(iters, sizeof(*t));
	d = calloc(iters, sizeof(*d));
	if (!t || !d)
		die("out of memory");
	printf("flow,pages,iters,median_us,mean_us,min_us\n");
	for (p = 1; p <= MAX_PAGES; p *= 2) {
		/* The flows take turns, so a change in load hits them alike. */
		for (flow = 0; flow < NFLOWS; flow++) {
			for (i = -WARMUP; i < iters; i++) {
				double v = source(flow, p, tag++);

				if (i >= 0)
					t[i] = v;
			}
			report(flow_name[flow], p, t, iters);
		}
	}
	{
		struct msg end = { .kind = MSG_END };

		send_msg(&end);
		wait_send(WR_MSG);
	}
	reg_cost(iters, t, d);
	return 0;
}
