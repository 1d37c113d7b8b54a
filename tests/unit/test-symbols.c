// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Unit tests for ELF symbol lookup (src/lib/symbols.c): name matching, address to file offset,
 * build-id, debug file search on synthetic ELF files written with libelf, and the real CPython
 * builds on this machine, whose offsets are checked here through section headers (an independent
 * path from the program headers the library uses).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
/* nftw(); config.h defines it already in the autotools build. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <glob.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <gelf.h>
#include <libelf.h>

#include "elf/dwarfsites.h"
#include "elf/symbols.h"
#include "elf/x86insn.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static char tmpdir[] = "/tmp/test-symbols.XXXXXX";

/* ---- helpers ------------------------------------------------------------------------------- */

static char *xfmt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *xfmt(const char *fmt, ...)
{
	va_list ap;
	char *s;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	assert_true(n >= 0);
	s = malloc((size_t)n + 1);
	assert_non_null(s);
	va_start(ap, fmt);
	vsnprintf(s, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return s;
}

static void mkdirs(const char *path)
{
	char *p = strdup(path), *s;

	assert_non_null(p);
	for (s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		assert_true(mkdir(p, 0755) == 0 || errno == EEXIST);
		*s = '/';
	}
	assert_true(mkdir(p, 0755) == 0 || errno == EEXIST);
	free(p);
}

static void write_file(const char *path, const void *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, buf, len), (ssize_t)len);
	close(fd);
}

static void *read_file(const char *path, size_t *len)
{
	struct stat st;
	void *buf;
	int fd = open(path, O_RDONLY);

	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	buf = malloc((size_t)st.st_size + 1);
	assert_non_null(buf);
	assert_int_equal(read(fd, buf, (size_t)st.st_size), st.st_size);
	close(fd);
	*len = (size_t)st.st_size;
	return buf;
}

/* Plain bitwise CRC-32, written apart from the library's table version on purpose. */
static uint32_t crc32_file(const char *path)
{
	uint32_t crc = 0xffffffff;
	unsigned char *buf;
	size_t len, i;
	int k;

	buf = read_file(path, &len);
	for (i = 0; i < len; i++) {
		crc ^= buf[i];
		for (k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0xedb88320 & -(crc & 1));
	}
	free(buf);
	return crc ^ 0xffffffff;
}

static const struct gil_site *find_site(const struct gil_symbols *s, const char *name)
{
	size_t i;

	for (i = 0; i < s->nr_sites; i++)
		if (!strcmp(s->sites[i].symbol, name))
			return &s->sites[i];
	return NULL;
}

static size_t count_sites(const struct gil_symbols *s, enum gil_func fn)
{
	size_t i, n = 0;

	for (i = 0; i < s->nr_sites; i++)
		n += s->sites[i].fn == fn;
	return n;
}

/* ---- synthetic ELF files ------------------------------------------------------------------- */

/*
 * One layout for every synthetic file, an ET_EXEC whose text is not at vaddr == offset:
 *   PT_LOAD R   off 0x0000 vaddr 0x400000 filesz 0x1000 (headers, note, .rodata at 0x400800)
 *   PT_LOAD R E off 0x1000 vaddr 0x411000 filesz 0x100  (.text)
 *   PT_LOAD RW  off 0x1100 vaddr 0x600000 filesz 0x20 memsz 0x1000 (.data, then bss)
 */
#define S_TEXT_OFF 0x1000
#define S_TEXT_ADDR 0x411000
#define S_TEXT_SIZE 0x100
#define S_RODATA_OFF 0x800
#define S_RODATA_ADDR 0x400800
#define S_DATA_OFF 0x1100
#define S_DATA_ADDR 0x600000
#define S_NOTE_OFF 0x200
/* Where a debug file claims the text is: the library must ignore it. */
#define S_DEBUG_TEXT_OFF 0x3000

struct synth {
	bool symtab; /* .symtab with the test symbols below */
	bool dynsym; /* .dynsym: a duplicate of take_gil, a dynsym-only clone, an UNDEF */
	bool debug; /* debug-file layout: .text NOBITS, executable segment at a bogus offset */
	const unsigned char *build_id; /* 20 bytes or NULL */
	const char *debuglink;
	uint32_t debuglink_crc;
	const void *debugdata;
	size_t debugdata_len;
	const struct ssym *dyn; /* .dynsym instead of the two fixed tables */
	size_t nr_dyn;
	bool endbr; /* take_gil and PyEval_SaveThread start with endbr64 */
	uint32_t data_word; /* first 4 bytes of .data (Py_Version's PY_VERSION_HEX) */
	int machine; /* e_machine; 0: EM_X86_64 */
};

struct ssym {
	const char *name;
	uint64_t value, size;
	int type;
	bool undef;
};

/* What .symtab holds; the comment says what the library must do with each. */
static const struct ssym symtab_syms[] = {
	{ "take_gil", S_TEXT_ADDR + 0x10, 0x20, STT_FUNC, false }, /* site, off 0x1010 */
	{ "drop_gil.constprop.0", S_TEXT_ADDR + 0x40, 0x10, STT_FUNC, false }, /* site */
	{ "take_gil.cold", S_TEXT_ADDR + 0x80, 0x8, STT_FUNC, false }, /* fragment */
	{ "drop_gil", S_RODATA_ADDR + 0x10, 0x10, STT_FUNC, false }, /* not executable */
	{ "take_gil.isra.0", 0x700000, 0x10, STT_FUNC, false }, /* outside every segment */
	{ "take_gil.lto_priv.0", S_TEXT_ADDR + 0x90, 0, STT_FUNC, false }, /* size 0 */
	{ "drop_gil.lto_priv.1", S_TEXT_ADDR + 0xa0, 0x10, STT_OBJECT, false }, /* not a FUNC */
	{ "take_gil.llvm.42", S_TEXT_ADDR + 0xf8, 0x20, STT_FUNC, false }, /* runs off the end */
	{ "drop_gil_impl.lto_priv.0", S_TEXT_ADDR + 0xc0, 0x10, STT_FUNC, false }, /* other fn */
	{ "take_gil.constprop.3", 0, 0x10, STT_FUNC, false }, /* address 0 */
	{ "drop_gil.isra.1", S_DATA_ADDR + 0x800, 0x10, STT_FUNC, false }, /* in bss */
	{ "PyEval_SaveThread", S_TEXT_ADDR + 0xd0, 0x10, STT_FUNC, false },
};

static const struct ssym dynsym_syms[] = {
	{ "take_gil", S_TEXT_ADDR + 0x10, 0x20, STT_FUNC, false }, /* duplicate of .symtab's */
	{ "drop_gil.isra.0", S_TEXT_ADDR + 0x60, 0x10, STT_FUNC, false }, /* site, "dynsym" */
	{ "take_gil.constprop.9", S_TEXT_ADDR + 0xe0, 0x10, STT_FUNC, true }, /* UNDEF: a PLT */
};

static const struct ssym dynsym_plain[] = {
	{ "PyEval_SaveThread", S_TEXT_ADDR + 0xd0, 0x10, STT_FUNC, false },
	{ "malloc", 0, 0, STT_FUNC, true },
};

struct strbuf {
	char buf[1024];
	size_t len;
};

static Elf64_Word str_add(struct strbuf *sb, const char *s)
{
	size_t n = strlen(s) + 1, at = sb->len;

	if (!at) {
		sb->buf[0] = '\0';
		at = sb->len = 1;
	}
	assert_true(at + n <= sizeof(sb->buf));
	memcpy(sb->buf + at, s, n);
	sb->len += n;
	return (Elf64_Word)at;
}

struct wsec {
	const char *name;
	Elf64_Word type;
	uint64_t flags, addr, offset, size, entsize, align;
	Elf64_Word link, info;
	const void *buf;
	Elf_Type dtype;
};

static size_t add_syms(Elf64_Sym *out, struct strbuf *str, const struct ssym *in, size_t n,
		       Elf64_Half text_ndx)
{
	size_t i;

	memset(&out[0], 0, sizeof(out[0]));
	for (i = 0; i < n; i++) {
		Elf64_Sym *s = &out[i + 1];

		memset(s, 0, sizeof(*s));
		s->st_name = str_add(str, in[i].name);
		s->st_value = in[i].value;
		s->st_size = in[i].size;
		s->st_info = ELF64_ST_INFO(in[i].undef ? STB_GLOBAL : STB_LOCAL, in[i].type);
		s->st_shndx = in[i].undef ? SHN_UNDEF : text_ndx;
	}
	return n + 1;
}

