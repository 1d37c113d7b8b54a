// SPDX-License-Identifier: LGPL-2.1-or-later
/* tracefs uprobe groups: we create, and we remove, only what carries our group name. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event-parse.h>
#include <tracefs.h>

#include "probes.h"
#include "procs.h"
#include "common/util.h"

#define GROUP_PREFIX "gil_"

/*
 * A group is named after the recorder that owns it, in a way that identifies it without doubt
 * for --cleanup: gil_<pid>_<pid namespace inode, hex>_<start time in ticks>. A pid alone says
 * nothing in another pid namespace, and is reused.
 */
struct owner {
	pid_t pid;
	uint64_t ns, start;
};

static int self_owner(struct owner *o)
{
	struct stat st;

	o->pid = getpid();
	if (stat("/proc/self/ns/pid", &st) < 0 || gil_proc_starttime(o->pid, &o->start) < 0)
		return -1;
	o->ns = (uint64_t)st.st_ino;
	return 0;
}

struct gil_probes *gil_probes_alloc(void)
{
	struct gil_probes *p = calloc(1, sizeof(*p));
	struct owner o;
	char *readme;

	if (!p)
		return NULL;
	if (self_owner(&o) < 0) {
		free(p);
		return NULL;
	}
	snprintf(p->group, sizeof(p->group), GROUP_PREFIX "%d_%llx_%llu", (int)o.pid,
		 (unsigned long long)o.ns, (unsigned long long)o.start);
	/* the site number is an immediate fetcharg: tracefs's README lists them where they exist */
	readme = tracefs_instance_file_read(NULL, "README", NULL);
	p->no_site = !readme || !strstr(readme, "\\imm-value");
	free(readme);
	return p;
}

/*
 * The kernel's reason for refusing our probe @event, from tracefs's error_log: only when the
 * last entry is about our group and event (the log is shared by everyone), as its one message.
 */
static char *our_kernel_error(const struct gil_probes *p, const char *event)
{
	char *log = tracefs_error_last(NULL), *msg = NULL, *s, *e, want[128];

	if (!log)
		return NULL;
	snprintf(want, sizeof(want), ":%s/%s ", p->group, event);
	if (strstr(log, want)) {
		s = strstr(log, "error: ");
		if (s) {
			s += 7;
			e = strchr(s, '\n');
			msg = strndup(s, e ? (size_t)(e - s) : strlen(s));
		}
	}
	free(log);
	return msg;
}

/* One fetcharg of @a ("name=FETCH:type"): its name up to *@eq, its type from *@colon (NULL
 * when absent) to *@end. Returns false at the end of the list. */
static bool next_arg(const char **a, const char **eq, const char **colon, const char **end)
{
	const char *c;

	while (**a == ' ')
		(*a)++;
	if (!**a)
		return false;
	*end = strchr(*a, ' ');
	if (!*end)
		*end = *a + strlen(*a);
	*eq = memchr(*a, '=', (size_t)(*end - *a));
	*colon = NULL;
	for (c = *end; c > *a; c--)
		if (c[-1] == ':') {
			*colon = c - 1;
			break;
		}
	if (*colon && (!*eq || *colon < *eq))
		*colon = NULL; /* a ':' inside the name is no type */
	return true;
}

/*
 * What the kernel compares when a probe is appended to an event: each argument's name and type,
 * in order (trace_probe_compare_arg_type), and whether it is a return probe. "r|name:type ..."
 */
static char *signature(bool ret, const char *fetchargs)
{
	const char *a = fetchargs ? fetchargs : "", *eq, *end, *colon;
	char *sig = malloc(strlen(a) + 3), *o;
	size_t n;

	if (!sig)
		return NULL;
	o = sig;
	*o++ = ret ? 'r' : 'p';
	*o++ = '|';
	for (; next_arg(&a, &eq, &colon, &end); a = end) {
		n = (size_t)((eq ? eq : end) - a);
		memcpy(o, a, n);
		o += n;
		if (eq && colon) {
			n = (size_t)(end - colon);
			memcpy(o, colon, n);
			o += n;
		}
		*o++ = ' ';
	}
	*o = '\0';
	return sig;
}

/*
 * Fetchargs with the names and types of @like, each an immediate 0: what lets an entry that
 * reads nothing join the event of entries that read (one event less to unregister at the end).
 * NULL when @like has a type an immediate cannot stand for (a string).
 */
