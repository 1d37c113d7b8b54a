// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The conversion driver: inputs in rank order, each streamed record by record through the clock
 * mapping into its process's timeline, events out through the backend, one otherData at the end.
 * Nothing here holds more than one record, one process's reorder window and per-input summaries.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "clockmap.h"
#include "convert.h"
#include "giltrace.h"
#include "inputs.h"
#include "merge.h"
#include "outfile.h"
#include "profdata.h"
#include "stats.h"
#include "steps.h"
#include "timeline.h"
#include "common/util.h"
#include "format/keys.h"

static const char *const clock_names[] = { "realtime", "monotonic", "monotonic_raw" };

/* Times beyond 2^62 ns (146 years) are damage, not data: mapping them could overflow. */
#define TIME_MAX ((uint64_t)1 << 62)

/* The state of one conversion. */
struct conv {
	const struct conv_options *opt;
	const struct conv_backend_ops *ops;
	struct conv_out out;
	struct timeline *tl;
	struct merge_trace *merge;
	struct profdata pd;
	bool have_pd;
	struct conv_inputs in;
	/* the input being converted */
	struct conv_input *ci;
	struct clockmap cm;
	uint64_t intervals, clipped_out, lost_events, lost_records, exits, unknown, out_of_range;
	bool have_range;
	int64_t lo, hi; /* output axis range of everything written */
	struct stats *stats; /* statistics (stats.c), also otherData.statistics */
	bool profiler_steps; /* the steps are the profiler's: the recordings' marks are not used */
	bool marks_ignored; /* ... and that was said */
	bool natives_ahead; /* the input's native names were read ahead (read_ahead) */
	const struct gil_interval *cur_iv; /* the interval being placed: its function, reason */
	char err[512];
};

static int emit(void *ctx, const struct conv_event *ev)
{
	struct conv *c = ctx;
	struct conv_event at;
	char unnamed[40];

	if (ev->type == CEV_SLICE) {
		if (!c->have_range || ev->ts < c->lo)
			c->lo = ev->ts;
		if (!c->have_range || ev->ts + ev->dur > c->hi)
			c->hi = ev->ts + ev->dur;
		c->have_range = true;
		/*
		 * the slice's function, reason and native caller as args (slices are emitted as
		 * they are placed)
		 */
		if (c->cur_iv && (c->cur_iv->fn || c->cur_iv->reason || c->cur_iv->native)) {
			at = *ev;
			at.reason = c->cur_iv->reason;
			if (!stats_function(c->stats, c->cur_iv->fn, &at.fn_name, &at.fn_file,
					    &at.fn_line))
				at.fn_name = NULL;
			if (c->cur_iv->native)
				at.native = stats_native(c->stats, c->cur_iv->native, unnamed,
							 sizeof(unnamed));
			return c->ops->event(&c->out, &at);
		}
	}
	return c->ops->event(&c->out, ev);
}

/* One interval, on the recording clock (giltrace) or in epoch ns (sysTrace). */
static int interval(struct conv *c, const struct gil_interval *iv)
{
	int64_t ts, dur;
	uint32_t fix = 0;
	int r;

	c->intervals++;
	if (iv->start > TIME_MAX || iv->dur > TIME_MAX - iv->start) {
		c->out_of_range++;
		return 0;
	}
	ts = clockmap_map(&c->cm, iv->start);
	dur = clockmap_map(&c->cm, iv->start + iv->dur) - ts;
	r = clockmap_clip(&c->cm, &ts, &dur);
	if (r == 0) {
		c->clipped_out++;
		return 0;
	}
	if (r == 2)
		fix |= CONV_FIX_CLIPPED;
	if (stats_interval(c->stats, iv, ts, dur) < 0)
		return -1;
	c->cur_iv = iv;
	r = timeline_slice_gil(c->tl, iv->tid, iv->kind, iv->flags, fix, ts, dur, iv->interp,
			       iv->gil);
	c->cur_iv = NULL;
	return r;
}

