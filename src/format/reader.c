// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The recording reader: streams a recording element by element of its top-level array, in
 * bounded memory, and stops cleanly at the last complete record of a cut file.
 *
 * Interval lines, the bulk of a recording, are parsed by hand in place; everything else goes
 * through json-c's incremental tokener, fed chunk by chunk.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "giltrace.h"
#include "rawfile.h"
#include "common/jscan.h"
#include "common/util.h"
#include "keys.h"
#include "systrace.h"

#define GIL_KIND_MAX GIL_KIND_DROP

/* sysTrace: an event object, turned into intervals before gil_reader_next() returns */
#define REC_EVENT ((enum gil_rec_type)(GIL_REC_UNKNOWN + 1))

#define RBUF_SIZE (1024 * 1024)
/* An interval line is < 100 bytes: with this much in the buffer the fast path never runs dry. */
#define FAST_LOOKAHEAD 256
/* Refuse single records larger than this (a header with a huge command line is ~ 2 MiB). */
#define RECORD_MAX (64u * 1024 * 1024)
/* How far back from the end to look for the footer line. */
#define TAIL_MAX (16u * 1024 * 1024)

enum rd_state {
	ST_ELEM, /* expecting an element (or ']' when none was read yet) */
	ST_SEP, /* expecting ',' or ']' after an element */
	ST_TAIL, /* after the records array: the rest of the top-level object */
	ST_END, /* only whitespace may follow */
	ST_DONE,
	ST_ERROR,
};

struct gil_reader {
	int fd;
	char *path;
	enum gil_input_format fmt;
	enum rd_state state;
	struct gil_jscan sc;
	size_t vend; /* where the last value parsed by the tokener ended in buf */
	bool first; /* no element read yet */
	bool truncated;
	uint64_t records;
	uint64_t offset;
	struct json_tokener *tok;
	struct json_object *cur; /* returned by the last gil_reader_next() */
	struct json_object *pending; /* sysTrace: the first element, parsed by open */
	struct gil_systrace *st; /* sysTrace: events to intervals */
	struct gil_interval queue[GIL_SYSTRACE_OUT_MAX]; /* what the last event made */
	int qpos, qlen;
	bool has_pid;
	int64_t pid; /* sysTrace: the first event's */
	struct json_object *footer; /* gil_reader_footer() */
	bool footer_done;
	char err[512];
};

