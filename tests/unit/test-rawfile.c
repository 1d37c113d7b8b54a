// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The recording format end to end: what rawfile.c writes, rawread.c reads back; a file cut at
 * any byte yields exactly its complete records; sysTrace files; every error message.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "giltrace.h"
#include "format/rawfile.h"
#include "common/util.h"

static char dir[] = "/tmp/test-rawfile.XXXXXX";
static int dirfd_;

static const struct gil_interval ivs[] = {
	{ .tid = 4242, .kind = GIL_KIND_TAKE, .start = 172163578940000, .dur = 3120 },
	{ .tid = 4242, .kind = GIL_KIND_HOLD, .start = 172163578943120, .dur = 602000 },
	{ .tid = 4243, .kind = GIL_KIND_TAKE, .start = 172163578941000, .dur = 604000,
	  .flags = GIL_F_BEGIN_UNKNOWN },
	{ .tid = 4242, .kind = GIL_KIND_DROP, .start = 172163579545120, .dur = 0,
	  .flags = GIL_F_TRUNCATED | GIL_F_LOST | GIL_F_RESYNC },
	{ .tid = 2147483647, .kind = GIL_KIND_HOLD, .start = 9223372036854775807ull,
	  .dur = 18446744073709551615ull, .flags = 4294967295u },
};

static char *path_of(const char *name)
{
	static char p[256];

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return p;
}

static void put_file(const char *name, const char *data, size_t n)
{
	FILE *f = fopen(path_of(name), "w");

	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, n, f), n);
	assert_int_equal(fclose(f), 0);
}

static char *get_file(const char *name, size_t *n)
{
	FILE *f = fopen(path_of(name), "r");
	char *buf;
	long len;

	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	rewind(f);
	buf = malloc((size_t)len + 1);
	assert_int_equal(fread(buf, 1, (size_t)len, f), (size_t)len);
	buf[len] = '\0';
	fclose(f);
	*n = (size_t)len;
	return buf;
}

/* A recording written by the writer, with every record type. */
static void write_sample(const char *name)
{
	struct json_object *header, *footer;
	struct gil_rawfile *w;
	char err[256];
	size_t i;

	unlinkat(dirfd_, name, 0);
	w = gil_rawfile_create(dirfd_, name, err, sizeof(err));
	assert_non_null(w);
	header = json_tokener_parse("{\"tool\":\"giltrace 0.1.0\",\"pid\":4242,\"rank\":3,"
				    "\"cmdline\":\"python3 -c \\\"x\\\"\",\"clock\":"
				    "\"CLOCK_MONOTONIC_RAW\",\"start_ns\":172163578931250,"
				    "\"clock_offsets\":{\"monotonic_ns\":-5,\"realtime_ns\":"
				    "1736236719758419750}}");
	footer = json_tokener_parse("{\"end_ns\":172164263870310,\"clock_offsets\":{"
				    "\"monotonic_ns\":-5,\"realtime_ns\":1736236719758420750},"
				    "\"reason\":\"duration\",\"lost\":12,\"threads\":[{\"tid\":4242,"
				    "\"name\":\"python3\"}]}");
	assert_int_equal(gil_rawfile_header(w, header), 0);
	assert_int_equal(gil_rawfile_thread(w, 4242, "python3", 172163578931250), 0);
	assert_int_equal(gil_rawfile_thread(w, 4243, "wörker \"1\"", 172163578931251), 0);
	for (i = 0; i < 3; i++)
		assert_int_equal(gil_rawfile_interval(w, &ivs[i]), 0);
	assert_int_equal(gil_rawfile_lost(w, 1, 12, 172163579545120), 0);
	for (; i < sizeof(ivs) / sizeof(ivs[0]); i++)
		assert_int_equal(gil_rawfile_interval(w, &ivs[i]), 0);
	assert_int_equal(gil_rawfile_exit(w, 4243, 172163579545999), 0);
	assert_int_equal(gil_rawfile_finish(w, footer), 0);
	assert_string_equal(gil_rawfile_error(w), "");
	assert_int_equal(gil_rawfile_intervals(w), 5);
	gil_rawfile_free(w);
	json_object_put(header);
	json_object_put(footer);
}

#define NREC 11 /* header, 2 threads, 3 intervals, lost, 2 intervals, exit, footer */