static char *padding(const char *like)
{
	size_t cap = strlen(like) * 2 + 8, n = 0;
	const char *a = like, *end, *eq, *colon;
	char *out = malloc(cap);

	if (!out)
		return NULL;
	out[0] = '\0';
	for (; next_arg(&a, &eq, &colon, &end); a = end) {
		if (!eq || !colon || !colon[1] || !strchr("usxb", colon[1]) || !colon[2] ||
		    !strchr("0123456789", colon[2])) {
			free(out);
			return NULL;
		}
		n += (size_t)snprintf(out + n, cap - n, "%s%.*s=\\0%.*s", n ? " " : "",
				      (int)(eq - a), a, (int)(end - colon), colon);
	}
	return out;
}

/*
 * @like with the reads of @own put in place of its arguments of the same name and type, and
 * an immediate 0 for the others: what lets an entry that reads a few of the arguments of the
 * entries that read (a take_gil entry: which GIL only) join their event. NULL when an argument
 * of @own is not in @like, or when one of @like's cannot be an immediate.
 */
static char *padding_around(const char *like, const char *own)
{
	size_t cap = strlen(like) * 2 + strlen(own) + 8, n = 0, used = 0, nown = 0;
	const char *a, *eq, *colon, *end, *b, *beq, *bcolon, *bend, *take;
	char *out = malloc(cap);

	if (!out)
		return NULL;
	out[0] = '\0';
	for (b = own; next_arg(&b, &beq, &bcolon, &bend); b = bend)
		nown++;
	for (a = like; next_arg(&a, &eq, &colon, &end); a = end) {
		if (!eq || !colon)
			goto fail;
		take = NULL;
		for (b = own; next_arg(&b, &beq, &bcolon, &bend); b = bend)
			if (beq && bcolon && beq - b == eq - a && !memcmp(a, b, (size_t)(eq - a)) &&
			    bend - bcolon == end - colon && !memcmp(colon, bcolon, (size_t)(end - colon)))
				take = b;
		if (take) {
			n += (size_t)snprintf(out + n, cap - n, "%s%.*s", n ? " " : "",
					      (int)(strcspn(take, " ")), take);
			used++;
			continue;
		}
		if (!colon[1] || !strchr("usxb", colon[1]) || !colon[2] ||
		    !strchr("0123456789", colon[2]))
			goto fail;
		n += (size_t)snprintf(out + n, cap - n, "%s%.*s=\\0%.*s", n ? " " : "",
				      (int)(eq - a), a, (int)(end - colon), colon);
	}
	if (used != nown)
		goto fail;
	return out;
fail:
	free(out);
	return NULL;
}

int gil_probes_union(char **acc, const char *args)
{
	const char *a, *eq, *colon, *end, *b, *beq, *bcolon, *bend;
	size_t n = *acc ? strlen(*acc) : 0;
	bool have;
	char *p;

	for (a = args; next_arg(&a, &eq, &colon, &end); a = end) {
		if (!eq || !colon)
			continue;
		have = false;
		for (b = *acc ? *acc : ""; next_arg(&b, &beq, &bcolon, &bend); b = bend)
			have |= beq && beq - b == eq - a && !memcmp(a, b, (size_t)(eq - a));
		if (have)
			continue;
		p = realloc(*acc, n + (size_t)(end - a) + 2);
		if (!p)
			return -1;
		*acc = p;
		n += (size_t)sprintf(p + n, "%s%.*s", n ? " " : "", (int)(end - a), a);
	}
	return 0;
}

/* The event an earlier probe (from @from on) made with this signature, to append to; or -1. */
static int event_to_share(const struct gil_probes *p, size_t from, const char *sig)
{
	size_t i;

	for (i = from; i < p->nr; i++)
		if (p->v[i].created && p->v[i].head && p->v[i].site >= 0 && p->v[i].sig &&
		    !strcmp(p->v[i].sig, sig))
			return (int)i;
	return -1;
}

/*
 * Describe @pr as event @name with @fetchargs (plus its site number when @site) and create it.
 * 0, or -1 with errno and the kernel's reason in @kerr (the caller frees it).
 */
