/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The uzura qtests' helpers declared in uzura-verbs.h.
 */
#include "qemu/osdep.h"
#include "uzura-verbs.h"

void *uz_own(UzNode *n, size_t size)
{
    void *p = g_malloc0(size);

    g_ptr_array_add(n->owned, p);
    return p;
}

uint8_t uz_cmd(UzNode *n, uint8_t op, const void *args,
               size_t len, struct uz_admin_cqe *cqe)
{
    struct uz_admin_cmd cmd = { .opcode = op };

    g_assert(len <= sizeof(cmd.raw));
    if (len) {
        memcpy(cmd.raw, args, len);
    }
    return uz_admin(&n->d, &cmd, cqe);
}

void uz_query_device(UzNode *n, struct uz_device_attr *attr)
{
    struct uz_admin_cmd cmd = { .opcode = UZ_CMD_QUERY_DEVICE };
    uint64_t buf = uz_alloc(&n->d, sizeof(*attr));

    cmd.query_device.buf_addr = cpu_to_le64(buf);
    cmd.query_device.buf_len = cpu_to_le32(sizeof(*attr));
    g_assert_cmpint(uz_admin(&n->d, &cmd, NULL), ==, UZ_CMD_OK);
    qtest_memread(n->d.qts, buf, attr, sizeof(*attr));
}

uint32_t uz_pd_alloc(UzNode *n)
{
    struct uz_cmd_obj c = { .uctx = cpu_to_le32(n->uctx) };
    struct uz_admin_cqe cqe;

    g_assert_cmpint(uz_cmd(n, UZ_CMD_ALLOC_PD, &c, sizeof(c), &cqe), ==,
                    UZ_CMD_OK);
    return le32_to_cpu(cqe.out0);
}

void uz_node_mac(int idx, uint8_t *mac)
{
    static const uint8_t base[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x50 };

    memcpy(mac, base, 6);
    mac[5] += idx;
}

void uz_node_ip(int idx, uint8_t *ip)
{
    ip[0] = 10;
    ip[1] = 0;
    ip[2] = 0;
    ip[3] = idx + 1;
}

void uz_node_gid(int idx, uint8_t *gid)
{
    memset(gid, 0, 16);
    gid[10] = 0xff;
    gid[11] = 0xff;
    uz_node_ip(idx, gid + 12);
}

void uz_node_start_eq(UzNode *n, UzMachine *m, int idx,
                      uint32_t async_log)
{
    memset(n, 0, sizeof(*n));
    n->m = m;
    n->idx = idx;
    uz_dev_init(&n->d, m, idx);
    uz_admin_start(&n->d, 6);
    g_assert_cmpint(uz_create_eq(&n->d, &n->async_eq, async_log, 1,
                                 UZ_EQ_F_ASYNC), ==, UZ_CMD_OK);
    g_assert_cmpint(uz_create_eq(&n->d, &n->comp_eq, 8, 2, 0), ==,
                    UZ_CMD_OK);
    n->attr_buf = uz_alloc(&n->d, UZ_PAGE_SIZE);
    /* Distinct 64-bit iovas per node: a mix-up cannot go unnoticed. */
    n->next_iova = ((uint64_t)(idx + 1) << 36) + 0x10000000;
    n->next_key = 0x11 + 0x40 * idx;
    n->mrs = g_ptr_array_new();
    n->owned = g_ptr_array_new_with_free_func(g_free);
    n->pdn = uz_pd_alloc(n);
}

void uz_node_start(UzNode *n, UzMachine *m, int idx)
{
    uz_node_start_eq(n, m, idx, 10);
}

void uz_node_stop(UzNode *n)
{
    g_ptr_array_free(n->mrs, true);
    g_ptr_array_free(n->owned, true);
    uz_dev_fini(&n->d);
}

void uz_link_set(UzMachine *m, int nic, bool up)
{
    g_autofree char *path = g_strdup_printf("/machine/peripheral/uz%d", nic);

    qtest_qmp_assert_success(m->qs->qts, "{'execute': 'qom-set', "
                             "'arguments': {'path': %s, 'property': 'link', "
                             "'value': %i}}", path, up);
}

uint64_t uz_counter_wait(UzNode *n, const char *name,
                         uint64_t min)
{
    uint64_t val = 0;
    int i;

    for (i = 0; i < UZ_POLL_LIMIT / 100; i++) {
        val = uz_counter(n->m, n->idx, name);
        if (val >= min) {
            return val;
        }
        uz_poll_pause(&n->d);
    }
    g_error("uz%d: counter %s stays at %" PRIu64 ", below %" PRIu64,
            n->idx, name, val, min);
}

bool uz_event_seen(UzNode *n, UzEq *eq, uint8_t type,
                   uint32_t handle, int polls)
{
    struct uz_eqe eqe;
    int i;

    for (i = 0; i < polls; i++) {
        while (uz_eq_next(&n->d, eq, &eqe)) {
            uz_ring(&n->d, eq->db, eq->ci);
            if (eqe.type == type && le32_to_cpu(eqe.handle) == handle) {
                return true;
            }
            g_test_message("uz%d: EQ %u: event 0x%x handle %u", n->idx,
                           eq->eqn, eqe.type, le32_to_cpu(eqe.handle));
        }
        uz_poll_pause(&n->d);
    }
    return false;
}

void uz_event_wait(UzNode *n, UzEq *eq, uint8_t type,
                   uint32_t handle)
{
    if (!uz_event_seen(n, eq, type, handle, UZ_POLL_LIMIT)) {
        g_error("uz%d: no event 0x%x for handle %u", n->idx, type, handle);
    }
}

int uz_events_count(UzNode *n, UzEq *eq, uint8_t type,
                    uint32_t handle, int polls)
{
    struct uz_eqe eqe;
    int count = 0;
    int i;

    for (i = 0; i < polls; i++) {
        while (uz_eq_next(&n->d, eq, &eqe)) {
            uz_ring(&n->d, eq->db, eq->ci);
            if (eqe.type == type && le32_to_cpu(eqe.handle) == handle) {
                count++;
            } else {
                g_test_message("uz%d: EQ %u: event 0x%x handle %u", n->idx,
                               eq->eqn, eqe.type, le32_to_cpu(eqe.handle));
            }
        }
        uz_poll_pause(&n->d);
    }
    return count;
}

int uz_eq_drain(UzNode *n, UzEq *eq, uint8_t type)
{
    struct uz_eqe eqe;
    int count = 0;

    while (uz_eq_next(&n->d, eq, &eqe)) {
        uz_ring(&n->d, eq->db, eq->ci);
        count += eqe.type == type;
    }
    return count;
}

uint64_t uz_alloc_pages(UzNode *n, uint32_t npages)
{
    uint64_t addr = uz_alloc(&n->d, (size_t)npages * UZ_PAGE_SIZE);

    g_assert_cmphex(addr & UZ_PAGE_MASK, ==, 0);
    return addr;
}

uint64_t uz_pbl_put(UzNode *n, const uint64_t *pages,
                    uint32_t npages)
{
    g_autofree uint64_t *le = g_new(uint64_t, npages);
    uint64_t list = uz_alloc(&n->d, (size_t)npages * sizeof(uint64_t));
    uint32_t k;

    for (k = 0; k < npages; k++) {
        le[k] = cpu_to_le64(pages[k]);
    }
    qtest_memwrite(n->d.qts, list, le, (size_t)npages * sizeof(uint64_t));
    return list;
}

