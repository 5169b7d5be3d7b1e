/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uzura: on-demand paging (spec 8.10.4).  An ODP MR's page list starts
 * empty; each access to an absent page raises a page fault on the async
 * EQ and waits (a responder answers RNR NAK, a requester stops the QP)
 * until the test, playing the driver, maps the page and sends
 * PAGE_RESUME.  Every kind of access then completes with its data intact;
 * a page marked as unmappable fails the access; one fault per MR is
 * outstanding however often the peer retries; a PTE that names the
 * device's own BAR fails the access and nothing else.
 */
#include "uzura-pair.h"

#define PAGES       4

typedef struct Faults {
    UzMr *mr;                   /* the ODP MR the test serves */
    uint32_t bad_page;          /* a page it marks bad, or -1 */
    int seen;                   /* page faults served */
    int most_outstanding;       /* faults seen between two resumes */
} Faults;

/* Serve the page faults node @n has raised for @f->mr so far. */
static void faults_serve(Faults *f)
{
    UzNode *n = f->mr->n;
    struct uz_eqe eqe;
    int got = 0;

    while (uz_eq_next(&n->d, &n->async_eq, &eqe)) {
        uz_ring(&n->d, n->async_eq.db, n->async_eq.ci);
        if (eqe.type != UZ_EQE_PAGE_FAULT) {
            g_test_message("uz%d: event 0x%x", n->idx, eqe.type);
            continue;
        }
        g_assert_cmphex(le32_to_cpu(eqe.handle), ==, f->mr->key);
        got++;
        f->seen++;
        uz_odp_serve(f->mr, le32_to_cpu(eqe.data),
                  le32_to_cpu(eqe.data) == f->bad_page);
    }
    f->most_outstanding = MAX(f->most_outstanding, got);
}

/* Wait for @cq's next CQE, serving faults and moving the clock. */
static void wait_serving(UzCq *cq, struct uz_cqe *c, Faults *f)
{
    int i;

    for (i = 0; i < 2000; i++) {
        faults_serve(f);
        if (uz_cq_poll(cq, c)) {
            return;
        }
        qtest_clock_step(cq->n->d.qts, MS);
    }
    g_error("no completion while serving %d page faults", f->seen);
}

/* @op of @len bytes from qa's @la to qb's @lb; the data must arrive. */
static void odp_transfer(Pair *p, uint8_t op, UzMr *la, UzMr *lb,
                         uint32_t len, Faults *f, uint32_t seed)
{
    g_autofree uint8_t *data = g_malloc(len);
    g_autofree uint8_t *got = g_malloc(len);
    UzMr *src = op == UZ_WR_RDMA_READ ? lb : la;
    UzMr *dst = op == UZ_WR_RDMA_READ ? la : lb;
    UzSge s = uz_mr_sge(la, 0, len), r = uz_mr_sge(lb, 0, len);
    UzWr wr = {
        .wr_id = 0x0d00 + seed, .opcode = op, .flags = UZ_WQE_F_SIGNALED,
        .sge = &s, .num_sge = 1, .remote_addr = uz_mr_va(lb, 0),
        .rkey = lb->key,
    };
    struct uz_cqe c;

    uz_pattern(data, len, seed);
    uz_mr_write(src, 0, data, len);
    if (op == UZ_WR_SEND) {
        uz_post_recv(p->qb, 0x0e00 + seed, &r, 1);
    }
    uz_post_send(p->qa, &wr);
    wait_serving(p->qa->scq, &c, f);
    uz_cqe_expect(&c, wr.wr_id, uz_wc_opcode(op), UZ_WC_STATUS_SUCCESS, 0,
                  p->qa->qpn);
    if (op == UZ_WR_SEND) {
        wait_serving(p->qb->rcq, &c, f);
        uz_cqe_expect(&c, 0x0e00 + seed, UZ_WC_RECV, UZ_WC_STATUS_SUCCESS, 0,
                      p->qb->qpn);
        g_assert_cmpuint(c.byte_len, ==, len);
    }
    uz_mr_read(dst, 0, got, len);
    g_assert(!memcmp(got, data, len));
}

/*
 * @op of @len bytes (touching every page) between an ODP MR on node
 * @node and a plain MR on the other: every page faults once, the data
 * arrives, and the pair goes on.
 */
static void odp_case(uint8_t op, int node, uint32_t len, uint32_t seed)
{
    Faults f = { .bad_page = -1 };
    Pair p;

    pair_start(&p);
    f.mr = uz_mr_reg_odp(&p.n[node], PAGES);
    odp_transfer(&p, op, node ? p.ma : f.mr, node ? f.mr : p.mb, len, &f,
                 seed);
    g_assert_cmpint(f.seen, ==, PAGES);
    exchange(&p, UZ_WR_RDMA_WRITE, 3000);
    pair_stop(&p);
}

