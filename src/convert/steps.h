/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Per-step statistics: the training steps of a profiler's trace (the ProfilerStep#N spans that
 * torch.profiler/Kineto and torch_npu write), and each thread's GIL time clipped to each step.
 * Steps are known before the recordings are read; stats.c hands every interval and every
 * overlap of a wait with another thread's hold to them; steps_finish() flags the steps whose GIL
 * wait is an outlier (doc/statistics.md: above median + max(3 x 1.4826 x MAD, 1 ms), from 5
 * steps on), naming the thread that waited most and who held the GIL while it waited.
 */
#ifndef GIL_STEPS_H
#define GIL_STEPS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <json-c/json.h>

struct stats;
struct steps;

#define STEPS_MAX 100000 /* steps kept; later ones are counted (steps_cut) */
#define STEPS_MIN_FOR_OUTLIERS 5 /* fewer steps flag nothing */
#define STEPS_FLOOR_NS 1000000 /* an outlier waits at least this much over the median */

/** steps_alloc - an empty set of steps; @source says where they come from (for the reports). */
struct steps *steps_alloc(const char *source);

/**
 * steps_add - step @number over [@start, @end) ns on the output axis, named "@prefix@number"
 * (@prefix: "ProfilerStep#"). Returns 0, -1 on ENOMEM.
 */
int steps_add(struct steps *st, const char *prefix, int64_t number, int64_t start, int64_t end);

/** steps_add_for - the same, a step of the process of trace pid @pid only (a mark's). */
int steps_add_for(struct steps *st, int64_t pid, const char *prefix, int64_t number,
		  int64_t start, int64_t end);

/**
 * steps_seal - sort the steps by process and start; a step that begins inside the previous one
 * of its process is dropped. Again after more were added: rows stay with their steps.
 */
void steps_seal(struct steps *st);

/** steps_count - how many steps there are (after steps_seal). */
size_t steps_count(const struct steps *st);

/**
 * steps_interval - an interval of thread @tid of statistics entry @proc (an index into
 * stats->procs, of trace pid @pid): @kind (enum gil_kind), @reason, over [@ts, @ts + @dur) on the output axis.
 * -1 on ENOMEM.
 */
int steps_interval(struct steps *st, size_t proc, int64_t pid, int32_t tid, int kind, int reason,
		   int64_t ts, int64_t dur);

/** steps_blame - thread @holder of @proc held the GIL in function @fn (global index + 1, 0:
 * none) over [@lo, @hi) while another thread waited for it. */
void steps_blame(struct steps *st, size_t proc, int64_t pid, int32_t holder, uint32_t fn,
		 int64_t lo, int64_t hi);

/** steps_used - how many steps hold GIL time of some thread. */
size_t steps_used(const struct steps *st);

/** steps_finish - totals, percentiles and the outlier rule; after the last recording. */
void steps_finish(struct steps *st);

/** steps_json - every step, every thread (statistics.steps). New reference. */
struct json_object *steps_json(const struct steps *st, const struct stats *s);

/** steps_write_text - the steps table of --summary. */
void steps_write_text(const struct steps *st, const struct stats *s, FILE *f);

/**
 * steps_each - call @fn for every step that has rows of process @pid (the trace pid): its
 * start, end, name, total wait and hold of @pid's threads, and, when flagged, a one-line why.
 * Stops at, and returns, the first non-zero return.
 */
int steps_each(const struct steps *st, const struct stats *s, int64_t pid,
	       int (*fn)(void *ctx, int64_t start, int64_t end, const char *name, uint64_t wait,
			 uint64_t hold, const char *why),
	       void *ctx);

/* What steps_get() tells of one step (tests, and readers other than the reports). */
struct steps_view {
	int64_t pid, start, end, number;
	uint64_t ns[3]; /* all threads, clipped (after steps_finish) */
	uint64_t forced;
	size_t threads;
	bool flagged;
	int32_t waiting_tid; /* the thread that waited most, -1 none */
	int32_t holder_tid; /* the holder others waited on most, -1 none */
	uint64_t holder_ns;
};

/* steps_get - step @i (in sealed order) into *@out; false past the last. */
bool steps_get(const struct steps *st, size_t i, struct steps_view *out);

/* steps_rule - the outlier rule's numbers; false under STEPS_MIN_FOR_OUTLIERS steps. */
bool steps_rule(const struct steps *st, uint64_t *median, uint64_t *mad, uint64_t *threshold);

void steps_free(struct steps *st);

#endif /* GIL_STEPS_H */
