// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * x86-64 instruction lengths (Intel SDM vol. 2, appendix A opcode maps), 64-bit mode only.
 * Legacy prefixes, REX, the one-byte, 0F, 0F38 and 0F3A maps, VEX and EVEX (maps 1-3), ModRM,
 * SIB, displacement and immediate. Anything else returns -1: callers treat that as "unknown".
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stdbool.h>

#include "x86insn.h"

#define MAX_LEN 15

/* Immediate sizes that depend on prefixes. */
enum imm {
	I_NONE,
	I_8,
	I_16,
	I_Z, /* 16 with 0x66, else 32 */
	I_V, /* 64 with REX.W, 16 with 0x66, else 32 */
	I_MOFFS, /* 32 with 0x67, else 64 */
	I_ENTER, /* 16 + 8 */
	I_REL8,
	I_REL32,
};

struct op {
	bool modrm;
	enum imm imm;
	enum gil_insn_flow flow;
	bool valid;
};

static struct op one_byte(uint8_t op)
{
	struct op o = { .valid = true };

	if (op < 0x40) {
		switch (op & 7) {
		case 0: case 1: case 2: case 3:
			o.modrm = true;
			return o;
		case 4:
			o.imm = I_8;
			return o;
		case 5:
			o.imm = I_Z;
			return o;
		}
		o.valid = false; /* 06, 07, 0e... invalid in 64-bit mode; prefixes come earlier */
		return o;
	}
	if (op >= 0x50 && op <= 0x5f)
		return o;
	if (op >= 0x70 && op <= 0x7f) {
		o.imm = I_REL8;
		o.flow = GIL_INSN_BRANCH;
		return o;
	}
	if ((op >= 0x84 && op <= 0x8f) || (op >= 0xd0 && op <= 0xd3) ||
	    (op >= 0xd8 && op <= 0xdf)) {
		o.modrm = true;
		return o;
	}
	if (op >= 0x90 && op <= 0x9f && op != 0x9a)
		return o;
	if (op >= 0xb0 && op <= 0xb7) {
		o.imm = I_8;
		return o;
	}
	if (op >= 0xb8 && op <= 0xbf) {
		o.imm = I_V;
		return o;
	}
	switch (op) {
	case 0x63: case 0xfe:
		o.modrm = true;
		return o;
	case 0x68: case 0xa9:
		o.imm = I_Z;
		return o;
	case 0x69: case 0x81: case 0xc7:
		o.modrm = true;
		o.imm = I_Z;
		return o;
	case 0x6a: case 0xa8: case 0xcd: case 0xe4: case 0xe5: case 0xe6: case 0xe7:
		o.imm = I_8;
		return o;
	case 0x6b: case 0x80: case 0x83: case 0xc0: case 0xc1: case 0xc6:
		o.modrm = true;
		o.imm = I_8;
		return o;
	case 0x6c: case 0x6d: case 0x6e: case 0x6f:
	case 0xa4: case 0xa5: case 0xa6: case 0xa7: case 0xaa: case 0xab: case 0xac: case 0xad:
	case 0xae: case 0xaf: case 0xc9: case 0xd7: case 0xec: case 0xed: case 0xee: case 0xef:
	case 0xf5: case 0xf8: case 0xf9: case 0xfa: case 0xfb: case 0xfc: case 0xfd:
		return o;
	case 0xa0: case 0xa1: case 0xa2: case 0xa3:
		o.imm = I_MOFFS;
		return o;
	case 0xc2: case 0xca:
		o.imm = I_16;
		o.flow = GIL_INSN_STOP;
		return o;
	case 0xc3: case 0xcb: case 0xcc: case 0xcf: case 0xf1: case 0xf4:
		o.flow = GIL_INSN_STOP;
		return o;
	case 0xc8:
		o.imm = I_ENTER;
		return o;
	case 0xe0: case 0xe1: case 0xe2: case 0xe3:
		o.imm = I_REL8;
		o.flow = GIL_INSN_BRANCH;
		return o;
	case 0xe8:
		o.imm = I_REL32;
		o.flow = GIL_INSN_CALL;
		return o;
	case 0xe9:
		o.imm = I_REL32;
		o.flow = GIL_INSN_JUMP;
		return o;
	case 0xeb:
		o.imm = I_REL8;
		o.flow = GIL_INSN_JUMP;
		return o;
	case 0xf6: case 0xf7: case 0xff: /* immediate and flow depend on ModRM.reg */
		o.modrm = true;
		return o;
	}
	o.valid = false;
	return o;
}

