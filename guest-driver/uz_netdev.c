// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * uzura RDMA NIC driver: the Ethernet netdev.
 *
 * One TX and one RX descriptor ring, created when the interface goes up.
 * The EQ interrupt schedules NAPI, which reclaims TX descriptors, receives
 * frames and consumes events, then re-arms the EQ.
 */
#include <linux/etherdevice.h>
#include <linux/ethtool.h>
#include <linux/interrupt.h>

#include "uz.h"

#define UZ_NAPI_BUDGET		64

static u32 uz_tx_free(struct uz_netdev *net)
{
	return UZ_ETH_DEPTH - ((net->tx_pi - net->tx_ci) & UZ_DB_PI_MASK);
}

static struct uz_eth_desc *uz_desc(struct uz_eth_desc *ring, u32 idx)
{
	return &ring[idx & (UZ_ETH_DEPTH - 1)];
}

static void uz_stats_add(struct uz_ring_stats *s, u64 bytes)
{
	u64_stats_update_begin(&s->syncp);
	s->packets++;
	s->bytes += bytes;
	u64_stats_update_end(&s->syncp);
}

static void uz_stats_error(struct uz_ring_stats *s)
{
	u64_stats_update_begin(&s->syncp);
	s->errors++;
	u64_stats_update_end(&s->syncp);
}

/* ---- receive ---- */

static int uz_rx_fill_one(struct uz_netdev *net, u32 idx)
{
	struct device *dev = &net->uz->pdev->dev;
	struct uz_rx_slot *slot = &net->rx_slots[idx & (UZ_ETH_DEPTH - 1)];
	struct uz_eth_desc *d = uz_desc(net->rx_ring, idx);
	struct sk_buff *skb;
	dma_addr_t dma;

	skb = netdev_alloc_skb_ip_align(net->ndev, net->rx_buf_len);
	if (!skb)
		return -ENOMEM;
	dma = dma_map_single(dev, skb->data, net->rx_buf_len, DMA_FROM_DEVICE);
	if (dma_mapping_error(dev, dma)) {
		dev_kfree_skb_any(skb);
		return -ENOMEM;
	}
	slot->skb = skb;
	slot->dma = dma;
	d->addr = cpu_to_le64(dma);
	d->len = cpu_to_le16(net->rx_buf_len);
	d->flags = 0;
	d->status = 0;
	return 0;
}

/*
 * Post buffers into every free RX descriptor, then ring once.  A buffer
 * that cannot be allocated now is tried again later from the refill work:
 * with the ring empty no frame arrives, so no poll would try again.
 */
static void uz_rx_refill(struct uz_netdev *net)
{
	u32 posted = net->rx_pi;

	while (((net->rx_pi - net->rx_ci) & UZ_DB_PI_MASK) < UZ_ETH_DEPTH) {
		if (uz_rx_fill_one(net, net->rx_pi)) {
			schedule_delayed_work(&net->refill_work, HZ / 10);
			break;
		}
		net->rx_pi = (net->rx_pi + 1) & UZ_DB_PI_MASK;
	}
	if (net->rx_pi != posted) {
		dma_wmb();
		uz_ring_db(net->uz, net->rx_db, net->rx_pi);
	}
}

static int uz_rx_poll(struct uz_netdev *net, int budget)
{
	struct device *dev = &net->uz->pdev->dev;
	int done = 0;

	while (done < budget && net->rx_ci != net->rx_pi) {
		struct uz_eth_desc *d = uz_desc(net->rx_ring, net->rx_ci);
		struct uz_rx_slot *slot =
			&net->rx_slots[net->rx_ci & (UZ_ETH_DEPTH - 1)];
		u32 status = le32_to_cpu(READ_ONCE(d->status));
		struct sk_buff *skb = slot->skb;
		u16 len;

		if (!(status & UZ_ETH_DONE))
			break;
		dma_rmb();
		len = le16_to_cpu(d->len);
		dma_unmap_single(dev, slot->dma, net->rx_buf_len,
				 DMA_FROM_DEVICE);
		slot->skb = NULL;
		net->rx_ci = (net->rx_ci + 1) & UZ_DB_PI_MASK;
		done++;
		if (status & UZ_ETH_ERR_MASK) {
			uz_stats_error(&net->rx_stats);
			dev_kfree_skb_any(skb);
			continue;
		}
		skb_put(skb, len);
		skb->protocol = eth_type_trans(skb, net->ndev);
		uz_stats_add(&net->rx_stats, len);
		napi_gro_receive(&net->napi, skb);
	}
	uz_rx_refill(net);
	return done;
}

