// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * libFuzzer target for the shm link's rings (net/shm-ring.h) as a hostile
 * peer drives them: the input writes the peer's indices, flags, lengths
 * and frame bytes into the region between our own gets, releases and
 * puts.  The region is one heap block of exactly its size, so AddressSanitizer
 * stops any access outside it; a frame handed out must lie inside the
 * ring, and our own index must never move backwards or past what the peer
 * published.  Built by scripts/build-qemu.sh --sanitize with clang;
 * scripts/fuzz.sh and tests/fuzz-test.sh run it (tests/fuzz-targets.sh).
 */
#include <assert.h>
#include <stdlib.h>

#include "../../net/shm-ring.h"

#define RING		SHM_RING_MIN

typedef struct {
	const uint8_t *p;
	size_t n;
} In;

static uint8_t in8(In *in)
{
	uint8_t v = 0;

	if (in->n) {
		v = *in->p++;
		in->n--;
	}
	return v;
}

static uint32_t in32(In *in)
{
	uint32_t v = 0;
	int i;

	for (i = 0; i < 4; i++)
		v = v << 8 | in8(in);
	return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t frame[SHM_FRAME_MAX];
	size_t len = shm_link_size(RING);
	ShmLinkHdr *hdr = calloc(1, len);
	In in = { data, size };
	const uint8_t *f;
	struct iovec iov;
	ShmRing rx, tx;
	uint32_t flen, before, off;
	int ret, steps;

	hdr->magic = SHM_LINK_MAGIC;
	hdr->version = SHM_LINK_VERSION;
	hdr->ring_size = RING;
	shm_ring_attach(&rx, hdr, 1, RING);
	shm_ring_attach(&tx, hdr, 0, RING);
	for (steps = 0; in.n && steps < 4096; steps++) {
		switch (in8(&in) % 8) {
		case 0:		/* the peer moves its head */
			rx.ctl->head += in32(&in) % (2 * RING);
			break;
		case 1:		/* the peer writes any head */
			rx.ctl->head = in32(&in);
			break;
		case 2:		/* the peer writes a record word */
			off = in32(&in) % (RING / 4) * 4;
			memcpy(rx.data + off, &(uint32_t){ in32(&in) }, 4);
			break;
		case 3:		/* the peer writes our tail on its ring */
			tx.ctl->tail = in8(&in) & 1 ? in32(&in) :
				       tx.ctl->tail + in32(&in) % RING;
			break;
		case 4:		/* we take frames */
			before = rx.pos + rx.got;
			ret = shm_ring_get(&rx, &f, &flen, in8(&in) & 1);
			if (ret == 1) {
				assert(f >= rx.data && f + flen <= rx.data + RING);
				assert(flen <= SHM_FRAME_MAX);
				/* Read it all, as the NIC would. */
				memcpy(frame, f, flen);
			}
			assert(ret <= 0 || rx.pos + rx.got - before <= RING);
			if (ret < 0)
				goto out;	/* the link goes down */
			break;
		case 5:
			shm_ring_release(&rx);
			break;
		case 6:		/* we send a frame */
			iov.iov_base = frame;
			iov.iov_len = in32(&in) % (SHM_FRAME_MAX + 64);
			before = tx.pos;
			ret = shm_ring_put(&tx, &iov, 1, iov.iov_len);
			assert(ret != 1 || tx.pos - before <= RING);
			if (ret == -EPROTO)
				goto out;
			break;
		case 7:		/* the flags, any value */
			rx.ctl->sleeping = in32(&in);
			tx.ctl->want_space = in32(&in);
			shm_ring_wake_needed(&tx);
			break;
		}
	}
out:
	free(hdr);
	return 0;
}
