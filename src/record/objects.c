// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Objects: the ELF files that define the GIL functions, read once per file (device and
 * inode), their probes in the recorder's group, and the decoder that knows those probes.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "state.h"
#include "objcache.h"
#include "objects.h"
#include "elf/callers.h"

int rec_find_object(const struct object *objs, size_t nr, uint64_t dev, uint64_t ino)
{
	size_t i;

	for (i = 0; i < nr; i++)
		if (objs[i].dev == dev && objs[i].ino == ino)
			return (int)i;
	return -1;
}

void rec_object_free(struct object *o)
{
	gil_symbols_free(o->syms);
	free(o->reason);
	gil_attrib_free(o->attrib);
	gil_callers_free(o->callers);
	free(o->callers_args);
	free(o->path);
	free(o->open_path);
	free(o->broken);
	gil_elf_close(&o->elf);
	memset(o, 0, sizeof(*o));
	o->first_probe = -1;
}

/* What the probes of @o read at each entry: offsets from DWARF, _Py_DebugOffsets or the table. */
static int load_attrib(struct object *o, char *err, size_t errlen)
{
	return gil_attrib_read_elf(o->syms, &o->elf, o->open_path,
				   o->version[0] ? o->version : NULL, &o->attrib, err, errlen);
}

/*
 * _Py_HandlePending releases the GIL only when the thread's drop request is set at its entry:
 * a site standing for it is kept only with the fetch that reads the request, or each hit would
 * be a release that never was. Without it (--no-attribution, no layout), the forced switches
 * it makes are not recorded: counted in nr_unconditioned, and said when recording starts.
 */
static const char *site_fetchargs(const struct gil_options *opts, const struct object *o,
				  size_t i)
{
	if (opts->no_attribution || !o->attrib || i >= o->attrib->nr_sites)
		return NULL;
	return opts->attribution == GIL_ATTRIBUTION_FULL ? o->attrib->sites[i].fetchargs
							 : o->attrib->sites[i].pointer;
}

const char *rec_site_fetchargs(const struct gil_recorder *rec, const struct object *o, size_t i)
{
	return site_fetchargs(&rec->opts, o, i);
}

static void prune_unconditioned(const struct gil_options *opts, struct object *o)
{
	struct gil_symbols *syms = o->syms;
	size_t i, k;

	for (i = k = 0; i < syms->nr_sites; i++) {
		if (syms->sites[i].host == GIL_HOST_ON_REQUEST &&
		    !site_fetchargs(opts, o, i)) {
			free(syms->sites[i].symbol);
			if (o->attrib) {
				free(o->attrib->sites[i].fetchargs);
				free(o->attrib->sites[i].pointer);
			}
			o->nr_unconditioned++;
			if (o->attrib)
				o->attrib->nr_entries--;
			continue;
		}
		syms->sites[k] = syms->sites[i];
		if (o->attrib)
			o->attrib->sites[k] = o->attrib->sites[i];
		k++;
	}
	syms->nr_sites = k;
	if (o->attrib)
		o->attrib->nr_sites = k;
}

/*
 * Open the file @pid maps at @m: the mapping itself (/proc/PID/map_files), so what is read is
 * what the process runs, whatever its path names now; without map_files, the path inside the
 * process's root. Either way the descriptor's device and inode must be the mapping's.
 * Returns 0, -2 when the file is not the one mapped (or gone), -1 with errno.
 */
int rec_open_mapped(pid_t pid, const struct gil_mapping *m, struct gil_elf *h)
{
	char path[96];
	int rootfd, r;

	snprintf(path, sizeof(path), "/proc/%d/map_files/%llx-%llx", (int)pid,
		 (unsigned long long)m->start, (unsigned long long)m->end);
	if (gil_elf_open(h, path, NULL, 0) < 0) {
		if (errno == ENOMEM)
			return -1;
		snprintf(path, sizeof(path), "/proc/%d/root", (int)pid);
		rootfd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (rootfd < 0)
			return -2;
		r = gil_elf_open_in(h, rootfd, m->path, NULL, 0);
		close(rootfd);
		if (r < 0)
			return errno == ENOMEM ? -1 : -2;
	}
	if ((uint64_t)h->dev != m->dev || (uint64_t)h->ino != m->ino) {
		gil_elf_close(h);
		return -2; /* replaced since it was mapped: not this file */
	}
	return 0;
}

