// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * odp-test: on-demand paging on uzura0 (IBV_ACCESS_ON_DEMAND), the way
 * software uses it.  Run in a guest; speaks TAP, exits 0 only if every
 * check passes.  An RC QP connected to itself does the traffic.
 *
 *  - caps: the device reports ODP for RC (SEND, RECV, WRITE, READ, atomic,
 *    SRQ) and UD SEND, and implicit ODP; an iova that differs from the
 *    address within a page, and an implicit MR of huge pages, are EINVAL;
 *    rereg of an ODP MR (implicit too), or to ODP, is refused.
 *  - a fault storm: WRITEs to 512 pages of an untouched 64 MiB ODP MR, in
 *    a scattered order, from an ODP source, 16 at a time, land intact; the
 *    device faulted at least once per 16 pages (the driver maps 16 per
 *    fault), so nothing was pinned up front.  After MADV_DONTNEED the
 *    notifier dropped the device's translations: RDMA READs of the same
 *    places read the fresh zero pages, not the freed ones, and fault again.
 *  - prefetch: ibv_advise_mr maps a range, and WRITEs into it then fault
 *    no more; bad advice (a plain MR's lkey, a range outside the MR, write
 *    prefetch of a read-only MR) is EINVAL.
 *  - a page the process never mapped: a peer's WRITE into it fails with
 *    REM_ACCESS_ERR, a local SGE in it with LOC_PROT_ERR, a prefetch of it
 *    fails and one without faults does not; another QP writing the MR's
 *    mapped pages meanwhile goes on.
 *  - huge pages: an ODP MR with IBV_ACCESS_HUGETLB over a hugetlbfs page
 *    faults it in whole; over 4 KiB pages its accesses fail; a pinned MR
 *    takes the flag too.
 *  - implicit ODP (ibv_reg_mr(pd, NULL, SIZE_MAX)): WRITEs through its
 *    key into and from untouched memory land, faulting the chunk and then
 *    the page; one across a 1 GiB chunk boundary lands on both sides;
 *    READs after MADV_DONTNEED read zeros; prefetch maps a range so that
 *    WRITEs there fault no more.  A WRITE into a chunk with nothing mapped,
 *    or past 2^47, fails with REM_ACCESS_ERR; prefetch there fails.  A
 *    process that exits holding an implicit MR with children is fine.
 *  - a process killed with WRITEs waiting for faults leaves a device
 *    that serves the next process.
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "self-qp.h"
#include "tap.h"

#define BIG_LEN		(64ul << 20)
#define STORM		512	/* WRITEs: one 8-byte slot of the source page each */
#define BURST		16	/* outstanding at a time */
#define FAULT_PAGES	16	/* pages the driver maps per fault */
#define PRE_PAGES	64
#define HUGE_LEN	(2ul << 20)
#define HUGE_WRITES	32
#define HUGE_STRIDE	(HUGE_LEN / HUGE_WRITES) /* FAULT_PAGES pages apart */
#define CHUNK		(1ul << 30)	/* an implicit MR's child covers one */

#define ODP_ACCESS	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
			 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_ON_DEMAND)

static long page;

struct node {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	int gidx;
};

/* Anonymous memory the process has not touched: no page behind it yet. */
static void *fresh(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	/* No huge page collapse: it would invalidate what a test mapped. */
	madvise(p, len, MADV_NOHUGEPAGE);
	return p;
}

static struct ibv_qp *rc_qp(struct node *nd, struct ibv_cq *cq)
{
	struct ibv_qp_init_attr a = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 2 * BURST, .max_send_sge = 1,
			 .max_recv_wr = 1, .max_recv_sge = 1 },
	};

	return ibv_create_qp(nd->pd, &a);
}

/* An RC QP on @cq connected to @peer (NULL: to itself), in RTS. */
static struct ibv_qp *conn_qp(struct node *nd, struct ibv_cq *cq,
			      struct ibv_qp *peer)
{
	struct ibv_qp *qp = rc_qp(nd, cq);

	if (qp && connect_qp(nd->ctx, qp, peer ? peer->qp_num : qp->qp_num,
			     nd->gidx, IBV_ACCESS_REMOTE_WRITE |
			     IBV_ACCESS_REMOTE_READ)) {
		ibv_destroy_qp(qp);
		qp = NULL;
	}
	return qp;
}

