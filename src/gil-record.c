// SPDX-License-Identifier: LGPL-2.1-or-later
/* gil-record: option parsing, signals, the status line and the summary; libgiltrace does the work. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "alerts.h"
#include "live-view.h"
#include "metrics-http.h"
#include "common/msg.h"
#include "common/util.h"
#include "giltrace.h"

#define PROG "gil-record"

static volatile sig_atomic_t got_signal;

static void on_signal(int sig)
{
	got_signal = sig;
}

static void on_child(int sig)
{
	(void)sig;
}

/* A wait status as a shell would give it back. */
static int exit_code_of(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return 1;
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: " PROG " [OPTION]...\n"
		"  or:  " PROG " [OPTION]... [--] COMMAND [ARG]...\n"
		"Record when each thread of CPython processes waits for, holds and releases the GIL.\n"
		"Needs root. Writes GIL_<pid>_rank_<rank>.json per process.\n"
		"With COMMAND, run it and record its CPython processes from their first Python line\n"
		"until it exits; exit with its status.\n"
		"\n"
		"  -p, --pid PID[,PID...]   record these processes (default: every CPython process,\n"
		"                           including ones that start while recording)\n"
		"  -a, --accelerator-only   with no --pid: only CPython processes that have an\n"
		"                           accelerator open (/dev/davinci*, /dev/nvidia*,\n"
		"                           /dev/accel/*, /dev/kfd): the job on the NPUs/GPUs\n"
		"  -d, --duration SECONDS   stop after SECONDS (default -1: until Ctrl+C, SIGTERM,\n"
		"                           or until every process given with --pid has exited)\n"
		"  -o, --output-dir DIR     where files go (default $SYSTRACE_DUMP_PATH/GIL,\n"
		"                           else /home/sysTrace/GIL)\n"
		"  -m, --mmap-pages PAGES   ring buffer pages per CPU, a power of two (default 1024)\n"
		"      --attribution=MODE   how the Python function and the release reason (forced\n"
		"                           or voluntary) are read: fast (default: the probes read\n"
		"                           the code object's address at drop_gil, names are read\n"
		"                           from the process once per object), full (names read by\n"
		"                           the probes at every take_gil and drop_gil: costlier,\n"
		"                           independent of the process's later memory), none\n"
		"      --no-attribution     the same as --attribution=none\n"
		"      --native             read the native caller (the extension or library\n"
		"                           that called PyEval_SaveThread, PyGILState_Ensure...)\n"
		"                           of each take and release: gil-convert names it\n"
		"                           (about 1.3x the probes' cost where releases abound)\n"
		"      --no-debuginfod      never fetch a missing debug file from the servers in\n"
		"                           DEBUGINFOD_URLS (by default they are asked, by build-id)\n"
		"      --as-root            under sudo, run COMMAND (and --alert-cmd) as root\n"
		"                           (default: as the user who ran sudo)\n"
		"      --alert-hold MS      the watchdog: a line when a thread has held the GIL\n"
		"                           for more than MS milliseconds, while it holds it and\n"
		"                           when it lets go; the file's footer lists them\n"
		"      --alert-cmd CMD      with --alert-hold: run CMD once per such hold, while it\n"
		"                           lasts (e.g. a py-spy dump of $GIL_ALERT_PID): no\n"
		"                           shell, words split at spaces, details in GIL_ALERT_*,\n"
		"                           at most one a second and 4 at once\n"
		"      --metrics [ADDR:]PORT  serve the counters for Prometheus at\n"
		"                           http://ADDR:PORT/metrics (ADDR 127.0.0.1 if not given)\n"
		"      --live               a full-screen table, refreshed every second, of each\n"
		"                           process's and thread's GIL shares in the last second\n"
		"                           and since start (keys: h w r t f p n sort, space\n"
		"                           pause, q quit); the file is written as always\n"
		"      --no-files           write no recording (always-on use with --metrics,\n"
		"                           --alert-hold or --live)\n"
		"      --cleanup            remove probe groups left by killed recorders, then exit\n"
		"  -q, --quiet              print errors and lost-event warnings only\n"
		"  -v, --verbose            say more (every thread in the closing summary, not the\n"
		"                           10 longest waiting); twice for libtracefs/libtraceevent\n"
		"                           debug output\n"
		"  -h, --help               show this help and exit\n"
		"  -V, --version            show the version and exit\n"
		"\n"
		"Convert a recording for Perfetto, chrome://tracing or MindStudio Insight with\n"
		"  gil-convert --input GIL_<pid>_rank_<rank>.json --output trace.json\n");
}

