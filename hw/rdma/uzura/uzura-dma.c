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

/*
 * Add a piece to a frame built in place.  Bytes of the linear frame that
 * follow the last piece, itself of the linear frame, extend it.
 */
void uzura_tx_add(UzuraTxMap *m, void *p, size_t len, bool mapped)
{
    struct iovec *last = &m->iov[m->niov - 1];

    if (!mapped && !(m->mapped & 1u << (m->niov - 1)) &&
        (uint8_t *)last->iov_base + last->iov_len == p) {
        last->iov_len += len;
        return;
    }
    assert(m->niov < UZ_TX_PIECES);
    m->mapped |= (uint32_t)mapped << m->niov;
    m->iov[m->niov++] = (struct iovec) { .iov_base = p, .iov_len = len };
}

/*
 * Read @len bytes at @addr into a frame built in place (@m).  Guest RAM
 * is mapped and becomes pieces of the frame; what is not plain RAM (MMIO,
 * this device's own BAR included, a RAM device, ROM), a mapping that
 * fails or comes back short, and what comes when the pieces run out are
 * read into @buf -- where those bytes lie in the linear frame -- as
 * uzura_dma_read reads them, with the same result.  One piece is always
 * kept for such a read and one for the frame's trailer.
 */
bool uzura_dma_read_tx(UzuraCore *core, UzuraTxMap *m, uint64_t addr,
                       uint8_t *buf, uint64_t len)
{
    AddressSpace *as = pci_get_address_space(core->owner);

    while (len && m->niov < UZ_TX_PIECES - 2) {
        hwaddr xlat, l = len;
        dma_addr_t ml;
        MemoryRegion *mr;
        bool ram;
        void *p;

        /*
         * address_space_map would bounce what is not RAM, reading it with
         * an error it does not report: such memory is read, not mapped.
         */
        WITH_RCU_READ_LOCK_GUARD() {
            mr = address_space_translate(as, addr, &xlat, &l, false,
                                         uzura_dma_attrs);
            ram = l && memory_region_is_ram(mr) &&
                  !memory_region_is_ram_device(mr);
        }
        if (!ram) {
            break;
        }
        ml = l;
        p = dma_memory_map(as, addr, &ml, DMA_DIRECTION_TO_DEVICE,
                           uzura_dma_attrs);
        trace_uzura_dma_map(addr, l, p ? ml : 0);
        if (!p) {
            break;
        }
        uzura_tx_add(m, p, ml, true);
        addr += ml;
        buf += ml;
        len -= ml;
    }
    if (len) {
        if (!uzura_dma_read(core, addr, buf, len)) {
            return false;
        }
        uzura_tx_add(m, buf, len, false);
    }
    return true;
}

/* Give back the mappings of a frame built in place, once it is sent. */
void uzura_dma_unmap_tx(UzuraCore *core, UzuraTxMap *m)
{
    AddressSpace *as = pci_get_address_space(core->owner);
    unsigned i;

    for (i = 0; i < m->niov; i++) {
        if (m->mapped & 1u << i) {
            dma_memory_unmap(as, m->iov[i].iov_base, m->iov[i].iov_len,
                             DMA_DIRECTION_TO_DEVICE, m->iov[i].iov_len);
        }
    }
    m->mapped = 0;
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
