// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * ELF symbol lookup for take_gil/drop_gil. A uprobe at a wrong offset corrupts the traced program,
 * so a site is only ever a FUNC symbol of known name lying wholly inside an executable segment of
 * the object we probe, read from that object or from a debug file proven to match it by build-id.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gelf.h>
#include <libelf.h>
#ifdef HAVE_LZMA
#include <lzma.h>
#endif

#include "dwarfsites.h"
#include "elf.h"
#include "symbols.h"
#include "common/util.h"
#include "x86insn.h"

/* Bounds for .gnu_debugdata: a corrupt or hostile section must not exhaust memory. */
#define XZ_MEMLIMIT (128ULL << 20)
#define XZ_MAX_OUT ((size_t)512 << 20)

static const char *const gil_fn_names[GIL_FN_NR] = {
	[GIL_FN_TAKE] = "take_gil",
	[GIL_FN_DROP] = "drop_gil",
};

/* GCC and clang clone suffixes that still name a full entry point (".cold"/".part" do not). */
static const char *const clone_kinds[] = { "constprop", "lto_priv", "isra", "llvm" };

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
	bool capi; /* the object exports the C API (PyEval_SaveThread): worth reading DWARF */
	bool dwarf_done; /* DWARF was read (from the object or a debug file) */
	bool stripped; /* the object has no .symtab */
	struct export save, restore; /* PyEval_SaveThread, PyEval_RestoreThread */
	char version[16]; /* "3.11", from the file name or Py_Version; "" if unknown */
};

/* Skip one ".<kind>.<digits>" clone suffix at @s; NULL when @s does not start with one. */
static const char *skip_clone_suffix(const char *s)
{
	size_t i, n = 0;

	if (*s != '.')
		return NULL;
	s++;
	for (i = 0; i < GIL_ARRAY_SIZE(clone_kinds); i++) {
		n = strlen(clone_kinds[i]);
		if (!strncmp(s, clone_kinds[i], n) && s[n] == '.')
			break;
	}
	if (i == GIL_ARRAY_SIZE(clone_kinds))
		return NULL;
	s += n + 1;
	if (!isdigit((unsigned char)*s))
		return NULL;
	while (isdigit((unsigned char)*s))
		s++;
	return s;
}

bool gil_symbol_match(const char *name, enum gil_func *fn)
{
	const char *s;
	size_t n;
	int f;

	if (!name)
		return false;
	for (f = 0; f < GIL_FN_NR; f++) {
		n = strlen(gil_fn_names[f]);
		if (strncmp(name, gil_fn_names[f], n))
			continue;
		/* Whole name must be base + clone suffixes: refuses drop_gil_impl, take_gil.cold. */
		for (s = name + n; s && *s;)
			s = skip_clone_suffix(s);
		if (!s)
			return false;
		if (fn)
			*fn = (enum gil_func)f;
		return true;
	}
	return false;
}

/* A site is a whole function inside one executable segment, and inside the file. */
static int site_offset(const struct scan *sc, uint64_t addr, uint64_t size, uint64_t *offset)
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
static int add_site(struct scan *sc, const struct gil_site *tmpl)
{
	struct gil_symbols *syms = sc->syms;
	struct gil_site *sites, *s;
	size_t i, cap;

	/* The same function shows up in .symtab and .dynsym, or under an alias: probe it once. */
	for (i = 0; i < syms->nr_sites; i++)
		if (syms->sites[i].addr == tmpl->addr)
			return 0;
	if (syms->nr_sites == sc->cap) {
		cap = sc->cap ? 2 * sc->cap : 4;
		sites = realloc(syms->sites, cap * sizeof(*sites));
		if (!sites)
			return -1;
		syms->sites = sites;
		sc->cap = cap;
	}
	s = &syms->sites[syms->nr_sites];
	*s = *tmpl;
	s->symbol = strdup(tmpl->symbol);
	if (!s->symbol)
		return -1;
	syms->nr_sites++;
	return 0;
}

