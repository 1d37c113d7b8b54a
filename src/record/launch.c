// SPDX-License-Identifier: LGPL-2.1-or-later
/* Launch a command and catch its CPython before it runs any Python (see launch.h). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include "launch.h"
#include "common/runas.h"
#include "common/util.h"

static int add_traced(struct gil_launch *l, pid_t pid)
{
	size_t cap = l->cap; /* one capacity for the two arrays */

	if (gil_grow(&l->traced, &cap, l->nr + 1, sizeof(*l->traced)) < 0)
		return -1;
	cap = l->cap;
	if (gil_grow(&l->loading, &cap, l->nr + 1, sizeof(*l->loading)) < 0)
		return -1;
	cap = l->cap;
	if (gil_grow(&l->waiting, &cap, l->nr + 1, sizeof(*l->waiting)) < 0)
		return -1;
	l->cap = cap;
	l->traced[l->nr] = pid;
	l->waiting[l->nr] = false;
	l->loading[l->nr++] = false;
	return 0;
}

static ssize_t find_traced(const struct gil_launch *l, pid_t pid)
{
	size_t i;

	for (i = 0; i < l->nr; i++)
		if (l->traced[i] == pid)
			return (ssize_t)i;
	return -1;
}

static void drop_traced(struct gil_launch *l, pid_t pid)
{
	ssize_t i = find_traced(l, pid);

	if (i < 0)
		return;
	l->traced[i] = l->traced[l->nr - 1];
	l->loading[i] = l->loading[l->nr - 1];
	l->waiting[i] = l->waiting[l->nr - 1];
	l->nr--;
}

