/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The one ELF handle of giltrace: every ELF file the recorder reads is opened here, once, and
 * everything read of it goes through this descriptor. The file may belong to another user (a
 * traced process maps it), so it is opened without blocking, checked by fstat to be a regular
 * file, and never read past its size. The helpers below look up symbols, map addresses through
 * the program headers, read initialized data and list DT_NEEDED.
 * Lifecycle: gil_elf_open (or gil_elf_open_memory) -> ... -> gil_elf_close.
 */
#ifndef GIL_ELF_H
#define GIL_ELF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <gelf.h>
#include <libelf.h>

struct gil_elf {
	int fd; /* -1 for an in-memory image */
	Elf *elf;
	uint64_t size; /* bytes of the file or image: offsets past it are never returned */
	dev_t dev; /* of the open descriptor (fstat), 0 for an image */
	ino_t ino;
	void *image; /* owned buffer behind elf_memory(), else NULL */
	void *dwarf; /* libdw's Dwarf of the file, once gil_elf_dwarf() opened it */
	bool dwarf_tried; /* gil_elf_dwarf() looked: a NULL dwarf then means none */
};

/* The instruction sets whose code giltrace follows (x86insn.c, a64insn.c). */
enum gil_arch {
	GIL_ARCH_OTHER = 0,
	GIL_ARCH_X86_64,
	GIL_ARCH_AARCH64,
};

/** gil_arch_of - the instruction set of @elf (64-bit little-endian only; a64insn.c). */
enum gil_arch gil_arch_of(Elf *elf);

/**
 * gil_elf_dwarf - the DWARF of @h (a Dwarf * of libdw), opened on first use and kept, with what
 * libdw caches of it, until gil_elf_drop_dwarf() or gil_elf_close(): the sites' pass and
 * attribution's read one handle. NULL: the file has none, or giltrace was built without libdw.
 */
void *gil_elf_dwarf(struct gil_elf *h);

/** gil_elf_drop_dwarf - free what gil_elf_dwarf() holds (its caches are large); the next call opens it again. */
void gil_elf_drop_dwarf(struct gil_elf *h);

/**
 * gil_elf_open - open the ELF file at @path for reading. The path is opened O_PATH first and
 * fstat must say regular file before the file is opened for reading (through /proc/self/fd,
 * so the same inode): a FIFO cannot stall the caller, a device node is never opened. @h keeps
 * the device and inode read from the descriptor. @h is closed on failure. Returns 0, or -1
 * with errno (EINVAL: not a regular file) and one line in @err (may be NULL).
 */
int gil_elf_open(struct gil_elf *h, const char *path, char *err, size_t errlen);

/**
 * gil_elf_open_in - gil_elf_open() of @path inside the directory @rootfd as its root: symbolic
 * links resolve inside it (openat2 RESOLVE_IN_ROOT), never to the caller's files, and /proc's
 * magic links are refused. For files a traced process or a container controls.
 */
int gil_elf_open_in(struct gil_elf *h, int rootfd, const char *path, char *err, size_t errlen);

/**
 * gil_elf_open_memory - an ELF image in @image (@size bytes, malloc'd: @h owns it from here,
 * also on failure). Returns 0, or -1 with errno.
 */
int gil_elf_open_memory(struct gil_elf *h, void *image, size_t size);

/** gil_elf_close - release what gil_elf_open() took; safe on a closed or zeroed handle. */
void gil_elf_close(struct gil_elf *h);

/** gil_elf_init - a closed handle (fd -1), for gil_elf_close() on paths that never opened. */
void gil_elf_init(struct gil_elf *h);

/**
 * gil_elf_addr_to_offset - map virtual address @addr to a file offset through the PT_LOAD
 * program headers of @elf (file bytes only: bss has none). Sets *@exec when the segment is
 * executable. Returns 0, or -1 when no PT_LOAD segment holds @addr.
 */
int gil_elf_addr_to_offset(Elf *elf, uint64_t addr, uint64_t *offset, bool *exec);

/**
 * gil_elf_load_of - the PT_LOAD segment whose file bytes hold @addr, into *@out.
 * Returns 0, or -1 when there is none.
 */
int gil_elf_load_of(Elf *elf, uint64_t addr, GElf_Phdr *out);

/**
 * gil_elf_text_delta - p_vaddr - p_offset of the PT_LOAD whose memory holds @addr: a uprobe
 * fetcharg "@+X" names file offset X, so a link-time address A is "@+(A - delta)".
 * Returns 0, or -1 when no segment holds @addr.
 */
int gil_elf_text_delta(Elf *elf, uint64_t addr, int64_t *delta);

/**
 * gil_elf_find_symbol - the first defined symbol named @name in .dynsym or .symtab.
 * Returns true and *@out when found.
 */
bool gil_elf_find_symbol(Elf *elf, const char *name, GElf_Sym *out);

/**
 * gil_elf_read_vaddr - read @len bytes of initialized data at virtual address @addr through the
 * program headers of the file behind @h. Returns 0, or -1 when they are not all in the file.
 */
int gil_elf_read_vaddr(const struct gil_elf *h, uint64_t addr, void *buf, size_t len);

/**
 * gil_elf_section - the section of @elf named @name, and its header in *@sh; NULL if none.
 */
Elf_Scn *gil_elf_section(Elf *elf, const char *name, GElf_Shdr *sh);

/**
 * gil_elf_build_id - the GNU build-id note of @elf as lowercase hex into @buf (size >= 129).
 * Returns its length in bytes, 0 if none, -1 on error.
 */
int gil_elf_build_id(Elf *elf, char *buf, size_t len);

/**
 * gil_elf_needs - does @elf list a DT_NEEDED entry starting with @prefix ("libpython3")?
 */
bool gil_elf_needs(Elf *elf, const char *prefix);

/** gil_elf_u32 - the 32-bit value at @p, little-endian when @lsb, else big-endian. */
uint32_t gil_elf_u32(const unsigned char *p, bool lsb);

#endif /* GIL_ELF_H */
