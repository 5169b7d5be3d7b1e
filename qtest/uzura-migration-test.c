/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * QTest for the uzura NIC's migration (docs/device-spec.md 7.4): a NIC
 * with objects of every kind moves to a new process and goes on; two
 * NICs move with RC traffic in flight between them, and nothing is lost
 * or doubled; what does not migrate yet refuses by name; a corrupt
 * stream fails the incoming side cleanly and leaves its NIC reset.
 */
#include "uzura-pair.h"
#include "uzura-migrate.h"

#define ACCESS  (UZ_ACCESS_LOCAL_WRITE | UZ_ACCESS_REMOTE_WRITE | \
                 UZ_ACCESS_REMOTE_READ)

typedef struct Objs {
    UzCq *cq, *paged;
    UzSrq *srq;
    UzMr *ma, *mb;
    UzQp *qa, *qb, *ud;
    uint32_t ahn;
    uint32_t mw;                /* a type 1 window */
    uint32_t xrcd;
    uint32_t dm, dm_bar;        /* device memory: handle, offset in BAR 4 */
} Objs;

static uint8_t obj_cmd(UzNode *n, uint8_t op, uint32_t handle)
{
    struct uz_cmd_obj c = {
        .handle = cpu_to_le32(handle), .uctx = cpu_to_le32(n->uctx),
    };

    return uz_cmd(n, op, &c, sizeof(c), NULL);
}

/* An allocation command's handle (out0) and its out1. */
static uint32_t alloc_cmd(UzNode *n, uint8_t op, const void *c, size_t len,
                          uint32_t *out1)
{
    struct uz_admin_cqe cqe;

    g_assert_cmpint(uz_cmd(n, op, c, len, &cqe), ==, UZ_CMD_OK);
    if (out1) {
        *out1 = le32_to_cpu(cqe.out1);
    }
    return le32_to_cpu(cqe.out0);
}

/* One of each kind, the RC pair in INIT, the UD QP (on the SRQ) in RESET. */
static void objs_create(UzNode *n, Objs *o)
{
    o->cq = uz_cq_create(n, 6);
    o->paged = uz_cq_create_paged(n, 9);
    o->srq = uz_srq_create(n, 5, 0);
    o->ma = uz_mr_reg(n, 3 * 4096, ACCESS);
    o->mb = uz_mr_reg(n, 3 * 4096, ACCESS);
    o->qa = uz_qp_create(n, UZ_QPT_RC, o->cq, o->paged, NULL, 0);
    o->qb = uz_qp_create(n, UZ_QPT_RC, NULL, NULL, NULL, 0);
    o->ud = uz_qp_create(n, UZ_QPT_UD, o->cq, o->cq, o->srq, 0);
    o->ahn = uz_ah_create(n, 0);
    uz_rc_init(o->qa);
    uz_rc_init(o->qb);
    {
        struct uz_cmd_alloc_mw mw = {
            .pdn = cpu_to_le32(n->pdn), .type = UZ_MW_TYPE_1,
            .key = n->next_key++,
        };
        struct uz_cmd_alloc_dm dm = { .length = cpu_to_le64(8192) };
        struct uz_cmd_obj xrcd = { 0 };

        o->mw = alloc_cmd(n, UZ_CMD_ALLOC_MW, &mw, sizeof(mw), NULL);
        o->xrcd = alloc_cmd(n, UZ_CMD_ALLOC_XRCD, &xrcd, sizeof(xrcd), NULL);
        o->dm = alloc_cmd(n, UZ_CMD_ALLOC_DM, &dm, sizeof(dm), &o->dm_bar);
    }
}

/* QUERY_QP's answer, without what it computes at the time. */
static void query(UzQp *qp, struct uz_qp_attr *a)
{
    uz_qp_query(qp, a);
    a->sq_draining = 0;
}

