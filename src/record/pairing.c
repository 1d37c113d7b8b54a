// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Per-thread GIL state machine: events in, intervals out (see pairing.h and doc/format.md).
 * One lane per GIL (3.12+: per interpreter with its own), each with its threads: a thread that
 * moves between interpreters has a state in each, and a lane's waiters wait for its GIL only.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pairing.h"
#include "common/tidindex.h"
#include "common/util.h"

enum state {
	S_UNKNOWN = 0, /* no event seen yet: the thread's state at the start is unknown */
	S_IDLE, /* not holding, not waiting */
	S_WAIT, /* inside take_gil */
	S_HOLD, /* between take_gil's return and drop_gil */
	S_DROP, /* inside drop_gil */
};

struct thread {
	int32_t tid;
	bool exited;
	uint8_t state;
	bool pending_lost; /* events were lost since this thread's last interval */
	uint32_t flags; /* flags gathered for the interval open now */
	uint64_t since;
	uint64_t seen; /* the pairing's event count at its last event: its latest lane */
	uint32_t interp; /* the interpreter it runs in, as its last event said */
	bool guessed; /* what it has open here began with an event that did not say which GIL
			 (the lane of its last event was taken) */
	uint32_t take_fn; /* function at the last take_gil entry */
	uint32_t drop_fn; /* function at the last drop_gil entry */
	uint32_t take_native, drop_native; /* native callers at those entries (0: not read) */
	uint8_t drop_reason; /* and the reason read there */
	uint8_t last_reason; /* reason of the thread's previous release */
	/* its release under way could not read its function (GIL_FN_DEFER): see pairing.h */
	bool deferring;
	bool name_wanted; /* its last release could not: its next take_gil entry names it */
};

/* One GIL's threads. */
struct lane {
	uint32_t gil; /* its id: the id of the interpreter whose GIL it is (0: the main one) */
	uint64_t start;
	gil_emit_fn emit;
	void *ctx;
	struct thread *threads; /* in order of first appearance */
	size_t nr, cap;
	struct gil_tidindex index; /* tid -> threads[] */
	uint64_t not_seen; /* take_gil entered by a thread still holding: a release was missed */
	uint32_t waiting; /* threads in S_WAIT now (set_state keeps it) */
};

/* More GILs than this reuse a lane where nothing is open (interpreters come and go). */
#define MAX_LANES 256

struct gil_pairing {
	uint64_t start;
	gil_emit_fn emit;
	void *ctx;
	struct lane *lanes; /* lanes[0] is the main GIL's, from the start */
	size_t nr_lanes, cap_lanes;
	uint64_t events;
};

static void lane_init(struct gil_pairing *p, struct lane *l, uint32_t gil)
{
	memset(l, 0, sizeof(*l));
	l->gil = gil;
	l->start = p->start;
	l->emit = p->emit;
	l->ctx = p->ctx;
}

static void lane_free(struct lane *l)
{
	free(l->threads);
	gil_tidindex_free(&l->index);
}

struct gil_pairing *gil_pairing_alloc(uint64_t start, gil_emit_fn emit, void *ctx)
{
	struct gil_pairing *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->start = start;
	p->emit = emit;
	p->ctx = ctx;
	if (gil_grow(&p->lanes, &p->cap_lanes, 1, sizeof(*p->lanes)) < 0) {
		free(p);
		return NULL;
	}
	lane_init(p, &p->lanes[0], 0);
	p->nr_lanes = 1;
	return p;
}

static struct thread *lookup(const struct lane *p, int32_t tid)
{
	long i = gil_tidindex_find(&p->index, tid);

	return i < 0 ? NULL : &p->threads[i];
}

/* Keep memory bounded with threads that come and go: forget exited ones. */
static int compact(struct lane *p)
{
	size_t i, j = 0;

	for (i = 0; i < p->nr; i++) {
		if (!p->threads[i].exited)
			p->threads[j++] = p->threads[i];
	}
	p->nr = j;
	gil_tidindex_clear(&p->index); /* the table keeps its size: the survivors fit */
	for (i = 0; i < p->nr; i++)
		if (gil_tidindex_add(&p->index, p->threads[i].tid, i) < 0)
			return -1;
	return 0;
}

static struct thread *add_thread(struct lane *p, int32_t tid)
{
	struct thread *t;

