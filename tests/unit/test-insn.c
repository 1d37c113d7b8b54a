// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Unit tests for the instruction decoders (src/elf/x86insn.c, src/elf/a64insn.c): lengths,
 * control flow and branch targets of encodings from real builds, and what they refuse.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "elf/x86insn.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* ---- AArch64 decoding ---------------------------------------------------------------------- */

/* AArch64: every branch form's flow and target, the ADRP page, and misalignment refused. */
static void test_a64_decode(void **state)
{
	static const struct {
		uint32_t w;
		enum gil_insn_flow flow;
		uint64_t target;
	} cases[] = {
		{ 0x94000010, GIL_INSN_CALL, 0x1040 }, /* bl +0x40 */
		{ 0x17ffffff, GIL_INSN_JUMP, 0xffc }, /* b -4 */
		{ 0x54000061, GIL_INSN_BRANCH, 0x100c }, /* b.ne +12 */
		{ 0xb4000040, GIL_INSN_BRANCH, 0x1008 }, /* cbz x0, +8 */
		{ 0x37000080, GIL_INSN_BRANCH, 0x1010 }, /* tbnz w0, #0, +16 */
		{ 0xd65f03c0, GIL_INSN_STOP, 0 }, /* ret */
		{ 0xd65f0bff, GIL_INSN_STOP, 0 }, /* retaa */
		{ 0xd61f0200, GIL_INSN_INDIRECT, 0 }, /* br x16 */
		{ 0xd63f0200, GIL_INSN_CALL, 0 }, /* blr x16 */
		{ 0xd503233f, GIL_INSN_NEXT, 0 }, /* paciasp */
		{ 0xd503245f, GIL_INSN_NEXT, 0 }, /* bti c */
		{ 0xd4200000, GIL_INSN_STOP, 0 }, /* brk #0 */
		{ 0xf9400000, GIL_INSN_NEXT, 0 }, /* ldr x0, [x0] */
	};
	struct gil_insn in;
	uint8_t b[4];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		b[0] = cases[i].w & 0xff;
		b[1] = (cases[i].w >> 8) & 0xff;
		b[2] = (cases[i].w >> 16) & 0xff;
		b[3] = cases[i].w >> 24;
		assert_int_equal(gil_a64_decode(b, 4, 0x1000, &in), 0);
		assert_int_equal(in.len, 4);
		assert_int_equal(in.flow, cases[i].flow);
		assert_int_equal(in.target, cases[i].target);
	}
	b[0] = 0x10, b[1] = 0, b[2] = 0, b[3] = 0x90; /* adrp x16, . */
	assert_int_equal(gil_a64_decode(b, 4, 0x1234 & ~3ull, &in), 0);
	assert_int_equal(in.imm, 0x1000);
	assert_int_equal(gil_a64_decode(b, 4, 0x1002, &in), -1); /* misaligned */
	assert_int_equal(gil_a64_decode(b, 3, 0x1000, &in), -1); /* short */
}

/* ---- x86-64 decoding ---------------------------------------------------------------------- */

