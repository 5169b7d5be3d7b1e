/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uzura qtests: the timing model (spec 8.20).  Two NICs on one hub share
 * the virtual clock, which only the test advances, so each stage's
 * modeled time shows exactly: data and completions appear at the
 * nanosecond the model says, not one before.
 */
#include "uzura-pair.h"

/* Round stage times, each a different power of ten's multiple. */
#define DB_NS       1000
#define RD_NS       2000
#define TX_NS       3000
#define LINK_NS     4000
#define RX_NS       5000
#define WR_NS       6000

#define MODEL_ARGS(rd_ps, wr_ns) \
    "-global uzura.model=on -global uzura.model-doorbell-ns=1000 " \
    "-global uzura.model-dma-read-ns=2000 " \
    "-global uzura.model-dma-read-ps=" rd_ps " " \
    "-global uzura.model-xlat-hit-ns=0 -global uzura.model-xlat-miss-ns=0 " \
    "-global uzura.model-nic-tx-ns=3000 -global uzura.model-link-ns=4000 " \
    "-global uzura.model-link-mbps=10000000 " \
    "-global uzura.model-nic-rx-ns=5000 " \
    "-global uzura.model-dma-write-ns=" wr_ns " " \
    "-global uzura.model-dma-write-ps=0"

/* Ethernet, IPv4, UDP, BTH, RETH and ICRC around a WRITE's payload. */
#define WRITE_HDRS  (14 + 20 + 8 + 12 + 16 + 4)

static void model_start(Pair *p, const char *args)
{
    memset(p, 0, sizeof(*p));
    uz_machine_start(&p->m, 2, args);
    pair_init(p);
}

/* The virtual clock, one nanosecond on: qtest steps by at least one. */
static int64_t clock_now(Pair *p)
{
    return qtest_clock_step(qts(p), 1);
}

static void clock_to(Pair *p, int64_t t)
{
    g_assert_cmpint(qtest_clock_set(qts(p), t), ==, t);
}

static bool landed(Pair *p, uint64_t off, const uint8_t *want, size_t len)
{
    g_autofree uint8_t *got = g_malloc(len);

    uz_mr_read(p->mb, off, got, len);
    return !memcmp(got, want, len);
}

static void post_write(Pair *p, uint64_t off, const uint8_t *data,
                       uint32_t len, uint64_t wr_id)
{
    UzSge s = uz_mr_sge(p->ma, off, len);
    UzWr wr = {
        .wr_id = wr_id, .opcode = UZ_WR_RDMA_WRITE,
        .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1,
        .remote_addr = p->mb->iova + off, .rkey = p->mb->key,
    };

    uz_mr_write(p->ma, off, data, len);
    uz_post_send(p->qa, &wr);
}

/*
 * One WRITE: its data lands after doorbell, DMA, sending NIC, link,
 * receiving NIC and DMA; the requester's CQE after the ACK has come the
 * same way back, less the DMA a frame built on the NIC does not need.
 */
static void test_stages(void)
{
    static const uint8_t data[16] = "modeled stages!";
    const int64_t land = DB_NS + RD_NS + TX_NS + LINK_NS + RX_NS + WR_NS;
    const int64_t done = land + TX_NS + LINK_NS + RX_NS + WR_NS;
    struct uz_cqe c;
    Pair p;
    int64_t t0;

    model_start(&p, MODEL_ARGS("0", "6000"));
    uz_mr_fill(p.mb, 0, 0, sizeof(data));
    t0 = clock_now(&p);
    post_write(&p, 0, data, sizeof(data), 0x51);

    clock_to(&p, t0 + land - 1);
    g_assert_false(landed(&p, 0, data, sizeof(data)));
    clock_to(&p, t0 + land);
    g_assert_true(landed(&p, 0, data, sizeof(data)));

    clock_to(&p, t0 + done - 1);
    g_assert_false(uz_cq_poll(p.qa->scq, &c));
    clock_to(&p, t0 + done);
    g_assert_true(uz_cq_poll(p.qa->scq, &c));
    uz_expect_sq(&c, 0x51, UZ_WC_RDMA_WRITE, p.qa, sizeof(data));
    pair_stop(&p);
}

/*
 * Two WRITEs rung at once: the host-to-NIC DMA engine serves one frame
 * at a time, at 1 ns a byte here, so the second frame leaves a DMA
 * later; the NIC-to-host DMA (100 ns here) is no bottleneck.
 */
