/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Private to src/elf: where each inlined copy of drop_gil ends (copyexit.c), and the copy and
 * release sequence it is asked about, as copies.c (which finds the copies) describes them.
 */
#ifndef GIL_ELF_COPYEXIT_H
#define GIL_ELF_COPYEXIT_H

#include <stdbool.h>
#include <stdint.h>

#include "scan.h"
#include "x86insn.h"

/* The three calls of drop_gil's release, as learnt from the standalone function. */
struct seq {
	uint64_t lock, signal, unlock; /* call identities (call_id) */
	uint64_t fatal; /* a call a branch jumps over: the fatal error, which does not return */
	bool has_dist;
	int64_t dist; /* the mutex's address minus `locked`'s, where the reference shows both */
};

/* One copy found: the store, the instruction after UNLOCK's call, its function's extent. */
struct copy {
	uint64_t store, after, func, func_end;
	uint64_t after2; /* the waiting block's own end, where the compiler copied the join: 0 none */
	char *host; /* the function a .cold part belongs to (host_of_part), NULL: its own */
};

/* A call's identity: its target, or for a call through memory (-fno-plt) the slot's address. */
static inline uint64_t call_id(const struct gil_insn *in)
{
	if (in->flow != GIL_INSN_CALL)
		return 0;
	if (in->target)
		return in->target;
	return in->riprel ? in->riprel | 1ull << 63 : 0;
}

/*
 * Where the copy @c ends, as DWARF's exit would put it (copyexit.c): the instruction after
 * UNLOCK's call, or the join after the block that waits for a forced switch. @code is its
 * function's code (NULL: unread, the instruction after UNLOCK's call). May learn q->fatal and
 * set c->after2.
 */
uint64_t gil_copy_exit(struct scan *sc, const uint8_t *code, struct copy *c, struct seq *q);

#endif
