/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Sinks: what consumes one target's intervals and events once pairing made them, behind one
 * small ops table, like perf's struct perf_tool. The recorder's loop opens the sinks when a
 * target starts and ends them when it ends; pairing emits straight into gil_sinks_interval().
 * The file writer (sink-file.c) is one sink, the end-of-run summary (sink-summary.c) another.
 *
 * A new sink is one file defining a struct gil_sink_ops, plus its line in sink.c's table. It
 * knows nothing of the recorder: what it learns of its target is struct gil_sink_target.
 */
#ifndef GIL_SINK_H
#define GIL_SINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <json-c/json.h>

#include "format/rawfile.h"
#include "giltrace.h"
#include "pairing.h"

struct gil_fntab; /* attrib/attrib.h */

/* What a sink is told of the target it serves. */
struct gil_sink_target {
	pid_t pid;
	int rank;
	const char *comm; /* the process's */
	/* the recording's options (the watchdog's threshold and callback) */
	const struct gil_options *opts;
	/* the function ids intervals carry; NULL: they carry none */
	const struct gil_fntab *fntab;
	/* the target's recording file, header written; the file sink writes the rest */
	struct gil_rawfile *file;
	uint64_t origin; /* when the recording began (the live view counts its seconds from it) */
	uint64_t since; /* when this target's recording began */
};

/*
 * One sink. Every op but open is optional. An op returning < 0 stops the recording; error() then
 * says why (NULL: out of memory).
 */
struct gil_sink_ops {
	const char *name;
	/* the target's recording begins: the sink's state for it, or NULL (out of memory) */
	void *(*open)(const struct gil_sink_target *t);
	/* one interval, as pairing closed it (per thread in time order) */
	int (*interval)(void *s, const struct gil_interval *iv);
	/* thread @tid is called @name from @ts on */
	int (*thread)(void *s, int32_t tid, const char *name, uint64_t ts);
	/* thread @tid exited at @ts */
	int (*exit)(void *s, int32_t tid, uint64_t ts);
	/* the kernel lost @count events on @cpu at @ts */
	int (*lost)(void *s, int cpu, uint64_t count, uint64_t ts);
	/* thread @tid called gil_mark_step at @ts: a step ended (@n its number, -1 none) */
	int (*step)(void *s, int32_t tid, uint64_t ts, int64_t n);
	/* native caller @id (intervals' native) is @name, return address @addr */
	int (*native)(void *s, uint32_t id, const char *name, uint64_t addr);
	/* push what is buffered (once per round of the recorder's loop) */
	int (*flush)(void *s);
	/*
	 * Once per round, after the intervals: every event before @upto has been handed on, and
	 * @holds (@nr of them) are the intervals open at @upto (holds, waits and releases: see
	 * their kind), with @waiting threads waiting for the GIL.
	 */
	int (*tick)(void *s, uint64_t upto, const struct gil_open *holds, size_t nr,
		    uint32_t waiting);
	/*
	 * The target's recording ended: add to @footer what the sink has to say. Sinks end in the
	 * table's order; the file sink is last, and writes the footer the others added to.
	 */
	int (*end)(void *s, struct json_object *footer);
	const char *(*error)(void *s);
	void (*close)(void *s);
};

extern const struct gil_sink_ops gil_sink_file;
extern const struct gil_sink_ops gil_sink_summary;
extern const struct gil_sink_ops gil_sink_alert;

/* One target's sinks: one state per registered sink. */
struct gil_sinks;

/* gil_sinks_open - open every registered sink for @t. NULL: out of memory. */
struct gil_sinks *gil_sinks_open(const struct gil_sink_target *t);

/* Dispatch to every sink, in the table's order; the first failure stops and is returned. */
int gil_sinks_interval(void *sinks, const struct gil_interval *iv); /* a gil_emit_fn */
int gil_sinks_thread(struct gil_sinks *ss, int32_t tid, const char *name, uint64_t ts);
int gil_sinks_exit(struct gil_sinks *ss, int32_t tid, uint64_t ts);
int gil_sinks_lost(struct gil_sinks *ss, int cpu, uint64_t count, uint64_t ts);
int gil_sinks_step(struct gil_sinks *ss, int32_t tid, uint64_t ts, int64_t n);
int gil_sinks_native(struct gil_sinks *ss, uint32_t id, const char *name, uint64_t addr);
int gil_sinks_flush(struct gil_sinks *ss);
int gil_sinks_tick(struct gil_sinks *ss, uint64_t upto, const struct gil_open *holds,
		   size_t nr, uint32_t waiting);
int gil_sinks_end(struct gil_sinks *ss, struct json_object *footer);

/* gil_sinks_error - why the last failing op failed, in one line. */
const char *gil_sinks_error(const struct gil_sinks *ss);

/* gil_sinks_state - the state @ops keeps for this target (to read its results), or NULL. */
void *gil_sinks_state(const struct gil_sinks *ss, const struct gil_sink_ops *ops);

void gil_sinks_close(struct gil_sinks *ss);

/*
 * The summary sink's result, after its end: a thread's totals, in order of first appearance,
 * exited threads folded into one row of tid -1 when there were more than GIL_SUMMARY_MAX_THREADS.
 */
#define GIL_SUMMARY_MAX_THREADS 4096
const struct gil_thread_summary *gil_sink_summary_threads(void *s, size_t *nr);

/* The metrics sink's state (sink-metrics.c), rendered by record/metrics.c. */
#define GIL_METRICS_MAX_THREADS 64 /* live threads with series of their own, per process */
#define GIL_METRICS_REASONS 3 /* enum gil_reason */

struct gil_metrics_counts {
	uint64_t ns[3], count[3]; /* per enum gil_kind */
	uint64_t releases[GIL_METRICS_REASONS]; /* drop intervals by enum gil_reason */
	uint64_t long_holds; /* holds over the watchdog's threshold */
};

struct gil_metrics_thread {
	int32_t tid; /* -1: the shared row */
	char name[17];
	struct gil_metrics_counts c;
};

struct gil_metrics_sample {
	uint64_t ts, held;
};

struct gil_metrics {
	bool on; /* gil_options.metrics: else every op returns at once */
	pid_t pid;
	int rank;
	char comm[17];
	uint64_t threshold;
	struct gil_metrics_thread *v; /* live threads, GIL_METRICS_MAX_THREADS at most */
	size_t nr, cap;
	struct gil_metrics_thread other; /* exited threads, and those past the bound */
	struct gil_metrics_counts total;
	uint32_t waiting; /* at the last tick */
	double held_ratio; /* of the last second, at the last tick */
	struct gil_metrics_sample *samples; /* (tick, time held up to it), a ring */
	size_t next, nr_samples;
};

extern const struct gil_sink_ops gil_sink_metrics;

/*
 * The live sink (sink-live.c), read by record/live.c: the last second it froze (*@second) and
 * the process's figures for it into @out, its threads malloc'd. 1, 0 (none yet, or --live is
 * off), -1 (out of memory).
 */
extern const struct gil_sink_ops gil_sink_live;
int gil_sink_live_get(void *s, uint64_t *second, struct gil_live_process *out);

#endif /* GIL_SINK_H */
