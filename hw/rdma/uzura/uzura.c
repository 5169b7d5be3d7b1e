/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uzura RDMA NIC: PCI glue.
 *
 * QOM state, BARs, MSI-X, the NIC backend, properties and reset.  Every
 * callback forwards to the core (uzura-core.h), which does the work.
 */
#include "qemu/osdep.h"
#include "qemu/units.h"
#include "qemu/module.h"
#include "qapi/error.h"
#include "qapi/visitor.h"
#include "hw/pci/pci_device.h"
#include "hw/pci/pcie.h"
#include "hw/pci/msix.h"
#include "hw/qdev-properties.h"
#include "migration/misc.h"
#include "migration/vmstate.h"
#include "net/net.h"
#include "system/system.h"
#include "qom/object.h"
#include "uzura-core.h"
#include "trace.h"

#define TYPE_UZURA "uzura"
OBJECT_DECLARE_SIMPLE_TYPE(UzuraState, UZURA)

#define UZURA_DM_MAX_SIZE   (64u << 20)

struct UzuraState {
    PCIDevice parent_obj;

    MemoryRegion regs;
    MemoryRegion msix;
    MemoryRegion db;
    MemoryRegion db_bar;        /* doorbell pages, then device memory */
    MemoryRegion dm;
    NICState *nic;
    NICConf conf;
    NotifierWithReturn migration_notifier;

    uint32_t num_vectors;
    uint32_t db_pages;
    uint32_t dm_size;
    uint32_t speed;
    bool link;
    UzuraLimits lim;

    UzuraCore core;
};

/*
 * Both BARs let every access size and alignment through unsplit, so the
 * core sees, and reports, the access the guest made.
 */
#define UZURA_ANY_ACCESS                                            \
    .valid = { .min_access_size = 1, .max_access_size = 8,         \
               .unaligned = true },                                 \
    .impl = { .min_access_size = 1, .max_access_size = 8,          \
              .unaligned = true }

static uint64_t uzura_mmio_read(void *opaque, hwaddr addr, unsigned size)
{
    UzuraState *s = opaque;

    return uzura_core_reg_read(&s->core, addr, size);
}

static void uzura_mmio_write(void *opaque, hwaddr addr, uint64_t val,
                             unsigned size)
{
    UzuraState *s = opaque;
    bool g = uzura_enter(&s->core);

    uzura_core_reg_write(&s->core, addr, val, size);
    uzura_leave(&s->core, g);
}

static const MemoryRegionOps uzura_mmio_ops = {
    .read = uzura_mmio_read,
    .write = uzura_mmio_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    UZURA_ANY_ACCESS,
};

static uint64_t uzura_db_mmio_read(void *opaque, hwaddr addr, unsigned size)
{
    UzuraState *s = opaque;

    return uzura_db_read(&s->core, addr, size);
}

static void uzura_db_mmio_write(void *opaque, hwaddr addr, uint64_t val,
                                unsigned size)
{
    UzuraState *s = opaque;
    bool g = uzura_enter(&s->core), turn = uzura_turn_begin(&s->core);

    uzura_db_write(&s->core, addr, val, size);
    uzura_turn_end(turn);
    uzura_leave(&s->core, g);
}

static const MemoryRegionOps uzura_db_ops = {
    .read = uzura_db_mmio_read,
    .write = uzura_db_mmio_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    UZURA_ANY_ACCESS,
};

/*
 * No can_receive: the NIC takes every frame.  RoCE frames go to the RDMA
 * engine whatever the Ethernet ring holds, Ethernet frames with no
 * descriptor to the hold queue (uzura-eth.c); the timing model queues
 * frames by itself.
 */
static ssize_t uzura_nc_receive(NetClientState *nc, const uint8_t *buf,
                                size_t size)
{
    UzuraState *s = qemu_get_nic_opaque(nc);
    bool g = uzura_enter(&s->core);
    ssize_t ret = uzura_link_receive(&s->core, buf, size);

    uzura_work_after_batch(&s->core);
    uzura_leave(&s->core, g);
    return ret;
}

