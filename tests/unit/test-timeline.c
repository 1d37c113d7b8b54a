// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The converter's logic on synthetic input: waiter counter, hand-off flows, the reorder window
 * and its cap, overlapping intervals, thread rows; clock interpolation and clipping; the exact
 * microsecond text.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convert/clockmap.h"
#include "convert/convert.h"
#include "giltrace.h"
#include "convert/timeline.h"

#define MAXEV 256

struct sink {
	struct conv_event ev[MAXEV];
	char names[MAXEV][32];
	int n;
};

static int collect(void *ctx, const struct conv_event *ev)
{
	struct sink *s = ctx;

	assert_true(s->n < MAXEV);
	s->ev[s->n] = *ev;
	if (ev->name) {
		snprintf(s->names[s->n], sizeof(s->names[0]), "%s", ev->name);
		s->ev[s->n].name = s->names[s->n];
	}
	s->n++;
	return 0;
}

static const struct conv_proc proc = { .pid = 100, .os_pid = 100, .label = "p" };

static struct timeline *start(struct sink *s, int64_t window, size_t max)
{
	struct timeline *tl = timeline_alloc(window, max, true, true, collect, s);

	memset(s, 0, sizeof(*s));
	assert_non_null(tl);
	assert_int_equal(timeline_begin(tl, &proc), 0);
	return tl;
}

/* The counter samples "ts=value ..." and the flows "from@ts>to@ts ...". */
static void summary(const struct sink *s, char *counter, char *flows)
{
	int i;

	counter[0] = flows[0] = '\0';
	for (i = 0; i < s->n; i++) {
		const struct conv_event *e = &s->ev[i];

		if (e->type == CEV_COUNTER)
			sprintf(counter + strlen(counter), "%s%lld=%lld", *counter ? " " : "",
				(long long)e->ts, (long long)e->value);
		else if (e->type == CEV_FLOW)
			sprintf(flows + strlen(flows), "%s%d@%lld>%d@%lld", *flows ? " " : "", e->tid,
				(long long)e->ts, e->to_tid, (long long)e->to_ts);
	}
}

static void slice(struct timeline *tl, int32_t tid, int kind, int64_t ts, int64_t dur)
{
	assert_int_equal(timeline_slice(tl, tid, kind, 0, 0, ts, dur), 0);
}

static void test_counter_and_flows(void **state)
{
	struct timeline_stats st;
	struct sink s;
	struct timeline *tl = start(&s, 1000000, 1000);
	char c[512], f[512];

	/* 1 holds, 2 and 3 wait; 1 drops at 100, 2 takes at 105; 2 drops at 200, 3 takes at 210 */
	slice(tl, 1, GIL_KIND_HOLD, 0, 100);
	slice(tl, 2, GIL_KIND_TAKE, 10, 95);
	slice(tl, 1, GIL_KIND_DROP, 100, 10);
	slice(tl, 2, GIL_KIND_HOLD, 105, 95);
	slice(tl, 3, GIL_KIND_TAKE, 20, 190);
	slice(tl, 2, GIL_KIND_DROP, 200, 5);
	/* 3 drops at 300 and takes it back itself: no hand-off */
	slice(tl, 3, GIL_KIND_HOLD, 210, 90);
	slice(tl, 3, GIL_KIND_DROP, 300, 4);
	slice(tl, 3, GIL_KIND_TAKE, 305, 5);
	/* a zero-length take changes no count but still receives a hand-off */
	slice(tl, 3, GIL_KIND_DROP, 400, 1);
	slice(tl, 1, GIL_KIND_TAKE, 401, 0);
	assert_int_equal(timeline_end(tl, &st), 0);
	summary(&s, c, f);
	assert_string_equal(c, "10=1 20=2 105=1 210=0 305=1 310=0");
	/* s one ns into the drop, f one ns before the take ends: both strictly inside */
	assert_string_equal(f, "1@101>2@104 2@201>3@209 3@400>1@401");
	assert_int_equal(st.flows, 3);
	assert_int_equal(st.late, 0);
	assert_int_equal(st.threads, 3);
	timeline_free(tl);
}

