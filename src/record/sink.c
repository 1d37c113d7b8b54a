// SPDX-License-Identifier: LGPL-2.1-or-later
/* The registered sinks, and the dispatch of one target's intervals and events to them. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stdlib.h>

#include "sink.h"

/*
 * Every target's sinks, in the order they are told things. A new sink is one line here. The
 * file writer is last: it writes the footer the sinks before it added to.
 */
static const struct gil_sink_ops *const sinks[] = {
	&gil_sink_summary,
	&gil_sink_alert,
	&gil_sink_metrics,
	&gil_sink_live,
	&gil_sink_file,
};

#define NR_SINKS (sizeof(sinks) / sizeof(sinks[0]))

struct gil_sinks {
	void *state[NR_SINKS];
	int failed; /* the sink whose op failed last, -1: none */
};

struct gil_sinks *gil_sinks_open(const struct gil_sink_target *t)
{
	struct gil_sinks *ss = calloc(1, sizeof(*ss));
	size_t i;

	if (!ss)
		return NULL;
	ss->failed = -1;
	for (i = 0; i < NR_SINKS; i++) {
		ss->state[i] = sinks[i]->open(t);
		if (!ss->state[i]) {
			gil_sinks_close(ss);
			return NULL;
		}
	}
	return ss;
}

/* Call @op of each sink that has it with the arguments after it; stop at the first failure. */
#define DISPATCH(ss, op, ...)                                                        \
	do {                                                                         \
		size_t i_;                                                           \
		for (i_ = 0; i_ < NR_SINKS; i_++) {                                  \
			if (sinks[i_]->op && sinks[i_]->op((ss)->state[i_], __VA_ARGS__) < 0) { \
				(ss)->failed = (int)i_;                              \
				return -1;                                           \
			}                                                            \
		}                                                                    \
		return 0;                                                            \
	} while (0)

int gil_sinks_interval(void *sinks_, const struct gil_interval *iv)
{
	struct gil_sinks *ss = sinks_;

	DISPATCH(ss, interval, iv);
}

int gil_sinks_thread(struct gil_sinks *ss, int32_t tid, const char *name, uint64_t ts)
{
	DISPATCH(ss, thread, tid, name, ts);
}

int gil_sinks_exit(struct gil_sinks *ss, int32_t tid, uint64_t ts)
{
	DISPATCH(ss, exit, tid, ts);
}

int gil_sinks_lost(struct gil_sinks *ss, int cpu, uint64_t count, uint64_t ts)
{
	DISPATCH(ss, lost, cpu, count, ts);
}

int gil_sinks_step(struct gil_sinks *ss, int32_t tid, uint64_t ts, int64_t n)
{
	DISPATCH(ss, step, tid, ts, n);
}

int gil_sinks_native(struct gil_sinks *ss, uint32_t id, const char *name, uint64_t addr)
{
	DISPATCH(ss, native, id, name, addr);
}

int gil_sinks_end(struct gil_sinks *ss, struct json_object *footer)
{
	DISPATCH(ss, end, footer);
}

int gil_sinks_flush(struct gil_sinks *ss)
{
	size_t i;

	for (i = 0; i < NR_SINKS; i++) {
		if (sinks[i]->flush && sinks[i]->flush(ss->state[i]) < 0) {
			ss->failed = (int)i;
			return -1;
		}
	}
	return 0;
}

int gil_sinks_tick(struct gil_sinks *ss, uint64_t upto, const struct gil_open *holds,
		   size_t nr, uint32_t waiting)
{
	DISPATCH(ss, tick, upto, holds, nr, waiting);
}

const char *gil_sinks_error(const struct gil_sinks *ss)
{
	const char *e = NULL;

	if (ss && ss->failed >= 0 && sinks[ss->failed]->error)
		e = sinks[ss->failed]->error(ss->state[ss->failed]);
	return e && *e ? e : "out of memory";
}

void *gil_sinks_state(const struct gil_sinks *ss, const struct gil_sink_ops *ops)
{
	size_t i;

	for (i = 0; ss && i < NR_SINKS; i++)
		if (sinks[i] == ops)
			return ss->state[i];
	return NULL;
}

void gil_sinks_close(struct gil_sinks *ss)
{
	size_t i;

	if (!ss)
		return;
	for (i = 0; i < NR_SINKS; i++)
		if (ss->state[i] && sinks[i]->close)
			sinks[i]->close(ss->state[i]);
	free(ss);
}
