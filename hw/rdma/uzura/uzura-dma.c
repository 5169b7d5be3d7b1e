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
 * device's code in the middle of ours.  An address that is not RAM (for a
 * write: writable RAM) fails the access as an unmapped one would.
 */
static bool uzura_dma_ram(UzuraCore *core, uint64_t addr, uint64_t len,
                          bool write)
{
    AddressSpace *as = pci_get_address_space(core->owner);

    if (addr + len < addr) {
        return false;
    }
    RCU_READ_LOCK_GUARD();
    while (len) {
        hwaddr xlat, l = len;
        MemoryRegion *mr = address_space_translate(as, addr, &xlat, &l, write,
                                                   MEMTXATTRS_UNSPECIFIED);

        if (!l || !memory_region_is_ram(mr) ||
            memory_region_is_ram_device(mr) || (write && mr->readonly)) {
            return false;
        }
        addr += l;
        len -= l;
    }
    return true;
}

bool uzura_dma_ok(UzuraCore *core, uint64_t addr, uint64_t len, bool write)
{
    return len && uzura_dma_ram(core, addr, len, write) &&
           dma_memory_valid(pci_get_address_space(core->owner), addr, len,
                            write ? DMA_DIRECTION_FROM_DEVICE :
                                    DMA_DIRECTION_TO_DEVICE,
                            MEMTXATTRS_UNSPECIFIED);
}

bool uzura_dma_read(UzuraCore *core, uint64_t addr, void *buf, uint64_t len)
{
    MemTxResult r = MEMTX_DECODE_ERROR;

    if (uzura_dma_ram(core, addr, len, false)) {
        r = pci_dma_read(core->owner, addr, buf, len);
    }
    trace_uzura_dma_read(addr, len, r);
    return r == MEMTX_OK;
}

bool uzura_dma_write(UzuraCore *core, uint64_t addr, const void *buf,
                     uint64_t len)
{
    MemTxResult r = MEMTX_DECODE_ERROR;

    if (uzura_dma_ram(core, addr, len, true)) {
        r = pci_dma_write(core->owner, addr, buf, len);
    }
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
