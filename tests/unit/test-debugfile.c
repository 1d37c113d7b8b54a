// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Unit tests for debug files (src/elf/debugfile.c) on synthetic ELF files written with libelf:
 * the build-id directory, .gnu_debuglink in gdb's order and with a hostile name or file, and
 * .gnu_debugdata (MiniDebugInfo); a debug file is used only when its build-id matches.
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
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "elf/symbols.h"
#include "elftest.h"

/* ---- debug files of a stripped object --------------------------------------------------- */

/* Plain bitwise CRC-32, written apart from the library's table version on purpose. */
static uint32_t crc32_file(const char *path)
{
	uint32_t crc = 0xffffffff;
	unsigned char *buf;
	size_t len, i;
	int k;

	buf = read_file(path, &len);
	for (i = 0; i < len; i++) {
		crc ^= buf[i];
		for (k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0xedb88320 & -(crc & 1));
	}
	free(buf);
	return crc ^ 0xffffffff;
}

/* A stripped object (only .dynsym without the functions) and its debug file. */
static char *make_stripped(const char *dir, const char *name, const unsigned char *bid,
			   const char *debuglink, uint32_t crc)
{
	struct synth sp = { .build_id = bid, .debuglink = debuglink, .debuglink_crc = crc };
	char *path = xfmt("%s/%s", dir, name);

	mkdirs(dir);
	write_synth(path, &sp);
	return path;
}

static void make_debug(const char *path, const unsigned char *bid)
{
	struct synth sp = { .symtab = true, .debug = true, .build_id = bid };
	char *dir = strdup(path);

	*strrchr(dir, '/') = '\0';
	mkdirs(dir);
	write_synth(path, &sp);
	free(dir);
}

static void check_debug_sites(const struct gil_symbols *s, const char *method, const char *from)
{
	assert_int_equal(s->nr_sites, 2);
	/* Offsets come from the object: the debug file puts its text at S_DEBUG_TEXT_OFF. */
	check_site(s, "take_gil", GIL_FN_TAKE, S_TEXT_ADDR + 0x10, 0x20, method);
	check_site(s, "drop_gil.constprop.0", GIL_FN_DROP, S_TEXT_ADDR + 0x40, 0x10, method);
	assert_true(s->has_take);
	assert_true(s->has_drop);
	assert_string_equal(s->symbols_from, from);
}

static void test_debug_build_id(void **state)
{
	char *root = xfmt("%s/bidroot", tmpdir), *dir = xfmt("%s/usr/bin", root);
	char *dbg = xfmt("%s/usr/lib/debug/.build-id/c5/%s.debug", root, bid_a_hex + 2);
	char *ldbg = xfmt("%s/.debug/py.debug", dir), *rootslash = xfmt("%s/", root);
	struct gil_symbols *s;
	char *obj;

	make_debug(dbg, bid_a);
	/* A valid debuglink exists too: the build-id directory comes first. */
	make_debug(ldbg, bid_a);
	obj = make_stripped(dir, "python", bid_a, "py.debug", crc32_file(ldbg));

	s = read_ok(obj, root);
	assert_string_equal(s->build_id, bid_a_hex);
	check_debug_sites(s, "build-id", dbg);
	gil_symbols_free(s);

	/* Trailing slash on the root. */
	s = read_ok(obj, rootslash);
	check_debug_sites(s, "build-id", dbg);
	gil_symbols_free(s);

	/* Another root: no build-id file there, so the debuglink is used. */
	s = read_ok(obj, tmpdir);
	check_debug_sites(s, "debuglink", ldbg);
	gil_symbols_free(s);

	/* A build-id file of another build is refused, never guessed from. */
	make_debug(dbg, bid_b);
	unlink(ldbg);
	s = read_ok(obj, root);
	assert_int_equal(s->nr_sites, 0);
	assert_false(s->has_take);
	assert_string_equal(s->symbols_from, obj);
	gil_symbols_free(s);

	free(root);
	free(rootslash);
	free(dir);
	free(dbg);
	free(ldbg);
	free(obj);
}

