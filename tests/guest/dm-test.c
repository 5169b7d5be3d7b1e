// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * dm-test: device memory on uzura0 (device spec 8.17), the way software
 * uses it: small buffers and counters kept in the NIC, reached by the
 * host through ibv_memcpy_to_dm/_from_dm and by the NIC's own traffic
 * through DM MRs.  Run in a guest; speaks TAP, exits 0 only if every
 * check passes.  Two RC QPs connected to each other on the port's IPv4
 * RoCE v2 GID do the traffic, which loops back inside the NIC; the
 * responder is not the requester, so a refused request is a NAK to it,
 * not a flush.
 *
 *  - caps: ibv_query_device_ex's max_dm_size is a whole number of pages.
 *  - allocations of 1, 100, 4096 and 4097 bytes: copies at 4-byte aligned
 *    offsets land where they are aimed and nothing else moves; memory
 *    written and freed reads as zeroes for the next allocation; bad input
 *    (length 0 or over max_dm_size, an unknown comp_mask, a copy at an
 *    unaligned offset or of an unaligned length, past the length asked
 *    for, or wrapping around) fails and copies nothing; max_dm_size / 4096
 *    one-page allocations take all of it, the next is ENOMEM, and once
 *    they are freed one of max_dm_size goes.
 *  - DM MRs: zero-based, at an offset into the allocation; without
 *    IBV_ACCESS_ZERO_BASED, past the length asked for, or remote write
 *    without local write: EINVAL; ibv_free_dm of a DM an MR maps: EBUSY,
 *    and the DM stays usable; it goes once the last MR is deregistered.
 *  - traffic: a WRITE from host memory into a DM MR, a READ out of it,
 *    FETCH_ADD and CMP_SWP on a counter in it, a SEND received into it
 *    and one sent from it; a WRITE past its end is REM_ACCESS_ERR and
 *    writes nothing.
 *  - processes: a child's allocation reads zeroes, not the parent's data,
 *    and its writes do not reach the parent's; its exit frees what it
 *    held (an allocation and a DM MR): the parent's data stays, and all
 *    of the memory can be allocated again.
 *
 * Every DM here has a shadow in host memory: what it must hold.  After
 * each step the whole DM is read back and compared with it, so a copy or
 * a packet that lands anywhere else is seen too.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "child.h"
#include "self-qp.h"
#include "tap.h"

#define PAGE		4096	/* UZ_DM_PAGE_SIZE: whole pages are allocated */
#define DM_LEN		(2 * PAGE + 100) /* not whole pages */
#define MR_OFF		256	/* the DM MR's start in its DM */
#define MR_LEN		PAGE

/* Places in the DM MR (zero-based addresses) that the traffic uses. */
#define W_OFF		64	/* the WRITE's target: two packets */
#define W_LEN		2000
#define R_OFF		1200	/* the READ's source */
#define R_LEN		1500
#define A_OFF		2064	/* the atomics' counter, 8-byte aligned */
#define RX_OFF		3072	/* a receive buffer, to the MR's end */
#define RX_LEN		(MR_LEN - RX_OFF)
#define RX_MSG		700
#define TX_OFF		8	/* a SEND's source */
#define TX_LEN		500

#define SLOT		4096	/* host buffer slots */
#define ISO_LEN		(3 * PAGE)

#define ACCESS		(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
			 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)
#define DM_ACCESS	(ACCESS | IBV_ACCESS_ZERO_BASED)
#define RQP		(IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
			 IBV_ACCESS_REMOTE_ATOMIC)

/* A DM and what it must hold. */
struct dmbuf {
	struct ibv_dm *dm;
	size_t len;
	uint8_t *want;
};

/* Byte @i of pattern @k; it changes every 256 bytes too, to see shifts. */
static uint8_t pattern(int k, size_t i)
{
	return (uint8_t)(k * 31 + i * 7 + (i >> 8) * 13 + 1);
}

static void fill(uint8_t *buf, int k, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] = pattern(k, i);
}

/* An allocation of @len bytes, or NULL with errno. */
static struct ibv_dm *dm_alloc(struct ibv_context *ctx, size_t len)
{
	struct ibv_alloc_dm_attr a = { .length = len };

	return ibv_alloc_dm(ctx, &a);
}

