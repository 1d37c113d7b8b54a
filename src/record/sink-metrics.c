// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The metrics sink (gil-record --metrics): one target's counters in Prometheus's terms. Per
 * thread and per process: seconds waited for, held and released the GIL, takes, releases by
 * reason, holds over the watchdog's threshold; per process the threads waiting now and the
 * share of the last second the GIL was held. GIL_METRICS_MAX_THREADS live threads of a
 * process have series of their own; threads past that, and threads that exited, are summed
 * into one (tid "other"), so a pool that churns threads cannot grow the series without end.
 * record/metrics.c renders the recorder's sinks into the text exposition format.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "sink.h"

#define WINDOW_NS 1000000000ull /* the held ratio's window */
#define NR_SAMPLES 64 /* ticks kept for it: rounds are 2 ms at the shortest */

static void *metrics_open(const struct gil_sink_target *t)
{
	struct gil_metrics *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->on = t->opts && t->opts->metrics;
	m->pid = t->pid;
	m->rank = t->rank;
	snprintf(m->comm, sizeof(m->comm), "%s", t->comm ? t->comm : "");
	m->threshold = t->opts ? t->opts->alert_hold_ns : 0;
	m->other.tid = -1;
	snprintf(m->other.name, sizeof(m->other.name), "other");
	m->samples = calloc(NR_SAMPLES, sizeof(*m->samples));
	if (!m->samples) {
		free(m);
		return NULL;
	}
	return m;
}

/* Thread @tid's counters: its own, or the shared row past the bound. NULL: out of memory. */
static struct gil_metrics_thread *row(struct gil_metrics *m, int32_t tid)
{
	size_t i;

	for (i = 0; i < m->nr; i++)
		if (m->v[i].tid == tid)
			return &m->v[i];
	if (m->nr == GIL_METRICS_MAX_THREADS)
		return &m->other;
	if (gil_grow(&m->v, &m->cap, m->nr + 1, sizeof(*m->v)) < 0)
		return NULL;
	memset(&m->v[m->nr], 0, sizeof(m->v[m->nr]));
	m->v[m->nr].tid = tid;
	return &m->v[m->nr++];
}

static void add(struct gil_metrics_counts *c, const struct gil_interval *iv, uint64_t threshold)
{
	c->ns[iv->kind] += iv->dur;
	c->count[iv->kind]++;
	if (iv->kind == GIL_KIND_DROP && iv->reason < GIL_METRICS_REASONS)
		c->releases[iv->reason]++;
	if (iv->kind == GIL_KIND_HOLD && threshold && iv->dur >= threshold)
		c->long_holds++;
}

static int metrics_interval(void *p, const struct gil_interval *iv)
{
	struct gil_metrics *m = p;
	struct gil_metrics_thread *t;

	if (!m->on || iv->kind > GIL_KIND_DROP)
		return 0;
	t = row(m, iv->tid);
	if (!t)
		return -1;
	add(&t->c, iv, m->threshold);
	add(&m->total, iv, m->threshold);
	return 0;
}

static int metrics_thread(void *p, int32_t tid, const char *name, uint64_t ts)
{
	struct gil_metrics *m = p;
	struct gil_metrics_thread *t;

	(void)ts;
	if (!m->on)
		return 0;
	t = row(m, tid);
	if (!t)
		return -1;
	if (t != &m->other)
		snprintf(t->name, sizeof(t->name), "%s", name ? name : "");
	return 0;
}

/* An exited thread's counts go to the shared row: its slot is free for a live thread. */
static int metrics_exit(void *p, int32_t tid, uint64_t ts)
{
	struct gil_metrics *m = p;
	size_t i;
	int k;

	(void)ts;
	for (i = 0; i < m->nr; i++) {
		if (m->v[i].tid != tid)
			continue;
		for (k = 0; k < 3; k++) {
			m->other.c.ns[k] += m->v[i].c.ns[k];
			m->other.c.count[k] += m->v[i].c.count[k];
		}
		for (k = 0; k < GIL_METRICS_REASONS; k++)
			m->other.c.releases[k] += m->v[i].c.releases[k];
		m->other.c.long_holds += m->v[i].c.long_holds;
		m->v[i] = m->v[--m->nr];
		break;
	}
	return 0;
}

static int metrics_tick(void *p, uint64_t upto, const struct gil_open *holds, size_t nr,
			uint32_t waiting)
{
	struct gil_metrics *m = p;
	uint64_t held = m->total.ns[GIL_KIND_HOLD];
	const struct gil_metrics_sample *old;
	size_t i, k;

	if (!m->on)
		return 0;
	/* the time held up to @upto: every hold that ended before it, and the open ones' parts */
	for (i = 0; i < nr; i++)
		if (holds[i].kind == GIL_KIND_HOLD && upto > holds[i].since)
			held += upto - holds[i].since;
	m->waiting = waiting;
	m->samples[m->next].ts = upto;
	m->samples[m->next].held = held;
	m->next = (m->next + 1) % NR_SAMPLES;
	if (m->nr_samples < NR_SAMPLES)
		m->nr_samples++;
	/* the oldest sample at least a window back, else the oldest there is */
	old = NULL;
	for (k = 1; k <= m->nr_samples; k++) {
		const struct gil_metrics_sample *s =
			&m->samples[(m->next + NR_SAMPLES - k) % NR_SAMPLES];

		old = s;
		if (upto - s->ts >= WINDOW_NS)
			break;
	}
	m->held_ratio = 0;
	if (old && upto > old->ts)
		m->held_ratio = (double)(held - old->held) / (double)(upto - old->ts);
	return 0;
}

static void metrics_close(void *p)
{
	struct gil_metrics *m = p;

	free(m->v);
	free(m->samples);
	free(m);
}

const struct gil_sink_ops gil_sink_metrics = {
	.name = "metrics",
	.open = metrics_open,
	.interval = metrics_interval,
	.thread = metrics_thread,
	.exit = metrics_exit,
	.tick = metrics_tick,
	.close = metrics_close,
};
