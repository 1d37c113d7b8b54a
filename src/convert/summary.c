// SPDX-License-Identifier: LGPL-2.1-or-later
/* gil-convert --summary: the statistics of stats.c as tables for a terminal. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "common/util.h"

#include "giltrace.h"
#include "stats.h"

#define TOP_TEXT 10 /* rows of each top list on the terminal (JSON has STATS_TOP) */
#define UTIL_COLS 60 /* columns of the utilization strip */

/* A duration for people: "850ns", "12.3us", "4.56ms", "1.234s". */
static const char *dur(char *buf, size_t len, uint64_t ns)
{
	if (ns < 1000)
		snprintf(buf, len, "%lluns", (unsigned long long)ns);
	else if (ns < 1000000)
		snprintf(buf, len, "%.1fus", ns / 1e3);
	else if (ns < 1000000000)
		snprintf(buf, len, "%.2fms", ns / 1e6);
	else
		snprintf(buf, len, "%.3fs", ns / 1e9);
	return buf;
}

static double pct(uint64_t part, int64_t whole)
{
	return whole > 0 ? 100.0 * (double)part / (double)whole : 0.0;
}

/* An integer of the statistics' JSON (the renderers read the same numbers as --summary-json). */
static uint64_t jget(struct json_object *o, const char *key)
{
	struct json_object *v;

	return json_object_object_get_ex(o, key, &v) ? (uint64_t)json_object_get_int64(v) : 0;
}

static void quantiles(FILE *f, struct json_object *o, const char *prefix)
{
	static const char *const q[] = { "p50", "p90", "p99", "max" };
	char key[32], b[32];
	size_t i;

	for (i = 0; i < 4; i++) {
		snprintf(key, sizeof(key), "%s_%s_ns", prefix, q[i]);
		fprintf(f, " %8s", dur(b, sizeof(b), jget(o, key)));
	}
}

/* A strip of characters, one per column, darker for a larger share of @max. */
static void strip(FILE *f, struct json_object *values, double max)
{
	static const char levels[] = " .:-=+*#%@";
	size_t n = json_object_array_length(values), cols, c, i, from, to;
	double v, sum;

	if (!n || max <= 0)
		return;
	cols = n < UTIL_COLS ? n : UTIL_COLS;
	fputs("  |", f);
	for (c = 0; c < cols; c++) {
		from = c * n / cols;
		to = (c + 1) * n / cols;
		sum = 0;
		for (i = from; i < to; i++)
			sum += json_object_get_double(json_object_array_get_idx(values, i));
		v = to > from ? sum / (double)(to - from) / max : 0;
		i = v <= 0 ? 0 : v >= 1 ? 9 : (size_t)(v * 9.0 + 0.5);
		if (v > 0 && !i)
			i = 1;
		fputc(levels[i], f);
	}
	fputs("|\n", f);
}

static const char *thread_id(struct json_object *t)
{
	struct json_object *tid = json_object_object_get(t, "tid");

	return tid ? json_object_get_string(tid) : "-";
}

static const char *thread_name(struct json_object *t)
{
	struct json_object *name = json_object_object_get(t, "name");

	return name ? json_object_get_string(name) : "";
}

/* "tid name (mostly in fn)" of a thread's JSON. */
static const char *who(char *buf, size_t len, struct json_object *t)
{
	struct json_object *top = json_object_object_get(t, "mostly_in");

	snprintf(buf, len, "%s %s%s%s%s", thread_id(t), thread_name(t), top ? " (" : "",
		 top ? json_object_get_string(json_object_object_get(top, "function")) : "",
		 top ? ")" : "");
	return buf;
}

/*
 * The thread with the largest share of its time waiting (@hold: holding), among the threads
 * seen for at least a tenth of @wall (all of them when none was); *@seen: how many counted.
 */
static struct json_object *most(struct json_object *threads, int64_t wall, bool hold,
				double *share, size_t *seen)
{
	struct json_object *t, *best = NULL;
	size_t i, n = json_object_array_length(threads);
	double v;
	int pass;

	*seen = 0;
	*share = 0;
	for (pass = 0; pass < 2 && !*seen; pass++) {
		for (i = 0; i < n; i++) {
			t = json_object_array_get_idx(threads, i);
			if (!json_object_object_get(t, "tid") ||
			    (!pass && (int64_t)jget(t, "wall_ns") * 10 < wall))
				continue;
			(*seen)++;
			v = pct(jget(t, hold ? "hold_ns" : "wait_ns"), (int64_t)jget(t, "wall_ns"));
			if (jget(t, hold ? "holds" : "waits") && (!best || v > *share)) {
				best = t;
				*share = v;
			}
		}
	}
	return best;
}

