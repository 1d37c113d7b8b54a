// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * gil-record --live: a top-like table, once a second, of gil_recorder_live()'s figures. Per
 * process the GIL held share and the average number of waiters; per thread wait/hold/release
 * shares of the last second and since start, takes and forced releases per second, p99 wait
 * and the function it held the GIL in. ncurses draws it; keys sort, pause and quit. The
 * program's own messages (stderr: new processes, alerts) go through a pipe to the screen's
 * foot while it is up, and are written out again when it is given back, so none is lost.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "live-view.h"

#ifdef HAVE_NCURSES
#include <curses.h>
#include <term.h>

#define MSG_LINES 3 /* the foot: the last messages */
#define MSG_KEEP (1 << 20) /* what is kept to write out at the end */

enum sort_key { BY_HOLD, BY_WAIT, BY_DROP, BY_TAKES, BY_FORCED, BY_P99, BY_TID, NR_KEYS };

static const struct {
	int key;
	const char *name;
} sort_keys[NR_KEYS] = {
	[BY_HOLD] = { 'h', "hold" },	   [BY_WAIT] = { 'w', "wait" },
	[BY_DROP] = { 'r', "release" },	   [BY_TAKES] = { 't', "takes/s" },
	[BY_FORCED] = { 'f', "forced/s" }, [BY_P99] = { 'p', "p99 wait" },
	[BY_TID] = { 'n', "tid" },
};

struct live_view {
	SCREEN *screen;
	struct gil_live *shown; /* what is on the screen */
	enum sort_key sort;
	bool paused, dirty;
	int err_fd; /* the real stderr, while the view is up */
	int pipe_fd; /* what the program writes to stderr meanwhile */
	char *msgs; /* all of it, MSG_KEEP at most */
	size_t len, cut;
};

/* The one view up now, for the atexit handler: an exit() anywhere still gives the screen back. */
static struct live_view *up;

int live_view_check(char *err, size_t errlen)
{
	int e = 0;

	if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
		snprintf(err, errlen,
			 "--live needs a terminal on stdin and stdout: run it in one (for programs, use --metrics)");
		return -1;
	}
	if (setupterm(NULL, STDOUT_FILENO, &e) != OK) {
		snprintf(err, errlen,
			 "--live cannot drive this terminal (TERM=%s): set TERM to your terminal's type, e.g. TERM=xterm-256color",
			 getenv("TERM") ? getenv("TERM") : "");
		return -1;
	}
	del_curterm(cur_term);
	return 0;
}

/* Take what was written to stderr since the last time. */
static void read_msgs(struct live_view *v)
{
	char buf[4096];
	ssize_t n;
	size_t room;

	while ((n = read(v->pipe_fd, buf, sizeof(buf))) > 0) {
		room = MSG_KEEP - v->len;
		if ((size_t)n > room)
			v->cut += (size_t)n - room;
		if (room) {
			memcpy(v->msgs + v->len, buf, (size_t)n < room ? (size_t)n : room);
			v->len += (size_t)n < room ? (size_t)n : room;
		}
		v->dirty = true;
	}
}

/* Give the terminal and stderr back, and write out what stderr got meanwhile. */
static void give_back(struct live_view *v)
{
	if (!v->screen)
		return;
	endwin();
	delscreen(v->screen);
	v->screen = NULL;
	up = NULL;
	read_msgs(v);
	fflush(stderr);
	dup2(v->err_fd, STDERR_FILENO);
	close(v->err_fd);
	close(v->pipe_fd);
	if (v->len && write(STDERR_FILENO, v->msgs, v->len) < 0)
		v->cut += v->len;
	if (v->cut)
		fprintf(stderr, "gil-record: %zu bytes of messages were cut while --live was up\n",
			v->cut);
}

static void at_exit(void)
{
	if (up)
		give_back(up);
}

struct live_view *live_view_start(char *err, size_t errlen)
{
	struct live_view *v = calloc(1, sizeof(*v));
	static bool registered;
	int p[2] = { -1, -1 };

