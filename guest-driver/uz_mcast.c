// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * uzura: UD multicast (docs/device-spec.md 8.14).  ib_core checks that the
 * QP is UD and the GID a multicast address; the device keeps the groups
 * and refuses what it cannot address (an IPv6 group) or hold.
 */
#include "uz.h"

static int uz_mcast_cmd(struct ib_qp *ibqp, union ib_gid *gid, u8 opcode)
{
	struct uz_dev *uz = ibdev_to_uz(ibqp->device);
	struct uz_admin_cmd cmd = { .opcode = opcode };
	struct uz_cmd_mcast *c = (struct uz_cmd_mcast *)cmd.raw;
	struct uz_qp *qp = to_uz_qp(ibqp);
	struct uz_admin_cqe cqe;

	if (!(uz->caps & UZ_CAP_MCAST)) {
		ibdev_dbg(ibqp->device, "multicast not supported\n");
		return -EOPNOTSUPP;
	}
	if (!ipv6_addr_v4mapped((struct in6_addr *)gid->raw)) {
		ibdev_dbg(ibqp->device, "multicast group %pI6: IPv4 only\n",
			  gid->raw);
		return -EINVAL;
	}
	memcpy(c->mgid, gid->raw, sizeof(c->mgid));
	c->qpn = cpu_to_le32(qp->qpn);
	c->uctx = cpu_to_le32(qp->uctx);
	return uz_admin_exec(uz, &cmd, &cqe);
}

int uz_attach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid)
{
	return uz_mcast_cmd(ibqp, gid, UZ_CMD_ATTACH_MCAST);
}

int uz_detach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid)
{
	return uz_mcast_cmd(ibqp, gid, UZ_CMD_DETACH_MCAST);
}
