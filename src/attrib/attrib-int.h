/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the files of attribution share, not for outside src/attrib: where an argument is at a
 * probed instruction (struct loc), and one function per source of layouts and locations.
 *   table.c        the built-in layouts of release builds (gil_layout_table)
 *   fetchargs.c    the fetchargs string of one site, from a layout and argument locations
 *   debugoffsets.c the layout from _Py_DebugOffsets (3.13 - 3.15)
 *   abi.c          argument locations by the calling convention, at plain function entries
 *   dwarflayout.c  layout and argument locations from DWARF (dwarflayout-none.c without libdw)
 *   attrib.c       which of them serves an interpreter (gil_attrib_read)
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
	L_CHAIN, /* *(*(*addr + chain[0]) + chain[1]): a pointer reached from a global */
	L_GPTR, /* stored in memory at the constant address addr (a global) */
};

struct loc {
	enum loc_kind kind;
	int reg; /* DWARF register number, x86-64 */
	int64_t off;
	uint64_t addr;
	int64_t chain[2]; /* L_CHAIN */
	bool holder; /* the GIL's last holder, not the thread's own argument: the recorder keeps
			a hit only when its native thread id is the thread's (when known) */
};

#define LOC_NR_REGS 32 /* general registers by DWARF number: x86-64's 0 - 15, AArch64's x0 - x30, sp */

/* The fetcharg name of DWARF register @reg on @arch (enum gil_arch), NULL when it has none. */
const char *attrib_reg_name(int arch, int reg);

/* The DWARF number of integer argument @i (0-based) on @arch; -1 past the registers. */
int attrib_arg_reg(int arch, int i);

/**
 * attrib_build_fetchargs - the fetchargs of one entry site into @out: ->fetchargs the full set
 * (the function's name, file and line read in the probe), ->pointer the set of the default
 * mode (the code object's address, and which GIL from 3.12; at take_gil without the request,
 * and NULL where the thread state is the GIL's holder's).
 * @ts is where the thread state is, @req where the argument holding the drop request is
 * (drop_gil only; kind L_NONE: no class), @delta maps global addresses to file offsets.
 * @check_type reads the code object's type at every version: for a site whose argument
 * registers no symbol table or DWARF vouches for (callgraph.c's), so that a compiler clone's
 * other arguments can only give unattributed events, never a wrong name (the recorder checks
 * the type of what the pointer set read itself). Returns 0 (->fetchargs NULL and ->why set
 * when the site cannot be read), or -1 on ENOMEM.
 */
int attrib_build_fetchargs(const struct gil_layout *lay, const struct loc *ts,
			   const struct loc *req, bool drop, int64_t delta, bool check_type,
			   struct gil_attrib_site *out);

/**
 * attrib_layout_debug_offsets - the layout from _Py_DebugOffsets in the data of @f (3.13 -
 * 3.15). Returns 0; -1 when there is none (*@why, static, says why: the table may serve); -2
 * when there is one that is not read (a pre-release, an unknown version, free-threaded: *@why
 * says which), so nothing else may guess that version's layout either.
 */
int attrib_layout_debug_offsets(struct gil_elf *f, struct gil_layout *out, const char **why);

/**
 * attrib_debug_offsets_parse - the layout from the first @len bytes of _PyRuntime at @d.
 * Returns 0, or -1 with a static reason in *@why.
 */
int attrib_debug_offsets_parse(const unsigned char *d, size_t len, struct gil_layout *out,
			       const char **why);

/**
 * attrib_abi - fetchargs for the entry sites of @syms from @a->layout (table or debug offsets),
 * arguments by the ABI, so only at plain function entries; other sites get a why.
 * Returns 0, or -1 on ENOMEM.
 */
int attrib_abi(struct gil_attrib *a, const struct gil_symbols *syms, struct gil_elf *obj);

/**
 * attrib_dwarf - layout and fetchargs from the DWARF of @syms->dwarf_from (read from
 * @syms->dwarf_elf, or @obj when that is NULL), @obj being the probed file; @version (312) overrides the one the layout suggests. Returns 1 when DWARF
 * served (@a filled), 0 when there is none to use (a reason may be in @err), -1 on ENOMEM.
 */
int attrib_dwarf(struct gil_attrib *a, const struct gil_symbols *syms, struct gil_elf *obj,
		 int version, char *err, size_t errlen);

#endif /* GIL_ATTRIB_INT_H */
