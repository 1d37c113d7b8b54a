// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * One target's recording file: the header's and footer's schema (doc/format.md), function
 * definitions before their first use, intervals as pairing closes them.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "recorder.h"

/* A JSON string of bytes from the system (comm, cmdline): '?' where they break UTF-8. */
static struct json_object *jstr_utf8(const char *s)
{
	char *u = gil_utf8_copy(s);
	struct json_object *o = json_object_new_string(u ? u : "");

	free(u);
	return o;
}

/* Before the first interval naming a function, the file gets the function's definition. */
static int define_function(struct target *t, uint32_t id)
{
	const struct gil_fn *fn = gil_fntab_get(t->fntab, id);
	size_t cap;
	uint8_t *w;

	if (!fn)
		return 0;
	if (id >= t->fn_written_cap) {
		cap = t->fn_written_cap ? t->fn_written_cap : 256;
		while (cap <= id)
			cap *= 2;
		w = realloc(t->fn_written, cap);
		if (!w)
			return -1;
		memset(w + t->fn_written_cap, 0, cap - t->fn_written_cap);
		t->fn_written = w;
		t->fn_written_cap = cap;
	}
	if (t->fn_written[id])
		return 0;
	t->fn_written[id] = 1;
	return gil_rawfile_function(t->file, fn->id, fn->name, fn->file, fn->line, fn->why);
}

int rec_emit_interval(void *ctx, const struct gil_interval *iv)
{
	struct target *t = ctx;

	if (iv->fn && t->fntab && define_function(t, iv->fn) < 0)
		return -1;
	return gil_rawfile_interval(t->file, iv);
}

static struct json_object *offsets_json(const struct gil_clock_offsets *off)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "monotonic_ns", json_object_new_int64(off->monotonic_ns));
	json_object_object_add(o, "realtime_ns", json_object_new_int64(off->realtime_ns));
	return o;
}


/* Why @o's probes read no Python function, or NULL when they do. */
const char *rec_attribution_why(const struct gil_recorder *rec, const struct object *o)
{
	const struct gil_attrib *at = o->attrib;

	if (rec->opts.no_attribution)
		return "turned off (--no-attribution)";
	if (!at || !at->nr_attributed)
		return at && at->why ? at->why : "no offsets for this interpreter";
	if (!o->nr_fetching)
		return "the kernel refused the fetchargs";
	return NULL;
}

/* The header's "attribution": whether intervals name functions, and where the offsets came from. */
static struct json_object *attribution_json(const struct gil_recorder *rec, const struct object *o)
{
	struct json_object *a = json_object_new_object();
	const struct gil_attrib *at = o->attrib;
	bool on = at && o->nr_fetching > 0 && rec->fntab;
	const char *why = rec_attribution_why(rec, o);

	json_object_object_add(a, "enabled", json_object_new_boolean(on));
	if (at && at->source != GIL_ATTR_SRC_NONE) {
		json_object_object_add(a, "offsets_from", json_object_new_string(
								  gil_attrib_source_name(at->source)));
		json_object_object_add(a, "offsets_file",
				       at->from ? jstr_utf8(at->from) : NULL);
		json_object_object_add(a, "qualname", json_object_new_boolean(at->layout.qualname));
		json_object_object_add(a, "release_reason",
				       json_object_new_boolean(at->layout.req != GIL_REQ_NONE));
		json_object_object_add(a, "entry_sites", json_object_new_int64((int64_t)at->nr_entries));
		json_object_object_add(a, "attributed_sites", json_object_new_int64(o->nr_fetching));
	} else {
		json_object_object_add(a, "offsets_from", NULL);
	}
	if (why)
		json_object_object_add(a, "why", json_object_new_string(why));
	return a;
}

