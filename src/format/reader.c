// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The recording reader: streams a recording element by element of its top-level array, in
 * bounded memory, and stops cleanly at the last complete record of a cut file.
 *
 * Interval lines, the bulk of a recording, are parsed by hand in place; everything else goes
 * through json-c's incremental tokener, fed chunk by chunk. Opening (which format, which
 * version) and the footer are in reader-open.c.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "giltrace.h"
#include "reader-priv.h"
#include "common/util.h"
#include "keys.h"

#define GIL_KIND_MAX GIL_KIND_DROP

/* sysTrace: an event object, turned into intervals before gil_reader_next() returns */
#define REC_EVENT ((enum gil_rec_type)(GIL_REC_UNKNOWN + 1))

/* An interval line is < 100 bytes: with this much in the buffer the fast path never runs dry. */
#define FAST_LOOKAHEAD 256
/*
 * Refuse single records larger than this: the recorder writes none above a few KiB (command
 * lines are cut at 4 KiB, at most 64 probes, names of at most 4 KiB), and json-c holds a
 * record several times over while parsing it (a 64 MiB one cost 2.4 GB).
 */
#define RECORD_MAX (4u * 1024 * 1024)

/* Record a one-line error "<path>: <reason>" and stop the reader; returns -1. */
int reader_fail(struct gil_reader *r, const char *fmt, ...)
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
int reader_parse_value(struct gil_reader *r, struct json_object **out)
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
			return reader_fail(r, "%s", msg);
		}
		r->sc.pos += end;
		used += end;
		if (used > RECORD_MAX)
			return reader_fail(r, "%s", "a record larger than 4 MiB: not a giltrace "
					   "recording, or a damaged one (records are a few KiB at most)");
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
	uint64_t tid, kind, start, dur, flags, attr[5] = { 0, 0, 0, 0, 0 };
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
	/*
	 * fn and reason (attribution, doc/format.md), interp and gil (another interpreter), then
	 * numbers of later versions: skipped
	 */
	while (*p == ',') {
		uint64_t extra;

		p++;
		minus = p < e && *p == '-';
		if (minus)
			p++;
		if (!fast_u64(&p, e, &extra) || p >= e)
			return false;
		/* a negative native (the 5th) is none: not read, as in array_record */
		if (nattr < 5) {
			attr[nattr] = !minus ? extra : nattr == 4 ? UINT64_MAX : 0;
			nattr++;
		}
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
	iv->interp = attr[2] < UINT32_MAX ? (uint32_t)attr[2] : 0;
	iv->gil = attr[3] < UINT32_MAX ? (uint32_t)attr[3] : 0;
	iv->native = nattr < 5 || attr[4] >= UINT32_MAX ? 0 : attr[4] ? (uint32_t)attr[4] :
								      GIL_NATIVE_OWN;
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

bool reader_get_s64(struct json_object *o, int64_t *v)
{
	if (!o || !json_object_is_type(o, json_type_int))
		return false;
	*v = json_object_get_int64(o);
	return true;
}

/* An interval given as a general JSON array (extra elements are for later versions). */
static int array_record(struct gil_reader *r, struct json_object *a, struct gil_record *rec)
{
	uint64_t kind, start, dur, flags, fn, reason, interp, gil, native;
	int64_t tid;

	if (json_object_array_length(a) < 5 || !reader_get_s64(json_object_array_get_idx(a, 0), &tid) ||
	    tid < INT32_MIN || tid > INT32_MAX || !get_u64(json_object_array_get_idx(a, 1), &kind) ||
	    !get_u64(json_object_array_get_idx(a, 2), &start) ||
	    !get_u64(json_object_array_get_idx(a, 3), &dur) ||
	    !get_u64(json_object_array_get_idx(a, 4), &flags) || flags > UINT32_MAX) {
		char what[64];

		snprintf(what, sizeof(what), "%llu", (unsigned long long)r->records);
		return reader_fail(r, "record %s: malformed interval", what);
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
	/* [..., fn, reason, interp, gil]: another interpreter than the main one */
	if (json_object_array_length(a) >= 9 && get_u64(json_object_array_get_idx(a, 7), &interp) &&
	    interp < UINT32_MAX && get_u64(json_object_array_get_idx(a, 8), &gil) &&
	    gil < UINT32_MAX) {
		rec->iv.interp = (uint32_t)interp;
		rec->iv.gil = (uint32_t)gil;
	}
	/* [..., interp, gil, native]: 0 the interpreter's own, else a native record's id */
	if (json_object_array_length(a) >= 10 &&
	    get_u64(json_object_array_get_idx(a, 9), &native) && native < UINT32_MAX)
		rec->iv.native = native ? (uint32_t)native : GIL_NATIVE_OWN;
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
		if (!json_object_object_get_ex(v, GIL_KEY_REC_TID, &x) || !reader_get_s64(x, &s))
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
		if (json_object_object_get_ex(v, GIL_KEY_REC_CPU, &x) && reader_get_s64(x, &s))
			rec->cpu = (int)s;
		if (!json_object_object_get_ex(v, GIL_KEY_REC_COUNT, &x) || !get_u64(x, &rec->count))
			goto bad;
		if (json_object_object_get_ex(v, GIL_KEY_REC_TS, &x) && !get_u64(x, &rec->ts))
			goto bad;
	} else if (json_object_object_get_ex(o, GIL_KEY_EXIT, &v)) {
		rec->type = GIL_REC_EXIT;
		if (!json_object_object_get_ex(v, GIL_KEY_REC_TID, &x) || !reader_get_s64(x, &s))
			goto bad;
		rec->tid = (int32_t)s;
		rec->ts = 0;
		if (json_object_object_get_ex(v, GIL_KEY_REC_TS, &x) && !get_u64(x, &rec->ts))
			goto bad;
	} else if (json_object_object_get_ex(o, GIL_KEY_STEP, &v) &&
		   json_object_is_type(v, json_type_object)) {
		rec->type = GIL_REC_STEP;
		rec->step = -1;
		if (!json_object_object_get_ex(v, GIL_KEY_REC_TID, &x) || !reader_get_s64(x, &s) ||
		    !json_object_object_get_ex(v, GIL_KEY_REC_TS, &x) || !get_u64(x, &rec->ts))
			goto bad;
		rec->tid = (int32_t)s;
		if (json_object_object_get_ex(v, GIL_KEY_REC_N, &x) && reader_get_s64(x, &s) &&
		    s >= 0)
			rec->step = s;
	} else if (json_object_object_get_ex(o, GIL_KEY_NATIVE, &v) &&
		   json_object_is_type(v, json_type_object)) {
		rec->type = GIL_REC_NATIVE;
		rec->native.addr = 0;
		if (!json_object_object_get_ex(v, GIL_KEY_FN_ID, &x) || !reader_get_s64(x, &s) ||
		    s < 1 || s >= UINT32_MAX || !(rec->native.name = string_or_null(v, GIL_KEY_FN_NAME)))
			goto bad;
		rec->native.id = s;
		if (json_object_object_get_ex(v, GIL_KEY_NATIVE_ADDR, &x))
			get_u64(x, &rec->native.addr);
	} else if (json_object_object_get_ex(o, GIL_KEY_FN, &v) &&
		   json_object_is_type(v, json_type_object)) {
		function_record(v, rec);
	}
	return 1;
bad:
	snprintf(what, sizeof(what), "record %llu: malformed %s record",
		 (unsigned long long)r->records,
		 rec->type == GIL_REC_THREAD ? "thread" : rec->type == GIL_REC_LOST ? "lost" :
		 rec->type == GIL_REC_STEP ? "step" : rec->type == GIL_REC_NATIVE ? "native" :
		 "exit");
	return reader_fail(r, "%s", what);
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
		return reader_fail(r, "record %llu: not an event object", (unsigned long long)r->records);
	rec->type = GIL_REC_UNKNOWN;
	rec->obj = o;
	return 1;
}

/* Peek for the first line and after the records, where a zero byte means a crash cut the file. */
int reader_peek_head(struct gil_reader *r, char *c)
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
		ret = reader_peek_head(r, &c);
		if (ret <= 0)
			return ret;
		if (c == '}') {
			r->sc.pos++;
			return 1;
		}
		if (c != ',')
			return reader_fail(r, "%s", "invalid JSON after the records array");
		r->sc.pos++;
		ret = reader_parse_value(r, &o); /* the key */
		if (ret <= 0)
			return ret;
		if (!o || !json_object_is_type(o, json_type_string)) {
			json_object_put(o);
			return reader_fail(r, "%s", "invalid JSON after the records array");
		}
		json_object_put(o);
		ret = gil_jscan_peek(&r->sc, &c);
		if (ret <= 0)
			return ret;
		if (c != ':')
			return reader_fail(r, "%s", "invalid JSON after the records array");
		r->sc.pos++;
		ret = reader_parse_value(r, &o);
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
				return reader_fail(r, "%s", "invalid JSON: expected ',' or ']' between records");
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
			ret = reader_parse_value(r, &o);
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
			return reader_fail(r, "%s", "unexpected data after the end of the recording");
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
			return reader_fail(r, "%s", "out of memory");
		r->qpos = 0;
		r->qlen = n;
	}
	memset(rec, 0, sizeof(*rec));
	rec->type = GIL_REC_INTERVAL;
	rec->iv = r->queue[r->qpos++];
	return 1;
}
