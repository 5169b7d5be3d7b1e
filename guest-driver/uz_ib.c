// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * uzura RDMA NIC driver: the ib_device.
 *
 * Registration, the query verbs, PDs, user contexts with their doorbell
 * page and ring mappings, AHs, and the dispatch of the EQ's RDMA events.
 * The device's numbers for QP states, MTUs, access bits and completion
 * status are the InfiniBand ones, so they pass through unchanged.
 */
#include <linux/dma-mapping.h>
#include <linux/etherdevice.h>
#include <net/addrconf.h>
#include <rdma/ib_addr.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_mad.h>
#include <rdma/uverbs_ioctl.h>
#include <rdma/uzura-abi.h>

#include "uz.h"

#define UVERBS_MODULE_NAME uzura_ib
#include <rdma/uverbs_named_ioctl.h>

/* The device uses the InfiniBand numbers: they pass through unchanged. */
#define UZ_SAME(ib, uz)	static_assert((int)(ib) == (int)(uz))
UZ_SAME(IB_QPS_RESET, UZ_QPS_RESET);
UZ_SAME(IB_QPS_INIT, UZ_QPS_INIT);
UZ_SAME(IB_QPS_RTR, UZ_QPS_RTR);
UZ_SAME(IB_QPS_RTS, UZ_QPS_RTS);
UZ_SAME(IB_QPS_SQD, UZ_QPS_SQD);
UZ_SAME(IB_QPS_SQE, UZ_QPS_SQE);
UZ_SAME(IB_QPS_ERR, UZ_QPS_ERR);
UZ_SAME(IB_MTU_256, UZ_MTU_256);
UZ_SAME(IB_MTU_4096, UZ_MTU_4096);
UZ_SAME(IB_ACCESS_LOCAL_WRITE, UZ_ACCESS_LOCAL_WRITE);
UZ_SAME(IB_ACCESS_REMOTE_WRITE, UZ_ACCESS_REMOTE_WRITE);
UZ_SAME(IB_ACCESS_REMOTE_READ, UZ_ACCESS_REMOTE_READ);
UZ_SAME(IB_ACCESS_REMOTE_ATOMIC, UZ_ACCESS_REMOTE_ATOMIC);
UZ_SAME(IB_ACCESS_MW_BIND, UZ_ACCESS_MW_BIND);
UZ_SAME(IB_ACCESS_FLUSH_GLOBAL, UZ_ACCESS_FLUSH_GLOBAL);
UZ_SAME(IB_WC_SUCCESS, UZ_WC_STATUS_SUCCESS);
UZ_SAME(IB_WC_LOC_PROT_ERR, UZ_WC_STATUS_LOC_PROT_ERR);
UZ_SAME(IB_WC_WR_FLUSH_ERR, UZ_WC_STATUS_WR_FLUSH_ERR);
UZ_SAME(IB_WC_MW_BIND_ERR, UZ_WC_STATUS_MW_BIND_ERR);
UZ_SAME(IB_WC_RNR_RETRY_EXC_ERR, UZ_WC_STATUS_RNR_RETRY_EXC_ERR);
UZ_SAME(IB_WC_REM_ABORT_ERR, UZ_WC_STATUS_REM_ABORT_ERR);
UZ_SAME(IB_WC_GENERAL_ERR, UZ_WC_STATUS_GENERAL_ERR);
/* A doorbell page is mapped as one CPU page. */
static_assert(UZ_DB_PAGE_SIZE == PAGE_SIZE);

#define UZ_GID_TBL_LEN		16

/* ---- helpers shared by the verbs files ---- */

u32 uz_udata_uctx(struct ib_udata *udata)
{
	struct uz_ucontext *uc;

	uc = rdma_udata_to_drv_context(udata, struct uz_ucontext, ibuc);
	return uc ? uc->uctx : 0;
}

/*
 * A newer provider may send a longer command: what this driver does not
 * know must be zero, or the request means something it cannot do.
 */
bool uz_udata_known(struct ib_device *ibdev, struct ib_udata *udata,
		    size_t known, const char *what)
{
	if (!udata || udata->inlen <= known ||
	    ib_is_udata_cleared(udata, known, udata->inlen - known))
		return true;
	ibdev_dbg(ibdev, "%s: %zu command bytes past the %zu known are not zero\n",
		  what, udata->inlen - known, known);
	return false;
}

/* ALLOC_PD, DEALLOC_*, DESTROY_*, DEREG_MR: all take struct uz_cmd_obj. */
int uz_obj_cmd(struct uz_dev *uz, u8 opcode, u32 handle, u32 uctx)
{
	struct uz_admin_cmd cmd = { .opcode = opcode };
	struct uz_cmd_obj *obj = (struct uz_cmd_obj *)cmd.raw;

	obj->handle = cpu_to_le32(handle);
	obj->uctx = cpu_to_le32(uctx);
	return uz_admin_exec(uz, &cmd, NULL);
}

