// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * ELF symbol lookup for take_gil/drop_gil. A uprobe at a wrong offset corrupts the traced program,
 * so a site is only ever a FUNC symbol of known name lying wholly inside an executable segment of
 * the object we probe, read from that object or from a debug file proven to match it by build-id.
 * This file runs the steps (sites.c, debugfile.c, classify.c) and settles the fallbacks.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/pyversion.h"
#include "common/util.h"
#include "dwarfsites.h"
#include "scan.h"

/*
 * After the symbol tables and DWARF: the free-threaded build, Python 2 and PyPy get no sites;
 * a CPython without a site for a GIL function gets the exported function around it; an LTO
 * build read without DWARF gets PyEval_SaveThread when drop_gil was inlined into it. Sets the
 * reason line for each. Returns -1 only on ENOMEM.
 */
static int settle(struct scan *sc, const char *path, const char *root)
{
	struct gil_symbols *syms = sc->syms;
	const char *shown = gil_shown_path(path, root);
	char *hint = NULL;
	size_t i;
	bool take, drop;
	int ret = -1;

	gil_sites_count(syms);
	switch (syms->kind) {
	case GIL_PY_FREE_THREADED:
		for (i = 0; i < syms->nr_sites; i++)
			free(syms->sites[i].symbol);
		syms->nr_sites = 0;
		gil_sites_count(syms);
		syms->reason = gil_strfmt("%s is a free-threaded CPython (built with Py_GIL_DISABLED): it has no GIL to record",
				      shown);
		return syms->reason ? 0 : -1;
	case GIL_PY_CPYTHON2:
		syms->reason = gil_strfmt("%s is Python 2: it has no take_gil/drop_gil to probe (giltrace needs CPython 3.6 or later)",
				      shown);
		return syms->reason ? 0 : -1;
	case GIL_PY_PYPY:
		syms->reason = gil_strfmt("%s is PyPy: it has no take_gil/drop_gil to probe (giltrace needs CPython 3.6 or later)",
				      shown);
		return syms->reason ? 0 : -1;
	default:
		break;
	}
	take = !syms->has_take;
	drop = !syms->has_drop;
	/* no table named them: prove them from the code before standing in for them */
	if ((take || drop) && sc->capi && syms->kind == GIL_PY_CPYTHON) {
		if (gil_callgraph_scan(sc, take, drop))
			return -1;
		gil_sites_count(syms);
		take = !syms->has_take;
		drop = !syms->has_drop;
	}
	/* no DWARF named the inlined copies of drop_gil: find them from the code */
	if (!drop && syms->kind == GIL_PY_CPYTHON && gil_copies_scan(sc))
		return -1;
	/*
	 * Both have sites but no DWARF was read: up to 3.12 PyEval_SaveThread calls drop_gil
	 * itself, so when it calls no out-of-line copy, drop_gil was inlined into it (and maybe
	 * elsewhere). From 3.13 it goes through _PyThreadState_Detach: nothing to tell from.
	 * Sites from the code (callgraph.c) have the exported hosts of inlined copies already.
	 */
	if (!take && !drop &&
	    (sc->dwarf_done || syms->nr_callgraph || !sc->save.found ||
	     !gil_pyversion_below(sc->version, 3, 13) || gil_sites_save_calls_drop(sc) != 0))
		return 0; /* exact, as far as anything can tell */
	/*
	 * Unknown kind: only a stripped interpreter or libpython can be one without exports
	 * (not an extension module such as _ctypes.cpython-311-x86_64-linux-gnu.so).
	 */
	if (!syms->nr_sites && syms->kind == GIL_PY_UNKNOWN &&
	    (!sc->stripped || (strncmp(gil_shown_base(shown), "python", 6) &&
			       strncmp(gil_shown_base(shown), "libpython", 9))))
		return 0;
	hint = gil_fix_hint(sc, root);
	if (!hint)
		goto out;
	if (!take && !drop) {
		if (gil_sites_add_exported(sc, false, true))
			goto out;
		syms->approximate = true;
		syms->reason = gil_strfmt("releases are approximate: %s inlines drop_gil into PyEval_SaveThread and %s, so PyEval_SaveThread stands in for the inlined copies; for exact sites, %s%s",
				      shown,
				      gil_dwarf_supported() ? "has no DWARF to find them" :
							      "giltrace was built without libdw",
				      gil_dwarf_supported() ? "" : "rebuild giltrace with libdw and ",
				      hint);
	} else if (sc->capi && syms->kind == GIL_PY_CPYTHON) {
		if (gil_sites_add_exported(sc, take, drop))
			goto out;
		syms->approximate = true;
		syms->reason = gil_strfmt("releases are approximate: %s has no symbols for %s, so %s %s in %s place (forced switches are not seen); for exact sites, %s",
				      shown, take && drop ? "take_gil/drop_gil" : take ? "take_gil" : "drop_gil",
				      take && drop ? "PyEval_RestoreThread/PyEval_SaveThread" :
				      take ? "PyEval_RestoreThread" : "PyEval_SaveThread",
				      take && drop ? "are probed" : "is probed",
				      take && drop ? "their" : "its", hint);
	} else {
		syms->reason = gil_strfmt("%s has no symbols for take_gil/drop_gil and no debug file matching its build-id: %s",
				      shown, hint);
	}
	ret = syms->reason ? 0 : -1;
out:
	free(hint);
	return ret;
}

