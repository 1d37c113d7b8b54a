/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Code objects read from the traced process's memory (--attribution=fast). The probe at a
 * drop_gil entry reads only the frame's code object address; the function's qualified name,
 * file and first line are read here, with process_vm_readv, once per (process, address), and
 * kept. Every read is checked as the probe's reads were: the object's type must be named
 * "code" and the strings compact ASCII. A kept entry is checked again (its type, name, file and
 * line pointers re-read) when it is used more than GIL_CODEREAD_CHECK_NS after its last check,
 * so that an address freed and reused by another code object is found within that time and
 * named afresh; a process gone before its object was read gets a why of its own.
 */
#ifndef GIL_CODEREAD_H
#define GIL_CODEREAD_H

#include <stdint.h>
#include <sys/types.h>

#include "attrib/attrib.h"

#define GIL_CODEREAD_CHECK_NS 10000000ull /* 10 ms */

struct gil_coderead;

struct gil_coderead_stats {
	uint64_t lookups; /* events named through the cache */
	uint64_t reads; /* objects read (first sight, or changed) */
	uint64_t checks; /* kept entries checked again */
	uint64_t changed; /* of those, found to be another object now */
	uint64_t failed; /* reads that failed (gone, unreadable, not code) */
	uint64_t exited; /* of those, because the process had exited: events left unnamed */
};

/** gil_coderead_alloc - an empty reader; NULL on ENOMEM. Pair with gil_coderead_free(). */
struct gil_coderead *gil_coderead_alloc(void);

/**
 * gil_coderead_fn - the id in @t of the function whose code object a probe read at @code in
 * process @pid (an address as the probe read it: 3.14's tag bits included), laid out as @lay
 * says. @raw holds what the probe read beside it (thread state, frame, holder); its other
 * fields are filled here. @now is the event's time. Returns 0 on ENOMEM only.
 */
uint32_t gil_coderead_fn(struct gil_coderead *c, struct gil_fntab *t, const struct gil_layout *lay,
			 pid_t pid, struct gil_frame_raw *raw, uint64_t code, uint64_t now);

/** gil_coderead_forget - drop what is kept of process @pid (it exited: its pid may be reused). */
void gil_coderead_forget(struct gil_coderead *c, pid_t pid);

/** gil_coderead_stats - counts since allocation. */
const struct gil_coderead_stats *gil_coderead_stats(const struct gil_coderead *c);

/** gil_coderead_free - release @c; NULL is fine. */
void gil_coderead_free(struct gil_coderead *c);

#endif /* GIL_CODEREAD_H */
