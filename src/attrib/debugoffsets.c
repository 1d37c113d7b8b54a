// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The layout from _Py_DebugOffsets, the table CPython 3.13+ keeps at the start of _PyRuntime for
 * debuggers. Fields were inserted in every minor version, so where each offset sits in the
 * structure is known per minor version, keyed by the version word the structure itself holds.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <gelf.h>

#include "attrib-int.h"
#include "common/pyversion.h"
#include "common/util.h"

static uint64_t rd64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* The same in every version: the cookie, Py_VERSION_HEX, free_threaded. */
enum {
	DO_COOKIE = 0,
	DO_VERSION = 8,
	DO_FREE_THREADED = 16,
	DO_SIZE_MAX = 1024,
};

/*
 * Where the offsets we read sit in _Py_DebugOffsets (Include/internal/pycore_debug_offsets.h),
 * per minor version; every number checked against the DWARF of Debian sid's python3.13-dbg
 * 3.13.18, python3.14-dbg 3.14.10 and python3.15-dbg 3.15.2 (tests/unit/test-attrib.c).
 */
struct do_positions {
	int minor;
	size_t size; /* sizeof(_Py_DebugOffsets) */
	size_t current_frame, executable, filename, qualname, firstlineno, ob_type, tp_name,
		ustate, ascii_size;
	size_t eval_breaker; /* debugger_support.eval_breaker; 0: not there (3.13) */
	bool tagged; /* f_executable is a _PyStackRef: its low two bits are tags */
	/* the GIL's holder: interpreters_head, ceval_gil, gil_runtime_state(_holder), native tid */
	size_t interp_head, ceval_gil, gil_state, gil_holder, native_tid;
	/* which GIL: thread_state.interp, interpreter_state.id */
	size_t ts_interp, interp_id;
};

static const struct do_positions positions[] = {
	{ 13, 584, 184, 240, 280, 296, 312, 360, 376, 544, 560, 0, false, 40, 112, 120, 144, 200,
	  176, 56 },
	{ 14, 760, 208, 264, 320, 336, 352, 408, 424, 624, 640, 712, true, 40, 120, 128, 152, 224,
	  200, 56 },
	/* 3.15.0b4 inserted last_profiled_frame*: only release candidates and finals are read */
	{ 15, 888, 208, 328, 384, 400, 416, 472, 488, 720, 736, 840, true, 40, 120, 128, 152, 248,
	  200, 56 },
};

