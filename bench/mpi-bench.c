// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * mpi-bench: MPI latency and bandwidth between rank 0 and rank 1, for
 * bench/mpi (see bench/README.md).  MPI-3.1 only.
 *
 *   mpirun -np 2 mpi-bench [OPTIONS] [TEST...]
 *
 * TEST is pingpong, bw, put, get, p2p (pingpong and bw), rma (put and get)
 * or all (the default).  For each message size, from the smallest up, the
 * chosen tests run in the order below, then rank 0 prints "done SIZE".
 *
 *   pingpong  MPI_Send/MPI_Recv ping-pong; rank 1 echoes.  Each round trip
 *             is timed on its own; one-way latency is half of it.
 *   bw        unidirectional bandwidth: W MPI_Isend in flight (rank 1 has
 *             W MPI_Irecv posted, into W distinct buffers), MPI_Waitall,
 *             then a zero-byte ack from rank 1; W = -w (16), fewer for
 *             large messages so that one round moves at most 16 MiB
 *             (and at least 2 messages).
 *   put, get  one-sided, passive target, on an MPI_Win_allocate window at
 *             rank 1, inside one MPI_Win_lock(MPI_LOCK_SHARED) epoch per
 *             size:
 *             put_lat / get_lat: one MPI_Put / MPI_Get then MPI_Win_flush,
 *               timed one by one (a whole round trip: not halved);
 *             put_bw / get_bw: W operations to / from distinct buffers,
 *               then one MPI_Win_flush.
 *
 * Every test runs a warm-up (at most 10 latency or 2 bandwidth rounds, at
 * most a fifth of the time budget), then measures until it has done -n
 * (latency) or -N (bandwidth) rounds or has spent -t seconds, whichever
 * comes first, and always at least one round.  A watchdog ends the job
 * when one test at one size takes longer than -T seconds: rank 0 prints
 * "timeout TEST SIZE" and exits with status 124; so does "timeout startup
 * 0" when the ranks' first message or MPI_Win_allocate takes longer than
 * -T seconds plus a minute.
 *
 * Output (rank 0, stdout, one line per result; '#' lines are comments):
 *   pingpong SIZE MIN_US MED_US P99_US ROUNDS     one way (half round trip)
 *   bw       SIZE MBPS ROUNDS                     MB/s = 10^6 bytes/s
 *   put_lat  SIZE MIN_US MED_US P99_US ROUNDS     put + flush
 *   put_bw   SIZE MBPS ROUNDS
 *   get_lat  SIZE MIN_US MED_US P99_US ROUNDS     get + flush
 *   get_bw   SIZE MBPS ROUNDS
 *   done     SIZE
 *   bad      TEST SIZE                            the data check failed
 *   timeout  TEST SIZE                            the watchdog ended the job
 * The data check is cheap (the first and last byte of each message carry a
 * pattern that the other side checks after the test), so a transport that
 * moves nothing cannot post a figure.  Exit status 3 if a check failed.
 *
 * Options: -m MIN -M MAX (bytes, K/M suffix; default 1 and 4M), -f FACTOR
 * (size step, default 2), -t SECONDS (time budget per test and size,
 * default 1.0), -T SECONDS (watchdog, default 4*t + 30), -n ROUNDS (latency,
 * default 1000), -N ROUNDS (bandwidth, default 200), -w WINDOW (16).
 * Ranks beyond 1 only wait.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_INFLIGHT	(16u << 20)	/* bytes per bandwidth round, at most */
#define WARM_LAT	10
#define WARM_BW		2

enum { TAG_DATA = 1, TAG_STOP, TAG_ACK, TAG_NAME };

enum test {
	T_PINGPONG, T_BW, T_PUT_LAT, T_PUT_BW, T_GET_LAT, T_GET_BW, T_COUNT
};

static const char *const test_name[T_COUNT] = {
	"pingpong", "bw", "put_lat", "put_bw", "get_lat", "get_bw",
};

