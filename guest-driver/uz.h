/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uzura RDMA NIC driver: state shared by its parts.
 */
#ifndef UZ_H
#define UZ_H

#include <linux/bits.h>
#include <linux/mutex.h>
#include <linux/completion.h>
#include <linux/netdevice.h>
#include <linux/pci.h>
#include <linux/u64_stats_sync.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>

#include "uzura_regs_defs.h"
#include "uzura_admin_defs.h"
#include "uzura_admin_cmds_defs.h"
#include "uzura_io_defs.h"
#include "uzura_roce_defs.h"

#define DRV_NAME		"uzura"

#define UZ_ADMIN_LOG_DEPTH	5
#define UZ_EQ_LOG_DEPTH		10
#define UZ_ETH_LOG_DEPTH	8
#define UZ_ETH_DEPTH		BIT(UZ_ETH_LOG_DEPTH)
#define UZ_MSIX_EQ		1	/* the EQ's vector */

struct uz_admin {
	struct uz_admin_cmd *sq;
	struct uz_admin_cqe *cq;
	dma_addr_t sq_dma;
	dma_addr_t cq_dma;
	u32 pi;
	u16 next_id;
	struct mutex lock;		/* one command at a time */
	spinlock_t ring_lock;		/* pi, next_id and the command ring */
	struct completion done;
	bool dead;			/* a command timed out or lost its id */
};

struct uz_eq {
	struct uz_eqe *ring;
	dma_addr_t dma;
	u32 eqn;
	u32 db;
	u32 ci;
};

struct uz_tx_slot {
	struct sk_buff *skb;		/* on the frame's last descriptor */
	dma_addr_t dma;
	u32 len;
	bool page;			/* mapped with skb_frag_dma_map */
};

struct uz_rx_slot {
	struct sk_buff *skb;
	dma_addr_t dma;
};

struct uz_ring_stats {
	u64 packets;
	u64 bytes;
	u64 errors;
	struct u64_stats_sync syncp;
};

struct uz_netdev {
	struct uz_dev *uz;
	struct net_device *ndev;
	struct napi_struct napi;
	struct uz_eth_desc *tx_ring;
	struct uz_eth_desc *rx_ring;
	dma_addr_t tx_dma;
	dma_addr_t rx_dma;
	struct uz_tx_slot *tx_slots;
	struct uz_rx_slot *rx_slots;
	u32 tx_db;
	u32 rx_db;
	u32 tx_pi;			/* next descriptor to fill */
	u32 tx_ci;			/* next descriptor to reclaim */
	u32 rx_pi;			/* descriptors posted */
	u32 rx_ci;			/* next descriptor to receive */
	u32 rx_buf_len;
	struct delayed_work refill_work;	/* RX buffers, after -ENOMEM */
	struct uz_ring_stats tx_stats;
	struct uz_ring_stats rx_stats;
};

struct uz_dev {
	struct pci_dev *pdev;
	void __iomem *regs;
	void __iomem *db;
	u32 version;
	u32 caps;
	u32 link_speed;			/* Mb/s; 0 when the device has none */
	int num_vectors;
	struct uz_device_attr attr;
	struct uz_admin admin;
	struct uz_eq eq;
	struct uz_netdev *net;
	struct uz_ibdev *ib;		/* NULL until registered */
};

/* ---- RDMA ---- */

/* One DMA-contiguous ring; user rings are owned by their mmap entry. */
struct uz_ring {
	void *buf;
	dma_addr_t dma;
	size_t size;			/* bytes allocated, page aligned */
};

/*
 * A ring in single pages that the device reaches through a page list
 * (CQs, which may be far larger than one contiguous allocation): buf maps
 * the pages contiguously for the kernel; a user ring is owned by its mmap
 * entry.
 */
struct uz_pring {
	void *buf;
	struct page **pages;
	u32 npages;
	size_t size;			/* npages * PAGE_SIZE */
	struct uz_ring pbl;		/* __le64 DMA address of each page */
};

