// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Merging with a profiler's trace. The trace may be gigabytes, so it is never parsed into
 * memory: one streaming scan finds the byte range of its traceEvents array, the byte ranges of
 * its other top-level keys, its baseTimeNanoseconds, the pids its events use and their ts range;
 * the output then copies those ranges verbatim (no number goes through a double) and puts the
 * GIL events inside the same array.
 *
 * Kineto (torch.profiler): {"traceEvents":[...], ..., "baseTimeNanoseconds":N} with ts relative
 * microseconds, (epoch_ns - N) / 1000. msprof/torch_npu trace_view.json: a bare array with
 * epoch microseconds (strings with three decimals).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "merge.h"
#include "outfile.h"
#include "common/jscan.h"
#include "common/util.h"

#define SBUF (1024 * 1024)
#define KEY_MAX 64
/* otherData is parsed to be merged with ours; refuse absurd sizes */
#define OTHER_MAX (16 * 1024 * 1024)

struct range {
	uint64_t off, len;
};

struct merge_trace {
	char *path;
	int fd;
	struct gil_jscan sc;
	char err[320];

	bool object; /* {"traceEvents":...} rather than a bare array */
	struct range events; /* inside the traceEvents brackets */
	bool has_events;
	uint64_t nevents;
	struct range *keys; /* other top-level "key":value, verbatim */
	size_t nkeys;
	struct range other; /* its otherData value, if any */
	bool has_other;
	bool has_unit;
	bool has_base;
	int64_t base_ns;
	int64_t *pids; /* open addressing, 0 = empty (pid 0 is tracked apart) */
	size_t pids_cap, pids_n;
	bool pid0;
	bool has_range;
	int64_t lo, hi;
	struct merge_step *steps; /* ProfilerStep#N spans, as found */
	size_t nsteps, steps_cap;
};

static int serr(struct merge_trace *m, const char *what)
{
	return gil_jscan_fail(&m->sc, what);
}

static int pid_add(struct merge_trace *m, int64_t pid)
{
	size_t i;

	if (!pid) {
		m->pid0 = true;
		return 0;
	}
	if ((m->pids_n + 1) * 2 > m->pids_cap) {
		size_t ncap = m->pids_cap ? m->pids_cap * 2 : 64, j;
		int64_t *np = calloc(ncap, sizeof(*np));

		if (!np)
			return serr(m, "out of memory");
		for (j = 0; j < m->pids_cap; j++) {
			if (!m->pids[j])
				continue;
			for (i = (uint64_t)m->pids[j] * 0x9e3779b97f4a7c15ull % ncap; np[i];
			     i = (i + 1) % ncap)
				;
			np[i] = m->pids[j];
		}
		free(m->pids);
		m->pids = np;
		m->pids_cap = ncap;
	}
	for (i = (uint64_t)pid * 0x9e3779b97f4a7c15ull % m->pids_cap; m->pids[i];
	     i = (i + 1) % m->pids_cap)
		if (m->pids[i] == pid)
			return 0;
	m->pids[i] = pid;
	m->pids_n++;
	return 0;
}

size_t merge_steps(const struct merge_trace *m, const struct merge_step **steps)
{
	*steps = m->steps;
	return m->nsteps;
}

bool merge_has_pid(const struct merge_trace *m, int64_t pid)
{
	size_t i;

	if (!pid)
		return m->pid0;
	if (!m->pids_cap)
		return false;
	for (i = (uint64_t)pid * 0x9e3779b97f4a7c15ull % m->pids_cap; m->pids[i];
	     i = (i + 1) % m->pids_cap)
		if (m->pids[i] == pid)
			return true;
	return false;
}

/* `"key":` (@c is its quote), then the value's first byte in *@c, not consumed. */
static int scan_key(struct merge_trace *m, char *key, size_t cap, char *c)
{
	if (*c != '"' || gil_jscan_string(&m->sc, key, cap) < 0 || gil_jscan_next(&m->sc, c) < 0)
		return m->err[0] ? -1 : serr(m, "not JSON: expected a key");
	if (*c != ':')
		return serr(m, "not JSON: expected ':'");
	m->sc.pos++;
	return gil_jscan_next(&m->sc, c) < 0 ? -1 : 0;
}