/*
 * Two GILs (3.12+): each its own counter, and a hand-off only between slices of one GIL. GIL 0:
 * 1 holds, 2 waits, 1 drops at 100 and 2 takes at 105. GIL 5 meanwhile: 3 holds, 4 waits from
 * 20, 3 drops at 102 and 4 takes at 110. Per process, 1's drop would have gone to 2 and 3's to
 * nobody; per GIL, each goes to its own waiter.
 */
static void test_gils(void **state)
{
	struct sink s;
	struct timeline *tl = start(&s, 1000000, 1000);
	char c0[256] = "", c5[256] = "", all[512], f[512];
	int i;

	assert_int_equal(timeline_slice_gil(tl, 1, GIL_KIND_HOLD, 0, 0, 0, 100, 0, 0), 0);
	assert_int_equal(timeline_slice_gil(tl, 2, GIL_KIND_TAKE, 0, 0, 10, 95, 0, 0), 0);
	assert_int_equal(timeline_slice_gil(tl, 1, GIL_KIND_DROP, 0, 0, 100, 10, 0, 0), 0);
	assert_int_equal(timeline_slice_gil(tl, 3, GIL_KIND_HOLD, 0, 0, 0, 102, 5, 5), 0);
	assert_int_equal(timeline_slice_gil(tl, 4, GIL_KIND_TAKE, 0, 0, 20, 90, 5, 5), 0);
	assert_int_equal(timeline_slice_gil(tl, 3, GIL_KIND_DROP, 0, 0, 102, 10, 5, 5), 0);
	assert_int_equal(timeline_end(tl, NULL), 0);
	for (i = 0; i < s.n; i++) {
		const struct conv_event *e = &s.ev[i];
		char *c = e->gil ? c5 : c0;

		if (e->type == CEV_COUNTER)
			sprintf(c + strlen(c), "%s%lld=%lld", *c ? " " : "", (long long)e->ts,
				(long long)e->value);
		if (e->type == CEV_SLICE)
			assert_int_equal(e->interp, e->tid >= 3 ? 5 : 0);
	}
	summary(&s, all, f);
	assert_string_equal(c0, "10=1 105=0");
	assert_string_equal(c5, "20=1 110=0");
	assert_string_equal(f, "1@101>2@104 3@103>4@109");
	timeline_free(tl);
	(void)state;
}

static void test_same_instant(void **state)
{
	struct sink s;
	struct timeline *tl = start(&s, 1000000, 1000);
	char c[512], f[512];

	/* a take ending at the very ns of another thread's drop: the drop lets it through */
	slice(tl, 2, GIL_KIND_TAKE, 0, 50);
	slice(tl, 1, GIL_KIND_DROP, 50, 10);
	/* two waits ending together: the earlier in the file is the one handed to */
	slice(tl, 1, GIL_KIND_TAKE, 60, 40);
	slice(tl, 3, GIL_KIND_TAKE, 70, 30);
	assert_int_equal(timeline_end(tl, NULL), 0);
	summary(&s, c, f);
	assert_string_equal(f, "1@51>2@49");
	assert_string_equal(c, "0=1 50=0 60=1 70=2 100=0");
	timeline_free(tl);
}