static void uzura_nc_link_status_changed(NetClientState *nc)
{
    UzuraState *s = qemu_get_nic_opaque(nc);
    bool g = uzura_enter(&s->core);

    trace_uzura_link_status(nc->link_down);
    uzura_core_set_link(&s->core, !nc->link_down, s->link);
    uzura_leave(&s->core, g);
}

static NetClientInfo uzura_net_info = {
    .type = NET_CLIENT_DRIVER_NIC,
    .size = sizeof(NICState),
    .receive = uzura_nc_receive,
    .link_status_changed = uzura_nc_link_status_changed,
};

static void uzura_init_msix(UzuraState *s, Error **errp)
{
    PCIDevice *pdev = PCI_DEVICE(s);
    int i;

    if (msix_init(pdev, s->num_vectors, &s->msix, UZ_BAR_MSIX,
                  UZ_MSIX_TABLE_OFFSET, &s->msix, UZ_BAR_MSIX,
                  UZ_MSIX_PBA_OFFSET, 0, errp) < 0) {
        return;
    }
    for (i = 0; i < s->num_vectors; i++) {
        msix_vector_use(pdev, i);
    }
}

static void uzura_write_config(PCIDevice *pdev, uint32_t addr, uint32_t val,
                               int len)
{
    pci_default_write_config(pdev, addr, val, len);
    if (pdev->exp.exp_cap) {
        /* A write of DEVCTL.BCR_FLR resets the function. */
        pcie_cap_flr_write_config(pdev, addr, val, len);
    }
}

#define UZ_MAX_TABLE    (1u << 20)  /* entries of any object table */
#define UZ_MAX_CRW_TAGS 4096        /* a QP's CRW tag table */
#define UZ_MAX_RD_ATOM  255         /* ibv_qp_attr.max_rd_atomic: 8 bits */

/* The RDMA limits: table sizes, and ring sizes that are powers of 2. */
static bool uzura_check_limits(const UzuraLimits *l, Error **errp)
{
    const uint32_t tables[] = { l->max_pd, l->max_cq, l->max_qp, l->max_mr,
                                l->max_srq, l->max_ah, l->xlat_cache_entries };
    int i;

    for (i = 0; i < ARRAY_SIZE(tables); i++) {
        if (!tables[i] || tables[i] > UZ_MAX_TABLE) {
            error_setg(errp, "uzura: object tables take 1..%u entries",
                       UZ_MAX_TABLE);
            return false;
        }
    }
    if (l->max_qp < 3 || l->max_mr < 2 || !l->max_sge ||
        l->max_sge > UZ_SGL_MAX ||
        !is_power_of_2(l->max_cqe) || !is_power_of_2(l->max_qp_wr) ||
        !is_power_of_2(l->max_srq_wr) ||
        l->max_cqe > (1u << UZ_CQ_LOG_DEPTH_MAX) ||
        l->max_qp_wr > (1u << 16) || l->max_srq_wr > (1u << 16)) {
        error_setg(errp, "uzura: RDMA limits out of range (rings a power "
                   "of 2, max-cqe up to 4194304, max-qp-wr and max-srq-wr "
                   "up to 65536, max-qp at least 3, max-mr at least 2, "
                   "max-sge 1..28)");
        return false;
    }
    /* The responder keeps a ring of this many READ/atomic slots. */
    if (!l->max_qp_rd_atom || l->max_qp_rd_atom > UZ_MAX_RD_ATOM) {
        error_setg(errp, "uzura: max-qp-rd-atom takes 1..%u", UZ_MAX_RD_ATOM);
        return false;
    }
    /* Inline data is copied into a buffer of the largest WQE's. */
    if (l->max_inline > UZ_INLINE_MAX) {
        error_setg(errp, "uzura: max-inline takes 0..%u", UZ_INLINE_MAX);
        return false;
    }
    if (!l->max_crw_tags || l->max_crw_tags > UZ_MAX_CRW_TAGS) {
        error_setg(errp, "uzura: max-crw-tags takes 1..%u", UZ_MAX_CRW_TAGS);
        return false;
    }
    /* A REG_MR WQE counts its pages in 16 bits. */
    if (!l->max_fast_reg_pages || l->max_fast_reg_pages > UINT16_MAX) {
        error_setg(errp, "uzura: max-fast-reg-pages takes 1..%u", UINT16_MAX);
        return false;
    }
    return true;
}