void gil_symbols_free(struct gil_symbols *syms)
{
	size_t i;

	if (!syms)
		return;
	for (i = 0; i < syms->nr_sites; i++)
		free(syms->sites[i].symbol);
	free(syms->sites);
	free(syms->path);
	free(syms->symbols_from);
	free(syms->dwarf_from);
	if (syms->dwarf_elf)
		gil_elf_close(syms->dwarf_elf);
	free(syms->dwarf_elf);
	free(syms->reason);
	free(syms->note);
	free(syms);
}

/*
 * Keep only the sites the code of the object proves (gil_site_prove). What was refused is
 * counted, and the first refusal kept for refused_note. Before settle(), so that a function
 * left without a site gets what settle gives one, and after it, for what settle added.
 */
static void prove_sites(struct scan *sc)
{
	struct gil_symbols *syms = sc->syms;
	char why[sizeof(sc->refused)];
	size_t i, kept = 0;

	for (i = 0; i < syms->nr_sites; i++) {
		struct gil_site *s = &syms->sites[i];

		if (!gil_site_prove(sc->obj, sc->obj_size, s, why, sizeof(why))) {
			syms->sites[kept++] = *s;
			continue;
		}
		if (!syms->nr_refused++) {
			memcpy(sc->refused, why, sizeof(why));
			sc->refused_from = !strcmp(s->method, "dwarf-inline") ? syms->dwarf_from :
					   syms->symbols_from;
		}
		free(s->symbol);
	}
	syms->nr_sites = kept;
	gil_sites_count(syms);
}

/* The refusals in ->note, naming the file that named the first one. -1 only on ENOMEM. */
static int refused_note(struct scan *sc, const char *path, const char *root)
{
	struct gil_symbols *syms = sc->syms;
	char *note;

	if (!syms->nr_refused)
		return 0;
	note = gil_strfmt("%zu probe site%s named by %s refused, not probed: %s%s%s",
			  syms->nr_refused, syms->nr_refused == 1 ? "" : "s",
			  gil_shown_path(sc->refused_from ? sc->refused_from : path, root),
			  sc->refused, syms->note ? "; " : "", syms->note ? syms->note : "");
	if (!note)
		return -1;
	free(syms->note);
	syms->note = note;
	return 0;
}

