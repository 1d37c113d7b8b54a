/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * --merge: a profiler's trace (torch.profiler/Kineto, msprof/torch_npu trace_view.json) copied
 * byte for byte around the GIL rows, which are put on its time axis.
 */
#ifndef GIL_MERGE_H
#define GIL_MERGE_H

#include <stdbool.h>
#include <stdint.h>

#include <json-c/json.h>

struct outfile;
struct merge_trace;

/**
 * merge_open - scan @path once (streaming): where its events are, its other top-level keys, its
 * time base, the pids it uses and its time range. NULL with a reason in @err. Pair with
 * merge_close().
 */
struct merge_trace *merge_open(const char *path, char *err, size_t errlen);

/* merge_base_ns - what to subtract from epoch ns to get the trace's ts axis (0: absolute). */
int64_t merge_base_ns(const struct merge_trace *m);
bool merge_has_pid(const struct merge_trace *m, int64_t pid);
bool merge_has_events(const struct merge_trace *m);
/* merge_range - the ts range of the profiler's events (ns on its axis); false if none. */
bool merge_range(const struct merge_trace *m, int64_t *lo, int64_t *hi);
/* merge_describe - a JSON summary for otherData (new reference). */
struct json_object *merge_describe(const struct merge_trace *m);

/** merge_write_head - `{"traceEvents":[` and the profiler's events, copied verbatim. */
int merge_write_head(struct merge_trace *m, struct outfile *f);
/** merge_write_tail - close the array, copy the other top-level keys, add otherData. */
int merge_write_tail(struct merge_trace *m, struct outfile *f, struct json_object *other);

/* A step span of the trace: an X event named ProfilerStep#N (torch.profiler, torch_npu). */
#define MERGE_STEP_PREFIX "ProfilerStep#"
struct merge_step {
	int64_t ts, dur; /* ns on the trace's axis */
	int64_t pid; /* its pid, when has_pid */
	int64_t number; /* N */
	bool has_pid;
};

/* merge_steps - the step spans the scan found, in file order. Returns how many. */
size_t merge_steps(const struct merge_trace *m, const struct merge_step **steps);

void merge_close(struct merge_trace *m);

#endif /* GIL_MERGE_H */
