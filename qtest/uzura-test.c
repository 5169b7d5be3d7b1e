/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qtest for the uzura RDMA NIC: identification, reset, MSI-X, link state
 * and speed, and the handling of bad register accesses.
 */
#include "qemu/osdep.h"
#include "libqtest.h"
#include "libqos/libqos-pc.h"
#include "libqos/pci.h"
#include "qobject/qdict.h"
#include "hw/pci/pci_regs.h"
#include "standard-headers/drivers/infiniband/hw/uzura/uzura_regs_defs.h"
#include "standard-headers/drivers/infiniband/hw/uzura/uzura_admin_defs.h"
#include "standard-headers/drivers/infiniband/hw/uzura/uzura_admin_cmds_defs.h"
#include "standard-headers/drivers/infiniband/hw/uzura/uzura_io_defs.h"
#include "standard-headers/drivers/infiniband/hw/uzura/uzura_roce_defs.h"

#define UZ_TEST_MAC     "52:54:00:12:34:56"
#define UZ_TEST_SLOT    4
#define UZ_TEST_DEVFN   QPCI_DEVFN(UZ_TEST_SLOT, 0)

typedef struct UzTest {
    QOSState *qs;
    QPCIDevice *dev;
    QPCIBar regs;
    char *log_path;
} UzTest;

/* Boot a q35 machine with one uzura NIC on a user-less hub netdev. */
static void uz_start(UzTest *t, const char *extra)
{
    int fd;

    fd = g_file_open_tmp("uzura-test-XXXXXX.log", &t->log_path, NULL);
    g_assert_cmpint(fd, >=, 0);
    close(fd);

    t->qs = qtest_pc_boot("-M q35 -d guest_errors -D %s "
                          "-netdev hubport,id=n0,hubid=0 "
                          "-device uzura,netdev=n0,id=uz0,mac=" UZ_TEST_MAC
                          ",addr=%02x.0 %s",
                          t->log_path, UZ_TEST_SLOT,
                          extra ? extra : "");
    t->dev = qpci_device_find(t->qs->pcibus, UZ_TEST_DEVFN);
    g_assert(t->dev);
    qpci_device_enable(t->dev);
    t->regs = qpci_iomap(t->dev, UZ_BAR_REGS, NULL);
}

static void uz_stop(UzTest *t)
{
    g_free(t->dev);
    qtest_shutdown(t->qs);
    unlink(t->log_path);
    g_free(t->log_path);
}

static uint32_t uz_rd(UzTest *t, uint32_t reg)
{
    return qpci_io_readl(t->dev, t->regs, reg);
}

static void uz_wr(UzTest *t, uint32_t reg, uint32_t val)
{
    qpci_io_writel(t->dev, t->regs, reg, val);
}

static char *uz_log(UzTest *t)
{
    char *text = NULL;

    g_assert(g_file_get_contents(t->log_path, &text, NULL, NULL));
    return text;
}

