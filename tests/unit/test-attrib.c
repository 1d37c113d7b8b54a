// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Attribution: the built-in table and _Py_DebugOffsets held against the DWARF of every
 * interpreter on this machine, the fetchargs of clones and inlined copies, and the function
 * table's refusal to believe what a faulting read left behind.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <fcntl.h>
#include <glob.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include <cmocka.h>

#include "attrib/attrib.h"
#include "elftest.h"

#define LAYOUT_FIELDS(X)                                                                           \
	X(frame) X(ts_frame) X(cframe_current) X(frame_code) X(code_tagged) X(code_name)            \
	X(qualname) X(code_filename) X(code_firstlineno) X(ob_type) X(tp_name) X(ascii_size)        \
	X(state) X(compact_bit) X(ascii_bit) X(req) X(req_off) X(ts_interp) X(interp_id)           \
	X(interp_own_gil) X(interp_gil)

static void same_layout(const char *what, const struct gil_layout *a, const struct gil_layout *b)
{
#define CMP(f)                                                                                     \
	if ((int64_t)a->f != (int64_t)b->f) {                                                      \
		print_error("%s: %s differs: %lld vs %lld\n", what, #f, (long long)a->f,          \
			    (long long)b->f);                                                      \
		fail();                                                                            \
	}
	LAYOUT_FIELDS(CMP)
#undef CMP
	if (strcmp(a->req_arg, b->req_arg)) {
		print_error("%s: req_arg %s vs %s\n", what, a->req_arg, b->req_arg);
		fail();
	}
}

static const char *pyenv_root(void)
{
	static char buf[512];
	const char *r = getenv("PYENV_ROOT");

	if (r && *r)
		return r;
	snprintf(buf, sizeof(buf), "%s/.pyenv", getenv("HOME") ? getenv("HOME") : "/root");
	return buf;
}

/* libpython3.MINOR (3.6, 3.7: libpython3.MINORm) of a pyenv build, or NULL. */
static char *pyenv_lib(int minor)
{
	char pat[768], *out = NULL;
	glob_t g;

	snprintf(pat, sizeof(pat), "%s/versions/3.%d.*/lib/libpython3.%d%s.so.1.0", pyenv_root(),
		 minor, minor, minor < 8 ? "m" : "");
	if (glob(pat, 0, NULL, &g) == 0 && g.gl_pathc)
		out = strdup(g.gl_pathv[g.gl_pathc - 1]);
	globfree(&g);
	return out;
}

/* The tests that read DWARF: a build without libdw has none to read (gil_layout_dwarf says so). */
static void need_libdw(void)
{
#ifndef HAVE_LIBDW
	skip();
#endif
}

/* The table row of every release 3.8 - 3.13 equals what that build's DWARF says. */
static void test_table_matches_dwarf(void **state)
{
	struct gil_layout dw;
	char err[256], what[64];
	int minor, checked = 0;
	char *lib;

	need_libdw();
	for (minor = 8; minor <= 13; minor++) {
		lib = pyenv_lib(minor);
		if (!lib)
			continue;
		assert_non_null(gil_layout_table(300 + minor));
		if (gil_layout_dwarf(lib, &dw, err, sizeof(err)) < 0) {
			print_error("%s: %s\n", lib, err);
			fail();
		}
		snprintf(what, sizeof(what), "pyenv 3.%d", minor);
		same_layout(what, &dw, gil_layout_table(300 + minor));
		checked++;
		free(lib);
	}
	if (!checked)
		skip();
	print_message("table = DWARF for %d pyenv builds\n", checked);
}

/* Debian's 3.11 (another patch release, LTO): the debug file's layout is the table's too. */
static void test_table_matches_debian_dwarf(void **state)
{
	struct gil_layout dw;
	char err[256], cmd[] = "readelf -n /usr/bin/python3.11 2>/dev/null | "
			       "sed -n 's/.*Build ID: //p'";
	char bid[256] = "", path[512];
	FILE *p;

	need_libdw();
	if (access("/usr/bin/python3.11", X_OK))
		skip();
	p = popen(cmd, "r");
	if (!p || !fgets(bid, sizeof(bid), p)) {
		if (p)
			pclose(p);
		skip();
	}
	pclose(p);
	bid[strcspn(bid, "\n")] = '\0';
	snprintf(path, sizeof(path), "/usr/lib/debug/.build-id/%.2s/%s.debug", bid, bid + 2);
	if (access(path, R_OK)) {
		print_message("%s absent: apt-get install python3.11-dbg\n", path);
		skip();
	}
	assert_int_equal(gil_layout_dwarf(path, &dw, err, sizeof(err)), 0);
	same_layout("debian 3.11", &dw, gil_layout_table(311));
}

