/*
 * QEMU shared-memory link netdev (uzura): two QEMU processes on one host
 * exchange Ethernet frames through rings in memory both map.
 *
 *   -netdev shm,id=N,path=SOCKET,server=on[,ring-size=BYTES]
 *   -netdev shm,id=N,path=SOCKET[,reconnect-ms=MS]
 *
 * The server listens on the Unix socket SOCKET.  For each peer that
 * connects it makes a fresh region (a sealed memfd: a header and a ring of
 * frames per direction, net/shm-ring.h) and hands it to the peer over the
 * connection.  A frame costs one copy into the peer's ring and one out of
 * ours into a buffer of our own, from which the NIC takes it: the peer can
 * rewrite the ring at any time, and NICs parse frames assuming they hold
 * still.  A side sleeps on the connection and is woken (one byte) only
 * when it said it was going to sleep, at most once per turn of the sender
 * (the wake-up waits for a bottom half at the end of the turn, so a burst
 * of frames costs one).  Each end of the connection is its own, so
 * nothing the peer does to its end can block ours; the connection's end
 * is the peer going away.  The link is down, for the NIC too, while no
 * peer is attached; a peer that writes garbage into the region takes the
 * link down, and the server waits for a new peer, the client reconnects
 * after reconnect-ms.
 *
 * Copyright (c) 2026 The uzura authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include <sys/socket.h>
#include <sys/un.h>

#include "net/net.h"
#include "clients.h"
#include "qapi/error.h"
#include "qemu/cutils.h"
#include "qemu/defer-call.h"
#include "qemu/error-report.h"
#include "qemu/iov.h"
#include "qemu/log.h"
#include "qemu/main-loop.h"
#include "qemu/memfd.h"
#include "qemu/sockets.h"
#include "shm-ring.h"

#define SHM_RING_DEFAULT    (4 * 1024 * 1024)
/* Frames handed to the NIC in one turn before the main loop goes on. */
#define SHM_RX_BUDGET       256
#define SHM_HELLO           'U'
/* After a failed accept (out of fds), listen again this much later. */
#define SHM_ACCEPT_RETRY_MS 100

typedef struct NetShmState {
    NetClientState nc;
    char *path;
    bool server;
    uint32_t ring_size;         /* the region's, from private memory */
    uint32_t reconnect_ms;
    int listen_fd;
    dev_t sock_dev;             /* server: the socket file it made */
    ino_t sock_ino;
    int sock_fd;                /* to the peer: wake-ups, and its end */
    ShmLinkHdr *hdr;            /* the region, while a peer is attached */
    size_t map_len;
    ShmRing tx, rx;
    uint8_t *rx_buf;            /* a frame out of the ring, for the NIC */
    bool tx_blocked;            /* the peer's ring is full: it wakes us */
    bool rx_stopped;            /* the NIC takes no more for now */
    bool broken;                /* down, the region not yet let go */
    char *why;                  /* why it went down */
    QEMUBH *flush_bh;           /* end of a turn: wake the peer once */
    QEMUBH *rx_bh;              /* more frames after a full budget */
    QEMUBH *down_bh;            /* let the region go, outside any turn */
    guint timer_tag;            /* client: reconnect; server: accept */
    uint64_t too_big;           /* frames the link cannot carry */
    uint64_t garbage;           /* peers that wrote garbage */
} NetShmState;

static void net_shm_connect(NetShmState *s);
static void net_shm_down(NetShmState *s, const char *why, bool bad_peer);

/* Wake the peer: one byte on our end, never waiting. */
static void net_shm_kick(NetShmState *s)
{
    char c = 1;

    if (send(s->sock_fd, &c, 1, MSG_DONTWAIT | MSG_NOSIGNAL) < 0 &&
        errno != EAGAIN && errno != EINTR) {
        /* EAGAIN: bytes the peer has not read wake it as well. */
        net_shm_down(s, "the peer's end of the connection is gone", false);
    }
}

/*
 * The NIC sees the link as we do, as with set_link; not after its netdev
 * was deleted, when QEMU keeps the NIC's link down.
 */