/*
 * What does not migrate yet refuses a migration as it starts, naming
 * itself (uzura_migration_check); what starts during one fails it at
 * its end, in the core's pre_save.
 */
static int uzura_migration_notify(NotifierWithReturn *n, MigrationEvent *e,
                                  Error **errp)
{
    UzuraState *s = container_of(n, UzuraState, migration_notifier);

    if (e->type != MIG_EVENT_PRECOPY_SETUP ||
        uzura_migration_check(&s->core, errp)) {
        return 0;
    }
    trace_uzura_migration_blocked(error_get_pretty(*errp));
    return -EBUSY;
}

/* The link is the new host's: its change reaches the driver as an event. */
static int uzura_post_load(void *opaque, int version_id)
{
    UzuraState *s = opaque;

    uzura_core_set_link(&s->core, !qemu_get_queue(s->nic)->link_down,
                        s->link);
    return 0;
}

static const VMStateDescription vmstate_uzura = {
    .name = "uzura",
    .version_id = 1,
    .minimum_version_id = 1,
    .post_load = uzura_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_PCI_DEVICE(parent_obj, UzuraState),
        VMSTATE_MSIX(parent_obj, UzuraState),
        VMSTATE_STRUCT(core, UzuraState, 1, vmstate_uzura_core, UzuraCore),
        VMSTATE_END_OF_LIST()
    }
};

