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
static int parse_version(const char *v)
{
	char *end;
	long major, minor;

	if (!v)
		return 0;
	major = strtol(v, &end, 10);
	if (major != 3 || *end != '.')
		return 0;
	minor = strtol(end + 1, &end, 10);
	if (minor < 0 || minor > 99)
		return 0;
	return (int)(major * 100 + minor);
}

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

int gil_attrib_read_elf(const struct gil_symbols *syms, const struct gil_elf *objp,
			const char *object, const char *version, struct gil_attrib **out, char *err,
			size_t errlen)
{
	struct gil_elf obj = { .fd = -1 };
	const struct gil_layout *t;
	struct gil_attrib *a;
	char why[256] = "";
	int ver = parse_version(version), r;
	GElf_Ehdr eh;
	size_t i;

	*out = NULL;
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
	if (!objp) {
		a->why = "cannot open the interpreter's file";
		goto done;
	}
	obj = *objp; /* borrowed: the caller closes it */
	/*
	 * Fetchargs name x86-64 registers, and DWARF register numbers are mapped as on x86-64.
	 * Elsewhere some names would still be accepted (%sp on arm64) and read the wrong place.
	 */
	if (!gelf_getehdr(obj.elf, &eh) || eh.e_machine != EM_X86_64) {
		a->why = "implemented for x86-64 only; this interpreter is built for another "
			 "architecture";
		goto done;
	}
	r = attrib_dwarf(a, syms, &obj, ver, why, sizeof(why));
	if (r < 0)
		goto fail;
	if (r > 0)
		goto done;
	if (is_debug_build(obj.elf)) {
		a->why = "a debug build without usable DWARF: its layout is not in the table";
		goto done;
	}
	if (attrib_layout_debug_offsets(&obj, &a->layout, why, sizeof(why)) == 0) {
		a->source = GIL_ATTR_SRC_DEBUG_OFFSETS;
	} else if ((t = gil_layout_table(ver))) {
		a->layout = *t;
		a->source = GIL_ATTR_SRC_TABLE;
	} else {
		a->why = ver ? "no DWARF, no _Py_DebugOffsets, and this version is not in the table"
			     : "no DWARF, and the Python version is unknown";
		goto done;
	}
	a->from = strdup(object);
	if (!a->from || attrib_abi(a, syms, &obj) < 0)
		goto oom;
done:
	for (i = 0; i < a->nr_sites; i++)
		a->nr_attributed += a->sites[i].fetchargs != NULL;
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
	for (i = 0; a->sites && i < a->nr_sites; i++)
		free(a->sites[i].fetchargs);
	free(a->sites);
	free(a->from);
	free(a);
}

/* ---- the function table ---------------------------------------------------------------------- */

struct gil_fntab {
	struct gil_fn *v; /* v[id - 1] */
	size_t nr, cap;
	uint32_t *index; /* open addressing: id, 0 = empty */
	uint64_t *hashes; /* hashes[id - 1] */
	size_t index_cap;
};

struct gil_fntab *gil_fntab_alloc(void)
{
	return calloc(1, sizeof(struct gil_fntab));
}

static uint64_t hash_bytes(uint64_t h, const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
	return h;
}

