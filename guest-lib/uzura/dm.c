// SPDX-License-Identifier: GPL-2.0-or-later OR BSD-2-Clause
/*
 * uzura provider: device memory (device spec 8.17, UZ_CAP_DM).  An
 * allocation is whole pages of the NIC's memory that the kernel maps
 * here write-combining; ibv_memcpy_to_dm/_from_dm move 32-bit words
 * through the mapping, and the NIC reaches the memory through DM MRs
 * (zero-based, as ib_core has them).  The kernel hands the pages back to
 * the device once the DM is freed and unmapped, so free_dm unmaps right
 * after the kernel agreed: until then a DM that an MR still maps (EBUSY)
 * stays usable.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "uzura.h"

struct uzura_dm {
	struct verbs_dm vdm;
	void *va;			/* the mapping */
	size_t map_size;
	uint64_t length;		/* asked for: copies stay inside */
};

static inline struct uzura_dm *to_udm(struct ibv_dm *ibdm)
{
	return container_of(ibdm, struct uzura_dm, vdm.dm);
}

/*
 * Whole 32-bit words at 4-byte aligned offsets, inside the length asked
 * for, as on ConnectX; anything else copies nothing.
 */
static bool uz_dm_range_ok(const struct uzura_dm *dm, uint64_t offset,
			   size_t length)
{
	return !((offset | length) & 3) && offset <= dm->length &&
	       length <= dm->length - offset;
}

static int uzura_memcpy_to_dm(struct ibv_dm *ibdm, uint64_t dm_offset,
			      const void *host_addr, size_t length)
{
	struct uzura_dm *dm = to_udm(ibdm);
	const uint8_t *src = host_addr;
	_Atomic(uint32_t) *dst;
	uint32_t word;
	size_t i;

	if (!uz_dm_range_ok(dm, dm_offset, length))
		return EINVAL;
	dst = (_Atomic(uint32_t) *)((uint8_t *)dm->va + dm_offset);
	for (i = 0; i < length / 4; i++) {
		memcpy(&word, src + 4 * i, sizeof(word));
		atomic_store_explicit(&dst[i], word, memory_order_relaxed);
	}
	/* Out of the write-combining buffers before anything posted next. */
	mmio_flush_writes();
	return 0;
}

static int uzura_memcpy_from_dm(void *host_addr, struct ibv_dm *ibdm,
				uint64_t dm_offset, size_t length)
{
	struct uzura_dm *dm = to_udm(ibdm);
	const _Atomic(uint32_t) *src;
	uint8_t *dst = host_addr;
	uint32_t word;
	size_t i;

	if (!uz_dm_range_ok(dm, dm_offset, length))
		return EINVAL;
	src = (const _Atomic(uint32_t) *)((uint8_t *)dm->va + dm_offset);
	for (i = 0; i < length / 4; i++) {
		word = atomic_load_explicit(&src[i], memory_order_relaxed);
		memcpy(dst + 4 * i, &word, sizeof(word));
	}
	return 0;
}

/*
 * Map the @size bytes at mmap key @key that hold a DM of @length bytes,
 * and give it the copy functions; an errno if it cannot be.
 */
static int uzura_dm_map(struct uzura_context *ctx, struct uzura_dm *dm,
			uint64_t key, uint64_t size, uint64_t length)
{
	if (size < length) {
		verbs_err(&ctx->ibvctx, "uzura: DM of %llu bytes in a map of %llu\n",
			  (unsigned long long)length, (unsigned long long)size);
		return EINVAL;
	}
	dm->va = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED,
		      ctx->ibvctx.context.cmd_fd, key);
	if (dm->va == MAP_FAILED) {
		int err = errno;

		verbs_err(&ctx->ibvctx, "uzura: cannot map DM: %m\n");
		return err;
	}
	dm->map_size = size;
	dm->length = length;
	dm->vdm.dm.memcpy_to_dm = uzura_memcpy_to_dm;
	dm->vdm.dm.memcpy_from_dm = uzura_memcpy_from_dm;
	return 0;
}

struct ibv_dm *uzura_alloc_dm(struct ibv_context *context,
			      struct ibv_alloc_dm_attr *attr)
{
	DECLARE_COMMAND_BUFFER(cmdb, UVERBS_OBJECT_DM, UVERBS_METHOD_DM_ALLOC,
			       2);
	struct uzura_context *ctx = to_uctx(context);
	struct uzura_dm *dm;
	uint64_t key, size;
	int ret;

