/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* /proc: target processes, their mappings, threads, rank and names. */
#ifndef GIL_PROCS_H
#define GIL_PROCS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* A file-backed executable mapping of a process. */
struct gil_mapping {
	char *path; /* as /proc/PID/maps shows it */
	uint64_t start, end, pgoff;
	uint64_t dev; /* makedev(major, minor) */
	uint64_t ino;
};

#define GIL_MAPS_MAX_LINES (1 << 20) /* lines of /proc/PID/maps read (vm.max_map_count: 65530) */
#define GIL_MAPS_MAX_FILES 1024 /* distinct executable files (a torch job maps a few hundred) */

/**
 * gil_proc_exec_mappings - the distinct file-backed executable mappings of @pid (one entry per
 * file: the first r-x mapping of each), at most GIL_MAPS_MAX_FILES from the first
 * GIL_MAPS_MAX_LINES lines (*@capped: a bound was reached). Returns the count, or -1 with errno.
 * Free with gil_mappings_free().
 */
int gil_proc_exec_mappings(pid_t pid, struct gil_mapping **out, bool *capped);
void gil_mappings_free(struct gil_mapping *maps, int nr);

/**
 * gil_proc_threads - the thread ids of @pid (from /proc/PID/task). Returns the count or -1.
 */
int gil_proc_threads(pid_t pid, pid_t **out);

/** gil_proc_rank - rank from @pid's environment (RANK, RANK_ID, LOCAL_RANK), 0 without. */
int gil_proc_rank(pid_t pid, const char **source);

/** gil_proc_cmdline - the command line joined by spaces (malloc'd), or NULL. */
char *gil_proc_cmdline(pid_t pid);

/** gil_proc_comm - /proc/PID/task/TID/comm without the newline, into @buf (>= 17 bytes). */
int gil_proc_comm(pid_t pid, pid_t tid, char *buf, size_t len);

/**
 * gil_proc_starttime - when @pid started, in clock ticks since boot (/proc/PID/stat field 22):
 * with the pid it names one process for the life of the system. Returns 0, or -1.
 */
int gil_proc_starttime(pid_t pid, uint64_t *out);

/** gil_proc_exists - @pid is alive (not a zombie). */
bool gil_proc_exists(pid_t pid);

/** gil_proc_list - every process id on the host. Returns the count or -1. */
int gil_proc_list(pid_t **out);

/**
 * gil_proc_accelerator - the first accelerator device @pid has open (Ascend /dev/davinci*,
 * NVIDIA /dev/nvidia*, /dev/accel/..., AMD /dev/kfd) into @buf, or 0 when none. -1 if unreadable.
 */
int gil_proc_accelerator(pid_t pid, char *buf, size_t len);

/** gil_proc_is_kernel_thread - kernel threads have no mm; skip them early. */
bool gil_proc_is_kernel_thread(pid_t pid);

#endif /* GIL_PROCS_H */