static void uzura_realize(PCIDevice *pdev, Error **errp)
{
    ERRP_GUARD();
    UzuraState *s = UZURA(pdev);
    DeviceState *dev = DEVICE(pdev);

    if (s->core.pause.prio > 7) {
        error_setg(errp, "uzura: pfc-prio takes 0..7");
        return;
    }
    if (s->num_vectors < 1 || s->num_vectors > UZ_MSIX_MAX_VECTORS) {
        error_setg(errp, "uzura: vectors must be 1..%d",
                   UZ_MSIX_MAX_VECTORS);
        return;
    }
    if (s->db_pages < 1 || s->db_pages > UZ_DB_MAX_PAGES ||
        !is_power_of_2(s->db_pages)) {
        error_setg(errp, "uzura: db-pages must be a power of 2, 1..%d",
                   UZ_DB_MAX_PAGES);
        return;
    }
    if (s->dm_size % UZ_DM_PAGE_SIZE || s->dm_size > UZURA_DM_MAX_SIZE) {
        error_setg(errp, "uzura: dm-size takes a multiple of %u up to %u",
                   UZ_DM_PAGE_SIZE, UZURA_DM_MAX_SIZE);
        return;
    }
    if (s->speed < UZ_SPEED_MIN || s->speed > UZ_SPEED_MAX) {
        error_setg(errp, "uzura: speed takes %u..%u Mb/s", UZ_SPEED_MIN,
                   UZ_SPEED_MAX);
        return;
    }
    if (!uzura_check_limits(&s->lim, errp)) {
        return;
    }
    if (s->core.model.on && !uzura_model_check(&s->core.model.p, errp)) {
        return;
    }

    memory_region_init_io(&s->regs, OBJECT(s), &uzura_mmio_ops, s,
                          "uzura-regs", UZ_BAR_REGS_SIZE);
    pci_register_bar(pdev, UZ_BAR_REGS, PCI_BASE_ADDRESS_SPACE_MEMORY |
                     PCI_BASE_ADDRESS_MEM_TYPE_64, &s->regs);
    memory_region_init(&s->msix, OBJECT(s), "uzura-msix", UZ_BAR_MSIX_SIZE);
    pci_register_bar(pdev, UZ_BAR_MSIX, PCI_BASE_ADDRESS_SPACE_MEMORY |
                     PCI_BASE_ADDRESS_MEM_TYPE_64, &s->msix);
    memory_region_init_io(&s->db, OBJECT(s), &uzura_db_ops, s, "uzura-db",
                          s->db_pages * UZ_DB_PAGE_SIZE);
    memory_region_init(&s->db_bar, OBJECT(s), "uzura-bar4",
                       pow2ceil(s->db_pages * UZ_DB_PAGE_SIZE +
                                (uint64_t)s->dm_size));
    memory_region_add_subregion(&s->db_bar, 0, &s->db);
    if (s->dm_size) {
        /* Plain RAM: the host's loads and stores do not trap. */
        if (!memory_region_init_ram(&s->dm, OBJECT(s), "uzura-dm",
                                    s->dm_size, errp)) {
            return;
        }
        memory_region_add_subregion(&s->db_bar,
                                    s->db_pages * UZ_DB_PAGE_SIZE, &s->dm);
    }
    pci_register_bar(pdev, UZ_BAR_DB, PCI_BASE_ADDRESS_SPACE_MEMORY |
                     PCI_BASE_ADDRESS_MEM_TYPE_64, &s->db_bar);

    if (pci_bus_is_express(pci_get_bus(pdev))) {
        if (pcie_endpoint_cap_init(pdev, 0) < 0) {
            error_setg(errp, "uzura: cannot add the PCIe capability");
            return;
        }
        pcie_cap_flr_init(pdev);
    }

    uzura_init_msix(s, errp);
    if (*errp) {
        return;
    }

    migration_add_notifier(&s->migration_notifier, uzura_migration_notify);

    qemu_macaddr_default_if_unset(&s->conf.macaddr);
    s->nic = qemu_new_nic(&uzura_net_info, &s->conf,
                          object_get_typename(OBJECT(s)), dev->id,
                          &dev->mem_reentrancy_guard, s);
    qemu_format_nic_info_str(qemu_get_queue(s->nic), s->conf.macaddr.a);
    trace_uzura_realize(qemu_get_queue(s->nic)->info_str);

    s->core.owner = pdev;
    s->core.owner_nic = s->nic;
    s->core.num_vectors = s->num_vectors;
    s->core.db_pages = s->db_pages;
    s->core.link_speed = s->speed;
    s->core.rdma.lim = s->lim;
    memcpy(s->core.perm_mac, s->conf.macaddr.a, sizeof(s->core.perm_mac));
    uzura_core_init(&s->core);
    uzura_dm_init(&s->core, &s->dm, s->dm_size,
                  s->db_pages * UZ_DB_PAGE_SIZE);
    uzura_core_reset(&s->core);
    uzura_core_set_link(&s->core, !qemu_get_queue(s->nic)->link_down,
                        s->link);
}

static void uzura_exit(PCIDevice *pdev)
{
    UzuraState *s = UZURA(pdev);

    /* The peer hears BYE from the lockstep while the NIC is there. */
    uzura_model_set_sync(&s->core, false, NULL);
    qemu_del_nic(s->nic);
    uzura_core_uninit(&s->core);
    migration_remove_notifier(&s->migration_notifier);
    msix_unuse_all_vectors(pdev);
    msix_uninit(pdev, &s->msix, &s->msix);
}

static void uzura_reset_hold(Object *obj, ResetType type)
{
    UzuraState *s = UZURA(obj);

    trace_uzura_reset_hold();
    uzura_core_reset(&s->core);
}

