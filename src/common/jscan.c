// SPDX-License-Identifier: LGPL-2.1-or-later
/* The buffered JSON scanner (see jscan.h). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jscan.h"
#include "util.h"

#define DEPTH_MAX 512

int gil_jscan_init(struct gil_jscan *s, int fd, const char *path, size_t size, char *err,
		   size_t errlen)
{
	memset(s, 0, sizeof(*s));
	s->fd = fd;
	s->path = path;
	s->size = size;
	s->err = err;
	s->errlen = errlen;
	s->buf = malloc(size);
	return s->buf ? 0 : -1;
}

void gil_jscan_fini(struct gil_jscan *s)
{
	free(s->buf);
	s->buf = NULL;
	s->pos = s->len = 0;
}

ssize_t gil_jscan_fill(struct gil_jscan *s)
{
	ssize_t n;

	if (s->eof)
		return 0;
	if (s->pos) {
		memmove(s->buf, s->buf + s->pos, s->len - s->pos);
		s->base += s->pos;
		s->len -= s->pos;
		s->pos = 0;
	}
	if (s->len == s->size)
		return 1; /* full: the caller consumes before asking again */
	do
		n = read(s->fd, s->buf + s->len, s->size - s->len);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		gil_err(s->err, s->errlen, "%s: read error: %s", s->path, strerror(errno));
		return -1;
	}
	if (n == 0)
		s->eof = true;
	s->len += (size_t)n;
	return n;
}

int gil_jscan_peek(struct gil_jscan *s, char *c)
{
	for (;;) {
		while (s->pos < s->len) {
			char ch = s->buf[s->pos];

			if (ch != ' ' && ch != '\n' && ch != '\t' && ch != '\r') {
				*c = ch;
				return 1;
			}
			s->pos++;
		}
		ssize_t n = gil_jscan_fill(s);

		if (n <= 0)
			return (int)n;
	}
}

int gil_jscan_fail(struct gil_jscan *s, const char *what)
{
	gil_err(s->err, s->errlen, "%s: %s (byte %llu)", s->path, what,
		(unsigned long long)gil_jscan_offset(s));
	return -1;
}

static int cut(struct gil_jscan *s)
{
	return gil_jscan_fail(s, "not JSON: unexpected end of file");
}

int gil_jscan_next(struct gil_jscan *s, char *c)
{
	int ret = gil_jscan_peek(s, c);

	return ret < 0 ? -1 : ret == 0 ? cut(s) : 1;
}

int gil_jscan_get(struct gil_jscan *s, char *c)
{
	if (s->pos == s->len) {
		ssize_t n = gil_jscan_fill(s);

		if (n <= 0)
			return n < 0 ? -1 : cut(s);
	}
	*c = s->buf[s->pos++];
	return 1;
}

int gil_jscan_string(struct gil_jscan *s, char *out, size_t cap)
{
	size_t n = 0;
	char c;

	if (gil_jscan_get(s, &c) < 0)
		return -1;
	for (;;) {
		if (gil_jscan_get(s, &c) < 0)
			return -1;
		if (c == '"')
			break;
		if (c == '\\') {
			if (out && n + 1 < cap)
				out[n++] = c;
			if (gil_jscan_get(s, &c) < 0)
				return -1;
		}
		if (out && n + 1 < cap)
			out[n++] = c;
	}
	if (out)
		out[n] = '\0';
	return 0;
}

int gil_jscan_scalar(struct gil_jscan *s, char *out, size_t cap)
{
	size_t n = 0;

	for (;;) {
		if (s->pos == s->len) {
			ssize_t r = gil_jscan_fill(s);

			if (r < 0)
				return -1;
			if (r == 0)
				break;
		}
		char c = s->buf[s->pos];

		if (c == ',' || c == '}' || c == ']' || c == ' ' || c == '\n' || c == '\r' ||
		    c == '\t')
			break;
		if (c == '{' || c == '[' || c == '"' || c == ':')
			return gil_jscan_fail(s, "not JSON");
		if (out && n + 1 < cap)
			out[n++] = c;
		s->pos++;
	}
	if (!n && out)
		return gil_jscan_fail(s, "not JSON");
	if (out)
		out[n] = '\0';
	return 0;
}

int gil_jscan_skip(struct gil_jscan *s)
{
	char stack[DEPTH_MAX], c;
	int depth = 0;

	if (gil_jscan_next(s, &c) < 0)
		return -1;
	if (c != '{' && c != '[')
		return c == '"' ? gil_jscan_string(s, NULL, 0) : gil_jscan_scalar(s, NULL, 0);
	for (;;) {
		/* fast inner loop over the buffer */
		while (s->pos < s->len) {
			c = s->buf[s->pos];
			if (c == '"')
				break;
			s->pos++;
			if (c == '{' || c == '[') {
				if (depth == DEPTH_MAX)
					return gil_jscan_fail(s, "JSON nested too deeply");
				stack[depth++] = c;
			} else if (c == '}' || c == ']') {
				if (!depth || stack[depth - 1] != (c == '}' ? '{' : '['))
					return gil_jscan_fail(s, "not JSON: brackets do not match");
				if (!--depth)
					return 0;
			}
		}
		if (s->pos < s->len) {
			if (gil_jscan_string(s, NULL, 0) < 0)
				return -1;
			continue;
		}
		ssize_t n = gil_jscan_fill(s);

		if (n <= 0)
			return n < 0 ? -1 : cut(s);
	}
}