static void test_objects_move(void)
{
    static const UzRcOpts ro = UZ_RC_OPTS_DEFAULT;
    UzMachine m;
    UzNode n;
    Objs o;
    struct uz_qp_attr before, after;
    UzDev *devs[] = { &n.d };
    uint64_t cmds, cqes;
    uint32_t pdn;
    uint8_t dm[8192], got[8192];

    uz_machine_start(&m, 1, NULL);
    uz_node_start(&n, &m, 0);
    objs_create(&n, &o);
    uz_pattern(dm, sizeof(dm), 0xd1);
    qpci_memwrite(n.d.pdev, n.d.db, o.dm_bar, dm, sizeof(dm));
    query(o.qa, &before);
    cmds = uz_counter(&m, 0, "admin_cmds");

    uz_migrate(&m, devs, 1);

    /* Device memory is RAM of its own: its bytes moved. */
    memset(got, 0, sizeof(got));
    qpci_memread(n.d.pdev, n.d.db, o.dm_bar, got, sizeof(got));
    uz_assert_bytes(got, dm, sizeof(dm), "device memory");

    /* The counters came along, and the QP answers as before. */
    g_assert_cmpuint(uz_counter(&m, 0, "admin_cmds"), ==, cmds);
    query(o.qa, &after);
    g_assert_cmpmem(&before, sizeof(before), &after, sizeof(after));
    g_assert_cmpuint(after.state, ==, UZ_QPS_INIT);

    /* The tables did: a new PD takes a slot the moved ones do not hold. */
    pdn = uz_pd_alloc(&n);
    g_assert_cmpuint(pdn, !=, n.pdn);

    /*
     * Every queue works on the new side: the pair connects and moves
     * data through both MRs, its CQs (one paged) and the EQs; the SRQ
     * takes a receive WQE.
     */
    cqes = uz_counter(&m, 0, "cqes");
    uz_rc_rtr(o.qa, o.qb, ro.psn[1], &ro);
    uz_rc_rtr(o.qb, o.qa, ro.psn[0], &ro);
    uz_rc_rts(o.qa, ro.psn[0], &ro);
    uz_rc_rts(o.qb, ro.psn[1], &ro);
    uz_check_write(o.qa, o.qb, o.ma, o.mb, 5000, true, 1);
    uz_check_write(o.qb, o.qa, o.mb, o.ma, 100, false, 2);
    g_assert_cmpuint(uz_counter(&m, 0, "cqes"), >=, cqes + 3);
    {
        UzSge s = uz_mr_sge(o.ma, 0, 64);

        uz_srq_post(o.srq, 0x5a, &s, 1);
    }

    /*
     * What moved goes as it would have where it was: each object is
     * found, and the counts of its users came along (the SRQ goes only
     * after its QP).
     */
    g_assert_cmpint(obj_cmd(&n, UZ_CMD_DESTROY_SRQ, o.srq->srqn), ==,
                    UZ_CMD_BUSY);
    g_assert_cmpint(obj_cmd(&n, UZ_CMD_DESTROY_QP, o.ud->qpn), ==, UZ_CMD_OK);
    g_assert_cmpint(obj_cmd(&n, UZ_CMD_DESTROY_SRQ, o.srq->srqn), ==,
                    UZ_CMD_OK);
    g_assert_cmpint(obj_cmd(&n, UZ_CMD_DEALLOC_MW, o.mw), ==, UZ_CMD_OK);
    g_assert_cmpint(obj_cmd(&n, UZ_CMD_DEALLOC_DM, o.dm), ==, UZ_CMD_OK);
    g_assert_cmpint(obj_cmd(&n, UZ_CMD_DEALLOC_XRCD, o.xrcd), ==, UZ_CMD_OK);
    g_assert_cmpint(obj_cmd(&n, UZ_CMD_DESTROY_AH, o.ahn), ==, UZ_CMD_OK);
    uz_node_stop(&n);
    uz_machine_stop(&m);
}

/*
 * Messages of a pair, from uz0's MR to uz1's: SENDs into receive WQEs
 * at @first.., each of LEN bytes of its own pattern.
 */
#define NMSG    8
#define LEN     3000            /* three packets at MTU 1024 */

static void post_sends(Pair *p, int first, int n)
{
    int i;

    for (i = first; i < first + n; i++) {
        uint8_t data[LEN];
        UzSge s = uz_mr_sge(p->ma, (i % NMSG) * 4096, LEN);
        UzSge r = uz_mr_sge(p->mb, (i % NMSG) * 4096, 4096);
        UzWr wr = {
            .wr_id = 0x5e00 + i, .opcode = UZ_WR_SEND,
            .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1,
        };

        uz_pattern(data, LEN, 0x100 + i);
        uz_mr_write(p->ma, (i % NMSG) * 4096, data, LEN);
        uz_post_recv(p->qb, 0x7e00 + i, &r, 1);
        uz_post_send(p->qa, &wr);
    }
}

/* Each SEND completed once, in order, on both sides, with its bytes. */
static void check_sends(Pair *p, int first, int n)
{
    struct uz_cqe c;
    int i;

    for (i = first; i < first + n; i++) {
        uint8_t data[LEN];

        uz_cq_wait_clock(p->qa->scq, &c, STEP_NS, 100);
        uz_cqe_expect(&c, 0x5e00 + i, UZ_WC_SEND, UZ_WC_STATUS_SUCCESS, 0,
                      p->qa->qpn);
        uz_cq_wait_clock(p->qb->rcq, &c, STEP_NS, 100);
        uz_cqe_expect(&c, 0x7e00 + i, UZ_WC_RECV, UZ_WC_STATUS_SUCCESS, 0,
                      p->qb->qpn);
        g_assert_cmpuint(c.byte_len, ==, LEN);
        uz_pattern(data, LEN, 0x100 + i);
        uz_assert_mr(p->mb, (i % NMSG) * 4096, data, LEN, "received");
    }
    uz_cq_assert_empty(p->qa->scq, 100);
    uz_cq_assert_empty(p->qb->rcq, 100);
}

/*
 * Two NICs move together with RC traffic in flight: first with their
 * peer's link down, so that uz0 holds SENDs, a WRITE and a READ sent and
 * not acknowledged, then with SENDs just posted, wherever the devices
 * are with them.  On the new side every message completes once, with
 * its bytes, and the QPs stay in RTS.
 */