static void test_serial_dma(void)
{
    enum { LEN = 1000, WR = 100 };
    const int64_t frame = WRITE_HDRS + LEN;
    const int64_t land1 = DB_NS + RD_NS + frame + TX_NS + LINK_NS + RX_NS +
                          WR;
    const int64_t land2 = land1 + RD_NS + frame;
    g_autofree uint8_t *a = g_malloc(LEN);
    g_autofree uint8_t *b = g_malloc(LEN);
    Pair p;
    int64_t t0;

    uz_pattern(a, LEN, 1);
    uz_pattern(b, LEN, 2);
    model_start(&p, MODEL_ARGS("1000", "100"));
    uz_mr_fill(p.mb, 0, 0, 2 * LEN);
    t0 = clock_now(&p);
    post_write(&p, 0, a, LEN, 1);
    post_write(&p, LEN, b, LEN, 2);

    clock_to(&p, t0 + land1 - 1);
    g_assert_false(landed(&p, 0, a, LEN));
    clock_to(&p, t0 + land1);
    g_assert_true(landed(&p, 0, a, LEN));
    g_assert_false(landed(&p, LEN, b, LEN));
    clock_to(&p, t0 + land2 - 1);
    g_assert_false(landed(&p, LEN, b, LEN));
    clock_to(&p, t0 + land2);
    g_assert_true(landed(&p, LEN, b, LEN));
    pair_stop(&p);
}

static uint64_t qom_get_uint(Pair *p, int nic, const char *prop)
{
    g_autofree char *path = g_strdup_printf("/machine/peripheral/uz%d", nic);
    QDict *rsp = qtest_qmp(qts(p), "{'execute': 'qom-get', 'arguments': "
                           "{'path': %s, 'property': %s}}", path, prop);
    uint64_t v = qdict_get_int(rsp, "return");

    qobject_unref(rsp);
    return v;
}

/* A model control frame (spec 8.20.2) from uz0, sent by a raw QP. */
static void raw_ctl(Pair *p, UzQp *qp, UzMr *mr, uint8_t kind, uint64_t t)
{
    uint8_t f[60] = { 0 };
    UzSge s = uz_mr_sge(mr, 0, sizeof(f));
    UzWr wr = { .wr_id = kind, .opcode = UZ_WR_SEND,
                .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1 };
    struct uz_cqe c;

    memset(f, 0xff, 6);
    uz_node_mac(0, f + 6);
    stw_be_p(f + 12, 0x88b5);
    stl_be_p(f + 14, 0x555a4d44);
    f[18] = kind;
    stq_be_p(f + 22, t);
    uz_mr_write(mr, 0, f, sizeof(f));
    uz_post_send(qp, &wr);
    uz_cq_wait_clock(qp->scq, &c, MS, 100);
    uz_cqe_expect(&c, kind, UZ_WC_SEND, UZ_WC_STATUS_SUCCESS, 0, qp->qpn);
}

/*
 * Control frames from the wire that no lockstep sent: a mark that goes
 * back is counted and ignored, an unknown kind ignored, a stamp (the
 * receiver not in lockstep), a HELLO and a BYE change nothing, and the
 * next WRITE still lands at its modeled time.  Then a reset of the
 * sender while its frame is held loses the frame and nothing else.
 */