static const Property uzura_properties[] = {
    DEFINE_NIC_PROPERTIES(UzuraState, conf),
    DEFINE_PROP_UINT32("vectors", UzuraState, num_vectors, 8),
    DEFINE_PROP_UINT32("db-pages", UzuraState, db_pages, 64),
    /* Device memory (ibv_alloc_dm), bytes; 0: none. */
    DEFINE_PROP_UINT32("dm-size", UzuraState, dm_size, 256 * KiB),
    /* SQ shadow doorbells (spec 8.6.1) offered to the driver. */
    DEFINE_PROP_BOOL("sq-shadow", UzuraState, core.rdma.sq_shadow, true),
    DEFINE_PROP_BOOL("ecn", UzuraState, core.rdma.ecn, true),
    /* Link-level flow control received (spec 9.1.3). */
    DEFINE_PROP_BOOL("pause-rx", UzuraState, core.pause.rx, true),
    DEFINE_PROP_UINT8("pfc-prio", UzuraState, core.pause.prio, 3),
    /* The rate the port advertises; the link runs as fast as the host. */
    DEFINE_PROP_UINT32("speed", UzuraState, speed, 25000),
    DEFINE_PROP_UINT32("max-pd", UzuraState, lim.max_pd, 1024),
    DEFINE_PROP_UINT32("max-cq", UzuraState, lim.max_cq, 1024),
    DEFINE_PROP_UINT32("max-cqe", UzuraState, lim.max_cqe, 4194304),
    DEFINE_PROP_UINT32("max-qp", UzuraState, lim.max_qp, 1024),
    DEFINE_PROP_UINT32("max-qp-wr", UzuraState, lim.max_qp_wr, 4096),
    DEFINE_PROP_UINT32("max-sge", UzuraState, lim.max_sge, 16),
    DEFINE_PROP_UINT32("max-inline", UzuraState, lim.max_inline, 256),
    DEFINE_PROP_UINT32("max-srq", UzuraState, lim.max_srq, 256),
    DEFINE_PROP_UINT32("max-srq-wr", UzuraState, lim.max_srq_wr, 4096),
    DEFINE_PROP_UINT32("max-mr", UzuraState, lim.max_mr, 4096),
    DEFINE_PROP_UINT64("max-mr-size", UzuraState, lim.max_mr_size,
                       1ull << 32),
    DEFINE_PROP_UINT32("max-ah", UzuraState, lim.max_ah, 1024),
    DEFINE_PROP_UINT32("max-qp-rd-atom", UzuraState, lim.max_qp_rd_atom, 16),
    DEFINE_PROP_UINT32("xlat-cache-entries", UzuraState,
                       lim.xlat_cache_entries, 4096),
    DEFINE_PROP_UINT32("max-crw-tags", UzuraState, lim.max_crw_tags, 64),
    DEFINE_PROP_UINT32("max-fast-reg-pages", UzuraState,
                       lim.max_fast_reg_pages, 512),
    /* The timing model (8.20): the UZURA paper's table 5 and table 6. */
    DEFINE_PROP_BOOL("model", UzuraState, core.model.on, false),
    DEFINE_PROP_UINT32("model-doorbell-ns", UzuraState,
                       core.model.p.doorbell_ns, 780),
    DEFINE_PROP_UINT32("model-dma-read-ns", UzuraState,
                       core.model.p.dma_rd_ns, 708),
    DEFINE_PROP_UINT32("model-dma-read-ps", UzuraState,
                       core.model.p.dma_rd_ps, 809),
    DEFINE_PROP_UINT32("model-xlat-hit-ns", UzuraState,
                       core.model.p.xlat_hit_ns, 40),
    DEFINE_PROP_UINT32("model-xlat-miss-ns", UzuraState,
                       core.model.p.xlat_miss_ns, 320),
    DEFINE_PROP_UINT32("model-nic-tx-ns", UzuraState,
                       core.model.p.nic_tx_ns, 250),
    DEFINE_PROP_UINT32("model-link-ns", UzuraState,
                       core.model.p.link_ns, 1560),
    DEFINE_PROP_UINT32("model-link-mbps", UzuraState,
                       core.model.p.link_mbps, 10000),
    DEFINE_PROP_UINT32("model-nic-rx-ns", UzuraState,
                       core.model.p.nic_rx_ns, 500),
    DEFINE_PROP_UINT32("model-dma-write-ns", UzuraState,
                       core.model.p.dma_wr_ns, 121),
    DEFINE_PROP_UINT32("model-dma-write-ps", UzuraState,
                       core.model.p.dma_wr_ps, 920),
};

/* Lockstep with the peer's timing model, at run time (8.20.2). */
static bool uzura_get_model_sync(Object *obj, Error **errp)
{
    return UZURA(obj)->core.model.engaged;
}

