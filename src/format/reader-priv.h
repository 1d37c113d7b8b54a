/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The reader's state, shared by its two halves: reader.c reads the records, reader-open.c
 * recognizes a file (giltrace or sysTrace) and finds its footer.
 */
#ifndef GIL_FORMAT_READER_PRIV_H
#define GIL_FORMAT_READER_PRIV_H

#include <stdbool.h>
#include <stdint.h>

#include <json-c/json.h>

#include "rawfile.h"
#include "systrace.h"
#include "common/jscan.h"

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

/* Record a one-line error "<path>: <reason>" and stop the reader; returns -1. */
int reader_fail(struct gil_reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * Parse one JSON value with the incremental tokener. Returns 1 (*@out may be NULL for a JSON
 * null), 0 when the input ends inside the value (cut file; zero-filled tails count as cut), -1 on
 * a syntax error.
 */
int reader_parse_value(struct gil_reader *r, struct json_object **out);

/* gil_jscan_peek() for the first line and after the records, where a NUL byte means a cut. */
int reader_peek_head(struct gil_reader *r, char *c);

/* A JSON integer into *@v; false for anything else. */
bool reader_get_s64(struct json_object *o, int64_t *v);

#endif /* GIL_FORMAT_READER_PRIV_H */
