// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The file sink: a target's records after its header (doc/format.md), function definitions
 * before their first use, and its footer. A release whose function could not be read
 * (name_later: pairing.h's GIL_FN_DEFER) waits here with the hold it ended for the thread's
 * next interval: its wait, at whose take_gil entry the same function runs, names them.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stdlib.h>
#include <string.h>

#include "attrib/attrib.h"
#include "common/util.h"
#include "sink.h"

/* A thread's intervals waiting for their name: a hold and the release that ended it. */
struct held {
	int32_t tid;
	uint8_t n;
	struct gil_interval iv[2];
};

struct file_sink {
	struct gil_rawfile *file; /* the recorder's: it creates, names and frees it */
	const struct gil_fntab *fntab;
	uint8_t *written; /* function ids whose definition the file has */
	size_t cap;
	struct held *held; /* threads with intervals waiting for a name (few at a time) */
	size_t nr_held, cap_held;
};

static void *file_open(const struct gil_sink_target *t)
{
	struct file_sink *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->file = t->file;
	f->fntab = t->fntab;
	return f;
}

/* Before the first interval naming a function, the file gets the function's definition. */
static int define_function(struct file_sink *f, uint32_t id)
{
	const struct gil_fn *fn = gil_fntab_get(f->fntab, id);
	size_t old = f->cap;

	if (!fn)
		return 0;
	if (id >= f->cap) {
		if (gil_grow(&f->written, &f->cap, (size_t)id + 1, 1) < 0)
			return -1;
		memset(f->written + old, 0, f->cap - old);
	}
	if (f->written[id])
		return 0;
	f->written[id] = 1;
	return gil_rawfile_function(f->file, fn->id, fn->name, fn->file, fn->line, fn->why);
}

static int write_iv(struct file_sink *f, const struct gil_interval *iv)
{
	if (iv->fn && f->fntab && define_function(f, iv->fn) < 0)
		return -1;
	return gil_rawfile_interval(f->file, iv);
}

/* Write held entry @i, its intervals named @fn (0: as they are), and forget it. */
static int write_held(struct file_sink *f, size_t i, uint32_t fn)
{
	struct held *h = &f->held[i];
	uint8_t k;

	for (k = 0; k < h->n; k++) {
		if (fn)
			h->iv[k].fn = fn;
		if (write_iv(f, &h->iv[k]) < 0)
			return -1;
	}
	f->held[i] = f->held[--f->nr_held];
	return 0;
}

static long held_of(const struct file_sink *f, int32_t tid)
{
	size_t i;

	for (i = 0; i < f->nr_held; i++)
		if (f->held[i].tid == tid)
			return (long)i;
	return -1;
}

static int file_interval(void *s, const struct gil_interval *iv)
{
	struct file_sink *f = s;
	long i = f->nr_held ? held_of(f, iv->tid) : -1;
	struct held *h;

	if (iv->name_later) {
		if (i < 0) {
			if (gil_grow(&f->held, &f->cap_held, f->nr_held + 1, sizeof(*f->held)) < 0)
				return -1;
			i = (long)f->nr_held++;
			f->held[i].tid = iv->tid;
			f->held[i].n = 0;
		}
		h = &f->held[i];
		if (h->n == GIL_ARRAY_SIZE(h->iv)) {
			/* a third in a row: the oldest goes as it is */
			if (write_iv(f, &h->iv[0]) < 0)
				return -1;
			h->iv[0] = h->iv[1];
			h->n--;
		}
		h->iv[h->n++] = *iv;
		return 0;
	}
	/* the thread's next wait runs the function its release was in */
	if (i >= 0 && write_held(f, (size_t)i, iv->kind == GIL_KIND_TAKE ? iv->fn : 0) < 0)
		return -1;
	return write_iv(f, iv);
}

static int file_thread(void *s, int32_t tid, const char *name, uint64_t ts)
{
	return gil_rawfile_thread(((struct file_sink *)s)->file, tid, name, ts);
}

static int file_exit(void *s, int32_t tid, uint64_t ts)
{
	struct file_sink *f = s;
	long i = f->nr_held ? held_of(f, tid) : -1;

	if (i >= 0 && write_held(f, (size_t)i, 0) < 0)
		return -1;
	return gil_rawfile_exit(f->file, tid, ts);
}

static int file_lost(void *s, int cpu, uint64_t count, uint64_t ts)
{
	return gil_rawfile_lost(((struct file_sink *)s)->file, cpu, count, ts);
}

static int file_native(void *s, uint32_t id, const char *name, uint64_t addr)
{
	return gil_rawfile_native(((struct file_sink *)s)->file, id, name, addr);
}

static int file_step(void *s, int32_t tid, uint64_t ts, int64_t n)
{
	return gil_rawfile_step(((struct file_sink *)s)->file, tid, ts, n);
}

static int file_flush(void *s)
{
	return gil_rawfile_flush(((struct file_sink *)s)->file);
}

static int file_end(void *s, struct json_object *footer)
{
	struct file_sink *f = s;

	while (f->nr_held)
		if (write_held(f, f->nr_held - 1, 0) < 0)
			return -1;
	return gil_rawfile_finish(f->file, footer);
}

static const char *file_error(void *s)
{
	return gil_rawfile_error(((struct file_sink *)s)->file);
}

static void file_close(void *s)
{
	struct file_sink *f = s;

	free(f->written);
	free(f->held);
	free(f);
}

const struct gil_sink_ops gil_sink_file = {
	.name = "file",
	.open = file_open,
	.interval = file_interval,
	.thread = file_thread,
	.exit = file_exit,
	.step = file_step,
	.native = file_native,
	.lost = file_lost,
	.flush = file_flush,
	.end = file_end,
	.error = file_error,
	.close = file_close,
};
