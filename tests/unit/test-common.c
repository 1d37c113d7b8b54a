// SPDX-License-Identifier: GPL-2.0-or-later
/* The helpers of src/common that the recorder and the converter share. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/pyversion.h"
#include "common/tidindex.h"
#include "common/util.h"

/* PY_VERSION_HEX words as CPython's patchlevel.h makes them, and how CPython writes them. */
static void test_pyversion_hex(void **state)
{
	static const struct {
		uint32_t hex;
		const char *text;
	} cases[] = {
		{ 0x030b04f0, "3.11.4" },   { 0x030e00c2, "3.14.0rc2" }, { 0x030f00a1, "3.15.0a1" },
		{ 0x030d00b3, "3.13.0b3" }, { 0x030612f0, "3.6.18" },	  { 0x030f0070, "3.15.0" },
	};
	struct gil_pyversion v;
	char buf[32];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		gil_pyversion_hex(cases[i].hex, &v);
		gil_pyversion_text(&v, buf, sizeof(buf));
		assert_string_equal(buf, cases[i].text);
	}
	gil_pyversion_hex(0x030e00c2, &v);
	assert_int_equal(v.major, 3);
	assert_int_equal(v.minor, 14);
	assert_int_equal(v.micro, 0);
	assert_int_equal(v.level, 0xc);
	assert_int_equal(v.serial, 2);
}

static void test_pyversion_num(void **state)
{
	(void)state;
	assert_int_equal(gil_pyversion_num("3.11"), 311);
	assert_int_equal(gil_pyversion_num("3.6.15"), 306);
	assert_int_equal(gil_pyversion_num("3.14.0rc2"), 314);
	assert_int_equal(gil_pyversion_num("2.7"), 207);
	assert_int_equal(gil_pyversion_num(NULL), 0);
	assert_int_equal(gil_pyversion_num(""), 0);
	assert_int_equal(gil_pyversion_num("3"), 0);
	assert_int_equal(gil_pyversion_num("3."), 0);
	assert_int_equal(gil_pyversion_num("x3.11"), 0);
	assert_int_equal(gil_pyversion_num("0.9"), 0);
	assert_int_equal(gil_pyversion_num("3.100"), 0);
	assert_true(gil_pyversion_below("3.12", 3, 13));
	assert_true(gil_pyversion_below("2.7", 3, 13));
	assert_false(gil_pyversion_below("3.13", 3, 13));
	assert_false(gil_pyversion_below("3.14.1", 3, 13));
	assert_false(gil_pyversion_below("", 3, 13)); /* unknown is not below */
}

/* gil_grow: doubles from 16, keeps what the array held, refuses sizes past size_t untouched. */
static void test_grow(void **state)
{
	uint64_t *v = NULL, *before;
	size_t cap = 0, i;

	(void)state;
	assert_int_equal(gil_grow(&v, &cap, 1, sizeof(*v)), 0);
	assert_int_equal(cap, 16);
	for (i = 0; i < 16; i++)
		v[i] = i * 3;
	assert_int_equal(gil_grow(&v, &cap, 16, sizeof(*v)), 0); /* room already */
	assert_int_equal(cap, 16);
	assert_int_equal(gil_grow(&v, &cap, 17, sizeof(*v)), 0);
	assert_int_equal(cap, 32);
	assert_int_equal(gil_grow(&v, &cap, 1000, sizeof(*v)), 0);
	assert_int_equal(cap, 1024);
	for (i = 0; i < 16; i++)
		assert_int_equal(v[i], i * 3);
	before = v;
	errno = 0;
	assert_int_equal(gil_grow(&v, &cap, SIZE_MAX / 4, sizeof(*v)), -1);
	assert_int_equal(errno, ENOMEM);
	assert_ptr_equal(v, before);
	assert_int_equal(cap, 1024);
	free(v);
}

/* gil_tidindex: every tid found at its place through growth (colliding hashes too), none
 * invented; cleared and refilled as pairing.c compacts. */
static void test_tidindex(void **state)
{
	struct gil_tidindex x = { 0 };
	int32_t tid;

	(void)state;
	assert_int_equal(gil_tidindex_find(&x, 1), -1);
	for (tid = 0; tid < 5000; tid++) /* multiples of the table size collide first */
		assert_int_equal(gil_tidindex_add(&x, tid * 1024 - 2500 * 1024, (size_t)tid), 0);
	assert_true(x.cap >= 2 * x.nr);
	for (tid = 0; tid < 5000; tid++)
		assert_int_equal(gil_tidindex_find(&x, tid * 1024 - 2500 * 1024), tid);
	assert_int_equal(gil_tidindex_find(&x, 7), -1);
	gil_tidindex_clear(&x);
	assert_int_equal(gil_tidindex_find(&x, 0), -1);
	assert_int_equal(gil_tidindex_add(&x, 42, 3), 0);
	assert_int_equal(gil_tidindex_find(&x, 42), 3);
	gil_tidindex_free(&x);
	assert_int_equal(gil_tidindex_find(&x, 42), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pyversion_hex),
		cmocka_unit_test(test_pyversion_num),
		cmocka_unit_test(test_grow),
		cmocka_unit_test(test_tidindex),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
