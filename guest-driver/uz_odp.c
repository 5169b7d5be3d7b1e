// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * uzura RDMA NIC driver: on-demand paging (spec 8.10.4).
 *
 * An ODP MR pins nothing.  Its page list starts empty; the device raises a
 * page-fault event for the first absent page it touches and waits, the
 * fault work maps that page and a few after it through ib_umem_odp, writes
 * their entries with UZ_PTE_PRESENT and resumes the MR.  When the kernel
 * takes pages away (munmap, madvise, reclaim, migration) the MMU notifier
 * empties their entries and drops the device's cached translations before
 * the pages are unmapped.  umem_mutex orders every change of the list.
 * An implicit MR's children (uz_imr.c) are ODP MRs as any other.
 */
#include <linux/dma-mapping.h>
#include <rdma/ib_umem_odp.h>
#include <rdma/ib_verbs.h>

#include "uz.h"

/* Pages one fault maps: a message's next pages fault once, not each. */
#define UZ_ODP_FAULT_PAGES	16
/* Pages advise_mr maps per call into ib_umem, holding umem_mutex. */
#define UZ_ODP_PREFETCH_PAGES	512

static bool uz_odp_invalidate(struct mmu_interval_notifier *mni,
			      const struct mmu_notifier_range *range,
			      unsigned long cur_seq);

static const struct mmu_interval_notifier_ops uz_odp_mn_ops = {
	.invalidate = uz_odp_invalidate,
};

/*
 * The fault work and the notifier may run before reg_user_mr returns,
 * when ib_core has not yet set ibmr.device: the umem knows it.
 */
static struct ib_device *uz_odp_ibdev(struct uz_mr *mr)
{
	return mr->odp->umem.ibdev;
}

/* The device's caches hold pages [first, first + n) no longer. */
static void uz_odp_drop_xlat(struct uz_mr *mr, u32 first, u32 n)
{
	struct uz_admin_cmd cmd = { .opcode = UZ_CMD_INVALIDATE_XLAT };
	struct uz_cmd_invalidate_xlat *c = (void *)cmd.raw;
	unsigned int shift = mr->odp->page_shift;
	int err;

	c->key = cpu_to_le32(mr->ibmr.lkey);
	c->uctx = cpu_to_le32(mr->uctx);
	c->iova = cpu_to_le64(round_down(mr->ibmr.iova, 1ull << shift) +
			      ((u64)first << shift));
	c->length = cpu_to_le64((u64)n << shift);
	err = uz_admin_exec(ibdev_to_uz(uz_odp_ibdev(mr)), &cmd, NULL);
	if (err)
		ibdev_warn(uz_odp_ibdev(mr),
			   "ODP MR 0x%x: dropping translations failed: %d\n",
			   mr->ibmr.lkey, err);
}

static bool uz_odp_invalidate(struct mmu_interval_notifier *mni,
			      const struct mmu_notifier_range *range,
			      unsigned long cur_seq)
{
	struct ib_umem_odp *odp =
		container_of(mni, struct ib_umem_odp, notifier);
	unsigned long start, end;
	bool present = false;
	struct uz_mr *mr;
	u32 first, last, i;

	/* Dropping the device's translations takes an admin command. */
	if (!mmu_notifier_range_blockable(range))
		return false;
	mutex_lock(&odp->umem_mutex);
	mmu_interval_set_seq(mni, cur_seq);
	start = max(ib_umem_start(odp), range->start);
	end = min(ib_umem_end(odp), range->end);
	mr = odp->private;	/* NULL once the device has let the MR go */
	if (mr && start < end) {
		first = (start - ib_umem_start(odp)) >> odp->page_shift;
		last = DIV_ROUND_UP(end - ib_umem_start(odp),
				    1ul << odp->page_shift);
		for (i = first; i < last; i++) {
			present |= le64_to_cpu(mr->pg.pbl[i]) & UZ_PTE_PRESENT;
			/* An unmappable page may be mapped by now: absent. */
			WRITE_ONCE(mr->pg.pbl[i], 0);
		}
		if (present)
			uz_odp_drop_xlat(mr, first, last - first);
	}
	if (start < end)
		ib_umem_odp_unmap_dma_pages(odp, start, end);
	mutex_unlock(&odp->umem_mutex);
	return true;
}

