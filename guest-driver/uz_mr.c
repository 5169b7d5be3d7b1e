// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * uzura RDMA NIC driver: memory regions.
 *
 * The NIC keeps a table entry per MR and reads the MR's page list (64-bit
 * DMA addresses of its pages) from host memory on a translation miss, so
 * the driver keeps that list in DMA-coherent memory from REG_MR until
 * DEREG_MR completes.  A DMA MR translates 1:1 and has no page list: it is
 * the lkey ib_core gives kernel users, the device having no local DMA lkey.
 */
#include <linux/dma-mapping.h>
#include <rdma/ib_umem.h>
#include <rdma/iter.h>
#include <rdma/ib_verbs.h>

#include "uz.h"

#define UZ_MR_ACCESS	(IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE | \
			 IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_ATOMIC)

static int uz_reg_mr_cmd(struct uz_dev *uz, struct uz_mr *mr, u32 pdn,
			 struct uz_cmd_reg_mr *r)
{
	struct uz_admin_cmd cmd = { .opcode = UZ_CMD_REG_MR };
	struct uz_ibdev *ib = uz->ib;
	struct uz_admin_cqe cqe;
	int err;

	/* A fresh key byte, so that a peer's stale key misses. */
	r->key = atomic_inc_return(&ib->mr_key) & 0xff;
	r->pdn = cpu_to_le32(pdn);
	r->uctx = cpu_to_le32(mr->uctx);
	memcpy(cmd.raw, r, sizeof(*r));
	err = uz_admin_exec(uz, &cmd, &cqe);
	if (err)
		return err;
	mr->ibmr.lkey = le32_to_cpu(cqe.out0);
	mr->ibmr.rkey = mr->ibmr.lkey;
	return 0;
}

struct ib_mr *uz_get_dma_mr(struct ib_pd *ibpd, int access)
{
	struct uz_dev *uz = ibdev_to_uz(ibpd->device);
	struct uz_cmd_reg_mr r = {};
	struct uz_mr *mr;
	int err;

	if (access & ~UZ_MR_ACCESS) {
		ibdev_dbg(ibpd->device, "MR access 0x%x not supported\n", access);
		return ERR_PTR(-EOPNOTSUPP);
	}
	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	mr->uctx = to_uz_pd(ibpd)->uctx;
	/* iova 0 and the largest length: every DMA address below it */
	r.length = uz->attr.max_mr_size;
	r.access = cpu_to_le32(access);
	r.flags = UZ_MR_F_DMA;
	err = uz_reg_mr_cmd(uz, mr, to_uz_pd(ibpd)->pdn, &r);
	if (err) {
		kfree(mr);
		return ERR_PTR(err);
	}
	return &mr->ibmr;
}

/*
 * What a user MR's access may ask of the device: windows and FLUSH, if it
 * has them (its access bits are IB's).
 */
static int uz_user_access(struct uz_dev *uz)
{
	return UZ_MR_ACCESS | (uz->caps & UZ_CAP_MW ? IB_ACCESS_MW_BIND : 0) |
	       (uz->caps & UZ_CAP_PLACEMENT ? IB_ACCESS_FLUSH_GLOBAL : 0);
}

/*
 * ... and of the driver: on-demand paging, if the device has it.  HUGETLB
 * says the range is hugetlbfs memory: an ODP MR then faults in pages of
 * HPAGE_SIZE (ib_umem_odp_get); a pinned MR finds its page size anyway.
 */
static int uz_user_access_flags(struct uz_dev *uz)
{
	return uz_user_access(uz) | IB_ACCESS_HUGETLB |
	       (uz->caps & UZ_CAP_ODP ? IB_ACCESS_ON_DEMAND : 0);
}

static int uz_check_user_access(struct ib_device *ibdev, int access)
{
	/* Optional flags (relaxed ordering) are hints a device may ignore. */
	if (access & ~(uz_user_access_flags(ibdev_to_uz(ibdev)) |
		       IB_ACCESS_OPTIONAL)) {
		ibdev_dbg(ibdev, "MR access 0x%x not supported\n", access);
		return -EOPNOTSUPP;
	}
	return 0;
}