/* A DM of @len bytes with its shadow (zeroes, as allocated), or false. */
static bool dmbuf_alloc(struct ibv_context *ctx, struct dmbuf *d, size_t len)
{
	d->len = len;
	d->want = calloc(1, len);
	d->dm = d->want ? dm_alloc(ctx, len) : NULL;
	if (!d->dm) {
		free(d->want);
		d->want = NULL;
	}
	return d->dm;
}

static int dmbuf_free(struct dmbuf *d)
{
	int ret = d->dm ? ibv_free_dm(d->dm) : 0;

	if (!ret) {
		free(d->want);
		d->want = NULL;
		d->dm = NULL;
	}
	return ret;
}

/* Copy pattern @k to [@off, @off + @len) of the DM: its return value. */
static int dm_put(struct dmbuf *d, uint64_t off, int k, size_t len)
{
	uint8_t *buf = malloc(len ? len : 1);
	int ret;

	if (!buf)
		return ENOMEM;
	fill(buf, k, len);
	ret = ibv_memcpy_to_dm(d->dm, off, buf, len);
	if (!ret)
		memcpy(d->want + off, buf, len);
	free(buf);
	return ret;
}

/* Pattern @k is now at [@off, @off + @len): the NIC put it there. */
static void dm_expect(struct dmbuf *d, uint64_t off, int k, size_t len)
{
	fill(d->want + off, k, len);
}

/*
 * Read the whole DM back (its length rounded down to 4 bytes: copies
 * are whole words) and compare it with its shadow: the first byte that
 * differs, or -1; -2 if the read fails.
 */
static long dm_wrong(struct dmbuf *d)
{
	size_t len = d->len & ~3ul, i;
	uint8_t *buf = malloc(len ? len : 1);
	long at = -1;

	if (!len) {
		free(buf);
		return -1;
	}
	if (!buf || ibv_memcpy_from_dm(buf, d->dm, 0, len)) {
		free(buf);
		return -2;
	}
	for (i = 0; i < len && at < 0; i++)
		if (buf[i] != d->want[i])
			at = i;
	free(buf);
	return at;
}

/* The first byte of @dm's first @len that is not zero, or -1; -2: no read. */
static long nonzero_at(struct ibv_dm *dm, size_t len)
{
	uint8_t *buf = malloc(len);
	long at = -1;
	size_t i;

	if (!buf || ibv_memcpy_from_dm(buf, dm, 0, len)) {
		free(buf);
		return -2;
	}
	for (i = 0; i < len && at < 0; i++)
		if (buf[i])
			at = i;
	free(buf);
	return at;
}

static const char *wc_str(int st)
{
	return st >= 0 ? ibv_wc_status_str(st) : "no completion";
}

/* ---- caps ---- */

static uint64_t check_caps(struct ibv_context *ctx)
{
	struct ibv_device_attr_ex ax = {};
	int ret;

	ret = ibv_query_device_ex(ctx, NULL, &ax);
	check(!ret && ax.max_dm_size > 0 && !(ax.max_dm_size % PAGE),
	      "query_device_ex: max_dm_size %llu, a whole number of 4 KiB pages (ret %d)",
	      (unsigned long long)ax.max_dm_size, ret);
	return ret ? 0 : ax.max_dm_size;
}

/* ---- allocations and copies ---- */

/* Copies at aligned offsets into a DM of each length, each in bounds. */
static void check_copies(struct ibv_context *ctx)
{
	static const size_t lens[] = { 1, 100, PAGE, PAGE + 1 };
	static const struct { uint64_t off; size_t len; } cp[] = {
		{ 4, 8 }, { 12, 4 }, { 60, 40 }, { 96, 4 }, { 2048, 12 },
		{ 1000, 2000 }, { PAGE - 4, 4 },
	};
	unsigned int i, j, done;
	struct dmbuf d;
	size_t words;
	long at;
	int ret, err;

	for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		errno = 0;
		if (!dmbuf_alloc(ctx, &d, lens[i])) {
			err = errno;
			check(0, "ibv_alloc_dm of %zu bytes (errno %d %s)",
			      lens[i], err, strerror(err));
			continue;
		}
		/* It reads zeroes; then a fill, then the copies over it. */
		words = lens[i] & ~3ul;
		at = dm_wrong(&d);
		ret = words ? dm_put(&d, 0, 40 + i, words) : 0;
		for (j = 0, done = 0; !ret && j < sizeof(cp) / sizeof(cp[0]);
		     j++) {
			if (cp[j].off + cp[j].len > words)
				continue;
			ret = dm_put(&d, cp[j].off, 50 + j, cp[j].len);
			done++;
		}
		at = at < 0 && !ret ? dm_wrong(&d) : at;
		check(at == -1 && !ret,
		      "ibv_alloc_dm of %zu bytes: reads zeroes, then %u copies at aligned offsets over a fill read back as written, nothing else moved (ret %d, first wrong byte %ld)",
		      lens[i], done, ret, at);
		ret = dmbuf_free(&d);
		check(!ret, "... ibv_free_dm (%d)", ret);
	}
}