/*
 * The answer first: the thread that spent the largest share of its time waiting for the GIL,
 * and the one that held it the largest share. Threads seen for less than a tenth of the
 * recording are left out (a thread that lived 1 ms and waited all of it starves nobody).
 */
static void verdict(FILE *f, struct json_object *threads, int64_t wall)
{
	struct json_object *most_wait, *most_hold;
	double ws, hs;
	char b1[160], b2[32];
	size_t seen;

	most_wait = most(threads, wall, false, &ws, &seen);
	most_hold = most(threads, wall, true, &hs, &seen);
	if (seen < 2)
		return;
	if (most_wait)
		fprintf(f, "  most waiting: %s waited for the GIL %.1f%% of its time (p99 wait %s)\n",
			who(b1, sizeof(b1), most_wait), ws,
			dur(b2, sizeof(b2), jget(most_wait, "wait_p99_ns")));
	if (most_hold)
		fprintf(f, "  most holding: %s held the GIL %.1f%% of its time\n",
			who(b1, sizeof(b1), most_hold), hs);
}

/* Longest waiting first (JSON keeps the recording's order): who lost the most time to the GIL. */
static int by_wait(const void *a, const void *b)
{
	uint64_t x = jget(*(struct json_object *const *)a, "wait_ns");
	uint64_t y = jget(*(struct json_object *const *)b, "wait_ns");

	return x > y ? -1 : x < y;
}

/* The threads of @pj sorted by by_wait, as a new array (NULL when out of memory: unsorted). */
static struct json_object *sorted_threads(struct json_object *pj)
{
	struct json_object *all = json_object_object_get(pj, "threads"), *out;
	size_t i, n = json_object_array_length(all);

	out = json_object_new_array();
	if (!out)
		return json_object_get(all);
	for (i = 0; i < n; i++)
		json_object_array_add(out, json_object_get(json_object_array_get_idx(all, i)));
	json_object_array_sort(out, by_wait);
	return out;
}

