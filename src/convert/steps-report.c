// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * What is said of the steps (steps.h): --summary-json's "steps", --summary's table, the instants
 * on the timeline. Reads the steps (steps-priv.h) and struct stats for names; nothing calls back.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stdio.h>
#include <string.h>

#include "common/util.h"

#include "giltrace.h"
#include "steps-priv.h"

#define TEXT_ROWS 40 /* steps shown by --summary besides the flagged ones */
#define TEXT_THREADS 4 /* threads shown under a flagged step */

static const char *fn_display(const struct stats *s, uint32_t fn)
{
	return fn && fn <= s->nr_fns ? s->fns[fn - 1].display : NULL;
}

static void step_name(char *buf, size_t len, const struct step *sp)
{
	snprintf(buf, len, "%s%lld", sp->prefix, (long long)sp->number);
}

/* "loader (1234)" */
static const char *who(char *buf, size_t len, const struct stats *s, size_t proc, int32_t tid)
{
	const char *n = stats_thread_name(s, proc, tid);

	if (n)
		snprintf(buf, len, "%s (%d)", n, (int)tid);
	else
		snprintf(buf, len, "tid %d", (int)tid);
	return buf;
}

/* Why step @sp was flagged, in one line: who waited, and who held the GIL meanwhile. */
static void why_line(char *buf, size_t len, const struct stats *s, const struct step *sp)
{
	const struct row *w = steps_most_waiting(sp);
	const struct blame *b = steps_top_blame(sp);
	char a[96], h[96], d1[32], d2[32];
	const char *fn = b ? fn_display(s, b->fn) : NULL;

	if (!w) {
		snprintf(buf, len, "no thread waited");
		return;
	}
	gil_fmt_dur(d1, sizeof(d1), w->ns[0]);
	if (!b) {
		snprintf(buf, len, "%s waited %s", who(a, sizeof(a), s, w->proc, w->tid), d1);
		return;
	}
	gil_fmt_dur(d2, sizeof(d2), b->ns);
	snprintf(buf, len, "%s waited %s; %s held the GIL%s%s for %s of it",
		 who(a, sizeof(a), s, w->proc, w->tid), d1, who(h, sizeof(h), s, b->proc, b->tid),
		 fn ? " in " : "", fn ? fn : "", d2);
}

static struct json_object *u64(uint64_t v)
{
	return json_object_new_uint64(v);
}

static struct json_object *thread_json(const struct stats *s, size_t proc, int32_t tid)
{
	struct json_object *o = json_object_new_object();
	const char *n = stats_thread_name(s, proc, tid);

	json_object_object_add(o, "pid", json_object_new_int64(s->procs[proc].os_pid));
	json_object_object_add(o, "trace_pid", json_object_new_int64(s->procs[proc].pid));
	json_object_object_add(o, "tid", json_object_new_int(tid));
	json_object_object_add(o, "thread", n ? json_object_new_string(n) : NULL);
	return o;
}

