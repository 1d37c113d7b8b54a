// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Per-step statistics (steps.h). Memory: the steps, and per step one row per thread that had an
 * interval in it (its wait histogram allocated at its first wait) and BLAMES holders.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stdlib.h>
#include <string.h>

#include "common/util.h"

#include "giltrace.h"
#include "stats-priv.h"
#include "steps.h"

#define BLAMES 8 /* holders kept per step (space-saving: exact while there are fewer) */
#define TEXT_ROWS 40 /* steps shown by --summary besides the flagged ones */
#define TEXT_THREADS 4 /* threads shown under a flagged step */

struct row {
	size_t proc;
	int32_t tid;
	uint64_t ns[3]; /* per enum gil_kind, clipped to the step */
	uint64_t waits, forced, voluntary; /* waits that ended, releases that began, in it */
	struct stats_hist wait; /* those waits' whole durations */
};

struct blame {
	size_t proc;
	int32_t tid;
	uint32_t fn; /* global index + 1, 0: none */
	uint64_t ns; /* others' waiting while it held, within the step */
	bool used;
};

struct step {
	int64_t pid; /* the trace pid whose step it is (a mark's process), -1: every process */
	int64_t start, end, number;
	const char *prefix;
	struct row *rows;
	size_t nr, cap;
	struct blame blame[BLAMES];
	uint64_t ns[3], forced;
	bool flagged;
};

struct steps {
	char *source;
	struct step *v;
	size_t n, cap;
	uint64_t cut;
	bool outliers; /* enough steps for the rule */
	uint64_t median, mad, threshold;
	size_t flagged;
};

struct steps *steps_alloc(const char *source)
{
	struct steps *st = calloc(1, sizeof(*st));

	if (st && !(st->source = strdup(source))) {
		free(st);
		return NULL;
	}
	return st;
}

int steps_add(struct steps *st, const char *prefix, int64_t number, int64_t start, int64_t end)
{
	return steps_add_for(st, -1, prefix, number, start, end);
}

int steps_add_for(struct steps *st, int64_t pid, const char *prefix, int64_t number,
		  int64_t start, int64_t end)
{
	struct step *sp;

	if (st->n >= STEPS_MAX) {
		st->cut++;
		return 0;
	}
	if (st->n == st->cap) {
		size_t ncap = st->cap ? st->cap * 2 : 64;
		struct step *nv = realloc(st->v, ncap * sizeof(*nv));

		if (!nv)
			return -1;
		st->v = nv;
		st->cap = ncap;
	}
	sp = &st->v[st->n++];
	memset(sp, 0, sizeof(*sp));
	sp->pid = pid;
	sp->start = start;
	sp->end = end > start ? end : start;
	sp->number = number;
	sp->prefix = prefix;
	return 0;
}

static int by_start(const void *a, const void *b)
{
	const struct step *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return (x->end > y->end) - (x->end < y->end);
}

void steps_seal(struct steps *st)
{
	size_t i, o = 0;

	qsort(st->v, st->n, sizeof(*st->v), by_start);
	for (i = 0; i < st->n; i++) {
		if (o && st->v[i].pid == st->v[o - 1].pid && st->v[i].start < st->v[o - 1].end) {
			st->cut++; /* nested or overlapping: the steps are the outer, earlier ones */
			continue;
		}
		st->v[o++] = st->v[i];
	}
	st->n = o;
}

size_t steps_count(const struct steps *st)
{
	return st ? st->n : 0;
}

/* The steps that apply to trace pid @pid: [*@lo, *@hi) (sorted by pid, then time). */
static void range_of(const struct steps *st, int64_t pid, size_t *lo, size_t *hi)
{
	size_t a = 0, b = st->n;

	if (!st->n || st->v[0].pid < 0) {
		*lo = 0; /* a profiler's steps: every process's */
		*hi = st->n;
		return;
	}
	while (a < b) {
		size_t mid = a + (b - a) / 2;

		if (st->v[mid].pid < pid)
			a = mid + 1;
		else
			b = mid;
	}
	*lo = a;
	for (b = a; b < st->n && st->v[b].pid == pid; b++)
		;
	*hi = b;
}

