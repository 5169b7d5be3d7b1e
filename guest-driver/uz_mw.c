// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * uzura: memory windows (docs/device-spec.md 8.10.3).  The device keeps
 * them with the MRs, under keys of the same form; user space binds them
 * with BIND_MW work requests of its own.
 */
#include "uz.h"

int uz_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata)
{
	struct uz_dev *uz = ibdev_to_uz(ibmw->device);
	struct uz_admin_cmd cmd = { .opcode = UZ_CMD_ALLOC_MW };
	struct uz_cmd_alloc_mw *c = (struct uz_cmd_alloc_mw *)cmd.raw;
	struct uz_pd *pd = to_uz_pd(ibmw->pd);
	struct uz_admin_cqe cqe;
	int err;

	if (!(uz->caps & UZ_CAP_MW)) {
		ibdev_dbg(ibmw->device, "memory windows not supported\n");
		return -EOPNOTSUPP;
	}
	if (!uz_udata_known(ibmw->device, udata, 0, "MW"))
		return -EOPNOTSUPP;
	if (ibmw->type != IB_MW_TYPE_1 && ibmw->type != IB_MW_TYPE_2) {
		ibdev_dbg(ibmw->device, "MW type %d not supported\n",
			  ibmw->type);
		return -EINVAL;
	}
	c->pdn = cpu_to_le32(pd->pdn);
	c->uctx = cpu_to_le32(pd->uctx);
	c->type = ibmw->type == IB_MW_TYPE_1 ? UZ_MW_TYPE_1 : UZ_MW_TYPE_2;
	/* A fresh key byte, from the counter the MRs take theirs from. */
	c->key = atomic_inc_return(&uz->ib->mr_key) & 0xff;
	err = uz_admin_exec(uz, &cmd, &cqe);
	if (err)
		return err;
	ibmw->rkey = le32_to_cpu(cqe.out0);
	return 0;
}

int uz_dealloc_mw(struct ib_mw *ibmw)
{
	return uz_obj_cmd(ibdev_to_uz(ibmw->device), UZ_CMD_DEALLOC_MW,
			  ibmw->rkey, to_uz_pd(ibmw->pd)->uctx);
}