static void net_shm_nic_link(NetShmState *s)
{
    NetClientState *peer = s->nc.peer;
    bool down = s->nc.link_down;

    if (peer && peer->info->type == NET_CLIENT_DRIVER_NIC &&
        !qemu_get_nic(peer)->peer_deleted && peer->link_down != down) {
        peer->link_down = down;
        if (peer->info->link_status_changed) {
            peer->info->link_status_changed(peer);
        }
    }
}

static void net_shm_info(NetShmState *s)
{
    qemu_set_info_str(&s->nc, "%s %s: %s (frames too big %" PRIu64
                      ", garbage %" PRIu64 ")",
                      s->server ? "server" : "client", s->path,
                      s->hdr && !s->broken ? "connected" :
                      s->why ? s->why : "waiting for the peer",
                      s->too_big, s->garbage);
}

static void net_shm_close_fd(int *fd)
{
    if (*fd >= 0) {
        qemu_set_fd_handler(*fd, NULL, NULL, NULL);
        close(*fd);
        *fd = -1;
    }
}

/* Let the region go; from a bottom half, where no frame is in use. */
static void net_shm_release(NetShmState *s)
{
    net_shm_close_fd(&s->sock_fd);
    if (s->hdr) {
        munmap(s->hdr, s->map_len);
        s->hdr = NULL;
    }
    s->broken = false;
    s->tx_blocked = false;
    s->rx_stopped = false;
}

static gboolean net_shm_reconnect(gpointer opaque)
{
    NetShmState *s = opaque;

    s->timer_tag = 0;
    net_shm_connect(s);
    return G_SOURCE_REMOVE;
}

static void net_shm_retry(NetShmState *s)
{
    if (!s->server && s->reconnect_ms && !s->timer_tag) {
        s->timer_tag = g_timeout_add(s->reconnect_ms, net_shm_reconnect, s);
    }
}

static void net_shm_down_bh(void *opaque)
{
    NetShmState *s = opaque;

    if (!s->broken) {
        return;
    }
    net_shm_release(s);
    /*
     * Frames the net layer kept for the old peer go, and with them the
     * stop a full ring put on sending: the next peer starts afresh.
     */
    qemu_purge_queued_packets(&s->nc);
    qemu_flush_or_purge_queued_packets(&s->nc, true);
    net_shm_nic_link(s);
    net_shm_retry(s);
}

/*
 * Take the link down: at once for new frames; the NIC hears of it and the
 * region goes in a bottom half, outside the NIC's own turn and after any
 * frame in use.
 */
static void net_shm_down(NetShmState *s, const char *why, bool bad_peer)
{
    if (!s->hdr || s->broken) {
        return;
    }
    s->broken = true;
    s->nc.link_down = true;
    g_free(s->why);
    s->why = g_strdup(why);
    if (bad_peer) {
        s->garbage++;
        qemu_log_mask(LOG_GUEST_ERROR, "netdev shm %s: %s: link down\n",
                      s->nc.name, why);
    }
    net_shm_info(s);
    qemu_set_fd_handler(s->sock_fd, NULL, NULL, NULL);
    qemu_bh_schedule(s->down_bh);
}

static void net_shm_flush_bh(void *opaque)
{
    NetShmState *s = opaque;

    if (s->hdr && !s->broken && shm_ring_wake_needed(&s->tx)) {
        net_shm_kick(s);
    }
}

static ssize_t net_shm_receive_iov(NetClientState *nc,
                                   const struct iovec *iov, int iovcnt)
{
    NetShmState *s = DO_UPCAST(NetShmState, nc, nc);
    size_t size = iov_size(iov, iovcnt);
    int ret;

    if (!s->hdr || s->broken) {
        return size;                    /* no peer: the frame is lost */
    }
    ret = shm_ring_put(&s->tx, iov, iovcnt, size);
    if (ret == 0) {
        /* Full: net.c keeps the frame until the peer frees space. */
        s->tx_blocked = true;
        qemu_bh_schedule(s->flush_bh);
        return 0;
    }
    if (ret == -EMSGSIZE) {
        s->too_big++;
        qemu_log_mask(LOG_GUEST_ERROR, "netdev shm %s: a frame of %zu bytes "
                      "is larger than the link carries; dropped\n",
                      nc->name, size);
        net_shm_info(s);
        return size;
    }
    if (ret < 0) {
        net_shm_down(s, "the peer wrote a bad tail index", true);
        return size;
    }
    /* The wake-up goes at the end of the sender's turn, once. */
    if (defer_call_deferring()) {
        defer_call(net_shm_flush_bh, s);
    } else {
        qemu_bh_schedule(s->flush_bh);
    }
    return size;
}

