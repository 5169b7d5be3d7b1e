/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qtest for the shared-memory link (-netdev shm, net/shm.c): two QEMU
 * processes, each with an uzura NIC, exchange frames through it both ways;
 * the link goes down, for the NIC too, when the peer goes away, and comes
 * back with a new peer; a ring the peer does not empty holds the sender's
 * frames back, in order, until it does; a peer that writes garbage into
 * the region (indices past the ring, a record longer than what was
 * published, a frame longer than the ring) takes the link down with a
 * guest-error line and cannot make QEMU touch memory outside the region.
 * Here the test itself is that peer: it connects to the socket, takes the
 * region and eventfds as QEMU's client would, and writes into them.
 */
#include "uzura-eth.h"
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include "../../net/shm-ring.h"

#define SHM_RING_TEST   (64 * 1024)

/* The test as the shm peer: the connection and the region QEMU handed it. */
typedef struct ShmPeer {
    int sock;                   /* wake-ups both ways */
    ShmLinkHdr *hdr;
    size_t len;
    ShmRing tx, rx;
} ShmPeer;

static char *shm_path(const char *tag)
{
    return g_strdup_printf("%s/uzura-shm-%d-%s.sock", g_get_tmp_dir(),
                           getpid(), tag);
}

/* A machine whose one uzura NIC (MAC ...:5<i>) is on a shm netdev. */
static void shm_machine(UzMachine *m, int i, const char *path, bool server,
                        const char *more)
{
    g_autofree char *args = g_strdup_printf(
        "-netdev shm,id=s0,path=%s%s%s "
        "-device uzura,netdev=s0,id=uz0,mac=52:54:00:12:34:5%d,addr=%02x.0",
        path, server ? ",server=on" : ",reconnect-ms=20", more ? more : "",
        i, UZ_SLOT(0));

    uz_machine_start(m, 0, args);
}

/*
 * Machine @m, its NIC on a shm netdev, brought up by @e as the driver
 * does; the NIC's MAC ends in 5<i>.
 */
static void shm_node(UzMachine *m, UzEth *e, int i, const char *path,
                     bool server, const char *more, uint32_t depth)
{
    shm_machine(m, i, path, server, more);
    eth_start(e, m, 0, depth);
    e->mac[5] = 0x50 + i;
}

/* The netdev's line of 'info network'. */
static char *shm_info(UzMachine *m)
{
    g_autofree char *all = qtest_hmp(m->qs->qts, "info network");
    char *p = strstr(all, "s0: ");

    g_assert(p);
    return g_strndup(p, strcspn(p, "\r\n"));
}

/* Poll machine @m until its netdev's info holds @what. */
static void shm_wait_info(UzMachine *m, const char *what)
{
    int i;

    for (i = 0; i < 20000; i++) {
        g_autofree char *info = shm_info(m);

        if (strstr(info, what)) {
            return;
        }
        g_usleep(500);
    }
    g_error("netdev never said '%s': %s", what, shm_info(m));
}

static bool nic_link_up(UzEth *e)
{
    return uz_rd(&e->d, UZ_REG_STATUS) & UZ_STATUS_LINK_UP;
}

static void shm_peer_attach(ShmPeer *p, const char *path)
{
    struct sockaddr_un sun = { .sun_family = AF_UNIX };
    int fd, i;
    char c;
    struct iovec iov = { .iov_base = &c, .iov_len = 1 };
    union {
        char buf[CMSG_SPACE(sizeof(fd))];
        struct cmsghdr align;
    } u;
    struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
                          .msg_control = u.buf,
                          .msg_controllen = sizeof(u.buf) };
    struct cmsghdr *cmsg;
    struct stat st;

    memset(p, 0, sizeof(*p));
    g_strlcpy(sun.sun_path, path, sizeof(sun.sun_path));
    /*
     * QEMU turns a new peer away (closes at once) until it has let the
     * last one go.
     */
    for (i = 0; ; i++) {
        g_assert_cmpint(i, <, 5000);
        p->sock = socket(AF_UNIX, SOCK_STREAM, 0);
        if (!connect(p->sock, (struct sockaddr *)&sun, sizeof(sun)) &&
            recvmsg(p->sock, &msg, 0) == 1) {
            break;
        }
        close(p->sock);
        msg.msg_controllen = sizeof(u.buf);
        g_usleep(1000);
    }
    g_assert_cmpint(c, ==, 'U');
    cmsg = CMSG_FIRSTHDR(&msg);
    g_assert(cmsg && cmsg->cmsg_type == SCM_RIGHTS &&
             cmsg->cmsg_len == CMSG_LEN(sizeof(fd)));
    memcpy(&fd, CMSG_DATA(cmsg), sizeof(fd));
    /* The region cannot shrink under its users. */
    g_assert(fcntl(fd, F_GET_SEALS) & F_SEAL_SHRINK);
    g_assert_cmpint(fstat(fd, &st), ==, 0);
    p->len = st.st_size;
    p->hdr = mmap(NULL, p->len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    g_assert(p->hdr != MAP_FAILED);
    close(fd);
    g_assert_cmphex(p->hdr->magic, ==, SHM_LINK_MAGIC);
    g_assert_cmpuint(p->len, ==, shm_link_size(p->hdr->ring_size));
    /* We are the client: ring 1 is ours to fill, ring 0 to empty. */
    shm_ring_attach(&p->tx, p->hdr, 1, p->hdr->ring_size);
    shm_ring_attach(&p->rx, p->hdr, 0, p->hdr->ring_size);
}