	if (!v || !(v->msgs = malloc(MSG_KEEP))) {
		free(v);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	v->err_fd = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
	if (v->err_fd < 0 || pipe2(p, O_CLOEXEC) < 0 ||
	    fcntl(p[0], F_SETFL, O_NONBLOCK) < 0) {
		snprintf(err, errlen, "--live: cannot redirect stderr: %s", strerror(errno));
		goto fail;
	}
	v->screen = newterm(NULL, stdout, stdin);
	if (!v->screen) {
		snprintf(err, errlen, "--live cannot drive this terminal (TERM=%s)",
			 getenv("TERM") ? getenv("TERM") : "");
		goto fail;
	}
	/* cbreak, not raw: Ctrl+C still sends SIGINT, which stops the recording as always */
	cbreak();
	noecho();
	nodelay(stdscr, TRUE);
	keypad(stdscr, TRUE);
	curs_set(0);
	fflush(stderr);
	dup2(p[1], STDERR_FILENO); /* not close-on-exec: alert commands write here too */
	close(p[1]);
	v->pipe_fd = p[0];
	v->dirty = true;
	up = v;
	if (!registered)
		atexit(at_exit);
	registered = true;
	return v;
fail:
	if (v->err_fd >= 0)
		close(v->err_fd);
	if (p[0] >= 0) {
		close(p[0]);
		close(p[1]);
	}
	free(v->msgs);
	free(v);
	return NULL;
}

static double pct(uint64_t ns, uint64_t wall)
{
	return wall ? 100.0 * (double)ns / (double)wall : 0;
}

/* A duration in 8 columns: "-" for none. */
static void dur(char *out, size_t len, uint64_t ns)
{
	if (!ns)
		snprintf(out, len, "-");
	else if (ns < 1000000)
		snprintf(out, len, "%.1f us", (double)ns / 1e3);
	else if (ns < 1000000000)
		snprintf(out, len, "%.2f ms", (double)ns / 1e6);
	else
		snprintf(out, len, "%.2f s", (double)ns / 1e9);
}

static enum sort_key sort_by;

static double key_of(const struct gil_live_thread *t)
{
	switch (sort_by) {
	case BY_WAIT:
		return (double)t->ns[GIL_KIND_TAKE];
	case BY_DROP:
		return (double)t->ns[GIL_KIND_DROP];
	case BY_TAKES:
		return t->takes;
	case BY_FORCED:
		return t->forced;
	case BY_P99:
		return (double)t->p99_wait_ns;
	case BY_TID:
		return -(double)t->tid;
	default:
		return (double)t->ns[GIL_KIND_HOLD];
	}
}

static int by_key(const void *a, const void *b)
{
	const struct gil_live_thread *x = a, *y = b;
	double kx = key_of(x), ky = key_of(y);

	if (kx != ky)
		return kx > ky ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* One line at @row, cut to the screen's width; false when the screen is full. */
static bool line(int *row, int limit, int attr, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static bool line(int *row, int limit, int attr, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	if (*row >= limit)
		return false;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	attron(attr);
	mvaddnstr(*row, 0, buf, COLS);
	attroff(attr);
	(*row)++;
	return true;
}

static void draw_process(struct gil_live_process *p, int *row, int limit)
{
	const double S = 1e9;
	char p99[16], p99all[16];
	size_t i;

	line(row, limit, A_BOLD,
	     "PID %d  rank %d  %s   GIL held %5.1f%% (since start %5.1f%%)   waiters %.2f (%.2f)   lost %llu (%llu)",
	     (int)p->pid, p->rank, p->comm, pct(p->held_ns, (uint64_t)S),
	     pct(p->total_held_ns, p->wall_ns), (double)p->wait_ns / S,
	     p->wall_ns ? (double)p->total_wait_ns / (double)p->wall_ns : 0,
	     (unsigned long long)p->lost, (unsigned long long)p->total_lost);
	line(row, limit, A_REVERSE,
	     "%9s %-15s %20s %-22s %8s %8s %9s %9s  %s", "", "", "--- last second ---",
	     "  --- since start ---", "", "", "p99 wait", "p99 wait", "");
	line(row, limit, A_REVERSE,
	     "%9s %-15s %6s %6s %6s   %6s %6s %6s   %8s %8s %9s %9s  %s", "TID", "NAME", "WAIT%",
	     "HOLD%", "REL%", "WAIT%", "HOLD%", "REL%", "TAKES/s", "FORCED/s", "(second)",
	     "(all)", "FUNCTION");
	qsort(p->threads, p->nr_threads, sizeof(*p->threads), by_key);
	for (i = 0; i < p->nr_threads; i++) {
		const struct gil_live_thread *t = &p->threads[i];

		dur(p99, sizeof(p99), t->p99_wait_ns);
		dur(p99all, sizeof(p99all), t->total_p99_wait_ns);
		if (!line(row, limit, t->exited ? A_DIM : A_NORMAL,
			  "%9d %-15.15s %6.1f %6.1f %6.1f   %6.1f %6.1f %6.1f   %8u %8u %9s %9s  %s%s",
			  (int)t->tid, t->name, pct(t->ns[GIL_KIND_TAKE], (uint64_t)S),
			  pct(t->ns[GIL_KIND_HOLD], (uint64_t)S),
			  pct(t->ns[GIL_KIND_DROP], (uint64_t)S),
			  pct(t->total_ns[GIL_KIND_TAKE], t->wall_ns),
			  pct(t->total_ns[GIL_KIND_HOLD], t->wall_ns),
			  pct(t->total_ns[GIL_KIND_DROP], t->wall_ns), t->takes, t->forced, p99,
			  p99all, t->function, t->exited ? " (exited)" : ""))
			break;
	}
	line(row, limit, A_NORMAL, "%s", "");
}

/* The last @n lines of the messages, at the screen's foot, control characters as spaces. */
static void draw_msgs(const struct live_view *v, int n)
{
	size_t end = v->len, start, k, len;
	int row = LINES - 1;
	char buf[512];

	if (end && v->msgs[end - 1] == '\n')
		end--;
	while (n-- > 0 && end > 0 && row >= 2) {
		start = end;
		while (start > 0 && v->msgs[start - 1] != '\n')
			start--;
		len = end - start < sizeof(buf) ? end - start : sizeof(buf);
		for (k = 0; k < len; k++)
			buf[k] = (unsigned char)v->msgs[start + k] < 0x20 ? ' ' : v->msgs[start + k];
		mvaddnstr(row--, 0, buf, (int)len < COLS ? (int)len : COLS);
		end = start ? start - 1 : 0;
		if (!start)
			break;
	}
}

static void draw(struct live_view *v)
{
	const struct gil_live *l = v->shown;
	size_t i, threads = 0;
	int row = 0, limit = LINES - MSG_LINES - 1, k;
	char keys[160];
	size_t off = 0;

	erase();
	for (i = 0; l && i < l->nr_processes; i++)
		threads += l->processes[i].nr_threads;
	if (l)
		line(&row, LINES, A_BOLD,
		     "gil-record --live   second %llu of the recording   %zu process(es), %zu thread(s)   events %llu   lost %llu   lag %.0f ms%s",
		     (unsigned long long)l->second, l->nr_processes, threads,
		     (unsigned long long)l->events, (unsigned long long)l->lost,
		     (double)l->drain_lag_ns / 1e6, v->paused ? "   PAUSED" : "");
	else
		line(&row, LINES, A_BOLD, "gil-record --live   waiting for the first second%s",
		     v->paused ? "   PAUSED" : "");
	for (k = 0; k < NR_KEYS; k++)
		off += (size_t)snprintf(keys + off, sizeof(keys) - off, "%c %s  ",
					sort_keys[k].key, sort_keys[k].name);
	line(&row, LINES, A_NORMAL, "sort: %s  space pause  q quit   (by %s)", keys,
	     sort_keys[v->sort].name);
	line(&row, LINES, A_NORMAL, "%s", "");
	sort_by = v->sort;
	for (i = 0; l && i < l->nr_processes && row < limit; i++)
		draw_process(&l->processes[i], &row, limit);
	if (l && !l->nr_processes)
		line(&row, limit, A_NORMAL, "no CPython process is recorded now");
	draw_msgs(v, MSG_LINES);
	refresh();
	v->dirty = false;
}

int live_view_step(struct live_view *v, struct gil_recorder *rec)
{
	struct gil_live *l;
	int ch, k;

	read_msgs(v);
	while ((ch = getch()) != ERR) {
		if (ch == 'q' || ch == 'Q')
			return 0;
		if (ch == ' ') {
			v->paused = !v->paused;
			v->dirty = true;
		} else if (ch == KEY_RESIZE || ch == 12 /* Ctrl+L */) {
			clearok(curscr, TRUE);
			v->dirty = true;
		}
		for (k = 0; k < NR_KEYS; k++) {
			if (ch == sort_keys[k].key) {
				v->sort = (enum sort_key)k;
				v->dirty = true;
			}
		}
	}
	if (!v->paused) {
		l = gil_recorder_live(rec);
		if (l && (!v->shown || l->second != v->shown->second)) {
			gil_live_free(v->shown);
			v->shown = l;
			v->dirty = true;
		} else {
			gil_live_free(l);
		}
	}
	if (v->dirty)
		draw(v);
	return 1;
}

void live_view_end(struct live_view *v)
{
	if (!v)
		return;
	give_back(v);
	gil_live_free(v->shown);
	free(v->msgs);
	free(v);
}

#else /* !HAVE_NCURSES */

int live_view_check(char *err, size_t errlen)
{
	snprintf(err, errlen,
		 "--live: this gil-record was built without ncurses: install libncurses-dev and build again");
	return -1;
}

struct live_view *live_view_start(char *err, size_t errlen)
{
	live_view_check(err, errlen);
	return NULL;
}

int live_view_step(struct live_view *v, struct gil_recorder *rec)
{
	(void)v;
	(void)rec;
	return 0;
}

void live_view_end(struct live_view *v)
{
	(void)v;
}

#endif /* HAVE_NCURSES */