UzCq *uz_cq_create_flags(UzNode *n, uint32_t log_depth,
                         uint8_t flags)
{
    UzCq *cq = uz_own(n, sizeof(*cq));
    struct uz_cmd_create_cq c = { .uctx = cpu_to_le32(n->uctx) };
    struct uz_admin_cqe cqe;
    uint64_t bytes;
    uint32_t i;

    cq->n = n;
    cq->log_depth = log_depth;
    cq->cqe_size = flags & UZ_CQF_TIMESTAMP ? sizeof(struct uz_cqe_ts) :
                                              sizeof(struct uz_cqe);
    bytes = (uint64_t)cq->cqe_size << log_depth;
    if (flags & UZ_CQF_PAGE_LIST) {
        uint32_t npages = MAX(1, bytes / UZ_PAGE_SIZE);

        cq->pages = uz_own(n, npages * sizeof(uint64_t));
        for (i = npages; i-- > 0;) {
            cq->pages[i] = uz_alloc_pages(n, 1);
        }
        cq->list = uz_pbl_put(n, cq->pages, npages);
        c.ring_addr = cpu_to_le64(cq->list);
    } else {
        cq->ring = uz_alloc(&n->d, bytes);
        c.ring_addr = cpu_to_le64(cq->ring);
    }
    c.eqn = cpu_to_le32(n->comp_eq.eqn);
    c.log_depth = log_depth;
    c.flags = flags;
    g_assert_cmpint(uz_cmd(n, UZ_CMD_CREATE_CQ, &c, sizeof(c), &cqe), ==,
                    UZ_CMD_OK);
    cq->cqn = le32_to_cpu(cqe.out0);
    cq->db = le32_to_cpu(cqe.out1);
    return cq;
}

UzCq *uz_cq_create(UzNode *n, uint32_t log_depth)
{
    return uz_cq_create_flags(n, log_depth, 0);
}

UzCq *uz_cq_create_paged(UzNode *n, uint32_t log_depth)
{
    return uz_cq_create_flags(n, log_depth, UZ_CQF_PAGE_LIST);
}

uint64_t uz_cq_entry(UzCq *cq, uint32_t pos)
{
    uint64_t off = (uint64_t)pos * cq->cqe_size;

    if (!cq->pages) {
        return cq->ring + off;
    }
    return cq->pages[off / UZ_PAGE_SIZE] + off % UZ_PAGE_SIZE;
}

uint64_t uz_cq_slot(UzCq *cq, uint32_t pos)
{
    return uz_cq_entry(cq, pos) + cq->cqe_size - sizeof(struct uz_cqe);
}

uint8_t uz_cq_resize_to(UzCq *cq, uint32_t log_depth,
                        bool paged)
{
    UzCq nc = { .n = cq->n, .log_depth = log_depth,
                .cqe_size = cq->cqe_size };
    bool ts = cq->cqe_size == sizeof(struct uz_cqe_ts);
    struct uz_cmd_resize_cq c = {
        .cqn = cpu_to_le32(cq->cqn), .uctx = cpu_to_le32(cq->n->uctx),
        .ci = cpu_to_le32(cq->ci), .log_depth = log_depth,
        .flags = ts ? UZ_CQF_TIMESTAMP : 0,
    };
    uint64_t bytes = (uint64_t)cq->cqe_size << log_depth;
    struct uz_admin_cqe cqe;
    uint32_t n, i;
    uint8_t st;

    if (paged) {
        uint32_t npages = MAX(1, bytes / UZ_PAGE_SIZE);

        nc.pages = uz_own(cq->n, npages * sizeof(uint64_t));
        for (i = npages; i-- > 0;) {
            nc.pages[i] = uz_alloc_pages(cq->n, 1);
        }
        nc.list = uz_pbl_put(cq->n, nc.pages, npages);
        c.ring_addr = cpu_to_le64(nc.list);
        c.flags |= UZ_CQF_PAGE_LIST;
    } else {
        nc.ring = uz_alloc(&cq->n->d, bytes);
        c.ring_addr = cpu_to_le64(nc.ring);
    }
    st = uz_cmd(cq->n, UZ_CMD_RESIZE_CQ, &c, sizeof(c), &cqe);
    if (st != UZ_CMD_OK) {
        return st;
    }
    n = le32_to_cpu(cqe.out0);
    for (i = 0; i < n; i++) {
        uint32_t pos = (cq->ci + i) & ((1u << cq->log_depth) - 1);
        struct uz_cqe_ts e;

        /* The whole entry, its timestamp too. */
        qtest_memread(cq->n->d.qts, uz_cq_entry(cq, pos), &e, cq->cqe_size);
        ((uint8_t *)&e)[cq->cqe_size - 1] |= UZ_CQE_PHASE;
        qtest_memwrite(cq->n->d.qts, uz_cq_entry(&nc, i), &e, cq->cqe_size);
    }
    cq->ring = nc.ring;
    cq->pages = nc.pages;
    cq->list = nc.list;
    cq->log_depth = log_depth;
    cq->ci = 0;
    return st;
}

uint8_t uz_cq_resize(UzCq *cq, uint32_t log_depth)
{
    return uz_cq_resize_to(cq, log_depth, false);
}

void uz_cqe_to_host(struct uz_cqe *cqe)
{
    cqe->wr_id = le64_to_cpu(cqe->wr_id);
    cqe->byte_len = le32_to_cpu(cqe->byte_len);
    cqe->imm_data = (cqe->wc_flags & UZ_WC_F_INV) ?
                    le32_to_cpu(cqe->imm_data) : be32_to_cpu(cqe->imm_data);
    cqe->qpn = le32_to_cpu(cqe->qpn);
    cqe->src_qp = le32_to_cpu(cqe->src_qp);
    cqe->pkey_index = le16_to_cpu(cqe->pkey_index);
}

bool uz_cq_poll(UzCq *cq, struct uz_cqe *cqe)
{
    uint32_t pos = cq->ci & ((1u << cq->log_depth) - 1);
    uint8_t phase = ((cq->ci >> cq->log_depth) & 1) ? 0 : UZ_CQE_PHASE;

    qtest_memread(cq->n->d.qts, uz_cq_slot(cq, pos), cqe, sizeof(*cqe));
    if ((cqe->flags & UZ_CQE_PHASE) != phase) {
        return false;
    }
    if (cq->cqe_size == sizeof(struct uz_cqe_ts)) {
        cq->ts = qtest_readq(cq->n->d.qts, uz_cq_entry(cq, pos));
    }
    uz_cqe_to_host(cqe);
    cq->ci = (cq->ci + 1) & UZ_DB_CI_MASK;
    uz_ring(&cq->n->d, cq->db, cq->ci);
    return true;
}

