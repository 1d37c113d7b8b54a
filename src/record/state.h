/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Private to src/record: the recorder's state (struct gil_recorder, its targets and objects),
 * which the files of its stages share; each of them declares its own functions in its own
 * header. Only recorder.c's lifecycle (include/giltrace.h) is public.
 */
#ifndef GIL_REC_STATE_H
#define GIL_REC_STATE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "attrib/attrib.h"
#include "clock.h"
#include "closer.h"
#include "coderead.h"
#include "common/util.h"
#include "decode.h"
#include "elf/elf.h"
#include "elf/symbols.h"
#include "format/rawfile.h"
#include "giltrace.h"
#include "launch.h"
#include "natives.h"
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

/* How targets are found (modes.c; doc/architecture.md, "Where to change what"). */
enum rec_mode {
	REC_MODE_PIDS, /* gil_options.pids: those processes */
	REC_MODE_ALL, /* no pids: every CPython on the host (accelerator_only filters) */
	REC_MODE_LAUNCH, /* gil_options.command: what it starts */
	REC_MODE_NR,
};

/* Perf event fds, with the CPU of each. */
struct fdset {
	int *fd;
	int *cpu;
	size_t nr, cap;
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
	struct gil_callers *callers; /* how an entry's native caller is read; NULL: not read */
	char *callers_args; /* the fetchargs that read it */
	int first_probe, nr_probes;
	int nr_fetching; /* probes created with fetchargs */
	int nr_unconditioned; /* _Py_HandlePending sites left out: no fetch of the drop request */
	/*
	 * All-process mode: its probes' events for every process, one per probe and CPU (pid -1),
	 * opened when the first process of the file is found. A process then starts to be
	 * recorded at its first GIL event, and letting it go closes nothing (rec_file_wide).
	 */
	struct fdset fds;
	uint64_t live_since; /* when they were enabled */
	/*
	 * libgiltrace, mapped by a target: its one probe is at gil_mark_step's entry (marker.c),
	 * whose argument it reads; syms is NULL
	 */
	bool marker;
	uint64_t mark_offset;
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
	int mobj; /* the libgiltrace it maps, whose gil_mark_step is probed (marker.c); -1 none */
	uint64_t mark_scan; /* when its maps were last looked at for libgiltrace */
	uint64_t marks; /* step marks written */
	struct native_tab nat; /* its native callers (natives.c) */
	int pidfd;
	struct fdset fds; /* its events, on each thread */
	/*
	 * The same events again, disabled until a thread execs (enable_on_exec) and kept across
	 * exec: the normal ones leave a task at exec (remove_on_exec), these then record its new
	 * image, from its first instruction, where it maps the same proven file (multiprocessing's
	 * spawn and forkserver, subprocess of sys.executable), and are inherited by its forks.
	 * Empty where the kernel keeps events across exec anyway (no remove_on_exec).
	 */
	struct fdset exec_fds;
	struct guard {
		pid_t tid;
		int fd;
	} *guards; /* gil_rings_guard of each live thread: closed when it exits */
	size_t nr_guards, cap_guards;
	pid_t *tids; /* threads whose events we opened (sorted) */
	size_t nr_tids, cap_tids;
	char *filename;
	struct gil_rawfile *file;
	struct gil_pairing *pairing;
	enum tgt_state state;
	uint64_t exit_seen;
	uint64_t start_ns; /* when its events were enabled */
	const char *reason;
	char *warning; /* "process N: releases are approximate: ..."; NULL when exact */
	uint64_t events;
	bool inherited; /* an adopted child: its events are copies of its parent's */
	uint64_t unguarded_exits; /* its threads' exits where that can take its probes away */
	struct name *names;
	size_t nr_names, cap_names;
	int32_t *given; /* threads the program named (gil_recorder_name_thread) */
	size_t nr_given, cap_given;
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
	uint64_t *vaddr_of_probe; /* probe index -> its site's address, where objects read the
				     native caller (0: they do not) */
	struct rec_namer *namer; /* names the native callers (natives.c); NULL: not read */
	size_t nr_decoded;
	struct object *objects;
	size_t nr_objects;
	struct rec_resolver *resolver; /* all-process mode's reads while recording (resolver.c) */
	struct { /* launch mode: the resolver's answers not yet asked for (rec_attach_found) */
		pid_t pid;
		int what;
	} *answers;
	size_t nr_answers, cap_answers;
	struct target **targets; /* stable addresses: pairing callbacks keep them */
	size_t nr_targets, cap_targets;
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
	struct fork_note {
		pid_t pid, parent;
		uint64_t ts; /* the fork's time: where the child's recording starts */
	} forks[256]; /* recent processes forked by targets and their descendants (all-process
		       * mode: by targets only), not yet seen running Python */
	size_t next_fork;
	struct gil_closer closer; /* closes the events of targets let go while recording */
	enum gil_guard_kind guard_kind; /* how far the guards reach on this kernel (ring.h) */
	struct gil_fntab *fntab; /* functions named by the probes' fetchargs, over all targets */
	struct gil_coderead *coderead; /* --attribution=fast: code objects named from memory */
	uint64_t new_code_until; /* drain every ROUND_NEW_MS until then */
	uint64_t fresh_until; /* and until then, or until the next code object is read */
	uint64_t code_reads_seen; /* coderead's reads + changed at the last round */
	size_t mark_next; /* the target whose maps the next look for libgiltrace reads first */
	struct gil_launch launch;
	struct gil_open *opens; /* a target's open intervals, at each round's tick */
	size_t cap_opens;
	char **skipped; /* "process N: why": targets that could not be recorded */
	size_t nr_skipped;
	struct { /* gil_options.metrics: the text rendered each round (metrics.c) */
		pthread_mutex_t mu; /* guards text and len: gil_recorder_metrics may be anywhere */
		char *text;
		size_t len;
		uint64_t drain_lag; /* ns, at the last round: now less the horizon */
		uint64_t rendered_at; /* the recording clock at the last render, 0 none */
	} metrics;
	char err[1024];
};

/* ---- state.c ---- */

/* Say why the recording failed: gil_recorder_error() returns it. */

void rec_set_err(struct gil_recorder *rec, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif /* GIL_REC_STATE_H */
