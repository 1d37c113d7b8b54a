// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Time bases. A giltrace recording keeps CLOCK_MONOTONIC_RAW nanoseconds and the offsets of the
 * other clocks sampled at its start (header) and end (footer); between the two the offset is
 * interpolated linearly, which follows NTP slewing to within the drift of one recording.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "clockmap.h"
#include "common/util.h"
#include "format/keys.h"

bool conv_json_int(struct json_object *o, const char *key, int64_t *v)
{
	struct json_object *x;
	const char *s;
	char *end;
	long long n;

	if (!o || !json_object_object_get_ex(o, key, &x) || !x)
		return false;
	if (json_object_is_type(x, json_type_int)) {
		*v = json_object_get_int64(x);
		return true;
	}
	if (!json_object_is_type(x, json_type_string))
		return false;
	s = json_object_get_string(x);
	errno = 0;
	n = strtoll(s, &end, 10);
	if (end == s || *end || errno)
		return false;
	*v = n;
	return true;
}

/* Offsets and times beyond 2^62 ns are damage: mapping them could overflow. */
#define OFF_MAX ((int64_t)1 << 62)

static const char *clock_key(enum conv_clock clock)
{
	return clock == CONV_CLOCK_MONOTONIC ? GIL_KEY_OFFSET_MONOTONIC : GIL_KEY_OFFSET_REALTIME;
}

static bool offsets(struct json_object *rec, const char *key, int64_t *off)
{
	struct json_object *co;

	return rec && json_object_object_get_ex(rec, GIL_KEY_CLOCK_OFFSETS, &co) &&
	       conv_json_int(co, key, off);
}

int clockmap_setup(struct clockmap *m, enum conv_clock clock, struct json_object *header,
		   struct json_object *footer, bool use_fixed, int64_t fixed_off, char *err,
		   size_t errlen)
{
	const char *key = clock_key(clock);
	int64_t t0 = 0, t1 = 0;

	m->identity = false;
	m->t0 = m->t1 = 0;
	m->off0 = m->off1 = 0;
	if (use_fixed) {
		m->off0 = m->off1 = fixed_off;
		return 0;
	}
	if (clock == CONV_CLOCK_MONOTONIC_RAW)
		return 0;
	if (!offsets(header, key, &m->off0))
		return gil_err(err, errlen, "the header has no clock_offsets.%s: use --clock "
			       "monotonic_raw", key);
	if (m->off0 > OFF_MAX || m->off0 < -OFF_MAX)
		return gil_err(err, errlen, "the header's clock_offsets.%s is out of range", key);
	m->off1 = m->off0;
	conv_json_int(header, GIL_KEY_START_NS, &t0);
	if (offsets(footer, key, &m->off1) && conv_json_int(footer, GIL_KEY_END_NS, &t1) && t1 > t0 &&
	    t0 >= 0 && t1 <= OFF_MAX && m->off1 <= OFF_MAX && m->off1 >= -OFF_MAX) {
		m->t0 = t0;
		m->t1 = t1;
	} else {
		m->off1 = m->off0;
	}
	return 0;
}

int clockmap_clip(const struct clockmap *m, int64_t *ts, int64_t *dur)
{
	int64_t lo = m->lo - m->base, hi = m->hi - m->base, end = *ts + *dur;

	if (!m->clip)
		return 1;
	if (end < lo || *ts > hi)
		return 0;
	if (*ts >= lo && end <= hi)
		return 1;
	if (*ts < lo)
		*ts = lo;
	if (end > hi)
		end = hi;
	*dur = end - *ts;
	return 2;
}
