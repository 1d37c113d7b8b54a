/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What a target's recording says of itself: its header and footer. */
#ifndef GIL_REC_RECFILE_H
#define GIL_REC_RECFILE_H

#include "state.h"

/* Why @o's probes read no Python function, or NULL when they do. */
const char *rec_attribution_why(const struct gil_recorder *rec, const struct object *o);

/* Write @t's header: the process, the object, its probes and what they read. */
int rec_write_header(struct gil_recorder *rec, struct target *t);

/*
 * The footer of @t's file, its recording ended at @end for @reason; @not_seen releases were
 * not seen (0: the key is left out). The sinks add theirs. NULL: out of memory.
 */
struct json_object *rec_footer(const struct gil_recorder *rec, const struct target *t,
			       uint64_t end, const char *reason, uint64_t not_seen);

#endif /* GIL_REC_RECFILE_H */
