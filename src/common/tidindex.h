/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A thread id's place in an array: open addressing on the tid, at most half full, so that
 * the recorder's pairing and the converter's timeline and statistics find a thread's entry in
 * one or two probes among thousands.
 */
#ifndef GIL_TIDINDEX_H
#define GIL_TIDINDEX_H

#include <stddef.h>
#include <stdint.h>

struct gil_tidindex {
	struct gil_tidslot {
		int32_t tid;
		uint32_t pos; /* the place + 1; 0: an empty slot */
	} *slot;
	size_t cap; /* slots, a power of two (0 before the first add) */
	size_t nr; /* tids held */
};

/* gil_tidindex_find - the place stored for @tid, or -1 when it holds none. */
long gil_tidindex_find(const struct gil_tidindex *x, int32_t tid);

/*
 * gil_tidindex_add - store @pos (below UINT32_MAX) for @tid, which it must not hold yet,
 * growing the table first when it would be more than half full. 0, or -1 with errno ENOMEM
 * and the index as it was.
 */
int gil_tidindex_add(struct gil_tidindex *x, int32_t tid, size_t pos);

/* gil_tidindex_clear - forget every tid, keeping the table (to add the survivors anew). */
void gil_tidindex_clear(struct gil_tidindex *x);

/* gil_tidindex_free - release the table; the index is empty and usable again. */
void gil_tidindex_free(struct gil_tidindex *x);

#endif /* GIL_TIDINDEX_H */
