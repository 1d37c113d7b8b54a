// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The recorder: setup -> start -> poll... -> stop -> finish. It ties the stages together:
 * procs (targets) -> symbols (sites) -> probes (tracefs group) -> ring (perf) -> decode ->
 * pairing -> sinks. Every exit path runs the same teardown (finish). This file is the
 * lifecycle and the poll loop, on top: it calls modes.c, intake.c, targets.c and outdir.c, and
 * none of them calls it (doc/architecture.md); they share the state of state.h.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <tracefs.h>
#include <event-parse.h>

#include "state.h"
#include "intake.h"
#include "metrics.h"
#include "modes.h"
#include "objects.h"
#include "outdir.h"
#include "targets.h"

void gil_options_init(struct gil_options *opts)
{
	memset(opts, 0, sizeof(*opts));
	opts->duration = -1;
}

const char *gil_version(void)
{
	return PACKAGE_VERSION;
}

struct gil_recorder *gil_recorder_alloc(const struct gil_options *opts)
{
	struct gil_recorder *rec = calloc(1, sizeof(*rec));
	const char *base;
	size_t len;

	if (!rec)
		return NULL;
	rec->opts = *opts;
	rec->dirfd = -1;
	pthread_mutex_init(&rec->metrics.mu, NULL);
	rec->mode = rec_mode_of(opts);
	rec->launch.errpipe = -1;
	if (opts->pids && opts->nr_pids) {
		rec->pids = malloc(opts->nr_pids * sizeof(pid_t));
		if (!rec->pids)
			goto fail;
		memcpy(rec->pids, opts->pids, opts->nr_pids * sizeof(pid_t));
		rec->opts.pids = rec->pids;
	}
	if (opts->output_dir) {
		rec->outdir = strdup(opts->output_dir);
	} else {
		base = getenv("SYSTRACE_DUMP_PATH");
		if (!base || !*base)
			base = "/home/sysTrace";
		len = strlen(base) + sizeof("/GIL");
		rec->outdir = malloc(len);
		if (rec->outdir)
			snprintf(rec->outdir, len, "%s/GIL", base);
	}
	if (!rec->outdir)
		goto fail;
	rec->opts.output_dir = rec->outdir;
	if (!rec->opts.ring_pages)
		rec->opts.ring_pages = DEFAULT_RING_PAGES;
	return rec;
fail:
	free(rec->pids);
	pthread_mutex_destroy(&rec->metrics.mu);
	free(rec);
	errno = ENOMEM;
	return NULL;
}

const char *gil_recorder_error(const struct gil_recorder *rec)
{
	return rec ? rec->err : "";
}

