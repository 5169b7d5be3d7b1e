/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qtest for the uzura admin queue, event queues and interrupts: good and
 * bad commands, ring and doorbell misuse, EQ events and MSI-X delivery,
 * overflow, reset, and a fuzz run of random commands.
 */
#include "uzura-qtest.h"

static void start1(UzMachine *m, UzDev *d)
{
    uz_machine_start(m, 1, NULL);
    uz_dev_init(d, m, 0);
}

static void stop1(UzMachine *m, UzDev *d)
{
    uz_dev_fini(d);
    uz_machine_stop(m);
}

static void test_bad_commands(void)
{
    UzMachine m;
    UzDev d;
    struct uz_admin_cmd cmd;
    g_autofree char *log = NULL;
    static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
    static const uint8_t good[6] = { 0x52, 0x54, 0, 0xaa, 0xbb, 0xcc };
    int op;

    start1(&m, &d);
    uz_admin_start(&d, 3);

    cmd = (struct uz_admin_cmd) { .opcode = 0xee };
    g_assert_cmpint(uz_admin(&d, &cmd, NULL), ==, UZ_CMD_BAD_OPCODE);
    cmd = (struct uz_admin_cmd) { .opcode = 0 };
    g_assert_cmpint(uz_admin(&d, &cmd, NULL), ==, UZ_CMD_BAD_OPCODE);

    /* MTU out of range, then accepted. */
    cmd = (struct uz_admin_cmd) { .opcode = UZ_CMD_SET_MTU };
    cmd.set_mtu.mtu = cpu_to_le32(UZ_MAX_MTU + 1);
    g_assert_cmpint(uz_admin(&d, &cmd, NULL), ==, UZ_CMD_BAD_PARAM);
    cmd.set_mtu.mtu = cpu_to_le32(UZ_MIN_MTU - 1);
    g_assert_cmpint(uz_admin(&d, &cmd, NULL), ==, UZ_CMD_BAD_PARAM);
    cmd.set_mtu.mtu = cpu_to_le32(9000);
    g_assert_cmpint(uz_admin(&d, &cmd, NULL), ==, UZ_CMD_OK);

    /* A group address is not a station address. */
    cmd = (struct uz_admin_cmd) { .opcode = UZ_CMD_SET_MAC };
    memcpy(cmd.set_mac.mac, bcast, 6);
    g_assert_cmpint(uz_admin(&d, &cmd, NULL), ==, UZ_CMD_BAD_PARAM);
    memcpy(cmd.set_mac.mac, good, 6);
    g_assert_cmpint(uz_admin(&d, &cmd, NULL), ==, UZ_CMD_OK);
    g_assert_cmphex(uz_rd(&d, UZ_REG_MAC_LO), ==, 0xaa005452);
    g_assert_cmphex(uz_rd(&d, UZ_REG_MAC_HI), ==, 0xccbb);

    /* Objects that do not exist. */
    cmd = (struct uz_admin_cmd) { .opcode = UZ_CMD_DESTROY_EQ };
    cmd.destroy.handle = cpu_to_le32(3);
    g_assert_cmpint(uz_admin(&d, &cmd, NULL), ==, UZ_CMD_BAD_HANDLE);
    cmd.destroy.handle = cpu_to_le32(0xffffffff);
    g_assert_cmpint(uz_admin(&d, &cmd, NULL), ==, UZ_CMD_BAD_HANDLE);
    cmd = (struct uz_admin_cmd) { .opcode = UZ_CMD_DESTROY_ETH_TXQ };
    g_assert_cmpint(uz_admin(&d, &cmd, NULL), ==, UZ_CMD_BAD_HANDLE);

    /* Ethernet queue before its EQ exists: issued before setup. */
    cmd = (struct uz_admin_cmd) { .opcode = UZ_CMD_CREATE_ETH_RXQ };
    cmd.create_eth_queue.ring_addr = cpu_to_le64(uz_alloc(&d, 256));
    cmd.create_eth_queue.log_depth = 4;
    cmd.create_eth_queue.eqn = cpu_to_le32(0);
    g_assert_cmpint(uz_admin(&d, &cmd, NULL), ==, UZ_CMD_BAD_HANDLE);

    /*
     * Opcodes of the RDMA range without a command are answered so;
     * QUERY_COUNTERS into 0 bytes is a bad parameter, INVALIDATE_XLAT of
     * key 0 names no MR, RESIZE_CQ of CQ 0 no CQ, REREG_MR of key 0 no
     * MR, ALLOC_MW into PD 0 no PD, DEALLOC_MW of key 0 no window,
     * PAGE_RESUME of key 0 no ODP MR, ATTACH_MCAST and DETACH_MCAST of
     * QP 0 no QP, RESIZE_SRQ of SRQ 0 no SRQ; ALLOC_XRCD takes XRCD 0,
     * which DEALLOC_XRCD frees; ALLOC_DM of 0 bytes is a bad parameter,
     * DEALLOC_DM of allocation 0 names none, CREATE_FLOW on QP 0 no
     * raw QP, DESTROY_FLOW of rule 0 no rule.
     */
    for (op = UZ_CMD_QUERY_COUNTERS; op <= UZ_CMD_RDMA_LAST; op++) {
        cmd = (struct uz_admin_cmd) { .opcode = op };
        g_assert_cmpint(uz_admin(&d, &cmd, NULL), ==,
                        op == UZ_CMD_QUERY_COUNTERS ||
                        op == UZ_CMD_ALLOC_DM ? UZ_CMD_BAD_PARAM :
                        op == UZ_CMD_ALLOC_XRCD ||
                        op == UZ_CMD_DEALLOC_XRCD ? UZ_CMD_OK :
                        op == UZ_CMD_INVALIDATE_XLAT ||
                        op == UZ_CMD_RESIZE_CQ ||
                        op == UZ_CMD_REREG_MR ||
                        op == UZ_CMD_ALLOC_MW ||
                        op == UZ_CMD_DEALLOC_MW ||
                        op == UZ_CMD_PAGE_RESUME ||
                        op == UZ_CMD_ATTACH_MCAST ||
                        op == UZ_CMD_DETACH_MCAST ||
                        op == UZ_CMD_RESIZE_SRQ ||
                        op == UZ_CMD_DEALLOC_DM ||
                        op == UZ_CMD_CREATE_FLOW ||
                        op == UZ_CMD_DESTROY_FLOW ? UZ_CMD_BAD_HANDLE :
                                                 UZ_CMD_NOT_SUPPORTED);
    }

    /* The queue is still healthy and every error was logged. */
    cmd = (struct uz_admin_cmd) { .opcode = UZ_CMD_SET_MTU };
    cmd.set_mtu.mtu = cpu_to_le32(1500);
    g_assert_cmpint(uz_admin(&d, &cmd, NULL), ==, UZ_CMD_OK);
    g_assert_cmphex(uz_rd(&d, UZ_REG_ADMIN_STATUS), ==,
                    UZ_ADMIN_STATUS_ENABLED);
    log = uz_machine_log(&m);
    g_assert(strstr(log, "uzura: admin command 0xee (id 0) failed with "
                    "status 0x01"));
    g_assert(strstr(log, "admin command 0x03 (id 2) failed with status 0x02"));
    g_assert(strstr(log, "failed with status 0x07"));
    stop1(&m, &d);
}

