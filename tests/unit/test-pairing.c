// SPDX-License-Identifier: LGPL-2.1-or-later
/* The pairing state machine on synthetic event sequences, every edge case of issue 2. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "record/pairing.h"
#include "record/sink.h"

#define MAXIV 64
#define T0 1000 /* recording start */

static struct gil_interval got[MAXIV];
static int nr_got;

static int collect(void *ctx, const struct gil_interval *iv)
{
	(void)ctx;
	assert_true(nr_got < MAXIV);
	got[nr_got++] = *iv;
	return 0;
}

static struct gil_pairing *fresh(void)
{
	nr_got = 0;
	memset(got, 0, sizeof(got));
	return gil_pairing_alloc(T0, collect, NULL);
}

static void expect(int i, int32_t tid, int kind, uint64_t start, uint64_t dur, uint32_t flags)
{
	assert_true(i < nr_got);
	assert_int_equal(got[i].tid, tid);
	assert_int_equal(got[i].kind, kind);
	assert_int_equal(got[i].start, start);
	assert_int_equal(got[i].dur, dur);
	assert_int_equal(got[i].flags, flags);
}

static void ev(struct gil_pairing *p, int32_t tid, enum gil_ev e, uint64_t ts)
{
	assert_true(gil_pairing_event(p, tid, e, ts) >= 0);
}

static void test_normal_cycle(void **state)
{
	struct gil_pairing *p = fresh();

	assert_int_equal(gil_pairing_event(p, 7, GIL_EV_TAKE_ENTRY, 2000), 1); /* new thread */
	assert_int_equal(gil_pairing_event(p, 7, GIL_EV_TAKE_RETURN, 2100), 0);
	ev(p, 7, GIL_EV_DROP_ENTRY, 2600);
	ev(p, 7, GIL_EV_DROP_RETURN, 2610);
	assert_int_equal(nr_got, 3);
	expect(0, 7, GIL_KIND_TAKE, 2000, 100, 0);
	expect(1, 7, GIL_KIND_HOLD, 2100, 500, 0);
	expect(2, 7, GIL_KIND_DROP, 2600, 10, 0);
	assert_int_equal(gil_pairing_finish(p, 9000), 0);
	assert_int_equal(nr_got, 3); /* idle at the end: nothing open */
	gil_pairing_free(p);
}

static void test_attach_mid_hold(void **state)
{
	struct gil_pairing *p = fresh();

	ev(p, 1, GIL_EV_DROP_ENTRY, 1500); /* was holding when we attached */
	ev(p, 1, GIL_EV_DROP_RETURN, 1520);
	expect(0, 1, GIL_KIND_HOLD, T0, 500, GIL_F_BEGIN_UNKNOWN);
	expect(1, 1, GIL_KIND_DROP, 1500, 20, 0);
	gil_pairing_free(p);
}

static void test_attach_mid_take_and_mid_drop(void **state)
{
	struct gil_pairing *p = fresh();

	ev(p, 1, GIL_EV_TAKE_RETURN, 1300); /* was waiting */
	ev(p, 2, GIL_EV_DROP_RETURN, 1400); /* was releasing */
	expect(0, 1, GIL_KIND_TAKE, T0, 300, GIL_F_BEGIN_UNKNOWN);
	expect(1, 2, GIL_KIND_DROP, T0, 400, GIL_F_BEGIN_UNKNOWN);
	ev(p, 1, GIL_EV_DROP_ENTRY, 1500);
	expect(2, 1, GIL_KIND_HOLD, 1300, 200, 0);
	gil_pairing_free(p);
}

static void test_take_without_return_thread_exit(void **state)
{
	struct gil_pairing *p = fresh();

	/* Finalization: a daemon thread enters take_gil and exits inside it. */
	ev(p, 3, GIL_EV_TAKE_ENTRY, 5000);
	assert_int_equal(gil_pairing_exit(p, 3, 5600), 0);
	expect(0, 3, GIL_KIND_TAKE, 5000, 600, GIL_F_TRUNCATED);
	assert_int_equal(gil_pairing_finish(p, 9000), 0);
	assert_int_equal(nr_got, 1); /* exited threads are not closed twice */
	assert_int_equal(gil_pairing_exit(p, 3, 5700), 0);
	assert_int_equal(nr_got, 1);
	gil_pairing_free(p);
}

static void test_open_at_end_is_truncated(void **state)
{
	struct gil_pairing *p = fresh();

	ev(p, 1, GIL_EV_TAKE_ENTRY, 2000);
	ev(p, 1, GIL_EV_TAKE_RETURN, 2100); /* holds until the end */
	ev(p, 2, GIL_EV_TAKE_ENTRY, 2200); /* waits until the end */
	ev(p, 3, GIL_EV_TAKE_ENTRY, 2300);
	ev(p, 3, GIL_EV_TAKE_RETURN, 2310);
	ev(p, 3, GIL_EV_DROP_ENTRY, 2400); /* releasing at the end */
	assert_int_equal(gil_pairing_finish(p, 3000), 0);
	expect(3, 1, GIL_KIND_HOLD, 2100, 900, GIL_F_TRUNCATED);
	expect(4, 2, GIL_KIND_TAKE, 2200, 800, GIL_F_TRUNCATED);
	expect(5, 3, GIL_KIND_DROP, 2400, 600, GIL_F_TRUNCATED);
	gil_pairing_free(p);
}

