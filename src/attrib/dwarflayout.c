// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Layout and argument locations from DWARF (libdw): every member offset of the structs the
 * fetchargs walk, and where the thread state is at each probed site (clones and inlined copies
 * differ). dwarflayout-none.c stands in without libdw.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dwarf.h>
#include <elfutils/libdw.h>

#include "attrib-int.h"
#include "common/util.h"

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

/* The DIE of the unit after the one at *@off (0: the first), into *@cu; false past the last. */
static bool next_unit(Dwarf *dbg, Dwarf_Off *off, Dwarf_Die *cu)
{
	Dwarf_Off cur, next;
	size_t hsize;

	while (dwarf_nextcu(dbg, *off, &next, &hsize, NULL, NULL, NULL) == 0) {
		cur = *off;
		*off = next;
		if (dwarf_offdie(dbg, cur + hsize, cu))
			return true;
	}
	return false;
}

/* The first top-level DIE of any unit that @match accepts (with @arg), into *@out. */
static bool top_level_die(struct dw *d, bool (*match)(Dwarf_Die *, void *), void *arg,
			  Dwarf_Die *out)
{
	Dwarf_Off off = 0;
	Dwarf_Die cu, die;

	while (next_unit(d->dbg, &off, &cu)) {
		if (dwarf_child(&cu, &die) != 0)
			continue;
		do {
			if (match(&die, arg)) {
				*out = die;
				return true;
			}
		} while (dwarf_siblingof(&die, &die) == 0);
	}
	return false;
}

/* Keeps @die when it is one of the wanted (struct dw @arg); true, to stop, once all are kept. */
static bool keep_wanted(Dwarf_Die *die, void *arg)
{
	struct dw *d = arg;
	const char *name;
	int tag, w;

	tag = dwarf_tag(die);
	if (tag != DW_TAG_structure_type && tag != DW_TAG_typedef && tag != DW_TAG_subprogram)
		return false;
	name = dwarf_diename(die);
	if (!name)
		return false;
	for (w = 0; w < W_NR; w++) {
		if (d->have[w] || wanted[w].tag != tag || strcmp(wanted[w].name, name))
			continue;
		if (tag == DW_TAG_structure_type && is_declaration(die))
			continue;
		if (w == W_DROP && !is_abstract_drop(die))
			continue;
		d->found[w] = *die;
		d->have[w] = true;
	}
	for (w = 0; w < W_NR; w++)
		if (!d->have[w])
			return false;
	return true;
}

