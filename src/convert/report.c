// SPDX-License-Identifier: LGPL-2.1-or-later
/* Where the reports of the statistics go: --summary, --summary-json FILE, --svg FILE. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "stats.h"
#include "common/util.h"

/* Write @what to @path ("-": standard output) with @fn. */
static int write_to(const struct stats *s, const char *path, const char *what,
		    int (*fn)(const struct stats *, FILE *), char *err, size_t errlen)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "w") : stdout;
	const char *shown = f == stdout ? "standard output" : path;
	int ret, e;

	if (!f)
		return gil_err(err, errlen, "cannot write %s to %s: %s", what, shown, strerror(errno));
	ret = fn(s, f);
	e = errno;
	if (f != stdout && fclose(f) != 0 && !ret) {
		ret = -1;
		e = errno;
	}
	if (ret < 0)
		return gil_err(err, errlen, "cannot write %s to %s: %s", what, shown, strerror(e));
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