	if (p->nr >= GIL_PAIRING_MAX_THREADS && compact(p) < 0)
		return NULL;
	if (gil_grow(&p->threads, &p->cap, p->nr + 1, sizeof(*p->threads)) < 0 ||
	    gil_tidindex_add(&p->index, tid, p->nr) < 0)
		return NULL;
	t = &p->threads[p->nr];
	memset(t, 0, sizeof(*t));
	t->tid = tid;
	t->state = S_UNKNOWN;
	p->nr++;
	return t;
}

/* Every change of a thread's state goes through here: it keeps the count of waiting threads. */
static void set_state(struct lane *p, struct thread *t, enum state s)
{
	p->waiting -= t->state == S_WAIT;
	p->waiting += s == S_WAIT;
	t->state = (uint8_t)s;
}

static int emit(struct lane *p, struct thread *t, enum gil_kind kind, uint64_t start,
		uint64_t end, uint32_t flags, uint32_t fn, uint8_t reason)
{
	struct gil_interval iv;

	flags |= t->flags;
	if (t->pending_lost)
		flags |= GIL_F_LOST;
	t->pending_lost = false;
	t->flags = 0;
	if (end < start) {
		/* Clock went backwards across CPUs: never a negative duration. */
		end = start;
		flags |= GIL_F_RESYNC;
	}
	iv.tid = t->tid;
	iv.kind = (uint8_t)kind;
	iv.flags = flags;
	iv.start = start;
	iv.dur = end - start;
	iv.fn = fn;
	iv.reason = reason;
	iv.gil = p->gil;
	iv.interp = t->interp;
	/* a hold ends before any thread waiting for it stops waiting: these waited during it */
	iv.waiters = kind == GIL_KIND_HOLD ? p->waiting : 0;
	/* the hold a release ends and the release: named by the thread's next wait */
	iv.name_later = t->deferring && kind != GIL_KIND_TAKE;
	/* a wait and the hold it begins: who took the GIL; a release: who released it */
	iv.native = kind == GIL_KIND_DROP ? t->drop_native : t->take_native;
	return p->emit ? p->emit(p->ctx, &iv) : 0;
}


static void enter(struct lane *p, struct thread *t, enum state s, uint64_t ts,
		  uint32_t flags)
{
	set_state(p, t, s);
	t->since = ts;
	t->flags |= flags;
}

/* Close whatever @t has open at @ts with @flags; the thread is idle afterwards. */
static int close_open(struct lane *p, struct thread *t, uint64_t ts, uint32_t flags)
{
	int ret = 0;

	if (t->state == S_WAIT)
		ret = emit(p, t, GIL_KIND_TAKE, t->since, ts, flags, t->take_fn, t->last_reason);
	else if (t->state == S_HOLD)
		ret = emit(p, t, GIL_KIND_HOLD, t->since, ts, flags, t->take_fn, 0);
	else if (t->state == S_DROP)
		ret = emit(p, t, GIL_KIND_DROP, t->since, ts, flags, t->drop_fn, t->drop_reason);
	set_state(p, t, S_IDLE);
	t->flags = 0;
	return ret;
}

/*
 * The lane @tid's last event was in (the main GIL's when it has none), and its state there in
 * *@out (NULL: none).
 */
static struct lane *latest(const struct gil_pairing *p, int32_t tid, const struct thread **out)
{
	struct lane *best = &p->lanes[0];
	const struct thread *t;
	size_t i;

	*out = NULL;
	for (i = 0; i < p->nr_lanes; i++) {
		t = lookup(&p->lanes[i], tid);
		if (t && !t->exited && (!*out || t->seen > (*out)->seen)) {
			*out = t;
			best = &p->lanes[i];
		}
	}
	return best;
}

/* The lane of GIL @gil (GIL_ID_UNKNOWN: the one @tid's last event was in); NULL on ENOMEM. */
static struct lane *lane_of(struct gil_pairing *p, int32_t tid, uint32_t gil)
{
	struct lane *l, *best = &p->lanes[0];
	const struct thread *t;
	size_t i, k;

	/* one GIL (before 3.12, or no subinterpreter with its own yet): no question */
	if (p->nr_lanes == 1 && (gil == 0 || gil == GIL_ID_UNKNOWN))
		return best;
	if (gil == GIL_ID_UNKNOWN)
		return latest(p, tid, &t);
	for (i = 0; i < p->nr_lanes; i++)
		if (p->lanes[i].gil == gil)
			return &p->lanes[i];
	if (p->nr_lanes >= MAX_LANES) {
		/* a lane with nothing open takes the new GIL: what it knew was of a past one */
		for (i = 1; i < p->nr_lanes; i++) {
			l = &p->lanes[i];
			for (k = 0; k < l->nr; k++)
				if (!l->threads[k].exited && l->threads[k].state != S_IDLE &&
				    l->threads[k].state != S_UNKNOWN)
					break;
			if (k == l->nr) {
				lane_free(l);
				lane_init(p, l, gil);
				return l;
			}
		}
		return best; /* every one busy: the main GIL's (never with CPython's limits) */
	}
	if (gil_grow(&p->lanes, &p->cap_lanes, p->nr_lanes + 1, sizeof(*p->lanes)) < 0)
		return NULL;
	l = &p->lanes[p->nr_lanes++];
	lane_init(p, l, gil);
	return l;
}