static void expect_record(const struct gil_record *rec, int i)
{
	static const enum gil_rec_type types[NREC] = {
		GIL_REC_HEADER, GIL_REC_THREAD, GIL_REC_THREAD, GIL_REC_INTERVAL, GIL_REC_INTERVAL,
		GIL_REC_INTERVAL, GIL_REC_LOST, GIL_REC_INTERVAL, GIL_REC_INTERVAL, GIL_REC_EXIT,
		GIL_REC_FOOTER,
	};
	static const int iv_index[NREC] = { -1, -1, -1, 0, 1, 2, -1, 3, 4, -1, -1 };
	struct json_object *v;

	assert_int_equal(rec->type, types[i]);
	if (iv_index[i] >= 0) {
		const struct gil_interval *e = &ivs[iv_index[i]];

		assert_int_equal(rec->iv.tid, e->tid);
		assert_int_equal(rec->iv.kind, e->kind);
		assert_int_equal(rec->iv.flags, e->flags);
		assert_true(rec->iv.start == e->start);
		assert_true(rec->iv.dur == e->dur);
	}
	switch (i) {
	case 0:
		assert_true(json_object_object_get_ex(rec->obj, "pid", &v));
		assert_int_equal(json_object_get_int(v), 4242);
		break;
	case 1:
		assert_int_equal(rec->tid, 4242);
		assert_string_equal(rec->name, "python3");
		assert_true(rec->ts == 172163578931250);
		break;
	case 2:
		assert_string_equal(rec->name, "wörker \"1\"");
		break;
	case 6:
		assert_int_equal(rec->cpu, 1);
		assert_true(rec->count == 12);
		assert_true(rec->ts == 172163579545120);
		break;
	case 9:
		assert_int_equal(rec->tid, 4243);
		assert_true(rec->ts == 172163579545999);
		break;
	case 10:
		assert_true(json_object_object_get_ex(rec->obj, "lost", &v));
		assert_int_equal(json_object_get_int(v), 12);
		break;
	}
}

/* Names are bytes (comm, a program's): the file stays UTF-8, '?' where they are not. */
static void test_utf8_names(void **state)
{
	static const struct {
		const char *in, *out;
		size_t valid;
	} cases[] = {
		{ "python3", "python3", 7 },
		{ "w\xc3\xb6rker", "w\xc3\xb6rker", 7 },		/* ö */
		{ "\xe5\xbc\xa0\xe4\xb8\x89", "\xe5\xbc\xa0\xe4\xb8\x89", 6 },	/* CJK */
		{ "\xf0\x9f\x90\x8d", "\xf0\x9f\x90\x8d", 4 },	/* U+1F40D */
		{ "a\xff" "b", "a?b", 1 },				/* never valid */
		{ "l\xe4uft", "l?uft", 1 },			/* latin-1 ä */
		{ "\xc0\xaf", "??", 0 },				/* overlong '/' */
		{ "\xed\xa0\x80", "???", 0 },			/* a surrogate */
		{ "cut\xe5\xbc", "cut??", 3 },			/* cut short */
	};
	struct json_object *header;
	struct gil_record rec;
	struct gil_rawfile *w;
	struct gil_reader *r;
	char err[256], *c;
	size_t i;
	int ret;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(gil_utf8_valid_len(cases[i].in), cases[i].valid);
		c = gil_utf8_copy(cases[i].in);
		assert_string_equal(c, cases[i].out);
		assert_int_equal(gil_utf8_valid_len(c), strlen(c));
		free(c);
	}
	unlinkat(dirfd_, "utf8.json", 0);
	w = gil_rawfile_create(dirfd_, "utf8.json", err, sizeof(err));
	assert_non_null(w);
	header = json_tokener_parse("{\"tool\":\"giltrace 0.1.0\",\"pid\":7,\"rank\":0,"
				    "\"clock\":\"CLOCK_MONOTONIC_RAW\",\"start_ns\":1}");
	assert_int_equal(gil_rawfile_header(w, header), 0);
	assert_int_equal(gil_rawfile_thread(w, 7, "l\xe4uft", 1), 0);
	gil_rawfile_free(w);
	json_object_put(header);
	r = gil_reader_open(path_of("utf8.json"), err, sizeof(err));
	assert_non_null(r);
	while ((ret = gil_reader_next(r, &rec)) > 0 && rec.type != GIL_REC_THREAD)
		;
	assert_int_equal(ret, 1);
	assert_string_equal(rec.name, "l?uft");
	gil_reader_close(r);
}

