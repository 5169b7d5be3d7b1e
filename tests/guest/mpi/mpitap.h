/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * MPI-aware TAP output and data checking for the MPI test programs.
 *
 * Every check is collective over MPI_COMM_WORLD: each rank accumulates its
 * own result (bad bytes, first bad offset, MPI errors, a note) in a
 * struct mt_res, then all ranks call mt_check(), which reduces the results
 * and has rank 0 print one "ok N - ..." / "not ok N - ..." line on stdout,
 * followed for a failure by "# rank R: ..." diagnostic lines.  Only rank 0
 * writes to stdout.  mt_finish() prints the plan "1..N" at the end and
 * returns the exit status (0 only if every check passed, on every rank).
 *
 * MPI_COMM_WORLD (and every window, see mt_win_errors()) uses
 * MPI_ERRORS_RETURN; wrap MPI calls in MT() so that an error is recorded
 * against the current check instead of aborting the job.
 *
 * Data pattern: mt_pat(src, key, off) is a byte that depends on the sender
 * rank, a per-message key and the offset, so misplaced, stale or shifted
 * data does not match.  Receive buffers are filled with MT_POISON first,
 * and one guard byte after the message must still hold MT_POISON.
 * mt_skip() prints "ok N # SKIP ..." for a check that cannot run.
 *
 * Command line of every program: [MAX_SIZE], the largest message in bytes
 * (suffix K or M allowed; default 4M).  Environment: MPITAP_TIMEOUT=S makes
 * a rank that spends more than S seconds in one check print "Bail out!"
 * and exit, so that a hang ends the job (default: no time limit).
 */
#ifndef UZ_MPITAP_H
#define UZ_MPITAP_H

/* include this header first: posix_memalign, alarm under -std=c11 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <mpi.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MT_POISON 0xA5
#define MT_MSGLEN 200

static int mt_rank, mt_size;	/* in MPI_COMM_WORLD */
static int mt_n, mt_fails;	/* checks made, checks failed */
static size_t mt_max = 4u << 20;	/* largest message size */
static unsigned mt_timeout;	/* seconds per check, 0: none */
static char mt_bail[160];	/* what the watchdog writes */
static size_t mt_bail_len;

/* What one rank found during one check. */
struct mt_res {
	long long bad;		/* bad bytes / bad values */
	long long first;	/* offset of the first bad byte, -1: none */
	long long err;		/* MPI calls that returned an error */
	char msg[MT_MSGLEN];	/* first note or MPI error text */
};

static struct mt_res mt_cur;	/* the current check's result */

static inline void mt_reset(void)
{
	memset(&mt_cur, 0, sizeof(mt_cur));
	mt_cur.first = -1;
}

static inline void __attribute__((format(printf, 1, 2)))
mt_note(const char *fmt, ...)
{
	va_list ap;

	if (mt_cur.msg[0])
		return;
	va_start(ap, fmt);
	vsnprintf(mt_cur.msg, sizeof(mt_cur.msg), fmt, ap);
	va_end(ap);
	for (char *c = mt_cur.msg; *c; c++)	/* one TAP line: MPICH's errors have several */
		if (*c == '\n' || *c == '\t')
			*c = ' ';
}

/* Record a failed value (not a byte offset): bad++ and a note. */
#define mt_fail(...) do { mt_cur.bad++; mt_note(__VA_ARGS__); } while (0)

static inline int mt_call(int rc, const char *what, int line)
{
	char s[MPI_MAX_ERROR_STRING];
	int len = 0;

	if (rc == MPI_SUCCESS)
		return rc;
	if (!mt_cur.err++) {
		if (MPI_Error_string(rc, s, &len) != MPI_SUCCESS)
			snprintf(s, sizeof(s), "error %d", rc);
		mt_note("line %d: %.60s: %.100s", line, what, s);
	}
	return rc;
}

/* Wrap an MPI call: an error is recorded, not fatal. */
#define MT(call) mt_call((call), #call, __LINE__)

/* ---- data pattern ---- */

