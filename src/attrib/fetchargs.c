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

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attrib-int.h"
#include "common/util.h"

#define ARG_MAX_LEN 63 /* the kernel's MAX_ARGSTR_LEN for one fetcharg, type included */

static const char *const x86_64_regs[16] = {
	"ax", "dx", "cx", "bx", "si", "di", "bp", "sp",
	"r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15",
};

/* AArch64: DWARF 0 - 30 are x0 - x30, 31 is sp; the kernel's fetchargs know them so */
static const char *const a64_regs[32] = {
	"x0",  "x1",  "x2",  "x3",  "x4",  "x5",  "x6",  "x7",  "x8",  "x9",  "x10",
	"x11", "x12", "x13", "x14", "x15", "x16", "x17", "x18", "x19", "x20", "x21",
	"x22", "x23", "x24", "x25", "x26", "x27", "x28", "x29", "x30", "sp",
};

const char *attrib_reg_name(int arch, int reg)
{
	if (arch == GIL_ARCH_X86_64 && reg >= 0 && reg < 16)
		return x86_64_regs[reg];
	if (arch == GIL_ARCH_AARCH64 && reg >= 0 && reg < 32)
		return a64_regs[reg];
	return NULL;
}

int attrib_arg_reg(int arch, int i)
{
	/* System V x86-64: di si dx cx r8 r9; AAPCS64: x0 - x7 */
	static const int x86_64_args[] = { 5, 4, 1, 2, 8, 9 };

	if (arch == GIL_ARCH_X86_64 && i >= 0 && i < 6)
		return x86_64_args[i];
	if (arch == GIL_ARCH_AARCH64 && i >= 0 && i < 8)
		return i;
	return -1;
}

/* Building fetchargs: an expression for "the value at @l + @off"; @delta maps globals. */
struct fa {
	char *buf;
	size_t len, cap;
	bool failed;
	const char *why;
};