static void test_admin_setup_errors(void)
{
    UzMachine m;
    UzDev d;
    g_autofree char *log = NULL;
    struct uz_admin_cmd cmd = { .opcode = UZ_CMD_SET_MTU };
    uint64_t ring;

    start1(&m, &d);

    /* A doorbell before the queue exists is refused and logged. */
    uz_ring(&d, UZ_DB_ADMIN, 1);
    g_assert_cmpint(uz_rd(&d, UZ_REG_ERR_STATUS), ==, UZ_ERR_BAD_STATE);

    /* Depth out of range: enabling is refused. */
    ring = uz_alloc(&d, 64 * 16);
    uz_wr(&d, UZ_REG_ADMIN_SQ_LO, ring);
    uz_wr(&d, UZ_REG_ADMIN_SQ_HI, ring >> 32);
    uz_wr(&d, UZ_REG_ADMIN_CQ_LO, ring);
    uz_wr(&d, UZ_REG_ADMIN_CQ_HI, ring >> 32);
    uz_wr(&d, UZ_REG_ADMIN_DEPTH, 13);
    uz_wr(&d, UZ_REG_ADMIN_CTRL, UZ_ADMIN_CTRL_ENABLE);
    g_assert_cmpint(uz_rd(&d, UZ_REG_ERR_STATUS), ==, UZ_ERR_BAD_VALUE);
    g_assert_cmphex(uz_rd(&d, UZ_REG_ADMIN_STATUS), ==, 0);

    /* A ring outside guest RAM: refused too. */
    uz_wr(&d, UZ_REG_ADMIN_DEPTH, 4);
    uz_wr(&d, UZ_REG_ADMIN_SQ_HI, 0x100);
    uz_wr(&d, UZ_REG_ADMIN_CTRL, UZ_ADMIN_CTRL_ENABLE);
    g_assert_cmphex(uz_rd(&d, UZ_REG_ADMIN_STATUS), ==, 0);

    /* Good rings: enabled; now the ring registers are locked. */
    uz_admin_start(&d, 4);
    uz_wr(&d, UZ_REG_ADMIN_DEPTH, 2);
    g_assert_cmpint(uz_rd(&d, UZ_REG_ERR_STATUS), ==, UZ_ERR_BAD_STATE);
    g_assert_cmpint(uz_rd(&d, UZ_REG_ADMIN_DEPTH), ==, 4);

    /* A producer index that overruns the ring is refused. */
    uz_ring(&d, UZ_DB_ADMIN, 17);
    g_assert_cmpint(uz_rd(&d, UZ_REG_ERR_STATUS), ==, UZ_ERR_BAD_VALUE);
    g_assert_cmpint(uz_rd(&d, UZ_REG_ADMIN_CI), ==, 0);

    /* Doorbell misuse: unassigned slot, wrong size, loads. */
    uz_ring(&d, 0x40, 1);
    g_assert_cmpint(uz_rd(&d, UZ_REG_ERR_STATUS), ==, UZ_ERR_BAD_DOORBELL);
    g_assert_cmphex(uz_rd(&d, UZ_REG_ERR_ADDR), ==, 0x40);
    qpci_io_writew(d.pdev, d.db, 0, 1);
    g_assert_cmpint(uz_rd(&d, UZ_REG_ERR_STATUS), ==, UZ_ERR_BAD_SIZE);
    g_assert_cmphex(qpci_io_readl(d.pdev, d.db, 0), ==, 0);
    g_assert_cmpint(uz_rd(&d, UZ_REG_ERR_STATUS), ==, UZ_ERR_WRITE_ONLY);

    /* After all that the queue still executes commands. */
    cmd.set_mtu.mtu = cpu_to_le32(4000);
    g_assert_cmpint(uz_admin(&d, &cmd, NULL), ==, UZ_CMD_OK);
    log = uz_machine_log(&m);
    g_assert(strstr(log, "admin doorbell rung while the admin queue is "
                    "disabled"));
    g_assert(strstr(log, "admin doorbell 17 overruns the ring"));
    g_assert(strstr(log, "doorbell 0x40 has no queue"));
    stop1(&m, &d);
}

