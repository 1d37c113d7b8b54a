// SPDX-License-Identifier: LGPL-2.1-or-later
/* The built-in layouts of release builds, for interpreters without DWARF (see attrib.h). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "attrib.h"
#include "common/util.h"

/*
 * ---- the table: 3.8 - 3.15 release builds (which GIL: 3.12+), verified by
 * tests/unit/test-attrib.c on x86-64 and on Debian arm64's 3.11 (the same LP64 layout) ----
 */

static const struct gil_layout table[] = {
	{
		.version = 308, .frame = GIL_FRAME_OBJECT, .ts_frame = 24, .cframe_current = -1,
		.frame_code = 32, .code_name = 112, .qualname = false, .code_filename = 104,
		.code_firstlineno = 40, .ob_type = 8, .tp_name = 24, .ascii_size = 48, .state = 32,
		.compact_bit = 5, .ascii_bit = 6, .req = GIL_REQ_FLAG, .req_off = 12, .req_arg = "ceval",
	},
	{
		.version = 309, .frame = GIL_FRAME_OBJECT, .ts_frame = 24, .cframe_current = -1,
		.frame_code = 32, .code_name = 112, .qualname = false, .code_filename = 104,
		.code_firstlineno = 40, .ob_type = 8, .tp_name = 24, .ascii_size = 48, .state = 32,
		.compact_bit = 5, .ascii_bit = 6, .req = GIL_REQ_FLAG, .req_off = 12, .req_arg = "ceval2",
	},
	{
		.version = 310, .frame = GIL_FRAME_OBJECT, .ts_frame = 24, .cframe_current = -1,
		.frame_code = 32, .code_name = 112, .qualname = false, .code_filename = 104,
		.code_firstlineno = 40, .ob_type = 8, .tp_name = 24, .ascii_size = 48, .state = 32,
		.compact_bit = 5, .ascii_bit = 6, .req = GIL_REQ_FLAG, .req_off = 8, .req_arg = "ceval2",
	},
	{
		.version = 311, .frame = GIL_FRAME_CFRAME, .ts_frame = 56, .cframe_current = 8,
		.frame_code = 32, .code_name = 128, .qualname = true, .code_filename = 112,
		.code_firstlineno = 72, .ob_type = 8, .tp_name = 24, .ascii_size = 48, .state = 32,
		.compact_bit = 5, .ascii_bit = 6, .req = GIL_REQ_FLAG, .req_off = 8, .req_arg = "ceval2",
	},
	{
		.version = 312, .frame = GIL_FRAME_CFRAME, .ts_frame = 56, .cframe_current = 0,
		.frame_code = 0, .code_name = 128, .qualname = true, .code_filename = 112,
		.code_firstlineno = 68, .ob_type = 8, .tp_name = 24, .ascii_size = 40, .state = 32,
		.compact_bit = 5, .ascii_bit = 6, .req = GIL_REQ_FLAG, .req_off = 4, .req_arg = "ceval",
		.ts_interp = 16, .interp_id = 8, .interp_own_gil = 1040, .interp_gil = 384,
	},
	{
		.version = 313, .frame = GIL_FRAME_CURRENT, .ts_frame = 72, .cframe_current = -1,
		.frame_code = 0, .code_name = 128, .qualname = true, .code_filename = 112,
		.code_firstlineno = 68, .ob_type = 8, .tp_name = 24, .ascii_size = 40, .state = 32,
		.compact_bit = 5, .ascii_bit = 6, .req = GIL_REQ_BIT0, .req_off = 24, .req_arg = "tstate",
		.ts_interp = 16, .interp_id = 7272, .interp_own_gil = 7752, .interp_gil = 16,
	},
	/* 3.14, 3.15: as 3.13, with a tagged f_executable (checked on Debian sid's -dbg DWARF) */
	{
		.version = 314, .frame = GIL_FRAME_CURRENT, .ts_frame = 72, .cframe_current = -1,
		.frame_code = 0, .code_tagged = true, .code_name = 128, .qualname = true,
		.code_filename = 112, .code_firstlineno = 68, .ob_type = 8, .tp_name = 24,
		.ascii_size = 40, .state = 32, .compact_bit = 5, .ascii_bit = 6, .req = GIL_REQ_BIT0,
		.req_off = 24, .req_arg = "tstate",
		.ts_interp = 16, .interp_id = 7280, .interp_own_gil = 7784, .interp_gil = 16,
	},
	{
		.version = 315, .frame = GIL_FRAME_CURRENT, .ts_frame = 72, .cframe_current = -1,
		.frame_code = 0, .code_tagged = true, .code_name = 128, .qualname = true,
		.code_filename = 112, .code_firstlineno = 68, .ob_type = 8, .tp_name = 24,
		.ascii_size = 40, .state = 32, .compact_bit = 5, .ascii_bit = 6, .req = GIL_REQ_BIT0,
		.req_off = 24, .req_arg = "tstate",
		.ts_interp = 16, .interp_id = 7272, .interp_own_gil = 7736, .interp_gil = 16,
	},
};

const struct gil_layout *gil_layout_table(int version)
{
	size_t i;

	for (i = 0; i < GIL_ARRAY_SIZE(table); i++)
		if (table[i].version == version)
			return &table[i];
	return NULL;
}
