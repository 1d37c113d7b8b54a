// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Opening a recording: which format it is (a giltrace object with its version, or a sysTrace
 * bare array recognized by its first event), a file cut inside its first line, and the footer
 * read from the end of the file. Reading the records is reader.c's.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "giltrace.h"
#include "reader-priv.h"
#include "common/util.h"
#include "keys.h"

#define RBUF_SIZE (1024 * 1024)
/* How far back from the end to look for the footer line. */
#define TAIL_MAX (16u * 1024 * 1024)

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

/*
 * The top-level object's next character, which must be @want: 1 when it is (left unread); 0 or
 * -1 as reader_peek_head() when the file ends or fails; -2 with *@why when it is not: @why_not,
 * or, at the object's end, that it has no "records".
 */
static int object_next(struct gil_reader *r, char want, const char *why_not, const char **why)
{
	char c;
	int ret = reader_peek_head(r, &c);

	if (ret <= 0)
		return ret;
	if (c == want)
		return 1;
	*why = c == '}' ? "not a recording: a JSON object without \"records\"" : why_not;
	return -2;
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
		ret = object_next(r, '"', "not JSON: expected a key in the top-level object", &why);
		if (ret == -2)
			goto bad;
		if (ret <= 0)
			goto ended;
		ret = reader_parse_value(r, &key);
		if (ret <= 0)
			goto ended;
		ret = reader_peek_head(r, &c);
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
		ret = reader_parse_value(r, &val);
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
			if (!reader_get_s64(val, &version))
				version = -2;
		}
		json_object_put(key);
		json_object_put(val);
		key = val = NULL;
		ret = object_next(r, ',', "not JSON: expected ',' in the top-level object", &why);
		if (ret == -2)
			goto bad;
		if (ret <= 0)
			goto ended;
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
	ret = reader_peek_head(r, &c);
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
		return reader_fail(r, "%s", "not JSON: the file ends inside its first value");
	/* Cut inside the first line: a recording that holds nothing yet. */
	r->truncated = true;
	r->state = ST_DONE;
	return 0;
bad:
	json_object_put(key);
	json_object_put(val);
	return reader_fail(r, "%s", why);
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
		return reader_fail(r, "%s", "out of memory");
	r->state = ST_ELEM;
	ret = gil_jscan_peek(&r->sc, &c);
	if (ret < 0)
		return -1;
	if (ret == 0 || c == '\0' || c == ']')
		return 0; /* cut or empty: gil_reader_next() says which */
	ret = reader_parse_value(r, &o);
	if (ret < 0)
		return -1;
	if (ret == 0) {
		r->truncated = true;
		r->state = ST_DONE;
		return 0;
	}
	if (!gil_systrace_recognize(o)) {
		json_object_put(o);
		return reader_fail(r, "%s",
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
	/*
	 * O_NONBLOCK: a named pipe put where a recording was (or swapped in after the caller
	 * looked) must not block the open; only a regular file is read.
	 */
	r->fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	r->sc.fd = r->fd;
	if (r->fd < 0) {
		gil_err(r->err, sizeof(r->err), "cannot open %s: %s", path, strerror(errno));
		goto out;
	}
	if (fstat(r->fd, &st) == 0 && S_ISDIR(st.st_mode)) {
		gil_err(r->err, sizeof(r->err), "%s: is a directory", path);
		goto out;
	}
	if (fstat(r->fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		gil_err(r->err, sizeof(r->err), "%s: not a regular file", path);
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
		ret = reader_fail(r, "%s", "compressed (gzip): decompress it first");
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
		ret = reader_fail(r, "%s", msg);
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