static void write_synth(const char *path, const struct synth *sp)
{
	unsigned char text[S_TEXT_SIZE], rodata[0x40], data[0x20], note[36], link[256];
	Elf64_Sym symtab[ARRAY_SIZE(symtab_syms) + 1], dynsym[16];
	struct strbuf shstr = { .len = 0 }, str = { .len = 0 }, dynstr = { .len = 0 };
	struct wsec secs[16];
	size_t nsec = 0, nsym = 0, ndyn = 0, i, linklen = 0;
	uint64_t cursor = 0x1200;
	Elf64_Word strndx; /* section index of the string table that follows a symbol table */
	Elf64_Ehdr *eh;
	Elf64_Phdr *ph;
	Elf_Scn *scn;
	Elf_Data *d;
	Elf *elf;
	int fd;
	/* Section indices are fixed by the order below: 1 .note, 2 .rodata, 3 .text, 4 .data. */
	const Elf64_Half text_ndx = 3;

	for (i = 0; i < sizeof(text); i++)
		text[i] = (unsigned char)(i * 7 + 0x31);
	if (sp->endbr) {
		memcpy(text + 0x10, "\xf3\x0f\x1e\xfa", 4);
		memcpy(text + 0xd0, "\xf3\x0f\x1e\xfa", 4);
	}
	memset(rodata, 0xaa, sizeof(rodata));
	memset(data, 0x55, sizeof(data));
	if (sp->data_word)
		memcpy(data, &sp->data_word, 4);

	secs[nsec++] = (struct wsec){ .name = ".note.gnu.build-id", .type = SHT_NOTE,
				      .flags = SHF_ALLOC, .addr = 0x400000 + S_NOTE_OFF,
				      .offset = S_NOTE_OFF, .size = sizeof(note), .align = 4,
				      .buf = note, .dtype = ELF_T_BYTE };
	if (sp->build_id) {
		memcpy(note, (const uint32_t[]){ 4, 20, NT_GNU_BUILD_ID }, 12);
		memcpy(note + 12, "GNU", 4);
		memcpy(note + 16, sp->build_id, 20);
	} else {
		/* Keep the section but make it a note of another kind. */
		memcpy(note, (const uint32_t[]){ 4, 20, NT_GNU_ABI_TAG }, 12);
		memcpy(note + 12, "GNU", 4);
		memset(note + 16, 0, 20);
	}
	secs[nsec++] = (struct wsec){ .name = ".rodata", .type = SHT_PROGBITS, .flags = SHF_ALLOC,
				      .addr = S_RODATA_ADDR, .offset = S_RODATA_OFF,
				      .size = sizeof(rodata), .align = 16, .buf = rodata,
				      .dtype = ELF_T_BYTE };
	secs[nsec++] = (struct wsec){ .name = ".text", .type = sp->debug ? SHT_NOBITS : SHT_PROGBITS,
				      .flags = SHF_ALLOC | SHF_EXECINSTR, .addr = S_TEXT_ADDR,
				      .offset = sp->debug ? S_DEBUG_TEXT_OFF : S_TEXT_OFF,
				      .size = sizeof(text), .align = 16,
				      .buf = sp->debug ? NULL : text, .dtype = ELF_T_BYTE };
	secs[nsec++] = (struct wsec){ .name = ".data", .type = SHT_PROGBITS,
				      .flags = SHF_ALLOC | SHF_WRITE, .addr = S_DATA_ADDR,
				      .offset = S_DATA_OFF, .size = sizeof(data), .align = 16,
				      .buf = data, .dtype = ELF_T_BYTE };

	if (sp->symtab) {
		nsym = add_syms(symtab, &str, symtab_syms, ARRAY_SIZE(symtab_syms), text_ndx);
		strndx = (Elf64_Word)nsec + 2;
		secs[nsec++] = (struct wsec){ .name = ".symtab", .type = SHT_SYMTAB,
					      .size = nsym * sizeof(Elf64_Sym),
					      .entsize = sizeof(Elf64_Sym), .align = 8,
					      .link = strndx, .info = 1, .buf = symtab,
					      .dtype = ELF_T_SYM };
		secs[nsec++] = (struct wsec){ .name = ".strtab", .type = SHT_STRTAB,
					      .size = str.len, .align = 1, .buf = str.buf,
					      .dtype = ELF_T_BYTE };
	}
	if (sp->dyn) {
		assert_true(sp->nr_dyn < ARRAY_SIZE(dynsym));
		ndyn = add_syms(dynsym, &dynstr, sp->dyn, sp->nr_dyn, text_ndx);
	} else if (sp->dynsym)
		ndyn = add_syms(dynsym, &dynstr, dynsym_syms, ARRAY_SIZE(dynsym_syms), text_ndx);
	else
		ndyn = add_syms(dynsym, &dynstr, dynsym_plain, ARRAY_SIZE(dynsym_plain), text_ndx);
	strndx = (Elf64_Word)nsec + 2;
	secs[nsec++] = (struct wsec){ .name = ".dynsym", .type = SHT_DYNSYM,
				      .size = ndyn * sizeof(Elf64_Sym),
				      .entsize = sizeof(Elf64_Sym), .align = 8,
				      .link = strndx, .info = 1, .buf = dynsym,
				      .dtype = ELF_T_SYM };
	secs[nsec++] = (struct wsec){ .name = ".dynstr", .type = SHT_STRTAB, .size = dynstr.len,
				      .align = 1, .buf = dynstr.buf, .dtype = ELF_T_BYTE };
	if (sp->debuglink) {
		memset(link, 0, sizeof(link));
		linklen = strlen(sp->debuglink) + 1;
		linklen = (linklen + 3) & ~(size_t)3;
		assert_true(linklen + 4 <= sizeof(link));
		memcpy(link, sp->debuglink, strlen(sp->debuglink));
		memcpy(link + linklen, &sp->debuglink_crc, 4);
		secs[nsec++] = (struct wsec){ .name = ".gnu_debuglink", .type = SHT_PROGBITS,
					      .size = linklen + 4, .align = 4, .buf = link,
					      .dtype = ELF_T_BYTE };
	}
	if (sp->debugdata)
		secs[nsec++] = (struct wsec){ .name = ".gnu_debugdata", .type = SHT_PROGBITS,
					      .size = sp->debugdata_len, .align = 1,
					      .buf = sp->debugdata, .dtype = ELF_T_BYTE };
	secs[nsec++] = (struct wsec){ .name = ".shstrtab", .type = SHT_STRTAB, .align = 1,
				      .buf = shstr.buf, .dtype = ELF_T_BYTE };
	assert_int_not_equal(elf_version(EV_CURRENT), EV_NONE);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	elf = elf_begin(fd, ELF_C_WRITE, NULL);
	assert_non_null(elf);
	elf_flagelf(elf, ELF_C_SET, ELF_F_LAYOUT);
	eh = elf64_newehdr(elf);
	assert_non_null(eh);
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_type = ET_EXEC;
	eh->e_machine = sp->machine ? sp->machine : EM_X86_64;
	eh->e_version = EV_CURRENT;
	eh->e_entry = S_TEXT_ADDR;
	eh->e_phoff = sizeof(Elf64_Ehdr);

	ph = elf64_newphdr(elf, 4);
	assert_non_null(ph);
	ph[0] = (Elf64_Phdr){ PT_LOAD, PF_R, 0, 0x400000, 0x400000, 0x1000, 0x1000, 0x1000 };
	ph[1] = (Elf64_Phdr){ PT_LOAD, PF_R | PF_X, sp->debug ? S_DEBUG_TEXT_OFF : S_TEXT_OFF,
			      S_TEXT_ADDR, S_TEXT_ADDR, S_TEXT_SIZE, S_TEXT_SIZE, 0x1000 };
	ph[2] = (Elf64_Phdr){ PT_LOAD, PF_R | PF_W, S_DATA_OFF, S_DATA_ADDR, S_DATA_ADDR,
			      sizeof(data), 0x1000, 0x1000 };
	ph[3] = (Elf64_Phdr){ PT_NOTE, PF_R, S_NOTE_OFF, 0x400000 + S_NOTE_OFF,
			      0x400000 + S_NOTE_OFF, sizeof(note), sizeof(note), 4 };

	for (i = 0; i < nsec; i++)
		secs[i].name = (const char *)(uintptr_t)str_add(&shstr, secs[i].name);
	secs[nsec - 1].size = shstr.len;
	for (i = 0; i < nsec; i++) {
		Elf64_Shdr *sh;

		scn = elf_newscn(elf);
		assert_non_null(scn);
		sh = elf64_getshdr(scn);
		sh->sh_name = (Elf64_Word)(uintptr_t)secs[i].name;
		sh->sh_type = secs[i].type;
		sh->sh_flags = secs[i].flags;
		sh->sh_addr = secs[i].addr;
		sh->sh_size = secs[i].size;
		sh->sh_link = secs[i].link;
		sh->sh_info = secs[i].info;
		sh->sh_entsize = secs[i].entsize;
		sh->sh_addralign = secs[i].align;
		if (secs[i].offset) {
			sh->sh_offset = secs[i].offset;
		} else {
			cursor = (cursor + 7) & ~(uint64_t)7;
			sh->sh_offset = cursor;
			cursor += secs[i].size;
		}
		if (!secs[i].buf)
			continue;
		d = elf_newdata(scn);
		assert_non_null(d);
		d->d_buf = (void *)secs[i].buf;
		d->d_size = secs[i].size;
		d->d_type = secs[i].dtype;
		d->d_align = secs[i].align;
		d->d_version = EV_CURRENT;
	}
	eh->e_shstrndx = (Elf64_Half)nsec;
	eh->e_shoff = (cursor + 7) & ~(uint64_t)7;
	assert_true(elf_update(elf, ELF_C_WRITE) >= 0);
	elf_end(elf);
	close(fd);
}

static const unsigned char bid_a[20] = { 0xc5, 0x61, 0xf3, 0xaa, 0x72, 0x32, 0xf2, 0xbd, 0x6a, 0xc6,
					 0xd5, 0x6b, 0xd4, 0x75, 0xf1, 0xc1, 0x54, 0xa0, 0x04, 0x86 };
static const char bid_a_hex[] = "c561f3aa7232f2bd6ac6d56bd475f1c154a00486";
static const unsigned char bid_b[20] = { 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a,
					 0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x10, 0x11, 0x12, 0x13, 0xff };

/* ---- gil_symbol_match ---------------------------------------------------------------------- */

static void test_symbol_match(void **state)
{
	static const struct {
		const char *name;
		bool ok;
		enum gil_func fn;
	} cases[] = {
		{ "take_gil", true, GIL_FN_TAKE },
		{ "drop_gil", true, GIL_FN_DROP },
		{ "take_gil.constprop.0", true, GIL_FN_TAKE },
		{ "drop_gil.constprop.12", true, GIL_FN_DROP },
		{ "take_gil.lto_priv.0", true, GIL_FN_TAKE },
		{ "drop_gil.lto_priv.0", true, GIL_FN_DROP },
		{ "take_gil.isra.0", true, GIL_FN_TAKE },
		{ "drop_gil.llvm.11939201427281924733", true, GIL_FN_DROP },
		{ "take_gil.isra.0.constprop.1", true, GIL_FN_TAKE },
		{ "drop_gil.constprop.0.isra.0.lto_priv.3", true, GIL_FN_DROP },
		{ "take_gil.cold", false, 0 },
		{ "take_gil.lto_priv.0.cold", false, 0 },
		{ "drop_gil.part.0", false, 0 },
		{ "take_gil.isra.0.part.1", false, 0 },
		{ "drop_gil_impl.lto_priv.0", false, 0 },
		{ "drop_gil_impl", false, 0 },
		{ "take_gil_foo", false, 0 },
		{ "_take_gil", false, 0 },
		{ "Take_gil", false, 0 },
		{ "take_gi", false, 0 },
		{ "take_gil.", false, 0 },
		{ "take_gil.constprop", false, 0 },
		{ "take_gil.constprop.", false, 0 },
		{ "take_gil.constprop.0a", false, 0 },
		{ "take_gil.constprop.x", false, 0 },
		{ "take_gil.constprop.0.", false, 0 },
		{ "take_gil..constprop.0", false, 0 },
		{ "take_gil.localalias", false, 0 },
		{ "take_gil.constprop_0", false, 0 },
		{ "take_gil.isra00", false, 0 },
		{ "take_gil@@GLIBC_2.2.5", false, 0 },
		{ "take_gil ", false, 0 },
		{ "PyEval_RestoreThread", false, 0 },
		{ "", false, 0 },
	};
	enum gil_func fn;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		fn = (enum gil_func)-1;
		if (gil_symbol_match(cases[i].name, &fn) != cases[i].ok)
			fail_msg("gil_symbol_match(\"%s\") != %d", cases[i].name, cases[i].ok);
		if (cases[i].ok && fn != cases[i].fn)
			fail_msg("gil_symbol_match(\"%s\") gave fn %d", cases[i].name, (int)fn);
	}
	assert_false(gil_symbol_match(NULL, &fn));
	assert_true(gil_symbol_match("drop_gil", NULL));
}

/* ---- gil_elf_addr_to_offset / gil_elf_build_id on a synthetic ET_EXEC ---------------------- */

static Elf *open_elf(const char *path, int *fd)
{
	Elf *elf;

	assert_int_not_equal(elf_version(EV_CURRENT), EV_NONE);
	*fd = open(path, O_RDONLY);
	assert_true(*fd >= 0);
	elf = elf_begin(*fd, ELF_C_READ, NULL);
	assert_non_null(elf);
	return elf;
}