struct opts {
	size_t min, max;
	unsigned long factor;
	double budget;		/* seconds per test and size */
	unsigned watchdog;	/* seconds per test and size, hard */
	long lat_rounds, bw_rounds;
	int window;
	int on[T_COUNT];
};

struct ctx {
	MPI_Comm comm;		/* ranks 0 and 1 */
	int rank, peer;
	size_t size;
	int w;			/* messages per bandwidth round */
	unsigned char *sbuf;	/* one message */
	unsigned char *rbuf;	/* W messages */
	unsigned char *obuf;	/* origin buffer of one-sided ops: W messages */
	unsigned char *wbuf;	/* this rank's window memory */
	MPI_Win win;
	MPI_Request *reqs;
	MPI_Status *stats;
};

static char bail_msg[96];
static size_t bail_len;
static int any_bad;		/* a data check failed */

static void on_alarm(int sig)
{
	ssize_t r;

	(void)sig;
	r = write(STDOUT_FILENO, bail_msg, bail_len);
	(void)r;
	_exit(124);
}

/* Arm the watchdog for one test at one size (rank 0 only). */
static void watch(unsigned seconds, const char *what, size_t size)
{
	int n = snprintf(bail_msg, sizeof(bail_msg), "timeout %s %zu\n",
			 what, size);

	bail_len = n > 0 && (size_t)n < sizeof(bail_msg) ? (size_t)n : 0;
	alarm(seconds);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: mpi-bench [-m MIN] [-M MAX] [-f FACTOR] [-t S] [-T S] "
		"[-n ROUNDS] [-N ROUNDS] [-w WINDOW]\n"
		"                 [pingpong|bw|put|get|p2p|rma|all ...]\n");
}

static int parse_size(const char *s, size_t *v)
{
	char *end;
	unsigned long long n = strtoull(s, &end, 0);

	if (end == s)
		return -1;
	if (*end == 'K' || *end == 'k')
		n <<= 10, end++;
	else if (*end == 'M' || *end == 'm')
		n <<= 20, end++;
	if (*end || n < 1 || n > (1ull << 30))
		return -1;
	*v = (size_t)n;
	return 0;
}

static int parse_args(int argc, char **argv, struct opts *o)
{
	int c, any = 0;
	char *end;

	o->min = 1;
	o->max = 4u << 20;
	o->factor = 2;
	o->budget = 1.0;
	o->watchdog = 0;
	o->lat_rounds = 1000;
	o->bw_rounds = 200;
	o->window = 16;
	while ((c = getopt(argc, argv, "m:M:f:t:T:n:N:w:")) != -1) {
		switch (c) {
		case 'm':
			if (parse_size(optarg, &o->min))
				return -1;
			break;
		case 'M':
			if (parse_size(optarg, &o->max))
				return -1;
			break;
		case 'f':
			o->factor = strtoul(optarg, &end, 0);
			if (*end || o->factor < 2)
				return -1;
			break;
		case 't':
			o->budget = strtod(optarg, &end);
			if (*end || !(o->budget > 0 && o->budget <= 600))
				return -1;
			break;
		case 'T':
			o->watchdog = (unsigned)strtoul(optarg, &end, 0);
			if (*end || o->watchdog < 1)
				return -1;
			break;
		case 'n':
			o->lat_rounds = strtol(optarg, &end, 0);
			if (*end || o->lat_rounds < 1 || o->lat_rounds > 10000000)
				return -1;
			break;
		case 'N':
			o->bw_rounds = strtol(optarg, &end, 0);
			if (*end || o->bw_rounds < 1 || o->bw_rounds > 10000000)
				return -1;
			break;
		case 'w':
			o->window = (int)strtol(optarg, &end, 0);
			if (*end || o->window < 1 || o->window > 1024)
				return -1;
			break;
		default:
			return -1;
		}
	}
	if (o->min > o->max)
		return -1;
	if (!o->watchdog)
		o->watchdog = (unsigned)(4 * o->budget) + 30;
	for (int i = optind; i < argc; i++) {
		const char *a = argv[i];
		int all = !strcmp(a, "all");
		int p2p = all || !strcmp(a, "p2p");
		int rma = all || !strcmp(a, "rma");

		if (!p2p && !rma && strcmp(a, "pingpong") && strcmp(a, "bw") &&
		    strcmp(a, "put") && strcmp(a, "get"))
			return -1;
		o->on[T_PINGPONG] |= p2p || !strcmp(a, "pingpong");
		o->on[T_BW] |= p2p || !strcmp(a, "bw");
		o->on[T_PUT_LAT] |= rma || !strcmp(a, "put");
		o->on[T_PUT_BW] |= rma || !strcmp(a, "put");
		o->on[T_GET_LAT] |= rma || !strcmp(a, "get");
		o->on[T_GET_BW] |= rma || !strcmp(a, "get");
		any = 1;
	}
	if (!any)
		for (int t = 0; t < T_COUNT; t++)
			o->on[t] = 1;
	return 0;
}

