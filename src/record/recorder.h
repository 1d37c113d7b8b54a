/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Private to src/record: the recorder's state, shared by the files that make up its stages'
 * glue. Only recorder.c's lifecycle (include/giltrace.h) is public.
 */
#ifndef GIL_RECORDER_H
#define GIL_RECORDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "attrib/attrib.h"
#include "clock.h"
#include "coderead.h"
#include "common/util.h"
#include "decode.h"
#include "elf/elf.h"
#include "elf/symbols.h"
#include "format/rawfile.h"
#include "giltrace.h"
#include "launch.h"
#include "ordered.h"
#include "pairing.h"
#include "probes.h"
#include "procs.h"
#include "ring.h"
#include "sink.h"

#define DEFAULT_RING_PAGES 1024 /* 4 MiB per CPU: ~0.4 s of the busiest workload measured */
#define ROUND_MS 50 /* rings are drained at least this often */
#define ROUND_NEW_MS 2 /* and this often while code objects are new (--attribution=fast) */
#define NEW_CODE_NS 250000000ull /* for this long after one was first read or found changed */
#define FRESH_NS 10000000000ull /* and after a target starts, until a code object is read */
#define RESCAN_NS 1000000000ull /* all-process mode looks for new processes every second */
#define MAX_NAMES 4096

enum rec_state { R_ALLOC, R_SETUP, R_STARTED, R_STOPPED, R_FINISHED };

enum tgt_state { T_LIVE, T_EXITING, T_DONE };

/* How targets are found (modes.c; doc/architecture.md, "Start modes"). */
enum rec_mode {
	REC_MODE_PIDS, /* gil_options.pids: those processes */
	REC_MODE_ALL, /* no pids: every CPython on the host (accelerator_only filters) */
	REC_MODE_LAUNCH, /* gil_options.command: what it starts */
	REC_MODE_NR,
};

struct object {
	uint64_t dev, ino;
	char *path; /* as the process maps it */
	char *open_path; /* how messages and the header name it: /proc/PID/root + path */
	struct gil_elf elf; /* the one descriptor everything of the file is read from */
	char probe_path[32]; /* /proc/self/fd/N of elf.fd: the uprobes' file, pinned to it */
	struct gil_symbols *syms; /* NULL: the file defines no GIL function */
	char *reason; /* symbols.c's one line: why no sites, or why they are approximate */
	char *broken; /* creating its probes failed (the kernel's reason): no target uses it */
	char version[32]; /* the interpreter's, as symbols.c read it; "" unknown */
	struct gil_attrib *attrib; /* what the probes read; NULL when attribution is off */
	int first_probe, nr_probes;
	int nr_fetching; /* probes created with fetchargs */
	int nr_unconditioned; /* _Py_HandlePending sites left out: no fetch of the drop request */
};

struct name {
	int32_t tid;
	char comm[17];
};

struct target {
	pid_t pid;
	int rank;
	const char *rank_source;
	char *cmdline;
	char comm[17];
	int obj; /* index into rec->objects */
	int pidfd;
	int *fds;
	int *fd_cpu; /* the CPU of each fd */
	size_t nr_fds, cap_fds;
	pid_t *tids; /* threads whose events we opened (sorted) */
	size_t nr_tids;
	char *filename;
	struct gil_rawfile *file;
	struct gil_pairing *pairing;
	enum tgt_state state;
	uint64_t exit_seen;
	uint64_t start_ns; /* when its events were enabled */
	const char *reason;
	char *warning; /* "process N: releases are approximate: ..."; NULL when exact */
	uint64_t events;
	struct name *names;
	size_t nr_names;
	int32_t *given; /* threads the program named (gil_recorder_name_thread) */
	size_t nr_given;
	const struct gil_fntab *fntab; /* the recorder's; NULL: intervals carry no function */
	struct gil_sinks *sinks; /* where its intervals go, once it started (sink.h) */
};

struct gil_recorder {
	struct gil_options opts;
	pid_t *pids;
	enum rec_mode mode;
	char *outdir;
	int dirfd;
	enum rec_state state;
	struct gil_probes *probes;
	struct gil_rings *rings;
	struct gil_decoder *dec;
	uint8_t *ev_of_probe; /* probe index -> enum gil_ev */
	int *obj_of_probe; /* probe index -> index into objects */
	size_t nr_decoded;
	struct object *objects;
	size_t nr_objects;
	struct target **targets; /* stable addresses: pairing callbacks keep them */
	size_t nr_targets;
	struct gil_ordered queue; /* events of all rings, until they are in time order */
	uint64_t horizon;
	uint64_t start_ns, end_ns, deadline, last_scan;
	struct gil_clock_offsets off_start;
	uint64_t *lost_per_cpu;
	uint64_t *klost_closed; /* per CPU: the events' own lost counts, of closed fds */
	uint64_t *synth; /* per CPU: losses reported from those counts, ahead of the ring */
	bool *ring_hup; /* per CPU: its ring fd reports POLLHUP (owner task gone) */
	uint64_t lost, events, unknown, throttled;
	uint64_t not_seen; /* releases not seen, summed over the finished targets */
	const char *reason;
	struct gil_process_stats *stats;
	size_t last_target;
	struct {
		pid_t pid, parent;
	} forks[256]; /* recent processes forked by targets, not yet seen running Python */
	size_t next_fork;
	struct gil_fntab *fntab; /* functions named by the probes' fetchargs, over all targets */
	struct gil_coderead *coderead; /* --attribution=fast: code objects named from memory */
	uint64_t new_code_until; /* drain every ROUND_NEW_MS until then */
	uint64_t fresh_until; /* and until then, or until the next code object is read */
	uint64_t code_reads_seen; /* coderead's reads + changed at the last round */
	struct gil_launch launch;
	char **skipped; /* "process N: why": targets that could not be recorded */
	size_t nr_skipped;
	char err[1024];
};

