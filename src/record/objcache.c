// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * What reading an interpreter's DWARF taught (its probe sites and what each reads), kept by
 * build-id so that attaching to the same interpreter again skips the DWARF: a second attach
 * to Debian's python3.14 with its -dbg file starts without reading 20 MB of DWARF again.
 *
 * An entry is only ever a shortcut to the same result, never a proof of its own:
 *  - only what root's own files said is kept: the object and each debug file it was read from
 *    must be regular files of root's that no group or other user can write (a user's copy of a
 *    system file carries its build-id and could say anything about it); nothing read from a
 *    debuginfod server is kept;
 *  - it is found by the object's build-id, and must name the same machine, file size and
 *    giltrace version; each debug file it was read from must still be there with the same
 *    device, inode, size and change time (a -dbg package installed or removed since misses);
 *  - every site is proven again against the code of the file on the descriptor, as a fresh
 *    read proves it (gil_site_prove: inside a function its .eh_frame_hdr delimits, an entry at
 *    its start, any other site an instruction boundary decoded from there), and the 16 bytes
 *    there must be the bytes the entry recorded: an entry that says otherwise is not used;
 *  - the directory is root's (/var/cache/giltrace/objects, 0700), reached through directories
 *    only root can change (GIL_OBJECT_CACHE can name any path), opened without following
 *    links and checked by fstat, entries are regular files of root's, bounded in size;
 *  - the cache is bounded: an entry over CACHE_MAX_BYTES is not written, and past
 *    CACHE_TOTAL_BYTES or CACHE_MAX_ENTRIES the entries written longest ago are removed.
 * Only results that read DWARF are kept: without it everything is quick to redo.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "state.h"
#include "objcache.h"

/*
 * 2: each site's pointer set too; 4: take_gil entries read which GIL (3.12+), and the code
 * object where a release defers to them (3 read it everywhere: not used)
 */
#define CACHE_FORMAT 4
#define CACHE_MAX_BYTES (1 << 20) /* an entry: real ones are 2 - 8 KiB */
#define CACHE_TOTAL_BYTES (8 << 20) /* all of them: past either bound, the oldest go */
#define CACHE_MAX_ENTRIES 512
#define SITE_BYTES 16

static const char *cache_dir(void)
{
	const char *d = getenv("GIL_OBJECT_CACHE");

	return d && *d ? d : "/var/cache/giltrace/objects";
}

/*
 * May a directory with @st lead to root's cache? Only root can have made what is in it: owned by
 * root, and no one else may write it, unless it is sticky as /tmp is (then others' entries
 * are theirs, and the next component, checked the same way, must be root's).
 */
static bool root_dir(const struct stat *st)
{
	return S_ISDIR(st->st_mode) && st->st_uid == 0 &&
	       (!(st->st_mode & (S_IWGRP | S_IWOTH)) || (st->st_mode & S_ISVTX));
}

/*
 * The cache directory, made if missing (and its parents, 0755); -1 when it is not root's alone
 * (or we are not root). GIL_OBJECT_CACHE can name any path: every component is opened without
 * following a link and must be root_dir(), the last one root's with no access for others, so
 * that no user can swap in a directory of theirs anywhere along it.
 */