/* Memory another allocation wrote and freed reads as zeroes. */
static void check_zeroed(struct ibv_context *ctx, size_t len, const char *what)
{
	struct ibv_dm *dm = dm_alloc(ctx, len);
	size_t words = len & ~3ul;
	uint8_t *buf = malloc(words);
	long at = -3;
	int ret = -1, fr = -1;

	if (dm && buf) {
		memset(buf, 0xa5, words);
		ret = ibv_memcpy_to_dm(dm, 0, buf, words);
		/* It got there: the zeroes below are not a lost write. */
		memset(buf, 0, words);
		ret = ret ? ret : ibv_memcpy_from_dm(buf, dm, 0, words);
		ret = ret ? ret : buf[words - 1] != 0xa5;
		fr = ibv_free_dm(dm);
		dm = fr ? NULL : dm_alloc(ctx, len);
		at = dm ? nonzero_at(dm, words) : -3;
	}
	check(!ret && !fr && at == -1,
	      "%s (%zu bytes) filled with 0xa5 and freed: allocated again, it reads zeroes (ret %d, free %d, first nonzero byte %ld)",
	      what, len, ret, fr, at);
	if (dm)
		ibv_free_dm(dm);
	free(buf);
}

static void check_bad_alloc(struct ibv_context *ctx, uint64_t max)
{
	struct ibv_alloc_dm_attr a = { .length = 100, .comp_mask = 1u << 31 };
	struct ibv_dm *dm;
	int err;

	errno = 0;
	dm = dm_alloc(ctx, 0);
	err = errno;
	check(!dm && err == EINVAL,
	      "ibv_alloc_dm of 0 bytes: EINVAL (errno %d %s)", err,
	      strerror(err));
	if (dm)
		ibv_free_dm(dm);
	errno = 0;
	dm = dm_alloc(ctx, max + 1);
	err = errno;
	check(!dm && err == EINVAL,
	      "ibv_alloc_dm of max_dm_size + 1 bytes: EINVAL (errno %d %s)",
	      err, strerror(err));
	if (dm)
		ibv_free_dm(dm);
	errno = 0;
	dm = ibv_alloc_dm(ctx, &a);
	err = errno;
	check(!dm && err == EINVAL,
	      "ibv_alloc_dm with an unknown comp_mask bit: EINVAL (errno %d %s)",
	      err, strerror(err));
	if (dm)
		ibv_free_dm(dm);
}

/* Copies that must fail, each copying nothing, both ways. */
static void check_bad_copies(struct ibv_context *ctx)
{
	static const struct {
		uint64_t off;
		size_t len;
		const char *what;
	} bad[] = {
		{ 2, 4, "an unaligned offset" },
		{ 0, 3, "an unaligned length" },
		{ 96, 8, "past the 100 bytes asked for, inside the page" },
		{ 100, 4, "at the length asked for" },
		{ PAGE, 4, "past the page" },
		{ ~3ull, 8, "wrapping around the offsets" },
	};
	uint8_t buf[16];
	struct dmbuf d;
	unsigned int i;
	int to, from;
	long at;

	if (!dmbuf_alloc(ctx, &d, 100) || dm_put(&d, 0, 60, 100)) {
		check(0, "a DM of 100 bytes, filled");
		if (d.dm)
			dmbuf_free(&d);
		return;
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(buf, 0x3c, sizeof(buf));
		to = ibv_memcpy_to_dm(d.dm, bad[i].off, buf, bad[i].len);
		from = ibv_memcpy_from_dm(buf, d.dm, bad[i].off, bad[i].len);
		at = dm_wrong(&d);
		check(to == EINVAL && from == EINVAL && at == -1 &&
		      buf[0] == 0x3c,
		      "a copy of %zu bytes at %llu in a DM of 100 (%s): EINVAL to and from the DM (%d, %d), nothing copied (first wrong byte %ld)",
		      bad[i].len, (unsigned long long)bad[i].off, bad[i].what,
		      to, from, at);
	}
	dmbuf_free(&d);
}

