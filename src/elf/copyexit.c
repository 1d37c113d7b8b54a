// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Where an inlined copy of drop_gil found from the code (copies.c) ends: the instruction after
 * its UNLOCK's call, or, where the compiler laid out the block that waits for a forced switch
 * beside it, the join every path of that block comes to, which is where DWARF's exit is (the
 * release then includes the forced switch's wait, as with DWARF). Each path is decoded from the
 * copy's own instructions, within its function; an exit is only moved where the proof holds.
 * doc/compatibility.md ("Inlined releases without DWARF") has what it matches, per build.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "common/util.h"
#include "copyexit.h"
#include "x86insn.h"

/*
 * Whether every path from @from, in the copy's function, comes to @join, calling LOCK and
 * UNLOCK on the way (the block that waits takes the switch mutex): a return, a jump through a
 * register, a path of more than EXIT_PATH instructions or a decoding failure says no. Leaving
 * the function (to a .cold part's fatal error) and calling the fatal error end a path; any
 * other call is assumed to come back.
 */
#define EXIT_PATH 256
static bool all_reach(struct scan *sc, const uint8_t *code, const struct copy *c,
		      const struct seq *q, uint64_t from, uint64_t join)
{
	enum gil_arch arch = sc->aarch64 ? GIL_ARCH_AARCH64 : GIL_ARCH_X86_64;
	uint64_t todo[32], seen[EXIT_PATH], at, id;
	size_t nt = 0, ns = 0, i;
	bool locks = false, unlocks = false;
	struct gil_insn in;

	todo[nt++] = from;
	while (nt) {
		at = todo[--nt];
		for (;;) {
			if (at == join || at < c->func || at >= c->func_end)
				break;
			for (i = 0; i < ns && seen[i] != at; i++)
				;
			if (i < ns)
				break;
			if (ns == EXIT_PATH ||
			    gil_insn_decode(arch, code + (at - c->func), c->func_end - at, at, &in) ||
			    in.flow == GIL_INSN_STOP || in.flow == GIL_INSN_INDIRECT)
				return false;
			seen[ns++] = at;
			id = sc->aarch64 ? (in.flow == GIL_INSN_CALL ? in.target : 0) : call_id(&in);
			locks |= id && id == q->lock;
			unlocks |= id && id == q->unlock;
			if (id && id == q->fatal)
				break;
			if (in.flow == GIL_INSN_JUMP) {
				at = in.target;
				continue;
			}
			if (in.flow == GIL_INSN_BRANCH) {
				if (nt == GIL_ARRAY_SIZE(todo))
					return false;
				todo[nt++] = in.target;
			}
			at += in.len;
		}
	}
	return locks && unlocks;
}

/* Whether [@from, @to) is straight code ending with a call: an inline fatal error (learnt). */
static bool over_call(struct scan *sc, const uint8_t *code, const struct copy *c,
		      struct seq *q, uint64_t from, uint64_t to)
{
	enum gil_arch arch = sc->aarch64 ? GIL_ARCH_AARCH64 : GIL_ARCH_X86_64;
	struct gil_insn in;
	uint64_t at;
	int n;

	for (at = from, n = 0; at < to && n < 8; at += in.len, n++) {
		if (gil_insn_decode(arch, code + (at - c->func), c->func_end - at, at, &in))
			return false;
		if (in.flow == GIL_INSN_CALL && at + in.len == to) {
			if (!q->fatal)
				q->fatal = sc->aarch64 ? in.target : call_id(&in);
			return true;
		}
		if (in.flow != GIL_INSN_NEXT)
			return false;
	}
	return false;
}

/*
 * The end of the waiting block at @from whose compiler copied the join into it (its path goes
 * on with the function's code instead of jumping back): the instruction after its own UNLOCK's
 * call and that call's check (branches out of the function, or over an inline fatal error);
 * 0 when the block does not show it within 32 instructions.
 */
static uint64_t block_end(struct scan *sc, const uint8_t *code, const struct copy *c,
			  struct seq *q, uint64_t from)
{
	enum gil_arch arch = sc->aarch64 ? GIL_ARCH_AARCH64 : GIL_ARCH_X86_64;
	uint64_t at = from, id, end = 0;
	struct gil_insn in;
	int n, checks = -1;

	for (n = 0; n < 32 && at < c->func_end; n++, at += in.len) {
		if (gil_insn_decode(arch, code + (at - c->func), c->func_end - at, at, &in))
			return 0;
		id = sc->aarch64 ? (in.flow == GIL_INSN_CALL ? in.target : 0) : call_id(&in);
		if (checks < 0) {
			if (id && id == q->unlock) {
				checks = 0;
				end = at + in.len;
			}
			continue;
		}
		if (in.flow == GIL_INSN_BRANCH &&
		    (in.target < c->func || in.target >= c->func_end)) {
			end = at + in.len; /* the result's check, to a .cold fatal error */
			continue;
		}
		if (in.flow == GIL_INSN_BRANCH && in.target > at + in.len &&
		    over_call(sc, code, c, q, at + in.len, in.target)) {
			end = in.target;
			at = in.target - in.len; /* on from the branch's target */
			continue;
		}
		if (in.flow != GIL_INSN_NEXT || ++checks > 2)
			return end;
	}
	return 0;
}

/*
 * Where the copy @c ends, as DWARF's exit would put it. After UNLOCK's call drop_gil checks the
 * call's result (a branch to a fatal error: to a .cold part, or over an inline call) and then
 * the drop request, whose branch leads to the block that waits for the other thread to take
 * the GIL (FORCE_SWITCHING) on one side, and to the rest of the function on the other. The
 * block is the branch's target and the rest its fall-through, or the other way round: where
 * every path from the block comes to the rest (all_reach), that join is the exit, and the
 * release then includes a forced switch's wait, as with DWARF. Otherwise the instruction after
 * UNLOCK's call, which every path passes.
 */
uint64_t gil_copy_exit(struct scan *sc, const uint8_t *code, struct copy *c, struct seq *q)
{
	enum gil_arch arch = sc->aarch64 ? GIL_ARCH_AARCH64 : GIL_ARCH_X86_64;
	uint64_t at = c->after, next;
	struct gil_insn in;
	int n;

	if (!code)
		return c->after;
	for (n = 0; n < 12 && at < c->func_end; n++) {
		if (gil_insn_decode(arch, code + (at - c->func), c->func_end - at, at, &in) ||
		    (in.flow != GIL_INSN_NEXT && in.flow != GIL_INSN_BRANCH))
			return c->after;
		next = at + in.len;
		at = next;
		if (in.flow != GIL_INSN_BRANCH)
			continue;
		if (in.target < c->func || in.target >= c->func_end)
			continue; /* the result's check, to a .cold fatal error */
		if (in.target > next && over_call(sc, code, c, q, next, in.target)) {
			at = in.target; /* over an inline fatal error */
			continue;
		}
		/* the request's branch: the block on one side, the join on the other */
		if (all_reach(sc, code, c, q, in.target, next))
			return next;
		if (all_reach(sc, code, c, q, next, in.target))
			return in.target;
		/* the block at the target, ending in a copy of the join's code: its own end */
		c->after2 = in.target > next ? block_end(sc, code, c, q, in.target) : 0;
		if (c->after2 && all_reach(sc, code, c, q, in.target, c->after2))
			return next;
		c->after2 = 0;
		return c->after;
	}
	return c->after;
}
