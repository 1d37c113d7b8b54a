/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the files of attribution share, not for outside src/attrib: where an argument is at a
 * probed instruction (struct loc), and one function per source of layouts and locations.
 *   fetchargs.c    the fetchargs string of one site, from a layout and argument locations
 *   attrib.c       the layouts (table, _Py_DebugOffsets, DWARF), argument locations and
 *                  which of them serves an interpreter (gil_attrib_read)
 */
#ifndef GIL_ATTRIB_INT_H
#define GIL_ATTRIB_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "attrib.h"
#include "elf/elf.h"

/* Where a pointer argument is at the probed instruction, as far as a fetcharg can say. */
enum loc_kind {
	L_NONE = 0,
	L_REG, /* in register reg */
	L_REGOFF, /* its value is reg + off */
	L_MEM, /* stored in memory at reg + off */
	L_ADDR, /* a constant address (a global) */
};

struct loc {
	enum loc_kind kind;
	int reg; /* DWARF register number, x86-64 */
	int64_t off;
	uint64_t addr;
};

#define LOC_NR_REGS 16 /* x86-64 general registers, DWARF numbers 0 - 15: a fetcharg names them */

/**
 * attrib_build_fetchargs - the fetchargs of one entry site: @ts is where the thread state is,
 * @req where the argument holding the drop request is (drop_gil only; kind L_NONE: no class),
 * @delta maps global addresses to file offsets. Returns a malloc'd string, or NULL with *@why
 * set (NULL *@why: out of memory).
 */
char *attrib_build_fetchargs(const struct gil_layout *lay, const struct loc *ts,
			     const struct loc *req, bool drop, int64_t delta, const char **why);
#endif /* GIL_ATTRIB_INT_H */
