/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Launching a command under the recorder: the command and the processes it forks are followed
 * with ptrace through their execs until one is a CPython; that one is handed to the recorder
 * before it runs any Python, then released. spawn -> resume -> step... -> release.
 */
#ifndef GIL_LAUNCH_H
#define GIL_LAUNCH_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

enum gil_exec_kind {
	GIL_EXEC_OTHER = 0, /* not a Python, or one whose GIL functions are in the executable */
	GIL_EXEC_PYTHON_LOADING, /* needs a libpython that ld.so has yet to map: watch its mmaps */
};

struct gil_launch_ops {
	/* A traced process ran execve(): will ld.so map a libpython? (a cheap look: DT_NEEDED) */
	enum gil_exec_kind (*classify)(void *ctx, pid_t pid);
	/*
	 * Try to attach the recorder to @pid (it is stopped). Returns 1 when attached (the
	 * process is then released), 0 when not (yet: its libpython is not mapped), 2 when the
	 * answer is being worked out elsewhere (the process stays stopped, and is asked about
	 * again at each step until 0 or 1), -1 on error.
	 */
	int (*attach)(void *ctx, pid_t pid);
};

struct gil_launch {
	pid_t child; /* the command itself */
	bool running; /* spawned and not yet reaped */
	int status; /* its wait status once it ended */
	pid_t *traced; /* processes under ptrace (not yet found to be Python) */
	bool *loading; /* per traced: watching ld.so's mmaps */
	bool *waiting; /* per traced: kept stopped until attach answers */
	size_t nr, cap;
	int errpipe; /* reports an execvp failure of the first exec */
};

/**
 * gil_launch_spawn - start @argv stopped before its execve. With @drop_to_sudo_user and the
 * caller running under sudo, the command runs as the invoking user. Returns 0 or -1 with @err.
 * Pair with gil_launch_release().
 */
int gil_launch_spawn(struct gil_launch *l, char *const *argv, bool drop_to_sudo_user, char *err,
		     size_t errlen);

/** gil_launch_resume - let the command run (after the recorder started). */
int gil_launch_resume(struct gil_launch *l, char *err, size_t errlen);

/**
 * gil_launch_step - handle every pending ptrace stop and exit without blocking. Returns 0, or -1
 * with @err (the command could not be executed, or an attach failed).
 */
int gil_launch_step(struct gil_launch *l, const struct gil_launch_ops *ops, void *ctx, char *err,
		    size_t errlen);

/** gil_launch_release - detach from every process still followed; they run on untraced. */
void gil_launch_release(struct gil_launch *l);

/** gil_launch_wait - wait for the command to end (after release). Returns its wait status. */
int gil_launch_wait(struct gil_launch *l);

#endif /* GIL_LAUNCH_H */