/*
 * Map pages [first, first + count) of @mr (faulting them in if @fault)
 * and list those mapped as the MR needs them.  Returns the number of pages
 * ib_umem mapped or its error.
 */
static int uz_odp_map(struct uz_mr *mr, u32 first, u32 count, bool fault)
{
	struct ib_umem_odp *odp = mr->odp;
	unsigned int shift = odp->page_shift;
	u64 need = ODP_READ_ALLOWED_BIT;
	int n;
	u32 i;

	if (odp->umem.writable)
		need |= ODP_WRITE_ALLOWED_BIT;
	count = min(count, mr->pg.npages - first);
	n = ib_umem_odp_map_dma_and_lock(odp, ib_umem_start(odp) +
					 ((u64)first << shift),
					 (u64)count << shift, need, fault);
	if (n < 0)
		return n;
	for (i = first; i < first + count; i++) {
		dma_addr_t dma = odp->dma_list[i];

		/* A page the process has read-only is no use to a writable MR. */
		if ((dma & need) == need)
			WRITE_ONCE(mr->pg.pbl[i],
				   cpu_to_le64((dma & ODP_DMA_ADDR_MASK) |
					       UZ_PTE_PRESENT));
	}
	mutex_unlock(&odp->umem_mutex);
	return n;
}

/*
 * The process has nothing at the page (-EFAULT, -EPERM) or is gone
 * (-EINVAL): the access fails rather than faulting for ever.  Other
 * errors (-ENOMEM, -EBUSY when invalidations kept racing) pass: the
 * access faults again.
 */
static void uz_odp_unmappable(struct uz_mr *mr, u32 page, int err)
{
	struct ib_umem_odp *odp = mr->odp;

	ibdev_dbg(uz_odp_ibdev(mr), "ODP MR 0x%x: page %u not mapped: %d\n",
		  mr->ibmr.lkey, page, err);
	if (err != -EFAULT && err != -EPERM && err != -EINVAL)
		return;
	mutex_lock(&odp->umem_mutex);
	/* A prefetch may have mapped it meanwhile. */
	if (!mr->pg.pbl[page])
		WRITE_ONCE(mr->pg.pbl[page], cpu_to_le64(UZ_PTE_ERROR));
	mutex_unlock(&odp->umem_mutex);
}

static void uz_odp_fault_work(struct work_struct *work)
{
	struct uz_mr *mr = container_of(work, struct uz_mr, fault_work);
	struct uz_dev *uz = ibdev_to_uz(uz_odp_ibdev(mr));
	u32 page = READ_ONCE(mr->fault_page);
	int err;

	if (page < mr->pg.npages) {
		err = uz_odp_map(mr, page, UZ_ODP_FAULT_PAGES, true);
		/* The pages after it may be ones the process never mapped. */
		if (err < 0)
			err = uz_odp_map(mr, page, 1, true);
		if (err < 0)
			uz_odp_unmappable(mr, page, err);
	} else {
		dev_warn_ratelimited(&uz->pdev->dev,
				     "ODP MR 0x%x: fault on page %u of %u\n",
				     mr->ibmr.lkey, page, mr->pg.npages);
	}
	err = uz_obj_cmd(uz, UZ_CMD_PAGE_RESUME, mr->ibmr.lkey, mr->uctx);
	if (err)
		dev_warn_ratelimited(&uz->pdev->dev,
				     "ODP MR 0x%x: resume failed: %d\n",
				     mr->ibmr.lkey, err);
}

/* From the EQ (NAPI): hand the fault to process context. */
void uz_odp_fault_event(struct uz_dev *uz, u32 key, u32 page)
{
	struct uz_ibdev *ib = READ_ONCE(uz->ib);
	struct uz_mr *mr;

	if (!ib)
		return;
	xa_lock(&ib->odp_xa);
	mr = xa_load(&ib->odp_xa, UZ_KEY_INDEX(key));
	if (mr && mr->ibmr.lkey == key) {
		WRITE_ONCE(mr->fault_page, page);
		queue_work(ib->odp_wq, &mr->fault_work);
	} else {
		/* Being deregistered: DEREG_MR wakes the MR's waiters. */
		dev_dbg(&uz->pdev->dev, "page fault on key 0x%x: no ODP MR\n",
			key);
	}
	xa_unlock(&ib->odp_xa);
}