static struct ibv_qp *self_qp(struct node *nd, struct ibv_cq *cq)
{
	return conn_qp(nd, cq, NULL);
}

/*
 * Two RC QPs on @cq connected to each other: the requester returned, its
 * responder in *@qr.  A responder of its own sees a NAK, not a flush.
 */
static struct ibv_qp *pair_qp(struct node *nd, struct ibv_cq *cq,
			      struct ibv_qp **qr)
{
	struct ibv_qp *qa;

	*qr = rc_qp(nd, cq);
	qa = *qr ? conn_qp(nd, cq, *qr) : NULL;
	if (qa && connect_qp(nd->ctx, *qr, qa->qp_num, nd->gidx,
			     IBV_ACCESS_REMOTE_WRITE)) {
		ibv_destroy_qp(qa);
		qa = NULL;
	}
	return qa;
}

/* Slot i's place in the big MR: pages in a scattered order, one each. */
static uint64_t *storm_slot(char *big, int i)
{
	uint64_t pg = ((uint64_t)i * 7919) % (BIG_LEN / page);

	return (uint64_t *)(big + pg * page + ((i * 520) % page & ~7l));
}

/*
 * STORM WRITEs (op WRITE: src slot i -> big) or READs (big -> dst slot
 * i), BURST at a time.  Returns how many completed successfully.
 */
static int storm(struct ibv_qp *qp, struct ibv_cq *cq, enum ibv_wr_opcode op,
		 uint64_t *loc, uint32_t lkey, char *big, uint32_t rkey)
{
	struct ibv_wc wc[BURST];
	int i, k, got, ok = 0, tries;

	for (i = 0; i < STORM; i += BURST) {
		for (k = i; k < i + BURST; k++)
			if (post_rdma(qp, op, k, &loc[k], lkey,
				      storm_slot(big, k), rkey))
				return ok;
		/* Up to 10 s a burst: each fault waits an RNR time or more. */
		for (got = 0, tries = 0; got < BURST && tries < 1000; tries++) {
			int r = ibv_poll_cq(cq, BURST - got, wc);

			for (k = 0; k < r; k++)
				ok += wc[k].status == IBV_WC_SUCCESS;
			got += r > 0 ? r : 0;
			if (!r)
				usleep(10000);
		}
		if (got < BURST)
			return ok;
	}
	return ok;
}

/* ibv_rereg_mr of @mr to @access is refused: EOPNOTSUPP. */
static void rereg_refused(struct ibv_mr *mr, int access, const char *what)
{
	int err;

	errno = 0;
	err = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			   access);
	check(err && errno == EOPNOTSUPP,
	      "rereg_mr %s: refused, EOPNOTSUPP (%d, errno %d)", what, err,
	      errno);
}