static void test_traffic_in_flight(void)
{
    Pair p;
    UzDev *devs[2];
    uint8_t wdata[5000], rdata[4000];
    struct uz_cqe c;
    UzSge ws, rs;
    UzWr write, read;
    int i;

    pair_start(&p);
    devs[0] = &p.n[0].d;
    devs[1] = &p.n[1].d;
    post_sends(&p, 0, NMSG / 2);
    check_sends(&p, 0, NMSG / 2);

    uz_link_set(&p.m, 1, false);
    post_sends(&p, NMSG / 2, NMSG / 2);
    uz_pattern(wdata, sizeof(wdata), 0x77);
    uz_mr_write(p.ma, 32768, wdata, sizeof(wdata));
    ws = uz_mr_sge(p.ma, 32768, sizeof(wdata));
    write = (UzWr) {
        .wr_id = 0x3300, .opcode = UZ_WR_RDMA_WRITE,
        .flags = UZ_WQE_F_SIGNALED, .sge = &ws, .num_sge = 1,
        .remote_addr = uz_mr_va(p.mb, 32768), .rkey = p.mb->key,
    };
    uz_post_send(p.qa, &write);
    uz_pattern(rdata, sizeof(rdata), 0x88);
    uz_mr_write(p.mb, 40960, rdata, sizeof(rdata));
    uz_mr_fill(p.ma, 40960, 0, sizeof(rdata));
    rs = uz_mr_sge(p.ma, 40960, sizeof(rdata));
    read = (UzWr) {
        .wr_id = 0x3400, .opcode = UZ_WR_RDMA_READ,
        .flags = UZ_WQE_F_SIGNALED, .sge = &rs, .num_sge = 1,
        .remote_addr = uz_mr_va(p.mb, 40960), .rkey = p.mb->key,
    };
    uz_post_send(p.qa, &read);
    for (i = 0; i < 100; i++) {
        uz_poll_pause(&p.n[0].d);
    }
    g_assert_cmpuint(uz_counter(&p.m, 0, "retransmits"), ==, 0);

    /* The new process starts with the link property up. */
    uz_migrate(&p.m, devs, 2);
    for (i = NMSG / 2; i < NMSG; i++) {
        uz_cq_wait_clock(p.qa->scq, &c, STEP_NS, 100);
        uz_cqe_expect(&c, 0x5e00 + i, UZ_WC_SEND, UZ_WC_STATUS_SUCCESS, 0,
                      p.qa->qpn);
    }
    uz_cq_wait_clock(p.qa->scq, &c, STEP_NS, 100);
    uz_cqe_expect(&c, 0x3300, UZ_WC_RDMA_WRITE, UZ_WC_STATUS_SUCCESS, 0,
                  p.qa->qpn);
    uz_cq_wait_clock(p.qa->scq, &c, STEP_NS, 100);
    uz_cqe_expect(&c, 0x3400, UZ_WC_RDMA_READ, UZ_WC_STATUS_SUCCESS, 0,
                  p.qa->qpn);
    g_assert_cmpuint(c.byte_len, ==, sizeof(rdata));
    for (i = NMSG / 2; i < NMSG; i++) {
        uint8_t data[LEN];

        uz_cq_wait_clock(p.qb->rcq, &c, STEP_NS, 100);
        uz_cqe_expect(&c, 0x7e00 + i, UZ_WC_RECV, UZ_WC_STATUS_SUCCESS, 0,
                      p.qb->qpn);
        uz_pattern(data, LEN, 0x100 + i);
        uz_assert_mr(p.mb, (i % NMSG) * 4096, data, LEN, "received");
    }
    uz_cq_assert_empty(p.qb->rcq, 100);
    uz_assert_mr(p.mb, 32768, wdata, sizeof(wdata), "written");
    uz_assert_mr(p.ma, 40960, rdata, sizeof(rdata), "read");
    /* The new side sent again what the old one's peer never took. */
    g_assert_cmpuint(uz_counter(&p.m, 0, "retransmits"), >, 0);

    /* Again, with the devices wherever the SENDs just posted left them. */
    post_sends(&p, NMSG, NMSG);
    uz_migrate(&p.m, devs, 2);
    check_sends(&p, NMSG, NMSG);
    g_assert_cmpuint(uz_qp_state(p.qa), ==, UZ_QPS_RTS);
    g_assert_cmpuint(uz_qp_state(p.qb), ==, UZ_QPS_RTS);
    pair_stop(&p);
}

/*
 * A QP's rate limiter (DCQCN's reaction point, spec 9.1.2) moves with
 * it.  uz0's first CNP sets its rate to 100 Mb/s and cuts it to 50.05
 * Mb/s, at which a packet of 1024 bytes and 58 of headers takes 173 us,
 * and neither the timer nor the byte counter raises it during the test.
 * After the move an 8 KiB WRITE (8 packets at MTU 1024) does not
 * complete while the virtual clock stands, and does once the clock has
 * run a packet's time for each.  A limiter lost on the way would let
 * the WRITE go whole at once, and complete without the clock.
 */
#define RP_ARGS "-global uzura.rate_to_set_on_first_cnp=100 " \
                "-global uzura.rpg_time_reset=1000000 " \
                "-global uzura.rpg_byte_reset=1073741824"

