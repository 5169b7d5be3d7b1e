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

bool uzura_dma_ok(UzuraCore *core, uint64_t addr, uint64_t len, bool write)
{
    if (!len || addr + len < addr) {
        return false;
    }
    return dma_memory_valid(pci_get_address_space(core->owner), addr, len,
                            write ? DMA_DIRECTION_FROM_DEVICE :
                                    DMA_DIRECTION_TO_DEVICE,
                            MEMTXATTRS_UNSPECIFIED);
}

bool uzura_dma_read(UzuraCore *core, uint64_t addr, void *buf, uint64_t len)
{
    MemTxResult r = pci_dma_read(core->owner, addr, buf, len);

    trace_uzura_dma_read(addr, len, r);
    return r == MEMTX_OK;
}

bool uzura_dma_write(UzuraCore *core, uint64_t addr, const void *buf,
                     uint64_t len)
{
    MemTxResult r = pci_dma_write(core->owner, addr, buf, len);

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
