// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The recording writer: one record per line, buffered, flushed by the recorder every round.
 * What is flushed is written by a thread of its own, in order per file: a disk that stalls
 * (the page cache writing back gigabytes of recording: 0.3 s on this VM's disk) stalls that
 * thread, not the recorder draining the kernel's rings, which lost 340,745 events in such a
 * stall before. At most WQ_MAX_BYTES wait; past that a flush waits as the write did before.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rawfile.h"
#include "common/util.h"
#include "keys.h"

#define WBUF_SIZE (256 * 1024)
/* Longest line we build in place (an interval is < 100 bytes); larger ones are written whole. */
#define LINE_MAX_FAST 512
#define WQ_MAX_BYTES (64u << 20) /* flushed data not yet written, over all files */

struct gil_rawfile {
	int fd;
	char *name;
	char *buf;
	size_t len;
	bool started; /* a record line was written: the next one needs a ",\n" before it */
	bool attribution; /* intervals carry fn and reason */
	bool discard; /* gil_rawfile_discard: counts records, writes nothing */
	uint64_t intervals;
	char err[256];
	unsigned int pending; /* jobs queued for the writer thread (wq.mu) */
	int werrno; /* its first failed write's errno (wq.mu) */
};

/* ---- the writer thread ---- */

struct wjob {
	struct gil_rawfile *w;
	char *buf;
	size_t len;
	struct wjob *next;
};

static struct {
	pthread_mutex_t mu;
	pthread_cond_t work; /* a job was queued, or stop */
	pthread_cond_t room; /* a job was written */
	struct wjob *head, *tail;
	size_t bytes;
	unsigned int files; /* open files: the thread runs while there are */
	bool running, stop;
	pthread_t th;
} wq = {
	.mu = PTHREAD_MUTEX_INITIALIZER,
	.work = PTHREAD_COND_INITIALIZER,
	.room = PTHREAD_COND_INITIALIZER,
};

static void *writer_main(void *arg)
{
	struct wjob *j;
	int skip, r;

	(void)arg;
	pthread_mutex_lock(&wq.mu);
	for (;;) {
		while (!wq.head && !wq.stop)
			pthread_cond_wait(&wq.work, &wq.mu);
		if (!wq.head)
			break;
		j = wq.head;
		wq.head = j->next;
		if (!wq.head)
			wq.tail = NULL;
		skip = j->w->werrno; /* after a failed write nothing more of that file */
		pthread_mutex_unlock(&wq.mu);
		r = !skip && gil_write_all(j->w->fd, j->buf, j->len) < 0 ? (errno ? errno : EIO) : 0;
		pthread_mutex_lock(&wq.mu);
		if (r && !j->w->werrno)
			j->w->werrno = r;
		wq.bytes -= j->len;
		j->w->pending--;
		pthread_cond_broadcast(&wq.room);
		free(j->buf);
		free(j);
	}
	pthread_mutex_unlock(&wq.mu);
	return NULL;
}

/* Queue a copy of @n bytes at @p for @w; 1: queued, 0: write them here (no thread or memory). */
static int submit(struct gil_rawfile *w, const char *p, size_t n)
{
	struct wjob *j = malloc(sizeof(*j));

	if (j)
		j->buf = malloc(n);
	if (!j || !j->buf) {
		free(j);
		return 0;
	}
	memcpy(j->buf, p, n);
	j->w = w;
	j->len = n;
	j->next = NULL;
	pthread_mutex_lock(&wq.mu);
	if (!wq.running) {
		wq.stop = false;
		wq.running = pthread_create(&wq.th, NULL, writer_main, NULL) == 0;
	}
	/* not running, or being stopped by another recorder's last file: write in line */
	if (!wq.running || wq.stop) {
		pthread_mutex_unlock(&wq.mu);
		free(j->buf);
		free(j);
		return 0;
	}
	while (wq.bytes && wq.bytes + n > WQ_MAX_BYTES)
		pthread_cond_wait(&wq.room, &wq.mu);
	if (wq.tail)
		wq.tail->next = j;
	else
		wq.head = j;
	wq.tail = j;
	wq.bytes += n;
	w->pending++;
	pthread_cond_signal(&wq.work);
	pthread_mutex_unlock(&wq.mu);
	return 1;
}

/* Wait until everything queued for @w is written; its errno if a write failed, else 0. */
static int drain(struct gil_rawfile *w)
{
	int e;

	pthread_mutex_lock(&wq.mu);
	while (w->pending)
		pthread_cond_wait(&wq.room, &wq.mu);
	e = w->werrno;
	pthread_mutex_unlock(&wq.mu);
	return e;
}

/* The first failed write's errno of @w so far (written by the thread), 0 if none. */
static int failed(struct gil_rawfile *w)
{
	int e;

	pthread_mutex_lock(&wq.mu);
	e = w->werrno;
	pthread_mutex_unlock(&wq.mu);
	return e;
}

/* One file fewer: the last one stops the thread (a library user's process keeps none). */
static void release_writer(void)
{
	bool join = false;

	pthread_mutex_lock(&wq.mu);
	if (wq.files && !--wq.files && wq.running) {
		wq.stop = true;
		pthread_cond_signal(&wq.work);
		join = true;
	}
	pthread_mutex_unlock(&wq.mu);
	if (join) {
		pthread_join(wq.th, NULL);
		pthread_mutex_lock(&wq.mu);
		wq.running = false;
		pthread_mutex_unlock(&wq.mu);
	}
}

struct gil_rawfile *gil_rawfile_create(int dirfd, const char *name, char *err, size_t errlen)
{
	struct gil_rawfile *w;
	int fd, saved;

	fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0640);
	if (fd < 0) {
		saved = errno;
		gil_err(err, errlen, "cannot create %s: %s", name, strerror(saved));
		errno = saved;
		return NULL;
	}
	w = calloc(1, sizeof(*w));
	if (w) {
		w->buf = malloc(WBUF_SIZE);
		w->name = strdup(name);
	}
	if (!w || !w->buf || !w->name) {
		gil_err(err, errlen, "cannot create %s: out of memory", name);
		if (w) {
			free(w->buf);
			free(w->name);
		}
		free(w);
		unlinkat(dirfd, name, 0);
		close(fd);
		return NULL;
	}
	w->fd = fd;
	pthread_mutex_lock(&wq.mu);
	wq.files++;
	pthread_mutex_unlock(&wq.mu);
	return w;
}