static int lost(struct conv *c, const struct gil_record *rec)
{
	struct conv_event ev = { .type = CEV_LOST, .proc = &c->ci->proc };
	int64_t dur = 0;

	c->lost_records++;
	c->lost_events += rec->count;
	if (rec->ts > TIME_MAX)
		return 0;
	ev.ts = clockmap_map(&c->cm, rec->ts);
	if (!clockmap_clip(&c->cm, &ev.ts, &dur))
		return 0;
	ev.cpu = rec->cpu;
	ev.count = rec->count;
	return c->ops->event(&c->out, &ev);
}

static int setup_clock(struct conv *c)
{
	struct conv_input *ci = c->ci;
	char err[256];

	memset(&c->cm, 0, sizeof(c->cm));
	if (c->merge)
		c->cm.base = merge_base_ns(c->merge);
	if (c->have_pd) {
		c->cm.clip = true;
		c->cm.lo = c->pd.lo_ns;
		c->cm.hi = c->pd.hi_ns;
	}
	if (ci->fmt == GIL_INPUT_SYSTRACE) {
		c->cm.identity = true;
		return 0;
	}
	if (!ci->header && (c->opt->clock != CONV_CLOCK_MONOTONIC_RAW || c->have_pd)) {
		if (c->have_pd) {
			c->cm.off0 = c->cm.off1 = c->pd.offset_ns;
			return 0;
		}
		/* a recording cut before its header holds nothing to place anyway */
		return 0;
	}
	if (clockmap_setup(&c->cm, c->opt->clock, ci->header, ci->footer, c->have_pd,
			   c->pd.offset_ns, err, sizeof(err)) < 0)
		return gil_err(c->err, sizeof(c->err), "%s: %s", ci->path, err);
	return 0;
}

static struct json_object *jstr(const char *s)
{
	return s ? json_object_new_string(s) : NULL;
}

/* What otherData says about one recording. */
static struct json_object *report(struct conv *c, struct gil_reader *r,
				  const struct timeline_stats *ts, const struct gil_systrace_stats *ss)
{
	struct conv_input *ci = c->ci;
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "path", json_object_new_string(ci->path));
	json_object_object_add(o, "format", json_object_new_string(
		ci->fmt == GIL_INPUT_SYSTRACE ? "systrace" : "giltrace"));
	json_object_object_add(o, "pid", json_object_new_int64(ci->proc.os_pid));
	json_object_object_add(o, "trace_pid", json_object_new_int64(ci->proc.pid));
	json_object_object_add(o, "rank", ci->proc.rank >= 0 ?
				json_object_new_int64(ci->proc.rank) : NULL);
	json_object_object_add(o, "complete", json_object_new_boolean(!gil_reader_truncated(r)));
	json_object_object_add(o, "records", json_object_new_uint64(gil_reader_records(r)));
	json_object_object_add(o, "bytes", json_object_new_uint64(gil_reader_offset(r)));
	json_object_object_add(o, "intervals", json_object_new_uint64(c->intervals));
	json_object_object_add(o, "slices", json_object_new_uint64(ts->slices));
	json_object_object_add(o, "clipped_out", json_object_new_uint64(c->clipped_out));
	json_object_object_add(o, "out_of_range", json_object_new_uint64(c->out_of_range));
	json_object_object_add(o, "threads", json_object_new_uint64(ts->threads));
	json_object_object_add(o, "lost_records", json_object_new_uint64(c->lost_records));
	json_object_object_add(o, "lost_events", json_object_new_uint64(c->lost_events));
	json_object_object_add(o, "thread_exits", json_object_new_uint64(c->exits));
	json_object_object_add(o, "unknown_records", json_object_new_uint64(c->unknown));
	json_object_object_add(o, "flows", json_object_new_uint64(ts->flows));
	json_object_object_add(o, "counter_events", json_object_new_uint64(ts->counter_events));
	json_object_object_add(o, "late_points", json_object_new_uint64(ts->late));
	json_object_object_add(o, "peak_window_points", json_object_new_uint64(ts->peak_points));
	json_object_object_add(o, "overlaps_fixed", json_object_new_uint64(ts->overlaps));
	if (ss) {
		json_object_object_add(o, "events", json_object_new_uint64(ss->events));
		json_object_object_add(o, "events_ignored", json_object_new_uint64(ss->ignored));
		json_object_object_add(o, "events_unclosed", json_object_new_uint64(ss->unclosed));
	}
	if (ci->fmt == GIL_INPUT_GILTRACE) {
		struct json_object *clk = json_object_new_object();

		json_object_object_add(clk, "offset_start_ns", json_object_new_int64(c->cm.off0));
		json_object_object_add(clk, "offset_end_ns", json_object_new_int64(c->cm.off1));
		json_object_object_add(clk, "interpolated", json_object_new_boolean(
			c->cm.off0 != c->cm.off1 || c->cm.t1 > c->cm.t0));
		json_object_object_add(o, "clock", clk);
		json_object_object_add(o, "header", json_object_get(ci->header));
		json_object_object_add(o, "footer", json_object_get(ci->footer));
	}
	return o;
}


