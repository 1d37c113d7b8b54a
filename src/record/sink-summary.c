// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The summary sink: per thread, the time it waited for, held and released the GIL, and the
 * Python function it waited and held longest in. gil-record's closing table, the library's
 * gil_recorder_threads() and the footer's "threads" come from it.
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
#include "format/keys.h"
#include "giltrace.h"
#include "sink.h"

#define TOP_FNS 8

struct thread {
	struct gil_thread_summary sum;
	bool exited, seen; /* seen: it has an edge, so first_ts holds */
	uint64_t first_ts, last_ts;
	/*
	 * The functions its waits and holds named, by time (0: a free slot), kept by space-saving:
	 * exact for up to TOP_FNS functions, an upper bound after.
	 */
	uint32_t top_fn[TOP_FNS];
	uint64_t top_ns[TOP_FNS];
};

struct summary_sink {
	const struct gil_fntab *fntab;
	struct thread *v; /* in order of first appearance */
	size_t nr, cap;
	struct gil_tidindex index; /* tid -> v[] */
	struct thread other; /* exited threads folded away to bound memory (tid -1) */
	struct gil_thread_summary *out; /* after end: v's summaries, and other's when it has any */
	size_t nr_out;
};

static void *summary_open(const struct gil_sink_target *t)
{
	struct summary_sink *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->fntab = t->fntab;
	s->other.sum.tid = -1;
	snprintf(s->other.sum.name, sizeof(s->other.sum.name), "(exited threads)");
	return s;
}

static void edge(struct thread *t, uint64_t first, uint64_t last)
{
	if (!t->seen || first < t->first_ts)
		t->first_ts = first;
	if (!t->seen || last > t->last_ts)
		t->last_ts = last;
	t->seen = true;
}

static void fold(struct thread *into, const struct thread *t)
{
	int k;

	for (k = 0; k < 3; k++) {
		into->sum.ns[k] += t->sum.ns[k];
		into->sum.count[k] += t->sum.count[k];
	}
	if (t->seen)
		edge(into, t->first_ts, t->last_ts);
}

/* Keep memory bounded with threads that come and go: fold exited ones into s->other. */
static int compact(struct summary_sink *s)
{
	size_t i, j = 0;

	for (i = 0; i < s->nr; i++) {
		if (s->v[i].exited) {
			fold(&s->other, &s->v[i]);
			continue;
		}
		s->v[j++] = s->v[i];
	}
	s->nr = j;
	gil_tidindex_clear(&s->index); /* the table keeps its size: the survivors fit */
	for (i = 0; i < s->nr; i++)
		if (gil_tidindex_add(&s->index, s->v[i].sum.tid, i) < 0)
			return -1;
	return 0;
}

static struct thread *thread_of(struct summary_sink *s, int32_t tid)
{
	long i = gil_tidindex_find(&s->index, tid);
	struct thread *t;

	if (i >= 0)
		return &s->v[i];
	if (s->nr >= GIL_SUMMARY_MAX_THREADS && compact(s) < 0)
		return NULL;
	if (gil_grow(&s->v, &s->cap, s->nr + 1, sizeof(*s->v)) < 0 ||
	    gil_tidindex_add(&s->index, tid, s->nr) < 0)
		return NULL;
	t = &s->v[s->nr++];
	memset(t, 0, sizeof(*t));
	t->sum.tid = tid;
	return t;
}

static int summary_interval(void *p, const struct gil_interval *iv)
{
	struct summary_sink *s = p;
	struct thread *t = thread_of(s, iv->tid);

	if (!t)
		return -1;
	t->exited = false; /* a tid the kernel gave again */
	/* a hold that began before the recording: its start is the recording's, not an event */
	edge(t, iv->flags & GIL_F_BEGIN_UNKNOWN ? iv->start + iv->dur : iv->start,
	     iv->start + iv->dur);
	t->sum.ns[iv->kind] += iv->dur;
	t->sum.count[iv->kind]++;
	if (iv->fn && iv->kind != GIL_KIND_DROP)
		gil_topk_add(t->top_fn, t->top_ns, TOP_FNS, iv->fn, iv->dur);
	return 0;
}

static int summary_thread(void *p, int32_t tid, const char *name, uint64_t ts)
{
	struct thread *t = thread_of(p, tid);

	(void)ts; /* the last name is the one the closing table shows */
	if (!t)
		return -1;
	snprintf(t->sum.name, sizeof(t->sum.name), "%s", name);
	return 0;
}

static int summary_exit(void *p, int32_t tid, uint64_t ts)
{
	struct summary_sink *s = p;
	long i = gil_tidindex_find(&s->index, tid);

	if (i >= 0) {
		s->v[i].exited = true;
		if (s->v[i].seen && ts > s->v[i].last_ts)
			s->v[i].last_ts = ts;
	}
	return 0;
}

static void finish_row(const struct summary_sink *s, const struct thread *t,
		       struct gil_thread_summary *out)
{
	size_t best;

	*out = t->sum;
	out->wall_ns = t->seen ? t->last_ts - t->first_ts : 0;
	best = gil_topk_best(t->top_fn, t->top_ns, TOP_FNS);
	if (t->sum.tid >= 0)
		gil_fntab_display(s->fntab, t->top_fn[best], out->mostly_in,
				  sizeof(out->mostly_in));
}

static int summary_end(void *p, struct json_object *footer)
{
	struct summary_sink *s = p;
	const struct thread *o = &s->other;
	struct json_object *threads, *th;
	size_t i;
	char *u;

	s->out = calloc(s->nr + 1, sizeof(*s->out));
	if (!s->out)
		return -1;
	/* a row per thread with an interval: one only named (a renamed helper thread) has none */
	for (i = 0; i < s->nr; i++)
		if (s->v[i].seen)
			finish_row(s, &s->v[i], &s->out[s->nr_out++]);
	if (o->sum.count[0] + o->sum.count[1] + o->sum.count[2])
		finish_row(s, o, &s->out[s->nr_out++]);
	/* the footer names every thread (the folded ones went by their own records) */
	threads = json_object_new_array();
	for (i = 0; i < s->nr; i++) {
		if (!s->v[i].seen)
			continue;
		th = json_object_new_object();
		u = gil_utf8_copy(s->v[i].sum.name);
		json_object_object_add(th, GIL_KEY_REC_TID, json_object_new_int(s->v[i].sum.tid));
		json_object_object_add(th, GIL_KEY_REC_NAME, json_object_new_string(u ? u : ""));
		free(u);
		json_object_array_add(threads, th);
	}
	json_object_object_add(footer, GIL_KEY_THREADS, threads);
	return 0;
}

const struct gil_thread_summary *gil_sink_summary_threads(void *p, size_t *nr)
{
	struct summary_sink *s = p;

	*nr = s && s->out ? s->nr_out : 0;
	return s ? s->out : NULL;
}

static void summary_close(void *p)
{
	struct summary_sink *s = p;

	free(s->v);
	free(s->out);
	gil_tidindex_free(&s->index);
	free(s);
}

const struct gil_sink_ops gil_sink_summary = {
	.name = "summary",
	.open = summary_open,
	.interval = summary_interval,
	.thread = summary_thread,
	.exit = summary_exit,
	.end = summary_end,
	.close = summary_close,
};