/*
 * Debian arm64's 3.11 (the arm64 pass's root, where tools/arm64-vm.sh built it here): the
 * table's layout holds on AArch64 too (LP64, and nothing the probes read lies after a
 * pthread type), which lets a stock arm64 build be attributed without its debug file.
 */
static void test_table_matches_arm64_dwarf(void **state)
{
	const char *dir = getenv("GIL_ARM64_DIR") ? getenv("GIL_ARM64_DIR") : "/var/cache/giltrace/arm64";
	struct gil_layout dw;
	char err[256], path[600];

	(void)state;
	need_libdw();
	snprintf(path, sizeof(path), "%s/root/usr/lib/debug/.build-id/71/%s.debug", dir,
		 "37f6a41036431000fccbd8b4005f5c2f83b182");
	if (access(path, R_OK)) {
		print_message("%s absent (sh tools/arm64-vm.sh image)\n", path);
		skip();
	}
	assert_int_equal(gil_layout_dwarf(path, &dw, err, sizeof(err)), 0);
	same_layout("debian arm64 3.11", &dw, gil_layout_table(311));
}

/* Value of symbol @name in @lib's .symtab, by readelf (an independent reader); 0: none. */
static unsigned long long symbol_value(const char *lib, const char *name, unsigned long long *size)
{
	char cmd[1024], line[512];
	unsigned long long v = 0, sz = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "readelf -sW '%s' 2>/dev/null | awk '$8 == \"%s\" && $4 == "
		 "\"OBJECT\" { print $2, $3; exit }'", lib, name);
	p = popen(cmd, "r");
	if (!p)
		return 0;
	if (fgets(line, sizeof(line), p) && sscanf(line, "%llx %llu", &v, &sz) != 2)
		v = 0;
	pclose(p);
	if (size)
		*size = sz;
	return v;
}

/*
 * Before 3.8 the drop request is a global: 3.6's static gil_drop_request, 3.7's
 * _PyRuntime.ceval.gil_drop_request. The address DWARF gives is the symbol's, and the flag lies
 * inside the variable.
 */
static void test_global_request_before_38(void **state)
{
	static const char *const var[] = { "gil_drop_request", "_PyRuntime" };
	unsigned long long addr, size;
	struct gil_layout dw;
	int minor, checked = 0;
	char err[256], *lib;

	need_libdw();
	for (minor = 6; minor <= 7; minor++) {
		lib = pyenv_lib(minor);
		if (!lib)
			continue;
		if (gil_layout_dwarf(lib, &dw, err, sizeof(err)) < 0) {
			print_error("%s: %s\n", lib, err);
			fail();
		}
		addr = symbol_value(lib, var[minor - 6], &size);
		assert_true(addr != 0);
		assert_int_equal(dw.req, GIL_REQ_GLOBAL);
		assert_string_equal(dw.req_arg, "");
		assert_int_equal(dw.req_addr, addr);
		assert_true(dw.req_off >= 0 && (unsigned long long)dw.req_off + 4 <= size);
		if (minor == 6)
			assert_int_equal(dw.req_off, 0);
		checked++;
		free(lib);
	}
	if (!checked)
		skip();
	print_message("drop request found as a global in %d pyenv builds\n", checked);
}

/* 3.13's _Py_DebugOffsets, read from the file's data, agree with its DWARF. */
static void test_debug_offsets_match_dwarf(void **state)
{
	struct gil_layout dw, dbo;
	char err[256], *lib = pyenv_lib(13);

	need_libdw();
	if (!lib)
		skip();
	assert_int_equal(gil_layout_dwarf(lib, &dw, err, sizeof(err)), 0);
	if (gil_layout_debug_offsets(lib, &dbo, err, sizeof(err)) < 0) {
		print_error("%s: %s\n", lib, err);
		fail();
	}
	same_layout("3.13 debug offsets", &dw, &dbo);
	/* 3.12 has no _Py_DebugOffsets: refused, not misread */
	free(lib);
	lib = pyenv_lib(12);
	if (lib) {
		assert_int_equal(gil_layout_debug_offsets(lib, &dbo, err, sizeof(err)), -1);
		free(lib);
	}
}

/* The debug file of @exe under @root, by its build-id (readelf: an independent reader). */
static bool debug_file(const char *root, const char *exe, char *path, size_t len)
{
	char cmd[1024], bid[256] = "";
	FILE *p;

	snprintf(cmd, sizeof(cmd), "readelf -n '%s' 2>/dev/null | sed -n 's/.*Build ID: //p'", exe);
	p = popen(cmd, "r");
	if (!p)
		return false;
	if (!fgets(bid, sizeof(bid), p))
		bid[0] = '\0';
	pclose(p);
	bid[strcspn(bid, "\n")] = '\0';
	if (strlen(bid) < 4)
		return false;
	snprintf(path, len, "%s/usr/lib/debug/.build-id/%.2s/%s.debug", root, bid, bid + 2);
	return access(path, R_OK) == 0;
}