/*
 * @mr takes umem @odp at iova @virt, with an empty page list.  From here
 * on the notifier empties the list's entries; the caller releases @odp
 * if this fails.
 */
static int uz_odp_setup(struct uz_dev *uz, struct uz_mr *mr,
			struct ib_umem_odp *odp, u64 virt)
{
	size_t npages = ib_umem_odp_num_pages(odp);

	if (npages > U32_MAX) {
		ibdev_dbg(odp->umem.ibdev, "ODP MR of %zu pages: at most %u\n",
			  npages, U32_MAX);
		return -EINVAL;
	}
	/* Zeroed: every page absent. */
	mr->pg.pbl_size = npages * sizeof(*mr->pg.pbl);
	mr->pg.pbl = dma_alloc_coherent(&uz->pdev->dev, mr->pg.pbl_size,
					&mr->pg.pbl_dma,
					GFP_KERNEL | __GFP_NOWARN);
	if (!mr->pg.pbl)
		return -ENOMEM;
	mr->pg.umem = &odp->umem;
	mr->pg.npages = npages;
	mr->pg.page_shift = odp->page_shift;
	mr->odp = odp;
	mr->ibmr.iova = virt;
	uz_obj_ref_init(&mr->ref);
	INIT_WORK(&mr->fault_work, uz_odp_fault_work);
	mutex_lock(&odp->umem_mutex);
	odp->private = mr;
	mutex_unlock(&odp->umem_mutex);
	return 0;
}

/* An ODP MR's umem and empty page list; REG_MR follows. */
int uz_odp_reg(struct uz_dev *uz, struct uz_mr *mr, u64 start, u64 length,
	       u64 virt, int access)
{
	struct ib_device *ibdev = &uz->ib->ibdev;
	struct ib_umem_odp *odp;
	u64 pgsz;
	int err;

	if (!length || length > le64_to_cpu(uz->attr.max_mr_size)) {
		ibdev_dbg(ibdev, "ODP MR of %llu bytes: 1..%llu\n", length,
			  le64_to_cpu(uz->attr.max_mr_size));
		return -EINVAL;
	}
	odp = ib_umem_odp_get(ibdev, start, length, access, &uz_odp_mn_ops);
	if (IS_ERR(odp)) {
		ibdev_dbg(ibdev, "ODP MR at 0x%llx: no umem: %ld\n", start,
			  PTR_ERR(odp));
		return PTR_ERR(odp);
	}
	pgsz = 1ull << odp->page_shift;
	/* The device's page k must be the umem's page k. */
	if ((virt ^ start) & (pgsz - 1)) {
		ibdev_dbg(ibdev,
			  "ODP MR: iova 0x%llx and address 0x%llx differ within a page\n",
			  virt, start);
		err = -EINVAL;
		goto err_release;
	}
	err = uz_odp_setup(uz, mr, odp, virt);
	if (err)
		goto err_release;
	return 0;

err_release:
	ib_umem_odp_release(odp);
	return err;
}

/*
 * An implicit MR's child (uz_imr.c): an ODP MR of [addr, addr + length)
 * whose umem hangs from the implicit one, with a notifier of its own.
 */
int uz_odp_reg_child(struct uz_dev *uz, struct uz_mr *child,
		     struct ib_umem_odp *root, u64 addr, u64 length)
{
	struct ib_umem_odp *odp;
	int err;

	odp = ib_umem_odp_alloc_child(root, addr, length, &uz_odp_mn_ops);
	if (IS_ERR(odp))
		return PTR_ERR(odp);
	err = uz_odp_setup(uz, child, odp, addr);
	if (err)
		ib_umem_odp_release(odp);
	return err;
}

/*
 * The device has the MR: let its faults reach us.  One raised before
 * (a guessed key) found no MR; the resume lets it fault again.
 */
int uz_odp_publish(struct uz_dev *uz, struct uz_mr *mr)
{
	int err;

	err = xa_insert_bh(&uz->ib->odp_xa, UZ_KEY_INDEX(mr->ibmr.lkey), mr,
			   GFP_KERNEL);
	if (!err)
		uz_obj_cmd(uz, UZ_CMD_PAGE_RESUME, mr->ibmr.lkey, mr->uctx);
	return err;
}

