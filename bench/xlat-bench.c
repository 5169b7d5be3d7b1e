// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * xlat-bench: the UZURA paper's translation table experiment
 * (docs/experiments/uzura.md): how often the NIC's on-chip translation
 * cache hits, against the size of the memory a stream of RDMA WRITEs
 * lands in and the order it lands in; and (-b) the bandwidth of RDMA
 * WRITEs between two nodes against the size of the MRs they stream
 * through.
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
 *
 *   xlat-bench -b [-x GIDX] [-p PORT]                       (server)
 *   xlat-bench -b [-x GIDX] [-p PORT] [-s SIZES] [-m MIBS] [-D SECS] HOST
 *
 * Bandwidth (bench/rate): one RC QP between the two nodes (QPN, GID and
 * PSN swapped over TCP PORT, default 18690).  For each MR size of MIBS
 * (MiB, comma-separated; default 1,4,16,64,256) both sides register a
 * fresh MR of that size in 4 KiB pages (the buffer is mmap'ed with
 * MADV_NOHUGEPAGE, so the driver cannot choose larger pages, which would
 * take the pressure off the cache); then for each message size of SIZES
 * (bytes; default 4096,65536) the client streams RDMA WRITEs for SECS
 * seconds (default 3), 128 in flight, each from offset o of its MR to
 * offset o of the server's, o going up by the message size and wrapping
 * at the end of the MR: the sender's NIC translates the source pages, the
 * receiver's the target pages, each through its own cache.  Each node's
 * xlat_hits and xlat_misses are read before and after (the server's over
 * the TCP connection).  Output: CSV rows "msg_bytes,mr_mib,secs,writes,
 * mb_s,tx_hits,tx_misses,rx_hits,rx_misses" (MB/s of 10^6 bytes).
 */
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

#include "../tests/guest/self-qp.h"
#include "bench-verbs.h"

#define MSG		64
#define INFLIGHT	16
#define PAGE		4096u

static const unsigned int mr_mib[] = { 1, 4, 16, 64, 256 };

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

/* -b: bandwidth against MR size, between two nodes. */
#define BW_DEPTH	128	/* writes in flight */
#define BW_SIGNAL	16	/* every 16th write is signaled */

enum { BW_MR = 1, BW_COUNT, BW_FREE, BW_QUIT };

struct bw_req {
	uint32_t op, mib;
};

struct bw_reply {
	uint64_t addr, hits, misses;
	uint32_t rkey, ok;
};

static void xfer(int fd, void *p, size_t n, int out)
{
	if ((out ? write(fd, p, n) : recv(fd, p, n, MSG_WAITALL)) !=
	    (ssize_t)n)
		die("peer went away");
}

/* @mib MiB in 4 KiB pages (no transparent huge pages), registered. */
static struct ibv_mr *bw_mr(struct ibv_pd *pd, unsigned int mib, int access)
{
	size_t len = (size_t)mib << 20;
	struct ibv_mr *mr;
	void *buf;

	buf = mmap(NULL, len, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED)
		return NULL;
	madvise(buf, len, MADV_NOHUGEPAGE);
	memset(buf, 0, len);
	mr = ibv_reg_mr(pd, buf, len, access);
	if (!mr)
		munmap(buf, len);
	return mr;
}

static void bw_free(struct ibv_mr *mr)
{
	void *buf = mr->addr;
	size_t len = mr->length;

	if (ibv_dereg_mr(mr))
		die("ibv_dereg_mr");
	munmap(buf, len);
}

static void bw_server(struct ibv_pd *pd, int fd)
{
	struct ibv_mr *mr = NULL;
	struct bw_req q;

	for (;;) {
		struct bw_reply r = { 0 };

		xfer(fd, &q, sizeof(q), 0);
		switch (q.op) {
		case BW_MR:
			if (mr)
				bw_free(mr);
			mr = bw_mr(pd, q.mib, IBV_ACCESS_LOCAL_WRITE |
				   IBV_ACCESS_REMOTE_WRITE);
			if (mr) {
				r.addr = (uintptr_t)mr->addr;
				r.rkey = mr->rkey;
				r.ok = 1;
			}
			break;
		case BW_COUNT:
			r.hits = counter("xlat_hits");
			r.misses = counter("xlat_misses");
			r.ok = 1;
			break;
		case BW_FREE:
			if (mr)
				bw_free(mr);
			mr = NULL;
			r.ok = 1;
			break;
		}
		r.ok |= q.op == BW_QUIT;
		xfer(fd, &r, sizeof(r), 1);
		if (q.op != BW_MR && q.op != BW_COUNT && q.op != BW_FREE)
			return;
	}
}

