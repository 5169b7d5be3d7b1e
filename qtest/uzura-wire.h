/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The wire for the uzura qtests: a socket port joins the NICs' hub, so
 * that a test sees every frame on the link and can put its own on it.
 * The socket carries each frame after its length, 4 bytes big-endian.
 * The ICRC is computed here, independently of the device.
 */
#ifndef UZURA_WIRE_H
#define UZURA_WIRE_H

#include "uzura-qtest.h"
#include <sys/socket.h>

/* Offsets in a RoCEv2 frame over IPv4 (spec 9.1). */
#define UZ_OFF_IP           14
#define UZ_OFF_UDP          34
#define UZ_OFF_BTH          42
#define UZ_MAX_FRAME        9100

typedef struct UzFrame {
    uint8_t data[UZ_MAX_FRAME];
    size_t len;
} UzFrame;

/*
 * uz_machine_start() with a socket port on the hub as well; returns our
 * end of the socket.
 */
static inline int uz_wire_machine_start(UzMachine *m, int n,
                                        const char *extra)
{
    g_autofree char *args = NULL;
    int sv[2];

    g_assert_cmpint(socketpair(PF_UNIX, SOCK_STREAM, 0, sv), ==, 0);
    args = g_strdup_printf("-netdev socket,fd=%d,id=ws "
                           "-netdev hubport,id=hw,hubid=0,netdev=ws %s",
                           sv[1], extra ? extra : "");
    uz_machine_start(m, n, args);
    close(sv[1]);
    return sv[0];
}

/* CRC-32 of IEEE 802.3, as zlib's crc32() computes it. */
static inline uint32_t uz_crc32_ieee(uint32_t crc, const uint8_t *p, size_t n)
{
    int k;

    crc = ~crc;
    while (n--) {
        crc ^= *p++;
        for (k = 0; k < 8; k++) {
            crc = (crc & 1) ? (crc >> 1) ^ 0xedb88320u : crc >> 1;
        }
    }
    return ~crc;
}

/* The ICRC of spec 9.7 of the frame @f of @len bytes. */
static inline uint32_t uz_icrc(const uint8_t *f, size_t len)
{
    static const uint8_t ones[8] = {
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    };
    uint8_t pseudo[40];
    uint32_t crc;

    memcpy(pseudo, f + UZ_OFF_IP, sizeof(pseudo));
    pseudo[1] = 0xff;
    pseudo[8] = 0xff;
    pseudo[10] = pseudo[11] = 0xff;
    pseudo[26] = pseudo[27] = 0xff;
    pseudo[32] = 0xff;
    crc = uz_crc32_ieee(0, ones, sizeof(ones));
    crc = uz_crc32_ieee(crc, pseudo, sizeof(pseudo));
    return uz_crc32_ieee(crc, f + UZ_OFF_BTH + 12,
                         len - 4 - UZ_OFF_BTH - 12);
}

/* A RoCEv2 frame: one to the RoCEv2 UDP port, long enough for a BTH. */
static inline bool uz_frame_is_roce(const UzFrame *fr)
{
    return fr->len > UZ_OFF_BTH &&
           lduw_be_p(fr->data + UZ_OFF_UDP + 2) == UZ_ROCE_UDP_PORT;
}

/*
 * Next frame the hub sent to @sock, or false when none came in a while;
 * the device @d runs while we wait.
 */
static inline bool uz_wire_recv(int sock, UzDev *d, UzFrame *fr)
{
    uint8_t hdr[4];
    size_t got = 0, want = 4;
    uint8_t *dst = hdr;
    int i;

    for (i = 0; i < 2000; i++) {
        ssize_t n = recv(sock, dst + got, want - got, MSG_DONTWAIT);

        if (n > 0) {
            got += n;
            if (got < want) {
                continue;
            }
            if (dst == hdr) {
                fr->len = ldl_be_p(hdr);
                g_assert_cmpint(fr->len, <=, UZ_MAX_FRAME);
                dst = fr->data;
                want = fr->len;
                got = 0;
                if (want) {
                    continue;
                }
            }
            return true;
        }
        if (dst == hdr && !got && i > 200) {
            return false;
        }
        uz_poll_pause(d);
    }
    g_assert(dst == hdr && !got);
    return false;
}

/* Throw away the frames the hub sent to @sock until none comes a while. */
static inline void uz_wire_drain(int sock, UzDev *d)
{
    UzFrame fr;

    while (uz_wire_recv(sock, d, &fr)) {
        continue;
    }
}

#endif /* UZURA_WIRE_H */
