/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Small helpers shared by the recorder and the converter. */
#ifndef GIL_UTIL_H
#define GIL_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define GIL_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/**
 * gil_grow - room for at least @want elements of @size bytes in the array at *@arrp (any
 * pointer type, passed by address), whose capacity is *@cap elements: the capacity doubles,
 * from 16, until it holds @want. Returns 0, or -1 with errno ENOMEM and *@arrp and *@cap
 * untouched (also when the size in bytes would not fit a size_t).
 *
 *	if (gil_grow(&s->v, &s->cap, s->nr + 1, sizeof(*s->v)) < 0)
 *		return -1;
 */
int gil_grow(void *arrp, size_t *cap, size_t want, size_t size);

/* Format @v in decimal at @buf (>= 21 bytes); returns the length. No locale, no printf. */
size_t gil_fmt_u64(char *buf, uint64_t v);
size_t gil_fmt_s64(char *buf, int64_t v);

/* A duration for people in @buf: "850ns", "12.3us", "4.56ms", "1.234s". Returns @buf. */
const char *gil_fmt_dur(char *buf, size_t len, uint64_t ns);

/* Format @ns as microseconds with three decimals ("-12.345") at @buf (>= 32 bytes). */
size_t gil_fmt_us(char *buf, int64_t ns);

/*
 * gil_us_text_ns - microseconds written in decimal ("123.456", "-7", "1.5") to exact
 * nanoseconds (digits past the third decimal are dropped); false for anything else,
 * exponents included: epoch microseconds with nanosecond digits do not fit a double.
 */
bool gil_us_text_ns(const char *s, int64_t *ns);

/* gil_write_all - write all @n bytes to @fd, again after EINTR. 0, or -1 with errno. */
int gil_write_all(int fd, const void *p, size_t n);

/* snprintf into an error buffer; always terminated; returns -1 for `return gil_err(...)`. */
int gil_err(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* malloc'ed printf; NULL when out of memory. */
char *gil_strfmt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * Read a whole small file (e.g. /proc/PID/comm) into a malloc'd, NUL-terminated buffer, at
 * most @max bytes. Only a regular file: anything else (a named pipe, a device) fails at once
 * with EINVAL, never blocking.
 */
char *gil_read_file(const char *path, size_t max, size_t *len);

/*
 * gil_utf8_valid_len - how many leading bytes of NUL-terminated @s are well-formed UTF-8
 * (strlen(@s) when all are): thread names come from the kernel and from programs as bytes,
 * and the files are JSON, which must be UTF-8.
 */
size_t gil_utf8_valid_len(const char *s);

/*
 * gil_utf8_seq_len - the length (1..4) of the well-formed UTF-8 sequence at @s, or 0 if none
 * starts there: overlong forms, surrogates and code points beyond U+10FFFF are not well-formed.
 */
size_t gil_utf8_seq_len(const char *s);

/*
 * gil_topk_add - count @v for @id (non-zero) in @n slots (@ids 0: free), space-saving: an id
 * not present and no free slot takes over the smallest slot and its count. Exact while at most
 * @n ids come; after that an upper bound, and right for any id with more than 1/@n of the total.
 */
void gil_topk_add(uint32_t *ids, uint64_t *vals, size_t n, uint32_t id, uint64_t v);

/* gil_topk_best - the slot with the largest count (0 when all are free: check ids[it]). */
size_t gil_topk_best(const uint32_t *ids, const uint64_t *vals, size_t n);

/*
 * gil_cancel_on - the calling thread's long reads (a debug file's CRC, a debuginfod download)
 * give up once *@flag is non-zero; NULL (each thread's default): they never do. A recording
 * that stops does not wait for a worker's read of a file someone else made (record/resolver.c).
 */
void gil_cancel_on(const int *flag);

/* gil_cancelled - whether the calling thread's flag (gil_cancel_on) is set. */
bool gil_cancelled(void);

/* gil_utf8_copy - a malloc'd copy of @s with each byte that breaks UTF-8 replaced by '?'. */
char *gil_utf8_copy(const char *s);

/**
 * gil_sudo_ids - the invoking user's ids when we run as root under sudo (SUDO_UID > 0, and
 * SUDO_GID when @gid is not NULL). Returns false when not under sudo or the variables are not
 * numbers; *@uid and *@gid are then untouched.
 */
bool gil_sudo_ids(uid_t *uid, gid_t *gid);

#endif /* GIL_UTIL_H */
