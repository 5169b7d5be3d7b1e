/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qtest for the stream link (-netdev stream, as scripts/qemu-patches/
 * net-stream.patch makes it): the test is the peer at the socket's other
 * end.  A burst of frames the NIC sends in one turn goes out in batches
 * (spec 7.1); a socket that takes only part of it gets the rest later,
 * and every frame arrives whole, once and in order, with its length --
 * frames copied into a batch (up to 2 KiB), frames sent from where they
 * lie, and both across partial writes.  The same with batching off.  A
 * batch of frames written to the NIC in one write reaches its RX ring in
 * order.
 */
#include "uzura-eth.h"
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>

#define STREAM_FRAMES   240

/* Around the 2 KiB a batch copies, and frames sent in place. */
static const size_t stream_sizes[] = {
    60, 300, 1514, 2048, 2049, 9000, 9000, 4000
};

static const uint8_t peer_mac[6] = { 0x52, 0x54, 0, 0x12, 0x34, 0x5f };

static size_t stream_size(int k)
{
    return stream_sizes[k % ARRAY_SIZE(stream_sizes)];
}

/* A listening socket QEMU's stream netdev will connect to. */
static int stream_listen(char **path, const char *tag)
{
    struct sockaddr_un sun = { .sun_family = AF_UNIX };
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);

    *path = g_strdup_printf("%s/uzura-stream-%d-%s.sock", g_get_tmp_dir(),
                            getpid(), tag);
    g_strlcpy(sun.sun_path, *path, sizeof(sun.sun_path));
    unlink(*path);
    g_assert_cmpint(fd, >=, 0);
    g_assert_cmpint(bind(fd, (struct sockaddr *)&sun, sizeof(sun)), ==, 0);
    g_assert_cmpint(listen(fd, 1), ==, 0);
    return fd;
}

/*
 * A machine whose uzura NIC is on a stream netdev connected to the test
 * at @path, brought up by @e as the driver does; returns our end.
 */
static int stream_node(UzMachine *m, UzEth *e, int lfd, const char *path,
                       const char *more, uint32_t depth)
{
    g_autofree char *args = g_strdup_printf(
        "-netdev stream,id=s0,server=off,addr.type=unix,addr.path=%s "
        "-device uzura,netdev=s0,id=uz0,mac=52:54:00:12:34:50,addr=%02x.0%s",
        path, UZ_SLOT(0), more);
    int fd, i;

    uz_machine_start(m, 0, args);
    fd = accept(lfd, NULL, NULL);
    g_assert_cmpint(fd, >=, 0);
    eth_start(e, m, 0, depth);
    for (i = 0; i < UZ_POLL_LIMIT &&
         !(uz_rd(&e->d, UZ_REG_STATUS) & UZ_STATUS_LINK_UP); i++) {
        uz_poll_pause(&e->d);
    }
    g_assert(uz_rd(&e->d, UZ_REG_STATUS) & UZ_STATUS_LINK_UP);
    eth_set_mtu(e, 9000);
    return fd;
}

/* Tear down what stream_listen and stream_node set up. */
static void stream_close(UzMachine *m, UzEth *e, int fd, int lfd,
                         const char *path)
{
    close(fd);
    eth_stop(e);
    uz_machine_stop(m);
    close(lfd);
    unlink(path);
}

/* Read @len bytes: QEMU sends them within 30 s or the test fails. */
static void stream_read(int fd, void *buf, size_t len)
{
    struct pollfd pfd = { .fd = fd, .events = POLLIN };
    uint8_t *p = buf;
    ssize_t r;

    while (len) {
        g_assert_cmpint(poll(&pfd, 1, 30000), ==, 1);
        r = read(fd, p, len);
        g_assert_cmpint(r, >, 0);
        p += r;
        len -= r;
    }
}

/*
 * STREAM_FRAMES frames put on the TX ring, one doorbell: far more than
 * the socket holds while the test does not read.  Once the NIC has sent
 * them all, the socket holds less than the burst (QEMU kept the rest);
 * then every frame arrives, with its length, once and in order, and
 * nothing else.
 */
static void stream_burst(const char *more)
{
    g_autofree char *path = NULL;
    g_autofree uint8_t *want = g_malloc(TX_BUF), *got = g_malloc(TX_BUF);
    size_t total = 0;
    uint32_t len;
    UzMachine m;
    UzEth a;
    int lfd = stream_listen(&path, "burst"), fd, k, inq = 0;

    fd = stream_node(&m, &a, lfd, path, more, 256);
    for (k = 0; k < STREAM_FRAMES; k++) {
        make_frame(want, stream_size(k), peer_mac, a.mac, k);
        eth_put_tx(&a, want, stream_size(k), 1);
        total += sizeof(len) + stream_size(k);
    }
    uz_ring(&a.d, a.tx_db, a.tx_pi);
    g_assert_cmpint(eth_wait_tx(&a, a.tx_pi - 1), ==, 0);
    g_assert_cmpint(ioctl(fd, FIONREAD, &inq), ==, 0);
    g_test_message("the socket holds %d of the burst's %zu bytes", inq,
                   total);
    g_assert_cmpint(inq, <, total);

    for (k = 0; k < STREAM_FRAMES; k++) {
        stream_read(fd, &len, sizeof(len));
        g_assert_cmpuint(be32_to_cpu(len), ==, stream_size(k));
        stream_read(fd, got, stream_size(k));
        make_frame(want, stream_size(k), peer_mac, a.mac, k);
        g_assert(memcmp(got, want, stream_size(k)) == 0);
    }
    /* Nothing more: a frame sent twice would follow the last. */
    make_frame(want, 60, peer_mac, a.mac, 999);
    g_assert_cmpint(eth_send(&a, want, 60, 1), ==, 0);
    stream_read(fd, &len, sizeof(len));
    g_assert_cmpuint(be32_to_cpu(len), ==, 60);
    stream_read(fd, got, 60);
    g_assert(memcmp(got, want, 60) == 0);

    stream_close(&m, &a, fd, lfd, path);
}

static void test_burst(void)
{
    stream_burst("");
}

static void test_burst_unbatched(void)
{
    stream_burst(",tx-batch=off,rx-batch=off");
}

/* Frames written to the NIC in one write reach its RX ring in order. */
static void test_rx_batch(void)
{
    g_autofree char *path = NULL;
    g_autofree uint8_t *f = g_malloc(TX_BUF);
    GByteArray *all = g_byte_array_new();
    UzMachine m;
    UzEth a;
    int lfd = stream_listen(&path, "rx"), fd, k, n = 64;

    fd = stream_node(&m, &a, lfd, path, "", n);
    eth_post_rx(&a, n, RX_BUF);
    for (k = 0; k < n; k++) {
        uint32_t len = cpu_to_be32(stream_size(k));

        make_frame(f, stream_size(k), a.mac, peer_mac, k);
        g_byte_array_append(all, (uint8_t *)&len, sizeof(len));
        g_byte_array_append(all, f, stream_size(k));
    }
    g_assert_cmpint(write(fd, all->data, all->len), ==, all->len);
    for (k = 0; k < n; k++) {
        make_frame(f, stream_size(k), a.mac, peer_mac, k);
        eth_expect_rx(&a, f, stream_size(k));
    }

    g_byte_array_free(all, true);
    stream_close(&m, &a, fd, lfd, path);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qtest_add_func("/uzura/stream/burst", test_burst);
    qtest_add_func("/uzura/stream/burst-unbatched", test_burst_unbatched);
    qtest_add_func("/uzura/stream/rx-batch", test_rx_batch);
    return g_test_run();
}
