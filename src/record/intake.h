/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Ring records in, queue entries ordered, each handed to its target's pairing and sinks. */
#ifndef GIL_REC_INTAKE_H
#define GIL_REC_INTAKE_H

#include "state.h"

int rec_on_record(void *ctx, int cpu, const struct perf_event_header *h);

int rec_process_one(void *ctx, const struct gil_qent *e);

/*
 * Losses the kernel counted but could not report yet: a ring that was full keeps its count until
 * its next record, which never comes once the events stop. The events' own counts
 * (PERF_FORMAT_LOST) hold them; report the difference as lost records at @ts. Threads that
 * inherited events keep their counts in the kernel's child events: those stay unseen here.
 */
int rec_report_pending_lost(struct gil_recorder *rec, uint64_t ts);

#endif /* GIL_REC_INTAKE_H */