int gil_recorder_setup(struct gil_recorder *rec)
{
	struct rlimit rl;
	char *kerr;

	if (rec->state != R_ALLOC) {
		rec_set_err(rec, "recorder already set up");
		errno = EBUSY;
		return -1;
	}
	rec->state = R_SETUP;
	if (rec->opts.attribution != GIL_ATTRIBUTION_FAST &&
	    rec->opts.attribution != GIL_ATTRIBUTION_FULL) {
		rec_set_err(rec, "unknown attribution mode %d: give GIL_ATTRIBUTION_FAST or GIL_ATTRIBUTION_FULL",
			    rec->opts.attribution);
		errno = EINVAL;
		goto fail;
	}
	tracefs_set_loglevel(rec->opts.verbosity >= GIL_DEBUG ? TEP_LOG_ALL :
			     rec->opts.verbosity >= GIL_VERBOSE ? TEP_LOG_WARNING : TEP_LOG_NONE);
	tep_set_loglevel(rec->opts.verbosity >= GIL_DEBUG ? TEP_LOG_ALL : TEP_LOG_NONE);
	if (geteuid() != 0) {
		rec_set_err(rec, "recording needs root (uprobes and perf events): run it with sudo");
		errno = EPERM;
		goto fail;
	}
	if (!tracefs_tracing_dir()) {
		rec_set_err(rec, "tracefs is not mounted and could not be mounted: mount -t tracefs nodev /sys/kernel/tracing");
		errno = ENOENT;
		goto fail;
	}
	if (!tracefs_file_exists(NULL, "uprobe_events")) {
		rec_set_err(rec, "this kernel has no uprobe events (%s/uprobe_events missing): it needs CONFIG_UPROBE_EVENTS=y",
			tracefs_tracing_dir());
		errno = ENOTSUP;
		goto fail;
	}
	gil_probes_cleanup_stale();
	if (!rec->opts.no_attribution) {
		rec->fntab = gil_fntab_alloc();
		if (rec->fntab && rec->opts.attribution == GIL_ATTRIBUTION_FAST)
			rec->coderead = gil_coderead_alloc();
		if (!rec->fntab || (rec->opts.attribution == GIL_ATTRIBUTION_FAST && !rec->coderead)) {
			errno = ENOMEM;
			goto fail;
		}
	}
	/* One fd per thread, CPU and probe: lift the soft limit to the hard one. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (!rec->opts.no_files && rec_open_outdir(rec) < 0)
		goto fail;
	rec->rings = gil_rings_alloc(rec->opts.ring_pages);
	if (!rec->rings) {
		rec_set_err(rec, "invalid ring size %zu pages (a power of two is needed)",
			rec->opts.ring_pages);
		goto fail;
	}
	rec->lost_per_cpu = calloc((size_t)gil_rings_nr_cpus(rec->rings), sizeof(uint64_t));
	rec->klost_closed = calloc((size_t)gil_rings_nr_cpus(rec->rings), sizeof(uint64_t));
	rec->synth = calloc((size_t)gil_rings_nr_cpus(rec->rings), sizeof(uint64_t));
	if (!rec->lost_per_cpu || !rec->klost_closed || !rec->synth)
		goto fail;
	/* the mode's first targets; later ones come in poll()'s rounds */
	if (rec_modes[rec->mode].setup(rec) < 0)
		goto fail;
	return 0;
fail:
	if (!rec->err[0]) {
		kerr = strerror(errno);
		rec_set_err(rec, "setup failed: %s", kerr);
	}
	gil_recorder_finish(rec);
	return -1;
}

int gil_recorder_start(struct gil_recorder *rec)
{
	size_t i;

	if (rec->state != R_SETUP) {
		rec_set_err(rec, "recorder not set up");
		errno = EINVAL;
		return -1;
	}
	/* the native callers' names are read by a worker of their own (natives.c) */
	if (rec->opts.natives && !rec->namer && !(rec->namer = rec_namer_start())) {
		rec_set_err(rec, "cannot start the thread that names native callers: %s",
			    strerror(errno));
		return -1;
	}
	gil_clock_offsets_sample(&rec->off_start);
	rec->start_ns = gil_clock_now();
	rec->horizon = rec->start_ns;
	rec->last_scan = rec->start_ns;
	if (rec->opts.duration >= 0)
		rec->deadline = rec->start_ns + (uint64_t)(rec->opts.duration * 1e9);
	rec_objects_ioctl(rec, PERF_EVENT_IOC_ENABLE);
	for (i = 0; i < rec->nr_targets; i++) {
		if (rec_start_target(rec, rec->targets[i]) < 0)
			return -1;
		rec_fdset_ioctl(&rec->targets[i]->fds, PERF_EVENT_IOC_ENABLE);
	}
	rec->state = R_STARTED;
	if (rec_modes[rec->mode].start && rec_modes[rec->mode].start(rec) < 0)
		return -1;
	return 0;
}