/* One-page allocations until there are no more; then one of all of it. */
static void check_exhaust(struct ibv_context *ctx, uint64_t max)
{
	size_t pages = max / PAGE, i, got;
	struct ibv_dm **dms = calloc(pages + 1, sizeof(*dms));
	struct ibv_dm *all;
	int err = 0, ret = 0;

	if (!dms) {
		check(0, "memory for %zu allocations", pages + 1);
		return;
	}
	for (got = 0; got <= pages; got++) {
		errno = 0;
		dms[got] = dm_alloc(ctx, PAGE);
		if (!dms[got]) {
			err = errno;
			break;
		}
	}
	check(got == pages && err == ENOMEM,
	      "%zu one-page allocations take max_dm_size; the next: ENOMEM (%zu went, errno %d %s)",
	      pages, got, err, strerror(err));
	for (i = 0; i < got && i <= pages; i++)
		ret = ibv_free_dm(dms[i]) ? -1 : ret;
	errno = 0;
	all = ret ? NULL : dm_alloc(ctx, max);
	err = errno;
	check(!ret && all,
	      "... all freed (%d), one allocation of max_dm_size goes (errno %d %s)",
	      ret, err, strerror(err));
	if (all) {
		ret = ibv_free_dm(all);
		check(!ret, "... and is freed (%d)", ret);
	}
	free(dms);
}

/* ---- DM MRs ---- */

static struct ibv_mr *reg_err(struct ibv_pd *pd, struct ibv_dm *dm,
			      uint64_t off, size_t len, unsigned int access,
			      int *err)
{
	struct ibv_mr *mr;

	errno = 0;
	mr = ibv_reg_dm_mr(pd, dm, off, len, access);
	*err = errno;
	return mr;
}

static void check_dm_mr(struct ibv_context *ctx, struct ibv_pd *pd)
{
	static const struct {
		uint64_t off;
		size_t len;
		unsigned int access;
		const char *what;
	} bad[] = {
		{ MR_OFF, MR_LEN, ACCESS, "without IBV_ACCESS_ZERO_BASED" },
		{ DM_LEN - 96, 100, DM_ACCESS,
		  "past the length asked for, inside its last page" },
		{ 0, DM_LEN + 1, DM_ACCESS, "longer than the DM" },
		{ DM_LEN + 4, 0, DM_ACCESS, "starting past the DM" },
		{ 0, PAGE, IBV_ACCESS_ZERO_BASED | IBV_ACCESS_REMOTE_WRITE,
		  "remote write without local write" },
	};
	struct ibv_mr *mr, *mr2 = NULL, *tail;
	struct dmbuf d;
	unsigned int i;
	int err, ret;
	long at;

	if (!dmbuf_alloc(ctx, &d, DM_LEN) || dm_put(&d, 0, 70, DM_LEN & ~3ul)) {
		check(0, "a DM of %d bytes, filled", DM_LEN);
		if (d.dm)
			dmbuf_free(&d);
		return;
	}
	mr = reg_err(pd, d.dm, MR_OFF, MR_LEN, DM_ACCESS, &err);
	check(mr && mr->length == MR_LEN && mr->pd == pd,
	      "ibv_reg_dm_mr at offset %d, %d bytes, zero-based, local and remote write, read, atomic (errno %d %s)",
	      MR_OFF, MR_LEN, err, strerror(err));
	tail = reg_err(pd, d.dm, DM_LEN - 100, 100, DM_ACCESS, &err);
	check(tail != NULL,
	      "ibv_reg_dm_mr of the last 100 bytes asked for (errno %d %s)",
	      err, strerror(err));
	if (tail)
		ibv_dereg_mr(tail);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		tail = reg_err(pd, d.dm, bad[i].off, bad[i].len,
			       bad[i].access, &err);
		check(!tail && err == EINVAL,
		      "ibv_reg_dm_mr %s (offset %llu, %zu bytes): EINVAL (errno %d %s)",
		      bad[i].what, (unsigned long long)bad[i].off, bad[i].len,
		      err, strerror(err));
		if (tail)
			ibv_dereg_mr(tail);
	}
	if (!mr)
		goto out;

	/* ib_core holds the DM while any MR maps it. */
	mr2 = reg_err(pd, d.dm, 0, DM_LEN, DM_ACCESS, &err);
	if (!mr2) {
		check(0, "a second DM MR, over all of the DM (errno %d %s)",
		      err, strerror(err));
		goto out;
	}
	ret = ibv_free_dm(d.dm);
	check(ret == EBUSY,
	      "with two DM MRs on it, ibv_free_dm: EBUSY (%d %s)", ret,
	      strerror(ret));
	if (!ret) {
		d.dm = NULL;
		goto out;
	}
	ret = ibv_dereg_mr(mr);
	mr = NULL;
	err = ret ? -1 : ibv_free_dm(d.dm);
	check(!ret && err == EBUSY,
	      "... one deregistered (%d), ibv_free_dm: still EBUSY (%d %s)",
	      ret, err, strerror(err));
	if (!err) {
		d.dm = NULL;
		goto out;
	}
	ret = dm_put(&d, 16, 71, 64);
	at = ret ? -3 : dm_wrong(&d);
	check(at == -1,
	      "... the DM is still there: a copy to it and the whole DM read back (ret %d, first wrong byte %ld)",
	      ret, at);
	ret = ibv_dereg_mr(mr2);
	mr2 = NULL;
	check(!ret, "... the second deregistered (%d)", ret);
