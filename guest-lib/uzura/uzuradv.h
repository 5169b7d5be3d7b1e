/* SPDX-License-Identifier: GPL-2.0-or-later OR BSD-2-Clause */
/*
 * uzuradv: direct verbs of the uzura RoCEv2 NIC, in the manner of mlx5dv
 * and efadv.  Link with -luzura (and -libverbs).  The reference is the
 * man pages (guest-lib/uzura/man: uzuradv(7), uzuradv_post_crw(3), ...),
 * the guide docs/uzuradv.md; the device behaviour behind it is section
 * 8.12 of docs/device-spec.md (Conditional RDMA Write) and section 10
 * (counters).
 *
 * Conditional RDMA Write (CRW): the data source posts a write that names
 * a 64-bit tag and its local data but no target; the NIC holds it until
 * the peer offers a buffer for that tag with a "set tag" message (STCRW),
 * then performs the write with no host involvement, whichever of the two
 * arrived first.  The target sees an RDMA WRITE with immediate data (the
 * tag's low 32 bits) that consumes one of its receive WQEs.
 */
#ifndef __UZURADV_H__
#define __UZURADV_H__

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#ifdef __cplusplus
extern "C" {
#endif

/* True when the device is driven by the uzura provider. */
bool uzuradv_is_supported(struct ibv_device *device);

enum uzuradv_device_caps {
	UZURADV_DEVICE_CAP_CRW = 1 << 0,	/* CRW and STCRW on RC QPs */
};

struct uzuradv_device_attr {
	uint64_t comp_mask;		/* out: none defined, 0 */
	uint32_t device_caps;		/* UZURADV_DEVICE_CAP_* */
	uint32_t max_crw_tags;		/* tag table entries per RC QP */
	uint32_t max_crw_inline;	/* inline CRW data, bytes (the device's) */
	uint32_t max_crw_sge;		/* SGEs of one CRW (the device's) */
};

/*
 * Fill attr, whose size as the caller was compiled is inlen; fields past
 * inlen are left alone.
 */
int uzuradv_query_device(struct ibv_context *context,
			 struct uzuradv_device_attr *attr, uint32_t inlen);

/*
 * Work completion opcodes (ibv_wc.opcode) of the send CQ; vendor values
 * in libibverbs' driver range.  The target of a CRW sees
 * IBV_WC_RECV_RDMA_WITH_IMM with IBV_WC_WITH_IMM and
 * imm_data = htobe32((uint32_t)tag).
 */
#define UZURADV_WC_CRW		IBV_WC_DRIVER1
#define UZURADV_WC_STCRW	IBV_WC_DRIVER2

/*
 * A conditional write: tag and local data (sg_list, or with
 * IBV_SEND_INLINE the bytes the SGEs point at, copied at post time).
 * send_flags: IBV_SEND_SIGNALED (a completion on success; errors always
 * complete), IBV_SEND_SOLICITED (the write sets the solicited-event bit
 * at the target), IBV_SEND_FENCE, IBV_SEND_INLINE.
 */
struct uzuradv_crw_wr {
	uint64_t comp_mask;		/* in: 0 */
	uint64_t wr_id;
	uint64_t tag;
	const struct ibv_sge *sg_list;
	uint32_t num_sge;
	uint32_t send_flags;		/* enum ibv_send_flags */
};

/*
 * A tag offer ("set tag"), sent to the peer: the peer's CRW with this tag
 * writes at most length bytes at addr, an address of one of this side's
 * MRs registered with IBV_ACCESS_REMOTE_WRITE whose rkey is rkey.
 * send_flags: IBV_SEND_SIGNALED, IBV_SEND_FENCE.
 */
struct uzuradv_stcrw_wr {
	uint64_t comp_mask;		/* in: 0 */
	uint64_t wr_id;
	uint64_t tag;
	uint64_t addr;
	uint32_t rkey;
	uint32_t length;
	uint32_t send_flags;		/* enum ibv_send_flags */
	uint32_t reserved;		/* 0 */
};

/* Post to the send queue of an RC QP and ring its doorbell. */
int uzuradv_post_crw(struct ibv_qp *qp, const struct uzuradv_crw_wr *wr);
int uzuradv_post_stcrw(struct ibv_qp *qp, const struct uzuradv_stcrw_wr *wr);

/* NIC counters (device-spec section 10), as the kernel exports them. */
#define UZURADV_COUNTER_NAME_MAX	64

struct uzuradv_counter {
	char name[UZURADV_COUNTER_NAME_MAX];	/* NUL-terminated */
	uint64_t value;
};

/* Read the counters named in counters[i].name into counters[i].value. */
int uzuradv_query_counters(struct ibv_context *context, uint8_t port_num,
			   struct uzuradv_counter *counters, size_t num);

/*
 * Fill up to max entries with every counter of the port, sorted by name;
 * *num is set to how many there are (call with max 0 to size the array).
 */
int uzuradv_list_counters(struct ibv_context *context, uint8_t port_num,
			  struct uzuradv_counter *counters, size_t max,
			  size_t *num);

#ifdef __cplusplus
}
#endif

#endif /* __UZURADV_H__ */