static void shm_peer_detach(ShmPeer *p)
{
    munmap(p->hdr, p->len);
    close(p->sock);
}

/* Wake QEMU; it may have let this peer go already (garbage seen). */
static void shm_peer_kick(ShmPeer *p)
{
    char c = 1;

    if (send(p->sock, &c, 1, MSG_NOSIGNAL) != 1) {
        g_assert(errno == EPIPE || errno == ECONNRESET);
    }
}

/* Two QEMUs, one NIC each, on one shm link: frames both ways. */
static void test_two_nodes(void)
{
    static const size_t sizes[] = { 60, 61, 1514, 4000, 9000, 9018 };
    g_autofree char *path = shm_path("two");
    g_autofree uint8_t *f = g_malloc(TX_BUF);
    g_autofree char *info = NULL;
    UzMachine ma, mb;
    UzEth a, b, *tx, *rx;
    int dir, k, i;

    shm_node(&ma, &a, 0, path, true, NULL, 16);
    /* No peer yet: the NIC sees no link. */
    for (i = 0; i < 1000 && nic_link_up(&a); i++) {
        uz_poll_pause(&a.d);
    }
    g_assert(!nic_link_up(&a));

    shm_node(&mb, &b, 1, path, false, NULL, 16);
    shm_wait_info(&ma, "connected");
    shm_wait_info(&mb, "connected");
    g_assert(nic_link_up(&a));
    g_assert(nic_link_up(&b));

    eth_set_mtu(&a, 9000);
    eth_set_mtu(&b, 9000);
    eth_post_rx(&a, 16, RX_BUF);
    eth_post_rx(&b, 16, RX_BUF);
    for (dir = 0; dir < 2; dir++) {
        tx = dir ? &b : &a;
        rx = dir ? &a : &b;
        for (k = 0; k < ARRAY_SIZE(sizes); k++) {
            make_frame(f, sizes[k], rx->mac, tx->mac, k + dir * 100);
            g_assert_cmpint(eth_send(tx, f, sizes[k], sizes[k] > 4000 ? 3 : 1),
                            ==, 0);
            eth_expect_rx(rx, f, sizes[k]);
            eth_post_rx(rx, 1, RX_BUF);
        }
    }

    /* The peer goes away: the link goes down, for the NIC too. */
    eth_stop(&b);
    uz_machine_stop(&mb);
    shm_wait_info(&ma, "the peer went away");
    for (i = 0; i < UZ_POLL_LIMIT && nic_link_up(&a); i++) {
        uz_poll_pause(&a.d);
    }
    g_assert(!nic_link_up(&a));

    /* A new peer attaches, and frames flow again. */
    shm_node(&mb, &b, 1, path, false, NULL, 16);
    shm_wait_info(&ma, "connected");
    eth_post_rx(&b, 4, RX_BUF);
    make_frame(f, 1514, b.mac, a.mac, 7);
    g_assert_cmpint(eth_send(&a, f, 1514, 1), ==, 0);
    eth_expect_rx(&b, f, 1514);
    info = shm_info(&ma);
    g_assert(strstr(info, "garbage 0"));

    eth_stop(&a);
    eth_stop(&b);
    uz_machine_stop(&mb);
    uz_machine_stop(&ma);
}

