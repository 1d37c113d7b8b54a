/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* --profiling-data: an msprof/torch_npu PROF_ directory's host clock files. */
#ifndef GIL_PROFDATA_H
#define GIL_PROFDATA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

struct profdata {
	char host[4096]; /* the directory holding start_info */
	int64_t begin_us; /* start_info collectionTimeBegin: gettimeofday */
	int64_t raw_begin_ns; /* start_info clockMonotonicRaw */
	bool raw_from_log; /* start_info had none: host_start.log's clock_monotonic_raw */
	bool has_end;
	int64_t end_us; /* end_info collectionTimeEnd */
	int64_t raw_end_ns; /* end_info clockMonotonicRaw (0 if absent) */
	int64_t offset_ns; /* epoch ns = raw ns + offset_ns */
	int64_t lo_ns, hi_ns; /* the collection window, epoch ns */
};

/**
 * profdata_load - find start_info under @path (the PROF_ directory, its host/ directory, or a
 * directory holding exactly one PROF_ directory) and read the alignment:
 * epoch_us = raw_ns / 1000 + (collectionTimeBegin_us - clockMonotonicRaw_ns / 1000), and the
 * window start_info .. end_info. Keys may come in any order, as strings or numbers, or be "".
 * Returns -1 with a reason in @err.
 */
int profdata_load(const char *path, struct profdata *pd, char *err, size_t errlen);

/* profdata_describe - the values used, for otherData (new reference). */
struct json_object *profdata_describe(const struct profdata *pd);

#endif /* GIL_PROFDATA_H */