/* Whether @tid is a thread some lane other than @not knows alive. */
static bool known_elsewhere(const struct gil_pairing *p, const struct lane *not, int32_t tid)
{
	const struct thread *t;
	size_t i;

	for (i = 0; i < p->nr_lanes; i++) {
		if (&p->lanes[i] == not)
			continue;
		t = lookup(&p->lanes[i], tid);
		if (t && !t->exited)
			return true;
	}
	return false;
}

/*
 * A take_gil entry that did not say which GIL went to the lane of the thread's last event (the
 * main GIL's for its first): when an event of another GIL comes while what it opened there is
 * still open, that was this GIL's (a thread holds one GIL at a time), and @t, idle in lane @p,
 * takes it over.
 */
static void rehome(struct gil_pairing *gp, struct lane *p, struct thread *t)
{
	struct thread *u;
	size_t i;

	for (i = 0; i < gp->nr_lanes; i++) {
		if (&gp->lanes[i] == p)
			continue;
		u = lookup(&gp->lanes[i], t->tid);
		if (!u || u->exited || !u->guessed ||
		    (u->state != S_WAIT && u->state != S_HOLD && u->state != S_DROP))
			continue;
		set_state(p, t, (enum state)u->state);
		t->since = u->since;
		t->flags = u->flags;
		t->pending_lost = u->pending_lost;
		t->take_fn = u->take_fn;
		t->drop_fn = u->drop_fn;
		t->take_native = u->take_native;
		t->drop_native = u->drop_native;
		t->drop_reason = u->drop_reason;
		t->last_reason = u->last_reason;
		set_state(&gp->lanes[i], u, S_IDLE);
		u->flags = 0;
		u->guessed = false;
		return;
	}
}

/*
 * A thread holds one GIL at a time: an event of GIL @p while @tid still has something open
 * under another means that one's end was not seen (a release where no probe is). It is closed
 * here, flagged, and counted as a release not seen.
 */
static int close_elsewhere(struct gil_pairing *gp, struct lane *p, int32_t tid, uint64_t ts)
{
	const uint32_t bad = GIL_F_TRUNCATED | GIL_F_RESYNC;
	struct thread *u;
	size_t i;
	int ret = 0, r;

	for (i = 0; i < gp->nr_lanes; i++) {
		if (&gp->lanes[i] == p)
			continue;
		u = lookup(&gp->lanes[i], tid);
		if (!u || u->exited ||
		    (u->state != S_WAIT && u->state != S_HOLD && u->state != S_DROP))
			continue;
		gp->lanes[i].not_seen += u->state == S_HOLD;
		r = close_open(&gp->lanes[i], u, ts < u->since ? u->since : ts, bad);
		if (r < 0 && !ret)
			ret = r;
	}
	return ret;
}

int gil_pairing_event(struct gil_pairing *p, int32_t tid, enum gil_ev ev, uint64_t ts)
{
	return gil_pairing_event_gil(p, tid, ev, ts, 0, 0, 0, 0, 0);
}

int gil_pairing_event_attr(struct gil_pairing *p, int32_t tid, enum gil_ev ev, uint64_t ts,
			   uint32_t fn, uint8_t reason)
{
	return gil_pairing_event_gil(p, tid, ev, ts, fn, reason, 0, 0, 0);
}

