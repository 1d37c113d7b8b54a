/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Native callers (issue 26): each target's return addresses into the code that called the C
 * API, interned as ids on the loop (one hash lookup), named by a worker thread of their own
 * (module!symbol+0xoff, C++ demangled), since naming reads files that users made (an
 * extension, torch's libraries) and that must never stall the rings' drain.
 */
#ifndef GIL_REC_NATIVES_H
#define GIL_REC_NATIVES_H

#include <stdint.h>
#include <sys/types.h>

#define GIL_NATIVES_MAX 65536 /* native callers per process; more are counted as cut */

/* A target's table: return address -> id (1, 2, ...), and what became of them. */
struct native_tab {
	uint64_t *addr; /* open addressing, cap a power of two; 0 empty */
	uint32_t *id;
	size_t cap;
	uint32_t nr; /* ids given */
	uint64_t cut; /* transitions whose caller was past GIL_NATIVES_MAX: not named */
	uint64_t named, unnamed; /* answers written: with a name, with none (the module's
				    offset only, or nothing readable) */
	uint64_t read; /* transitions whose caller was read (native or the interpreter's own) */
};

struct rec_namer;

/* rec_namer_start - the worker; NULL with errno when it cannot start. */
struct rec_namer *rec_namer_start(void);

/*
 * rec_native_id - the id of @addr in @tab (process @pid), a new one asked of @n to name;
 * 0 when the table is full (counted as cut) or out of memory.
 */
uint32_t rec_native_id(struct rec_namer *n, struct native_tab *tab, pid_t pid, uint64_t addr);

/* One answer: @id of process @pid is @name. */
struct rec_named {
	pid_t pid;
	uint32_t id;
	uint64_t addr;
	char *name; /* NULL: nothing names it */
	struct rec_named *next;
};

/*
 * rec_namer_take - the answers so far, oldest first (NULL: none); with @wait_ms > 0, first
 * wait up to that long for the questions asked to be answered. Free with rec_named_free().
 */
struct rec_named *rec_namer_take(struct rec_namer *n, int wait_ms);

void rec_named_free(struct rec_named *a);

/* rec_native_tab_free - empty @tab. */
void rec_native_tab_free(struct native_tab *tab);

/* rec_namer_stop - stop the worker (what it reads is cut short: it may be left behind). */
void rec_namer_stop(struct rec_namer *n);

#endif /* GIL_REC_NATIVES_H */
