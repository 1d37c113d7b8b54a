/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The recorder's metrics in Prometheus's text exposition format (gil_recorder_metrics). */
#ifndef GIL_REC_METRICS_H
#define GIL_REC_METRICS_H

#include "state.h"

/* Rendered at most this often: thousands of series every 50 ms round would cost a core. */
#define GIL_METRICS_EVERY_NS 500000000ull

/*
 * rec_metrics_publish - at @now (recording clock), when GIL_METRICS_EVERY_NS passed since the
 * last time: render every target's metrics sink and the recorder's own counters, and make it
 * what gil_recorder_metrics() returns. 0, -1 (out of memory; the last text stays).
 */
int rec_metrics_publish(struct gil_recorder *rec, uint64_t now);

/* rec_metrics_free - the text and the lock, at gil_recorder_free. */
void rec_metrics_free(struct gil_recorder *rec);

#endif /* GIL_REC_METRICS_H */
