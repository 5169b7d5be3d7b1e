// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * pin-bench: the Open-MX pinning paper's experiment
 * (docs/experiments/pinning.md): what pinning each message's buffer
 * costs a stream of RDMA writes, against a registration cache and
 * against on-demand paging.
 *
 *   node 2:  pin-bench [-g GIDX]                     (target)
 *   node 1:  pin-bench [-g GIDX] [-r REPS] TARGET    (source)
 *
 * The source streams RDMA WRITEs of SIZE bytes (4 KiB .. 4 MiB), WINDOW
 * of them in flight, each from its own slot of a buffer the program
 * touched once, into the target's buffer (registered once, for the whole
 * run).  How the source's memory is registered is the flow:
 *
 *   pin        each message: ibv_reg_mr of its slot (pinned), the write,
 *              ibv_dereg_mr when it completes: pin every time
 *   cache      one MR over the whole buffer, registered before: what a
 *              registration (pin-down) cache gives once warm
 *   odp        each message: ibv_reg_mr of its slot with
 *              IBV_ACCESS_ON_DEMAND (declared, not pinned: the NIC faults
 *              the pages in during the write), ibv_dereg_mr after
 *   odp-cache  one ODP MR over the whole buffer, registered before
 *
 * Output, on the source's stdout: CSV rows "flow,size,msgs,mbps,reg_us":
 * throughput (10^6 bytes/s, the median of REPS runs) and for the
 * per-message flows the median time of one ibv_reg_mr plus ibv_dereg_mr.
 * Control goes over TCP port 18611.  Build: cc pin-bench.c -luzura -libverbs
 */
#include <stdint.h>

#include "bench-verbs.h"

#define MIN_SIZE	4096u
#define MAX_SIZE	(4u << 20)
#define WINDOW		4
#define POINT_BYTES	(32u << 20)	/* per run of a point, about */
#define MIN_MSGS	32u
#define MAX_MSGS	2000u
#define MAX_REPS	20

enum { PIN, CACHE, ODP, ODP_CACHE, NFLOWS };
static const char *const flow_name[NFLOWS] = {
	"pin", "cache", "odp", "odp-cache"
};

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_qp *qp;
static char *buf;			/* WINDOW slots of MAX_SIZE */
static double reg_t[MAX_MSGS];		/* reg + dereg, per message */

struct peer_buf {
	uint64_t addr;
	uint32_t rkey;
	uint32_t pad;
};

static struct ibv_mr *reg(void *addr, size_t len, int odp)
{
	struct ibv_mr *mr = ibv_reg_mr(pd, addr, len, IBV_ACCESS_LOCAL_WRITE |
				       (odp ? IBV_ACCESS_ON_DEMAND : 0));

	if (!mr)
		die(odp ? "ibv_reg_mr (ODP)" : "ibv_reg_mr");
	return mr;
}

/* One run of a point: MSGS writes of SIZE; returns MB/s. */
static double run(int flow, uint32_t size, uint32_t msgs,
		  const struct peer_buf *peer, struct ibv_mr *whole,
		  int *nreg)
{
	int per_msg = flow == PIN || flow == ODP;
	struct ibv_mr *slot_mr[WINDOW] = {};
	uint32_t posted = 0, done = 0;
	double t0 = now_us(), treg;

	*nreg = 0;
	while (done < msgs) {
		struct ibv_wc wc;
		int n;

		if (posted < msgs && posted - done < WINDOW) {
			int s = posted % WINDOW;
			char *a = buf + (size_t)s * MAX_SIZE;
			struct ibv_sge sge = { (uintptr_t)a, size, 0 };
			struct ibv_send_wr wr = {
				.wr_id = s, .sg_list = &sge, .num_sge = 1,
				.opcode = IBV_WR_RDMA_WRITE,
				.send_flags = IBV_SEND_SIGNALED,
				.wr.rdma = { .remote_addr = peer->addr +
					     (uint64_t)s * MAX_SIZE,
					     .rkey = peer->rkey },
			}, *bad;

			if (per_msg) {
				treg = now_us();
				slot_mr[s] = reg(a, size, flow == ODP);
				reg_t[posted] = now_us() - treg;
			}
			sge.lkey = per_msg ? slot_mr[s]->lkey : whole->lkey;
			if (ibv_post_send(qp, &wr, &bad))
				die("post WRITE");
			posted++;
			continue;
		}
		n = ibv_poll_cq(cq, 1, &wc);
		if (n < 0)
			die("poll CQ");
		if (!n)
			continue;
		if (wc.status) {
			fprintf(stderr, "pin-bench: %s: %s\n", flow_name[flow],
				ibv_wc_status_str(wc.status));
			exit(1);
		}
		if (per_msg) {
			treg = now_us();
			if (ibv_dereg_mr(slot_mr[wc.wr_id]))
				die("ibv_dereg_mr");
			/* An RC QP completes its writes in order. */
			reg_t[done] += now_us() - treg;
			*nreg = done + 1;
		}
		done++;
	}
	return (double)size * msgs / (now_us() - t0);
}