struct uz_ibdev {
	struct ib_device ibdev;
	struct uz_dev *uz;
	/* QPs, CQs and SRQs by number, for CQEs and events */
	struct xarray qp_xa;
	struct xarray cq_xa;
	struct xarray srq_xa;
	atomic_t mr_key;		/* next key byte */
	/* ODP MRs by key index, for page faults (uz_odp.c) */
	struct xarray odp_xa;
	struct workqueue_struct *odp_wq;
	/* hw counters: where QUERY_COUNTERS writes them (uz_stats.c) */
	struct mutex stats_lock;	/* one query at a time */
	__le64 *stats_buf;		/* UZ_CNT_NUM counters */
	dma_addr_t stats_dma;
	atomic_t rss_tbl_num;		/* last indirection table number */
};

enum uz_mmap_type {
	UZ_MMAP_DB,			/* a context's doorbell page, uncached */
	UZ_MMAP_RING,			/* a queue ring, cached */
	UZ_MMAP_PAGES,			/* a ring in pages, cached */
	UZ_MMAP_DM,			/* device memory, write-combining */
};

struct uz_mmap_entry {
	struct rdma_user_mmap_entry rdma;
	struct uz_dev *uz;
	enum uz_mmap_type type;
	phys_addr_t bar_addr;		/* UZ_MMAP_DB, UZ_MMAP_DM: in BAR 4 */
	struct uz_ring ring;		/* UZ_MMAP_RING: freed in mmap_free */
	struct uz_pring pring;		/* UZ_MMAP_PAGES: freed in mmap_free */
	u32 dm;				/* UZ_MMAP_DM: freed in mmap_free */
	u32 dm_uctx;
};

struct uz_ucontext {
	struct ib_ucontext ibuc;
	u32 uctx;
	struct rdma_user_mmap_entry *db_entry;
};

struct uz_pd {
	struct ib_pd ibpd;
	u32 pdn;
	u32 uctx;
};

/* An XRC domain belongs to the device, not to a context (uz_xrc.c). */
struct uz_xrcd {
	struct ib_xrcd ibxrcd;
	u32 xrcdn;
};

/*
 * A device memory allocation (uz_dm.c).  Its mmap entry owns the device's
 * allocation, which outlives the ib_dm while a process maps it.
 */
struct uz_dm {
	struct ib_dm ibdm;
	u32 handle;
	u32 uctx;
	struct rdma_user_mmap_entry *mmap;
};

/* Lookup references: EQ dispatch holds one while it calls out. */
struct uz_obj_ref {
	refcount_t refs;
	struct completion free;
};

/* An MR's pinned pages (user MRs) and the page list the device reads. */
struct uz_mr_pages {
	struct ib_umem *umem;
	__le64 *pbl;
	dma_addr_t pbl_dma;
	size_t pbl_size;
	u32 npages;
	u8 page_shift;
};

struct uz_mr {
	struct ib_mr ibmr;
	struct uz_mr_pages pg;	/* none for a DMA MR, no umem for fast-reg */
	u32 uctx;
	int access;		/* user MR: as registered, for a re-pin */
	u32 max_pages;		/* fast-reg: the page list's capacity */
	u32 npages;		/* fast-reg: entries map_mr_sg wrote */
	/* ODP: pages mapped as the device faults them (uz_odp.c) */
	struct ib_umem_odp *odp;
	struct uz_obj_ref ref;	/* held by advise_mr while it maps */
	struct work_struct fault_work;
	u32 fault_page;		/* the page (implicit: chunk) found absent */
	/* implicit ODP: the ODP MR of each chunk touched (uz_imr.c) */
	struct mutex imr_lock;	/* fault work, advise_mr and dereg */
	struct xarray imr_children;
};

static inline struct uz_mr *to_uz_mr(struct ib_mr *ibmr)
{
	return container_of(ibmr, struct uz_mr, ibmr);
}

/* The device holds a window's state; ib_mw has its key and type. */
struct uz_mw {
	struct ib_mw ibmw;
};

/*
 * A user AH is an object of the device (ahn); a kernel AH is only its
 * address vector, copied into each UD WQE (UZ_WQE_F_AV), so the MAD and
 * CM layers create and destroy AHs without a command.
 */
