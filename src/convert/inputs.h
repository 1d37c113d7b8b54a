/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The recordings to convert: found (files, directories), looked at, sorted by rank. */
#ifndef GIL_INPUTS_H
#define GIL_INPUTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <json-c/json.h>

#include "conv.h"
#include "format/rawfile.h"

struct conv_input {
	char *path;
	dev_t dev;
	ino_t ino;
	enum gil_input_format fmt;
	struct json_object *header; /* giltrace: the header record; NULL if none */
	struct json_object *footer; /* giltrace: the footer read from the end; NULL if cut */
	int64_t name_pid, name_rank; /* from GIL_<pid>_rank_<rank>.json, -1 if not so named */
	struct conv_proc proc;
	char *label;
};

struct conv_inputs {
	struct conv_input *v;
	size_t n;
};

/**
 * inputs_load - expand @opt->inputs (a directory stands for its GIL_<pid>_rank_<rank>.json
 * files), open each to read its header (and footer), sort them by rank then pid, and give each a
 * pid in the output that no other input (nor a pid @taken says is taken) uses. -1 with @err.
 * Pair with inputs_free().
 */
int inputs_load(struct conv_inputs *in, const struct conv_options *opt,
		bool (*taken)(void *ctx, int64_t pid), void *taken_ctx, char *err, size_t errlen);

void inputs_free(struct conv_inputs *in);

#endif /* GIL_INPUTS_H */
