/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * gil-convert: recordings -> one timeline -> an output backend.
 *
 * The flow: inputs.c finds and sorts the recordings; convert.c reads each one through the
 * format's reader (format/reader.c, sysTrace files included), maps its times (clockmap.c), hands
 * the intervals to the per-process timeline (timeline.c: thread rows, waiter counter, hand-off
 * flows), which emits events to a backend (chrome.c, null.c) writing through outfile.c; merge.c
 * wraps a profiler's trace around the output.
 */
#ifndef GIL_CONVERT_H
#define GIL_CONVERT_H

#include <stddef.h>

#include "conv.h"

/**
 * conv_run - convert the recordings named in @opt into one trace file. Returns 0, or -1 with a
 * one-line reason in @err (no program name). Warnings go to @opt->warn.
 */
int conv_run(const struct conv_options *opt, char *err, size_t errlen);

#endif /* GIL_CONVERT_H */
