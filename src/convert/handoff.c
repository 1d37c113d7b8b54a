// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Statistics: the hand-off matrix (who took the GIL after whom) and the ring of recent holds that
 * waits are matched against. Recordings list intervals in the order they end, so when a wait
 * arrives every hold it overlapped has already arrived: holds are kept for a window of time, and
 * each wait is matched against them once (others' waiting per function, Python and native) and
 * against the last hold before its end (the giver).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stdlib.h>
#include <string.h>

#include "stats-priv.h"
#include "steps.h"


static int handoff_add(struct stats_proc *p, int32_t from, int32_t to, uint64_t wait)
{
	struct stats_handoff *h;
	uint64_t key = ((uint64_t)(uint32_t)from << 32) | (uint32_t)to;
	size_t k, i, cap;

	p->handoffs_total++;
	for (k = p->hindex_cap ? (key * 0x9e3779b97f4a7c15ull) >> 40 & (p->hindex_cap - 1) : 0;
	     p->hindex_cap && p->hindex[k]; k = (k + 1) & (p->hindex_cap - 1)) {
		h = &p->handoffs[p->hindex[k] - 1];
		if (h->from == from && h->to == to) {
			h->count++;
			h->wait_ns += wait;
			return 0;
		}
	}
	if (p->nr_handoffs >= MAX_HANDOFFS) {
		p->handoffs_folded = true;
		return 0;
	}
	if (gil_grow(&p->handoffs, &p->cap_handoffs, p->nr_handoffs + 1, sizeof(*p->handoffs)) < 0)
		return -1;
	if (2 * (p->nr_handoffs + 1) > p->hindex_cap) {
		uint32_t *x;

		cap = p->hindex_cap ? 2 * p->hindex_cap : 64;
		x = calloc(cap, sizeof(*x));
		if (!x)
			return -1;
		for (i = 0; i < p->nr_handoffs; i++) {
			uint64_t ki = ((uint64_t)(uint32_t)p->handoffs[i].from << 32) |
				      (uint32_t)p->handoffs[i].to;

			for (k = (ki * 0x9e3779b97f4a7c15ull) >> 40 & (cap - 1); x[k];
			     k = (k + 1) & (cap - 1))
				;
			x[k] = (uint32_t)i + 1;
		}
		free(p->hindex);
		p->hindex = x;
		p->hindex_cap = cap;
	}
	h = &p->handoffs[p->nr_handoffs++];
	h->from = from;
	h->to = to;
	h->count = 1;
	h->wait_ns = wait;
	for (k = (key * 0x9e3779b97f4a7c15ull) >> 40 & (p->hindex_cap - 1); p->hindex[k];
	     k = (k + 1) & (p->hindex_cap - 1))
		;
	p->hindex[k] = (uint32_t)p->nr_handoffs;
	return 0;
}

static struct stats_hold *ring_at(struct stats_proc *p, size_t i)
{
	return &p->ring[(p->ring_head + i) % p->ring_cap];
}

int stats_ring_push(struct stats *s, struct stats_proc *p, const struct stats_hold *h)
{
	/* holds that ended a window before this one can no longer meet a wait we count exactly */
	while (p->ring_len && ring_at(p, 0)->end < h->end - s->window) {
		p->ring_head = (p->ring_head + 1) % p->ring_cap;
		p->ring_len--;
	}
	if (p->ring_len == p->ring_cap) {
		if (p->ring_cap >= MAX_RING) {
			p->ring_head = (p->ring_head + 1) % p->ring_cap;
			p->ring_len--;
		} else {
			size_t cap = p->ring_cap ? 2 * p->ring_cap : 1024, i;
			struct stats_hold *r = malloc(cap * sizeof(*r));

			if (!r)
				return -1;
			for (i = 0; i < p->ring_len; i++)
				r[i] = *ring_at(p, i);
			free(p->ring);
			p->ring = r;
			p->ring_cap = cap;
			p->ring_head = 0;
		}
	}
	*ring_at(p, p->ring_len++) = *h;
	return 0;
}

/* A wait of @tid over [@ts, @end): charge the holds it overlapped, find who handed over. */
int stats_wait_done(struct stats *s, struct stats_proc *p, int32_t tid, int64_t ts, int64_t end,
		     bool begin_unknown)
{
	const struct stats_hold *h;
	int32_t giver = 0;
	bool have_giver = false;
	int64_t lo, hi;
	size_t i;

	for (i = p->ring_len; i-- > 0;) {
		h = ring_at(p, i);
		if (!have_giver && h->end <= end) {
			giver = h->tid;
			have_giver = true;
		}
		if (h->end <= ts)
			break;
		if (h->tid == tid)
			continue;
		lo = h->start > ts ? h->start : ts;
		hi = h->end < end ? h->end : end;
		if (hi <= lo)
			continue;
		if (s->steps)
			steps_blame(s->steps, (size_t)(p - s->procs), p->pid, h->tid, h->fn, lo,
				    hi);
		if (h->fn)
			s->fns[h->fn - 1].others_wait_ns += (uint64_t)(hi - lo);
		if (h->native)
			s->natives[h->native - 1].others_wait_ns += (uint64_t)(hi - lo);
	}
	/* holds that ended more than a window before this wait's end were let go */
	if (!begin_unknown && end - ts > s->window)
		p->late_waits++;
	if (begin_unknown || !have_giver) {
		p->handoffs_unknown++;
		return 0;
	}
	return handoff_add(p, giver, tid, (uint64_t)(end - ts));
}

static int cmp_handoff(const void *a, const void *b)
{
	const struct stats_handoff *x = a, *y = b;

	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	return x->from != y->from ? (x->from < y->from ? -1 : 1) : (x->to < y->to ? -1 : x->to > y->to);
}

struct stats_handoff *stats_handoffs_sorted(const struct stats_proc *p)
{
	struct stats_handoff *ho = p->nr_handoffs ? malloc(p->nr_handoffs * sizeof(*ho)) : NULL;

	if (!ho)
		return NULL;
	memcpy(ho, p->handoffs, p->nr_handoffs * sizeof(*ho));
	qsort(ho, p->nr_handoffs, sizeof(*ho), cmp_handoff);
	return ho;
}
