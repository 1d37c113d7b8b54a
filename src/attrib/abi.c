// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Argument locations by the x86-64 System V calling convention: good at the first instruction
 * of a function the compiler left alone, and nowhere else (clones, inlined copies), where only
 * DWARF knows.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>

#include "attrib-int.h"
#include "elf/x86insn.h"


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
static void abi_locs(int arch, int version, enum gil_func fn, struct loc *ts, struct loc *req)
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
	} else if (version >= 313) {
		/* drop_gil(interp, tstate, final_release): the request is in tstate's eval_breaker */
		t = 1;
		r = 1;
	}
	memset(ts, 0, sizeof(*ts));
	memset(req, 0, sizeof(*req));
	if (t >= 0) {
		ts->kind = L_REG;
		ts->reg = attrib_arg_reg(arch, t);
	}
	if (r >= 0) {
		req->kind = L_REG;
		req->reg = attrib_arg_reg(arch, r);
	}
}

/* An exported function's entry standing for a GIL function (fallback, or an inlining host). */
static bool stand_in(const struct gil_site *s, const char *name)
{
	return (s->approximate || s->host != GIL_HOST_NONE) && s->role == GIL_SITE_ENTRY &&
	       !strcmp(s->symbol, name);
}

/*
 * The exported stand-ins of a build without symbols (approximate sites, or hosts of an inlined
 * drop_gil): PyEval_RestoreThread(tstate) and _Py_HandlePending(tstate) have it in %di at their
 * entry, as any exported function. PyEval_SaveThread (void) is called holding the GIL, so the
 * GIL's last holder is the caller, reached from _PyRuntime when _Py_DebugOffsets gave the way
 * (the recorded native thread id proves it per hit); so is it at the entry of a drop_gil the
 * code gave (callgraph.c) from 3.13 on, where LTO's clones leave its arguments unknown.
 */
static bool abi_fallback(struct gil_attrib *a, const struct gil_site *s, struct gil_elf *obj,
			 struct loc *ts, struct loc *req, int64_t *delta)
{
	const struct gil_layout *l = &a->layout;

	memset(ts, 0, sizeof(*ts));
	memset(req, 0, sizeof(*req));
	*delta = 0;
	if (s->role != GIL_SITE_ENTRY)
		return false;
	if (s->fn == GIL_FN_TAKE && stand_in(s, "PyEval_RestoreThread")) {
		ts->kind = L_REG;
		ts->reg = attrib_arg_reg(l->arch, 0);
		return true;
	}
	if (s->fn == GIL_FN_DROP && stand_in(s, "_Py_HandlePending")) {
		if (l->req != GIL_REQ_BIT0)
			return false;
		ts->kind = L_REG;
		ts->reg = attrib_arg_reg(l->arch, 0);
		*req = *ts;
		return true;
	}
	if (s->fn != GIL_FN_DROP ||
	    !(stand_in(s, "PyEval_SaveThread") ||
	      (!strcmp(s->method, "callgraph") && l->version >= 313)) ||
	    !l->runtime_addr || !l->rt_interp_head || !l->interp_gil || !l->gil_holder ||
	    !l->ts_native_tid || gil_elf_text_delta(obj->elf, s->addr, delta) < 0)
		return false;
	ts->kind = L_CHAIN;
	a->defers = true;
	ts->addr = l->runtime_addr + (uint64_t)l->rt_interp_head;
	ts->chain[0] = l->interp_gil;
	ts->chain[1] = l->gil_holder;
	/* the request bit as drop_gil sees it */
	*req = *ts;
	return true;
}

/* x86-64 register encoding (rax, rcx, rdx, rbx, rsp, rbp, rsi, rdi, r8...) to DWARF's number */
static int x86_dwarf_reg(int enc)
{
	static const int map[8] = { 0, 2, 1, 3, 7, 6, 4, 5 };

	return enc < 8 ? map[enc] : enc;
}

