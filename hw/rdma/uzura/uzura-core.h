/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uzura RDMA NIC: the device core, independent of the PCI glue.
 *
 * The core sees the PCI function only through its owner pointer (for DMA
 * and MSI-X) and the NIC only through owner_nic.
 */
#ifndef HW_RDMA_UZURA_CORE_H
#define HW_RDMA_UZURA_CORE_H

#include "exec/hwaddr.h"
#include "uzura-hw.h"

typedef struct PCIDevice PCIDevice;
typedef struct NICState NICState;

typedef struct UzuraCore {
    PCIDevice *owner;
    NICState *owner_nic;
    uint8_t mac[6];
    uint32_t num_vectors;

    /* register file */
    uint32_t status;
    uint32_t scratch;
    uint32_t err_status;
    uint32_t err_count;
    uint32_t err_addr;
} UzuraCore;

void uzura_core_reset(UzuraCore *core);
uint64_t uzura_core_reg_read(UzuraCore *core, hwaddr addr, unsigned size);
void uzura_core_reg_write(UzuraCore *core, hwaddr addr, uint64_t val,
                          unsigned size);
void uzura_core_set_link(UzuraCore *core, bool up);

#endif /* HW_RDMA_UZURA_CORE_H */