static void test_entry_without_return_closed_at_next_event(void **state)
{
	struct gil_pairing *p = fresh();

	/* The drop's return was never reported (more than 64 pending returns, or lost). */
	ev(p, 1, GIL_EV_TAKE_ENTRY, 2000);
	ev(p, 1, GIL_EV_TAKE_RETURN, 2010);
	ev(p, 1, GIL_EV_DROP_ENTRY, 2100);
	ev(p, 1, GIL_EV_TAKE_ENTRY, 2300);
	expect(2, 1, GIL_KIND_DROP, 2100, 200, GIL_F_TRUNCATED | GIL_F_RESYNC);
	ev(p, 1, GIL_EV_TAKE_RETURN, 2350);
	expect(3, 1, GIL_KIND_TAKE, 2300, 50, 0);
	gil_pairing_free(p);
}

static void test_missing_drop(void **state)
{
	struct gil_pairing *p = fresh();

	/* Hold, then a take: the drop in between was not seen (an unprobed inlined copy). */
	ev(p, 1, GIL_EV_TAKE_ENTRY, 2000);
	ev(p, 1, GIL_EV_TAKE_RETURN, 2010);
	ev(p, 1, GIL_EV_TAKE_ENTRY, 2500);
	expect(1, 1, GIL_KIND_HOLD, 2010, 490, GIL_F_TRUNCATED | GIL_F_RESYNC);
	gil_pairing_free(p);
}

static void test_stray_and_duplicate(void **state)
{
	struct gil_pairing *p = fresh();

	ev(p, 1, GIL_EV_TAKE_ENTRY, 2000);
	ev(p, 1, GIL_EV_TAKE_RETURN, 2010);
	ev(p, 1, GIL_EV_DROP_ENTRY, 2020);
	ev(p, 1, GIL_EV_DROP_RETURN, 2030);
	ev(p, 1, GIL_EV_DROP_RETURN, 2040); /* stray: nothing open, nothing emitted */
	assert_int_equal(nr_got, 3);
	ev(p, 1, GIL_EV_TAKE_RETURN, 2050); /* return without entry: hold starts, flagged */
	ev(p, 1, GIL_EV_TAKE_RETURN, 2060); /* a second one: the hold goes on */
	ev(p, 1, GIL_EV_DROP_ENTRY, 2100);
	expect(3, 1, GIL_KIND_HOLD, 2050, 50, GIL_F_RESYNC);
	ev(p, 1, GIL_EV_DROP_ENTRY, 2200); /* a second drop entry: the first is cut */
	expect(4, 1, GIL_KIND_DROP, 2100, 100, GIL_F_TRUNCATED | GIL_F_RESYNC);
	ev(p, 1, GIL_EV_DROP_RETURN, 2210);
	expect(5, 1, GIL_KIND_DROP, 2200, 10, GIL_F_RESYNC);
	gil_pairing_free(p);
}

static void test_lost_flags_open_and_next(void **state)
{
	struct gil_pairing *p = fresh();

	ev(p, 1, GIL_EV_TAKE_ENTRY, 2000);
	ev(p, 1, GIL_EV_TAKE_RETURN, 2010); /* thread 1 holds */
	ev(p, 2, GIL_EV_TAKE_ENTRY, 2020);
	ev(p, 2, GIL_EV_TAKE_RETURN, 2030);
	ev(p, 2, GIL_EV_DROP_ENTRY, 2040);
	ev(p, 2, GIL_EV_DROP_RETURN, 2050); /* thread 2 idle */
	gil_pairing_lost(p);
	ev(p, 1, GIL_EV_DROP_ENTRY, 3000);
	expect(4, 1, GIL_KIND_HOLD, 2010, 990, GIL_F_LOST);
	ev(p, 2, GIL_EV_TAKE_ENTRY, 3100);
	ev(p, 2, GIL_EV_TAKE_RETURN, 3200);
	expect(5, 2, GIL_KIND_TAKE, 3100, 100, GIL_F_LOST);
	ev(p, 2, GIL_EV_DROP_ENTRY, 3300);
	expect(6, 2, GIL_KIND_HOLD, 3200, 100, 0); /* only the first interval after the loss */
	gil_pairing_free(p);
}

static void test_time_going_backwards(void **state)
{
	struct gil_pairing *p = fresh();

	ev(p, 1, GIL_EV_TAKE_ENTRY, 2000);
	ev(p, 1, GIL_EV_TAKE_RETURN, 1990); /* cross-CPU skew */
	expect(0, 1, GIL_KIND_TAKE, 2000, 0, GIL_F_RESYNC);
	ev(p, 2, GIL_EV_TAKE_ENTRY, 500); /* before the recording began: clamped */
	ev(p, 2, GIL_EV_TAKE_RETURN, 1500);
	expect(1, 2, GIL_KIND_TAKE, T0, 500, 0);
	gil_pairing_free(p);
}

/* Pairing into the summary sink (sink-summary.c), as the recorder joins them. */
static void *summary_of(struct gil_pairing **p)
{
	struct gil_sink_target tgt = { .pid = 1 };
	void *s = gil_sink_summary.open(&tgt);

	assert_non_null(s);
	*p = gil_pairing_alloc(T0, gil_sink_summary.interval, s);
	return s;
}

static const struct gil_thread_summary *summary_end(void *s, size_t *n)
{
	struct json_object *footer = json_object_new_object();

	assert_int_equal(gil_sink_summary.end(s, footer), 0);
	json_object_put(footer);
	return gil_sink_summary_threads(s, n);
}

