/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Inlined copies of take_gil/drop_gil from DWARF (libdw), implemented in dwarfsites.c. LTO builds
 * inline drop_gil into PyEval_SaveThread and, through it, into I/O functions: the out-of-line
 * copy then sees almost only forced switches. Built without libdw, gil_dwarf_read() finds
 * nothing and says so. Not named dwarf.h: that would hide elfutils' <dwarf.h> (the DW_*
 * constants) behind -I src.
 */
#ifndef GIL_DWARFSITES_H
#define GIL_DWARFSITES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libelf.h>

#include "symbols.h"

/* One probe address inside an inlined copy: its entry, or the first instruction after it. */
struct gil_dwarf_site {
	enum gil_func fn;
	enum gil_site_role role;
	uint64_t addr; /* virtual address, proven an instruction start by a line-table row */
	char *where; /* "drop_gil@PyEval_SaveThread": the function and the caller it is inlined in */
};

struct gil_dwarf {
	bool supported; /* built with libdw */
	bool has_dwarf; /* the file has .debug_info that libdw could read */
	struct gil_dwarf_site *sites; /* ENTRY sites first, then EXIT sites; no address twice */
	size_t nr_sites;
	size_t copies; /* inlined copies found (nested ones not counted) */
	size_t nested; /* copies inside another copy of the same function: covered by it */
	size_t unproven; /* copies whose entry no line-table row proves: not probed at all */
	size_t exits_refused; /* ways out that are not provable exits: no row, not in the caller */
	size_t exits_unknown; /* ranges whose code could not be followed, computed jumps */
};

/**
 * gil_dwarf_read - find the inlined copies of take_gil/drop_gil in the DWARF of @f (the
 * object itself or its debug file) and the addresses where each one starts and ends. The
 * handle stays open in @f (gil_elf_dwarf), for attribution to read next.
 *
 * An ENTRY is the copy's DW_AT_entry_pc (else DW_AT_low_pc, else its first range), and only
 * when a line-table row of its unit starts there. EXITs are where control leaves the copy,
 * found by following the instructions of each range in @code (the probed object, read through
 * its program headers; x86-64 only) from a line-table row to the range's end: the address
 * after a range whose last instruction can fall through, and branch targets outside the copy.
 * Each must start a line-table row (not an end of sequence) and lie in the code of the
 * function the copy is inlined in. A copy nested inside another copy of the same function, or
 * inside its out-of-line body, is covered by the outer one and gives no site. Addresses are
 * virtual: the caller maps them through the probed object's program headers.
 *
 * Returns 0 and *@out (free with gil_dwarf_free); a file without DWARF gives has_dwarf false.
 * Returns -1 with errno (ENOMEM) and a reason in @err.
 */
int gil_dwarf_read(struct gil_elf *f, Elf *code, struct gil_dwarf **out, char *err,
		   size_t errlen);

/** gil_dwarf_supported - was giltrace built with libdw (can it read DWARF at all)? */
bool gil_dwarf_supported(void);

/** gil_dwarf_free - release what gil_dwarf_read() returned; NULL is fine. */
void gil_dwarf_free(struct gil_dwarf *dw);

#endif /* GIL_DWARFSITES_H */
