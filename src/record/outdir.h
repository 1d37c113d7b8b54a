/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The output directory and the files' names in it. */
#ifndef GIL_REC_OUTDIR_H
#define GIL_REC_OUTDIR_H

#include "state.h"

/* GIL_<pid>_rank_<rank>.json, or _1, _2... before .json when a recording of it already exists. */
int rec_create_file(struct gil_recorder *rec, struct target *t);

/* mkdir -p with mode 0750 for what we create; refuses symlinks and world-writable dirs. */
int rec_open_outdir(struct gil_recorder *rec);

#endif /* GIL_REC_OUTDIR_H */