static struct bw_reply bw_ask(int fd, uint32_t op, uint32_t mib)
{
	struct bw_req q = { op, mib };
	struct bw_reply r;

	xfer(fd, &q, sizeof(q), 1);
	xfer(fd, &r, sizeof(r), 0);
	if (!r.ok)
		die("the server could not register its MR");
	return r;
}

/* Stream @size-byte WRITEs through @mr to the peer's MR for @secs. */
static void bw_run(struct ibv_qp *qp, struct ibv_cq *cq, struct ibv_mr *mr,
		   struct bw_reply *peer, unsigned int mib, uint32_t size,
		   int secs, int fd)
{
	uint64_t len = (uint64_t)mib << 20, off = 0, posted = 0, done = 0;
	uint64_t writes = 0;
	uint64_t h0 = counter("xlat_hits"), m0 = counter("xlat_misses");
	struct bw_reply r0 = bw_ask(fd, BW_COUNT, 0), r1;
	double t0 = now_us(), t, end = t0 + secs * 1e6;
	uint64_t h1, m1;

	for (;;) {
		struct ibv_wc wc[BW_DEPTH / BW_SIGNAL + 1];
		int n, i, more = now_us() < end;

		while (more && posted - done < BW_DEPTH) {
			struct ibv_sge sge = { (uintptr_t)mr->addr + off, size,
					       mr->lkey };
			struct ibv_send_wr wr = {
				.wr_id = posted, .sg_list = &sge, .num_sge = 1,
				.opcode = IBV_WR_RDMA_WRITE,
				.send_flags = (posted + 1) % BW_SIGNAL ? 0 :
					      IBV_SEND_SIGNALED,
				.wr.rdma = { .remote_addr = peer->addr + off,
					     .rkey = peer->rkey },
			}, *bad;

			if (ibv_post_send(qp, &wr, &bad))
				die("post WRITE");
			posted++;
			writes++;
			off = off + 2 * size > len ? 0 : off + size;
		}
		/*
		 * Stopping: a signaled 1-byte WRITE after an unsignaled tail
		 * completes it (an RC QP completes in order), and the next
		 * run starts with an empty send queue.
		 */
		if (!more && posted % BW_SIGNAL) {
			struct ibv_sge sge = { (uintptr_t)mr->addr, 1,
					       mr->lkey };
			struct ibv_send_wr wr = {
				.wr_id = posted | (BW_SIGNAL - 1), .sg_list = &sge,
				.num_sge = 1,
				.opcode = IBV_WR_RDMA_WRITE,
				.send_flags = IBV_SEND_SIGNALED,
				.wr.rdma = { .remote_addr = peer->addr,
					     .rkey = peer->rkey },
			}, *bad;

			if (ibv_post_send(qp, &wr, &bad))
				die("post WRITE");
			posted = (posted | (BW_SIGNAL - 1)) + 1;
		}
		if (!more && done == posted)
			break;
		n = ibv_poll_cq(cq, BW_DEPTH / BW_SIGNAL + 1, wc);
		if (n < 0)
			die("poll CQ");
		for (i = 0; i < n; i++) {
			if (wc[i].status)
				die(ibv_wc_status_str(wc[i].status));
			done = wc[i].wr_id + 1;
		}
	}
	t = now_us() - t0;
	h1 = counter("xlat_hits");
	m1 = counter("xlat_misses");
	r1 = bw_ask(fd, BW_COUNT, 0);
	printf("%u,%u,%.3f,%llu,%.2f,%llu,%llu,%llu,%llu\n", size, mib,
	       t / 1e6, (unsigned long long)writes,
	       (double)writes * size / t,
	       (unsigned long long)(h1 - h0), (unsigned long long)(m1 - m0),
	       (unsigned long long)(r1.hits - r0.hits),
	       (unsigned long long)(r1.misses - r0.misses));
	fflush(stdout);
}

