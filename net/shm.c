/*
 * QEMU shared-memory link netdev (uzura): two QEMU processes on one host
 * exchange Ethernet frames through rings in memory both map.
 *
 *   -netdev shm,id=N,path=SOCKET,server=on[,ring-size=BYTES]
 *   -netdev shm,id=N,path=SOCKET[,reconnect-ms=MS]
 *
 * The server listens on the Unix socket SOCKET.  For each peer that
 * connects it makes a fresh region (a sealed memfd: a header and a ring of
 * frames per direction, net/shm-ring.h) and two eventfds, and hands the
 * three to the peer over the socket.  A frame goes into the peer's ring in
 * one copy, and out of ours to the NIC in place; a side sleeps on its
 * eventfd and is woken only when it said it was going to sleep, at most
 * once per turn of the sender (the wake-up waits for a bottom half at the
 * end of the turn, so a burst of frames costs one).  The socket carries
 * nothing after the hand-over; its end is the peer going away.  The link
 * is down, for the NIC too, while no peer is attached; a peer that writes
 * garbage into the region takes the link down, and the server waits for a
 * new peer, the client reconnects after reconnect-ms.
 *
 * Copyright (c) 2026 The uzura authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "net/net.h"
#include "clients.h"
#include "qapi/error.h"
#include "qemu/error-report.h"
#include "qemu/iov.h"
#include "qemu/log.h"
#include "qemu/main-loop.h"
#include "qemu/memfd.h"
#include "qemu/cutils.h"
#include "qemu/sockets.h"
#include "shm-ring.h"

#define SHM_RING_DEFAULT    (4 * 1024 * 1024)
/* Frames handed to the NIC in one turn before the main loop goes on. */
#define SHM_RX_BUDGET       256
#define SHM_HELLO           'U'

typedef struct NetShmState {
    NetClientState nc;
    char *path;
    bool server;
    uint32_t ring_size;         /* of the regions the server makes */
    uint32_t reconnect_ms;
    int listen_fd;
    int sock_fd;                /* to the peer: its end is the peer gone */
    int kick_fd;                /* the peer wakes us on it */
    int peer_fd;                /* we wake the peer on it */
    ShmLinkHdr *hdr;            /* the region, while a peer is attached */
    size_t map_len;
    ShmRing tx, rx;
    bool tx_blocked;            /* the peer's ring is full: it wakes us */
    bool rx_stopped;            /* the NIC takes no more for now */
    bool broken;                /* down, the region not yet let go */
    char *why;                  /* why it went down */
    QEMUBH *flush_bh;           /* end of a turn: wake the peer once */
    QEMUBH *rx_bh;              /* more frames after a full budget */
    QEMUBH *down_bh;            /* let the region go, outside any turn */
    guint timer_tag;
    uint64_t too_big;           /* frames the link cannot carry */
    uint64_t garbage;           /* peers that wrote garbage */
} NetShmState;

static void net_shm_connect(NetShmState *s);

static void net_shm_kick(int fd)
{
    uint64_t one = 1;

    if (write(fd, &one, sizeof(one)) < 0 && errno != EAGAIN) {
        warn_report("netdev shm: wake-up lost: %s", strerror(errno));
    }
}