/*
 * Read @m's symbols once per file (by device and inode). The file is opened once and checked
 * to be the one the process maps (same device and inode, on the descriptor); symbols,
 * attribution and the probes all use that descriptor, so a path swapped after the check
 * changes nothing: the probes name /proc/self/fd/N, the inode we read.
 */
static int load_object(const struct gil_options *opts, struct object **objs, size_t *nr,
		       pid_t pid, const struct gil_mapping *m, char *err, size_t errlen)
{
	struct gil_elf h;
	struct object *o;
	char root[64], *open_path;
	size_t len;
	bool cached;
	int i = rec_find_object(*objs, *nr, m->dev, m->ino), r;

	if (i >= 0)
		return i;
	r = rec_open_mapped(pid, m, &h);
	if (r == -1)
		return gil_err(err, errlen, "out of memory");
	if (r < 0)
		return r;
	snprintf(root, sizeof(root), "/proc/%d/root", (int)pid);
	len = strlen(root) + strlen(m->path) + 1;
	open_path = malloc(len);
	o = open_path ? realloc(*objs, (*nr + 1) * sizeof(*o)) : NULL;
	if (!o) {
		free(open_path);
		gil_elf_close(&h);
		return gil_err(err, errlen, "out of memory");
	}
	snprintf(open_path, len, "%s%s", root, m->path);
	*objs = o;
	o = &(*objs)[*nr];
	memset(o, 0, sizeof(*o));
	o->dev = m->dev;
	o->ino = m->ino;
	o->path = strdup(m->path);
	o->open_path = open_path;
	o->elf = h;
	snprintf(o->probe_path, sizeof(o->probe_path), "/proc/self/fd/%d", h.fd);
	o->first_probe = -1;
	(*nr)++;
	r = rec_objcache_load(o, open_path, root, !opts->no_attribution);
	if (r < 0)
		return gil_err(err, errlen, "out of memory");
	cached = r > 0;
	if (!cached && gil_symbols_read_elf(&o->elf, open_path, root,
					    opts->no_debuginfod ? 0 : GIL_SYMS_DEBUGINFOD,
					    &o->syms, err, errlen) < 0) {
		o->syms = NULL;
		return -1;
	}
	if (o->syms->reason)
		o->reason = strdup(o->syms->reason);
	memcpy(o->version, o->syms->version, sizeof(o->version));
	if (!o->syms->nr_sites || !o->syms->has_take || !o->syms->has_drop) {
		gil_symbols_free(o->syms);
		o->syms = NULL;
		gil_elf_close(&o->elf); /* nothing to probe: no descriptor kept */
	}
	if (o->syms && !cached && !opts->no_attribution && load_attrib(o, err, errlen) < 0)
		return -1;
	if (o->syms && !cached)
		rec_objcache_store(o, root, !opts->no_attribution);
	/* the sites' pass and attribution shared one DWARF handle: what libdw cached is large */
	gil_elf_drop_dwarf(&o->elf);
	if (o->syms && o->syms->dwarf_elf)
		gil_elf_drop_dwarf(o->syms->dwarf_elf);
	if (o->syms)
		prune_unconditioned(opts, o);
	return (int)(*nr - 1);
}

static enum gil_ev ev_of(enum gil_func fn, bool ret, bool exit_site)
{
	if (fn == GIL_FN_NR)
		return GIL_EV_MARK; /* gil_mark_step (marker.c) */
	if (exit_site)
		return fn == GIL_FN_TAKE ? GIL_EV_TAKE_EXIT : GIL_EV_DROP_EXIT;
	if (fn == GIL_FN_TAKE)
		return ret ? GIL_EV_TAKE_RETURN : GIL_EV_TAKE_ENTRY;
	return ret ? GIL_EV_DROP_RETURN : GIL_EV_DROP_ENTRY;
}

/*
 * The native caller (elf/callers.h): what an interpreter's entries read for it, unless
 * --native was not given, or its file gives no way to walk its frames (then nothing is read).
 */
