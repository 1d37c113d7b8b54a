// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The reference tool's files (see systrace.h): which bare arrays are sysTrace files, and their
 * GIL events turned into giltrace intervals by the reference converter's rules, per thread.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "giltrace.h"
#include "common/util.h"
#include "systrace.h"

struct st_thread {
	int32_t tid;
	bool used;
	bool has_take_end;
	int64_t take_end;
	bool open[2]; /* B seen, E not yet: take_gil, drop_gil */
	int64_t open_ts[2];
};

struct gil_systrace {
	struct st_thread *th;
	size_t cap, n;
	struct gil_systrace_stats st;
	struct gil_interval *out; /* where the event being read puts its intervals */
	int nout;
};

struct gil_systrace *gil_systrace_alloc(void)
{
	return calloc(1, sizeof(struct gil_systrace));
}

bool gil_systrace_recognize(struct json_object *o)
{
	struct json_object *name, *ph;
	const char *n, *p;

	if (!json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, "ph", &ph))
		return false;
	p = json_object_get_string(ph);
	if (!p || (strcmp(p, "X") && strcmp(p, "B") && strcmp(p, "E")))
		return false;
	if (!strcmp(p, "E") && !json_object_object_get_ex(o, "name", &name))
		return true; /* old B/E files: E may carry no name */
	if (!json_object_object_get_ex(o, "name", &name))
		return false;
	n = json_object_get_string(name);
	return n && (!strcmp(n, "take_gil") || !strcmp(n, "drop_gil"));
}

static struct st_thread *thread_get(struct gil_systrace *st, int32_t tid)
{
	size_t i, j;

	if ((st->n + 1) * 2 > st->cap) {
		size_t ncap = st->cap ? st->cap * 2 : 64;
		struct st_thread *nt = calloc(ncap, sizeof(*nt));

		if (!nt)
			return NULL;
		for (j = 0; j < st->cap; j++) {
			if (!st->th[j].used)
				continue;
			for (i = (uint32_t)st->th[j].tid % ncap; nt[i].used; i = (i + 1) % ncap)
				;
			nt[i] = st->th[j];
		}
		free(st->th);
		st->th = nt;
		st->cap = ncap;
	}
	for (i = (uint32_t)tid % st->cap; st->th[i].used; i = (i + 1) % st->cap)
		if (st->th[i].tid == tid)
			return &st->th[i];
	st->th[i].used = true;
	st->th[i].tid = tid;
	st->n++;
	return &st->th[i];
}

static bool us_ns(struct json_object *v, int64_t *ns)
{
	if (!v)
		return false;
	if (json_object_is_type(v, json_type_int)) {
		int64_t us = json_object_get_int64(v);

		if (us > INT64_MAX / 1000 || us < INT64_MIN / 1000)
			return false;
		*ns = us * 1000;
		return true;
	}
	if (!json_object_is_type(v, json_type_double) && !json_object_is_type(v, json_type_string))
		return false;
	/* a double keeps the text it was parsed from: read the digits, not the double */
	return gil_us_text_ns(json_object_is_type(v, json_type_string) ?
			      json_object_get_string(v) : json_object_to_json_string(v), ns);
}

static bool parse_id(struct json_object *v, int64_t *out)
{
	const char *s;
	char *end;
	long long n;

	if (!v)
		return false;
	if (json_object_is_type(v, json_type_int)) {
		*out = json_object_get_int64(v);
		return true;
	}
	if (!json_object_is_type(v, json_type_string))
		return false;
	s = json_object_get_string(v);
	if (!strncmp(s, "GIL_", 4))
		s += 4;
	errno = 0;
	n = strtoll(s, &end, 10);
	if (end == s || *end || errno)
		return false;
	*out = n;
	return true;
}

bool gil_systrace_pid(struct json_object *ev, int64_t *pid)
{
	struct json_object *v;

	return json_object_object_get_ex(ev, "pid", &v) && parse_id(v, pid);
}