static struct op map_0f(uint8_t op)
{
	struct op o = { .valid = true, .modrm = true };

	if (op >= 0x80 && op <= 0x8f) {
		o.modrm = false;
		o.imm = I_REL32;
		o.flow = GIL_INSN_BRANCH;
		return o;
	}
	switch (op) {
	case 0x04: case 0x0a: case 0x0c: case 0x0f: case 0x24: case 0x25: case 0x26: case 0x27:
	case 0x36: case 0x38: case 0x39: case 0x3a: case 0x3b: case 0x3c: case 0x3d: case 0x3e:
	case 0x3f: case 0x7a: case 0x7b: case 0xa6: case 0xa7:
		o.valid = false; /* 0F 0F is 3DNow!, 0F 38/3A are handled by the caller */
		return o;
	case 0x05: case 0x06: case 0x08: case 0x09: case 0x0e: case 0x30: case 0x31: case 0x32:
	case 0x33: case 0x34: case 0x37: case 0x77: case 0xa0: case 0xa1: case 0xa2: case 0xa8:
	case 0xa9: case 0xaa: case 0xc8: case 0xc9: case 0xca: case 0xcb: case 0xcc: case 0xcd:
	case 0xce: case 0xcf:
		o.modrm = false;
		return o;
	case 0x07: case 0x35: case 0x0b: /* sysret, sysexit, ud2 */
		o.modrm = false;
		o.flow = GIL_INSN_STOP;
		return o;
	case 0xb9: case 0xff: /* ud1, ud0 */
		o.flow = GIL_INSN_STOP;
		return o;
	case 0x70: case 0x71: case 0x72: case 0x73: case 0xa4: case 0xac: case 0xba: case 0xc2:
	case 0xc4: case 0xc5: case 0xc6:
		o.imm = I_8;
		return o;
	}
	return o;
}

/* VEX/EVEX map 1 opcodes that carry an imm8 (the 0F map's imm8 forms). */
static bool vex_map1_imm8(uint8_t op)
{
	return (op >= 0x70 && op <= 0x73) || op == 0xc2 || op == 0xc4 || op == 0xc5 || op == 0xc6;
}

/* Little-endian @n bytes at @p, zero-extended. */
static uint64_t le(const uint8_t *p, size_t n)
{
	uint64_t v = 0;

	while (n-- > 0)
		v = v << 8 | p[n];
	return v;
}

/* The operands of the decoded instruction into @insn (see struct gil_insn). */
static void describe(struct gil_insn *insn, uint8_t map, uint8_t op, uint8_t rex, bool opsize,
		     bool has_modrm, uint8_t modrm, uint8_t sib, bool sib_base, bool rip,
		     const uint8_t *dp, size_t disp, size_t imm, const uint8_t *ip)
{
	insn->opcode = (uint16_t)(map << 8 | op);
	insn->rex = rex;
	insn->opsize = opsize;
	insn->modrm_reg = -1;
	insn->rm_reg = -1;
	insn->mem = false;
	insn->mem_base = -1;
	insn->mem_index = false;
	insn->disp = 0;
	insn->has_imm = imm > 0;
	insn->immv = imm ? le(ip, imm) : 0;
	if (!has_modrm)
		return;
	insn->modrm_reg = (int8_t)(((modrm >> 3) & 7) | ((rex & 4) << 1));
	if (modrm >> 6 == 3) {
		insn->rm_reg = (int8_t)((modrm & 7) | ((rex & 1) << 3));
		return;
	}
	insn->mem = true;
	if (disp == 1)
		insn->disp = (int8_t)dp[0];
	else if (disp == 4)
		insn->disp = (int32_t)le(dp, 4);
	if (rip)
		return;
	if ((modrm & 7) == 4) {
		insn->mem_index = ((sib >> 3) & 7) != 4 || (rex & 2);
		if (sib_base)
			insn->mem_base = (int8_t)((sib & 7) | ((rex & 1) << 3));
		return;
	}
	insn->mem_base = (int8_t)((modrm & 7) | ((rex & 1) << 3));
}