/* Tell @t's sinks which intervals are open at @upto, every event before it handed on. */
static int rec_tick(struct gil_recorder *rec, struct target *t, uint64_t upto)
{
	uint32_t waiting;
	size_t nr;

	if (!t->pairing)
		return 0;
	while ((nr = gil_pairing_open(t->pairing, rec->opens, rec->cap_opens, &waiting)) >
	       rec->cap_opens) {
		if (gil_grow(&rec->opens, &rec->cap_opens, nr, sizeof(*rec->opens)) < 0) {
			rec_set_err(rec, "out of memory");
			return -1;
		}
	}
	if (gil_sinks_tick(t->sinks, upto, rec->opens, nr, waiting) < 0) {
		rec_set_err(rec, "%s", gil_sinks_error(t->sinks));
		return -1;
	}
	return 0;
}

int gil_recorder_poll(struct gil_recorder *rec, int timeout_ms)
{
	struct pollfd *pfd = NULL;
	struct target *t;
	size_t i, n = 0, m, *which = NULL;
	uint64_t now, round_start;
	bool live = false;
	int wait, r, c, ncpu;

	if (rec->state != R_STARTED)
		return 0;
	now = gil_clock_now();
	/*
	 * --attribution=fast reads a code object from its process some time after the event: by
	 * then the process may have exited, or the object died and its address holds another.
	 * Drained every 2 ms, the reads come before that; but draining so often cost the release
	 * workload 17% (bench/overhead.py), every 50 ms nothing. So rounds are short only while
	 * code objects are new: for 250 ms after one was first read or found changed, and from a
	 * target's start until the first is read. A steady program pays nothing; what is still
	 * read too late gets a why of its own and the closing warning.
	 */
	wait = rec->coderead && (now < rec->new_code_until || now < rec->fresh_until) ? ROUND_NEW_MS
										       : ROUND_MS;
	if (timeout_ms >= 0 && timeout_ms < wait)
		wait = timeout_ms;
	if (rec->deadline && rec->deadline > now && (rec->deadline - now) / 1000000 < (uint64_t)wait)
		wait = (int)((rec->deadline - now) / 1000000);
	ncpu = gil_rings_nr_cpus(rec->rings);
	pfd = calloc(rec->nr_targets + (size_t)ncpu + 1, sizeof(*pfd));
	which = calloc(rec->nr_targets + 1, sizeof(*which));
	if (!pfd || !which) {
		free(pfd);
		free(which);
		rec_set_err(rec, "out of memory");
		return -1;
	}
	for (i = 0; i < rec->nr_targets; i++) {
		if (rec->targets[i]->state != T_LIVE || rec->targets[i]->pidfd < 0)
			continue;
		pfd[n].fd = rec->targets[i]->pidfd;
		pfd[n].events = POLLIN;
		which[n++] = i;
	}
	if (rec->launch.nr && wait > 5)
		wait = 5; /* processes stopped in ptrace wait for us: answer quickly */
	/* A ring half full wakes us before the round is over (small --mmap-pages, bursts). */
	for (c = 0, m = n; c < ncpu; c++) {
		if (gil_rings_fd(rec->rings, c) < 0 || (rec->ring_hup && rec->ring_hup[c]))
			continue;
		pfd[m].fd = gil_rings_fd(rec->rings, c);
		pfd[m++].events = POLLIN;
	}
	/* and the resolver's answers: a process it found starts now, not at the round's end */
	if (rec_finding_fd(rec) >= 0) {
		pfd[m].fd = rec_finding_fd(rec);
		pfd[m++].events = POLLIN;
	}
	r = poll(pfd, m, wait);
	/* A ring whose owning event's task ended reports POLLHUP for good: stop asking it. */
	for (i = n; r > 0 && i < m; i++) {
		if (pfd[i].revents & (POLLHUP | POLLERR)) {
			if (!rec->ring_hup)
				rec->ring_hup = calloc((size_t)ncpu, sizeof(bool));
			for (c = 0; rec->ring_hup && c < ncpu; c++)
				if (gil_rings_fd(rec->rings, c) == pfd[i].fd)
					rec->ring_hup[c] = true;
		}
	}
	if (r < 0 && errno != EINTR) {
		rec_set_err(rec, "poll: %s", strerror(errno));
		goto fail;
	}
	round_start = gil_clock_now();
	for (i = 0; r > 0 && i < n; i++) {
		t = rec->targets[which[i]];
		if (pfd[i].revents && t->state == T_LIVE) {
			t->state = T_EXITING;
			t->exit_seen = round_start;
		}
	}
	/* Targets without a pidfd (old kernels): notice exits through /proc. */
	for (i = 0; i < rec->nr_targets; i++) {
		t = rec->targets[i];
		if (t->state == T_LIVE && t->pidfd < 0 && !gil_proc_exists(t->pid)) {
			t->state = T_EXITING;
			t->exit_seen = round_start;
		}
	}
	/* targets that appeared: a process the command started, one a rescan found */
	if (rec_modes[rec->mode].round && rec_modes[rec->mode].round(rec, round_start) < 0)
		goto fail;
	/* libgiltrace loaded since: its gil_mark_step probed */
	if (rec_targets_markers_round(rec, round_start) < 0)
		goto fail;
	if (gil_rings_drain(rec->rings, rec_on_record, rec) < 0)
		goto fail;
	if (rec_take_natives(rec, 0) < 0)
		goto fail;
	if (rec->coderead) {
		const struct gil_coderead_stats *cs = gil_coderead_stats(rec->coderead);

		if (cs->reads + cs->changed != rec->code_reads_seen) {
			rec->new_code_until = round_start + NEW_CODE_NS;
			rec->fresh_until = 0;
		}
		rec->code_reads_seen = cs->reads + cs->changed;
	}
	for (i = 0; i < rec->nr_targets; i++) {
		t = rec->targets[i];
		if (t->state == T_EXITING && t->exit_seen < rec->horizon) {
			if (rec_report_pending_lost(rec, t->exit_seen) < 0)
				goto fail;
			break;
		}
	}
	/* Events stamped before the previous round began are all in the rings by now. */
	if (gil_ordered_flush(&rec->queue, rec->horizon, rec_process_one, rec) < 0)
		goto fail;
	for (i = 0; i < rec->nr_targets; i++) {
		t = rec->targets[i];
		if (t->state == T_EXITING && t->exit_seen < rec->horizon &&
		    rec_finish_target(rec, t, t->exit_seen, "exited") < 0)
			goto fail;
		if (t->state != T_DONE && t->sinks && rec_tick(rec, t, rec->horizon) < 0)
			goto fail;
		if (t->state != T_DONE && t->sinks && gil_sinks_flush(t->sinks) < 0) {
			rec_set_err(rec, "%s (recording stopped; the file is readable up to the last complete record)",
				gil_sinks_error(t->sinks));
			goto fail;
		}
		if (t->state != T_DONE)
			live = true;
	}
	rec->horizon = round_start;
	rec->metrics.drain_lag = gil_clock_now() - round_start;
	if (rec_metrics_publish(rec, round_start) < 0) {
		rec_set_err(rec, "out of memory");
		goto fail;
	}
	free(pfd);
	free(which);
	if (rec->deadline && round_start >= rec->deadline) {
		rec->reason = "duration";
		return 0;
	}
	if (!live && !(rec_modes[rec->mode].more_may_come &&
		       rec_modes[rec->mode].more_may_come(rec))) {
		rec->reason = "exited";
		return 0;
	}
	return 1;
fail:
	free(pfd);
	free(which);
	rec->reason = "error";
	return -1;
}

