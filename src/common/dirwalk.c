// SPDX-License-Identifier: LGPL-2.1-or-later
/* Walking a path without following the links another user could have made (dirwalk.h). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dirwalk.h"

static bool ours(uid_t uid)
{
	return uid == 0 || uid == geteuid();
}

bool gil_link_trusted(int dirfd, const char *name)
{
	struct stat dir, lnk;

	return !fstat(dirfd, &dir) && !fstatat(dirfd, name, &lnk, AT_SYMLINK_NOFOLLOW) &&
	       S_ISLNK(lnk.st_mode) && ours(lnk.st_uid) && ours(dir.st_uid) &&
	       !(dir.st_mode & (S_IWGRP | S_IWOTH));
}

int gil_dir_walk(const char *path, bool create, bool last_link_ok, char *at, size_t atlen)
{
	char *copy = strdup(path), *comp, *next, c;
	int dirfd, fd = -1, saved;
	struct stat st;
	bool made;

	if (at && atlen)
		snprintf(at, atlen, "%s", path);
	if (!copy) {
		errno = ENOMEM;
		return -1;
	}
	dirfd = open(copy[0] == '/' ? "/" : ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		goto fail;
	for (comp = copy; *comp; comp = next) {
		while (*comp == '/')
			comp++;
		if (!*comp)
			break;
		for (next = comp; *next && *next != '/'; next++)
			;
		c = *next;
		*next = '\0';
		if (at && atlen)
			snprintf(at, atlen, "%s", copy);
		made = false;
		fd = openat(dirfd, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 && errno == ENOENT && create) {
			if (mkdirat(dirfd, comp, 0750) < 0 && errno != EEXIST)
				goto fail;
			made = true;
			fd = openat(dirfd, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		}
		if (fd < 0 && (errno == ELOOP || errno == ENOTDIR) &&
		    !fstatat(dirfd, comp, &st, AT_SYMLINK_NOFOLLOW) && S_ISLNK(st.st_mode)) {
			if ((!c && !last_link_ok) || !gil_link_trusted(dirfd, comp)) {
				errno = ELOOP;
				goto fail;
			}
			fd = openat(dirfd, comp, O_PATH | O_DIRECTORY | O_CLOEXEC);
		}
		if (fd < 0)
			goto fail;
		if (made && (fstat(fd, &st) < 0 || st.st_uid != geteuid())) {
			/* someone else's directory took the name between mkdir and open */
			close(fd);
			errno = ESTALE;
			goto fail;
		}
		close(dirfd);
		dirfd = fd;
		fd = -1;
		*next = c;
	}
	free(copy);
	return dirfd;
fail:
	saved = errno;
	if (dirfd >= 0)
		close(dirfd);
	free(copy);
	errno = saved;
	return -1;
}