out:
	if (mr)
		ibv_dereg_mr(mr);
	if (mr2)
		ibv_dereg_mr(mr2);
	err = dmbuf_free(&d);
	check(!err, "the last DM MR deregistered, ibv_free_dm goes (%d)", err);
}

/* ---- traffic ---- */

struct rig {
	struct ibv_qp *qp;	/* the requester */
	struct ibv_qp *peer;	/* its responder: the receives go here */
	struct ibv_cq *scq, *rcq;
	struct ibv_mr *hmr;	/* host memory: SLOT-sized slots */
	uint8_t *hbuf;
	struct ibv_mr *mr;	/* the DM MR, at MR_OFF of d */
	struct dmbuf d;
};

/* @op of @len bytes between host slot @slot and DM MR address @raddr. */
static int rdma_op(struct rig *r, enum ibv_wr_opcode op, int slot,
		   uint64_t raddr, uint32_t len)
{
	struct ibv_sge sge = {
		(uintptr_t)(r->hbuf + slot * SLOT), len, r->hmr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = op, .sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = raddr, .rkey = r->mr->rkey },
	};
	enum ibv_wc_opcode wop;

	return post_wait(r->qp, r->scq, &wr, &wop);
}

/* An atomic on the DM MR's counter; the old value into host slot 3. */
static int atomic_op(struct rig *r, enum ibv_wr_opcode op, int idx,
		     uint64_t add_cmp, uint64_t swap)
{
	struct ibv_sge sge = {
		(uintptr_t)(r->hbuf + 3 * SLOT + idx * 8), 8, r->hmr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = op, .sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.atomic = { .remote_addr = A_OFF, .compare_add = add_cmp,
			       .swap = swap, .rkey = r->mr->rkey },
	};
	enum ibv_wc_opcode wop;

	return post_wait(r->qp, r->scq, &wr, &wop);
}

/*
 * A SEND of @sge from the requester, received by its peer into @rsge:
 * the send's status, or -1; the receive's status into *@rst, its length
 * into *@rlen.
 */
static int send_recv(struct rig *r, struct ibv_sge *sge, struct ibv_sge *rsge,
		     int *rst, uint32_t *rlen)
{
	struct ibv_recv_wr rwr = { .wr_id = 2, .sg_list = rsge, .num_sge = 1 };
	struct ibv_send_wr wr = {
		.wr_id = 1, .sg_list = sge, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
	};
	struct ibv_recv_wr *rbad;
	enum ibv_wc_opcode wop;
	struct ibv_wc wc;
	int st;

	*rst = -1;
	*rlen = 0;
	if (ibv_post_recv(r->peer, &rwr, &rbad))
		return -1;
	st = post_wait(r->qp, r->scq, &wr, &wop);
	if (wait_wc(r->rcq, &wc)) {
		*rst = wc.status;
		*rlen = wc.byte_len;
	}
	return st;
}

