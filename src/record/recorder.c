// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The recorder: setup -> start -> poll... -> stop -> finish. It ties the stages together:
 * procs (targets) -> symbols (sites) -> probes (tracefs group) -> ring (perf) -> decode ->
 * pairing -> rawfile. Every exit path runs the same teardown (finish).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <event-parse.h>
#include <tracefs.h>

#include "attrib/attrib.h"
#include "clock.h"
#include "decode.h"
#include "launch.h"
#include "ordered.h"
#include "giltrace.h"
#include "pairing.h"
#include "probes.h"
#include "procs.h"
#include "format/rawfile.h"
#include "ring.h"
#include "elf/elf.h"
#include "elf/symbols.h"
#include "common/util.h"

#define DEFAULT_RING_PAGES 1024 /* 4 MiB per CPU: ~0.4 s of the busiest workload measured */
#define ROUND_MS 50 /* rings are drained at least this often */
#define RESCAN_NS 1000000000ull /* all-process mode looks for new processes every second */
#define MAX_NAMES 4096

enum rec_state { R_ALLOC, R_SETUP, R_STARTED, R_STOPPED, R_FINISHED };
enum tgt_state { T_LIVE, T_EXITING, T_DONE };

struct object {
	uint64_t dev, ino;
	char *path; /* as the process maps it */
	char *open_path; /* what we opened and probed: /proc/PID/root + path */
	struct gil_symbols *syms; /* NULL: the file defines no GIL function */
	char *reason; /* symbols.c's one line: why no sites, or why they are approximate */
	char version[32]; /* the interpreter's, as symbols.c read it; "" unknown */
	struct gil_attrib *attrib; /* what the probes read; NULL when attribution is off */
	int first_probe, nr_probes;
	int nr_fetching; /* probes created with fetchargs */
};

struct name {
	int32_t tid;
	char comm[17];
};

struct target {
	pid_t pid;
	int rank;
	const char *rank_source;
	char *cmdline;
	char comm[17];
	int obj; /* index into rec->objects */
	int pidfd;
	int *fds;
	int *fd_cpu; /* the CPU of each fd */
	size_t nr_fds, cap_fds;
	pid_t *tids; /* threads whose events we opened (sorted) */
	size_t nr_tids;
	char *filename;
	struct gil_rawfile *file;
	struct gil_pairing *pairing;
	enum tgt_state state;
	uint64_t exit_seen;
	uint64_t start_ns; /* when its events were enabled */
	const char *reason;
	char *warning; /* "process N: releases are approximate: ..."; NULL when exact */
	uint64_t events;
	struct name *names;
	size_t nr_names;
	int32_t *given; /* threads the program named (gil_recorder_name_thread) */
	size_t nr_given;
	struct gil_thread_summary *summary;
	size_t nr_summary;
	const struct gil_fntab *fntab; /* the recorder's; NULL: intervals carry no function */
	uint8_t *fn_written; /* function ids whose definition this file has */
	size_t fn_written_cap;
};

struct gil_recorder {
	struct gil_options opts;
	pid_t *pids;
	bool all;
	char *outdir;
	int dirfd;
	enum rec_state state;
	struct gil_probes *probes;
	struct gil_rings *rings;
	struct gil_decoder *dec;
	uint8_t *ev_of_probe; /* probe index -> enum gil_ev */
	size_t nr_decoded;
	struct object *objects;
	size_t nr_objects;
	struct target **targets; /* stable addresses: pairing callbacks keep them */
	size_t nr_targets;
	struct gil_ordered queue; /* events of all rings, until they are in time order */
	uint64_t horizon;
	uint64_t start_ns, end_ns, deadline, last_scan;
	struct gil_clock_offsets off_start;
	uint64_t *lost_per_cpu;
	uint64_t *klost_closed; /* per CPU: the events' own lost counts, of closed fds */
	uint64_t *synth; /* per CPU: losses reported from those counts, ahead of the ring */
	bool *ring_hup; /* per CPU: its ring fd reports POLLHUP (owner task gone) */
	uint64_t lost, events, unknown, throttled;
	const char *reason;
	struct gil_process_stats *stats;
	size_t last_target;
	struct {
		pid_t pid, parent;
	} forks[256]; /* recent processes forked by targets, not yet seen running Python */
	size_t next_fork;
	bool launching; /* a command was launched and is followed */
	struct gil_fntab *fntab; /* functions named by the probes' fetchargs, over all targets */
	struct gil_launch launch;
	char err[1024];
};