static int open_dir(bool create)
{
	const char *dir = cache_dir();
	char *copy, *comp, *save = NULL, *next;
	struct stat st;
	int fd, sub;

	if (geteuid() != 0 || dir[0] != '/' || !(copy = strdup(dir)))
		return -1;
	fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	for (comp = strtok_r(copy, "/", &save); fd >= 0 && comp; comp = next) {
		next = strtok_r(NULL, "/", &save);
		if (fstat(fd, &st) || !root_dir(&st) || !strcmp(comp, "..")) {
			close(fd);
			fd = -1;
			break;
		}
		if (create && mkdirat(fd, comp, next ? 0755 : 0700) < 0 && errno != EEXIST) {
			close(fd);
			fd = -1;
			break;
		}
		sub = openat(fd, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(fd);
		fd = sub;
	}
	free(copy);
	if (fd < 0)
		return -1;
	/* the cache itself: root's, nothing for anyone else, opened for reading through fd */
	sub = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	close(fd);
	if (sub < 0)
		return -1;
	if (fstat(sub, &st) || !root_dir(&st) || (st.st_mode & 077)) {
		close(sub);
		return -1;
	}
	return sub;
}

/*
 * Paths are kept as the process sees them: the /proc/PID/root prefix of this attach is taken
 * off (marked "in_root") and the next attach's put on, so that a new pid finds its files.
 */
static struct json_object *path_json(const char *path, const char *root)
{
	struct json_object *o = json_object_new_object();
	size_t n = strlen(root);
	bool in = n && !strncmp(path, root, n) && path[n] == '/';

	json_object_object_add(o, "path", json_object_new_string(in ? path + n : path));
	json_object_object_add(o, "in_root", json_object_new_boolean(in));
	return o;
}

/* The path of a path_json() object for @root (malloc'd); NULL when malformed (or ENOMEM). */
static char *path_from(struct json_object *o, const char *root)
{
	struct json_object *p, *in;

	if (!o || !json_object_object_get_ex(o, "path", &p) ||
	    !json_object_is_type(p, json_type_string) ||
	    !json_object_object_get_ex(o, "in_root", &in))
		return NULL;
	return gil_strfmt("%s%s", json_object_get_boolean(in) ? root : "", json_object_get_string(p));
}

/* A file only root can change: what a result read from it says may be kept for others. */
static bool root_only(const struct stat *st)
{
	return st->st_uid == 0 && !(st->st_mode & (S_IWGRP | S_IWOTH));
}

/*
 * Identity of a file a result was read from: device, inode, size, change time. NULL when it is
 * not a regular file only root can change (a user's file is never a source kept for others).
 */
static struct json_object *file_id(const char *path, const char *root)
{
	struct json_object *o;
	struct stat st;

	if (stat(path, &st) || !S_ISREG(st.st_mode) || !root_only(&st))
		return NULL;
	o = json_object_new_object();
	json_object_object_add(o, "path", path_json(path, root));
	json_object_object_add(o, "dev", json_object_new_uint64(st.st_dev));
	json_object_object_add(o, "ino", json_object_new_uint64(st.st_ino));
	json_object_object_add(o, "size", json_object_new_int64(st.st_size));
	json_object_object_add(o, "ctime", json_object_new_int64(st.st_ctim.tv_sec * 1000000000LL +
								 st.st_ctim.tv_nsec));
	return o;
}

static bool same_file(struct json_object *o, const char *root)
{
	struct json_object *now = NULL, *v;
	const char *keys[] = { "dev", "ino", "size", "ctime" };
	bool same = false;
	char *path;
	size_t i;

	if (!json_object_object_get_ex(o, "path", &v))
		return false;
	path = path_from(v, root);
	now = path ? file_id(path, root) : NULL;
	free(path);
	if (!now)
		return false;
	for (i = 0, same = true; i < GIL_ARRAY_SIZE(keys); i++) {
		struct json_object *a, *b;

		if (!json_object_object_get_ex(o, keys[i], &a) ||
		    !json_object_object_get_ex(now, keys[i], &b) ||
		    json_object_get_uint64(a) != json_object_get_uint64(b))
			same = false;
	}
	json_object_put(now);
	return same;
}

/* The 16 bytes at file offset @off of @h (fewer at the end of the file), as hex into @hex. */
static int site_bytes(const struct gil_elf *h, uint64_t off, char *hex)
{
	unsigned char b[SITE_BYTES];
	ssize_t n;
	int i;

	n = pread(h->fd, b, sizeof(b), (off_t)off);
	if (n <= 0)
		return -1;
	for (i = 0; i < n; i++)
		sprintf(hex + 2 * i, "%02x", b[i]);
	hex[2 * n] = '\0';
	return 0;
}

static const char *const methods[] = { "symtab",	"dynsym",	 "debuglink",
				       "build-id",	"minidebuginfo", "dwarf-inline",
				       "debuginfod",	"callgraph",	 "exported-host",
				       "exported-fallback", "code-inline" };

static const char *method_of(const char *s)
{
	size_t i;

	for (i = 0; s && i < GIL_ARRAY_SIZE(methods); i++)
		if (!strcmp(s, methods[i]))
			return methods[i];
	return NULL;
}

/* The layout's fields by name, in the entry: an entry written with another list is not used. */
#define NAME(f) #f " "
static const char layout_fields[] = GIL_LAYOUT_FIELDS(NAME, NAME, NAME, NAME, NAME);
#undef NAME

/* The list covers the struct: the fields' sizes add up to it but for its padding (22 bytes). */
#define SIZE(f) +sizeof(((struct gil_layout *)0)->f)
_Static_assert(sizeof(struct gil_layout) - (0 GIL_LAYOUT_FIELDS(SIZE, SIZE, SIZE, SIZE, SIZE)) == 22,
	       "a field of struct gil_layout is not in GIL_LAYOUT_FIELDS (attrib.h), or its padding "
	       "changed: then update the 22");
#undef SIZE

static struct json_object *layout_json(const struct gil_layout *l)
{
	struct json_object *o = json_object_new_object();

#define I64(f) json_object_object_add(o, #f, json_object_new_int64(l->f));
#define INT(f) json_object_object_add(o, #f, json_object_new_int((int)l->f));
#define BOOL(f) json_object_object_add(o, #f, json_object_new_boolean(l->f));
#define U64(f) json_object_object_add(o, #f, json_object_new_uint64(l->f));
#define STR(f) json_object_object_add(o, #f, json_object_new_string(l->f));
	GIL_LAYOUT_FIELDS(I64, INT, BOOL, U64, STR)
#undef I64
#undef INT
#undef BOOL
#undef U64
#undef STR
	return o;
}

static int64_t geti(struct json_object *o, const char *k, bool *ok)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, k, &v) ||
	    (!json_object_is_type(v, json_type_int) && !json_object_is_type(v, json_type_boolean))) {
		*ok = false;
		return 0;
	}
	return json_object_get_int64(v);
}