static int step_add(struct merge_trace *m, const struct merge_step *st)
{
	if (m->nsteps == m->steps_cap) {
		size_t ncap = m->steps_cap ? m->steps_cap * 2 : 64;
		struct merge_step *ns = realloc(m->steps, ncap * sizeof(*ns));

		if (!ns)
			return serr(m, "out of memory");
		m->steps = ns;
		m->steps_cap = ncap;
	}
	m->steps[m->nsteps++] = *st;
	return 0;
}

/*
 * One element of traceEvents: note its pid and ts, and a step span (an X event named
 * ProfilerStep#N: torch.profiler's and torch_npu's); skip the rest.
 */
static int scan_event(struct merge_trace *m)
{
	char key[KEY_MAX], val[64], name[64] = "", ph[4] = "", c;
	struct merge_step st = { 0 };
	bool has_ts = false, has_dur = false, has_pid = false;
	int64_t v;

	if (gil_jscan_next(&m->sc, &c) < 0)
		return -1;
	if (c != '{')
		return gil_jscan_skip(&m->sc);
	m->sc.pos++;
	m->nevents++;
	for (;;) {
		if (gil_jscan_next(&m->sc, &c) < 0)
			return -1;
		if (c == '}') {
			m->sc.pos++;
			break;
		}
		if (c == ',') {
			m->sc.pos++;
			continue;
		}
		if (scan_key(m, key, sizeof(key), &c) < 0)
			return -1;
		if (strcmp(key, "pid") && strcmp(key, "ts") && strcmp(key, "dur") &&
		    strcmp(key, "name") && strcmp(key, "ph")) {
			if (gil_jscan_skip(&m->sc) < 0)
				return -1;
			continue;
		}
		if (c == '"') {
			if (gil_jscan_string(&m->sc, val, sizeof(val)) < 0)
				return -1;
		} else if (c == '{' || c == '[') {
			if (gil_jscan_skip(&m->sc) < 0)
				return -1;
			continue;
		} else if (gil_jscan_scalar(&m->sc, val, sizeof(val)) < 0) {
			return -1;
		}
		if (!strcmp(key, "name")) {
			memcpy(name, val, sizeof(name));
		} else if (!strcmp(key, "ph")) {
			memcpy(ph, val, sizeof(ph) - 1);
		} else if (!strcmp(key, "dur")) {
			has_dur = gil_us_text_ns(val, &st.dur);
		} else if (!strcmp(key, "pid")) {
			char *end;
			long long p;

			errno = 0;
			p = strtoll(val, &end, 10);
			if (end != val && !*end && !errno) {
				if (pid_add(m, p) < 0)
					return -1;
				st.pid = p;
				has_pid = true;
			}
		} else if (gil_us_text_ns(val, &v)) {
			if (!m->has_range || v < m->lo)
				m->lo = v;
			if (!m->has_range || v > m->hi)
				m->hi = v;
			m->has_range = true;
			st.ts = v;
			has_ts = true;
		}
	}
	if (has_ts && has_dur && st.dur >= 0 && !strcmp(ph, "X") &&
	    !strncmp(name, MERGE_STEP_PREFIX, strlen(MERGE_STEP_PREFIX))) {
		const char *num = name + strlen(MERGE_STEP_PREFIX);
		char *end;

		errno = 0;
		st.number = strtoll(num, &end, 10);
		if (end != num && !*end && !errno) {
			st.has_pid = has_pid;
			return step_add(m, &st);
		}
	}
	return 0;
}

static int scan_events(struct merge_trace *m)
{
	char c;

	m->sc.pos++; /* '[' */
	m->events.off = gil_jscan_offset(&m->sc);
	for (;;) {
		if (gil_jscan_next(&m->sc, &c) < 0)
			return -1;
		if (c == ']')
			break;
		if (m->nevents || m->has_events) {
			if (c != ',')
				return serr(m, "not JSON: expected ',' between events");
			m->sc.pos++;
			if (gil_jscan_next(&m->sc, &c) < 0)
				return -1;
		}
		m->has_events = true;
		if (scan_event(m) < 0)
			return -1;
	}
	m->events.len = gil_jscan_offset(&m->sc) - m->events.off;
	m->sc.pos++;
	return 0;
}

