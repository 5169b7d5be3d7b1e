/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uzura data-path fuzz targets: qemu-fuzz-x86_64 --fuzz-target=NAME with
 *
 *   uzura-datapath-fuzz        recovery=sr on both NICs, fault rules loaded
 *   uzura-datapath-model-fuzz  the timing model on (model=on), go-back-N
 *
 * Two uzura NICs share a hub, as in the generic-fuzz configuration
 * (qtest/fuzz/uzura-generic-fuzz.h), with a third port of the hub for
 * frames from the wire.  Once per process the target brings both NICs up
 * the way the driver does, with the qtest helpers (qtest/uzura-verbs.h):
 * admin queue, EQs, PDs, MRs (a memory window of each type, an ODP MR, a
 * device-memory MR, a DMA MR and a fast-registration MR), CQs, SRQs (a
 * tag-matching one and an XRC one), connected RC pairs, a UC pair, UD QPs,
 * an XRC initiator and target, and raw packet QPs with a flow rule.
 * Inputs then run in child processes forked from that state, up to
 * UZURA_FUZZ_PER_CHILD (default 1) one after another in each child, each
 * input a sequence of actions: WQEs (mostly well formed, fields from the input)
 * written into SQ, RQ and SRQ rings with their doorbells rung, SQ shadow
 * records, tag-matching list operations, RoCEv2 frames built from the
 * input (with a valid ICRC nearly always) sent in from the wire (now and
 * then a pause frame or a timing model control frame instead), virtual
 * clock steps, CQ and EQ polling (which also serves ODP page faults), QP
 * state changes and reconnections, fault rules and other run-time
 * properties.
 *
 * The child hands its coverage counters back to the parent after each
 * input.  When it fails (a crash, a sanitizer report, more than
 * UZURA_FUZZ_STALL_MS (default 50) ms of CPU on one action of an input,
 * which is a stall of QEMU's main loop, a heap holding more than
 * UZURA_FUZZ_RSS_MB (default 64) MiB more than when the child started,
 * or no answer in 20 s) it prints a stack, and the parent
 * saves the inputs that child ran as one crash input, crash-batch-*,
 * which replays them in one child, and stops.  A stall is CPU time,
 * which a busy host inflates: it counts only when a new child running
 * the same inputs stalls too.  UZURA_FUZZ_FORK=0 runs
 * inputs in the process itself (for a debugger; state then carries over
 * between inputs), and UZURA_FUZZ_ARGS adds to QEMU's command line
 * (-trace uzura_roce_rx ...).
 */
#include "qemu/osdep.h"
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <poll.h>
#include <sanitizer/allocator_interface.h>
#include <sanitizer/common_interface_defs.h>

#include "qapi/error.h"
#include "qemu/cutils.h"
#include "qemu/defer-call.h"
#include "qemu/main-loop.h"
#include "qemu/timer.h"
#include "qom/object.h"
#include "net/net.h"
#include "net/checksum.h"
#include "tests/qtest/libqtest.h"
#include "tests/qtest/libqos/libqos.h"
#include "tests/qtest/libqos/malloc-pc.h"
#include "tests/qtest/libqos/pci-pc.h"
#include "fuzz.h"
#include "uzura-fuzz-counters.h"

#include "tests/qtest/uzura-verbs.h"
#include "tests/qtest/uzura-wire.h"

#define UZF_MAX_ACTIONS     192
#define UZF_CLOCK_TURNS     512             /* deadlines a clock step passes */
#define UZF_STEP_NS         10000           /* prologue waits: 10 us steps */
#define UZF_QKEY            0x11110000u
#define UZF_TM_TAGS         16
#define UZF_TM_OPS_LOG      4
#define UZF_SRQ_LOG         5
#define UZF_MR_LEN          65536
#define UZF_FAST_PAGES      16
#define UZF_FAST_IOVA       0x7000000000ull
#define UZF_ODP_PAGES       8
#define UZF_DM_LEN          8192
#define UZF_DMA_LEN         16384
#define UZF_MAX_FRAME       2048
#define UZF_NKEYS           8
#define UZF_MAX_QPS         16
#define UZF_MAX_CQS         16

/* The QPs, in this order; even ones on uz0, odd ones on uz1. */
enum {
    QP_RC_A0, QP_RC_A1,         /* MTU 1024; A0 has an SQ shadow record */
    QP_RC_B0, QP_RC_B1,         /* MTU 256; B1 on the SRQ, B0 a tiny CQ */
    QP_TM_CLI, QP_TM_SRV,       /* SRV on uz1's tag-matching SRQ */
    QP_UC0, QP_UC1,
    QP_UD0, QP_UD1,
    QP_XRC_INI, QP_XRC_TGT,     /* uz0's initiator, uz1's target */
    QP_RAW0, QP_RAW1,           /* raw packet QPs: EtherType 0x88b5 */
    QP_NUM
};

/* A key the node's own WQEs or the peer's requests may name. */
typedef struct UzfKey {
    uint32_t key;
    uint64_t va;
    uint64_t len;
} UzfKey;

typedef struct UzfNode {
    UzNode n;
    Object *obj;
    UzCq *scq;
    UzCq *rcq;
    UzCq *tiny;                 /* send CQ of RC B0 */
    UzCq *tm_cq;
    UzCq *xrc_cq;               /* uz1: its XRC SRQ's; uz0: the INI's */
    UzSrq *srq;
    UzSrq *tm;                  /* uz1 */
    uint64_t tm_ops;
    uint32_t tm_ops_db;
    uint32_t tm_ops_pi;
    UzSrq *xrc_srq;             /* uz1 */
    uint32_t xrcd;
    uint32_t ahn;
    UzMr *main;                 /* 64 KiB, every right, windows bind here */
    UzMr *small;                /* 4 KiB + 100, remote READ only */
    UzMr *odp;
    UzMr *fast;
    UzMr *dma;
    uint32_t mw[2];             /* type 1 (bound), type 2 */
    uint32_t dm_key;
    /* Keys: main, small, odp, dm, mw1, mw2, fast, dma. */
    UzfKey keys[UZF_NKEYS];
    UzCq *cqs[UZF_MAX_CQS];
    int ncqs;
} UzfNode;

static struct {
    bool model;
    bool fork;
    QOSState qs;
    UzMachine m;
    UzfNode node[2];
    UzQp *qp[QP_NUM];
    uint32_t exp_psn[QP_NUM];   /* the next request PSN each QP expects */
    uint32_t next_psn[QP_NUM];  /* and the next it sends */
    NetClientState *wire;
    uint8_t *cov;               /* the coverage counters, ... */
    uint8_t *cov_shm;           /* ... and their copy the child leaves */
    size_t cov_len;
    struct UzfIo *io;           /* the input the child runs next */
    pid_t child;                /* 0: none yet */
    int cmd[2];                 /* parent to child: run an input */
    int done[2];                /* child to parent: done with it */
    unsigned ran;               /* inputs the child has run, ... */
    GByteArray *batch;          /* ... in order, as a crash input */
    long per_child;
    struct itimerval stall_it;  /* armed before each action in a child */
    int action;                 /* the action running */
    long stall_ms;
    size_t held;                /* heap in use as a child started */
    long rss_limit_kb;
    bool pumping;
} uzf;

/*
 * In a child, an action and then each turn of the main loop after it
 * have UZURA_FUZZ_STALL_MS of CPU each: what takes longer stalls QEMU.
 */
static void uzf_stall_arm(void)
{
    if (uzf.stall_it.it_value.tv_sec || uzf.stall_it.it_value.tv_usec) {
        setitimer(ITIMER_PROF, &uzf.stall_it, NULL);
    }
}

/* flush_events(), with the stall timer armed for each turn. */
static void uzf_flush(void)
{
    int i = 10;

    while (g_main_context_pending(NULL) && i-- > 0) {
        uzf_stall_arm();
        main_loop_wait(false);
    }
}

/*
 * The helpers let the device run between polls with uz_poll_pause(), a
 * qtest read of address 0, which over a qtest socket is a turn of QEMU's
 * main loop.  In-process it would be a plain memory read: here it turns
 * the main loop.
 */
static void uzf_poll(QTestState *s)
{
    if (!uzf.pumping) {
        uzf.pumping = true;
        uzf_flush();
        uzf.pumping = false;
    }
}

/* ------------------------------------------------------------------ */
/* The input                                                          */
/* ------------------------------------------------------------------ */

typedef struct UzfIn {
    const uint8_t *p;
    size_t n;
} UzfIn;

static uint8_t in8(UzfIn *in)
{
    if (!in->n) {
        return 0;
    }
    in->n--;
    return *in->p++;
}

static uint16_t in16(UzfIn *in)
{
    uint16_t v = in8(in);

    return v | in8(in) << 8;
}

static uint32_t in32(UzfIn *in)
{
    uint32_t v = in16(in);

    return v | (uint32_t)in16(in) << 16;
}

static uint64_t in64(UzfIn *in)
{
    uint64_t v = in32(in);

    return v | (uint64_t)in32(in) << 32;
}

/* ------------------------------------------------------------------ */
/* The prologue: both NICs up, as the driver brings them up           */
/* ------------------------------------------------------------------ */

static UzfNode *uzf_node_of(UzQp *qp)
{
    return &uzf.node[qp->n->idx];
}

static void uzf_add_cq(UzfNode *f, UzCq *cq)
{
    int i;

    for (i = 0; i < f->ncqs; i++) {
        if (f->cqs[i] == cq) {
            return;
        }
    }
    g_assert(f->ncqs < UZF_MAX_CQS);
    f->cqs[f->ncqs++] = cq;
}

static uint32_t uzf_obj(UzNode *n, uint8_t op, uint32_t handle,
                        struct uz_admin_cqe *cqe)
{
    struct uz_cmd_obj c = {
        .handle = cpu_to_le32(handle), .uctx = cpu_to_le32(n->uctx),
    };

    return uz_cmd(n, op, &c, sizeof(c), cqe);
}

static uint32_t uzf_mw_alloc(UzNode *n, uint8_t type)
{
    struct uz_cmd_alloc_mw c = {
        .pdn = cpu_to_le32(n->pdn), .type = type, .key = n->next_key++,
    };
    struct uz_admin_cqe cqe;

    g_assert(uz_cmd(n, UZ_CMD_ALLOC_MW, &c, sizeof(c), &cqe) == UZ_CMD_OK);
    return le32_to_cpu(cqe.out0);
}

/* A device-memory allocation and a zero-based MR over it. */
static uint32_t uzf_dm_mr(UzNode *n)
{
    struct uz_cmd_alloc_dm a = { .length = cpu_to_le64(UZF_DM_LEN) };
    struct uz_cmd_reg_mr c = {
        .length = cpu_to_le64(UZF_DM_LEN), .pdn = cpu_to_le32(n->pdn),
        .access = cpu_to_le32(UZ_ACCESS_ALL), .key = n->next_key++,
        .flags = UZ_MR_F_DM,
    };
    struct uz_admin_cqe cqe;

    g_assert(uz_cmd(n, UZ_CMD_ALLOC_DM, &a, sizeof(a), &cqe) == UZ_CMD_OK);
    c.dm = cqe.out0;
    g_assert(uz_cmd(n, UZ_CMD_REG_MR, &c, sizeof(c), &cqe) == UZ_CMD_OK);
    return le32_to_cpu(cqe.out0);
}

/* An SRQ of @flags (UZ_SRQF_TM, UZ_SRQF_XRC) completing into @cq. */
static UzSrq *uzf_srq(UzfNode *f, uint8_t flags, UzCq *cq)
{
    UzNode *n = &f->n;
    UzSrq *srq = uz_own(n, sizeof(*srq));
    struct uz_cmd_create_srq c = {
        .pdn = cpu_to_le32(n->pdn), .log_depth = UZF_SRQ_LOG,
        .log_wqe_size = UZ_RQ_LOG_WQE, .flags = flags,
        .xrcd = cpu_to_le32(flags & UZ_SRQF_XRC ? f->xrcd : 0),
        .cqn = cpu_to_le32(cq->cqn),
    };
    struct uz_admin_cqe cqe;

    srq->n = n;
    srq->log_depth = UZF_SRQ_LOG;
    srq->ring = uz_alloc(&n->d, UZ_RQ_WQE_SIZE << UZF_SRQ_LOG);
    c.ring_addr = cpu_to_le64(srq->ring);
    if (flags & UZ_SRQF_TM) {
        f->tm_ops = uz_alloc(&n->d, sizeof(struct uz_tm_op) <<
                             UZF_TM_OPS_LOG);
        c.ops_addr = cpu_to_le64(f->tm_ops);
        c.max_tags = cpu_to_le16(UZF_TM_TAGS);
        c.ops_log_depth = UZF_TM_OPS_LOG;
    }
    g_assert(uz_cmd(n, UZ_CMD_CREATE_SRQ, &c, sizeof(c), &cqe) ==
             UZ_CMD_OK);
    srq->srqn = le32_to_cpu(cqe.out0);
    srq->db = le32_to_cpu(cqe.out1);
    if (flags & UZ_SRQF_TM) {
        f->tm_ops_db = le32_to_cpu(cqe.out2);
    }
    return srq;
}

