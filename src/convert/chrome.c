// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The Chrome Trace Event backend: {"traceEvents":[...],"displayTimeUnit":"ns","otherData":{...}}
 * with only the phases MindStudio Insight reads (M X I C s f). ts is a string of microseconds
 * with three decimals, printed from integer nanoseconds (msprof's own convention: epoch
 * microseconds with nanosecond digits do not fit a double, and MindStudio Insight and Perfetto
 * read such strings exactly); dur a number, also exact. --ts-format number drops the quotes for
 * viewers that only take numbers (Chrome DevTools, speedscope).
 * One event per line.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>

#include "conv.h"
#include "giltrace.h"
#include "merge.h"
#include "outfile.h"
#include "common/util.h"

static const char *const slice_names[] = { "take_gil", "hold_gil", "drop_gil" };

struct line {
	char *p;
};

static inline void lit(struct line *l, const char *s, size_t n)
{
	memcpy(l->p, s, n);
	l->p += n;
}
#define LIT(l, s) lit(l, s, sizeof(s) - 1)

static inline void num(struct line *l, int64_t v)
{
	l->p += gil_fmt_s64(l->p, v);
}

static inline void us_ts(const struct conv_out *o, struct line *l, int64_t ns)
{
	if (!o->ts_number)
		*l->p++ = '"';
	l->p += gil_fmt_us(l->p, ns);
	if (!o->ts_number)
		*l->p++ = '"';
}

static inline void us_num(struct line *l, int64_t ns)
{
	l->p += gil_fmt_us(l->p, ns);
}

/*
 * A JSON string from at most @max bytes of @s: longer names and command lines end in "...",
 * bytes that are not UTF-8 (a comm is only bytes) become '?', so every viewer can parse it.
 */
static void str(struct line *l, const char *s, size_t max)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *u = (const unsigned char *)(s ? s : "");
	size_t i = 0, n;

	*l->p++ = '"';
	while (u[i]) {
		unsigned char c = u[i];

		n = gil_utf8_seq_len((const char *)u + i);
		if (i + (n ? n : 1) > max) {
			LIT(l, "...");
			break;
		}
		if (!n) {
			*l->p++ = '?';
			i++;
			continue;
		}
		if (c == '"' || c == '\\') {
			*l->p++ = '\\';
			*l->p++ = (char)c;
		} else if (c < 0x20) {
			LIT(l, "\\u00");
			*l->p++ = hex[c >> 4];
			*l->p++ = hex[c & 15];
		} else {
			memcpy(l->p, u + i, n);
			l->p += n;
		}
		i += n;
	}
	*l->p++ = '"';
}

/* Event lines are built in the output buffer itself; this much room always suffices. */
#define EVENT_MAX 8192 /* a slice with a function, file and native caller, escaped */
#define NAME_MAX_BYTES 256

static inline int begin(struct conv_out *o, struct line *l)
{
	l->p = outfile_reserve(o->f, EVENT_MAX);
	if (!l->p)
		return -1;
	if (o->events++ || (o->merge && merge_has_events(o->merge)))
		LIT(l, ",\n");
	return 0;
}

static inline void end(struct conv_out *o, struct line *l)
{
	o->f->len = (size_t)(l->p - o->f->buf);
}

static void pid_tid(struct line *l, int64_t pid, int64_t tid)
{
	LIT(l, ",\"pid\":");
	num(l, pid);
	LIT(l, ",\"tid\":");
	num(l, tid);
}

static int meta(struct conv_out *o, const struct conv_proc *p, int64_t tid, const char *name,
		const char *key, const char *sval, int64_t ival)
{
	struct line l;

	if (begin(o, &l) < 0)
		return -1;
	LIT(&l, "{\"ph\":\"M\",\"name\":");
	str(&l, name, NAME_MAX_BYTES);
	pid_tid(&l, p->pid, tid);
	LIT(&l, ",\"args\":{");
	str(&l, key, NAME_MAX_BYTES);
	*l.p++ = ':';
	if (sval)
		str(&l, sval, NAME_MAX_BYTES);
	else
		num(&l, ival);
	LIT(&l, "}}");
	end(o, &l);
	return 0;
}