/* The per-thread "mostly in" counter: exact for few ids, keeps a heavy hitter among many. */
static void test_topk(void **state)
{
	uint32_t ids[4] = { 0 };
	uint64_t vals[4] = { 0 };
	size_t b;
	uint32_t i;

	assert_int_equal(ids[gil_topk_best(ids, vals, 4)], 0); /* empty */
	gil_topk_add(ids, vals, 4, 7, 10);
	gil_topk_add(ids, vals, 4, 9, 30);
	gil_topk_add(ids, vals, 4, 7, 25);
	b = gil_topk_best(ids, vals, 4);
	assert_int_equal(ids[b], 7);
	assert_int_equal(vals[b], 35);
	/* 1000 one-off ids against one that takes 40% of the total: it stays on top */
	for (i = 0; i < 1000; i++) {
		gil_topk_add(ids, vals, 4, 100 + i, 1);
		if (i % 3 == 0)
			gil_topk_add(ids, vals, 4, 42, 2);
	}
	b = gil_topk_best(ids, vals, 4);
	assert_int_equal(ids[b], 42);
	assert_true(vals[b] >= 2 * 334);
}

static void test_round_trip(void **state)
{
	struct gil_record rec;
	struct gil_reader *r;
	struct json_object *f, *v;
	char err[512];
	int i = 0, ret;
	size_t n;
	char *text;

	write_sample("round.json");
	text = get_file("round.json", &n);
	assert_memory_equal(text, GIL_RAWFILE_MAGIC "\n", sizeof(GIL_RAWFILE_MAGIC));
	assert_string_equal(text + n - 4, "\n]}\n");
	r = gil_reader_open(path_of("round.json"), err, sizeof(err));
	assert_non_null(r);
	assert_int_equal(gil_reader_format(r), GIL_INPUT_GILTRACE);
	/* the footer is known before the first record, and reading it moves nothing */
	f = gil_reader_footer(r);
	assert_non_null(f);
	assert_true(json_object_object_get_ex(f, "end_ns", &v));
	assert_true(json_object_get_int64(v) == 172164263870310);
	while ((ret = gil_reader_next(r, &rec)) > 0)
		expect_record(&rec, i++);
	assert_int_equal(ret, 0);
	assert_int_equal(i, NREC);
	assert_false(gil_reader_truncated(r));
	assert_int_equal(gil_reader_records(r), NREC);
	/* everything but the closing line */
	assert_int_equal(gil_reader_offset(r), n - 4);
	assert_int_equal(gil_reader_next(r, &rec), 0);
	gil_reader_close(r);
	free(text);
}

/* Where each record of @text ends: one record per line after the first. */
static size_t record_ends(const char *text, size_t n, size_t *ends, size_t max)
{
	size_t k = 0, i = 0, line = 0, start = 0;

	for (i = 0; i < n; i++) {
		if (text[i] != '\n')
			continue;
		if (line > 0 && text[start] != ']') {
			size_t e = i;

			if (text[e - 1] == ',')
				e--;
			assert_true(k < max);
			ends[k++] = e;
		}
		line++;
		start = i + 1;
	}
	return k;
}

static void read_prefix(const char *text, size_t n, size_t k, size_t zeros, const size_t *ends,
			size_t nends, size_t closed)
{
	struct gil_record rec;
	struct gil_reader *r;
	char err[512], *buf;
	size_t expect = 0, got = 0;
	int ret;

	buf = calloc(1, k + zeros + 1);
	memcpy(buf, text, k);
	put_file("cut.json", buf, k + zeros);
	free(buf);
	while (expect < nends && ends[expect] <= k)
		expect++;
	r = gil_reader_open(path_of("cut.json"), err, sizeof(err));
	if (!r)
		fail_msg("prefix %zu: %s", k, err);
	while ((ret = gil_reader_next(r, &rec)) > 0)
		expect_record(&rec, (int)got++);
	if (ret < 0)
		fail_msg("prefix %zu+%zu zeros: %s", k, zeros, gil_reader_error(r));
	if (got != expect)
		fail_msg("prefix %zu: %zu records, expected %zu", k, got, expect);
	assert_int_equal(gil_reader_records(r), expect);
	assert_int_equal(gil_reader_truncated(r), zeros || k < closed);
	assert_int_equal(gil_reader_offset(r), expect ? ends[expect - 1] : 0);
	assert_int_equal(gil_reader_format(r), GIL_INPUT_GILTRACE);
	/* a cut file has no footer to read ahead */
	if (k < ends[nends - 1])
		assert_null(gil_reader_footer(r));
	gil_reader_close(r);
	(void)n;
}

