// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Debug files fetched by build-id from the servers in DEBUGINFOD_URLS (libdebuginfod, as perf
 * and gdb do), when none is on the machine. The client keeps what it fetched in its cache
 * (DEBUGINFOD_CACHE_PATH); DEBUGINFOD_TIMEOUT bounds a server that does not answer, and
 * DEBUGINFOD_PROGRESS shows a download's progress (gil-record sets both on a terminal).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <elfutils/debuginfod.h>

#include "common/util.h"
#include "scan.h"

/* A download gives up when the recording that asked for it stops (gil_cancel_on). */
static int progress(debuginfod_client *c, long a, long b)
{
	(void)c;
	(void)a;
	(void)b;
	return gil_cancelled();
}

bool gil_debuginfod_supported(void)
{
	return true;
}

int gil_debuginfod_find(const char *build_id, char *path, size_t pathlen, char *why,
			size_t whylen)
{
	unsigned char id[64];
	const char *urls = getenv("DEBUGINFOD_URLS");
	debuginfod_client *c;
	char *got = NULL;
	struct stat st;
	size_t i, n = strlen(build_id) / 2;
	int fd;

	if (!urls || !*urls) {
		gil_err(why, whylen, "DEBUGINFOD_URLS is not set");
		return -1;
	}
	if (n == 0 || n > sizeof(id))
		return gil_err(why, whylen, "no build-id to ask for");
	for (i = 0; i < n; i++) {
		unsigned int b;

		if (sscanf(build_id + 2 * i, "%2x", &b) != 1)
			return gil_err(why, whylen, "bad build-id");
		id[i] = (unsigned char)b;
	}
	c = debuginfod_begin();
	if (!c)
		return gil_err(why, whylen, "cannot start a debuginfod client");
	debuginfod_set_progressfn(c, progress);
	fd = debuginfod_find_debuginfo(c, id, (int)n, &got);
	debuginfod_end(c);
	if (fd < 0) {
		if (gil_cancelled())
			gil_err(why, whylen, "the recording stopped while DEBUGINFOD_URLS (%s) was asked",
				urls);
		else if (fd == -ENOENT)
			gil_err(why, whylen, "not on the servers of DEBUGINFOD_URLS (%s)", urls);
		else
			gil_err(why, whylen, "DEBUGINFOD_URLS (%s) could not be asked: %s", urls,
				strerror(-fd));
		free(got);
		return -1;
	}
	/*
	 * Its sites become probes: only a file of ours in the cache, that no one else may have
	 * written (a cache under another user's home would be theirs).
	 */
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & (S_IWGRP | S_IWOTH))) {
		gil_err(why, whylen, "the debuginfod cache file %s is not root's alone: not used",
			got ? got : "?");
		close(fd);
		free(got);
		return -1;
	}
	snprintf(path, pathlen, "%s", got ? got : "debuginfod");
	free(got);
	return fd;
}
