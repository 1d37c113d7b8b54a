// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Statistics as JSON: otherData.statistics of the trace and --summary-json.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "giltrace.h"
#include "stats.h"
#include "steps.h"
#include "common/util.h"


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
		json_object_object_add(o, key, u64(stats_hist_q(h, qs[i].q)));
	}
	snprintf(key, sizeof(key), "%s_max_ns", prefix);
	json_object_object_add(o, key, u64(h->max));
}

static struct json_object *thread_json(const struct stats *s, const struct stats_thread *t)
{
	struct json_object *o = json_object_new_object(), *top = NULL;
	int64_t wall = stats_thread_wall(t);
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
	json_object_object_add(o, "uncertain_ns", u64(t->uncertain_ns));
	json_object_object_add(o, "uncertain_share", share(t->uncertain_ns, wall));
	json_object_object_add(o, "held_before_forced_ns",
			       u64(t->held_by_reason[GIL_REASON_FORCED]));
	json_object_object_add(o, "held_before_voluntary_ns",
			       u64(t->held_by_reason[GIL_REASON_VOLUNTARY]));
	/* a thread that ran in several interpreters (3.12+): its time in each */
	if (t->nr_interps > 1 || t->interps_folded) {
		struct json_object *in = json_object_new_array(), *e;
		uint8_t k;

		for (k = 0; k < t->nr_interps; k++) {
			e = json_object_new_object();
			json_object_object_add(e, "interp", json_object_new_int64(t->interp[k]));
			json_object_object_add(e, "wait_ns", u64(t->interp_ns[k][GIL_KIND_TAKE]));
			json_object_object_add(e, "hold_ns", u64(t->interp_ns[k][GIL_KIND_HOLD]));
			json_object_object_add(e, "release_ns", u64(t->interp_ns[k][GIL_KIND_DROP]));
			json_object_array_add(in, e);
		}
		json_object_object_add(o, "interpreters", in);
		if (t->interps_folded)
			json_object_object_add(o, "interpreters_folded", json_object_new_boolean(1));
	}
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
	/* a C thread that entered Python from native code, and ran no Python function of its own */
	if (stats_thread_native(s, t))
		json_object_object_add(o, "native_entry",
				       json_object_new_string(stats_thread_native(s, t)));
	return o;
}

static struct json_object *series(const int64_t *v, int64_t width, size_t n)
{
	struct json_object *a = json_object_new_array();
	size_t i;

	for (i = 0; i < n; i++)
		json_object_array_add(a, json_object_new_double(stats_bin_share(v, width, i)));
	return a;
}

static struct json_object *proc_json(const struct stats *s, const struct stats_proc *p)
{
	struct json_object *o = json_object_new_object(), *a, *tl, *h;
	struct stats_handoff *ho;
	int64_t wall = stats_proc_wall(p);
	size_t i, n = stats_bins_used(p);

