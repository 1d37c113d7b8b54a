// SPDX-License-Identifier: LGPL-2.1-or-later
/* The output file: nothing appears under the final name until the trace is complete. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "outfile.h"
#include "common/util.h"

struct outfile *outfile_open(const char *path, char *err, size_t errlen)
{
	struct outfile *o;
	char *dcopy = NULL, *bcopy = NULL;
	struct stat st;
	mode_t mask;

	o = calloc(1, sizeof(*o));
	if (!o || !(o->buf = malloc(OUTFILE_BUF))) {
		free(o);
		gil_err(err, errlen, "out of memory");
		return NULL;
	}
	o->fd = -1;
	if (!strcmp(path, "-")) {
		o->fd = STDOUT_FILENO;
		return o;
	}
	o->path = strdup(path);
	if (!o->path) {
		gil_err(err, errlen, "out of memory");
		goto fail;
	}
	if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
		/*
		 * /dev/null, /dev/stdout, a FIFO, a link: written through, never replaced. Without
		 * O_CREAT, so that a dangling link is not followed to create a file.
		 */
		o->fd = open(path, O_WRONLY | O_TRUNC | O_NOCTTY | O_CLOEXEC);
		if (o->fd < 0 && errno == ENOENT && S_ISLNK(st.st_mode)) {
			gil_err(err, errlen, "cannot write %s: a symbolic link to a file that does not "
				"exist; remove the link or choose another --output", path);
			goto fail;
		}
		if (o->fd < 0) {
			gil_err(err, errlen, "cannot write %s: %s", path, strerror(errno));
			goto fail;
		}
		return o;
	}
	dcopy = strdup(path);
	bcopy = strdup(path);
	if (!dcopy || !bcopy ||
	    asprintf(&o->tmp, "%s/.%s.XXXXXX", dirname(dcopy), basename(bcopy)) < 0) {
		o->tmp = NULL;
		gil_err(err, errlen, "out of memory");
		goto fail;
	}
	o->fd = mkstemp(o->tmp);
	if (o->fd < 0) {
		gil_err(err, errlen, "cannot write %s: %s", path, strerror(errno));
		free(o->tmp);
		o->tmp = NULL;
		goto fail;
	}
	/* mkstemp makes 0600; the trace gets the usual 0666 & ~umask */
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
	free(dcopy);
	free(bcopy);
	outfile_abort(o);
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
	if (o->tmp && rename(o->tmp, o->path) < 0) {
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
		unlink(o->tmp);
	free(o->tmp);
	free(o->path);
	free(o->buf);
	free(o);
}
