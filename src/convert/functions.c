// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Statistics: the Python functions of all inputs, numbered by the format's interner
 * (format/fntab.h), each input's ids mapped to theirs, and the functions threads were mostly in.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stats-priv.h"
#include "common/util.h"


/* The global index + 1 of function (name, file, line, why); 0 on ENOMEM or past the cap. */
static uint32_t fn_intern(struct stats *s, const char *name, const char *file, int line,
			  const char *why)
{
	struct gil_fnkey key = {
		.name = name, .name_len = name ? strlen(name) : 0,
		.file = file, .file_len = file ? strlen(file) : 0,
		.line = line, .why = why,
	};
	const struct gil_fn *fn;
	struct stats_fn *f;
	uint32_t id;
	size_t n;

	if (gil_grow(&s->fns, &s->cap_fns, s->nr_fns + 1, sizeof(*s->fns)) < 0)
		return 0;
	id = gil_fnset_intern(s->fnset, &key);
	if (!id || id <= s->nr_fns)
		return id;
	if (id != s->nr_fns + 1)
		return 0; /* a display string was lost to ENOMEM: the numbering no longer fits */
	/* new: the interner owns the strings, the statistics its display name and counts */
	fn = gil_fnset_get(s->fnset, id);
	f = &s->fns[s->nr_fns];
	memset(f, 0, sizeof(*f));
	f->name = fn->name;
	f->file = fn->file;
	f->line = fn->line;
	f->why = fn->why;
	n = strlen(why ? why : "?") + 3;
	if (name) {
		f->display = strdup(name);
	} else if ((f->display = malloc(n))) {
		snprintf(f->display, n, "<%s>", why ? why : "?");
	}
	if (!f->display)
		return 0;
	s->nr_fns++;
	return id;
}

/* The global index + 1 of this input's function @id, 0 when it has none. */
uint32_t stats_fn_of(const struct stats *s, uint32_t id)
{
	const struct stats_proc *p = s->cur;

	if (!p || !id || id >= p->fnmap_cap)
		return 0;
	return p->fnmap[id];
}

int stats_function_def(struct stats *s, const struct gil_record *rec)
{
	struct stats_proc *p = s->cur;
	const char *why = rec->fn.why;
	int64_t id = rec->fn.id;
	uint32_t g;
	size_t cap;

	if (!p || id <= 0 || id > (int64_t)MAX_FNS * 4)
		return 0; /* a function record we cannot use */
	if (!rec->fn.name && !why)
		why = "unnamed";
	g = fn_intern(s, rec->fn.name, rec->fn.file, rec->fn.line, why);
	if (!g)
		return s->nr_fns >= MAX_FNS ? 0 : -1;
	if ((size_t)id >= p->fnmap_cap) {
		cap = p->fnmap_cap;
		if (gil_grow(&p->fnmap, &cap, (size_t)id + 1, sizeof(*p->fnmap)) < 0)
			return -1;
		memset(p->fnmap + p->fnmap_cap, 0, (cap - p->fnmap_cap) * sizeof(*p->fnmap));
		p->fnmap_cap = cap;
	}
	p->fnmap[id] = g;
	return 0;
}

bool stats_function(const struct stats *s, uint32_t id, const char **name, const char **file,
		    int *line)
{
	uint32_t g = stats_fn_of(s, id);
	const struct stats_fn *f;

	if (!g)
		return false;
	f = &s->fns[g - 1];
	*name = f->display;
	*file = f->file;
	*line = f->line;
	return true;
}

/* Count @ns for function @g (global index + 1) in @t's few slots. */
void stats_thread_fn_add(struct stats_thread *t, uint32_t g, uint64_t ns)
{
	t->fn_ns += ns;
	gil_topk_add(t->top_fn, t->top_ns, STATS_THREAD_FNS, g, ns);
}

long stats_thread_top_fn(const struct stats_thread *t, double *share)
{
	size_t best = gil_topk_best(t->top_fn, t->top_ns, STATS_THREAD_FNS);

	if (!t->top_fn[best] || !t->fn_ns)
		return -1;
	if (share)
		*share = t->top_ns[best] > t->fn_ns ? 1.0 : (double)t->top_ns[best] / (double)t->fn_ns;
	return (long)t->top_fn[best] - 1;
}

/* Indices of the functions, best first by @key (0 held, 1 others' wait, 2 releases). */
static const struct stats *sort_ctx;
static int sort_key;

static uint64_t fn_key(const struct stats_fn *f, int key)
{
	return key == 0 ? f->held_ns : key == 1 ? f->others_wait_ns : f->releases;
}

static int cmp_fn(const void *a, const void *b)
{
	const struct stats_fn *x = &sort_ctx->fns[*(const size_t *)a];
	const struct stats_fn *y = &sort_ctx->fns[*(const size_t *)b];
	uint64_t kx = fn_key(x, sort_key), ky = fn_key(y, sort_key);

	if (kx != ky)
		return kx < ky ? 1 : -1;
	return strcmp(x->display, y->display);
}

size_t stats_top_sorted(size_t nr, uint64_t (*key_of)(size_t i),
			int (*cmp)(const void *a, const void *b), size_t *out, size_t max)
{
	size_t *idx, i, n = 0;

	idx = malloc((nr + 1) * sizeof(*idx));
	if (!idx)
		return 0;
	for (i = 0; i < nr; i++)
		if (key_of(i))
			idx[n++] = i;
	qsort(idx, n, sizeof(*idx), cmp);
	if (n > max)
		n = max;
	memcpy(out, idx, n * sizeof(*idx));
	free(idx);
	return n;
}

static uint64_t fn_key_of(size_t i)
{
	return fn_key(&sort_ctx->fns[i], sort_key);
}

size_t stats_top_functions(const struct stats *s, int key, size_t *out, size_t max)
{
	sort_ctx = s;
	sort_key = key;
	return stats_top_sorted(s->nr_fns, fn_key_of, cmp_fn, out, max);
}