/*
 * Debian sid's python3.13, 3.14 and 3.15, stripped: their _Py_DebugOffsets, read at each minor
 * version's positions, give what the -dbg DWARF says, and so does the table (tagged
 * f_executable from 3.14, the drop request from debugger_support.eval_breaker).
 */
static void test_debug_offsets_sid(void **state)
{
	static const int64_t holder_path[3][4] = {
		{ 0x278, 0x10, 8, 0xa0 }, { 0x328, 0x10, 8, 0xa0 }, { 0x3a8, 0x10, 8, 0xb8 },
	};
	struct gil_layout dw, dbo;
	const char *root = gil_test_sid_root();
	char exe[600], dbg[900], err[512], what[64];
	int minor;

	need_libdw();
	if (!root) {
		print_message("no sid root: sh tools/sid-root.sh builds it\n");
		skip();
	}
	for (minor = 13; minor <= 15; minor++) {
		snprintf(exe, sizeof(exe), "%s/usr/bin/python3.%d", root, minor);
		assert_true(debug_file(root, exe, dbg, sizeof(dbg)));
		if (gil_layout_debug_offsets(exe, &dbo, err, sizeof(err)) < 0) {
			print_error("%s\n", err);
			fail();
		}
		assert_int_equal(dbo.version, 300 + minor);
		if (gil_layout_dwarf(dbg, &dw, err, sizeof(err)) < 0) {
			print_error("%s: %s\n", dbg, err);
			fail();
		}
		snprintf(what, sizeof(what), "sid 3.%d debug offsets", minor);
		same_layout(what, &dw, &dbo);
		snprintf(what, sizeof(what), "sid 3.%d table", minor);
		assert_non_null(gil_layout_table(300 + minor));
		same_layout(what, &dw, gil_layout_table(300 + minor));
		assert_true(dbo.code_tagged == (minor >= 14));
		/* the way to the GIL's holder, as the -dbg DWARF gives it (gdb, by hand) */
		assert_int_equal(dbo.rt_interp_head, holder_path[minor - 13][0]);
		assert_int_equal(dbo.interp_gil, holder_path[minor - 13][1]);
		assert_int_equal(dbo.gil_holder, holder_path[minor - 13][2]);
		assert_int_equal(dbo.ts_native_tid, holder_path[minor - 13][3]);
	}
}

/* A synthetic _PyRuntime start: the cookie, @version, free_threaded, 3.15's offsets. */
static void runtime_315(unsigned char *d, size_t len, uint64_t version, uint64_t ft)
{
	static const struct {
		size_t at;
		uint64_t v;
	} f[] = { { 208, 72 }, { 328, 0 },   { 384, 112 }, { 400, 128 }, { 416, 68 }, { 472, 8 },
		  { 488, 24 }, { 720, 32 }, { 736, 40 },  { 840, 24 } };
	size_t i;

	memset(d, 0, len);
	memcpy(d, "xdebugpy", 8);
	memcpy(d + 8, &version, 8);
	memcpy(d + 16, &ft, 8);
	for (i = 0; i < sizeof(f) / sizeof(f[0]); i++)
		memcpy(d + f[i].at, &f[i].v, 8);
}

/* Only known layouts are read: a pre-release, 3.16 or a free-threaded build is refused. */
static void test_debug_offsets_refused(void **state)
{
	unsigned char d[888];
	struct gil_layout l;
	char err[256];

	runtime_315(d, sizeof(d), 0x030f02f0, 0); /* 3.15.2 final */
	assert_int_equal(gil_layout_debug_offsets_buf(d, sizeof(d), &l, err, sizeof(err)), 0);
	assert_int_equal(l.version, 315);
	assert_int_equal(l.frame_code, 0);
	assert_int_equal(l.code_name, 128);
	assert_int_equal(l.req_off, 24);
	assert_true(l.code_tagged);
	runtime_315(d, sizeof(d), 0x030f00c1, 0); /* 3.15.0rc1: the layout is final */
	assert_int_equal(gil_layout_debug_offsets_buf(d, sizeof(d), &l, err, sizeof(err)), 0);
	runtime_315(d, sizeof(d), 0x030f00b3, 0); /* 3.15.0b3: before last_profiled_frame */
	assert_int_equal(gil_layout_debug_offsets_buf(d, sizeof(d), &l, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "pre-release"));
	runtime_315(d, sizeof(d), 0x031000a1, 0); /* 3.16.0a1 */
	assert_int_equal(gil_layout_debug_offsets_buf(d, sizeof(d), &l, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "layout is not known"));
	runtime_315(d, sizeof(d), 0x030c00f0, 0); /* 3.12 never had the structure */
	assert_int_equal(gil_layout_debug_offsets_buf(d, sizeof(d), &l, err, sizeof(err)), -1);
	runtime_315(d, sizeof(d), 0x030f02f0, 1);
	assert_int_equal(gil_layout_debug_offsets_buf(d, sizeof(d), &l, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "free-threaded"));
	runtime_315(d, sizeof(d), 0x030f02f0, 0);
	assert_int_equal(gil_layout_debug_offsets_buf(d, 700, &l, err, sizeof(err)), -1);
	d[0] = 'X';
	assert_int_equal(gil_layout_debug_offsets_buf(d, sizeof(d), &l, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "cookie"));
}

