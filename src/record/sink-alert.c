// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The watchdog sink (gil-record --alert-hold MS): a hold longer than the threshold is an alert.
 * An open hold is seen at each round's tick, from the holds pairing has open once every event
 * before the round was handed on: it is reported when it passes the threshold and each time it
 * doubles (a hang says so while it lasts, in a few lines), then once more at its end, with the
 * function and duration the interval says. Holds reported are kept for the footer ("alerts"),
 * the first GIL_ALERT_KEEP of them; the rest are counted.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attrib/attrib.h"
#include "clock.h"
#include "common/util.h"
#include "format/keys.h"
#include "sink.h"

#define GIL_ALERT_KEEP 1000 /* holds listed in the footer */
#define MAX_OPEN 64 /* open holds followed at once (one per GIL) */
#define MAX_NAMES 4096 /* thread names kept; more threads are reported unnamed */

/* A hold seen open past the threshold, until its interval comes. */
struct open_hold {
	int32_t tid;
	uint64_t since;
	uint64_t next; /* report again when it has held this long */
	uint32_t waiters; /* most threads seen waiting during it */
};

struct kept {
	int32_t tid;
	uint64_t start, dur;
	uint32_t fn, waiters;
};

struct name {
	int32_t tid;
	char name[17];
};

struct alert_sink {
	const struct gil_fntab *fntab;
	const struct gil_options *opts;
	pid_t pid;
	int rank;
	char comm[17];
	uint64_t threshold; /* ns; 0: the watchdog is off */
	struct open_hold open[MAX_OPEN];
	size_t nr_open;
	struct kept *kept;
	size_t nr_kept, cap_kept;
	uint64_t count, cut;
	struct name *names;
	size_t nr_names, cap_names;
};

static void *alert_open(const struct gil_sink_target *t)
{
	struct alert_sink *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->fntab = t->fntab;
	s->opts = t->opts;
	s->pid = t->pid;
	s->rank = t->rank;
	snprintf(s->comm, sizeof(s->comm), "%s", t->comm ? t->comm : "");
	s->threshold = t->opts ? t->opts->alert_hold_ns : 0;
	return s;
}

static const char *name_of(const struct alert_sink *s, int32_t tid)
{
	size_t i;

	for (i = 0; i < s->nr_names; i++)
		if (s->names[i].tid == tid)
			return s->names[i].name;
	return "";
}

static int alert_thread(void *p, int32_t tid, const char *name, uint64_t ts)
{
	struct alert_sink *s = p;
	size_t i;

	(void)ts;
	if (!s->threshold)
		return 0;
	for (i = 0; i < s->nr_names && s->names[i].tid != tid; i++)
		;
	if (i == s->nr_names) {
		if (s->nr_names == MAX_NAMES)
			return 0;
		if (gil_grow(&s->names, &s->cap_names, s->nr_names + 1, sizeof(*s->names)) < 0)
			return -1;
		s->nr_names++;
	}
	s->names[i].tid = tid;
	snprintf(s->names[i].name, sizeof(s->names[i].name), "%s", name ? name : "");
	return 0;
}

static int alert_exit(void *p, int32_t tid, uint64_t ts)
{
	struct alert_sink *s = p;
	size_t i;

	(void)ts;
	for (i = 0; i < s->nr_names; i++) {
		if (s->names[i].tid == tid) {
			s->names[i] = s->names[--s->nr_names];
			break;
		}
	}
	return 0;
}

/* Tell the program (gil_options.on_alert) of a hold of @tid since @since, @held long now. */
static void report(const struct alert_sink *s, int32_t tid, uint64_t since, uint64_t held,
		   uint32_t fn_id, uint32_t waiters, bool open, bool first)
{
	struct gil_clock_offsets off;
	char function[160] = "";
	struct gil_alert a;

	if (!s->opts->on_alert)
		return;
	gil_fntab_display(s->fntab, fn_id, function, sizeof(function));
	gil_clock_offsets_sample(&off);
	memset(&a, 0, sizeof(a));
	a.pid = s->pid;
	a.rank = s->rank;
	a.comm = s->comm;
	a.tid = tid;
	a.thread = name_of(s, tid);
	a.function = function;
	a.start_ns = since;
	a.start_realtime_ns = (int64_t)since + off.realtime_ns;
	a.held_ns = held;
	a.waiters = waiters;
	a.open = open;
	a.first = first;
	s->opts->on_alert(s->opts->alert_ctx, &a);
}

