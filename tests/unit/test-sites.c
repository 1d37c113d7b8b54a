// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Unit tests for the sites of one object (src/elf/sites.c, classify.c, callgraph.c): endbr64
 * skipped at an entry, which interpreter a file is and why it gets no sites, the exported
 * stand-ins of the approximate fallback, and Debian's python3.11 found from its code alone.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <libelf.h>

#include "elf/symbols.h"
#include "elftest.h"

/* ---- endbr64, interpreter kinds, the exported fallback ------------------------------------- */

static void test_endbr64(void **state)
{
	char *path = xfmt("%s/endbr", tmpdir);
	struct synth sp = { .symtab = true, .build_id = bid_b, .endbr = true };
	const struct gil_site *site;
	struct gil_symbols *s;

	write_synth(path, &sp);
	s = read_ok(path, NULL);
	/* take_gil starts with endbr64: the probe goes on the next instruction, still an entry. */
	site = find_site(s, "take_gil");
	assert_non_null(site);
	assert_int_equal(site->skipped, 4);
	assert_int_equal(site->addr, S_TEXT_ADDR + 0x14);
	assert_int_equal(site->offset, S_TEXT_OFF + 0x14);
	assert_int_equal(site->size, 0x20);
	assert_true(site->retprobe);
	assert_int_equal(site->role, GIL_SITE_ENTRY);
	site = find_site(s, "drop_gil.constprop.0");
	assert_non_null(site);
	assert_int_equal(site->skipped, 0);
	assert_int_equal(site->addr, S_TEXT_ADDR + 0x40);
	gil_symbols_free(s);

	/* Other machines have no endbr64: the same bytes are left alone. */
	sp.machine = EM_AARCH64;
	write_synth(path, &sp);
	s = read_ok(path, NULL);
	site = find_site(s, "take_gil");
	assert_non_null(site);
	assert_int_equal(site->skipped, 0);
	assert_int_equal(site->addr, S_TEXT_ADDR + 0x10);
	gil_symbols_free(s);
	free(path);
}

#define FN(n, off) { n, S_TEXT_ADDR + (off), 0x10, STT_FUNC, false }

static void test_kinds(void **state)
{
	static const struct ssym ft[] = { FN("PyModule_Create2", 0xe0), FN("_Py_DecRefShared", 0xf0) };
	static const struct ssym ft2[] = { FN("_Py_MergeZeroLocalRefcount", 0xf0) };
	static const struct ssym py2[] = { FN("Py_InitModule4_64", 0xe0) };
	static const struct ssym pypy[] = { FN("pypy_setup_home", 0xe0) };
	static const struct ssym py3[] = { FN("PyModule_Create2", 0xe0) };
	static const struct ssym undef[] = {
		FN("PyModule_Create2", 0xe0),
		{ "_Py_DecRefShared", 0, 0, STT_FUNC, true }, /* imported is not defined */
	};
	static const struct {
		const struct ssym *dyn;
		size_t nr;
		enum gil_python_kind kind;
		size_t sites;
		const char *reason; /* after the path */
	} cases[] = {
		{ ft, ARRAY_SIZE(ft), GIL_PY_FREE_THREADED, 0,
		  " is a free-threaded CPython (built with Py_GIL_DISABLED): it has no GIL to record" },
		{ ft2, ARRAY_SIZE(ft2), GIL_PY_FREE_THREADED, 0,
		  " is a free-threaded CPython (built with Py_GIL_DISABLED): it has no GIL to record" },
		{ py2, ARRAY_SIZE(py2), GIL_PY_CPYTHON2, 0,
		  " is Python 2: it has no take_gil/drop_gil to probe (giltrace needs CPython 3.6 or later)" },
		{ pypy, ARRAY_SIZE(pypy), GIL_PY_PYPY, 0,
		  " is PyPy: it has no take_gil/drop_gil to probe (giltrace needs CPython 3.6 or later)" },
		{ py3, ARRAY_SIZE(py3), GIL_PY_CPYTHON, 2, NULL },
		{ undef, ARRAY_SIZE(undef), GIL_PY_CPYTHON, 2, NULL },
	};
	char *path = xfmt("%s/kind", tmpdir), *want;
	struct synth sp = { .symtab = true, .build_id = bid_b };
	struct gil_symbols *s;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		sp.dyn = cases[i].dyn;
		sp.nr_dyn = cases[i].nr;
		write_synth(path, &sp);
		s = read_ok(path, NULL);
		if (s->kind != cases[i].kind || s->nr_sites != cases[i].sites)
			fail_msg("case %zu: kind %d, %zu sites", i, (int)s->kind, s->nr_sites);
		assert_int_equal(s->has_take, cases[i].sites > 0);
		assert_int_equal(s->has_drop, cases[i].sites > 0);
		assert_false(s->approximate);
		if (cases[i].reason) {
			want = xfmt("%s%s", path, cases[i].reason);
			assert_non_null(s->reason);
			assert_string_equal(s->reason, want);
			free(want);
		} else {
			assert_null(s->reason);
		}
		gil_symbols_free(s);
	}
	free(path);
}

