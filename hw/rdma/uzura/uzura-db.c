/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uzura RDMA NIC: doorbell pages (BAR 4).
 *
 * Each 4 KiB page has 1024 32-bit slots; a slot is assigned to a queue when
 * the queue is created.  A doorbell store records the new index in the
 * queue.  An SQ doorbell then starts sending within the store, up to a
 * budget (uzura_qp_doorbell: waking the main loop would cost more than a
 * small send); the work of every other queue, and what the budget leaves,
 * runs in the work bottom half (uzura-core.c).  The store is one device
 * turn, so its frames leave together.
 */
#include "qemu/osdep.h"
#include "uzura-core.h"
#include "trace.h"

#define UZ_DB_ENTRY(kind, index)    ((uint32_t)(kind) << 24 | (index))
#define UZ_DB_KIND(entry)           ((entry) >> 24)
#define UZ_DB_INDEX(entry)          ((entry) & 0xffffff)

void uzura_db_reset(UzuraCore *core)
{
    memset(core->db_map, 0,
           core->db_pages * UZ_DB_SLOTS_PER_PAGE * sizeof(*core->db_map));
    core->db_map[UZ_DB_ADMIN / 4] = UZ_DB_ENTRY(UZ_DBK_ADMIN, 0);
}

bool uzura_db_alloc(UzuraCore *core, uint32_t page, UzuraDbKind kind,
                    uint32_t index, uint32_t *offset)
{
    uint32_t *slots;
    unsigned i;

    if (page >= core->db_pages) {
        return false;
    }
    slots = core->db_map + page * UZ_DB_SLOTS_PER_PAGE;
    /* The last two slots of a page are the clock's. */
    for (i = 0; i < UZ_DB_CLOCK / 4; i++) {
        if (!slots[i]) {
            slots[i] = UZ_DB_ENTRY(kind, index);
            *offset = page * UZ_DB_PAGE_SIZE + i * 4;
            return true;
        }
    }
    return false;
}

void uzura_db_free(UzuraCore *core, uint32_t offset)
{
    core->db_map[offset / 4] = 0;
}

void uzura_db_write(UzuraCore *core, hwaddr addr, uint64_t val,
                    unsigned size)
{
    uint32_t entry;

    if (size != 4 || (addr & 3)) {
        uzura_guest_error(trace_uzura_db_err_access(addr, size),
                          "doorbell store of %u bytes at 0x%" HWADDR_PRIx,
                          size, addr);
        uzura_core_record_error(core, UZ_ERR_BAD_SIZE, addr);
        return;
    }
    entry = core->db_map[addr / 4];
    trace_uzura_db_write(addr, UZ_DB_KIND(entry), UZ_DB_INDEX(entry), val);
    core->counters.doorbells++;

    switch (UZ_DB_KIND(entry)) {
    case UZ_DBK_ADMIN:
        uzura_admin_doorbell(core, UZ_DB_INDEX(entry), val);
        break;
    case UZ_DBK_EQ:
        uzura_eq_doorbell(core, UZ_DB_INDEX(entry), val);
        break;
    case UZ_DBK_ETH_TX:
        uzura_eth_doorbell(core, true, val);
        break;
    case UZ_DBK_ETH_RX:
        uzura_eth_doorbell(core, false, val);
        break;
    case UZ_DBK_CQ:
        uzura_cq_doorbell(core, UZ_DB_INDEX(entry), val);
        break;
    case UZ_DBK_SRQ:
        uzura_srq_doorbell(core, UZ_DB_INDEX(entry), val);
        break;
    case UZ_DBK_TM:
        uzura_tm_doorbell(core, UZ_DB_INDEX(entry), val);
        break;
    case UZ_DBK_SQ:
    case UZ_DBK_RQ:
        uzura_qp_doorbell(core, UZ_DB_INDEX(entry),
                          UZ_DB_KIND(entry) == UZ_DBK_SQ, val);
        break;
    default:
        uzura_guest_error(trace_uzura_db_err_unassigned(addr),
                          "doorbell 0x%" HWADDR_PRIx " has no queue", addr);
        uzura_core_record_error(core, UZ_ERR_BAD_DOORBELL, addr);
        break;
    }
}

/*
 * The clock in the last 8 bytes of every page (UZ_DB_CLOCK): whole, or
 * its low and high words.  Every other load is a guest error.
 */
uint64_t uzura_db_read(UzuraCore *core, hwaddr addr, unsigned size)
{
    hwaddr off = addr & (UZ_DB_PAGE_SIZE - 1);

    if ((size == 8 && off == UZ_DB_CLOCK) ||
        (size == 4 && (off == UZ_DB_CLOCK || off == UZ_DB_CLOCK + 4))) {
        uint64_t now = uzura_clock_ns();

        return size == 8 ? now : off == UZ_DB_CLOCK ? (uint32_t)now :
                                                      now >> 32;
    }
    uzura_guest_error(trace_uzura_db_err_read(addr),
                      "doorbells are write-only (load at 0x%" HWADDR_PRIx ")",
                      addr);
    uzura_core_record_error(core, UZ_ERR_WRITE_ONLY, addr);
    return 0;
}
