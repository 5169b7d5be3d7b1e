/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libqos driver node for the uzura RDMA NIC.
 */
#ifndef QTEST_LIBQOS_UZURA_H
#define QTEST_LIBQOS_UZURA_H

#include "qgraph.h"
#include "pci.h"

/*
 * The NIC on the slot and netdev the graph gave it: the tests drive it
 * through uzura-qtest.h's uz_dev_attach().  Its QOM id is "uz0".
 */
typedef struct QUzura {
    QOSGraphObject obj;
    QPCIDevice dev;
} QUzura;

#endif