static void uz_rx_free(struct uz_netdev *net)
{
	struct device *dev = &net->uz->pdev->dev;
	u32 i;

	for (i = 0; i < UZ_ETH_DEPTH; i++) {
		struct uz_rx_slot *slot = &net->rx_slots[i];

		if (!slot->skb)
			continue;
		dma_unmap_single(dev, slot->dma, net->rx_buf_len,
				 DMA_FROM_DEVICE);
		dev_kfree_skb_any(slot->skb);
		slot->skb = NULL;
	}
}

/* ---- transmit ---- */

static void uz_tx_unmap(struct uz_netdev *net, struct uz_tx_slot *slot)
{
	struct device *dev = &net->uz->pdev->dev;

	if (slot->page)
		dma_unmap_page(dev, slot->dma, slot->len, DMA_TO_DEVICE);
	else
		dma_unmap_single(dev, slot->dma, slot->len, DMA_TO_DEVICE);
}

static void uz_tx_reclaim(struct uz_netdev *net, int budget)
{
	u32 start = net->tx_ci;

	while (net->tx_ci != net->tx_pi) {
		struct uz_eth_desc *d = uz_desc(net->tx_ring, net->tx_ci);
		struct uz_tx_slot *slot =
			&net->tx_slots[net->tx_ci & (UZ_ETH_DEPTH - 1)];
		u32 status = le32_to_cpu(READ_ONCE(d->status));

		if (!(status & UZ_ETH_DONE))
			break;
		uz_tx_unmap(net, slot);
		if (slot->skb) {
			if (status & UZ_ETH_ERR_MASK)
				uz_stats_error(&net->tx_stats);
			else
				uz_stats_add(&net->tx_stats, slot->skb->len);
			napi_consume_skb(slot->skb, budget);
			slot->skb = NULL;
		}
		net->tx_ci = (net->tx_ci + 1) & UZ_DB_PI_MASK;
	}
	if (net->tx_ci != start && netif_queue_stopped(net->ndev) &&
	    uz_tx_free(net) > MAX_SKB_FRAGS + 1)
		netif_wake_queue(net->ndev);
}

static void uz_tx_put(struct uz_netdev *net, dma_addr_t dma, u32 len,
		      bool page, bool more)
{
	struct uz_eth_desc *d = uz_desc(net->tx_ring, net->tx_pi);
	struct uz_tx_slot *slot = &net->tx_slots[net->tx_pi & (UZ_ETH_DEPTH - 1)];

	slot->dma = dma;
	slot->len = len;
	slot->page = page;
	slot->skb = NULL;
	d->addr = cpu_to_le64(dma);
	d->len = cpu_to_le16(len);
	d->flags = cpu_to_le16(more ? UZ_ETH_TX_MORE : 0);
	d->status = 0;
	net->tx_pi = (net->tx_pi + 1) & UZ_DB_PI_MASK;
}

