// SPDX-License-Identifier: LGPL-2.1-or-later
/* The reorder queue (ordered.h): pushed in ring order, flushed in time order. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <stdlib.h>

#include "common/util.h"
#include "ordered.h"

int gil_ordered_push(struct gil_ordered *o, const struct gil_qent *e)
{
	if (gil_grow(&o->q, &o->cap, o->nq + 1, sizeof(*o->q)) < 0)
		return -1;
	o->q[o->nq] = *e;
	o->q[o->nq++].seq = o->seq++;
	return 0;
}

static int cmp_qent(const void *a, const void *b)
{
	const struct gil_qent *x = a, *y = b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/*
 * Sort the queue: it is a few runs already in time order (what was left from the last round,
 * then each CPU's ring as drained), so merge the runs (O(n log runs)) rather than qsort.
 */
static int sort_queue(struct gil_ordered *rec)
{
	size_t *runs = NULL, nr = 0, cap = 0, i, r, a, b, o;
	struct gil_qent *tmp, *src = rec->q, *dst;

	tmp = malloc(rec->nq * sizeof(*tmp));
	if (gil_grow(&runs, &cap, 16 + 1, sizeof(*runs)) < 0 || !tmp) {
		free(runs);
		free(tmp);
		qsort(rec->q, rec->nq, sizeof(*rec->q), cmp_qent);
		return 0;
	}
	runs[nr++] = 0;
	for (i = 1; i < rec->nq; i++) {
		if (cmp_qent(&rec->q[i - 1], &rec->q[i]) <= 0)
			continue;
		/* room for this run's start and, after the last, the end */
		if (gil_grow(&runs, &cap, nr + 2, sizeof(*runs)) < 0) {
			free(runs);
			free(tmp);
			qsort(rec->q, rec->nq, sizeof(*rec->q), cmp_qent);
			return 0;
		}
		runs[nr++] = i;
	}
	runs[nr] = rec->nq;
	dst = tmp;
	while (nr > 1) {
		/* merge src[runs[r], runs[r+1]) and src[runs[r+1], runs[r+2]) into dst */
		for (r = 0, o = 0; r < nr; r += 2) {
			size_t lo = runs[r], mid = runs[r + 1], hi = runs[r + 2 < nr ? r + 2 : nr];

			a = lo;
			b = mid;
			i = lo;
			while (a < mid && b < hi)
				dst[i++] = cmp_qent(&src[b], &src[a]) < 0 ? src[b++] : src[a++];
			while (a < mid)
				dst[i++] = src[a++];
			while (b < hi)
				dst[i++] = src[b++];
			runs[o++] = lo;
		}
		runs[o] = rec->nq;
		nr = o;
		tmp = src;
		src = dst;
		dst = tmp;
	}
	if (src != rec->q) {
		/* the sorted data is in the scratch buffer (dst is the old queue): swap them */
		free(rec->q);
		rec->q = src;
		rec->cap = rec->nq;
	} else {
		free(dst);
	}
	free(runs);
	return 0;
}

int gil_ordered_flush(struct gil_ordered *o, uint64_t upto,
		      int (*fn)(void *ctx, const struct gil_qent *e), void *ctx)
{
	size_t i, n;
	int ret = 0;

	if (!o->nq)
		return 0;
	sort_queue(o);
	for (n = 0; n < o->nq && o->q[n].ts < upto; n++) {
		ret = fn(ctx, &o->q[n]);
		if (ret < 0)
			return ret;
	}
	for (i = n; i < o->nq; i++)
		o->q[i - n] = o->q[i];
	o->nq -= n;
	return 0;
}

size_t gil_ordered_len(const struct gil_ordered *o)
{
	return o->nq;
}

void gil_ordered_free(struct gil_ordered *o)
{
	free(o->q);
	o->q = NULL;
	o->nq = o->cap = 0;
}