static void test_cut_everywhere(void **state)
{
	size_t n, k, ends[64], nends, closed;
	char *text;

	write_sample("whole.json");
	text = get_file("whole.json", &n);
	nends = record_ends(text, n, ends, 64);
	assert_int_equal(nends, NREC);
	closed = n - 1; /* after "]}" */
	for (k = 0; k <= n; k++) {
		read_prefix(text, n, k, 0, ends, nends, closed);
		/* a crash can leave a zero-filled tail: the same records, always cut */
		if (k < closed)
			read_prefix(text, n, k, 64, ends, nends, closed);
	}
	free(text);
}

/* A file with many records crosses the reader's 1 MiB buffer many times. */
static void test_large(void **state)
{
	struct gil_interval iv = { .tid = 7, .kind = GIL_KIND_HOLD };
	struct json_object *h, *f;
	struct gil_rawfile *w;
	struct gil_record rec;
	struct gil_reader *r;
	char err[256], *cmd;
	uint64_t i, n = 200000, seen = 0;
	int ret;

	/* a 3 MiB command line goes through the tokener in several chunks */
	cmd = malloc(3 << 20);
	memset(cmd, 'a', (3 << 20) - 1);
	cmd[(3 << 20) - 1] = '\0';
	h = json_object_new_object();
	json_object_object_add(h, "cmdline", json_object_new_string(cmd));
	f = json_object_new_object();
	unlinkat(dirfd_, "large.json", 0);
	w = gil_rawfile_create(dirfd_, "large.json", err, sizeof(err));
	assert_non_null(w);
	assert_int_equal(gil_rawfile_header(w, h), 0);
	for (i = 0; i < n; i++) {
		iv.start = 1000000000000000ull + i * 1000;
		iv.dur = i;
		iv.kind = (uint8_t)(i % 3);
		assert_int_equal(gil_rawfile_interval(w, &iv), 0);
	}
	assert_int_equal(gil_rawfile_finish(w, f), 0);
	gil_rawfile_free(w);
	r = gil_reader_open(path_of("large.json"), err, sizeof(err));
	assert_non_null(r);
	assert_int_equal(gil_reader_next(r, &rec), 1);
	assert_int_equal(rec.type, GIL_REC_HEADER);
	assert_int_equal(strlen(json_object_get_string(json_object_object_get(rec.obj,
									      "cmdline"))),
			 (3 << 20) - 1);
	while ((ret = gil_reader_next(r, &rec)) > 0) {
		if (rec.type != GIL_REC_INTERVAL)
			continue;
		assert_true(rec.iv.start == 1000000000000000ull + seen * 1000);
		assert_true(rec.iv.dur == seen);
		assert_int_equal(rec.iv.kind, seen % 3);
		seen++;
	}
	assert_int_equal(ret, 0);
	assert_true(seen == n);
	assert_false(gil_reader_truncated(r));
	gil_reader_close(r);
	json_object_put(h);
	json_object_put(f);
	free(cmd);
}

/* Spacing, extra elements, big numbers, unknown records: the general path. */
static void test_general_path(void **state)
{
	static const char text[] =
		"{ \"version\" : 1 , \"format\": \"giltrace\", \"x\": [1, {\"y\": 2}],\n"
		"  \"records\" : [\n"
		"[ 5 , 1 , 18446744073709551615 , 2 , 0 ] ,\n"
		"[5,0,7,8,1,\"attribution\",{\"later\":true}],\n"
		"[5,9,7,8,1],\n"
		"{\"future\":{\"a\":1}},\n"
		"null,\n"
		"[-3,2,10,0,0]\n,"
		"[6,1,20,5,4,17,-2]\n"
		"], \"more\": {\"k\": [1,2]} }\n";
	struct gil_record rec;
	struct gil_reader *r;
	char err[256];

	put_file("general.json", text, sizeof(text) - 1);
	r = gil_reader_open(path_of("general.json"), err, sizeof(err));
	assert_non_null(r);
	assert_int_equal(gil_reader_next(r, &rec), 1);
	assert_int_equal(rec.type, GIL_REC_INTERVAL);
	assert_true(rec.iv.start == 18446744073709551615ull);
	assert_int_equal(rec.iv.kind, GIL_KIND_HOLD);
	assert_int_equal(gil_reader_next(r, &rec), 1);
	assert_int_equal(rec.type, GIL_REC_INTERVAL);
	assert_int_equal(rec.iv.flags, 1);
	assert_int_equal(gil_reader_next(r, &rec), 1);
	assert_int_equal(rec.type, GIL_REC_UNKNOWN); /* kind 9: a later version's */
	assert_int_equal(gil_reader_next(r, &rec), 1);
	assert_int_equal(rec.type, GIL_REC_UNKNOWN);
	assert_non_null(rec.obj);
	assert_int_equal(gil_reader_next(r, &rec), 1);
	assert_int_equal(rec.type, GIL_REC_UNKNOWN);
	assert_null(rec.obj);
	assert_int_equal(gil_reader_next(r, &rec), 1);
	assert_int_equal(rec.type, GIL_REC_INTERVAL);
	assert_int_equal(rec.iv.tid, -3);
	/* more integers after flags: still an interval, still the fast path */
	assert_int_equal(gil_reader_next(r, &rec), 1);
	assert_int_equal(rec.type, GIL_REC_INTERVAL);
	assert_int_equal(rec.iv.tid, 6);
	assert_int_equal(rec.iv.flags, 4);
	assert_true(rec.iv.start == 20 && rec.iv.dur == 5);
	assert_int_equal(gil_reader_next(r, &rec), 0);
	assert_false(gil_reader_truncated(r));
	assert_int_equal(gil_reader_records(r), 7);
	gil_reader_close(r);
}

