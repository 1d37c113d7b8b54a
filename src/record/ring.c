// SPDX-License-Identifier: LGPL-2.1-or-later
/* perf_event_open and the mmap'd rings: the only file that knows the ring protocol. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "clock.h"
#include "ring.h"
#include "common/util.h"

struct ring {
	int fd; /* a dup of the first event opened on this CPU; owns the mmap */
	void *base; /* metadata page, then data */
	char *data;
	uint64_t size; /* data bytes, power of two */
	char *tmp; /* a record that wraps around the end is copied here */
	size_t tmp_cap;
};

struct gil_rings {
	int nr_cpus;
	bool no_lost_format; /* kernel before 6.0: no PERF_FORMAT_LOST */
	bool no_remove_on_exec; /* kernel before 5.13: events follow a task through exec */
	size_t pages;
	size_t page_size;
	struct ring *r;
};

struct gil_rings *gil_rings_alloc(size_t pages)
{
	struct gil_rings *rs;
	long n = sysconf(_SC_NPROCESSORS_CONF);
	int i;

	if (n <= 0)
		n = 1;
	if (!pages || (pages & (pages - 1))) {
		errno = EINVAL;
		return NULL;
	}
	rs = calloc(1, sizeof(*rs));
	if (!rs)
		return NULL;
	rs->nr_cpus = (int)n;
	rs->pages = pages;
	rs->page_size = (size_t)sysconf(_SC_PAGESIZE);
	rs->r = calloc((size_t)n, sizeof(*rs->r));
	if (!rs->r) {
		free(rs);
		return NULL;
	}
	for (i = 0; i < n; i++)
		rs->r[i].fd = -1;
	return rs;
}

int gil_rings_nr_cpus(const struct gil_rings *rs)
{
	return rs->nr_cpus;
}

static int map_ring(struct gil_rings *rs, struct ring *r, int fd)
{
	size_t len = (rs->pages + 1) * rs->page_size;

	r->fd = dup(fd);
	if (r->fd < 0)
		return -1;
	r->base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, 0);
	if (r->base == MAP_FAILED) {
		r->base = NULL;
		close(r->fd);
		r->fd = -1;
		return -1;
	}
	r->data = (char *)r->base + rs->page_size;
	r->size = rs->pages * rs->page_size;
	return 0;
}

bool gil_rings_follow_exec(const struct gil_rings *rs)
{
	return rs->no_remove_on_exec;
}