static void test_addr_to_offset(void **state)
{
	static const struct {
		uint64_t addr;
		int ret;
		uint64_t offset;
		bool exec;
	} cases[] = {
		{ S_TEXT_ADDR, 0, S_TEXT_OFF, true },
		{ S_TEXT_ADDR + 0x10, 0, S_TEXT_OFF + 0x10, true },
		{ S_TEXT_ADDR + S_TEXT_SIZE - 1, 0, S_TEXT_OFF + S_TEXT_SIZE - 1, true },
		{ S_TEXT_ADDR + S_TEXT_SIZE, -1, 0, false }, /* one past the segment */
		{ S_TEXT_ADDR - 1, -1, 0, false }, /* in the gap before it */
		{ 0x400000, 0, 0, false },
		{ S_RODATA_ADDR + 0x10, 0, S_RODATA_OFF + 0x10, false },
		{ S_DATA_ADDR + 0x10, 0, S_DATA_OFF + 0x10, false },
		{ S_DATA_ADDR + 0x800, -1, 0, false }, /* bss: no file bytes */
		{ 0x700000, -1, 0, false },
		{ 0, -1, 0, false },
		{ UINT64_MAX, -1, 0, false },
	};
	char *path = xfmt("%s/exec", tmpdir);
	struct synth sp = { .symtab = true, .build_id = bid_a };
	uint64_t off;
	bool exec;
	size_t i;
	Elf *elf;
	int fd;

	write_synth(path, &sp);
	elf = open_elf(path, &fd);
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		off = 0xdead;
		exec = !cases[i].exec;
		if (gil_elf_addr_to_offset(elf, cases[i].addr, &off, &exec) != cases[i].ret)
			fail_msg("addr %#llx: wrong return", (unsigned long long)cases[i].addr);
		if (cases[i].ret)
			continue;
		assert_int_equal(off, cases[i].offset);
		assert_int_equal(exec, cases[i].exec);
	}
	assert_int_equal(gil_elf_addr_to_offset(NULL, S_TEXT_ADDR, &off, &exec), -1);
	elf_end(elf);
	close(fd);
	free(path);
}

static void test_build_id(void **state)
{
	char *path = xfmt("%s/bid", tmpdir), buf[129], small[8];
	struct synth sp = { .symtab = true, .build_id = bid_a };
	Elf *elf;
	int fd;

	write_synth(path, &sp);
	elf = open_elf(path, &fd);
	assert_int_equal(gil_elf_build_id(elf, buf, sizeof(buf)), 20);
	assert_string_equal(buf, bid_a_hex);
	assert_int_equal(gil_elf_build_id(elf, small, sizeof(small)), -1);
	elf_end(elf);
	close(fd);

	sp.build_id = NULL;
	write_synth(path, &sp);
	elf = open_elf(path, &fd);
	assert_int_equal(gil_elf_build_id(elf, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "");
	elf_end(elf);
	close(fd);
	free(path);
}

/* ---- gil_symbols_read on synthetic files --------------------------------------------------- */

static struct gil_symbols *read_ok(const char *path, const char *root)
{
	struct gil_symbols *s = NULL;
	char err[256] = "";

	if (gil_symbols_read(path, root, &s, err, sizeof(err)))
		fail_msg("gil_symbols_read(%s): %s", path, err);
	assert_non_null(s);
	assert_string_equal(s->path, path);
	return s;
}

static void check_site(const struct gil_symbols *s, const char *name, enum gil_func fn,
		       uint64_t addr, uint64_t size, const char *method)
{
	const struct gil_site *site = find_site(s, name);

	if (!site)
		fail_msg("no site %s", name);
	assert_int_equal(site->fn, fn);
	assert_int_equal(site->addr, addr);
	/* The probed object's text is always at file offset S_TEXT_OFF, vaddr S_TEXT_ADDR. */
	assert_int_equal(site->offset, addr - S_TEXT_ADDR + S_TEXT_OFF);
	assert_int_equal(site->size, size);
	assert_string_equal(site->method, method);
	assert_true(site->retprobe);
}

static void test_synthetic_tables(void **state)
{
	char *path = xfmt("%s/full", tmpdir);
	struct synth sp = { .symtab = true, .dynsym = true, .build_id = bid_a };
	const struct gil_site *site;
	struct gil_symbols *s;
	unsigned char *file;
	size_t len, i;

	write_synth(path, &sp);
	s = read_ok(path, NULL);
	assert_string_equal(s->build_id, bid_a_hex);
	assert_string_equal(s->symbols_from, path);
	assert_int_equal(s->nr_sites, 3);
	check_site(s, "take_gil", GIL_FN_TAKE, S_TEXT_ADDR + 0x10, 0x20, "symtab");
	check_site(s, "drop_gil.constprop.0", GIL_FN_DROP, S_TEXT_ADDR + 0x40, 0x10, "symtab");
	check_site(s, "drop_gil.isra.0", GIL_FN_DROP, S_TEXT_ADDR + 0x60, 0x10, "dynsym");
	assert_true(s->has_take);
	assert_true(s->has_drop);

	/* The bytes at each offset are the text bytes written at that address. */
	file = read_file(path, &len);
	for (i = 0; i < s->nr_sites; i++) {
		site = &s->sites[i];
		assert_true(site->offset + site->size <= len);
		assert_int_equal(file[site->offset],
				 (unsigned char)((site->addr - S_TEXT_ADDR) * 7 + 0x31));
	}
	free(file);
	gil_symbols_free(s);

	/* A table naming neither function is not an error. */
	sp = (struct synth){ .symtab = false, .dynsym = false };
	write_synth(path, &sp);
	s = read_ok(path, NULL);
	assert_int_equal(s->nr_sites, 0);
	assert_null(s->sites);
	assert_false(s->has_take);
	assert_false(s->has_drop);
	assert_string_equal(s->build_id, "");
	assert_string_equal(s->symbols_from, path);
	gil_symbols_free(s);
	free(path);
}

/* A stripped object (only .dynsym without the functions) and its debug file. */
static char *make_stripped(const char *dir, const char *name, const unsigned char *bid,
			   const char *debuglink, uint32_t crc)
{
	struct synth sp = { .build_id = bid, .debuglink = debuglink, .debuglink_crc = crc };
	char *path = xfmt("%s/%s", dir, name);

	mkdirs(dir);
	write_synth(path, &sp);
	return path;
}

static void make_debug(const char *path, const unsigned char *bid)
{
	struct synth sp = { .symtab = true, .debug = true, .build_id = bid };
	char *dir = strdup(path);

	*strrchr(dir, '/') = '\0';
	mkdirs(dir);
	write_synth(path, &sp);
	free(dir);
}

static void check_debug_sites(const struct gil_symbols *s, const char *method, const char *from)
{
	assert_int_equal(s->nr_sites, 2);
	/* Offsets come from the object: the debug file puts its text at S_DEBUG_TEXT_OFF. */
	check_site(s, "take_gil", GIL_FN_TAKE, S_TEXT_ADDR + 0x10, 0x20, method);
	check_site(s, "drop_gil.constprop.0", GIL_FN_DROP, S_TEXT_ADDR + 0x40, 0x10, method);
	assert_true(s->has_take);
	assert_true(s->has_drop);
	assert_string_equal(s->symbols_from, from);
}

static void test_debug_build_id(void **state)
{
	char *root = xfmt("%s/bidroot", tmpdir), *dir = xfmt("%s/usr/bin", root);
	char *dbg = xfmt("%s/usr/lib/debug/.build-id/c5/%s.debug", root, bid_a_hex + 2);
	char *ldbg = xfmt("%s/.debug/py.debug", dir), *rootslash = xfmt("%s/", root);
	struct gil_symbols *s;
	char *obj;

	make_debug(dbg, bid_a);
	/* A valid debuglink exists too: the build-id directory comes first. */
	make_debug(ldbg, bid_a);
	obj = make_stripped(dir, "python", bid_a, "py.debug", crc32_file(ldbg));

	s = read_ok(obj, root);
	assert_string_equal(s->build_id, bid_a_hex);
	check_debug_sites(s, "build-id", dbg);
	gil_symbols_free(s);

	/* Trailing slash on the root. */
	s = read_ok(obj, rootslash);
	check_debug_sites(s, "build-id", dbg);
	gil_symbols_free(s);

	/* Another root: no build-id file there, so the debuglink is used. */
	s = read_ok(obj, tmpdir);
	check_debug_sites(s, "debuglink", ldbg);
	gil_symbols_free(s);

	/* A build-id file of another build is refused, never guessed from. */
	make_debug(dbg, bid_b);
	unlink(ldbg);
	s = read_ok(obj, root);
	assert_int_equal(s->nr_sites, 0);
	assert_false(s->has_take);
	assert_string_equal(s->symbols_from, obj);
	gil_symbols_free(s);

	free(root);
	free(rootslash);
	free(dir);
	free(dbg);
	free(ldbg);
	free(obj);
}

static void test_debuglink(void **state)
{
	char *root = xfmt("%s/linkroot", tmpdir), *dir = xfmt("%s/opt/py/bin", root);
	char *next = xfmt("%s/python.dbg", dir), *dotdebug = xfmt("%s/.debug/python.dbg", dir);
	char *global = xfmt("%s/usr/lib/debug%s/python.dbg", root, dir + strlen(root));
	char *other = xfmt("%s/otherroot", tmpdir);
	char *global_abs = xfmt("%s/usr/lib/debug%s/python.dbg", other, dir);
	struct gil_symbols *s;
	char *obj;
	uint32_t crc;

	/* Every debug file is the same bytes, so one CRC fits all three places. */
	make_debug(global, bid_a);
	crc = crc32_file(global);
	obj = make_stripped(dir, "python", bid_a, "python.dbg", crc);

	/* <root>/usr/lib/debug/<dir as seen in root>/ */
	s = read_ok(obj, root);
	check_debug_sites(s, "debuglink", global);
	gil_symbols_free(s);

	/* A path that is not under the root keeps its whole directory. */
	make_debug(global_abs, bid_a);
	s = read_ok(obj, other);
	check_debug_sites(s, "debuglink", global_abs);
	gil_symbols_free(s);

	/* <dir>/.debug/ wins over the global directory. */
	make_debug(dotdebug, bid_a);
	s = read_ok(obj, root);
	check_debug_sites(s, "debuglink", dotdebug);
	gil_symbols_free(s);

	/* <dir>/ wins over <dir>/.debug/. */
	make_debug(next, bid_a);
	s = read_ok(obj, root);
	check_debug_sites(s, "debuglink", next);
	gil_symbols_free(s);

	/* A CRC mismatch refuses the file even though the build-id matches. */
	free(obj);
	obj = make_stripped(dir, "python", bid_a, "python.dbg", crc ^ 1);
	s = read_ok(obj, root);
	assert_int_equal(s->nr_sites, 0);
	gil_symbols_free(s);

	/* Without a build-id on the object nothing proves the match: refused as well. */
	free(obj);
	obj = make_stripped(dir, "python", NULL, "python.dbg", crc);
	make_debug(next, NULL);
	s = read_ok(obj, root);
	assert_int_equal(s->nr_sites, 0);
	assert_string_equal(s->build_id, "");
	gil_symbols_free(s);

	free(root);
	free(dir);
	free(next);
	free(dotdebug);
	free(global);
	free(global_abs);
	free(other);
	free(obj);
}

/*
 * A target controls its debuglink name and the files under its root: a name with a '/' is not
 * followed out of the directory, a FIFO or a device node is never opened (a FIFO would block
 * setup), and a link resolves inside the root, never to the recorder's own files.
 */
static void test_debuglink_hostile(void **state)
{
	char *root = xfmt("%s/hostileroot", tmpdir), *dir = xfmt("%s/opt/py/bin", root);
	char *outside = xfmt("%s/outside.dbg", tmpdir), *next = xfmt("%s/python.dbg", dir);
	char *up = xfmt("%s/opt/py/escape.dbg", root);
	struct gil_symbols *s;
	char *obj;
	uint32_t crc;

	make_debug(outside, bid_a);
	crc = crc32_file(outside);
	mkdirs(dir);

	/* "../escape.dbg" names a file one directory up: refused, although it would match */
	make_debug(up, bid_a);
	obj = make_stripped(dir, "python", bid_a, "../escape.dbg", crc);
	s = read_ok(obj, root);
	assert_int_equal(s->nr_sites, 0);
	gil_symbols_free(s);
	free(obj);

	/* A FIFO where the debug file would be: not opened, so not waited on */
	obj = make_stripped(dir, "python", bid_a, "python.dbg", crc);
	assert_int_equal(mkfifo(next, 0600), 0);
	alarm(10);
	s = read_ok(obj, root);
	alarm(0);
	assert_int_equal(s->nr_sites, 0);
	gil_symbols_free(s);
	unlink(next);

	/* An absolute link to a matching file outside the root resolves inside the root: none */
	assert_int_equal(symlink(outside, next), 0);
	s = read_ok(obj, root);
	assert_int_equal(s->nr_sites, 0);
	gil_symbols_free(s);
	unlink(next);

	/* The same file reached without a link is used: what refused it above was the link */
	assert_int_equal(link(outside, next), 0);
	s = read_ok(obj, root);
	check_debug_sites(s, "debuglink", next);
	gil_symbols_free(s);

	free(root);
	free(dir);
	free(outside);
	free(next);
	free(up);
	free(obj);
}

/* Run xz on @path, keeping it; -1 when xz is not installed. */
static int run_xz(const char *path)
{
	int status;
	pid_t pid;

	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		execlp("xz", "xz", "-z", "-k", "-f", "-q", path, (char *)NULL);
		_exit(127);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (!WIFEXITED(status) || WEXITSTATUS(status) == 127)
		return -1;
	return WEXITSTATUS(status) ? -1 : 0;
}

static void test_minidebuginfo(void **state)
{
	char *dir = xfmt("%s/mdi", tmpdir), *mini = xfmt("%s/mini", dir);
	char *xz = xfmt("%s.xz", mini), *obj = xfmt("%s/libpython.so", dir);
	struct synth mp = { .symtab = true, .debug = true };
	struct synth op = { .build_id = bid_a };
	struct gil_symbols *s;
	unsigned char junk[64];
	void *blob;
	size_t len;

	mkdirs(dir);
	write_synth(mini, &mp);
	if (run_xz(mini)) {
		print_message("xz(1) not available\n");
		goto out;
	}
	blob = read_file(xz, &len);
	op.debugdata = blob;
	op.debugdata_len = len;
	write_synth(obj, &op);
	/* An empty root: neither the build-id directory nor a debuglink can answer. */
	s = read_ok(obj, dir);
#ifdef HAVE_LZMA
	check_debug_sites(s, "minidebuginfo", obj);
#else
	assert_int_equal(s->nr_sites, 0);
#endif
	gil_symbols_free(s);
	free(blob);

	/* An embedded ELF that states another build-id is refused. */
	mp.build_id = bid_b;
	write_synth(mini, &mp);
	assert_int_equal(run_xz(mini), 0);
	blob = read_file(xz, &len);
	op.debugdata = blob;
	op.debugdata_len = len;
	write_synth(obj, &op);
	s = read_ok(obj, dir);
	assert_int_equal(s->nr_sites, 0);
	gil_symbols_free(s);
	free(blob);

	/* Garbage in .gnu_debugdata: no sites, no error. */
	memset(junk, 0xfd, sizeof(junk));
	memcpy(junk, "\3757zXZ", 6);
	op.debugdata = junk;
	op.debugdata_len = sizeof(junk);
	write_synth(obj, &op);
	s = read_ok(obj, dir);
	assert_int_equal(s->nr_sites, 0);
	gil_symbols_free(s);
out:
	free(dir);
	free(mini);
	free(xz);
	free(obj);
}

/* ---- real interpreters --------------------------------------------------------------------- */

/*
 * Check a site of a real object without the library's code path: the site must lie in an
 * executable PT_LOAD, its bytes at the file offset must equal the bytes the section headers
 * place at its address, and the symbol file must name it with that value and size.
 */
static void verify_real_site(const char *objpath, const struct gil_symbols *s,
			     const struct gil_site *site)
{
	unsigned char *a, *b;
	bool seg = false, sec = false, sym = false;
	Elf_Scn *scn = NULL;
	struct stat st;
	GElf_Phdr ph;
	GElf_Shdr sh;
	GElf_Sym gs;
	Elf_Data *d;
	size_t n, i;
	Elf *elf;
	int fd;

	assert_true(site->addr != 0);
	assert_true(site->size > 0);
	assert_int_equal(site->role, GIL_SITE_ENTRY);
	assert_true(site->retprobe);
	assert_true(site->skipped == 0 || site->skipped == 4);
	elf = open_elf(objpath, &fd);
	assert_int_equal(fstat(fd, &st), 0);
	assert_true(site->offset + site->size <= (uint64_t)st.st_size);
	assert_int_equal(elf_getphdrnum(elf, &n), 0);
	for (i = 0; i < n; i++) {
		assert_non_null(gelf_getphdr(elf, (int)i, &ph));
		if (ph.p_type != PT_LOAD || site->addr < ph.p_vaddr ||
		    site->addr + site->size > ph.p_vaddr + ph.p_filesz)
			continue;
		assert_true(ph.p_flags & PF_X);
		assert_int_equal(site->offset, site->addr - ph.p_vaddr + ph.p_offset);
		seg = true;
	}
	assert_true(seg);

	while ((scn = elf_nextscn(elf, scn))) {
		assert_non_null(gelf_getshdr(scn, &sh));
		if (sh.sh_type != SHT_PROGBITS || !(sh.sh_flags & SHF_EXECINSTR) ||
		    site->addr < sh.sh_addr || site->addr + site->size > sh.sh_addr + sh.sh_size)
			continue;
		a = malloc(site->size);
		b = malloc(site->size);
		assert_non_null(a);
		assert_non_null(b);
		assert_int_equal(pread(fd, a, site->size, (off_t)site->offset),
				 (ssize_t)site->size);
		assert_int_equal(pread(fd, b, site->size,
				       (off_t)(sh.sh_offset + site->addr - sh.sh_addr)),
				 (ssize_t)site->size);
		assert_memory_equal(a, b, site->size);
		free(a);
		free(b);
		sec = true;
		break;
	}
	assert_true(sec);
	elf_end(elf);
	close(fd);

	elf = open_elf(s->symbols_from, &fd);
	scn = NULL;
	while (!sym && (scn = elf_nextscn(elf, scn))) {
		assert_non_null(gelf_getshdr(scn, &sh));
		if ((sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) || !sh.sh_entsize)
			continue;
		d = elf_getdata(scn, NULL);
		assert_non_null(d);
		for (i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			assert_non_null(gelf_getsym(d, (int)i, &gs));
			if (strcmp(elf_strptr(elf, sh.sh_link, gs.st_name), site->symbol))
				continue;
			assert_int_equal(GELF_ST_TYPE(gs.st_info), STT_FUNC);
			/* A probe after an endbr64 sits @skipped bytes past the symbol. */
			assert_int_equal(gs.st_value, site->addr - site->skipped);
			assert_int_equal(gs.st_size, site->size);
			sym = true;
			break;
		}
	}
	assert_true(sym);
	elf_end(elf);
	close(fd);
}

static size_t count_role(const struct gil_symbols *s, enum gil_site_role role, const char *method)
{
	size_t i, n = 0;

	for (i = 0; i < s->nr_sites; i++)
		n += s->sites[i].role == role && !strcmp(s->sites[i].method, method);
	return n;
}

/*
 * What objdump (an independent decoder) says about @addr when it decodes the function at
 * [@from, @to): 1 an instruction starts there, 0 not; *@prev gets the mnemonic of the
 * instruction before it, *@target_of whether a branch of the function jumps to it.
 * -1 when objdump cannot be run.
 */
static int objdump_at(const char *path, uint64_t from, uint64_t to, uint64_t addr, char *prev,
		      size_t prevlen, bool *target_of)
{
	char *cmd, line[512], last[64] = "", mn[64];
	unsigned long long a, t;
	int found = 0, lines = 0;
	const char *tab;
	FILE *f;

	cmd = xfmt("objdump -d --no-show-raw-insn --start-address=%#llx --stop-address=%#llx '%s' 2>/dev/null",
		   (unsigned long long)from, (unsigned long long)to, path);
	f = popen(cmd, "r");
	free(cmd);
	if (!f)
		return -1;
	*target_of = false;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, " %llx:", &a) != 1 || !(tab = strchr(line, '\t')))
			continue;
		lines++;
		if (sscanf(tab + 1, "%63s", mn) != 1)
			continue;
		if (a == addr) {
			found = 1;
			snprintf(prev, prevlen, "%s", last);
		}
		snprintf(last, sizeof(last), "%s", mn);
		if (mn[0] == 'j' && sscanf(tab + 1, "%*s %llx", &t) == 1 && t == addr)
			*target_of = true;
	}
	if (pclose(f) != 0 || !lines)
		return -1;
	return found;
}