/* Encodings taken from objdump -d of python3.11, libpython3.13 and libc on this machine. */
static void test_x86_decode(void **state)
{
	static const struct {
		const char *bytes;
		size_t avail;
		int ret;
		unsigned int len;
		enum gil_insn_flow flow;
		int64_t rel; /* target - address, for branches */
	} cases[] = {
		{ "\x55", 1, 0, 1, GIL_INSN_NEXT, 0 }, /* push %rbp */
		{ "\x48\x83\xec\x08", 4, 0, 4, GIL_INSN_NEXT, 0 }, /* sub $0x8,%rsp */
		{ "\x8b\x05\x6d\x81\x55\x00", 6, 0, 6, GIL_INSN_NEXT, 0 }, /* mov rip(%rip),%eax */
		{ "\x48\xc7\x05\x48\x82\x55\x00\x00\x00\x00\x00", 11, 0, 11, GIL_INSN_NEXT, 0 },
		{ "\x48\x8b\x04\x25\x28\x00\x00\x00", 8, 0, 8, GIL_INSN_NEXT, 0 }, /* SIB, disp32 */
		{ "\x48\x8b\x44\x24\x08", 5, 0, 5, GIL_INSN_NEXT, 0 }, /* mov 0x8(%rsp),%rax */
		{ "\xf6\x40\x08\x01", 4, 0, 4, GIL_INSN_NEXT, 0 }, /* testb $0x1,0x8(%rax) */
		{ "\xf7\xc7\x00\x00\x01\x00", 6, 0, 6, GIL_INSN_NEXT, 0 }, /* test $0x10000,%edi */
		{ "\xf7\xd8", 2, 0, 2, GIL_INSN_NEXT, 0 }, /* neg %eax: F7 /3, no immediate */
		{ "\x48\xb8\x01\x02\x03\x04\x05\x06\x07\x08", 10, 0, 10, GIL_INSN_NEXT, 0 },
		{ "\x66\xb8\x34\x12", 4, 0, 4, GIL_INSN_NEXT, 0 }, /* mov $0x1234,%ax */
		{ "\x66\x2e\x0f\x1f\x84\x00\x00\x00\x00\x00", 10, 0, 10, GIL_INSN_NEXT, 0 },
		{ "\xf3\x0f\x1e\xfa", 4, 0, 4, GIL_INSN_NEXT, 0 }, /* endbr64 */
		{ "\xc5\xf8\x77", 3, 0, 3, GIL_INSN_NEXT, 0 }, /* vzeroupper: VEX without ModRM */
		{ "\xc4\xe2\x79\x18\x05\x00\x00\x00\x00", 9, 0, 9, GIL_INSN_NEXT, 0 },
		{ "\xc4\xe3\x79\x16\xc0\x01", 6, 0, 6, GIL_INSN_NEXT, 0 }, /* vpextrd: 0F3A imm8 */
		{ "\x62\xf1\xfd\x48\x6f\x44\x24\x01", 8, 0, 8, GIL_INSN_NEXT, 0 }, /* EVEX */
		{ "\x66\x0f\x3a\x0f\xc1\x08", 6, 0, 6, GIL_INSN_NEXT, 0 }, /* palignr $8 */
		{ "\x0f\x38\xf1\x07", 4, 0, 4, GIL_INSN_NEXT, 0 }, /* movbe */
		{ "\x75\x0a", 2, 0, 2, GIL_INSN_BRANCH, 12 },
		{ "\x0f\x84\x09\xf6\xf2\xff", 6, 0, 6, GIL_INSN_BRANCH, 6 - 0xd09f7 },
		{ "\xe3\xfe", 2, 0, 2, GIL_INSN_BRANCH, 0 }, /* jrcxz . */
		{ "\xeb\xfe", 2, 0, 2, GIL_INSN_JUMP, 0 },
		{ "\xe9\x00\x01\x00\x00", 5, 0, 5, GIL_INSN_JUMP, 0x105 },
		{ "\xe8\xfb\xff\xff\xff", 5, 0, 5, GIL_INSN_CALL, 0 },
		{ "\x66\x66\x48\xe8\x6c\x85\xfb\xff", 8, 0, 8, GIL_INSN_CALL, 8 - 0x47a94 },
		{ "\xff\x15\xf8\xfa\x60\x00", 6, 0, 6, GIL_INSN_CALL, 0 }, /* call *(%rip) */
		{ "\xff\xe0", 2, 0, 2, GIL_INSN_INDIRECT, 0 }, /* jmp *%rax */
		{ "\xff\x24\xc5\x40\x1c\x6d\x00", 7, 0, 7, GIL_INSN_INDIRECT, 0 },
		{ "\xc3", 1, 0, 1, GIL_INSN_STOP, 0 },
		{ "\xc2\x08\x00", 3, 0, 3, GIL_INSN_STOP, 0 },
		{ "\x0f\x0b", 2, 0, 2, GIL_INSN_STOP, 0 }, /* ud2 */
		{ "\xcc", 1, 0, 1, GIL_INSN_STOP, 0 },
		/* Refused: unknown, vendor-dependent or cut short. */
		{ "\x0f\x0f\xc1\x00", 4, -1, 0, 0, 0 }, /* 3DNow! */
		{ "\x8f\xe8\x78\xc2\xfa\x0d", 6, -1, 0, 0, 0 }, /* AMD XOP */
		{ "\x66\xe9\x00\x00", 4, -1, 0, 0, 0 }, /* jmp rel16 on some CPUs only */
		{ "\x06", 1, -1, 0, 0, 0 }, /* push %es: not in 64-bit mode */
		{ "\xe8\x00\x00", 3, -1, 0, 0, 0 },
		{ "\x48", 1, -1, 0, 0, 0 },
		{ "\x66\x66\x66\x66\x66\x66\x66\x66\x66\x66\x66\x66\x66\x66\x90", 15, 0, 15,
		  GIL_INSN_NEXT, 0 },
		{ "\x66\x66\x66\x66\x66\x66\x66\x66\x66\x66\x66\x66\x66\x66\x66\x90", 16, -1, 0, 0, 0 },
	};
	const uint64_t addr = 0x4fe200;
	struct gil_insn in;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		memset(&in, 0xa5, sizeof(in));
		if (gil_x86_64_decode((const uint8_t *)cases[i].bytes, cases[i].avail, addr, &in) !=
		    cases[i].ret)
			fail_msg("case %zu: wrong return", i);
		if (cases[i].ret)
			continue;
		if (in.len != cases[i].len || in.flow != cases[i].flow)
			fail_msg("case %zu: len %u flow %d", i, in.len, (int)in.flow);
		if ((in.flow == GIL_INSN_BRANCH || in.flow == GIL_INSN_JUMP ||
		     (in.flow == GIL_INSN_CALL && cases[i].bytes[0] != '\xff')) &&
		    in.target != addr + (uint64_t)cases[i].rel)
			fail_msg("case %zu: target %#llx", i, (unsigned long long)in.target);
	}
}

/* ---- main ---------------------------------------------------------------------------------- */

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_x86_decode),
		cmocka_unit_test(test_a64_decode),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
