// SPDX-License-Identifier: LGPL-2.1-or-later
/* Thread id -> place: open addressing with linear probing (see tidindex.h). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tidindex.h"

static size_t first_slot(int32_t tid, size_t cap)
{
	return ((uint32_t)tid * 2654435761u) & (cap - 1); /* Knuth's multiplicative hash */
}

long gil_tidindex_find(const struct gil_tidindex *x, int32_t tid)
{
	size_t s;

	if (!x->cap)
		return -1;
	for (s = first_slot(tid, x->cap); x->slot[s].pos; s = (s + 1) & (x->cap - 1))
		if (x->slot[s].tid == tid)
			return (long)x->slot[s].pos - 1;
	return -1;
}

static void put(struct gil_tidslot *slot, size_t cap, int32_t tid, uint32_t pos)
{
	size_t s;

	for (s = first_slot(tid, cap); slot[s].pos; s = (s + 1) & (cap - 1))
		;
	slot[s].tid = tid;
	slot[s].pos = pos;
}

int gil_tidindex_add(struct gil_tidindex *x, int32_t tid, size_t pos)
{
	struct gil_tidslot *slot;
	size_t cap, i;

	if (pos >= UINT32_MAX)
		return errno = ENOMEM, -1;
	if (2 * (x->nr + 1) > x->cap) {
		cap = x->cap ? 2 * x->cap : 32;
		slot = calloc(cap, sizeof(*slot));
		if (!slot)
			return errno = ENOMEM, -1;
		for (i = 0; i < x->cap; i++)
			if (x->slot[i].pos)
				put(slot, cap, x->slot[i].tid, x->slot[i].pos);
		free(x->slot);
		x->slot = slot;
		x->cap = cap;
	}
	put(x->slot, x->cap, tid, (uint32_t)pos + 1);
	x->nr++;
	return 0;
}

void gil_tidindex_clear(struct gil_tidindex *x)
{
	if (x->slot)
		memset(x->slot, 0, x->cap * sizeof(*x->slot));
	x->nr = 0;
}

void gil_tidindex_free(struct gil_tidindex *x)
{
	free(x->slot);
	memset(x, 0, sizeof(*x));
}
