/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uzura RDMA NIC: memory through keys, and the translation table.
 *
 * Every access the data path makes to host memory on behalf of a WQE or a
 * packet names a key.  The key is checked (MR, PD, access, bounds), then
 * each page the access touches is translated: the on-NIC translation
 * cache holds recent (MR, page) -> DMA address entries, direct-mapped; a
 * miss reads the page-list entry from host memory, as hardware walking a
 * table the driver owns would.  An MR's entries are tagged with its
 * generation, so re-registering or invalidating a whole MR is O(1).
 */
#include "qemu/osdep.h"
#include "qemu/bitops.h"
#include "uzura-core.h"
#include "trace.h"

void uzura_xlat_init(UzuraCore *core)
{
    UzuraRdma *r = &core->rdma;

    r->xlat = g_new0(UzuraXlatEntry, r->lim.xlat_cache_entries);
}

void uzura_xlat_uninit(UzuraCore *core)
{
    g_free(core->rdma.xlat);
}

void uzura_xlat_reset(UzuraCore *core)
{
    UzuraRdma *r = &core->rdma;

    memset(r->xlat, 0, r->lim.xlat_cache_entries * sizeof(*r->xlat));
}

/* Forget an MR's cached translations: a new generation misses them. */
void uzura_xlat_drop_mr(UzuraCore *core, UzuraMr *mr)
{
    mr->gen = ++core->rdma.xlat_gen;
}

static uint32_t uzura_mr_index(UzuraCore *core, const UzuraMr *mr)
{
    return mr - core->rdma.mr;
}

/*
 * Direct-mapped: an MR's pages take consecutive slots from a start that
 * depends on the MR, so a run of up to xlat_cache_entries pages of one MR
 * never evicts itself, and different MRs start far apart.
 */
static UzuraXlatEntry *uzura_xlat_slot(UzuraCore *core, uint32_t mri,
                                       uint64_t page)
{
    UzuraRdma *r = &core->rdma;

    return &r->xlat[((uint64_t)mri * 0x9e3779b1u + page) %
                    r->lim.xlat_cache_entries];
}

/*
 * An ODP MR's page is absent: raise a page fault, unless one of this MR
 * is outstanding (the driver handles them one at a time; what faults
 * meanwhile faults again after PAGE_RESUME).  An event the EQ lost does
 * not count as outstanding: the next try raises it again.  The access
 * waits.
 */
static uint8_t uzura_xlat_fault(UzuraCore *core, UzuraMr *mr, uint32_t mri,
                                uint64_t page)
{
    core->counters.xlat_faults++;
    if (!mr->fault_posted) {
        trace_uzura_xlat_fault(mri, page);
        mr->fault_posted = uzura_eq_post_async(core, UZ_EQE_PAGE_FAULT,
                                               UZ_KEY(mri, mr->key), page);
    }
    return UZURA_VERR_FAULT;
}

/*
 * The DMA address of page @page of @mr, through the cache: UZ_VERR_NONE,
 * UZ_VERR_DMA (the page list is not readable), UZ_VERR_ACCESS (an ODP
 * page that cannot be mapped) or UZURA_VERR_FAULT (an ODP page absent).
 */
static uint8_t uzura_xlat(UzuraCore *core, UzuraMr *mr, uint64_t page,
                          uint64_t *addr)
{
    uint32_t mri = uzura_mr_index(core, mr);
    UzuraXlatEntry *e = uzura_xlat_slot(core, mri, page);
    uint64_t pte;

    if (e->mr == mri && e->gen == mr->gen && e->page == page) {
        core->counters.xlat_hits++;
        *addr = e->addr;
        return UZ_VERR_NONE;
    }
    core->counters.xlat_misses++;
    if (page >= mr->npages ||
        !uzura_dma_read(core, mr->pbl_addr + page * 8, &pte, sizeof(pte))) {
        uzura_guest_error(trace_uzura_xlat_err_pbl(mri, page),
                          "MR %u: page list entry %" PRIu64 " not readable",
                          mri, page);
        return UZ_VERR_DMA;
    }
    pte = le64_to_cpu(pte);
    if (mr->flags & UZ_MR_F_ODP) {
        if (pte & UZ_PTE_ERROR) {
            return UZ_VERR_ACCESS;
        }
        if (!(pte & UZ_PTE_PRESENT)) {
            return uzura_xlat_fault(core, mr, mri, page);
        }
    }
    if (e->mr) {
        core->counters.xlat_evictions++;
    }
    *e = (UzuraXlatEntry) {
        .mr = mri, .gen = mr->gen, .page = page,
        .addr = pte & ~MAKE_64BIT_MASK(0, mr->page_shift),
    };
    trace_uzura_xlat_miss(mri, page, e->addr);
    *addr = e->addr;
    return UZ_VERR_NONE;
}

