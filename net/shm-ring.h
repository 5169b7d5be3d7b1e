/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The frame rings of the shared-memory link (net/shm.c): two processes map
 * one region; each direction is a ring of bytes with one producer and one
 * consumer.  Nothing here depends on QEMU, so that the host unit test
 * (tests/unit/shm-ring-test.c) runs the same code in two processes.
 *
 * A record is a 32-bit length (host order: both ends are on one host) and
 * the frame, padded to 8 bytes.  A record never wraps: where the next one
 * does not fit before the end, the producer writes SHM_RING_WRAP there and
 * starts again at 0.  head and tail count bytes, free running, so
 * head - tail is what the ring holds.
 *
 * Only the peer's own index is read from the region, once per look: each
 * side keeps its index, and the ring's size, in private memory and only
 * writes the copy in the region.  A peer that writes garbage there (an
 * index behind ours or further ahead than the ring, a length past the
 * end) is detected by the checks below and never makes us touch bytes
 * outside the ring.
 *
 * Wake-ups: a consumer that finds its ring empty says it is going to sleep
 * (sleeping = 1), looks again, and sleeps only if the ring is still empty;
 * the producer, once per turn after publishing, takes the flag with an
 * exchange and wakes the consumer only if it was set.  A producer that
 * finds the ring full says so (want_space) the same way, and the consumer
 * wakes it after freeing space.
 */
#ifndef UZURA_SHM_RING_H
#define UZURA_SHM_RING_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>

#define SHM_LINK_MAGIC      0x4c53555aU         /* "UZSL" */
#define SHM_LINK_VERSION    1
#define SHM_RING_WRAP       0xffffffffU
#define SHM_RING_ALIGN      8
#define SHM_RING_MIN        (64 * 1024)
#define SHM_RING_MAX        (256 * 1024 * 1024)
/* The largest frame the link carries: QEMU's NET_BUFSIZE less the length. */
#define SHM_FRAME_MAX       (68 * 1024 - 4)

/* The region: this header, then ring 0's and ring 1's data. */
typedef struct ShmRingCtl {
    /* Written by the producer. */
    uint32_t head;
    uint32_t want_space;        /* the producer waits for space */
    uint8_t pad0[56];
    /* Written by the consumer. */
    uint32_t tail;
    uint32_t sleeping;          /* the consumer is going to sleep */
    uint8_t pad1[56];
} ShmRingCtl;

typedef struct ShmLinkHdr {
    uint32_t magic;
    uint32_t version;
    uint32_t ring_size;         /* bytes of each ring, a power of 2 */
    uint32_t reserved[13];
    ShmRingCtl ring[2];         /* ring 0: server to client; 1: back */
} ShmLinkHdr;

#define SHM_LINK_DATA_OFF   4096

static inline size_t shm_link_size(uint32_t ring_size)
{
    return SHM_LINK_DATA_OFF + 2 * (size_t)ring_size;
}

/* One side's end of one ring; everything but ctl and data is private. */
typedef struct ShmRing {
    ShmRingCtl *ctl;
    uint8_t *data;
    uint32_t size;
    uint32_t pos;               /* ours: head (producer) or tail (consumer) */
    uint32_t got;               /* consumer: bytes taken, not yet released */
} ShmRing;