struct uz_ah {
	struct ib_ah ibah;
	u32 ahn;
	u32 uctx;
	struct uz_av av;		/* kernel AHs */
};

struct uz_cq {
	struct ib_cq ibcq;
	struct uz_obj_ref ref;
	u32 cqn;
	u32 uctx;
	u32 db;				/* BAR 4 offset of the doorbell */
	u32 log_depth;
	u32 cqe_size;			/* 32, or 64: UZ_CQF_TIMESTAMP */
	u32 ci;				/* kernel CQs: next CQE to read */
	spinlock_t lock;		/* kernel CQs: poll and arm */
	struct mutex resize_mutex;	/* one resize at a time */
	bool resizing;			/* kernel CQs: neither poll nor arm */
	u32 arm_pending;		/* UZ_DB_ARM* asked for meanwhile */
	struct uz_pring ring;		/* kernel CQs */
	struct rdma_user_mmap_entry *mmap;	/* user CQs */
};

struct uz_sq_slot {
	u64 wr_id;
	bool signaled;
};

/* One work queue of a QP or an SRQ, as the kernel drives it. */
struct uz_wq {
	struct uz_ring ring;
	struct rdma_user_mmap_entry *mmap;	/* user queues */
	u32 db;
	u32 log_depth;
	u32 log_wqe;
	u32 max_sge;
	u32 pi;				/* free running, 24 bits */
	u32 ci;				/* oldest WQE not completed */
	u32 extra;			/* bytes after the WQEs: a shadow */
	spinlock_t lock;
};

struct uz_srq {
	struct ib_srq ibsrq;
	struct uz_obj_ref ref;
	u32 srqn;
	u32 uctx;
	u32 limit;
	struct mutex resize_mutex;	/* one modify_srq at a time */
	struct uz_wq rq;
	struct uz_wq ops;		/* IB_SRQT_TM: its list operations */
};

struct uz_qp {
	struct ib_qp ibqp;
	struct uz_obj_ref ref;
	u32 qpn;
	u32 uctx;			/* 0 for XRC target QPs too */
	u8 type;			/* UZ_QPT_* */
	bool sig_all;
	enum ib_qp_state state;		/* as last set or reported */
	u8 sgid_index;			/* of the AV, for query_qp */
	u32 max_inline;
	struct uz_wq sq;		/* unused by XRC target QPs */
	struct uz_wq rq;		/* unused with an SRQ, by XRC QPs */
	struct uz_sq_slot *sq_slots;	/* kernel QPs */
	struct uz_srq *srq;
	struct ib_qp_cap cap;
};

/* A verbs WQ (user only): a device raw QP with an RQ alone (uz_rss.c). */
struct uz_rwq {
	struct ib_wq ibwq;
	u32 qpn;
	u32 uctx;
	struct uz_wq rq;
};

struct uz_rwq_ind_table {
	struct ib_rwq_ind_table ibtbl;
};

static inline struct uz_ibdev *to_uzib(struct ib_device *ibdev)
{
	return container_of(ibdev, struct uz_ibdev, ibdev);
}

static inline struct uz_dev *ibdev_to_uz(struct ib_device *ibdev)
{
	return to_uzib(ibdev)->uz;
}

static inline struct uz_ucontext *to_uz_uctx(struct ib_ucontext *ibuc)
{
	return container_of(ibuc, struct uz_ucontext, ibuc);
}

static inline struct uz_pd *to_uz_pd(struct ib_pd *ibpd)
{
	return container_of(ibpd, struct uz_pd, ibpd);
}

static inline struct uz_xrcd *to_uz_xrcd(struct ib_xrcd *ibxrcd)
{
	return container_of(ibxrcd, struct uz_xrcd, ibxrcd);
}

static inline struct uz_dm *to_uz_dm(struct ib_dm *ibdm)
{
	return container_of(ibdm, struct uz_dm, ibdm);
}