static void check_caps(struct node *nd)
{
	struct ibv_device_attr_ex a = {};
	struct ibv_odp_caps *o = &a.odp_caps;
	uint32_t rc = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV |
		      IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_READ |
		      IBV_ODP_SUPPORT_ATOMIC | IBV_ODP_SUPPORT_SRQ_RECV;
	int err = ibv_query_device_ex(nd->ctx, NULL, &a);
	struct ibv_mr *mr;
	char *buf;

	check(!err && (o->general_caps & IBV_ODP_SUPPORT) &&
	      (o->general_caps & IBV_ODP_SUPPORT_IMPLICIT) &&
	      (o->per_transport_caps.rc_odp_caps & rc) == rc &&
	      (o->per_transport_caps.ud_odp_caps & IBV_ODP_SUPPORT_SEND),
	      "query_device_ex: ODP for RC (0x%x) and UD SEND (0x%x), implicit (0x%llx)",
	      o->per_transport_caps.rc_odp_caps,
	      o->per_transport_caps.ud_odp_caps,
	      (unsigned long long)o->general_caps);

	mr = ibv_reg_mr(nd->pd, NULL, SIZE_MAX, ODP_ACCESS);
	check(mr != NULL, "implicit ODP MR (all of memory)");
	if (mr) {
		rereg_refused(mr, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND,
			      "of an implicit ODP MR");
		check(!ibv_dereg_mr(mr), "dereg_mr of the implicit ODP MR");
	}
	errno = 0;
	mr = ibv_reg_mr(nd->pd, NULL, SIZE_MAX,
			ODP_ACCESS | IBV_ACCESS_HUGETLB);
	err = errno;
	check(!mr && err == EINVAL,
	      "implicit ODP MR with IBV_ACCESS_HUGETLB: EINVAL (errno %d)", err);
	if (mr)
		ibv_dereg_mr(mr);

	buf = fresh(2 * page);
	errno = 0;
	mr = ibv_reg_mr_iova(nd->pd, buf, page, (uintptr_t)buf + 8, ODP_ACCESS);
	err = errno;
	check(!mr && err == EINVAL,
	      "ODP MR whose iova differs from its address within a page: EINVAL (errno %d)",
	      err);
	if (mr)
		ibv_dereg_mr(mr);

	mr = ibv_reg_mr(nd->pd, buf, page, ODP_ACCESS);
	check(mr != NULL, "ODP MR of one page");
	if (mr) {
		rereg_refused(mr, IBV_ACCESS_LOCAL_WRITE, "of an ODP MR");
		check(!ibv_dereg_mr(mr), "dereg_mr of the ODP MR");
	}
	mr = ibv_reg_mr(nd->pd, buf, page, IBV_ACCESS_LOCAL_WRITE);
	if (mr) {
		rereg_refused(mr, ODP_ACCESS, "of a pinned MR to ODP");
		ibv_dereg_mr(mr);
	}
	munmap(buf, 2 * page);
}

static void check_storm(struct node *nd, struct ibv_qp *qp, struct ibv_cq *cq)
{
	uint64_t *loc = (uint64_t *)fresh(2 * page), *src = loc;
	uint64_t *dst = loc + page / 8;
	uint64_t f0, f1, f2, inv0;
	char *big = fresh(BIG_LEN);
	struct ibv_mr *bmr, *lmr;
	int i, bad, ok;

	bmr = big ? ibv_reg_mr(nd->pd, big, BIG_LEN, ODP_ACCESS) : NULL;
	lmr = loc ? ibv_reg_mr(nd->pd, loc, 2 * page, ODP_ACCESS) : NULL;
	check(bmr && lmr, "ODP MRs of 64 MiB and 2 pages, untouched");
	if (!bmr || !lmr)
		return;
	for (i = 0; i < STORM; i++)
		src[i] = 0x0dd0000000000000ull | i;

	f0 = counter("xlat_faults");
	ok = storm(qp, cq, IBV_WR_RDMA_WRITE, src, lmr->lkey, big, bmr->rkey);
	f1 = counter("xlat_faults");
	check(ok == STORM, "fault storm: %d WRITEs to scattered pages complete (%d of %d)",
	      STORM, ok, STORM);
	for (i = 0, bad = 0; i < STORM; i++)
		bad += *storm_slot(big, i) != src[i];
	check(!bad, "every WRITE landed where it was sent (%d wrong)", bad);
	check(f1 - f0 >= STORM / FAULT_PAGES,
	      "the device faulted the pages in: %llu faults for %d pages",
	      (unsigned long long)(f1 - f0), STORM);

	/* Take the pages away: the device must not read the freed ones. */
	inv0 = counter("xlat_invalidations");
	check(!madvise(big, BIG_LEN, MADV_DONTNEED), "MADV_DONTNEED of the MR");
	check(counter("xlat_invalidations") > inv0,
	      "the notifier dropped the device's translations (%llu invalidations)",
	      (unsigned long long)(counter("xlat_invalidations") - inv0));
	memset(dst, 0xff, STORM * 8);
	ok = storm(qp, cq, IBV_WR_RDMA_READ, dst, lmr->lkey, big, bmr->rkey);
	f2 = counter("xlat_faults");
	for (i = 0, bad = 0; i < STORM; i++)
		bad += dst[i] != 0;
	check(ok == STORM && !bad,
	      "READs after DONTNEED: %d complete, %d read old data, not zeros",
	      ok, bad);
	check(f2 - f1 >= STORM / FAULT_PAGES,
	      "and fault the pages in again: %llu faults",
	      (unsigned long long)(f2 - f1));

	check(!ibv_dereg_mr(bmr) && !ibv_dereg_mr(lmr),
	      "dereg_mr of the ODP MRs");
	munmap(big, BIG_LEN);
	munmap(loc, 2 * page);
}