/*
 * A ring its consumer does not empty: QEMU keeps the frames that do not
 * fit and sends them, in order, once the consumer frees space and wakes
 * it.  Frames from the peer reach the NIC as well.
 */
static void test_ring_full(void)
{
    g_autofree char *path = shm_path("full");
    g_autofree uint8_t *f = g_malloc(TX_BUF);
    g_autofree char *more = g_strdup_printf(",ring-size=%d", SHM_RING_TEST);
    const uint8_t *got = NULL;
    uint32_t len = 0;
    UzMachine m;
    ShmPeer p;
    UzEth a;
    uint8_t peer_mac[6] = { 0x52, 0x54, 0, 0x12, 0x34, 0x5f };
    struct iovec iov;
    int n = 24, k, i;

    shm_node(&m, &a, 0, path, true, more, 32);
    shm_peer_attach(&p, path);
    shm_wait_info(&m, "connected");
    g_assert_cmpuint(p.hdr->ring_size, ==, SHM_RING_TEST);

    /* 24 frames of 9000 bytes: the 64 KiB ring takes 3 at a time. */
    eth_set_mtu(&a, 9000);
    for (k = 0; k < n; k++) {
        make_frame(f, 9000, peer_mac, a.mac, k);
        eth_put_tx(&a, f, 9000, 1);
    }
    uz_ring(&a.d, a.tx_db, a.tx_pi);
    g_assert_cmpint(eth_wait_tx(&a, a.tx_pi - 1), ==, 0);
    /* The ring is full, and QEMU asked to be woken for space. */
    g_assert_cmpuint(p.hdr->ring[0].want_space, ==, 1);
    for (k = 0; k < n; k++) {
        for (i = 0; i < UZ_POLL_LIMIT; i++) {
            if (shm_ring_get(&p.rx, &got, &len, false) == 1) {
                break;
            }
            if (shm_ring_release(&p.rx)) {
                shm_peer_kick(&p);
            }
            uz_poll_pause(&a.d);
        }
        g_assert_cmpint(i, <, UZ_POLL_LIMIT);
        make_frame(f, 9000, peer_mac, a.mac, k);
        g_assert_cmpuint(len, ==, 9000);
        g_assert(memcmp(got, f, 9000) == 0);
    }
    shm_ring_release(&p.rx);

    /* The other way: a frame from the peer reaches the NIC's ring. */
    eth_post_rx(&a, 2, RX_BUF);
    make_frame(f, 1000, a.mac, peer_mac, 99);
    iov = (struct iovec){ f, 1000 };
    g_assert_cmpint(shm_ring_put(&p.tx, &iov, 1, 1000), ==, 1);
    if (shm_ring_wake_needed(&p.tx)) {
        shm_peer_kick(&p);
    }
    eth_expect_rx(&a, f, 1000);

    /*
     * The ring full again, and frames kept back, when the peer goes: a
     * new peer gets a fresh ring, and what the NIC sends next, not the
     * old peer's frames.
     */
    for (k = 0; k < 8; k++) {
        make_frame(f, 9000, peer_mac, a.mac, k);
        eth_put_tx(&a, f, 9000, 1);
    }
    uz_ring(&a.d, a.tx_db, a.tx_pi);
    g_assert_cmpint(eth_wait_tx(&a, a.tx_pi - 1), ==, 0);
    g_assert_cmpuint(p.hdr->ring[0].want_space, ==, 1);
    shm_peer_detach(&p);
    shm_wait_info(&m, "the peer went away");
    shm_peer_attach(&p, path);
    shm_wait_info(&m, "connected");
    make_frame(f, 500, peer_mac, a.mac, 77);
    g_assert_cmpint(eth_send(&a, f, 500, 1), ==, 0);
    for (i = 0; i < UZ_POLL_LIMIT &&
         shm_ring_get(&p.rx, &got, &len, false) != 1; i++) {
        uz_poll_pause(&a.d);
    }
    g_assert_cmpint(i, <, UZ_POLL_LIMIT);
    g_assert_cmpuint(len, ==, 500);
    g_assert(memcmp(got, f, 500) == 0);

    shm_peer_detach(&p);
    eth_stop(&a);
    uz_machine_stop(&m);
}