void uz_obj_ref_init(struct uz_obj_ref *ref)
{
	refcount_set(&ref->refs, 1);
	init_completion(&ref->free);
}

void uz_obj_ref_put(struct uz_obj_ref *ref)
{
	if (refcount_dec_and_test(&ref->refs))
		complete(&ref->free);
}

/*
 * Destroy object @handle at the device, out of @xa first: once the device
 * frees the number, another process's create may get it back at once, and
 * must find the table free.  An object the device keeps because it is
 * still used (-EBUSY) goes back into @xa.  Returns the command's status.
 */
int uz_obj_destroy(struct uz_dev *uz, struct xarray *xa, void *obj,
		   struct uz_obj_ref *ref, u8 opcode, u32 handle, u32 uctx)
{
	int err;

	xa_erase_bh(xa, handle);
	uz_obj_ref_wait(ref);
	err = uz_obj_cmd(uz, opcode, handle, uctx);
	if (err == -EBUSY) {
		uz_obj_ref_init(ref);
		if (xa_insert_bh(xa, handle, obj, GFP_KERNEL))
			dev_err(&uz->pdev->dev,
				"object %u kept by the device lost its events\n",
				handle);
	}
	return err;
}

/* After the object left its xarray: wait for EQ dispatch to let go. */
void uz_obj_ref_wait(struct uz_obj_ref *ref)
{
	uz_obj_ref_put(ref);
	wait_for_completion(&ref->free);
}

/* ---- device and port ---- */

static bool uz_link_up(struct uz_dev *uz)
{
	return uz_rd(uz, UZ_REG_STATUS) & UZ_STATUS_LINK_UP;
}

static int uz_query_device(struct ib_device *ibdev,
			   struct ib_device_attr *props,
			   struct ib_udata *udata)
{
	struct uz_dev *uz = ibdev_to_uz(ibdev);
	const struct uz_device_attr *a = &uz->attr;

	if (udata->inlen || udata->outlen) {
		ibdev_dbg(ibdev,
			  "query_device takes no driver data (%zu in, %zu out)\n",
			  udata->inlen, udata->outlen);
		return -EINVAL;
	}

	memset(props, 0, sizeof(*props));
	props->fw_ver = le32_to_cpu(a->version);
	props->sys_image_guid = ibdev->node_guid;
	props->max_mr_size = le64_to_cpu(a->max_mr_size);
	/* MR pages of 4 KiB .. 1 GiB, as far as the CPU page allows */
	props->page_size_cap = le32_to_cpu(a->page_size_cap) & ~(PAGE_SIZE - 1);
	props->vendor_id = UZ_PCI_VENDOR_ID;
	props->vendor_part_id = UZ_PCI_DEVICE_ID;
	props->hw_ver = uz->pdev->revision;
	props->max_qp = le32_to_cpu(a->max_qp);
	props->max_qp_wr = le32_to_cpu(a->max_qp_wr);
	props->device_cap_flags = IB_DEVICE_RC_RNR_NAK_GEN;
	if (uz->caps & UZ_CAP_FAST_REG) {
		props->device_cap_flags |= IB_DEVICE_MEM_MGT_EXTENSIONS;
		props->max_fast_reg_page_list_len =
			le32_to_cpu(a->max_fast_reg_pages);
	}
	/*
	 * Windows take entries of the MR table (spec 8.10.3), whose index 0
	 * is never used: MRs and windows together number max_mr - 1.
	 */
	if (uz->caps & UZ_CAP_MW) {
		props->device_cap_flags |= IB_DEVICE_MEM_WINDOW |
					   IB_DEVICE_MEM_WINDOW_TYPE_2B;
		props->max_mw = le32_to_cpu(a->max_mr) - 1;
	}
	uz_odp_caps(uz, props);
	props->max_send_sge = le32_to_cpu(a->max_sge);
	props->max_recv_sge = le32_to_cpu(a->max_sge);
	props->max_sge_rd = le32_to_cpu(a->max_sge);
	props->max_cq = le32_to_cpu(a->max_cq);
	props->max_cqe = le32_to_cpu(a->max_cqe);
	props->max_mr = le32_to_cpu(a->max_mr);
	props->max_pd = le32_to_cpu(a->max_pd);
	props->max_qp_rd_atom = le32_to_cpu(a->max_qp_rd_atom);
	props->max_qp_init_rd_atom = le32_to_cpu(a->max_qp_rd_atom);
	props->max_res_rd_atom = props->max_qp * props->max_qp_rd_atom;
	/* The device's one data-path thread makes atomics atomic on the NIC. */
	props->atomic_cap = IB_ATOMIC_HCA;
	props->max_ah = le32_to_cpu(a->max_ah);
	props->max_srq = le32_to_cpu(a->max_srq);
	props->max_srq_wr = le32_to_cpu(a->max_srq_wr);
	props->max_srq_sge = le32_to_cpu(a->max_sge);
	if (uz->caps & UZ_CAP_SRQ_RESIZE)
		props->device_cap_flags |= IB_DEVICE_SRQ_RESIZE;
	/* ib_device_attr has no max_xrcd: UZ_XRCD_MAX goes unreported. */
	if (uz->caps & UZ_CAP_XRC)
		props->device_cap_flags |= IB_DEVICE_XRC;
	/* No memory behind the device persists: FLUSH to global visibility. */
	if (uz->caps & UZ_CAP_PLACEMENT)
		props->device_cap_flags |= IB_DEVICE_FLUSH_GLOBAL |
					   IB_DEVICE_ATOMIC_WRITE;
	if (uz->caps & UZ_CAP_DM)
		props->max_dm_size = le32_to_cpu(a->dm_size);
	/* Flow rules steer frames to raw packet QPs (uz_flow.c). */
	if (uz->caps & UZ_CAP_RAW)
		props->device_cap_flags |= IB_DEVICE_MANAGED_FLOW_STEERING;
	uz_rss_caps(uz, props);
	if (uz->caps & UZ_CAP_MCAST) {
		props->max_mcast_grp = le32_to_cpu(a->max_mcast_grp);
		props->max_mcast_qp_attach = le32_to_cpu(a->max_mcast_qp_attach);
		props->max_total_mcast_qp_attach =
			props->max_mcast_grp * props->max_mcast_qp_attach;
	}
	/*
	 * CQE timestamps and the clock the provider reads in its doorbell
	 * page: nanoseconds, 64 bits that never wrap in practice.
	 */
	if (uz->caps & UZ_CAP_TIMESTAMP) {
		props->timestamp_mask = ~0ULL;
		props->hca_core_clock = UZ_CLOCK_KHZ;
	}
	/* Tag matching SRQs (uz_qp.c): RC only, one SGE per tagged buffer. */
	if (uz->caps & UZ_CAP_TM) {
		props->tm_caps.max_rndv_hdr_size = UZ_TM_RNDV_HDR_MAX;
		props->tm_caps.max_num_tags = le32_to_cpu(a->max_tm_tags);
		props->tm_caps.flags = IB_TM_CAP_RNDV_RC;
		props->tm_caps.max_ops = le32_to_cpu(a->max_tm_ops);
		props->tm_caps.max_sge = UZ_TM_MAX_SGE;
	}
	props->max_pkeys = 1;
	props->local_ca_ack_delay = 15;
	return 0;
}