int gil_launch_spawn(struct gil_launch *l, char *const *argv, bool drop_to_sudo_user, char *err,
		     size_t errlen)
{
	struct gil_sudo_user su = { .ids = false };
	int pfd[2], st, e;
	pid_t pid;

	memset(l, 0, sizeof(*l));
	l->errpipe = -1;
	e = gil_command_check(argv[0]);
	if (e)
		return gil_err(err, errlen, "cannot run '%s': %s", argv[0], strerror(e));
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return gil_err(err, errlen, "cannot launch '%s': %s", argv[0], strerror(errno));
	if (drop_to_sudo_user)
		gil_sudo_user_lookup(&su);
	pid = fork();
	if (pid < 0) {
		e = errno;
		close(pfd[0]);
		close(pfd[1]);
		return gil_err(err, errlen, "cannot launch '%s': %s", argv[0], strerror(e));
	}
	if (pid == 0) {
		close(pfd[0]);
		signal(SIGPIPE, SIG_DFL);
		if ((drop_to_sudo_user && gil_sudo_user_become(&su) < 0) ||
		    ptrace(PTRACE_TRACEME, 0, NULL, NULL) < 0) {
			e = errno;
			if (write(pfd[1], &e, sizeof(e)) < 0)
				_exit(126);
			_exit(126);
		}
		raise(SIGSTOP); /* the recorder sets up, then lets us exec */
		execvp(argv[0], argv);
		e = errno;
		if (write(pfd[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(pfd[1]);
	l->errpipe = pfd[0];
	l->child = pid;
	l->running = true;
	if (waitpid(pid, &st, __WALL) < 0 || !WIFSTOPPED(st)) {
		e = 0;
		if (read(l->errpipe, &e, sizeof(e)) != sizeof(e))
			e = ECHILD;
		l->running = false;
		return gil_err(err, errlen, "cannot launch '%s': %s", argv[0], strerror(e));
	}
	if (ptrace(PTRACE_SETOPTIONS, pid, NULL,
		   (void *)(long)(PTRACE_O_TRACEEXEC | PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK |
				  PTRACE_O_TRACESYSGOOD)) < 0 ||
	    add_traced(l, pid) < 0) {
		e = errno;
		kill(pid, SIGKILL);
		waitpid(pid, &st, __WALL);
		l->running = false;
		return gil_err(err, errlen, "cannot follow '%s': %s", argv[0], strerror(e));
	}
	return 0;
}

int gil_launch_resume(struct gil_launch *l, char *err, size_t errlen)
{
	if (ptrace(PTRACE_CONT, l->child, NULL, NULL) < 0)
		return gil_err(err, errlen, "cannot start the command: %s", strerror(errno));
	return 0;
}

/* Release @pid: it runs on without us. */
static void release(struct gil_launch *l, pid_t pid, int sig)
{
	ptrace(PTRACE_DETACH, pid, NULL, (void *)(long)sig);
	drop_traced(l, pid);
}

/*
 * Try to attach the recorder to @pid (ops->attach): 1 when attached, and then no longer traced
 * (released here); 0 when not yet (its libpython is not mapped); 2 when the answer is not in
 * yet (it stays stopped, waiting); -1 on error.
 */
static int attach_now(struct gil_launch *l, const struct gil_launch_ops *ops, void *ctx, pid_t pid)
{
	ssize_t i;
	int r = ops->attach(ctx, pid);

	if (r == 1)
		release(l, pid, 0);
	i = find_traced(l, pid);
	if (i >= 0)
		l->waiting[i] = r == 2;
	return r;
}

/* Ask again about each process kept stopped for an answer; resume those that are not Python. */
static int ask_waiting(struct gil_launch *l, const struct gil_launch_ops *ops, void *ctx)
{
	size_t i = 0;
	pid_t pid;
	int r;

	while (i < l->nr) {
		if (!l->waiting[i]) {
			i++;
			continue;
		}
		pid = l->traced[i];
		r = attach_now(l, ops, ctx, pid);
		if (r < 0)
			return -1;
		if (r == 1)
			continue; /* released: another took slot i */
		if (r == 0)
			ptrace(l->loading[i] ? PTRACE_SYSCALL : PTRACE_CONT, pid, NULL, NULL);
		i++;
	}
	return 0;
}

int gil_launch_step(struct gil_launch *l, const struct gil_launch_ops *ops, void *ctx, char *err,
		    size_t errlen)
{
	int st, sig, event, r, e;
	ssize_t i;
	pid_t pid;

	if (ask_waiting(l, ops, ctx) < 0)
		return -1;
	for (;;) {
		if (!l->nr && !l->running)
			return 0;
		/* the launched tree, and --alert-cmd's commands (src/alerts.c): passed over */
		pid = waitpid(-1, &st, WNOHANG | __WALL);
		if (pid <= 0)
			return 0;
		if (WIFEXITED(st) || WIFSIGNALED(st)) {
			drop_traced(l, pid);
			if (pid != l->child)
				continue;
			l->running = false;
			l->status = st;
			if (WIFEXITED(st) && WEXITSTATUS(st) >= 126 && l->errpipe >= 0 &&
			    read(l->errpipe, &e, sizeof(e)) == sizeof(e))
				return gil_err(err, errlen, "cannot run the command: %s", strerror(e));
			/* the pipe closed at exec: the command ran */
			continue;
		}
		if (!WIFSTOPPED(st))
			continue;
		sig = WSTOPSIG(st);
		event = st >> 16;
		i = find_traced(l, pid);
		if (i < 0) {
			/* A new child of a followed process: it starts with a SIGSTOP. */
			if (add_traced(l, pid) < 0)
				return gil_err(err, errlen, "out of memory");
			i = (ssize_t)l->nr - 1;
			if (sig == SIGSTOP)
				sig = 0;
		}
		if (event == PTRACE_EVENT_EXEC) {
			/* attach answers whether the executable is a Python itself */
			l->loading[i] = ops->classify(ctx, pid) == GIL_EXEC_PYTHON_LOADING;
			r = attach_now(l, ops, ctx, pid);
			if (r < 0)
				return -1;
			if (r == 1 || r == 2)
				continue; /* released, or stopped until the answer */
			sig = 0;
		} else if (event) {
			sig = 0; /* fork/vfork event stops: the child is followed on its own */
		} else if (sig == (SIGTRAP | 0x80)) {
			/* a system call stop while ld.so maps the libraries */
			sig = 0;
			if (l->loading[i]) {
				r = attach_now(l, ops, ctx, pid);
				if (r < 0)
					return -1;
				if (r == 1 || r == 2)
					continue;
			}
		}
		ptrace(l->loading[i] ? PTRACE_SYSCALL : PTRACE_CONT, pid, NULL, (void *)(long)sig);
	}
}

void gil_launch_release(struct gil_launch *l)
{
	pid_t pid;
	int st;

	while (l->nr) {
		pid = l->traced[0];
		/* A tracee must be stopped to be detached: stop it, then let it go. */
		if (ptrace(PTRACE_DETACH, pid, NULL, NULL) < 0 && errno == ESRCH) {
			if (kill(pid, SIGSTOP) == 0 && waitpid(pid, &st, __WALL) == pid &&
			    WIFSTOPPED(st)) {
				ptrace(PTRACE_DETACH, pid, NULL, NULL);
				kill(pid, SIGCONT);
			}
		}
		drop_traced(l, pid);
	}
	free(l->traced);
	free(l->loading);
	free(l->waiting);
	l->traced = NULL;
	l->loading = NULL;
	l->waiting = NULL;
	l->cap = 0;
	if (l->errpipe >= 0)
		close(l->errpipe);
	l->errpipe = -1;
}

int gil_launch_wait(struct gil_launch *l)
{
	int st;

	while (l->running) {
		if (waitpid(l->child, &st, 0) == l->child) {
			if (WIFEXITED(st) || WIFSIGNALED(st)) {
				l->running = false;
				l->status = st;
			}
		} else if (errno != EINTR) {
			l->running = false;
		}
	}
	return l->status;
}