static void process_text(FILE *f, const struct stats *s, size_t pi, struct json_object *pj)
{
	const struct stats_proc *p = &s->procs[pi];
	struct json_object *threads = sorted_threads(pj), *t, *tl, *ho, *h;
	int64_t wall = p->have_hi && p->have_lo ? stats_span(p->lo, p->hi) : 0;
	uint64_t forced = 0, vol = 0, unk = 0;
	double max_waiters = 0, v;
	char b1[32], b2[32], b3[32];
	size_t i, n;

	for (i = 0; i < json_object_array_length(threads); i++) {
		t = json_object_array_get_idx(threads, i);
		forced += jget(t, "forced");
		vol += jget(t, "voluntary");
		unk += jget(t, "reason_unknown");
	}
	fprintf(f, "Process %s\n", p->label);
	fprintf(f, "  recorded %s, GIL held %.1f%% of it, %.2f threads waiting on average\n",
		dur(b1, sizeof(b1), (uint64_t)wall), pct(p->ns[GIL_KIND_HOLD], wall),
		wall > 0 ? (double)p->ns[GIL_KIND_TAKE] / (double)wall : 0.0);
	fprintf(f, "  %llu waits, %llu holds, %llu releases: %llu forced, %llu voluntary",
		(unsigned long long)p->count[0], (unsigned long long)p->count[1],
		(unsigned long long)p->count[2], (unsigned long long)forced,
		(unsigned long long)vol);
	if (unk)
		fprintf(f, ", %llu not classed", (unsigned long long)unk);
	fputc('\n', f);
	fprintf(f, "  wait p50/p90/p99/max");
	quantiles(f, pj, "wait");
	fprintf(f, "    hold p50/p90/p99/max");
	quantiles(f, pj, "hold");
	fputc('\n', f);
	verdict(f, threads, wall);
	fputc('\n', f);

	/* two tables, each within a 120-column terminal: shares and counts, then latencies */
	fprintf(f, "  %8s %-16s %-20s %9s %6s %6s %6s %7s %7s %7s %7s %7s\n", "tid", "thread",
		p->attributed ? "mostly in" : "", "wall", "wait%", "hold%", "rel%", "waits", "holds",
		"rels", "forced", "volunt");
	for (i = 0; i < json_object_array_length(threads); i++) {
		struct json_object *top;

		t = json_object_array_get_idx(threads, i);
		top = json_object_object_get(t, "mostly_in");
		wall = (int64_t)jget(t, "wall_ns");
		fprintf(f, "  %8s %-16.16s %-20.20s %9s %5.1f%% %5.1f%% %5.1f%% %7llu %7llu %7llu %7llu "
			"%7llu\n",
			thread_id(t), thread_name(t),
			top ? json_object_get_string(json_object_object_get(top, "function")) :
			      p->attributed ? "-" : "",
			dur(b1, sizeof(b1), (uint64_t)wall), pct(jget(t, "wait_ns"), wall),
			pct(jget(t, "hold_ns"), wall), pct(jget(t, "release_ns"), wall),
			(unsigned long long)jget(t, "waits"), (unsigned long long)jget(t, "holds"),
			(unsigned long long)jget(t, "releases"), (unsigned long long)jget(t, "forced"),
			(unsigned long long)jget(t, "voluntary"));
	}
	fprintf(f, "\n  %8s %-16s  %-35s  %s\n", "tid", "thread",
		"     wait p50      p90      p99      max", "     hold p50      p90      p99      max");
	for (i = 0; i < json_object_array_length(threads); i++) {
		t = json_object_array_get_idx(threads, i);
		fprintf(f, "  %8s %-16.16s ", thread_id(t), thread_name(t));
		quantiles(f, t, "wait");
		fputs("  ", f);
		quantiles(f, t, "hold");
		fputc('\n', f);
	}

	tl = json_object_object_get(pj, "timeline");
	n = json_object_array_length(json_object_object_get(tl, "utilization"));
	if (n) {
		struct json_object *w = json_object_object_get(tl, "waiters");

		for (i = 0; i < n; i++) {
			v = json_object_get_double(json_object_array_get_idx(w, i));
			if (v > max_waiters)
				max_waiters = v;
		}
		fprintf(f, "\n  GIL utilization over time (%zu columns over %s; ' ' idle .. '@' held "
			"all the time):\n", n < UTIL_COLS ? n : (size_t)UTIL_COLS,
			dur(b1, sizeof(b1), (uint64_t)stats_span(p->lo, p->hi)));
		strip(f, json_object_object_get(tl, "utilization"), 1.0);
		fprintf(f, "  threads waiting over time (' ' none .. '@' %.2f on average):\n",
			max_waiters);
		strip(f, w, max_waiters);
	}

	ho = json_object_object_get(pj, "handoffs");
	n = json_object_array_length(ho);
	if (n) {
		fprintf(f, "\n  Hand-offs: the thread that held the GIL last -> the thread that took "
			"it, and how long the taker waited (%llu in all%s):\n",
			(unsigned long long)p->handoffs_total,
			n > TOP_TEXT ? "; the most frequent pairs" : "");
		fprintf(f, "  %8s %-16s    %8s %-16s %8s %10s %10s\n", "from", "", "to", "", "count",
			"wait sum", "wait mean");
		for (i = 0; i < n && i < TOP_TEXT; i++) {
			const char *fn, *tn;
			int32_t from, to;
			uint64_t c, w;

			h = json_object_array_get_idx(ho, i);
			from = (int32_t)jget(h, "from");
			to = (int32_t)jget(h, "to");
			c = jget(h, "count");
			w = jget(h, "wait_ns");
			fn = stats_thread_name(s, pi, from);
			tn = stats_thread_name(s, pi, to);
			fprintf(f, "  %8d %-16.16s -> %8d %-16.16s %8llu %10s %10s\n", from,
				fn ? fn : "", to, tn ? tn : "", (unsigned long long)c,
				dur(b2, sizeof(b2), w), dur(b3, sizeof(b3), c ? w / c : 0));
		}
	}
	fputc('\n', f);
	json_object_put(threads);
}