static uint64_t getu(struct json_object *o, const char *k, bool *ok)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, k, &v) || !json_object_is_type(v, json_type_int)) {
		*ok = false;
		return 0;
	}
	return json_object_get_uint64(v);
}

/* A string member, NULL when absent or null; *@ok false when of another type. */
static const char *get_str(struct json_object *o, const char *k, bool *ok)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, k, &v) || json_object_is_type(v, json_type_null))
		return NULL;
	if (!json_object_is_type(v, json_type_string)) {
		*ok = false;
		return NULL;
	}
	return json_object_get_string(v);
}

static char *dup_or_null(const char *s, bool *ok)
{
	char *d;

	if (!s)
		return NULL;
	d = strdup(s);
	if (!d)
		*ok = false;
	return d;
}

static void str_from(struct json_object *o, const char *k, char *buf, size_t len, bool *ok)
{
	const char *s = get_str(o, k, ok);

	if (!s || strlen(s) >= len)
		*ok = false;
	else
		strcpy(buf, s);
}

static void layout_from(struct json_object *o, struct gil_layout *l, bool *ok)
{
	memset(l, 0, sizeof(*l));
#define I64(f) l->f = geti(o, #f, ok);
#define INT(f) l->f = (__typeof__(l->f))geti(o, #f, ok);
#define BOOL(f) l->f = geti(o, #f, ok) != 0;
#define U64(f) l->f = getu(o, #f, ok);
#define STR(f) str_from(o, #f, l->f, sizeof(l->f), ok);
	GIL_LAYOUT_FIELDS(I64, INT, BOOL, U64, STR)
#undef I64
#undef INT
#undef BOOL
#undef U64
#undef STR
}

/* The file name of @build_id's entry: hex only, so it cannot name another place. */
static bool entry_name(const char *build_id, char *name, size_t len)
{
	size_t i, n = strlen(build_id);

	if (n < 16 || n + 6 > len)
		return false;
	for (i = 0; i < n; i++)
		if (!strchr("0123456789abcdef", build_id[i]))
			return false;
	snprintf(name, len, "%s.json", build_id);
	return true;
}

/* A path member of @o for @root into *@out (NULL when null); false when malformed. */
static bool get_path(struct json_object *o, const char *k, const char *root, char **out)
{
	struct json_object *v;

	*out = NULL;
	if (!json_object_object_get_ex(o, k, &v) || json_object_is_type(v, json_type_null))
		return true;
	*out = path_from(v, root);
	return *out != NULL;
}

