// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * gil_recorder_live(): the live view's snapshot, gathered from the live sink (sink-live.c) of
 * every target recorded now. Called from the thread that polls, so nothing here is locked.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <stdlib.h>

#include "state.h"

void gil_live_free(struct gil_live *live)
{
	size_t i;

	if (!live)
		return;
	for (i = 0; i < live->nr_processes; i++)
		free(live->processes[i].threads);
	free(live->processes);
	free(live);
}

struct gil_live *gil_recorder_live(struct gil_recorder *rec)
{
	struct gil_live *live;
	struct target *t;
	uint64_t second = 0, newest = 0;
	size_t i;
	int r;

	if (!rec->opts.live) {
		errno = ENOENT;
		return NULL;
	}
	live = calloc(1, sizeof(*live));
	if (!live || !(live->processes = calloc(rec->nr_targets + 1, sizeof(*live->processes)))) {
		free(live);
		errno = ENOMEM;
		return NULL;
	}
	for (i = 0; i < rec->nr_targets; i++) {
		t = rec->targets[i];
		if (t->state == T_DONE || !t->sinks)
			continue;
		r = gil_sink_live_get(gil_sinks_state(t->sinks, &gil_sink_live), &second,
				      &live->processes[live->nr_processes]);
		if (r < 0) {
			gil_live_free(live);
			errno = ENOMEM;
			return NULL;
		}
		if (r == 0)
			continue;
		live->nr_processes++;
		if (second > newest)
			newest = second;
	}
	/* no process has a second yet: the recording's own, once one is complete */
	if (!live->nr_processes) {
		if (!rec->start_ns || rec->horizon < rec->start_ns + 1000000000ull) {
			gil_live_free(live);
			errno = ENOENT;
			return NULL;
		}
		newest = (rec->horizon - rec->start_ns) / 1000000000ull - 1;
	}
	live->second = newest;
	live->events = rec->events;
	live->lost = rec->lost;
	live->drain_lag_ns = rec->metrics.drain_lag;
	return live;
}
