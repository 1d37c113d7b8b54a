/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Targets: the processes recorded, their threads, events and names, from start to footer. */
#ifndef GIL_REC_TARGETS_H
#define GIL_REC_TARGETS_H

#include "state.h"

/*
 * Make @pid a target: find its Python, create probes and events. Returns 0, -1 on a hard error,
 * -2 when @pid is not traceable (reason in rec->err).
 */
int rec_add_target(struct gil_recorder *rec, pid_t pid, bool live);

/* The rest of rec_add_target, once @pid's Python is known to be object @obj. */
int rec_add_target_obj(struct gil_recorder *rec, pid_t pid, int obj, bool live);

/* Undo a half-made target @pid (the last one added): its events, its file, its memory. */
void rec_forget_target(struct gil_recorder *rec, pid_t pid);

/*
 * A process forked by a target inherited its events; it becomes a target of its own at its first
 * GIL event (a fork that only execs another program leaves no file).
 */
struct target *rec_adopt_child(struct gil_recorder *rec, pid_t pid, uint64_t ts);

/**
 * rec_file_wide - whether targets are recorded through their file's events (all-process mode
 * without --accelerator-only: every process that maps the file is a target).
 */
bool rec_file_wide(const struct gil_recorder *rec);

/**
 * rec_adopt_process - all-process mode: @pid's first GIL event (at @ts) came through object
 * @obj's events; it becomes a target from then. NULL with rec->err set on a hard error.
 */
struct target *rec_adopt_process(struct gil_recorder *rec, pid_t pid, int obj, uint64_t ts);

/*
 * rec_open_marker_events - the events of @t's gil_mark_step probe (t->mobj): on each of its
 * threads, or file-wide in all-process mode; enabled once recording. -1 with rec->err.
 */
int rec_open_marker_events(struct gil_recorder *rec, struct target *t);

/*
 * rec_targets_markers_round - once a second per live target without one, look for a
 * libgiltrace loaded since (rec_marker_find) and open its probe's events; one target per
 * round at most. -1 with rec->err.
 */
int rec_targets_markers_round(struct gil_recorder *rec, uint64_t now);

/** rec_object_events - set, enable or disable every object's file-wide events. */
void rec_objects_ioctl(struct gil_recorder *rec, unsigned long request);

/* rec_fdset_ioctl - the ioctl @request (enable, disable) on every event of @s. */
void rec_fdset_ioctl(const struct fdset *s, unsigned long request);

/* rec_fdset_lost - add the kernel's own lost counts of @s's events to @per_cpu. */
void rec_fdset_lost(const struct gil_recorder *rec, const struct fdset *s, uint64_t *per_cpu);

/** rec_close_object_fds - close the file-wide events of every object (their lost counts kept). */
void rec_close_object_fds(struct gil_recorder *rec);

void rec_close_target_fds(struct gil_recorder *rec, struct target *t);

/** rec_guard_thread - open gil_rings_guard on thread @tid of @t (ESRCH: gone, not an error). */
int rec_guard_thread(struct gil_recorder *rec, struct target *t, pid_t tid);

/** rec_unguard_thread - thread @tid of @t exited: close its guard, if it has one. */
void rec_unguard_thread(struct target *t, pid_t tid);


void rec_free_target(struct target *t);

const char *rec_name_of(const struct target *t, int32_t tid);

void rec_remember_name(struct target *t, int32_t tid, const char *comm);

/* ---- found.c: processes found while recording ---- */

/*
 * All-process mode: every CPython process on the host but ourselves. At setup (!@live) each
 * is made a target at once; while recording, the resolver's worker reads their files and
 * rec_take_found makes targets of what it found.
 */
int rec_scan_all(struct gil_recorder *rec, bool live);

/* The resolver's answers so far: their objects, and a target of each new CPython. 0, -1. */
int rec_take_found(struct gil_recorder *rec);

/*
 * Launch mode's attach (command.c): 1 when @pid is a target (or was given up: let it go), 0
 * when the resolver found no Python in it (yet), 2 when it was asked and has not answered (the
 * process stays stopped), -1 on error.
 */
int rec_attach_found(struct gil_recorder *rec, pid_t pid);

/* What the poll loop waits on for the resolver's answers; -1 when none runs. */
int rec_finding_fd(const struct gil_recorder *rec);

/* Stop the resolver, cancelling what it reads, before the last drain. */
void rec_stop_finding(struct gil_recorder *rec);

/* ---- targets.c ---- */

int rec_start_target(struct gil_recorder *rec, struct target *t);

/*
 * @pid could not be recorded (rec->err says why): undo what was made of it, and keep the line
 * for gil_recorder_skipped(). Returns 0, or -1 when the failure was running out of memory,
 * which ends the recording.
 */
int rec_skip_target(struct gil_recorder *rec, pid_t pid);

struct target *rec_target_of(struct gil_recorder *rec, pid_t pid);

bool rec_was_given(const struct target *t, int32_t tid);

/* Close what @t has open at @end, end its sinks (the file's footer), release its events. */
/* rec_take_natives - write the native callers' names the worker found (@wait_ms: wait first). */
int rec_take_natives(struct gil_recorder *rec, int wait_ms);

int rec_finish_target(struct gil_recorder *rec, struct target *t, uint64_t end,
		      const char *reason);

#endif /* GIL_REC_TARGETS_H */
