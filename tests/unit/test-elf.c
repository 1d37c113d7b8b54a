// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Unit tests for the ELF handle (src/elf/elf.c) and the GIL function names (src/elf/names.c):
 * name matching, address to file offset and build-id on a synthetic ELF file written with
 * libelf, and the errors of opening what is not a readable ELF file.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <libelf.h>

#include "elf/elf.h"
#include "elf/symbols.h"
#include "elftest.h"

/* ---- gil_symbol_match ---------------------------------------------------------------------- */

static void test_symbol_match(void **state)
{
	static const struct {
		const char *name;
		bool ok;
		enum gil_func fn;
	} cases[] = {
		{ "take_gil", true, GIL_FN_TAKE },
		{ "drop_gil", true, GIL_FN_DROP },
		{ "take_gil.constprop.0", true, GIL_FN_TAKE },
		{ "drop_gil.constprop.12", true, GIL_FN_DROP },
		{ "take_gil.lto_priv.0", true, GIL_FN_TAKE },
		{ "drop_gil.lto_priv.0", true, GIL_FN_DROP },
		{ "take_gil.isra.0", true, GIL_FN_TAKE },
		{ "drop_gil.llvm.11939201427281924733", true, GIL_FN_DROP },
		{ "take_gil.isra.0.constprop.1", true, GIL_FN_TAKE },
		{ "drop_gil.constprop.0.isra.0.lto_priv.3", true, GIL_FN_DROP },
		{ "take_gil.cold", false, 0 },
		{ "take_gil.lto_priv.0.cold", false, 0 },
		{ "drop_gil.part.0", false, 0 },
		{ "take_gil.isra.0.part.1", false, 0 },
		{ "drop_gil_impl.lto_priv.0", false, 0 },
		{ "drop_gil_impl", false, 0 },
		{ "take_gil_foo", false, 0 },
		{ "_take_gil", false, 0 },
		{ "Take_gil", false, 0 },
		{ "take_gi", false, 0 },
		{ "take_gil.", false, 0 },
		{ "take_gil.constprop", false, 0 },
		{ "take_gil.constprop.", false, 0 },
		{ "take_gil.constprop.0a", false, 0 },
		{ "take_gil.constprop.x", false, 0 },
		{ "take_gil.constprop.0.", false, 0 },
		{ "take_gil..constprop.0", false, 0 },
		{ "take_gil.localalias", false, 0 },
		{ "take_gil.constprop_0", false, 0 },
		{ "take_gil.isra00", false, 0 },
		{ "take_gil@@GLIBC_2.2.5", false, 0 },
		{ "take_gil ", false, 0 },
		{ "PyEval_RestoreThread", false, 0 },
		{ "", false, 0 },
	};
	enum gil_func fn;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		fn = (enum gil_func)-1;
		if (gil_symbol_match(cases[i].name, &fn) != cases[i].ok)
			fail_msg("gil_symbol_match(\"%s\") != %d", cases[i].name, cases[i].ok);
		if (cases[i].ok && fn != cases[i].fn)
			fail_msg("gil_symbol_match(\"%s\") gave fn %d", cases[i].name, (int)fn);
	}
	assert_false(gil_symbol_match(NULL, &fn));
	assert_true(gil_symbol_match("drop_gil", NULL));

	/* bounded: a valid chain of suffixes is a GIL function up to 128 bytes, not past them */
	{
		char name[4096] = "take_gil";
		size_t len = strlen(name);

		while (len + 12 <= 128) {
			memcpy(name + len, ".isra.12345", 12);
			len += 11;
		}
		assert_true(gil_symbol_match(name, &fn));
		while (len + 12 < sizeof(name)) {
			memcpy(name + len, ".isra.12345", 12);
			len += 11;
		}
		assert_false(gil_symbol_match(name, &fn));
	}
}

/* ---- gil_elf_addr_to_offset / gil_elf_build_id on a synthetic ET_EXEC ---------------------- */