/*
 * A SEND into an ODP receive buffer on an SRQ (where a WQE once taken
 * is gone): one receive WQE, not one a try.  @f: no faults yet.
 */
static void responder_srq(Pair *p, Faults *f)
{
    UzSrq *srq = uz_srq_create(&p->n[1], 4, 0);
    UzRcOpts o = UZ_RC_OPTS_DEFAULT;
    g_autofree uint8_t *data = g_malloc(3 * 4096);
    g_autofree uint8_t *got = g_malloc(3 * 4096);
    UzSge s, r;
    UzWr wr;
    UzQp *b;
    struct uz_cqe c;

    f->mr = uz_mr_reg_odp(&p->n[1], PAGES);
    p->qa = uz_qp_create(&p->n[0], UZ_QPT_RC, NULL, NULL, NULL, 0);
    b = uz_qp_create(&p->n[1], UZ_QPT_RC, NULL, NULL, srq, 0);
    uz_rc_connect(p->qa, b, &o);
    r = uz_mr_sge(f->mr, 0, 3 * 4096);
    uz_srq_post(srq, 0x0e01, &r, 1);
    r = uz_mr_sge(p->mb, 0, 4096);
    uz_srq_post(srq, 0x0e02, &r, 1);
    uz_pattern(data, 3 * 4096, 3);
    uz_mr_write(p->ma, 0, data, 3 * 4096);
    s = uz_mr_sge(p->ma, 0, 3 * 4096);
    wr = (UzWr) { .wr_id = 0x0d03, .opcode = UZ_WR_SEND,
                  .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1 };
    uz_post_send(p->qa, &wr);
    wait_serving(b->rcq, &c, f);
    uz_cqe_expect(&c, 0x0e01, UZ_WC_RECV, UZ_WC_STATUS_SUCCESS, 0, b->qpn);
    g_assert_cmpint(f->seen, ==, 3);
    uz_mr_read(f->mr, 0, got, 3 * 4096);
    g_assert(!memcmp(got, data, 3 * 4096));
    /* The second WQE is still there for the next message. */
    s = uz_mr_sge(p->ma, 0, 100);
    wr.wr_id = 0x0d04;
    wr.sge = &s;
    uz_post_send(p->qa, &wr);
    wait_serving(b->rcq, &c, f);
    uz_cqe_expect(&c, 0x0e02, UZ_WC_RECV, UZ_WC_STATUS_SUCCESS, 0, b->qpn);
}

/*
 * A peer's WRITE and SEND into an ODP MR: each absent page is an RNR NAK
 * and one fault; once served, the message lands whole.
 */
static void test_responder(void)
{
    Faults f = { .bad_page = -1 };
    Pair p;

    pair_start(&p);
    f.mr = uz_mr_reg_odp(&p.n[1], PAGES);
    odp_transfer(&p, UZ_WR_RDMA_WRITE, p.ma, f.mr, PAGES * 4096 - 100, &f, 1);
    g_assert_cmpint(f.seen, ==, PAGES);
    g_assert_cmpint(f.most_outstanding, ==, 1);
    g_assert_cmpuint(uz_counter(&p.m, 1, "rnr_naks_sent"), >=, PAGES);
    g_assert_cmpuint(uz_counter(&p.m, 1, "xlat_faults"), >=, PAGES);
    /* Mapped now: no more faults. */
    odp_transfer(&p, UZ_WR_RDMA_WRITE, p.ma, f.mr, 5000, &f, 2);
    g_assert_cmpint(f.seen, ==, PAGES);
    pair_stop(&p);

    /* A SEND into an ODP buffer on an SRQ, on a machine of its own. */
    memset(&f, 0, sizeof(f));
    f.bad_page = -1;
    pair_start(&p);
    responder_srq(&p, &f);
    pair_stop(&p);
}

/*
 * A requester's own ODP memory: SEND data it sends, READ responses it
 * receives; and a peer's READ from an ODP MR, which the responder answers
 * page by page as they are mapped.
 */
static void test_requester(void)
{
    odp_case(UZ_WR_SEND, 0, 3 * 4096 + 7, 4);
    odp_case(UZ_WR_RDMA_READ, 0, PAGES * 4096, 5);
    odp_case(UZ_WR_RDMA_READ, 1, PAGES * 4096, 6);
}

/*
 * A driver slow to serve a fault costs the QP no retry: a READ whose
 * response met an absent page waits for seconds of ACK timeouts, then
 * completes once the page is mapped.  An ODP MR deregistered while a QP
 * waits for its page fails that QP's WQE instead of leaving it waiting.
 */
