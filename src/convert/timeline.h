/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* One process's timeline: thread rows, the waiter counter and hand-off flows. */
#ifndef GIL_TIMELINE_H
#define GIL_TIMELINE_H

#include <stdbool.h>
#include <stdint.h>

#include "conv.h"

typedef int (*timeline_emit_fn)(void *ctx, const struct conv_event *ev);

struct timeline_stats {
	uint64_t slices;
	uint64_t overlaps; /* intervals that started before their thread's previous one ended */
	uint64_t counter_events;
	uint64_t flows;
	uint64_t late; /* points older than what the reorder window had already released */
	uint64_t peak_points; /* most points held at once */
	uint64_t threads;
};

struct timeline;

/**
 * timeline_alloc - a timeline writing through @emit. @window_ns and @max_points bound the
 * reorder window (see timeline.c). Touches nothing else. Pair with timeline_free().
 */
struct timeline *timeline_alloc(int64_t window_ns, size_t max_points, bool flows, bool counter,
				timeline_emit_fn emit, void *ctx);

/** timeline_begin - start the rows of @proc (which must live until timeline_end()). */
int timeline_begin(struct timeline *tl, const struct conv_proc *proc);

/** timeline_thread - a thread's recorded name (NULL: only make sure its row exists). */
int timeline_thread(struct timeline *tl, int32_t tid, const char *name);

/**
 * timeline_label - name thread @tid's row, at the end of its process, so that rows the OS names
 * alike can be told apart. @name: its recorded name (NULL: none); @comm: its process's (NULL:
 * unknown). A thread that entered Python from native code and ran no Python function of its
 * own (@native: that code's function) becomes "name [C: native]"; one named like its process
 * (CPython before 3.14 names every thread so), "name (mostly_in)" (@mostly_in: the Python
 * function it waited and held the GIL in longest).
 * Named threads and threads mostly in an unreadable frame ("<...>") keep their name.
 */
int timeline_label(struct timeline *tl, int32_t tid, const char *name, const char *comm,
		   const char *mostly_in, const char *native);

/**
 * timeline_slice - one interval, on the output axis. Intervals of one thread must come in order;
 * threads may interleave in any order (within the reorder window for exact counter and flows).
 */
int timeline_slice(struct timeline *tl, int32_t tid, int kind, uint32_t flags, uint32_t fixups,
		   int64_t ts, int64_t dur);

/**
 * timeline_slice_gil - timeline_slice() of interpreter @interp, whose GIL is @gil's (3.12+):
 * the waiters counter and the hand-offs are per GIL.
 */
int timeline_slice_gil(struct timeline *tl, int32_t tid, int kind, uint32_t flags,
		       uint32_t fixups, int64_t ts, int64_t dur, uint32_t interp, uint32_t gil);

/** timeline_end - release what the window holds and close the process. */
int timeline_end(struct timeline *tl, struct timeline_stats *stats);

void timeline_free(struct timeline *tl);

#endif /* GIL_TIMELINE_H */
