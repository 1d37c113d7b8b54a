/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The recording clock (CLOCK_MONOTONIC_RAW, msprof's host clock) and its offsets to the others. */
#ifndef GIL_CLOCK_H
#define GIL_CLOCK_H

#include <stdint.h>
#include <time.h>

#define GIL_CLOCK CLOCK_MONOTONIC_RAW
#define GIL_CLOCK_NAME "CLOCK_MONOTONIC_RAW"

struct gil_clock_offsets {
	int64_t monotonic_ns; /* CLOCK_MONOTONIC - recording clock */
	int64_t realtime_ns; /* CLOCK_REALTIME - recording clock */
};

/** gil_clock_now - the recording clock, in ns. */
uint64_t gil_clock_now(void);

/** gil_clock_offsets_sample - offsets, from the tightest of a few bracketed readings. */
void gil_clock_offsets_sample(struct gil_clock_offsets *off);

#endif /* GIL_CLOCK_H */