struct aged {
	char name[64];
	struct timespec mtime;
	off_t size;
};

static int older_first(const void *a, const void *b)
{
	const struct aged *x = a, *y = b;

	if (x->mtime.tv_sec != y->mtime.tv_sec)
		return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
	if (x->mtime.tv_nsec != y->mtime.tv_nsec)
		return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
	return strcmp(x->name, y->name);
}

/*
 * Keep the cache within CACHE_TOTAL_BYTES and CACHE_MAX_ENTRIES: the entries written longest
 * ago go first, never @keep (the one just written). Only entries (<build-id>.json, regular
 * files) count and are removed; anything else in the directory is left alone.
 */
static void evict(int dfd, const char *keep)
{
	struct aged *v = NULL, *nv;
	size_t n = 0, cap = 0, i, left;
	unsigned long long total = 0;
	struct dirent *de;
	struct stat st;
	DIR *d;
	int fd;

	fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return;
	}
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);

		if (len < 6 || len >= sizeof(v->name) || de->d_name[0] == '.' ||
		    strcmp(de->d_name + len - 5, ".json") ||
		    fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode))
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 64;
			nv = cap <= 4 * CACHE_MAX_ENTRIES ? realloc(v, cap * sizeof(*v)) : NULL;
			if (!nv)
				break;
			v = nv;
		}
		memcpy(v[n].name, de->d_name, len + 1);
		v[n].mtime = st.st_mtim;
		v[n].size = st.st_size;
		total += (unsigned long long)st.st_size;
		n++;
	}
	closedir(d);
	if (v)
		qsort(v, n, sizeof(*v), older_first);
	for (i = 0, left = n; i < n && (total > CACHE_TOTAL_BYTES || left > CACHE_MAX_ENTRIES); i++) {
		if (!strcmp(v[i].name, keep))
			continue;
		if (!unlinkat(dfd, v[i].name, 0)) {
			total -= (unsigned long long)v[i].size;
			left--;
		}
	}
	free(v);
}