static void test_rate_limiter(void)
{
    Pair p;
    UzDev *devs[2];
    uint8_t data[8192];
    struct uz_cqe c;
    UzSge s;
    UzWr wr;
    int k;

    memset(&p, 0, sizeof(p));
    uz_machine_start(&p.m, 2, RP_ARGS);
    pair_init(&p);
    devs[0] = &p.n[0].d;
    devs[1] = &p.n[1].d;
    /* One of uz0's requests arrives marked CE: uz1 answers with a CNP. */
    rules_set(&p, 0, "kind=request count=1 ce");
    pair_write(&p, p.mb->key, uz_mr_va(p.mb, 0), 64, 1, UZ_WC_STATUS_SUCCESS);
    uz_counter_wait(&p.n[0], "rp_cnp_handled", 1);

    uz_migrate(&p.m, devs, 2);
    /* The links come up as the new side's clock runs; a packet goes. */
    pair_write(&p, p.mb->key, uz_mr_va(p.mb, 0), 64, 2, UZ_WC_STATUS_SUCCESS);
    qtest_clock_step(qts(&p), MS);

    uz_pattern(data, sizeof(data), 0x8b);
    uz_mr_write(p.ma, 8192, data, sizeof(data));
    s = uz_mr_sge(p.ma, 8192, sizeof(data));
    wr = (UzWr) {
        .wr_id = 0x8b, .opcode = UZ_WR_RDMA_WRITE,
        .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1,
        .remote_addr = uz_mr_va(p.mb, 8192), .rkey = p.mb->key,
    };
    uz_post_send(p.qa, &wr);
    uz_cq_assert_empty(p.qa->scq, 50);
    for (k = 0; k < 8; k++) {
        qtest_clock_step(qts(&p), 200 * 1000);
    }
    uz_cq_wait(p.qa->scq, &c);
    uz_cqe_expect(&c, 0x8b, UZ_WC_RDMA_WRITE, UZ_WC_STATUS_SUCCESS, 0,
                  p.qa->qpn);
    uz_assert_mr(p.mb, 8192, data, sizeof(data), "the paced WRITE");
    g_assert_cmpuint(uz_counter(&p.m, 0, "rp_cnp_handled"), ==, 1);
    pair_stop(&p);
}

/* What does not migrate yet refuses by name, and runs on where it is. */
static void test_refused(void)
{
    Pair p;
    g_autofree char *err = NULL;

    pair_start(&p);
    pair_set_uint(&p, 0, "fault-flap-down-us", 5000000, true);
    err = uz_migrate_refused(&p.m);
    g_assert_nonnull(strstr(err, "uzura: a link flap is in progress"));
    pair_set_uint(&p, 0, "fault-flap-down-us", 0, true);
    exchange(&p, UZ_WR_RDMA_WRITE, 3000);
    pair_stop(&p);
}

static QDict *fault_get(Pair *p, const char *prop)
{
    return qtest_qmp(qts(p), "{'execute': 'qom-get', 'arguments': "
                     "{'path': '/machine/peripheral/uz0', 'property': %s}}",
                     prop);
}

/*
 * Fault injection moves with its settings, its rules and their counts,
 * and goes on acting on the new side.
 */
#define FAULT_RULES "op=write-only nth=2 count=1 dup=1\n" \
                    "dir=rx kind=ack nth=1000000 drop\n"

static void test_fault_moves(void)
{
    Pair p;
    UzDev *devs[2];
    g_autofree char *before = NULL;
    g_autofree char *after = NULL;
    QDict *rsp;

    pair_start(&p);
    devs[0] = &p.n[0].d;
    devs[1] = &p.n[1].d;
    rules_set(&p, 0, FAULT_RULES);
    pair_set_uint(&p, 0, "fault-seed", 42, true);
    pair_set_uint(&p, 0, "fault-delay-us", 20, true);
    rsp = qtest_qmp(qts(&p), "{'execute': 'qom-set', 'arguments': "
                    "{'path': '/machine/peripheral/uz0', "
                    "'property': 'fault-dup', 'value': 0.25}}");
    g_assert(qdict_haskey(rsp, "return"));
    qobject_unref(rsp);
    exchange(&p, UZ_WR_RDMA_WRITE, 512);
    exchange(&p, UZ_WR_RDMA_WRITE, 512);
    g_assert_cmpuint(rule_acted(&p, 0, 1), ==, 1);
    before = rules_get(&p, 0);

    uz_migrate(&p.m, devs, 2);
    after = rules_get(&p, 0);
    g_assert_cmpstr(after, ==, before);
    rsp = fault_get(&p, "fault-dup");
    g_assert_cmpfloat(qdict_get_double(rsp, "return"), ==, 0.25);
    qobject_unref(rsp);
    rsp = fault_get(&p, "fault-seed");
    g_assert_cmpint(qdict_get_int(rsp, "return"), ==, 42);
    qobject_unref(rsp);
    rsp = fault_get(&p, "fault-delay-us");
    g_assert_cmpint(qdict_get_int(rsp, "return"), ==, 20);
    qobject_unref(rsp);

    /* The rules go on counting where they were. */
    exchange(&p, UZ_WR_RDMA_WRITE, 512);
    g_assert_cmpuint(rule_acted(&p, 0, 1), ==, 1);
    exchange(&p, UZ_WR_SEND, 3000);
    rules_set(&p, 0, "");
    pair_stop(&p);
}

