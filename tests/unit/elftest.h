/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the unit tests of src/elf/ share (elftest.c): a scratch directory per program, file
 * helpers, synthetic ELF files of one layout written with libelf, and checks of a real object's
 * sites made apart from the library's code path.
 */
#ifndef GIL_ELFTEST_H
#define GIL_ELFTEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libelf.h>

#include "elf/symbols.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* ---- scratch directory, files -------------------------------------------------------------- */

/* /tmp/<program>.XXXXXX: the cmocka group setup makes it, the teardown removes all it holds. */
extern char tmpdir[];
int elftest_setup(void **state);
int elftest_teardown(void **state);

char *xfmt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void mkdirs(const char *path);
void write_file(const char *path, const void *buf, size_t len);
void *read_file(const char *path, size_t *len);

/* ---- synthetic ELF files ------------------------------------------------------------------- */

/*
 * One layout for every synthetic file, an ET_EXEC whose text is not at vaddr == offset:
 *   PT_LOAD R   off 0x0000 vaddr 0x400000 filesz 0x1000 (headers, note, .rodata at 0x400800,
 *                                                         .eh_frame_hdr, .eh_frame)
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
#define S_EHHDR_ADDR 0x400900 /* PT_GNU_EH_FRAME */
#define S_EHFRAME_ADDR 0x400a00
/* Where a debug file claims the text is: the library must ignore it. */
#define S_DEBUG_TEXT_OFF 0x3000

struct synth {
	bool symtab; /* .symtab with elftest.c's test symbols */
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
	bool no_ehframe; /* no PT_GNU_EH_FRAME: no site can be proven */
	const struct ssym *sym; /* with .symtab: these instead of elftest.c's test symbols */
	size_t nr_sym;
	const unsigned char *code; /* S_TEXT_SIZE bytes of .text instead of the filler */
};

struct ssym {
	const char *name;
	uint64_t value, size;
	int type;
	bool undef;
};

void write_synth(const char *path, const struct synth *sp);

extern const unsigned char bid_a[20];
extern const char bid_a_hex[];
extern const unsigned char bid_b[20];

/* ---- sites --------------------------------------------------------------------------------- */

/* libelf's handle on @path, its descriptor in *@fd: elf_end() and close() both. */
Elf *open_elf(const char *path, int *fd);
/* gil_symbols_read() that must succeed; the test fails with its error otherwise. */
struct gil_symbols *read_ok(const char *path, const char *root);

/*
 * The Debian sid root tools/sid-root.sh builds ($GIL_SID_ROOT), or NULL when it is not there;
 * waits for a build in progress (a shared lock on $root.lock).
 */
const char *gil_test_sid_root(void);
const struct gil_site *find_site(const struct gil_symbols *s, const char *name);
/* A site of a synthetic file: its function, address, size, method, and offset in the layout. */
void check_site(const struct gil_symbols *s, const char *name, enum gil_func fn, uint64_t addr,
		uint64_t size, const char *method);
void print_sites(const struct gil_symbols *s);
void verify_real_site(const char *objpath, const struct gil_symbols *s,
		      const struct gil_site *site);
void verify_inline_site(const char *objpath, const struct gil_symbols *s,
			const struct gil_site *site);

#endif /* GIL_ELFTEST_H */
