// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Probe sites of one object: function entries from symbol tables, entries and exits of inlined
 * copies from DWARF, and the exported stand-ins of the approximate fallback. A site is only ever
 * an instruction start wholly inside an executable segment of the probed file.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "dwarfsites.h"
#include "scan.h"
#include "x86insn.h"

/* A site is a whole function inside one executable segment, and inside the file. */
int gil_sites_offset(const struct scan *sc, uint64_t addr, uint64_t size, uint64_t *offset)
{
	GElf_Phdr ph;

	if (!addr || !size)
		return -1;
	if (gil_elf_load_of(sc->obj, addr, &ph) || !(ph.p_flags & PF_X))
		return -1;
	if (size > ph.p_filesz - (addr - ph.p_vaddr))
		return -1;
	if (ph.p_offset > sc->obj_size || ph.p_filesz > sc->obj_size - ph.p_offset)
		return -1;
	*offset = addr - ph.p_vaddr + ph.p_offset;
	return 0;
}

/* Add a copy of @tmpl. The first site at an address wins: .symtab before .dynsym, entries before
 * exits. */
/*
 * Remember @addr among the addresses offered as sites: 1 when it is new, 0 when seen before,
 * -1 on ENOMEM. A hash set: a file may name tens of thousands of clones.
 */
static int seen_add(struct scan *sc, uint64_t addr)
{
	uint64_t *v, h;
	size_t cap, i, k;

	if (2 * (sc->nr_seen + 1) > sc->seen_cap) {
		cap = sc->seen_cap ? 2 * sc->seen_cap : 64;
		v = calloc(cap, sizeof(*v));
		if (!v)
			return -1;
		for (i = 0; i < sc->seen_cap; i++) {
			if (!sc->seen[i])
				continue;
			for (k = (sc->seen[i] * 0x9e3779b97f4a7c15ull) >> 32 & (cap - 1); v[k];
			     k = (k + 1) & (cap - 1))
				;
			v[k] = sc->seen[i];
		}
		free(sc->seen);
		sc->seen = v;
		sc->seen_cap = cap;
	}
	/* addresses are never 0 here (gil_sites_offset refuses it): 0 marks a free slot */
	h = addr ? addr : 1;
	for (k = (h * 0x9e3779b97f4a7c15ull) >> 32 & (sc->seen_cap - 1); sc->seen[k];
	     k = (k + 1) & (sc->seen_cap - 1))
		if (sc->seen[k] == h)
			return 0;
	sc->seen[k] = h;
	sc->nr_seen++;
	return 1;
}

static int add_site(struct scan *sc, const struct gil_site *tmpl)
{
	struct gil_symbols *syms = sc->syms;
	struct gil_site *s;
	int r;

	/* The same function shows up in .symtab and .dynsym, or under an alias: probe it once. */
	r = seen_add(sc, tmpl->addr);
	if (r <= 0)
		return r;
	/*
	 * Real builds have a few dozen sites at most; a file that names thousands of clones
	 * would cost a probe, a perf event per CPU and thread, and setup time for each.
	 */
	if (syms->nr_sites >= GIL_MAX_SITES) {
		syms->nr_over_cap++;
		return 0;
	}
	if (gil_grow(&syms->sites, &sc->cap, syms->nr_sites + 1, sizeof(*syms->sites)) < 0)
		return -1;
	s = &syms->sites[syms->nr_sites];
	*s = *tmpl;
	s->symbol = strdup(tmpl->symbol);
	if (!s->symbol)
		return -1;
	syms->nr_sites++;
	return 0;
}

const char *gil_sites_func_at(Elf *elf, uint64_t addr, bool exported)
{
	const char *best = NULL, *name;
	Elf_Scn *scn = NULL;
	Elf_Data *data;
	GElf_Shdr sh;
	GElf_Sym sym;
	size_t i, n;

	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh) || !sh.sh_entsize ||
		    (sh.sh_type != SHT_DYNSYM && (exported || sh.sh_type != SHT_SYMTAB)) ||
		    (best && sh.sh_type == SHT_DYNSYM))
			continue;
		data = elf_getdata(scn, NULL);
		if (!data)
			continue;
		n = sh.sh_size / sh.sh_entsize;
		for (i = 0; i < n; i++) {
			if (!gelf_getsym(data, (int)i, &sym))
				break;
			if (GELF_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_shndx == SHN_UNDEF ||
			    sym.st_value != addr)
				continue;
			name = elf_strptr(elf, sh.sh_link, sym.st_name);
			best = name ? name : "";
			if (sh.sh_type == SHT_SYMTAB)
				return best;
			break;
		}
	}
	return best;
}

int gil_sites_add(struct scan *sc, const struct gil_site *tmpl)
{
	return add_site(sc, tmpl);
}

