// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The output directory: created and checked once, every file made inside it by descriptor.
 */
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

#include "recorder.h"

/* mkdir -p with mode 0750 for what we create; refuses symlinks and world-writable dirs. */
int rec_open_outdir(struct gil_recorder *rec)
{
	char *path = strdup(rec->outdir), *p;
	struct stat st;
	int fd = -1;

	if (!path)
		return -1;
	for (p = path + 1; ; p++) {
		if (*p == '/' || *p == '\0') {
			char c = *p;

			*p = '\0';
			if (mkdir(path, 0750) < 0 && errno != EEXIST) {
				rec_set_err(rec, "cannot create output directory %s: %s (choose another with --output-dir)",
					path, strerror(errno));
				goto out;
			}
			*p = c;
			if (!c)
				break;
		}
	}
	if (lstat(rec->outdir, &st) < 0) {
		rec_set_err(rec, "cannot use output directory %s: %s", rec->outdir, strerror(errno));
		goto out;
	}
	if (S_ISLNK(st.st_mode)) {
		rec_set_err(rec, "output directory %s is a symbolic link: refusing it (give the real path with --output-dir)",
			rec->outdir);
		goto out;
	}
	if (!S_ISDIR(st.st_mode)) {
		rec_set_err(rec, "output directory %s is not a directory", rec->outdir);
		goto out;
	}
	if ((st.st_mode & S_IWOTH) && !(st.st_mode & S_ISVTX)) {
		rec_set_err(rec, "output directory %s is writable by every user: refusing it (chmod o-w it or choose another with --output-dir)",
			rec->outdir);
		goto out;
	}
	fd = open(rec->outdir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		rec_set_err(rec, "cannot open output directory %s: %s", rec->outdir, strerror(errno));
		goto out;
	}
	if (faccessat(fd, ".", W_OK, AT_EACCESS) < 0) {
		rec_set_err(rec, "output directory %s is not writable: %s (choose another with --output-dir)",
			rec->outdir, strerror(errno));
		close(fd);
		fd = -1;
	}
out:
	free(path);
	rec->dirfd = fd;
	return fd < 0 ? -1 : 0;
}

/* GIL_<pid>_rank_<rank>.json, or _1, _2... before .json when a recording of it already exists. */
int rec_create_file(struct gil_recorder *rec, struct target *t)
{
	char name[96], err[512];
	int n;

	for (n = 0; n < 1000; n++) {
		if (n)
			snprintf(name, sizeof(name), "GIL_%d_rank_%d_%d.json", (int)t->pid, t->rank, n);
		else
			snprintf(name, sizeof(name), "GIL_%d_rank_%d.json", (int)t->pid, t->rank);
		t->file = gil_rawfile_create(rec->dirfd, name, err, sizeof(err));
		if (t->file)
			break;
		if (errno != EEXIST) {
			rec_set_err(rec, "cannot create %s/%s: %s", rec->outdir, name, strerror(errno));
			return -1;
		}
	}
	if (!t->file) {
		rec_set_err(rec, "too many recordings of process %d in %s", (int)t->pid, rec->outdir);
		return -1;
	}
	n = (int)(strlen(rec->outdir) + strlen(name) + 2);
	t->filename = malloc((size_t)n);
	if (!t->filename) {
		rec_set_err(rec, "out of memory");
		return -1;
	}
	snprintf(t->filename, (size_t)n, "%s/%s", rec->outdir, name);
	return 0;
}
