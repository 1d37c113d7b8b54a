// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * What an object is: which interpreter (CPython 3, free-threaded, Python 2, PyPy) by what it
 * exports, its version, how it is named to the user, and what installs its symbols.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/pyversion.h"
#include "common/util.h"
#include "scan.h"

/* Exported names that tell which interpreter an object belongs to. */
enum mark { M_FREE_THREADED, M_PY2, M_PYPY, M_PY3, M_SAVE, M_RESTORE, M_VERSION, M_NR };

static const struct {
	const char *name;
	enum mark mark;
} marks[] = {
	/* Declared only with Py_GIL_DISABLED (Include/internal/pycore_object.h, refcount.h). */
	{ "_Py_DecRefShared", M_FREE_THREADED },
	{ "_Py_MergeZeroLocalRefcount", M_FREE_THREADED },
	{ "Py_InitModule4_64", M_PY2 },
	{ "Py_InitModule4", M_PY2 },
	{ "pypy_setup_home", M_PYPY },
	{ "rpython_startup_code", M_PYPY },
	{ "PyModule_Create2", M_PY3 },
	{ "PyEval_SaveThread", M_SAVE },
	{ "PyEval_RestoreThread", M_RESTORE },
	{ "Py_Version", M_VERSION }, /* const unsigned long PY_VERSION_HEX, 3.11+ */
};

/* "3.11" from the name of an interpreter or its library: python3.11, libpython3.11d.so.1.0. */
void gil_version_from_name(const char *path, char *buf, size_t len)
{
	const char *base = strrchr(path, '/'), *p;
	size_t n = 0;

	base = base ? base + 1 : path;
	p = strstr(base, "python");
	if (!p || !isdigit((unsigned char)p[6]))
		return;
	for (p += 6; n + 1 < len && (isdigit((unsigned char)*p) || *p == '.'); p++)
		buf[n++] = *p;
	while (n && buf[n - 1] == '.')
		n--;
	buf[n] = '\0';
	if (!strchr(buf, '.'))
		buf[0] = '\0'; /* "python3" says too little for a package name */
}

/* PY_VERSION_HEX from the exported Py_Version (3.11+), read through the program headers. */
static void version_from_data(struct scan *sc, const GElf_Sym *sym)
{
	GElf_Ehdr eh;
	struct gil_pyversion v;
	Elf_Data *d;
	uint64_t off;
	uint32_t hex;

	if (sym->st_size < 4 || !gelf_getehdr(sc->obj, &eh) ||
	    gil_elf_addr_to_offset(sc->obj, sym->st_value, &off, NULL))
		return;
	d = elf_getdata_rawchunk(sc->obj, (int64_t)off, 4, ELF_T_BYTE);
	if (!d || d->d_size != 4)
		return;
	hex = gil_elf_u32(d->d_buf, eh.e_ident[EI_DATA] == ELFDATA2LSB);
	gil_pyversion_hex(hex, &v);
	if (v.major < 3 || v.major >= 10)
		return;
	sc->hexversion = hex;
	if (!sc->version[0])
		snprintf(sc->version, sizeof(sc->version), "%u.%u", v.major, v.minor);
}

void gil_version_full(const struct scan *sc, const char *path, char *buf, size_t len)
{
	struct gil_pyversion pv;
	const char *p, *v;
	size_t n, m;

	buf[0] = '\0';
	if (sc->hexversion) {
		gil_pyversion_hex(sc->hexversion, &pv);
		gil_pyversion_text(&pv, buf, len);
		return;
	}
	/* Older interpreters: the name says "3.9"; pyenv keeps the full one in its prefix. */
	gil_version_from_name(path, buf, len);
	p = strstr(path, "/versions/");
	n = strlen(buf);
	if (!p || !n)
		return;
	v = p + 10;
	m = strcspn(v, "/");
	if (m < len && !strncmp(v, buf, n))
		snprintf(buf, len, "%.*s", (int)m, v);
}

