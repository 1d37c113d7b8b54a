// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * record/coderead.c against objects laid out in this process's own memory, read back through
 * process_vm_readv as the recorder reads a target's: naming, the type check, what is kept and
 * for how long, a reused address named afresh, a freed one keeping its name, 3.14's tag bits,
 * unreadable addresses and exited processes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "record/coderead.h"

/* A layout of our own: the offsets the struct below has (struct gil_layout names them). */
struct fake_type {
	uint64_t refcnt, type, size;
	const char *tp_name; /* 24 */
};

struct fake_str {
	uint64_t refcnt, type, length, hash;
	uint8_t state; /* 32: bit 5 compact, bit 6 ascii */
	uint8_t pad[7];
	char data[64]; /* 40 */
};

struct fake_code {
	uint64_t refcnt;
	struct fake_type *type; /* 8 */
	struct fake_str *name; /* 16 */
	struct fake_str *file; /* 24 */
	int32_t line; /* 32 */
	char rest[476]; /* the reader reads 512 bytes of the head */
};

static const struct gil_layout lay = {
	.ob_type = 8, .tp_name = 24, .code_name = 16, .code_filename = 24, .code_firstlineno = 32,
	.ascii_size = 40, .state = 32, .compact_bit = 5, .ascii_bit = 6,
};

static struct fake_type code_type = { .tp_name = "code" }, none_type = { .tp_name = "NoneType" };
static struct fake_str name_a, name_b, file_a;
static struct fake_code code;

static void str(struct fake_str *s, const char *text)
{
	memset(s, 0, sizeof(*s));
	s->state = 0x60;
	snprintf(s->data, sizeof(s->data), "%s", text);
}

static void setup_objects(void)
{
	str(&name_a, "f_a");
	str(&name_b, "f_b");
	str(&file_a, "<churn>");
	memset(&code, 0, sizeof(code));
	code.type = &code_type;
	code.name = &name_a;
	code.file = &file_a;
	code.line = 7;
}

static struct gil_frame_raw frame(void)
{
	struct gil_frame_raw r;

	memset(&r, 0, sizeof(r));
	r.tstate = 1;
	r.frame = 1;
	return r;
}

static const struct gil_fn *lookup(struct gil_coderead *c, struct gil_fntab *t,
				   const struct gil_layout *l, pid_t pid, uint64_t addr,
				   uint64_t now)
{
	struct gil_frame_raw r = frame();
	uint32_t id = gil_coderead_fn(c, t, l, pid, &r, addr, now);

	assert_int_not_equal(id, 0);
	return gil_fntab_get(t, id);
}

static void names_and_keeps(void **state)
{
	struct gil_coderead *c = gil_coderead_alloc();
	struct gil_fntab *t = gil_fntab_alloc();
	const struct gil_fn *f;
	uint64_t now = 1000000000ull;

	(void)state;
	setup_objects();
	f = lookup(c, t, &lay, getpid(), (uintptr_t)&code, now);
	assert_string_equal(f->name, "f_a");
	assert_string_equal(f->file, "<churn>");
	assert_int_equal(f->line, 7);
	assert_int_equal(gil_coderead_stats(c)->reads, 1);
	/* within the check interval the kept name is used: no read at all */
	str(&name_a, "f_x");
	f = lookup(c, t, &lay, getpid(), (uintptr_t)&code, now + GIL_CODEREAD_CHECK_NS / 2);
	assert_string_equal(f->name, "f_a");
	assert_int_equal(gil_coderead_stats(c)->reads, 1);
	assert_int_equal(gil_coderead_stats(c)->checks, 0);
	/* past it: checked, and the changed bytes (same pointers) are read afresh */
	f = lookup(c, t, &lay, getpid(), (uintptr_t)&code, now + 2 * GIL_CODEREAD_CHECK_NS);
	assert_string_equal(f->name, "f_x");
	assert_int_equal(gil_coderead_stats(c)->checks, 1);
	assert_int_equal(gil_coderead_stats(c)->changed, 1);
	/* another name object at the address's name pointer: a reused address */
	code.name = &name_b;
	f = lookup(c, t, &lay, getpid(), (uintptr_t)&code, now + 4 * GIL_CODEREAD_CHECK_NS);
	assert_string_equal(f->name, "f_b");
	/* unchanged: checked and kept */
	f = lookup(c, t, &lay, getpid(), (uintptr_t)&code, now + 6 * GIL_CODEREAD_CHECK_NS);
	assert_string_equal(f->name, "f_b");
	assert_int_equal(gil_coderead_stats(c)->changed, 2);
	/* freed: no code object there any more; the event saw one, so the name stays */
	code.type = &none_type;
	f = lookup(c, t, &lay, getpid(), (uintptr_t)&code, now + 8 * GIL_CODEREAD_CHECK_NS);
	assert_string_equal(f->name, "f_b");
	/* forgotten with its process: read afresh, and now it is not code */
	gil_coderead_forget(c, getpid());
	f = lookup(c, t, &lay, getpid(), (uintptr_t)&code, now + 8 * GIL_CODEREAD_CHECK_NS);
	assert_null(f->name);
	assert_string_equal(f->why, "frame does not hold a code object");
	gil_fntab_free(t);
	gil_coderead_free(c);
}

static void tags_and_failures(void **state)
{
	struct gil_coderead *c = gil_coderead_alloc();
	struct gil_fntab *t = gil_fntab_alloc();
	struct gil_layout tagged = lay;
	struct gil_frame_raw r;
	const struct gil_fn *f;
	pid_t dead;
	int st;

	(void)state;
	setup_objects();
	tagged.code_tagged = true;
	/* 3.14+: bit 0 is a flag on the reference, bit 1 no object */
	f = lookup(c, t, &tagged, getpid(), (uintptr_t)&code | 1, 1);
	assert_string_equal(f->name, "f_a");
	f = lookup(c, t, &tagged, getpid(), (uintptr_t)&code | 2, 1);
	assert_null(f->name);
	assert_string_equal(f->why, "frame does not hold a code object");
	/* what the probe read beside the address decides first */
	r = frame();
	r.frame = 0;
	f = gil_fntab_get(t, gil_coderead_fn(c, t, &lay, getpid(), &r, (uintptr_t)&code, 1));
	assert_string_equal(f->why, "no Python frame");
	/* an address that is not mapped: not readable, and not kept */
	f = lookup(c, t, &lay, getpid(), 0x10, 1);
	assert_string_equal(f->why, "frame not readable");
	assert_int_equal(gil_coderead_stats(c)->exited, 0);
	/* the process is gone */
	dead = fork();
	if (!dead)
		_exit(0);
	assert_true(dead > 0);
	waitpid(dead, &st, 0);
	f = lookup(c, t, &lay, dead, (uintptr_t)&code, 1);
	assert_string_equal(f->why, "process exited before its code object was read");
	assert_int_equal(gil_coderead_stats(c)->exited, 1);
	gil_fntab_free(t);
	gil_coderead_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(names_and_keeps),
		cmocka_unit_test(tags_and_failures),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
