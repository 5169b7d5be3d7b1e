/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uzura RDMA NIC: the BAR 0 register file.
 *
 * Registers are dispatched through tables indexed by register number; an
 * offset with no entry is not a register.  Guest mistakes are logged,
 * traced, counted in UZ_REG_ERR_* and otherwise ignored.
 */
#include "qemu/osdep.h"
#include "qemu/bitops.h"
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
    [UZ_ERR_BAD_DOORBELL] = "no queue at this doorbell",
    [UZ_ERR_BAD_STATE] = "not valid in this state",
};

void uzura_core_record_error(UzuraCore *core, uint32_t err, hwaddr addr)
{
    core->err_status = err;
    core->err_addr = addr;
    core->err_count++;
}

static void uzura_reg_error(UzuraCore *core, uint32_t err, hwaddr addr,
                            bool is_write)
{
    uzura_guest_error(trace_uzura_regs_err_access(is_write ? "write" : "read",
                                                  addr, err),
                      "bad register %s at 0x%" HWADDR_PRIx ": %s",
                      is_write ? "write" : "read", addr, uzura_err_names[err]);
    uzura_core_record_error(core, err, addr);
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
    return uzura_caps(core);
}

static uint32_t uzura_read_num_vectors(UzuraCore *core)
{
    return core->num_vectors;
}

static uint32_t uzura_read_status(UzuraCore *core)
{
    return core->status;
}

static uint32_t uzura_read_db_pages(UzuraCore *core)
{
    return core->db_pages;
}

static uint32_t uzura_read_link_speed(UzuraCore *core)
{
    return core->link_speed;
}

static uint32_t uzura_read_admin_sq_lo(UzuraCore *core)
{
    return core->admin.sq_addr;
}

static uint32_t uzura_read_admin_sq_hi(UzuraCore *core)
{
    return core->admin.sq_addr >> 32;
}

static uint32_t uzura_read_admin_cq_lo(UzuraCore *core)
{
    return core->admin.cq_addr;
}

static uint32_t uzura_read_admin_cq_hi(UzuraCore *core)
{
    return core->admin.cq_addr >> 32;
}

static uint32_t uzura_read_admin_depth(UzuraCore *core)
{
    return core->admin.log_depth;
}

static uint32_t uzura_read_admin_ctrl(UzuraCore *core)
{
    return (core->admin.enabled ? UZ_ADMIN_CTRL_ENABLE : 0) |
           (core->admin.intr ? UZ_ADMIN_CTRL_INTR : 0);
}

static uint32_t uzura_read_admin_status(UzuraCore *core)
{
    return (core->admin.enabled ? UZ_ADMIN_STATUS_ENABLED : 0) |
           (core->admin.error ? UZ_ADMIN_STATUS_ERROR : 0);
}

static uint32_t uzura_read_admin_ci(UzuraCore *core)
{
    return core->admin.ci;
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

/*
 * The admin ring registers may change only while the queue is stopped:
 * store @val into bits @start..@start+31 of @field, or record the error.
 */
static void uzura_admin_reg_set(UzuraCore *core, hwaddr addr,
                                uint64_t *field, int start, uint32_t val)
{
    if (core->admin.enabled) {
        uzura_reg_error(core, UZ_ERR_BAD_STATE, addr, true);
        return;
    }
    *field = deposit64(*field, start, 32, val);
}

static void uzura_write_admin_sq_lo(UzuraCore *core, uint32_t val)
{
    uzura_admin_reg_set(core, UZ_REG_ADMIN_SQ_LO, &core->admin.sq_addr, 0, val);
}

static void uzura_write_admin_sq_hi(UzuraCore *core, uint32_t val)
{
    uzura_admin_reg_set(core, UZ_REG_ADMIN_SQ_HI, &core->admin.sq_addr, 32,
                        val);
}

static void uzura_write_admin_cq_lo(UzuraCore *core, uint32_t val)
{
    uzura_admin_reg_set(core, UZ_REG_ADMIN_CQ_LO, &core->admin.cq_addr, 0, val);
}

static void uzura_write_admin_cq_hi(UzuraCore *core, uint32_t val)
{
    uzura_admin_reg_set(core, UZ_REG_ADMIN_CQ_HI, &core->admin.cq_addr, 32,
                        val);
}

static void uzura_write_admin_depth(UzuraCore *core, uint32_t val)
{
    uint64_t depth = core->admin.log_depth;

    uzura_admin_reg_set(core, UZ_REG_ADMIN_DEPTH, &depth, 0, val);
    core->admin.log_depth = depth;
}

static void uzura_write_admin_ctrl(UzuraCore *core, uint32_t val)
{
    if (val & ~(UZ_ADMIN_CTRL_ENABLE | UZ_ADMIN_CTRL_INTR) ||
        !uzura_admin_enable(core, val & UZ_ADMIN_CTRL_ENABLE,
                            val & UZ_ADMIN_CTRL_INTR)) {
        uzura_reg_error(core, UZ_ERR_BAD_VALUE, UZ_REG_ADMIN_CTRL, true);
    }
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
    [UZ_REG_INDEX(UZ_REG_DB_PAGES)] = uzura_read_db_pages,
    [UZ_REG_INDEX(UZ_REG_LINK_SPEED)] = uzura_read_link_speed,
    [UZ_REG_INDEX(UZ_REG_ADMIN_SQ_LO)] = uzura_read_admin_sq_lo,
    [UZ_REG_INDEX(UZ_REG_ADMIN_SQ_HI)] = uzura_read_admin_sq_hi,
    [UZ_REG_INDEX(UZ_REG_ADMIN_CQ_LO)] = uzura_read_admin_cq_lo,
    [UZ_REG_INDEX(UZ_REG_ADMIN_CQ_HI)] = uzura_read_admin_cq_hi,
    [UZ_REG_INDEX(UZ_REG_ADMIN_DEPTH)] = uzura_read_admin_depth,
    [UZ_REG_INDEX(UZ_REG_ADMIN_CTRL)] = uzura_read_admin_ctrl,
    [UZ_REG_INDEX(UZ_REG_ADMIN_STATUS)] = uzura_read_admin_status,
    [UZ_REG_INDEX(UZ_REG_ADMIN_CI)] = uzura_read_admin_ci,
};

static const UzuraRegWrite uzura_reg_writers[UZ_NUM_REGS] = {
    [UZ_REG_INDEX(UZ_REG_RESET)] = uzura_write_reset,
    [UZ_REG_INDEX(UZ_REG_SCRATCH)] = uzura_write_scratch,
    [UZ_REG_INDEX(UZ_REG_ADMIN_SQ_LO)] = uzura_write_admin_sq_lo,
    [UZ_REG_INDEX(UZ_REG_ADMIN_SQ_HI)] = uzura_write_admin_sq_hi,
    [UZ_REG_INDEX(UZ_REG_ADMIN_CQ_LO)] = uzura_write_admin_cq_lo,
    [UZ_REG_INDEX(UZ_REG_ADMIN_CQ_HI)] = uzura_write_admin_cq_hi,
    [UZ_REG_INDEX(UZ_REG_ADMIN_DEPTH)] = uzura_write_admin_depth,
    [UZ_REG_INDEX(UZ_REG_ADMIN_CTRL)] = uzura_write_admin_ctrl,
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
