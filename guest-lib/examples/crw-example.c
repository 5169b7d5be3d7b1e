// SPDX-License-Identifier: GPL-2.0-or-later OR BSD-2-Clause
/*
 * crw-example: one Conditional RDMA Write between two nodes, CRW first.
 *
 *   target:  crw-example [-g GID-INDEX]           (offers its buffer)
 *   source:  crw-example [-g GID-INDEX] TARGET    (writes into it)
 *
 * The source posts a CRW naming only a tag and its data; its NIC parks
 * it.  Only then does the target offer a buffer for that tag (STCRW), and
 * the source's NIC writes the data there on its own.  The target sees an
 * RDMA WRITE with immediate data = the tag's low 32 bits.  QPN and GID go
 * over TCP port 18601.  Build: cc crw-example.c -luzura -libverbs
 */
#include <arpa/inet.h>
#include <endian.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <infiniband/uzuradv.h>
#include <infiniband/verbs.h>

#define TAG	0x5eed0000c0ffeeull
#define LEN	64

static void die(const char *what)
{
	fprintf(stderr, "crw-example: %s\n", what);
	exit(1);
}

static int connect_peer(const char *host)
{
	struct addrinfo hints = { .ai_family = AF_INET,
				  .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE }, *ai;
	int fd, ls, one = 1;

	if (getaddrinfo(host, "18601", &hints, &ai))
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

/* Exchange one message with the peer. */
static void swap(int fd, const void *out, void *in, size_t len)
{
	if (write(fd, out, len) != (ssize_t)len ||
	    recv(fd, in, len, MSG_WAITALL) != (ssize_t)len)
		die("peer went away");
}

static void wait_wc(struct ibv_cq *cq, struct ibv_wc *wc)
{
	while (ibv_poll_cq(cq, 1, wc) == 0)
		usleep(100);
	if (wc->status)
		die(ibv_wc_status_str(wc->status));
}

int main(int argc, char **argv)
{
	struct { uint32_t qpn; union ibv_gid gid; uint64_t addr;
		 uint32_t rkey; } me = {}, peer;
	struct ibv_device **devs = ibv_get_device_list(NULL);
	struct uzuradv_device_attr dattr;
	struct ibv_context *ctx = NULL;
	int gidx = 1, i, fd, source;
	static char buf[LEN];
	char go = 1;
	struct ibv_qp_attr qa;
	struct ibv_wc wc;

	if (argc > 2 && !strcmp(argv[1], "-g")) {
		gidx = atoi(argv[2]);
		argv += 2;
		argc -= 2;
	}
	source = argc > 1;
	for (i = 0; devs && devs[i] && !ctx; i++)
		if (uzuradv_is_supported(devs[i]))
			ctx = ibv_open_device(devs[i]);
	if (!ctx || uzuradv_query_device(ctx, &dattr, sizeof(dattr)) ||
	    !(dattr.device_caps & UZURADV_DEVICE_CAP_CRW))
		die("no uzura device with CRW");

	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, LEN, IBV_ACCESS_LOCAL_WRITE |
				       IBV_ACCESS_REMOTE_WRITE);
	struct ibv_qp_init_attr init = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp *qp = mr ? ibv_create_qp(pd, &init) : NULL;
	struct ibv_recv_wr rwr = { .wr_id = 1 }, *bad_rwr;

	if (!qp || ibv_query_gid(ctx, 1, gidx, &me.gid))
		die("cannot create the verbs objects");
	me.qpn = qp->qp_num;
	me.addr = (uintptr_t)buf;
	me.rkey = mr->rkey;

	/* RESET -> INIT -> RTR -> RTS, connected to the peer's QP. */
	qa = (struct ibv_qp_attr) { .qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE };
	if (ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		die("INIT");
	fd = connect_peer(source ? argv[1] : NULL);
	swap(fd, &me, &peer, sizeof(me));
	qa = (struct ibv_qp_attr) { .qp_state = IBV_QPS_RTR,
		.path_mtu = IBV_MTU_1024, .dest_qp_num = peer.qpn,
		.max_dest_rd_atomic = 1, .min_rnr_timer = 12,
		.ah_attr = { .is_global = 1, .port_num = 1,
			     .grh = { .dgid = peer.gid, .sgid_index = gidx,
				      .hop_limit = 64 } } };
	if (ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_AV |
			  IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		die("RTR");
	qa = (struct ibv_qp_attr) { .qp_state = IBV_QPS_RTS, .timeout = 14,
		.retry_cnt = 7, .rnr_retry = 7, .max_rd_atomic = 1 };
	if (ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_TIMEOUT |
			  IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			  IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
		die("RTS");

	if (source) {
		struct ibv_sge sge = { (uintptr_t)buf, LEN, mr->lkey };
		struct uzuradv_crw_wr crw = {
			.wr_id = 7, .tag = TAG, .sg_list = &sge, .num_sge = 1,
			.send_flags = IBV_SEND_SIGNALED,
		};

		snprintf(buf, LEN, "hello through a conditional write");
		if (uzuradv_post_crw(qp, &crw))
			die("post CRW");
		/* The CRW is posted: now the target may offer its buffer. */
		swap(fd, &go, &go, 1);
		wait_wc(cq, &wc);
		printf("source: CRW %s, %u bytes written\n",
		       wc.opcode == UZURADV_WC_CRW ? "completed" : "??",
		       wc.byte_len);
	} else {
		struct uzuradv_stcrw_wr st = {
			.wr_id = 8, .tag = TAG, .addr = (uintptr_t)buf,
			.rkey = mr->rkey, .length = LEN,
		};

		/* The write consumes a receive WQE: post one first. */
		if (ibv_post_recv(qp, &rwr, &bad_rwr))
			die("post receive");
		swap(fd, &go, &go, 1);
		if (uzuradv_post_stcrw(qp, &st))
			die("post STCRW");
		wait_wc(cq, &wc);
		if (wc.opcode != IBV_WC_RECV_RDMA_WITH_IMM ||
		    be32toh(wc.imm_data) != (uint32_t)TAG)
			die("unexpected completion");
		printf("target: write of %u bytes, tag 0x%x: \"%s\"\n",
		       wc.byte_len, be32toh(wc.imm_data), buf);
	}
	swap(fd, &go, &go, 1);	/* both done before either tears down */
	close(fd);
	ibv_destroy_qp(qp);
	ibv_dereg_mr(mr);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(devs);
	return 0;
}