static int add_key(struct merge_trace *m, uint64_t off, uint64_t len)
{
	struct range *nk = realloc(m->keys, (m->nkeys + 1) * sizeof(*nk));

	if (!nk)
		return serr(m, "out of memory");
	m->keys = nk;
	m->keys[m->nkeys].off = off;
	m->keys[m->nkeys].len = len;
	m->nkeys++;
	return 0;
}

static int scan_object(struct merge_trace *m)
{
	char key[KEY_MAX], val[64], c;
	uint64_t kstart, vstart;
	bool seen_events = false;

	m->sc.pos++; /* '{' */
	for (;;) {
		if (gil_jscan_next(&m->sc, &c) < 0)
			return -1;
		if (c == '}')
			break;
		if (c == ',') {
			m->sc.pos++;
			continue;
		}
		kstart = gil_jscan_offset(&m->sc);
		if (scan_key(m, key, sizeof(key), &c) < 0)
			return -1;
		vstart = gil_jscan_offset(&m->sc);
		if (!strcmp(key, "traceEvents")) {
			if (c != '[')
				return serr(m, "\"traceEvents\" is not an array");
			if (scan_events(m) < 0)
				return -1;
			seen_events = true;
			continue;
		}
		if (!strcmp(key, "baseTimeNanoseconds") && c != '"' && c != '{' && c != '[') {
			char *end;
			long long b;

			if (gil_jscan_scalar(&m->sc, val, sizeof(val)) < 0)
				return -1;
			errno = 0;
			b = strtoll(val, &end, 10);
			if (end == val || *end || errno)
				return serr(m, "baseTimeNanoseconds is not an integer");
			m->base_ns = b;
			m->has_base = true;
		} else if (gil_jscan_skip(&m->sc) < 0) {
			return -1;
		}
		if (!strcmp(key, "otherData")) {
			m->other.off = vstart;
			m->other.len = gil_jscan_offset(&m->sc) - vstart;
			m->has_other = c == '{';
			continue;
		}
		if (!strcmp(key, "displayTimeUnit"))
			m->has_unit = true;
		if (add_key(m, kstart, gil_jscan_offset(&m->sc) - kstart) < 0)
			return -1;
	}
	m->sc.pos++;
	if (!seen_events)
		return serr(m, "a JSON object without \"traceEvents\": not a Chrome trace");
	return 0;
}

struct merge_trace *merge_open(const char *path, char *err, size_t errlen)
{
	struct merge_trace *m;
	struct stat st;
	char c;
	int ret = -1;

	m = calloc(1, sizeof(*m));
	if (!m || !(m->path = strdup(path)) ||
	    gil_jscan_init(&m->sc, -1, m->path, SBUF, m->err, sizeof(m->err)) < 0) {
		gil_err(err, errlen, "%s: out of memory", path);
		merge_close(m);
		return NULL;
	}
	m->fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC); /* a pipe: no block */
	m->sc.fd = m->fd;
	if (m->fd < 0) {
		gil_err(m->err, sizeof(m->err), "cannot open %s: %s", path, strerror(errno));
		goto out;
	}
	if (fstat(m->fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		gil_err(m->err, sizeof(m->err), "%s: not a regular file", path);
		goto out;
	}
	if (gil_jscan_fill(&m->sc) < 0)
		goto out;
	if (m->sc.len >= 2 && (unsigned char)m->sc.buf[0] == 0x1f &&
	    (unsigned char)m->sc.buf[1] == 0x8b) {
		gil_err(m->err, sizeof(m->err), "%s: compressed (gzip): decompress it first", path);
		goto out;
	}
	if (gil_jscan_next(&m->sc, &c) < 0)
		goto out;
	if (c == '[') {
		ret = scan_events(m);
	} else if (c == '{') {
		m->object = true;
		ret = scan_object(m);
	} else {
		gil_err(m->err, sizeof(m->err), "%s: not JSON (a profiler trace starts with '{' or '[')",
			path);
	}
	if (ret == 0) {
		/* only blanks may follow (a NUL byte is not one) */
		int r = gil_jscan_peek(&m->sc, &c);

		if (r < 0)
			ret = -1;
		else if (r > 0)
			ret = serr(m, "not JSON: data after the end");
	}
out:
	gil_jscan_fini(&m->sc);
	if (ret < 0) {
		gil_err(err, errlen, "%s", m->err);
		merge_close(m);
		return NULL;
	}
	return m;
}