static void test_ident(void)
{
    UzTest t = { 0 };

    uz_start(&t, NULL);
    g_assert_cmphex(qpci_config_readw(t.dev, PCI_VENDOR_ID), ==,
                    UZ_PCI_VENDOR_ID);
    g_assert_cmphex(qpci_config_readw(t.dev, PCI_DEVICE_ID), ==,
                    UZ_PCI_DEVICE_ID);
    g_assert_cmphex(qpci_config_readb(t.dev, PCI_REVISION_ID), ==,
                    UZ_PCI_REVISION);
    g_assert_cmphex(uz_rd(&t, UZ_REG_MAGIC), ==, UZ_MAGIC);
    g_assert_cmphex(uz_rd(&t, UZ_REG_VERSION), ==, UZ_VERSION);
    g_assert_cmphex(uz_rd(&t, UZ_REG_CAPS), ==,
                    UZ_CAP_MSIX | UZ_CAP_LINK_STATE | UZ_CAP_ADMIN |
                    UZ_CAP_ETH | UZ_CAP_RDMA | UZ_CAP_CRW |
                    UZ_CAP_LINK_SPEED | UZ_CAP_CQ_PAGES |
                    UZ_CAP_FAST_REG | UZ_CAP_CQ_RESIZE | UZ_CAP_MR_REREG |
                    UZ_CAP_MW | UZ_CAP_ODP | UZ_CAP_UC | UZ_CAP_MCAST |
                    UZ_CAP_SRQ_RESIZE | UZ_CAP_PLACEMENT | UZ_CAP_XRC |
                    UZ_CAP_TIMESTAMP | UZ_CAP_DM | UZ_CAP_RAW |
                    UZ_CAP_ODP_IMPLICIT | UZ_CAP_TM | UZ_CAP_RSS |
                    UZ_CAP_SQ_SHADOW);
    g_assert_cmpint(uz_rd(&t, UZ_REG_DB_PAGES), ==, 64);
    g_assert_cmpint(uz_rd(&t, UZ_REG_LINK_SPEED), ==, 25000);
    g_assert_cmphex(uz_rd(&t, UZ_REG_STATUS), ==,
                    UZ_STATUS_READY | UZ_STATUS_LINK_UP);
    /* 52:54:00:12:34:56, byte 0 in the lowest bits. */
    g_assert_cmphex(uz_rd(&t, UZ_REG_MAC_LO), ==, 0x12005452);
    g_assert_cmphex(uz_rd(&t, UZ_REG_MAC_HI), ==, 0x5634);
    g_assert_cmphex(uz_rd(&t, UZ_REG_ERR_COUNT), ==, 0);
    uz_stop(&t);
}

static void test_msix(void)
{
    UzTest t = { 0 };
    int i;

    uz_start(&t, "-global uzura.vectors=5");
    g_assert_cmpint(uz_rd(&t, UZ_REG_NUM_VECTORS), ==, 5);
    g_assert_cmpint(qpci_find_capability(t.dev, PCI_CAP_ID_MSIX, 0), !=, 0);
    g_assert_cmpint(qpci_msix_table_size(t.dev), ==, 5);
    qpci_msix_enable(t.dev);
    g_assert(t.dev->msix_enabled);
    g_assert_cmpint(t.dev->msix_table_bar.addr, !=, 0);
    for (i = 0; i < 5; i++) {
        g_assert(!qpci_msix_pending(t.dev, i));
    }
    qpci_msix_disable(t.dev);
    uz_stop(&t);
}

static void test_pcie(void)
{
    UzTest t = { 0 };
    uint8_t exp;

    uz_start(&t, NULL);
    exp = qpci_find_capability(t.dev, PCI_CAP_ID_EXP, 0);
    g_assert_cmpint(exp, !=, 0);
    /* Function level reset is advertised. */
    g_assert(qpci_config_readl(t.dev, exp + PCI_EXP_DEVCAP) &
             PCI_EXP_DEVCAP_FLR);
    uz_stop(&t);
}

static void test_reset(void)
{
    UzTest t = { 0 };

    uz_start(&t, NULL);
    uz_wr(&t, UZ_REG_SCRATCH, 0xdeadbeef);
    g_assert_cmphex(uz_rd(&t, UZ_REG_SCRATCH), ==, 0xdeadbeef);

    /* A write without the key is refused and changes nothing else. */
    uz_wr(&t, UZ_REG_RESET, 1);
    g_assert_cmphex(uz_rd(&t, UZ_REG_SCRATCH), ==, 0xdeadbeef);
    g_assert_cmpint(uz_rd(&t, UZ_REG_ERR_STATUS), ==, UZ_ERR_BAD_VALUE);
    g_assert_cmphex(uz_rd(&t, UZ_REG_ERR_ADDR), ==, UZ_REG_RESET);

    uz_wr(&t, UZ_REG_RESET, UZ_RESET_KEY);
    g_assert_cmphex(uz_rd(&t, UZ_REG_SCRATCH), ==, 0);
    g_assert_cmpint(uz_rd(&t, UZ_REG_ERR_COUNT), ==, 0);
    g_assert_cmphex(uz_rd(&t, UZ_REG_STATUS), ==,
                    UZ_STATUS_READY | UZ_STATUS_LINK_UP);
    g_assert_cmphex(uz_rd(&t, UZ_REG_MAGIC), ==, UZ_MAGIC);

    /* A system reset clears the register file too. */
    uz_wr(&t, UZ_REG_SCRATCH, 0x1234);
    qtest_system_reset(t.qs->qts);
    qpci_device_enable(t.dev);
    t.regs = qpci_iomap(t.dev, UZ_BAR_REGS, NULL);
    g_assert_cmphex(uz_rd(&t, UZ_REG_SCRATCH), ==, 0);
    g_assert_cmphex(uz_rd(&t, UZ_REG_MAGIC), ==, UZ_MAGIC);
    uz_stop(&t);
}

