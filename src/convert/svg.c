// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * gil-convert --svg: one picture of the statistics, plain SVG text: per process, GIL
 * utilization and the average number of waiters over time, then one row per thread with how
 * much of each time bin it held the GIL (green) and waited for it (red).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "giltrace.h"
#include "stats.h"

#define WIDTH 1200
#define LEFT 230 /* room for thread names */
#define RIGHT 20
#define PLOT (WIDTH - LEFT - RIGHT)
#define UTIL_H 90
#define ROW_H 22
#define ROW_GAP 4
#define MAX_ROWS 64

static void text(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		switch (*s) {
		case '<':
			fputs("&lt;", f);
			break;
		case '>':
			fputs("&gt;", f);
			break;
		case '&':
			fputs("&amp;", f);
			break;
		case '"':
			fputs("&quot;", f);
			break;
		default:
			if ((unsigned char)*s >= 0x20 || *s == '\t')
				fputc(*s, f);
		}
	}
}

/* Ticks along the time axis of one process, in seconds from its start. */
static void axis(FILE *f, const struct stats_proc *p, size_t n, int y)
{
	double span = (double)n * (double)p->width / 1e9, step = 1e-6, x;
	int i;

	/* a 1-2-5 step giving at most 10 ticks */
	while (span / step > 10) {
		if (span / (step * 2) <= 10) {
			step *= 2;
			break;
		}
		if (span / (step * 5) <= 10) {
			step *= 5;
			break;
		}
		step *= 10;
	}
	fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#888\"/>\n", LEFT, y,
		LEFT + PLOT, y);
	for (i = 0; i * step <= span + 1e-12 && i < 100; i++) {
		x = LEFT + PLOT * (i * step) / span;
		fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#888\"/>"
			"<text x=\"%.1f\" y=\"%d\" font-size=\"10\" text-anchor=\"middle\">%g s</text>\n",
			x, y, x, y + 4, x, y + 15, i * step);
	}
}

static int process_svg(FILE *f, const struct stats *s, size_t pi, int y)
{
	const struct stats_proc *p = &s->procs[pi];
	size_t n = stats_bins_used(p), i, rows = 0;
	double bw, maxw = 0, v, h;
	const struct stats_thread *t;
	char label[256];

	if (!n && p->bins_set && p->have_hi && p->width > 0)
		n = 1; /* a span of zero length still draws its first bin */
	fprintf(f, "<text x=\"10\" y=\"%d\" font-size=\"14\" font-weight=\"bold\">", y + 14);
	text(f, p->label);
	fputs("</text>\n", f);
	y += 24;
	if (!n) {
		fprintf(f, "<text x=\"10\" y=\"%d\" font-size=\"12\">no intervals</text>\n", y + 12);
		return y + 24;
	}
	bw = (double)PLOT / (double)n;
	for (i = 0; i < n; i++) {
		v = (double)p->waiters[i] / (double)p->width;
		if (v > maxw)
			maxw = v;
	}
	/* utilization: an area, 0..100 % */
	fprintf(f, "<text x=\"10\" y=\"%d\" font-size=\"12\">GIL held (green, 0-100%%)</text>\n",
		y + 30);
	fprintf(f, "<text x=\"10\" y=\"%d\" font-size=\"12\" fill=\"#c0392b\">threads waiting "
		"(red line, 0-%.2f)</text>\n", y + 46, maxw);
	fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#f4f4f4\"/>\n", LEFT,
		y, PLOT, UTIL_H);
	for (i = 0; i < n; i++) {
		v = (double)p->util[i] / (double)p->width;
		v = v > 1 ? 1 : v < 0 ? 0 : v;
		if (v <= 0)
			continue;
		h = v * UTIL_H;
		fprintf(f, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" "
			"fill=\"#27ae60\"/>\n", LEFT + i * bw, y + UTIL_H - h, bw + 0.05, h);
	}
	if (maxw > 0) {
		fputs("<polyline fill=\"none\" stroke=\"#c0392b\" stroke-width=\"1.5\" points=\"", f);
		for (i = 0; i < n; i++) {
			v = (double)p->waiters[i] / (double)p->width / maxw;
			fprintf(f, "%.2f,%.2f ", LEFT + (i + 0.5) * bw, y + UTIL_H - v * UTIL_H);
		}
		fputs("\"/>\n", f);
	}
	y += UTIL_H + 8;
	/* one row per thread: held (green, from the bottom) and waited (red, above it) */
	for (i = 0; i < p->nr_threads && rows < MAX_ROWS; i++) {
		size_t b;

		t = &p->threads[i];
		if (!t->bins)
			continue;
		snprintf(label, sizeof(label), "%d %s", t->tid, t->name ? t->name : "");
		fprintf(f, "<text x=\"10\" y=\"%d\" font-size=\"11\">", y + ROW_H - 7);
		text(f, label);
		fprintf(f, "</text>\n<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
			"fill=\"#f4f4f4\"/>\n", LEFT, y, PLOT, ROW_H);
		for (b = 0; b < n; b++) {
			double hold = (double)t->bins[STATS_BINS + b] / (double)p->width;
			double wait = (double)t->bins[b] / (double)p->width;

			hold = hold > 1 ? 1 : hold;
			wait = wait > 1 - hold ? 1 - hold : wait;
			if (hold > 0)
				fprintf(f, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" "
					"fill=\"#27ae60\"/>\n", LEFT + b * bw,
					y + ROW_H * (1 - hold), bw + 0.05, ROW_H * hold);
			if (wait > 0)
				fprintf(f, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" "
					"fill=\"#e74c3c\"/>\n", LEFT + b * bw,
					y + ROW_H * (1 - hold - wait), bw + 0.05, ROW_H * wait);
		}
		y += ROW_H + ROW_GAP;
		rows++;
	}
	if (p->nr_threads > rows) {
		fprintf(f, "<text x=\"10\" y=\"%d\" font-size=\"11\">(%zu more threads: see "
			"--summary)</text>\n", y + 12, p->nr_threads - rows);
		y += 18;
	}
	axis(f, p, n, y + 2);
	return y + 34;
}

/* Height the picture needs. */
static int height(const struct stats *s)
{
	int h = 60;
	size_t i, rows;

	for (i = 0; i < s->nr_procs; i++) {
		rows = s->procs[i].nr_threads;
		if (rows > STATS_BIN_THREADS)
			rows = STATS_BIN_THREADS;
		if (rows > MAX_ROWS)
			rows = MAX_ROWS;
		h += 24 + UTIL_H + 8 + (int)rows * (ROW_H + ROW_GAP) + 18 + 34 + 10;
	}
	return h;
}

int stats_write_svg(const struct stats *s, FILE *f)
{
	size_t i;
	int y = 10;

	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
		"font-family=\"sans-serif\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
		WIDTH, height(s));
	fprintf(f, "<text x=\"10\" y=\"%d\" font-size=\"12\" fill=\"#555\">GIL over time: per "
		"thread, the share of each column it held the GIL (green) and waited for it (red)"
		"</text>\n", y + 12);
	y += 26;
	for (i = 0; i < s->nr_procs; i++)
		y = process_svg(f, s, i, y) + 10;
	fputs("</svg>\n", f);
	fflush(f);
	return ferror(f) ? -1 : 0;
}
