// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * osc-bench: the MPI-2 one-sided paper's micro-benchmarks
 * (docs/experiments/onesided.md), on whatever one-sided component the
 * MPI library picks.  MPI-3.1.
 *
 *   mpirun -np 2 osc-bench [-t SECONDS]
 *   mpirun -np 4 osc-bench -O [-t SECONDS]  (sync and origins, 1 and 2)
 *
 * Rank 0 is the target; origins are the ranks on another host than rank
 * 0's (with Open MPI mapping by node, the odd ranks), and rank 1 is the
 * single origin of the one-origin tests.  Every test runs for about -t
 * seconds (default 0.5) after a short warm-up, on an MPI_Win_allocate
 * window of 16 x 256 KiB per rank:
 *
 *   latency    one-sided ping-pong (the paper's figure 5): rank 1 puts
 *              SIZE bytes into rank 0, fence, rank 0 puts them back,
 *              fence; half the round trip.  pingpong: the same with
 *              MPI_Send/MPI_Recv.
 *   put, get   bandwidth with bursts of 16 operations per epoch
 *              (start/complete at the origin, post/wait at the target:
 *              figures 7, 8).
 *   sync       one empty epoch with one or two origins: fence, PSCW
 *              (post-start-complete-wait) and lock/unlock (figure 9).
 *   overlap    a put burst of 64 KiB messages with LOOPS computation
 *              steps after each put, the time of one epoch, and of the
 *              computation alone (figure 10).
 *   skew       the origin's time for a 64 KiB put burst when the target
 *              computes DELAY microseconds between its post and its wait
 *              (figure 11).
 *   origins    aggregate put bandwidth, 64 KiB bursts, of one and two
 *              origins into rank 0 (figure 12).
 *
 * With -O only the sync and origins tests run, for one and for two
 * origins: the other tests want no idle ranks spinning beside them.
 *
 * Output (rank 1, stdout): CSV "test,param,origins,size,value,unit"; the
 * first and last byte of each put are checked at the target after every
 * bandwidth test (a failed check prints "bad,TEST,..." and exits 3).
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BURST		16
#define MAX_SIZE	(256 * 1024)
#define BIG		(64 * 1024)
#define MAX_ORIGINS	2

static int rank, nranks;
static char *base;		/* the window's memory */
static char *local;		/* the origin's source and destination */
static MPI_Win win;
static MPI_Group world, target_grp, origin_grp[MAX_ORIGINS + 1];
static int origins[MAX_ORIGINS], norigins;
static double budget = 0.5;

/* volatile: the compiler must not fold the loop away. */
static volatile unsigned long sink;

static void compute(long loops)
{
	long i;

	for (i = 0; i < loops; i++)
		sink++;
}

static void spin_us(double us)
{
	double end = MPI_Wtime() + us / 1e6;

	while (MPI_Wtime() < end)
		;
}

static int is_origin(int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (origins[i] == rank)
			return 1;
	return 0;
}

static void out(const char *test, long param, int n, long size,
		double value, const char *unit)
{
	if (rank == 1)
		printf("%s,%ld,%d,%ld,%.3f,%s\n", test, param, n, size, value,
		       unit);
	fflush(stdout);
}

/*
 * How many rounds fit the budget, agreed by every rank: rank 1 times a
 * probe round, everyone uses its answer.
 */
static long agree_rounds(double probe_s)
{
	long n = probe_s > 0 ? (long)(budget / probe_s) : 1000;

	n = n < 3 ? 3 : n > 100000 ? 100000 : n;
	MPI_Bcast(&n, 1, MPI_LONG, 1, MPI_COMM_WORLD);
	return n;
}

/* The byte every message of @size carries, a different one per size. */
static int pat(long size)
{
	return 1 + size % 251;
}

static void check_burst(const char *test, long size)
{
	int i, bad = 0;

	for (i = 0; i < BURST && rank == 0; i++) {
		const char *p = base + (size_t)i * MAX_SIZE;

		bad |= p[0] != (char)pat(size) || p[size - 1] != (char)pat(size);
	}
	MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
	if (bad) {
		out("bad", 0, 0, size, 0, test);
		MPI_Abort(MPI_COMM_WORLD, 3);
	}
}

/*
 * @n round trips of @size bytes between ranks 0 and 1: with MPI_Put and
 * fences (@two_sided false; every rank takes part in the fences), or
 * with MPI_Send/MPI_Recv.  Returns the seconds they took.
 */
static double round_trips(int two_sided, long size, long n)
{
	double t;
	long i;

	MPI_Barrier(MPI_COMM_WORLD);
	t = MPI_Wtime();
	for (i = 0; i < n; i++) {
		if (!two_sided) {
			if (rank == 1)
				MPI_Put(local, size, MPI_BYTE, 0, 0, size, MPI_BYTE, win);
			MPI_Win_fence(0, win);
			if (rank == 0)
				MPI_Put(local, size, MPI_BYTE, 1, 0, size, MPI_BYTE, win);
			MPI_Win_fence(0, win);
		} else if (rank == 1) {
			MPI_Send(local, size, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
			MPI_Recv(local, size, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		} else if (rank == 0) {
			MPI_Recv(local, size, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			MPI_Send(local, size, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
		}
	}
	return MPI_Wtime() - t;
}

/* One-sided ping-pong through fences, and the two-sided one. */
static void latency(long size)
{
	long rounds;
	double t;
	int k;

	for (k = 0; k < 2; k++) {
		/* Three round trips of warm-up, then a probe of ten. */
		round_trips(k, size, 3);
		t = round_trips(k, size, 10);
		rounds = agree_rounds(t / 10);
		t = round_trips(k, size, rounds);
		out(k == 0 ? "latency" : "pingpong", 0, 1, size,
		    t / rounds / 2 * 1e6, "us");
	}
}

/*
 * One PSCW epoch of @n origins: each puts (or gets) a burst of @size
 * into rank 0, computing @loops steps after each operation; the target
 * computes @delay_us between its post and its wait.
 */
static void epoch(int n, int get, long size, long loops, double delay_us)
{
	int i;

	if (rank == 0) {
		MPI_Win_post(origin_grp[n], 0, win);
		if (delay_us > 0)
			spin_us(delay_us);
		MPI_Win_wait(win);
	} else if (is_origin(n)) {
		MPI_Win_start(target_grp, 0, win);
		for (i = 0; i < BURST; i++) {
			MPI_Aint disp = (MPI_Aint)i * MAX_SIZE;
			char *l = local + (size_t)i * MAX_SIZE;

			if (get)
				MPI_Get(l, size, MPI_BYTE, 0, disp, size, MPI_BYTE, win);
			else
				MPI_Put(l, size, MPI_BYTE, 0, disp, size, MPI_BYTE, win);
			compute(loops);
		}
		MPI_Win_complete(win);
	}
}

/* Seconds per epoch, as the slowest origin (rank 1 reports) sees it. */
static double time_epochs(int n, int get, long size, long loops,
			  double delay_us)
{
	long rounds, i;
	double t;

	for (i = 0; i < 3; i++)
		epoch(n, get, size, loops, delay_us);
	MPI_Barrier(MPI_COMM_WORLD);
	t = MPI_Wtime();
	epoch(n, get, size, loops, delay_us);
	t = MPI_Wtime() - t;
	rounds = agree_rounds(t);
	MPI_Barrier(MPI_COMM_WORLD);
	t = MPI_Wtime();
	for (i = 0; i < rounds; i++)
		epoch(n, get, size, loops, delay_us);
	t = MPI_Wtime() - t;
	MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
	return t / rounds;
}

/*
 * Process skew: the target computes @delay_us between its post and its
 * wait; the time the origin spends from its access epoch's start
 * (MPI_Win_start returned) to the end of MPI_Win_complete, per epoch,
 * which a NIC that needs no help from the target keeps flat.
 */
static double skew(double delay_us)
{
	long rounds = 20, i;
	double t = 0, t0;

	for (i = 0; i < rounds + 2; i++) {
		if (rank == 0) {
			epoch(1, 0, BIG, 0, delay_us);
			continue;
		}
		if (!is_origin(1))
			continue;
		MPI_Win_start(target_grp, 0, win);
		t0 = MPI_Wtime();
		for (int k = 0; k < BURST; k++)
			MPI_Put(local + (size_t)k * MAX_SIZE, BIG, MPI_BYTE, 0,
				(MPI_Aint)k * MAX_SIZE, BIG, MPI_BYTE, win);
		MPI_Win_complete(win);
		if (i >= 2)	/* two epochs of warm-up */
			t += MPI_Wtime() - t0;
	}
	MPI_Bcast(&t, 1, MPI_DOUBLE, 1, MPI_COMM_WORLD);
	return t / rounds;
}

/* An empty epoch of each kind, with @n origins. */
static void sync_cost(int n)
{
	static const char *const kind[] = { "fence", "pscw", "lock" };
	long rounds = 1000, i;
	int k;
	double t;

	for (k = 0; k < 3; k++) {
		MPI_Barrier(MPI_COMM_WORLD);
		t = MPI_Wtime();
		for (i = 0; i < rounds; i++) {
			if (k == 0) {
				MPI_Win_fence(0, win);
			} else if (k == 1) {
				if (rank == 0) {
					MPI_Win_post(origin_grp[n], 0, win);
					MPI_Win_wait(win);
				} else if (is_origin(n)) {
					MPI_Win_start(target_grp, 0, win);
					MPI_Win_complete(win);
				}
			} else if (is_origin(n)) {
				MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
				MPI_Win_unlock(0, win);
			}
		}
		t = MPI_Wtime() - t;
		MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX,
			      MPI_COMM_WORLD);
		out("sync", k, n, 0, t / rounds * 1e6, kind[k]);
	}
}

int main(int argc, char **argv)
{
	static const long lat_sizes[] = { 4, 64, 1024, 4096, 16384, 65536 };
	static const long bw_sizes[] = { 4, 256, 4096, 16384, 65536, 262144 };
	static const long loops[] = { 0, 1000, 10000, 100000 };
	static const double delays[] = { 0, 100, 1000, 10000 };
	char host[MPI_MAX_PROCESSOR_NAME], host0[MPI_MAX_PROCESSOR_NAME];
	int len, i, r, opt, n, multi = 0;
	MPI_Aint bytes = (MPI_Aint)BURST * MAX_SIZE;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	while ((opt = getopt(argc, argv, "Ot:")) != -1)
		if (opt == 't')
			budget = atof(optarg);
		else if (opt == 'O')
			multi = 1;
	if (nranks < 2 || budget <= 0 || budget > 30) {
		if (rank == 0)
			fprintf(stderr, "usage: mpirun -np 2|4 osc-bench [-O] [-t SECONDS]\n");
		MPI_Finalize();
		return 2;
	}
	/* Origins: the ranks on another host than rank 0's, rank 1 first. */
	MPI_Get_processor_name(host, &len);
	if (rank == 0)
		memcpy(host0, host, sizeof(host));
	MPI_Bcast(host0, sizeof(host0), MPI_CHAR, 0, MPI_COMM_WORLD);
	for (r = 1; r < nranks && norigins < MAX_ORIGINS; r++) {
		char h[MPI_MAX_PROCESSOR_NAME];

		memcpy(h, host, sizeof(h));
		MPI_Bcast(h, sizeof(h), MPI_CHAR, r, MPI_COMM_WORLD);
		if (strcmp(h, host0) || r == 1)
			origins[norigins++] = r;
	}
	MPI_Comm_group(MPI_COMM_WORLD, &world);
	MPI_Group_incl(world, 1, (int[]){ 0 }, &target_grp);
	for (n = 1; n <= norigins; n++)
		MPI_Group_incl(world, n, origins, &origin_grp[n]);

	local = malloc(bytes);
	MPI_Win_allocate(bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
	if (!local) {
		fprintf(stderr, "osc-bench: out of memory\n");
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	if (rank == 1 && !multi)
		printf("test,param,origins,size,value,unit\n");
	if (multi) {
		for (n = 1; n <= norigins; n++)
			sync_cost(n);
		memset(local, pat(BIG), bytes);
		for (n = 1; n <= norigins; n++) {
			double t = time_epochs(n, 0, BIG, 0, 0);

			check_burst("origins", BIG);
			out("origins", 0, n, BIG,
			    (double)n * BURST * BIG / t / 1e6, "MB/s");
		}
		MPI_Win_free(&win);
		free(local);
		MPI_Finalize();
		return 0;
	}

	MPI_Win_fence(0, win);
	for (i = 0; i < (int)(sizeof(lat_sizes) / sizeof(*lat_sizes)); i++) {
		memset(local, pat(lat_sizes[i]), lat_sizes[i]);
		latency(lat_sizes[i]);
	}
	MPI_Win_fence(MPI_MODE_NOSUCCEED, win);

	for (i = 0; i < (int)(sizeof(bw_sizes) / sizeof(*bw_sizes)); i++) {
		long s = bw_sizes[i];
		double t;
		int get;

		memset(local, pat(s), bytes);
		for (get = 0; get < 2; get++) {
			t = time_epochs(1, get, s, 0, 0);
			if (!get)
				check_burst("put", s);
			out(get ? "get" : "put", 0, 1, s,
			    (double)BURST * s / t / 1e6, "MB/s");
		}
	}
	sync_cost(1);
	memset(local, pat(BIG), bytes);
	for (i = 0; i < (int)(sizeof(loops) / sizeof(*loops)); i++) {
		double t = time_epochs(1, 0, BIG, loops[i], 0), c;

		c = MPI_Wtime();
		compute(loops[i] * BURST);
		c = MPI_Wtime() - c;
		MPI_Bcast(&c, 1, MPI_DOUBLE, 1, MPI_COMM_WORLD);
		out("overlap", loops[i], 1, BIG, t * 1e6, "us");
		out("compute", loops[i], 1, BIG, c * 1e6, "us");
	}
	for (i = 0; i < (int)(sizeof(delays) / sizeof(*delays)); i++)
		out("skew", (long)delays[i], 1, BIG, skew(delays[i]) * 1e6, "us");
	MPI_Win_free(&win);
	free(local);
	MPI_Finalize();
	return 0;
}