static int site_natives(struct gil_recorder *rec, struct object *o)
{
	if (!rec->opts.natives || o->callers || !o->syms || o->marker)
		return 0;
	o->callers = gil_callers_plan(&o->elf, o->syms->dwarf_elf ? o->syms->dwarf_elf->elf : NULL);
	if (!o->callers)
		return 0;
	o->callers_args = gil_callers_fetchargs(o->callers);
	if (!o->callers_args) {
		rec_set_err(rec, "out of memory");
		return -1;
	}
	return 0;
}

/*
 * What entry site @i of @o reads: its attribution's fetchargs, and at an entry (not an exit
 * site) the native caller's. *@both holds a string made for it (free it), else NULL.
 */
static const char *entry_fetchargs(const struct gil_recorder *rec, const struct object *o,
				   size_t i, char **both)
{
	const char *a = rec_site_fetchargs(rec, o, i);

	*both = NULL;
	if (!o->callers_args || o->syms->sites[i].role != GIL_SITE_ENTRY)
		return a;
	if (!a)
		return o->callers_args;
	if (asprintf(both, "%s %s", a, o->callers_args) < 0) {
		*both = NULL;
		return a;
	}
	return *both;
}

int rec_create_probes(struct gil_recorder *rec, struct object *o)
{
	const struct gil_site *s;
	const char *fetchargs;
	char *pad_like = NULL, *both = NULL;
	size_t i;
	int idx, ret, r;

	if (o->broken) {
		rec_set_err(rec, "%s", o->broken);
		return -1;
	}
	if (o->first_probe >= 0)
		return 0;
	if (!rec->probes) {
		rec->probes = gil_probes_alloc();
		if (!rec->probes) {
			rec_set_err(rec, "out of memory");
			return -1;
		}
	}
	o->first_probe = (int)rec->probes->nr;
	if (site_natives(rec, o) < 0)
		return -1;
	/*
	 * the entries of a file read different sets (take_gil which GIL, drop_gil the frame):
	 * each pads the union of them, to join one event (where an immediate can stand in)
	 */
	for (i = 0; i < o->syms->nr_sites; i++) {
		fetchargs = entry_fetchargs(rec, o, i, &both);
		r = fetchargs ? gil_probes_union(&pad_like, fetchargs) : 0;
		free(both);
		both = NULL;
		if (r < 0) {
			free(pad_like);
			rec_set_err(rec, "out of memory");
			return -1;
		}
	}
	for (i = 0; i < o->syms->nr_sites; i++) {
		s = &o->syms->sites[i];
		for (ret = 0; ret <= 1; ret++) {
			if (ret && !s->retprobe)
				continue;
			fetchargs = !ret ? entry_fetchargs(rec, o, i, &both) : NULL;
			idx = gil_probes_add(rec->probes, o->probe_path, o->path, s->offset, s->fn,
					     ret, fetchargs, pad_like, (size_t)o->first_probe,
					     rec->err, sizeof(rec->err));
			free(both);
			both = NULL;
			if (idx < 0) {
				/* the probes made so far go with the group; none is used */
				o->broken = strdup(rec->err);
				o->nr_probes = 0;
				free(pad_like);
				return -1;
			}
			o->nr_fetching += rec->probes->v[idx].fetches;
			/* An exit site is a plain uprobe that stands for the function's return. */
			rec->probes->v[idx].role_exit = s->role == GIL_SITE_EXIT;
			rec->probes->v[idx].on_request = s->host == GIL_HOST_ON_REQUEST;
			o->nr_probes++;
		}
	}
	free(pad_like);
	return 0;
}

