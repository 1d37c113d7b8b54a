/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The output file: buffered, written to a temporary name and renamed when complete. */
#ifndef GIL_OUTFILE_H
#define GIL_OUTFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define OUTFILE_BUF (1024 * 1024)

struct outfile {
	int fd;
	char *path; /* the final name; NULL for standard output */
	char *tmp; /* the temporary name while writing (in dirfd); NULL when written in place */
	char *base; /* the final name in dirfd */
	int dirfd; /* the output's directory, walked without untrusted links (common/dirwalk.c) */
	char *buf;
	size_t len;
	uint64_t written;
	char err[320];
};

/**
 * outfile_open - start writing @path ("-": standard output) through a temporary file in the same
 * directory, renamed to @path when complete. The directory is reached through no link another
 * user could have made (common/dirwalk.c), and a @path that is such a link is refused: root
 * converting in a directory a user can write never writes where the user points. A device, a
 * FIFO, a socket or a link of ours (/dev/null, /dev/stdout, a named pipe) is written in place:
 * renaming over it would replace it with a regular file. NULL with a reason in @err. Pair with
 * outfile_commit() or outfile_abort().
 */
struct outfile *outfile_open(const char *path, char *err, size_t errlen);

int outfile_flush(struct outfile *o);
int outfile_write_slow(struct outfile *o, const void *p, size_t n);

/** outfile_write - append @n bytes; errors are sticky and reported by outfile_commit(). */
static inline int outfile_write(struct outfile *o, const void *p, size_t n)
{
	if (o->len + n <= OUTFILE_BUF) {
		__builtin_memcpy(o->buf + o->len, p, n);
		o->len += n;
		return 0;
	}
	return outfile_write_slow(o, p, n);
}

/* Room for @n bytes at the end of the buffer (n <= 8192), flushing first when needed. */
static inline char *outfile_reserve(struct outfile *o, size_t n)
{
	if (o->len + n > OUTFILE_BUF && outfile_flush(o) < 0)
		return NULL;
	return o->buf + o->len;
}

/** outfile_commit - flush, close and rename into place. Frees @o; -1 with a reason in @err. */
int outfile_commit(struct outfile *o, char *err, size_t errlen);

/** outfile_abort - remove the temporary file and free @o. */
void outfile_abort(struct outfile *o);

#endif /* GIL_OUTFILE_H */
