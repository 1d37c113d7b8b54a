// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Inlined copies of drop_gil found from the code, in a build that has no DWARF to name them: an
 * LTO build inlines drop_gil into the interpreter's own I/O helpers (os.stat, os.listdir,
 * os.scandir, FileIO, os.read on 3.15), and without these sites their releases are not seen.
 * doc/compatibility.md ("Inlined releases without DWARF") has the method and its measurements.
 *
 * The standalone drop_gil (found by a table or by callgraph.c) shows the sequence each copy
 * repeats, MUTEX_LOCK(gil->mutex); gil->locked = 0; COND_SIGNAL(gil->cond);
 * MUTEX_UNLOCK(gil->mutex):
 *
 *     call LOCK  ...  movl $0, <locked>  ...  call SIGNAL  ...  call UNLOCK
 *
 * LOCK, SIGNAL and UNLOCK are learnt from it: the call before its store of 0 and the two after.
 * Then the code of every frame description is decoded from its start, and wherever it makes the
 * same three calls in that order with a 32-bit store of 0 between the first two, close together
 * and no other call between them, that is a copy: the store is the release (an ENTRY site: the
 * GIL is free from that instruction on) and the instruction after UNLOCK's call its end (an
 * EXIT site). Both are instruction boundaries by construction, and gil_site_prove decodes them
 * again before anything is probed. From 3.13 drop_gil also clears tstate->holds_gil there: the
 * store kept is the one at the reference's distance from the mutex (pick_store). Where the
 * mutex argument of LOCK and UNLOCK can be read, they must be the same. Registers, copies
 * between them and stack spills are followed for that (track, track_a64): only to compare,
 * never to place a probe. On AArch64 the store is `str wzr, [xN, #off]` and the calls `bl`.
 *
 * The thread that releases is the GIL's last holder: drop_gil stores it in gil->last_holder,
 * the field before `locked`, before taking the mutex (all of 3.x), so attribution reads it
 * through the store's own address operand (attrib/abi.c, code_copy). Where each copy ends is
 * copyexit.c's proof.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "copyexit.h"
#include "ehframe.h"
#include "scan.h"
#include "x86insn.h"

#define GAP 24 /* instructions at most between two steps of the sequence */
#define MAX_FUNC (1u << 20) /* bytes of one frame description decoded at most */
#define RDI 7 /* x86-64 register encoding of rdi */
#define MAX_STORES 4 /* stores of 0 between LOCK and SIGNAL */

/* An argument register's value, as far as the instruction that set it tells. */
struct arg {
	enum { A_UNKNOWN = 0, A_ABS, A_BASE } kind;
	uint64_t abs;
	int base;
	int64_t disp;
};

/* The registers a call may change (System V): rax, rcx, rdx, rsi, rdi, r8 - r11. */
#define CALL_CLOBBERED 0x0fc7u
#define RSP 4
#define NR_SLOTS 8

/*
 * What the walk knows of the registers, and of the 64-bit stack slots a register was spilled to
 * (mov %reg, d(%rsp)) and reloaded from: a value is an absolute address, or a register's value
 * at the time it was read plus an offset, forgotten when that register changes.
 */
struct mstate {
	int sp; /* the stack pointer's number: 4 (rsp) on x86-64, 31 on AArch64 */
	struct arg regs[32];
	struct {
		bool used;
		int64_t disp;
		struct arg v;
	} slots[NR_SLOTS];
};

/* Register @r changes: forget it and every value expressed from it. */
static void clobber(struct mstate *m, int r)
{
	int i;

	m->regs[r].kind = A_UNKNOWN;
	for (i = 0; i < 32; i++)
		if (m->regs[i].kind == A_BASE && m->regs[i].base == r)
			m->regs[i].kind = A_UNKNOWN;
	for (i = 0; i < NR_SLOTS; i++)
		if (m->slots[i].used && m->slots[i].v.kind == A_BASE && m->slots[i].v.base == r)
			m->slots[i].used = false;
	if (r == m->sp)
		for (i = 0; i < NR_SLOTS; i++)
			m->slots[i].used = false; /* the slots moved */
}

static void forget(struct mstate *m, unsigned int mask)
{
	int r;

	for (r = 0; r < 32; r++)
		if (mask & (1u << r))
			clobber(m, r);
}

