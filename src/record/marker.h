/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Step marks: the probe at libgiltrace's gil_mark_step in the targets that map it (marker.c). */
#ifndef GIL_REC_MARKER_H
#define GIL_REC_MARKER_H

struct gil_recorder;
struct target;

/*
 * rec_marker_find - look in @t's maps for libgiltrace and probe its gil_mark_step (t->mobj);
 * finding none, or a kernel that refuses the probe, is not an error. -1 with rec->err.
 */
int rec_marker_find(struct gil_recorder *rec, struct target *t);

#endif /* GIL_REC_MARKER_H */
