// SPDX-License-Identifier: LGPL-2.1-or-later
/* Where the reports of the statistics go: --summary, --summary-json FILE, --svg FILE. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "outfile.h"
#include "stats.h"
#include "common/util.h"

/*
 * Write @what to @path ("-": standard output) with @fn, through the same outfile as the trace:
 * complete or not at all, and never through a link another user could have made.
 */
static int write_to(const struct stats *s, const char *path, const char *what,
		    int (*fn)(const struct stats *, FILE *), char *err, size_t errlen)
{
	const char *shown = strcmp(path, "-") ? path : "standard output";
	struct outfile *o;
	char why[512];
	FILE *f;
	int fd, ret, e;

	if (!strcmp(path, "-")) {
		ret = fn(s, stdout);
		if (ret < 0 || fflush(stdout) != 0)
			return gil_err(err, errlen, "cannot write %s to %s: %s", what, shown,
				       strerror(errno));
		return 0;
	}
	o = outfile_open(path, why, sizeof(why));
	if (!o && errno == ELOOP)
		return gil_err(err, errlen, "cannot write %s: %s", what, why);
	if (!o)
		return gil_err(err, errlen, "cannot write %s to %s: %s", what, shown, strerror(errno));
	fd = dup(o->fd);
	f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!f) {
		e = errno;
		if (fd >= 0)
			close(fd);
		outfile_abort(o);
		return gil_err(err, errlen, "cannot write %s to %s: %s", what, shown, strerror(e));
	}
	ret = fn(s, f);
	e = errno;
	if (fclose(f) != 0 && !ret) {
		ret = -1;
		e = errno;
	}
	if (ret < 0) {
		outfile_abort(o);
		return gil_err(err, errlen, "cannot write %s to %s: %s", what, shown, strerror(e));
	}
	if (outfile_commit(o, why, sizeof(why)) < 0)
		return gil_err(err, errlen, "cannot write %s: %s", what, why);
	return 0;
}

int stats_outputs(const struct stats *s, const struct conv_options *opt, char *err, size_t errlen)
{
	if (opt->summary && write_to(s, "-", "the summary", stats_write_text, err, errlen) < 0)
		return -1;
	if (opt->summary_json &&
	    write_to(s, opt->summary_json, "the summary JSON", stats_write_json, err, errlen) < 0)
		return -1;
	if (opt->svg && write_to(s, opt->svg, "the picture", stats_write_svg, err, errlen) < 0)
		return -1;
	return 0;
}