static void test_window(void **state)
{
	struct timeline_stats st;
	struct sink s;
	struct timeline *tl = start(&s, 100, 1000);
	char c[512], f[512];

	/* 2 waits from 0 to 1000; 1 hands over among itself meanwhile: 2's wait arrives late */
	slice(tl, 1, GIL_KIND_TAKE, 300, 10);
	slice(tl, 1, GIL_KIND_DROP, 500, 10);
	slice(tl, 1, GIL_KIND_TAKE, 600, 10);
	slice(tl, 2, GIL_KIND_TAKE, 0, 1000);
	assert_int_equal(timeline_end(tl, &st), 0);
	summary(&s, c, f);
	assert_int_equal(st.late, 1);
	/* released up to the drop at 500 when it came: counted from there */
	assert_string_equal(c, "300=1 310=0 500=1 600=2 610=1 1000=0");
	timeline_free(tl);

	/* the same with a window that covers the wait is exact */
	tl = start(&s, 2000, 1000);
	slice(tl, 1, GIL_KIND_TAKE, 300, 10);
	slice(tl, 1, GIL_KIND_DROP, 500, 10);
	slice(tl, 1, GIL_KIND_TAKE, 600, 10);
	slice(tl, 2, GIL_KIND_TAKE, 0, 1000);
	assert_int_equal(timeline_end(tl, &st), 0);
	summary(&s, c, f);
	assert_int_equal(st.late, 0);
	assert_string_equal(c, "0=1 300=2 310=1 600=2 610=1 1000=0");
	assert_string_equal(f, ""); /* 1 took it back at 610, before 2 got it */
	timeline_free(tl);
}

static void test_cap(void **state)
{
	struct timeline_stats st;
	struct sink s;
	struct timeline *tl = start(&s, INT64_MAX / 4, 3);
	int i;

	/* an endless window, but 3 points at most: the oldest go early, in order */
	for (i = 0; i < 20; i++)
		slice(tl, 1 + i % 2, GIL_KIND_TAKE, i * 100, 50);
	assert_int_equal(timeline_end(tl, &st), 0);
	assert_int_equal(st.peak_points, 3);
	assert_int_equal(st.late, 0);
	assert_int_equal(st.counter_events, 40);
	timeline_free(tl);
}

static void test_threads_and_overlap(void **state)
{
	struct timeline_stats st;
	struct sink s;
	struct timeline *tl = start(&s, 1000, 1000);
	int i, names = 0, sorts = 0;

	assert_int_equal(timeline_thread(tl, 100, "python3"), 0);
	assert_int_equal(timeline_thread(tl, 100, "python3"), 0); /* unchanged: nothing new */
	assert_int_equal(timeline_thread(tl, 100, "trainer"), 0);
	slice(tl, 101, GIL_KIND_HOLD, 0, 100);
	/* starts before the previous one ended: moved to its end, flagged */
	slice(tl, 101, GIL_KIND_DROP, 90, 20);
	slice(tl, 101, GIL_KIND_TAKE, 95, 5); /* entirely inside: zero length at the end */
	assert_int_equal(timeline_end(tl, &st), 0);
	assert_int_equal(st.overlaps, 2);
	for (i = 0; i < s.n; i++) {
		if (s.ev[i].type == CEV_THREAD) {
			sorts++;
			if (s.ev[i].tid == 100)
				assert_int_equal(s.ev[i].sort_index, 0);
			else
				assert_int_equal(s.ev[i].sort_index, 101);
			if (s.ev[i].name)
				assert_string_equal(s.ev[i].name, names++ ? "trainer" : "python3");
		}
		if (s.ev[i].type == CEV_SLICE && s.ev[i].kind == GIL_KIND_DROP) {
			assert_int_equal(s.ev[i].ts, 100);
			assert_int_equal(s.ev[i].dur, 10);
			assert_int_equal(s.ev[i].fixups, CONV_FIX_OVERLAP);
		}
		if (s.ev[i].type == CEV_SLICE && s.ev[i].kind == GIL_KIND_TAKE) {
			assert_int_equal(s.ev[i].ts, 110);
			assert_int_equal(s.ev[i].dur, 0);
		}
	}
	assert_int_equal(names, 2);
	assert_int_equal(sorts, 3);
	timeline_free(tl);
}

