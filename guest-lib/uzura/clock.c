// SPDX-License-Identifier: GPL-2.0-or-later OR BSD-2-Clause
/*
 * uzura provider: the device clock (UZ_CAP_TIMESTAMP, device 0.15).
 *
 * The device counts nanoseconds of the machine's virtual clock; it reads
 * at UZ_DB_CLOCK in the context's doorbell page and times the CQEs of CQs
 * created with completion timestamps.  ibv_query_rt_values_ex returns it
 * as raw_clock, a normalised timespec (its nanoseconds are the ticks);
 * ibv_wc_read_completion_wallclock_ns adds the context's offset from
 * CLOCK_REALTIME, measured when the context is opened and again by each
 * ibv_query_rt_values_ex.
 */
#include <errno.h>
#include <time.h>

#include "uzura.h"

#define UZ_NSEC_PER_SEC		1000000000ull

/* The device clock, in ns: one load, or high, low and high again. */
uint64_t uzura_read_clock(struct uzura_context *ctx)
{
	const uint8_t *clk = (const uint8_t *)ctx->db_page + UZ_DB_CLOCK;
#if SIZEOF_LONG == 8
	return mmio_read64(clk);
#else
	uint32_t hi, lo, hi1;

	/* The low word wrapped between the loads if the high one moved. */
	hi = mmio_read32(clk + 4);
	for (;;) {
		lo = mmio_read32(clk);
		hi1 = mmio_read32(clk + 4);
		if (hi1 == hi)
			break;
		hi = hi1;
	}
	return (uint64_t)hi << 32 | lo;
#endif
}

static uint64_t uz_timespec_ns(const struct timespec *ts)
{
	return (uint64_t)ts->tv_sec * UZ_NSEC_PER_SEC + ts->tv_nsec;
}

/*
 * Measure the offset of CLOCK_REALTIME from the device clock, and return
 * the device clock read for it: the clock is read between two realtime
 * readings and taken to stand at their middle.  A device load traps to
 * the hypervisor (a few µs); the error is at most half the interval.
 */
uint64_t uzura_clock_sync(struct uzura_context *ctx)
{
	struct timespec before, after;
	uint64_t dev, real;

	clock_gettime(CLOCK_REALTIME, &before);
	dev = uzura_read_clock(ctx);
	clock_gettime(CLOCK_REALTIME, &after);
	/* Signed: realtime may have stepped back in between. */
	real = uz_timespec_ns(&before) +
	       (int64_t)(uz_timespec_ns(&after) - uz_timespec_ns(&before)) / 2;
	atomic_store_explicit(&ctx->clock_offset, (int64_t)(real - dev),
			      memory_order_relaxed);
	return dev;
}

int uzura_query_rt_values(struct ibv_context *context,
			  struct ibv_values_ex *values)
{
	struct uzura_context *ctx = to_uctx(context);
	uint32_t comp_mask = 0;
	uint64_t ns;

	if (!(ctx->caps & UZ_CAP_TIMESTAMP))
		return EOPNOTSUPP;
	if (!check_comp_mask(values->comp_mask, IBV_VALUES_MASK_RAW_CLOCK))
		return EINVAL;
	if (values->comp_mask & IBV_VALUES_MASK_RAW_CLOCK) {
		/* Also a fresh offset for the wallclock of completions. */
		ns = uzura_clock_sync(ctx);
		values->raw_clock.tv_sec = ns / UZ_NSEC_PER_SEC;
		values->raw_clock.tv_nsec = ns % UZ_NSEC_PER_SEC;
		comp_mask |= IBV_VALUES_MASK_RAW_CLOCK;
	}
	values->comp_mask = comp_mask;
	return 0;
}