/* The largest IB MTU m with 2^(7+m) + 70 <= the Ethernet MTU (spec 8.4). */
static enum ib_mtu uz_active_mtu(unsigned int mtu)
{
	enum ib_mtu m;

	for (m = IB_MTU_4096; m > IB_MTU_256; m--)
		if (ib_mtu_enum_to_int(m) + 70 <= mtu)
			break;
	return m;
}

static int uz_query_port(struct ib_device *ibdev, u32 port,
			 struct ib_port_attr *props)
{
	struct uz_dev *uz = ibdev_to_uz(ibdev);
	bool up = uz_link_up(uz);

	/* ib_core zeroed props */
	props->state = up ? IB_PORT_ACTIVE : IB_PORT_DOWN;
	props->phys_state = up ? IB_PORT_PHYS_STATE_LINK_UP :
				 IB_PORT_PHYS_STATE_DISABLED;
	props->max_mtu = IB_MTU_4096;
	props->active_mtu = uz_active_mtu(READ_ONCE(uz->net->ndev->mtu));
	props->gid_tbl_len = UZ_GID_TBL_LEN;
	props->pkey_tbl_len = 1;
	props->port_cap_flags = IB_PORT_CM_SUP;
	props->max_msg_sz = UZ_MAX_MSG_SZ;
	props->max_vl_num = 1;
	props->ip_gids = true;
	return ib_get_eth_speed(ibdev, port, &props->active_speed,
				&props->active_width);
}

static int uz_get_port_immutable(struct ib_device *ibdev, u32 port,
				 struct ib_port_immutable *immutable)
{
	struct ib_port_attr attr;
	int err;

	err = ib_query_port(ibdev, port, &attr);
	if (err)
		return err;
	immutable->pkey_tbl_len = attr.pkey_tbl_len;
	immutable->gid_tbl_len = attr.gid_tbl_len;
	immutable->core_cap_flags = RDMA_CORE_PORT_IBA_ROCE_UDP_ENCAP;
	/* Whole Ethernet frames besides RoCE, as mlx5 says of its ports. */
	if (ibdev_to_uz(ibdev)->caps & UZ_CAP_RAW)
		immutable->core_cap_flags |= RDMA_CORE_PORT_RAW_PACKET;
	immutable->max_mad_size = IB_MGMT_MAD_SIZE;
	return 0;
}

