// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * mpi-p2p: point-to-point MPI with every received byte checked.
 *
 * For sizes 0, 1, 3, every power of two and a few odd sizes up to the
 * largest size (argument, default 4 MiB), so that both eager and
 * rendezvous protocols run:
 *  - a ring (rank r sends to r+1 and receives from r-1) with MPI_Send/Recv,
 *    MPI_Ssend/Recv and MPI_Sendrecv;
 *  - the ring with MPI_Isend/MPI_Irecv, up to 8 messages in flight per
 *    peer, tags that differ (sent in another order than the receives were
 *    posted) and repeat (non-overtaking order), completed by MPI_Waitall;
 *  - MPI_ANY_SOURCE/MPI_ANY_TAG, in the ring and as a fan-in to rank 0,
 *    with senders' sizes that differ, checking MPI_SOURCE, MPI_TAG and
 *    MPI_Get_count;
 *  - a ping-pong between rank 0 and rank n-1 (the peer echoes the data).
 * Buffers rotate between malloc, malloc + 1 byte, page-aligned and
 * MPI_Alloc_mem.  See mpitap.h for the pattern, poison and guard byte.
 *
 * Usage: mpirun -np N mpi-p2p [MAX_SIZE[K|M]]
 */
#include "mpitap.h"

enum kind { K_SEND = 1, K_SSEND, K_SENDRECV, K_ISEND, K_ANYRING, K_FANIN, K_PINGPONG };

static uint32_t key(enum kind k, int si, int msg)
{
	return (uint32_t)k << 24 | (uint32_t)si << 12 | (uint32_t)msg;
}

static void check_status(const MPI_Status *st, int src, int tag, size_t len)
{
	int count = -1;

	MT(MPI_Get_count(st, MPI_BYTE, &count));
	if (st->MPI_SOURCE != src || st->MPI_TAG != tag || count != (int)len)
		mt_fail("status source %d tag %d count %d, expected %d %d %zu",
			st->MPI_SOURCE, st->MPI_TAG, count, src, tag, len);
}

/* MPI_Send / MPI_Ssend / MPI_Sendrecv around the ring. */
static void ring_blocking(enum kind k, size_t len, int si)
{
	int right = (mt_rank + 1) % mt_size, left = (mt_rank - 1 + mt_size) % mt_size;
	enum mt_mem mem = (enum mt_mem)((si + (int)k) % MT_NMEM);
	const char *name = k == K_SEND ? "MPI_Send/MPI_Recv" :
			   k == K_SSEND ? "MPI_Ssend/MPI_Recv" : "MPI_Sendrecv";
	int tag = 10 + (int)k, cnt = (int)len;
	struct mt_buf sb, rb;
	MPI_Status st;

	mt_alloc(&sb, len, mem);
	mt_alloc(&rb, len + 1, mem);
	mt_fill(sb.p, len, (uint32_t)mt_rank, key(k, si, 0));
	memset(&st, 0, sizeof(st));
	if (k == K_SENDRECV) {
		MT(MPI_Sendrecv(sb.p, cnt, MPI_BYTE, right, tag, rb.p, cnt, MPI_BYTE,
				left, tag, MPI_COMM_WORLD, &st));
	} else {
		/* even ranks send first, odd ones receive first: no cycle */
		for (int step = 0; step < 2; step++) {
			if ((step == 0) == (mt_rank % 2 == 0)) {
				if (k == K_SSEND)
					MT(MPI_Ssend(sb.p, cnt, MPI_BYTE, right, tag, MPI_COMM_WORLD));
				else
					MT(MPI_Send(sb.p, cnt, MPI_BYTE, right, tag, MPI_COMM_WORLD));
			} else {
				MT(MPI_Recv(rb.p, cnt, MPI_BYTE, left, tag, MPI_COMM_WORLD, &st));
			}
		}
	}
#ifdef INJECT_BUG
	/* test of the test: corrupt one received byte on the last rank */
	if (k == K_SEND && len == 4097 && mt_rank == mt_size - 1)
		rb.p[1234] ^= 1;
#endif
	mt_verify(rb.p, len, (uint32_t)left, key(k, si, 0));
	check_status(&st, left, tag, len);
	mt_check("ring %s %zu B (%s)", name, len, mt_mem_name[mem]);
	mt_free(&sb);
	mt_free(&rb);
}

