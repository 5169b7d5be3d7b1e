/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uzura qtests: RoCE frames sent in place (spec-invisible; uzura-roce.c).
 *
 * A payload of 512 bytes or more bound for the link goes to the netdev as
 * pieces: the headers from the device's frame buffer, the payload mapped
 * from guest memory, then the pad and ICRC.  What cannot be mapped is
 * copied into the frame buffer.  These tests check that the bytes and the
 * ICRC (the receiving NIC drops a frame whose ICRC is wrong) come out as
 * a linear frame's would, across pages, SGEs and pieces, for WRITE, SEND
 * and READ responses, and that an SGE the device cannot read fails as it
 * did when every payload was copied.
 */
#include "qemu/osdep.h"
#include "uzura-verbs.h"

typedef struct Env {
    UzMachine m;
    UzNode n[2];
    UzQp *qa, *qb;              /* qa on uz0, qb on uz1, path MTU 4096 */
    UzMr *ma, *mb;
} Env;

#define MR_LEN      (40 * UZ_PAGE_SIZE)

static void env_qps(Env *e, UzQp **a, UzQp **b)
{
    UzRcOpts o = UZ_RC_OPTS_DEFAULT;

    o.path_mtu = UZ_MTU_4096;
    *a = uz_qp_create(&e->n[0], UZ_QPT_RC, NULL, NULL, NULL, 0);
    *b = uz_qp_create(&e->n[1], UZ_QPT_RC, NULL, NULL, NULL, 0);
    uz_rc_connect(*a, *b, &o);
}

static void env_start(Env *e)
{
    struct uz_cmd_set_mtu mtu = { .mtu = cpu_to_le32(9000) };
    int i;

    memset(e, 0, sizeof(*e));
    uz_machine_start(&e->m, 2, NULL);
    for (i = 0; i < 2; i++) {
        uz_node_start(&e->n[i], &e->m, i);
        /* A jumbo MTU, for path MTU 4096. */
        g_assert_cmpint(uz_cmd(&e->n[i], UZ_CMD_SET_MTU, &mtu, sizeof(mtu),
                               NULL), ==, UZ_CMD_OK);
    }
    env_qps(e, &e->qa, &e->qb);
    /* uz_mr_reg lists its pages in reverse: no two are adjacent. */
    e->ma = uz_mr_reg(&e->n[0], MR_LEN, UZ_ACCESS_ALL);
    e->mb = uz_mr_reg(&e->n[1], MR_LEN, UZ_ACCESS_ALL);
}

static void env_stop(Env *e)
{
    g_assert_cmpuint(uz_counter(&e->m, 0, "icrc_errors"), ==, 0);
    g_assert_cmpuint(uz_counter(&e->m, 1, "icrc_errors"), ==, 0);
    uz_node_stop(&e->n[0]);
    uz_node_stop(&e->n[1]);
    uz_machine_stop(&e->m);
}

/* Fill the SGEs of @mr with a pattern: what a message of them carries. */
static uint8_t *sges_pattern(UzNode *n, const UzSge *s, int nsge,
                             uint32_t len, uint32_t seed)
{
    uint8_t *data = g_malloc(len);

    uz_pattern(data, len, seed);
    uz_sges_write(n, s, nsge, data);
    return data;
}

/*
 * WRITE and SEND of payloads that cross pages within packets and SGEs
 * within pages, with lengths that need a pad; then READs of them back,
 * whose responses go in place from uz1.
 */
static void test_pages(void)
{
    static const uint32_t lens[] = { 512, 1021, 4096, 4099, 13 * 1024 + 7 };
    Env e;
    unsigned i;

    env_start(&e);
    for (i = 0; i < ARRAY_SIZE(lens); i++) {
        uint32_t len = lens[i], a = len / 3, seed = 0x100 + i;
        /* Two SGEs, both starting mid-page. */
        UzSge s[2] = {
            uz_mr_sge(e.ma, 1000 + i * 8, a),
            uz_mr_sge(e.ma, 20 * UZ_PAGE_SIZE - 777, len - a),
        };
        UzSge r = uz_mr_sge(e.mb, 3 * UZ_PAGE_SIZE + 5, len);
        UzSge back = uz_mr_sge(e.ma, 30 * UZ_PAGE_SIZE - 1001, len);
        g_autofree uint8_t *data = sges_pattern(&e.n[0], s, 2, len, seed);
        UzWr wr = {
            .wr_id = 0x1000 + i, .opcode = UZ_WR_RDMA_WRITE,
            .flags = UZ_WQE_F_SIGNALED, .sge = s, .num_sge = 2,
            .remote_addr = uz_mr_va(e.mb, 9 * UZ_PAGE_SIZE - 13),
            .rkey = e.mb->key,
        };

        uz_post_send(e.qa, &wr);
        uz_sq_done(e.qa, wr.wr_id, UZ_WC_RDMA_WRITE, len);
        uz_assert_mr(e.mb, 9 * UZ_PAGE_SIZE - 13, data, len, "WRITE data");

        uz_post_recv(e.qb, 0x2000 + i, &r, 1);
        wr.wr_id = 0x3000 + i;
        wr.opcode = UZ_WR_SEND;
        uz_post_send(e.qa, &wr);
        uz_sq_done(e.qa, wr.wr_id, UZ_WC_SEND, len);
        uz_rq_done(e.qb, 0x2000 + i, UZ_WC_RECV, len, 0, 0);
        uz_assert_mr(e.mb, 3 * UZ_PAGE_SIZE + 5, data, len, "SEND data");

        wr = (UzWr) {
            .wr_id = 0x4000 + i, .opcode = UZ_WR_RDMA_READ,
            .flags = UZ_WQE_F_SIGNALED, .sge = &back, .num_sge = 1,
            .remote_addr = uz_mr_va(e.mb, 9 * UZ_PAGE_SIZE - 13),
            .rkey = e.mb->key,
        };
        uz_post_send(e.qa, &wr);
        uz_sq_done(e.qa, wr.wr_id, UZ_WC_RDMA_READ, len);
        uz_assert_mr(e.ma, 30 * UZ_PAGE_SIZE - 1001, data, len, "READ data");
    }
    env_stop(&e);
}