/* Fetchargs of one site by symbol, or NULL. */
static const char *site_args(const struct gil_symbols *s, const struct gil_attrib *a,
			     const char *symbol)
{
	size_t i;

	for (i = 0; i < s->nr_sites; i++)
		if (!strcmp(s->sites[i].symbol, symbol) && s->sites[i].role == GIL_SITE_ENTRY)
			return a->sites[i].fetchargs;
	return NULL;
}

/*
 * Every fetcharg fits the kernel's 63 characters; every field the decoder wants is there; the
 * type check (five more dereferences at every hit) only where frames may hold other objects.
 */
static void well_formed(const char *args, bool drop, bool typed)
{
	static const char *const fields[] = { "gil_fr=", "gil_fn=", "gil_fns=", "gil_file=",
					      "gil_files=", "gil_line=" };
	char *copy = strdup(args), *tok, *save = NULL;
	size_t i;

	assert_non_null(copy);
	for (tok = strtok_r(copy, " ", &save); tok; tok = strtok_r(NULL, " ", &save))
		assert_true(strlen(strchr(tok, '=') + 1) <= 63);
	free(copy);
	for (i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		assert_non_null(strstr(args, fields[i]));
	assert_true(!drop == !strstr(args, "gil_req="));
	assert_true(!typed == !strstr(args, "gil_ty="));
	/* the compact and ascii bits (5 and 6) in one two-bit field */
	assert_non_null(strstr(args, ":b2@5/8"));
}

/* 3.8: take_gil(ceval, tstate) and its clone take_gil.constprop.0(tstate) differ. */
static void test_clone_arguments_from_dwarf(void **state)
{
	struct gil_symbols *s;
	struct gil_attrib *a;
	const char *orig, *clone, *drop;
	char err[512], *lib = pyenv_lib(8);

	need_libdw();
	if (!lib)
		skip();
	assert_int_equal(gil_symbols_read(lib, NULL, &s, err, sizeof(err)), 0);
	assert_int_equal(gil_attrib_read(s, lib, "3.8.18", &a, err, sizeof(err)), 0);
	assert_int_equal(a->source, GIL_ATTR_SRC_DWARF);
	orig = site_args(s, a, "take_gil");
	clone = site_args(s, a, "take_gil.constprop.0");
	drop = site_args(s, a, "drop_gil");
	assert_non_null(orig);
	assert_non_null(clone);
	assert_non_null(drop);
	assert_non_null(strstr(orig, "gil_ts=%si:x64"));
	assert_non_null(strstr(clone, "gil_ts=%di:x64"));
	/* drop_gil(ceval, tstate): the frame through %si, the request at ceval (%di) + 12 */
	assert_non_null(strstr(drop, "gil_ts=%si:x64"));
	assert_non_null(strstr(drop, "gil_req=+12(%di):u32"));
	/* co_name at 112, compact ASCII data at 48 */
	assert_non_null(strstr(orig, "gil_fn=+48(+112(+32(+24(%si)))):string"));
	well_formed(orig, false, false);
	well_formed(clone, false, false);
	well_formed(drop, true, false);
	assert_int_equal(a->nr_attributed, 3);
	gil_attrib_free(a);
	gil_symbols_free(s);
	free(lib);
}

/* Debian 3.11: drop_gil inlined into PyEval_SaveThread and I/O functions keeps tstate in a
 * callee-saved register and ceval2 as a register plus an offset. */
static void test_inlined_arguments_from_dwarf(void **state)
{
	struct gil_symbols *s;
	struct gil_attrib *a;
	char err[512];
	size_t i, inlined = 0;

	if (access("/usr/bin/python3.11", X_OK) ||
	    gil_symbols_read("/usr/bin/python3.11", NULL, &s, err, sizeof(err)))
		skip();
	if (!s->nr_inlined) {
		gil_symbols_free(s);
		skip(); /* no debug symbols */
	}
	assert_int_equal(gil_attrib_read(s, "/usr/bin/python3.11", "3.11.2", &a, err, sizeof(err)),
			 0);
	assert_int_equal(a->source, GIL_ATTR_SRC_DWARF);
	for (i = 0; i < s->nr_sites; i++) {
		if (s->sites[i].role != GIL_SITE_ENTRY)
			continue;
		assert_non_null(a->sites[i].fetchargs);
		well_formed(a->sites[i].fetchargs, s->sites[i].fn == GIL_FN_DROP, false);
		if (strchr(s->sites[i].symbol, '@')) {
			inlined++;
			/* ceval2 = reg + 96; gil_drop_request at +8 of it */
			assert_non_null(strstr(a->sites[i].fetchargs, "gil_req=+104(%"));
		}
	}
	assert_true(inlined >= 1);
	print_message("Debian 3.11: %zu inlined drop_gil copies attributed\n", inlined);
	gil_attrib_free(a);
	gil_symbols_free(s);
}

/* ---- the function table ---- */

static struct gil_frame_raw good(const char *name, const char *file, int line)
{
	struct gil_frame_raw r = { 0 };

	r.tstate = 0x1000;
	r.frame = 0x2000;
	r.has_type = true;
	r.type = "code";
	r.type_len = 4;
	r.name = name;
	r.name_len = (int)strlen(name);
	r.name_compact = r.name_ascii = 1;
	r.file = file;
	r.file_len = (int)strlen(file);
	r.file_compact = r.file_ascii = 1;
	r.line = line;
	return r;
}

static void test_fntab_interns(void **state)
{
	struct gil_fntab *t = gil_fntab_alloc();
	struct gil_frame_raw a = good("Busy.spin", "/w.py", 13), b;
	const struct gil_fn *fn;
	uint32_t id;

	assert_non_null(t);
	assert_null(gil_fntab_get(t, 0));
	id = gil_fntab_intern(t, &a);
	assert_int_equal(id, 1);
	/* the same bytes again, from another sample buffer: the same id */
	b = good("Busy.spin extra", "/w.py", 13);
	b.name_len = 9;
	assert_int_equal(gil_fntab_intern(t, &b), id);
	fn = gil_fntab_get(t, id);
	assert_string_equal(fn->name, "Busy.spin");
	assert_string_equal(fn->file, "/w.py");
	assert_int_equal(fn->line, 13);
	assert_null(fn->why);
	/* another line or file is another function */
	b = good("Busy.spin", "/w.py", 14);
	assert_int_equal(gil_fntab_intern(t, &b), 2);
	b = good("Busy.spin", "/v.py", 13);
	assert_int_equal(gil_fntab_intern(t, &b), 3);
	assert_int_equal(gil_fntab_size(t), 3);
	gil_fntab_free(t);
}

static void test_fntab_never_guesses(void **state)
{
	struct gil_fntab *t = gil_fntab_alloc();
	struct gil_frame_raw r;
	const struct gil_fn *fn;
	uint32_t id;

	/* a faulting chain: the strings are empty, the numbers are what the last hit left */
	r = good("stale", "/stale.py", 77);
	r.type = NULL;
	r.type_len = -1;
	fn = gil_fntab_get(t, gil_fntab_intern(t, &r));
	assert_string_equal(fn->why, "frame not readable");
	assert_null(fn->name);
	assert_null(fn->file);
	assert_int_equal(fn->line, -1);
	/* 3.13 entry frames hold None, not a code object */
	r = good("x", "/x.py", 1);
	r.type = "NoneType";
	r.type_len = 8;
	fn = gil_fntab_get(t, gil_fntab_intern(t, &r));
	assert_string_equal(fn->why, "frame does not hold a code object");
	assert_null(fn->name);
	/* "codex" is not "code" */
	r.type = "codex";
	r.type_len = 5;
	assert_string_equal(gil_fntab_get(t, gil_fntab_intern(t, &r))->why,
			    "frame does not hold a code object");
	r = good("x", "/x.py", 1);
	r.frame = 0;
	assert_string_equal(gil_fntab_get(t, gil_fntab_intern(t, &r))->why, "no Python frame");
	r.tstate = 0;
	assert_string_equal(gil_fntab_get(t, gil_fntab_intern(t, &r))->why, "no thread state");
	/* the same reason twice is one entry */
	id = gil_fntab_intern(t, &r);
	assert_int_equal(gil_fntab_intern(t, &r), id);
	gil_fntab_free(t);
}

/* Before 3.13 no type is read: the name string is what proves the frame was readable. */
static void test_fntab_untyped(void **state)
{
	struct gil_fntab *t = gil_fntab_alloc();
	struct gil_frame_raw r = good("spin", "/w.py", 13);
	const struct gil_fn *fn;

	r.has_type = false;
	r.type = NULL;
	r.type_len = -1;
	fn = gil_fntab_get(t, gil_fntab_intern(t, &r));
	assert_string_equal(fn->name, "spin");
	assert_int_equal(fn->line, 13);
	/* the name faulted: the line (stale) and file are not believed either */
	r.name = NULL;
	r.name_len = -1;
	fn = gil_fntab_get(t, gil_fntab_intern(t, &r));
	assert_string_equal(fn->why, "frame not readable");
	assert_null(fn->file);
	assert_int_equal(fn->line, -1);
	gil_fntab_free(t);
}

/* 3.13 has no clone here but its frames hold other objects: the type is read there. */
static void test_typed_on_313(void **state)
{
	struct gil_symbols *s;
	struct gil_attrib *a;
	char err[512], *lib = pyenv_lib(13);
	size_t i;

	if (!lib)
		skip();
	assert_int_equal(gil_symbols_read(lib, NULL, &s, err, sizeof(err)), 0);
	assert_int_equal(gil_attrib_read(s, lib, "3.13.0", &a, err, sizeof(err)), 0);
	for (i = 0; i < s->nr_sites; i++) {
		if (s->sites[i].role != GIL_SITE_ENTRY)
			continue;
		assert_non_null(a->sites[i].fetchargs);
		well_formed(a->sites[i].fetchargs, s->sites[i].fn == GIL_FN_DROP, true);
		/* the drop request is bit 0 of tstate->eval_breaker (+24) */
		if (s->sites[i].fn == GIL_FN_DROP)
			assert_non_null(strstr(a->sites[i].fetchargs, "gil_req=+24(%"));
	}
	gil_attrib_free(a);
	gil_symbols_free(s);
	free(lib);
}

/*
 * 3.14's f_executable is a tagged _PyStackRef, and a fetcharg cannot mask: every read through
 * the code object is made a second time one byte lower (exact when the tag is 1), and the tag
 * is read, for the decoder to choose. Debian sid's 3.14 with its -dbg DWARF: take_gil's clone
 * has tstate in %di.
 */
static void test_tagged_executable(void **state)
{
	const char *root = gil_test_sid_root(), *args;
	struct gil_symbols *s;
	struct gil_attrib *a;
	char exe[600], err[512];
	size_t i, n = 0, take = 0;

	need_libdw();
	if (!root)
		skip();
	snprintf(exe, sizeof(exe), "%s/usr/bin/python3.14", root);
	assert_int_equal(gil_symbols_read(exe, root, &s, err, sizeof(err)), 0);
	assert_int_equal(gil_attrib_read(s, exe, s->version, &a, err, sizeof(err)), 0);
	assert_int_equal(a->source, GIL_ATTR_SRC_DWARF);
	assert_true(a->layout.code_tagged);
	for (i = 0; i < s->nr_sites; i++) {
		args = a->sites[i].fetchargs;
		if (!args)
			continue;
		well_formed(args, s->sites[i].fn == GIL_FN_DROP, true);
		assert_non_null(strstr(args, "gil_tag=+0(+72(%"));
		assert_non_null(strstr(args, ":b2@0/8"));
		n++;
		if (strcmp(s->sites[i].symbol, "take_gil.lto_priv.0") ||
		    s->sites[i].role != GIL_SITE_ENTRY)
			continue;
		/* the untagged reads, then the same at offsets one lower */
		assert_non_null(strstr(args, "gil_fn=+40(+128(+0(+72(%di)))):string "));
		assert_non_null(strstr(args, "gil_ty=+0(+24(+8(+0(+72(%di))))):string "));
		assert_non_null(strstr(args, "gil_tag=+0(+72(%di)):b2@0/8 "));
		assert_non_null(strstr(args, "gil_tty=+0(+24(+7(+0(+72(%di))))):string "));
		assert_non_null(strstr(args, "gil_tfn=+40(+127(+0(+72(%di)))):string "));
		assert_non_null(strstr(args, "gil_tfns=+32(+127(+0(+72(%di)))):b2@5/8 "));
		assert_non_null(strstr(args, "gil_tfile=+40(+111(+0(+72(%di)))):string "));
		assert_non_null(strstr(args, "gil_tline=+67(+0(+72(%di))):s32"));
		take++;
	}
	assert_true(n > 0);
	assert_int_equal(take, 1);
	gil_attrib_free(a);
	gil_symbols_free(s);
}

/*
 * A build without symbols: take_gil and drop_gil found from the code, _Py_HandlePending standing
 * for the copy inlined into it, and the copies of drop_gil LTO inlined elsewhere found from the
 * code (PyEval_SaveThread's among them). Attribution reads the frame at each: take_gil's tstate
 * argument (with the code object's type checked), _Py_HandlePending's tstate with its drop
 * request, at drop_gil the GIL's holder from _PyRuntime through _Py_DebugOffsets, and at each
 * copy the holder in the field before `locked`, through the copy's own store's address
 * register; both with the holder's native thread id for the decoder.
 */
static void test_fallback_sites_attributed(void **state)
{
	const char *root = gil_test_sid_root(), *save, *restore;
	struct gil_symbols *s;
	struct gil_attrib *a;
	char exe[600], err[512];
	size_t i, copies = 0;

	if (!root)
		skip();
	snprintf(exe, sizeof(exe), "%s/usr/bin/python3.14", root);
	/* a root without the debug files: the stock image */
	assert_int_equal(gil_symbols_read(exe, "/nonexistent", &s, err, sizeof(err)), 0);
	assert_false(s->approximate);
	assert_int_equal(gil_attrib_read(s, exe, s->version, &a, err, sizeof(err)), 0);
	assert_int_equal(a->source, GIL_ATTR_SRC_DEBUG_OFFSETS);
	save = site_args(s, a, "drop_gil@PyEval_SaveThread");
	restore = site_args(s, a, "take_gil");
	assert_non_null(save);
	assert_non_null(restore);
	well_formed(save, true, true);
	well_formed(restore, false, true);
	assert_non_null(strstr(restore, "gil_fr=+72(%di):x64"));
	assert_non_null(strstr(restore, "gil_ty="));
	well_formed(site_args(s, a, "drop_gil"), true, true);
	assert_non_null(strstr(site_args(s, a, "drop_gil"), "gil_htid="));
	/* _Py_HandlePending's copy, in its .cold part, replaces the host's entry: it reads the
	 * request through the holder, as every copy does */
	for (i = 0; i < s->nr_sites; i++)
		assert_string_not_equal(s->sites[i].symbol, "_Py_HandlePending");
	assert_non_null(site_args(s, a, "drop_gil@_Py_HandlePending"));
	assert_non_null(strstr(site_args(s, a, "drop_gil@_Py_HandlePending"), "gil_req=+24(+8(%"));
	/* last_holder (-8 from locked) through the store's register; its thread id; its request */
	assert_non_null(strstr(save, "gil_ts=+8(%"));
	assert_non_null(strstr(save, "gil_htid=+160(+8(%"));
	assert_non_null(strstr(save, "gil_req=+24(+8(%"));
	assert_non_null(strstr(save, "gil_tag="));
	for (i = 0; i < s->nr_sites; i++) {
		if (strcmp(s->sites[i].method, "code-inline") || s->sites[i].role != GIL_SITE_ENTRY)
			continue;
		well_formed(a->sites[i].fetchargs, true, true);
		copies++;
	}
	assert_true(copies >= 4);
	gil_attrib_free(a);
	gil_symbols_free(s);
}

/* A frame whose f_executable carries tag 1 is named from the tagged copy; tags 2 and 3 never. */
static void test_fntab_tag(void **state)
{
	struct gil_fntab *t = gil_fntab_alloc();
	struct gil_frame_raw r = {
		.tstate = 1, .frame = 0x1000, .has_type = true, .type = "code", .type_len = 4,
		.name = "f", .name_len = 1, .name_compact = 1, .name_ascii = 1,
		.file = "x.py", .file_len = 4, .file_compact = 1, .file_ascii = 1, .line = 3,
	};
	const struct gil_fn *fn;

	assert_non_null(t);
	r.tag = 1;
	fn = gil_fntab_get(t, gil_fntab_intern(t, &r));
	assert_null(fn->why);
	assert_string_equal(fn->name, "f");
	r.tag = 3;
	fn = gil_fntab_get(t, gil_fntab_intern(t, &r));
	assert_string_equal(fn->why, "frame does not hold a code object");
	gil_fntab_free(t);
}

/* An interpreter built for another architecture gets no fetchargs: the registers are x86-64's. */
static void test_other_architecture(void **state)
{
	char err[512], copy[] = "/tmp/gilattr-arch-XXXXXX", *lib = pyenv_lib(12);
	struct gil_symbols *s;
	struct gil_attrib *a;
	uint16_t em = 243; /* EM_RISCV, little-endian like the copied x86-64 file */
	FILE *in, *out;
	char buf[65536];
	size_t n;
	int fd;

	if (!lib)
		skip();
	fd = mkstemp(copy);
	assert_true(fd >= 0);
	in = fopen(lib, "rb");
	out = fdopen(fd, "wb");
	assert_non_null(in);
	assert_non_null(out);
	while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
		assert_int_equal(fwrite(buf, 1, n, out), n);
	fclose(in);
	assert_int_equal(fseek(out, 18, SEEK_SET), 0); /* e_machine */
	assert_int_equal(fwrite(&em, 2, 1, out), 1);
	assert_int_equal(fclose(out), 0);
	/* the unpatched file is attributed; the patched one is refused, with the reason */
	assert_int_equal(gil_symbols_read(lib, NULL, &s, err, sizeof(err)), 0);
	assert_int_equal(gil_attrib_read(s, lib, "3.12.1", &a, err, sizeof(err)), 0);
	assert_true(a->nr_attributed > 0);
	gil_attrib_free(a);
	assert_int_equal(gil_attrib_read(s, copy, "3.12.1", &a, err, sizeof(err)), 0);
	assert_int_equal(a->nr_attributed, 0);
	assert_non_null(a->why);
	assert_non_null(strstr(a->why, "x86-64 and AArch64 only"));
	gil_attrib_free(a);
	gil_symbols_free(s);
	unlink(copy);
	free(lib);
}

static void test_fntab_marks_non_ascii(void **state)
{
	struct gil_fntab *t = gil_fntab_alloc();
	struct gil_frame_raw r = good("schl", "/w.py", 25);
	const struct gil_fn *fn;

	/* compact but not ASCII (latin-1 "schläfer"): the bytes at the ASCII offset mean nothing */
	r.name_ascii = 0;
	fn = gil_fntab_get(t, gil_fntab_intern(t, &r));
	assert_null(fn->name);
	assert_string_equal(fn->why, "name not compact ASCII");
	assert_string_equal(fn->file, "/w.py");
	assert_int_equal(fn->line, 25);
	/* not compact at all */
	r = good("y", "/w.py", 30);
	r.name_compact = 0;
	assert_null(gil_fntab_get(t, gil_fntab_intern(t, &r))->name);
	/* a file that is not ASCII: the name stays */
	r = good("f", "/tmp/\xc3\xa9.py", 3);
	r.file_ascii = 0;
	fn = gil_fntab_get(t, gil_fntab_intern(t, &r));
	assert_string_equal(fn->name, "f");
	assert_null(fn->file);
	assert_string_equal(fn->why, "file not compact ASCII");
	/* an unreadable name (its pointer faulted) */
	r = good("z", "/w.py", 3);
	r.name = NULL;
	r.name_len = -1;
	fn = gil_fntab_get(t, gil_fntab_intern(t, &r));
	assert_null(fn->name);
	assert_string_equal(fn->why, "name not readable");
	gil_fntab_free(t);
}

static void test_fntab_many(void **state)
{
	struct gil_fntab *t = gil_fntab_alloc();
	const struct gil_fn *fn;
	struct gil_frame_raw r;
	char name[32], big[4096];
	uint32_t too_many;
	int i;

	for (i = 0; i < GIL_FNTAB_MAX; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		r = good(name, "/m.py", i);
		assert_int_equal(gil_fntab_intern(t, &r), (uint32_t)i + 1);
	}
	for (i = 0; i < GIL_FNTAB_MAX; i += 997) {
		snprintf(name, sizeof(name), "f%d", i);
		r = good(name, "/m.py", i);
		assert_int_equal(gil_fntab_intern(t, &r), (uint32_t)i + 1);
	}
	assert_int_equal(gil_fntab_capped(t)->over_max, 0);
	/* past the bound: one shared entry, each one counted */
	r = good("late", "/m.py", 1);
	too_many = gil_fntab_intern(t, &r);
	assert_int_equal(too_many, GIL_FNTAB_MAX + 1);
	assert_string_equal(gil_fntab_get(t, too_many)->why, "too many distinct functions");
	r = good("later", "/m.py", 2);
	assert_int_equal(gil_fntab_intern(t, &r), too_many);
	assert_int_equal(gil_fntab_capped(t)->over_max, 2);
	gil_fntab_free(t);

	/* a 4 KiB name is kept to its first GIL_FN_NAME_MAX bytes, and counted */
	t = gil_fntab_alloc();
	memset(big, 'n', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	r = good(big, "/m.py", 3);
	fn = gil_fntab_get(t, gil_fntab_intern(t, &r));
	assert_int_equal(strlen(fn->name), GIL_FN_NAME_MAX);
	assert_int_equal(gil_fntab_capped(t)->names_cut, 1);
	gil_fntab_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table_matches_dwarf),
		cmocka_unit_test(test_table_matches_debian_dwarf),
		cmocka_unit_test(test_table_matches_arm64_dwarf),
		cmocka_unit_test(test_debug_offsets_match_dwarf),
		cmocka_unit_test(test_debug_offsets_sid),
		cmocka_unit_test(test_debug_offsets_refused),
		cmocka_unit_test(test_global_request_before_38),
		cmocka_unit_test(test_clone_arguments_from_dwarf),
		cmocka_unit_test(test_inlined_arguments_from_dwarf),
		cmocka_unit_test(test_fntab_interns),
		cmocka_unit_test(test_fntab_never_guesses),
		cmocka_unit_test(test_fntab_untyped),
		cmocka_unit_test(test_typed_on_313),
		cmocka_unit_test(test_tagged_executable),
		cmocka_unit_test(test_fallback_sites_attributed),
		cmocka_unit_test(test_fntab_tag),
		cmocka_unit_test(test_other_architecture),
		cmocka_unit_test(test_fntab_marks_non_ascii),
		cmocka_unit_test(test_fntab_many),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