static int alert_tick(void *p, uint64_t upto, const struct gil_open *holds, size_t nr,
		      uint32_t waiting)
{
	struct alert_sink *s = p;
	struct open_hold *o;
	size_t i, j;

	if (!s->threshold)
		return 0;
	/* a hold no longer open ended: its interval came (or comes) and said so */
	for (j = 0; j < s->nr_open;) {
		for (i = 0; i < nr; i++)
			if (holds[i].kind == GIL_KIND_HOLD && holds[i].tid == s->open[j].tid &&
			    holds[i].since == s->open[j].since)
				break;
		if (i == nr)
			s->open[j] = s->open[--s->nr_open];
		else
			j++;
	}
	for (i = 0; i < nr; i++) {
		if (holds[i].kind != GIL_KIND_HOLD || upto < holds[i].since ||
		    upto - holds[i].since < s->threshold)
			continue;
		for (j = 0; j < s->nr_open; j++)
			if (s->open[j].tid == holds[i].tid && s->open[j].since == holds[i].since)
				break;
		if (j == s->nr_open) {
			if (s->nr_open == MAX_OPEN)
				continue;
			o = &s->open[s->nr_open++];
			o->tid = holds[i].tid;
			o->since = holds[i].since;
			o->next = 0;
			o->waiters = 0;
		}
		o = &s->open[j];
		if (waiting > o->waiters)
			o->waiters = waiting;
		if (upto - o->since < o->next)
			continue;
		report(s, o->tid, o->since, upto - o->since, holds[i].fn, o->waiters, true,
		       !o->next);
		o->next = 2 * (upto - o->since);
	}
	return 0;
}

static int alert_interval(void *p, const struct gil_interval *iv)
{
	struct alert_sink *s = p;
	uint32_t waiters = iv->waiters;
	bool seen_open = false;
	size_t j;

	if (!s->threshold || iv->kind != GIL_KIND_HOLD || iv->dur < s->threshold)
		return 0;
	for (j = 0; j < s->nr_open; j++) {
		if (s->open[j].tid == iv->tid && s->open[j].since == iv->start) {
			seen_open = true;
			if (s->open[j].waiters > waiters)
				waiters = s->open[j].waiters;
			s->open[j] = s->open[--s->nr_open];
			break;
		}
	}
	s->count++;
	if (s->nr_kept < GIL_ALERT_KEEP) {
		if (gil_grow(&s->kept, &s->cap_kept, s->nr_kept + 1, sizeof(*s->kept)) < 0)
			return -1;
		s->kept[s->nr_kept++] = (struct kept){ .tid = iv->tid, .start = iv->start,
						       .dur = iv->dur, .fn = iv->fn,
						       .waiters = waiters };
	} else {
		s->cut++;
	}
	report(s, iv->tid, iv->start, iv->dur, iv->fn, waiters, false, !seen_open);
	return 0;
}

static int alert_end(void *p, struct json_object *footer)
{
	struct alert_sink *s = p;
	struct json_object *a, *holds, *h;
	size_t i;

	if (!s->threshold)
		return 0;
	a = json_object_new_object();
	holds = json_object_new_array();
	if (!a || !holds) {
		json_object_put(a);
		json_object_put(holds);
		return -1;
	}
	json_object_object_add(footer, GIL_KEY_ALERTS, a);
	json_object_object_add(a, GIL_KEY_ALERT_HOLD_NS, json_object_new_uint64(s->threshold));
	json_object_object_add(a, GIL_KEY_ALERT_COUNT, json_object_new_uint64(s->count));
	json_object_object_add(a, GIL_KEY_ALERT_HOLDS, holds);
	for (i = 0; i < s->nr_kept; i++) {
		h = json_object_new_object();
		if (!h)
			return -1;
		json_object_array_add(holds, h);
		json_object_object_add(h, GIL_KEY_REC_TID, json_object_new_int(s->kept[i].tid));
		json_object_object_add(h, GIL_KEY_ALERT_START, json_object_new_uint64(s->kept[i].start));
		json_object_object_add(h, GIL_KEY_ALERT_DUR, json_object_new_uint64(s->kept[i].dur));
		if (s->kept[i].fn)
			json_object_object_add(h, GIL_KEY_FN, json_object_new_uint64(s->kept[i].fn));
		json_object_object_add(h, GIL_KEY_ALERT_WAITERS,
				       json_object_new_uint64(s->kept[i].waiters));
	}
	if (s->cut)
		json_object_object_add(a, GIL_KEY_ALERT_CUT, json_object_new_uint64(s->cut));
	return 0;
}

static void alert_close(void *p)
{
	struct alert_sink *s = p;

	free(s->kept);
	free(s->names);
	free(s);
}

const struct gil_sink_ops gil_sink_alert = {
	.name = "alert",
	.open = alert_open,
	.interval = alert_interval,
	.thread = alert_thread,
	.exit = alert_exit,
	.tick = alert_tick,
	.end = alert_end,
	.close = alert_close,
};