static void target(int fd)
{
	struct peer_buf me;
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, (size_t)WINDOW * MAX_SIZE,
				       IBV_ACCESS_LOCAL_WRITE |
				       IBV_ACCESS_REMOTE_WRITE);

	if (!mr)
		die("ibv_reg_mr");
	me = (struct peer_buf) { .addr = (uintptr_t)buf, .rkey = mr->rkey };
	if (write(fd, &me, sizeof(me)) != (ssize_t)sizeof(me))
		die("peer went away");
	tcp_barrier(fd);		/* the source is done */
}

static void source(int fd, int reps)
{
	double mbps[MAX_REPS], regs[MAX_REPS];
	size_t len = (size_t)WINDOW * MAX_SIZE;
	struct ibv_mr *whole[NFLOWS] = {};
	struct peer_buf peer;
	uint32_t size, msgs;
	int flow, r, nreg;

	if (recv(fd, &peer, sizeof(peer), MSG_WAITALL) != (ssize_t)sizeof(peer))
		die("peer went away");
	whole[CACHE] = reg(buf, len, 0);
	whole[ODP_CACHE] = reg(buf, len, 1);
	printf("flow,size,msgs,mbps,reg_us\n");
	for (size = MIN_SIZE; size <= MAX_SIZE; size *= 4) {
		msgs = POINT_BYTES / size;
		msgs = msgs < MIN_MSGS ? MIN_MSGS :
		       msgs > MAX_MSGS ? MAX_MSGS : msgs;
		for (flow = 0; flow < NFLOWS; flow++) {
			/* The flows take turns within each repetition. */
			for (r = 0; r < reps; r++) {
				mbps[r] = run(flow, size, msgs, &peer,
					      whole[flow], &nreg);
				regs[r] = nreg ? median(reg_t, nreg) : 0;
			}
			printf("%s,%u,%u,%.2f,", flow_name[flow], size, msgs,
			       median(mbps, reps));
			if (flow == PIN || flow == ODP)
				printf("%.2f", median(regs, reps));
			printf("\n");
			fflush(stdout);
		}
	}
	ibv_dereg_mr(whole[CACHE]);
	ibv_dereg_mr(whole[ODP_CACHE]);
	tcp_barrier(fd);
}

int main(int argc, char **argv)
{
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 2 * WINDOW, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	int gidx = 1, reps = 3, opt, fd;

	bench_name = "pin-bench";
	while ((opt = getopt(argc, argv, "g:r:")) != -1) {
		if (opt == 'g')
			gidx = atoi(optarg);
		else if (opt == 'r')
			reps = atoi(optarg);
		else
			die("usage: pin-bench [-g GIDX] [-r REPS] [TARGET]");
	}
	if (reps < 1 || reps > MAX_REPS)
		die("-r takes 1..20");
	fd = tcp_connect(optind < argc ? argv[optind] : NULL, "18611");
	bench_open(&ctx, &pd, &cq, 4 * WINDOW);
	if (posix_memalign((void **)&buf, 4096, (size_t)WINDOW * MAX_SIZE))
		die("out of memory");
	memset(buf, 0x5a, (size_t)WINDOW * MAX_SIZE);
	init.send_cq = init.recv_cq = cq;
	qp = ibv_create_qp(pd, &init);
	if (!qp)
		die("cannot create the QP");
	bench_connect(qp, gidx, fd, IBV_ACCESS_REMOTE_WRITE, NULL);
	if (optind < argc)
		source(fd, reps);
	else
		target(fd);
	return 0;
}
