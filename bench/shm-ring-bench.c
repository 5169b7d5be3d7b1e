// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The shm link's own limit: two host processes move data through the same
 * rings the link uses (net/shm-ring.h), with the same wake-up protocol
 * (a consumer that finds its ring empty says it sleeps and waits on its
 * end of a Unix socket pair; the producer wakes it with one byte, at most
 * once per batch of frames).  What bench/run sets beside host loopback
 * TCP.
 *
 *   shm-ring-bench SIZE SECONDS
 *
 * Bandwidth: messages of SIZE bytes, cut into frames of at most FRAME
 * bytes (a RoCE packet at MTU 4096 with its headers), copied in by the
 * producer and read (summed) by the consumer, as a NIC would.  Latency:
 * a ping-pong of one frame of min(SIZE, FRAME) bytes, both sides sleeping
 * between frames; one way is half a round trip.  Prints
 *   shm_bw = N MB/s
 *   shm_lat = N us
 */
#define _GNU_SOURCE
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../net/shm-ring.h"

#define RING		(4 * 1024 * 1024)
#define FRAME		(4096 + 58)
#define BATCH		16

static ShmLinkHdr *hdr;
/* [ring][end]: end 0 is the consumer's (data) or producer's (space). */
static int data_sp[2][2], space_sp[2][2];
#define data_fd(ring)	data_sp[ring][1]	/* the producer's end */
#define space_fd(ring)	space_sp[ring][1]	/* the consumer's end */
#define data_wait(ring)	data_sp[ring][0]
#define space_wait(ring) space_sp[ring][0]

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void kick(int fd)
{
	char c = 1;

	if (send(fd, &c, 1, MSG_DONTWAIT) < 0 && errno != EAGAIN)
		abort();
}

static void nap(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	char buf[64];

	if (poll(&p, 1, 1000) == 1 &&
	    recv(fd, buf, sizeof(buf), MSG_DONTWAIT) < 0 && errno != EAGAIN)
		abort();
}

static void put(ShmRing *r, int ring, const uint8_t *buf, uint32_t len,
		bool wake)
{
	struct iovec iov = { (void *)buf, len };
	int ret;

	while ((ret = shm_ring_put(r, &iov, 1, len)) == 0) {
		if (shm_ring_wake_needed(r))
			kick(data_fd(ring));
		nap(space_wait(ring));
	}
	if (ret < 0)
		abort();
	if (wake && shm_ring_wake_needed(r))
		kick(data_fd(ring));
}

/* The next frame of ring `ring`, sleeping while there is none. */
static uint32_t get(ShmRing *r, int ring, const uint8_t **f)
{
	uint32_t len;
	int ret;

	while ((ret = shm_ring_get(r, f, &len, true)) == 0) {
		if (shm_ring_release(r))
			kick(space_fd(ring));
		nap(data_wait(ring));
	}
	if (ret < 0)
		abort();
	return len;
}

/* The consumer of the bandwidth test: frames until a zero-length one. */
static int sink(void)
{
	const uint8_t *f;
	uint64_t sum = 0;
	ShmRing r;
	uint32_t len, n = 0;

	shm_ring_attach(&r, hdr, 0, RING);
	while ((len = get(&r, 0, &f)) != 0) {
		for (uint32_t i = 0; i < len; i += 64)
			sum += f[i];
		if (++n % BATCH == 0 && shm_ring_release(&r))
			kick(space_fd(0));
	}
	shm_ring_release(&r);
	return sum == 1;	/* keep the reads */
}

static double bandwidth(uint32_t size, double secs)
{
	static uint8_t buf[FRAME];
	uint64_t bytes = 0;
	double t0, t;
	ShmRing r;
	pid_t pid;
	uint32_t off, len, n = 0;

	pid = fork();
	if (pid == 0)
		_exit(sink());
	memset(buf, 0xa5, sizeof(buf));
	shm_ring_attach(&r, hdr, 0, RING);
	t0 = now();
	do {
		for (off = 0; off < size; off += len) {
			len = size - off < FRAME ? size - off : FRAME;
			put(&r, 0, buf, len, ++n % BATCH == 0);
		}
		bytes += size;
	} while ((t = now()) - t0 < secs);
	put(&r, 0, buf, 0, true);
	waitpid(pid, NULL, 0);
	return bytes / (t - t0) / 1e6;
}

/* Node 2 of the ping-pong: each frame on ring 0 back on ring 1. */
static int echo(void)
{
	const uint8_t *f;
	ShmRing in, out;
	uint32_t len;

	shm_ring_attach(&in, hdr, 0, RING);
	shm_ring_attach(&out, hdr, 1, RING);
	while ((len = get(&in, 0, &f)) != 0) {
		put(&out, 1, f, len, true);
		if (shm_ring_release(&in))
			kick(space_fd(0));
	}
	return 0;
}

static double latency(uint32_t size, double secs)
{
	static uint8_t buf[FRAME];
	uint32_t len = size < FRAME ? size : FRAME;
	const uint8_t *f;
	uint64_t n = 0;
	ShmRing out, in;
	double t0, t;
	pid_t pid;

	pid = fork();
	if (pid == 0)
		_exit(echo());
	shm_ring_attach(&out, hdr, 0, RING);
	shm_ring_attach(&in, hdr, 1, RING);
	t0 = now();
	do {
		put(&out, 0, buf, len, true);
		get(&in, 1, &f);
		if (shm_ring_release(&in))
			kick(space_fd(1));
		n++;
	} while ((t = now()) - t0 < secs);
	put(&out, 0, buf, 0, true);
	waitpid(pid, NULL, 0);
	return (t - t0) / n / 2 * 1e6;
}

static void region(void)
{
	if (hdr)
		munmap(hdr, shm_link_size(RING));
	hdr = mmap(NULL, shm_link_size(RING), PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (hdr == MAP_FAILED)
		abort();
	hdr->magic = SHM_LINK_MAGIC;
	hdr->version = SHM_LINK_VERSION;
	hdr->ring_size = RING;
}

int main(int argc, char **argv)
{
	uint32_t size;
	double secs;
	int i;

	if (argc != 3 || (size = strtoul(argv[1], NULL, 0)) == 0 ||
	    (secs = strtod(argv[2], NULL)) <= 0) {
		fprintf(stderr, "usage: shm-ring-bench SIZE SECONDS\n");
		return 2;
	}
	for (i = 0; i < 2; i++) {
		if (socketpair(AF_UNIX, SOCK_STREAM, 0, data_sp[i]) ||
		    socketpair(AF_UNIX, SOCK_STREAM, 0, space_sp[i]))
			abort();
	}
	region();
	printf("shm_bw = %.1f MB/s\n", bandwidth(size, secs));
	region();
	printf("shm_lat = %.2f us\n", latency(size, secs));
	return 0;
}
