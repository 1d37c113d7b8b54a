// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Debug files of a stripped object: the build-id directory, .gnu_debuglink (gdb's order) and
 * .gnu_debugdata (MiniDebugInfo). A debug file is used only when its build-id is the object's.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef HAVE_LZMA
#include <lzma.h>
#endif

#include "common/util.h"
#include "scan.h"

/* Bounds for .gnu_debugdata: a corrupt or hostile section must not exhaust memory. */
#define XZ_MEMLIMIT (128ULL << 20)
#define XZ_MAX_OUT ((size_t)512 << 20)

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
	if (gil_sites_scan_tables(sc, h.elf, method, NULL)) {
		ret = -1;
		goto out;
	}
	from_tables = sc->syms->nr_sites - before;
	if ((from_tables || sc->capi) && !sc->dwarf_done && gil_sites_scan_dwarf(sc, h.elf, dpath) < 0) {
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
	crc = gil_elf_u32(p + crcoff, eh.e_ident[EI_DATA] == ELFDATA2LSB);

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
	if (gil_sites_scan_tables(sc, h.elf, "minidebuginfo", NULL)) {
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
int gil_debug_find(struct scan *sc, Elf *obj, const char *path, const char *root)
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