static ssize_t net_shm_receive(NetClientState *nc, const uint8_t *buf,
                               size_t size)
{
    struct iovec iov = { .iov_base = (void *)buf, .iov_len = size };

    return net_shm_receive_iov(nc, &iov, 1);
}

static void net_shm_rx_done(NetClientState *nc, ssize_t len)
{
    NetShmState *s = DO_UPCAST(NetShmState, nc, nc);

    s->rx_stopped = false;
    qemu_bh_schedule(s->rx_bh);
}

/* Hand the NIC what the peer put in our ring, each frame copied out. */
static void net_shm_rx_frames(NetShmState *s)
{
    const uint8_t *frame;
    uint32_t len;
    int n, ret = 0;

    for (n = 0; n < SHM_RX_BUDGET && !s->rx_stopped; n++) {
        ret = shm_ring_get(&s->rx, &frame, &len, true);
        if (ret <= 0) {
            break;
        }
        memcpy(s->rx_buf, frame, len);
        if (len && qemu_send_packet_async(&s->nc, s->rx_buf, len,
                                          net_shm_rx_done) == 0) {
            /* net.c queued a copy; the NIC calls back when it has room. */
            s->rx_stopped = true;
        }
        if (s->broken) {
            return;                     /* the frame's reply found garbage */
        }
    }
    if (ret < 0) {
        net_shm_down(s, "the peer wrote a bad head index or record", true);
        return;
    }
    if (shm_ring_release(&s->rx)) {
        net_shm_kick(s);
    }
    if (n == SHM_RX_BUDGET) {
        qemu_bh_schedule(s->rx_bh);
    }
}

/*
 * A batch of frames is one defer_call section: a NIC that defers its work
 * to the section's end (uzura) answers the whole batch in one turn, in
 * this iteration of the main loop, not in a bottom half of the next.
 */
static void net_shm_rx(NetShmState *s)
{
    defer_call_begin();
    net_shm_rx_frames(s);
    defer_call_end();
}

static void net_shm_rx_bh(void *opaque)
{
    NetShmState *s = opaque;

    if (!s->hdr) {
        /* First run, once the NIC exists: it sees no link yet. */
        net_shm_nic_link(s);
    } else if (!s->broken) {
        net_shm_rx(s);
    }
}

/* The peer woke us (frames to take, or space for ours), or went away. */
static void net_shm_sock_event(void *opaque)
{
    NetShmState *s = opaque;
    char buf[64];
    ssize_t n = recv(s->sock_fd, buf, sizeof(buf), MSG_DONTWAIT);

    if (n == 0) {
        net_shm_down(s, "the peer went away", false);
        return;
    }
    if (n < 0 && errno != EAGAIN && errno != EINTR) {
        net_shm_down(s, "the connection to the peer failed", false);
        return;
    }
    if (s->tx_blocked) {
        s->tx_blocked = false;
        qemu_flush_queued_packets(&s->nc);
        if (s->broken) {
            return;
        }
    }
    net_shm_rx(s);
}

/* A region is mapped and checked: the link is up. */
static void net_shm_up(NetShmState *s, ShmLinkHdr *hdr, size_t len,
                       uint32_t ring_size)
{
    s->hdr = hdr;
    s->map_len = len;
    /* Ring 0 runs from the server to the client, ring 1 back. */
    shm_ring_attach(&s->tx, hdr, s->server ? 0 : 1, ring_size);
    shm_ring_attach(&s->rx, hdr, s->server ? 1 : 0, ring_size);
    g_free(s->why);
    s->why = NULL;
    qemu_set_fd_handler(s->sock_fd, net_shm_sock_event, NULL, s);
    s->nc.link_down = false;
    net_shm_nic_link(s);
    net_shm_info(s);
    net_shm_rx(s);                      /* frames already there; sleep */
}