struct gil_rawfile *gil_rawfile_discard(void)
{
	struct gil_rawfile *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->fd = -1;
	w->discard = true;
	return w;
}

static int write_failed(struct gil_rawfile *w, int e)
{
	return gil_err(w->err, sizeof(w->err), "cannot write %s: %s", w->name, strerror(e));
}

/* Write @n bytes at @p after everything before them: through the thread when it can. */
static int write_all(struct gil_rawfile *w, const char *p, size_t n)
{
	int e;

	if (w->err[0])
		return -1;
	if ((e = failed(w)))
		return write_failed(w, e);
	if (!n || submit(w, p, n))
		return 0;
	/* in line: after what is queued, so that the order holds */
	if ((e = drain(w)))
		return write_failed(w, e);
	if (gil_write_all(w->fd, p, n) < 0)
		return write_failed(w, errno);
	return 0;
}

int gil_rawfile_flush(struct gil_rawfile *w)
{
	int ret;

	if (!w || w->fd < 0)
		return 0;
	ret = write_all(w, w->buf, w->len);
	w->len = 0;
	return ret;
}

/* Reserve @n bytes in the buffer, flushing first when needed. */
static char *reserve(struct gil_rawfile *w, size_t n)
{
	if (w->err[0])
		return NULL;
	if (w->len + n > WBUF_SIZE && gil_rawfile_flush(w) < 0)
		return NULL;
	return w->buf + w->len;
}

/* Append one record line: the separator of the previous line first. */
static int put_line(struct gil_rawfile *w, const char *line, size_t n)
{
	char *p;

	if (w->discard)
		return 0;
	if (n + 2 > WBUF_SIZE) {
		if (gil_rawfile_flush(w) < 0 || write_all(w, w->started ? ",\n" : "", w->started ? 2 : 0))
			return -1;
		w->started = true;
		return write_all(w, line, n);
	}
	p = reserve(w, n + 2);
	if (!p)
		return -1;
	if (w->started) {
		*p++ = ',';
		*p++ = '\n';
		w->len += 2;
	}
	memcpy(p, line, n);
	w->len += n;
	w->started = true;
	return 0;
}