/* Re-read the group's formats after probes were added, and map probe index -> event kind. */
int rec_refresh_decoder(struct gil_recorder *rec)
{
	struct gil_probes *p = rec->probes;
	const char **padded;
	int *ids;
	size_t i;

	if (p->nr == rec->nr_decoded)
		return 0;
	if (gil_probes_load(p, rec->err, sizeof(rec->err)) < 0)
		return -1;
	ids = malloc(p->nr * sizeof(*ids));
	padded = malloc(p->nr * sizeof(*padded));
	free(rec->ev_of_probe);
	free(rec->obj_of_probe);
	free(rec->vaddr_of_probe);
	rec->ev_of_probe = malloc(p->nr);
	rec->obj_of_probe = malloc(p->nr * sizeof(int));
	rec->vaddr_of_probe = calloc(p->nr, sizeof(uint64_t));
	if (!ids || !padded || !rec->ev_of_probe || !rec->obj_of_probe || !rec->vaddr_of_probe) {
		free(ids);
		free((void *)padded);
		rec_set_err(rec, "out of memory");
		return -1;
	}
	for (i = 0; i < p->nr; i++) {
		ids[i] = p->v[i].id;
		padded[i] = !p->v[i].padded ? NULL : p->v[i].own ? p->v[i].own : "";
		rec->ev_of_probe[i] = (uint8_t)ev_of(p->v[i].fn, p->v[i].ret, p->v[i].role_exit);
		rec->obj_of_probe[i] = -1;
	}
	for (i = 0; i < rec->nr_objects; i++) {
		const struct object *o = &rec->objects[i];
		int k;

		for (k = 0; o->first_probe >= 0 && k < o->nr_probes; k++) {
			size_t j = (size_t)(o->first_probe + k), n;

			if (j >= p->nr)
				continue;
			rec->obj_of_probe[j] = (int)i;
			/* the site's address, where a native caller's walk starts */
			for (n = 0; o->callers && n < o->syms->nr_sites; n++)
				if (o->syms->sites[n].offset == p->v[j].offset)
					rec->vaddr_of_probe[j] = o->syms->sites[n].addr;
		}
	}
	gil_decoder_free(rec->dec);
	rec->dec = gil_decoder_alloc(p->tep, ids, padded, (int)p->nr);
	free(ids);
	free((void *)padded);
	if (!rec->dec) {
		rec_set_err(rec, "out of memory");
		return -1;
	}
	rec->nr_decoded = p->nr;
	return 0;
}

int rec_python_object(struct gil_recorder *rec, pid_t pid, char *why, size_t whylen)
{
	return rec_python_object_in(&rec->opts, &rec->objects, &rec->nr_objects, pid, why,
				    whylen);
}

int rec_python_object_in(const struct gil_options *opts, struct object **objs, size_t *nr_objs,
			 pid_t pid, char *why, size_t whylen)
{
	struct gil_mapping *maps = NULL;
	char err[512] = "";
	int nr, i, o, found = -2, told = -1;
	bool py2 = false, pylike = false, capped = false;

	nr = gil_proc_exec_mappings(pid, &maps, &capped);
	if (nr < 0) {
		gil_err(why, whylen, "cannot read /proc/%d/maps: %s", (int)pid, strerror(errno));
		return -2;
	}
	for (i = 0; i < nr && found < 0; i++) {
		const char *base = strrchr(maps[i].path, '/');

		base = base ? base + 1 : maps[i].path;
		if (!strncmp(base, "libpython2", 10) || !strncmp(base, "python2", 7))
			py2 = true;
		if (strstr(base, "python") || strstr(base, "Python"))
			pylike = true;
		o = load_object(opts, objs, nr_objs, pid, &maps[i], err, sizeof(err));
		if (o == -1 && pylike && !why[0])
			gil_err(why, whylen, "%s", err);
		if (o >= 0 && (*objs)[o].syms)
			found = o;
		else if (o >= 0 && (*objs)[o].reason && told < 0)
			told = o; /* free-threaded, Python 2, PyPy, stripped: symbols.c says why */
	}
	gil_mappings_free(maps, nr);
	if (found >= 0)
		return found;
	if (why[0])
		return -2;
	if (told >= 0) {
		gil_err(why, whylen, "%s", (*objs)[told].reason);
		return -2;
	}
	if (capped)
		gil_err(why, whylen, "it maps more than %d executable files: only the first %d were looked at, and none defines take_gil/drop_gil",
			GIL_MAPS_MAX_FILES, GIL_MAPS_MAX_FILES);
	else if (py2)
		gil_err(why, whylen, "Python 2 has no take_gil/drop_gil to probe; giltrace needs CPython 3.6 or later");
	else if (pylike)
		gil_err(why, whylen, "no mapped file defines take_gil/drop_gil: a stripped Python needs its debug symbols (Debian: apt-get install python3.X-dbg)");
	else
		gil_err(why, whylen, "not a CPython process (no mapped file defines take_gil/drop_gil)");
	return -2;
}
