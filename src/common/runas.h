/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Running a program for the user who ran sudo (launch mode's command, --alert-cmd). */
#ifndef GIL_RUNAS_H
#define GIL_RUNAS_H

#include <stdbool.h>
#include <sys/types.h>

/* The invoking user of sudo, looked up before fork (getpwuid is not safe after it). */
struct gil_sudo_user {
	uid_t uid;
	gid_t gid;
	bool ids; /* under sudo, with SUDO_UID and SUDO_GID */
	gid_t groups[256]; /* the user's groups, looked up before fork; at least gid */
	int nr_groups;
	char home[4096], shell[256], name[256];
	bool found; /* the password database knows the user: home, shell, name */
};

/* gil_sudo_user_lookup - fill @u for the invoking user of sudo (u->ids false: not under sudo). */
void gil_sudo_user_lookup(struct gil_sudo_user *u);

/*
 * gil_sudo_user_become - in a child before exec: become @u (nothing when not under sudo), with
 * the user's HOME, USER, LOGNAME and SHELL. 0, or -1 with errno.
 */
int gil_sudo_user_become(const struct gil_sudo_user *u);

/*
 * gil_sudo_user_ids - @u's groups, gid and uid only (nothing when not under sudo): for a child
 * of a threaded process, whose environment the parent made. 0, or -1 with errno.
 */
int gil_sudo_user_ids(const struct gil_sudo_user *u);

/* gil_command_check - 0 when execvp would find an executable @cmd, else the errno it fails with. */
int gil_command_check(const char *cmd);

#endif /* GIL_RUNAS_H */
