/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * giltrace: record when each CPython thread waits for, holds and releases the GIL.
 *
 * Two levels of API:
 *  - gil_trace_record_start() / gil_trace_record_stop(): the reference tool's names; record on a
 *    background thread of the calling process.
 *  - struct gil_recorder: the lifecycle the tools use, in libtracefs's words:
 *    alloc (no side effect) -> setup (creates probes) -> start -> poll ... -> stop -> finish
 *    (removes probes, completes files) -> free.
 */
#ifndef GILTRACE_H
#define GILTRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GILTRACE_FORMAT_VERSION 1

/* Kinds of interval in a recording. */
enum gil_kind {
	GIL_KIND_TAKE = 0, /* take_gil entry -> return: waiting for the GIL */
	GIL_KIND_HOLD = 1, /* take_gil return -> next drop_gil entry: holding it */
	GIL_KIND_DROP = 2, /* drop_gil entry -> return: releasing it */
};

/* Interval flags (bit set), as stored in recordings. */
enum gil_flag {
	GIL_F_BEGIN_UNKNOWN = 1 << 0, /* began before the recording: start is the recording start */
	GIL_F_TRUNCATED = 1 << 1, /* end not observed: closed at the next event, exit or end */
	GIL_F_LOST = 1 << 2, /* the kernel lost events while it was open: may hide transitions */
	GIL_F_RESYNC = 1 << 3, /* event order was inconsistent here; state resynchronized */
};

/* Why a thread let the GIL go (attribution; intervals' reason element in recordings). */
enum gil_reason {
	GIL_REASON_UNKNOWN = 0, /* not recorded (attribution off, unreadable, or not a release) */
	GIL_REASON_VOLUNTARY = 1, /* no drop request was pending: I/O, sleep, C extension, ctypes */
	GIL_REASON_FORCED = 2, /* a drop request was pending: the switch interval, another thread */
};

/* Verbosity, shared with libtracefs/libtraceevent's log level. */
enum gil_verbosity {
	GIL_QUIET = -1,
	GIL_NORMAL = 0,
	GIL_VERBOSE = 1,
	GIL_DEBUG = 2,
};

struct gil_recorder;

/*
 * A hold longer than gil_options.alert_hold_ns (the watchdog): reported once when an open
 * hold passes the threshold, again each time it doubles while it lasts, and once when it ends.
 * Strings are valid during the callback only.
 */
struct gil_alert {
	pid_t pid;
	int rank;
	const char *comm; /* the process's */
	pid_t tid;
	const char *thread; /* the thread's name, "" when not known */
	/* the Python function it held the GIL in (still open: the one it took it in), "" none */
	const char *function;
	uint64_t start_ns; /* when the hold began, on the recording clock */
	int64_t start_realtime_ns; /* the same on CLOCK_REALTIME */
	uint64_t held_ns; /* how long it has held (open) or held (ended) the GIL */
	uint32_t waiters; /* threads waiting for the GIL meanwhile (most seen at once) */
	bool open; /* true: it still holds the GIL; false: the hold ended */
	bool first; /* the first report of this hold (false: it was reported while open) */
};

typedef void (*gil_alert_fn)(void *ctx, const struct gil_alert *alert);

/* What a recording covers; fill with gil_options_init(), then set fields. */
struct gil_options {
	const pid_t *pids; /* targets; NULL or nr_pids == 0: every CPython process */
	size_t nr_pids;
	double duration; /* seconds; < 0: until gil_recorder_stop() or all targets exit */
	const char *output_dir; /* NULL: $SYSTRACE_DUMP_PATH/GIL, else /home/sysTrace/GIL */
	size_t ring_pages; /* per-CPU ring size in pages (power of two); 0: default */
	int verbosity; /* enum gil_verbosity */
	char *const *command; /* launch this (argv, NULL-terminated) and record its CPythons */
	bool command_as_root; /* under sudo, keep root for the command (default: SUDO_USER) */
	bool accelerator_only; /* with no pids: only processes with an accelerator device open */
	bool no_attribution; /* do not read the Python function and release reason at each hit */
	bool no_debuginfod; /* never ask DEBUGINFOD_URLS' servers for a missing debug file */
	/*
	 * enum gil_attribution_mode: what the probes read when attribution is on. FAST (0, the
	 * default) reads the code object's address at drop_gil entries only, and the recorder
	 * reads the function's name, file and line from the process's memory once per object; a
	 * wait takes the function its thread released in. FULL reads name, file and line in the
	 * probe at every take_gil and drop_gil entry: about 1.4x the probes' cost.
	 */
	int attribution;
	/*
	 * The watchdog: a hold longer than this (ns; 0: off) is counted in the file's footer
	 * ("alerts") and, with @on_alert, reported to it (from gil_recorder_poll's thread).
	 */
	uint64_t alert_hold_ns;
	gil_alert_fn on_alert;
	void *alert_ctx;
	/* keep counters for gil_recorder_metrics() (Prometheus's text format) */
	bool metrics;
	/* write no recording: no output directory, no file (metrics or alerts only) */
	bool no_files;
	/* keep the figures of each second for gil_recorder_live() (gil-record --live) */
	bool live;
	/*
	 * read the native caller of each transition made through the C API (the code that
	 * called PyEval_SaveThread, PyGILState_Ensure...): the take_gil and drop_gil entries read
	 * a window of stack words, about 1.3x the probes' cost on a release-heavy workload
	 */
	bool natives;
};

