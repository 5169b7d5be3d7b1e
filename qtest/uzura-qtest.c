/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The uzura qtests' helpers declared in uzura-qtest.h.
 */
#include "qemu/osdep.h"
#include "uzura-qtest.h"

void uz_machine_start(UzMachine *m, int n, const char *extra)
{
    GString *cmd = g_string_new("-M q35 -d guest_errors ");
    int fd, i;

    fd = g_file_open_tmp("uzura-test-XXXXXX.log", &m->log_path, NULL);
    g_assert_cmpint(fd, >=, 0);
    close(fd);
    g_string_append_printf(cmd, "-D %s ", m->log_path);
    for (i = 0; i < n; i++) {
        g_string_append_printf(cmd,
                               "-netdev hubport,id=n%d,hubid=0 "
                               "-device uzura,netdev=n%d,id=uz%d,"
                               "mac=52:54:00:12:34:5%d,addr=%02x.0 ",
                               i, i, i, i, UZ_SLOT(i));
    }
    g_string_append(cmd, extra ? extra : "");
    m->qs = qtest_pc_boot("%s", cmd->str);
    m->cmdline = g_string_free(cmd, false);
}

void uz_machine_stop(UzMachine *m)
{
    qtest_shutdown(m->qs);
    unlink(m->log_path);
    g_free(m->log_path);
    g_free(m->cmdline);
}

char *uz_machine_log(UzMachine *m)
{
    char *text = NULL;

    g_assert(g_file_get_contents(m->log_path, &text, NULL, NULL));
    return text;
}

void uz_dev_attach(UzDev *d, QPCIDevice *pdev, QGuestAllocator *alloc)
{
    memset(d, 0, sizeof(*d));
    d->qts = pdev->bus->qts;
    d->alloc = alloc;
    d->pdev = pdev;
    qpci_device_enable(d->pdev);
    d->regs = qpci_iomap(d->pdev, UZ_BAR_REGS, NULL);
    d->db = qpci_iomap(d->pdev, UZ_BAR_DB, NULL);
    qpci_msix_enable(d->pdev);
}

void uz_dev_init(UzDev *d, UzMachine *m, int i)
{
    QPCIDevice *pdev = qpci_device_find(m->qs->pcibus,
                                        QPCI_DEVFN(UZ_SLOT(i), 0));

    g_assert(pdev);
    uz_dev_attach(d, pdev, &m->qs->alloc);
    d->own_pdev = true;
}

void uz_dev_fini(UzDev *d)
{
    qpci_msix_disable(d->pdev);
    if (d->own_pdev) {
        g_free(d->pdev);
    }
}

uint32_t uz_rd(UzDev *d, uint32_t reg)
{
    return qpci_io_readl(d->pdev, d->regs, reg);
}

void uz_wr(UzDev *d, uint32_t reg, uint32_t val)
{
    qpci_io_writel(d->pdev, d->regs, reg, val);
}

void uz_ring(UzDev *d, uint32_t db_offset, uint32_t val)
{
    qpci_io_writel(d->pdev, d->db, db_offset, val);
}

uint64_t uz_alloc(UzDev *d, size_t size)
{
    uint64_t addr = guest_alloc(d->alloc, size);

    g_assert(addr);
    qtest_memset(d->qts, addr, 0, size);
    return addr;
}

void (*uz_poll_hook)(QTestState *qts);

void uz_poll_pause(UzDev *d)
{
    if (uz_poll_hook) {
        uz_poll_hook(d->qts);
    } else {
        qtest_readb(d->qts, 0);
    }
}

void uz_admin_start(UzDev *d, uint32_t log_depth)
{
    uint32_t n = 1u << log_depth;

    d->log_depth = log_depth;
    d->sq = uz_alloc(d, n * sizeof(struct uz_admin_cmd));
    d->cq = uz_alloc(d, n * sizeof(struct uz_admin_cqe));
    d->pi = 0;
    uz_wr(d, UZ_REG_ADMIN_SQ_LO, d->sq);
    uz_wr(d, UZ_REG_ADMIN_SQ_HI, d->sq >> 32);
    uz_wr(d, UZ_REG_ADMIN_CQ_LO, d->cq);
    uz_wr(d, UZ_REG_ADMIN_CQ_HI, d->cq >> 32);
    uz_wr(d, UZ_REG_ADMIN_DEPTH, log_depth);
    uz_wr(d, UZ_REG_ADMIN_CTRL, UZ_ADMIN_CTRL_ENABLE | UZ_ADMIN_CTRL_INTR);
    g_assert_cmphex(uz_rd(d, UZ_REG_ADMIN_STATUS), ==,
                    UZ_ADMIN_STATUS_ENABLED);
}

uint32_t uz_admin_put(UzDev *d, struct uz_admin_cmd *cmd)
{
    uint32_t pos = d->pi & ((1u << d->log_depth) - 1);

    cmd->cmd_id = cpu_to_le16(d->next_id++);
    qtest_memwrite(d->qts, d->sq + pos * sizeof(*cmd), cmd, sizeof(*cmd));
    d->pi = (d->pi + 1) & UZ_DB_PI_MASK;
    return pos;
}