int uz_cq_poll_many(UzCq *cq, struct uz_cqe *out, int max)
{
    uint32_t size = 1u << cq->log_depth;
    uint32_t pos = cq->ci & (size - 1);
    uint8_t phase = ((cq->ci >> cq->log_depth) & 1) ? 0 : UZ_CQE_PHASE;
    struct uz_cqe buf[32];
    int n = MIN(MIN(max, (int)ARRAY_SIZE(buf)), (int)(size - pos));
    int got;

    /* Entries with timestamps are not packed: one at a time. */
    if (cq->cqe_size != sizeof(struct uz_cqe)) {
        got = 0;
        while (got < max && uz_cq_poll(cq, &out[got])) {
            got++;
        }
        return got;
    }
    if (cq->pages) {
        /* One read stays within one page of a paged ring. */
        n = MIN(n, (int)((UZ_PAGE_SIZE - uz_cq_slot(cq, pos) % UZ_PAGE_SIZE) /
                         sizeof(buf[0])));
    }
    if (n <= 0) {
        return 0;
    }
    qtest_memread(cq->n->d.qts, uz_cq_slot(cq, pos), buf,
                  n * sizeof(buf[0]));
    for (got = 0; got < n; got++) {
        struct uz_cqe *c = &buf[got];

        if ((c->flags & UZ_CQE_PHASE) != phase) {
            break;
        }
        uz_cqe_to_host(c);
        out[got] = *c;
    }
    if (got) {
        cq->ci = (cq->ci + got) & UZ_DB_CI_MASK;
        uz_ring(&cq->n->d, cq->db, cq->ci);
    }
    return got;
}

void uz_cq_wait(UzCq *cq, struct uz_cqe *cqe)
{
    int i;

    for (i = 0; i < UZ_POLL_LIMIT; i++) {
        if (uz_cq_poll(cq, cqe)) {
            return;
        }
        uz_poll_pause(&cq->n->d);
    }
    g_error("uz%d: no CQE on CQ %u", cq->n->idx, cq->cqn);
}

void uz_cq_wait_clock(UzCq *cq, struct uz_cqe *cqe,
                      int64_t step_ns, int steps)
{
    int i, j;

    for (i = 0; i <= steps; i++) {
        for (j = 0; j < 64; j++) {
            if (uz_cq_poll(cq, cqe)) {
                return;
            }
            uz_poll_pause(&cq->n->d);
        }
        qtest_clock_step(cq->n->d.qts, step_ns);
    }
    g_error("uz%d: no CQE on CQ %u after %d clock steps", cq->n->idx,
            cq->cqn, steps);
}

void uz_cq_assert_empty(UzCq *cq, int polls)
{
    struct uz_cqe cqe;
    int i;

    for (i = 0; i < polls; i++) {
        if (uz_cq_poll(cq, &cqe)) {
            g_error("uz%d: unexpected CQE on CQ %u: wr_id 0x%" PRIx64
                    " opcode 0x%x status %u", cq->n->idx, cq->cqn,
                    cqe.wr_id, cqe.opcode, cqe.status);
        }
        uz_poll_pause(&cq->n->d);
    }
}

void uz_cq_arm(UzCq *cq, uint32_t how)
{
    uz_ring(&cq->n->d, cq->db, cq->ci | how);
}

void uz_cqe_expect(const struct uz_cqe *c, uint64_t wr_id,
                   uint8_t opcode, uint8_t status,
                   uint8_t vendor_err, uint32_t qpn)
{
    g_assert_cmphex(c->wr_id, ==, wr_id);
    g_assert_cmpint(c->status, ==, status);
    if (opcode != UZ_WC_ANY) {
        g_assert_cmphex(c->opcode, ==, opcode);
    }
    g_assert_cmphex(c->vendor_err, ==, vendor_err);
    g_assert_cmpint(c->qpn, ==, qpn);
    g_assert_cmpint(c->pkey_index, ==, 0);
    g_assert_cmpint(c->reserved_8, ==, 0);
    g_assert_cmphex(c->flags & ~UZ_CQE_PHASE, ==, 0);
}

void uz_expect_sq(const struct uz_cqe *c, uint64_t wr_id,
                  uint8_t op, UzQp *qp, uint32_t byte_len)
{
    uz_cqe_expect(c, wr_id, op, UZ_WC_STATUS_SUCCESS, UZ_VERR_NONE, qp->qpn);
    g_assert_cmpuint(c->byte_len, ==, byte_len);
    g_assert_cmphex(c->wc_flags, ==, 0);
    g_assert_cmphex(c->imm_data, ==, 0);
    g_assert_cmpuint(c->src_qp, ==, 0);
}

void uz_expect_rq(const struct uz_cqe *c, uint64_t wr_id,
                  uint8_t op, uint32_t qpn, uint32_t byte_len,
                  uint8_t wc_flags, uint32_t imm,
                  uint32_t src_qp)
{
    uz_cqe_expect(c, wr_id, op, UZ_WC_STATUS_SUCCESS, UZ_VERR_NONE, qpn);
    g_assert_cmpuint(c->byte_len, ==, byte_len);
    g_assert_cmphex(c->wc_flags, ==, wc_flags);
    g_assert_cmphex(c->imm_data, ==,
                    (wc_flags & (UZ_WC_F_IMM | UZ_WC_F_INV)) ? imm : 0);
    g_assert_cmpuint(c->src_qp, ==, src_qp);
}

void uz_expect_err(const struct uz_cqe *c, uint64_t wr_id,
                   uint8_t op, uint8_t status, uint8_t verr,
                   UzQp *qp)
{
    uz_cqe_expect(c, wr_id, op, status, verr, qp->qpn);
    g_assert_cmphex(c->wc_flags, ==, 0);
    g_assert_cmphex(c->imm_data, ==, 0);
    g_assert_cmpuint(c->src_qp, ==, 0);
}

void uz_sq_done(UzQp *qp, uint64_t wr_id, uint8_t op,
                uint32_t byte_len)
{
    struct uz_cqe c;

    uz_cq_wait(qp->scq, &c);
    uz_expect_sq(&c, wr_id, op, qp, byte_len);
}

void uz_rq_done(UzQp *qp, uint64_t wr_id, uint8_t op,
                uint32_t byte_len, uint8_t wc_flags,
                uint32_t imm)
{
    struct uz_cqe c;

    uz_cq_wait(qp->rcq, &c);
    uz_expect_rq(&c, wr_id, op, qp->qpn, byte_len, wc_flags, imm, 0);
}

void uz_sq_err(UzQp *qp, uint64_t wr_id, uint8_t op,
               uint8_t status, uint8_t verr)
{
    struct uz_cqe c;

    uz_cq_wait(qp->scq, &c);
    uz_expect_err(&c, wr_id, op, status, verr, qp);
}

void uz_rq_flushed(UzQp *qp, uint64_t wr_id)
{
    struct uz_cqe c;

    uz_cq_wait(qp->rcq, &c);
    uz_expect_err(&c, wr_id, UZ_WC_RECV, UZ_WC_STATUS_WR_FLUSH_ERR, 0, qp);
}

uint8_t uz_mr_reg_cmd(UzMr *mr, uint8_t key_byte)
{
    struct uz_cmd_reg_mr c = {
        .iova = cpu_to_le64(mr->iova), .length = cpu_to_le64(mr->len),
        .pbl_addr = cpu_to_le64(mr->pbl), .npages = cpu_to_le32(mr->npages),
        .pdn = cpu_to_le32(mr->pdn), .access = cpu_to_le32(mr->access),
        .page_shift = mr->page_shift ? mr->page_shift : UZ_PAGE_SHIFT,
        .key = key_byte, .uctx = cpu_to_le32(mr->n->uctx),
        .flags = mr->dma ? UZ_MR_F_DMA : mr->odp ? UZ_MR_F_ODP : 0,
    };
    struct uz_admin_cqe cqe;
    uint8_t st = uz_cmd(mr->n, UZ_CMD_REG_MR, &c, sizeof(c), &cqe);

    mr->key = le32_to_cpu(cqe.out0);
    return st;
}

