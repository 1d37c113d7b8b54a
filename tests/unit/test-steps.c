// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Per-step statistics (src/convert/steps.c) on synthetic intervals: steps sorted and overlaps
 * dropped per process, intervals clipped to steps (a wait counted in the step it ends in, a
 * release in the one it begins in), a profiler's steps for every process and a mark's for its
 * own, the holder charged for others' waiting, and the outlier rule at its edges.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "convert/steps.h"
#include "giltrace.h"

#define MS 1000000LL

static struct steps_view view(const struct steps *st, size_t i)
{
	struct steps_view v;

	assert_true(steps_get(st, i, &v));
	return v;
}

static void test_seal(void **state)
{
	struct steps *st = steps_alloc("test");

	(void)state;
	assert_int_equal(steps_add(st, "S#", 2, 100, 200), 0);
	assert_int_equal(steps_add(st, "S#", 1, 0, 100), 0);
	assert_int_equal(steps_add(st, "S#", 9, 150, 170), 0); /* nested in step 2: dropped */
	assert_int_equal(steps_add(st, "S#", 3, 200, 150), 0); /* end before start: empty */
	steps_seal(st);
	assert_int_equal(steps_count(st), 3);
	assert_int_equal(view(st, 0).number, 1);
	assert_int_equal(view(st, 1).number, 2);
	assert_int_equal(view(st, 2).number, 3);
	assert_int_equal(view(st, 2).end, 200);
	steps_free(st);
}

static void test_clip(void **state)
{
	struct steps *st = steps_alloc("test");

	(void)state;
	steps_add(st, "S#", 0, 0, 10 * MS);
	steps_add(st, "S#", 1, 10 * MS, 20 * MS);
	steps_seal(st);
	/* a wait of 4 ms across the boundary: 1 ms in step 0, 3 ms in step 1, counted in 1 */
	assert_int_equal(steps_interval(st, 0, 7, 1, GIL_KIND_TAKE, 0, 9 * MS, 4 * MS), 0);
	/* a hold of 25 ms over both and past the last */
	assert_int_equal(steps_interval(st, 0, 7, 2, GIL_KIND_HOLD, 0, -2 * MS, 25 * MS), 0);
	/* a forced release that begins in step 0 and ends in 1 */
	assert_int_equal(steps_interval(st, 0, 7, 1, GIL_KIND_DROP, GIL_REASON_FORCED,
					 10 * MS - 1000, 3000), 0);
	steps_finish(st);
	assert_int_equal(view(st, 0).ns[GIL_KIND_TAKE], 1 * MS);
	assert_int_equal(view(st, 1).ns[GIL_KIND_TAKE], 3 * MS);
	assert_int_equal(view(st, 0).ns[GIL_KIND_HOLD], 10 * MS);
	assert_int_equal(view(st, 1).ns[GIL_KIND_HOLD], 10 * MS);
	assert_int_equal(view(st, 0).ns[GIL_KIND_DROP], 1000);
	assert_int_equal(view(st, 1).ns[GIL_KIND_DROP], 2000);
	assert_int_equal(view(st, 0).forced, 1);
	assert_int_equal(view(st, 1).forced, 0);
	assert_int_equal(view(st, 0).threads, 2); /* tids 1 and 2 */
	steps_free(st);
}

static void test_pids(void **state)
{
	struct steps *st = steps_alloc("marks");

	(void)state;
	/* two processes' marks over the same time: each keeps its own */
	steps_add_for(st, 200, "step ", 0, 0, 10 * MS);
	steps_add_for(st, 100, "step ", 0, 0, 5 * MS);
	steps_add_for(st, 100, "step ", 1, 5 * MS, 10 * MS);
	steps_seal(st);
	assert_int_equal(steps_count(st), 3);
	assert_int_equal(view(st, 0).pid, 100);
	assert_int_equal(view(st, 2).pid, 200);
	steps_interval(st, 0, 100, 1, GIL_KIND_HOLD, 0, 4 * MS, 2 * MS);
	steps_interval(st, 1, 200, 9, GIL_KIND_HOLD, 0, 0, 7 * MS);
	steps_interval(st, 2, 300, 9, GIL_KIND_HOLD, 0, 0, 7 * MS); /* a process with no marks */
	steps_finish(st);
	assert_int_equal(view(st, 0).ns[GIL_KIND_HOLD], 1 * MS);
	assert_int_equal(view(st, 1).ns[GIL_KIND_HOLD], 1 * MS);
	assert_int_equal(view(st, 2).ns[GIL_KIND_HOLD], 7 * MS);
	steps_free(st);
}

