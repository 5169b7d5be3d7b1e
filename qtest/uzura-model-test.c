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
    return g_test_run();
}