UzMr *uz_mr_reg_list(UzNode *n, uint32_t pdn, uint64_t iova,
                     uint64_t len, uint8_t shift,
                     const uint64_t *pages, uint32_t npages,
                     uint32_t access)
{
    UzMr *mr = uz_own(n, sizeof(*mr));

    *mr = (UzMr) {
        .n = n, .pdn = pdn, .access = access, .iova = iova, .len = len,
        .npages = npages, .page_shift = shift,
        .pages = uz_own(n, npages * sizeof(uint64_t)),
    };
    memcpy(mr->pages, pages, npages * sizeof(uint64_t));
    mr->pbl = uz_pbl_put(n, pages, npages);
    g_assert_cmpint(uz_mr_reg_cmd(mr, n->next_key++), ==, UZ_CMD_OK);
    g_ptr_array_add(n->mrs, mr);
    return mr;
}

UzMr *uz_mr_reg_full(UzNode *n, uint32_t pdn, uint64_t iova,
                     uint64_t len, uint32_t access)
{
    uint64_t first = iova & ~UZ_PAGE_MASK;
    uint32_t npages = MAX(1, DIV_ROUND_UP(iova + len - first, UZ_PAGE_SIZE));
    uint64_t base = uz_alloc_pages(n, npages);
    g_autofree uint64_t *pages = g_new(uint64_t, npages);
    uint32_t k;

    for (k = 0; k < npages; k++) {
        pages[k] = base + (uint64_t)(npages - 1 - k) * UZ_PAGE_SIZE;
    }
    return uz_mr_reg_list(n, pdn, iova, len, UZ_PAGE_SHIFT, pages, npages,
                          access);
}

UzMr *uz_mr_reg_pd(UzNode *n, uint32_t pdn, uint64_t len,
                   uint32_t access)
{
    uint64_t iova = n->next_iova;

    /* Leave unmapped pages between MRs. */
    n->next_iova += ROUND_UP(len, UZ_PAGE_SIZE) + 16 * UZ_PAGE_SIZE;
    return uz_mr_reg_full(n, pdn, iova, len, access);
}

UzMr *uz_mr_reg(UzNode *n, uint64_t len, uint32_t access)
{
    return uz_mr_reg_pd(n, n->pdn, len, access);
}

UzMr *uz_mr_reg_odp(UzNode *n, uint32_t npages)
{
    UzMr *mr = uz_own(n, sizeof(*mr));
    uint64_t base = uz_alloc_pages(n, npages);
    uint32_t k;

    *mr = (UzMr) {
        .n = n, .pdn = n->pdn, .access = UZ_ACCESS_ALL, .odp = true,
        .iova = n->next_iova, .len = (uint64_t)npages * UZ_PAGE_SIZE,
        .npages = npages, .pages = uz_own(n, npages * sizeof(uint64_t)),
        .pbl = uz_alloc(&n->d, npages * 8),
    };
    n->next_iova += (npages + 16) * UZ_PAGE_SIZE;
    for (k = 0; k < npages; k++) {
        mr->pages[k] = base + (uint64_t)(npages - 1 - k) * UZ_PAGE_SIZE;
        qtest_writeq(n->d.qts, mr->pbl + k * 8, 0);
    }
    g_assert_cmpint(uz_mr_reg_cmd(mr, n->next_key++), ==, UZ_CMD_OK);
    g_ptr_array_add(n->mrs, mr);
    return mr;
}

uint8_t uz_page_resume(UzMr *mr)
{
    struct uz_cmd_obj c = {
        .handle = cpu_to_le32(mr->key), .uctx = cpu_to_le32(mr->n->uctx),
    };

    return uz_cmd(mr->n, UZ_CMD_PAGE_RESUME, &c, sizeof(c), NULL);
}

void uz_odp_serve(UzMr *mr, uint32_t k, bool bad)
{
    g_assert_cmpuint(k, <, mr->npages);
    qtest_writeq(mr->n->d.qts, mr->pbl + k * 8,
                 bad ? UZ_PTE_ERROR : mr->pages[k] | UZ_PTE_PRESENT);
    g_assert_cmpint(uz_page_resume(mr), ==, UZ_CMD_OK);
}

UzMr *uz_mr_reg_dma_at(UzNode *n, uint64_t addr, uint64_t len,
                       uint32_t access)
{
    UzMr *mr = uz_own(n, sizeof(*mr));

    *mr = (UzMr) {
        .n = n, .pdn = n->pdn, .access = access, .dma = true,
        .iova = addr, .len = len,
    };
    g_assert_cmpint(uz_mr_reg_cmd(mr, n->next_key++), ==, UZ_CMD_OK);
    g_ptr_array_add(n->mrs, mr);
    return mr;
}

UzMr *uz_mr_reg_dma(UzNode *n, uint64_t len, uint32_t access)
{
    return uz_mr_reg_dma_at(n, uz_alloc(&n->d, len), len, access);
}

UzMr *uz_mr_alloc_fast(UzNode *n, uint32_t pdn,
                       uint32_t max_pages)
{
    UzMr *mr = uz_own(n, sizeof(*mr));
    struct uz_cmd_reg_mr c = {
        .pdn = cpu_to_le32(pdn), .npages = cpu_to_le32(max_pages),
        .key = n->next_key++, .flags = UZ_MR_F_FAST,
        .uctx = cpu_to_le32(n->uctx),
    };
    struct uz_admin_cqe cqe;

    *mr = (UzMr) {
        .n = n, .pdn = pdn, .max_pages = max_pages,
        .pages = uz_own(n, max_pages * sizeof(uint64_t)),
        .pbl = uz_alloc(&n->d, max_pages * sizeof(uint64_t)),
    };
    c.pbl_addr = cpu_to_le64(mr->pbl);
    g_assert_cmpint(uz_cmd(n, UZ_CMD_REG_MR, &c, sizeof(c), &cqe), ==,
                    UZ_CMD_OK);
    mr->key = le32_to_cpu(cqe.out0);
    g_ptr_array_add(n->mrs, mr);
    return mr;
}

UzWr uz_fast_map(UzMr *mr, uint64_t iova, uint64_t len,
                 uint32_t access, uint8_t key_byte)
{
    uint64_t first = iova & ~UZ_PAGE_MASK;
    uint32_t npages = MAX(1, DIV_ROUND_UP(iova + len - first, UZ_PAGE_SIZE));
    uint64_t base = uz_alloc_pages(mr->n, npages);
    uint32_t k;

    g_assert_cmpint(npages, <=, mr->max_pages);
    for (k = 0; k < npages; k++) {
        mr->pages[k] = base + (uint64_t)(npages - 1 - k) * UZ_PAGE_SIZE;
        qtest_writeq(mr->n->d.qts, mr->pbl + k * 8, mr->pages[k]);
    }
    mr->npages = npages;
    mr->iova = iova;
    mr->len = len;
    mr->access = access;
    mr->key = (mr->key & ~0xffu) | key_byte;
    return (UzWr) {
        .wr_id = mr->key, .opcode = UZ_WR_REG_MR,
        .flags = UZ_WQE_F_SIGNALED, .rkey = mr->key, .remote_addr = iova,
        .reg_length = len, .reg_access = access, .reg_npages = npages,
    };
}

UzMr *uz_mr_by_key(UzNode *n, uint32_t key)
{
    guint i;

    for (i = 0; i < n->mrs->len; i++) {
        UzMr *mr = g_ptr_array_index(n->mrs, i);

        if (mr->key == key) {
            return mr;
        }
    }
    g_error("uz%d: no MR with key 0x%x", n->idx, key);
}

