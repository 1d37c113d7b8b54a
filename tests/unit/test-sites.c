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
/*
 * Each copy of drop_gil @dbg's DWARF shows has a copy found from the code in @stock whose store
 * is a few instructions into it; as many of each. Returns the count.
 */
static size_t code_copies_match(const struct gil_symbols *dbg, const struct gil_symbols *stock)
{
	size_t i, k, copies = 0, code = 0;

	for (k = 0; k < dbg->nr_sites; k++) {
		const struct gil_site *w = &dbg->sites[k];
		bool found = false;

		if (strcmp(w->method, "dwarf-inline") || w->role != GIL_SITE_ENTRY)
			continue;
		copies++;
		for (i = 0; i < stock->nr_sites; i++)
			found |= !strcmp(stock->sites[i].method, "code-inline") &&
				 stock->sites[i].role == GIL_SITE_ENTRY &&
				 stock->sites[i].addr > w->addr && stock->sites[i].addr < w->addr + 128;
		if (!found)
			print_message("no code copy for %s at 0x%llx\n", w->symbol,
				      (unsigned long long)w->addr);
		assert_true(found);
	}
	for (i = 0; i < stock->nr_sites; i++)
		code += !strcmp(stock->sites[i].method, "code-inline") &&
			stock->sites[i].role == GIL_SITE_ENTRY;
	assert_int_equal(code, copies);
	return copies;
}

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
	 * addresses python3.11-dbg names (when installed), never the .cold part that a jump
	 * reaches and that names take_gil too; and the five copies of drop_gil LTO inlined into
	 * PyEval_SaveThread, os.stat, _Py_read, FileIO.write and os.listdir, each an entry at its
	 * store to `locked` and an exit after its mutex unlock (copies.c), where the debug file's
	 * DWARF has a copy.
	 */
	assert_int_equal(s->nr_sites, 12);
	assert_int_equal(s->nr_callgraph, 7);
	assert_false(s->approximate);
	assert_null(s->reason);
	assert_null(s->dwarf_from);
	assert_string_equal(s->symbols_from, py);
	for (i = 0; i < s->nr_sites; i++)
		assert_false(s->sites[i].approximate);
	assert_string_equal(find_site(s, "take_gil")->method, "callgraph");
	assert_string_equal(find_site(s, "drop_gil")->method, "callgraph");
	assert_string_equal(find_site(s, "drop_gil@PyEval_SaveThread")->method, "code-inline");
	assert_null(find_site(s, "PyEval_SaveThread")); /* the copy replaces the host's entry */
	if (!access("/usr/lib/debug/.build-id", R_OK)) {
		struct gil_symbols *dbg = read_ok(py, NULL);
		const struct gil_site *t = find_site(dbg, "take_gil.lto_priv.0");
		const struct gil_site *d = find_site(dbg, "drop_gil.lto_priv.0");
		size_t copies;

		if (t && d) {
			assert_int_equal(find_site(s, "take_gil")->addr, t->addr);
			assert_int_equal(find_site(s, "take_gil")->size, t->size);
			assert_int_equal(find_site(s, "drop_gil")->addr, d->addr);
		}
		copies = code_copies_match(dbg, s);
		/*
		 * and each ends where DWARF's copy does: after the forced switch's wait, which
		 * joins the main path again (copies.c, copy_exit)
		 */
		for (i = 0; i < s->nr_sites; i++) {
			size_t k;
			bool same = false;

			if (strcmp(s->sites[i].method, "code-inline") ||
			    s->sites[i].role != GIL_SITE_EXIT)
				continue;
			for (k = 0; k < dbg->nr_sites; k++)
				same |= dbg->sites[k].role == GIL_SITE_EXIT &&
					dbg->sites[k].addr == s->sites[i].addr;
			if (!same)
				print_message("exit 0x%llx is none of DWARF's\n",
					      (unsigned long long)s->sites[i].addr);
			assert_true(same);
		}
		assert_int_equal(copies, 5);
		gil_symbols_free(dbg);
	}
	gil_symbols_free(s);
	free(root);
	free(dir);
	free(flag);
}


