// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The frame descriptions of an object (.eh_frame_hdr's sorted table and the .eh_frame FDEs it
 * points to), as far as a function's extent goes: where the code around an address begins and
 * ends, and whether it begins as a function does. Every function has one (unwinding needs it,
 * and strip keeps it), in the probed file itself: callgraph.c delimits the functions it decodes
 * with them, prove.c decodes from their starts to prove a probe site.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>

#include "common/util.h"
#include "ehframe.h"

#define PE_OMIT 0xff
#define PE_ABSPTR 0x00
#define PE_UDATA4 0x03
#define PE_UDATA8 0x04
#define PE_SDATA4 0x0b
#define PE_SDATA8 0x0c
#define PE_PCREL 0x10
#define PE_DATAREL 0x30

/* Bytes of the file at virtual address @addr, @len of them; NULL when not all in the file. */
const uint8_t *gil_ehframe_bytes(const struct gil_ehframe *eh, uint64_t addr, uint64_t len)
{
	uint64_t off;
	bool exec;
	Elf_Data *d;

	if (gil_elf_addr_to_offset(eh->obj, addr, &off, &exec) || off > eh->obj_size ||
	    len > eh->obj_size - off)
		return NULL;
	/* the file's image when libelf has it whole: one chunk per call would cost O(n) each */
	if (eh->raw && eh->raw_size >= eh->obj_size)
		return eh->raw + off;
	d = elf_getdata_rawchunk(eh->obj, (int64_t)off, len, ELF_T_BYTE);
	return d && d->d_size == len ? d->d_buf : NULL;
}

/*
 * A pointer encoded as @enc at @p (virtual address @at, @avail bytes there), relative to
 * @datarel for DW_EH_PE_datarel; @apply false gives the bare value (an FDE's address range).
 * Its size into *@n. Returns 0, or -1 for an encoding this reader does not take.
 */
static int read_enc(const uint8_t *p, size_t avail, uint8_t enc, uint64_t at, uint64_t datarel,
		    bool apply, uint64_t *out, size_t *n)
{
	uint64_t v;

	switch (enc & 0x0f) {
	case PE_ABSPTR:
	case PE_UDATA8:
	case PE_SDATA8:
		if (avail < 8)
			return -1;
		memcpy(&v, p, 8);
		*n = 8;
		break;
	case PE_UDATA4:
		if (avail < 4)
			return -1;
		v = gil_elf_u32(p, true);
		*n = 4;
		break;
	case PE_SDATA4:
		if (avail < 4)
			return -1;
		v = (uint64_t)(int64_t)(int32_t)gil_elf_u32(p, true);
		*n = 4;
		break;
	default:
		return -1;
	}
	if (apply) {
		switch (enc & 0x70) {
		case 0:
			break;
		case PE_PCREL:
			v += at;
			break;
		case PE_DATAREL:
			v += datarel;
			break;
		default:
			return -1;
		}
	}
	*out = v;
	return 0;
}

static size_t uleb(const uint8_t *p, size_t avail, uint64_t *v)
{
	size_t i;
	unsigned int shift = 0;

	*v = 0;
	for (i = 0; i < avail && i < 10; i++, shift += 7) {
		*v |= (uint64_t)(p[i] & 0x7f) << shift;
		if (!(p[i] & 0x80))
			return i + 1;
	}
	return 0;
}

/* What a CIE says: its FDEs' pointer encoding and augmentation, and the CFA program's terms. */
struct cie {
	int enc; /* DW_EH_PE_* of its FDEs' addresses */
	bool z; /* its FDEs carry augmentation data */
	uint64_t code_align;
	int64_t data_align;
	uint64_t ra_reg; /* the return address's column */
	const uint8_t *init; /* its initial instructions */
	size_t init_len;
};