void uz_mr_set_page(UzMr *mr, uint32_t k, uint64_t gpa)
{
    g_assert(!mr->dma && k < mr->npages);
    mr->pages[k] = gpa;
    qtest_writeq(mr->n->d.qts, mr->pbl + k * sizeof(uint64_t), gpa);
}

uint64_t uz_mr_va(UzMr *mr, uint64_t off)
{
    return mr->iova + off;
}

UzSge uz_mr_sge(UzMr *mr, uint64_t off, uint32_t len)
{
    return (UzSge) { .addr = mr->iova + off, .length = len,
                     .lkey = mr->key };
}

uint64_t uz_mr_gpa(UzMr *mr, uint64_t off)
{
    uint64_t iova = mr->iova + off;

    g_assert(off <= mr->len);
    if (mr->dma) {
        return iova;
    }
    return mr->pages[(iova >> UZ_PAGE_SHIFT) - (mr->iova >> UZ_PAGE_SHIFT)] +
           (iova & UZ_PAGE_MASK);
}

size_t uz_mr_chunk(UzMr *mr, uint64_t off, size_t len)
{
    uint64_t iova = mr->iova + off;

    g_assert(off + len <= mr->len);
    return mr->dma ? len : MIN(len, UZ_PAGE_SIZE - (iova & UZ_PAGE_MASK));
}

void uz_mr_write(UzMr *mr, uint64_t off, const void *buf,
                 size_t len)
{
    const uint8_t *p = buf;
    size_t n;

    for (; len; off += n, p += n, len -= n) {
        n = uz_mr_chunk(mr, off, len);
        qtest_memwrite(mr->n->d.qts, uz_mr_gpa(mr, off), p, n);
    }
}

void uz_mr_read(UzMr *mr, uint64_t off, void *buf, size_t len)
{
    uint8_t *p = buf;
    size_t n;

    for (; len; off += n, p += n, len -= n) {
        n = uz_mr_chunk(mr, off, len);
        qtest_memread(mr->n->d.qts, uz_mr_gpa(mr, off), p, n);
    }
}

void uz_mr_fill(UzMr *mr, uint64_t off, uint8_t byte,
                size_t len)
{
    size_t n;

    for (; len; off += n, len -= n) {
        n = uz_mr_chunk(mr, off, len);
        qtest_memset(mr->n->d.qts, uz_mr_gpa(mr, off), byte, n);
    }
}

void uz_sges_read(UzNode *n, const UzSge *sge, int nsge,
                  uint8_t *out)
{
    int i;

    for (i = 0; i < nsge; i++) {
        UzMr *mr = uz_mr_by_key(n, sge[i].lkey);

        uz_mr_read(mr, sge[i].addr - mr->iova, out, sge[i].length);
        out += sge[i].length;
    }
}

void uz_sges_write(UzNode *n, const UzSge *sge, int nsge,
                   const uint8_t *data)
{
    int i;

    for (i = 0; i < nsge; i++) {
        UzMr *mr = uz_mr_by_key(n, sge[i].lkey);

        uz_mr_write(mr, sge[i].addr - mr->iova, data, sge[i].length);
        data += sge[i].length;
    }
}

void uz_pattern(uint8_t *buf, size_t len, uint32_t seed)
{
    uint32_t x = (seed * 2654435761u + 0x9e3779b9u) | 1;
    size_t i;

    for (i = 0; i < len; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        buf[i] = x >> 24;
    }
}

void uz_assert_bytes(const uint8_t *got, const uint8_t *want,
                     size_t len, const char *what)
{
    size_t i;

    if (!len || !memcmp(got, want, len)) {
        return;
    }
    for (i = 0; i < len; i++) {
        if (got[i] != want[i]) {
            g_error("%s: byte %zu of %zu is 0x%x, expected 0x%x", what, i,
                    len, got[i], want[i]);
        }
    }
}

void uz_assert_mr(UzMr *mr, uint64_t off, const uint8_t *want,
                  size_t len, const char *what)
{
    g_autofree uint8_t *got = g_malloc(len + 1);

    uz_mr_read(mr, off, got, len);
    uz_assert_bytes(got, want, len, what);
}

void uz_assert_mr_fill(UzMr *mr, uint64_t off, uint8_t byte,
                       size_t len, const char *what)
{
    g_autofree uint8_t *want = g_malloc(len + 1);

    memset(want, byte, len);
    uz_assert_mr(mr, off, want, len, what);
}

uint8_t uz_invalidate_xlat(UzNode *n, uint32_t key,
                           uint32_t uctx, uint64_t iova,
                           uint64_t len)
{
    struct uz_cmd_invalidate_xlat c = {
        .key = cpu_to_le32(key), .uctx = cpu_to_le32(uctx),
        .iova = cpu_to_le64(iova), .length = cpu_to_le64(len),
    };

    return uz_cmd(n, UZ_CMD_INVALIDATE_XLAT, &c, sizeof(c), NULL);
}

UzSrq *uz_srq_create(UzNode *n, uint32_t log_depth,
                     uint32_t limit)
{
    UzSrq *srq = uz_own(n, sizeof(*srq));
    struct uz_cmd_create_srq c = { .uctx = cpu_to_le32(n->uctx) };
    struct uz_admin_cqe cqe;

    srq->n = n;
    srq->uctx = n->uctx;
    srq->log_depth = log_depth;
    srq->ring = uz_alloc(&n->d, UZ_RQ_WQE_SIZE << log_depth);
    c.ring_addr = cpu_to_le64(srq->ring);
    c.pdn = cpu_to_le32(n->pdn);
    c.limit = cpu_to_le32(limit);
    c.log_depth = log_depth;
    c.log_wqe_size = UZ_RQ_LOG_WQE;
    g_assert_cmpint(uz_cmd(n, UZ_CMD_CREATE_SRQ, &c, sizeof(c), &cqe), ==,
                    UZ_CMD_OK);
    srq->srqn = le32_to_cpu(cqe.out0);
    srq->db = le32_to_cpu(cqe.out1);
    return srq;
}

uint8_t uz_srq_modify(UzSrq *srq, uint32_t limit)
{
    struct uz_cmd_modify_srq c = {
        .srqn = cpu_to_le32(srq->srqn), .limit = cpu_to_le32(limit),
        .uctx = cpu_to_le32(srq->uctx),
    };

    return uz_cmd(srq->n, UZ_CMD_MODIFY_SRQ, &c, sizeof(c), NULL);
}