void rec_objcache_store(struct object *o, const char *root, bool attribution)
{
	struct json_object *e, *s, *sites, *deps, *a, *v;
	const struct gil_symbols *syms = o->syms;
	char name[160], tmp[200], hex[2 * SITE_BYTES + 1];
	const char *str;
	struct stat st;
	GElf_Ehdr eh;
	int dfd, fd;
	size_t i;

	if (!syms || !syms->dwarf_from || !syms->build_id[0] || (attribution && !o->attrib) ||
	    !entry_name(syms->build_id, name, sizeof(name)) || !gelf_getehdr(o->elf.elf, &eh))
		return;
	/*
	 * Only what root's own files said is kept: a user's copy of a system file has its
	 * build-id and could say anything about it (what every load re-proves against the code
	 * does not catch a site left out).
	 */
	if (fstat(o->elf.fd, &st) || !root_only(&st))
		return;
	/*
	 * A file fetched from a debuginfod server lives in its client's cache, which the
	 * environment chooses (DEBUGINFOD_CACHE_PATH) and --no-debuginfod forbids: keep nothing
	 * read from it, the client's cache already makes the next fetch quick.
	 */
	if (syms->from_debuginfod)
		return; /* also its DWARF's inlined copies, whose method is "dwarf-inline" */
	for (i = 0; i < syms->nr_sites; i++)
		if (!strcmp(syms->sites[i].method, "debuginfod"))
			return;
	dfd = open_dir(true);
	if (dfd < 0)
		return;
	e = json_object_new_object();
	json_object_object_add(e, "format", json_object_new_int(CACHE_FORMAT));
	json_object_object_add(e, "layout_fields", json_object_new_string(layout_fields));
	json_object_object_add(e, "giltrace", json_object_new_string(PACKAGE_VERSION));
	json_object_object_add(e, "build_id", json_object_new_string(syms->build_id));
	json_object_object_add(e, "machine", json_object_new_int(eh.e_machine));
	json_object_object_add(e, "size", json_object_new_uint64(o->elf.size));
	deps = json_object_new_array();
	for (str = syms->dwarf_from, i = 0; i < 2; i++, str = syms->symbols_from) {
		/* the object itself is pinned by its build-id and bytes: only debug files here */
		if (!str || !strcmp(str, syms->path))
			continue;
		v = file_id(str, root);
		if (!v)
			goto out; /* no longer there to compare with: keep nothing */
		json_object_array_add(deps, v);
	}
	json_object_object_add(e, "depends_on", deps);
	s = json_object_new_object();
	json_object_object_add(s, "kind", json_object_new_int(syms->kind));
	json_object_object_add(s, "version", json_object_new_string(syms->version));
	json_object_object_add(s, "approximate", json_object_new_boolean(syms->approximate));
	json_object_object_add(s, "reason", syms->reason ? json_object_new_string(syms->reason) : NULL);
	json_object_object_add(s, "note", syms->note ? json_object_new_string(syms->note) : NULL);
	json_object_object_add(s, "symbols_from", syms->symbols_from ? path_json(syms->symbols_from, root) : NULL);
	json_object_object_add(s, "dwarf_from", path_json(syms->dwarf_from, root));
	json_object_object_add(s, "nr_inlined", json_object_new_uint64(syms->nr_inlined));
	json_object_object_add(s, "nr_unproven", json_object_new_uint64(syms->nr_unproven));
	json_object_object_add(s, "nr_over_cap", json_object_new_uint64(syms->nr_over_cap));
	json_object_object_add(s, "nr_callgraph", json_object_new_uint64(syms->nr_callgraph));
	sites = json_object_new_array();
	for (i = 0; i < syms->nr_sites; i++) {
		const struct gil_site *t = &syms->sites[i];

		if (site_bytes(&o->elf, t->offset, hex))
			goto out;
		v = json_object_new_object();
		json_object_object_add(v, "fn", json_object_new_int(t->fn));
		json_object_object_add(v, "role", json_object_new_int(t->role));
		json_object_object_add(v, "symbol", json_object_new_string(t->symbol));
		json_object_object_add(v, "addr", json_object_new_uint64(t->addr));
		json_object_object_add(v, "offset", json_object_new_uint64(t->offset));
		json_object_object_add(v, "size", json_object_new_uint64(t->size));
		json_object_object_add(v, "method", json_object_new_string(t->method));
		json_object_object_add(v, "retprobe", json_object_new_boolean(t->retprobe));
		json_object_object_add(v, "approximate", json_object_new_boolean(t->approximate));
		json_object_object_add(v, "skipped", json_object_new_int((int)t->skipped));
		json_object_object_add(v, "host", json_object_new_int(t->host));
		json_object_object_add(v, "bytes", json_object_new_string(hex));
		if (o->attrib) {
			const struct gil_attrib_site *as = &o->attrib->sites[i];

			json_object_object_add(v, "fetchargs", as->fetchargs ? json_object_new_string(as->fetchargs) : NULL);
			json_object_object_add(v, "pointer", as->pointer ? json_object_new_string(as->pointer) : NULL);
			json_object_object_add(v, "why", as->why ? json_object_new_string(as->why) : NULL);
		}
		json_object_array_add(sites, v);
	}
	json_object_object_add(s, "sites", sites);
	json_object_object_add(e, "symbols", s);
	if (o->attrib) {
		a = json_object_new_object();
		json_object_object_add(a, "source", json_object_new_int(o->attrib->source));
		json_object_object_add(a, "from", o->attrib->from ? path_json(o->attrib->from, root) : NULL);
		json_object_object_add(a, "why", o->attrib->why ? json_object_new_string(o->attrib->why) : NULL);
		json_object_object_add(a, "layout", layout_json(&o->attrib->layout));
		json_object_object_add(e, "attribution", a);
	}
	str = json_object_to_json_string_ext(e, JSON_C_TO_STRING_PLAIN);
	if (!str || strlen(str) > CACHE_MAX_BYTES)
		goto out; /* never read back: not written */
	snprintf(tmp, sizeof(tmp), ".%s.%d", name, (int)getpid());
	fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		goto out;
	if (gil_write_all(fd, str, strlen(str)) < 0 || fsync(fd) < 0 || close(fd) < 0 ||
	    renameat(dfd, tmp, dfd, name) < 0)
		unlinkat(dfd, tmp, 0);
	else
		evict(dfd, name);
out:
	json_object_put(e);
	close(dfd);
}

