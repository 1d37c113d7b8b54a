/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Pairing: a per-thread (and per-GIL) state machine that turns probe events into take/hold/drop intervals.
 * It never asserts on order: whatever arrives, it emits well-formed intervals and flags the ones
 * it had to guess the edges of.
 */
#ifndef GIL_PAIRING_H
#define GIL_PAIRING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "giltrace.h"
#include "format/rawfile.h"

enum gil_ev {
	GIL_EV_TAKE_ENTRY = 0,
	GIL_EV_TAKE_RETURN,
	GIL_EV_DROP_ENTRY,
	GIL_EV_DROP_RETURN,
	/*
	 * A plain uprobe right after an inlined copy (symbols.h: GIL_SITE_EXIT). Code there may
	 * also run without the copy (a merge point), so it only ends a wait or a drop that is
	 * open, and is ignored otherwise.
	 */
	GIL_EV_TAKE_EXIT,
	GIL_EV_DROP_EXIT,
	GIL_EV_NR,
	/* not a GIL event: gil_mark_step was called (marker.c); never given to the pairing */
	GIL_EV_MARK = 0x40,
};

/* Called for every finished interval; a negative return is passed back to the caller. */
typedef int (*gil_emit_fn)(void *ctx, const struct gil_interval *iv);

struct gil_pairing;

/** gil_pairing_alloc - pairing for one process; @start is the recording start (ns). */
struct gil_pairing *gil_pairing_alloc(uint64_t start, gil_emit_fn emit, void *ctx);

/**
 * gil_pairing_event - feed one event of thread @tid at @ts. Returns 1 when @tid was not known
 * before (the caller may record its name), 0 otherwise, or the emitter's negative return.
 */
int gil_pairing_event(struct gil_pairing *p, int32_t tid, enum gil_ev ev, uint64_t ts);

/* As @fn of a take_gil entry: the function of the thread's last release (attribution fast). */
#define GIL_FN_PREVIOUS UINT32_MAX

/*
 * Or'ed into @fn of a drop_gil entry whose function could not be read (the thread state read
 * was another thread's: a stock build's PyEval_SaveThread with several interpreters): the
 * hold it ends and the release say name_later, and keep @fn (why) until the sinks that name
 * functions in files see the thread's next wait, whose function is the same (no Python runs
 * in between a release and the next take).
 */
#define GIL_FN_DEFER 0x80000000u

/**
 * gil_pairing_event_attr - gil_pairing_event() with what the probe read at an entry: @fn the
 * function id (0: none) and @reason (enum gil_reason, drop_gil entries). Intervals get them:
 * a wait the function at its take_gil entry and the reason of the thread's previous release;
 * a hold and a release the function and reason at the drop_gil entry that ended the hold (a
 * hold whose end was not seen keeps the function at its take_gil entry, reason unknown).
 */
int gil_pairing_event_attr(struct gil_pairing *p, int32_t tid, enum gil_ev ev, uint64_t ts,
			   uint32_t fn, uint8_t reason);

/* As @gil of an event that did not read which GIL: the one the thread's last event was in. */
#define GIL_ID_UNKNOWN UINT32_MAX

/**
 * gil_pairing_event_gil - gil_pairing_event_attr() of a process with several GILs (3.12+): the
 * event is of GIL @gil (the id of the interpreter whose GIL it is, 0 the main one's;
 * GIL_ID_UNKNOWN: the thread's last), in interpreter @interp. Each GIL pairs its own threads
 * and counts its own waiters; intervals carry both ids. @native (an entry's native caller, 0 not
 * read) goes to the wait and the hold a take_gil entry begins, and the release a drop_gil
 * entry begins (struct gil_interval's native).
 */
int gil_pairing_event_gil(struct gil_pairing *p, int32_t tid, enum gil_ev ev, uint64_t ts,
			  uint32_t fn, uint8_t reason, uint32_t gil, uint32_t interp, uint32_t native);

/** gil_pairing_exit - thread @tid exited at @ts: close what it had open (truncated). */
int gil_pairing_exit(struct gil_pairing *p, int32_t tid, uint64_t ts);

/** gil_pairing_lost - the kernel lost events: flag every interval open now. */
void gil_pairing_lost(struct gil_pairing *p);

/** gil_pairing_finish - the recording ended at @end: close every open interval (truncated). */
int gil_pairing_finish(struct gil_pairing *p, uint64_t end);

/**
 * gil_pairing_name_wanted - whether @tid's last release could not read its function
 * (GIL_FN_DEFER): then the function at its next take_gil entry is wanted, to name it.
 */
bool gil_pairing_name_wanted(const struct gil_pairing *p, int32_t tid);

/** gil_pairing_events - events fed so far. */
uint64_t gil_pairing_events(const struct gil_pairing *p);

/**
 * gil_pairing_not_seen - releases that were not seen: take_gil entered by a thread that, by
 * the events, still held the GIL (it released it where no probe is: an inlined drop_gil that
 * no table or DWARF showed, or lost events). The hold around each is flagged.
 */
uint64_t gil_pairing_not_seen(const struct gil_pairing *p);

/*
 * An interval open now: its thread, its kind (enum gil_kind: waiting, holding or releasing
 * the GIL), since when, and the function it took the GIL in (0: none).
 */
struct gil_open {
	int32_t tid;
	uint8_t kind;
	uint64_t since;
	uint32_t fn;
	uint32_t gil; /* the GIL's id (0: the main interpreter's) */
};

/**
 * gil_pairing_open - the intervals open as of the last event fed, at most @max into @out (one
 * per thread and GIL that is not between events: a hold per GIL, waits, releases), and in
 * *@waiting the threads waiting now, for any GIL. Returns how many there are; more than @max: ask again with room.
 */
size_t gil_pairing_open(const struct gil_pairing *p, struct gil_open *out, size_t max,
			uint32_t *waiting);

void gil_pairing_free(struct gil_pairing *p);

#define GIL_PAIRING_MAX_THREADS 4096

#endif /* GIL_PAIRING_H */
