/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A buffered JSON scanner over a file descriptor: the recording reader and the --merge scan of
 * a profiler's trace read files far larger than memory through it. It knows bytes, blanks,
 * strings, scalars and bracket nesting; what the values mean is the caller's.
 * Lifecycle: gil_jscan_init -> fill / peek / get / string / scalar / skip... -> gil_jscan_fini.
 */
#ifndef GIL_JSCAN_H
#define GIL_JSCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct gil_jscan {
	int fd;
	const char *path; /* for messages; not owned */
	char *buf;
	size_t size; /* of buf */
	size_t pos, len; /* next byte, end of the bytes read */
	uint64_t base; /* file offset of buf[0] */
	bool eof;
	char *err; /* where errors go: "<path>: <reason>"; not owned */
	size_t errlen;
};

/**
 * gil_jscan_init - scan @fd (read from its current offset) through a buffer of @size bytes;
 * errors are written to @err as one line starting with @path. -1 with errno on ENOMEM. Pair
 * with gil_jscan_fini().
 */
int gil_jscan_init(struct gil_jscan *s, int fd, const char *path, size_t size, char *err,
		   size_t errlen);

/** gil_jscan_fini - free the buffer (not the fd); an unset or finished scanner is fine. */
void gil_jscan_fini(struct gil_jscan *s);

/**
 * gil_jscan_fill - move the unread bytes to the front and read more. Returns the bytes read
 * (1 when the buffer is already full: consume before asking again), 0 at the end of the file,
 * -1 on a read error (reason in the error buffer).
 */
ssize_t gil_jscan_fill(struct gil_jscan *s);

/**
 * gil_jscan_peek - the next non-blank byte, not consumed: 1 with *@c set, 0 at the end of the
 * file, -1 on a read error.
 */
int gil_jscan_peek(struct gil_jscan *s, char *c);

/** gil_jscan_offset - the file offset of the next byte. */
static inline uint64_t gil_jscan_offset(const struct gil_jscan *s)
{
	return s->base + s->pos;
}

/** gil_jscan_fail - "<path>: <what> (byte N)" into the error buffer; returns -1. */
int gil_jscan_fail(struct gil_jscan *s, const char *what);

/*
 * The rest treat the end of the file as an error ("not JSON: unexpected end of file"): they
 * are for documents that must be complete. All return 0 (get: 1) or -1.
 */

/** gil_jscan_get - the next byte, consumed. */
int gil_jscan_get(struct gil_jscan *s, char *c);

/** gil_jscan_next - gil_jscan_peek(), where the end of the file is an error. */
int gil_jscan_next(struct gil_jscan *s, char *c);

/**
 * gil_jscan_string - a string (its opening quote is next); its raw text, escapes kept, to @out
 * (NULL: skipped), cut to @cap bytes with the terminating NUL.
 */
int gil_jscan_string(struct gil_jscan *s, char *out, size_t cap);

/** gil_jscan_scalar - a number, true, false or null: its text to @out (NULL: skipped). */
int gil_jscan_scalar(struct gil_jscan *s, char *out, size_t cap);

/** gil_jscan_skip - skip one value of any kind, checking that brackets match. */
int gil_jscan_skip(struct gil_jscan *s);

#endif /* GIL_JSCAN_H */
