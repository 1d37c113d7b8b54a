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

/* Re-read the group's formats after probes were added, and map probe index -> event kind. */
int rec_refresh_decoder(struct gil_recorder *rec);

#endif /* GIL_REC_OBJECTS_H */
