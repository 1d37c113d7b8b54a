// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Statistics while converting (see stats.h). Recordings list intervals in the order they end,
 * so when a wait arrives every hold it overlapped has already arrived: holds are kept for a
 * window of time, and each wait is matched against them once (others' waiting per function)
 * and against the last hold before its end (the hand-off matrix).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "giltrace.h"
#include "stats.h"
#include "common/util.h"
#include "format/keys.h"

#define MAX_HANDOFFS 65536 /* giver/taker pairs kept per process */
#define MAX_RING (256 * 1024) /* holds kept for matching waits: 6 MiB at most */
#define MAX_FNS (1u << 20)
#define TIME_MAX ((int64_t)1 << 62) /* as convert.c: later times are damage, not data */

/* ---- histograms ---- */

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

static int hist_add(struct stats_hist *h, uint64_t v)
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
static uint64_t hist_q(const struct stats_hist *h, double q)
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

/* ---- functions ---- */

/* The global index + 1 of function (name, file, line, why); 0 on ENOMEM or past the cap. */
static uint32_t fn_intern(struct stats *s, const char *name, const char *file, int line,
			  const char *why)
{
	struct gil_fnkey key = {
		.name = name, .name_len = name ? strlen(name) : 0,
		.file = file, .file_len = file ? strlen(file) : 0,
		.line = line, .why = why,
	};
	const struct gil_fn *fn;
	struct stats_fn *f;
	uint32_t id;
	size_t n;

	if (s->nr_fns == s->cap_fns) {
		size_t cap = s->cap_fns ? 2 * s->cap_fns : 64;

		f = realloc(s->fns, cap * sizeof(*f));
		if (!f)
			return 0;
		s->fns = f;
		s->cap_fns = cap;
	}
	id = gil_fnset_intern(s->fnset, &key);
	if (!id || id <= s->nr_fns)
		return id;
	if (id != s->nr_fns + 1)
		return 0; /* a display string was lost to ENOMEM: the numbering no longer fits */
	/* new: the interner owns the strings, the statistics its display name and counts */
	fn = gil_fnset_get(s->fnset, id);
	f = &s->fns[s->nr_fns];
	memset(f, 0, sizeof(*f));
	f->name = fn->name;
	f->file = fn->file;
	f->line = fn->line;
	f->why = fn->why;
	n = strlen(why ? why : "?") + 3;
	if (name) {
		f->display = strdup(name);
	} else if ((f->display = malloc(n))) {
		snprintf(f->display, n, "<%s>", why ? why : "?");
	}
	if (!f->display)
		return 0;
	s->nr_fns++;
	return id;
}

/* The global index + 1 of this input's function @id, 0 when it has none. */
static uint32_t fn_of(const struct stats *s, uint32_t id)
{
	const struct stats_proc *p = s->cur;

	if (!p || !id || id >= p->fnmap_cap)
		return 0;
	return p->fnmap[id];
}

int stats_function_def(struct stats *s, const struct gil_record *rec)
{
	struct stats_proc *p = s->cur;
	const char *why = rec->fn.why;
	int64_t id = rec->fn.id;
	uint32_t g, *m;
	size_t cap;

	if (!p || id <= 0 || id > (int64_t)MAX_FNS * 4)
		return 0; /* a function record we cannot use */
	if (!rec->fn.name && !why)
		why = "unnamed";
	g = fn_intern(s, rec->fn.name, rec->fn.file, rec->fn.line, why);
	if (!g)
		return s->nr_fns >= MAX_FNS ? 0 : -1;
	if ((size_t)id >= p->fnmap_cap) {
		cap = p->fnmap_cap ? p->fnmap_cap : 256;
		while (cap <= (size_t)id)
			cap *= 2;
		m = realloc(p->fnmap, cap * sizeof(*m));
		if (!m)
			return -1;
		memset(m + p->fnmap_cap, 0, (cap - p->fnmap_cap) * sizeof(*m));
		p->fnmap = m;
		p->fnmap_cap = cap;
	}
	p->fnmap[id] = g;
	return 0;
}

bool stats_function(const struct stats *s, uint32_t id, const char **name, const char **file,
		    int *line)
{
	uint32_t g = fn_of(s, id);
	const struct stats_fn *f;

	if (!g)
		return false;
	f = &s->fns[g - 1];
	*name = f->display;
	*file = f->file;
	*line = f->line;
	return true;
}

const char *stats_reason_name(int reason)
{
	return reason == GIL_REASON_VOLUNTARY ? "voluntary" :
	       reason == GIL_REASON_FORCED ? "forced" : NULL;
}

/* ---- processes and threads ---- */

struct stats *stats_alloc(int64_t window_ns)
{
	struct stats *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->window = window_ns > 0 ? window_ns : 1000000000;
	s->fnset = gil_fnset_alloc(MAX_FNS, 0);
	if (!s->fnset) {
		free(s);
		return NULL;
	}
	return s;
}

static void thread_free(struct stats_thread *t)
{
	free(t->name);
	free(t->wait.b);
	free(t->hold.b);
	free(t->bins);
}

int stats_begin(struct stats *s, const struct conv_input *ci, const struct clockmap *cm)
{
	struct stats_proc *p;
	int64_t raw, ts, dur = 0;

	if (s->nr_procs == s->cap_procs) {
		size_t cap = s->cap_procs ? 2 * s->cap_procs : 8;

		p = realloc(s->procs, cap * sizeof(*p));
		if (!p)
			return -1;
		s->procs = p;
		s->cap_procs = cap;
	}
	p = &s->procs[s->nr_procs++];
	memset(p, 0, sizeof(*p));
	s->cur = p;
	p->pid = ci->proc.pid;
	p->os_pid = ci->proc.os_pid;
	p->rank = ci->proc.rank;
	p->other.tid = -1;
	p->label = strdup(ci->proc.label ? ci->proc.label : "");
	p->cmdline = ci->proc.cmdline ? strdup(ci->proc.cmdline) : NULL;
	p->path = strdup(ci->path);
	p->util = calloc(STATS_BINS, sizeof(*p->util));
	p->waiters = calloc(STATS_BINS, sizeof(*p->waiters));
	if (!p->label || !p->path || !p->util || !p->waiters ||
	    (ci->proc.cmdline && !p->cmdline))
		return -1;
	/* the recorded span: header start to footer end, on the output axis */
	if (ci->header && conv_json_int(ci->header, GIL_KEY_START_NS, &raw) && raw >= 0 &&
	    raw <= TIME_MAX) {
		ts = clockmap_map(cm, (uint64_t)raw);
		dur = 0;
		if (clockmap_clip(cm, &ts, &dur)) {
			p->lo = ts;
			p->have_lo = true;
		}
	}
	if (ci->footer && conv_json_int(ci->footer, GIL_KEY_END_NS, &raw) && raw >= 0 &&
	    raw <= TIME_MAX) {
		ts = clockmap_map(cm, (uint64_t)raw);
		dur = 0;
		if (cm->clip && ts > cm->hi - cm->base)
			ts = cm->hi - cm->base;
		if (!p->have_lo || ts >= p->lo) {
			p->hi = ts;
			p->have_hi = true;
		}
	}
	if (p->have_lo && cm->clip && p->lo < cm->lo - cm->base)
		p->lo = cm->lo - cm->base;
	/* bins: the known span in STATS_BINS, else 1 ms each, doubling as needed */
	if (p->have_lo) {
		p->origin = p->lo;
		p->width = p->have_hi && p->hi > p->lo ? (stats_span(p->lo, p->hi) / STATS_BINS +
								(stats_span(p->lo, p->hi) % STATS_BINS != 0))
						       : 1000000;
		if (p->width < 1000)
			p->width = 1000;
		p->bins_set = true;
	}
	return 0;
}

static int tindex_grow(struct stats_proc *p)
{
	size_t cap = p->tindex_cap ? 2 * p->tindex_cap : 64, i, k;
	uint32_t *x = calloc(cap, sizeof(*x));

	if (!x)
		return -1;
	for (i = 0; i < p->nr_threads; i++) {
		for (k = ((uint32_t)p->threads[i].tid * 2654435761u) & (cap - 1); x[k];
		     k = (k + 1) & (cap - 1))
			;
		x[k] = (uint32_t)i + 1;
	}
	free(p->tindex);
	p->tindex = x;
	p->tindex_cap = cap;
	return 0;
}

/* Thread @tid of @p, created when new; past the cap, the folded entry. NULL on ENOMEM. */
static struct stats_thread *thread_get(struct stats_proc *p, int32_t tid)
{
	struct stats_thread *t;
	size_t k;

	for (k = p->tindex_cap ? ((uint32_t)tid * 2654435761u) & (p->tindex_cap - 1) : 0;
	     p->tindex_cap && p->tindex[k]; k = (k + 1) & (p->tindex_cap - 1))
		if (p->threads[p->tindex[k] - 1].tid == tid)
			return &p->threads[p->tindex[k] - 1];
	if (p->nr_threads >= STATS_MAX_THREADS) {
		p->has_other = true;
		return &p->other;
	}
	if (2 * (p->nr_threads + 1) > p->tindex_cap && tindex_grow(p) < 0)
		return NULL;
	if (p->nr_threads == p->cap_threads) {
		size_t cap = p->cap_threads ? 2 * p->cap_threads : 16;

		t = realloc(p->threads, cap * sizeof(*t));
		if (!t)
			return NULL;
		p->threads = t;
		p->cap_threads = cap;
	}
	t = &p->threads[p->nr_threads];
	memset(t, 0, sizeof(*t));
	t->tid = tid;
	if (p->nr_threads < STATS_BIN_THREADS) {
		t->bins = calloc(2 * STATS_BINS, sizeof(*t->bins));
		if (!t->bins)
			return NULL;
	}
	p->nr_threads++;
	for (k = ((uint32_t)tid * 2654435761u) & (p->tindex_cap - 1); p->tindex[k];
	     k = (k + 1) & (p->tindex_cap - 1))
		;
	p->tindex[k] = (uint32_t)p->nr_threads;
	return t;
}

int stats_thread(struct stats *s, int32_t tid, const char *name)
{
	struct stats_thread *t;

	if (!s->cur || !name)
		return 0;
	t = thread_get(s->cur, tid);
	if (!t)
		return -1;
	if (t->tid < 0)
		return 0;
	free(t->name);
	t->name = strdup(name);
	return t->name ? 0 : -1;
}

void stats_exit(struct stats *s, int32_t tid)
{
	struct stats_thread *t;

	if (!s->cur)
		return;
	t = thread_get(s->cur, tid);
	if (t)
		t->exited = true;
}

/* ---- time bins ---- */

static void halve(int64_t *v)
{
	int i;

	for (i = 0; i < STATS_BINS / 2; i++)
		v[i] = v[2 * i] + v[2 * i + 1];
	memset(v + STATS_BINS / 2, 0, (STATS_BINS / 2) * sizeof(*v));
}

/* Double the bin width until @end fits. */
static void bins_fit(struct stats_proc *p, int64_t end)
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
static void bins_add(const struct stats_proc *p, int64_t *v, int64_t ts, int64_t dur)
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

/* ---- hand-offs and the ring of recent holds ---- */

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
	if (p->nr_handoffs == p->cap_handoffs) {
		cap = p->cap_handoffs ? 2 * p->cap_handoffs : 16;
		h = realloc(p->handoffs, cap * sizeof(*h));
		if (!h)
			return -1;
		p->handoffs = h;
		p->cap_handoffs = cap;
	}
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

static int ring_push(struct stats *s, struct stats_proc *p, const struct stats_hold *h)
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
static int wait_done(struct stats *s, struct stats_proc *p, int32_t tid, int64_t ts, int64_t end,
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
		if (h->tid == tid || !h->fn)
			continue;
		lo = h->start > ts ? h->start : ts;
		hi = h->end < end ? h->end : end;
		if (hi > lo)
			s->fns[h->fn - 1].others_wait_ns += (uint64_t)(hi - lo);
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

/* ---- intervals ---- */

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

static void longest_add(struct stats *s, const struct stats_long_hold *h)
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

/* Count @ns for function @g (global index + 1) in @t's few slots. */
static void thread_fn_add(struct stats_thread *t, uint32_t g, uint64_t ns)
{
	t->fn_ns += ns;
	gil_topk_add(t->top_fn, t->top_ns, STATS_THREAD_FNS, g, ns);
}

long stats_thread_top_fn(const struct stats_thread *t, double *share)
{
	size_t best = gil_topk_best(t->top_fn, t->top_ns, STATS_THREAD_FNS);

	if (!t->top_fn[best] || !t->fn_ns)
		return -1;
	if (share)
		*share = t->top_ns[best] > t->fn_ns ? 1.0 : (double)t->top_ns[best] / (double)t->fn_ns;
	return (long)t->top_fn[best] - 1;
}

int stats_each_thread(const struct stats *s,
		      int (*fn)(void *ctx, int32_t tid, const char *name, const char *mostly_in),
		      void *ctx)
{
	const struct stats_proc *p = s->cur;
	const struct stats_thread *t;
	long fi;
	size_t i;
	int ret;

	for (i = 0; p && i < p->nr_threads; i++) {
		t = &p->threads[i];
		fi = stats_thread_top_fn(t, NULL);
		ret = fn(ctx, t->tid, t->name,
			 fi >= 0 && (size_t)fi < s->nr_fns ? s->fns[fi].display : NULL);
		if (ret)
			return ret;
	}
	return 0;
}

int stats_interval(struct stats *s, const struct gil_interval *iv, int64_t ts, int64_t dur)
{
	struct stats_proc *p = s->cur;
	struct stats_thread *t;
	struct stats_hold h;
	struct stats_long_hold lh;
	uint32_t g;
	int kind = iv->kind, r = iv->reason < 3 ? iv->reason : 0;
	int64_t end;

	if (!p || kind < 0 || kind > 2)
		return 0;
	if (dur < 0)
		dur = 0;
	end = ts + dur;
	t = thread_get(p, iv->tid);
	if (!t)
		return -1;
	if (!t->seen || ts < t->first)
		t->first = ts;
	if (!t->seen || end > t->last)
		t->last = end;
	t->seen = true;
	t->last_end = end;
	if (!p->seen || ts < p->seen_lo)
		p->seen_lo = ts;
	if (!p->seen || end > p->seen_hi)
		p->seen_hi = end;
	p->seen = true;
	if (!p->bins_set) {
		p->origin = ts;
		p->width = 1000000;
		p->bins_set = true;
	}
	bins_fit(p, end);
	t->ns[kind] += (uint64_t)dur;
	t->count[kind]++;
	p->ns[kind] += (uint64_t)dur;
	p->count[kind]++;
	g = fn_of(s, iv->fn);
	if (iv->fn)
		p->attributed = true;
	if (g && kind != GIL_KIND_DROP)
		thread_fn_add(t, g, (uint64_t)dur);
	switch (kind) {
	case GIL_KIND_TAKE:
		if (hist_add(&t->wait, (uint64_t)dur) < 0 || hist_add(&p->wait, (uint64_t)dur) < 0)
			return -1;
		bins_add(p, p->waiters, ts, dur);
		if (t->bins)
			bins_add(p, t->bins, ts, dur);
		if (g) {
			s->fns[g - 1].waits++;
			s->fns[g - 1].wait_ns += (uint64_t)dur;
		}
		return wait_done(s, p, iv->tid, ts, end, iv->flags & GIL_F_BEGIN_UNKNOWN);
	case GIL_KIND_HOLD:
		if (hist_add(&t->hold, (uint64_t)dur) < 0 || hist_add(&p->hold, (uint64_t)dur) < 0)
			return -1;
		bins_add(p, p->util, ts, dur);
		if (t->bins)
			bins_add(p, t->bins + STATS_BINS, ts, dur);
		t->held_by_reason[r] += (uint64_t)dur;
		if (g) {
			s->fns[g - 1].holds++;
			s->fns[g - 1].held_ns += (uint64_t)dur;
		}
		lh.dur = dur;
		lh.ts = ts;
		lh.proc = (size_t)(p - s->procs);
		lh.tid = iv->tid;
		lh.fn = g;
		lh.reason = (uint8_t)r;
		lh.flags = iv->flags;
		longest_add(s, &lh);
		h.start = ts;
		h.end = end;
		h.fn = g;
		h.tid = iv->tid;
		return ring_push(s, p, &h);
	default:
		t->released[r]++;
		t->released_ns[r] += (uint64_t)dur;
		if (g) {
			s->fns[g - 1].releases++;
			s->fns[g - 1].forced += r == GIL_REASON_FORCED;
			s->fns[g - 1].voluntary += r == GIL_REASON_VOLUNTARY;
		}
		return 0;
	}
}

int stats_end(struct stats *s)
{
	struct stats_proc *p = s->cur;

	if (!p)
		return 0;
	if (!p->have_lo && p->seen) {
		p->lo = p->seen_lo;
		p->have_lo = true;
	}
	if (!p->have_hi && p->seen) {
		p->hi = p->seen_hi;
		p->have_hi = true;
	}
	if (p->have_hi && p->seen && p->seen_hi > p->hi)
		p->hi = p->seen_hi; /* truncated intervals may end at the footer's end exactly */
	/* what only served reading this process */
	free(p->ring);
	p->ring = NULL;
	p->ring_cap = p->ring_len = p->ring_head = 0;
	free(p->fnmap);
	p->fnmap = NULL;
	p->fnmap_cap = 0;
	free(p->tindex);
	p->tindex = NULL;
	p->tindex_cap = 0;
	free(p->hindex);
	p->hindex = NULL;
	p->hindex_cap = 0;
	s->cur = NULL;
	return 0;
}

/* ---- JSON ---- */

static struct json_object *u64(uint64_t v)
{
	return json_object_new_uint64(v);
}

static struct json_object *share(uint64_t part, int64_t whole)
{
	return json_object_new_double(whole > 0 ? (double)part / (double)whole : 0.0);
}

static void add_hist(struct json_object *o, const char *prefix, const struct stats_hist *h)
{
	static const struct {
		const char *key;
		double q;
	} qs[] = { { "p50", 0.5 }, { "p90", 0.9 }, { "p99", 0.99 } };
	char key[32];
	size_t i;

	for (i = 0; i < sizeof(qs) / sizeof(qs[0]); i++) {
		snprintf(key, sizeof(key), "%s_%s_ns", prefix, qs[i].key);
		json_object_object_add(o, key, u64(hist_q(h, qs[i].q)));
	}
	snprintf(key, sizeof(key), "%s_max_ns", prefix);
	json_object_object_add(o, key, u64(h->max));
}

static struct json_object *thread_json(const struct stats *s, const struct stats_thread *t)
{
	struct json_object *o = json_object_new_object(), *top = NULL;
	int64_t wall = t->seen ? stats_span(t->first, t->last) : 0;
	const struct stats_fn *f;
	double sh = 0;
	long fi;

	json_object_object_add(o, "tid", t->tid >= 0 ? json_object_new_int(t->tid) : NULL);
	json_object_object_add(o, "name", t->tid < 0 ? json_object_new_string("(other threads)") :
				  t->name ? json_object_new_string(t->name) : NULL);
	json_object_object_add(o, "wall_ns", json_object_new_int64(wall));
	json_object_object_add(o, "wait_ns", u64(t->ns[GIL_KIND_TAKE]));
	json_object_object_add(o, "hold_ns", u64(t->ns[GIL_KIND_HOLD]));
	json_object_object_add(o, "release_ns", u64(t->ns[GIL_KIND_DROP]));
	json_object_object_add(o, "wait_share", share(t->ns[GIL_KIND_TAKE], wall));
	json_object_object_add(o, "hold_share", share(t->ns[GIL_KIND_HOLD], wall));
	json_object_object_add(o, "release_share", share(t->ns[GIL_KIND_DROP], wall));
	json_object_object_add(o, "waits", u64(t->count[GIL_KIND_TAKE]));
	json_object_object_add(o, "holds", u64(t->count[GIL_KIND_HOLD]));
	json_object_object_add(o, "releases", u64(t->count[GIL_KIND_DROP]));
	json_object_object_add(o, "forced", u64(t->released[GIL_REASON_FORCED]));
	json_object_object_add(o, "voluntary", u64(t->released[GIL_REASON_VOLUNTARY]));
	json_object_object_add(o, "reason_unknown", u64(t->released[GIL_REASON_UNKNOWN]));
	json_object_object_add(o, "forced_release_ns", u64(t->released_ns[GIL_REASON_FORCED]));
	json_object_object_add(o, "voluntary_release_ns",
			       u64(t->released_ns[GIL_REASON_VOLUNTARY]));
	json_object_object_add(o, "held_before_forced_ns",
			       u64(t->held_by_reason[GIL_REASON_FORCED]));
	json_object_object_add(o, "held_before_voluntary_ns",
			       u64(t->held_by_reason[GIL_REASON_VOLUNTARY]));
	add_hist(o, "wait", &t->wait);
	add_hist(o, "hold", &t->hold);
	fi = stats_thread_top_fn(t, &sh);
	if (fi >= 0 && (size_t)fi < s->nr_fns) {
		f = &s->fns[fi];
		top = json_object_new_object();
		json_object_object_add(top, "function", json_object_new_string(f->display));
		json_object_object_add(top, "file", f->file ? json_object_new_string(f->file) : NULL);
		json_object_object_add(top, "line",
				       f->line >= 0 ? json_object_new_int(f->line) : NULL);
		json_object_object_add(top, "share", json_object_new_double(sh));
	}
	json_object_object_add(o, "mostly_in", top);
	return o;
}

static struct json_object *series(const int64_t *v, int64_t width, size_t n)
{
	struct json_object *a = json_object_new_array();
	size_t i;

	for (i = 0; i < n; i++)
		json_object_array_add(a, json_object_new_double(
						 width > 0 ? (double)v[i] / (double)width : 0.0));
	return a;
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

static int cmp_handoff(const void *a, const void *b)
{
	const struct stats_handoff *x = a, *y = b;

	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	return x->from != y->from ? (x->from < y->from ? -1 : 1) : (x->to < y->to ? -1 : x->to > y->to);
}

static struct json_object *proc_json(const struct stats *s, const struct stats_proc *p)
{
	struct json_object *o = json_object_new_object(), *a, *tl, *h;
	struct stats_handoff *ho;
	int64_t wall = p->have_hi && p->have_lo ? stats_span(p->lo, p->hi) : 0;
	size_t i, n = stats_bins_used(p);

	json_object_object_add(o, "pid", json_object_new_int64(p->os_pid));
	json_object_object_add(o, "trace_pid", json_object_new_int64(p->pid));
	json_object_object_add(o, "rank", p->rank >= 0 ? json_object_new_int64(p->rank) : NULL);
	json_object_object_add(o, "label", json_object_new_string(p->label));
	json_object_object_add(o, "path", json_object_new_string(p->path));
	json_object_object_add(o, "attribution", json_object_new_boolean(p->attributed));
	json_object_object_add(o, "start_ns", json_object_new_int64(p->lo));
	json_object_object_add(o, "wall_ns", json_object_new_int64(wall));
	json_object_object_add(o, "wait_ns", u64(p->ns[GIL_KIND_TAKE]));
	json_object_object_add(o, "hold_ns", u64(p->ns[GIL_KIND_HOLD]));
	json_object_object_add(o, "release_ns", u64(p->ns[GIL_KIND_DROP]));
	json_object_object_add(o, "utilization", share(p->ns[GIL_KIND_HOLD], wall));
	json_object_object_add(o, "average_waiters", share(p->ns[GIL_KIND_TAKE], wall));
	json_object_object_add(o, "waits", u64(p->count[GIL_KIND_TAKE]));
	json_object_object_add(o, "holds", u64(p->count[GIL_KIND_HOLD]));
	json_object_object_add(o, "releases", u64(p->count[GIL_KIND_DROP]));
	add_hist(o, "wait", &p->wait);
	add_hist(o, "hold", &p->hold);
	a = json_object_new_array();
	for (i = 0; i < p->nr_threads; i++)
		json_object_array_add(a, thread_json(s, &p->threads[i]));
	if (p->has_other)
		json_object_array_add(a, thread_json(s, &p->other));
	json_object_object_add(o, "threads", a);
	tl = json_object_new_object();
	json_object_object_add(tl, "start_ns", json_object_new_int64(p->origin));
	json_object_object_add(tl, "bin_ns", json_object_new_int64(p->width));
	json_object_object_add(tl, "utilization", series(p->util, p->width, n));
	json_object_object_add(tl, "waiters", series(p->waiters, p->width, n));
	json_object_object_add(o, "timeline", tl);
	a = json_object_new_array();
	ho = p->nr_handoffs ? malloc(p->nr_handoffs * sizeof(*ho)) : NULL;
	if (ho) {
		memcpy(ho, p->handoffs, p->nr_handoffs * sizeof(*ho));
		qsort(ho, p->nr_handoffs, sizeof(*ho), cmp_handoff);
		for (i = 0; i < p->nr_handoffs; i++) {
			h = json_object_new_object();
			json_object_object_add(h, "from", json_object_new_int(ho[i].from));
			json_object_object_add(h, "to", json_object_new_int(ho[i].to));
			json_object_object_add(h, "count", u64(ho[i].count));
			json_object_object_add(h, "wait_ns", u64(ho[i].wait_ns));
			json_object_array_add(a, h);
		}
		free(ho);
	}
	json_object_object_add(o, "handoffs", a);
	json_object_object_add(o, "handoffs_total", u64(p->handoffs_total));
	json_object_object_add(o, "handoffs_unknown_giver", u64(p->handoffs_unknown));
	if (p->handoffs_folded)
		json_object_object_add(o, "handoffs_truncated", json_object_new_boolean(true));
	json_object_object_add(o, "waits_beyond_window", u64(p->late_waits));
	return o;
}

static struct json_object *fn_json(const struct stats_fn *f)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "function", json_object_new_string(f->display));
	json_object_object_add(o, "name", f->name ? json_object_new_string(f->name) : NULL);
	json_object_object_add(o, "file", f->file ? json_object_new_string(f->file) : NULL);
	json_object_object_add(o, "line", f->line >= 0 ? json_object_new_int(f->line) : NULL);
	if (f->why)
		json_object_object_add(o, "unreadable", json_object_new_string(f->why));
	json_object_object_add(o, "held_ns", u64(f->held_ns));
	json_object_object_add(o, "holds", u64(f->holds));
	json_object_object_add(o, "others_wait_ns", u64(f->others_wait_ns));
	json_object_object_add(o, "releases", u64(f->releases));
	json_object_object_add(o, "forced", u64(f->forced));
	json_object_object_add(o, "voluntary", u64(f->voluntary));
	json_object_object_add(o, "waits", u64(f->waits));
	json_object_object_add(o, "wait_ns", u64(f->wait_ns));
	return o;
}

/* Indices of the functions, best first by @key (0 held, 1 others' wait, 2 releases). */
static const struct stats *sort_ctx;
static int sort_key;

static uint64_t fn_key(const struct stats_fn *f, int key)
{
	return key == 0 ? f->held_ns : key == 1 ? f->others_wait_ns : f->releases;
}

static int cmp_fn(const void *a, const void *b)
{
	const struct stats_fn *x = &sort_ctx->fns[*(const size_t *)a];
	const struct stats_fn *y = &sort_ctx->fns[*(const size_t *)b];
	uint64_t kx = fn_key(x, sort_key), ky = fn_key(y, sort_key);

	if (kx != ky)
		return kx < ky ? 1 : -1;
	return strcmp(x->display, y->display);
}

size_t stats_top_functions(const struct stats *s, int key, size_t *out, size_t max)
{
	size_t *idx, i, n = 0;

	idx = malloc((s->nr_fns + 1) * sizeof(*idx));
	if (!idx)
		return 0;
	for (i = 0; i < s->nr_fns; i++)
		if (fn_key(&s->fns[i], key))
			idx[n++] = i;
	sort_ctx = s;
	sort_key = key;
	qsort(idx, n, sizeof(*idx), cmp_fn);
	if (n > max)
		n = max;
	memcpy(out, idx, n * sizeof(*idx));
	free(idx);
	return n;
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

const char *stats_thread_name(const struct stats *s, size_t proc, int32_t tid)
{
	const struct stats_proc *p = &s->procs[proc];
	size_t i;

	for (i = 0; i < p->nr_threads; i++)
		if (p->threads[i].tid == tid)
			return p->threads[i].name;
	return NULL;
}

struct json_object *stats_json(const struct stats *s)
{
	static const char *const keys[] = { "by_held_time", "by_others_waiting", "by_releases" };
	struct json_object *o = json_object_new_object(), *a, *f, *h;
	struct stats_long_hold lh[STATS_TOP];
	size_t idx[STATS_TOP], i, n;
	uint64_t late = 0;
	int k;

	a = json_object_new_array();
	for (i = 0; i < s->nr_procs; i++) {
		json_object_array_add(a, proc_json(s, &s->procs[i]));
		late += s->procs[i].late_waits;
	}
	json_object_object_add(o, "processes", a);
	f = json_object_new_object();
	for (k = 0; k < 3; k++) {
		a = json_object_new_array();
		n = stats_top_functions(s, k, idx, STATS_TOP);
		for (i = 0; i < n; i++)
			json_object_array_add(a, fn_json(&s->fns[idx[i]]));
		json_object_object_add(f, keys[k], a);
	}
	json_object_object_add(f, "distinct", u64(s->nr_fns));
	json_object_object_add(o, "functions", f);
	a = json_object_new_array();
	n = stats_longest(s, lh);
	for (i = 0; i < n; i++) {
		const struct stats_proc *p = &s->procs[lh[i].proc];
		const char *tn = stats_thread_name(s, lh[i].proc, lh[i].tid);
		char us[32];

		h = json_object_new_object();
		json_object_object_add(h, "pid", json_object_new_int64(p->os_pid));
		json_object_object_add(h, "trace_pid", json_object_new_int64(p->pid));
		json_object_object_add(h, "tid", json_object_new_int(lh[i].tid));
		json_object_object_add(h, "thread", tn ? json_object_new_string(tn) : NULL);
		gil_fmt_us(us, lh[i].ts);
		json_object_object_add(h, "ts_us", json_object_new_string(us));
		json_object_object_add(h, "offset_ns", json_object_new_int64(stats_span(p->lo, lh[i].ts)));
		json_object_object_add(h, "dur_ns", json_object_new_int64(lh[i].dur));
		json_object_object_add(h, "function", lh[i].fn ? json_object_new_string(
							   s->fns[lh[i].fn - 1].display) : NULL);
		json_object_object_add(h, "file", lh[i].fn && s->fns[lh[i].fn - 1].file ?
				       json_object_new_string(s->fns[lh[i].fn - 1].file) : NULL);
		json_object_object_add(h, "line", lh[i].fn && s->fns[lh[i].fn - 1].line >= 0 ?
				       json_object_new_int(s->fns[lh[i].fn - 1].line) : NULL);
		json_object_object_add(h, "release", stats_reason_name(lh[i].reason) ?
				       json_object_new_string(stats_reason_name(lh[i].reason)) : NULL);
		if (lh[i].flags & (GIL_F_BEGIN_UNKNOWN | GIL_F_TRUNCATED))
			json_object_object_add(h, "edges_unknown", json_object_new_boolean(true));
		json_object_array_add(a, h);
	}
	json_object_object_add(o, "longest_holds", a);
	json_object_object_add(o, "waits_beyond_window", u64(late));
	json_object_object_add(o, "window_ns", json_object_new_int64(s->window));
	return o;
}

void stats_free(struct stats *s)
{
	struct stats_proc *p;
	size_t i, k;

	if (!s)
		return;
	for (i = 0; i < s->nr_procs; i++) {
		p = &s->procs[i];
		for (k = 0; k < p->nr_threads; k++)
			thread_free(&p->threads[k]);
		thread_free(&p->other);
		free(p->threads);
		free(p->tindex);
		free(p->label);
		free(p->cmdline);
		free(p->path);
		free(p->wait.b);
		free(p->hold.b);
		free(p->util);
		free(p->waiters);
		free(p->handoffs);
		free(p->hindex);
		free(p->ring);
		free(p->fnmap);
	}
	free(s->procs);
	for (i = 0; i < s->nr_fns; i++)
		free(s->fns[i].display);
	free(s->fns);
	gil_fnset_free(s->fnset);
	free(s);
}
