/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uzura RDMA NIC: the BAR 0 register file.
 *
 * Registers are dispatched through tables indexed by register number; an
 * offset with no entry is not a register.  Guest mistakes are logged,
 * traced, counted in UZ_REG_ERR_* and otherwise ignored.
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qemu/log.h"
#include "uzura-core.h"
#include "trace.h"

#define UZ_REG_INDEX(off)   ((off) >> 2)
#define UZ_NUM_REGS         (UZ_REG_INDEX(UZ_REG_LAST) + 1)

typedef uint32_t (*UzuraRegRead)(UzuraCore *core);
typedef void (*UzuraRegWrite)(UzuraCore *core, uint32_t val);

static const char *const uzura_err_names[] = {
    [UZ_ERR_BAD_OFFSET] = "no register at this offset",
    [UZ_ERR_BAD_SIZE] = "access is not an aligned 32-bit access",
    [UZ_ERR_READ_ONLY] = "register is read-only",
    [UZ_ERR_WRITE_ONLY] = "register is write-only",
    [UZ_ERR_BAD_VALUE] = "value not accepted",
};

static void uzura_reg_error(UzuraCore *core, uint32_t err, hwaddr addr,
                            bool is_write)
{
    trace_uzura_regs_err_access(is_write ? "write" : "read", addr, err);
    qemu_log_mask(LOG_GUEST_ERROR, "uzura: bad register %s at 0x%" HWADDR_PRIx
                  ": %s\n", is_write ? "write" : "read", addr,
                  uzura_err_names[err]);
    core->err_status = err;
    core->err_addr = addr;
    core->err_count++;
}

static uint32_t uzura_read_magic(UzuraCore *core)
{
    return UZ_MAGIC;
}

static uint32_t uzura_read_version(UzuraCore *core)
{
    return UZ_VERSION;
}

static uint32_t uzura_read_caps(UzuraCore *core)
{
    return UZ_CAP_MSIX | UZ_CAP_LINK_STATE;
}

static uint32_t uzura_read_num_vectors(UzuraCore *core)
{
    return core->num_vectors;
}

static uint32_t uzura_read_status(UzuraCore *core)
{
    return core->status;
}

static uint32_t uzura_read_mac_lo(UzuraCore *core)
{
    return ldl_le_p(core->mac);
}

static uint32_t uzura_read_mac_hi(UzuraCore *core)
{
    return lduw_le_p(core->mac + 4);
}

static uint32_t uzura_read_scratch(UzuraCore *core)
{
    return core->scratch;
}

static uint32_t uzura_read_err_status(UzuraCore *core)
{
    return core->err_status;
}

static uint32_t uzura_read_err_count(UzuraCore *core)
{
    return core->err_count;
}

static uint32_t uzura_read_err_addr(UzuraCore *core)
{
    return core->err_addr;
}

static void uzura_write_scratch(UzuraCore *core, uint32_t val)
{
    core->scratch = val;
}

static void uzura_write_reset(UzuraCore *core, uint32_t val)
{
    if (val != UZ_RESET_KEY) {
        uzura_reg_error(core, UZ_ERR_BAD_VALUE, UZ_REG_RESET, true);
        return;
    }
    uzura_core_reset(core);
}

static const UzuraRegRead uzura_reg_readers[UZ_NUM_REGS] = {
    [UZ_REG_INDEX(UZ_REG_MAGIC)] = uzura_read_magic,
    [UZ_REG_INDEX(UZ_REG_VERSION)] = uzura_read_version,
    [UZ_REG_INDEX(UZ_REG_CAPS)] = uzura_read_caps,
    [UZ_REG_INDEX(UZ_REG_NUM_VECTORS)] = uzura_read_num_vectors,
    [UZ_REG_INDEX(UZ_REG_STATUS)] = uzura_read_status,
    [UZ_REG_INDEX(UZ_REG_MAC_LO)] = uzura_read_mac_lo,
    [UZ_REG_INDEX(UZ_REG_MAC_HI)] = uzura_read_mac_hi,
    [UZ_REG_INDEX(UZ_REG_SCRATCH)] = uzura_read_scratch,
    [UZ_REG_INDEX(UZ_REG_ERR_STATUS)] = uzura_read_err_status,
    [UZ_REG_INDEX(UZ_REG_ERR_COUNT)] = uzura_read_err_count,
    [UZ_REG_INDEX(UZ_REG_ERR_ADDR)] = uzura_read_err_addr,
};

static const UzuraRegWrite uzura_reg_writers[UZ_NUM_REGS] = {
    [UZ_REG_INDEX(UZ_REG_RESET)] = uzura_write_reset,
    [UZ_REG_INDEX(UZ_REG_SCRATCH)] = uzura_write_scratch,
};

/*
 * Classify an access: 0 when it may proceed, else the UZ_ERR_* code.  The
 * MemoryRegionOps accept 1..8 byte accesses so that bad sizes reach here
 * and are reported instead of being silently split or dropped.
 */
static uint32_t uzura_reg_check(hwaddr addr, unsigned size, bool is_write)
{
    unsigned idx = UZ_REG_INDEX(addr);

    if (size != 4 || (addr & 3)) {
        return UZ_ERR_BAD_SIZE;
    }
    if (idx >= UZ_NUM_REGS ||
        (!uzura_reg_readers[idx] && !uzura_reg_writers[idx])) {
        return UZ_ERR_BAD_OFFSET;
    }
    if (is_write && !uzura_reg_writers[idx]) {
        return UZ_ERR_READ_ONLY;
    }
    if (!is_write && !uzura_reg_readers[idx]) {
        return UZ_ERR_WRITE_ONLY;
    }
    return UZ_ERR_NONE;
}

uint64_t uzura_core_reg_read(UzuraCore *core, hwaddr addr, unsigned size)
{
    uint32_t err = uzura_reg_check(addr, size, false);
    uint32_t val;

    if (err) {
        uzura_reg_error(core, err, addr, false);
        return 0;
    }
    val = uzura_reg_readers[UZ_REG_INDEX(addr)](core);
    trace_uzura_regs_read(addr, val);
    return val;
}

void uzura_core_reg_write(UzuraCore *core, hwaddr addr, uint64_t val,
                          unsigned size)
{
    uint32_t err = uzura_reg_check(addr, size, true);

    if (err) {
        uzura_reg_error(core, err, addr, true);
        return;
    }
    trace_uzura_regs_write(addr, val);
    uzura_reg_writers[UZ_REG_INDEX(addr)](core, val);
}

void uzura_core_reset(UzuraCore *core)
{
    trace_uzura_regs_reset();
    core->status &= UZ_STATUS_LINK_UP;
    core->scratch = 0;
    core->err_status = UZ_ERR_NONE;
    core->err_count = 0;
    core->err_addr = 0;
    core->status |= UZ_STATUS_READY;
}

void uzura_core_set_link(UzuraCore *core, bool up)
{
    trace_uzura_regs_link(up);
    if (up) {
        core->status |= UZ_STATUS_LINK_UP;
    } else {
        core->status &= ~UZ_STATUS_LINK_UP;
    }
}
