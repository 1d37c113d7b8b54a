// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Targets and their threads: the processes recorded, the perf events opened on each thread,
 * thread names, children adopted in launch mode, the closing summary per thread.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "state.h"
#include "objects.h"
#include "outdir.h"
#include "recfile.h"
#include "targets.h"
#include "marker.h"

#define NATIVES_WAIT_MS 50 /* at a target's end, for its last native callers' names */

struct target *rec_target_of(struct gil_recorder *rec, pid_t pid)
{
	size_t i;

	/* Events come in runs from one process: try the last hit first. */
	if (rec->last_target < rec->nr_targets && rec->targets[rec->last_target]->pid == pid)
		return rec->targets[rec->last_target];
	for (i = 0; i < rec->nr_targets; i++) {
		if (rec->targets[i]->pid == pid) {
			rec->last_target = i;
			return rec->targets[i];
		}
	}
	return NULL;
}

/* Append @fd (on @cpu) to @s. */
static int fdset_add(struct fdset *s, int fd, int cpu)
{
	size_t cap = s->cap; /* one capacity for the two arrays */

	if (gil_grow(&s->fd, &cap, s->nr + 1, sizeof(*s->fd)) < 0)
		return -1;
	cap = s->cap;
	if (gil_grow(&s->cpu, &cap, s->nr + 1, sizeof(*s->cpu)) < 0)
		return -1;
	s->cap = cap;
	s->cpu[s->nr] = cpu;
	s->fd[s->nr++] = fd;
	return 0;
}

void rec_fdset_ioctl(const struct fdset *s, unsigned long request)
{
	size_t k;

	for (k = 0; k < s->nr; k++)
		ioctl(s->fd[k], request, 0);
}

void rec_fdset_lost(const struct gil_recorder *rec, const struct fdset *s, uint64_t *per_cpu)
{
	uint64_t v;
	size_t k;

	for (k = 0; rec->rings && k < s->nr; k++)
		if (gil_rings_read_lost(rec->rings, s->fd[k], &v) == 0)
			per_cpu[s->cpu[k]] += v;
}

/*
 * Close @s's fds, their events' lost counts kept (klost_closed), and empty it. While recording,
 * off the loop (closer.h): the last event of a uprobe waits a grace period as it closes.
 */
static void fdset_close(struct gil_recorder *rec, struct fdset *s)
{
	size_t k;

	rec_fdset_lost(rec, s, rec->klost_closed);
	for (k = 0; k < s->nr; k++) {
		if (rec->state == R_STARTED)
			gil_closer_close(&rec->closer, s->fd[k]);
		else
			close(s->fd[k]);
	}
	free(s->fd);
	free(s->cpu);
	memset(s, 0, sizeof(*s));
}

bool rec_file_wide(const struct gil_recorder *rec)
{
	return rec->mode == REC_MODE_ALL && !rec->opts.accelerator_only;
}

/*
 * Open the events of @o's probes for thread @tid (-1: every process, file-wide) into @set,
 * GIL_RING_TASK added to the first, each on every CPU (@fds: room for one per CPU), enabled if
 * @enable. 0, 1 when the thread ended meanwhile, -1 with rec->err.
 */
static int open_probe_events(struct gil_recorder *rec, const struct object *o, pid_t tid,
			     unsigned flags, struct fdset *set, bool enable, int *fds)
{
	int n, k, j;

	for (k = 0; k < o->nr_probes; k++) {
		if (!rec->probes->v[o->first_probe + k].head)
			continue; /* its event is its head's */
		n = gil_rings_open(rec->rings, rec->probes->v[o->first_probe + k].id, tid,
				   flags | (k == 0 && !o->marker ? GIL_RING_TASK : 0), fds, rec->err,
				   sizeof(rec->err));
		if (n < 0 && errno == ESRCH && tid != -1)
			return 1;
		if (n < 0)
			return -1;
		for (j = 0; j < n; j++) {
			if (fds[j] < 0)
				continue;
			if (enable)
				ioctl(fds[j], PERF_EVENT_IOC_ENABLE, 0);
			if (fdset_add(set, fds[j], j) < 0) {
				close(fds[j]);
				rec_set_err(rec, "out of memory");
				return -1;
			}
		}
	}
	return 0;
}

