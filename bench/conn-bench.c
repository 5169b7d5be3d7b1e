// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * conn-bench: the connection memory paper's experiment
 * (docs/experiments/connection.md): memory per RC connection against its
 * send queue depth, and the small-message rate a shallow send queue
 * leaves, with and without coalescing of small messages, and with and
 * without an SRQ at the receiver.
 *
 *   node 2:  conn-bench [-g GIDX]                   (receiver)
 *   node 1:  conn-bench [-g GIDX] [-t SEC] TARGET   (sender)
 *
 * Memory (sender only): for each send queue depth D, 256 RC QPs sharing
 * one CQ and one SRQ are created and taken to INIT; what that cost is
 * the process's resident memory (user: the provider's rings and
 * bookkeeping) and the rest of what the system lost in MemAvailable (the
 * kernel: the driver's objects and pinned ring pages), per QP.
 *
 * Rate: the sender sends windows of 64 messages of SIZE bytes (each with
 * a 4-byte length header) and waits for the receiver's one-message ACK
 * after each window, as the paper's (MVAPICH's) microbenchmark does, for
 * SEC seconds.  A message waits when the send queue is full; with
 * coalescing it is packed instead, with the others waiting, into one
 * buffer of up to 8 KiB that goes out as one SEND when a WQE frees up.
 * Output on the sender's stdout: CSV rows
 * "test,depth,variant,size,value" (mem: bytes per QP; rate: messages/s).
 * Control goes over TCP port 18612.
 */
#include <stdint.h>

#include "bench-verbs.h"

#define NQP		256
#define WINDOW		64
#define PACK		8192		/* a send buffer, as MVAPICH's */
#define NRECV		128
#define MAX_DEPTH	200

static const int depths[] = { 5, 10, 20, 40, 100, 200 };
static const int rate_depths[] = { 5, 10, 200 };
static const uint32_t sizes[] = { 8, 64, 256, 1024, 4096 };

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;		/* the memory phase's, then a point's */
static struct ibv_srq *srq;
static struct ibv_qp *qp;
static struct ibv_mr *mr;
static char *bufs;	/* MAX_DEPTH + 1 send buffers, NRECV receive ones */
static int fd, use_srq;

static long meminfo_kib(const char *key)
{
	char line[128];
	long v = -1;
	FILE *f = fopen("/proc/meminfo", "r");

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, key, strlen(key)))
			v = atol(line + strlen(key));
	if (f)
		fclose(f);
	return v;
}

static long rss_bytes(void)
{
	long pages = 0, rss = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (!f || fscanf(f, "%ld %ld", &pages, &rss) != 2)
		die("/proc/self/statm");
	fclose(f);
	return rss * sysconf(_SC_PAGESIZE);
}

static struct ibv_qp *create_qp(int depth)
{
	struct ibv_qp_init_attr init = {
		.send_cq = cq, .recv_cq = cq, .srq = use_srq ? srq : NULL,
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = depth, .max_send_sge = 1,
			 .max_recv_wr = use_srq ? 0 : NRECV,
			 .max_recv_sge = 1 },
	};

	return ibv_create_qp(pd, &init);
}

/* Memory per QP at each depth: QPs on the SRQ, taken to INIT. */
static void memory(void)
{
	static struct ibv_qp *qps[NQP];
	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_INIT, .port_num = 1 };
	unsigned int d;
	int i;

	use_srq = 1;
	for (d = 0; d < sizeof(depths) / sizeof(depths[0]); d++) {
		long rss0 = rss_bytes(), avail0 = meminfo_kib("MemAvailable:");
		long user, total;

		for (i = 0; i < NQP; i++) {
			qps[i] = create_qp(depths[d]);
			if (!qps[i] || ibv_modify_qp(qps[i], &qa, IBV_QP_STATE |
						     IBV_QP_PKEY_INDEX |
						     IBV_QP_PORT |
						     IBV_QP_ACCESS_FLAGS))
				die("cannot create the QPs");
		}
		user = rss_bytes() - rss0;
		total = (avail0 - meminfo_kib("MemAvailable:")) * 1024;
		printf("mem,%d,user,0,%ld\n", depths[d], user / NQP);
		printf("mem,%d,kernel,0,%ld\n", depths[d],
		       (total > user ? total - user : 0) / NQP);
		fflush(stdout);
		for (i = 0; i < NQP; i++)
			if (ibv_destroy_qp(qps[i]))
				die("ibv_destroy_qp");
	}
}