/* Read what the object's .dynsym exports: the interpreter kind, the C API entry points. */
enum gil_python_kind gil_classify(struct scan *sc)
{
	bool seen[M_NR] = { false };
	struct export *e;
	Elf_Scn *scn = NULL;
	Elf_Data *data;
	const char *name;
	GElf_Shdr sh;
	GElf_Sym sym;
	size_t i, n, k;

	while ((scn = elf_nextscn(sc->obj, scn))) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM || !sh.sh_entsize)
			continue;
		data = elf_getdata(scn, NULL);
		if (!data || !data->d_buf)
			continue;
		n = sh.sh_size / sh.sh_entsize;
		for (i = 0; i < n; i++) {
			if (!gelf_getsym(data, (int)i, &sym) || sym.st_shndx == SHN_UNDEF)
				continue;
			name = elf_strptr(sc->obj, sh.sh_link, sym.st_name);
			if (!name || (name[0] != 'P' && name[0] != '_' && name[0] != 'p' &&
				      name[0] != 'r'))
				continue;
			for (k = 0; k < GIL_ARRAY_SIZE(marks); k++)
				if (!strcmp(name, marks[k].name))
					break;
			if (k == GIL_ARRAY_SIZE(marks))
				continue;
			seen[marks[k].mark] = true;
			if (marks[k].mark == M_VERSION) {
				version_from_data(sc, &sym);
				continue;
			}
			if (marks[k].mark != M_SAVE && marks[k].mark != M_RESTORE)
				continue;
			e = marks[k].mark == M_SAVE ? &sc->save : &sc->restore;
			if (GELF_ST_TYPE(sym.st_info) != STT_FUNC)
				continue;
			e->found = true;
			e->addr = sym.st_value;
			e->size = sym.st_size;
		}
	}
	sc->capi = sc->save.found && sc->restore.found;
	if (seen[M_FREE_THREADED])
		return GIL_PY_FREE_THREADED;
	if (seen[M_PY2])
		return GIL_PY_CPYTHON2;
	if (seen[M_PYPY])
		return GIL_PY_PYPY;
	return seen[M_PY3] ? GIL_PY_CPYTHON : GIL_PY_UNKNOWN;
}

/* @path as the process sees it: without the /proc/PID/root prefix. */
const char *gil_shown_path(const char *path, const char *root)
{
	size_t n = root ? strlen(root) : 0;

	while (n && root[n - 1] == '/')
		n--;
	if (n && !strncmp(path, root, n) && path[n] == '/')
		return path + n;
	return path;
}

const char *gil_shown_base(const char *path)
{
	const char *base = strrchr(path, '/');

	return base ? base + 1 : path;
}

/* Is @root another root directory than ours (a container)? */
static bool foreign_root(const char *root)
{
	struct stat a, b;

	return root && *root && !stat(root, &a) && !stat("/", &b) &&
	       (a.st_dev != b.st_dev || a.st_ino != b.st_ino);
}

/* What installs the symbols of this object: Debian's python3.X-dbg, else a debuginfo package. */
char *gil_fix_hint(const struct scan *sc, const char *root)
{
	const char *bid = sc->syms->build_id, *where = foreign_root(root) ? " in its container" : "";
	char *deb = gil_strfmt("%s/etc/debian_version", root ? root : "");
	bool debian = deb && !access(deb, F_OK);

	free(deb);
	if (debian && sc->version[0])
		return gil_strfmt("apt-get install python%s-dbg%s", sc->version, where);
	if (debian)
		return gil_strfmt("apt-get install the python3.X-dbg package of this interpreter's version%s",
			      where);
	if (strlen(bid) > 2)
		return gil_strfmt("install its debuginfo package%s (it provides /usr/lib/debug/.build-id/%.2s/%s.debug)",
			      where, bid, bid + 2);
	return gil_strfmt("install its debuginfo package%s", where);
}