/* The rows' names at the end of a process (timeline_label): its comm tells which are alike. */
static int label_thread(void *ctx, int32_t tid, const char *name, const char *mostly_in,
			const char *native)
{
	struct conv *c = ctx;
	struct json_object *v;
	const char *comm = NULL;

	if (c->ci->header && json_object_object_get_ex(c->ci->header, GIL_KEY_COMM, &v) &&
	    json_object_is_type(v, json_type_string))
		comm = json_object_get_string(v);
	return timeline_label(c->tl, tid, name, comm, mostly_in, native);
}

struct mark {
	int64_t ts, n;
};

static int cmp_mark(const void *a, const void *b)
{
	const struct mark *x = a, *y = b;

	return (x->ts > y->ts) - (x->ts < y->ts);
}

/*
 * What @ci says after the intervals that need it, read ahead of them: its step marks
 * (gil_mark_step: the end of a step), which the steps must divide: each step runs from the
 * previous mark, or the recording's start, to its own; the names of its native callers, which
 * the recorder writes when a worker has named them, after intervals that carry their ids. Only
 * in recordings whose footer counts marks or has "natives", or that were cut before it: others
 * are read once.
 */
static int read_ahead(struct conv *c, struct conv_input *ci)
{
	struct mark *v = NULL;
	size_t n = 0, cap = 0, i;
	struct gil_reader *r;
	struct gil_record rec;
	char err[512];
	int64_t count, start, prev, ordinal = 0;
	bool marks;
	int ret;

	c->natives_ahead = false;
	if (ci->fmt != GIL_INPUT_GILTRACE)
		return 0;
	marks = !ci->footer || (conv_json_int(ci->footer, GIL_KEY_STEP, &count) && count > 0);
	c->natives_ahead = !ci->footer ||
			   json_object_object_get_ex(ci->footer, GIL_KEY_NATIVES, NULL);
	if (!marks && !c->natives_ahead)
		return 0;
	r = gil_reader_open(ci->path, err, sizeof(err));
	if (!r)
		return gil_err(c->err, sizeof(c->err), "%s", err);
	while ((ret = gil_reader_next(r, &rec)) > 0) {
		if (rec.type == GIL_REC_NATIVE && c->natives_ahead &&
		    stats_native_def(c->stats, rec.native.id, rec.native.name) < 0) {
			gil_reader_close(r);
			free(v);
			return -1;
		}
		if (!marks || rec.type != GIL_REC_STEP || rec.ts > TIME_MAX)
			continue;
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 256;
			struct mark *nv = ncap <= STEPS_MAX ? realloc(v, ncap * sizeof(*nv)) : NULL;

			if (!nv) {
				marks = false; /* past STEPS_MAX: steps_add counts the rest as cut */
				continue;
			}
			v = nv;
			cap = ncap;
		}
		v[n].ts = clockmap_map(&c->cm, rec.ts);
		v[n++].n = rec.step;
	}
	gil_reader_close(r);
	if (ret < 0 || !n) {
		free(v);
		return 0; /* a read error is the main pass's to report */
	}
	if (c->profiler_steps) {
		if (!c->marks_ignored)
			conv_warn(c->opt, "%s: its step marks are not used: the steps are the "
				  "profiler's", ci->path);
		c->marks_ignored = true;
		free(v);
		return 0;
	}
	if (!c->stats->steps) {
		struct steps *st = steps_alloc("the step marks of the recordings (gil_mark_step)");

		if (!st) {
			free(v);
			return -1;
		}
		stats_set_steps(c->stats, st);
	}
	qsort(v, n, sizeof(*v), cmp_mark);
	prev = conv_json_int(ci->header, GIL_KEY_START_NS, &start) && start >= 0 ?
		       clockmap_map(&c->cm, (uint64_t)start) : v[0].ts;
	for (i = 0; i < n; i++, ordinal++) {
		if (steps_add_for(c->stats->steps, ci->proc.pid, "step ",
				  v[i].n >= 0 ? v[i].n : ordinal, prev, v[i].ts) < 0) {
			free(v);
			return -1;
		}
		prev = v[i].ts;
	}
	free(v);
	steps_seal(c->stats->steps);
	return 0;
}