static void set_err(struct gil_recorder *rec, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void set_err(struct gil_recorder *rec, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(rec->err, sizeof(rec->err), fmt, ap);
	va_end(ap);
}

void gil_options_init(struct gil_options *opts)
{
	memset(opts, 0, sizeof(*opts));
	opts->duration = -1;
}

const char *gil_version(void)
{
	return PACKAGE_VERSION;
}

struct gil_recorder *gil_recorder_alloc(const struct gil_options *opts)
{
	struct gil_recorder *rec = calloc(1, sizeof(*rec));
	const char *base;
	size_t len;

	if (!rec)
		return NULL;
	rec->opts = *opts;
	rec->dirfd = -1;
	rec->all = (!opts->pids || !opts->nr_pids) && !opts->command;
	if (opts->pids && opts->nr_pids) {
		rec->pids = malloc(opts->nr_pids * sizeof(pid_t));
		if (!rec->pids)
			goto fail;
		memcpy(rec->pids, opts->pids, opts->nr_pids * sizeof(pid_t));
		rec->opts.pids = rec->pids;
	}
	if (opts->output_dir) {
		rec->outdir = strdup(opts->output_dir);
	} else {
		base = getenv("SYSTRACE_DUMP_PATH");
		if (!base || !*base)
			base = "/home/sysTrace";
		len = strlen(base) + sizeof("/GIL");
		rec->outdir = malloc(len);
		if (rec->outdir)
			snprintf(rec->outdir, len, "%s/GIL", base);
	}
	if (!rec->outdir)
		goto fail;
	rec->opts.output_dir = rec->outdir;
	if (!rec->opts.ring_pages)
		rec->opts.ring_pages = DEFAULT_RING_PAGES;
	return rec;
fail:
	free(rec->pids);
	free(rec);
	errno = ENOMEM;
	return NULL;
}

const char *gil_recorder_error(const struct gil_recorder *rec)
{
	return rec ? rec->err : "";
}

/* ---- output directory ---------------------------------------------------------------------- */

/* mkdir -p with mode 0750 for what we create; refuses symlinks and world-writable dirs. */
static int open_outdir(struct gil_recorder *rec)
{
	char *path = strdup(rec->outdir), *p;
	struct stat st;
	int fd = -1;

	if (!path)
		return -1;
	for (p = path + 1; ; p++) {
		if (*p == '/' || *p == '\0') {
			char c = *p;

			*p = '\0';
			if (mkdir(path, 0750) < 0 && errno != EEXIST) {
				set_err(rec, "cannot create output directory %s: %s (choose another with --output-dir)",
					path, strerror(errno));
				goto out;
			}
			*p = c;
			if (!c)
				break;
		}
	}
	if (lstat(rec->outdir, &st) < 0) {
		set_err(rec, "cannot use output directory %s: %s", rec->outdir, strerror(errno));
		goto out;
	}
	if (S_ISLNK(st.st_mode)) {
		set_err(rec, "output directory %s is a symbolic link: refusing it (give the real path with --output-dir)",
			rec->outdir);
		goto out;
	}
	if (!S_ISDIR(st.st_mode)) {
		set_err(rec, "output directory %s is not a directory", rec->outdir);
		goto out;
	}
	if ((st.st_mode & S_IWOTH) && !(st.st_mode & S_ISVTX)) {
		set_err(rec, "output directory %s is writable by every user: refusing it (chmod o-w it or choose another with --output-dir)",
			rec->outdir);
		goto out;
	}
	fd = open(rec->outdir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		set_err(rec, "cannot open output directory %s: %s", rec->outdir, strerror(errno));
		goto out;
	}
	if (faccessat(fd, ".", W_OK, AT_EACCESS) < 0) {
		set_err(rec, "output directory %s is not writable: %s (choose another with --output-dir)",
			rec->outdir, strerror(errno));
		close(fd);
		fd = -1;
	}
out:
	free(path);
	rec->dirfd = fd;
	return fd < 0 ? -1 : 0;
}

/* ---- objects: the ELF files that define the GIL functions ------------------------------------ */

static int find_object(struct gil_recorder *rec, const struct gil_mapping *m)
{
	size_t i;

	for (i = 0; i < rec->nr_objects; i++)
		if (rec->objects[i].dev == m->dev && rec->objects[i].ino == m->ino)
			return (int)i;
	return -1;
}

/* What the probes of @o read at each entry: offsets from DWARF, _Py_DebugOffsets or the table. */
static int load_attrib(struct object *o, char *err, size_t errlen)
{
	return gil_attrib_read(o->syms, o->open_path, o->version[0] ? o->version : NULL,
			       &o->attrib, err, errlen);
}

/*
 * Read @m's symbols once per file (by device and inode), checking that the file we open is the
 * one the process maps: same device and inode, so a replaced library is never probed.
 */
static int load_object(struct gil_recorder *rec, pid_t pid, const struct gil_mapping *m,
		       char *err, size_t errlen)
{
	struct object *o;
	char root[64], *open_path;
	struct stat st;
	size_t len;
	int i = find_object(rec, m);

	if (i >= 0)
		return i;
	snprintf(root, sizeof(root), "/proc/%d/root", (int)pid);
	len = strlen(root) + strlen(m->path) + 1;
	open_path = malloc(len);
	if (!open_path)
		return gil_err(err, errlen, "out of memory");
	snprintf(open_path, len, "%s%s", root, m->path);
	if (stat(open_path, &st) < 0 || st.st_ino != m->ino) {
		free(open_path);
		return -2; /* gone or replaced since it was mapped: not this file */
	}
	o = realloc(rec->objects, (rec->nr_objects + 1) * sizeof(*o));
	if (!o) {
		free(open_path);
		return gil_err(err, errlen, "out of memory");
	}
	rec->objects = o;
	o = &rec->objects[rec->nr_objects];
	memset(o, 0, sizeof(*o));
	o->dev = m->dev;
	o->ino = m->ino;
	o->path = strdup(m->path);
	o->open_path = open_path;
	o->first_probe = -1;
	rec->nr_objects++;
	if (gil_symbols_read(open_path, root, &o->syms, err, errlen) < 0) {
		o->syms = NULL;
		return -1;
	}
	if (o->syms->reason)
		o->reason = strdup(o->syms->reason);
	memcpy(o->version, o->syms->version, sizeof(o->version));
	if (!o->syms->nr_sites || !o->syms->has_take || !o->syms->has_drop) {
		gil_symbols_free(o->syms);
		o->syms = NULL;
	}
	if (o->syms && !rec->opts.no_attribution && load_attrib(o, err, errlen) < 0)
		return -1;
	return (int)(rec->nr_objects - 1);
}

static enum gil_ev ev_of(enum gil_func fn, bool ret, bool exit_site)
{
	if (exit_site)
		return fn == GIL_FN_TAKE ? GIL_EV_TAKE_EXIT : GIL_EV_DROP_EXIT;
	if (fn == GIL_FN_TAKE)
		return ret ? GIL_EV_TAKE_RETURN : GIL_EV_TAKE_ENTRY;
	return ret ? GIL_EV_DROP_RETURN : GIL_EV_DROP_ENTRY;
}

static int create_probes(struct gil_recorder *rec, struct object *o)
{
	const struct gil_site *s;
	const char *fetchargs;
	size_t i;
	int idx, ret;

	if (o->first_probe >= 0)
		return 0;
	if (!rec->probes) {
		rec->probes = gil_probes_alloc();
		if (!rec->probes) {
			set_err(rec, "out of memory");
			return -1;
		}
	}
	o->first_probe = (int)rec->probes->nr;
	for (i = 0; i < o->syms->nr_sites; i++) {
		s = &o->syms->sites[i];
		for (ret = 0; ret <= 1; ret++) {
			if (ret && !s->retprobe)
				continue;
			fetchargs = !ret && o->attrib ? o->attrib->sites[i].fetchargs : NULL;
			idx = gil_probes_add(rec->probes, o->open_path, s->offset, s->fn, ret, fetchargs,
					     rec->err, sizeof(rec->err));
			if (idx < 0)
				return -1;
			o->nr_fetching += rec->probes->v[idx].fetches;
			/* An exit site is a plain uprobe that stands for the function's return. */
			rec->probes->v[idx].role_exit = s->role == GIL_SITE_EXIT;
			o->nr_probes++;
		}
	}
	return 0;
}

/* Re-read the group's formats after probes were added, and map probe index -> event kind. */
static int refresh_decoder(struct gil_recorder *rec)
{
	struct gil_probes *p = rec->probes;
	int *ids;
	size_t i;

	if (p->nr == rec->nr_decoded)
		return 0;
	if (gil_probes_load(p, rec->err, sizeof(rec->err)) < 0)
		return -1;
	ids = malloc(p->nr * sizeof(*ids));
	free(rec->ev_of_probe);
	rec->ev_of_probe = malloc(p->nr);
	if (!ids || !rec->ev_of_probe) {
		free(ids);
		set_err(rec, "out of memory");
		return -1;
	}
	for (i = 0; i < p->nr; i++) {
		ids[i] = p->v[i].id;
		rec->ev_of_probe[i] = (uint8_t)ev_of(p->v[i].fn, p->v[i].ret, p->v[i].role_exit);
	}
	gil_decoder_free(rec->dec);
	rec->dec = gil_decoder_alloc(p->tep, ids, (int)p->nr);
	free(ids);
	if (!rec->dec) {
		set_err(rec, "out of memory");
		return -1;
	}
	rec->nr_decoded = p->nr;
	return 0;
}

/* ---- targets -------------------------------------------------------------------------------- */

/* A JSON string of bytes from the system (comm, cmdline): '?' where they break UTF-8. */
static struct json_object *jstr_utf8(const char *s)
{
	char *u = gil_utf8_copy(s);
	struct json_object *o = json_object_new_string(u ? u : "");

	free(u);
	return o;
}

static struct target *target_of(struct gil_recorder *rec, pid_t pid)
{
	size_t i;

	/* Events come in runs from one process: try the last hit first. */
	if (rec->last_target < rec->nr_targets && rec->targets[rec->last_target]->pid == pid)
		return rec->targets[rec->last_target];
	for (i = 0; i < rec->nr_targets; i++) {
		if (rec->targets[i]->pid == pid) {
			rec->last_target = i;
			return rec->targets[i];
		}
	}
	return NULL;
}

/*
 * Which object of @pid defines the GIL functions. Returns its index, -1 on a hard error
 * (rec->err set), -2 when @pid is not a CPython with a GIL (@why says what it is).
 */
static int python_object(struct gil_recorder *rec, pid_t pid, char *why, size_t whylen)
{
	struct gil_mapping *maps = NULL;
	char err[512] = "";
	int nr, i, o, found = -2, told = -1;
	bool py2 = false, pylike = false;

	nr = gil_proc_exec_mappings(pid, &maps);
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
		o = load_object(rec, pid, &maps[i], err, sizeof(err));
		if (o == -1 && pylike && !why[0])
			gil_err(why, whylen, "%s", err);
		if (o >= 0 && rec->objects[o].syms)
			found = o;
		else if (o >= 0 && rec->objects[o].reason && told < 0)
			told = o; /* free-threaded, Python 2, PyPy, stripped: symbols.c says why */
	}
	gil_mappings_free(maps, nr);
	if (found >= 0)
		return found;
	if (why[0])
		return -2;
	if (told >= 0) {
		gil_err(why, whylen, "%s", rec->objects[told].reason);
		return -2;
	}
	if (py2)
		gil_err(why, whylen, "Python 2 has no take_gil/drop_gil to probe; giltrace needs CPython 3.6 or later");
	else if (pylike)
		gil_err(why, whylen, "no mapped file defines take_gil/drop_gil: a stripped Python needs its debug symbols (Debian: apt-get install python3.X-dbg)");
	else
		gil_err(why, whylen, "not a CPython process (no mapped file defines take_gil/drop_gil)");
	return -2;
}

static int add_fd(struct target *t, int fd, int cpu)
{
	int *v;

	if (t->nr_fds == t->cap_fds) {
		v = realloc(t->fds, (t->cap_fds ? 2 * t->cap_fds : 64) * sizeof(*v));
		if (!v)
			return -1;
		t->fds = v;
		v = realloc(t->fd_cpu, (t->cap_fds ? 2 * t->cap_fds : 64) * sizeof(*v));
		if (!v)
			return -1;
		t->fd_cpu = v;
		t->cap_fds = t->cap_fds ? 2 * t->cap_fds : 64;
	}
	t->fd_cpu[t->nr_fds] = cpu;
	t->fds[t->nr_fds++] = fd;
	return 0;
}

