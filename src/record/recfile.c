// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * What a target's recording says of itself: the header's and footer's schema (doc/format.md).
 * Its records in between are the file sink's (sink-file.c).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "format/keys.h"
#include "state.h"
#include "recfile.h"

/* A JSON string of bytes from the system (comm, cmdline): '?' where they break UTF-8. */
static struct json_object *jstr_utf8(const char *s)
{
	char *u = gil_utf8_copy(s);
	struct json_object *o = json_object_new_string(u ? u : "");

	free(u);
	return o;
}

static struct json_object *offsets_json(const struct gil_clock_offsets *off)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, GIL_KEY_OFFSET_MONOTONIC,
			       json_object_new_int64(off->monotonic_ns));
	json_object_object_add(o, GIL_KEY_OFFSET_REALTIME, json_object_new_int64(off->realtime_ns));
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

	json_object_object_add(a, GIL_KEY_ATTR_ENABLED, json_object_new_boolean(on));
	if (on)
		json_object_object_add(a, GIL_KEY_ATTR_MODE,
				       json_object_new_string(rec->opts.attribution ==
							      GIL_ATTRIBUTION_FULL ? "full" : "fast"));
	if (at && at->source != GIL_ATTR_SRC_NONE) {
		json_object_object_add(a, GIL_KEY_ATTR_OFFSETS_FROM,
				       json_object_new_string(gil_attrib_source_name(at->source)));
		json_object_object_add(a, GIL_KEY_ATTR_OFFSETS_FILE,
				       at->from ? jstr_utf8(at->from) : NULL);
		json_object_object_add(a, GIL_KEY_ATTR_QUALNAME,
				       json_object_new_boolean(at->layout.qualname));
		json_object_object_add(a, GIL_KEY_ATTR_RELEASE_REASON,
				       json_object_new_boolean(at->layout.req != GIL_REQ_NONE));
		json_object_object_add(a, GIL_KEY_ATTR_ENTRY_SITES,
				       json_object_new_int64((int64_t)at->nr_entries));
		json_object_object_add(a, GIL_KEY_ATTR_ATTRIBUTED_SITES,
				       json_object_new_int64(o->nr_fetching));
	} else {
		json_object_object_add(a, GIL_KEY_ATTR_OFFSETS_FROM, NULL);
	}
	/* 3.12+: the entries read which interpreter and GIL (intervals of others say so) */
	if (on && at->layout.ts_interp > 0 && at->layout.interp_own_gil > 0)
		json_object_object_add(a, GIL_KEY_ATTR_INTERPRETERS, json_object_new_boolean(true));
	if (why)
		json_object_object_add(a, GIL_KEY_ATTR_WHY, json_object_new_string(why));
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

	json_object_object_add(h, GIL_KEY_TOOL,
			       json_object_new_string("giltrace " PACKAGE_VERSION));
	json_object_object_add(h, GIL_KEY_PID, json_object_new_int(t->pid));
	json_object_object_add(h, GIL_KEY_RANK, json_object_new_int(t->rank));
	json_object_object_add(h, GIL_KEY_RANK_SOURCE,
			       t->rank_source ? json_object_new_string(t->rank_source) : NULL);
	json_object_object_add(h, GIL_KEY_CMDLINE, jstr_utf8(t->cmdline ? t->cmdline : ""));
	json_object_object_add(h, GIL_KEY_COMM, jstr_utf8(t->comm));
	json_object_object_add(h, GIL_KEY_PYTHON_VERSION,
			       o->version[0] ? json_object_new_string(o->version) : NULL);
	json_object_object_add(h, GIL_KEY_HOSTNAME,
			       json_object_new_string(uname(&u) == 0 ? u.nodename : ""));
	json_object_object_add(h, GIL_KEY_RECORDER_PID, json_object_new_int(getpid()));
	json_object_object_add(h, GIL_KEY_GROUP, json_object_new_string(rec->probes->group));
	json_object_object_add(h, GIL_KEY_CLOCK, json_object_new_string(GIL_CLOCK_NAME));
	json_object_object_add(h, GIL_KEY_START_NS, json_object_new_uint64(t->start_ns));
	json_object_object_add(h, GIL_KEY_CLOCK_OFFSETS, offsets_json(&rec->off_start));
	/* paths are bytes a user chose: the file is JSON, so UTF-8 */
	json_object_object_add(h, GIL_KEY_OBJECT, jstr_utf8(o->path));
	json_object_object_add(h, GIL_KEY_BUILD_ID, json_object_new_string(o->syms->build_id));
	json_object_object_add(h, GIL_KEY_SYMBOLS_FROM,
			       jstr_utf8(o->syms->symbols_from ? o->syms->symbols_from : o->path));
	if (o->syms->nr_over_cap)
		json_object_object_add(h, GIL_KEY_SITES_OVER_CAP,
				       json_object_new_uint64(o->syms->nr_over_cap));
	for (i = 0; i < o->syms->nr_sites; i++) {
		s = &o->syms->sites[i];
		pr = json_object_new_object();
		json_object_object_add(
			pr, GIL_KEY_PROBE_FUNCTION,
			json_object_new_string(s->fn == GIL_FN_TAKE ? "take_gil" : "drop_gil"));
		json_object_object_add(pr, GIL_KEY_PROBE_SYMBOL, jstr_utf8(s->symbol));
		snprintf(hex, sizeof(hex), "0x%llx", (unsigned long long)s->addr);
		json_object_object_add(pr, GIL_KEY_PROBE_ADDRESS, json_object_new_string(hex));
		snprintf(hex, sizeof(hex), "0x%llx", (unsigned long long)s->offset);
		json_object_object_add(pr, GIL_KEY_PROBE_OFFSET, json_object_new_string(hex));
		json_object_object_add(pr, GIL_KEY_PROBE_METHOD, json_object_new_string(s->method));
		json_object_object_add(
			pr, GIL_KEY_PROBE_ROLE,
			json_object_new_string(s->role == GIL_SITE_EXIT ? "exit" : "entry"));
		json_object_object_add(pr, GIL_KEY_PROBE_RETURN,
				       json_object_new_boolean(s->retprobe));
		if (s->approximate)
			json_object_object_add(pr, GIL_KEY_PROBE_APPROXIMATE,
					       json_object_new_boolean(true));
		if (s->skipped)
			json_object_object_add(pr, GIL_KEY_PROBE_SKIPPED,
					       json_object_new_int((int)s->skipped));
		if (s->host != GIL_HOST_NONE)
			json_object_object_add(
				pr, GIL_KEY_PROBE_HOST,
				json_object_new_string(s->host == GIL_HOST_ALWAYS ? "every call" :
						       "when the drop request is set"));
		/* probes were made site by site: the entry (or exit) probe, then its return */
		gp = idx >= 0 && (size_t)idx < rec->probes->nr ? &rec->probes->v[idx] : NULL;
		idx += 1 + s->retprobe;
		if (o->attrib && s->role == GIL_SITE_ENTRY) {
			/* fast: take_gil reads nothing, named after the thread's last release */
			bool named = (gp && gp->fetches) ||
				     (rec->coderead && s->fn == GIL_FN_TAKE &&
				      o->attrib->sites[i].fetchargs && o->nr_fetching);

			json_object_object_add(pr, GIL_KEY_PROBE_ATTRIBUTION,
					       json_object_new_boolean(named));
			if (gp && !named)
				json_object_object_add(
					pr, GIL_KEY_PROBE_ATTRIBUTION_WHY,
					json_object_new_string(
						gp->fetch_refused[0]	  ? gp->fetch_refused
						: o->attrib->sites[i].why ? o->attrib->sites[i].why
									  : "not available"));
		}
		json_object_array_add(probes, pr);
	}
	json_object_object_add(h, GIL_KEY_PROBES, probes);
	/* Readers must not take approximate releases for exact ones: say so once, and why. */
	json_object_object_add(h, GIL_KEY_APPROXIMATE,
			       json_object_new_boolean(o->syms->approximate));
	if (o->syms->approximate && o->syms->reason)
		json_object_object_add(h, GIL_KEY_APPROXIMATE_REASON,
				       json_object_new_string(o->syms->reason));
	if (o->syms->dwarf_from)
		json_object_object_add(h, GIL_KEY_DWARF_FROM,
				       json_object_new_string(o->syms->dwarf_from));
	json_object_object_add(h, GIL_KEY_ATTRIBUTION, attribution_json(rec, o));
	ret = gil_rawfile_header(t->file, h);
	json_object_put(h);
	if (ret < 0)
		rec_set_err(rec, "%s", gil_rawfile_error(t->file));
	return ret;
}

