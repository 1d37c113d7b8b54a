// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The resolver: one worker thread reads the objects of the processes the rescan finds
 * (objects.c, as the setup does on the loop), and hands them over with its answer. It shares
 * nothing with the loop but its two queues, under one lock: the objects it knows are its own
 * shallow copies, read for the dev, ino, symbols (whether any) and reason that never change.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "objects.h"
#include "resolver.h"

struct rec_resolver {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int stop; /* read by the worker's long reads (gil_cancel_on) */
	struct gil_options opts;
	/* under the lock */
	pid_t *asked; /* queued, oldest first */
	size_t nr_asked, cap_asked;
	pid_t current; /* being looked at; 0: none */
	struct rec_found *done, **done_tail;
	int efd; /* an eventfd: readable when answers are in */
	/* the worker's own */
	struct object *known; /* every object the recorder has or is handed: shallow copies */
	size_t nr_known;
};

/* Look at @pid: the objects it maps that are new, and which of them is its Python. */
static struct rec_found *resolve(struct rec_resolver *r, pid_t pid)
{
	struct rec_found *f = calloc(1, sizeof(*f));
	size_t before = r->nr_known;
	char dev[256];
	int o;

	if (!f)
		return NULL;
	f->pid = pid;
	if (r->opts.accelerator_only && gil_proc_accelerator(pid, dev, sizeof(dev)) <= 0) {
		gil_err(f->why, sizeof(f->why), "no accelerator device open");
		return f;
	}
	o = rec_python_object_in(&r->opts, &r->known, &r->nr_known, pid, f->why, sizeof(f->why));
	if (o >= 0) {
		f->python = true;
		f->dev = r->known[o].dev;
		f->ino = r->known[o].ino;
	}
	/* the new ones go to the recorder; the worker keeps copies to know them by */
	if (r->nr_known > before) {
		f->objs = malloc((r->nr_known - before) * sizeof(*f->objs));
		if (!f->objs) {
			/* cannot hand them over: forget them here too, the next rescan reads again */
			while (r->nr_known > before)
				rec_object_free(&r->known[--r->nr_known]);
			f->python = false;
			gil_err(f->why, sizeof(f->why), "out of memory");
			return f;
		}
		memcpy(f->objs, &r->known[before], (r->nr_known - before) * sizeof(*f->objs));
		f->nr_objs = r->nr_known - before;
	}
	return f;
}

static void *worker(void *arg)
{
	struct rec_resolver *r = arg;
	struct rec_found *f;
	pid_t pid;

	gil_cancel_on(&r->stop);
	pthread_mutex_lock(&r->lock);
	while (!__atomic_load_n(&r->stop, __ATOMIC_RELAXED)) {
		if (!r->nr_asked) {
			pthread_cond_wait(&r->cond, &r->lock);
			continue;
		}
		pid = r->asked[0];
		memmove(r->asked, r->asked + 1, --r->nr_asked * sizeof(*r->asked));
		r->current = pid;
		pthread_mutex_unlock(&r->lock);
		f = resolve(r, pid);
		pthread_mutex_lock(&r->lock);
		r->current = 0;
		if (f) {
			uint64_t one = 1;

			*r->done_tail = f;
			r->done_tail = &f->next;
			if (write(r->efd, &one, sizeof(one)) < 0) {
				/* a full counter is readable all the same */
			}
		}
	}
	pthread_mutex_unlock(&r->lock);
	return NULL;
}

struct rec_resolver *rec_resolver_start(const struct gil_options *opts, const struct object *objs,
					size_t nr)
{
	struct rec_resolver *r = calloc(1, sizeof(*r));
	int e;

	if (!r)
		return NULL;
	r->opts = *opts;
	r->done_tail = &r->done;
	r->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (r->efd < 0) {
		free(r);
		return NULL;
	}
	if (nr) {
		r->known = malloc(nr * sizeof(*r->known));
		if (!r->known) {
			close(r->efd);
			free(r);
			return NULL;
		}
		memcpy(r->known, objs, nr * sizeof(*r->known));
		r->nr_known = nr;
	}
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->cond, NULL);
	e = pthread_create(&r->thread, NULL, worker, r);
	if (e) {
		pthread_cond_destroy(&r->cond);
		pthread_mutex_destroy(&r->lock);
		free(r->known);
		close(r->efd);
		free(r);
		errno = e;
		return NULL;
	}
	return r;
}

int rec_resolver_ask(struct rec_resolver *r, pid_t pid)
{
	size_t i;
	int ret = 0;

	pthread_mutex_lock(&r->lock);
	for (i = 0; i < r->nr_asked && r->asked[i] != pid; i++)
		;
	if (i == r->nr_asked && r->current != pid) {
		if (gil_grow(&r->asked, &r->cap_asked, r->nr_asked + 1, sizeof(*r->asked)) < 0) {
			ret = -1;
		} else {
			r->asked[r->nr_asked++] = pid;
			pthread_cond_signal(&r->cond);
		}
	}
	pthread_mutex_unlock(&r->lock);
	return ret;
}

bool rec_resolver_asking(struct rec_resolver *r, pid_t pid)
{
	struct rec_found *f;
	bool yes;
	size_t i;

	pthread_mutex_lock(&r->lock);
	yes = r->current == pid;
	for (i = 0; i < r->nr_asked && !yes; i++)
		yes = r->asked[i] == pid;
	for (f = r->done; f && !yes; f = f->next)
		yes = f->pid == pid;
	pthread_mutex_unlock(&r->lock);
	return yes;
}

int rec_resolver_fd(const struct rec_resolver *r)
{
	return r->efd;
}

struct rec_found *rec_resolver_take(struct rec_resolver *r)
{
	struct rec_found *f;

	uint64_t n;

	if (read(r->efd, &n, sizeof(n)) < 0) {
		/* EAGAIN: nothing since the last take, or the answers came before it */
	}
	pthread_mutex_lock(&r->lock);
	f = r->done;
	r->done = NULL;
	r->done_tail = &r->done;
	pthread_mutex_unlock(&r->lock);
	return f;
}

void rec_found_free(struct rec_found *f)
{
	size_t i;

	if (!f)
		return;
	for (i = 0; i < f->nr_objs; i++)
		rec_object_free(&f->objs[i]);
	free(f->objs);
	free(f);
}

void rec_resolver_stop(struct rec_resolver *r)
{
	struct rec_found *f, *next;

	if (!r)
		return;
	pthread_mutex_lock(&r->lock);
	__atomic_store_n(&r->stop, 1, __ATOMIC_RELAXED);
	pthread_cond_signal(&r->cond);
	pthread_mutex_unlock(&r->lock);
	pthread_join(r->thread, NULL);
	for (f = r->done; f; f = next) {
		next = f->next;
		rec_found_free(f);
	}
	pthread_cond_destroy(&r->cond);
	pthread_mutex_destroy(&r->lock);
	free(r->asked);
	close(r->efd);
	free(r->known); /* copies: what they point to is the recorder's, or was freed above */
	free(r);
}
