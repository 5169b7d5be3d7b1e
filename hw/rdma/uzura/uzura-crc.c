/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uzura RDMA NIC: the CRC-32 of the ICRC (IEEE 802.3, as zlib computes it).
 *
 * Every RoCE frame is summed twice, once by the sender and once by the
 * receiver, and zlib's table-driven CRC was the largest single cost of the
 * data path.  On x86-64 hosts with PCLMULQDQ the bulk of a frame is folded
 * 64 bytes at a time with carry-less multiplication (Intel, "Fast CRC
 * Computation for Generic Polynomials Using PCLMULQDQ Instruction", 2009)
 * and reduced with Barrett's method; short buffers and the last bytes go
 * to zlib.  The fold constants are x^n mod P(x), bit-reflected, for the
 * IEEE polynomial P(x) = 0x104c11db7.
 */
#include "qemu/osdep.h"
#include <zlib.h>
#include "uzura-core.h"

#ifdef HOST_X86_64
#include "host/cpuinfo.h"
#include <immintrin.h>

#define UZ_CRC_K1   0x154442bd4ull      /* x^(4*128+32) mod P, reflected */
#define UZ_CRC_K2   0x1c6e41596ull      /* x^(4*128-32) */
#define UZ_CRC_K3   0x1751997d0ull      /* x^(128+32) */
#define UZ_CRC_K4   0x0ccaa009eull      /* x^(128-32) */
#define UZ_CRC_K5   0x163cd6124ull      /* x^64 */
#define UZ_CRC_P    0x1db710641ull      /* P(x), reflected */
#define UZ_CRC_U    0x1f7011641ull      /* floor(x^64 / P(x)), reflected */

static __attribute__((target("pclmul")))
__m128i uzura_crc_fold(__m128i x, __m128i k, __m128i data)
{
    return _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00),
                                       _mm_clmulepi64_si128(x, k, 0x11)),
                         data);
}

/*
 * The raw (not inverted) CRC state @crc advanced over @len bytes, @len a
 * multiple of 16 and at least 64.
 */
static __attribute__((target("pclmul")))
uint32_t uzura_crc_clmul(uint32_t crc, const uint8_t *p, size_t len)
{
    const __m128i mask32 = _mm_set_epi32(0, 0, 0, -1);
    __m128i x0, x1, x2, x3, k, t;

    x0 = _mm_xor_si128(_mm_loadu_si128((const __m128i *)p),
                       _mm_cvtsi32_si128(crc));
    x1 = _mm_loadu_si128((const __m128i *)(p + 16));
    x2 = _mm_loadu_si128((const __m128i *)(p + 32));
    x3 = _mm_loadu_si128((const __m128i *)(p + 48));
    p += 64;
    len -= 64;

    /* Four lanes, 64 bytes a round. */
    k = _mm_set_epi64x(UZ_CRC_K2, UZ_CRC_K1);
    for (; len >= 64; len -= 64, p += 64) {
        x0 = uzura_crc_fold(x0, k, _mm_loadu_si128((const __m128i *)p));
        x1 = uzura_crc_fold(x1, k, _mm_loadu_si128((const __m128i *)(p + 16)));
        x2 = uzura_crc_fold(x2, k, _mm_loadu_si128((const __m128i *)(p + 32)));
        x3 = uzura_crc_fold(x3, k, _mm_loadu_si128((const __m128i *)(p + 48)));
    }

    /* The lanes into one, then the remaining 16-byte blocks. */
    k = _mm_set_epi64x(UZ_CRC_K4, UZ_CRC_K3);
    x0 = uzura_crc_fold(x0, k, x1);
    x0 = uzura_crc_fold(x0, k, x2);
    x0 = uzura_crc_fold(x0, k, x3);
    for (; len >= 16; len -= 16, p += 16) {
        x0 = uzura_crc_fold(x0, k, _mm_loadu_si128((const __m128i *)p));
    }

    /* 128 bits to 64, appending the 32 zero bits a CRC implies. */
    t = _mm_clmulepi64_si128(k, x0, 0x01);
    x0 = _mm_xor_si128(_mm_srli_si128(x0, 8), t);
    t = _mm_and_si128(x0, mask32);
    t = _mm_clmulepi64_si128(t, _mm_set_epi64x(0, UZ_CRC_K5), 0x00);
    x0 = _mm_xor_si128(_mm_srli_si128(x0, 4), t);

    /* Barrett reduction, 64 bits to 32. */
    k = _mm_set_epi64x(UZ_CRC_U, UZ_CRC_P);
    t = _mm_and_si128(x0, mask32);
    t = _mm_clmulepi64_si128(t, k, 0x10);
    t = _mm_and_si128(t, mask32);
    t = _mm_clmulepi64_si128(t, k, 0x00);
    x0 = _mm_xor_si128(x0, t);
    return _mm_cvtsi128_si32(_mm_srli_si128(x0, 4));
}

#endif

/* zlib's crc32(): @crc is the value returned for the bytes before @p. */
uint32_t uzura_crc32(uint32_t crc, const uint8_t *p, size_t len)
{
#ifdef HOST_X86_64
    if (len >= 64 && (cpuinfo & CPUINFO_PCLMUL)) {
        size_t bulk = len & ~(size_t)15;

        crc = ~uzura_crc_clmul(~crc, p, bulk);
        p += bulk;
        len -= bulk;
    }
#endif
    return crc32(crc, p, len);
}

/* uzura_crc32() continued over the pieces of a frame, in order. */
uint32_t uzura_crc32_iov(uint32_t crc, const struct iovec *iov, unsigned n)
{
    unsigned i;

    for (i = 0; i < n; i++) {
        crc = uzura_crc32(crc, iov[i].iov_base, iov[i].iov_len);
    }
    return crc;
}