/* A comma-separated list of up to 16 numbers in [lo, hi]. */
static int parse_list(const char *s, unsigned int *v, unsigned int lo,
		      unsigned int hi)
{
	int n = 0;
	char *e;

	while (*s && n < 16) {
		unsigned long x = strtoul(s, &e, 10);

		if (e == s || x < lo || x > hi || (*e && *e != ','))
			return 0;
		v[n++] = x;
		s = *e ? e + 1 : e;
	}
	return *s ? 0 : n;
}

static int bw_main(const char *host, const char *port, int gidx,
		   const char *sizes, const char *mibs, int secs)
{
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = BW_DEPTH + 1, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	unsigned int size[16], mib[16], i, j;
	int nsize, nmib, fd;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;

	nsize = parse_list(sizes, size, 1, 1 << 20);
	nmib = parse_list(mibs, mib, 1, 1024);
	if (!nsize || !nmib)
		die("-s takes sizes of 1..1048576 bytes, -m of 1..1024 MiB");
	if (secs < 1 || secs > 60)
		die("-D takes 1..60");
	fd = tcp_connect(host, port);
	bench_open(&ctx, &pd, &cq, BW_DEPTH);
	init.send_cq = init.recv_cq = cq;
	qp = ibv_create_qp(pd, &init);
	if (!qp)
		die("cannot create the QP");
	if (gidx < 0)
		gidx = ipv4_gid_index(ctx);
	bench_connect(qp, gidx, fd, IBV_ACCESS_REMOTE_WRITE, NULL);
	if (!host) {
		bw_server(pd, fd);
		return 0;
	}
	printf("msg_bytes,mr_mib,secs,writes,mb_s,tx_hits,tx_misses,"
	       "rx_hits,rx_misses\n");
	for (i = 0; i < (unsigned int)nmib; i++) {
		struct ibv_mr *mr = bw_mr(pd, mib[i], IBV_ACCESS_LOCAL_WRITE);
		struct bw_reply peer;

		if (!mr)
			die("cannot register the MR");
		peer = bw_ask(fd, BW_MR, mib[i]);
		for (j = 0; j < (unsigned int)nsize; j++)
			if ((uint64_t)size[j] <= (uint64_t)mib[i] << 20)
				bw_run(qp, cq, mr, &peer, mib[i], size[j],
				       secs, fd);
		bw_ask(fd, BW_FREE, 0);
		bw_free(mr);
	}
	bw_ask(fd, BW_QUIT, 0);
	return 0;
}

int main(int argc, char **argv)
{
	struct ibv_context *ctx;
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 2 * INFLIGHT, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1,
			 .max_inline_data = MSG },
	};
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	const char *port = "18690", *sizes = "4096,65536";
	const char *mibs = "1,4,16,64,256";
	long writes = 20000;
	int opt, gidx = -1, random, bw = 0, secs = 3;
	unsigned int i;

	bench_name = "xlat-bench";
	while ((opt = getopt(argc, argv, "n:bx:p:s:m:D:")) != -1) {
		switch (opt) {
		case 'n':
			writes = atol(optarg);
			break;
		case 'b':
			bw = 1;
			break;
		case 'x':
			gidx = atoi(optarg);
			break;
		case 'p':
			port = optarg;
			break;
		case 's':
			sizes = optarg;
			break;
		case 'm':
			mibs = optarg;
			break;
		case 'D':
			secs = atoi(optarg);
			break;
		default:
			die("usage: xlat-bench [-n WRITES] | -b [-x GIDX] "
			    "[-p PORT] [-s SIZES] [-m MIBS] [-D SECS] [HOST]");
		}
	}
	if (bw)
		return bw_main(optind < argc ? argv[optind] : NULL, port, gidx,
			       sizes, mibs, secs);
	ctx = open_uzura();
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