static void set_reg(struct mstate *m, int r, struct arg v)
{
	clobber(m, r);
	if (v.kind == A_BASE && v.base == r)
		return; /* relative to the value it replaces */
	m->regs[r] = v;
}

/* The address of @in's memory operand, through what the base register is known to hold. */
static struct arg mem_addr(const struct mstate *m, const struct gil_insn *in)
{
	struct arg a = { 0 };

	if (!in->mem || in->mem_index)
		return a;
	if (in->mem_base < 0) {
		a.kind = A_ABS;
		a.abs = in->riprel ? in->riprel : (uint64_t)in->disp; /* [disp32]: absolute */
		return a;
	}
	a = m->regs[in->mem_base];
	if (a.kind == A_ABS) {
		a.abs += (uint64_t)in->disp;
	} else if (a.kind == A_BASE) {
		a.disp += in->disp;
	} else {
		a.kind = A_BASE;
		a.base = in->mem_base;
		a.disp = in->disp;
	}
	return a;
}

/* The slot at @disp from rsp, made when @make. */
static int slot(struct mstate *m, int64_t disp, bool make)
{
	int i, free_slot = -1;

	for (i = 0; i < NR_SLOTS; i++) {
		if (m->slots[i].used && m->slots[i].disp == disp)
			return i;
		if (!m->slots[i].used && free_slot < 0)
			free_slot = i;
	}
	if (!make)
		return -1;
	if (free_slot < 0)
		free_slot = 0;
	m->slots[free_slot].used = true;
	m->slots[free_slot].disp = disp;
	return free_slot;
}

/* Does @op only read its operands (compare, test)? */
static bool reads_only(unsigned int op)
{
	return op == 0x38 || op == 0x39 || op == 0x3a || op == 0x3b || op == 0x84 || op == 0x85;
}

/*
 * What @in leaves in the registers and slots: an address it loads (lea, mov of an immediate),
 * a copy (mov between registers, a spill and its reload), else unknown for each register it
 * may write. Only compared here (the mutex argument, the store's address): anything not
 * understood forgets.
 */
static void track(const struct gil_insn *in, struct mstate *m)
{
	unsigned int op = in->opcode;
	struct arg v = { 0 };
	int i;

	if (in->flow == GIL_INSN_CALL) {
		forget(m, CALL_CLOBBERED);
		return;
	}
	if (op >= 0xb8 && op <= 0xbf && in->has_imm) {
		/* mov $imm, %reg: a non-PIE file's address */
		v.kind = A_ABS;
		v.abs = in->immv;
		set_reg(m, (int)(op - 0xb8) | ((in->rex & 1) << 3), v);
		return;
	}
	if (op == 0x8d && in->modrm_reg >= 0 && (in->rex & 8)) {
		set_reg(m, in->modrm_reg, mem_addr(m, in));
		return;
	}
	if ((op == 0x89 || op == 0x8b) && (in->rex & 8) && in->rm_reg >= 0) {
		/* mov %src, %dst (64-bit) */
		int dst = op == 0x89 ? in->rm_reg : in->modrm_reg;
		int src = op == 0x89 ? in->modrm_reg : in->rm_reg;

		set_reg(m, dst, m->regs[src]);
		return;
	}
	if (op == 0x89 && (in->rex & 8) && in->mem && in->mem_base == RSP && !in->mem_index) {
		/* a spill */
		i = slot(m, in->disp, true);
		m->slots[i].v = m->regs[in->modrm_reg];
		if (m->slots[i].v.kind == A_UNKNOWN)
			m->slots[i].used = false;
		return;
	}
	if (op == 0x8b && (in->rex & 8) && in->mem && in->mem_base == RSP && !in->mem_index) {
		/* a reload */
		i = slot(m, in->disp, false);
		set_reg(m, in->modrm_reg, i >= 0 ? m->slots[i].v : v);
		return;
	}
	/* another write to the stack may cover a slot */
	if (in->mem && in->mem_base == RSP && !reads_only(op) && op != 0x8b && op != 0x8d)
		for (i = 0; i < NR_SLOTS; i++)
			m->slots[i].used = false;
	/* compares, tests and stores to memory write no register */
	if (reads_only(op) || ((op == 0x88 || op == 0x89 || op == 0xc6 || op == 0xc7) && in->mem))
		return;
	/* anything else may write the registers it names, and some write others */
	if (in->modrm_reg >= 0)
		clobber(m, in->modrm_reg);
	if (in->rm_reg >= 0)
		clobber(m, in->rm_reg);
	if (op >= 0x50 && op <= 0x5f) {
		clobber(m, (int)(op & 7) | ((in->rex & 1) << 3));
		clobber(m, RSP);
	}
	if ((op >= 0x90 && op <= 0x97) || op == 0x98 || op == 0x99 || op == 0xf6 || op == 0xf7 ||
	    (op >= 0xa4 && op <= 0xaf) || (op >> 8) != 0 || op == 0xcd || op == 0xc8 || op == 0xc9)
		forget(m, CALL_CLOBBERED | 1u << RSP); /* implicit operands */
}