/* Reset stops the admin queue and forgets every EQ. */
static void test_reset_teardown(void)
{
    UzMachine m;
    UzDev d;
    UzEq eq;
    struct uz_admin_cmd cmd = { .opcode = UZ_CMD_SET_MTU };
    struct uz_eqe eqe;
    uint32_t cq0;
    int i;

    start1(&m, &d);
    uz_admin_start(&d, 3);
    g_assert_cmpint(uz_create_eq(&d, &eq, 3, 1, UZ_EQ_F_ASYNC), ==,
                    UZ_CMD_OK);

    /* Queue commands, reset before the device runs them. */
    for (i = 0; i < 8; i++) {
        cmd.set_mtu.mtu = cpu_to_le32(2000);
        uz_admin_put(&d, &cmd);
    }
    uz_ring(&d, UZ_DB_ADMIN, d.pi);
    uz_wr(&d, UZ_REG_RESET, UZ_RESET_KEY);
    g_assert_cmphex(uz_rd(&d, UZ_REG_ADMIN_STATUS), ==, 0);
    g_assert_cmphex(uz_rd(&d, UZ_REG_ADMIN_SQ_LO), ==, 0);
    cq0 = qtest_readl(d.qts, d.cq + 15 * 0);
    /* No DMA after the reset: nothing more lands in the rings. */
    for (i = 0; i < 100; i++) {
        uz_poll_pause(&d);
    }
    g_assert_cmphex(qtest_readl(d.qts, d.cq), ==, cq0);
    qtest_qmp_assert_success(d.qts, "{'execute': 'set_link', 'arguments':"
                             " {'name': 'uz0', 'up': false}}");
    g_assert(!uz_eq_next(&d, &eq, &eqe));
    uz_ring(&d, eq.db, UZ_DB_ARM);
    g_assert_cmpint(uz_rd(&d, UZ_REG_ERR_STATUS), ==, UZ_ERR_BAD_DOORBELL);
    g_assert_cmpint(uz_rd(&d, UZ_REG_MAC_LO), ==, 0x12005452);

    /* The device comes back up from scratch. */
    uz_admin_start(&d, 3);
    g_assert_cmpint(uz_create_eq(&d, &eq, 3, 1, UZ_EQ_F_ASYNC), ==,
                    UZ_CMD_OK);
    g_assert_cmpint(eq.eqn, ==, 0);
    stop1(&m, &d);
}