enum gil_attribution_mode {
	GIL_ATTRIBUTION_FAST = 0,
	GIL_ATTRIBUTION_FULL = 1,
};

/* Per-process result, valid after gil_recorder_finish(). */
struct gil_process_stats {
	pid_t pid;
	int rank;
	const char *path; /* file written */
	uint64_t events;
	uint64_t intervals;
	uint64_t threads;
	uint64_t wall_ns; /* how long this process was recorded */
	uint64_t ns[3]; /* total ns per enum gil_kind, over all threads */
	const char *reason; /* why its recording ended: "duration", "signal", "exited", ... */
	uint64_t steps; /* step marks written (gil_mark_step); 0 when it was not probed */
};

/* Per-thread result, valid after gil_recorder_finish(). */
struct gil_thread_summary {
	pid_t tid;
	char name[17]; /* comm */
	uint64_t wall_ns; /* first to last event seen of this thread */
	uint64_t ns[3]; /* per enum gil_kind */
	uint64_t count[3];
	/*
	 * The Python function it waited for and held the GIL in longest: its name (qualified
	 * from 3.11), "<why>" when unreadable, "" without attribution. It tells apart threads
	 * the OS names alike.
	 */
	char mostly_in[96];
};

void gil_options_init(struct gil_options *opts);

/*
 * The live view (gil_options.live): each process's and thread's figures for the last complete
 * second of the recording, [start + second s, start + second + 1 s) on the recording clock
 * (start: the header's start_ns of the files of processes recorded from the start), exact: every
 * interval that overlaps it, the ones still open included, clipped to it. Since-start figures
 * run from when the process (thread) was first recorded to the recorder's last round.
 */
struct gil_live_thread {
	pid_t tid;
	char name[17]; /* comm */
	/* the Python function it held the GIL longest in, that second (else since start); "" */
	char function[96];
	uint64_t ns[3]; /* that second, per enum gil_kind */
	uint64_t total_ns[3]; /* since start */
	uint64_t wall_ns; /* since start: from when it was first seen to the last round */
	uint32_t takes; /* waits that ended that second */
	uint32_t forced; /* releases asked for by another thread that ended that second */
	/*
	 * the 99th percentile of its waits for the GIL: of those that ended that second and the one
	 * still open at its end, and since start; within 3% (a histogram of 16 buckets per power of
	 * two); 0 when it did not wait
	 */
	uint64_t p99_wait_ns, total_p99_wait_ns;
	bool exited; /* it exited that second (shown one last time) */
};

struct gil_live_process {
	pid_t pid;
	int rank;
	char comm[17];
	uint64_t held_ns, total_held_ns; /* the GIL held: that second; since start */
	uint64_t wait_ns, total_wait_ns; /* summed over threads: over the wall, average waiters */
	uint64_t wall_ns; /* since start, to the last round */
	uint64_t lost, total_lost; /* events the kernel lost for it: that second; since start */
	struct gil_live_thread *threads; /* in order of first appearance */
	size_t nr_threads;
};

struct gil_live {
	uint64_t second; /* the second shown, counted from the recording's start (0: the first) */
	uint64_t events, lost; /* the recorder's, since start */
	uint64_t drain_lag_ns; /* how far behind now the last round was */
	struct gil_live_process *processes; /* the processes recorded now */
	size_t nr_processes;
};

/**
 * gil_recorder_live - with gil_options.live: the figures of the last complete second, from
 * gil_recorder_poll()'s thread. A malloc'd snapshot to free with gil_live_free(), or NULL
 * (errno ENOENT before the first second is complete or without gil_options.live, ENOMEM).
 */
