// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * minreader: the least a per-event recorder can do, as a floor for gil-record's benchmarks.
 *
 * It opens the tracepoints of one tracefs group exactly as gil-record opens its own (per task,
 * on every CPU, inherited, one mmap'd ring per CPU shared through PERF_EVENT_IOC_SET_OUTPUT,
 * sample_type TID|TIME|RAW on CLOCK_MONOTONIC_RAW, woken at half a ring), then only walks the
 * record headers to count samples and lost events and hands the space back. What it costs the
 * traced program is what the kernel charges for writing one sample per probe hit; what
 * gil-record costs above it is the recorder's own doing.
 *
 * Usage: minreader -g GROUP -p PID[,PID...] [-m PAGES]
 * Prints "recording N events" on stderr once enabled; on SIGINT/SIGTERM prints
 * "samples N lost N kernel_lost N" on stdout and exits: lost is the sum of the PERF_RECORD_LOST
 * records read, kernel_lost the events' own count (PERF_FORMAT_LOST, Linux 6.0+; 0 before),
 * which also holds losses the kernel had no room left to report before the events stopped.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MAX_IDS 64
#define MAX_CPUS 1024

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int read_ids(const char *group, int *ids)
{
	char path[512], idpath[1024];
	struct dirent *de;
	int n = 0;
	DIR *d;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/kernel/tracing/events/%s", group);
	d = opendir(path);
	if (!d)
		return -1;
	while ((de = readdir(d)) && n < MAX_IDS) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(idpath, sizeof(idpath), "%s/%s/id", path, de->d_name);
		f = fopen(idpath, "r");
		if (!f)
			continue;
		if (fscanf(f, "%d", &ids[n]) == 1)
			n++;
		fclose(f);
	}
	closedir(d);
	return n;
}

int main(int argc, char **argv)
{
	static int ring_fd[MAX_CPUS];
	static void *base[MAX_CPUS];
	const char *group = NULL;
	char *pids = NULL, *tok, *save, path[64];
	long psz = sysconf(_SC_PAGESIZE);
	int ncpu = (int)sysconf(_SC_NPROCESSORS_CONF), pages = 1024, ids[MAX_IDS], nid, c, cpu, k;
	int *fds = NULL, nfd = 0, capfd = 0, fd, last;
	uint64_t samples = 0, lost = 0, kernel_lost = 0, size, head, tail, val[2];
	struct perf_event_attr a;
	struct dirent *de;
	DIR *d;

	while ((c = getopt(argc, argv, "g:p:m:")) != -1) {
		if (c == 'g')
			group = optarg;
		else if (c == 'p')
			pids = optarg;
		else if (c == 'm')
			pages = atoi(optarg);
		else
			return 2;
	}
	if (!group || !pids || pages < 1 || (pages & (pages - 1)) || ncpu > MAX_CPUS) {
		fprintf(stderr, "usage: minreader -g GROUP -p PID[,PID...] [-m PAGES]\n");
		return 2;
	}
	nid = read_ids(group, ids);
	if (nid <= 0) {
		fprintf(stderr, "minreader: no events in group %s\n", group);
		return 1;
	}
	size = (uint64_t)pages * (uint64_t)psz;
	for (cpu = 0; cpu < ncpu; cpu++)
		ring_fd[cpu] = -1;
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_TRACEPOINT;
	a.sample_period = 1;
	a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_RAW;
	a.disabled = 1;
	a.inherit = 1;
	a.sample_id_all = 1;
	a.use_clockid = 1;
	a.clockid = CLOCK_MONOTONIC_RAW;
	a.watermark = 1;
	a.wakeup_watermark = (uint32_t)(size / 2);
	a.read_format = PERF_FORMAT_LOST;
	for (tok = strtok_r(pids, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		snprintf(path, sizeof(path), "/proc/%s/task", tok);
		d = opendir(path);
		if (!d) {
			perror(path);
			return 1;
		}
		while ((de = readdir(d))) {
			if (de->d_name[0] == '.')
				continue;
			for (k = 0; k < nid; k++) {
				for (cpu = 0; cpu < ncpu; cpu++) {
					a.config = (uint64_t)ids[k];
					fd = (int)syscall(SYS_perf_event_open, &a, atoi(de->d_name), cpu,
							  -1, PERF_FLAG_FD_CLOEXEC);
					if (fd < 0 && errno == EINVAL && a.read_format) {
						a.read_format = 0; /* before Linux 6.0 */
						fd = (int)syscall(SYS_perf_event_open, &a,
								  atoi(de->d_name), cpu, -1,
								  PERF_FLAG_FD_CLOEXEC);
					}
					if (fd < 0 && errno == ENODEV)
						continue; /* offline CPU */
					if (fd < 0) {
						perror("perf_event_open");
						return 1;
					}
					if (nfd == capfd) {
						capfd = capfd ? 2 * capfd : 256;
						fds = realloc(fds, (size_t)capfd * sizeof(*fds));
						if (!fds)
							return 1;
					}
					fds[nfd++] = fd;
					if (ring_fd[cpu] < 0) {
						ring_fd[cpu] = fd;
						base[cpu] = mmap(NULL, (size_t)(pages + 1) * (size_t)psz,
								 PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
						if (base[cpu] == MAP_FAILED) {
							perror("mmap");
							return 1;
						}
					} else if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, ring_fd[cpu]) < 0) {
						perror("PERF_EVENT_IOC_SET_OUTPUT");
						return 1;
					}
				}
			}
		}
		closedir(d);
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	for (k = 0; k < nfd; k++)
		ioctl(fds[k], PERF_EVENT_IOC_ENABLE, 0);
	fprintf(stderr, "recording %d events\n", nfd);
	do {
		last = stop;
		if (!last)
			poll(NULL, 0, 50); /* gil-record's round */
		for (cpu = 0; cpu < ncpu; cpu++) {
			struct perf_event_mmap_page *m = base[cpu];
			const char *data = (const char *)base[cpu] + psz;
			const struct perf_event_header *h;
			uint64_t rec[4];

			if (ring_fd[cpu] < 0)
				continue;
			head = __atomic_load_n(&m->data_head, __ATOMIC_ACQUIRE);
			tail = m->data_tail;
			while (tail < head) {
				h = (const void *)(data + (tail & (size - 1)));
				if (h->type == PERF_RECORD_SAMPLE) {
					samples++;
				} else if (h->type == PERF_RECORD_LOST) {
					/* { header; u64 id; u64 lost } may wrap: copy it out */
					for (k = 0; k < 3; k++)
						rec[k] = *(const uint64_t *)(data +
							((tail + 8 * (uint64_t)k) & (size - 1)));
					lost += rec[2];
				}
				tail += h->size;
			}
			__atomic_store_n(&m->data_tail, tail, __ATOMIC_RELEASE);
		}
	} while (!last);
	for (k = 0; k < nfd; k++) {
		ioctl(fds[k], PERF_EVENT_IOC_DISABLE, 0);
		if (a.read_format && read(fds[k], val, sizeof(val)) == (ssize_t)sizeof(val))
			kernel_lost += val[1];
	}
	printf("samples %llu lost %llu kernel_lost %llu\n", (unsigned long long)samples,
	       (unsigned long long)lost, (unsigned long long)kernel_lost);
	return 0;
}