/* An XRC initiator (its own send CQ) or target of domain @xrcd. */
static UzQp *uzf_xrc_qp(UzfNode *f, uint8_t type)
{
    UzNode *n = &f->n;
    UzQp *qp = uz_own(n, sizeof(*qp));
    struct uz_cmd_create_qp c = {
        .type = type, .srqn = cpu_to_le32(UZ_NO_SRQ),
        .xrcd = cpu_to_le32(f->xrcd), .sq_log_depth = UZ_SQ_LOG_DEPTH,
        .sq_log_wqe_size = UZ_SQ_LOG_WQE,
    };
    struct uz_admin_cqe cqe;

    qp->n = n;
    qp->type = type;
    if (type == UZ_QPT_XRC_INI) {
        qp->scq = f->xrc_cq;
        qp->sq = uz_alloc(&n->d, UZ_SQ_WQE_SIZE << UZ_SQ_LOG_DEPTH);
        c.sq_addr = cpu_to_le64(qp->sq);
        c.pdn = cpu_to_le32(n->pdn);
        c.send_cqn = cpu_to_le32(qp->scq->cqn);
    }
    g_assert(uz_cmd(n, UZ_CMD_CREATE_QP, &c, sizeof(c), &cqe) ==
             UZ_CMD_OK);
    qp->qpn = le32_to_cpu(cqe.out0);
    qp->sq_db = le32_to_cpu(cqe.out1);
    return qp;
}

/* Wait for the next CQE of @cq, stepping the clock (the timing model). */
static void uzf_wait(UzCq *cq, uint8_t status)
{
    struct uz_cqe c;

    uz_cq_wait_clock(cq, &c, UZF_STEP_NS, 10000);
    g_assert(c.status == status);
}

static void uzf_post_wait(UzQp *qp, const UzWr *wr)
{
    uz_post_send(qp, wr);
    uzf_wait(qp->scq, UZ_WC_STATUS_SUCCESS);
}

/* Memory, and the keys of it the NIC's QPs and its peer's may name. */
static void uzf_node_memory(UzfNode *f, UzQp *binder)
{
    UzNode *n = &f->n;
    g_autofree uint8_t *pat = g_malloc(UZF_MR_LEN);
    uint8_t tmh[64] = { 0 };
    UzWr wr;
    int i;

    f->main = uz_mr_reg(n, UZF_MR_LEN, UZ_ACCESS_ALL | UZ_ACCESS_MW_BIND |
                        UZ_ACCESS_FLUSH_GLOBAL);
    f->small = uz_mr_reg(n, UZ_PAGE_SIZE + 100, UZ_ACCESS_LOCAL_WRITE |
                         UZ_ACCESS_REMOTE_READ);
    f->odp = uz_mr_reg_odp(n, UZF_ODP_PAGES);
    f->dma = uz_mr_reg_dma(n, UZF_DMA_LEN, UZ_ACCESS_ALL);
    f->dm_key = uzf_dm_mr(n);
    f->fast = uz_mr_alloc_fast(n, n->pdn, UZF_FAST_PAGES);
    f->mw[0] = uzf_mw_alloc(n, UZ_MW_TYPE_1);
    f->mw[1] = uzf_mw_alloc(n, UZ_MW_TYPE_2);

    /*
     * Data, and at offsets 0, 64, .. 448 of the main MR the headers of
     * tag-matching messages: EAGER, RNDV (of 512 bytes at 8 KiB of this
     * MR), NO_TAG and FIN, tags 1 and 2.
     */
    uz_pattern(pat, UZF_MR_LEN, 0x5eed + n->idx);
    uz_mr_write(f->main, 0, pat, UZF_MR_LEN);
    uz_mr_write(f->small, 0, pat, UZ_PAGE_SIZE + 100);
    for (i = 0; i < 8; i++) {
        static const uint8_t ops[4] = {
            UZ_TMH_EAGER, UZ_TMH_RNDV, UZ_TMH_NO_TAG, UZ_TMH_FIN,
        };

        memset(tmh, 0, sizeof(tmh));
        tmh[UZ_TMH_OPCODE] = ops[i % 4];
        stl_be_p(tmh + UZ_TMH_APP_CTX, 0xc0ffee);
        stq_be_p(tmh + UZ_TMH_TAG, 1 + i / 4);
        stq_be_p(tmh + UZ_RVH_VA, uz_mr_va(f->main, 8192));
        stl_be_p(tmh + UZ_RVH_RKEY, f->main->key);
        stl_be_p(tmh + UZ_RVH_DLEN, 512);
        uz_mr_write(f->main, i * 64, tmh, sizeof(tmh));
    }

    /*
     * The fast-reg MR mapped, the type 1 window bound, as a ULP does.
     * Every entry of its page list is a page of 64 KiB, aligned, of a
     * chunk of its own: whatever page size a REG_MR the input posts
     * names (at most 64 KiB, uzf_wqe_tame()), the MR reaches nothing of
     * the rings and page lists the target itself relies on.
     */
    {
        uint64_t chunk = uz_alloc(&n->d, (UZF_FAST_PAGES + 1) * 65536);

        chunk = ROUND_UP(chunk, 65536);
        for (i = 0; i < UZF_FAST_PAGES; i++) {
            f->fast->pages[i] = chunk + i * 65536;
            qtest_writeq(n->d.qts, f->fast->pbl + i * 8, f->fast->pages[i]);
        }
        f->fast->key = (f->fast->key & ~0xffu) | 0x42;
        wr = (UzWr) {
            .wr_id = 0xfa, .opcode = UZ_WR_REG_MR,
            .flags = UZ_WQE_F_SIGNALED, .rkey = f->fast->key,
            .remote_addr = UZF_FAST_IOVA, .reg_length = 3 * UZ_PAGE_SIZE,
            .reg_access = UZ_ACCESS_ALL, .reg_npages = 3,
        };
    }
    uzf_post_wait(binder, &wr);
    wr = (UzWr) {
        .wr_id = 0xb1, .opcode = UZ_WR_BIND_MW, .flags = UZ_WQE_F_SIGNALED,
        .rkey = (f->mw[0] & ~0xffu) | 0x51,
        .remote_addr = uz_mr_va(f->main, 4096), .reg_length = 16384,
        .reg_access = UZ_ACCESS_REMOTE_WRITE | UZ_ACCESS_REMOTE_READ |
                      UZ_ACCESS_REMOTE_ATOMIC,
        .bind_mr_key = f->main->key,
    };
    uzf_post_wait(binder, &wr);
    f->mw[0] = wr.rkey;

    f->keys[0] = (UzfKey) { f->main->key, f->main->iova, f->main->len };
    f->keys[1] = (UzfKey) { f->small->key, f->small->iova, f->small->len };
    f->keys[2] = (UzfKey) { f->odp->key, f->odp->iova, f->odp->len };
    f->keys[3] = (UzfKey) { f->dm_key, 0, UZF_DM_LEN };
    f->keys[4] = (UzfKey) { f->mw[0], uz_mr_va(f->main, 4096), 16384 };
    f->keys[5] = (UzfKey) { f->mw[1], uz_mr_va(f->main, 0), 4096 };
    f->keys[6] = (UzfKey) { f->fast->key, UZF_FAST_IOVA, 3 * UZ_PAGE_SIZE };
    f->keys[7] = (UzfKey) { f->dma->key, f->dma->iova, f->dma->len };
}

/*
 * A raw QP up, with the flow rule that gives it the frames of EtherType
 * 0x88b5 (which the timing model's lockstep uses; the wire sends them).
 */
static void uzf_raw_flow(UzQp *qp)
{
    struct uz_flow_spec spec = {
        .ethertype = cpu_to_be16(0x88b5), .ethertype_mask = 0xffff,
    };
    uint64_t buf = uz_alloc(&qp->n->d, sizeof(spec));
    struct uz_cmd_create_flow c = {
        .spec_addr = cpu_to_le64(buf), .qpn = cpu_to_le32(qp->qpn),
    };
    struct uz_qp_attr a = { .state = UZ_QPS_INIT, .port = 1 };

    g_assert(uz_qp_modify(qp, UZ_QP_ATTR_STATE | UZ_QP_ATTR_PORT, &a) ==
             UZ_CMD_OK);
    uz_qp_set_state(qp, UZ_QPS_RTR);
    uz_qp_set_state(qp, UZ_QPS_RTS);
    qtest_memwrite(qp->n->d.qts, buf, &spec, sizeof(spec));
    g_assert(uz_cmd(qp->n, UZ_CMD_CREATE_FLOW, &c, sizeof(c), NULL) ==
             UZ_CMD_OK);
}

/*
 * RNR retries: 6, not the default's 7, which retries for ever (IB's
 * rnr_retry): a SEND to a QP with no receive WQE would go on every
 * min_rnr_timer (10 us) of virtual time the input steps, a load that is
 * no stall of the device's.
 */
#define UZF_RNR_RETRY       6

static void uzf_rc_pair(int a, int b, uint8_t mtu)
{
    UzRcOpts o = UZ_RC_OPTS_DEFAULT;

    o.path_mtu = mtu;
    o.rnr_retry = UZF_RNR_RETRY;
    uz_rc_connect(uzf.qp[a], uzf.qp[b], &o);
}