static netdev_tx_t uz_start_xmit(struct sk_buff *skb, struct net_device *ndev)
{
	struct uz_netdev *net = netdev_priv(ndev);
	struct device *dev = &net->uz->pdev->dev;
	unsigned int nfrags = skb_shinfo(skb)->nr_frags, i;
	u32 first = net->tx_pi;
	dma_addr_t dma;

	if (skb_put_padto(skb, ETH_ZLEN)) {
		uz_stats_error(&net->tx_stats);
		return NETDEV_TX_OK;
	}
	if (uz_tx_free(net) < nfrags + 1) {
		netif_stop_queue(ndev);
		return NETDEV_TX_BUSY;
	}

	dma = dma_map_single(dev, skb->data, skb_headlen(skb), DMA_TO_DEVICE);
	if (dma_mapping_error(dev, dma))
		goto err_drop;
	uz_tx_put(net, dma, skb_headlen(skb), false, nfrags);
	for (i = 0; i < nfrags; i++) {
		const skb_frag_t *frag = &skb_shinfo(skb)->frags[i];

		dma = skb_frag_dma_map(dev, frag, 0, skb_frag_size(frag),
				       DMA_TO_DEVICE);
		if (dma_mapping_error(dev, dma))
			goto err_unmap;
		uz_tx_put(net, dma, skb_frag_size(frag), true, i + 1 < nfrags);
	}
	/* The skb is freed when the frame's last descriptor completes. */
	net->tx_slots[(net->tx_pi - 1) & (UZ_ETH_DEPTH - 1)].skb = skb;
	skb_tx_timestamp(skb);

	dma_wmb();
	uz_ring_db(net->uz, net->tx_db, net->tx_pi);
	if (uz_tx_free(net) < MAX_SKB_FRAGS + 1)
		netif_stop_queue(ndev);
	return NETDEV_TX_OK;

err_unmap:
	while (net->tx_pi != first) {
		net->tx_pi = (net->tx_pi - 1) & UZ_DB_PI_MASK;
		uz_tx_unmap(net, &net->tx_slots[net->tx_pi & (UZ_ETH_DEPTH - 1)]);
	}
err_drop:
	uz_stats_error(&net->tx_stats);
	dev_kfree_skb_any(skb);
	return NETDEV_TX_OK;
}

static void uz_tx_free_all(struct uz_netdev *net)
{
	while (net->tx_ci != net->tx_pi) {
		struct uz_tx_slot *slot =
			&net->tx_slots[net->tx_ci & (UZ_ETH_DEPTH - 1)];

		uz_tx_unmap(net, slot);
		if (slot->skb)
			dev_kfree_skb_any(slot->skb);
		slot->skb = NULL;
		net->tx_ci = (net->tx_ci + 1) & UZ_DB_PI_MASK;
	}
}

/* ---- NAPI and interrupt ---- */

static int uz_napi_poll(struct napi_struct *napi, int budget)
{
	struct uz_netdev *net = container_of(napi, struct uz_netdev, napi);
	int done = 0;

	uz_eq_poll(net->uz);
	if (netif_running(net->ndev) && net->tx_ring) {
		uz_tx_reclaim(net, budget);
		done = uz_rx_poll(net, budget);
	}
	if (done < budget && napi_complete_done(napi, done))
		uz_eq_arm(net->uz);
	return done;
}

/*
 * The EQ is armed again only by a poll, and an EQ interrupt that comes
 * while NAPI is disabled (uz_open, uz_stop) schedules nothing: poll once
 * after enabling, or the EQ stays unarmed and the NIC silent.
 */
static void uz_napi_enable(struct uz_netdev *net)
{
	napi_enable(&net->napi);
	local_bh_disable();
	napi_schedule(&net->napi);
	local_bh_enable();
}

/* The refill runs where the ring is NAPI's: in a poll. */
static void uz_refill_work(struct work_struct *work)
{
	struct uz_netdev *net = container_of(to_delayed_work(work),
					     struct uz_netdev, refill_work);

	local_bh_disable();
	napi_schedule(&net->napi);
	local_bh_enable();
}

static irqreturn_t uz_eq_irq(int irq, void *data)
{
	struct uz_netdev *net = data;

	napi_schedule(&net->napi);
	return IRQ_HANDLED;
}

/* ---- queues ---- */

static int uz_eth_queue(struct uz_netdev *net, u8 opcode, dma_addr_t ring,
			u32 *db)
{
	struct uz_admin_cmd cmd = { .opcode = opcode };
	struct uz_admin_cqe cqe;
	int err;

	cmd.create_eth_queue.ring_addr = cpu_to_le64(ring);
	cmd.create_eth_queue.log_depth = UZ_ETH_LOG_DEPTH;
	cmd.create_eth_queue.eqn = cpu_to_le32(net->uz->eq.eqn);
	err = uz_admin_exec(net->uz, &cmd, &cqe);
	if (!err)
		*db = le32_to_cpu(cqe.out1);
	return err;
}

