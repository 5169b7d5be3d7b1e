/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uzura RDMA NIC: migration and snapshots (docs/device-spec.md 7.4).
 *
 * What moves: the register file, the admin queue, the event queues, the
 * Ethernet rings, the counters and every object table.  What is derived
 * is rebuilt on the incoming side, never taken from the stream: the
 * doorbell map (from each queue's doorbell offset), the bitmaps of live
 * QPs and used device memory pages, a fresh transport for each QP, and
 * empty caches (translations, a paged CQ's page, an implicit MR's child).
 * Device memory is RAM of its own and moves with the guest's.
 *
 * Each QP's transport moves with its messages in flight, its READ and
 * atomic slots and its timer, with the sources of messages no SQ WQE
 * stands for: the CRW tag table and the rendezvous slots of tag
 * matching.  The message being sent starts over from its source and a
 * reliable QP resends from its oldest unacknowledged message, as after a
 * timeout (uzura_req_migrated), and a rate limiter (DCQCN's reaction
 * point) goes on at its rate.  Packets selective repeat kept are not
 * carried.  A TM SRQ's tag list and ring of list operations move with
 * it, and so do RSS tables and flow rules.
 *
 * Fault injection moves as its settings and rules, with the rules'
 * counts; the frames it holds back are lost, as on a wire.
 *
 * What does not move yet blocks a migration while it is in use, by name
 * (uzura_migration_check): an ODP page fault, the timing model, a link
 * flap and a PAUSE in progress.
 *
 * A stream is checked as the guest's commands are: every handle names an
 * entry of its table, every ring a depth the device takes, every doorbell
 * a slot of its own.  A stream that fails leaves the device reset.
 */
#include "qemu/osdep.h"
#include "qemu/cutils.h"
#include "qemu/error-report.h"
#include "qemu/main-loop.h"
#include "qemu/timer.h"
#include "qapi/error.h"
#include "migration/qemu-file-types.h"
#include "migration/vmstate.h"
#include "uzura-core.h"
#include "trace.h"

/* ---- what blocks a migration ---- */

bool uzura_migration_check(UzuraCore *core, Error **errp)
{
    UzuraRdma *r = &core->rdma;
    UzuraFault *f = &core->fault;
    uint32_t i;

    if (core->model.on) {
        error_setg(errp, "uzura: the timing model (model=on) does not "
                   "migrate");
        return false;
    }
    if (timer_pending(f->flap_timer) || core->flap_down) {
        error_setg(errp, "uzura: a link flap is in progress (fault-flap-*): "
                   "it does not migrate yet");
        return false;
    }
    if (f->nrules) {
        g_autofree char *text = uzura_fault_rules_print(f->rules, f->nrules,
                                                        false);

        /* Rules print longer than they may be typed: e.g. count=. */
        if (strlen(text) > UZ_FAULT_RULES_TEXT_MAX) {
            error_setg(errp, "uzura: the fault rules print to %zu bytes, "
                       "more than the %u that parse back: they do not "
                       "migrate", strlen(text), UZ_FAULT_RULES_TEXT_MAX);
            return false;
        }
    }
    if (core->pause.paused) {
        error_setg(errp, "uzura: the link is paused by a PAUSE or PFC frame; "
                   "try again when it resumes");
        return false;
    }
    for (i = 0; i < r->lim.max_qp; i++) {
        UzuraQp *qp = &r->qp[i];

        if (!qp->valid) {
            continue;
        }
        if (qp->x->req.fault_wait || qp->x->resp.answer_fault_wait) {
            error_setg(errp, "uzura: QP %u waits for an ODP page; try again "
                       "when it is resumed", i);
            return false;
        }
    }
    for (i = 0; i < r->lim.max_mr; i++) {
        if (r->mr[i].valid && r->mr[i].fault_posted) {
            error_setg(errp, "uzura: MR %u has an ODP page fault "
                       "outstanding; try again when it is resumed", i);
            return false;
        }
    }
    return true;
}

/* ---- the stream ---- */

/* A stream refused: QEMU's error, and the reason in a trace event. */
static int G_GNUC_PRINTF(1, 2) uzura_mig_refuse(const char *fmt, ...)
{
    g_autofree char *why = NULL;
    va_list ap;

    va_start(ap, fmt);
    why = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    trace_uzura_migration_err_stream(why);
    error_report("uzura: migration stream: %s", why);
    return -EINVAL;
}

static const VMStateDescription vmstate_uzura_admin = {
    .name = "uzura/admin",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64(sq_addr, UzuraAdmin),
        VMSTATE_UINT64(cq_addr, UzuraAdmin),
        VMSTATE_UINT32(log_depth, UzuraAdmin),
        VMSTATE_BOOL(enabled, UzuraAdmin),
        VMSTATE_BOOL(intr, UzuraAdmin),
        VMSTATE_BOOL(error, UzuraAdmin),
        VMSTATE_UINT32(pi, UzuraAdmin),
        VMSTATE_UINT32(ci, UzuraAdmin),
        VMSTATE_UINT64(yields, UzuraAdmin),
        VMSTATE_END_OF_LIST()
    }
};

static const VMStateDescription vmstate_uzura_eq = {
    .name = "uzura/eq",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_BOOL(valid, UzuraEq),
        VMSTATE_BOOL(async, UzuraEq),
        VMSTATE_BOOL(armed, UzuraEq),
        VMSTATE_BOOL(overflowed, UzuraEq),
        VMSTATE_UINT64(ring_addr, UzuraEq),
        VMSTATE_UINT32(log_depth, UzuraEq),
        VMSTATE_UINT16(vector, UzuraEq),
        VMSTATE_UINT32(pi, UzuraEq),
        VMSTATE_UINT32(ci, UzuraEq),
        VMSTATE_UINT32(db_offset, UzuraEq),
        VMSTATE_UINT32(users, UzuraEq),
        VMSTATE_END_OF_LIST()
    }
};

static const VMStateDescription vmstate_uzura_eth_ring = {
    .name = "uzura/eth-ring",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_BOOL(valid, UzuraEthRing),
        VMSTATE_BOOL(event_owed, UzuraEthRing),
        VMSTATE_UINT64(ring_addr, UzuraEthRing),
        VMSTATE_UINT32(log_depth, UzuraEthRing),
        VMSTATE_UINT32(eqn, UzuraEthRing),
        VMSTATE_UINT32(pi, UzuraEthRing),
        VMSTATE_UINT32(ci, UzuraEthRing),
        VMSTATE_UINT32(db_offset, UzuraEthRing),
        VMSTATE_END_OF_LIST()
    }
};

static const VMStateDescription vmstate_uzura_uctx = {
    .name = "uzura/uctx",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_BOOL(valid, UzuraUctx),
        VMSTATE_UINT32(users, UzuraUctx),
        VMSTATE_END_OF_LIST()
    }
};

static const VMStateDescription vmstate_uzura_pd = {
    .name = "uzura/pd",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_BOOL(valid, UzuraPd),
        VMSTATE_UINT32(uctx, UzuraPd),
        VMSTATE_UINT32(users, UzuraPd),
        VMSTATE_END_OF_LIST()
    }
};

static const VMStateDescription vmstate_uzura_cq = {
    .name = "uzura/cq",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_BOOL(valid, UzuraCq),
        VMSTATE_BOOL(error, UzuraCq),
        VMSTATE_UINT8(arm, UzuraCq),
        VMSTATE_UINT32(uctx, UzuraCq),
        VMSTATE_UINT32(eqn, UzuraCq),
        VMSTATE_UINT64(ring_addr, UzuraCq),
        VMSTATE_BOOL(paged, UzuraCq),
        VMSTATE_BOOL(ts, UzuraCq),
        VMSTATE_UINT32(log_depth, UzuraCq),
        VMSTATE_UINT32(pi, UzuraCq),
        VMSTATE_UINT32(ci, UzuraCq),
        VMSTATE_UINT32(db_offset, UzuraCq),
        VMSTATE_UINT32(users, UzuraCq),
        VMSTATE_END_OF_LIST()
    }
};

static const VMStateDescription vmstate_uzura_srq = {
    .name = "uzura/srq",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_BOOL(valid, UzuraSrq),
        VMSTATE_BOOL(xrc, UzuraSrq),
        VMSTATE_UINT32(uctx, UzuraSrq),
        VMSTATE_UINT32(pdn, UzuraSrq),
        VMSTATE_UINT32(xrcd, UzuraSrq),
        VMSTATE_UINT32(cqn, UzuraSrq),
        VMSTATE_UINT64(ring_addr, UzuraSrq),
        VMSTATE_UINT32(log_depth, UzuraSrq),
        VMSTATE_UINT32(log_wqe_size, UzuraSrq),
        VMSTATE_UINT32(limit, UzuraSrq),
        VMSTATE_UINT32(pi, UzuraSrq),
        VMSTATE_UINT32(ci, UzuraSrq),
        VMSTATE_UINT32(db_offset, UzuraSrq),
        VMSTATE_UINT32(users, UzuraSrq),
        VMSTATE_END_OF_LIST()
    }
};

/* struct uz_qp_attr, host order, field by field. */
static const VMStateDescription vmstate_uzura_qp_attr = {
    .name = "uzura/qp-attr",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT8(state, struct uz_qp_attr),
        VMSTATE_UINT8(path_mtu, struct uz_qp_attr),
        VMSTATE_UINT8(timeout, struct uz_qp_attr),
        VMSTATE_UINT8(retry_cnt, struct uz_qp_attr),
        VMSTATE_UINT8(rnr_retry, struct uz_qp_attr),
        VMSTATE_UINT8(min_rnr_timer, struct uz_qp_attr),
        VMSTATE_UINT8(max_rd_atomic, struct uz_qp_attr),
        VMSTATE_UINT8(max_dest_rd_atomic, struct uz_qp_attr),
        VMSTATE_UINT32(access_flags, struct uz_qp_attr),
        VMSTATE_UINT32(sq_psn, struct uz_qp_attr),
        VMSTATE_UINT32(rq_psn, struct uz_qp_attr),
        VMSTATE_UINT32(dest_qpn, struct uz_qp_attr),
        VMSTATE_UINT32(qkey, struct uz_qp_attr),
        VMSTATE_UINT16(pkey_index, struct uz_qp_attr),
        VMSTATE_UINT8(port, struct uz_qp_attr),
        VMSTATE_UINT8_ARRAY(dgid, struct uz_qp_attr, 16),
        VMSTATE_UINT8_ARRAY(sgid, struct uz_qp_attr, 16),
        VMSTATE_UINT8_ARRAY(dmac, struct uz_qp_attr, 6),
        VMSTATE_UINT8(hop_limit, struct uz_qp_attr),
        VMSTATE_UINT8(traffic_class, struct uz_qp_attr),
        VMSTATE_UINT32(flow_label, struct uz_qp_attr),
        VMSTATE_END_OF_LIST()
    }
};

