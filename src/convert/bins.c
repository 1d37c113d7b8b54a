// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Statistics: utilization and waiters over time, in STATS_BINS bins per process (and per thread)
 * that double their width as the recording goes on.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>

#include "stats-priv.h"


static void halve(int64_t *v)
{
	int i;

	for (i = 0; i < STATS_BINS / 2; i++)
		v[i] = v[2 * i] + v[2 * i + 1];
	memset(v + STATS_BINS / 2, 0, (STATS_BINS / 2) * sizeof(*v));
}

/* Double the bin width until @end fits. */
void stats_bins_fit(struct stats_proc *p, int64_t end)
{
	size_t i;

	/* 128 bits: damaged times near 2^62 on either side must not overflow */
	while ((__int128)end - p->origin > (__int128)p->width * STATS_BINS) {
		halve(p->util);
		halve(p->waiters);
		for (i = 0; i < p->nr_threads; i++) {
			if (p->threads[i].bins) {
				halve(p->threads[i].bins);
				halve(p->threads[i].bins + STATS_BINS);
			}
		}
		p->width *= 2;
	}
}

/* Spread [@ts, @ts + @dur) over the bins of @v. */
void stats_bins_add(const struct stats_proc *p, int64_t *v, int64_t ts, int64_t dur)
{
	int64_t end = ts + dur, lo, hi;
	int64_t i;

	if (ts < p->origin)
		ts = p->origin;
	if (end <= ts)
		return;
	for (i = (int64_t)(((__int128)ts - p->origin) / p->width); i < STATS_BINS; i++) {
		lo = p->origin + i * p->width;
		hi = lo + p->width;
		if (lo >= end)
			break;
		v[i] += (end < hi ? end : hi) - (ts > lo ? ts : lo);
	}
}

size_t stats_bins_used(const struct stats_proc *p)
{
	int64_t n, span;

	if (!p->bins_set || !p->have_hi || p->width <= 0)
		return 0;
	span = stats_span(p->origin, p->hi);
	n = span / p->width + (span % p->width != 0);
	return n < 0 ? 0 : n > STATS_BINS ? STATS_BINS : (size_t)n;
}
