// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * uzura RDMA NIC driver: implicit on-demand paging MRs (spec 8.10.5).
 *
 * ibv_reg_mr(pd, NULL, SIZE_MAX, IBV_ACCESS_ON_DEMAND) registers all of a
 * process's memory.  The device looks each 1 GiB chunk of an address up in
 * a table the MR's page list holds: an entry names a child, an ODP MR of
 * exactly that chunk (uz_odp.c serves its faults and invalidations as any
 * ODP MR's).  An absent entry raises a fault on the implicit key with the
 * chunk as data; the fault work then creates the child, a umem of the
 * implicit umem with a notifier of its own, registers it and only then
 * names it in the table.  An invalidation that comes before the entry
 * finds a page list with nothing present: nothing for the device to drop.
 *
 * Children live as long as the implicit MR, which deregisters them once
 * its own key is gone.  imr_lock orders their creation (fault work,
 * advise_mr) and their end.  A chunk where the process has nothing mapped
 * gets no child (2 MiB of page list, 4 MiB of umem lists) but an error
 * entry, so that accesses there fail instead of faulting for ever; a
 * prefetch of such a chunk looks again.
 */
#include <linux/dma-mapping.h>
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <rdma/ib_umem_odp.h>
#include <rdma/ib_verbs.h>

#include "uz.h"

#define UZ_IMR_CHUNK	BIT_ULL(UZ_IMR_SHIFT)

static struct ib_device *uz_imr_ibdev(struct uz_mr *mr)
{
	return mr->odp->umem.ibdev;
}

/* Children are ODP MRs of a chunk each. */
bool uz_imr_supported(struct uz_dev *uz)
{
	return (uz->caps & UZ_CAP_ODP_IMPLICIT) &&
	       le64_to_cpu(uz->attr.max_mr_size) >= UZ_IMR_CHUNK;
}

/* A child the device no longer reaches. */
static void uz_imr_free_child(struct uz_dev *uz, struct uz_mr *child)
{
	/* On failure it lost its notifier but keeps its page list. */
	if (!uz_odp_dereg(uz, child))
		uz_mr_unpin(uz, &child->pg);
	else
		dev_err(&uz->pdev->dev,
			"deregistering implicit MR child 0x%x failed\n",
			child->ibmr.lkey);
	kfree(child);
}

/* Whether the process has anything mapped in chunk @chunk. */
static bool uz_imr_mapped(struct uz_mr *mr, u32 chunk)
{
	struct ib_umem_odp *root = mr->odp;
	struct mm_struct *mm = root->umem.owning_mm;
	unsigned long start = (unsigned long)chunk << UZ_IMR_SHIFT;
	struct task_struct *task;
	bool mapped = false;

	/* As ib_umem_odp_map_dma_and_lock reaches the process's memory. */
	task = get_pid_task(root->tgid, PIDTYPE_PID);
	if (!task)
		return false;
	if (mmget_not_zero(mm)) {
		mmap_read_lock(mm);
		mapped = find_vma_intersection(mm, start,
					       start + UZ_IMR_CHUNK);
		mmap_read_unlock(mm);
		mmput(mm);
	}
	put_task_struct(task);
	return mapped;
}

/*
 * The ODP MR of chunk @chunk of implicit MR @mr, registered and published
 * for its faults, then named in the table.  Called with imr_lock held.
 */
static struct uz_mr *uz_imr_new_child(struct uz_dev *uz, struct uz_mr *mr,
				      u32 chunk)
{
	u64 addr = (u64)chunk << UZ_IMR_SHIFT;
	struct uz_mr *child;
	int err;

	child = kzalloc(sizeof(*child), GFP_KERNEL);
	if (!child)
		return ERR_PTR(-ENOMEM);
	child->uctx = mr->uctx;
	child->access = mr->access;
	err = uz_odp_reg_child(uz, child, mr->odp, addr, UZ_IMR_CHUNK);
	if (err)
		goto err_free;
	/* No windows on a child: nothing keeps it when the implicit MR goes. */
	err = uz_reg_pages_cmd(uz, child, to_uz_pd(mr->ibmr.pd)->pdn, addr,
			       UZ_IMR_CHUNK, mr->access & ~IB_ACCESS_MW_BIND,
			       UZ_MR_F_ODP);
	if (err)
		goto err_pages;
	err = uz_odp_publish(uz, child);
	if (!err)
		err = xa_insert(&mr->imr_children, chunk, child, GFP_KERNEL);
	if (err) {
		uz_imr_free_child(uz, child);
		return ERR_PTR(err);
	}
	/* The device may follow the entry once it reads it. */
	dma_wmb();
	WRITE_ONCE(mr->pg.pbl[chunk],
		   cpu_to_le64(UZ_IMR_ENTRY(child->ibmr.lkey)));
	return child;

err_pages:
	uz_mr_unpin(uz, &child->pg);
err_free:
	kfree(child);
	return ERR_PTR(err);
}

/*
 * The child of chunk @chunk, created if need be.  Where the process has
 * nothing (-EFAULT) or the child cannot be had (the device's MR table
 * full, no memory), the chunk's entry says so: accesses there fail rather
 * than fault for ever.  The device keeps no error entry: a later call
 * (advise_mr) may make it present.
 */
static struct uz_mr *uz_imr_child(struct uz_dev *uz, struct uz_mr *mr,
				  u32 chunk)
{
	struct uz_mr *child;

	mutex_lock(&mr->imr_lock);
	child = xa_load(&mr->imr_children, chunk);
	if (!child) {
		if (uz_imr_mapped(mr, chunk))
			child = uz_imr_new_child(uz, mr, chunk);
		else
			child = ERR_PTR(-EFAULT);
		if (IS_ERR(child))
			WRITE_ONCE(mr->pg.pbl[chunk],
				   cpu_to_le64(UZ_PTE_ERROR));
	}
	mutex_unlock(&mr->imr_lock);
	return child;
}

/*
 * A fault on the implicit key: the chunk has no child yet.  Once it has
 * one, the access faults again on the child's key for its page.
 */
static void uz_imr_fault_work(struct work_struct *work)
{
	struct uz_mr *mr = container_of(work, struct uz_mr, fault_work);
	struct uz_dev *uz = ibdev_to_uz(uz_imr_ibdev(mr));
	u32 chunk = READ_ONCE(mr->fault_page);
	struct uz_mr *child;
	int err;

	if (chunk < UZ_IMR_ENTRIES) {
		child = uz_imr_child(uz, mr, chunk);
		if (IS_ERR(child))
			ibdev_dbg(uz_imr_ibdev(mr),
				  "implicit MR 0x%x: chunk %u: no child: %ld\n",
				  mr->ibmr.lkey, chunk, PTR_ERR(child));
	} else {
		dev_warn_ratelimited(&uz->pdev->dev,
				     "implicit MR 0x%x: fault on chunk %u of %u\n",
				     mr->ibmr.lkey, chunk, UZ_IMR_ENTRIES);
	}
	err = uz_obj_cmd(uz, UZ_CMD_PAGE_RESUME, mr->ibmr.lkey, mr->uctx);
	if (err)
		dev_warn_ratelimited(&uz->pdev->dev,
				     "implicit MR 0x%x: resume failed: %d\n",
				     mr->ibmr.lkey, err);
}

/* An implicit MR's umem (no pages of its own) and empty table. */
int uz_imr_reg(struct ib_pd *ibpd, struct uz_mr *mr, u64 virt, int access)
{
	struct ib_device *ibdev = ibpd->device;
	struct uz_dev *uz = ibdev_to_uz(ibdev);
	struct ib_umem_odp *root;

	if (!uz_imr_supported(uz)) {
		ibdev_dbg(ibdev, "implicit ODP MR: not supported\n");
		return -EINVAL;
	}
	if (virt) {
		ibdev_dbg(ibdev, "implicit ODP MR at iova 0x%llx: 0 only\n",
			  virt);
		return -EINVAL;
	}
	if (access & IB_ACCESS_HUGETLB) {
		ibdev_dbg(ibdev, "implicit ODP MR: no huge pages\n");
		return -EINVAL;
	}
	root = ib_umem_odp_alloc_implicit(ibdev, access);
	if (IS_ERR(root)) {
		ibdev_dbg(ibdev, "implicit ODP MR: no umem: %ld\n",
			  PTR_ERR(root));
		return PTR_ERR(root);
	}
	/* Zeroed: every chunk absent. */
	mr->pg.pbl_size = UZ_IMR_ENTRIES * sizeof(*mr->pg.pbl);
	mr->pg.pbl = dma_alloc_coherent(&uz->pdev->dev, mr->pg.pbl_size,
					&mr->pg.pbl_dma,
					GFP_KERNEL | __GFP_NOWARN);
	if (!mr->pg.pbl) {
		ib_umem_odp_release(root);
		return -ENOMEM;
	}
	mr->pg.umem = &root->umem;
	mr->pg.npages = UZ_IMR_ENTRIES;
	mr->pg.page_shift = UZ_IMR_SHIFT;
	mr->odp = root;
	mr->access = access;
	/* ib_core sets the same on return; a fault may need it before. */
	mr->ibmr.pd = ibpd;
	mr->ibmr.iova = 0;
	mr->ibmr.length = U64_MAX;
	mutex_init(&mr->imr_lock);
	xa_init(&mr->imr_children);
	uz_obj_ref_init(&mr->ref);
	INIT_WORK(&mr->fault_work, uz_imr_fault_work);
	return 0;
}

/*
 * After the implicit MR's DEREG_MR (uz_odp_dereg), which ended its fault
 * work and advise_mr calls: its children go too.
 */
void uz_imr_dereg_children(struct uz_dev *uz, struct uz_mr *mr)
{
	struct uz_mr *child;
	unsigned long chunk;

	mutex_lock(&mr->imr_lock);
	xa_for_each(&mr->imr_children, chunk, child) {
		xa_erase(&mr->imr_children, chunk);
		uz_imr_free_child(uz, child);
	}
	mutex_unlock(&mr->imr_lock);
	xa_destroy(&mr->imr_children);
	mutex_destroy(&mr->imr_lock);
}

/* advise_mr on [addr, end) of implicit MR @mr: chunk by chunk, its child. */
int uz_imr_prefetch(struct uz_mr *mr, u64 addr, u64 end, bool fault)
{
	struct uz_dev *uz = ibdev_to_uz(uz_imr_ibdev(mr));
	struct uz_mr *child;
	u64 next;
	int err;

	if ((end - 1) >> UZ_IMR_SHIFT >= UZ_IMR_ENTRIES) {
		ibdev_dbg(uz_imr_ibdev(mr),
			  "advise_mr: 0x%llx..0x%llx past implicit MR 0x%x\n",
			  addr, end, mr->ibmr.lkey);
		return -EINVAL;
	}
	for (; addr < end; addr = next) {
		next = min(end, round_down(addr, UZ_IMR_CHUNK) + UZ_IMR_CHUNK);
		child = uz_imr_child(uz, mr, addr >> UZ_IMR_SHIFT);
		if (IS_ERR(child)) {
			ibdev_dbg(uz_imr_ibdev(mr),
				  "advise_mr: implicit MR 0x%x at 0x%llx: %ld\n",
				  mr->ibmr.lkey, addr, PTR_ERR(child));
			return PTR_ERR(child);
		}
		err = uz_odp_prefetch_range(child, addr, next, fault);
		if (err)
			return err;
	}
	return 0;
}
