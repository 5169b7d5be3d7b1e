/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qtest for the uzura admin queue and event queues of one NIC, on
 * libqos's graph (libqos/uzura.c): on every machine whose graph has a
 * PCI bus.  Built into QEMU's qos-test; the tests that need two NICs, a
 * guest-error log or PCI Express boot their own q35 machines in the
 * other uzura-*-test.c.
 */
#include "qemu/osdep.h"
#include "libqos/qgraph.h"
#include "libqos/uzura.h"
#include "uzura-qtest.h"

/* Each test wants a NIC fresh from reset: the next one boots anew. */
static void uz_qos_fini(UzDev *d)
{
    uz_dev_fini(d);
    qos_invalidate_command_line();
}

static void test_query_device(void *obj, void *data,
                              QGuestAllocator *alloc)
{
    UzDev d;
    struct uz_admin_cmd cmd = { .opcode = UZ_CMD_QUERY_DEVICE };
    struct uz_admin_cqe cqe;
    struct uz_device_attr attr;
    uint64_t buf;

    uz_dev_attach(&d, &((QUzura *)obj)->dev, alloc);
    uz_admin_start(&d, 4);
    buf = uz_alloc(&d, sizeof(attr));
    cmd.query_device.buf_addr = cpu_to_le64(buf);
    cmd.query_device.buf_len = cpu_to_le32(sizeof(attr));
    g_assert_cmpint(uz_admin(&d, &cmd, &cqe), ==, UZ_CMD_OK);
    g_assert_cmpint(le32_to_cpu(cqe.out0), ==, sizeof(attr));
    qtest_memread(d.qts, buf, &attr, sizeof(attr));
    g_assert_cmphex(le32_to_cpu(attr.version), ==, UZ_VERSION);
    g_assert_cmphex(le32_to_cpu(attr.caps), ==, uz_rd(&d, UZ_REG_CAPS));
    g_assert_cmpint(le32_to_cpu(attr.mtu), ==, UZ_DEFAULT_MTU);
    g_assert_cmpint(le32_to_cpu(attr.max_mtu), ==, UZ_MAX_MTU);
    g_assert_cmpint(le32_to_cpu(attr.num_vectors), ==, 8);
    g_assert_cmpint(le32_to_cpu(attr.db_pages), ==, 64);
    g_assert_cmpint(le32_to_cpu(attr.max_eq), ==, UZ_MAX_EQ);
    g_assert_cmpint(attr.mac[0], ==, 0x52);
    g_assert_cmpint(attr.mac[5], ==, 0x50);
    g_assert_cmpint(uz_rd(&d, UZ_REG_ADMIN_CI), ==, 1);

    /* Too small a buffer, and a buffer outside guest memory. */
    cmd.query_device.buf_len = cpu_to_le32(sizeof(attr) - 1);
    g_assert_cmpint(uz_admin(&d, &cmd, NULL), ==, UZ_CMD_BAD_PARAM);
    cmd.query_device.buf_len = cpu_to_le32(sizeof(attr));
    cmd.query_device.buf_addr = cpu_to_le64(0xfff0000000000ull);
    g_assert_cmpint(uz_admin(&d, &cmd, NULL), ==, UZ_CMD_BAD_ADDR);
    g_assert_cmpint(uz_qom_counter(d.qts, "uz0", "admin_cmds"), ==, 3);
    g_assert_cmpint(uz_qom_counter(d.qts, "uz0", "admin_errors"), ==, 2);
    uz_qos_fini(&d);
}

/* Wrap the admin ring several times: phases and positions stay right. */
static void test_admin_wrap(void *obj, void *data,
                            QGuestAllocator *alloc)
{
    UzDev d;
    struct uz_admin_cmd cmd;
    struct uz_admin_cqe cqe;
    uint32_t idx[4];
    int round, i;

    uz_dev_attach(&d, &((QUzura *)obj)->dev, alloc);
    uz_admin_start(&d, 2);
    for (round = 0; round < 5; round++) {
        /* A full ring's worth in one doorbell. */
        for (i = 0; i < 4; i++) {
            cmd = (struct uz_admin_cmd) { .opcode = UZ_CMD_SET_MTU };
            cmd.set_mtu.mtu = cpu_to_le32(1000 + round * 4 + i);
            idx[i] = d.pi;
            uz_admin_put(&d, &cmd);
        }
        uz_ring(&d, UZ_DB_ADMIN, d.pi);
        for (i = 0; i < 4; i++) {
            uz_admin_wait(&d, idx[i], &cqe);
            g_assert_cmpint(cqe.status, ==, UZ_CMD_OK);
            g_assert_cmpint(le16_to_cpu(cqe.cmd_id), ==, round * 4 + i);
        }
    }
    g_assert_cmpint(uz_rd(&d, UZ_REG_ADMIN_CI), ==, 20);
    uz_wait_msix(&d, UZ_MSIX_VEC_ADMIN);
    uz_qos_fini(&d);
}