int gil_pairing_event_gil(struct gil_pairing *gp, int32_t tid, enum gil_ev ev, uint64_t ts,
			  uint32_t fn, uint8_t reason, uint32_t gil, uint32_t interp, uint32_t native)
{
	const uint32_t bad = GIL_F_TRUNCATED | GIL_F_RESYNC;
	struct lane *p = lane_of(gp, tid, gil);
	struct thread *t;
	int fresh = 0, ret = 0;

	gp->events++;
	if (!p)
		return -ENOMEM;
	t = lookup(p, tid);
	if (!t) {
		t = add_thread(p, tid);
		if (!t)
			return -ENOMEM;
		fresh = !known_elsewhere(gp, p, tid);
		/* a thread new to this GIL runs in its interpreter until told otherwise */
		t->interp = gil == GIL_ID_UNKNOWN ? p->gil : gil;
	} else if (t->exited) {
		/* The tid was reused by a new thread: it starts idle, and gets its name again. */
		t->exited = false;
		set_state(p, t, S_IDLE);
		t->flags = 0;
		t->take_fn = t->drop_fn = 0;
		t->take_native = t->drop_native = 0;
		t->drop_reason = t->last_reason = 0;
		fresh = 1;
	}
	if (ts < p->start)
		ts = p->start;
	t->seen = gp->events;
	if (interp != GIL_ID_UNKNOWN && gil != GIL_ID_UNKNOWN) {
		t->interp = interp;
		t->guessed = false;
		if (t->state == S_UNKNOWN || t->state == S_IDLE)
			rehome(gp, p, t);
		ret = gp->nr_lanes > 1 ? close_elsewhere(gp, p, tid, ts) : 0;
		if (ret < 0)
			return ret;
	} else if (ev == GIL_EV_TAKE_ENTRY) {
		t->guessed = true;
	}
	/* a deferred release ends with its drop interval, or with anything else that comes */
	if (t->deferring && !(t->state == S_DROP &&
			      (ev == GIL_EV_DROP_RETURN || ev == GIL_EV_DROP_EXIT)))
		t->deferring = false;

	switch (ev) {
	case GIL_EV_TAKE_ENTRY:
		t->name_wanted = false;
		/* Anything open now lacks its end: a missed return or a missed drop. */
		p->not_seen += t->state == S_HOLD;
		if (t->state != S_UNKNOWN && t->state != S_IDLE)
			ret = close_open(p, t, ts, bad);
		enter(p, t, S_WAIT, ts, 0);
		/* no Python runs in a thread between its release and its next take */
		t->take_fn = fn == GIL_FN_PREVIOUS ? t->drop_fn : fn;
		t->take_native = native;
		break;
	case GIL_EV_TAKE_RETURN:
		if (t->state == S_WAIT) {
			ret = emit(p, t, GIL_KIND_TAKE, t->since, ts, 0, t->take_fn, t->last_reason);
			enter(p, t, S_HOLD, ts, 0);
		} else if (t->state == S_UNKNOWN) {
			t->take_native = 0;
			ret = emit(p, t, GIL_KIND_TAKE, p->start, ts, GIL_F_BEGIN_UNKNOWN, 0, 0);
			t->take_fn = 0;
			enter(p, t, S_HOLD, ts, 0);
		} else if (t->state == S_HOLD) {
			t->flags |= GIL_F_RESYNC; /* a second return: the hold goes on */
		} else {
			/* S_IDLE (the entry was missed) or S_DROP (its return was missed) */
			ret = close_open(p, t, ts, bad);
			t->take_fn = 0;
			t->take_native = 0;
			enter(p, t, S_HOLD, ts, GIL_F_RESYNC);
		}
		break;
	case GIL_EV_DROP_ENTRY:
		t->deferring = fn != GIL_FN_PREVIOUS && (fn & GIL_FN_DEFER);
		t->name_wanted = t->deferring;
		if (fn != GIL_FN_PREVIOUS)
			fn &= ~GIL_FN_DEFER;
		if (t->state == S_HOLD) {
			ret = emit(p, t, GIL_KIND_HOLD, t->since, ts, 0, fn, reason);
		} else if (t->state == S_UNKNOWN) {
			ret = emit(p, t, GIL_KIND_HOLD, p->start, ts, GIL_F_BEGIN_UNKNOWN, fn,
					    reason);
		} else {
			ret = close_open(p, t, ts, bad);
			t->flags |= GIL_F_RESYNC;
		}
		enter(p, t, S_DROP, ts, 0);
		t->drop_fn = fn;
		t->drop_native = native;
		t->drop_reason = reason;
		t->last_reason = reason;
		break;
	case GIL_EV_TAKE_EXIT:
		if (t->state == S_WAIT) {
			ret = emit(p, t, GIL_KIND_TAKE, t->since, ts, 0, t->take_fn, t->last_reason);
			enter(p, t, S_HOLD, ts, 0);
		}
		break;
	case GIL_EV_DROP_EXIT:
		if (t->state == S_DROP) {
			ret = emit(p, t, GIL_KIND_DROP, t->since, ts, 0, t->drop_fn,
					    t->drop_reason);
			t->deferring = false;
			set_state(p, t, S_IDLE);
			t->flags = 0;
		}
		break;
	case GIL_EV_DROP_RETURN:
		if (t->state == S_DROP) {
			ret = emit(p, t, GIL_KIND_DROP, t->since, ts, 0, t->drop_fn,
					    t->drop_reason);
			t->deferring = false;
		} else if (t->state == S_UNKNOWN) {
			ret = emit(p, t, GIL_KIND_DROP, p->start, ts, GIL_F_BEGIN_UNKNOWN, 0, 0);
		} else if (t->state != S_IDLE) {
			ret = close_open(p, t, ts, bad);
		}
		/* a stray return while idle is dropped: nothing was open */
		set_state(p, t, S_IDLE);
		t->flags = 0;
		break;
	default:
		return -EINVAL;
	}
	return ret < 0 ? ret : fresh;
}

