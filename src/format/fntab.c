// SPDX-License-Identifier: LGPL-2.1-or-later
/* The function interner (see fntab.h): an array by id and an open-addressing index by hash. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "fntab.h"

struct gil_fnset {
	struct gil_fn *v; /* v[id - 1] */
	uint64_t *hashes; /* hashes[id - 1] */
	size_t nr, cap, max;
	uint32_t *index; /* open addressing: id, 0 = empty */
	size_t index_cap;
	unsigned flags;
};

struct gil_fnset *gil_fnset_alloc(size_t max, unsigned flags)
{
	struct gil_fnset *t = calloc(1, sizeof(*t));

	if (t) {
		t->max = max;
		t->flags = flags;
	}
	return t;
}

/* FNV-1a */
static uint64_t hash_bytes(uint64_t h, const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
	return h;
}

static uint64_t hash_key(const struct gil_fnkey *k)
{
	uint64_t h = 0xcbf29ce484222325ull;

	h = hash_bytes(h, k->why ? k->why : "", k->why ? strlen(k->why) : 0);
	h = hash_bytes(h, "\0", 1);
	h = hash_bytes(h, k->name ? k->name : "", k->name ? k->name_len : 0);
	h = hash_bytes(h, "\0", 1);
	h = hash_bytes(h, k->file ? k->file : "", k->file ? k->file_len : 0);
	return hash_bytes(h, (const char *)&k->line, sizeof(k->line));
}

/* @a (NUL-terminated, or NULL: not read) equals the @blen bytes at @b (NULL: not read)? */
static bool same_str(const char *a, const char *b, size_t blen)
{
	if (!a || !b)
		return !a && !b;
	return strlen(a) == blen && !memcmp(a, b, blen);
}

static bool same_fn(const struct gil_fn *fn, const struct gil_fnkey *k)
{
	if (fn->line != k->line || !same_str(fn->name, k->name, k->name_len) ||
	    !same_str(fn->file, k->file, k->file_len))
		return false;
	return fn->why == k->why || (fn->why && k->why && !strcmp(fn->why, k->why));
}

static int grow_index(struct gil_fnset *t)
{
	size_t cap = t->index_cap ? 2 * t->index_cap : 1024, i, s;
	uint32_t *index = calloc(cap, sizeof(*index));

	if (!index)
		return -1;
	for (i = 0; i < t->nr; i++) {
		for (s = t->hashes[i] & (cap - 1); index[s]; s = (s + 1) & (cap - 1))
			;
		index[s] = (uint32_t)(i + 1);
	}
	free(t->index);
	t->index = index;
	t->index_cap = cap;
	return 0;
}

static int grow(struct gil_fnset *t)
{
	size_t cap = t->cap; /* one capacity for the two arrays */

	if (gil_grow(&t->v, &cap, t->cap + 1, sizeof(*t->v)) < 0)
		return -1;
	cap = t->cap;
	if (gil_grow(&t->hashes, &cap, t->cap + 1, sizeof(*t->hashes)) < 0)
		return -1;
	t->cap = cap;
	return 0;
}

static uint32_t find(const struct gil_fnset *t, const struct gil_fnkey *k, uint64_t h)
{
	size_t s;

	for (s = t->index_cap ? h & (t->index_cap - 1) : 0; t->index_cap && t->index[s];
	     s = (s + 1) & (t->index_cap - 1)) {
		if (t->hashes[t->index[s] - 1] == h && same_fn(&t->v[t->index[s] - 1], k))
			return t->index[s];
	}
	return 0;
}

uint32_t gil_fnset_find(const struct gil_fnset *t, const struct gil_fnkey *k)
{
	return find(t, k, hash_key(k));
}

uint32_t gil_fnset_intern(struct gil_fnset *t, const struct gil_fnkey *k)
{
	uint64_t h = hash_key(k);
	struct gil_fn *fn = NULL;
	uint32_t id = find(t, k, h);
	size_t s;

	if (id)
		return id;
	if (t->nr >= t->max) {
		errno = ENOSPC;
		return 0;
	}
	if ((2 * (t->nr + 1) > t->index_cap && grow_index(t) < 0) ||
	    (t->nr == t->cap && grow(t) < 0))
		goto oom;
	fn = &t->v[t->nr];
	memset(fn, 0, sizeof(*fn));
	if (k->name && !(fn->name = strndup(k->name, k->name_len)))
		goto oom;
	if (k->file && !(fn->file = strndup(k->file, k->file_len)))
		goto oom;
	fn->why = k->why;
	if (k->why && !(t->flags & GIL_FNSET_STATIC_WHY) && !(fn->why = strdup(k->why)))
		goto oom;
	fn->line = k->line;
	fn->id = (uint32_t)(t->nr + 1);
	t->hashes[t->nr] = h;
	t->nr++;
	for (s = h & (t->index_cap - 1); t->index[s]; s = (s + 1) & (t->index_cap - 1))
		;
	t->index[s] = fn->id;
	return fn->id;
oom:
	if (fn) {
		free(fn->name);
		free(fn->file);
	}
	errno = ENOMEM;
	return 0;
}

const struct gil_fn *gil_fnset_get(const struct gil_fnset *t, uint32_t id)
{
	return t && id && id <= t->nr ? &t->v[id - 1] : NULL;
}

size_t gil_fnset_size(const struct gil_fnset *t)
{
	return t ? t->nr : 0;
}

void gil_fnset_free(struct gil_fnset *t)
{
	size_t i;

	if (!t)
		return;
	for (i = 0; i < t->nr; i++) {
		free(t->v[i].name);
		free(t->v[i].file);
		if (!(t->flags & GIL_FNSET_STATIC_WHY))
			free((char *)t->v[i].why);
	}
	free(t->v);
	free(t->hashes);
	free(t->index);
	free(t);
}