UzQp *uz_qp_create_sq(UzNode *n, uint8_t type, UzCq *scq,
                      UzCq *rcq, UzSrq *srq, uint8_t flags,
                      uint8_t sq_log_depth)
{
    UzQp *qp = uz_own(n, sizeof(*qp));
    struct uz_cmd_create_qp c = { .uctx = cpu_to_le32(n->uctx) };
    struct uz_admin_cqe cqe;

    qp->n = n;
    qp->uctx = n->uctx;
    qp->type = type;
    qp->scq = scq ? scq : uz_cq_create(n, UZ_CQ_LOG_DEPTH);
    qp->rcq = rcq ? rcq : uz_cq_create(n, UZ_CQ_LOG_DEPTH);
    qp->srq = srq;
    qp->sq_log_depth = sq_log_depth;
    /* A shadow doorbell record follows the ring (spec 8.6.1). */
    qp->sq = uz_alloc(&n->d, ((uint64_t)UZ_SQ_WQE_SIZE << sq_log_depth) +
                      ((flags & UZ_QPF_SQ_SHADOW) ?
                       sizeof(struct uz_sq_shadow) : 0));
    qp->rq = srq ? 0 : uz_alloc(&n->d, UZ_RQ_WQE_SIZE << UZ_RQ_LOG_DEPTH);
    c.sq_addr = cpu_to_le64(qp->sq);
    c.rq_addr = cpu_to_le64(qp->rq);
    c.pdn = cpu_to_le32(n->pdn);
    c.send_cqn = cpu_to_le32(qp->scq->cqn);
    c.recv_cqn = cpu_to_le32(qp->rcq->cqn);
    c.srqn = cpu_to_le32(srq ? srq->srqn : UZ_NO_SRQ);
    c.type = type;
    c.sq_log_depth = sq_log_depth;
    c.rq_log_depth = UZ_RQ_LOG_DEPTH;
    c.sq_log_wqe_size = UZ_SQ_LOG_WQE;
    c.rq_log_wqe_size = UZ_RQ_LOG_WQE;
    c.flags = flags;
    g_assert_cmpint(uz_cmd(n, UZ_CMD_CREATE_QP, &c, sizeof(c), &cqe), ==,
                    UZ_CMD_OK);
    qp->qpn = le32_to_cpu(cqe.out0);
    qp->sq_db = le32_to_cpu(cqe.out1);
    qp->rq_db = le32_to_cpu(cqe.out2);
    return qp;
}

UzQp *uz_qp_create(UzNode *n, uint8_t type, UzCq *scq,
                   UzCq *rcq, UzSrq *srq, uint8_t flags)
{
    return uz_qp_create_sq(n, type, scq, rcq, srq, flags, UZ_SQ_LOG_DEPTH);
}

uint8_t uz_qp_modify(UzQp *qp, uint32_t mask,
                     const struct uz_qp_attr *a)
{
    struct uz_cmd_modify_qp c = {
        .buf_addr = cpu_to_le64(qp->n->attr_buf),
        .qpn = cpu_to_le32(qp->qpn), .attr_mask = cpu_to_le32(mask),
        .uctx = cpu_to_le32(qp->uctx),
    };

    qtest_memwrite(qp->n->d.qts, qp->n->attr_buf, a, sizeof(*a));
    return uz_cmd(qp->n, UZ_CMD_MODIFY_QP, &c, sizeof(c), NULL);
}

void uz_qp_query(UzQp *qp, struct uz_qp_attr *a)
{
    uint64_t buf = qp->n->attr_buf + UZ_PAGE_SIZE / 2;
    struct uz_cmd_query c = {
        .buf_addr = cpu_to_le64(buf), .buf_len = cpu_to_le32(sizeof(*a)),
        .handle = cpu_to_le32(qp->qpn), .uctx = cpu_to_le32(qp->uctx),
    };

    g_assert_cmpint(uz_cmd(qp->n, UZ_CMD_QUERY_QP, &c, sizeof(c), NULL), ==,
                    UZ_CMD_OK);
    qtest_memread(qp->n->d.qts, buf, a, sizeof(*a));
}

uint8_t uz_qp_state(UzQp *qp)
{
    struct uz_qp_attr a;

    uz_qp_query(qp, &a);
    return a.state;
}

void uz_qp_set_state(UzQp *qp, uint8_t state)
{
    struct uz_qp_attr a = { .state = state };

    g_assert_cmpint(uz_qp_modify(qp, UZ_QP_ATTR_STATE, &a), ==, UZ_CMD_OK);
    if (state == UZ_QPS_RESET) {
        /* RESET zeroes the device's indices; the driver restarts too. */
        qp->sq_pi = 0;
        qp->rq_pi = 0;
    }
}

void uz_qp_failed(UzQp *qp, uint8_t type)
{
    UzNode *n = qp->n;
    struct uz_eqe eqe;
    int seen = 0, i;

    g_assert_cmpint(uz_qp_state(qp), ==, UZ_QPS_ERR);
    for (i = 0; i < (type ? UZ_POLL_LIMIT : 10) && !(type && seen); i++) {
        while (uz_eq_next(&n->d, &n->async_eq, &eqe)) {
            uz_ring(&n->d, n->async_eq.db, n->async_eq.ci);
            if (le32_to_cpu(eqe.handle) == qp->qpn &&
                (eqe.type == UZ_EQE_QP_FATAL ||
                 eqe.type == UZ_EQE_QP_REQ_ERR ||
                 eqe.type == UZ_EQE_QP_ACCESS_ERR)) {
                g_assert_cmphex(eqe.type, ==, type);
                seen++;
            }
        }
        uz_poll_pause(&n->d);
    }
    g_assert_cmpint(seen, ==, type ? 1 : 0);
}

void uz_rc_init_access(UzQp *qp, uint32_t access)
{
    struct uz_qp_attr a = {
        .state = UZ_QPS_INIT, .pkey_index = 0, .port = 1,
        .access_flags = cpu_to_le32(access),
    };

    g_assert_cmpint(uz_qp_modify(qp, UZ_QP_ATTR_STATE |
                                 UZ_QP_ATTR_PKEY_INDEX | UZ_QP_ATTR_PORT |
                                 UZ_QP_ATTR_ACCESS, &a), ==, UZ_CMD_OK);
}

void uz_rc_init(UzQp *qp)
{
    uz_rc_init_access(qp, UZ_ACCESS_ALL);
}

void uz_attr_path(struct uz_qp_attr *a, UzQp *qp, UzQp *peer)
{
    a->hop_limit = 64;
    uz_node_mac(peer->n->idx, a->dmac);
    uz_node_gid(peer->n->idx, a->dgid);
    uz_node_gid(qp->n->idx, a->sgid);
}

void uz_rc_rtr(UzQp *qp, UzQp *peer, uint32_t rq_psn,
               const UzRcOpts *o)
{
    struct uz_qp_attr a = {
        .state = UZ_QPS_RTR, .path_mtu = o->path_mtu,
        .dest_qpn = cpu_to_le32(peer->qpn), .rq_psn = cpu_to_le32(rq_psn),
        .max_dest_rd_atomic = UZ_RD_ATOMIC,
        .min_rnr_timer = o->min_rnr_timer,
    };

    uz_attr_path(&a, qp, peer);
    g_assert_cmpint(uz_qp_modify(qp, UZ_QP_ATTR_STATE | UZ_QP_ATTR_AV |
                                 UZ_QP_ATTR_PATH_MTU | UZ_QP_ATTR_DEST_QPN |
                                 UZ_QP_ATTR_RQ_PSN |
                                 UZ_QP_ATTR_MAX_DEST_RD_ATOMIC |
                                 UZ_QP_ATTR_MIN_RNR_TIMER, &a), ==,
                    UZ_CMD_OK);
}

void uz_rc_rts(UzQp *qp, uint32_t sq_psn, const UzRcOpts *o)
{
    struct uz_qp_attr a = {
        .state = UZ_QPS_RTS, .sq_psn = cpu_to_le32(sq_psn),
        .timeout = o->timeout, .retry_cnt = o->retry_cnt,
        .rnr_retry = o->rnr_retry, .max_rd_atomic = UZ_RD_ATOMIC,
    };

    g_assert_cmpint(uz_qp_modify(qp, UZ_QP_ATTR_STATE | UZ_QP_ATTR_SQ_PSN |
                                 UZ_QP_ATTR_TIMEOUT | UZ_QP_ATTR_RETRY_CNT |
                                 UZ_QP_ATTR_RNR_RETRY |
                                 UZ_QP_ATTR_MAX_QP_RD_ATOMIC, &a), ==,
                    UZ_CMD_OK);
}