/*
 * Debian sid's LTO builds with their debug files out of reach (the sid root, when tools/
 * sid-root.sh built it): the copies of drop_gil found from the code that DWARF also shows (its
 * entry a mutex lock before the store) end where DWARF's copies do, at one exit or more each
 * (a waiting block the compiler ended with a copy of the join's code has its own: copies.c,
 * copy_exit). Before, 5 of sid 3.13's 9 and 5 of 3.14's 6 ended after the unlock call instead.
 */
static void test_sid_exits_from_code(void **state)
{
	static const char *const versions[] = { "3.13", "3.14", "3.15" };
	const char *root = gil_test_sid_root();
	struct gil_symbols *s, *dbg;
	char py[600];
	size_t v, i, k, shown, exact;

	(void)state;
	if (!root)
		skip();
	for (v = 0; v < sizeof(versions) / sizeof(versions[0]); v++) {
		snprintf(py, sizeof(py), "%s/usr/bin/python%s", root, versions[v]);
		if (access(py, R_OK))
			continue;
		s = read_ok(py, "/nonexistent");
		dbg = read_ok(py, root);
		for (i = shown = exact = 0; i < s->nr_sites; i++) {
			const struct gil_site *c = &s->sites[i];
			bool dwarf = false;

			if (strcmp(c->method, "code-inline"))
				continue;
			for (k = 0; k < dbg->nr_sites; k++) {
				const struct gil_site *d = &dbg->sites[k];

				if (c->role == GIL_SITE_ENTRY && d->role == GIL_SITE_ENTRY &&
				    !strcmp(d->method, "dwarf-inline") && d->addr < c->addr &&
				    c->addr - d->addr < 0x100)
					dwarf = true;
				if (c->role == GIL_SITE_EXIT && d->role == GIL_SITE_EXIT &&
				    d->addr == c->addr)
					dwarf = true;
			}
			if (c->role == GIL_SITE_ENTRY)
				shown += dwarf;
			else
				exact += dwarf;
		}
		print_message("python%s: %zu copies DWARF shows, %zu exits where DWARF's are\n",
			      versions[v], shown, exact);
		assert_true(shown >= 4);
		assert_true(exact >= shown);
		gil_symbols_free(dbg);
		gil_symbols_free(s);
	}
}

/*
 * Debian arm64's python3.11 (the arm64 pass's root, when tools/arm64-vm.sh built it here) with
 * its debug file out of reach: take_gil and drop_gil found from the AArch64 code (names loaded
 * by adrp + add) where the debug file's symbol table puts them, and the copies of drop_gil
 * LTO inlined into PyEval_SaveThread and four I/O helpers where its DWARF shows them.
 */
static void test_arm64_from_code(void **state)
{
	const char *dir = getenv("GIL_ARM64_DIR") ? getenv("GIL_ARM64_DIR") : "/var/cache/giltrace/arm64";
	char *root = xfmt("%s/root", dir), *py = xfmt("%s/usr/bin/python3.11", root);
	char *debug = xfmt("%s/usr/lib/debug/.build-id", root);
	struct gil_symbols *s, *dbg;
	const struct gil_site *t, *d;
	bool absent = access(py, R_OK) || access(debug, R_OK);

	(void)state;
	free(debug);
	if (absent) {
		print_message("%s with its debug file absent (sh tools/arm64-vm.sh image)\n", py);
		free(root);
		free(py);
		skip();
	}
	s = read_ok(py, "/nonexistent");
	dbg = read_ok(py, root);
	print_sites(s);
	assert_false(s->approximate);
	assert_string_equal(find_site(s, "take_gil")->method, "callgraph");
	assert_string_equal(find_site(s, "drop_gil")->method, "callgraph");
	t = find_site(dbg, "take_gil.lto_priv.0");
	d = find_site(dbg, "drop_gil.lto_priv.0");
	assert_non_null(t);
	assert_non_null(d);
	assert_int_equal(find_site(s, "take_gil")->addr, t->addr);
	assert_int_equal(find_site(s, "take_gil")->size, t->size);
	assert_int_equal(find_site(s, "drop_gil")->addr, d->addr);
	assert_int_equal(find_site(s, "drop_gil")->size, d->size);
	assert_int_equal(code_copies_match(dbg, s), 5);
	gil_symbols_free(s);
	gil_symbols_free(dbg);
	free(root);
	free(py);
}