static int uz_set_mtu_cmd(struct uz_dev *uz, u32 mtu)
{
	struct uz_admin_cmd cmd = { .opcode = UZ_CMD_SET_MTU };

	cmd.set_mtu.mtu = cpu_to_le32(mtu);
	return uz_admin_exec(uz, &cmd, NULL);
}

static int uz_open(struct net_device *ndev)
{
	struct uz_netdev *net = netdev_priv(ndev);
	struct device *dev = &net->uz->pdev->dev;
	size_t ring_size = UZ_ETH_DEPTH * sizeof(struct uz_eth_desc);
	int err;

	/* NAPI must not see the rings before they are complete. */
	napi_disable(&net->napi);
	err = uz_set_mtu_cmd(net->uz, ndev->mtu);
	if (err)
		goto err_napi;
	net->rx_buf_len = UZ_ETH_FRAME_MAX(ndev->mtu);
	net->tx_ring = dma_alloc_coherent(dev, ring_size, &net->tx_dma,
					  GFP_KERNEL);
	net->rx_ring = dma_alloc_coherent(dev, ring_size, &net->rx_dma,
					  GFP_KERNEL);
	net->tx_slots = kcalloc(UZ_ETH_DEPTH, sizeof(*net->tx_slots),
				GFP_KERNEL);
	net->rx_slots = kcalloc(UZ_ETH_DEPTH, sizeof(*net->rx_slots),
				GFP_KERNEL);
	if (!net->tx_ring || !net->rx_ring || !net->tx_slots ||
	    !net->rx_slots) {
		err = -ENOMEM;
		goto err_free;
	}
	net->tx_pi = 0;
	net->tx_ci = 0;
	net->rx_pi = 0;
	net->rx_ci = 0;

	err = uz_eth_queue(net, UZ_CMD_CREATE_ETH_TXQ, net->tx_dma, &net->tx_db);
	if (err)
		goto err_free;
	err = uz_eth_queue(net, UZ_CMD_CREATE_ETH_RXQ, net->rx_dma, &net->rx_db);
	if (err)
		goto err_destroy_tx;

	uz_rx_refill(net);
	uz_napi_enable(net);
	netif_start_queue(ndev);
	return 0;

err_destroy_tx:
	uz_admin_destroy(net->uz, UZ_CMD_DESTROY_ETH_TXQ, 0);
err_free:
	kfree(net->rx_slots);
	kfree(net->tx_slots);
	if (net->rx_ring)
		dma_free_coherent(dev, ring_size, net->rx_ring, net->rx_dma);
	if (net->tx_ring)
		dma_free_coherent(dev, ring_size, net->tx_ring, net->tx_dma);
	net->tx_ring = NULL;
	net->rx_ring = NULL;
err_napi:
	uz_napi_enable(net);
	return err;
}

static int uz_stop(struct net_device *ndev)
{
	struct uz_netdev *net = netdev_priv(ndev);
	struct device *dev = &net->uz->pdev->dev;
	size_t ring_size = UZ_ETH_DEPTH * sizeof(struct uz_eth_desc);

	netif_stop_queue(ndev);
	cancel_delayed_work_sync(&net->refill_work);
	napi_disable(&net->napi);
	/* After the destroy commands the device no longer touches the rings. */
	uz_admin_destroy(net->uz, UZ_CMD_DESTROY_ETH_TXQ, 0);
	uz_admin_destroy(net->uz, UZ_CMD_DESTROY_ETH_RXQ, 0);
	uz_tx_free_all(net);
	uz_rx_free(net);
	kfree(net->tx_slots);
	kfree(net->rx_slots);
	dma_free_coherent(dev, ring_size, net->tx_ring, net->tx_dma);
	dma_free_coherent(dev, ring_size, net->rx_ring, net->rx_dma);
	net->tx_ring = NULL;
	net->rx_ring = NULL;
	net->tx_slots = NULL;
	net->rx_slots = NULL;
	uz_napi_enable(net);
	return 0;
}