static void check_prefetch(struct node *nd, struct ibv_qp *qp,
			   struct ibv_cq *cq, struct ibv_mr *plain)
{
	char *buf = fresh(PRE_PAGES * page);
	struct ibv_mr *mr, *ro;
	struct ibv_sge sge;
	uint64_t f0, f1;
	int i, ok = 0, ret;

	mr = buf ? ibv_reg_mr(nd->pd, buf, PRE_PAGES * page, ODP_ACCESS) : NULL;
	ro = buf ? ibv_reg_mr(nd->pd, buf, page, IBV_ACCESS_ON_DEMAND) : NULL;
	check(mr && ro, "ODP MRs of %d pages and a read-only one", PRE_PAGES);
	if (!mr || !ro)
		return;
	sge = (struct ibv_sge) { (uintptr_t)buf, PRE_PAGES * page, mr->lkey };
	ret = ibv_advise_mr(nd->pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
			    IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1);
	check(!ret, "advise_mr PREFETCH_WRITE of %d pages (%d)", PRE_PAGES,
	      ret);
	f0 = counter("xlat_faults");
	for (i = 0; i < PRE_PAGES; i++)
		ok += !rdma_wait(qp, cq, IBV_WR_RDMA_WRITE, plain->addr,
				 plain->lkey, buf + i * page + 8, mr->rkey);
	f1 = counter("xlat_faults");
	check(ok == PRE_PAGES && f1 == f0,
	      "WRITEs into the prefetched pages: %d of %d complete, %llu faults",
	      ok, PRE_PAGES, (unsigned long long)(f1 - f0));

	sge.lkey = plain->lkey;
	sge.addr = (uintptr_t)plain->addr;
	sge.length = 8;
	ret = ibv_advise_mr(nd->pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &sge, 1);
	check(ret == EINVAL, "advise_mr of a plain MR: EINVAL (%d)", ret);
	sge = (struct ibv_sge) { (uintptr_t)buf + page, PRE_PAGES * page,
				 mr->lkey };
	ret = ibv_advise_mr(nd->pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &sge, 1);
	check(ret == EINVAL, "advise_mr past the MR's end: EINVAL (%d)", ret);
	sge = (struct ibv_sge) { (uintptr_t)buf, page, ro->lkey };
	ret = ibv_advise_mr(nd->pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, 0,
			    &sge, 1);
	check(ret == EINVAL, "advise_mr PREFETCH_WRITE of a read-only MR: EINVAL (%d)",
	      ret);
	ret = ibv_advise_mr(nd->pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &sge, 1);
	check(!ret, "advise_mr PREFETCH of the read-only MR (%d)", ret);

	check(!ibv_dereg_mr(mr) && !ibv_dereg_mr(ro), "dereg_mr of the ODP MRs");
	munmap(buf, PRE_PAGES * page);
}

/* Pages 0 and 2 mapped, page 1 never: the ODP MR covers all three. */
static void check_hole(struct node *nd, struct ibv_cq *cq,
		       struct ibv_mr *plain)
{
	struct ibv_cq *cq2 = ibv_create_cq(nd->ctx, 4 * BURST, NULL, NULL, 0);
	char *buf = fresh(3 * page);
	struct ibv_qp *qa = NULL, *qr, *qb;
	struct ibv_mr *mr;
	struct ibv_sge sge;
	int st, ret;

	if (buf)
		munmap(buf + page, page);
	mr = buf ? ibv_reg_mr(nd->pd, buf, 3 * page, ODP_ACCESS) : NULL;
	qa = pair_qp(nd, cq, &qr);
	qb = cq2 ? self_qp(nd, cq2) : NULL;
	check(mr && qa && qb, "ODP MR over a page never mapped; three QPs");
	if (!mr || !qa || !qb)
		goto out;