/*
 * An inlined copy of drop_gil found from the code (elf/copies.c): the site is its store of 0 to
 * the GIL's `locked`, and the releasing thread the GIL's last holder, stored by drop_gil in the
 * field before it (struct _gil_runtime_state: interval, last_holder, locked; all of 3.x, LP64)
 * before it takes the mutex. The store's own address operand names the field: a register the
 * probe reads (3.12+: the GIL hangs off the interpreter) or a global (up to 3.11). The request
 * is read where it is the thread state's (3.13+) or a global's; before, the class is unknown.
 */
static bool code_copy(const struct gil_attrib *a, const struct gil_site *s, struct gil_elf *obj,
		      struct loc *ts, struct loc *req, int64_t *delta)
{
	const struct gil_layout *l = &a->layout;
	struct gil_insn in;
	uint8_t b[15];
	size_t n;

	memset(ts, 0, sizeof(*ts));
	memset(req, 0, sizeof(*req));
	*delta = 0;
	if (strcmp(s->method, "code-inline") || s->role != GIL_SITE_ENTRY ||
	    s->fn != GIL_FN_DROP ||
	    (l->arch != GIL_ARCH_X86_64 && l->arch != GIL_ARCH_AARCH64))
		return false;
	for (n = sizeof(b); n > 0 && gil_elf_read_vaddr(obj, s->addr, b, n); n--)
		;
	if (!n || gil_insn_decode((enum gil_arch)l->arch, b, n, s->addr, &in) ||
	    gil_elf_text_delta(obj->elf, s->addr, delta) < 0)
		return false;
	if (l->arch == GIL_ARCH_AARCH64) {
		/* str wzr, [xN, #off]: xN + off is `locked` (x0 - x30 are DWARF 0 - 30) */
		int rn;
		int64_t off;

		if (!gil_a64_store_zero32(in.word, &rn, &off) || rn == 31)
			return false;
		ts->kind = L_MEM;
		ts->reg = rn;
		ts->off = off - 8;
	} else if (!gil_copy_store(&in)) {
		return false;
	} else if (in.mem_base >= 0) {
		ts->kind = L_MEM;
		ts->reg = x86_dwarf_reg(in.mem_base);
		ts->off = in.disp - 8;
	} else {
		ts->kind = L_GPTR;
		ts->addr = (in.riprel ? in.riprel : (uint64_t)in.disp) - 8;
	}
	ts->holder = true;
	if (l->req == GIL_REQ_BIT0) {
		*req = *ts;
	} else if (l->req == GIL_REQ_GLOBAL) {
		req->kind = L_ADDR;
		req->addr = l->req_addr;
	}
	return true;
}

/* Table or debug offsets: arguments by the ABI, so only at plain function entries. */
int attrib_abi(struct gil_attrib *a, const struct gil_symbols *syms, struct gil_elf *obj)
{
	const struct gil_site *s;
	struct loc ts, req;
	int64_t delta;
	size_t i;

	for (i = 0; i < syms->nr_sites; i++) {
		s = &syms->sites[i];
		if (s->role != GIL_SITE_ENTRY)
			continue;
		if (abi_fallback(a, s, obj, &ts, &req, &delta) ||
		    code_copy(a, s, obj, &ts, &req, &delta)) {
			/* a copy's holder is read through the code's own operand: check the type */
			if (attrib_build_fetchargs(&a->layout, &ts, &req, s->fn == GIL_FN_DROP,
						   delta, ts.holder && ts.kind != L_CHAIN,
						   &a->sites[i]) < 0)
				return -1;
			continue;
		}
		if (!abi_entry(s)) {
			a->sites[i].why = "a compiler clone or inlined copy: arguments unknown without DWARF";
			continue;
		}
		abi_locs(a->layout.arch, a->layout.version, s->fn, &ts, &req);
		if (ts.kind == L_NONE) {
			a->sites[i].why = "no argument table for this version";
			continue;
		}
		/* found from the code: a clone's registers may differ, so check the type too */
		if (attrib_build_fetchargs(&a->layout, &ts, &req, s->fn == GIL_FN_DROP, 0,
					   !strcmp(s->method, "callgraph"), &a->sites[i]) < 0)
			return -1;
	}
	return 0;
}