static void test_stats_and_many_threads(void **state)
{
	const struct gil_thread_summary *st;
	struct gil_pairing *p;
	void *s = summary_of(&p);
	uint64_t takes;
	size_t n, i;
	int32_t tid;

	ev(p, 1, GIL_EV_TAKE_ENTRY, 2000);
	ev(p, 1, GIL_EV_TAKE_RETURN, 2100);
	ev(p, 1, GIL_EV_DROP_ENTRY, 2600);
	ev(p, 1, GIL_EV_DROP_RETURN, 2610);
	st = summary_end(s, &n);
	assert_int_equal(n, 1);
	assert_int_equal(st[0].tid, 1);
	assert_int_equal(st[0].ns[GIL_KIND_TAKE], 100);
	assert_int_equal(st[0].ns[GIL_KIND_HOLD], 500);
	assert_int_equal(st[0].ns[GIL_KIND_DROP], 10);
	assert_int_equal(st[0].count[GIL_KIND_HOLD], 1);
	assert_int_equal(st[0].wall_ns, 610);
	gil_pairing_free(p);
	gil_sink_summary.close(s);

	/* Thousands of short-lived threads: memory stays bounded, totals are kept. */
	s = summary_of(&p);
	for (tid = 100; tid < 100 + 3 * GIL_PAIRING_MAX_THREADS; tid++) {
		ev(p, tid, GIL_EV_TAKE_ENTRY, 2000);
		ev(p, tid, GIL_EV_TAKE_RETURN, 2001);
		assert_int_equal(gil_pairing_exit(p, tid, 2003), 0);
		assert_int_equal(gil_sink_summary.exit(s, tid, 2003), 0);
	}
	/* A tid reused after its thread exited is a new thread (its name is read again). */
	assert_int_equal(gil_pairing_event(p, 100 + 3 * GIL_PAIRING_MAX_THREADS - 1,
					   GIL_EV_TAKE_ENTRY, 3000), 1);
	assert_int_equal(gil_pairing_event(p, 100 + 3 * GIL_PAIRING_MAX_THREADS - 1,
					   GIL_EV_TAKE_RETURN, 3001), 0);
	st = summary_end(s, &n);
	/* the live ones, and one row of the exited threads folded away (tid -1), last */
	assert_true(n <= GIL_SUMMARY_MAX_THREADS + 1);
	assert_int_equal(st[n - 1].tid, -1);
	for (takes = 0, i = 0; i < n; i++)
		takes += st[i].count[GIL_KIND_TAKE];
	assert_int_equal(takes, 3 * GIL_PAIRING_MAX_THREADS + 1);
	assert_true(st[n - 1].count[GIL_KIND_TAKE] >= 2 * GIL_PAIRING_MAX_THREADS);
	assert_int_equal(st[n - 1].ns[GIL_KIND_HOLD], st[n - 1].count[GIL_KIND_HOLD] * 2);
	gil_pairing_free(p);
	gil_sink_summary.close(s);
}

static void eva(struct gil_pairing *p, int32_t tid, enum gil_ev e, uint64_t ts, uint32_t fn,
		uint8_t reason)
{
	assert_true(gil_pairing_event_attr(p, tid, e, ts, fn, reason) >= 0);
}

static void expect_attr(int i, uint32_t fn, uint8_t reason)
{
	assert_true(i < nr_got);
	assert_int_equal(got[i].fn, fn);
	assert_int_equal(got[i].reason, reason);
}

/* A wait names the function at its take_gil entry and the previous release's reason; a hold
 * and a release the function and reason at the drop_gil entry. */
static void test_attribution_cycle(void **state)
{
	struct gil_pairing *p = fresh();

	eva(p, 5, GIL_EV_TAKE_ENTRY, 2000, 7, 0); /* first wait: no release seen before */
	eva(p, 5, GIL_EV_TAKE_RETURN, 2100, 0, 0);
	eva(p, 5, GIL_EV_DROP_ENTRY, 2600, 8, GIL_REASON_FORCED);
	eva(p, 5, GIL_EV_DROP_RETURN, 2700, 0, 0);
	eva(p, 5, GIL_EV_TAKE_ENTRY, 2800, 8, 0); /* waits again after being forced off */
	eva(p, 5, GIL_EV_TAKE_RETURN, 2900, 0, 0);
	eva(p, 5, GIL_EV_DROP_ENTRY, 3000, 9, GIL_REASON_VOLUNTARY);
	eva(p, 5, GIL_EV_DROP_RETURN, 3010, 0, 0);
	assert_int_equal(nr_got, 6);
	expect(0, 5, GIL_KIND_TAKE, 2000, 100, 0);
	expect_attr(0, 7, GIL_REASON_UNKNOWN);
	expect_attr(1, 8, GIL_REASON_FORCED); /* hold ended by the forced drop in fn 8 */
	expect_attr(2, 8, GIL_REASON_FORCED);
	expect_attr(3, 8, GIL_REASON_FORCED); /* the wait after it: why the thread had let go */
	expect_attr(4, 9, GIL_REASON_VOLUNTARY);
	expect_attr(5, 9, GIL_REASON_VOLUNTARY);
	gil_pairing_free(p);
}

/* Edges that were not seen carry no function: never one borrowed from another event. */
static void test_attribution_edges(void **state)
{
	struct gil_pairing *p = fresh();

	/* attached mid-wait: the take has no entry, so no function */
	eva(p, 1, GIL_EV_TAKE_RETURN, 1500, 0, 0);
	expect(0, 1, GIL_KIND_TAKE, T0, 500, GIL_F_BEGIN_UNKNOWN);
	expect_attr(0, 0, 0);
	/* the hold began unseen but its end is a drop entry: that function */
	eva(p, 2, GIL_EV_DROP_ENTRY, 1600, 4, GIL_REASON_VOLUNTARY);
	expect(1, 2, GIL_KIND_HOLD, T0, 600, GIL_F_BEGIN_UNKNOWN);
	expect_attr(1, 4, GIL_REASON_VOLUNTARY);
	/* a hold closed by the end of the recording keeps the function it was taken in */
	eva(p, 3, GIL_EV_TAKE_ENTRY, 1700, 6, 0);
	eva(p, 3, GIL_EV_TAKE_RETURN, 1800, 0, 0);
	nr_got = 0;
	assert_int_equal(gil_pairing_finish(p, 5000), 0);
	/* thread 1 holds (entry unseen: fn 0), thread 2 releases, thread 3 holds in fn 6 */
	assert_int_equal(nr_got, 3);
	expect(0, 1, GIL_KIND_HOLD, 1500, 3500, GIL_F_TRUNCATED);
	expect_attr(0, 0, GIL_REASON_UNKNOWN);
	expect(1, 2, GIL_KIND_DROP, 1600, 3400, GIL_F_TRUNCATED);
	expect_attr(1, 4, GIL_REASON_VOLUNTARY);
	expect(2, 3, GIL_KIND_HOLD, 1800, 3200, GIL_F_TRUNCATED);
	expect_attr(2, 6, GIL_REASON_UNKNOWN);
	gil_pairing_free(p);
}