void uz_admin_wait(UzDev *d, uint32_t idx,
                   struct uz_admin_cqe *cqe)
{
    uint32_t pos = idx & ((1u << d->log_depth) - 1);
    uint8_t phase = ((idx >> d->log_depth) & 1) ? 0 : UZ_ADMIN_CQE_PHASE;
    int i;

    for (i = 0; i < UZ_POLL_LIMIT; i++) {
        qtest_memread(d->qts, d->cq + pos * sizeof(*cqe), cqe, sizeof(*cqe));
        if ((cqe->flags & UZ_ADMIN_CQE_PHASE) == phase) {
            return;
        }
        uz_poll_pause(d);
    }
    g_error("no completion for admin command %u", idx);
}

uint8_t uz_admin(UzDev *d, struct uz_admin_cmd *cmd,
                 struct uz_admin_cqe *cqe)
{
    struct uz_admin_cqe local;
    uint32_t idx = d->pi;
    uint16_t id;

    cqe = cqe ? cqe : &local;
    uz_admin_put(d, cmd);
    id = le16_to_cpu(cmd->cmd_id);
    uz_ring(d, UZ_DB_ADMIN, d->pi);
    uz_admin_wait(d, idx, cqe);
    g_assert_cmpint(le16_to_cpu(cqe->cmd_id), ==, id);
    return cqe->status;
}

uint8_t uz_create_eq(UzDev *d, UzEq *eq, uint32_t log_depth,
                     uint16_t vector, uint8_t flags)
{
    struct uz_admin_cmd cmd = { .opcode = UZ_CMD_CREATE_EQ };
    struct uz_admin_cqe cqe;
    uint8_t st;

    memset(eq, 0, sizeof(*eq));
    eq->log_depth = log_depth;
    eq->ring = uz_alloc(d, sizeof(struct uz_eqe) << log_depth);
    cmd.create_eq.ring_addr = cpu_to_le64(eq->ring);
    cmd.create_eq.log_depth = log_depth;
    cmd.create_eq.vector = cpu_to_le16(vector);
    cmd.create_eq.flags = flags;
    st = uz_admin(d, &cmd, &cqe);
    eq->eqn = le32_to_cpu(cqe.out0);
    eq->db = le32_to_cpu(cqe.out1);
    return st;
}

bool uz_eq_next(UzDev *d, UzEq *eq, struct uz_eqe *eqe)
{
    uint32_t pos = eq->ci & ((1u << eq->log_depth) - 1);
    uint32_t phase = ((eq->ci >> eq->log_depth) & 1) ? 0 : UZ_EQE_PHASE;

    qtest_memread(d->qts, eq->ring + pos * sizeof(*eqe), eqe, sizeof(*eqe));
    if ((le32_to_cpu(eqe->flags) & UZ_EQE_PHASE) != phase) {
        return false;
    }
    eq->ci = (eq->ci + 1) & UZ_DB_CI_MASK;
    return true;
}

void uz_eq_wait(UzDev *d, UzEq *eq, struct uz_eqe *eqe)
{
    int i;

    for (i = 0; i < UZ_POLL_LIMIT; i++) {
        if (uz_eq_next(d, eq, eqe)) {
            return;
        }
        uz_poll_pause(d);
    }
    g_error("no event on EQ %u", eq->eqn);
}

void uz_wait_msix(UzDev *d, uint16_t vector)
{
    int i;

    for (i = 0; i < UZ_POLL_LIMIT; i++) {
        if (qpci_msix_pending(d->pdev, vector)) {
            return;
        }
        uz_poll_pause(d);
    }
    g_error("MSI-X vector %u never fired", vector);
}

void uz_clear_msix(UzDev *d, uint16_t vector)
{
    uint64_t ctrl = d->pdev->msix_table_off + vector * PCI_MSIX_ENTRY_SIZE +
                    PCI_MSIX_ENTRY_VECTOR_CTRL;

    qpci_io_writel(d->pdev, d->pdev->msix_table_bar, ctrl, 0);
    qpci_io_writel(d->pdev, d->pdev->msix_table_bar, ctrl,
                   PCI_MSIX_ENTRY_CTRL_MASKBIT);
    g_assert(!qpci_msix_pending(d->pdev, vector));
}

uint64_t uz_qom_counter(QTestState *qts, const char *id, const char *name)
{
    g_autofree char *path = g_strdup_printf("/machine/peripheral/%s", id);
    QDict *rsp;
    uint64_t val;

    rsp = qtest_qmp(qts, "{'execute': 'qom-get', 'arguments': "
                    "{'path': %s, 'property': %s}}", path, name);
    g_assert(qdict_haskey(rsp, "return"));
    val = qdict_get_int(rsp, "return");
    qobject_unref(rsp);
    return val;
}

uint64_t uz_counter(UzMachine *m, int nic, const char *name)
{
    g_autofree char *id = g_strdup_printf("uz%d", nic);

    return uz_qom_counter(m->qs->qts, id, name);
}
