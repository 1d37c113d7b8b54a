// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Processes found while recording (all-process rescans, launch mode's new processes): what the
 * loop asks the resolver's worker (resolver.c) to read, and what it makes of the answers. The
 * worker reads the files; here the loop only queues pids and makes targets, so the rings keep
 * being drained whatever a file costs to read.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "objects.h"
#include "resolver.h"
#include "state.h"
#include "targets.h"

/* The resolver, started at the first process found while recording. 0, -1. */
static int start_resolver(struct gil_recorder *rec)
{
	if (rec->resolver)
		return 0;
	rec->resolver = rec_resolver_start(&rec->opts, rec->objects, rec->nr_objects);
	if (!rec->resolver) {
		rec_set_err(rec, "cannot start the thread that reads new processes' files: %s",
			    strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * What rec_add_target's @ret for @pid means to a scan: gone (it exited meanwhile) and not a
 * Python are not errors; one that cannot be recorded is skipped, the others go on. 0, -1.
 */
static int scanned(struct gil_recorder *rec, pid_t pid, int ret)
{
	if (ret == -1 && !gil_proc_exists(pid)) {
		/* it exited while we attached to it: not an error, just gone */
		rec_forget_target(rec, pid);
		ret = -2;
	}
	if (ret == -1 && rec_skip_target(rec, pid) < 0)
		return -1;
	return 0;
}

int rec_scan_all(struct gil_recorder *rec, bool live)
{
	pid_t *pids = NULL;
	char dev[256];
	int nr, i, ret;

	nr = gil_proc_list(&pids);
	if (nr < 0) {
		rec_set_err(rec, "cannot list processes: %s", strerror(errno));
		return -1;
	}
	if (live && start_resolver(rec) < 0) {
		free(pids);
		return -1;
	}
	for (i = 0; i < nr; i++) {
		/* A program recording itself through the API is a CPython like any other. */
		if (rec_target_of(rec, pids[i]) || gil_proc_is_kernel_thread(pids[i]))
			continue;
		if (live) {
			/* read by the resolver's worker: the rings drain meanwhile */
			if (rec_resolver_ask(rec->resolver, pids[i]) < 0) {
				free(pids);
				rec_set_err(rec, "out of memory");
				return -1;
			}
			continue;
		}
		if (rec->opts.accelerator_only && gil_proc_accelerator(pids[i], dev, sizeof(dev)) <= 0)
			continue;
		ret = rec_add_target(rec, pids[i], live);
		if (scanned(rec, pids[i], ret) < 0) {
			free(pids);
			return -1;
		}
	}
	free(pids);
	rec->err[0] = '\0'; /* non-Python processes are not errors here */
	return 0;
}

/* Launch mode: what rec_attach_found will say of @pid, once (the oldest go past 4096). */
static int note_answer(struct gil_recorder *rec, pid_t pid, int what)
{
	if (rec->nr_answers == 4096)
		memmove(rec->answers, rec->answers + 1, --rec->nr_answers * sizeof(*rec->answers));
	if (gil_grow(&rec->answers, &rec->cap_answers, rec->nr_answers + 1,
		     sizeof(*rec->answers)) < 0) {
		rec_set_err(rec, "out of memory");
		return -1;
	}
	rec->answers[rec->nr_answers].pid = pid;
	rec->answers[rec->nr_answers++].what = what;
	return 0;
}

int rec_attach_found(struct gil_recorder *rec, pid_t pid)
{
	size_t i;
	int what;

	if (rec_target_of(rec, pid))
		return 1;
	for (i = 0; i < rec->nr_answers; i++) {
		if (rec->answers[i].pid == pid) {
			what = rec->answers[i].what;
			rec->answers[i] = rec->answers[--rec->nr_answers];
			return what;
		}
	}
	if (start_resolver(rec) < 0)
		return -1;
	if (!rec_resolver_asking(rec->resolver, pid) && rec_resolver_ask(rec->resolver, pid) < 0) {
		rec_set_err(rec, "out of memory");
		return -1;
	}
	return 2;
}

int rec_take_found(struct gil_recorder *rec)
{
	struct rec_found *f, *next;
	struct object *v;
	int obj, ret = 0;

	if (!rec->resolver)
		return 0;
	for (f = rec_resolver_take(rec->resolver); f; f = next) {
		next = f->next;
		if (ret < 0)
			goto drop;
		/* its new objects are the recorder's now, at the end of the table (kept in order:
		 * the worker's later answers may name them) */
		if (f->nr_objs) {
			v = realloc(rec->objects, (rec->nr_objects + f->nr_objs) * sizeof(*v));
			if (!v) {
				rec_set_err(rec, "out of memory");
				ret = -1;
				goto drop;
			}
			rec->objects = v;
			memcpy(&rec->objects[rec->nr_objects], f->objs, f->nr_objs * sizeof(*v));
			rec->nr_objects += f->nr_objs;
			f->nr_objs = 0;
		}
		if (f->python && !rec_target_of(rec, f->pid) && gil_proc_exists(f->pid)) {
			obj = rec_find_object(rec->objects, rec->nr_objects, f->dev, f->ino);
			ret = scanned(rec, f->pid, obj >= 0 ? rec_add_target_obj(rec, f->pid, obj, true) : -2);
		}
		/* launch mode waits for it (rec_attach_found): not a Python yet, or given up */
		if (ret == 0 && rec->mode == REC_MODE_LAUNCH && !rec_target_of(rec, f->pid) &&
		    note_answer(rec, f->pid, f->python ? 1 : 0) < 0)
			ret = -1;
drop:
		rec_found_free(f);
	}
	if (ret == 0)
		rec->err[0] = '\0'; /* non-Python processes are not errors here */
	return ret;
}

int rec_finding_fd(const struct gil_recorder *rec)
{
	return rec->resolver ? rec_resolver_fd(rec->resolver) : -1;
}

void rec_stop_finding(struct gil_recorder *rec)
{
	rec_resolver_stop(rec->resolver);
	rec->resolver = NULL;
}
