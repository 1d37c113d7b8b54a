/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * perf rings: per-task tracepoint events opened on every CPU (as `perf record -p` does, so
 * bystanders that map the same library pay nothing), one mmap'd ring per CPU shared through
 * PERF_EVENT_IOC_SET_OUTPUT, drained by the recorder's loop. Lost records are counted.
 */
#ifndef GIL_RING_H
#define GIL_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <linux/perf_event.h>

struct gil_rings;

/* Called for each record, in ring order; @rec points at the header (contiguous copy). */
typedef int (*gil_ring_fn)(void *ctx, int cpu, const struct perf_event_header *rec);

/** gil_rings_alloc - rings of @pages data pages (power of two) per CPU; nothing opened yet. */
struct gil_rings *gil_rings_alloc(size_t pages);

/* What gil_rings_open() opens, besides the tracepoint's samples. */
enum gil_ring_flags {
	GIL_RING_TASK = 1 << 0, /* fork, exit and comm records too (once per task is enough) */
	/*
	 * Events that stay disabled until their task execs, then record its new image
	 * (enable_on_exec), kept across exec; the default ones leave a task at exec
	 * (remove_on_exec). Refused (-1, EOPNOTSUPP) where the kernel keeps every event across
	 * exec (before 5.13: gil_rings_follow_exec()).
	 */
	GIL_RING_AFTER_EXEC = 1 << 1,
};

/**
 * gil_rings_open - open tracepoint @id for task @tid on every CPU (disabled, inherited by
 * threads and processes created later, timestamps on the recording clock), as @flags (enum
 * gil_ring_flags) say. Writes nr_cpus fds into @fds (caller closes them). Returns the number
 * of fds, or -1 with a reason in @err.
 */
int gil_rings_open(struct gil_rings *rs, int id, pid_t tid, unsigned flags, int *fds, char *err,
		   size_t errlen);

/**
 * gil_rings_follow_exec - whether a task's default events follow it through exec (kernels
 * before 5.13, known after the first gil_rings_open() of a task): then no GIL_RING_AFTER_EXEC
 * events are needed, nor opened.
 */
bool gil_rings_follow_exec(const struct gil_rings *rs);

int gil_rings_nr_cpus(const struct gil_rings *rs);

/* What a guard (gil_rings_guard) keeps from being swapped, by what the kernel allows. */
enum gil_guard_kind {
	GIL_GUARD_TASK, /* before 5.13: the threads that hold one */
	GIL_GUARD_FORKS, /* 5.13+: forks' contexts, not the contexts of their new threads */
	GIL_GUARD_NO_SWAP, /* Linux 6.12+: every context of every descendant */
};

/**
 * gil_rings_guard - a do-nothing event on task @tid that keeps the kernel from swapping the
 * contexts of the task and of what it starts at a context switch, which silently takes a
 * live process's breakpoints away (doc/architecture.md, "forked children"). *@kind says how
 * far it reaches on this kernel. Returns the fd, or -1 with errno.
 */
int gil_rings_guard(pid_t tid, enum gil_guard_kind *kind);

/** gil_rings_drain - hand every record waiting in the rings to @fn. Returns records, or -1. */
long gil_rings_drain(struct gil_rings *rs, gil_ring_fn fn, void *ctx);

/** gil_rings_fd - the fd that owns @cpu's ring (poll it: POLLIN at half full), or -1. */
int gil_rings_fd(const struct gil_rings *rs, int cpu);

/**
 * gil_rings_read_lost - the samples the kernel dropped for event @fd (PERF_FORMAT_LOST), including
 * those it had no room left to report in a PERF_RECORD_LOST. Returns 0, or -1 (kernel < 6.0).
 */
int gil_rings_read_lost(const struct gil_rings *rs, int fd, uint64_t *lost);

/** gil_rings_free - unmap the rings and close their fds. */
void gil_rings_free(struct gil_rings *rs);

/* Layout of the records we ask for (sample_type TID|TIME|RAW, sample_id_all). */
struct gil_sample_head {
	struct perf_event_header h;
	uint32_t pid, tid;
	uint64_t time;
	uint32_t raw_size;
	/* raw data follows */
} __attribute__((packed));

struct gil_sample_id {
	uint32_t pid, tid;
	uint64_t time;
};

#endif /* GIL_RING_H */