/* Pin [start, start + length) and list its pages for iova @virt. */
static int uz_mr_pin(struct uz_dev *uz, u64 start, u64 length, u64 virt,
		     int access, struct uz_mr_pages *pg)
{
	struct ib_device *ibdev = &uz->ib->ibdev;
	struct device *dev = &uz->pdev->dev;
	struct ib_block_iter biter;
	unsigned long pgsz;
	size_t npages, i = 0;
	int err;

	if (!length || length > le64_to_cpu(uz->attr.max_mr_size)) {
		ibdev_dbg(ibdev, "MR of %llu bytes: 1..%llu\n", length,
			  le64_to_cpu(uz->attr.max_mr_size));
		return -EINVAL;
	}
	pg->umem = ib_umem_get(ibdev, start, length, access);
	if (IS_ERR(pg->umem))
		return PTR_ERR(pg->umem);
	/* Pages of 4 KiB .. 1 GiB, aligned as the iova is. */
	pgsz = ib_umem_find_best_pgsz(pg->umem,
				      le32_to_cpu(uz->attr.page_size_cap) &
				      GENMASK(30, 12), virt);
	if (!pgsz) {
		ibdev_dbg(ibdev,
			  "MR: no page size fits start 0x%llx, iova 0x%llx\n",
			  start, virt);
		err = -EINVAL;
		goto err_umem;
	}
	npages = ib_umem_num_dma_blocks(pg->umem, pgsz);
	if (npages > U32_MAX) {
		ibdev_dbg(ibdev, "MR of %zu pages: at most %u\n", npages,
			  U32_MAX);
		err = -EINVAL;
		goto err_umem;
	}
	/*
	 * One contiguous page list: the device reads entry k at pbl + 8k.
	 * TODO: very large MRs can exceed what dma_alloc_coherent gives in
	 * one piece; they fail with ENOMEM.
	 */
	pg->pbl_size = npages * sizeof(*pg->pbl);
	pg->pbl = dma_alloc_coherent(dev, pg->pbl_size, &pg->pbl_dma,
				     GFP_KERNEL | __GFP_NOWARN);
	if (!pg->pbl) {
		err = -ENOMEM;
		goto err_umem;
	}
	rdma_umem_for_each_dma_block(pg->umem, &biter, pgsz)
		pg->pbl[i++] = cpu_to_le64(rdma_block_iter_dma_address(&biter));
	pg->npages = npages;
	pg->page_shift = __ffs(pgsz);
	return 0;

err_umem:
	ib_umem_release(pg->umem);
	return err;
}

/* The umem first: an ODP umem's notifier writes the page list. */
void uz_mr_unpin(struct uz_dev *uz, struct uz_mr_pages *pg)
{
	ib_umem_release(pg->umem);
	if (pg->pbl)
		dma_free_coherent(&uz->pdev->dev, pg->pbl_size, pg->pbl,
				  pg->pbl_dma);
}

/* REG_MR of a user MR (@flags: none, ODP or implicit) as @mr->pg lists it. */
int uz_reg_pages_cmd(struct uz_dev *uz, struct uz_mr *mr, u32 pdn, u64 iova,
		     u64 length, int access, u8 flags)
{
	struct uz_cmd_reg_mr r = {};

	r.iova = cpu_to_le64(iova);
	r.length = cpu_to_le64(length);
	r.pbl_addr = cpu_to_le64(mr->pg.pbl_dma);
	r.npages = cpu_to_le32(mr->pg.npages);
	r.access = cpu_to_le32(access & uz_user_access(uz));
	r.page_shift = mr->pg.page_shift;
	r.flags = flags;
	return uz_reg_mr_cmd(uz, mr, pdn, &r);
}