static inline struct uz_ah *to_uz_ah(struct ib_ah *ibah)
{
	return container_of(ibah, struct uz_ah, ibah);
}

static inline struct uz_cq *to_uz_cq(struct ib_cq *ibcq)
{
	return container_of(ibcq, struct uz_cq, ibcq);
}

static inline struct uz_qp *to_uz_qp(struct ib_qp *ibqp)
{
	return container_of(ibqp, struct uz_qp, ibqp);
}

static inline struct uz_srq *to_uz_srq(struct ib_srq *ibsrq)
{
	return container_of(ibsrq, struct uz_srq, ibsrq);
}

static inline u32 uz_rd(struct uz_dev *uz, u32 reg)
{
	return readl(uz->regs + reg);
}

static inline void uz_wr(struct uz_dev *uz, u32 reg, u32 val)
{
	writel(val, uz->regs + reg);
}

/* A doorbell's offset within its context's page, as user space maps it. */
static inline u32 uz_db_page_off(u32 db)
{
	return db & (UZ_DB_PAGE_SIZE - 1);
}

static inline void uz_ring_db(struct uz_dev *uz, u32 offset, u32 val)
{
	writel(val, uz->db + offset);
}

/* uz_admin.c */
int uz_admin_init(struct uz_dev *uz);
void uz_admin_fini(struct uz_dev *uz);
int uz_admin_exec(struct uz_dev *uz, struct uz_admin_cmd *cmd,
		  struct uz_admin_cqe *cqe);
int uz_admin_destroy(struct uz_dev *uz, u8 opcode, u32 handle);
irqreturn_t uz_admin_irq(int irq, void *data);

/* uz_eq.c */
int uz_eq_init(struct uz_dev *uz);
void uz_eq_fini(struct uz_dev *uz);
void uz_eq_arm(struct uz_dev *uz);
bool uz_eq_poll(struct uz_dev *uz);

/* uz_netdev.c */
int uz_netdev_init(struct uz_dev *uz);
void uz_netdev_fini(struct uz_dev *uz);
void uz_netdev_link_event(struct uz_dev *uz, bool up);

/* uz_ib.c */
int uz_ib_init(struct uz_dev *uz);
void uz_ib_fini(struct uz_dev *uz);
void uz_ib_event(struct uz_dev *uz, const struct uz_eqe *eqe);
int uz_obj_cmd(struct uz_dev *uz, u8 opcode, u32 handle, u32 uctx);
int uz_obj_destroy(struct uz_dev *uz, struct xarray *xa, void *obj,
		   struct uz_obj_ref *ref, u8 opcode, u32 handle, u32 uctx);
u32 uz_udata_uctx(struct ib_udata *udata);
bool uz_udata_known(struct ib_device *ibdev, struct ib_udata *udata,
		    size_t known, const char *what);
int uz_ring_alloc(struct uz_dev *uz, struct uz_ring *ring, size_t size);
void uz_ring_free(struct uz_dev *uz, struct uz_ring *ring);
struct rdma_user_mmap_entry *uz_ring_mmap(struct uz_dev *uz,
					  struct ib_udata *udata,
					  struct uz_ring *ring, u64 *key);
int uz_pring_alloc(struct uz_dev *uz, struct uz_pring *pr, size_t size);
void uz_pring_free(struct uz_dev *uz, struct uz_pring *pr);
struct rdma_user_mmap_entry *uz_pring_mmap(struct uz_dev *uz,
					   struct ib_udata *udata,
					   struct uz_pring *pr, u64 *key);
void uz_obj_ref_init(struct uz_obj_ref *ref);
void uz_obj_ref_put(struct uz_obj_ref *ref);
void uz_obj_ref_wait(struct uz_obj_ref *ref);

/* uz_cq.c */
int uz_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		 struct uverbs_attr_bundle *attrs);
int uz_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata);
int uz_resize_cq(struct ib_cq *ibcq, int entries, struct ib_udata *udata);
int uz_poll_cq(struct ib_cq *ibcq, int num_entries, struct ib_wc *wc);
int uz_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags);

