/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Probe lifetime: one tracefs group per recorder ("gil_<recorder pid>"), uprobes and uretprobes
 * on the GIL functions. alloc -> add... -> create (kernel) -> destroy (kernel) -> free.
 */
#ifndef GIL_PROBES_H
#define GIL_PROBES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "elf/symbols.h"

/*
 * A probe is one site. Sites whose fetchargs have the same names and types share one trace
 * event (the kernel's multi-probe events): the first made it (head), the others were appended,
 * and each tells itself apart by its gil_site field, its index. The recorder opens perf events
 * for heads only; closing one unregisters all its sites after one grace period, not one each.
 */
struct gil_probe {
	char name[32]; /* event name inside the group (shared by the sites of one event) */
	char *file; /* the path the kernel resolves (through /proc/PID/root) */
	uint64_t offset;
	enum gil_func fn;
	bool ret; /* uretprobe */
	bool role_exit; /* a plain uprobe standing for the return (end of an inlined copy) */
	bool fetches; /* created with fetchargs */
	bool on_request; /* a hit is a release only when its gil_req is 1 (_Py_HandlePending) */
	char fetch_refused[128]; /* why the kernel refused them (the probe was made without) */
	int id; /* trace event id, valid after create (the same for the sites of one event) */
	int site; /* the value of its gil_site field (its index), or -1 when it has none */
	bool head; /* it made its event: the one perf events are opened for */
	bool padded; /* it reads nothing: its fields other than gil_site are immediate zeros */
	char *own; /* padded, but these of the event's arguments are its own reads (a take_gil
		      entry's: which GIL, its frame), else NULL */
	char *sig; /* what the kernel compares to append: "p|name:type ..." */
	struct tracefs_dynevent *dev;
	bool created;
};

struct gil_probes {
	char group[64]; /* gil_<pid>_<pid namespace inode, hex>_<start time>: see probes.c */
	struct gil_probe *v;
	size_t nr, cap;
	struct tep_handle *tep; /* our group's event formats, for decoding */
	bool no_site; /* the kernel has no immediate fetchargs (gil_site=\N): one event per site */
};

/**
 * gil_probes_union - add to *@acc (NULL: empty) the fetchargs of @args whose names it lacks:
 * the union of a file's entry sets, which each entry pads to (gil_probes_add's @pad_like).
 * Returns 0, or -1 on ENOMEM (*@acc is kept).
 */
int gil_probes_union(char **acc, const char *args);

/** gil_probes_alloc - an empty set for group gil_<getpid()>; touches nothing. */
struct gil_probes *gil_probes_alloc(void);

/**
 * gil_probes_add - describe a probe at @offset of @file (entry, or return when @ret) and create
 * it in the kernel at once. @file is what the kernel resolves: the recorder passes
 * /proc/self/fd/N of the descriptor it read, so the probe lands on that inode; @shown names
 * the file in messages. @fetchargs (NULL: none) are what the kernel reads at each hit
 * (attrib/). It joins the event of a probe made since index @share_from whose fetchargs have
 * the same names and types, or makes its own. An entry without fetchargs joins the event of
 * entries that read @pad_like (NULL: none) where it can, its fields immediate zeros (padded);
 * so does an entry whose fetchargs are some of @pad_like's (the others zeros: @pad_like is
 * the union of the entries' sets, gil_probes_union). Returns its index, or -1 with a reason
 * in @err
 * (the kernel's, from tracefs_error_last, when it refused).
 */
int gil_probes_add(struct gil_probes *p, const char *file, const char *shown, uint64_t offset,
		   enum gil_func fn, bool ret, const char *fetchargs, const char *pad_like,
		   size_t share_from, char *err, size_t errlen);

/** gil_probes_load - read the formats of our group's events (ids, fields) for decoding. */
int gil_probes_load(struct gil_probes *p, char *err, size_t errlen);

/** gil_probes_destroy - remove every probe we created (our group only). 0, or -1 if any stayed. */
int gil_probes_destroy(struct gil_probes *p);
void gil_probes_free(struct gil_probes *p);

/**
 * gil_probes_cleanup_stale - remove the uprobe groups of recorders that are gone for sure: named
 * as giltrace names them (gil_<pid>_<pid namespace>_<start time>), by a recorder of our pid
 * namespace whose pid names no process now, or one started at another time. Nothing else.
 * Returns the number of groups removed or -1.
 */
int gil_probes_cleanup_stale(void);

#endif /* GIL_PROBES_H */