int gil_rings_open(struct gil_rings *rs, int id, pid_t tid, unsigned flags, int *fds, char *err,
		   size_t errlen)
{
	bool task = flags & GIL_RING_TASK, after_exec = flags & GIL_RING_AFTER_EXEC;
	struct perf_event_attr attr;
	int cpu, fd, n = 0, saved;
	const char *what = "open";

	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_TRACEPOINT;
	attr.config = (uint64_t)id;
	attr.sample_period = 1;
	attr.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_RAW;
	attr.disabled = 1;
	attr.inherit = 1;
	attr.sample_id_all = 1;
	attr.use_clockid = 1;
	attr.clockid = GIL_CLOCK;
	attr.task = task;
	attr.comm = task;
	attr.watermark = 1;
	attr.wakeup_watermark = (uint32_t)(rs->pages * rs->page_size / 2);
	/* The events' own lost count: it also holds losses the ring had no room to report. */
	attr.read_format = rs->no_lost_format ? 0 : PERF_FORMAT_LOST;
	/*
	 * A task that execs leaves its events behind (Linux 5.13+), and the GIL_RING_AFTER_EXEC
	 * ones take over from there. Older kernels keep the events. Either way the probes are
	 * pinned to the inode read: a new image is recorded only where it maps that very file,
	 * at the places proven in it, and nothing of any other program is probed.
	 */
	attr.remove_on_exec = !rs->no_remove_on_exec;
	if (after_exec) {
		if (rs->no_remove_on_exec || tid == -1) {
			gil_err(err, errlen, "no events for after exec: %s",
				tid == -1 ? "file-wide events see every image" :
					    "this kernel keeps events across exec");
			errno = EOPNOTSUPP;
			return -1;
		}
		attr.enable_on_exec = 1;
		attr.remove_on_exec = 0;
	}
	if (tid == -1) {
		/* every process on the CPU (all-process mode, the probes' file filters them) */
		attr.inherit = 0;
		attr.remove_on_exec = 0;
	}

	for (cpu = 0; cpu < rs->nr_cpus; cpu++) {
		fd = (int)syscall(SYS_perf_event_open, &attr, tid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
		if (fd < 0 && errno == EINVAL && attr.remove_on_exec && tid != -1 && !after_exec) {
			rs->no_remove_on_exec = true;
			attr.remove_on_exec = 0;
			fd = (int)syscall(SYS_perf_event_open, &attr, tid, cpu, -1,
					  PERF_FLAG_FD_CLOEXEC);
		}
		if (fd < 0 && errno == EINVAL && attr.read_format) {
			rs->no_lost_format = true;
			attr.read_format = 0;
			fd = (int)syscall(SYS_perf_event_open, &attr, tid, cpu, -1,
					  PERF_FLAG_FD_CLOEXEC);
		}
		if (fd < 0) {
			/* An offline CPU: nothing runs there, nothing to record. */
			if (errno == ENODEV || errno == EINVAL) {
				if (errno == EINVAL && cpu == 0)
					goto fail;
				fds[n++] = -1;
				continue;
			}
			goto fail;
		}
		fds[n++] = fd;
		if (rs->r[cpu].fd < 0) {
			what = "map";
			if (map_ring(rs, &rs->r[cpu], fd) < 0)
				goto fail;
		} else if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, rs->r[cpu].fd) < 0) {
			what = "share";
			goto fail;
		}
	}
	return n;
fail:
	saved = errno;
	if (!strcmp(what, "map"))
		gil_err(err, errlen, "cannot map the ring buffer of CPU %d (%zu pages): %s (try a smaller --mmap-pages)",
			cpu, rs->pages, strerror(saved));
	else if (!strcmp(what, "share"))
		gil_err(err, errlen, "cannot share the ring buffer of CPU %d between events: %s", cpu,
			strerror(saved));
	else if (saved == EMFILE || saved == ENFILE)
		gil_err(err, errlen, "too many open files opening perf events for thread %d: raise ulimit -n",
			(int)tid);
	else
		gil_err(err, errlen, "perf_event_open(tracepoint %d, thread %d, CPU %d): %s", id,
			(int)tid, cpu, strerror(saved));
	while (n-- > 0)
		if (fds[n] >= 0)
			close(fds[n]);
	errno = saved;
	return -1;
}