/* A reused tid starts with nothing remembered from the thread that had it. */
static void test_attribution_tid_reuse(void **state)
{
	struct gil_pairing *p = fresh();

	eva(p, 9, GIL_EV_DROP_ENTRY, 1100, 3, GIL_REASON_FORCED);
	eva(p, 9, GIL_EV_DROP_RETURN, 1200, 0, 0);
	assert_int_equal(gil_pairing_exit(p, 9, 1300), 0);
	nr_got = 0;
	eva(p, 9, GIL_EV_TAKE_ENTRY, 1400, 0, 0);
	eva(p, 9, GIL_EV_TAKE_RETURN, 1500, 0, 0);
	expect(0, 9, GIL_KIND_TAKE, 1400, 100, 0);
	expect_attr(0, 0, GIL_REASON_UNKNOWN);
	gil_pairing_free(p);
}

/*
 * Exit sites after inlined copies (issue 4): code there may be a merge point that also runs
 * without a release, so an exit closes only a drop (or a wait) that is open.
 */
/* The open intervals of kind @kind among @o's @n, the first into *@first. */
static size_t of_kind(const struct gil_open *o, size_t n, uint8_t kind, struct gil_open *first)
{
	size_t i, k = 0;

	for (i = 0; i < n; i++)
		if (o[i].kind == kind && !k++)
			*first = o[i];
	return k;
}

/*
 * The sinks' view of each round: the intervals open now (holds for the watchdog, waits and
 * releases too for the live view) and the threads waiting, and each hold's waiters at its
 * end, through waits that end, a thread that exits waiting and a missed return; and the
 * count past @max, so the caller can ask again with room.
 */
static void test_open_holds_and_waiters(void **state)
{
	struct gil_pairing *p = fresh();
	struct gil_open o[4], h;
	uint32_t waiting = 99;
	size_t n;

	assert_int_equal(gil_pairing_open(p, o, 4, &waiting), 0);
	assert_int_equal(waiting, 0);
	ev(p, 1, GIL_EV_TAKE_ENTRY, 2000);
	ev(p, 1, GIL_EV_TAKE_RETURN, 2010);
	ev(p, 2, GIL_EV_TAKE_ENTRY, 2100); /* waits for 1 */
	ev(p, 3, GIL_EV_TAKE_ENTRY, 2200); /* and so does 3 */
	n = gil_pairing_open(p, o, 4, &waiting);
	assert_int_equal(n, 3);
	assert_int_equal(of_kind(o, n, GIL_KIND_HOLD, &h), 1);
	assert_int_equal(h.tid, 1);
	assert_int_equal(h.since, 2010);
	assert_int_equal(of_kind(o, n, GIL_KIND_TAKE, &h), 2);
	assert_int_equal(h.tid, 2);
	assert_int_equal(h.since, 2100);
	assert_int_equal(waiting, 2);
	assert_int_equal(gil_pairing_open(p, o, 1, &waiting), 3); /* no room: says how many */
	ev(p, 1, GIL_EV_DROP_ENTRY, 3000); /* 1's hold ends with 2 waiting */
	expect(1, 1, GIL_KIND_HOLD, 2010, 990, 0);
	assert_int_equal(got[1].waiters, 2);
	assert_int_equal(got[0].waiters, 0); /* only holds say */
	n = gil_pairing_open(p, o, 4, &waiting);
	assert_int_equal(of_kind(o, n, GIL_KIND_DROP, &h), 1);
	assert_int_equal(h.tid, 1);
	assert_int_equal(h.since, 3000);
	ev(p, 1, GIL_EV_DROP_RETURN, 3010);
	n = gil_pairing_open(p, o, 4, &waiting);
	assert_int_equal(of_kind(o, n, GIL_KIND_HOLD, &h), 0);
	assert_int_equal(n, 2);
	assert_int_equal(waiting, 2);
	ev(p, 2, GIL_EV_TAKE_RETURN, 3020);
	assert_int_equal(gil_pairing_exit(p, 3, 3030), 0); /* 3 exits waiting */
	n = gil_pairing_open(p, o, 4, &waiting);
	assert_int_equal(n, 1);
	assert_int_equal(of_kind(o, n, GIL_KIND_HOLD, &h), 1);
	assert_int_equal(h.tid, 2);
	assert_int_equal(waiting, 0);
	/* 2 enters take_gil again without a drop seen: its hold is closed, and it waits */
	ev(p, 2, GIL_EV_TAKE_ENTRY, 3500);
	n = gil_pairing_open(p, o, 4, &waiting);
	assert_int_equal(of_kind(o, n, GIL_KIND_HOLD, &h), 0);
	assert_int_equal(of_kind(o, n, GIL_KIND_TAKE, &h), 1);
	assert_int_equal(waiting, 1);
	ev(p, 2, GIL_EV_TAKE_RETURN, 3600);
	assert_int_equal(gil_pairing_finish(p, 4000), 0);
	assert_int_equal(gil_pairing_open(p, o, 4, &waiting), 0);
	assert_int_equal(waiting, 0);
	gil_pairing_free(p);
	(void)state;
}