int rec_write_header(struct gil_recorder *rec, struct target *t)
{
	const struct object *o = &rec->objects[t->obj];
	struct json_object *h = json_object_new_object(), *probes = json_object_new_array(), *pr;
	const struct gil_probe *gp;
	const struct gil_site *s;
	struct utsname u;
	char hex[32];
	int idx = o->first_probe;
	size_t i;
	int ret;

	json_object_object_add(h, "tool", json_object_new_string("giltrace " PACKAGE_VERSION));
	json_object_object_add(h, "pid", json_object_new_int(t->pid));
	json_object_object_add(h, "rank", json_object_new_int(t->rank));
	json_object_object_add(h, "rank_source",
			       t->rank_source ? json_object_new_string(t->rank_source) : NULL);
	json_object_object_add(h, "cmdline", jstr_utf8(t->cmdline ? t->cmdline : ""));
	json_object_object_add(h, "comm", jstr_utf8(t->comm));
	json_object_object_add(h, "python_version",
			       o->version[0] ? json_object_new_string(o->version) : NULL);
	json_object_object_add(h, "hostname",
			       json_object_new_string(uname(&u) == 0 ? u.nodename : ""));
	json_object_object_add(h, "recorder_pid", json_object_new_int(getpid()));
	json_object_object_add(h, "group", json_object_new_string(rec->probes->group));
	json_object_object_add(h, "clock", json_object_new_string(GIL_CLOCK_NAME));
	json_object_object_add(h, "start_ns", json_object_new_uint64(t->start_ns));
	json_object_object_add(h, "clock_offsets", offsets_json(&rec->off_start));
	/* paths are bytes a user chose: the file is JSON, so UTF-8 */
	json_object_object_add(h, "object", jstr_utf8(o->path));
	json_object_object_add(h, "build_id", json_object_new_string(o->syms->build_id));
	json_object_object_add(h, "symbols_from",
			       jstr_utf8(o->syms->symbols_from ? o->syms->symbols_from : o->path));
	if (o->syms->nr_over_cap)
		json_object_object_add(h, "sites_over_cap",
				       json_object_new_uint64(o->syms->nr_over_cap));
	for (i = 0; i < o->syms->nr_sites; i++) {
		s = &o->syms->sites[i];
		pr = json_object_new_object();
		json_object_object_add(pr, "function", json_object_new_string(
							       s->fn == GIL_FN_TAKE ? "take_gil" : "drop_gil"));
		json_object_object_add(pr, "symbol", jstr_utf8(s->symbol));
		snprintf(hex, sizeof(hex), "0x%llx", (unsigned long long)s->addr);
		json_object_object_add(pr, "address", json_object_new_string(hex));
		snprintf(hex, sizeof(hex), "0x%llx", (unsigned long long)s->offset);
		json_object_object_add(pr, "offset", json_object_new_string(hex));
		json_object_object_add(pr, "method", json_object_new_string(s->method));
		json_object_object_add(pr, "role", json_object_new_string(
							   s->role == GIL_SITE_EXIT ? "exit" : "entry"));
		json_object_object_add(pr, "return_probe", json_object_new_boolean(s->retprobe));
		if (s->approximate)
			json_object_object_add(pr, "approximate", json_object_new_boolean(true));
		if (s->skipped)
			json_object_object_add(pr, "skipped", json_object_new_int((int)s->skipped));
		/* probes were made site by site: the entry (or exit) probe, then its return */
		gp = idx >= 0 && (size_t)idx < rec->probes->nr ? &rec->probes->v[idx] : NULL;
		idx += 1 + s->retprobe;
		if (o->attrib && s->role == GIL_SITE_ENTRY) {
			json_object_object_add(pr, "attribution",
					       json_object_new_boolean(gp && gp->fetches));
			if (gp && !gp->fetches)
				json_object_object_add(pr, "attribution_why", json_object_new_string(
					gp->fetch_refused[0] ? gp->fetch_refused
							     : o->attrib->sites[i].why
								       ? o->attrib->sites[i].why
								       : "not available"));
		}
		json_object_array_add(probes, pr);
	}
	json_object_object_add(h, "probes", probes);
	/* Readers must not take approximate releases for exact ones: say so once, and why. */
	json_object_object_add(h, "approximate", json_object_new_boolean(o->syms->approximate));
	if (o->syms->approximate && o->syms->reason)
		json_object_object_add(h, "approximate_reason",
				       json_object_new_string(o->syms->reason));
	if (o->syms->dwarf_from)
		json_object_object_add(h, "dwarf_from", json_object_new_string(o->syms->dwarf_from));
	json_object_object_add(h, "attribution", attribution_json(rec, o));
	ret = gil_rawfile_header(t->file, h);
	json_object_put(h);
	if (ret < 0)
		rec_set_err(rec, "%s", gil_rawfile_error(t->file));
	return ret;
}

/* Close what @t has open at @end, write its footer, release its events. */
int rec_finish_target(struct gil_recorder *rec, struct target *t, uint64_t end,
			 const char *reason)
{
	struct json_object *f, *lpc, *threads, *th;
	struct gil_clock_offsets off;
	int ret = 0, ncpu, i;
	size_t k;

	if (t->state == T_DONE)
		return 0;
	rec_close_target_fds(rec, t);
	t->state = T_DONE;
	t->reason = reason;
	if (!t->pairing || !t->file)
		return 0;
	if (gil_pairing_finish(t->pairing, end) < 0)
		ret = -1;
	rec_fill_summary(t);
	gil_clock_offsets_sample(&off);
	f = json_object_new_object();
	json_object_object_add(f, "end_ns", json_object_new_uint64(end));
	json_object_object_add(f, "clock_offsets", offsets_json(&off));
	json_object_object_add(f, "reason", json_object_new_string(reason));
	json_object_object_add(f, "events", json_object_new_uint64(t->events));
	json_object_object_add(f, "intervals",
			       json_object_new_uint64(gil_rawfile_intervals(t->file)));
	json_object_object_add(f, "lost", json_object_new_uint64(rec->lost));
	lpc = json_object_new_array();
	ncpu = gil_rings_nr_cpus(rec->rings);
	for (i = 0; i < ncpu; i++)
		json_object_array_add(lpc, json_object_new_uint64(rec->lost_per_cpu[i]));
	json_object_object_add(f, "lost_per_cpu", lpc);
	/* Never silent: samples the kernel throttled, and samples of processes not recorded. */
	json_object_object_add(f, "throttled", json_object_new_uint64(rec->throttled));
	json_object_object_add(f, "foreign_events", json_object_new_uint64(rec->unknown));
	threads = json_object_new_array();
	for (k = 0; k < t->nr_summary; k++) {
		if (t->summary[k].tid < 0)
			continue;
		th = json_object_new_object();
		json_object_object_add(th, "tid", json_object_new_int(t->summary[k].tid));
		json_object_object_add(th, "name", jstr_utf8(t->summary[k].name));
		json_object_array_add(threads, th);
	}
	json_object_object_add(f, "threads", threads);
	if (gil_rawfile_finish(t->file, f) < 0) {
		rec_set_err(rec, "%s", gil_rawfile_error(t->file));
		ret = -1;
	}
	json_object_put(f);
	return ret;
}