int gil_rings_guard(pid_t tid, enum gil_guard_kind *kind)
{
	struct perf_event_attr attr;
	int fd;

	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_DUMMY;
	attr.disabled = 1;
	attr.exclude_kernel = 1;
	attr.exclude_hv = 1;
	/*
	 * A fork or a new thread copies a context whose events are all inherited as a clone of its
	 * parent's, and the kernel swaps clones between tasks at a context switch instead of
	 * scheduling their events: each event then sits in another task's context while its
	 * target, which the uprobe filter matches by mm, stays the task it was made for. When a
	 * task exits, the events in its context close; one whose target lives on takes that
	 * target's breakpoints out of its memory (trace_uprobe_filter_remove, uprobe_apply), and
	 * that process records nothing more, silently. Threads sharing one mm are no safer: the
	 * exiting thread's mm is gone by then, so the events left claim no memory at all. A torch
	 * DataLoader worker starts a thread that exits at once, and lost everything after it.
	 *
	 * Since Linux 6.12 a context holding an event that is inherited and samples PERF_SAMPLE_READ
	 * (with PERF_SAMPLE_TID, which it requires) is never swapped (nr_no_switch_fast), clone or
	 * not, and every descendant inherits it: threads, forks, what they exec, from their first
	 * instruction.
	 */
	attr.inherit = 1;
	attr.sample_type = PERF_SAMPLE_READ | PERF_SAMPLE_TID;
	*kind = GIL_GUARD_NO_SWAP;
	fd = (int)syscall(SYS_perf_event_open, &attr, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd >= 0 || errno != EINVAL)
		return fd;
	/*
	 * Older kernels: threads inherit it (5.13+) and forks do not, so a fork's context is a
	 * plain copy, never swapped; its own threads' contexts still are clones of it.
	 */
	attr.sample_type = 0;
	attr.inherit_thread = 1;
	*kind = GIL_GUARD_FORKS;
	fd = (int)syscall(SYS_perf_event_open, &attr, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd >= 0 || errno != EINVAL)
		return fd;
	/* before 5.13: on this thread only; its new threads and forks are plain copies */
	attr.inherit = 0;
	attr.inherit_thread = 0;
	*kind = GIL_GUARD_TASK;
	return (int)syscall(SYS_perf_event_open, &attr, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

static long drain_one(struct ring *r, int cpu, gil_ring_fn fn, void *ctx)
{
	struct perf_event_mmap_page *meta = r->base;
	uint64_t head, tail, off, mask = r->size - 1;
	struct perf_event_header *h;
	long n = 0;
	size_t size, first;
	char *p;

	head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
	tail = meta->data_tail;
	while (tail < head) {
		off = tail & mask;
		h = (struct perf_event_header *)(r->data + off);
		/* The header itself may wrap; records are 8-byte aligned so it never splits. */
		size = h->size;
		if (!size || size > r->size)
			break; /* corrupt: drop the rest of this round rather than loop */
		if (off + size > r->size) {
			if (size > r->tmp_cap) {
				p = realloc(r->tmp, size);
				if (!p)
					break;
				r->tmp = p;
				r->tmp_cap = size;
			}
			first = r->size - off;
			memcpy(r->tmp, r->data + off, first);
			memcpy(r->tmp + first, r->data, size - first);
			h = (struct perf_event_header *)r->tmp;
		}
		if (fn(ctx, cpu, h) < 0) {
			__atomic_store_n(&meta->data_tail, tail + size, __ATOMIC_RELEASE);
			return -1;
		}
		tail += size;
		n++;
	}
	__atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
	return n;
}

long gil_rings_drain(struct gil_rings *rs, gil_ring_fn fn, void *ctx)
{
	long total = 0, n;
	int cpu;

	for (cpu = 0; cpu < rs->nr_cpus; cpu++) {
		if (!rs->r[cpu].base)
			continue;
		n = drain_one(&rs->r[cpu], cpu, fn, ctx);
		if (n < 0)
			return -1;
		total += n;
	}
	return total;
}

int gil_rings_fd(const struct gil_rings *rs, int cpu)
{
	return cpu >= 0 && cpu < rs->nr_cpus ? rs->r[cpu].fd : -1;
}

int gil_rings_read_lost(const struct gil_rings *rs, int fd, uint64_t *lost)
{
	uint64_t v[2];

	if (rs->no_lost_format || read(fd, v, sizeof(v)) != (ssize_t)sizeof(v))
		return -1;
	*lost = v[1];
	return 0;
}

void gil_rings_free(struct gil_rings *rs)
{
	int cpu;

	if (!rs)
		return;
	for (cpu = 0; cpu < rs->nr_cpus; cpu++) {
		if (rs->r[cpu].base)
			munmap(rs->r[cpu].base, (rs->pages + 1) * rs->page_size);
		if (rs->r[cpu].fd >= 0)
			close(rs->r[cpu].fd);
		free(rs->r[cpu].tmp);
	}
	free(rs->r);
	free(rs);
}