static int try_create(struct gil_probes *p, struct gil_probe *pr, const char *name, size_t idx,
		      const char *fetchargs, bool site, char **kerr)
{
	bool appending = false;
	char *args = NULL;
	size_t i;
	int e;

	*kerr = NULL;
	if (site && asprintf(&args, "%s%sgil_site=\\%zu:u32", fetchargs ? fetchargs : "",
			     fetchargs ? " " : "", idx) < 0)
		return -1;
	if (!site && fetchargs)
		args = strdup(fetchargs);
	if ((site || fetchargs) && !args)
		return -1;
	if (pr->dev)
		tracefs_dynevent_free(pr->dev);
	for (i = 0; i < idx; i++)
		if (p->v[i].created && !strcmp(p->v[i].name, name))
			appending = true;
	pr->dev = pr->ret ? tracefs_uretprobe_alloc(p->group, name, pr->file, pr->offset, args)
			  : tracefs_uprobe_alloc(p->group, name, pr->file, pr->offset, args);
	free(args);
	if (!pr->dev)
		return -1;
	errno = 0;
	if (tracefs_dynevent_create(pr->dev) == 0) {
		snprintf(pr->name, sizeof(pr->name), "%s", name);
		pr->site = site ? (int)idx : -1;
		return 0;
	}
	e = errno;
	*kerr = our_kernel_error(p, name);
	/* nothing when nothing was made; never by the name of an event others were appended to */
	if (!appending)
		tracefs_dynevent_destroy(pr->dev, false);
	tracefs_dynevent_free(pr->dev);
	pr->dev = NULL;
	errno = e;
	return -1;
}

/*
 * Make @pr with @fetchargs (NULL: none): appended to an event of the same signature made since
 * probe @from, or as an event of its own. A kernel that takes no immediate fetcharg (the site
 * number) gets one event per probe.
 */
static int create_probe(struct gil_probes *p, struct gil_probe *pr, size_t idx, size_t from,
			const char *fetchargs, const char *pad_like, char **kerr)
{
	char own[32], *sig, *pad;
	int head;

	*kerr = NULL;
	if (!fetchargs && !pr->ret && pad_like && !p->no_site && (pad = padding(pad_like))) {
		sig = signature(false, pad);
		head = sig ? event_to_share(p, from, sig) : -1;
		free(sig);
		/* first of its kind: its event, padded, is the one the reading entries join */
		snprintf(own, sizeof(own), "entry_%zu", idx);
		if (try_create(p, pr, head >= 0 ? p->v[head].name : own, idx, pad, true, kerr) == 0) {
			free(pr->sig);
			pr->sig = signature(false, pad);
			free(pad);
			pr->head = head < 0;
			pr->padded = true;
			return pr->sig ? 0 : -1;
		}
		free(pad);
		free(*kerr);
		*kerr = NULL;
	}
	sig = signature(pr->ret, fetchargs);
	if (!sig)
		return -1;
	free(pr->sig);
	pr->sig = sig;
	/* an event holds take_gil and drop_gil sites alike: named by kind and first site */
	snprintf(own, sizeof(own), "%s_%zu", pr->ret ? "return" : "entry", idx);
	if (!p->no_site) {
		head = event_to_share(p, from, sig);
		if (head >= 0 && try_create(p, pr, p->v[head].name, idx, fetchargs, true, kerr) == 0) {
			pr->head = false;
			return 0;
		}
		free(*kerr);
		*kerr = NULL;
		pr->head = true;
		return try_create(p, pr, own, idx, fetchargs, true, kerr);
	}
	pr->head = true;
	return try_create(p, pr, own, idx, fetchargs, false, kerr);
}

