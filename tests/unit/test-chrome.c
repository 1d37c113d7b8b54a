// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The Chrome backend's strings: bytes that are not well-formed UTF-8 come out as '?', exactly
 * as the recorder's writer cleans them (gil_utf8_copy), overlong forms and surrogates included.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"
#include "convert/convert.h"
#include "convert/outfile.h"

/* Write one thread_name event for @name through the backend; the file's text (malloc'd). */
static char *chrome_thread(const char *name)
{
	struct conv_proc proc = { .pid = 42, .os_pid = 42, .rank = -1, .label = "p" };
	struct conv_event ev = { .type = CEV_THREAD, .proc = &proc, .tid = 7, .name = name };
	struct conv_out out = { 0 };
	struct json_object *other = json_object_new_object();
	const struct conv_backend_ops *chrome = conv_backend("chrome");
	char path[] = "/tmp/test-chrome-XXXXXX", err[320], *text;
	int fd = mkstemp(path);

	assert_non_null(chrome);
	assert_true(fd >= 0);
	close(fd);
	out.f = outfile_open(path, err, sizeof(err));
	assert_non_null(out.f);
	assert_ptr_equal(chrome, conv_backends[0]); /* the default */
	assert_int_equal(chrome->header(&out), 0);
	assert_int_equal(chrome->event(&out, &ev), 0);
	assert_int_equal(chrome->footer(&out, other), 0);
	assert_int_equal(outfile_commit(out.f, err, sizeof(err)), 0);
	json_object_put(other);
	text = gil_read_file(path, 1 << 20, NULL);
	assert_non_null(text);
	unlink(path);
	return text;
}

/* The backend writes @name as @want, and the writer's cleaning agrees. */
static void check(const char *name, const char *want)
{
	char expect[256], *text, *clean = gil_utf8_copy(name);

	assert_non_null(clean);
	assert_string_equal(clean, want);
	free(clean);
	text = chrome_thread(name);
	snprintf(expect, sizeof(expect), "\"name\":\"thread_name\",\"pid\":42,\"tid\":7,"
		 "\"args\":{\"name\":\"%s\"}", want);
	if (!strstr(text, expect))
		fail_msg("%s not in %s", expect, text);
	free(text);
}

static void test_valid_kept(void **state)
{
	(void)state;
	check("worker", "worker");
	check("caf\xc3\xa9", "caf\xc3\xa9"); /* U+00E9 */
	check("\xe2\x82\xac", "\xe2\x82\xac"); /* U+20AC */
	check("\xf0\x9f\x90\x8d", "\xf0\x9f\x90\x8d"); /* U+1F40D */
}

static void test_overlong_replaced(void **state)
{
	(void)state;
	check("a\xc0\xaf" "b", "a??b"); /* '/' in two bytes */
	check("a\xe0\x80\xaf" "b", "a???b"); /* '/' in three bytes */
	check("a\xf0\x80\x80\xaf" "b", "a????b"); /* '/' in four bytes */
}

static void test_surrogate_replaced(void **state)
{
	(void)state;
	check("x\xed\xa0\x80y", "x???y"); /* U+D800 */
	check("x\xed\xbf\xbfy", "x???y"); /* U+DFFF */
	check("x\xf4\x90\x80\x80y", "x????y"); /* U+110000 */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_valid_kept),
		cmocka_unit_test(test_overlong_replaced),
		cmocka_unit_test(test_surrogate_replaced),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