static bool has_tid(const struct target *t, pid_t tid)
{
	size_t i;

	for (i = 0; i < t->nr_tids; i++)
		if (t->tids[i] == tid)
			return true;
	return false;
}

static bool was_given(const struct target *t, int32_t tid)
{
	size_t i;

	for (i = 0; i < t->nr_given; i++)
		if (t->given[i] == tid)
			return true;
	return false;
}

static void remember_name(struct target *t, int32_t tid, const char *comm)
{
	struct name *n;

	if (t->nr_names >= MAX_NAMES)
		return;
	n = realloc(t->names, (t->nr_names + 1) * sizeof(*n));
	if (!n)
		return;
	t->names = n;
	n = &t->names[t->nr_names++];
	n->tid = tid;
	snprintf(n->comm, sizeof(n->comm), "%s", comm);
}

static const char *name_of(const struct target *t, int32_t tid)
{
	size_t i;

	for (i = 0; i < t->nr_names; i++)
		if (t->names[i].tid == tid)
			return t->names[i].comm;
	return "";
}

/*
 * Open our events for every thread of @t not yet covered. Threads created later inherit them;
 * re-list until no new thread appears, so one created while we were opening is not missed.
 */
static int open_target_events(struct gil_recorder *rec, struct target *t, bool enable)
{
	const struct object *o = &rec->objects[t->obj];
	int ncpu = gil_rings_nr_cpus(rec->rings), *fds, n, k, j, round;
	pid_t *tids = NULL, *nt;
	char comm[17];
	bool added;
	int nr, i;

	fds = malloc((size_t)ncpu * sizeof(*fds));
	if (!fds) {
		set_err(rec, "out of memory");
		return -1;
	}
	for (round = 0; round < 10; round++) {
		nr = gil_proc_threads(t->pid, &tids);
		if (nr < 0) {
			free(fds);
			return errno == ENOENT ? 0 : (set_err(rec, "cannot list threads of %d: %s",
							      (int)t->pid, strerror(errno)), -1);
		}
		added = false;
		for (i = 0; i < nr; i++) {
			if (has_tid(t, tids[i]))
				continue;
			for (k = 0; k < o->nr_probes; k++) {
				n = gil_rings_open(rec->rings, rec->probes->v[o->first_probe + k].id,
						   tids[i], k == 0, fds, rec->err, sizeof(rec->err));
				if (n < 0 && errno == ESRCH)
					break; /* the thread ended meanwhile */
				if (n < 0)
					goto fail;
				for (j = 0; j < n; j++) {
					if (fds[j] < 0)
						continue;
					if (enable)
						ioctl(fds[j], PERF_EVENT_IOC_ENABLE, 0);
					if (add_fd(t, fds[j], j) < 0) {
						close(fds[j]);
						set_err(rec, "out of memory");
						goto fail;
					}
				}
			}
			if (gil_proc_comm(t->pid, tids[i], comm, sizeof(comm)) == 0)
				remember_name(t, tids[i], comm);
			nt = realloc(t->tids, (t->nr_tids + 1) * sizeof(*nt));
			if (!nt) {
				set_err(rec, "out of memory");
				goto fail;
			}
			t->tids = nt;
			t->tids[t->nr_tids++] = tids[i];
			added = true;
		}
		free(tids);
		tids = NULL;
		if (!added)
			break;
	}
	free(fds);
	return 0;
fail:
	free(tids);
	free(fds);
	return -1;
}

/* Before the first interval naming a function, the file gets the function's definition. */
static int define_function(struct target *t, uint32_t id)
{
	const struct gil_fn *fn = gil_fntab_get(t->fntab, id);
	size_t cap;
	uint8_t *w;

	if (!fn)
		return 0;
	if (id >= t->fn_written_cap) {
		cap = t->fn_written_cap ? t->fn_written_cap : 256;
		while (cap <= id)
			cap *= 2;
		w = realloc(t->fn_written, cap);
		if (!w)
			return -1;
		memset(w + t->fn_written_cap, 0, cap - t->fn_written_cap);
		t->fn_written = w;
		t->fn_written_cap = cap;
	}
	if (t->fn_written[id])
		return 0;
	t->fn_written[id] = 1;
	return gil_rawfile_function(t->file, fn->id, fn->name, fn->file, fn->line, fn->why);
}

static int emit_interval(void *ctx, const struct gil_interval *iv)
{
	struct target *t = ctx;

	if (iv->fn && t->fntab && define_function(t, iv->fn) < 0)
		return -1;
	return gil_rawfile_interval(t->file, iv);
}

/* GIL_<pid>_rank_<rank>.json, or _1, _2... before .json when a recording of it already exists. */
static int create_file(struct gil_recorder *rec, struct target *t)
{
	char name[96], err[512];
	int n;

	for (n = 0; n < 1000; n++) {
		if (n)
			snprintf(name, sizeof(name), "GIL_%d_rank_%d_%d.json", (int)t->pid, t->rank, n);
		else
			snprintf(name, sizeof(name), "GIL_%d_rank_%d.json", (int)t->pid, t->rank);
		t->file = gil_rawfile_create(rec->dirfd, name, err, sizeof(err));
		if (t->file)
			break;
		if (errno != EEXIST) {
			set_err(rec, "cannot create %s/%s: %s", rec->outdir, name, strerror(errno));
			return -1;
		}
	}
	if (!t->file) {
		set_err(rec, "too many recordings of process %d in %s", (int)t->pid, rec->outdir);
		return -1;
	}
	n = (int)(strlen(rec->outdir) + strlen(name) + 2);
	t->filename = malloc((size_t)n);
	if (!t->filename) {
		set_err(rec, "out of memory");
		return -1;
	}
	snprintf(t->filename, (size_t)n, "%s/%s", rec->outdir, name);
	return 0;
}

static struct json_object *offsets_json(const struct gil_clock_offsets *off)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "monotonic_ns", json_object_new_int64(off->monotonic_ns));
	json_object_object_add(o, "realtime_ns", json_object_new_int64(off->realtime_ns));
	return o;
}


/* Why @o's probes read no Python function, or NULL when they do. */
static const char *attribution_why(const struct gil_recorder *rec, const struct object *o)
{
	const struct gil_attrib *at = o->attrib;

	if (rec->opts.no_attribution)
		return "turned off (--no-attribution)";
	if (!at || !at->nr_attributed)
		return at && at->why ? at->why : "no offsets for this interpreter";
	if (!o->nr_fetching)
		return "the kernel refused the fetchargs";
	return NULL;
}

/* The header's "attribution": whether intervals name functions, and where the offsets came from. */
static struct json_object *attribution_json(const struct gil_recorder *rec, const struct object *o)
{
	struct json_object *a = json_object_new_object();
	const struct gil_attrib *at = o->attrib;
	bool on = at && o->nr_fetching > 0 && rec->fntab;
	const char *why = attribution_why(rec, o);

	json_object_object_add(a, "enabled", json_object_new_boolean(on));
	if (at && at->source != GIL_ATTR_SRC_NONE) {
		json_object_object_add(a, "offsets_from", json_object_new_string(
								  gil_attrib_source_name(at->source)));
		json_object_object_add(a, "offsets_file",
				       at->from ? json_object_new_string(at->from) : NULL);
		json_object_object_add(a, "qualname", json_object_new_boolean(at->layout.qualname));
		json_object_object_add(a, "release_reason",
				       json_object_new_boolean(at->layout.req != GIL_REQ_NONE));
		json_object_object_add(a, "entry_sites", json_object_new_int64((int64_t)at->nr_entries));
		json_object_object_add(a, "attributed_sites", json_object_new_int64(o->nr_fetching));
	} else {
		json_object_object_add(a, "offsets_from", NULL);
	}
	if (why)
		json_object_object_add(a, "why", json_object_new_string(why));
	return a;
}