static inline uint32_t shm_ring_load(const uint32_t *p)
{
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static inline void shm_ring_store(uint32_t *p, uint32_t v)
{
    __atomic_store_n(p, v, __ATOMIC_RELEASE);
}

static inline uint32_t shm_ring_rec(uint32_t len)
{
    return (4 + len + SHM_RING_ALIGN - 1) & ~(uint32_t)(SHM_RING_ALIGN - 1);
}

/* Whether ring_size is one the link takes. */
static inline bool shm_ring_size_ok(uint64_t size)
{
    return size >= SHM_RING_MIN && size <= SHM_RING_MAX &&
           !(size & (size - 1));
}

/*
 * Attach to ring `which` of a mapped region of shm_link_size(size) bytes;
 * size comes from private memory (checked with shm_ring_size_ok), never
 * read again from the region, which the peer can rewrite.
 */
static inline void shm_ring_attach(ShmRing *r, ShmLinkHdr *hdr, int which,
                                   uint32_t size)
{
    r->ctl = &hdr->ring[which];
    r->size = size;
    r->data = (uint8_t *)hdr + SHM_LINK_DATA_OFF + (size_t)which * size;
    r->pos = 0;
    r->got = 0;
}

/* Whether a frame of len bytes can ever go through a ring of this size. */
static inline bool shm_ring_fits(const ShmRing *r, size_t len)
{
    return len <= SHM_FRAME_MAX && shm_ring_rec(len) <= r->size / 2;
}

/*
 * Producer: put a frame of len bytes (the sum of iov) into the ring.
 * 1: done (published; the caller wakes the consumer once per turn with
 * shm_ring_wake_needed); 0: no room now (want_space is set: the consumer
 * wakes us when it frees some); -EMSGSIZE: the frame can never fit;
 * -EPROTO: the peer's tail is garbage.
 */
static inline int shm_ring_put(ShmRing *r, const struct iovec *iov,
                               int iovcnt, size_t len)
{
    uint32_t tail, used, off, room, rec, wrap = 0;
    uint32_t le;
    uint8_t *p;
    int i, tries;

    if (!shm_ring_fits(r, len)) {
        return -EMSGSIZE;
    }
    rec = shm_ring_rec(len);
    for (tries = 0; ; tries++) {
        tail = shm_ring_load(&r->ctl->tail);
        used = r->pos - tail;
        if (used > r->size) {
            return -EPROTO;
        }
        off = r->pos & (r->size - 1);
        room = r->size - off;
        wrap = rec > room ? room : 0;
        if (r->size - used >= rec + wrap) {
            break;
        }
        if (tries) {
            return 0;
        }
        /*
         * Full: ask to be woken, then look again (the consumer may have
         * freed space before it could see the flag).
         */
        __atomic_store_n(&r->ctl->want_space, 1, __ATOMIC_SEQ_CST);
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
    }
    if (wrap) {
        le = SHM_RING_WRAP;
        memcpy(r->data + off, &le, 4);
        r->pos += wrap;
        off = 0;
    }
    le = (uint32_t)len;
    memcpy(r->data + off, &le, 4);
    p = r->data + off + 4;
    for (i = 0; i < iovcnt; i++) {
        memcpy(p, iov[i].iov_base, iov[i].iov_len);
        p += iov[i].iov_len;
    }
    r->pos += rec;
    shm_ring_store(&r->ctl->head, r->pos);
    return 1;
}

/* Producer, once per turn after putting frames: whether to wake the peer. */
static inline bool shm_ring_wake_needed(ShmRing *r)
{
    /* The head published before the flag is read. */
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    return __atomic_exchange_n(&r->ctl->sleeping, 0, __ATOMIC_SEQ_CST);
}

/*
 * Consumer: the next frame, in place, after those already taken.
 * 1: *frame and *len set (valid until shm_ring_release); 0: the ring is
 * empty, and when may_sleep, the sleeping flag is set for the producer;
 * -EPROTO: the peer's head or a record is garbage.
 */
static inline int shm_ring_get(ShmRing *r, const uint8_t **frame,
                               uint32_t *len, bool may_sleep)
{
    uint32_t head, avail, off, l;
    bool wrapped = false;

    head = shm_ring_load(&r->ctl->head);
    for (;;) {
        avail = head - (r->pos + r->got);
        if (head - r->pos > r->size || avail > r->size) {
            return -EPROTO;
        }
        if (!avail) {
            if (!may_sleep) {
                return 0;
            }
            /*
             * Say we sleep, then look again: a frame published before
             * the producer could see the flag is taken now.  A head that
             * moves back after this is caught above.
             */
            __atomic_store_n(&r->ctl->sleeping, 1, __ATOMIC_SEQ_CST);
            head = __atomic_load_n(&r->ctl->head, __ATOMIC_SEQ_CST);
            if (head == r->pos + r->got) {
                return 0;
            }
            __atomic_store_n(&r->ctl->sleeping, 0, __ATOMIC_RELAXED);
            may_sleep = false;
            continue;
        }
        off = (r->pos + r->got) & (r->size - 1);
        if (avail < 4 || (off & (SHM_RING_ALIGN - 1))) {
            return -EPROTO;
        }
        /* Read once: the peer may rewrite it while we look. */
        l = __atomic_load_n((uint32_t *)(r->data + off), __ATOMIC_RELAXED);
        if (l == SHM_RING_WRAP) {
            /* A producer wraps only where a record does not fit. */
            if (wrapped || !off || r->size - off > avail) {
                return -EPROTO;
            }
            wrapped = true;
            r->got += r->size - off;
            continue;
        }
        if (l > SHM_FRAME_MAX || shm_ring_rec(l) > avail ||
            shm_ring_rec(l) > r->size - off) {
            return -EPROTO;
        }
        *frame = r->data + off + 4;
        *len = l;
        r->got += shm_ring_rec(l);
        return 1;
    }
}

/*
 * Consumer: give back the frames taken; whether the producer waits for
 * space and is to be woken.
 */
static inline bool shm_ring_release(ShmRing *r)
{
    if (!r->got) {
        return false;
    }
    r->pos += r->got;
    r->got = 0;
    /* Publish the space, then see whether the producer asked for it. */
    __atomic_store_n(&r->ctl->tail, r->pos, __ATOMIC_SEQ_CST);
    return __atomic_exchange_n(&r->ctl->want_space, 0, __ATOMIC_SEQ_CST);
}

#endif