static int uz_query_pkey(struct ib_device *ibdev, u32 port, u16 index,
			 u16 *pkey)
{
	if (index) {
		ibdev_dbg(ibdev, "P_Key index %u: only 0\n", index);
		return -EINVAL;
	}
	*pkey = IB_DEFAULT_PKEY_FULL;
	return 0;
}

static enum rdma_link_layer uz_get_link_layer(struct ib_device *ibdev,
					      u32 port)
{
	return IB_LINK_LAYER_ETHERNET;
}

/* ---- user contexts and mmap ---- */

/* What alloc_ucontext answers, and QUERY_CONTEXT for an importer. */
static void uz_ucontext_resp(struct uz_ucontext *uc,
			     struct uzura_alloc_ucontext_resp *resp)
{
	struct uz_dev *uz = ibdev_to_uz(uc->ibuc.device);

	memset(resp, 0, sizeof(*resp));
	resp->uctx = uc->uctx;
	resp->db_mmap_key = rdma_user_mmap_get_offset(uc->db_entry);
	resp->db_page_size = UZ_DB_PAGE_SIZE;
	resp->max_sge = le32_to_cpu(uz->attr.max_sge);
	resp->max_inline = le32_to_cpu(uz->attr.max_inline);
	resp->sq_max_log_wqe = 9;
	resp->rq_max_log_wqe = 9;
	resp->max_crw_tags = (uz->caps & UZ_CAP_CRW) ?
			     le32_to_cpu(uz->attr.max_crw_tags) : 0;
	resp->caps = uz->caps;
}

static int uz_alloc_ucontext(struct ib_ucontext *ibuc, struct ib_udata *udata)
{
	struct uz_ucontext *uc = to_uz_uctx(ibuc);
	struct uz_dev *uz = ibdev_to_uz(ibuc->device);
	struct uzura_alloc_ucontext_resp resp;
	struct uz_admin_cmd cmd = { .opcode = UZ_CMD_CREATE_UCTX };
	struct uz_admin_cqe cqe;
	struct uz_mmap_entry *e;
	int err;

	if (!uz_udata_known(ibuc->device, udata, 0, "context"))
		return -EOPNOTSUPP;
	err = uz_admin_exec(uz, &cmd, &cqe);
	if (err)
		return err;
	uc->uctx = le32_to_cpu(cqe.out0);

	e = kzalloc(sizeof(*e), GFP_KERNEL);
	if (!e) {
		err = -ENOMEM;
		goto err_uctx;
	}
	e->uz = uz;
	e->type = UZ_MMAP_DB;
	e->bar_addr = pci_resource_start(uz->pdev, UZ_BAR_DB) +
		     le32_to_cpu(cqe.out1);
	err = rdma_user_mmap_entry_insert(ibuc, &e->rdma, UZ_DB_PAGE_SIZE);
	if (err) {
		kfree(e);
		goto err_uctx;
	}
	uc->db_entry = &e->rdma;

	uz_ucontext_resp(uc, &resp);
	err = ib_copy_to_udata(udata, &resp, min(udata->outlen, sizeof(resp)));
	if (err)
		goto err_entry;
	return 0;

err_entry:
	rdma_user_mmap_entry_remove(uc->db_entry);
err_uctx:
	uz_obj_cmd(uz, UZ_CMD_DESTROY_UCTX, uc->uctx, 0);
	return err;
}

/*
 * ibv_import_device: another process's context over the same command FD
 * is this kernel context, so the same answer serves it, doorbell page
 * key included.
 */
static int uz_query_ucontext(struct ib_ucontext *ibuc,
			     struct uverbs_attr_bundle *attrs)
{
	struct uzura_alloc_ucontext_resp resp;

	uz_ucontext_resp(to_uz_uctx(ibuc), &resp);
	return uverbs_copy_to_struct_or_zero(attrs,
					     UZURA_IB_ATTR_QUERY_CONTEXT_RESP_UCTX,
					     &resp, sizeof(resp));
}

static void uz_dealloc_ucontext(struct ib_ucontext *ibuc)
{
	struct uz_ucontext *uc = to_uz_uctx(ibuc);
	struct uz_dev *uz = ibdev_to_uz(ibuc->device);

	/* The page stays mapped (and harmless) until the process unmaps it. */
	rdma_user_mmap_entry_remove(uc->db_entry);
	uz_obj_cmd(uz, UZ_CMD_DESTROY_UCTX, uc->uctx, 0);
}