void uz_rc_connect_access(UzQp *a, UzQp *b, uint32_t b_access,
                          const UzRcOpts *o)
{
    static const UzRcOpts defaults = UZ_RC_OPTS_DEFAULT;

    o = o ? o : &defaults;
    uz_rc_init(a);
    uz_rc_init_access(b, b_access);
    uz_rc_rtr(a, b, o->psn[1], o);
    uz_rc_rtr(b, a, o->psn[0], o);
    uz_rc_rts(a, o->psn[0], o);
    uz_rc_rts(b, o->psn[1], o);
}

void uz_rc_connect(UzQp *a, UzQp *b, const UzRcOpts *o)
{
    uz_rc_connect_access(a, b, UZ_ACCESS_ALL, o);
}

void uz_uc_init(UzQp *qp)
{
    uz_rc_init(qp);
}

uint8_t uz_uc_rtr_try(UzQp *qp, UzQp *peer, uint32_t psn,
                      uint32_t more)
{
    struct uz_qp_attr a = {
        .state = UZ_QPS_RTR, .path_mtu = UZ_MTU_1024,
        .dest_qpn = cpu_to_le32(peer->qpn), .rq_psn = cpu_to_le32(psn),
        .max_dest_rd_atomic = 1,
    };

    uz_attr_path(&a, qp, peer);
    return uz_qp_modify(qp, UZ_QP_ATTR_STATE | UZ_QP_ATTR_AV |
                        UZ_QP_ATTR_PATH_MTU | UZ_QP_ATTR_DEST_QPN |
                        UZ_QP_ATTR_RQ_PSN | more, &a);
}

uint8_t uz_uc_rts_try(UzQp *qp, uint32_t psn, uint32_t more)
{
    struct uz_qp_attr a = {
        .state = UZ_QPS_RTS, .sq_psn = cpu_to_le32(psn), .timeout = 14,
    };

    return uz_qp_modify(qp, UZ_QP_ATTR_STATE | UZ_QP_ATTR_SQ_PSN | more, &a);
}

void uz_uc_up(UzQp *qp, UzQp *peer, uint32_t psn)
{
    uz_uc_init(qp);
    g_assert_cmpint(uz_uc_rtr_try(qp, peer, psn, 0), ==, UZ_CMD_OK);
    g_assert_cmpint(uz_uc_rts_try(qp, psn, 0), ==, UZ_CMD_OK);
}

void uz_ud_up(UzQp *qp, uint32_t qkey, uint32_t sq_psn)
{
    struct uz_qp_attr a = {
        .state = UZ_QPS_INIT, .port = 1, .qkey = cpu_to_le32(qkey),
    };

    g_assert_cmpint(uz_qp_modify(qp, UZ_QP_ATTR_STATE |
                                 UZ_QP_ATTR_PKEY_INDEX | UZ_QP_ATTR_PORT |
                                 UZ_QP_ATTR_QKEY, &a), ==, UZ_CMD_OK);
    a = (struct uz_qp_attr) { .state = UZ_QPS_RTR };
    g_assert_cmpint(uz_qp_modify(qp, UZ_QP_ATTR_STATE, &a), ==, UZ_CMD_OK);
    a = (struct uz_qp_attr) { .state = UZ_QPS_RTS,
                              .sq_psn = cpu_to_le32(sq_psn) };
    g_assert_cmpint(uz_qp_modify(qp, UZ_QP_ATTR_STATE | UZ_QP_ATTR_SQ_PSN,
                                 &a), ==, UZ_CMD_OK);
}

uint32_t uz_ah_create(UzNode *n, int peer)
{
    struct uz_cmd_create_ah c = {
        .hop_limit = 64, .pdn = cpu_to_le32(n->pdn),
        .uctx = cpu_to_le32(n->uctx),
    };
    struct uz_admin_cqe cqe;

    uz_node_mac(peer, c.dmac);
    uz_node_gid(peer, c.dgid);
    uz_node_gid(n->idx, c.sgid);
    g_assert_cmpint(uz_cmd(n, UZ_CMD_CREATE_AH, &c, sizeof(c), &cqe), ==,
                    UZ_CMD_OK);
    return le32_to_cpu(cqe.out0);
}

bool uz_wr_is_atomic(uint8_t opcode)
{
    return opcode == UZ_WR_ATOMIC_CMP_SWP ||
           opcode == UZ_WR_ATOMIC_FETCH_ADD;
}

uint8_t uz_wc_opcode(uint8_t wr_opcode)
{
    switch (wr_opcode) {
    case UZ_WR_RDMA_WRITE:
    case UZ_WR_RDMA_WRITE_IMM:
        return UZ_WC_RDMA_WRITE;
    case UZ_WR_RDMA_READ:
        return UZ_WC_RDMA_READ;
    case UZ_WR_ATOMIC_CMP_SWP:
        return UZ_WC_COMP_SWAP;
    case UZ_WR_ATOMIC_FETCH_ADD:
        return UZ_WC_FETCH_ADD;
    case UZ_WR_FLUSH:
        return UZ_WC_FLUSH;
    case UZ_WR_ATOMIC_WRITE:
        return UZ_WC_ATOMIC_WRITE;
    case UZ_WR_CRW:
        return UZ_WC_CRW;
    case UZ_WR_STCRW:
        return UZ_WC_STCRW;
    case UZ_WR_LOCAL_INV:
        return UZ_WC_LOCAL_INV;
    case UZ_WR_REG_MR:
        return UZ_WC_REG_MR;
    case UZ_WR_BIND_MW:
        return UZ_WC_BIND_MW;
    default:
        /* SEND, SEND_IMM, SEND_INV; an unknown opcode flushes as SEND. */
        return UZ_WC_SEND;
    }
}

