/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What steps.c (the steps and their figures) and steps-report.c (what is said of them) share. */
#ifndef GIL_STEPS_PRIV_H
#define GIL_STEPS_PRIV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "stats.h"
#include "steps.h"

#define BLAMES 8 /* holders kept per step (space-saving: exact while there are fewer) */

struct row {
	size_t proc;
	int32_t tid;
	uint64_t ns[3]; /* per enum gil_kind, clipped to the step */
	uint64_t waits, forced, voluntary; /* waits that ended, releases that began, in it */
	struct stats_hist wait; /* those waits' whole durations */
};

struct blame {
	size_t proc;
	int32_t tid;
	uint32_t fn; /* global index + 1, 0: none */
	uint64_t ns; /* others' waiting while it held, within the step */
	bool used;
};

struct step {
	int64_t pid; /* the trace pid whose step it is (a mark's process), -1: every process */
	int64_t start, end, number;
	const char *prefix;
	struct row *rows;
	size_t nr, cap;
	struct blame blame[BLAMES];
	uint64_t ns[3], forced;
	bool flagged;
};

struct steps {
	char *source;
	struct step *v;
	size_t n, cap;
	uint64_t cut;
	bool outliers; /* enough steps for the rule */
	uint64_t median, mad, threshold;
	size_t flagged;
};

/* The row of @sp that waited most, or NULL. */
const struct row *steps_most_waiting(const struct step *sp);

/* The holder of @sp that others waited on most, or NULL. */
const struct blame *steps_top_blame(const struct step *sp);

#endif /* GIL_STEPS_PRIV_H */
