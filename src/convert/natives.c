// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Statistics: the native callers of the GIL transitions made through the C API (an interval's
 * tenth element, doc/format.md). Each input's call sites by id, named by its {"native"} records,
 * which the recorder writes when a worker has named them, after intervals that carry them: the
 * converter reads them ahead (convert.c). Their functions are counted per process, numbered by
 * the same interner as the Python functions (format/fntab.h).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "giltrace.h"
#include "stats-priv.h"
#include "common/util.h"

#define MAX_NATIVES (1u << 20) /* distinct native functions over all inputs */
#define MAX_NATIVE_ID (1u << 20) /* ids an input maps (the recorder gives 65536 a process) */

/*
 * The length of @name's function: "module!symbol" without the call site's "+0xoff", so that a
 * function's call sites add up. "module+0xoff" (no symbol covers it) is kept whole: nothing says
 * which function it is in.
 */
static size_t function_len(const char *name)
{
	const char *bang = strchr(name, '!'), *plus = strrchr(name, '+');
	size_t n = strlen(name);

	if (!bang || !plus || plus < bang || plus[1] != '0' || plus[2] != 'x' || !plus[3] ||
	    strspn(plus + 3, "0123456789abcdefABCDEF") != strlen(plus + 3))
		return n;
	return (size_t)(plus - name);
}

/* The native function (index + 1) of call site @name in the current process: 0 past the cap. */
static int native_intern(struct stats *s, const char *name, uint32_t *out)
{
	struct gil_fnkey key = {
		/* one table for all processes: the process's index is the key's line */
		.name = name, .name_len = function_len(name), .line = (int32_t)s->cur_first,
	};
	struct stats_native *n;
	uint32_t id;

	*out = 0;
	if (!s->natset && !(s->natset = gil_fnset_alloc(MAX_NATIVES, 0)))
		return -1;
	if (gil_grow(&s->natives, &s->cap_natives, s->nr_natives + 1, sizeof(*s->natives)) < 0)
		return -1;
	id = gil_fnset_intern(s->natset, &key);
	if (!id)
		return errno == ENOSPC ? 0 : -1;
	if (id > s->nr_natives) {
		n = &s->natives[s->nr_natives++];
		memset(n, 0, sizeof(*n));
		n->name = gil_fnset_get(s->natset, id)->name;
		n->proc = s->cur_first;
	}
	*out = id;
	return 0;
}

int stats_native_def(struct stats *s, int64_t id, const char *name)
{
	struct stats_proc *p = s->cur;
	struct stats_site *site;
	size_t cap;

	if (!p || id < 1 || id > MAX_NATIVE_ID || !name || !name[0])
		return 0; /* nothing names it: its intervals say "unnamed native #N" */
	if ((size_t)id < p->natmap_cap && p->natmap[id])
		return 0;
	if ((size_t)id >= p->natmap_cap) {
		cap = p->natmap_cap;
		if (gil_grow(&p->natmap, &cap, (size_t)id + 1, sizeof(*p->natmap)) < 0)
			return -1;
		memset(p->natmap + p->natmap_cap, 0, (cap - p->natmap_cap) * sizeof(*p->natmap));
		p->natmap_cap = cap;
	}
	if (gil_grow(&p->sites, &p->cap_sites, p->nr_sites + 1, sizeof(*p->sites)) < 0)
		return -1;
	site = &p->sites[p->nr_sites];
	site->name = strdup(name);
	if (!site->name || native_intern(s, name, &site->fn) < 0) {
		free(site->name);
		return -1;
	}
	p->natmap[id] = (uint32_t)++p->nr_sites;
	return 0;
}

/* The site of @native in the current input, or NULL when no record named it. */
static const struct stats_site *site_of(const struct stats *s, uint32_t native)
{
	const struct stats_proc *p = s->cur;

	if (!p || native >= p->natmap_cap || !p->natmap[native])
		return NULL;
	return &p->sites[p->natmap[native] - 1];
}

const char *stats_native(const struct stats *s, uint32_t native, char *buf, size_t len)
{
	const struct stats_site *site = site_of(s, native);

	if (native == GIL_NATIVE_OWN)
		return "interpreter";
	if (site)
		return site->name;
	snprintf(buf, len, "unnamed native #%u", native);
	return buf;
}

int stats_native_interval(struct stats *s, struct stats_thread *t, const struct gil_interval *iv,
			  int64_t dur, bool python, uint32_t *nf)
{
	const struct stats_site *site;
	struct stats_native *n;
	char name[40];

	*nf = 0;
	s->native_ivs[!iv->native ? 0 : iv->native == GIL_NATIVE_OWN ? 1 : 2]++;
	if (!iv->native || iv->native == GIL_NATIVE_OWN)
		return 0;
	site = site_of(s, iv->native);
	if (!site) {
		/* an id no record named: a function of its own, so that its time is still seen */
		snprintf(name, sizeof(name), "unnamed native #%u", iv->native);
		if (stats_native_def(s, iv->native, name) < 0)
			return -1;
		site = site_of(s, iv->native);
	}
	if (!site || !site->fn)
		return 0; /* past the caps */
	n = &s->natives[site->fn - 1];
	switch (iv->kind) {
	case GIL_KIND_TAKE:
		break;
	case GIL_KIND_HOLD:
		if (python)
			return 0; /* Python ran after the take: not the native code's hold */
		*nf = site->fn;
		n->holds++;
		n->held_ns += (uint64_t)dur;
		break;
	default:
		*nf = site->fn;
		n->releases++;
		n->release_ns += (uint64_t)dur;
		return 0;
	}
	/* a wait or a hold begun by native code: what names a thread that runs no Python */
	if (!t->native_entry)
		t->native_entry = site->fn;
	return 0;
}

const char *stats_thread_native(const struct stats *s, const struct stats_thread *t)
{
	/* the threads folded together are no one thread to name */
	if (t->tid < 0 || t->py_fn || !t->native_entry || t->native_entry > s->nr_natives)
		return NULL;
	return s->natives[t->native_entry - 1].name;
}

void stats_natives_end(struct stats_proc *p)
{
	size_t i;

	for (i = 0; i < p->nr_sites; i++)
		free(p->sites[i].name);
	free(p->sites);
	free(p->natmap);
	p->sites = NULL;
	p->natmap = NULL;
	p->nr_sites = p->cap_sites = p->natmap_cap = 0;
}

void stats_natives_free(struct stats *s)
{
	free(s->natives);
	gil_fnset_free(s->natset);
}

/* Indices of the native functions, best first by @key (0 held, 1 others' wait, 2 releases). */
static const struct stats *sort_ctx;
static int sort_key;

static uint64_t native_key(const struct stats_native *n, int key)
{
	return key == 0 ? n->held_ns : key == 1 ? n->others_wait_ns : n->releases;
}

static int cmp_native(const void *a, const void *b)
{
	const struct stats_native *x = &sort_ctx->natives[*(const size_t *)a];
	const struct stats_native *y = &sort_ctx->natives[*(const size_t *)b];
	uint64_t kx = native_key(x, sort_key), ky = native_key(y, sort_key);
	int c;

	if (kx != ky)
		return kx < ky ? 1 : -1;
	c = strcmp(x->name, y->name);
	return c ? c : (x->proc > y->proc) - (x->proc < y->proc);
}

static uint64_t native_key_of(size_t i)
{
	return native_key(&sort_ctx->natives[i], sort_key);
}

size_t stats_top_natives(const struct stats *s, int key, size_t *out, size_t max)
{
	sort_ctx = s;
	sort_key = key;
	return stats_top_sorted(s->nr_natives, native_key_of, cmp_native, out, max);
}