	st = rdma_wait(qa, cq, IBV_WR_RDMA_WRITE, plain->addr, plain->lkey,
		       buf + page + 16, mr->rkey);
	check(st == IBV_WC_REM_ACCESS_ERR,
	      "WRITE into the unmapped page: REM_ACCESS_ERR (%d %s)", st,
	      st >= 0 ? ibv_wc_status_str(st) : "none");
	st = rdma_wait(qb, cq2, IBV_WR_RDMA_WRITE, plain->addr, plain->lkey,
		       buf + 2 * page, mr->rkey);
	check(st == IBV_WC_SUCCESS,
	      "another QP's WRITE into a mapped page of the MR: success (%d)",
	      st);
	st = rdma_wait(qb, cq2, IBV_WR_RDMA_WRITE, buf + page, mr->lkey,
		       plain->addr, plain->rkey);
	check(st == IBV_WC_LOC_PROT_ERR,
	      "WRITE from the unmapped page: LOC_PROT_ERR (%d %s)", st,
	      st >= 0 ? ibv_wc_status_str(st) : "none");

	sge = (struct ibv_sge) { (uintptr_t)buf, 3 * page, mr->lkey };
	ret = ibv_advise_mr(nd->pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
			    IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1);
	check(ret != 0, "advise_mr PREFETCH_WRITE over the unmapped page fails (%d %s)",
	      ret, strerror(ret));
	ret = ibv_advise_mr(nd->pd, IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT,
			    IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1);
	check(!ret, "advise_mr PREFETCH_NO_FAULT over it maps what is there (%d)",
	      ret);
	check(!ibv_dereg_mr(mr), "dereg_mr of the MR with the hole");
	mr = NULL;
out:
	if (mr)
		ibv_dereg_mr(mr);
	if (qa)
		ibv_destroy_qp(qa);
	if (qr)
		ibv_destroy_qp(qr);
	if (qb)
		ibv_destroy_qp(qb);
	if (cq2)
		ibv_destroy_cq(cq2);
	if (buf) {
		munmap(buf, page);
		munmap(buf + 2 * page, page);
	}
}

/*
 * IBV_ACCESS_HUGETLB over a 2 MiB hugetlbfs page (the image reserves
 * some): the ODP MR faults in whole huge pages, so after the first of
 * WRITEs HUGE_STRIDE apart, each of which takes a fault of its own with
 * 4 KiB pages, none faults.  Over memory that is not hugetlbfs the access fails.
 */