/* "1,2,3" -> pids; every item a positive decimal pid. */
static int parse_pids(const char *arg, pid_t **pids, size_t *nr)
{
	char *copy = strdup(arg), *tok, *save = NULL, *end;
	pid_t *v = NULL, *nv;
	long x;

	if (!copy)
		return -1;
	*nr = 0;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		errno = 0;
		x = strtol(tok, &end, 10);
		if (errno || *end || end == tok || x <= 0 || x > INT_MAX)
			goto fail;
		nv = realloc(v, (*nr + 1) * sizeof(*v));
		if (!nv)
			goto fail;
		v = nv;
		v[(*nr)++] = (pid_t)x;
	}
	if (!*nr || arg[strlen(arg) - 1] == ',' || arg[0] == ',' || strstr(arg, ",,"))
		goto fail;
	free(copy);
	*pids = v;
	return 0;
fail:
	free(copy);
	free(v);
	return -1;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void status_line(struct gil_recorder *rec, double start, double duration, uint64_t *last_ev,
			double *last_t)
{
	double t = now_s(), rate;
	uint64_t ev = gil_recorder_events(rec);

	rate = t > *last_t ? (double)(ev - *last_ev) / (t - *last_t) : 0;
	*last_ev = ev;
	*last_t = t;
	if (duration >= 0)
		fprintf(stderr, "\r\033[K" PROG ": %.1fs of %.0fs, %zu process(es), %.0f events/s, %llu lost",
			t - start, duration, gil_recorder_nr_targets(rec), rate,
			(unsigned long long)gil_recorder_lost(rec));
	else
		fprintf(stderr, "\r\033[K" PROG ": %.1fs, %zu process(es), %.0f events/s, %llu lost (Ctrl+C to stop)",
			t - start, gil_recorder_nr_targets(rec), rate,
			(unsigned long long)gil_recorder_lost(rec));
}

static double pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

#define SUMMARY_ROWS 10 /* threads per process in the closing summary; -v shows them all */

static const struct gil_thread_summary *sort_base;