/*
 * All-process mode: @o's probes for every process that maps its file, on every CPU (once).
 * The uprobes are pinned to the proven inode (probe_path): a process that maps that file maps
 * exactly what was read, so no process is probed at an unproven place.
 */
static int open_object_events(struct gil_recorder *rec, struct object *o, bool enable)
{
	int *fds, r;

	if (o->fds.nr)
		return 0;
	fds = malloc((size_t)gil_rings_nr_cpus(rec->rings) * sizeof(*fds));
	if (!fds) {
		rec_set_err(rec, "out of memory");
		return -1;
	}
	r = open_probe_events(rec, o, -1, 0, &o->fds, enable, fds);
	free(fds);
	if (r < 0)
		return -1;
	if (enable)
		o->live_since = gil_clock_now();
	return 0;
}

void rec_objects_ioctl(struct gil_recorder *rec, unsigned long request)
{
	size_t i;

	for (i = 0; i < rec->nr_objects; i++) {
		rec_fdset_ioctl(&rec->objects[i].fds, request);
		if (request == PERF_EVENT_IOC_ENABLE && rec->objects[i].fds.nr)
			rec->objects[i].live_since = rec->start_ns;
	}
}

void rec_close_object_fds(struct gil_recorder *rec)
{
	size_t i;

	for (i = 0; i < rec->nr_objects; i++)
		fdset_close(rec, &rec->objects[i].fds);
}

/*
 * Thread @tid of @t gets the event that keeps its context and those of its new threads and
 * children from being swapped (gil_rings_guard), closed when the thread exits
 * (rec_unguard_thread) or with the target's fds.
 */
int rec_guard_thread(struct gil_recorder *rec, struct target *t, pid_t tid)
{
	int fd = gil_rings_guard(tid, &rec->guard_kind);

	if (fd < 0 && errno == ESRCH)
		return 0;
	if (fd < 0 && (errno == EMFILE || errno == ENFILE)) {
		rec_set_err(rec, "too many open files opening perf events for thread %d: raise ulimit -n",
			    (int)tid);
		return -1;
	}
	if (fd < 0) {
		rec_set_err(rec, "cannot open the guard event (software dummy) for thread %d: %s",
			    (int)tid, strerror(errno));
		return -1;
	}
	if (gil_grow(&t->guards, &t->cap_guards, t->nr_guards + 1, sizeof(*t->guards)) < 0) {
		close(fd);
		rec_set_err(rec, "out of memory");
		return -1;
	}
	t->guards[t->nr_guards].tid = tid;
	t->guards[t->nr_guards++].fd = fd;
	return 0;
}

void rec_unguard_thread(struct target *t, pid_t tid)
{
	size_t i;

	for (i = 0; i < t->nr_guards; i++) {
		if (t->guards[i].tid == tid) {
			close(t->guards[i].fd);
			t->guards[i] = t->guards[--t->nr_guards];
			return;
		}
	}
}

static bool has_tid(const struct target *t, pid_t tid)
{
	size_t i;

	for (i = 0; i < t->nr_tids; i++)
		if (t->tids[i] == tid)
			return true;
	return false;
}

bool rec_was_given(const struct target *t, int32_t tid)
{
	size_t i;

	for (i = 0; i < t->nr_given; i++)
		if (t->given[i] == tid)
			return true;
	return false;
}

void rec_remember_name(struct target *t, int32_t tid, const char *comm)
{
	struct name *n;

	if (t->nr_names >= MAX_NAMES)
		return;
	if (gil_grow(&t->names, &t->cap_names, t->nr_names + 1, sizeof(*t->names)) < 0)
		return;
	n = &t->names[t->nr_names++];
	n->tid = tid;
	snprintf(n->comm, sizeof(n->comm), "%s", comm);
}

const char *rec_name_of(const struct target *t, int32_t tid)
{
	size_t i;

	for (i = 0; i < t->nr_names; i++)
		if (t->names[i].tid == tid)
			return t->names[i].comm;
	return "";
}

/*
 * Open our events for every thread of @t not yet covered: the events that record it, and
 * those that record what it execs (struct target's exec_fds). Threads and processes created
 * later inherit them; re-list until no new thread appears, so one created while we were
 * opening is not missed.
 */