static int write_header(struct gil_recorder *rec, struct target *t)
{
	const struct object *o = &rec->objects[t->obj];
	struct json_object *h = json_object_new_object(), *probes = json_object_new_array(), *pr;
	const struct gil_probe *gp;
	const struct gil_site *s;
	struct utsname u;
	char hex[32];
	int idx = o->first_probe;
	size_t i;
	int ret;

	json_object_object_add(h, "tool", json_object_new_string("giltrace " PACKAGE_VERSION));
	json_object_object_add(h, "pid", json_object_new_int(t->pid));
	json_object_object_add(h, "rank", json_object_new_int(t->rank));
	json_object_object_add(h, "rank_source",
			       t->rank_source ? json_object_new_string(t->rank_source) : NULL);
	json_object_object_add(h, "cmdline", jstr_utf8(t->cmdline ? t->cmdline : ""));
	json_object_object_add(h, "comm", jstr_utf8(t->comm));
	json_object_object_add(h, "python_version",
			       o->version[0] ? json_object_new_string(o->version) : NULL);
	json_object_object_add(h, "hostname",
			       json_object_new_string(uname(&u) == 0 ? u.nodename : ""));
	json_object_object_add(h, "recorder_pid", json_object_new_int(getpid()));
	json_object_object_add(h, "group", json_object_new_string(rec->probes->group));
	json_object_object_add(h, "clock", json_object_new_string(GIL_CLOCK_NAME));
	json_object_object_add(h, "start_ns", json_object_new_uint64(t->start_ns));
	json_object_object_add(h, "clock_offsets", offsets_json(&rec->off_start));
	json_object_object_add(h, "object", json_object_new_string(o->path));
	json_object_object_add(h, "build_id", json_object_new_string(o->syms->build_id));
	json_object_object_add(h, "symbols_from",
			       json_object_new_string(o->syms->symbols_from ? o->syms->symbols_from
									    : o->path));
	for (i = 0; i < o->syms->nr_sites; i++) {
		s = &o->syms->sites[i];
		pr = json_object_new_object();
		json_object_object_add(pr, "function", json_object_new_string(
							       s->fn == GIL_FN_TAKE ? "take_gil" : "drop_gil"));
		json_object_object_add(pr, "symbol", json_object_new_string(s->symbol));
		snprintf(hex, sizeof(hex), "0x%llx", (unsigned long long)s->addr);
		json_object_object_add(pr, "address", json_object_new_string(hex));
		snprintf(hex, sizeof(hex), "0x%llx", (unsigned long long)s->offset);
		json_object_object_add(pr, "offset", json_object_new_string(hex));
		json_object_object_add(pr, "method", json_object_new_string(s->method));
		json_object_object_add(pr, "role", json_object_new_string(
							   s->role == GIL_SITE_EXIT ? "exit" : "entry"));
		json_object_object_add(pr, "return_probe", json_object_new_boolean(s->retprobe));
		if (s->approximate)
			json_object_object_add(pr, "approximate", json_object_new_boolean(true));
		if (s->skipped)
			json_object_object_add(pr, "skipped", json_object_new_int((int)s->skipped));
		/* probes were made site by site: the entry (or exit) probe, then its return */
		gp = idx >= 0 && (size_t)idx < rec->probes->nr ? &rec->probes->v[idx] : NULL;
		idx += 1 + s->retprobe;
		if (o->attrib && s->role == GIL_SITE_ENTRY) {
			json_object_object_add(pr, "attribution",
					       json_object_new_boolean(gp && gp->fetches));
			if (gp && !gp->fetches)
				json_object_object_add(pr, "attribution_why", json_object_new_string(
					gp->fetch_refused[0] ? gp->fetch_refused
							     : o->attrib->sites[i].why
								       ? o->attrib->sites[i].why
								       : "not available"));
		}
		json_object_array_add(probes, pr);
	}
	json_object_object_add(h, "probes", probes);
	/* Readers must not take approximate releases for exact ones: say so once, and why. */
	json_object_object_add(h, "approximate", json_object_new_boolean(o->syms->approximate));
	if (o->syms->approximate && o->syms->reason)
		json_object_object_add(h, "approximate_reason",
				       json_object_new_string(o->syms->reason));
	if (o->syms->dwarf_from)
		json_object_object_add(h, "dwarf_from", json_object_new_string(o->syms->dwarf_from));
	json_object_object_add(h, "attribution", attribution_json(rec, o));
	ret = gil_rawfile_header(t->file, h);
	json_object_put(h);
	if (ret < 0)
		set_err(rec, "%s", gil_rawfile_error(t->file));
	return ret;
}

static int start_target(struct gil_recorder *rec, struct target *t)
{
	const struct object *o = &rec->objects[t->obj];
	const char *why = attribution_why(rec, o);

	if (o->attrib && o->nr_fetching && rec->fntab) {
		t->fntab = rec->fntab;
		gil_rawfile_set_attribution(t->file, true);
	} else if (why && !rec->opts.no_attribution) {
		/* said on screen too: a user who did not turn it off expects function names */
		char *w = t->warning ? gil_strfmt("%s; Python functions and release reasons are not "
						  "recorded: %s", t->warning, why)
				     : gil_strfmt("process %d: Python functions and release reasons are "
						  "not recorded: %s", (int)t->pid, why);

		if (w) {
			free(t->warning);
			t->warning = w;
		}
	}
	t->start_ns = rec->state == R_STARTED ? gil_clock_now() : rec->start_ns;
	t->pairing = gil_pairing_alloc(t->start_ns, emit_interval, t);
	if (!t->pairing) {
		set_err(rec, "out of memory");
		return -1;
	}
	return write_header(rec, t);
}

/*
 * Make @pid a target: find its Python, create probes and events. Returns 0, -1 on a hard error,
 * -2 when @pid is not traceable (reason in rec->err).
 */
/*
 * A new target entry for @pid using object @obj; events are opened by the caller if needed.
 * What /proc no longer tells (a child that already exited) is taken from @parent.
 */
static struct target *new_target(struct gil_recorder *rec, pid_t pid, int obj,
				 const struct target *parent)
{
	struct target **v, *t;

	v = realloc(rec->targets, (rec->nr_targets + 1) * sizeof(*v));
	t = calloc(1, sizeof(*t));
	if (v)
		rec->targets = v;
	if (!v || !t) {
		free(t);
		set_err(rec, "out of memory");
		return NULL;
	}
	rec->targets[rec->nr_targets++] = t;
	t->pid = pid;
	t->obj = obj;
	t->rank = gil_proc_rank(pid, &t->rank_source);
	if (rec->objects[obj].syms->approximate && rec->objects[obj].syms->reason) {
		size_t len = strlen(rec->objects[obj].syms->reason) + 32;

		t->warning = malloc(len);
		if (t->warning)
			snprintf(t->warning, len, "process %d: %s", (int)pid,
				 rec->objects[obj].syms->reason);
	}
	t->cmdline = gil_proc_cmdline(pid);
	if (gil_proc_comm(pid, pid, t->comm, sizeof(t->comm)) < 0 && parent) {
		t->rank = parent->rank;
		t->rank_source = parent->rank_source;
		memcpy(t->comm, parent->comm, sizeof(t->comm));
		if (!t->cmdline && parent->cmdline)
			t->cmdline = strdup(parent->cmdline);
	}
	t->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (create_file(rec, t) < 0)
		return NULL;
	return t;
}

/*
 * Make @pid a target: find its Python, create probes and events. Returns 0, -1 on a hard error,
 * -2 when @pid is not traceable (reason in rec->err).
 */
static int add_target(struct gil_recorder *rec, pid_t pid, bool live)
{
	struct target *t;
	char why[512] = "";
	int obj;

	if (!gil_proc_exists(pid) || gil_proc_is_kernel_thread(pid)) {
		set_err(rec, "no such process: %d", (int)pid);
		return -2;
	}
	obj = python_object(rec, pid, why, sizeof(why));
	if (obj == -1)
		return -1;
	if (obj < 0) {
		set_err(rec, "process %d: %s", (int)pid, why);
		return -2;
	}
	if (create_probes(rec, &rec->objects[obj]) < 0 || refresh_decoder(rec) < 0)
		return -1;
	t = new_target(rec, pid, obj, NULL);
	if (!t || open_target_events(rec, t, live) < 0)
		return -1;
	if (live && start_target(rec, t) < 0)
		return -1;
	return 0;
}

/*
 * A process forked by a target inherited its events; it becomes a target of its own at its first
 * GIL event (a fork that only execs another program leaves no file).
 */
static struct target *adopt_child(struct gil_recorder *rec, pid_t pid)
{
	struct target *parent = NULL, *t;
	size_t i;

	for (i = 0; i < GIL_ARRAY_SIZE(rec->forks); i++) {
		if (rec->forks[i].pid == pid) {
			parent = target_of(rec, rec->forks[i].parent);
			rec->forks[i].pid = 0;
			break;
		}
	}
	if (!parent)
		return NULL;
	t = new_target(rec, pid, parent->obj, parent);
	if (!t || start_target(rec, t) < 0)
		return NULL;
	return t;
}