static void uzf_prologue(QTestState *s)
{
    UzfNode *f0 = &uzf.node[0], *f1 = &uzf.node[1];
    int i;

    uzf.qs.qts = s;
    pc_alloc_init(&uzf.qs.alloc, s, ALLOC_NO_FLAGS);
    uzf.qs.pcibus = qpci_new_pc(s, &uzf.qs.alloc);
    uzf.m.qs = &uzf.qs;

    for (i = 0; i < 2; i++) {
        UzfNode *f = &uzf.node[i];
        UzNode *n = &f->n;
        g_autofree char *path = g_strdup_printf("/machine/peripheral/uz%d",
                                                i);

        f->obj = object_resolve_path(path, NULL);
        g_assert(f->obj);
        uz_node_start(n, &uzf.m, i);
        f->scq = uz_cq_create(n, UZ_CQ_LOG_DEPTH);
        f->rcq = uz_cq_create_paged(n, UZ_CQ_LOG_DEPTH);
        f->tiny = uz_cq_create(n, 2);
        f->tm_cq = uz_cq_create(n, UZ_CQ_LOG_DEPTH);
        f->xrc_cq = uz_cq_create_flags(n, UZ_CQ_LOG_DEPTH, UZ_CQF_TIMESTAMP);
        f->srq = uz_srq_create(n, UZF_SRQ_LOG, 4);
        f->ahn = uz_ah_create(n, 1 - i);
        uzf_add_cq(f, f->scq);
        uzf_add_cq(f, f->rcq);
        uzf_add_cq(f, f->tiny);
        uzf_add_cq(f, f->tm_cq);
        uzf_add_cq(f, f->xrc_cq);
    }
    {
        struct uz_admin_cqe cqe;

        g_assert(uzf_obj(&f1->n, UZ_CMD_ALLOC_XRCD, 0, &cqe) ==
                 UZ_CMD_OK);
        f1->xrcd = le32_to_cpu(cqe.out0);
    }
    f1->tm = uzf_srq(f1, UZ_SRQF_TM, f1->tm_cq);
    f1->xrc_srq = uzf_srq(f1, UZ_SRQF_XRC, f1->xrc_cq);

    uzf.qp[QP_RC_A0] = uz_qp_create(&f0->n, UZ_QPT_RC, f0->scq, f0->rcq,
                                    NULL, UZ_QPF_SQ_SHADOW);
    uzf.qp[QP_RC_A1] = uz_qp_create(&f1->n, UZ_QPT_RC, f1->scq, f1->rcq,
                                    NULL, UZ_QPF_SQ_SHADOW);
    uzf.qp[QP_RC_B0] = uz_qp_create(&f0->n, UZ_QPT_RC, f0->tiny, f0->rcq,
                                    NULL, 0);
    uzf.qp[QP_RC_B1] = uz_qp_create(&f1->n, UZ_QPT_RC, f1->scq, f1->rcq,
                                    f1->srq, UZ_QPF_SIG_ALL);
    uzf.qp[QP_TM_CLI] = uz_qp_create(&f0->n, UZ_QPT_RC, f0->scq, f0->rcq,
                                     NULL, 0);
    uzf.qp[QP_TM_SRV] = uz_qp_create(&f1->n, UZ_QPT_RC, f1->scq, f1->tm_cq,
                                     f1->tm, 0);
    uzf.qp[QP_UC0] = uz_qp_create(&f0->n, UZ_QPT_UC, f0->scq, f0->rcq,
                                  NULL, 0);
    uzf.qp[QP_UC1] = uz_qp_create(&f1->n, UZ_QPT_UC, f1->scq, f1->rcq,
                                  f1->srq, 0);
    uzf.qp[QP_UD0] = uz_qp_create(&f0->n, UZ_QPT_UD, f0->scq, f0->rcq,
                                  NULL, 0);
    uzf.qp[QP_UD1] = uz_qp_create(&f1->n, UZ_QPT_UD, f1->scq, f1->rcq,
                                  NULL, 0);
    uzf.qp[QP_XRC_INI] = uzf_xrc_qp(f0, UZ_QPT_XRC_INI);
    uzf.qp[QP_XRC_TGT] = uzf_xrc_qp(f1, UZ_QPT_XRC_TGT);
    for (i = 0; i < 2; i++) {
        UzfNode *f = &uzf.node[i];

        uzf.qp[QP_RAW0 + i] = uz_qp_create(&f->n, UZ_QPT_RAW, f->scq,
                                           f->rcq, NULL, 0);
        uzf_raw_flow(uzf.qp[QP_RAW0 + i]);
    }

    uzf_rc_pair(QP_RC_A0, QP_RC_A1, UZ_MTU_1024);
    uzf_rc_pair(QP_RC_B0, QP_RC_B1, UZ_MTU_256);
    uzf_rc_pair(QP_TM_CLI, QP_TM_SRV, UZ_MTU_1024);
    uz_uc_up(uzf.qp[QP_UC0], uzf.qp[QP_UC1], 0x100);
    uz_uc_up(uzf.qp[QP_UC1], uzf.qp[QP_UC0], 0x100);
    uz_ud_up(uzf.qp[QP_UD0], UZF_QKEY, 0x10);
    uz_ud_up(uzf.qp[QP_UD1], UZF_QKEY, 0x20);
    /* XRC: the columns of ib_core's table, as uzura-xrc-test.c does. */
    uz_rc_init(uzf.qp[QP_XRC_INI]);
    uz_rc_init(uzf.qp[QP_XRC_TGT]);
    g_assert(uz_uc_rtr_try(uzf.qp[QP_XRC_INI], uzf.qp[QP_XRC_TGT],
                           0xabc, 0) == UZ_CMD_OK);
    {
        UzRcOpts o = UZ_RC_OPTS_DEFAULT;

        o.rnr_retry = UZF_RNR_RETRY;
        uz_rc_rtr(uzf.qp[QP_XRC_TGT], uzf.qp[QP_XRC_INI], 0xabc, &o);
        uz_rc_rts(uzf.qp[QP_XRC_INI], 0xabc, &o);
    }
    g_assert(uz_uc_rts_try(uzf.qp[QP_XRC_TGT], 0xabc,
                           UZ_QP_ATTR_TIMEOUT) == UZ_CMD_OK);

    uzf_node_memory(f0, uzf.qp[QP_RC_A0]);
    uzf_node_memory(f1, uzf.qp[QP_RC_A1]);

    /* Tagged buffers 0 and 1 of the TM SRQ, tags 1 and 2. */
    for (i = 0; i < 2; i++) {
        struct uz_tm_op op = {
            .wr_id = cpu_to_le64(0xadd0 + i), .opcode = UZ_TM_OP_ADD,
            .recv_wr_id = cpu_to_le64(0x7a90 + i),
            .tag = cpu_to_le64(1 + i), .mask = cpu_to_le64(UINT64_MAX),
            .index = cpu_to_le16(i), .num_sge = 1,
            .addr = cpu_to_le64(uz_mr_va(f1->main, 16384 + i * 4096)),
            .length = cpu_to_le32(4096), .lkey = cpu_to_le32(f1->main->key),
        };

        qtest_memwrite(s, f1->tm_ops + i * sizeof(op), &op, sizeof(op));
    }
    f1->tm_ops_pi = 2;
    uz_ring(&f1->n.d, f1->tm_ops_db, f1->tm_ops_pi);
    flush_events(s);

    /* A CNP leaves node 0's QP at 100 Mb/s: its packets are paced. */
    object_property_set_uint(f0->obj, "rate_to_set_on_first_cnp", 100,
                             &error_abort);

    /* Fault rules: some frames of every input are lost or reordered. */
    if (!uzf.model) {
        object_property_set_str(f0->obj, "recovery", "sr", &error_abort);
        object_property_set_str(f1->obj, "recovery", "sr", &error_abort);
        object_property_set_str(f0->obj, "fault-rules",
                                "dir=tx kind=request nth=4 count=1 drop; "
                                "dir=tx op=write-middle nth=2 count=1 "
                                "reorder=2", &error_abort);
        object_property_set_str(f1->obj, "fault-rules",
                                "dir=tx kind=ack nth=3 count=1 drop; "
                                "dir=rx kind=request prob=0.02 corrupt=psn",
                                &error_abort);
    }
    /* Where each QP's PSNs start (the peer's wire says the rest). */
    for (i = 0; i < QP_NUM; i++) {
        struct uz_qp_attr a;

        uz_qp_query(uzf.qp[i], &a);
        uzf.exp_psn[i] = le32_to_cpu(a.rq_psn);
        uzf.next_psn[i] = le32_to_cpu(a.sq_psn);
    }
    /* Nothing of the prologue left over: every CQ and EQ empty. */
    for (i = 0; i < 2; i++) {
        UzfNode *f = &uzf.node[i];
        struct uz_cqe c;
        int k;

        for (k = 0; k < f->ncqs; k++) {
            while (uz_cq_poll(f->cqs[k], &c)) {
                continue;
            }
        }
        uz_eq_drain(&f->n, &f->n.async_eq, 0);
        uz_eq_drain(&f->n, &f->n.comp_eq, 0);
    }
}

/* ------------------------------------------------------------------ */
/* Actions                                                            */
/* ------------------------------------------------------------------ */

static UzfNode *uzf_peer(UzQp *qp)
{
    return &uzf.node[1 - qp->n->idx];
}

/* A key of @f: mostly one of its own, now and then any number. */
static UzfKey uzf_key(UzfNode *f, UzfIn *in)
{
    uint8_t sel = in8(in);

    if (sel >= 0xf0) {
        return (UzfKey) { in32(in), in64(in), UINT32_MAX };
    }
    return f->keys[sel % UZF_NKEYS];
}

/* An address and length inside (mostly) the range of key @k. */
static uint32_t uzf_len(UzfIn *in)
{
    uint16_t l = in16(in);

    /* Mostly short; bit 15: scaled up past the MR. */
    return l & 0x8000 ? (uint32_t)(l & 0x7fff) << 8 : l & 0x3fff;
}

static void uzf_sge(UzfNode *f, UzfIn *in, UzSge *s)
{
    UzfKey k = uzf_key(f, in);
    uint16_t off = in16(in);

    s->addr = k.va + (k.len ? off % (k.len + 64) : off);
    s->length = uzf_len(in);
    s->lkey = k.key;
}

static const uint8_t uzf_rc_ops[] = {
    UZ_WR_SEND, UZ_WR_SEND_IMM, UZ_WR_SEND_INV, UZ_WR_RDMA_WRITE,
    UZ_WR_RDMA_WRITE_IMM, UZ_WR_RDMA_READ, UZ_WR_ATOMIC_CMP_SWP,
    UZ_WR_ATOMIC_FETCH_ADD, UZ_WR_LOCAL_INV, UZ_WR_REG_MR, UZ_WR_BIND_MW,
    UZ_WR_FLUSH, UZ_WR_ATOMIC_WRITE, UZ_WR_CRW, UZ_WR_STCRW,
    UZ_WR_SEND, UZ_WR_RDMA_WRITE, UZ_WR_RDMA_READ,
};

static const uint8_t uzf_uc_ops[] = {
    UZ_WR_SEND, UZ_WR_SEND_IMM, UZ_WR_RDMA_WRITE, UZ_WR_RDMA_WRITE_IMM,
    UZ_WR_LOCAL_INV, UZ_WR_REG_MR, UZ_WR_SEND,
};

/*
 * What the input may not change in a WQE: the page size of a REG_MR,
 * at most 64 KiB, so that a fast-reg MR (uzf_node_memory()) stays inside
 * its chunk.  A MR over the target's own rings is a driver's bug, not the
 * device's, and would stop the target with a false report.
 */
static void uzf_wqe_tame(uint8_t *wqe)
{
    uint8_t *shift = wqe + offsetof(struct uz_send_wqe, reg.page_shift);

    if (wqe[offsetof(struct uz_send_wqe, opcode)] == UZ_WR_REG_MR &&
        *shift > 16) {
        *shift = 12 + *shift % 5;
    }
}

/* Ring the SQ of @qp, through its shadow record where it has one. */
static void uzf_sq_ring(UzQp *qp, uint32_t old, uint8_t how)
{
    UzfNode *f = uzf_node_of(qp);
    uint64_t shadow = qp->sq + (UZ_SQ_WQE_SIZE << UZ_SQ_LOG_DEPTH);
    uint32_t event;

    if (qp != uzf.qp[QP_RC_A0] && qp != uzf.qp[QP_RC_A1]) {
        uz_sq_ring(qp);
        return;
    }
    /* As the provider posts: pi, then the doorbell when event says so. */
    qtest_writel(f->n.d.qts, shadow, qp->sq_pi);
    event = qtest_readl(f->n.d.qts, shadow + 4);
    if ((how & 1) || UZ_SQ_SHADOW_NEED_DB(event, qp->sq_pi, old)) {
        uz_sq_ring(qp);
    }
}

