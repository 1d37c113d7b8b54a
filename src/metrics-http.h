/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* gil-record --metrics: the recorder's counters over HTTP, for Prometheus (libmicrohttpd). */
#ifndef GIL_METRICS_HTTP_H
#define GIL_METRICS_HTTP_H

#include <stddef.h>

#include "giltrace.h"

struct metrics_http;

/*
 * metrics_http_bind - parse @spec ([ADDR:]PORT, 127.0.0.1 when no address) and bind and listen
 * on it now, before any probe. NULL with one line for the user in @err.
 */
struct metrics_http *metrics_http_bind(const char *spec, char *err, size_t errlen);

/* metrics_http_start - serve /metrics from @rec's gil_recorder_metrics() on a thread. 0, -1. */
int metrics_http_start(struct metrics_http *h, struct gil_recorder *rec, char *err,
		       size_t errlen);

/* metrics_http_stop - stop serving and close the socket (before gil_recorder_free). */
void metrics_http_stop(struct metrics_http *h);

#endif /* GIL_METRICS_HTTP_H */