/*
 * Where the uzura core's section starts in a saved state: the sizes the
 * stream names first (db-pages 64, vectors 8 and the default limits),
 * then max_dm.  Returns the offset just after them.
 */
static size_t core_start(const uint8_t *buf, size_t len)
{
    static const uint32_t sizes[] = { 64, 8, 1024, 1024, 256, 1024, 4096,
                                      1024 };
    uint8_t pat[sizeof(sizes)];
    size_t i;

    for (i = 0; i < ARRAY_SIZE(sizes); i++) {
        stl_be_p(pat + 4 * i, sizes[i]);
    }
    for (i = 0; i + sizeof(pat) + 4 <= len; i++) {
        if (!memcmp(buf + i, pat, sizeof(pat))) {
            return i + sizeof(pat) + 4;
        }
    }
    g_assert_not_reached();
}

/* Offsets from core_start(), as vmstate_uzura_core lays them out. */
#define OFF_ADMIN           30                  /* after mac .. err_addr */
#define OFF_ADMIN_DEPTH     (OFF_ADMIN + 16)
#define OFF_EQ0             (OFF_ADMIN + 39)
#define OFF_EQ0_VECTOR      (OFF_EQ0 + 16)

typedef struct Corruption {
    const char *what;
    long off;                   /* from core_start(); < 0: before it */
    uint8_t byte;
    size_t len;
    const char *error;          /* the reason traced, or NULL: none */
} Corruption;

static const Corruption corruptions[] = {
    /* QEMU's own check of a size both sides must agree on */
    { "max-mr", -12, 0x7f, 1, NULL },
    { "admin depth", OFF_ADMIN_DEPTH + 3, 0x7f, 1,
      "admin queue of depth 2^127" },
    { "EQ vector", OFF_EQ0_VECTOR, 0xff, 2, "vector 65535" },
    { "everything after the admin queue", OFF_EQ0, 0xff, 4096,
      "EQ 0: depth 2^4294967295" },
};

/* From the fault subsection's first field: 4 probabilities, delay... */
static const Corruption fault_corruptions[] = {
    { "fault-drop NaN", 0, 0xff, 8, "fault injection: a probability of" },
    { "rules' length", 4 * 8 + 4 + 8 + 8 + 4 + 4, 0xff, 4,
      "rules of 4294967295 bytes" },
};

/* A rule that never acts, in the stream test_corrupt_stream spoils. */
#define FAULT_RULE_JSON "'dir=rx kind=ack nth=1000000 drop'"

static void test_corrupt_stream(void)
{
    g_autofree char *dir = g_dir_make_tmp("uzura-migration-XXXXXX", NULL);
    g_autofree char *path = g_strdup_printf("%s/state", dir);
    g_autofree char *bad = g_strdup_printf("%s/bad", dir);
    g_autofree uint8_t *buf = NULL;
    UzMachine m;
    UzNode n;
    Objs o;
    QOSState *to;
    size_t len, start;
    char *err;
    int i;

    uz_machine_start(&m, 1, "-trace uzura_migration_err_stream");
    uz_node_start(&n, &m, 0);
    objs_create(&n, &o);
    qtest_qmp_assert_success(m.qs->qts, "{'execute': 'qom-set', "
                             "'arguments': {'path': '/machine/peripheral/uz0',"
                             " 'property': 'fault-rules', "
                             "'value': " FAULT_RULE_JSON "}}");
    uz_save(&m, path);
    g_assert(g_file_get_contents(path, (char **)&buf, &len, NULL));
    start = core_start(buf, len);

    /* The stream as saved loads. */
    err = uz_load(&m, path, &to);
    g_assert_null(err);
    qtest_shutdown(to);

    for (i = 0; i < ARRAY_SIZE(corruptions); i++) {
        const Corruption *c = &corruptions[i];
        g_autofree uint8_t *copy = g_memdup2(buf, len);
        size_t at = start + c->off;

        g_assert_cmpuint(at + c->len, <=, len);
        memset(copy + at, c->byte, c->len);
        g_assert(g_file_set_contents(bad, (char *)copy, len, NULL));
        err = uz_load(&m, bad, &to);
        g_test_message("%s: %s", c->what, err ? err : "(loaded)");
        g_assert_nonnull(err);
        g_free(err);
        if (c->error) {
            g_autofree char *log = uz_machine_log(&m);

            g_assert_nonnull(strstr(log, c->error));
        }
        /* The incoming side failed cleanly: it is up and answers. */
        qtest_qmp_assert_success(to->qts, "{'execute': 'query-status'}");
        qtest_shutdown(to);
    }
    /* A fault rule the incoming side's parser refuses. */
    {
        g_autofree uint8_t *copy = g_memdup2(buf, len);
        uint8_t *at = memmem(copy, len, "nth=1000000", 11);
        g_autofree char *log = NULL;

        g_assert_nonnull(at);
        at[5] = 'x';
        g_assert(g_file_set_contents(bad, (char *)copy, len, NULL));
        err = uz_load(&m, bad, &to);
        g_assert_nonnull(err);
        g_free(err);
        log = uz_machine_log(&m);
        g_assert_nonnull(strstr(log, "fault injection: rules:"));
        qtest_qmp_assert_success(to->qts, "{'execute': 'query-status'}");
        qtest_shutdown(to);
    }
    /*
     * The fault subsection's own fields, after its name and version: a
     * probability made NaN, and the rules' length past its bound.
     */
    for (i = 0; i < ARRAY_SIZE(fault_corruptions); i++) {
        const Corruption *c = &fault_corruptions[i];
        g_autofree uint8_t *copy = g_memdup2(buf, len);
        uint8_t *sub = memmem(copy, len, "uzura/core/fault", 16);
        g_autofree char *log = NULL;

        g_assert_nonnull(sub);
        memset(sub + 16 + 4 + c->off, c->byte, c->len);
        g_assert(g_file_set_contents(bad, (char *)copy, len, NULL));
        err = uz_load(&m, bad, &to);
        g_test_message("%s: %s", c->what, err ? err : "(loaded)");
        g_assert_nonnull(err);
        g_free(err);
        log = uz_machine_log(&m);
        g_assert_nonnull(strstr(log, c->error));
        qtest_qmp_assert_success(to->qts, "{'execute': 'query-status'}");
        qtest_shutdown(to);
    }
    unlink(bad);
    unlink(path);
    rmdir(dir);
    uz_node_stop(&n);
    uz_machine_stop(&m);
}