static void uzf_act_send(QTestState *s, UzfIn *in)
{
    static const int senders[] = {
        QP_RC_A0, QP_RC_A1, QP_RC_B0, QP_RC_B1, QP_TM_CLI, QP_TM_SRV,
        QP_UC0, QP_UC1, QP_UD0, QP_UD1, QP_XRC_INI, QP_RC_A0, QP_RC_B0,
        QP_TM_CLI, QP_XRC_INI, QP_RC_A1, QP_RAW0, QP_RAW1,
    };
    UzQp *qp = uzf.qp[senders[in8(in) % ARRAY_SIZE(senders)]];
    UzfNode *f = uzf_node_of(qp), *peer = uzf_peer(qp);
    bool ud = qp->type == UZ_QPT_UD, raw = qp->type == UZ_QPT_RAW;
    uint8_t sel = in8(in), flags = in8(in), misc = in8(in);
    uint64_t buf[UZ_SQ_WQE_SIZE / 8];
    uint8_t inl[UZ_SQ_MAX_INLINE];
    struct uz_av av = { .hop_limit = 64 };
    UzSge sge[4];
    UzfKey rk;
    uint32_t old = qp->sq_pi;
    uint16_t roff;
    UzWr wr = { 0 };
    int i;

    if (ud || raw) {
        wr.opcode = sel & 1 && !raw ? UZ_WR_SEND_IMM : UZ_WR_SEND;
    } else if (qp->type == UZ_QPT_UC) {
        wr.opcode = uzf_uc_ops[sel % ARRAY_SIZE(uzf_uc_ops)];
    } else {
        wr.opcode = uzf_rc_ops[sel % ARRAY_SIZE(uzf_rc_ops)];
    }
    if (sel >= 0xfc) {
        wr.opcode = in8(in);
    }
    wr.wr_id = 0x5e0000 | sel << 8 | misc;
    wr.flags = flags & (UZ_WQE_F_SIGNALED | UZ_WQE_F_SOLICITED |
                        UZ_WQE_F_FENCE);
    wr.num_sge = misc & 3;
    for (i = 0; i < wr.num_sge; i++) {
        uzf_sge(f, in, &sge[i]);
    }
    wr.sge = sge;
    /* STCRW offers a buffer of ours; the rest name the peer's. */
    rk = uzf_key(wr.opcode == UZ_WR_STCRW ? f : peer, in);
    roff = in16(in);
    wr.rkey = rk.key;
    wr.remote_addr = rk.va + (rk.len ? roff % (rk.len + 64) : roff);
    wr.imm = in32(in);
    wr.tag = in8(in) & 7;
    wr.crw_length = uzf_len(in);
    wr.xrc_srqn = misc & 0x10 ? in32(in) : uzf.node[1].xrc_srq->srqn;
    switch (wr.opcode) {
    case UZ_WR_ATOMIC_CMP_SWP:
    case UZ_WR_ATOMIC_FETCH_ADD:
    case UZ_WR_ATOMIC_WRITE:
        if (!(misc & 0x20)) {
            wr.remote_addr &= ~7ull;
        }
        wr.compare_add = in64(in);
        wr.swap = in64(in);
        break;
    case UZ_WR_SEND_INV:
        /* The peer's fast-reg MR or type 2 window. */
        wr.imm = misc & 0x20 ? peer->keys[6].key : peer->keys[5].key;
        break;
    case UZ_WR_LOCAL_INV:
        wr.imm = misc & 0x20 ? f->keys[6].key : f->keys[5].key;
        break;
    case UZ_WR_REG_MR:
        wr.rkey = (f->fast->key & ~0xffu) | (in8(in) | 1);
        wr.remote_addr = UZF_FAST_IOVA + (roff & 0xfff);
        wr.reg_length = uzf_len(in);
        wr.reg_access = in8(in) & 0x1f;
        wr.reg_npages = in8(in) % (UZF_FAST_PAGES + 2);
        wr.reg_page_shift = misc & 0x20 ? 12 + in8(in) % 8 : 12;
        f->keys[6] = (UzfKey) { wr.rkey, wr.remote_addr, wr.reg_length };
        break;
    case UZ_WR_BIND_MW:
        i = misc & 0x20 ? 1 : 0;
        wr.rkey = (f->mw[i] & ~0xffu) | (in8(in) | 1);
        wr.remote_addr = uz_mr_va(f->main, roff % UZF_MR_LEN);
        wr.reg_length = uzf_len(in);
        wr.reg_access = in8(in) & 0x0f;
        wr.bind_mr_key = misc & 0x40 ? f->small->key : f->main->key;
        f->keys[4 + i] = (UzfKey) { wr.rkey, wr.remote_addr,
                                    wr.reg_length };
        break;
    case UZ_WR_FLUSH:
        wr.flush_type = in8(in);
        wr.flush_level = wr.flush_type >> 7;
        wr.flush_type &= 3;
        wr.flush_length = uzf_len(in);
        break;
    default:
        break;
    }
    if (ud) {
        static const uint32_t qpns[4] = { 0, 1, UZ_MCAST_QPN, 0xabcdef };
        uint8_t d = in8(in);

        wr.ahn = d & 4 ? in8(in) : f->ahn;
        wr.remote_qpn = d & 3 ? qpns[d & 3] :
                        uzf.qp[QP_UD0 + 1 - qp->n->idx]->qpn;
        wr.remote_qkey = d & 8 ? UZ_GSI_QKEY : UZF_QKEY;
        if (d & 0x10) {
            uz_node_mac(1 - qp->n->idx, av.dmac);
            uz_node_gid(1 - qp->n->idx, av.dgid);
            uz_node_gid(qp->n->idx, av.sgid);
            av.traffic_class = d & 0xe0;
            wr.av = &av;
        }
    }
    if (flags & UZ_WQE_F_INLINE) {
        wr.flags |= UZ_WQE_F_INLINE;
        wr.inline_len = MIN(uzf_len(in), UZ_SQ_MAX_INLINE - (wr.av ? 64 : 0));
        uz_pattern(inl, wr.inline_len, sel);
        wr.inline_data = inl;
    }
    uz_wqe_build(&wr, ud, buf);
    /* Now and then a few bytes of the WQE as the input has them. */
    if (misc & 0x80) {
        int k = in8(in) % 4 + 1;

        for (i = 0; i < k; i++) {
            uint8_t pos = in8(in);

            ((uint8_t *)buf)[pos] = in8(in);
        }
    }
    uzf_wqe_tame((uint8_t *)buf);
    uz_sq_put(qp, buf, sizeof(buf));
    if (!(misc & 0x40) || ud) {
        uzf_sq_ring(qp, old, flags >> 7);
    }
}

/*
 * The receive queues: RQs, uz1's SRQ, XRC SRQ and TM SRQ, uz0's SRQ, the
 * raw QPs' RQs.
 */
static void uzf_act_recv(QTestState *s, UzfIn *in)
{
    static const int rqs[] = {
        QP_RC_A0, QP_RC_A1, QP_RC_B0, QP_TM_CLI, QP_UC0, QP_UD0, QP_UD1,
    };
    uint8_t sel = in8(in), misc = in8(in);
    int n = sel % (ARRAY_SIZE(rqs) + 6);
    UzfNode *f;
    UzSge sge[4];
    uint64_t ring;
    uint32_t *pi, db, log_depth;
    int i, nsge = misc & 3;

    if (n < ARRAY_SIZE(rqs) || n >= ARRAY_SIZE(rqs) + 4) {
        UzQp *qp = uzf.qp[n < ARRAY_SIZE(rqs) ? rqs[n] :
                          QP_RAW0 + n - ARRAY_SIZE(rqs) - 4];

        f = uzf_node_of(qp);
        ring = qp->rq;
        pi = &qp->rq_pi;
        db = qp->rq_db;
        log_depth = UZ_RQ_LOG_DEPTH;
    } else {
        UzSrq *srq;

        n -= ARRAY_SIZE(rqs);
        f = &uzf.node[n == 3 ? 0 : 1];
        srq = n == 0 ? f->srq : n == 1 ? f->xrc_srq : n == 2 ? f->tm :
              f->srq;
        ring = srq->ring;
        pi = &srq->pi;
        db = srq->db;
        log_depth = srq->log_depth;
    }
    for (i = 0; i < nsge; i++) {
        uzf_sge(f, in, &sge[i]);
    }
    uz_recv_put(&f->n, ring, log_depth, *pi, 0x7ec0000 | sel << 8 | misc,
                sge, nsge);
    if (misc & 0x80) {
        /* The header as the input has it. */
        uint64_t hdr[2] = { in64(in), in64(in) };

        qtest_memwrite(s, ring + (*pi & ((1u << log_depth) - 1)) *
                       UZ_RQ_WQE_SIZE, hdr, sizeof(hdr));
    }
    *pi = (*pi + 1) & UZ_DB_PI_MASK;
    if (!(misc & 0x40)) {
        uz_ring(&f->n.d, db, *pi);
    }
}

/* A list operation of uz1's tag-matching SRQ. */
static void uzf_act_tm(QTestState *s, UzfIn *in)
{
    UzfNode *f = &uzf.node[1];
    uint8_t sel = in8(in), misc = in8(in);
    UzSge sge;
    struct uz_tm_op op = {
        .wr_id = cpu_to_le64(0x7b000 | sel), .opcode = sel % 4,
        .flags = misc & 3, .num_sge = (misc >> 2) % 3,
        .index = cpu_to_le16(in8(in) % (UZF_TM_TAGS + 2)),
        .unexpected_cnt = cpu_to_le32(in8(in)),
        .recv_wr_id = cpu_to_le64(0x7c000 | sel),
    };
    uint32_t pos = f->tm_ops_pi & ((1u << UZF_TM_OPS_LOG) - 1);

    if (op.opcode == UZ_TM_OP_ADD) {
        static const uint64_t masks[4] = { UINT64_MAX, 0xff, 0, 0xf0f0 };

        op.tag = cpu_to_le64(in8(in) & 7);
        op.mask = cpu_to_le64(masks[misc >> 6]);
        uzf_sge(f, in, &sge);
        op.addr = cpu_to_le64(sge.addr);
        op.length = cpu_to_le32(sge.length);
        op.lkey = cpu_to_le32(sge.lkey);
    }
    qtest_memwrite(s, f->tm_ops + pos * sizeof(op), &op, sizeof(op));
    f->tm_ops_pi = (f->tm_ops_pi + 1) & UZ_DB_PI_MASK;
    if (!(misc & 0x20)) {
        uz_ring(&f->n.d, f->tm_ops_db, f->tm_ops_pi);
    }
}

/* Header lengths of the transport's opcodes, as IBA lays them out. */
enum {
    H_RETH = 1 << 0, H_AETH = 1 << 1, H_ATOMIC = 1 << 2, H_AACK = 1 << 3,
    H_IMM = 1 << 4, H_DETH = 1 << 5, H_CRW = 1 << 6, H_SACK = 1 << 7,
    H_FETH = 1 << 8, H_XRC = 1 << 9, H_PAY = 1 << 10, H_REQ = 1 << 11,
};

static uint16_t uzf_hdrs(uint8_t op)
{
    static const uint16_t rc[0x1e] = {
        [0x00] = H_PAY | H_REQ, [0x01] = H_PAY | H_REQ,
        [0x02] = H_PAY | H_REQ, [0x03] = H_PAY | H_REQ | H_IMM,
        [0x04] = H_PAY | H_REQ, [0x05] = H_PAY | H_REQ | H_IMM,
        [0x06] = H_PAY | H_REQ | H_RETH, [0x07] = H_PAY | H_REQ,
        [0x08] = H_PAY | H_REQ, [0x09] = H_PAY | H_REQ | H_IMM,
        [0x0a] = H_PAY | H_REQ | H_RETH,
        [0x0b] = H_PAY | H_REQ | H_RETH | H_IMM,
        [0x0c] = H_REQ | H_RETH, [0x0d] = H_PAY | H_AETH,
        [0x0e] = H_PAY, [0x0f] = H_PAY | H_AETH, [0x10] = H_PAY | H_AETH,
        [0x11] = H_AETH, [0x12] = H_AETH | H_AACK,
        [0x13] = H_REQ | H_ATOMIC, [0x14] = H_REQ | H_ATOMIC,
        [0x16] = H_PAY | H_REQ | H_IMM, [0x17] = H_PAY | H_REQ | H_IMM,
        [0x1c] = H_REQ | H_FETH | H_RETH,
        [0x1d] = H_PAY | H_REQ | H_RETH,
    };
    uint16_t h;

    switch (op) {
    case UZ_BTH_OP_UD_SEND_ONLY:
        return H_PAY | H_REQ | H_DETH;
    case UZ_BTH_OP_UD_SEND_ONLY_IMM:
        return H_PAY | H_REQ | H_DETH | H_IMM;
    case UZ_BTH_OP_RC_STCRW:
        return H_REQ | H_CRW;
    case UZ_BTH_OP_RC_SACK:
        return H_AETH | H_SACK;
    }
    if ((op & 0xe0) == UZ_BTH_OP_UC && (op & 0x1f) <= 0x0b) {
        return rc[op & 0x1f];
    }
    if ((op & 0xe0) == UZ_BTH_OP_XRC && (op & 0x1f) < ARRAY_SIZE(rc)) {
        h = rc[op & 0x1f];
        return h & H_REQ ? h | H_XRC : h;
    }
    return op < ARRAY_SIZE(rc) ? rc[op] : H_PAY;
}

/*
 * Our end of the hub's port "wire": what we send there every NIC on the
 * hub receives, and we see every frame the NICs send.  Of the requests
 * we note the PSNs, so that a frame from the input can say "the PSN the
 * responder expects next", or for a response "the requester's last".
 */
static ssize_t uzf_wire_receive(NetClientState *nc, const uint8_t *buf,
                                size_t size)
{
    uint32_t dqpn, psn;
    int i;

    if (size < UZ_OFF_BTH + UZ_BTH_LEN || lduw_be_p(buf + 12) != 0x0800 ||
        buf[UZ_OFF_IP + 9] != 17 ||
        lduw_be_p(buf + UZ_OFF_UDP + 2) != UZ_ROCE_UDP_PORT ||
        !(uzf_hdrs(buf[UZ_OFF_BTH]) & H_REQ)) {
        return size;
    }
    dqpn = ldl_be_p(buf + UZ_OFF_BTH + 4) & 0xffffff;
    psn = ldl_be_p(buf + UZ_OFF_BTH + 8) & 0xffffff;
    for (i = 0; i < QP_NUM; i++) {
        UzQp *qp = uzf.qp[i];
        uint8_t mac[6];

        uz_node_mac(qp->n->idx, mac);
        if (qp->qpn == dqpn && !memcmp(buf, mac, 6)) {
            uzf.exp_psn[i] = (psn + 1) & 0xffffff;
            uzf.next_psn[i ^ 1] = (psn + 1) & 0xffffff;
        }
    }
    return size;
}