static void close_target_fds(struct gil_recorder *rec, struct target *t);

static void free_target(struct target *t)
{
	gil_rawfile_free(t->file);
	gil_pairing_free(t->pairing);
	free(t->fds);
	free(t->fd_cpu);
	free(t->tids);
	free(t->cmdline);
	free(t->filename);
	free(t->names);
	free(t->given);
	free(t->summary);
	free(t->warning);
	free(t->fn_written);
	free(t);
}

/* Undo a half-made target @pid (the last one added): its events, its file, its memory. */
static void forget_target(struct gil_recorder *rec, pid_t pid)
{
	struct target *t;

	if (!rec->nr_targets || rec->targets[rec->nr_targets - 1]->pid != pid)
		return;
	t = rec->targets[--rec->nr_targets];
	close_target_fds(rec, t);
	if (t->file) {
		gil_rawfile_free(t->file);
		if (t->filename)
			unlink(t->filename);
	}
	t->file = NULL;
	free_target(t);
	rec->last_target = 0;
}

/* All-process mode: every CPython process on the host but ourselves. */
static int scan_all(struct gil_recorder *rec, bool live)
{
	pid_t *pids = NULL;
	char dev[256];
	int nr, i, ret;

	nr = gil_proc_list(&pids);
	if (nr < 0) {
		set_err(rec, "cannot list processes: %s", strerror(errno));
		return -1;
	}
	for (i = 0; i < nr; i++) {
		/* A program recording itself through the API is a CPython like any other. */
		if (target_of(rec, pids[i]) || gil_proc_is_kernel_thread(pids[i]))
			continue;
		if (rec->opts.accelerator_only && gil_proc_accelerator(pids[i], dev, sizeof(dev)) <= 0)
			continue;
		ret = add_target(rec, pids[i], live);
		if (ret == -1 && !gil_proc_exists(pids[i])) {
			/* it exited while we attached to it: not an error, just gone */
			forget_target(rec, pids[i]);
			ret = -2;
		}
		if (ret == -1) {
			free(pids);
			return -1;
		}
	}
	free(pids);
	rec->err[0] = '\0'; /* non-Python processes are not errors here */
	return 0;
}

int gil_recorder_setup(struct gil_recorder *rec)
{
	struct rlimit rl;
	char *kerr;
	size_t i;
	int ret;

	if (rec->state != R_ALLOC) {
		set_err(rec, "recorder already set up");
		errno = EBUSY;
		return -1;
	}
	rec->state = R_SETUP;
	tracefs_set_loglevel(rec->opts.verbosity >= GIL_DEBUG ? TEP_LOG_ALL :
			     rec->opts.verbosity >= GIL_VERBOSE ? TEP_LOG_WARNING : TEP_LOG_NONE);
	tep_set_loglevel(rec->opts.verbosity >= GIL_DEBUG ? TEP_LOG_ALL : TEP_LOG_NONE);
	if (geteuid() != 0) {
		set_err(rec, "recording needs root (uprobes and perf events): run it with sudo");
		errno = EPERM;
		goto fail;
	}
	if (!tracefs_tracing_dir()) {
		set_err(rec, "tracefs is not mounted and could not be mounted: mount -t tracefs nodev /sys/kernel/tracing");
		errno = ENOENT;
		goto fail;
	}
	if (!tracefs_file_exists(NULL, "uprobe_events")) {
		set_err(rec, "this kernel has no uprobe events (%s/uprobe_events missing): it needs CONFIG_UPROBE_EVENTS=y",
			tracefs_tracing_dir());
		errno = ENOTSUP;
		goto fail;
	}
	gil_probes_cleanup_stale();
	if (!rec->opts.no_attribution) {
		rec->fntab = gil_fntab_alloc();
		if (!rec->fntab) {
			errno = ENOMEM;
			goto fail;
		}
	}
	/* One fd per thread, CPU and probe: lift the soft limit to the hard one. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (open_outdir(rec) < 0)
		goto fail;
	rec->rings = gil_rings_alloc(rec->opts.ring_pages);
	if (!rec->rings) {
		set_err(rec, "invalid ring size %zu pages (a power of two is needed)",
			rec->opts.ring_pages);
		goto fail;
	}
	rec->lost_per_cpu = calloc((size_t)gil_rings_nr_cpus(rec->rings), sizeof(uint64_t));
	rec->klost_closed = calloc((size_t)gil_rings_nr_cpus(rec->rings), sizeof(uint64_t));
	rec->synth = calloc((size_t)gil_rings_nr_cpus(rec->rings), sizeof(uint64_t));
	if (!rec->lost_per_cpu || !rec->klost_closed || !rec->synth)
		goto fail;
	if (rec->opts.command) {
		/* stopped before its exec; its CPython is caught in poll() */
		if (gil_launch_spawn(&rec->launch, rec->opts.command, !rec->opts.command_as_root,
				     rec->err, sizeof(rec->err)) < 0)
			goto fail;
		rec->launching = true;
	} else if (rec->all) {
		/* processes that start later are picked up in poll() */
		if (scan_all(rec, false) < 0)
			goto fail;
	} else {
		for (i = 0; i < rec->opts.nr_pids; i++) {
			if (target_of(rec, rec->pids[i]))
				continue;
			ret = add_target(rec, rec->pids[i], false);
			if (ret < 0)
				goto fail;
		}
	}
	return 0;
fail:
	if (!rec->err[0]) {
		kerr = strerror(errno);
		set_err(rec, "setup failed: %s", kerr);
	}
	gil_recorder_finish(rec);
	return -1;
}

/* ---- events in, intervals out ---------------------------------------------------------------- */

static int push(struct gil_recorder *rec, const struct gil_qent *e)
{
	if (gil_ordered_push(&rec->queue, e) < 0) {
		set_err(rec, "out of memory");
		return -1;
	}
	return 0;
}

static const struct gil_sample_id *sample_id_at_end(const struct perf_event_header *h)
{
	if (h->size < sizeof(*h) + sizeof(struct gil_sample_id))
		return NULL;
	return (const void *)((const char *)h + h->size - sizeof(struct gil_sample_id));
}

static int on_record(void *ctx, int cpu, const struct perf_event_header *h)
{
	struct gil_recorder *rec = ctx;
	const struct gil_sample_id *sid;
	struct gil_event ev;
	struct gil_qent e;
	struct target *t;
	const uint32_t *u;
	const char *comm;

	memset(&e, 0, sizeof(e));
	switch (h->type) {
	case PERF_RECORD_SAMPLE:
		if (gil_decode_sample(rec->dec, h, &ev) < 0) {
			rec->unknown++;
			return 0;
		}
		e.type = Q_GIL;
		e.ts = ev.ts;
		e.pid = ev.pid;
		e.tid = ev.tid;
		e.ev = rec->ev_of_probe[ev.probe];
		/* the strings point into the ring: name the function now */
		if (ev.has_frame && rec->fntab)
			e.fn = gil_fntab_intern(rec->fntab, &ev.frame);
		if (e.ev == GIL_EV_DROP_ENTRY && ev.req >= 0)
			e.reason = ev.req ? GIL_REASON_FORCED : GIL_REASON_VOLUNTARY;
		rec->events++;
		return push(rec, &e);
	case PERF_RECORD_LOST:
		/* struct { header; u64 id; u64 lost; sample_id } */
		sid = sample_id_at_end(h);
		e.type = Q_LOST;
		e.cpu = cpu;
		e.count = ((const uint64_t *)(h + 1))[1];
		e.ts = sid ? sid->time : rec->horizon;
		/* already reported from the events' own counts (report_pending_lost) */
		if (rec->synth[cpu]) {
			uint64_t a = e.count < rec->synth[cpu] ? e.count : rec->synth[cpu];

			rec->synth[cpu] -= a;
			e.count -= a;
			if (!e.count)
				return 0;
		}
		rec->lost += e.count;
		rec->lost_per_cpu[cpu] += e.count;
		return push(rec, &e);
	case PERF_RECORD_EXIT:
		/* struct { header; u32 pid, ppid, tid, ptid; u64 time; sample_id } */
		u = (const uint32_t *)(h + 1);
		e.type = Q_EXIT;
		e.pid = u[0];
		e.tid = u[2];
		e.ts = *(const uint64_t *)(u + 4);
		return push(rec, &e);
	case PERF_RECORD_COMM:
		/* struct { header; u32 pid, tid; char comm[]; sample_id }: a thread renamed itself */
		u = (const uint32_t *)(h + 1);
		comm = (const char *)(u + 2);
		t = target_of(rec, (pid_t)u[0]);
		sid = sample_id_at_end(h);
		if (t && t->state != T_DONE && t->pairing)
			gil_rawfile_thread(t->file, (int32_t)u[1], comm, sid ? sid->time : 0);
		return 0;
	case PERF_RECORD_FORK:
		/* struct { header; u32 pid, ppid, tid, ptid; u64 time }: read the new thread's name
		 * now, while it surely exists. */
		u = (const uint32_t *)(h + 1);
		if (u[0] != u[1] && target_of(rec, (pid_t)u[1])) {
			/* a new process, not a thread: remember whose child it is */
			rec->forks[rec->next_fork].pid = (pid_t)u[0];
			rec->forks[rec->next_fork].parent = (pid_t)u[1];
			rec->next_fork = (rec->next_fork + 1) % GIL_ARRAY_SIZE(rec->forks);
			return 0;
		}
		t = target_of(rec, (pid_t)u[0]);
		if (t && t->state == T_LIVE && !*name_of(t, (int32_t)u[2])) {
			char nm[17];

			/* a thread starts with its creator's name; a later change comes as COMM */
			if (gil_proc_comm(t->pid, (pid_t)u[2], nm, sizeof(nm)) < 0)
				snprintf(nm, sizeof(nm), "%s", name_of(t, (int32_t)u[3])[0]
								   ? name_of(t, (int32_t)u[3])
								   : t->comm);
			remember_name(t, (int32_t)u[2], nm);
		}
		return 0;
	case PERF_RECORD_THROTTLE:
		rec->throttled++;
		return 0;
	default:
		return 0;
	}
}


