// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * uzura RDMA NIC driver: device memory (UZ_CAP_DM; spec 8.17).
 *
 * An allocation is whole pages of RAM in BAR 4 that its process maps
 * and reaches with loads and stores, and that the NIC reaches through DM
 * MRs (uz_reg_dm_mr in uz_mr.c).  ib_core's DM_ALLOC method carries no
 * udata: the mmap key comes back in attributes this driver adds to the
 * method (rdma/uzura-abi.h), as mlx5 does for its MEMIC, and a method of
 * the driver's gives them again to a process that imports the DM.
 *
 * The device may hand the pages to another context as soon as they are
 * freed, so no process may map them by then: the allocation belongs to
 * its mmap entry.  dealloc_dm only removes the entry; DEALLOC_DM goes out
 * from mmap_free, when the last mapping of the entry is gone.  The
 * provider unmaps right after free_dm, so that is at once; a process
 * that keeps its mapping keeps the memory until it unmaps or exits.
 */
#include <rdma/uverbs_ioctl.h>
#include <rdma/uzura-abi.h>

#include "uz.h"

#define UVERBS_MODULE_NAME uzura_ib
#include <rdma/uverbs_named_ioctl.h>

/* A CPU page of device memory is one allocation's, never two. */
static_assert(UZ_DM_PAGE_SIZE == PAGE_SIZE);

/* Where the device put @size bytes: its device memory, whole pages. */
static bool uz_dm_placed(struct uz_dev *uz, u32 off, u64 size)
{
	return PAGE_ALIGNED(off) && off >= le32_to_cpu(uz->attr.dm_offset) &&
	       off + size <= pci_resource_len(uz->pdev, UZ_BAR_DB);
}

struct ib_dm *uz_alloc_dm(struct ib_device *ibdev, struct ib_ucontext *ibuc,
			  struct ib_dm_alloc_attr *attr,
			  struct uverbs_attr_bundle *attrs)
{
	struct uz_dev *uz = ibdev_to_uz(ibdev);
	u32 dm_size = le32_to_cpu(uz->attr.dm_size);
	struct uz_admin_cmd cmd = { .opcode = UZ_CMD_ALLOC_DM };
	struct uz_cmd_alloc_dm *c = (struct uz_cmd_alloc_dm *)cmd.raw;
	struct uz_ucontext *uc = to_uz_uctx(ibuc);
	struct uz_mmap_entry *e;
	struct uz_admin_cqe cqe;
	struct uz_dm *dm;
	u64 key, size;
	u32 off;
	int err;

	if (!(uz->caps & UZ_CAP_DM) || !dm_size) {
		ibdev_dbg(ibdev, "DM: no device memory\n");
		return ERR_PTR(-EOPNOTSUPP);
	}
	if (!attr->length || attr->length > dm_size) {
		ibdev_dbg(ibdev, "DM of %llu bytes: 1..%u\n", attr->length,
			  dm_size);
		return ERR_PTR(-EINVAL);
	}
	if (attr->alignment > 31) {
		ibdev_dbg(ibdev, "DM aligned to 2^%u bytes: at most 2^31\n",
			  attr->alignment);
		return ERR_PTR(-EINVAL);
	}
	size = PAGE_ALIGN(attr->length);

	dm = kzalloc(sizeof(*dm), GFP_KERNEL);
	if (!dm)
		return ERR_PTR(-ENOMEM);
	e = kzalloc(sizeof(*e), GFP_KERNEL);
	if (!e) {
		err = -ENOMEM;
		goto err_dm;
	}
	c->length = cpu_to_le64(attr->length);
	c->uctx = cpu_to_le32(uc->uctx);
	c->log_align = attr->alignment;
	err = uz_admin_exec(uz, &cmd, &cqe);
	if (err)
		goto err_entry;
	dm->handle = le32_to_cpu(cqe.out0);
	dm->uctx = uc->uctx;
	off = le32_to_cpu(cqe.out1);
	if (!uz_dm_placed(uz, off, size)) {
		dev_err(&uz->pdev->dev,
			"device memory %u of %llu bytes at 0x%x: not device memory\n",
			dm->handle, size, off);
		err = -EIO;
		goto err_alloc;
	}

	e->uz = uz;
	e->type = UZ_MMAP_DM;
	e->bar_addr = pci_resource_start(uz->pdev, UZ_BAR_DB) + off;
	e->dm = dm->handle;
	e->dm_uctx = dm->uctx;
	err = rdma_user_mmap_entry_insert(ibuc, &e->rdma, size);
	if (err)
		goto err_alloc;
	/* From here on the entry holds the allocation (uz_dm_mmap_free). */
	dm->mmap = &e->rdma;

