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

#include "uzura-hw.h"

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
	struct mutex lock;		/* one sleeping command at a time */
	spinlock_t ring_lock;		/* pi, next_id and the command ring */
	struct completion done;
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
	struct uz_ring_stats tx_stats;
	struct uz_ring_stats rx_stats;
};

struct uz_dev {
	struct pci_dev *pdev;
	void __iomem *regs;
	void __iomem *db;
	u32 version;
	u32 caps;
	int num_vectors;
	struct uz_device_attr attr;
	struct uz_admin admin;
	struct uz_eq eq;
	struct uz_netdev *net;
};

static inline u32 uz_rd(struct uz_dev *uz, u32 reg)
{
	return readl(uz->regs + reg);
}

static inline void uz_wr(struct uz_dev *uz, u32 reg, u32 val)
{
	writel(val, uz->regs + reg);
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
int uz_admin_exec_atomic(struct uz_dev *uz, struct uz_admin_cmd *cmd,
			 struct uz_admin_cqe *out);
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

#endif /* UZ_H */