int gil_pairing_exit(struct gil_pairing *gp, int32_t tid, uint64_t ts)
{
	struct thread *t;
	int ret = 0, r;
	size_t i;

	for (i = 0; i < gp->nr_lanes; i++) {
		t = lookup(&gp->lanes[i], tid);
		if (!t || t->exited)
			continue;
		r = close_open(&gp->lanes[i], t, ts < t->since ? t->since : ts, GIL_F_TRUNCATED);
		t->exited = true;
		if (r < 0 && !ret)
			ret = r;
	}
	return ret;
}

void gil_pairing_lost(struct gil_pairing *gp)
{
	struct lane *p;
	size_t i, k;

	for (k = 0; k < gp->nr_lanes; k++) {
		p = &gp->lanes[k];
		for (i = 0; i < p->nr; i++) {
			if (p->threads[i].exited)
				continue;
			if (p->threads[i].state == S_WAIT || p->threads[i].state == S_HOLD ||
			    p->threads[i].state == S_DROP)
				p->threads[i].flags |= GIL_F_LOST;
			else
				p->threads[i].pending_lost = true;
		}
	}
}

int gil_pairing_finish(struct gil_pairing *gp, uint64_t end)
{
	struct thread *t;
	int ret = 0, r;
	size_t i, k;

	for (k = 0; k < gp->nr_lanes; k++) {
		for (i = 0; i < gp->lanes[k].nr; i++) {
			t = &gp->lanes[k].threads[i];
			if (t->exited)
				continue;
			r = close_open(&gp->lanes[k], t, end < t->since ? t->since : end,
				       GIL_F_TRUNCATED);
			if (r < 0 && !ret)
				ret = r;
		}
	}
	return ret;
}

bool gil_pairing_name_wanted(const struct gil_pairing *gp, int32_t tid)
{
	const struct thread *last;

	latest(gp, tid, &last);
	return last && last->name_wanted;
}

uint64_t gil_pairing_events(const struct gil_pairing *p)
{
	return p->events;
}

size_t gil_pairing_open(const struct gil_pairing *gp, struct gil_open *out, size_t max,
			uint32_t *waiting)
{
	static const uint8_t kind[] = { [S_WAIT] = GIL_KIND_TAKE, [S_HOLD] = GIL_KIND_HOLD,
					[S_DROP] = GIL_KIND_DROP };
	const struct thread *t;
	const struct lane *p;
	size_t i, k, n = 0;

	*waiting = 0;
	for (k = 0; k < gp->nr_lanes; k++) {
		p = &gp->lanes[k];
		for (i = 0; i < p->nr; i++) {
			t = &p->threads[i];
			if (t->exited ||
			    (t->state != S_WAIT && t->state != S_HOLD && t->state != S_DROP))
				continue;
			if (n < max) {
				out[n].tid = t->tid;
				out[n].kind = kind[t->state];
				out[n].since = t->since;
				out[n].fn = t->state == S_DROP ? t->drop_fn : t->take_fn;
				out[n].gil = p->gil;
			}
			n++;
		}
		*waiting += p->waiting;
	}
	return n;
}

uint64_t gil_pairing_not_seen(const struct gil_pairing *gp)
{
	uint64_t n = 0;
	size_t k;

	for (k = 0; k < gp->nr_lanes; k++)
		n += gp->lanes[k].not_seen;
	return n;
}

void gil_pairing_free(struct gil_pairing *gp)
{
	size_t k;

	if (!gp)
		return;
	for (k = 0; k < gp->nr_lanes; k++)
		lane_free(&gp->lanes[k]);
	free(gp->lanes);
	free(gp);
}
