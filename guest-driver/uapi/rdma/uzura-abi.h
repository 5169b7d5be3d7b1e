/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause) */
/*
 * uzura RDMA NIC: the ABI between the kernel driver (guest-driver/) and
 * the rdma-core provider libuzura (guest-lib/), carried in the udata of
 * the uverbs commands.  docs/verbs-abi.md explains it; the hardware
 * formats the provider writes (WQEs, CQEs, doorbell values) are those of
 * guest-driver/uzura_*_defs.h.
 *
 * The kernel allocates every ring (the device needs each ring in one piece
 * of DMA-contiguous memory) and hands it to the process through an mmap
 * key; the process maps its context's doorbell page the same way.  All
 * offsets and keys are for mmap() on the uverbs file.
 */
#ifndef UZURA_ABI_USER_H
#define UZURA_ABI_USER_H

#include <linux/types.h>
#include <rdma/ib_user_ioctl_cmds.h>

#define UZURA_UVERBS_ABI_VERSION	1

/* alloc_ucontext */
struct uzura_alloc_ucontext_resp {
	__u32 comp_mask;
	__u32 uctx;			/* the device's context = doorbell page */
	__aligned_u64 db_mmap_key;	/* that page, db_page_size bytes */
	__u32 db_page_size;		/* UZ_DB_PAGE_SIZE */
	__u32 max_sge;
	__u32 max_inline;
	__u32 sq_max_log_wqe;		/* largest send WQE, log2 bytes */
	__u32 rq_max_log_wqe;		/* largest receive WQE, log2 bytes */
	__u32 max_crw_tags;		/* per RC QP; 0 without UZ_CAP_CRW */
	__u32 caps;			/* UZ_CAP_* of the device */
	__u32 reserved;
};

/*
 * create_cq: the ring holds 2^log_depth CQEs of cqe_size bytes (at least
 * the number of CQEs asked for); db_offset is the CQ doorbell's byte
 * offset in the context's doorbell page.  A CQ created with
 * IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION has 64-byte entries, struct
 * uz_cqe_ts (the struct uz_cqe last, after the timestamp), and keeps them
 * through resize_cq; otherwise they are struct uz_cqe.  A kernel from
 * before timestamps leaves cqe_size 0, meaning 32.
 */
struct uzura_create_cq_resp {
	__u32 comp_mask;
	__u32 cqn;
	__aligned_u64 ring_mmap_key;
	__u32 ring_size;		/* bytes to map */
	__u32 log_depth;
	__u32 db_offset;
	__u32 cqe_size;			/* bytes per CQE: 32 or 64 (0: 32) */
};

/*
 * resize_cq: the provider gives its consumer index; the kernel answers
 * with the new ring, as create_cq does (of CQEs of the CQ's cqe_size),
 * and the number of CQEs the provider copies from the old ring, from that
 * index on, to the start of the new one before it polls it from index 0
 * (device spec 8.5.1).
 */
struct uzura_resize_cq {
	__u32 comp_mask;
	__u32 ci;
};

struct uzura_resize_cq_resp {
	__u32 comp_mask;
	__u32 kept;
	__aligned_u64 ring_mmap_key;
	__u32 ring_size;		/* bytes to map */
	__u32 log_depth;
};

/*
 * create_qp: the provider asks for WQE sizes that fit its max_send_sge,
 * max_inline_data and max_recv_sge (0: the kernel chooses from the caps
 * in ib_qp_init_attr); the kernel answers with what it created.
 *
 * A raw packet QP over an indirection table (an RSS QP, UZ_CAP_RSS) has
 * no queue of its own: the provider sets UZURA_CREATE_QP_RX_HASH and the
 * hash that picks the table entry of each frame, in verbs' terms (struct
 * ibv_rx_hash_conf): IBV_RX_HASH_FUNC_TOEPLITZ, a key of 40 bytes, and
 * IBV_RX_HASH_* fields, whose bits are the device's UZ_RSS_F_*.  Its
 * response has the qpn alone.  A kernel from before RSS refuses it.
 *
 * With UZURA_CREATE_QP_SQ_SHADOW the provider asks for an SQ shadow
 * doorbell (UZ_CAP_SQ_SHADOW, device spec 8.6.1).  When the kernel grants
 * it, the response has UZURA_CREATE_QP_RESP_SQ_SHADOW in comp_mask and a
 * struct uz_sq_shadow follows the SQ's WQEs in the SQ mapping, at byte
 * 2^(sq_log_depth + sq_log_wqe); otherwise the provider rings the
 * doorbell on every post.
 */
enum uzura_create_qp_comp_mask {
	UZURA_CREATE_QP_RX_HASH = 1 << 0,
	UZURA_CREATE_QP_SQ_SHADOW = 1 << 1,
};

enum uzura_create_qp_resp_comp_mask {
	UZURA_CREATE_QP_RESP_SQ_SHADOW = 1 << 0,
};

#define UZURA_RX_HASH_KEY_LEN		40

struct uzura_create_qp {
	__u32 comp_mask;		/* UZURA_CREATE_QP_* */
	__u32 sq_log_wqe;		/* 6 .. sq_max_log_wqe, or 0 */
	__u32 rq_log_wqe;		/* 4 .. rq_max_log_wqe, or 0 */
	__u32 reserved;
	__aligned_u64 rx_hash_fields_mask;	/* IBV_RX_HASH_* */
	__u8 rx_hash_function;		/* IBV_RX_HASH_FUNC_TOEPLITZ */
	__u8 rx_hash_key_len;		/* UZURA_RX_HASH_KEY_LEN */
	__u8 reserved_208[6];
	__u8 rx_hash_key[UZURA_RX_HASH_KEY_LEN];
};