/* @n steps of 100 ms whose threads waited @wait[i] ms; thread 2 holds through each wait. */
static struct steps *loop(const int64_t *wait, size_t n)
{
	struct steps *st = steps_alloc("loop");
	size_t i;

	for (i = 0; i < n; i++)
		steps_add(st, "S#", (int64_t)i, (int64_t)i * 100 * MS, (int64_t)(i + 1) * 100 * MS);
	steps_seal(st);
	for (i = 0; i < n; i++) {
		int64_t t = (int64_t)i * 100 * MS + 10 * MS;

		steps_interval(st, 0, 1, 1, GIL_KIND_TAKE, 0, t, wait[i] * MS);
		steps_interval(st, 0, 1, 2, GIL_KIND_HOLD, 0, t - MS, wait[i] * MS + MS);
		steps_blame(st, 0, 1, 2, 5, t, t + wait[i] * MS);
	}
	steps_finish(st);
	return st;
}

static void test_rule(void **state)
{
	static const int64_t flat[] = { 10, 10, 10, 10, 10 };
	static const int64_t bump[] = { 10, 10, 10, 10, 12, 10 };
	static const int64_t small[] = { 10, 10, 10, 10, 11 };
	static const int64_t four[] = { 1, 1, 1, 200 };
	static const int64_t noisy[] = { 8, 12, 9, 11, 10, 13, 7, 60 };
	uint64_t med, mad, thr;
	struct steps *st;
	size_t i;

	(void)state;
	/* MAD 0: the 1 ms floor keeps equal steps unflagged */
	st = loop(flat, 5);
	assert_true(steps_rule(st, &med, &mad, &thr));
	assert_int_equal(med, 10 * MS);
	assert_int_equal(mad, 0);
	assert_int_equal(thr, 11 * MS);
	for (i = 0; i < 5; i++)
		assert_false(view(st, i).flagged);
	steps_free(st);
	/* 2 ms over a flat median: flagged, the waiting thread and the holder named */
	st = loop(bump, 6);
	for (i = 0; i < 6; i++)
		assert_int_equal(view(st, i).flagged, i == 4);
	assert_int_equal(view(st, 4).waiting_tid, 1);
	assert_int_equal(view(st, 4).holder_tid, 2);
	assert_int_equal(view(st, 4).holder_ns, 12 * MS);
	steps_free(st);
	/* exactly at the floor: not above it */
	st = loop(small, 5);
	assert_false(view(st, 4).flagged);
	steps_free(st);
	/* fewer than 5 steps: no rule */
	st = loop(four, 4);
	assert_false(steps_rule(st, &med, &mad, &thr));
	assert_false(view(st, 3).flagged);
	steps_free(st);
	/* spread: median 10.5 ms, MAD 2 ms: threshold 10.5 + 8.9 ms, only the 60 ms step over */
	st = loop(noisy, 8);
	assert_true(steps_rule(st, &med, &mad, &thr));
	assert_int_equal(med, 10500000);
	assert_int_equal(mad, 2 * MS);
	for (i = 0; i < 8; i++)
		assert_int_equal(view(st, i).flagged, i == 7);
	steps_free(st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_seal),
		cmocka_unit_test(test_clip),
		cmocka_unit_test(test_pids),
		cmocka_unit_test(test_rule),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
