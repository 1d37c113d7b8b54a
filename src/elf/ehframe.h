/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Function extents from an object's frame descriptions (.eh_frame_hdr, .eh_frame). */
#ifndef GIL_EHFRAME_H
#define GIL_EHFRAME_H

#include <stdbool.h>
#include <stdint.h>

#include "elf.h"

struct gil_ehframe {
	Elf *obj;
	uint64_t obj_size;
	uint64_t hdr; /* .eh_frame_hdr's address: its table is relative to it */
	const uint8_t *table; /* nr_fde pairs (start, FDE), sorted by start */
	uint64_t nr_fde; /* 0: no table this reader takes */
	const uint8_t *raw; /* the whole file as libelf holds it (elf_rawfile), or NULL */
	size_t raw_size;
};

/* Find @obj's .eh_frame_hdr (PT_GNU_EH_FRAME) and its table; nr_fde stays 0 without one. */
void gil_ehframe_open(struct gil_ehframe *eh, Elf *obj, uint64_t obj_size);

/* The bytes of the file at virtual address @addr, @len of them; NULL when not all in it. */
const uint8_t *gil_ehframe_bytes(const struct gil_ehframe *eh, uint64_t addr, uint64_t len);

/**
 * gil_ehframe_fde - the FDE that begins at @addr, or with @containing the one whose range
 * holds @addr: its [*@start, *@end), and in *@entry whether its code begins as a function's
 * (no CFA rule before the first advance; a .cold part does not). -1 when none fits.
 */
int gil_ehframe_fde(const struct gil_ehframe *eh, uint64_t addr, bool containing, uint64_t *start,
		    uint64_t *end, bool *entry);

/* Where a frame is at one instruction of its function, from its CFA rules. */
struct gil_frame_rule {
	uint64_t start, end; /* the frame description's code */
	int64_t cfa_off; /* the CFA is the stack pointer plus this */
	bool ra_saved; /* the return address is saved at CFA + ra_off; else still in its register
			  (AArch64's x30 before the prologue saves it) */
	int64_t ra_off;
};

/**
 * gil_ehframe_frame - the frame at @pc: its CFA as @sp_reg (the stack pointer's DWARF column:
 * 7 on x86-64, 31 on AArch64) plus an offset, and where the return address is. -1 when no FDE
 * holds @pc, or its CFA is another register (a frame pointer) or an expression.
 */
int gil_ehframe_frame(const struct gil_ehframe *eh, uint64_t pc, unsigned int sp_reg,
		      struct gil_frame_rule *out);

/* The @k-th frame description of the table (by start address): its [*@start, *@end). */
int gil_ehframe_nth(const struct gil_ehframe *eh, uint64_t k, uint64_t *start, uint64_t *end);

#endif /* GIL_EHFRAME_H */