struct gil_live *gil_recorder_live(struct gil_recorder *rec);

void gil_live_free(struct gil_live *live);

/**
 * gil_recorder_metrics - with gil_options.metrics: the counters in Prometheus's text exposition
 * format (version 0.0.4), as of the last round of gil_recorder_poll(). Safe to call from any
 * thread until gil_recorder_free(). Returns a malloc'd string (*@len its length), or NULL
 * (errno ENOENT before the first round or without gil_options.metrics, ENOMEM).
 */
char *gil_recorder_metrics(struct gil_recorder *rec, size_t *len);

/**
 * gil_recorder_alloc - build a recorder for @opts; touches nothing in the kernel.
 * Returns NULL with errno on failure. Pair with gil_recorder_free().
 */
struct gil_recorder *gil_recorder_alloc(const struct gil_options *opts);

/**
 * gil_recorder_setup - find the GIL functions of each target, create the probe group, open the
 * perf events and the output files. On failure returns -1, leaves no probe behind, and
 * gil_recorder_error() says why. Pair with gil_recorder_finish().
 */
int gil_recorder_setup(struct gil_recorder *rec);

/** gil_recorder_start - enable the events: recording begins. Pair with gil_recorder_stop(). */
int gil_recorder_start(struct gil_recorder *rec);

/**
 * gil_recorder_poll - wait up to @timeout_ms for events and process them.
 * Returns 1 while recording should go on, 0 when it is over (duration reached, all targets
 * exited), -1 on error (errno, gil_recorder_error()). EINTR returns 1: look at your flags.
 */
int gil_recorder_poll(struct gil_recorder *rec, int timeout_ms);

/** gil_recorder_stop - disable the events; safe to call more than once and from any state. */
int gil_recorder_stop(struct gil_recorder *rec);

/**
 * gil_recorder_finish - drain what is left, close intervals, write the file footers, close the
 * events and remove the probe group. Runs the same teardown on every path. Returns -1 if a
 * file could not be completed (the others still are).
 */
int gil_recorder_finish(struct gil_recorder *rec);

/**
 * gil_recorder_set_reason - why the recording ends, for the file footers: a static string such
 * as "signal". Without it an explicit stop is "stopped"; duration and exits set their own.
 */
void gil_recorder_set_reason(struct gil_recorder *rec, const char *reason);

/**
 * gil_recorder_name_thread - name thread @tid of recorded process @pid in its file from now on
 * (a thread record, as when the thread renamed itself): the name the program knows it by, such
 * as Python's threading name, which CPython before 3.14 does not give the OS. Returns 0, or -1
 * with errno ESRCH when @pid is not being recorded (or its recording ended), EINVAL for an
 * empty name.
 */
int gil_recorder_name_thread(struct gil_recorder *rec, pid_t pid, pid_t tid, const char *name);

/** gil_recorder_free - release the memory of @rec (calls finish first if needed). */
void gil_recorder_free(struct gil_recorder *rec);

/** gil_recorder_error - the last error as one line for the user, or "" if none. */
const char *gil_recorder_error(const struct gil_recorder *rec);

/** gil_recorder_stats - per-process results; *nr set to their number. */
const struct gil_process_stats *gil_recorder_stats(const struct gil_recorder *rec, size_t *nr);

/**
 * gil_recorder_threads - per-thread results of process number @proc (index into
 * gil_recorder_stats()); *nr set to their number. Threads beyond the first 4096 that exited
 * are summed into one entry with tid -1.
 */
const struct gil_thread_summary *gil_recorder_threads(const struct gil_recorder *rec, size_t proc,
						       size_t *nr);

/**
 * gil_recorder_command - the launched command: its pid, and whether it still runs. When it
 * ended, *@status is its wait status. Returns its pid, or 0 without a command.
 */
pid_t gil_recorder_command(struct gil_recorder *rec, bool *running, int *status);

/** gil_recorder_command_wait - wait for the launched command to end; its wait status. */
int gil_recorder_command_wait(struct gil_recorder *rec);

/** gil_recorder_lost - events the kernel reported lost so far, over all CPUs. */
uint64_t gil_recorder_lost(const struct gil_recorder *rec);

/** gil_recorder_throttled - times the kernel reported throttling the events so far. */
uint64_t gil_recorder_throttled(const struct gil_recorder *rec);

