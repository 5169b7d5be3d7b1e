/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uzura RDMA NIC: SQ shadow doorbells (docs/device-spec.md 8.6.1).
 *
 * A QP created with UZ_QPF_SQ_SHADOW has a struct uz_sq_shadow after its
 * SQ ring, where the provider stores every new producer index.  While the
 * QP has messages in flight the device reads that index itself each time
 * it runs the QP (each ACK brings it back), so a busy sender needs no
 * doorbell store, that is, no trap out of the guest with the big lock.
 * When the device stops, it writes the index it last saw into the record's
 * event field and reads the producer index once more: a post after that
 * finds event behind it and rings the doorbell.  It is virtio's event
 * index, applied to an SQ.
 */
#include "qemu/osdep.h"
#include "qemu/atomic.h"
#include "qemu/log.h"
#include "uzura-core.h"
#include "trace.h"

static uint64_t uzura_shadow_addr(const UzuraQp *qp)
{
    return qp->sq_addr + (1ull << (qp->sq_log_depth + qp->sq_log_wqe_size));
}

/*
 * Take a new producer index from @qp's shadow record, checked as a
 * doorbell's is.  Returns whether the SQ has new WQEs.
 */
bool uzura_shadow_poll(UzuraCore *core, UzuraQp *qp)
{
    uint32_t pi;

    if (!(qp->flags & UZ_QPF_SQ_SHADOW) || qp->attr.state == UZ_QPS_RESET ||
        !uzura_dma_read(core, uzura_shadow_addr(qp), &pi, sizeof(pi))) {
        return false;
    }
    pi = le32_to_cpu(pi) & UZ_DB_PI_MASK;
    if (pi == qp->sq_pi) {
        return false;
    }
    if (!uzura_ring_pi_ok(pi, qp->sq_ci, 1u << qp->sq_log_depth) ||
        !uzura_ring_pi_ok(pi, qp->sq_pi, 1u << qp->sq_log_depth)) {
        /* Said once per bad value: the device reads it on every turn. */
        if (!qp->shadow_bad || pi != qp->shadow_bad_pi) {
            uzura_guest_error(trace_uzura_shadow_err_pi(qp->x->qpn, pi),
                              "QP %u SQ shadow index %u overruns the ring",
                              qp->x->qpn, pi);
            uzura_core_record_error(core, UZ_ERR_BAD_VALUE, qp->sq_db);
            qp->shadow_bad = true;
            qp->shadow_bad_pi = pi;
        }
        return false;
    }
    /* The WQEs the index publishes are read after it. */
    smp_rmb();
    trace_uzura_shadow_take(qp->x->qpn, qp->sq_pi, pi);
    core->counters.sq_shadow_takes++;
    qp->sq_pi = pi;
    if (qp->attr.state == UZ_QPS_ERR) {
        uzura_qp_flush_later(core);
    }
    return true;
}

/*
 * Whether the device asked for the doorbell at its producer index and
 * saw no post after: then the next post rings, and the record need not
 * be read until it does.
 */
bool uzura_shadow_asked(const UzuraQp *qp)
{
    return qp->shadow_armed && qp->shadow_event == qp->sq_pi;
}

/*
 * The device stops reading @qp's record: ask for the doorbell from the
 * next post on, then look once more, for a post that did not see the
 * request.  Returns false when that found new WQEs.
 */
bool uzura_shadow_idle(UzuraCore *core, UzuraQp *qp)
{
    uint32_t event = cpu_to_le32(qp->sq_pi);

    if (!(qp->flags & UZ_QPF_SQ_SHADOW) || qp->attr.state == UZ_QPS_RESET ||
        uzura_shadow_asked(qp)) {
        return true;
    }
    if (!uzura_dma_write(core, uzura_shadow_addr(qp) +
                         offsetof(struct uz_sq_shadow, event),
                         &event, sizeof(event))) {
        return true;    /* no record to read either: doorbells only */
    }
    qp->shadow_armed = true;
    qp->shadow_event = qp->sq_pi;
    trace_uzura_shadow_idle(qp->x->qpn, qp->sq_pi);
    /* The event out before pi is read, against the provider's order. */
    smp_mb();
    return !uzura_shadow_poll(core, qp);
}

/* Back to RESET: the indices start again at 0, and so does event. */
void uzura_shadow_reset(UzuraCore *core, UzuraQp *qp)
{
    uint32_t event = 0;

    qp->shadow_armed = false;
    qp->shadow_bad = false;
    if (qp->flags & UZ_QPF_SQ_SHADOW) {
        uzura_dma_write(core, uzura_shadow_addr(qp) +
                        offsetof(struct uz_sq_shadow, event),
                        &event, sizeof(event));
    }
}
