// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Unit tests for inlined copies read from DWARF (src/elf/dwarfsites.c): a program compiled here
 * with LTO that inlines drop_gil the ways CPython builds do, read with its DWARF, stripped of it,
 * and with drop_gil out of line.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "elf/dwarfsites.h"
#include "elf/symbols.h"
#include "elftest.h"

/* ---- DWARF of a compiled program ---------------------------------------------------------- */

/*
 * drop_gil inlined the ways CPython's LTO builds do it, built here with the machine's compiler:
 * into PyEval_SaveThread (with a slow path whose unlock returns into the caller), an I/O
 * function, a conditional release, and nested_user, where LTO also nests b.c's own static
 * drop_gil inside ours; plus an out-of-line copy (its address is taken) after an endbr64.
 */
static const char fixture_a[] =
	"#include <pthread.h>\n"
	"#include <stdlib.h>\n"
	"#ifdef OUT_OF_LINE\n"
	"#define INLINE __attribute__((noinline))\n"
	"#else\n"
	"#define INLINE inline __attribute__((always_inline))\n"
	"#endif\n"
	"pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;\n"
	"volatile int locked = 1, requests;\n"
	"const unsigned long Py_Version = 0x030b02f0;\n"
	"__attribute__((noinline, noreturn)) void fatal(const char *msg)\n"
	"{\n"
	"	(void)msg;\n"
	"	abort();\n"
	"}\n"
	"void b_release(void);\n"
	"static INLINE void drop_gil(int force)\n"
	"{\n"
	"	if (!locked)\n"
	"		fatal(\"drop_gil: not locked\");\n"
	"	if (pthread_mutex_lock(&mu))\n"
	"		fatal(\"drop_gil: lock\");\n"
	"	locked = 0;\n"
	"	if (pthread_mutex_unlock(&mu))\n"
	"		fatal(\"drop_gil: unlock\");\n"
	"	if (force == 1 && requests) {\n"
	"		pthread_mutex_lock(&mu);\n"
	"		while (requests)\n"
	"			requests--;\n"
	"		pthread_mutex_unlock(&mu);\n"
	"	}\n"
	"	if (force == 2)\n"
	"		b_release();\n"
	"}\n"
	"__attribute__((noinline)) static void take_gil(void)\n"
	"{\n"
	"	pthread_mutex_lock(&mu);\n"
	"	locked = 1;\n"
	"	pthread_mutex_unlock(&mu);\n"
	"}\n"
	"void (*volatile drop_ptr)(int) = drop_gil;\n"
	"__attribute__((noinline)) void *PyEval_SaveThread(void)\n"
	"{\n"
	"	drop_gil(1);\n"
	"	return &mu;\n"
	"}\n"
	"__attribute__((noinline)) void PyEval_RestoreThread(void *t)\n"
	"{\n"
	"	(void)t;\n"
	"	take_gil();\n"
	"}\n"
	"__attribute__((noinline)) int do_read(int fd)\n"
	"{\n"
	"	int n;\n"
	"	drop_gil(1);\n"
	"	n = fd * 3 + requests;\n"
	"	take_gil();\n"
	"	return n;\n"
	"}\n"
	"__attribute__((noinline)) int maybe_drop(int c)\n"
	"{\n"
	"	if (c)\n"
	"		drop_gil(0);\n"
	"	return c + requests;\n"
	"}\n"
	"__attribute__((noinline, flatten)) void nested_user(void)\n"
	"{\n"
	"	drop_gil(2);\n"
	"}\n"
	"int main(int argc, char **argv)\n"
	"{\n"
	"	(void)argv;\n"
	"	PyEval_RestoreThread(PyEval_SaveThread());\n"
	"	drop_ptr(argc);\n"
	"	nested_user();\n"
	"	return do_read(argc) + maybe_drop(argc) + (int)Py_Version;\n"
	"}\n";

static const char fixture_b[] =
	"#include <pthread.h>\n"
	"extern pthread_mutex_t mu;\n"
	"extern volatile int locked;\n"
	"static inline __attribute__((always_inline)) void drop_gil(void)\n"
	"{\n"
	"	pthread_mutex_lock(&mu);\n"
	"	locked = 0;\n"
	"	pthread_mutex_unlock(&mu);\n"
	"}\n"
	"void b_release(void)\n"
	"{\n"
	"	drop_gil();\n"
	"}\n";

/* Run a program quietly; its exit status, 127 when it could not be run. */
static int run(char *const argv[])
{
	int status, null;
	pid_t pid;

	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		null = open("/dev/null", O_WRONLY);
		if (null >= 0) {
			dup2(null, 1);
			dup2(null, 2);
		}
		execvp(argv[0], argv);
		_exit(127);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 127;
}

static size_t count_symbol(const struct gil_symbols *s, const char *name, enum gil_site_role role)
{
	size_t i, n = 0;

	for (i = 0; i < s->nr_sites; i++)
		n += !strcmp(s->sites[i].symbol, name) && s->sites[i].role == role;
	return n;
}

