// SPDX-License-Identifier: LGPL-2.1-or-later
/* gil-convert --summary: the statistics (struct stats, stats.h) as tables for a terminal. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

#include "giltrace.h"
#include "stats.h"
#include "steps.h"

#define TOP_TEXT 10 /* rows of each top list on the terminal (JSON has STATS_TOP) */
#define UTIL_COLS 60 /* columns of the utilization strip */

static double pct(uint64_t part, int64_t whole)
{
	return whole > 0 ? 100.0 * (double)part / (double)whole : 0.0;
}

static void quantiles(FILE *f, const struct stats_hist *h)
{
	static const double q[] = { 0.5, 0.9, 0.99 };
	char b[32];
	size_t i;

	for (i = 0; i < GIL_ARRAY_SIZE(q); i++)
		fprintf(f, " %8s", gil_fmt_dur(b, sizeof(b), stats_hist_q(h, q[i])));
	fprintf(f, " %8s", gil_fmt_dur(b, sizeof(b), h->max));
}

/* A strip of characters, one per column, darker for a larger share of @max: bins @v of @p. */
static void strip(FILE *f, const struct stats_proc *p, const int64_t *v, size_t n, double max)
{
	static const char levels[] = " .:-=+*#%@";
	size_t cols, c, i, from, to;
	double x, sum;

	if (!n || max <= 0)
		return;
	cols = n < UTIL_COLS ? n : UTIL_COLS;
	fputs("  |", f);
	for (c = 0; c < cols; c++) {
		from = c * n / cols;
		to = (c + 1) * n / cols;
		sum = 0;
		for (i = from; i < to; i++)
			sum += stats_bin_share(v, p->width, i);
		x = to > from ? sum / (double)(to - from) / max : 0;
		i = x <= 0 ? 0 : x >= 1 ? 9 : (size_t)(x * 9.0 + 0.5);
		if (x > 0 && !i)
			i = 1;
		fputc(levels[i], f);
	}
	fputs("|\n", f);
}

/* The tid, or "-" for the threads folded together. */
static const char *thread_id(char *buf, size_t len, const struct stats_thread *t)
{
	if (t->tid < 0)
		return "-";
	snprintf(buf, len, "%d", t->tid);
	return buf;
}

static const char *thread_name(const struct stats_thread *t)
{
	return t->tid < 0 ? "(other threads)" : t->name ? t->name : "";
}

/* Its name, and for a C thread that entered Python (stats_thread_native) that entry beside it. */
static const char *thread_label(char *buf, size_t len, const struct stats *s,
				const struct stats_thread *t)
{
	const char *native = stats_thread_native(s, t);

	if (!native)
		return thread_name(t);
	snprintf(buf, len, "%s%s[C: %s]", thread_name(t), t->name ? " " : "", native);
	return buf;
}

/* The display name of the function @t was mostly in, or NULL. */
static const char *mostly_in(const struct stats *s, const struct stats_thread *t)
{
	long fi = stats_thread_top_fn(t, NULL);

	return fi >= 0 && (size_t)fi < s->nr_fns ? s->fns[fi].display : NULL;
}

/* "tid name (mostly in fn)". */
static const char *who(char *buf, size_t len, const struct stats *s, const struct stats_thread *t)
{
	const char *top = stats_thread_native(s, t) ? NULL : mostly_in(s, t);
	char id[16], label[512];

	snprintf(buf, len, "%s %s%s%s%s", thread_id(id, sizeof(id), t),
		 thread_label(label, sizeof(label), s, t), top ? " (" : "", top ? top : "",
		 top ? ")" : "");
	return buf;
}

/*
 * The thread with the largest share of its time waiting (@hold: holding), among the threads
 * seen for at least a tenth of @wall (all of them when none was); *@seen: how many counted.
 */
