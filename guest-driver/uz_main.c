// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * uzura RDMA NIC: PCI driver.
 *
 * Probe maps the register BAR, checks the device's identification, resets
 * it and enables MSI-X; remove undoes this in reverse.  The netdev and the
 * ib_device are registered on top of this in later stages.
 */
#include <linux/module.h>
#include <linux/pci.h>
#include <linux/io.h>
#include <linux/iopoll.h>

#include "uzura-hw.h"

#define DRV_NAME "uzura"

struct uz_dev {
	struct pci_dev *pdev;
	void __iomem *regs;
	u32 version;
	u32 caps;
	int num_vectors;
};

static u32 uz_rd(struct uz_dev *uz, u32 reg)
{
	return readl(uz->regs + reg);
}

static void uz_wr(struct uz_dev *uz, u32 reg, u32 val)
{
	writel(val, uz->regs + reg);
}

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
	return 0;
}

static int uz_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct device *dev = &pdev->dev;
	struct uz_dev *uz;
	u32 vectors, mac_lo, mac_hi;
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

	err = uz_check_ident(uz);
	if (err)
		return err;
	err = uz_reset(uz);
	if (err) {
		dev_err(dev, "device did not come out of reset\n");
		return err;
	}
	pci_set_master(pdev);

	vectors = uz_rd(uz, UZ_REG_NUM_VECTORS);
	if (!(uz->caps & UZ_CAP_MSIX) || !vectors) {
		dev_err(dev, "device offers no MSI-X vectors\n");
		return -ENODEV;
	}
	err = pci_alloc_irq_vectors(pdev, 1, vectors, PCI_IRQ_MSIX);
	if (err < 0) {
		dev_err(dev, "cannot enable MSI-X: %d\n", err);
		goto err_clear_master;
	}
	uz->num_vectors = err;

	mac_lo = uz_rd(uz, UZ_REG_MAC_LO);
	mac_hi = uz_rd(uz, UZ_REG_MAC_HI);
	dev_info(dev,
		 "uzura RDMA NIC version %u.%u caps 0x%x, %d MSI-X vectors, mac %02x:%02x:%02x:%02x:%02x:%02x, link %s\n",
		 uz->version >> 16, uz->version & 0xffff, uz->caps,
		 uz->num_vectors, mac_lo & 0xff, (mac_lo >> 8) & 0xff,
		 (mac_lo >> 16) & 0xff, mac_lo >> 24, mac_hi & 0xff,
		 (mac_hi >> 8) & 0xff,
		 uz_rd(uz, UZ_REG_STATUS) & UZ_STATUS_LINK_UP ? "up" : "down");
	return 0;

err_clear_master:
	pci_clear_master(pdev);
	return err;
}

static void uz_remove(struct pci_dev *pdev)
{
	struct uz_dev *uz = pci_get_drvdata(pdev);

	/* Quiesce the device before its interrupts and DMA go away. */
	uz_reset(uz);
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