static void net_shm_accept(void *opaque);

static gboolean net_shm_listen_again(gpointer opaque)
{
    NetShmState *s = opaque;

    s->timer_tag = 0;
    qemu_set_fd_handler(s->listen_fd, net_shm_accept, NULL, s);
    return G_SOURCE_REMOVE;
}

/* Server: a fresh region for a new peer, handed over. */
static void net_shm_accept(void *opaque)
{
    NetShmState *s = opaque;
    size_t len = shm_link_size(s->ring_size);
    int fd, mfd = -1;
    char c = SHM_HELLO;
    struct iovec iov = { .iov_base = &c, .iov_len = 1 };
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } u = { };
    struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
                          .msg_control = u.buf,
                          .msg_controllen = sizeof(u.buf) };
    struct cmsghdr *cmsg;
    ShmLinkHdr *hdr = MAP_FAILED;
    Error *err = NULL;

    fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
        if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED) {
            /* Out of fds: the socket stays readable; do not spin on it. */
            qemu_set_fd_handler(s->listen_fd, NULL, NULL, NULL);
            s->timer_tag = g_timeout_add(SHM_ACCEPT_RETRY_MS,
                                         net_shm_listen_again, s);
        }
        return;
    }
    if (s->hdr) {
        /* One peer at a time. */
        close(fd);
        return;
    }
    mfd = qemu_memfd_create("uzura-shm-link", len, false, 0,
                            F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL, &err);
    if (mfd < 0) {
        error_report_err(err);
        goto fail;
    }
    hdr = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
    if (hdr == MAP_FAILED) {
        error_report("netdev shm %s: cannot map a region: %s", s->nc.name,
                     strerror(errno));
        goto fail;
    }
    hdr->magic = SHM_LINK_MAGIC;
    hdr->version = SHM_LINK_VERSION;
    hdr->ring_size = s->ring_size;
    cmsg = CMSG_FIRSTHDR(&msg);
    cmsg->cmsg_level = SOL_SOCKET;
    cmsg->cmsg_type = SCM_RIGHTS;
    cmsg->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(cmsg), &mfd, sizeof(int));
    if (sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT) != 1) {
        /* A peer that left at once: nothing to say about it. */
        goto fail;
    }
    close(mfd);
    s->sock_fd = fd;
    net_shm_up(s, hdr, len, s->ring_size);
    return;

fail:
    if (hdr != MAP_FAILED) {
        munmap(hdr, len);
    }
    if (mfd >= 0) {
        close(mfd);
    }
    close(fd);
}

/*
 * Client: take the region the server hands over, and check it as what any
 * peer sends: exactly one fd, a memfd sealed against shrinking, whose
 * header, read once into private memory, matches its size.
 */