static int open_target_events(struct gil_recorder *rec, struct target *t, bool enable)
{
	const struct object *o = &rec->objects[t->obj];
	int ncpu = gil_rings_nr_cpus(rec->rings), *fds, round, r;
	pid_t *tids = NULL;
	char comm[17];
	bool added;
	int nr, i;

	fds = malloc((size_t)ncpu * sizeof(*fds));
	if (!fds) {
		rec_set_err(rec, "out of memory");
		return -1;
	}
	for (round = 0; round < 10; round++) {
		nr = gil_proc_threads(t->pid, &tids);
		if (nr < 0) {
			free(fds);
			return errno == ENOENT ? 0 : (rec_set_err(rec, "cannot list threads of %d: %s",
							      (int)t->pid, strerror(errno)), -1);
		}
		added = false;
		for (i = 0; i < nr; i++) {
			if (has_tid(t, tids[i]))
				continue;
			r = open_probe_events(rec, o, tids[i], 0, &t->fds, enable, fds);
			if (r == 0 && t->mobj >= 0)
				r = open_probe_events(rec, &rec->objects[t->mobj], tids[i], 0,
						      &t->fds, enable, fds);
			/* never enabled by us: the kernel enables them at exec */
			if (r == 0 && !gil_rings_follow_exec(rec->rings))
				r = open_probe_events(rec, o, tids[i], GIL_RING_AFTER_EXEC,
						      &t->exec_fds, false, fds);
			if (r < 0)
				goto fail;
			if (r == 0 && rec_guard_thread(rec, t, tids[i]) < 0)
				goto fail;
			if (gil_proc_comm(t->pid, tids[i], comm, sizeof(comm)) == 0)
				rec_remember_name(t, tids[i], comm);
			if (gil_grow(&t->tids, &t->cap_tids, t->nr_tids + 1, sizeof(*t->tids)) < 0) {
				rec_set_err(rec, "out of memory");
				goto fail;
			}
			t->tids[t->nr_tids++] = tids[i];
			added = true;
		}
		free(tids);
		tids = NULL;
		if (!added)
			break;
	}
	free(fds);
	return 0;
fail:
	free(tids);
	free(fds);
	return -1;
}

int rec_open_marker_events(struct gil_recorder *rec, struct target *t)
{
	struct object *m = &rec->objects[t->mobj];
	bool enable = rec->state == R_STARTED;
	pid_t *tids = NULL;
	int *fds, nr, i, r = 0;

	if (rec_file_wide(rec))
		return open_object_events(rec, m, enable);
	fds = malloc((size_t)gil_rings_nr_cpus(rec->rings) * sizeof(*fds));
	if (!fds) {
		rec_set_err(rec, "out of memory");
		return -1;
	}
	/* threads started later inherit them from the thread that starts them */
	nr = gil_proc_threads(t->pid, &tids);
	for (i = 0; i < nr && r >= 0; i++)
		r = open_probe_events(rec, m, tids[i], 0, &t->fds, enable, fds);
	free(tids);
	free(fds);
	return r < 0 ? -1 : 0;
}

int rec_start_target(struct gil_recorder *rec, struct target *t)
{
	const struct object *o = &rec->objects[t->obj];
	const char *why = rec_attribution_why(rec, o);

	if (o->attrib && o->nr_fetching && rec->fntab) {
		t->fntab = rec->fntab;
		gil_rawfile_set_attribution(t->file, true);
	} else if (why && !rec->opts.no_attribution) {
		/* said on screen too: a user who did not turn it off expects function names */
		char *w = t->warning ? gil_strfmt("%s; Python functions and release reasons are not "
						  "recorded: %s", t->warning, why)
				     : gil_strfmt("process %d: Python functions and release reasons are "
						  "not recorded: %s", (int)t->pid, why);

		if (w) {
			free(t->warning);
			t->warning = w;
		}
	}
	/* an adopted process starts where its first event (or its fork) was */
	if (!t->start_ns)
		t->start_ns = rec->state == R_STARTED ? gil_clock_now() : rec->start_ns;
	/*
	 * Its code objects are all new: short rounds until the first is read (however long its
	 * DWARF took, or the program waits before its first call), for at most FRESH_NS.
	 */
	rec->fresh_until = gil_clock_now() + FRESH_NS;
	t->sinks = gil_sinks_open(&(struct gil_sink_target){ .pid = t->pid,
							      .rank = t->rank,
							      .comm = t->comm,
							      .opts = &rec->opts,
							      .fntab = t->fntab,
							      .file = t->file,
							      .origin = rec->start_ns,
							      .since = t->start_ns });
	t->pairing = t->sinks ? gil_pairing_alloc(t->start_ns, gil_sinks_interval, t->sinks)
			      : NULL;
	if (!t->pairing) {
		rec_set_err(rec, "out of memory");
		return -1;
	}
	return rec_write_header(rec, t);
}