/* ---- main ---------------------------------------------------------------------------------- */

/* ---- every site proven against the file's own code --------------------------------------- */

/*
 * gil_site_prove() on a file whose code is known instruction by instruction, whatever a table
 * claims: the claims below are what a forged symbol table, debug file or cache entry could make.
 */
static void test_prove(void **state)
{
	unsigned char code[S_TEXT_SIZE];
	char *path = xfmt("%s/prove", tmpdir), why[256];
	struct synth sp = { .symtab = true, .build_id = bid_b, .code = code };
	static const struct {
		uint64_t off; /* from the text's start */
		unsigned int skipped;
		bool retprobe;
		enum gil_site_role role;
		uint64_t size;
		const char *refused; /* NULL: proven */
	} cases[] = {
		/* take_gil at 0x10 starts with endbr64: its entry and the step past it */
		{ 0x10, 0, true, GIL_SITE_ENTRY, 0x20, NULL },
		{ 0x14, 4, true, GIL_SITE_ENTRY, 0x20, NULL },
		/* instruction boundaries inside it: after push, after mov, at pop, at ret */
		{ 0x15, 0, false, GIL_SITE_ENTRY, 0, NULL },
		{ 0x18, 0, false, GIL_SITE_EXIT, 0, NULL },
		{ 0x22, 0, false, GIL_SITE_EXIT, 0, NULL },
		{ 0x23, 0, false, GIL_SITE_EXIT, 0, NULL },
		/* inside endbr64, inside the mov, inside the movabs */
		{ 0x12, 0, false, GIL_SITE_ENTRY, 0, "inside an instruction, not at its start" },
		{ 0x16, 0, false, GIL_SITE_EXIT, 0, "inside an instruction, not at its start" },
		{ 0x1a, 0, false, GIL_SITE_EXIT, 0, "inside an instruction, not at its start" },
		/* an entry that is not its function's start, or steps over what is not endbr64 */
		{ 0x15, 0, true, GIL_SITE_ENTRY, 0x10, "not the start of a function" },
		{ 0xd4, 4, true, GIL_SITE_ENTRY, 0x10, "steps over something other than endbr64/bti" },
		/* a function's entry claimed at a .cold part, which begins mid-frame */
		{ 0x80, 0, true, GIL_SITE_ENTRY, 0x8, "not the start of a function" },
		/* code no frame description covers: between functions, and past the last */
		{ 0x38, 0, true, GIL_SITE_ENTRY, 0x8, "in no function the file's frame descriptions know" },
		{ 0x34, 0, false, GIL_SITE_EXIT, 0, "in no function the file's frame descriptions know" },
		/* undecodable bytes before the site: refused, not guessed */
		{ 0x66, 0, false, GIL_SITE_EXIT, 0, "an instruction before it cannot be decoded" },
	};
	const uint64_t text_end = S_TEXT_ADDR + S_TEXT_SIZE;
	struct gil_symbols *s;
	struct gil_site site;
	uint64_t size;
	Elf *elf;
	size_t i;
	int fd;

	memset(code, 0xcc, sizeof(code)); /* int3 */
	/* take_gil 0x10: endbr64; push %rbp; mov %rsp,%rbp; movabs $1,%rax; pop %rbp; ret */
	memcpy(code + 0x10, "\xf3\x0f\x1e\xfa\x55\x48\x89\xe5\x48\xb8\x01\0\0\0\0\0\0\0\x5d\xc3",
	       20);
	memset(code + 0x24, 0x90, 0x0c);
	/* drop_gil.constprop.0 0x40: push %rbp; ret */
	memcpy(code + 0x40, "\x55\xc3", 2);
	/* drop_gil.isra.0 0x60: push; then 8f c8, AMD's XOP (not pop), which the decoder refuses */
	memcpy(code + 0x60, "\x55\x8f\xc8\x00\x00\x90\x90\xc3", 8);
	/* PyEval_SaveThread 0xd0: mov %rsp,%rbp (not endbr64) */
	memcpy(code + 0xd0, "\x48\x89\xe5\x90\x90\xc3", 6);
	write_synth(path, &sp);

	elf = open_elf(path, &fd);
	size = (uint64_t)lseek(fd, 0, SEEK_END);
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		memset(&site, 0, sizeof(site));
		site.fn = GIL_FN_TAKE;
		site.symbol = "claimed";
		site.role = cases[i].role;
		site.addr = S_TEXT_ADDR + cases[i].off;
		site.offset = S_TEXT_OFF + cases[i].off;
		site.size = cases[i].size;
		site.skipped = cases[i].skipped;
		site.retprobe = cases[i].retprobe;
		if (gil_site_prove(elf, size, &site, why, sizeof(why)) != (cases[i].refused != NULL))
			fail_msg("case %zu (0x%llx): %s", i, (unsigned long long)cases[i].off,
				 why[0] ? why : "proven, want refused");
		if (cases[i].refused && !strstr(why, cases[i].refused))
			fail_msg("case %zu: \"%s\", want \"%s\"", i, why, cases[i].refused);
	}
	/* the offset must be the one the segment gives, and the site inside the segment */
	site.addr = S_TEXT_ADDR + 0x10;
	site.offset = S_TEXT_OFF + 0x11;
	site.skipped = 0;
	site.retprobe = true;
	site.role = GIL_SITE_ENTRY;
	site.size = 0x20;
	assert_int_equal(gil_site_prove(elf, size, &site, why, sizeof(why)), 1);
	assert_non_null(strstr(why, "not in an executable segment of the file"));
	site.addr = S_RODATA_ADDR + 0x10;
	site.offset = S_RODATA_OFF + 0x10;
	assert_int_equal(gil_site_prove(elf, size, &site, why, sizeof(why)), 1);
	site.addr = text_end;
	site.offset = S_TEXT_OFF + S_TEXT_SIZE;
	assert_int_equal(gil_site_prove(elf, size, &site, why, sizeof(why)), 1);
	/* a file shorter than its headers say (truncated): nothing of it proves anything */
	site.addr = S_TEXT_ADDR + 0x10;
	site.offset = S_TEXT_OFF + 0x10;
	assert_int_equal(gil_site_prove(elf, S_TEXT_OFF + 0x8, &site, why, sizeof(why)), 1);
	elf_end(elf);
	close(fd);

	/* A table's sites in a file without frame descriptions are refused, counted and said. */
	sp.no_ehframe = true;
	write_synth(path, &sp);
	s = read_ok(path, NULL);
	assert_int_equal(s->nr_sites, 0);
	assert_int_equal(s->nr_refused, 2);
	assert_non_null(s->note);
	assert_non_null(strstr(s->note, "2 probe sites named by"));
	assert_non_null(strstr(s->note, "refused, not probed: "));
	assert_non_null(strstr(s->note, "the file has no .eh_frame_hdr to find its function by"));
	gil_symbols_free(s);
	free(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_endbr64),
		cmocka_unit_test(test_kinds),
		cmocka_unit_test(test_fallback),
		cmocka_unit_test(test_debian_fallback),
		cmocka_unit_test(test_sid_exits_from_code),
		cmocka_unit_test(test_arm64_from_code),
		cmocka_unit_test(test_prove),
	};

	return cmocka_run_group_tests(tests, elftest_setup, elftest_teardown);
}
