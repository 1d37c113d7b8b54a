// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Finding and ordering the recordings. Each is opened twice: once here for its header, so that
 * the timeline can be laid out by rank before any event is written, and once to convert it;
 * only one is open at a time, so a thousand ranks cost a thousand small headers.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "clockmap.h"
#include "inputs.h"
#include "common/util.h"
#include "format/keys.h"

/* Pids are at most 2^22 on Linux: a second process with the same pid (another host) moves up. */
#define PID_SPACE (1ll << 22)

/* GIL_<pid>_rank_<rank>.json: the name both tools give their files. */
static bool parse_name(const char *path, int64_t *pid, int64_t *rank)
{
	const char *base = strrchr(path, '/');
	long long p, r;
	int n = 0;

	base = base ? base + 1 : path;
	if (sscanf(base, "GIL_%lld_rank_%lld.json%n", &p, &r, &n) != 2 || base[n] || p < 0 ||
	    r < 0)
		return false;
	*pid = p;
	*rank = r;
	return true;
}

static int add_path(struct conv_inputs *in, const char *path, char *err, size_t errlen)
{
	struct conv_input *nv = realloc(in->v, (in->n + 1) * sizeof(*nv));

	if (!nv)
		return gil_err(err, errlen, "out of memory");
	in->v = nv;
	memset(&in->v[in->n], 0, sizeof(in->v[0]));
	in->v[in->n].path = strdup(path);
	if (!in->v[in->n].path)
		return gil_err(err, errlen, "out of memory");
	in->n++;
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int add_dir(struct conv_inputs *in, const char *dir, char *err, size_t errlen)
{
	char **names = NULL, **nn, path[4200];
	size_t n = 0, i;
	struct dirent *de;
	int64_t p, r;
	DIR *d;
	int ret = 0;

	d = opendir(dir);
	if (!d)
		return gil_err(err, errlen, "cannot open %s: %s", dir, strerror(errno));
	while ((de = readdir(d))) {
		if (!parse_name(de->d_name, &p, &r))
			continue;
		nn = realloc(names, (n + 1) * sizeof(*nn));
		if (!nn || !(nn[n] = strdup(de->d_name))) {
			names = nn ? nn : names;
			ret = gil_err(err, errlen, "out of memory");
			goto out;
		}
		names = nn;
		n++;
	}
	if (!n) {
		ret = gil_err(err, errlen, "%s: no GIL_<pid>_rank_<rank>.json recordings in this "
			      "directory", dir);
		goto out;
	}
	qsort(names, n, sizeof(*names), cmp_str);
	for (i = 0; i < n && !ret; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		ret = add_path(in, path, err, errlen);
	}
out:
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	closedir(d);
	return ret;
}

static const char *hstr(struct json_object *h, const char *key)
{
	struct json_object *v;

	if (!h || !json_object_object_get_ex(h, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

/* Read the header (giltrace) or first event (sysTrace) and the footer. */
static int look(struct conv_input *ci, const struct conv_options *opt, char *err, size_t errlen)
{
	struct gil_reader *r;
	struct gil_record rec;
	struct stat st;
	int64_t v;
	int ret;

	if (stat(ci->path, &st) < 0)
		return gil_err(err, errlen, "cannot open %s: %s", ci->path, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return gil_err(err, errlen, "%s: not a regular file", ci->path);
	ci->dev = st.st_dev;
	ci->ino = st.st_ino;
	r = gil_reader_open(ci->path, err, errlen);
	if (!r)
		return -1;
	ci->fmt = gil_reader_format(r);
	ci->name_pid = ci->name_rank = -1;
	parse_name(ci->path, &ci->name_pid, &ci->name_rank);
	ci->proc.os_pid = ci->name_pid >= 0 ? ci->name_pid : 0;
	ci->proc.rank = ci->name_rank;
	/* a sysTrace file's first event was read by open: it has no header to look for */
	ret = ci->fmt == GIL_INPUT_SYSTRACE ? 0 : gil_reader_next(r, &rec);
	if (ret < 0) {
		gil_err(err, errlen, "%s", gil_reader_error(r));
		gil_reader_close(r);
		return -1;
	}
	if (ret > 0 && rec.type == GIL_REC_HEADER) {
		ci->header = json_object_get(rec.obj);
		if (conv_json_int(ci->header, GIL_KEY_PID, &v))
			ci->proc.os_pid = v;
		if (conv_json_int(ci->header, GIL_KEY_RANK, &v))
			ci->proc.rank = v;
	} else if (ci->fmt == GIL_INPUT_SYSTRACE && ci->name_pid < 0 &&
		   gil_reader_systrace_pid(r, &v)) {
		ci->proc.os_pid = v; /* the rank or the pid, as the reference tool wrote it */
	} else if (ret > 0 && ci->fmt == GIL_INPUT_GILTRACE) {
		conv_warn(opt, "%s: no header record: pid and rank taken from the file name",
			  ci->path);
	}
	ci->footer = json_object_get(gil_reader_footer(r));
	gil_reader_close(r);
	ci->proc.cmdline = hstr(ci->header, GIL_KEY_CMDLINE);
	ci->proc.hostname = hstr(ci->header, GIL_KEY_HOSTNAME);
	{
		struct json_object *a, *in;

		ci->proc.interpreters =
			json_object_object_get_ex(ci->header, GIL_KEY_ATTRIBUTION, &a) &&
			json_object_object_get_ex(a, GIL_KEY_ATTR_INTERPRETERS, &in) &&
			json_object_get_boolean(in);
	}
	return 0;
}

static int cmp_input(const void *a, const void *b)
{
	const struct conv_input *x = a, *y = b;
	/* unknown ranks last */
	uint64_t rx = (uint64_t)x->proc.rank, ry = (uint64_t)y->proc.rank;
	int c;

	if (rx != ry)
		return rx < ry ? -1 : 1;
	if (x->proc.os_pid != y->proc.os_pid)
		return x->proc.os_pid < y->proc.os_pid ? -1 : 1;
	c = strcmp(x->proc.hostname ? x->proc.hostname : "", y->proc.hostname ? y->proc.hostname : "");
	return c ? c : strcmp(x->path, y->path);
}

static bool pid_used(const struct conv_inputs *in, size_t upto, int64_t pid)
{
	size_t i;

	for (i = 0; i < upto; i++)
		if (in->v[i].proc.pid == pid)
			return true;
	return false;
}

int inputs_load(struct conv_inputs *in, const struct conv_options *opt,
		bool (*taken)(void *ctx, int64_t pid), void *taken_ctx, char *err, size_t errlen)
{
	const char *host0 = NULL;
	bool hosts = false;
	struct stat st;
	size_t i;
	int64_t pid;

	memset(in, 0, sizeof(*in));
	for (i = 0; i < opt->ninputs; i++) {
		if (stat(opt->inputs[i], &st) < 0)
			return gil_err(err, errlen, "cannot open %s: %s", opt->inputs[i],
				       strerror(errno));
		if (S_ISDIR(st.st_mode) ? add_dir(in, opt->inputs[i], err, errlen) :
					  add_path(in, opt->inputs[i], err, errlen))
			return -1;
	}
	for (i = 0; i < in->n; i++)
		if (look(&in->v[i], opt, err, errlen) < 0)
			return -1;
	qsort(in->v, in->n, sizeof(in->v[0]), cmp_input);
	for (i = 0; i < in->n; i++) {
		const char *h = in->v[i].proc.hostname;

		if (h && host0 && strcmp(h, host0))
			hosts = true;
		if (h && !host0)
			host0 = h;
	}
	for (i = 0; i < in->n; i++) {
		struct conv_input *ci = &in->v[i];
		char rank[48] = "", host[300] = "";
		const char *what;

		/* the same pid twice (several hosts): later ones move to another pid space */
		for (pid = ci->proc.os_pid; pid_used(in, i, pid); pid += PID_SPACE)
			;
		/* a profiler trace already uses the pid (its Python rows): a row of our own */
		if (taken && taken(taken_ctx, pid)) {
			pid = (ci->proc.os_pid << 10) | 1023;
			while (pid_used(in, i, pid) || taken(taken_ctx, pid))
				pid--;
		}
		ci->proc.pid = pid;
		ci->proc.sort_index = (int)i;
		if (ci->proc.rank >= 0)
			snprintf(rank, sizeof(rank), ", rank %lld", (long long)ci->proc.rank);
		if (hosts && ci->proc.hostname)
			snprintf(host, sizeof(host), ", %.256s", ci->proc.hostname);
		what = ci->proc.cmdline && *ci->proc.cmdline ? ci->proc.cmdline : NULL;
		if (!what) {
			what = strrchr(ci->path, '/');
			what = what ? what + 1 : ci->path;
		}
		if (asprintf(&ci->label, "GIL %.200s%s (pid %lld%s%s)", what,
			     strlen(what) > 200 ? "..." : "", (long long)ci->proc.os_pid, rank,
			     host) < 0) {
			ci->label = NULL;
			return gil_err(err, errlen, "out of memory");
		}
		ci->proc.label = ci->label;
	}
	return 0;
}

void inputs_free(struct conv_inputs *in)
{
	size_t i;

	for (i = 0; i < in->n; i++) {
		free(in->v[i].path);
		free(in->v[i].label);
		json_object_put(in->v[i].header);
		json_object_put(in->v[i].footer);
	}
	free(in->v);
	memset(in, 0, sizeof(*in));
}