static int uz_change_mtu(struct net_device *ndev, int mtu)
{
	bool running = netif_running(ndev);
	int err = 0;

	/* RX buffers are sized for the MTU: rebuild the rings around it. */
	if (running)
		uz_stop(ndev);
	WRITE_ONCE(ndev->mtu, mtu);
	if (running)
		err = uz_open(ndev);
	return err;
}

static int uz_set_mac_address(struct net_device *ndev, void *p)
{
	struct uz_netdev *net = netdev_priv(ndev);
	struct uz_admin_cmd cmd = { .opcode = UZ_CMD_SET_MAC };
	struct sockaddr *addr = p;
	int err;

	if (!is_valid_ether_addr(addr->sa_data))
		return -EADDRNOTAVAIL;
	memcpy(cmd.set_mac.mac, addr->sa_data, ETH_ALEN);
	err = uz_admin_exec(net->uz, &cmd, NULL);
	if (!err)
		eth_hw_addr_set(ndev, addr->sa_data);
	return err;
}

static void uz_get_stats64(struct net_device *ndev,
			   struct rtnl_link_stats64 *stats)
{
	struct uz_netdev *net = netdev_priv(ndev);
	unsigned int start;

	do {
		start = u64_stats_fetch_begin(&net->tx_stats.syncp);
		stats->tx_packets = net->tx_stats.packets;
		stats->tx_bytes = net->tx_stats.bytes;
		stats->tx_errors = net->tx_stats.errors;
	} while (u64_stats_fetch_retry(&net->tx_stats.syncp, start));
	do {
		start = u64_stats_fetch_begin(&net->rx_stats.syncp);
		stats->rx_packets = net->rx_stats.packets;
		stats->rx_bytes = net->rx_stats.bytes;
		stats->rx_errors = net->rx_stats.errors;
	} while (u64_stats_fetch_retry(&net->rx_stats.syncp, start));
}

static const struct net_device_ops uz_netdev_ops = {
	.ndo_change_mtu		= uz_change_mtu,
	.ndo_get_stats64	= uz_get_stats64,
	.ndo_open		= uz_open,
	.ndo_set_mac_address	= uz_set_mac_address,
	.ndo_start_xmit		= uz_start_xmit,
	.ndo_stop		= uz_stop,
	.ndo_validate_addr	= eth_validate_addr,
};

static void uz_get_drvinfo(struct net_device *ndev,
			   struct ethtool_drvinfo *info)
{
	struct uz_netdev *net = netdev_priv(ndev);
	struct uz_dev *uz = net->uz;

	strscpy(info->driver, DRV_NAME, sizeof(info->driver));
	snprintf(info->fw_version, sizeof(info->fw_version), "%u.%u",
		 uz->version >> 16, uz->version & 0xffff);
	strscpy(info->bus_info, pci_name(uz->pdev), sizeof(info->bus_info));
}

/* Direct-attach copper link modes, the closest thing to an emulated cable. */
static const struct {
	u32 speed;
	enum ethtool_link_mode_bit_indices mode;
} uz_link_modes[] = {
	{ SPEED_10000, ETHTOOL_LINK_MODE_10000baseCR_Full_BIT },
	{ SPEED_25000, ETHTOOL_LINK_MODE_25000baseCR_Full_BIT },
	{ SPEED_40000, ETHTOOL_LINK_MODE_40000baseCR4_Full_BIT },
	{ SPEED_50000, ETHTOOL_LINK_MODE_50000baseCR2_Full_BIT },
	{ SPEED_100000, ETHTOOL_LINK_MODE_100000baseCR4_Full_BIT },
	{ SPEED_200000, ETHTOOL_LINK_MODE_200000baseCR4_Full_BIT },
	{ SPEED_400000, ETHTOOL_LINK_MODE_400000baseCR4_Full_BIT },
};

/*
 * The device's advertised rate.  ib_core derives the RoCE port's speed and
 * width from it (ib_get_eth_speed); it does not limit the emulated link.
 */