static void test_slow_and_gone(void)
{
    Faults f = { .bad_page = -1 };
    g_autofree uint8_t *data = g_malloc(4096);
    struct uz_cmd_obj d;
    UzSge s;
    UzWr wr;
    Pair p;
    struct uz_cqe c;
    struct uz_eqe eqe;
    int i, pending = -1;

    pair_start(&p);
    f.mr = uz_mr_reg_odp(&p.n[0], 1);
    uz_pattern(data, 4096, 7);
    uz_mr_write(p.mb, 0, data, 4096);
    s = uz_mr_sge(f.mr, 0, 4096);
    wr = (UzWr) { .wr_id = 0x5105, .opcode = UZ_WR_RDMA_READ,
                  .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1,
                  .remote_addr = uz_mr_va(p.mb, 0), .rkey = p.mb->key };
    uz_post_send(p.qa, &wr);
    /* 5 s of 67 ms ACK timeouts, retry_cnt 7: the fault is not served. */
    for (i = 0; i < 50; i++) {
        qtest_clock_step(p.m.qs->qts, 100 * MS);
        while (uz_eq_next(&p.n[0].d, &p.n[0].async_eq, &eqe)) {
            uz_ring(&p.n[0].d, p.n[0].async_eq.db, p.n[0].async_eq.ci);
            g_assert_cmpint(eqe.type, ==, UZ_EQE_PAGE_FAULT);
            pending = le32_to_cpu(eqe.data);
        }
        g_assert(!uz_cq_poll(p.qa->scq, &c));
    }
    g_assert_cmpint(pending, ==, 0);
    uz_odp_serve(f.mr, 0, false);
    wait_serving(p.qa->scq, &c, &f);
    uz_cqe_expect(&c, 0x5105, UZ_WC_RDMA_READ, UZ_WC_STATUS_SUCCESS, 0,
                  p.qa->qpn);
    uz_assert_mr(f.mr, 0, data, 4096, "the READ's data");
    pair_stop(&p);

    pair_start(&p);
    f.mr = uz_mr_reg_odp(&p.n[0], 1);
    s = uz_mr_sge(f.mr, 0, 64);
    wr = (UzWr) { .wr_id = 0x5106, .opcode = UZ_WR_RDMA_WRITE,
                  .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1,
                  .remote_addr = uz_mr_va(p.mb, 0), .rkey = p.mb->key };
    uz_post_send(p.qa, &wr);
    uz_event_wait(&p.n[0], &p.n[0].async_eq, UZ_EQE_PAGE_FAULT, f.mr->key);
    d = (struct uz_cmd_obj) {
        .handle = cpu_to_le32(f.mr->key),
        .uctx = cpu_to_le32(p.n[0].uctx),
    };
    g_assert_cmpint(uz_cmd(&p.n[0], UZ_CMD_DEREG_MR, &d, sizeof(d), NULL),
                    ==, UZ_CMD_OK);
    uz_sq_err(p.qa, 0x5106, UZ_WC_RDMA_WRITE, UZ_WC_STATUS_LOC_PROT_ERR,
              UZ_VERR_BAD_LKEY);
    pair_stop(&p);
}

/*
 * A page the driver cannot map (UZ_PTE_ERROR) fails the access: a remote
 * access error for a peer, a local protection error for the QP's own
 * data; the commands refuse what ODP cannot be.
 */
static void test_bad(void)
{
    Faults f = { .bad_page = 1 };
    struct uz_cmd_reg_mr c = { 0 };
    struct uz_cmd_rereg_mr rr;
    struct uz_cqe cqe;
    UzMr stale;
    UzSge s;
    UzWr wr;
    Pair p;

    pair_start(&p);
    f.mr = uz_mr_reg_odp(&p.n[1], PAGES);
    s = uz_mr_sge(p.ma, 0, 2 * 4096);
    wr = (UzWr) { .wr_id = 0xbad, .opcode = UZ_WR_RDMA_WRITE,
                  .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1,
                  .remote_addr = uz_mr_va(f.mr, 0), .rkey = f.mr->key };
    uz_post_send(p.qa, &wr);
    wait_serving(p.qa->scq, &cqe, &f);
    g_assert_cmpint(cqe.status, ==, UZ_WC_STATUS_REM_ACCESS_ERR);
    pair_stop(&p);

    f = (Faults) { .bad_page = 0 };
    pair_start(&p);
    f.mr = uz_mr_reg_odp(&p.n[0], PAGES);
    s = uz_mr_sge(f.mr, 0, 64);
    wr = (UzWr) { .wr_id = 0xbad1, .opcode = UZ_WR_RDMA_WRITE,
                  .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1,
                  .remote_addr = uz_mr_va(p.mb, 0), .rkey = p.mb->key };
    uz_post_send(p.qa, &wr);
    wait_serving(p.qa->scq, &cqe, &f);
    g_assert_cmpint(cqe.status, ==, UZ_WC_STATUS_LOC_PROT_ERR);
    g_assert_cmpint(cqe.vendor_err, ==, UZ_VERR_ACCESS);

    /* ODP with DMA or fast-reg; REREG of an ODP MR; resume of another. */
    c = (struct uz_cmd_reg_mr) {
        .pdn = cpu_to_le32(p.n[0].pdn), .npages = cpu_to_le32(1),
        .flags = UZ_MR_F_ODP | UZ_MR_F_DMA,
    };
    g_assert_cmpint(uz_cmd(&p.n[0], UZ_CMD_REG_MR, &c, sizeof(c), NULL), ==,
                    UZ_CMD_BAD_PARAM);
    c.flags = UZ_MR_F_ODP | UZ_MR_F_FAST;
    g_assert_cmpint(uz_cmd(&p.n[0], UZ_CMD_REG_MR, &c, sizeof(c), NULL), ==,
                    UZ_CMD_BAD_PARAM);
    rr = (struct uz_cmd_rereg_mr) {
        .change = UZ_REREG_ACCESS, .access = cpu_to_le32(UZ_ACCESS_ALL),
        .uctx = cpu_to_le32(p.n[0].uctx), .key = cpu_to_le32(f.mr->key),
    };
    g_assert_cmpint(uz_cmd(&p.n[0], UZ_CMD_REREG_MR, &rr, sizeof(rr), NULL),
                    ==, UZ_CMD_BAD_PARAM);
    g_assert_cmpint(uz_page_resume(p.ma), ==, UZ_CMD_BAD_HANDLE);
    stale = *f.mr;
    stale.key ^= 1;
    g_assert_cmpint(uz_page_resume(&stale), ==, UZ_CMD_BAD_HANDLE);
    pair_stop(&p);
}