static NetClientInfo uzf_wire_info = {
    .type = NET_CLIENT_DRIVER_NONE,
    .size = sizeof(NetClientState),
    .receive = uzf_wire_receive,
};

/* Opcodes a QP of each kind takes: requests, then responses. */
static const uint8_t uzf_rc_req[] = {
    0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b,
    0x0c, 0x13, 0x14, 0x16, 0x17, 0x1c, 0x1d, UZ_BTH_OP_RC_STCRW,
    0x04, 0x0a, 0x0c,
};
static const uint8_t uzf_rc_resp[] = {
    0x0d, 0x0e, 0x0f, 0x10, 0x11, 0x12, UZ_BTH_OP_RC_SACK, 0x11, 0x10,
    UZ_BTH_OP_CNP,
};

static uint8_t uzf_pick_op(UzQp *qp, uint8_t sel, bool *resp)
{
    uint8_t op;

    *resp = false;
    switch (qp->type) {
    case UZ_QPT_UD:
        return sel & 1 ? UZ_BTH_OP_UD_SEND_ONLY_IMM : UZ_BTH_OP_UD_SEND_ONLY;
    case UZ_QPT_UC:
        return UZ_BTH_OP_UC | (sel % 12);
    case UZ_QPT_XRC_TGT:
        op = uzf_rc_req[sel % ARRAY_SIZE(uzf_rc_req)];
        return op == UZ_BTH_OP_RC_STCRW ? op : op | UZ_BTH_OP_XRC;
    case UZ_QPT_XRC_INI:
        *resp = true;
        op = uzf_rc_resp[sel % ARRAY_SIZE(uzf_rc_resp)];
        return op == UZ_BTH_OP_RC_SACK || op == UZ_BTH_OP_CNP ?
               op : op | UZ_BTH_OP_XRC;
    }
    if (sel & 0x80) {
        *resp = true;
        return uzf_rc_resp[sel % ARRAY_SIZE(uzf_rc_resp)];
    }
    return uzf_rc_req[sel % ARRAY_SIZE(uzf_rc_req)];
}

/* Fill @len bytes at @p: the input's bytes, or a pattern of @seed. */
static void uzf_fill(UzfIn *in, uint8_t *p, size_t len, bool raw,
                     uint32_t seed)
{
    size_t k = raw ? MIN(len, in->n) : 0;

    memcpy(p, in->p, k);
    in->p += k;
    in->n -= k;
    uz_pattern(p + k, len - k, seed);
}

/* What is wrong with a frame, in one of 8 inputs; in the others nothing. */
enum {
    FLAW_ICRC, FLAW_IP_CSUM, FLAW_PAD, FLAW_POKE, FLAW_CTL, FLAW_OPCODE,
    FLAW_GROUP, FLAW_LEN, FLAW_NONE,
};

/*
 * Instead of RoCE, a control frame of the timing model's lockstep (spec
 * 8.20.2), which the peer's model would send: broadcast, EtherType
 * 0x88b5, "UZMD", a kind (HELLO, MARK, STAMP, BYE) and a time.
 */
static void uzf_model_ctl(UzfIn *in, int from)
{
    uint8_t fr[60] = { 0 };

    memset(fr, 0xff, 6);
    uz_node_mac(from, fr + 6);
    stw_be_p(fr + 12, 0x88b5);
    stl_be_p(fr + 14, 0x555a4d44);
    fr[18] = in8(in) % 6;
    stq_be_p(fr + 22, (int64_t)(int32_t)in32(in));
    qemu_send_packet(uzf.wire, fr, sizeof(fr));
}

/*
 * Instead of RoCE, a MAC control frame (spec 9.1.3) to node @to, or to
 * the MAC control group, as a switch or a tool on the link would send:
 * 802.3x PAUSE, 802.1Qbb PFC or another opcode, the vector and the time
 * from the input, now and then cut short.
 */
static void uzf_pause_frame(UzfIn *in, int to)
{
    static const uint8_t group[6] = { 0x01, 0x80, 0xc2, 0x00, 0x00, 0x01 };
    uint8_t fr[64] = { 0 };
    uint8_t sel = in8(in);
    uint16_t quanta = in16(in);
    size_t len = sel & 0x80 ? 14 + in8(in) % 21 : sizeof(fr);
    int p;

    if (sel & 0x40) {
        memcpy(fr, group, 6);
    } else {
        uz_node_mac(to, fr);
    }
    uz_node_mac(1 - to, fr + 6);
    stw_be_p(fr + 12, 0x8808);
    switch (sel & 3) {
    case 0:
        stw_be_p(fr + 14, 0x0001);
        stw_be_p(fr + 16, quanta);
        break;
    case 3:
        stw_be_p(fr + 14, in16(in));
        break;
    default:
        stw_be_p(fr + 14, 0x0101);
        stw_be_p(fr + 16, in8(in));
        for (p = 0; p < 8; p++) {
            stw_be_p(fr + 18 + 2 * p, quanta);
        }
    }
    qemu_send_packet(uzf.wire, fr, len);
}

/*
 * A RoCEv2 frame from the wire, from the peer of the QP it is for: its
 * opcode one the QP's transport takes, its PSN near what the QP expects
 * (the QP's own, for a response), headers naming keys of the NIC, a
 * payload, the IPv4 checksum and the ICRC right unless the input says
 * otherwise.
 */
static void uzf_act_inject(QTestState *s, UzfIn *in)
{
    uint8_t sel = in8(in), opsel = in8(in), misc = in8(in), bad = in8(in);
    uint8_t flaw = bad >= 0xe0 ? bad >> 2 & 7 : FLAW_NONE;
    int qi = sel % QP_NUM;
    UzQp *qp = uzf.qp[qi];
    UzfNode *f = uzf_node_of(qp), *peer = uzf_peer(qp);
    int me = qp->n->idx;
    uint8_t fr[UZF_MAX_FRAME] = { 0 };
    uint8_t *ip = fr + UZ_OFF_IP, *udp = fr + UZ_OFF_UDP;
    uint8_t *bth = fr + UZ_OFF_BTH, *p = bth + UZ_BTH_LEN;
    uint32_t dqpn = qp->qpn, psn, paylen, pad;
    uint16_t h, csum;
    uint8_t op;
    bool resp;
    size_t ip_len, len;
    UzfKey k;

    if (flaw == FLAW_CTL) {
        if (misc & 1) {
            uzf_pause_frame(in, me);
        } else {
            uzf_model_ctl(in, 1 - me);
        }
        return;
    }
    op = uzf_pick_op(qp, opsel, &resp);
    if (flaw == FLAW_OPCODE) {
        op = in8(in);
    }
    if (sel >= 0xf8) {
        dqpn = sel == 0xff ? UZ_MCAST_QPN : in32(in) & 0xffffff;
    }
    h = uzf_hdrs(op);
    psn = (resp ? uzf.next_psn[qi] - 1 : uzf.exp_psn[qi]) + (int8_t)in8(in);

    /* Ethernet, from the peer's MAC (a group address now and then). */
    uz_node_mac(me, fr);
    if (flaw == FLAW_GROUP) {
        memset(fr, 0xff, 6);
    }
    uz_node_mac(1 - me, fr + 6);
    stw_be_p(fr + 12, 0x0800);

    /* BTH and the extended headers */
    bth[0] = op;
    bth[1] = misc & 0x80;               /* SE; pad below */
    stw_be_p(bth + 2, 0xffff);
    stl_be_p(bth + 4, dqpn);
    stl_be_p(bth + 8, (psn & 0xffffff) | (misc & 0x40 ? 0x80000000u : 0) |
             (misc & 0x20 ? (uint32_t)UZ_BTH_B8_SR << 24 : 0));
    if (h & H_DETH) {
        stl_be_p(p, misc & 0x10 ? in32(in) : UZF_QKEY);
        stl_be_p(p + 4, uzf.qp[QP_UD0 + 1 - me]->qpn);
        p += 8;
    }
    if (h & H_XRC) {
        stl_be_p(p, misc & 0x08 ? f->srq->srqn : f->xrc_srq ?
                 f->xrc_srq->srqn : 0);
        p += UZ_XRCETH_LEN;
    }
    if (h & H_FETH) {
        stl_be_p(p, in8(in));
        p += 4;
    }
    k = uzf_key(f, in);
    if (h & (H_RETH | H_ATOMIC)) {
        uint64_t va = k.va + (k.len ? in16(in) % (k.len + 64) : 0);

        stq_be_p(p, h & H_ATOMIC ? va & ~7ull : va);
        stl_be_p(p + 8, k.key);
        if (h & H_RETH) {
            stl_be_p(p + 12, op == 0x1d ? 8 : uzf_len(in));
            p += 16;
        } else {
            stq_be_p(p + 12, in64(in));
            stq_be_p(p + 20, in64(in));
            p += 28;
        }
    }
    if (h & H_CRW) {
        stq_be_p(p, in8(in) & 7);
        k = uzf_key(peer, in);
        stq_be_p(p + 8, k.va + (in16(in) & 0xfff));
        stl_be_p(p + 16, k.key);
        stl_be_p(p + 20, uzf_len(in));
        p += 24;
    }
    if (h & H_AETH) {
        static const uint8_t syn[8] = {
            0x1f, 0x1f, 0x00, 0x21, 0x60, 0x61, 0x62, 0x63,
        };
        uint8_t v = in8(in);

        p[0] = v >= 0xf0 ? in8(in) : syn[v % 8];
        p[1] = 0;
        stw_be_p(p + 2, in16(in));     /* MSN */
        p += 4;
    }
    if (h & H_AACK) {
        stq_be_p(p, in64(in));
        p += 8;
    }
    if (h & H_SACK) {
        stl_be_p(p, (psn + 1 + (in8(in) & 7)) & 0xffffff);
        stl_be_p(p + 4, in8(in) & 0x1f);
        p += 8;
    }
    if (h & H_IMM) {
        /* SEND with invalidate: a key of the receiver's. */
        stl_be_p(p, (op & 0x1f) == 0x16 || (op & 0x1f) == 0x17 ?
                 f->keys[5 + (misc & 1)].key : in32(in));
        p += 4;
    }

    /* The payload: a TMH first for a tag-matching QP's first packet. */
    paylen = 0;
    if (h & H_PAY) {
        uint16_t l = in16(in);

        paylen = l & 0x8000 ? l & 0x7ff : l & 0x3ff;
        if (op == 0x1d) {
            paylen = 8;
        }
        paylen = MIN(paylen, (size_t)(fr + UZF_MAX_FRAME - p) - 8);
        uzf_fill(in, p, paylen, misc & 0x04, opsel);
        if (qi == QP_TM_SRV && (op == 0x00 || op == 0x04 || op == 0x05) &&
            paylen >= 32 && !(misc & 0x04)) {
            p[UZ_TMH_OPCODE] = misc & 3;
            stq_be_p(p + UZ_TMH_TAG, 1 + (misc >> 4 & 3));
            stq_be_p(p + UZ_RVH_VA, uz_mr_va(peer->main, 8192));
            stl_be_p(p + UZ_RVH_RKEY, peer->main->key);
            stl_be_p(p + UZ_RVH_DLEN, 64 << (misc >> 4 & 3));
        }
    }
    pad = flaw == FLAW_PAD ? bad & 3 : -paylen & 3;
    bth[1] |= pad << 4;
    p += paylen + pad;

    /* IPv4, UDP, the ICRC */
    ip_len = p - ip + UZ_ICRC_LEN;
    ip[0] = 0x45;
    ip[1] = misc & 0x02 ? 0x03 : 0x02;  /* ECN: CE or ECT(0) */
    stw_be_p(ip + 2, ip_len);
    ip[8] = 64;
    ip[9] = 17;
    uz_node_ip(1 - me, ip + 12);
    uz_node_ip(me, ip + 16);
    csum = net_checksum_finish(net_checksum_add(20, ip));
    stw_be_p(ip + 10, flaw == FLAW_IP_CSUM ? csum ^ 1 : csum);
    stw_be_p(udp, 0xc000 | (dqpn & 0x3fff));
    stw_be_p(udp + 2, UZ_ROCE_UDP_PORT);
    stw_be_p(udp + 4, ip_len - 20);
    len = UZ_OFF_IP + ip_len;
    stl_le_p(fr + len - UZ_ICRC_LEN, uz_icrc(fr, len));
    if (flaw == FLAW_LEN) {
        /* The frame longer than IPv4 says, or shorter. */
        len = bad & 1 ? MIN(len + (bad & 2 ? 60 : 1), UZF_MAX_FRAME) :
                        MAX(len - 5, 15);
    }
    if (flaw == FLAW_ICRC) {
        fr[len - 1] ^= 0x80;
    }
    if (flaw == FLAW_POKE) {
        /* A byte anywhere, ICRC recomputed: malformed but sealed. */
        uint16_t pos = in16(in) % len;

        fr[pos] = in8(in);
        if (pos >= UZ_OFF_BTH) {
            stl_le_p(fr + len - UZ_ICRC_LEN, uz_icrc(fr, len));
        }
    }
    if (h & H_REQ && !resp && dqpn == qp->qpn) {
        uzf.exp_psn[qi] = (psn + 1) & 0xffffff;
    }
    /* As the stream and shm links hand over what they read: a batch. */
    defer_call_begin();
    qemu_send_packet(uzf.wire, fr, len);
    defer_call_end();
}