static const VMStateDescription vmstate_uzura_qp = {
    .name = "uzura/qp",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_BOOL(valid, UzuraQp),
        VMSTATE_UINT8(type, UzuraQp),
        VMSTATE_UINT8(flags, UzuraQp),
        VMSTATE_UINT32(uctx, UzuraQp),
        VMSTATE_UINT32(pdn, UzuraQp),
        VMSTATE_UINT32(send_cqn, UzuraQp),
        VMSTATE_UINT32(recv_cqn, UzuraQp),
        VMSTATE_UINT32(srqn, UzuraQp),
        VMSTATE_UINT64(sq_addr, UzuraQp),
        VMSTATE_UINT64(rq_addr, UzuraQp),
        VMSTATE_UINT32(sq_log_depth, UzuraQp),
        VMSTATE_UINT32(rq_log_depth, UzuraQp),
        VMSTATE_UINT32(sq_log_wqe_size, UzuraQp),
        VMSTATE_UINT32(rq_log_wqe_size, UzuraQp),
        VMSTATE_UINT32(sq_db, UzuraQp),
        VMSTATE_UINT32(rq_db, UzuraQp),
        VMSTATE_UINT32(sq_pi, UzuraQp),
        VMSTATE_BOOL(shadow_armed, UzuraQp),
        VMSTATE_BOOL(shadow_bad, UzuraQp),
        VMSTATE_UINT32(shadow_event, UzuraQp),
        VMSTATE_UINT32(shadow_bad_pi, UzuraQp),
        VMSTATE_UINT32(rq_pi, UzuraQp),
        VMSTATE_UINT32(sq_ci, UzuraQp),
        VMSTATE_UINT32(rq_ci, UzuraQp),
        VMSTATE_STRUCT(attr, UzuraQp, 1, vmstate_uzura_qp_attr,
                       struct uz_qp_attr),
        VMSTATE_UINT32(mw_count, UzuraQp),
        VMSTATE_UINT32(xrcd, UzuraQp),
        VMSTATE_UINT32(flows, UzuraQp),
        VMSTATE_UINT64(raw_seq, UzuraQp),
        VMSTATE_UINT32(rss_refs, UzuraQp),
        VMSTATE_END_OF_LIST()
    }
};

static const VMStateDescription vmstate_uzura_mr = {
    .name = "uzura/mr",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_BOOL(valid, UzuraMr),
        VMSTATE_BOOL(free, UzuraMr),
        VMSTATE_UINT8(mw_type, UzuraMr),
        VMSTATE_UINT8(key, UzuraMr),
        VMSTATE_UINT8(flags, UzuraMr),
        VMSTATE_UINT8(page_shift, UzuraMr),
        VMSTATE_UINT32(uctx, UzuraMr),
        VMSTATE_UINT32(pdn, UzuraMr),
        VMSTATE_UINT32(access, UzuraMr),
        VMSTATE_UINT64(iova, UzuraMr),
        VMSTATE_UINT64(length, UzuraMr),
        VMSTATE_UINT64(pbl_addr, UzuraMr),
        VMSTATE_UINT32(npages, UzuraMr),
        VMSTATE_UINT32(max_pages, UzuraMr),
        VMSTATE_UINT64(gen, UzuraMr),
        VMSTATE_UINT32(mw_count, UzuraMr),
        VMSTATE_UINT32(mw_mr, UzuraMr),
        VMSTATE_UINT32(mw_qpn, UzuraMr),
        VMSTATE_UINT32(dm, UzuraMr),
        VMSTATE_UINT64(dm_base, UzuraMr),
        VMSTATE_END_OF_LIST()
    }
};

static const VMStateDescription vmstate_uzura_ah = {
    .name = "uzura/ah",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_BOOL(valid, UzuraAh),
        VMSTATE_UINT32(uctx, UzuraAh),
        VMSTATE_UINT32(pdn, UzuraAh),
        VMSTATE_UINT8_ARRAY(av.dgid, UzuraAh, 16),
        VMSTATE_UINT8_ARRAY(av.sgid, UzuraAh, 16),
        VMSTATE_UINT8_ARRAY(av.dmac, UzuraAh, 6),
        VMSTATE_UINT8(av.hop_limit, UzuraAh),
        VMSTATE_UINT8(av.traffic_class, UzuraAh),
        VMSTATE_UINT32(av.flow_label, UzuraAh),
        VMSTATE_END_OF_LIST()
    }
};

static const VMStateDescription vmstate_uzura_mcast = {
    .name = "uzura/mcast",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(addr, UzuraMcastGroup),
        VMSTATE_UINT32(nqp, UzuraMcastGroup),
        VMSTATE_UINT32_ARRAY(qpn, UzuraMcastGroup, UZ_MCAST_MAX_QP_ATTACH),
        VMSTATE_END_OF_LIST()
    }
};

static const VMStateDescription vmstate_uzura_xrcd = {
    .name = "uzura/xrcd",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_BOOL(valid, UzuraXrcd),
        VMSTATE_UINT32(users, UzuraXrcd),
        VMSTATE_END_OF_LIST()
    }
};

static const VMStateDescription vmstate_uzura_dm = {
    .name = "uzura/dm",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_BOOL(valid, UzuraDm),
        VMSTATE_UINT32(uctx, UzuraDm),
        VMSTATE_UINT32(first, UzuraDm),
        VMSTATE_UINT32(npages, UzuraDm),
        VMSTATE_UINT32(users, UzuraDm),
        VMSTATE_END_OF_LIST()
    }
};

static const VMStateDescription vmstate_uzura_swqe = {
    .name = "uzura/message",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64(wr_id, UzuraSwqe),
        VMSTATE_UINT64(seq, UzuraSwqe),
        VMSTATE_UINT32(sq_idx, UzuraSwqe),
        VMSTATE_UINT8(src, UzuraSwqe),
        VMSTATE_BOOL(park, UzuraSwqe),
        VMSTATE_INT32(src_id, UzuraSwqe),
        VMSTATE_UINT32(first_psn, UzuraSwqe),
        VMSTATE_UINT32(npkts, UzuraSwqe),
        VMSTATE_UINT32(byte_len, UzuraSwqe),
        VMSTATE_UINT8(opcode, UzuraSwqe),
        VMSTATE_BOOL(signaled, UzuraSwqe),
        VMSTATE_BOOL(done, UzuraSwqe),
        VMSTATE_UINT32(resp_got, UzuraSwqe),
        VMSTATE_UINT64(resp_bits, UzuraSwqe),
        VMSTATE_UINT32(resp_from, UzuraSwqe),
        VMSTATE_UINT8(status, UzuraSwqe),
        VMSTATE_UINT8(verr, UzuraSwqe),
        VMSTATE_END_OF_LIST()
    }
};

static const VMStateDescription vmstate_uzura_sge = {
    .name = "uzura/sge",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64(addr, struct uz_sge),
        VMSTATE_UINT32(length, struct uz_sge),
        VMSTATE_UINT32(lkey, struct uz_sge),
        VMSTATE_END_OF_LIST()
    }
};

static const VMStateDescription vmstate_uzura_rd_atom = {
    .name = "uzura/rd-atom",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_BOOL(valid, UzuraRdAtom),
        VMSTATE_UINT8(opcode, UzuraRdAtom),
        VMSTATE_BOOL(pending, UzuraRdAtom),
        VMSTATE_BOOL(again, UzuraRdAtom),
        VMSTATE_UINT32(psn, UzuraRdAtom),
        VMSTATE_UINT32(npkts, UzuraRdAtom),
        VMSTATE_UINT64(va, UzuraRdAtom),
        VMSTATE_UINT32(rkey, UzuraRdAtom),
        VMSTATE_UINT32(len, UzuraRdAtom),
        VMSTATE_UINT64(orig, UzuraRdAtom),
        VMSTATE_UINT32(sent, UzuraRdAtom),
        VMSTATE_UINT32(xrc_srqn, UzuraRdAtom),
        VMSTATE_END_OF_LIST()
    }
};

/*
 * A CRW's WQE as the requester decoded it (host order): its write reads
 * the data from it again at every (re)send.  A CRW is an RC QP's, so no
 * address vector.
 */
static const VMStateDescription vmstate_uzura_send_wr = {
    .name = "uzura/send-wr",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64(h.wr_id, UzuraSendWr),
        VMSTATE_UINT8(h.opcode, UzuraSendWr),
        VMSTATE_UINT8(h.flags, UzuraSendWr),
        VMSTATE_UINT8(h.num_sge, UzuraSendWr),
        VMSTATE_UINT32(h.inline_len, UzuraSendWr),
        VMSTATE_UINT32(h.imm_data, UzuraSendWr),
        VMSTATE_UINT32(h.rkey, UzuraSendWr),
        VMSTATE_UINT64(h.remote_addr, UzuraSendWr),
        VMSTATE_UINT64(h.crw.tag, UzuraSendWr),
        VMSTATE_UINT32(h.crw.length, UzuraSendWr),
        VMSTATE_UINT32(h.xrc_srqn, UzuraSendWr),
        VMSTATE_UINT32(sgl.num, UzuraSendWr),
        VMSTATE_UINT64(sgl.len, UzuraSendWr),
        VMSTATE_STRUCT_ARRAY(sgl.sge, UzuraSendWr, UZ_SGL_MAX, 1,
                             vmstate_uzura_sge, struct uz_sge),
        VMSTATE_UINT8_ARRAY(inl, UzuraSendWr, UZ_INLINE_MAX),
        VMSTATE_UINT64(len, UzuraSendWr),
        VMSTATE_END_OF_LIST()
    }
};

static const VMStateDescription vmstate_uzura_crw = {
    .name = "uzura/crw",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT8(state, UzuraCrw),
        VMSTATE_BOOL(in_sq, UzuraCrw),
        VMSTATE_BOOL(signaled, UzuraCrw),
        VMSTATE_UINT64(tag, UzuraCrw),
        VMSTATE_UINT32(sq_idx, UzuraCrw),
        VMSTATE_STRUCT(wr, UzuraCrw, 1, vmstate_uzura_send_wr, UzuraSendWr),
        VMSTATE_UINT64(va, UzuraCrw),
        VMSTATE_UINT32(rkey, UzuraCrw),
        VMSTATE_UINT32(length, UzuraCrw),
        VMSTATE_END_OF_LIST()
    }
};

/*
 * Also an idle table: messages of a QP in ERR may still name its free
 * entries.
 */
static bool uzura_xfer_crw_needed(void *opaque)
{
    return ((UzuraXfer *)opaque)->crw != NULL;
}

/* The table is allocated as at its first use; the stream fills it. */
static int uzura_xfer_crw_pre_load(void *opaque)
{
    UzuraXfer *x = opaque;

    uzura_crw_alloc(x->core, x);
    return 0;
}

