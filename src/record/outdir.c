// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The output directory: created and checked once, every file made inside it by descriptor.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/dirwalk.h"
#include "state.h"
#include "outdir.h"

/* The user on whose behalf we run: sudo's invoking user, else the real user. */
static uid_t invoking_uid(void)
{
	uid_t uid;

	return gil_sudo_ids(&uid, NULL) ? uid : getuid();
}

/*
 * Open the output directory, creating what is missing (mode 0750), one component at a time
 * (common/dirwalk.c): no component is a link a user could change, and what we create is
 * checked to be ours before we go into it. The directory itself must be owned by root or by
 * the invoking user and not writable by every user (sticky or not: names another user creates
 * there would block or steal recordings), nor by a group unless it is root's and sticky.
 */
int rec_open_outdir(struct gil_recorder *rec)
{
	char at[PATH_MAX];
	uid_t me = invoking_uid();
	int dirfd, fd = -1;
	struct stat st;

	dirfd = gil_dir_walk(rec->outdir, true, false, at, sizeof(at));
	if (dirfd < 0) {
		if (errno == ELOOP && !strcmp(at, rec->outdir))
			rec_set_err(rec, "output directory %s is a symbolic link: refusing it (give the real path with --output-dir)",
				    rec->outdir);
		else if (errno == ELOOP)
			rec_set_err(rec, "output directory %s: %s is a symbolic link: refusing it (give the real path with --output-dir)",
				    rec->outdir, at);
		else if (errno == ENOTDIR && strcmp(at, rec->outdir))
			rec_set_err(rec, "cannot create output directory %s: Not a directory (choose another with --output-dir)",
				    rec->outdir);
		else if (errno == ENOTDIR)
			rec_set_err(rec, "output directory %s is not a directory", rec->outdir);
		else if (errno == ESTALE)
			rec_set_err(rec, "output directory %s changed while it was created: refusing it",
				    at);
		else
			rec_set_err(rec, "cannot create output directory %s: %s (choose another with --output-dir)",
				    at, strerror(errno));
		return -1;
	}
	if (fstat(dirfd, &st) < 0) {
		rec_set_err(rec, "cannot use output directory %s: %s", rec->outdir, strerror(errno));
		goto out;
	}
	if (st.st_mode & S_IWOTH) {
		rec_set_err(rec, "output directory %s is writable by every user: refusing it (chmod o-w it or choose another with --output-dir)",
			    rec->outdir);
		goto out;
	}
	/*
	 * Writable by a group: its other members could plant names as every user could. Only a
	 * sticky directory of root's, as /tmp is (where names are their owners'), is taken.
	 */
	if ((st.st_mode & S_IWGRP) && !(st.st_uid == 0 && (st.st_mode & S_ISVTX))) {
		rec_set_err(rec, "output directory %s is writable by group %u: refusing it (chmod g-w it or choose another with --output-dir)",
			    rec->outdir, (unsigned int)st.st_gid);
		goto out;
	}
	if (st.st_uid != 0 && st.st_uid != me) {
		rec_set_err(rec, "output directory %s belongs to user %u: refusing it (use a directory of yours or root's with --output-dir)",
			    rec->outdir, (unsigned int)st.st_uid);
		goto out;
	}
	/* reopen for real: files are created through this descriptor (O_PATH cannot) */
	fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
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
	close(dirfd);
	rec->dirfd = fd;
	return fd < 0 ? -1 : 0;
}

/* GIL_<pid>_rank_<rank>.json, or _1, _2... before .json when a recording of it already exists. */
int rec_create_file(struct gil_recorder *rec, struct target *t)
{
	char name[96], err[512];
	int n;

	if (rec->opts.no_files) {
		t->file = gil_rawfile_discard();
		if (!t->file) {
			rec_set_err(rec, "out of memory");
			return -1;
		}
		return 0;
	}

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
