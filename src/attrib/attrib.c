// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Attribution (see attrib.h): which source serves an interpreter, DWARF first, then
 * _Py_DebugOffsets, then the table, each file of this folder owning one (attrib-int.h lists
 * them); and the function table that names what the kernel read.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gelf.h>

#include "attrib.h"
#include "attrib-int.h"
#include "common/pyversion.h"
#include "common/util.h"

const char *gil_attrib_source_name(enum gil_attr_source src)
{
	switch (src) {
	case GIL_ATTR_SRC_DWARF:
		return "dwarf";
	case GIL_ATTR_SRC_DEBUG_OFFSETS:
		return "debug_offsets";
	case GIL_ATTR_SRC_TABLE:
		return "table";
	default:
		return NULL;
	}
}

/* "3.12.1" -> 312; 0 when not a 3.x version. */
/* A debug build (Py_DEBUG) lays objects out differently: the table is for release builds. */
static bool is_debug_build(Elf *elf)
{
	GElf_Sym sym;

	return gil_elf_find_symbol(elf, "_Py_NegativeRefcount", &sym);
}

int gil_attrib_read(const struct gil_symbols *syms, const char *object, const char *version,
		    struct gil_attrib **out, char *err, size_t errlen)
{
	struct gil_elf obj;
	int ret;

	if (gil_elf_open(&obj, object, NULL, 0) < 0)
		return gil_attrib_read_elf(syms, NULL, object, version, out, err, errlen);
	ret = gil_attrib_read_elf(syms, &obj, object, version, out, err, errlen);
	gil_elf_close(&obj);
	return ret;
}

int gil_attrib_read_elf(const struct gil_symbols *syms, struct gil_elf *obj,
			const char *object, const char *version, struct gil_attrib **out, char *err,
			size_t errlen)
{
	const struct gil_layout *t;
	const char *dowhy = NULL;
	struct gil_attrib *a;
	char why[256] = "";
	int ver = gil_pyversion_num(version), r;
	size_t i;

	*out = NULL;
	if (ver / 100 != 3)
		ver = 0; /* the layouts known are of CPython 3 */
	a = calloc(1, sizeof(*a));
	if (!a || !(a->sites = calloc(syms->nr_sites + 1, sizeof(*a->sites))))
		goto oom;
	a->nr_sites = syms->nr_sites;
	for (i = 0; i < syms->nr_sites; i++)
		a->nr_entries += syms->sites[i].role == GIL_SITE_ENTRY;
	if (syms->kind != GIL_PY_CPYTHON) {
		a->why = "not a CPython with a GIL";
		goto done;
	}
	if (!obj) {
		a->why = "cannot open the interpreter's file";
		goto done;
	}
	/*
	 * Fetchargs name registers by architecture (attrib_reg_name): x86-64 and AArch64. On
	 * another, some names would still be accepted by the kernel and read the wrong place.
	 */
	if (gil_arch_of(obj->elf) == GIL_ARCH_OTHER) {
		a->why = "implemented for x86-64 and AArch64 only; this interpreter is built for "
			 "another architecture";
		goto done;
	}
	r = attrib_dwarf(a, syms, obj, ver, why, sizeof(why));
	if (r < 0)
		goto fail;
	if (r > 0)
		goto done;
	if (is_debug_build(obj->elf)) {
		a->why = "a debug build without usable DWARF: its layout is not in the table";
		goto done;
	}
	r = attrib_layout_debug_offsets(obj, &a->layout, &dowhy);
	if (r == 0) {
		a->layout.arch = gil_arch_of(obj->elf);
		a->source = GIL_ATTR_SRC_DEBUG_OFFSETS;
	} else if (r == -2) {
		/* there, but not a layout we know: the table would guess the same version's */
		a->why = dowhy;
		goto done;
	} else if ((t = gil_layout_table(ver))) {
		/*
		 * Checked against x86-64 builds, and Debian arm64's 3.11: LP64 alike, and nothing
		 * the probes read lies after a type whose size differs (pthread's)
		 */
		a->layout = *t;
		a->layout.arch = gil_arch_of(obj->elf);
		a->source = GIL_ATTR_SRC_TABLE;
	} else {
		a->why = ver ? "no DWARF, no _Py_DebugOffsets, and this version is not in the table"
			     : "no DWARF, and the Python version is unknown";
		goto done;
	}
	a->from = strdup(object);
	if (!a->from || attrib_abi(a, syms, obj) < 0)
		goto oom;
done:
	for (i = 0; i < a->nr_sites; i++) {
		a->nr_attributed += a->sites[i].fetchargs != NULL;
		/* a take_gil entry reads the code object only where a release defers to it */
		if (a->defers && a->sites[i].pointer_code) {
			free(a->sites[i].pointer);
			a->sites[i].pointer = a->sites[i].pointer_code;
		} else {
			free(a->sites[i].pointer_code);
		}
		a->sites[i].pointer_code = NULL;
	}
	if (!a->nr_attributed && !a->why)
		a->why = a->nr_entries ? "no site where the thread state can be read" : "no entry site";
	*out = a;
	return 0;
oom:
	errno = ENOMEM;
	gil_err(err, errlen, "out of memory");
fail:
	gil_attrib_free(a);
	return -1;
}