static int uz_mmap(struct ib_ucontext *ibuc, struct vm_area_struct *vma)
{
	struct rdma_user_mmap_entry *rdma;
	struct uz_mmap_entry *e;
	unsigned long pfn;
	pgprot_t prot;
	int err;

	rdma = rdma_user_mmap_entry_get(ibuc, vma);
	if (!rdma) {
		ibdev_dbg(ibuc->device,
			  "mmap: no shared entry of %lu bytes at pgoff %#lx\n",
			  vma->vm_end - vma->vm_start, vma->vm_pgoff);
		return -EINVAL;
	}
	e = container_of(rdma, struct uz_mmap_entry, rdma);
	if (e->type == UZ_MMAP_PAGES) {
		/* The pages are refcounted: they outlive the entry if mapped. */
		err = vm_map_pages_zero(vma, e->pring.pages, e->pring.npages);
		rdma_user_mmap_entry_put(rdma);
		return err;
	}
	if (e->type == UZ_MMAP_DB) {
		pfn = PHYS_PFN(e->bar_addr);
		prot = pgprot_noncached(vma->vm_page_prot);
	} else if (e->type == UZ_MMAP_DM) {
		/* Memory, not registers: the provider fences its stores. */
		pfn = PHYS_PFN(e->bar_addr);
		prot = pgprot_writecombine(vma->vm_page_prot);
	} else {
		pfn = PHYS_PFN(virt_to_phys(e->ring.buf));
		prot = vma->vm_page_prot;
	}
	/* rdma_user_mmap_io ties the mapping's lifetime to the entry. */
	err = rdma_user_mmap_io(ibuc, vma, pfn, rdma->npages * PAGE_SIZE, prot,
				rdma);
	rdma_user_mmap_entry_put(rdma);
	return err;
}

static void uz_mmap_free(struct rdma_user_mmap_entry *rdma)
{
	struct uz_mmap_entry *e = container_of(rdma, struct uz_mmap_entry, rdma);

	if (e->type == UZ_MMAP_RING)
		uz_ring_free(e->uz, &e->ring);
	else if (e->type == UZ_MMAP_PAGES)
		uz_pring_free(e->uz, &e->pring);
	else if (e->type == UZ_MMAP_DM)
		uz_dm_mmap_free(e);
	kfree(e);
}

/* ---- PDs ---- */

static int uz_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct uz_pd *pd = to_uz_pd(ibpd);
	struct uz_dev *uz = ibdev_to_uz(ibpd->device);
	struct uz_admin_cmd cmd = { .opcode = UZ_CMD_ALLOC_PD };
	struct uz_cmd_obj *obj = (struct uz_cmd_obj *)cmd.raw;
	struct uz_admin_cqe cqe;
	int err;

	if (!uz_udata_known(ibpd->device, udata, 0, "PD"))
		return -EOPNOTSUPP;
	pd->uctx = uz_udata_uctx(udata);
	obj->uctx = cpu_to_le32(pd->uctx);
	err = uz_admin_exec(uz, &cmd, &cqe);
	if (err)
		return err;
	pd->pdn = le32_to_cpu(cqe.out0);
	return 0;
}

static int uz_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct uz_pd *pd = to_uz_pd(ibpd);

	return uz_obj_cmd(ibdev_to_uz(ibpd->device), UZ_CMD_DEALLOC_PD,
			  pd->pdn, pd->uctx);
}

/* ---- AHs ---- */

static int uz_create_ah(struct ib_ah *ibah, struct rdma_ah_init_attr *init,
			struct ib_udata *udata)
{
	struct uz_ah *ah = to_uz_ah(ibah);
	struct uz_dev *uz = ibdev_to_uz(ibah->device);
	struct rdma_ah_attr *attr = init->ah_attr;
	struct uz_admin_cmd cmd = { .opcode = UZ_CMD_CREATE_AH };
	struct uz_cmd_create_ah *c = (struct uz_cmd_create_ah *)cmd.raw;
	struct uzura_create_ah_resp resp = {};
	const struct ib_global_route *grh;
	struct uz_admin_cqe cqe;
	int err;

	if (attr->type != RDMA_AH_ATTR_TYPE_ROCE ||
	    !(rdma_ah_get_ah_flags(attr) & IB_AH_GRH)) {
		ibdev_dbg(ibah->device, "AH: RoCE with a GRH only\n");
		return -EINVAL;
	}
	grh = rdma_ah_read_grh(attr);
	/* A group MAC (ib_core's, for a multicast GID) only for a group. */
	if (!grh->sgid_attr || is_zero_ether_addr(attr->roce.dmac) ||
	    is_multicast_ether_addr(attr->roce.dmac) !=
	    rdma_is_multicast_addr((struct in6_addr *)grh->dgid.raw)) {
		ibdev_dbg(ibah->device, "AH: no source GID or bad MAC %pM\n",
			  attr->roce.dmac);
		return -EINVAL;
	}

	if (!udata) {
		/* A kernel AH: the AV its WQEs carry; no command. */
		memcpy(ah->av.dgid, grh->dgid.raw, sizeof(ah->av.dgid));
		memcpy(ah->av.sgid, grh->sgid_attr->gid.raw,
		       sizeof(ah->av.sgid));
		ether_addr_copy(ah->av.dmac, attr->roce.dmac);
		ah->av.hop_limit = grh->hop_limit;
		ah->av.traffic_class = grh->traffic_class;
		ah->av.flow_label = cpu_to_le32(grh->flow_label);
		return 0;
	}