/*
 * A site of an inlined copy, checked apart from the library: in an executable PT_LOAD at the
 * offset the program headers give, with the bytes the section headers place there, inside a
 * function of the caller it names, and an instruction start when objdump decodes that
 * function. An exit must be reachable: a branch of the function goes there, or the
 * instruction before it is not a jump or a return.
 */
static void verify_inline_site(const char *objpath, const struct gil_symbols *s,
			       const struct gil_site *site)
{
	const char *at = strchr(site->symbol, '@'), *name;
	char caller[128], prev[64] = "";
	unsigned char a[16], b[16];
	uint64_t fstart = 0, fend = 0;
	bool seg = false, sec = false, target_of;
	Elf_Scn *scn = NULL;
	size_t n, i, len;
	GElf_Phdr ph;
	GElf_Shdr sh;
	GElf_Sym gs;
	Elf_Data *d;
	Elf *elf;
	int fd, r;

	assert_string_equal(site->method, "dwarf-inline");
	assert_false(site->retprobe);
	assert_false(site->approximate);
	assert_int_equal(site->size, 0);
	assert_int_equal(site->skipped, 0);
	assert_non_null(at);
	assert_true(!strncmp(site->symbol, site->fn == GIL_FN_TAKE ? "take_gil@" : "drop_gil@", 9));
	snprintf(caller, sizeof(caller), "%s", at + 1);

	elf = open_elf(objpath, &fd);
	assert_int_equal(elf_getphdrnum(elf, &n), 0);
	for (i = 0; i < n; i++) {
		assert_non_null(gelf_getphdr(elf, (int)i, &ph));
		if (ph.p_type != PT_LOAD || site->addr < ph.p_vaddr ||
		    site->addr >= ph.p_vaddr + ph.p_filesz)
			continue;
		assert_true(ph.p_flags & PF_X);
		assert_int_equal(site->offset, site->addr - ph.p_vaddr + ph.p_offset);
		seg = true;
	}
	assert_true(seg);
	while ((scn = elf_nextscn(elf, scn))) {
		assert_non_null(gelf_getshdr(scn, &sh));
		if (sh.sh_type != SHT_PROGBITS || !(sh.sh_flags & SHF_EXECINSTR) ||
		    site->addr < sh.sh_addr || site->addr >= sh.sh_addr + sh.sh_size)
			continue;
		len = sh.sh_addr + sh.sh_size - site->addr < sizeof(a) ?
			      sh.sh_addr + sh.sh_size - site->addr : sizeof(a);
		assert_int_equal(pread(fd, a, len, (off_t)site->offset), (ssize_t)len);
		assert_int_equal(pread(fd, b, len, (off_t)(sh.sh_offset + site->addr - sh.sh_addr)),
				 (ssize_t)len);
		assert_memory_equal(a, b, len);
		sec = true;
	}
	assert_true(sec);
	elf_end(elf);
	close(fd);

	/* The caller's symbol (os_stat.lto_priv.0, PyEval_SaveThread.cold...) holds the site. */
	elf = open_elf(s->symbols_from, &fd);
	scn = NULL;
	while (!fend && (scn = elf_nextscn(elf, scn))) {
		assert_non_null(gelf_getshdr(scn, &sh));
		if (sh.sh_type != SHT_SYMTAB || !sh.sh_entsize)
			continue;
		d = elf_getdata(scn, NULL);
		assert_non_null(d);
		for (i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			assert_non_null(gelf_getsym(d, (int)i, &gs));
			name = elf_strptr(elf, sh.sh_link, gs.st_name);
			if (GELF_ST_TYPE(gs.st_info) != STT_FUNC || !name ||
			    strncmp(name, caller, strlen(caller)) ||
			    (name[strlen(caller)] && name[strlen(caller)] != '.') ||
			    site->addr < gs.st_value || site->addr >= gs.st_value + gs.st_size)
				continue;
			fstart = gs.st_value;
			fend = gs.st_value + gs.st_size;
			break;
		}
	}
	elf_end(elf);
	close(fd);
	if (!fend)
		fail_msg("%s at %#llx: no function %s holds it", site->symbol,
			 (unsigned long long)site->addr, caller);

	r = objdump_at(objpath, fstart, fend, site->addr, prev, sizeof(prev), &target_of);
	if (r < 0) {
		print_message("objdump(1) not available: %s not decoded\n", site->symbol);
		return;
	}
	if (r != 1)
		fail_msg("%s at %#llx is not an instruction start", site->symbol,
			 (unsigned long long)site->addr);
	if (site->role == GIL_SITE_EXIT && !target_of &&
	    (!strncmp(prev, "jmp", 3) || !strncmp(prev, "ret", 3) || !strcmp(prev, "ud2") ||
	     !strcmp(prev, "hlt")))
		fail_msg("exit %s at %#llx follows a %s and nothing jumps there", site->symbol,
			 (unsigned long long)site->addr, prev);
}