/* How many fds a process holds. */
static int fd_count(pid_t pid)
{
    g_autofree char *dir = g_strdup_printf("/proc/%d/fd", pid);
    GDir *d = g_dir_open(dir, 0, NULL);
    int n = 0;

    g_assert(d);
    while (g_dir_read_name(d)) {
        n++;
    }
    g_dir_close(d);
    return n;
}

/*
 * The test as a server: hand QEMU's client @nfds fds (all @mfd); returns
 * the connection, whose end would be the server gone.
 */
static int shm_hand_over(int lfd, int mfd, int nfds)
{
    int fds[5], i, c;
    char hello = 'U';
    struct iovec iov = { .iov_base = &hello, .iov_len = 1 };
    union {
        char buf[CMSG_SPACE(sizeof(fds))];
        struct cmsghdr align;
    } u = { };
    struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
                          .msg_control = u.buf,
                          .msg_controllen = CMSG_SPACE(nfds * sizeof(int)) };
    struct cmsghdr *cmsg = CMSG_FIRSTHDR(&msg);

    c = accept(lfd, NULL, NULL);
    g_assert_cmpint(c, >=, 0);
    for (i = 0; i < nfds; i++) {
        fds[i] = mfd;
    }
    cmsg->cmsg_level = SOL_SOCKET;
    cmsg->cmsg_type = SCM_RIGHTS;
    cmsg->cmsg_len = CMSG_LEN(nfds * sizeof(int));
    memcpy(CMSG_DATA(cmsg), fds, nfds * sizeof(int));
    g_assert_cmpint(sendmsg(c, &msg, MSG_NOSIGNAL), ==, 1);
    return c;
}

/* A memfd of a link's size with @ring_size in its header; sealed or not. */
static int shm_region(uint32_t ring_size, uint32_t hdr_ring, bool seal)
{
    size_t len = shm_link_size(ring_size);
    int fd = memfd_create("test", MFD_ALLOW_SEALING);
    ShmLinkHdr *h;

    g_assert_cmpint(ftruncate(fd, len), ==, 0);
    h = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    g_assert(h != MAP_FAILED);
    h->magic = SHM_LINK_MAGIC;
    h->version = SHM_LINK_VERSION;
    h->ring_size = hdr_ring;
    munmap(h, len);
    if (seal) {
        g_assert_cmpint(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW),
                        ==, 0);
    }
    return fd;
}

/*
 * QEMU as the client of a hostile server: hand-overs with the wrong number
 * of fds, an unsealed region, a header that does not match the region's
 * size are refused, logged and counted, leak no fd, and QEMU tries again
 * until a good one comes.
 */
static void test_client_handover(void)
{
    g_autofree char *path = shm_path("cli");
    g_autofree char *log = NULL;
    struct sockaddr_un sun = { .sun_family = AF_UNIX };
    int lfd = socket(AF_UNIX, SOCK_STREAM, 0), good, unsealed, lying;
    int before, k, c;
    UzMachine m;
    pid_t pid;

    g_strlcpy(sun.sun_path, path, sizeof(sun.sun_path));
    unlink(path);
    g_assert_cmpint(bind(lfd, (struct sockaddr *)&sun, sizeof(sun)), ==, 0);
    g_assert_cmpint(listen(lfd, 4), ==, 0);
    good = shm_region(SHM_RING_TEST, SHM_RING_TEST, true);
    unsealed = shm_region(SHM_RING_TEST, SHM_RING_TEST, false);
    lying = shm_region(SHM_RING_TEST, 256 * 1024 * 1024, true);

    shm_machine(&m, 0, path, false, NULL);
    pid = qtest_pid(m.qs->qts);
    close(shm_hand_over(lfd, good, 4));
    shm_wait_info(&m, "garbage 1");
    before = fd_count(pid);
    for (k = 0; k < 5; k++) {
        close(shm_hand_over(lfd, good, 4)); /* too many fds */
    }
    close(shm_hand_over(lfd, unsealed, 1));
    close(shm_hand_over(lfd, lying, 1));    /* ring size past the region */
    shm_wait_info(&m, "garbage 8");
    /* One socket may be open, waiting for the next hand-over. */
    g_assert_cmpint(fd_count(pid), <=, before + 1);
    c = shm_hand_over(lfd, good, 1);
    shm_wait_info(&m, "connected");
    log = uz_machine_log(&m);
    g_assert(strstr(log, "a bad hand-over from the server"));
    g_assert(strstr(log, "not a sealed memfd"));
    g_assert(strstr(log, "has a bad header"));
    uz_machine_stop(&m);
    close(c);
    close(good);
    close(unsealed);
    close(lying);
    close(lfd);
    unlink(path);
}

