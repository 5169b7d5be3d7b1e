// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * alltoall-bench: MPI_Alltoall in a loop with every byte checked, for
 * bench/incast's MPI flow (docs/experiments/congestion.md).  MPI-3.1 only.
 *
 *   mpirun -np N alltoall-bench [-s BYTES] [-t SECONDS] [-T SECONDS]
 *
 * Each round, every rank sends -s bytes (65536 by default) to every rank
 * with one MPI_Alltoall, each block filled with a pattern of its source,
 * destination and round, and checks every block it received.  Rounds run
 * until -t seconds (10) have passed on rank 0, which tells the others
 * with a one-int MPI_Bcast after each round.  Each round's MPI_Alltoall
 * is timed on its own; rank 0 keeps the slowest rank's time of each round.
 * A watchdog ends the job when one round takes longer than -T seconds
 * (60): rank 0 prints "timeout alltoall SIZE" and exits with 124.
 *
 * Output (rank 0, stdout):
 *   alltoall SIZE ROUNDS MEAN_US P50_US P99_US MAX_US
 *   errors N      4-byte words that differed from the pattern, all ranks
 * Exit status: 0 when none differed, 1 otherwise.
 */
#include <mpi.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static long block = 65536;

static void on_alarm(int sig)
{
	static const char msg[] = "timeout alltoall\n";

	(void)sig;
	(void)!write(1, msg, sizeof(msg) - 1);
	_exit(124);
}

static uint32_t word(int src, int dst, long round, long k)
{
	uint32_t x = (uint32_t)src << 24 ^ (uint32_t)dst << 16 ^
		     (uint32_t)round * 2654435761u ^ (uint32_t)k;

	return x * 2246822519u + 374761393u;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	double secs = 10, watchdog = 60, t0, t, *times = NULL;
	long rounds = 0, cap = 0, bad = 0, all_bad = 0, k, words;
	int rank, size, opt, go = 1, p;
	uint32_t *sbuf, *rbuf;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	while ((opt = getopt(argc, argv, "s:t:T:")) != -1) {
		switch (opt) {
		case 's':
			block = atol(optarg);
			break;
		case 't':
			secs = atof(optarg);
			break;
		case 'T':
			watchdog = atof(optarg);
			break;
		default:
			if (!rank)
				fprintf(stderr, "usage: alltoall-bench [-s BYTES] [-t SECONDS] [-T SECONDS]\n");
			MPI_Abort(MPI_COMM_WORLD, 2);
		}
	}
	if (block < 4 || block % 4 || block > (64L << 20) / size) {
		if (!rank)
			fprintf(stderr, "alltoall-bench: -s takes a multiple of 4, at most %ld\n",
				(64L << 20) / size);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	words = block / 4;
	sbuf = malloc(block * size);
	rbuf = malloc(block * size);
	if (!sbuf || !rbuf) {
		fprintf(stderr, "alltoall-bench: out of memory\n");
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	signal(SIGALRM, on_alarm);

	t0 = MPI_Wtime();
	while (go) {
		for (p = 0; p < size; p++)
			for (k = 0; k < words; k++)
				sbuf[p * words + k] = word(rank, p, rounds, k);
		memset(rbuf, 0, block * size);
		alarm((unsigned int)watchdog + 1);
		t = MPI_Wtime();
		MPI_Alltoall(sbuf, block, MPI_BYTE, rbuf, block, MPI_BYTE,
			     MPI_COMM_WORLD);
		t = MPI_Wtime() - t;
		alarm(0);
		for (p = 0; p < size; p++)
			for (k = 0; k < words; k++)
				if (rbuf[p * words + k] != word(p, rank, rounds, k))
					bad++;
		/* The round's time is its slowest rank's. */
		MPI_Reduce(rank ? &t : MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, 0,
			   MPI_COMM_WORLD);
		if (!rank) {
			if (rounds == cap) {
				cap = cap ? cap * 2 : 1024;
				times = realloc(times, cap * sizeof(*times));
				if (!times)
					MPI_Abort(MPI_COMM_WORLD, 1);
			}
			times[rounds] = t;
			go = MPI_Wtime() - t0 < secs;
		}
		rounds++;
		MPI_Bcast(&go, 1, MPI_INT, 0, MPI_COMM_WORLD);
	}
	MPI_Reduce(&bad, &all_bad, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
	if (!rank) {
		double sum = 0;

		for (k = 0; k < rounds; k++)
			sum += times[k];
		qsort(times, rounds, sizeof(*times), cmp);
		printf("alltoall %ld %ld %.1f %.1f %.1f %.1f\n", block, rounds,
		       sum / rounds * 1e6, times[rounds / 2] * 1e6,
		       times[(rounds * 99) / 100] * 1e6, times[rounds - 1] * 1e6);
		printf("errors %ld\n", all_bad);
		fflush(stdout);
	}
	free(times);
	free(sbuf);
	free(rbuf);
	MPI_Finalize();
	return all_bad ? 1 : 0;
}