struct ib_mr *uz_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
			     u64 virt, int access, struct ib_udata *udata)
{
	struct uz_dev *uz = ibdev_to_uz(ibpd->device);
	struct uz_mr *mr;
	u8 flags = 0;
	int err;

	err = uz_check_user_access(ibpd->device, access);
	if (err)
		return ERR_PTR(err);
	if (!uz_udata_known(ibpd->device, udata, 0, "MR"))
		return ERR_PTR(-EOPNOTSUPP);
	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	mr->uctx = to_uz_pd(ibpd)->uctx;
	if ((access & IB_ACCESS_ON_DEMAND) && !start && length == U64_MAX) {
		/* All of memory, as ibv_reg_mr(pd, NULL, SIZE_MAX) asks */
		err = uz_imr_reg(ibpd, mr, virt, access);
		flags = UZ_MR_F_IMPLICIT;
	} else if (access & IB_ACCESS_ON_DEMAND) {
		err = uz_odp_reg(uz, mr, start, length, virt, access);
		flags = UZ_MR_F_ODP;
	} else {
		err = uz_mr_pin(uz, start, length, virt, access, &mr->pg);
	}
	if (err)
		goto err_free;

	err = uz_reg_pages_cmd(uz, mr, to_uz_pd(ibpd)->pdn, virt, length,
			       access, flags);
	if (err)
		goto err_pages;
	mr->access = access;
	if (mr->odp) {
		err = uz_odp_publish(uz, mr);
		/* The device has it: let it go as dereg_mr does. */
		if (err && uz_odp_dereg(uz, mr)) {
			dev_err(&uz->pdev->dev, "deregistering MR 0x%x failed\n",
				mr->ibmr.lkey);
			return ERR_PTR(err);	/* the page list stays */
		}
		if (err)
			goto err_pages;
	}
	return &mr->ibmr;

err_pages:
	uz_mr_unpin(uz, &mr->pg);
err_free:
	kfree(mr);
	return ERR_PTR(err);
}

/*
 * A DM MR: [attr->offset, + attr->length) of a device memory allocation
 * (uz_dm.c), zero-based.  ib_core insisted on IB_ZERO_BASED and checked
 * the range against the length the process asked for; the device maps
 * its own memory, with no page list.  The MR deregisters as any other.
 */
struct ib_mr *uz_reg_dm_mr(struct ib_pd *ibpd, struct ib_dm *ibdm,
			   struct ib_dm_mr_attr *attr,
			   struct uverbs_attr_bundle *attrs)
{
	struct uz_dev *uz = ibdev_to_uz(ibpd->device);
	int access = attr->access_flags & ~IB_ZERO_BASED;
	struct uz_dm *dm = to_uz_dm(ibdm);
	struct uz_cmd_reg_mr r = {};
	struct uz_mr *mr;
	int err;

	/* Neither on-demand paging nor huge pages mean anything here. */
	if (access & ~(uz_user_access(uz) | IB_ACCESS_OPTIONAL)) {
		ibdev_dbg(ibpd->device, "DM MR access 0x%x not supported\n",
			  attr->access_flags);
		return ERR_PTR(-EOPNOTSUPP);
	}
	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	mr->uctx = to_uz_pd(ibpd)->uctx;
	r.length = cpu_to_le64(attr->length);
	r.dm_offset = cpu_to_le64(attr->offset);
	r.dm = cpu_to_le32(dm->handle);
	r.access = cpu_to_le32(access & uz_user_access(uz));
	r.flags = UZ_MR_F_DM;
	err = uz_reg_mr_cmd(uz, mr, to_uz_pd(ibpd)->pdn, &r);
	if (err) {
		kfree(mr);
		return ERR_PTR(err);
	}
	mr->ibmr.iova = 0;
	mr->ibmr.length = attr->length;
	return &mr->ibmr;
}

/*
 * In place, keeping the keys, as peers that hold them expect: pin the
 * new pages first, switch the device over, then let the old ones go.
 * A change of access that makes the MR writable pins its pages again
 * for writing.
 */
