// SPDX-License-Identifier: LGPL-2.1-or-later
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

#include "util.h"

size_t gil_fmt_u64(char *buf, uint64_t v)
{
	static const char pairs[] = "00010203040506070809101112131415161718192021222324"
				    "25262728293031323334353637383940414243444546474849"
				    "50515253545556575859606162636465666768697071727374"
				    "75767778798081828384858687888990919293949596979899";
	char tmp[24], *p = tmp + sizeof(tmp);
	size_t n;

	/* two digits per division, written backwards, then moved into place */
	while (v >= 100) {
		p -= 2;
		memcpy(p, pairs + 2 * (v % 100), 2);
		v /= 100;
	}
	if (v >= 10) {
		p -= 2;
		memcpy(p, pairs + 2 * v, 2);
	} else {
		*--p = (char)('0' + v);
	}
	n = (size_t)(tmp + sizeof(tmp) - p);
	memcpy(buf, p, n);
	buf[n] = '\0';
	return n;
}

size_t gil_fmt_s64(char *buf, int64_t v)
{
	if (v >= 0)
		return gil_fmt_u64(buf, (uint64_t)v);
	buf[0] = '-';
	/* -(v + 1) + 1 avoids overflow at INT64_MIN */
	return 1 + gil_fmt_u64(buf + 1, (uint64_t)(-(v + 1)) + 1);
}

size_t gil_fmt_us(char *buf, int64_t ns)
{
	uint64_t u, frac;
	size_t n = 0;

	if (ns < 0) {
		buf[n++] = '-';
		u = (uint64_t)(-(ns + 1)) + 1;
	} else {
		u = (uint64_t)ns;
	}
	n += gil_fmt_u64(buf + n, u / 1000);
	frac = u % 1000;
	buf[n++] = '.';
	buf[n++] = (char)('0' + frac / 100);
	buf[n++] = (char)('0' + frac / 10 % 10);
	buf[n++] = (char)('0' + frac % 10);
	buf[n] = '\0';
	return n;
}

bool gil_us_text_ns(const char *s, int64_t *ns)
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
	if (*s == '.')
		for (s++; *s >= '0' && *s <= '9'; s++, any = true)
			if (digits < 3) {
				fr = fr * 10 + (*s - '0');
				digits++;
			}
	if (!any || *s)
		return false;
	while (digits++ < 3)
		fr *= 10;
	*ns = (ip * 1000 + fr) * (neg ? -1 : 1);
	return true;
}

int gil_write_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;
	ssize_t r;

	while (n) {
		r = write(fd, p, n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

int gil_err(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (buf && len) {
		va_start(ap, fmt);
		vsnprintf(buf, len, fmt, ap);
		va_end(ap);
	}
	return -1;
}

char *gil_strfmt(const char *fmt, ...)
{
	va_list ap;
	char *s;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return NULL;
	s = malloc((size_t)n + 1);
	if (!s)
		return NULL;
	va_start(ap, fmt);
	vsnprintf(s, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return s;
}

static __thread const int *cancel_flag;

void gil_cancel_on(const int *flag)
{
	cancel_flag = flag;
}

bool gil_cancelled(void)
{
	return cancel_flag && __atomic_load_n(cancel_flag, __ATOMIC_RELAXED);
}

char *gil_read_file(const char *path, size_t max, size_t *lenp)
{
	char *buf;
	size_t len = 0;
	struct stat st;
	ssize_t n;
	int fd, saved;

	/* only a regular file (what /proc and sysfs give too): a named pipe must not block us */
	fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		errno = EINVAL;
		return NULL;
	}
	buf = malloc(max + 1);
	if (!buf)
		goto fail;
	while (len < max) {
		n = read(fd, buf + len, max - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			goto fail;
		if (n == 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	close(fd);
	if (lenp)
		*lenp = len;
	return buf;
fail:
	saved = errno;
	free(buf);
	close(fd);
	errno = saved;
	return NULL;
}

size_t gil_utf8_seq_len(const char *str)
{
	const unsigned char *p = (const unsigned char *)str;
	unsigned char c = p[0];
	size_t n, i;
	uint32_t cp;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		n = 1;
		cp = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 2;
		cp = c & 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 3;
		cp = c & 0x07;
	} else {
		return 0;
	}
	for (i = 1; i <= n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	/* overlong, surrogates, beyond U+10FFFF */
	if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) || cp > 0x10ffff ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n + 1;
}

size_t gil_utf8_valid_len(const char *s)
{
	const char *p = s;
	size_t n;

	while (*p && (n = gil_utf8_seq_len(p)))
		p += n;
	return (size_t)(p - s);
}

char *gil_utf8_copy(const char *s)
{
	char *out = strdup(s), *p = out;
	size_t n;

	if (!out)
		return NULL;
	for (;;) {
		n = gil_utf8_valid_len(p);
		p += n;
		if (!*p)
			return out;
		*p++ = '?';
	}
}

void gil_topk_add(uint32_t *ids, uint64_t *vals, size_t n, uint32_t id, uint64_t v)
{
	size_t i, min = 0;

	for (i = 0; i < n; i++) {
		if (ids[i] == id || !ids[i]) {
			ids[i] = id;
			vals[i] += v;
			return;
		}
		if (vals[i] < vals[min])
			min = i;
	}
	ids[min] = id; /* the newcomer inherits the evicted count */
	vals[min] += v;
}

size_t gil_topk_best(const uint32_t *ids, const uint64_t *vals, size_t n)
{
	size_t i, best = 0;

	for (i = 1; i < n && ids[i]; i++)
		if (vals[i] > vals[best])
			best = i;
	return best;
}

/* A decimal id in @s, at most @max; false when @s is NULL, empty or not all digits. */
static bool parse_id(const char *s, unsigned long min, unsigned long max, unsigned long *out)
{
	unsigned long v;
	char *end;

	if (!s || *s < '0' || *s > '9')
		return false;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return false;
	*out = v;
	return true;
}

bool gil_sudo_ids(uid_t *uid, gid_t *gid)
{
	unsigned long u, g = 0;

	if (getuid() != 0 || !parse_id(getenv("SUDO_UID"), 1, (uid_t)-1 - 1, &u))
		return false;
	if (gid && !parse_id(getenv("SUDO_GID"), 0, (gid_t)-1 - 1, &g))
		return false;
	*uid = (uid_t)u;
	if (gid)
		*gid = (gid_t)g;
	return true;
}

int gil_grow(void *arrp, size_t *cap, size_t want, size_t size)
{
	size_t n = *cap ? *cap : 16;
	void *v;

	if (want <= *cap)
		return 0;
	while (n < want) {
		if (n > SIZE_MAX / 2)
			return errno = ENOMEM, -1;
		n *= 2;
	}
	if (size && n > SIZE_MAX / size)
		return errno = ENOMEM, -1;
	/* the array's pointer is read and written as bytes: it may be of any object type */
	memcpy(&v, arrp, sizeof(v));
	v = realloc(v, n * size);
	if (!v)
		return errno = ENOMEM, -1;
	memcpy(arrp, &v, sizeof(v));
	*cap = n;
	return 0;
}

const char *gil_fmt_dur(char *buf, size_t len, uint64_t ns)
{
	if (ns < 1000)
		snprintf(buf, len, "%lluns", (unsigned long long)ns);
	else if (ns < 1000000)
		snprintf(buf, len, "%.1fus", ns / 1e3);
	else if (ns < 1000000000)
		snprintf(buf, len, "%.2fms", ns / 1e6);
	else
		snprintf(buf, len, "%.3fs", ns / 1e9);
	return buf;
}