static void gev(struct gil_pairing *p, int32_t tid, enum gil_ev e, uint64_t ts, uint32_t gil,
		uint32_t interp)
{
	assert_true(gil_pairing_event_gil(p, tid, e, ts, 0, 0, gil, interp, 0) >= 0);
}

static void nev(struct gil_pairing *p, int32_t tid, enum gil_ev e, uint64_t ts, uint32_t native)
{
	assert_true(gil_pairing_event_gil(p, tid, e, ts, 0, 0, 0, 0, native) >= 0);
}

/*
 * Native callers (issue 26): a wait and the hold it begins carry the take's caller, a release
 * the drop's; a take whose entry was not seen carries none, nor does a reused tid's first.
 */
static void test_natives(void **state)
{
	struct gil_pairing *p = fresh();

	nev(p, 5, GIL_EV_TAKE_ENTRY, 2000, 3); /* PyGILState_Ensure in native 3 */
	nev(p, 5, GIL_EV_TAKE_RETURN, 2100, 0);
	nev(p, 5, GIL_EV_DROP_ENTRY, 2600, 4); /* PyGILState_Release in native 4 */
	nev(p, 5, GIL_EV_DROP_RETURN, 2700, 0);
	nev(p, 5, GIL_EV_TAKE_ENTRY, 2800, GIL_NATIVE_OWN); /* the eval loop's */
	nev(p, 5, GIL_EV_TAKE_RETURN, 2900, 0);
	nev(p, 5, GIL_EV_DROP_ENTRY, 3000, GIL_NATIVE_OWN);
	nev(p, 6, GIL_EV_TAKE_RETURN, 3100, 0); /* attached mid-wait: no take seen */
	nev(p, 6, GIL_EV_DROP_ENTRY, 3200, 9);
	assert_int_equal(nr_got, 7);
	assert_int_equal(got[0].native, 3); /* wait */
	assert_int_equal(got[1].native, 3); /* hold: who took it */
	assert_int_equal(got[2].native, 4); /* release: who released it */
	assert_int_equal(got[3].native, GIL_NATIVE_OWN);
	assert_int_equal(got[4].native, GIL_NATIVE_OWN);
	assert_int_equal(got[5].tid, 6);
	assert_int_equal(got[5].native, 0);
	assert_int_equal(got[6].native, 0); /* its hold: the take was not seen */
	nev(p, 5, GIL_EV_DROP_RETURN, 3300, 0);
	assert_int_equal(nr_got, 8);
	assert_int_equal(got[7].native, GIL_NATIVE_OWN); /* the release the eval loop made */
	nr_got = 0;
	assert_int_equal(gil_pairing_exit(p, 5, 3400), 0);
	nev(p, 5, GIL_EV_TAKE_RETURN, 3500, 0); /* a new thread with the same tid */
	nev(p, 5, GIL_EV_DROP_ENTRY, 3600, 0);
	assert_int_equal(nr_got, 1);
	assert_int_equal(got[0].kind, GIL_KIND_HOLD);
	assert_int_equal(got[0].native, 0); /* not the take of the thread that had the tid */
	gil_pairing_free(p);
	(void)state;
}

/*
 * One lane per GIL (3.12+): threads of two GILs hold at the same time and each GIL counts its
 * own waiters; a thread moving from the main GIL to a subinterpreter's is paired in each;
 * events that did not read which GIL go to the thread's last; a legacy subinterpreter's
 * thread (interp 3 on the main GIL) says its interpreter; a thread whose first take read
 * nothing is moved, open hold and all, to the GIL its next event names; a hold whose release
 * was not seen ends when the thread's next event is of another GIL.
 */
