/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Start modes: how a recording finds its targets (one table entry each). */
#ifndef GIL_REC_MODES_H
#define GIL_REC_MODES_H

#include "state.h"

/* One start mode's part in the lifecycle; every op but setup is optional. */
struct rec_mode_ops {
	const char *name;
	int (*setup)(struct gil_recorder *rec); /* the first targets, before start */
	int (*start)(struct gil_recorder *rec); /* the events are on */
	int (*round)(struct gil_recorder *rec, uint64_t now); /* each poll round: new targets */
	/* may targets still come when none is live (NULL: no) */
	bool (*more_may_come)(const struct gil_recorder *rec);
	void (*finish)(struct gil_recorder *rec, bool started); /* before the last drain */
};

extern const struct rec_mode_ops rec_modes[REC_MODE_NR];

/* The mode @opts asks for. */
enum rec_mode rec_mode_of(const struct gil_options *opts);

#endif /* GIL_REC_MODES_H */
