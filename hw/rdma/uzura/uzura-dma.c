/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uzura RDMA NIC: DMA and interrupts towards the host.
 *
 * All device access to host memory goes through here, so that a failed
 * access is seen (and traced) in one place, and ring entries are written
 * with their phase word last.
 */
#include "qemu/osdep.h"
#include "hw/pci/pci_device.h"
#include "hw/pci/msix.h"
#include "system/dma.h"
#include "uzura-core.h"
#include "trace.h"

/*
 * Device DMA reaches guest RAM only.  A real NIC's DMA cannot reach
 * config space, and a DMA into a device's registers -- this one's
 * included: its own PCIe capability, its doorbells -- would run that
 * device's code in the middle of ours.  QEMU refuses such an access for
 * requests marked as memory-only, section by section as it performs
 * them, so the data path pays no extra lookup.
 */
static const MemTxAttrs uzura_dma_attrs = { .memory = 1 };

/*
 * Whether [addr, addr + len) is RAM (writable RAM for @write), checked
 * ahead of use: rings and page lists when they are created.  The access
 * check of address_space_access_valid does not look at .memory.
 */
bool uzura_dma_ok(UzuraCore *core, uint64_t addr, uint64_t len, bool write)
{
    AddressSpace *as = pci_get_address_space(core->owner);

    if (!len || addr + len < addr) {
        return false;
    }
    RCU_READ_LOCK_GUARD();
    while (len) {
        hwaddr xlat, l = len;
        MemoryRegion *mr = address_space_translate(as, addr, &xlat, &l, write,
                                                   uzura_dma_attrs);

        if (!l || !memory_region_is_ram(mr) || (write && mr->readonly)) {
            return false;
        }
        addr += l;
        len -= l;
    }
    return true;
}

bool uzura_dma_read(UzuraCore *core, uint64_t addr, void *buf, uint64_t len)
{
    MemTxResult r = pci_dma_rw(core->owner, addr, buf, len,
                               DMA_DIRECTION_TO_DEVICE, uzura_dma_attrs);

    trace_uzura_dma_read(addr, len, r);
    return r == MEMTX_OK;
}

bool uzura_dma_write(UzuraCore *core, uint64_t addr, const void *buf,
                     uint64_t len)
{
    MemTxResult r = pci_dma_rw(core->owner, addr, (void *)buf, len,
                               DMA_DIRECTION_FROM_DEVICE, uzura_dma_attrs);

    trace_uzura_dma_write(addr, len, r);
    return r == MEMTX_OK;
}

/*
 * Write a ring entry whose last 32 bits hold its phase: the body first,
 * then the phase word, so a driver that sees the new phase sees the body.
 */
bool uzura_dma_write_entry(UzuraCore *core, uint64_t addr, const void *entry,
                           uint64_t len)
{
    if (!uzura_dma_write(core, addr, entry, len - 4)) {
        return false;
    }
    smp_wmb();      /* the body is visible before the new phase */
    return uzura_dma_write(core, addr + len - 4,
                           (const uint8_t *)entry + len - 4, 4);
}

void uzura_irq(UzuraCore *core, unsigned vector)
{
    trace_uzura_irq(vector);
    core->counters.irqs++;
    if (msix_enabled(core->owner)) {
        msix_notify(core->owner, vector);
    }
}