struct ib_mr *uz_rereg_user_mr(struct ib_mr *ibmr, int flags, u64 start,
			       u64 length, u64 virt, int access,
			       struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct uz_dev *uz = ibdev_to_uz(ibmr->device);
	struct uz_mr *mr = to_uz_mr(ibmr);
	struct uz_admin_cmd cmd = { .opcode = UZ_CMD_REREG_MR };
	struct uz_cmd_rereg_mr *r = (void *)cmd.raw;
	struct uz_mr_pages pg = {};
	struct uz_admin_cqe cqe;
	bool pin;
	int err;

	if (!(uz->caps & UZ_CAP_MR_REREG) || !mr->pg.umem || mr->odp ||
	    (flags & ~IB_MR_REREG_SUPPORTED)) {
		ibdev_dbg(ibmr->device, "MR 0x%x: rereg 0x%x not supported\n",
			  ibmr->lkey, flags);
		return ERR_PTR(-EOPNOTSUPP);
	}
	if (!uz_udata_known(ibmr->device, udata, 0, "MR"))
		return ERR_PTR(-EOPNOTSUPP);
	if (flags & IB_MR_REREG_ACCESS) {
		err = uz_check_user_access(ibmr->device, access);
		if (err)
			return ERR_PTR(err);
		if (access & IB_ACCESS_ON_DEMAND) {
			ibdev_dbg(ibmr->device,
				  "MR 0x%x: rereg to on-demand paging\n",
				  ibmr->lkey);
			return ERR_PTR(-EOPNOTSUPP);
		}
		r->access = cpu_to_le32(access & uz_user_access(uz));
		r->change |= UZ_REREG_ACCESS;
	}
	if (flags & IB_MR_REREG_PD) {
		r->pdn = cpu_to_le32(to_uz_pd(ibpd)->pdn);
		r->change |= UZ_REREG_PD;
	}
	/* The pages stay, but were pinned read-only. */
	pin = flags & IB_MR_REREG_TRANS;
	if (!pin && (flags & IB_MR_REREG_ACCESS) &&
	    ib_access_writable(access) && !mr->pg.umem->writable) {
		start = mr->pg.umem->address;
		length = mr->pg.umem->length;
		virt = ibmr->iova;
		pin = true;
	}
	if (pin) {
		err = uz_mr_pin(uz, start, length, virt,
				flags & IB_MR_REREG_ACCESS ? access : mr->access,
				&pg);
		if (err)
			return ERR_PTR(err);
		r->iova = cpu_to_le64(virt);
		r->length = cpu_to_le64(length);
		r->pbl_addr = cpu_to_le64(pg.pbl_dma);
		r->npages = cpu_to_le32(pg.npages);
		r->page_shift = pg.page_shift;
		r->change |= UZ_REREG_TRANS;
	}
	r->uctx = cpu_to_le32(mr->uctx);
	r->key = cpu_to_le32(ibmr->lkey);
	err = uz_admin_exec(uz, &cmd, &cqe);
	if (err) {
		/* The device may have switched if the command timed out. */
		if (pin && err != -ETIMEDOUT)
			uz_mr_unpin(uz, &pg);
		return ERR_PTR(err);
	}
	if (pin) {
		struct uz_mr_pages old = mr->pg;

		mr->pg = pg;
		uz_mr_unpin(uz, &old);
		ibmr->length = length;
	}
	if (flags & IB_MR_REREG_ACCESS)
		mr->access = access;
	return NULL;
}

int uz_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
{
	struct uz_mr *mr = to_uz_mr(ibmr);
	struct uz_dev *uz = ibdev_to_uz(ibmr->device);
	int err;

	if (mr->odp)
		err = uz_odp_dereg(uz, mr);
	else
		err = uz_obj_cmd(uz, UZ_CMD_DEREG_MR, ibmr->lkey, mr->uctx);
	if (err == -EBUSY) {
		/* Windows are bound to it: it stays, as the IB spec has it. */
		ibdev_dbg(ibmr->device, "MR 0x%x: memory windows bound\n",
			  ibmr->lkey);
		return err;
	}
	if (err) {
		/*
		 * The device may still use the pages: keep them pinned, and
		 * the page list (an ODP MR lost its notifier, which must not
		 * outlive the module, in uz_odp_dereg).
		 */
		dev_err(&uz->pdev->dev, "deregistering MR 0x%x failed: %d\n",
			ibmr->lkey, err);
		kfree(mr);
		return 0;
	}
	uz_mr_unpin(uz, &mr->pg);
	kfree(mr);
	return 0;
}

