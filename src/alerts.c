// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * gil-record's watchdog output: the alert lines and --alert-cmd. The recorder's alert sink
 * (record/sink-alert.c) decides what is an alert; this says it and runs the command.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "alerts.h"
#include "common/msg.h"
#include "common/util.h"

extern char **environ;

int alerts_init(struct alerts *a, const char *cmd, bool as_root, char *err, size_t errlen)
{
	char *w, *save = NULL;
	size_t n = 0;
	int e;

	memset(a, 0, sizeof(*a));
	a->as_root = as_root;
	if (!cmd)
		return 0;
	a->words = strdup(cmd);
	if (!a->words)
		return gil_err(err, errlen, "out of memory");
	for (w = strtok_r(a->words, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
		if (n == ALERT_CMD_MAX_WORDS)
			return gil_err(err, errlen, "invalid --alert-cmd value '%s': more than %d words; put the command in a script",
				       cmd, ALERT_CMD_MAX_WORDS);
		a->argv[n++] = w;
	}
	if (!n)
		return gil_err(err, errlen, "invalid --alert-cmd value '%s': give a program to run",
			       cmd);
	e = gil_command_check(a->argv[0]);
	if (e)
		return gil_err(err, errlen, "invalid --alert-cmd value '%s': cannot run '%s': %s (give an executable, with its path or on PATH)",
			       cmd, a->argv[0], strerror(e));
	if (!as_root)
		gil_sudo_user_lookup(&a->user);
	return 0;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* "12:03:04.123", local time, of @realtime_ns. */
static void clock_time(int64_t realtime_ns, char *buf, size_t len)
{
	time_t s = (time_t)(realtime_ns / 1000000000);
	struct tm tm;

	if (!localtime_r(&s, &tm) || !strftime(buf, len, "%H:%M:%S", &tm)) {
		snprintf(buf, len, "?");
		return;
	}
	snprintf(buf + strlen(buf), len - strlen(buf), ".%03d",
		 (int)(realtime_ns % 1000000000 / 1000000));
}

/* "2.003 s", "41.2 s" */
static void seconds(uint64_t ns, char *buf, size_t len)
{
	snprintf(buf, len, ns < 10000000000ull ? "%.3f s" : "%.1f s", (double)ns / 1e9);
}

/* The environment of a command: ours, the user's own HOME/USER/LOGNAME/SHELL, GIL_ALERT_*. */
static char **command_env(const struct alerts *a, const struct gil_alert *al, const char *since)
{
	static const char *const own[] = { "HOME=", "USER=", "LOGNAME=", "SHELL=", "GIL_ALERT_" };
	size_t n = 0, i, k, cap;
	char **env;
	bool user = a->user.ids && a->user.found;

	for (i = 0; environ && environ[i]; i++)
		;
	cap = i + 16;
	env = calloc(cap, sizeof(*env));
	if (!env)
		return NULL;
	for (i = 0; environ && environ[i]; i++) {
		for (k = 0; k < GIL_ARRAY_SIZE(own); k++)
			if ((user || k == GIL_ARRAY_SIZE(own) - 1) &&
			    !strncmp(environ[i], own[k], strlen(own[k])))
				break;
		if (k == GIL_ARRAY_SIZE(own))
			env[n++] = strdup(environ[i]);
	}
	if (user) {
		env[n++] = gil_strfmt("HOME=%s", a->user.home);
		env[n++] = gil_strfmt("SHELL=%s", a->user.shell);
		if (a->user.name[0]) {
			env[n++] = gil_strfmt("USER=%s", a->user.name);
			env[n++] = gil_strfmt("LOGNAME=%s", a->user.name);
		}
	}
	env[n++] = gil_strfmt("GIL_ALERT_PID=%d", (int)al->pid);
	env[n++] = gil_strfmt("GIL_ALERT_TID=%d", (int)al->tid);
	env[n++] = gil_strfmt("GIL_ALERT_RANK=%d", al->rank);
	env[n++] = gil_strfmt("GIL_ALERT_COMM=%s", al->comm);
	env[n++] = gil_strfmt("GIL_ALERT_THREAD=%s", al->thread);
	env[n++] = gil_strfmt("GIL_ALERT_FUNCTION=%s", al->function);
	env[n++] = gil_strfmt("GIL_ALERT_HELD_MS=%llu",
			      (unsigned long long)(al->held_ns / 1000000));
	env[n++] = gil_strfmt("GIL_ALERT_WAITERS=%u", al->waiters);
	env[n++] = gil_strfmt("GIL_ALERT_STATE=%s", al->open ? "holding" : "ended");
	env[n++] = gil_strfmt("GIL_ALERT_SINCE=%s", since);
	for (i = 0; i < n; i++) {
		if (!env[i]) {
			for (k = 0; k < n; k++)
				free(env[k]);
			free(env);
			return NULL;
		}
	}
	return env;
}

static void free_env(char **env)
{
	size_t i;

	for (i = 0; env && env[i]; i++)
		free(env[i]);
	free(env);
}

/* Start the command for @al, unless the limits say no (counted). */
static void run_command(struct alerts *a, const struct gil_alert *al, const char *since)
{
	uint64_t now = mono_ns();
	char **env;
	pid_t pid;
	int fd;

	alerts_reap(a);
	if (a->nr_running == ALERT_CMD_MAX_RUNNING ||
	    (a->commands && now - a->last_start_ns < ALERT_CMD_GAP_NS)) {
		a->not_run++;
		return;
	}
	/* made here: the recorder has a thread, so the child may only call what is safe */
	env = command_env(a, al, since);
	if (!env) {
		a->failed++;
		return;
	}
	pid = fork();
	if (pid == 0) {
		sigset_t none;

		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGPIPE, SIG_DFL);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		signal(SIGCHLD, SIG_DFL);
		/* a session of its own: Ctrl+C on gil-record's terminal is not for it */
		setsid();
		setpriority(PRIO_PROCESS, 0, 0); /* gil-record drains at -10; it need not */
		fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (fd >= 0)
			dup2(fd, STDIN_FILENO);
		/* none of the recorder's descriptors (events, rings, files) goes with it */
#ifdef SYS_close_range
		if (syscall(SYS_close_range, 3, ~0u, 0) < 0)
#endif
			for (fd = 3; fd < 65536; fd++)
				close(fd);
		if (!a->as_root && gil_sudo_user_ids(&a->user) < 0)
			_exit(126);
		execvpe(a->argv[0], a->argv, env);
		_exit(127);
	}
	free_env(env);
	if (pid < 0) {
		a->failed++;
		return;
	}
	a->running[a->nr_running++] = pid;
	a->commands++;
	a->last_start_ns = now;
}

void alerts_report(void *ctx, const struct gil_alert *al)
{
	struct alerts *a = ctx;
	char since[32], held[32], fn[200] = "";

	a->alerts++;
	a->holds += !al->open;
	clock_time(al->start_realtime_ns, since, sizeof(since));
	seconds(al->held_ns, held, sizeof(held));
	if (al->function[0])
		snprintf(fn, sizeof(fn), " in %s", al->function);
	if (a->tty)
		fprintf(stderr, "\r\033[K");
	fprintf(stderr,
		"gil-record: alert: pid %d rank %d (%s) tid %d (%s)%s %s the GIL for %s%s since %s, %u thread%s waiting\n",
		(int)al->pid, al->rank, al->comm, (int)al->tid, al->thread[0] ? al->thread : "?",
		fn, al->open ? "holding" : "held", held, al->open ? " now," : ",", since,
		al->waiters, al->waiters == 1 ? "" : "s");
	if (a->argv[0] && al->first)
		run_command(a, al, since);
}

void alerts_reap(struct alerts *a)
{
	size_t i = 0;
	pid_t r;
	int st;

	while (i < a->nr_running) {
		r = waitpid(a->running[i], &st, WNOHANG);
		/* ECHILD: launch mode's loop, which waits for any child, took it */
		if (r == a->running[i] || (r < 0 && errno == ECHILD)) {
			if (r > 0 && (!WIFEXITED(st) || WEXITSTATUS(st)))
				a->failed++;
			a->running[i] = a->running[--a->nr_running];
			continue;
		}
		i++;
	}
}

void alerts_finish(struct alerts *a, int timeout_ms)
{
	int waited = 0;

	alerts_reap(a);
	while (a->nr_running && waited < timeout_ms) {
		usleep(20000);
		waited += 20;
		alerts_reap(a);
	}
	if (a->nr_running)
		gil_msg("%zu --alert-cmd command(s) still running; not waited for", a->nr_running);
	if (a->not_run)
		gil_msg("%lu alert(s) ran no --alert-cmd: at most one starts a second, %d at once",
			a->not_run, ALERT_CMD_MAX_RUNNING);
	if (a->failed)
		gil_msg("%lu --alert-cmd command(s) failed (exit status other than 0, or not started)",
			a->failed);
	free(a->words);
	a->words = NULL;
}