static void print_sites(const struct gil_symbols *s)
{
	size_t i;

	for (i = 0; i < s->nr_sites; i++)
		print_message("  %s: %s %s addr %#llx offset %#llx size %llu skipped %u (%s)\n",
			      s->path, s->sites[i].role == GIL_SITE_EXIT ? "exit" : "entry",
			      s->sites[i].symbol, (unsigned long long)s->sites[i].addr,
			      (unsigned long long)s->sites[i].offset,
			      (unsigned long long)s->sites[i].size, s->sites[i].skipped,
			      s->sites[i].method);
}

static void test_pyenv(void **state)
{
	const char *root = getenv("PYENV_ROOT"), *home = getenv("HOME");
	char *pattern;
	struct gil_symbols *s;
	glob_t g;
	size_t i, j;
	int major, minor;

	if (root && *root)
		pattern = xfmt("%s/versions/*/lib/libpython*.so.1.0", root);
	else
		pattern = xfmt("%s/.pyenv/versions/*/lib/libpython*.so.1.0", home ? home : "/root");
	if (glob(pattern, 0, NULL, &g)) {
		print_message("no pyenv libpython matches %s\n", pattern);
		free(pattern);
		skip();
	}
	free(pattern);
	for (i = 0; i < g.gl_pathc; i++) {
		const char *p = strstr(g.gl_pathv[i], "/libpython");

		assert_non_null(p);
		assert_int_equal(sscanf(p, "/libpython%d.%d", &major, &minor), 2);
		s = read_ok(g.gl_pathv[i], NULL);
		print_sites(s);
		assert_string_equal(s->symbols_from, g.gl_pathv[i]);
		assert_int_not_equal(s->build_id[0], '\0');
		if (major < 3 || (major == 3 && minor < 2)) {
			/* No take_gil before 3.2: the old GIL is a plain lock. */
			assert_int_equal(s->nr_sites, 0);
			assert_false(s->has_take);
			assert_false(s->has_drop);
			gil_symbols_free(s);
			continue;
		}
		assert_true(s->has_take);
		assert_true(s->has_drop);
		assert_non_null(find_site(s, "take_gil"));
		assert_non_null(find_site(s, "drop_gil"));
		if (major == 3 && minor == 8) {
			/* pyenv's 3.8 has a constprop clone serving other callers. */
			assert_int_equal(count_sites(s, GIL_FN_TAKE), 2);
			assert_non_null(find_site(s, "take_gil.constprop.0"));
		}
		for (j = 0; j < s->nr_sites; j++) {
			if (!strcmp(s->sites[j].method, "dwarf-inline")) {
				verify_inline_site(g.gl_pathv[i], s, &s->sites[j]);
				continue;
			}
			assert_string_equal(s->sites[j].method, "symtab");
			verify_real_site(g.gl_pathv[i], s, &s->sites[j]);
		}
		/* pyenv builds carry DWARF: it was read, and each inlined copy has one way out. */
		if (gil_dwarf_supported()) {
			assert_non_null(s->dwarf_from);
			assert_string_equal(s->dwarf_from, g.gl_pathv[i]);
		} else {
			assert_null(s->dwarf_from);
			assert_int_equal(s->nr_inlined, 0);
		}
		assert_int_equal(s->nr_unproven, 0);
		assert_int_equal(count_role(s, GIL_SITE_ENTRY, "dwarf-inline"), s->nr_inlined);
		assert_int_equal(count_role(s, GIL_SITE_EXIT, "dwarf-inline"), s->nr_inlined);
		if (major == 3 && minor == 13 && gil_dwarf_supported()) {
			/* 3.13 inlines drop_gil into PyEval_ReleaseLock (ceval_gil.c). */
			assert_int_equal(s->nr_inlined, 1);
			assert_non_null(find_site(s, "drop_gil@PyEval_ReleaseLock"));
		}
		assert_false(s->approximate);
		assert_null(s->reason);
		assert_int_equal(s->kind, GIL_PY_CPYTHON);
		gil_symbols_free(s);
	}
	globfree(&g);
}

/* The five functions Debian's 3.11 LTO build inlines drop_gil into (checked with objdump). */
static const char *const debian311_inlined[] = {
	"drop_gil@PyEval_SaveThread", "drop_gil@os_stat", "drop_gil@_Py_read",
	"drop_gil@_io_FileIO_write", "drop_gil@os_listdir",
};

static void check_debian(const char *py, const char *root, const char *prefix)
{
	const struct gil_site *site;
	struct gil_symbols *s;
	size_t i, k;

	s = read_ok(py, root);
	print_sites(s);
	assert_true(s->has_take);
	assert_true(s->has_drop);
	assert_non_null(find_site(s, "take_gil.lto_priv.0"));
	assert_non_null(find_site(s, "drop_gil.lto_priv.0"));
	assert_true(!strncmp(s->symbols_from, prefix, strlen(prefix)));
	if (!gil_dwarf_supported()) {
		/* No DWARF: PyEval_SaveThread calls no drop_gil (LTO inlined it), so it stands in. */
		assert_null(s->dwarf_from);
		assert_int_equal(s->nr_sites, 3);
		assert_true(s->approximate);
		assert_non_null(strstr(s->reason, "inlines drop_gil into PyEval_SaveThread and giltrace was built without libdw"));
		site = find_site(s, "PyEval_SaveThread");
		assert_non_null(site);
		assert_int_equal(site->fn, GIL_FN_DROP);
		assert_string_equal(site->method, "exported-fallback");
		for (i = 0; i < s->nr_sites; i++)
			verify_real_site(py, s, &s->sites[i]);
		gil_symbols_free(s);
		return;
	}
	assert_non_null(s->dwarf_from);
	assert_string_equal(s->dwarf_from, s->symbols_from);
	assert_int_equal(s->kind, GIL_PY_CPYTHON);
	assert_false(s->approximate);
	assert_null(s->reason);
	for (i = 0; i < s->nr_sites; i++) {
		site = &s->sites[i];
		/* Non-PIE: text at vaddr 0x41f000, file offset 0x1f000. */
		assert_int_not_equal(site->offset, site->addr);
		if (!strcmp(site->method, "dwarf-inline")) {
			verify_inline_site(py, s, site);
			continue;
		}
		assert_true(!strcmp(site->method, "build-id") || !strcmp(site->method, "debuglink"));
		verify_real_site(py, s, site);
	}
	/* Every copy is probed at its entry and at the one instruction its code falls to. */
	assert_int_equal(s->nr_unproven, 0);
	assert_true(s->nr_inlined >= ARRAY_SIZE(debian311_inlined));
	assert_int_equal(count_role(s, GIL_SITE_ENTRY, "dwarf-inline"), s->nr_inlined);
	assert_int_equal(count_role(s, GIL_SITE_EXIT, "dwarf-inline"), s->nr_inlined);
	for (k = 0; k < ARRAY_SIZE(debian311_inlined); k++) {
		size_t entries = 0, exits = 0;

		for (i = 0; i < s->nr_sites; i++) {
			if (strcmp(s->sites[i].symbol, debian311_inlined[k]))
				continue;
			entries += s->sites[i].role == GIL_SITE_ENTRY;
			exits += s->sites[i].role == GIL_SITE_EXIT;
		}
		if (entries != 1 || exits != 1)
			fail_msg("%s: %zu entries, %zu exits", debian311_inlined[k], entries, exits);
	}
	gil_symbols_free(s);
}

static void test_debian_python311(void **state)
{
	const char *py = "/usr/bin/python3.11";
	char bid[129], *dbg;
	GElf_Ehdr eh;
	Elf *elf;
	int fd;

	if (access(py, R_OK)) {
		print_message("%s absent\n", py);
		skip();
	}
	elf = open_elf(py, &fd);
	assert_non_null(gelf_getehdr(elf, &eh));
	assert_int_equal(gil_elf_build_id(elf, bid, sizeof(bid)), 20);
	elf_end(elf);
	close(fd);
	assert_int_equal(eh.e_type, ET_EXEC);
	dbg = xfmt("/usr/lib/debug/.build-id/%.2s/%s.debug", bid, bid + 2);
	if (access(dbg, R_OK)) {
		print_message("%s absent: apt-get install python3.11-dbg\n", dbg);
		free(dbg);
		skip();
	}
	free(dbg);
	check_debian(py, NULL, "/usr/lib/debug/");
	/* As a container path: the debug file is looked up under the same root. */
	check_debian("/proc/self/root/usr/bin/python3.11", "/proc/self/root",
		     "/proc/self/root/usr/lib/debug/");
}

/* ---- x86-64 decoding ---------------------------------------------------------------------- */