struct ib_mr *uz_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type type,
			  u32 max_num_sg)
{
	struct uz_dev *uz = ibdev_to_uz(ibpd->device);
	u32 max = le32_to_cpu(uz->attr.max_fast_reg_pages);
	struct uz_cmd_reg_mr r = {};
	struct uz_mr *mr;
	int err;

	if (!(uz->caps & UZ_CAP_FAST_REG) || type != IB_MR_TYPE_MEM_REG) {
		ibdev_dbg(ibpd->device, "MR type %d not supported\n", type);
		return ERR_PTR(-EOPNOTSUPP);
	}
	if (!max_num_sg || max_num_sg > max) {
		ibdev_dbg(ibpd->device, "fast-reg MR of %u pages: 1..%u\n",
			  max_num_sg, max);
		return ERR_PTR(-EINVAL);
	}
	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	mr->uctx = to_uz_pd(ibpd)->uctx;
	mr->max_pages = max_num_sg;
	mr->pg.pbl_size = max_num_sg * sizeof(*mr->pg.pbl);
	mr->pg.pbl = dma_alloc_coherent(&uz->pdev->dev, mr->pg.pbl_size,
					&mr->pg.pbl_dma, GFP_KERNEL);
	if (!mr->pg.pbl) {
		err = -ENOMEM;
		goto err_free;
	}
	r.pbl_addr = cpu_to_le64(mr->pg.pbl_dma);
	r.npages = cpu_to_le32(max_num_sg);
	r.flags = UZ_MR_F_FAST;
	err = uz_reg_mr_cmd(uz, mr, to_uz_pd(ibpd)->pdn, &r);
	if (err)
		goto err_pbl;
	return &mr->ibmr;

err_pbl:
	uz_mr_unpin(uz, &mr->pg);
err_free:
	kfree(mr);
	return ERR_PTR(err);
}

static int uz_set_page(struct ib_mr *ibmr, u64 addr)
{
	struct uz_mr *mr = to_uz_mr(ibmr);

	if (mr->npages == mr->max_pages)
		return -ENOMEM;
	mr->pg.pbl[mr->npages++] = cpu_to_le64(addr);
	return 0;
}

int uz_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int sg_nents,
		 unsigned int *sg_offset)
{
	struct uz_mr *mr = to_uz_mr(ibmr);

	mr->npages = 0;
	return ib_sg_to_pages(ibmr, sg, sg_nents, sg_offset, uz_set_page);
}

/* The WQE of IB_WR_REG_MR: the mapping map_mr_sg made, and the new key. */
int uz_build_reg_mr(struct uz_qp *qp, const struct ib_reg_wr *wr,
		    struct uz_send_wqe *wqe)
{
	struct uz_mr *mr = to_uz_mr(wr->mr);
	u64 pgsz = mr->ibmr.page_size;

	if (!mr->max_pages) {
		ibdev_dbg(qp->ibqp.device, "REG_MR of MR 0x%x: not fast-reg\n",
			  wr->mr->lkey);
		return -EINVAL;
	}
	if (UZ_KEY_INDEX(wr->key) != UZ_KEY_INDEX(wr->mr->lkey)) {
		ibdev_dbg(qp->ibqp.device, "REG_MR key 0x%x of MR 0x%x\n",
			  wr->key, wr->mr->lkey);
		return -EINVAL;
	}
	if ((wr->access & ~(UZ_MR_ACCESS | IB_ACCESS_OPTIONAL)) ||
	    ((wr->access & (IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_ATOMIC)) &&
	     !(wr->access & IB_ACCESS_LOCAL_WRITE))) {
		ibdev_dbg(qp->ibqp.device, "REG_MR access 0x%x not supported\n",
			  wr->access);
		return -EINVAL;
	}
	if (!is_power_of_2(pgsz) || pgsz < SZ_4K || pgsz > SZ_1G) {
		ibdev_dbg(qp->ibqp.device, "REG_MR page size %llu: 4K..1G\n",
			  pgsz);
		return -EINVAL;
	}
	wqe->rkey = cpu_to_le32(wr->key);
	wqe->remote_addr = cpu_to_le64(mr->ibmr.iova);
	wqe->reg.length = cpu_to_le64(mr->ibmr.length);
	wqe->reg.access = cpu_to_le32(wr->access & UZ_MR_ACCESS);
	wqe->reg.npages = cpu_to_le16(mr->npages);
	wqe->reg.page_shift = ilog2(pgsz);
	return 0;
}
