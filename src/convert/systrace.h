/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The reference tool's raw files (openEuler sysTrace GIL plugin): take_gil/drop_gil X events (or
 * older B/E pairs), epoch microseconds, "pid" a string, "tid" "GIL_<tid>". Turned into the same
 * intervals a giltrace recording holds: hold = end of a take to the start of the next drop.
 */
#ifndef GIL_SYSTRACE_H
#define GIL_SYSTRACE_H

#include <stdbool.h>
#include <stdint.h>

#include <json-c/json.h>

#include "format/rawfile.h"

/* Intervals come out with start/dur in epoch nanoseconds. */
typedef int (*systrace_emit_fn)(void *ctx, const struct gil_interval *iv);

struct systrace_stats {
	uint64_t events;
	uint64_t ignored; /* other names or phases, malformed times, unmatched E */
	uint64_t unclosed; /* B without E at the end */
};

struct systrace;

/** systrace_alloc - per-thread state for one file. Pair with systrace_free(). */
struct systrace *systrace_alloc(systrace_emit_fn emit, void *ctx);

/** systrace_event - one event object of the file, in file order; emits 0 to 3 intervals. */
int systrace_event(struct systrace *st, struct json_object *ev);

/** systrace_pid - the event's "pid" ("0", 1234 or "1234"); false if it has none. */
bool systrace_pid(struct json_object *ev, int64_t *pid);

/** systrace_finish - statistics; B events never closed are dropped (counted). */
void systrace_finish(struct systrace *st, struct systrace_stats *stats);

void systrace_free(struct systrace *st);

/* "123.456" (microseconds, a JSON number's text or a string) -> exact nanoseconds. */
bool systrace_us_ns(struct json_object *v, int64_t *ns);

#endif /* GIL_SYSTRACE_H */