static void test_debuglink(void **state)
{
	char *root = xfmt("%s/linkroot", tmpdir), *dir = xfmt("%s/opt/py/bin", root);
	char *next = xfmt("%s/python.dbg", dir), *dotdebug = xfmt("%s/.debug/python.dbg", dir);
	char *global = xfmt("%s/usr/lib/debug%s/python.dbg", root, dir + strlen(root));
	char *other = xfmt("%s/otherroot", tmpdir);
	char *global_abs = xfmt("%s/usr/lib/debug%s/python.dbg", other, dir);
	struct gil_symbols *s;
	char *obj;
	uint32_t crc;

	/* Every debug file is the same bytes, so one CRC fits all three places. */
	make_debug(global, bid_a);
	crc = crc32_file(global);
	obj = make_stripped(dir, "python", bid_a, "python.dbg", crc);

	/* <root>/usr/lib/debug/<dir as seen in root>/ */
	s = read_ok(obj, root);
	check_debug_sites(s, "debuglink", global);
	gil_symbols_free(s);

	/* A path that is not under the root keeps its whole directory. */
	make_debug(global_abs, bid_a);
	s = read_ok(obj, other);
	check_debug_sites(s, "debuglink", global_abs);
	gil_symbols_free(s);

	/* <dir>/.debug/ wins over the global directory. */
	make_debug(dotdebug, bid_a);
	s = read_ok(obj, root);
	check_debug_sites(s, "debuglink", dotdebug);
	gil_symbols_free(s);

	/* <dir>/ wins over <dir>/.debug/. */
	make_debug(next, bid_a);
	s = read_ok(obj, root);
	check_debug_sites(s, "debuglink", next);
	gil_symbols_free(s);

	/* A CRC mismatch refuses the file even though the build-id matches. */
	free(obj);
	obj = make_stripped(dir, "python", bid_a, "python.dbg", crc ^ 1);
	s = read_ok(obj, root);
	assert_int_equal(s->nr_sites, 0);
	gil_symbols_free(s);

	/* Without a build-id on the object nothing proves the match: refused as well. */
	free(obj);
	obj = make_stripped(dir, "python", NULL, "python.dbg", crc);
	make_debug(next, NULL);
	s = read_ok(obj, root);
	assert_int_equal(s->nr_sites, 0);
	assert_string_equal(s->build_id, "");
	gil_symbols_free(s);

	free(root);
	free(dir);
	free(next);
	free(dotdebug);
	free(global);
	free(global_abs);
	free(other);
	free(obj);
}

/*
 * A target controls its debuglink name and the files under its root: a name with a '/' is not
 * followed out of the directory, a FIFO or a device node is never opened (a FIFO would block
 * setup), and a link resolves inside the root, never to the recorder's own files.
 */
static void test_debuglink_hostile(void **state)
{
	char *root = xfmt("%s/hostileroot", tmpdir), *dir = xfmt("%s/opt/py/bin", root);
	char *outside = xfmt("%s/outside.dbg", tmpdir), *next = xfmt("%s/python.dbg", dir);
	char *up = xfmt("%s/opt/py/escape.dbg", root);
	struct gil_symbols *s;
	char *obj;
	uint32_t crc;

	make_debug(outside, bid_a);
	crc = crc32_file(outside);
	mkdirs(dir);

	/* "../escape.dbg" names a file one directory up: refused, although it would match */
	make_debug(up, bid_a);
	obj = make_stripped(dir, "python", bid_a, "../escape.dbg", crc);
	s = read_ok(obj, root);
	assert_int_equal(s->nr_sites, 0);
	gil_symbols_free(s);
	free(obj);

	/* A FIFO where the debug file would be: not opened, so not waited on */
	obj = make_stripped(dir, "python", bid_a, "python.dbg", crc);
	assert_int_equal(mkfifo(next, 0600), 0);
	alarm(10);
	s = read_ok(obj, root);
	alarm(0);
	assert_int_equal(s->nr_sites, 0);
	gil_symbols_free(s);
	unlink(next);

	/*
	 * A sparse 1 TiB file with the object's build-id: refused by its size, said in the note,
	 * never read (its CRC would take hours; the alarm catches that).
	 */
	make_debug(next, bid_a);
	assert_int_equal(truncate(next, (off_t)1 << 40), 0);
	alarm(10);
	s = read_ok(obj, root);
	alarm(0);
	assert_int_equal(s->nr_sites, 0);
	assert_non_null(s->note);
	assert_non_null(strstr(s->note, "python.dbg is 1048576 MiB, over the 1024 MiB read of one; not used"));
	gil_symbols_free(s);
	unlink(next);

	/* An absolute link to a matching file outside the root resolves inside the root: none */
	assert_int_equal(symlink(outside, next), 0);
	s = read_ok(obj, root);
	assert_int_equal(s->nr_sites, 0);
	gil_symbols_free(s);
	unlink(next);

	/* The same file reached without a link is used: what refused it above was the link */
	assert_int_equal(link(outside, next), 0);
	s = read_ok(obj, root);
	check_debug_sites(s, "debuglink", next);
	gil_symbols_free(s);

	free(root);
	free(dir);
	free(outside);
	free(next);
	free(up);
	free(obj);
}

