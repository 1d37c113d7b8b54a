// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * One process's timeline.
 *
 * Slices stream straight through: each interval becomes an X event as it is read. The waiter
 * counter and the hand-off flows need the take and drop boundaries of all threads in time order,
 * but a recording lists intervals in the order they end, per thread: a take interval appears
 * only when the wait is over, so its start can be arbitrarily old, and threads interleave as the
 * recorder drained its rings.
 *
 * The bound: boundaries ("points") wait until the recording has advanced @window past them (the
 * watermark is the latest interval end seen), then are released in time order. They wait in one
 * FIFO per thread: a thread's intervals come in order, so its points are already sorted, and a
 * k-way merge (a heap of threads keyed by their oldest point) releases them globally sorted at
 * O(log threads) each. At most @max_points wait in all; when full, the oldest is released early.
 * So memory is at most max_points * sizeof(struct point) plus the thread table, whatever the
 * input size. Exact whenever every take_gil wait and the recorder's drain lag are shorter than
 * the window. Beyond it, a point older than what was already released is "late": it is processed
 * at the release time (a long wait counts from there on; a hand-off may attach to a neighbour),
 * counted, and the converter warns and reports the count in otherData.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "giltrace.h"
#include "timeline.h"
#include "common/tidindex.h"
#include "common/util.h"

enum point_type {
	/* at equal times: a drop precedes the take it lets through */
	PT_DROP = 0,
	PT_WAIT_END = 1,
	PT_WAIT_BEGIN = 2,
};

struct point {
	int64_t ts; /* when, for ordering (clamped if late) */
	uint64_t seq;
	int64_t s_ts, s_dur; /* the slice it belongs to, for binding a flow */
	int32_t tid;
	uint32_t gil; /* the GIL it is of: counters and hand-offs are per GIL */
	uint8_t type;
	bool counts; /* changes the waiter count (a take of non-zero length) */
};

/* One GIL's counter and hand-off state (3.12+: one per interpreter with its own). */
struct gilstate {
	uint32_t gil;
	int64_t cur_ts; /* counter: time of the points being accumulated */
	bool have_cur;
	int64_t value, emitted;
	bool pending; /* flows: the last drop not yet followed by a take */
	struct point drop;
};

struct thread {
	int32_t tid;
	bool has_end;
	int64_t last_end;
	char *name;
	/* its waiting points, a ring sorted by (ts, type, seq) */
	struct point *q;
	size_t qhead, qlen, qcap;
	size_t hpos; /* index in the thread heap, or SIZE_MAX */
};

struct timeline {
	timeline_emit_fn emit;
	void *ctx;
	bool flows, counter;
	const struct conv_proc *proc;

	struct thread **th; /* in order of first sight */
	size_t th_cap, th_n;
	struct gil_tidindex th_index; /* tid -> th[] */

	struct thread **heap; /* threads with waiting points, keyed by their oldest */
	size_t n, cap;
	size_t points, max;
	int64_t window;
	int64_t watermark;
	bool have_wm;
	int64_t released;
	bool have_released;
	uint64_t seq;

	struct gilstate *gs; /* per GIL, gs[0] the main one's once seen */
	size_t gs_n, gs_cap;
	uint64_t next_flow_id;

	struct timeline_stats st;
};

struct timeline *timeline_alloc(int64_t window_ns, size_t max_points, bool flows, bool counter,
				timeline_emit_fn emit, void *ctx)
{
	struct timeline *tl = calloc(1, sizeof(*tl));

	if (!tl)
		return NULL;
	tl->window = window_ns;
	tl->max = max_points ? max_points : 1;
	tl->flows = flows;
	tl->counter = counter;
	tl->emit = emit;
	tl->ctx = ctx;
	tl->next_flow_id = 1;
	return tl;
}

static void threads_clear(struct timeline *tl)
{
	size_t i;

	for (i = 0; i < tl->th_n; i++) {
		free(tl->th[i]->name);
		free(tl->th[i]->q);
		free(tl->th[i]);
	}
	free(tl->th);
	tl->th = NULL;
	tl->th_cap = tl->th_n = 0;
	gil_tidindex_free(&tl->th_index);
	tl->n = 0;
	tl->points = 0;
}