static int emit(struct gil_systrace *st, int32_t tid, int kind, int64_t ts, int64_t dur)
{
	struct gil_interval iv = {
		.tid = tid,
		.kind = (uint8_t)kind,
		.start = (uint64_t)ts,
		.dur = (uint64_t)(dur > 0 ? dur : 0),
	};

	st->out[st->nout++] = iv;
	return 0;
}

/* One complete take_gil or drop_gil call of @t. */
static int call(struct gil_systrace *st, struct st_thread *t, int kind, int64_t ts, int64_t dur)
{
	if (kind == GIL_KIND_TAKE) {
		if (emit(st, t->tid, GIL_KIND_TAKE, ts, dur) < 0)
			return -1;
		t->take_end = ts + dur;
		t->has_take_end = true;
		return 0;
	}
	if (t->has_take_end && t->take_end <= ts &&
	    emit(st, t->tid, GIL_KIND_HOLD, t->take_end, ts - t->take_end) < 0)
		return -1;
	t->has_take_end = false;
	return emit(st, t->tid, GIL_KIND_DROP, ts, dur);
}

static int event(struct gil_systrace *st, struct json_object *ev)
{
	struct json_object *v;
	struct st_thread *t;
	const char *name = NULL, *ph;
	int64_t tid, ts, dur = 0;
	int kind = -1;

	st->st.events++;
	if (json_object_object_get_ex(ev, "name", &v))
		name = json_object_get_string(v);
	if (name && !strcmp(name, "take_gil"))
		kind = GIL_KIND_TAKE;
	else if (name && !strcmp(name, "drop_gil"))
		kind = GIL_KIND_DROP;
	if (!json_object_object_get_ex(ev, "ph", &v) || !(ph = json_object_get_string(v)) ||
	    !json_object_object_get_ex(ev, "tid", &v) || !parse_id(v, &tid) || tid < INT32_MIN ||
	    tid > INT32_MAX || !json_object_object_get_ex(ev, "ts", &v) ||
	    !us_ns(v, &ts))
		goto ignore;
	t = thread_get(st, (int32_t)tid);
	if (!t)
		return -1;
	if (!strcmp(ph, "X")) {
		if (kind < 0 || !json_object_object_get_ex(ev, "dur", &v) ||
		    !us_ns(v, &dur))
			goto ignore;
		return call(st, t, kind, ts, dur);
	}
	if (!strcmp(ph, "B")) {
		if (kind < 0)
			goto ignore;
		if (t->open[kind == GIL_KIND_DROP])
			st->st.unclosed++;
		t->open[kind == GIL_KIND_DROP] = true;
		t->open_ts[kind == GIL_KIND_DROP] = ts;
		return 0;
	}
	if (!strcmp(ph, "E")) {
		/* an E without a name closes whichever call is open */
		if (kind < 0 && name)
			goto ignore;
		if (kind < 0)
			kind = t->open[1] ? GIL_KIND_DROP : GIL_KIND_TAKE;
		if (!t->open[kind == GIL_KIND_DROP])
			goto ignore;
		t->open[kind == GIL_KIND_DROP] = false;
		return call(st, t, kind, t->open_ts[kind == GIL_KIND_DROP],
			    ts - t->open_ts[kind == GIL_KIND_DROP]);
	}
ignore:
	st->st.ignored++;
	return 0;
}

int gil_systrace_event(struct gil_systrace *st, struct json_object *ev,
		      struct gil_interval out[GIL_SYSTRACE_OUT_MAX])
{
	st->out = out;
	st->nout = 0;
	return event(st, ev) < 0 ? -1 : st->nout;
}

void gil_systrace_stats(const struct gil_systrace *st, struct gil_systrace_stats *stats)
{
	size_t i;

	*stats = st->st;
	for (i = 0; i < st->cap; i++)
		stats->unclosed += st->th[i].used ? st->th[i].open[0] + st->th[i].open[1] : 0;
}

void gil_systrace_free(struct gil_systrace *st)
{
	if (!st)
		return;
	free(st->th);
	free(st);
}