/*
 * The device refused to let the MR go: keep the page list (the device may
 * still read it), but not the notifier, which would outlive the module.
 * The pages are unmapped.
 */
static void uz_odp_abandon(struct uz_mr *mr)
{
	mutex_lock(&mr->odp->umem_mutex);
	mr->odp->private = NULL;
	mutex_unlock(&mr->odp->umem_mutex);
	ib_umem_release(&mr->odp->umem);
	mr->odp = NULL;
	mr->pg.umem = NULL;
}

/*
 * DEREG_MR of an ODP MR: out of the fault table first, so that no fault
 * work runs once the device may give the key index to another MR.  On
 * success the caller releases the umem and page list.
 */
int uz_odp_dereg(struct uz_dev *uz, struct uz_mr *mr)
{
	struct ib_umem_odp *odp = mr->odp;
	u32 key = mr->ibmr.lkey;
	int err;

	/* Only if it is there: a registration whose publish failed is not. */
	xa_cmpxchg_bh(&uz->ib->odp_xa, UZ_KEY_INDEX(key), mr, NULL, 0);
	uz_obj_ref_wait(&mr->ref);
	cancel_work_sync(&mr->fault_work);
	/* No invalidation between the key's end and the notifier's. */
	mutex_lock(&odp->umem_mutex);
	err = uz_obj_cmd(uz, UZ_CMD_DEREG_MR, key, mr->uctx);
	if (!err)
		odp->private = NULL;
	mutex_unlock(&odp->umem_mutex);
	/* No access reaches an implicit MR's children now: they go. */
	if (err != -EBUSY && odp->is_implicit_odp)
		uz_imr_dereg_children(uz, mr);
	if (err == -EBUSY) {
		/* Windows are bound: it stays, with its faults. */
		uz_obj_ref_init(&mr->ref);
		if (xa_insert_bh(&uz->ib->odp_xa, UZ_KEY_INDEX(key), mr,
				 GFP_KERNEL))
			dev_err(&uz->pdev->dev,
				"ODP MR 0x%x kept by the device lost its faults\n",
				key);
		/* A fault raised meanwhile found no MR: let it fault again. */
		uz_obj_cmd(uz, UZ_CMD_PAGE_RESUME, key, mr->uctx);
	} else if (err) {
		uz_odp_abandon(mr);
	}
	return err;
}

static struct uz_mr *uz_odp_get(struct uz_ibdev *ib, u32 lkey)
{
	struct uz_mr *mr;

	xa_lock_bh(&ib->odp_xa);
	mr = xa_load(&ib->odp_xa, UZ_KEY_INDEX(lkey));
	if (mr && mr->ibmr.lkey == lkey)
		refcount_inc(&mr->ref.refs);
	else
		mr = NULL;
	xa_unlock_bh(&ib->odp_xa);
	return mr;
}

/* Map [addr, end) of ODP MR @mr (within it), faulting pages in if @fault. */
int uz_odp_prefetch_range(struct uz_mr *mr, u64 addr, u64 end, bool fault)
{
	unsigned int shift = mr->odp->page_shift;
	u32 page = (addr >> shift) - (mr->ibmr.iova >> shift);
	u32 last = ((end - 1) >> shift) - (mr->ibmr.iova >> shift);
	int err;

	while (page <= last) {
		u32 n = min(last - page + 1, UZ_ODP_PREFETCH_PAGES);

		err = uz_odp_map(mr, page, n, fault);
		if (err < 0) {
			ibdev_dbg(uz_odp_ibdev(mr),
				  "advise_mr: MR 0x%x page %u: %d\n",
				  mr->ibmr.lkey, page, err);
			return err;
		}
		page += n;
		if (fatal_signal_pending(current))
			return -EINTR;
		cond_resched();
	}
	return 0;
}

static int uz_odp_prefetch(struct ib_pd *ibpd, const struct ib_sge *sge,
			   enum ib_uverbs_advise_mr_advice advice)
{
	struct ib_device *ibdev = ibpd->device;
	bool fault = advice != IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT;
	u64 end = sge->addr + sge->length;
	struct uz_mr *mr;
	int err = 0;

