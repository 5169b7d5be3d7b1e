/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * RC QPs connected to themselves or each other on uzura0, for the guest
 * tests: their packets loop back inside the NIC, nothing goes on the wire.
 */
#ifndef UZ_GUEST_SELF_QP_H
#define UZ_GUEST_SELF_QP_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>

/* A counter of uzura0's port 1 (hw_counters), 0 if it cannot be read. */
static inline uint64_t counter(const char *name)
{
	char path[128];
	unsigned long long v = 0;
	FILE *f;

	/* ib_core serves a read within 10 ms of the last from its cache. */
	usleep(20000);
	snprintf(path, sizeof(path),
		 "/sys/class/infiniband/uzura0/ports/1/hw_counters/%s", name);
	f = fopen(path, "r");
	if (f) {
		if (fscanf(f, "%llu", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v;
}

/* A context of uzura0, or NULL. */
static inline struct ibv_context *open_uzura(void)
{
	struct ibv_context *ctx = NULL;
	struct ibv_device **list;
	int i, num;

	list = ibv_get_device_list(&num);
	for (i = 0; list && i < num; i++)
		if (!strcmp(ibv_get_device_name(list[i]), "uzura0"))
			ctx = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	return ctx;
}

/* The port's RoCE v2 GID for IPv4 (::ffff:a.b.c.d), or -1. */
static inline int ipv4_gid_index(struct ibv_context *ctx)
{
	union ibv_gid gid;
	int i;

	for (i = 0; i < 16; i++)
		if (!ibv_query_gid(ctx, 1, i, &gid) && gid.raw[10] == 0xff &&
		    gid.raw[11] == 0xff && !gid.global.subnet_prefix)
			return i;
	return -1;
}

/* Move RC QP @qp to RTS, connected to QP @dest of this port on GID @gidx. */
static inline int connect_qp(struct ibv_context *ctx, struct ibv_qp *qp,
			     uint32_t dest, int gidx, int access)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = access,
	};
	int ret;

	ret = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			    IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	a = (struct ibv_qp_attr) {
		.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
		.dest_qp_num = dest, .rq_psn = 1,
		.max_dest_rd_atomic = 1, .min_rnr_timer = 12,
		.ah_attr = { .is_global = 1, .port_num = 1,
			     .grh = { .sgid_index = gidx, .hop_limit = 64 } },
	};
	ibv_query_gid(ctx, 1, gidx, &a.ah_attr.grh.dgid);
	ret = ret ? ret : ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV |
					IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
					IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
					IBV_QP_MIN_RNR_TIMER);
	a = (struct ibv_qp_attr) {
		.qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 7,
		.rnr_retry = 7, .sq_psn = 1, .max_rd_atomic = 1,
	};
	return ret ? ret : ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
					 IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
					 IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

/* Move RC QP @qp to RTS, connected to itself on GID @gidx. */
static inline int connect_self(struct ibv_context *ctx, struct ibv_qp *qp,
			       int gidx, int access)
{
	return connect_qp(ctx, qp, qp->qp_num, gidx, access);
}

/* The next completion of @cq into @wc, waiting up to 5 s: false if none. */
static inline bool wait_wc(struct ibv_cq *cq, struct ibv_wc *wc)
{
	int i, got = 0;

	for (i = 0; i < 500 && !got; i++) {
		got = ibv_poll_cq(cq, 1, wc);
		if (!got)
			usleep(10000);
	}
	return got == 1;
}

/* The next completion of @cq: its status (and *@op), or -1. */
static inline int poll_one(struct ibv_cq *cq, enum ibv_wc_opcode *op)
{
	struct ibv_wc wc;
	bool got = wait_wc(cq, &wc);

	*op = got ? wc.opcode : 0;
	return got ? (int)wc.status : -1;
}

/* Post @wr on @qp and poll its completion: the status, or -1. */
static inline int post_wait(struct ibv_qp *qp, struct ibv_cq *cq,
			    struct ibv_send_wr *wr, enum ibv_wc_opcode *op)
{
	struct ibv_send_wr *bad;

	if (ibv_post_send(qp, wr, &bad))
		return -1;
	return poll_one(cq, op);
}

/* Post one signalled 8-byte WRITE or READ; 0 or the post's error. */
static inline int post_rdma(struct ibv_qp *qp, enum ibv_wr_opcode op,
			    uint64_t id, void *local, uint32_t lkey,
			    void *remote, uint32_t rkey)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)local, .length = 8, .lkey = lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = id, .sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = (uintptr_t)remote, .rkey = rkey },
	}, *bad;

	return ibv_post_send(qp, &wr, &bad);
}

/* post_rdma and poll its completion: the status, or -1. */
static inline int rdma_wait(struct ibv_qp *qp, struct ibv_cq *cq,
			    enum ibv_wr_opcode op, void *local, uint32_t lkey,
			    void *remote, uint32_t rkey)
{
	enum ibv_wc_opcode wop;

	if (post_rdma(qp, op, 1, local, lkey, remote, rkey))
		return -1;
	return poll_one(cq, &wop);
}

#endif /* UZ_GUEST_SELF_QP_H */