int attrib_debug_offsets_parse(const unsigned char *d, size_t len, struct gil_layout *out,
			       const char **why)
{
	const struct do_positions *p = NULL;
	struct gil_layout l = { 0 };
	struct gil_pyversion ver;
	size_t i;

	*why = NULL;
	if (len < DO_FREE_THREADED + 8 || memcmp(d + DO_COOKIE, "xdebugpy", 8)) {
		*why = "no _Py_DebugOffsets cookie in _PyRuntime";
		return -1;
	}
	gil_pyversion_hex(rd64(d + DO_VERSION), &ver);
	for (i = 0; i < GIL_ARRAY_SIZE(positions); i++)
		if (ver.major == 3 && positions[i].minor == (int)ver.minor)
			p = &positions[i];
	if (!p) {
		*why = "_Py_DebugOffsets of a Python version whose layout is not known";
		return -1;
	}
	/* fields moved between the alphas and betas of a version: only its final layout is known */
	if (ver.level != 0xc && ver.level != 0xf) {
		*why = ver.level == 0xa || ver.level == 0xb
			       ? "_Py_DebugOffsets of a pre-release (alpha or beta): its layout is "
				 "not known"
			       : "_Py_DebugOffsets with an unknown release level";
		return -1;
	}
	if (len < p->size) {
		*why = "_PyRuntime smaller than its _Py_DebugOffsets";
		return -1;
	}
	if (rd64(d + DO_FREE_THREADED)) {
		*why = "free-threaded build";
		return -1;
	}
	l.version = 300 + (int)ver.minor;
	l.frame = GIL_FRAME_CURRENT;
	l.cframe_current = -1;
	l.qualname = true;
	l.code_tagged = p->tagged;
	l.ts_frame = (int64_t)rd64(d + p->current_frame);
	l.frame_code = (int64_t)rd64(d + p->executable);
	l.code_filename = (int64_t)rd64(d + p->filename);
	l.code_name = (int64_t)rd64(d + p->qualname);
	l.code_firstlineno = (int64_t)rd64(d + p->firstlineno);
	l.ob_type = (int64_t)rd64(d + p->ob_type);
	l.tp_name = (int64_t)rd64(d + p->tp_name);
	l.state = (int64_t)rd64(d + p->ustate);
	l.ascii_size = (int64_t)rd64(d + p->ascii_size);
	/* PyASCIIObject.state: interned:2, kind:3, compact:1, ascii:1 in 3.13 - 3.15 */
	l.compact_bit = 5;
	l.ascii_bit = 6;
	l.req = GIL_REQ_BIT0;
	snprintf(l.req_arg, sizeof(l.req_arg), "tstate");
	if (p->eval_breaker) {
		l.req_off = (int64_t)rd64(d + p->eval_breaker);
	} else {
		/* 3.13 does not give it: PyThreadState.eval_breaker, held against DWARF */
		l.req_off = gil_layout_table(313)->req_off;
	}
	l.rt_interp_head = (int64_t)rd64(d + p->interp_head);
	l.interp_gil = (int64_t)rd64(d + p->ceval_gil);
	l.gil_holder = (int64_t)(rd64(d + p->gil_holder) - rd64(d + p->gil_state));
	l.ts_native_tid = (int64_t)rd64(d + p->native_tid);
	l.ts_interp = (int64_t)rd64(d + p->ts_interp);
	l.interp_id = (int64_t)rd64(d + p->interp_id);
	l.interp_own_gil = (int64_t)rd64(d + p->gil_state);
	/* ceval.gil is the GIL's way in: without it, which GIL is not read */
	if (l.ts_interp <= 0 || l.ts_interp >= 4096 || l.interp_id <= 0 ||
	    l.interp_id >= 65536 || l.interp_own_gil <= 0 || l.interp_own_gil >= 65536 ||
	    (rd64(d + p->ceval_gil) <= 0 || rd64(d + p->ceval_gil) >= 65536))
		l.ts_interp = l.interp_id = l.interp_own_gil = 0;
	if (l.rt_interp_head <= 0 || l.rt_interp_head >= 65536 || l.interp_gil <= 0 ||
	    l.interp_gil >= 65536 || l.gil_holder <= 0 || l.gil_holder >= 256 ||
	    l.ts_native_tid <= 0 || l.ts_native_tid >= 4096)
		l.rt_interp_head = l.interp_gil = l.gil_holder = l.ts_native_tid = 0;
	/* offsets into objects of a few hundred bytes: anything else is not this layout */
	if (l.ts_frame <= 0 || l.ts_frame >= 4096 || l.frame_code < 0 || l.frame_code >= 4096 ||
	    l.code_filename <= 0 || l.code_filename >= 4096 || l.code_name <= 0 ||
	    l.code_name >= 4096 || l.code_firstlineno <= 0 || l.code_firstlineno >= 4096 ||
	    l.ob_type < 0 || l.ob_type >= 64 || l.tp_name <= 0 || l.tp_name >= 4096 ||
	    l.state <= 0 || l.state >= 256 || l.ascii_size <= 0 || l.ascii_size >= 256 ||
	    l.req_off <= 0 || l.req_off >= 4096) {
		*why = "_Py_DebugOffsets holds implausible offsets";
		return -1;
	}
	*out = l;
	return 0;
}

int attrib_layout_debug_offsets(struct gil_elf *f, struct gil_layout *out, const char **why)
{
	unsigned char d[DO_SIZE_MAX];
	GElf_Sym sym;
	size_t n;

	*why = NULL;
	if (!gil_elf_find_symbol(f->elf, "_PyRuntime", &sym)) {
		*why = "no _PyRuntime symbol";
		return -1;
	}
	n = sym.st_size < sizeof(d) ? (size_t)sym.st_size : sizeof(d);
	if (n < DO_FREE_THREADED + 8 || gil_elf_read_vaddr(f, sym.st_value, d, n) < 0) {
		*why = "_PyRuntime not readable from the file";
		return -1;
	}
	if (memcmp(d + DO_COOKIE, "xdebugpy", 8)) {
		*why = "no _Py_DebugOffsets cookie in _PyRuntime";
		return -1;
	}
	if (attrib_debug_offsets_parse(d, n, out, why) < 0)
		return -2;
	out->runtime_addr = sym.st_value;
	return 0;
}

int gil_layout_debug_offsets(const char *path, struct gil_layout *out, char *err, size_t errlen)
{
	const char *why;
	struct gil_elf f;
	int ret;

	if (gil_elf_open(&f, path, NULL, 0) < 0)
		return gil_err(err, errlen, "%s: %s", path, strerror(errno));
	ret = attrib_layout_debug_offsets(&f, out, &why);
	gil_elf_close(&f);
	if (ret < 0)
		return gil_err(err, errlen, "%s: %s", path, why);
	return 0;
}

int gil_layout_debug_offsets_buf(const void *buf, size_t len, struct gil_layout *out, char *err,
				 size_t errlen)
{
	const char *why;

	if (attrib_debug_offsets_parse(buf, len, out, &why) < 0)
		return gil_err(err, errlen, "%s", why);
	return 0;
}