/* Post @wr on qa, serving @f's faults; its CQE must have @status. */
static void odp_post_expect(Pair *p, UzWr *wr, Faults *f, uint8_t status)
{
    struct uz_cqe c;

    uz_post_send(p->qa, wr);
    wait_serving(p->qa->scq, &c, f);
    g_assert_cmphex(c.wr_id, ==, wr->wr_id);
    g_assert_cmpint(c.status, ==, status);
}

/*
 * What the responder reads or writes besides a WRITE's payload: an
 * atomic's operand and a WRITE with immediate's data fault and complete
 * (the immediate's receive WQE kept through the RNR NAKs); a page marked
 * unmappable under a READ answer or an atomic operand is a remote access
 * error, under a SEND's receive buffer a remote operational error and a
 * failed receive.  And a PTE that names the device's own doorbell BAR:
 * the access fails, nothing rings, the device goes on.
 */
static void test_more(void)
{
    Faults f = { .bad_page = -1 };
    uint64_t old = 0x1122334455667788ull, got;
    struct uz_cqe c;
    UzSge s, r;
    UzWr wr;
    Pair p;
    UzQp *a, *b;

    pair_start(&p);
    f.mr = uz_mr_reg_odp(&p.n[1], PAGES);
    uz_mr_write(f.mr, 2 * 4096 + 8, &old, 8);
    s = uz_mr_sge(p.ma, 0, 8);
    wr = (UzWr) { .wr_id = 0xa7, .opcode = UZ_WR_ATOMIC_FETCH_ADD,
                  .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1,
                  .remote_addr = uz_mr_va(f.mr, 2 * 4096 + 8),
                  .rkey = f.mr->key, .compare_add = 5 };
    odp_post_expect(&p, &wr, &f, UZ_WC_STATUS_SUCCESS);
    g_assert_cmpint(f.seen, ==, 1);
    uz_mr_read(p.ma, 0, &got, 8);
    g_assert_cmphex(got, ==, old);
    uz_mr_read(f.mr, 2 * 4096 + 8, &got, 8);
    g_assert_cmphex(got, ==, old + 5);

    r = uz_mr_sge(p.mb, 0, 0);
    uz_post_recv(p.qb, 0x1e, &r, 0);
    s = uz_mr_sge(p.ma, 0, 2 * 4096);
    wr = (UzWr) { .wr_id = 0x1d, .opcode = UZ_WR_RDMA_WRITE_IMM,
                  .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1,
                  .remote_addr = uz_mr_va(f.mr, 0), .rkey = f.mr->key,
                  .imm = 0xfeed };
    odp_post_expect(&p, &wr, &f, UZ_WC_STATUS_SUCCESS);
    g_assert_cmpint(f.seen, ==, 3);
    wait_serving(p.qb->rcq, &c, &f);
    uz_cqe_expect(&c, 0x1e, UZ_WC_RECV_RDMA_WITH_IMM, UZ_WC_STATUS_SUCCESS,
                  0, p.qb->qpn);
    g_assert_cmphex(c.wc_flags, ==, UZ_WC_F_IMM);
    g_assert_cmphex(c.imm_data, ==, 0xfeed);
    g_assert(!uz_cq_poll(p.qb->rcq, &c));
    pair_stop(&p);

    /* Unmappable pages under what the responder reads. */
    f = (Faults) { .bad_page = 1 };
    pair_start(&p);
    f.mr = uz_mr_reg_odp(&p.n[1], PAGES);
    s = uz_mr_sge(p.ma, 0, 4096);
    wr = (UzWr) { .wr_id = 0xbad2, .opcode = UZ_WR_RDMA_READ,
                  .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1,
                  .remote_addr = uz_mr_va(f.mr, 4096 - 8), .rkey = f.mr->key };
    odp_post_expect(&p, &wr, &f, UZ_WC_STATUS_REM_ACCESS_ERR);
    pair_fresh_qps(&p, &a, &b);
    p.qa = a;
    p.qb = b;
    s = uz_mr_sge(p.ma, 0, 8);
    wr = (UzWr) { .wr_id = 0xbad3, .opcode = UZ_WR_ATOMIC_CMP_SWP,
                  .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1,
                  .remote_addr = uz_mr_va(f.mr, 4096), .rkey = f.mr->key,
                  .compare_add = 0, .swap = 1 };
    odp_post_expect(&p, &wr, &f, UZ_WC_STATUS_REM_ACCESS_ERR);
    pair_fresh_qps(&p, &a, &b);
    p.qa = a;
    p.qb = b;
    r = uz_mr_sge(f.mr, 0, 2 * 4096);
    uz_post_recv(p.qb, 0xbad5, &r, 1);
    s = uz_mr_sge(p.ma, 0, 2 * 4096);
    wr = (UzWr) { .wr_id = 0xbad4, .opcode = UZ_WR_SEND,
                  .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1 };
    odp_post_expect(&p, &wr, &f, UZ_WC_STATUS_REM_OP_ERR);
    wait_serving(p.qb->rcq, &c, &f);
    uz_cqe_expect(&c, 0xbad5, UZ_WC_RECV, UZ_WC_STATUS_LOC_PROT_ERR,
                  UZ_VERR_ACCESS, p.qb->qpn);

    /* A PTE at the device's own BAR 4: page 3 names the doorbells. */
    pair_fresh_qps(&p, &a, &b);
    p.qa = a;
    p.qb = b;
    qtest_writeq(p.n[1].d.qts, f.mr->pbl + 3 * 8,
                 p.n[1].d.db.addr | UZ_PTE_PRESENT);
    s = uz_mr_sge(p.ma, 0, 64);
    memset(&got, 0xff, sizeof(got));
    uz_mr_write(p.ma, 0, &got, 8);
    wr = (UzWr) { .wr_id = 0xba4, .opcode = UZ_WR_RDMA_WRITE,
                  .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1,
                  .remote_addr = uz_mr_va(f.mr, 3 * 4096), .rkey = f.mr->key };
    uz_post_send(p.qa, &wr);
    uz_cq_wait_clock(p.qa->scq, &c, STEP_NS, 100);
    g_assert_cmphex(c.wr_id, ==, 0xba4);
    /* A DMA the bus refused: remote operational error, as for any MR. */
    g_assert_cmpint(c.status, ==, UZ_WC_STATUS_REM_OP_ERR);
    pair_fresh_qps(&p, &a, &b);
    p.qa = a;
    p.qb = b;
    exchange(&p, UZ_WR_SEND, 3000);
    exchange(&p, UZ_WR_RDMA_WRITE, 3000);
    pair_stop(&p);
}