/*
 * The footer of @t's file, its recording ended at @end for @reason; @not_seen releases were
 * not seen (0: the key is left out). The sinks add theirs. NULL: out of memory.
 */
struct json_object *rec_footer(const struct gil_recorder *rec, const struct target *t,
			       uint64_t end, const char *reason, uint64_t not_seen)
{
	const struct gil_fntab_caps *caps;
	struct json_object *f, *lpc;
	struct gil_clock_offsets off;
	int ncpu, i;

	gil_clock_offsets_sample(&off);
	f = json_object_new_object();
	if (!f)
		return NULL;
	json_object_object_add(f, GIL_KEY_END_NS, json_object_new_uint64(end));
	json_object_object_add(f, GIL_KEY_CLOCK_OFFSETS, offsets_json(&off));
	json_object_object_add(f, GIL_KEY_REASON, json_object_new_string(reason));
	json_object_object_add(f, GIL_KEY_EVENTS, json_object_new_uint64(t->events));
	json_object_object_add(f, GIL_KEY_INTERVALS,
			       json_object_new_uint64(gil_rawfile_intervals(t->file)));
	json_object_object_add(f, GIL_KEY_LOST, json_object_new_uint64(rec->lost));
	lpc = json_object_new_array();
	ncpu = gil_rings_nr_cpus(rec->rings);
	for (i = 0; i < ncpu; i++)
		json_object_array_add(lpc, json_object_new_uint64(rec->lost_per_cpu[i]));
	json_object_object_add(f, GIL_KEY_LOST_PER_CPU, lpc);
	/* Never silent: samples the kernel throttled, and samples of processes not recorded. */
	json_object_object_add(f, GIL_KEY_THROTTLED, json_object_new_uint64(rec->throttled));
	json_object_object_add(f, GIL_KEY_FOREIGN_EVENTS, json_object_new_uint64(rec->unknown));
	if (t->mobj >= 0)
		json_object_object_add(f, GIL_KEY_STEP, json_object_new_uint64(t->marks));
	if (rec->namer && t->nat.read) {
		struct json_object *nat = json_object_new_object();

		json_object_object_add(nat, GIL_KEY_NATIVES_READ, json_object_new_uint64(t->nat.read));
		json_object_object_add(nat, GIL_KEY_NATIVES_NAMED,
				       json_object_new_uint64(t->nat.named));
		/* asked, and named by nothing (or not in time): "unnamed native #N" */
		json_object_object_add(nat, GIL_KEY_NATIVES_UNNAMED,
				       json_object_new_uint64(t->nat.nr - t->nat.named));
		json_object_object_add(nat, GIL_KEY_NATIVES_CUT, json_object_new_uint64(t->nat.cut));
		json_object_object_add(f, GIL_KEY_NATIVES, nat);
	}
	if (not_seen)
		json_object_object_add(f, GIL_KEY_NOT_SEEN, json_object_new_uint64(not_seen));
	if (t->unguarded_exits)
		json_object_object_add(f, GIL_KEY_UNGUARDED_EXITS,
				       json_object_new_uint64(t->unguarded_exits));
	caps = gil_fntab_capped(rec->fntab);
	if (caps->names_cut || caps->files_cut || caps->over_max) {
		/* the recorder's table is shared by its targets: the counts are the recording's */
		struct json_object *c = json_object_new_object();

		json_object_object_add(c, GIL_KEY_CAPS_NAMES_CUT, json_object_new_uint64(caps->names_cut));
		json_object_object_add(c, GIL_KEY_CAPS_FILES_CUT, json_object_new_uint64(caps->files_cut));
		json_object_object_add(c, GIL_KEY_CAPS_OVER_MAX, json_object_new_uint64(caps->over_max));
		json_object_object_add(f, GIL_KEY_FUNCTION_CAPS, c);
	}
	return f;
}