/*
 * Bytes to step over at a function entry at file offset @offset: 4 when it starts with
 * endbr64 (x86-64 -fcf-protection), which the kernel single-steps at four times the cost of
 * the push that follows. Calls land on the entry and run endbr64 as a no-op, so a probe
 * after it sees every call, and the return address is still at the top of the stack.
 * On AArch64 a `bti c` (or `bti jc`) landing pad is stepped over the same way, and the link
 * register is untouched there; a `paciasp` after it is not: the return probe must replace
 * the return address before it is signed, or the function's `autiasp` would fault.
 */
static unsigned int entry_skip(const struct scan *sc, uint64_t offset, uint64_t size)
{
	static const unsigned char endbr64[4] = { 0xf3, 0x0f, 0x1e, 0xfa };
	static const unsigned char bti_c[4] = { 0x5f, 0x24, 0x03, 0xd5 };
	static const unsigned char bti_jc[4] = { 0xdf, 0x24, 0x03, 0xd5 };
	Elf_Data *d;

	if (sc->aarch64 && size > 4) {
		d = elf_getdata_rawchunk(sc->obj, (int64_t)offset, 4, ELF_T_BYTE);
		if (d && d->d_size == 4 &&
		    (!memcmp(d->d_buf, bti_c, 4) || !memcmp(d->d_buf, bti_jc, 4)))
			return 4;
		return 0;
	}
	if (!sc->x86_64 || size <= sizeof(endbr64))
		return 0;
	d = elf_getdata_rawchunk(sc->obj, (int64_t)offset, sizeof(endbr64), ELF_T_BYTE);
	if (!d || d->d_size != sizeof(endbr64) || memcmp(d->d_buf, endbr64, sizeof(endbr64)))
		return 0;
	return sizeof(endbr64);
}

/* A whole function's entry: a uretprobe can go there too. */
int gil_sites_add_func(struct scan *sc, enum gil_func fn, const char *name, uint64_t addr,
			 uint64_t offset, uint64_t size, const char *method, bool approximate)
{
	struct gil_site t = {
		.fn = fn,
		.role = GIL_SITE_ENTRY,
		.symbol = (char *)name,
		.addr = addr,
		.offset = offset,
		.size = size,
		.method = method,
		/* Only whole-function entries get here, so the return address is sane. */
		.retprobe = true,
		.approximate = approximate,
	};

	t.skipped = entry_skip(sc, offset, size);
	t.addr += t.skipped;
	t.offset += t.skipped;
	return add_site(sc, &t);
}

static int scan_table(struct scan *sc, Elf *symelf, Elf_Scn *scn, const GElf_Shdr *sh,
		      const char *method)
{
	Elf_Data *data;
	const char *name;
	enum gil_func fn;
	uint64_t offset;
	GElf_Sym sym;
	size_t i, n;

	data = elf_getdata(scn, NULL);
	if (!data || !data->d_buf || !sh->sh_entsize)
		return 0;
	n = sh->sh_size / sh->sh_entsize;
	for (i = 0; i < n; i++) {
		if (!gelf_getsym(data, (int)i, &sym))
			break;
		/* UNDEF FUNCs of a non-PIE executable carry PLT addresses: not the function. */
		if (GELF_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_shndx == SHN_UNDEF)
			continue;
		name = elf_strptr(symelf, sh->sh_link, sym.st_name);
		if (!name || !gil_symbol_match(name, &fn))
			continue;
		if (gil_sites_offset(sc, sym.st_value, sym.st_size, &offset))
			continue;
		if (gil_sites_add_func(sc, fn, name, sym.st_value, offset, sym.st_size, method, false))
			return -1;
	}
	return 0;
}

/*
 * Collect sites from the symbol tables of @symelf. .symtab goes first so that it wins the
 * deduplication. @method NULL: name the table ("symtab"/"dynsym"). Returns -1 only on ENOMEM.
 */
int gil_sites_scan_tables(struct scan *sc, Elf *symelf, const char *method, bool *has_symtab)
{
	static const struct {
		Elf64_Word type;
		const char *method;
	} tables[] = { { SHT_SYMTAB, "symtab" }, { SHT_DYNSYM, "dynsym" } };
	Elf_Scn *scn;
	GElf_Shdr sh;
	size_t t;

	if (has_symtab)
		*has_symtab = false;
	for (t = 0; t < GIL_ARRAY_SIZE(tables); t++) {
		for (scn = NULL; (scn = elf_nextscn(symelf, scn));) {
			if (!gelf_getshdr(scn, &sh) || sh.sh_type != tables[t].type)
				continue;
			if (has_symtab && sh.sh_type == SHT_SYMTAB)
				*has_symtab = true;
			if (scan_table(sc, symelf, scn, &sh, method ? method : tables[t].method))
				return -1;
		}
	}
	return 0;
}