int gil_x86_64_decode(const uint8_t *p, size_t avail, uint64_t addr, struct gil_insn *insn)
{
	bool opsize = false, adsize = false, rexw = false;
	size_t i = 0, disp = 0, imm = 0, dpos;
	bool rip = false, sib_base = true;
	uint8_t op, modrm = 0, map, reg, rex = 0, sib = 0;
	struct op o;
	int64_t rel;

	if (avail > MAX_LEN)
		avail = MAX_LEN;
	for (;; i++) {
		if (i >= avail)
			return -1;
		if (p[i] == 0x66)
			opsize = true;
		else if (p[i] == 0x67)
			adsize = true;
		else if (p[i] != 0x26 && p[i] != 0x2e && p[i] != 0x36 && p[i] != 0x3e &&
			 p[i] != 0x64 && p[i] != 0x65 && p[i] != 0xf0 && p[i] != 0xf2 &&
			 p[i] != 0xf3)
			break;
	}
	if ((p[i] & 0xf0) == 0x40) {
		rex = p[i];
		rexw = p[i] & 8;
		if (++i >= avail)
			return -1;
	}
	op = p[i++];
	if (op == 0xc5 || op == 0xc4 || op == 0x62) {
		/* VEX2: C5 RvvvvLpp; VEX3: C4 RXBmmmmm WvvvvLpp; EVEX: 62 P0 P1 P2 (map in P0) */
		size_t n = op == 0xc5 ? 1 : op == 0xc4 ? 2 : 3;

		if (i + n + 1 > avail)
			return -1;
		map = op == 0xc5 ? 1 : op == 0xc4 ? (p[i] & 0x1f) : (p[i] & 0x7);
		if (map < 1 || map > 3)
			return -1;
		i += n;
		op = p[i++];
		/* vzeroupper/vzeroall (VEX 0F 77) is the one without ModRM */
		o = (struct op){ .valid = true, .modrm = !(map == 1 && op == 0x77) };
		if (map == 3 || (map == 1 && vex_map1_imm8(op)))
			o.imm = I_8;
	} else if (op == 0x0f) {
		if (i >= avail)
			return -1;
		op = p[i++];
		if (op == 0x38 || op == 0x3a) {
			map = op == 0x38 ? 2 : 3;
			if (i >= avail)
				return -1;
			op = p[i++];
			o = (struct op){ .valid = true, .modrm = true,
					 .imm = map == 3 ? I_8 : I_NONE };
		} else {
			o = map_0f(op);
		}
	} else {
		o = one_byte(op);
		if (op >= 0x40 && op <= 0x4f)
			o.valid = false; /* a second REX */
		map = 0;
	}
	if (!o.valid)
		return -1;
	/*
	 * Near jumps with an operand-size prefix differ between vendors: refuse them. A call keeps
	 * rel32 (the 66 66 48 E8 padding of the TLS __tls_get_addr sequence).
	 */
	if ((o.imm == I_REL32 || o.imm == I_REL8) && opsize && !(map == 0 && op == 0xe8))
		return -1;

	if (o.modrm) {
		if (i >= avail)
			return -1;
		modrm = p[i++];
		if (modrm >> 6 != 3) {
			if ((modrm & 7) == 4) {
				if (i >= avail)
					return -1;
				sib = p[i];
				if (modrm >> 6 == 0 && (p[i] & 7) == 5) {
					disp = 4;
					sib_base = false;
				}
				i++;
			}
			if (modrm >> 6 == 0 && (modrm & 7) == 5) {
				disp = 4; /* RIP-relative */
				rip = true;
			}
			else if (modrm >> 6 == 1)
				disp = 1;
			else if (modrm >> 6 == 2)
				disp = 4;
		}
	}
	reg = (modrm >> 3) & 7;
	if (map == 0 && op == 0x8f && reg)
		return -1; /* AMD XOP, not pop */
	if (map == 0 && (op == 0xf6 || op == 0xf7) && reg < 2)
		o.imm = op == 0xf6 ? I_8 : I_Z; /* test r/m, imm */
	if (map == 0 && op == 0xff) {
		if (reg == 2 || reg == 3)
			o.flow = GIL_INSN_CALL;
		else if (reg == 4 || reg == 5)
			o.flow = GIL_INSN_INDIRECT;
		else if (reg == 7)
			return -1;
	}

	switch (o.imm) {
	case I_NONE:
		break;
	case I_8:
	case I_REL8:
		imm = 1;
		break;
	case I_16:
		imm = 2;
		break;
	case I_Z:
		imm = opsize ? 2 : 4;
		break;
	case I_V:
		imm = rexw ? 8 : opsize ? 2 : 4;
		break;
	case I_MOFFS:
		imm = adsize ? 4 : 8;
		break;
	case I_ENTER:
		imm = 3;
		break;
	case I_REL32:
		imm = 4;
		break;
	}
	dpos = i;
	i += disp;
	if (i + imm > avail)
		return -1;
	insn->len = (unsigned int)(i + imm);
	insn->flow = o.flow;
	insn->target = 0;
	insn->riprel = 0;
	insn->imm = 0;
	describe(insn, map, op, rex, opsize, o.modrm, modrm, sib, sib_base, rip, p + dpos, disp,
		 o.imm == I_REL8 || o.imm == I_REL32 ? 0 : imm, p + i);
	if (map == 0 && ((op >= 0xb8 && op <= 0xbf) || op == 0xc7) && imm >= 4) {
		uint64_t v = 0;
		size_t b;

		for (b = imm; b-- > 0;)
			v = v << 8 | p[i + b];
		if (imm == 4 && op == 0xc7 && rexw)
			v = (uint64_t)(int64_t)(int32_t)v;
		insn->imm = v;
	}
	if (rip && !adsize) {
		/* relative to the next instruction, whatever immediate follows the displacement */
		rel = (int32_t)((uint32_t)p[dpos] | (uint32_t)p[dpos + 1] << 8 |
				(uint32_t)p[dpos + 2] << 16 | (uint32_t)p[dpos + 3] << 24);
		insn->riprel = addr + insn->len + (uint64_t)rel;
	}
	if (o.imm == I_REL8) {
		rel = (int8_t)p[i];
		insn->target = addr + insn->len + (uint64_t)rel;
	} else if (o.imm == I_REL32) {
		rel = (int32_t)((uint32_t)p[i] | (uint32_t)p[i + 1] << 8 |
				(uint32_t)p[i + 2] << 16 | (uint32_t)p[i + 3] << 24);
		insn->target = addr + insn->len + (uint64_t)rel;
	}
	return 0;
}

bool gil_copy_store(const struct gil_insn *in)
{
	return in->opcode == 0xc7 && in->modrm_reg == 0 && in->mem && !(in->rex & 8) &&
	       !in->opsize && in->has_imm && in->immv == 0 && !in->mem_index && in->len > 0;
}