static void test_wire(void)
{
    static const uint8_t data[16] = "after the noise";
    const int64_t land = DB_NS + RD_NS + TX_NS + LINK_NS + RX_NS + WR_NS;
    struct uz_qp_attr a = { .state = UZ_QPS_INIT, .port = 1 };
    UzMr *mr;
    UzQp *raw;
    Pair p;
    int64_t t0;

    model_start(&p, MODEL_ARGS("0", "6000"));
    raw = uz_qp_create(&p.n[0], UZ_QPT_RAW, NULL, NULL, NULL, 0);
    mr = uz_mr_reg(&p.n[0], 4096, UZ_ACCESS_LOCAL_WRITE);
    g_assert_cmpint(uz_qp_modify(raw, UZ_QP_ATTR_STATE | UZ_QP_ATTR_PORT,
                                 &a), ==, UZ_CMD_OK);
    uz_qp_set_state(raw, UZ_QPS_RTR);
    uz_qp_set_state(raw, UZ_QPS_RTS);

    raw_ctl(&p, raw, mr, 2, 100 * MS);          /* MARK */
    raw_ctl(&p, raw, mr, 2, 50 * MS);           /* MARK back: bad */
    raw_ctl(&p, raw, mr, 0x77, 0);              /* no such kind */
    raw_ctl(&p, raw, mr, 3, INT64_MAX / 2);     /* STAMP, far ahead */
    raw_ctl(&p, raw, mr, 1, 1);                 /* HELLO */
    raw_ctl(&p, raw, mr, 4, 0);                 /* BYE */
    g_assert_cmpuint(qom_get_uint(&p, 1, "model-bad"), ==, 1);
    g_assert_cmpuint(qom_get_uint(&p, 1, "model-late"), ==, 0);
    g_assert_cmpuint(qom_get_uint(&p, 1, "model-quanta"), ==, 0);

    uz_mr_fill(p.mb, 0, 0, 64);
    t0 = clock_now(&p);
    post_write(&p, 0, data, sizeof(data), 0x52);
    clock_to(&p, t0 + land - 1);
    g_assert_false(landed(&p, 0, data, sizeof(data)));
    clock_to(&p, t0 + land);
    g_assert_true(landed(&p, 0, data, sizeof(data)));

    /* Held in uz0's model, on its way: the reset loses it. */
    t0 = clock_now(&p);
    post_write(&p, 32, data, sizeof(data), 0x53);
    clock_to(&p, t0 + DB_NS + RD_NS + TX_NS + 1);
    uz_wr(&p.n[0].d, UZ_REG_RESET, UZ_RESET_KEY);
    clock_to(&p, t0 + 10 * land);
    g_assert_false(landed(&p, 32, data, sizeof(data)));
    g_assert_cmphex(uz_rd(&p.n[1].d, UZ_REG_MAGIC), ==, UZ_MAGIC);
    uz_node_stop(&p.n[1]);
    uz_machine_stop(&p.m);
}

static char *qom_set_error(Pair *p, const char *prop, bool value)
{
    QDict *rsp = qtest_qmp(qts(p), "{'execute': 'qom-set', 'arguments': "
                           "{'path': '/machine/peripheral/uz0', "
                           "'property': %s, 'value': %i}}", prop, value);
    char *desc = NULL;

    if (qdict_haskey(rsp, "error")) {
        desc = g_strdup(qdict_get_str(qdict_get_qdict(rsp, "error"),
                                      "desc"));
    }
    qobject_unref(rsp);
    return desc;
}

/*
 * Out-of-range stage times are refused at realize; the lockstep needs
 * the model and guest time from instructions, which qtest has not.
 */
static void test_properties(void)
{
    static const char *const bad[] = {
        "model-link-mbps=0", "model-link-mbps=10000001",
        "model-doorbell-ns=10000001", "model-dma-read-ps=1000001",
    };
    g_autofree char *off = NULL;
    g_autofree char *no_icount = NULL;
    Pair p;
    int i;

    memset(&p, 0, sizeof(p));
    uz_machine_start(&p.m, 1,
                     "-device pcie-root-port,id=rp0,chassis=1,addr=0x9");
    for (i = 0; i < ARRAY_SIZE(bad); i++) {
        g_auto(GStrv) kv = g_strsplit(bad[i], "=", 2);
        QDict *args = qdict_new();
        QDict *rsp;
        const char *desc;

        qdict_put_str(args, "driver", "uzura");
        qdict_put_str(args, "bus", "rp0");
        qdict_put_bool(args, "model", true);
        qdict_put_int(args, kv[0], g_ascii_strtoll(kv[1], NULL, 10));
        rsp = qtest_qmp(qts(&p), "{'execute': 'device_add', "
                        "'arguments': %p}", args);
        g_assert(qdict_haskey(rsp, "error"));
        desc = qdict_get_str(qdict_get_qdict(rsp, "error"), "desc");
        g_test_message("%s: %s", bad[i], desc);
        g_assert(strstr(desc, "uzura: model"));
        qobject_unref(rsp);
    }
    off = qom_set_error(&p, "model-sync", true);
    g_assert_nonnull(off);
    g_assert(strstr(off, "needs model=on"));
    uz_machine_stop(&p.m);

    model_start(&p, MODEL_ARGS("0", "6000"));
    no_icount = qom_set_error(&p, "model-sync", true);
    g_assert_nonnull(no_icount);
    g_assert(strstr(no_icount, "-icount"));
    g_assert_null(qom_set_error(&p, "model-sync", false));
    pair_stop(&p);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qtest_add_func("/uzura/model/stages", test_stages);
    qtest_add_func("/uzura/model/serial-dma", test_serial_dma);
    qtest_add_func("/uzura/model/properties", test_properties);
    qtest_add_func("/uzura/model/wire", test_wire);
    return g_test_run();
}
