// SPDX-License-Identifier: LGPL-2.1-or-later
/* tracefs uprobe groups: we create, and we remove, only what carries our group name. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

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

	if (!p)
		return NULL;
	if (self_owner(&o) < 0) {
		free(p);
		return NULL;
	}
	snprintf(p->group, sizeof(p->group), GROUP_PREFIX "%d_%llx_%llu", (int)o.pid,
		 (unsigned long long)o.ns, (unsigned long long)o.start);
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

int gil_probes_add(struct gil_probes *p, const char *file, const char *shown, uint64_t offset,
		   enum gil_func fn, bool ret, const char *fetchargs, char *err, size_t errlen)
{
	struct gil_probe *pr;
	char *kerr;

	if (gil_grow(&p->v, &p->cap, p->nr + 1, sizeof(*p->v)) < 0)
		return gil_err(err, errlen, "out of memory");
	pr = &p->v[p->nr];
	memset(pr, 0, sizeof(*pr));
	snprintf(pr->name, sizeof(pr->name), "%s_%zu%s", fn == GIL_FN_TAKE ? "take" : "drop", p->nr,
		 ret ? "_ret" : "");
	/* probe names are per group; the role (entry, exit) is kept by the caller */
	pr->file = strdup(file);
	pr->offset = offset;
	pr->fn = fn;
	pr->ret = ret;
	pr->id = -1;
	if (!pr->file)
		return gil_err(err, errlen, "out of memory");
	pr->fetches = fetchargs != NULL;
	pr->dev = ret ? tracefs_uretprobe_alloc(p->group, pr->name, file, offset, fetchargs)
		      : tracefs_uprobe_alloc(p->group, pr->name, file, offset, fetchargs);
	if (!pr->dev) {
		free(pr->file);
		return gil_err(err, errlen, "cannot describe probe %s/%s: %s", p->group, pr->name,
			       strerror(errno));
	}
	p->nr++; /* counted before creating, so that destroy sees a half-made probe too */
	errno = 0;
	if (fetchargs && tracefs_dynevent_create(pr->dev) < 0) {
		/* a kernel that refuses the fetchargs still gets the probe, without attribution */
		kerr = tracefs_error_last(NULL);
		snprintf(pr->fetch_refused, sizeof(pr->fetch_refused), "%s",
			 kerr && *kerr ? kerr : errno ? strerror(errno) : "refused");
		free(kerr);
		tracefs_dynevent_destroy(pr->dev, false);
		tracefs_dynevent_free(pr->dev);
		pr->fetches = false;
		pr->dev = ret ? tracefs_uretprobe_alloc(p->group, pr->name, file, offset, NULL)
			      : tracefs_uprobe_alloc(p->group, pr->name, file, offset, NULL);
		if (!pr->dev) {
			p->nr--;
			free(pr->file);
			return gil_err(err, errlen, "cannot describe probe %s/%s: %s", p->group,
				       pr->name, strerror(errno));
		}
	} else if (fetchargs) {
		pr->created = true;
		return (int)(p->nr - 1);
	}
	errno = 0;
	if (tracefs_dynevent_create(pr->dev) < 0) {
		int e = errno;

		kerr = our_kernel_error(p, pr->name);
		gil_err(err, errlen, "cannot create uprobe %s:0x%llx: %s%s%s", shown,
			(unsigned long long)offset, e ? strerror(e) : "the kernel refused it",
			kerr ? ": " : "", kerr ? kerr : "");
		free(kerr);
		return -1;
	}
	pr->created = true;
	return (int)(p->nr - 1);
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
		if (!p->v[i].created)
			continue;
		if (tracefs_dynevent_destroy(p->v[i].dev, false) < 0 && errno != ENOENT) {
			ret = -1;
			continue;
		}
		p->v[i].created = false;
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

/*
 * Is the recorder that owns a group gone for sure? Only when it lived in our pid namespace
 * and its pid now names no process, or one that started at another time. A recorder of
 * another pid namespace cannot be told from here: its group stays.
 */
static bool owner_gone(const struct owner *o, const struct owner *self)
{
	uint64_t start;

	if (o->ns != self->ns || (o->pid == self->pid && o->start == self->start))
		return false;
	return gil_proc_starttime(o->pid, &start) < 0 || start != o->start;
}

int gil_probes_cleanup_stale(void)
{
	struct tracefs_dynevent **all, **d;
	char *system = NULL, *event = NULL;
	char removed[64][64];
	int nr_removed = 0, ret = 0, i;
	struct owner self, owner;

	if (self_owner(&self) < 0)
		return -1;
	all = tracefs_dynevent_get_all(TRACEFS_DYNEVENT_UPROBE | TRACEFS_DYNEVENT_URETPROBE, NULL);
	if (!all)
		return errno == ENOENT || errno == 0 ? 0 : -1;
	for (d = all; *d; d++) {
		if (tracefs_dynevent_info(*d, &system, &event, NULL, NULL, NULL) == TRACEFS_DYNEVENT_UNKNOWN)
			continue;
		/* only groups giltrace made, of a recorder that is gone for sure */
		if (group_owner(system, &owner) && owner_gone(&owner, &self)) {
			if (tracefs_dynevent_destroy(*d, false) < 0) {
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