/* Read @name in @dfd: a regular file of root's, not linked, bounded. NULL when not usable. */
static struct json_object *read_entry(int dfd, const char *name)
{
	struct json_object *e = NULL;
	struct stat st;
	char *buf;
	ssize_t n;
	int fd;

	fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != 0 || st.st_nlink != 1 ||
	    st.st_size <= 0 || st.st_size > CACHE_MAX_BYTES) {
		close(fd);
		return NULL;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (buf) {
		n = pread(fd, buf, (size_t)st.st_size, 0);
		if (n == st.st_size) {
			buf[n] = '\0';
			e = json_tokener_parse(buf);
		}
		free(buf);
	}
	close(fd);
	return e;
}

/* Copy the why strings (pointing into the parsed entry) into storage @at owns. */
static int own_whys(struct gil_attrib *at)
{
	size_t i, len = at->why ? strlen(at->why) + 1 : 0;
	char *p;

	for (i = 0; i < at->nr_sites; i++)
		len += at->sites[i].why ? strlen(at->sites[i].why) + 1 : 0;
	if (!len)
		return 0;
	p = at->owned = malloc(len);
	if (!p)
		return -1;
	if (at->why)
		at->why = strcpy(p, at->why), p += strlen(p) + 1;
	for (i = 0; i < at->nr_sites; i++)
		if (at->sites[i].why)
			at->sites[i].why = strcpy(p, at->sites[i].why), p += strlen(p) + 1;
	return 0;
}