static void test_fallback(void **state)
{
	static const struct ssym exports[] = {
		FN("PyModule_Create2", 0xb0), FN("PyEval_SaveThread", 0xd0),
		FN("PyEval_RestoreThread", 0xe0),
		{ "Py_Version", S_DATA_ADDR, 4, STT_OBJECT, false },
	};
	static const struct ssym take_only[] = {
		FN("PyModule_Create2", 0xb0), FN("PyEval_SaveThread", 0xd0),
		FN("PyEval_RestoreThread", 0xe0), FN("take_gil", 0x10),
	};
	static const struct ssym no_api[] = { FN("main", 0xb0) };
	char *deb = xfmt("%s/fbdeb", tmpdir), *other = xfmt("%s/fbother", tmpdir);
	char *debobj = xfmt("%s/usr/bin/python3.11", deb), *p3 = xfmt("%s/usr/bin/python3", deb);
	char *otherobj = xfmt("%s/usr/bin/python3.11", other), *lib = xfmt("%s/usr/lib/libfoo.so", deb);
	char *ext = xfmt("%s/usr/lib/_ctypes.cpython-311-x86_64-linux-gnu.so", deb);
	char *libpy = xfmt("%s/usr/lib/libpython3.13.so.1.0", deb);
	char *flag = xfmt("%s/etc/debian_version", deb), *dir;
	struct synth sp = { .build_id = bid_b, .endbr = true, .dyn = exports,
			    .nr_dyn = ARRAY_SIZE(exports), .data_word = 0x030c04f0 };
	const struct gil_site *take, *drop;
	struct gil_symbols *s;

	dir = xfmt("%s/etc", deb);
	mkdirs(dir);
	free(dir);
	write_file(flag, "12.8\n", 5);
	dir = xfmt("%s/usr/bin", deb);
	mkdirs(dir);
	free(dir);
	dir = xfmt("%s/usr/lib", deb);
	mkdirs(dir);
	free(dir);
	dir = xfmt("%s/usr/bin", other);
	mkdirs(dir);
	free(dir);

	/* Stripped, no debug file, exports the C API: both functions approximated. */
	write_synth(debobj, &sp);
	s = read_ok(debobj, deb);
	print_sites(s);
	assert_int_equal(s->nr_sites, 2);
	assert_int_equal(s->kind, GIL_PY_CPYTHON);
	assert_true(s->approximate);
	assert_true(s->has_take);
	assert_true(s->has_drop);
	take = find_site(s, "PyEval_RestoreThread");
	drop = find_site(s, "PyEval_SaveThread");
	assert_non_null(take);
	assert_non_null(drop);
	assert_int_equal(take->fn, GIL_FN_TAKE);
	assert_int_equal(drop->fn, GIL_FN_DROP);
	assert_string_equal(take->method, "exported-fallback");
	assert_string_equal(drop->method, "exported-fallback");
	assert_true(take->approximate && drop->approximate);
	assert_true(take->retprobe && drop->retprobe);
	assert_int_equal(take->skipped, 0);
	assert_int_equal(take->addr, S_TEXT_ADDR + 0xe0);
	/* PyEval_SaveThread starts with endbr64 in this file. */
	assert_int_equal(drop->skipped, 4);
	assert_int_equal(drop->addr, S_TEXT_ADDR + 0xd4);
	assert_int_equal(drop->offset, S_TEXT_OFF + 0xd4);
	assert_string_equal(s->reason,
			    "releases are approximate: /usr/bin/python3.11 has no symbols for take_gil/drop_gil, so PyEval_RestoreThread/PyEval_SaveThread are probed in their place (forced switches are not seen); for exact sites, apt-get install python3.11-dbg in its container");
	gil_symbols_free(s);

	/* No version in the name: Py_Version (3.12.4) says which -dbg package. */
	write_synth(p3, &sp);
	s = read_ok(p3, deb);
	assert_non_null(s->reason);
	assert_non_null(strstr(s->reason, "apt-get install python3.12-dbg in its container"));
	gil_symbols_free(s);

	/* Not Debian: the debuginfo package, by the debug file it must provide. */
	write_synth(otherobj, &sp);
	s = read_ok(otherobj, other);
	assert_true(s->approximate);
	assert_non_null(strstr(s->reason,
			       "for exact sites, install its debuginfo package in its container (it provides /usr/lib/debug/.build-id/01/02030405060708090a0b0c0d0e0f10111213ff.debug)"));
	gil_symbols_free(s);

	/* take_gil has a symbol: only drop_gil is approximated. */
	sp.dyn = take_only;
	sp.nr_dyn = ARRAY_SIZE(take_only);
	write_synth(debobj, &sp);
	s = read_ok(debobj, deb);
	assert_int_equal(s->nr_sites, 2);
	assert_null(find_site(s, "PyEval_RestoreThread"));
	assert_true(find_site(s, "take_gil") && !find_site(s, "take_gil")->approximate);
	assert_true(find_site(s, "PyEval_SaveThread")->approximate);
	assert_true(s->approximate);
	assert_non_null(strstr(s->reason, "has no symbols for drop_gil, so PyEval_SaveThread is probed in its place"));
	gil_symbols_free(s);

	/* A stripped Python that exports nothing: no sites, and what to install. */
	sp.dyn = no_api;
	sp.nr_dyn = ARRAY_SIZE(no_api);
	write_synth(debobj, &sp);
	s = read_ok(debobj, deb);
	assert_int_equal(s->nr_sites, 0);
	assert_false(s->approximate);
	assert_string_equal(s->reason,
			    "/usr/bin/python3.11 has no symbols for take_gil/drop_gil and no debug file matching its build-id: apt-get install python3.11-dbg in its container");
	gil_symbols_free(s);

	/* So is a stripped libpython, which names its version. */
	write_synth(libpy, &sp);
	s = read_ok(libpy, deb);
	assert_int_equal(s->nr_sites, 0);
	assert_non_null(s->reason);
	assert_non_null(strstr(s->reason, "apt-get install python3.13-dbg"));
	gil_symbols_free(s);

	/* The same file under another name is not a Python: nothing to say. */
	write_synth(lib, &sp);
	s = read_ok(lib, deb);
	assert_int_equal(s->nr_sites, 0);
	assert_null(s->reason);
	gil_symbols_free(s);

	/* Nor is an extension module, although "python" is in its name. */
	write_synth(ext, &sp);
	s = read_ok(ext, deb);
	assert_int_equal(s->nr_sites, 0);
	assert_null(s->reason);
	gil_symbols_free(s);

	free(deb);
	free(other);
	free(debobj);
	free(p3);
	free(otherobj);
	free(lib);
	free(ext);
	free(libpy);
	free(flag);
}