/* Advance the virtual clock: 1 ns .. about 0.5 s. */
/*
 * Time passes, as for a running QEMU: up to the next timer's deadline in
 * one turn of the main loop, then to the one after, for at most
 * UZF_CLOCK_TURNS deadlines.  One clock_step over them all would run
 * every timer due in a second of device time in one turn, which no
 * running QEMU does, and the stall check would take it for a stall.
 */
static void uzf_act_clock(QTestState *s, UzfIn *in)
{
    uint8_t b = in8(in);
    int64_t left = (int64_t)((b & 7) + 1) << ((b >> 3) % 27);
    int64_t next, step;
    int n;

    for (n = 0; left > 0 && n < UZF_CLOCK_TURNS; n++) {
        next = qemu_clock_deadline_ns_all(QEMU_CLOCK_VIRTUAL,
                                          QEMU_TIMER_ATTR_ALL);
        step = next < 0 || next > left ? left : MAX(next, 1);
        uzf_stall_arm();
        qtest_clock_step(s, step);
        left -= step;
        uzf_flush();
    }
}

/* Serve a page fault of an ODP MR as the driver does. */
static void uzf_page_fault(UzfNode *f, uint32_t key, uint32_t page,
                           bool bad)
{
    UzMr *mr = f->odp;

    if (key != mr->key || page >= mr->npages) {
        return;
    }
    qtest_writeq(f->n.d.qts, mr->pbl + page * 8,
                 bad ? UZ_PTE_ERROR : mr->pages[page] | UZ_PTE_PRESENT);
    uz_page_resume(mr);
}

/* Every CQ and EQ of both NICs polled; faults served; arming. */
static void uzf_act_poll(QTestState *s, UzfIn *in)
{
    uint8_t how = in8(in);
    int i, k, j;

    for (i = 0; i < 2; i++) {
        UzfNode *f = &uzf.node[i];
        struct uz_eqe e;
        struct uz_cqe c;

        for (k = 0; k < f->ncqs; k++) {
            for (j = 0; j < 64 && uz_cq_poll(f->cqs[k], &c); j++) {
                continue;
            }
            if (how & 1) {
                uz_cq_arm(f->cqs[k], how & 2 ? UZ_DB_ARM_SOLICITED :
                                               UZ_DB_ARM);
            }
        }
        while (uz_eq_next(&f->n.d, &f->n.async_eq, &e)) {
            if (e.type == UZ_EQE_PAGE_FAULT && !(how & 4)) {
                uzf_page_fault(f, le32_to_cpu(e.handle),
                               le32_to_cpu(e.data), how & 8);
            }
            if (e.type == UZ_EQE_SRQ_LIMIT && (how & 16)) {
                UzSrq *srq = f->srq;

                uz_srq_modify(srq, 4);
            }
        }
        uz_ring(&f->n.d, f->n.async_eq.db,
                f->n.async_eq.ci | (how & 32 ? UZ_DB_ARM : 0));
        while (uz_eq_next(&f->n.d, &f->n.comp_eq, &e)) {
            continue;
        }
        uz_ring(&f->n.d, f->n.comp_eq.db,
                f->n.comp_eq.ci | (how & 64 ? UZ_DB_ARM : 0));
    }
}

/* The SQ shadow record of an RC A QP: any producer index. */
static void uzf_act_shadow(QTestState *s, UzfIn *in)
{
    uint8_t b = in8(in);
    UzQp *qp = uzf.qp[b & 1 ? QP_RC_A1 : QP_RC_A0];
    uint64_t shadow = qp->sq + (UZ_SQ_WQE_SIZE << UZ_SQ_LOG_DEPTH);
    uint32_t pi = (qp->sq_pi + (int8_t)in8(in)) & UZ_DB_PI_MASK;

    qtest_writel(s, shadow, b & 2 ? in32(in) : pi);
    if (b & 4) {
        uz_ring(&qp->n->d, qp->sq_db, pi);
    }
}

/* A doorbell of any queue with a value near what it expects, or any. */
static void uzf_act_doorbell(QTestState *s, UzfIn *in)
{
    uint8_t b = in8(in), which = in8(in);
    UzfNode *f = &uzf.node[b & 1];
    UzQp *qp = uzf.qp[(which % (QP_NUM / 2)) * 2 + (b & 1)];
    uint32_t db, val;
    int8_t d = in8(in);

    switch ((b >> 1) % 6) {
    case 0:
        db = qp->sq_db;
        val = qp->sq_pi + d;
        break;
    case 1:
        db = qp->rq_db;
        val = qp->rq_pi + d;
        break;
    case 2: {
        UzCq *cq = f->cqs[which % f->ncqs];

        db = cq->db;
        val = cq->ci + d;
        break;
    }
    case 3:
        db = f->srq->db;
        val = f->srq->pi + d;
        break;
    case 4:
        db = f->n.comp_eq.db;
        val = f->n.comp_eq.ci + d;
        break;
    default:
        db = in16(in) & 0xffc;
        val = in32(in);
        break;
    }
    val = (val & UZ_DB_PI_MASK) | (b & 0xc0) << 24;
    /* Not the admin queue's: the target's own commands go there. */
    if (db != UZ_DB_ADMIN) {
        uz_ring(&f->n.d, db, val);
    }
}

/*
 * @qp RESET -> INIT -> RTR -> RTS towards @peer, with the attributes of
 * its type's columns (those uz_rc_connect, uz_uc_up, uz_ud_up and the
 * XRC test use), each step's status ignored: a connection the input asks
 * for may be refused.
 */
static void uzf_qp_up(UzQp *qp, UzQp *peer, uint32_t rq_psn,
                      uint32_t sq_psn, const UzRcOpts *o)
{
    uint8_t t = qp->type;
    bool rc = t == UZ_QPT_RC, ud = t == UZ_QPT_UD || t == UZ_QPT_RAW;
    struct uz_qp_attr a = {
        .state = UZ_QPS_RESET,
    };
    uint32_t mask;

    uz_qp_modify(qp, UZ_QP_ATTR_STATE, &a);
    qp->sq_pi = 0;
    qp->rq_pi = 0;
    a = (struct uz_qp_attr) {
        .state = UZ_QPS_INIT, .port = 1, .qkey = cpu_to_le32(UZF_QKEY),
        .access_flags = cpu_to_le32(UZ_ACCESS_ALL),
    };
    uz_qp_modify(qp, UZ_QP_ATTR_STATE | UZ_QP_ATTR_PORT |
                 (t == UZ_QPT_RAW ? 0 : UZ_QP_ATTR_PKEY_INDEX) |
                 (t == UZ_QPT_RAW ? 0 : ud ? UZ_QP_ATTR_QKEY :
                                             UZ_QP_ATTR_ACCESS), &a);
    a = (struct uz_qp_attr) {
        .state = UZ_QPS_RTR, .path_mtu = o->path_mtu,
        .dest_qpn = cpu_to_le32(peer->qpn), .rq_psn = cpu_to_le32(rq_psn),
        .max_dest_rd_atomic = UZ_RD_ATOMIC,
        .min_rnr_timer = o->min_rnr_timer,
    };
    uz_attr_path(&a, qp, peer);
    mask = UZ_QP_ATTR_STATE;
    if (!ud) {
        mask |= UZ_QP_ATTR_AV | UZ_QP_ATTR_PATH_MTU | UZ_QP_ATTR_DEST_QPN |
                UZ_QP_ATTR_RQ_PSN;
    }
    if (rc || t == UZ_QPT_XRC_TGT) {
        mask |= UZ_QP_ATTR_MAX_DEST_RD_ATOMIC | UZ_QP_ATTR_MIN_RNR_TIMER;
    }
    uz_qp_modify(qp, mask, &a);
    a = (struct uz_qp_attr) {
        .state = UZ_QPS_RTS, .sq_psn = cpu_to_le32(sq_psn),
        .timeout = o->timeout, .retry_cnt = o->retry_cnt,
        .rnr_retry = o->rnr_retry, .max_rd_atomic = UZ_RD_ATOMIC,
    };
    mask = UZ_QP_ATTR_STATE | (t == UZ_QPT_RAW ? 0 : UZ_QP_ATTR_SQ_PSN);
    if (rc || t == UZ_QPT_XRC_INI) {
        mask |= UZ_QP_ATTR_TIMEOUT | UZ_QP_ATTR_RETRY_CNT |
                UZ_QP_ATTR_RNR_RETRY | UZ_QP_ATTR_MAX_QP_RD_ATOMIC;
    } else if (t == UZ_QPT_XRC_TGT) {
        mask |= UZ_QP_ATTR_TIMEOUT;
    }
    uz_qp_modify(qp, mask, &a);
}

/* Connect (again) the pair of @qi with connection options from @in. */
static void uzf_reconnect(UzfIn *in, int qi)
{
    UzQp *a = uzf.qp[qi & ~1], *b = uzf.qp[qi | 1];
    UzRcOpts o = UZ_RC_OPTS_DEFAULT;
    uint8_t x = in8(in);

    o.path_mtu = 1 + x % 5;
    o.retry_cnt = x >> 3 & 7;
    o.rnr_retry = (x >> 5) % (UZF_RNR_RETRY + 1);
    o.timeout = in8(in) % 32;
    o.min_rnr_timer = in8(in) % 32;
    o.psn[0] = in32(in) & 0xffffff;
    o.psn[1] = in32(in) & 0xffffff;
    uzf_qp_up(a, b, o.psn[1], o.psn[0], &o);
    uzf_qp_up(b, a, o.psn[0], o.psn[1], &o);
    uzf.exp_psn[qi & ~1] = uzf.next_psn[qi | 1] = o.psn[1];
    uzf.exp_psn[qi | 1] = uzf.next_psn[qi & ~1] = o.psn[0];
}

static void uzf_act_qp(QTestState *s, UzfIn *in)
{
    uint8_t b = in8(in);
    int qi = in8(in) % QP_NUM;
    static const uint8_t states[4] = {
        UZ_QPS_ERR, UZ_QPS_SQD, UZ_QPS_RTS, UZ_QPS_SQE,
    };
    struct uz_qp_attr a = { .state = states[b & 3] };

    if (b & 4) {
        uzf_reconnect(in, qi);
        return;
    }
    uz_qp_modify(uzf.qp[qi], UZ_QP_ATTR_STATE, &a);
}

/* Words the fault rules of 7.5.2 are made of. */
static const char *const uzf_rule_words[] = {
    "dir=tx", "dir=rx", "kind=request", "kind=response", "kind=ack",
    "kind=nak", "kind=stcrw", "kind=roce", "kind=eth", "op=send-only",
    "op=write-first", "op=write-middle", "op=read-response-first",
    "op=ack", "op=sack", "op=uc-send-only", "op=atomic-ack",
    "op=read-request", "op=0xa4", "op=300", "qpn=2", "qpn=0x3",
    "psn=0-0xffffff", "psn=5", "psn=9-3", "nth=2", "nth=1", "count=3",
    "count=1", "prob=0.5", "prob=1", "prob=2", "bogus", "# comment\n",
    ";",
};