/* A QP's CRW tag table, with the FIFO of matched CRWs (uzura-crw.c). */
static const VMStateDescription vmstate_uzura_xfer_crw = {
    .name = "uzura/transport/crw",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = uzura_xfer_crw_needed,
    .pre_load = uzura_xfer_crw_pre_load,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32_EQUAL(ncrw, UzuraXfer, NULL),
        VMSTATE_STRUCT_VARRAY_POINTER_UINT32(crw, UzuraXfer, ncrw,
                                             vmstate_uzura_crw, UzuraCrw),
        VMSTATE_VARRAY_UINT32(crw_ready, UzuraXfer, ncrw, 1,
                              vmstate_info_uint32, uint32_t),
        VMSTATE_UINT32(crw_rhead, UzuraXfer),
        VMSTATE_UINT32(crw_rnum, UzuraXfer),
        VMSTATE_END_OF_LIST()
    }
};

static const VMStateDescription vmstate_uzura_rndv = {
    .name = "uzura/rndv",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT8(state, UzuraRndv),
        VMSTATE_UINT16(idx, UzuraRndv),
        VMSTATE_UINT32(srqn, UzuraRndv),
        VMSTATE_UINT64(seq, UzuraRndv),
        VMSTATE_UINT64(tag, UzuraRndv),
        VMSTATE_UINT64(recv_wr_id, UzuraRndv),
        VMSTATE_STRUCT(sge, UzuraRndv, 1, vmstate_uzura_sge, struct uz_sge),
        VMSTATE_UINT8(num_sge, UzuraRndv),
        VMSTATE_UINT64(va, UzuraRndv),
        VMSTATE_UINT32(rkey, UzuraRndv),
        VMSTATE_UINT32(len, UzuraRndv),
        VMSTATE_END_OF_LIST()
    }
};

static bool uzura_xfer_tm_needed(void *opaque)
{
    UzuraXfer *x = opaque;

    return x->rndv || x->resp.tm_kind == UZ_TMK_EAGER;
}

/*
 * The slots, on both sides: saved (all free) also when only an EAGER
 * message is held; loaded into.
 */
static int uzura_xfer_tm_slots(void *opaque)
{
    uzura_tm_rndv_alloc(opaque);
    return 0;
}

/*
 * A TM QP's rendezvous slots, and the tag list entry an EAGER message
 * lands in (uzura-tm.c).
 */
static const VMStateDescription vmstate_uzura_xfer_tm = {
    .name = "uzura/transport/tm",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = uzura_xfer_tm_needed,
    .pre_save = uzura_xfer_tm_slots,
    .pre_load = uzura_xfer_tm_slots,
    .fields = (const VMStateField[]) {
        VMSTATE_STRUCT_VARRAY_POINTER_KNOWN(rndv, UzuraXfer,
                                            UZ_TM_RNDV_SLOTS, 1,
                                            vmstate_uzura_rndv, UzuraRndv),
        VMSTATE_UINT64(rndv_seq, UzuraXfer),
        VMSTATE_UINT16(resp.tm_idx, UzuraXfer),
        VMSTATE_UINT64(resp.tm_tag, UzuraXfer),
        VMSTATE_END_OF_LIST()
    }
};

static const VMStateDescription vmstate_uzura_rp = {
    .name = "uzura/rp",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64(rc, UzuraRp),
        VMSTATE_UINT64(rt, UzuraRp),
        VMSTATE_UINT32(alpha, UzuraRp),
        VMSTATE_INT64(alpha_ns, UzuraRp),
        VMSTATE_INT64(inc_ns, UzuraRp),
        VMSTATE_INT64(cut_ns, UzuraRp),
        VMSTATE_UINT32(t_count, UzuraRp),
        VMSTATE_UINT32(bc_count, UzuraRp),
        VMSTATE_UINT64(bytes, UzuraRp),
        VMSTATE_INT64(next_ns, UzuraRp),
        VMSTATE_END_OF_LIST()
    }
};

static bool uzura_xfer_rp_needed(void *opaque)
{
    return ((UzuraXfer *)opaque)->rp != NULL;
}

/* Once: a stream may name the subsection again. */
static int uzura_xfer_rp_pre_load(void *opaque)
{
    UzuraXfer *x = opaque;

    if (!x->rp) {
        uzura_rp_new(x);
    }
    return 0;
}

/*
 * A QP's rate limiter (uzura-dcqcn.c): its rates, alpha, the counts and
 * the instants of its periods on the virtual clock, which moves with the
 * VM; the pacing timer is armed again by the next packet.
 */
static const VMStateDescription vmstate_uzura_xfer_rp = {
    .name = "uzura/transport/rp",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = uzura_xfer_rp_needed,
    .pre_load = uzura_xfer_rp_pre_load,
    .fields = (const VMStateField[]) {
        VMSTATE_STRUCT_POINTER(rp, UzuraXfer, vmstate_uzura_rp, UzuraRp),
        VMSTATE_END_OF_LIST()
    }
};

/* A QP's transport: the requester, the completer and the responder. */
static const VMStateDescription vmstate_uzura_xfer = {
    .name = "uzura/transport",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32_EQUAL(req.nmsg, UzuraXfer, NULL),
        VMSTATE_STRUCT_VARRAY_POINTER_UINT32(req.msg, UzuraXfer, req.nmsg,
                                             vmstate_uzura_swqe, UzuraSwqe),
        VMSTATE_UINT32(req.oldest, UzuraXfer),
        VMSTATE_UINT32(req.next, UzuraXfer),
        VMSTATE_UINT32(req.end, UzuraXfer),
        VMSTATE_UINT64(req.started, UzuraXfer),
        VMSTATE_UINT32(req.sq_next, UzuraXfer),
        VMSTATE_BOOL(req.cur_active, UzuraXfer),
        VMSTATE_UINT32(req.next_psn, UzuraXfer),
        VMSTATE_UINT32(req.end_psn, UzuraXfer),
        VMSTATE_BOOL(req.blocked, UzuraXfer),

        VMSTATE_UINT32(comp.acked_psn, UzuraXfer),
        VMSTATE_UINT8(comp.retry_left, UzuraXfer),
        VMSTATE_INT64(comp.progress_ns, UzuraXfer),
        VMSTATE_UINT8(comp.rnr_left, UzuraXfer),
        VMSTATE_BOOL(comp.rnr_wait, UzuraXfer),
        VMSTATE_INT64(comp.srtt_ns, UzuraXfer),
        VMSTATE_INT64(comp.rttvar_ns, UzuraXfer),
        VMSTATE_UINT8(comp.rto_shift, UzuraXfer),

        VMSTATE_UINT32(resp.epsn, UzuraXfer),
        VMSTATE_UINT32(resp.msn, UzuraXfer),
        VMSTATE_BOOL(resp.nak_seq_sent, UzuraXfer),
        VMSTATE_BOOL(resp.uc_drop, UzuraXfer),
        VMSTATE_BOOL(resp.ack_owed, UzuraXfer),
        VMSTATE_UINT8(resp.in_msg, UzuraXfer),
        VMSTATE_BOOL(resp.have_rwqe, UzuraXfer),
        VMSTATE_BOOL(resp.rwqe_failed, UzuraXfer),
        VMSTATE_UINT64(resp.rwqe.wr_id, UzuraXfer),
        VMSTATE_UINT32(resp.rwqe.sgl.num, UzuraXfer),
        VMSTATE_UINT64(resp.rwqe.sgl.len, UzuraXfer),
        VMSTATE_STRUCT_ARRAY(resp.rwqe.sgl.sge, UzuraXfer, UZ_SGL_MAX, 1,
                             vmstate_uzura_sge, struct uz_sge),
        VMSTATE_UINT32(resp.xrc_srqn, UzuraXfer),
        VMSTATE_UINT8(resp.tm_kind, UzuraXfer),
        VMSTATE_UINT32(resp.recv_off, UzuraXfer),
        VMSTATE_UINT64(resp.wr_va, UzuraXfer),
        VMSTATE_UINT32(resp.wr_rkey, UzuraXfer),
        VMSTATE_UINT32(resp.wr_len, UzuraXfer),
        VMSTATE_UINT32(resp.wr_off, UzuraXfer),
        VMSTATE_UINT32_EQUAL(resp.nrd, UzuraXfer, NULL),
        VMSTATE_STRUCT_VARRAY_POINTER_UINT32(resp.rd, UzuraXfer, resp.nrd,
                                             vmstate_uzura_rd_atom,
                                             UzuraRdAtom),
        VMSTATE_UINT32(resp.rd_head, UzuraXfer),
        VMSTATE_BOOL(resp.err_owed, UzuraXfer),
        VMSTATE_UINT32(resp.err_psn, UzuraXfer),
        VMSTATE_UINT8(resp.err_syndrome, UzuraXfer),
        VMSTATE_UINT8(resp.err_status, UzuraXfer),
        VMSTATE_UINT8(resp.err_verr, UzuraXfer),
        VMSTATE_INT64(resp.np_cnp_ns, UzuraXfer),
        VMSTATE_BOOL(resp.np_cnp_once, UzuraXfer),

        VMSTATE_TIMER_PTR(timer, UzuraXfer),
        VMSTATE_END_OF_LIST()
    },
    .subsections = (const VMStateDescription * const []) {
        &vmstate_uzura_xfer_crw,
        &vmstate_uzura_xfer_tm,
        &vmstate_uzura_xfer_rp,
        NULL
    }
};

/*
 * The transports of the valid QPs, each after its QP number, then
 * UINT32_MAX.  Loading one allocates it as CREATE_QP would, once the QP
 * table says the QP is there and what its SQ's depth is.
 */
static int uzura_xfers_put(QEMUFile *f, void *pv, size_t size,
                           const VMStateField *field, JSONWriter *vmdesc)
{
    UzuraCore *core = pv;
    uint32_t i;
    int ret;

    for (i = 0; i < core->rdma.lim.max_qp; i++) {
        if (!core->rdma.qp[i].valid) {
            continue;
        }
        qemu_put_be32(f, i);
        ret = vmstate_save_state(f, &vmstate_uzura_xfer, core->rdma.qp[i].x,
                                 NULL);
        if (ret) {
            return ret;
        }
    }
    qemu_put_be32(f, UINT32_MAX);
    return 0;
}

static int uzura_xfers_get(QEMUFile *f, void *pv, size_t size,
                           const VMStateField *field)
{
    UzuraCore *core = pv;
    UzuraRdma *r = &core->rdma;
    uint32_t qpn;
    int ret;

    while ((qpn = qemu_get_be32(f)) != UINT32_MAX) {
        UzuraQp *qp = qpn < r->lim.max_qp ? &r->qp[qpn] : NULL;

        if (qemu_file_get_error(f)) {
            return qemu_file_get_error(f);
        }
        if (!qp || !qp->valid || qp->x || qp->sq_log_depth > 16) {
            return uzura_mig_refuse("a transport for QP %u, which is not "
                                    "there, has one or has an SQ of 2^%u",
                                    qpn, qp ? qp->sq_log_depth : 0);
        }
        uzura_qp_restore_xfer(core, qp, qpn);
        ret = vmstate_load_state(f, &vmstate_uzura_xfer, qp->x, 1);
        if (ret) {
            return ret;
        }
    }
    return 0;
}

