/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libqos driver node for the uzura RDMA NIC: any machine whose graph has
 * a PCI bus can carry it.  Its link is a hub port, so frames it sends go
 * nowhere; tests of two NICs talking boot their own machines
 * (uzura-qtest.h's uz_machine_start).
 */
#include "qemu/osdep.h"
#include "../libqtest.h"
#include "qgraph.h"
#include "pci.h"
#include "uzura.h"
#include "standard-headers/drivers/infiniband/hw/uzura/uzura_regs_defs.h"

#define UZURA_SLOT 4

static void *uzura_get_driver(void *obj, const char *interface)
{
    QUzura *u = obj;

    if (!g_strcmp0(interface, "pci-device")) {
        return &u->dev;
    }
    fprintf(stderr, "%s not present in uzura\n", interface);
    g_assert_not_reached();
}

static void *uzura_create(void *pci_bus, QGuestAllocator *alloc, void *addr)
{
    QUzura *u = g_new0(QUzura, 1);

    qpci_device_init(&u->dev, pci_bus, addr);
    u->obj.get_driver = uzura_get_driver;
    return &u->obj;
}

static void uzura_register_nodes(void)
{
    QPCIAddress addr = {
        .devfn = QPCI_DEVFN(UZURA_SLOT, 0),
        .vendor_id = UZ_PCI_VENDOR_ID,
        .device_id = UZ_PCI_DEVICE_ID,
    };
    QOSGraphEdgeOptions opts = {
        .extra_device_opts = "id=uz0,netdev=uzn0,mac=52:54:00:12:34:50,"
                             "addr=04.0",
        .before_cmd_line = "-netdev hubport,id=uzn0,hubid=0",
    };

    add_qpci_address(&opts, &addr);
    qos_node_create_driver("uzura", uzura_create);
    qos_node_consumes("uzura", "pci-bus", &opts);
}

libqos_init(uzura_register_nodes);
