/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The reference tool's raw files (openEuler sysTrace GIL plugin): take_gil/drop_gil X events (or
 * older B/E pairs), epoch microseconds, "pid" a string, "tid" "GIL_<tid>". Turned into the same
 * intervals a giltrace recording holds: hold = end of a take to the start of the next drop.
 * Private to the reader (reader.c), which hands out the intervals as GIL_REC_INTERVAL records.
 * Lifecycle: gil_systrace_alloc -> gil_systrace_event... -> gil_systrace_stats -> _free.
 */
#ifndef GIL_FORMAT_SYSTRACE_H
#define GIL_FORMAT_SYSTRACE_H

#include <stdbool.h>
#include <stdint.h>

#include <json-c/json.h>

#include "rawfile.h"

/* Intervals one event can complete: a hold and the drop that ends it, or a take. */
#define GIL_SYSTRACE_OUT_MAX 3

struct gil_systrace;

/** gil_systrace_recognize - is @first, the first element of a bare array, a GIL event? */
bool gil_systrace_recognize(struct json_object *first);

/** gil_systrace_pid - the event's "pid" ("0", 1234 or "1234"); false if it has none. */
bool gil_systrace_pid(struct json_object *ev, int64_t *pid);

/** gil_systrace_alloc - per-thread state for one file; NULL on ENOMEM. Pair with _free(). */
struct gil_systrace *gil_systrace_alloc(void);

/**
 * gil_systrace_event - one event object of the file, in file order: the intervals it completes
 * (start/dur in epoch nanoseconds) into @out. Returns how many (0 to 3), -1 on ENOMEM.
 */
int gil_systrace_event(struct gil_systrace *st, struct json_object *ev,
		       struct gil_interval out[GIL_SYSTRACE_OUT_MAX]);

/** gil_systrace_stats - the counts so far; B events not closed yet count as unclosed. */
void gil_systrace_stats(const struct gil_systrace *st, struct gil_systrace_stats *stats);

void gil_systrace_free(struct gil_systrace *st);

#endif /* GIL_FORMAT_SYSTRACE_H */