/*
 * Entries and exits of the inlined copies that the DWARF of @dwelf (the object itself or its
 * debug file @from) describes. Returns 1 when the file had DWARF, 0 when not, -1 on ENOMEM.
 */
int gil_sites_scan_dwarf(struct scan *sc, struct gil_elf *dwelf, const char *from)
{
	struct gil_symbols *syms = sc->syms;
	const struct gil_dwarf_site *d;
	struct gil_dwarf *dw = NULL;
	struct gil_site t;
	size_t i, before;
	int ret = -1;

	if (gil_dwarf_read(dwelf, sc->obj, &dw, NULL, 0))
		return -1;
	if (!dw->has_dwarf) {
		ret = 0;
		goto out;
	}
	sc->dwarf_done = true;
	syms->dwarf_from = strdup(from);
	if (!syms->dwarf_from)
		goto out;
	syms->nr_unproven += dw->unproven;
	for (i = 0; i < dw->nr_sites; i++) {
		d = &dw->sites[i];
		memset(&t, 0, sizeof(t));
		/* One byte is enough: the address is an instruction start (a line-table row). */
		if (gil_sites_offset(sc, d->addr, 1, &t.offset)) {
			syms->nr_unproven += d->role == GIL_SITE_ENTRY;
			continue;
		}
		t.fn = d->fn;
		t.role = d->role;
		t.symbol = d->where;
		t.addr = d->addr;
		t.method = "dwarf-inline";
		before = syms->nr_sites;
		if (add_site(sc, &t))
			goto out;
		if (d->role == GIL_SITE_ENTRY && syms->nr_sites > before)
			syms->nr_inlined++;
	}
	ret = 1;
out:
	gil_dwarf_free(dw);
	return ret;
}

/* Targets of the calls and jumps in the exported function @e; 1 when one is @target. */
static int calls_to(struct scan *sc, const struct export *e, uint64_t target)
{
	const uint8_t *code;
	struct gil_insn in;
	uint64_t off, pos;
	Elf_Data *d;

	if (!sc->x86_64 || gil_sites_offset(sc, e->addr, e->size, &off))
		return -1;
	d = elf_getdata_rawchunk(sc->obj, (int64_t)off, e->size, ELF_T_BYTE);
	if (!d || d->d_size != e->size)
		return -1;
	code = d->d_buf;
	/* A function's bytes are its instructions: jump tables live in .rodata on x86-64. */
	for (pos = 0; pos < e->size; pos += in.len) {
		if (gil_x86_64_decode(code + pos, e->size - pos, e->addr + pos, &in))
			return -1;
		if ((in.flow == GIL_INSN_CALL || in.flow == GIL_INSN_JUMP ||
		     in.flow == GIL_INSN_BRANCH) && in.target == target)
			return 1;
	}
	return 0;
}

/* Does PyEval_SaveThread call an out-of-line drop_gil? 0 when it calls none: it was inlined. */
int gil_sites_save_calls_drop(struct scan *sc)
{
	const struct gil_site *s;
	size_t i;
	int r, ret = 0;

	for (i = 0; i < sc->syms->nr_sites; i++) {
		s = &sc->syms->sites[i];
		if (s->fn != GIL_FN_DROP || s->role != GIL_SITE_ENTRY || !s->retprobe)
			continue;
		r = calls_to(sc, &sc->save, s->addr - s->skipped);
		if (r)
			return r;
	}
	return ret;
}

void gil_sites_count(struct gil_symbols *syms)
{
	size_t i;

	syms->has_take = syms->has_drop = false;
	for (i = 0; i < syms->nr_sites; i++) {
		if (syms->sites[i].fn == GIL_FN_TAKE)
			syms->has_take = true;
		else
			syms->has_drop = true;
	}
}

/* Add PyEval_RestoreThread/PyEval_SaveThread entries for the functions without a site. */
int gil_sites_add_exported(struct scan *sc, bool take, bool drop)
{
	uint64_t off;

	if (take && !gil_sites_offset(sc, sc->restore.addr, sc->restore.size, &off) &&
	    gil_sites_add_func(sc, GIL_FN_TAKE, "PyEval_RestoreThread", sc->restore.addr, off,
			  sc->restore.size, "exported-fallback", true))
		return -1;
	if (drop && !gil_sites_offset(sc, sc->save.addr, sc->save.size, &off) &&
	    gil_sites_add_func(sc, GIL_FN_DROP, "PyEval_SaveThread", sc->save.addr, off, sc->save.size,
			  "exported-fallback", true))
		return -1;
	gil_sites_count(sc->syms);
	return 0;
}