static inline uint64_t mt_mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xBF58476D1CE4E5B9ull;
	x ^= x >> 27;
	x *= 0x94D049BB133111EBull;
	x ^= x >> 31;
	return x;
}

static inline uint64_t mt_seed(uint32_t src, uint32_t key)
{
	return mt_mix(((uint64_t)src << 32 | key) + 0x9E3779B97F4A7C15ull);
}

/* Byte number off of the message with this sender rank and key. */
static inline unsigned char mt_pat(uint32_t src, uint32_t key, size_t off)
{
	uint64_t w = mt_mix(mt_seed(src, key) + (off >> 3) * 0x9E3779B97F4A7C15ull);

	return (unsigned char)(w >> ((off & 7) * 8));
}

static inline void mt_fill(void *buf, size_t len, uint32_t src, uint32_t key)
{
	unsigned char *p = buf;
	uint64_t s = mt_seed(src, key), w = 0;

	for (size_t i = 0; i < len; i++) {
		if (i == 0 || (i & 7) == 0)
			w = mt_mix(s + (i >> 3) * 0x9E3779B97F4A7C15ull);
		p[i] = (unsigned char)(w >> ((i & 7) * 8));
	}
}

static inline void mt_bad_at(struct mt_res *r, long long off)
{
	r->bad++;
	if (r->first < 0)
		r->first = off;
}

/*
 * Compare buf[0..len) with the pattern (src, key) and count the bad bytes
 * in mt_cur; base is added to the offsets reported.
 */
static inline long long mt_verify_at(const void *buf, size_t len, uint32_t src,
				     uint32_t key, long long base)
{
	const unsigned char *p = buf;
	uint64_t s = mt_seed(src, key), w = 0;
	long long bad = 0;

	for (size_t i = 0; i < len; i++) {
		if (i == 0 || (i & 7) == 0)
			w = mt_mix(s + (i >> 3) * 0x9E3779B97F4A7C15ull);
		if (p[i] != (unsigned char)(w >> ((i & 7) * 8))) {
			mt_bad_at(&mt_cur, base + (long long)i);
			bad++;
		}
	}
	return bad;
}

/* Bytes buf[0..len) must still hold MT_POISON. */
static inline long long mt_untouched_at(const void *buf, size_t len, long long base)
{
	const unsigned char *p = buf;
	long long bad = 0;

	for (size_t i = 0; i < len; i++)
		if (p[i] != MT_POISON) {
			mt_bad_at(&mt_cur, base + (long long)i);
			bad++;
		}
	return bad;
}

/* A received message: pattern in buf[0..len), guard byte buf[len] untouched. */
static inline long long mt_verify(const void *buf, size_t len, uint32_t src, uint32_t key)
{
	return mt_verify_at(buf, len, src, key, 0) +
	       mt_untouched_at((const unsigned char *)buf + len, 1, (long long)len);
}

/* ---- buffers ---- */

enum mt_mem { MT_MALLOC, MT_MALLOC_ODD, MT_PAGE, MT_MPIMEM, MT_NMEM };

static const char *const mt_mem_name[MT_NMEM] = {
	"malloc", "malloc+1", "page-aligned", "MPI_Alloc_mem",
};

struct mt_buf {
	unsigned char *p;	/* usable bytes */
	void *base;		/* what to free */
	enum mt_mem mem;
};

/* len usable bytes (callers add 1 for the guard), filled with MT_POISON. */
static inline int mt_alloc(struct mt_buf *b, size_t len, enum mt_mem mem)
{
	b->mem = mem;
	b->base = NULL;
	switch (mem) {
	case MT_MPIMEM:
		if (MT(MPI_Alloc_mem((MPI_Aint)(len ? len : 1), MPI_INFO_NULL, &b->base)))
			b->base = NULL;
		b->p = b->base;
		break;
	case MT_PAGE:
		if (posix_memalign(&b->base, 4096, len ? len : 1))
			b->base = NULL;
		b->p = b->base;
		break;
	case MT_MALLOC_ODD:
		b->base = malloc(len + 1);
		b->p = b->base ? (unsigned char *)b->base + 1 : NULL;
		break;
	default:
		b->base = malloc(len ? len : 1);
		b->p = b->base;
		break;
	}
	if (!b->base) {
		fprintf(stderr, "rank %d: cannot allocate %zu bytes\n", mt_rank, len);
		MPI_Abort(MPI_COMM_WORLD, 3);
		return -1;
	}
	memset(b->p, MT_POISON, len);
	return 0;
}