/*
 * Bytes to step over at a function entry at file offset @offset: 4 when it starts with
 * endbr64 (x86-64 -fcf-protection), which the kernel single-steps at four times the cost of
 * the push that follows. Calls land on the entry and run endbr64 as a no-op, so a probe
 * after it sees every call, and the return address is still at the top of the stack.
 */
static unsigned int entry_skip(const struct scan *sc, uint64_t offset, uint64_t size)
{
	static const unsigned char endbr64[4] = { 0xf3, 0x0f, 0x1e, 0xfa };
	Elf_Data *d;

	if (!sc->x86_64 || size <= sizeof(endbr64))
		return 0;
	d = elf_getdata_rawchunk(sc->obj, (int64_t)offset, sizeof(endbr64), ELF_T_BYTE);
	if (!d || d->d_size != sizeof(endbr64) || memcmp(d->d_buf, endbr64, sizeof(endbr64)))
		return 0;
	return sizeof(endbr64);
}

/* A whole function's entry: a uretprobe can go there too. */
static int add_func_site(struct scan *sc, enum gil_func fn, const char *name, uint64_t addr,
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
		if (site_offset(sc, sym.st_value, sym.st_size, &offset))
			continue;
		if (add_func_site(sc, fn, name, sym.st_value, offset, sym.st_size, method, false))
			return -1;
	}
	return 0;
}

/*
 * Collect sites from the symbol tables of @symelf. .symtab goes first so that it wins the
 * deduplication. @method NULL: name the table ("symtab"/"dynsym"). Returns -1 only on ENOMEM.
 */
