/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ELF symbol lookup for the GIL functions: which sites to probe in one file. */
#ifndef GIL_SYMBOLS_H
#define GIL_SYMBOLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "elf.h"

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

/* What the entry of an exported function holding an inlined drop_gil stands for. */
enum gil_host {
	GIL_HOST_NONE = 0, /* not a host: the GIL function itself */
	GIL_HOST_ALWAYS, /* every call releases the GIL (PyEval_SaveThread) */
	GIL_HOST_ON_REQUEST, /* a call releases it when the thread's drop request is set at entry
				(_Py_HandlePending): the recorder keeps only those hits */
};

/* One probe site: an instruction boundary inside the object's executable segment. */
struct gil_site {
	enum gil_func fn;
	enum gil_site_role role;
	char *symbol; /* as found: "take_gil", "take_gil.constprop.0", ...; for an inlined copy
			 "drop_gil@PyEval_SaveThread" (the function it is inlined in) */
	uint64_t addr; /* where the probe goes: st_value + skipped (virtual address) */
	uint64_t offset; /* file offset for the uprobe: addr - p_vaddr + p_offset */
	uint64_t size; /* st_size; 0 for a site inside an inlined copy */
	const char *method; /* "symtab", "dynsym", "debuglink", "build-id", "minidebuginfo",
			       "dwarf-inline", "callgraph", "code-inline", "exported-host",
			       "exported-fallback" */
	bool retprobe; /* a uretprobe can go here (a real function entry) */
	bool approximate; /* not the GIL function itself (e.g. PyEval_SaveThread fallback) */
	unsigned int skipped; /* bytes stepped over at the function's entry: 4 for an endbr64,
				 which the kernel single-steps; the stack is unchanged there */
	enum gil_host host; /* an exported function's entry standing for an inlined drop_gil */
};

/* What kind of interpreter an object belongs to, from the symbols it exports. */
enum gil_python_kind {
	GIL_PY_UNKNOWN = 0, /* not a Python, or nothing says which */
	GIL_PY_CPYTHON, /* CPython 3 with a GIL */
	GIL_PY_FREE_THREADED, /* CPython built with Py_GIL_DISABLED (3.13t, 3.14t) */
	GIL_PY_CPYTHON2, /* Python 2: its GIL is a plain lock, no take_gil */
	GIL_PY_PYPY, /* PyPy: no take_gil */
};

struct gil_symbols {
	char *path; /* the object as opened (e.g. /proc/PID/root/usr/lib/libpython3.12.so.1.0) */
	char build_id[2 * 64 + 1]; /* hex; "" when the object has none */
	char *symbols_from; /* the file whose symbol table gave the sites */
	char *dwarf_from; /* the file whose DWARF gave the inlined copies; NULL: none read */
	struct gil_elf *dwarf_elf; /* that file, still open, when it is a debug file (attribution
				      reads it there); NULL when the DWARF is the object's */
	struct gil_site *sites; /* function entries first, then inlined entries, then exits */
	size_t nr_sites;
	bool has_take; /* at least one take_gil site */
	bool has_drop;
	enum gil_python_kind kind;
	char version[32]; /* "3.12.1" (Py_Version, else the name and a pyenv prefix); "" unknown */
	bool approximate; /* some sites stand in for the GIL functions: releases are approximate */
	char *reason; /* one line when the sites are approximate or absent for a Python: why, and
			 what would fix it (e.g. "apt-get install python3.11-dbg"); else NULL */
	size_t nr_inlined; /* inlined copies probed through DWARF */
	size_t nr_unproven; /* inlined copies found but not probed: no provable entry */
	size_t nr_over_cap; /* sites past GIL_MAX_SITES: not probed (reason says so) */
	size_t nr_callgraph; /* sites found from the code (callgraph.c): no table named them */
	size_t nr_refused; /* sites named (by a table, DWARF, a debug file) that the code of the
			      file did not prove (gil_site_prove): not probed, said in ->note */
	char *note; /* one line on what was tried and failed (a debuginfod server), or NULL */
	bool from_debuginfod; /* sites or DWARF came from a file a debuginfod server gave */
};

#define GIL_MAX_SITES 64 /* probe sites per file: 12 in an LTO build with every inlined copy */

/**
 * gil_symbol_match - does @name name an entry point of a GIL function?
 * Accepts "take_gil"/"drop_gil" and compiler clones (.constprop.N, .lto_priv.N, .isra.N,
 * .llvm.N and chains of them); refuses fragments (.cold, .part.N) and other names.
 * Sets *@fn when it returns true.
 */
bool gil_symbol_match(const char *name, enum gil_func *fn);

/* "take_gil" or "drop_gil". */
const char *gil_fn_name(enum gil_func fn);

/**
 * gil_symbols_read - read the GIL function sites of the ELF object at @path.
 * When the object has no symbol table naming them, looks for a debug file whose build-id
 * matches (.gnu_debuglink, /usr/lib/debug/.build-id/xx/rest.debug, under @root when not NULL,
 * e.g. "/proc/PID/root"), and .gnu_debugdata. With DWARF (libdw) in the object or its debug
 * file, adds the entries and exits of inlined copies (method "dwarf-inline", see dwarfsites.c).
 * Function entries starting with endbr64 are probed after it (x86-64).
 *
 * A CPython 3 without symbols for either function falls back to the exported
 * PyEval_RestoreThread / PyEval_SaveThread (method "exported-fallback", approximate); the
 * free-threaded build, Python 2 and PyPy get no sites. In these cases, and for a stripped
 * Python that has neither, ->reason says why in one line and names the package that fixes it.
 *
 * Returns 0 and *@out (free with gil_symbols_free), or -1 with a one-line reason in @err.
 * An object that defines neither function is not an error: *@out has nr_sites == 0.
 */
int gil_symbols_read(const char *path, const char *root, struct gil_symbols **out, char *err,
		     size_t errlen);

/**
 * gil_symbols_read_elf - gil_symbols_read() of an object already open in @obj (not taken):
 * everything read of the object comes from that descriptor, whatever @path names now. @path
 * is what the results and messages call the object. With GIL_SYMS_DEBUGINFOD in @flags, an
 * object without a local debug file gets one from debuginfod (method "debuginfod").
 */
int gil_symbols_read_elf(struct gil_elf *obj, const char *path, const char *root,
			 unsigned int flags, struct gil_symbols **out, char *err, size_t errlen);

/* gil_symbols_read_elf() flags */
#define GIL_SYMS_DEBUGINFOD 1 /* no debug file on the machine: ask DEBUGINFOD_URLS' servers */

void gil_symbols_free(struct gil_symbols *syms);

/**
 * gil_site_prove - may a probe go at @s in the object open as @obj (@obj_size bytes, read from
 * the descriptor of exactly the mapped file)? Whatever named the site, it must lie in an
 * executable segment at the offset that segment gives, inside a function the file's
 * .eh_frame_hdr delimits; an entry must be that function's first instruction (or the step past
 * endbr64 / bti c), any other site an instruction boundary decoded from the function's start.
 * Returns 0 when proven, 1 when not, with "<symbol> at 0x<addr>: <why>" in @why.
 */
int gil_site_prove(Elf *obj, uint64_t obj_size, const struct gil_site *s, char *why, size_t len);

#endif /* GIL_SYMBOLS_H */
