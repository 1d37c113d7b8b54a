/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Private to src/elf: the state of one gil_symbols_read() while it collects sites from the
 * object, its debug files and DWARF, and the steps that share it (sites.c, debugfile.c,
 * classify.c, symbols.c).
 */
#ifndef GIL_ELF_SCAN_H
#define GIL_ELF_SCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "elf.h"
#include "symbols.h"

/* An exported function of the C API, as the object's .dynsym defines it. */
struct export {
	uint64_t addr, size;
	bool found;
};

/* State shared while collecting sites from one or more symbol tables. */
struct scan {
	struct gil_symbols *syms;
	size_t cap;
	Elf *obj; /* the probed object: its program headers decide every offset */
	uint64_t obj_size;
	bool x86_64;
	bool aarch64;
	bool capi; /* the object exports the C API (PyEval_SaveThread): worth reading DWARF */
	bool dwarf_done; /* DWARF was read (from the object or a debug file) */
	bool stripped; /* the object has no .symtab */
	bool debuginfod; /* may ask debuginfod servers (GIL_SYMS_DEBUGINFOD) */
	struct export save, restore; /* PyEval_SaveThread, PyEval_RestoreThread */
	uint64_t *seen; /* addresses offered as sites (a hash set, 0 free) */
	size_t seen_cap, nr_seen;
	char version[16]; /* "3.11", from the file name or Py_Version; "" if unknown */
	uint32_t hexversion; /* Py_Version (PY_VERSION_HEX, 3.11+); 0 when not exported */
	char refused[256]; /* why the first site refused by gil_site_prove was */
	const char *refused_from; /* the file that named it (NULL: the object) */
};

/* ---- sites.c ---- */

/* The file offset of a whole function at @addr (@size bytes) inside one executable segment. */
int gil_sites_offset(const struct scan *sc, uint64_t addr, uint64_t size, uint64_t *offset);

/* Add a whole function's entry (endbr64 stepped over); -1 on ENOMEM. */
int gil_sites_add_func(struct scan *sc, enum gil_func fn, const char *name, uint64_t addr,
		       uint64_t offset, uint64_t size, const char *method, bool approximate);

/*
 * Collect sites from the symbol tables of @symelf (.symtab first); @method NULL names the
 * table. Sets *@has_symtab when not NULL. Returns -1 only on ENOMEM.
 */
int gil_sites_scan_tables(struct scan *sc, Elf *symelf, const char *method, bool *has_symtab);

/* Inlined copies from the DWARF of @dwelf (read from @from): 1 when it had DWARF, 0, -1. */
int gil_sites_scan_dwarf(struct scan *sc, struct gil_elf *dwelf, const char *from);

/* Does PyEval_SaveThread call an out-of-line drop_gil? 1 yes, 0 no (inlined), -1 unknown. */
int gil_sites_save_calls_drop(struct scan *sc);

/*
 * The name of a function that starts at @addr: by .symtab, else .dynsym, or with @exported by
 * .dynsym only. NULL when none names one ("" when its name cannot be read).
 */
const char *gil_sites_func_at(Elf *elf, uint64_t addr, bool exported);

/* Add one site (an inlined copy's entry or exit) unless its address was offered before. */
int gil_sites_add(struct scan *sc, const struct gil_site *tmpl);

/* Set has_take and has_drop from the sites. */
void gil_sites_count(struct gil_symbols *syms);

/* PyEval_RestoreThread/PyEval_SaveThread entries for the functions without a site. */
int gil_sites_add_exported(struct scan *sc, bool take, bool drop);

/* ---- callgraph.c ---- */

/*
 * Sites of take_gil (@take) and drop_gil (@drop) proven from the code: call targets of the
 * exported GIL functions that .eh_frame delimits and whose code names them. Sets
 * syms->nr_callgraph. Returns -1 only on ENOMEM.
 */
int gil_callgraph_scan(struct scan *sc, bool take, bool drop);

/* ---- copies.c ---- */

/*
 * Inlined copies of drop_gil found from the code (no DWARF was read): an entry at each copy's
 * store to `locked`, an exit after its mutex unlock. Counted in syms->nr_callgraph. Returns -1
 * only on ENOMEM.
 */
int gil_copies_scan(struct scan *sc);

/* ---- debugfile.c ---- */

/* Sites from a debug file matching @obj's build-id (under @root); -1 only on ENOMEM. */
int gil_debug_find(struct scan *sc, Elf *obj, const char *path, const char *root);

/* ---- debuginfod.c (or debuginfod-none.c) ---- */

/* Was giltrace built with libdebuginfod? */
bool gil_debuginfod_supported(void);

/*
 * The debug file of @build_id (hex) from the servers in DEBUGINFOD_URLS: a descriptor of the
 * client's cached copy, its path in @path; -1 with @why (not set, not found, unreachable).
 */
int gil_debuginfod_find(const char *build_id, char *path, size_t pathlen, char *why,
			size_t whylen);

/* ---- classify.c ---- */

/* Which interpreter the object's .dynsym says it is; fills save, restore, capi, version. */
enum gil_python_kind gil_classify(struct scan *sc);

/* "3.11" from the name of an interpreter or its library (python3.11, libpython3.11d.so). */
void gil_version_from_name(const char *path, char *buf, size_t len);

/*
 * The interpreter's full version into @buf: "3.12.1" or "3.15.0a2" from Py_Version, else from
 * the name (@path as the process shows it) and a pyenv prefix; "" when unknown.
 */
void gil_version_full(const struct scan *sc, const char *path, char *buf, size_t len);

/* @path as the process sees it (without the /proc/PID/root prefix), and its last part. */
const char *gil_shown_path(const char *path, const char *root);
const char *gil_shown_base(const char *path);

/* One line naming what installs the object's symbols (malloc'd; NULL on ENOMEM). */
char *gil_fix_hint(const struct scan *sc, const char *root);

#endif /* GIL_ELF_SCAN_H */
