/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Decode: a raw perf sample -> which of our probes fired, in which thread, when. */
#ifndef GIL_DECODE_H
#define GIL_DECODE_H

#include <stdint.h>

#include <linux/perf_event.h>

struct tep_handle;

struct gil_event {
	uint32_t pid, tid;
	uint64_t ts;
	int probe; /* index into the recorder's probes */
};

struct gil_decoder;

/** gil_decoder_alloc - decode with @tep; @ids[i] is the trace event id of probe i. */
struct gil_decoder *gil_decoder_alloc(struct tep_handle *tep, const int *ids, int nr);

/**
 * gil_decode_sample - fill @ev from PERF_RECORD_SAMPLE @h. Returns 0, or -1 when the sample is
 * malformed or from an event that is not ours.
 */
int gil_decode_sample(const struct gil_decoder *d, const struct perf_event_header *h,
		      struct gil_event *ev);

void gil_decoder_free(struct gil_decoder *d);

#endif /* GIL_DECODE_H */