int gil_recorder_stop(struct gil_recorder *rec)
{
	size_t i;

	if (rec->state != R_STARTED)
		return 0;
	rec_objects_ioctl(rec, PERF_EVENT_IOC_DISABLE);
	for (i = 0; i < rec->nr_targets; i++) {
		rec_fdset_ioctl(&rec->targets[i]->fds, PERF_EVENT_IOC_DISABLE);
		rec_fdset_ioctl(&rec->targets[i]->exec_fds, PERF_EVENT_IOC_DISABLE);
	}
	rec->end_ns = gil_clock_now();
	rec->state = R_STOPPED;
	return 0;
}

int gil_recorder_finish(struct gil_recorder *rec)
{
	bool started = rec->state == R_STARTED || rec->state == R_STOPPED;
	const struct gil_thread_summary *th;
	struct gil_process_stats *ps;
	struct target *t;
	size_t i, k, nt;
	int ret = 0;

	if (rec->state == R_FINISHED)
		return 0;
	gil_recorder_stop(rec);
	if (rec_modes[rec->mode].finish)
		rec_modes[rec->mode].finish(rec, started);
	if (started && rec->rings) {
		if (gil_rings_drain(rec->rings, rec_on_record, rec) < 0 ||
		    rec_report_pending_lost(rec, rec->end_ns) < 0 ||
		    gil_ordered_flush(&rec->queue, UINT64_MAX, rec_process_one, rec) < 0)
			ret = -1;
	}
	if (!rec->reason)
		rec->reason = started ? "stopped" : "error";
	for (i = 0; i < rec->nr_targets; i++) {
		t = rec->targets[i];
		if (started) {
			if (rec_finish_target(rec, t, rec->end_ns, rec->reason) < 0)
				ret = -1;
		} else {
			/* setup failed: nothing was recorded; leave no empty file behind */
			rec_close_target_fds(rec, t);
			if (t->file) {
				gil_rawfile_free(t->file);
				t->file = NULL;
				if (t->filename)
					unlink(t->filename);
			}
			t->state = T_DONE;
		}
	}
	rec_close_object_fds(rec);
	/* those of targets let go while recording, too */
	gil_closer_wait(&rec->closer);
	/* Teardown order: events are closed (above), then rings, then the probes themselves. */
	gil_rings_free(rec->rings);
	rec->rings = NULL;
	if (gil_probes_destroy(rec->probes) < 0) {
		rec_set_err(rec, "could not remove every probe of group %s: run gil-record --cleanup",
			rec->probes->group);
		ret = -1;
	}
	ps = calloc(rec->nr_targets + 1, sizeof(*ps));
	for (i = 0; ps && i < rec->nr_targets; i++) {
		t = rec->targets[i];
		ps[i].pid = t->pid;
		ps[i].rank = t->rank;
		/* with --no-files, "(no file)": the summary lists the targets that had a file */
		ps[i].path = t->filename ? t->filename : rec->opts.no_files ? "(no file)" : NULL;
		ps[i].events = t->events;
		ps[i].intervals = gil_rawfile_intervals(t->file);
		ps[i].steps = t->marks;
		ps[i].threads = 0;
		ps[i].reason = t->reason;
		ps[i].wall_ns = (t->exit_seen && t->exit_seen < rec->end_ns ? t->exit_seen
									 : rec->end_ns) - t->start_ns;
		if (!started)
			ps[i].wall_ns = 0;
		th = gil_sink_summary_threads(gil_sinks_state(t->sinks, &gil_sink_summary), &nt);
		for (k = 0; k < nt; k++) {
			ps[i].threads += th[k].tid >= 0;
			ps[i].ns[0] += th[k].ns[0];
			ps[i].ns[1] += th[k].ns[1];
			ps[i].ns[2] += th[k].ns[2];
		}
	}
	rec->stats = ps;
	if (rec->dirfd >= 0)
		close(rec->dirfd);
	rec->dirfd = -1;
	rec->state = R_FINISHED;
	return ret;
}

