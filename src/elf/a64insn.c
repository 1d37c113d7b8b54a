// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * AArch64 control flow, enough to follow the code of an inlined copy of drop_gil from one
 * line-table row to the end of its range and see where control leaves it (x86insn.c's job on
 * x86-64). Instructions are 4 bytes, little-endian, aligned: what is not a branch goes on to
 * the next one. Literal pools would be data in the stream, but GCC and Clang put none in .text
 * on AArch64 (jump tables live in .rodata), and a line-table row starts every range we walk.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>

#include "x86insn.h"

static int64_t sext(uint32_t v, unsigned int bits)
{
	uint64_t m = 1ull << (bits - 1);

	return (int64_t)((v ^ m) - m);
}

bool gil_a64_add_imm(uint32_t w, int *rd, int *rn, uint64_t *imm)
{
	/* sf=1 op=0 S=0 100010 sh imm12 Rn Rd */
	if ((w & 0xff800000) != 0x91000000)
		return false;
	*rd = (int)(w & 31);
	*rn = (int)((w >> 5) & 31);
	*imm = (uint64_t)((w >> 10) & 0xfff) << ((w & (1u << 22)) ? 12 : 0);
	return true;
}

bool gil_a64_adr(uint32_t w, uint64_t addr, int *rd, uint64_t *target)
{
	if ((w & 0x9f000000) != 0x10000000)
		return false;
	*rd = (int)(w & 31);
	*target = addr + (uint64_t)sext(((w >> 29) & 3) | ((w >> 5) & 0x7ffff) << 2, 21);
	return true;
}

bool gil_a64_mov_reg(uint32_t w, int *rd, int *rm)
{
	/* ORR Xd, XZR, Xm (no shift) */
	if ((w & 0xffe0ffe0) != 0xaa0003e0)
		return false;
	*rd = (int)(w & 31);
	*rm = (int)((w >> 16) & 31);
	return true;
}

bool gil_a64_store_zero32(uint32_t w, int *rn, int64_t *off)
{
	if ((w & 31) != 31)
		return false;
	if ((w & 0xffc00000) == 0xb9000000) { /* STR Wt, [Xn, #imm12 * 4] */
		*rn = (int)((w >> 5) & 31);
		*off = (int64_t)((w >> 10) & 0xfff) * 4;
		return true;
	}
	if ((w & 0xffe00c00) == 0xb8000000) { /* STUR Wt, [Xn, #simm9] */
		*rn = (int)((w >> 5) & 31);
		*off = sext((w >> 12) & 0x1ff, 9);
		return true;
	}
	return false;
}

bool gil_a64_spill(uint32_t w, int *rt, int64_t *off)
{
	if ((w & 0xffc003e0) != 0xf90003e0) /* STR Xt, [SP, #imm12 * 8] */
		return false;
	*rt = (int)(w & 31);
	*off = (int64_t)((w >> 10) & 0xfff) * 8;
	return true;
}

bool gil_a64_reload(uint32_t w, int *rt, int64_t *off)
{
	if ((w & 0xffc003e0) != 0xf94003e0) /* LDR Xt, [SP, #imm12 * 8] */
		return false;
	*rt = (int)(w & 31);
	*off = (int64_t)((w >> 10) & 0xfff) * 8;
	return true;
}

uint32_t gil_a64_writes(uint32_t w)
{
	uint32_t rd = 1u << (w & 31), rn = 1u << ((w >> 5) & 31), rt2 = 1u << ((w >> 10) & 31);

	if ((w & 0x0a000000) == 0x08000000) {
		/* loads and stores: a load writes Rt (a pair Rt2 too), a write-back form Rn */
		bool pair = (w & 0x3a000000) == 0x28000000;
		/* a pair's L bit; a single register's opc: 00 stores, anything else loads */
		bool load = pair ? (w & (1u << 22)) : ((w >> 22) & 3) != 0;
		bool wb = pair ? ((w >> 23) & 3) == 1 || ((w >> 23) & 3) == 3 :
			  (w & 0x3b200000) == 0x38000000 && ((w >> 10) & 1);
		uint32_t m = 0;

		if ((w & 0x3b000000) == 0x18000000) /* LDR (literal): always a load */
			return rd;
		if (load || (w & 0x3f000000) == 0x08000000) /* exclusives write a status */
			m |= rd | (pair ? rt2 : 0) | (1u << ((w >> 16) & 31));
		if (wb)
			m |= rn;
		return m;
	}
	if ((w & 0x1c000000) == 0x14000000)
		return 0; /* branches, exceptions, system: the caller handles calls */
	return rd; /* data processing: Rd (31 is XZR for the flag-setting ones, or SP) */
}