	if (!uz_udata_known(ibah->device, udata, 0, "AH"))
		return -EOPNOTSUPP;
	ah->uctx = uz_udata_uctx(udata);
	memcpy(c->dgid, grh->dgid.raw, sizeof(c->dgid));
	memcpy(c->sgid, grh->sgid_attr->gid.raw, sizeof(c->sgid));
	ether_addr_copy(c->dmac, attr->roce.dmac);
	c->hop_limit = grh->hop_limit;
	c->traffic_class = grh->traffic_class;
	c->flow_label = cpu_to_le32(grh->flow_label);
	c->pdn = cpu_to_le32(to_uz_pd(ibah->pd)->pdn);
	c->uctx = cpu_to_le32(ah->uctx);
	c->sgid_index = grh->sgid_index;
	/* From uverbs: a process context, which may sleep. */
	err = uz_admin_exec(uz, &cmd, &cqe);
	if (err)
		return err;
	ah->ahn = le32_to_cpu(cqe.out0);
	resp.ahn = ah->ahn;
	err = ib_copy_to_udata(udata, &resp, min(udata->outlen, sizeof(resp)));
	if (err) {
		uz_obj_cmd(uz, UZ_CMD_DESTROY_AH, ah->ahn, ah->uctx);
		return err;
	}
	return 0;
}

static int uz_destroy_ah(struct ib_ah *ibah, u32 flags)
{
	struct uz_ah *ah = to_uz_ah(ibah);

	if (!ah->uctx)
		return 0;	/* a kernel AH */
	return uz_obj_cmd(ibdev_to_uz(ibah->device), UZ_CMD_DESTROY_AH,
			  ah->ahn, ah->uctx);
}

/* ---- events from the EQ (NAPI context) ---- */

static void uz_qp_event(struct uz_ibdev *ib, u32 qpn, enum ib_event_type type)
{
	struct ib_event ev = { .device = &ib->ibdev, .event = type };
	struct uz_qp *qp;

	xa_lock(&ib->qp_xa);
	qp = xa_load(&ib->qp_xa, qpn);
	if (qp)
		refcount_inc(&qp->ref.refs);
	xa_unlock(&ib->qp_xa);
	if (!qp)
		return;
	if (type == IB_EVENT_QP_FATAL)
		WRITE_ONCE(qp->state, IB_QPS_ERR);
	/*
	 * An XRC target QP's handler is ib_core's own, which passes the
	 * event on to each handle that processes opened on the QP.
	 */
	if (qp->ibqp.event_handler) {
		ev.element.qp = &qp->ibqp;
		qp->ibqp.event_handler(&ev, qp->ibqp.qp_context);
	}
	uz_obj_ref_put(&qp->ref);
}

static struct uz_cq *uz_cq_get(struct uz_ibdev *ib, u32 cqn)
{
	struct uz_cq *cq;

	xa_lock(&ib->cq_xa);
	cq = xa_load(&ib->cq_xa, cqn);
	if (cq)
		refcount_inc(&cq->ref.refs);
	xa_unlock(&ib->cq_xa);
	return cq;
}

static void uz_srq_event(struct uz_ibdev *ib, u32 srqn)
{
	struct ib_event ev = { .device = &ib->ibdev,
			       .event = IB_EVENT_SRQ_LIMIT_REACHED };
	struct uz_srq *srq;

	xa_lock(&ib->srq_xa);
	srq = xa_load(&ib->srq_xa, srqn);
	if (srq)
		refcount_inc(&srq->ref.refs);
	xa_unlock(&ib->srq_xa);
	if (!srq)
		return;
	WRITE_ONCE(srq->limit, 0);	/* the device disarmed it */
	if (srq->ibsrq.event_handler) {
		ev.element.srq = &srq->ibsrq;
		srq->ibsrq.event_handler(&ev, srq->ibsrq.srq_context);
	}
	uz_obj_ref_put(&srq->ref);
}