/**
 * gil_recorder_unguarded_exits - threads of forked processes that exited on a kernel before
 * Linux 6.12, where such an exit can take the process's probes away and its recording then
 * stops early (footer: unguarded_exits). Always 0 on 6.12 and later.
 */
uint64_t gil_recorder_unguarded_exits(const struct gil_recorder *rec);

/** gil_recorder_events - events received so far. */
uint64_t gil_recorder_events(const struct gil_recorder *rec);

/*
 * Releases that were not seen, over all processes: a thread entered take_gil while, by the
 * events, it still held the GIL (an inlined drop_gil no probe covers, or lost events). Valid
 * after gil_recorder_finish(); each file's footer has its own count.
 */
uint64_t gil_recorder_releases_not_seen(const struct gil_recorder *rec);

/*
 * Events left without a function because their process exited before the recorder read the
 * code object the probe pointed at (--attribution=fast; their intervals name the reason).
 */
uint64_t gil_recorder_unnamed_exited(const struct gil_recorder *rec);

/** gil_recorder_nr_targets - processes being recorded (alive or finished). */
size_t gil_recorder_nr_targets(const struct gil_recorder *rec);

/**
 * gil_recorder_warning - one line about process number @i (0 .. gil_recorder_nr_targets() - 1)
 * that its user must read, e.g. "process 42: releases are approximate: ... apt-get install
 * python3.11-dbg"; NULL when there is none. Valid until gil_recorder_free().
 */
const char *gil_recorder_warning(const struct gil_recorder *rec, size_t i);

/**
 * gil_recorder_functions_cut - function records whose name (past 256 bytes) or file (past 1024)
 * was cut, or that came past 32768 distinct functions (recorded as "too many distinct
 * functions"): bounds a traced process cannot push the recorder past. The files' footers
 * hold the detail (function_caps).
 */
uint64_t gil_recorder_functions_cut(const struct gil_recorder *rec);

/**
 * gil_recorder_nr_skipped - processes that were to be recorded but could not be (a --pid of
 * several, a process of all-process mode): each has one line in gil_recorder_skipped().
 */
size_t gil_recorder_nr_skipped(const struct gil_recorder *rec);

/**
 * gil_recorder_skipped - line @i (0 .. gil_recorder_nr_skipped() - 1): "process N: why; not
 * recorded". Valid until gil_recorder_free().
 */
const char *gil_recorder_skipped(const struct gil_recorder *rec, size_t i);

/**
 * gil_cleanup_stale - remove probe groups left by recorders that no longer run (killed with
 * SIGKILL), and only those. Returns the number of groups removed, or -1.
 */
int gil_cleanup_stale(void);

/**
 * gil_trace_record_start - record @pids (NULL/0: every CPython process) for @duration seconds
 * (-1: until gil_trace_record_stop()) on a background thread of this process.
 * Returns 0, or -1 with the reason in gil_trace_record_error().
 */
int gil_trace_record_start(const pid_t *pids, size_t nr_pids, double duration);

/** gil_trace_record_start_opts - the same with every option (output_dir, ring size...). */
int gil_trace_record_start_opts(const struct gil_options *opts);

/** gil_trace_record_stop - stop the background recording, finish its files. 0 or -1. */
int gil_trace_record_stop(void);

/**
 * gil_mark_step - a training step ends here: call it once per step, at the step's end, from the
 * training loop (gil_trace_record.mark_step() in Python). It does nothing: a gil-record that
 * records this process probes it (one uprobe hit per call) and writes the mark into the file,
 * and gil-convert divides the statistics by the steps the marks close. @step is the step's
 * number, or -1 to have them counted from 0. Any process that maps libgiltrace can call it,
 * recorded or not, root or not; nothing is read but @step.
 */
void gil_mark_step(long long step);

/**
 * gil_trace_record_name_thread - while a recording started here runs, name thread @tid of this
 * process @name in this process's file (Python's threading names; the gil_trace_record module
 * does it for every thread alive at start and at stop). Thread-safe; written by the recording
 * thread within 100 ms, or at stop. Returns 0, or -1 with errno (ESRCH: no recording is
 * running; EINVAL: bad tid or empty name; EAGAIN: 4096 names already wait, as after the
 * duration ended the recording) and gil_trace_record_error() set.
 */
int gil_trace_record_name_thread(pid_t tid, const char *name);

/** gil_trace_record_error - why the last start, stop or name_thread call failed. */
const char *gil_trace_record_error(void);

/** gil_version - the library's version string. */
const char *gil_version(void);

#ifdef __cplusplus
}
#endif

#endif /* GILTRACE_H */