static int fail(struct gil_reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Record a one-line error "<path>: <reason>" and stop the reader; returns -1. */
static int fail(struct gil_reader *r, const char *fmt, ...)
{
	char tmp[320];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	gil_err(r->err, sizeof(r->err), "%s: %s", r->path, tmp);
	r->state = ST_ERROR;
	return -1;
}

/*
 * Parse one JSON value with the incremental tokener. Returns 1 (*@out may be NULL for a JSON
 * null), 0 when the input ends inside the value (cut file; zero-filled tails count as cut), -1 on
 * a syntax error.
 */
static int parse_value(struct gil_reader *r, struct json_object **out)
{
	enum json_tokener_error jerr;
	struct json_object *obj;
	size_t used = 0, avail, end;
	char msg[160];

	*out = NULL;
	json_tokener_reset(r->tok);
	for (;;) {
		if (r->sc.pos == r->sc.len) {
			ssize_t n = gil_jscan_fill(&r->sc);

			if (n < 0)
				return -1;
			if (n == 0)
				return 0;
		}
		avail = r->sc.len - r->sc.pos;
		if (avail > INT_MAX)
			avail = INT_MAX;
		obj = json_tokener_parse_ex(r->tok, r->sc.buf + r->sc.pos, (int)avail);
		end = json_tokener_get_parse_end(r->tok);
		jerr = json_tokener_get_error(r->tok);
		if (obj || jerr == json_tokener_success) {
			r->sc.pos += end;
			/* the tokener eats blanks after a value: the value ends before them */
			r->vend = r->sc.pos;
			while (r->vend > 0 && (r->sc.buf[r->vend - 1] == ' ' ||
					       r->sc.buf[r->vend - 1] == '\n' ||
					       r->sc.buf[r->vend - 1] == '\t' ||
					       r->sc.buf[r->vend - 1] == '\r'))
				r->vend--;
			*out = obj;
			return 1;
		}
		if (jerr == json_tokener_error_parse_eof && r->sc.pos + end < r->sc.len &&
		    r->sc.buf[r->sc.pos + end] == '\0')
			return 0; /* a zero-filled tail: the file was cut by a crash */
		if (jerr != json_tokener_continue) {
			snprintf(msg, sizeof(msg), "invalid JSON at byte %llu: %s",
				 (unsigned long long)(r->sc.base + r->sc.pos + end),
				 json_tokener_error_desc(jerr));
			return fail(r, "%s", msg);
		}
		r->sc.pos += end;
		used += end;
		if (used > RECORD_MAX)
			return fail(r, "%s", "a record larger than 64 MiB: not a recording");
	}
}

/* Decimal digits at *@pp, at most 19 (always fits); false if none or more. */
static inline bool fast_u64(const char **pp, const char *e, uint64_t *v)
{
	const char *p = *pp;
	uint64_t x = 0;
	int n = 0;

	while (p < e && (unsigned char)(*p - '0') < 10) {
		x = x * 10 + (uint64_t)(*p - '0');
		p++;
		if (++n > 19)
			return false;
	}
	if (!n)
		return false;
	*pp = p;
	*v = x;
	return true;
}

/*
 * The hot path: `[tid,kind,start,dur,flags]` exactly as the writer prints it, perhaps with more
 * integers after flags. Returns false (nothing consumed) for anything else, which the tokener
 * then handles.
 */
static bool fast_interval(struct gil_reader *r, struct gil_interval *iv)
{
	const char *p, *e;
	uint64_t tid, kind, start, dur, flags, attr[2] = { 0, 0 };
	bool neg = false, minus;
	int nattr = 0;

	if (r->sc.len - r->sc.pos < FAST_LOOKAHEAD && !r->sc.eof && gil_jscan_fill(&r->sc) < 0)
		return false;
	p = r->sc.buf + r->sc.pos + 1;
	e = r->sc.buf + r->sc.len;
	if (p < e && *p == '-') {
		neg = true;
		p++;
	}
	if (!fast_u64(&p, e, &tid) || tid > INT32_MAX || p >= e || *p++ != ',')
		return false;
	if (!fast_u64(&p, e, &kind) || kind > GIL_KIND_MAX || p >= e || *p++ != ',')
		return false;
	if (!fast_u64(&p, e, &start) || p >= e || *p++ != ',')
		return false;
	if (!fast_u64(&p, e, &dur) || p >= e || *p++ != ',')
		return false;
	if (!fast_u64(&p, e, &flags) || flags > UINT32_MAX || p >= e)
		return false;
	/* fn and reason (attribution, doc/format.md), then numbers of later versions: skipped */
	while (*p == ',') {
		uint64_t extra;

		p++;
		minus = p < e && *p == '-';
		if (minus)
			p++;
		if (!fast_u64(&p, e, &extra) || p >= e)
			return false;
		if (nattr < 2)
			attr[nattr++] = minus ? 0 : extra;
	}
	if (*p++ != ']')
		return false;
	iv->tid = neg ? -(int32_t)tid : (int32_t)tid;
	iv->kind = (uint8_t)kind;
	iv->start = start;
	iv->dur = dur;
	iv->flags = (uint32_t)flags;
	iv->fn = attr[0] <= UINT32_MAX ? (uint32_t)attr[0] : 0;
	iv->reason = attr[1] <= 2 ? (uint8_t)attr[1] : 0;
	r->sc.pos = (size_t)(p - r->sc.buf);
	return true;
}

static bool get_u64(struct json_object *o, uint64_t *v)
{
	if (!o || !json_object_is_type(o, json_type_int) || json_object_get_int64(o) < 0)
		return false;
	*v = json_object_get_uint64(o);
	return true;
}

static bool get_s64(struct json_object *o, int64_t *v)
{
	if (!o || !json_object_is_type(o, json_type_int))
		return false;
	*v = json_object_get_int64(o);
	return true;
}

/* An interval given as a general JSON array (extra elements are for later versions). */
static int array_record(struct gil_reader *r, struct json_object *a, struct gil_record *rec)
{
	uint64_t kind, start, dur, flags, fn, reason;
	int64_t tid;

	if (json_object_array_length(a) < 5 || !get_s64(json_object_array_get_idx(a, 0), &tid) ||
	    tid < INT32_MIN || tid > INT32_MAX || !get_u64(json_object_array_get_idx(a, 1), &kind) ||
	    !get_u64(json_object_array_get_idx(a, 2), &start) ||
	    !get_u64(json_object_array_get_idx(a, 3), &dur) ||
	    !get_u64(json_object_array_get_idx(a, 4), &flags) || flags > UINT32_MAX) {
		char what[64];

		snprintf(what, sizeof(what), "%llu", (unsigned long long)r->records);
		return fail(r, "record %s: malformed interval", what);
	}
	if (kind > GIL_KIND_MAX) {
		/* A kind from a later version: skippable like any unknown record. */
		rec->type = GIL_REC_UNKNOWN;
		rec->obj = a;
		return 1;
	}
	rec->type = GIL_REC_INTERVAL;
	rec->iv.tid = (int32_t)tid;
	rec->iv.kind = (uint8_t)kind;
	rec->iv.start = start;
	rec->iv.dur = dur;
	rec->iv.flags = (uint32_t)flags;
	/* attribution: [..., flags, fn, reason]; anything else there is not ours to read */
	if (json_object_array_length(a) >= 7 && get_u64(json_object_array_get_idx(a, 5), &fn) &&
	    fn <= UINT32_MAX && get_u64(json_object_array_get_idx(a, 6), &reason)) {
		rec->iv.fn = (uint32_t)fn;
		rec->iv.reason = reason <= 2 ? (uint8_t)reason : 0;
	}
	return 1;
}

static const char *string_or_null(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

/* {"fn":{"id":N,"name":...,"file":...,"line":N,"unreadable":...}}: what is not there is 0/NULL. */
static void function_record(struct json_object *fn, struct gil_record *rec)
{
	struct json_object *v;
	int64_t line = -1;

	rec->type = GIL_REC_FUNCTION;
	rec->fn.id = 0;
	if (json_object_object_get_ex(fn, GIL_KEY_FN_ID, &v) && json_object_is_type(v, json_type_int))
		rec->fn.id = json_object_get_int64(v);
	if (json_object_object_get_ex(fn, GIL_KEY_FN_LINE, &v) &&
	    json_object_is_type(v, json_type_int))
		line = json_object_get_int64(v);
	rec->fn.line = line < -1 || line > INT32_MAX ? -1 : (int32_t)line;
	rec->fn.name = string_or_null(fn, GIL_KEY_FN_NAME);
	rec->fn.file = string_or_null(fn, GIL_KEY_FN_FILE);
	rec->fn.why = string_or_null(fn, GIL_KEY_FN_UNREADABLE);
}

static int object_record(struct gil_reader *r, struct json_object *o, struct gil_record *rec)
{
	struct json_object *v, *x;
	char what[96];
	int64_t s;

	rec->type = GIL_REC_UNKNOWN;
	rec->obj = o;
	if (r->fmt == GIL_INPUT_SYSTRACE) {
		rec->type = REC_EVENT;
		return 1;
	}
	if (json_object_object_get_ex(o, GIL_KEY_HEADER, &v) &&
	    json_object_is_type(v, json_type_object)) {
		rec->type = GIL_REC_HEADER;
		rec->obj = v;
	} else if (json_object_object_get_ex(o, GIL_KEY_FOOTER, &v) &&
		   json_object_is_type(v, json_type_object)) {
		rec->type = GIL_REC_FOOTER;
		rec->obj = v;
	} else if (json_object_object_get_ex(o, GIL_KEY_THREAD, &v)) {
		rec->type = GIL_REC_THREAD;
		if (!json_object_object_get_ex(v, GIL_KEY_REC_TID, &x) || !get_s64(x, &s))
			goto bad;
		rec->tid = (int32_t)s;
		rec->name = json_object_object_get_ex(v, GIL_KEY_REC_NAME, &x) ?
				    json_object_get_string(x) : "";
		if (!rec->name)
			rec->name = "";
		rec->ts = 0;
		if (json_object_object_get_ex(v, GIL_KEY_REC_TS, &x) && !get_u64(x, &rec->ts))
			goto bad;
	} else if (json_object_object_get_ex(o, GIL_KEY_LOST, &v)) {
		rec->type = GIL_REC_LOST;
		rec->cpu = -1;
		rec->count = 0;
		rec->ts = 0;
		if (json_object_object_get_ex(v, GIL_KEY_REC_CPU, &x) && get_s64(x, &s))
			rec->cpu = (int)s;
		if (!json_object_object_get_ex(v, GIL_KEY_REC_COUNT, &x) || !get_u64(x, &rec->count))
			goto bad;
		if (json_object_object_get_ex(v, GIL_KEY_REC_TS, &x) && !get_u64(x, &rec->ts))
			goto bad;
	} else if (json_object_object_get_ex(o, GIL_KEY_EXIT, &v)) {
		rec->type = GIL_REC_EXIT;
		if (!json_object_object_get_ex(v, GIL_KEY_REC_TID, &x) || !get_s64(x, &s))
			goto bad;
		rec->tid = (int32_t)s;
		rec->ts = 0;
		if (json_object_object_get_ex(v, GIL_KEY_REC_TS, &x) && !get_u64(x, &rec->ts))
			goto bad;
	} else if (json_object_object_get_ex(o, GIL_KEY_FN, &v) &&
		   json_object_is_type(v, json_type_object)) {
		function_record(v, rec);
	}
	return 1;
bad:
	snprintf(what, sizeof(what), "record %llu: malformed %s record",
		 (unsigned long long)r->records,
		 rec->type == GIL_REC_THREAD ? "thread" : rec->type == GIL_REC_LOST ? "lost" : "exit");
	return fail(r, "%s", what);
}

/* Turn a parsed element into *@rec; the reader keeps the reference. */
static int element_record(struct gil_reader *r, struct json_object *o, struct gil_record *rec)
{
	r->cur = o;
	if (json_object_is_type(o, json_type_array) && r->fmt == GIL_INPUT_GILTRACE)
		return array_record(r, o, rec);
	if (json_object_is_type(o, json_type_object))
		return object_record(r, o, rec);
	if (r->fmt == GIL_INPUT_SYSTRACE)
		return fail(r, "record %llu: not an event object", (unsigned long long)r->records);
	rec->type = GIL_REC_UNKNOWN;
	rec->obj = o;
	return 1;
}

/* Peek for the first line and after the records, where a zero byte means a crash cut the file. */
static int peek_head(struct gil_reader *r, char *c)
{
	int ret = gil_jscan_peek(&r->sc, c);

	return ret > 0 && *c == '\0' ? 0 : ret;
}

/* After the records array: `,"key":value ...}`; unknown keys are skipped. */
static int read_tail(struct gil_reader *r)
{
	struct json_object *o;
	char c;
	int ret;

	for (;;) {
		ret = peek_head(r, &c);
		if (ret <= 0)
			return ret;
		if (c == '}') {
			r->sc.pos++;
			return 1;
		}
		if (c != ',')
			return fail(r, "%s", "invalid JSON after the records array");
		r->sc.pos++;
		ret = parse_value(r, &o); /* the key */
		if (ret <= 0)
			return ret;
		if (!o || !json_object_is_type(o, json_type_string)) {
			json_object_put(o);
			return fail(r, "%s", "invalid JSON after the records array");
		}
		json_object_put(o);
		ret = gil_jscan_peek(&r->sc, &c);
		if (ret <= 0)
			return ret;
		if (c != ':')
			return fail(r, "%s", "invalid JSON after the records array");
		r->sc.pos++;
		ret = parse_value(r, &o);
		json_object_put(o);
		if (ret <= 0)
			return ret;
	}
}

/* The next element of the records array as a record (a sysTrace event as REC_EVENT). */
static int next_element(struct gil_reader *r, struct gil_record *rec)
{
	struct json_object *o;
	char c;
	int ret;

	json_object_put(r->cur);
	r->cur = NULL;
	memset(rec, 0, sizeof(*rec));
	if (r->pending) {
		o = r->pending;
		r->pending = NULL;
		return element_record(r, o, rec);
	}
	for (;;) {
		switch (r->state) {
		case ST_SEP:
			ret = gil_jscan_peek(&r->sc, &c);
			if (ret <= 0)
				goto cut_or_error;
			r->sc.pos++;
			if (c == ',') {
				r->state = ST_ELEM;
			} else if (c == ']') {
				r->state = r->fmt == GIL_INPUT_GILTRACE ? ST_TAIL : ST_END;
			} else {
				r->sc.pos--;
				if (c == '\0')
					goto cut;
				return fail(r, "%s", "invalid JSON: expected ',' or ']' between records");
			}
			break;
		case ST_ELEM:
			ret = gil_jscan_peek(&r->sc, &c);
			if (ret <= 0)
				goto cut_or_error;
			if (c == ']' && r->first) {
				r->sc.pos++;
				r->state = r->fmt == GIL_INPUT_GILTRACE ? ST_TAIL : ST_END;
				break;
			}
			if (c == '\0')
				goto cut;
			if (c == '[' && r->fmt == GIL_INPUT_GILTRACE && fast_interval(r, &rec->iv)) {
				rec->type = GIL_REC_INTERVAL;
				r->records++;
				r->offset = r->sc.base + r->sc.pos;
				r->first = false;
				r->state = ST_SEP;
				return 1;
			}
			ret = parse_value(r, &o);
			if (ret <= 0)
				goto cut_or_error;
			r->records++;
			r->offset = r->sc.base + r->vend;
			r->first = false;
			r->state = ST_SEP;
			if (!o) {
				rec->type = GIL_REC_UNKNOWN;
				return 1;
			}
			return element_record(r, o, rec);
		case ST_TAIL:
			ret = read_tail(r);
			if (ret <= 0)
				goto cut_or_error;
			r->state = ST_END;
			break;
		case ST_END:
			ret = gil_jscan_peek(&r->sc, &c);
			if (ret < 0)
				return -1;
			if (ret == 0 || c == '\0') {
				/* a zero-filled tail after a complete file changes nothing */
				r->state = ST_DONE;
				return 0;
			}
			return fail(r, "%s", "unexpected data after the end of the recording");
		case ST_DONE:
			return 0;
		case ST_ERROR:
			return -1;
		}
	}
cut_or_error:
	if (ret < 0 || r->state == ST_ERROR) {
		r->state = ST_ERROR;
		return -1;
	}
cut:
	r->truncated = true;
	r->state = ST_DONE;
	return 0;
}

int gil_reader_next(struct gil_reader *r, struct gil_record *rec)
{
	int ret, n;

	if (r->fmt != GIL_INPUT_SYSTRACE)
		return next_element(r, rec);
	while (r->qpos == r->qlen) {
		ret = next_element(r, rec);
		if (ret <= 0 || rec->type != REC_EVENT)
			return ret;
		n = gil_systrace_event(r->st, rec->obj, r->queue);
		if (n < 0)
			return fail(r, "%s", "out of memory");
		r->qpos = 0;
		r->qlen = n;
	}
	memset(rec, 0, sizeof(*rec));
	rec->type = GIL_REC_INTERVAL;
	rec->iv = r->queue[r->qpos++];
	return 1;
}

/*
 * The file ended inside its first line: is all of it a prefix of that line, then perhaps a
 * zero-filled tail? Then it is a recording cut at its start. Read again from the start, since
 * the buffer may have moved on.
 */
static bool is_magic_prefix(struct gil_reader *r)
{
	static const char magic[] = GIL_RAWFILE_MAGIC;
	char head[64 * 1024];
	ssize_t n;
	size_t m;

	do
		n = pread(r->fd, head, sizeof(head), 0);
	while (n < 0 && errno == EINTR);
	if (n < 0 || (size_t)n == sizeof(head))
		return false;
	for (m = (size_t)n; m && (head[m - 1] == '\0' || head[m - 1] == '\n'); m--)
		;
	if (m > sizeof(magic) - 1 || memcmp(head, magic, m))
		return false;
	return true;
}

/* `{"format":"giltrace","version":1,"records":[`, in any spacing and key order. */
static int open_giltrace(struct gil_reader *r)
{
	struct json_object *key = NULL, *val = NULL;
	const char *format = NULL, *why, *k;
	int64_t version = -1;
	char c, msg[160];
	int ret;

	r->sc.pos++; /* '{' */
	r->fmt = GIL_INPUT_GILTRACE;
	for (;;) {
		ret = peek_head(r, &c);
		if (ret <= 0)
			goto ended;
		why = "not a recording: a JSON object without \"records\"";
		if (c == '}')
			goto bad;
		why = "not JSON: expected a key in the top-level object";
		if (c != '"')
			goto bad;
		ret = parse_value(r, &key);
		if (ret <= 0)
			goto ended;
		ret = peek_head(r, &c);
		if (ret <= 0)
			goto ended;
		why = "not JSON: expected ':' in the top-level object";
		if (c != ':')
			goto bad;
		r->sc.pos++;
		k = json_object_get_string(key);
		why = "a Chrome trace, not a recording (already converted?)";
		if (!strcmp(k, "traceEvents"))
			goto bad;
		if (!strcmp(k, "records"))
			break;
		ret = parse_value(r, &val);
		if (ret <= 0)
			goto ended;
		if (!strcmp(k, "format")) {
			if (!json_object_is_type(val, json_type_string) ||
			    strcmp(json_object_get_string(val), "giltrace")) {
				snprintf(msg, sizeof(msg), "unknown format '%.64s': not a giltrace recording",
					 json_object_get_string(val));
				why = msg;
				goto bad;
			}
			format = "giltrace";
		} else if (!strcmp(k, "version")) {
			if (!get_s64(val, &version))
				version = -2;
		}
		json_object_put(key);
		json_object_put(val);
		key = val = NULL;
		ret = peek_head(r, &c);
		if (ret <= 0)
			goto ended;
		why = "not a recording: a JSON object without \"records\"";
		if (c == '}')
			goto bad;
		why = "not JSON: expected ',' in the top-level object";
		if (c != ',')
			goto bad;
		r->sc.pos++;
	}
	why = "unknown format: a JSON object without \"format\":\"giltrace\"";
	if (!format)
		goto bad;
	why = "giltrace recording without a valid \"version\"";
	if (version < 0)
		goto bad;
	if (version != GILTRACE_FORMAT_VERSION) {
		snprintf(msg, sizeof(msg),
			 "unsupported recording version %lld (this gil-convert reads version %d)",
			 (long long)version, GILTRACE_FORMAT_VERSION);
		why = msg;
		goto bad;
	}
	json_object_put(key);
	key = NULL;
	ret = peek_head(r, &c);
	if (ret <= 0)
		goto ended;
	why = "not a recording: \"records\" is not an array";
	if (c != '[')
		goto bad;
	r->sc.pos++;
	r->state = ST_ELEM;
	return 0;
ended:
	json_object_put(key);
	json_object_put(val);
	if (ret < 0)
		return -1;
	if (!is_magic_prefix(r))
		return fail(r, "%s", "not JSON: the file ends inside its first value");
	/* Cut inside the first line: a recording that holds nothing yet. */
	r->truncated = true;
	r->state = ST_DONE;
	return 0;
bad:
	json_object_put(key);
	json_object_put(val);
	return fail(r, "%s", why);
}

/* A bare array: the reference tool's file, recognized by its first event. */
static int open_systrace(struct gil_reader *r)
{
	struct json_object *o;
	char c;
	int ret;

	r->sc.pos++; /* '[' */
	r->fmt = GIL_INPUT_SYSTRACE;
	r->st = gil_systrace_alloc();
	if (!r->st)
		return fail(r, "%s", "out of memory");
	r->state = ST_ELEM;
	ret = gil_jscan_peek(&r->sc, &c);
	if (ret < 0)
		return -1;
	if (ret == 0 || c == '\0' || c == ']')
		return 0; /* cut or empty: gil_reader_next() says which */
	ret = parse_value(r, &o);
	if (ret < 0)
		return -1;
	if (ret == 0) {
		r->truncated = true;
		r->state = ST_DONE;
		return 0;
	}
	if (!gil_systrace_recognize(o)) {
		json_object_put(o);
		return fail(r, "%s",
			    "unknown format: a JSON array, but not of take_gil/drop_gil events "
			    "(a converted trace?)");
	}
	r->pending = o;
	r->has_pid = gil_systrace_pid(o, &r->pid);
	r->records++;
	r->offset = r->sc.base + r->vend;
	r->first = false;
	r->state = ST_SEP;
	return 0;
}

struct gil_reader *gil_reader_open(const char *path, char *err, size_t errlen)
{
	struct gil_reader *r;
	struct stat st;
	char c, msg[64];
	int ret = -1;

	r = calloc(1, sizeof(*r));
	if (!r) {
		gil_err(err, errlen, "%s: out of memory", path);
		return NULL;
	}
	r->fd = -1;
	r->first = true;
	r->path = strdup(path);
	r->tok = json_tokener_new_ex(64);
	if (!r->path || !r->tok ||
	    gil_jscan_init(&r->sc, -1, r->path, RBUF_SIZE, r->err, sizeof(r->err)) < 0) {
		gil_err(r->err, sizeof(r->err), "%s: out of memory", path);
		goto out;
	}
	r->fd = open(path, O_RDONLY | O_CLOEXEC);
	r->sc.fd = r->fd;
	if (r->fd < 0) {
		gil_err(r->err, sizeof(r->err), "cannot open %s: %s", path, strerror(errno));
		goto out;
	}
	if (fstat(r->fd, &st) == 0 && S_ISDIR(st.st_mode)) {
		gil_err(r->err, sizeof(r->err), "%s: is a directory", path);
		goto out;
	}
	if (gil_jscan_fill(&r->sc) < 0)
		goto out;
	if (r->sc.len >= 3 && !memcmp(r->sc.buf, "\xef\xbb\xbf", 3))
		r->sc.pos = 3; /* a UTF-8 byte order mark, as some editors write */
	ret = gil_jscan_peek(&r->sc, &c);
	if (ret < 0)
		goto out;
	if (ret == 0) {
		/* Empty: the recorder was stopped before its first write. */
		r->fmt = GIL_INPUT_GILTRACE;
		r->truncated = true;
		r->state = ST_DONE;
		ret = 0;
		goto out;
	}
	if (c == '{') {
		ret = open_giltrace(r);
	} else if (c == '[') {
		ret = open_systrace(r);
	} else if (r->sc.len >= 2 && (unsigned char)r->sc.buf[0] == 0x1f &&
		   (unsigned char)r->sc.buf[1] == 0x8b) {
		ret = fail(r, "%s", "compressed (gzip): decompress it first");
	} else if (c == '\0') {
		r->fmt = GIL_INPUT_GILTRACE;
		r->truncated = true;
		r->state = ST_DONE;
		ret = 0;
	} else {
		if (c >= 0x20 && c < 0x7f)
			snprintf(msg, sizeof(msg), "not JSON (it starts with '%c')", c);
		else
			snprintf(msg, sizeof(msg), "not JSON (it starts with byte 0x%02x)",
				 (unsigned char)c);
		ret = fail(r, "%s", msg);
	}
out:
	if (ret < 0) {
		gil_err(err, errlen, "%s", r->err[0] ? r->err : "cannot open the recording");
		gil_reader_close(r);
		return NULL;
	}
	return r;
}

enum gil_input_format gil_reader_format(const struct gil_reader *r)
{
	return r->fmt;
}

bool gil_reader_systrace_pid(const struct gil_reader *r, int64_t *pid)
{
	if (!r->has_pid)
		return false;
	*pid = r->pid;
	return true;
}

bool gil_reader_systrace_stats(const struct gil_reader *r, struct gil_systrace_stats *st)
{
	if (!r->st)
		return false;
	gil_systrace_stats(r->st, st);
	return true;
}

bool gil_reader_truncated(const struct gil_reader *r)
{
	return r->truncated;
}

uint64_t gil_reader_records(const struct gil_reader *r)
{
	return r->records;
}

uint64_t gil_reader_offset(const struct gil_reader *r)
{
	return r->offset;
}

const char *gil_reader_error(const struct gil_reader *r)
{
	return r->err;
}

/* Find the last line starting with {"footer": in the last @win bytes and parse it. */
static struct json_object *footer_in_tail(struct gil_reader *r, off_t size, size_t win)
{
	static const char key[] = "\n{\"" GIL_KEY_FOOTER "\":";
	struct json_object *rec = NULL, *footer = NULL;
	struct json_tokener *tok;
	char *tail, *p, *hit = NULL;
	ssize_t n;
	size_t got = 0;

	tail = malloc(win);
	if (!tail)
		return NULL;
	while (got < win) {
		n = pread(r->fd, tail + got, win - got, size - (off_t)win + (off_t)got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	for (p = tail; got >= sizeof(key) - 1 && p <= tail + got - (sizeof(key) - 1); p++) {
		p = memchr(p, '\n', (size_t)(tail + got - p));
		if (!p || (size_t)(tail + got - p) < sizeof(key) - 1)
			break;
		if (!memcmp(p, key, sizeof(key) - 1))
			hit = p;
	}
	if (hit) {
		tok = json_tokener_new_ex(64);
		if (tok) {
			rec = json_tokener_parse_ex(tok, hit + 1, (int)(tail + got - hit - 1));
			json_tokener_free(tok);
		}
		if (rec && json_object_object_get_ex(rec, GIL_KEY_FOOTER, &footer) &&
		    json_object_is_type(footer, json_type_object))
			json_object_get(footer);
		else
			footer = NULL;
		json_object_put(rec);
	}
	free(tail);
	return footer;
}

struct json_object *gil_reader_footer(struct gil_reader *r)
{
	struct stat st;
	size_t win;

	if (r->footer_done)
		return r->footer;
	r->footer_done = true;
	if (r->fmt != GIL_INPUT_GILTRACE || fstat(r->fd, &st) < 0 || !S_ISREG(st.st_mode))
		return NULL;
	for (win = 64 * 1024;; win *= 4) {
		if ((off_t)win >= st.st_size)
			win = (size_t)st.st_size;
		r->footer = footer_in_tail(r, st.st_size, win);
		if (r->footer || (off_t)win >= st.st_size || win >= TAIL_MAX)
			break;
	}
	return r->footer;
}

void gil_reader_close(struct gil_reader *r)
{
	if (!r)
		return;
	if (r->fd >= 0)
		close(r->fd);
	json_object_put(r->cur);
	json_object_put(r->pending);
	json_object_put(r->footer);
	gil_systrace_free(r->st);
	if (r->tok)
		json_tokener_free(r->tok);
	gil_jscan_fini(&r->sc);
	free(r->path);
	free(r);
}
