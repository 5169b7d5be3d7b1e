/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The uzura qtests' helpers declared in uzura-wire.h.
 */
#include "qemu/osdep.h"
#include "uzura-wire.h"

int uz_wire_machine_start(UzMachine *m, int n,
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

uint32_t uz_crc32_ieee(uint32_t crc, const uint8_t *p, size_t n)
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

uint32_t uz_icrc(const uint8_t *f, size_t len)
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

bool uz_frame_is_roce(const UzFrame *fr)
{
    return fr->len > UZ_OFF_BTH &&
           lduw_be_p(fr->data + UZ_OFF_UDP + 2) == UZ_ROCE_UDP_PORT;
}

bool uz_wire_recv(int sock, UzDev *d, UzFrame *fr)
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

void uz_wire_drain(int sock, UzDev *d)
{
    UzFrame fr;

    while (uz_wire_recv(sock, d, &fr)) {
        continue;
    }
}
