// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * uzura RDMA NIC driver: the admin queue.
 *
 * Commands run one at a time under a mutex: the driver places a command,
 * rings the admin doorbell and sleeps until the admin vector fires and the
 * completion's phase bit flips.  Nothing issues commands where it must not
 * sleep: the kernel's AHs need none (uz_create_ah).  The completion must
 * carry the command's id; a command that times out or comes back with
 * another id leaves the ring in a state the driver no longer knows, so the
 * admin queue is declared dead and every later command fails at once
 * with -ENODEV, as efa does.
 */
#include <linux/dma-mapping.h>
#include <linux/interrupt.h>

#include "uz.h"

#define UZ_ADMIN_TIMEOUT	(5 * HZ)

static u32 uz_admin_depth(void)
{
	return 1u << UZ_ADMIN_LOG_DEPTH;
}

irqreturn_t uz_admin_irq(int irq, void *data)
{
	struct uz_dev *uz = data;

	complete(&uz->admin.done);
	return IRQ_HANDLED;
}

static bool uz_admin_cqe_ready(struct uz_admin_cqe *cqe, u8 phase)
{
	return (READ_ONCE(cqe->flags) & UZ_ADMIN_CQE_PHASE) == phase;
}

static int uz_admin_status(struct uz_dev *uz, const struct uz_admin_cmd *cmd,
			   struct uz_admin_cqe *cqe, struct uz_admin_cqe *out)
{
	dma_rmb();
	if (cqe->cmd_id != cmd->cmd_id) {
		dev_err(&uz->pdev->dev,
			"admin command 0x%02x id %u completed as id %u; admin queue dead\n",
			cmd->opcode, le16_to_cpu(cmd->cmd_id),
			le16_to_cpu(cqe->cmd_id));
		uz->admin.dead = true;
		return -EIO;
	}
	if (out)
		*out = *cqe;
	if (cqe->status == UZ_CMD_OK)
		return 0;
	dev_dbg(&uz->pdev->dev, "admin command 0x%02x: status 0x%02x\n",
		cmd->opcode, cqe->status);
	switch (cqe->status) {
	case UZ_CMD_NO_RESOURCES:
		return -ENOMEM;
	case UZ_CMD_BUSY:
		return -EBUSY;
	case UZ_CMD_NOT_SUPPORTED:
	case UZ_CMD_BAD_OPCODE:
		return -EOPNOTSUPP;
	case UZ_CMD_EXISTS:
		return -EEXIST;
	case UZ_CMD_BAD_ADDR:
		return -EFAULT;
	default:
		return -EINVAL;
	}
}

/*
 * Place a command at the producer index and ring the doorbell; returns
 * the completion slot and the phase that marks it done.
 */
static struct uz_admin_cqe *uz_admin_submit(struct uz_dev *uz,
					    struct uz_admin_cmd *cmd, u8 *phase)
{
	struct uz_admin *a = &uz->admin;
	u32 pos;

	lockdep_assert_held(&a->ring_lock);
	pos = a->pi & (uz_admin_depth() - 1);
	*phase = ((a->pi >> UZ_ADMIN_LOG_DEPTH) & 1) ? 0 : UZ_ADMIN_CQE_PHASE;
	cmd->cmd_id = cpu_to_le16(a->next_id++);
	a->sq[pos] = *cmd;
	a->pi = (a->pi + 1) & UZ_DB_PI_MASK;
	/* The command is in memory before the device hears of it. */
	dma_wmb();
	uz_ring_db(uz, UZ_DB_ADMIN, a->pi);
	return &a->cq[pos];
}

int uz_admin_exec(struct uz_dev *uz, struct uz_admin_cmd *cmd,
		  struct uz_admin_cqe *out)
{
	struct uz_admin *a = &uz->admin;
	struct uz_admin_cqe *cqe;
	unsigned long flags;
	u8 phase;
	int err;

	might_sleep();
	mutex_lock(&a->lock);
	if (a->dead) {
		err = -ENODEV;
		goto out;
	}
	reinit_completion(&a->done);
	spin_lock_irqsave(&a->ring_lock, flags);
	cqe = uz_admin_submit(uz, cmd, &phase);
	spin_unlock_irqrestore(&a->ring_lock, flags);

	while (!uz_admin_cqe_ready(cqe, phase)) {
		if (!wait_for_completion_timeout(&a->done, UZ_ADMIN_TIMEOUT) &&
		    !uz_admin_cqe_ready(cqe, phase)) {
			dev_err(&uz->pdev->dev,
				"admin command 0x%02x timed out; admin queue dead\n",
				cmd->opcode);
			a->dead = true;
			err = -ETIMEDOUT;
			goto out;
		}
		reinit_completion(&a->done);
	}
	err = uz_admin_status(uz, cmd, cqe, out);
out:
	mutex_unlock(&a->lock);
	return err;
}

int uz_admin_destroy(struct uz_dev *uz, u8 opcode, u32 handle)
{
	struct uz_admin_cmd cmd = { .opcode = opcode };

	cmd.destroy.handle = cpu_to_le32(handle);
	return uz_admin_exec(uz, &cmd, NULL);
}

int uz_admin_init(struct uz_dev *uz)
{
	struct device *dev = &uz->pdev->dev;
	struct uz_admin *a = &uz->admin;

	mutex_init(&a->lock);
	spin_lock_init(&a->ring_lock);
	init_completion(&a->done);
	a->sq = dmam_alloc_coherent(dev, uz_admin_depth() * sizeof(*a->sq),
				    &a->sq_dma, GFP_KERNEL);
	a->cq = dmam_alloc_coherent(dev, uz_admin_depth() * sizeof(*a->cq),
				    &a->cq_dma, GFP_KERNEL);
	if (!a->sq || !a->cq)
		return -ENOMEM;

	uz_wr(uz, UZ_REG_ADMIN_SQ_LO, lower_32_bits(a->sq_dma));
	uz_wr(uz, UZ_REG_ADMIN_SQ_HI, upper_32_bits(a->sq_dma));
	uz_wr(uz, UZ_REG_ADMIN_CQ_LO, lower_32_bits(a->cq_dma));
	uz_wr(uz, UZ_REG_ADMIN_CQ_HI, upper_32_bits(a->cq_dma));
	uz_wr(uz, UZ_REG_ADMIN_DEPTH, UZ_ADMIN_LOG_DEPTH);
	uz_wr(uz, UZ_REG_ADMIN_CTRL, UZ_ADMIN_CTRL_ENABLE | UZ_ADMIN_CTRL_INTR);
	if (!(uz_rd(uz, UZ_REG_ADMIN_STATUS) & UZ_ADMIN_STATUS_ENABLED)) {
		dev_err(dev, "device refused the admin queue (error %u)\n",
			uz_rd(uz, UZ_REG_ERR_STATUS));
		return -EIO;
	}
	return 0;
}

void uz_admin_fini(struct uz_dev *uz)
{
	uz_wr(uz, UZ_REG_ADMIN_CTRL, 0);
}