/*
 * Check an access of @len bytes at @addr through @key for a QP of PD
 * @pdn, needing the rights in @access (0 for a local read).  Returns
 * UZ_VERR_NONE and the MR, or what failed.  A zero-length access is not
 * checked, as InfiniBand says.
 */
uint8_t uzura_mr_check(UzuraCore *core, uint32_t key, uint32_t pdn,
                       uint64_t addr, uint64_t len, uint32_t access,
                       UzuraMr **out)
{
    UzuraMr *mr;

    *out = NULL;
    if (!len) {
        return UZ_VERR_NONE;
    }
    mr = uzura_mr_lookup(core, key);
    if (!mr) {
        return UZ_VERR_BAD_LKEY;
    }
    if (mr->pdn != pdn) {
        return UZ_VERR_PD;
    }
    if (access & ~mr->access) {
        return UZ_VERR_ACCESS;
    }
    if (!uzura_in_range(addr, len, mr->iova, mr->length)) {
        return UZ_VERR_BOUNDS;
    }
    *out = mr;
    return UZ_VERR_NONE;
}

/* Whether @child may serve chunk @chunk of implicit MR @mr. */
static bool uzura_imr_fits(const UzuraMr *mr, const UzuraMr *child,
                           uint64_t chunk)
{
    return child && (child->flags & UZ_MR_F_ODP) &&
           child->uctx == mr->uctx && child->pdn == mr->pdn &&
           child->iova == chunk << UZ_IMR_SHIFT &&
           child->length == 1ull << UZ_IMR_SHIFT;
}

/*
 * The child of implicit MR @mr that maps chunk @chunk, or NULL with what
 * failed: UZURA_VERR_FAULT (absent: a fault raised), UZ_VERR_ACCESS (a
 * chunk that cannot be mapped, or an entry that names no fitting child),
 * UZ_VERR_DMA (the table not readable).  The last child found is kept.
 */
static UzuraMr *uzura_imr_child(UzuraCore *core, UzuraMr *mr, uint64_t chunk,
                                uint8_t *verr)
{
    uint32_t mri = uzura_mr_index(core, mr);
    UzuraMr *child;
    uint64_t e;

    if (mr->imr_key && mr->imr_chunk == chunk) {
        child = uzura_mr_lookup(core, mr->imr_key);
        if (uzura_imr_fits(mr, child, chunk)) {
            return child;
        }
    }
    mr->imr_key = 0;
    if (chunk >= UZ_IMR_ENTRIES) {
        *verr = UZ_VERR_ACCESS;
        return NULL;
    }
    if (!uzura_dma_read(core, mr->pbl_addr + chunk * 8, &e, sizeof(e))) {
        uzura_guest_error(trace_uzura_xlat_err_pbl(mri, chunk),
                          "MR %u: implicit table entry %" PRIu64
                          " not readable", mri, chunk);
        *verr = UZ_VERR_DMA;
        return NULL;
    }
    e = le64_to_cpu(e);
    if (e & UZ_PTE_ERROR) {
        *verr = UZ_VERR_ACCESS;
        return NULL;
    }
    if (!(e & UZ_PTE_PRESENT)) {
        *verr = uzura_xlat_fault(core, mr, mri, chunk);
        return NULL;
    }
    child = uzura_mr_lookup(core, UZ_IMR_KEY(e));
    if (!uzura_imr_fits(mr, child, chunk)) {
        uzura_guest_error(trace_uzura_xlat_err_child(mri, chunk,
                                                     UZ_IMR_KEY(e)),
                          "MR %u: implicit chunk %" PRIu64 " names key 0x%x,"
                          " no ODP MR of that chunk", mri, chunk,
                          UZ_IMR_KEY(e));
        *verr = UZ_VERR_ACCESS;
        return NULL;
    }
    mr->imr_chunk = chunk;
    mr->imr_key = UZ_IMR_KEY(e);
    return child;
}