/*
 * What the subsections of TM, CRW and steering carry: a TM SRQ of
 * MIG_TAGS entries with entry 0 posted, a parked CRW in qa's tag table
 * (entry 0), and an RSS QP over a raw QP with flow rule 0.
 */
#define MIG_TAGS        4
#define TM_ENTRY_LEN    50          /* vmstate_uzura_tm_entry */
#define TM_LEN          (8 + MIG_TAGS * TM_ENTRY_LEN + 40)
#define CRW_WR_OFF      15          /* vmstate_uzura_crw: state .. sq_idx */
#define WR_SGL_NUM_OFF  47          /* vmstate_uzura_send_wr: h */
#define CRW_ENTRY_LEN   994         /* vmstate_uzura_crw */
#define FLOW_LEN        137         /* vmstate_uzura_flow */
#define FLOW_IP_VER_OFF (9 + 32)    /* valid, qpn, uctx; in the spec */
#define RSS_QPN_OFF     52          /* QP, size, key, fields */

static void steering_create(UzNode *n, Objs *o)
{
    UzQp *raw = uz_qp_create(n, UZ_QPT_RAW, o->cq, o->cq, NULL,
                             UZ_QPF_NO_SQ);
    struct uz_rss_conf conf = {
        .fields = cpu_to_le32(UZ_RSS_F_SRC_IPV4), .log_size = 0,
        .func = UZ_RSS_TOEPLITZ, .qpn = { cpu_to_le32(raw->qpn) },
    };
    struct uz_cmd_create_qp c = {
        .uctx = cpu_to_le32(n->uctx), .pdn = cpu_to_le32(n->pdn),
        .srqn = cpu_to_le32(UZ_NO_SRQ), .type = UZ_QPT_RSS,
    };
    struct uz_flow_spec spec = { .ethertype = cpu_to_be16(0x0800),
                                 .ethertype_mask = 0xffff };
    struct uz_cmd_create_flow fc = { .uctx = cpu_to_le32(n->uctx) };
    uint64_t at = uz_alloc(&n->d, sizeof(conf));

    qtest_memwrite(n->d.qts, at, &conf, sizeof(conf));
    c.sq_addr = cpu_to_le64(at);
    fc.qpn = cpu_to_le32(alloc_cmd(n, UZ_CMD_CREATE_QP, &c, sizeof(c),
                                   NULL));
    at = uz_alloc(&n->d, sizeof(spec));
    qtest_memwrite(n->d.qts, at, &spec, sizeof(spec));
    fc.spec_addr = cpu_to_le64(at);
    g_assert_cmpuint(alloc_cmd(n, UZ_CMD_CREATE_FLOW, &fc, sizeof(fc), NULL),
                     ==, 0);
}