#define STORM_QPS   4

/*
 * A fault storm into a full async EQ: four QPs WRITE into four ODP MRs at
 * once, and the responder's EQ holds two events, so faults are lost
 * (eq_overflows).  A lost fault is no fault outstanding: the requester's
 * next try after the RNR NAK raises it again, and every WRITE lands once
 * its page is served.
 */
static void test_storm_full_eq(void)
{
    g_autofree uint8_t *data = g_malloc(4096);
    UzQp *a[STORM_QPS], *b[STORM_QPS];
    UzMr *mr[STORM_QPS], *src;
    UzRcOpts o = UZ_RC_OPTS_DEFAULT;
    int i, k, done = 0, faults = 0;
    bool ok[STORM_QPS] = { false };
    struct uz_eqe eqe;
    struct uz_cqe c;
    UzMachine m;
    UzNode n[2];

    uz_machine_start(&m, 2, NULL);
    uz_node_start(&n[0], &m, 0);
    uz_node_start_eq(&n[1], &m, 1, 1);
    src = uz_mr_reg(&n[0], STORM_QPS * 4096, UZ_ACCESS_ALL);
    for (i = 0; i < STORM_QPS; i++) {
        a[i] = uz_qp_create(&n[0], UZ_QPT_RC, NULL, NULL, NULL, 0);
        b[i] = uz_qp_create(&n[1], UZ_QPT_RC, NULL, NULL, NULL, 0);
        uz_rc_connect(a[i], b[i], &o);
        mr[i] = uz_mr_reg_odp(&n[1], 1);
        uz_pattern(data, 4096, 40 + i);
        uz_mr_write(src, i * 4096, data, 4096);
    }
    for (i = 0; i < STORM_QPS; i++) {
        UzSge s = uz_mr_sge(src, i * 4096, 4096);
        UzWr wr = { .wr_id = 0x5700 + i, .opcode = UZ_WR_RDMA_WRITE,
                    .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1,
                    .remote_addr = mr[i]->iova, .rkey = mr[i]->key };

        uz_post_send(a[i], &wr);
    }
    for (k = 0; k < 2000 && done < STORM_QPS; k++) {
        while (uz_eq_next(&n[1].d, &n[1].async_eq, &eqe)) {
            uz_ring(&n[1].d, n[1].async_eq.db, n[1].async_eq.ci);
            if (eqe.type == UZ_EQE_EQ_OVERFLOW) {
                continue;
            }
            g_assert_cmpint(eqe.type, ==, UZ_EQE_PAGE_FAULT);
            for (i = 0; i < STORM_QPS; i++) {
                if (mr[i]->key == le32_to_cpu(eqe.handle)) {
                    uz_odp_serve(mr[i], le32_to_cpu(eqe.data), false);
                    faults++;
                }
            }
        }
        for (i = 0; i < STORM_QPS; i++) {
            if (!ok[i] && uz_cq_poll(a[i]->scq, &c)) {
                uz_cqe_expect(&c, 0x5700 + i, UZ_WC_RDMA_WRITE,
                              UZ_WC_STATUS_SUCCESS, 0, a[i]->qpn);
                ok[i] = true;
                done++;
            }
        }
        qtest_clock_step(n[0].d.qts, MS);
    }
    g_assert_cmpint(done, ==, STORM_QPS);
    g_assert_cmpuint(uz_counter(&m, 1, "eq_overflows"), >, 0);
    g_assert_cmpint(faults, >=, STORM_QPS);
    for (i = 0; i < STORM_QPS; i++) {
        uz_pattern(data, 4096, 40 + i);
        uz_assert_mr(mr[i], 0, data, 4096, "the WRITE of the storm");
        g_assert_cmpint(uz_qp_state(b[i]), ==, UZ_QPS_RTS);
    }
    uz_node_stop(&n[0]);
    uz_node_stop(&n[1]);
    uz_machine_stop(&m);
}