static void net_shm_hello(void *opaque)
{
    NetShmState *s = opaque;
    int fds[8], nfds = 0, mfd = -1, seals, k, i;
    char c = 0;
    struct iovec iov = { .iov_base = &c, .iov_len = 1 };
    union {
        char buf[CMSG_SPACE(sizeof(fds))];
        struct cmsghdr align;
    } u;
    struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
                          .msg_control = u.buf,
                          .msg_controllen = sizeof(u.buf) };
    struct cmsghdr *cmsg;
    ShmLinkHdr *hdr = MAP_FAILED;
    uint32_t magic, version, ring_size = 0;
    const char *why = NULL;
    struct stat st = { };
    ssize_t n;

    n = recvmsg(s->sock_fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
        return;
    }
    /* Every fd that came, whatever else is wrong, is ours to close. */
    for (cmsg = CMSG_FIRSTHDR(&msg); n > 0 && cmsg;
         cmsg = CMSG_NXTHDR(&msg, cmsg)) {
        if (cmsg->cmsg_level != SOL_SOCKET || cmsg->cmsg_type != SCM_RIGHTS) {
            continue;
        }
        k = (cmsg->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (i = 0; i < k && nfds < ARRAY_SIZE(fds); i++) {
            memcpy(&fds[nfds++], CMSG_DATA(cmsg) + i * sizeof(int),
                   sizeof(int));
        }
    }
    if (n == 0) {
        why = "the server closed the connection (it has a peer already?)";
    } else if (n < 0 || c != SHM_HELLO || nfds != 1 ||
               (msg.msg_flags & MSG_CTRUNC)) {
        why = "a bad hand-over from the server";
    } else {
        mfd = fds[0];
        seals = fcntl(mfd, F_GET_SEALS);
        if (fstat(mfd, &st) < 0 || seals < 0 || !(seals & F_SEAL_SHRINK) ||
            st.st_size < SHM_LINK_DATA_OFF ||
            st.st_size > shm_link_size(SHM_RING_MAX)) {
            why = "the server's region is not a sealed memfd of a link's size";
        }
    }
    if (!why) {
        hdr = mmap(NULL, st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED,
                   mfd, 0);
        if (hdr == MAP_FAILED) {
            why = "cannot map the server's region";
        } else {
            magic = qatomic_read(&hdr->magic);
            version = qatomic_read(&hdr->version);
            ring_size = qatomic_read(&hdr->ring_size);
            if (magic != SHM_LINK_MAGIC || version != SHM_LINK_VERSION ||
                !shm_ring_size_ok(ring_size) ||
                shm_link_size(ring_size) != st.st_size) {
                why = "the server's region has a bad header";
            }
        }
    }
    for (i = 0; i < nfds; i++) {
        close(fds[i]);
    }
    if (why) {
        if (hdr != MAP_FAILED) {
            munmap(hdr, st.st_size);
        }
        if (n != 0) {
            s->garbage++;
            qemu_log_mask(LOG_GUEST_ERROR, "netdev shm %s: %s\n",
                          s->nc.name, why);
        }
        g_free(s->why);
        s->why = g_strdup(why);
        net_shm_info(s);
        net_shm_close_fd(&s->sock_fd);
        net_shm_retry(s);
        return;
    }
    net_shm_up(s, hdr, st.st_size, ring_size);
}

static void net_shm_connect(NetShmState *s)
{
    struct sockaddr_un sun = { .sun_family = AF_UNIX };
    int fd;

    pstrcpy(sun.sun_path, sizeof(sun.sun_path), s->path);
    fd = qemu_socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd >= 0) {
        /*
         * A server that does not accept (stopped, backlog full) must not
         * hold our main loop: try again later instead.
         */
        qemu_socket_set_nonblock(fd);
    }
    if (fd >= 0 && connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == 0) {
        s->sock_fd = fd;
        qemu_set_fd_handler(fd, net_shm_hello, NULL, s);
        return;
    }
    if (fd >= 0) {
        close(fd);
    }
    net_shm_retry(s);
}

static void net_shm_cleanup(NetClientState *nc)
{
    NetShmState *s = DO_UPCAST(NetShmState, nc, nc);

    if (s->timer_tag) {
        g_source_remove(s->timer_tag);
        s->timer_tag = 0;
    }
    net_shm_release(s);
    if (s->listen_fd >= 0) {
        struct stat st;

        net_shm_close_fd(&s->listen_fd);
        /*
         * Only the file we made: a server that took over the path (a
         * migrated node's new QEMU) has its own there now.
         */
        if (lstat(s->path, &st) == 0 && st.st_dev == s->sock_dev &&
            st.st_ino == s->sock_ino) {
            unlink(s->path);
        }
    }
    qemu_bh_delete(s->flush_bh);
    qemu_bh_delete(s->rx_bh);
    qemu_bh_delete(s->down_bh);
    g_free(s->rx_buf);
    g_free(s->path);
    g_free(s->why);
}