int gil_symbols_read_elf(struct gil_elf *obj, const char *path, const char *root,
			 unsigned int flags, struct gil_symbols **out, char *err, size_t errlen)
{
	struct gil_symbols *syms = NULL;
	struct scan sc = { 0 };
	bool has_symtab, want_dwarf;
	int ret = -1;
	GElf_Ehdr eh;

	if (!obj || !obj->elf || !path || !out) {
		gil_err(err, errlen, "gil_symbols_read: invalid argument");
		errno = EINVAL;
		return -1;
	}
	*out = NULL;
	if (elf_version(EV_CURRENT) == EV_NONE) {
		gil_err(err, errlen, "libelf: %s", elf_errmsg(-1));
		errno = EINVAL;
		return -1;
	}
	syms = calloc(1, sizeof(*syms));
	if (!syms || !(syms->path = strdup(path)))
		goto out;
	/* An over-long build-id is treated as none: it cannot name a debug file we would trust. */
	if (gil_elf_build_id(obj->elf, syms->build_id, sizeof(syms->build_id)) < 0)
		syms->build_id[0] = '\0';

	memset(&sc, 0, sizeof(sc));
	sc.syms = syms;
	sc.obj = obj->elf;
	sc.obj_size = obj->size;
	sc.x86_64 = gelf_getehdr(obj->elf, &eh) && eh.e_machine == EM_X86_64;
	sc.aarch64 = gelf_getehdr(obj->elf, &eh) && eh.e_machine == EM_AARCH64;
	sc.debuginfod = flags & GIL_SYMS_DEBUGINFOD;
	gil_version_from_name(path, sc.version, sizeof(sc.version));
	syms->kind = gil_classify(&sc);
	gil_version_full(&sc, gil_shown_path(path, root), syms->version, sizeof(syms->version));
	if (syms->kind == GIL_PY_FREE_THREADED || syms->kind == GIL_PY_CPYTHON2 ||
	    syms->kind == GIL_PY_PYPY)
		goto settle;
	if (gil_sites_scan_tables(&sc, obj->elf, NULL, &has_symtab))
		goto out;
	sc.stripped = !has_symtab;
	/* DWARF only for a Python: every mapped library of a process passes through here. */
	want_dwarf = syms->nr_sites || sc.capi;
	if (want_dwarf && gil_sites_scan_dwarf(&sc, obj, path) < 0)
		goto out;
	if (((!syms->nr_sites && !has_symtab) || (want_dwarf && !sc.dwarf_done)) &&
	    gil_debug_find(&sc, obj->elf, path, root))
		goto out;
	if (syms->nr_sites && syms->kind == GIL_PY_UNKNOWN)
		syms->kind = GIL_PY_CPYTHON;
settle:
	prove_sites(&sc);
	if (settle(&sc, path, root))
		goto out;
	prove_sites(&sc);
	if (refused_note(&sc, path, root))
		goto out;
	if (syms->note && syms->reason) {
		/* what was tried and failed belongs to the line that says what to do */
		char *r = gil_strfmt("%s (%s)", syms->reason, syms->note);

		if (!r)
			goto out;
		free(syms->reason);
		syms->reason = r;
	}
	if (syms->nr_over_cap && !syms->reason) {
		syms->reason = gil_strfmt("%s names %zu more take_gil/drop_gil sites than the %d probed (a file's cap): the GIL changes through them are not recorded",
				      gil_shown_path(path, root), syms->nr_over_cap, GIL_MAX_SITES);
		if (!syms->reason)
			goto out;
	}
	if (!syms->symbols_from && !(syms->symbols_from = strdup(path)))
		goto out;
	*out = syms;
	syms = NULL;
	ret = 0;
out:
	free(sc.seen);
	/* Every failure here is a failed allocation. */
	if (ret) {
		gil_err(err, errlen, "%s: out of memory", path);
		errno = ENOMEM;
	}
	gil_symbols_free(syms);
	return ret;
}

int gil_symbols_read(const char *path, const char *root, struct gil_symbols **out, char *err,
		     size_t errlen)
{
	struct gil_elf obj;
	int ret;

	if (!path || !out) {
		gil_err(err, errlen, "gil_symbols_read: invalid argument");
		errno = EINVAL;
		return -1;
	}
	*out = NULL;
	if (gil_elf_open(&obj, path, err, errlen))
		return -1;
	ret = gil_symbols_read_elf(&obj, path, root, 0, out, err, errlen);
	gil_elf_close(&obj);
	return ret;
}