static struct json_object *step_json(const struct steps *st, const struct stats *s,
				     const struct step *sp)
{
	struct json_object *o = json_object_new_object(), *a = json_object_new_array(), *t;
	char buf[64], us[32];
	size_t j;

	step_name(buf, sizeof(buf), sp);
	json_object_object_add(o, "name", json_object_new_string(buf));
	json_object_object_add(o, "number", json_object_new_int64(sp->number));
	if (sp->pid >= 0)
		json_object_object_add(o, "trace_pid", json_object_new_int64(sp->pid));
	gil_fmt_us(us, sp->start);
	json_object_object_add(o, "start_us", json_object_new_string(us));
	json_object_object_add(o, "dur_ns", json_object_new_int64(sp->end - sp->start));
	json_object_object_add(o, "wait_ns", u64(sp->ns[GIL_KIND_TAKE]));
	json_object_object_add(o, "hold_ns", u64(sp->ns[GIL_KIND_HOLD]));
	json_object_object_add(o, "release_ns", u64(sp->ns[GIL_KIND_DROP]));
	json_object_object_add(o, "forced_releases", u64(sp->forced));
	json_object_object_add(o, "flagged", json_object_new_boolean(sp->flagged));
	for (j = 0; j < sp->nr; j++) {
		const struct row *r = &sp->rows[j];

		t = thread_json(s, r->proc, r->tid);
		if (s->procs[r->proc].gils)
			json_object_object_add(t, "gil", json_object_new_int64(s->procs[r->proc].gil));
		json_object_object_add(t, "wait_ns", u64(r->ns[GIL_KIND_TAKE]));
		json_object_object_add(t, "hold_ns", u64(r->ns[GIL_KIND_HOLD]));
		json_object_object_add(t, "release_ns", u64(r->ns[GIL_KIND_DROP]));
		json_object_object_add(t, "waits", u64(r->waits));
		json_object_object_add(t, "forced_releases", u64(r->forced));
		json_object_object_add(t, "voluntary_releases", u64(r->voluntary));
		json_object_object_add(t, "p99_wait_ns",
				       r->wait.n ? u64(stats_hist_q(&r->wait, 0.99)) : NULL);
		json_object_object_add(t, "max_wait_ns", r->wait.n ? u64(r->wait.max) : NULL);
		json_object_array_add(a, t);
	}
	json_object_object_add(o, "threads", a);
	if (sp->flagged) {
		const struct row *w = steps_most_waiting(sp);
		const struct blame *b = steps_top_blame(sp);
		struct json_object *why = json_object_new_object();
		char line[512];

		if (w) {
			t = thread_json(s, w->proc, w->tid);
			json_object_object_add(t, "wait_ns", u64(w->ns[GIL_KIND_TAKE]));
			json_object_object_add(why, "waiting", t);
		}
		if (b) {
			const char *fn = fn_display(s, b->fn);

			t = thread_json(s, b->proc, b->tid);
			json_object_object_add(t, "function", fn ? json_object_new_string(fn) : NULL);
			json_object_object_add(t, "ns", u64(b->ns));
			json_object_object_add(why, "held_by", t);
		}
		why_line(line, sizeof(line), s, sp);
		json_object_object_add(why, "text", json_object_new_string(line));
		json_object_object_add(o, "outlier", why);
	}
	(void)st;
	return o;
}

struct json_object *steps_json(const struct steps *st, const struct stats *s)
{
	struct json_object *o = json_object_new_object(), *a = json_object_new_array();
	size_t i;

	json_object_object_add(o, "source", json_object_new_string(st->source));
	json_object_object_add(o, "count", u64(st->n));
	if (st->cut)
		json_object_object_add(o, "cut", u64(st->cut));
	json_object_object_add(o, "rule",
			       json_object_new_string("flagged: wait > median + max(3 x 1.4826 x "
						      "MAD, 1 ms), from 5 steps on"));
	json_object_object_add(o, "median_wait_ns", st->outliers ? u64(st->median) : NULL);
	json_object_object_add(o, "mad_ns", st->outliers ? u64(st->mad) : NULL);
	json_object_object_add(o, "threshold_ns", st->outliers ? u64(st->threshold) : NULL);
	json_object_object_add(o, "flagged", u64(st->flagged));
	for (i = 0; i < st->n; i++)
		json_object_array_add(a, step_json(st, s, &st->v[i]));
	json_object_object_add(o, "steps", a);
	return o;
}