/* Encodings taken from objdump -d of python3.11, libpython3.13 and libc on this machine. */
/* AArch64: every branch form's flow and target, the ADRP page, and misalignment refused. */
static void test_a64_decode(void **state)
{
	static const struct {
		uint32_t w;
		enum gil_insn_flow flow;
		uint64_t target;
	} cases[] = {
		{ 0x94000010, GIL_INSN_CALL, 0x1040 }, /* bl +0x40 */
		{ 0x17ffffff, GIL_INSN_JUMP, 0xffc }, /* b -4 */
		{ 0x54000061, GIL_INSN_BRANCH, 0x100c }, /* b.ne +12 */
		{ 0xb4000040, GIL_INSN_BRANCH, 0x1008 }, /* cbz x0, +8 */
		{ 0x37000080, GIL_INSN_BRANCH, 0x1010 }, /* tbnz w0, #0, +16 */
		{ 0xd65f03c0, GIL_INSN_STOP, 0 }, /* ret */
		{ 0xd65f0bff, GIL_INSN_STOP, 0 }, /* retaa */
		{ 0xd61f0200, GIL_INSN_INDIRECT, 0 }, /* br x16 */
		{ 0xd63f0200, GIL_INSN_CALL, 0 }, /* blr x16 */
		{ 0xd503233f, GIL_INSN_NEXT, 0 }, /* paciasp */
		{ 0xd503245f, GIL_INSN_NEXT, 0 }, /* bti c */
		{ 0xd4200000, GIL_INSN_STOP, 0 }, /* brk #0 */
		{ 0xf9400000, GIL_INSN_NEXT, 0 }, /* ldr x0, [x0] */
	};
	struct gil_insn in;
	uint8_t b[4];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		b[0] = cases[i].w & 0xff;
		b[1] = (cases[i].w >> 8) & 0xff;
		b[2] = (cases[i].w >> 16) & 0xff;
		b[3] = cases[i].w >> 24;
		assert_int_equal(gil_a64_decode(b, 4, 0x1000, &in), 0);
		assert_int_equal(in.len, 4);
		assert_int_equal(in.flow, cases[i].flow);
		assert_int_equal(in.target, cases[i].target);
	}
	b[0] = 0x10, b[1] = 0, b[2] = 0, b[3] = 0x90; /* adrp x16, . */
	assert_int_equal(gil_a64_decode(b, 4, 0x1234 & ~3ull, &in), 0);
	assert_int_equal(in.imm, 0x1000);
	assert_int_equal(gil_a64_decode(b, 4, 0x1002, &in), -1); /* misaligned */
	assert_int_equal(gil_a64_decode(b, 3, 0x1000, &in), -1); /* short */
}

static void test_x86_decode(void **state)
{
	static const struct {
		const char *bytes;
		size_t avail;
		int ret;
		unsigned int len;
		enum gil_insn_flow flow;
		int64_t rel; /* target - address, for branches */
	} cases[] = {
		{ "\x55", 1, 0, 1, GIL_INSN_NEXT, 0 }, /* push %rbp */
		{ "\x48\x83\xec\x08", 4, 0, 4, GIL_INSN_NEXT, 0 }, /* sub $0x8,%rsp */
		{ "\x8b\x05\x6d\x81\x55\x00", 6, 0, 6, GIL_INSN_NEXT, 0 }, /* mov rip(%rip),%eax */
		{ "\x48\xc7\x05\x48\x82\x55\x00\x00\x00\x00\x00", 11, 0, 11, GIL_INSN_NEXT, 0 },
		{ "\x48\x8b\x04\x25\x28\x00\x00\x00", 8, 0, 8, GIL_INSN_NEXT, 0 }, /* SIB, disp32 */
		{ "\x48\x8b\x44\x24\x08", 5, 0, 5, GIL_INSN_NEXT, 0 }, /* mov 0x8(%rsp),%rax */
		{ "\xf6\x40\x08\x01", 4, 0, 4, GIL_INSN_NEXT, 0 }, /* testb $0x1,0x8(%rax) */
		{ "\xf7\xc7\x00\x00\x01\x00", 6, 0, 6, GIL_INSN_NEXT, 0 }, /* test $0x10000,%edi */
		{ "\xf7\xd8", 2, 0, 2, GIL_INSN_NEXT, 0 }, /* neg %eax: F7 /3, no immediate */
		{ "\x48\xb8\x01\x02\x03\x04\x05\x06\x07\x08", 10, 0, 10, GIL_INSN_NEXT, 0 },
		{ "\x66\xb8\x34\x12", 4, 0, 4, GIL_INSN_NEXT, 0 }, /* mov $0x1234,%ax */
		{ "\x66\x2e\x0f\x1f\x84\x00\x00\x00\x00\x00", 10, 0, 10, GIL_INSN_NEXT, 0 },
		{ "\xf3\x0f\x1e\xfa", 4, 0, 4, GIL_INSN_NEXT, 0 }, /* endbr64 */
		{ "\xc5\xf8\x77", 3, 0, 3, GIL_INSN_NEXT, 0 }, /* vzeroupper: VEX without ModRM */
		{ "\xc4\xe2\x79\x18\x05\x00\x00\x00\x00", 9, 0, 9, GIL_INSN_NEXT, 0 },
		{ "\xc4\xe3\x79\x16\xc0\x01", 6, 0, 6, GIL_INSN_NEXT, 0 }, /* vpextrd: 0F3A imm8 */
		{ "\x62\xf1\xfd\x48\x6f\x44\x24\x01", 8, 0, 8, GIL_INSN_NEXT, 0 }, /* EVEX */
		{ "\x66\x0f\x3a\x0f\xc1\x08", 6, 0, 6, GIL_INSN_NEXT, 0 }, /* palignr $8 */
		{ "\x0f\x38\xf1\x07", 4, 0, 4, GIL_INSN_NEXT, 0 }, /* movbe */
		{ "\x75\x0a", 2, 0, 2, GIL_INSN_BRANCH, 12 },
		{ "\x0f\x84\x09\xf6\xf2\xff", 6, 0, 6, GIL_INSN_BRANCH, 6 - 0xd09f7 },
		{ "\xe3\xfe", 2, 0, 2, GIL_INSN_BRANCH, 0 }, /* jrcxz . */
		{ "\xeb\xfe", 2, 0, 2, GIL_INSN_JUMP, 0 },
		{ "\xe9\x00\x01\x00\x00", 5, 0, 5, GIL_INSN_JUMP, 0x105 },
		{ "\xe8\xfb\xff\xff\xff", 5, 0, 5, GIL_INSN_CALL, 0 },
		{ "\x66\x66\x48\xe8\x6c\x85\xfb\xff", 8, 0, 8, GIL_INSN_CALL, 8 - 0x47a94 },
		{ "\xff\x15\xf8\xfa\x60\x00", 6, 0, 6, GIL_INSN_CALL, 0 }, /* call *(%rip) */
		{ "\xff\xe0", 2, 0, 2, GIL_INSN_INDIRECT, 0 }, /* jmp *%rax */
		{ "\xff\x24\xc5\x40\x1c\x6d\x00", 7, 0, 7, GIL_INSN_INDIRECT, 0 },
		{ "\xc3", 1, 0, 1, GIL_INSN_STOP, 0 },
		{ "\xc2\x08\x00", 3, 0, 3, GIL_INSN_STOP, 0 },
		{ "\x0f\x0b", 2, 0, 2, GIL_INSN_STOP, 0 }, /* ud2 */
		{ "\xcc", 1, 0, 1, GIL_INSN_STOP, 0 },
		/* Refused: unknown, vendor-dependent or cut short. */
		{ "\x0f\x0f\xc1\x00", 4, -1, 0, 0, 0 }, /* 3DNow! */
		{ "\x8f\xe8\x78\xc2\xfa\x0d", 6, -1, 0, 0, 0 }, /* AMD XOP */
		{ "\x66\xe9\x00\x00", 4, -1, 0, 0, 0 }, /* jmp rel16 on some CPUs only */
		{ "\x06", 1, -1, 0, 0, 0 }, /* push %es: not in 64-bit mode */
		{ "\xe8\x00\x00", 3, -1, 0, 0, 0 },
		{ "\x48", 1, -1, 0, 0, 0 },
		{ "\x66\x66\x66\x66\x66\x66\x66\x66\x66\x66\x66\x66\x66\x66\x90", 15, 0, 15,
		  GIL_INSN_NEXT, 0 },
		{ "\x66\x66\x66\x66\x66\x66\x66\x66\x66\x66\x66\x66\x66\x66\x66\x90", 16, -1, 0, 0, 0 },
	};
	const uint64_t addr = 0x4fe200;
	struct gil_insn in;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		memset(&in, 0xa5, sizeof(in));
		if (gil_x86_64_decode((const uint8_t *)cases[i].bytes, cases[i].avail, addr, &in) !=
		    cases[i].ret)
			fail_msg("case %zu: wrong return", i);
		if (cases[i].ret)
			continue;
		if (in.len != cases[i].len || in.flow != cases[i].flow)
			fail_msg("case %zu: len %u flow %d", i, in.len, (int)in.flow);
		if ((in.flow == GIL_INSN_BRANCH || in.flow == GIL_INSN_JUMP ||
		     (in.flow == GIL_INSN_CALL && cases[i].bytes[0] != '\xff')) &&
		    in.target != addr + (uint64_t)cases[i].rel)
			fail_msg("case %zu: target %#llx", i, (unsigned long long)in.target);
	}
}

/* ---- endbr64, interpreter kinds, the exported fallback ------------------------------------- */

static void test_endbr64(void **state)
{
	char *path = xfmt("%s/endbr", tmpdir);
	struct synth sp = { .symtab = true, .build_id = bid_b, .endbr = true };
	const struct gil_site *site;
	struct gil_symbols *s;

	write_synth(path, &sp);
	s = read_ok(path, NULL);
	/* take_gil starts with endbr64: the probe goes on the next instruction, still an entry. */
	site = find_site(s, "take_gil");
	assert_non_null(site);
	assert_int_equal(site->skipped, 4);
	assert_int_equal(site->addr, S_TEXT_ADDR + 0x14);
	assert_int_equal(site->offset, S_TEXT_OFF + 0x14);
	assert_int_equal(site->size, 0x20);
	assert_true(site->retprobe);
	assert_int_equal(site->role, GIL_SITE_ENTRY);
	site = find_site(s, "drop_gil.constprop.0");
	assert_non_null(site);
	assert_int_equal(site->skipped, 0);
	assert_int_equal(site->addr, S_TEXT_ADDR + 0x40);
	gil_symbols_free(s);

	/* Other machines have no endbr64: the same bytes are left alone. */
	sp.machine = EM_AARCH64;
	write_synth(path, &sp);
	s = read_ok(path, NULL);
	site = find_site(s, "take_gil");
	assert_non_null(site);
	assert_int_equal(site->skipped, 0);
	assert_int_equal(site->addr, S_TEXT_ADDR + 0x10);
	gil_symbols_free(s);
	free(path);
}

#define FN(n, off) { n, S_TEXT_ADDR + (off), 0x10, STT_FUNC, false }

static void test_kinds(void **state)
{
	static const struct ssym ft[] = { FN("PyModule_Create2", 0xe0), FN("_Py_DecRefShared", 0xf0) };
	static const struct ssym ft2[] = { FN("_Py_MergeZeroLocalRefcount", 0xf0) };
	static const struct ssym py2[] = { FN("Py_InitModule4_64", 0xe0) };
	static const struct ssym pypy[] = { FN("pypy_setup_home", 0xe0) };
	static const struct ssym py3[] = { FN("PyModule_Create2", 0xe0) };
	static const struct ssym undef[] = {
		FN("PyModule_Create2", 0xe0),
		{ "_Py_DecRefShared", 0, 0, STT_FUNC, true }, /* imported is not defined */
	};
	static const struct {
		const struct ssym *dyn;
		size_t nr;
		enum gil_python_kind kind;
		size_t sites;
		const char *reason; /* after the path */
	} cases[] = {
		{ ft, ARRAY_SIZE(ft), GIL_PY_FREE_THREADED, 0,
		  " is a free-threaded CPython (built with Py_GIL_DISABLED): it has no GIL to record" },
		{ ft2, ARRAY_SIZE(ft2), GIL_PY_FREE_THREADED, 0,
		  " is a free-threaded CPython (built with Py_GIL_DISABLED): it has no GIL to record" },
		{ py2, ARRAY_SIZE(py2), GIL_PY_CPYTHON2, 0,
		  " is Python 2: it has no take_gil/drop_gil to probe (giltrace needs CPython 3.6 or later)" },
		{ pypy, ARRAY_SIZE(pypy), GIL_PY_PYPY, 0,
		  " is PyPy: it has no take_gil/drop_gil to probe (giltrace needs CPython 3.6 or later)" },
		{ py3, ARRAY_SIZE(py3), GIL_PY_CPYTHON, 2, NULL },
		{ undef, ARRAY_SIZE(undef), GIL_PY_CPYTHON, 2, NULL },
	};
	char *path = xfmt("%s/kind", tmpdir), *want;
	struct synth sp = { .symtab = true, .build_id = bid_b };
	struct gil_symbols *s;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		sp.dyn = cases[i].dyn;
		sp.nr_dyn = cases[i].nr;
		write_synth(path, &sp);
		s = read_ok(path, NULL);
		if (s->kind != cases[i].kind || s->nr_sites != cases[i].sites)
			fail_msg("case %zu: kind %d, %zu sites", i, (int)s->kind, s->nr_sites);
		assert_int_equal(s->has_take, cases[i].sites > 0);
		assert_int_equal(s->has_drop, cases[i].sites > 0);
		assert_false(s->approximate);
		if (cases[i].reason) {
			want = xfmt("%s%s", path, cases[i].reason);
			assert_non_null(s->reason);
			assert_string_equal(s->reason, want);
			free(want);
		} else {
			assert_null(s->reason);
		}
		gil_symbols_free(s);
	}
	free(path);
}