static char *rbuf(int i)
{
	return bufs + (size_t)(MAX_DEPTH + 1 + i) * PACK;
}

static void post_recv(int i)
{
	struct ibv_sge sge = { (uintptr_t)rbuf(i), PACK, mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge,
				  .num_sge = 1 }, *bad;

	if (use_srq ? ibv_post_srq_recv(srq, &wr, &bad) :
		      ibv_post_recv(qp, &wr, &bad))
		die("post receive");
}

static void post_recvs(void)
{
	int i;

	for (i = 0; i < NRECV; i++)
		post_recv(i);
}

static void send_buf(int slot, uint32_t len, uint64_t wr_id)
{
	struct ibv_sge sge = { (uintptr_t)bufs + (size_t)slot * PACK, len,
			       mr->lkey };
	struct ibv_send_wr wr = { .wr_id = wr_id, .sg_list = &sge,
				  .num_sge = 1, .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;

	if (ibv_post_send(qp, &wr, &bad))
		die("post SEND");
}

/*
 * A fresh CQ and QP of @depth (on the SRQ or with its own RQ) connected
 * to the peer's: receives of the last point's RQ, flushed, stay behind.
 */
static void connect_qp(int depth, int gidx)
{
	cq = ibv_create_cq(ctx, 2 * MAX_DEPTH + 2 * NRECV, NULL, NULL, 0);
	qp = cq ? create_qp(depth) : NULL;
	if (!qp)
		die("ibv_create_qp");
	bench_connect(qp, gidx, fd, 0, use_srq ? NULL : post_recvs);
}

/* What one point is, from the sender to the receiver over TCP. */
struct point {
	uint32_t depth, coalesce, srq, size;
};

static uint32_t depth, busy, head, fill;
static uint64_t acked;

/* Take one completion (or, with @nowait, any there is); false if none. */
static int reap(int nowait)
{
	struct ibv_wc wc;
	int n;

	do
		n = ibv_poll_cq(cq, 1, &wc);
	while (n == 0 && !nowait);
	if (n <= 0 || wc.status) {
		if (n < 0 || (n > 0 && wc.status)) {
			fprintf(stderr, "conn-bench: completion: %s\n",
				n < 0 ? "poll failed" :
				ibv_wc_status_str(wc.status));
			exit(1);
		}
		return 0;
	}
	if (wc.opcode == IBV_WC_SEND) {
		busy--;
	} else {
		post_recv(wc.wr_id);
		acked++;
	}
	return 1;
}

/* Send buffer @head's first @len bytes once a WQE is free. */
static void send_head(uint32_t len)
{
	while (busy == depth)
		reap(0);
	send_buf(head, len, head);
	head = (head + 1) % (MAX_DEPTH + 1);
	busy++;
}

static void put_msg(char *b, uint32_t size)
{
	memcpy(b, &size, 4);
	memset(b + 4, 'm', size);
}

/*
 * The sender's side of one point, for @secs: returns messages per
 * second.  The send buffers form a ring in post order, which is also
 * the order an RC QP completes them in, so MAX_DEPTH + 1 of them never
 * overwrite one still being sent.
 */
static double sender(int coalesce, uint32_t size, double secs)
{
	uint32_t msg = size + 4;
	uint64_t sent = 0, windows = 0;
	double t0 = now_us(), t;
	int i;

	busy = head = fill = 0;
	acked = 0;
	do {
		for (i = 0; i < WINDOW; i++, sent++) {
			while (reap(1))
				;
			/* A pack waiting goes first once a WQE is free. */
			if (fill && busy < depth) {
				send_head(fill);
				fill = 0;
			}
			if (!coalesce || (busy < depth && !fill)) {
				put_msg(bufs + (size_t)head * PACK, size);
				send_head(msg);
				continue;
			}
			/* No WQE free: pack the message with the others. */
			if (fill + msg > PACK) {
				send_head(fill);
				fill = 0;
			}
			put_msg(bufs + (size_t)head * PACK + fill, size);
			fill += msg;
		}
		if (fill) {
			send_head(fill);
			fill = 0;
		}
		/* The receiver answers each window with one message. */
		windows++;
		while (acked < windows)
			reap(0);
		t = now_us() - t0;
	} while (t < secs * 1e6);
	while (busy)
		reap(0);
	return sent / (t / 1e6);
}

/* The receiver's side: count messages, answer each window, until END. */
static void receiver(void)
{
	uint64_t msgs = 0, windows = 0;
	char c;

	busy = head = 0;
	for (;;) {
		struct ibv_wc wc;
		int n = ibv_poll_cq(cq, 1, &wc);

		if (n < 0 || (n > 0 && wc.status))
			die("receive completion failed");
		if (n == 0) {
			if (recv(fd, &c, 1, MSG_DONTWAIT) == 1)
				break;	/* the sender is done, at its barrier */
			continue;
		}
		if (wc.opcode == IBV_WC_SEND) {
			busy--;
			continue;
		}
		for (uint32_t off = 0; off + 4 <= wc.byte_len; msgs++) {
			uint32_t len;

			memcpy(&len, rbuf(wc.wr_id) + off, 4);
			off += 4 + len;
		}
		post_recv(wc.wr_id);
		while (msgs >= (windows + 1) * WINDOW) {
			windows++;
			send_head(4);	/* the ACK */
		}
	}
	while (busy)
		reap(0);
	if (write(fd, &c, 1) != 1)	/* the other half of the barrier */
		die("peer went away");
}

int main(int argc, char **argv)
{
	static const char *const variant[2][2] = {
		{ "rq", "srq" }, { "rq-coalesced", "srq-coalesced" } };
	int gidx = 1, opt, sender_side;
	double secs = 0.5;
	unsigned int d, z;
	struct point pt;
	struct ibv_srq_init_attr sattr = {
		.attr = { .max_wr = NRECV, .max_sge = 1 } };

	bench_name = "conn-bench";
	while ((opt = getopt(argc, argv, "g:t:")) != -1) {
		if (opt == 'g')
			gidx = atoi(optarg);
		else if (opt == 't')
			secs = atof(optarg);
		else
			die("usage: conn-bench [-g GIDX] [-t SEC] [TARGET]");
	}
	if (secs < 0.05 || secs > 30)
		die("-t takes 0.05..30");
	sender_side = optind < argc;
	bench_open(&ctx, &pd, &cq, 4 * MAX_DEPTH + 2 * NRECV);
	srq = ibv_create_srq(pd, &sattr);
	if (!srq || posix_memalign((void **)&bufs, 4096,
				   (size_t)(MAX_DEPTH + 1 + NRECV) * PACK))
		die("cannot create the SRQ or the buffers");
	memset(bufs, 0, (size_t)(MAX_DEPTH + 1 + NRECV) * PACK);
	mr = ibv_reg_mr(pd, bufs, (size_t)(MAX_DEPTH + 1 + NRECV) * PACK,
			IBV_ACCESS_LOCAL_WRITE);
	if (!mr)
		die("ibv_reg_mr");
	if (sender_side) {
		printf("test,depth,variant,size,value\n");
		memory();
	}
	fd = tcp_connect(sender_side ? argv[optind] : NULL, "18612");

	/* The SRQ's receives are posted once; a QP's RQ gets its own. */
	use_srq = 1;
	post_recvs();
	for (d = 0; d < sizeof(rate_depths) / sizeof(rate_depths[0]); d++) {
		for (z = 0; z < sizeof(sizes) / sizeof(sizes[0]); z++) {
			for (opt = 0; opt < 4; opt++) {
				pt = (struct point) { rate_depths[d], opt >> 1,
						      opt & 1, sizes[z] };
				if (sender_side &&
				    (write(fd, &pt, sizeof(pt)) !=
				     (ssize_t)sizeof(pt)))
					die("peer went away");
				if (!sender_side &&
				    recv(fd, &pt, sizeof(pt), MSG_WAITALL) !=
				    (ssize_t)sizeof(pt))
					die("peer went away");
				depth = pt.depth;
				use_srq = pt.srq;
				connect_qp(depth, gidx);
				if (sender_side) {
					double r = sender(pt.coalesce, pt.size,
							  secs);

					printf("rate,%u,%s,%u,%.0f\n", depth,
					       variant[pt.coalesce][pt.srq],
					       pt.size, r);
					fflush(stdout);
					tcp_barrier(fd);
				} else {
					receiver();
				}
				if (ibv_destroy_qp(qp) || ibv_destroy_cq(cq))
					die("ibv_destroy_qp/cq");
			}
		}
	}
	return 0;
}
