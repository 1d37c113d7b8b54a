// SPDX-License-Identifier: LGPL-2.1-or-later
/* The output file: nothing appears under the final name until the trace is complete. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <stdint.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/dirwalk.h"
#include "outfile.h"
#include "common/util.h"

/* A temporary name beside @base in @dirfd, created O_EXCL; its name into *@tmp. */
static int make_tmp(int dirfd, const char *base, char **tmp)
{
	static const char chars[] = "abcdefghijklmnopqrstuvwxyz0123456789";
	unsigned int seed = (unsigned int)getpid() ^ (unsigned int)(uintptr_t)tmp;
	char suffix[7];
	int fd, i, k;

	for (i = 0; i < 100; i++) {
		for (k = 0; k < 6; k++)
			suffix[k] = chars[rand_r(&seed) % (sizeof(chars) - 1)];
		suffix[6] = '\0';
		free(*tmp);
		if (asprintf(tmp, ".%s.%s", base, suffix) < 0) {
			*tmp = NULL;
			errno = ENOMEM;
			return -1;
		}
		fd = openat(dirfd, *tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd >= 0 || errno != EEXIST)
			return fd;
	}
	errno = EEXIST;
	return -1;
}

/*
 * Is @fd a named pipe (or socket) of a user other than root and the caller? Its reader is that
 * user: root's trace is not handed to them. Devices are root's to make, pipes of a shell ours.
 */
static bool pipe_of_other(int fd)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return true;
	if (!S_ISFIFO(st.st_mode) && !S_ISSOCK(st.st_mode))
		return false;
	return st.st_uid != 0 && st.st_uid != getuid();
}

struct outfile *outfile_open(const char *path, char *err, size_t errlen)
{
	struct outfile *o;
	char *dcopy = NULL, *bcopy = NULL, at[4096];
	const char *base;
	struct stat st;
	int saved = 0;
	mode_t mask;