/*
 * Implicit ODP (spec 8.10.5): one MR for the whole address space, its
 * chunks served by child ODP MRs the "driver" registers on first touch.
 */
typedef struct Imr {
    UzNode *n;
    uint32_t key;
    uint64_t table;             /* UZ_IMR_ENTRIES entries */
    UzMr *child[8];             /* of chunks 0..7, as created */
    uint64_t page[8][4];        /* the guest pages mapped into them */
    int faults;
} Imr;

static uint8_t imr_reg_try(UzNode *n, uint64_t iova, uint64_t len,
                           uint8_t shift, uint32_t entries, uint8_t flags,
                           uint64_t table, uint32_t *key)
{
    struct uz_cmd_reg_mr c = {
        .iova = cpu_to_le64(iova), .length = cpu_to_le64(len),
        .pbl_addr = cpu_to_le64(table), .npages = cpu_to_le32(entries),
        .pdn = cpu_to_le32(n->pdn), .access = cpu_to_le32(UZ_ACCESS_ALL),
        .page_shift = shift, .key = n->next_key++, .flags = flags,
        .uctx = cpu_to_le32(n->uctx),
    };
    struct uz_admin_cqe cqe;
    uint8_t st = uz_cmd(n, UZ_CMD_REG_MR, &c, sizeof(c), &cqe);

    *key = le32_to_cpu(cqe.out0);
    return st;
}

static void imr_start(Imr *m, UzNode *n)
{
    memset(m, 0, sizeof(*m));
    m->n = n;
    m->table = uz_alloc(&n->d, UZ_IMR_ENTRIES * 8);
    g_assert_cmpint(imr_reg_try(n, 0, UINT64_MAX, UZ_IMR_SHIFT,
                                UZ_IMR_ENTRIES, UZ_MR_F_IMPLICIT, m->table,
                                &m->key), ==, UZ_CMD_OK);
}

/* A child ODP MR of chunk @chunk, its 2^18-entry page list empty. */
static UzMr *imr_child(Imr *m, uint64_t chunk)
{
    UzNode *n = m->n;
    UzMr *mr = uz_own(n, sizeof(*mr));
    uint32_t npages = 1u << (UZ_IMR_SHIFT - UZ_PAGE_SHIFT);

    *mr = (UzMr) {
        .n = n, .pdn = n->pdn, .access = UZ_ACCESS_ALL, .odp = true,
        .iova = chunk << UZ_IMR_SHIFT, .len = 1ull << UZ_IMR_SHIFT,
        .npages = npages, .pbl = uz_alloc(&n->d, npages * 8),
    };
    g_assert_cmpint(uz_mr_reg_cmd(mr, n->next_key++), ==, UZ_CMD_OK);
    return mr;
}