size_t uz_wqe_build(const UzWr *wr, bool ud, void *buf)
{
    struct uz_send_wqe *w = buf;
    uint8_t *tail = (uint8_t *)(w + 1);
    int i;

    memset(buf, 0, UZ_SQ_WQE_SIZE);
    w->wr_id = cpu_to_le64(wr->wr_id);
    w->opcode = wr->opcode;
    w->flags = wr->flags;
    w->imm_data = wr->opcode == UZ_WR_SEND_INV ||
                  wr->opcode == UZ_WR_LOCAL_INV ? cpu_to_le32(wr->imm) :
                                                  cpu_to_be32(wr->imm);
    w->rkey = cpu_to_le32(wr->rkey);
    w->remote_addr = cpu_to_le64(wr->remote_addr);
    w->xrc_srqn = cpu_to_le32(wr->xrc_srqn);
    if (ud) {
        w->ud.ahn = cpu_to_le32(wr->ahn);
        w->ud.remote_qpn = cpu_to_le32(wr->remote_qpn);
        w->ud.remote_qkey = cpu_to_le32(wr->remote_qkey);
        if (wr->av) {
            w->flags |= UZ_WQE_F_AV;
            memcpy(tail, wr->av, sizeof(*wr->av));
            tail += sizeof(*wr->av);
        }
    } else if (uz_wr_is_atomic(wr->opcode) ||
               wr->opcode == UZ_WR_ATOMIC_WRITE) {
        /* ATOMIC_WRITE: compare_add holds the value, as the WQE does. */
        w->atomic.compare_add = cpu_to_le64(wr->compare_add);
        w->atomic.swap = cpu_to_le64(wr->swap);
    } else if (wr->opcode == UZ_WR_FLUSH) {
        w->flush.length = cpu_to_le64(wr->flush_length);
        w->flush.type = wr->flush_type;
        w->flush.level = wr->flush_level;
    } else if (wr->opcode == UZ_WR_CRW || wr->opcode == UZ_WR_STCRW) {
        w->crw.tag = cpu_to_le64(wr->tag);
        w->crw.length = cpu_to_le32(wr->crw_length);
    } else if (wr->opcode == UZ_WR_BIND_MW) {
        w->bind.length = cpu_to_le64(wr->reg_length);
        w->bind.access = cpu_to_le32(wr->reg_access);
        w->bind.mr_key = cpu_to_le32(wr->bind_mr_key);
    } else if (wr->opcode == UZ_WR_REG_MR) {
        w->reg.length = cpu_to_le64(wr->reg_length);
        w->reg.access = cpu_to_le32(wr->reg_access);
        w->reg.npages = cpu_to_le16(wr->reg_npages);
        w->reg.page_shift = wr->reg_page_shift ? wr->reg_page_shift :
                                                 UZ_PAGE_SHIFT;
    }
    if (wr->flags & UZ_WQE_F_INLINE) {
        g_assert_cmpint(wr->inline_len, <=, UZ_SQ_MAX_INLINE);
        w->inline_len = cpu_to_le32(wr->inline_len);
        if (wr->inline_len) {
            memcpy(tail, wr->inline_data, wr->inline_len);
        }
        return tail - (uint8_t *)buf + wr->inline_len;
    }
    g_assert_cmpint(wr->num_sge, <=, UZ_SQ_MAX_SGE);
    w->num_sge = wr->num_sge;
    for (i = 0; i < wr->num_sge; i++) {
        struct uz_sge s = {
            .addr = cpu_to_le64(wr->sge[i].addr),
            .length = cpu_to_le32(wr->sge[i].length),
            .lkey = cpu_to_le32(wr->sge[i].lkey),
        };

        memcpy(tail + i * sizeof(s), &s, sizeof(s));
    }
    return tail - (uint8_t *)buf + wr->num_sge * sizeof(struct uz_sge);
}

void uz_sq_put(UzQp *qp, const void *wqe, size_t len)
{
    uint64_t slot[UZ_SQ_WQE_SIZE / 8] = { 0 };
    uint32_t pos = qp->sq_pi & ((1u << qp->sq_log_depth) - 1);

    g_assert_cmpint(len, <=, sizeof(slot));
    memcpy(slot, wqe, len);
    qtest_memwrite(qp->n->d.qts, qp->sq + pos * UZ_SQ_WQE_SIZE, slot,
                   sizeof(slot));
    qp->sq_pi = (qp->sq_pi + 1) & UZ_DB_PI_MASK;
}

void uz_sq_ring(UzQp *qp)
{
    uz_ring(&qp->n->d, qp->sq_db, qp->sq_pi);
}

void uz_sq_post(UzQp *qp, const UzWr *wr)
{
    uint64_t buf[UZ_SQ_WQE_SIZE / 8];
    size_t len = uz_wqe_build(wr, qp->type == UZ_QPT_UD ||
                              qp->type == UZ_QPT_GSI, buf);

    uz_sq_put(qp, buf, len);
}

void uz_post_send(UzQp *qp, const UzWr *wr)
{
    uz_sq_post(qp, wr);
    uz_sq_ring(qp);
}

void uz_recv_put(UzNode *n, uint64_t ring, uint32_t log_depth,
                 uint32_t idx, uint64_t wr_id,
                 const UzSge *sge, int nsge)
{
    uint64_t slot[UZ_RQ_WQE_SIZE / 8] = { 0 };
    struct uz_recv_wqe *w = (struct uz_recv_wqe *)slot;
    struct uz_sge *s = (struct uz_sge *)(w + 1);
    uint32_t pos = idx & ((1u << log_depth) - 1);
    int i;

    g_assert_cmpint(nsge, <=, UZ_RQ_MAX_SGE);
    w->wr_id = cpu_to_le64(wr_id);
    w->num_sge = nsge;
    for (i = 0; i < nsge; i++) {
        s[i].addr = cpu_to_le64(sge[i].addr);
        s[i].length = cpu_to_le32(sge[i].length);
        s[i].lkey = cpu_to_le32(sge[i].lkey);
    }
    qtest_memwrite(n->d.qts, ring + pos * UZ_RQ_WQE_SIZE, slot,
                   sizeof(slot));
}

void uz_post_recv(UzQp *qp, uint64_t wr_id, const UzSge *sge,
                  int nsge)
{
    g_assert(!qp->srq);
    uz_recv_put(qp->n, qp->rq, UZ_RQ_LOG_DEPTH, qp->rq_pi, wr_id, sge, nsge);
    qp->rq_pi = (qp->rq_pi + 1) & UZ_DB_PI_MASK;
    uz_ring(&qp->n->d, qp->rq_db, qp->rq_pi);
}

void uz_srq_post(UzSrq *srq, uint64_t wr_id, const UzSge *sge,
                 int nsge)
{
    uz_recv_put(srq->n, srq->ring, srq->log_depth, srq->pi, wr_id, sge,
                nsge);
    srq->pi = (srq->pi + 1) & UZ_DB_PI_MASK;
    uz_ring(&srq->n->d, srq->db, srq->pi);
}

void uz_check_write(UzQp *qs, UzQp *qr, UzMr *ms, UzMr *mr,
                    size_t len, bool imm, uint32_t id)
{
    const uint64_t roff = 4093;
    g_autofree uint8_t *buf = g_malloc(len + 1);
    uint32_t immv = 0x3717e000u | id;
    UzSge s = uz_mr_sge(ms, 3, len);
    UzWr wr = {
        .wr_id = 0x37000000ull | id,
        .opcode = imm ? UZ_WR_RDMA_WRITE_IMM : UZ_WR_RDMA_WRITE,
        .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1, .imm = immv,
        .remote_addr = uz_mr_va(mr, roff), .rkey = mr->key,
    };

    uz_pattern(buf, len, 100 + id);
    uz_mr_write(ms, 3, buf, len);
    uz_mr_fill(mr, roff - 64, UZ_GUARD, len + 128);
    if (imm) {
        /* A receive WQE without buffers is enough. */
        uz_post_recv(qr, 0x7ec10000ull | id, NULL, 0);
    }
    uz_post_send(qs, &wr);
    uz_sq_done(qs, wr.wr_id, UZ_WC_RDMA_WRITE, len);
    if (imm) {
        uz_rq_done(qr, 0x7ec10000ull | id, UZ_WC_RECV_RDMA_WITH_IMM, len,
                   UZ_WC_F_IMM, immv);
    } else {
        uz_cq_assert_empty(qr->rcq, 5);
    }
    uz_assert_mr(mr, roff, buf, len, "written data");
    uz_assert_mr_fill(mr, roff - 64, UZ_GUARD, 64, "before the target");
    uz_assert_mr_fill(mr, roff + len, UZ_GUARD, 64, "after the target");
}