static size_t next_size(const struct opts *o, size_t s)
{
	return s > o->max / o->factor ? o->max + 1 : s * o->factor;
}

/* Messages per bandwidth round for one size. */
static int window_for(const struct opts *o, size_t size)
{
	size_t w = MAX_INFLIGHT / size;

	if (w < 2)
		w = 2;
	if (w > (size_t)o->window)
		w = (size_t)o->window;
	return (int)w;
}

/* A pattern byte for one size and test, never 0 (buffers start at 0). */
static unsigned char pattern(size_t size, enum test t)
{
	return (unsigned char)((size * 31 + (size_t)t * 7 + 0x5a) | 1);
}

/* The first and last byte of each of n messages of size bytes. */
static int check(const unsigned char *buf, size_t size, int n, unsigned char pat)
{
	int bad = 0;

	for (int i = 0; i < n; i++)
		bad += buf[(size_t)i * size] != pat ||
		       buf[(size_t)i * size + size - 1] != pat;
	return bad;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/*
 * Rounds of op until max rounds are done or budget seconds have passed,
 * at least one; the time of each goes to times[].  Returns the count.
 */
static long rounds(double budget, long max, double *times,
		   void (*op)(struct ctx *), struct ctx *c)
{
	double start = MPI_Wtime(), t0, t1 = start;
	long n = 0;

	while (n < max && (n == 0 || t1 - start < budget)) {
		t0 = MPI_Wtime();
		op(c);
		t1 = MPI_Wtime();
		times[n++] = t1 - t0;
	}
	return n;
}

/* Warm-up, then the measured rounds; their times in times[]. */
static long measure(const struct opts *o, int lat, double *times,
		    void (*op)(struct ctx *), struct ctx *c)
{
	long max = lat ? o->lat_rounds : o->bw_rounds;
	long warm = lat ? WARM_LAT : WARM_BW;

	rounds(o->budget / 5, warm < max ? warm : max, times, op, c);
	return rounds(o->budget, max, times, op, c);
}

static void print_lat(enum test t, size_t size, double *times, long n, double scale)
{
	double med;
	long p99 = (long)(0.99 * (double)n + 0.999999) - 1;

	qsort(times, (size_t)n, sizeof(times[0]), cmp_double);
	med = n % 2 ? times[n / 2] : (times[n / 2 - 1] + times[n / 2]) / 2;
	if (p99 < 0)
		p99 = 0;
	printf("%-8s %zu %.3f %.3f %.3f %ld\n", test_name[t], size,
	       times[0] * scale * 1e6, med * scale * 1e6,
	       times[p99] * scale * 1e6, n);
}

static void print_bw(enum test t, size_t size, int w, const double *times, long n)
{
	double sum = 0;

	for (long i = 0; i < n; i++)
		sum += times[i];
	printf("%-8s %zu %.3f %ld\n", test_name[t], size,
	       sum > 0 ? (double)size * w * (double)n / sum / 1e6 : 0.0, n);
}

/* The data checks of both ranks; rank 0 reports, and disarms the watchdog. */
static void finish(struct ctx *c, enum test t, int bad)
{
	MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, c->comm);
	if (c->rank == 0) {
		alarm(0);
		if (bad)
			printf("bad      %s %zu\n", test_name[t], c->size);
		fflush(stdout);
	}
	any_bad |= bad;
}

