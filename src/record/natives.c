// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Native callers: ids on the loop, names on a worker (natives.h).
 *
 * The worker names an address from the process's executable mappings: the file mapped there,
 * opened through /proc/PID/map_files and checked to be the mapped device and inode on the
 * descriptor (rec_open_mapped), its function symbols (.symtab, else .dynsym) read once per file
 * and kept, the address turned into the file's own by its PT_LOAD headers. C++ names are
 * demangled by the C++ runtime's __cxa_demangle, looked up when first needed: without the
 * runtime the mangled name stays. Nothing it reads is on the loop's path: the loop only
 * takes answers, and at the end waits a bounded while for the last ones.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/util.h"
#include "elf/ehframe.h"
#include "elf/elf.h"
#include "natives.h"
#include "objects.h"
#include "procs.h"

#define MAX_FILES 64 /* files whose symbols are kept */
#define MAX_SYMS (4u << 20) /* function symbols read of one file */
#define STOP_WAIT_MS 200

struct sym {
	uint64_t value, size;
	const char *name; /* into the file's string table, as libelf maps it */
};

struct symfile {
	uint64_t dev, ino;
	struct gil_elf h;
	struct gil_elf dbg; /* its debug file (the build-id directory), when its symbols are there */
	struct gil_ehframe eh; /* the functions' extents, for code no symbol covers */
	struct sym *syms;
	size_t nr;
	char base[64];
};

struct req {
	pid_t pid;
	uint32_t id;
	uint64_t addr;
};

struct rec_namer {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond, idle;
	int stop;
	/* under the lock */
	struct req *q;
	size_t head, nr, cap;
	bool busy;
	struct rec_named *done, **tail;
	/* the worker's own */
	struct symfile files[MAX_FILES];
	size_t nr_files, next_file;
	pid_t maps_pid;
	struct gil_mapping *maps;
	int nr_maps;
	char *(*demangle)(const char *, char *, size_t *, int *);
	bool demangle_tried;
};

static int by_value(const void *a, const void *b)
{
	const struct sym *x = a, *y = b;

	return x->value < y->value ? -1 : x->value > y->value;
}

/* Read the function symbols of @elf: .symtab where it has one, else .dynsym. */
static void read_syms(struct symfile *f, Elf *elf)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	GElf_Sym s;
	Elf_Data *d;
	size_t i, n, cap = 0;
	int pass;
	const char *name;
	struct sym *p;

	for (pass = 0; pass < 2 && !f->nr; pass++) {
		while ((scn = elf_nextscn(elf, scn))) {
			if (!gelf_getshdr(scn, &sh) ||
			    sh.sh_type != (pass ? SHT_DYNSYM : SHT_SYMTAB) || !sh.sh_entsize)
				continue;
			d = elf_getdata(scn, NULL);
			n = d ? sh.sh_size / sh.sh_entsize : 0;
			for (i = 0; i < n && f->nr < MAX_SYMS; i++) {
				if (!gelf_getsym(d, (int)i, &s) || !s.st_value ||
				    s.st_shndx == SHN_UNDEF ||
				    (GELF_ST_TYPE(s.st_info) != STT_FUNC &&
				     GELF_ST_TYPE(s.st_info) != STT_GNU_IFUNC))
					continue;
				name = elf_strptr(elf, sh.sh_link, s.st_name);
				if (!name || !*name)
					continue;
				if (f->nr == cap) {
					cap = cap ? cap * 2 : 1024;
					p = realloc(f->syms, cap * sizeof(*p));
					if (!p)
						return;
					f->syms = p;
				}
				f->syms[f->nr].value = s.st_value;
				f->syms[f->nr].size = s.st_size;
				f->syms[f->nr].name = name;
				f->nr++;
			}
		}
	}
	qsort(f->syms, f->nr, sizeof(*f->syms), by_value);
}

/*
 * A file without a symbol table: its debug file in the process's root, by build-id
 * (/usr/lib/debug/.build-id/xx/yyyy.debug, resolved inside that root), used only when its
 * build-id is the file's.
 */
