/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Decode: a raw perf sample -> which of our probes fired, in which thread, when, and what its
 * fetchargs read (attrib.h): the Python frame and the drop request.
 */
#ifndef GIL_DECODE_H
#define GIL_DECODE_H

#include <stdbool.h>
#include <stdint.h>

#include <linux/perf_event.h>

#include "attrib/attrib.h"
#include "elf/callers.h"

struct tep_handle;

struct gil_event {
	uint32_t pid, tid;
	uint64_t ts;
	int probe; /* index into the recorder's probes */
	bool has_frame; /* the probe reads the Python frame: frame is filled */
	bool has_code; /* the probe read the code object's address, not its strings (frame's
			  tstate, frame and other_thread are filled; code holds the address) */
	uint64_t code; /* f_code or f_executable as read, tag bits and all */
	int req; /* drop request at a drop_gil entry: 1 set, 0 clear, -1 not read */
	struct gil_frame_raw frame; /* strings point into the sample: valid while it is */
	bool has_interp; /* which GIL was read (3.12+): the three below */
	uint64_t interp; /* tstate->interp */
	uint64_t gil; /* tstate->interp->ceval.gil */
	uint64_t interp_id; /* tstate->interp->id */
	bool has_step; /* a gil_mark_step probe (marker.c): step is its argument */
	int64_t step;
	/* the native caller's reads (elf/callers.h): the probe's pc, the link register, the stack */
	bool has_pc;
	uint64_t pc, lr;
	unsigned int nstk;
	uint64_t stk[GIL_CALLERS_MAX_WORDS];
};


struct gil_decoder;

/**
 * gil_decoder_alloc - decode with @tep; @ids[i] is the trace event id of probe i. Probes whose
 * events have the attribution fields (gil_fr, gil_ty, ...) get them decoded, only those that
 * @own[i] (the probe's own fetchargs, when it joined an event that reads more; "": none of
 * them, immediate zeros) reads; @own or @own[i] NULL: all of them. A sample of a multi-probe event
 * is the probe its gil_site field names. Pair with gil_decoder_free().
 */
struct gil_decoder *gil_decoder_alloc(struct tep_handle *tep, const int *ids,
				      const char *const *own, int nr);

/**
 * gil_decode_sample - fill @ev from PERF_RECORD_SAMPLE @h. Returns 0, or -1 when the sample is
 * malformed or from an event that is not ours.
 */
int gil_decode_sample(const struct gil_decoder *d, const struct perf_event_header *h,
		      struct gil_event *ev);

/** gil_decoder_free - release @d (not the tep handle it was given); NULL is fine. */
void gil_decoder_free(struct gil_decoder *d);

#endif /* GIL_DECODE_H */