static void test_gil_lanes(void **state)
{
	struct gil_pairing *p = fresh();
	struct gil_open o[8];
	uint32_t waiting;
	size_t n, i, holds;

	gev(p, 1, GIL_EV_TAKE_ENTRY, 2000, 0, 0);
	gev(p, 1, GIL_EV_TAKE_RETURN, 2010, GIL_ID_UNKNOWN, GIL_ID_UNKNOWN);
	gev(p, 2, GIL_EV_TAKE_ENTRY, 2000, 1, 1);
	gev(p, 2, GIL_EV_TAKE_RETURN, 2020, GIL_ID_UNKNOWN, GIL_ID_UNKNOWN);
	gev(p, 3, GIL_EV_TAKE_ENTRY, 2100, 1, 1); /* waits for GIL 1, not for GIL 0 */
	n = gil_pairing_open(p, o, 8, &waiting);
	for (i = holds = 0; i < n; i++)
		holds += o[i].kind == GIL_KIND_HOLD;
	assert_int_equal(holds, 2); /* two GILs held at once */
	assert_int_equal(waiting, 1);
	gev(p, 2, GIL_EV_DROP_ENTRY, 2500, 1, 1);
	gev(p, 1, GIL_EV_DROP_ENTRY, 2600, 0, 0);
	/* 2's hold ended with 3 waiting for GIL 1; 1's with nobody waiting for GIL 0 */
	for (i = 0; i < (size_t)nr_got; i++) {
		if (got[i].kind != GIL_KIND_HOLD)
			continue;
		assert_int_equal(got[i].waiters, got[i].tid == 2 ? 1 : 0);
		assert_int_equal(got[i].gil, got[i].tid == 2 ? 1 : 0);
		assert_int_equal(got[i].interp, got[i].gil);
	}
	gev(p, 2, GIL_EV_DROP_RETURN, 2510, GIL_ID_UNKNOWN, GIL_ID_UNKNOWN);
	gev(p, 1, GIL_EV_DROP_RETURN, 2610, GIL_ID_UNKNOWN, GIL_ID_UNKNOWN);
	/* 1 enters subinterpreter 2 (own GIL): a lane of its own there */
	nr_got = 0;
	gev(p, 1, GIL_EV_TAKE_ENTRY, 2700, 2, 2);
	gev(p, 1, GIL_EV_TAKE_RETURN, 2710, GIL_ID_UNKNOWN, GIL_ID_UNKNOWN);
	gev(p, 1, GIL_EV_DROP_ENTRY, 2800, GIL_ID_UNKNOWN, GIL_ID_UNKNOWN); /* not read: its last */
	assert_int_equal(nr_got, 2);
	expect(0, 1, GIL_KIND_TAKE, 2700, 10, 0);
	expect(1, 1, GIL_KIND_HOLD, 2710, 90, 0);
	assert_int_equal(got[1].gil, 2);
	assert_int_equal(got[1].interp, 2);
	gev(p, 1, GIL_EV_DROP_RETURN, 2810, GIL_ID_UNKNOWN, GIL_ID_UNKNOWN);
	/* a legacy subinterpreter (3) shares the main GIL */
	nr_got = 0;
	gev(p, 4, GIL_EV_TAKE_ENTRY, 2900, 0, 3);
	gev(p, 4, GIL_EV_TAKE_RETURN, 2910, GIL_ID_UNKNOWN, GIL_ID_UNKNOWN);
	assert_int_equal(got[0].gil, 0);
	assert_int_equal(got[0].interp, 3);
	gev(p, 4, GIL_EV_DROP_ENTRY, 2950, 0, 3);
	gev(p, 4, GIL_EV_DROP_RETURN, 2960, 0, 3);
	/* thread 5's first take read nothing: guessed main GIL, moved at its first drop's */
	nr_got = 0;
	gev(p, 5, GIL_EV_TAKE_ENTRY, 3000, GIL_ID_UNKNOWN, GIL_ID_UNKNOWN);
	gev(p, 5, GIL_EV_TAKE_RETURN, 3010, GIL_ID_UNKNOWN, GIL_ID_UNKNOWN);
	gev(p, 5, GIL_EV_DROP_ENTRY, 3100, 2, 2);
	assert_int_equal(nr_got, 2);
	expect(1, 5, GIL_KIND_HOLD, 3010, 90, 0); /* one hold, whole, on GIL 2 */
	assert_int_equal(got[1].gil, 2);
	gev(p, 5, GIL_EV_DROP_RETURN, 3110, GIL_ID_UNKNOWN, GIL_ID_UNKNOWN);
	/* 5 takes the main GIL, then releases GIL 2 where it is: the main GIL's release was not
	 * seen, and its hold ends there, flagged */
	nr_got = 0;
	gev(p, 5, GIL_EV_TAKE_ENTRY, 3200, 0, 0);
	gev(p, 5, GIL_EV_TAKE_RETURN, 3210, GIL_ID_UNKNOWN, GIL_ID_UNKNOWN);
	assert_int_equal(gil_pairing_not_seen(p), 0);
	gev(p, 5, GIL_EV_DROP_ENTRY, 3290, 2, 2);
	expect(1, 5, GIL_KIND_HOLD, 3210, 80, GIL_F_TRUNCATED | GIL_F_RESYNC);
	assert_int_equal(got[1].gil, 0);
	assert_int_equal(gil_pairing_not_seen(p), 1);
	gev(p, 5, GIL_EV_DROP_RETURN, 3295, GIL_ID_UNKNOWN, GIL_ID_UNKNOWN);
	/* an exit closes what the thread has open under every GIL */
	nr_got = 0;
	gev(p, 6, GIL_EV_TAKE_ENTRY, 3200, 0, 0);
	gev(p, 6, GIL_EV_TAKE_RETURN, 3210, GIL_ID_UNKNOWN, GIL_ID_UNKNOWN);
	gev(p, 7, GIL_EV_TAKE_ENTRY, 3220, 1, 1);
	assert_int_equal(gil_pairing_exit(p, 6, 3300), 0);
	assert_int_equal(gil_pairing_finish(p, 4000), 0);
	assert_int_equal(gil_pairing_open(p, o, 8, &waiting), 0);
	assert_int_equal(waiting, 0);
	gil_pairing_free(p);
	(void)state;
}

/*
 * The metrics sink: per-thread and process counts by kind and reason, the bound of live
 * threads (the rest summed into the shared row), exited threads folded into it, the held
 * ratio of the last second with a hold still open, and nothing at all when metrics are off.
 */