static const VMStateInfo vmstate_info_uzura_xfers = {
    .name = "uzura transports",
    .get = uzura_xfers_get,
    .put = uzura_xfers_put,
};

static const VMStateDescription vmstate_uzura_tm_entry = {
    .name = "uzura/tm-entry",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT8(state, UzuraTmEntry),
        VMSTATE_UINT8(num_sge, UzuraTmEntry),
        VMSTATE_UINT64(seq, UzuraTmEntry),
        VMSTATE_UINT64(tag, UzuraTmEntry),
        VMSTATE_UINT64(mask, UzuraTmEntry),
        VMSTATE_UINT64(recv_wr_id, UzuraTmEntry),
        VMSTATE_STRUCT(sge, UzuraTmEntry, 1, vmstate_uzura_sge,
                       struct uz_sge),
        VMSTATE_END_OF_LIST()
    }
};

/* A TM SRQ's tag list and its ring of list operations (uzura-tm.c). */
static const VMStateDescription vmstate_uzura_tm = {
    .name = "uzura/tm-srq",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_STRUCT_VARRAY_POINTER_UINT32(e, UzuraTm, max_tags,
                                             vmstate_uzura_tm_entry,
                                             UzuraTmEntry),
        VMSTATE_UINT64(ops_addr, UzuraTm),
        VMSTATE_UINT32(ops_log_depth, UzuraTm),
        VMSTATE_UINT32(ops_pi, UzuraTm),
        VMSTATE_UINT32(ops_ci, UzuraTm),
        VMSTATE_UINT32(ops_db, UzuraTm),
        VMSTATE_UINT32(unexp, UzuraTm),
        VMSTATE_UINT32(sw, UzuraTm),
        VMSTATE_UINT64(add_seq, UzuraTm),
        VMSTATE_END_OF_LIST()
    }
};

/*
 * The TM SRQs' lists: each after its SRQ number and list size, then
 * UINT32_MAX.  A list is allocated for a valid SRQ, at most once and at
 * most UZ_TM_MAX_TAGS entries; post_load checks the rest.
 */
static int uzura_tms_put(QEMUFile *f, void *pv, size_t size,
                         const VMStateField *field, JSONWriter *vmdesc)
{
    UzuraRdma *r = &((UzuraCore *)pv)->rdma;
    uint32_t i;
    int ret;

    for (i = 0; i < r->lim.max_srq; i++) {
        if (!r->srq[i].valid || !r->srq[i].tm) {
            continue;
        }
        qemu_put_be32(f, i);
        qemu_put_be32(f, r->srq[i].tm->max_tags);
        ret = vmstate_save_state(f, &vmstate_uzura_tm, r->srq[i].tm, NULL);
        if (ret) {
            return ret;
        }
    }
    qemu_put_be32(f, UINT32_MAX);
    return 0;
}

static int uzura_tms_get(QEMUFile *f, void *pv, size_t size,
                         const VMStateField *field)
{
    UzuraRdma *r = &((UzuraCore *)pv)->rdma;
    uint32_t srqn, max_tags;
    int ret;

    while ((srqn = qemu_get_be32(f)) != UINT32_MAX) {
        UzuraSrq *srq = srqn < r->lim.max_srq ? &r->srq[srqn] : NULL;
        UzuraTm *tm;

        max_tags = qemu_get_be32(f);
        if (qemu_file_get_error(f)) {
            return qemu_file_get_error(f);
        }
        if (!srq || !srq->valid || srq->tm || !max_tags ||
            max_tags > UZ_TM_MAX_TAGS) {
            return uzura_mig_refuse("a tag list of %u entries for SRQ %u, "
                                    "which is not there or has one",
                                    max_tags, srqn);
        }
        tm = g_new0(UzuraTm, 1);
        tm->max_tags = max_tags;
        tm->e = g_new0(UzuraTmEntry, max_tags);
        srq->tm = tm;
        ret = vmstate_load_state(f, &vmstate_uzura_tm, tm, 1);
        if (ret) {
            return ret;
        }
    }
    return 0;
}

static const VMStateInfo vmstate_info_uzura_tms = {
    .name = "uzura TM SRQs",
    .get = uzura_tms_get,
    .put = uzura_tms_put,
};

static bool uzura_tm_needed(void *opaque)
{
    UzuraRdma *r = &((UzuraCore *)opaque)->rdma;
    uint32_t i;

    for (i = 0; i < r->lim.max_srq; i++) {
        if (r->srq[i].valid && r->srq[i].tm) {
            return true;
        }
    }
    return false;
}

static const VMStateDescription vmstate_uzura_core_tm = {
    .name = "uzura/core/tm",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = uzura_tm_needed,
    .fields = (const VMStateField[]) {
        {
            .name = "tm-srqs",
            .info = &vmstate_info_uzura_tms,
            .flags = VMS_SINGLE,
            .size = sizeof(UzuraCore),
        },
        VMSTATE_END_OF_LIST()
    }
};

static const VMStateDescription vmstate_uzura_flow = {
    .name = "uzura/flow",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_BOOL(valid, UzuraFlow),
        VMSTATE_UINT32(qpn, UzuraFlow),
        VMSTATE_UINT32(uctx, UzuraFlow),
        /* As CREATE_FLOW read it: bytes, 16-bit fields as sent. */
        VMSTATE_BUFFER_UNSAFE(spec, UzuraFlow, 1,
                              sizeof(struct uz_flow_spec)),
        VMSTATE_END_OF_LIST()
    }
};

static bool uzura_flows_needed(void *opaque)
{
    return ((UzuraCore *)opaque)->rdma.nflows;
}

/* The flow rules of raw and RSS QPs (uzura-raw.c). */
static const VMStateDescription vmstate_uzura_core_flows = {
    .name = "uzura/core/flows",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = uzura_flows_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_STRUCT_ARRAY(rdma.flow, UzuraCore, UZ_FLOW_MAX, 1,
                             vmstate_uzura_flow, UzuraFlow),
        VMSTATE_END_OF_LIST()
    }
};

/*
 * The RSS QPs' tables: each after its QP number and size, then
 * UINT32_MAX.  A table is allocated for a valid RSS QP, at most once and
 * at most 2^UZ_RSS_LOG_MAX entries; post_load checks what they name.
 */
static int uzura_rss_put(QEMUFile *f, void *pv, size_t size,
                         const VMStateField *field, JSONWriter *vmdesc)
{
    UzuraRdma *r = &((UzuraCore *)pv)->rdma;
    uint32_t i, k;

    for (i = 0; i < r->lim.max_qp; i++) {
        const UzuraRss *rss = r->qp[i].rss;

        if (!r->qp[i].valid || !rss) {
            continue;
        }
        qemu_put_be32(f, i);
        qemu_put_be32(f, rss->mask + 1);
        qemu_put_buffer(f, rss->key, sizeof(rss->key));
        qemu_put_be32(f, rss->fields);
        for (k = 0; k <= rss->mask; k++) {
            qemu_put_be32(f, rss->qpn[k]);
        }
    }
    qemu_put_be32(f, UINT32_MAX);
    return 0;
}

static int uzura_rss_get(QEMUFile *f, void *pv, size_t size,
                         const VMStateField *field)
{
    UzuraRdma *r = &((UzuraCore *)pv)->rdma;
    uint32_t qpn, n, k;

    while ((qpn = qemu_get_be32(f)) != UINT32_MAX) {
        UzuraQp *qp = qpn < r->lim.max_qp ? &r->qp[qpn] : NULL;
        UzuraRss *rss;

        n = qemu_get_be32(f);
        if (qemu_file_get_error(f)) {
            return qemu_file_get_error(f);
        }
        if (!qp || !qp->valid || qp->type != UZ_QPT_RSS || qp->rss ||
            !is_power_of_2(n) || n > (1u << UZ_RSS_LOG_MAX)) {
            return uzura_mig_refuse("an RSS table of %u entries for QP %u, "
                                    "which is no RSS QP or has one", n, qpn);
        }
        rss = g_malloc0(sizeof(*rss) + n * sizeof(rss->qpn[0]));
        rss->mask = n - 1;
        qp->rss = rss;
        qemu_get_buffer(f, rss->key, sizeof(rss->key));
        rss->fields = qemu_get_be32(f);
        for (k = 0; k < n; k++) {
            rss->qpn[k] = qemu_get_be32(f);
        }
        if (qemu_file_get_error(f)) {
            return qemu_file_get_error(f);
        }
    }
    return 0;
}

static const VMStateInfo vmstate_info_uzura_rss = {
    .name = "uzura RSS tables",
    .get = uzura_rss_get,
    .put = uzura_rss_put,
};

static bool uzura_rss_needed(void *opaque)
{
    UzuraRdma *r = &((UzuraCore *)opaque)->rdma;
    uint32_t i;

    for (i = 0; i < r->lim.max_qp; i++) {
        if (r->qp[i].valid && r->qp[i].rss) {
            return true;
        }
    }
    return false;
}

static const VMStateDescription vmstate_uzura_core_rss = {
    .name = "uzura/core/rss",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = uzura_rss_needed,
    .fields = (const VMStateField[]) {
        {
            .name = "rss-tables",
            .info = &vmstate_info_uzura_rss,
            .flags = VMS_SINGLE,
            .size = sizeof(UzuraCore),
        },
        VMSTATE_END_OF_LIST()
    }
};

/*
 * The counters as one array: a counter added later goes in a subsection,
 * not into this array.
 */
#define UZ_MIG_NCOUNTERS    (sizeof(UzuraCounters) / sizeof(uint64_t))
QEMU_BUILD_BUG_ON(sizeof(UzuraCounters) % sizeof(uint64_t));

#define VMSTATE_UZURA_COUNTERS(_f, _s) {                            \
    .name = stringify(_f),                                          \
    .num = UZ_MIG_NCOUNTERS,                                        \
    .info = &vmstate_info_uint64,                                   \
    .size = sizeof(uint64_t),                                       \
    .flags = VMS_ARRAY,                                             \
    .offset = offsetof(_s, _f),                                     \
}

/* An object table, as long as the property that sizes it says. */
#define VMSTATE_UZURA_TABLE(_f, _n, _vmsd, _type)                   \
    VMSTATE_STRUCT_VARRAY_POINTER_UINT32(rdma._f, UzuraCore, _n, _vmsd, \
                                         _type)

/* ---- checking a stream, and what it leaves to rebuild ---- */

#define UZ_MIG_FAIL(fmt, ...) do {                                      \
        uzura_mig_refuse(fmt, ## __VA_ARGS__);                          \
        return false;                                                   \
    } while (0)

/* A ring's indices: 24 bits, the producer at most a ring ahead. */
static bool uzura_mig_ring_ok(uint32_t pi, uint32_t ci, uint32_t log_depth)
{
    return pi <= UZ_IDX_MASK && ci <= UZ_IDX_MASK && log_depth < 24 &&
           uzura_ring_used(pi, ci) <= (1u << log_depth);
}

