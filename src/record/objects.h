/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The ELF objects that define the GIL functions, and their probes. */
#ifndef GIL_REC_OBJECTS_H
#define GIL_REC_OBJECTS_H

#include "state.h"

/* What the probe at entry site @i of @o reads in the recording's mode; NULL: nothing. */
const char *rec_site_fetchargs(const struct gil_recorder *rec, const struct object *o, size_t i);

int rec_create_probes(struct gil_recorder *rec, struct object *o);

/*
 * Which object of @pid defines the GIL functions. Returns its index, -1 on a hard error
 * (rec->err set), -2 when @pid is not a CPython with a GIL (@why says what it is).
 */
int rec_python_object(struct gil_recorder *rec, pid_t pid, char *why, size_t whylen);

/*
 * The same on any table of objects (*@objs, *@nr), which it grows by what it reads; reads
 * nothing of the recorder but @opts (resolver.c's worker has a table of its own).
 */
int rec_python_object_in(const struct gil_options *opts, struct object **objs, size_t *nr,
			 pid_t pid, char *why, size_t whylen);

struct gil_mapping;
struct gil_elf;

/*
 * Open the file @pid maps at @m (/proc/PID/map_files, else the path inside its root), checked
 * on the descriptor to be the mapped device and inode. 0, -2 when it is not (or gone), -1 ENOMEM.
 */
int rec_open_mapped(pid_t pid, const struct gil_mapping *m, struct gil_elf *h);

/* The index of the object of file @dev:@ino in @objs, or -1. */
int rec_find_object(const struct object *objs, size_t nr, uint64_t dev, uint64_t ino);

/* Free what @o holds (symbols, attribution, its descriptor) and leave it empty. */
void rec_object_free(struct object *o);

/* Re-read the group's formats after probes were added, and map probe index -> event kind. */
int rec_refresh_decoder(struct gil_recorder *rec);

#endif /* GIL_REC_OBJECTS_H */