/*
 * Nonblocking ring: nf messages each way per rank.  Message m has tag
 * 100 + m % 4; the receives are posted for m = 0, 1, ..., the sends go out
 * tag 103 first, then 102, ..., so distinct tags arrive out of posting
 * order and equal tags (m, m + 4) must match in order.
 */
static void ring_nonblocking(size_t len, int si)
{
	int right = (mt_rank + 1) % mt_size, left = (mt_rank - 1 + mt_size) % mt_size;
	int nf = 8, cnt = (int)len, nreq = 0;
	struct mt_buf sb[8], rb[8];
	MPI_Request req[16];
	MPI_Status st[16];

	while (nf > 2 && len * (size_t)nf > (16u << 20))
		nf /= 2;
	for (int m = 0; m < nf; m++) {
		enum mt_mem mem = (enum mt_mem)((si + m) % MT_NMEM);

		mt_alloc(&sb[m], len, mem);
		mt_alloc(&rb[m], len + 1, mem);
		mt_fill(sb[m].p, len, (uint32_t)mt_rank, key(K_ISEND, si, m));
	}
	for (int m = 0; m < nf; m++)
		MT(MPI_Irecv(rb[m].p, cnt, MPI_BYTE, left, 100 + m % 4, MPI_COMM_WORLD,
			     &req[nreq++]));
	for (int t = 3; t >= 0; t--)
		for (int m = t; m < nf; m += 4)
			MT(MPI_Isend(sb[m].p, cnt, MPI_BYTE, right, 100 + t, MPI_COMM_WORLD,
				     &req[nreq++]));
	memset(st, 0, sizeof(st));
	MT(MPI_Waitall(nreq, req, st));
	for (int m = 0; m < nf; m++) {
		mt_verify(rb[m].p, len, (uint32_t)left, key(K_ISEND, si, m));
		check_status(&st[m], left, 100 + m % 4, len);
		mt_free(&sb[m]);
		mt_free(&rb[m]);
	}
	mt_check("ring MPI_Isend/MPI_Irecv/MPI_Waitall %d in flight %zu B", nf, len);
}

/* Size that rank r sends in the ANY_SOURCE checks: they differ by rank. */
static size_t any_len(size_t len, int r)
{
	return len >= 2 ? len - (size_t)(r % 3) : len;
}

/* Ring, received with MPI_ANY_SOURCE and MPI_ANY_TAG. */
static void ring_any(size_t len, int si)
{
	int right = (mt_rank + 1) % mt_size, left = (mt_rank - 1 + mt_size) % mt_size;
	size_t mylen = any_len(len, mt_rank), inlen = any_len(len, left);
	struct mt_buf sb, rb;
	MPI_Request req;
	MPI_Status st;

	mt_alloc(&sb, mylen, MT_MALLOC_ODD);
	mt_alloc(&rb, len + 1, MT_MALLOC);
	mt_fill(sb.p, mylen, (uint32_t)mt_rank, key(K_ANYRING, si, 0));
	memset(&st, 0, sizeof(st));
	MT(MPI_Irecv(rb.p, (int)len, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &req));
	MT(MPI_Send(sb.p, (int)mylen, MPI_BYTE, right, 400 + mt_rank, MPI_COMM_WORLD));
	MT(MPI_Wait(&req, &st));
	mt_verify(rb.p, inlen, (uint32_t)left, key(K_ANYRING, si, 0));
	check_status(&st, left, 400 + left, inlen);
	mt_check("ring MPI_ANY_SOURCE/MPI_ANY_TAG status %zu B", len);
	mt_free(&sb);
	mt_free(&rb);
}

