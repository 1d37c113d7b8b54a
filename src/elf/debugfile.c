// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Debug files of a stripped object: the build-id directory, .gnu_debuglink (gdb's order) and
 * .gnu_debugdata (MiniDebugInfo). A debug file is used only when its build-id is the object's.
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
		if (gil_cancelled()) {
			errno = ECANCELED;
			return -1;
		}
		for (i = 0; i < n; i++)
			crc = table[(crc ^ buf[i]) & 0xff] ^ (crc >> 8);
		off += n;
	}
	*out = crc ^ 0xffffffff;
	return 0;
}

/*
 * The largest debug file read: an interpreter's is tens of MiB (python3.13-dbg's 25 MiB); its
 * CRC takes about 5 s per GiB here.
 */
#define GIL_DEBUG_FILE_MAX (1024ull << 20)

/* Where debug files are looked up: inside the target's root, links resolved in it. */
struct lookup {
	int rootfd; /* the root directory (O_PATH) */
	const char *root; /* its path as shown, "" for ours */
	size_t rootlen;
};

/*
 * Use the debug file open in @h (shown as @dpath) when its build-id is the object's (and its
 * CRC is @crc when @check_crc): its symbol tables, and its DWARF when the object had none.
 * Takes @h (kept in syms->dwarf_elf when its DWARF was read, else closed). Returns 1 when it
 * gave sites, 0 when not usable, -1 on ENOMEM.
 */
static int try_debug_elf(struct scan *sc, struct gil_elf *h, const char *dpath,
			 const char *method, bool check_crc, uint32_t crc)
{
	char bid[sizeof(sc->syms->build_id)];
	size_t before = sc->syms->nr_sites, from_tables;
	uint32_t got;
	int ret = 0;

	if (gil_elf_build_id(h->elf, bid, sizeof(bid)) <= 0 || strcmp(bid, sc->syms->build_id))
		goto out;
	/*
	 * Bounded: its CRC reads it all, and its DWARF is read too. A debuglink can name a sparse
	 * file of any size (1 TiB took 1.5 h), during which nothing else runs.
	 */
	if (h->size > GIL_DEBUG_FILE_MAX) {
		if (!sc->syms->note) {
			sc->syms->note = gil_strfmt("debug file %s is %llu MiB, over the %llu MiB read of "
						    "one; not used", dpath,
						    (unsigned long long)(h->size >> 20),
						    GIL_DEBUG_FILE_MAX >> 20);
			if (!sc->syms->note)
				ret = -1;
		}
		goto out;
	}
	if (check_crc && (file_crc32(h->fd, &got) || got != crc))
		goto out;
	if (gil_sites_scan_tables(sc, h->elf, method, NULL)) {
		ret = -1;
		goto out;
	}
	from_tables = sc->syms->nr_sites - before;
	if ((from_tables || sc->capi) && !sc->dwarf_done) {
		if (gil_sites_scan_dwarf(sc, h, dpath) < 0) {
			ret = -1;
			goto out;
		}
		/* dwarf_from names this file: keep it open, attribution reads its DWARF here */
		if (sc->dwarf_done && !sc->syms->dwarf_elf) {
			sc->syms->dwarf_elf = malloc(sizeof(*sc->syms->dwarf_elf));
			if (!sc->syms->dwarf_elf) {
				ret = -1;
				goto out;
			}
			*sc->syms->dwarf_elf = *h;
			gil_elf_init(h);
		}
	}
	if (sc->syms->nr_sites == before)
		goto out;
	ret = 1;
	if (from_tables && !sc->syms->symbols_from) {
		sc->syms->symbols_from = strdup(dpath);
		ret = sc->syms->symbols_from ? 1 : -1;
	}
out:
	gil_elf_close(h);
	return ret;
}

/* try_debug_elf() of the file at @inpath inside the root. */
static int try_debug_file(struct scan *sc, const struct lookup *lk, const char *inpath,
			  const char *method, bool check_crc, uint32_t crc)
{
	struct gil_elf h;
	char *dpath;
	int ret;

	/* a FIFO, a device or a link out of the root is refused before any read */
	if (gil_elf_open_in(&h, lk->rootfd, inpath, NULL, 0))
		return 0;
	dpath = gil_strfmt("%.*s%s", (int)lk->rootlen, lk->root, inpath);
	if (!dpath) {
		gil_elf_close(&h);
		return -1;
	}
	ret = try_debug_elf(sc, &h, dpath, method, check_crc, crc);
	free(dpath);
	return ret;
}