static int convert_one(struct conv *c, struct conv_input *ci, struct json_object *reports)
{
	struct gil_systrace_stats ss;
	struct timeline_stats ts;
	bool systrace;
	struct conv_event pev = { .type = CEV_PROCESS, .proc = &ci->proc };
	struct gil_reader *r;
	struct gil_record rec;
	char err[512];
	int64_t n;
	int ret;

	c->ci = ci;
	c->intervals = c->clipped_out = c->lost_events = c->lost_records = 0;
	c->exits = c->unknown = c->out_of_range = 0;
	/* the statistics take the names read ahead: they begin first */
	if (setup_clock(c) < 0 || timeline_begin(c->tl, &ci->proc) < 0 ||
	    stats_begin(c->stats, ci, &c->cm) < 0 || read_ahead(c, ci) < 0)
		return -1;
	r = gil_reader_open(ci->path, err, sizeof(err));
	if (!r)
		return gil_err(c->err, sizeof(c->err), "%s", err);
	ret = c->ops->event(&c->out, &pev);
	while (ret == 0 && (ret = gil_reader_next(r, &rec)) > 0) {
		switch (rec.type) {
		case GIL_REC_INTERVAL:
			ret = interval(c, &rec.iv);
			break;
		case GIL_REC_THREAD:
			ret = timeline_thread(c->tl, rec.tid, rec.name);
			if (ret == 0)
				ret = stats_thread(c->stats, rec.tid, rec.name);
			break;
		case GIL_REC_LOST:
			ret = lost(c, &rec);
			break;
		case GIL_REC_EXIT:
			c->exits++;
			stats_exit(c->stats, rec.tid);
			ret = 0;
			break;
		case GIL_REC_FOOTER:
			if (!ci->footer)
				ci->footer = json_object_get(rec.obj);
			ret = 0;
			break;
		case GIL_REC_HEADER:
			ret = 0;
			break;
		case GIL_REC_FUNCTION:
			ret = stats_function_def(c->stats, &rec);
			break;
		case GIL_REC_STEP:
			ret = 0; /* read ahead (read_ahead) */
			break;
		case GIL_REC_NATIVE:
			/* read ahead, or else good for the intervals after it */
			ret = c->natives_ahead ? 0 : stats_native_def(c->stats, rec.native.id,
								      rec.native.name);
			break;
		default:
			c->unknown++;
			ret = 0;
			break;
		}
	}
	if (ret < 0) {
		if (gil_reader_error(r)[0])
			gil_err(c->err, sizeof(c->err), "%s", gil_reader_error(r));
		else if (!c->out.f || !c->out.f->err[0])
			gil_err(c->err, sizeof(c->err), "%s: out of memory", ci->path);
		goto out;
	}
	systrace = gil_reader_systrace_stats(r, &ss);
	ret = stats_each_thread(c->stats, label_thread, c);
	if (ret == 0)
		ret = timeline_end(c->tl, &ts);
	if (ret == 0)
		ret = stats_end(c->stats);
	if (ret < 0)
		goto out;
	json_object_array_add(reports, report(c, r, &ts, systrace ? &ss : NULL));

	if (!gil_reader_truncated(r) && ci->fmt == GIL_INPUT_GILTRACE &&
	    conv_json_int(ci->footer, GIL_KEY_INTERVALS, &n) && (uint64_t)n != c->intervals)
		conv_warn(c->opt, "%s: the footer counts %lld intervals but the file holds %llu",
			  ci->path, (long long)n, (unsigned long long)c->intervals);
	if (gil_reader_truncated(r))
		conv_warn(c->opt, "%s: the recording was cut (no end): converted its %llu complete "
			  "records, %llu bytes", ci->path, (unsigned long long)gil_reader_records(r),
			  (unsigned long long)gil_reader_offset(r));
	if (!c->intervals)
		conv_warn(c->opt, "%s: empty recording: no GIL intervals in it", ci->path);
	else if (!ts.slices && c->have_pd)
		conv_warn(c->opt, "%s: none of its %llu intervals falls in the --profiling-data "
			  "window", ci->path, (unsigned long long)c->intervals);
	else if (!ts.slices && c->out_of_range < c->intervals)
		conv_warn(c->opt, "%s: none of its %llu intervals could be placed on the time axis",
			  ci->path, (unsigned long long)c->intervals);
	if (ts.late)
		conv_warn(c->opt, "%s: %llu take/drop boundaries came more than the reorder window "
			  "(%u ms) late: the waiter counter and flows are approximate there "
			  "(raise --reorder-window)", ci->path, (unsigned long long)ts.late,
			  c->opt->window_ms);
	if (ts.overlaps)
		conv_warn(c->opt, "%s: %llu intervals overlapped the previous one of their thread "
			  "and were shifted (args.overlap_fixed)", ci->path,
			  (unsigned long long)ts.overlaps);
	if (c->out_of_range)
		conv_warn(c->opt, "%s: %llu intervals with impossible times (beyond 2^62 ns) were "
			  "skipped", ci->path, (unsigned long long)c->out_of_range);
	if (systrace && ss.ignored)
		conv_warn(c->opt, "%s: %llu events were not take_gil/drop_gil calls and were "
			  "ignored", ci->path, (unsigned long long)ss.ignored);
out:
	gil_reader_close(r);
	return ret < 0 ? -1 : 0;
}

