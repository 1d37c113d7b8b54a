// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Time bins (bins.h): utilization and waiters over time, in STATS_BINS bins that double their
 * width as the recording goes on. Times are 128-bit here: damaged times near 2^62 on either side
 * must not overflow.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>

#include "bins.h"


bool bins_too_narrow(int64_t origin, int64_t width, int64_t end)
{
	return (__int128)end - origin > (__int128)width * STATS_BINS;
}

void bins_halve(int64_t *v)
{
	int i;

	for (i = 0; i < STATS_BINS / 2; i++)
		v[i] = v[2 * i] + v[2 * i + 1];
	memset(v + STATS_BINS / 2, 0, (STATS_BINS / 2) * sizeof(*v));
}

void bins_add(int64_t origin, int64_t width, int64_t *v, int64_t ts, int64_t dur)
{
	int64_t end = ts + dur, lo, hi;
	int64_t i;

	if (ts < origin)
		ts = origin;
	if (end <= ts)
		return;
	for (i = (int64_t)(((__int128)ts - origin) / width); i < STATS_BINS; i++) {
		lo = origin + i * width;
		hi = lo + width;
		if (lo >= end)
			break;
		v[i] += (end < hi ? end : hi) - (ts > lo ? ts : lo);
	}
}

size_t bins_used(int64_t origin, int64_t width, int64_t hi)
{
	__int128 span = (__int128)hi - origin, n;

	if (width <= 0 || span <= 0)
		return 0;
	n = span / width + (span % width != 0);
	return n > STATS_BINS ? STATS_BINS : (size_t)n;
}