static void uzura_set_model_sync(Object *obj, bool value, Error **errp)
{
    UzuraState *s = UZURA(obj);

    if (!s->nic) {
        error_setg(errp, "model-sync: set it once the device is realized");
        return;
    }
    uzura_model_set_sync(&s->core, value, errp);
}

/* The link property is the cable: settable at run time with qom-set. */
static bool uzura_get_link(Object *obj, Error **errp)
{
    return UZURA(obj)->link;
}

static void uzura_set_link(Object *obj, bool value, Error **errp)
{
    UzuraState *s = UZURA(obj);

    s->link = value;
    if (s->nic) {
        uzura_core_set_link(&s->core, !qemu_get_queue(s->nic)->link_down,
                            value);
    }
}

/* Batching (spec 7.1), each half on or off at run time, to measure it. */
static bool uzura_get_tx_batch(Object *obj, Error **errp)
{
    return UZURA(obj)->core.tx_batch;
}

static void uzura_set_tx_batch(Object *obj, bool value, Error **errp)
{
    UZURA(obj)->core.tx_batch = value;
}

static bool uzura_get_rx_batch(Object *obj, Error **errp)
{
    return UZURA(obj)->core.rx_batch;
}

static void uzura_set_rx_batch(Object *obj, bool value, Error **errp)
{
    UZURA(obj)->core.rx_batch = value;
}

/*
 * Fault injection (research/uzura-fault.c): probabilities per frame on
 * transmit, a delay and the generator's seed, all settable at run time.
 */
static const struct {
    const char *name;
    size_t offset;
} uzura_fault_probs[] = {
    { "fault-drop", offsetof(UzuraFault, drop) },
    { "fault-dup", offsetof(UzuraFault, dup) },
    { "fault-reorder", offsetof(UzuraFault, reorder) },
    { "fault-corrupt", offsetof(UzuraFault, corrupt) },
};

static void uzura_get_prob(Object *obj, Visitor *v, const char *name,
                           void *opaque, Error **errp)
{
    double *p = opaque;

    visit_type_number(v, name, p, errp);
}

static void uzura_set_prob(Object *obj, Visitor *v, const char *name,
                           void *opaque, Error **errp)
{
    double *p = opaque, val;

    if (!visit_type_number(v, name, &val, errp)) {
        return;
    }
    if (!(val >= 0 && val <= 1)) {
        error_setg(errp, "%s: a probability lies in 0..1, not %.17g", name,
                   val);
        return;
    }
    *p = val;
}

static void uzura_get_delay(Object *obj, Visitor *v, const char *name,
                            void *opaque, Error **errp)
{
    visit_type_uint32(v, name, &UZURA(obj)->core.fault.delay_us, errp);
}

static void uzura_set_delay(Object *obj, Visitor *v, const char *name,
                            void *opaque, Error **errp)
{
    uint32_t val;

    if (!visit_type_uint32(v, name, &val, errp)) {
        return;
    }
    if (val > UZ_FAULT_DELAY_MAX_US) {
        error_setg(errp, "%s: at most %u us", name, UZ_FAULT_DELAY_MAX_US);
        return;
    }
    UZURA(obj)->core.fault.delay_us = val;
}

static void uzura_get_seed(Object *obj, Visitor *v, const char *name,
                           void *opaque, Error **errp)
{
    visit_type_uint64(v, name, &UZURA(obj)->core.fault.seed, errp);
}

/* Setting the seed restarts the fault sequence. */
static void uzura_set_seed(Object *obj, Visitor *v, const char *name,
                           void *opaque, Error **errp)
{
    uint64_t val;

    if (visit_type_uint64(v, name, &val, errp)) {
        uzura_fault_reseed(&UZURA(obj)->core, val);
    }
}

/* Loss recovery (9.6): go-back-N or selective repeat, at run time too. */
static char *uzura_get_recovery(Object *obj, Error **errp)
{
    return g_strdup(UZURA(obj)->core.rdma.recovery == UZ_RECOVERY_SR ?
                    "sr" : "gbn");
}

