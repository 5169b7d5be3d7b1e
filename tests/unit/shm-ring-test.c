// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The shared-memory link's rings (net/shm-ring.h), in two processes as the
 * netdev runs them: frames of every length from one to the other and back
 * in one shared mapping, each checked byte for byte and in order, with the
 * consumer sleeping on an eventfd whenever its ring is empty (so a lost
 * wake-up hangs the test, which the alarm turns into a failure); a full
 * ring; a frame larger than the ring; a peer killed in the middle of a
 * frame; and a peer that writes garbage into the indices and records.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../net/shm-ring.h"
#include "tap.h"

#define RING		(64 * 1024)
#define FRAMES		200000

static ShmLinkHdr *hdr;
static int data_fd[2];		/* wakes ring i's consumer */
static int space_fd[2];		/* wakes ring i's producer */

static ShmLinkHdr *region(void)
{
	ShmLinkHdr *h = mmap(NULL, shm_link_size(RING), PROT_READ | PROT_WRITE,
			     MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (h == MAP_FAILED)
		abort();
	h->magic = SHM_LINK_MAGIC;
	h->version = SHM_LINK_VERSION;
	h->ring_size = RING;
	return h;
}

static void kick(int fd)
{
	uint64_t one = 1;

	if (write(fd, &one, sizeof(one)) != sizeof(one))
		abort();
}

static void nap(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	uint64_t v;

	if (poll(&p, 1, -1) == 1 && read(fd, &v, sizeof(v)) < 0)
		abort();
}

/* Frame n: its length and its bytes, from n alone. */
static uint32_t frame_len(uint32_t n)
{
	return 1 + (n * 2654435761u) % 9200;
}

static uint8_t frame_byte(uint32_t n, uint32_t i)
{
	return (uint8_t)(n * 31 + i * 7 + (i >> 8));
}

/* Send FRAMES frames on ring `out`, waking its reader once per batch. */
static int produce(int out)
{
	static uint8_t buf[SHM_FRAME_MAX];
	ShmRing r;
	uint32_t n, i, len;
	struct iovec iov[2];
	int ret, batch = 0;

	shm_ring_attach(&r, hdr, out, RING);
	for (n = 0; n < FRAMES; n++) {
		len = frame_len(n);
		for (i = 0; i < len; i++)
			buf[i] = frame_byte(n, i);
		/* In two pieces, as the NIC hands over headers and payload. */
		iov[0] = (struct iovec){ buf, len / 3 };
		iov[1] = (struct iovec){ buf + len / 3, len - len / 3 };
		while ((ret = shm_ring_put(&r, iov, 2, len)) == 0) {
			if (shm_ring_wake_needed(&r))
				kick(data_fd[out]);
			nap(space_fd[out]);	/* the consumer frees space */
		}
		if (ret < 0)
			return 1;
		if (++batch == 16 || n == FRAMES - 1) {
			batch = 0;
			if (shm_ring_wake_needed(&r))
				kick(data_fd[out]);
		}
	}
	return 0;
}

/* Take FRAMES frames from ring `in`; 0 when each was the one expected. */
static int consume(int in)
{
	const uint8_t *f;
	ShmRing r;
	uint32_t n = 0, i, len;
	int ret;

	shm_ring_attach(&r, hdr, in, RING);
	while (n < FRAMES) {
		ret = shm_ring_get(&r, &f, &len, true);
		if (ret < 0)
			return 1;
		if (ret == 0) {
			if (shm_ring_release(&r))
				kick(space_fd[in]);
			nap(data_fd[in]);
			continue;
		}
		if (len != frame_len(n))
			return 1;
		for (i = 0; i < len; i++)
			if (f[i] != frame_byte(n, i))
				return 1;
		n++;
		if ((n & 7) == 0 && shm_ring_release(&r))
			kick(space_fd[in]);
	}
	shm_ring_release(&r);
	return 0;
}

/*
 * Both directions at once, each side producing in one process and
 * consuming in another: four processes, 2 x FRAMES frames.
 */
static int streams(void)
{
	pid_t pid[4];
	int i, st, bad = 0;

	hdr = region();
	for (i = 0; i < 2; i++) {
		data_fd[i] = eventfd(0, EFD_NONBLOCK);
		space_fd[i] = eventfd(0, EFD_NONBLOCK);
	}
	for (i = 0; i < 4; i++) {
		pid[i] = fork();
		if (pid[i] == 0) {
			alarm(120);
			/* ring i/2: produced by 0 and 2, consumed by 1 and 3 */
			_exit(i & 1 ? consume(i / 2) : produce(i / 2));
		}
	}
	for (i = 0; i < 4; i++) {
		if (waitpid(pid[i], &st, 0) != pid[i] || !WIFEXITED(st) ||
		    WEXITSTATUS(st))
			bad = 1;
	}
	munmap(hdr, shm_link_size(RING));
	for (i = 0; i < 2; i++) {
		close(data_fd[i]);
		close(space_fd[i]);
	}
	return !bad;
}

int main(void)
{
	uint8_t big[SHM_FRAME_MAX + 16] = { 0 }, small[64] = { 0 };
	struct iovec iov = { small, sizeof(small) };
	const uint8_t *f;
	ShmRing tx, rx;
	uint32_t len, *w;
	int n, ret;

	CHECK(streams());

	hdr = region();
	shm_ring_attach(&tx, hdr, 0, RING);
	shm_ring_attach(&rx, hdr, 0, RING);

	/* An empty ring: nothing, and the consumer says it sleeps. */
	CHECK(shm_ring_get(&rx, &f, &len, true) == 0 &&
	      hdr->ring[0].sleeping == 1);
	CHECK(shm_ring_put(&tx, &iov, 1, sizeof(small)) == 1 &&
	      shm_ring_wake_needed(&tx) && !shm_ring_wake_needed(&tx));
	CHECK(shm_ring_get(&rx, &f, &len, true) == 1 && len == sizeof(small));
	shm_ring_release(&rx);

	/* A frame larger than the ring (or than a frame can be). */
	iov = (struct iovec){ big, RING / 2 };
	CHECK(shm_ring_put(&tx, &iov, 1, RING / 2) == -EMSGSIZE);
	iov = (struct iovec){ big, sizeof(big) };
	CHECK(shm_ring_put(&tx, &iov, 1, sizeof(big)) == -EMSGSIZE);

	/* Full: put says so and asks for space; a release gives it back. */
	iov = (struct iovec){ big, 1000 };
	for (n = 0; (ret = shm_ring_put(&tx, &iov, 1, 1000)) == 1; n++)
		;
	CHECK(ret == 0 && (uint32_t)n >= RING / shm_ring_rec(1000) - 1 &&
	      hdr->ring[0].want_space == 1);
	CHECK(shm_ring_get(&rx, &f, &len, false) == 1 &&
	      shm_ring_release(&rx) && shm_ring_put(&tx, &iov, 1, 1000) == 1);
	while (shm_ring_get(&rx, &f, &len, false) == 1)
		;
	shm_ring_release(&rx);

	/*
	 * A peer killed in the middle of a frame: the bytes are in the ring
	 * but its head never moved past them, so nothing arrives.
	 */
	memset(tx.data + (tx.pos & (RING - 1)), 0x5a, 512);
	CHECK(shm_ring_get(&rx, &f, &len, false) == 0);

	/* Garbage from the peer, each on a fresh region. */
	munmap(hdr, shm_link_size(RING));
	hdr = region();
	shm_ring_attach(&rx, hdr, 1, RING);
	hdr->ring[1].head = RING + 8;		/* more than the ring holds */
	CHECK(shm_ring_get(&rx, &f, &len, true) == -EPROTO);
	hdr->ring[1].head = (uint32_t)-8;	/* behind our tail */
	CHECK(shm_ring_get(&rx, &f, &len, true) == -EPROTO);
	w = (uint32_t *)rx.data;
	hdr->ring[1].head = 64;
	*w = 4096;				/* a length past the head */
	CHECK(shm_ring_get(&rx, &f, &len, true) == -EPROTO);
	*w = SHM_FRAME_MAX + 1;			/* longer than any frame */
	CHECK(shm_ring_get(&rx, &f, &len, true) == -EPROTO);
	*w = SHM_RING_WRAP;			/* a wrap the head has not passed */
	CHECK(shm_ring_get(&rx, &f, &len, true) == -EPROTO);
	*w = 56;				/* a good record still works */
	CHECK(shm_ring_get(&rx, &f, &len, true) == 1 && len == 56 &&
	      f == rx.data + 4);
	/* A record that would run past the end of the ring. */
	shm_ring_release(&rx);
	rx.pos = RING - 64;
	hdr->ring[1].tail = rx.pos;
	hdr->ring[1].head = RING + 64;
	*(uint32_t *)(rx.data + RING - 64) = 100;
	CHECK(shm_ring_get(&rx, &f, &len, true) == -EPROTO);

	/* The producer's view: a tail ahead of our head is garbage. */
	shm_ring_attach(&tx, hdr, 0, RING);
	hdr->ring[0].tail = 4096;
	iov = (struct iovec){ small, sizeof(small) };
	CHECK(shm_ring_put(&tx, &iov, 1, sizeof(small)) == -EPROTO);
	munmap(hdr, shm_link_size(RING));
	return tap_done();
}