static const struct stats_thread *most(const struct stats_thread *const *threads, size_t n,
				       int64_t wall, bool hold, double *share, size_t *seen)
{
	const struct stats_thread *t, *best = NULL;
	int k = hold ? GIL_KIND_HOLD : GIL_KIND_TAKE;
	size_t i;
	double v;
	int pass;

	*seen = 0;
	*share = 0;
	for (pass = 0; pass < 2 && !*seen; pass++) {
		for (i = 0; i < n; i++) {
			t = threads[i];
			if (t->tid < 0 || (!pass && stats_thread_wall(t) * 10 < wall))
				continue;
			(*seen)++;
			v = pct(t->ns[k], stats_thread_wall(t));
			if (t->count[k] && (!best || v > *share)) {
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
static void verdict(FILE *f, const struct stats *s, const struct stats_thread *const *threads,
		    size_t n, int64_t wall)
{
	const struct stats_thread *most_wait, *most_hold;
	double ws, hs;
	char b1[160], b2[32];
	size_t seen;

	most_wait = most(threads, n, wall, false, &ws, &seen);
	most_hold = most(threads, n, wall, true, &hs, &seen);
	if (seen < 2)
		return;
	if (most_wait)
		fprintf(f, "  most waiting: %s waited for the GIL %.1f%% of its time (p99 wait %s)\n",
			who(b1, sizeof(b1), s, most_wait), ws,
			gil_fmt_dur(b2, sizeof(b2), stats_hist_q(&most_wait->wait, 0.99)));
	if (most_hold)
		fprintf(f, "  most holding: %s held the GIL %.1f%% of its time\n",
			who(b1, sizeof(b1), s, most_hold), hs);
}

/* Longest waiting first: who lost the most time to the GIL. */
static int by_wait(const void *a, const void *b)
{
	uint64_t x = (*(const struct stats_thread *const *)a)->ns[GIL_KIND_TAKE];
	uint64_t y = (*(const struct stats_thread *const *)b)->ns[GIL_KIND_TAKE];

	return x > y ? -1 : x < y;
}

/* The threads of @p in the order of the JSON (the folded ones last), malloc'd; NULL: ENOMEM. */
static const struct stats_thread **thread_list(const struct stats_proc *p, size_t *n)
{
	const struct stats_thread **v = malloc((p->nr_threads + 1) * sizeof(*v));
	size_t i;

	if (!v)
		return NULL;
	for (i = 0; i < p->nr_threads; i++)
		v[i] = &p->threads[i];
	if (p->has_other)
		v[i++] = &p->other;
	*n = i;
	return v;
}

static int process_text(FILE *f, const struct stats *s, size_t pi)
{
	const struct stats_proc *p = &s->procs[pi];
	const struct stats_thread **threads, *t;
	int64_t wall = stats_proc_wall(p);
	uint64_t forced = 0, vol = 0, unk = 0;
	struct stats_handoff *ho;
	double max_waiters = 0, v;
	char b1[32], b2[32], b3[32], id[16], cell[64], label[512];
	size_t i, n, nt;

	threads = thread_list(p, &nt);
	if (!threads) {
		errno = ENOMEM;
		return -1;
	}
	qsort(threads, nt, sizeof(*threads), by_wait);
	for (i = 0; i < nt; i++) {
		forced += threads[i]->released[GIL_REASON_FORCED];
		vol += threads[i]->released[GIL_REASON_VOLUNTARY];
		unk += threads[i]->released[GIL_REASON_UNKNOWN];
	}
	fprintf(f, "Process %s\n", p->label);
	fprintf(f, "  recorded %s, GIL held %.1f%% of it, %.2f threads waiting on average\n",
		gil_fmt_dur(b1, sizeof(b1), (uint64_t)wall), pct(p->ns[GIL_KIND_HOLD], wall),
		wall > 0 ? (double)p->ns[GIL_KIND_TAKE] / (double)wall : 0.0);
	fprintf(f, "  %llu waits, %llu holds, %llu releases: %llu forced, %llu voluntary",
		(unsigned long long)p->count[0], (unsigned long long)p->count[1],
		(unsigned long long)p->count[2], (unsigned long long)forced,
		(unsigned long long)vol);
	if (unk)
		fprintf(f, ", %llu not classed", (unsigned long long)unk);
	fputc('\n', f);
	fprintf(f, "  wait p50/p90/p99/max");
	quantiles(f, &p->wait);
	fprintf(f, "    hold p50/p90/p99/max");
	quantiles(f, &p->hold);
	fputc('\n', f);
	verdict(f, s, threads, nt, wall);
	fputc('\n', f);

	/* two tables, each within a 120-column terminal: shares and counts, then latencies */
	fprintf(f, "  %8s %-16s %-20s %9s %6s %6s %6s %7s %7s %7s %7s %7s\n", "tid", "thread",
		p->attributed ? "mostly in" : "", "wall", "wait%", "hold%", "rel%", "waits", "holds",
		"rels", "forced", "volunt");
	for (i = 0; i < nt; i++) {
		const char *top;

		t = threads[i];
		top = mostly_in(s, t);
		wall = stats_thread_wall(t);
		/* a C thread has no Python function: its label takes the "mostly in" column too */
		if (stats_thread_native(s, t))
			snprintf(cell, sizeof(cell), "%-37.37s",
				 thread_label(label, sizeof(label), s, t));
		else
			snprintf(cell, sizeof(cell), "%-16.16s %-20.20s", thread_name(t),
				 top ? top : p->attributed ? "-" : "");
		fprintf(f, "  %8s %s %9s %5.1f%% %5.1f%% %5.1f%% %7llu %7llu %7llu %7llu %7llu\n",
			thread_id(id, sizeof(id), t), cell,
			gil_fmt_dur(b1, sizeof(b1), (uint64_t)wall), pct(t->ns[GIL_KIND_TAKE], wall),
			pct(t->ns[GIL_KIND_HOLD], wall), pct(t->ns[GIL_KIND_DROP], wall),
			(unsigned long long)t->count[GIL_KIND_TAKE],
			(unsigned long long)t->count[GIL_KIND_HOLD],
			(unsigned long long)t->count[GIL_KIND_DROP],
			(unsigned long long)t->released[GIL_REASON_FORCED],
			(unsigned long long)t->released[GIL_REASON_VOLUNTARY]);
	}
	/* what the split above cannot vouch for: holds around a release not seen, lost events */
	for (i = 0; i < nt; i++) {
		t = threads[i];
		if (!t->uncertain_ns)
			continue;
		wall = stats_thread_wall(t);
		fprintf(f, "  %8s %-16.16s %.1f%% of its time (%s) not exact: flagged resync or lost (a release not seen, lost events)\n",
			thread_id(id, sizeof(id), t), thread_name(t), pct(t->uncertain_ns, wall),
			gil_fmt_dur(b1, sizeof(b1), t->uncertain_ns));
	}
	fprintf(f, "\n  %8s %-16s  %-35s  %s\n", "tid", "thread",
		"     wait p50      p90      p99      max", "     hold p50      p90      p99      max");
	for (i = 0; i < nt; i++) {
		t = threads[i];
		fprintf(f, "  %8s %-16.16s ", thread_id(id, sizeof(id), t), thread_name(t));
		quantiles(f, &t->wait);
		fputs("  ", f);
		quantiles(f, &t->hold);
		fputc('\n', f);
	}

	n = stats_bins_used(p);
	if (n) {
		for (i = 0; i < n; i++) {
			v = stats_bin_share(p->waiters, p->width, i);
			if (v > max_waiters)
				max_waiters = v;
		}
		fprintf(f, "\n  GIL utilization over time (%zu columns over %s; ' ' idle .. '@' held "
			"all the time):\n", n < UTIL_COLS ? n : (size_t)UTIL_COLS,
			gil_fmt_dur(b1, sizeof(b1), (uint64_t)stats_span(p->lo, p->hi)));
		strip(f, p, p->util, n, 1.0);
		fprintf(f, "  threads waiting over time (' ' none .. '@' %.2f on average):\n",
			max_waiters);
		strip(f, p, p->waiters, n, max_waiters);
	}

	if (p->has_alerts) {
		fprintf(f, "\n  Holds of the GIL longer than %s (the recorder's --alert-hold): %llu%s\n",
			gil_fmt_dur(b1, sizeof(b1), p->alert_hold_ns), (unsigned long long)p->alert_count,
			p->nr_alerts > TOP_TEXT ? "; the longest" : "");
		if (p->nr_alerts)
			fprintf(f, "  %8s %-16s %-20s %9s %9s %8s\n", "tid", "thread", "function",
				"held", "at", "waiters");
		for (i = 0; i < p->nr_alerts && i < TOP_TEXT; i++) {
			const struct stats_alert *al = &p->alerts[i];
			const char *tn = stats_thread_name(s, pi, al->tid);
			const char *fnn = al->fn && al->fn <= s->nr_fns ? s->fns[al->fn - 1].display
									  : "-";

			fprintf(f, "  %8d %-16.16s %-20.20s %9s %9s %8u\n", al->tid, tn ? tn : "",
				fnn ? fnn : "-", gil_fmt_dur(b2, sizeof(b2), (uint64_t)al->dur),
				gil_fmt_dur(b3, sizeof(b3), (uint64_t)(al->start > p->lo ? al->start - p->lo : 0)),
				al->waiters);
		}
	}

	ho = stats_handoffs_sorted(p);
	n = ho ? p->nr_handoffs : 0;
	if (n) {
		fprintf(f, "\n  Hand-offs: the thread that held the GIL last -> the thread that took "
			"it, and how long the taker waited (%llu in all%s):\n",
			(unsigned long long)p->handoffs_total,
			n > TOP_TEXT ? "; the most frequent pairs" : "");
		fprintf(f, "  %8s %-16s    %8s %-16s %8s %10s %10s\n", "from", "", "to", "", "count",
			"wait sum", "wait mean");
		for (i = 0; i < n && i < TOP_TEXT; i++) {
			const char *fn = stats_thread_name(s, pi, ho[i].from);
			const char *tn = stats_thread_name(s, pi, ho[i].to);
			uint64_t c = ho[i].count, w = ho[i].wait_ns;

			fprintf(f, "  %8d %-16.16s -> %8d %-16.16s %8llu %10s %10s\n", ho[i].from,
				fn ? fn : "", ho[i].to, tn ? tn : "", (unsigned long long)c,
				gil_fmt_dur(b2, sizeof(b2), w), gil_fmt_dur(b3, sizeof(b3), c ? w / c : 0));
		}
	}
	free(ho);
	fputc('\n', f);
	free(threads);
	return 0;
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
			gil_fmt_dur(b1, sizeof(b1), fn->held_ns), pct(fn->held_ns, (int64_t)held),
			(unsigned long long)fn->holds, (unsigned long long)fn->releases,
			(unsigned long long)fn->forced, (unsigned long long)fn->voluntary,
			fn->display, where(loc, sizeof(loc), fn));
	}
	n = stats_top_functions(s, 1, idx, TOP_TEXT);
	fputs("\nPython functions by the time other threads waited while they held the GIL:\n", f);
	fprintf(f, "  %13s %10s  %s\n", "others waited", "held", "function (file:line)");
	for (i = 0; i < n; i++) {
		fn = &s->fns[idx[i]];
		fprintf(f, "  %13s %10s  %s  %s\n", gil_fmt_dur(b1, sizeof(b1), fn->others_wait_ns),
			gil_fmt_dur(b2, sizeof(b2), fn->held_ns), fn->display, where(loc, sizeof(loc), fn));
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

/*
 * The native functions at the C API transitions, per process: only for recordings whose
 * intervals read them (older ones print as they did).
 */
static void natives_text(FILE *f, const struct stats *s)
{
	size_t idx[STATS_TOP], i, n;
	uint64_t held = 0;
	const struct stats_native *nf;
	char b1[32], b2[32];
	long long pid;

	if (!s->native_ivs[1] && !s->native_ivs[2])
		return;
	fprintf(f, "Native callers of the GIL's C API: %llu intervals from native code, %llu the "
		"interpreter's own, %llu not read\n\n", (unsigned long long)s->native_ivs[2],
		(unsigned long long)s->native_ivs[1], (unsigned long long)s->native_ivs[0]);
	for (i = 0; i < s->nr_procs; i++)
		held += s->procs[i].ns[GIL_KIND_HOLD];
	n = stats_top_natives(s, 0, idx, TOP_TEXT);
	fputs("Native functions by GIL held time (the native code that took the GIL and let go of it "
	      "outside Python):\n", f);
	fprintf(f, "  %10s %6s %8s %8s  %s\n", "held", "share", "holds", "pid", "native function");
	for (i = 0; i < n; i++) {
		nf = &s->natives[idx[i]];
		pid = (long long)s->procs[nf->proc].os_pid;
		fprintf(f, "  %10s %5.1f%% %8llu %8lld  %s\n",
			gil_fmt_dur(b1, sizeof(b1), nf->held_ns), pct(nf->held_ns, (int64_t)held),
			(unsigned long long)nf->holds, pid, nf->name);
	}
	n = stats_top_natives(s, 1, idx, TOP_TEXT);
	fputs("\nNative functions by the time other threads waited while they held the GIL:\n", f);
	fprintf(f, "  %13s %10s %8s  %s\n", "others waited", "held", "pid", "native function");
	for (i = 0; i < n; i++) {
		nf = &s->natives[idx[i]];
		pid = (long long)s->procs[nf->proc].os_pid;
		fprintf(f, "  %13s %10s %8lld  %s\n",
			gil_fmt_dur(b1, sizeof(b1), nf->others_wait_ns),
			gil_fmt_dur(b2, sizeof(b2), nf->held_ns), pid, nf->name);
	}
	n = stats_top_natives(s, 2, idx, TOP_TEXT);
	fputs("\nNative functions by GIL releases (the native code that released it):\n", f);
	fprintf(f, "  %8s %12s %8s  %s\n", "releases", "release time", "pid", "native function");
	for (i = 0; i < n; i++) {
		nf = &s->natives[idx[i]];
		pid = (long long)s->procs[nf->proc].os_pid;
		fprintf(f, "  %8llu %12s %8lld  %s\n", (unsigned long long)nf->releases,
			gil_fmt_dur(b1, sizeof(b1), nf->release_ns), pid, nf->name);
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
			gil_fmt_dur(b1, sizeof(b1), (uint64_t)lh[i].dur), us,
			gil_fmt_dur(b2, sizeof(b2), (uint64_t)stats_span(p->lo, lh[i].ts)), (long long)p->os_pid,
			lh[i].tid, tn ? tn : "", r ? r : "-", fn ? fn->display : "-",
			fn ? where(loc, sizeof(loc), fn) : "");
	}
	fputc('\n', f);
}

/* Several processes (a multi-rank job): one line each, to see which rank the GIL costs most. */
static int overview(FILE *f, const struct stats *s)
{
	const struct stats_thread **threads, *t;
	const struct stats_proc *p;
	char b1[32], b2[160], rank[24];
	int64_t wall;
	double share;
	size_t i, n, seen;

	fprintf(f, "  %6s %8s %10s %6s %8s  %s\n", "rank", "pid", "recorded", "held", "waiters",
		"most waiting thread (share of its time)");
	for (i = 0; i < s->nr_procs; i++) {
		p = &s->procs[i];
		wall = stats_proc_wall(p);
		threads = thread_list(p, &n);
		if (!threads) {
			errno = ENOMEM;
			return -1;
		}
		t = most(threads, n, wall, false, &share, &seen);
		if (p->rank >= 0)
			snprintf(rank, sizeof(rank), "%lld", (long long)p->rank);
		else
			snprintf(rank, sizeof(rank), "-");
		fprintf(f, "  %6s %8lld %10s %5.1f%% %8.2f  ", rank, (long long)p->os_pid,
			gil_fmt_dur(b1, sizeof(b1), (uint64_t)wall), pct(p->ns[GIL_KIND_HOLD], wall),
			wall > 0 ? (double)p->ns[GIL_KIND_TAKE] / (double)wall : 0.0);
		if (t)
			fprintf(f, "%s %.1f%%\n", who(b2, sizeof(b2), s, t), share);
		else
			fputs("-\n", f);
		free(threads);
	}
	fputc('\n', f);
	return 0;
}

int stats_write_text(const struct stats *s, FILE *f)
{
	size_t i, threads = 0;

	for (i = 0; i < s->nr_procs; i++)
		threads += s->procs[i].nr_threads + s->procs[i].has_other;
	fprintf(f, "GIL statistics: %zu process%s, %zu thread%s\n\n", s->nr_procs,
		s->nr_procs == 1 ? "" : "es", threads, threads == 1 ? "" : "s");
	if (s->nr_procs > 1 && overview(f, s) < 0)
		return -1;
	for (i = 0; i < s->nr_procs; i++)
		if (process_text(f, s, i) < 0)
			return -1;
	if (s->steps)
		steps_write_text(s->steps, s, f);
	functions_text(f, s);
	natives_text(f, s);
	longest_text(f, s);
	fflush(f);
	return ferror(f) ? -1 : 0;
}