static void test_metrics_sink(void **state)
{
	struct gil_options opts = { .metrics = true, .alert_hold_ns = 500 };
	struct gil_sink_target tgt = { .pid = 1, .comm = "python3", .opts = &opts };
	struct gil_interval iv = { 0 };
	struct gil_open open = { .tid = 5, .kind = GIL_KIND_HOLD, .since = 2000000000ull };
	struct gil_metrics *m = gil_sink_metrics.open(&tgt);
	int32_t tid;

	assert_non_null(m);
	for (tid = 1; tid <= GIL_METRICS_MAX_THREADS + 6; tid++) {
		iv = (struct gil_interval){ .tid = tid, .kind = GIL_KIND_HOLD, .start = 1000,
					    .dur = 600 };
		assert_int_equal(gil_sink_metrics.interval(m, &iv), 0);
		iv = (struct gil_interval){ .tid = tid, .kind = GIL_KIND_DROP, .start = 1600,
					    .dur = 10, .reason = tid % 2 ? GIL_REASON_FORCED
								     : GIL_REASON_VOLUNTARY };
		assert_int_equal(gil_sink_metrics.interval(m, &iv), 0);
	}
	assert_int_equal(m->nr, GIL_METRICS_MAX_THREADS);
	assert_int_equal(m->other.c.count[GIL_KIND_HOLD], 6);
	assert_int_equal(m->v[0].c.ns[GIL_KIND_HOLD], 600);
	assert_int_equal(m->v[0].c.releases[GIL_REASON_FORCED], 1);
	assert_int_equal(m->v[1].c.releases[GIL_REASON_VOLUNTARY], 1);
	assert_int_equal(m->v[0].c.long_holds, 1);
	assert_int_equal(m->total.count[GIL_KIND_DROP], GIL_METRICS_MAX_THREADS + 6);
	assert_int_equal(m->total.releases[GIL_REASON_FORCED], (GIL_METRICS_MAX_THREADS + 6) / 2);
	/* thread 1 exits: its counts go to the shared row, its slot to a live thread */
	assert_int_equal(gil_sink_metrics.exit(m, 1, 3000), 0);
	assert_int_equal(m->nr, GIL_METRICS_MAX_THREADS - 1);
	assert_int_equal(m->other.c.count[GIL_KIND_HOLD], 7);
	assert_int_equal(m->other.c.releases[GIL_REASON_FORCED], 4);
	/* the held ratio: 0.6 s of holds ended and one open from 2 s; ticks at 1.5 s and 2.5 s */
	m->total.ns[GIL_KIND_HOLD] = 600000000ull;
	assert_int_equal(gil_sink_metrics.tick(m, 1500000000ull, NULL, 0, 0), 0);
	assert_int_equal(gil_sink_metrics.tick(m, 2500000000ull, &open, 1, 3), 0);
	assert_int_equal(m->waiting, 3);
	assert_true(m->held_ratio > 0.499 && m->held_ratio < 0.501);
	gil_sink_metrics.close(m);

	opts.metrics = false;
	m = gil_sink_metrics.open(&tgt);
	assert_int_equal(gil_sink_metrics.interval(m, &iv), 0);
	assert_int_equal(m->nr + m->total.count[GIL_KIND_DROP], 0);
	gil_sink_metrics.close(m);
	(void)state;
}

/* One interval for the live sink. */
static void live_iv(void *l, int32_t tid, uint8_t kind, uint64_t start, uint64_t dur,
		    uint8_t reason)
{
	struct gil_interval iv = { .tid = tid, .kind = kind, .start = start, .dur = dur,
				   .reason = reason };

	assert_int_equal(gil_sink_live.interval(l, &iv), 0);
}

/* Within 1/32: the live sink's percentiles come from a histogram. */
static void assert_near(uint64_t v, uint64_t want)
{
	assert_true(v >= want - want / 32 && v <= want + want / 32);
}

/*
 * The live sink: each second's figures, exact, from intervals clipped to it and the ones still
 * open at its end (a wait that spans two seconds counted in both, once it ended and while
 * open); p99 of waits, with the open one; forced releases and takes where they ended; a thread
 * shown in the second it exits and gone after; nothing before the first second is complete;
 * and nothing at all when the view is off.
 */