static inline void mt_free(struct mt_buf *b)
{
	if (b->mem == MT_MPIMEM)
		MT(MPI_Free_mem(b->base));
	else
		free(b->base);
	b->base = b->p = NULL;
}

/* ---- message sizes ---- */

/*
 * Sizes from min to mt_max: 0 (if min is 0), 1, 3, then powers of two
 * (every power, or every other one when sparse) and a few odd sizes around
 * protocol thresholds, and mt_max itself.  Returns the count.
 */
static inline int mt_sizes(size_t *out, int cap, size_t min, int sparse)
{
	static const size_t odd[] = { 3, 1000, 4097, 65537, (1u << 20) + 7 };
	size_t cand[80];
	int nc = 0, n = 0;

	cand[nc++] = 0;
	cand[nc++] = 1;
	for (size_t s = 2; s <= mt_max && nc < 60; s <<= sparse ? 2 : 1)
		cand[nc++] = s;
	for (size_t i = 0; i < sizeof(odd) / sizeof(odd[0]); i++)
		cand[nc++] = odd[i];
	cand[nc++] = mt_max;
	/* sort, drop duplicates and what is out of range */
	for (int i = 1; i < nc; i++)
		for (int j = i; j > 0 && cand[j - 1] > cand[j]; j--) {
			size_t t = cand[j];

			cand[j] = cand[j - 1];
			cand[j - 1] = t;
		}
	for (int i = 0; i < nc && n < cap; i++)
		if (cand[i] >= min && cand[i] <= mt_max && (n == 0 || out[n - 1] != cand[i]))
			out[n++] = cand[i];
	return n;
}

/* ---- set-up, checks, end ---- */

static void mt_watchdog(int sig)
{
	(void)sig;
	if (write(mt_rank == 0 ? 1 : 2, mt_bail, mt_bail_len) < 0)
		_exit(2);
	_exit(2);
}

static inline void mt_arm(void)
{
	if (!mt_timeout)
		return;
	mt_bail_len = (size_t)snprintf(mt_bail, sizeof(mt_bail),
				       "Bail out! rank %d: check %d took more than %u s\n",
				       mt_rank, mt_n + 1, mt_timeout);
	if (mt_bail_len >= sizeof(mt_bail))
		mt_bail_len = sizeof(mt_bail) - 1;
	alarm(mt_timeout);
}

static inline size_t mt_parse_size(const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 0);

	if (*end == 'k' || *end == 'K')
		v <<= 10, end++;
	else if (*end == 'm' || *end == 'M')
		v <<= 20, end++;
	if (end == s || *end || v == 0 || v > (1ull << 30))
		return 0;
	return (size_t)v;
}

static inline void mt_init(int *argc, char ***argv)
{
	const char *t;

	MPI_Init(argc, argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &mt_rank);
	MPI_Comm_size(MPI_COMM_WORLD, &mt_size);
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	if (*argc > 1) {
		mt_max = mt_parse_size((*argv)[1]);
		if (!mt_max) {
			if (mt_rank == 0)
				printf("Bail out! usage: %s [MAX_SIZE[K|M]]\n", (*argv)[0]);
			MPI_Finalize();
			exit(1);
		}
	}
	if (mt_size < 2) {
		if (mt_rank == 0)
			printf("Bail out! needs 2 or more ranks, has %d\n", mt_size);
		MPI_Finalize();
		exit(1);
	}
	t = getenv("MPITAP_TIMEOUT");
	if (t && atoi(t) > 0) {
		mt_timeout = (unsigned)atoi(t);
		signal(SIGALRM, mt_watchdog);
	}
	if (mt_rank == 0) {
		char ver[MPI_MAX_LIBRARY_VERSION_STRING];
		int len, i;

		MPI_Get_library_version(ver, &len);
		for (i = 0; ver[i] && ver[i] != '\n' && ver[i] != ','; i++)
			if (ver[i] == '\t')
				ver[i] = ' ';
		printf("# %.*s; %d ranks; largest size %zu B\n", i, ver, mt_size, mt_max);
		fflush(stdout);
	}
	mt_reset();
	mt_arm();
}