/* ---- two-sided ---- */

static void pingpong_op(struct ctx *c)
{
	MPI_Send(c->sbuf, (int)c->size, MPI_BYTE, c->peer, TAG_DATA, c->comm);
	MPI_Recv(c->rbuf, (int)c->size, MPI_BYTE, c->peer, TAG_DATA, c->comm,
		 MPI_STATUS_IGNORE);
}

static void bw_op(struct ctx *c)
{
	for (int i = 0; i < c->w; i++)
		MPI_Isend(c->sbuf, (int)c->size, MPI_BYTE, c->peer, TAG_DATA,
			  c->comm, &c->reqs[i]);
	MPI_Waitall(c->w, c->reqs, MPI_STATUSES_IGNORE);
	MPI_Recv(NULL, 0, MPI_BYTE, c->peer, TAG_ACK, c->comm, MPI_STATUS_IGNORE);
}

/* Rank 1's side: echo (pingpong) or receive and ack (bw) until rank 0
 * sends TAG_STOP messages. */
static void serve(struct ctx *c, enum test t)
{
	int n = t == T_BW ? c->w : 1;

	for (;;) {
		for (int i = 0; i < n; i++)
			MPI_Irecv(c->rbuf + (size_t)i * c->size, (int)c->size,
				  MPI_BYTE, 0, MPI_ANY_TAG, c->comm, &c->reqs[i]);
		MPI_Waitall(n, c->reqs, c->stats);
		if (c->stats[0].MPI_TAG == TAG_STOP)
			break;
		if (t == T_PINGPONG)
			MPI_Send(c->rbuf, (int)c->size, MPI_BYTE, 0, TAG_DATA, c->comm);
		else
			MPI_Send(NULL, 0, MPI_BYTE, 0, TAG_ACK, c->comm);
	}
}

static void two_sided(const struct opts *o, struct ctx *c, enum test t, double *times)
{
	unsigned char pat = pattern(c->size, t);
	int n = t == T_BW ? c->w : 1, bad = 0;
	long r;

	if (c->rank == 0) {
		watch(o->watchdog, test_name[t], c->size);
		memset(c->sbuf, pat, c->size);
		memset(c->rbuf, 0, c->size);
	} else {
		memset(c->rbuf, 0, (size_t)n * c->size);
	}
	MPI_Barrier(c->comm);
	if (c->rank == 0) {
		r = measure(o, t == T_PINGPONG, times,
			    t == T_PINGPONG ? pingpong_op : bw_op, c);
		for (int i = 0; i < n; i++)
			MPI_Send(NULL, 0, MPI_BYTE, c->peer, TAG_STOP, c->comm);
		/* pingpong: the echo came back; bw: checked by rank 1 */
		if (t == T_PINGPONG)
			bad = check(c->rbuf, c->size, 1, pat);
		if (t == T_PINGPONG)
			print_lat(t, c->size, times, r, 0.5);
		else
			print_bw(t, c->size, c->w, times, r);
	} else {
		serve(c, t);
		if (t == T_BW)
			bad = check(c->rbuf, c->size, n, pat);
	}
	finish(c, t, bad);
}

/* ---- one-sided ---- */

static void put_lat_op(struct ctx *c)
{
	MPI_Put(c->obuf, (int)c->size, MPI_BYTE, c->peer, 0, (int)c->size,
		MPI_BYTE, c->win);
	MPI_Win_flush(c->peer, c->win);
}