/*
 * Give doorbell slot @off to (@kind, @index): a slot of the pages, not
 * the clock's, and no other queue's.
 */
static bool uzura_mig_db(UzuraCore *core, uint32_t off, UzuraDbKind kind,
                         uint32_t index)
{
    uint32_t slot = off / 4;

    if (off % 4 || off >= core->db_pages * UZ_DB_PAGE_SIZE ||
        off % UZ_DB_PAGE_SIZE >= UZ_DB_CLOCK || core->db_map[slot]) {
        UZ_MIG_FAIL("doorbell 0x%x of queue kind %u, %u is not free", off,
                    kind, index);
    }
    core->db_map[slot] = (uint32_t)kind << 24 | index;
    return true;
}

static bool uzura_mig_eq_ref(UzuraCore *core, uint32_t eqn)
{
    return eqn < UZ_MAX_EQ && core->eq[eqn].valid;
}

static bool uzura_mig_pd_ref(UzuraCore *core, uint32_t pdn, uint32_t uctx)
{
    return uzura_pd_lookup(core, pdn, uctx) != NULL;
}

static bool uzura_mig_cq_ref(UzuraCore *core, uint32_t cqn)
{
    return cqn < core->rdma.lim.max_cq && core->rdma.cq[cqn].valid;
}

static bool uzura_mig_core_ok(UzuraCore *core)
{
    UzuraAdmin *a = &core->admin;
    uint32_t i;

    if (a->enabled &&
        (a->log_depth < UZ_ADMIN_DEPTH_MIN ||
         a->log_depth > UZ_ADMIN_DEPTH_MAX ||
         !uzura_mig_ring_ok(a->pi, a->ci, a->log_depth))) {
        UZ_MIG_FAIL("admin queue of depth 2^%u at %u/%u", a->log_depth,
                    a->pi, a->ci);
    }
    if (core->mtu < UZ_MIN_MTU || core->mtu > UZ_MAX_MTU) {
        UZ_MIG_FAIL("MTU %u", core->mtu);
    }
    uzura_db_reset(core);
    for (i = 0; i < UZ_MAX_EQ; i++) {
        UzuraEq *eq = &core->eq[i];

        if (!eq->valid) {
            continue;
        }
        if (eq->log_depth < UZ_EQ_DEPTH_MIN ||
            eq->log_depth > UZ_EQ_DEPTH_MAX ||
            !uzura_mig_ring_ok(eq->pi, eq->ci, eq->log_depth) ||
            eq->vector >= core->num_vectors) {
            UZ_MIG_FAIL("EQ %u: depth 2^%u, vector %u", i, eq->log_depth,
                        eq->vector);
        }
        if (!uzura_mig_db(core, eq->db_offset, UZ_DBK_EQ, i)) {
            return false;
        }
    }
    for (i = 0; i < 2; i++) {
        UzuraEthRing *ring = i ? &core->eth_rx : &core->eth_tx;

        if (!ring->valid) {
            continue;
        }
        if (ring->log_depth < UZ_ETH_DEPTH_MIN ||
            ring->log_depth > UZ_ETH_DEPTH_MAX ||
            !uzura_mig_ring_ok(ring->pi, ring->ci, ring->log_depth) ||
            !uzura_mig_eq_ref(core, ring->eqn)) {
            UZ_MIG_FAIL("Ethernet %s ring: depth 2^%u, EQ %u",
                        i ? "RX" : "TX", ring->log_depth, ring->eqn);
        }
        if (!uzura_mig_db(core, ring->db_offset,
                          i ? UZ_DBK_ETH_RX : UZ_DBK_ETH_TX, 0)) {
            return false;
        }
    }
    return true;
}

/*
 * A TM SRQ's list: its ring of operations as CREATE_SRQ takes it, each
 * entry of it in a state and with at most one SGE.  Operations still
 * to do go on.
 */
static bool uzura_mig_tm_ok(UzuraCore *core, UzuraSrq *srq, uint32_t srqn)
{
    UzuraTm *tm = srq->tm;
    uint32_t k;

    if (srq->xrc || !uzura_cq_lookup(core, srq->cqn, srq->uctx) ||
        tm->ops_log_depth < 1 ||
        tm->ops_log_depth > UZ_TM_LOG_MAX_OPS ||
        !uzura_mig_ring_ok(tm->ops_pi, tm->ops_ci, tm->ops_log_depth) ||
        !uzura_dma_ok(core, tm->ops_addr,
                      sizeof(struct uz_tm_op) << tm->ops_log_depth, false)) {
        UZ_MIG_FAIL("SRQ %u: CQ %u, a ring of 2^%u list operations at "
                    "0x%" PRIx64 ", indices %u/%u", srqn, srq->cqn,
                    tm->ops_log_depth, tm->ops_addr, tm->ops_pi, tm->ops_ci);
    }
    for (k = 0; k < tm->max_tags; k++) {
        if (tm->e[k].state > UZ_TME_BUSY ||
            tm->e[k].num_sge > UZ_TM_MAX_SGE) {
            UZ_MIG_FAIL("SRQ %u: tag list entry %u in state %u with %u "
                        "SGEs", srqn, k, tm->e[k].state, tm->e[k].num_sge);
        }
    }
    if (tm->ops_pi != tm->ops_ci) {
        core->rdma.tm_owed = true;
    }
    return uzura_mig_db(core, tm->ops_db, UZ_DBK_TM, srqn);
}

static bool uzura_mig_cqs_ok(UzuraCore *core)
{
    UzuraRdma *r = &core->rdma;
    uint32_t i;

    for (i = 0; i < r->lim.max_pd; i++) {
        if (r->pd[i].valid && !uzura_uctx_ok(core, r->pd[i].uctx)) {
            UZ_MIG_FAIL("PD %u: context %u", i, r->pd[i].uctx);
        }
    }
    for (i = 0; i < r->lim.max_cq; i++) {
        UzuraCq *cq = &r->cq[i];

        if (!cq->valid) {
            continue;
        }
        if (cq->log_depth < 1 || (1u << MIN(cq->log_depth, 31)) >
            r->lim.max_cqe || !uzura_mig_ring_ok(cq->pi, cq->ci,
                                                 cq->log_depth) ||
            (cq->arm && cq->arm != UZ_DB_ARM >> 24 &&
             cq->arm != UZ_DB_ARM_SOLICITED >> 24) ||
            !uzura_mig_eq_ref(core, cq->eqn) ||
            !uzura_uctx_ok(core, cq->uctx)) {
            UZ_MIG_FAIL("CQ %u: depth 2^%u, EQ %u, context %u", i,
                        cq->log_depth, cq->eqn, cq->uctx);
        }
        cq->page_addr = UZ_CQ_NO_PAGE;
        if (!uzura_mig_db(core, cq->db_offset, UZ_DBK_CQ, i)) {
            return false;
        }
    }
    for (i = 0; i < r->lim.max_srq; i++) {
        UzuraSrq *srq = &r->srq[i];

        if (!srq->valid) {
            continue;
        }
        if (srq->log_depth < 1 || srq->log_depth > 16 ||
            (1u << srq->log_depth) > r->lim.max_srq_wr ||
            srq->log_wqe_size < 4 || srq->log_wqe_size > 9 ||
            !uzura_mig_ring_ok(srq->pi, srq->ci, srq->log_depth) ||
            !uzura_uctx_ok(core, srq->uctx) ||
            !uzura_mig_pd_ref(core, srq->pdn, srq->uctx) ||
            (srq->xrc && (srq->xrcd >= UZ_XRCD_MAX ||
                          !r->xrcd[srq->xrcd].valid ||
                          !uzura_mig_cq_ref(core, srq->cqn)))) {
            UZ_MIG_FAIL("SRQ %u: depth 2^%u, WQEs of 2^%u bytes, PD %u, "
                        "CQ %u, XRC domain %u", i, srq->log_depth,
                        srq->log_wqe_size, srq->pdn, srq->cqn, srq->xrcd);
        }
        if (!uzura_mig_db(core, srq->db_offset, UZ_DBK_SRQ, i) ||
            (srq->tm && !uzura_mig_tm_ok(core, srq, i))) {
            return false;
        }
    }
    return true;
}

static bool uzura_mig_srq_ref(UzuraCore *core, uint32_t srqn)
{
    return srqn == UZ_NO_SRQ || uzura_srq_lookup(core, srqn);
}

static bool uzura_mig_qp_queues_ok(UzuraCore *core, UzuraQp *qp)
{
    UzuraRdma *r = &core->rdma;

    if (uzura_qp_has_sq(qp) ?
        (qp->sq_log_depth < 1 || qp->sq_log_depth > 16 ||
         (1u << qp->sq_log_depth) > r->lim.max_qp_wr ||
         qp->sq_log_wqe_size < 6 || qp->sq_log_wqe_size > 9 ||
         !uzura_mig_ring_ok(qp->sq_pi, qp->sq_ci, qp->sq_log_depth) ||
         !uzura_mig_cq_ref(core, qp->send_cqn)) :
        /* No SQ: what CREATE_QP leaves, which nothing changes. */
        (qp->sq_log_depth || qp->sq_log_wqe_size || qp->sq_pi ||
         qp->sq_ci || qp->send_cqn != UINT32_MAX)) {
        return false;
    }
    if (uzura_qp_has_rq(qp) ?
        (qp->rq_log_depth < 1 || qp->rq_log_depth > 16 ||
         (1u << qp->rq_log_depth) > r->lim.max_qp_wr ||
         qp->rq_log_wqe_size < 4 || qp->rq_log_wqe_size > 9 ||
         !uzura_mig_ring_ok(qp->rq_pi, qp->rq_ci, qp->rq_log_depth)) :
        (qp->rq_log_depth || qp->rq_log_wqe_size || qp->rq_pi ||
         qp->rq_ci)) {
        return false;
    }
    /* An XRC target's is its last SRQ's; none before its first message. */
    if (uz_qpt_receives(qp->type) ? !uzura_mig_cq_ref(core, qp->recv_cqn) :
        qp->recv_cqn != UINT32_MAX &&
        (qp->type != UZ_QPT_XRC_TGT ||
         !uzura_mig_cq_ref(core, qp->recv_cqn))) {
        return false;
    }
    /* An RSS QP has no states, and no SRQ. */
    if (qp->type == UZ_QPT_RSS &&
        (qp->attr.state != UZ_QPS_RESET || qp->srqn != UZ_NO_SRQ)) {
        return false;
    }
    return uzura_mig_srq_ref(core, qp->srqn);
}

/*
 * A CRW's decoded WQE, as uzura_sq_load leaves it: its SGEs or its
 * inline bytes make its length.  Checked for free entries too: a write
 * flushed in ERR may still read its entry.
 */