	key = rdma_user_mmap_get_offset(dm->mmap);
	err = uverbs_copy_to(attrs, UZURA_IB_ATTR_ALLOC_DM_RESP_MMAP_KEY, &key,
			     sizeof(key));
	if (!err)
		err = uverbs_copy_to(attrs, UZURA_IB_ATTR_ALLOC_DM_RESP_MMAP_SIZE,
				     &size, sizeof(size));
	if (err) {
		rdma_user_mmap_entry_remove(dm->mmap);
		kfree(dm);
		return ERR_PTR(err);
	}
	return &dm->ibdm;

err_alloc:
	uz_obj_cmd(uz, UZ_CMD_DEALLOC_DM, dm->handle, dm->uctx);
err_entry:
	kfree(e);
err_dm:
	kfree(dm);
	return ERR_PTR(err);
}

/*
 * ib_core calls this once no MR maps the DM.  New mappings end here; the
 * pages go back to the device when the last one is gone.
 */
int uz_dealloc_dm(struct ib_dm *ibdm, struct uverbs_attr_bundle *attrs)
{
	struct uz_dm *dm = to_uz_dm(ibdm);

	rdma_user_mmap_entry_remove(dm->mmap);
	kfree(dm);
	return 0;
}

/* No process maps the allocation and no ib_dm names it: free it. */
void uz_dm_mmap_free(struct uz_mmap_entry *e)
{
	int err;

	err = uz_obj_cmd(e->uz, UZ_CMD_DEALLOC_DM, e->dm, e->dm_uctx);
	if (err)
		dev_err(&e->uz->pdev->dev,
			"freeing device memory %u failed: %d\n", e->dm, err);
}

/*
 * ibv_import_dm: what alloc_dm answered, for a DM of this kernel context
 * that another process imports through a shared command FD.  Its mapping
 * holds the pages as the allocator's does.
 */
static int UVERBS_HANDLER(UZURA_IB_METHOD_DM_QUERY)(
	struct uverbs_attr_bundle *attrs)
{
	struct ib_dm *ibdm =
		uverbs_attr_get_obj(attrs, UZURA_IB_ATTR_QUERY_DM_REQ_HANDLE);
	struct uz_dm *dm = to_uz_dm(ibdm);
	u64 key = rdma_user_mmap_get_offset(dm->mmap);
	u64 size = (u64)dm->mmap->npages << PAGE_SHIFT;
	u64 length = ibdm->length;
	int err;

	err = uverbs_copy_to(attrs, UZURA_IB_ATTR_QUERY_DM_RESP_MMAP_KEY, &key,
			     sizeof(key));
	if (!err)
		err = uverbs_copy_to(attrs, UZURA_IB_ATTR_QUERY_DM_RESP_MMAP_SIZE,
				     &size, sizeof(size));
	if (!err)
		err = uverbs_copy_to(attrs, UZURA_IB_ATTR_QUERY_DM_RESP_LENGTH,
				     &length, sizeof(length));
	return err;
}

DECLARE_UVERBS_NAMED_METHOD(
	UZURA_IB_METHOD_DM_QUERY,
	UVERBS_ATTR_IDR(UZURA_IB_ATTR_QUERY_DM_REQ_HANDLE, UVERBS_OBJECT_DM,
			UVERBS_ACCESS_READ, UA_MANDATORY),
	UVERBS_ATTR_PTR_OUT(UZURA_IB_ATTR_QUERY_DM_RESP_MMAP_KEY,
			    UVERBS_ATTR_TYPE(u64), UA_MANDATORY),
	UVERBS_ATTR_PTR_OUT(UZURA_IB_ATTR_QUERY_DM_RESP_MMAP_SIZE,
			    UVERBS_ATTR_TYPE(u64), UA_MANDATORY),
	UVERBS_ATTR_PTR_OUT(UZURA_IB_ATTR_QUERY_DM_RESP_LENGTH,
			    UVERBS_ATTR_TYPE(u64), UA_MANDATORY));

ADD_UVERBS_METHODS(uz_ib_dm_methods, UVERBS_OBJECT_DM,
		   &UVERBS_METHOD(UZURA_IB_METHOD_DM_QUERY));

ADD_UVERBS_ATTRIBUTES_SIMPLE(
	uz_ib_dm, UVERBS_OBJECT_DM, UVERBS_METHOD_DM_ALLOC,
	UVERBS_ATTR_PTR_OUT(UZURA_IB_ATTR_ALLOC_DM_RESP_MMAP_KEY,
			    UVERBS_ATTR_TYPE(u64), UA_MANDATORY),
	UVERBS_ATTR_PTR_OUT(UZURA_IB_ATTR_ALLOC_DM_RESP_MMAP_SIZE,
			    UVERBS_ATTR_TYPE(u64), UA_MANDATORY));

const struct uapi_definition uz_dm_defs[] = {
	UAPI_DEF_CHAIN_OBJ_TREE(UVERBS_OBJECT_DM, &uz_ib_dm),
	UAPI_DEF_CHAIN_OBJ_TREE(UVERBS_OBJECT_DM, &uz_ib_dm_methods),
	{}
};
