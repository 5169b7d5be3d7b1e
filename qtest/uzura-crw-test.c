/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qtest for the uzura NIC's Conditional RDMA Write (spec 8.12).
 */
#include "uzura-verbs.h"

typedef struct Crw {
    UzMachine m;
    UzNode a, b;
} Crw;

static void smoke_one(bool crw_first, size_t len)
{
    Crw t;
    UzQp *qa, *qb;
    UzMr *ma, *mb;
    struct uz_cqe c;
    uint64_t tag = 0x1122334455667788ull;
    g_autofree uint8_t *buf = g_malloc(len + 1);
    g_autofree uint8_t *got = g_malloc(len + 1);
    UzSge s;
    UzWr crw, st;
    size_t i;

    uz_machine_start(&t.m, 2, NULL);
    uz_node_start(&t.a, &t.m, 0);
    uz_node_start(&t.b, &t.m, 1);
    qa = uz_qp_create(&t.a, UZ_QPT_RC, NULL, NULL, NULL, 0);
    qb = uz_qp_create(&t.b, UZ_QPT_RC, NULL, NULL, NULL, 0);
    uz_rc_connect(qa, qb, NULL);
    ma = uz_mr_reg(&t.a, len + 4096, UZ_ACCESS_ALL);
    mb = uz_mr_reg(&t.b, len + 4096, UZ_ACCESS_ALL);
    for (i = 0; i < len; i++) {
        buf[i] = i * 7 + 3;
    }
    uz_mr_write(ma, 0, buf, len);
    s = uz_mr_sge(ma, 0, len);
    crw = (UzWr) { .wr_id = 0xc1, .opcode = UZ_WR_CRW,
                   .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1,
                   .tag = tag };
    st = (UzWr) { .wr_id = 0x5c, .opcode = UZ_WR_STCRW,
                  .flags = UZ_WQE_F_SIGNALED, .tag = tag,
                  .remote_addr = uz_mr_va(mb, 0), .rkey = mb->key,
                  .crw_length = len };
    uz_post_recv(qb, 0x7e, NULL, 0);
    if (crw_first) {
        uz_post_send(qa, &crw);
        uz_counter_wait(&t.a, "crw_parked", 1);
        uz_cq_assert_empty(qa->scq, 5);
        uz_post_send(qb, &st);
    } else {
        uz_post_send(qb, &st);
        uz_counter_wait(&t.a, "crw_offers", 1);
        uz_post_send(qa, &crw);
    }
    uz_cq_wait(qb->scq, &c);
    uz_cqe_expect(&c, 0x5c, UZ_WC_STCRW, 0, 0, qb->qpn);
    uz_cq_wait(qa->scq, &c);
    uz_cqe_expect(&c, 0xc1, UZ_WC_CRW, 0, 0, qa->qpn);
    g_assert_cmpuint(c.byte_len, ==, len);
    uz_cq_wait(qb->rcq, &c);
    uz_cqe_expect(&c, 0x7e, UZ_WC_RECV_RDMA_WITH_IMM, 0, 0, qb->qpn);
    g_assert_cmphex(c.imm_data, ==, 0x55667788);
    uz_mr_read(mb, 0, got, len);
    g_assert(!memcmp(got, buf, len));
    uz_node_stop(&t.a);
    uz_node_stop(&t.b);
    uz_machine_stop(&t.m);
}

static void test_smoke(void)
{
    smoke_one(true, 4096);
    smoke_one(false, 5000);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qtest_add_func("/uzura/crw/smoke", test_smoke);
    return g_test_run();
}
