// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * uzura RDMA NIC: PCI driver.
 *
 * Probe maps the BARs, checks the device's identification, resets it,
 * enables MSI-X, starts the admin queue and the event queue and registers
 * the Ethernet netdev and, on top of it, the ib_device; remove undoes this
 * in reverse.
 */
#include <linux/module.h>
#include <linux/pci.h>
#include <linux/io.h>
#include <linux/interrupt.h>
#include <linux/iopoll.h>

#include "uz.h"

static int uz_reset(struct uz_dev *uz)
{
	u32 status;

	uz_wr(uz, UZ_REG_RESET, UZ_RESET_KEY);
	return readx_poll_timeout(ioread32, uz->regs + UZ_REG_STATUS, status,
				  status & UZ_STATUS_READY, 10, 100000);
}

static int uz_check_ident(struct uz_dev *uz)
{
	struct device *dev = &uz->pdev->dev;
	u32 magic = uz_rd(uz, UZ_REG_MAGIC);

	if (magic != UZ_MAGIC) {
		dev_err(dev, "bad magic 0x%08x\n", magic);
		return -ENODEV;
	}
	uz->version = uz_rd(uz, UZ_REG_VERSION);
	if ((uz->version >> 16) != UZ_VERSION_MAJOR) {
		dev_err(dev, "unsupported device version %u.%u\n",
			uz->version >> 16, uz->version & 0xffff);
		return -ENODEV;
	}
	uz->caps = uz_rd(uz, UZ_REG_CAPS);
	if (!(uz->caps & UZ_CAP_MSIX) || !(uz->caps & UZ_CAP_ADMIN) ||
	    !(uz->caps & UZ_CAP_ETH)) {
		dev_err(dev, "device lacks MSI-X, admin queue or Ethernet (caps 0x%x)\n",
			uz->caps);
		return -ENODEV;
	}
	/* A property of the device, the same after every reset. */
	if (uz->caps & UZ_CAP_LINK_SPEED)
		uz->link_speed = uz_rd(uz, UZ_REG_LINK_SPEED);
	return 0;
}

static int uz_query_device(struct uz_dev *uz)
{
	struct device *dev = &uz->pdev->dev;
	struct uz_admin_cmd cmd = { .opcode = UZ_CMD_QUERY_DEVICE };
	struct uz_device_attr *attr;
	dma_addr_t dma;
	int err;

	attr = dma_alloc_coherent(dev, sizeof(*attr), &dma, GFP_KERNEL);
	if (!attr)
		return -ENOMEM;
	cmd.query_device.buf_addr = cpu_to_le64(dma);
	cmd.query_device.buf_len = cpu_to_le32(sizeof(*attr));
	err = uz_admin_exec(uz, &cmd, NULL);
	if (!err)
		uz->attr = *attr;
	dma_free_coherent(dev, sizeof(*attr), attr, dma);
	return err;
}

static int uz_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct device *dev = &pdev->dev;
	struct uz_dev *uz;
	int err;

	uz = devm_kzalloc(dev, sizeof(*uz), GFP_KERNEL);
	if (!uz)
		return -ENOMEM;
	uz->pdev = pdev;
	pci_set_drvdata(pdev, uz);

	err = pcim_enable_device(pdev);
	if (err)
		return err;
	err = dma_set_mask_and_coherent(dev, DMA_BIT_MASK(64));
	if (err)
		return err;
	uz->regs = pcim_iomap_region(pdev, UZ_BAR_REGS, DRV_NAME);
	if (IS_ERR(uz->regs))
		return PTR_ERR(uz->regs);
	uz->db = pcim_iomap_region(pdev, UZ_BAR_DB, DRV_NAME "-db");
	if (IS_ERR(uz->db))
		return PTR_ERR(uz->db);

	err = uz_check_ident(uz);
	if (err)
		return err;
	err = uz_reset(uz);
	if (err) {
		dev_err(dev, "device did not come out of reset\n");
		return err;
	}
	pci_set_master(pdev);

	/* Vector 0: admin completions; vector 1: the event queue. */
	err = pci_alloc_irq_vectors(pdev, 2, 2, PCI_IRQ_MSIX);
	if (err < 0) {
		dev_err(dev, "cannot enable two MSI-X vectors: %d\n", err);
		goto err_clear_master;
	}
	uz->num_vectors = err;
	err = request_irq(pci_irq_vector(pdev, UZ_MSIX_VEC_ADMIN),
			  uz_admin_irq, 0, "uzura-admin", uz);
	if (err)
		goto err_free_vectors;

	err = uz_admin_init(uz);
	if (err)
		goto err_free_irq;
	err = uz_query_device(uz);
	if (err)
		goto err_admin;
	err = uz_eq_init(uz);
	if (err)
		goto err_admin;
	err = uz_netdev_init(uz);
	if (err)
		goto err_eq;
	err = uz_ib_init(uz);
	if (err)
		goto err_netdev;

	dev_info(dev,
		 "uzura RDMA NIC version %u.%u caps 0x%x, %d MSI-X vectors, mac %pM, link %s, netdev %s\n",
		 uz->version >> 16, uz->version & 0xffff, uz->caps,
		 uz->num_vectors, uz->attr.mac,
		 uz_rd(uz, UZ_REG_STATUS) & UZ_STATUS_LINK_UP ? "up" : "down",
		 netdev_name(uz->net->ndev));
	return 0;

err_netdev:
	uz_netdev_fini(uz);
err_eq:
	uz_eq_fini(uz);
err_admin:
	uz_admin_fini(uz);
err_free_irq:
	free_irq(pci_irq_vector(pdev, UZ_MSIX_VEC_ADMIN), uz);
err_free_vectors:
	pci_free_irq_vectors(pdev);
err_clear_master:
	uz_reset(uz);
	pci_clear_master(pdev);
	return err;
}

static void uz_remove(struct pci_dev *pdev)
{
	struct uz_dev *uz = pci_get_drvdata(pdev);

	uz_ib_fini(uz);
	uz_netdev_fini(uz);
	uz_eq_fini(uz);
	uz_admin_fini(uz);
	/* Quiesce the device before its interrupts and DMA go away. */
	uz_reset(uz);
	free_irq(pci_irq_vector(pdev, UZ_MSIX_VEC_ADMIN), uz);
	pci_free_irq_vectors(pdev);
	pci_clear_master(pdev);
	dev_info(&pdev->dev, "uzura RDMA NIC removed\n");
}

static void uz_shutdown(struct pci_dev *pdev)
{
	struct uz_dev *uz = pci_get_drvdata(pdev);

	/* Stop all DMA before the machine goes down or kexecs. */
	uz_reset(uz);
	pci_clear_master(pdev);
}

static const struct pci_device_id uz_pci_ids[] = {
	{ PCI_DEVICE(UZ_PCI_VENDOR_ID, UZ_PCI_DEVICE_ID) },
	{ }
};
MODULE_DEVICE_TABLE(pci, uz_pci_ids);

static struct pci_driver uz_pci_driver = {
	.name = DRV_NAME,
	.id_table = uz_pci_ids,
	.probe = uz_probe,
	.remove = uz_remove,
	.shutdown = uz_shutdown,
};
module_pci_driver(uz_pci_driver);

MODULE_DESCRIPTION("uzura emulated RDMA NIC");
MODULE_AUTHOR("The uzura developers");
MODULE_LICENSE("GPL");