static bool debug_file(struct symfile *f, pid_t pid)
{
	char bid[129], dbid[129], path[256];
	GElf_Shdr sh;
	int rootfd;

	if (gil_elf_section(f->h.elf, ".symtab", &sh) || gil_elf_build_id(f->h.elf, bid, sizeof(bid)) < 2)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/root", (int)pid);
	rootfd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		return false;
	snprintf(path, sizeof(path), "/usr/lib/debug/.build-id/%.2s/%s.debug", bid, bid + 2);
	gil_elf_init(&f->dbg);
	if (gil_elf_open_in(&f->dbg, rootfd, path, NULL, 0) < 0) {
		close(rootfd);
		return false;
	}
	close(rootfd);
	if (gil_elf_build_id(f->dbg.elf, dbid, sizeof(dbid)) < 2 || strcmp(bid, dbid) ||
	    !gil_elf_section(f->dbg.elf, ".symtab", &sh)) {
		gil_elf_close(&f->dbg);
		return false;
	}
	return true;
}

/* The file mapped at @m in @pid, its symbols read: kept, or read now (NULL: unreadable). */
static struct symfile *file_of(struct rec_namer *n, pid_t pid, const struct gil_mapping *m)
{
	struct symfile *f;
	const char *b;
	size_t i;

	for (i = 0; i < n->nr_files; i++)
		if (n->files[i].dev == m->dev && n->files[i].ino == m->ino)
			return &n->files[i];
	/* full: the oldest goes */
	f = &n->files[n->nr_files < MAX_FILES ? n->nr_files++ : n->next_file++ % MAX_FILES];
	if (f->syms || f->h.elf) {
		free(f->syms);
		gil_elf_close(&f->dbg);
		gil_elf_close(&f->h);
	}
	memset(f, 0, sizeof(*f));
	gil_elf_init(&f->h);
	gil_elf_init(&f->dbg);
	f->dev = m->dev;
	f->ino = m->ino;
	b = strrchr(m->path, '/');
	snprintf(f->base, sizeof(f->base), "%s", b ? b + 1 : m->path);
	if (rec_open_mapped(pid, m, &f->h) == 0) {
		read_syms(f, debug_file(f, pid) ? f->dbg.elf : f->h.elf);
		gil_ehframe_open(&f->eh, f->h.elf, f->h.size);
	}
	return f;
}

/* The C++ runtime's demangler, looked up once (the worker does it first thing). */
static void load_demangler(struct rec_namer *n)
{
	void *lib;

	if (n->demangle_tried)
		return;
	n->demangle_tried = true;
	lib = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_LOCAL);
	if (lib)
		*(void **)&n->demangle = dlsym(lib, "__cxa_demangle");
}

static void demangle(struct rec_namer *n, const char *name, char *out, size_t len)
{
	char *d = NULL;
	int st = -1;

	load_demangler(n);
	if (name[0] == '_' && name[1] == 'Z' && n->demangle)
		d = n->demangle(name, NULL, NULL, &st);
	snprintf(out, len, "%s", d && st == 0 ? d : name);
	free(d);
}