static int slice_args(struct line *l, const struct conv_event *ev)
{
	uint32_t flags = ev->flags, fixups = ev->fixups;
	static const struct {
		uint32_t bit;
		const char *key;
	} fl[] = {
		{ GIL_F_BEGIN_UNKNOWN, "\"begin_unknown\":true" },
		{ GIL_F_TRUNCATED, "\"truncated\":true" },
		{ GIL_F_LOST, "\"lost_events\":true" },
		{ GIL_F_RESYNC, "\"resync\":true" },
	};
	bool first = true;
	size_t i;

	LIT(l, ",\"args\":{");
	for (i = 0; i < GIL_ARRAY_SIZE(fl); i++) {
		if (!(flags & fl[i].bit))
			continue;
		if (!first)
			*l->p++ = ',';
		lit(l, fl[i].key, strlen(fl[i].key));
		first = false;
	}
	if (flags & ~(uint32_t)(GIL_F_BEGIN_UNKNOWN | GIL_F_TRUNCATED | GIL_F_LOST | GIL_F_RESYNC)) {
		if (!first)
			*l->p++ = ',';
		LIT(l, "\"flags\":");
		num(l, flags);
		first = false;
	}
	if (fixups & CONV_FIX_CLIPPED) {
		if (!first)
			*l->p++ = ',';
		LIT(l, "\"clipped\":true");
		first = false;
	}
	if (fixups & CONV_FIX_OVERLAP) {
		if (!first)
			*l->p++ = ',';
		LIT(l, "\"overlap_fixed\":true");
		first = false;
	}
	/* attribution: the Python function, and forced/voluntary (a wait: its previous release) */
	if (ev->fn_name) {
		if (!first)
			*l->p++ = ',';
		LIT(l, "\"function\":");
		str(l, ev->fn_name, NAME_MAX_BYTES);
		if (ev->fn_file) {
			LIT(l, ",\"file\":");
			str(l, ev->fn_file, NAME_MAX_BYTES);
		}
		if (ev->fn_line >= 0) {
			LIT(l, ",\"line\":");
			num(l, ev->fn_line);
		}
		first = false;
	}
	/* the native code at a C API transition (a demangled C++ name may be long) */
	if (ev->native) {
		if (!first)
			*l->p++ = ',';
		LIT(l, "\"native\":");
		str(l, ev->native, 2 * NAME_MAX_BYTES);
		first = false;
	}
	/* which interpreter, wherever the recorder read it (and its GIL, when not its own) */
	if (ev->proc->interpreters || ev->interp || ev->gil) {
		if (!first)
			*l->p++ = ',';
		LIT(l, "\"interp\":");
		num(l, ev->interp);
		if (ev->gil != ev->interp) {
			LIT(l, ",\"gil\":");
			num(l, ev->gil);
		}
		first = false;
	}
	if (ev->reason == GIL_REASON_FORCED || ev->reason == GIL_REASON_VOLUNTARY) {
		if (!first)
			*l->p++ = ',';
		if (ev->kind == GIL_KIND_TAKE)
			LIT(l, "\"previous_release\":");
		else
			LIT(l, "\"release\":");
		if (ev->reason == GIL_REASON_FORCED)
			LIT(l, "\"forced\"");
		else
			LIT(l, "\"voluntary\"");
	}
	*l->p++ = '}';
	return 0;
}

static int chrome_header(struct conv_out *o)
{
	static const char head[] = "{\"traceEvents\":[\n";

	if (o->merge)
		return merge_write_head(o->merge, o->f);
	return outfile_write(o->f, head, sizeof(head) - 1);
}