/* The debug file from the servers in DEBUGINFOD_URLS; their answer when not, in syms->note. */
static int try_debuginfod(struct scan *sc)
{
	char path[4096], why[512], self[64];
	struct gil_elf h;
	int fd, ret;

	if (!sc->debuginfod || !gil_debuginfod_supported() || !getenv("DEBUGINFOD_URLS") ||
	    !*getenv("DEBUGINFOD_URLS"))
		return 0;
	fd = gil_debuginfod_find(sc->syms->build_id, path, sizeof(path), why, sizeof(why));
	if (fd < 0) {
		free(sc->syms->note);
		sc->syms->note = gil_strfmt("debuginfod: %s", why);
		return sc->syms->note ? 0 : -1;
	}
	snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	ret = gil_elf_open(&h, self, NULL, 0);
	close(fd);
	if (ret < 0)
		return 0;
	ret = try_debug_elf(sc, &h, path, "debuginfod", false, 0);
	if (ret > 0)
		sc->syms->from_debuginfod = true; /* its inlined sites say "dwarf-inline" */
	if (ret == 0) {
		free(sc->syms->note);
		sc->syms->note = gil_strfmt("debuginfod: %s does not match the object", path);
		return sc->syms->note ? 0 : -1;
	}
	return ret;
}

/* gdb's search order for the .gnu_debuglink name: next to the object, .debug/, global dir. */
static int try_debuglink(struct scan *sc, const struct lookup *lk, Elf *obj, const char *inpath)
{
	const char *name, *slash, *dir;
	const unsigned char *p;
	char *cand[3] = { NULL, NULL, NULL };
	size_t namelen, crcoff, dirlen, i;
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
	/* a file name, never a path: "../../etc/shadow" or "x/y" names no debug file */
	if (memchr(name, '/', namelen) || !strcmp(name, ".") || !strcmp(name, ".."))
		return 0;
	crc = gil_elf_u32(p + crcoff, eh.e_ident[EI_DATA] == ELFDATA2LSB);

	slash = strrchr(inpath, '/');
	dir = inpath;
	dirlen = slash ? (size_t)(slash - inpath) : 0;
	ret = -1;
	cand[0] = gil_strfmt("%.*s/%s", (int)dirlen, dir, name);
	cand[1] = gil_strfmt("%.*s/.debug/%s", (int)dirlen, dir, name);
	if (!cand[0] || !cand[1])
		goto out;
	/* The global directory mirrors the object's path as seen inside the root. */
	cand[2] = gil_strfmt("/usr/lib/debug%.*s/%s", (int)dirlen, dir, name);
	if (!cand[2])
		goto out;
	ret = 0;
	for (i = 0; i < GIL_ARRAY_SIZE(cand) && cand[i] && !ret; i++)
		ret = try_debug_file(sc, lk, cand[i], "debuglink", true, crc);
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

/*
 * Sites for a stripped object: build-id directory, then .gnu_debuglink, then .gnu_debugdata.
 * Every candidate is opened inside @root (the target's /proc/PID/root, or ours): its links
 * cannot lead to the recorder's own files.
 */
int gil_debug_find(struct scan *sc, Elf *obj, const char *path, const char *root)
{
	const char *bid = sc->syms->build_id;
	struct lookup lk;
	char *p, *abs = NULL, cwd[4096];
	const char *inpath;
	int ret = 0;

	lk.root = root ? root : "";
	lk.rootlen = strlen(lk.root);
	while (lk.rootlen && lk.root[lk.rootlen - 1] == '/')
		lk.rootlen--;
	inpath = gil_shown_path(path, root);
	if (inpath[0] != '/') {
		/* a relative path (tests, the command line): make it one inside our root */
		if (lk.rootlen || !getcwd(cwd, sizeof(cwd)))
			return 0;
		abs = gil_strfmt("%s/%s", cwd, inpath);
		if (!abs)
			return -1;
		inpath = abs;
	}
	p = gil_strfmt("%.*s/", (int)lk.rootlen, lk.root);
	lk.rootfd = p ? open(p, O_PATH | O_DIRECTORY | O_CLOEXEC) : -1;
	free(p);
	if (lk.rootfd < 0) {
		free(abs);
		return errno == ENOMEM ? -1 : 0;
	}

	/* Without a build-id nothing proves that a separate file describes this object. */
	if (strlen(bid) > 2) {
		p = gil_strfmt("/usr/lib/debug/.build-id/%.2s/%s.debug", bid, bid + 2);
		if (!p) {
			ret = -1;
			goto out;
		}
		ret = try_debug_file(sc, &lk, p, "build-id", false, 0);
		free(p);
		if (!ret)
			ret = try_debuglink(sc, &lk, obj, inpath);
		/* nothing on the machine: the servers, before the symbols-only MiniDebugInfo */
		if (!ret)
			ret = try_debuginfod(sc);
	}
#ifdef HAVE_LZMA
	if (!ret)
		ret = try_debugdata(sc, obj, path);
#endif
out:
	close(lk.rootfd);
	free(abs);
	return ret < 0 ? -1 : 0;
}