	if (!ctx->max_dm_size) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!check_comp_mask(attr->comp_mask, 0) || !attr->length ||
	    attr->length > ctx->max_dm_size) {
		errno = EINVAL;
		return NULL;
	}
	dm = calloc(1, sizeof(*dm));
	if (!dm) {
		errno = ENOMEM;
		return NULL;
	}

	fill_attr_out_ptr(cmdb, UZURA_IB_ATTR_ALLOC_DM_RESP_MMAP_KEY, &key);
	fill_attr_out_ptr(cmdb, UZURA_IB_ATTR_ALLOC_DM_RESP_MMAP_SIZE, &size);
	ret = ibv_cmd_alloc_dm(context, attr, &dm->vdm, cmdb);
	if (ret)
		goto err_free;
	ret = uzura_dm_map(ctx, dm, key, size, attr->length);
	if (ret)
		goto err_dm;
	return &dm->vdm.dm;

err_dm:
	ibv_cmd_free_dm(&dm->vdm);
err_free:
	free(dm);
	errno = ret;
	return NULL;
}

/*
 * A DM of this kernel context by its handle, through an imported context:
 * the kernel gives alloc_dm's mmap key and size and the length asked for.
 * The mapping keeps the pages as the allocator's does, so the DM stays
 * usable here until unimport_dm unmaps it, freed or not.
 */
struct ibv_dm *uzura_import_dm(struct ibv_context *context,
			       uint32_t dm_handle)
{
	DECLARE_COMMAND_BUFFER(cmdb, UVERBS_OBJECT_DM,
			       UZURA_IB_METHOD_DM_QUERY, 4);
	struct uzura_context *ctx = to_uctx(context);
	uint64_t key, size, length;
	struct uzura_dm *dm;
	int ret;

	dm = calloc(1, sizeof(*dm));
	if (!dm) {
		errno = ENOMEM;
		return NULL;
	}
	fill_attr_in_obj(cmdb, UZURA_IB_ATTR_QUERY_DM_REQ_HANDLE, dm_handle);
	fill_attr_out_ptr(cmdb, UZURA_IB_ATTR_QUERY_DM_RESP_MMAP_KEY, &key);
	fill_attr_out_ptr(cmdb, UZURA_IB_ATTR_QUERY_DM_RESP_MMAP_SIZE, &size);
	fill_attr_out_ptr(cmdb, UZURA_IB_ATTR_QUERY_DM_RESP_LENGTH, &length);
	ret = execute_ioctl(context, cmdb);
	if (!ret)
		ret = uzura_dm_map(ctx, dm, key, size, length);
	if (ret)
		goto err_free;
	dm->vdm.handle = dm_handle;
	dm->vdm.dm.handle = dm_handle;
	dm->vdm.dm.context = context;
	return &dm->vdm.dm;

err_free:
	free(dm);
	errno = ret;
	return NULL;
}

/* The kernel's DM stays, its owner's to free. */
void uzura_unimport_dm(struct ibv_dm *ibdm)
{
	struct uzura_dm *dm = to_udm(ibdm);

	munmap(dm->va, dm->map_size);
	free(dm);
}

int uzura_free_dm(struct ibv_dm *ibdm)
{
	struct uzura_dm *dm = to_udm(ibdm);
	int ret;

	ret = ibv_cmd_free_dm(&dm->vdm);
	if (ret)
		return ret;
	/* The last mapping gone, the device has the pages back. */
	munmap(dm->va, dm->map_size);
	free(dm);
	return 0;
}

/*
 * [dm_offset, dm_offset + length) of the DM as an MR of addresses from
 * 0; ib_core checks the range and IBV_ACCESS_ZERO_BASED.  It deregisters
 * as any MR (uzura_dereg_mr).
 */
struct ibv_mr *uzura_reg_dm_mr(struct ibv_pd *pd, struct ibv_dm *ibdm,
			       uint64_t dm_offset, size_t length,
			       unsigned int access)
{
	struct verbs_mr *vmr;
	int ret;

	vmr = calloc(1, sizeof(*vmr));
	if (!vmr) {
		errno = ENOMEM;
		return NULL;
	}
	ret = ibv_cmd_reg_dm_mr(pd, &to_udm(ibdm)->vdm, dm_offset, length,
				access, vmr, NULL);
	if (ret) {
		free(vmr);
		errno = ret;
		return NULL;
	}
	return &vmr->ibv_mr;
}
