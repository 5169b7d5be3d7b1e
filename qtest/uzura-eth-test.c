/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qtest for the uzura Ethernet function: two NICs on one hub exchange
 * frames of 60..9000 bytes through their descriptor rings; errors on
 * transmit and receive, RX ring exhaustion and recovery, and reset in the
 * middle of traffic.
 */
#include "uzura-qtest.h"
#include "qemu/host-utils.h"

#define RX_BUF      UZ_ETH_FRAME_MAX(UZ_MAX_MTU)
#define TX_BUF      UZ_ETH_FRAME_MAX(UZ_MAX_MTU)

typedef struct UzEth {
    UzDev d;
    UzEq eq;
    uint8_t mac[6];
    uint32_t depth;
    uint64_t tx_ring, rx_ring;
    uint32_t tx_db, rx_db;
    uint32_t tx_pi, rx_pi;      /* posted */
    uint32_t tx_ci, rx_ci;      /* seen completed */
    uint64_t *rx_buf;           /* one buffer per RX descriptor */
    uint64_t tx_buf;            /* one TX_BUF per TX descriptor */
} UzEth;

static void eth_cmd(UzEth *e, uint8_t op, uint64_t ring, uint32_t *db)
{
    struct uz_admin_cmd cmd = { .opcode = op };
    struct uz_admin_cqe cqe;

    cmd.create_eth_queue.ring_addr = cpu_to_le64(ring);
    cmd.create_eth_queue.log_depth = ctz32(e->depth);
    cmd.create_eth_queue.eqn = cpu_to_le32(e->eq.eqn);
    g_assert_cmpint(uz_admin(&e->d, &cmd, &cqe), ==, UZ_CMD_OK);
    *db = le32_to_cpu(cqe.out1);
}

static void eth_set_mtu(UzEth *e, uint32_t mtu)
{
    struct uz_admin_cmd cmd = { .opcode = UZ_CMD_SET_MTU };

    cmd.set_mtu.mtu = cpu_to_le32(mtu);
    g_assert_cmpint(uz_admin(&e->d, &cmd, NULL), ==, UZ_CMD_OK);
}

/* Bring NIC @i up: admin queue, one async EQ, both rings. */
static void eth_start(UzEth *e, UzMachine *m, int i, uint32_t depth)
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

static void eth_stop(UzEth *e)
{
    g_free(e->rx_buf);
    uz_dev_fini(&e->d);
}

static uint64_t desc_addr(uint64_t ring, UzEth *e, uint32_t idx)
{
    return ring + (idx % e->depth) * sizeof(struct uz_eth_desc);
}

/* Post @n RX descriptors of @len bytes. */
static void eth_post_rx(UzEth *e, int n, uint16_t len)
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