static const char *const uzf_rule_actions[] = {
    "drop", "dup", "dup=3", "dup=99", "delay=50", "delay=0", "reorder",
    "reorder=5", "corrupt", "corrupt=icrc", "corrupt=ip", "corrupt=opcode",
    "corrupt=qpn", "corrupt=psn", "corrupt=syndrome", "corrupt=rkey",
    "corrupt=payload", "corrupt=nothing",
};

static void uzf_rules(UzfIn *in, Object *obj)
{
    g_autoptr(GString) t = g_string_new(NULL);
    Error *err = NULL;
    char *back;
    int rules = in8(in) % 4, i, k;

    for (i = 0; i < rules; i++) {
        int words = in8(in) % 5;

        for (k = 0; k < words; k++) {
            g_string_append_printf(t, "%s ", uzf_rule_words[
                                   in8(in) % ARRAY_SIZE(uzf_rule_words)]);
        }
        g_string_append_printf(t, "%s;", uzf_rule_actions[
                               in8(in) % ARRAY_SIZE(uzf_rule_actions)]);
    }
    object_property_set_str(obj, "fault-rules", t->str, &err);
    error_free(err);
    back = object_property_get_str(obj, "fault-rules", NULL);
    g_free(back);
}

/* Congestion control's knobs (spec 9.1.2), in range or not. */
static void uzf_cc_knob(UzfIn *in, Object *obj, Error **err)
{
    static const char *const knobs[] = {
        "rate_to_set_on_first_cnp", "rpg_time_reset", "rpg_byte_reset",
        "rpg_min_rate", "min_time_between_cnps", "dce_tcp_rtt", "rpg_gd",
        "rate_reduce_monitor_period", "rpg_threshold", "rpg_hai_rate",
    };
    uint8_t k = in8(in);

    if (k >= 0xf0) {
        object_property_set_bool(obj, k & 1 ? "roce_rp_enable" :
                                 "roce_np_enable", k & 2, err);
        return;
    }
    object_property_set_uint(obj, knobs[k % ARRAY_SIZE(knobs)], in16(in),
                             err);
}

/* Run-time properties: rules, recovery, random faults, the link. */
static void uzf_act_prop(QTestState *s, UzfIn *in)
{
    static const char *const probs[] = {
        "fault-drop", "fault-dup", "fault-reorder", "fault-corrupt",
    };
    uint8_t b = in8(in);
    Object *obj = uzf.node[b & 1].obj;
    g_autofree char *v = NULL;
    Error *err = NULL;

    switch ((b >> 1) % 8) {
    case 0:
        uzf_rules(in, obj);
        return;
    case 1:
        object_property_set_str(obj, "recovery", b & 0x80 ? "gbn" : "sr",
                                &err);
        break;
    case 2:
        v = g_strdup_printf("%f", in8(in) / 512.0);
        object_property_parse(obj, probs[b >> 6], v, &err);
        break;
    case 3:
        object_property_set_uint(obj, "fault-delay-us", in8(in), &err);
        break;
    case 4:
        object_property_set_bool(obj, "link", b & 0x80, &err);
        break;
    case 5:
        object_property_set_uint(obj, "ack-timeout-max-us", in16(in), &err);
        break;
    case 6:
        object_property_set_uint(obj, "sr-rto-low-us", in16(in), &err);
        break;
    default:
        if (b & 0x80) {
            uzf_cc_knob(in, obj, &err);
            break;
        }
        object_property_set_uint(obj, "fault-flap-down-us", in8(in), &err);
        break;
    }
    error_free(err);
}

/* 64 bytes of the input as a WQE, at the next slot of a ring. */
static void uzf_act_raw_wqe(QTestState *s, UzfIn *in)
{
    uint8_t b = in8(in);
    UzQp *qp = uzf.qp[b % QP_NUM];
    uint8_t wqe[64];
    uint64_t ring;
    uint32_t *pi, db;
    size_t k = MIN(sizeof(wqe), in->n);

    if (b & 0x80 && qp->rq) {
        ring = qp->rq + (qp->rq_pi % (1u << UZ_RQ_LOG_DEPTH)) *
               UZ_RQ_WQE_SIZE;
        pi = &qp->rq_pi;
        db = qp->rq_db;
    } else if (qp->sq) {
        ring = qp->sq + (qp->sq_pi % (1u << UZ_SQ_LOG_DEPTH)) *
               UZ_SQ_WQE_SIZE;
        pi = &qp->sq_pi;
        db = qp->sq_db;
    } else {
        return;
    }
    memset(wqe, 0, sizeof(wqe));
    memcpy(wqe, in->p, k);
    in->p += k;
    in->n -= k;
    if (db == qp->sq_db) {
        uzf_wqe_tame(wqe);
    }
    qtest_memwrite(s, ring, wqe, sizeof(wqe));
    *pi = (*pi + 1) & UZ_DB_PI_MASK;
    uz_ring(&qp->n->d, db, *pi);
}

/* Commands a driver issues while traffic flows. */
static void uzf_act_admin(QTestState *s, UzfIn *in)
{
    uint8_t b = in8(in);
    UzfNode *f = &uzf.node[b & 1];
    UzfKey k = uzf_key(f, in);

    switch ((b >> 1) % 4) {
    case 0:
        uz_invalidate_xlat(&f->n, k.key, 0, k.va + (in8(in) << 12),
                           in8(in) << 12);
        break;
    case 1:
        uz_srq_modify(f->srq, in8(in) % 40);
        break;
    case 2: {
        struct uz_cmd_rereg_mr c = {
            .key = cpu_to_le32(f->small->key), .change = UZ_REREG_ACCESS,
            .access = cpu_to_le32(in8(in) & 0x1f),
        };

        uz_cmd(&f->n, UZ_CMD_REREG_MR, &c, sizeof(c), NULL);
        break;
    }
    default:
        uz_page_resume(f->odp);
        break;
    }
}

typedef void (*UzfAction)(QTestState *s, UzfIn *in);

/* The actions; an input's byte picks one, the table weighs them. */
static const UzfAction uzf_actions[32] = {
    uzf_act_send, uzf_act_send, uzf_act_send, uzf_act_send,
    uzf_act_send, uzf_act_send, uzf_act_send, uzf_act_send,
    uzf_act_recv, uzf_act_recv, uzf_act_recv, uzf_act_recv,
    uzf_act_inject, uzf_act_inject, uzf_act_inject, uzf_act_inject,
    uzf_act_inject, uzf_act_inject, uzf_act_clock, uzf_act_clock,
    uzf_act_clock, uzf_act_poll, uzf_act_poll, uzf_act_poll,
    uzf_act_tm, uzf_act_tm, uzf_act_shadow, uzf_act_doorbell,
    uzf_act_qp, uzf_act_prop, uzf_act_raw_wqe, uzf_act_admin,
};

static void uzf_run(QTestState *s, const unsigned char *data, size_t size)
{
    UzfIn in = { data, size };
    int n;

    for (n = 0; in.n && n < UZF_MAX_ACTIONS; n++) {
        uzf_stall_arm();
        uzf.action = n;
        uzf_actions[in8(&in) % ARRAY_SIZE(uzf_actions)](s, &in);
        uzf_flush();
    }
}

/* ------------------------------------------------------------------ */
/* Children that run the inputs                                       */
/* ------------------------------------------------------------------ */

/*
 * A fork per input costs more than the input: copying the page tables
 * of the 157 MiB the prologue leaves resident under ASan is about 10 ms,
 * the input under 1 ms.  So a child runs up to UZURA_FUZZ_PER_CHILD
 * inputs (default 1) one after the other, each handed to it in shared
 * memory, and then exits; the next input gets a fresh child.  Its inputs
 * after the first start from the state the earlier ones left, so what
 * fails is a batch: the parent keeps the inputs the child ran and, when
 * the child fails, writes them all as one crash input (UZF_BATCH_MAGIC,
 * then each input as a 32-bit little-endian length and its bytes), which
 * replays the failure in one child.  libFuzzer's merge, which runs each
 * input alone, keeps in the corpus only what a fresh child reaches.
 */
#define UZF_BATCH_MAGIC     "UZFBATCH"
#define UZF_IO_MAX          (64 * 1024)
/*
 * No answer from a child in this long is a hang.  A child that spins
 * stops itself after UZURA_FUZZ_STALL_MS of CPU; this catches one that
 * waits for ever, and is long because a nice-19 worker beside a booting
 * cluster can get no CPU for seconds.
 */
#define UZF_HANG_MS         20000
#define UZF_CHILD_FAILED    77
#define UZF_CHILD_STALLED   78

typedef struct UzfIo {
    uint32_t size;
    bool stack;                 /* a stall prints its stack (slow) */
    uint8_t data[UZF_IO_MAX];
} UzfIo;

/* Our resident memory: /proc/self/statm, read with no allocation. */
static long uzf_rss_kb(void)
{
    static int fd = -1;
    char buf[128];
    const char *p, *end;
    ssize_t n;
    long pages;

    if (fd < 0) {
        fd = open("/proc/self/statm", O_RDONLY);
    }
    n = pread(fd, buf, sizeof(buf) - 1, 0);
    if (n <= 0) {
        return 0;
    }
    buf[n] = 0;
    p = strchr(buf, ' ');
    if (!p || qemu_strtol(p + 1, &end, 10, &pages)) {
        return 0;
    }
    return pages * (qemu_real_host_page_size() / 1024);
}

/*
 * A child that fails says why, with a stack, and exits: libFuzzer's own
 * handlers, inherited from the parent, would save the parent's input of
 * the moment, not the batch.
 */
static void G_NORETURN uzf_child_fail(const char *why)
{
    fprintf(stderr, "==%d== ERROR: uzura-datapath-fuzz: %s\n", getpid(),
            why);
    __sanitizer_print_stack_trace();
    _exit(UZF_CHILD_FAILED);
}

static void uzf_child_signal(int sig, siginfo_t *si, void *uc)
{
    static const char stall[] = "uzura-datapath-fuzz: stall? an action "
                                "or a turn of the main loop ran over "
                                "UZURA_FUZZ_STALL_MS of CPU\n";

    if (sig == SIGPROF) {
        /*
         * Not an error yet: the parent runs the batch again to see, and
         * only then asks for the stack (symbolizing takes seconds).
         */
        if (write(STDERR_FILENO, stall, sizeof(stall) - 1) < 0) {
            _exit(UZF_CHILD_STALLED);
        }
        if (uzf.io->stack) {
            __sanitizer_print_stack_trace();
        }
        _exit(UZF_CHILD_STALLED);
    }
    uzf_child_fail(sig == SIGABRT ? "deadly signal: abort" :
                   "deadly signal: illegal instruction");
}

static void uzf_child_died(void)
{
    _exit(UZF_CHILD_FAILED);
}

static void G_NORETURN uzf_child(QTestState *s)
{
    struct sigaction sa = { .sa_sigaction = uzf_child_signal,
                            .sa_flags = SA_SIGINFO };
    struct itimerval off = { };
    struct rusage ru;
    char cmd, ok = 'k';
    char why[160];
    size_t held;

    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() == 1) {
        _exit(1);
    }
    close(uzf.cmd[1]);
    close(uzf.done[0]);
    sigaction(SIGPROF, &sa, NULL);
    sigaction(SIGABRT, &sa, NULL);
    sigaction(SIGILL, &sa, NULL);
    __sanitizer_set_death_callback(uzf_child_died);
    /*
     * What the device holds is measured as heap in use, not resident
     * memory: ASan keeps up to 256 MiB of freed memory in quarantine, and
     * how much of that a child adds to its resident set depends on the
     * state of the allocator it inherits from a long-lived parent (one
     * batch grew 68 MiB there and under 16 MiB replayed afresh).
     */
    uzf.held = __sanitizer_get_current_allocated_bytes();
    uzf.stall_it.it_value.tv_sec = uzf.stall_ms / 1000;
    uzf.stall_it.it_value.tv_usec = uzf.stall_ms % 1000 * 1000;

    while (read(uzf.cmd[0], &cmd, 1) == 1) {
        if (cmd == 'f') {
            /* The first part of libFuzzer's input: count afresh. */
            memset(uzf.cov, 0, uzf.cov_len);
        }
        uzf_run(s, uzf.io->data, uzf.io->size);
        setitimer(ITIMER_PROF, &off, NULL);
        held = __sanitizer_get_current_allocated_bytes();
        if (held > uzf.held + uzf.rss_limit_kb * 1024) {
            getrusage(RUSAGE_SELF, &ru);
            snprintf(why, sizeof(why), "memory: the heap holds %zu KiB, "
                     "%zu more than as this child started (resident %ld "
                     "KiB at most)", held / 1024, (held - uzf.held) / 1024,
                     ru.ru_maxrss);
            uzf_child_fail(why);
        }
        memcpy(uzf.cov_shm, uzf.cov, uzf.cov_len);
        if (write(uzf.done[1], &ok, 1) != 1) {
            break;
        }
    }
    _exit(0);
}

