/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the parts of the statistics tell each other (stats.c takes the records in; hist.c,
 * functions.c, natives.c, handoff.c and longest.c count them; bins.c, below them all, knows no
 * statistics).
 * Not for the renderers: they read stats.h.
 */
#ifndef GIL_STATS_PRIV_H
#define GIL_STATS_PRIV_H

#include "stats.h"

#define MAX_HANDOFFS 65536 /* giver/taker pairs kept per process */
#define MAX_RING (256 * 1024) /* holds kept for matching waits: 6 MiB at most */
#define MAX_FNS (1u << 20) /* distinct functions over all inputs */
#define TIME_MAX ((int64_t)1 << 62) /* as convert.c: later times are damage, not data */

/* hist.c: count @v in @h (its buckets allocated at the first value). -1 on ENOMEM. */
int stats_hist_add(struct stats_hist *h, uint64_t v);

/* functions.c: the global index + 1 of the current input's function @id, 0 when it has none. */
uint32_t stats_fn_of(const struct stats *s, uint32_t id);
/* functions.c: count @ns for function @g (global index + 1) in @t's few slots. */
void stats_thread_fn_add(struct stats_thread *t, uint32_t g, uint64_t ns);

/*
 * natives.c: count interval @iv of thread @t by its native caller; *@nf its native function
 * (index + 1), 0 for none or the interpreter's own. -1 on ENOMEM.
 */
/*
 * stats_top_sorted - of the indices 0 .. @nr - 1, those whose @key_of is not 0, sorted by @cmp
 * (a qsort comparator of indices), the first @max into @out: the top tables of functions and
 * of native functions. Returns how many.
 */
size_t stats_top_sorted(size_t nr, uint64_t (*key_of)(size_t i),
			int (*cmp)(const void *a, const void *b), size_t *out, size_t max);

/*
 * A hold is charged to the native code that took the GIL only when the thread let go of it
 * outside any Python frame (@python false: no function, or none readable, at its drop): code
 * that took the GIL back and returned to Python (Py_END_ALLOW_THREADS) did not hold it after.
 */
int stats_native_interval(struct stats *s, struct stats_thread *t, const struct gil_interval *iv,
			  int64_t dur, bool python, uint32_t *nf);
/* natives.c: let go of @p's call sites (the process ended: its ids mean nothing more). */
void stats_natives_end(struct stats_proc *p);
/* natives.c: free the native functions. */
void stats_natives_free(struct stats *s);

/* handoff.c: a hold, kept for the waits that end after it. -1 on ENOMEM. */
int stats_ring_push(struct stats *s, struct stats_proc *p, const struct stats_hold *h);
/* handoff.c: a wait of @tid over [@ts, @end): charge the holds it overlapped, note the giver. */
int stats_wait_done(struct stats *s, struct stats_proc *p, int32_t tid, int64_t ts, int64_t end,
		    bool begin_unknown);

/* longest.c: a hold, kept when it is among the STATS_TOP longest. */
void stats_longest_add(struct stats *s, const struct stats_long_hold *h);

#endif /* GIL_STATS_PRIV_H */
