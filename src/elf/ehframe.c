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

/*
 * The pointer encoding a CIE at @cie gives its FDEs ('R' augmentation), and in *@z whether its
 * FDEs carry augmentation data; -1 when unreadable.
 */
static int cie_encoding(const struct gil_ehframe *eh, uint64_t cie, bool *z)
{
	const uint8_t *p, *aug;
	uint64_t v;
	size_t n, i, len, k;
	uint8_t enc = PE_ABSPTR;

	p = gil_ehframe_bytes(eh, cie, 8);
	if (!p)
		return -1;
	len = gil_elf_u32(p, true);
	if (len == 0xffffffff || len < 8 || len > 4096 || gil_elf_u32(p + 4, true) != 0)
		return -1;
	p = gil_ehframe_bytes(eh, cie, 4 + len);
	if (!p)
		return -1;
	i = 9; /* length, CIE id, version */
	aug = p + i;
	while (i < 4 + len && p[i])
		i++;
	if (i >= 4 + len)
		return -1;
	i++;
	*z = aug[0] == 'z';
	if (aug[0] != 'z')
		return aug[0] ? -1 : PE_ABSPTR;
	/* code alignment, data alignment, return register (uleb in version 3), augmentation length */
	for (k = 0; k < 4; k++) {
		if (k == 2 && p[8] == 1) {
			i++;
			continue;
		}
		n = uleb(p + i, 4 + len - i, &v);
		if (!n)
			return -1;
		i += n;
	}
	for (k = 1; aug[k]; k++) {
		if (i >= 4 + len)
			return -1;
		if (aug[k] == 'R') {
			enc = p[i++];
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
	return enc;
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
	uint64_t lo, hi, mid, start, want, fde, cie, range, at, len, aug;
	const uint8_t *p;
	size_t n, k;
	bool z = false;
	uint8_t op;
	int enc;

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
	enc = cie_encoding(eh, cie, &z);
	if (enc < 0)
		return -1;
	at = fde + 8;
	k = 8;
	/* the table and the FDE must agree on where it starts */
	if (read_enc(p + k, 4 + len - k, (uint8_t)enc, at, 0, true, &start, &n) ||
	    start != want)
		return -1;
	k += n;
	if (read_enc(p + k, 4 + len - k, (uint8_t)(enc & 0x0f), 0, 0, false, &range, &n) ||
	    !range || range > (1u << 24))
		return -1;
	k += n;
	if (z) {
		n = uleb(p + k, 4 + len - k, &aug);
		if (!n || aug > 4 + len - k - n)
			return -1;
		k += n + aug;
	}
	/* the first instruction: end, nop, or an advance (DW_CFA_advance_loc, _loc1/2/4) */
	op = k < 4 + len ? p[k] : 0;
	*entry = op == 0 || (op & 0xc0) == 0x40 || (op >= 0x02 && op <= 0x04);
	if (addr - start >= range)
		return -1; /* in a gap between two functions' descriptions */
	*start_out = start;
	*end = start + range;
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