/* The NIC sees the link as we do, as with set_link. */
static void net_shm_set_link(NetShmState *s, bool up)
{
    NetClientState *peer = s->nc.peer;

    s->nc.link_down = !up;
    if (peer && peer->info->type == NET_CLIENT_DRIVER_NIC &&
        peer->link_down == up) {
        peer->link_down = !up;
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
    net_shm_close_fd(&s->kick_fd);
    net_shm_close_fd(&s->peer_fd);
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

static void net_shm_down_bh(void *opaque)
{
    NetShmState *s = opaque;

    net_shm_release(s);
    if (!s->server && s->reconnect_ms && !s->timer_tag) {
        s->timer_tag = g_timeout_add(s->reconnect_ms, net_shm_reconnect, s);
    }
}

/*
 * Take the link down: at once for the NIC and for new frames; the region
 * goes in a bottom half, since the NIC may be reading a frame in it.
 */
static void net_shm_down(NetShmState *s, const char *why, bool bad_peer)
{
    if (!s->hdr || s->broken) {
        return;
    }
    s->broken = true;
    g_free(s->why);
    s->why = g_strdup(why);
    if (bad_peer) {
        s->garbage++;
        qemu_log_mask(LOG_GUEST_ERROR, "netdev shm %s: %s: link down\n",
                      s->nc.name, why);
    }
    net_shm_set_link(s, false);
    net_shm_info(s);
    qemu_set_fd_handler(s->kick_fd, NULL, NULL, NULL);
    qemu_set_fd_handler(s->sock_fd, NULL, NULL, NULL);
    qemu_bh_schedule(s->down_bh);
}

static void net_shm_flush_bh(void *opaque)
{
    NetShmState *s = opaque;

    if (s->hdr && !s->broken && shm_ring_wake_needed(&s->tx)) {
        net_shm_kick(s->peer_fd);
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
    qemu_bh_schedule(s->flush_bh);
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

/* Hand the NIC what the peer put in our ring, in place. */
static void net_shm_rx(NetShmState *s)
{
    const uint8_t *frame;
    uint32_t len;
    int n, ret = 0;

    for (n = 0; n < SHM_RX_BUDGET && !s->rx_stopped; n++) {
        ret = shm_ring_get(&s->rx, &frame, &len, true);
        if (ret <= 0) {
            break;
        }
        if (len && qemu_send_packet_async(&s->nc, frame, len,
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
        net_shm_kick(s->peer_fd);
    }
    if (n == SHM_RX_BUDGET) {
        qemu_bh_schedule(s->rx_bh);
    }
}

static void net_shm_rx_bh(void *opaque)
{
    NetShmState *s = opaque;

    if (!s->hdr) {
        /* First run, once the NIC exists: it sees no link yet. */
        net_shm_set_link(s, false);
    } else if (!s->broken) {
        net_shm_rx(s);
    }
}

/* The peer woke us: frames to take, or space for ours. */
static void net_shm_kicked(void *opaque)
{
    NetShmState *s = opaque;
    uint64_t v;

    if (read(s->kick_fd, &v, sizeof(v)) < 0 && errno != EAGAIN) {
        net_shm_down(s, "cannot read the wake-up eventfd", false);
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

/* The socket says only one thing after the hand-over: the peer is gone. */
static void net_shm_sock_event(void *opaque)
{
    NetShmState *s = opaque;
    char c;
    ssize_t n = recv(s->sock_fd, &c, 1, MSG_DONTWAIT);

    if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
        return;
    }
    net_shm_down(s, n == 0 ? "the peer went away" :
                 "the peer spoke on the socket after the hand-over", n > 0);
}

/* A region is mapped and checked: the link is up. */
static void net_shm_up(NetShmState *s, ShmLinkHdr *hdr, size_t len,
                       int kick_fd, int peer_fd)
{
    s->hdr = hdr;
    s->map_len = len;
    s->kick_fd = kick_fd;
    s->peer_fd = peer_fd;
    /* Ring 0 runs from the server to the client, ring 1 back. */
    shm_ring_attach(&s->tx, hdr, s->server ? 0 : 1);
    shm_ring_attach(&s->rx, hdr, s->server ? 1 : 0);
    g_free(s->why);
    s->why = NULL;
    qemu_set_fd_handler(s->kick_fd, net_shm_kicked, NULL, s);
    qemu_set_fd_handler(s->sock_fd, net_shm_sock_event, NULL, s);
    net_shm_set_link(s, true);
    net_shm_info(s);
    net_shm_rx(s);                      /* frames already there; sleep */
}

/* Server: a fresh region and eventfds for a new peer, handed over. */
static void net_shm_accept(void *opaque)
{
    NetShmState *s = opaque;
    size_t len = shm_link_size(s->ring_size);
    int fd, fds[3] = { -1, -1, -1 };
    char c = SHM_HELLO;
    struct iovec iov = { .iov_base = &c, .iov_len = 1 };
    union {
        char buf[CMSG_SPACE(sizeof(fds))];
        struct cmsghdr align;
    } u = { };
    struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
                          .msg_control = u.buf,
                          .msg_controllen = sizeof(u.buf) };
    struct cmsghdr *cmsg;
    ShmLinkHdr *hdr = MAP_FAILED;
    Error *err = NULL;

    fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0) {
        return;
    }
    if (s->hdr) {
        /* One peer at a time. */
        close(fd);
        return;
    }
    fds[0] = qemu_memfd_create("uzura-shm-link", len, false, 0,
                               F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL,
                               &err);
    fds[1] = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    fds[2] = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (fds[0] < 0 || fds[1] < 0 || fds[2] < 0) {
        if (err) {
            error_report_err(err);
        }
        goto fail;
    }
    hdr = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], 0);
    if (hdr == MAP_FAILED) {
        goto fail;
    }
    hdr->magic = SHM_LINK_MAGIC;
    hdr->version = SHM_LINK_VERSION;
    hdr->ring_size = s->ring_size;
    cmsg = CMSG_FIRSTHDR(&msg);
    cmsg->cmsg_level = SOL_SOCKET;
    cmsg->cmsg_type = SCM_RIGHTS;
    cmsg->cmsg_len = CMSG_LEN(sizeof(fds));
    memcpy(CMSG_DATA(cmsg), fds, sizeof(fds));
    if (sendmsg(fd, &msg, MSG_NOSIGNAL) != 1) {
        goto fail;
    }
    close(fds[0]);
    s->sock_fd = fd;
    /* We sleep on the first eventfd, the client on the second. */
    net_shm_up(s, hdr, len, fds[1], fds[2]);
    return;

fail:
    warn_report("netdev shm %s: cannot hand a region to a new peer: %s",
                s->nc.name, strerror(errno));
    if (hdr != MAP_FAILED) {
        munmap(hdr, len);
    }
    for (int i = 0; i < 3; i++) {
        if (fds[i] >= 0) {
            close(fds[i]);
        }
    }
    close(fd);
}

/*
 * Client: take the region and eventfds the server hands over, and check
 * them as what any peer sends: a region that could shrink under us, or
 * whose header does not match its size, is refused.
 */
static void net_shm_hello(void *opaque)
{
    NetShmState *s = opaque;
    int fds[3] = { -1, -1, -1 }, nfds = 0, seals;
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
    ShmLinkHdr *hdr;
    const char *why;
    struct stat st;
    ssize_t n;

    n = recvmsg(s->sock_fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
        return;
    }
    for (cmsg = CMSG_FIRSTHDR(&msg); n > 0 && cmsg;
         cmsg = CMSG_NXTHDR(&msg, cmsg)) {
        if (cmsg->cmsg_level == SOL_SOCKET && cmsg->cmsg_type == SCM_RIGHTS) {
            nfds = (cmsg->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            memcpy(fds, CMSG_DATA(cmsg), MIN(nfds, 3) * sizeof(int));
        }
    }
    why = n == 0 ? "the server closed the connection" :
          n < 0 || c != SHM_HELLO || nfds != 3 ||
          (msg.msg_flags & MSG_CTRUNC) ? "a bad hand-over from the server" :
          NULL;
    if (!why) {
        seals = fcntl(fds[0], F_GET_SEALS);
        if (fstat(fds[0], &st) < 0 || seals < 0 ||
            !(seals & F_SEAL_SHRINK) || st.st_size < SHM_LINK_DATA_OFF) {
            why = "the server's region is not a sealed memfd";
        }
    }
    if (!why) {
        hdr = mmap(NULL, st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED,
                   fds[0], 0);
        if (hdr == MAP_FAILED) {
            why = "cannot map the server's region";
        } else if (hdr->magic != SHM_LINK_MAGIC ||
                   hdr->version != SHM_LINK_VERSION ||
                   !shm_ring_size_ok(hdr->ring_size) ||
                   shm_link_size(hdr->ring_size) != st.st_size) {
            munmap(hdr, st.st_size);
            why = "the server's region has a bad header";
        }
    }
    if (fds[0] >= 0) {
        close(fds[0]);
    }
    if (why) {
        qemu_log_mask(LOG_GUEST_ERROR, "netdev shm %s: %s\n", s->nc.name,
                      why);
        for (int i = 1; i < MIN(nfds, 3); i++) {
            close(fds[i]);
        }
        s->garbage += n != 0;
        g_free(s->why);
        s->why = g_strdup(why);
        net_shm_info(s);
        net_shm_close_fd(&s->sock_fd);
        if (s->reconnect_ms && !s->timer_tag) {
            s->timer_tag = g_timeout_add(s->reconnect_ms, net_shm_reconnect,
                                         s);
        }
        return;
    }
    qemu_set_fd_handler(s->sock_fd, NULL, NULL, NULL);
    /* We sleep on the second eventfd, the server on the first. */
    net_shm_up(s, hdr, st.st_size, fds[2], fds[1]);
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
    if (s->reconnect_ms && !s->timer_tag) {
        s->timer_tag = g_timeout_add(s->reconnect_ms, net_shm_reconnect, s);
    }
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
        net_shm_close_fd(&s->listen_fd);
        unlink(s->path);
    }
    qemu_bh_delete(s->flush_bh);
    qemu_bh_delete(s->rx_bh);
    qemu_bh_delete(s->down_bh);
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

    if (strlen(opts->path) >= sizeof(sun.sun_path)) {
        error_setg(errp, "netdev shm: path '%s' is too long for a Unix "
                   "socket", opts->path);
        return -1;
    }
    if (!server && opts->has_ring_size) {
        error_setg(errp, "netdev shm: ring-size is the server's to choose");
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
        /* A socket left by a QEMU that is gone is taken over. */
        unlink(opts->path);
        fd = unix_listen(opts->path, errp);
        if (fd < 0) {
            return -1;
        }
        qemu_socket_set_nonblock(fd);
    }

    nc = qemu_new_net_client(&net_shm_client_info, peer, "shm", name);
    s = DO_UPCAST(NetShmState, nc, nc);
    s->path = g_strdup(opts->path);
    s->server = server;
    s->ring_size = ring;
    s->reconnect_ms = opts->has_reconnect_ms ? opts->reconnect_ms : 0;
    s->listen_fd = fd;
    s->sock_fd = s->kick_fd = s->peer_fd = -1;
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