static int process_one(void *ctx, const struct gil_qent *e)
{
	struct gil_recorder *rec = ctx;
	struct target *t;
	char comm[17] = "";
	size_t i;
	int r;

	if (e->type == Q_LOST) {
		for (i = 0; i < rec->nr_targets; i++) {
			t = rec->targets[i];
			if (t->state == T_DONE || !t->pairing)
				continue;
			gil_pairing_lost(t->pairing);
			if (gil_rawfile_lost(t->file, e->cpu, e->count, e->ts) < 0)
				goto werr;
		}
		return 0;
	}
	t = target_of(rec, (pid_t)e->pid);
	if (!t && e->type == Q_GIL && (rec->state == R_STARTED || rec->state == R_STOPPED)) {
		t = adopt_child(rec, (pid_t)e->pid);
		if (!t && rec->err[0])
			return -1;
	}
	if (!t || t->state == T_DONE || !t->pairing) {
		if (e->type == Q_GIL)
			rec->unknown++;
		return 0;
	}
	if (e->type == Q_EXIT) {
		if (gil_pairing_exit(t->pairing, (int32_t)e->tid, e->ts) < 0 ||
		    gil_rawfile_exit(t->file, (int32_t)e->tid, e->ts) < 0)
			goto werr;
		return 0;
	}
	t->events++;
	r = gil_pairing_event_attr(t->pairing, (int32_t)e->tid, (enum gil_ev)e->ev, e->ts, e->fn,
				   e->reason);
	if (r < 0)
		goto werr;
	if (r == 1) {
		/* Names were read when the thread was found or created; /proc is the fallback. */
		snprintf(comm, sizeof(comm), "%s", name_of(t, (int32_t)e->tid));
		if (!comm[0]) {
			if (gil_proc_comm(t->pid, (pid_t)e->tid, comm, sizeof(comm)) < 0)
				snprintf(comm, sizeof(comm), "%s", t->comm);
			remember_name(t, (int32_t)e->tid, comm);
		}
		/* a name the program gave before the thread's first event stays the last word */
		if (!was_given(t, (int32_t)e->tid) &&
		    gil_rawfile_thread(t->file, (int32_t)e->tid, comm, e->ts) < 0)
			goto werr;
	}
	return 0;
werr:
	t = t ? t : rec->targets[i];
	set_err(rec, "%s (recording stopped; the file is readable up to the last complete record)",
		gil_rawfile_error(t->file)[0] ? gil_rawfile_error(t->file) : "out of memory");
	return -1;
}

/*
 * Losses the kernel counted but could not report yet: a ring that was full keeps its count until
 * its next record, which never comes once the events stop. The events' own counts
 * (PERF_FORMAT_LOST) hold them; report the difference as lost records at @ts. Threads that
 * inherited events keep their counts in the kernel's child events: those stay unseen here.
 */
static int report_pending_lost(struct gil_recorder *rec, uint64_t ts)
{
	int ncpu = gil_rings_nr_cpus(rec->rings), c;
	uint64_t *k, v;
	struct gil_qent e;
	size_t i, j;
	int ret = 0;

	k = calloc((size_t)ncpu, sizeof(*k));
	if (!k)
		return 0;
	memcpy(k, rec->klost_closed, (size_t)ncpu * sizeof(*k));
	for (i = 0; i < rec->nr_targets; i++)
		for (j = 0; j < rec->targets[i]->nr_fds; j++)
			if (gil_rings_read_lost(rec->rings, rec->targets[i]->fds[j], &v) == 0)
				k[rec->targets[i]->fd_cpu[j]] += v;
	for (c = 0; c < ncpu && ret == 0; c++) {
		if (k[c] <= rec->lost_per_cpu[c])
			continue;
		memset(&e, 0, sizeof(e));
		e.type = Q_LOST;
		e.cpu = c;
		e.count = k[c] - rec->lost_per_cpu[c];
		e.ts = ts;
		rec->lost += e.count;
		rec->lost_per_cpu[c] += e.count;
		rec->synth[c] += e.count;
		ret = push(rec, &e);
	}
	free(k);
	return ret;
}


/* ---- lifecycle -------------------------------------------------------------------------------- */

/* Does the ELF file at @path list a libpython among its DT_NEEDED entries? */
static bool needs_libpython(const char *path)
{
	struct gil_elf h;
	bool found;

	if (gil_elf_open(&h, path, NULL, 0) < 0)
		return false;
	found = gil_elf_needs(h.elf, "libpython3");
	gil_elf_close(&h);
	return found;
}

static enum gil_exec_kind launch_classify(void *ctx, pid_t pid)
{
	struct gil_symbols *syms = NULL;
	enum gil_exec_kind kind = GIL_EXEC_OTHER;
	char exe[64], root[64], err[256];

	(void)ctx;
	snprintf(exe, sizeof(exe), "/proc/%d/exe", (int)pid);
	snprintf(root, sizeof(root), "/proc/%d/root", (int)pid);
	if (gil_symbols_read(exe, root, &syms, err, sizeof(err)) == 0 && syms->has_take &&
	    syms->has_drop)
		kind = GIL_EXEC_PYTHON_NOW;
	else if (needs_libpython(exe))
		kind = GIL_EXEC_PYTHON_LOADING;
	gil_symbols_free(syms);
	return kind;
}

static int launch_attach(void *ctx, pid_t pid)
{
	struct gil_recorder *rec = ctx;
	char why[512] = "";
	int obj, ret;

	if (target_of(rec, pid))
		return 1;
	obj = python_object(rec, pid, why, sizeof(why));
	if (obj == -1)
		return -1;
	if (obj < 0)
		return 0; /* not mapped yet */
	ret = add_target(rec, pid, true);
	return ret == 0 ? 1 : ret == -2 ? 0 : -1;
}

static const struct gil_launch_ops launch_ops = {
	.classify = launch_classify,
	.attach = launch_attach,
};

pid_t gil_recorder_command(struct gil_recorder *rec, bool *running, int *status)
{
	if (!rec->launching)
		return 0;
	if (running)
		*running = rec->launch.running;
	if (status)
		*status = rec->launch.status;
	return rec->launch.child;
}

int gil_recorder_command_wait(struct gil_recorder *rec)
{
	if (!rec->launching)
		return 0;
	gil_launch_release(&rec->launch);
	return gil_launch_wait(&rec->launch);
}

