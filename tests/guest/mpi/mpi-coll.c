// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * mpi-coll: MPI collectives with every result element checked.
 *
 * MPI_Barrier and MPI_Ibarrier (a rank entering last holds the others
 * back), MPI_Bcast (sizes up to
 * the largest size, rotating roots), MPI_Reduce and MPI_Allreduce (MPI_SUM
 * on int and on double with exactly representable values, MPI_MAX on int,
 * MPI_MINLOC on MPI_2INT with ties, MPI_IN_PLACE), MPI_Gather, MPI_Scatter,
 * MPI_Allgather, MPI_Alltoall, MPI_Alltoallv (uneven and zero counts, gaps
 * between blocks), MPI_Reduce_scatter_block, MPI_Scan, MPI_Exscan, two
 * concurrent MPI_Iallreduce, and MPI_Comm_split (even/odd, reversed key)
 * with checks of the new ranks and an MPI_Allreduce in each half.
 * Received bytes are checked against a pattern of (sender, message, offset)
 * with a poisoned guard byte after each receive buffer (mpitap.h).
 *
 * Usage: mpirun -np N mpi-coll [MAX_SIZE[K|M]]
 */
#include "mpitap.h"


enum kind { K_BCAST = 1, K_GATHER, K_SCATTER, K_ALLGATHER, K_ALLTOALL, K_ALLTOALLV };

static uint32_t key(enum kind k, int si, int part)
{
	return (uint32_t)k << 24 | (uint32_t)si << 16 | (uint32_t)part;
}

/* ---- contributions of rank r to element i of the reductions ---- */

static int f_int(int r, size_t i)
{
	return (int)((i * 7 + (size_t)r * 13) % 1001) - 500 + r;
}

/* multiples of 1/4 below 2^21: every sum is exact whatever the order */
static double f_dbl(int r, size_t i)
{
	return f_int(r, i) * 0.25 + (r + 1) * 1024.0;
}

static int f_max(int r, size_t i)
{
	return (int)(mt_mix((uint64_t)r << 32 | i) % 1000003);
}

struct int2 {
	int val, loc;
};

static int f_minloc(int r, size_t i)
{
	return (int)((i + (size_t)r) % (size_t)mt_size) / 2;	/* two ranks tie */
}

static long long sum_int(size_t i, int from, int to)
{
	long long s = 0;

	for (int r = from; r < to; r++)
		s += f_int(r, i);
	return s;
}

/* The c-element result of an all-ranks MPI_SUM of f_int, then its guard. */
static void check_int_sums(const int *r, size_t c)
{
	for (size_t i = 0; i < c; i++)
		if (r[i] != sum_int(i, 0, mt_size))
			mt_bad_at(&mt_cur, (long long)(i * sizeof(int)));
	mt_untouched_at(r + c, sizeof(int), (long long)(c * sizeof(int)));
}

/* The same for f_dbl. */
static void check_dbl_sums(const double *r, size_t c)
{
	for (size_t i = 0; i < c; i++) {
		double e = 0;

		for (int k = 0; k < mt_size; k++)
			e += f_dbl(k, i);
		if (r[i] != e)
			mt_bad_at(&mt_cur, (long long)(i * sizeof(double)));
	}
	mt_untouched_at(r + c, sizeof(double), (long long)(c * sizeof(double)));
}

/* count elements: those that fit in the largest size at elem bytes each */
static int counts(size_t *out, size_t elem, size_t div)
{
	static const size_t c[] = { 1, 7, 1000, 65537 };
	int n = 0;

	for (size_t k = 0; k < sizeof(c) / sizeof(c[0]); k++)
		if (c[k] * elem * div <= mt_max)
			out[n++] = c[k];
	if (mt_max / elem / div > (n ? out[n - 1] : 0))
		out[n++] = mt_max / elem / div;
	if (!n)
		out[n++] = 1;
	return n;
}

