// SPDX-License-Identifier: GPL-2.0-or-later OR BSD-2-Clause
/*
 * pingpong: MPI ping-pong between rank 0 and the last rank, 1 B to 1 MiB,
 * every byte checked.  Prints the one-way latency (half the median round
 * trip) and the bandwidth at each size.
 *
 *   ./uzura mpirun -- guest-lib/examples/mpi/pingpong.c [MAX-BYTES]
 *
 * builds it with mpicc on every node and runs one rank per node with the
 * image's MPI defaults (Open MPI over UCX on the uzura NIC).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROUNDS	21

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	size_t max = argc > 1 ? strtoul(argv[1], NULL, 0) : 1 << 20;
	int rank, nranks, peer, bad = 0;
	double t[ROUNDS];
	char *buf;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	if (nranks < 2) {
		fprintf(stderr, "pingpong: needs at least 2 ranks\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	peer = rank == 0 ? nranks - 1 : 0;
	buf = malloc(max ? max : 1);
	if (!buf)
		MPI_Abort(MPI_COMM_WORLD, 1);
	if (rank == 0) {
		char a[MPI_MAX_PROCESSOR_NAME], b[MPI_MAX_PROCESSOR_NAME];
		int len;

		MPI_Get_processor_name(a, &len);
		MPI_Recv(b, sizeof(b), MPI_CHAR, peer, 1, MPI_COMM_WORLD,
			 MPI_STATUS_IGNORE);
		printf("ping-pong between rank 0 on %s and rank %d on %s\n",
		       a, peer, b);
		printf("%10s %14s %14s\n", "bytes", "latency (us)", "MB/s");
	} else if (rank == nranks - 1) {
		char a[MPI_MAX_PROCESSOR_NAME];
		int len;

		MPI_Get_processor_name(a, &len);
		MPI_Send(a, len + 1, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
	}

	for (size_t size = 1; size <= max; size *= 4) {
		for (int r = 0; r < ROUNDS; r++) {
			double t0;

			if (rank == 0) {
				memset(buf, (int)(size + r), size);
				t0 = MPI_Wtime();
				MPI_Send(buf, (int)size, MPI_CHAR, peer, 0,
					 MPI_COMM_WORLD);
				MPI_Recv(buf, (int)size, MPI_CHAR, peer, 0,
					 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				t[r] = MPI_Wtime() - t0;
				/* The peer sends back each byte plus one. */
				for (size_t i = 0; i < size; i++)
					bad += (unsigned char)buf[i] !=
					       (unsigned char)(size + r + 1);
			} else if (rank == nranks - 1) {
				MPI_Recv(buf, (int)size, MPI_CHAR, 0, 0,
					 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				for (size_t i = 0; i < size; i++)
					buf[i]++;
				MPI_Send(buf, (int)size, MPI_CHAR, 0, 0,
					 MPI_COMM_WORLD);
			}
		}
		if (rank == 0) {
			double half;

			qsort(t, ROUNDS, sizeof(t[0]), cmp);
			half = t[ROUNDS / 2] / 2;
			printf("%10zu %14.1f %14.1f\n", size, half * 1e6,
			       size / half / 1e6);
		}
	}
	if (rank == 0) {
		printf("%s\n", bad ? "data: WRONG BYTES RECEIVED" :
				     "data: every byte checked");
		fflush(stdout);
	}
	MPI_Bcast(&bad, 1, MPI_INT, 0, MPI_COMM_WORLD);
	free(buf);
	MPI_Finalize();
	return bad != 0;
}