int gil_recorder_start(struct gil_recorder *rec)
{
	size_t i, k;

	if (rec->state != R_SETUP) {
		set_err(rec, "recorder not set up");
		errno = EINVAL;
		return -1;
	}
	gil_clock_offsets_sample(&rec->off_start);
	rec->start_ns = gil_clock_now();
	rec->horizon = rec->start_ns;
	rec->last_scan = rec->start_ns;
	if (rec->opts.duration >= 0)
		rec->deadline = rec->start_ns + (uint64_t)(rec->opts.duration * 1e9);
	for (i = 0; i < rec->nr_targets; i++) {
		if (start_target(rec, rec->targets[i]) < 0)
			return -1;
		for (k = 0; k < rec->targets[i]->nr_fds; k++)
			ioctl(rec->targets[i]->fds[k], PERF_EVENT_IOC_ENABLE, 0);
	}
	rec->state = R_STARTED;
	if (rec->launching && gil_launch_resume(&rec->launch, rec->err, sizeof(rec->err)) < 0)
		return -1;
	return 0;
}

static void close_target_fds(struct gil_recorder *rec, struct target *t)
{
	uint64_t lost;
	size_t k;

	for (k = 0; k < t->nr_fds; k++) {
		if (rec->rings && gil_rings_read_lost(rec->rings, t->fds[k], &lost) == 0)
			rec->klost_closed[t->fd_cpu[k]] += lost;
		close(t->fds[k]);
	}
	t->nr_fds = 0;
	if (t->pidfd >= 0)
		close(t->pidfd);
	t->pidfd = -1;
}

static void fill_summary(struct target *t)
{
	struct gil_thread_stats *st, other;
	const struct gil_fn *fn;
	size_t nr, i, k;

	nr = gil_pairing_threads(t->pairing, NULL, 0, NULL);
	st = calloc(nr + 1, sizeof(*st));
	t->summary = calloc(nr + 1, sizeof(*t->summary));
	if (!st || !t->summary) {
		free(st);
		return;
	}
	gil_pairing_threads(t->pairing, st, nr, &other);
	if (other.count[0] + other.count[1] + other.count[2])
		st[nr++] = other;
	for (i = 0; i < nr; i++) {
		t->summary[i].tid = st[i].tid;
		snprintf(t->summary[i].name, sizeof(t->summary[i].name), "%s",
			 st[i].tid < 0 ? "(exited threads)" : name_of(t, st[i].tid));
		t->summary[i].wall_ns = st[i].last_ts - st[i].first_ts;
		fn = NULL;
		if (t->fntab && st[i].tid >= 0)
			fn = gil_fntab_get(t->fntab, gil_pairing_top_fn(&st[i], NULL));
		if (fn && fn->name)
			snprintf(t->summary[i].mostly_in, sizeof(t->summary[i].mostly_in), "%s",
				 fn->name);
		else if (fn)
			snprintf(t->summary[i].mostly_in, sizeof(t->summary[i].mostly_in), "<%s>",
				 fn->why ? fn->why : "unreadable");
		for (k = 0; k < 3; k++) {
			t->summary[i].ns[k] = st[i].ns[k];
			t->summary[i].count[k] = st[i].count[k];
		}
	}
	t->nr_summary = nr;
	free(st);
}

/* Close what @t has open at @end, write its footer, release its events. */
static int finish_target(struct gil_recorder *rec, struct target *t, uint64_t end,
			 const char *reason)
{
	struct json_object *f, *lpc, *threads, *th;
	struct gil_clock_offsets off;
	int ret = 0, ncpu, i;
	size_t k;

	if (t->state == T_DONE)
		return 0;
	close_target_fds(rec, t);
	t->state = T_DONE;
	t->reason = reason;
	if (!t->pairing || !t->file)
		return 0;
	if (gil_pairing_finish(t->pairing, end) < 0)
		ret = -1;
	fill_summary(t);
	gil_clock_offsets_sample(&off);
	f = json_object_new_object();
	json_object_object_add(f, "end_ns", json_object_new_uint64(end));
	json_object_object_add(f, "clock_offsets", offsets_json(&off));
	json_object_object_add(f, "reason", json_object_new_string(reason));
	json_object_object_add(f, "events", json_object_new_uint64(t->events));
	json_object_object_add(f, "intervals",
			       json_object_new_uint64(gil_rawfile_intervals(t->file)));
	json_object_object_add(f, "lost", json_object_new_uint64(rec->lost));
	lpc = json_object_new_array();
	ncpu = gil_rings_nr_cpus(rec->rings);
	for (i = 0; i < ncpu; i++)
		json_object_array_add(lpc, json_object_new_uint64(rec->lost_per_cpu[i]));
	json_object_object_add(f, "lost_per_cpu", lpc);
	/* Never silent: samples the kernel throttled, and samples of processes not recorded. */
	json_object_object_add(f, "throttled", json_object_new_uint64(rec->throttled));
	json_object_object_add(f, "foreign_events", json_object_new_uint64(rec->unknown));
	threads = json_object_new_array();
	for (k = 0; k < t->nr_summary; k++) {
		if (t->summary[k].tid < 0)
			continue;
		th = json_object_new_object();
		json_object_object_add(th, "tid", json_object_new_int(t->summary[k].tid));
		json_object_object_add(th, "name", jstr_utf8(t->summary[k].name));
		json_object_array_add(threads, th);
	}
	json_object_object_add(f, "threads", threads);
	if (gil_rawfile_finish(t->file, f) < 0) {
		set_err(rec, "%s", gil_rawfile_error(t->file));
		ret = -1;
	}
	json_object_put(f);
	return ret;
}

int gil_recorder_poll(struct gil_recorder *rec, int timeout_ms)
{
	struct pollfd *pfd = NULL;
	struct target *t;
	size_t i, n = 0, m, *which = NULL;
	uint64_t now, round_start;
	bool live = false;
	int wait, r, c, ncpu;

	if (rec->state != R_STARTED)
		return 0;
	now = gil_clock_now();
	wait = timeout_ms < 0 || timeout_ms > ROUND_MS ? ROUND_MS : timeout_ms;
	if (rec->deadline && rec->deadline > now && (rec->deadline - now) / 1000000 < (uint64_t)wait)
		wait = (int)((rec->deadline - now) / 1000000);
	ncpu = gil_rings_nr_cpus(rec->rings);
	pfd = calloc(rec->nr_targets + (size_t)ncpu + 1, sizeof(*pfd));
	which = calloc(rec->nr_targets + 1, sizeof(*which));
	if (!pfd || !which) {
		free(pfd);
		free(which);
		set_err(rec, "out of memory");
		return -1;
	}
	for (i = 0; i < rec->nr_targets; i++) {
		if (rec->targets[i]->state != T_LIVE || rec->targets[i]->pidfd < 0)
			continue;
		pfd[n].fd = rec->targets[i]->pidfd;
		pfd[n].events = POLLIN;
		which[n++] = i;
	}
	if (rec->launching && rec->launch.nr && wait > 5)
		wait = 5; /* processes stopped in ptrace wait for us: answer quickly */
	/* A ring half full wakes us before the round is over (small --mmap-pages, bursts). */
	for (c = 0, m = n; c < ncpu; c++) {
		if (gil_rings_fd(rec->rings, c) < 0 || (rec->ring_hup && rec->ring_hup[c]))
			continue;
		pfd[m].fd = gil_rings_fd(rec->rings, c);
		pfd[m++].events = POLLIN;
	}
	r = poll(pfd, m, wait);
	/* A ring whose owning event's task ended reports POLLHUP for good: stop asking it. */
	for (i = n; r > 0 && i < m; i++) {
		if (pfd[i].revents & (POLLHUP | POLLERR)) {
			if (!rec->ring_hup)
				rec->ring_hup = calloc((size_t)ncpu, sizeof(bool));
			for (c = 0; rec->ring_hup && c < ncpu; c++)
				if (gil_rings_fd(rec->rings, c) == pfd[i].fd)
					rec->ring_hup[c] = true;
		}
	}
	if (r < 0 && errno != EINTR) {
		set_err(rec, "poll: %s", strerror(errno));
		goto fail;
	}
	round_start = gil_clock_now();
	for (i = 0; r > 0 && i < n; i++) {
		t = rec->targets[which[i]];
		if (pfd[i].revents && t->state == T_LIVE) {
			t->state = T_EXITING;
			t->exit_seen = round_start;
		}
	}
	/* Targets without a pidfd (old kernels): notice exits through /proc. */
	for (i = 0; i < rec->nr_targets; i++) {
		t = rec->targets[i];
		if (t->state == T_LIVE && t->pidfd < 0 && !gil_proc_exists(t->pid)) {
			t->state = T_EXITING;
			t->exit_seen = round_start;
		}
	}
	if (rec->launching && gil_launch_step(&rec->launch, &launch_ops, rec, rec->err,
					      sizeof(rec->err)) < 0)
		goto fail;
	if (gil_rings_drain(rec->rings, on_record, rec) < 0)
		goto fail;
	for (i = 0; i < rec->nr_targets; i++) {
		t = rec->targets[i];
		if (t->state == T_EXITING && t->exit_seen < rec->horizon) {
			if (report_pending_lost(rec, t->exit_seen) < 0)
				goto fail;
			break;
		}
	}
	/* Events stamped before the previous round began are all in the rings by now. */
	if (gil_ordered_flush(&rec->queue, rec->horizon, process_one, rec) < 0)
		goto fail;
	for (i = 0; i < rec->nr_targets; i++) {
		t = rec->targets[i];
		if (t->state == T_EXITING && t->exit_seen < rec->horizon &&
		    finish_target(rec, t, t->exit_seen, "exited") < 0)
			goto fail;
		if (t->state != T_DONE && gil_rawfile_flush(t->file) < 0) {
			set_err(rec, "%s (recording stopped; the file is readable up to the last complete record)",
				gil_rawfile_error(t->file));
			goto fail;
		}
		if (t->state != T_DONE)
			live = true;
	}
	rec->horizon = round_start;
	if (rec->all && round_start - rec->last_scan >= RESCAN_NS) {
		rec->last_scan = round_start;
		if (scan_all(rec, true) < 0)
			goto fail;
		live = true;
	}
	free(pfd);
	free(which);
	if (rec->deadline && round_start >= rec->deadline) {
		rec->reason = "duration";
		return 0;
	}
	if (rec->launching && rec->launch.running)
		return 1; /* the command may start a CPython yet */
	if (!rec->all && !live) {
		rec->reason = "exited";
		return 0;
	}
	return 1;
fail:
	free(pfd);
	free(which);
	rec->reason = "error";
	return -1;
}