/* Debian's python3.11 with its debug file out of reach: the exported entry points. */
static void test_debian_fallback(void **state)
{
	const char *py = "/usr/bin/python3.11";
	char *root = xfmt("%s/nodebug", tmpdir), *dir = xfmt("%s/etc", root);
	char *flag = xfmt("%s/debian_version", dir);
	struct gil_symbols *s;
	size_t i;

	if (access(py, R_OK)) {
		print_message("%s absent\n", py);
		free(root);
		free(dir);
		free(flag);
		skip();
	}
	mkdirs(dir);
	write_file(flag, "12.8\n", 5);
	s = read_ok(py, root);
	print_sites(s);
	/*
	 * No symbols: take_gil.lto_priv.0 and drop_gil.lto_priv.0 found from the code, at the
	 * addresses python3.11-dbg names (when installed), and PyEval_SaveThread for the copy LTO
	 * inlined into it. Never its .cold part, which a jump reaches and which names take_gil too.
	 */
	assert_int_equal(s->nr_sites, 3);
	assert_false(s->approximate);
	assert_null(s->reason);
	assert_null(s->dwarf_from);
	assert_string_equal(s->symbols_from, py);
	for (i = 0; i < s->nr_sites; i++)
		assert_false(s->sites[i].approximate);
	/* the exported one is where .dynsym says; the others where the debug file says */
	verify_real_site(py, s, find_site(s, "PyEval_SaveThread"));
	assert_string_equal(find_site(s, "take_gil")->method, "callgraph");
	assert_string_equal(find_site(s, "drop_gil")->method, "callgraph");
	assert_string_equal(find_site(s, "PyEval_SaveThread")->method, "exported-host");
	assert_int_equal(find_site(s, "PyEval_SaveThread")->host, GIL_HOST_ALWAYS);
	if (!access("/usr/lib/debug/.build-id", R_OK)) {
		struct gil_symbols *dbg = read_ok(py, NULL);
		const struct gil_site *t = find_site(dbg, "take_gil.lto_priv.0");
		const struct gil_site *d = find_site(dbg, "drop_gil.lto_priv.0");

		if (t && d) {
			assert_int_equal(find_site(s, "take_gil")->addr, t->addr);
			assert_int_equal(find_site(s, "take_gil")->size, t->size);
			assert_int_equal(find_site(s, "drop_gil")->addr, d->addr);
		}
		gil_symbols_free(dbg);
	}
	gil_symbols_free(s);
	free(root);
	free(dir);
	free(flag);
}

/* ---- main ---------------------------------------------------------------------------------- */

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_endbr64),
		cmocka_unit_test(test_kinds),
		cmocka_unit_test(test_fallback),
		cmocka_unit_test(test_debian_fallback),
	};

	return cmocka_run_group_tests(tests, elftest_setup, elftest_teardown);
}