	json_object_object_add(o, "pid", json_object_new_int64(p->os_pid));
	json_object_object_add(o, "trace_pid", json_object_new_int64(p->pid));
	json_object_object_add(o, "rank", p->rank >= 0 ? json_object_new_int64(p->rank) : NULL);
	json_object_object_add(o, "label", json_object_new_string(p->label));
	/* one entry per GIL of a process with several (3.12+): which one */
	if (p->gils)
		json_object_object_add(o, "gil", json_object_new_int64(p->gil));
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
	ho = stats_handoffs_sorted(p);
	for (i = 0; ho && i < p->nr_handoffs; i++) {
		h = json_object_new_object();
		json_object_object_add(h, "from", json_object_new_int(ho[i].from));
		json_object_object_add(h, "to", json_object_new_int(ho[i].to));
		json_object_object_add(h, "count", u64(ho[i].count));
		json_object_object_add(h, "wait_ns", u64(ho[i].wait_ns));
		json_object_array_add(a, h);
	}
	free(ho);
	json_object_object_add(o, "handoffs", a);
	json_object_object_add(o, "handoffs_total", u64(p->handoffs_total));
	json_object_object_add(o, "handoffs_unknown_giver", u64(p->handoffs_unknown));
	if (p->handoffs_folded)
		json_object_object_add(o, "handoffs_truncated", json_object_new_boolean(true));
	json_object_object_add(o, "waits_beyond_window", u64(p->late_waits));
	if (p->has_alerts) {
		struct json_object *al = json_object_new_object();

		json_object_object_add(al, "hold_ns", u64(p->alert_hold_ns));
		json_object_object_add(al, "count", u64(p->alert_count));
		a = json_object_new_array();
		for (i = 0; i < p->nr_alerts; i++) {
			const struct stats_alert *x = &p->alerts[i];

			h = json_object_new_object();
			json_object_object_add(h, "tid", json_object_new_int(x->tid));
			json_object_object_add(h, "start_ns", json_object_new_int64(x->start));
			json_object_object_add(h, "dur_ns", json_object_new_int64(x->dur));
			json_object_object_add(h, "waiters", u64(x->waiters));
			json_object_object_add(h, "function",
					       x->fn && x->fn <= s->nr_fns && s->fns[x->fn - 1].display
						       ? json_object_new_string(s->fns[x->fn - 1].display)
						       : NULL);
			json_object_array_add(a, h);
		}
		json_object_object_add(al, "holds", a);
		json_object_object_add(o, "long_holds", al);
	}
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

static struct json_object *native_json(const struct stats *s, const struct stats_native *n)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "native", json_object_new_string(n->name));
	json_object_object_add(o, "pid", json_object_new_int64(s->procs[n->proc].os_pid));
	json_object_object_add(o, "trace_pid", json_object_new_int64(s->procs[n->proc].pid));
	json_object_object_add(o, "held_ns", u64(n->held_ns));
	json_object_object_add(o, "holds", u64(n->holds));
	json_object_object_add(o, "others_wait_ns", u64(n->others_wait_ns));
	json_object_object_add(o, "releases", u64(n->releases));
	json_object_object_add(o, "release_ns", u64(n->release_ns));
	return o;
}

/* The native callers at the C API transitions: only when some interval read its own. */
static struct json_object *natives_json(const struct stats *s)
{
	static const char *const keys[] = { "held", "others_wait", "releases" };
	struct json_object *o = json_object_new_object(), *a;
	size_t idx[STATS_TOP], i, n;
	int k;

	a = json_object_new_object();
	json_object_object_add(a, "native", u64(s->native_ivs[2]));
	json_object_object_add(a, "interpreter", u64(s->native_ivs[1]));
	json_object_object_add(a, "not_read", u64(s->native_ivs[0]));
	json_object_object_add(o, "intervals", a);
	for (k = 0; k < 3; k++) {
		a = json_object_new_array();
		n = stats_top_natives(s, k, idx, STATS_TOP);
		for (i = 0; i < n; i++)
			json_object_array_add(a, native_json(s, &s->natives[idx[i]]));
		json_object_object_add(o, keys[k], a);
	}
	json_object_object_add(o, "distinct", u64(s->nr_natives));
	return o;
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
	if (s->steps)
		json_object_object_add(o, "steps", steps_json(s->steps, s));
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
	if (s->native_ivs[1] || s->native_ivs[2])
		json_object_object_add(o, "natives", natives_json(s));
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

int stats_write_json(const struct stats *s, FILE *f)
{
	struct json_object *j = stats_json(s);
	const char *t;

	if (!j) {
		errno = ENOMEM;
		return -1;
	}
	t = json_object_to_json_string_ext(j, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
						      JSON_C_TO_STRING_NOSLASHESCAPE);
	if (t)
		fprintf(f, "%s\n", t);
	json_object_put(j);
	fflush(f);
	if (!t)
		errno = ENOMEM;
	return !t || ferror(f) ? -1 : 0;
}