static void test_admin_interrupt(void *obj, void *data,
                                 QGuestAllocator *alloc)
{
    UzDev d;
    struct uz_admin_cmd cmd = { .opcode = UZ_CMD_SET_MTU };

    uz_dev_attach(&d, &((QUzura *)obj)->dev, alloc);
    uz_admin_start(&d, 3);
    g_assert(!qpci_msix_pending(d.pdev, UZ_MSIX_VEC_ADMIN));
    cmd.set_mtu.mtu = cpu_to_le32(1500);
    uz_admin(&d, &cmd, NULL);
    uz_wait_msix(&d, UZ_MSIX_VEC_ADMIN);
    uz_clear_msix(&d, UZ_MSIX_VEC_ADMIN);

    /* Without CTRL.INTR the device completes silently. */
    uz_wr(&d, UZ_REG_ADMIN_CTRL, UZ_ADMIN_CTRL_ENABLE);
    uz_admin(&d, &cmd, NULL);
    g_assert(!qpci_msix_pending(d.pdev, UZ_MSIX_VEC_ADMIN));
    uz_qos_fini(&d);
}

static void test_eq_create_destroy(void *obj, void *data,
                                   QGuestAllocator *alloc)
{
    UzDev d;
    UzEq eq[UZ_MAX_EQ + 1], extra;
    struct uz_admin_cmd cmd;
    int i;

    uz_dev_attach(&d, &((QUzura *)obj)->dev, alloc);
    uz_admin_start(&d, 5);

    g_assert_cmpint(uz_create_eq(&d, &extra, 0, 1, 0), ==, UZ_CMD_BAD_PARAM);
    g_assert_cmpint(uz_create_eq(&d, &extra, 17, 1, 0), ==, UZ_CMD_BAD_PARAM);
    g_assert_cmpint(uz_create_eq(&d, &extra, 4, 8, 0), ==, UZ_CMD_BAD_PARAM);
    g_assert_cmpint(uz_create_eq(&d, &extra, 4, 1, 0x80), ==,
                    UZ_CMD_BAD_PARAM);
    cmd = (struct uz_admin_cmd) { .opcode = UZ_CMD_CREATE_EQ };
    cmd.create_eq.ring_addr = cpu_to_le64(0xfff0000000000ull);
    cmd.create_eq.log_depth = 4;
    g_assert_cmpint(uz_admin(&d, &cmd, NULL), ==, UZ_CMD_BAD_ADDR);

    g_assert_cmpint(uz_create_eq(&d, &eq[0], 4, 1, UZ_EQ_F_ASYNC), ==,
                    UZ_CMD_OK);
    g_assert_cmpint(uz_create_eq(&d, &extra, 4, 1, UZ_EQ_F_ASYNC), ==,
                    UZ_CMD_EXISTS);
    for (i = 1; i < UZ_MAX_EQ; i++) {
        g_assert_cmpint(uz_create_eq(&d, &eq[i], 1, i % 8, 0), ==, UZ_CMD_OK);
        g_assert_cmpint(eq[i].eqn, ==, i);
        /* Doorbells are distinct slots of the kernel page. */
        g_assert_cmpint(eq[i].db, !=, eq[i - 1].db);
        g_assert_cmpint(eq[i].db, <, UZ_DB_PAGE_SIZE);
    }
    g_assert_cmpint(uz_create_eq(&d, &extra, 1, 0, 0), ==,
                    UZ_CMD_NO_RESOURCES);
    cmd = (struct uz_admin_cmd) { .opcode = UZ_CMD_DESTROY_EQ };
    cmd.destroy.handle = cpu_to_le32(7);
    g_assert_cmpint(uz_admin(&d, &cmd, NULL), ==, UZ_CMD_OK);
    g_assert_cmpint(uz_admin(&d, &cmd, NULL), ==, UZ_CMD_BAD_HANDLE);
    /* Its doorbell is gone with it. */
    uz_ring(&d, eq[7].db, 0);
    g_assert_cmpint(uz_rd(&d, UZ_REG_ERR_STATUS), ==, UZ_ERR_BAD_DOORBELL);
    g_assert_cmpint(uz_create_eq(&d, &extra, 1, 0, 0), ==, UZ_CMD_OK);
    g_assert_cmpint(extra.eqn, ==, 7);
    uz_qos_fini(&d);
}