/* uz_qp.c */
int uz_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
		 struct ib_udata *udata);
int uz_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		 struct ib_udata *udata);
int uz_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		struct ib_qp_init_attr *init);
int uz_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata);
int uz_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		 const struct ib_send_wr **bad_wr);
int uz_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		 const struct ib_recv_wr **bad_wr);
int uz_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
		  struct ib_udata *udata);
int uz_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		  enum ib_srq_attr_mask mask, struct ib_udata *udata);
int uz_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr);
int uz_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata);
int uz_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
		     const struct ib_recv_wr **bad_wr);
void uz_qp_send_done(struct uz_qp *qp, const struct uz_cqe *cqe);
void uz_qp_recv_done(struct uz_qp *qp);
void uz_srq_recv_done(struct uz_ibdev *ib, u32 srqn);
int uz_log_depth(struct ib_device *ibdev, const char *what, u32 wr,
		 u32 max_wr);
int uz_wq_alloc(struct uz_dev *uz, struct uz_wq *wq, struct ib_udata *udata,
		u64 *key);
void uz_wq_free(struct uz_dev *uz, struct uz_wq *wq);
u32 uz_wq_map_size(const struct uz_wq *wq);

/* uz_rss.c */
struct ib_wq *uz_create_wq(struct ib_pd *ibpd, struct ib_wq_init_attr *init,
			   struct ib_udata *udata);
int uz_modify_wq(struct ib_wq *ibwq, struct ib_wq_attr *attr, u32 mask,
		 struct ib_udata *udata);
int uz_destroy_wq(struct ib_wq *ibwq, struct ib_udata *udata);
int uz_create_rwq_ind_table(struct ib_rwq_ind_table *ibtbl,
			    struct ib_rwq_ind_table_init_attr *init,
			    struct ib_udata *udata);
int uz_destroy_rwq_ind_table(struct ib_rwq_ind_table *ibtbl);
int uz_rss_create_qp(struct uz_qp *qp, struct ib_qp_init_attr *init,
		     struct ib_udata *udata);
void uz_rss_caps(struct uz_dev *uz, struct ib_device_attr *props);

/* uz_xrc.c */
int uz_alloc_xrcd(struct ib_xrcd *ibxrcd, struct ib_udata *udata);
int uz_dealloc_xrcd(struct ib_xrcd *ibxrcd, struct ib_udata *udata);
struct uz_cq *uz_srq_ext_cq(struct uz_srq *srq, struct ib_srq_init_attr *init);
int uz_xrc_srq_cmd(struct uz_srq *srq, struct ib_srq_init_attr *init,
		   struct uz_cmd_create_srq *c);
int uz_xrc_create_tgt(struct uz_qp *qp, struct ib_qp_init_attr *init);

/* uz_dm.c */
extern const struct uapi_definition uz_dm_defs[];
struct ib_dm *uz_alloc_dm(struct ib_device *ibdev, struct ib_ucontext *ibuc,
			  struct ib_dm_alloc_attr *attr,
			  struct uverbs_attr_bundle *attrs);
int uz_dealloc_dm(struct ib_dm *ibdm, struct uverbs_attr_bundle *attrs);
void uz_dm_mmap_free(struct uz_mmap_entry *e);

/* uz_stats.c */
int uz_stats_init(struct uz_ibdev *ib);
struct rdma_hw_stats *uz_alloc_hw_port_stats(struct ib_device *ibdev,
					     u32 port);
int uz_get_hw_stats(struct ib_device *ibdev, struct rdma_hw_stats *stats,
		    u32 port, int index);

/* uz_mw.c */
int uz_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata);
int uz_dealloc_mw(struct ib_mw *ibmw);

/* uz_mcast.c */
int uz_attach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid);
int uz_detach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid);

/* uz_flow.c */
struct ib_flow *uz_create_flow(struct ib_qp *ibqp, struct ib_flow_attr *attr,
			       struct ib_udata *udata);
int uz_destroy_flow(struct ib_flow *ibflow);

