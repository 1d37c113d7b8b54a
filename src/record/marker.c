// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Step marks: libgiltrace's gil_mark_step(), a no-op that a training loop calls once per step
 * (gil_trace_record.mark_step() in Python). In every target that maps libgiltrace, the nop in
 * it is probed and its argument read (the step's number, or -1); each hit becomes a
 * {"step":...} record of the target's file, and gil-convert divides the statistics by them.
 * The library is looked for when a target starts, then once a second until it is found: a
 * program may load it after the recording began.
 *
 * The probed address is gil_mark_step_probe, a nop inside the STT_FUNC gil_mark_step, proven an
 * instruction boundary by decoding from the function's start (gil_site_prove), of exactly the
 * file the process maps (its device and inode checked on the descriptor everything is read
 * from, the uprobe pinned to that descriptor).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elf/symbols.h"
#include "marker.h"
#include "objects.h"
#include "state.h"

#define MARK_SYMBOL "gil_mark_step"
#define MARK_LIB "libgiltrace.so"

/* Its first argument (long long): where the ABI passes it. */
#if defined(__x86_64__)
#define MARK_FETCH "gil_step=%di:s64"
#define MARK_ARCH GIL_ARCH_X86_64
#elif defined(__aarch64__)
#define MARK_FETCH "gil_step=%x0:s64"
#define MARK_ARCH GIL_ARCH_AARCH64
#else
#define MARK_FETCH NULL
#define MARK_ARCH GIL_ARCH_OTHER
#endif

static bool is_giltrace(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return !strncmp(base, MARK_LIB, strlen(MARK_LIB));
}

/*
 * The file offset of gil_mark_step_probe in @h: inside gil_mark_step, on an instruction
 * boundary decoded from the function's start (gil_site_prove). 0, or -1 when not proven.
 */
static int mark_entry(struct gil_elf *h, uint64_t *off)
{
	struct gil_site site = { .symbol = MARK_SYMBOL, .role = GIL_SITE_ENTRY };
	GElf_Sym fn, at;
	bool exec = false;

	if (gil_arch_of(h->elf) != MARK_ARCH || !gil_elf_find_symbol(h->elf, MARK_SYMBOL, &fn) ||
	    !gil_elf_find_symbol(h->elf, MARK_SYMBOL "_probe", &at) ||
	    GELF_ST_TYPE(fn.st_info) != STT_FUNC || !fn.st_size || fn.st_shndx == SHN_UNDEF ||
	    at.st_value < fn.st_value || at.st_value >= fn.st_value + fn.st_size)
		return -1;
	if (gil_elf_addr_to_offset(h->elf, at.st_value, off, &exec) < 0 || !exec)
		return -1;
	site.fn = GIL_FN_TAKE; /* only named in a refusal, which names the symbol instead */
	site.addr = at.st_value;
	site.offset = *off;
	return gil_site_prove(h->elf, h->size, &site, NULL, 0) ? -1 : 0;
}

/*
 * The libgiltrace @pid maps, as an object of rec->objects (made a marker, its descriptor kept):
 * its index, -2 when it maps none with a provable gil_mark_step, -1 with rec->err.
 */
static int marker_object(struct gil_recorder *rec, pid_t pid)
{
	struct gil_mapping *maps = NULL;
	struct object *o;
	struct gil_elf h;
	uint64_t off;
	bool capped;
	int nr, i, k, found = -2, r;

	nr = gil_proc_exec_mappings(pid, &maps, &capped);
	if (nr < 0)
		return -2;
	for (i = 0; i < nr && found == -2; i++) {
		if (!is_giltrace(maps[i].path))
			continue;
		k = rec_find_object(rec->objects, rec->nr_objects, maps[i].dev, maps[i].ino);
		if (k >= 0 && rec->objects[k].marker) {
			found = k;
			continue;
		}
		if (k >= 0 && rec->objects[k].syms)
			continue;
		r = rec_open_mapped(pid, &maps[i], &h);
		if (r == -1) {
			rec_set_err(rec, "out of memory");
			found = -1;
			break;
		}
		if (r < 0)
			continue;
		if (mark_entry(&h, &off) < 0) {
			gil_elf_close(&h);
			continue;
		}
		if (k < 0) {
			/* a file not read before (a scan for the Python stops at the Python) */
			o = realloc(rec->objects, (rec->nr_objects + 1) * sizeof(*o));
			if (!o) {
				gil_elf_close(&h);
				rec_set_err(rec, "out of memory");
				found = -1;
				break;
			}
			rec->objects = o;
			k = (int)rec->nr_objects++;
			memset(&rec->objects[k], 0, sizeof(*o));
		} else {
			rec_object_free(&rec->objects[k]); /* read as a file with no GIL: kept no fd */
		}
		o = &rec->objects[k];
		o->dev = maps[i].dev;
		o->ino = maps[i].ino;
		o->path = strdup(maps[i].path);
		o->elf = h;
		snprintf(o->probe_path, sizeof(o->probe_path), "/proc/self/fd/%d", h.fd);
		o->first_probe = -1;
		o->marker = true;
		o->mark_offset = off;
		if (!o->path) {
			rec_set_err(rec, "out of memory");
			found = -1;
			break;
		}
		found = k;
	}
	gil_mappings_free(maps, nr);
	return found;
}

/* The probe at @o's gil_mark_step. 0, -1 with rec->err (a kernel that refuses it: -2). */
static int marker_probe(struct gil_recorder *rec, struct object *o)
{
	int idx;

	if (o->broken)
		return -2;
	if (o->first_probe >= 0)
		return 0;
	if (!rec->probes && !(rec->probes = gil_probes_alloc())) {
		rec_set_err(rec, "out of memory");
		return -1;
	}
	o->first_probe = (int)rec->probes->nr;
	idx = gil_probes_add(rec->probes, o->probe_path, o->path, o->mark_offset, GIL_FN_NR, false,
			     MARK_FETCH, NULL, (size_t)o->first_probe, rec->err, sizeof(rec->err));
	if (idx < 0 || !rec->probes->v[idx].fetches) {
		/* no step marks, but the GIL is recorded as ever */
		o->broken = strdup(rec->err[0] ? rec->err : "the kernel refused its fetcharg");
		rec->err[0] = '\0';
		o->nr_probes = idx < 0 ? 0 : 1;
		return -2;
	}
	o->nr_probes = 1;
	return rec_refresh_decoder(rec);
}

int rec_marker_find(struct gil_recorder *rec, struct target *t)
{
	int k, r;

	t->mark_scan = gil_clock_now();
	if (t->mobj >= 0 || !MARK_FETCH)
		return 0;
	k = marker_object(rec, t->pid);
	if (k == -1)
		return -1;
	if (k < 0)
		return 0;
	r = marker_probe(rec, &rec->objects[k]);
	if (r == -1)
		return -1;
	if (r == 0)
		t->mobj = k;
	return 0;
}