static int put_object(struct gil_rawfile *w, const char *key, struct json_object *val)
{
	struct json_object *rec;
	const char *s;
	int ret;

	rec = json_object_new_object();
	if (!rec)
		return -1;
	json_object_object_add(rec, key, json_object_get(val));
	s = json_object_to_json_string_ext(rec, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	ret = s ? put_line(w, s, strlen(s)) : -1;
	json_object_put(rec);
	return ret;
}

int gil_rawfile_header(struct gil_rawfile *w, struct json_object *header)
{
	static const char magic[] = GIL_RAWFILE_MAGIC "\n";
	char *p;

	if (w->discard)
		return 0;
	p = reserve(w, sizeof(magic));
	if (!p)
		return -1;
	memcpy(p, magic, sizeof(magic) - 1);
	w->len += sizeof(magic) - 1;
	return put_object(w, GIL_KEY_HEADER, header);
}

int gil_rawfile_thread(struct gil_rawfile *w, int32_t tid, const char *name, uint64_t ts)
{
	struct json_object *o = json_object_new_object();
	int ret;

	if (!o)
		return -1;
	char *utf8 = gil_utf8_copy(name ? name : ""); /* comm is bytes; JSON is UTF-8 */

	if (!utf8) {
		json_object_put(o);
		return -1;
	}
	json_object_object_add(o, GIL_KEY_REC_TID, json_object_new_int(tid));
	json_object_object_add(o, GIL_KEY_REC_NAME, json_object_new_string(utf8));
	json_object_object_add(o, GIL_KEY_REC_TS, json_object_new_uint64(ts));
	ret = put_object(w, GIL_KEY_THREAD, o);
	json_object_put(o);
	free(utf8);
	return ret;
}

int gil_rawfile_interval(struct gil_rawfile *w, const struct gil_interval *iv)
{
	char line[LINE_MAX_FAST], *p = line;

	if (w->discard) {
		w->intervals++;
		return 0;
	}
	/* The hot path: built by hand, no printf, no json-c. */
	*p++ = '[';
	p += gil_fmt_s64(p, iv->tid);
	*p++ = ',';
	p += gil_fmt_u64(p, iv->kind);
	*p++ = ',';
	p += gil_fmt_u64(p, iv->start);
	*p++ = ',';
	p += gil_fmt_u64(p, iv->dur);
	*p++ = ',';
	p += gil_fmt_u64(p, iv->flags);
	if (w->attribution || iv->interp || iv->gil || iv->native) {
		*p++ = ',';
		p += gil_fmt_u64(p, iv->fn);
		*p++ = ',';
		p += gil_fmt_u64(p, iv->reason);
	}
	/* another interpreter than the main one (3.12+): its id and its GIL's */
	if (iv->interp || iv->gil || iv->native) {
		*p++ = ',';
		p += gil_fmt_u64(p, iv->interp);
		*p++ = ',';
		p += gil_fmt_u64(p, iv->gil);
	}
	/* the native caller: 0 the interpreter's own, else a {"native":...} record's id */
	if (iv->native) {
		*p++ = ',';
		p += gil_fmt_u64(p, iv->native == GIL_NATIVE_OWN ? 0 : iv->native);
	}
	*p++ = ']';
	if (put_line(w, line, (size_t)(p - line)) < 0)
		return -1;
	w->intervals++;
	return 0;
}

int gil_rawfile_lost(struct gil_rawfile *w, int cpu, uint64_t count, uint64_t ts)
{
	struct json_object *o = json_object_new_object();
	int ret;

	if (!o)
		return -1;
	json_object_object_add(o, GIL_KEY_REC_CPU, json_object_new_int(cpu));
	json_object_object_add(o, GIL_KEY_REC_COUNT, json_object_new_uint64(count));
	json_object_object_add(o, GIL_KEY_REC_TS, json_object_new_uint64(ts));
	ret = put_object(w, GIL_KEY_LOST, o);
	json_object_put(o);
	return ret;
}

/* A {"@key":{"tid":N,"ts":N[,"n":N]}} record: a thread's exit, or its step mark (@n >= 0). */
static int put_thread_event(struct gil_rawfile *w, const char *key, int32_t tid, uint64_t ts,
			    int64_t n)
{
	struct json_object *o = json_object_new_object();
	int ret;

	if (!o)
		return -1;
	json_object_object_add(o, GIL_KEY_REC_TID, json_object_new_int(tid));
	json_object_object_add(o, GIL_KEY_REC_TS, json_object_new_uint64(ts));
	if (n >= 0)
		json_object_object_add(o, GIL_KEY_REC_N, json_object_new_int64(n));
	ret = put_object(w, key, o);
	json_object_put(o);
	return ret;
}

int gil_rawfile_exit(struct gil_rawfile *w, int32_t tid, uint64_t ts)
{
	return put_thread_event(w, GIL_KEY_EXIT, tid, ts, -1);
}

int gil_rawfile_step(struct gil_rawfile *w, int32_t tid, uint64_t ts, int64_t n)
{
	return put_thread_event(w, GIL_KEY_STEP, tid, ts, n);
}

int gil_rawfile_native(struct gil_rawfile *w, uint32_t id, const char *name, uint64_t addr)
{
	struct json_object *o = json_object_new_object();
	char *utf8 = gil_utf8_copy(name ? name : ""); /* a symbol is bytes; JSON is UTF-8 */
	int ret = -1;

	if (o && utf8) {
		json_object_object_add(o, GIL_KEY_FN_ID, json_object_new_int64(id));
		json_object_object_add(o, GIL_KEY_FN_NAME, json_object_new_string(utf8));
		json_object_object_add(o, GIL_KEY_NATIVE_ADDR, json_object_new_uint64(addr));
		ret = put_object(w, GIL_KEY_NATIVE, o);
	}
	json_object_put(o);
	free(utf8);
	return ret;
}

void gil_rawfile_set_attribution(struct gil_rawfile *w, bool on)
{
	if (w)
		w->attribution = on;
}

int gil_rawfile_function(struct gil_rawfile *w, uint32_t id, const char *name, const char *file,
			 int32_t line, const char *why)
{
	struct json_object *o = json_object_new_object();
	int ret;

	if (!o)
		return -1;
	json_object_object_add(o, GIL_KEY_FN_ID, json_object_new_int64(id));
	json_object_object_add(o, GIL_KEY_FN_NAME, name ? json_object_new_string(name) : NULL);
	json_object_object_add(o, GIL_KEY_FN_FILE, file ? json_object_new_string(file) : NULL);
	json_object_object_add(o, GIL_KEY_FN_LINE, line >= 0 ? json_object_new_int(line) : NULL);
	if (why)
		json_object_object_add(o, GIL_KEY_FN_UNREADABLE, json_object_new_string(why));
	ret = put_object(w, GIL_KEY_FN, o);
	json_object_put(o);
	return ret;
}

int gil_rawfile_finish(struct gil_rawfile *w, struct json_object *footer)
{
	static const char tail[] = "\n]}\n";
	int ret = 0, e;
	char *p;

	if (!w || w->fd < 0)
		return 0;
	if (put_object(w, GIL_KEY_FOOTER, footer) < 0)
		ret = -1;
	p = ret ? NULL : reserve(w, sizeof(tail));
	if (p) {
		memcpy(p, tail, sizeof(tail) - 1);
		w->len += sizeof(tail) - 1;
	}
	if (gil_rawfile_flush(w) < 0 || !p)
		ret = -1;
	if ((e = drain(w)) && !w->err[0])
		write_failed(w, e);
	if (w->err[0])
		ret = -1;
	if (close(w->fd) < 0 && !w->err[0])
		ret = write_failed(w, errno);
	w->fd = -1;
	return ret;
}

const char *gil_rawfile_error(const struct gil_rawfile *w)
{
	return w ? w->err : "";
}

uint64_t gil_rawfile_intervals(const struct gil_rawfile *w)
{
	return w ? w->intervals : 0;
}

void gil_rawfile_free(struct gil_rawfile *w)
{
	if (!w)
		return;
	if (w->discard) {
		free(w);
		return;
	}
	/* Not finished: keep what is complete on disk, readable as a cut recording. */
	if (w->fd >= 0)
		gil_rawfile_flush(w);
	drain(w); /* never free what the thread still writes */
	if (w->fd >= 0)
		close(w->fd);
	release_writer();
	free(w->buf);
	free(w->name);
	free(w);
}