static bool rig_up(struct ibv_context *ctx, struct ibv_pd *pd, int gidx,
		   struct rig *r)
{
	struct ibv_qp_init_attr qa = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 8, .max_send_sge = 1,
			 .max_recv_wr = 4, .max_recv_sge = 1 },
	};

	r->scq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	r->rcq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	qa.send_cq = r->scq;
	qa.recv_cq = r->rcq;
	r->qp = r->scq && r->rcq ? ibv_create_qp(pd, &qa) : NULL;
	r->peer = r->qp ? ibv_create_qp(pd, &qa) : NULL;
	if (r->peer && (connect_qp(ctx, r->qp, r->peer->qp_num, gidx, RQP) ||
			connect_qp(ctx, r->peer, r->qp->qp_num, gidx, RQP))) {
		ibv_destroy_qp(r->peer);
		r->peer = NULL;
	}
	r->hbuf = aligned_alloc(SLOT, 4 * SLOT);
	r->hmr = r->hbuf ? ibv_reg_mr(pd, r->hbuf, 4 * SLOT, ACCESS) : NULL;
	if (!dmbuf_alloc(ctx, &r->d, DM_LEN))
		return false;
	r->mr = ibv_reg_dm_mr(pd, r->d.dm, MR_OFF, MR_LEN, DM_ACCESS);
	return r->peer && r->hmr && r->mr &&
	       !dm_put(&r->d, 0, 80, DM_LEN & ~3ul);
}

static void rig_down(struct rig *r)
{
	int ret = 0;

	if (r->peer)
		ret |= ibv_destroy_qp(r->peer);
	if (r->qp)
		ret |= ibv_destroy_qp(r->qp);
	if (r->mr)
		ret |= ibv_dereg_mr(r->mr);
	if (r->d.dm)
		ret |= dmbuf_free(&r->d);
	if (r->hmr)
		ret |= ibv_dereg_mr(r->hmr);
	if (r->scq)
		ret |= ibv_destroy_cq(r->scq);
	if (r->rcq)
		ret |= ibv_destroy_cq(r->rcq);
	free(r->hbuf);
	check(!ret, "teardown: the QPs, the DM MR, the DM, the host MR, the CQs");
}