static void test_link(void)
{
    UzTest t = { 0 };

    uz_start(&t, NULL);
    g_assert(uz_rd(&t, UZ_REG_STATUS) & UZ_STATUS_LINK_UP);
    qtest_qmp_assert_success(t.qs->qts, "{'execute': 'set_link', 'arguments':"
                             " {'name': 'uz0', 'up': false}}");
    g_assert(!(uz_rd(&t, UZ_REG_STATUS) & UZ_STATUS_LINK_UP));
    qtest_qmp_assert_success(t.qs->qts, "{'execute': 'set_link', 'arguments':"
                             " {'name': 'uz0', 'up': true}}");
    g_assert(uz_rd(&t, UZ_REG_STATUS) & UZ_STATUS_LINK_UP);
    uz_stop(&t);
}

/* The advertised rate: the speed property, read-only, kept by a reset. */
static void test_link_speed(void)
{
    UzTest t = { 0 };
    g_autofree char *log = NULL;
    QPCIDevice *dev;
    QPCIBar regs;

    /* A second NIC, on its own hub, with a speed of its own. */
    uz_start(&t, "-netdev hubport,id=n1,hubid=1 "
             "-device uzura,netdev=n1,id=uz1,addr=05.0,speed=100000");
    g_assert_cmpint(uz_rd(&t, UZ_REG_LINK_SPEED), ==, 25000);
    uz_wr(&t, UZ_REG_LINK_SPEED, 1000);
    g_assert_cmpint(uz_rd(&t, UZ_REG_ERR_STATUS), ==, UZ_ERR_READ_ONLY);
    g_assert_cmphex(uz_rd(&t, UZ_REG_ERR_ADDR), ==, UZ_REG_LINK_SPEED);
    g_assert_cmpint(uz_rd(&t, UZ_REG_ERR_COUNT), ==, 1);
    g_assert_cmpint(uz_rd(&t, UZ_REG_LINK_SPEED), ==, 25000);
    log = uz_log(&t);
    g_assert(strstr(log, "uzura: bad register write at 0x34: "
                    "register is read-only"));
    uz_wr(&t, UZ_REG_RESET, UZ_RESET_KEY);
    g_assert_cmpint(uz_rd(&t, UZ_REG_LINK_SPEED), ==, 25000);

    dev = qpci_device_find(t.qs->pcibus, QPCI_DEVFN(5, 0));
    g_assert(dev);
    qpci_device_enable(dev);
    regs = qpci_iomap(dev, UZ_BAR_REGS, NULL);
    g_assert_cmpint(qpci_io_readl(dev, regs, UZ_REG_LINK_SPEED), ==, 100000);
    g_assert(qpci_io_readl(dev, regs, UZ_REG_CAPS) & UZ_CAP_LINK_SPEED);
    g_free(dev);
    uz_stop(&t);
}