int rec_objcache_load(struct object *o, const char *path, const char *root, bool attribution)
{
	struct json_object *e, *s, *sites, *deps, *a = NULL, *v;
	struct gil_symbols *syms = NULL;
	struct gil_attrib *at = NULL;
	char name[160], id[2 * 64 + 1], hex[2 * SITE_BYTES + 1];
	const char *str;
	bool ok = true;
	GElf_Ehdr eh;
	size_t i, n;
	int dfd, ret = 0;

	if (gil_elf_build_id(o->elf.elf, id, sizeof(id)) <= 0 || !entry_name(id, name, sizeof(name)) ||
	    !gelf_getehdr(o->elf.elf, &eh))
		return 0;
	dfd = open_dir(false);
	if (dfd < 0)
		return 0;
	e = read_entry(dfd, name);
	close(dfd);
	if (!e)
		return 0;
	str = get_str(e, "giltrace", &ok);
	if (geti(e, "format", &ok) != CACHE_FORMAT || !str || strcmp(str, PACKAGE_VERSION) ||
	    !(str = get_str(e, "build_id", &ok)) || strcmp(str, id) ||
	    geti(e, "machine", &ok) != eh.e_machine || getu(e, "size", &ok) != o->elf.size ||
	    !(str = get_str(e, "layout_fields", &ok)) || strcmp(str, layout_fields) || !ok)
		goto miss;
	if (!json_object_object_get_ex(e, "depends_on", &deps) ||
	    !json_object_is_type(deps, json_type_array))
		goto miss;
	for (i = 0; i < json_object_array_length(deps); i++)
		if (!same_file(json_object_array_get_idx(deps, i), root))
			goto miss;
	if (!json_object_object_get_ex(e, "symbols", &s) ||
	    !json_object_object_get_ex(s, "sites", &sites) ||
	    !json_object_is_type(sites, json_type_array))
		goto miss;
	if (attribution && !json_object_object_get_ex(e, "attribution", &a))
		goto miss;
	n = json_object_array_length(sites);
	if (!n || n > GIL_MAX_SITES)
		goto miss;
	syms = calloc(1, sizeof(*syms));
	if (!syms || !(syms->sites = calloc(n, sizeof(*syms->sites))) ||
	    !(syms->path = strdup(path)))
		goto oom;
	memcpy(syms->build_id, id, sizeof(syms->build_id));
	syms->kind = (enum gil_python_kind)geti(s, "kind", &ok);
	str = get_str(s, "version", &ok);
	if (!str || strlen(str) >= sizeof(syms->version))
		goto miss;
	strcpy(syms->version, str);
	syms->approximate = geti(s, "approximate", &ok);
	syms->reason = dup_or_null(get_str(s, "reason", &ok), &ok);
	syms->note = dup_or_null(get_str(s, "note", &ok), &ok);
	if (!get_path(s, "symbols_from", root, &syms->symbols_from) ||
	    !get_path(s, "dwarf_from", root, &syms->dwarf_from))
		goto miss;
	syms->nr_inlined = getu(s, "nr_inlined", &ok);
	syms->nr_unproven = getu(s, "nr_unproven", &ok);
	syms->nr_over_cap = getu(s, "nr_over_cap", &ok);
	syms->nr_callgraph = getu(s, "nr_callgraph", &ok);
	if (a) {
		at = calloc(1, sizeof(*at));
		if (!at || !(at->sites = calloc(n + 1, sizeof(*at->sites))))
			goto oom;
		at->nr_sites = n;
		at->source = (enum gil_attr_source)geti(a, "source", &ok);
		if (!get_path(a, "from", root, &at->from))
			goto miss;
		at->why = get_str(a, "why", &ok); /* in e: copied below */
		if (!json_object_object_get_ex(a, "layout", &v))
			goto miss;
		layout_from(v, &at->layout, &ok);
	}
	for (i = 0; i < n && ok; i++) {
		struct gil_site *t = &syms->sites[i];

		v = json_object_array_get_idx(sites, i);
		t->fn = (enum gil_func)geti(v, "fn", &ok);
		t->role = (enum gil_site_role)geti(v, "role", &ok);
		t->addr = getu(v, "addr", &ok);
		t->offset = getu(v, "offset", &ok);
		t->size = getu(v, "size", &ok);
		t->method = method_of(get_str(v, "method", &ok));
		t->retprobe = geti(v, "retprobe", &ok);
		t->approximate = geti(v, "approximate", &ok);
		t->skipped = (unsigned int)geti(v, "skipped", &ok);
		t->host = (enum gil_host)geti(v, "host", &ok);
		t->symbol = dup_or_null(get_str(v, "symbol", &ok), &ok);
		syms->nr_sites = i + 1;
		if (!t->symbol || !t->method || t->fn >= GIL_FN_NR || t->role > GIL_SITE_EXIT ||
		    t->host > GIL_HOST_ON_REQUEST)
			goto miss;
		/* the same place of this very file, with the same bytes there now */
		/* re-proven against the code of the file mapped now, as a fresh read would be */
		if (!ok || !t->symbol || !t->method || (unsigned int)t->fn >= GIL_FN_NR ||
		    (t->role != GIL_SITE_ENTRY && t->role != GIL_SITE_EXIT) ||
		    gil_site_prove(o->elf.elf, o->elf.size, t, NULL, 0) ||
		    site_bytes(&o->elf, t->offset, hex) ||
		    !(str = get_str(v, "bytes", &ok)) || strcmp(str, hex))
			goto miss;
		if (at) {
			at->sites[i].fetchargs = dup_or_null(get_str(v, "fetchargs", &ok), &ok);
			at->sites[i].pointer = dup_or_null(get_str(v, "pointer", &ok), &ok);
			at->sites[i].why = get_str(v, "why", &ok);
			at->nr_entries += t->role == GIL_SITE_ENTRY;
			at->nr_attributed += at->sites[i].fetchargs != NULL;
		}
	}
	if (!ok || (at && own_whys(at)))
		goto miss;
	for (i = 0; i < syms->nr_sites; i++) {
		syms->has_take |= syms->sites[i].fn == GIL_FN_TAKE;
		syms->has_drop |= syms->sites[i].fn == GIL_FN_DROP;
	}
	o->syms = syms;
	o->attrib = at;
	ret = 1;
	goto out;
oom:
	ret = -1;
miss:
	if (at)
		for (i = 0; i < at->nr_sites; i++)
			at->sites[i].why = NULL; /* point into e, or into at->owned */
	gil_symbols_free(syms);
	gil_attrib_free(at);
out:
	json_object_put(e);
	return ret;
}