	o = calloc(1, sizeof(*o));
	if (!o || !(o->buf = malloc(OUTFILE_BUF))) {
		free(o);
		gil_err(err, errlen, "out of memory");
		return NULL;
	}
	o->fd = -1;
	o->dirfd = -1;
	if (!strcmp(path, "-")) {
		o->fd = STDOUT_FILENO;
		return o;
	}
	o->path = strdup(path);
	dcopy = strdup(path);
	bcopy = strdup(path);
	if (!o->path || !dcopy || !bcopy) {
		gil_err(err, errlen, "out of memory");
		goto fail;
	}
	/* the directory, through no link another user could have made */
	o->dirfd = gil_dir_walk(dirname(dcopy), false, true, at, sizeof(at));
	if (o->dirfd < 0) {
		saved = errno;
		if (saved == ELOOP)
			gil_err(err, errlen, "cannot write %s: %s is a symbolic link another user could have made; give the real path", path, at);
		else
			gil_err(err, errlen, "cannot write %s: %s", path, strerror(saved));
		goto fail;
	}
	base = basename(bcopy);
	if (!*base || !strcmp(base, ".") || !strcmp(base, "..") || !strcmp(base, "/")) {
		gil_err(err, errlen, "cannot write %s: not a file name", path);
		goto fail;
	}
	if (fstatat(o->dirfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode) &&
	    !gil_link_trusted(o->dirfd, base)) {
		/* replacing it would do no harm, but the user asked for its target: say no */
		gil_err(err, errlen, "cannot write %s: a symbolic link another user could have made; remove it or choose another --output",
			path);
		saved = ELOOP;
		goto fail;
	}
	if (fstatat(o->dirfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(st.st_mode) &&
	    !S_ISDIR(st.st_mode)) {
		/*
		 * /dev/null, /dev/stdout, a FIFO, a link of ours: written through, never replaced.
		 * Without O_CREAT, so that a dangling link is not followed to create a file.
		 */
		o->fd = openat(o->dirfd, base, O_WRONLY | O_TRUNC | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
		if (o->fd < 0 && errno == ENOENT && S_ISLNK(st.st_mode)) {
			gil_err(err, errlen, "cannot write %s: a symbolic link to a file that does not "
				"exist; remove the link or choose another --output", path);
			goto fail;
		}
		if (o->fd < 0 && errno == ENXIO) {
			/* O_NONBLOCK: a named pipe nobody reads fails at once, where it would block */
			gil_err(err, errlen, "cannot write %s: a named pipe that nobody reads; start its "
				"reader first, or remove it or choose another --output", path);
			goto fail;
		}
		if (o->fd < 0) {
			gil_err(err, errlen, "cannot write %s: %s", path, strerror(errno));
			goto fail;
		}
		if (pipe_of_other(o->fd)) {
			gil_err(err, errlen, "cannot write %s: a named pipe or socket another user "
				"made (its reader would get the trace); remove it or choose another "
				"--output", path);
			goto fail;
		}
		/* written as a file is: a slow reader makes it wait, not fail */
		if (fcntl(o->fd, F_SETFL, fcntl(o->fd, F_GETFL) & ~O_NONBLOCK) < 0) {
			gil_err(err, errlen, "cannot write %s: %s", path, strerror(errno));
			goto fail;
		}
		free(dcopy);
		free(bcopy);
		return o;
	}
	o->base = strdup(base);
	if (!o->base) {
		gil_err(err, errlen, "out of memory");
		goto fail;
	}
	o->fd = make_tmp(o->dirfd, base, &o->tmp);
	if (o->fd < 0) {
		gil_err(err, errlen, "cannot write %s: %s", path, strerror(errno));
		goto fail;
	}
	/* created 0600; the trace gets the usual 0666 & ~umask */
	mask = umask(0);
	umask(mask);
	if (fchmod(o->fd, 0666 & ~mask) < 0) {
		gil_err(err, errlen, "cannot write %s: %s", path, strerror(errno));
		goto fail;
	}
	free(dcopy);
	free(bcopy);
	return o;
fail:
	if (!saved)
		saved = errno;
	free(dcopy);
	free(bcopy);
	outfile_abort(o);
	errno = saved; /* ELOOP: a link refused (@err says which) */
	return NULL;
}

static int write_all(struct outfile *o, const char *p, size_t n)
{
	if (o->err[0])
		return -1;
	if (gil_write_all(o->fd, p, n) < 0)
		return gil_err(o->err, sizeof(o->err), "cannot write %s: %s",
			       o->path ? o->path : "standard output", strerror(errno));
	o->written += n;
	return 0;
}

int outfile_flush(struct outfile *o)
{
	int ret = write_all(o, o->buf, o->len);

	o->len = 0;
	return ret;
}

int outfile_write_slow(struct outfile *o, const void *p, size_t n)
{
	if (outfile_flush(o) < 0)
		return -1;
	if (n > OUTFILE_BUF / 2)
		return write_all(o, p, n);
	memcpy(o->buf, p, n);
	o->len = n;
	return 0;
}

int outfile_commit(struct outfile *o, char *err, size_t errlen)
{
	int ret = -1;

	if (outfile_flush(o) < 0)
		goto out;
	if (!o->path) {
		ret = 0;
		goto out;
	}
	if (close(o->fd) < 0) {
		o->fd = -1;
		gil_err(o->err, sizeof(o->err), "cannot write %s: %s", o->path, strerror(errno));
		goto out;
	}
	o->fd = -1;
	/* renameat replaces a link of ours too, never its target: in the directory we walked */
	if (o->tmp && renameat(o->dirfd, o->tmp, o->dirfd, o->base) < 0) {
		gil_err(o->err, sizeof(o->err), "cannot write %s: %s", o->path, strerror(errno));
		goto out;
	}
	free(o->tmp);
	o->tmp = NULL;
	ret = 0;
out:
	if (ret < 0)
		gil_err(err, errlen, "%s", o->err);
	outfile_abort(o);
	return ret;
}

void outfile_abort(struct outfile *o)
{
	if (!o)
		return;
	if (o->path && o->fd >= 0)
		close(o->fd);
	if (o->tmp)
		unlinkat(o->dirfd, o->tmp, 0);
	if (o->dirfd >= 0)
		close(o->dirfd);
	free(o->tmp);
	free(o->base);
	free(o->path);
	free(o->buf);
	free(o);
}
