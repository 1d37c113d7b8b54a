// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The one ELF handle (elf.h): opening a file that another user may control, and the lookups
 * every stage needs: addresses to offsets, symbols, initialized data, build-id, DT_NEEDED.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifdef HAVE_LIBDW
#include <elfutils/libdw.h>
#endif

#include "common/util.h"
#include "elf.h"

void gil_elf_init(struct gil_elf *h)
{
	memset(h, 0, sizeof(*h));
	h->fd = -1;
}

void *gil_elf_dwarf(struct gil_elf *h)
{
#ifdef HAVE_LIBDW
	if (!h->dwarf_tried && h->elf)
		h->dwarf = dwarf_begin_elf(h->elf, DWARF_C_READ, NULL);
	h->dwarf_tried = true;
	return h->dwarf;
#else
	(void)h;
	return NULL;
#endif
}

void gil_elf_drop_dwarf(struct gil_elf *h)
{
#ifdef HAVE_LIBDW
	if (h->dwarf)
		dwarf_end(h->dwarf);
#endif
	h->dwarf = NULL;
	h->dwarf_tried = false;
}

void gil_elf_close(struct gil_elf *h)
{
	gil_elf_drop_dwarf(h);
	if (h->elf)
		elf_end(h->elf);
	if (h->fd >= 0)
		close(h->fd);
	free(h->image);
	h->elf = NULL;
	h->fd = -1;
	h->image = NULL;
}

/*
 * Open for reading the file that the O_PATH descriptor @pathfd names, only when fstat says it is
 * a regular file: a FIFO, a socket or a device node is never opened for real (opening a device
 * as root can have effects, a FIFO can block). The reopen goes through /proc/self/fd, so it
 * reaches the inode @pathfd holds whatever happened to the path since. Closes @pathfd.
 */