/*
 * A debug file with the object's build-id that puts take_gil one byte into the function the
 * object's frame descriptions give, and drop_gil where they give none: a debug file can be
 * forged (or simply wrong); its sites are refused by the object's own code, and the note names
 * the debug file.
 */
static void test_debug_file_refused(void **state)
{
	static const struct ssym lies[] = {
		{ "take_gil", S_TEXT_ADDR + 0x11, 0x1f, STT_FUNC, false },
		{ "drop_gil", S_TEXT_ADDR + 0x34, 0x8, STT_FUNC, false },
	};
	char *root = xfmt("%s/liesroot", tmpdir), *dir = xfmt("%s/usr/bin", root);
	char *dbgdir = xfmt("%s/usr/lib/debug/.build-id/c5", root);
	char *dbg = xfmt("%s/%s.debug", dbgdir, bid_a_hex + 2);
	struct synth sp = { .symtab = true, .debug = true, .build_id = bid_a, .sym = lies,
			    .nr_sym = ARRAY_SIZE(lies) };
	struct gil_symbols *s;
	char *obj, *want;

	mkdirs(dir);
	obj = make_stripped(dir, "python3.11", bid_a, NULL, 0);
	mkdirs(dbgdir);
	write_synth(dbg, &sp);
	s = read_ok(obj, root);
	print_sites(s);
	assert_int_equal(s->nr_sites, 0);
	assert_int_equal(s->nr_refused, 2);
	assert_non_null(s->note);
	want = xfmt("2 probe sites named by /usr/lib/debug/.build-id/c5/%s.debug refused, not probed: ",
		    bid_a_hex + 2);
	if (!strstr(s->note, want))
		fail_msg("note \"%s\", want \"%s\"", s->note, want);
	assert_non_null(strstr(s->note, "not the start of a function"));
	gil_symbols_free(s);
	free(want);
	free(obj);
	free(dbg);
	free(dbgdir);
	free(dir);
	free(root);
}

/* Run xz on @path, keeping it; -1 when xz is not installed. */
static int run_xz(const char *path)
{
	int status;
	pid_t pid;

	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		execlp("xz", "xz", "-z", "-k", "-f", "-q", path, (char *)NULL);
		_exit(127);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (!WIFEXITED(status) || WEXITSTATUS(status) == 127)
		return -1;
	return WEXITSTATUS(status) ? -1 : 0;
}

static void test_minidebuginfo(void **state)
{
	char *dir = xfmt("%s/mdi", tmpdir), *mini = xfmt("%s/mini", dir);
	char *xz = xfmt("%s.xz", mini), *obj = xfmt("%s/libpython.so", dir);
	struct synth mp = { .symtab = true, .debug = true };
	struct synth op = { .build_id = bid_a };
	struct gil_symbols *s;
	unsigned char junk[64];
	void *blob;
	size_t len;

	mkdirs(dir);
	write_synth(mini, &mp);
	if (run_xz(mini)) {
		print_message("xz(1) not available\n");
		goto out;
	}
	blob = read_file(xz, &len);
	op.debugdata = blob;
	op.debugdata_len = len;
	write_synth(obj, &op);
	/* An empty root: neither the build-id directory nor a debuglink can answer. */
	s = read_ok(obj, dir);
#ifdef HAVE_LZMA
	check_debug_sites(s, "minidebuginfo", obj);
#else
	assert_int_equal(s->nr_sites, 0);
#endif
	gil_symbols_free(s);
	free(blob);

	/* An embedded ELF that states another build-id is refused. */
	mp.build_id = bid_b;
	write_synth(mini, &mp);
	assert_int_equal(run_xz(mini), 0);
	blob = read_file(xz, &len);
	op.debugdata = blob;
	op.debugdata_len = len;
	write_synth(obj, &op);
	s = read_ok(obj, dir);
	assert_int_equal(s->nr_sites, 0);
	gil_symbols_free(s);
	free(blob);

	/* Garbage in .gnu_debugdata: no sites, no error. */
	memset(junk, 0xfd, sizeof(junk));
	memcpy(junk, "\3757zXZ", 6);
	op.debugdata = junk;
	op.debugdata_len = sizeof(junk);
	write_synth(obj, &op);
	s = read_ok(obj, dir);
	assert_int_equal(s->nr_sites, 0);
	gil_symbols_free(s);
out:
	free(dir);
	free(mini);
	free(xz);
	free(obj);
}

/* ---- main ---------------------------------------------------------------------------------- */

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_debug_build_id),
		cmocka_unit_test(test_debuglink),
		cmocka_unit_test(test_debuglink_hostile),
		cmocka_unit_test(test_minidebuginfo),
		cmocka_unit_test(test_debug_file_refused),
	};

	return cmocka_run_group_tests(tests, elftest_setup, elftest_teardown);
}
