// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * msprof/torch_npu host clock files (the host/ directory of a PROF_ directory): start_info and end_info are JSON objects of
 * decimal strings: collectionTime{Begin,End} (gettimeofday us), collectionDate{Begin,End} and
 * clockMonotonicRaw (ns); newer collectors write all keys with "" for those unused.
 * host_start.log is an INI file, section [Host], with clock_monotonic_raw.
 * MindStudio's own helpers align CLOCK_MONOTONIC_RAW samples exactly this way.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "clockmap.h"
#include "profdata.h"
#include "common/util.h"

static bool is_file(const char *dir, const char *name)
{
	char p[4200];
	struct stat st;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static int find_host(const char *path, struct profdata *pd, char *err, size_t errlen)
{
	static const char *const pats[] = { "/PROF_*/host", "/*/PROF_*/host" };
	char pat[4200];
	glob_t g;
	size_t i;
	struct stat st;

	if (stat(path, &st) < 0)
		return gil_err(err, errlen, "cannot open %s: %s", path, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return gil_err(err, errlen, "%s: not a directory (--profiling-data takes a PROF_ "
			       "directory)", path);
	snprintf(pd->host, sizeof(pd->host), "%s/host", path);
	if (is_file(pd->host, "start_info"))
		return 0;
	snprintf(pd->host, sizeof(pd->host), "%s", path);
	if (is_file(pd->host, "start_info"))
		return 0;
	for (i = 0; i < GIL_ARRAY_SIZE(pats); i++) {
		snprintf(pat, sizeof(pat), "%s%s", path, pats[i]);
		if (glob(pat, 0, NULL, &g) != 0)
			continue;
		if (g.gl_pathc > 1) {
			gil_err(err, errlen, "%s holds several PROF_ directories (%s, %s...): name one",
				path, g.gl_pathv[0], g.gl_pathv[1]);
			globfree(&g);
			return -1;
		}
		snprintf(pd->host, sizeof(pd->host), "%s", g.gl_pathv[0]);
		globfree(&g);
		if (is_file(pd->host, "start_info"))
			return 0;
	}
	return gil_err(err, errlen, "%s: no start_info (looked in host/, PROF_*/host/ and "
		       "*/PROF_*/host/)", path);
}

static struct json_object *read_info(const struct profdata *pd, const char *name, char *err,
				     size_t errlen)
{
	struct json_object *o;
	char p[4200], *text;

	snprintf(p, sizeof(p), "%s/%s", pd->host, name);
	text = gil_read_file(p, 1024 * 1024, NULL);
	if (!text) {
		gil_err(err, errlen, "cannot read %s: %s", p,
			errno == EINVAL ? "not a regular file" : strerror(errno));
		return NULL;
	}
	o = json_tokener_parse(text);
	free(text);
	if (!o || !json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		gil_err(err, errlen, "%s: not a JSON object", p);
		return NULL;
	}
	return o;
}

/* clock_monotonic_raw from host_start.log's [Host] section; 0 when absent. */
static int64_t host_log_raw(const struct profdata *pd)
{
	char p[4200], *text, *line, *save = NULL;
	bool in_host = false;
	int64_t v = 0;

	snprintf(p, sizeof(p), "%s/host_start.log", pd->host);
	text = gil_read_file(p, 64 * 1024, NULL);
	if (!text)
		return 0;
	for (line = strtok_r(text, "\r\n", &save); line; line = strtok_r(NULL, "\r\n", &save)) {
		char *k = line + strspn(line, " \t"), *sep;

		if (*k == '[') {
			in_host = !strncmp(k, "[Host]", 6);
			continue;
		}
		sep = strpbrk(k, ":=");
		if (!in_host || !sep || strncmp(k, "clock_monotonic_raw", 19) ||
		    strspn(k + 19, " \t") != (size_t)(sep - k - 19))
			continue;
		v = strtoll(sep + 1, NULL, 10);
	}
	free(text);
	return v;
}

int profdata_load(const char *path, struct profdata *pd, char *err, size_t errlen)
{
	struct json_object *start = NULL, *end = NULL;
	char p[4200];
	int ret = -1;

	memset(pd, 0, sizeof(*pd));
	if (find_host(path, pd, err, errlen) < 0)
		return -1;
	start = read_info(pd, "start_info", err, errlen);
	if (!start)
		goto out;
	snprintf(p, sizeof(p), "%s/start_info", pd->host);
	if (!conv_json_int(start, "collectionTimeBegin", &pd->begin_us)) {
		gil_err(err, errlen, "%s: no collectionTimeBegin", p);
		goto out;
	}
	if (!conv_json_int(start, "clockMonotonicRaw", &pd->raw_begin_ns) || !pd->raw_begin_ns) {
		/* older layouts: the raw clock sampled beside it, ~1 ms later */
		pd->raw_begin_ns = host_log_raw(pd);
		pd->raw_from_log = true;
		if (!pd->raw_begin_ns) {
			gil_err(err, errlen, "%s: no clockMonotonicRaw (nor in host_start.log)", p);
			goto out;
		}
	}
	pd->offset_ns = pd->begin_us * 1000 - pd->raw_begin_ns;
	pd->lo_ns = pd->begin_us * 1000;
	if (is_file(pd->host, "end_info")) {
		end = read_info(pd, "end_info", err, errlen);
		if (!end)
			goto out;
		if (conv_json_int(end, "clockMonotonicRaw", &pd->raw_end_ns) && pd->raw_end_ns) {
			/* the window on the same axis as the events: one offset for both ends */
			pd->has_end = true;
			pd->hi_ns = pd->raw_end_ns + pd->offset_ns;
			conv_json_int(end, "collectionTimeEnd", &pd->end_us);
		} else if (conv_json_int(end, "collectionTimeEnd", &pd->end_us) && pd->end_us) {
			pd->has_end = true;
			pd->hi_ns = pd->end_us * 1000;
		}
	}
	if (!pd->has_end)
		pd->hi_ns = INT64_MAX;
	ret = 0;
out:
	json_object_put(start);
	json_object_put(end);
	return ret;
}

struct json_object *profdata_describe(const struct profdata *pd)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "host_dir", json_object_new_string(pd->host));
	json_object_object_add(o, "collectionTimeBegin_us", json_object_new_int64(pd->begin_us));
	json_object_object_add(o, "clockMonotonicRaw_ns", json_object_new_int64(pd->raw_begin_ns));
	json_object_object_add(o, "raw_from", json_object_new_string(pd->raw_from_log ?
								      "host_start.log" :
								      "start_info"));
	json_object_object_add(o, "offset_ns", json_object_new_int64(pd->offset_ns));
	json_object_object_add(o, "window_begin_ns", json_object_new_int64(pd->lo_ns));
	if (pd->has_end)
		json_object_object_add(o, "window_end_ns", json_object_new_int64(pd->hi_ns));
	return o;
}