/*
 * Intervals of other interpreters (3.12+): [..., fn, reason, interp, gil], written only when
 * one of them is not 0 (fn and reason as zeros without attribution), read back by the fast
 * path and by the general one (spaces), and ignored past them.
 */
static void test_interpreters(void **state)
{
	static const struct gil_interval in[] = {
		{ .tid = 1, .kind = 1, .start = 10, .dur = 5 },
		{ .tid = 2, .kind = 0, .start = 11, .dur = 6, .interp = 3, .gil = 3 },
		{ .tid = 2, .kind = 2, .start = 17, .dur = 1, .fn = 7, .reason = 2, .interp = 4 },
	};
	static const char general[] =
		"{\"format\":\"giltrace\",\"version\":1,\"records\":[\n"
		"[ 9, 1, 5, 5, 0, 0, 0, 6, 6 ],\n[9,2,10,1,0,3,1,6,6,77]\n]}\n";
	struct json_object *h = json_tokener_parse("{\"pid\":1}");
	struct gil_record rec;
	struct gil_rawfile *w;
	struct gil_reader *r;
	char err[256], *text;
	size_t i, n;

	unlinkat(dirfd_, "interp.json", 0);
	w = gil_rawfile_create(dirfd_, "interp.json", err, sizeof(err));
	assert_non_null(w);
	assert_int_equal(gil_rawfile_header(w, h), 0);
	for (i = 0; i < 2; i++)
		assert_int_equal(gil_rawfile_interval(w, &in[i]), 0);
	gil_rawfile_set_attribution(w, true);
	assert_int_equal(gil_rawfile_interval(w, &in[2]), 0);
	assert_int_equal(gil_rawfile_finish(w, h), 0);
	gil_rawfile_free(w);
	json_object_put(h);
	text = get_file("interp.json", &n);
	assert_non_null(strstr(text, "\n[1,1,10,5,0],\n[2,0,11,6,0,0,0,3,3],\n[2,2,17,1,0,7,2,4,0]"));
	free(text);
	r = gil_reader_open(path_of("interp.json"), err, sizeof(err));
	assert_non_null(r);
	for (i = 0; i < 3; i++) {
		do
			assert_int_equal(gil_reader_next(r, &rec), 1);
		while (rec.type != GIL_REC_INTERVAL);
		assert_int_equal(rec.iv.tid, in[i].tid);
		assert_int_equal(rec.iv.interp, in[i].interp);
		assert_int_equal(rec.iv.gil, in[i].gil);
		assert_int_equal(rec.iv.fn, in[i].fn);
		assert_int_equal(rec.iv.reason, in[i].reason);
	}
	gil_reader_close(r);
	put_file("interp2.json", general, sizeof(general) - 1);
	r = gil_reader_open(path_of("interp2.json"), err, sizeof(err));
	assert_non_null(r);
	assert_int_equal(gil_reader_next(r, &rec), 1);
	assert_int_equal(rec.type, GIL_REC_INTERVAL);
	assert_int_equal(rec.iv.interp, 6);
	assert_int_equal(rec.iv.gil, 6);
	assert_int_equal(gil_reader_next(r, &rec), 1);
	assert_int_equal(rec.iv.interp, 6);
	assert_int_equal(rec.iv.fn, 3);
	assert_int_equal(gil_reader_next(r, &rec), 0);
	gil_reader_close(r);
	(void)state;
}