void gil_attrib_free(struct gil_attrib *a)
{
	size_t i;

	if (!a)
		return;
	for (i = 0; a->sites && i < a->nr_sites; i++) {
		free(a->sites[i].fetchargs);
		free(a->sites[i].pointer);
		free(a->sites[i].pointer_code);
	}
	free(a->sites);
	free(a->from);
	free(a->owned);
	free(a);
}

/* ---- the function table ---------------------------------------------------------------------- */

/* What the probes read, checked, numbered by the format's interner (format/fntab.c). */
struct gil_fntab {
	struct gil_fnset *set;
	struct gil_fntab_caps caps;
};

struct gil_fntab *gil_fntab_alloc(void)
{
	struct gil_fntab *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	/* one more than GIL_FNTAB_MAX: the "too many" entry */
	t->set = gil_fnset_alloc(GIL_FNTAB_MAX + 1, GIL_FNSET_STATIC_WHY);
	if (!t->set) {
		free(t);
		return NULL;
	}
	return t;
}

/* What to keep of one string: its bytes, or NULL and why not. */
static int take_string(const char *s, int len, uint8_t compact, uint8_t ascii, const char **why,
		       const char *fault, const char *notascii)
{
	if (len < 0 || !s) {
		*why = *why ? *why : fault;
		return -1;
	}
	if (!compact || !ascii) {
		*why = *why ? *why : notascii;
		return -1;
	}
	return len;
}

uint32_t gil_fntab_intern(struct gil_fntab *t, const struct gil_frame_raw *raw)
{
	struct gil_fnkey key = { .line = -1 };
	const char *why = NULL;
	int len;

	if (raw->why) {
		why = raw->why;
	} else if (!raw->tstate) {
		why = "no thread state";
	} else if (raw->other_thread) {
		/* another interpreter's GIL: its holder is not this thread */
		why = "thread state not known at this site";
	} else if (!raw->frame) {
		why = "no Python frame";
	} else if (raw->tag > 1) {
		/* bit 1 set: no object reference (3.14's tagged ints), never a code object */
		why = "frame does not hold a code object";
	} else if (raw->has_type && raw->type_len < 0) {
		why = "frame not readable";
	} else if (raw->has_type && (raw->type_len != 4 || memcmp(raw->type, "code", 4))) {
		why = "frame does not hold a code object";
	} else if (!raw->has_type && (raw->name_len < 0 || !raw->name)) {
		/* nothing proves the frame was readable: nothing read through it is believed */
		why = "frame not readable";
	} else {
		len = take_string(raw->name, raw->name_len, raw->name_compact, raw->name_ascii,
				  &why, "name not readable", "name not compact ASCII");
		if (len > GIL_FN_NAME_MAX) {
			len = GIL_FN_NAME_MAX;
			t->caps.names_cut++;
		}
		if (len >= 0) {
			key.name = raw->name;
			key.name_len = (size_t)len;
		}
		len = take_string(raw->file, raw->file_len, raw->file_compact, raw->file_ascii,
				  &why, "file not readable", "file not compact ASCII");
		if (len > GIL_FN_FILE_MAX) {
			len = GIL_FN_FILE_MAX;
			t->caps.files_cut++;
		}
		if (len >= 0) {
			key.file = raw->file;
			key.file_len = (size_t)len;
		}
		key.line = raw->line; /* the type (or name) read proves the code object was readable */
	}
	key.why = why;
	/* a function already known keeps its id once the table is full; only new ones share */
	if (gil_fnset_size(t->set) >= GIL_FNTAB_MAX && !gil_fnset_find(t->set, &key)) {
		t->caps.over_max++;
		why = "too many distinct functions";
		key.name = key.file = NULL;
		key.name_len = key.file_len = 0;
		key.line = -1;
	}
	key.why = why;
	return gil_fnset_intern(t->set, &key);
}

const struct gil_fn *gil_fntab_get(const struct gil_fntab *t, uint32_t id)
{
	return t ? gil_fnset_get(t->set, id) : NULL;
}

void gil_fntab_display(const struct gil_fntab *t, uint32_t id, char *out, size_t len)
{
	const struct gil_fn *fn = id ? gil_fntab_get(t, id) : NULL;

	if (fn && fn->name)
		snprintf(out, len, "%s", fn->name);
	else if (fn)
		snprintf(out, len, "<%s>", fn->why ? fn->why : "unreadable");
	else if (len)
		out[0] = '\0';
}

const struct gil_fntab_caps *gil_fntab_capped(const struct gil_fntab *t)
{
	static const struct gil_fntab_caps none;

	return t ? &t->caps : &none;
}

size_t gil_fntab_size(const struct gil_fntab *t)
{
	return t ? gil_fnset_size(t->set) : 0;
}

void gil_fntab_free(struct gil_fntab *t)
{
	if (!t)
		return;
	gil_fnset_free(t->set);
	free(t);
}