static const char *where(char *buf, size_t len, const struct stats_fn *fn)
{
	if (fn->file && fn->line >= 0)
		snprintf(buf, len, "%s:%d", fn->file, fn->line);
	else if (fn->file)
		snprintf(buf, len, "%s", fn->file);
	else
		buf[0] = '\0';
	return buf;
}

static void functions_text(FILE *f, const struct stats *s)
{
	size_t idx[STATS_TOP], i, n;
	uint64_t held = 0;
	char b1[32], b2[32], loc[512];
	const struct stats_fn *fn;

	for (i = 0; i < s->nr_procs; i++)
		held += s->procs[i].ns[GIL_KIND_HOLD];
	n = stats_top_functions(s, 0, idx, TOP_TEXT);
	if (!n) {
		fputs("Python functions: none recorded (recorded with --no-attribution, or no offsets "
		      "for this interpreter: see the header's \"attribution\").\n\n", f);
		return;
	}
	fputs("Python functions by GIL held time:\n", f);
	fprintf(f, "  %10s %6s %8s %8s %7s %7s  %s\n", "held", "share", "holds", "releases",
		"forced", "volunt", "function (file:line)");
	for (i = 0; i < n; i++) {
		fn = &s->fns[idx[i]];
		fprintf(f, "  %10s %5.1f%% %8llu %8llu %7llu %7llu  %s  %s\n",
			dur(b1, sizeof(b1), fn->held_ns), pct(fn->held_ns, (int64_t)held),
			(unsigned long long)fn->holds, (unsigned long long)fn->releases,
			(unsigned long long)fn->forced, (unsigned long long)fn->voluntary,
			fn->display, where(loc, sizeof(loc), fn));
	}
	n = stats_top_functions(s, 1, idx, TOP_TEXT);
	fputs("\nPython functions by the time other threads waited while they held the GIL:\n", f);
	fprintf(f, "  %13s %10s  %s\n", "others waited", "held", "function (file:line)");
	for (i = 0; i < n; i++) {
		fn = &s->fns[idx[i]];
		fprintf(f, "  %13s %10s  %s  %s\n", dur(b1, sizeof(b1), fn->others_wait_ns),
			dur(b2, sizeof(b2), fn->held_ns), fn->display, where(loc, sizeof(loc), fn));
	}
	n = stats_top_functions(s, 2, idx, TOP_TEXT);
	fputs("\nPython functions by GIL releases:\n", f);
	fprintf(f, "  %8s %7s %9s  %s\n", "releases", "forced", "voluntary", "function (file:line)");
	for (i = 0; i < n; i++) {
		fn = &s->fns[idx[i]];
		fprintf(f, "  %8llu %7llu %9llu  %s  %s\n", (unsigned long long)fn->releases,
			(unsigned long long)fn->forced, (unsigned long long)fn->voluntary, fn->display,
			where(loc, sizeof(loc), fn));
	}
	fputc('\n', f);
}

static void longest_text(FILE *f, const struct stats *s)
{
	struct stats_long_hold lh[STATS_TOP];
	size_t i, n = stats_longest(s, lh);
	char b1[32], b2[32], us[32], loc[512];
	const struct stats_proc *p;
	const struct stats_fn *fn;
	const char *tn, *r;

	if (!n)
		return;
	fputs("Longest holds (ts as in the trace, microseconds; +offset from the process's start):\n",
	      f);
	fprintf(f, "  %10s %20s %10s %8s %8s %-16s %-9s %s\n", "held", "ts", "+offset", "pid", "tid",
		"thread", "release", "function (file:line)");
	for (i = 0; i < n && i < TOP_TEXT; i++) {
		p = &s->procs[lh[i].proc];
		tn = stats_thread_name(s, lh[i].proc, lh[i].tid);
		fn = lh[i].fn ? &s->fns[lh[i].fn - 1] : NULL;
		r = stats_reason_name(lh[i].reason);
		gil_fmt_us(us, lh[i].ts);
		fprintf(f, "  %10s %20s %10s %8lld %8d %-16.16s %-9s %s  %s\n",
			dur(b1, sizeof(b1), (uint64_t)lh[i].dur), us,
			dur(b2, sizeof(b2), (uint64_t)stats_span(p->lo, lh[i].ts)), (long long)p->os_pid,
			lh[i].tid, tn ? tn : "", r ? r : "-", fn ? fn->display : "-",
			fn ? where(loc, sizeof(loc), fn) : "");
	}
	fputc('\n', f);
}