static void test_clockmap(void **state)
{
	struct json_object *h, *f;
	struct clockmap m = { 0 };
	char err[256];
	int64_t t, prev, ts, dur;

	h = json_tokener_parse("{\"start_ns\":1000,\"clock_offsets\":{\"realtime_ns\":"
			       "\"1700000000000000000\",\"monotonic_ns\":-7}}");
	f = json_tokener_parse("{\"end_ns\":4000,\"clock_offsets\":{\"realtime_ns\":"
			       "1700000000000000003,\"monotonic_ns\":-7}}");
	assert_int_equal(clockmap_setup(&m, CONV_CLOCK_REALTIME, h, f, false, 0, err,
					sizeof(err)), 0);
	assert_true(clockmap_map(&m, 1000) == 1700000000000001000);
	assert_true(clockmap_map(&m, 1999) == 1700000000000001999); /* floor(999*3/3000) = 0 */
	assert_true(clockmap_map(&m, 2000) == 1700000000000002001);
	assert_true(clockmap_map(&m, 4000) == 1700000000000004003);
	assert_true(clockmap_map(&m, 9000) == 1700000000000009003); /* end offset beyond */
	assert_true(clockmap_map(&m, 10) == 1700000000000000010); /* start offset before */
	for (t = 900, prev = INT64_MIN; t < 4100; t++) {
		assert_true(clockmap_map(&m, (uint64_t)t) >= prev); /* adjacent stays adjacent */
		prev = clockmap_map(&m, (uint64_t)t);
	}
	assert_int_equal(clockmap_setup(&m, CONV_CLOCK_MONOTONIC, h, NULL, false, 0, err,
					sizeof(err)), 0);
	assert_true(clockmap_map(&m, 5000) == 4993);
	assert_int_equal(clockmap_setup(&m, CONV_CLOCK_MONOTONIC_RAW, NULL, NULL, false, 0, err,
					sizeof(err)), 0);
	assert_true(clockmap_map(&m, 5000) == 5000);
	m.base = 1000;
	assert_true(clockmap_map(&m, 5000) == 4000);
	m.base = 0;
	assert_int_equal(clockmap_setup(&m, CONV_CLOCK_MONOTONIC, f, NULL, true, 42, err,
					sizeof(err)), 0);
	assert_true(clockmap_map(&m, 5000) == 5042);
	json_object_put(h);
	h = json_tokener_parse("{\"start_ns\":1}");
	assert_int_equal(clockmap_setup(&m, CONV_CLOCK_REALTIME, h, NULL, false, 0, err,
					sizeof(err)), -1);
	assert_string_equal(err, "the header has no clock_offsets.realtime_ns: use --clock "
			    "monotonic_raw");

	m.clip = true;
	m.lo = 100;
	m.hi = 200;
	ts = 50, dur = 40;
	assert_int_equal(clockmap_clip(&m, &ts, &dur), 0);
	ts = 50, dur = 100;
	assert_int_equal(clockmap_clip(&m, &ts, &dur), 2);
	assert_true(ts == 100 && dur == 50);
	ts = 150, dur = 100;
	assert_int_equal(clockmap_clip(&m, &ts, &dur), 2);
	assert_true(ts == 150 && dur == 50);
	ts = 120, dur = 10;
	assert_int_equal(clockmap_clip(&m, &ts, &dur), 1);
	json_object_put(h);
	json_object_put(f);
}

static void test_fmt_us(void **state)
{
	char buf[32];

	gil_fmt_us(buf, 1736408883694250123);
	assert_string_equal(buf, "1736408883694250.123");
	gil_fmt_us(buf, 5);
	assert_string_equal(buf, "0.005");
	gil_fmt_us(buf, 0);
	assert_string_equal(buf, "0.000");
	gil_fmt_us(buf, -1500);
	assert_string_equal(buf, "-1.500");
	gil_fmt_us(buf, INT64_MIN);
	assert_string_equal(buf, "-9223372036854775.808");
	assert_int_equal(gil_fmt_us(buf, INT64_MAX), strlen("9223372036854775.807"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_counter_and_flows), cmocka_unit_test(test_same_instant),
		cmocka_unit_test(test_window),            cmocka_unit_test(test_cap),
		cmocka_unit_test(test_threads_and_overlap), cmocka_unit_test(test_clockmap),
		cmocka_unit_test(test_fmt_us),
		cmocka_unit_test(test_gils),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
