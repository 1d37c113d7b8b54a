/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The reorder queue between the rings and the pairing: each CPU's ring is in time order, but
 * the rings are not in order with each other, so events wait here until every ring has been
 * drained past them (perf's ordered-events). Entries leave in (time, arrival) order.
 * Lifecycle: zeroed struct -> gil_ordered_push... -> gil_ordered_flush... -> gil_ordered_free.
 */
#ifndef GIL_ORDERED_H
#define GIL_ORDERED_H

#include <stddef.h>
#include <stdint.h>

enum gil_qtype { Q_GIL, Q_EXIT, Q_LOST };

/* One queued record: a GIL event, a thread's exit, or a count of lost events. */
struct gil_qent {
	uint64_t ts;
	uint64_t seq; /* arrival order, set by gil_ordered_push: ties keep it */
	uint32_t pid, tid;
	uint8_t type; /* enum gil_qtype */
	uint8_t ev; /* enum gil_ev for Q_GIL */
	uint8_t reason; /* enum gil_reason, at a drop_gil entry */
	uint32_t fn; /* function id at an entry, 0: none */
	uint32_t gil, interp; /* Q_GIL: which GIL and interpreter (GIL_ID_UNKNOWN: not read) */
	uint64_t code, frame; /* a take_gil entry's code object and frame, as read; 0: none */
	int32_t obj; /* Q_GIL: the object whose probe fired (rec->objects), -1: none */
	uint64_t native; /* an entry's native caller: its return address, 1 the interpreter's
			    own, 0 not read */
	int32_t cpu; /* Q_LOST */
	uint64_t count; /* Q_LOST */
};

struct gil_ordered {
	struct gil_qent *q;
	size_t nq, cap;
	uint64_t seq;
};

/** gil_ordered_push - queue a copy of @e. Returns 0, or -1 with errno ENOMEM. */
int gil_ordered_push(struct gil_ordered *o, const struct gil_qent *e);

/**
 * gil_ordered_flush - hand every entry older than @upto (all for UINT64_MAX) to @fn in time
 * order and drop it from the queue. Stops at the first @fn that returns < 0 and returns that.
 */
int gil_ordered_flush(struct gil_ordered *o, uint64_t upto,
		      int (*fn)(void *ctx, const struct gil_qent *e), void *ctx);

/** gil_ordered_len - entries waiting. */
size_t gil_ordered_len(const struct gil_ordered *o);

/** gil_ordered_free - release the queue's memory; the struct can be used again. */
void gil_ordered_free(struct gil_ordered *o);

#endif /* GIL_ORDERED_H */