static void *xalloc(size_t len)
{
	void *p = malloc(len ? len : 1);

	if (!p) {
		fprintf(stderr, "rank %d: cannot allocate %zu bytes\n", mt_rank, len);
		MPI_Abort(MPI_COMM_WORLD, 3);
	}
	memset(p, MT_POISON, len);
	return p;
}

/* ---- barrier ---- */

static void test_barrier(void)
{
	int roots[2] = { 0, mt_size - 1 };

	for (int i = 0; i < 50; i++)
		MT(MPI_Barrier(MPI_COMM_WORLD));
	mt_check("MPI_Barrier x50");

	/*
	 * Without clocks: the root enters an MPI_Ibarrier only after every
	 * other rank has seen its own barrier still incomplete, so a
	 * barrier that completes early is caught whatever the timing.
	 */
	for (int k = 0; k < 2; k++) {
		MPI_Request req;
		int flag = 0, token = 0;

		if (mt_rank == roots[k]) {
			for (int r = 0; r < mt_size - 1; r++)
				MT(MPI_Recv(&token, 1, MPI_INT, MPI_ANY_SOURCE, 77,
					    MPI_COMM_WORLD, MPI_STATUS_IGNORE));
			MT(MPI_Ibarrier(MPI_COMM_WORLD, &req));
			MT(MPI_Wait(&req, MPI_STATUS_IGNORE));
		} else {
			MT(MPI_Ibarrier(MPI_COMM_WORLD, &req));
			for (int i = 0; i < 100 && !flag; i++)
				MT(MPI_Test(&req, &flag, MPI_STATUS_IGNORE));
			if (flag)
				mt_fail("MPI_Ibarrier completed before rank %d entered it",
					roots[k]);
			MT(MPI_Send(&token, 1, MPI_INT, roots[k], 77, MPI_COMM_WORLD));
			if (!flag)
				MT(MPI_Wait(&req, MPI_STATUS_IGNORE));
		}
		mt_check("MPI_Ibarrier waits for rank %d, which enters last", roots[k]);
	}
}

/* ---- bytes: bcast, gather, scatter, allgather, alltoall(v) ---- */

static void test_bcast(size_t len, int si, int root)
{
	enum mt_mem mem = (enum mt_mem)(si % MT_NMEM);
	struct mt_buf b;

	mt_alloc(&b, len + 1, mem);
	if (mt_rank == root)
		mt_fill(b.p, len, (uint32_t)root, key(K_BCAST, si, 0));
	MT(MPI_Bcast(b.p, (int)len, MPI_BYTE, root, MPI_COMM_WORLD));
#ifdef INJECT_BUG
	/* test of the test: corrupt one received byte on rank 1 */
	if (si == 2 && mt_rank == 1 && len)
		b.p[len - 1] ^= 0x40;
#endif
	mt_verify(b.p, len, (uint32_t)root, key(K_BCAST, si, 0));
	mt_check("MPI_Bcast %zu B from root %d (%s)", len, root, mt_mem_name[mem]);
	mt_free(&b);
}

