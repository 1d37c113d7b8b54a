// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * gil_trace_record_start/stop: the reference tool's API, recording on a background thread of
 * the calling process. The thread is plain C: it never takes the GIL, so a Python program can
 * record itself.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"
#include "giltrace.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct gil_recorder *current;
static pthread_t worker;
static volatile int stop_requested;
static int worker_status; /* 0 ok, -1 failed while recording */
static char last_error[1024];

/* Names given by gil_trace_record_name_thread(), written by the recording thread. */
#define MAX_PENDING 4096
struct pending_name {
	pid_t tid;
	char *name;
};
static pthread_mutex_t names_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pending_name *pending;
static size_t nr_pending, cap_pending;

/* Forget the names not written (the recording ended by itself before they came). */
static void drop_names(void)
{
	size_t i;

	pthread_mutex_lock(&names_lock);
	for (i = 0; i < nr_pending; i++)
		free(pending[i].name);
	free(pending);
	pending = NULL;
	nr_pending = cap_pending = 0;
	pthread_mutex_unlock(&names_lock);
}

/* On the recording thread: write the names queued so far into this process's file. */
static void write_names(struct gil_recorder *rec)
{
	struct pending_name *v;
	size_t n, i;

	pthread_mutex_lock(&names_lock);
	v = pending;
	n = nr_pending;
	pending = NULL;
	nr_pending = cap_pending = 0;
	pthread_mutex_unlock(&names_lock);
	for (i = 0; i < n; i++) {
		/* ESRCH: this process is not among the recorded ones; nothing to name */
		gil_recorder_name_thread(rec, getpid(), v[i].tid, v[i].name);
		free(v[i].name);
	}
	free(v);
}

static void *run(void *arg)
{
	struct gil_recorder *rec = arg;
	sigset_t all;
	int r;

	/* Signals are the application's business, not this thread's. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	do {
		r = gil_recorder_poll(rec, 100);
		write_names(rec);
	} while (r > 0 && !__atomic_load_n(&stop_requested, __ATOMIC_ACQUIRE));
	write_names(rec); /* those given just before stop() */
	/* Over (duration, targets gone, stop): the files are complete now, not at stop(). */
	if (gil_recorder_finish(rec) < 0)
		r = -1;
	worker_status = r < 0 ? -1 : 0;
	return NULL;
}

int gil_trace_record_start(const pid_t *pids, size_t nr_pids, double duration)
{
	struct gil_options opts;

	gil_options_init(&opts);
	opts.pids = pids;
	opts.nr_pids = nr_pids;
	opts.duration = duration;
	return gil_trace_record_start_opts(&opts);
}

int gil_trace_record_start_opts(const struct gil_options *opts)
{
	struct gil_recorder *rec;
	int ret = -1;

	pthread_mutex_lock(&lock);
	last_error[0] = '\0';
	if (current) {
		snprintf(last_error, sizeof(last_error),
			 "a recording is already running in this process: call gil_trace_record_stop() first");
		errno = EBUSY;
		goto out;
	}
	if (opts->command) {
		snprintf(last_error, sizeof(last_error),
			 "launching a command is gil-record's: the API records running processes");
		errno = EINVAL;
		goto out;
	}
	rec = gil_recorder_alloc(opts);
	if (!rec) {
		snprintf(last_error, sizeof(last_error), "cannot start: %s", strerror(errno));
		goto out;
	}
	if (gil_recorder_setup(rec) < 0 || gil_recorder_start(rec) < 0) {
		snprintf(last_error, sizeof(last_error), "%s", gil_recorder_error(rec));
		gil_recorder_free(rec);
		goto out;
	}
	stop_requested = 0;
	worker_status = 0;
	ret = pthread_create(&worker, NULL, run, rec);
	if (ret) {
		snprintf(last_error, sizeof(last_error), "cannot start the recording thread: %s",
			 strerror(ret));
		gil_recorder_free(rec);
		errno = ret;
		ret = -1;
		goto out;
	}
	current = rec;
out:
	pthread_mutex_unlock(&lock);
	return ret;
}

int gil_trace_record_stop(void)
{
	int ret = 0;

	pthread_mutex_lock(&lock);
	if (!current) {
		snprintf(last_error, sizeof(last_error), "no recording is running");
		errno = ESRCH;
		pthread_mutex_unlock(&lock);
		return -1;
	}
	__atomic_store_n(&stop_requested, 1, __ATOMIC_RELEASE);
	pthread_join(worker, NULL);
	drop_names();
	if (worker_status < 0) {
		snprintf(last_error, sizeof(last_error), "%s", gil_recorder_error(current));
		ret = -1;
	}
	gil_recorder_free(current);
	current = NULL;
	pthread_mutex_unlock(&lock);
	return ret;
}

int gil_trace_record_name_thread(pid_t tid, const char *name)
{
	char *copy;
	int ret = -1;

	pthread_mutex_lock(&lock);
	if (tid <= 0 || !name || !*name) {
		snprintf(last_error, sizeof(last_error),
			 "gil_trace_record_name_thread: give a thread id > 0 and a non-empty name");
		errno = EINVAL;
		goto out;
	}
	if (!current) {
		snprintf(last_error, sizeof(last_error), "no recording is running");
		errno = ESRCH;
		goto out;
	}
	copy = strdup(name);
	if (!copy)
		goto nomem;
	pthread_mutex_lock(&names_lock);
	if (nr_pending >= MAX_PENDING) {
		/* the recording thread is gone (duration reached) or far behind */
		pthread_mutex_unlock(&names_lock);
		free(copy);
		snprintf(last_error, sizeof(last_error),
			 "%d thread names are already waiting to be written", MAX_PENDING);
		errno = EAGAIN;
		goto out;
	}
	if (gil_grow(&pending, &cap_pending, nr_pending + 1, sizeof(*pending)) < 0) {
		pthread_mutex_unlock(&names_lock);
		free(copy);
		goto nomem;
	}
	pending[nr_pending].tid = tid;
	pending[nr_pending++].name = copy;
	pthread_mutex_unlock(&names_lock);
	ret = 0;
	goto out;
nomem:
	snprintf(last_error, sizeof(last_error), "out of memory");
	errno = ENOMEM;
out:
	pthread_mutex_unlock(&lock);
	return ret;
}

const char *gil_trace_record_error(void)
{
	return last_error;
}

/*
 * Probed by the recorder (record/marker.c) at gil_mark_step_probe, with @step in the first
 * argument's register there. That is a nop, which the kernel's uprobes (recent x86 ones) emulate
 * instead of single-stepping: at the entry (an endbr64 where the build has CET) or on the ret,
 * a hit costs a single-step trap, about 23 us in this VM against 0.4 us at the nop
 * (bench/markcost.py). Never inlined or cloned: the label is defined once.
 */
__attribute__((noinline, noclone, used)) void gil_mark_step(long long step)
{
#if defined(__x86_64__)
	__asm__ __volatile__(".globl gil_mark_step_probe\n"
			     "gil_mark_step_probe:\n\t"
			     "nop" /* 0x90: emulated (a 4-byte nopl with a SIB byte is not) */
			     : : "D"(step) : "memory");
#elif defined(__aarch64__)
	register long long x0 __asm__("x0") = step;

	__asm__ __volatile__(".globl gil_mark_step_probe\n"
			     "gil_mark_step_probe:\n\t"
			     "nop"
			     : : "r"(x0) : "memory");
#else
	__asm__ __volatile__("" : : "r"(step) : "memory");
#endif
}