static void test_fallback(void **state)
{
	static const struct ssym exports[] = {
		FN("PyModule_Create2", 0xb0), FN("PyEval_SaveThread", 0xd0),
		FN("PyEval_RestoreThread", 0xe0),
		{ "Py_Version", S_DATA_ADDR, 4, STT_OBJECT, false },
	};
	static const struct ssym take_only[] = {
		FN("PyModule_Create2", 0xb0), FN("PyEval_SaveThread", 0xd0),
		FN("PyEval_RestoreThread", 0xe0), FN("take_gil", 0x10),
	};
	static const struct ssym no_api[] = { FN("main", 0xb0) };
	char *deb = xfmt("%s/fbdeb", tmpdir), *other = xfmt("%s/fbother", tmpdir);
	char *debobj = xfmt("%s/usr/bin/python3.11", deb), *p3 = xfmt("%s/usr/bin/python3", deb);
	char *otherobj = xfmt("%s/usr/bin/python3.11", other), *lib = xfmt("%s/usr/lib/libfoo.so", deb);
	char *ext = xfmt("%s/usr/lib/_ctypes.cpython-311-x86_64-linux-gnu.so", deb);
	char *libpy = xfmt("%s/usr/lib/libpython3.13.so.1.0", deb);
	char *flag = xfmt("%s/etc/debian_version", deb), *dir;
	struct synth sp = { .build_id = bid_b, .endbr = true, .dyn = exports,
			    .nr_dyn = ARRAY_SIZE(exports), .data_word = 0x030c04f0 };
	const struct gil_site *take, *drop;
	struct gil_symbols *s;

	dir = xfmt("%s/etc", deb);
	mkdirs(dir);
	free(dir);
	write_file(flag, "12.8\n", 5);
	dir = xfmt("%s/usr/bin", deb);
	mkdirs(dir);
	free(dir);
	dir = xfmt("%s/usr/lib", deb);
	mkdirs(dir);
	free(dir);
	dir = xfmt("%s/usr/bin", other);
	mkdirs(dir);
	free(dir);

	/* Stripped, no debug file, exports the C API: both functions approximated. */
	write_synth(debobj, &sp);
	s = read_ok(debobj, deb);
	print_sites(s);
	assert_int_equal(s->nr_sites, 2);
	assert_int_equal(s->kind, GIL_PY_CPYTHON);
	assert_true(s->approximate);
	assert_true(s->has_take);
	assert_true(s->has_drop);
	take = find_site(s, "PyEval_RestoreThread");
	drop = find_site(s, "PyEval_SaveThread");
	assert_non_null(take);
	assert_non_null(drop);
	assert_int_equal(take->fn, GIL_FN_TAKE);
	assert_int_equal(drop->fn, GIL_FN_DROP);
	assert_string_equal(take->method, "exported-fallback");
	assert_string_equal(drop->method, "exported-fallback");
	assert_true(take->approximate && drop->approximate);
	assert_true(take->retprobe && drop->retprobe);
	assert_int_equal(take->skipped, 0);
	assert_int_equal(take->addr, S_TEXT_ADDR + 0xe0);
	/* PyEval_SaveThread starts with endbr64 in this file. */
	assert_int_equal(drop->skipped, 4);
	assert_int_equal(drop->addr, S_TEXT_ADDR + 0xd4);
	assert_int_equal(drop->offset, S_TEXT_OFF + 0xd4);
	assert_string_equal(s->reason,
			    "releases are approximate: /usr/bin/python3.11 has no symbols for take_gil/drop_gil, so PyEval_RestoreThread/PyEval_SaveThread are probed in their place (forced switches are not seen); for exact sites, apt-get install python3.11-dbg in its container");
	gil_symbols_free(s);

	/* No version in the name: Py_Version (3.12.4) says which -dbg package. */
	write_synth(p3, &sp);
	s = read_ok(p3, deb);
	assert_non_null(s->reason);
	assert_non_null(strstr(s->reason, "apt-get install python3.12-dbg in its container"));
	gil_symbols_free(s);

	/* Not Debian: the debuginfo package, by the debug file it must provide. */
	write_synth(otherobj, &sp);
	s = read_ok(otherobj, other);
	assert_true(s->approximate);
	assert_non_null(strstr(s->reason,
			       "for exact sites, install its debuginfo package in its container (it provides /usr/lib/debug/.build-id/01/02030405060708090a0b0c0d0e0f10111213ff.debug)"));
	gil_symbols_free(s);

	/* take_gil has a symbol: only drop_gil is approximated. */
	sp.dyn = take_only;
	sp.nr_dyn = ARRAY_SIZE(take_only);
	write_synth(debobj, &sp);
	s = read_ok(debobj, deb);
	assert_int_equal(s->nr_sites, 2);
	assert_null(find_site(s, "PyEval_RestoreThread"));
	assert_true(find_site(s, "take_gil") && !find_site(s, "take_gil")->approximate);
	assert_true(find_site(s, "PyEval_SaveThread")->approximate);
	assert_true(s->approximate);
	assert_non_null(strstr(s->reason, "has no symbols for drop_gil, so PyEval_SaveThread is probed in its place"));
	gil_symbols_free(s);

	/* A stripped Python that exports nothing: no sites, and what to install. */
	sp.dyn = no_api;
	sp.nr_dyn = ARRAY_SIZE(no_api);
	write_synth(debobj, &sp);
	s = read_ok(debobj, deb);
	assert_int_equal(s->nr_sites, 0);
	assert_false(s->approximate);
	assert_string_equal(s->reason,
			    "/usr/bin/python3.11 has no symbols for take_gil/drop_gil and no debug file matching its build-id: apt-get install python3.11-dbg in its container");
	gil_symbols_free(s);

	/* So is a stripped libpython, which names its version. */
	write_synth(libpy, &sp);
	s = read_ok(libpy, deb);
	assert_int_equal(s->nr_sites, 0);
	assert_non_null(s->reason);
	assert_non_null(strstr(s->reason, "apt-get install python3.13-dbg"));
	gil_symbols_free(s);

	/* The same file under another name is not a Python: nothing to say. */
	write_synth(lib, &sp);
	s = read_ok(lib, deb);
	assert_int_equal(s->nr_sites, 0);
	assert_null(s->reason);
	gil_symbols_free(s);

	/* Nor is an extension module, although "python" is in its name. */
	write_synth(ext, &sp);
	s = read_ok(ext, deb);
	assert_int_equal(s->nr_sites, 0);
	assert_null(s->reason);
	gil_symbols_free(s);

	free(deb);
	free(other);
	free(debobj);
	free(p3);
	free(otherobj);
	free(lib);
	free(ext);
	free(libpy);
	free(flag);
}

/* Debian's python3.11 with its debug file out of reach: the exported entry points. */
static void test_debian_fallback(void **state)
{
	const char *py = "/usr/bin/python3.11";
	char *root = xfmt("%s/nodebug", tmpdir), *dir = xfmt("%s/etc", root);
	char *flag = xfmt("%s/debian_version", dir);
	struct gil_symbols *s;
	size_t i;

	if (access(py, R_OK)) {
		print_message("%s absent\n", py);
		free(root);
		free(dir);
		free(flag);
		skip();
	}
	mkdirs(dir);
	write_file(flag, "12.8\n", 5);
	s = read_ok(py, root);
	print_sites(s);
	/*
	 * No symbols: take_gil.lto_priv.0 and drop_gil.lto_priv.0 found from the code, at the
	 * addresses python3.11-dbg names (when installed), and PyEval_SaveThread for the copy LTO
	 * inlined into it. Never its .cold part, which a jump reaches and which names take_gil too.
	 */
	assert_int_equal(s->nr_sites, 3);
	assert_false(s->approximate);
	assert_null(s->reason);
	assert_null(s->dwarf_from);
	assert_string_equal(s->symbols_from, py);
	for (i = 0; i < s->nr_sites; i++)
		assert_false(s->sites[i].approximate);
	/* the exported one is where .dynsym says; the others where the debug file says */
	verify_real_site(py, s, find_site(s, "PyEval_SaveThread"));
	assert_string_equal(find_site(s, "take_gil")->method, "callgraph");
	assert_string_equal(find_site(s, "drop_gil")->method, "callgraph");
	assert_string_equal(find_site(s, "PyEval_SaveThread")->method, "exported-host");
	assert_int_equal(find_site(s, "PyEval_SaveThread")->host, GIL_HOST_ALWAYS);
	if (!access("/usr/lib/debug/.build-id", R_OK)) {
		struct gil_symbols *dbg = read_ok(py, NULL);
		const struct gil_site *t = find_site(dbg, "take_gil.lto_priv.0");
		const struct gil_site *d = find_site(dbg, "drop_gil.lto_priv.0");

		if (t && d) {
			assert_int_equal(find_site(s, "take_gil")->addr, t->addr);
			assert_int_equal(find_site(s, "take_gil")->size, t->size);
			assert_int_equal(find_site(s, "drop_gil")->addr, d->addr);
		}
		gil_symbols_free(dbg);
	}
	gil_symbols_free(s);
	free(root);
	free(dir);
	free(flag);
}

/* ---- DWARF of a compiled program ---------------------------------------------------------- */

/*
 * drop_gil inlined the ways CPython's LTO builds do it, built here with the machine's compiler:
 * into PyEval_SaveThread (with a slow path whose unlock returns into the caller), an I/O
 * function, a conditional release, and nested_user, where LTO also nests b.c's own static
 * drop_gil inside ours; plus an out-of-line copy (its address is taken) after an endbr64.
 */