/* Longest waiting first (the wait column, descending): the thread that starves is on top. */
static int by_wait(const void *a, const void *b)
{
	const struct gil_thread_summary *x = &sort_base[*(const size_t *)a];
	const struct gil_thread_summary *y = &sort_base[*(const size_t *)b];

	if (x->ns[GIL_KIND_TAKE] != y->ns[GIL_KIND_TAKE])
		return x->ns[GIL_KIND_TAKE] > y->ns[GIL_KIND_TAKE] ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* What the closing lines warn of: "<before><count><after>", when the count is not 0. */
static const struct closing_warning {
	uint64_t (*count)(const struct gil_recorder *rec);
	const char *before, *after;
} closing_warnings[] = {
	{ gil_recorder_lost, "the kernel lost ",
	  " events; affected intervals are flagged. Use a larger --mmap-pages." },
	{ gil_recorder_releases_not_seen, "",
	  " releases were not seen: threads entered take_gil still holding the GIL, having released "
	  "it through a drop_gil copy no probe covers (inlined where no symbol table or DWARF shows "
	  "it, or lost events); the holds around them are flagged. For exact sites, install the "
	  "interpreter's debug symbols or set DEBUGINFOD_URLS" },
	{ gil_recorder_throttled, "the kernel throttled the probes' events ",
	  " times and dropped what they saw meanwhile (kernel.perf_event_max_sample_rate, "
	  "kernel.perf_cpu_time_max_percent): raise the rate, or record fewer processes" },
	{ gil_recorder_unguarded_exits, "",
	  " threads of forked processes exited on a kernel older than Linux 6.12, where such an "
	  "exit can take the process's probes away: their recordings may stop early (the footers' "
	  "unguarded_exits say which). Linux 6.12 keeps them" },
	{ gil_recorder_unnamed_exited, "",
	  " events name no Python function: their process exited before its code objects were read "
	  "from its memory; --attribution=full reads them in the probe" },
	{ gil_recorder_functions_cut, "",
	  " Python function names were cut (a name past 256 bytes, a file past 1024, or past 32768 "
	  "distinct functions); the footers' function_caps say which" },
};

static void summary(struct gil_recorder *rec, int verbosity)
{
	const struct gil_process_stats *ps;
	const struct gil_thread_summary *th;
	size_t nr, i, nt, k, j, *order, rows;
	bool named;

	ps = gil_recorder_stats(rec, &nr);
	for (i = 0; i < nr; i++) {
		if (!ps[i].path)
			continue;
		if (verbosity >= GIL_NORMAL) {
			char marks[48] = "";

			if (ps[i].steps)
				snprintf(marks, sizeof(marks), ", %llu step marks",
					 (unsigned long long)ps[i].steps);
			gil_msg("pid %d rank %d: %llu threads, %llu events, %llu intervals%s, %s -> %s",
				(int)ps[i].pid, ps[i].rank, (unsigned long long)ps[i].threads,
				(unsigned long long)ps[i].events,
				(unsigned long long)ps[i].intervals, marks,
				ps[i].reason ? ps[i].reason : "", ps[i].path);
			th = gil_recorder_threads(rec, i, &nt);
			named = false;
			for (k = 0; k < nt; k++)
				named |= th[k].mostly_in[0] != '\0';
			/* shares of the process's recorded time; "mostly in" names look-alike threads */
			if (nt)
				fprintf(stderr, "  %8s %-16s %8s %8s %8s%s   (of %.3fs recorded)\n",
					"tid", "name", "wait", "hold", "release",
					named ? "   mostly in" : "", (double)ps[i].wall_ns / 1e9);
			order = calloc(nt ? nt : 1, sizeof(*order));
			for (k = 0; order && k < nt; k++)
				order[k] = k;
			if (order) {
				sort_base = th;
				qsort(order, nt, sizeof(*order), by_wait);
			}
			rows = verbosity >= GIL_VERBOSE || nt <= SUMMARY_ROWS + 1 ? nt : SUMMARY_ROWS;
			for (j = 0; j < rows; j++) {
				k = order ? order[j] : j;
				fprintf(stderr, "  %8d %-16s %7.1f%% %7.1f%% %7.1f%%%s%s\n",
					(int)th[k].tid, th[k].name,
					pct(th[k].ns[GIL_KIND_TAKE], ps[i].wall_ns),
					pct(th[k].ns[GIL_KIND_HOLD], ps[i].wall_ns),
					pct(th[k].ns[GIL_KIND_DROP], ps[i].wall_ns), named ? "   " : "",
					!named ? "" : th[k].mostly_in[0] ? th[k].mostly_in : "-");
			}
			if (rows < nt)
				fprintf(stderr, "  ... and %zu more threads, waiting less (-v lists them; "
					"gil-convert --summary has them all)\n", nt - rows);
			free(order);
		}
	}
	for (i = 0; i < GIL_ARRAY_SIZE(closing_warnings); i++) {
		const struct closing_warning *w = &closing_warnings[i];
		uint64_t n = w->count(rec);

		if (n)
			gil_warning("%s%llu%s", w->before, (unsigned long long)n, w->after);
	}
}

/* Print the warnings of the targets from *@warned on (once each); @tty: clear the status line. */
static void warn_new_targets(struct gil_recorder *rec, size_t *warned, bool tty)
{
	static size_t skipped;

	for (; skipped < gil_recorder_nr_skipped(rec); skipped++) {
		if (tty)
			fprintf(stderr, "\r\033[K");
		gil_warning("%s", gil_recorder_skipped(rec, skipped));
	}
	for (; *warned < gil_recorder_nr_targets(rec); (*warned)++) {
		if (!gil_recorder_warning(rec, *warned))
			continue;
		if (tty)
			fprintf(stderr, "\r\033[K");
		gil_warning("%s", gil_recorder_warning(rec, *warned));
	}
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "duration", required_argument, NULL, 'd' },
		{ "output-dir", required_argument, NULL, 'o' },
		{ "mmap-pages", required_argument, NULL, 'm' },
		{ "cleanup", no_argument, NULL, 'C' },
		{ "as-root", no_argument, NULL, 'R' },
		{ "accelerator-only", no_argument, NULL, 'a' },
		{ "no-attribution", no_argument, NULL, 'N' },
		{ "native", no_argument, NULL, 'n' },
		{ "attribution", required_argument, NULL, 'A' },
		{ "no-debuginfod", no_argument, NULL, 'D' },
		{ "alert-hold", required_argument, NULL, 'H' },
		{ "alert-cmd", required_argument, NULL, 'X' },
		{ "metrics", required_argument, NULL, 'M' },
		{ "no-files", no_argument, NULL, 'F' },
		{ "live", no_argument, NULL, 'L' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct gil_options opts;
	struct gil_recorder *rec;
	struct sigaction sa;
	static pid_t *pids; /* static: a usage error returns without freeing it */
	size_t nr_pids = 0, warned = 0;
	bool cleanup = false, tty;
	int c, ret = 1, r, verbosity = GIL_NORMAL;
	double start, last_status = 0, last_t;
	uint64_t last_ev = 0;
	char *end, why[512];
	const char *alert_cmd = NULL, *metrics_spec = NULL;
	struct metrics_http *mh = NULL;
	struct live_view *lv = NULL;
	static struct alerts alerts;
	long pages, hold_ms = 0;

	gil_options_init(&opts);
	gil_msg_prog(PROG);
	while ((c = getopt_long(argc, argv, "+:ap:d:o:m:qvhV", longopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			free(pids);
			if (parse_pids(optarg, &pids, &nr_pids) < 0)
				return gil_usage_error("invalid --pid value '%s': give process ids separated by commas, e.g. --pid 1234,5678",
						 optarg);
			break;
		case 'd':
			errno = 0;
			opts.duration = strtod(optarg, &end);
			if (errno || end == optarg || *end || !isfinite(opts.duration) ||
			    (opts.duration <= 0 && opts.duration != -1) || opts.duration > 31536000)
				return gil_usage_error("invalid --duration value '%s': give seconds > 0 (at most a year), or -1 to record until Ctrl+C",
						 optarg);
			break;
		case 'o':
			if (!*optarg)
				return gil_usage_error("invalid --output-dir value '%s': give a directory", optarg);
			opts.output_dir = optarg;
			break;
		case 'm':
			errno = 0;
			pages = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || pages < 2 || pages > (1 << 20) ||
			    (pages & (pages - 1)))
				return gil_usage_error("invalid --mmap-pages value '%s': give a power of two from 2 to 1048576",
						 optarg);
			opts.ring_pages = (size_t)pages;
			break;
		case 'C':
			cleanup = true;
			break;
		case 'R':
			opts.command_as_root = true;
			break;
		case 'a':
			opts.accelerator_only = true;
			break;
		case 'N':
			opts.no_attribution = true;
			break;
		case 'n':
			opts.natives = true;
			break;
		case 'A':
			opts.no_attribution = !strcmp(optarg, "none");
			if (!strcmp(optarg, "fast") || opts.no_attribution)
				opts.attribution = GIL_ATTRIBUTION_FAST;
			else if (!strcmp(optarg, "full"))
				opts.attribution = GIL_ATTRIBUTION_FULL;
			else
				return gil_usage_error("invalid --attribution value '%s': give fast, full or none",
						 optarg);
			break;
		case 'D':
			opts.no_debuginfod = true;
			break;
		case 'H':
			errno = 0;
			hold_ms = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || hold_ms < 1 || hold_ms > 86400000)
				return gil_usage_error("invalid --alert-hold value '%s': give milliseconds from 1 to 86400000 (a day)",
						 optarg);
			break;
		case 'X':
			alert_cmd = optarg;
			break;
		case 'M':
			metrics_spec = optarg;
			break;
		case 'F':
			opts.no_files = true;
			break;
		case 'L':
			opts.live = true;
			break;
		case 'q':
			verbosity = GIL_QUIET;
			break;
		case 'v':
			verbosity = verbosity < GIL_NORMAL ? GIL_VERBOSE : verbosity + 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf(PROG " (giltrace) %s\n", gil_version());
#ifdef HAVE_LIBDW
			printf("features: libtracefs libtraceevent libelf json-c libdw");
#else
			printf("features: libtracefs libtraceevent libelf json-c");
#endif
#ifdef HAVE_LZMA
			printf(" lzma");
#endif
#ifdef HAVE_DEBUGINFOD
			printf(" debuginfod");
#endif
			printf("\n");
			return 0;
		case ':':
			return gil_usage_error("option '%s' needs a value", argv[optind - 1]);
		default:
			return gil_usage_error("unrecognized option '%s'", argv[optind - 1]);
		}
	}
	if (opts.accelerator_only && (nr_pids || optind < argc))
		return gil_usage_error("%s", "--accelerator-only selects among all processes: not with --pid or a command");
	if (opts.no_files && !metrics_spec && !hold_ms && !opts.live)
		return gil_usage_error("%s", "--no-files leaves nothing to show: give --metrics, --alert-hold or --live too");
	if (opts.live && !cleanup && live_view_check(why, sizeof(why)) < 0)
		return gil_usage_error("%s", why);
	if (opts.no_files && opts.output_dir)
		return gil_usage_error("%s", "--no-files writes no file: not with --output-dir");
	if (alert_cmd && !hold_ms)
		return gil_usage_error("%s", "--alert-cmd runs on the watchdog's alerts: give --alert-hold MS too");
	if (hold_ms) {
		if (alerts_init(&alerts, alert_cmd, opts.command_as_root, why, sizeof(why)) < 0)
			return gil_usage_error("%s", why);
		opts.alert_hold_ns = (uint64_t)hold_ms * 1000000;
		opts.on_alert = alerts_report;
		opts.alert_ctx = &alerts;
	}
	if (optind < argc) {
		if (nr_pids)
			return gil_usage_error("give either --pid or a command to run, not both (got '%s')",
					 argv[optind]);
		opts.command = &argv[optind];
	}

	if (metrics_spec && !cleanup) {
		/* bound now: a port in use is a usage error, before any probe */
		mh = metrics_http_bind(metrics_spec, why, sizeof(why));
		if (!mh)
			return gil_usage_error("%s", why);
		opts.metrics = true;
	}
	if (cleanup) {
		if (geteuid() != 0) {
			gil_msg("--cleanup needs root: run it with sudo");
			return 1;
		}
		r = gil_cleanup_stale();
		if (r < 0) {
			gil_msg("cleanup failed: %s", strerror(errno));
			return 1;
		}
		if (verbosity >= GIL_NORMAL)
			gil_msg("removed %d stale probe group(s)", r);
		return 0;
	}

	/*
	 * A debuginfod server that does not answer must not hold the recording up for the
	 * client's default 90 s; a download shows its progress on a terminal.
	 */
	setenv("DEBUGINFOD_TIMEOUT", "10", 0);
	if (verbosity >= GIL_NORMAL && isatty(STDERR_FILENO))
		setenv("DEBUGINFOD_PROGRESS", "1", 0);
	opts.pids = pids;
	opts.nr_pids = nr_pids;
	opts.verbosity = verbosity;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	/* A launched command's ptrace stops wake the loop at once (poll returns EINTR). */
	sa.sa_handler = on_child;
	sigaction(SIGCHLD, &sa, NULL);

	rec = gil_recorder_alloc(&opts);
	if (!rec) {
		gil_msg("%s", strerror(errno));
		metrics_http_stop(mh);
		free(pids);
		return 1;
	}
	if (mh && metrics_http_start(mh, rec, why, sizeof(why)) < 0) {
		gil_msg("%s", why);
		goto out;
	}
	if (gil_recorder_setup(rec) < 0) {
		gil_msg("%s", gil_recorder_error(rec));
		goto out;
	}
	if (got_signal) {
		ret = 0;
		goto out;
	}
	/*
	 * Drain ahead of the busy processes we trace: a starved recorder loses events (measured:
	 * 4 busy processes on 2 CPUs lost events in 5 of 6 runs at nice 0, in none of 12 at -10).
	 * After setup, so a launched command keeps the caller's priority.
	 */
	if (setpriority(PRIO_PROCESS, 0, -10) < 0 && verbosity >= GIL_VERBOSE)
		gil_msg("cannot raise priority: %s", strerror(errno));
	if (gil_recorder_start(rec) < 0) {
		gil_msg("%s", gil_recorder_error(rec));
		goto out;
	}
	if (verbosity >= GIL_NORMAL && opts.command) {
		fprintf(stderr, PROG ": recording the CPython processes of '%s'", opts.command[0]);
		if (opts.duration > 0)
			fprintf(stderr, " for %gs", opts.duration);
		fprintf(stderr, "\n");
	} else if (verbosity >= GIL_NORMAL) {
		fprintf(stderr, PROG ": recording %zu process(es)", gil_recorder_nr_targets(rec));
		if (!nr_pids && opts.accelerator_only)
			fprintf(stderr, " and any CPython that opens an accelerator");
		else if (!nr_pids)
			fprintf(stderr, " and any CPython that starts");
		if (opts.duration > 0)
			fprintf(stderr, " for %gs", opts.duration);
		fprintf(stderr, "; Ctrl+C to stop\n");
	}
	if (opts.live) {
		lv = live_view_start(why, sizeof(why));
		if (!lv) {
			gil_msg("%s", why);
			goto out;
		}
	}
	/* the status line only where it is alone on the terminal */
	tty = verbosity >= GIL_NORMAL && isatty(STDERR_FILENO) && !lv;
	alerts.tty = tty;
	warn_new_targets(rec, &warned, false);
	start = last_t = now_s();
	do {
		r = gil_recorder_poll(rec, 100);
		/* processes that started later (launch mode, or no --pid) are warned about too */
		warn_new_targets(rec, &warned, tty);
		alerts_reap(&alerts);
		if (tty && now_s() - last_status >= 0.5) {
			status_line(rec, start, opts.duration, &last_ev, &last_t);
			last_status = now_s();
		}
		if (lv && r > 0 && !live_view_step(lv, rec)) {
			gil_recorder_set_reason(rec, "stopped");
			break;
		}
	} while (r > 0 && !got_signal);
	live_view_end(lv); /* the terminal as it was, and the messages it held */
	lv = NULL;
	if (tty)
		fprintf(stderr, "\r\033[K");
	if (r < 0)
		gil_msg("%s", gil_recorder_error(rec));
	ret = r < 0 ? 1 : 0;
	if (r > 0 && got_signal)
		gil_recorder_set_reason(rec, "signal");
	if (gil_recorder_finish(rec) < 0) {
		gil_msg("%s", gil_recorder_error(rec));
		ret = 1;
	}
	summary(rec, verbosity);
	if (hold_ms) {
		if (verbosity >= GIL_NORMAL)
			gil_msg("%lu hold(s) of the GIL longer than %ld ms%s", alerts.holds, hold_ms,
				alerts.holds ? " (alerts above; listed in each file's footer)" : "");
		alerts_finish(&alerts, 5000);
	}
	if (opts.command) {
		bool running = false;
		int status = 0;
		pid_t child = gil_recorder_command(rec, &running, &status);

		if (!gil_recorder_nr_targets(rec) && verbosity >= GIL_NORMAL && ret == 0)
			gil_warning("'%s' ran no CPython with a GIL: nothing was recorded",
				opts.command[0]);
		if (running && got_signal) {
			status = gil_recorder_command_wait(rec);
			running = false;
		}
		if (running) {
			if (verbosity >= GIL_NORMAL)
				gil_msg("recording done; '%s' (pid %d) goes on",
					opts.command[0], (int)child);
		} else if (ret == 0) {
			ret = exit_code_of(status);
		}
	}
out:
	live_view_end(lv);
	metrics_http_stop(mh); /* its thread reads rec */
	gil_recorder_free(rec);
	free(pids);
	return ret;
}