static int scan_object(struct scan *sc, Elf *symelf, const char *method, bool *has_symtab)
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
static int scan_dwarf(struct scan *sc, Elf *dwelf, const char *from)
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
		if (site_offset(sc, d->addr, 1, &t.offset)) {
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

/* The CRC-32 that .gnu_debuglink records (the zlib/IEEE one). */
static int file_crc32(int fd, uint32_t *out)
{
	unsigned char buf[16384];
	uint32_t table[256], crc = 0xffffffff, c;
	off_t off = 0;
	ssize_t n, i;
	int k;

	for (i = 0; i < 256; i++) {
		c = (uint32_t)i;
		for (k = 0; k < 8; k++)
			c = c & 1 ? 0xedb88320 ^ (c >> 1) : c >> 1;
		table[i] = c;
	}
	for (;;) {
		n = pread(fd, buf, sizeof(buf), off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			break;
		for (i = 0; i < n; i++)
			crc = table[(crc ^ buf[i]) & 0xff] ^ (crc >> 8);
		off += n;
	}
	*out = crc ^ 0xffffffff;
	return 0;
}

/*
 * Use the debug file at @dpath when its build-id is the object's (and its CRC is @crc when
 * @check_crc): its symbol tables, and its DWARF when the object had none. Returns 1 when it
 * gave sites, 0 when not usable, -1 on ENOMEM.
 */
static int try_debug_file(struct scan *sc, const char *dpath, const char *method, bool check_crc,
			  uint32_t crc)
{
	char bid[sizeof(sc->syms->build_id)];
	struct gil_elf h;
	size_t before = sc->syms->nr_sites, from_tables;
	uint32_t got;
	int ret = 0;

	if (gil_elf_open(&h, dpath, NULL, 0))
		return 0;
	if (gil_elf_build_id(h.elf, bid, sizeof(bid)) <= 0 || strcmp(bid, sc->syms->build_id))
		goto out;
	if (check_crc && (file_crc32(h.fd, &got) || got != crc))
		goto out;
	if (scan_object(sc, h.elf, method, NULL)) {
		ret = -1;
		goto out;
	}
	from_tables = sc->syms->nr_sites - before;
	if ((from_tables || sc->capi) && !sc->dwarf_done && scan_dwarf(sc, h.elf, dpath) < 0) {
		ret = -1;
		goto out;
	}
	if (sc->syms->nr_sites == before)
		goto out;
	ret = 1;
	if (from_tables && !sc->syms->symbols_from) {
		sc->syms->symbols_from = strdup(dpath);
		ret = sc->syms->symbols_from ? 1 : -1;
	}
out:
	gil_elf_close(&h);
	return ret;
}

static uint32_t read_u32(const unsigned char *p, bool lsb)
{
	if (lsb)
		return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
		       (uint32_t)p[3] << 24;
	return (uint32_t)p[3] | (uint32_t)p[2] << 8 | (uint32_t)p[1] << 16 | (uint32_t)p[0] << 24;
}

/* gdb's search order for the .gnu_debuglink name: next to the object, .debug/, global dir. */
static int try_debuglink(struct scan *sc, Elf *obj, const char *path, const char *root,
			 size_t rootlen)
{
	const char *name, *slash, *dir, *indir;
	const unsigned char *p;
	char *cand[3] = { NULL, NULL, NULL };
	size_t namelen, crcoff, dirlen, indirlen, i;
	GElf_Ehdr eh;
	GElf_Shdr sh;
	Elf_Data *d;
	Elf_Scn *scn;
	uint32_t crc;
	int ret = 0;

	scn = gil_elf_section(obj, ".gnu_debuglink", &sh);
	if (!scn || sh.sh_type == SHT_NOBITS || !gelf_getehdr(obj, &eh))
		return 0;
	d = elf_getdata(scn, NULL);
	if (!d || !d->d_buf)
		return 0;
	p = d->d_buf;
	name = d->d_buf;
	namelen = strnlen(name, d->d_size);
	crcoff = (namelen + 1 + 3) & ~(size_t)3;
	if (!namelen || namelen == d->d_size || crcoff + 4 > d->d_size)
		return 0;
	crc = read_u32(p + crcoff, eh.e_ident[EI_DATA] == ELFDATA2LSB);

	slash = strrchr(path, '/');
	if (slash) {
		dir = path;
		dirlen = (size_t)(slash - path);
	} else {
		dir = ".";
		dirlen = 1;
	}
	ret = -1;
	cand[0] = gil_strfmt("%.*s/%s", (int)dirlen, dir, name);
	cand[1] = gil_strfmt("%.*s/.debug/%s", (int)dirlen, dir, name);
	if (!cand[0] || !cand[1])
		goto out;
	/* The global directory mirrors the object's path as seen inside @root. */
	if (dir[0] == '/') {
		indir = dir;
		indirlen = dirlen;
		if (rootlen && dirlen >= rootlen && !strncmp(dir, root, rootlen) &&
		    (dirlen == rootlen || dir[rootlen] == '/')) {
			indir += rootlen;
			indirlen -= rootlen;
		}
		cand[2] = gil_strfmt("%.*s/usr/lib/debug%.*s/%s", (int)rootlen, root, (int)indirlen,
				 indir, name);
		if (!cand[2])
			goto out;
	}
	ret = 0;
	for (i = 0; i < GIL_ARRAY_SIZE(cand) && cand[i] && !ret; i++)
		ret = try_debug_file(sc, cand[i], "debuglink", true, crc);
out:
	for (i = 0; i < GIL_ARRAY_SIZE(cand); i++)
		free(cand[i]);
	return ret;
}

#ifdef HAVE_LZMA
/* Decompress a whole .xz stream into a malloc'ed buffer. */
static int xz_decode(const uint8_t *in, size_t inlen, void **out, size_t *outlen)
{
	lzma_stream strm = LZMA_STREAM_INIT;
	uint8_t *buf = NULL, *nbuf;
	size_t cap = 0;
	lzma_ret lr;
	int ret = -1;

	if (lzma_stream_decoder(&strm, XZ_MEMLIMIT, 0) != LZMA_OK)
		return -1;
	strm.next_in = in;
	strm.avail_in = inlen;
	for (;;) {
		if (!strm.avail_out) {
			if (cap >= XZ_MAX_OUT)
				goto out;
			cap = cap ? 2 * cap : (inlen < 16384 ? 65536 : 4 * inlen);
			nbuf = realloc(buf, cap);
			if (!nbuf)
				goto out;
			buf = nbuf;
			strm.next_out = buf + strm.total_out;
			strm.avail_out = cap - strm.total_out;
		}
		lr = lzma_code(&strm, LZMA_FINISH);
		if (lr == LZMA_STREAM_END)
			break;
		if (lr != LZMA_OK)
			goto out;
	}
	*out = buf;
	*outlen = strm.total_out;
	buf = NULL;
	ret = 0;
out:
	lzma_end(&strm);
	free(buf);
	return ret;
}

/* MiniDebugInfo (Fedora): the .symtab strip removed, xz-compressed into .gnu_debugdata. */
static int try_debugdata(struct scan *sc, Elf *obj, const char *path)
{
	char bid[sizeof(sc->syms->build_id)];
	struct gil_elf h = { .fd = -1 };
	void *image;
	size_t len;
	GElf_Shdr sh;
	Elf_Data *d;
	Elf_Scn *scn;
	int ret = 0;

	scn = gil_elf_section(obj, ".gnu_debugdata", &sh);
	if (!scn || sh.sh_type == SHT_NOBITS)
		return 0;
	d = elf_rawdata(scn, NULL);
	if (!d || !d->d_buf || !d->d_size)
		return 0;
	if (xz_decode(d->d_buf, d->d_size, &image, &len))
		return 0;
	if (gil_elf_open_memory(&h, image, len))
		goto out;
	/* Embedded in the object, so it matches by construction; a build-id, if any, must agree. */
	if (gil_elf_build_id(h.elf, bid, sizeof(bid)) > 0 && strcmp(bid, sc->syms->build_id))
		goto out;
	if (scan_object(sc, h.elf, "minidebuginfo", NULL)) {
		ret = -1;
		goto out;
	}
	if (!sc->syms->nr_sites)
		goto out;
	sc->syms->symbols_from = strdup(path);
	ret = sc->syms->symbols_from ? 1 : -1;
out:
	gil_elf_close(&h);
	return ret;
}
#endif

/* Sites for a stripped object: build-id directory, then .gnu_debuglink, then .gnu_debugdata. */
static int find_debug(struct scan *sc, Elf *obj, const char *path, const char *root)
{
	const char *bid = sc->syms->build_id;
	size_t rootlen;
	char *p;
	int ret = 0;

	if (!root)
		root = "";
	rootlen = strlen(root);
	while (rootlen && root[rootlen - 1] == '/')
		rootlen--;

	/* Without a build-id nothing proves that a separate file describes this object. */
	if (strlen(bid) > 2) {
		p = gil_strfmt("%.*s/usr/lib/debug/.build-id/%.2s/%s.debug", (int)rootlen, root, bid,
			   bid + 2);
		if (!p)
			return -1;
		ret = try_debug_file(sc, p, "build-id", false, 0);
		free(p);
		if (!ret)
			ret = try_debuglink(sc, obj, path, root, rootlen);
	}
#ifdef HAVE_LZMA
	if (!ret)
		ret = try_debugdata(sc, obj, path);
#endif
	return ret < 0 ? -1 : 0;
}

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
static void version_from_name(const char *path, char *buf, size_t len)
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

/* PY_VERSION_HEX from the exported Py_Version, read through the object's program headers. */
static void version_from_data(struct scan *sc, const GElf_Sym *sym)
{
	GElf_Ehdr eh;
	Elf_Data *d;
	uint64_t off;
	uint32_t hex;

	if (sc->version[0] || sym->st_size < 4 || !gelf_getehdr(sc->obj, &eh) ||
	    gil_elf_addr_to_offset(sc->obj, sym->st_value, &off, NULL))
		return;
	d = elf_getdata_rawchunk(sc->obj, (int64_t)off, 4, ELF_T_BYTE);
	if (!d || d->d_size != 4)
		return;
	hex = read_u32(d->d_buf, eh.e_ident[EI_DATA] == ELFDATA2LSB);
	if (hex >> 24 >= 3 && hex >> 24 < 10)
		snprintf(sc->version, sizeof(sc->version), "%u.%u", hex >> 24, (hex >> 16) & 0xff);
}

/* Read what the object's .dynsym exports: the interpreter kind, the C API entry points. */
static enum gil_python_kind detect_kind(struct scan *sc)
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
static const char *shown_path(const char *path, const char *root)
{
	size_t n = root ? strlen(root) : 0;

	while (n && root[n - 1] == '/')
		n--;
	if (n && !strncmp(path, root, n) && path[n] == '/')
		return path + n;
	return path;
}

static const char *shown_base(const char *path)
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
static char *fix_hint(const struct scan *sc, const char *root)
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

/* Targets of the calls and jumps in the exported function @e; 1 when one is @target. */
static int calls_to(struct scan *sc, const struct export *e, uint64_t target)
{
	const uint8_t *code;
	struct gil_insn in;
	uint64_t off, pos;
	Elf_Data *d;

	if (!sc->x86_64 || site_offset(sc, e->addr, e->size, &off))
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
static int save_calls_drop(struct scan *sc)
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

/* Is the "X.Y" @version known and below @major.@minor? */
static bool version_below(const char *version, unsigned int major, unsigned int minor)
{
	unsigned int x, y;

	if (sscanf(version, "%u.%u", &x, &y) != 2)
		return false;
	return x < major || (x == major && y < minor);
}

static void count_sites(struct gil_symbols *syms)
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
static int add_exported(struct scan *sc, bool take, bool drop)
{
	uint64_t off;

	if (take && !site_offset(sc, sc->restore.addr, sc->restore.size, &off) &&
	    add_func_site(sc, GIL_FN_TAKE, "PyEval_RestoreThread", sc->restore.addr, off,
			  sc->restore.size, "exported-fallback", true))
		return -1;
	if (drop && !site_offset(sc, sc->save.addr, sc->save.size, &off) &&
	    add_func_site(sc, GIL_FN_DROP, "PyEval_SaveThread", sc->save.addr, off, sc->save.size,
			  "exported-fallback", true))
		return -1;
	count_sites(sc->syms);
	return 0;
}

/*
 * After the symbol tables and DWARF: the free-threaded build, Python 2 and PyPy get no sites;
 * a CPython without a site for a GIL function gets the exported function around it; an LTO
 * build read without DWARF gets PyEval_SaveThread when drop_gil was inlined into it. Sets the
 * reason line for each. Returns -1 only on ENOMEM.
 */
static int settle(struct scan *sc, const char *path, const char *root)
{
	struct gil_symbols *syms = sc->syms;
	const char *shown = shown_path(path, root);
	char *hint = NULL;
	size_t i;
	bool take, drop;
	int ret = -1;

	count_sites(syms);
	switch (syms->kind) {
	case GIL_PY_FREE_THREADED:
		for (i = 0; i < syms->nr_sites; i++)
			free(syms->sites[i].symbol);
		syms->nr_sites = 0;
		count_sites(syms);
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
	/*
	 * Both have sites but no DWARF was read: up to 3.12 PyEval_SaveThread calls drop_gil
	 * itself, so when it calls no out-of-line copy, drop_gil was inlined into it (and maybe
	 * elsewhere). From 3.13 it goes through _PyThreadState_Detach: nothing to tell from.
	 */
	if (!take && !drop &&
	    (sc->dwarf_done || !sc->save.found || !version_below(sc->version, 3, 13) ||
	     save_calls_drop(sc) != 0))
		return 0; /* exact, as far as anything can tell */
	/*
	 * Unknown kind: only a stripped interpreter or libpython can be one without exports
	 * (not an extension module such as _ctypes.cpython-311-x86_64-linux-gnu.so).
	 */
	if (!syms->nr_sites && syms->kind == GIL_PY_UNKNOWN &&
	    (!sc->stripped || (strncmp(shown_base(shown), "python", 6) &&
			       strncmp(shown_base(shown), "libpython", 9))))
		return 0;
	hint = fix_hint(sc, root);
	if (!hint)
		goto out;
	if (!take && !drop) {
		if (add_exported(sc, false, true))
			goto out;
		syms->approximate = true;
		syms->reason = gil_strfmt("releases are approximate: %s inlines drop_gil into PyEval_SaveThread and %s, so PyEval_SaveThread stands in for the inlined copies; for exact sites, %s%s",
				      shown,
				      gil_dwarf_supported() ? "has no DWARF to find them" :
							      "giltrace was built without libdw",
				      gil_dwarf_supported() ? "" : "rebuild giltrace with libdw and ",
				      hint);
	} else if (sc->capi && syms->kind == GIL_PY_CPYTHON) {
		if (add_exported(sc, take, drop))
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
	free(syms->reason);
	free(syms);
}

int gil_symbols_read(const char *path, const char *root, struct gil_symbols **out, char *err,
		     size_t errlen)
{
	struct gil_elf obj = { .fd = -1 };
	struct gil_symbols *syms = NULL;
	struct scan sc;
	bool has_symtab, want_dwarf, oom = true;
	int ret = -1, saved = 0;
	GElf_Ehdr eh;

	if (!path || !out) {
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
	if (gil_elf_open(&obj, path, err, errlen)) {
		saved = errno;
		oom = false;
		goto out;
	}
	/* An over-long build-id is treated as none: it cannot name a debug file we would trust. */
	if (gil_elf_build_id(obj.elf, syms->build_id, sizeof(syms->build_id)) < 0)
		syms->build_id[0] = '\0';

	memset(&sc, 0, sizeof(sc));
	sc.syms = syms;
	sc.obj = obj.elf;
	sc.obj_size = obj.size;
	sc.x86_64 = gelf_getehdr(obj.elf, &eh) && eh.e_machine == EM_X86_64;
	version_from_name(path, sc.version, sizeof(sc.version));
	syms->kind = detect_kind(&sc);
	if (syms->kind == GIL_PY_FREE_THREADED || syms->kind == GIL_PY_CPYTHON2 ||
	    syms->kind == GIL_PY_PYPY)
		goto settle;
	if (scan_object(&sc, obj.elf, NULL, &has_symtab))
		goto out;
	sc.stripped = !has_symtab;
	/* DWARF only for a Python: every mapped library of a process passes through here. */
	want_dwarf = syms->nr_sites || sc.capi;
	if (want_dwarf && scan_dwarf(&sc, obj.elf, path) < 0)
		goto out;
	if (((!syms->nr_sites && !has_symtab) || (want_dwarf && !sc.dwarf_done)) &&
	    find_debug(&sc, obj.elf, path, root))
		goto out;
	if (syms->nr_sites && syms->kind == GIL_PY_UNKNOWN)
		syms->kind = GIL_PY_CPYTHON;
settle:
	if (settle(&sc, path, root))
		goto out;
	if (!syms->symbols_from && !(syms->symbols_from = strdup(path)))
		goto out;
	*out = syms;
	syms = NULL;
	ret = 0;
out:
	/* Every failure but opening the object is a failed allocation. */
	if (ret && oom) {
		saved = ENOMEM;
		gil_err(err, errlen, "%s: out of memory", path);
	}
	gil_elf_close(&obj);
	gil_symbols_free(syms);
	if (ret)
		errno = saved;
	return ret;
}
