// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * LD_PRELOAD fault injection for gil-record's setup steps. GIL_FAULT=STEP:N makes the Nth call
 * of STEP fail (STEP:N+ the Nth and every later one, STEP:N-M the Nth to the Mth): perf_event_open, ring_mmap (a shared mapping of an fd), set_output (the
 * PERF_EVENT_IOC_SET_OUTPUT ioctl), enable (PERF_EVENT_IOC_ENABLE), probe_write (a uprobe
 * definition written to uprobe_events), fetch_write (one with attribution's fetchargs, the
 * frame's or which GIL's, as a kernel that refuses them would), output_create (creating a .json file), and vanish: the
 * first perf_event_open or pidfd_open on process GIL_FAULT_PID kills that process (it exits
 * while being attached) and fails.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static int hit(const char *step)
{
	static int count;
	const char *spec = getenv("GIL_FAULT"), *colon;
	int nth;
	size_t n;

	if (!spec)
		return 0;
	colon = strchr(spec, ':');
	n = colon ? (size_t)(colon - spec) : strlen(spec);
	if (strlen(step) != n || strncmp(spec, step, n))
		return 0;
	nth = colon ? atoi(colon + 1) : 1;
	++count;
	if (colon && strchr(colon, '-'))
		return count >= nth && count <= atoi(strchr(colon, '-') + 1);
	return colon && strchr(colon, '+') ? count >= nth : count == nth;
}

long syscall(long nr, ...)
{
	static long (*real)(long, ...);
	long a[6];
	va_list ap;
	int i;

	va_start(ap, nr);
	for (i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (nr == SYS_perf_event_open && hit("perf_event_open")) {
		errno = EMFILE;
		return -1;
	}
	/* the pid is perf_event_open's second argument, pidfd_open's first */
	if ((nr == SYS_perf_event_open || nr == SYS_pidfd_open) && getenv("GIL_FAULT_PID") &&
	    a[nr == SYS_perf_event_open] == atol(getenv("GIL_FAULT_PID")) && hit("vanish")) {
		kill((pid_t)atol(getenv("GIL_FAULT_PID")), SIGKILL);
		usleep(200000); /* until it is a zombie */
		errno = EMFILE;
		return -1;
	}
	if (!real)
		real = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
	return real(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	static void *(*real)(void *, size_t, int, int, int, off_t);

	if (fd >= 0 && (flags & MAP_SHARED) && hit("ring_mmap")) {
		errno = ENOMEM;
		return MAP_FAILED;
	}
	if (!real)
		real = (void *(*)(void *, size_t, int, int, int, off_t))dlsym(RTLD_NEXT, "mmap");
	return real(addr, len, prot, flags, fd, off);
}

int ioctl(int fd, unsigned long req, ...)
{
	static int (*real)(int, unsigned long, ...);
	va_list ap;
	void *arg;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	if ((req == PERF_EVENT_IOC_SET_OUTPUT && hit("set_output")) ||
	    (req == PERF_EVENT_IOC_ENABLE && hit("enable"))) {
		errno = EINVAL;
		return -1;
	}
	if (!real)
		real = (int (*)(int, unsigned long, ...))dlsym(RTLD_NEXT, "ioctl");
	return real(fd, req, arg);
}

ssize_t write(int fd, const void *buf, size_t n)
{
	static ssize_t (*real)(int, const void *, size_t);
	char link[64], path[256];
	ssize_t len;

	if (n > 2 && (!memcmp(buf, "p:", 2) || !memcmp(buf, "r:", 2))) {
		snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
		len = readlink(link, path, sizeof(path) - 1);
		if (len > 0) {
			path[len] = '\0';
			if ((strstr(path, "uprobe_events") || strstr(path, "dynamic_events")) &&
			    (hit("probe_write") ||
			     ((memmem(buf, n, " gil_fr=", 8) || memmem(buf, n, " gil_ip=", 8)) &&
			      hit("fetch_write")))) {
				errno = EINVAL;
				return -1;
			}
		}
	}
	if (!real)
		real = (ssize_t (*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
	return real(fd, buf, n);
}

int openat(int dirfd, const char *path, int flags, ...)
{
	static int (*real)(int, const char *, int, ...);
	size_t n = strlen(path);
	mode_t mode = 0;
	va_list ap;

	if (flags & O_CREAT) {
		va_start(ap, flags);
		mode = (mode_t)va_arg(ap, int);
		va_end(ap);
	}
	if ((flags & O_CREAT) && n > 5 && !strcmp(path + n - 5, ".json") && hit("output_create")) {
		errno = EACCES;
		return -1;
	}
	if (!real)
		real = (int (*)(int, const char *, int, ...))dlsym(RTLD_NEXT, "openat");
	return real(dirfd, path, flags, mode);
}
