/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Recording clock -> output time axis, and the --profiling-data clip window. */
#ifndef GIL_CLOCKMAP_H
#define GIL_CLOCKMAP_H

#include <stdbool.h>
#include <stdint.h>

#include <json-c/json.h>

#include "conv.h"

struct clockmap {
	bool identity; /* times are already on the output clock (sysTrace files) */
	/* other clock = raw + off0 + (off1 - off0) * (raw - t0) / (t1 - t0), clamped to [t0, t1] */
	int64_t t0, t1;
	int64_t off0, off1;
	int64_t base; /* subtracted last: a Kineto trace's baseTimeNanoseconds */
	bool clip; /* keep only [lo, hi] (before the base is subtracted) */
	int64_t lo, hi;
};

/**
 * clockmap_setup - the mapping of one giltrace recording onto @clock, from its @header and
 * (when the file is complete) @footer. @fixed_off, when @use_fixed, replaces the recorded offsets
 * (--profiling-data: collectionTimeBegin - clockMonotonicRaw). Returns -1 with @err set when
 * the offsets needed are missing.
 */
int clockmap_setup(struct clockmap *m, enum conv_clock clock, struct json_object *header,
		   struct json_object *footer, bool use_fixed, int64_t fixed_off, char *err,
		   size_t errlen);

/* clockmap_map - a recording time (ns) on the output axis (ns), before clipping. */
static inline int64_t clockmap_map(const struct clockmap *m, uint64_t raw)
{
	int64_t t = (int64_t)raw, off;

	if (m->identity)
		return t - m->base;
	if (m->off0 == m->off1 || t <= m->t0) {
		off = m->off0;
	} else if (t >= m->t1) {
		off = m->off1;
	} else {
		/* floor keeps the mapping monotonic: take ends and hold starts stay adjacent */
		__int128 d = (__int128)(t - m->t0) * (m->off1 - m->off0);
		__int128 q = d / (m->t1 - m->t0);

		if (d % (m->t1 - m->t0) < 0)
			q--;
		off = m->off0 + (int64_t)q;
	}
	return t + off - m->base;
}

/*
 * clockmap_clip - cut [*ts, *ts + *dur] (output axis) to the clip window. Returns 0 when nothing
 * is left, 1 when unchanged, 2 when cut.
 */
int clockmap_clip(const struct clockmap *m, int64_t *ts, int64_t *dur);

/* JSON helpers shared by the converter: integers given as numbers or decimal strings. */
bool conv_json_int(struct json_object *o, const char *key, int64_t *v);

#endif /* GIL_CLOCKMAP_H */
