/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qtest for the uzura NIC's hardening: what no guest and no peer may do
 * to the device (issue "no guest and no peer can crash, stall or confuse
 * the device").  Each test reproduces one defect and checks the rule that
 * fixed it.
 *
 * Some tests play the peer on the wire (uzura-wire.h): their machine has
 * one NIC and a socket on its hub, the device's QP is connected to NIC 1's
 * addresses (a NIC the machine does not have), and the test sends and
 * receives the frames NIC 1 would.
 */
#include "uzura-verbs.h"
#include "uzura-wire.h"
#include "hw/pci-host/q35.h"
#include "qemu/cutils.h"

#define MS                  (1000 * 1000ll)
#define QKEY                0x11110000u

/* uz_node_start(): the completion EQ raises this MSI-X vector. */
#define COMP_VECTOR         2

/* The peer on the wire: NIC 1's MAC and GID, and a QP number. */
#define PEER                1
#define PEER_QPN            0x77

#define CMD_ON              (PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER)

/* A UD receive starts with the 40-byte GRH area (spec 9.6). */
#define GRH_LEN             40

typedef struct Env {
    UzMachine m;
    UzNode n[2];
    int nics;
    int sock;                   /* our end of the wire, or -1 */
} Env;

/* @nics NICs, the wire if @wire, and QEMU arguments @extra. */
static void env_start_args(Env *e, int nics, bool wire, const char *extra)
{
    int i;

    e->nics = nics;
    e->sock = -1;
    if (wire) {
        e->sock = uz_wire_machine_start(&e->m, nics, extra);
    } else {
        uz_machine_start(&e->m, nics, extra);
    }
    for (i = 0; i < nics; i++) {
        uz_node_start(&e->n[i], &e->m, i);
    }
}

static void env_start(Env *e, int nics, bool wire)
{
    env_start_args(e, nics, wire, NULL);
}

static void env_stop(Env *e)
{
    int i;

    if (e->sock >= 0) {
        close(e->sock);
    }
    for (i = 0; i < e->nics; i++) {
        uz_node_stop(&e->n[i]);
    }
    uz_machine_stop(&e->m);
}

/* ------------------------------------------------------------------ */
/* Helpers                                                            */
/* ------------------------------------------------------------------ */

/* CREATE_CQ of 2^@log_depth CQEs at @ring with @flags: the status. */
static uint8_t cq_create_at(UzNode *n, uint64_t ring, uint8_t log_depth,
                            uint8_t flags)
{
    struct uz_cmd_create_cq c = {
        .ring_addr = cpu_to_le64(ring),
        .eqn = cpu_to_le32(n->comp_eq.eqn),
        .log_depth = log_depth, .flags = flags,
    };

    return uz_cmd(n, UZ_CMD_CREATE_CQ, &c, sizeof(c), NULL);
}

/* A UD SEND of @len bytes of @data from @qs through AH @ahn, completed. */
static void ud_send(UzQp *qs, UzMr *ms, uint32_t ahn, uint32_t qpn,
                    uint32_t qkey, const void *data, uint32_t len,
                    uint64_t wr_id)
{
    UzSge s = uz_mr_sge(ms, 0, len);
    UzWr wr = {
        .wr_id = wr_id, .opcode = UZ_WR_SEND, .flags = UZ_WQE_F_SIGNALED,
        .sge = &s, .num_sge = 1, .ahn = ahn, .remote_qpn = qpn,
        .remote_qkey = qkey,
    };

    uz_mr_write(ms, 0, data, len);
    uz_post_send(qs, &wr);
    uz_sq_done(qs, wr_id, UZ_WC_SEND, len);
}

/* A UD message from @qs lands in a new receive WQE of @qr. */
static void ud_check_works(UzQp *qs, UzQp *qr, UzMr *ms, UzMr *mr,
                           uint32_t ahn, uint32_t seed)
{
    uint8_t data[100];
    UzSge r = uz_mr_sge(mr, 0, GRH_LEN + sizeof(data));
    struct uz_cqe c;

    uz_pattern(data, sizeof(data), seed);
    uz_post_recv(qr, 0x0c0000 + seed, &r, 1);
    ud_send(qs, ms, ahn, qr->qpn, QKEY, data, sizeof(data), 0x0d0000 + seed);
    uz_cq_wait(qr->rcq, &c);
    uz_expect_rq(&c, 0x0c0000 + seed, UZ_WC_RECV, qr->qpn,
                 GRH_LEN + sizeof(data), UZ_WC_F_GRH | UZ_WC_F_IPV4, 0,
                 qs->qpn);
    uz_assert_mr(mr, GRH_LEN, data, sizeof(data), "UD payload");
}

/* Connect RC QP @qp, in RESET, to the peer on the wire. */
static void rc_connect_wire(UzQp *qp, uint32_t rq_psn, uint32_t sq_psn,
                            const UzRcOpts *o)
{
    static const UzRcOpts defaults = UZ_RC_OPTS_DEFAULT;
    UzNode peer_node = { .idx = PEER };
    UzQp peer = { .n = &peer_node, .qpn = PEER_QPN };

    o = o ? o : &defaults;
    uz_rc_init(qp);
    uz_rc_rtr(qp, &peer, rq_psn, o);
    uz_rc_rts(qp, sq_psn, o);
}

/* ---- PCI Express configuration space and MSI-X ---- */

/* Open q35's MMCONFIG window at its default base; returns the base. */
static uint64_t mmcfg_enable(Env *e)
{
    QPCIDevice *mch = qpci_device_find(e->m.qs->pcibus, QPCI_DEVFN(0, 0));

    g_assert(mch);
    qpci_config_writel(mch, MCH_HOST_BRIDGE_PCIEXBAR + 4, 0);
    qpci_config_writel(mch, MCH_HOST_BRIDGE_PCIEXBAR,
                       MCH_HOST_BRIDGE_PCIEXBAR_DEFAULT |
                       MCH_HOST_BRIDGE_PCIEXBAREN);
    g_free(mch);
    return MCH_HOST_BRIDGE_PCIEXBAR_DEFAULT;
}

/* The node's configuration space in the window (bus 0), checked. */
static uint64_t mmcfg_dev(UzNode *n, uint64_t base)
{
    uint64_t cfg = base + ((uint64_t)n->d.pdev->devfn << 12);

    g_assert_cmphex(qtest_readl(n->d.qts, cfg), ==,
                    UZ_PCI_VENDOR_ID | UZ_PCI_DEVICE_ID << 16);
    return cfg;
}

/* The offset of the PCIe Device Control register in config space. */
static uint8_t devctl_off(UzNode *n)
{
    uint8_t cap = qpci_find_capability(n->d.pdev, PCI_CAP_ID_EXP, 0);

    g_assert_cmphex(cap, !=, 0);
    return cap + PCI_EXP_DEVCTL;
}

/* Aim MSI-X @vector at @addr with @data, and unmask it. */
static void msix_aim(UzDev *d, uint16_t vector, uint64_t addr, uint32_t data)
{
    uint64_t e = d->pdev->msix_table_off + vector * PCI_MSIX_ENTRY_SIZE;
    QPCIBar bar = d->pdev->msix_table_bar;

    g_assert(!qpci_msix_pending(d->pdev, vector));
    qpci_io_writel(d->pdev, bar, e + PCI_MSIX_ENTRY_LOWER_ADDR, addr);
    qpci_io_writel(d->pdev, bar, e + PCI_MSIX_ENTRY_UPPER_ADDR, addr >> 32);
    qpci_io_writel(d->pdev, bar, e + PCI_MSIX_ENTRY_DATA, data);
    qpci_io_writel(d->pdev, bar, e + PCI_MSIX_ENTRY_VECTOR_CTRL, 0);
}

/* Arm @cq and the completion EQ: its next CQE raises COMP_VECTOR. */
static void arm_comp(UzNode *n, UzCq *cq)
{
    uz_cq_arm(cq, UZ_DB_ARM);
    uz_ring(&n->d, n->comp_eq.db, n->comp_eq.ci | UZ_DB_ARM);
}

/* ---- The wire ---- */

static size_t put_reth(uint8_t *p, uint64_t va, uint32_t rkey, uint32_t len)
{
    stq_be_p(p, va);
    stl_be_p(p + 8, rkey);
    stl_be_p(p + 12, len);
    return 16;
}

static size_t put_atomic_eth(uint8_t *p, uint64_t va, uint32_t rkey,
                             uint64_t swap_add, uint64_t compare)
{
    stq_be_p(p, va);
    stl_be_p(p + 8, rkey);
    stq_be_p(p + 12, swap_add);
    stq_be_p(p + 20, compare);
    return 28;
}

static size_t put_aeth(uint8_t *p, uint8_t syndrome, uint32_t msn)
{
    stl_be_p(p, (uint32_t)syndrome << 24 | (msn & 0xffffff));
    return 4;
}

/*
 * A RoCEv2 frame from the peer (NIC 1's MAC and IPv4 address) to NIC 0:
 * BTH @op for QP @dqpn at @psn, AckReq with @ack_req, then @ext_len
 * bytes of extended headers and @paylen bytes of payload, padded, and
 * the ICRC.
 */
static void wire_frame(UzFrame *fr, uint8_t op, uint32_t dqpn, uint32_t psn,
                       bool ack_req, const uint8_t *ext, size_t ext_len,
                       const uint8_t *pay, size_t paylen)
{
    uint8_t *f = fr->data, *ip = f + UZ_OFF_IP, *udp = f + UZ_OFF_UDP;
    uint8_t *bth = f + UZ_OFF_BTH, *p = bth + UZ_BTH_LEN;
    size_t pad = -paylen & 3, ip_len;
    uint32_t sum = 0;
    int i;

    g_assert_cmpuint(UZ_OFF_BTH + UZ_BTH_LEN + ext_len + paylen + pad + 4,
                     <=, sizeof(fr->data));
    uz_node_mac(0, f);
    uz_node_mac(PEER, f + 6);
    stw_be_p(f + 12, 0x0800);
    bth[0] = op;
    bth[1] = pad << 4;
    stw_be_p(bth + 2, 0xffff);
    stl_be_p(bth + 4, dqpn & 0xffffff);
    stl_be_p(bth + 8, (ack_req ? 0x80000000u : 0) | (psn & 0xffffff));
    if (ext_len) {
        memcpy(p, ext, ext_len);
        p += ext_len;
    }
    if (paylen) {
        memcpy(p, pay, paylen);
        p += paylen;
    }
    memset(p, 0, pad);
    p += pad;
    fr->len = p + UZ_ICRC_LEN - f;

    ip_len = fr->len - UZ_OFF_IP;
    memset(ip, 0, 20);
    ip[0] = 0x45;
    stw_be_p(ip + 2, ip_len);
    stw_be_p(ip + 6, 0x4000);
    ip[8] = 64;
    ip[9] = 17;
    uz_node_ip(PEER, ip + 12);
    uz_node_ip(0, ip + 16);
    for (i = 0; i < 20; i += 2) {
        sum += lduw_be_p(ip + i);
    }
    while (sum >> 16) {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    stw_be_p(ip + 10, ~sum);
    stw_be_p(udp, 0xc000 | PEER_QPN);
    stw_be_p(udp + 2, UZ_ROCE_UDP_PORT);
    stw_be_p(udp + 4, ip_len - 20);
    stw_be_p(udp + 6, 0);
    stl_le_p(p, uz_icrc(f, fr->len));
}

/*
 * Put @n frames on the wire with one write: QEMU reads them at once and
 * the device receives them one after the other, no bottom half between.
 */
static void wire_send(Env *e, const UzFrame *fr, int n)
{
    g_autoptr(GByteArray) buf = g_byte_array_new();
    size_t off = 0;
    int i;

    for (i = 0; i < n; i++) {
        uint8_t hdr[4];

        stl_be_p(hdr, fr[i].len);
        g_byte_array_append(buf, hdr, sizeof(hdr));
        g_byte_array_append(buf, fr[i].data, fr[i].len);
    }
    while (off < buf->len) {
        ssize_t r = send(e->sock, buf->data + off, buf->len - off, 0);

        g_assert_cmpint(r, >, 0);
        off += r;
    }
    uz_poll_pause(&e->n[0].d);
}

/* The next RoCE frame the device sent. */
static void wire_next(Env *e, UzFrame *fr)
{
    while (uz_wire_recv(e->sock, &e->n[0].d, fr)) {
        if (uz_frame_is_roce(fr)) {
            return;
        }
    }
    g_error("no RoCE frame on the wire");
}

static uint8_t fr_op(const UzFrame *fr)
{
    return fr->data[UZ_OFF_BTH];
}

static uint32_t fr_psn(const UzFrame *fr)
{
    return ldl_be_p(fr->data + UZ_OFF_BTH + 8) & 0xffffff;
}

static uint32_t fr_dqpn(const UzFrame *fr)
{
    return ldl_be_p(fr->data + UZ_OFF_BTH + 4) & 0xffffff;
}

/* The first byte after the BTH: AETH's syndrome, or the payload. */
static const uint8_t *fr_after_bth(const UzFrame *fr)
{
    return fr->data + UZ_OFF_BTH + UZ_BTH_LEN;
}

static bool op_is_read_resp(uint8_t op)
{
    return op >= UZ_BTH_OP_READ_RESP_FIRST && op <= UZ_BTH_OP_READ_RESP_ONLY;
}

/* ------------------------------------------------------------------ */
/* 1. DMA and MSI-X into the device itself                            */
/* ------------------------------------------------------------------ */

/*
 * Defect 1 (DMA): device DMA went wherever an address pointed.  A receive
 * SGE aimed at the device's own PCIe Device Control register, through the
 * MMCONFIG window, wrote Initiate FLR there from inside the receive path:
 * the reset freed the QP being received into (use-after-free).
 * Rule: DMA reaches guest RAM only; another target fails as an unmapped
 * address does.  The receive completes with LOC_PROT_ERR (detail DMA),
 * the device is not reset, its other QPs and its admin queue go on; both
 * through a DMA MR over the window and through an MR whose page is the
 * device's configuration space.  Rings are checked when created: a CQ
 * ring, a paged CQ's list or one of its pages, in the window or in the
 * device's BAR 4 is refused with BAD_ADDR.
 */
static void test_dma_config_space(void)
{
    static const uint8_t flr[2] = { 0x00, 0x80 };   /* 0x8000, LE */
    Env e;
    UzNode *n = &e.n[0];
    UzQp *qa, *qb;
    UzMr *ma, *mb;
    uint64_t base, cfg, list;
    uint16_t devctl;
    uint32_t ahn;
    uint8_t dc;
    int v;

    env_start(&e, 1, false);
    base = mmcfg_enable(&e);
    cfg = mmcfg_dev(n, base);
    dc = devctl_off(n);
    devctl = qpci_config_readw(n->d.pdev, dc);
    g_assert_cmphex(devctl & PCI_EXP_DEVCTL_BCR_FLR, ==, 0);
    g_assert_cmphex(qtest_readw(n->d.qts, cfg + dc), ==, devctl);

    /* Bystanders: a UD pair, through loopback, that must live on. */
    qa = uz_qp_create(n, UZ_QPT_UD, NULL, NULL, NULL, 0);
    qb = uz_qp_create(n, UZ_QPT_UD, NULL, NULL, NULL, 0);
    uz_ud_up(qa, QKEY, 0);
    uz_ud_up(qb, QKEY, 0);
    ma = uz_mr_reg(n, 4096, UZ_ACCESS_ALL);
    mb = uz_mr_reg(n, 4096, UZ_ACCESS_ALL);
    ahn = uz_ah_create(n, 0);
    ud_check_works(qa, qb, ma, mb, ahn, 1);

    for (v = 0; v < 2; v++) {
        UzQp *qs = uz_qp_create(n, UZ_QPT_UD, NULL, NULL, NULL, 0);
        UzQp *qr = uz_qp_create(n, UZ_QPT_UD, NULL, NULL, NULL, 0);
        UzMr *grh = uz_mr_reg(n, 4096, UZ_ACCESS_ALL);
        UzMr *win;
        UzSge r[2];
        struct uz_cqe c;

        uz_ud_up(qs, QKEY, 0);
        uz_ud_up(qr, QKEY, 0);
        if (v == 0) {
            /* A DMA MR over the whole window: the iova is the address. */
            win = uz_mr_reg_dma_at(n, base, MCH_HOST_BRIDGE_PCIEXBAR_MAX,
                                   UZ_ACCESS_LOCAL_WRITE);
            r[1] = (UzSge) { .addr = cfg + dc, .length = 2,
                             .lkey = win->key };
        } else {
            /* An MR whose one page is the device's config space. */
            win = uz_mr_reg_list(n, n->pdn, 0x5a000, 4096, UZ_PAGE_SHIFT,
                                 &cfg, 1, UZ_ACCESS_LOCAL_WRITE);
            r[1] = uz_mr_sge(win, dc, 2);
        }
        r[0] = uz_mr_sge(grh, 0, GRH_LEN);
        uz_post_recv(qr, 0x1a00 + v, r, 2);
        ud_send(qs, ma, ahn, qr->qpn, QKEY, flr, sizeof(flr), 0x1b00 + v);
        uz_cq_wait(qr->rcq, &c);
        uz_cqe_expect(&c, 0x1a00 + v, UZ_WC_RECV, UZ_WC_STATUS_LOC_PROT_ERR,
                      UZ_VERR_DMA, qr->qpn);
        uz_qp_failed(qr, 0);
        g_assert_cmpint(uz_qp_state(qs), ==, UZ_QPS_RTS);

        /* No FLR: config space as it was, the device still up. */
        g_assert_cmphex(qpci_config_readw(n->d.pdev, dc), ==, devctl);
        g_assert_cmphex(qpci_config_readw(n->d.pdev, PCI_COMMAND) & CMD_ON,
                        ==, CMD_ON);
        g_assert_cmphex(uz_rd(&n->d, UZ_REG_ADMIN_STATUS), ==,
                        UZ_ADMIN_STATUS_ENABLED);
        ud_check_works(qa, qb, ma, mb, ahn, 2 + v);
    }

    /* CQ rings in the window or in BAR 4, contiguous or paged. */
    g_assert_cmpint(cq_create_at(n, cfg, 4, 0), ==, UZ_CMD_BAD_ADDR);
    g_assert_cmpint(cq_create_at(n, n->d.db.addr, 4, 0), ==,
                    UZ_CMD_BAD_ADDR);
    g_assert_cmpint(cq_create_at(n, cfg, 7, UZ_CQF_PAGE_LIST), ==,
                    UZ_CMD_BAD_ADDR);
    g_assert_cmpint(cq_create_at(n, n->d.db.addr, 7, UZ_CQF_PAGE_LIST), ==,
                    UZ_CMD_BAD_ADDR);
    list = uz_alloc_pages(n, 1);
    qtest_writeq(n->d.qts, list, cfg);
    g_assert_cmpint(cq_create_at(n, list, 7, UZ_CQF_PAGE_LIST), ==,
                    UZ_CMD_BAD_ADDR);
    qtest_writeq(n->d.qts, list, n->d.db.addr);
    g_assert_cmphex(n->d.db.addr & UZ_PAGE_MASK, ==, 0);
    g_assert_cmpint(cq_create_at(n, list, 7, UZ_CQF_PAGE_LIST), ==,
                    UZ_CMD_BAD_ADDR);
    /* The same with a page of RAM is a CQ. */
    qtest_writeq(n->d.qts, list, uz_alloc_pages(n, 1));
    g_assert_cmpint(cq_create_at(n, list, 7, UZ_CQF_PAGE_LIST), ==,
                    UZ_CMD_OK);

    g_assert_cmphex(qpci_config_readw(n->d.pdev, dc), ==, devctl);
    ud_check_works(qa, qb, ma, mb, ahn, 9);
    env_stop(&e);
}

/*
 * Defect 3 (MSI-X into config space): an MSI-X message is a write the
 * guest aims where it likes.  Aimed at the device's own Device Control
 * register with Initiate FLR as its data, the message of a completion
 * reset the device in the middle of the data path that raised it, which
 * went on with freed queues (use-after-free).
 * Rule: a reset that arrives while the device is inside one of its
 * entries (MMIO, bottom half, timer, frame; uzura_enter) is held until
 * the entry ends.  Here the entry is the doorbell store of a UD SEND:
 * the SEND completes into an armed CQ, its EQ raises the completion
 * vector, whose message starts an FLR.  Afterwards the device reads as
 * freshly reset, and comes up again.
 */
static void test_msix_flr(void)
{
    Env e;
    UzNode *n = &e.n[0];
    UzQp *qs, *qa, *qb;
    UzMr *ms, *ma, *mb;
    UzDev d;
    uint64_t cfg, irqs;
    uint8_t dc;
    struct uz_cqe c;
    UzSge s;
    UzWr wr;

    env_start(&e, 1, false);
    cfg = mmcfg_dev(n, mmcfg_enable(&e));
    dc = devctl_off(n);
    qs = uz_qp_create(n, UZ_QPT_UD, NULL, NULL, NULL, 0);
    uz_ud_up(qs, QKEY, 0);
    ms = uz_mr_reg(n, 4096, UZ_ACCESS_ALL);
    s = uz_mr_sge(ms, 0, 64);
    wr = (UzWr) {
        .wr_id = 0x1f00, .opcode = UZ_WR_SEND, .flags = UZ_WQE_F_SIGNALED,
        .sge = &s, .num_sge = 1, .ahn = uz_ah_create(n, PEER),
        .remote_qpn = PEER_QPN, .remote_qkey = QKEY,
    };

    msix_aim(&n->d, COMP_VECTOR, cfg + dc, PCI_EXP_DEVCTL_BCR_FLR);
    arm_comp(n, qs->scq);
    irqs = uz_counter(&e.m, 0, "irqs");
    uz_post_send(qs, &wr);

    /* The vector was raised and its message reset the function... */
    g_assert_cmpuint(uz_counter(&e.m, 0, "irqs"), ==, irqs + 1);
    g_assert_cmphex(qpci_config_readw(n->d.pdev, PCI_COMMAND) & CMD_ON, ==,
                    0);
    /* ... after the completion that raised it was written. */
    qtest_memread(e.m.qs->qts, uz_cq_slot(qs->scq, 0), &c, sizeof(c));
    g_assert_cmphex(c.flags & UZ_CQE_PHASE, ==, UZ_CQE_PHASE);
    uz_cqe_to_host(&c);
    uz_expect_sq(&c, 0x1f00, UZ_WC_SEND, qs, 64);

    /* Freshly reset: no admin queue, MSI-X vectors masked. */
    uz_node_stop(n);
    uz_dev_init(&d, &e.m, 0);
    g_assert_cmphex(uz_rd(&d, UZ_REG_STATUS) & UZ_STATUS_READY, ==,
                    UZ_STATUS_READY);
    g_assert_cmphex(uz_rd(&d, UZ_REG_ADMIN_STATUS), ==, 0);
    g_assert_cmphex(uz_rd(&d, UZ_REG_ADMIN_CTRL), ==, 0);
    g_assert_cmphex(uz_rd(&d, UZ_REG_ADMIN_SQ_LO), ==, 0);
    g_assert_cmphex(uz_rd(&d, UZ_REG_ERR_COUNT), ==, 0);
    g_assert_cmphex(qpci_config_readw(d.pdev, dc) & PCI_EXP_DEVCTL_BCR_FLR,
                    ==, 0);
    g_assert(qpci_msix_masked(d.pdev, COMP_VECTOR));
    uz_dev_fini(&d);

    /* And it comes up again. */
    uz_node_start(n, &e.m, 0);
    qa = uz_qp_create(n, UZ_QPT_UD, NULL, NULL, NULL, 0);
    qb = uz_qp_create(n, UZ_QPT_UD, NULL, NULL, NULL, 0);
    uz_ud_up(qa, QKEY, 0);
    uz_ud_up(qb, QKEY, 0);
    ma = uz_mr_reg(n, 4096, UZ_ACCESS_ALL);
    mb = uz_mr_reg(n, 4096, UZ_ACCESS_ALL);
    ud_check_works(qa, qb, ma, mb, uz_ah_create(n, 0), 1);
    env_stop(&e);
}

/*
 * Defect 3 (MSI-X into BAR 4): the ACK timer ran outside the device's
 * re-entrancy guard.  A completion it wrote (retries exhausted) into an
 * armed CQ raised an MSI-X message that the guest had aimed at the SQ
 * doorbell of another QP, in the device's own BAR 4: the store rang
 * that doorbell from inside the timer, and the QP sent a WQE the guest
 * had never rung for.
 * Rule: every entry into the device, timers included, holds the guard,
 * so a message of the device into its own BARs is refused.  QP qa (RC,
 * to a peer that never answers, one try) ends its WRITE with RETRY_EXC,
 * the vector is raised, and UD QP qb sends nothing until rung.  (QEMU
 * says once on stderr: "Blocked re-entrant IO on MemoryRegion: uzura-db".)
 */
static void test_msix_doorbell(void)
{
    Env e;
    UzNode *n = &e.n[0];
    UzRcOpts o = UZ_RC_OPTS_DEFAULT;
    UzQp *qa, *qb;
    UzMr *ms;
    uint64_t irqs, dbs, tx;
    struct uz_cqe c;
    UzSge sa, sb;
    UzWr wa, wb;

    env_start(&e, 1, false);
    ms = uz_mr_reg(n, 4096, UZ_ACCESS_ALL);
    /* 4.096 us << 1 without an answer, no retry. */
    o.timeout = 1;
    o.retry_cnt = 0;
    qa = uz_qp_create(n, UZ_QPT_RC, NULL, NULL, NULL, 0);
    rc_connect_wire(qa, 0x100, 0x200, &o);
    qb = uz_qp_create(n, UZ_QPT_UD, NULL, NULL, NULL, 0);
    uz_ud_up(qb, QKEY, 0);

    /* qb: a SEND in its SQ, not rung for. */
    sb = uz_mr_sge(ms, 0, 32);
    wb = (UzWr) {
        .wr_id = 0x3b00, .opcode = UZ_WR_SEND, .flags = UZ_WQE_F_SIGNALED,
        .sge = &sb, .num_sge = 1, .ahn = uz_ah_create(n, PEER),
        .remote_qpn = PEER_QPN, .remote_qkey = QKEY,
    };
    uz_sq_post(qb, &wb);
    msix_aim(&n->d, COMP_VECTOR, n->d.db.addr + qb->sq_db, qb->sq_pi);
    arm_comp(n, qa->scq);

    sa = uz_mr_sge(ms, 64, 64);
    wa = (UzWr) {
        .wr_id = 0x3a00, .opcode = UZ_WR_RDMA_WRITE,
        .flags = UZ_WQE_F_SIGNALED, .sge = &sa, .num_sge = 1,
        .remote_addr = 0x10000, .rkey = 0x1234,
    };
    uz_post_send(qa, &wa);
    uz_cq_assert_empty(qa->scq, 5);

    irqs = uz_counter(&e.m, 0, "irqs");
    dbs = uz_counter(&e.m, 0, "doorbells");
    tx = uz_counter(&e.m, 0, "tx_pkts_ud");
    qtest_clock_step(e.m.qs->qts, MS);
    /* The timer raised the vector; the store into BAR 4 was refused. */
    g_assert_cmpuint(uz_counter(&e.m, 0, "irqs"), ==, irqs + 1);
    g_assert_cmpuint(uz_counter(&e.m, 0, "doorbells"), ==, dbs);
    uz_cq_wait(qa->scq, &c);
    uz_expect_err(&c, 0x3a00, UZ_WC_RDMA_WRITE, UZ_WC_STATUS_RETRY_EXC_ERR,
                  0, qa);
    uz_cq_assert_empty(qb->scq, 20);
    g_assert_cmpuint(uz_counter(&e.m, 0, "tx_pkts_ud"), ==, tx);
    g_assert_cmpint(uz_qp_state(qb), ==, UZ_QPS_RTS);

    /* The SEND was ready: rung by the driver, it goes. */
    uz_sq_ring(qb);
    uz_sq_done(qb, 0x3b00, UZ_WC_SEND, 32);
    g_assert_cmpuint(uz_counter(&e.m, 0, "tx_pkts_ud"), ==, tx + 1);
    env_stop(&e);
}

/* ------------------------------------------------------------------ */
/* 2. The responder's error with READ answers owed                    */
/* ------------------------------------------------------------------ */

#define RD_NUM              4
#define RD_LEN              (4u << 20)  /* 16384 answers at MTU 256 */
#define RD_PAGES            (RD_LEN / UZ_PAGE_SIZE)
#define RD_POOL             3

/* The two pairs and the memory of test_resp_error_deferred. */
typedef struct Deferred {
    Env e;
    UzQp *qa, *qb, *qc, *qd;
    UzMr *src;                  /* NIC 1: the READs' source */
    UzMr *sink;                 /* NIC 0: where the READs land */
    UzMr *ma, *md;
    uint8_t pool[RD_POOL][UZ_PAGE_SIZE];    /* the source's pages */
} Deferred;

/*
 * The READs' source on NIC 1: RD_PAGES + RD_NUM pages of an MR whose
 * page list cycles through the RD_POOL pages of pool.
 */
static void deferred_source(Deferred *d)
{
    UzNode *b = &d->e.n[1];
    uint32_t src_pages = RD_PAGES + RD_NUM, k, i;
    g_autofree uint64_t *pages = g_new(uint64_t, src_pages);
    uint64_t pool_gpa[RD_POOL];

    for (i = 0; i < RD_POOL; i++) {
        uz_pattern(d->pool[i], UZ_PAGE_SIZE, 0x200 + i);
        pool_gpa[i] = uz_alloc_pages(b, 1);
        qtest_memwrite(b->d.qts, pool_gpa[i], d->pool[i], UZ_PAGE_SIZE);
    }
    for (k = 0; k < src_pages; k++) {
        pages[k] = pool_gpa[k % RD_POOL];
    }
    d->src = uz_mr_reg_list(b, b->pdn, 0x7000000,
                            (uint64_t)src_pages * UZ_PAGE_SIZE, UZ_PAGE_SHIFT,
                            pages, src_pages,
                            UZ_ACCESS_LOCAL_WRITE | UZ_ACCESS_REMOTE_READ);
}

/*
 * qa's READs, its WRITE with a bad rkey and its SEND; qc's SEND and qd's
 * receive for it: all in place, none rung for.
 */
static void deferred_post(Deferred *d)
{
    UzSge s[RD_NUM + 2], sc, rd;
    UzWr wr;
    uint32_t i;

    /* READ i: from page i of the source into part i of the sink. */
    for (i = 0; i < RD_NUM; i++) {
        s[i] = uz_mr_sge(d->sink, (uint64_t)i * RD_LEN, RD_LEN);
        wr = (UzWr) {
            .wr_id = 0x2000 + i, .opcode = UZ_WR_RDMA_READ,
            .flags = UZ_WQE_F_SIGNALED, .sge = &s[i], .num_sge = 1,
            .remote_addr = uz_mr_va(d->src, i * UZ_PAGE_SIZE),
            .rkey = d->src->key,
        };
        uz_sq_post(d->qa, &wr);
    }
    s[RD_NUM] = uz_mr_sge(d->ma, 0, 64);
    wr = (UzWr) {
        .wr_id = 0x2010, .opcode = UZ_WR_RDMA_WRITE,
        .flags = UZ_WQE_F_SIGNALED, .sge = &s[RD_NUM], .num_sge = 1,
        .remote_addr = uz_mr_va(d->src, 0), .rkey = d->src->key ^ 0x80,
    };
    uz_sq_post(d->qa, &wr);
    s[RD_NUM + 1] = uz_mr_sge(d->ma, 0, 16);
    wr = (UzWr) {
        .wr_id = 0x2011, .opcode = UZ_WR_SEND, .flags = UZ_WQE_F_SIGNALED,
        .sge = &s[RD_NUM + 1], .num_sge = 1,
    };
    uz_sq_post(d->qa, &wr);
    /* The other pair's SEND, in place. */
    rd = uz_mr_sge(d->md, 0, 64);
    uz_post_recv(d->qd, 0x2d00, &rd, 1);
    sc = uz_mr_sge(d->ma, 64, 64);
    wr = (UzWr) {
        .wr_id = 0x2c00, .opcode = UZ_WR_SEND, .flags = UZ_WQE_F_SIGNALED,
        .sge = &sc, .num_sge = 1,
    };
    uz_sq_post(d->qc, &wr);
}

/* The sink is one block, its pages listed last first: the READs' data. */
static void deferred_check_sink(Deferred *d)
{
    UzNode *a = &d->e.n[0];
    UzMr *sink = d->sink;
    g_autofree uint8_t *got = g_malloc((size_t)RD_NUM * RD_LEN);
    uint32_t k;

    for (k = 0; k < RD_NUM * RD_LEN; k += 65536) {
        qtest_memread(a->d.qts, sink->pages[sink->npages - 1] + k, got + k,
                      65536);
    }
    for (k = 0; k < sink->npages; k++) {
        uz_assert_bytes(got + (size_t)(sink->npages - 1 - k) * UZ_PAGE_SIZE,
                        d->pool[(k / RD_PAGES + k % RD_PAGES) % RD_POOL],
                        UZ_PAGE_SIZE, "READ data");
    }
}

/*
 * Defect 2: an error in the responder while READ answers were owed sent
 * them all at once: megabytes of answers and then the NAK within one
 * turn of the main loop, before anything else on the device moved.
 * Rule: uzura_resp_error defers (err_owed); the work bottom half sends
 * the owed answers within its budget, then the NAK.
 * QP qa posts four READs of 4 MiB at path MTU 256 (65536 answers) from
 * an MR on NIC 1 whose page list cycles through three pages, an RDMA
 * WRITE with a bad rkey and a SEND; right after, a second pair qc-qd
 * exchanges a SEND.  That SEND completes before qa's WRITE fails; the
 * READs before the WRITE complete with their data, the WRITE with
 * REM_ACCESS_ERR, and the SEND behind it is flushed.
 */
static void test_resp_error_deferred(void)
{
    Deferred d;
    UzNode *a = &d.e.n[0], *b = &d.e.n[1];
    UzRcOpts o = UZ_RC_OPTS_DEFAULT;
    struct uz_cqe c;
    uint32_t i;

    env_start(&d.e, 2, false);
    o.path_mtu = UZ_MTU_256;
    d.qa = uz_qp_create(a, UZ_QPT_RC, NULL, NULL, NULL, 0);
    d.qb = uz_qp_create(b, UZ_QPT_RC, NULL, NULL, NULL, 0);
    uz_rc_connect(d.qa, d.qb, &o);
    d.qc = uz_qp_create(a, UZ_QPT_RC, NULL, NULL, NULL, 0);
    d.qd = uz_qp_create(b, UZ_QPT_RC, NULL, NULL, NULL, 0);
    uz_rc_connect(d.qc, d.qd, NULL);
    deferred_source(&d);
    d.sink = uz_mr_reg(a, RD_NUM * RD_LEN, UZ_ACCESS_ALL);
    d.ma = uz_mr_reg(a, 4096, UZ_ACCESS_ALL);
    d.md = uz_mr_reg(b, 4096, UZ_ACCESS_ALL);
    deferred_post(&d);

    /*
     * qa's requests reach NIC 1 within the first store, qc's SEND within
     * the second, right after.
     */
    uz_sq_ring(d.qa);
    uz_sq_ring(d.qc);

    for (i = 0; i < RD_NUM; i++) {
        uz_sq_done(d.qa, 0x2000 + i, UZ_WC_RDMA_READ, RD_LEN);
    }
    uz_sq_err(d.qa, 0x2010, UZ_WC_RDMA_WRITE,
              UZ_WC_STATUS_REM_ACCESS_ERR, 0);
    /* qc's SEND completed before: its CQE is there now. */
    g_assert(uz_cq_poll(d.qc->scq, &c));
    uz_expect_sq(&c, 0x2c00, UZ_WC_SEND, d.qc, 64);
    uz_rq_done(d.qd, 0x2d00, UZ_WC_RECV, 64, 0, 0);

    uz_sq_err(d.qa, 0x2011, UZ_WC_SEND, UZ_WC_STATUS_WR_FLUSH_ERR, 0);
    uz_cq_assert_empty(d.qa->scq, 5);
    g_assert_cmpint(uz_qp_state(d.qa), ==, UZ_QPS_ERR);
    g_assert_cmpint(uz_qp_state(d.qb), ==, UZ_QPS_ERR);
    g_assert_cmpint(uz_qp_state(d.qc), ==, UZ_QPS_RTS);
    deferred_check_sink(&d);
    env_stop(&d.e);
}

/* ------------------------------------------------------------------ */
/* 3. A READ of nearly 4 GiB from the wire                            */
/* ------------------------------------------------------------------ */

/*
 * Defect 5: the responder counted the packets of a READ in 32 bits: a
 * DMA length near 4 GiB wrapped to one packet at path MTU 1024, and the
 * READ was answered by a single READ Response Only.
 * Rule: no message is longer than 2^31 bytes, so such a READ is refused
 * (NAK invalid request, the QP goes to the error state); the largest
 * READ, 2^31 bytes, is answered First, Middle, ... (the count is 64-bit).
 * The test is the requester on the wire, at path MTU 1024, against an MR
 * of 4 GiB whose four 1 GiB pages are all the first GiB of guest memory.
 * Of the largest READ the first two answers are checked, then the QP
 * goes to the error state, which stops the rest.
 */
static void test_read_4g(void)
{
    static const uint64_t pages[4] = { 0, 0, 0, 0 };
    const uint32_t mtu = 1024, psn = 0x100;
    Env e;
    UzNode *n = &e.n[0];
    uint8_t pat[2 * 1024], ext[16];
    UzFrame req, fr;
    const uint8_t *p;
    UzQp *qp;
    UzMr *mr;

    env_start(&e, 1, true);
    mr = uz_mr_reg_list(n, n->pdn, 0, 1ull << 32, 30, pages,
                        ARRAY_SIZE(pages), UZ_ACCESS_REMOTE_READ);
    uz_pattern(pat, sizeof(pat), 5);
    qtest_memwrite(n->d.qts, 0, pat, sizeof(pat));

    /* Longer than any message: refused. */
    qp = uz_qp_create(n, UZ_QPT_RC, NULL, NULL, NULL, 0);
    rc_connect_wire(qp, psn, 0x200, NULL);          /* path MTU 1024 */
    wire_frame(&req, UZ_BTH_OP_READ_REQ, qp->qpn, psn, true, ext,
               put_reth(ext, 0, mr->key, 0xffffff00), NULL, 0);
    wire_send(&e, &req, 1);
    wire_next(&e, &fr);
    g_assert_cmphex(fr_op(&fr), ==, UZ_BTH_OP_ACK);
    g_assert_cmphex(fr_psn(&fr), ==, psn);
    g_assert_cmphex(fr_after_bth(&fr)[0], ==, UZ_AETH_NAK_INV_REQ);
    g_assert_cmpint(uz_qp_state(qp), ==, UZ_QPS_ERR);

    /* The largest READ: answered in many packets, not one. */
    qp = uz_qp_create(n, UZ_QPT_RC, NULL, NULL, NULL, 0);
    rc_connect_wire(qp, psn, 0x200, NULL);
    wire_frame(&req, UZ_BTH_OP_READ_REQ, qp->qpn, psn, true, ext,
               put_reth(ext, 0, mr->key, 0x80000000u), NULL, 0);
    wire_send(&e, &req, 1);

    wire_next(&e, &fr);
    g_assert_cmphex(fr_op(&fr), ==, UZ_BTH_OP_READ_RESP_FIRST);
    g_assert_cmphex(fr_psn(&fr), ==, psn);
    g_assert_cmphex(fr_dqpn(&fr), ==, PEER_QPN);
    g_assert_cmpuint(fr.len, ==, UZ_OFF_BTH + UZ_BTH_LEN + 4 + mtu + 4);
    p = fr_after_bth(&fr);
    g_assert_cmphex(p[0] & UZ_AETH_TYPE_MASK, ==, UZ_AETH_ACK);
    uz_assert_bytes(p + 4, pat, mtu, "READ Response First");

    wire_next(&e, &fr);
    g_assert_cmphex(fr_op(&fr), ==, UZ_BTH_OP_READ_RESP_MIDDLE);
    g_assert_cmphex(fr_psn(&fr), ==, psn + 1);
    g_assert_cmpuint(fr.len, ==, UZ_OFF_BTH + UZ_BTH_LEN + mtu + 4);
    uz_assert_bytes(fr_after_bth(&fr), pat + mtu, mtu,
                    "READ Response Middle");

    uz_qp_set_state(qp, UZ_QPS_ERR);
    uz_wire_drain(e.sock, &n->d);
    g_assert_cmpint(uz_qp_state(qp), ==, UZ_QPS_ERR);
    g_assert_cmphex(uz_rd(&n->d, UZ_REG_ADMIN_STATUS), ==,
                    UZ_ADMIN_STATUS_ENABLED);
    env_stop(&e);
}

/* ------------------------------------------------------------------ */
/* 4. Undefined shifts                                                */
/* ------------------------------------------------------------------ */

#define WIN_NPKTS           80      /* READ answers, 64 + 16 */

/*
 * Defect 6a: a READ response 64 or more packets past the oldest one
 * missing was looked up in the 64-packet window of answers received by a
 * shift of 64 or more (undefined; UBSan stops QEMU).
 * Rule: the window is checked first; such a response is counted in
 * rx_stale and the READ is asked again.
 * The test is the responder on the wire: QP qp READs 80 packets at path
 * MTU 256.  Answers 64 and 79 come first and are stale; then all 80 in
 * order, and the READ completes with them.
 */
static void test_read_resp_window(void)
{
    const uint32_t mtu = 256, len = WIN_NPKTS * mtu, psn = 0x300;
    Env e;
    UzNode *n = &e.n[0];
    UzRcOpts o = UZ_RC_OPTS_DEFAULT;
    g_autofree uint8_t *data = g_malloc(len);
    g_autofree UzFrame *fr = g_new(UzFrame, WIN_NPKTS);
    uint64_t stale;
    uint8_t ext[4];
    UzFrame req;
    UzQp *qp;
    UzMr *mr;
    UzSge s;
    UzWr wr;
    uint32_t k;

    env_start(&e, 1, true);
    o.path_mtu = UZ_MTU_256;
    qp = uz_qp_create(n, UZ_QPT_RC, NULL, NULL, NULL, 0);
    rc_connect_wire(qp, 0x100, psn, &o);
    mr = uz_mr_reg(n, len, UZ_ACCESS_ALL);
    uz_pattern(data, len, 6);

    s = uz_mr_sge(mr, 0, len);
    wr = (UzWr) {
        .wr_id = 0x6a00, .opcode = UZ_WR_RDMA_READ,
        .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1,
        .remote_addr = 0x40000, .rkey = 0x4242,
    };
    uz_post_send(qp, &wr);
    wire_next(&e, &req);
    g_assert_cmphex(fr_op(&req), ==, UZ_BTH_OP_READ_REQ);
    g_assert_cmphex(fr_psn(&req), ==, psn);
    g_assert_cmpuint(ldl_be_p(fr_after_bth(&req) + 12), ==, len);

    for (k = 0; k < WIN_NPKTS; k++) {
        uint8_t op = k == 0 ? UZ_BTH_OP_READ_RESP_FIRST :
                     k == WIN_NPKTS - 1 ? UZ_BTH_OP_READ_RESP_LAST :
                     UZ_BTH_OP_READ_RESP_MIDDLE;
        size_t ext_len = op == UZ_BTH_OP_READ_RESP_MIDDLE ? 0 :
                         put_aeth(ext, UZ_AETH_ACK | 0x1f, 1);

        wire_frame(&fr[k], op, qp->qpn, psn + k, false, ext, ext_len,
                   data + k * mtu, mtu);
    }

    stale = uz_counter(&e.m, 0, "rx_stale");
    wire_send(&e, &fr[64], 1);
    wire_send(&e, &fr[WIN_NPKTS - 1], 1);
    g_assert_cmpuint(uz_counter_wait(n, "rx_stale", stale + 2), ==,
                     stale + 2);
    /* Asked again, nothing completed. */
    wire_next(&e, &req);
    g_assert_cmphex(fr_op(&req), ==, UZ_BTH_OP_READ_REQ);
    g_assert_cmphex(fr_psn(&req), ==, psn);
    uz_wire_drain(e.sock, &n->d);
    uz_cq_assert_empty(qp->scq, 5);
    g_assert_cmpint(uz_qp_state(qp), ==, UZ_QPS_RTS);

    wire_send(&e, fr, WIN_NPKTS);
    uz_sq_done(qp, 0x6a00, UZ_WC_RDMA_READ, len);
    uz_assert_mr(mr, 0, data, len, "READ data");
    g_assert_cmpuint(uz_counter(&e.m, 0, "rx_stale"), ==, stale + 2);
    env_stop(&e);
}

/*
 * A READ sent again after a timeout asked for all of its bytes again,
 * though its first packets had come: on a path slower than the READ's
 * length per ACK timeout, it never completed.
 * Rule: it asks for the rest only, from the PSN of the first packet
 * missing, with the RETH moved on; the answer's First response is at
 * that PSN.
 * The test is the responder on the wire: QP qp READs 8 packets at path
 * MTU 256; answers 0-2 come, 3 is lost.  After the ACK timeout the READ
 * goes again for packets 3-7 (PSN, address and length); a late Middle
 * answer for packet 3 from the first answer is taken, the new answer's
 * First for it is a duplicate, and the READ completes with all 8.
 */
static void test_read_rest(void)
{
    const uint32_t mtu = 256, npkts = 8, len = npkts * mtu, psn = 0x500;
    const uint64_t va = 0x40000;
    Env e;
    UzNode *n = &e.n[0];
    UzRcOpts o = UZ_RC_OPTS_DEFAULT;
    g_autofree uint8_t *data = g_malloc(len);
    UzFrame fr, req;
    uint8_t ext[4];
    size_t ext_len;
    const uint8_t *reth;
    uint64_t stale;
    UzQp *qp;
    UzMr *mr;
    UzSge s;
    UzWr wr;
    uint32_t k;

    env_start(&e, 1, true);
    o.path_mtu = UZ_MTU_256;
    o.timeout = 10;                     /* 4.2 ms */
    qp = uz_qp_create(n, UZ_QPT_RC, NULL, NULL, NULL, 0);
    rc_connect_wire(qp, 0x100, psn, &o);
    mr = uz_mr_reg(n, len, UZ_ACCESS_ALL);
    uz_pattern(data, len, 7);

    s = uz_mr_sge(mr, 0, len);
    wr = (UzWr) {
        .wr_id = 0x6d00, .opcode = UZ_WR_RDMA_READ,
        .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1,
        .remote_addr = va, .rkey = 0x4242,
    };
    uz_post_send(qp, &wr);
    wire_next(&e, &req);
    g_assert_cmphex(fr_op(&req), ==, UZ_BTH_OP_READ_REQ);
    g_assert_cmphex(fr_psn(&req), ==, psn);

    for (k = 0; k < 3; k++) {
        wire_frame(&fr, k ? UZ_BTH_OP_READ_RESP_MIDDLE :
                   UZ_BTH_OP_READ_RESP_FIRST, qp->qpn, psn + k, false, ext,
                   k ? 0 : put_aeth(ext, UZ_AETH_ACK | 0x1f, 1),
                   data + k * mtu, mtu);
        wire_send(&e, &fr, 1);
    }
    uz_wire_drain(e.sock, &n->d);
    qtest_clock_step(e.m.qs->qts, 10 * MS);
    wire_next(&e, &req);
    reth = fr_after_bth(&req);
    g_assert_cmphex(fr_op(&req), ==, UZ_BTH_OP_READ_REQ);
    g_assert_cmphex(fr_psn(&req), ==, psn + 3);
    g_assert_cmphex(ldq_be_p(reth), ==, va + 3 * mtu);
    g_assert_cmphex(ldl_be_p(reth + 8), ==, 0x4242);
    g_assert_cmpuint(ldl_be_p(reth + 12), ==, 5 * mtu);
    uz_cq_assert_empty(qp->scq, 5);

    stale = uz_counter(&e.m, 0, "rx_stale");
    /* Late, from the first answer. */
    wire_frame(&fr, UZ_BTH_OP_READ_RESP_MIDDLE, qp->qpn, psn + 3, false,
               NULL, 0, data + 3 * mtu, mtu);
    wire_send(&e, &fr, 1);
    /* The answer to the rest. */
    for (k = 3; k < npkts; k++) {
        uint8_t op = k == 3 ? UZ_BTH_OP_READ_RESP_FIRST :
                     k == npkts - 1 ? UZ_BTH_OP_READ_RESP_LAST :
                     UZ_BTH_OP_READ_RESP_MIDDLE;

        ext_len = op == UZ_BTH_OP_READ_RESP_MIDDLE ? 0 :
                  put_aeth(ext, UZ_AETH_ACK | 0x1f, 1);
        wire_frame(&fr, op, qp->qpn, psn + k, false, ext, ext_len,
                   data + k * mtu, mtu);
        wire_send(&e, &fr, 1);
    }
    uz_sq_done(qp, 0x6d00, UZ_WC_RDMA_READ, len);
    uz_assert_mr(mr, 0, data, len, "READ data");
    g_assert_cmpuint(uz_counter(&e.m, 0, "rx_stale"), ==, stale + 1);
    g_assert_cmpint(uz_qp_state(qp), ==, UZ_QPS_RTS);
    env_stop(&e);
}

/*
 * Defect 6b/6c: REG_MR computed the page mask of page_shift before
 * checking it, and a DMA MR kept the page_shift it was given, by which
 * the data path then shifted: shifts by 200 or 255 (undefined).
 * Rule: a page-list MR takes page_shift 12..30, else BAD_PARAM; a DMA MR
 * has no pages, and its page_shift is ignored: with 255 it works as any
 * DMA MR, as the target of a WRITE and the source of a READ.
 */
static void test_mr_page_shift(void)
{
    static const uint8_t bad[] = { 200, 255, 64, 31, 11 };
    const uint32_t len = 5000;
    Env e;
    UzNode *a = &e.n[0], *b = &e.n[1];
    struct uz_cmd_reg_mr c = { 0 };
    struct uz_admin_cqe cqe;
    g_autofree uint8_t *data = g_malloc(len);
    UzMr *ma, *dma;
    UzQp *qa, *qb;
    UzSge s;
    UzWr wr;
    int i;

    env_start(&e, 2, false);
    c.iova = cpu_to_le64(0x10000);
    c.length = cpu_to_le64(4096);
    c.pbl_addr = cpu_to_le64(uz_alloc(&b->d, 8));
    qtest_writeq(b->d.qts, le64_to_cpu(c.pbl_addr), uz_alloc_pages(b, 1));
    c.npages = cpu_to_le32(1);
    c.pdn = cpu_to_le32(b->pdn);
    c.access = cpu_to_le32(UZ_ACCESS_LOCAL_WRITE);
    c.key = 0x99;
    for (i = 0; i < ARRAY_SIZE(bad); i++) {
        c.page_shift = bad[i];
        g_assert_cmpint(uz_cmd(b, UZ_CMD_REG_MR, &c, sizeof(c), NULL), ==,
                        UZ_CMD_BAD_PARAM);
    }
    c.page_shift = UZ_PAGE_SHIFT;
    g_assert_cmpint(uz_cmd(b, UZ_CMD_REG_MR, &c, sizeof(c), NULL), ==,
                    UZ_CMD_OK);

    /* A DMA MR of 16 KiB, registered with page_shift 255. */
    dma = uz_own(b, sizeof(*dma));
    dma->n = b;
    dma->pdn = b->pdn;
    dma->access = UZ_ACCESS_ALL;
    dma->dma = true;
    dma->len = 16384;
    dma->iova = uz_alloc(&b->d, dma->len);
    c = (struct uz_cmd_reg_mr) {
        .iova = cpu_to_le64(dma->iova), .length = cpu_to_le64(dma->len),
        .pdn = cpu_to_le32(b->pdn), .access = cpu_to_le32(dma->access),
        .page_shift = 255, .key = b->next_key++, .flags = UZ_MR_F_DMA,
    };
    g_assert_cmpint(uz_cmd(b, UZ_CMD_REG_MR, &c, sizeof(c), &cqe), ==,
                    UZ_CMD_OK);
    dma->key = le32_to_cpu(cqe.out0);
    g_ptr_array_add(b->mrs, dma);

    qa = uz_qp_create(a, UZ_QPT_RC, NULL, NULL, NULL, 0);
    qb = uz_qp_create(b, UZ_QPT_RC, NULL, NULL, NULL, 0);
    uz_rc_connect(qa, qb, NULL);
    ma = uz_mr_reg(a, 16384, UZ_ACCESS_ALL);
    /* A WRITE into it across pages, its neighbours untouched ... */
    uz_check_write(qa, qb, ma, dma, len, false, 1);
    /* ... and a READ of it. */
    uz_mr_read(dma, 4093, data, len);
    uz_mr_fill(ma, 8192, 0, len);
    s = uz_mr_sge(ma, 8192, len);
    wr = (UzWr) {
        .wr_id = 0x6c00, .opcode = UZ_WR_RDMA_READ,
        .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1,
        .remote_addr = uz_mr_va(dma, 4093), .rkey = dma->key,
    };
    uz_post_send(qa, &wr);
    uz_sq_done(qa, 0x6c00, UZ_WC_RDMA_READ, len);
    uz_assert_mr(ma, 8192, data, len, "READ of the DMA MR");
    g_assert_cmpint(uz_invalidate_xlat(b, dma->key, 0, dma->iova, 4096), ==,
                    UZ_CMD_OK);
    uz_check_write(qa, qb, ma, dma, 100, true, 2);
    env_stop(&e);
}

/* ------------------------------------------------------------------ */
/* 5. DMA MRs are the kernel's                                        */
/* ------------------------------------------------------------------ */

/*
 * Defect 7: any context could register a DMA MR, which reaches all of
 * guest memory by physical address: a user process could read and write
 * the kernel's memory through the NIC.
 * Rule: REG_MR with UZ_MR_F_DMA from a user context (uctx != 0) is
 * BAD_PARAM; from the kernel (uctx 0) it is OK.  The same user context
 * may register a page-list MR.
 */
static void test_dma_mr_user(void)
{
    Env e;
    UzNode *n = &e.n[0];
    struct uz_cmd_create_uctx cu = { 0 };
    struct uz_cmd_reg_mr c = { 0 };
    struct uz_cmd_obj po = { 0 };
    struct uz_admin_cqe cqe;
    uint32_t uctx, pdn;
    uint64_t buf;

    env_start(&e, 1, false);
    g_assert_cmpint(uz_cmd(n, UZ_CMD_CREATE_UCTX, &cu, sizeof(cu), &cqe), ==,
                    UZ_CMD_OK);
    uctx = le32_to_cpu(cqe.out0);
    g_assert_cmpuint(uctx, !=, 0);
    po.uctx = cpu_to_le32(uctx);
    g_assert_cmpint(uz_cmd(n, UZ_CMD_ALLOC_PD, &po, sizeof(po), &cqe), ==,
                    UZ_CMD_OK);
    pdn = le32_to_cpu(cqe.out0);

    buf = uz_alloc_pages(n, 1);
    c.iova = cpu_to_le64(buf);
    c.length = cpu_to_le64(4096);
    c.pdn = cpu_to_le32(pdn);
    c.uctx = cpu_to_le32(uctx);
    c.access = cpu_to_le32(UZ_ACCESS_ALL);
    c.page_shift = UZ_PAGE_SHIFT;
    c.key = 0x42;
    c.flags = UZ_MR_F_DMA;
    g_assert_cmpint(uz_cmd(n, UZ_CMD_REG_MR, &c, sizeof(c), NULL), ==,
                    UZ_CMD_BAD_PARAM);

    /* The context may have an MR with a page list. */
    c.flags = 0;
    c.npages = cpu_to_le32(1);
    c.pbl_addr = cpu_to_le64(uz_alloc(&n->d, 8));
    qtest_writeq(n->d.qts, le64_to_cpu(c.pbl_addr), buf);
    g_assert_cmpint(uz_cmd(n, UZ_CMD_REG_MR, &c, sizeof(c), NULL), ==,
                    UZ_CMD_OK);

    /* The kernel may have a DMA MR. */
    uz_mr_reg_dma(n, 4096, UZ_ACCESS_ALL);
    env_stop(&e);
}

/* ------------------------------------------------------------------ */
/* 6. UD messages larger than the receive WQE                         */
/* ------------------------------------------------------------------ */

/*
 * A UD QP (or with @gsi the GSI QP) on each NIC: a message too long for
 * the first receive WQE is dropped and counted, the next that fits takes
 * that WQE, and the large one fits the second.
 */
static void ud_too_long_rq(Env *e, bool gsi, const uint8_t *big,
                           size_t big_len, const uint8_t *small,
                           size_t small_len)
{
    UzNode *a = &e->n[0], *b = &e->n[1];
    uint8_t type = gsi ? UZ_QPT_GSI : UZ_QPT_UD;
    uint32_t qkey = gsi ? UZ_GSI_QKEY : QKEY;
    uint64_t id = 0x8000 + 0x100 * gsi;
    UzQp *qs = uz_qp_create(a, type, NULL, NULL, NULL, 0);
    UzQp *qr = uz_qp_create(b, type, NULL, NULL, NULL, 0);
    UzMr *ms = uz_mr_reg(a, 4096, UZ_ACCESS_ALL);
    UzMr *mr = uz_mr_reg(b, 8192, UZ_ACCESS_ALL);
    uint32_t ahn = uz_ah_create(a, 1);
    UzSge r0 = uz_mr_sge(mr, 0, GRH_LEN + small_len);
    UzSge r1 = uz_mr_sge(mr, 4096, GRH_LEN + 1024);
    struct uz_cqe c;
    uint64_t too;

    uz_ud_up(qs, qkey, 0);
    uz_ud_up(qr, qkey, 0);
    uz_post_recv(qr, id + 1, &r0, 1);
    uz_post_recv(qr, id + 2, &r1, 1);

    too = uz_counter(&e->m, 1, "rx_ud_too_long");
    ud_send(qs, ms, ahn, qr->qpn, qkey, big, big_len, id + 0x11);
    g_assert_cmpuint(uz_counter_wait(b, "rx_ud_too_long", too + 1), ==,
                     too + 1);
    uz_cq_assert_empty(qr->rcq, 10);
    g_assert_cmpint(uz_qp_state(qr), ==, UZ_QPS_RTS);

    /* The next that fits takes the first WQE ... */
    ud_send(qs, ms, ahn, qr->qpn, qkey, small, small_len, id + 0x12);
    uz_cq_wait(qr->rcq, &c);
    uz_expect_rq(&c, id + 1, UZ_WC_RECV, qr->qpn,
                 GRH_LEN + small_len, UZ_WC_F_GRH | UZ_WC_F_IPV4,
                 0, qs->qpn);
    uz_assert_mr(mr, GRH_LEN, small, small_len, "UD payload");
    /* ... and the large one fits the second. */
    ud_send(qs, ms, ahn, qr->qpn, qkey, big, big_len, id + 0x13);
    uz_cq_wait(qr->rcq, &c);
    uz_expect_rq(&c, id + 2, UZ_WC_RECV, qr->qpn,
                 GRH_LEN + big_len, UZ_WC_F_GRH | UZ_WC_F_IPV4,
                 0, qs->qpn);
    uz_assert_mr(mr, 4096 + GRH_LEN, big, big_len, "UD payload");
    g_assert_cmpuint(uz_counter(&e->m, 1, "rx_ud_too_long"), ==, too + 1);
    g_assert_cmpint(uz_qp_state(qr), ==, UZ_QPS_RTS);
}

/*
 * With an SRQ the kept WQE is the QP's, taken from the SRQ: when the
 * QP fails it completes with a flush error, like an RQ's would.
 */
static void ud_too_long_srq(Env *e, const uint8_t *big, size_t big_len,
                            size_t small_len)
{
    UzNode *a = &e->n[0], *b = &e->n[1];
    UzSrq *srq = uz_srq_create(b, 4, 0);
    UzQp *qs = uz_qp_create(a, UZ_QPT_UD, NULL, NULL, NULL, 0);
    UzQp *qr = uz_qp_create(b, UZ_QPT_UD, NULL, NULL, srq, 0);
    UzMr *ms = uz_mr_reg(a, 4096, UZ_ACCESS_ALL);
    UzMr *mr = uz_mr_reg(b, 4096, UZ_ACCESS_ALL);
    uint32_t ahn = uz_ah_create(a, 1);
    UzSge r0 = uz_mr_sge(mr, 0, GRH_LEN + small_len);
    struct uz_cqe c;
    uint64_t too;

    uz_ud_up(qs, QKEY, 0);
    uz_ud_up(qr, QKEY, 0);
    uz_srq_post(srq, 0x8301, &r0, 1);
    too = uz_counter(&e->m, 1, "rx_ud_too_long");
    ud_send(qs, ms, ahn, qr->qpn, QKEY, big, big_len, 0x8311);
    uz_counter_wait(b, "rx_ud_too_long", too + 1);
    uz_cq_assert_empty(qr->rcq, 10);
    uz_qp_set_state(qr, UZ_QPS_ERR);
    uz_cq_wait(qr->rcq, &c);
    uz_cqe_expect(&c, 0x8301, UZ_WC_RECV, UZ_WC_STATUS_WR_FLUSH_ERR, 0,
                  qr->qpn);
    uz_cq_assert_empty(qr->rcq, 10);
}

/*
 * Defect 8: a UD or GSI message larger than the receive WQE completed
 * the WQE with LOC_LEN_ERR and moved the QP to the error state: any host
 * on the link could stop QP1, which serves every process's RDMA CM, with
 * one large datagram.
 * Rule: the message is dropped and counted in rx_ud_too_long; the WQE is
 * kept, the QP stays in RTS, and the next message that fits lands in
 * that same WQE (the one posted behind it is the next one's).
 */
static void test_ud_too_long(void)
{
    Env e;
    uint8_t big[200], small[64];

    env_start(&e, 2, false);
    uz_pattern(big, sizeof(big), 8);
    uz_pattern(small, sizeof(small), 9);
    ud_too_long_rq(&e, false, big, sizeof(big), small, sizeof(small));
    ud_too_long_rq(&e, true, big, sizeof(big), small, sizeof(small));
    ud_too_long_srq(&e, big, sizeof(big), sizeof(small));
    env_stop(&e);
}

/*
 * An address vector in the WQE (UZ_WQE_F_AV) is the kernel's: its QPs
 * post with AHs made where no command can run.  A user context's QP must
 * name an AH the kernel created and checked, or it could send from any
 * source GID and MAC it likes.
 * Rule: UZ_WQE_F_AV on a UD QP of a user context is a malformed WQE; the
 * peer receives nothing, and the QP fails as for any malformed WQE.
 */
static void test_av_user_qp(void)
{
    Env e;
    UzNode *a = &e.n[0], *b = &e.n[1];
    struct uz_av av = { .hop_limit = 64 };
    struct uz_admin_cqe cqe;
    uint8_t data[32];
    uint64_t rx;
    UzQp *qs, *qr;
    UzMr *ms, *mr;
    UzSge s, r;
    UzWr wr;

    env_start(&e, 2, false);
    qr = uz_qp_create(b, UZ_QPT_UD, NULL, NULL, NULL, 0);
    uz_ud_up(qr, QKEY, 0);
    mr = uz_mr_reg(b, 4096, UZ_ACCESS_ALL);
    r = uz_mr_sge(mr, 0, GRH_LEN + sizeof(data));
    uz_post_recv(qr, 0xa0f1, &r, 1);

    /* Node a's objects from here on are a user context's. */
    g_assert_cmpint(uz_cmd(a, UZ_CMD_CREATE_UCTX, NULL, 0, &cqe), ==,
                    UZ_CMD_OK);
    a->uctx = le32_to_cpu(cqe.out0);
    a->pdn = uz_pd_alloc(a);
    qs = uz_qp_create(a, UZ_QPT_UD, NULL, NULL, NULL, 0);
    uz_ud_up(qs, QKEY, 0);
    ms = uz_mr_reg(a, 4096, UZ_ACCESS_ALL);
    uz_pattern(data, sizeof(data), 0xa0);
    uz_mr_write(ms, 0, data, sizeof(data));
    uz_node_mac(1, av.dmac);
    uz_node_gid(1, av.dgid);
    uz_node_gid(0, av.sgid);
    s = uz_mr_sge(ms, 0, sizeof(data));
    wr = (UzWr) {
        .wr_id = 0xa0f0, .opcode = UZ_WR_SEND, .flags = UZ_WQE_F_SIGNALED,
        .sge = &s, .num_sge = 1, .av = &av, .remote_qpn = qr->qpn,
        .remote_qkey = QKEY,
    };

    rx = uz_counter(&e.m, 1, "rx_frames");
    uz_post_send(qs, &wr);
    uz_sq_err(qs, 0xa0f0, UZ_WC_SEND, UZ_WC_STATUS_LOC_QP_OP_ERR,
              UZ_VERR_BAD_WQE);
    g_assert_cmpint(uz_qp_state(qs), ==, UZ_QPS_ERR);
    uz_cq_assert_empty(qr->rcq, 20);
    g_assert_cmpuint(uz_counter(&e.m, 1, "rx_frames"), ==, rx);
    env_stop(&e);
}

/* ------------------------------------------------------------------ */
/* 7. An atomic without an answer slot                                */
/* ------------------------------------------------------------------ */

#define AT_READ_LEN         (16 * 1024)     /* 64 answers at MTU 256 */

/*
 * Systemic 4: an atomic that the responder could not answer (every one
 * of its max-qp-rd-atom answer slots busy) changed memory, then was
 * refused: the requester saw an error, the location a change.
 * Rule: the slot is taken before memory changes; a refused atomic changes
 * nothing.
 * The test is the requester on the wire.  A first FETCH_ADD is answered
 * and adds; then 16 READs of 64 answers each and a FETCH_ADD go to the
 * QP in one write: all 16 slots are busy when the atomic arrives.  The
 * answers come, then a NAK (invalid request) for the atomic, and the
 * location keeps its value.
 */
static void test_atomic_no_slot(void)
{
    const uint64_t v0 = 0x1122334455667788ull;
    const uint32_t psn = 0x500;
    Env e;
    UzNode *n = &e.n[0];
    UzRcOpts o = UZ_RC_OPTS_DEFAULT;
    UzFrame fr[UZ_RD_ATOMIC + 1];
    uint8_t ext[28];
    uint32_t reads = 0, k;
    uint64_t loc, v;
    UzQp *qp;
    UzMr *mr;

    env_start(&e, 1, true);
    o.path_mtu = UZ_MTU_256;
    qp = uz_qp_create(n, UZ_QPT_RC, NULL, NULL, NULL, 0);
    rc_connect_wire(qp, psn, 0x200, &o);
    mr = uz_mr_reg(n, AT_READ_LEN + 4096, UZ_ACCESS_ALL);
    loc = uz_mr_va(mr, AT_READ_LEN);
    v = cpu_to_le64(v0);
    uz_mr_write(mr, AT_READ_LEN, &v, 8);

    /* An atomic with a free slot is answered, and adds. */
    wire_frame(&fr[0], UZ_BTH_OP_FETCH_ADD, qp->qpn, psn, true, ext,
               put_atomic_eth(ext, loc, mr->key, 1, 0), NULL, 0);
    wire_send(&e, fr, 1);
    wire_next(&e, &fr[0]);
    g_assert_cmphex(fr_op(&fr[0]), ==, UZ_BTH_OP_ATOMIC_ACK);
    g_assert_cmphex(fr_psn(&fr[0]), ==, psn);
    g_assert_cmphex(ldq_be_p(fr_after_bth(&fr[0]) + 4), ==, v0);
    uz_mr_read(mr, AT_READ_LEN, &v, 8);
    g_assert_cmphex(le64_to_cpu(v), ==, v0 + 1);
    uz_wire_drain(e.sock, &n->d);           /* and the ACK it asked for */

    /* Every slot busy with a READ, then an atomic. */
    for (k = 0; k < UZ_RD_ATOMIC; k++) {
        wire_frame(&fr[k], UZ_BTH_OP_READ_REQ, qp->qpn,
                   psn + 1 + k * (AT_READ_LEN / 256), true, ext,
                   put_reth(ext, uz_mr_va(mr, 0), mr->key, AT_READ_LEN),
                   NULL, 0);
    }
    wire_frame(&fr[k], UZ_BTH_OP_FETCH_ADD, qp->qpn,
               psn + 1 + k * (AT_READ_LEN / 256), true, ext,
               put_atomic_eth(ext, loc, mr->key, 1, 0), NULL, 0);
    wire_send(&e, fr, UZ_RD_ATOMIC + 1);

    /* The READs are answered in full, then the atomic is refused. */
    for (;;) {
        wire_next(&e, &fr[0]);
        if (!op_is_read_resp(fr_op(&fr[0]))) {
            break;
        }
        reads++;
    }
    g_assert_cmpuint(reads, ==, UZ_RD_ATOMIC * (AT_READ_LEN / 256));
    g_assert_cmphex(fr_op(&fr[0]), ==, UZ_BTH_OP_ACK);
    g_assert_cmphex(fr_after_bth(&fr[0])[0], ==, UZ_AETH_NAK_INV_REQ);
    g_assert_cmphex(fr_psn(&fr[0]), ==,
                    psn + 1 + UZ_RD_ATOMIC * (AT_READ_LEN / 256));
    uz_mr_read(mr, AT_READ_LEN, &v, 8);
    g_assert_cmphex(le64_to_cpu(v), ==, v0 + 1);
    uz_wire_drain(e.sock, &n->d);
    g_assert_cmpint(uz_qp_state(qp), ==, UZ_QPS_ERR);
    env_stop(&e);
}

/* ------------------------------------------------------------------ */
/* Round 3: wrapping indices, bytes a peer can pin, the admin budget   */
/* ------------------------------------------------------------------ */

/* Property @prop of NIC @nic, an unsigned number. */
static uint64_t env_uint(Env *e, int nic, const char *prop)
{
    return uz_counter(&e->m, nic, prop);
}

/* Load the fault rules @text into NIC @nic. */
static void env_rules(Env *e, int nic, const char *text)
{
    g_autofree char *path = g_strdup_printf("/machine/peripheral/uz%d", nic);
    QDict *rsp = qtest_qmp(e->m.qs->qts, "{'execute': 'qom-set', "
                           "'arguments': {'path': %s, "
                           "'property': 'fault-rules', 'value': %s}}",
                           path, text);

    g_assert(qdict_haskey(rsp, "return"));
    qobject_unref(rsp);
}

/* How often the first fault rule of NIC @nic acted, from its comment. */
static uint64_t env_rule_acted(Env *e, int nic)
{
    g_autofree char *path = g_strdup_printf("/machine/peripheral/uz%d", nic);
    QDict *rsp = qtest_qmp(e->m.qs->qts, "{'execute': 'qom-get', "
                           "'arguments': {'path': %s, "
                           "'property': 'fault-rules'}}", path);
    const char *c = strstr(qdict_get_str(rsp, "return"), "acted ");
    const char *end;
    uint64_t v;

    g_assert(c);
    g_assert(!qemu_strtou64(c + 6, &end, 10, &v));
    qobject_unref(rsp);
    return v;
}

/* Set bits of BTH byte 8 of @fr (UZ_BTH_B8_SR) and seal it again. */
static void fr_set_b8(UzFrame *fr, uint8_t bits)
{
    fr->data[UZ_OFF_BTH + 8] |= bits;
    stl_le_p(fr->data + fr->len - UZ_ICRC_LEN, uz_icrc(fr->data, fr->len));
}

/* @n copies of the @len bytes at @buf on the wire, in one write. */
static void wire_send_raw(Env *e, const uint8_t *buf, size_t len, int n)
{
    g_autoptr(GByteArray) out = g_byte_array_new();
    uint8_t hdr[4];
    size_t off = 0;
    int i;

    stl_be_p(hdr, len);
    for (i = 0; i < n; i++) {
        g_byte_array_append(out, hdr, sizeof(hdr));
        g_byte_array_append(out, buf, len);
    }
    while (off < out->len) {
        ssize_t r = send(e->sock, out->data + off, out->len - off, 0);

        g_assert_cmpint(r, >, 0);
        off += r;
    }
    uz_poll_pause(&e->n[0].d);
}

/* ---- A WQE cache keyed by an index that wraps ---- */

#define WRAP_LOG_SQ         14
#define WRAP_RKEY           0x4242u

/*
 * A READ of 64 bytes into @mr at @off, posted at SQ index @pi of @qp,
 * answered from the wire with @data at @psn; it completes.
 */
static void wrap_read(Env *e, UzQp *qp, UzMr *mr, uint32_t off, uint32_t pi,
                      uint32_t psn, const uint8_t *data)
{
    UzSge s = uz_mr_sge(mr, off, 64);
    UzWr wr = {
        .wr_id = 0x4ead0000 + off, .opcode = UZ_WR_RDMA_READ,
        .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1,
        .remote_addr = 0x10000, .rkey = WRAP_RKEY,
    };
    uint8_t ext[4];
    UzFrame fr;
    struct uz_cqe c;

    qp->sq_pi = pi;
    uz_post_send(qp, &wr);
    wire_next(e, &fr);
    g_assert_cmphex(fr_op(&fr), ==, UZ_BTH_OP_READ_REQ);
    g_assert_cmphex(fr_psn(&fr), ==, psn);
    wire_frame(&fr, UZ_BTH_OP_READ_RESP_ONLY, qp->qpn, psn, false, ext,
               put_aeth(ext, UZ_AETH_ACK | 0x1f, psn), data, 64);
    wire_send(e, &fr, 1);
    uz_cq_wait(qp->scq, &c);
    uz_expect_sq(&c, wr.wr_id, UZ_WC_RDMA_READ, qp, 64);
}

/*
 * Defect 1 of round 3: the requester kept the READ WQE it had decoded
 * last, to place the READ's response packets, keyed by its 24-bit
 * message index alone.  A READ 2^24 messages after the previous one,
 * with none between, took the stale WQE: its data landed in the first
 * READ's buffer and the completion said success.
 * Rule: a cache keyed by a counter that wraps checks what it holds; the
 * WQE cache is keyed by the message's 64-bit sequence number.
 * The test is the responder on the wire.  A READ into b1 is message 0;
 * 2^24 - 1 LOCAL_INV WQEs follow (the ring written once, rung a ring at
 * a time, its last WQE signalled); a READ into b2 is message 2^24: its
 * data lands in b2, and b1 keeps the first READ's.
 */
static void test_wqe_cache_wrap(void)
{
    const uint32_t depth = 1u << WRAP_LOG_SQ, psn = 0x300;
    g_autofree uint8_t *ring = g_malloc((size_t)depth * UZ_SQ_WQE_SIZE);
    uint8_t one[64], two[64];
    Env e;
    UzNode *n = &e.n[0];
    UzMr *mr, *fast;
    UzQp *qp;
    UzWr inv;
    struct uz_cqe c;
    uint32_t pi, k;

    env_start_args(&e, 1, true, "-global uzura.max-qp-wr=16384");
    mr = uz_mr_reg(n, 4096, UZ_ACCESS_LOCAL_WRITE);
    fast = uz_mr_alloc_fast(n, n->pdn, 1);
    qp = uz_qp_create_sq(n, UZ_QPT_RC, NULL, NULL, NULL, 0, WRAP_LOG_SQ);
    rc_connect_wire(qp, 0x100, psn, NULL);
    uz_pattern(one, sizeof(one), 1);
    uz_pattern(two, sizeof(two), 2);

    wrap_read(&e, qp, mr, 0, 0, psn, one);
    uz_assert_mr(mr, 0, one, sizeof(one), "first READ");

    inv = (UzWr) { .wr_id = 0x1a7, .opcode = UZ_WR_LOCAL_INV,
                   .imm = fast->key };
    for (k = 0; k < depth; k++) {
        inv.flags = k == depth - 1 ? UZ_WQE_F_SIGNALED : 0;
        uz_wqe_build(&inv, false, ring + (size_t)k * UZ_SQ_WQE_SIZE);
    }
    qtest_bufwrite(n->d.qts, qp->sq, ring, (size_t)depth * UZ_SQ_WQE_SIZE);
    for (pi = depth; ; pi = (pi + depth) & UZ_DB_PI_MASK) {
        uz_ring(&n->d, qp->sq_db, pi);
        /* A ring takes the device a while: leave it the CPU meanwhile. */
        while (!uz_cq_poll(qp->scq, &c)) {
            g_usleep(1000);
        }
        uz_expect_sq(&c, inv.wr_id, UZ_WC_LOCAL_INV, qp, 0);
        if (!pi) {
            break;              /* 1 + (2^24 - 1) messages: index 0 again */
        }
    }

    wrap_read(&e, qp, mr, 1024, pi, psn + 1, two);
    uz_assert_mr(mr, 1024, two, sizeof(two), "second READ");
    uz_assert_mr(mr, 0, one, sizeof(one), "first READ, kept");
    env_stop(&e);
}

/* ---- Fault rules on frames shorter than their opcode says ---- */

/* A frame of just BTH and ICRC, for a READ or an XRC FLUSH: 58 bytes. */
static void short_request(UzFrame *fr, uint8_t op, uint32_t dqpn)
{
    wire_frame(fr, op, dqpn, 0x40, true, NULL, 0, NULL, 0);
    g_assert_cmpuint(fr->len, ==, UZ_OFF_BTH + UZ_BTH_LEN + UZ_ICRC_LEN);
}

/*
 * Defect 2 of round 3: "corrupt=rkey" flipped a bit of the R_Key where
 * the opcode said it was, in a copy of the frame as long as the frame: a
 * 58-byte READ or XRC FLUSH (BTH and ICRC only) had a bit flipped past
 * its end (a heap overflow; QEMU aborted on the XRC FLUSH).
 * Rule: a field is corrupted only where the frame has its bytes; a rule
 * whose field the frame lacks does not match it.
 * The test sends the short frames from the wire through a receive rule,
 * and from a raw QP through a transmit rule: the rule does not act, the
 * frames pass unchanged; a READ with its RETH is still corrupted.
 */
static void test_corrupt_short(void)
{
    static const uint8_t ops[] = {
        UZ_BTH_OP_READ_REQ, UZ_BTH_OP_XRC | UZ_BTH_OP_FLUSH,
    };
    struct uz_qp_attr a = { .state = UZ_QPS_INIT, .port = 1 };
    Env e;
    UzNode *n = &e.n[0];
    UzFrame fr, got;
    uint8_t ext[16];
    UzQp *qp, *raw;
    UzMr *mr;
    struct uz_cqe c;
    uint64_t bad;
    int i;

    env_start(&e, 1, true);
    qp = uz_qp_create(n, UZ_QPT_RC, NULL, NULL, NULL, 0);
    rc_connect_wire(qp, 0x40, 0x200, NULL);

    env_rules(&e, 0, "dir=rx corrupt=rkey");
    bad = env_uint(&e, 0, "rx_malformed");
    for (i = 0; i < ARRAY_SIZE(ops); i++) {
        short_request(&fr, ops[i], qp->qpn);
        wire_send(&e, &fr, 1);
    }
    /* Both reached the transport, which found them short. */
    uz_counter_wait(n, "rx_malformed", bad + ARRAY_SIZE(ops));
    g_assert_cmpuint(env_rule_acted(&e, 0), ==, 0);
    wire_frame(&fr, UZ_BTH_OP_READ_REQ, qp->qpn, 0x40, true, ext,
               put_reth(ext, 0, 0x1234, 16), NULL, 0);
    wire_send(&e, &fr, 1);
    g_assert_cmpuint(env_rule_acted(&e, 0), ==, 1);
    wire_next(&e, &got);
    g_assert_cmphex(fr_op(&got), ==, UZ_BTH_OP_ACK);
    g_assert_cmphex(fr_after_bth(&got)[0], ==, UZ_AETH_NAK_REM_ACCESS);

    /* Transmit: a raw QP sends the same short frames to the wire. */
    env_rules(&e, 0, "dir=tx corrupt=rkey");
    raw = uz_qp_create(n, UZ_QPT_RAW, NULL, NULL, NULL, 0);
    mr = uz_mr_reg(n, 4096, UZ_ACCESS_LOCAL_WRITE);
    g_assert_cmpint(uz_qp_modify(raw, UZ_QP_ATTR_STATE | UZ_QP_ATTR_PORT,
                                 &a), ==, UZ_CMD_OK);
    uz_qp_set_state(raw, UZ_QPS_RTR);
    uz_qp_set_state(raw, UZ_QPS_RTS);
    for (i = 0; i < ARRAY_SIZE(ops); i++) {
        UzSge s = uz_mr_sge(mr, 0, 0);
        UzWr wr = { .wr_id = 0x5e0 + i, .opcode = UZ_WR_SEND,
                    .flags = UZ_WQE_F_SIGNALED, .sge = &s, .num_sge = 1 };

        short_request(&fr, ops[i], PEER_QPN);
        memcpy(fr.data, fr.data + 6, 6);        /* to the wire, not us */
        fr.data[0] = 0x02;
        s.length = fr.len;
        uz_mr_write(mr, 0, fr.data, fr.len);
        uz_post_send(raw, &wr);
        uz_cq_wait(raw->scq, &c);
        uz_cqe_expect(&c, wr.wr_id, UZ_WC_SEND, UZ_WC_STATUS_SUCCESS, 0,
                      raw->qpn);
        wire_next(&e, &got);
        g_assert_cmpuint(got.len, ==, fr.len);
        uz_assert_bytes(got.data, fr.data, fr.len, "short frame sent");
    }
    g_assert_cmpuint(env_rule_acted(&e, 0), ==, 0);
    env_stop(&e);
}

/* ---- Selective repeat: what a peer can make the NIC keep ---- */

#define SR_KEPT_BYTES       (16u << 20)     /* spec 9.6: per NIC */
#define SR_QPS              9
#define SR_AHEAD            511             /* the window, less the hole */

/* SEND Only frames with SACKs taken, PSNs @psn + 1 + i: the hole at @psn. */
static void sr_frames(UzFrame *fr, int n, uint32_t dqpn, uint32_t psn,
                      uint32_t paylen)
{
    g_autofree uint8_t *pay = g_malloc0(paylen);
    int i;

    for (i = 0; i < n; i++) {
        wire_frame(&fr[i], UZ_BTH_OP_SEND_ONLY, dqpn, psn + 1 + i, false,
                   NULL, 0, pay, paylen);
        fr_set_b8(&fr[i], UZ_BTH_B8_SR);
    }
}

/*
 * Defect 3 of round 3: with recovery=sr, a responder kept every request
 * past a hole before checking its payload against the path MTU, and the
 * NIC's store was bounded by count (8192 packets) only: 17 QPs of 60,000
 * byte SENDs grew QEMU by 470 MiB, held until the QPs went.
 * Rule: a request whose payload is over the path MTU is not kept (it
 * fails when it comes in order); what is kept is bounded in bytes,
 * 16 MiB per NIC, besides 512 PSNs per QP.
 * The test is the requester on the wire: SENDs of 8,000 bytes at path
 * MTU 4096 past a hole are not kept; then 511 SENDs of 4096 bytes past
 * a hole on each of 9 QPs (18 MiB) are kept up to the byte bound.
 */
static void test_sr_keep_bytes(void)
{
    const uint32_t psn = 0x1000;
    g_autofree UzFrame *fr = g_new(UzFrame, SR_AHEAD);
    UzRcOpts o = UZ_RC_OPTS_DEFAULT;
    struct uz_admin_cmd cmd = { .opcode = UZ_CMD_SET_MTU };
    Env e;
    UzNode *n = &e.n[0];
    uint64_t kept, rx;
    UzQp *qp;
    int q;

    env_start_args(&e, 1, true, "-global uzura.recovery=sr");
    cmd.set_mtu.mtu = cpu_to_le32(9000);
    g_assert_cmpint(uz_admin(&n->d, &cmd, NULL), ==, UZ_CMD_OK);
    o.path_mtu = UZ_MTU_4096;

    rx = env_uint(&e, 0, "rx_pkts_send");
    qp = uz_qp_create(n, UZ_QPT_RC, NULL, NULL, NULL, 0);
    rc_connect_wire(qp, psn, 0x200, &o);
    sr_frames(fr, 8, qp->qpn, psn, 8000);
    wire_send(&e, fr, 8);
    uz_counter_wait(n, "rx_pkts_send", rx + 8);
    g_assert_cmpuint(env_uint(&e, 0, "sr_kept"), ==, 0);

    for (q = 0; q < SR_QPS; q++) {
        qp = uz_qp_create(n, UZ_QPT_RC, NULL, NULL, NULL, 0);
        rc_connect_wire(qp, psn, 0x200, &o);
        sr_frames(fr, SR_AHEAD, qp->qpn, psn, 4096);
        wire_send(&e, fr, SR_AHEAD);
    }
    uz_counter_wait(n, "rx_pkts_send", rx + 8 + SR_QPS * SR_AHEAD);
    kept = env_uint(&e, 0, "sr_kept");
    g_test_message("%" PRIu64 " of %u packets kept", kept,
                   SR_QPS * SR_AHEAD);
    g_assert_cmpuint(kept, >=, SR_KEPT_BYTES / 4096 / 2);
    g_assert_cmpuint(kept, <=, SR_KEPT_BYTES / 4096);
    env_stop(&e);
}

/* ---- Queues of whole frames: the timing model and the injector ---- */

#define MODEL_QUEUE_BYTES   (16u << 20)     /* spec 8.20: each way */
#define FAULT_HELD_BYTES    (32u << 20)     /* spec 7.5: per NIC */
#define BIG_FRAME           9000

/* An Ethernet frame of @len bytes to NIC 0, of no protocol we know. */
static uint8_t *eth_frame(size_t len)
{
    uint8_t *f = g_malloc0(len);

    uz_node_mac(0, f);
    uz_node_mac(PEER, f + 6);
    stw_be_p(f + 12, 0x88b5);
    return f;
}

/*
 * Defect 4 of round 3: the timing model's receive queue took frames of
 * any length, bounded by count (4096) only: frames of 65,000 bytes grew
 * QEMU by 250 MiB until virtual time reached them.
 * Rule: a frame longer than any MTU the NIC takes is dropped, and the
 * queue is bounded in bytes (16 MiB each way); both count in
 * model-drops.
 * The test sends 40 frames of 65,000 bytes, then 2,000 of 9,000 bytes
 * (18 MB) while virtual time stands still.
 */
static void test_model_queue_bytes(void)
{
    g_autofree uint8_t *huge = eth_frame(65000);
    g_autofree uint8_t *big = eth_frame(BIG_FRAME);
    const int nbig = 2000;
    Env e;
    uint64_t drops;

    env_start_args(&e, 1, true, "-global uzura.model=on");
    wire_send_raw(&e, huge, 65000, 40);
    uz_counter_wait(&e.n[0], "model-drops", 40);
    g_assert_cmpuint(env_uint(&e, 0, "model-drops"), ==, 40);
    wire_send_raw(&e, big, BIG_FRAME, nbig);
    uz_counter_wait(&e.n[0], "model-drops",
                    40 + nbig - MODEL_QUEUE_BYTES / BIG_FRAME);
    drops = env_uint(&e, 0, "model-drops") - 40;
    g_test_message("%" PRIu64 " of %d frames dropped", drops, nbig);
    g_assert_cmpuint(drops, >=, nbig - MODEL_QUEUE_BYTES / BIG_FRAME);
    g_assert_cmpuint(drops, <, nbig);
    env_stop(&e);
}

/*
 * The same class in the fault injector: frames a rule delays were
 * bounded by count (4096 a direction) only.
 * Rule: all the frames the injector holds are bounded in bytes (32 MiB
 * per NIC); a frame past it is a counted drop.
 * The test delays every received RoCE frame by a second and sends 4096
 * of 9,000 bytes (37 MB) while virtual time stands still; once the time
 * has passed, the injector holds nothing and takes frames again.
 */
static void test_fault_held_bytes(void)
{
    g_autofree uint8_t *pay = g_malloc0(BIG_FRAME - 100);
    const int nbig = 4096;
    Env e;
    UzFrame fr;
    uint64_t drops, delayed;

    env_start(&e, 1, true);
    env_rules(&e, 0, "dir=rx delay=1000000");
    wire_frame(&fr, UZ_BTH_OP_SEND_ONLY, PEER_QPN, 0, false, NULL, 0, pay,
               BIG_FRAME - 100);
    wire_send_raw(&e, fr.data, fr.len, nbig);
    uz_counter_wait(&e.n[0], "fault_drops", nbig - FAULT_HELD_BYTES / fr.len);
    drops = env_uint(&e, 0, "fault_drops");
    g_test_message("%" PRIu64 " of %d frames dropped", drops, nbig);
    g_assert_cmpuint(drops, >=, nbig - FAULT_HELD_BYTES / fr.len);
    g_assert_cmpuint(drops, <, nbig);

    qtest_clock_step(e.m.qs->qts, 1001 * MS);
    delayed = env_uint(&e, 0, "fault_delayed");
    wire_send_raw(&e, fr.data, fr.len, 1);
    uz_counter_wait(&e.n[0], "fault_delayed", delayed + 1);
    g_assert_cmpuint(env_uint(&e, 0, "fault_drops"), ==, drops);
    env_stop(&e);
}

/* ---- The admin queue's budget ---- */

#define ADMIN_LONG_CMDS     64
#define CQ_LONG_LOG_DEPTH   22      /* 64-byte CQEs: 65,536 pages */

/*
 * Defect 5 of round 3: an admin turn ran up to 64 commands whatever they
 * cost: 64 CREATE_CQ of 65,536 pages each held the main loop 85 ms.
 * Rule: a turn runs commands until their work (256 each, one more per
 * page or entry walked) reaches 16,384; a command always runs whole.
 * Such a CREATE_CQ is a turn of its own: 64 of them, rung at once, end
 * 63 turns early (admin-yields), and all complete.
 */
static void test_admin_budget(void)
{
    const uint32_t npages = (64u << CQ_LONG_LOG_DEPTH) / UZ_PAGE_SIZE;
    g_autofree uint64_t *pages = g_new(uint64_t, npages);
    Env e;
    UzNode *n = &e.n[0];
    struct uz_admin_cqe cqe;
    uint64_t list, page, yields;
    uint32_t first, i;

    env_start(&e, 1, false);
    page = uz_alloc_pages(n, 1);
    for (i = 0; i < npages; i++) {
        pages[i] = cpu_to_le64(page);
    }
    list = uz_alloc(&n->d, (uint64_t)npages * 8);
    qtest_bufwrite(n->d.qts, list, pages, (size_t)npages * 8);

    yields = env_uint(&e, 0, "admin-yields");
    first = n->d.pi;
    for (i = 0; i < ADMIN_LONG_CMDS; i++) {
        struct uz_admin_cmd cmd = { .opcode = UZ_CMD_CREATE_CQ };
        struct uz_cmd_create_cq c = {
            .ring_addr = cpu_to_le64(list),
            .uctx = cpu_to_le32(n->uctx),
            .eqn = cpu_to_le32(n->comp_eq.eqn),
            .log_depth = CQ_LONG_LOG_DEPTH,
            .flags = UZ_CQF_PAGE_LIST | UZ_CQF_TIMESTAMP,
        };

        memcpy(cmd.raw, &c, sizeof(c));
        uz_admin_put(&n->d, &cmd);
    }
    uz_ring(&n->d, UZ_DB_ADMIN, n->d.pi);
    for (i = 0; i < ADMIN_LONG_CMDS; i++) {
        uz_admin_wait(&n->d, first + i, &cqe);
        g_assert_cmpint(cqe.status, ==, UZ_CMD_OK);
    }
    g_assert_cmpuint(env_uint(&e, 0, "admin-yields") - yields, ==,
                     ADMIN_LONG_CMDS - 1);
    env_stop(&e);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qtest_add_func("/uzura/harden/dma-config-space", test_dma_config_space);
    qtest_add_func("/uzura/harden/msix-flr", test_msix_flr);
    qtest_add_func("/uzura/harden/msix-doorbell", test_msix_doorbell);
    qtest_add_func("/uzura/harden/resp-error-deferred",
                   test_resp_error_deferred);
    qtest_add_func("/uzura/harden/read-4g", test_read_4g);
    qtest_add_func("/uzura/harden/read-resp-window", test_read_resp_window);
    qtest_add_func("/uzura/harden/read-rest", test_read_rest);
    qtest_add_func("/uzura/harden/mr-page-shift", test_mr_page_shift);
    qtest_add_func("/uzura/harden/dma-mr-user", test_dma_mr_user);
    qtest_add_func("/uzura/harden/ud-too-long", test_ud_too_long);
    qtest_add_func("/uzura/harden/av-user-qp", test_av_user_qp);
    qtest_add_func("/uzura/harden/atomic-no-slot", test_atomic_no_slot);
    /* 2^24 messages: about a minute under ASan, make check-large's. */
    if (g_test_slow()) {
        qtest_add_func("/uzura/harden/wqe-cache-wrap", test_wqe_cache_wrap);
    }
    qtest_add_func("/uzura/harden/corrupt-short", test_corrupt_short);
    qtest_add_func("/uzura/harden/sr-keep-bytes", test_sr_keep_bytes);
    qtest_add_func("/uzura/harden/model-queue-bytes",
                   test_model_queue_bytes);
    qtest_add_func("/uzura/harden/fault-held-bytes", test_fault_held_bytes);
    qtest_add_func("/uzura/harden/admin-budget", test_admin_budget);
    return g_test_run();
}