/* Function definitions of attribution come out as GIL_REC_FUNCTION, their fields read. */
static void test_functions(void **state)
{
	static const char text[] =
		GIL_RAWFILE_MAGIC "\n"
		"{\"fn\":{\"id\":3,\"name\":\"spin\",\"file\":\"/w.py\",\"line\":13}},\n"
		"{\"fn\":{\"id\":4,\"name\":null,\"file\":null,\"line\":null,"
		"\"unreadable\":\"no Python frame\"}},\n"
		"{\"fn\":{\"name\":\"x\",\"line\":99999999999}},\n"
		"{\"fn\":7}\n"
		"]}\n";
	struct gil_record rec;
	struct gil_reader *r;
	char err[256];

	(void)state;
	put_file("fn.json", text, sizeof(text) - 1);
	r = gil_reader_open(path_of("fn.json"), err, sizeof(err));
	assert_non_null(r);
	assert_int_equal(gil_reader_next(r, &rec), 1);
	assert_int_equal(rec.type, GIL_REC_FUNCTION);
	assert_int_equal(rec.fn.id, 3);
	assert_string_equal(rec.fn.name, "spin");
	assert_string_equal(rec.fn.file, "/w.py");
	assert_int_equal(rec.fn.line, 13);
	assert_null(rec.fn.why);
	assert_int_equal(gil_reader_next(r, &rec), 1);
	assert_int_equal(rec.type, GIL_REC_FUNCTION);
	assert_int_equal(rec.fn.id, 4);
	assert_null(rec.fn.name);
	assert_null(rec.fn.file);
	assert_int_equal(rec.fn.line, -1);
	assert_string_equal(rec.fn.why, "no Python frame");
	assert_int_equal(gil_reader_next(r, &rec), 1);
	assert_int_equal(rec.type, GIL_REC_FUNCTION);
	assert_int_equal(rec.fn.id, 0); /* none given */
	assert_int_equal(rec.fn.line, -1); /* out of range */
	assert_int_equal(gil_reader_next(r, &rec), 1);
	assert_int_equal(rec.type, GIL_REC_UNKNOWN); /* "fn" that is not an object */
	assert_int_equal(gil_reader_next(r, &rec), 0);
	assert_false(gil_reader_truncated(r));
	gil_reader_close(r);
}

static void test_systrace(void **state)
{
	static const char x[] =
		"[\n"
		"  {\"name\": \"take_gil\", \"ph\": \"X\", \"ts\": 1736408883694250, \"dur\": 3.120, "
		"\"pid\": \"0\", \"tid\": \"GIL_3096504\"},\n"
		"  {\"name\": \"drop_gil\", \"ph\": \"X\", \"ts\": 1736408883694853, \"dur\": 0.860, "
		"\"pid\": \"0\", \"tid\": \"GIL_3096504\"}\n"
		"]\n";
	static const char be[] = "[{\"name\":\"take_gil\",\"ph\":\"B\",\"ts\":1,\"pid\":\"1\","
				 "\"tid\":\"GIL_1\"},{\"ph\":\"E\",\"ts\":2,\"pid\":\"1\","
				 "\"tid\":\"GIL_1\"}";
	struct gil_systrace_stats ss;
	struct gil_record rec;
	int64_t pid;
	struct gil_reader *r;
	char err[256];

	put_file("GIL_3096504_rank_0.json", x, sizeof(x) - 1);
	r = gil_reader_open(path_of("GIL_3096504_rank_0.json"), err, sizeof(err));
	assert_non_null(r);
	assert_int_equal(gil_reader_format(r), GIL_INPUT_SYSTRACE);
	assert_null(gil_reader_footer(r));
	assert_true(gil_reader_systrace_pid(r, &pid));
	assert_int_equal(pid, 0);
	/* a take, then the drop completes a hold and itself; the digits survive exactly */
	assert_int_equal(gil_reader_next(r, &rec), 1);
	assert_int_equal(rec.type, GIL_REC_INTERVAL);
	assert_int_equal(rec.iv.kind, GIL_KIND_TAKE);
	assert_int_equal(rec.iv.tid, 3096504);
	assert_true(rec.iv.start == 1736408883694250000ull);
	assert_int_equal(rec.iv.dur, 3120);
	assert_int_equal(gil_reader_next(r, &rec), 1);
	assert_int_equal(rec.iv.kind, GIL_KIND_HOLD);
	assert_true(rec.iv.start == 1736408883694253120ull);
	assert_int_equal(rec.iv.dur, 599880);
	assert_int_equal(gil_reader_next(r, &rec), 1);
	assert_int_equal(rec.iv.kind, GIL_KIND_DROP);
	assert_int_equal(rec.iv.dur, 860);
	assert_int_equal(gil_reader_next(r, &rec), 0);
	assert_false(gil_reader_truncated(r));
	assert_int_equal(gil_reader_records(r), 2);
	assert_true(gil_reader_systrace_stats(r, &ss));
	assert_int_equal(ss.events, 2);
	assert_int_equal(ss.ignored, 0);
	gil_reader_close(r);

	/* the older B/E form, cut before its closing bracket: B then E make one take */
	put_file("be.json", be, sizeof(be) - 1);
	r = gil_reader_open(path_of("be.json"), err, sizeof(err));
	assert_non_null(r);
	assert_int_equal(gil_reader_format(r), GIL_INPUT_SYSTRACE);
	assert_int_equal(gil_reader_next(r, &rec), 1);
	assert_int_equal(rec.type, GIL_REC_INTERVAL);
	assert_int_equal(rec.iv.kind, GIL_KIND_TAKE);
	assert_int_equal(rec.iv.start, 1000);
	assert_int_equal(rec.iv.dur, 1000);
	assert_int_equal(gil_reader_next(r, &rec), 0);
	assert_true(gil_reader_truncated(r));
	gil_reader_close(r);

	/* the reference tool writes "[]" for nothing */
	put_file("empty.json", "[]\n", 3);
	r = gil_reader_open(path_of("empty.json"), err, sizeof(err));
	assert_non_null(r);
	assert_int_equal(gil_reader_format(r), GIL_INPUT_SYSTRACE);
	assert_int_equal(gil_reader_next(r, &rec), 0);
	assert_false(gil_reader_truncated(r));
	gil_reader_close(r);
}