/* AArch64: what @in leaves in the registers and the stack slots (track()'s counterpart). */
static void track_a64(const struct gil_insn *in, uint64_t at, struct mstate *m)
{
	uint32_t w = in->word;
	struct arg v = { 0 };
	uint64_t imm;
	int rd, rn, i;
	int64_t off;

	if (in->flow == GIL_INSN_CALL) {
		forget(m, 0x4007ffffu); /* x0 - x18 and the link register */
		return;
	}
	if ((w & 0x9f000000) == 0x90000000 || gil_a64_adr(w, at, &rd, &imm)) {
		/* ADRP (a page) or ADR (an address) */
		rd = (int)(w & 31);
		v.kind = A_ABS;
		v.abs = (w & 0x80000000) ? in->imm : imm;
		set_reg(m, rd, v);
		return;
	}
	if (gil_a64_add_imm(w, &rd, &rn, &imm)) {
		v = m->regs[rn];
		if (v.kind == A_ABS) {
			v.abs += imm;
		} else if (v.kind == A_BASE) {
			v.disp += (int64_t)imm;
		} else if (rn != 31) {
			v.kind = A_BASE;
			v.base = rn;
			v.disp = (int64_t)imm;
		}
		set_reg(m, rd, v);
		return;
	}
	if (gil_a64_mov_reg(w, &rd, &rn)) {
		set_reg(m, rd, m->regs[rn]);
		return;
	}
	if (gil_a64_spill(w, &rd, &off)) {
		i = slot(m, off, true);
		m->slots[i].v = m->regs[rd];
		if (m->slots[i].v.kind == A_UNKNOWN)
			m->slots[i].used = false;
		return;
	}
	if (gil_a64_reload(w, &rd, &off)) {
		i = slot(m, off, false);
		set_reg(m, rd, i >= 0 ? m->slots[i].v : v);
		return;
	}
	/* any other store through SP may cover a slot */
	if ((w & 0x0a000000) == 0x08000000 && ((w >> 5) & 31) == 31)
		for (i = 0; i < NR_SLOTS; i++)
			m->slots[i].used = false;
	forget(m, gil_a64_writes(w));
}

/*
 * One instruction as the search sees it: its call identity (0: not a call), whether it stores
 * 32 bits of 0 and where, and what it leaves in the registers. The mutex argument is in
 * *@arg0's register (rdi, x0).
 */
static void step(bool a64, const struct gil_insn *in, uint64_t at, struct mstate *m,
		 uint64_t *id, bool *store0, struct arg *where)
{
	int rn;
	int64_t off;

	*store0 = false;
	if (!a64) {
		*id = call_id(in);
		if (gil_copy_store(in)) {
			*store0 = true;
			*where = mem_addr(m, in);
		}
		track(in, m);
		return;
	}
	*id = in->flow == GIL_INSN_CALL ? in->target : 0;
	if (gil_a64_store_zero32(in->word, &rn, &off) && rn != 31) {
		*store0 = true;
		*where = m->regs[rn];
		if (where->kind == A_ABS) {
			where->abs += (uint64_t)off;
		} else if (where->kind == A_BASE) {
			where->disp += off;
		} else {
			where->kind = A_BASE;
			where->base = rn;
			where->disp = off;
		}
	}
	track_a64(in, at, m);
}

/* @m minus @l when both are known and comparable (same base, or both absolute). */
static bool distance(const struct arg *m, const struct arg *l, int64_t *d)
{
	if (m->kind == A_UNKNOWN || m->kind != l->kind)
		return false;
	if (m->kind == A_ABS)
		*d = (int64_t)(m->abs - l->abs);
	else if (m->base == l->base)
		*d = m->disp - l->disp;
	else
		return false;
	return true;
}

