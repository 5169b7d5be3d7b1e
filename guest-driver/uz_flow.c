// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * uzura RDMA NIC driver: flow steering rules of raw packet QPs
 * (docs/device-spec.md 8.18).
 *
 * ib_core hands a rule over as a list of specs, one per header; the device
 * matches one struct uz_flow_spec, which each spec fills its part of.  A
 * rule the device cannot match exactly (another header, a field it does
 * not compare, a flag or a priority) is refused rather than widened, so a
 * QP never receives frames its rule did not ask for.  ib_core checks the
 * port number, CAP_NET_RAW and that the QP is UD or raw; the device steers
 * to raw QPs only.
 */
#include <linux/dma-mapping.h>
#include <linux/etherdevice.h>

#include "uz.h"

struct uz_flow {
	struct ib_flow ibflow;	/* ib_core fills it in */
	u32 handle;		/* the device's rule */
	u32 uctx;
};

static struct uz_flow *to_uz_flow(struct ib_flow *ibflow)
{
	return container_of(ibflow, struct uz_flow, ibflow);
}

/* Which specs a rule already has: at most one of each header. */
enum {
	UZ_FLOW_HAS_ETH = BIT(0),
	UZ_FLOW_HAS_IP = BIT(1),
	UZ_FLOW_HAS_L4 = BIT(2),
};

static void uz_flow_eth(struct uz_flow_spec *s, const struct ib_flow_spec_eth *e)
{
	/* 16-bit fields stay in network order, as in the frame. */
	ether_addr_copy(s->dmac, e->val.dst_mac);
	ether_addr_copy(s->dmac_mask, e->mask.dst_mac);
	ether_addr_copy(s->smac, e->val.src_mac);
	ether_addr_copy(s->smac_mask, e->mask.src_mac);
	s->ethertype = (__force u16)e->val.ether_type;
	s->ethertype_mask = (__force u16)e->mask.ether_type;
	s->vlan_tci = (__force u16)e->val.vlan_tag;
	s->vlan_tci_mask = (__force u16)e->mask.vlan_tag;
}

static int uz_flow_ipv4(struct ib_device *ibdev, struct uz_flow_spec *s,
			const struct ib_flow_spec_ipv4 *ip)
{
	const struct ib_flow_ipv4_filter *m = &ip->mask;

	if (m->tos || m->ttl || m->flags) {
		ibdev_dbg(ibdev,
			  "flow: IPv4 masks tos 0x%x, ttl 0x%x, flags 0x%x: the device matches none\n",
			  m->tos, m->ttl, m->flags);
		return -EOPNOTSUPP;
	}
	s->ip_ver = 4;
	/* IPv4 addresses in the first 4 bytes */
	memcpy(s->src_ip, &ip->val.src_ip, sizeof(ip->val.src_ip));
	memcpy(s->src_ip_mask, &m->src_ip, sizeof(m->src_ip));
	memcpy(s->dst_ip, &ip->val.dst_ip, sizeof(ip->val.dst_ip));
	memcpy(s->dst_ip_mask, &m->dst_ip, sizeof(m->dst_ip));
	s->ip_proto = ip->val.proto;
	s->ip_proto_mask = m->proto;
	return 0;
}

static int uz_flow_ipv6(struct ib_device *ibdev, struct uz_flow_spec *s,
			const struct ib_flow_spec_ipv6 *ip)
{
	const struct ib_flow_ipv6_filter *m = &ip->mask;

	if (m->flow_label || m->traffic_class || m->hop_limit) {
		ibdev_dbg(ibdev,
			  "flow: IPv6 masks flow label 0x%x, traffic class 0x%x, hop limit 0x%x: the device matches none\n",
			  be32_to_cpu(m->flow_label), m->traffic_class,
			  m->hop_limit);
		return -EOPNOTSUPP;
	}
	s->ip_ver = 6;
	memcpy(s->src_ip, ip->val.src_ip, sizeof(s->src_ip));
	memcpy(s->src_ip_mask, m->src_ip, sizeof(s->src_ip_mask));
	memcpy(s->dst_ip, ip->val.dst_ip, sizeof(s->dst_ip));
	memcpy(s->dst_ip_mask, m->dst_ip, sizeof(s->dst_ip_mask));
	s->ip_proto = ip->val.next_hdr;
	s->ip_proto_mask = m->next_hdr;
	return 0;
}

static void uz_flow_l4(struct uz_flow_spec *s, u8 l4,
		       const struct ib_flow_spec_tcp_udp *p)
{
	s->l4 = l4;
	s->sport = (__force u16)p->val.src_port;
	s->sport_mask = (__force u16)p->mask.src_port;
	s->dport = (__force u16)p->val.dst_port;
	s->dport_mask = (__force u16)p->mask.dst_port;
}