/* @a (NUL-terminated, or NULL: not read) equals the @blen bytes at @b (NULL: not read)? */
static bool same_str(const char *a, const char *b, int blen)
{
	if (!a || !b)
		return !a && !b;
	return strlen(a) == (size_t)blen && !memcmp(a, b, (size_t)blen);
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

static int grow_index(struct gil_fntab *t)
{
	size_t cap = t->index_cap ? 2 * t->index_cap : 1024, i, s;
	uint32_t *index = calloc(cap, sizeof(*index));

	if (!index)
		return -1;
	for (i = 0; i < t->nr; i++) {
		for (s = t->hashes[i] & (cap - 1); index[s]; s = (s + 1) & (cap - 1))
			;
		index[s] = (uint32_t)(i + 1);
	}
	free(t->index);
	t->index = index;
	t->index_cap = cap;
	return 0;
}

uint32_t gil_fntab_intern(struct gil_fntab *t, const struct gil_frame_raw *raw)
{
	const char *why = NULL, *name = NULL, *file = NULL;
	int name_len = -1, file_len = -1;
	int32_t line = -1;
	struct gil_fn *fn;
	uint64_t h;
	size_t s;

	if (!raw->tstate) {
		why = "no thread state";
	} else if (!raw->frame) {
		why = "no Python frame";
	} else if (raw->has_type && raw->type_len < 0) {
		why = "frame not readable";
	} else if (raw->has_type && (raw->type_len != 4 || memcmp(raw->type, "code", 4))) {
		why = "frame does not hold a code object";
	} else if (!raw->has_type && (raw->name_len < 0 || !raw->name)) {
		/* nothing proves the frame was readable: nothing read through it is believed */
		why = "frame not readable";
	} else {
		name_len = take_string(raw->name, raw->name_len, raw->name_compact, raw->name_ascii,
				       &why, "name not readable", "name not compact ASCII");
		if (name_len >= 0)
			name = raw->name;
		file_len = take_string(raw->file, raw->file_len, raw->file_compact, raw->file_ascii,
				       &why, "file not readable", "file not compact ASCII");
		if (file_len >= 0)
			file = raw->file;
		line = raw->line; /* the type (or name) read proves the code object was readable */
	}
	if (t->nr >= GIL_FNTAB_MAX) {
		why = "too many distinct functions";
		name = file = NULL;
		name_len = file_len = -1;
		line = -1;
	}
	h = 0xcbf29ce484222325ull;
	h = hash_bytes(h, why ? why : "", why ? strlen(why) : 0);
	h = hash_bytes(h, "\0", 1);
	h = hash_bytes(h, name ? name : "", name_len > 0 ? (size_t)name_len : 0);
	h = hash_bytes(h, "\0", 1);
	h = hash_bytes(h, file ? file : "", file_len > 0 ? (size_t)file_len : 0);
	h = hash_bytes(h, (const char *)&line, sizeof(line));
	if (t->index_cap) {
		for (s = h & (t->index_cap - 1); t->index[s]; s = (s + 1) & (t->index_cap - 1)) {
			fn = &t->v[t->index[s] - 1];
			if (t->hashes[t->index[s] - 1] == h && fn->line == line && fn->why == why &&
			    same_str(fn->name, name, name_len) && same_str(fn->file, file, file_len))
				return fn->id;
		}
	}
	if (t->nr > GIL_FNTAB_MAX)
		return 0;
	if (2 * (t->nr + 1) > t->index_cap && grow_index(t) < 0)
		return 0;
	if (t->nr == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 256;
		struct gil_fn *v = realloc(t->v, cap * sizeof(*v));
		uint64_t *hs;

		if (!v)
			return 0;
		t->v = v;
		hs = realloc(t->hashes, cap * sizeof(*hs));
		if (!hs)
			return 0;
		t->hashes = hs;
		t->cap = cap;
	}
	fn = &t->v[t->nr];
	memset(fn, 0, sizeof(*fn));
	if (name && !(fn->name = strndup(name, (size_t)name_len)))
		return 0;
	if (file && !(fn->file = strndup(file, (size_t)file_len))) {
		free(fn->name);
		return 0;
	}
	fn->line = line;
	fn->why = why;
	fn->id = (uint32_t)(t->nr + 1);
	t->hashes[t->nr] = h;
	t->nr++;
	for (s = h & (t->index_cap - 1); t->index[s]; s = (s + 1) & (t->index_cap - 1))
		;
	t->index[s] = fn->id;
	return fn->id;
}

const struct gil_fn *gil_fntab_get(const struct gil_fntab *t, uint32_t id)
{
	return t && id && id <= t->nr ? &t->v[id - 1] : NULL;
}

size_t gil_fntab_size(const struct gil_fntab *t)
{
	return t ? t->nr : 0;
}

void gil_fntab_free(struct gil_fntab *t)
{
	size_t i;

	if (!t)
		return;
	for (i = 0; i < t->nr; i++) {
		free(t->v[i].name);
		free(t->v[i].file);
	}
	free(t->v);
	free(t->hashes);
	free(t->index);
	free(t);
}
