/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The uzura qtests' helpers declared in uzura-eth.h.
 */
#include "qemu/osdep.h"
#include "uzura-eth.h"

void eth_cmd(UzEth *e, uint8_t op, uint64_t ring,
             uint32_t *db)
{
    struct uz_admin_cmd cmd = { .opcode = op };
    struct uz_admin_cqe cqe;

    cmd.create_eth_queue.ring_addr = cpu_to_le64(ring);
    cmd.create_eth_queue.log_depth = ctz32(e->depth);
    cmd.create_eth_queue.eqn = cpu_to_le32(e->eq.eqn);
    g_assert_cmpint(uz_admin(&e->d, &cmd, &cqe), ==, UZ_CMD_OK);
    *db = le32_to_cpu(cqe.out1);
}

void eth_set_mtu(UzEth *e, uint32_t mtu)
{
    struct uz_admin_cmd cmd = { .opcode = UZ_CMD_SET_MTU };

    cmd.set_mtu.mtu = cpu_to_le32(mtu);
    g_assert_cmpint(uz_admin(&e->d, &cmd, NULL), ==, UZ_CMD_OK);
}

void eth_start(UzEth *e, UzMachine *m, int i, uint32_t depth)
{
    uint32_t n;

    memset(e, 0, sizeof(*e));
    uz_dev_init(&e->d, m, i);
    uz_admin_start(&e->d, 4);
    g_assert_cmpint(uz_create_eq(&e->d, &e->eq, 8, 1, UZ_EQ_F_ASYNC), ==,
                    UZ_CMD_OK);
    e->depth = depth;
    e->tx_ring = uz_alloc(&e->d, depth * sizeof(struct uz_eth_desc));
    e->rx_ring = uz_alloc(&e->d, depth * sizeof(struct uz_eth_desc));
    e->tx_buf = uz_alloc(&e->d, depth * TX_BUF);
    e->rx_buf = g_new(uint64_t, depth);
    for (n = 0; n < depth; n++) {
        e->rx_buf[n] = uz_alloc(&e->d, RX_BUF);
    }
    eth_cmd(e, UZ_CMD_CREATE_ETH_TXQ, e->tx_ring, &e->tx_db);
    eth_cmd(e, UZ_CMD_CREATE_ETH_RXQ, e->rx_ring, &e->rx_db);
    g_assert_cmpint(e->tx_db, !=, e->rx_db);
    memcpy(e->mac, (uint8_t[]){ 0x52, 0x54, 0, 0x12, 0x34, 0x50 + i }, 6);
}

void eth_stop(UzEth *e)
{
    g_free(e->rx_buf);
    uz_dev_fini(&e->d);
}

uint64_t desc_addr(uint64_t ring, UzEth *e, uint32_t idx)
{
    return ring + (idx % e->depth) * sizeof(struct uz_eth_desc);
}

void eth_post_rx(UzEth *e, int n, uint16_t len)
{
    while (n--) {
        struct uz_eth_desc d = {
            .addr = cpu_to_le64(e->rx_buf[e->rx_pi % e->depth]),
            .len = cpu_to_le16(len),
        };

        qtest_memwrite(e->d.qts, desc_addr(e->rx_ring, e, e->rx_pi), &d,
                       sizeof(d));
        e->rx_pi++;
    }
    uz_ring(&e->d, e->rx_db, e->rx_pi);
}

void make_frame(uint8_t *f, size_t len, const uint8_t *dst,
                const uint8_t *src, uint32_t seed)
{
    size_t i;

    memcpy(f, dst, 6);
    memcpy(f + 6, src, 6);
    f[12] = 0x88;
    f[13] = 0xb5;               /* local experimental ethertype */
    for (i = 14; i < len; i++) {
        f[i] = (uint8_t)(seed * 31 + i * 7 + (i >> 8));
    }
}

void eth_put_tx(UzEth *e, const uint8_t *frame, size_t len,
                int ndesc)
{
    size_t off = 0;
    int k;

    for (k = 0; k < ndesc; k++) {
        size_t chunk = k == ndesc - 1 ? len - off : len / ndesc;
        uint64_t buf = e->tx_buf + (e->tx_pi % e->depth) * TX_BUF;
        struct uz_eth_desc d = {
            .addr = cpu_to_le64(buf),
            .len = cpu_to_le16(chunk),
            .flags = cpu_to_le16(k < ndesc - 1 ? UZ_ETH_TX_MORE : 0),
        };

        qtest_memwrite(e->d.qts, buf, frame + off, chunk);
        qtest_memwrite(e->d.qts, desc_addr(e->tx_ring, e, e->tx_pi), &d,
                       sizeof(d));
        e->tx_pi++;
        off += chunk;
    }
}

uint32_t eth_desc_status(UzEth *e, uint64_t ring,
                         uint32_t idx)
{
    return qtest_readl(e->d.qts, desc_addr(ring, e, idx) +
                       offsetof(struct uz_eth_desc, status));
}

uint32_t eth_wait_tx(UzEth *e, uint32_t idx)
{
    int i;

    for (i = 0; i < UZ_POLL_LIMIT; i++) {
        uint32_t st = eth_desc_status(e, e->tx_ring, idx);

        if (st & UZ_ETH_DONE) {
            return st & UZ_ETH_ERR_MASK;
        }
        uz_poll_pause(&e->d);
    }
    g_error("TX descriptor %u never completed", idx);
}

uint32_t eth_send(UzEth *e, const uint8_t *frame, size_t len,
                  int ndesc)
{
    eth_put_tx(e, frame, len, ndesc);
    uz_ring(&e->d, e->tx_db, e->tx_pi);
    return eth_wait_tx(e, e->tx_pi - 1);
}

bool eth_rx_done(UzEth *e, uint32_t idx)
{
    return eth_desc_status(e, e->rx_ring, idx) & UZ_ETH_DONE;
}

void eth_expect_rx(UzEth *e, const uint8_t *want, size_t len)
{
    g_autofree uint8_t *got = g_malloc(len);
    struct uz_eth_desc d;
    int i;

    for (i = 0; i < UZ_POLL_LIMIT && !eth_rx_done(e, e->rx_ci); i++) {
        uz_poll_pause(&e->d);
    }
    qtest_memread(e->d.qts, desc_addr(e->rx_ring, e, e->rx_ci), &d,
                  sizeof(d));
    g_assert_cmphex(le32_to_cpu(d.status), ==, UZ_ETH_DONE);
    g_assert_cmpint(le16_to_cpu(d.len), ==, len);
    qtest_memread(e->d.qts, le64_to_cpu(d.addr), got, len);
    g_assert(memcmp(got, want, len) == 0);
    e->rx_ci++;
}