static void test_dwarf_fixture(void **state)
{
	static const char *const inlined[] = {
		"drop_gil@PyEval_SaveThread", "drop_gil@do_read", "drop_gil@maybe_drop",
		"drop_gil@nested_user", "drop_gil@b_release",
	};
	char *dir = xfmt("%s/fixture", tmpdir), *a = xfmt("%s/a.c", dir), *b = xfmt("%s/b.c", dir);
	char *exe = xfmt("%s/fixture", dir), *bare = xfmt("%s/fixture.nodebug", dir);
	char *ool = xfmt("%s/fixture.outofline", dir);
	char *cc[] = { "cc", "-O2", "-g", "-flto", "-fcf-protection=full", "-rdynamic", "-o", exe,
		       a, b, "-lpthread", NULL };
	char *cc_ool[] = { "cc", "-O2", "-g0", "-flto", "-fcf-protection=full", "-rdynamic",
			   "-DOUT_OF_LINE", "-o", ool, a, b, "-lpthread", NULL };
	char *strip[] = { "objcopy", "--strip-debug", exe, bare, NULL };
	const struct gil_site *site;
	struct gil_symbols *s;
	size_t i, k;

	mkdirs(dir);
	write_file(a, fixture_a, sizeof(fixture_a) - 1);
	write_file(b, fixture_b, sizeof(fixture_b) - 1);
	if (run(cc)) {
		print_message("cc -flto -fcf-protection could not build the fixture\n");
		goto out;
	}
	if (!gil_dwarf_supported()) {
		print_message("built without libdw: no DWARF to read\n");
		goto out;
	}
	s = read_ok(exe, NULL);
	print_sites(s);
	assert_string_equal(s->dwarf_from, exe);
	assert_int_equal(s->kind, GIL_PY_CPYTHON);
	assert_false(s->approximate);
	assert_null(s->reason);
	assert_int_equal(s->nr_unproven, 0);
	/*
	 * The out-of-line copy is an indirect-branch target, so it starts with endbr64: probed
	 * after it. take_gil is only called directly and has none.
	 */
	for (i = k = 0; i < s->nr_sites; i++) {
		site = &s->sites[i];
		if (!strcmp(site->method, "dwarf-inline")) {
			verify_inline_site(exe, s, site);
			continue;
		}
		assert_string_equal(site->method, "symtab");
		assert_int_equal(site->skipped, site->fn == GIL_FN_DROP ? 4 : 0);
		verify_real_site(exe, s, site);
		k++;
	}
	assert_int_equal(k, 2);
	/* One entry per copy; b.c's copy nested in nested_user's gives none of its own. */
	assert_int_equal(s->nr_inlined, ARRAY_SIZE(inlined));
	for (k = 0; k < ARRAY_SIZE(inlined); k++) {
		if (count_symbol(s, inlined[k], GIL_SITE_ENTRY) != 1 ||
		    !count_symbol(s, inlined[k], GIL_SITE_EXIT))
			fail_msg("%s: %zu entries, %zu exits", inlined[k],
				 count_symbol(s, inlined[k], GIL_SITE_ENTRY),
				 count_symbol(s, inlined[k], GIL_SITE_EXIT));
	}
	/* The fast path falls through; the slow path's unlock returns into the caller. */
	assert_int_equal(count_symbol(s, "drop_gil@PyEval_SaveThread", GIL_SITE_EXIT), 2);
	gil_symbols_free(s);

	/* Without DWARF: PyEval_SaveThread calls no drop_gil, so it stands in for the copies. */
	if (run(strip)) {
		print_message("objcopy(1) not available\n");
		goto out;
	}
	s = read_ok(bare, NULL);
	print_sites(s);
	assert_null(s->dwarf_from);
	assert_true(s->approximate);
	assert_int_equal(s->nr_sites, 3);
	site = find_site(s, "PyEval_SaveThread");
	assert_non_null(site);
	assert_int_equal(site->fn, GIL_FN_DROP);
	assert_true(site->approximate);
	assert_string_equal(site->method, "exported-fallback");
	assert_int_equal(site->skipped, 4);
	assert_non_null(strstr(s->reason, "inlines drop_gil into PyEval_SaveThread"));
	gil_symbols_free(s);

	/* drop_gil out of line: PyEval_SaveThread calls it, and is not probed in its place. */
	assert_int_equal(run(cc_ool), 0);
	s = read_ok(ool, NULL);
	print_sites(s);
	assert_false(s->approximate);
	assert_null(s->reason);
	assert_null(find_site(s, "PyEval_SaveThread"));
	assert_int_equal(s->nr_sites, 2);
	gil_symbols_free(s);
out:
	free(dir);
	free(a);
	free(b);
	free(exe);
	free(bare);
	free(ool);
}

/* ---- main ---------------------------------------------------------------------------------- */

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dwarf_fixture),
	};

	return cmocka_run_group_tests(tests, elftest_setup, elftest_teardown);
}