static void check_traffic(struct ibv_context *ctx, struct ibv_pd *pd,
			  int gidx)
{
	struct rig r = {};
	uint64_t *res, v = 1000;
	struct ibv_sge sge, rsge;
	uint32_t rlen;
	int st, st2, rst, ret;
	long at;

	if (!rig_up(ctx, pd, gidx, &r)) {
		check(0, "two RC QPs connected to each other, a host MR, a DM of %d bytes with a DM MR at %d, filled",
		      DM_LEN, MR_OFF);
		rig_down(&r);
		return;
	}
	check(1, "two RC QPs connected to each other, a host MR, a DM of %d bytes with a DM MR at %d, filled",
	      DM_LEN, MR_OFF);
	res = (uint64_t *)(r.hbuf + 3 * SLOT);

	/* WRITE: host slot 0 -> the DM MR. */
	fill(r.hbuf, 1, W_LEN);
	st = rdma_op(&r, IBV_WR_RDMA_WRITE, 0, W_OFF, W_LEN);
	dm_expect(&r.d, MR_OFF + W_OFF, 1, W_LEN);
	at = dm_wrong(&r.d);
	check(st == IBV_WC_SUCCESS && at == -1,
	      "RDMA WRITE of %d bytes from host memory to address %d of the DM MR (%d %s): ibv_memcpy_from_dm reads them at %d of the DM, nothing else moved (first wrong byte %ld)",
	      W_LEN, W_OFF, st, wc_str(st), MR_OFF + W_OFF, at);

	/* READ: the DM MR -> host slot 1. */
	memset(r.hbuf + SLOT, 0, SLOT);
	st = rdma_op(&r, IBV_WR_RDMA_READ, 1, R_OFF, R_LEN);
	check(st == IBV_WC_SUCCESS &&
	      !memcmp(r.hbuf + SLOT, r.d.want + MR_OFF + R_OFF, R_LEN),
	      "RDMA READ of %d bytes at address %d of the DM MR into host memory (%d %s): what the DM holds there",
	      R_LEN, R_OFF, st, wc_str(st));

	/* Atomics on a counter in the DM (the host's byte order). */
	ret = ibv_memcpy_to_dm(r.d.dm, MR_OFF + A_OFF, &v, 8);
	memcpy(r.d.want + MR_OFF + A_OFF, &v, 8);
	res[0] = res[1] = 0;
	st = ret ? -1 : atomic_op(&r, IBV_WR_ATOMIC_FETCH_AND_ADD, 0, 5, 0);
	st2 = st ? -1 : atomic_op(&r, IBV_WR_ATOMIC_CMP_AND_SWP, 1, 1005, 77);
	v = 0;
	ret = ret ? ret : ibv_memcpy_from_dm(&v, r.d.dm, MR_OFF + A_OFF, 8);
	check(!ret && st == IBV_WC_SUCCESS && st2 == IBV_WC_SUCCESS &&
	      res[0] == 1000 && res[1] == 1005 && v == 77,
	      "FETCH_ADD 5 and CMP_SWP 1005 -> 77 on a counter of 1000 in the DM MR (%s, %s): old values %llu, %llu; the DM reads %llu",
	      wc_str(st), wc_str(st2), (unsigned long long)res[0],
	      (unsigned long long)res[1], (unsigned long long)v);
	v = 77;
	memcpy(r.d.want + MR_OFF + A_OFF, &v, 8);

	/* A SEND from host memory, received into the DM MR. */
	fill(r.hbuf, 2, RX_MSG);
	sge = (struct ibv_sge) { (uintptr_t)r.hbuf, RX_MSG, r.hmr->lkey };
	rsge = (struct ibv_sge) { RX_OFF, RX_LEN, r.mr->lkey };
	st = send_recv(&r, &sge, &rsge, &rst, &rlen);
	dm_expect(&r.d, MR_OFF + RX_OFF, 2, RX_MSG);
	at = dm_wrong(&r.d);
	check(st == IBV_WC_SUCCESS && rst == IBV_WC_SUCCESS &&
	      rlen == RX_MSG && at == -1,
	      "a SEND of %d bytes received into an SGE of the DM MR at address %d (send %s, receive %s, byte_len %u): the DM holds them, nothing else moved (first wrong byte %ld)",
	      RX_MSG, RX_OFF, wc_str(st), wc_str(rst), rlen, at);

	/* A SEND from the DM MR, received into host memory. */
	memset(r.hbuf + 2 * SLOT, 0, SLOT);
	sge = (struct ibv_sge) { TX_OFF, TX_LEN, r.mr->lkey };
	rsge = (struct ibv_sge) {
		(uintptr_t)(r.hbuf + 2 * SLOT), SLOT, r.hmr->lkey,
	};
	st = send_recv(&r, &sge, &rsge, &rst, &rlen);
	check(st == IBV_WC_SUCCESS && rst == IBV_WC_SUCCESS &&
	      rlen == TX_LEN &&
	      !memcmp(r.hbuf + 2 * SLOT, r.d.want + MR_OFF + TX_OFF, TX_LEN),
	      "a SEND of %d bytes from an SGE of the DM MR at address %d into host memory (send %s, receive %s, byte_len %u): what the DM holds there",
	      TX_LEN, TX_OFF, wc_str(st), wc_str(rst), rlen);

	/*
	 * Past the MR's end, inside the DM: refused whole.  Last: the
	 * responder errs, and the requester gets the NAK.
	 */
	fill(r.hbuf, 3, 8);
	st = rdma_op(&r, IBV_WR_RDMA_WRITE, 0, MR_LEN - 4, 8);
	at = dm_wrong(&r.d);
	check(st == IBV_WC_REM_ACCESS_ERR && at == -1,
	      "RDMA WRITE of 8 bytes at address %d of the %d-byte DM MR: REM_ACCESS_ERR (%d %s), nothing written (first wrong byte %ld)",
	      MR_LEN - 4, MR_LEN, st, wc_str(st), at);
	rig_down(&r);
}

/* ---- processes ---- */

/* What the child found, sent up its pipe. */
struct kid {
	int32_t alloc_err;	/* errno of its ibv_alloc_dm, 0 if it went */
	int32_t nonzero_at;	/* its first nonzero byte, -1 if none */
	int32_t put_ret;	/* its ibv_memcpy_to_dm over all of it */
	int32_t mr_err;		/* errno of its ibv_reg_dm_mr, 0 if it went */
};

static void __attribute__((noreturn)) child(int up, int down)
{
	struct kid k = { .alloc_err = -1, .nonzero_at = -3, .put_ret = -1,
			 .mr_err = -1 };
	struct ibv_context *ctx = open_uzura();
	struct ibv_pd *pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	uint8_t *buf = malloc(ISO_LEN);
	struct ibv_dm *dm;
	struct ibv_mr *mr;
	char c;

	errno = 0;
	dm = pd && buf ? dm_alloc(ctx, ISO_LEN) : NULL;
	k.alloc_err = dm ? 0 : errno ? errno : -1;
	if (dm) {
		k.nonzero_at = nonzero_at(dm, ISO_LEN);
		memset(buf, 0x5a, ISO_LEN);
		k.put_ret = ibv_memcpy_to_dm(dm, 0, buf, ISO_LEN);
		errno = 0;
		mr = ibv_reg_dm_mr(pd, dm, 0, ISO_LEN, DM_ACCESS);
		k.mr_err = mr ? 0 : errno ? errno : -1;
	}
	if (write(up, &k, sizeof(k)) != sizeof(k))
		_exit(2);
	pipe_read(down, &c, 1);
	/* Its DM, DM MR, PD and context go with the process. */
	_exit(0);
}

