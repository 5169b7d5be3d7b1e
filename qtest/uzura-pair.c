/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The uzura qtests' helpers declared in uzura-pair.h.
 */
#include "qemu/osdep.h"
#include "uzura-pair.h"

void pair_init(Pair *p)
{
    UzRcOpts o = UZ_RC_OPTS_DEFAULT;

    uz_node_start(&p->n[0], &p->m, 0);
    uz_node_start(&p->n[1], &p->m, 1);
    p->qa = uz_qp_create(&p->n[0], UZ_QPT_RC, NULL, NULL, NULL, 0);
    p->qb = uz_qp_create(&p->n[1], UZ_QPT_RC, NULL, NULL, NULL, 0);
    o.psn[0] = PSN0;
    uz_rc_connect(p->qa, p->qb, &o);
    p->ma = uz_mr_reg(&p->n[0], 65536, UZ_ACCESS_ALL);
    p->mb = uz_mr_reg(&p->n[1], 65536, UZ_ACCESS_ALL);
}

void pair_start(Pair *p)
{
    memset(p, 0, sizeof(*p));
    uz_machine_start(&p->m, 2, NULL);
    pair_init(p);
}

void pair_stop(Pair *p)
{
    uz_node_stop(&p->n[0]);
    uz_node_stop(&p->n[1]);
    uz_machine_stop(&p->m);
}

QTestState *qts(Pair *p)
{
    return p->m.qs->qts;
}

QDict *rules_try(Pair *p, int nic, const char *text)
{
    g_autofree char *path = g_strdup_printf("/machine/peripheral/uz%d", nic);

    return qtest_qmp(qts(p), "{'execute': 'qom-set', 'arguments': "
                     "{'path': %s, 'property': 'fault-rules', 'value': %s}}",
                     path, text);
}

void rules_set(Pair *p, int nic, const char *text)
{
    QDict *rsp = rules_try(p, nic, text);

    if (!qdict_haskey(rsp, "return")) {
        g_error("uz%d: rules '%s' refused: %s", nic, text,
                qdict_get_str(qdict_get_qdict(rsp, "error"), "desc"));
    }
    qobject_unref(rsp);
}

char *rules_get(Pair *p, int nic)
{
    g_autofree char *path = g_strdup_printf("/machine/peripheral/uz%d", nic);
    QDict *rsp = qtest_qmp(qts(p), "{'execute': 'qom-get', 'arguments': "
                           "{'path': %s, 'property': 'fault-rules'}}", path);
    char *s = g_strdup(qdict_get_str(rsp, "return"));

    qobject_unref(rsp);
    return s;
}

uint64_t rule_acted(Pair *p, int nic, int idx)
{
    g_autofree char *text = rules_get(p, nic);
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    const char *c;
    uint64_t v;

    g_assert_cmpint(g_strv_length(lines), >, idx - 1);
    c = strstr(lines[idx - 1], "acted ");
    g_assert(c);
    g_assert(!qemu_strtou64(c + 6, NULL, 10, &v));
    return v;
}

void pair_fresh_qps(Pair *p, UzQp **a, UzQp **b)
{
    UzRcOpts o = UZ_RC_OPTS_DEFAULT;

    *a = uz_qp_create(&p->n[0], UZ_QPT_RC, NULL, NULL, NULL, 0);
    *b = uz_qp_create(&p->n[1], UZ_QPT_RC, NULL, NULL, NULL, 0);
    uz_rc_connect(*a, *b, &o);
}

void pair_local_fails(Pair *p, const UzWr *wr, uint8_t status,
                      uint8_t verr)
{
    UzQp *a, *b;

    pair_fresh_qps(p, &a, &b);
    uz_post_send(b, wr);
    uz_sq_err(b, wr->wr_id, uz_wc_opcode(wr->opcode), status, verr);
}

void pair_write(Pair *p, uint32_t key, uint64_t va,
                uint32_t len, uint32_t seed, uint8_t status)
{
    g_autofree uint8_t *data = g_malloc(len);
    UzSge s = uz_mr_sge(p->ma, 0, len);
    UzWr wr = {
        .wr_id = 0x3300 + seed, .opcode = UZ_WR_RDMA_WRITE,
        .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1,
        .remote_addr = va, .rkey = key,
    };
    struct uz_cqe c;

    uz_pattern(data, len, seed);
    uz_mr_write(p->ma, 0, data, len);
    uz_post_send(p->qa, &wr);
    uz_cq_wait_clock(p->qa->scq, &c, STEP_NS, 100);
    g_assert_cmpint(c.status, ==, status);
    g_assert_cmphex(c.wr_id, ==, wr.wr_id);
}

void pair_set_uint(Pair *p, int nic, const char *prop,
                   uint64_t v, bool ok)
{
    g_autofree char *path = g_strdup_printf("/machine/peripheral/uz%d", nic);
    QDict *rsp = qtest_qmp(qts(p), "{'execute': 'qom-set', 'arguments': "
                           "{'path': %s, 'property': %s, 'value': %" PRIu64
                           "}}", path, prop, v);

    g_assert_cmpint(qdict_haskey(rsp, "return"), ==, ok);
    qobject_unref(rsp);
}

void pair_set_str(Pair *p, int nic, const char *prop,
                  const char *v, bool ok)
{
    g_autofree char *path = g_strdup_printf("/machine/peripheral/uz%d", nic);
    QDict *rsp = qtest_qmp(qts(p), "{'execute': 'qom-set', 'arguments': "
                           "{'path': %s, 'property': %s, 'value': %s}}",
                           path, prop, v);

    g_assert_cmpint(qdict_haskey(rsp, "return"), ==, ok);
    qobject_unref(rsp);
}

void exchange(Pair *p, uint8_t op, uint32_t len)
{
    g_autofree uint8_t *data = g_malloc(len);
    g_autofree uint8_t *got = g_malloc(len);
    UzSge s = uz_mr_sge(p->ma, 0, len), r = uz_mr_sge(p->mb, 0, len);
    UzWr wr = {
        .wr_id = 0x5e00 + p->seq, .opcode = op,
        .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1,
        .remote_addr = uz_mr_va(p->mb, 32768), .rkey = p->mb->key,
    };
    struct uz_cqe c;

    uz_pattern(data, len, 0xf00 + p->seq);
    uz_mr_write(p->ma, 0, data, len);
    if (op == UZ_WR_SEND) {
        uz_post_recv(p->qb, 0x7e00 + p->seq, &r, 1);
    }
    uz_post_send(p->qa, &wr);
    uz_cq_wait_clock(p->qa->scq, &c, STEP_NS, 100);
    uz_cqe_expect(&c, 0x5e00 + p->seq, uz_wc_opcode(op),
                  UZ_WC_STATUS_SUCCESS, 0, p->qa->qpn);
    if (op == UZ_WR_SEND) {
        uz_cq_wait(p->qb->rcq, &c);
        uz_cqe_expect(&c, 0x7e00 + p->seq, UZ_WC_RECV, UZ_WC_STATUS_SUCCESS,
                      0, p->qb->qpn);
        g_assert_cmpuint(c.byte_len, ==, len);
        uz_mr_read(p->mb, 0, got, len);
    } else {
        uz_mr_read(p->mb, 32768, got, len);
    }
    g_assert(!memcmp(got, data, len));
    p->seq++;
}
