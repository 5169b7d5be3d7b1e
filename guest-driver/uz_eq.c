// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * uzura RDMA NIC driver: the event queue.
 *
 * One EQ carries the asynchronous events, the Ethernet events and the
 * completion events of every CQ.  Its interrupt only schedules NAPI; the
 * poll loop consumes the events and re-arms the EQ when it is done.
 */
#include <linux/dma-mapping.h>

#include "uz.h"

static u32 uz_eq_depth(void)
{
	return 1u << UZ_EQ_LOG_DEPTH;
}

int uz_eq_init(struct uz_dev *uz)
{
	struct uz_admin_cmd cmd = { .opcode = UZ_CMD_CREATE_EQ };
	struct uz_admin_cqe cqe;
	struct uz_eq *eq = &uz->eq;
	int err;

	eq->ring = dmam_alloc_coherent(&uz->pdev->dev,
				       uz_eq_depth() * sizeof(*eq->ring),
				       &eq->dma, GFP_KERNEL);
	if (!eq->ring)
		return -ENOMEM;
	cmd.create_eq.ring_addr = cpu_to_le64(eq->dma);
	cmd.create_eq.log_depth = UZ_EQ_LOG_DEPTH;
	cmd.create_eq.vector = cpu_to_le16(UZ_MSIX_EQ);
	cmd.create_eq.flags = UZ_EQ_F_ASYNC;
	err = uz_admin_exec(uz, &cmd, &cqe);
	if (err)
		return err;
	eq->eqn = le32_to_cpu(cqe.out0);
	eq->db = le32_to_cpu(cqe.out1);
	eq->ci = 0;
	return 0;
}

void uz_eq_fini(struct uz_dev *uz)
{
	uz_admin_destroy(uz, UZ_CMD_DESTROY_EQ, uz->eq.eqn);
}

/* Report consumption and ask for an interrupt at the next event. */
void uz_eq_arm(struct uz_dev *uz)
{
	uz_ring_db(uz, uz->eq.db, uz->eq.ci | UZ_DB_ARM);
}

/* Consume the pending events; returns true if there were any. */
bool uz_eq_poll(struct uz_dev *uz)
{
	struct uz_eq *eq = &uz->eq;
	bool any = false;

	for (;;) {
		struct uz_eqe *eqe = &eq->ring[eq->ci & (uz_eq_depth() - 1)];
		u32 phase = ((eq->ci >> UZ_EQ_LOG_DEPTH) & 1) ? 0 : UZ_EQE_PHASE;

		if ((le32_to_cpu(READ_ONCE(eqe->flags)) & UZ_EQE_PHASE) != phase)
			break;
		dma_rmb();
		switch (eqe->type) {
		case UZ_EQE_PORT_ACTIVE:
		case UZ_EQE_PORT_DOWN:
			uz_netdev_link_event(uz, eqe->type == UZ_EQE_PORT_ACTIVE);
			uz_ib_event(uz, eqe);
			break;
		case UZ_EQE_COMPLETION:
		case UZ_EQE_QP_FATAL:
		case UZ_EQE_QP_REQ_ERR:
		case UZ_EQE_QP_ACCESS_ERR:
		case UZ_EQE_CQ_ERROR:
		case UZ_EQE_SRQ_LIMIT:
		case UZ_EQE_QP_LAST_WQE:
			uz_ib_event(uz, eqe);
			break;
		case UZ_EQE_PAGE_FAULT:
			uz_odp_fault_event(uz, le32_to_cpu(eqe->handle),
					   le32_to_cpu(eqe->data));
			break;
		case UZ_EQE_ETH_TX:
		case UZ_EQE_ETH_RX:
			break;		/* the rings themselves say what is done */
		case UZ_EQE_EQ_OVERFLOW:
			dev_warn_ratelimited(&uz->pdev->dev, "event queue overflowed\n");
			break;
		case UZ_EQE_DEVICE_FATAL:
			dev_err(&uz->pdev->dev, "device fatal error 0x%x\n",
				le32_to_cpu(eqe->data));
			break;
		default:
			dev_dbg(&uz->pdev->dev, "event 0x%02x ignored\n", eqe->type);
			break;
		}
		eq->ci = (eq->ci + 1) & UZ_DB_CI_MASK;
		any = true;
	}
	return any;
}