static void test_live_sink(void **state)
{
	const uint64_t S = 1000000000ull, L0 = 5 * S; /* the recording starts at 5 s */
	struct gil_options opts = { .live = true };
	struct gil_sink_target tgt = { .pid = 7, .comm = "python3", .opts = &opts, .origin = L0,
				       .since = L0 };
	struct gil_open open = { .tid = 1, .kind = GIL_KIND_TAKE, .since = L0 + 600000100 };
	struct gil_live_process pr;
	void *l = gil_sink_live.open(&tgt);
	uint64_t second = 99;

	assert_non_null(l);
	assert_int_equal(gil_sink_live.thread(l, 1, "main", L0), 0);
	live_iv(l, 1, GIL_KIND_HOLD, L0, 600000000, 0);
	live_iv(l, 1, GIL_KIND_DROP, L0 + 600000000, 100, GIL_REASON_FORCED);
	live_iv(l, 2, GIL_KIND_HOLD, L0 + 700000000, 100000000, 0);
	assert_int_equal(gil_sink_live.exit(l, 2, L0 + 900000000), 0);
	assert_int_equal(gil_sink_live.lost(l, 0, 3, L0 + 500), 0);
	assert_int_equal(gil_sink_live.tick(l, L0 + 900000000, &open, 1, 1), 0);
	assert_int_equal(gil_sink_live_get(l, &second, &pr), 0); /* no second complete yet */
	/* second 0 ends; thread 1's wait is still open */
	assert_int_equal(gil_sink_live.tick(l, L0 + S + 50000000, &open, 1, 1), 0);
	assert_int_equal(gil_sink_live_get(l, &second, &pr), 1);
	assert_int_equal(second, 0);
	assert_int_equal(pr.pid, 7);
	assert_int_equal(pr.nr_threads, 2);
	assert_int_equal(pr.held_ns, 700000000);
	assert_int_equal(pr.wait_ns, 399999900);
	assert_int_equal(pr.lost, 3);
	assert_int_equal(pr.threads[0].tid, 1);
	assert_string_equal(pr.threads[0].name, "main");
	assert_int_equal(pr.threads[0].ns[GIL_KIND_HOLD], 600000000);
	assert_int_equal(pr.threads[0].ns[GIL_KIND_DROP], 100);
	assert_int_equal(pr.threads[0].ns[GIL_KIND_TAKE], 399999900);
	assert_int_equal(pr.threads[0].forced, 1);
	assert_int_equal(pr.threads[0].takes, 0);
	assert_near(pr.threads[0].p99_wait_ns, 399999900); /* the open wait */
	assert_false(pr.threads[0].exited);
	assert_int_equal(pr.threads[1].tid, 2);
	assert_true(pr.threads[1].exited);
	assert_int_equal(pr.threads[1].ns[GIL_KIND_HOLD], 100000000);
	free(pr.threads);
	/* the wait ends in second 1 and a hold opens: second 1 has the rest of it */
	live_iv(l, 1, GIL_KIND_TAKE, L0 + 600000100, S + 100000000 - 100, 0);
	open = (struct gil_open){ .tid = 1, .kind = GIL_KIND_HOLD, .since = L0 + S + 700000000 };
	assert_int_equal(gil_sink_live.tick(l, L0 + 2 * S + 1, &open, 1, 0), 0);
	assert_int_equal(gil_sink_live_get(l, &second, &pr), 1);
	assert_int_equal(second, 1);
	assert_int_equal(pr.nr_threads, 1); /* thread 2 exited in second 0 */
	assert_int_equal(pr.threads[0].ns[GIL_KIND_TAKE], 700000000);
	assert_int_equal(pr.threads[0].ns[GIL_KIND_HOLD], 300000000);
	assert_int_equal(pr.threads[0].takes, 1);
	assert_int_equal(pr.threads[0].forced, 0);
	assert_near(pr.threads[0].p99_wait_ns, S + 100000000 - 100);
	assert_int_equal(pr.threads[0].total_ns[GIL_KIND_HOLD], 600000000 + 300000001);
	assert_int_equal(pr.lost, 0);
	assert_int_equal(pr.total_lost, 3);
	free(pr.threads);
	/* thread 1 exits in second 2 and a new thread gets its tid: a row of its own, from zero */
	assert_int_equal(gil_sink_live.exit(l, 1, L0 + 2 * S + 100), 0);
	live_iv(l, 1, GIL_KIND_HOLD, L0 + 2 * S + 500000000, 200000000, 0);
	assert_int_equal(gil_sink_live.tick(l, L0 + 3 * S + 1, NULL, 0, 0), 0);
	assert_int_equal(gil_sink_live_get(l, &second, &pr), 1);
	assert_int_equal(second, 2);
	assert_int_equal(pr.nr_threads, 1);
	assert_false(pr.threads[0].exited);
	assert_int_equal(pr.threads[0].ns[GIL_KIND_HOLD], 200000000);
	assert_int_equal(pr.threads[0].total_ns[GIL_KIND_HOLD], 200000000);
	free(pr.threads);
	gil_sink_live.close(l);
	/* off: nothing kept */
	opts.live = false;
	l = gil_sink_live.open(&tgt);
	live_iv(l, 1, GIL_KIND_HOLD, L0, S, 0);
	assert_int_equal(gil_sink_live.tick(l, L0 + 3 * S, NULL, 0, 0), 0);
	assert_int_equal(gil_sink_live_get(l, &second, &pr), 0);
	gil_sink_live.close(l);
	(void)state;
}

static void test_exit_sites(void **state)
{
	struct gil_pairing *p = fresh();

	ev(p, 1, GIL_EV_TAKE_ENTRY, 2000);
	ev(p, 1, GIL_EV_TAKE_RETURN, 2100);
	ev(p, 1, GIL_EV_DROP_EXIT, 2200); /* merge point while holding: ignored */
	ev(p, 1, GIL_EV_DROP_ENTRY, 2300);
	ev(p, 1, GIL_EV_DROP_EXIT, 2310); /* the end of the inlined copy */
	ev(p, 1, GIL_EV_DROP_EXIT, 2320); /* a second way out, run after the first: ignored */
	ev(p, 1, GIL_EV_TAKE_ENTRY, 2400);
	ev(p, 1, GIL_EV_TAKE_EXIT, 2450); /* an inlined take_gil's end */
	ev(p, 1, GIL_EV_TAKE_EXIT, 2460); /* holding: ignored */
	assert_int_equal(nr_got, 4);
	expect(0, 1, GIL_KIND_TAKE, 2000, 100, 0);
	expect(1, 1, GIL_KIND_HOLD, 2100, 200, 0);
	expect(2, 1, GIL_KIND_DROP, 2300, 10, 0);
	expect(3, 1, GIL_KIND_TAKE, 2400, 50, 0);
	assert_int_equal(gil_pairing_finish(p, 3000), 0);
	expect(4, 1, GIL_KIND_HOLD, 2450, 550, GIL_F_TRUNCATED);
	gil_pairing_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_normal_cycle),
		cmocka_unit_test(test_exit_sites),
		cmocka_unit_test(test_open_holds_and_waiters),
		cmocka_unit_test(test_gil_lanes),
		cmocka_unit_test(test_metrics_sink),
		cmocka_unit_test(test_live_sink),
		cmocka_unit_test(test_attach_mid_hold),
		cmocka_unit_test(test_attach_mid_take_and_mid_drop),
		cmocka_unit_test(test_take_without_return_thread_exit),
		cmocka_unit_test(test_open_at_end_is_truncated),
		cmocka_unit_test(test_entry_without_return_closed_at_next_event),
		cmocka_unit_test(test_missing_drop),
		cmocka_unit_test(test_stray_and_duplicate),
		cmocka_unit_test(test_lost_flags_open_and_next),
		cmocka_unit_test(test_time_going_backwards),
		cmocka_unit_test(test_stats_and_many_threads),
		cmocka_unit_test(test_attribution_cycle),
		cmocka_unit_test(test_natives),
		cmocka_unit_test(test_attribution_edges),
		cmocka_unit_test(test_attribution_tid_reuse),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