static size_t sleb(const uint8_t *p, size_t avail, int64_t *v)
{
	uint64_t u;
	size_t n = uleb(p, avail, &u);
	unsigned int bits = (unsigned int)n * 7;

	if (n && bits < 64 && (p[n - 1] & 0x40))
		u |= ~(uint64_t)0 << bits;
	*v = (int64_t)u;
	return n;
}

/* Read the CIE at @cie into *@c; -1 when unreadable or of an augmentation this reader lacks. */
static int cie_parse(const struct gil_ehframe *eh, uint64_t cie, struct cie *c)
{
	const uint8_t *p, *aug;
	uint64_t v;
	size_t n, i, len, k;

	p = gil_ehframe_bytes(eh, cie, 8);
	if (!p)
		return -1;
	len = gil_elf_u32(p, true);
	if (len == 0xffffffff || len < 8 || len > 4096 || gil_elf_u32(p + 4, true) != 0)
		return -1;
	p = gil_ehframe_bytes(eh, cie, 4 + len);
	if (!p)
		return -1;
	memset(c, 0, sizeof(*c));
	c->enc = PE_ABSPTR;
	i = 9; /* length, CIE id, version */
	aug = p + i;
	while (i < 4 + len && p[i])
		i++;
	if (i >= 4 + len)
		return -1;
	i++;
	c->z = aug[0] == 'z';
	if (aug[0] && aug[0] != 'z')
		return -1;
	n = uleb(p + i, 4 + len - i, &c->code_align);
	if (!n)
		return -1;
	i += n;
	n = sleb(p + i, 4 + len - i, &c->data_align);
	if (!n)
		return -1;
	i += n;
	if (p[8] == 1) { /* version 1: one byte; 3: uleb */
		c->ra_reg = p[i++];
	} else {
		n = uleb(p + i, 4 + len - i, &c->ra_reg);
		if (!n)
			return -1;
		i += n;
	}
	if (c->z) {
		n = uleb(p + i, 4 + len - i, &v);
		if (!n)
			return -1;
		i += n;
	}
	for (k = 1; c->z && aug[k]; k++) {
		if (i >= 4 + len)
			return -1;
		if (aug[k] == 'R') {
			c->enc = p[i++];
		} else if (aug[k] == 'L') {
			i++;
		} else if (aug[k] == 'P') {
			uint8_t penc = p[i++];

			if (read_enc(p + i, 4 + len - i, penc, cie + i, 0, false, &v, &n))
				return -1;
			i += n;
		} else if (aug[k] != 'S' && aug[k] != 'B') {
			return -1;
		}
	}
	if (i > 4 + len)
		return -1;
	c->init = p + i;
	c->init_len = 4 + len - i;
	return 0;
}

/* One frame description, as fde_find read it. */
struct fde {
	uint64_t start, end;
	bool entry;
	struct cie cie;
	const uint8_t *prog; /* its CFA instructions */
	size_t prog_len;
};