static void tm_crw_create(UzNode *n, Objs *o)
{
    static const UzRcOpts ro = UZ_RC_OPTS_DEFAULT;
    struct uz_cmd_create_srq c = {
        .uctx = cpu_to_le32(n->uctx), .pdn = cpu_to_le32(n->pdn),
        .log_depth = 4, .log_wqe_size = UZ_RQ_LOG_WQE, .flags = UZ_SRQF_TM,
        .cqn = cpu_to_le32(o->cq->cqn), .max_tags = cpu_to_le16(MIG_TAGS),
        .ops_log_depth = 2,
    };
    UzSge s = uz_mr_sge(o->ma, 0, 256);
    struct uz_tm_op op = {
        .wr_id = cpu_to_le64(0xadd), .recv_wr_id = cpu_to_le64(0x7a0),
        .tag = cpu_to_le64(0x1234), .mask = cpu_to_le64(UINT64_MAX),
        .opcode = UZ_TM_OP_ADD, .flags = UZ_TM_OP_F_SIGNALED, .num_sge = 1,
        .addr = cpu_to_le64(s.addr), .length = cpu_to_le32(s.length),
        .lkey = cpu_to_le32(s.lkey),
    };
    UzWr crw = {
        .wr_id = 0xc2a, .opcode = UZ_WR_CRW, .flags = UZ_WQE_F_SIGNALED,
        .sge = &s, .num_sge = 1, .tag = 0x5678,
    };
    struct uz_admin_cqe cqe;
    struct uz_cqe done;
    uint64_t ops = uz_alloc(&n->d, sizeof(op) << 2);

    c.ring_addr = cpu_to_le64(uz_alloc(&n->d, UZ_RQ_WQE_SIZE << 4));
    c.ops_addr = cpu_to_le64(ops);
    g_assert_cmpint(uz_cmd(n, UZ_CMD_CREATE_SRQ, &c, sizeof(c), &cqe), ==,
                    UZ_CMD_OK);
    qtest_memwrite(n->m->qs->qts, ops, &op, sizeof(op));
    uz_ring(&n->d, le32_to_cpu(cqe.out2), 1);
    uz_cq_wait(o->cq, &done);
    g_assert_cmphex(done.wr_id, ==, 0xadd);
    g_assert_cmpint(done.status, ==, UZ_WC_STATUS_SUCCESS);

    uz_rc_rtr(o->qa, o->qb, ro.psn[1], &ro);
    uz_rc_rtr(o->qb, o->qa, ro.psn[0], &ro);
    uz_rc_rts(o->qa, ro.psn[0], &ro);
    uz_rc_rts(o->qb, ro.psn[1], &ro);
    uz_post_send(o->qa, &crw);
    uz_counter_wait(n, "crw_parked", 1);
}

/* From a subsection's first field. */
typedef struct SubCorruption {
    const char *sub;
    Corruption c;
} SubCorruption;

static const SubCorruption sub_corruptions[] = {
    { "uzura/core/tm", { "tag list size", 4, 0xff, 4,
                         "a tag list of 4294967295 entries" } },
    { "uzura/core/tm", { "tag list entry state", 8, 0x7f, 1,
                         "tag list entry 0 in state 127" } },
    { "uzura/core/tm", { "list operations' depth",
                         8 + MIG_TAGS * TM_ENTRY_LEN + 8, 0x7f, 4,
                         "a ring of 2^2139062143 list operations" } },
    { "uzura/transport/crw", { "CRW entry state", 4, 0x7f, 1,
                               "CRW table entry 0 in state 127" } },
    { "uzura/transport/crw", { "CRW WQE's SGEs",
                               4 + CRW_WR_OFF + WR_SGL_NUM_OFF, 0xff, 4,
                               "of 4294967295 SGEs" } },
    { "uzura/core/flows", { "flow rule's IP version", FLOW_IP_VER_OFF, 5, 1,
                            "flow rule 0: QP" } },
    { "uzura/core/rss", { "RSS table's size", 7, 3, 1,
                          "an RSS table of 3 entries" } },
    { "uzura/core/rss", { "RSS table's entry", RSS_QPN_OFF, 0x7f, 4,
                          "entry 0 is QP 2139062143" } },
};

/* Where the fields of subsection @name start in @buf. */
static size_t sub_start(uint8_t *buf, size_t len, const char *name)
{
    uint8_t *sub = memmem(buf, len, name, strlen(name));

    g_assert_nonnull(sub);
    /* The name, then the version. */
    return sub - buf + strlen(name) + 4;
}

#define SUB_MUTATIONS   16

/*
 * A TM SRQ's list, a CRW table, an RSS table and flow rules move (their
 * cases with traffic are in uzura-tm-test, uzura-crw-test and
 * uzura-rss-test): a stream with one of their fields spoiled fails with
 * its reason, and runs of random bytes in their subsections load or
 * fail cleanly; the incoming side stays up.
 */
