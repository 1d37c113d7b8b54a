/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The functions of a recording, interned: each distinct (name, file, line, why) gets an id, in
 * the order they first come, starting at 1 (0 means "not recorded", as in an interval's fn).
 * The recorder numbers what its probes read with it (attrib/attrib.c, gil_fntab), the converter
 * the function records of all its inputs (convert/functions.c).
 * Lifecycle: gil_fnset_alloc -> gil_fnset_intern / _get... -> gil_fnset_free.
 */
#ifndef GIL_FORMAT_FNTAB_H
#define GIL_FORMAT_FNTAB_H

#include <stddef.h>
#include <stdint.h>

/* One distinct function of a recording. Ids start at 1; 0 means "not recorded". */
struct gil_fn {
	uint32_t id;
	char *name; /* NULL when not read: see why */
	char *file;
	int32_t line; /* -1 when not read */
	const char *why; /* NULL, or why the frame or a string could not be read */
};

/* What names a function: strings by pointer and length, so that none is copied to look one up. */
struct gil_fnkey {
	const char *name; /* NULL: not read */
	size_t name_len;
	const char *file; /* NULL: not read */
	size_t file_len;
	int32_t line;
	const char *why; /* NUL-terminated, or NULL */
};

/* gil_fnset_alloc() flags */
#define GIL_FNSET_STATIC_WHY 1 /* why strings outlive the set: kept as given, not copied */

struct gil_fnset;

/**
 * gil_fnset_alloc - an empty set that holds @max functions at most; NULL on ENOMEM. Pair with
 * gil_fnset_free().
 */
struct gil_fnset *gil_fnset_alloc(size_t max, unsigned flags);

/**
 * gil_fnset_intern - the id of the function @key names, a new one (the next id) the first time.
 * Returns 0 with errno ENOSPC when it is new and the set holds @max already, ENOMEM when out of
 * memory.
 */
uint32_t gil_fnset_intern(struct gil_fnset *t, const struct gil_fnkey *key);

/** gil_fnset_find - the id of the function @key names, 0 when it is not in the set. */
uint32_t gil_fnset_find(const struct gil_fnset *t, const struct gil_fnkey *key);

/** gil_fnset_get - function @id, or NULL. Valid until the next gil_fnset_intern(). */
const struct gil_fn *gil_fnset_get(const struct gil_fnset *t, uint32_t id);

/** gil_fnset_size - functions known (the largest id). */
size_t gil_fnset_size(const struct gil_fnset *t);

/** gil_fnset_free - release the set and every function in it; NULL is fine. */
void gil_fnset_free(struct gil_fnset *t);

#endif /* GIL_FORMAT_FNTAB_H */