static void test_gather_scatter(size_t b, int si)
{
	int root = (si + 1) % mt_size, n = mt_size;
	unsigned char *sb = xalloc(b * (size_t)n), *rb = xalloc(b * (size_t)n + 1);

	/* Gather: block r at the root comes from rank r */
	mt_fill(sb, b, (uint32_t)mt_rank, key(K_GATHER, si, 0));
	MT(MPI_Gather(sb, (int)b, MPI_BYTE, rb, (int)b, MPI_BYTE, root, MPI_COMM_WORLD));
	if (mt_rank == root) {
		for (int r = 0; r < n; r++)
			mt_verify_at(rb + (size_t)r * b, b, (uint32_t)r, key(K_GATHER, si, 0),
				     (long long)((size_t)r * b));
		mt_untouched_at(rb + (size_t)n * b, 1, (long long)((size_t)n * b));
	}
	mt_check("MPI_Gather %zu B per rank to root %d", b, root);

	/* Scatter: block r of the root goes to rank r */
	memset(rb, MT_POISON, b + 1);
	if (mt_rank == root)
		for (int r = 0; r < n; r++)
			mt_fill(sb + (size_t)r * b, b, (uint32_t)root, key(K_SCATTER, si, r));
	MT(MPI_Scatter(sb, (int)b, MPI_BYTE, rb, (int)b, MPI_BYTE, root, MPI_COMM_WORLD));
	mt_verify(rb, b, (uint32_t)root, key(K_SCATTER, si, mt_rank));
	mt_check("MPI_Scatter %zu B per rank from root %d", b, root);

	/* Allgather */
	memset(rb, MT_POISON, b * (size_t)n + 1);
	mt_fill(sb, b, (uint32_t)mt_rank, key(K_ALLGATHER, si, 0));
	MT(MPI_Allgather(sb, (int)b, MPI_BYTE, rb, (int)b, MPI_BYTE, MPI_COMM_WORLD));
	for (int r = 0; r < n; r++)
		mt_verify_at(rb + (size_t)r * b, b, (uint32_t)r, key(K_ALLGATHER, si, 0),
			     (long long)((size_t)r * b));
	mt_untouched_at(rb + (size_t)n * b, 1, (long long)((size_t)n * b));
	mt_check("MPI_Allgather %zu B per rank", b);

	/* Alltoall: block d of rank s goes to block s of rank d */
	memset(rb, MT_POISON, b * (size_t)n + 1);
	for (int d = 0; d < n; d++)
		mt_fill(sb + (size_t)d * b, b, (uint32_t)mt_rank, key(K_ALLTOALL, si, d));
	MT(MPI_Alltoall(sb, (int)b, MPI_BYTE, rb, (int)b, MPI_BYTE, MPI_COMM_WORLD));
	for (int s = 0; s < n; s++)
		mt_verify_at(rb + (size_t)s * b, b, (uint32_t)s, key(K_ALLTOALL, si, mt_rank),
			     (long long)((size_t)s * b));
	mt_untouched_at(rb + (size_t)n * b, 1, (long long)((size_t)n * b));
	mt_check("MPI_Alltoall %zu B per pair", b);
	free(sb);
	free(rb);
}

/* Bytes that rank s sends rank d in MPI_Alltoallv: uneven, sometimes 0. */
static size_t vcount(int s, int d, size_t u)
{
	return (size_t)((s * 7 + d * 3) % 5) * u / 4 + (size_t)((s + d) % 2);
}

static void test_alltoallv(size_t u, int si)
{
	int n = mt_size, *sc = calloc((size_t)n, sizeof(int)), *sd = calloc((size_t)n, sizeof(int));
	int *rc = calloc((size_t)n, sizeof(int)), *rd = calloc((size_t)n, sizeof(int));
	size_t stot = 0, rtot = 0;
	unsigned char *sb, *rb;

	/* send blocks packed in reverse order of destination */
	for (int d = n - 1; d >= 0; d--) {
		sc[d] = (int)vcount(mt_rank, d, u);
		sd[d] = (int)stot;
		stot += (size_t)sc[d];
	}
	/* receive blocks in order of source, one poisoned byte between them */
	for (int s = 0; s < n; s++) {
		rc[s] = (int)vcount(s, mt_rank, u);
		rd[s] = (int)rtot;
		rtot += (size_t)rc[s] + 1;
	}
	sb = xalloc(stot);
	rb = xalloc(rtot);
	for (int d = 0; d < n; d++)
		mt_fill(sb + sd[d], (size_t)sc[d], (uint32_t)mt_rank, key(K_ALLTOALLV, si, d));
	MT(MPI_Alltoallv(sb, sc, sd, MPI_BYTE, rb, rc, rd, MPI_BYTE, MPI_COMM_WORLD));
	for (int s = 0; s < n; s++) {
		mt_verify_at(rb + rd[s], (size_t)rc[s], (uint32_t)s, key(K_ALLTOALLV, si, mt_rank),
			     rd[s]);
		mt_untouched_at(rb + rd[s] + rc[s], 1, rd[s] + rc[s]);
	}
	mt_check("MPI_Alltoallv uneven counts (0 .. %zu B per pair)", u + 1);
	free(sb);
	free(rb);
	free(sc);
	free(sd);
	free(rc);
	free(rd);
}