void uz_ib_event(struct uz_dev *uz, const struct uz_eqe *eqe)
{
	struct uz_ibdev *ib = READ_ONCE(uz->ib);
	u32 handle = le32_to_cpu(eqe->handle);
	struct ib_event ev = {};
	struct uz_cq *cq;

	if (!ib)
		return;
	switch (eqe->type) {
	case UZ_EQE_COMPLETION:
		cq = uz_cq_get(ib, handle);
		if (!cq)
			break;
		if (cq->ibcq.comp_handler)
			cq->ibcq.comp_handler(&cq->ibcq, cq->ibcq.cq_context);
		uz_obj_ref_put(&cq->ref);
		break;
	case UZ_EQE_CQ_ERROR:
		cq = uz_cq_get(ib, handle);
		if (!cq)
			break;
		dev_warn_ratelimited(&uz->pdev->dev, "CQ %u overflowed\n",
				     handle);
		if (cq->ibcq.event_handler) {
			ev.device = &ib->ibdev;
			ev.event = IB_EVENT_CQ_ERR;
			ev.element.cq = &cq->ibcq;
			cq->ibcq.event_handler(&ev, cq->ibcq.cq_context);
		}
		uz_obj_ref_put(&cq->ref);
		break;
	case UZ_EQE_QP_FATAL:
		uz_qp_event(ib, handle, IB_EVENT_QP_FATAL);
		break;
	case UZ_EQE_QP_REQ_ERR:
		uz_qp_event(ib, handle, IB_EVENT_QP_REQ_ERR);
		break;
	case UZ_EQE_QP_ACCESS_ERR:
		uz_qp_event(ib, handle, IB_EVENT_QP_ACCESS_ERR);
		break;
	case UZ_EQE_QP_LAST_WQE:
		uz_qp_event(ib, handle, IB_EVENT_QP_LAST_WQE_REACHED);
		break;
	case UZ_EQE_SRQ_LIMIT:
		uz_srq_event(ib, handle);
		break;
	case UZ_EQE_PORT_ACTIVE:
	case UZ_EQE_PORT_DOWN:
		ev.device = &ib->ibdev;
		ev.element.port_num = 1;
		ev.event = eqe->type == UZ_EQE_PORT_ACTIVE ?
			   IB_EVENT_PORT_ACTIVE : IB_EVENT_PORT_ERR;
		ib_dispatch_event(&ev);
		break;
	}
}

/* ---- registration ---- */

static const struct ib_device_ops uz_ib_ops = {
	.owner = THIS_MODULE,
	.driver_id = RDMA_DRIVER_UNKNOWN,
	.uverbs_abi_ver = UZURA_UVERBS_ABI_VERSION,

	.advise_mr = uz_advise_mr,
	.alloc_dm = uz_alloc_dm,
	.alloc_hw_port_stats = uz_alloc_hw_port_stats,
	.alloc_mr = uz_alloc_mr,
	.alloc_mw = uz_alloc_mw,
	.alloc_pd = uz_alloc_pd,
	.alloc_ucontext = uz_alloc_ucontext,
	.alloc_xrcd = uz_alloc_xrcd,
	.attach_mcast = uz_attach_mcast,
	.create_ah = uz_create_ah,
	.create_cq = uz_create_cq,
	.create_flow = uz_create_flow,
	.create_qp = uz_create_qp,
	.create_rwq_ind_table = uz_create_rwq_ind_table,
	.create_srq = uz_create_srq,
	.create_user_ah = uz_create_ah,
	.create_wq = uz_create_wq,
	.dealloc_dm = uz_dealloc_dm,
	.dealloc_mw = uz_dealloc_mw,
	.dealloc_pd = uz_dealloc_pd,
	.dealloc_ucontext = uz_dealloc_ucontext,
	.dealloc_xrcd = uz_dealloc_xrcd,
	.dereg_mr = uz_dereg_mr,
	.destroy_ah = uz_destroy_ah,
	.destroy_cq = uz_destroy_cq,
	.destroy_flow = uz_destroy_flow,
	.destroy_qp = uz_destroy_qp,
	.destroy_rwq_ind_table = uz_destroy_rwq_ind_table,
	.destroy_srq = uz_destroy_srq,
	.destroy_wq = uz_destroy_wq,
	.detach_mcast = uz_detach_mcast,
	.get_dma_mr = uz_get_dma_mr,
	.get_hw_stats = uz_get_hw_stats,
	.get_link_layer = uz_get_link_layer,
	.get_port_immutable = uz_get_port_immutable,
	.map_mr_sg = uz_map_mr_sg,
	.mmap = uz_mmap,
	.mmap_free = uz_mmap_free,
	.modify_qp = uz_modify_qp,
	.modify_srq = uz_modify_srq,
	.modify_wq = uz_modify_wq,
	.poll_cq = uz_poll_cq,
	.post_recv = uz_post_recv,
	.post_send = uz_post_send,
	.post_srq_recv = uz_post_srq_recv,
	.query_device = uz_query_device,
	.query_pkey = uz_query_pkey,
	.query_port = uz_query_port,
	.query_qp = uz_query_qp,
	.query_srq = uz_query_srq,
	.query_ucontext = uz_query_ucontext,
	.reg_dm_mr = uz_reg_dm_mr,
	.reg_user_mr = uz_reg_user_mr,
	.rereg_user_mr = uz_rereg_user_mr,
	.req_notify_cq = uz_req_notify_cq,
	.resize_cq = uz_resize_cq,

	INIT_RDMA_OBJ_SIZE(ib_ah, uz_ah, ibah),
	INIT_RDMA_OBJ_SIZE(ib_cq, uz_cq, ibcq),
	INIT_RDMA_OBJ_SIZE(ib_mw, uz_mw, ibmw),
	INIT_RDMA_OBJ_SIZE(ib_pd, uz_pd, ibpd),
	INIT_RDMA_OBJ_SIZE(ib_qp, uz_qp, ibqp),
	INIT_RDMA_OBJ_SIZE(ib_rwq_ind_table, uz_rwq_ind_table, ibtbl),
	INIT_RDMA_OBJ_SIZE(ib_srq, uz_srq, ibsrq),
	INIT_RDMA_OBJ_SIZE(ib_ucontext, uz_ucontext, ibuc),
	INIT_RDMA_OBJ_SIZE(ib_xrcd, uz_xrcd, ibxrcd),
};