void gil_recorder_free(struct gil_recorder *rec)
{
	size_t i;

	if (!rec)
		return;
	gil_recorder_finish(rec);
	rec_namer_stop(rec->namer);
	for (i = 0; i < rec->nr_targets; i++) {
		struct target *t = rec->targets[i];

		if (t)
			rec_free_target(t);
	}
	for (i = 0; i < rec->nr_objects; i++)
		rec_object_free(&rec->objects[i]);
	gil_probes_free(rec->probes);
	gil_decoder_free(rec->dec);
	gil_fntab_free(rec->fntab);
	gil_coderead_free(rec->coderead);
	free(rec->ev_of_probe);
	free(rec->obj_of_probe);
	free(rec->vaddr_of_probe);
	free(rec->objects);
	free(rec->answers);
	free(rec->targets);
	gil_ordered_free(&rec->queue);
	rec_metrics_free(rec);
	free(rec->opens);
	free(rec->lost_per_cpu);
	free(rec->klost_closed);
	free(rec->synth);
	free(rec->ring_hup);
	free(rec->stats);
	for (i = 0; i < rec->nr_skipped; i++)
		free(rec->skipped[i]);
	free(rec->skipped);
	free(rec->pids);
	free(rec->outdir);
	free(rec);
}

const struct gil_process_stats *gil_recorder_stats(const struct gil_recorder *rec, size_t *nr)
{
	*nr = rec->stats ? rec->nr_targets : 0;
	return rec->stats;
}

