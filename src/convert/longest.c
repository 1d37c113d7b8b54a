// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Statistics: the STATS_TOP longest holds of all inputs, kept in a min-heap by duration.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stdlib.h>
#include <string.h>

#include "stats-priv.h"


static void longest_sift(struct stats *s, size_t i)
{
	struct stats_long_hold tmp;
	size_t c;

	for (;;) {
		c = 2 * i + 1;
		if (c >= s->nr_longest)
			return;
		if (c + 1 < s->nr_longest && s->longest[c + 1].dur < s->longest[c].dur)
			c++;
		if (s->longest[i].dur <= s->longest[c].dur)
			return;
		tmp = s->longest[i];
		s->longest[i] = s->longest[c];
		s->longest[c] = tmp;
		i = c;
	}
}

void stats_longest_add(struct stats *s, const struct stats_long_hold *h)
{
	struct stats_long_hold tmp;
	size_t i, parent;

	if (s->nr_longest < STATS_TOP) {
		i = s->nr_longest++;
		s->longest[i] = *h;
		while (i) {
			parent = (i - 1) / 2;
			if (s->longest[parent].dur <= s->longest[i].dur)
				break;
			tmp = s->longest[parent];
			s->longest[parent] = s->longest[i];
			s->longest[i] = tmp;
			i = parent;
		}
		return;
	}
	if (h->dur <= s->longest[0].dur)
		return;
	s->longest[0] = *h;
	longest_sift(s, 0);
}

static int cmp_long(const void *a, const void *b)
{
	const struct stats_long_hold *x = a, *y = b;

	if (x->dur != y->dur)
		return x->dur < y->dur ? 1 : -1;
	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

size_t stats_longest(const struct stats *s, struct stats_long_hold *out)
{
	memcpy(out, s->longest, s->nr_longest * sizeof(*out));
	qsort(out, s->nr_longest, sizeof(*out), cmp_long);
	return s->nr_longest;
}