static void test_eq_events(void *obj, void *data,
                           QGuestAllocator *alloc)
{
    UzDev d;
    UzEq eq;
    struct uz_eqe eqe;
    int i;

    uz_dev_attach(&d, &((QUzura *)obj)->dev, alloc);
    uz_admin_start(&d, 3);
    g_assert_cmpint(uz_create_eq(&d, &eq, 2, 3, UZ_EQ_F_ASYNC), ==,
                    UZ_CMD_OK);

    /* Link events arrive; the EQ is not armed, so no interrupt. */
    qtest_qmp_assert_success(d.qts, "{'execute': 'set_link', 'arguments':"
                             " {'name': 'uz0', 'up': false}}");
    uz_eq_wait(&d, &eq, &eqe);
    g_assert_cmpint(eqe.type, ==, UZ_EQE_PORT_DOWN);
    g_assert_cmpint(le32_to_cpu(eqe.handle), ==, 1);
    g_assert(!qpci_msix_pending(d.pdev, 3));

    /* Arming with nothing new: still quiet.  Then an event fires it. */
    uz_ring(&d, eq.db, eq.ci | UZ_DB_ARM);
    g_assert(!qpci_msix_pending(d.pdev, 3));
    qtest_qmp_assert_success(d.qts, "{'execute': 'qom-set', 'arguments':"
                             " {'path': '/machine/peripheral/uz0',"
                             " 'property': 'link', 'value': false}}");
    qtest_qmp_assert_success(d.qts, "{'execute': 'set_link', 'arguments':"
                             " {'name': 'uz0', 'up': true}}");
    /* The link property still holds the link down: no event. */
    g_assert(!uz_eq_next(&d, &eq, &eqe));
    g_assert(!(uz_rd(&d, UZ_REG_STATUS) & UZ_STATUS_LINK_UP));
    qtest_qmp_assert_success(d.qts, "{'execute': 'qom-set', 'arguments':"
                             " {'path': '/machine/peripheral/uz0',"
                             " 'property': 'link', 'value': true}}");
    uz_eq_wait(&d, &eq, &eqe);
    g_assert_cmpint(eqe.type, ==, UZ_EQE_PORT_ACTIVE);
    g_assert(uz_rd(&d, UZ_REG_STATUS) & UZ_STATUS_LINK_UP);
    uz_wait_msix(&d, 3);
    uz_clear_msix(&d, 3);

    /* Arming is one-shot: the next event does not interrupt. */
    qtest_qmp_assert_success(d.qts, "{'execute': 'set_link', 'arguments':"
                             " {'name': 'uz0', 'up': false}}");
    uz_eq_wait(&d, &eq, &eqe);
    g_assert(!qpci_msix_pending(d.pdev, 3));

    /* Arming while an event is unconsumed fires at once. */
    qtest_qmp_assert_success(d.qts, "{'execute': 'set_link', 'arguments':"
                             " {'name': 'uz0', 'up': true}}");
    uz_ring(&d, eq.db, eq.ci | UZ_DB_ARM);
    uz_wait_msix(&d, 3);
    uz_clear_msix(&d, 3);
    uz_eq_wait(&d, &eq, &eqe);
    g_assert_cmpint(eqe.type, ==, UZ_EQE_PORT_ACTIVE);

    /* Overflow: 4 entries, unconsumed; then the overflow event. */
    uz_ring(&d, eq.db, eq.ci);
    for (i = 0; i < 6; i++) {
        qtest_qmp_assert_success(d.qts, "{'execute': 'set_link', 'arguments':"
                                 " {'name': 'uz0', 'up': %i}}",
                                 i % 2 == 1);
    }
    g_assert_cmpint(uz_qom_counter(d.qts, "uz0", "eq_overflows"), ==, 2);
    for (i = 0; i < 4; i++) {
        uz_eq_wait(&d, &eq, &eqe);
        g_assert_cmpint(eqe.type, ==, i % 2 ? UZ_EQE_PORT_ACTIVE :
                                              UZ_EQE_PORT_DOWN);
    }
    g_assert(!uz_eq_next(&d, &eq, &eqe));
    uz_ring(&d, eq.db, eq.ci);
    uz_eq_wait(&d, &eq, &eqe);
    g_assert_cmpint(eqe.type, ==, UZ_EQE_EQ_OVERFLOW);
    g_assert_cmpint(le32_to_cpu(eqe.handle), ==, eq.eqn);

    /* A consumer index beyond the producer is refused. */
    uz_ring(&d, eq.db, eq.ci + 3);
    g_assert_cmpint(uz_rd(&d, UZ_REG_ERR_STATUS), ==, UZ_ERR_BAD_VALUE);
    uz_qos_fini(&d);
}

static void register_uzura_qos_tests(void)
{
    qos_add_test("admin-query-device", "uzura", test_query_device, NULL);
    qos_add_test("admin-wrap", "uzura", test_admin_wrap, NULL);
    qos_add_test("admin-interrupt", "uzura", test_admin_interrupt, NULL);
    qos_add_test("eq-create-destroy", "uzura", test_eq_create_destroy, NULL);
    qos_add_test("eq-events", "uzura", test_eq_events, NULL);
}

libqos_init(register_uzura_qos_tests);