static void scan_units(struct dw *d)
{
	Dwarf_Die last;

	d->scanned = true;
	top_level_die(d, keep_wanted, d, &last);
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

/*
 * 3.12+: the thread's interpreter, its id and its GIL (ceval.gil, a pointer, and the _gil it
 * points at when the GIL is the interpreter's own). Before, ceval holds no pointer to a GIL:
 * there is one, and the fields stay 0.
 */
static void layout_interp(struct dw *d, struct gil_layout *l, Dwarf_Die *ts_struct)
{
	Dwarf_Die t, is, ceval;
	int64_t ts_interp, id, c_off, gil, own;

	if (!member(ts_struct, "interp", &ts_interp, &t) || !pointee_struct(d, &t, &is) ||
	    !member(&is, "id", &id, NULL) || !member(&is, "_gil", &own, NULL) ||
	    !member(&is, "ceval", &c_off, &t) || !struct_of_typedef(d, &t, &ceval) ||
	    !member(&ceval, "gil", &gil, &t) || !peel(&t) || dwarf_tag(&t) != DW_TAG_pointer_type)
		return;
	l->ts_interp = ts_interp;
	l->interp_id = id;
	l->interp_own_gil = own;
	l->interp_gil = c_off + gil;
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
	} else if (member(&st, "f_executable", &l->frame_code, &t)) {
		if (!d->have[W_CODE_T] || !struct_of_typedef(d, &d->found[W_CODE_T], &code))
			return gil_err(err, errlen, "no PyCodeObject type in the DWARF");
		/* 3.13: PyObject *; 3.14+: a _PyStackRef (a union of uintptr_t) with tag bits */
		if (peel(&t) && dwarf_tag(&t) != DW_TAG_pointer_type) {
			l->code_tagged = true;
			l->version = 314;
		}
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
	layout_interp(d, l, &ts);
	/* the version, as far as the layout tells; the caller may know better */
	if (l->frame == GIL_FRAME_CFRAME && l->frame_code == 0)
		l->version = 312;
	return 0;
}

/* Reduce a location expression to a struct loc; @entry: we are at the function's first insn. */
static bool parse_expr(Dwarf_Attribute *attr, Dwarf_Op *ops, size_t n, bool entry, int arch,
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
		/*
		 * The frame base is the CFA: at a function's first instruction that is %sp + 8
		 * on x86-64 (the return address was pushed), sp itself on AArch64 (it is in x30).
		 */
		out->kind = L_MEM;
		out->reg = arch == GIL_ARCH_AARCH64 ? 31 : 7;
		out->off = (int64_t)ops[0].number + (arch == GIL_ARCH_AARCH64 ? 0 : 8);
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
	return out->kind == L_ADDR || attrib_reg_name(arch, out->reg) != NULL;
}

/* The location of parameter @name of scope @fn (a subprogram or inlined copy) at @pc. */
static bool param_loc(Dwarf_Die *fn, const char *name, Dwarf_Addr pc, bool entry, int arch,
		      struct loc *out)
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
		if (n <= 0 || !parse_expr(&attr, ops[0], lens[0], entry, arch, out))
			return false;
		/* several views at this address must agree */
		for (i = 1; i < n; i++) {
			struct loc o;

			if (!parse_expr(&attr, ops[i], lens[i], entry, arch, &o) || o.kind != out->kind ||
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
	Dwarf_Off off = 0;
	Dwarf_Die cu;
	int r;

	while (next_unit(dbg, &off, &cu)) {
		if (dwarf_haspc(&cu, start) != 1)
			continue;
		r = find_scope(&cu, s, start, out, 0);
		if (r)
			return r > 0;
	}
	return false;
}

int attrib_dwarf(struct gil_attrib *a, const struct gil_symbols *syms, struct gil_elf *obj,
		 int version, char *err, size_t errlen)
{
	/* the debug file symbols.c kept open, or the object itself: never a path again */
	struct gil_elf *f = syms->dwarf_elf ? syms->dwarf_elf : obj;
	struct dw d = { 0 };
	const struct gil_site *s;
	struct loc ts, req;
	Dwarf_Die scope;
	int64_t delta;
	bool entry;
	size_t i;
	int ret = -1;

	if (!syms->dwarf_from || !f->elf)
		return 0;
	d.dbg = gil_elf_dwarf(f); /* the handle the sites' pass read, with what libdw cached */
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
	a->layout.arch = gil_arch_of(obj->elf);
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
		if (!param_loc(&scope, "tstate", s->addr, entry, a->layout.arch, &ts)) {
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
			else if (!param_loc(&scope, a->layout.req_arg, s->addr, entry, a->layout.arch, &req))
				memset(&req, 0, sizeof(req)); /* function yes, class unknown */
		}
		if (gil_elf_text_delta(obj->elf, s->addr, &delta) < 0)
			delta = 0;
		if (attrib_build_fetchargs(&a->layout, &ts, &req, s->fn == GIL_FN_DROP, delta,
					   false, &a->sites[i]) < 0)
			goto out;
	}
	ret = 1;
out:
	if (ret < 0) {
		errno = ENOMEM;
		gil_err(err, errlen, "out of memory");
	}
	return ret;
}

int gil_layout_dwarf(const char *path, struct gil_layout *out, char *err, size_t errlen)
{
	struct gil_elf f;
	struct dw d = { 0 };
	int ret = -1;

	if (gil_elf_open(&f, path, NULL, 0) < 0)
		return gil_err(err, errlen, "%s: %s", path, strerror(errno));
	d.dbg = gil_elf_dwarf(&f);
	if (!d.dbg) {
		gil_err(err, errlen, "%s: no DWARF", path);
		goto out;
	}
	ret = layout_from_dwarf(&d, out, err, errlen);
out:
	gil_elf_close(&f);
	return ret;
}
