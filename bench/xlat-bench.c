// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * xlat-bench: the UZURA paper's translation table experiment
 * (docs/experiments/uzura.md): how often the NIC's on-chip translation
 * cache hits, against the size of the memory a stream of RDMA WRITEs
 * lands in and the order it lands in.
 *
 *   xlat-bench [-n WRITES]      (on one node; prints CSV)
 *
 * One RC QP connected to itself on uzura0 (its packets loop back inside
 * the NIC) writes 64 bytes of inline data (so the sender's side needs no
 * translation) at the start of one page after another of an MR of
 * 1 MiB .. 256 MiB, in page order (seq) or at pages drawn at random
 * (random), 16 writes in flight.  The NIC translates each write's target
 * page: a hit in its cache (device-spec 8.10, `xlat-cache-entries`), or a
 * miss that reads the MR's page table from host memory.  Each run has an
 * MR of its own, freshly registered, so it starts with nothing cached.  The NIC's
 * xlat_hits, xlat_misses and xlat_evictions counters, read before and
 * after, give the hit rate.  Output: CSV rows
 * "mr_mib,pattern,writes,hits,misses,evictions,us_per_write".
 */
#include <stdlib.h>
#include <time.h>

#include "../tests/guest/self-qp.h"

#define MSG		64
#define INFLIGHT	16
#define PAGE		4096u

static const unsigned int mr_mib[] = { 1, 4, 16, 64, 256 };

static void die(const char *what)
{
	fprintf(stderr, "xlat-bench: %s\n", what);
	exit(1);
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* xorshift64: a fixed sequence, so runs compare. */
static uint64_t next_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void run(struct ibv_qp *qp, struct ibv_cq *cq, char *buf,
		uint32_t rkey, unsigned int mib, int random, long writes)
{
	uint64_t pages = (uint64_t)mib << 20 >> 12, seed = 0x9e3779b97f4a7c15;
	uint64_t h0 = counter("xlat_hits"), m0 = counter("xlat_misses");
	uint64_t e0 = counter("xlat_evictions");
	static char msg[MSG];
	long posted = 0, done = 0;
	double t0 = now_us(), t;

	while (done < writes) {
		struct ibv_wc wc[INFLIGHT];
		int n, i;

		while (posted < writes && posted - done < INFLIGHT) {
			uint64_t page = random ? next_rand(&seed) % pages :
						 (uint64_t)posted % pages;
			struct ibv_sge sge = { (uintptr_t)msg, MSG, 0 };
			struct ibv_send_wr wr = {
				.wr_id = posted, .sg_list = &sge, .num_sge = 1,
				.opcode = IBV_WR_RDMA_WRITE,
				.send_flags = IBV_SEND_SIGNALED |
					      IBV_SEND_INLINE,
				.wr.rdma = { .remote_addr = (uintptr_t)buf +
					     page * PAGE, .rkey = rkey },
			}, *bad;

			if (ibv_post_send(qp, &wr, &bad))
				die("post WRITE");
			posted++;
		}
		n = ibv_poll_cq(cq, INFLIGHT, wc);
		if (n < 0)
			die("poll CQ");
		for (i = 0; i < n; i++)
			if (wc[i].status)
				die(ibv_wc_status_str(wc[i].status));
		done += n;
	}
	t = now_us() - t0;
	printf("%u,%s,%ld,%llu,%llu,%llu,%.2f\n", mib,
	       random ? "random" : "seq", writes,
	       (unsigned long long)(counter("xlat_hits") - h0),
	       (unsigned long long)(counter("xlat_misses") - m0),
	       (unsigned long long)(counter("xlat_evictions") - e0),
	       t / writes);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	struct ibv_context *ctx = open_uzura();
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 2 * INFLIGHT, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1,
			 .max_inline_data = MSG },
	};
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	long writes = 20000;
	int opt, gidx, random;
	unsigned int i;

	while ((opt = getopt(argc, argv, "n:")) != -1) {
		if (opt != 'n')
			die("usage: xlat-bench [-n WRITES]");
		writes = atol(optarg);
	}
	if (writes < 1 || writes > 10000000)
		die("-n takes 1..10000000");
	pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	cq = pd ? ibv_create_cq(ctx, 2 * INFLIGHT, NULL, NULL, 0) : NULL;
	init.send_cq = init.recv_cq = cq;
	qp = cq ? ibv_create_qp(pd, &init) : NULL;
	gidx = ctx ? ipv4_gid_index(ctx) : -1;
	if (!qp || gidx < 0 ||
	    connect_self(ctx, qp, gidx, IBV_ACCESS_REMOTE_WRITE))
		die("cannot set up a QP on uzura0");
	if (!counter("xlat_hits") && !counter("xlat_misses"))
		fprintf(stderr, "xlat-bench: warning: no xlat_* counters\n");
	printf("mr_mib,pattern,writes,hits,misses,evictions,us_per_write\n");
	for (i = 0; i < sizeof(mr_mib) / sizeof(mr_mib[0]); i++) {
		size_t len = (size_t)mr_mib[i] << 20;
		char *buf;
		struct ibv_mr *mr;

		if (posix_memalign((void **)&buf, PAGE, len))
			die("out of memory");
		memset(buf, 0, len);
		/* A fresh MR per run: each starts with nothing cached. */
		for (random = 0; random < 2; random++) {
			mr = ibv_reg_mr(pd, buf, len, IBV_ACCESS_LOCAL_WRITE |
					IBV_ACCESS_REMOTE_WRITE);
			if (!mr)
				die("ibv_reg_mr");
			run(qp, cq, buf, mr->rkey, mr_mib[i], random, writes);
			ibv_dereg_mr(mr);
		}
		free(buf);
	}
	return 0;
}