static void uzura_set_recovery(Object *obj, const char *value, Error **errp)
{
    UzuraRdma *r = &UZURA(obj)->core.rdma;

    if (!strcmp(value, "gbn")) {
        r->recovery = UZ_RECOVERY_GBN;
    } else if (!strcmp(value, "sr")) {
        r->recovery = UZ_RECOVERY_SR;
    } else {
        error_setg(errp, "recovery: gbn (go-back-N) or sr (selective "
                   "repeat), not '%s'", value);
    }
}

static void uzura_get_us(Object *obj, Visitor *v, const char *name,
                         void *opaque, Error **errp)
{
    visit_type_uint32(v, name, opaque, errp);
}

static void uzura_set_us(Object *obj, Visitor *v, const char *name,
                         void *opaque, Error **errp)
{
    uint32_t val;

    if (!visit_type_uint32(v, name, &val, errp)) {
        return;
    }
    if (val > UZ_FAULT_DELAY_MAX_US * 10) {
        error_setg(errp, "%s: at most %u us", name,
                   UZ_FAULT_DELAY_MAX_US * 10);
        return;
    }
    *(uint32_t *)opaque = val;
}

/* Fault rules (7.5.2): text in, text with each rule's counts out. */
static char *uzura_get_rules(Object *obj, Error **errp)
{
    return uzura_fault_get_rules(&UZURA(obj)->core);
}

static void uzura_set_rules(Object *obj, const char *value, Error **errp)
{
    g_autofree char *why = NULL;

    if (!uzura_fault_set_rules(&UZURA(obj)->core, value, &why)) {
        error_setg(errp, "fault-rules: %s", why);
    }
}

/* Link flaps (7.5.3): the period first, then a down time starts them. */
static void uzura_get_flap(Object *obj, Visitor *v, const char *name,
                           void *opaque, Error **errp)
{
    visit_type_uint32(v, name, opaque, errp);
}

static void uzura_set_flap(Object *obj, Visitor *v, const char *name,
                           void *opaque, Error **errp)
{
    UzuraFault *f = &UZURA(obj)->core.fault;
    bool down = opaque == &f->flap_down_us;
    uint32_t val, d, p;

    if (!visit_type_uint32(v, name, &val, errp)) {
        return;
    }
    d = down ? val : f->flap_down_us;
    p = down ? f->flap_period_us : val;
    if (val > UZ_FAULT_FLAP_MAX_US) {
        error_setg(errp, "%s: at most %u us", name, UZ_FAULT_FLAP_MAX_US);
        return;
    }
    if (p && d && p <= d) {
        error_setg(errp, "%s: the period (%u us) must be longer than the "
                   "time down (%u us)", name, p, d);
        return;
    }
    if (down) {
        uzura_fault_set_flap(&UZURA(obj)->core, d, p);
    } else {
        f->flap_period_us = p;
    }
}

static void uzura_class_init(ObjectClass *klass, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);
    ResettableClass *rc = RESETTABLE_CLASS(klass);
    PCIDeviceClass *k = PCI_DEVICE_CLASS(klass);

    k->realize = uzura_realize;
    k->exit = uzura_exit;
    k->config_write = uzura_write_config;
    k->vendor_id = UZ_PCI_VENDOR_ID;
    k->device_id = UZ_PCI_DEVICE_ID;
    k->revision = UZ_PCI_REVISION;
    k->class_id = PCI_CLASS_NETWORK_OTHER;

    rc->phases.hold = uzura_reset_hold;

    dc->desc = "uzura emulated RDMA NIC (RoCEv2)";
    dc->vmsd = &vmstate_uzura;
    device_class_set_props(dc, uzura_properties);
    set_bit(DEVICE_CATEGORY_NETWORK, dc->categories);
}