/* Name @addr of @pid: "module!symbol+0xoff", "module+0xoff", or NULL. */
static char *name_of(struct rec_namer *n, pid_t pid, uint64_t addr)
{
	const struct gil_mapping *m = NULL;
	struct symfile *f;
	uint64_t off, v = 0;
	size_t lo, hi, mid;
	GElf_Phdr ph;
	char sym[512], *out = NULL;
	bool capped;
	int i;

	for (int pass = 0; pass < 2 && !m; pass++) {
		if (pass || n->maps_pid != pid) {
			gil_mappings_free(n->maps, n->nr_maps);
			n->maps = NULL;
			n->maps_pid = pid;
			n->nr_maps = gil_proc_exec_mappings(pid, &n->maps, &capped);
			if (n->nr_maps < 0)
				n->nr_maps = 0;
		}
		for (i = 0; i < n->nr_maps; i++)
			if (addr >= n->maps[i].start && addr < n->maps[i].end)
				m = &n->maps[i];
		if (n->nr_maps == 0)
			break;
	}
	if (!m)
		return NULL;
	f = file_of(n, pid, m);
	off = addr - m->start + m->pgoff;
	/* the file's own address: through the PT_LOAD that holds the offset */
	if (f->h.elf) {
		size_t np = 0, k;

		elf_getphdrnum(f->h.elf, &np);
		for (k = 0; k < np; k++)
			if (gelf_getphdr(f->h.elf, (int)k, &ph) && ph.p_type == PT_LOAD &&
			    off >= ph.p_offset && off < ph.p_offset + ph.p_filesz)
				v = off - ph.p_offset + ph.p_vaddr;
	}
	if (v && f->nr) {
		lo = 0;
		hi = f->nr;
		while (lo < hi) {
			mid = lo + (hi - lo) / 2;
			if (f->syms[mid].value <= v)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo && (!f->syms[lo - 1].size || v < f->syms[lo - 1].value + f->syms[lo - 1].size +
								  1)) {
			demangle(n, f->syms[lo - 1].name, sym, sizeof(sym));
			if (asprintf(&out, "%s!%s+0x%llx", f->base, sym,
				     (unsigned long long)(v - f->syms[lo - 1].value)) < 0)
				out = NULL;
			return out;
		}
	}
	/* no symbol: the function's start, from its frame description (stripped code) */
	if (v && f->eh.nr_fde) {
		uint64_t start, end;
		bool entry;

		if (gil_ehframe_fde(&f->eh, v, true, &start, &end, &entry) == 0 && entry) {
			if (asprintf(&out, "%s!fn@0x%llx+0x%llx", f->base, (unsigned long long)start,
				     (unsigned long long)(v - start)) < 0)
				out = NULL;
			return out;
		}
	}
	if (asprintf(&out, "%s+0x%llx", f->base, (unsigned long long)(v ? v : off)) < 0)
		out = NULL;
	return out;
}

static void *worker(void *arg)
{
	struct rec_namer *n = arg;
	struct rec_named *a;
	struct req r;

	gil_cancel_on(&n->stop);
	/* before the first question: a short-lived process's names must not wait for it */
	load_demangler(n);
	pthread_mutex_lock(&n->lock);
	for (;;) {
		while (!n->nr && !__atomic_load_n(&n->stop, __ATOMIC_RELAXED)) {
			n->busy = false;
			pthread_cond_broadcast(&n->idle);
			pthread_cond_wait(&n->cond, &n->lock);
		}
		if (__atomic_load_n(&n->stop, __ATOMIC_RELAXED))
			break;
		r = n->q[n->head];
		n->head = (n->head + 1) % n->cap;
		n->nr--;
		n->busy = true;
		pthread_mutex_unlock(&n->lock);
		a = calloc(1, sizeof(*a));
		if (a) {
			a->pid = r.pid;
			a->id = r.id;
			a->addr = r.addr;
			a->name = name_of(n, r.pid, r.addr);
		}
		pthread_mutex_lock(&n->lock);
		if (a) {
			*n->tail = a;
			n->tail = &a->next;
		}
	}
	n->busy = false;
	pthread_cond_broadcast(&n->idle);
	pthread_mutex_unlock(&n->lock);
	return NULL;
}

struct rec_namer *rec_namer_start(void)
{
	struct rec_namer *n = calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	pthread_mutex_init(&n->lock, NULL);
	pthread_cond_init(&n->cond, NULL);
	pthread_cond_init(&n->idle, NULL);
	n->tail = &n->done;
	if (pthread_create(&n->thread, NULL, worker, n)) {
		free(n);
		errno = EAGAIN;
		return NULL;
	}
	return n;
}

static int ask(struct rec_namer *n, pid_t pid, uint32_t id, uint64_t addr)
{
	int ret = 0;

	pthread_mutex_lock(&n->lock);
	if (n->nr == n->cap) {
		size_t cap = n->cap ? n->cap * 2 : 256, i;
		struct req *q = malloc(cap * sizeof(*q));

		if (!q) {
			ret = -1;
			goto out;
		}
		for (i = 0; i < n->nr; i++)
			q[i] = n->q[(n->head + i) % n->cap];
		free(n->q);
		n->q = q;
		n->head = 0;
		n->cap = cap;
	}
	n->q[(n->head + n->nr) % n->cap] = (struct req){ pid, id, addr };
	n->nr++;
	n->busy = true;
	pthread_cond_signal(&n->cond);
out:
	pthread_mutex_unlock(&n->lock);
	return ret;
}