int timeline_begin(struct timeline *tl, const struct conv_proc *proc)
{
	threads_clear(tl);
	tl->proc = proc;
	tl->have_wm = tl->have_released = false;
	tl->gs_n = 0;
	memset(&tl->st, 0, sizeof(tl->st));
	return 0;
}

/* The thread @tid, created on first sight; NULL when out of memory. */
static struct thread *thread_get(struct timeline *tl, int32_t tid, bool *created)
{
	struct thread *t;
	long i = gil_tidindex_find(&tl->th_index, tid);

	*created = false;
	if (i >= 0)
		return tl->th[i];
	if (gil_grow(&tl->th, &tl->th_cap, tl->th_n + 1, sizeof(*tl->th)) < 0)
		return NULL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	if (gil_tidindex_add(&tl->th_index, tid, tl->th_n) < 0) {
		free(t);
		return NULL;
	}
	t->tid = tid;
	t->hpos = SIZE_MAX;
	tl->th[tl->th_n++] = t;
	tl->st.threads++;
	*created = true;
	return t;
}

static int emit_thread(struct timeline *tl, struct thread *t)
{
	struct conv_event ev = {
		.type = CEV_THREAD,
		.proc = tl->proc,
		.tid = t->tid,
		.name = t->name,
		/* the main thread first, the others in creation (tid) order */
		.sort_index = t->tid == tl->proc->os_pid ? 0 : t->tid,
	};

	return tl->emit(tl->ctx, &ev);
}

int timeline_thread(struct timeline *tl, int32_t tid, const char *name)
{
	struct thread *t;
	bool created;

	t = thread_get(tl, tid, &created);
	if (!t)
		return -1;
	if (name && (!t->name || strcmp(t->name, name))) {
		free(t->name);
		t->name = strdup(name);
		if (!t->name)
			return -1;
		return emit_thread(tl, t); /* viewers keep the last name given */
	}
	return created ? emit_thread(tl, t) : 0;
}

int timeline_label(struct timeline *tl, int32_t tid, const char *name, const char *comm,
		   const char *mostly_in, const char *native)
{
	const char *n = name ? name : comm;
	char *label;
	int ret;

	if (native)
		label = gil_strfmt("%s%s[C: %s]", n ? n : "", n ? " " : "", native);
	else if (mostly_in && mostly_in[0] != '<' && comm && (!name || !strcmp(name, comm)))
		label = gil_strfmt("%s (%s)", n, mostly_in);
	else
		return 0;
	if (!label)
		return -1;
	ret = timeline_thread(tl, tid, label);
	free(label);
	return ret;
}

static inline bool point_before(const struct point *a, const struct point *b)
{
	if (a->ts != b->ts)
		return a->ts < b->ts;
	if (a->type != b->type)
		return a->type < b->type;
	return a->seq < b->seq;
}

static inline struct point *q_at(struct thread *t, size_t i)
{
	return &t->q[(t->qhead + i) & (t->qcap - 1)];
}

static inline bool thread_before(struct thread *a, struct thread *b)
{
	return point_before(q_at(a, 0), q_at(b, 0));
}

static void heap_set(struct timeline *tl, size_t i, struct thread *t)
{
	tl->heap[i] = t;
	t->hpos = i;
}

static void sift_up(struct timeline *tl, size_t i)
{
	struct thread *t = tl->heap[i];

	while (i && thread_before(t, tl->heap[(i - 1) / 2])) {
		heap_set(tl, i, tl->heap[(i - 1) / 2]);
		i = (i - 1) / 2;
	}
	heap_set(tl, i, t);
}

static void sift_down(struct timeline *tl, size_t i)
{
	struct thread *t = tl->heap[i];
	size_t c;

	for (;;) {
		c = 2 * i + 1;
		if (c >= tl->n)
			break;
		if (c + 1 < tl->n && thread_before(tl->heap[c + 1], tl->heap[c]))
			c++;
		if (!thread_before(tl->heap[c], t))
			break;
		heap_set(tl, i, tl->heap[c]);
		i = c;
	}
	heap_set(tl, i, t);
}

/* Take the oldest waiting point of all threads. */
static void pop_oldest(struct timeline *tl, struct point *out)
{
	struct thread *t = tl->heap[0];

	*out = *q_at(t, 0);
	t->qhead = (t->qhead + 1) & (t->qcap - 1);
	t->qlen--;
	tl->points--;
	if (t->qlen) {
		sift_down(tl, 0);
		return;
	}
	t->hpos = SIZE_MAX;
	if (--tl->n) {
		heap_set(tl, 0, tl->heap[tl->n]);
		sift_down(tl, 0);
	}
}

