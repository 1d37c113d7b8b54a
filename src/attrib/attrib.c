// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Attribution fetchargs (see attrib.h). A uprobe fetcharg dereferences user memory at hit time;
 * a faulting read leaves a string empty ("(fault)") but a number stale, so every number read
 * here is only believed when a string read through the same pointers succeeded: the frame's
 * code object must have a type named "code" before its name, file or line count.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gelf.h>

#include "attrib.h"
#include "common/util.h"

#define ARG_MAX_LEN 63 /* the kernel's MAX_ARGSTR_LEN for one fetcharg, type included */

/* ---- the table: 3.8 - 3.13 release builds (x86-64), verified by tests/unit/test-attrib.c ---- */

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
	},
	{
		.version = 313, .frame = GIL_FRAME_CURRENT, .ts_frame = 72, .cframe_current = -1,
		.frame_code = 0, .code_name = 128, .qualname = true, .code_filename = 112,
		.code_firstlineno = 68, .ob_type = 8, .tp_name = 24, .ascii_size = 40, .state = 32,
		.compact_bit = 5, .ascii_bit = 6, .req = GIL_REQ_BIT0, .req_off = 24, .req_arg = "tstate",
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

const char *gil_attrib_source_name(enum gil_attr_source src)
{
	switch (src) {
	case GIL_ATTR_SRC_DWARF:
		return "dwarf";
	case GIL_ATTR_SRC_DEBUG_OFFSETS:
		return "debug_offsets";
	case GIL_ATTR_SRC_TABLE:
		return "table";
	default:
		return NULL;
	}
}

/* "3.12.1" -> 312; 0 when not a 3.x version. */
static int parse_version(const char *v)
{
	char *end;
	long major, minor;

	if (!v)
		return 0;
	major = strtol(v, &end, 10);
	if (major != 3 || *end != '.')
		return 0;
	minor = strtol(end + 1, &end, 10);
	if (minor < 0 || minor > 99)
		return 0;
	return (int)(major * 100 + minor);
}

/* ---- argument locations, and the fetchargs built on them ------------------------------------ */

/* Where a pointer argument is at the probed instruction, as far as a fetcharg can say. */
enum loc_kind {
	L_NONE = 0,
	L_REG, /* in register reg */
	L_REGOFF, /* its value is reg + off */
	L_MEM, /* stored in memory at reg + off */
	L_ADDR, /* a constant address (a global) */
};

struct loc {
	enum loc_kind kind;
	int reg; /* DWARF register number, x86-64 */
	int64_t off;
	uint64_t addr;
};

static const char *const regs[] = { "ax", "dx", "cx", "bx", "si", "di", "bp", "sp",
				    "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15" };

/* x86-64 System V argument registers, as DWARF numbers: di si dx cx r8 r9. */
static const int abi_arg_reg[] = { 5, 4, 1, 2, 8, 9 };

/* Building fetchargs: an expression for "the value at @l + @off"; @delta maps globals. */
struct fa {
	char *buf;
	size_t len, cap;
	bool failed;
	const char *why;
};

static int deref_loc(char *out, size_t len, const struct loc *l, int64_t off, int64_t delta)
{
	int n = -1;

	switch (l->kind) {
	case L_REG:
		if (l->reg >= 0 && l->reg < (int)GIL_ARRAY_SIZE(regs))
			n = snprintf(out, len, "%+lld(%%%s)", (long long)off, regs[l->reg]);
		break;
	case L_REGOFF:
		if (l->reg >= 0 && l->reg < (int)GIL_ARRAY_SIZE(regs))
			n = snprintf(out, len, "%+lld(%%%s)", (long long)(l->off + off), regs[l->reg]);
		break;
	case L_MEM:
		if (l->reg >= 0 && l->reg < (int)GIL_ARRAY_SIZE(regs))
			n = snprintf(out, len, "%+lld(%+lld(%%%s))", (long long)off, (long long)l->off,
				     regs[l->reg]);
		break;
	case L_ADDR:
		/* @+OFFSET: the kernel adds the probed file's load bias, found from the text */
		if ((int64_t)(l->addr + (uint64_t)off) - delta >= 0)
			n = snprintf(out, len, "@+%lld",
				     (long long)((int64_t)(l->addr + (uint64_t)off) - delta));
		break;
	default:
		break;
	}
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

/* "+OFF(INNER)" */
static int wrap(char *out, size_t len, const char *inner, int64_t off)
{
	int n = snprintf(out, len, "%+lld(%s)", (long long)off, inner);

	return n < 0 || (size_t)n >= len ? -1 : 0;
}

static void fa_add(struct fa *f, const char *name, const char *expr, const char *type)
{
	size_t need = strlen(name) + strlen(expr) + strlen(type) + 4;
	char *p;

	if (f->failed)
		return;
	if (strlen(expr) + 1 + strlen(type) > ARG_MAX_LEN) {
		f->failed = true;
		f->why = "fetch expression too long for the kernel";
		return;
	}
	if (f->len + need >= f->cap) {
		p = realloc(f->buf, f->cap + need + 256);
		if (!p) {
			f->failed = true;
			f->why = NULL; /* ENOMEM */
			return;
		}
		f->buf = p;
		f->cap += need + 256;
	}
	f->len += (size_t)sprintf(f->buf + f->len, "%s%s=%s:%s", f->len ? " " : "", name, expr, type);
}

/*
 * The compact ASCII data of the string at @obj (an expression), and its compact and ascii bits
 * as one two-bit field (value 3: both set) when they are neighbours, as in every CPython 3.
 */
static void fa_string(struct fa *f, const struct gil_layout *lay, const char *prefix,
		      const char *obj)
{
	char e[128], name[32], type[16];

	if (wrap(e, sizeof(e), obj, lay->ascii_size) < 0)
		goto toolong;
	fa_add(f, prefix, e, "string");
	if (wrap(e, sizeof(e), obj, lay->state) < 0)
		goto toolong;
	snprintf(name, sizeof(name), "%ss", prefix);
	snprintf(type, sizeof(type), "b2@%d/8", lay->compact_bit);
	fa_add(f, name, e, type);
	return;
toolong:
	f->failed = true;
	f->why = "fetch expression too long for the kernel";
}

/*
 * The fetchargs of one entry site: @ts is where the thread state is, @req where the argument
 * holding the drop request is (drop_gil only; kind L_NONE: no class). Returns a malloc'd
 * string, or NULL with *@why set (NULL *@why: out of memory).
 */
static char *build_fetchargs(const struct gil_layout *lay, const struct loc *ts,
			     const struct loc *req, bool drop, int64_t delta, const char **why)
{
	char fr[128], code[128], e[128], obj[128];
	struct fa f = { 0 };

	*why = NULL;
	/* the thread state itself, when it can be NULL (a register or a stack slot) */
	if (ts->kind == L_REG) {
		snprintf(e, sizeof(e), "%%%s", regs[ts->reg]);
		fa_add(&f, "gil_ts", e, "x64");
	} else if (ts->kind == L_MEM) {
		snprintf(e, sizeof(e), "%+lld(%%%s)", (long long)ts->off, regs[ts->reg]);
		fa_add(&f, "gil_ts", e, "x64");
	}
	/* the frame pointer */
	if (deref_loc(fr, sizeof(fr), ts, lay->ts_frame, delta) < 0)
		goto toolong;
	if (lay->frame == GIL_FRAME_CFRAME) {
		if (wrap(e, sizeof(e), fr, lay->cframe_current) < 0)
			goto toolong;
		snprintf(fr, sizeof(fr), "%s", e);
	}
	fa_add(&f, "gil_fr", fr, "x64");
	if (wrap(code, sizeof(code), fr, lay->frame_code) < 0)
		goto toolong;
	/*
	 * 3.13's frames hold any object (entry frames hold None): its type's name must read
	 * "code". Before, f_code is always a code object, and the name string read through it
	 * proves the chain was readable. Each dereference costs at every hit: no more than this.
	 */
	if (lay->frame == GIL_FRAME_CURRENT) {
		if (wrap(e, sizeof(e), code, lay->ob_type) < 0 ||
		    wrap(obj, sizeof(obj), e, lay->tp_name) < 0 || wrap(e, sizeof(e), obj, 0) < 0)
			goto toolong;
		fa_add(&f, "gil_ty", e, "string");
	}
	if (wrap(obj, sizeof(obj), code, lay->code_name) < 0)
		goto toolong;
	fa_string(&f, lay, "gil_fn", obj);
	if (wrap(obj, sizeof(obj), code, lay->code_filename) < 0)
		goto toolong;
	fa_string(&f, lay, "gil_file", obj);
	if (wrap(e, sizeof(e), code, lay->code_firstlineno) < 0)
		goto toolong;
	fa_add(&f, "gil_line", e, "s32");
	if (drop && req->kind != L_NONE) {
		if (deref_loc(e, sizeof(e), req, lay->req_off, delta) < 0)
			goto toolong;
		fa_add(&f, "gil_req", e, lay->req == GIL_REQ_BIT0 ? "b1@0/8" : "u32");
	}
	if (f.failed) {
		free(f.buf);
		*why = f.why;
		return NULL;
	}
	return f.buf;
toolong:
	free(f.buf);
	*why = "fetch expression too long for the kernel";
	return NULL;
}

/* ---- _Py_DebugOffsets ---------------------------------------------------------------------- */

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

static int layout_debug_offsets(struct gil_elf *f, struct gil_layout *out, char *err,
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
	ret = layout_debug_offsets(&f, out, err, errlen);
	gil_elf_close(&f);
	return ret;
}

/* A debug build (Py_DEBUG) lays objects out differently: the table is for release builds. */
static bool is_debug_build(Elf *elf)
{
	GElf_Sym sym;

	return gil_elf_find_symbol(elf, "_Py_NegativeRefcount", &sym);
}

/* Is @s a plain function entry whose arguments follow the ABI (no clone suffix but .lto_priv)? */
static bool abi_entry(const struct gil_site *s)
{
	const char *p = strchr(s->symbol, '.');

	if (!s->retprobe || s->approximate || s->role != GIL_SITE_ENTRY)
		return false;
	if (strncmp(s->symbol, "take_gil", 8) && strncmp(s->symbol, "drop_gil", 8))
		return false;
	while (p) {
		if (strncmp(p, ".lto_priv.", 10))
			return false;
		p = strchr(p + 1, '.');
		if (p)
			p = strchr(p + 1, '.'); /* skip the number */
	}
	return true;
}

/* Argument positions of take_gil/drop_gil by version: tstate, and the drop-request holder. */
static void abi_locs(int version, enum gil_func fn, struct loc *ts, struct loc *req)
{
	int t = -1, r = -1;

	if (fn == GIL_FN_TAKE) {
		t = version == 308 ? 1 : 0;
	} else if (version == 308 || version == 312) {
		r = 0;
		t = 1;
	} else if (version >= 309 && version <= 311) {
		r = 1;
		t = 2;
	} else if (version == 313) {
		t = 1;
		r = 1;
	}
	memset(ts, 0, sizeof(*ts));
	memset(req, 0, sizeof(*req));
	if (t >= 0) {
		ts->kind = L_REG;
		ts->reg = abi_arg_reg[t];
	}
	if (r >= 0) {
		req->kind = L_REG;
		req->reg = abi_arg_reg[r];
	}
}

/* ---- DWARF ----------------------------------------------------------------------------------- */

#ifdef HAVE_LIBDW
#include <dwarf.h>
#include <elfutils/libdw.h>

/* The few named DIEs the layout needs, found in one pass over every unit's top level. */
enum want {
	W_TS, /* struct _ts */
	W_OBJECT, /* struct _object */
	W_ASCII, /* typedef PyASCIIObject */
	W_CODE_T, /* typedef PyCodeObject */
	W_DROP, /* subprogram drop_gil with its parameters */
	W_NR,
};

static const struct {
	int tag;
	const char *name;
} wanted[W_NR] = {
	[W_TS] = { DW_TAG_structure_type, "_ts" },
	[W_OBJECT] = { DW_TAG_structure_type, "_object" },
	[W_ASCII] = { DW_TAG_typedef, "PyASCIIObject" },
	[W_CODE_T] = { DW_TAG_typedef, "PyCodeObject" },
	[W_DROP] = { DW_TAG_subprogram, "drop_gil" },
};

struct dw {
	Dwarf *dbg;
	Dwarf_Die found[W_NR];
	bool have[W_NR];
	bool scanned;
};

static bool is_declaration(Dwarf_Die *die)
{
	bool flag = false;
	Dwarf_Attribute a;

	if (dwarf_attr(die, DW_AT_declaration, &a))
		dwarf_formflag(&a, &flag);
	return flag;
}

/* A drop_gil DIE that lists its parameters with names and types (not a concrete copy). */
static bool is_abstract_drop(Dwarf_Die *die)
{
	Dwarf_Die child;
	Dwarf_Attribute a;

	if (dwarf_child(die, &child) != 0)
		return false;
	do {
		if (dwarf_tag(&child) == DW_TAG_formal_parameter)
			return dwarf_attr(&child, DW_AT_type, &a) != NULL;
	} while (dwarf_siblingof(&child, &child) == 0);
	return false;
}

static void scan_units(struct dw *d)
{
	Dwarf_Off off = 0, next;
	size_t hsize, left = W_NR;
	Dwarf_Die cu, die;
	const char *name;
	int tag, w;

	d->scanned = true;
	while (left && dwarf_nextcu(d->dbg, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		if (!dwarf_offdie(d->dbg, off + hsize, &cu) || dwarf_child(&cu, &die) != 0) {
			off = next;
			continue;
		}
		do {
			tag = dwarf_tag(&die);
			if (tag != DW_TAG_structure_type && tag != DW_TAG_typedef &&
			    tag != DW_TAG_subprogram)
				continue;
			name = dwarf_diename(&die);
			if (!name)
				continue;
			for (w = 0; w < W_NR; w++) {
				if (d->have[w] || wanted[w].tag != tag || strcmp(wanted[w].name, name))
					continue;
				if (tag == DW_TAG_structure_type && is_declaration(&die))
					continue;
				if (w == W_DROP && !is_abstract_drop(&die))
					continue;
				d->found[w] = die;
				d->have[w] = true;
				left--;
			}
		} while (dwarf_siblingof(&die, &die) == 0);
		off = next;
	}
}

/* Follow typedefs and qualifiers to the type itself. */
static bool peel(Dwarf_Die *t)
{
	Dwarf_Attribute a;
	int i, tag;

	for (i = 0; i < 16; i++) {
		tag = dwarf_tag(t);
		if (tag != DW_TAG_typedef && tag != DW_TAG_const_type && tag != DW_TAG_volatile_type &&
		    tag != DW_TAG_restrict_type && tag != DW_TAG_atomic_type)
			return true;
		if (!dwarf_attr_integrate(t, DW_AT_type, &a) || !dwarf_formref_die(&a, t))
			return false;
	}
	return false;
}

/* The first top-level DIE of any unit that @match accepts (with @arg), into *@out. */
static bool top_level_die(struct dw *d, bool (*match)(Dwarf_Die *, void *), void *arg,
			  Dwarf_Die *out)
{
	Dwarf_Off off = 0, next;
	Dwarf_Die cu, die;
	size_t hsize;

	while (dwarf_nextcu(d->dbg, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		if (dwarf_offdie(d->dbg, off + hsize, &cu) && dwarf_child(&cu, &die) == 0) {
			do {
				if (match(&die, arg)) {
					*out = die;
					return true;
				}
			} while (dwarf_siblingof(&die, &die) == 0);
		}
		off = next;
	}
	return false;
}

static bool is_complete_struct_named(Dwarf_Die *die, void *want)
{
	const char *name;

	if (dwarf_tag(die) != DW_TAG_structure_type || is_declaration(die))
		return false;
	name = dwarf_diename(die);
	return name && !strcmp(name, want);
}

/* A complete struct named like the declaration @decl, from any unit. */
static bool complete_struct(struct dw *d, Dwarf_Die *decl)
{
	const char *want = dwarf_diename(decl);

	return want && top_level_die(d, is_complete_struct_named, (void *)want, decl);
}

/* The struct @type points at (through typedefs), completed when only declared here. */
static bool pointee_struct(struct dw *d, Dwarf_Die *type, Dwarf_Die *out)
{
	Dwarf_Attribute a;
	Dwarf_Die t = *type;

	if (!peel(&t) || dwarf_tag(&t) != DW_TAG_pointer_type)
		return false;
	if (!dwarf_attr_integrate(&t, DW_AT_type, &a) || !dwarf_formref_die(&a, &t) || !peel(&t))
		return false;
	if (dwarf_tag(&t) != DW_TAG_structure_type)
		return false;
	if (is_declaration(&t) && !complete_struct(d, &t))
		return false;
	*out = t;
	return true;
}

static bool udata(Dwarf_Die *die, int at, Dwarf_Word *v)
{
	Dwarf_Attribute a;

	return dwarf_attr(die, at, &a) && dwarf_formudata(&a, v) == 0;
}

/* Offset of member @name of struct @st (also inside anonymous members), and its type. */
static bool member(Dwarf_Die *st, const char *name, int64_t *off, Dwarf_Die *type)
{
	Dwarf_Die m, t;
	Dwarf_Attribute a;
	Dwarf_Word loc;
	const char *mn;
	int64_t inner;

	if (dwarf_child(st, &m) != 0)
		return false;
	do {
		if (dwarf_tag(&m) != DW_TAG_member)
			continue;
		loc = 0;
		if (dwarf_attr(&m, DW_AT_data_member_location, &a) && dwarf_formudata(&a, &loc) != 0)
			continue; /* a location expression: not in C structs */
		mn = dwarf_diename(&m);
		if (mn && !strcmp(mn, name)) {
			*off = (int64_t)loc;
			if (type && (!dwarf_attr_integrate(&m, DW_AT_type, &a) ||
				     !dwarf_formref_die(&a, type)))
				return false;
			return true;
		}
		if (!mn && dwarf_attr_integrate(&m, DW_AT_type, &a) && dwarf_formref_die(&a, &t) &&
		    peel(&t) &&
		    (dwarf_tag(&t) == DW_TAG_structure_type || dwarf_tag(&t) == DW_TAG_union_type) &&
		    member(&t, name, &inner, type)) {
			*off = (int64_t)loc + inner;
			return true;
		}
	} while (dwarf_siblingof(&m, &m) == 0);
	return false;
}

/* Bit number (from the least significant bit of the struct's first byte) of bitfield @name. */
static bool bitfield(Dwarf_Die *st, const char *name, int *bit)
{
	Dwarf_Word bo, bs, size, loc = 0;
	const char *mn;
	Dwarf_Die m;

	if (dwarf_child(st, &m) != 0)
		return false;
	do {
		mn = dwarf_diename(&m);
		if (dwarf_tag(&m) != DW_TAG_member || !mn || strcmp(mn, name))
			continue;
		if (!udata(&m, DW_AT_bit_size, &bs))
			return false;
		if (udata(&m, DW_AT_data_bit_offset, &bo)) {
			*bit = (int)bo;
			return true;
		}
		/* DWARF 2-4: counted from the most significant bit of the storage unit */
		udata(&m, DW_AT_data_member_location, &loc);
		if (!udata(&m, DW_AT_bit_offset, &bo) || !udata(&m, DW_AT_byte_size, &size))
			return false;
		*bit = (int)(loc * 8 + size * 8 - bo - bs);
		return true;
	} while (dwarf_siblingof(&m, &m) == 0);
	return false;
}

static bool struct_of_typedef(struct dw *d, Dwarf_Die *td, Dwarf_Die *out)
{
	Dwarf_Die t = *td;

	if (!peel(&t) || dwarf_tag(&t) != DW_TAG_structure_type)
		return false;
	if (is_declaration(&t) && !complete_struct(d, &t))
		return false;
	*out = t;
	return true;
}

struct global_want {
	const char *name;
	uint64_t addr;
};

static bool is_global_named(Dwarf_Die *die, void *arg)
{
	struct global_want *w = arg;
	Dwarf_Attribute a, na;
	Dwarf_Op *ops;
	const char *dn;
	size_t n;

	if (dwarf_tag(die) != DW_TAG_variable || !dwarf_attr(die, DW_AT_location, &a))
		return false;
	dn = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &na));
	if (!dn || strcmp(dn, w->name))
		return false;
	if (dwarf_getlocation(&a, &ops, &n) != 0 || n != 1 || ops[0].atom != DW_OP_addr)
		return false;
	w->addr = ops[0].number;
	return true;
}

/*
 * The defining DIE of global variable @name (one with a DW_OP_addr location) and its address.
 * The name may sit on a declaration the definition points to (DW_AT_specification).
 */
static bool global_var(struct dw *d, const char *name, Dwarf_Die *out, uint64_t *addr)
{
	struct global_want w = { name, 0 };

	if (!top_level_die(d, is_global_named, &w, out))
		return false;
	*addr = w.addr;
	return true;
}

/* The complete struct a variable or member's type names (through typedefs and qualifiers). */
static bool type_struct(struct dw *d, Dwarf_Die *die, Dwarf_Die *out)
{
	Dwarf_Attribute a;
	Dwarf_Die t;

	if (!dwarf_attr_integrate(die, DW_AT_type, &a) || !dwarf_formref_die(&a, &t))
		return false;
	return struct_of_typedef(d, &t, out);
}

/*
 * Before 3.8 no drop_gil argument leads to the drop request: it is a global. 3.6: the static
 * gil_drop_request of ceval.c; 3.7: _PyRuntime.ceval.gil_drop_request. Both _Py_atomic_int,
 * whose int _value comes first.
 */
static bool layout_req_global(struct dw *d, struct gil_layout *l)
{
	Dwarf_Die var, st, ceval, t;
	int64_t c_off, r_off;
	uint64_t addr;

	if (global_var(d, "gil_drop_request", &var, &addr)) {
		l->req = GIL_REQ_GLOBAL;
		l->req_off = 0;
		l->req_addr = addr;
		l->req_arg[0] = '\0';
		return true;
	}
	if (global_var(d, "_PyRuntime", &var, &addr) && type_struct(d, &var, &st) &&
	    member(&st, "ceval", &c_off, &t) && struct_of_typedef(d, &t, &ceval) &&
	    member(&ceval, "gil_drop_request", &r_off, NULL)) {
		l->req = GIL_REQ_GLOBAL;
		l->req_off = c_off + r_off;
		l->req_addr = addr;
		l->req_arg[0] = '\0';
		return true;
	}
	return false;
}

/* Which drop_gil argument points at the drop request: the layout's req, req_off and req_arg. */
static bool layout_req(struct dw *d, struct gil_layout *l, Dwarf_Die *ts_struct)
{
	Dwarf_Die p, t, st;
	Dwarf_Attribute a;
	const char *name;
	int64_t off;

	if (d->have[W_DROP] && dwarf_child(&d->found[W_DROP], &p) == 0) {
		do {
			if (dwarf_tag(&p) != DW_TAG_formal_parameter)
				continue;
			name = dwarf_diename(&p);
			if (!name || strlen(name) >= sizeof(l->req_arg) ||
			    !dwarf_attr_integrate(&p, DW_AT_type, &a) || !dwarf_formref_die(&a, &t) ||
			    !pointee_struct(d, &t, &st))
				continue;
			if (member(&st, "gil_drop_request", &off, NULL)) {
				l->req = GIL_REQ_FLAG;
				l->req_off = off; /* _Py_atomic_int: its int _value comes first */
				snprintf(l->req_arg, sizeof(l->req_arg), "%s", name);
				return true;
			}
		} while (dwarf_siblingof(&p, &p) == 0);
	}
	/* 3.13: a bit of the holder's eval_breaker */
	if (member(ts_struct, "eval_breaker", &off, NULL)) {
		l->req = GIL_REQ_BIT0;
		l->req_off = off;
		snprintf(l->req_arg, sizeof(l->req_arg), "tstate");
		return true;
	}
	return layout_req_global(d, l);
}

static int layout_from_dwarf(struct dw *d, struct gil_layout *l, char *err, size_t errlen)
{
	Dwarf_Die ts, t, st, cf, code, obj, ascii, state;
	int64_t off;

	if (!d->scanned)
		scan_units(d);
	memset(l, 0, sizeof(*l));
	l->cframe_current = -1;
	if (!d->have[W_TS])
		return gil_err(err, errlen, "no struct _ts (PyThreadState) in the DWARF");
	ts = d->found[W_TS];
	/* the current frame: 3.13 current_frame, 3.11/3.12 cframe->current_frame, else frame */
	if (member(&ts, "current_frame", &l->ts_frame, &t) && pointee_struct(d, &t, &st)) {
		l->frame = GIL_FRAME_CURRENT;
		l->version = 313;
	} else if (member(&ts, "cframe", &l->ts_frame, &t) && pointee_struct(d, &t, &cf) &&
		   member(&cf, "current_frame", &l->cframe_current, &t) &&
		   pointee_struct(d, &t, &st)) {
		l->frame = GIL_FRAME_CFRAME;
		l->version = 311;
	} else if (member(&ts, "frame", &l->ts_frame, &t) && pointee_struct(d, &t, &st)) {
		l->frame = GIL_FRAME_OBJECT;
	} else {
		return gil_err(err, errlen, "no current frame member in PyThreadState");
	}
	if (member(&st, "f_code", &l->frame_code, &t)) {
		if (!pointee_struct(d, &t, &code))
			return gil_err(err, errlen, "f_code is not a pointer to a struct");
	} else if (member(&st, "f_executable", &l->frame_code, NULL)) {
		if (!d->have[W_CODE_T] || !struct_of_typedef(d, &d->found[W_CODE_T], &code))
			return gil_err(err, errlen, "no PyCodeObject type in the DWARF");
	} else {
		return gil_err(err, errlen, "no f_code or f_executable in the frame");
	}
	l->qualname = member(&code, "co_qualname", &l->code_name, NULL);
	if (!l->qualname && !member(&code, "co_name", &l->code_name, NULL))
		return gil_err(err, errlen, "no co_name in PyCodeObject");
	if (!member(&code, "co_filename", &l->code_filename, NULL) ||
	    !member(&code, "co_firstlineno", &l->code_firstlineno, NULL))
		return gil_err(err, errlen, "no co_filename or co_firstlineno in PyCodeObject");
	if (!d->have[W_OBJECT] || !member(&d->found[W_OBJECT], "ob_type", &l->ob_type, &t) ||
	    !pointee_struct(d, &t, &obj) || !member(&obj, "tp_name", &l->tp_name, NULL))
		return gil_err(err, errlen, "no PyObject.ob_type->tp_name in the DWARF");
	if (!d->have[W_ASCII] || !struct_of_typedef(d, &d->found[W_ASCII], &ascii) ||
	    !dwarf_hasattr(&ascii, DW_AT_byte_size))
		return gil_err(err, errlen, "no PyASCIIObject in the DWARF");
	{
		Dwarf_Word size;

		udata(&ascii, DW_AT_byte_size, &size);
		l->ascii_size = (int64_t)size;
	}
	if (!member(&ascii, "state", &off, &t) || !peel(&t) ||
	    dwarf_tag(&t) != DW_TAG_structure_type)
		return gil_err(err, errlen, "no PyASCIIObject.state in the DWARF");
	state = t;
	if (!bitfield(&state, "compact", &l->compact_bit) ||
	    !bitfield(&state, "ascii", &l->ascii_bit) || l->compact_bit / 8 != l->ascii_bit / 8 ||
	    l->ascii_bit != l->compact_bit + 1)
		return gil_err(err, errlen, "unexpected PyASCIIObject.state bits");
	l->state = off + l->compact_bit / 8;
	l->compact_bit %= 8;
	l->ascii_bit %= 8;
	if (!layout_req(d, l, &ts))
		l->req = GIL_REQ_NONE;
	/* the version, as far as the layout tells; the caller may know better */
	if (l->frame == GIL_FRAME_CFRAME && l->frame_code == 0)
		l->version = 312;
	return 0;
}

/* Reduce a location expression to a struct loc; @entry: we are at the function's first insn. */
static bool parse_expr(Dwarf_Attribute *attr, Dwarf_Op *ops, size_t n, bool entry,
		       struct loc *out)
{
	Dwarf_Attribute sub;
	Dwarf_Op *sops;
	size_t sn;
	uint8_t op;

	memset(out, 0, sizeof(*out));
	if (!n)
		return false;
	op = ops[0].atom;
	if (n == 1 && op >= DW_OP_reg0 && op <= DW_OP_reg31) {
		out->kind = L_REG;
		out->reg = op - DW_OP_reg0;
	} else if (n == 1 && op == DW_OP_regx) {
		out->kind = L_REG;
		out->reg = (int)ops[0].number;
	} else if (n == 2 && op >= DW_OP_breg0 && op <= DW_OP_breg31 &&
		   ops[1].atom == DW_OP_stack_value) {
		out->kind = L_REGOFF;
		out->reg = op - DW_OP_breg0;
		out->off = (int64_t)ops[0].number;
	} else if (n == 1 && op >= DW_OP_breg0 && op <= DW_OP_breg31) {
		out->kind = L_MEM;
		out->reg = op - DW_OP_breg0;
		out->off = (int64_t)ops[0].number;
	} else if (n == 2 && op == DW_OP_addr && ops[1].atom == DW_OP_stack_value) {
		out->kind = L_ADDR;
		out->addr = ops[0].number;
	} else if (n == 1 && op == DW_OP_fbreg && entry) {
		/* the frame base is the CFA, which is %sp + 8 at a function's first instruction */
		out->kind = L_MEM;
		out->reg = 7;
		out->off = (int64_t)ops[0].number + 8;
	} else if (n == 2 && (op == DW_OP_entry_value || op == DW_OP_GNU_entry_value) &&
		   ops[1].atom == DW_OP_stack_value && entry) {
		/* the value at entry, and we are at the entry */
		if (dwarf_getlocation_attr(attr, &ops[0], &sub) != 0 ||
		    dwarf_getlocation(&sub, &sops, &sn) != 0 || sn != 1 ||
		    sops[0].atom < DW_OP_reg0 || sops[0].atom > DW_OP_reg31)
			return false;
		out->kind = L_REG;
		out->reg = sops[0].atom - DW_OP_reg0;
	} else {
		return false;
	}
	return out->reg >= 0 && out->reg < (int)GIL_ARRAY_SIZE(regs);
}

/* The location of parameter @name of scope @fn (a subprogram or inlined copy) at @pc. */
static bool param_loc(Dwarf_Die *fn, const char *name, Dwarf_Addr pc, bool entry, struct loc *out)
{
	Dwarf_Attribute attr;
	Dwarf_Op *ops[4];
	size_t lens[4];
	const char *pn;
	Dwarf_Die p;
	int n, i;

	if (dwarf_child(fn, &p) != 0)
		return false;
	do {
		if (dwarf_tag(&p) != DW_TAG_formal_parameter)
			continue;
		pn = dwarf_diename(&p);
		if (!pn || strcmp(pn, name))
			continue;
		if (!dwarf_attr(&p, DW_AT_location, &attr))
			return false; /* optimized out here */
		n = dwarf_getlocation_addr(&attr, pc, ops, lens, 4);
		if (n <= 0 || !parse_expr(&attr, ops[0], lens[0], entry, out))
			return false;
		/* several views at this address must agree */
		for (i = 1; i < n; i++) {
			struct loc o;

			if (!parse_expr(&attr, ops[i], lens[i], entry, &o) || o.kind != out->kind ||
			    o.reg != out->reg || o.off != out->off || o.addr != out->addr)
				return false;
		}
		return true;
	} while (dwarf_siblingof(&p, &p) == 0);
	return false;
}

/*
 * Below @parent, the innermost take_gil/drop_gil scope holding @pc. Returns 1 with *@out when
 * it is the site's (see site_scope), -1 when the innermost one is not, 0 when there is none.
 * Written out rather than dwarf_getscopes(), which finds nothing in LTO units whose inlined
 * copies refer to another unit.
 */
static int find_scope(Dwarf_Die *parent, const struct gil_site *s, uint64_t pc, Dwarf_Die *out,
		      int depth)
{
	const char *want = s->fn == GIL_FN_TAKE ? "take_gil" : "drop_gil", *name;
	Dwarf_Addr entry;
	Dwarf_Die c;
	int tag, r;

	if (depth > 64 || dwarf_child(parent, &c) != 0)
		return 0;
	do {
		tag = dwarf_tag(&c);
		if (tag != DW_TAG_subprogram && tag != DW_TAG_inlined_subroutine &&
		    tag != DW_TAG_lexical_block)
			continue;
		if (dwarf_haspc(&c, pc) != 1)
			continue;
		r = find_scope(&c, s, pc, out, depth + 1);
		if (r)
			return r;
		name = tag == DW_TAG_lexical_block ? NULL : dwarf_diename(&c);
		if (!name || strcmp(name, want))
			continue;
		if (tag == DW_TAG_inlined_subroutine &&
		    (s->retprobe || dwarf_entrypc(&c, &entry) != 0 || entry != pc))
			return -1; /* the innermost copy does not start here */
		if (tag == DW_TAG_subprogram && !s->retprobe)
			return -1; /* an inlined site inside an out-of-line body */
		*out = c;
		return 1;
	} while (dwarf_siblingof(&c, &c) == 0);
	return 0;
}

/*
 * The concrete take_gil/drop_gil scope that starts at @start: the subprogram of an out-of-line
 * entry (its symbol says it starts there), or the inlined copy whose entry pc is @start. Every
 * unit whose ranges hold @start is tried: LTO debug files have several.
 */
static bool site_scope(Dwarf *dbg, const struct gil_site *s, uint64_t start, Dwarf_Die *out)
{
	Dwarf_Off off = 0, next, cur;
	size_t hsize;
	Dwarf_Die cu;
	int r;

	while (dwarf_nextcu(dbg, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		cur = off;
		off = next;
		if (!dwarf_offdie(dbg, cur + hsize, &cu) || dwarf_haspc(&cu, start) != 1)
			continue;
		r = find_scope(&cu, s, start, out, 0);
		if (r)
			return r > 0;
	}
	return false;
}

static int attrib_dwarf(struct gil_attrib *a, const struct gil_symbols *syms, struct gil_elf *obj,
			int version, char *err, size_t errlen)
{
	struct gil_elf f;
	struct dw d = { 0 };
	const struct gil_site *s;
	struct loc ts, req;
	Dwarf_Die scope;
	int64_t delta;
	bool entry;
	size_t i;
	int ret = -1;

	if (!syms->dwarf_from || gil_elf_open(&f, syms->dwarf_from, NULL, 0) < 0)
		return 0;
	d.dbg = dwarf_begin_elf(f.elf, DWARF_C_READ, NULL);
	if (!d.dbg) {
		ret = 0;
		goto out;
	}
	if (layout_from_dwarf(&d, &a->layout, err, errlen) < 0) {
		ret = 0; /* a DWARF we cannot use: the other sources may do */
		goto out;
	}
	if (version)
		a->layout.version = version;
	a->source = GIL_ATTR_SRC_DWARF;
	a->from = strdup(syms->dwarf_from);
	if (!a->from)
		goto out;
	for (i = 0; i < syms->nr_sites; i++) {
		s = &syms->sites[i];
		if (s->role != GIL_SITE_ENTRY || s->approximate)
			continue;
		entry = s->retprobe; /* a real function entry: entry values are the registers */
		if (!site_scope(d.dbg, s, s->addr - s->skipped, &scope)) {
			a->sites[i].why = "no DWARF scope for this site";
			continue;
		}
		if (!param_loc(&scope, "tstate", s->addr, entry, &ts)) {
			a->sites[i].why = "thread state not available at this site";
			continue;
		}
		memset(&req, 0, sizeof(req));
		if (s->fn == GIL_FN_DROP && a->layout.req == GIL_REQ_GLOBAL) {
			req.kind = L_ADDR;
			req.addr = a->layout.req_addr;
		} else if (s->fn == GIL_FN_DROP && a->layout.req != GIL_REQ_NONE) {
			if (!strcmp(a->layout.req_arg, "tstate"))
				req = ts;
			else if (!param_loc(&scope, a->layout.req_arg, s->addr, entry, &req))
				memset(&req, 0, sizeof(req)); /* function yes, class unknown */
		}
		if (gil_elf_text_delta(obj->elf, s->addr, &delta) < 0)
			delta = 0;
		a->sites[i].fetchargs = build_fetchargs(&a->layout, &ts, &req, s->fn == GIL_FN_DROP,
							delta, &a->sites[i].why);
		if (!a->sites[i].fetchargs && !a->sites[i].why)
			goto out;
	}
	ret = 1;
out:
	if (ret < 0) {
		errno = ENOMEM;
		gil_err(err, errlen, "out of memory");
	}
	if (d.dbg)
		dwarf_end(d.dbg);
	gil_elf_close(&f);
	return ret;
}

int gil_layout_dwarf(const char *path, struct gil_layout *out, char *err, size_t errlen)
{
	struct gil_elf f;
	struct dw d = { 0 };
	int ret = -1;

	if (gil_elf_open(&f, path, NULL, 0) < 0)
		return gil_err(err, errlen, "%s: %s", path, strerror(errno));
	d.dbg = dwarf_begin_elf(f.elf, DWARF_C_READ, NULL);
	if (!d.dbg) {
		gil_err(err, errlen, "%s: no DWARF", path);
		goto out;
	}
	ret = layout_from_dwarf(&d, out, err, errlen);
	dwarf_end(d.dbg);
out:
	gil_elf_close(&f);
	return ret;
}

#else /* !HAVE_LIBDW */

static int attrib_dwarf(struct gil_attrib *a, const struct gil_symbols *syms, struct gil_elf *obj,
			int version, char *err, size_t errlen)
{
	return 0;
}

int gil_layout_dwarf(const char *path, struct gil_layout *out, char *err, size_t errlen)
{
	return gil_err(err, errlen, "built without libdw");
}

#endif /* HAVE_LIBDW */

/* Table or debug offsets: arguments by the ABI, so only at plain function entries. */
static int attrib_abi(struct gil_attrib *a, const struct gil_symbols *syms, struct gil_elf *obj)
{
	const struct gil_site *s;
	struct loc ts, req;
	size_t i;

	for (i = 0; i < syms->nr_sites; i++) {
		s = &syms->sites[i];
		if (s->role != GIL_SITE_ENTRY)
			continue;
		if (!abi_entry(s)) {
			a->sites[i].why = "a compiler clone or inlined copy: arguments unknown without DWARF";
			continue;
		}
		abi_locs(a->layout.version, s->fn, &ts, &req);
		if (ts.kind == L_NONE) {
			a->sites[i].why = "no argument table for this version";
			continue;
		}
		a->sites[i].fetchargs = build_fetchargs(&a->layout, &ts, &req, s->fn == GIL_FN_DROP,
							0, &a->sites[i].why);
		if (!a->sites[i].fetchargs && !a->sites[i].why)
			return -1;
	}
	return 0;
}

int gil_attrib_read(const struct gil_symbols *syms, const char *object, const char *version,
		    struct gil_attrib **out, char *err, size_t errlen)
{
	struct gil_elf obj = { .fd = -1 };
	const struct gil_layout *t;
	struct gil_attrib *a;
	char why[256] = "";
	int ver = parse_version(version), r;
	GElf_Ehdr eh;
	size_t i;

	*out = NULL;
	a = calloc(1, sizeof(*a));
	if (!a || !(a->sites = calloc(syms->nr_sites + 1, sizeof(*a->sites))))
		goto oom;
	a->nr_sites = syms->nr_sites;
	for (i = 0; i < syms->nr_sites; i++)
		a->nr_entries += syms->sites[i].role == GIL_SITE_ENTRY;
	if (syms->kind != GIL_PY_CPYTHON) {
		a->why = "not a CPython with a GIL";
		goto done;
	}
	if (gil_elf_open(&obj, object, NULL, 0) < 0) {
		a->why = "cannot open the interpreter's file";
		goto done;
	}
	/*
	 * Fetchargs name x86-64 registers, and DWARF register numbers are mapped as on x86-64.
	 * Elsewhere some names would still be accepted (%sp on arm64) and read the wrong place.
	 */
	if (!gelf_getehdr(obj.elf, &eh) || eh.e_machine != EM_X86_64) {
		a->why = "implemented for x86-64 only; this interpreter is built for another "
			 "architecture";
		goto done;
	}
	r = attrib_dwarf(a, syms, &obj, ver, why, sizeof(why));
	if (r < 0)
		goto fail;
	if (r > 0)
		goto done;
	if (is_debug_build(obj.elf)) {
		a->why = "a debug build without usable DWARF: its layout is not in the table";
		goto done;
	}
	if (layout_debug_offsets(&obj, &a->layout, why, sizeof(why)) == 0) {
		a->source = GIL_ATTR_SRC_DEBUG_OFFSETS;
	} else if ((t = gil_layout_table(ver))) {
		a->layout = *t;
		a->source = GIL_ATTR_SRC_TABLE;
	} else {
		a->why = ver ? "no DWARF, no _Py_DebugOffsets, and this version is not in the table"
			     : "no DWARF, and the Python version is unknown";
		goto done;
	}
	a->from = strdup(object);
	if (!a->from || attrib_abi(a, syms, &obj) < 0)
		goto oom;
done:
	for (i = 0; i < a->nr_sites; i++)
		a->nr_attributed += a->sites[i].fetchargs != NULL;
	if (!a->nr_attributed && !a->why)
		a->why = a->nr_entries ? "no site where the thread state can be read" : "no entry site";
	gil_elf_close(&obj);
	*out = a;
	return 0;
oom:
	errno = ENOMEM;
	gil_err(err, errlen, "out of memory");
fail:
	gil_elf_close(&obj);
	gil_attrib_free(a);
	return -1;
}

void gil_attrib_free(struct gil_attrib *a)
{
	size_t i;

	if (!a)
		return;
	for (i = 0; a->sites && i < a->nr_sites; i++)
		free(a->sites[i].fetchargs);
	free(a->sites);
	free(a->from);
	free(a);
}

/* ---- the function table ---------------------------------------------------------------------- */

/* What the probes read, checked, numbered by the format's interner (format/fntab.c). */
struct gil_fntab {
	struct gil_fnset *set;
};

struct gil_fntab *gil_fntab_alloc(void)
{
	struct gil_fntab *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	/* one more than GIL_FNTAB_MAX: the "too many" entry */
	t->set = gil_fnset_alloc(GIL_FNTAB_MAX + 1, GIL_FNSET_STATIC_WHY);
	if (!t->set) {
		free(t);
		return NULL;
	}
	return t;
}

/* What to keep of one string: its bytes, or NULL and why not. */
static int take_string(const char *s, int len, uint8_t compact, uint8_t ascii, const char **why,
		       const char *fault, const char *notascii)
{
	if (len < 0 || !s) {
		*why = *why ? *why : fault;
		return -1;
	}
	if (!compact || !ascii) {
		*why = *why ? *why : notascii;
		return -1;
	}
	return len;
}

uint32_t gil_fntab_intern(struct gil_fntab *t, const struct gil_frame_raw *raw)
{
	struct gil_fnkey key = { .line = -1 };
	const char *why = NULL;
	int len;

	if (!raw->tstate) {
		why = "no thread state";
	} else if (!raw->frame) {
		why = "no Python frame";
	} else if (raw->has_type && raw->type_len < 0) {
		why = "frame not readable";
	} else if (raw->has_type && (raw->type_len != 4 || memcmp(raw->type, "code", 4))) {
		why = "frame does not hold a code object";
	} else if (!raw->has_type && (raw->name_len < 0 || !raw->name)) {
		/* nothing proves the frame was readable: nothing read through it is believed */
		why = "frame not readable";
	} else {
		len = take_string(raw->name, raw->name_len, raw->name_compact, raw->name_ascii,
				  &why, "name not readable", "name not compact ASCII");
		if (len >= 0) {
			key.name = raw->name;
			key.name_len = (size_t)len;
		}
		len = take_string(raw->file, raw->file_len, raw->file_compact, raw->file_ascii,
				  &why, "file not readable", "file not compact ASCII");
		if (len >= 0) {
			key.file = raw->file;
			key.file_len = (size_t)len;
		}
		key.line = raw->line; /* the type (or name) read proves the code object was readable */
	}
	if (gil_fnset_size(t->set) >= GIL_FNTAB_MAX) {
		why = "too many distinct functions";
		key.name = key.file = NULL;
		key.name_len = key.file_len = 0;
		key.line = -1;
	}
	key.why = why;
	return gil_fnset_intern(t->set, &key);
}

const struct gil_fn *gil_fntab_get(const struct gil_fntab *t, uint32_t id)
{
	return t ? gil_fnset_get(t->set, id) : NULL;
}

size_t gil_fntab_size(const struct gil_fntab *t)
{
	return t ? gil_fnset_size(t->set) : 0;
}

void gil_fntab_free(struct gil_fntab *t)
{
	if (!t)
		return;
	gil_fnset_free(t->set);
	free(t);
}