static void test_addr_to_offset(void **state)
{
	static const struct {
		uint64_t addr;
		int ret;
		uint64_t offset;
		bool exec;
	} cases[] = {
		{ S_TEXT_ADDR, 0, S_TEXT_OFF, true },
		{ S_TEXT_ADDR + 0x10, 0, S_TEXT_OFF + 0x10, true },
		{ S_TEXT_ADDR + S_TEXT_SIZE - 1, 0, S_TEXT_OFF + S_TEXT_SIZE - 1, true },
		{ S_TEXT_ADDR + S_TEXT_SIZE, -1, 0, false }, /* one past the segment */
		{ S_TEXT_ADDR - 1, -1, 0, false }, /* in the gap before it */
		{ 0x400000, 0, 0, false },
		{ S_RODATA_ADDR + 0x10, 0, S_RODATA_OFF + 0x10, false },
		{ S_DATA_ADDR + 0x10, 0, S_DATA_OFF + 0x10, false },
		{ S_DATA_ADDR + 0x800, -1, 0, false }, /* bss: no file bytes */
		{ 0x700000, -1, 0, false },
		{ 0, -1, 0, false },
		{ UINT64_MAX, -1, 0, false },
	};
	char *path = xfmt("%s/exec", tmpdir);
	struct synth sp = { .symtab = true, .build_id = bid_a };
	uint64_t off;
	bool exec;
	size_t i;
	Elf *elf;
	int fd;

	write_synth(path, &sp);
	elf = open_elf(path, &fd);
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		off = 0xdead;
		exec = !cases[i].exec;
		if (gil_elf_addr_to_offset(elf, cases[i].addr, &off, &exec) != cases[i].ret)
			fail_msg("addr %#llx: wrong return", (unsigned long long)cases[i].addr);
		if (cases[i].ret)
			continue;
		assert_int_equal(off, cases[i].offset);
		assert_int_equal(exec, cases[i].exec);
	}
	assert_int_equal(gil_elf_addr_to_offset(NULL, S_TEXT_ADDR, &off, &exec), -1);
	elf_end(elf);
	close(fd);
	free(path);
}

static void test_build_id(void **state)
{
	char *path = xfmt("%s/bid", tmpdir), buf[129], small[8];
	struct synth sp = { .symtab = true, .build_id = bid_a };
	Elf *elf;
	int fd;

	write_synth(path, &sp);
	elf = open_elf(path, &fd);
	assert_int_equal(gil_elf_build_id(elf, buf, sizeof(buf)), 20);
	assert_string_equal(buf, bid_a_hex);
	assert_int_equal(gil_elf_build_id(elf, small, sizeof(small)), -1);
	elf_end(elf);
	close(fd);

	sp.build_id = NULL;
	write_synth(path, &sp);
	elf = open_elf(path, &fd);
	assert_int_equal(gil_elf_build_id(elf, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "");
	elf_end(elf);
	close(fd);
	free(path);
}

/* ---- errors -------------------------------------------------------------------------------- */

static void expect_error(const char *path, const char *msg, int err_no)
{
	struct gil_symbols *s = (struct gil_symbols *)&s;
	char err[256] = "";

	errno = 0;
	assert_int_equal(gil_symbols_read(path, NULL, &s, err, sizeof(err)), -1);
	if (err_no)
		assert_int_equal(errno, err_no);
	assert_null(s);
	assert_string_equal(err, msg);
}

static void test_errors(void **state)
{
	char *missing = xfmt("%s/missing", tmpdir), *text = xfmt("%s/text", tmpdir);
	char *empty = xfmt("%s/empty", tmpdir), *trunc = xfmt("%s/trunc", tmpdir);
	char *m1 = xfmt("cannot open %s: No such file or directory", missing);
	char *m2 = xfmt("%s: not an ELF file", text), *m3 = xfmt("%s: not an ELF file", empty);
	char *m4 = xfmt("%s: not a regular file", tmpdir);
	struct synth sp = { .symtab = true, .build_id = bid_a };
	struct gil_symbols *s = NULL;
	unsigned char *buf;
	char err[8];
	size_t len;
	int ret;

	expect_error(missing, m1, ENOENT);
	write_file(text, "#!/bin/sh\necho not elf\n", 23);
	expect_error(text, m2, 0);
	write_file(empty, "", 0);
	expect_error(empty, m3, 0);
	expect_error(tmpdir, m4, 0);

	/* Short error buffers truncate, no buffer at all is allowed. */
	assert_int_equal(gil_symbols_read(missing, NULL, &s, err, sizeof(err)), -1);
	assert_string_equal(err, "cannot ");
	assert_int_equal(gil_symbols_read(missing, NULL, &s, NULL, 0), -1);
	assert_int_equal(gil_symbols_read(NULL, NULL, &s, NULL, 0), -1);
	assert_int_equal(gil_symbols_read(missing, NULL, NULL, NULL, 0), -1);

	/* A truncated ELF must not crash; whatever it returns names no site. */
	write_synth(trunc, &sp);
	buf = read_file(trunc, &len);
	write_file(trunc, buf, 0x180);
	ret = gil_symbols_read(trunc, NULL, &s, NULL, 0);
	if (!ret) {
		assert_int_equal(s->nr_sites, 0);
		gil_symbols_free(s);
	}
	free(buf);
	gil_symbols_free(NULL);

	free(missing);
	free(text);
	free(empty);
	free(trunc);
	free(m1);
	free(m2);
	free(m3);
	free(m4);
}

/* ---- main ---------------------------------------------------------------------------------- */

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_symbol_match),
		cmocka_unit_test(test_addr_to_offset),
		cmocka_unit_test(test_build_id),
		cmocka_unit_test(test_errors),
	};

	return cmocka_run_group_tests(tests, elftest_setup, elftest_teardown);
}
