/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Statistics over recordings, computed while gil-convert streams them (memory bounded by
 * threads, functions and a time window, not by the recording's length):
 *  - per process and thread: wall, waiting / holding / releasing time, shares and counts, wait
 *    and hold percentiles (log histograms, 1/8 octave), forced and voluntary releases;
 *  - GIL utilization and waiters over time (bins that double their width as time goes on);
 *  - the hand-off matrix: who took the GIL after whom, how often, how long the taker waited;
 *  - Python functions by held time, by others' waiting while they held, by releases;
 *  - native functions (the C code at a C API transition) the same way, per process;
 *  - the longest holds, with their time on the trace's axis.
 * Lifecycle: alloc -> (begin -> native_def... -> thread/function_def/interval/exit... -> end)...
 * -> json / text / svg -> free. stats.c takes the records in, hist.c, functions.c, natives.c,
 * handoff.c and longest.c count them (stats-priv.h), bins.c spreads times over bins (bins.h);
 * the reports read this struct only: stats-json.c (JSON), summary.c (text), svg.c (picture),
 * report.c (where they go).
 */
#ifndef GIL_STATS_H
#define GIL_STATS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <json-c/json.h>

#include "bins.h"
#include "clockmap.h"
#include "conv.h"
#include "inputs.h"
#include "common/tidindex.h"
#include "format/fntab.h"
#include "format/rawfile.h"

struct stats;
struct stats_long_hold;
struct stats_thread;
struct stats_proc;
struct steps;

/** stats_alloc - empty statistics; waits are matched against holds @window_ns back at most. */
struct stats *stats_alloc(int64_t window_ns);

/**
 * stats_begin - the records that follow are @ci's, placed on the output axis by @cm (already
 * set up for @ci). Its recorded span comes from the header and footer when present.
 */
int stats_begin(struct stats *s, const struct conv_input *ci, const struct clockmap *cm);

/** stats_thread - a thread's recorded name. */
int stats_thread(struct stats *s, int32_t tid, const char *name);

/**
 * stats_function_def - a function definition (GIL_REC_FUNCTION) of the current input: the
 * intervals that follow name it by its id. Unusable ones are ignored. Returns 0, -1 on ENOMEM.
 */
int stats_function_def(struct stats *s, const struct gil_record *rec);

/**
 * stats_native_def - native caller @id of the current input is @name (GIL_REC_NATIVE): read
 * ahead of the intervals that carry it, which may come before it in the file. The first name
 * of an id is kept. Returns 0, -1 on ENOMEM.
 */
int stats_native_def(struct stats *s, int64_t id, const char *name);

/**
 * stats_native - what slice args say of @native (an interval's, not 0) of the current input:
 * "interpreter" for GIL_NATIVE_OWN, the call site's name, or "unnamed native #N" (in @buf)
 * for an id no record named.
 */
const char *stats_native(const struct stats *s, uint32_t native, char *buf, size_t len);

/** stats_interval - interval @iv, at @ts for @dur on the output axis (mapped and clipped). */
int stats_interval(struct stats *s, const struct gil_interval *iv, int64_t ts, int64_t dur);

/** stats_exit - thread @tid of the current process exited. */
void stats_exit(struct stats *s, int32_t tid);

/** stats_end - the current process is complete. */
int stats_end(struct stats *s);

/**
 * stats_function - the function @id of the current input names (for slice args): its name
 * (or "<why>" when unreadable), file (NULL if none) and line (-1 if none). False when unknown.
 */
bool stats_function(const struct stats *s, uint32_t id, const char **name, const char **file,
		    int *line);

/** stats_json - every number, as gil-convert writes them (otherData.statistics, --summary-json). */
struct json_object *stats_json(const struct stats *s);

/** stats_write_json - stats_json() pretty-printed (--summary-json). Returns 0 or -1 (errno). */
int stats_write_json(const struct stats *s, FILE *f);

/** stats_write_text - the tables of --summary. Returns 0 or -1 (errno). */
int stats_write_text(const struct stats *s, FILE *f);

/** stats_write_svg - one picture: utilization and per-thread wait/hold over time. */
int stats_write_svg(const struct stats *s, FILE *f);

/**
 * stats_outputs - what @opt asks for: --summary (text, standard output), --summary-json FILE,
 * --svg FILE. Returns 0, or -1 with a reason in @err.
 */
int stats_outputs(const struct stats *s, const struct conv_options *opt, char *err, size_t errlen);

/** stats_reason_name - "voluntary", "forced" or NULL. */
const char *stats_reason_name(int reason);

/**
 * stats_set_steps - per-step statistics over @st's steps (sealed), for the intervals that
 * follow; @s owns @st from here (freed by stats_free).
 */
void stats_set_steps(struct stats *s, struct steps *st);

/** stats_free - release everything stats_alloc() and the feeding functions allocated. */
void stats_free(struct stats *s);

/*
 * stats_top_functions - indices into ->fns of up to @max functions, best first by @key: 0 held
 * time, 1 others' waiting while they held, 2 releases. Returns how many.
 */
size_t stats_top_functions(const struct stats *s, int key, size_t *out, size_t max);

/** stats_longest - the longest holds, longest first, into @out (STATS_TOP). Returns how many. */
size_t stats_longest(const struct stats *s, struct stats_long_hold *out);

/**
 * stats_thread_top_fn - the function thread @t waited and held the GIL in the longest (an
 * index into ->fns), and that time's share of its attributed wait + hold in *@share. -1: none.
 */
long stats_thread_top_fn(const struct stats_thread *t, double *share);

/**
 * stats_each_thread - call @fn for every thread of the current process (between stats_begin and
 * stats_end) with its recorded name (NULL if none), the display name of the function it was
 * mostly in (NULL without one) and its native entry (stats_thread_native, NULL for most).
 * Stops at, and returns, the first non-zero return.
 */
int stats_each_thread(const struct stats *s,
		      int (*fn)(void *ctx, int32_t tid, const char *name, const char *mostly_in,
				const char *native),
		      void *ctx);

/**
 * stats_thread_native - for a thread that never ran a Python function the recorder could name
 * but took the GIL from native code (a C thread entering Python through PyGILState_Ensure),
 * the native function of its first wait or hold that has one: what names it. NULL otherwise.
 */
const char *stats_thread_native(const struct stats *s, const struct stats_thread *t);

/*
 * stats_top_natives - indices into ->natives of up to @max native functions, best first by
 * @key as stats_top_functions(): 0 held time, 1 others' waiting, 2 releases. Returns how many.
 */
size_t stats_top_natives(const struct stats *s, int key, size_t *out, size_t max);

/** stats_bins_used - time bins of @p in use: up to the last one its recorded span reaches. */
size_t stats_bins_used(const struct stats_proc *p);

/** stats_thread_name - the recorded name of thread @tid of process @proc, or NULL. */
const char *stats_thread_name(const struct stats *s, size_t proc, int32_t tid);

/* @hi - @lo, saturated: damaged recordings may put times near 2^62 on either side. */
static inline int64_t stats_span(int64_t lo, int64_t hi)
{
	__int128 d = (__int128)hi - lo;

	return d <= 0 ? 0 : d > INT64_MAX ? INT64_MAX : (int64_t)d;
}

struct stats_hist;
struct stats_handoff;

/** stats_hist_q - the value at quantile @q (0..1) of @h: the top of its bucket, at most the max. */
uint64_t stats_hist_q(const struct stats_hist *h, double q);

/**
 * stats_handoffs_sorted - a malloc'd copy of @p's hand-offs, most frequent first (then by
 * giver, taker); NULL when there are none or on ENOMEM.
 */
struct stats_handoff *stats_handoffs_sorted(const struct stats_proc *p);

/* ---- what the renderers read (stats.c fills it) ---- */

#define STATS_HBUCKETS 496 /* log histogram: 16 exact, then 8 per octave up to 2^64 */
#define STATS_BIN_THREADS 128 /* threads of a process that get their own time bins */
#define STATS_MAX_THREADS 4096 /* threads of a process with their own row; others folded */
#define STATS_TOP 20 /* entries in the top lists */
#define STATS_THREAD_FNS 8 /* functions tracked per thread for its "mostly in" */
#define STATS_THREAD_INTERPS 4 /* interpreters a thread's time is split by (3.12+) */

struct stats_hist {
	uint32_t *b; /* STATS_HBUCKETS counts, allocated at the first value */
	uint64_t n, max;
};

struct stats_thread {
	int32_t tid; /* -1: threads folded together */
	char *name;
	int64_t first, last; /* first start, last end */
	bool seen;
	uint64_t ns[3], count[3]; /* per enum gil_kind */
	uint64_t released[3], released_ns[3]; /* releases by enum gil_reason: count, ns */
	uint64_t held_by_reason[3]; /* hold ns by the reason of the release that ended it */
	uint64_t uncertain_ns; /* in intervals flagged resync or lost: around a release not seen,
				  or while the kernel lost events; their split is not known */
	struct stats_hist wait, hold;
	int64_t *bins; /* 2 * STATS_BINS: wait ns then hold ns per bin; NULL: no bins */
	bool exited;
	int64_t last_end; /* end of its last interval */
	/*
	 * The functions it waited and held the GIL in the longest (global index + 1, 0: free
	 * slot), kept by space-saving: exact while it runs at most STATS_THREAD_FNS functions,
	 * an upper bound after; what names the thread when the OS does not ("mostly in").
	 */
	uint32_t top_fn[STATS_THREAD_FNS];
	uint64_t top_ns[STATS_THREAD_FNS];
	uint64_t fn_ns; /* wait + hold ns with a function */
	/*
	 * Its time by the interpreter it ran in (3.12+: a thread may enter several, on one GIL
	 * or on theirs): the first STATS_THREAD_INTERPS, per enum gil_kind; later ones are in
	 * its totals only (interps_folded)
	 */
	uint32_t interp[STATS_THREAD_INTERPS];
	uint64_t interp_ns[STATS_THREAD_INTERPS][3];
	uint8_t nr_interps;
	bool interps_folded;
	bool py_fn; /* some interval named a Python function (a readable one) */
	uint32_t native_entry; /* the native function of its first wait or hold with one: + 1 */
};

struct stats_handoff {
	int32_t from, to;
	uint64_t count, wait_ns;
};

struct stats_hold {
	int64_t start, end;
	uint32_t fn; /* global function index + 1, 0: none */
	uint32_t native; /* native function index + 1, 0: none (or the interpreter's own) */
	int32_t tid;
};

struct stats_proc {
	int64_t pid, os_pid, rank;
	/*
	 * Which GIL (3.12+): a process whose subinterpreters have GILs of their own is one
	 * entry per GIL, each GIL's (the id of the interpreter it is of) after the main one's
	 */
	uint32_t gil;
	bool gils; /* the process has several: this entry is one of them */
	char *label, *cmdline, *path;
	int64_t lo, hi; /* recorded span on the output axis */
	bool have_lo, have_hi;
	int64_t seen_lo, seen_hi; /* span of the intervals */
	bool seen;
	bool attributed; /* its intervals carry functions */
	struct stats_thread *threads;
	size_t nr_threads, cap_threads;
	struct gil_tidindex tindex; /* tid -> threads[] */
	struct stats_thread other; /* folded threads */
	bool has_other;
	uint64_t ns[3], count[3];
	struct stats_hist wait, hold;
	/* time bins: [origin + i * width, + width) */
	int64_t origin, width;
	bool bins_set;
	int64_t *util; /* hold ns per bin */
	int64_t *waiters; /* wait ns per bin */
	/* hand-offs */
	struct stats_handoff *handoffs;
	size_t nr_handoffs, cap_handoffs;
	uint32_t *hindex;
	size_t hindex_cap;
	bool handoffs_folded; /* past the cap: later pairs were not kept */
	uint64_t handoffs_total, handoffs_unknown;
	/* recent holds (ring), for waits and hand-offs */
	struct stats_hold *ring;
	size_t ring_cap, ring_head, ring_len;
	uint64_t late_waits; /* waits reaching further back than the window */
	uint32_t *fnmap; /* this input's function id -> global index + 1 */
	size_t fnmap_cap;
	/* this input's native call sites (natives.c): id -> sites[] index + 1, until stats_end */
	uint32_t *natmap;
	size_t natmap_cap;
	struct stats_site {
		char *name; /* "module!symbol+0xoff" as the record says */
		uint32_t fn; /* its native function: index + 1 into stats->natives */
	} *sites;
	size_t nr_sites, cap_sites;
	/* the watchdog's long holds (the footer's "alerts"), the longest first after stats_end */
	bool has_alerts;
	uint64_t alert_hold_ns, alert_count;
	struct stats_alert {
		int32_t tid;
		int64_t start, dur; /* on the output axis */
		uint32_t fn; /* the file's function id; after stats_end a global index + 1 */
		uint32_t waiters;
	} *alerts;
	size_t nr_alerts;
};

/* A function of the recordings: its strings are the interner's (format/fntab.h), by its id. */
struct stats_fn {
	const char *name, *file; /* NULL when not read */
	int line;
	const char *why; /* why unreadable, or NULL */
	char *display; /* name or "<why>" */
	uint64_t holds, held_ns, releases, forced, voluntary, waits, wait_ns, others_wait_ns;
};

/*
 * A native function of one process: its call sites' names without +0xoff, so that they add up
 * (module+0xoff, without a symbol, is kept whole: nothing says which function it is in).
 */
struct stats_native {
	const char *name; /* the interner's (stats->natset) */
	size_t proc; /* index into procs: the process's main entry */
	uint64_t holds, held_ns, others_wait_ns, releases, release_ns;
};

struct stats_long_hold {
	int64_t dur, ts; /* output axis */
	size_t proc; /* index into procs */
	int32_t tid;
	uint32_t fn; /* global index + 1, 0: none */
	uint8_t reason;
	uint32_t flags;
};

/* The share of bin @i of @v that was busy (hold or wait ns over the bin's width). */
static inline double stats_bin_share(const int64_t *v, int64_t width, size_t i)
{
	return width > 0 ? (double)v[i] / (double)width : 0.0;
}

/* First start to last end of thread @t; 0 when it has no interval. */
static inline int64_t stats_thread_wall(const struct stats_thread *t)
{
	return t->seen ? stats_span(t->first, t->last) : 0;
}

/* The recorded span of process @p; 0 when unknown. */
static inline int64_t stats_proc_wall(const struct stats_proc *p)
{
	return p->have_hi && p->have_lo ? stats_span(p->lo, p->hi) : 0;
}

struct stats {
	int64_t window;
	struct stats_proc *procs;
	size_t nr_procs, cap_procs;
	struct stats_proc *cur; /* the process being read: its main GIL's entry */
	size_t cur_first; /* its index; the entries of its other GILs follow it */
	struct gil_fnset *fnset; /* the functions of all inputs: global index + 1 is the id */
	struct stats_fn *fns; /* fns[id - 1] */
	size_t nr_fns, cap_fns;
	struct gil_fnset *natset; /* native functions by (name, process index as its line) */
	struct stats_native *natives; /* natives[id - 1] */
	size_t nr_natives, cap_natives;
	/* intervals by their native caller: not read, the interpreter's own, native code */
	uint64_t native_ivs[3];
	struct stats_long_hold longest[STATS_TOP]; /* min-heap by dur */
	size_t nr_longest;
	struct steps *steps; /* the profiler's steps (steps.h), or NULL */
};

#endif /* GIL_STATS_H */