static void put_bw_op(struct ctx *c)
{
	for (int i = 0; i < c->w; i++)
		MPI_Put(c->obuf, (int)c->size, MPI_BYTE, c->peer,
			(MPI_Aint)((size_t)i * c->size), (int)c->size, MPI_BYTE,
			c->win);
	MPI_Win_flush(c->peer, c->win);
}

static void get_lat_op(struct ctx *c)
{
	MPI_Get(c->obuf, (int)c->size, MPI_BYTE, c->peer, 0, (int)c->size,
		MPI_BYTE, c->win);
	MPI_Win_flush(c->peer, c->win);
}

static void get_bw_op(struct ctx *c)
{
	for (int i = 0; i < c->w; i++)
		MPI_Get(c->obuf + (size_t)i * c->size, (int)c->size, MPI_BYTE,
			c->peer, 0, (int)c->size, MPI_BYTE, c->win);
	MPI_Win_flush(c->peer, c->win);
}

/*
 * Rank 0 is the origin, rank 1 the target, which only takes part in the
 * barriers around the measurement (and touches its own window memory
 * under a lock of its own before and after).
 */
static void one_sided(const struct opts *o, struct ctx *c, enum test t, double *times)
{
	unsigned char pat = pattern(c->size, t);
	int put = t == T_PUT_LAT || t == T_PUT_BW;
	int lat = t == T_PUT_LAT || t == T_GET_LAT;
	int n = lat ? 1 : c->w, bad = 0;
	void (*op)(struct ctx *);
	long r;

	if (c->rank == 0) {
		watch(o->watchdog, test_name[t], c->size);
		memset(c->obuf, put ? pat : 0, (size_t)n * c->size);
	} else {
		MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, c->win);
		if (put)
			memset(c->wbuf, 0, (size_t)n * c->size);
		else
			memset(c->wbuf, pat, c->size);
		MPI_Win_unlock(1, c->win);
	}
	MPI_Barrier(c->comm);
	if (c->rank == 0) {
		op = t == T_PUT_LAT ? put_lat_op : t == T_PUT_BW ? put_bw_op :
		     t == T_GET_LAT ? get_lat_op : get_bw_op;
		MPI_Win_lock(MPI_LOCK_SHARED, c->peer, 0, c->win);
		r = measure(o, lat, times, op, c);
		MPI_Win_unlock(c->peer, c->win);
		if (!put)
			bad = check(c->obuf, c->size, n, pat);
		if (lat)
			print_lat(t, c->size, times, r, 1.0);
		else
			print_bw(t, c->size, c->w, times, r);
	}
	MPI_Barrier(c->comm);
	if (c->rank == 1 && put) {
		MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, c->win);
		bad = check(c->wbuf, c->size, n, pat);
		MPI_Win_unlock(1, c->win);
	}
	finish(c, t, bad);
}