/* The first step of [@lo, @hi) that ends after @ts (a pid's steps do not overlap). */
static size_t first_after(const struct steps *st, size_t lo, size_t hi, int64_t ts)
{
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (st->v[mid].end > ts)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

static struct row *row_of(struct step *sp, size_t proc, int32_t tid)
{
	size_t i;

	for (i = sp->nr; i-- > 0;)
		if (sp->rows[i].tid == tid && sp->rows[i].proc == proc)
			return &sp->rows[i];
	if (sp->nr == sp->cap) {
		size_t ncap = sp->cap ? sp->cap * 2 : 4;
		struct row *nr = realloc(sp->rows, ncap * sizeof(*nr));

		if (!nr)
			return NULL;
		sp->rows = nr;
		sp->cap = ncap;
	}
	memset(&sp->rows[sp->nr], 0, sizeof(sp->rows[0]));
	sp->rows[sp->nr].proc = proc;
	sp->rows[sp->nr].tid = tid;
	return &sp->rows[sp->nr++];
}

int steps_interval(struct steps *st, size_t proc, int64_t pid, int32_t tid, int kind, int reason,
		   int64_t ts, int64_t dur)
{
	int64_t end = ts + dur;
	size_t i, from, to;

	range_of(st, pid, &from, &to);
	for (i = first_after(st, from, to, ts); i < to && st->v[i].start <= end; i++) {
		struct step *sp = &st->v[i];
		int64_t lo = ts > sp->start ? ts : sp->start, hi = end < sp->end ? end : sp->end;
		struct row *r;
		/* a wait belongs to the step it ends in, a release to the one it begins in */
		bool here = kind == GIL_KIND_TAKE ? end > sp->start && end <= sp->end :
			    ts >= sp->start && ts < sp->end;

		if (hi <= lo && !here)
			continue;
		if (!(r = row_of(sp, proc, tid)))
			return -1;
		if (hi > lo)
			r->ns[kind] += (uint64_t)(hi - lo);
		if (!here)
			continue;
		if (kind == GIL_KIND_TAKE) {
			r->waits++;
			if (stats_hist_add(&r->wait, (uint64_t)dur) < 0)
				return -1;
		} else if (kind == GIL_KIND_DROP) {
			r->forced += reason == GIL_REASON_FORCED;
			r->voluntary += reason == GIL_REASON_VOLUNTARY;
		}
	}
	return 0;
}

void steps_blame(struct steps *st, size_t proc, int64_t pid, int32_t holder, uint32_t fn,
		 int64_t lo, int64_t hi)
{
	size_t i, k, from, to;

	range_of(st, pid, &from, &to);
	for (i = first_after(st, from, to, lo); i < to && st->v[i].start < hi; i++) {
		struct step *sp = &st->v[i];
		int64_t a = lo > sp->start ? lo : sp->start, b = hi < sp->end ? hi : sp->end;
		struct blame *min = NULL, *bl = NULL;

		if (b <= a)
			continue;
		for (k = 0; k < BLAMES; k++) {
			struct blame *x = &sp->blame[k];

			if (x->used && x->proc == proc && x->tid == holder && x->fn == fn) {
				bl = x;
				break;
			}
			/* a free slot first, else the smallest (space-saving keeps its count) */
			if (!min || (!x->used && min->used) ||
			    (x->used == min->used && x->ns < min->ns))
				min = x;
		}
		if (!bl) {
			bl = min;
			if (!bl->used) {
				bl->ns = 0;
				bl->used = true;
			}
			bl->proc = proc;
			bl->tid = holder;
			bl->fn = fn;
		}
		bl->ns += (uint64_t)(b - a);
	}
}

size_t steps_used(const struct steps *st)
{
	size_t i, n = 0;

	for (i = 0; i < st->n; i++)
		n += st->v[i].nr > 0;
	return n;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

static uint64_t median_of(uint64_t *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_u64);
	if (n % 2)
		return v[n / 2];
	return v[n / 2 - 1] / 2 + v[n / 2] / 2 + (v[n / 2 - 1] % 2 + v[n / 2] % 2) / 2;
}

void steps_finish(struct steps *st)
{
	uint64_t *w;
	size_t i, j;
	double spread;

	for (i = 0; i < st->n; i++) {
		struct step *sp = &st->v[i];

		memset(sp->ns, 0, sizeof(sp->ns));
		sp->forced = 0;
		for (j = 0; j < sp->nr; j++) {
			sp->ns[0] += sp->rows[j].ns[0];
			sp->ns[1] += sp->rows[j].ns[1];
			sp->ns[2] += sp->rows[j].ns[2];
			sp->forced += sp->rows[j].forced;
		}
	}
	st->outliers = st->n >= STEPS_MIN_FOR_OUTLIERS;
	if (!st->outliers || !(w = malloc(st->n * sizeof(*w))))
		return;
	for (i = 0; i < st->n; i++)
		w[i] = st->v[i].ns[0];
	st->median = median_of(w, st->n);
	for (i = 0; i < st->n; i++)
		w[i] = st->v[i].ns[0] > st->median ? st->v[i].ns[0] - st->median :
						      st->median - st->v[i].ns[0];
	st->mad = median_of(w, st->n);
	free(w);
	spread = 3.0 * 1.4826 * (double)st->mad;
	st->threshold = st->median + (spread > STEPS_FLOOR_NS ? (uint64_t)spread : STEPS_FLOOR_NS);
	for (i = 0; i < st->n; i++) {
		st->v[i].flagged = st->v[i].ns[0] > st->threshold;
		st->flagged += st->v[i].flagged;
	}
}

/* The row of @sp that waited most, or NULL. */
static const struct row *most_waiting(const struct step *sp)
{
	const struct row *best = NULL;
	size_t j;

	for (j = 0; j < sp->nr; j++)
		if (sp->rows[j].ns[0] && (!best || sp->rows[j].ns[0] > best->ns[0]))
			best = &sp->rows[j];
	return best;
}

/* The holder of @sp that others waited on most, or NULL. */
static const struct blame *top_blame(const struct step *sp)
{
	const struct blame *best = NULL;
	size_t k;

	for (k = 0; k < BLAMES; k++)
		if (sp->blame[k].used && (!best || sp->blame[k].ns > best->ns))
			best = &sp->blame[k];
	return best;
}

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
	const struct row *w = most_waiting(sp);
	const struct blame *b = top_blame(sp);
	char a[96], h[96], d1[32], d2[32];
	const char *fn = b ? fn_display(s, b->fn) : NULL;

	if (!w) {
		snprintf(buf, len, "no thread waited");
		return;
	}
	stats_dur(d1, sizeof(d1), w->ns[0]);
	if (!b) {
		snprintf(buf, len, "%s waited %s", who(a, sizeof(a), s, w->proc, w->tid), d1);
		return;
	}
	stats_dur(d2, sizeof(d2), b->ns);
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
		const struct row *w = most_waiting(sp);
		const struct blame *b = top_blame(sp);
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
	const struct row *w = most_waiting(sp);
	char name[64], b[5][32], wb[96];
	size_t len;

	step_name(name, sizeof(name), sp);
	/* several processes' own steps (their marks): say whose */
	len = strlen(name);
	if (pids && len < sizeof(name))
		snprintf(name + len, sizeof(name) - len, " pid %lld", (long long)sp->pid);
	fprintf(f, "%c %-20s %9s %9s %9s %9s %6llu  %-28s %9s\n", sp->flagged ? '!' : ' ', name,
		stats_dur(b[0], sizeof(b[0]), (uint64_t)(sp->end - sp->start)),
		stats_dur(b[1], sizeof(b[1]), sp->ns[0]), stats_dur(b[2], sizeof(b[2]), sp->ns[1]),
		stats_dur(b[3], sizeof(b[3]), sp->ns[2]), (unsigned long long)sp->forced,
		w ? who(wb, sizeof(wb), s, w->proc, w->tid) : "-",
		w && w->wait.n ? stats_dur(b[4], sizeof(b[4]), stats_hist_q(&w->wait, 0.99)) : "-");
	if (sp->flagged) {
		char line[512];
		size_t j, shown = 0;

		why_line(line, sizeof(line), s, sp);
		fprintf(f, "      outlier: %s\n", line);
		for (j = 0; j < sp->nr && shown < TEXT_THREADS; j++) {
			const struct row *r = &sp->rows[j];

			fprintf(f, "      %-28s wait %9s  hold %9s  release %9s  forced %llu\n",
				who(wb, sizeof(wb), s, r->proc, r->tid),
				stats_dur(b[0], sizeof(b[0]), r->ns[0]), stats_dur(b[1], sizeof(b[1]), r->ns[1]),
				stats_dur(b[2], sizeof(b[2]), r->ns[2]), (unsigned long long)r->forced);
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
			"%zu flagged\n", stats_dur(b[0], sizeof(b[0]), st->threshold),
			stats_dur(b[1], sizeof(b[1]), st->median), stats_dur(b[2], sizeof(b[2]), st->mad),
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

bool steps_get(const struct steps *st, size_t i, struct steps_view *out)
{
	const struct step *sp;
	const struct row *w;
	const struct blame *b;

	if (i >= st->n)
		return false;
	sp = &st->v[i];
	w = most_waiting(sp);
	b = top_blame(sp);
	out->pid = sp->pid;
	out->start = sp->start;
	out->end = sp->end;
	out->number = sp->number;
	memcpy(out->ns, sp->ns, sizeof(out->ns));
	out->forced = sp->forced;
	out->threads = sp->nr;
	out->flagged = sp->flagged;
	out->waiting_tid = w ? w->tid : -1;
	out->holder_tid = b ? b->tid : -1;
	out->holder_ns = b ? b->ns : 0;
	return true;
}

bool steps_rule(const struct steps *st, uint64_t *median, uint64_t *mad, uint64_t *threshold)
{
	*median = st->median;
	*mad = st->mad;
	*threshold = st->threshold;
	return st->outliers;
}

void steps_free(struct steps *st)
{
	size_t i, j;

	if (!st)
		return;
	for (i = 0; i < st->n; i++) {
		for (j = 0; j < st->v[i].nr; j++)
			free(st->v[i].rows[j].wait.b);
		free(st->v[i].rows);
	}
	free(st->v);
	free(st->source);
	free(st);
}