/* Every rank sends to rank 0, which receives from MPI_ANY_SOURCE. */
static void fan_in(size_t len, int si)
{
	struct mt_buf b;

	if (mt_rank) {
		size_t mylen = any_len(len, mt_rank);

		mt_alloc(&b, mylen, (enum mt_mem)(si % MT_NMEM));
		mt_fill(b.p, mylen, (uint32_t)mt_rank, key(K_FANIN, si, 0));
		MT(MPI_Send(b.p, (int)mylen, MPI_BYTE, 0, 300 + mt_rank, MPI_COMM_WORLD));
	} else {
		char *seen = calloc((size_t)mt_size, 1);

		mt_alloc(&b, len + 1, (enum mt_mem)(si % MT_NMEM));
		for (int i = 1; i < mt_size; i++) {
			MPI_Status st;
			int src, count = -1;

			memset(&st, 0, sizeof(st));
			memset(b.p, MT_POISON, len + 1);
			if (MT(MPI_Recv(b.p, (int)len, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG,
					MPI_COMM_WORLD, &st)))
				continue;
			src = st.MPI_SOURCE;
			MT(MPI_Get_count(&st, MPI_BYTE, &count));
			if (src < 1 || src >= mt_size || seen[src]) {
				mt_fail("message %d from unexpected source %d", i, src);
				continue;
			}
			seen[src] = 1;
			mt_verify(b.p, any_len(len, src), (uint32_t)src, key(K_FANIN, si, 0));
			check_status(&st, src, 300 + src, any_len(len, src));
		}
		free(seen);
	}
	mt_check("fan-in to rank 0 with MPI_ANY_SOURCE/MPI_ANY_TAG %zu B", len);
	mt_free(&b);
}

/* Rank 0 sends, rank n-1 checks and echoes, rank 0 checks; 3 round trips. */
static void ping_pong(size_t len, int si)
{
	int peer = mt_size - 1, cnt = (int)len;
	enum mt_mem mem = (enum mt_mem)((si + 2) % MT_NMEM);
	struct mt_buf sb, rb;

	if (mt_rank == 0 || mt_rank == peer) {
		mt_alloc(&sb, len, mem);
		mt_alloc(&rb, len + 1, mem);
		for (int it = 0; it < 3; it++) {
			uint32_t kk = key(K_PINGPONG, si, it);
			MPI_Status st;

			memset(&st, 0, sizeof(st));
			memset(rb.p, MT_POISON, len + 1);
			if (mt_rank == 0) {
				mt_fill(sb.p, len, 0, kk);
				MT(MPI_Send(sb.p, cnt, MPI_BYTE, peer, 20 + it, MPI_COMM_WORLD));
				MT(MPI_Recv(rb.p, cnt, MPI_BYTE, peer, 30 + it, MPI_COMM_WORLD, &st));
				mt_verify(rb.p, len, 0, kk);
				check_status(&st, peer, 30 + it, len);
			} else {
				MT(MPI_Recv(rb.p, cnt, MPI_BYTE, 0, 20 + it, MPI_COMM_WORLD, &st));
				mt_verify(rb.p, len, 0, kk);
				check_status(&st, 0, 20 + it, len);
				MT(MPI_Send(rb.p, cnt, MPI_BYTE, 0, 30 + it, MPI_COMM_WORLD));
			}
		}
		mt_free(&sb);
		mt_free(&rb);
	}
	mt_check("ping-pong rank 0 <-> rank %d, 3 round trips %zu B (%s)", peer, len,
		 mt_mem_name[mem]);
}

int main(int argc, char **argv)
{
	size_t sizes[64];
	int ns;

	mt_init(&argc, &argv);
	ns = mt_sizes(sizes, 64, 0, 0);
	for (int si = 0; si < ns; si++) {
		size_t len = sizes[si];

		ring_blocking(K_SEND, len, si);
		ring_blocking(K_SSEND, len, si);
		ring_blocking(K_SENDRECV, len, si);
		ring_nonblocking(len, si);
		ring_any(len, si);
		fan_in(len, si);
		ping_pong(len, si);
	}
	return mt_finish();
}
