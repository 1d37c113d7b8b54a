// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Per-step statistics (steps.h): the steps, what falls in each, the outlier rule. Memory: the
 * steps, and per step one row per thread that had an interval in it (its wait histogram
 * allocated at its first wait) and BLAMES holders. What is said of them is steps-report.c's.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stdlib.h>
#include <string.h>

#include "giltrace.h"
#include "stats-priv.h"
#include "steps-priv.h"

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
const struct row *steps_most_waiting(const struct step *sp)
{
	const struct row *best = NULL;
	size_t j;

	for (j = 0; j < sp->nr; j++)
		if (sp->rows[j].ns[0] && (!best || sp->rows[j].ns[0] > best->ns[0]))
			best = &sp->rows[j];
	return best;
}

/* The holder of @sp that others waited on most, or NULL. */
const struct blame *steps_top_blame(const struct step *sp)
{
	const struct blame *best = NULL;
	size_t k;

	for (k = 0; k < BLAMES; k++)
		if (sp->blame[k].used && (!best || sp->blame[k].ns > best->ns))
			best = &sp->blame[k];
	return best;
}

bool steps_get(const struct steps *st, size_t i, struct steps_view *out)
{
	const struct step *sp;
	const struct row *w;
	const struct blame *b;

	if (i >= st->n)
		return false;
	sp = &st->v[i];
	w = steps_most_waiting(sp);
	b = steps_top_blame(sp);
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
