// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The last word on a probe site, whatever named it: a symbol table, DWARF, a debug file, a
 * debuginfod server or the object cache. Each of those can be wrong or forged (a user's copy of
 * a system file with its build-id, a debug file that matches the build-id and lies about the
 * rest), and a uprobe written into the middle of an instruction corrupts it in every process
 * that maps the file. So every site is checked against the code of the file itself, read from
 * the descriptor of exactly the mapped file:
 *
 *  1. it lies in an executable segment of that file, at the file offset that segment gives;
 *  2. the file's own frame descriptions (.eh_frame_hdr) place it inside one function, whose
 *     start they give: the linker wrote them from the code, and unwinding depends on them;
 *  3. a function's entry (a site a uretprobe may share) is that function's first instruction,
 *     or the documented step past it: endbr64 on x86-64, bti c / bti jc on AArch64;
 *  4. any other site (the entry or exit of an inlined copy) is reached by decoding the
 *     function's instructions from its start: x86-64's lengths by x86insn.c, which stops at
 *     what it does not know (the site is then refused, not guessed); AArch64's are 4 bytes.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stdio.h>
#include <string.h>

#include "ehframe.h"
#include "symbols.h"
#include "x86insn.h"

/* Refused: "<symbol> at 0x<addr>: @what" into @why. */
static int refuse(char *why, size_t len, const struct gil_site *s, const char *what)
{
	if (why && len)
		snprintf(why, len, "%s at 0x%llx: %s", s->symbol ? s->symbol : gil_fn_name(s->fn),
			 (unsigned long long)s->addr, what);
	return 1;
}

/* Is the step over @skipped bytes at the function start @p one the rule allows? */
static bool entry_step(enum gil_arch arch, const uint8_t *p, uint64_t avail, unsigned int skipped)
{
	static const uint8_t endbr64[4] = { 0xf3, 0x0f, 0x1e, 0xfa };
	static const uint8_t bti_c[4] = { 0x5f, 0x24, 0x03, 0xd5 };
	static const uint8_t bti_jc[4] = { 0xdf, 0x24, 0x03, 0xd5 };

	if (!skipped)
		return true;
	if (skipped != 4 || avail <= 4)
		return false;
	if (arch == GIL_ARCH_X86_64)
		return !memcmp(p, endbr64, 4);
	if (arch == GIL_ARCH_AARCH64)
		return !memcmp(p, bti_c, 4) || !memcmp(p, bti_jc, 4);
	return false;
}

int gil_site_prove(Elf *obj, uint64_t obj_size, const struct gil_site *s, char *why, size_t len)
{
	uint64_t start, end, base, pos;
	struct gil_ehframe eh;
	enum gil_arch arch;
	struct gil_insn in;
	const uint8_t *code;
	GElf_Phdr ph;
	bool entry;

	if (why && len)
		why[0] = '\0';
	arch = gil_arch_of(obj);
	if (arch != GIL_ARCH_X86_64 && arch != GIL_ARCH_AARCH64)
		return refuse(why, len, s, "no instruction decoder for this machine");
	/* 1: in an executable segment, at the offset it gives, inside the file */
	if (!s->addr || s->skipped > s->addr || gil_elf_load_of(obj, s->addr, &ph) ||
	    !(ph.p_flags & PF_X) || ph.p_offset > obj_size || ph.p_filesz > obj_size - ph.p_offset ||
	    s->addr - ph.p_vaddr >= ph.p_filesz ||
	    s->offset != s->addr - ph.p_vaddr + ph.p_offset)
		return refuse(why, len, s, "not in an executable segment of the file");
	/* 2: inside one function, by the file's own frame descriptions */
	gil_ehframe_open(&eh, obj, obj_size);
	if (!eh.nr_fde)
		return refuse(why, len, s, "the file has no .eh_frame_hdr to find its function by");
	base = s->addr - s->skipped;
	if (gil_ehframe_fde(&eh, base, true, &start, &end, &entry))
		return refuse(why, len, s, "in no function the file's frame descriptions know");
	if (s->addr >= end)
		return refuse(why, len, s, "past the end of its function");
	code = gil_ehframe_bytes(&eh, start, end - start);
	if (!code)
		return refuse(why, len, s, "its function's code is not all in the file");
	/* 3: an entry is its function's first instruction, or the step past the landing pad */
	if (s->retprobe || (s->role == GIL_SITE_ENTRY && s->size)) {
		if (base != start || !entry)
			return refuse(why, len, s, "not the start of a function");
		if (!entry_step(arch, code, end - start, s->skipped))
			return refuse(why, len, s, "steps over something other than endbr64/bti");
		return 0;
	}
	/* 4: an instruction boundary, decoded from the function's start */
	if (arch == GIL_ARCH_AARCH64)
		return (s->addr - start) % 4 ? refuse(why, len, s, "not on an instruction boundary") : 0;
	for (pos = start; pos < s->addr; pos += in.len)
		if (gil_x86_64_decode(code + (pos - start), end - pos, pos, &in) || !in.len)
			return refuse(why, len, s, "an instruction before it cannot be decoded");
	if (pos != s->addr)
		return refuse(why, len, s, "inside an instruction, not at its start");
	return 0;
}
