// SPDX-License-Identifier: LGPL-2.1-or-later
/* Process discovery through /proc. Every function is read-only and tolerates races with exit. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "procs.h"
#include "common/util.h"

void gil_mappings_free(struct gil_mapping *maps, int nr)
{
	int i;

	for (i = 0; i < nr; i++)
		free(maps[i].path);
	free(maps);
}

int gil_proc_exec_mappings(pid_t pid, struct gil_mapping **out, bool *capped)
{
	struct gil_mapping *maps = NULL, *m;
	char path[64], *line = NULL, perms[8];
	unsigned int major, minor;
	uint64_t start, end, pgoff, ino;
	size_t cap = 0, lines = 0;
	int nr = 0, i, pos;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	/*
	 * Bounded: a process chooses what it maps, and each distinct file is opened and read by
	 * root (objects.c). Past the bounds the rest is not looked at, as if not mapped.
	 */
	while (lines++ < GIL_MAPS_MAX_LINES && nr < GIL_MAPS_MAX_FILES &&
	       getline(&line, &cap, f) > 0) {
		pos = 0;
		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %x:%x %" SCNu64 " %n",
			   &start, &end, perms, &pgoff, &major, &minor, &ino, &pos) < 7 || !pos)
			continue;
		if (perms[2] != 'x' || ino == 0 || line[pos] != '/')
			continue;
		line[strcspn(line, "\n")] = '\0';
		for (i = 0; i < nr; i++)
			if (maps[i].ino == ino && maps[i].dev == makedev(major, minor))
				break;
		if (i < nr)
			continue;
		m = realloc(maps, (size_t)(nr + 1) * sizeof(*maps));
		if (!m)
			goto fail;
		maps = m;
		m = &maps[nr];
		m->path = strdup(line + pos);
		if (!m->path)
			goto fail;
		m->start = start;
		m->end = end;
		m->pgoff = pgoff;
		m->dev = makedev(major, minor);
		m->ino = ino;
		nr++;
	}
	*capped = nr >= GIL_MAPS_MAX_FILES || lines > GIL_MAPS_MAX_LINES;
	free(line);
	fclose(f);
	*out = maps;
	return nr;
fail:
	free(line);
	fclose(f);
	gil_mappings_free(maps, nr);
	errno = ENOMEM;
	return -1;
}

static int cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

/* Numeric entries of a /proc directory, sorted. */
static int numeric_dir(const char *dir, pid_t **out)
{
	struct dirent *de;
	pid_t *ids = NULL;
	size_t nr = 0, cap = 0;
	char *end;
	long v;
	DIR *d;

	d = opendir(dir);
	if (!d)
		return -1;
	while ((de = readdir(d))) {
		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		v = strtol(de->d_name, &end, 10);
		if (*end || v <= 0)
			continue;
		if (gil_grow(&ids, &cap, nr + 1, sizeof(*ids)) < 0) {
			free(ids);
			closedir(d);
			return -1;
		}
		ids[nr++] = (pid_t)v;
	}
	closedir(d);
	if (nr)
		qsort(ids, nr, sizeof(*ids), cmp_pid);
	*out = ids;
	return (int)nr;
}

int gil_proc_threads(pid_t pid, pid_t **out)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	return numeric_dir(path, out);
}

int gil_proc_list(pid_t **out)
{
	return numeric_dir("/proc", out);
}

int gil_proc_rank(pid_t pid, const char **source)
{
	static const char *const vars[] = { "RANK", "RANK_ID", "LOCAL_RANK" };
	const char *found[GIL_ARRAY_SIZE(vars)] = { NULL };
	char path[64], *env, *p, *end;
	size_t len, i, n;
	long v;

	if (source)
		*source = NULL;
	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	env = gil_read_file(path, 1 << 20, &len);
	if (!env)
		return 0;
	for (p = env; p < env + len; p += strlen(p) + 1) {
		for (i = 0; i < GIL_ARRAY_SIZE(vars); i++) {
			n = strlen(vars[i]);
			if (!strncmp(p, vars[i], n) && p[n] == '=')
				found[i] = p + n + 1;
		}
	}
	for (i = 0; i < GIL_ARRAY_SIZE(vars); i++) {
		if (!found[i] || !*found[i])
			continue;
		errno = 0;
		v = strtol(found[i], &end, 10);
		if (errno || *end || v < 0 || v > 1000000)
			continue;
		if (source)
			*source = vars[i];
		free(env);
		return (int)v;
	}
	free(env);
	return 0;
}