/*
 * More pieces than a frame holds (16): 12 SGEs, each across a page
 * boundary, two pieces each, in one 4096-byte packet, then in three.
 * What does not fit as a mapping is copied into the frame buffer after
 * the mapped pieces; the bytes arrive in order.
 */
static void test_many_pieces(void)
{
    static const uint32_t sge_lens[] = { 300, 700 };
    Env e;
    unsigned i;

    env_start(&e);
    for (i = 0; i < ARRAY_SIZE(sge_lens); i++) {
        UzSge s[12];
        uint32_t k, len = 0;

        for (k = 0; k < ARRAY_SIZE(s); k++) {
            s[k] = uz_mr_sge(e.ma, (2 * k + 1) * UZ_PAGE_SIZE -
                             sge_lens[i] / 2 + (k & 3), sge_lens[i]);
            len += s[k].length;
        }
        {
            g_autofree uint8_t *data = sges_pattern(&e.n[0], s, 12, len,
                                                    0x77 + i);
            UzWr wr = {
                .wr_id = 0x5000 + i, .opcode = UZ_WR_RDMA_WRITE,
                .flags = UZ_WQE_F_SIGNALED, .sge = s, .num_sge = 12,
                .remote_addr = uz_mr_va(e.mb, 100), .rkey = e.mb->key,
            };

            uz_post_send(e.qa, &wr);
            uz_sq_done(e.qa, wr.wr_id, UZ_WC_RDMA_WRITE, len);
            uz_assert_mr(e.mb, 100, data, len, "WRITE of 12 SGEs");
        }
    }
    env_stop(&e);
}

/* The pair's QP qa WRITEs 3000 bytes of a pattern into mb. */
static void pair_still_writes(Env *e)
{
    UzSge s = uz_mr_sge(e->ma, 0, 3000);
    g_autofree uint8_t *data = sges_pattern(&e->n[0], &s, 1, 3000, 9);
    UzWr wr = {
        .wr_id = 0x6100, .opcode = UZ_WR_RDMA_WRITE,
        .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1,
        .remote_addr = uz_mr_va(e->mb, 0), .rkey = e->mb->key,
    };

    uz_post_send(e->qa, &wr);
    uz_sq_done(e->qa, wr.wr_id, UZ_WC_RDMA_WRITE, 3000);
    uz_assert_mr(e->mb, 0, data, 3000, "WRITE after");
}

/*
 * An SGE over the device's own doorbell BAR, behind a page of RAM in the
 * same packet: RAM is mapped, the BAR is not RAM and the device's DMA
 * does not reach it, so the WRITE fails with LOC_PROT_ERR (detail DMA),
 * as it did when the payload was copied, and nothing of it lands.  Then
 * the same failure for the SGE alone, and a fresh QP works.
 */
static void test_mmio_sge(void)
{
    Env e;
    UzMr *bar;
    UzQp *a, *b;
    int v;

    env_start(&e);
    bar = uz_mr_reg_dma_at(&e.n[0], e.n[0].d.db.addr, UZ_PAGE_SIZE,
                           UZ_ACCESS_ALL);
    uz_mr_fill(e.mb, 0, 0x5a, 8192);
    for (v = 0; v < 2; v++) {
        UzSge s[2] = {
            uz_mr_sge(e.ma, UZ_PAGE_SIZE - 100, 2000),
            uz_mr_sge(bar, 64, 1024),
        };
        UzWr wr = {
            .wr_id = 0x6000 + v, .opcode = UZ_WR_RDMA_WRITE,
            .flags = UZ_WQE_F_SIGNALED, .sge = v ? s + 1 : s,
            .num_sge = v ? 1 : 2,
            .remote_addr = uz_mr_va(e.mb, 0), .rkey = e.mb->key,
        };

        env_qps(&e, &a, &b);
        uz_post_send(a, &wr);
        uz_sq_err(a, wr.wr_id, UZ_WC_RDMA_WRITE, UZ_WC_STATUS_LOC_PROT_ERR,
                  UZ_VERR_DMA);
        uz_assert_mr_fill(e.mb, 0, 0x5a, 8192, "untouched");
    }
    /* The pair's own QPs are untouched and still carry a WRITE. */
    pair_still_writes(&e);
    env_stop(&e);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qtest_add_func("/uzura/inplace/pages", test_pages);
    qtest_add_func("/uzura/inplace/many-pieces", test_many_pieces);
    qtest_add_func("/uzura/inplace/mmio-sge", test_mmio_sge);
    return g_test_run();
}