/* The pointer an L_CHAIN names: *(*(*addr + c0) + c1), addr a file offset for "@+". */
static int chain_value(char *out, size_t len, const struct loc *l, int64_t delta)
{
	int n;

	if ((int64_t)l->addr - delta < 0)
		return -1;
	n = snprintf(out, len, "%+lld(%+lld(@+%lld))", (long long)l->chain[1],
		     (long long)l->chain[0], (long long)((int64_t)l->addr - delta));
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

static int deref_loc(char *out, size_t len, int arch, const struct loc *l, int64_t off,
		     int64_t delta)
{
	const char *r = attrib_reg_name(arch, l->reg);
	char e[128];
	int n = -1;

	switch (l->kind) {
	case L_REG:
		if (r)
			n = snprintf(out, len, "%+lld(%%%s)", (long long)off, r);
		break;
	case L_REGOFF:
		if (r)
			n = snprintf(out, len, "%+lld(%%%s)", (long long)(l->off + off), r);
		break;
	case L_MEM:
		if (r)
			n = snprintf(out, len, "%+lld(%+lld(%%%s))", (long long)off, (long long)l->off,
				     r);
		break;
	case L_ADDR:
		/* @+OFFSET: the kernel adds the probed file's load bias, found from the text */
		if ((int64_t)(l->addr + (uint64_t)off) - delta >= 0)
			n = snprintf(out, len, "@+%lld",
				     (long long)((int64_t)(l->addr + (uint64_t)off) - delta));
		break;
	case L_CHAIN:
		if (chain_value(e, sizeof(e), l, delta) == 0)
			n = snprintf(out, len, "%+lld(%s)", (long long)off, e);
		break;
	case L_GPTR:
		if ((int64_t)l->addr - delta >= 0)
			n = snprintf(out, len, "%+lld(@+%lld)", (long long)off,
				     (long long)((int64_t)l->addr - delta));
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

/* The name, file and first line of the code object at @code + @bias, under those names. */
static void code_reads(struct fa *f, const struct gil_layout *lay, const char *code, int bias,
		       const char *fn, const char *file, const char *line)
{
	char e[128], obj[128];

	if (wrap(obj, sizeof(obj), code, lay->code_name + bias) < 0)
		goto toolong;
	fa_string(f, lay, fn, obj);
	if (wrap(obj, sizeof(obj), code, lay->code_filename + bias) < 0)
		goto toolong;
	fa_string(f, lay, file, obj);
	if (wrap(e, sizeof(e), code, lay->code_firstlineno + bias) < 0)
		goto toolong;
	fa_add(f, line, e, "s32");
	return;
toolong:
	f->failed = true;
	f->why = "fetch expression too long for the kernel";
}

/*
 * Which GIL (3.12+): the thread's interpreter, its GIL pointer and its id, read through the
 * thread state at @ts. Added only whole: a site where they do not fit the kernel's limit keeps
 * its other reads and says nothing of its GIL (the recorder takes the thread's last).
 */
static void interp_reads(struct fa *f, const struct gil_layout *lay, const struct loc *ts,
			 int64_t delta)
{
	char ip[128], gp[128], id[128];

	if (lay->ts_interp <= 0 || lay->interp_id <= 0 || lay->interp_own_gil <= 0 ||
	    lay->interp_gil <= 0 || ts->kind == L_NONE)
		return;
	if (deref_loc(ip, sizeof(ip), lay->arch, ts, lay->ts_interp, delta) < 0 ||
	    wrap(gp, sizeof(gp), ip, lay->interp_gil) < 0 ||
	    wrap(id, sizeof(id), ip, lay->interp_id) < 0 || strlen(ip) + 4 > ARG_MAX_LEN ||
	    strlen(gp) + 4 > ARG_MAX_LEN || strlen(id) + 4 > ARG_MAX_LEN)
		return;
	fa_add(f, "gil_ip", ip, "x64");
	fa_add(f, "gil_gp", gp, "x64");
	fa_add(f, "gil_iid", id, "s64");
}

static char *build(const struct gil_layout *lay, const struct loc *ts, const struct loc *req,
		   bool drop, int64_t delta, bool check_type, bool pointer, const char **why)
{
	char fr[128], code[128], e[128], obj[128];
	struct fa f = { 0 };

	*why = NULL;
	/* the thread state itself, when it can be NULL (a register or a stack slot) */
	if (ts->kind != L_NONE && ts->kind != L_ADDR && ts->kind != L_CHAIN && ts->kind != L_GPTR &&
	    !attrib_reg_name(lay->arch, ts->reg)) {
		*why = "a register this architecture's fetchargs cannot name";
		return NULL;
	}
	if (ts->kind == L_REG) {
		snprintf(e, sizeof(e), "%%%s", attrib_reg_name(lay->arch, ts->reg));
		fa_add(&f, "gil_ts", e, "x64");
	} else if (ts->kind == L_MEM) {
		snprintf(e, sizeof(e), "%+lld(%%%s)", (long long)ts->off,
			 attrib_reg_name(lay->arch, ts->reg));
		fa_add(&f, "gil_ts", e, "x64");
	} else if (ts->kind == L_CHAIN) {
		/* the GIL's holder: NULL, or (another interpreter's GIL) another thread */
		if (chain_value(e, sizeof(e), ts, delta) < 0)
			goto toolong;
		fa_add(&f, "gil_ts", e, "x64");
		if (deref_loc(e, sizeof(e), lay->arch, ts, lay->ts_native_tid, delta) < 0)
			goto toolong;
		fa_add(&f, "gil_htid", e, "u64");
	} else if (ts->kind == L_GPTR) {
		if ((int64_t)ts->addr - delta < 0)
			goto toolong;
		snprintf(e, sizeof(e), "@+%lld", (long long)((int64_t)ts->addr - delta));
		fa_add(&f, "gil_ts", e, "x64");
	}
	/* the GIL's holder read from where the code keeps it: believed for its own thread only */
	if (ts->holder && ts->kind != L_CHAIN && lay->ts_native_tid > 0) {
		if (deref_loc(e, sizeof(e), lay->arch, ts, lay->ts_native_tid, delta) < 0)
			goto toolong;
		fa_add(&f, "gil_htid", e, "u64");
	}
	/* which GIL, at take_gil: a drop_gil's is the one its thread took last */
	if (!drop)
		interp_reads(&f, lay, ts, delta);
	/* the frame pointer */
	if (deref_loc(fr, sizeof(fr), lay->arch, ts, lay->ts_frame, delta) < 0)
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
	 * The pointer set: the code object's address (tag bits and all), read by the recorder
	 * from the process's memory once per object (record/coderead.c); the frame beside it
	 * tells a frame-less thread from a fault, which leaves a number stale.
	 */
	if (pointer) {
		fa_add(&f, "gil_code", code, "x64");
		goto request;
	}
	/*
	 * 3.13's frames hold any object (entry frames hold None): its type's name must read
	 * "code". Before, f_code is always a code object, and the name string read through it
	 * proves the chain was readable. Each dereference costs at every hit: no more than this.
	 */
	if (lay->frame == GIL_FRAME_CURRENT || check_type) {
		if (wrap(e, sizeof(e), code, lay->ob_type) < 0 ||
		    wrap(obj, sizeof(obj), e, lay->tp_name) < 0 || wrap(e, sizeof(e), obj, 0) < 0)
			goto toolong;
		fa_add(&f, "gil_ty", e, "string");
	}
	code_reads(&f, lay, code, 0, "gil_fn", "gil_file", "gil_line");
	/*
	 * 3.14+: f_executable is a _PyStackRef whose bit 0 marks a reference without a refcount
	 * (immortal code objects, None). A fetcharg cannot mask it off before dereferencing, so
	 * the same reads are made once more as if the tag were 1, each offset one less: exact for
	 * such a pointer (code objects are 8-byte aligned), and the tag read here (one byte)
	 * tells the decoder which copy holds the frame; the other is ignored.
	 */
	if (lay->code_tagged) {
		fa_add(&f, "gil_tag", code, "b2@0/8");
		if (lay->frame == GIL_FRAME_CURRENT || check_type) {
			if (wrap(e, sizeof(e), code, lay->ob_type - 1) < 0 ||
			    wrap(obj, sizeof(obj), e, lay->tp_name) < 0 ||
			    wrap(e, sizeof(e), obj, 0) < 0)
				goto toolong;
			fa_add(&f, "gil_tty", e, "string");
		}
		code_reads(&f, lay, code, -1, "gil_tfn", "gil_tfile", "gil_tline");
	}
request:
	if (drop && req->kind != L_NONE) {
		if (deref_loc(e, sizeof(e), lay->arch, req, lay->req_off, delta) < 0)
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

int attrib_build_fetchargs(const struct gil_layout *lay, const struct loc *ts,
			   const struct loc *req, bool drop, int64_t delta, bool check_type,
			   struct gil_attrib_site *out)
{
	const char *why2 = NULL;

	out->fetchargs = build(lay, ts, req, drop, delta, check_type, false, &out->why);
	if (!out->fetchargs)
		return out->why ? 0 : -1;
	/*
	 * At take_gil the default set reads which GIL the thread waits for and the code object
	 * it will run on with (the one it released in: no Python runs in between), which names
	 * a release made where the thread state could not be read (record/pairing.c). The
	 * recorder pads it to join the drop_gil entries' event. The GIL's holder is another
	 * thread at a take: where that is all there is, nothing is read.
	 */
	if (!drop && (ts->kind == L_CHAIN || ts->holder))
		return 0;
	if (!drop) {
		struct fa f = { 0 };

		/* which GIL only: the code object too where a release defers (attrib.c) */
		interp_reads(&f, lay, ts, delta);
		if (f.failed && !f.why) {
			free(f.buf);
			free(out->fetchargs);
			out->fetchargs = NULL;
			return -1;
		}
		if (!f.failed)
			out->pointer = f.buf;
		else
			free(f.buf);
		out->pointer_code = build(lay, ts, req, drop, delta, check_type, true, &why2);
		if (!out->pointer_code && !why2) {
			free(out->pointer);
			free(out->fetchargs);
			out->pointer = out->fetchargs = NULL;
			return -1;
		}
		return 0;
	}
	out->pointer = build(lay, ts, req, drop, delta, check_type, true, &why2);
	if (!out->pointer && !why2) {
		free(out->fetchargs);
		out->fetchargs = NULL;
		return -1;
	}
	return 0;
}