int gil_recorder_stop(struct gil_recorder *rec)
{
	size_t i, k;

	if (rec->state != R_STARTED)
		return 0;
	for (i = 0; i < rec->nr_targets; i++)
		for (k = 0; k < rec->targets[i]->nr_fds; k++)
			ioctl(rec->targets[i]->fds[k], PERF_EVENT_IOC_DISABLE, 0);
	rec->end_ns = gil_clock_now();
	rec->state = R_STOPPED;
	return 0;
}

int gil_recorder_finish(struct gil_recorder *rec)
{
	bool started = rec->state == R_STARTED || rec->state == R_STOPPED;
	struct gil_process_stats *ps;
	struct target *t;
	int ret = 0, k;
	size_t i;

	if (rec->state == R_FINISHED)
		return 0;
	gil_recorder_stop(rec);
	if (rec->launching) {
		gil_launch_release(&rec->launch);
		if (!started && rec->launch.running) {
			/* setup failed before the command ran: it must not run unrecorded */
			kill(rec->launch.child, SIGKILL);
			gil_launch_wait(&rec->launch);
		}
	}
	if (started && rec->rings) {
		if (gil_rings_drain(rec->rings, on_record, rec) < 0 ||
		    report_pending_lost(rec, rec->end_ns) < 0 ||
		    gil_ordered_flush(&rec->queue, UINT64_MAX, process_one, rec) < 0)
			ret = -1;
	}
	if (!rec->reason)
		rec->reason = started ? "stopped" : "error";
	for (i = 0; i < rec->nr_targets; i++) {
		t = rec->targets[i];
		if (started) {
			if (finish_target(rec, t, rec->end_ns, rec->reason) < 0)
				ret = -1;
		} else {
			/* setup failed: nothing was recorded; leave no empty file behind */
			close_target_fds(rec, t);
			if (t->file) {
				gil_rawfile_free(t->file);
				t->file = NULL;
				if (t->filename)
					unlink(t->filename);
			}
			t->state = T_DONE;
		}
	}
	/* Teardown order: events are closed (above), then rings, then the probes themselves. */
	gil_rings_free(rec->rings);
	rec->rings = NULL;
	if (gil_probes_destroy(rec->probes) < 0) {
		set_err(rec, "could not remove every probe of group %s: run gil-record --cleanup",
			rec->probes->group);
		ret = -1;
	}
	ps = calloc(rec->nr_targets + 1, sizeof(*ps));
	for (i = 0; ps && i < rec->nr_targets; i++) {
		t = rec->targets[i];
		ps[i].pid = t->pid;
		ps[i].rank = t->rank;
		ps[i].path = t->filename;
		ps[i].events = t->events;
		ps[i].intervals = gil_rawfile_intervals(t->file);
		ps[i].threads = 0;
		ps[i].reason = t->reason;
		ps[i].wall_ns = (t->exit_seen && t->exit_seen < rec->end_ns ? t->exit_seen
									 : rec->end_ns) - t->start_ns;
		if (!started)
			ps[i].wall_ns = 0;
		for (k = 0; k < (int)t->nr_summary; k++) {
			ps[i].threads += t->summary[k].tid >= 0;
			ps[i].ns[0] += t->summary[k].ns[0];
			ps[i].ns[1] += t->summary[k].ns[1];
			ps[i].ns[2] += t->summary[k].ns[2];
		}
	}
	rec->stats = ps;
	if (rec->dirfd >= 0)
		close(rec->dirfd);
	rec->dirfd = -1;
	rec->state = R_FINISHED;
	return ret;
}

void gil_recorder_free(struct gil_recorder *rec)
{
	size_t i;

	if (!rec)
		return;
	gil_recorder_finish(rec);
	for (i = 0; i < rec->nr_targets; i++) {
		struct target *t = rec->targets[i];

		if (t)
			free_target(t);
	}
	for (i = 0; i < rec->nr_objects; i++) {
		gil_symbols_free(rec->objects[i].syms);
		free(rec->objects[i].reason);
		gil_attrib_free(rec->objects[i].attrib);
		free(rec->objects[i].path);
		free(rec->objects[i].open_path);
	}
	gil_probes_free(rec->probes);
	gil_decoder_free(rec->dec);
	gil_fntab_free(rec->fntab);
	free(rec->ev_of_probe);
	free(rec->objects);
	free(rec->targets);
	gil_ordered_free(&rec->queue);
	free(rec->lost_per_cpu);
	free(rec->klost_closed);
	free(rec->synth);
	free(rec->ring_hup);
	free(rec->stats);
	free(rec->pids);
	free(rec->outdir);
	free(rec);
}

const struct gil_process_stats *gil_recorder_stats(const struct gil_recorder *rec, size_t *nr)
{
	*nr = rec->stats ? rec->nr_targets : 0;
	return rec->stats;
}

const struct gil_thread_summary *gil_recorder_threads(const struct gil_recorder *rec, size_t proc,
						       size_t *nr)
{
	if (proc >= rec->nr_targets) {
		*nr = 0;
		return NULL;
	}
	*nr = rec->targets[proc]->nr_summary;
	return rec->targets[proc]->summary;
}

uint64_t gil_recorder_lost(const struct gil_recorder *rec)
{
	return rec->lost;
}

uint64_t gil_recorder_events(const struct gil_recorder *rec)
{
	return rec->events;
}

size_t gil_recorder_nr_targets(const struct gil_recorder *rec)
{
	return rec->nr_targets;
}

const char *gil_recorder_warning(const struct gil_recorder *rec, size_t i)
{
	return i < rec->nr_targets && rec->targets[i] ? rec->targets[i]->warning : NULL;
}

int gil_recorder_name_thread(struct gil_recorder *rec, pid_t pid, pid_t tid, const char *name)
{
	struct target *t;
	int32_t *g;

	if (!name || !*name || tid <= 0) {
		errno = EINVAL;
		return -1;
	}
	t = target_of(rec, pid);
	if (!t || t->state == T_DONE || !t->pairing || !t->file) {
		errno = ESRCH;
		return -1;
	}
	if (!was_given(t, (int32_t)tid) && t->nr_given < MAX_NAMES) {
		g = realloc(t->given, (t->nr_given + 1) * sizeof(*g));
		if (!g)
			return -1;
		t->given = g;
		t->given[t->nr_given++] = (int32_t)tid;
	}
	return gil_rawfile_thread(t->file, (int32_t)tid, name, gil_clock_now());
}

void gil_recorder_set_reason(struct gil_recorder *rec, const char *reason)
{
	rec->reason = reason;
}

int gil_cleanup_stale(void)
{
	return gil_probes_cleanup_stale();
}