/* @msg with its one "%s" replaced by @path (not a printf format: the tests pass their text). */
static void subst(char *out, size_t len, const char *msg, const char *path)
{
	const char *at = strstr(msg, "%s");

	assert_non_null(at);
	snprintf(out, len, "%.*s%s%s", (int)(at - msg), msg, path, at + 2);
}

static void expect_error(const char *name, const char *data, size_t n, const char *msg)
{
	char err[512], want[512];

	if (data)
		put_file(name, data, n);
	subst(want, sizeof(want), msg, path_of(name));
	assert_null(gil_reader_open(path_of(name), err, sizeof(err)));
	assert_string_equal(err, want);
}

static void test_open_errors(void **state)
{
	expect_error("missing.json", NULL, 0, "cannot open %s: No such file or directory");
	expect_error("text.json", "hello\n", 6, "%s: not JSON (it starts with 'h')");
	expect_error("gz.json", "\x1f\x8b\x08\x00", 4, "%s: compressed (gzip): decompress it first");
	expect_error("v2.json", "{\"format\":\"giltrace\",\"version\":2,\"records\":[\n", 46,
		     "%s: unsupported recording version 2 (this gil-convert reads version 1)");
	expect_error("other.json", "{\"format\":\"perf\",\"version\":1,\"records\":[", 40,
		     "%s: unknown format 'perf': not a giltrace recording");
	expect_error("obj.json", "{\"a\":1,\"records\":[]}", 20,
		     "%s: unknown format: a JSON object without \"format\":\"giltrace\"");
	expect_error("chrome.json", "{\"traceEvents\":[]}", 18,
		     "%s: a Chrome trace, not a recording (already converted?)");
	expect_error("conv.json", "[{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":1}]", 42,
		     "%s: unknown format: a JSON array, but not of take_gil/drop_gil events (a "
		     "converted trace?)");
	expect_error("noversion.json", "{\"format\":\"giltrace\",\"records\":[", 32,
		     "%s: giltrace recording without a valid \"version\"");
	expect_error("notobj.json", "{\"format\":\"giltrace\",\"version\":1}", 33,
		     "%s: not a recording: a JSON object without \"records\"");
	expect_error("cutjunk.json", "{\"traceE", 8, "%s: not JSON: the file ends inside its "
		     "first value");
	mkdir(path_of("adir"), 0755);
	expect_error("adir", NULL, 0, "%s: is a directory");
}