/*
 * A new target entry for @pid using object @obj; events are opened by the caller if needed.
 * What /proc no longer tells (a child that already exited) is taken from @parent.
 */
static struct target *new_target(struct gil_recorder *rec, pid_t pid, int obj,
				 const struct target *parent)
{
	struct target *t = calloc(1, sizeof(*t));

	if (!t || gil_grow(&rec->targets, &rec->cap_targets, rec->nr_targets + 1,
			   sizeof(*rec->targets)) < 0) {
		free(t);
		rec_set_err(rec, "out of memory");
		return NULL;
	}
	rec->targets[rec->nr_targets++] = t;
	t->pid = pid;
	t->obj = obj;
	t->mobj = parent ? parent->mobj : -1;
	t->rank = gil_proc_rank(pid, &t->rank_source);
	if ((rec->objects[obj].syms->approximate || rec->objects[obj].syms->nr_over_cap) &&
	    rec->objects[obj].syms->reason) {
		size_t len = strlen(rec->objects[obj].syms->reason) + 32;

		t->warning = malloc(len);
		if (t->warning)
			snprintf(t->warning, len, "process %d: %s", (int)pid,
				 rec->objects[obj].syms->reason);
	} else if (rec->objects[obj].syms->note) {
		/* what was tried and failed (a debuginfod server), though the sites are exact */
		t->warning = gil_strfmt("process %d: %s", (int)pid, rec->objects[obj].syms->note);
	} else if (rec->objects[obj].nr_unconditioned) {
		t->warning = gil_strfmt("process %d: forced switches are not recorded: they release the GIL inside _Py_HandlePending, whose releases are told apart by the drop request that attribution reads (record without --no-attribution)",
					(int)pid);
	}
	t->cmdline = gil_proc_cmdline(pid);
	if (gil_proc_comm(pid, pid, t->comm, sizeof(t->comm)) < 0 && parent) {
		t->rank = parent->rank;
		t->rank_source = parent->rank_source;
		memcpy(t->comm, parent->comm, sizeof(t->comm));
		if (!t->cmdline && parent->cmdline)
			t->cmdline = strdup(parent->cmdline);
	}
	t->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (rec_create_file(rec, t) < 0)
		return NULL;
	return t;
}

/*
 * Make @pid a target: find its Python, create probes and events. Returns 0, -1 on a hard error,
 * -2 when @pid is not traceable (reason in rec->err).
 */
int rec_add_target(struct gil_recorder *rec, pid_t pid, bool live)
{
	char why[512] = "";
	int obj;

	if (!gil_proc_exists(pid) || gil_proc_is_kernel_thread(pid)) {
		rec_set_err(rec, "no such process: %d", (int)pid);
		return -2;
	}
	obj = rec_python_object(rec, pid, why, sizeof(why));
	if (obj == -1)
		return -1;
	if (obj < 0) {
		rec_set_err(rec, "process %d: %s", (int)pid, why);
		return -2;
	}
	return rec_add_target_obj(rec, pid, obj, live);
}

int rec_add_target_obj(struct gil_recorder *rec, pid_t pid, int obj, bool live)
{
	struct target *t;

	if (rec_create_probes(rec, &rec->objects[obj]) < 0 || rec_refresh_decoder(rec) < 0)
		return -1;
	if (rec_file_wide(rec)) {
		/* its file's events cover it: recorded since they went live */
		if (open_object_events(rec, &rec->objects[obj], live) < 0)
			return -1;
		t = new_target(rec, pid, obj, NULL);
		if (!t || rec_marker_find(rec, t) < 0 ||
		    (t->mobj >= 0 && rec_open_marker_events(rec, t) < 0))
			return -1;
		if (t->pidfd < 0 && !gil_proc_exists(pid)) {
			/* it exited while we looked at it: the scan forgets it */
			rec_set_err(rec, "no such process: %d", (int)pid);
			return -1;
		}
		if (live)
			t->start_ns = rec->objects[obj].live_since;
	} else {
		t = new_target(rec, pid, obj, NULL);
		if (!t || rec_marker_find(rec, t) < 0 || open_target_events(rec, t, live) < 0)
			return -1;
	}
	if (live && rec_start_target(rec, t) < 0)
		return -1;
	return 0;
}

