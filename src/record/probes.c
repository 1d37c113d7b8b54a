// SPDX-License-Identifier: LGPL-2.1-or-later
/* tracefs uprobe groups: we create, and we remove, only what carries our group name. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event-parse.h>
#include <tracefs.h>

#include "probes.h"
#include "common/util.h"

#define GROUP_PREFIX "gil_"

struct gil_probes *gil_probes_alloc(void)
{
	struct gil_probes *p = calloc(1, sizeof(*p));

	if (p)
		snprintf(p->group, sizeof(p->group), GROUP_PREFIX "%d", (int)getpid());
	return p;
}

/*
 * The kernel's reason for refusing our probe @event, from tracefs's error_log: only when the
 * last entry is about our group and event (the log is shared by everyone), as its one message.
 */
static char *our_kernel_error(const struct gil_probes *p, const char *event)
{
	char *log = tracefs_error_last(NULL), *msg = NULL, *s, *e, want[80];

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
	size_t cap;

	if (p->nr == p->cap) {
		cap = p->cap ? 2 * p->cap : 8;
		pr = realloc(p->v, cap * sizeof(*pr));
		if (!pr)
			return gil_err(err, errlen, "out of memory");
		p->v = pr;
		p->cap = cap;
	}
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

/* The recorder pid of a group named gil_<pid>, or 0 when the name is not ours. */
static pid_t group_owner(const char *group)
{
	const char *s;
	char *end;
	long v;

	if (!group || strncmp(group, GROUP_PREFIX, strlen(GROUP_PREFIX)))
		return 0;
	s = group + strlen(GROUP_PREFIX);
	v = strtol(s, &end, 10);
	if (end == s || *end || v <= 0)
		return 0;
	return (pid_t)v;
}

int gil_probes_cleanup_stale(void)
{
	struct tracefs_dynevent **all, **d;
	char *system = NULL, *event = NULL;
	char removed[64][32];
	int nr_removed = 0, ret = 0, i;
	pid_t owner;

	all = tracefs_dynevent_get_all(TRACEFS_DYNEVENT_UPROBE | TRACEFS_DYNEVENT_URETPROBE, NULL);
	if (!all)
		return errno == ENOENT || errno == 0 ? 0 : -1;
	for (d = all; *d; d++) {
		if (tracefs_dynevent_info(*d, &system, &event, NULL, NULL, NULL) == TRACEFS_DYNEVENT_UNKNOWN)
			continue;
		owner = group_owner(system);
		/* Only groups of a recorder that no longer runs; kill(0) tells without touching it. */
		if (owner && owner != getpid() && kill(owner, 0) < 0 && errno == ESRCH) {
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