/*
 * Move @len bytes between @buf and the MR at @addr (already checked),
 * page by page.  With @m (reads only), the bytes become pieces of a frame
 * built in place instead (uzura_dma_read_tx), @buf being where they lie
 * in the linear frame.  Returns UZ_VERR_NONE, UZ_VERR_DMA for a page list
 * or page that is not accessible, or what translation said of an ODP page
 * (uzura_xlat); bytes before the page that failed may have moved.
 */
static uint8_t uzura_mr_move(UzuraCore *core, UzuraMr *mr, uint64_t addr,
                             void *buf, uint64_t len, bool to_mr,
                             UzuraTxMap *m)
{
    uint64_t psize = 1ull << mr->page_shift, base, n;
    uint8_t *b = buf, verr;

    if (mr->flags & UZ_MR_F_DM) {
        uzura_dm_copy(core, mr, addr, b, len, to_mr);
        if (m) {
            uzura_tx_add(m, b, len, false);
        }
        return UZ_VERR_NONE;
    }
    if (mr->flags & UZ_MR_F_IMPLICIT) {
        /* Chunk by chunk, through each chunk's child. */
        while (len) {
            uint64_t chunk = addr >> UZ_IMR_SHIFT;
            UzuraMr *child = uzura_imr_child(core, mr, chunk, &verr);

            if (!child) {
                return verr;
            }
            n = MIN(len, ((chunk + 1) << UZ_IMR_SHIFT) - addr);
            verr = uzura_mr_move(core, child, addr, b, n, to_mr, m);
            if (verr) {
                return verr;
            }
            addr += n;
            b += n;
            len -= n;
        }
        return UZ_VERR_NONE;
    }
    if (mr->flags & UZ_MR_F_DMA) {
        return (m ? uzura_dma_read_tx(core, m, addr, b, len) :
                to_mr ? uzura_dma_write(core, addr, b, len) :
                        uzura_dma_read(core, addr, b, len)) ?
               UZ_VERR_NONE : UZ_VERR_DMA;
    }
    while (len) {
        uint64_t page = (addr >> mr->page_shift) -
                        (mr->iova >> mr->page_shift);
        uint64_t off = addr & (psize - 1);

        n = MIN(len, psize - off);
        verr = uzura_xlat(core, mr, page, &base);
        if (verr) {
            return verr;
        }
        if (!(m ? uzura_dma_read_tx(core, m, base + off, b, n) :
              to_mr ? uzura_dma_write(core, base + off, b, n) :
                      uzura_dma_read(core, base + off, b, n))) {
            return UZ_VERR_DMA;
        }
        addr += n;
        b += n;
        len -= n;
    }
    return UZ_VERR_NONE;
}

uint8_t uzura_mr_copy(UzuraCore *core, UzuraMr *mr, uint64_t addr, void *buf,
                      uint64_t len, bool to_mr)
{
    return uzura_mr_move(core, mr, addr, buf, len, to_mr, NULL);
}

/* uzura_mr_copy from the MR, into a frame built in place when @m. */
uint8_t uzura_mr_read_tx(UzuraCore *core, UzuraMr *mr, uint64_t addr,
                         uint8_t *buf, uint64_t len, UzuraTxMap *m)
{
    return uzura_mr_move(core, mr, addr, buf, len, false, m);
}

/* Check every SGE of a list for a local access with rights @access. */
uint8_t uzura_sgl_check(UzuraCore *core, const UzuraSgl *sgl, uint32_t pdn,
                        uint32_t access)
{
    UzuraMr *mr;
    uint8_t verr;
    uint32_t i;

    for (i = 0; i < sgl->num; i++) {
        verr = uzura_mr_check(core, sgl->sge[i].lkey, pdn, sgl->sge[i].addr,
                              sgl->sge[i].length, access, &mr);
        if (verr) {
            return verr;
        }
    }
    return UZ_VERR_NONE;
}

/*
 * Copy @len bytes at byte @off of a scatter/gather list to or from @buf
 * (into a frame built in place when @m, reads only).  Keys are checked
 * again on each use: an MR may go while a message is in flight.  Returns
 * UZ_VERR_NONE or the failure; copying past the end of the list is
 * UZ_VERR_BOUNDS.
 */
