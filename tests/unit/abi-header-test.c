// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Host unit test of the kernel<->provider ABI header: it compiles as
 * strict C11 user space code, as rdma-core compiles it, and its structures
 * have the same layout on 32- and 64-bit builds: 64-bit fields on 8-byte
 * offsets and sizes that are multiples of 8, with no hidden padding.
 */
#include <stddef.h>
#include <stdio.h>

#include <rdma/uzura-abi.h>

#include "tap.h"

/* The sizes the fields add up to: a difference is hidden padding. */
#define CHECK_SIZE(type, bytes)						\
	do {								\
		CHECK(sizeof(type) == (bytes));				\
		CHECK(sizeof(type) % 8 == 0);				\
	} while (0)

int main(void)
{
	CHECK_SIZE(struct uzura_alloc_ucontext_resp, 48);
	CHECK(offsetof(struct uzura_alloc_ucontext_resp, db_mmap_key) % 8 == 0);
	CHECK_SIZE(struct uzura_create_cq_resp, 32);
	CHECK(offsetof(struct uzura_create_cq_resp, ring_mmap_key) % 8 == 0);
	/* Where 0.14's kernels left a reserved 0 (0 = 32-byte CQEs). */
	CHECK(offsetof(struct uzura_create_cq_resp, cqe_size) == 28);
	CHECK_SIZE(struct uzura_create_qp, 72);
	/* RSS: past the 16 bytes of older providers' commands. */
	CHECK(offsetof(struct uzura_create_qp, rx_hash_fields_mask) == 16);
	CHECK(offsetof(struct uzura_create_qp, rx_hash_function) == 24);
	CHECK(offsetof(struct uzura_create_qp, rx_hash_key) == 32);
	CHECK(sizeof(((struct uzura_create_qp *)0)->rx_hash_key) ==
	      UZURA_RX_HASH_KEY_LEN);
	CHECK(UZURA_RX_HASH_KEY_LEN == 40);
	CHECK_SIZE(struct uzura_create_wq, 8);
	CHECK_SIZE(struct uzura_create_wq_resp, 32);
	CHECK(offsetof(struct uzura_create_wq_resp, rq_mmap_key) % 8 == 0);
	CHECK_SIZE(struct uzura_create_qp_resp, 48);
	CHECK(offsetof(struct uzura_create_qp_resp, sq_mmap_key) % 8 == 0);
	CHECK(offsetof(struct uzura_create_qp_resp, rq_mmap_key) % 8 == 0);
	CHECK_SIZE(struct uzura_create_srq, 16);
	/* Where a provider from before tag matching ends its command. */
	CHECK(offsetof(struct uzura_create_srq, ops_log_depth) == 8);
	CHECK_SIZE(struct uzura_create_srq_resp, 48);
	CHECK(offsetof(struct uzura_create_srq_resp, ring_mmap_key) % 8 == 0);
	/* Tag matching: past the 32 bytes of older kernels' answers. */
	CHECK(offsetof(struct uzura_create_srq_resp, ops_mmap_key) == 32);
	CHECK(offsetof(struct uzura_create_srq_resp, ops_db_offset) == 44);
	CHECK_SIZE(struct uzura_create_ah_resp, 8);
	CHECK(UZURA_UVERBS_ABI_VERSION == 1);
	return tap_done();
}
