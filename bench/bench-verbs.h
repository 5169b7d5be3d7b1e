/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the experiment programs under bench/ share: the clock, and one RC
 * QP between two nodes on the uzura device, its peer's QPN, GID and PSN
 * exchanged over TCP as ibv_rc_pingpong does.  Each program names itself
 * in bench_name before calling anything here.
 */
#ifndef BENCH_VERBS_H
#define BENCH_VERBS_H

#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/uzuradv.h>
#include <infiniband/verbs.h>

static const char *bench_name;

static inline void die(const char *what)
{
	fprintf(stderr, "%s: %s\n", bench_name, what);
	exit(1);
}

static inline double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* Connect to HOST:PORT, or with HOST NULL accept one peer on PORT. */
static inline int tcp_connect(const char *host, const char *port)
{
	struct addrinfo hints = { .ai_family = AF_INET,
				  .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE }, *ai;
	int fd, ls, one = 1;

	if (getaddrinfo(host, port, &hints, &ai))
		die("getaddrinfo");
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (host) {
		if (connect(fd, ai->ai_addr, ai->ai_addrlen))
			die("connect");
	} else {
		ls = fd;
		setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(ls, ai->ai_addr, ai->ai_addrlen) || listen(ls, 1))
			die("listen");
		fd = accept(ls, NULL, NULL);
		close(ls);
	}
	freeaddrinfo(ai);
	return fd;
}

/* Both sides wait here until the other has reached it too. */
static inline void tcp_barrier(int fd)
{
	char c = 0;

	if (write(fd, &c, 1) != 1 || recv(fd, &c, 1, MSG_WAITALL) != 1)
		die("peer went away");
}

/* The first uzura device, a PD and one CQ of cqe entries on it. */
static inline void bench_open(struct ibv_context **ctx,
			      struct ibv_pd **pd, struct ibv_cq **cq, int cqe)
{
	struct ibv_device **devs = ibv_get_device_list(NULL);
	int i;

	*ctx = NULL;
	for (i = 0; devs && devs[i] && !*ctx; i++)
		if (uzuradv_is_supported(devs[i]))
			*ctx = ibv_open_device(devs[i]);
	ibv_free_device_list(devs);
	if (!*ctx)
		die("no uzura device");
	*pd = ibv_alloc_pd(*ctx);
	*cq = *pd ? ibv_create_cq(*ctx, cqe, NULL, NULL, 0) : NULL;
	if (!*cq)
		die("cannot create the PD or the CQ");
}

/*
 * Take @qp (RESET, RC, port 1) to INIT with @access, let @post_recvs
 * post its receives, swap QPN, GID and PSN with the peer over @fd, and
 * take it to RTS connected to the peer's QP; returns once the peer's QP
 * is in RTS too.
 */
static inline void bench_connect(struct ibv_qp *qp, int gidx, int fd,
				 int access, void (*post_recvs)(void))
{
	struct { uint32_t qpn, psn; union ibv_gid gid; } me = {}, peer;
	struct ibv_qp_attr qa;

	if (ibv_query_gid(qp->context, 1, gidx, &me.gid))
		die("ibv_query_gid");
	me.qpn = qp->qp_num;
	me.psn = getpid() & 0xffffff;
	if (write(fd, &me, sizeof(me)) != (ssize_t)sizeof(me) ||
	    recv(fd, &peer, sizeof(peer), MSG_WAITALL) != (ssize_t)sizeof(peer))
		die("peer went away");
	qa = (struct ibv_qp_attr) { .qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = access };
	if (ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		die("INIT");
	if (post_recvs)
		post_recvs();
	qa = (struct ibv_qp_attr) { .qp_state = IBV_QPS_RTR,
		.path_mtu = IBV_MTU_4096, .dest_qp_num = peer.qpn,
		.rq_psn = peer.psn, .max_dest_rd_atomic = 1,
		.min_rnr_timer = 1,
		.ah_attr = { .is_global = 1, .port_num = 1,
			     .grh = { .dgid = peer.gid, .sgid_index = gidx,
				      .hop_limit = 64 } } };
	if (ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_AV |
			  IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		die("RTR");
	qa = (struct ibv_qp_attr) { .qp_state = IBV_QPS_RTS, .timeout = 14,
		.retry_cnt = 7, .rnr_retry = 7, .sq_psn = me.psn,
		.max_rd_atomic = 1 };
	if (ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_TIMEOUT |
			  IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			  IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
		die("RTS");
	/* Neither sends before the other can receive. */
	tcp_barrier(fd);
}

static inline int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Sort t[0..n) and return its median. */
static inline double median(double *t, int n)
{
	qsort(t, n, sizeof(*t), cmp_double);
	return n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
}

#endif
