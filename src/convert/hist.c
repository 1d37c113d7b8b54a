// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Statistics: log histograms of waits and holds, 1/8 octave (see stats.h), and their quantiles.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stdlib.h>

#include "stats-priv.h"


static int hbucket(uint64_t v)
{
	int e;

	if (v < 16)
		return (int)v;
	e = 63 - __builtin_clzll(v);
	return 16 + (e - 4) * 8 + (int)((v >> (e - 3)) & 7);
}

/* The largest value of bucket @b. */
static uint64_t hvalue(int b)
{
	int e, sub;

	if (b < 16)
		return (uint64_t)b;
	e = (b - 16) / 8 + 4;
	sub = (b - 16) % 8;
	if (e == 63 && sub == 7)
		return UINT64_MAX;
	return ((uint64_t)(8 + sub + 1) << (e - 3)) - 1;
}

int stats_hist_add(struct stats_hist *h, uint64_t v)
{
	if (!h->b) {
		h->b = calloc(STATS_HBUCKETS, sizeof(*h->b));
		if (!h->b)
			return -1;
	}
	h->b[hbucket(v)]++;
	h->n++;
	if (v > h->max)
		h->max = v;
	return 0;
}

/* The value at quantile @q (0..1): the top of its bucket, never above the maximum seen. */
uint64_t stats_hist_q(const struct stats_hist *h, double q)
{
	uint64_t rank, seen = 0, v;
	int b;

	if (!h->n || !h->b)
		return 0;
	rank = (uint64_t)(q * (double)h->n + 0.999999);
	if (rank < 1)
		rank = 1;
	for (b = 0; b < STATS_HBUCKETS; b++) {
		seen += h->b[b];
		if (seen >= rank) {
			v = hvalue(b);
			return v > h->max ? h->max : v;
		}
	}
	return h->max;
}