const struct gil_thread_summary *gil_recorder_threads(const struct gil_recorder *rec, size_t proc,
						       size_t *nr)
{
	if (proc >= rec->nr_targets) {
		*nr = 0;
		return NULL;
	}
	return gil_sink_summary_threads(gil_sinks_state(rec->targets[proc]->sinks,
							&gil_sink_summary), nr);
}

uint64_t gil_recorder_lost(const struct gil_recorder *rec)
{
	return rec->lost;
}

uint64_t gil_recorder_events(const struct gil_recorder *rec)
{
	return rec->events;
}

uint64_t gil_recorder_throttled(const struct gil_recorder *rec)
{
	return rec->throttled;
}

uint64_t gil_recorder_unguarded_exits(const struct gil_recorder *rec)
{
	uint64_t n = 0;
	size_t i;

	for (i = 0; i < rec->nr_targets; i++)
		n += rec->targets[i]->unguarded_exits;
	return n;
}

uint64_t gil_recorder_releases_not_seen(const struct gil_recorder *rec)
{
	return rec->not_seen;
}

uint64_t gil_recorder_unnamed_exited(const struct gil_recorder *rec)
{
	return rec->coderead ? gil_coderead_stats(rec->coderead)->exited : 0;
}

size_t gil_recorder_nr_targets(const struct gil_recorder *rec)
{
	return rec->nr_targets;
}

const char *gil_recorder_warning(const struct gil_recorder *rec, size_t i)
{
	return i < rec->nr_targets && rec->targets[i] ? rec->targets[i]->warning : NULL;
}

uint64_t gil_recorder_functions_cut(const struct gil_recorder *rec)
{
	const struct gil_fntab_caps *c = gil_fntab_capped(rec ? rec->fntab : NULL);

	return c->names_cut + c->files_cut + c->over_max;
}

size_t gil_recorder_nr_skipped(const struct gil_recorder *rec)
{
	return rec ? rec->nr_skipped : 0;
}

const char *gil_recorder_skipped(const struct gil_recorder *rec, size_t i)
{
	return rec && i < rec->nr_skipped ? rec->skipped[i] : NULL;
}

int gil_recorder_name_thread(struct gil_recorder *rec, pid_t pid, pid_t tid, const char *name)
{
	struct target *t;

	if (!name || !*name || tid <= 0) {
		errno = EINVAL;
		return -1;
	}
	t = rec_target_of(rec, pid);
	if (!t || t->state == T_DONE || !t->pairing || !t->file) {
		errno = ESRCH;
		return -1;
	}
	if (!rec_was_given(t, (int32_t)tid) && t->nr_given < MAX_NAMES) {
		if (gil_grow(&t->given, &t->cap_given, t->nr_given + 1, sizeof(*t->given)) < 0)
			return -1;
		t->given[t->nr_given++] = (int32_t)tid;
	}
	return gil_sinks_thread(t->sinks, (int32_t)tid, name, gil_clock_now());
}

void gil_recorder_set_reason(struct gil_recorder *rec, const char *reason)
{
	rec->reason = reason;
}

int gil_cleanup_stale(void)
{
	return gil_probes_cleanup_stale();
}