ADD_UVERBS_ATTRIBUTES_SIMPLE(
	uz_ib_query_context, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_CONTEXT,
	UVERBS_ATTR_PTR_OUT(UZURA_IB_ATTR_QUERY_CONTEXT_RESP_UCTX,
			    UVERBS_ATTR_STRUCT(struct uzura_alloc_ucontext_resp,
					       reserved),
			    UA_MANDATORY));

/* The driver's additions to the uverbs ioctl methods. */
static const struct uapi_definition uz_uapi_defs[] = {
	UAPI_DEF_CHAIN_OBJ_TREE(UVERBS_OBJECT_DEVICE, &uz_ib_query_context),
	UAPI_DEF_CHAIN(uz_dm_defs),
	{}
};

int uz_ib_init(struct uz_dev *uz)
{
	struct net_device *ndev = uz->net->ndev;
	struct uz_ibdev *ib;
	int err;

	if (!(uz->caps & UZ_CAP_RDMA)) {
		dev_info(&uz->pdev->dev, "no RDMA engine, Ethernet only\n");
		return 0;
	}
	if (!(uz->caps & UZ_CAP_CQ_PAGES)) {
		dev_info(&uz->pdev->dev,
			 "device without paged CQs, Ethernet only\n");
		return 0;
	}
	ib = ib_alloc_device(uz_ibdev, ibdev);
	if (!ib)
		return -ENOMEM;
	ib->uz = uz;
	xa_init_flags(&ib->qp_xa, XA_FLAGS_LOCK_BH);
	xa_init_flags(&ib->cq_xa, XA_FLAGS_LOCK_BH);
	xa_init_flags(&ib->srq_xa, XA_FLAGS_LOCK_BH);
	atomic_set(&ib->mr_key, 0);
	err = uz_odp_init(ib);
	if (err)
		goto err_odp;
	err = uz_stats_init(ib);
	if (err)
		goto err_dealloc;

	ib->ibdev.node_type = RDMA_NODE_IB_CA;
	ib->ibdev.phys_port_cnt = 1;
	ib->ibdev.num_comp_vectors = 1;
	ib->ibdev.dev.parent = &uz->pdev->dev;
	strscpy(ib->ibdev.node_desc, "uzura", sizeof(ib->ibdev.node_desc));
	addrconf_addr_eui48((u8 *)&ib->ibdev.node_guid, uz->attr.mac);
	ib_set_device_ops(&ib->ibdev, &uz_ib_ops);
	if (IS_ENABLED(CONFIG_INFINIBAND_USER_ACCESS))
		ib->ibdev.driver_def = uz_uapi_defs;

	/* ib_core fills the GID table from the netdev's addresses. */
	err = ib_device_set_netdev(&ib->ibdev, ndev, 1);
	if (err)
		goto err_dealloc;
	WRITE_ONCE(uz->ib, ib);
	err = ib_register_device(&ib->ibdev, "uzura%d", &uz->pdev->dev);
	if (err)
		goto err_clear;
	return 0;

err_clear:
	WRITE_ONCE(uz->ib, NULL);
	synchronize_rcu();
err_dealloc:
	mutex_destroy(&ib->stats_lock);
err_odp:
	uz_odp_fini(ib);
	ib_dealloc_device(&ib->ibdev);
	return err;
}

void uz_ib_fini(struct uz_dev *uz)
{
	struct uz_ibdev *ib = uz->ib;

	if (!ib)
		return;
	/* Destroys every object, user ones included, through our verbs. */
	ib_unregister_device(&ib->ibdev);
	WRITE_ONCE(uz->ib, NULL);
	/* EQ dispatch runs in NAPI (softirq): let it finish with ib. */
	synchronize_rcu();
	xa_destroy(&ib->qp_xa);
	xa_destroy(&ib->cq_xa);
	xa_destroy(&ib->srq_xa);
	uz_odp_fini(ib);
	mutex_destroy(&ib->stats_lock);
	ib_dealloc_device(&ib->ibdev);
}