static void *alloc(size_t n)
{
	void *p = NULL;

	if (MPI_Alloc_mem((MPI_Aint)n, MPI_INFO_NULL, &p) != MPI_SUCCESS || !p) {
		fprintf(stderr, "mpi-bench: cannot allocate %zu bytes\n", n);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	memset(p, 0, n);
	return p;
}

int main(int argc, char **argv)
{
	struct opts o;
	struct ctx c;
	int wrank, wsize, any_rma;
	size_t bufsize = 0;
	double *times;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
	MPI_Comm_size(MPI_COMM_WORLD, &wsize);
	memset(&o, 0, sizeof(o));
	if (parse_args(argc, argv, &o)) {
		if (wrank == 0)
			usage();
		MPI_Finalize();
		return 2;
	}
	if (wsize < 2) {
		if (wrank == 0)
			fprintf(stderr, "mpi-bench: needs 2 ranks\n");
		MPI_Finalize();
		return 2;
	}
	memset(&c, 0, sizeof(c));
	MPI_Comm_split(MPI_COMM_WORLD, wrank < 2 ? 0 : MPI_UNDEFINED, wrank, &c.comm);
	if (c.comm == MPI_COMM_NULL) {
		MPI_Finalize();
		return 0;
	}
	c.rank = wrank;
	c.peer = 1 - wrank;
	signal(SIGALRM, on_alarm);

	for (size_t s = o.min; s <= o.max; s = next_size(&o, s))
		if ((size_t)window_for(&o, s) * s > bufsize)
			bufsize = (size_t)window_for(&o, s) * s;
	c.sbuf = alloc(o.max);
	c.rbuf = alloc(bufsize);
	c.obuf = alloc(bufsize);
	c.reqs = calloc((size_t)o.window, sizeof(*c.reqs));
	c.stats = calloc((size_t)o.window, sizeof(*c.stats));
	times = calloc((size_t)(o.lat_rounds > o.bw_rounds ? o.lat_rounds : o.bw_rounds),
		       sizeof(*times));
	if (!c.reqs || !c.stats || !times)
		MPI_Abort(MPI_COMM_WORLD, 1);

	if (c.rank == 0) {
		char lib[MPI_MAX_LIBRARY_VERSION_STRING], me[MPI_MAX_PROCESSOR_NAME];
		char peer[MPI_MAX_PROCESSOR_NAME];
		int len;

		MPI_Get_library_version(lib, &len);
		lib[strcspn(lib, "\n")] = 0;
		MPI_Get_processor_name(me, &len);
		/*
		 * The first message between the ranks: a transport that cannot
		 * connect hangs here (or in MPI_Win_allocate).  A minute more
		 * than the watchdog, so that the transport's own timeout (UCX's
		 * UD: 30 s) has its say first.
		 */
		watch(o.watchdog + 60, "startup", 0);
		MPI_Recv(peer, sizeof(peer), MPI_CHAR, 1, TAG_NAME, c.comm,
			 MPI_STATUS_IGNORE);
		printf("# mpi-bench: %s\n", lib);
		printf("# rank 0 on %s, rank 1 on %s; sizes %zu..%zu x%lu; "
		       "%.2f s, %ld/%ld rounds per test and size; window %d\n",
		       me, peer, o.min, o.max, o.factor, o.budget, o.lat_rounds,
		       o.bw_rounds, o.window);
		printf("# pingpong SIZE MIN_US MED_US P99_US ROUNDS (one way); "
		       "bw SIZE MBPS ROUNDS; put_lat/get_lat SIZE MIN_US MED_US "
		       "P99_US ROUNDS (op + flush); put_bw/get_bw SIZE MBPS ROUNDS\n");
		fflush(stdout);
	} else {
		char me[MPI_MAX_PROCESSOR_NAME];
		int len;

		MPI_Get_processor_name(me, &len);
		MPI_Send(me, len + 1, MPI_CHAR, 0, TAG_NAME, c.comm);
	}

	any_rma = o.on[T_PUT_LAT] || o.on[T_PUT_BW] || o.on[T_GET_LAT] || o.on[T_GET_BW];
	if (any_rma)
		MPI_Win_allocate((MPI_Aint)bufsize, 1, MPI_INFO_NULL, c.comm,
				 &c.wbuf, &c.win);
	if (c.rank == 0)
		alarm(0);

	for (size_t s = o.min; s <= o.max; s = next_size(&o, s)) {
		c.size = s;
		c.w = window_for(&o, s);
		for (int t = 0; t < T_COUNT; t++) {
			if (!o.on[t])
				continue;
			if (t == T_PINGPONG || t == T_BW)
				two_sided(&o, &c, (enum test)t, times);
			else
				one_sided(&o, &c, (enum test)t, times);
		}
		if (c.rank == 0) {
			printf("done     %zu\n", s);
			fflush(stdout);
		}
	}

	if (any_rma)
		MPI_Win_free(&c.win);
	MPI_Free_mem(c.sbuf);
	MPI_Free_mem(c.rbuf);
	MPI_Free_mem(c.obuf);
	free(c.reqs);
	free(c.stats);
	free(times);
	MPI_Comm_free(&c.comm);
	MPI_Finalize();
	return any_bad ? 3 : 0;
}