static void expect_next_error(const char *name, const char *data, int good, const char *msg)
{
	struct gil_record rec;
	struct gil_reader *r;
	char err[512], want[512];
	int i;

	put_file(name, data, strlen(data));
	r = gil_reader_open(path_of(name), err, sizeof(err));
	assert_non_null(r);
	for (i = 0; i < good; i++)
		assert_int_equal(gil_reader_next(r, &rec), 1);
	assert_int_equal(gil_reader_next(r, &rec), -1);
	subst(want, sizeof(want), msg, path_of(name));
	assert_string_equal(gil_reader_error(r), want);
	assert_int_equal(gil_reader_next(r, &rec), -1);
	gil_reader_close(r);
}

static void test_read_errors(void **state)
{
	expect_next_error("garbage.json", GIL_RAWFILE_MAGIC "\n#", 0,
			  "%s: invalid JSON at byte 45: unexpected character");
	expect_next_error("bad-iv.json", GIL_RAWFILE_MAGIC "\n[1,0,5,6,0],\n[1,2],\n", 1,
			  "%s: record 2: malformed interval");
	expect_next_error("neg-dur.json", GIL_RAWFILE_MAGIC "\n[1,0,5,-6,0]\n]}\n", 0,
			  "%s: record 1: malformed interval");
	expect_next_error("bad-thread.json", GIL_RAWFILE_MAGIC "\n{\"thread\":{\"name\":\"x\"}}\n",
			  0, "%s: record 1: malformed thread record");
	expect_next_error("bad-sep.json", GIL_RAWFILE_MAGIC "\n[1,0,5,6,0] [1,0,5,6,0]\n", 1,
			  "%s: invalid JSON: expected ',' or ']' between records");
	expect_next_error("trailing.json", GIL_RAWFILE_MAGIC "\n[1,0,5,6,0]\n]}\nxyz\n", 1,
			  "%s: unexpected data after the end of the recording");
	/* an event without a time makes no interval: the next record is the error */
	expect_next_error("sys-bad.json", "[{\"name\":\"take_gil\",\"ph\":\"X\"}, 5]", 0,
			  "%s: record 2: not an event object");
}

/* An empty file, or one cut inside its first line, is a recording that holds nothing yet. */
static void test_empty(void **state)
{
	static const char *const cases[] = { "", "\n", "{\"format\":\"gilt",
					     GIL_RAWFILE_MAGIC, GIL_RAWFILE_MAGIC "\n" };
	struct gil_record rec;
	struct gil_reader *r;
	char err[256];
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		put_file("empty-rec.json", cases[i], strlen(cases[i]));
		r = gil_reader_open(path_of("empty-rec.json"), err, sizeof(err));
		if (!r)
			fail_msg("case %zu: %s", i, err);
		assert_int_equal(gil_reader_format(r), GIL_INPUT_GILTRACE);
		assert_int_equal(gil_reader_next(r, &rec), 0);
		assert_true(gil_reader_truncated(r));
		assert_int_equal(gil_reader_records(r), 0);
		gil_reader_close(r);
	}
	/* a complete recording without intervals is not cut */
	put_file("empty-ok.json", GIL_RAWFILE_MAGIC "\n{\"header\":{}},\n{\"footer\":{}}\n]}\n",
		 sizeof(GIL_RAWFILE_MAGIC) + 32);
	r = gil_reader_open(path_of("empty-ok.json"), err, sizeof(err));
	assert_non_null(r);
	assert_int_equal(gil_reader_next(r, &rec), 1);
	assert_int_equal(gil_reader_next(r, &rec), 1);
	assert_int_equal(rec.type, GIL_REC_FOOTER);
	assert_int_equal(gil_reader_next(r, &rec), 0);
	assert_false(gil_reader_truncated(r));
	gil_reader_close(r);
}

static int setup(void **state)
{
	if (!mkdtemp(dir))
		return -1;
	dirfd_ = open(dir, O_RDONLY | O_DIRECTORY);
	return dirfd_ < 0 ? -1 : 0;
}

static int teardown(void **state)
{
	char cmd[300];

	close(dirfd_);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_utf8_names),   cmocka_unit_test(test_topk),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_cut_everywhere),
		cmocka_unit_test(test_large),        cmocka_unit_test(test_general_path),
		cmocka_unit_test(test_interpreters),
		cmocka_unit_test(test_functions), cmocka_unit_test(test_systrace),     cmocka_unit_test(test_open_errors),
		cmocka_unit_test(test_read_errors),  cmocka_unit_test(test_empty),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
