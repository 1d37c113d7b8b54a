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
#include "common/util.h"

#define SBUF (1024 * 1024)
#define KEY_MAX 64
#define DEPTH_MAX 512
/* otherData is parsed to be merged with ours; refuse absurd sizes */
#define OTHER_MAX (16 * 1024 * 1024)

struct range {
	uint64_t off, len;
};

struct merge_trace {
	char *path;
	int fd;
	/* the scanner */
	char *buf;
	size_t pos, len;
	uint64_t base;
	bool eof;
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
};

static int serr(struct merge_trace *m, const char *what)
{
	gil_err(m->err, sizeof(m->err), "%s: %s (byte %llu)", m->path, what,
		(unsigned long long)(m->base + m->pos));
	return -1;
}

static int sfill(struct merge_trace *m)
{
	ssize_t n;

	if (m->eof)
		return 0;
	if (m->pos) {
		memmove(m->buf, m->buf + m->pos, m->len - m->pos);
		m->base += m->pos;
		m->len -= m->pos;
		m->pos = 0;
	}
	do
		n = read(m->fd, m->buf + m->len, SBUF - m->len);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		gil_err(m->err, sizeof(m->err), "%s: read error: %s", m->path, strerror(errno));
		return -1;
	}
	if (!n)
		m->eof = true;
	m->len += (size_t)n;
	return n > 0;
}

/* Next non-blank byte, not consumed: 1, 0 at EOF (an error here: JSON ended early), -1. */
static int speek(struct merge_trace *m, char *c)
{
	for (;;) {
		while (m->pos < m->len) {
			char ch = m->buf[m->pos];

			if (ch != ' ' && ch != '\n' && ch != '\r' && ch != '\t') {
				*c = ch;
				return 1;
			}
			m->pos++;
		}
		int n = sfill(m);

		if (n < 0)
			return -1;
		if (n == 0)
			return serr(m, "not JSON: unexpected end of file");
	}
}

static inline int sget(struct merge_trace *m, char *c)
{
	if (m->pos == m->len) {
		int n = sfill(m);

		if (n <= 0)
			return n < 0 ? -1 : serr(m, "not JSON: unexpected end of file");
	}
	*c = m->buf[m->pos++];
	return 1;
}

static inline uint64_t soff(const struct merge_trace *m)
{
	return m->base + m->pos;
}

/* A string (the opening quote is next); its raw text (escapes kept) goes to @out, cut to @cap. */
static int sstring(struct merge_trace *m, char *out, size_t cap)
{
	size_t n = 0;
	char c;

	if (sget(m, &c) < 0)
		return -1;
	for (;;) {
		if (sget(m, &c) < 0)
			return -1;
		if (c == '"')
			break;
		if (c == '\\') {
			if (out && n + 1 < cap)
				out[n++] = c;
			if (sget(m, &c) < 0)
				return -1;
		}
		if (out && n + 1 < cap)
			out[n++] = c;
	}
	if (out)
		out[n] = '\0';
	return 0;
}

/* A number, true, false or null: its text to @out (cut to @cap). */
static int sscalar(struct merge_trace *m, char *out, size_t cap)
{
	size_t n = 0;

	for (;;) {
		if (m->pos == m->len) {
			int r = sfill(m);

			if (r < 0)
				return -1;
			if (r == 0)
				break;
		}
		char c = m->buf[m->pos];

		if (c == ',' || c == '}' || c == ']' || c == ' ' || c == '\n' || c == '\r' ||
		    c == '\t')
			break;
		if (c == '{' || c == '[' || c == '"' || c == ':')
			return serr(m, "not JSON");
		if (out && n + 1 < cap)
			out[n++] = c;
		m->pos++;
	}
	if (!n && out)
		return serr(m, "not JSON");
	if (out)
		out[n] = '\0';
	return 0;
}

/* Skip one value of any kind, checking that brackets match. */
static int sskip(struct merge_trace *m)
{
	char stack[DEPTH_MAX], c;
	int depth = 0;

	if (speek(m, &c) < 0)
		return -1;
	if (c != '{' && c != '[')
		return c == '"' ? sstring(m, NULL, 0) : sscalar(m, NULL, 0);
	for (;;) {
		/* fast inner loop over the buffer */
		while (m->pos < m->len) {
			c = m->buf[m->pos];
			if (c == '"')
				break;
			m->pos++;
			if (c == '{' || c == '[') {
				if (depth == DEPTH_MAX)
					return serr(m, "JSON nested too deeply");
				stack[depth++] = c;
			} else if (c == '}' || c == ']') {
				if (!depth || stack[depth - 1] != (c == '}' ? '{' : '['))
					return serr(m, "not JSON: brackets do not match");
				if (!--depth)
					return 0;
			}
		}
		if (m->pos < m->len) {
			if (sstring(m, NULL, 0) < 0)
				return -1;
			continue;
		}
		int n = sfill(m);

		if (n <= 0)
			return n < 0 ? -1 : serr(m, "not JSON: unexpected end of file");
	}
}