static bool uzura_mig_send_wr_ok(UzuraCore *core, const UzuraSendWr *wr)
{
    const UzuraLimits *l = &core->rdma.lim;
    uint64_t len = 0;
    uint32_t k;

    if (wr->h.flags & UZ_WQE_F_INLINE) {
        return !wr->sgl.num &&
               wr->h.inline_len <= MIN(l->max_inline, UZ_INLINE_MAX) &&
               wr->len == wr->h.inline_len;
    }
    if (wr->sgl.num > l->max_sge || wr->sgl.num != wr->h.num_sge) {
        return false;
    }
    for (k = 0; k < wr->sgl.num; k++) {
        len += wr->sgl.sge[k].length;
    }
    return len == wr->sgl.len && len == wr->len;
}

/*
 * An RC QP's CRW tag table: entries in a state, with the WQEs they
 * hold; the FIFO of matched ones lists each READY entry once.
 */
static bool uzura_mig_crw_ok(UzuraCore *core, UzuraQp *qp, uint32_t qpn)
{
    UzuraXfer *x = qp->x;
    g_autofree unsigned long *listed = NULL;
    uint32_t k, e, nready = 0;

    if (!x->crw) {
        return true;
    }
    if (qp->type != UZ_QPT_RC || x->crw_rhead >= x->ncrw ||
        x->crw_rnum > x->ncrw) {
        UZ_MIG_FAIL("QP %u: a CRW table with %u matched from %u", qpn,
                    x->crw_rnum, x->crw_rhead);
    }
    for (k = 0; k < x->ncrw; k++) {
        const UzuraCrw *c = &x->crw[k];

        if (c->state > UZ_CRW_SENDING ||
            !uzura_mig_send_wr_ok(core, &c->wr) || c->wr.len > UZ_MAX_MSG ||
            (c->state != UZ_CRW_FREE && c->state != UZ_CRW_OFFERED &&
             c->wr.h.opcode != UZ_WR_CRW)) {
            UZ_MIG_FAIL("QP %u: CRW table entry %u in state %u, WQE "
                        "opcode %u of %u SGEs", qpn, k, c->state,
                        c->wr.h.opcode, c->wr.sgl.num);
        }
        nready += c->state == UZ_CRW_READY;
    }
    listed = bitmap_new(x->ncrw);
    for (k = 0; k < x->crw_rnum; k++) {
        e = x->crw_ready[(x->crw_rhead + k) % x->ncrw];
        if (e >= x->ncrw || x->crw[e].state != UZ_CRW_READY ||
            test_and_set_bit(e, listed)) {
            UZ_MIG_FAIL("QP %u: matched CRW %u is entry %u", qpn, k, e);
        }
    }
    if (nready != x->crw_rnum) {
        UZ_MIG_FAIL("QP %u: %u CRWs matched, %u listed", qpn, nready,
                    x->crw_rnum);
    }
    return true;
}

/*
 * Entry @idx of @qp's TM SRQ has a holder: it must be busy, and held
 * only once (@held), or its second holder would free it after another
 * ADD took it.
 */
QEMU_BUILD_BUG_ON(UZ_TM_MAX_TAGS > 256);     /* the key's low 8 bits */

static bool uzura_mig_tm_hold(UzuraTm *tm, UzuraQp *qp, uint32_t idx,
                              GHashTable *held)
{
    return idx < tm->max_tags && tm->e[idx].state == UZ_TME_BUSY &&
           g_hash_table_add(held, GUINT_TO_POINTER(qp->srqn << 8 | idx));
}

/*
 * A TM QP's side of tag matching: the EAGER message in hand lands in an
 * entry busy with it; a rendezvous not yet read names its SRQ's busy
 * entry.  No two of them name the same entry.
 */
static bool uzura_mig_xfer_tm_ok(UzuraCore *core, UzuraQp *qp, uint32_t qpn,
                                 GHashTable *held)
{
    UzuraXfer *x = qp->x;
    UzuraTm *tm = uzura_tm_qp(core, qp) ? core->rdma.srq[qp->srqn].tm :
                                          NULL;
    uint32_t s;

    if ((x->resp.tm_kind != UZ_TMK_NONE || x->rndv) && !tm) {
        UZ_MIG_FAIL("QP %u: tag matching state without a TM SRQ", qpn);
    }
    if (x->resp.tm_kind > UZ_TMK_EAGER ||
        (x->resp.tm_kind == UZ_TMK_EAGER &&
         !uzura_mig_tm_hold(tm, qp, x->resp.tm_idx, held))) {
        UZ_MIG_FAIL("QP %u: a message of TM kind %u into entry %u", qpn,
                    x->resp.tm_kind, x->resp.tm_idx);
    }
    for (s = 0; x->rndv && s < UZ_TM_RNDV_SLOTS; s++) {
        const UzuraRndv *r = &x->rndv[s];
        bool reading = r->state == UZ_RNDV_READ_READY ||
                       r->state == UZ_RNDV_READ;

        if (r->state > UZ_RNDV_FIN || r->num_sge > UZ_TM_MAX_SGE ||
            r->len > UZ_MAX_MSG ||
            (reading && (r->srqn != qp->srqn ||
                         !uzura_mig_tm_hold(tm, qp, r->idx, held)))) {
            UZ_MIG_FAIL("QP %u: rendezvous %u in state %u, SRQ %u entry %u",
                        qpn, s, r->state, r->srqn, r->idx);
        }
    }
    return true;
}

/*
 * A QP's rate limiter: only on a QP a CNP can cut (one that sends RC, UC
 * or XRC, in RTS or SQD, and kept in SQE); rates of 1 Mb/s (rpg_min_rate's
 * least) to a link's most, alpha below one, fewer bytes counted than the
 * largest rpg_byte_reset.  What this side's rpg_byte_reset leaves over counts
 * towards its next step.  The virtual clock is never negative (a cut's
 * start may lie up to a monitor period before 0).  Instants later than
 * now, and a next packet more than a second away (a packet's wire time
 * is 33 ms at the lowest rate), are now: a new qtest process starts its
 * clock again, and no stream may hold a QP back.  With roce_rp_enable
 * off here, the limiter goes, as every one does when it is turned off.
 */
static bool uzura_mig_rp_ok(UzuraCore *core, UzuraQp *qp, uint32_t qpn)
{
    UzuraRp *rp = qp->x->rp;
    int64_t now = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);

    if (!uzura_qp_has_sq(qp) || uzura_qp_is_ud(qp) || uzura_qp_is_raw(qp) ||
        qp->attr.state < UZ_QPS_RTS || qp->attr.state > UZ_QPS_SQE ||
        rp->rc < 1000 || rp->rc > (uint64_t)UZ_SPEED_MAX * 1000 ||
        rp->rt < 1000 || rp->rt > (uint64_t)UZ_SPEED_MAX * 1000 ||
        rp->alpha >= UZ_ALPHA_ONE || rp->bytes > UZ_RP_BYTES_MAX ||
        rp->alpha_ns < 0 || rp->inc_ns < 0 || rp->next_ns < 0 ||
        rp->cut_ns < -2 * NANOSECONDS_PER_SECOND) {
        UZ_MIG_FAIL("QP %u: type %u in state %u, a rate limiter at %"
                    PRIu64 " of %" PRIu64 " kb/s, alpha %u, %" PRIu64
                    " bytes", qpn, qp->type, qp->attr.state, rp->rc, rp->rt,
                    rp->alpha, rp->bytes);
    }
    if (!core->rdma.cc.rp_enable) {
        uzura_rp_free(qp);
        return true;
    }
    rp->bytes %= MAX(core->rdma.cc.rpg_byte_reset, 1);
    rp->alpha_ns = MIN(rp->alpha_ns, now);
    rp->inc_ns = MIN(rp->inc_ns, now);
    rp->cut_ns = MIN(rp->cut_ns, now);
    if (rp->next_ns > now + NANOSECONDS_PER_SECOND) {
        rp->next_ns = now;
    }
    return true;
}

/*
 * A QP's transport: every message started and not retired names its
 * source's entry, the indices lie in order, and what the responder
 * holds names what is there.
 */
static bool uzura_mig_xfer_ok(UzuraCore *core, UzuraQp *qp, uint32_t qpn,
                              GHashTable *held)
{
    UzuraXfer *x = qp->x;
    UzuraReq *q;
    uint32_t used, m, k;

    if (!x) {
        UZ_MIG_FAIL("QP %u has no transport", qpn);
    }
    q = &x->req;
    used = uzura_ring_used(q->end, q->oldest);
    if (q->oldest > UZ_IDX_MASK || q->next > UZ_IDX_MASK ||
        q->end > UZ_IDX_MASK || q->sq_next > UZ_IDX_MASK ||
        used > q->nmsg || uzura_ring_used(q->next, q->oldest) > used ||
        q->next_psn > UZ_PSN_MASK || q->end_psn > UZ_PSN_MASK ||
        x->comp.acked_psn > UZ_PSN_MASK) {
        UZ_MIG_FAIL("QP %u: messages %u..%u..%u", qpn, q->oldest, q->next,
                    q->end);
    }
    if (!uzura_mig_crw_ok(core, qp, qpn) ||
        !uzura_mig_xfer_tm_ok(core, qp, qpn, held) ||
        (x->rp && !uzura_mig_rp_ok(core, qp, qpn))) {
        return false;
    }
    for (m = q->oldest, k = 0; k < used; m = (m + 1) & UZ_IDX_MASK, k++) {
        const UzuraSwqe *w = &q->msg[m & q->msg_mask];
        bool crw_entry = x->crw && w->src_id >= 0 &&
                         (uint32_t)w->src_id < x->ncrw;
        bool ok;

        switch (w->src) {
        case UZ_REQ_SRC_SQ:
            ok = !w->park || (crw_entry && w->done);
            break;
        case UZ_REQ_SRC_CRW:
            ok = !w->park && crw_entry && w->opcode == UZ_WR_CRW;
            break;
        case UZ_REQ_SRC_RNDV:
            ok = !w->park && x->rndv && w->src_id >= 0 &&
                 w->src_id < UZ_TM_RNDV_SLOTS &&
                 (w->opcode == UZ_WR_RDMA_READ || w->opcode == UZ_WR_SEND);
            break;
        default:
            ok = false;
        }
        if (!ok) {
            UZ_MIG_FAIL("QP %u: message %u of source %u, entry %d", qpn, m,
                        w->src, w->src_id);
        }
    }
    if (x->resp.rwqe.sgl.num > UZ_SGL_MAX || x->resp.rd_head >= x->resp.nrd ||
        (x->resp.in_msg && x->resp.in_msg != UZ_FAM_SEND &&
         x->resp.in_msg != UZ_FAM_WRITE) ||
        !uzura_mig_srq_ref(core, x->resp.xrc_srqn)) {
        UZ_MIG_FAIL("QP %u: a receive of %u SGEs, READ slot %u, message "
                    "kind %u, SRQ %u", qpn, x->resp.rwqe.sgl.num,
                    x->resp.rd_head, x->resp.in_msg, x->resp.xrc_srqn);
    }
    for (k = 0; k < x->resp.nrd; k++) {
        if (x->resp.rd[k].valid &&
            !uzura_mig_srq_ref(core, x->resp.rd[k].xrc_srqn)) {
            UZ_MIG_FAIL("QP %u: READ slot %u of SRQ %u", qpn, k,
                        x->resp.rd[k].xrc_srqn);
        }
    }
    return true;
}

