// SPDX-License-Identifier: LGPL-2.1-or-later
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "clock.h"

static uint64_t ns_of(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t gil_clock_now(void)
{
	return ns_of(GIL_CLOCK);
}

/* other - recording clock, bracketing the read of @other between two reads of ours. */
static int64_t offset_of(clockid_t other)
{
	uint64_t a, b, o, best_span = UINT64_MAX;
	int64_t best = 0;
	int i;

	for (i = 0; i < 5; i++) {
		a = ns_of(GIL_CLOCK);
		o = ns_of(other);
		b = ns_of(GIL_CLOCK);
		if (b - a < best_span) {
			best_span = b - a;
			best = (int64_t)(o - (a + (b - a) / 2));
		}
	}
	return best;
}

void gil_clock_offsets_sample(struct gil_clock_offsets *off)
{
	off->monotonic_ns = offset_of(CLOCK_MONOTONIC);
	off->realtime_ns = offset_of(CLOCK_REALTIME);
}
