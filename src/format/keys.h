/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The key names of the recording format (doc/format.md), one definition each, for the side that
 * writes them (format/writer.c, record/recfile.c) and the side that reads them back
 * (format/reader.c, convert/). A key renamed here is renamed in both.
 */
#ifndef GIL_FORMAT_KEYS_H
#define GIL_FORMAT_KEYS_H

/* ---- record types: {"<type>":{...}} ---- */
#define GIL_KEY_HEADER "header"
#define GIL_KEY_FOOTER "footer"
#define GIL_KEY_THREAD "thread"
#define GIL_KEY_LOST "lost" /* also the footer's count of lost events */
#define GIL_KEY_EXIT "exit"
#define GIL_KEY_FN "fn"
#define GIL_KEY_STEP "step" /* a step mark (gil_mark_step); also the footer's count of them */
#define GIL_KEY_NATIVE "native" /* a native caller's name; the footer's "natives" counts them */
#define GIL_KEY_NATIVES "natives" /* footer: {"named":N,"unnamed":N,"cut":N} */
#define GIL_KEY_NATIVE_ADDR "addr"
#define GIL_KEY_NATIVES_NAMED "named"
#define GIL_KEY_NATIVES_UNNAMED "unnamed"
#define GIL_KEY_NATIVES_CUT "cut"
#define GIL_KEY_NATIVES_READ "read" /* intervals that read their native caller */

/* ---- inside thread, lost, exit and fn records ---- */
#define GIL_KEY_REC_TID "tid"
#define GIL_KEY_REC_NAME "name"
#define GIL_KEY_REC_TS "ts"
#define GIL_KEY_REC_CPU "cpu"
#define GIL_KEY_REC_COUNT "count"
#define GIL_KEY_REC_N "n" /* a step mark's number, when the program gave one */
#define GIL_KEY_FN_ID "id"
#define GIL_KEY_FN_NAME "name"
#define GIL_KEY_FN_FILE "file"
#define GIL_KEY_FN_LINE "line"
#define GIL_KEY_FN_UNREADABLE "unreadable"

/* ---- the header (record/recfile.c write_header) ---- */
#define GIL_KEY_TOOL "tool"
#define GIL_KEY_PID "pid"
#define GIL_KEY_RANK "rank"
#define GIL_KEY_RANK_SOURCE "rank_source"
#define GIL_KEY_CMDLINE "cmdline"
#define GIL_KEY_COMM "comm"
#define GIL_KEY_PYTHON_VERSION "python_version"
#define GIL_KEY_HOSTNAME "hostname"
#define GIL_KEY_RECORDER_PID "recorder_pid"
#define GIL_KEY_GROUP "group"
#define GIL_KEY_CLOCK "clock"
#define GIL_KEY_START_NS "start_ns"
#define GIL_KEY_CLOCK_OFFSETS "clock_offsets" /* header and footer */
#define GIL_KEY_OBJECT "object"
#define GIL_KEY_BUILD_ID "build_id"
#define GIL_KEY_SYMBOLS_FROM "symbols_from"
#define GIL_KEY_PROBES "probes"
#define GIL_KEY_APPROXIMATE "approximate"
#define GIL_KEY_APPROXIMATE_REASON "approximate_reason"
#define GIL_KEY_DWARF_FROM "dwarf_from"
#define GIL_KEY_ATTRIBUTION "attribution"
#define GIL_KEY_SITES_OVER_CAP "sites_over_cap" /* only when sites were left unprobed */

/* ---- one probe of the header's probes list ---- */
#define GIL_KEY_PROBE_FUNCTION "function"
#define GIL_KEY_PROBE_SYMBOL "symbol"
#define GIL_KEY_PROBE_ADDRESS "address"
#define GIL_KEY_PROBE_OFFSET "offset"
#define GIL_KEY_PROBE_METHOD "method"
#define GIL_KEY_PROBE_ROLE "role"
#define GIL_KEY_PROBE_RETURN "return_probe"
#define GIL_KEY_NOT_SEEN "releases_not_seen" /* footer: take_gil entered while holding */
#define GIL_KEY_UNGUARDED_EXITS "unguarded_exits" /* footer: exits that may have cut it short */
#define GIL_KEY_PROBE_HOST "releases" /* an exported function holding an inlined drop_gil */
#define GIL_KEY_PROBE_SKIPPED "skipped"
#define GIL_KEY_PROBE_APPROXIMATE "approximate"
#define GIL_KEY_PROBE_ATTRIBUTION "attribution"
#define GIL_KEY_PROBE_ATTRIBUTION_WHY "attribution_why"

/* ---- the header's attribution object ---- */
#define GIL_KEY_ATTR_ENABLED "enabled"
#define GIL_KEY_ATTR_OFFSETS_FROM "offsets_from"
#define GIL_KEY_ATTR_OFFSETS_FILE "offsets_file"
#define GIL_KEY_ATTR_QUALNAME "qualname"
#define GIL_KEY_ATTR_RELEASE_REASON "release_reason"
#define GIL_KEY_ATTR_ENTRY_SITES "entry_sites"
#define GIL_KEY_ATTR_ATTRIBUTED_SITES "attributed_sites"
#define GIL_KEY_ATTR_WHY "why"
#define GIL_KEY_ATTR_MODE "mode" /* "fast" or "full": what the probes read */
#define GIL_KEY_ATTR_INTERPRETERS "interpreters" /* true: intervals say their interpreter */

/* ---- inside clock_offsets: the other clocks minus CLOCK_MONOTONIC_RAW ---- */
#define GIL_KEY_OFFSET_MONOTONIC "monotonic_ns"
#define GIL_KEY_OFFSET_REALTIME "realtime_ns"

/* ---- the footer (record/recfile.c finish_target) ---- */
#define GIL_KEY_END_NS "end_ns"
#define GIL_KEY_REASON "reason"
#define GIL_KEY_EVENTS "events"
#define GIL_KEY_INTERVALS "intervals"
#define GIL_KEY_LOST_PER_CPU "lost_per_cpu"
#define GIL_KEY_THROTTLED "throttled"
#define GIL_KEY_FOREIGN_EVENTS "foreign_events"
#define GIL_KEY_THREADS "threads"
#define GIL_KEY_FUNCTION_CAPS "function_caps" /* only when a bound cut something */
#define GIL_KEY_CAPS_NAMES_CUT "names_cut"
#define GIL_KEY_CAPS_FILES_CUT "files_cut"
#define GIL_KEY_CAPS_OVER_MAX "over_max"
#define GIL_KEY_ALERTS "alerts" /* only with the watchdog (--alert-hold) */
#define GIL_KEY_ALERT_HOLD_NS "hold_ns" /* the threshold */
#define GIL_KEY_ALERT_COUNT "count" /* holds longer than it */
#define GIL_KEY_ALERT_HOLDS "holds" /* the first 1000 of them */
#define GIL_KEY_ALERT_START "start"
#define GIL_KEY_ALERT_DUR "dur"
#define GIL_KEY_ALERT_WAITERS "waiters"
#define GIL_KEY_ALERT_CUT "cut" /* holds past the first 1000 */

#endif /* GIL_FORMAT_KEYS_H */