/* GIL @gil's state (made at its first point); NULL on ENOMEM. */
static struct gilstate *gil_state(struct timeline *tl, uint32_t gil)
{
	struct gilstate *g;
	size_t i;

	for (i = 0; i < tl->gs_n; i++)
		if (tl->gs[i].gil == gil)
			return &tl->gs[i];
	if (gil_grow(&tl->gs, &tl->gs_cap, tl->gs_n + 1, sizeof(*tl->gs)) < 0)
		return NULL;
	g = &tl->gs[tl->gs_n++];
	memset(g, 0, sizeof(*g));
	g->gil = gil;
	return g;
}

/* A GIL's "GIL waiters" counter's current value, at the time it took it. */
static int emit_counter(struct timeline *tl, const struct gilstate *g)
{
	struct conv_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.type = CEV_COUNTER;
	ev.proc = tl->proc;
	ev.ts = g->cur_ts;
	ev.value = g->value < 0 ? 0 : g->value;
	ev.gil = g->gil;
	tl->st.counter_events++;
	return tl->emit(tl->ctx, &ev);
}

/* A point flowing out of the window, in time order: counter and flows advance. */
static int release(struct timeline *tl, const struct point *p)
{
	struct gilstate *g = gil_state(tl, p->gil);
	struct conv_event ev;
	int ret = 0;

	if (!g)
		return -1;
	tl->released = p->ts;
	tl->have_released = true;
	if (tl->counter && p->counts) {
		if (g->have_cur && p->ts != g->cur_ts && g->value != g->emitted) {
			ret = emit_counter(tl, g);
			g->emitted = g->value;
		}
		g->cur_ts = p->ts;
		g->have_cur = true;
		g->value += p->type == PT_WAIT_BEGIN ? 1 : -1;
	}
	if (!tl->flows || ret < 0)
		return ret;
	/* a hand-off joins a drop and a take of the same GIL */
	if (p->type == PT_DROP) {
		g->drop = *p;
		g->pending = true;
	} else if (p->type == PT_WAIT_END && g->pending) {
		g->pending = false;
		if (p->tid == g->drop.tid)
			return 0; /* the dropping thread took it back: no hand-off */
		memset(&ev, 0, sizeof(ev));
		ev.type = CEV_FLOW;
		ev.proc = tl->proc;
		ev.id = tl->next_flow_id++;
		ev.tid = g->drop.tid;
		ev.gil = g->gil;
		/* strictly inside both slices, so that viewers bind the arrow to them */
		ev.ts = g->drop.s_ts + (g->drop.s_dur >= 2 ? 1 : 0);
		ev.to_tid = p->tid;
		ev.to_ts = p->s_ts + (p->s_dur >= 2 ? p->s_dur - 1 : 0);
		tl->st.flows++;
		return tl->emit(tl->ctx, &ev);
	}
	return 0;
}

/* Queue @p on its thread @t (whose points are sorted: see the top of the file). */
static int push(struct timeline *tl, struct thread *t, struct point *p)
{
	struct point out;
	size_t i;

	if (tl->have_released && p->ts < tl->released) {
		p->ts = tl->released;
		tl->st.late++;
	}
	if (tl->points == tl->max) {
		pop_oldest(tl, &out);
		if (release(tl, &out) < 0)
			return -1;
		if (p->ts < tl->released) {
			p->ts = tl->released;
			tl->st.late++;
		}
	}
	if (t->qlen == t->qcap) {
		size_t ncap = t->qcap ? t->qcap * 2 : 8;
		struct point *nq = malloc(ncap * sizeof(*nq));

		if (!nq)
			return -1;
		for (i = 0; i < t->qlen; i++)
			nq[i] = *q_at(t, i);
		free(t->q);
		t->q = nq;
		t->qhead = 0;
		t->qcap = ncap;
	}
	p->seq = tl->seq++;
	/* equal times keep the global order: a drop at the instant its thread's take ended */
	for (i = t->qlen; i && !point_before(q_at(t, i - 1), p); i--)
		*q_at(t, i) = *q_at(t, i - 1);
	*q_at(t, i) = *p;
	t->qlen++;
	tl->points++;
	if (tl->points > tl->st.peak_points)
		tl->st.peak_points = tl->points;
	if (t->hpos == SIZE_MAX) {
		if (gil_grow(&tl->heap, &tl->cap, tl->n + 1, sizeof(*tl->heap)) < 0)
			return -1;
		heap_set(tl, tl->n++, t);
		sift_up(tl, t->hpos);
	} else if (i == 0) {
		sift_up(tl, t->hpos); /* a new oldest point */
	}
	return 0;
}