static int chrome_event(struct conv_out *o, const struct conv_event *ev)
{
	const struct conv_proc *p = ev->proc;
	struct line l;

	switch (ev->type) {
	case CEV_PROCESS:
		if (meta(o, p, 0, "process_name", "name", p->label, 0) < 0 ||
		    meta(o, p, 0, "process_labels", "labels", "GIL", 0) < 0)
			return -1;
		return meta(o, p, 0, "process_sort_index", "sort_index", NULL, p->sort_index);
	case CEV_THREAD:
		if (ev->name && meta(o, p, ev->tid, "thread_name", "name", ev->name, 0) < 0)
			return -1;
		return meta(o, p, ev->tid, "thread_sort_index", "sort_index", NULL, ev->sort_index);
	case CEV_SLICE:
		if (begin(o, &l) < 0)
			return -1;
		LIT(&l, "{\"ph\":\"X\",\"cat\":\"gil\",\"name\":\"");
		lit(&l, slice_names[ev->kind], 8);
		*l.p++ = '"';
		pid_tid(&l, p->pid, ev->tid);
		LIT(&l, ",\"ts\":");
		us_ts(o, &l, ev->ts);
		LIT(&l, ",\"dur\":");
		us_num(&l, ev->dur);
		if (ev->flags || ev->fixups || ev->fn_name || ev->reason || ev->interp || ev->gil ||
		    ev->native || p->interpreters)
			slice_args(&l, ev);
		*l.p++ = '}';
		end(o, &l);
		return 0;
	case CEV_COUNTER:
		if (begin(o, &l) < 0)
			return -1;
		LIT(&l, "{\"ph\":\"C\",\"cat\":\"gil\",\"name\":\"GIL waiters");
		/* one counter per GIL: another interpreter's is named by its id */
		if (ev->gil) {
			LIT(&l, " (interp ");
			num(&l, ev->gil);
			*l.p++ = ')';
		}
		*l.p++ = '"';
		pid_tid(&l, p->pid, 0);
		LIT(&l, ",\"ts\":");
		us_ts(o, &l, ev->ts);
		LIT(&l, ",\"args\":{\"waiting\":");
		num(&l, ev->value);
		LIT(&l, "}}");
		end(o, &l);
		return 0;
	case CEV_FLOW:
		if (begin(o, &l) < 0)
			return -1;
		LIT(&l, "{\"ph\":\"s\",\"cat\":\"gil\",\"name\":\"gil_handoff\",\"id\":");
		num(&l, (int64_t)ev->id);
		pid_tid(&l, p->pid, ev->tid);
		LIT(&l, ",\"ts\":");
		us_ts(o, &l, ev->ts);
		LIT(&l, ",\"bp\":\"e\"},\n{\"ph\":\"f\",\"cat\":\"gil\",\"name\":\"gil_handoff\",\"id\":");
		num(&l, (int64_t)ev->id);
		pid_tid(&l, p->pid, ev->to_tid);
		LIT(&l, ",\"ts\":");
		us_ts(o, &l, ev->to_ts);
		LIT(&l, ",\"bp\":\"e\"}");
		end(o, &l);
		return 0;
	case CEV_STEP:
		if (begin(o, &l) < 0)
			return -1;
		LIT(&l, "{\"ph\":\"i\",\"cat\":\"gil\",\"name\":");
		str(&l, ev->text ? "GIL wait outlier" : "GIL in step", NAME_MAX_BYTES);
		LIT(&l, ",\"s\":\"p\"");
		pid_tid(&l, p->pid, 0);
		LIT(&l, ",\"ts\":");
		us_ts(o, &l, ev->ts);
		LIT(&l, ",\"args\":{\"step\":");
		str(&l, ev->name, NAME_MAX_BYTES);
		LIT(&l, ",\"dur_us\":");
		us_num(&l, ev->dur);
		LIT(&l, ",\"wait_us\":");
		us_num(&l, ev->value);
		LIT(&l, ",\"hold_us\":");
		us_num(&l, (int64_t)ev->count);
		if (ev->text) {
			LIT(&l, ",\"outlier\":");
			str(&l, ev->text, 2 * NAME_MAX_BYTES);
		}
		LIT(&l, "}}");
		end(o, &l);
		return 0;
	case CEV_LOST:
		if (begin(o, &l) < 0)
			return -1;
		LIT(&l, "{\"ph\":\"I\",\"cat\":\"gil\",\"name\":\"lost events\",\"s\":\"p\"");
		pid_tid(&l, p->pid, 0);
		LIT(&l, ",\"ts\":");
		us_ts(o, &l, ev->ts);
		LIT(&l, ",\"args\":{\"cpu\":");
		num(&l, ev->cpu);
		LIT(&l, ",\"count\":");
		num(&l, (int64_t)ev->count);
		LIT(&l, "}}");
		end(o, &l);
		return 0;
	}
	return 0;
}

static int chrome_footer(struct conv_out *o, struct json_object *other)
{
	static const char tail[] = "\n],\"displayTimeUnit\":\"ns\",\"otherData\":";
	const char *s;

	if (o->merge)
		return merge_write_tail(o->merge, o->f, other);
	s = json_object_to_json_string_ext(other, JSON_C_TO_STRING_PLAIN |
					   JSON_C_TO_STRING_NOSLASHESCAPE);
	if (!s || outfile_write(o->f, tail, sizeof(tail) - 1) < 0 ||
	    outfile_write(o->f, s, strlen(s)) < 0)
		return -1;
	return outfile_write(o->f, "}\n", 2);
}

const struct conv_backend_ops conv_chrome_ops = {
	.name = "chrome",
	.about = "Chrome Trace JSON, for MindStudio Insight and Perfetto",
	.header = chrome_header,
	.event = chrome_event,
	.footer = chrome_footer,
};