struct uzura_create_qp_resp {
	__u32 comp_mask;
	__u32 qpn;
	__aligned_u64 sq_mmap_key;
	__aligned_u64 rq_mmap_key;	/* 0 without an RQ: SRQ, XRC */
	__u32 sq_size;			/* bytes to map */
	__u32 rq_size;
	__u8 sq_log_depth;
	__u8 sq_log_wqe;
	__u8 rq_log_depth;
	__u8 rq_log_wqe;
	__u32 sq_db_offset;		/* in the context's doorbell page */
	__u32 rq_db_offset;
	__u32 reserved;
};

/*
 * create_srq.  A tag matching SRQ (IB_SRQT_TM, UZ_CAP_TM) also has a ring
 * of 2^ops_log_depth list operations (struct uz_tm_op) that the kernel
 * allocates and the provider maps with ops_mmap_key; ops_db_offset is its
 * doorbell's offset in the context's doorbell page.  ops_log_depth is 0
 * for other SRQs, and a kernel from before tag matching answers with
 * ops_size 0 (or not at all).
 */
struct uzura_create_srq {
	__u32 comp_mask;
	__u32 log_wqe;			/* 4 .. rq_max_log_wqe, or 0 */
	__u32 ops_log_depth;		/* TM: 1 .. log2(max_ops); else 0 */
	__u32 reserved;
};

struct uzura_create_srq_resp {
	__u32 comp_mask;
	__u32 srqn;
	__aligned_u64 ring_mmap_key;
	__u32 ring_size;
	__u8 log_depth;
	__u8 log_wqe;
	__u16 reserved_16;
	__u32 db_offset;
	__u32 reserved;
	__aligned_u64 ops_mmap_key;	/* TM: the operation ring */
	__u32 ops_size;			/* TM: bytes to map; else 0 */
	__u32 ops_db_offset;		/* TM: in the context's doorbell page */
};

/*
 * modify_srq with IB_SRQ_MAX_WR (resizing): the provider gives its
 * producer and consumer indices, holding its SRQ lock, and the address
 * of a struct uzura_modify_srq_resp that the kernel fills (modify_srq
 * has no response of its own): the new ring to map in place of the old.
 */
struct uzura_modify_srq {
	__u32 comp_mask;
	__u32 pi;
	__u32 ci;
	__u32 reserved;
	__aligned_u64 resp_addr;
};

struct uzura_modify_srq_resp {
	__u32 comp_mask;
	__u32 ring_size;
	__aligned_u64 ring_mmap_key;
	__u8 log_depth;
	__u8 reserved_8[7];
};

/*
 * create_wq (IB_WQT_RQ, UZ_CAP_RSS): a receive queue alone, whose ring
 * and doorbell are those of a QP's RQ (struct uz_recv_wqe, the doorbell
 * taking the new producer index) and whose receives complete into its
 * CQ with qpn = wqn.  The provider asks for a WQE size that fits its
 * max_sge (0: the kernel chooses).
 */
struct uzura_create_wq {
	__u32 comp_mask;
	__u32 rq_log_wqe;		/* 4 .. rq_max_log_wqe, or 0 */
};

struct uzura_create_wq_resp {
	__u32 comp_mask;
	__u32 wqn;
	__aligned_u64 rq_mmap_key;
	__u32 rq_size;			/* bytes to map */
	__u32 rq_db_offset;		/* in the context's doorbell page */
	__u8 rq_log_depth;
	__u8 rq_log_wqe;
	__u8 reserved_8[6];
};

/* create_ah: the device's AH number, for the ud.ahn field of a UD WQE. */
struct uzura_create_ah_resp {
	__u32 comp_mask;
	__u32 ahn;
};

/*
 * alloc_dm (UVERBS_METHOD_DM_ALLOC, which has no udata): the driver
 * answers in attributes of its own, both __u64: the mmap key and the
 * bytes to map (the length asked for in whole pages).  The pages go back
 * to the device once the DM is freed and no longer mapped.
 */
enum uzura_alloc_dm_attrs {
	UZURA_IB_ATTR_ALLOC_DM_RESP_MMAP_KEY = (1U << UVERBS_ID_NS_SHIFT),
	UZURA_IB_ATTR_ALLOC_DM_RESP_MMAP_SIZE,
};

/*
 * Importing a context (ibv_import_device on a command FD another context
 * holds): ib_core's UVERBS_METHOD_QUERY_CONTEXT answers in this attribute
 * with the context's struct uzura_alloc_ucontext_resp, as alloc_ucontext
 * did.  Both contexts are one kernel context: the same doorbell page.
 */
enum uzura_query_context_attrs {
	UZURA_IB_ATTR_QUERY_CONTEXT_RESP_UCTX = (1U << UVERBS_ID_NS_SHIFT),
};

/*
 * Importing a DM (ibv_import_dm): UZURA_IB_METHOD_DM_QUERY, a method of
 * UVERBS_OBJECT_DM, takes the DM's handle and answers in __u64 attributes
 * what alloc_dm did, the mmap key and the bytes to map, and the length
 * asked for.  The importer's mapping holds the pages as alloc_dm's does.
 */
enum uzura_dm_methods {
	UZURA_IB_METHOD_DM_QUERY = (1U << UVERBS_ID_NS_SHIFT),
};

enum uzura_query_dm_attrs {
	UZURA_IB_ATTR_QUERY_DM_REQ_HANDLE = (1U << UVERBS_ID_NS_SHIFT),
	UZURA_IB_ATTR_QUERY_DM_RESP_MMAP_KEY,
	UZURA_IB_ATTR_QUERY_DM_RESP_MMAP_SIZE,
	UZURA_IB_ATTR_QUERY_DM_RESP_LENGTH,
};

#endif /* UZURA_ABI_USER_H */