/* Release what is older than the watermark minus the window. */
static int advance(struct timeline *tl)
{
	struct point out;
	int64_t limit = tl->watermark - tl->window;

	while (tl->n && q_at(tl->heap[0], 0)->ts <= limit) {
		pop_oldest(tl, &out);
		if (release(tl, &out) < 0)
			return -1;
	}
	return 0;
}

int timeline_slice(struct timeline *tl, int32_t tid, int kind, uint32_t flags, uint32_t fixups,
		   int64_t ts, int64_t dur)
{
	return timeline_slice_gil(tl, tid, kind, flags, fixups, ts, dur, 0, 0);
}

int timeline_slice_gil(struct timeline *tl, int32_t tid, int kind, uint32_t flags,
		       uint32_t fixups, int64_t ts, int64_t dur, uint32_t interp, uint32_t gil)
{
	struct conv_event ev;
	struct point p;
	struct thread *t;
	bool created;
	int64_t end;

	t = thread_get(tl, tid, &created);
	if (!t || (created && emit_thread(tl, t) < 0))
		return -1;
	if (dur < 0)
		dur = 0;
	end = ts + dur;
	/* X events of one thread must not overlap: a viewer shows that as broken nesting */
	if (t->has_end && ts < t->last_end) {
		ts = t->last_end;
		dur = end > ts ? end - ts : 0;
		end = ts + dur;
		fixups |= CONV_FIX_OVERLAP;
		tl->st.overlaps++;
	}
	t->last_end = end;
	t->has_end = true;

	memset(&ev, 0, sizeof(ev));
	ev.type = CEV_SLICE;
	ev.proc = tl->proc;
	ev.tid = tid;
	ev.kind = kind;
	ev.flags = flags;
	ev.fixups = fixups;
	ev.ts = ts;
	ev.dur = dur;
	ev.interp = interp;
	ev.gil = gil;
	if (tl->emit(tl->ctx, &ev) < 0)
		return -1;
	tl->st.slices++;

	if (!tl->have_wm || end > tl->watermark) {
		tl->watermark = end;
		tl->have_wm = true;
	}
	memset(&p, 0, sizeof(p));
	p.tid = tid;
	p.gil = gil;
	p.s_ts = ts;
	p.s_dur = dur;
	if (kind == GIL_KIND_TAKE && (tl->flows || (tl->counter && dur > 0))) {
		p.counts = tl->counter && dur > 0;
		if (p.counts) {
			p.type = PT_WAIT_BEGIN;
			p.ts = ts;
			if (push(tl, t, &p) < 0)
				return -1;
		}
		p.type = PT_WAIT_END;
		p.ts = end;
		if (push(tl, t, &p) < 0)
			return -1;
	} else if (kind == GIL_KIND_DROP && tl->flows) {
		p.type = PT_DROP;
		p.ts = ts;
		if (push(tl, t, &p) < 0)
			return -1;
	}
	return advance(tl);
}

int timeline_end(struct timeline *tl, struct timeline_stats *stats)
{
	struct point out;
	int ret = 0;
	size_t i;

	while (tl->n && ret == 0) {
		pop_oldest(tl, &out);
		ret = release(tl, &out);
	}
	for (i = 0; ret == 0 && i < tl->gs_n; i++)
		if (tl->counter && tl->gs[i].have_cur && tl->gs[i].value != tl->gs[i].emitted)
			ret = emit_counter(tl, &tl->gs[i]);
	tl->gs_n = 0;
	if (stats)
		*stats = tl->st;
	threads_clear(tl);
	return ret;
}

void timeline_free(struct timeline *tl)
{
	if (!tl)
		return;
	threads_clear(tl);
	free(tl->heap);
	free(tl->gs);
	free(tl);
}