/* What the peer writes into the region, each on a fresh attachment. */
typedef enum {
    BAD_HEAD_PAST_RING,         /* more than the ring holds */
    BAD_HEAD_BACKWARDS,         /* behind what QEMU took */
    BAD_LEN_PAST_HEAD,          /* a record longer than what is published */
    BAD_LEN_HUGE,               /* a frame longer than any frame */
    BAD_TAIL,                   /* our tail ahead of QEMU's head */
    BAD_MAX
} ShmGarbage;

static void test_garbage(void)
{
    g_autofree char *path = shm_path("bad");
    g_autofree char *info = NULL;
    g_autofree char *log = NULL;
    g_autofree uint8_t *f = g_malloc(TX_BUF);
    UzMachine m;
    ShmPeer p;
    UzEth a;
    int bad;

    shm_node(&m, &a, 0, path, true, NULL, 16);
    for (bad = 0; bad < BAD_MAX; bad++) {
        g_autofree char *want = g_strdup_printf("garbage %d", bad + 1);
        uint32_t *rec;

        shm_peer_attach(&p, path);
        shm_wait_info(&m, "connected");
        rec = (uint32_t *)p.tx.data;
        switch (bad) {
        case BAD_HEAD_PAST_RING:
            p.tx.ctl->head = p.hdr->ring_size + 8;
            break;
        case BAD_HEAD_BACKWARDS:
            p.tx.ctl->head = (uint32_t)-64;
            break;
        case BAD_LEN_PAST_HEAD:
            *rec = 4096;
            p.tx.ctl->head = 64;
            break;
        case BAD_LEN_HUGE:
            *rec = 0x7fffffff;
            p.tx.ctl->head = 64;
            break;
        case BAD_TAIL:
            /* Found when QEMU next sends: make the NIC send a frame. */
            p.rx.ctl->tail = 4096;
            make_frame(f, 100, (uint8_t[]){ 0x52, 0x54, 0, 0x12, 0x34, 0x5f },
                       a.mac, bad);
            eth_send(&a, f, 100, 1);
            break;
        }
        shm_peer_kick(&p);
        shm_wait_info(&m, want);
        g_assert(!strstr(shm_info(&m), "connected"));
        shm_peer_detach(&p);
    }
    /* Each left its line in the log, and a good peer still attaches. */
    log = uz_machine_log(&m);
    g_assert(strstr(log, "bad head index or record: link down"));
    g_assert(strstr(log, "bad tail index: link down"));
    shm_peer_attach(&p, path);
    shm_wait_info(&m, "connected");
    info = shm_info(&m);
    g_assert(strstr(info, "garbage 5"));
    shm_peer_detach(&p);
    eth_stop(&a);
    uz_machine_stop(&m);
}

/* Options QEMU refuses, with the reason. */
static void test_bad_options(void)
{
    static const char *const bad[][2] = {
        { "ring-size=1000,server=on", "must be a power of 2" },
        { "ring-size=4096,server=on", "must be a power of 2" },
        { "ring-size=65536", "the server's to choose" },
    };
    g_autofree char *path = shm_path("opts");
    int k, status;

    for (k = 0; k < ARRAY_SIZE(bad); k++) {
        g_autofree char *cmd = g_strdup_printf(
            "%s -M none -display none -netdev shm,id=s0,path=%s,%s",
            getenv("QTEST_QEMU_BINARY"), path, bad[k][0]);
        g_autofree char *out = NULL, *err = NULL;

        g_assert(g_spawn_command_line_sync(cmd, &out, &err, &status, NULL));
        g_assert_cmpint(status, !=, 0);
        g_assert(strstr(err, bad[k][1]));
    }
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qtest_add_func("/uzura/shm/two-nodes", test_two_nodes);
    qtest_add_func("/uzura/shm/ring-full", test_ring_full);
    qtest_add_func("/uzura/shm/garbage", test_garbage);
    qtest_add_func("/uzura/shm/client-handover", test_client_handover);
    qtest_add_func("/uzura/shm/bad-options", test_bad_options);
    return g_test_run();
}
