/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ELF symbol lookup for the GIL functions: which sites to probe in one file. */
#ifndef GIL_SYMBOLS_H
#define GIL_SYMBOLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <gelf.h>

enum gil_func {
	GIL_FN_TAKE = 0,
	GIL_FN_DROP = 1,
	GIL_FN_NR,
};

/*
 * What a hit at a site means. ENTRY: the function starts (a real entry, or the first
 * instruction of an inlined copy). EXIT: the function is done (the first instruction after an
 * inlined copy); a plain uprobe that stands in for the return of a copy that has none.
 */
enum gil_site_role {
	GIL_SITE_ENTRY = 0,
	GIL_SITE_EXIT = 1,
};

/* One probe site: an instruction boundary inside the object's executable segment. */
struct gil_site {
	enum gil_func fn;
	enum gil_site_role role;
	char *symbol; /* as found: "take_gil", "take_gil.constprop.0", ... */
	uint64_t addr; /* st_value (virtual address in the object) */
	uint64_t offset; /* file offset for the uprobe: addr - p_vaddr + p_offset */
	uint64_t size; /* st_size */
	const char *method; /* "symtab", "dynsym", "debuglink", "build-id", "minidebuginfo",
			       "dwarf-inline", "exported-fallback" */
	bool retprobe; /* a uretprobe can go here (a real function entry) */
	bool approximate; /* not the GIL function itself (e.g. PyEval_SaveThread fallback) */
};

struct gil_symbols {
	char *path; /* the object as opened (e.g. /proc/PID/root/usr/lib/libpython3.12.so.1.0) */
	char build_id[2 * 64 + 1]; /* hex; "" when the object has none */
	char *symbols_from; /* the file whose symbol table gave the sites */
	struct gil_site *sites;
	size_t nr_sites;
	bool has_take; /* at least one take_gil site */
	bool has_drop;
};

/**
 * gil_symbol_match - does @name name an entry point of a GIL function?
 * Accepts "take_gil"/"drop_gil" and compiler clones (.constprop.N, .lto_priv.N, .isra.N,
 * .llvm.N and chains of them); refuses fragments (.cold, .part.N) and other names.
 * Sets *@fn when it returns true.
 */
bool gil_symbol_match(const char *name, enum gil_func *fn);

/**
 * gil_elf_addr_to_offset - map virtual address @addr to a file offset through the PT_LOAD
 * program headers of @elf. Sets *@exec when the segment is executable.
 * Returns 0, or -1 when no PT_LOAD segment holds @addr.
 */
int gil_elf_addr_to_offset(Elf *elf, uint64_t addr, uint64_t *offset, bool *exec);

/**
 * gil_elf_build_id - the GNU build-id note of @elf as lowercase hex into @buf (size >= 129).
 * Returns its length in bytes, 0 if none, -1 on error.
 */
int gil_elf_build_id(Elf *elf, char *buf, size_t len);

/**
 * gil_symbols_read - read the GIL function sites of the ELF object at @path.
 * When the object has no symbol table naming them, looks for a debug file whose build-id
 * matches (.gnu_debuglink, /usr/lib/debug/.build-id/xx/rest.debug, under @root when not NULL,
 * e.g. "/proc/PID/root"), and .gnu_debugdata.
 * Returns 0 and *@out (free with gil_symbols_free), or -1 with a one-line reason in @err.
 * An object that defines neither function is not an error: *@out has nr_sites == 0.
 */
int gil_symbols_read(const char *path, const char *root, struct gil_symbols **out, char *err,
		     size_t errlen);

void gil_symbols_free(struct gil_symbols *syms);

#endif /* GIL_SYMBOLS_H */