static int grow(struct native_tab *tab)
{
	size_t cap = tab->cap ? tab->cap * 2 : 64, i, k;
	uint64_t *addr = calloc(cap, sizeof(*addr));
	uint32_t *id = calloc(cap, sizeof(*id));

	if (!addr || !id) {
		free(addr);
		free(id);
		return -1;
	}
	for (i = 0; i < tab->cap; i++) {
		if (!tab->addr[i])
			continue;
		for (k = (tab->addr[i] * 0x9e3779b97f4a7c15ull) >> 7 & (cap - 1); addr[k];
		     k = (k + 1) & (cap - 1))
			;
		addr[k] = tab->addr[i];
		id[k] = tab->id[i];
	}
	free(tab->addr);
	free(tab->id);
	tab->addr = addr;
	tab->id = id;
	tab->cap = cap;
	return 0;
}

uint32_t rec_native_id(struct rec_namer *n, struct native_tab *tab, pid_t pid, uint64_t addr)
{
	size_t k;

	if (!addr)
		return 0;
	if ((size_t)tab->nr * 2 >= tab->cap && tab->nr < GIL_NATIVES_MAX && grow(tab) < 0)
		return 0;
	for (k = (addr * 0x9e3779b97f4a7c15ull) >> 7 & (tab->cap - 1); tab->addr[k];
	     k = (k + 1) & (tab->cap - 1))
		if (tab->addr[k] == addr)
			return tab->id[k];
	if (tab->nr >= GIL_NATIVES_MAX) {
		tab->cut++;
		return 0;
	}
	if (n && ask(n, pid, tab->nr + 1, addr) < 0)
		return 0;
	tab->addr[k] = addr;
	tab->id[k] = ++tab->nr;
	return tab->id[k];
}

struct rec_named *rec_namer_take(struct rec_namer *n, int wait_ms)
{
	struct rec_named *a;
	struct timespec until;

	if (!n)
		return NULL;
	pthread_mutex_lock(&n->lock);
	if (wait_ms > 0 && (n->nr || n->busy)) {
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += (long)wait_ms * 1000000L;
		until.tv_sec += until.tv_nsec / 1000000000L;
		until.tv_nsec %= 1000000000L;
		while ((n->nr || n->busy) &&
		       pthread_cond_timedwait(&n->idle, &n->lock, &until) == 0)
			;
	}
	a = n->done;
	n->done = NULL;
	n->tail = &n->done;
	pthread_mutex_unlock(&n->lock);
	return a;
}

void rec_named_free(struct rec_named *a)
{
	struct rec_named *next;

	for (; a; a = next) {
		next = a->next;
		free(a->name);
		free(a);
	}
}

void rec_native_tab_free(struct native_tab *tab)
{
	free(tab->addr);
	free(tab->id);
	memset(tab, 0, sizeof(*tab));
}

void rec_namer_stop(struct rec_namer *n)
{
	struct timespec until;
	size_t i;

	if (!n)
		return;
	pthread_mutex_lock(&n->lock);
	__atomic_store_n(&n->stop, 1, __ATOMIC_RELAXED);
	pthread_cond_broadcast(&n->cond);
	pthread_mutex_unlock(&n->lock);
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_nsec += STOP_WAIT_MS * 1000000L;
	until.tv_sec += until.tv_nsec / 1000000000L;
	until.tv_nsec %= 1000000000L;
	if (pthread_timedjoin_np(n->thread, NULL, &until)) {
		/* a read that does not return (a hung file system): leave it, and what it uses */
		pthread_detach(n->thread);
		return;
	}
	for (i = 0; i < n->nr_files; i++) {
		free(n->files[i].syms);
		gil_elf_close(&n->files[i].dbg);
		gil_elf_close(&n->files[i].h);
	}
	gil_mappings_free(n->maps, n->nr_maps);
	rec_named_free(n->done);
	free(n->q);
	free(n);
}
