// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Unit tests for ELF symbol lookup as a whole (src/elf/symbols.c, gil_symbols_read): the symbol
 * tables of a synthetic ELF file written with libelf, and the real CPython builds on this
 * machine, whose offsets are checked here through section headers (an independent path from the
 * program headers the library uses).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <glob.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <gelf.h>
#include <libelf.h>

#include "elf/dwarfsites.h"
#include "elf/elf.h"
#include "elf/symbols.h"
#include "elftest.h"

/* ---- gil_symbols_read on synthetic files --------------------------------------------------- */

static void test_synthetic_tables(void **state)
{
	char *path = xfmt("%s/full", tmpdir);
	struct synth sp = { .symtab = true, .dynsym = true, .build_id = bid_a };
	const struct gil_site *site;
	struct gil_symbols *s;
	unsigned char *file;
	size_t len, i;

	write_synth(path, &sp);
	s = read_ok(path, NULL);
	assert_string_equal(s->build_id, bid_a_hex);
	assert_string_equal(s->symbols_from, path);
	assert_int_equal(s->nr_sites, 3);
	check_site(s, "take_gil", GIL_FN_TAKE, S_TEXT_ADDR + 0x10, 0x20, "symtab");
	check_site(s, "drop_gil.constprop.0", GIL_FN_DROP, S_TEXT_ADDR + 0x40, 0x10, "symtab");
	check_site(s, "drop_gil.isra.0", GIL_FN_DROP, S_TEXT_ADDR + 0x60, 0x10, "dynsym");
	assert_true(s->has_take);
	assert_true(s->has_drop);

	/* The bytes at each offset are the text bytes written at that address. */
	file = read_file(path, &len);
	for (i = 0; i < s->nr_sites; i++) {
		site = &s->sites[i];
		assert_true(site->offset + site->size <= len);
		assert_int_equal(file[site->offset],
				 (unsigned char)((site->addr - S_TEXT_ADDR) * 7 + 0x31));
	}
	free(file);
	gil_symbols_free(s);

	/* A table naming neither function is not an error. */
	sp = (struct synth){ .symtab = false, .dynsym = false };
	write_synth(path, &sp);
	s = read_ok(path, NULL);
	assert_int_equal(s->nr_sites, 0);
	assert_null(s->sites);
	assert_false(s->has_take);
	assert_false(s->has_drop);
	assert_string_equal(s->build_id, "");
	assert_string_equal(s->symbols_from, path);
	gil_symbols_free(s);
	free(path);
}

/* ---- real interpreters --------------------------------------------------------------------- */

static size_t count_sites(const struct gil_symbols *s, enum gil_func fn)
{
	size_t i, n = 0;

	for (i = 0; i < s->nr_sites; i++)
		n += s->sites[i].fn == fn;
	return n;
}

static size_t count_role(const struct gil_symbols *s, enum gil_site_role role, const char *method)
{
	size_t i, n = 0;

	for (i = 0; i < s->nr_sites; i++)
		n += s->sites[i].role == role && !strcmp(s->sites[i].method, method);
	return n;
}

static void test_pyenv(void **state)
{
	const char *root = getenv("PYENV_ROOT"), *home = getenv("HOME");
	char *pattern;
	struct gil_symbols *s;
	glob_t g;
	size_t i, j;
	int major, minor;

	if (root && *root)
		pattern = xfmt("%s/versions/*/lib/libpython*.so.1.0", root);
	else
		pattern = xfmt("%s/.pyenv/versions/*/lib/libpython*.so.1.0", home ? home : "/root");
	if (glob(pattern, 0, NULL, &g)) {
		print_message("no pyenv libpython matches %s\n", pattern);
		free(pattern);
		skip();
	}
	free(pattern);
	for (i = 0; i < g.gl_pathc; i++) {
		const char *p = strstr(g.gl_pathv[i], "/libpython");

		assert_non_null(p);
		assert_int_equal(sscanf(p, "/libpython%d.%d", &major, &minor), 2);
		s = read_ok(g.gl_pathv[i], NULL);
		print_sites(s);
		assert_string_equal(s->symbols_from, g.gl_pathv[i]);
		assert_int_not_equal(s->build_id[0], '\0');
		if (major < 3 || (major == 3 && minor < 2)) {
			/* No take_gil before 3.2: the old GIL is a plain lock. */
			assert_int_equal(s->nr_sites, 0);
			assert_false(s->has_take);
			assert_false(s->has_drop);
			gil_symbols_free(s);
			continue;
		}
		assert_true(s->has_take);
		assert_true(s->has_drop);
		assert_non_null(find_site(s, "take_gil"));
		assert_non_null(find_site(s, "drop_gil"));
		if (major == 3 && minor == 8) {
			/* pyenv's 3.8 has a constprop clone serving other callers. */
			assert_int_equal(count_sites(s, GIL_FN_TAKE), 2);
			assert_non_null(find_site(s, "take_gil.constprop.0"));
		}
		for (j = 0; j < s->nr_sites; j++) {
			if (!strcmp(s->sites[j].method, "dwarf-inline")) {
				verify_inline_site(g.gl_pathv[i], s, &s->sites[j]);
				continue;
			}
			assert_string_equal(s->sites[j].method, "symtab");
			verify_real_site(g.gl_pathv[i], s, &s->sites[j]);
		}
		/* pyenv builds carry DWARF: it was read, and each inlined copy has one way out. */
		if (gil_dwarf_supported()) {
			assert_non_null(s->dwarf_from);
			assert_string_equal(s->dwarf_from, g.gl_pathv[i]);
		} else {
			assert_null(s->dwarf_from);
			assert_int_equal(s->nr_inlined, 0);
		}
		assert_int_equal(s->nr_unproven, 0);
		assert_int_equal(count_role(s, GIL_SITE_ENTRY, "dwarf-inline"), s->nr_inlined);
		assert_int_equal(count_role(s, GIL_SITE_EXIT, "dwarf-inline"), s->nr_inlined);
		if (major == 3 && minor == 13 && gil_dwarf_supported()) {
			/* 3.13 inlines drop_gil into PyEval_ReleaseLock (ceval_gil.c). */
			assert_int_equal(s->nr_inlined, 1);
			assert_non_null(find_site(s, "drop_gil@PyEval_ReleaseLock"));
		}
		assert_false(s->approximate);
		assert_null(s->reason);
		assert_int_equal(s->kind, GIL_PY_CPYTHON);
		gil_symbols_free(s);
	}
	globfree(&g);
}