static void step_text(FILE *f, const struct stats *s, const struct step *sp, bool pids)
{
	const struct row *w = steps_most_waiting(sp);
	char name[64], b[5][32], wb[96];
	size_t len;

	step_name(name, sizeof(name), sp);
	/* several processes' own steps (their marks): say whose */
	len = strlen(name);
	if (pids && len < sizeof(name))
		snprintf(name + len, sizeof(name) - len, " pid %lld", (long long)sp->pid);
	fprintf(f, "%c %-20s %9s %9s %9s %9s %6llu  %-28s %9s\n", sp->flagged ? '!' : ' ', name,
		gil_fmt_dur(b[0], sizeof(b[0]), (uint64_t)(sp->end - sp->start)),
		gil_fmt_dur(b[1], sizeof(b[1]), sp->ns[0]),
		gil_fmt_dur(b[2], sizeof(b[2]), sp->ns[1]),
		gil_fmt_dur(b[3], sizeof(b[3]), sp->ns[2]), (unsigned long long)sp->forced,
		w ? who(wb, sizeof(wb), s, w->proc, w->tid) : "-",
		w && w->wait.n ? gil_fmt_dur(b[4], sizeof(b[4]), stats_hist_q(&w->wait, 0.99)) : "-");
	if (sp->flagged) {
		char line[512];
		size_t j, shown = 0;

		why_line(line, sizeof(line), s, sp);
		fprintf(f, "      outlier: %s\n", line);
		for (j = 0; j < sp->nr && shown < TEXT_THREADS; j++) {
			const struct row *r = &sp->rows[j];

			fprintf(f, "      %-28s wait %9s  hold %9s  release %9s  forced %llu\n",
				who(wb, sizeof(wb), s, r->proc, r->tid),
				gil_fmt_dur(b[0], sizeof(b[0]), r->ns[0]),
				gil_fmt_dur(b[1], sizeof(b[1]), r->ns[1]),
				gil_fmt_dur(b[2], sizeof(b[2]), r->ns[2]), (unsigned long long)r->forced);
			shown++;
		}
		if (sp->nr > shown)
			fprintf(f, "      (%zu more threads in --summary-json)\n", sp->nr - shown);
	}
}

void steps_write_text(const struct steps *st, const struct stats *s, FILE *f)
{
	bool pids = st->n && st->v[0].pid >= 0 && st->v[0].pid != st->v[st->n - 1].pid;
	char b[3][32];
	size_t i, shown = 0;

	fprintf(f, "Steps: %zu from %s", st->n, st->source);
	if (st->cut)
		fprintf(f, " (%llu more not used: overlapping, or past %d)",
			(unsigned long long)st->cut, STEPS_MAX);
	fputc('\n', f);
	if (st->outliers)
		fprintf(f, "  outlier: GIL wait over %s (median %s + max(3 x 1.4826 x MAD %s, 1ms)): "
			"%zu flagged\n", gil_fmt_dur(b[0], sizeof(b[0]), st->threshold),
			gil_fmt_dur(b[1], sizeof(b[1]), st->median),
			gil_fmt_dur(b[2], sizeof(b[2]), st->mad),
			st->flagged);
	else
		fprintf(f, "  outliers: not judged under %d steps\n", STEPS_MIN_FOR_OUTLIERS);
	fprintf(f, "  %-20s %9s %9s %9s %9s %6s  %-28s %9s\n", "step", "dur", "wait", "hold",
		"release", "forced", "waited most", "its p99");
	for (i = 0; i < st->n; i++) {
		if (!st->v[i].flagged && shown >= TEXT_ROWS)
			continue;
		step_text(f, s, &st->v[i], pids);
		shown += !st->v[i].flagged;
	}
	if (st->n > shown + st->flagged)
		fprintf(f, "  (%zu more steps in --summary-json)\n", st->n - shown - st->flagged);
	fputc('\n', f);
}

int steps_each(const struct steps *st, const struct stats *s, int64_t pid,
	       int (*fn)(void *ctx, int64_t start, int64_t end, const char *name, uint64_t wait,
			 uint64_t hold, const char *why),
	       void *ctx)
{
	size_t i, j;
	int ret;

	for (i = 0; i < st->n; i++) {
		const struct step *sp = &st->v[i];
		uint64_t wait = 0, hold = 0;
		bool any = false;
		char name[64], line[512];

		for (j = 0; j < sp->nr; j++) {
			if (s->procs[sp->rows[j].proc].pid != pid)
				continue;
			wait += sp->rows[j].ns[0];
			hold += sp->rows[j].ns[1];
			any = true;
		}
		if (!any)
			continue;
		step_name(name, sizeof(name), sp);
		if (sp->flagged)
			why_line(line, sizeof(line), s, sp);
		ret = fn(ctx, sp->start, sp->end, name, wait, hold, sp->flagged ? line : NULL);
		if (ret)
			return ret;
	}
	return 0;
}