static void uzura_instance_init(Object *obj)
{
    UzuraState *s = UZURA(obj);

    int i;

    device_add_bootindex_property(obj, &s->conf.bootindex, "bootindex",
                                  "/ethernet-phy@0", DEVICE(obj));
    s->link = true;
    object_property_add_bool(obj, "link", uzura_get_link, uzura_set_link);
    /* Settable at run time, to measure what batching saves (spec 7.1). */
    s->core.tx_batch = s->core.rx_batch = true;
    object_property_add_bool(obj, "tx-batch", uzura_get_tx_batch,
                             uzura_set_tx_batch);
    object_property_add_bool(obj, "rx-batch", uzura_get_rx_batch,
                             uzura_set_rx_batch);
    for (i = 0; i < ARRAY_SIZE(uzura_fault_probs); i++) {
        object_property_add(obj, uzura_fault_probs[i].name, "number",
                            uzura_get_prob, uzura_set_prob, NULL,
                            (uint8_t *)&s->core.fault +
                            uzura_fault_probs[i].offset);
    }
    object_property_add(obj, "fault-delay-us", "uint32", uzura_get_delay,
                        uzura_set_delay, NULL, NULL);
    object_property_add(obj, "fault-seed", "uint64", uzura_get_seed,
                        uzura_set_seed, NULL, NULL);
    object_property_add_str(obj, "fault-rules", uzura_get_rules,
                            uzura_set_rules);
    object_property_add_str(obj, "recovery", uzura_get_recovery,
                            uzura_set_recovery);
    object_property_add(obj, "ack-timeout-max-us", "uint32", uzura_get_us,
                        uzura_set_us, NULL,
                        &s->core.rdma.ack_timeout_max_us);
    s->core.rdma.sr_rto_low_us = UZ_SR_RTO_LOW_US;
    object_property_add(obj, "sr-rto-low-us", "uint32", uzura_get_us,
                        uzura_set_us, NULL, &s->core.rdma.sr_rto_low_us);
    object_property_add(obj, "fault-flap-period-us", "uint32",
                        uzura_get_flap, uzura_set_flap, NULL,
                        &s->core.fault.flap_period_us);
    object_property_add(obj, "fault-flap-down-us", "uint32",
                        uzura_get_flap, uzura_set_flap, NULL,
                        &s->core.fault.flap_down_us);
    uzura_fault_set_seed(&s->core.fault, 0);
    uzura_model_instance_init(&s->core);
    uzura_cc_instance_init(obj, &s->core);
    object_property_add_bool(obj, "model-sync", uzura_get_model_sync,
                             uzura_set_model_sync);
    object_property_add_uint64_ptr(obj, "model-quanta",
                                   &s->core.model.quanta, OBJ_PROP_FLAG_READ);
    object_property_add_uint64_ptr(obj, "model-late", &s->core.model.late,
                                   OBJ_PROP_FLAG_READ);
    object_property_add_uint64_ptr(obj, "model-drops", &s->core.model.drops,
                                   OBJ_PROP_FLAG_READ);
    object_property_add_uint64_ptr(obj, "model-bad", &s->core.model.bad,
                                   OBJ_PROP_FLAG_READ);
    object_property_add_uint64_ptr(obj, "admin-yields",
                                   &s->core.admin.yields, OBJ_PROP_FLAG_READ);
    /* Counters, read-only with qom-get: the names QUERY_COUNTERS uses. */
    for (i = 0; i < UZ_CNT_NUM; i++) {
        object_property_add_uint64_ptr(obj, uzura_counter_descs[i].name,
                                       uzura_counter(&s->core.counters, i),
                                       OBJ_PROP_FLAG_READ);
    }
}

static void uzura_instance_finalize(Object *obj)
{
    uzura_model_finalize(&UZURA(obj)->core);
}

static const TypeInfo uzura_info = {
    .name = TYPE_UZURA,
    .parent = TYPE_PCI_DEVICE,
    .instance_size = sizeof(UzuraState),
    .class_init = uzura_class_init,
    .instance_init = uzura_instance_init,
    .instance_finalize = uzura_instance_finalize,
    .interfaces = (InterfaceInfo[]) {
        { INTERFACE_PCIE_DEVICE },
        { }
    },
};

static void uzura_register_types(void)
{
    type_register_static(&uzura_info);
}

type_init(uzura_register_types)