static const char fixture_a[] =
	"#include <pthread.h>\n"
	"#include <stdlib.h>\n"
	"#ifdef OUT_OF_LINE\n"
	"#define INLINE __attribute__((noinline))\n"
	"#else\n"
	"#define INLINE inline __attribute__((always_inline))\n"
	"#endif\n"
	"pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;\n"
	"volatile int locked = 1, requests;\n"
	"const unsigned long Py_Version = 0x030b02f0;\n"
	"__attribute__((noinline, noreturn)) void fatal(const char *msg)\n"
	"{\n"
	"	(void)msg;\n"
	"	abort();\n"
	"}\n"
	"void b_release(void);\n"
	"static INLINE void drop_gil(int force)\n"
	"{\n"
	"	if (!locked)\n"
	"		fatal(\"drop_gil: not locked\");\n"
	"	if (pthread_mutex_lock(&mu))\n"
	"		fatal(\"drop_gil: lock\");\n"
	"	locked = 0;\n"
	"	if (pthread_mutex_unlock(&mu))\n"
	"		fatal(\"drop_gil: unlock\");\n"
	"	if (force == 1 && requests) {\n"
	"		pthread_mutex_lock(&mu);\n"
	"		while (requests)\n"
	"			requests--;\n"
	"		pthread_mutex_unlock(&mu);\n"
	"	}\n"
	"	if (force == 2)\n"
	"		b_release();\n"
	"}\n"
	"__attribute__((noinline)) static void take_gil(void)\n"
	"{\n"
	"	pthread_mutex_lock(&mu);\n"
	"	locked = 1;\n"
	"	pthread_mutex_unlock(&mu);\n"
	"}\n"
	"void (*volatile drop_ptr)(int) = drop_gil;\n"
	"__attribute__((noinline)) void *PyEval_SaveThread(void)\n"
	"{\n"
	"	drop_gil(1);\n"
	"	return &mu;\n"
	"}\n"
	"__attribute__((noinline)) void PyEval_RestoreThread(void *t)\n"
	"{\n"
	"	(void)t;\n"
	"	take_gil();\n"
	"}\n"
	"__attribute__((noinline)) int do_read(int fd)\n"
	"{\n"
	"	int n;\n"
	"	drop_gil(1);\n"
	"	n = fd * 3 + requests;\n"
	"	take_gil();\n"
	"	return n;\n"
	"}\n"
	"__attribute__((noinline)) int maybe_drop(int c)\n"
	"{\n"
	"	if (c)\n"
	"		drop_gil(0);\n"
	"	return c + requests;\n"
	"}\n"
	"__attribute__((noinline, flatten)) void nested_user(void)\n"
	"{\n"
	"	drop_gil(2);\n"
	"}\n"
	"int main(int argc, char **argv)\n"
	"{\n"
	"	(void)argv;\n"
	"	PyEval_RestoreThread(PyEval_SaveThread());\n"
	"	drop_ptr(argc);\n"
	"	nested_user();\n"
	"	return do_read(argc) + maybe_drop(argc) + (int)Py_Version;\n"
	"}\n";

static const char fixture_b[] =
	"#include <pthread.h>\n"
	"extern pthread_mutex_t mu;\n"
	"extern volatile int locked;\n"
	"static inline __attribute__((always_inline)) void drop_gil(void)\n"
	"{\n"
	"	pthread_mutex_lock(&mu);\n"
	"	locked = 0;\n"
	"	pthread_mutex_unlock(&mu);\n"
	"}\n"
	"void b_release(void)\n"
	"{\n"
	"	drop_gil();\n"
	"}\n";

/* Run a program quietly; its exit status, 127 when it could not be run. */
static int run(char *const argv[])
{
	int status, null;
	pid_t pid;

	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		null = open("/dev/null", O_WRONLY);
		if (null >= 0) {
			dup2(null, 1);
			dup2(null, 2);
		}
		execvp(argv[0], argv);
		_exit(127);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 127;
}

static size_t count_symbol(const struct gil_symbols *s, const char *name, enum gil_site_role role)
{
	size_t i, n = 0;

	for (i = 0; i < s->nr_sites; i++)
		n += !strcmp(s->sites[i].symbol, name) && s->sites[i].role == role;
	return n;
}

static void test_dwarf_fixture(void **state)
{
	static const char *const inlined[] = {
		"drop_gil@PyEval_SaveThread", "drop_gil@do_read", "drop_gil@maybe_drop",
		"drop_gil@nested_user", "drop_gil@b_release",
	};
	char *dir = xfmt("%s/fixture", tmpdir), *a = xfmt("%s/a.c", dir), *b = xfmt("%s/b.c", dir);
	char *exe = xfmt("%s/fixture", dir), *bare = xfmt("%s/fixture.nodebug", dir);
	char *ool = xfmt("%s/fixture.outofline", dir);
	char *cc[] = { "cc", "-O2", "-g", "-flto", "-fcf-protection=full", "-rdynamic", "-o", exe,
		       a, b, "-lpthread", NULL };
	char *cc_ool[] = { "cc", "-O2", "-g0", "-flto", "-fcf-protection=full", "-rdynamic",
			   "-DOUT_OF_LINE", "-o", ool, a, b, "-lpthread", NULL };
	char *strip[] = { "objcopy", "--strip-debug", exe, bare, NULL };
	const struct gil_site *site;
	struct gil_symbols *s;
	size_t i, k;

	mkdirs(dir);
	write_file(a, fixture_a, sizeof(fixture_a) - 1);
	write_file(b, fixture_b, sizeof(fixture_b) - 1);
	if (run(cc)) {
		print_message("cc -flto -fcf-protection could not build the fixture\n");
		goto out;
	}
	if (!gil_dwarf_supported()) {
		print_message("built without libdw: no DWARF to read\n");
		goto out;
	}
	s = read_ok(exe, NULL);
	print_sites(s);
	assert_string_equal(s->dwarf_from, exe);
	assert_int_equal(s->kind, GIL_PY_CPYTHON);
	assert_false(s->approximate);
	assert_null(s->reason);
	assert_int_equal(s->nr_unproven, 0);
	/*
	 * The out-of-line copy is an indirect-branch target, so it starts with endbr64: probed
	 * after it. take_gil is only called directly and has none.
	 */
	for (i = k = 0; i < s->nr_sites; i++) {
		site = &s->sites[i];
		if (!strcmp(site->method, "dwarf-inline")) {
			verify_inline_site(exe, s, site);
			continue;
		}
		assert_string_equal(site->method, "symtab");
		assert_int_equal(site->skipped, site->fn == GIL_FN_DROP ? 4 : 0);
		verify_real_site(exe, s, site);
		k++;
	}
	assert_int_equal(k, 2);
	/* One entry per copy; b.c's copy nested in nested_user's gives none of its own. */
	assert_int_equal(s->nr_inlined, ARRAY_SIZE(inlined));
	for (k = 0; k < ARRAY_SIZE(inlined); k++) {
		if (count_symbol(s, inlined[k], GIL_SITE_ENTRY) != 1 ||
		    !count_symbol(s, inlined[k], GIL_SITE_EXIT))
			fail_msg("%s: %zu entries, %zu exits", inlined[k],
				 count_symbol(s, inlined[k], GIL_SITE_ENTRY),
				 count_symbol(s, inlined[k], GIL_SITE_EXIT));
	}
	/* The fast path falls through; the slow path's unlock returns into the caller. */
	assert_int_equal(count_symbol(s, "drop_gil@PyEval_SaveThread", GIL_SITE_EXIT), 2);
	gil_symbols_free(s);

	/* Without DWARF: PyEval_SaveThread calls no drop_gil, so it stands in for the copies. */
	if (run(strip)) {
		print_message("objcopy(1) not available\n");
		goto out;
	}
	s = read_ok(bare, NULL);
	print_sites(s);
	assert_null(s->dwarf_from);
	assert_true(s->approximate);
	assert_int_equal(s->nr_sites, 3);
	site = find_site(s, "PyEval_SaveThread");
	assert_non_null(site);
	assert_int_equal(site->fn, GIL_FN_DROP);
	assert_true(site->approximate);
	assert_string_equal(site->method, "exported-fallback");
	assert_int_equal(site->skipped, 4);
	assert_non_null(strstr(s->reason, "inlines drop_gil into PyEval_SaveThread"));
	gil_symbols_free(s);

	/* drop_gil out of line: PyEval_SaveThread calls it, and is not probed in its place. */
	assert_int_equal(run(cc_ool), 0);
	s = read_ok(ool, NULL);
	print_sites(s);
	assert_false(s->approximate);
	assert_null(s->reason);
	assert_null(find_site(s, "PyEval_SaveThread"));
	assert_int_equal(s->nr_sites, 2);
	gil_symbols_free(s);
out:
	free(dir);
	free(a);
	free(b);
	free(exe);
	free(bare);
	free(ool);
}

/* ---- errors -------------------------------------------------------------------------------- */

static void expect_error(const char *path, const char *msg, int err_no)
{
	struct gil_symbols *s = (struct gil_symbols *)&s;
	char err[256] = "";

	errno = 0;
	assert_int_equal(gil_symbols_read(path, NULL, &s, err, sizeof(err)), -1);
	if (err_no)
		assert_int_equal(errno, err_no);
	assert_null(s);
	assert_string_equal(err, msg);
}

static void test_errors(void **state)
{
	char *missing = xfmt("%s/missing", tmpdir), *text = xfmt("%s/text", tmpdir);
	char *empty = xfmt("%s/empty", tmpdir), *trunc = xfmt("%s/trunc", tmpdir);
	char *m1 = xfmt("cannot open %s: No such file or directory", missing);
	char *m2 = xfmt("%s: not an ELF file", text), *m3 = xfmt("%s: not an ELF file", empty);
	char *m4 = xfmt("%s: not a regular file", tmpdir);
	struct synth sp = { .symtab = true, .build_id = bid_a };
	struct gil_symbols *s = NULL;
	unsigned char *buf;
	char err[8];
	size_t len;
	int ret;

	expect_error(missing, m1, ENOENT);
	write_file(text, "#!/bin/sh\necho not elf\n", 23);
	expect_error(text, m2, 0);
	write_file(empty, "", 0);
	expect_error(empty, m3, 0);
	expect_error(tmpdir, m4, 0);

	/* Short error buffers truncate, no buffer at all is allowed. */
	assert_int_equal(gil_symbols_read(missing, NULL, &s, err, sizeof(err)), -1);
	assert_string_equal(err, "cannot ");
	assert_int_equal(gil_symbols_read(missing, NULL, &s, NULL, 0), -1);
	assert_int_equal(gil_symbols_read(NULL, NULL, &s, NULL, 0), -1);
	assert_int_equal(gil_symbols_read(missing, NULL, NULL, NULL, 0), -1);

	/* A truncated ELF must not crash; whatever it returns names no site. */
	write_synth(trunc, &sp);
	buf = read_file(trunc, &len);
	write_file(trunc, buf, 0x180);
	ret = gil_symbols_read(trunc, NULL, &s, NULL, 0);
	if (!ret) {
		assert_int_equal(s->nr_sites, 0);
		gil_symbols_free(s);
	}
	free(buf);
	gil_symbols_free(NULL);

	free(missing);
	free(text);
	free(empty);
	free(trunc);
	free(m1);
	free(m2);
	free(m3);
	free(m4);
}

/* ---- main ---------------------------------------------------------------------------------- */

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

static int setup(void **state)
{
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
	return nftw(tmpdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_symbol_match),
		cmocka_unit_test(test_addr_to_offset),
		cmocka_unit_test(test_build_id),
		cmocka_unit_test(test_synthetic_tables),
		cmocka_unit_test(test_debug_build_id),
		cmocka_unit_test(test_debuglink),
		cmocka_unit_test(test_debuglink_hostile),
		cmocka_unit_test(test_minidebuginfo),
		cmocka_unit_test(test_pyenv),
		cmocka_unit_test(test_debian_python311),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_x86_decode),
		cmocka_unit_test(test_a64_decode),
		cmocka_unit_test(test_endbr64),
		cmocka_unit_test(test_kinds),
		cmocka_unit_test(test_fallback),
		cmocka_unit_test(test_debian_fallback),
		cmocka_unit_test(test_dwarf_fixture),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