/*
 * Collective: combine every rank's mt_cur, print one TAP line on rank 0,
 * reset mt_cur.  Returns 1 if the check passed on every rank.
 */
static inline int __attribute__((format(printf, 1, 2)))
mt_check(const char *fmt, ...)
{
	struct mt_res *all = NULL;
	char desc[256];
	va_list ap;
	int lfail, fail = 1;

	va_start(ap, fmt);
	vsnprintf(desc, sizeof(desc), fmt, ap);
	va_end(ap);
	lfail = mt_cur.bad || mt_cur.err || mt_cur.msg[0];
	if (MPI_Allreduce(&lfail, &fail, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD) != MPI_SUCCESS)
		fail = 1;
	mt_n++;
	if (fail) {
		mt_fails++;
		if (mt_rank == 0)
			all = calloc((size_t)mt_size, sizeof(*all));
		MPI_Gather(&mt_cur, (int)sizeof(mt_cur), MPI_BYTE, all,
			   (int)sizeof(mt_cur), MPI_BYTE, 0, MPI_COMM_WORLD);
	}
	if (mt_rank == 0) {
		if (!fail) {
			printf("ok %d - %s\n", mt_n, desc);
		} else if (!all) {
			printf("not ok %d - %s\n", mt_n, desc);
		} else {
			long long first = -1;
			int nbad = 0;

			printf("not ok %d - %s (failed on rank", mt_n, desc);
			for (int r = 0; r < mt_size; r++) {
				struct mt_res *x = &all[r];

				if (!x->bad && !x->err && !x->msg[0])
					continue;
				if (nbad++ < 16)
					printf("%s %d", nbad > 1 ? "," : "", r);
				if (first < 0 && x->first >= 0)
					first = x->first;
			}
			if (nbad > 16)
				printf(", ... (%d ranks)", nbad);
			if (first >= 0)
				printf("; first bad offset %lld", first);
			printf(")\n");
			for (int r = 0, shown = 0; r < mt_size && shown < 16; r++) {
				struct mt_res *x = &all[r];

				if (!x->bad && !x->err && !x->msg[0])
					continue;
				shown++;
				x->msg[MT_MSGLEN - 1] = 0;
				printf("# rank %d: %lld bad", r, x->bad);
				if (x->first >= 0)
					printf(", first at offset %lld", x->first);
				if (x->err)
					printf(", %lld MPI errors", x->err);
				if (x->msg[0])
					printf("; %s", x->msg);
				printf("\n");
			}
		}
		fflush(stdout);
	}
	free(all);
	mt_reset();
	mt_arm();
	return !fail;
}

/* Collective: an "ok N # SKIP reason" line instead of a check. */
static inline void __attribute__((format(printf, 1, 2)))
mt_skip(const char *fmt, ...)
{
	va_list ap;

	mt_n++;
	if (mt_rank == 0) {
		printf("ok %d # SKIP ", mt_n);
		va_start(ap, fmt);
		vprintf(fmt, ap);
		va_end(ap);
		printf("\n");
		fflush(stdout);
	}
	mt_reset();
	mt_arm();
}

/* Windows report errors too instead of aborting. */
static inline void mt_win_errors(MPI_Win win)
{
	MT(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
}

/* Print the plan, finalize; returns the exit status for main(). */
static inline int mt_finish(void)
{
	int fails = mt_fails;

	alarm(0);
	if (mt_rank == 0) {
		printf("1..%d\n", mt_n);
		if (fails)
			printf("# %d of %d checks failed\n", fails, mt_n);
		fflush(stdout);
	}
	MPI_Finalize();
	return fails ? 1 : 0;
}

#endif /* UZ_MPITAP_H */