static int uz_get_link_ksettings(struct net_device *ndev,
				 struct ethtool_link_ksettings *ks)
{
	struct uz_netdev *net = netdev_priv(ndev);
	u32 speed = net->uz->link_speed;
	int i;

	ks->base.port = PORT_OTHER;
	ks->base.autoneg = AUTONEG_DISABLE;
	for (i = 0; i < ARRAY_SIZE(uz_link_modes); i++) {
		if (uz_link_modes[i].speed == speed) {
			__set_bit(uz_link_modes[i].mode, ks->link_modes.supported);
			ks->base.port = PORT_DA;
		}
	}
	if (speed && netif_carrier_ok(ndev)) {
		ks->base.speed = speed;
		ks->base.duplex = DUPLEX_FULL;
	} else {
		ks->base.speed = SPEED_UNKNOWN;
		ks->base.duplex = DUPLEX_UNKNOWN;
	}
	return 0;
}

static const struct ethtool_ops uz_ethtool_ops = {
	.get_drvinfo		= uz_get_drvinfo,
	.get_link		= ethtool_op_get_link,
	.get_link_ksettings	= uz_get_link_ksettings,
};

void uz_netdev_link_event(struct uz_dev *uz, bool up)
{
	if (!uz->net)
		return;
	if (up)
		netif_carrier_on(uz->net->ndev);
	else
		netif_carrier_off(uz->net->ndev);
}

int uz_netdev_init(struct uz_dev *uz)
{
	struct net_device *ndev;
	struct uz_netdev *net;
	u8 mac[ETH_ALEN];
	u32 lo, hi;
	int err;

	ndev = alloc_etherdev(sizeof(*net));
	if (!ndev)
		return -ENOMEM;
	SET_NETDEV_DEV(ndev, &uz->pdev->dev);
	net = netdev_priv(ndev);
	net->uz = uz;
	net->ndev = ndev;
	u64_stats_init(&net->tx_stats.syncp);
	u64_stats_init(&net->rx_stats.syncp);

	ndev->netdev_ops = &uz_netdev_ops;
	ndev->ethtool_ops = &uz_ethtool_ops;
	ndev->features |= NETIF_F_SG;
	ndev->hw_features |= NETIF_F_SG;
	ndev->min_mtu = UZ_MIN_MTU;
	ndev->max_mtu = UZ_MAX_MTU;
	lo = uz_rd(uz, UZ_REG_MAC_LO);
	hi = uz_rd(uz, UZ_REG_MAC_HI);
	mac[0] = lo;
	mac[1] = lo >> 8;
	mac[2] = lo >> 16;
	mac[3] = lo >> 24;
	mac[4] = hi;
	mac[5] = hi >> 8;
	eth_hw_addr_set(ndev, mac);

	/* NAPI stays enabled while the netdev exists: link events need it. */
	netif_napi_add(ndev, &net->napi, uz_napi_poll);
	INIT_DELAYED_WORK(&net->refill_work, uz_refill_work);
	napi_enable(&net->napi);
	err = request_irq(pci_irq_vector(uz->pdev, UZ_MSIX_EQ), uz_eq_irq, 0,
			  "uzura-eq", net);
	if (err)
		goto err_napi;

	netif_carrier_off(ndev);
	uz->net = net;
	err = register_netdev(ndev);
	if (err)
		goto err_irq;
	if (uz_rd(uz, UZ_REG_STATUS) & UZ_STATUS_LINK_UP)
		netif_carrier_on(ndev);
	uz_eq_arm(uz);
	return 0;

err_irq:
	uz->net = NULL;
	free_irq(pci_irq_vector(uz->pdev, UZ_MSIX_EQ), net);
err_napi:
	napi_disable(&net->napi);
	netif_napi_del(&net->napi);
	free_netdev(ndev);
	return err;
}

void uz_netdev_fini(struct uz_dev *uz)
{
	struct uz_netdev *net = uz->net;

	unregister_netdev(net->ndev);
	free_irq(pci_irq_vector(uz->pdev, UZ_MSIX_EQ), net);
	napi_disable(&net->napi);
	netif_napi_del(&net->napi);
	uz->net = NULL;
	free_netdev(net->ndev);
}