char *gil_proc_cmdline(pid_t pid)
{
	char path[64], *buf;
	size_t len, i;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	buf = gil_read_file(path, 4096, &len);
	if (!buf)
		return NULL;
	while (len && buf[len - 1] == '\0')
		len--;
	for (i = 0; i < len; i++)
		if (buf[i] == '\0')
			buf[i] = ' ';
	buf[len] = '\0';
	return buf;
}

int gil_proc_comm(pid_t pid, pid_t tid, char *buf, size_t len)
{
	char path[80], *s;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)pid, (int)tid);
	s = gil_read_file(path, 64, NULL);
	if (!s)
		return -1;
	s[strcspn(s, "\n")] = '\0';
	snprintf(buf, len, "%s", s);
	free(s);
	return 0;
}

/*
 * /proc/PID/stat from field 3 on (after the comm, which may hold spaces and parentheses), in
 * @buf; NULL when gone.
 */
static const char *stat_fields(pid_t pid, char *buf, size_t len)
{
	char path[64], *s, *p;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	s = gil_read_file(path, 4096, NULL);
	if (!s)
		return NULL;
	p = strrchr(s, ')');
	snprintf(buf, len, "%s", p && p[1] == ' ' ? p + 2 : "");
	free(s);
	return buf;
}

/* The state letter of /proc/PID/stat, or 0 when gone. */
static char proc_state(pid_t pid)
{
	char buf[1024];
	const char *f = stat_fields(pid, buf, sizeof(buf));

	return f ? f[0] : 0;
}

int gil_proc_starttime(pid_t pid, uint64_t *out)
{
	char buf[1024];
	const char *f = stat_fields(pid, buf, sizeof(buf));
	unsigned long long v;
	int field;

	/* starttime is field 22; f starts at field 3 */
	for (field = 3; f && *f && field < 22; f++)
		if (*f == ' ')
			field++;
	if (!f || field != 22 || sscanf(f, "%llu", &v) != 1)
		return -1;
	*out = v;
	return 0;
}

bool gil_proc_exists(pid_t pid)
{
	char st = proc_state(pid);

	return st && st != 'Z' && st != 'X';
}

bool gil_proc_is_kernel_thread(pid_t pid)
{
	char path[64], *s;
	size_t len = 0;

	/* Kernel threads have an empty cmdline and no exe link. */
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	s = gil_read_file(path, 16, &len);
	free(s);
	return !s || len == 0;
}

int gil_proc_accelerator(pid_t pid, char *buf, size_t len)
{
	static const char *const devices[] = { "/dev/davinci", "/dev/nvidia", "/dev/accel/",
					       "/dev/kfd" };
	char dir[64], link[PATH_MAX + 32], target[PATH_MAX];
	struct dirent *de;
	size_t i;
	ssize_t n;
	DIR *d;

	snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pid);
	d = opendir(dir);
	if (!d)
		return -1;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(link, sizeof(link), "%s/%s", dir, de->d_name);
		n = readlink(link, target, sizeof(target) - 1);
		if (n <= 0 || target[0] != '/')
			continue;
		target[n] = '\0';
		for (i = 0; i < GIL_ARRAY_SIZE(devices); i++) {
			if (!strncmp(target, devices[i], strlen(devices[i]))) {
				snprintf(buf, len, "%s", target);
				closedir(d);
				return 1;
			}
		}
	}
	closedir(d);
	return 0;
}
