// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Running a program for the user who ran sudo: launch mode's command (record/launch.c) and
 * gil-record's --alert-cmd. Looked up before fork, applied in the child.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runas.h"
#include "util.h"

void gil_sudo_user_lookup(struct gil_sudo_user *u)
{
	struct passwd *pw;

	memset(u, 0, sizeof(*u));
	u->ids = gil_sudo_ids(&u->uid, &u->gid);
	if (!u->ids)
		return;
	/* only the user's own group until the password database names more */
	u->groups[0] = u->gid;
	u->nr_groups = 1;
	pw = getpwuid(u->uid);
	if (!pw)
		return;
	if (pw->pw_name && pw->pw_name[0]) {
		int n = (int)GIL_ARRAY_SIZE(u->groups);

		/* the groups of the user the uid names (SUDO_USER may be missing or another's) */
		if (getgrouplist(pw->pw_name, u->gid, u->groups, &n) >= 0 && n > 0)
			u->nr_groups = n;
		else
			u->groups[0] = u->gid;
	}
	snprintf(u->home, sizeof(u->home), "%s", pw->pw_dir ? pw->pw_dir : "/");
	snprintf(u->shell, sizeof(u->shell), "%s", pw->pw_shell ? pw->pw_shell : "/bin/sh");
	snprintf(u->name, sizeof(u->name), "%s", pw->pw_name ? pw->pw_name : "");
	u->found = true;
}

int gil_sudo_user_ids(const struct gil_sudo_user *u)
{
	if (!u->ids)
		return 0;
	/* root's supplementary groups never go with the command, whatever SUDO_USER says */
	if (setgroups((size_t)u->nr_groups, u->groups) < 0 || setgid(u->gid) < 0 ||
	    setuid(u->uid) < 0)
		return -1;
	return 0;
}

/*
 * In the child: become the invoking user of sudo, unless asked to stay root, with that user's
 * HOME, USER, LOGNAME and SHELL (sudo leaves root's: the command would write into /root).
 */
int gil_sudo_user_become(const struct gil_sudo_user *u)
{
	if (!u->ids)
		return 0;
	if (gil_sudo_user_ids(u) < 0)
		return -1;
	if (u->found && (setenv("HOME", u->home, 1) < 0 || setenv("SHELL", u->shell, 1) < 0 ||
			 (u->name[0] && (setenv("USER", u->name, 1) < 0 ||
					 setenv("LOGNAME", u->name, 1) < 0))))
		return -1;
	return 0;
}

/* 0 when execvp would find an executable @cmd, else the errno it would fail with. */
int gil_command_check(const char *cmd)
{
	const char *path = getenv("PATH"), *p, *end;
	char buf[4096];
	int e = ENOENT;
	size_t n;

	if (!*cmd)
		return ENOENT;
	if (strchr(cmd, '/'))
		return access(cmd, X_OK) == 0 ? 0 : errno;
	for (p = path ? path : "/usr/local/bin:/usr/bin:/bin"; ; p = end + 1) {
		end = strchr(p, ':');
		n = end ? (size_t)(end - p) : strlen(p);
		if (snprintf(buf, sizeof(buf), "%.*s/%s", (int)n, n ? p : ".", cmd) <
		    (int)sizeof(buf)) {
			if (access(buf, X_OK) == 0)
				return 0;
			if (errno != ENOENT)
				e = errno;
		}
		if (!end)
			return e;
	}
}
