/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Helpers shared by the uzura qtests: boot a q35 machine with uzura NICs,
 * and drive one NIC through its registers, doorbells and rings in guest
 * memory, as a driver would.
 */
#ifndef UZURA_QTEST_H
#define UZURA_QTEST_H

#include "qemu/osdep.h"
#include "qemu/bswap.h"
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

#define UZ_SLOT(i)          (4 + (i))

/* Loops that wait for the device give up after this many polls. */
#define UZ_POLL_LIMIT       200000

typedef struct UzEq {
    uint32_t eqn;
    uint32_t db;
    uint64_t ring;
    uint32_t log_depth;
    uint32_t ci;
} UzEq;

typedef struct UzDev {
    QTestState *qts;
    QGuestAllocator *alloc;
    QPCIDevice *pdev;
    bool own_pdev;              /* found by uz_dev_init, freed by fini */
    QPCIBar regs;
    QPCIBar db;
    /* admin queue */
    uint64_t sq;
    uint64_t cq;
    uint32_t log_depth;
    uint32_t pi;
    uint16_t next_id;
} UzDev;

typedef struct UzMachine {
    QOSState *qs;
    char *log_path;
    char *cmdline;              /* for a migration's incoming side */
} UzMachine;

/*
 * Boot q35 with @n uzura NICs on one hub, so frames one sends reach the
 * others.  NIC i has MAC 52:54:00:12:34:5i and id uz<i>.
 */
void uz_machine_start(UzMachine *m, int n, const char *extra);

void uz_machine_stop(UzMachine *m);

char *uz_machine_log(UzMachine *m);

void uz_dev_init(UzDev *d, UzMachine *m, int i);

/*
 * Drive the NIC at @pdev, as uz_dev_init does: one that libqos's graph
 * found (libqos/uzura.c), on whatever machine the graph booted.
 */
void uz_dev_attach(UzDev *d, QPCIDevice *pdev, QGuestAllocator *alloc);

void uz_dev_fini(UzDev *d);

uint32_t uz_rd(UzDev *d, uint32_t reg);

void uz_wr(UzDev *d, uint32_t reg, uint32_t val);

void uz_ring(UzDev *d, uint32_t db_offset, uint32_t val);

uint64_t uz_alloc(UzDev *d, size_t size);

/*
 * Let the device's bottom halves run: every qtest command is a turn of
 * QEMU's main loop.  Virtual time does not move.  A target that runs
 * QEMU in its own process (the fuzz targets), where a read is only a
 * read, sets uz_poll_hook to turn the main loop itself.
 */
extern void (*uz_poll_hook)(QTestState *qts);
void uz_poll_pause(UzDev *d);

void uz_admin_start(UzDev *d, uint32_t log_depth);

/* Place one command at the producer index, without ringing. */
uint32_t uz_admin_put(UzDev *d, struct uz_admin_cmd *cmd);

/* Wait for the completion of the command at ring index @idx. */
void uz_admin_wait(UzDev *d, uint32_t idx,
                   struct uz_admin_cqe *cqe);

/* Execute one command; returns its status, the completion in @cqe. */
uint8_t uz_admin(UzDev *d, struct uz_admin_cmd *cmd,
                 struct uz_admin_cqe *cqe);

uint8_t uz_create_eq(UzDev *d, UzEq *eq, uint32_t log_depth,
                     uint16_t vector, uint8_t flags);

/* Read the next EQE if the device wrote it; advances the consumer. */
bool uz_eq_next(UzDev *d, UzEq *eq, struct uz_eqe *eqe);

/* Wait for the next EQE. */
void uz_eq_wait(UzDev *d, UzEq *eq, struct uz_eqe *eqe);

/* Wait until MSI-X @vector is pending (vectors stay masked in qtest). */
void uz_wait_msix(UzDev *d, uint16_t vector);

/* Deliver and so clear a pending vector: unmask, then mask again. */
void uz_clear_msix(UzDev *d, uint16_t vector);

/* Counter @name of the NIC whose QOM id is @id (uz<nic>). */
uint64_t uz_qom_counter(QTestState *qts, const char *id, const char *name);
uint64_t uz_counter(UzMachine *m, int nic, const char *name);

#endif /* UZURA_QTEST_H */