static bool same_arg(const struct arg *a, const struct arg *b)
{
	if (a->kind == A_UNKNOWN || b->kind == A_UNKNOWN)
		return true; /* nothing to compare */
	if (a->kind != b->kind)
		return false;
	if (a->kind == A_ABS)
		return a->abs == b->abs;
	return a->base == b->base && a->disp == b->disp;
}

/* The file's bytes of [@start, @end) if they lie in one executable segment. */
static const uint8_t *code_of(struct scan *sc, const struct gil_ehframe *eh, uint64_t start,
			      uint64_t end)
{
	uint64_t off;

	if (end <= start || end - start > MAX_FUNC ||
	    gil_sites_offset(sc, start, end - start, &off))
		return NULL;
	return gil_ehframe_bytes(eh, start, end - start);
}

/*
 * Which of the @nr stores of 0 between LOCK and SIGNAL releases: from 3.13 on drop_gil also
 * clears tstate->holds_gil there. The one at the reference's distance from the mutex argument;
 * without a distance to compare, the only store. Learning (@learn), the one store whose
 * distance from the mutex can be told (the same base register, or both absolute) sets it.
 * Returns true with *@store set.
 */
static bool pick_store(struct seq *q, bool learn, const struct arg *mutex, const struct arg *sa,
		       const uint64_t *st, int nr, uint64_t *store)
{
	int i, fits = 0, pick = -1;
	int64_t d;

	for (i = 0; i < nr; i++) {
		if (!distance(mutex, &sa[i], &d) || (!learn && (!q->has_dist || d != q->dist)))
			continue;
		if (learn && (d <= 0 || d > 4096))
			continue;
		fits++;
		pick = i;
	}
	if (fits == 1) {
		if (learn && distance(mutex, &sa[pick], &d)) {
			q->has_dist = true;
			q->dist = d;
		}
		*store = st[pick];
		return true;
	}
	if (fits > 1 || nr != 1)
		return false;
	*store = st[0];
	return true;
}

/*
 * Walk [@start, @end): with @learn, fill @q from the first store of 0 that a call precedes and
 * two calls follow (the standalone drop_gil); else add each copy of @q to @out. Returns the
 * copies found (learning: 1 when learnt), 0, or -1 on ENOMEM.
 */
