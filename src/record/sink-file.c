// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The file sink: a target's records after its header (doc/format.md), function definitions
 * before their first use, and its footer.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stdlib.h>
#include <string.h>

#include "attrib/attrib.h"
#include "common/util.h"
#include "sink.h"

struct file_sink {
	struct gil_rawfile *file; /* the recorder's: it creates, names and frees it */
	const struct gil_fntab *fntab;
	uint8_t *written; /* function ids whose definition the file has */
	size_t cap;
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

static int file_interval(void *s, const struct gil_interval *iv)
{
	struct file_sink *f = s;

	if (iv->fn && f->fntab && define_function(f, iv->fn) < 0)
		return -1;
	return gil_rawfile_interval(f->file, iv);
}

static int file_thread(void *s, int32_t tid, const char *name, uint64_t ts)
{
	return gil_rawfile_thread(((struct file_sink *)s)->file, tid, name, ts);
}

static int file_exit(void *s, int32_t tid, uint64_t ts)
{
	return gil_rawfile_exit(((struct file_sink *)s)->file, tid, ts);
}

static int file_lost(void *s, int cpu, uint64_t count, uint64_t ts)
{
	return gil_rawfile_lost(((struct file_sink *)s)->file, cpu, count, ts);
}

static int file_flush(void *s)
{
	return gil_rawfile_flush(((struct file_sink *)s)->file);
}

static int file_end(void *s, struct json_object *footer)
{
	return gil_rawfile_finish(((struct file_sink *)s)->file, footer);
}

static const char *file_error(void *s)
{
	return gil_rawfile_error(((struct file_sink *)s)->file);
}

static void file_close(void *s)
{
	struct file_sink *f = s;

	free(f->written);
	free(f);
}

const struct gil_sink_ops gil_sink_file = {
	.name = "file",
	.open = file_open,
	.interval = file_interval,
	.thread = file_thread,
	.exit = file_exit,
	.lost = file_lost,
	.flush = file_flush,
	.end = file_end,
	.error = file_error,
	.close = file_close,
};