static NetClientInfo net_shm_client_info = {
    .type = NET_CLIENT_DRIVER_SHM,
    .size = sizeof(NetShmState),
    .receive = net_shm_receive,
    .receive_iov = net_shm_receive_iov,
    .cleanup = net_shm_cleanup,
};

/*
 * Server: listen on path.  A socket there that nobody listens on (a QEMU
 * that is gone left it) is taken over; one that a server answers is not.
 */
static int net_shm_listen(const char *path, Error **errp)
{
    struct sockaddr_un sun = { .sun_family = AF_UNIX };
    struct stat st;
    int fd;

    if (lstat(path, &st) == 0) {
        if (!S_ISSOCK(st.st_mode)) {
            error_setg(errp, "netdev shm: %s exists and is not a socket",
                       path);
            return -1;
        }
        pstrcpy(sun.sun_path, sizeof(sun.sun_path), path);
        fd = qemu_socket(AF_UNIX, SOCK_STREAM, 0);
        if (fd >= 0 &&
            connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == 0) {
            close(fd);
            error_setg(errp, "netdev shm: another server listens on %s",
                       path);
            return -1;
        }
        if (fd >= 0) {
            close(fd);
        }
        unlink(path);
    }
    fd = unix_listen(path, errp);
    if (fd >= 0) {
        qemu_socket_set_nonblock(fd);
    }
    return fd;
}

int net_init_shm(const Netdev *netdev, const char *name,
                 NetClientState *peer, Error **errp)
{
    const NetdevShmOptions *opts = &netdev->u.shm;
    struct sockaddr_un sun;
    uint64_t ring = opts->has_ring_size ? opts->ring_size : SHM_RING_DEFAULT;
    bool server = opts->has_server && opts->server;
    NetClientState *nc;
    NetShmState *s;
    int fd = -1;

    if (!*opts->path || strlen(opts->path) >= sizeof(sun.sun_path)) {
        error_setg(errp, "netdev shm: path '%s' is empty or too long for a "
                   "Unix socket", opts->path);
        return -1;
    }
    if (!server && opts->has_ring_size) {
        error_setg(errp, "netdev shm: ring-size is the server's to choose");
        return -1;
    }
    if (server && opts->has_reconnect_ms) {
        error_setg(errp, "netdev shm: reconnect-ms is for a client");
        return -1;
    }
    if (!shm_ring_size_ok(ring)) {
        error_setg(errp, "netdev shm: ring-size must be a power of 2 from "
                   "%u to %u bytes", SHM_RING_MIN, SHM_RING_MAX);
        return -1;
    }
    if (opts->has_reconnect_ms &&
        (opts->reconnect_ms < 0 || opts->reconnect_ms > UINT32_MAX)) {
        error_setg(errp, "netdev shm: reconnect-ms out of range");
        return -1;
    }
    if (server) {
        fd = net_shm_listen(opts->path, errp);
        if (fd < 0) {
            return -1;
        }
    }

    nc = qemu_new_net_client(&net_shm_client_info, peer, "shm", name);
    s = DO_UPCAST(NetShmState, nc, nc);
    s->path = g_strdup(opts->path);
    s->server = server;
    s->ring_size = ring;
    s->reconnect_ms = opts->has_reconnect_ms ? opts->reconnect_ms : 0;
    s->listen_fd = fd;
    if (server) {
        struct stat st;

        if (lstat(s->path, &st) == 0) {
            s->sock_dev = st.st_dev;
            s->sock_ino = st.st_ino;
        }
    }
    s->sock_fd = -1;
    s->rx_buf = g_malloc(SHM_FRAME_MAX);
    s->flush_bh = qemu_bh_new(net_shm_flush_bh, s);
    s->rx_bh = qemu_bh_new(net_shm_rx_bh, s);
    s->down_bh = qemu_bh_new(net_shm_down_bh, s);
    /* The NIC sees no link until a peer is attached (rx_bh tells it). */
    s->nc.link_down = true;
    qemu_bh_schedule(s->rx_bh);
    net_shm_info(s);
    if (server) {
        qemu_set_fd_handler(fd, net_shm_accept, NULL, s);
    } else {
        net_shm_connect(s);
    }
    return 0;
}