static void test_corrupt_subsections(void)
{
    g_autofree char *dir = g_dir_make_tmp("uzura-migration-XXXXXX", NULL);
    g_autofree char *path = g_strdup_printf("%s/state", dir);
    g_autofree char *bad = g_strdup_printf("%s/bad", dir);
    g_autofree uint8_t *buf = NULL;
    GRand *rnd = g_rand_new_with_seed(0x7c2a);
    /* Each subsection's fields, or (CRW) its first two entries. */
    static const struct {
        const char *name;
        size_t span;
    } subs[] = {
        { "uzura/core/tm", TM_LEN },
        { "uzura/transport/crw", 4 + 2 * CRW_ENTRY_LEN },
        { "uzura/core/flows", 2 * FLOW_LEN },
        { "uzura/core/rss", RSS_QPN_OFF + 8 },
    };
    UzMachine m;
    UzNode n;
    Objs o;
    QOSState *to;
    size_t len;
    char *err;
    int i, k, loaded = 0;

    uz_machine_start(&m, 1, "-trace uzura_migration_err_stream");
    uz_node_start(&n, &m, 0);
    objs_create(&n, &o);
    tm_crw_create(&n, &o);
    steering_create(&n, &o);
    uz_save(&m, path);
    g_assert(g_file_get_contents(path, (char **)&buf, &len, NULL));
    err = uz_load(&m, path, &to);
    g_assert_null(err);
    qtest_shutdown(to);

    for (i = 0; i < ARRAY_SIZE(sub_corruptions); i++) {
        const Corruption *c = &sub_corruptions[i].c;
        g_autofree uint8_t *copy = g_memdup2(buf, len);
        g_autofree char *log = NULL;
        size_t at = sub_start(copy, len, sub_corruptions[i].sub) + c->off;

        g_assert_cmpuint(at + c->len, <=, len);
        memset(copy + at, c->byte, c->len);
        g_assert(g_file_set_contents(bad, (char *)copy, len, NULL));
        err = uz_load(&m, bad, &to);
        g_test_message("%s: %s", c->what, err ? err : "(loaded)");
        g_assert_nonnull(err);
        g_free(err);
        log = uz_machine_log(&m);
        g_assert_nonnull(strstr(log, c->error));
        qtest_qmp_assert_success(to->qts, "{'execute': 'query-status'}");
        qtest_shutdown(to);
    }
    for (k = 0; k < ARRAY_SIZE(subs); k++) {
        size_t start = sub_start(buf, len, subs[k].name);
        size_t span = subs[k].span;

        for (i = 0; i < SUB_MUTATIONS; i++) {
            g_autofree uint8_t *copy = g_memdup2(buf, len);
            size_t at = start + g_rand_int_range(rnd, 0, span);
            int run = g_rand_int_range(rnd, 1, 16), j;

            for (j = 0; j < run; j++) {
                copy[at + j] = g_rand_int_range(rnd, 0, 256);
            }
            g_assert(g_file_set_contents(bad, (char *)copy, len, NULL));
            err = uz_load(&m, bad, &to);
            loaded += !err;
            g_free(err);
            qtest_qmp_assert_success(to->qts, "{'execute': 'query-status'}");
            qtest_shutdown(to);
        }
    }
    g_test_message("%d of %d mutated streams loaded", loaded,
                   SUB_MUTATIONS * (int)ARRAY_SIZE(subs));
    g_rand_free(rnd);
    unlink(bad);
    unlink(path);
    rmdir(dir);
    uz_node_stop(&n);
    uz_machine_stop(&m);
}

/*
 * Runs of random bytes anywhere in the core's section, from a fixed
 * seed: each stream loads or fails cleanly, and the incoming side stays
 * up either way.  Most runs land in table entries, whose valid flags
 * they set at random: the checks must catch what that makes.
 */
#define MUTATIONS       24
#define MUTATION_SPAN   (512 * 1024)

static void test_mutated_streams(void)
{
    g_autofree char *dir = g_dir_make_tmp("uzura-migration-XXXXXX", NULL);
    g_autofree char *path = g_strdup_printf("%s/state", dir);
    g_autofree char *bad = g_strdup_printf("%s/bad", dir);
    g_autofree uint8_t *buf = NULL;
    GRand *rnd = g_rand_new_with_seed(0x75a7a);
    UzMachine m;
    UzNode n;
    Objs o;
    size_t len, start, span;
    int i, loaded = 0;

    uz_machine_start(&m, 1, NULL);
    uz_node_start(&n, &m, 0);
    objs_create(&n, &o);
    uz_save(&m, path);
    g_assert(g_file_get_contents(path, (char **)&buf, &len, NULL));
    start = core_start(buf, len);
    span = MIN(len - start, MUTATION_SPAN);

    for (i = 0; i < MUTATIONS; i++) {
        g_autofree uint8_t *copy = g_memdup2(buf, len);
        size_t at = start + g_rand_int_range(rnd, 0, span - 64);
        int run = g_rand_int_range(rnd, 1, 64), j;
        QOSState *to;
        char *err;

        for (j = 0; j < run; j++) {
            copy[at + j] = g_rand_int_range(rnd, 0, 256);
        }
        g_assert(g_file_set_contents(bad, (char *)copy, len, NULL));
        err = uz_load(&m, bad, &to);
        loaded += !err;
        g_free(err);
        qtest_qmp_assert_success(to->qts, "{'execute': 'query-status'}");
        qtest_shutdown(to);
    }
    g_test_message("%d of %d mutated streams loaded", loaded, MUTATIONS);
    g_rand_free(rnd);
    unlink(bad);
    unlink(path);
    rmdir(dir);
    uz_node_stop(&n);
    uz_machine_stop(&m);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qtest_add_func("/uzura/migration/objects-move", test_objects_move);
    qtest_add_func("/uzura/migration/traffic-in-flight",
                   test_traffic_in_flight);
    qtest_add_func("/uzura/migration/fault-moves", test_fault_moves);
    qtest_add_func("/uzura/migration/rate-limiter", test_rate_limiter);
    qtest_add_func("/uzura/migration/refused-flap", test_refused);
    qtest_add_func("/uzura/migration/corrupt-stream", test_corrupt_stream);
    qtest_add_func("/uzura/migration/mutated-streams", test_mutated_streams);
    qtest_add_func("/uzura/migration/corrupt-subsections",
                   test_corrupt_subsections);
    return g_test_run();
}