/*
 * A process forked by a target inherited its events; it becomes a target of its own at its first
 * GIL event (a fork that only execs another program leaves no file).
 */
/* The fork noted for @pid (intake.c), or NULL. */
static struct fork_note *fork_of(struct gil_recorder *rec, pid_t pid)
{
	size_t i;

	for (i = 0; i < GIL_ARRAY_SIZE(rec->forks); i++)
		if (rec->forks[i].pid == pid)
			return &rec->forks[i];
	return NULL;
}

struct target *rec_adopt_child(struct gil_recorder *rec, pid_t pid, uint64_t ts)
{
	struct target *parent = NULL, *t;
	struct fork_note *f = fork_of(rec, pid), *up = f;
	uint64_t forked = f ? f->ts : 0;
	int depth;

	/* its parent, or the nearest ancestor that is a target: a shell or a launcher between
	 * them runs no Python of ours and is never one */
	for (depth = 0; up && depth < 8; depth++) {
		parent = rec_target_of(rec, up->parent);
		if (parent)
			break;
		up = fork_of(rec, up->parent);
	}
	if (!parent)
		return NULL;
	f->pid = 0;
	t = new_target(rec, pid, parent->obj, parent);
	if (!t)
		return NULL;
	t->inherited = true;
	/* recorded from its fork: its first events are older than now */
	t->start_ns = forked && forked <= ts ? forked : ts;
	if (rec_start_target(rec, t) < 0)
		return NULL;
	/* its own children are then plain copies too (gil_rings_guard), where it did not inherit
	 * a guard from its parent; file-wide events are in no task's context */
	if (!rec_file_wide(rec) && rec->guard_kind != GIL_GUARD_NO_SWAP &&
	    rec_guard_thread(rec, t, pid) < 0)
		return NULL;
	return t;
}

struct target *rec_adopt_process(struct gil_recorder *rec, pid_t pid, int obj, uint64_t ts)
{
	struct target *t;

	if (gil_proc_is_kernel_thread(pid))
		return NULL;
	t = new_target(rec, pid, obj, NULL);
	if (!t || rec_marker_find(rec, t) < 0 ||
	    (t->mobj >= 0 && rec_open_marker_events(rec, t) < 0))
		return NULL;
	t->start_ns = ts;
	if (rec_start_target(rec, t) < 0)
		return NULL;
	return t;
}

void rec_free_target(struct target *t)
{
	rec_native_tab_free(&t->nat);
	gil_rawfile_free(t->file);
	gil_pairing_free(t->pairing);
	gil_sinks_close(t->sinks);
	free(t->fds.fd);
	free(t->fds.cpu);
	free(t->exec_fds.fd);
	free(t->exec_fds.cpu);
	free(t->guards);
	free(t->tids);
	free(t->cmdline);
	free(t->filename);
	free(t->names);
	free(t->given);
	free(t->warning);
	free(t);
}

void rec_forget_target(struct gil_recorder *rec, pid_t pid)
{
	struct target *t;

	if (!rec->nr_targets || rec->targets[rec->nr_targets - 1]->pid != pid)
		return;
	t = rec->targets[--rec->nr_targets];
	rec_close_target_fds(rec, t);
	if (t->file) {
		gil_rawfile_free(t->file);
		if (t->filename)
			unlink(t->filename);
	}
	t->file = NULL;
	rec_free_target(t);
	rec->last_target = 0;
}

int rec_skip_target(struct gil_recorder *rec, pid_t pid)
{
	char **v, *line;

	if (strstr(rec->err, "out of memory"))
		return -1;
	rec_forget_target(rec, pid);
	/* the message names the process once: add_target's own do, the stages' do not */
	if (!strncmp(rec->err, "process ", 8) || !strncmp(rec->err, "no such process", 15))
		line = gil_strfmt("%s; not recorded", rec->err);
	else
		line = gil_strfmt("process %d: %s; not recorded", (int)pid,
				  rec->err[0] ? rec->err : "setup failed");
	v = line ? realloc(rec->skipped, (rec->nr_skipped + 1) * sizeof(*v)) : NULL;
	if (!v) {
		free(line);
		rec_set_err(rec, "out of memory");
		return -1;
	}
	rec->skipped = v;
	rec->skipped[rec->nr_skipped++] = line;
	rec->err[0] = '\0';
	return 0;
}