static int walk(struct scan *sc, const struct gil_ehframe *eh, uint64_t start, uint64_t end,
		bool learn, struct seq *q, struct copy **out, size_t *nr, size_t *cap)
{
	const uint8_t *code = code_of(sc, eh, start, end);
	struct arg lock_arg = { 0 }, sa[MAX_STORES], arg0, where;
	enum gil_arch arch = sc->aarch64 ? GIL_ARCH_AARCH64 : GIL_ARCH_X86_64;
	uint64_t pos, at, id, store = 0, st[MAX_STORES];
	int state = 0, gap = 0, found = 0, nr_st = 0;
	const struct arg *rdi = &arg0;
	uint64_t ids[3] = { 0 }, skip_to = 0;
	struct gil_insn in;
	struct mstate m, at_branch;
	bool store0;

	if (!code)
		return 0;
	memset(&m, 0, sizeof(m));
	m.sp = sc->aarch64 ? 31 : RSP;
	for (pos = 0; pos < end - start; pos += in.len) {
		at = start + pos;
		if (gil_insn_decode(arch, code + pos, end - start - pos, at, &in))
			return found; /* an instruction this decoder does not know: stop here */
		if (skip_to && at >= skip_to)
			skip_to = 0;
		/*
		 * A call that a branch before it jumps over, and whose next instruction is that
		 * branch's target, is a block the path skips: an error's exit that does not come
		 * back (drop_gil's "PyMUTEX_LOCK(gil->mutex) failed" fatal error, placed inline by
		 * some builds). It is no step of the sequence, and where the path goes on, what the
		 * registers hold is what they held at the branch.
		 */
		if (skip_to && in.flow == GIL_INSN_CALL && at + in.len == skip_to) {
			m = at_branch;
			skip_to = 0;
			if (!q->fatal)
				q->fatal = call_id(&in);
			continue;
		}
		/* the first argument as the call gets it, then the instruction's own effect */
		arg0 = m.regs[sc->aarch64 ? 0 : RDI];
		step(sc->aarch64, &in, at, &m, &id, &store0, &where);
		if (state && in.flow == GIL_INSN_BRANCH && in.target > at && in.target < end) {
			skip_to = in.target;
			at_branch = m;
		}
		if (state && ++gap > GAP)
			state = 0;
		switch (state) {
		case 0: /* before LOCK */
			if (id && (learn || id == q->lock)) {
				ids[0] = id;
				lock_arg = *rdi;
				state = 1;
				gap = 0;
				nr_st = 0;
			}
			break;
		case 1: /* after LOCK: stores of 0, then SIGNAL */
			if (store0) {
				if (nr_st == MAX_STORES) {
					state = 0;
					break;
				}
				st[nr_st] = at;
				sa[nr_st++] = where;
				gap = 0;
			} else if (id && !nr_st) {
				ids[0] = id; /* a call again: it may be LOCK */
				lock_arg = *rdi;
				gap = 0;
				if (!learn && id != q->lock)
					state = 0;
			} else if (id) {
				ids[1] = id;
				gap = 0;
				state = 0;
				if ((learn || id == q->signal) &&
				    pick_store(q, learn, &lock_arg, sa, st, nr_st, &store))
					state = 3;
			}
			break;
		case 3: /* after SIGNAL: UNLOCK, on the same mutex */
			if (id) {
				ids[2] = id;
				state = 0;
				if ((!learn && id != q->unlock) || !same_arg(&lock_arg, rdi) ||
				    ids[0] == ids[1] || ids[1] == ids[2] || ids[0] == ids[2])
					break;
				if (learn) {
					q->lock = ids[0];
					q->signal = ids[1];
					q->unlock = ids[2];
					return 1;
				}
				if (gil_grow(out, cap, *nr + 1, sizeof(**out)) < 0)
					return -1;
				(*out)[*nr].store = store;
				(*out)[*nr].after = at + in.len;
				(*out)[*nr].func = start;
				(*out)[*nr].func_end = end;
				(*out)[*nr].host = NULL;
				(*out)[*nr].after2 = 0;
				(*nr)++;
				found++;
			}
			break;
		}
		if (in.flow == GIL_INSN_STOP || in.flow == GIL_INSN_JUMP || in.flow == GIL_INSN_INDIRECT)
			state = 0; /* the sequence is straight-line code */
	}
	return found;
}

/*
 * The drop_gil entry site inside [@start, @end): -1 when none, -2 when it is drop_gil itself
 * (a whole function: nothing to add), else the index of an exported host's entry, which the
 * copies found in it replace (a host's entry stands for its copy, and cannot read the thread
 * state where only the copy's own store tells where it is).
 */
static long drop_site_in(const struct gil_symbols *syms, uint64_t start, uint64_t end)
{
	long host = -1;
	size_t i;

	for (i = 0; i < syms->nr_sites; i++) {
		const struct gil_site *d = &syms->sites[i];

		if (d->fn != GIL_FN_DROP || d->role != GIL_SITE_ENTRY || d->addr < start ||
		    d->addr >= end)
			continue;
		if (d->host == GIL_HOST_NONE)
			return -2;
		host = (long)i;
	}
	return host;
}

/*
 * For code [@start, @end) with no drop_gil site of its own (a .cold part, split from its
 * function): the index of the exported host whose function it jumps back into, -1 if none. A
 * copy found there is that host's (3.14 and 3.15 keep _Py_HandlePending's in its .cold part).
 */
static long host_of_part(struct scan *sc, const struct gil_ehframe *eh, uint64_t start,
			 uint64_t end)
{
	const uint8_t *code = code_of(sc, eh, start, end);
	enum gil_arch arch = sc->aarch64 ? GIL_ARCH_AARCH64 : GIL_ARCH_X86_64;
	struct gil_insn in;
	uint64_t pos, hs, he;
	bool entry;
	size_t i;

	for (i = 0; code && i < sc->syms->nr_sites; i++) {
		const struct gil_site *d = &sc->syms->sites[i];

		if (d->fn != GIL_FN_DROP || d->role != GIL_SITE_ENTRY || d->host == GIL_HOST_NONE ||
		    gil_ehframe_fde(eh, d->addr - d->skipped, false, &hs, &he, &entry))
			continue;
		for (pos = 0; pos < end - start; pos += in.len) {
			if (gil_insn_decode(arch, code + pos, end - start - pos, start + pos, &in))
				break;
			if ((in.flow == GIL_INSN_JUMP || in.flow == GIL_INSN_BRANCH) &&
			    in.target >= hs && in.target < he)
				return (long)i;
		}
	}
	return -1;
}