int gil_probes_add(struct gil_probes *p, const char *file, const char *shown, uint64_t offset,
		   enum gil_func fn, bool ret, const char *fetchargs, const char *pad_like,
		   size_t share_from, char *err, size_t errlen)
{
	struct gil_probe *pr;
	size_t idx;
	char *kerr = NULL, *merged;
	int e, r;

	if (gil_grow(&p->v, &p->cap, p->nr + 1, sizeof(*p->v)) < 0)
		return gil_err(err, errlen, "out of memory");
	idx = p->nr;
	pr = &p->v[idx];
	memset(pr, 0, sizeof(*pr));
	/* the role (entry, exit) is kept by the caller */
	pr->file = strdup(file);
	pr->offset = offset;
	pr->fn = fn;
	pr->ret = ret;
	pr->id = -1;
	pr->site = -1;
	if (!pr->file)
		return gil_err(err, errlen, "out of memory");
	p->nr++; /* counted before creating, so that free sees a half-made probe too */
	/*
	 * an entry that reads some of what the entries of its file read together (@pad_like:
	 * take_gil's which GIL, drop_gil's frame) joins their event, its other fields zeros
	 */
	if (fetchargs && pad_like && !ret && !p->no_site && strcmp(fetchargs, pad_like) &&
	    (merged = padding_around(pad_like, fetchargs))) {
		r = create_probe(p, pr, idx, share_from, merged, NULL, &kerr);
		free(merged);
		if (r == 0 && !(pr->own = strdup(fetchargs)))
			return gil_err(err, errlen, "out of memory");
		if (r == 0) {
			pr->fetches = true;
			pr->created = true;
			pr->padded = true;
			return (int)idx;
		}
		free(kerr);
		kerr = NULL;
	}
	if (fetchargs) {
		if (create_probe(p, pr, idx, share_from, fetchargs, NULL, &kerr) == 0) {
			pr->fetches = true;
			pr->created = true;
			return (int)idx;
		}
		/* a kernel that refuses the fetchargs still gets the probe, without attribution */
		snprintf(pr->fetch_refused, sizeof(pr->fetch_refused), "%s",
			 kerr && *kerr ? kerr : errno ? strerror(errno) : "refused");
		free(kerr);
	}
	if (create_probe(p, pr, idx, share_from, NULL, pad_like, &kerr) < 0) {
		e = errno;
		gil_err(err, errlen, "cannot create uprobe %s:0x%llx: %s%s%s", shown,
			(unsigned long long)offset, e ? strerror(e) : "the kernel refused it",
			kerr ? ": " : "", kerr ? kerr : "");
		free(kerr);
		return -1;
	}
	pr->created = true;
	return (int)idx;
}

int gil_probes_load(struct gil_probes *p, char *err, size_t errlen)
{
	const char *systems[] = { p->group, NULL };
	struct tep_event *ev;
	size_t i;

	if (p->tep)
		tep_free(p->tep);
	p->tep = tracefs_local_events_system(NULL, systems);
	if (!p->tep)
		return gil_err(err, errlen, "cannot read the formats of events %s: %s", p->group,
			       strerror(errno));
	for (i = 0; i < p->nr; i++) {
		/* one the kernel refused (its object is not recorded): no format, no events */
		if (!p->v[i].created)
			continue;
		ev = tep_find_event_by_name(p->tep, p->group, p->v[i].name);
		if (!ev)
			return gil_err(err, errlen, "event %s/%s missing after creation", p->group,
				       p->v[i].name);
		p->v[i].id = ev->id;
	}
	return 0;
}

int gil_probes_destroy(struct gil_probes *p)
{
	int ret = 0;
	size_t i;

	if (!p)
		return 0;
	/* Newest first: the reverse of creation. */
	for (i = p->nr; i-- > 0;) {
		if (!p->v[i].created || !p->v[i].head)
			continue;
		if (tracefs_dynevent_destroy(p->v[i].dev, false) < 0 && errno != ENOENT) {
			ret = -1;
			continue;
		}
		p->v[i].created = false;
	}
	for (i = 0; i < p->nr; i++) {
		size_t h;
		bool gone = true;

		if (!p->v[i].created || p->v[i].head)
			continue;
		for (h = 0; h < p->nr; h++)
			if (p->v[h].created && p->v[h].head && !strcmp(p->v[h].name, p->v[i].name))
				gone = false;
		if (gone)
			p->v[i].created = false; /* it went with its event */
		else
			ret = -1;
	}
	return ret;
}

void gil_probes_free(struct gil_probes *p)
{
	size_t i;

	if (!p)
		return;
	for (i = 0; i < p->nr; i++) {
		tracefs_dynevent_free(p->v[i].dev);
		free(p->v[i].file);
		free(p->v[i].sig);
		free(p->v[i].own);
	}
	if (p->tep)
		tep_free(p->tep);
	free(p->v);
	free(p);
}

/* The owner a group's name gives; false when the name is not one giltrace makes. */
static bool group_owner(const char *group, struct owner *o)
{
	unsigned long long ns, start;
	int pid, n = 0;

	if (!group || sscanf(group, GROUP_PREFIX "%d_%llx_%llu%n", &pid, &ns, &start, &n) != 3 ||
	    group[n] || pid <= 0)
		return false;
	o->pid = pid;
	o->ns = ns;
	o->start = start;
	return true;
}

/* The inode of the kernel's initial pid namespace (PROC_PID_INIT_INO): fixed, never reused. */
#define PID_NS_INIT_INO 0xEFFFFFFCu