/* The five functions Debian's 3.11 LTO build inlines drop_gil into (checked with objdump). */
static const char *const debian311_inlined[] = {
	"drop_gil@PyEval_SaveThread", "drop_gil@os_stat", "drop_gil@_Py_read",
	"drop_gil@_io_FileIO_write", "drop_gil@os_listdir",
};

static void check_debian(const char *py, const char *root, const char *prefix)
{
	const struct gil_site *site;
	struct gil_symbols *s;
	size_t i, k;

	s = read_ok(py, root);
	print_sites(s);
	assert_true(s->has_take);
	assert_true(s->has_drop);
	assert_non_null(find_site(s, "take_gil.lto_priv.0"));
	assert_non_null(find_site(s, "drop_gil.lto_priv.0"));
	assert_true(!strncmp(s->symbols_from, prefix, strlen(prefix)));
	if (!gil_dwarf_supported()) {
		/* No DWARF: PyEval_SaveThread calls no drop_gil (LTO inlined it), so it stands in. */
		assert_null(s->dwarf_from);
		assert_int_equal(s->nr_sites, 3);
		assert_true(s->approximate);
		assert_non_null(strstr(s->reason, "inlines drop_gil into PyEval_SaveThread and giltrace was built without libdw"));
		site = find_site(s, "PyEval_SaveThread");
		assert_non_null(site);
		assert_int_equal(site->fn, GIL_FN_DROP);
		assert_string_equal(site->method, "exported-fallback");
		for (i = 0; i < s->nr_sites; i++)
			verify_real_site(py, s, &s->sites[i]);
		gil_symbols_free(s);
		return;
	}
	assert_non_null(s->dwarf_from);
	assert_string_equal(s->dwarf_from, s->symbols_from);
	assert_int_equal(s->kind, GIL_PY_CPYTHON);
	assert_false(s->approximate);
	assert_null(s->reason);
	for (i = 0; i < s->nr_sites; i++) {
		site = &s->sites[i];
		/* Non-PIE: text at vaddr 0x41f000, file offset 0x1f000. */
		assert_int_not_equal(site->offset, site->addr);
		if (!strcmp(site->method, "dwarf-inline")) {
			verify_inline_site(py, s, site);
			continue;
		}
		assert_true(!strcmp(site->method, "build-id") || !strcmp(site->method, "debuglink"));
		verify_real_site(py, s, site);
	}
	/* Every copy is probed at its entry and at the one instruction its code falls to. */
	assert_int_equal(s->nr_unproven, 0);
	assert_true(s->nr_inlined >= ARRAY_SIZE(debian311_inlined));
	assert_int_equal(count_role(s, GIL_SITE_ENTRY, "dwarf-inline"), s->nr_inlined);
	assert_int_equal(count_role(s, GIL_SITE_EXIT, "dwarf-inline"), s->nr_inlined);
	for (k = 0; k < ARRAY_SIZE(debian311_inlined); k++) {
		size_t entries = 0, exits = 0;

		for (i = 0; i < s->nr_sites; i++) {
			if (strcmp(s->sites[i].symbol, debian311_inlined[k]))
				continue;
			entries += s->sites[i].role == GIL_SITE_ENTRY;
			exits += s->sites[i].role == GIL_SITE_EXIT;
		}
		if (entries != 1 || exits != 1)
			fail_msg("%s: %zu entries, %zu exits", debian311_inlined[k], entries, exits);
	}
	gil_symbols_free(s);
}

static void test_debian_python311(void **state)
{
	const char *py = "/usr/bin/python3.11";
	char bid[129], *dbg;
	GElf_Ehdr eh;
	Elf *elf;
	int fd;

	if (access(py, R_OK)) {
		print_message("%s absent\n", py);
		skip();
	}
	elf = open_elf(py, &fd);
	assert_non_null(gelf_getehdr(elf, &eh));
	assert_int_equal(gil_elf_build_id(elf, bid, sizeof(bid)), 20);
	elf_end(elf);
	close(fd);
	assert_int_equal(eh.e_type, ET_EXEC);
	dbg = xfmt("/usr/lib/debug/.build-id/%.2s/%s.debug", bid, bid + 2);
	if (access(dbg, R_OK)) {
		print_message("%s absent: apt-get install python3.11-dbg\n", dbg);
		free(dbg);
		skip();
	}
	free(dbg);
	check_debian(py, NULL, "/usr/lib/debug/");
	/* As a container path: the debug file is looked up under the same root. */
	check_debian("/proc/self/root/usr/bin/python3.11", "/proc/self/root",
		     "/proc/self/root/usr/lib/debug/");
}

/* ---- main ---------------------------------------------------------------------------------- */

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_synthetic_tables),
		cmocka_unit_test(test_pyenv),
		cmocka_unit_test(test_debian_python311),
	};

	return cmocka_run_group_tests(tests, elftest_setup, elftest_teardown);
}