/* Several processes (a multi-rank job): one line each, to see which rank the GIL costs most. */
static void overview(FILE *f, const struct stats *s, struct json_object *procs)
{
	const struct stats_proc *p;
	struct json_object *pj, *t;
	char b1[32], b2[160], rank[24];
	int64_t wall;
	double share;
	size_t i, seen;

	fprintf(f, "  %6s %8s %10s %6s %8s  %s\n", "rank", "pid", "recorded", "held", "waiters",
		"most waiting thread (share of its time)");
	for (i = 0; i < s->nr_procs; i++) {
		p = &s->procs[i];
		pj = json_object_array_get_idx(procs, i);
		wall = p->have_hi && p->have_lo ? stats_span(p->lo, p->hi) : 0;
		t = most(json_object_object_get(pj, "threads"), wall, false, &share, &seen);
		if (p->rank >= 0)
			snprintf(rank, sizeof(rank), "%lld", (long long)p->rank);
		else
			snprintf(rank, sizeof(rank), "-");
		fprintf(f, "  %6s %8lld %10s %5.1f%% %8.2f  ", rank, (long long)p->os_pid,
			dur(b1, sizeof(b1), (uint64_t)wall), pct(p->ns[GIL_KIND_HOLD], wall),
			wall > 0 ? (double)p->ns[GIL_KIND_TAKE] / (double)wall : 0.0);
		if (t)
			fprintf(f, "%s %.1f%%\n", who(b2, sizeof(b2), t), share);
		else
			fputs("-\n", f);
	}
	fputc('\n', f);
}

int stats_write_text(const struct stats *s, FILE *f)
{
	struct json_object *j = stats_json(s), *procs;
	size_t i, threads = 0;

	if (!j) {
		errno = ENOMEM;
		return -1;
	}
	procs = json_object_object_get(j, "processes");
	for (i = 0; i < s->nr_procs; i++)
		threads += s->procs[i].nr_threads + s->procs[i].has_other;
	fprintf(f, "GIL statistics: %zu process%s, %zu thread%s\n\n", s->nr_procs,
		s->nr_procs == 1 ? "" : "es", threads, threads == 1 ? "" : "s");
	if (s->nr_procs > 1)
		overview(f, s, procs);
	for (i = 0; i < s->nr_procs; i++)
		process_text(f, s, i, json_object_array_get_idx(procs, i));
	functions_text(f, s);
	longest_text(f, s);
	json_object_put(j);
	fflush(f);
	return ferror(f) ? -1 : 0;
}

/* Write @what to @path ("-": standard output) with @fn. */
static int write_to(const struct stats *s, const char *path, const char *what,
		    int (*fn)(const struct stats *, FILE *), char *err, size_t errlen)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "w") : stdout;
	const char *shown = f == stdout ? "standard output" : path;
	int ret, e;

	if (!f)
		return gil_err(err, errlen, "cannot write %s to %s: %s", what, shown, strerror(errno));
	ret = fn(s, f);
	e = errno;
	if (f != stdout && fclose(f) != 0 && !ret) {
		ret = -1;
		e = errno;
	}
	if (ret < 0)
		return gil_err(err, errlen, "cannot write %s to %s: %s", what, shown, strerror(e));
	return 0;
}

static int write_json(const struct stats *s, FILE *f)
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

int stats_outputs(const struct stats *s, const struct conv_options *opt, char *err, size_t errlen)
{
	if (opt->summary && write_to(s, "-", "the summary", stats_write_text, err, errlen) < 0)
		return -1;
	if (opt->summary_json &&
	    write_to(s, opt->summary_json, "the summary JSON", write_json, err, errlen) < 0)
		return -1;
	if (opt->svg && write_to(s, opt->svg, "the picture", stats_write_svg, err, errlen) < 0)
		return -1;
	return 0;
}

/* The backend when only statistics are asked for: the trace is not written at all. */
static int null_header(struct conv_out *o)
{
	return 0;
}

static int null_event(struct conv_out *o, const struct conv_event *ev)
{
	return 0;
}

static int null_footer(struct conv_out *o, struct json_object *other)
{
	return 0;
}

const struct conv_backend_ops conv_null_ops = {
	.name = "none",
	.header = null_header,
	.event = null_event,
	.footer = null_footer,
};