static void remove_site(struct gil_symbols *syms, size_t i)
{
	free(syms->sites[i].symbol);
	memmove(&syms->sites[i], &syms->sites[i + 1], (syms->nr_sites - i - 1) * sizeof(*syms->sites));
	syms->nr_sites--;
}

int gil_copies_scan(struct scan *sc)
{
	struct gil_symbols *syms = sc->syms;
	struct copy *c = NULL;
	struct gil_ehframe eh;
	struct gil_site t;
	size_t nr = 0, cap = 0, i, k, before;
	uint64_t start, end, s, e;
	struct seq q = { 0 };
	const char *name;
	char sym[160];
	bool entry;
	long host;
	int ret = -1, r;

	if ((!sc->x86_64 && !sc->aarch64) || sc->dwarf_done)
		return 0;
	gil_ehframe_open(&eh, sc->obj, sc->obj_size);
	if (!eh.nr_fde)
		return 0;
	/* the sequence, from a standalone drop_gil (its whole code: a table or the call graph) */
	for (i = 0; i < syms->nr_sites && !q.lock; i++) {
		const struct gil_site *d = &syms->sites[i];

		if (d->fn != GIL_FN_DROP || d->role != GIL_SITE_ENTRY || d->approximate ||
		    d->host != GIL_HOST_NONE || !d->size ||
		    gil_ehframe_fde(&eh, d->addr - d->skipped, false, &s, &e, &entry) || !entry)
			continue;
		if (walk(sc, &eh, s, e, true, &q, NULL, NULL, NULL) < 0)
			return -1;
	}
	if (!q.lock)
		return 0;
	/* every frame description's code, in the table's (address) order */
	for (k = 0; k < eh.nr_fde; k++) {
		if (gil_ehframe_nth(&eh, k, &start, &end))
			continue;
		host = drop_site_in(syms, start, end);
		if (host == -2)
			continue; /* drop_gil itself */
		r = walk(sc, &eh, start, end, false, &q, &c, &nr, &cap);
		if (r < 0)
			goto out;
		if (r > 0 && host == -1) {
			host = host_of_part(sc, &eh, start, end);
			/* named after the function whose part it is, as DWARF names it */
			for (i = nr - (size_t)r; host >= 0 && i < nr; i++) {
				c[i].host = strdup(syms->sites[host].symbol);
				if (!c[i].host)
					goto out;
			}
		}
		if (r > 0 && host >= 0) {
			remove_site(syms, (size_t)host);
			if (syms->nr_callgraph)
				syms->nr_callgraph--; /* callgraph.c counted the host */
		}
	}
	for (i = 0; i < nr; i++)
		c[i].after = gil_copy_exit(sc, code_of(sc, &eh, c[i].func, c[i].func_end), &c[i], &q);
	/* entries first, then exits, as the other sites are ordered */
	for (i = 0; i < 3 * nr; i++) {
		const struct copy *p = &c[i % nr];
		bool exit_site = i >= nr;

		if (i >= 2 * nr && !p->after2)
			continue;
		name = p->host ? p->host : gil_sites_func_at(sc->obj, p->func, false);
		if (name && *name)
			snprintf(sym, sizeof(sym), "drop_gil@%.140s", name);
		else
			snprintf(sym, sizeof(sym), "drop_gil@0x%llx", (unsigned long long)p->func);
		memset(&t, 0, sizeof(t));
		t.fn = GIL_FN_DROP;
		t.role = exit_site ? GIL_SITE_EXIT : GIL_SITE_ENTRY;
		t.symbol = sym;
		t.addr = i >= 2 * nr ? p->after2 : exit_site ? p->after : p->store;
		t.method = "code-inline";
		if (gil_sites_offset(sc, t.addr, 1, &t.offset))
			continue;
		before = syms->nr_sites;
		if (gil_sites_add(sc, &t))
			goto out;
		if (!exit_site && syms->nr_sites > before)
			syms->nr_callgraph++;
	}
	ret = 0;
out:
	for (i = 0; i < nr; i++)
		free(c[i].host);
	free(c);
	return ret;
}
