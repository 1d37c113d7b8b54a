/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Time bins: STATS_BINS equal bins from an origin, whose width doubles (two bins merge into one)
 * when a time past the last bin comes in. stats.c keeps utilization and waiters per process, and
 * wait and hold time per thread, in them; the renderers read them through stats.h.
 */
#ifndef GIL_BINS_H
#define GIL_BINS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define STATS_BINS 200 /* time bins per process */

/* bins_too_narrow - whether @end lies past STATS_BINS bins of @width from @origin. */
bool bins_too_narrow(int64_t origin, int64_t width, int64_t end);

/* bins_halve - merge the STATS_BINS bins of @v pairwise into its first half (a doubled width). */
void bins_halve(int64_t *v);

/* bins_add - spread [@ts, @ts + @dur) over the bins @v that start at @origin, @width each. */
void bins_add(int64_t origin, int64_t width, int64_t *v, int64_t ts, int64_t dur);

/* bins_used - the bins from @origin, @width each, up to the one that holds @hi (<= STATS_BINS). */
size_t bins_used(int64_t origin, int64_t width, int64_t hi);

#endif /* GIL_BINS_H */