	mr = uz_odp_get(ibdev_to_uz(ibdev)->ib, sge->lkey);
	if (!mr || mr->ibmr.pd != ibpd) {
		ibdev_dbg(ibdev, "advise_mr: lkey 0x%x is no ODP MR of the PD\n",
			  sge->lkey);
		err = -EINVAL;
		goto out;
	}
	if (advice == IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_WRITE &&
	    !mr->odp->umem.writable) {
		ibdev_dbg(ibdev, "advise_mr: MR 0x%x is not writable\n",
			  sge->lkey);
		err = -EINVAL;
		goto out;
	}
	if (sge->addr < mr->ibmr.iova || end < sge->addr ||
	    end > mr->ibmr.iova + mr->ibmr.length) {
		ibdev_dbg(ibdev, "advise_mr: 0x%llx+%u outside MR 0x%x\n",
			  sge->addr, sge->length, sge->lkey);
		err = -EINVAL;
		goto out;
	}
	if (!sge->length)
		goto out;
	if (mr->odp->is_implicit_odp)
		err = uz_imr_prefetch(mr, sge->addr, end, fault);
	else
		err = uz_odp_prefetch_range(mr, sge->addr, end, fault);
out:
	if (mr)
		uz_obj_ref_put(&mr->ref);
	return err;
}

/* Prefetch, always synchronous: the pages are listed when it returns. */
int uz_advise_mr(struct ib_pd *ibpd, enum ib_uverbs_advise_mr_advice advice,
		 u32 flags, struct ib_sge *sg_list, u32 num_sge,
		 struct uverbs_attr_bundle *attrs)
{
	u32 i;
	int err;

	if (advice != IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH &&
	    advice != IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_WRITE &&
	    advice != IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT) {
		ibdev_dbg(ibpd->device, "advise_mr: advice %d not supported\n",
			  advice);
		return -EOPNOTSUPP;
	}
	if (flags & ~IB_UVERBS_ADVISE_MR_FLAG_FLUSH) {
		ibdev_dbg(ibpd->device, "advise_mr: flags 0x%x not supported\n",
			  flags);
		return -EOPNOTSUPP;
	}
	for (i = 0; i < num_sge; i++) {
		err = uz_odp_prefetch(ibpd, &sg_list[i], advice);
		if (err)
			return err;
	}
	return 0;
}

void uz_odp_caps(struct uz_dev *uz, struct ib_device_attr *props)
{
	if (!(uz->caps & UZ_CAP_ODP))
		return;
	props->kernel_cap_flags |= IBK_ON_DEMAND_PAGING;
	props->odp_caps.general_caps = IB_ODP_SUPPORT;
	if (uz_imr_supported(uz))
		props->odp_caps.general_caps |= IB_ODP_SUPPORT_IMPLICIT;
	/* A UD receive into an absent page drops the datagram: no RECV. */
	props->odp_caps.per_transport_caps.rc_odp_caps =
		IB_ODP_SUPPORT_SEND | IB_ODP_SUPPORT_RECV |
		IB_ODP_SUPPORT_WRITE | IB_ODP_SUPPORT_READ |
		IB_ODP_SUPPORT_ATOMIC | IB_ODP_SUPPORT_SRQ_RECV;
	props->odp_caps.per_transport_caps.ud_odp_caps = IB_ODP_SUPPORT_SEND;
	/* XRC is RC's transport, its receives from SRQs (spec 8.16). */
	if (uz->caps & UZ_CAP_XRC)
		props->odp_caps.per_transport_caps.xrc_odp_caps =
			IB_ODP_SUPPORT_SEND | IB_ODP_SUPPORT_WRITE |
			IB_ODP_SUPPORT_READ | IB_ODP_SUPPORT_ATOMIC |
			IB_ODP_SUPPORT_SRQ_RECV;
}

int uz_odp_init(struct uz_ibdev *ib)
{
	xa_init_flags(&ib->odp_xa, XA_FLAGS_LOCK_BH);
	if (!(ib->uz->caps & UZ_CAP_ODP))
		return 0;
	ib->odp_wq = alloc_workqueue("uzura-odp", WQ_UNBOUND, 0);
	return ib->odp_wq ? 0 : -ENOMEM;
}

void uz_odp_fini(struct uz_ibdev *ib)
{
	if (ib->odp_wq)
		destroy_workqueue(ib->odp_wq);
	xa_destroy(&ib->odp_xa);
}