static void check_huge(struct node *nd, struct ibv_qp *qp, struct ibv_cq *cq,
		       struct ibv_mr *plain)
{
	char *huge = mmap(NULL, HUGE_LEN, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
	char *small = fresh(2 * HUGE_LEN);
	struct ibv_mr *mr = NULL, *pin = NULL, *bad = NULL;
	struct ibv_cq *cq2 = ibv_create_cq(nd->ctx, 4, NULL, NULL, 0);
	struct ibv_qp *qa = NULL, *qr = NULL;
	uint64_t f0 = 0, f1, *val = plain->addr;
	char *al;
	int i, st, ok = 0, wrong = 0;

	check(huge != MAP_FAILED, "a 2 MiB MAP_HUGETLB mapping (%s)",
	      huge == MAP_FAILED ? strerror(errno) : "ok");
	if (huge == MAP_FAILED || !small || !cq2)
		goto out;
	mr = ibv_reg_mr(nd->pd, huge, HUGE_LEN,
			ODP_ACCESS | IBV_ACCESS_HUGETLB);
	check(mr != NULL, "ODP MR with IBV_ACCESS_HUGETLB over it");
	if (!mr)
		goto out;
	for (i = 0; i < HUGE_WRITES; i++) {
		/* The first faults the page in: the others must not fault. */
		if (i == 1)
			f0 = counter("xlat_faults");
		*val = 0x4875676500000000ull | i;
		ok += !rdma_wait(qp, cq, IBV_WR_RDMA_WRITE, val, plain->lkey,
				 huge + i * HUGE_STRIDE, mr->rkey);
		wrong += *(uint64_t *)(huge + i * HUGE_STRIDE) != *val;
	}
	f1 = counter("xlat_faults");
	check(ok == HUGE_WRITES && !wrong,
	      "%d WRITEs %lu KiB apart: %d complete, %d landed wrong",
	      HUGE_WRITES, HUGE_STRIDE >> 10, ok, wrong);
	check(f1 == f0,
	      "one fault mapped the huge page: %llu faults after the first WRITE (pages of 4 KiB fault on each)",
	      (unsigned long long)(f1 - f0));

	pin = ibv_reg_mr(nd->pd, huge, HUGE_LEN, IBV_ACCESS_LOCAL_WRITE |
			 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_HUGETLB);
	check(pin && !rdma_wait(qp, cq, IBV_WR_RDMA_READ, val, plain->lkey,
				huge + HUGE_STRIDE, pin->rkey) &&
	      *val == (0x4875676500000000ull | 1),
	      "a pinned MR with IBV_ACCESS_HUGETLB: a READ through it");

	/* 2 MiB aligned, so the huge page the MR names is this memory. */
	al = (char *)(((uintptr_t)small + HUGE_LEN - 1) & ~(HUGE_LEN - 1));
	bad = ibv_reg_mr(nd->pd, al, HUGE_LEN,
			 ODP_ACCESS | IBV_ACCESS_HUGETLB);
	qa = pair_qp(nd, cq2, &qr);
	check(bad && qa, "ODP MR with IBV_ACCESS_HUGETLB over 4 KiB pages");
	if (!bad || !qa)
		goto out;
	st = rdma_wait(qa, cq2, IBV_WR_RDMA_WRITE, val, plain->lkey, al,
		       bad->rkey);
	check(st == IBV_WC_REM_ACCESS_ERR,
	      "a WRITE into it fails: REM_ACCESS_ERR (%d %s)", st,
	      st >= 0 ? ibv_wc_status_str(st) : "none");
out:
	if (qa)
		ibv_destroy_qp(qa);
	if (qr)
		ibv_destroy_qp(qr);
	if (bad)
		ibv_dereg_mr(bad);
	if (pin)
		ibv_dereg_mr(pin);
	if (mr)
		ibv_dereg_mr(mr);
	if (cq2)
		ibv_destroy_cq(cq2);
	if (small)
		munmap(small, 2 * HUGE_LEN);
	if (huge != MAP_FAILED)
		munmap(huge, HUGE_LEN);
}

/* @n 1 GiB chunks of the address space with nothing mapped in them. */
static char *empty_chunks(int n)
{
	char *p = mmap(NULL, (n + 1) * CHUNK, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	munmap(p, (n + 1) * CHUNK);
	return (char *)(((uintptr_t)p + CHUNK - 1) & ~(CHUNK - 1));
}

/* A WRITE through @rkey to @remote from a fresh pair of QPs: the status. */
static int pair_write(struct node *nd, struct ibv_cq *cq, struct ibv_mr *plain,
		      void *remote, uint32_t rkey)
{
	struct ibv_qp *qa, *qr;
	int st = -1;

	qa = pair_qp(nd, cq, &qr);
	if (qa) {
		st = rdma_wait(qa, cq, IBV_WR_RDMA_WRITE, plain->addr,
			       plain->lkey, remote, rkey);
		ibv_destroy_qp(qa);
	}
	if (qr)
		ibv_destroy_qp(qr);
	return st;
}

static void check_implicit(struct node *nd, struct ibv_qp *qp,
			   struct ibv_cq *cq, struct ibv_mr *plain)
{
	struct ibv_cq *cq2 = ibv_create_cq(nd->ctx, 4 * BURST, NULL, NULL, 0);
	char *buf = fresh(PRE_PAGES * page), *hole = empty_chunks(3), *span;
	uint64_t *val = plain->addr, f0, f1;
	struct ibv_mr *imr;
	struct ibv_sge sge;
	int i, st, ok, ret;

	imr = ibv_reg_mr(nd->pd, NULL, SIZE_MAX, ODP_ACCESS);
	check(imr && buf && hole && cq2,
	      "implicit ODP MR, untouched memory and an empty chunk");
	if (!imr || !buf || !hole || !cq2)
		goto out;

	*val = 0x1a9110170000001ull;
	f0 = counter("xlat_faults");
	st = rdma_wait(qp, cq, IBV_WR_RDMA_WRITE, val, plain->lkey, buf + 8,
		       imr->rkey);
	f1 = counter("xlat_faults");
	check(!st && *(uint64_t *)(buf + 8) == *val && f1 - f0 >= 2,
	      "WRITE through the implicit rkey into untouched memory lands (%d), faulting its chunk and page (%llu faults)",
	      st, (unsigned long long)(f1 - f0));
	st = rdma_wait(qp, cq, IBV_WR_RDMA_WRITE, buf + 3 * page, imr->lkey,
		       plain->addr, plain->rkey);
	check(!st && *val == 0,
	      "WRITE from untouched memory through the implicit lkey (%d)",
	      st);

	/* Two pages, one each side of a chunk boundary, past the hole. */
	span = mmap(hole + 2 * CHUNK - page, 2 * page, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	check(span == hole + 2 * CHUNK - page,
	      "two pages across a chunk boundary");
	if (span == hole + 2 * CHUNK - page) {
		*val = 0x5ba22ed0000000ull;
		st = rdma_wait(qp, cq, IBV_WR_RDMA_WRITE, val, plain->lkey,
			       span + page - 4, imr->rkey);
		check(!st && !memcmp(span + page - 4, val, 8),
		      "a WRITE across the chunk boundary lands on both sides (%d)",
		      st);
		munmap(span, 2 * page);
	}

	check(!madvise(buf, PRE_PAGES * page, MADV_DONTNEED),
	      "MADV_DONTNEED of the written memory");
	*val = ~0ull;
	st = rdma_wait(qp, cq, IBV_WR_RDMA_READ, val, plain->lkey, buf + 8,
		       imr->rkey);
	check(!st && *val == 0, "a READ after it reads the zero page (%d, 0x%llx)",
	      st, (unsigned long long)*val);

	sge = (struct ibv_sge) { (uintptr_t)buf, PRE_PAGES * page, imr->lkey };
	ret = ibv_advise_mr(nd->pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
			    IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1);
	check(!ret, "advise_mr PREFETCH_WRITE of %d pages of the implicit MR (%d)",
	      PRE_PAGES, ret);
	f0 = counter("xlat_faults");
	for (i = 0, ok = 0; i < PRE_PAGES; i++)
		ok += !rdma_wait(qp, cq, IBV_WR_RDMA_WRITE, plain->addr,
				 plain->lkey, buf + i * page + 16, imr->rkey);
	f1 = counter("xlat_faults");
	check(ok == PRE_PAGES && f1 == f0,
	      "WRITEs into the prefetched pages: %d of %d complete, %llu faults",
	      ok, PRE_PAGES, (unsigned long long)(f1 - f0));

	st = pair_write(nd, cq2, plain, hole + 64, imr->rkey);
	check(st == IBV_WC_REM_ACCESS_ERR,
	      "WRITE into a chunk with nothing mapped: REM_ACCESS_ERR (%d %s)",
	      st, st >= 0 ? ibv_wc_status_str(st) : "none");
	st = pair_write(nd, cq2, plain, (void *)(1ull << 47), imr->rkey);
	check(st == IBV_WC_REM_ACCESS_ERR,
	      "WRITE at 2^47: REM_ACCESS_ERR (%d %s)", st,
	      st >= 0 ? ibv_wc_status_str(st) : "none");
	sge = (struct ibv_sge) { (uintptr_t)hole, page, imr->lkey };
	ret = ibv_advise_mr(nd->pd, IBV_ADVISE_MR_ADVICE_PREFETCH,
			    IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1);
	check(ret == EFAULT, "advise_mr of the empty chunk: EFAULT (%d)", ret);
	sge.addr = 1ull << 47;
	ret = ibv_advise_mr(nd->pd, IBV_ADVISE_MR_ADVICE_PREFETCH,
			    IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1);
	check(ret == EINVAL, "advise_mr at 2^47: EINVAL (%d)", ret);

	check(!ibv_dereg_mr(imr), "dereg_mr of the implicit MR and its children");
	imr = NULL;
out:
	if (imr)
		ibv_dereg_mr(imr);
	if (cq2)
		ibv_destroy_cq(cq2);
	if (buf)
		munmap(buf, PRE_PAGES * page);
}

/* A child exits holding an implicit MR whose chunks have children. */
static void check_implicit_exit(void)
{
	int status = 0, ok;
	pid_t pid = fork();

	if (pid == 0) {
		struct node nd = { .ctx = open_uzura() };
		char *buf = fresh(2 * page);
		struct ibv_cq *cq;
		struct ibv_qp *qp;
		struct ibv_mr *mr;

		nd.pd = nd.ctx ? ibv_alloc_pd(nd.ctx) : NULL;
		nd.gidx = nd.ctx ? ipv4_gid_index(nd.ctx) : -1;
		cq = nd.pd ? ibv_create_cq(nd.ctx, 4, NULL, NULL, 0) : NULL;
		qp = cq ? self_qp(&nd, cq) : NULL;
		mr = qp && buf ? ibv_reg_mr(nd.pd, NULL, SIZE_MAX, ODP_ACCESS) :
				 NULL;
		if (!mr || rdma_wait(qp, cq, IBV_WR_RDMA_WRITE, buf, mr->lkey,
				     buf + page, mr->rkey))
			_exit(1);
		_exit(0);
	}
	ok = pid > 0 && waitpid(pid, &status, 0) == pid &&
	     WIFEXITED(status) && WEXITSTATUS(status) == 0;
	check(ok, "a process exits holding an implicit MR with children (status 0x%x)",
	      status);
}

/* A child posts WRITEs that wait for faults and is killed at once. */
static void check_killed(void)
{
	int status = 0, ok;
	pid_t pid = fork();

	if (pid == 0) {
		struct node nd = { .ctx = open_uzura() };
		char *big = fresh(BIG_LEN);
		struct ibv_cq *cq;
		struct ibv_qp *qp;
		struct ibv_mr *mr;
		int k;

		nd.pd = nd.ctx ? ibv_alloc_pd(nd.ctx) : NULL;
		nd.gidx = nd.ctx ? ipv4_gid_index(nd.ctx) : -1;
		cq = nd.pd ? ibv_create_cq(nd.ctx, 4 * BURST, NULL, NULL, 0) :
			     NULL;
		qp = cq ? self_qp(&nd, cq) : NULL;
		mr = qp && big ? ibv_reg_mr(nd.pd, big, BIG_LEN, ODP_ACCESS) :
				 NULL;
		if (!mr)
			_exit(1);
		for (k = 0; k < BURST; k++)
			post_rdma(qp, IBV_WR_RDMA_WRITE, k, big, mr->lkey,
				  storm_slot(big, k + 1), mr->rkey);
		raise(SIGKILL);
		_exit(1);
	}
	ok = pid > 0 && waitpid(pid, &status, 0) == pid &&
	     WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
	check(ok, "a process killed with WRITEs waiting for faults (status 0x%x)",
	      status);
}

int main(void)
{
	struct node nd = {};
	struct ibv_mr *plain;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	void *pbuf;

	page = sysconf(_SC_PAGESIZE);
	check_killed();
	nd.ctx = open_uzura();
	nd.pd = nd.ctx ? ibv_alloc_pd(nd.ctx) : NULL;
	nd.gidx = nd.ctx ? ipv4_gid_index(nd.ctx) : -1;
	cq = nd.pd ? ibv_create_cq(nd.ctx, 4 * BURST, NULL, NULL, 0) : NULL;
	qp = cq && nd.gidx >= 0 ? self_qp(&nd, cq) : NULL;
	pbuf = aligned_alloc(page, page);
	plain = pbuf && nd.pd ?
		ibv_reg_mr(nd.pd, pbuf, page, IBV_ACCESS_LOCAL_WRITE |
			   IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ) :
		NULL;
	check(qp && plain,
	      "uzura0 (after the killed process): a PD, a CQ, an RC QP connected to itself, an MR");
	if (!qp || !plain) {
		printf("Bail out! no QP\n");
		return 1;
	}
	check_caps(&nd);
	check_storm(&nd, qp, cq);
	check_prefetch(&nd, qp, cq, plain);
	check_hole(&nd, cq, plain);
	check_huge(&nd, qp, cq, plain);
	check_implicit(&nd, qp, cq, plain);
	check_implicit_exit();

	ibv_dereg_mr(plain);
	ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(nd.pd);
	ibv_close_device(nd.ctx);
	printf("1..%d\n", n);
	return fails ? 1 : 0;
}