/* ---- reductions ---- */

static void test_reduce(size_t c, int ci)
{
	int root = (ci + mt_size - 1) % mt_size;
	int *si = xalloc(c * sizeof(int)), *ri = xalloc((c + 1) * sizeof(int));
	double *sdb = xalloc(c * sizeof(double)), *rdb = xalloc((c + 1) * sizeof(double));
	struct int2 *sl = xalloc(c * sizeof(*sl)), *rl = xalloc((c + 1) * sizeof(*rl));

	for (size_t i = 0; i < c; i++) {
		si[i] = f_int(mt_rank, i);
		sdb[i] = f_dbl(mt_rank, i);
	}

	/* Reduce, int, sum */
	MT(MPI_Reduce(si, ri, (int)c, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD));
	if (mt_rank == root)
		check_int_sums(ri, c);
	mt_check("MPI_Reduce MPI_SUM MPI_INT x%zu to root %d", c, root);

	/* Reduce, double, sum */
	MT(MPI_Reduce(sdb, rdb, (int)c, MPI_DOUBLE, MPI_SUM, root, MPI_COMM_WORLD));
	if (mt_rank == root)
		check_dbl_sums(rdb, c);
	mt_check("MPI_Reduce MPI_SUM MPI_DOUBLE x%zu to root %d", c, root);

	/* Allreduce, int, sum */
	memset(ri, MT_POISON, (c + 1) * sizeof(int));
	MT(MPI_Allreduce(si, ri, (int)c, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
	check_int_sums(ri, c);
	mt_check("MPI_Allreduce MPI_SUM MPI_INT x%zu", c);

	/* Allreduce, int, sum, in place */
	for (size_t i = 0; i < c; i++)
		ri[i] = f_int(mt_rank, i);
	MT(MPI_Allreduce(MPI_IN_PLACE, ri, (int)c, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
	check_int_sums(ri, c);
	mt_check("MPI_Allreduce MPI_IN_PLACE MPI_SUM MPI_INT x%zu", c);

	/* Allreduce, double, sum */
	memset(rdb, MT_POISON, (c + 1) * sizeof(double));
	MT(MPI_Allreduce(sdb, rdb, (int)c, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
	check_dbl_sums(rdb, c);
	mt_check("MPI_Allreduce MPI_SUM MPI_DOUBLE x%zu", c);

	/* Allreduce, int, max */
	for (size_t i = 0; i < c; i++)
		si[i] = f_max(mt_rank, i);
	memset(ri, MT_POISON, (c + 1) * sizeof(int));
	MT(MPI_Allreduce(si, ri, (int)c, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
	for (size_t i = 0; i < c; i++) {
		int e = f_max(0, i);

		for (int r = 1; r < mt_size; r++)
			if (f_max(r, i) > e)
				e = f_max(r, i);
		if (ri[i] != e)
			mt_bad_at(&mt_cur, (long long)(i * sizeof(int)));
	}
	mt_untouched_at(ri + c, sizeof(int), (long long)(c * sizeof(int)));
	mt_check("MPI_Allreduce MPI_MAX MPI_INT x%zu", c);

	/* Allreduce, 2int, minloc: the lower rank wins a tie */
	for (size_t i = 0; i < c; i++) {
		sl[i].val = f_minloc(mt_rank, i);
		sl[i].loc = mt_rank;
	}
	MT(MPI_Allreduce(sl, rl, (int)c, MPI_2INT, MPI_MINLOC, MPI_COMM_WORLD));
	for (size_t i = 0; i < c; i++) {
		struct int2 e = { f_minloc(0, i), 0 };

		for (int r = 1; r < mt_size; r++)
			if (f_minloc(r, i) < e.val)
				e.val = f_minloc(r, i), e.loc = r;
		if (rl[i].val != e.val || rl[i].loc != e.loc)
			mt_bad_at(&mt_cur, (long long)(i * sizeof(*rl)));
	}
	mt_untouched_at(rl + c, sizeof(*rl), (long long)(c * sizeof(*rl)));
	mt_check("MPI_Allreduce MPI_MINLOC MPI_2INT x%zu", c);

	free(si);
	free(ri);
	free(sdb);
	free(rdb);
	free(sl);
	free(rl);
}

static void test_scatter_scan(size_t c)
{
	size_t n = (size_t)mt_size;
	int *s = xalloc(n * c * sizeof(int)), *r = xalloc((c + 1) * sizeof(int));

	/* Reduce_scatter_block: rank k gets the sums of block k */
	for (size_t j = 0; j < n * c; j++)
		s[j] = f_int(mt_rank, j);
	MT(MPI_Reduce_scatter_block(s, r, (int)c, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
	for (size_t i = 0; i < c; i++)
		if (r[i] != sum_int((size_t)mt_rank * c + i, 0, mt_size))
			mt_bad_at(&mt_cur, (long long)(i * sizeof(int)));
	mt_untouched_at(r + c, sizeof(int), (long long)(c * sizeof(int)));
	mt_check("MPI_Reduce_scatter_block MPI_SUM MPI_INT x%zu per rank", c);

	/* Scan: inclusive prefix sums */
	memset(r, MT_POISON, (c + 1) * sizeof(int));
	MT(MPI_Scan(s, r, (int)c, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
	for (size_t i = 0; i < c; i++)
		if (r[i] != sum_int(i, 0, mt_rank + 1))
			mt_bad_at(&mt_cur, (long long)(i * sizeof(int)));
	mt_untouched_at(r + c, sizeof(int), (long long)(c * sizeof(int)));
	mt_check("MPI_Scan MPI_SUM MPI_INT x%zu", c);

	/* Exscan: exclusive prefix sums, undefined on rank 0 */
	memset(r, MT_POISON, (c + 1) * sizeof(int));
	MT(MPI_Exscan(s, r, (int)c, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
	if (mt_rank > 0)
		for (size_t i = 0; i < c; i++)
			if (r[i] != sum_int(i, 0, mt_rank))
				mt_bad_at(&mt_cur, (long long)(i * sizeof(int)));
	mt_untouched_at(r + c, sizeof(int), (long long)(c * sizeof(int)));
	mt_check("MPI_Exscan MPI_SUM MPI_INT x%zu", c);
	free(s);
	free(r);
}

static void test_iallreduce(size_t c)
{
	int *si = xalloc(c * sizeof(int)), *ri = xalloc((c + 1) * sizeof(int));
	double *sd = xalloc(c * sizeof(double)), *rd = xalloc((c + 1) * sizeof(double));
	MPI_Request req[2];
	MPI_Status st[2];	/* not MPI_STATUSES_IGNORE: gcc -O2 flags MPICH's (MPI_Status *)1 */
	int done = 0;
	long polls = 0;

	for (size_t i = 0; i < c; i++) {
		si[i] = f_int(mt_rank, i);
		sd[i] = f_dbl(mt_rank, i);
	}
	MT(MPI_Iallreduce(si, ri, (int)c, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req[0]));
	MT(MPI_Iallreduce(sd, rd, (int)c, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &req[1]));
	/* the send buffers must not change, the others may be polled */
	while (!done && polls < 100000000L) {
		if (MT(MPI_Testall(2, req, &done, st)))
			break;
		polls++;
	}
	if (!done)
		MT(MPI_Waitall(2, req, st));
	for (size_t i = 0; i < c; i++) {
		double e = 0;

		for (int r = 0; r < mt_size; r++)
			e += f_dbl(r, i);
		if (ri[i] != sum_int(i, 0, mt_size))
			mt_bad_at(&mt_cur, (long long)(i * sizeof(int)));
		if (rd[i] != e)
			mt_bad_at(&mt_cur, (long long)(i * sizeof(double)));
		if (si[i] != f_int(mt_rank, i) || sd[i] != f_dbl(mt_rank, i))
			mt_fail("send buffer changed at element %zu", i);
	}
	mt_untouched_at(ri + c, sizeof(int), (long long)(c * sizeof(int)));
	mt_untouched_at(rd + c, sizeof(double), (long long)(c * sizeof(double)));
	mt_check("2 concurrent MPI_Iallreduce MPI_SUM MPI_INT + MPI_DOUBLE x%zu, MPI_Testall", c);
	free(si);
	free(ri);
	free(sd);
	free(rd);
}

static void test_split(size_t c)
{
	int color = mt_rank % 2, srank = -1, ssize = -1, esize = 0, erank = 0;
	MPI_Comm sub = MPI_COMM_NULL;
	int *s = xalloc(c * sizeof(int)), *r = xalloc((c + 1) * sizeof(int));

	/* key -rank: the ranks in each half come in reverse order */
	for (int q = 0; q < mt_size; q++)
		if (q % 2 == color) {
			esize++;
			erank += q > mt_rank;
		}
	if (!MT(MPI_Comm_split(MPI_COMM_WORLD, color, -mt_rank, &sub))) {
		MT(MPI_Comm_set_errhandler(sub, MPI_ERRORS_RETURN));
		MT(MPI_Comm_rank(sub, &srank));
		MT(MPI_Comm_size(sub, &ssize));
		if (srank != erank || ssize != esize)
			mt_fail("rank %d of %d in the %s half, expected %d of %d", srank, ssize,
				color ? "odd" : "even", erank, esize);
		for (size_t i = 0; i < c; i++)
			s[i] = f_int(mt_rank, i);
		MT(MPI_Allreduce(s, r, (int)c, MPI_INT, MPI_SUM, sub));
		for (size_t i = 0; i < c; i++) {
			long long e = 0;

			for (int q = color; q < mt_size; q += 2)
				e += f_int(q, i);
			if (r[i] != e)
				mt_bad_at(&mt_cur, (long long)(i * sizeof(int)));
		}
		mt_untouched_at(r + c, sizeof(int), (long long)(c * sizeof(int)));
		MT(MPI_Comm_free(&sub));
	}
	mt_check("MPI_Comm_split even/odd, ranks and MPI_Allreduce MPI_SUM x%zu in each half", c);
	free(s);
	free(r);
}

int main(int argc, char **argv)
{
	size_t sizes[64], cnt[8];
	int ns, nc;

	mt_init(&argc, &argv);
	test_barrier();

	ns = mt_sizes(sizes, 64, 1, 1);
	for (int si = 0; si < ns; si++)
		test_bcast(sizes[si], si, si % mt_size);
	test_bcast(mt_max, ns, mt_size - 1);
	test_bcast(mt_max, ns + 1, mt_size / 2);

	nc = counts(cnt, 8, 1);
	for (int ci = 0; ci < nc; ci++)
		test_reduce(cnt[ci], ci);

	/* per-rank blocks: the largest block times the ranks fits the size */
	nc = counts(cnt, 1, (size_t)mt_size);
	for (int ci = 0; ci < nc; ci++) {
		test_gather_scatter(cnt[ci], ci);
		test_alltoallv(cnt[ci], ci);
	}

	nc = counts(cnt, sizeof(int), (size_t)mt_size);
	for (int ci = 0; ci < nc; ci++)
		test_scatter_scan(cnt[ci]);

	nc = counts(cnt, 8, 1);
	test_iallreduce(cnt[0]);
	test_iallreduce(cnt[nc - 1]);
	test_split(cnt[nc > 2 ? 2 : nc - 1]);
	return mt_finish();
}