/* A PCIe function level reset stops the device the same way. */
static void test_flr(void)
{
    UzMachine m;
    UzDev d;
    UzEq eq;
    uint8_t exp;

    start1(&m, &d);
    uz_admin_start(&d, 3);
    g_assert_cmpint(uz_create_eq(&d, &eq, 3, 1, UZ_EQ_F_ASYNC), ==,
                    UZ_CMD_OK);
    exp = qpci_find_capability(d.pdev, PCI_CAP_ID_EXP, 0);
    g_assert_cmpint(exp, !=, 0);
    qpci_config_writew(d.pdev, exp + PCI_EXP_DEVCTL,
                       qpci_config_readw(d.pdev, exp + PCI_EXP_DEVCTL) |
                       PCI_EXP_DEVCTL_BCR_FLR);
    /* The function's BARs are gone: enable and map it again. */
    qpci_device_enable(d.pdev);
    d.regs = qpci_iomap(d.pdev, UZ_BAR_REGS, NULL);
    d.db = qpci_iomap(d.pdev, UZ_BAR_DB, NULL);
    g_assert_cmphex(uz_rd(&d, UZ_REG_MAGIC), ==, UZ_MAGIC);
    g_assert_cmphex(uz_rd(&d, UZ_REG_STATUS) & UZ_STATUS_READY, ==,
                    UZ_STATUS_READY);
    g_assert_cmphex(uz_rd(&d, UZ_REG_ADMIN_STATUS), ==, 0);
    uz_ring(&d, eq.db, UZ_DB_ARM);
    g_assert_cmpint(uz_rd(&d, UZ_REG_ERR_STATUS), ==, UZ_ERR_BAD_DOORBELL);
    uz_admin_start(&d, 3);
    g_assert_cmpint(uz_create_eq(&d, &eq, 3, 1, UZ_EQ_F_ASYNC), ==,
                    UZ_CMD_OK);
    g_assert_cmpint(eq.eqn, ==, 0);
    stop1(&m, &d);
}

/*
 * Fuzz: 10,000 commands of random opcodes and random bytes, in random
 * batches.  Every one is answered with a status and QEMU stays up.
 */
static void test_fuzz(void)
{
    UzMachine m;
    UzDev d;
    GRand *rnd = g_rand_new_with_seed(0x757a7572);
    struct uz_admin_cqe cqe;
    int done = 0, ok = 0;

    start1(&m, &d);
    uz_admin_start(&d, 6);
    while (done < 10000) {
        int batch = g_rand_int_range(rnd, 1, 65), i;
        uint32_t first = d.pi;

        for (i = 0; i < batch; i++) {
            struct uz_admin_cmd cmd;
            uint32_t *w = (uint32_t *)&cmd;
            int j;

            for (j = 0; j < sizeof(cmd) / 4; j++) {
                w[j] = g_rand_int(rnd);
            }
            /* Mostly known opcodes, so the handlers see garbage too. */
            if (g_rand_int_range(rnd, 0, 4)) {
                cmd.opcode = g_rand_int_range(rnd, 0, UZ_CMD_REREG_MR + 1);
            }
            uz_admin_put(&d, &cmd);
        }
        uz_ring(&d, UZ_DB_ADMIN, d.pi);
        for (i = 0; i < batch; i++) {
            uz_admin_wait(&d, first + i, &cqe);
            g_assert_cmpint(cqe.status, <=, UZ_CMD_EXISTS);
            ok += cqe.status == UZ_CMD_OK;
        }
        done += batch;
        /* Random garbage at random doorbells and registers, too. */
        uz_ring(&d, g_rand_int_range(rnd, 1, 1024) * 4, g_rand_int(rnd));
    }
    g_assert_cmpint(uz_counter(&m, 0, "admin_cmds"), ==, done);
    g_assert_cmpint(uz_counter(&m, 0, "admin_errors"), ==, done - ok);
    /* Still answering. */
    g_assert_cmphex(uz_rd(&d, UZ_REG_MAGIC), ==, UZ_MAGIC);
    g_rand_free(rnd);
    stop1(&m, &d);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);

    qtest_add_func("/uzura/admin/bad-commands", test_bad_commands);
    qtest_add_func("/uzura/admin/setup-errors", test_admin_setup_errors);
    qtest_add_func("/uzura/reset-teardown", test_reset_teardown);
    qtest_add_func("/uzura/flr", test_flr);
    qtest_add_func("/uzura/admin/fuzz", test_fuzz);

    return g_test_run();
}
