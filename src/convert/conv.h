/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The converter's vocabulary, shared by its stages (inputs.c, clockmap.c, timeline.c, stats.c)
 * and its backends (chrome.c, null.c): the options, one recorded process, the events a backend
 * gets, the backends' ops table, and conv_warn(). It is below all of them; the driver that
 * strings them together is convert.c (convert.h).
 */
#ifndef GIL_CONV_H
#define GIL_CONV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "common/util.h" /* gil_fmt_us(), which the converter prints times with */
#include "format/rawfile.h"

enum conv_clock {
	CONV_CLOCK_REALTIME = 0, /* wall-clock epoch (default) */
	CONV_CLOCK_MONOTONIC,
	CONV_CLOCK_MONOTONIC_RAW,
};

/* Default reorder window of the waiter counter and flows (see timeline.c). */
#define CONV_WINDOW_MS_DEFAULT 1000
/* Points (take/drop boundaries) the reorder window holds at most: 1 Mi * 40 bytes. */
#define CONV_WINDOW_POINTS_MAX (1u << 20)

struct conv_options {
	const char **inputs; /* files or directories */
	size_t ninputs;
	const char *output; /* "-" for standard output; NULL: no trace (statistics only) */
	const struct conv_backend_ops *format; /* what the trace is written as; NULL: chrome */
	enum conv_clock clock;
	bool clock_given;
	const char *profiling_data; /* PROF_ directory, or NULL */
	const char *merge; /* profiler trace to merge, or NULL */
	bool flows; /* s/f hand-off arrows (default on) */
	bool counter; /* "GIL waiters" counter (default on) */
	unsigned window_ms; /* reorder window, ms of recording time */
	bool ts_number; /* ts as a JSON number rather than a string (same digits) */
	int verbosity; /* -1 quiet, 0 normal, 1 verbose */
	bool summary; /* --summary: statistics as text on standard output (stats.h) */
	const char *summary_json; /* --summary-json FILE ("-": standard output), or NULL */
	const char *svg; /* --svg FILE: a picture of the statistics, or NULL */
	/* Warnings: one line without the program name; NULL to drop them. */
	void (*warn)(void *ctx, const char *msg);
	void *warn_ctx;
};

/* One recorded process as the backends see it. */
struct conv_proc {
	int64_t pid; /* pid in the output (the OS pid unless that collides) */
	int64_t os_pid;
	int64_t rank; /* -1 when unknown */
	int sort_index;
	const char *cmdline;
	const char *hostname;
	const char *label; /* process_name shown in viewers */
	bool interpreters; /* the recorder read each interval's interpreter (3.12+) */
};

enum conv_ev_type {
	CEV_PROCESS, /* process metadata */
	CEV_THREAD, /* thread metadata: name (may be NULL), sort_index */
	CEV_SLICE, /* X event */
	CEV_COUNTER, /* "GIL waiters" */
	CEV_FLOW, /* hand-off arrow: tid@ts (a drop) -> to_tid@to_ts (a take) */
	CEV_LOST, /* the kernel lost events */
	CEV_STEP, /* a profiler step: instant at its start, with the GIL time of its threads */
};

/* Times are nanoseconds on the output axis (signed: relative axes may start after an event). */
struct conv_event {
	enum conv_ev_type type;
	const struct conv_proc *proc;
	int32_t tid;
	const char *name; /* THREAD */
	int64_t sort_index; /* THREAD */
	int kind; /* SLICE: enum gil_kind */
	uint32_t flags; /* SLICE: enum gil_flag */
	uint32_t fixups; /* SLICE: enum conv_fixup */
	int64_t ts;
	int64_t dur; /* SLICE */
	int64_t value; /* COUNTER */
	uint64_t id; /* FLOW */
	int32_t to_tid; /* FLOW */
	int64_t to_ts; /* FLOW */
	int cpu; /* LOST */
	uint64_t count; /* LOST */
	/* SLICE, attribution (stats.c): the function ("<why>" when unreadable) and the reason */
	const char *fn_name; /* NULL: not recorded */
	const char *fn_file;
	int fn_line; /* -1: none */
	int reason; /* enum gil_reason */
	/* SLICE: its native caller (a C API transition): the call site's name, "interpreter" for
	   the interpreter's own, "unnamed native #N"; NULL: not read */
	const char *native;
	uint32_t interp; /* SLICE: the interpreter's id (0: the main one) */
	uint32_t gil; /* SLICE, COUNTER, FLOW: the GIL's (the id of the interpreter it is of) */
	/* STEP: name is the step's, dur its length, value its threads' wait ns, count their hold
	   ns, text why it was flagged (NULL: not an outlier) */
	const char *text;
};

/* What the converter changed in an interval, said in the slice's args. */
enum conv_fixup {
	CONV_FIX_CLIPPED = 1 << 0, /* cut to the --profiling-data window */
	CONV_FIX_OVERLAP = 1 << 1, /* started before the previous interval of its thread ended */
};

struct outfile;
struct merge_trace;

/* Where a backend writes. */
struct conv_out {
	struct outfile *f;
	uint64_t events;
	bool ts_number; /* --ts-format number */
	struct merge_trace *merge; /* --merge: the profiler's trace wraps the output */
};

/*
 * Output backends (uftrace's dump backends): header, events (lost ones included), footer. A
 * footer gets what the run says of itself (the recordings, the statistics, what was dropped)
 * as one JSON object, and writes it where its format keeps such things (Chrome: otherData).
 * A new one is a file beside chrome.c with its ops table, and a line in backends.c.
 */
struct conv_backend_ops {
	const char *name; /* as --format names it */
	const char *about; /* one line for --help */
	int (*header)(struct conv_out *o);
	int (*event)(struct conv_out *o, const struct conv_event *ev);
	int (*footer)(struct conv_out *o, struct json_object *meta);
};

/* conv_backends - the backends --format can name, NULL-terminated; the first is the default. */
extern const struct conv_backend_ops *const conv_backends[];

/* conv_backend - the backend named @name, or NULL when there is none of that name. */
const struct conv_backend_ops *conv_backend(const char *name);

extern const struct conv_backend_ops conv_null_ops; /* statistics only: writes nothing */

/* conv_warn - a warning, through @opt->warn (dropped when it is NULL). */
void conv_warn(const struct conv_options *opt, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif /* GIL_CONV_H */
