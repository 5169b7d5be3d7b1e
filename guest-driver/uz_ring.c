// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * uzura RDMA NIC driver: queue rings in host memory.
 *
 * A ring is either one DMA-coherent allocation (SQs, RQs, SRQs) or single
 * pages the device reaches through a page list (CQs, which rxm and MPI
 * size by the job and may span many megabytes).  A user ring is handed to
 * the process as an mmap entry that owns it from then on.
 */
#include <linux/dma-mapping.h>
#include <linux/mm.h>
#include <linux/vmalloc.h>
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>

#include "uz.h"

int uz_ring_alloc(struct uz_dev *uz, struct uz_ring *ring, size_t size)
{
	ring->size = PAGE_ALIGN(size);
	ring->buf = dma_alloc_coherent(&uz->pdev->dev, ring->size, &ring->dma,
				       GFP_KERNEL);
	if (!ring->buf)
		return -ENOMEM;
	/* A user ring is mapped by pfn: it must be in the direct map. */
	if (!virt_addr_valid(ring->buf)) {
		uz_ring_free(uz, ring);
		return -ENOMEM;
	}
	return 0;
}

void uz_ring_free(struct uz_dev *uz, struct uz_ring *ring)
{
	if (ring->buf)
		dma_free_coherent(&uz->pdev->dev, ring->size, ring->buf,
				  ring->dma);
	ring->buf = NULL;
}

/*
 * Hand @e (type and ring filled in) to the process as an mmap entry of
 * @size bytes: from here on the entry owns the ring, and mmap_free
 * releases it once the object is destroyed and the last mapping is gone.
 * On failure @e is freed and the caller still owns the ring.
 */
static struct rdma_user_mmap_entry *uz_mmap_insert(struct uz_dev *uz,
						   struct ib_udata *udata,
						   struct uz_mmap_entry *e,
						   size_t size, u64 *key)
{
	struct uz_ucontext *uc;
	int err;

	uc = rdma_udata_to_drv_context(udata, struct uz_ucontext, ibuc);
	e->uz = uz;
	err = rdma_user_mmap_entry_insert(&uc->ibuc, &e->rdma, size);
	if (err) {
		kfree(e);
		return ERR_PTR(err);
	}
	*key = rdma_user_mmap_get_offset(&e->rdma);
	return &e->rdma;
}

/* Hand a contiguous ring to the process (uz_mmap_insert). */
struct rdma_user_mmap_entry *uz_ring_mmap(struct uz_dev *uz,
					  struct ib_udata *udata,
					  struct uz_ring *ring, u64 *key)
{
	struct rdma_user_mmap_entry *rdma;
	struct uz_mmap_entry *e;

	e = kzalloc(sizeof(*e), GFP_KERNEL);
	if (!e)
		return ERR_PTR(-ENOMEM);
	e->type = UZ_MMAP_RING;
	e->ring = *ring;
	rdma = uz_mmap_insert(uz, udata, e, ring->size, key);
	if (!IS_ERR(rdma))
		ring->buf = NULL;	/* now the entry's */
	return rdma;
}

/* The device's page list counts 4 KiB pages: one per kernel page here. */
static_assert(PAGE_SHIFT == UZ_CQ_PAGE_SHIFT);

int uz_pring_alloc(struct uz_dev *uz, struct uz_pring *pr, size_t size)
{
	struct device *dev = &uz->pdev->dev;
	__le64 *pbl;
	dma_addr_t dma;
	u32 i;
	int err;

	memset(pr, 0, sizeof(*pr));
	pr->npages = DIV_ROUND_UP(size, PAGE_SIZE);
	pr->size = (size_t)pr->npages * PAGE_SIZE;
	pr->pages = kvcalloc(pr->npages, sizeof(*pr->pages), GFP_KERNEL);
	if (!pr->pages)
		return -ENOMEM;
	err = uz_ring_alloc(uz, &pr->pbl, pr->npages * sizeof(__le64));
	if (err)
		goto err_pages;
	pbl = pr->pbl.buf;
	for (i = 0; i < pr->npages; i++) {
		/* Zeroed: no CQE of the first pass is valid yet. */
		pr->pages[i] = alloc_page(GFP_KERNEL | __GFP_ZERO);
		if (!pr->pages[i]) {
			err = -ENOMEM;
			goto err_free;
		}
		dma = dma_map_page(dev, pr->pages[i], 0, PAGE_SIZE,
				   DMA_BIDIRECTIONAL);
		if (dma_mapping_error(dev, dma)) {
			__free_page(pr->pages[i]);
			pr->pages[i] = NULL;
			err = -ENOMEM;
			goto err_free;
		}
		pbl[i] = cpu_to_le64(dma);
	}
	pr->buf = vmap(pr->pages, pr->npages, VM_MAP, PAGE_KERNEL);
	if (!pr->buf) {
		err = -ENOMEM;
		goto err_free;
	}
	return 0;

err_free:
	uz_pring_free(uz, pr);
	return err;
err_pages:
	kvfree(pr->pages);
	pr->pages = NULL;
	return err;
}

void uz_pring_free(struct uz_dev *uz, struct uz_pring *pr)
{
	__le64 *pbl = pr->pbl.buf;
	u32 i;

	if (!pr->pages)
		return;
	if (pr->buf)
		vunmap(pr->buf);
	for (i = 0; i < pr->npages && pr->pages[i]; i++) {
		dma_unmap_page(&uz->pdev->dev, le64_to_cpu(pbl[i]), PAGE_SIZE,
			       DMA_BIDIRECTIONAL);
		/* A process that still maps the page holds its own reference. */
		__free_page(pr->pages[i]);
	}
	uz_ring_free(uz, &pr->pbl);
	kvfree(pr->pages);
	pr->pages = NULL;
	pr->buf = NULL;
}

/* Hand a ring in pages to the process (uz_mmap_insert). */
struct rdma_user_mmap_entry *uz_pring_mmap(struct uz_dev *uz,
					   struct ib_udata *udata,
					   struct uz_pring *pr, u64 *key)
{
	struct rdma_user_mmap_entry *rdma;
	struct uz_mmap_entry *e;

	e = kzalloc(sizeof(*e), GFP_KERNEL);
	if (!e)
		return ERR_PTR(-ENOMEM);
	e->type = UZ_MMAP_PAGES;
	e->pring = *pr;
	rdma = uz_mmap_insert(uz, udata, e, pr->size, key);
	if (!IS_ERR(rdma)) {
		pr->pages = NULL;	/* now the entry's */
		pr->buf = NULL;
	}
	return rdma;
}