/* ---- modes.c ---- */

/* One start mode's part in the lifecycle; every op but setup is optional. */
struct rec_mode_ops {
	const char *name;
	int (*setup)(struct gil_recorder *rec); /* the first targets, before start */
	int (*start)(struct gil_recorder *rec); /* the events are on */
	int (*round)(struct gil_recorder *rec, uint64_t now); /* each poll round: new targets */
	/* may targets still come when none is live (NULL: no) */
	bool (*more_may_come)(const struct gil_recorder *rec);
	void (*finish)(struct gil_recorder *rec, bool started); /* before the last drain */
};

extern const struct rec_mode_ops rec_modes[REC_MODE_NR];

/* The mode @opts asks for. */
enum rec_mode rec_mode_of(const struct gil_options *opts);

/* ---- recorder.c ---- */

void rec_set_err(struct gil_recorder *rec, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* ---- outdir.c ---- */

/* GIL_<pid>_rank_<rank>.json, or _1, _2... before .json when a recording of it already exists. */
int rec_create_file(struct gil_recorder *rec, struct target *t);

/* mkdir -p with mode 0750 for what we create; refuses symlinks and world-writable dirs. */
int rec_open_outdir(struct gil_recorder *rec);

/* ---- objcache.c: what an object's DWARF gave, kept by build-id ---- */

/*
 * Fill @o->syms (and @o->attrib when @attribution) from the cache entry of @o's build-id,
 * when it is there and still holds for the file on @o->elf. 1: filled; 0: no usable entry
 * (nothing changed); -1: out of memory.
 */
int rec_objcache_load(struct object *o, const char *path, const char *root, bool attribution);

/* Keep @o's sites and attribution for the next attach, when they came from DWARF. */
void rec_objcache_store(struct object *o, const char *root, bool attribution);

/* ---- objects.c ---- */

/* What the probe at entry site @i of @o reads in the recording's mode; NULL: nothing. */
const char *rec_site_fetchargs(const struct gil_recorder *rec, const struct object *o, size_t i);

int rec_create_probes(struct gil_recorder *rec, struct object *o);

/*
 * Which object of @pid defines the GIL functions. Returns its index, -1 on a hard error
 * (rec->err set), -2 when @pid is not a CPython with a GIL (@why says what it is).
 */
int rec_python_object(struct gil_recorder *rec, pid_t pid, char *why, size_t whylen);

/* Re-read the group's formats after probes were added, and map probe index -> event kind. */
int rec_refresh_decoder(struct gil_recorder *rec);

/* ---- targets.c ---- */

/*
 * Make @pid a target: find its Python, create probes and events. Returns 0, -1 on a hard error,
 * -2 when @pid is not traceable (reason in rec->err).
 */
int rec_add_target(struct gil_recorder *rec, pid_t pid, bool live);

/*
 * A process forked by a target inherited its events; it becomes a target of its own at its first
 * GIL event (a fork that only execs another program leaves no file).
 */
struct target *rec_adopt_child(struct gil_recorder *rec, pid_t pid);

void rec_close_target_fds(struct gil_recorder *rec, struct target *t);

void rec_free_target(struct target *t);

const char *rec_name_of(const struct target *t, int32_t tid);

void rec_remember_name(struct target *t, int32_t tid, const char *comm);

/* All-process mode: every CPython process on the host but ourselves. */
int rec_scan_all(struct gil_recorder *rec, bool live);

int rec_start_target(struct gil_recorder *rec, struct target *t);

/*
 * @pid could not be recorded (rec->err says why): undo what was made of it, and keep the line
 * for gil_recorder_skipped(). Returns 0, or -1 when the failure was running out of memory,
 * which ends the recording.
 */
int rec_skip_target(struct gil_recorder *rec, pid_t pid);

struct target *rec_target_of(struct gil_recorder *rec, pid_t pid);

bool rec_was_given(const struct target *t, int32_t tid);

/* ---- recfile.c ---- */

/* Why @o's probes read no Python function, or NULL when they do. */
const char *rec_attribution_why(const struct gil_recorder *rec, const struct object *o);

/* Close what @t has open at @end, end its sinks (the file's footer), release its events. */
int rec_finish_target(struct gil_recorder *rec, struct target *t, uint64_t end,
			 const char *reason);

int rec_write_header(struct gil_recorder *rec, struct target *t);

/* ---- intake.c ---- */

int rec_on_record(void *ctx, int cpu, const struct perf_event_header *h);

int rec_process_one(void *ctx, const struct gil_qent *e);

/*
 * Losses the kernel counted but could not report yet: a ring that was full keeps its count until
 * its next record, which never comes once the events stop. The events' own counts
 * (PERF_FORMAT_LOST) hold them; report the difference as lost records at @ts. Threads that
 * inherited events keep their counts in the kernel's child events: those stay unseen here.
 */
int rec_report_pending_lost(struct gil_recorder *rec, uint64_t ts);

/* ---- command.c ---- */

extern const struct gil_launch_ops rec_launch_ops;

#endif /* GIL_RECORDER_H */