/* Serve @m's faults as a driver would: children, then their pages. */
static void imr_serve(Imr *m)
{
    UzNode *n = m->n;
    struct uz_eqe eqe;
    UzMr im = { .n = n, .key = m->key };
    int c;

    while (uz_eq_next(&n->d, &n->async_eq, &eqe)) {
        uint32_t key = le32_to_cpu(eqe.handle), data = le32_to_cpu(eqe.data);

        uz_ring(&n->d, n->async_eq.db, n->async_eq.ci);
        if (eqe.type != UZ_EQE_PAGE_FAULT) {
            continue;           /* the fresh QPs' own events */
        }
        m->faults++;
        if (key == m->key) {
            g_assert_cmpuint(data, <, 8);
            g_assert_null(m->child[data]);
            m->child[data] = imr_child(m, data);
            qtest_writeq(n->d.qts, m->table + data * 8,
                         UZ_IMR_ENTRY(m->child[data]->key));
            g_assert_cmpint(uz_page_resume(&im), ==, UZ_CMD_OK);
            continue;
        }
        c = 0;
        while (c < 8 && (!m->child[c] || m->child[c]->key != key)) {
            c++;
        }
        g_assert_cmpint(c, <, 8);
        g_assert_cmpuint(data, <, 4);
        m->page[c][data] = uz_alloc_pages(n, 1);
        qtest_writeq(n->d.qts, m->child[c]->pbl + data * 8,
                     m->page[c][data] | UZ_PTE_PRESENT);
        g_assert_cmpint(uz_page_resume(m->child[c]), ==, UZ_CMD_OK);
    }
}

static void imr_wait(Imr *m, UzCq *cq, struct uz_cqe *c)
{
    int i;

    for (i = 0; i < 2000; i++) {
        imr_serve(m);
        if (uz_cq_poll(cq, c)) {
            return;
        }
        qtest_clock_step(cq->n->d.qts, MS);
    }
    g_error("no completion while serving %d faults", m->faults);
}

/* @op of @len bytes at @va through the implicit MR, from a fresh qa. */
static uint8_t imr_rdma(Pair *p, Imr *m, uint8_t op, uint64_t va,
                        uint32_t len)
{
    UzSge s = uz_mr_sge(p->ma, 0, len);
    UzWr wr = { .wr_id = 0x1a00 + op, .opcode = op,
                .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1,
                .remote_addr = va, .rkey = m->key };
    struct uz_cqe c;
    UzQp *a, *b;

    pair_fresh_qps(p, &a, &b);
    uz_post_send(a, &wr);
    imr_wait(m, a->scq, &c);
    g_assert_cmphex(c.wr_id, ==, wr.wr_id);
    return c.status;
}

/*
 * A WRITE across a page boundary of a chunk never touched: the implicit
 * MR faults for its chunk, the child for each page, and the data lands
 * in the pages served; a READ brings it back.  A chunk marked bad, an
 * entry naming an MR that is no child of its chunk, and an address past
 * the table fail as a remote access error.  The shape of an implicit MR
 * is checked, and it cannot be re-registered.
 */