/* "123.456" (microseconds) -> ns, exact to the nanosecond digit; false if not a number. */
static bool us_text_ns(const char *s, int64_t *ns)
{
	int64_t ip = 0, fr = 0;
	bool neg = false, any = false;
	int digits = 0;

	if (*s == '-') {
		neg = true;
		s++;
	}
	for (; *s >= '0' && *s <= '9'; s++, any = true) {
		if (ip > INT64_MAX / 10000)
			return false;
		ip = ip * 10 + (*s - '0');
	}
	if (*s == '.') {
		for (s++; *s >= '0' && *s <= '9'; s++, any = true)
			if (digits < 3) {
				fr = fr * 10 + (*s - '0');
				digits++;
			}
	}
	if (!any || (*s && *s != 'e' && *s != 'E'))
		return false;
	if (*s)
		return false; /* exponents: not worth a double here; the range check skips it */
	while (digits++ < 3)
		fr *= 10;
	*ns = (ip * 1000 + fr) * (neg ? -1 : 1);
	return true;
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

/* One element of traceEvents: note its pid and ts, skip the rest. */
static int scan_event(struct merge_trace *m)
{
	char key[KEY_MAX], val[64], c;
	int64_t v;

	if (speek(m, &c) < 0)
		return -1;
	if (c != '{')
		return sskip(m);
	m->pos++;
	m->nevents++;
	for (;;) {
		if (speek(m, &c) < 0)
			return -1;
		if (c == '}') {
			m->pos++;
			return 0;
		}
		if (c == ',') {
			m->pos++;
			continue;
		}
		if (c != '"' || sstring(m, key, sizeof(key)) < 0 || speek(m, &c) < 0)
			return m->err[0] ? -1 : serr(m, "not JSON: expected a key");
		if (c != ':')
			return serr(m, "not JSON: expected ':'");
		m->pos++;
		if (speek(m, &c) < 0)
			return -1;
		if (strcmp(key, "pid") && strcmp(key, "ts")) {
			if (sskip(m) < 0)
				return -1;
			continue;
		}
		if (c == '"') {
			if (sstring(m, val, sizeof(val)) < 0)
				return -1;
		} else if (c == '{' || c == '[') {
			if (sskip(m) < 0)
				return -1;
			continue;
		} else if (sscalar(m, val, sizeof(val)) < 0) {
			return -1;
		}
		if (!strcmp(key, "pid")) {
			char *end;
			long long p;

			errno = 0;
			p = strtoll(val, &end, 10);
			if (end != val && !*end && !errno && pid_add(m, p) < 0)
				return -1;
		} else if (us_text_ns(val, &v)) {
			if (!m->has_range || v < m->lo)
				m->lo = v;
			if (!m->has_range || v > m->hi)
				m->hi = v;
			m->has_range = true;
		}
	}
}

static int scan_events(struct merge_trace *m)
{
	char c;

	m->pos++; /* '[' */
	m->events.off = soff(m);
	for (;;) {
		if (speek(m, &c) < 0)
			return -1;
		if (c == ']')
			break;
		if (m->nevents || m->has_events) {
			if (c != ',')
				return serr(m, "not JSON: expected ',' between events");
			m->pos++;
			if (speek(m, &c) < 0)
				return -1;
		}
		m->has_events = true;
		if (scan_event(m) < 0)
			return -1;
	}
	m->events.len = soff(m) - m->events.off;
	m->pos++;
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

	m->pos++; /* '{' */
	for (;;) {
		if (speek(m, &c) < 0)
			return -1;
		if (c == '}')
			break;
		if (c == ',') {
			m->pos++;
			continue;
		}
		kstart = soff(m);
		if (c != '"' || sstring(m, key, sizeof(key)) < 0 || speek(m, &c) < 0)
			return m->err[0] ? -1 : serr(m, "not JSON: expected a key");
		if (c != ':')
			return serr(m, "not JSON: expected ':'");
		m->pos++;
		if (speek(m, &c) < 0)
			return -1;
		vstart = soff(m);
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

			if (sscalar(m, val, sizeof(val)) < 0)
				return -1;
			errno = 0;
			b = strtoll(val, &end, 10);
			if (end == val || *end || errno)
				return serr(m, "baseTimeNanoseconds is not an integer");
			m->base_ns = b;
			m->has_base = true;
		} else if (sskip(m) < 0) {
			return -1;
		}
		if (!strcmp(key, "otherData")) {
			m->other.off = vstart;
			m->other.len = soff(m) - vstart;
			m->has_other = c == '{';
			continue;
		}
		if (!strcmp(key, "displayTimeUnit"))
			m->has_unit = true;
		if (add_key(m, kstart, soff(m) - kstart) < 0)
			return -1;
	}
	m->pos++;
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
	if (!m || !(m->path = strdup(path)) || !(m->buf = malloc(SBUF))) {
		gil_err(err, errlen, "%s: out of memory", path);
		merge_close(m);
		return NULL;
	}
	m->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (m->fd < 0) {
		gil_err(m->err, sizeof(m->err), "cannot open %s: %s", path, strerror(errno));
		goto out;
	}
	if (fstat(m->fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		gil_err(m->err, sizeof(m->err), "%s: not a regular file", path);
		goto out;
	}
	if (sfill(m) < 0)
		goto out;
	if (m->len >= 2 && (unsigned char)m->buf[0] == 0x1f && (unsigned char)m->buf[1] == 0x8b) {
		gil_err(m->err, sizeof(m->err), "%s: compressed (gzip): decompress it first", path);
		goto out;
	}
	if (speek(m, &c) < 0)
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
		for (;;) {
			while (m->pos < m->len && strchr(" \n\r\t", m->buf[m->pos]) &&
			       m->buf[m->pos])
				m->pos++;
			if (m->pos < m->len) {
				ret = serr(m, "not JSON: data after the end");
				break;
			}
			int n = sfill(m);

			if (n < 0)
				ret = -1;
			if (n <= 0)
				break;
		}
	}
out:
	free(m->buf);
	m->buf = NULL;
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
	free(m->buf);
	free(m->path);
	free(m);
}