static int reopen_regular(int pathfd, struct stat *st)
{
	char self[64];
	struct stat again;
	int fd, saved;

	if (fstat(pathfd, st) < 0)
		goto fail;
	if (!S_ISREG(st->st_mode)) {
		errno = EINVAL;
		goto fail;
	}
	snprintf(self, sizeof(self), "/proc/self/fd/%d", pathfd);
	fd = open(self, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		goto fail;
	if (fstat(fd, &again) < 0 || again.st_dev != st->st_dev || again.st_ino != st->st_ino) {
		close(fd);
		errno = ESTALE;
		goto fail;
	}
	close(pathfd);
	return fd;
fail:
	saved = errno;
	close(pathfd);
	errno = saved;
	return -1;
}

static int open_pathfd(struct gil_elf *h, int pathfd, const char *path, char *err, size_t errlen)
{
	struct stat st;
	int saved;

	gil_elf_init(h);
	elf_version(EV_CURRENT);
	if (pathfd < 0) {
		saved = errno;
		if (err)
			gil_err(err, errlen, "cannot open %s: %s", path, strerror(saved));
		errno = saved;
		return -1;
	}
	h->fd = reopen_regular(pathfd, &st);
	if (h->fd < 0) {
		saved = errno;
		if (err && saved == EINVAL)
			gil_err(err, errlen, "%s: not a regular file", path);
		else if (err)
			gil_err(err, errlen, "cannot open %s: %s", path, strerror(saved));
		errno = saved;
		return -1;
	}
	h->size = (uint64_t)st.st_size;
	h->dev = st.st_dev;
	h->ino = st.st_ino;
	h->elf = elf_begin(h->fd, ELF_C_READ_MMAP, NULL);
	if (!h->elf || elf_kind(h->elf) != ELF_K_ELF) {
		saved = ENOEXEC;
		if (err)
			gil_err(err, errlen, "%s: not an ELF file", path);
		goto fail;
	}
	return 0;
fail:
	gil_elf_close(h);
	errno = saved;
	return -1;
}

int gil_elf_open(struct gil_elf *h, const char *path, char *err, size_t errlen)
{
	return open_pathfd(h, open(path, O_PATH | O_CLOEXEC), path, err, errlen);
}

int gil_elf_open_in(struct gil_elf *h, int rootfd, const char *path, char *err, size_t errlen)
{
	struct open_how how = {
		.flags = O_PATH | O_CLOEXEC,
		/* links resolve inside the root, never to the caller's files; no /proc magic */
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	int fd;

	fd = (int)syscall(SYS_openat2, rootfd, path, &how, sizeof(how));
	if (fd < 0 && errno == ENOSYS) {
		/* before Linux 5.6: no link is followed at all */
		while (*path == '/')
			path++;
		fd = openat(rootfd, *path ? path : ".", O_PATH | O_NOFOLLOW | O_CLOEXEC);
	}
	return open_pathfd(h, fd, path, err, errlen);
}

int gil_elf_open_memory(struct gil_elf *h, void *image, size_t size)
{
	gil_elf_init(h);
	elf_version(EV_CURRENT);
	h->image = image;
	h->size = size;
	h->elf = elf_memory(image, size);
	if (!h->elf || elf_kind(h->elf) != ELF_K_ELF) {
		gil_elf_close(h);
		errno = ENOEXEC;
		return -1;
	}
	return 0;
}

int gil_elf_load_of(Elf *elf, uint64_t addr, GElf_Phdr *out)
{
	GElf_Phdr ph;
	size_t n, i;

	if (!elf || elf_getphdrnum(elf, &n))
		return -1;
	for (i = 0; i < n; i++) {
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (addr < ph.p_vaddr || addr - ph.p_vaddr >= ph.p_filesz)
			continue;
		*out = ph;
		return 0;
	}
	return -1;
}

int gil_elf_addr_to_offset(Elf *elf, uint64_t addr, uint64_t *offset, bool *exec)
{
	GElf_Phdr ph;

	if (gil_elf_load_of(elf, addr, &ph))
		return -1;
	if (offset)
		*offset = addr - ph.p_vaddr + ph.p_offset;
	if (exec)
		*exec = ph.p_flags & PF_X;
	return 0;
}

int gil_elf_text_delta(Elf *elf, uint64_t addr, int64_t *delta)
{
	GElf_Phdr ph;
	size_t n, i;

	if (elf_getphdrnum(elf, &n))
		return -1;
	for (i = 0; i < n; i++) {
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (addr >= ph.p_vaddr && addr < ph.p_vaddr + ph.p_memsz) {
			*delta = (int64_t)(ph.p_vaddr - ph.p_offset);
			return 0;
		}
	}
	return -1;
}

bool gil_elf_find_symbol(Elf *elf, const char *name, GElf_Sym *out)
{
	Elf_Scn *scn = NULL;
	Elf_Data *data;
	GElf_Shdr sh;
	GElf_Sym sym;
	const char *s;
	size_t i, n;

	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_DYNSYM && sh.sh_type != SHT_SYMTAB) ||
		    !sh.sh_entsize)
			continue;
		data = elf_getdata(scn, NULL);
		n = sh.sh_size / sh.sh_entsize;
		for (i = 0; data && i < n; i++) {
			if (!gelf_getsym(data, (int)i, &sym) || sym.st_shndx == SHN_UNDEF)
				continue;
			s = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (s && !strcmp(s, name)) {
				*out = sym;
				return true;
			}
		}
	}
	return false;
}

int gil_elf_read_vaddr(const struct gil_elf *h, uint64_t addr, void *buf, size_t len)
{
	GElf_Phdr ph;
	size_t n, i;
	uint64_t off;

	if (elf_getphdrnum(h->elf, &n))
		return -1;
	for (i = 0; i < n; i++) {
		if (!gelf_getphdr(h->elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (addr < ph.p_vaddr || addr + len > ph.p_vaddr + ph.p_filesz)
			continue;
		off = addr - ph.p_vaddr + ph.p_offset;
		if (off > h->size || len > h->size - off)
			return -1;
		if (h->fd < 0) {
			memcpy(buf, (const char *)h->image + off, len);
			return 0;
		}
		return pread(h->fd, buf, len, (off_t)off) == (ssize_t)len ? 0 : -1;
	}
	return -1;
}

Elf_Scn *gil_elf_section(Elf *elf, const char *name, GElf_Shdr *sh)
{
	Elf_Scn *scn = NULL;
	const char *n;
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, sh))
			continue;
		n = elf_strptr(elf, shstrndx, sh->sh_name);
		if (n && !strcmp(n, name))
			return scn;
	}
	return NULL;
}