static bool merge_taken(void *ctx, int64_t pid)
{
	return merge_has_pid(ctx, pid);
}

static struct json_object *options_json(const struct conv *c)
{
	const struct conv_options *opt = c->opt;
	struct json_object *o = json_object_new_object(), *a = json_object_new_array();
	size_t i;

	for (i = 0; i < opt->ninputs; i++)
		json_object_array_add(a, json_object_new_string(opt->inputs[i]));
	json_object_object_add(o, "inputs", a);
	json_object_object_add(o, "output", jstr(opt->output));
	json_object_object_add(o, "clock", json_object_new_string(
		c->have_pd ? "profiling-data" : clock_names[opt->clock]));
	json_object_object_add(o, "profiling_data", jstr(opt->profiling_data));
	json_object_object_add(o, "merge", jstr(opt->merge));
	json_object_object_add(o, "flows", json_object_new_boolean(opt->flows));
	json_object_object_add(o, "counter", json_object_new_boolean(opt->counter));
	json_object_object_add(o, "reorder_window_ms", json_object_new_int(opt->window_ms));
	json_object_object_add(o, "ts_format", json_object_new_string(opt->ts_number ? "number" :
								       "string"));
	return o;
}

/* The output must not be one of the files being read. */
static int check_output(struct conv *c)
{
	struct stat st;
	size_t i;

	if (!c->opt->output || !strcmp(c->opt->output, "-") || stat(c->opt->output, &st) < 0)
		return 0;
	if (S_ISDIR(st.st_mode))
		return gil_err(c->err, sizeof(c->err), "cannot write %s: Is a directory",
			       c->opt->output);
	for (i = 0; i < c->in.n; i++)
		if (c->in.v[i].dev == st.st_dev && c->in.v[i].ino == st.st_ino)
			return gil_err(c->err, sizeof(c->err), "the output %s is the input %s: "
				       "choose another --output", c->opt->output, c->in.v[i].path);
	if (c->opt->merge) {
		struct stat ms;

		if (stat(c->opt->merge, &ms) == 0 && ms.st_dev == st.st_dev &&
		    ms.st_ino == st.st_ino)
			return gil_err(c->err, sizeof(c->err), "the output %s is the --merge trace: "
				       "choose another --output", c->opt->output);
	}
	return 0;
}

