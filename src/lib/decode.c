// SPDX-License-Identifier: LGPL-2.1-or-later
/* libtraceevent decoding of our uprobe samples. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stdlib.h>
#include <string.h>

#include <event-parse.h>

#include "decode.h"
#include "ring.h"

struct gil_decoder {
	struct tep_handle *tep;
	int *probe_of_id; /* trace event id -> probe index, -1 if not ours */
	int max_id;
};

struct gil_decoder *gil_decoder_alloc(struct tep_handle *tep, const int *ids, int nr)
{
	struct gil_decoder *d = calloc(1, sizeof(*d));
	int i;

	if (!d)
		return NULL;
	d->tep = tep;
	for (i = 0; i < nr; i++)
		if (ids[i] > d->max_id)
			d->max_id = ids[i];
	d->probe_of_id = malloc(((size_t)d->max_id + 1) * sizeof(int));
	if (!d->probe_of_id) {
		free(d);
		return NULL;
	}
	for (i = 0; i <= d->max_id; i++)
		d->probe_of_id[i] = -1;
	for (i = 0; i < nr; i++)
		if (ids[i] >= 0)
			d->probe_of_id[ids[i]] = i;
	return d;
}

int gil_decode_sample(const struct gil_decoder *d, const struct perf_event_header *h,
		      struct gil_event *ev)
{
	const struct gil_sample_head *s = (const void *)h;
	struct tep_record rec;
	int type;

	if (h->size < sizeof(*s) || sizeof(*s) + s->raw_size > h->size)
		return -1;
	memset(&rec, 0, sizeof(rec));
	rec.ts = s->time;
	rec.size = (int)s->raw_size;
	rec.data = (void *)(s + 1);
	type = tep_data_type(d->tep, &rec);
	if (type < 0 || type > d->max_id || d->probe_of_id[type] < 0)
		return -1;
	ev->pid = s->pid;
	ev->tid = s->tid;
	ev->ts = s->time;
	ev->probe = d->probe_of_id[type];
	return 0;
}

void gil_decoder_free(struct gil_decoder *d)
{
	if (!d)
		return;
	free(d->probe_of_id);
	free(d);
}
