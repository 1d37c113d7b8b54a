// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Statistics while converting (see stats.h): the processes and threads of the inputs, and the
 * intake of their records, which the other parts (hist.c, functions.c, bins.c, handoff.c,
 * longest.c) count; stats-json.c, summary.c and svg.c report them.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stdlib.h>
#include <string.h>

#include "giltrace.h"
#include "stats-priv.h"
#include "steps.h"
#include "format/keys.h"

const char *stats_reason_name(int reason)
{
	return reason == GIL_REASON_VOLUNTARY ? "voluntary" :
	       reason == GIL_REASON_FORCED ? "forced" : NULL;
}

/* ---- time bins (bins.c) ---- */

/* Double @p's bin width, in its process bins and its threads', until @end fits. */
static void fit_bins(struct stats_proc *p, int64_t end)
{
	size_t i;

	while (bins_too_narrow(p->origin, p->width, end)) {
		bins_halve(p->util);
		bins_halve(p->waiters);
		for (i = 0; i < p->nr_threads; i++) {
			if (p->threads[i].bins) {
				bins_halve(p->threads[i].bins);
				bins_halve(p->threads[i].bins + STATS_BINS);
			}
		}
		p->width *= 2;
	}
}

size_t stats_bins_used(const struct stats_proc *p)
{
	return p->bins_set && p->have_hi ? bins_used(p->origin, p->width, p->hi) : 0;
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

/* The footer's "alerts": the threshold, the count and the holds it lists. */
static int read_alerts(struct stats_proc *p, struct json_object *footer, const struct clockmap *cm)
{
	struct json_object *a = footer ? json_object_object_get(footer, GIL_KEY_ALERTS) : NULL;
	struct json_object *holds, *h;
	int64_t v, start, dur, tid, fn, waiters;
	size_t i, n;

	if (!a || !json_object_is_type(a, json_type_object))
		return 0;
	p->has_alerts = true;
	if (conv_json_int(a, GIL_KEY_ALERT_HOLD_NS, &v) && v > 0)
		p->alert_hold_ns = (uint64_t)v;
	if (conv_json_int(a, GIL_KEY_ALERT_COUNT, &v) && v > 0)
		p->alert_count = (uint64_t)v;
	holds = json_object_object_get(a, GIL_KEY_ALERT_HOLDS);
	if (!holds || !json_object_is_type(holds, json_type_array))
		return 0;
	n = json_object_array_length(holds);
	p->alerts = calloc(n ? n : 1, sizeof(*p->alerts));
	if (!p->alerts)
		return -1;
	for (i = 0; i < n; i++) {
		h = json_object_array_get_idx(holds, i);
		if (!conv_json_int(h, "tid", &tid) || !conv_json_int(h, GIL_KEY_ALERT_START, &start) ||
		    !conv_json_int(h, GIL_KEY_ALERT_DUR, &dur) || start < 0 || dur < 0 ||
		    start > TIME_MAX || dur > TIME_MAX || tid < INT32_MIN || tid > INT32_MAX)
			continue;
		if (!conv_json_int(h, "fn", &fn) || fn < 0 || fn > UINT32_MAX)
			fn = 0;
		if (!conv_json_int(h, GIL_KEY_ALERT_WAITERS, &waiters) || waiters < 0 ||
		    waiters > UINT32_MAX)
			waiters = 0;
		p->alerts[p->nr_alerts].tid = (int32_t)tid;
		p->alerts[p->nr_alerts].start = clockmap_map(cm, (uint64_t)start);
		p->alerts[p->nr_alerts].dur = dur;
		p->alerts[p->nr_alerts].fn = (uint32_t)fn;
		p->alerts[p->nr_alerts++].waiters = (uint32_t)waiters;
	}
	return 0;
}

static int by_longer(const void *a, const void *b)
{
	const struct stats_alert *x = a, *y = b;

	return x->dur != y->dur ? (x->dur > y->dur ? -1 : 1) : (x->start > y->start) - (x->start < y->start);
}

int stats_begin(struct stats *s, const struct conv_input *ci, const struct clockmap *cm)
{
	struct stats_proc *p;
	int64_t raw, ts, dur = 0;

	if (gil_grow(&s->procs, &s->cap_procs, s->nr_procs + 1, sizeof(*s->procs)) < 0)
		return -1;
	p = &s->procs[s->nr_procs++];
	memset(p, 0, sizeof(*p));
	s->cur = p;
	s->cur_first = s->nr_procs - 1;
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
	if (read_alerts(p, ci->footer, cm) < 0)
		return -1;
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

/* Thread @tid of @p, created when new; past the cap, the folded entry. NULL on ENOMEM. */
static struct stats_thread *thread_get(struct stats_proc *p, int32_t tid)
{
	struct stats_thread *t;
	long i = gil_tidindex_find(&p->tindex, tid);

	if (i >= 0)
		return &p->threads[i];
	if (p->nr_threads >= STATS_MAX_THREADS) {
		p->has_other = true;
		return &p->other;
	}
	if (gil_grow(&p->threads, &p->cap_threads, p->nr_threads + 1, sizeof(*p->threads)) < 0)
		return NULL;
	t = &p->threads[p->nr_threads];
	memset(t, 0, sizeof(*t));
	t->tid = tid;
	if (p->nr_threads < STATS_BIN_THREADS) {
		t->bins = calloc(2 * STATS_BINS, sizeof(*t->bins));
		if (!t->bins)
			return NULL;
	}
	if (gil_tidindex_add(&p->tindex, tid, p->nr_threads) < 0) {
		free(t->bins);
		return NULL;
	}
	p->nr_threads++;
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
	size_t i;

	if (!s->cur)
		return;
	t = thread_get(s->cur, tid);
	if (t)
		t->exited = true;
	for (i = s->cur_first + 1; i < s->nr_procs; i++) {
		long k = gil_tidindex_find(&s->procs[i].tindex, tid);

		if (k >= 0)
			s->procs[i].threads[k].exited = true;
	}
}

int stats_each_thread(const struct stats *s,
		      int (*fn)(void *ctx, int32_t tid, const char *name, const char *mostly_in,
				const char *native),
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
			 fi >= 0 && (size_t)fi < s->nr_fns ? s->fns[fi].display : NULL,
			 stats_thread_native(s, t));
		if (ret)
			return ret;
	}
	return 0;
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

/* ---- intervals ---- */

/*
 * The entry of GIL @gil of the current process (3.12+: a subinterpreter's own), made at its
 * first interval as a copy of the main one's span and bins; NULL on ENOMEM.
 */
static struct stats_proc *proc_of_gil(struct stats *s, uint32_t gil)
{
	struct stats_proc *p, *base;
	size_t i;
	int n;

	if (!gil)
		return s->cur;
	for (i = s->cur_first + 1; i < s->nr_procs; i++)
		if (s->procs[i].gil == gil)
			return &s->procs[i];
	if (gil_grow(&s->procs, &s->cap_procs, s->nr_procs + 1, sizeof(*s->procs)) < 0)
		return NULL;
	s->cur = base = &s->procs[s->cur_first];
	p = &s->procs[s->nr_procs++];
	memset(p, 0, sizeof(*p));
	base->gils = p->gils = true;
	p->gil = gil;
	p->pid = base->pid;
	p->os_pid = base->os_pid;
	p->rank = base->rank;
	p->other.tid = -1;
	n = asprintf(&p->label, "%s, GIL of interpreter %u", base->label, gil);
	p->cmdline = base->cmdline ? strdup(base->cmdline) : NULL;
	p->path = strdup(base->path);
	p->util = calloc(STATS_BINS, sizeof(*p->util));
	p->waiters = calloc(STATS_BINS, sizeof(*p->waiters));
	if (n < 0 || !p->path || !p->util || !p->waiters || (base->cmdline && !p->cmdline))
		return NULL;
	p->lo = base->lo;
	p->hi = base->hi;
	p->have_lo = base->have_lo;
	p->have_hi = base->have_hi;
	p->origin = base->origin;
	p->width = base->width;
	p->bins_set = base->bins_set;
	return p;
}

int stats_interval(struct stats *s, const struct gil_interval *iv, int64_t ts, int64_t dur)
{
	struct stats_proc *p = s->cur ? proc_of_gil(s, iv->gil) : NULL;
	struct stats_thread *t;
	struct stats_hold h;
	struct stats_long_hold lh;
	uint32_t g, nf;
	int kind = iv->kind, r = iv->reason < 3 ? iv->reason : 0;
	int64_t end;

	if (s->cur && !p)
		return -1;
	if (!p || kind < 0 || kind > 2)
		return 0;
	if (dur < 0)
		dur = 0;
	end = ts + dur;
	t = thread_get(p, iv->tid);
	if (!t)
		return -1;
	/* a thread's row under another GIL has the name it has under the main one */
	if (p != s->cur && !t->name && t->tid >= 0) {
		long bi = gil_tidindex_find(&s->cur->tindex, iv->tid);

		if (bi >= 0 && s->cur->threads[bi].name &&
		    !(t->name = strdup(s->cur->threads[bi].name)))
			return -1;
	}
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
	fit_bins(p, end);
	t->ns[kind] += (uint64_t)dur;
	t->count[kind]++;
	{
		uint8_t k;

		for (k = 0; k < t->nr_interps && t->interp[k] != iv->interp; k++)
			;
		if (k == t->nr_interps && k < STATS_THREAD_INTERPS)
			t->interp[t->nr_interps++] = iv->interp;
		if (k < t->nr_interps)
			t->interp_ns[k][kind] += (uint64_t)dur;
		else
			t->interps_folded = true;
	}
	p->ns[kind] += (uint64_t)dur;
	p->count[kind]++;
	if (iv->flags & (GIL_F_RESYNC | GIL_F_LOST))
		t->uncertain_ns += (uint64_t)dur;
	g = stats_fn_of(s, iv->fn);
	if (iv->fn)
		p->attributed = true;
	if (g && s->fns[g - 1].name)
		t->py_fn = true;
	if (stats_native_interval(s, t, iv, dur, g && s->fns[g - 1].name, &nf) < 0)
		return -1;
	if (s->steps && steps_interval(s->steps, (size_t)(p - s->procs), p->pid, iv->tid, kind, r,
				       ts, dur) < 0)
		return -1;
	if (g && kind != GIL_KIND_DROP)
		stats_thread_fn_add(t, g, (uint64_t)dur);
	switch (kind) {
	case GIL_KIND_TAKE:
		if (stats_hist_add(&t->wait, (uint64_t)dur) < 0 || stats_hist_add(&p->wait, (uint64_t)dur) < 0)
			return -1;
		bins_add(p->origin, p->width, p->waiters, ts, dur);
		if (t->bins)
			bins_add(p->origin, p->width, t->bins, ts, dur);
		if (g) {
			s->fns[g - 1].waits++;
			s->fns[g - 1].wait_ns += (uint64_t)dur;
		}
		return stats_wait_done(s, p, iv->tid, ts, end, iv->flags & GIL_F_BEGIN_UNKNOWN);
	case GIL_KIND_HOLD:
		if (stats_hist_add(&t->hold, (uint64_t)dur) < 0 || stats_hist_add(&p->hold, (uint64_t)dur) < 0)
			return -1;
		bins_add(p->origin, p->width, p->util, ts, dur);
		if (t->bins)
			bins_add(p->origin, p->width, t->bins + STATS_BINS, ts, dur);
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
		stats_longest_add(s, &lh);
		h.start = ts;
		h.end = end;
		h.fn = g;
		h.native = nf;
		h.tid = iv->tid;
		return stats_ring_push(s, p, &h);
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

/* Close GIL entry @p of the process that ends: its span, and what served reading only. */
static void end_proc(struct stats_proc *p)
{
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
	free(p->ring);
	p->ring = NULL;
	p->ring_cap = p->ring_len = p->ring_head = 0;
	gil_tidindex_free(&p->tindex);
	free(p->hindex);
	p->hindex = NULL;
	p->hindex_cap = 0;
}

int stats_end(struct stats *s)
{
	struct stats_proc *p = s->cur;
	size_t i;

	if (!p)
		return 0;
	/* the long holds' functions, while this file's ids still map */
	for (i = 0; i < p->nr_alerts; i++)
		p->alerts[i].fn = stats_fn_of(s, p->alerts[i].fn);
	if (p->nr_alerts)
		qsort(p->alerts, p->nr_alerts, sizeof(*p->alerts), by_longer);
	free(p->fnmap);
	p->fnmap = NULL;
	p->fnmap_cap = 0;
	stats_natives_end(p);
	/* each GIL's entry, the main one's first: its span, and what only served reading it */
	for (i = s->cur_first; i < s->nr_procs; i++)
		end_proc(&s->procs[i]);
	s->cur = NULL;
	return 0;
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
		gil_tidindex_free(&p->tindex);
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
		stats_natives_end(p);
		free(p->alerts);
	}
	free(s->procs);
	for (i = 0; i < s->nr_fns; i++)
		free(s->fns[i].display);
	free(s->fns);
	gil_fnset_free(s->fnset);
	stats_natives_free(s);
	steps_free(s->steps);
	free(s);
}

void stats_set_steps(struct stats *s, struct steps *st)
{
	steps_free(s->steps);
	s->steps = st;
}