int64_t merge_base_ns(const struct merge_trace *m)
{
	return m->has_base ? m->base_ns : 0;
}

bool merge_has_events(const struct merge_trace *m)
{
	return m->has_events;
}

bool merge_range(const struct merge_trace *m, int64_t *lo, int64_t *hi)
{
	*lo = m->lo;
	*hi = m->hi;
	return m->has_range;
}

struct json_object *merge_describe(const struct merge_trace *m)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "path", json_object_new_string(m->path));
	json_object_object_add(o, "kind", json_object_new_string(m->has_base ? "kineto" :
								  m->object ? "object" : "array"));
	json_object_object_add(o, "events", json_object_new_uint64(m->nevents));
	if (m->has_base)
		json_object_object_add(o, "baseTimeNanoseconds", json_object_new_int64(m->base_ns));
	return o;
}

/* Copy [off, off + len) of the profiler's file to @f. */
static int copy_range(struct merge_trace *m, struct outfile *f, uint64_t off, uint64_t len)
{
	char buf[64 * 1024];
	ssize_t n;

	while (len) {
		n = pread(m->fd, buf, len < sizeof(buf) ? len : sizeof(buf), (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			gil_err(f->err, sizeof(f->err), "%s: %s while copying", m->path,
				n ? strerror(errno) : "file shrank");
			return -1;
		}
		if (outfile_write(f, buf, (size_t)n) < 0)
			return -1;
		off += (uint64_t)n;
		len -= (uint64_t)n;
	}
	return 0;
}

int merge_write_head(struct merge_trace *m, struct outfile *f)
{
	static const char head[] = "{\"traceEvents\":[";

	if (outfile_write(f, head, sizeof(head) - 1) < 0)
		return -1;
	return copy_range(m, f, m->events.off, m->events.len);
}

int merge_write_tail(struct merge_trace *m, struct outfile *f, struct json_object *other)
{
	struct json_object *theirs = NULL, *all = other;
	const char *s;
	size_t i;
	int ret = -1;

	if (outfile_write(f, "\n]", 2) < 0)
		return -1;
	for (i = 0; i < m->nkeys; i++) {
		if (outfile_write(f, ",", 1) < 0 || copy_range(m, f, m->keys[i].off, m->keys[i].len))
			return -1;
	}
	if (!m->has_unit && outfile_write(f, ",\"displayTimeUnit\":\"ns\"", 23) < 0)
		return -1;
	if (m->has_other && m->other.len < OTHER_MAX) {
		char *text = malloc(m->other.len + 1);

		if (text && pread(m->fd, text, m->other.len, (off_t)m->other.off) ==
				    (ssize_t)m->other.len) {
			text[m->other.len] = '\0';
			theirs = json_tokener_parse(text);
		}
		free(text);
		if (theirs && json_object_is_type(theirs, json_type_object)) {
			/* theirs, plus ours under "giltrace" */
			json_object_object_add(theirs, "giltrace", json_object_get(other));
			all = theirs;
		}
	}
	s = json_object_to_json_string_ext(all, JSON_C_TO_STRING_PLAIN |
					   JSON_C_TO_STRING_NOSLASHESCAPE);
	if (s && outfile_write(f, ",\"otherData\":", 13) == 0 &&
	    outfile_write(f, s, strlen(s)) == 0 && outfile_write(f, "}\n", 2) == 0)
		ret = 0;
	json_object_put(theirs);
	return ret;
}

void merge_close(struct merge_trace *m)
{
	if (!m)
		return;
	if (m->fd > 0)
		close(m->fd);
	free(m->pids);
	free(m->keys);
	free(m->steps);
	gil_jscan_fini(&m->sc);
	free(m->path);
	free(m);
}