/* uz_odp.c, built with the kernel's ODP (the device's fault events) */
#if IS_ENABLED(CONFIG_INFINIBAND_ON_DEMAND_PAGING)
int uz_odp_init(struct uz_ibdev *ib);
void uz_odp_fini(struct uz_ibdev *ib);
void uz_odp_caps(struct uz_dev *uz, struct ib_device_attr *props);
int uz_odp_reg(struct uz_dev *uz, struct uz_mr *mr, u64 start, u64 length,
	       u64 virt, int access);
int uz_odp_publish(struct uz_dev *uz, struct uz_mr *mr);
int uz_odp_dereg(struct uz_dev *uz, struct uz_mr *mr);
void uz_odp_fault_event(struct uz_dev *uz, u32 key, u32 page);
int uz_advise_mr(struct ib_pd *ibpd, enum ib_uverbs_advise_mr_advice advice,
		 u32 flags, struct ib_sge *sg_list, u32 num_sge,
		 struct uverbs_attr_bundle *attrs);
struct ib_umem_odp;
int uz_odp_reg_child(struct uz_dev *uz, struct uz_mr *child,
		     struct ib_umem_odp *root, u64 addr, u64 length);
int uz_odp_prefetch_range(struct uz_mr *mr, u64 addr, u64 end, bool fault);
/* uz_imr.c: implicit ODP MRs */
bool uz_imr_supported(struct uz_dev *uz);
int uz_imr_reg(struct ib_pd *ibpd, struct uz_mr *mr, u64 virt, int access);
void uz_imr_dereg_children(struct uz_dev *uz, struct uz_mr *mr);
int uz_imr_prefetch(struct uz_mr *mr, u64 addr, u64 end, bool fault);
#else
/* No IB_ACCESS_ON_DEMAND without IBK_ON_DEMAND_PAGING: no ODP MR. */
static inline int uz_odp_init(struct uz_ibdev *ib) { return 0; }
static inline void uz_odp_fini(struct uz_ibdev *ib) {}
static inline void uz_odp_caps(struct uz_dev *uz,
			       struct ib_device_attr *props) {}
static inline int uz_odp_reg(struct uz_dev *uz, struct uz_mr *mr, u64 start,
			     u64 length, u64 virt, int access)
{
	return -EOPNOTSUPP;
}
static inline int uz_odp_publish(struct uz_dev *uz, struct uz_mr *mr)
{
	return 0;
}
static inline int uz_odp_dereg(struct uz_dev *uz, struct uz_mr *mr)
{
	return -EOPNOTSUPP;
}
static inline void uz_odp_fault_event(struct uz_dev *uz, u32 key, u32 page) {}
static inline int uz_imr_reg(struct ib_pd *ibpd, struct uz_mr *mr, u64 virt,
			     int access)
{
	return -EOPNOTSUPP;
}
#define uz_advise_mr NULL
#endif

/* uz_mr.c */
struct ib_mr *uz_get_dma_mr(struct ib_pd *ibpd, int access);
int uz_reg_pages_cmd(struct uz_dev *uz, struct uz_mr *mr, u32 pdn, u64 iova,
		     u64 length, int access, u8 flags);
void uz_mr_unpin(struct uz_dev *uz, struct uz_mr_pages *pg);
struct ib_mr *uz_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
			     u64 virt, int access, struct ib_udata *udata);
struct ib_mr *uz_rereg_user_mr(struct ib_mr *ibmr, int flags, u64 start,
			       u64 length, u64 virt, int access,
			       struct ib_pd *ibpd, struct ib_udata *udata);
struct ib_mr *uz_reg_dm_mr(struct ib_pd *ibpd, struct ib_dm *ibdm,
			   struct ib_dm_mr_attr *attr,
			   struct uverbs_attr_bundle *attrs);
int uz_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata);
struct ib_mr *uz_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type type,
			  u32 max_num_sg);
int uz_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int sg_nents,
		 unsigned int *sg_offset);
int uz_build_reg_mr(struct uz_qp *qp, const struct ib_reg_wr *wr,
		    struct uz_send_wqe *wqe);

#endif /* UZ_H */