/* Look for NT_GNU_BUILD_ID in one block of notes. Same return values as gil_elf_build_id. */
static int notes_build_id(Elf_Data *data, char *buf, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	size_t off = 0, next, name_off, desc_off, i;
	const unsigned char *desc;
	GElf_Nhdr nh;

	while ((next = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
		off = next;
		if (nh.n_type != NT_GNU_BUILD_ID || nh.n_namesz != sizeof("GNU") ||
		    memcmp((const char *)data->d_buf + name_off, "GNU", sizeof("GNU")) ||
		    !nh.n_descsz)
			continue;
		if (nh.n_descsz > 64 || 2 * (size_t)nh.n_descsz + 1 > len) {
			errno = ERANGE;
			return -1;
		}
		desc = (const unsigned char *)data->d_buf + desc_off;
		for (i = 0; i < nh.n_descsz; i++) {
			buf[2 * i] = hex[desc[i] >> 4];
			buf[2 * i + 1] = hex[desc[i] & 0xf];
		}
		buf[2 * i] = '\0';
		return (int)nh.n_descsz;
	}
	return 0;
}

int gil_elf_build_id(Elf *elf, char *buf, size_t len)
{
	Elf_Scn *scn = NULL;
	Elf_Data *data;
	GElf_Shdr sh;
	GElf_Phdr ph;
	size_t nshdr, nphdr, i;
	int ret;

	if (!elf || !buf || !len) {
		errno = EINVAL;
		return -1;
	}
	buf[0] = '\0';
	if (elf_getshdrnum(elf, &nshdr))
		nshdr = 0;
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		data = elf_getdata(scn, NULL);
		if (!data || !data->d_buf)
			continue;
		ret = notes_build_id(data, buf, len);
		if (ret)
			return ret;
	}
	/*
	 * Program headers only when there are no sections: in a debug file the PT_NOTE offsets
	 * describe the original object, not the bytes in front of us.
	 */
	if (nshdr > 1 || elf_getphdrnum(elf, &nphdr))
		return 0;
	for (i = 0; i < nphdr; i++) {
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_NOTE)
			continue;
		data = elf_getdata_rawchunk(elf, (int64_t)ph.p_offset, ph.p_filesz,
					    ph.p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR);
		if (!data || !data->d_buf)
			continue;
		ret = notes_build_id(data, buf, len);
		if (ret)
			return ret;
	}
	return 0;
}

bool gil_elf_needs(Elf *elf, const char *prefix)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	GElf_Dyn dyn;
	Elf_Data *data;
	const char *name;
	size_t i, n = strlen(prefix);

	while (elf && (scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC)
			continue;
		data = elf_getdata(scn, NULL);
		for (i = 0; data && i < sh.sh_size / (sh.sh_entsize ? sh.sh_entsize : 1); i++) {
			if (!gelf_getdyn(data, (int)i, &dyn) || dyn.d_tag != DT_NEEDED)
				continue;
			name = elf_strptr(elf, sh.sh_link, dyn.d_un.d_val);
			if (name && !strncmp(name, prefix, n))
				return true;
		}
	}
	return false;
}

uint32_t gil_elf_u32(const unsigned char *p, bool lsb)
{
	if (lsb)
		return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
		       (uint32_t)p[3] << 24;
	return (uint32_t)p[3] | (uint32_t)p[2] << 8 | (uint32_t)p[1] << 16 | (uint32_t)p[0] << 24;
}