static int fde_find(const struct gil_ehframe *eh, uint64_t addr, bool containing, struct fde *f)
{
	uint64_t lo, hi, mid, start, want, fde, cie, range, at, len, aug;
	const uint8_t *p;
	size_t n, k;
	uint8_t op;

	if (!eh->nr_fde)
		return -1;
	/* the last entry that starts at or before @addr */
	lo = 0;
	hi = eh->nr_fde;
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		start = eh->hdr + (uint64_t)(int64_t)(int32_t)gil_elf_u32(eh->table + mid * 8, true);
		if (start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return -1;
	p = eh->table + (lo - 1) * 8;
	want = eh->hdr + (uint64_t)(int64_t)(int32_t)gil_elf_u32(p, true);
	if (want != addr && !containing)
		return -1;
	fde = eh->hdr + (uint64_t)(int64_t)(int32_t)gil_elf_u32(p + 4, true);
	p = gil_ehframe_bytes(eh, fde, 8);
	if (!p)
		return -1;
	len = gil_elf_u32(p, true);
	if (len == 0xffffffff || len < 12 || len > 65536 || !gil_elf_u32(p + 4, true))
		return -1;
	p = gil_ehframe_bytes(eh, fde, 4 + len);
	if (!p)
		return -1;
	cie = fde + 4 - gil_elf_u32(p + 4, true);
	if (cie_parse(eh, cie, &f->cie) < 0)
		return -1;
	at = fde + 8;
	k = 8;
	/* the table and the FDE must agree on where it starts */
	if (read_enc(p + k, 4 + len - k, (uint8_t)f->cie.enc, at, 0, true, &start, &n) ||
	    start != want)
		return -1;
	k += n;
	if (read_enc(p + k, 4 + len - k, (uint8_t)(f->cie.enc & 0x0f), 0, 0, false, &range, &n) ||
	    !range || range > (1u << 24))
		return -1;
	k += n;
	if (f->cie.z) {
		n = uleb(p + k, 4 + len - k, &aug);
		if (!n || aug > 4 + len - k - n)
			return -1;
		k += n + aug;
	}
	/* the first instruction: end, nop, or an advance (DW_CFA_advance_loc, _loc1/2/4) */
	op = k < 4 + len ? p[k] : 0;
	f->entry = op == 0 || (op & 0xc0) == 0x40 || (op >= 0x02 && op <= 0x04);
	if (addr - start >= range)
		return -1; /* in a gap between two functions' descriptions */
	f->start = start;
	f->end = start + range;
	f->prog = p + k;
	f->prog_len = 4 + len - k;
	return 0;
}

/*
 * The frame description of the code at @addr: one that begins exactly there, or with
 * @containing, the one whose range holds it. Its start and end into *@start and *@end, and in
 * *@entry whether it begins as a function does: no rule before the first advance, so the
 * CIE's (the return address at the stack pointer). A part that GCC split off a function
 * (.cold) begins with the frame of the middle of that function: never an entry, even when a
 * jump leads there. .eh_frame_hdr's table (sorted by start) is searched for @addr, and the
 * FDE it points to gives the rest. Returns 0, or -1 when no FDE fits (or the tables are
 * unreadable).
 */
int gil_ehframe_fde(const struct gil_ehframe *eh, uint64_t addr, bool containing, uint64_t *start_out,
		    uint64_t *end, bool *entry)
{
	struct fde f;

	if (fde_find(eh, addr, containing, &f) < 0)
		return -1;
	*start_out = f.start;
	*end = f.end;
	*entry = f.entry;
	return 0;
}

/* The rules a CFA program builds, as far as gil_ehframe_frame needs them. */
struct cfa_row {
	uint64_t cfa_reg;
	int64_t cfa_off;
	bool cfa_expr; /* a DWARF expression: not followed */
	int ra; /* 0 in its register (same value), 1 saved at CFA + ra_off, -1 not known */
	int64_t ra_off;
};

/* A ULEB128 operand at @p + *@i, *@i moved past it; false when it runs past @len. */
static bool op_u(const uint8_t *p, size_t len, size_t *i, uint64_t *v)
{
	size_t n = uleb(p + *i, len - *i, v);

	*i += n;
	return n != 0;
}

/* An offset operand: a ULEB128 as it is, or with @sf an SLEB128 times @scale. */
static bool op_off(const uint8_t *p, size_t len, size_t *i, bool sf, int64_t scale, int64_t *v)
{
	uint64_t u;
	size_t n;

	if (!sf) {
		if (!op_u(p, len, i, &u))
			return false;
		*v = (int64_t)u;
		return true;
	}
	n = sleb(p + *i, len - *i, v);
	*i += n;
	*v *= scale;
	return n != 0;
}

/*
 * Run @len bytes of CFA instructions at @p over *@row, up to location @pc (from @loc on). The
 * initial row is *@init (the CIE's, for DW_CFA_restore). Returns 1 when @pc was passed (the row
 * holds at it), 0 at the program's end, -1 on an instruction this reader does not take.
 */
static int cfa_run(const struct cie *c, const uint8_t *p, size_t len, uint64_t *loc, uint64_t pc,
		   struct cfa_row *row, const struct cfa_row *init)
{
	struct cfa_row stack[8];
	size_t i = 0, depth = 0;
	uint64_t reg, u, delta;
	int64_t off;
	uint8_t op;

	while (i < len) {
		op = p[i++];
		delta = 0;
		if ((op & 0xc0) == 0x40) {
			delta = op & 0x3f;
		} else if ((op & 0xc0) == 0x80) { /* DW_CFA_offset */
			if (!op_u(p, len, &i, &u))
				return -1;
			if ((op & 0x3f) == c->ra_reg) {
				row->ra = 1;
				row->ra_off = (int64_t)u * c->data_align;
			}
			continue;
		} else if ((op & 0xc0) == 0xc0) { /* DW_CFA_restore */
			if ((op & 0x3f) == c->ra_reg && init) {
				row->ra = init->ra;
				row->ra_off = init->ra_off;
			}
			continue;
		} else {
			switch (op) {
			case 0x00: /* nop */
			case 0x2d: /* AArch64 negate_ra_state: the saved address is signed */
				continue;
			case 0x02: /* advance_loc1, 2, 4 */
			case 0x03:
			case 0x04: {
				size_t w = op == 0x02 ? 1 : op == 0x03 ? 2 : 4, k;

				if (i + w > len)
					return -1;
				for (k = 0; k < w; k++)
					delta |= (uint64_t)p[i + k] << (8 * k);
				i += w;
				break;
			}
			case 0x05: /* offset_extended (_sf), val_offset (_sf) */
			case 0x11:
			case 0x14:
			case 0x15:
				if (!op_u(p, len, &i, &reg) ||
				    !op_off(p, len, &i, op == 0x11 || op == 0x15, 1, &off))
					return -1;
				if (reg == c->ra_reg) {
					row->ra = op == 0x05 || op == 0x11 ? 1 : -1;
					row->ra_off = off * c->data_align;
				}
				continue;
			case 0x06: /* restore_extended, undefined, same_value */
			case 0x07:
			case 0x08:
				if (!op_u(p, len, &i, &reg))
					return -1;
				if (reg != c->ra_reg)
					continue;
				if (op == 0x06 && init) {
					row->ra = init->ra;
					row->ra_off = init->ra_off;
				} else {
					row->ra = op == 0x08 ? 0 : -1;
				}
				continue;
			case 0x09: /* register: the return address moved to another register */
				if (!op_u(p, len, &i, &reg) || !op_u(p, len, &i, &u))
					return -1;
				if (reg == c->ra_reg)
					row->ra = -1;
				continue;
			case 0x0a: /* remember_state */
				if (depth == GIL_ARRAY_SIZE(stack))
					return -1;
				stack[depth++] = *row;
				continue;
			case 0x0b: /* restore_state */
				if (!depth)
					return -1;
				*row = stack[--depth];
				continue;
			case 0x0c: /* def_cfa (_sf) */
			case 0x12:
				if (!op_u(p, len, &i, &reg) ||
				    !op_off(p, len, &i, op == 0x12, c->data_align, &off))
					return -1;
				row->cfa_reg = reg;
				row->cfa_off = off;
				row->cfa_expr = false;
				continue;
			case 0x0d: /* def_cfa_register */
				if (!op_u(p, len, &i, &reg))
					return -1;
				row->cfa_reg = reg;
				continue;
			case 0x0e: /* def_cfa_offset (_sf) */
			case 0x13:
				if (!op_off(p, len, &i, op == 0x13, c->data_align, &off))
					return -1;
				row->cfa_off = off;
				continue;
			case 0x0f: /* def_cfa_expression, expression, val_expression */
			case 0x10:
			case 0x16:
				if (op != 0x0f && !op_u(p, len, &i, &reg))
					return -1;
				if (op != 0x0f && reg == c->ra_reg)
					row->ra = -1;
				if (!op_u(p, len, &i, &u) || u > len - i)
					return -1;
				i += u;
				if (op == 0x0f)
					row->cfa_expr = true;
				continue;
			case 0x2e: /* GNU_args_size */
				if (!op_u(p, len, &i, &u))
					return -1;
				continue;
			default:
				return -1;
			}
		}
		*loc += delta * c->code_align;
		if (*loc > pc)
			return 1;
	}
	return 0;
}

int gil_ehframe_frame(const struct gil_ehframe *eh, uint64_t pc, unsigned int sp_reg,
		      struct gil_frame_rule *out)
{
	struct cfa_row row, init;
	struct fde f;
	uint64_t loc;

	if (fde_find(eh, pc, true, &f) < 0)
		return -1;
	memset(&row, 0, sizeof(row));
	row.ra = 0;
	loc = f.start;
	if (cfa_run(&f.cie, f.cie.init, f.cie.init_len, &loc, UINT64_MAX, &row, NULL) < 0)
		return -1;
	init = row;
	loc = f.start;
	if (cfa_run(&f.cie, f.prog, f.prog_len, &loc, pc, &row, &init) < 0)
		return -1;
	if (row.cfa_expr || row.cfa_reg != sp_reg || row.ra < 0 || row.cfa_off < 0)
		return -1;
	out->start = f.start;
	out->end = f.end;
	out->cfa_off = row.cfa_off;
	out->ra_saved = row.ra == 1;
	out->ra_off = row.ra_off;
	return 0;
}

int gil_ehframe_nth(const struct gil_ehframe *eh, uint64_t k, uint64_t *start, uint64_t *end)
{
	uint64_t s;
	bool entry;

	if (k >= eh->nr_fde)
		return -1;
	s = eh->hdr + (uint64_t)(int64_t)(int32_t)gil_elf_u32(eh->table + k * 8, true);
	return gil_ehframe_fde(eh, s, false, start, end, &entry);
}

/* Find .eh_frame_hdr (PT_GNU_EH_FRAME) and its sorted table; nr_fde stays 0 without one. */
void gil_ehframe_open(struct gil_ehframe *eh, Elf *obj, uint64_t obj_size)
{
	uint64_t count, ptr;
	const uint8_t *p;
	GElf_Phdr ph;
	size_t i, n, k;

	memset(eh, 0, sizeof(*eh));
	eh->obj = obj;
	eh->obj_size = obj_size;
	eh->raw = (const uint8_t *)elf_rawfile(obj, &eh->raw_size);
	if (elf_getphdrnum(eh->obj, &n))
		return;
	for (i = 0; i < n; i++)
		if (gelf_getphdr(eh->obj, (int)i, &ph) && ph.p_type == PT_GNU_EH_FRAME)
			break;
	if (i == n || ph.p_memsz < 12)
		return;
	p = gil_ehframe_bytes(eh, ph.p_vaddr, 4);
	/* version 1; the table as datarel sdata4 pairs, as GNU ld and lld write it */
	if (!p || p[0] != 1 || p[3] != (PE_DATAREL | PE_SDATA4))
		return;
	p = gil_ehframe_bytes(eh, ph.p_vaddr, ph.p_memsz);
	if (!p)
		return;
	k = 4;
	if (read_enc(p + k, ph.p_memsz - k, p[1], ph.p_vaddr + k, ph.p_vaddr, true, &ptr, &n))
		return;
	k += n;
	if (read_enc(p + k, ph.p_memsz - k, p[2], ph.p_vaddr + k, ph.p_vaddr, true, &count, &n))
		return;
	k += n;
	if (count > (ph.p_memsz - k) / 8)
		return;
	eh->hdr = ph.p_vaddr;
	eh->table = p + k;
	eh->nr_fde = count;
}