static void uzf_spawn(QTestState *s)
{
    g_assert(!pipe(uzf.cmd) && !pipe(uzf.done));
    uzf.child = fork();
    g_assert(uzf.child >= 0);
    if (!uzf.child) {
        uzf_child(s);
    }
    close(uzf.cmd[0]);
    close(uzf.done[1]);
}

/*
 * The child has run its share, or the batch must start afresh, or it
 * failed (killed if it still runs): how it ended, as waitpid says.
 */
static int uzf_reap(void)
{
    int status = 0;

    if (!uzf.child) {
        return 0;
    }
    close(uzf.cmd[1]);
    close(uzf.done[0]);
    while (waitpid(uzf.child, &status, 0) < 0) {
        g_assert(errno == EINTR);
    }
    uzf.child = 0;
    return status;
}

/* libFuzzer's -artifact_prefix=, from our command line (default ./). */
static char *uzf_artifact_prefix(void)
{
    g_autofree char *args = NULL;
    const char *p;
    gsize len;

    if (g_file_get_contents("/proc/self/cmdline", &args, &len, NULL)) {
        for (p = args; p < args + len; p += strlen(p) + 1) {
            if (g_str_has_prefix(p, "-artifact_prefix=")) {
                return g_strdup(p + strlen("-artifact_prefix="));
            }
        }
    }
    return g_strdup("./");
}

/* The child failed: save the batch it ran, and stop as libFuzzer does. */
static void G_NORETURN uzf_child_lost(const char *how)
{
    g_autofree char *prefix = uzf_artifact_prefix();
    g_autofree char *sum = g_compute_checksum_for_data(G_CHECKSUM_SHA1,
                                                       uzf.batch->data,
                                                       uzf.batch->len);
    g_autofree char *path = g_strdup_printf("%scrash-batch-%s", prefix, sum);

    if (uzf.child) {
        kill(uzf.child, SIGKILL);
        uzf_reap();
    }
    fprintf(stderr, "==%d== ERROR: uzura-datapath-fuzz: the child running "
            "%u input%s %s; they are saved, in order, in %s\n", getpid(),
            uzf.ran, uzf.ran == 1 ? "" : "s", how, path);
    if (!g_file_set_contents(path, (const char *)uzf.batch->data,
                             uzf.batch->len, NULL)) {
        fprintf(stderr, "uzura-datapath-fuzz: cannot write %s\n", path);
    }
    _exit(1);
}

/*
 * Hand one part of an input to the child (fresh: the input's first) and
 * wait for it: NULL when it ran, else how the child failed.
 */
static const char *uzf_child_do(QTestState *s, const uint8_t *data,
                                size_t size, bool fresh, int64_t hang_ms)
{
    struct pollfd pfd = { .events = POLLIN, .fd = uzf.done[0] };
    int64_t deadline;
    char c = fresh ? 'f' : 'c';
    int r, status;

    uzf.io->size = MIN(size, UZF_IO_MAX);
    memcpy(uzf.io->data, data, uzf.io->size);
    if (write(uzf.cmd[1], &c, 1) != 1) {
        return "was gone";
    }
    deadline = g_get_monotonic_time() / 1000 + hang_ms;
    do {
        r = poll(&pfd, 1, MAX(deadline - g_get_monotonic_time() / 1000, 0));
    } while (r < 0 && errno == EINTR);
    if (!r) {
        return "hung (no answer in time)";
    }
    if (read(uzf.done[0], &c, 1) == 1) {
        return NULL;
    }
    status = uzf_reap();
    return WIFEXITED(status) && WEXITSTATUS(status) == UZF_CHILD_STALLED ?
           "stalled" : "failed";
}

/*
 * A stall is CPU time, which a busy host can inflate: it counts when a
 * new child running the batch again stalls too (printing its stack this
 * time).  Whether it did; if not, that child, which has run the same
 * inputs, goes on in the place of the first.
 */
static bool uzf_stall_again(QTestState *s)
{
    UzfIn in = { uzf.batch->data + strlen(UZF_BATCH_MAGIC),
                 uzf.batch->len - strlen(UZF_BATCH_MAGIC) };
    const char *how = NULL;
    uint32_t len;

    uzf_spawn(s);
    uzf.io->stack = true;
    while (in.n && !how) {
        len = MIN(in32(&in), in.n);
        how = uzf_child_do(s, in.p, len, true, UZF_HANG_MS);
        in.p += len;
        in.n -= len;
    }
    uzf.io->stack = false;
    if (how && strcmp(how, "stalled")) {
        uzf_child_lost(how);
    }
    return how != NULL;
}

/* Run one part of an input in the child; fresh: the input's first. */
static void uzf_child_run(QTestState *s, const uint8_t *data, size_t size,
                          bool fresh)
{
    const char *how;
    uint32_t len;

    if (!uzf.child) {
        uzf_spawn(s);
        uzf.ran = 0;
        g_byte_array_set_size(uzf.batch, 0);
        g_byte_array_append(uzf.batch, (const guint8 *)UZF_BATCH_MAGIC,
                            strlen(UZF_BATCH_MAGIC));
    }
    len = cpu_to_le32(MIN(size, UZF_IO_MAX));
    g_byte_array_append(uzf.batch, (const guint8 *)&len, sizeof(len));
    g_byte_array_append(uzf.batch, data, MIN(size, UZF_IO_MAX));
    uzf.ran++;
    how = uzf_child_do(s, data, size, fresh, UZF_HANG_MS);
    if (how && !strcmp(how, "stalled")) {
        if (uzf_stall_again(s)) {
            uzf_child_lost("stalled, and stalled again in a new child");
        }
        fprintf(stderr, "uzura-datapath-fuzz: a stall that a new child "
                "running the same %u inputs did not repeat: the host, not "
                "the device; fuzzing goes on\n", uzf.ran);
        return;
    }
    if (how) {
        uzf_child_lost(how);
    }
}

static void uzf_fuzz(QTestState *s, const unsigned char *data, size_t size)
{
    size_t magic = strlen(UZF_BATCH_MAGIC);
    bool batch = size >= magic && !memcmp(data, UZF_BATCH_MAGIC, magic);
    UzfIn in = { data + magic, size - magic };
    bool fresh = true;
    uint32_t len;

    if (!uzf.fork || !size) {
        /* The empty input, which libFuzzer runs first, does nothing. */
        uzf_run(s, data, size);
        return;
    }
    if (!batch) {
        uzf_child_run(s, data, size, true);
    } else {
        /* A saved batch replays as it ran: in one new child. */
        uzf_reap();
        while (in.n) {
            len = MIN(in32(&in), in.n);
            uzf_child_run(s, in.p, len, fresh);
            in.p += len;
            in.n -= len;
            fresh = false;
        }
        if (fresh) {
            return;
        }
    }
    memcpy(uzf.cov, uzf.cov_shm, uzf.cov_len);
    if (batch || uzf.ran >= uzf.per_child) {
        uzf_reap();
    }
}

static long uzf_env(const char *name, long dflt)
{
    const char *v = getenv(name);
    long val;

    return v && !qemu_strtol(v, NULL, 0, &val) ? val : dflt;
}

static void uzf_pre_fuzz(QTestState *s)
{
    int64_t t0 = g_get_monotonic_time();
    sigset_t alrm;

    uz_poll_hook = uzf_poll;
    /*
     * libFuzzer counts the prologue as part of the first input: its
     * timeout (SIGALRM, whole seconds) must not end it.  Another thread
     * takes the signal meanwhile, and libFuzzer ignores it there.
     */
    sigemptyset(&alrm);
    sigaddset(&alrm, SIGALRM);
    pthread_sigmask(SIG_BLOCK, &alrm, NULL);

    uzf.fork = uzf_env("UZURA_FUZZ_FORK", 1);
    uzf.per_child = MAX(uzf_env("UZURA_FUZZ_PER_CHILD", 1), 1);
    uzf.stall_ms = uzf_env("UZURA_FUZZ_STALL_MS", 50);
    uzf.rss_limit_kb = uzf_env("UZURA_FUZZ_RSS_MB", 64) * 1024;
    uzf.wire = qemu_new_net_client(&uzf_wire_info, qemu_find_netdev("wire"),
                                   "uzura-fuzz", "wire-end");
    uzf_prologue(s);
    if (__start___sancov_cntrs && __stop___sancov_cntrs) {
        uzf.cov = __start___sancov_cntrs;
        uzf.cov_len = __stop___sancov_cntrs - __start___sancov_cntrs;
    }
    uzf.cov_shm = mmap(NULL, MAX(uzf.cov_len, 1), PROT_READ | PROT_WRITE,
                       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    g_assert(uzf.cov_shm != MAP_FAILED);
    uzf.io = mmap(NULL, sizeof(*uzf.io), PROT_READ | PROT_WRITE,
                  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    g_assert(uzf.io != MAP_FAILED);
    uzf.batch = g_byte_array_new();
    /* A child gone makes our write to it fail, not kill us. */
    signal(SIGPIPE, SIG_IGN);
    pthread_sigmask(SIG_UNBLOCK, &alrm, NULL);
    fprintf(stderr, "uzura-datapath-fuzz: prologue in %" PRId64 " ms, "
            "resident %ld MiB, %zu counters, %s\n",
            (g_get_monotonic_time() - t0) / 1000, uzf_rss_kb() / 1024,
            uzf.cov_len, uzf.fork ? "inputs run in children" : "no fork");
}

/*
 * Before QEMU allocates guest RAM: no transparent huge pages in this
 * process, whose children write a few bytes here and there in it, each
 * write a copy of the page it falls in.
 */
static void uzf_pre_vm_init(void)
{
    prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0);
}

static GString *uzf_cmdline(bool model)
{
    GString *cmd = g_string_new(TARGET_NAME);
    int i;

    uzf.model = model;
    g_string_append(cmd, " -machine q35,accel=qtest -nodefaults "
                    "-display none -m 256M "
                    "-netdev hubport,id=wire,hubid=0 ");
    if (model) {
        g_string_append(cmd, "-global uzura.model=on ");
    }
    for (i = 0; i < 2; i++) {
        g_string_append_printf(cmd,
                               "-netdev hubport,id=n%d,hubid=0 "
                               "-device uzura,netdev=n%d,id=uz%d,"
                               "mac=52:54:00:12:34:5%d,addr=%02x.0 ",
                               i, i, i, i, UZ_SLOT(i));
    }
    /* More of QEMU's options, for a look inside: -trace uzura_roce*, ... */
    g_string_append(cmd, getenv("UZURA_FUZZ_ARGS") ?: "");
    return cmd;
}

static GString *uzf_cmdline_sr(FuzzTarget *t)
{
    return uzf_cmdline(false);
}

static GString *uzf_cmdline_model(FuzzTarget *t)
{
    return uzf_cmdline(true);
}

static void register_uzura_datapath_fuzz_targets(void)
{
    fuzz_add_target(&(FuzzTarget){
        .name = "uzura-datapath-fuzz",
        .description = "Fuzz the uzura NIC's data path (recovery=sr, fault "
                       "rules): WQEs, frames from the wire, the clock",
        .get_init_cmdline = uzf_cmdline_sr,
        .pre_vm_init = uzf_pre_vm_init,
        .pre_fuzz = uzf_pre_fuzz,
        .fuzz = uzf_fuzz,
    });
    fuzz_add_target(&(FuzzTarget){
        .name = "uzura-datapath-model-fuzz",
        .description = "Fuzz the uzura NIC's data path with the timing "
                       "model on (model=on)",
        .get_init_cmdline = uzf_cmdline_model,
        .pre_vm_init = uzf_pre_vm_init,
        .pre_fuzz = uzf_pre_fuzz,
        .fuzz = uzf_fuzz,
    });
}

fuzz_target_init(register_uzura_datapath_fuzz_targets);