void rec_close_target_fds(struct gil_recorder *rec, struct target *t)
{
	size_t k;

	fdset_close(rec, &t->fds);
	fdset_close(rec, &t->exec_fds);
	for (k = 0; k < t->nr_guards; k++)
		close(t->guards[k].fd);
	t->nr_guards = 0;
	if (t->pidfd >= 0)
		close(t->pidfd);
	t->pidfd = -1;
}

/*
 * The native callers the worker named since the last round (natives.c), written by their
 * targets' sinks; with @wait_ms, first wait that long at most for the questions still open.
 */
int rec_take_natives(struct gil_recorder *rec, int wait_ms)
{
	struct rec_named *all = rec_namer_take(rec->namer, wait_ms), *a;
	char addr[32];
	struct target *t;
	int ret = 0;

	for (a = all; a && ret == 0; a = a->next) {
		t = rec_target_of(rec, a->pid);
		if (!t || t->state == T_DONE || !t->sinks || a->id > t->nat.nr)
			continue;
		snprintf(addr, sizeof(addr), "0x%llx", (unsigned long long)a->addr);
		if (a->name)
			t->nat.named++;
		else
			t->nat.unnamed++;
		if (gil_sinks_native(t->sinks, a->id, a->name ? a->name : addr, a->addr) < 0) {
			rec_set_err(rec, "%s", gil_sinks_error(t->sinks));
			ret = -1;
		}
	}
	rec_named_free(all);
	return ret;
}

/* Close what @t has open at @end, end its sinks (the file's footer), release its events. */
int rec_finish_target(struct gil_recorder *rec, struct target *t, uint64_t end,
		      const char *reason)
{
	const struct gil_symbols *syms = rec->objects[t->obj].syms;
	uint64_t not_seen = 0;
	struct json_object *f;
	int ret = 0;

	if (t->state == T_DONE)
		return 0;
	/*
	 * the names still being read: a bounded wait, for this target's footer comes now (and
	 * while it is not done yet: the answers of a done target are dropped)
	 */
	if (t->pairing && t->file && t->nat.nr > t->nat.named + t->nat.unnamed &&
	    rec_take_natives(rec, NATIVES_WAIT_MS) < 0)
		ret = -1;
	rec_close_target_fds(rec, t);
	gil_coderead_forget(rec->coderead, t->pid);
	t->state = T_DONE;
	t->reason = reason;
	if (!t->pairing || !t->file)
		return 0;
	if (gil_pairing_finish(t->pairing, end) < 0)
		ret = -1;
	/*
	 * Sites from the code can miss copies inlined where nothing shows them: count those.
	 * Elsewhere a take while holding is the probes' arming order at the start (a release
	 * before drop_gil's probe was on), flagged on its interval as before.
	 */
	if (syms && syms->nr_callgraph)
		not_seen = gil_pairing_not_seen(t->pairing);
	rec->not_seen += not_seen;
	/* each sink adds what it has to say (the summary: "threads"); the file writes it */
	f = rec_footer(rec, t, end, reason, not_seen);
	if (!f || gil_sinks_end(t->sinks, f) < 0) {
		rec_set_err(rec, "%s", f ? gil_sinks_error(t->sinks) : "out of memory");
		ret = -1;
	}
	json_object_put(f);
	return ret;
}

/*
 * Once a second per live target without it: libgiltrace loaded since (marker.c), probed. At
 * most one target's maps are read per round (a torch process's take ~0.8 ms): all-process mode
 * may hold hundreds of targets, found together, and the loop must not stall on them at once.
 */
int rec_targets_markers_round(struct gil_recorder *rec, uint64_t now)
{
	size_t k;

	for (k = 0; k < rec->nr_targets; k++) {
		struct target *t = rec->targets[(rec->mark_next + k) % rec->nr_targets];

		if (t->state != T_LIVE || t->mobj >= 0 || !t->pairing ||
		    now - t->mark_scan < RESCAN_NS)
			continue;
		rec->mark_next = (rec->mark_next + k + 1) % rec->nr_targets;
		if (rec_marker_find(rec, t) < 0)
			return -1;
		return t->mobj >= 0 ? rec_open_marker_events(rec, t) : 0;
	}
	return 0;
}