static bool uzura_mig_qps_ok(UzuraCore *core)
{
    UzuraRdma *r = &core->rdma;
    g_autoptr(GHashTable) held = g_hash_table_new(NULL, NULL);
    uint32_t i, j;

    for (i = 0; i < r->lim.max_qp; i++) {
        UzuraQp *qp = &r->qp[i];

        if (!qp->valid) {
            continue;
        }
        /*
         * Flags as CREATE_QP takes them (what has an SQ depends on
         * them); a TM SRQ takes only RC QPs (their SENDs carry a TMH).
         */
        if (!uzura_qpt_known(qp->type) ||
            (qp->flags & ~(UZ_QPF_SIG_ALL | UZ_QPF_NO_SQ |
                           UZ_QPF_SQ_SHADOW)) ||
            ((qp->flags & UZ_QPF_NO_SQ) && qp->type != UZ_QPT_RAW) ||
            ((qp->flags & UZ_QPF_SQ_SHADOW) && !uzura_qp_has_sq(qp)) ||
            (qp->srqn < r->lim.max_srq && r->srq[qp->srqn].tm &&
             qp->type != UZ_QPT_RC) ||
            qp->attr.state > UZ_QPS_ERR ||
            !uzura_uctx_ok(core, qp->uctx) ||
            (qp->type == UZ_QPT_XRC_TGT ?
             qp->xrcd >= UZ_XRCD_MAX || !r->xrcd[qp->xrcd].valid :
             !uzura_mig_pd_ref(core, qp->pdn, qp->uctx)) ||
            !uzura_mig_qp_queues_ok(core, qp)) {
            UZ_MIG_FAIL("QP %u: type %u, flags 0x%x, in state %u, PD %u, "
                        "CQs %u and %u, SRQ %u", i, qp->type, qp->flags,
                        qp->attr.state, qp->pdn, qp->send_cqn, qp->recv_cqn,
                        qp->srqn);
        }
        if ((uzura_qp_has_sq(qp) &&
             !uzura_mig_db(core, qp->sq_db, UZ_DBK_SQ, i)) ||
            (uzura_qp_has_rq(qp) &&
             !uzura_mig_db(core, qp->rq_db, UZ_DBK_RQ, i))) {
            return false;
        }
        if (!uzura_mig_xfer_ok(core, qp, i, held)) {
            return false;
        }
        set_bit(i, r->qp_live);
    }
    if (r->rr_next >= r->lim.max_qp) {
        UZ_MIG_FAIL("work loop at QP %u", r->rr_next);
    }
    for (i = 0; i < UZ_MCAST_MAX_GRP; i++) {
        UzuraMcastGroup *g = &r->mcast[i];

        if (g->nqp > UZ_MCAST_MAX_QP_ATTACH) {
            UZ_MIG_FAIL("multicast group %u has %u QPs", i, g->nqp);
        }
        for (j = 0; j < g->nqp; j++) {
            if (g->qpn[j] >= r->lim.max_qp || !r->qp[g->qpn[j]].valid) {
                UZ_MIG_FAIL("multicast group %u: QP %u", i, g->qpn[j]);
            }
        }
    }
    return true;
}

/*
 * RSS tables and flow rules: a table is an RSS QP's and names raw QPs
 * of its context; a rule a raw or RSS QP of its context, with a spec
 * CREATE_FLOW takes.  The counts that hold those QPs (rss_refs, flows,
 * nflows) are rebuilt from them.
 */
static bool uzura_mig_steering_ok(UzuraCore *core)
{
    UzuraRdma *r = &core->rdma;
    uint32_t i, k, n = 0;

    for (i = 0; i < r->lim.max_qp; i++) {
        r->qp[i].rss_refs = 0;
        r->qp[i].flows = 0;
    }
    for (i = 0; i < r->lim.max_qp; i++) {
        UzuraQp *qp = &r->qp[i];
        const UzuraRss *rss = qp->rss;

        if (!qp->valid) {
            continue;
        }
        if ((qp->type == UZ_QPT_RSS) != !!rss ||
            (rss && (rss->fields & ~UZ_RSS_F_ALL))) {
            UZ_MIG_FAIL("QP %u: type %u, an RSS table of fields 0x%x", i,
                        qp->type, rss ? rss->fields : 0);
        }
        for (k = 0; rss && k <= rss->mask; k++) {
            UzuraQp *t = rss->qpn[k] < r->lim.max_qp ?
                         &r->qp[rss->qpn[k]] : NULL;

            if (!t || !t->valid || t->type != UZ_QPT_RAW ||
                t->uctx != qp->uctx) {
                UZ_MIG_FAIL("RSS QP %u: entry %u is QP %u, no raw QP of "
                            "context %u", i, k, rss->qpn[k], qp->uctx);
            }
            t->rss_refs++;
        }
    }
    for (i = 0; i < UZ_FLOW_MAX; i++) {
        const UzuraFlow *f = &r->flow[i];
        const struct uz_flow_spec *s = &f->spec;
        UzuraQp *qp = f->qpn < r->lim.max_qp ? &r->qp[f->qpn] : NULL;

        if (!f->valid) {
            continue;
        }
        if (!qp || !qp->valid || qp->uctx != f->uctx ||
            (qp->type != UZ_QPT_RAW && qp->type != UZ_QPT_RSS) ||
            (s->ip_ver && s->ip_ver != 4 && s->ip_ver != 6) ||
            (s->l4 && s->l4 != UZ_FLOW_L4_TCP && s->l4 != UZ_FLOW_L4_UDP) ||
            !buffer_is_zero(s->reserved, sizeof(s->reserved))) {
            UZ_MIG_FAIL("flow rule %u: QP %u of context %u, IP version %u, "
                        "L4 %u", i, f->qpn, f->uctx, s->ip_ver, s->l4);
        }
        qp->flows++;
        n++;
    }
    r->nflows = n;
    return true;
}

static bool uzura_mig_mrs_ok(UzuraCore *core)
{
    UzuraRdma *r = &core->rdma;
    uint32_t i;

    for (i = 0; i < r->lim.max_mr; i++) {
        UzuraMr *mr = &r->mr[i];

        if (!mr->valid) {
            continue;
        }
        if (mr->mw_type > UZ_MW_TYPE_2 || mr->page_shift > 63 ||
            (!mr->mw_type &&
             !uzura_mr_shape_ok(core, mr->access, 0, mr->length, 0, 0,
                                false)) ||
            mr->fault_posted || !uzura_uctx_ok(core, mr->uctx) ||
            !uzura_mig_pd_ref(core, mr->pdn, mr->uctx) ||
            (mr->max_pages && mr->max_pages > r->lim.max_fast_reg_pages) ||
            (mr->max_pages && mr->npages > mr->max_pages) ||
            (mr->mw_type && !mr->free &&
             (mr->mw_mr >= r->lim.max_mr || !r->mr[mr->mw_mr].valid ||
              r->mr[mr->mw_mr].mw_type ||
              (mr->mw_type == UZ_MW_TYPE_2 &&
               (mr->mw_qpn >= r->lim.max_qp ||
                !r->qp[mr->mw_qpn].valid))))) {
            UZ_MIG_FAIL("MR %u: window type %u, pages %u of %u, PD %u, "
                        "bound to MR %u by QP %u", i, mr->mw_type,
                        mr->npages, mr->max_pages, mr->pdn, mr->mw_mr,
                        mr->mw_qpn);
        }
        if (mr->flags & UZ_MR_F_DM &&
            (mr->dm >= r->max_dm || !r->dm[mr->dm].valid ||
             !uzura_in_range(mr->dm_base, mr->length,
                             (uint64_t)r->dm[mr->dm].first * UZ_DM_PAGE_SIZE,
                             (uint64_t)r->dm[mr->dm].npages *
                             UZ_DM_PAGE_SIZE))) {
            UZ_MIG_FAIL("MR %u: device memory %u at 0x%" PRIx64, i, mr->dm,
                        mr->dm_base);
        }
        mr->imr_chunk = 0;
        mr->imr_key = 0;
    }
    for (i = 0; i < r->lim.max_ah; i++) {
        UzuraAh *ah = &r->ah[i];

        if (ah->valid && !uzura_mig_pd_ref(core, ah->pdn, ah->uctx)) {
            UZ_MIG_FAIL("AH %u: PD %u", i, ah->pdn);
        }
    }
    return true;
}

static bool uzura_mig_dm_ok(UzuraCore *core)
{
    UzuraRdma *r = &core->rdma;
    uint32_t i;

    if (!r->dm_size) {
        return true;
    }
    bitmap_zero(r->dm_used, r->max_dm);
    for (i = 0; i < r->max_dm; i++) {
        UzuraDm *dm = &r->dm[i];

        if (!dm->valid) {
            continue;
        }
        if (!dm->npages || dm->first >= r->max_dm ||
            dm->npages > r->max_dm - dm->first ||
            find_next_bit(r->dm_used, dm->first + dm->npages, dm->first) <
            dm->first + dm->npages ||
            !uzura_uctx_ok(core, dm->uctx)) {
            UZ_MIG_FAIL("device memory %u: pages %u..+%u", i, dm->first,
                        dm->npages);
        }
        bitmap_set(r->dm_used, dm->first, dm->npages);
    }
    return true;
}

static int uzura_core_pre_save(void *opaque)
{
    UzuraCore *core = opaque;
    Error *err = NULL;

    if (!uzura_migration_check(core, &err)) {
        trace_uzura_migration_blocked(error_get_pretty(err));
        error_report_err(err);
        return -EBUSY;
    }
    return 0;
}

/*
 * A stream lands on a device just reset: an incoming side's, or one that
 * loadvm reset with its machine.  Device memory's RAM came before it.
 */
static int uzura_core_post_load(void *opaque, int version_id)
{
    UzuraCore *core = opaque;
    UzuraRdma *r = &core->rdma;
    uint32_t i;

    uzura_xlat_reset(core);
    bitmap_zero(r->qp_live, r->lim.max_qp);
    if (!uzura_mig_core_ok(core) || !uzura_mig_dm_ok(core) ||
        !uzura_mig_cqs_ok(core) || !uzura_mig_qps_ok(core) ||
        !uzura_mig_steering_ok(core) || !uzura_mig_mrs_ok(core)) {
        uzura_core_reset(core);
        return -EINVAL;
    }
    for (i = 0; i < r->lim.max_qp; i++) {
        if (r->qp[i].valid) {
            uzura_req_migrated(core, &r->qp[i]);
        }
    }
    /* A QP in ERR may hold WQEs to flush. */
    r->flush_owed = true;
    trace_uzura_migration_loaded(bitmap_count_one(r->qp_live,
                                                  r->lim.max_qp));
    /* Whatever the doorbells asked for before the move goes on. */
    if (core->admin.enabled && core->admin.pi != core->admin.ci) {
        qemu_bh_schedule(core->admin.bh);
    }
    uzura_work_schedule(core);
    return 0;
}

