/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The objects of processes found while recording (all-process mode's rescan), read on a
 * worker thread of their own so that the rings keep draining meanwhile: a file a user made (a
 * debug file of a GiB, a debuginfod server that answers slowly) delays that process's start,
 * never the others' events, the --duration or Ctrl+C.
 */
#ifndef GIL_REC_RESOLVER_H
#define GIL_REC_RESOLVER_H

#include "state.h"

/* What the worker found for one process. */
struct rec_found {
	pid_t pid;
	bool python; /* dev:ino is the file that defines its GIL functions */
	uint64_t dev, ino;
	char why[512]; /* otherwise why not (not a CPython, no accelerator, stripped...) */
	/* the objects read for it that the recorder has not seen: its own from now on */
	struct object *objs;
	size_t nr_objs;
	struct rec_found *next;
};

struct rec_resolver;

/*
 * rec_resolver_start - a worker that reads with @opts (copied) and knows the @nr objects at
 * @objs already read: it reads none of them again (it keeps a shallow copy of each, whose
 * symbols and reason must outlive it). NULL with errno when it cannot start.
 */
struct rec_resolver *rec_resolver_start(const struct gil_options *opts, const struct object *objs,
					size_t nr);

/* rec_resolver_ask - look at process @pid, unless it is queued or being looked at. 0, -1. */
int rec_resolver_ask(struct rec_resolver *r, pid_t pid);

/* rec_resolver_asking - whether @pid is queued, being looked at, or answered and not taken. */
bool rec_resolver_asking(struct rec_resolver *r, pid_t pid);

/* rec_resolver_fd - readable when answers are in (the poll loop wakes for them). */
int rec_resolver_fd(const struct rec_resolver *r);

/* rec_resolver_take - the answers so far, oldest first (NULL: none); each freed by the caller. */
struct rec_found *rec_resolver_take(struct rec_resolver *r);

/* rec_found_free - free one answer and the objects it still holds. */
void rec_found_free(struct rec_found *f);

/*
 * rec_resolver_stop - cancel what the worker reads (gil_cancel_on: a CRC, a download) and
 * wait for it; answers not taken are dropped. @r may be NULL.
 */
void rec_resolver_stop(struct rec_resolver *r);

#endif /* GIL_REC_RESOLVER_H */