static uint8_t uzura_sgl_move(UzuraCore *core, const UzuraSgl *sgl,
                              uint32_t pdn, uint64_t off, void *buf,
                              uint64_t len, bool to_mem, UzuraTxMap *m)
{
    uint8_t *b = buf;
    uint32_t i;

    for (i = 0; i < sgl->num && len; i++) {
        const struct uz_sge *s = &sgl->sge[i];
        UzuraMr *mr;
        uint64_t n;
        uint8_t verr;

        if (off >= s->length) {
            off -= s->length;
            continue;
        }
        n = MIN(len, s->length - off);
        verr = uzura_mr_check(core, s->lkey, pdn, s->addr + off, n,
                              to_mem ? UZ_ACCESS_LOCAL_WRITE : 0, &mr);
        if (verr) {
            return verr;
        }
        verr = uzura_mr_move(core, mr, s->addr + off, b, n, to_mem, m);
        if (verr) {
            return verr;
        }
        b += n;
        len -= n;
        off = 0;
    }
    return len ? UZ_VERR_BOUNDS : UZ_VERR_NONE;
}

uint8_t uzura_sgl_copy(UzuraCore *core, const UzuraSgl *sgl, uint32_t pdn,
                       uint64_t off, void *buf, uint64_t len, bool to_mem)
{
    return uzura_sgl_move(core, sgl, pdn, off, buf, len, to_mem, NULL);
}

/* uzura_sgl_copy from the list, into a frame built in place when @m. */
uint8_t uzura_sgl_read_tx(UzuraCore *core, const UzuraSgl *sgl, uint32_t pdn,
                          uint64_t off, uint8_t *buf, uint64_t len,
                          UzuraTxMap *m)
{
    return uzura_sgl_move(core, sgl, pdn, off, buf, len, false, m);
}

/* UZ_CMD_INVALIDATE_XLAT: drop the cached pages of a range of an MR. */
uint8_t uzura_cmd_invalidate_xlat(UzuraCore *core,
                                  const struct uz_admin_cmd *cmd,
                                  struct uz_admin_cqe *cqe)
{
    const struct uz_cmd_invalidate_xlat *c = (const void *)cmd->raw;
    UzuraRdma *r = &core->rdma;
    uint32_t key = le32_to_cpu(c->key), i = UZ_KEY_INDEX(key), n;
    uint64_t iova = le64_to_cpu(c->iova), len = le64_to_cpu(c->length);
    uint64_t first, last, base;
    UzuraMr *mr = uzura_mr_lookup(core, key);

    if (!mr) {
        trace_uzura_xlat_err_key(key, le32_to_cpu(c->uctx));
        return UZ_CMD_BAD_HANDLE;
    }
    if (mr->uctx != le32_to_cpu(c->uctx)) {
        trace_uzura_xlat_err_key_uctx(key, le32_to_cpu(c->uctx), mr->uctx);
        return UZ_CMD_BAD_HANDLE;
    }
    trace_uzura_xlat_invalidate(key, iova, len);
    core->counters.xlat_invalidations++;
    if (!len || (mr->flags & (UZ_MR_F_DMA | UZ_MR_F_DM | UZ_MR_F_IMPLICIT))) {
        uzura_xlat_drop_mr(core, mr);
        return UZ_CMD_OK;
    }
    /* Pages of the range, clipped to 64 bits; outside the MR drops none. */
    base = mr->iova >> mr->page_shift;
    first = iova >> mr->page_shift;
    last = (iova + len < iova ? UINT64_MAX : iova + len - 1) >>
           mr->page_shift;
    if (last < base) {
        return UZ_CMD_OK;
    }
    first = first < base ? 0 : first - base;
    last -= base;
    uzura_admin_charge(core, r->lim.xlat_cache_entries / 16);
    for (n = 0; n < r->lim.xlat_cache_entries; n++) {
        UzuraXlatEntry *e = &r->xlat[n];

        if (e->mr == i && e->gen == mr->gen && e->page >= first &&
            e->page <= last) {
            e->mr = 0;
        }
    }
    return UZ_CMD_OK;
}