/* ---- fault injection ---- */

/*
 * Fault injection moves as its settings: the four probabilities (their
 * IEEE 754 bits: VMState has no double), the delay, the seed and where
 * its sequence is, the flap's settings, and the rules as the text that
 * fault-rules reads, then each rule's counts.  The incoming side parses
 * the text as qom-set does, so a stream's rules are checked as a user's
 * are.  Frames held back (delayed, reordered) are not carried.
 */
#define UZ_MIG_NPROBS   4

static double *uzura_fault_probs(UzuraFault *f, int i)
{
    double *const probs[UZ_MIG_NPROBS] = {
        &f->drop, &f->dup, &f->reorder, &f->corrupt,
    };

    return probs[i];
}

static int uzura_fault_put(QEMUFile *f, void *pv, size_t size,
                           const VMStateField *field, JSONWriter *vmdesc)
{
    UzuraCore *core = pv;
    UzuraFault *ft = &core->fault;
    g_autofree char *text = uzura_fault_rules_print(ft->rules, ft->nrules,
                                                    false);
    uint32_t len = strlen(text), i;
    uint64_t bits;

    for (i = 0; i < UZ_MIG_NPROBS; i++) {
        memcpy(&bits, uzura_fault_probs(ft, i), sizeof(bits));
        qemu_put_be64(f, bits);
    }
    qemu_put_be32(f, ft->delay_us);
    qemu_put_be64(f, ft->seed);
    qemu_put_be64(f, ft->rng);
    qemu_put_be32(f, ft->flap_down_us);
    qemu_put_be32(f, ft->flap_period_us);
    qemu_put_be32(f, len);
    qemu_put_buffer(f, (uint8_t *)text, len);
    qemu_put_be32(f, ft->nrules);
    for (i = 0; i < ft->nrules; i++) {
        qemu_put_be64(f, ft->rules[i].matched);
        qemu_put_be64(f, ft->rules[i].acted);
    }
    return 0;
}

static bool uzura_fault_load(QEMUFile *f, UzuraCore *core)
{
    UzuraFault *ft = &core->fault;
    double probs[UZ_MIG_NPROBS];
    uint32_t delay, down, period, len, n, i;
    uint64_t seed, rng, bits;
    g_autofree char *text = NULL;
    g_autofree char *why = NULL;
    g_autofree UzuraFaultRule *rules = NULL;
    uint32_t nrules = 0;

    for (i = 0; i < UZ_MIG_NPROBS; i++) {
        bits = qemu_get_be64(f);
        memcpy(&probs[i], &bits, sizeof(bits));
        /* Also false for a NaN. */
        if (!(probs[i] >= 0 && probs[i] <= 1)) {
            UZ_MIG_FAIL("fault injection: a probability of %g", probs[i]);
        }
    }
    delay = qemu_get_be32(f);
    seed = qemu_get_be64(f);
    rng = qemu_get_be64(f);
    down = qemu_get_be32(f);
    period = qemu_get_be32(f);
    len = qemu_get_be32(f);
    if (qemu_file_get_error(f)) {
        UZ_MIG_FAIL("fault injection: the stream ends");
    }
    if (delay > UZ_FAULT_DELAY_MAX_US || !rng ||
        down > UZ_FAULT_FLAP_MAX_US || period > UZ_FAULT_FLAP_MAX_US ||
        (period && down && period <= down) ||
        len > UZ_FAULT_RULES_TEXT_MAX) {
        UZ_MIG_FAIL("fault injection: delay %u us, generator %" PRIx64
                    ", flap %u/%u us, rules of %u bytes", delay, rng, down,
                    period, len);
    }
    text = g_malloc(len + 1);
    if (qemu_get_buffer(f, (uint8_t *)text, len) != len ||
        memchr(text, 0, len)) {
        UZ_MIG_FAIL("fault injection: the rules' text is cut or has a NUL");
    }
    text[len] = 0;
    n = qemu_get_be32(f);
    rules = uzura_fault_rules_parse(text, &nrules, &why);
    if (why) {
        UZ_MIG_FAIL("fault injection: rules: %s", why);
    }
    if (n != nrules) {
        UZ_MIG_FAIL("fault injection: %u rules counted, %u in the text", n,
                    nrules);
    }
    for (i = 0; i < n; i++) {
        rules[i].matched = qemu_get_be64(f);
        rules[i].acted = qemu_get_be64(f);
    }
    if (qemu_file_get_error(f)) {
        UZ_MIG_FAIL("fault injection: the stream ends");
    }
    /* All checked: now it is the device's. */
    uzura_fault_take_rules(core, g_steal_pointer(&rules), nrules);
    for (i = 0; i < UZ_MIG_NPROBS; i++) {
        *uzura_fault_probs(ft, i) = probs[i];
    }
    ft->delay_us = delay;
    ft->seed = seed;
    ft->rng = rng;
    ft->flap_down_us = down;
    ft->flap_period_us = period;
    return true;
}

static int uzura_fault_get(QEMUFile *f, void *pv, size_t size,
                           const VMStateField *field)
{
    return uzura_fault_load(f, pv) ? 0 : -EINVAL;
}

static const VMStateInfo vmstate_info_uzura_fault = {
    .name = "uzura fault injection",
    .get = uzura_fault_get,
    .put = uzura_fault_put,
};

/* Only when something is set: a stream without it loads on older builds. */
static bool uzura_fault_needed(void *opaque)
{
    UzuraFault *f = &((UzuraCore *)opaque)->fault;

    return f->drop > 0 || f->dup > 0 || f->reorder > 0 || f->corrupt > 0 ||
           f->delay_us || f->seed || f->nrules || f->flap_down_us ||
           f->flap_period_us;
}

static const VMStateDescription vmstate_uzura_fault = {
    .name = "uzura/core/fault",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = uzura_fault_needed,
    .fields = (const VMStateField[]) {
        {
            .name = "fault",
            .info = &vmstate_info_uzura_fault,
            .flags = VMS_SINGLE,
            .size = sizeof(UzuraCore),
        },
        VMSTATE_END_OF_LIST()
    }
};

const VMStateDescription vmstate_uzura_core = {
    .name = "uzura/core",
    .version_id = 1,
    .minimum_version_id = 1,
    .pre_save = uzura_core_pre_save,
    .post_load = uzura_core_post_load,
    .fields = (const VMStateField[]) {
        /* The tables' sizes: the same properties on both sides. */
        VMSTATE_UINT32_EQUAL(db_pages, UzuraCore, NULL),
        VMSTATE_UINT32_EQUAL(num_vectors, UzuraCore, NULL),
        VMSTATE_UINT32_EQUAL(rdma.lim.max_pd, UzuraCore, NULL),
        VMSTATE_UINT32_EQUAL(rdma.lim.max_cq, UzuraCore, NULL),
        VMSTATE_UINT32_EQUAL(rdma.lim.max_srq, UzuraCore, NULL),
        VMSTATE_UINT32_EQUAL(rdma.lim.max_qp, UzuraCore, NULL),
        VMSTATE_UINT32_EQUAL(rdma.lim.max_mr, UzuraCore, NULL),
        VMSTATE_UINT32_EQUAL(rdma.lim.max_ah, UzuraCore, NULL),
        VMSTATE_UINT32_EQUAL(rdma.max_dm, UzuraCore, NULL),

        VMSTATE_UINT8_ARRAY(mac, UzuraCore, 6),
        VMSTATE_UINT32(mtu, UzuraCore),
        VMSTATE_UINT32(status, UzuraCore),
        VMSTATE_UINT32(scratch, UzuraCore),
        VMSTATE_UINT32(err_status, UzuraCore),
        VMSTATE_UINT32(err_count, UzuraCore),
        VMSTATE_UINT32(err_addr, UzuraCore),
        VMSTATE_STRUCT(admin, UzuraCore, 1, vmstate_uzura_admin, UzuraAdmin),
        VMSTATE_STRUCT_ARRAY(eq, UzuraCore, UZ_MAX_EQ, 1, vmstate_uzura_eq,
                             UzuraEq),
        VMSTATE_STRUCT(eth_tx, UzuraCore, 1, vmstate_uzura_eth_ring,
                       UzuraEthRing),
        VMSTATE_STRUCT(eth_rx, UzuraCore, 1, vmstate_uzura_eth_ring,
                       UzuraEthRing),
        VMSTATE_UZURA_COUNTERS(counters, UzuraCore),

        VMSTATE_UZURA_TABLE(uctx, db_pages, vmstate_uzura_uctx, UzuraUctx),
        VMSTATE_UZURA_TABLE(pd, rdma.lim.max_pd, vmstate_uzura_pd, UzuraPd),
        VMSTATE_UZURA_TABLE(cq, rdma.lim.max_cq, vmstate_uzura_cq, UzuraCq),
        VMSTATE_UZURA_TABLE(srq, rdma.lim.max_srq, vmstate_uzura_srq,
                            UzuraSrq),
        VMSTATE_UZURA_TABLE(qp, rdma.lim.max_qp, vmstate_uzura_qp, UzuraQp),
        VMSTATE_UZURA_TABLE(mr, rdma.lim.max_mr, vmstate_uzura_mr, UzuraMr),
        VMSTATE_UZURA_TABLE(ah, rdma.lim.max_ah, vmstate_uzura_ah, UzuraAh),
        VMSTATE_STRUCT_ARRAY(rdma.mcast, UzuraCore, UZ_MCAST_MAX_GRP, 1,
                             vmstate_uzura_mcast, UzuraMcastGroup),
        VMSTATE_STRUCT_ARRAY(rdma.xrcd, UzuraCore, UZ_XRCD_MAX, 1,
                             vmstate_uzura_xrcd, UzuraXrcd),
        VMSTATE_UZURA_TABLE(dm, rdma.max_dm, vmstate_uzura_dm, UzuraDm),
        VMSTATE_UINT64(rdma.xlat_gen, UzuraCore),
        VMSTATE_UINT32(rdma.rr_next, UzuraCore),
        VMSTATE_UINT64(rdma.raw_seq, UzuraCore),
        VMSTATE_UINT32_EQUAL(rdma.lim.max_qp_rd_atom, UzuraCore, NULL),
        {
            .name = "transports",
            .info = &vmstate_info_uzura_xfers,
            .flags = VMS_SINGLE,
            .size = sizeof(UzuraCore),
        },
        VMSTATE_END_OF_LIST()
    },
    .subsections = (const VMStateDescription * const []) {
        &vmstate_uzura_fault,
        &vmstate_uzura_core_tm,
        &vmstate_uzura_core_flows,
        &vmstate_uzura_core_rss,
        NULL
    }
};
