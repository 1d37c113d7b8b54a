/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What an object's DWARF gave, kept by build-id for the next attach. */
#ifndef GIL_REC_OBJCACHE_H
#define GIL_REC_OBJCACHE_H

#include "state.h"

/* ---- objcache.c: what an object's DWARF gave, kept by build-id ---- */

/*
 * Fill @o->syms (and @o->attrib when @attribution) from the cache entry of @o's build-id,
 * when it is there and still holds for the file on @o->elf. 1: filled; 0: no usable entry
 * (nothing changed); -1: out of memory.
 */
int rec_objcache_load(struct object *o, const char *path, const char *root, bool attribution);

/* Keep @o's sites and attribution for the next attach, when they came from DWARF. */
void rec_objcache_store(struct object *o, const char *root, bool attribution);

#endif /* GIL_REC_OBJCACHE_H */
