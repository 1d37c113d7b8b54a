/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * x86-64 instruction length and control flow, enough to follow the code of an inlined copy of
 * drop_gil from one line-table row to the end of its range and see where control leaves it.
 * Not a disassembler: it knows lengths and branches, and refuses what it does not know.
 */
#ifndef GIL_X86INSN_H
#define GIL_X86INSN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "elf.h"

enum gil_insn_flow {
	GIL_INSN_NEXT = 0, /* goes on to the next instruction */
	GIL_INSN_BRANCH, /* conditional relative branch: to target, or to the next instruction */
	GIL_INSN_JUMP, /* unconditional relative jump: to target only */
	GIL_INSN_CALL, /* call (target set when relative): may come back to the next one */
	GIL_INSN_INDIRECT, /* jump through a register or memory: target unknown */
	GIL_INSN_STOP, /* ret, ud2, hlt, int3: the next instruction is not reached from here */
};

struct gil_insn {
	unsigned int len;
	enum gil_insn_flow flow;
	uint64_t target; /* BRANCH, JUMP, relative CALL */
	uint64_t riprel; /* the address a RIP-relative memory operand names (lea, mov); 0: none */
	uint64_t imm; /* the immediate of a mov to a register or memory (B8+r, C7): in a non-PIE
			 file that is how an address gets into a register; 0: none */
	/*
	 * The operands, as far as the inlined copies' search needs them (copies.c); x86-64 only,
	 * registers by their encoding (0 = rax, 1 = rcx, ... 15 = r15), REX applied.
	 */
	uint16_t opcode; /* map << 8 | the opcode byte (map 0: one-byte, 1: 0F, 2: 0F38, 3: 0F3A;
			    VEX/EVEX maps likewise) */
	uint8_t rex; /* the REX prefix, 0 when none */
	bool opsize; /* a 66 prefix */
	int8_t modrm_reg; /* ModRM.reg with REX.R; -1 without ModRM */
	int8_t rm_reg; /* the register ModRM.rm names when mod is 3, with REX.B; -1 otherwise */
	bool mem; /* a memory operand (ModRM.mod != 3) */
	int8_t mem_base; /* its base register with REX.B; -1 for none or RIP (riprel then) */
	bool mem_index; /* it has an index register */
	int64_t disp; /* its displacement */
	bool has_imm; /* an immediate operand (not a branch's) ... */
	uint64_t immv; /* ... its value, zero-extended from its size */
	uint32_t word; /* AArch64: the instruction word, for the gil_a64_* operand readers */
};

/**
 * gil_x86_64_decode - decode the 64-bit mode instruction at @p (@avail bytes readable), which
 * lives at virtual address @addr. Returns 0 and fills @insn, or -1 when the bytes are not an
 * instruction this decoder knows (or run past @avail): the caller must then give up, not skip.
 */
int gil_x86_64_decode(const uint8_t *p, size_t avail, uint64_t addr, struct gil_insn *insn);

/**
 * gil_a64_decode - the AArch64 instruction at @p (a64insn.c): 4 bytes, its branch target; an
 * ADRP's page address in @insn->imm. -1 for a misaligned address or an unknown branch form.
 */
int gil_a64_decode(const uint8_t *p, size_t avail, uint64_t addr, struct gil_insn *insn);

/**
 * gil_copy_store - is @in (x86-64) the store that releases the GIL in drop_gil, `movl $0` to
 * a memory operand without an index? Its address operand then points at `locked` (copies.c
 * finds it, attrib/abi.c reads through it).
 */
bool gil_copy_store(const struct gil_insn *in);

/* AArch64 operands of an instruction word (a64insn.c); registers 0 - 30, 31 is SP or XZR. */

/* ADD Xd, Xn|SP, #imm{, LSL #12} (MOV to or from SP included): true with its operands. */
bool gil_a64_add_imm(uint32_t w, int *rd, int *rn, uint64_t *imm);

/* ADR Xd, label: true with Xd and the address (@addr: the instruction's). */
bool gil_a64_adr(uint32_t w, uint64_t addr, int *rd, uint64_t *target);

/* MOV Xd, Xm (ORR Xd, XZR, Xm): true with its operands. */
bool gil_a64_mov_reg(uint32_t w, int *rd, int *rm);

/* STR WZR, [Xn|SP, #off] or STUR WZR, [Xn|SP, #off]: a 32-bit store of 0 (drop_gil's). */
bool gil_a64_store_zero32(uint32_t w, int *rn, int64_t *off);

/* STR Xt, [SP, #off] (a spill, 64-bit, unsigned offset): true with Xt and the offset. */
bool gil_a64_spill(uint32_t w, int *rt, int64_t *off);

/* LDR Xt, [SP, #off] (its reload): true with Xt and the offset. */
bool gil_a64_reload(uint32_t w, int *rt, int64_t *off);

/*
 * The general registers the instruction may write, as a mask (bit 31: SP): conservative, every
 * instruction this does not know writes its Rd field. Calls are the caller's to handle.
 */
uint32_t gil_a64_writes(uint32_t w);

/** gil_insn_decode - the instruction at @p in @arch's set; -1 for another architecture. */
int gil_insn_decode(enum gil_arch arch, const uint8_t *p, size_t avail, uint64_t addr,
		    struct gil_insn *insn);


#endif /* GIL_X86INSN_H */
