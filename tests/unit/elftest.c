// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The helpers the unit tests of src/elf/ share (elftest.h): the scratch directory, files,
 * synthetic ELF files, and checks of the sites of real objects made without the library.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
/* nftw(), program_invocation_short_name; config.h defines it already in the autotools build. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <gelf.h>
#include <libelf.h>

#include "elftest.h"

/* ---- scratch directory --------------------------------------------------------------------- */

char tmpdir[64];

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

int elftest_setup(void **state)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/%s.XXXXXX", program_invocation_short_name);
	return mkdtemp(tmpdir) ? 0 : -1;
}

int elftest_teardown(void **state)
{
	return nftw(tmpdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* ---- helpers ------------------------------------------------------------------------------- */

char *xfmt(const char *fmt, ...)
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

void mkdirs(const char *path)
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

void write_file(const char *path, const void *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, buf, len), (ssize_t)len);
	close(fd);
}

void *read_file(const char *path, size_t *len)
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

const struct gil_site *find_site(const struct gil_symbols *s, const char *name)
{
	size_t i;

	for (i = 0; i < s->nr_sites; i++)
		if (!strcmp(s->sites[i].symbol, name))
			return &s->sites[i];
	return NULL;
}

/* ---- synthetic ELF files ------------------------------------------------------------------- */

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

/*
 * The frame descriptions of the synthetic text, as GNU ld writes them: one CIE ("zR", pc-relative
 * sdata4 pointers) and an FDE per function of the layout, with .eh_frame_hdr's sorted table
 * (datarel sdata4) over them. Every FDE but take_gil.cold's begins as a function does (an
 * advance first); the cold part begins in the middle of a frame. gil_site_prove() finds a
 * site's function by them.
 */
static const struct {
	uint64_t off, len;
	bool entry;
} synth_fdes[] = {
	{ 0x10, 0x20, true },  { 0x40, 0x10, true }, { 0x60, 0x10, true },
	{ 0x80, 0x08, false }, { 0xb0, 0x10, true }, { 0xc0, 0x10, true },
	{ 0xd0, 0x10, true },  { 0xe0, 0x10, true }, { 0xf0, 0x10, true },
};