/* The pid @p has in its own pid namespace: the last field of NSpid in /proc/P/status. */
static int own_ns_pid(pid_t p, pid_t *out)
{
	char path[64], *s, *line, *end;
	long v = -1;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)p);
	s = gil_read_file(path, 8192, NULL);
	if (!s)
		return -1;
	line = strstr(s, "\nNSpid:");
	if (line)
		for (line += 7; *line && *line != '\n'; line = end) {
			while (*line == '\t' || *line == ' ')
				line++;
			if (!isdigit((unsigned char)*line))
				break;
			v = strtol(line, &end, 10);
		}
	free(s);
	if (v <= 0)
		return -1;
	*out = (pid_t)v;
	return 0;
}

/*
 * Is the recorder of another pid namespace, @o, gone for sure? When we see processes of its
 * namespace, it is ours' descendant and we see them all: none with @o's pid there and its start
 * time means it is gone. When we see none: from the initial pid namespace, which sees every
 * process, the namespace is gone (what a killed test or container leaves); from any other, it
 * may be an ancestor's or a sibling's, and its groups stay.
 */
static bool foreign_owner_gone(const struct owner *o, const struct owner *self)
{
	pid_t *pids = NULL, in_ns;
	bool seen = false, alive = false;
	uint64_t start;
	char path[64];
	struct stat st;
	int nr, i;

	if (o->ns == PID_NS_INIT_INO)
		return false; /* an ancestor of ours */
	nr = gil_proc_list(&pids);
	if (nr < 0)
		return false;
	for (i = 0; i < nr && !alive; i++) {
		snprintf(path, sizeof(path), "/proc/%d/ns/pid", (int)pids[i]);
		if (stat(path, &st) < 0 || (uint64_t)st.st_ino != o->ns)
			continue;
		seen = true;
		/* one of that namespace that cannot be read is not known to be another */
		if (own_ns_pid(pids[i], &in_ns) < 0 || gil_proc_starttime(pids[i], &start) < 0)
			alive = gil_proc_exists(pids[i]);
		else
			alive = in_ns == o->pid && start == o->start;
	}
	free(pids);
	if (alive)
		return false;
	return seen || self->ns == PID_NS_INIT_INO;
}

/*
 * Is the recorder that owns a group gone for sure? In our pid namespace: its pid now names no
 * process, or one that started at another time. In another: foreign_owner_gone.
 */
static bool owner_gone(const struct owner *o, const struct owner *self)
{
	uint64_t start;

	if (o->ns != self->ns)
		return foreign_owner_gone(o, self);
	if (o->pid == self->pid && o->start == self->start)
		return false;
	return gil_proc_starttime(o->pid, &start) < 0 || start != o->start;
}

int gil_probes_cleanup_stale(void)
{
	struct tracefs_dynevent **all, **d;
	char *system = NULL, *event = NULL;
	char removed[64][64];
	int nr_removed = 0, ret = 0, i;
	struct owner self, owner, last = { 0, 0, 0 };
	bool last_gone = false, gone;

	if (self_owner(&self) < 0)
		return -1;
	all = tracefs_dynevent_get_all(TRACEFS_DYNEVENT_UPROBE | TRACEFS_DYNEVENT_URETPROBE, NULL);
	if (!all)
		return errno == ENOENT || errno == 0 ? 0 : -1;
	for (d = all; *d; d++) {
		if (tracefs_dynevent_info(*d, &system, &event, NULL, NULL, NULL) == TRACEFS_DYNEVENT_UNKNOWN)
			continue;
		/* only groups giltrace made, of a recorder that is gone for sure */
		gone = false;
		if (group_owner(system, &owner)) {
			/* a group's events come together: one look at /proc per group */
			if (owner.pid != last.pid || owner.ns != last.ns || owner.start != last.start) {
				last = owner;
				last_gone = owner_gone(&owner, &self);
			}
			gone = last_gone;
		}
		if (gone) {
			/* a probe appended to an event went with it: ENOENT */
			if (tracefs_dynevent_destroy(*d, false) < 0 && errno != ENOENT) {
				ret = -1;
			} else {
				for (i = 0; i < nr_removed; i++)
					if (!strcmp(removed[i], system))
						break;
				if (i == nr_removed && nr_removed < 64)
					snprintf(removed[nr_removed++], sizeof(removed[0]), "%s",
						 system);
			}
		}
		free(system);
		free(event);
		system = event = NULL;
	}
	tracefs_dynevent_list_free(all);
	return ret < 0 ? -1 : nr_removed;
}