static void make_frame(uint8_t *f, size_t len, const uint8_t *dst,
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

/* Queue one frame as @ndesc descriptors (chained with MORE), no doorbell. */
static void eth_put_tx(UzEth *e, const uint8_t *frame, size_t len,
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

static uint32_t eth_desc_status(UzEth *e, uint64_t ring, uint32_t idx)
{
    return qtest_readl(e->d.qts, desc_addr(ring, e, idx) +
                       offsetof(struct uz_eth_desc, status));
}

/* Wait for TX descriptor @idx to complete; returns its error code. */
static uint32_t eth_wait_tx(UzEth *e, uint32_t idx)
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

static bool eth_rx_done(UzEth *e, uint32_t idx)
{
    return eth_desc_status(e, e->rx_ring, idx) & UZ_ETH_DONE;
}

/* Wait for the next received frame and check it against @want. */
static void eth_expect_rx(UzEth *e, const uint8_t *want, size_t len)
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

static void test_frames_both_ways(void)
{
    static const size_t sizes[] = { 60, 61, 64, 127, 1514, 1518, 4000,
                                    8191, 9000, 9018 };
    UzMachine m;
    UzEth a, b;
    g_autofree uint8_t *f = g_malloc(TX_BUF);
    UzEth *tx, *rx;
    struct uz_eqe eqe;
    int dir, k;

    uz_machine_start(&m, 2, NULL);
    eth_start(&a, &m, 0, 16);
    eth_start(&b, &m, 1, 16);
    eth_set_mtu(&a, 9000);
    eth_set_mtu(&b, 9000);
    eth_post_rx(&a, 16, RX_BUF);
    eth_post_rx(&b, 16, RX_BUF);

    for (dir = 0; dir < 2; dir++) {
        tx = dir ? &b : &a;
        rx = dir ? &a : &b;
        for (k = 0; k < ARRAY_SIZE(sizes); k++) {
            /* Large frames also go out as chains of descriptors. */
            int ndesc = sizes[k] > 4000 ? 3 : 1;
            uint32_t first = tx->tx_pi;

            make_frame(f, sizes[k], rx->mac, tx->mac, k + dir * 100);
            eth_put_tx(tx, f, sizes[k], ndesc);
            uz_ring(&tx->d, tx->tx_db, tx->tx_pi);
            g_assert_cmpint(eth_wait_tx(tx, tx->tx_pi - 1), ==, 0);
            g_assert_cmpint(eth_desc_status(tx, tx->tx_ring, first), ==,
                            UZ_ETH_DONE);
            eth_expect_rx(rx, f, sizes[k]);
            eth_post_rx(rx, 1, RX_BUF);
        }
        /* The EQ saw TX and RX completions with consumer indices. */
        while (uz_eq_next(&tx->d, &tx->eq, &eqe)) {
            g_assert(eqe.type == UZ_EQE_ETH_TX || eqe.type == UZ_EQE_ETH_RX);
            if (eqe.type == UZ_EQE_ETH_TX) {
                g_assert_cmpint(le32_to_cpu(eqe.data), <=, tx->tx_pi);
            }
        }
        uz_ring(&tx->d, tx->eq.db, tx->eq.ci);
    }
    g_assert_cmpint(uz_counter(&m, 0, "tx_frames"), ==, ARRAY_SIZE(sizes));
    g_assert_cmpint(uz_counter(&m, 1, "rx_frames"), ==, ARRAY_SIZE(sizes));
    g_assert_cmpint(uz_counter(&m, 1, "tx_frames"), ==, ARRAY_SIZE(sizes));
    g_assert_cmpint(uz_counter(&m, 0, "rx_frames"), ==, ARRAY_SIZE(sizes));
    g_assert_cmpint(uz_counter(&m, 0, "rx_dropped"), ==, 0);

    eth_stop(&a);
    eth_stop(&b);
    uz_machine_stop(&m);
}

/* A burst larger than the posted RX ring: nothing is lost. */
static void test_rx_exhaustion(void)
{
    UzMachine m;
    UzEth a, b;
    uint8_t f[16][200];
    struct uz_eqe eqe;
    bool rx_event = false;
    int k;

    uz_machine_start(&m, 2, NULL);
    eth_start(&a, &m, 0, 16);
    eth_start(&b, &m, 1, 16);
    eth_post_rx(&b, 4, RX_BUF);

    for (k = 0; k < 16; k++) {
        make_frame(f[k], sizeof(f[k]), b.mac, a.mac, k);
        eth_put_tx(&a, f[k], sizeof(f[k]), 1);
    }
    uz_ring(&a.d, a.tx_db, a.tx_pi);
    g_assert_cmpint(eth_wait_tx(&a, 15), ==, 0);

    for (k = 0; k < 4; k++) {
        eth_expect_rx(&b, f[k], sizeof(f[k]));
    }
    g_assert(!eth_rx_done(&b, 4));
    while (uz_eq_next(&b.d, &b.eq, &eqe)) {
        rx_event |= eqe.type == UZ_EQE_ETH_RX;
    }
    g_assert(rx_event);

    /* Recovery: the queued frames arrive, in order, once buffers exist. */
    eth_post_rx(&b, 12, RX_BUF);
    for (k = 4; k < 16; k++) {
        eth_expect_rx(&b, f[k], sizeof(f[k]));
    }
    g_assert_cmpint(uz_counter(&m, 1, "rx_frames"), ==, 16);
    g_assert_cmpint(uz_counter(&m, 1, "rx_dropped"), ==, 0);
    eth_stop(&a);
    eth_stop(&b);
    uz_machine_stop(&m);
}

static void test_errors(void)
{
    UzMachine m;
    UzEth a, b;
    uint8_t f[1600];
    struct uz_eth_desc d;
    g_autofree char *log = NULL;

    uz_machine_start(&m, 2, NULL);
    eth_start(&a, &m, 0, 16);
    eth_start(&b, &m, 1, 16);

    /* TX above the MTU (1500 + 18), below a header, from no memory. */
    make_frame(f, 1519, b.mac, a.mac, 1);
    eth_put_tx(&a, f, 1519, 1);
    eth_put_tx(&a, f, 10, 1);
    d = (struct uz_eth_desc) {
        .addr = cpu_to_le64(0xfff0000000000ull), .len = cpu_to_le16(100),
    };
    qtest_memwrite(a.d.qts, desc_addr(a.tx_ring, &a, a.tx_pi++), &d,
                   sizeof(d));
    uz_ring(&a.d, a.tx_db, a.tx_pi);
    g_assert_cmpint(eth_wait_tx(&a, 0), ==, UZ_ETH_ERR_TOO_LONG);
    g_assert_cmpint(eth_wait_tx(&a, 1), ==, UZ_ETH_ERR_TOO_SHORT);
    g_assert_cmpint(eth_wait_tx(&a, 2), ==, UZ_ETH_ERR_DMA);
    g_assert_cmpint(uz_counter(&m, 0, "tx_errors"), ==, 3);
    g_assert_cmpint(uz_counter(&m, 0, "tx_frames"), ==, 0);

    /* RX: a frame longer than the posted buffer is dropped. */
    eth_post_rx(&b, 1, 100);
    make_frame(f, 200, b.mac, a.mac, 2);
    eth_put_tx(&a, f, 200, 1);
    uz_ring(&a.d, a.tx_db, a.tx_pi);
    g_assert_cmpint(eth_wait_tx(&a, 3), ==, 0);
    g_assert_cmpint(uz_counter(&m, 1, "rx_dropped"), ==, 1);
    g_assert(!eth_rx_done(&b, 0));

    /* Frames for another station are not taken; broadcast is. */
    eth_post_rx(&b, 1, RX_BUF);
    make_frame(f, 100, (uint8_t[]){ 0x52, 0x54, 0, 9, 9, 9 }, a.mac, 3);
    eth_put_tx(&a, f, 100, 1);
    make_frame(f, 100, (uint8_t[]){ 0xff, 0xff, 0xff, 0xff, 0xff, 0xff },
               a.mac, 4);
    eth_put_tx(&a, f, 100, 1);
    uz_ring(&a.d, a.tx_db, a.tx_pi);
    g_assert_cmpint(eth_wait_tx(&a, 5), ==, 0);
    eth_expect_rx(&b, f, 100);

    /* The link down: TX fails with LINK_DOWN. */
    qtest_qmp_assert_success(m.qs->qts, "{'execute': 'qom-set', 'arguments':"
                             " {'path': '/machine/peripheral/uz0',"
                             " 'property': 'link', 'value': false}}");
    eth_put_tx(&a, f, 100, 1);
    uz_ring(&a.d, a.tx_db, a.tx_pi);
    g_assert_cmpint(eth_wait_tx(&a, 6), ==, UZ_ETH_ERR_LINK_DOWN);

    /* A doorbell past the ring is refused. */
    uz_ring(&a.d, a.tx_db, a.tx_pi + 17);
    g_assert_cmpint(uz_rd(&a.d, UZ_REG_ERR_STATUS), ==, UZ_ERR_BAD_VALUE);

    /* Destroying the EQ under its rings is refused. */
    {
        struct uz_admin_cmd cmd = { .opcode = UZ_CMD_DESTROY_EQ };

        cmd.destroy.handle = cpu_to_le32(a.eq.eqn);
        g_assert_cmpint(uz_admin(&a.d, &cmd, NULL), ==, UZ_CMD_BUSY);
        cmd.opcode = UZ_CMD_CREATE_ETH_TXQ;
        cmd.create_eth_queue.ring_addr = cpu_to_le64(a.tx_ring);
        cmd.create_eth_queue.log_depth = 4;
        g_assert_cmpint(uz_admin(&a.d, &cmd, NULL), ==, UZ_CMD_EXISTS);
    }

    log = uz_machine_log(&m);
    g_assert(strstr(log, "TX frame at descriptor 0 (1519 bytes) dropped"));
    g_assert(strstr(log, "RX frame of 200 bytes dropped"));
    eth_stop(&a);
    eth_stop(&b);
    uz_machine_stop(&m);
}

/* Reset the receiver in the middle of a burst. */
static void test_reset_under_traffic(void)
{
    UzMachine m;
    UzEth a, b;
    uint8_t f[64][300];
    g_autofree uint8_t *before = g_malloc(64 * sizeof(struct uz_eth_desc));
    g_autofree uint8_t *after = g_malloc(64 * sizeof(struct uz_eth_desc));
    int k, got = 0;

    uz_machine_start(&m, 2, NULL);
    eth_start(&a, &m, 0, 64);
    eth_start(&b, &m, 1, 64);
    eth_post_rx(&b, 64, RX_BUF);
    for (k = 0; k < 64; k++) {
        make_frame(f[k], sizeof(f[k]), b.mac, a.mac, k);
        eth_put_tx(&a, f[k], sizeof(f[k]), 1);
    }
    uz_ring(&a.d, a.tx_db, a.tx_pi / 2);
    uz_wr(&b.d, UZ_REG_RESET, UZ_RESET_KEY);
    uz_ring(&a.d, a.tx_db, a.tx_pi);
    g_assert_cmpint(eth_wait_tx(&a, 63), ==, 0);

    /* What arrived before the reset is intact; nothing came after. */
    while (got < 64 && eth_rx_done(&b, got)) {
        eth_expect_rx(&b, f[got], sizeof(f[got]));
        got++;
    }
    qtest_memread(b.d.qts, b.rx_ring, before, 64 * sizeof(struct uz_eth_desc));
    for (k = 0; k < 200; k++) {
        uz_poll_pause(&b.d);
    }
    qtest_memread(b.d.qts, b.rx_ring, after, 64 * sizeof(struct uz_eth_desc));
    g_assert(memcmp(before, after, 64 * sizeof(struct uz_eth_desc)) == 0);
    g_assert_cmpint(got, <=, 32);

    /* B comes back and traffic flows again. */
    eth_stop(&b);
    eth_start(&b, &m, 1, 64);
    eth_post_rx(&b, 4, RX_BUF);
    eth_put_tx(&a, f[0], sizeof(f[0]), 1);
    uz_ring(&a.d, a.tx_db, a.tx_pi);
    eth_expect_rx(&b, f[0], sizeof(f[0]));
    eth_stop(&a);
    eth_stop(&b);
    uz_machine_stop(&m);
}

/*
 * Fuzz the rings: 2,000 random TX descriptors (addresses in and outside
 * guest memory, any length, random chaining) and RX descriptors with
 * random buffer addresses.  Every descriptor completes with a status and
 * QEMU stays up.
 */
static void test_fuzz_descriptors(void)
{
    UzMachine m;
    UzEth a, b;
    GRand *rnd = g_rand_new_with_seed(0x657468);
    uint8_t f[256];
    uint32_t dma_errs = 0, n = 0, k;

    uz_machine_start(&m, 2, NULL);
    eth_start(&a, &m, 0, 64);
    eth_start(&b, &m, 1, 64);

    while (n < 2000) {
        uint32_t batch = g_rand_int_range(rnd, 1, 65), first = a.tx_pi;

        for (k = 0; k < batch; k++) {
            struct uz_eth_desc d = {
                .addr = cpu_to_le64(g_rand_boolean(rnd) ?
                                    a.tx_buf + g_rand_int_range(rnd, 0, 4096) :
                                    ((uint64_t)g_rand_int(rnd) << 20)),
                .len = cpu_to_le16(g_rand_int_range(rnd, 0, 65536)),
                .flags = cpu_to_le16(k + 1 < batch &&
                                     g_rand_boolean(rnd) ? UZ_ETH_TX_MORE : 0),
            };

            qtest_memwrite(a.d.qts, desc_addr(a.tx_ring, &a, a.tx_pi++), &d,
                           sizeof(d));
        }
        uz_ring(&a.d, a.tx_db, a.tx_pi);
        eth_wait_tx(&a, a.tx_pi - 1);
        for (k = first; k != a.tx_pi; k++) {
            g_assert(eth_desc_status(&a, a.tx_ring, k) & UZ_ETH_DONE);
        }
        n += batch;
    }

    /* RX: 64 buffers at random addresses, then 64 broadcast frames. */
    for (k = 0; k < 64; k++) {
        struct uz_eth_desc d = {
            .addr = cpu_to_le64(g_rand_boolean(rnd) ? b.rx_buf[k] :
                                ((uint64_t)g_rand_int(rnd) << 24)),
            .len = cpu_to_le16(RX_BUF),
        };

        qtest_memwrite(b.d.qts, desc_addr(b.rx_ring, &b, b.rx_pi++), &d,
                       sizeof(d));
    }
    uz_ring(&b.d, b.rx_db, b.rx_pi);
    make_frame(f, sizeof(f), (uint8_t[]){ 0xff, 0xff, 0xff, 0xff, 0xff, 0xff },
               a.mac, 9);
    for (k = 0; k < 64; k++) {
        eth_put_tx(&a, f, sizeof(f), 1);
        uz_ring(&a.d, a.tx_db, a.tx_pi);
        g_assert_cmpint(eth_wait_tx(&a, a.tx_pi - 1), ==, 0);
    }
    for (k = 0; k < 64; k++) {
        int i;

        for (i = 0; i < UZ_POLL_LIMIT && !eth_rx_done(&b, k); i++) {
            uz_poll_pause(&b.d);
        }
        g_assert(eth_rx_done(&b, k));
        dma_errs += (eth_desc_status(&b, b.rx_ring, k) & UZ_ETH_ERR_MASK) ==
                    UZ_ETH_ERR_DMA;
    }
    g_assert_cmpint(uz_counter(&m, 1, "rx_frames") + dma_errs, ==, 64);
    g_assert_cmphex(uz_rd(&a.d, UZ_REG_MAGIC), ==, UZ_MAGIC);
    g_assert_cmphex(uz_rd(&b.d, UZ_REG_MAGIC), ==, UZ_MAGIC);
    g_rand_free(rnd);
    eth_stop(&a);
    eth_stop(&b);
    uz_machine_stop(&m);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);

    qtest_add_func("/uzura/eth/frames", test_frames_both_ways);
    qtest_add_func("/uzura/eth/rx-exhaustion", test_rx_exhaustion);
    qtest_add_func("/uzura/eth/errors", test_errors);
    qtest_add_func("/uzura/eth/reset-under-traffic", test_reset_under_traffic);
    qtest_add_func("/uzura/eth/fuzz-descriptors", test_fuzz_descriptors);

    return g_test_run();
}