/* The specs of @attr as one device rule. */
static int uz_flow_parse(struct ib_device *ibdev, struct uz_flow_spec *s,
			 const struct ib_flow_attr *attr)
{
	const void *p = attr + 1;
	unsigned int has = 0, kind;
	int i, err = 0;

	for (i = 0; i < attr->num_of_specs; i++) {
		const union ib_flow_spec *spec = p;

		switch (spec->type) {
		case IB_FLOW_SPEC_ETH:
			kind = UZ_FLOW_HAS_ETH;
			break;
		case IB_FLOW_SPEC_IPV4:
		case IB_FLOW_SPEC_IPV6:
			kind = UZ_FLOW_HAS_IP;
			break;
		case IB_FLOW_SPEC_TCP:
		case IB_FLOW_SPEC_UDP:
			kind = UZ_FLOW_HAS_L4;
			break;
		default:
			ibdev_dbg(ibdev, "flow: spec type 0x%x not supported\n",
				  spec->type);
			return -EOPNOTSUPP;
		}
		if (has & kind) {
			ibdev_dbg(ibdev,
				  "flow: a second spec of type 0x%x's layer\n",
				  spec->type);
			return -EOPNOTSUPP;
		}
		has |= kind;

		switch (spec->type) {
		case IB_FLOW_SPEC_ETH:
			uz_flow_eth(s, &spec->eth);
			break;
		case IB_FLOW_SPEC_IPV4:
			err = uz_flow_ipv4(ibdev, s, &spec->ipv4);
			break;
		case IB_FLOW_SPEC_IPV6:
			err = uz_flow_ipv6(ibdev, s, &spec->ipv6);
			break;
		case IB_FLOW_SPEC_TCP:
			uz_flow_l4(s, UZ_FLOW_L4_TCP, &spec->tcp_udp);
			break;
		case IB_FLOW_SPEC_UDP:
			uz_flow_l4(s, UZ_FLOW_L4_UDP, &spec->tcp_udp);
			break;
		}
		if (err)
			return err;
		p += spec->size;
	}
	return 0;
}

struct ib_flow *uz_create_flow(struct ib_qp *ibqp, struct ib_flow_attr *attr,
			       struct ib_udata *udata)
{
	struct ib_device *ibdev = ibqp->device;
	struct uz_dev *uz = ibdev_to_uz(ibdev);
	struct uz_admin_cmd cmd = { .opcode = UZ_CMD_CREATE_FLOW };
	struct uz_cmd_create_flow *c = (struct uz_cmd_create_flow *)cmd.raw;
	struct uz_qp *qp = to_uz_qp(ibqp);
	struct uz_flow_spec *spec;
	struct uz_admin_cqe cqe;
	struct uz_flow *flow;
	dma_addr_t dma;
	int err;

	/* An RSS QP's rules spread frames over its WQs (uz_rss.c). */
	if (!(uz->caps & UZ_CAP_RAW) ||
	    (qp->type != UZ_QPT_RAW && qp->type != UZ_QPT_RSS)) {
		ibdev_dbg(ibdev, "flow: QP %u is not a raw packet QP\n",
			  qp->qpn);
		return ERR_PTR(-EOPNOTSUPP);
	}
	if (attr->type != IB_FLOW_ATTR_NORMAL || attr->flags ||
	    attr->priority || attr->port != 1) {
		ibdev_dbg(ibdev,
			  "flow: type %d, flags 0x%x, priority %u, port %u: only normal rules of port 1, without flags or priority\n",
			  attr->type, attr->flags, attr->priority, attr->port);
		return ERR_PTR(-EOPNOTSUPP);
	}
	if (!uz_udata_known(ibdev, udata, 0, "flow"))
		return ERR_PTR(-EOPNOTSUPP);

	flow = kzalloc(sizeof(*flow), GFP_KERNEL);
	if (!flow)
		return ERR_PTR(-ENOMEM);
	spec = dma_alloc_coherent(&uz->pdev->dev, sizeof(*spec), &dma,
				  GFP_KERNEL);
	if (!spec) {
		err = -ENOMEM;
		goto err_flow;
	}
	err = uz_flow_parse(ibdev, spec, attr);
	if (err)
		goto err_spec;

	c->spec_addr = cpu_to_le64(dma);
	c->qpn = cpu_to_le32(qp->qpn);
	c->uctx = cpu_to_le32(qp->uctx);
	err = uz_admin_exec(uz, &cmd, &cqe);
	if (err) {
		ibdev_dbg(ibdev, "flow: QP %u: CREATE_FLOW failed: %d\n",
			  qp->qpn, err);
		goto err_spec;
	}
	flow->handle = le32_to_cpu(cqe.out0);
	flow->uctx = qp->uctx;
	dma_free_coherent(&uz->pdev->dev, sizeof(*spec), spec, dma);
	return &flow->ibflow;

err_spec:
	dma_free_coherent(&uz->pdev->dev, sizeof(*spec), spec, dma);
err_flow:
	kfree(flow);
	return ERR_PTR(err);
}

int uz_destroy_flow(struct ib_flow *ibflow)
{
	struct uz_flow *flow = to_uz_flow(ibflow);
	struct uz_dev *uz = ibdev_to_uz(ibflow->device);
	int err;

	err = uz_obj_cmd(uz, UZ_CMD_DESTROY_FLOW, flow->handle, flow->uctx);
	/* A rule the device keeps holds its QP, which then cannot go. */
	if (err)
		dev_err(&uz->pdev->dev, "destroying flow rule %u failed: %d\n",
			flow->handle, err);
	kfree(flow);
	return 0;
}