static void test_implicit(void)
{
    const uint64_t va = (5ull << UZ_IMR_SHIFT) + UZ_PAGE_SIZE - 100;
    g_autofree uint8_t *data = g_malloc(MSG_LEN);
    g_autofree uint8_t *got = g_malloc(MSG_LEN);
    uint64_t faults = 0;
    struct uz_cmd_rereg_mr rr;
    uint32_t key;
    Imr m;
    Pair p;

    pair_start(&p);
    g_assert(uz_rd(&p.n[1].d, UZ_REG_CAPS) & UZ_CAP_ODP_IMPLICIT);
    imr_start(&m, &p.n[1]);

    uz_pattern(data, MSG_LEN, 0x1b);
    uz_mr_write(p.ma, 0, data, MSG_LEN);
    faults = uz_counter(&p.m, 1, "xlat_faults");
    g_assert_cmpint(imr_rdma(&p, &m, UZ_WR_RDMA_WRITE, va, MSG_LEN), ==,
                    UZ_WC_STATUS_SUCCESS);
    /* The chunk, then pages 0 and 1 of its child. */
    g_assert_cmpint(m.faults, ==, 3);
    g_assert_cmpuint(uz_counter(&p.m, 1, "xlat_faults"), >=, faults + 3);
    qtest_memread(p.m.qs->qts, m.page[5][0] + UZ_PAGE_SIZE - 100, got, 100);
    qtest_memread(p.m.qs->qts, m.page[5][1], got + 100, MSG_LEN - 100);
    g_assert(!memcmp(got, data, MSG_LEN));

    uz_mr_fill(p.ma, 0, 0, MSG_LEN);
    g_assert_cmpint(imr_rdma(&p, &m, UZ_WR_RDMA_READ, va, MSG_LEN), ==,
                    UZ_WC_STATUS_SUCCESS);
    uz_assert_mr(p.ma, 0, data, MSG_LEN, "READ through the implicit MR");
    g_assert_cmpint(m.faults, ==, 3);

    /* A bad chunk, a child of another chunk, a plain MR, past 2^47. */
    qtest_writeq(p.m.qs->qts, m.table + 6 * 8, UZ_PTE_ERROR);
    g_assert_cmpint(imr_rdma(&p, &m, UZ_WR_RDMA_WRITE, 6ull << UZ_IMR_SHIFT,
                             64), ==, UZ_WC_STATUS_REM_ACCESS_ERR);
    qtest_writeq(p.m.qs->qts, m.table + 7 * 8,
                 UZ_IMR_ENTRY(m.child[5]->key));
    g_assert_cmpint(imr_rdma(&p, &m, UZ_WR_RDMA_WRITE, 7ull << UZ_IMR_SHIFT,
                             64), ==, UZ_WC_STATUS_REM_ACCESS_ERR);
    qtest_writeq(p.m.qs->qts, m.table + 7 * 8, UZ_IMR_ENTRY(p.mb->key));
    g_assert_cmpint(imr_rdma(&p, &m, UZ_WR_RDMA_WRITE, 7ull << UZ_IMR_SHIFT,
                             64), ==, UZ_WC_STATUS_REM_ACCESS_ERR);
    g_assert_cmpint(imr_rdma(&p, &m, UZ_WR_RDMA_WRITE, 1ull << 47, 64), ==,
                    UZ_WC_STATUS_REM_ACCESS_ERR);
    g_assert_cmpint(m.faults, ==, 3);

    /* Its shape, and no rereg. */
    g_assert_cmpint(imr_reg_try(&p.n[1], 4096, UINT64_MAX, UZ_IMR_SHIFT,
                                UZ_IMR_ENTRIES, UZ_MR_F_IMPLICIT, m.table,
                                &key), ==, UZ_CMD_BAD_PARAM);
    g_assert_cmpint(imr_reg_try(&p.n[1], 0, 1ull << 40, UZ_IMR_SHIFT,
                                UZ_IMR_ENTRIES, UZ_MR_F_IMPLICIT, m.table,
                                &key), ==, UZ_CMD_BAD_PARAM);
    g_assert_cmpint(imr_reg_try(&p.n[1], 0, UINT64_MAX, 12, UZ_IMR_ENTRIES,
                                UZ_MR_F_IMPLICIT, m.table, &key), ==,
                    UZ_CMD_BAD_PARAM);
    g_assert_cmpint(imr_reg_try(&p.n[1], 0, UINT64_MAX, UZ_IMR_SHIFT, 100,
                                UZ_MR_F_IMPLICIT, m.table, &key), ==,
                    UZ_CMD_BAD_PARAM);
    g_assert_cmpint(imr_reg_try(&p.n[1], 0, UINT64_MAX, UZ_IMR_SHIFT,
                                UZ_IMR_ENTRIES,
                                UZ_MR_F_IMPLICIT | UZ_MR_F_ODP, m.table,
                                &key), ==, UZ_CMD_BAD_PARAM);
    g_assert_cmpint(imr_reg_try(&p.n[1], 0, UINT64_MAX, UZ_IMR_SHIFT,
                                UZ_IMR_ENTRIES, UZ_MR_F_IMPLICIT,
                                0xfff00000000ull, &key), ==,
                    UZ_CMD_BAD_ADDR);
    rr = (struct uz_cmd_rereg_mr) {
        .change = UZ_REREG_ACCESS, .access = cpu_to_le32(UZ_ACCESS_ALL),
        .key = cpu_to_le32(m.key),
    };
    g_assert_cmpint(uz_cmd(&p.n[1], UZ_CMD_REREG_MR, &rr, sizeof(rr), NULL),
                    ==, UZ_CMD_BAD_PARAM);
    pair_stop(&p);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qtest_add_func("/uzura/odp/responder", test_responder);
    qtest_add_func("/uzura/odp/requester", test_requester);
    qtest_add_func("/uzura/odp/slow-and-gone", test_slow_and_gone);
    qtest_add_func("/uzura/odp/bad", test_bad);
    qtest_add_func("/uzura/odp/more", test_more);
    qtest_add_func("/uzura/odp/storm-full-eq", test_storm_full_eq);
    qtest_add_func("/uzura/odp/implicit", test_implicit);
    return g_test_run();
}
