/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The uzura Ethernet function for qtests: bring a NIC's Ethernet rings up
 * as the driver does, post receive buffers, send frames as descriptor
 * chains, and wait for and check what arrives (uzura-eth-test.c,
 * uzura-shm-test.c).
 */
#ifndef UZURA_ETH_H
#define UZURA_ETH_H

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

void eth_cmd(UzEth *e, uint8_t op, uint64_t ring,
             uint32_t *db);

void eth_set_mtu(UzEth *e, uint32_t mtu);

/* Bring NIC @i up: admin queue, one async EQ, both rings. */
void eth_start(UzEth *e, UzMachine *m, int i, uint32_t depth);

void eth_stop(UzEth *e);

uint64_t desc_addr(uint64_t ring, UzEth *e, uint32_t idx);

/* Post @n RX descriptors of @len bytes. */
void eth_post_rx(UzEth *e, int n, uint16_t len);

void make_frame(uint8_t *f, size_t len, const uint8_t *dst,
                const uint8_t *src, uint32_t seed);

/* Queue one frame as @ndesc descriptors (chained with MORE), no doorbell. */
void eth_put_tx(UzEth *e, const uint8_t *frame, size_t len,
                int ndesc);

uint32_t eth_desc_status(UzEth *e, uint64_t ring,
                         uint32_t idx);

/* Wait for TX descriptor @idx to complete; returns its error code. */
uint32_t eth_wait_tx(UzEth *e, uint32_t idx);

/* Send one frame as @ndesc descriptors and wait for it: its error code. */
uint32_t eth_send(UzEth *e, const uint8_t *frame, size_t len,
                  int ndesc);

bool eth_rx_done(UzEth *e, uint32_t idx);

/* Wait for the next received frame and check it against @want. */
void eth_expect_rx(UzEth *e, const uint8_t *want, size_t len);

#endif
