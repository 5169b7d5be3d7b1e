/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uzura RDMA NIC: writing completions.
 *
 * A CQE goes to the CQ's next slot with the pass's phase; an armed CQ then
 * posts one UZ_EQE_COMPLETION to its EQ.  A CQ that would overwrite an
 * entry its consumer has not reported stops (overflow is an error in
 * InfiniBand) and raises UZ_EQE_CQ_ERROR.
 */
#include "qemu/osdep.h"
#include "qemu/bitops.h"
#include "qemu/timer.h"
#include "uzura-core.h"
#include "trace.h"

/*
 * The device clock (UZ_DB_CLOCK): the virtual clock, which runs with the
 * guest's own (under -icount, with its instructions) and stops with it.
 */
uint64_t uzura_clock_ns(void)
{
    return qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
}

/*
 * The address of CQE slot pos.  A paged ring's page address is read from
 * its page list once per page the device moves into, not once per CQE.
 */
static bool uzura_cq_slot(UzuraCore *core, UzuraCq *cq, uint32_t pos,
                          uint64_t *addr)
{
    uint64_t off = (uint64_t)pos *
                   uzura_cqe_size(cq->ts ? UZ_CQF_TIMESTAMP : 0);
    uint32_t page = off >> UZ_CQ_PAGE_SHIFT;
    uint64_t pa;

    if (!cq->paged) {
        *addr = cq->ring_addr + off;
        return true;
    }
    if (cq->page_addr == UZ_CQ_NO_PAGE || cq->page != page) {
        if (!uzura_dma_read(core, cq->ring_addr + page * sizeof(pa), &pa,
                            sizeof(pa))) {
            return false;
        }
        pa = le64_to_cpu(pa);
        if (pa & MAKE_64BIT_MASK(0, UZ_CQ_PAGE_SHIFT)) {
            return false;
        }
        cq->page = page;
        cq->page_addr = pa;
    }
    *addr = cq->page_addr + (off & MAKE_64BIT_MASK(0, UZ_CQ_PAGE_SHIFT));
    return true;
}

bool uzura_cq_post(UzuraCore *core, uint32_t cqn, const struct uz_cqe *cqe,
                   bool solicited)
{
    UzuraCq *cq = cqn < core->rdma.lim.max_cq ? &core->rdma.cq[cqn] : NULL;
    uint32_t size, pos;
    struct uz_cqe_ts t = { .cqe = *cqe };
    struct uz_cqe *e = &t.cqe;
    uint64_t addr;
    bool written;

    /* An XRC target QP without an SRQ names no CQ. */
    if (!cq || !cq->valid || cq->error) {
        return false;
    }
    size = 1u << cq->log_depth;
    pos = cq->pi & (size - 1);
    if (uzura_ring_used(cq->pi, cq->ci) >= size) {
        uzura_guest_error(trace_uzura_cq_err_overflow(cqn),
                          "CQ %u overflowed; it stops", cqn);
        cq->error = true;
        uzura_eq_post_async(core, UZ_EQE_CQ_ERROR, cqn, 0);
        return false;
    }
    e->flags = ((cq->pi >> cq->log_depth) & 1) ? 0 : UZ_CQE_PHASE;
    if (!uzura_cq_slot(core, cq, pos, &addr)) {
        written = false;
    } else if (cq->ts) {
        t.timestamp = cpu_to_le64(uzura_clock_ns());
        written = uzura_dma_write_entry(core, addr, &t, sizeof(t));
    } else {
        written = uzura_dma_write_entry(core, addr, e, sizeof(*e));
    }
    if (!written) {
        uzura_guest_error(trace_uzura_cq_err_dma(cqn, cq->ring_addr),
                          "CQ %u ring not accessible; it stops", cqn);
        cq->error = true;
        uzura_eq_post_async(core, UZ_EQE_CQ_ERROR, cqn, 0);
        return false;
    }
    trace_uzura_cq_post(cqn, cq->pi, le32_to_cpu(e->qpn), e->opcode,
                        e->status);
    cq->pi = (cq->pi + 1) & UZ_IDX_MASK;
    core->counters.cqes++;
    if (e->status != UZ_WC_STATUS_SUCCESS) {
        core->counters.cqes_error++;
    }
    if (cq->arm == (UZ_DB_ARM >> 24) ||
        (cq->arm == (UZ_DB_ARM_SOLICITED >> 24) && solicited)) {
        cq->arm = 0;
        uzura_eq_post(core, cq->eqn, UZ_EQE_COMPLETION, cqn, 0);
    }
    return true;
}