static void test_bad_access(void)
{
    UzTest t = { 0 };
    g_autofree char *log = NULL;

    uz_start(&t, NULL);

    /* No register at this offset: reads 0, error recorded. */
    g_assert_cmphex(uz_rd(&t, 0x800), ==, 0);
    g_assert_cmpint(uz_rd(&t, UZ_REG_ERR_STATUS), ==, UZ_ERR_BAD_OFFSET);
    g_assert_cmphex(uz_rd(&t, UZ_REG_ERR_ADDR), ==, 0x800);
    g_assert_cmpint(uz_rd(&t, UZ_REG_ERR_COUNT), ==, 1);

    /* Store to a read-only register is ignored. */
    uz_wr(&t, UZ_REG_MAGIC, 0);
    g_assert_cmpint(uz_rd(&t, UZ_REG_ERR_STATUS), ==, UZ_ERR_READ_ONLY);
    g_assert_cmphex(uz_rd(&t, UZ_REG_MAGIC), ==, UZ_MAGIC);

    /* Load from the write-only reset register. */
    g_assert_cmphex(uz_rd(&t, UZ_REG_RESET), ==, 0);
    g_assert_cmpint(uz_rd(&t, UZ_REG_ERR_STATUS), ==, UZ_ERR_WRITE_ONLY);

    /* Narrow, wide and misaligned accesses. */
    g_assert_cmphex(qpci_io_readb(t.dev, t.regs, UZ_REG_MAGIC), ==, 0);
    g_assert_cmpint(uz_rd(&t, UZ_REG_ERR_STATUS), ==, UZ_ERR_BAD_SIZE);
    qpci_io_writeq(t.dev, t.regs, UZ_REG_SCRATCH, ~0ull);
    g_assert_cmphex(uz_rd(&t, UZ_REG_SCRATCH), ==, 0);
    g_assert_cmphex(qpci_io_readl(t.dev, t.regs, UZ_REG_MAGIC + 2), ==, 0);
    g_assert_cmphex(uz_rd(&t, UZ_REG_ERR_ADDR), ==, UZ_REG_MAGIC + 2);
    g_assert_cmpint(uz_rd(&t, UZ_REG_ERR_COUNT), ==, 6);

    /* The device still works, and every mistake was logged. */
    g_assert_cmphex(uz_rd(&t, UZ_REG_MAGIC), ==, UZ_MAGIC);
    log = uz_log(&t);
    g_assert(strstr(log, "uzura: bad register read at 0x800: "
                    "no register at this offset"));
    g_assert(strstr(log, "uzura: bad register write at 0x0: "
                    "register is read-only"));
    g_assert(strstr(log, "access is not an aligned 32-bit access"));
    uz_stop(&t);
}

/* Bad property values refuse the device with a message; QEMU stays up. */
static void test_bad_properties(void)
{
    static const struct {
        const char *name;
        int64_t value;
    } bad[] = {
        { "vectors", 0 }, { "vectors", 33 }, { "db-pages", 3 },
        { "max-qp", 2 }, { "max-qp", 4000000000 }, { "max-cqe", 3 },
        { "max-qp-wr", 131072 }, { "xlat-cache-entries", 0 },
        { "max-sge", 0 }, { "max-sge", 29 },
        { "max-qp-rd-atom", 0 }, { "max-qp-rd-atom", 256 },
        { "speed", 0 }, { "speed", 9 }, { "speed", 400001 },
    };
    UzTest t = { 0 };
    int i;

    /* A root port to hot-plug into. */
    uz_start(&t, "-device pcie-root-port,id=rp0,chassis=1,addr=0x9");
    for (i = 0; i < ARRAY_SIZE(bad); i++) {
        QDict *args = qdict_new();
        QDict *rsp;
        const char *desc;

        qdict_put_str(args, "driver", "uzura");
        qdict_put_str(args, "bus", "rp0");
        qdict_put_int(args, bad[i].name, bad[i].value);
        rsp = qtest_qmp(t.qs->qts, "{'execute': 'device_add', "
                        "'arguments': %p}", args);
        g_assert(qdict_haskey(rsp, "error"));
        desc = qdict_get_str(qdict_get_qdict(rsp, "error"), "desc");
        g_test_message("%s=%" PRId64 ": %s", bad[i].name, bad[i].value, desc);
        g_assert(strstr(desc, "uzura: "));
        qobject_unref(rsp);
    }
    g_assert_cmphex(uz_rd(&t, UZ_REG_MAGIC), ==, UZ_MAGIC);
    uz_stop(&t);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);

    qtest_add_func("/uzura/ident", test_ident);
    qtest_add_func("/uzura/msix", test_msix);
    qtest_add_func("/uzura/pcie", test_pcie);
    qtest_add_func("/uzura/reset", test_reset);
    qtest_add_func("/uzura/link", test_link);
    qtest_add_func("/uzura/link-speed", test_link_speed);
    qtest_add_func("/uzura/bad-access", test_bad_access);
    qtest_add_func("/uzura/bad-properties", test_bad_properties);

    return g_test_run();
}
