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
int uz_wire_machine_start(UzMachine *m, int n,
                          const char *extra);

/* CRC-32 of IEEE 802.3, as zlib's crc32() computes it. */
uint32_t uz_crc32_ieee(uint32_t crc, const uint8_t *p, size_t n);

/* The ICRC of spec 9.7 of the frame @f of @len bytes. */
uint32_t uz_icrc(const uint8_t *f, size_t len);

/* A RoCEv2 frame: one to the RoCEv2 UDP port, long enough for a BTH. */
bool uz_frame_is_roce(const UzFrame *fr);

/*
 * Next frame the hub sent to @sock, or false when none came in a while;
 * the device @d runs while we wait.
 */
bool uz_wire_recv(int sock, UzDev *d, UzFrame *fr);

/* Throw away the frames the hub sent to @sock until none comes a while. */
void uz_wire_drain(int sock, UzDev *d);

#endif /* UZURA_WIRE_H */
