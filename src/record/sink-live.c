// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The live sink (gil-record --live): one target's figures for each second of the recording,
 * from the same intervals the file gets. Each interval is clipped to the seconds it overlaps,
 * into a ring of two seconds per thread: the one just complete and the one under way. At the
 * round whose horizon passes a second's end, every interval that overlaps it has either ended
 * (it is in the ring) or is open (the round's tick says since when): the sink adds the open
 * parts and freezes the second's figures, which record/live.c hands to gil_recorder_live().
 * Exact, as the file is; only the percentiles of waits come from a histogram (within 1/32).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attrib/attrib.h"
#include "common/tidindex.h"
#include "common/util.h"
#include "sink.h"

#define NS 1000000000ull
#define NONE UINT64_MAX
#define TOP 4 /* functions counted per thread and second */

/*
 * Wait times, HDR-style: values below 16 ns exact, then 16 buckets per power of two up to
 * 2^40 ns (18 minutes; longer ones count there). A bucket's midpoint is within 1/32 of any
 * value in it.
 */
#define HIST_EXP 40
#define HIST_N (16 + (HIST_EXP - 4 + 1) * 16)

struct hist {
	uint32_t n[HIST_N];
	uint64_t count;
};

static size_t hist_index(uint64_t v)
{
	int e;

	if (v < 16)
		return (size_t)v;
	e = 63 - __builtin_clzll(v);
	if (e > HIST_EXP)
		return HIST_N - 1;
	return 16 + (size_t)(e - 4) * 16 + ((v >> (e - 4)) & 15);
}

static uint64_t hist_value(size_t i)
{
	uint64_t lo, width;
	int e;

	if (i < 16)
		return i;
	e = (int)((i - 16) / 16) + 4;
	width = 1ull << (e - 4);
	lo = (16 + (i - 16) % 16) * width;
	return lo + width / 2;
}

/* The 99th percentile of @h's values and @extra (0: none). 0 when there are none. */
static uint64_t hist_p99(const struct hist *h, uint64_t extra)
{
	uint64_t count = (h ? h->count : 0) + (extra != 0), rank, seen = 0;
	size_t i, x = extra ? hist_index(extra) : HIST_N;

	if (!count)
		return 0;
	rank = (count * 99 + 99) / 100; /* ceil(0.99 count) */
	for (i = 0; i < HIST_N; i++) {
		seen += (h ? h->n[i] : 0) + (i == x);
		if (seen >= rank)
			return hist_value(i);
	}
	return hist_value(HIST_N - 1);
}

static int hist_add(struct hist **h, uint64_t v)
{
	if (!*h) {
		*h = calloc(1, sizeof(**h));
		if (!*h)
			return -1;
	}
	(*h)->n[hist_index(v)]++;
	(*h)->count++;
	return 0;
}

/* One second of one thread. */
struct sec {
	uint64_t sec; /* NONE: holds none */
	uint64_t ns[3];
	uint32_t takes, forced;
	uint32_t fn[TOP];
	uint64_t fn_ns[TOP];
	struct hist *waits; /* of the waits that ended in it */
};

struct row {
	int32_t tid;
	char name[17];
	bool exited;
	uint64_t first, exit_ts;
	struct sec sec[2]; /* by the second's parity */
	uint64_t total_ns[3];
	uint32_t top_fn[TOP];
	uint64_t top_ns[TOP];
	struct hist *total_waits;
	struct gil_open open; /* at the last tick; kind 0xff: none */
	uint64_t shown_sec; /* NONE: not frozen yet */
	struct gil_live_thread shown;
};

struct live {
	bool on;
	const struct gil_fntab *fntab;
	uint64_t origin, since;
	struct gil_live_process proc; /* threads NULL: record/live.c copies the rows */
	struct row *v;
	size_t nr, cap;
	struct gil_tidindex index;
	uint64_t total_ns[3]; /* every thread's, exited ones too */
	struct {
		uint64_t sec, count;
	} lost[2];
	uint64_t shown_sec; /* NONE before the first */
};

static void *live_open(const struct gil_sink_target *t)
{
	struct live *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	l->on = t->opts && t->opts->live;
	l->fntab = t->fntab;
	l->origin = t->origin;
	l->since = t->since > t->origin ? t->since : t->origin;
	l->proc.pid = t->pid;
	l->proc.rank = t->rank;
	snprintf(l->proc.comm, sizeof(l->proc.comm), "%s", t->comm ? t->comm : "");
	l->lost[0].sec = l->lost[1].sec = NONE;
	l->shown_sec = NONE;
	return l;
}

static void free_row(struct row *r)
{
	free(r->sec[0].waits);
	free(r->sec[1].waits);
	free(r->total_waits);
}

/*
 * Thread @tid's row, made at @ts when new, or made anew when its thread exited before @ts (the
 * tid was reused). NULL: past the bound, or out of memory (*@oom).
 */
static struct row *row_of(struct live *l, int32_t tid, uint64_t ts, bool *oom)
{
	long i = gil_tidindex_find(&l->index, tid);
	struct row *r;

	if (i >= 0 && !(l->v[i].exited && ts > l->v[i].exit_ts))
		return &l->v[i];
	if (i >= 0) {
		r = &l->v[i];
		free_row(r);
	} else {
		if (l->nr == GIL_PAIRING_MAX_THREADS)
			return NULL;
		if (gil_grow(&l->v, &l->cap, l->nr + 1, sizeof(*l->v)) < 0 ||
		    gil_tidindex_add(&l->index, tid, l->nr) < 0) {
			*oom = true;
			return NULL;
		}
		r = &l->v[l->nr++];
	}
	memset(r, 0, sizeof(*r));
	r->tid = tid;
	r->first = ts > l->since ? ts : l->since;
	r->sec[0].sec = r->sec[1].sec = NONE;
	r->open.kind = 0xff;
	r->shown_sec = NONE;
	return r;
}

/* @r's counts for second @s: its slot, emptied first when it held an older second. */
static struct sec *slot(struct row *r, uint64_t s)
{
	struct sec *b = &r->sec[s % 2];
	struct hist *h = b->waits;

	if (b->sec == s)
		return b;
	if (b->sec != NONE && b->sec > s)
		return NULL; /* older than what the ring keeps */
	memset(b, 0, sizeof(*b));
	if (h)
		memset(h, 0, sizeof(*h));
	b->waits = h;
	b->sec = s;
	return b;
}

/* The second of the recording @ts falls in. */
static uint64_t second_of(const struct live *l, uint64_t ts)
{
	return ts <= l->origin ? 0 : (ts - l->origin) / NS;
}

static int live_interval(void *p, const struct gil_interval *iv)
{
	struct live *l = p;
	uint64_t end = iv->start + iv->dur, s, last, lo, hi;
	struct row *r;
	struct sec *b;
	bool oom = false;

	if (!l->on || iv->kind > GIL_KIND_DROP)
		return 0;
	r = row_of(l, iv->tid, iv->start, &oom);
	if (!r)
		return oom ? -1 : 0;
	r->total_ns[iv->kind] += iv->dur;
	l->total_ns[iv->kind] += iv->dur;
	if (iv->kind == GIL_KIND_HOLD && iv->fn)
		gil_topk_add(r->top_fn, r->top_ns, TOP, iv->fn, iv->dur);
	if (iv->kind == GIL_KIND_TAKE && hist_add(&r->total_waits, iv->dur) < 0)
		return -1;
	/* its parts in the last seconds it overlaps: the ring keeps two */
	last = second_of(l, iv->dur ? end - 1 : iv->start);
	s = second_of(l, iv->start);
	if (last > s + 1)
		s = last - 1;
	for (; iv->dur && s <= last; s++) {
		lo = l->origin + s * NS;
		hi = lo + NS;
		b = slot(r, s);
		if (!b)
			continue;
		lo = iv->start > lo ? iv->start : lo;
		hi = end < hi ? end : hi;
		b->ns[iv->kind] += hi - lo;
		if (iv->kind == GIL_KIND_HOLD && iv->fn)
			gil_topk_add(b->fn, b->fn_ns, TOP, iv->fn, hi - lo);
	}
	/* what is counted once goes to the second it ended in */
	b = slot(r, last);
	if (!b)
		return 0;
	if (iv->kind == GIL_KIND_TAKE) {
		b->takes++;
		if (hist_add(&b->waits, iv->dur) < 0)
			return -1;
	}
	if (iv->kind == GIL_KIND_DROP && iv->reason == GIL_REASON_FORCED)
		b->forced++;
	return 0;
}

static int live_thread(void *p, int32_t tid, const char *name, uint64_t ts)
{
	struct live *l = p;
	struct row *r;
	bool oom = false;

	if (!l->on)
		return 0;
	r = row_of(l, tid, ts, &oom);
	if (!r)
		return oom ? -1 : 0;
	snprintf(r->name, sizeof(r->name), "%s", name ? name : "");
	return 0;
}

static int live_exit(void *p, int32_t tid, uint64_t ts)
{
	struct live *l = p;
	long i = gil_tidindex_find(&l->index, tid);

	if (!l->on || i < 0)
		return 0;
	l->v[i].exited = true;
	l->v[i].exit_ts = ts;
	return 0;
}

static int live_lost(void *p, int cpu, uint64_t count, uint64_t ts)
{
	struct live *l = p;
	uint64_t s = second_of(l, ts);

	(void)cpu;
	if (!l->on)
		return 0;
	l->proc.total_lost += count;
	if (l->lost[s % 2].sec != s) {
		if (l->lost[s % 2].sec != NONE && l->lost[s % 2].sec > s)
			return 0;
		l->lost[s % 2].sec = s;
		l->lost[s % 2].count = 0;
	}
	l->lost[s % 2].count += count;
	return 0;
}

/* Forget the threads that exited before second @s began; the index is rebuilt. */
static int drop_exited(struct live *l, uint64_t s)
{
	uint64_t lo = l->origin + s * NS;
	size_t i, n = 0;

	for (i = 0; i < l->nr; i++) {
		if (l->v[i].exited && l->v[i].exit_ts < lo) {
			free_row(&l->v[i]);
			continue;
		}
		l->v[n++] = l->v[i];
	}
	if (n == l->nr)
		return 0;
	l->nr = n;
	gil_tidindex_clear(&l->index);
	for (i = 0; i < n; i++)
		if (gil_tidindex_add(&l->index, l->v[i].tid, i) < 0)
			return -1;
	return 0;
}

/* Freeze second @s of row @r: its ring's counts and the part of its open interval in it. */
static void freeze_row(struct live *l, struct row *r, uint64_t s, uint64_t upto)
{
	uint64_t lo = l->origin + s * NS, hi = lo + NS, part = 0, extra = 0, ns[3] = { 0 };
	struct gil_live_thread *o = &r->shown;
	const struct sec *b = r->sec[s % 2].sec == s ? &r->sec[s % 2] : NULL;
	uint32_t fn[TOP] = { 0 };
	uint64_t fn_ns[TOP] = { 0 };
	size_t best;
	int k;

	if (b) {
		memcpy(fn, b->fn, sizeof(fn));
		memcpy(fn_ns, b->fn_ns, sizeof(fn_ns));
		memcpy(ns, b->ns, sizeof(ns));
	}
	memset(o, 0, sizeof(*o));
	o->tid = r->tid;
	memcpy(o->name, r->name, sizeof(o->name));
	for (k = 0; k < 3; k++)
		o->total_ns[k] = r->total_ns[k];
	if (r->open.kind <= GIL_KIND_DROP) {
		if (r->open.since < hi)
			part = hi - (r->open.since > lo ? r->open.since : lo);
		ns[r->open.kind] += part;
		if (r->open.kind == GIL_KIND_HOLD && r->open.fn && part)
			gil_topk_add(fn, fn_ns, TOP, r->open.fn, part);
		if (r->open.kind == GIL_KIND_TAKE && r->open.since < hi)
			extra = hi - r->open.since;
		if (upto > r->open.since)
			o->total_ns[r->open.kind] += upto - r->open.since;
	}
	for (k = 0; k < 3; k++)
		o->ns[k] = ns[k];
	o->wall_ns = upto > r->first ? upto - r->first : 0;
	if (b) {
		o->takes = b->takes;
		o->forced = b->forced;
	}
	o->p99_wait_ns = hist_p99(b ? b->waits : NULL, extra ? extra : 0);
	o->total_p99_wait_ns = hist_p99(r->total_waits, r->open.kind == GIL_KIND_TAKE &&
							       upto > r->open.since
							   ? upto - r->open.since
							   : 0);
	best = gil_topk_best(fn, fn_ns, TOP);
	if (fn[best])
		gil_fntab_display(l->fntab, fn[best], o->function, sizeof(o->function));
	else {
		best = gil_topk_best(r->top_fn, r->top_ns, TOP);
		gil_fntab_display(l->fntab, r->top_fn[best], o->function, sizeof(o->function));
	}
	o->exited = r->exited && r->exit_ts < hi;
	r->shown_sec = s;
}

static int live_tick(void *p, uint64_t upto, const struct gil_open *opens, size_t nr,
		     uint32_t waiting)
{
	struct live *l = p;
	struct gil_live_process *o = &l->proc;
	uint64_t s, open_hold = 0, open_wait = 0;
	size_t i;
	long j;

	(void)waiting;
	if (!l->on || upto < l->origin + NS)
		return 0;
	s = (upto - l->origin) / NS - 1; /* the last complete second */
	if (l->shown_sec != NONE && s <= l->shown_sec)
		return 0;
	if (drop_exited(l, s) < 0)
		return -1;
	for (i = 0; i < l->nr; i++)
		l->v[i].open.kind = 0xff;
	for (i = 0; i < nr; i++) {
		j = gil_tidindex_find(&l->index, opens[i].tid);
		if (j >= 0)
			l->v[j].open = opens[i];
		if (upto <= opens[i].since)
			continue;
		if (opens[i].kind == GIL_KIND_HOLD)
			open_hold += upto - opens[i].since;
		else if (opens[i].kind == GIL_KIND_TAKE)
			open_wait += upto - opens[i].since;
	}
	o->held_ns = o->wait_ns = 0;
	for (i = 0; i < l->nr; i++) {
		freeze_row(l, &l->v[i], s, upto);
		o->held_ns += l->v[i].shown.ns[GIL_KIND_HOLD];
		o->wait_ns += l->v[i].shown.ns[GIL_KIND_TAKE];
	}
	o->total_held_ns = l->total_ns[GIL_KIND_HOLD] + open_hold;
	o->total_wait_ns = l->total_ns[GIL_KIND_TAKE] + open_wait;
	o->wall_ns = upto > l->since ? upto - l->since : 0;
	o->lost = l->lost[s % 2].sec == s ? l->lost[s % 2].count : 0;
	l->shown_sec = s;
	return 0;
}

static void live_close(void *p)
{
	struct live *l = p;
	size_t i;

	for (i = 0; i < l->nr; i++)
		free_row(&l->v[i]);
	free(l->v);
	gil_tidindex_free(&l->index);
	free(l);
}

const struct gil_sink_ops gil_sink_live = {
	.name = "live",
	.open = live_open,
	.interval = live_interval,
	.thread = live_thread,
	.exit = live_exit,
	.lost = live_lost,
	.tick = live_tick,
	.close = live_close,
};

int gil_sink_live_get(void *p, uint64_t *second, struct gil_live_process *out)
{
	const struct live *l = p;
	struct gil_live_thread *v;
	size_t i, n = 0;

	if (!l->on || l->shown_sec == NONE)
		return 0;
	*out = l->proc;
	out->threads = NULL;
	out->nr_threads = 0;
	v = calloc(l->nr ? l->nr : 1, sizeof(*v));
	if (!v)
		return -1;
	for (i = 0; i < l->nr; i++)
		if (l->v[i].shown_sec == l->shown_sec)
			v[n++] = l->v[i].shown;
	out->threads = v;
	out->nr_threads = n;
	*second = l->shown_sec;
	return 1;
}