int gil_a64_decode(const uint8_t *p, size_t avail, uint64_t addr, struct gil_insn *insn)
{
	uint32_t w;

	if (avail < 4 || (addr & 3))
		return -1;
	w = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
	memset(insn, 0, sizeof(*insn));
	insn->modrm_reg = insn->rm_reg = insn->mem_base = -1; /* x86-64's operands: none */
	insn->word = w;
	insn->len = 4;
	insn->flow = GIL_INSN_NEXT;
	insn->target = 0;
	insn->riprel = 0;
	insn->imm = 0;
	if ((w & 0x7c000000) == 0x14000000) {
		/* B / BL imm26 */
		insn->flow = (w & 0x80000000) ? GIL_INSN_CALL : GIL_INSN_JUMP;
		insn->target = addr + (uint64_t)(sext(w & 0x03ffffff, 26) * 4);
	} else if ((w & 0xff000000) == 0x54000000) {
		/* B.cond / BC.cond imm19 (condition AL/NV still branches: taken as conditional) */
		insn->flow = GIL_INSN_BRANCH;
		insn->target = addr + (uint64_t)(sext((w >> 5) & 0x7ffff, 19) * 4);
	} else if ((w & 0x7e000000) == 0x34000000) {
		/* CBZ / CBNZ imm19 */
		insn->flow = GIL_INSN_BRANCH;
		insn->target = addr + (uint64_t)(sext((w >> 5) & 0x7ffff, 19) * 4);
	} else if ((w & 0x7e000000) == 0x36000000) {
		/* TBZ / TBNZ imm14 */
		insn->flow = GIL_INSN_BRANCH;
		insn->target = addr + (uint64_t)(sext((w >> 5) & 0x3fff, 14) * 4);
	} else if ((w & 0xfe000000) == 0xd6000000) {
		/* branch to a register: BR, BLR, RET, ERET, DRPS and their pointer-auth forms */
		switch ((w >> 21) & 0xf) {
		case 0:
		case 8: /* BRAA, BRAB (key in bit 24's group) */
			insn->flow = GIL_INSN_INDIRECT;
			break;
		case 1:
		case 9: /* BLRAA, BLRAB */
			insn->flow = GIL_INSN_CALL;
			break;
		case 2: /* RET, RETAA, RETAB */
		case 4: /* ERET */
		case 5: /* DRPS */
			insn->flow = GIL_INSN_STOP;
			break;
		default:
			return -1;
		}
	} else if ((w & 0xffe0001f) == 0xd4200000 || (w & 0xffe0001f) == 0xd4400000 ||
		   (w & 0xffff0000) == 0) {
		/* BRK, HLT, UDF: the next instruction is not reached from here */
		insn->flow = GIL_INSN_STOP;
	} else if ((w & 0x9f000000) == 0x90000000) {
		/* ADRP: the 4 KiB page of an address, which an ADD or LDR then completes */
		insn->imm = (addr & ~0xfffull) +
			    ((uint64_t)sext(((w >> 29) & 3) | ((w >> 5) & 0x7ffff) << 2, 21) << 12);
	}
	return 0;
}

int gil_insn_decode(enum gil_arch arch, const uint8_t *p, size_t avail, uint64_t addr,
		    struct gil_insn *insn)
{
	switch (arch) {
	case GIL_ARCH_X86_64:
		return gil_x86_64_decode(p, avail, addr, insn);
	case GIL_ARCH_AARCH64:
		return gil_a64_decode(p, avail, addr, insn);
	default:
		return -1;
	}
}

enum gil_arch gil_arch_of(Elf *elf)
{
	GElf_Ehdr eh;

	if (!elf || !gelf_getehdr(elf, &eh) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_ident[EI_DATA] != ELFDATA2LSB)
		return GIL_ARCH_OTHER;
	return eh.e_machine == EM_X86_64 ? GIL_ARCH_X86_64 :
	       eh.e_machine == EM_AARCH64 ? GIL_ARCH_AARCH64 : GIL_ARCH_OTHER;
}
