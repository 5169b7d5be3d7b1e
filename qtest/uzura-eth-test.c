/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qtest for the uzura Ethernet function: two NICs on one hub exchange
 * frames of 60..9000 bytes through their descriptor rings; errors on
 * transmit and receive, RX ring exhaustion and recovery, and reset in the
 * middle of traffic.
 */
#include "uzura-eth.h"

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
            g_assert_cmpint(eth_send(tx, f, sizes[k], ndesc), ==, 0);
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

/*
 * One doorbell for more TX frames than one turn of the device sends (256):
 * the rest go in the next turn, with no second doorbell.  Before, the
 * turn's budget wrapped as it ran out and the rest waited for the driver's
 * next doorbell.
 */
static void test_tx_burst(void)
{
    static const uint8_t other[6] = { 0x52, 0x54, 0, 0x12, 0x34, 0x99 };
    UzMachine m;
    UzEth a;
    uint8_t f[60];
    int k;

    uz_machine_start(&m, 1, NULL);
    eth_start(&a, &m, 0, 512);
    for (k = 0; k < 300; k++) {
        make_frame(f, sizeof(f), other, a.mac, k);
        eth_put_tx(&a, f, sizeof(f), 1);
    }
    uz_ring(&a.d, a.tx_db, a.tx_pi);
    g_assert_cmpint(eth_wait_tx(&a, 299), ==, 0);
    g_assert_cmpint(uz_counter(&m, 0, "tx_frames"), ==, 300);
    eth_stop(&a);
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

/*
 * Destroying the EQ under its rings is refused; a second TX ring is
 * refused too.
 */
static void eq_held_by_rings(UzEth *e)
{
    struct uz_admin_cmd cmd = { .opcode = UZ_CMD_DESTROY_EQ };

    cmd.destroy.handle = cpu_to_le32(e->eq.eqn);
    g_assert_cmpint(uz_admin(&e->d, &cmd, NULL), ==, UZ_CMD_BUSY);
    cmd.opcode = UZ_CMD_CREATE_ETH_TXQ;
    cmd.create_eth_queue.ring_addr = cpu_to_le64(e->tx_ring);
    cmd.create_eth_queue.log_depth = 4;
    g_assert_cmpint(uz_admin(&e->d, &cmd, NULL), ==, UZ_CMD_EXISTS);
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

    eq_held_by_rings(&a);

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
    qtest_add_func("/uzura/eth/tx-burst", test_tx_burst);
    qtest_add_func("/uzura/eth/rx-exhaustion", test_rx_exhaustion);
    qtest_add_func("/uzura/eth/errors", test_errors);
    qtest_add_func("/uzura/eth/reset-under-traffic", test_reset_under_traffic);
    qtest_add_func("/uzura/eth/fuzz-descriptors", test_fuzz_descriptors);

    return g_test_run();
}
