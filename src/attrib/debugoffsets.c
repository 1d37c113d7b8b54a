// SPDX-License-Identifier: LGPL-2.1-or-later
/* The layout from _Py_DebugOffsets, the table CPython 3.13 keeps in _PyRuntime for debuggers. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <string.h>

#include <gelf.h>

#include "attrib-int.h"
#include "common/util.h"

static uint64_t rd64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* _Py_DebugOffsets as 3.13 lays it out (Include/internal/pycore_runtime.h). */
enum {
	DO_COOKIE = 0,
	DO_VERSION = 8,
	DO_FREE_THREADED = 16,
	DO_TS_CURRENT_FRAME = 184,
	DO_FRAME_EXECUTABLE = 240,
	DO_CODE_FILENAME = 280,
	DO_CODE_QUALNAME = 296,
	DO_CODE_FIRSTLINENO = 312,
	DO_OB_TYPE = 360,
	DO_TP_NAME = 376,
	DO_UNICODE_STATE = 544,
	DO_UNICODE_ASCII_SIZE = 560,
	DO_SIZE_313 = 584,
};

int attrib_layout_debug_offsets(struct gil_elf *f, struct gil_layout *out, char *err,
				size_t errlen)
{
	unsigned char d[DO_SIZE_313];
	const struct gil_layout *t;
	GElf_Sym sym;
	uint64_t ver;

	if (!gil_elf_find_symbol(f->elf, "_PyRuntime", &sym))
		return gil_err(err, errlen, "no _PyRuntime symbol");
	if (sym.st_size < sizeof(d) || gil_elf_read_vaddr(f, sym.st_value, d, sizeof(d)) < 0)
		return gil_err(err, errlen, "_PyRuntime not readable from the file");
	if (memcmp(d + DO_COOKIE, "xdebugpy", 8))
		return gil_err(err, errlen, "no _Py_DebugOffsets cookie in _PyRuntime");
	ver = rd64(d + DO_VERSION);
	/* only the layout verified here: 3.13.x; later versions moved fields */
	if ((ver >> 16) != 0x030d)
		return gil_err(err, errlen, "_Py_DebugOffsets of version 0x%llx: layout not known",
			       (unsigned long long)ver);
	if (rd64(d + DO_FREE_THREADED))
		return gil_err(err, errlen, "free-threaded build");
	t = gil_layout_table(313);
	*out = *t; /* the drop request (eval_breaker) and the state bits are not in the offsets */
	out->ts_frame = (int64_t)rd64(d + DO_TS_CURRENT_FRAME);
	out->frame_code = (int64_t)rd64(d + DO_FRAME_EXECUTABLE);
	out->code_filename = (int64_t)rd64(d + DO_CODE_FILENAME);
	out->code_name = (int64_t)rd64(d + DO_CODE_QUALNAME);
	out->code_firstlineno = (int64_t)rd64(d + DO_CODE_FIRSTLINENO);
	out->ob_type = (int64_t)rd64(d + DO_OB_TYPE);
	out->tp_name = (int64_t)rd64(d + DO_TP_NAME);
	out->state = (int64_t)rd64(d + DO_UNICODE_STATE);
	out->ascii_size = (int64_t)rd64(d + DO_UNICODE_ASCII_SIZE);
	return 0;
}

int gil_layout_debug_offsets(const char *path, struct gil_layout *out, char *err, size_t errlen)
{
	struct gil_elf f;
	int ret;

	if (gil_elf_open(&f, path, NULL, 0) < 0)
		return gil_err(err, errlen, "%s: %s", path, strerror(errno));
	ret = attrib_layout_debug_offsets(&f, out, err, errlen);
	gil_elf_close(&f);
	return ret;
}
