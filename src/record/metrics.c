// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The recorder's metrics, rendered each round into Prometheus's text exposition format (0.0.4)
 * from every live target's metrics sink (sink-metrics.c) and the recorder's own counters, and
 * handed to whatever thread asks (gil_recorder_metrics: gil-record's HTTP server) under a lock.
 * Every family is written once, its samples for all processes together, as the format wants.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"

enum scope { PER_THREAD, PER_PROCESS };

/* What one family counts, read from a row of counts. */
enum what { NS_WAIT, NS_HOLD, NS_DROP, TAKES, RELEASES, LONG_HOLDS };

static const struct family {
	const char *name, *help;
	enum scope scope;
	enum what what;
} families[] = {
	{ "giltrace_thread_wait_seconds_total", "Time the thread waited for the GIL (take_gil).",
	  PER_THREAD, NS_WAIT },
	{ "giltrace_thread_hold_seconds_total", "Time the thread held the GIL.", PER_THREAD,
	  NS_HOLD },
	{ "giltrace_thread_release_seconds_total", "Time the thread spent releasing the GIL (drop_gil).",
	  PER_THREAD, NS_DROP },
	{ "giltrace_thread_takes_total", "Times the thread took the GIL.", PER_THREAD, TAKES },
	{ "giltrace_thread_releases_total",
	  "Times the thread released the GIL, by reason (forced: another thread asked for it).",
	  PER_THREAD, RELEASES },
	{ "giltrace_thread_long_holds_total",
	  "Holds of the GIL longer than the watchdog's threshold (--alert-hold).", PER_THREAD,
	  LONG_HOLDS },
	{ "giltrace_process_wait_seconds_total", "Time the process's threads waited for the GIL.",
	  PER_PROCESS, NS_WAIT },
	{ "giltrace_process_hold_seconds_total", "Time the process's threads held the GIL.",
	  PER_PROCESS, NS_HOLD },
	{ "giltrace_process_release_seconds_total",
	  "Time the process's threads spent releasing the GIL.", PER_PROCESS, NS_DROP },
	{ "giltrace_process_takes_total", "Times the process's threads took the GIL.", PER_PROCESS,
	  TAKES },
	{ "giltrace_process_releases_total", "Times the process's threads released the GIL, by reason.",
	  PER_PROCESS, RELEASES },
	{ "giltrace_process_long_holds_total",
	  "Holds of the GIL longer than the watchdog's threshold (--alert-hold).", PER_PROCESS,
	  LONG_HOLDS },
};

static const char *const reasons[GIL_METRICS_REASONS] = { "unknown", "voluntary", "forced" };

/* A label value, escaped as the format wants (backslash, double quote, newline). */
static void label(FILE *f, const char *v)
{
	for (; *v; v++) {
		if (*v == '\\' || *v == '"')
			fputc('\\', f);
		if (*v == '\n')
			fputs("\\n", f);
		else
			fputc(*v, f);
	}
}

static void process_labels(FILE *f, const struct gil_metrics *m)
{
	fprintf(f, "pid=\"%d\",rank=\"%d\",comm=\"", (int)m->pid, m->rank);
	label(f, m->comm);
	fputc('"', f);
}

static void thread_labels(FILE *f, const struct gil_metrics *m, const struct gil_metrics_thread *t)
{
	process_labels(f, m);
	if (t->tid < 0)
		fputs(",tid=\"other\",thread=\"other\"", f);
	else {
		fprintf(f, ",tid=\"%d\",thread=\"", (int)t->tid);
		label(f, t->name);
		fputc('"', f);
	}
}

/* The samples of family @fam for one row (@t NULL: the process's totals). */
static void samples(FILE *f, const struct family *fam, const struct gil_metrics *m,
		    const struct gil_metrics_thread *t, const struct gil_metrics_counts *c)
{
	int r;

	if (fam->what == RELEASES) {
		for (r = 0; r < GIL_METRICS_REASONS; r++) {
			fprintf(f, "%s{", fam->name);
			if (t)
				thread_labels(f, m, t);
			else
				process_labels(f, m);
			fprintf(f, ",reason=\"%s\"} %llu\n", reasons[r],
				(unsigned long long)c->releases[r]);
		}
		return;
	}
	if (fam->what == LONG_HOLDS && !m->threshold)
		return;
	fprintf(f, "%s{", fam->name);
	if (t)
		thread_labels(f, m, t);
	else
		process_labels(f, m);
	switch (fam->what) {
	case NS_WAIT:
	case NS_HOLD:
	case NS_DROP:
		fprintf(f, "} %.9f\n", (double)c->ns[fam->what - NS_WAIT] / 1e9);
		break;
	case TAKES:
		fprintf(f, "} %llu\n", (unsigned long long)c->count[GIL_KIND_TAKE]);
		break;
	default:
		fprintf(f, "} %llu\n", (unsigned long long)c->long_holds);
		break;
	}
}

static bool has_counts(const struct gil_metrics_counts *c)
{
	return c->count[0] || c->count[1] || c->count[2];
}

/* The metrics sink of each target that is recorded now. */
static struct gil_metrics *metrics_of(const struct target *t)
{
	if (t->state == T_DONE || !t->sinks)
		return NULL;
	return gil_sinks_state(t->sinks, &gil_sink_metrics);
}

static void render(FILE *f, struct gil_recorder *rec)
{
	const struct family *fam;
	struct gil_metrics *m;
	size_t i, k, j;
	unsigned long live = 0;

	for (k = 0; k < GIL_ARRAY_SIZE(families); k++) {
		fam = &families[k];
		if (fam->what == LONG_HOLDS && !rec->opts.alert_hold_ns)
			continue;
		fprintf(f, "# HELP %s %s\n# TYPE %s counter\n", fam->name, fam->help, fam->name);
		for (i = 0; i < rec->nr_targets; i++) {
			m = metrics_of(rec->targets[i]);
			if (!m)
				continue;
			if (fam->scope == PER_PROCESS) {
				samples(f, fam, m, NULL, &m->total);
				continue;
			}
			for (j = 0; j < m->nr; j++)
				samples(f, fam, m, &m->v[j], &m->v[j].c);
			if (has_counts(&m->other.c))
				samples(f, fam, m, &m->other, &m->other.c);
		}
	}
	fputs("# HELP giltrace_gil_waiters Threads waiting for the GIL, at the last round.\n"
	      "# TYPE giltrace_gil_waiters gauge\n", f);
	for (i = 0; i < rec->nr_targets; i++) {
		m = metrics_of(rec->targets[i]);
		if (!m)
			continue;
		live++;
		fputs("giltrace_gil_waiters{", f);
		process_labels(f, m);
		fprintf(f, "} %u\n", m->waiting);
	}
	fputs("# HELP giltrace_gil_held_ratio Share of the last second the GIL was held.\n"
	      "# TYPE giltrace_gil_held_ratio gauge\n", f);
	for (i = 0; i < rec->nr_targets; i++) {
		m = metrics_of(rec->targets[i]);
		if (!m)
			continue;
		fputs("giltrace_gil_held_ratio{", f);
		process_labels(f, m);
		fprintf(f, "} %.6f\n", m->held_ratio);
	}
	fprintf(f,
		"# HELP giltrace_processes CPython processes recorded now.\n"
		"# TYPE giltrace_processes gauge\ngiltrace_processes %lu\n"
		"# HELP giltrace_events_total GIL probe events received.\n"
		"# TYPE giltrace_events_total counter\ngiltrace_events_total %llu\n"
		"# HELP giltrace_lost_events_total Events the kernel lost (rings full).\n"
		"# TYPE giltrace_lost_events_total counter\ngiltrace_lost_events_total %llu\n"
		"# HELP giltrace_drain_lag_seconds How far behind now the counters were.\n"
		"# TYPE giltrace_drain_lag_seconds gauge\ngiltrace_drain_lag_seconds %.6f\n",
		live, (unsigned long long)rec->events, (unsigned long long)rec->lost,
		(double)rec->metrics.drain_lag / 1e9);
}

int rec_metrics_publish(struct gil_recorder *rec, uint64_t now)
{
	char *text = NULL, *old;
	size_t len = 0;
	FILE *f;

	if (!rec->opts.metrics ||
	    (rec->metrics.rendered_at && now - rec->metrics.rendered_at < GIL_METRICS_EVERY_NS))
		return 0;
	rec->metrics.rendered_at = now;
	f = open_memstream(&text, &len);
	if (!f)
		return -1;
	render(f, rec);
	if (fclose(f) != 0) {
		free(text);
		return -1;
	}
	pthread_mutex_lock(&rec->metrics.mu);
	old = rec->metrics.text;
	rec->metrics.text = text;
	rec->metrics.len = len;
	pthread_mutex_unlock(&rec->metrics.mu);
	free(old);
	return 0;
}

char *gil_recorder_metrics(struct gil_recorder *rec, size_t *len)
{
	char *copy = NULL;
	int e = ENOENT;

	pthread_mutex_lock(&rec->metrics.mu);
	if (rec->metrics.text) {
		copy = malloc(rec->metrics.len + 1);
		e = ENOMEM;
		if (copy) {
			memcpy(copy, rec->metrics.text, rec->metrics.len + 1);
			*len = rec->metrics.len;
		}
	}
	pthread_mutex_unlock(&rec->metrics.mu);
	if (!copy)
		errno = e;
	return copy;
}

void rec_metrics_free(struct gil_recorder *rec)
{
	free(rec->metrics.text);
	rec->metrics.text = NULL;
	pthread_mutex_destroy(&rec->metrics.mu);
}