static int cmp_pid(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/*
 * The step spans of @m: those of the pid with the most of them (a trace of several ranks has
 * each rank's; the steps are one loop's). Returns 0 with *@out NULL when there are none.
 */
static int steps_of(struct conv *c, struct merge_trace *m, const char *path, struct steps **out)
{
	const struct merge_step *v;
	size_t n = merge_steps(m, &v), i, j, best = 0, run;
	int64_t *pids, pid = 0;
	char src[4200];
	struct steps *st;

	*out = NULL;
	if (!n)
		return 0;
	if (!(pids = malloc(n * sizeof(*pids))))
		return -1;
	for (i = 0; i < n; i++)
		pids[i] = v[i].has_pid ? v[i].pid : INT64_MIN;
	qsort(pids, n, sizeof(*pids), cmp_pid);
	for (i = 0; i < n; i = j) {
		for (j = i; j < n && pids[j] == pids[i]; j++)
			;
		run = j - i;
		if (run > best) {
			best = run;
			pid = pids[i];
		}
	}
	free(pids);
	if (pid == INT64_MIN)
		snprintf(src, sizeof(src), "the ProfilerStep spans of %s", path);
	else
		snprintf(src, sizeof(src), "the ProfilerStep spans of pid %lld in %s", (long long)pid,
			 path);
	if (!(st = steps_alloc(src)))
		return -1;
	for (i = 0; i < n; i++) {
		if ((v[i].has_pid ? v[i].pid : INT64_MIN) != pid)
			continue;
		if (steps_add(st, MERGE_STEP_PREFIX, v[i].number, v[i].ts, v[i].ts + v[i].dur) < 0) {
			steps_free(st);
			return -1;
		}
	}
	steps_seal(st);
	if (best < n)
		conv_warn(c->opt, "%s: ProfilerStep spans of several processes: the statistics per "
			  "step use pid %lld's %zu of %zu", path, (long long)pid, best, n);
	*out = st;
	return 0;
}

/* --profiling-data without --merge: torch_npu's trace_view.json, where it writes it. */
static int steps_of_profdata(struct conv *c, struct steps **out)
{
	static const char *const sub[] = { "/ASCEND_PROFILER_OUTPUT/trace_view.json",
					   "/../ASCEND_PROFILER_OUTPUT/trace_view.json",
					   "/../../ASCEND_PROFILER_OUTPUT/trace_view.json" };
	const char *base[] = { c->opt->profiling_data, c->opt->profiling_data, c->pd.host };
	char path[8400], err[512];
	struct merge_trace *m;
	struct stat st;
	size_t i;
	int ret;

	*out = NULL;
	for (i = 0; i < GIL_ARRAY_SIZE(sub); i++) {
		snprintf(path, sizeof(path), "%s%s", base[i], sub[i]);
		if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
			break;
	}
	if (i == GIL_ARRAY_SIZE(sub))
		return 0;
	if (!(m = merge_open(path, err, sizeof(err)))) {
		conv_warn(c->opt, "no statistics per step: %s", err);
		return 0;
	}
	ret = steps_of(c, m, path, out);
	merge_close(m);
	return ret;
}

/* One step's instant on the process's row. */
struct step_emit {
	struct conv *c;
	const struct conv_proc *proc;
};

static int emit_step(void *ctx, int64_t start, int64_t end, const char *name, uint64_t wait,
		     uint64_t hold, const char *why)
{
	struct step_emit *se = ctx;
	struct conv_event ev = { .type = CEV_STEP, .proc = se->proc, .name = name, .ts = start,
				 .dur = end - start, .value = (int64_t)wait, .count = hold,
				 .text = why };

	return se->c->ops->event(&se->c->out, &ev);
}

static int run(struct conv *c)
{
	const struct conv_options *opt = c->opt;
	struct json_object *other = NULL, *reports;
	uint64_t lost_max = 0;
	char err[512];
	size_t i;
	int ret = -1;

	if (opt->profiling_data) {
		if (profdata_load(opt->profiling_data, &c->pd, err, sizeof(err)) < 0)
			return gil_err(c->err, sizeof(c->err), "--profiling-data: %s", err);
		c->have_pd = true;
		if (!c->pd.has_end)
			conv_warn(opt, "%s: no usable end_info: clipping only at the start",
				  c->pd.host);
	}
	if (opt->merge) {
		c->merge = merge_open(opt->merge, err, sizeof(err));
		if (!c->merge)
			return gil_err(c->err, sizeof(c->err), "--merge: %s", err);
	}
	if (inputs_load(&c->in, opt, c->merge ? merge_taken : NULL, c->merge, c->err,
			sizeof(c->err)) < 0)
		return -1;
	for (i = 0; i < c->in.n; i++) {
		if (c->in.v[i].fmt != GIL_INPUT_SYSTRACE)
			continue;
		if (opt->clock != CONV_CLOCK_REALTIME)
			return gil_err(c->err, sizeof(c->err), "%s: a sysTrace recording holds only "
				       "wall-clock times: --clock %s is not possible",
				       c->in.v[i].path, clock_names[opt->clock]);
		if (c->have_pd)
			conv_warn(opt, "%s: sysTrace times are CLOCK_MONOTONIC plus one realtime "
				  "offset: kept as they are, only clipped to the --profiling-data "
				  "window", c->in.v[i].path);
	}
	for (i = 1; c->have_pd && i < c->in.n; i++) {
		const char *a = c->in.v[0].proc.hostname, *b = c->in.v[i].proc.hostname;

		if (a && b && strcmp(a, b)) {
			conv_warn(opt, "the recordings come from several hosts (%s, %s): "
				  "--profiling-data aligns them all on one host's start_info", a, b);
			break;
		}
	}
	if (check_output(c) < 0)
		return -1;

	c->tl = timeline_alloc((int64_t)opt->window_ms * 1000000, CONV_WINDOW_POINTS_MAX,
			       opt->flows, opt->counter, emit, c);
	c->out.f = opt->output ? outfile_open(opt->output, c->err, sizeof(c->err)) : NULL;
	c->stats = stats_alloc((int64_t)opt->window_ms * 1000000);
	if (!c->tl || (opt->output && !c->out.f) || !c->stats)
		goto fail;
	{
		struct steps *st = NULL;

		if ((c->merge ? steps_of(c, c->merge, opt->merge, &st) :
		     c->have_pd ? steps_of_profdata(c, &st) : 0) < 0)
			goto fail;
		if (st)
			stats_set_steps(c->stats, st);
		c->profiler_steps = st != NULL;
	}
	c->out.merge = c->merge;
	c->out.ts_number = opt->ts_number;
	if (c->ops->header(&c->out) < 0)
		goto fail;
	reports = json_object_new_array();
	other = json_object_new_object();
	json_object_object_add(other, "tool", json_object_new_string("gil-convert " VERSION));
	json_object_object_add(other, "options", options_json(c));
	json_object_object_add(other, "recordings", reports);
	for (i = 0; i < c->in.n; i++) {
		struct json_object *rep;
		int64_t lost;

		if (convert_one(c, &c->in.v[i], reports) < 0)
			goto fail;
		rep = json_object_array_get_idx(reports, json_object_array_length(reports) - 1);
		if (conv_json_int(json_object_object_get(rep, "footer"), GIL_KEY_LOST, &lost) &&
		    (uint64_t)lost > lost_max)
			lost_max = (uint64_t)lost;
		if (c->lost_events > lost_max)
			lost_max = c->lost_events;
	}
	if (c->stats->steps) {
		int64_t lo, hi;

		steps_finish(c->stats->steps);
		if (!steps_used(c->stats->steps))
			conv_warn(opt, "no GIL interval falls in any of the %zu steps%s: "
				  "the statistics per step are empty", steps_count(c->stats->steps),
				  c->merge && !merge_base_ns(c->merge) &&
				  merge_range(c->merge, &lo, &hi) && hi < 1000000000000000000LL ?
				  " (the trace's times are relative to its start, as torch.profiler "
				  "before 2.0 writes them, and cannot be lined up with the recording)" :
				  "");
		for (i = 0; i < c->in.n; i++) {
			struct step_emit se = { c, &c->in.v[i].proc };

			if (steps_each(c->stats->steps, c->stats, c->in.v[i].proc.pid, emit_step,
				       &se) < 0)
				goto fail;
		}
	}
	/* rings are shared by the processes of one recording: each file reports all losses */
	json_object_object_add(other, "lost_events", json_object_new_uint64(lost_max));
	if (lost_max)
		conv_warn(opt, "the kernel lost %llu GIL events during the recording: intervals "
			  "open then carry args.lost_events", (unsigned long long)lost_max);
	if (c->have_pd)
		json_object_object_add(other, "profiling_data", profdata_describe(&c->pd));
	if (c->merge) {
		int64_t lo, hi;

		json_object_object_add(other, "merge", merge_describe(c->merge));
		if (c->have_range && merge_range(c->merge, &lo, &hi) &&
		    (c->hi < lo * 1 || c->lo > hi)) {
			char a[32], b[32], x[32], y[32];

			gil_fmt_us(a, c->lo);
			gil_fmt_us(b, c->hi);
			gil_fmt_us(x, lo);
			gil_fmt_us(y, hi);
			conv_warn(opt, "the GIL rows (%s..%s us) do not overlap the profiler's trace "
				  "(%s..%s us): were both recorded at the same time, on this host?",
				  a, b, x, y);
		}
	}
	json_object_object_add(other, "statistics", stats_json(c->stats));
	if (c->ops->footer(&c->out, other) < 0)
		goto fail;
	ret = opt->output ? outfile_commit(c->out.f, c->err, sizeof(c->err)) : 0;
	c->out.f = NULL;
	if (ret == 0)
		ret = stats_outputs(c->stats, opt, c->err, sizeof(c->err));
	goto out;
fail:
	if (c->out.f && c->out.f->err[0])
		gil_err(c->err, sizeof(c->err), "%s", c->out.f->err);
	else if (!c->err[0])
		gil_err(c->err, sizeof(c->err), "out of memory");
out:
	json_object_put(other);
	return ret;
}

int conv_run(const struct conv_options *opt, char *err, size_t errlen)
{
	struct conv c;
	int ret;

	memset(&c, 0, sizeof(c));
	c.opt = opt;
	c.ops = !opt->output ? &conv_null_ops : opt->format ? opt->format : conv_backends[0];
	ret = run(&c);
	if (ret < 0)
		gil_err(err, errlen, "%s", c.err[0] ? c.err : "conversion failed");
	outfile_abort(c.out.f);
	timeline_free(c.tl);
	stats_free(c.stats);
	merge_close(c.merge);
	inputs_free(&c.in);
	return ret;
}