static void put32(unsigned char *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

/* .eh_frame at S_EHFRAME_ADDR into @frame, .eh_frame_hdr at S_EHHDR_ADDR into @hdr. */
static void synth_ehframe(unsigned char *frame, size_t frame_cap, size_t *frame_len,
			  unsigned char *hdr, size_t hdr_cap, size_t *hdr_len)
{
	static const unsigned char cie_body[] = {
		0, 0, 0, 0, /* CIE id */
		1, 'z', 'R', 0, /* version, augmentation */
		1, 0x78, 16, /* code alignment 1, data alignment -8, return address r16 */
		1, 0x1b, /* augmentation length, R: pcrel | sdata4 */
		0x0c, 7, 8, /* DW_CFA_def_cfa rsp+8 */
		0x90, 1, /* DW_CFA_offset r16 at cfa-8 */
		0, 0, 0, /* DW_CFA_nop to 4-byte alignment (4 + 24) */
	};
	size_t at = 0, i, n = ARRAY_SIZE(synth_fdes);

	assert_true(frame_cap >= sizeof(cie_body) + 4 + n * 24 + 4 && hdr_cap >= 12 + n * 8);
	put32(frame, sizeof(cie_body));
	memcpy(frame + 4, cie_body, sizeof(cie_body));
	at = 4 + sizeof(cie_body);
	put32(hdr, 0x3b031b01); /* version 1; eh_frame_ptr pcrel sdata4, count udata4, datarel */
	put32(hdr + 4, (uint32_t)(S_EHFRAME_ADDR - (S_EHHDR_ADDR + 4)));
	put32(hdr + 8, (uint32_t)n);
	for (i = 0; i < n; i++) {
		uint64_t fde = S_EHFRAME_ADDR + at, fn = S_TEXT_ADDR + synth_fdes[i].off;
		unsigned char *p = frame + at;

		put32(p, 20); /* CIE pointer, pc_begin, pc_range, aug length, 3 insns + pad */
		put32(p + 4, (uint32_t)(at + 4)); /* back to the CIE at offset 0 */
		put32(p + 8, (uint32_t)(fn - (fde + 8)));
		put32(p + 12, (uint32_t)synth_fdes[i].len);
		p[16] = 0; /* no augmentation data */
		if (synth_fdes[i].entry) {
			p[17] = 0x41; /* DW_CFA_advance_loc 1 */
			p[18] = 0x0e; /* DW_CFA_def_cfa_offset 16 */
			p[19] = 16;
		} else {
			p[17] = 0x0e; /* the frame of the middle of a function from the first byte */
			p[18] = 32;
			p[19] = 0;
		}
		memset(p + 20, 0, 4);
		at += 24;
		put32(hdr + 12 + i * 8, (uint32_t)(fn - S_EHHDR_ADDR));
		put32(hdr + 16 + i * 8, (uint32_t)(fde - S_EHHDR_ADDR));
	}
	put32(frame + at, 0); /* the terminator */
	*frame_len = at + 4;
	*hdr_len = 12 + n * 8;
}

void write_synth(const char *path, const struct synth *sp)
{
	unsigned char text[S_TEXT_SIZE], rodata[0x40], data[0x20], note[36], link[256];
	unsigned char ehframe[0x100], ehhdr[0x80];
	size_t ehframe_len, ehhdr_len;
	Elf64_Sym symtab[32], dynsym[16];
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
	/*
	 * Section indices are fixed by the order below: 1 .note, 2 .rodata, 3 .eh_frame_hdr,
	 * 4 .eh_frame, 5 .text, 6 .data.
	 */
	const Elf64_Half text_ndx = 5;

	for (i = 0; i < sizeof(text); i++)
		text[i] = (unsigned char)(i * 7 + 0x31);
	if (sp->code)
		memcpy(text, sp->code, sizeof(text));
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
	synth_ehframe(ehframe, sizeof(ehframe), &ehframe_len, ehhdr, sizeof(ehhdr), &ehhdr_len);
	secs[nsec++] = (struct wsec){ .name = ".eh_frame_hdr", .type = SHT_PROGBITS,
				      .flags = SHF_ALLOC, .addr = S_EHHDR_ADDR,
				      .offset = S_EHHDR_ADDR - 0x400000, .size = ehhdr_len,
				      .align = 4, .buf = ehhdr, .dtype = ELF_T_BYTE };
	secs[nsec++] = (struct wsec){ .name = ".eh_frame", .type = SHT_PROGBITS,
				      .flags = SHF_ALLOC, .addr = S_EHFRAME_ADDR,
				      .offset = S_EHFRAME_ADDR - 0x400000, .size = ehframe_len,
				      .align = 8, .buf = ehframe, .dtype = ELF_T_BYTE };
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
		assert_true(ARRAY_SIZE(symtab_syms) < ARRAY_SIZE(symtab) && sp->nr_sym < ARRAY_SIZE(symtab));
		nsym = sp->sym ? add_syms(symtab, &str, sp->sym, sp->nr_sym, text_ndx) :
				 add_syms(symtab, &str, symtab_syms, ARRAY_SIZE(symtab_syms), text_ndx);
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

	ph = elf64_newphdr(elf, sp->no_ehframe ? 4 : 5);
	assert_non_null(ph);
	ph[0] = (Elf64_Phdr){ PT_LOAD, PF_R, 0, 0x400000, 0x400000, 0x1000, 0x1000, 0x1000 };
	ph[1] = (Elf64_Phdr){ PT_LOAD, PF_R | PF_X, sp->debug ? S_DEBUG_TEXT_OFF : S_TEXT_OFF,
			      S_TEXT_ADDR, S_TEXT_ADDR, S_TEXT_SIZE, S_TEXT_SIZE, 0x1000 };
	ph[2] = (Elf64_Phdr){ PT_LOAD, PF_R | PF_W, S_DATA_OFF, S_DATA_ADDR, S_DATA_ADDR,
			      sizeof(data), 0x1000, 0x1000 };
	ph[3] = (Elf64_Phdr){ PT_NOTE, PF_R, S_NOTE_OFF, 0x400000 + S_NOTE_OFF,
			      0x400000 + S_NOTE_OFF, sizeof(note), sizeof(note), 4 };
	if (!sp->no_ehframe)
		ph[4] = (Elf64_Phdr){ PT_GNU_EH_FRAME, PF_R, S_EHHDR_ADDR - 0x400000, S_EHHDR_ADDR,
				      S_EHHDR_ADDR, ehhdr_len, ehhdr_len, 4 };

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

const unsigned char bid_a[20] = { 0xc5, 0x61, 0xf3, 0xaa, 0x72, 0x32, 0xf2, 0xbd, 0x6a, 0xc6,
				  0xd5, 0x6b, 0xd4, 0x75, 0xf1, 0xc1, 0x54, 0xa0, 0x04, 0x86 };
const char bid_a_hex[] = "c561f3aa7232f2bd6ac6d56bd475f1c154a00486";
const unsigned char bid_b[20] = { 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a,
				  0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x10, 0x11, 0x12, 0x13, 0xff };

/* ---- sites --------------------------------------------------------------------------------- */

Elf *open_elf(const char *path, int *fd)
{
	Elf *elf;

	assert_int_not_equal(elf_version(EV_CURRENT), EV_NONE);
	*fd = open(path, O_RDONLY);
	assert_true(*fd >= 0);
	elf = elf_begin(*fd, ELF_C_READ, NULL);
	assert_non_null(elf);
	return elf;
}

struct gil_symbols *read_ok(const char *path, const char *root)
{
	struct gil_symbols *s = NULL;
	char err[256] = "";

	if (gil_symbols_read(path, root, &s, err, sizeof(err)))
		fail_msg("gil_symbols_read(%s): %s", path, err);
	assert_non_null(s);
	assert_string_equal(s->path, path);
	return s;
}

void check_site(const struct gil_symbols *s, const char *name, enum gil_func fn,
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

void print_sites(const struct gil_symbols *s)
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

/*
 * Check a site of a real object without the library's code path: the site must lie in an
 * executable PT_LOAD, its bytes at the file offset must equal the bytes the section headers
 * place at its address, and the symbol file must name it with that value and size.
 */
void verify_real_site(const char *objpath, const struct gil_symbols *s,
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
void verify_inline_site(const char *objpath, const struct gil_symbols *s,
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

/*
 * The Debian sid root tools/sid-root.sh builds ($GIL_SID_ROOT), or NULL when it is not there.
 * tools/test.sh builds it beside the first tests, holding $root.lock: a shared lock waits for
 * that build to end.
 */
const char *gil_test_sid_root(void)
{
	static char buf[512];
	const char *r = getenv("GIL_SID_ROOT");
	int fd;

	snprintf(buf, sizeof(buf), "%s.lock", r && *r ? r : "/var/cache/giltrace/sid-root");
	fd = open(buf, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0) {
		flock(fd, LOCK_SH);
		close(fd);
	}
	snprintf(buf, sizeof(buf), "%s.stamp", r && *r ? r : "/var/cache/giltrace/sid-root");
	if (access(buf, R_OK))
		return NULL;
	buf[strlen(buf) - strlen(".stamp")] = '\0';
	return buf;
}