static void check_processes(struct ibv_context *ctx, uint64_t max)
{
	struct kid k = { .alloc_err = -1 };
	struct dmbuf d = {}, d2 = {};
	struct ibv_dm *all;
	int up[2], down[2], status, ret, err;
	long at, at2;
	pid_t pid;

	if (!dmbuf_alloc(ctx, &d, ISO_LEN) || dm_put(&d, 0, 90, ISO_LEN) ||
	    pipe(up) || pipe(down)) {
		check(0, "a DM of %d bytes, filled; pipes", ISO_LEN);
		if (d.dm)
			dmbuf_free(&d);
		return;
	}
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		close(up[0]);
		close(down[1]);
		child(up[1], down[0]);
	}
	close(up[1]);
	close(down[0]);
	if (pid < 0 || !pipe_read(up[0], &k, sizeof(k)))
		k.alloc_err = -1;
	check(!k.alloc_err && k.nonzero_at == -1,
	      "a child with its own context: its allocation of %d bytes reads zeroes, not the parent's data (errno %d, first nonzero byte %d)",
	      ISO_LEN, k.alloc_err, k.nonzero_at);
	check(!k.alloc_err && !k.put_ret && !k.mr_err,
	      "... it fills its DM with 0x5a (%d) and registers a DM MR over it (errno %d)",
	      k.put_ret, k.mr_err);
	at = dm_wrong(&d);
	check(at == -1,
	      "... the parent's DM still holds the parent's data (first wrong byte %ld)",
	      at);

	/* The child exits holding its DM and DM MR. */
	if (write(down[1], "x", 1) != 1)
		kill(pid, SIGKILL);
	status = pid > 0 ? reap(pid) : -1;
	close(up[0]);
	close(down[1]);
	check(status >= 0 && WIFEXITED(status) && !WEXITSTATUS(status),
	      "the child exits 0 without freeing (status 0x%x)", status);
	at = dm_wrong(&d);
	at2 = dmbuf_alloc(ctx, &d2, ISO_LEN) ? dm_wrong(&d2) : -3;
	check(at == -1 && at2 == -1,
	      "after its exit the parent's DM holds the parent's data (first wrong byte %ld), and a new allocation of %d bytes reads zeroes (first nonzero byte %ld)",
	      at, ISO_LEN, at2);
	ret = dmbuf_free(&d) | dmbuf_free(&d2);
	errno = 0;
	all = ret ? NULL : dm_alloc(ctx, max);
	err = errno;
	check(all != NULL,
	      "the parent's DMs freed (%d): one allocation of max_dm_size goes, the child's was freed at its exit (errno %d %s)",
	      ret, err, strerror(err));
	if (all)
		ibv_free_dm(all);
}

int main(void)
{
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	uint64_t max;
	int gidx, ret;

	signal(SIGPIPE, SIG_IGN);
	ctx = open_uzura();
	pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	gidx = ctx ? ipv4_gid_index(ctx) : -1;
	check(pd && gidx >= 0, "uzura0: a PD, the IPv4 GID (index %d)", gidx);
	if (!pd || gidx < 0) {
		printf("Bail out! no device\n");
		return 1;
	}
	max = check_caps(ctx);
	if (!max) {
		printf("Bail out! no device memory\n");
		return 1;
	}

	check_copies(ctx);
	check_zeroed(ctx, DM_LEN, "a DM");
	check_zeroed(ctx, max, "all of device memory");
	check_bad_alloc(ctx, max);
	check_bad_copies(ctx);
	check_exhaust(ctx, max);
	check_dm_mr(ctx, pd);
	check_traffic(ctx, pd, gidx);
	check_processes(ctx, max);

	ret = ibv_dealloc_pd(pd) || ibv_close_device(ctx);
	check(!ret, "dealloc_pd, close_device");
	printf("1..%d\n", n);
	return fails ? 1 : 0;
}
