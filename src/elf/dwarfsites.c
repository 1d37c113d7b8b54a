// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Inlined copies of take_gil/drop_gil, read from DWARF with libdw. A uprobe at an address that
 * is not an instruction start corrupts the traced program, so every address given out here is
 * the start of a line-table row of the unit that holds the copy; nothing is decoded or guessed.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dwarfsites.h"
#include "common/util.h"
#include "x86insn.h"

void gil_dwarf_free(struct gil_dwarf *dw)
{
	size_t i;

	if (!dw)
		return;
	for (i = 0; i < dw->nr_sites; i++)
		free(dw->sites[i].where);
	free(dw->sites);
	free(dw);
}

#include <dwarf.h>
#include <elfutils/libdw.h>

bool gil_dwarf_supported(void)
{
	return true;
}

#define MAX_DEPTH 128 /* DIE nesting; C code stays far below */
#define MAX_CHAIN 16 /* abstract_origin/specification links followed to a name */
#define MAX_SYNC 4096 /* bytes decoded from a line-table row up to a range's start */
#define MAX_SCAN (1 << 20) /* bytes of one range followed */

static const char *const fn_names[GIL_FN_NR] = {
	[GIL_FN_TAKE] = "take_gil",
	[GIL_FN_DROP] = "drop_gil",
};

struct range {
	uint64_t lo, hi; /* [lo, hi) */
};

struct ranges {
	struct range *v;
	size_t nr, cap;
};

struct sites {
	struct gil_dwarf_site *v;
	size_t nr, cap;
};

/* The outermost subprogram with code: the function that copies are inlined in. */
struct outer {
	Dwarf_Die *die;
	struct ranges code; /* loaded when a copy needs it */
	bool loaded;
};

/* What a DIE's ancestors say about it. */
struct scope {
	struct outer *outer;
	unsigned int inside; /* bit per enum gil_func: a copy of it encloses this DIE */
};

struct walk {
	struct gil_dwarf *dw;
	Elf *code; /* the probed object: instruction bytes, through its program headers */
	enum gil_arch arch; /* of the code: x86-64 and AArch64 are followed */
	struct sites entries, exits;
	struct ranges copies[GIL_FN_NR]; /* every probed copy's ranges, per function */
	Dwarf_Die cu;
	uint64_t *rows; /* instruction starts of the unit: line-table rows, no end of sequence */
	size_t nr_rows;
	bool rows_loaded;
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int cmp_site(const void *a, const void *b)
{
	const struct gil_dwarf_site *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int range_add(struct ranges *r, uint64_t lo, uint64_t hi)
{
	if (gil_grow(&r->v, &r->cap, r->nr + 1, sizeof(*r->v)) < 0)
		return -1;
	r->v[r->nr].lo = lo;
	r->v[r->nr].hi = hi;
	r->nr++;
	return 0;
}

/* A set of addresses, as one-byte ranges. */
static int push_addr(struct ranges *c, uint64_t addr)
{
	return range_add(c, addr, addr + 1);
}

static bool in_ranges(const struct ranges *r, uint64_t addr)
{
	size_t i;

	for (i = 0; i < r->nr; i++)
		if (addr >= r->v[i].lo && addr < r->v[i].hi)
			return true;
	return false;
}

/* The DIE's code ranges in the order DWARF lists them. -1 only on ENOMEM. */
static int die_ranges(Dwarf_Die *die, struct ranges *r)
{
	Dwarf_Addr base, lo, hi;
	ptrdiff_t off = 0;

	r->nr = 0;
	while ((off = dwarf_ranges(die, off, &base, &lo, &hi)) > 0) {
		if (hi > lo && range_add(r, lo, hi))
			return -1;
	}
	return 0;
}

/*
 * The name a DIE stands for, following DW_AT_abstract_origin and DW_AT_specification (an
 * inlined copy -> its abstract instance -> a declaration). NULL when the chain ends nameless.
 */
static const char *origin_name(Dwarf_Die *die)
{
	Dwarf_Attribute attr;
	Dwarf_Die cur = *die, next;
	int i;

	for (i = 0; i < MAX_CHAIN; i++) {
		if (dwarf_attr(&cur, DW_AT_name, &attr))
			return dwarf_formstring(&attr);
		if (!dwarf_attr(&cur, DW_AT_abstract_origin, &attr) &&
		    !dwarf_attr(&cur, DW_AT_specification, &attr))
			return NULL;
		if (!dwarf_formref_die(&attr, &next))
			return NULL;
		cur = next;
	}
	return NULL;
}

/* Which GIL function @die is a copy of; -1 for any other. */
static int copy_of(Dwarf_Die *die)
{
	const char *name = origin_name(die);
	int f;

	if (!name)
		return -1;
	for (f = 0; f < GIL_FN_NR; f++)
		if (!strcmp(name, fn_names[f]))
			return f;
	return -1;
}

static bool has_code(Dwarf_Die *die)
{
	return dwarf_hasattr(die, DW_AT_low_pc) || dwarf_hasattr(die, DW_AT_ranges);
}

/*
 * Where the copy starts: DW_AT_entry_pc (an address, or an offset from DW_AT_low_pc), else
 * DW_AT_low_pc, else the first range listed. -1 when none of these can be read.
 */
static int entry_of(Dwarf_Die *die, const struct ranges *r, uint64_t *entry)
{
	Dwarf_Attribute attr;
	Dwarf_Addr addr, low;
	Dwarf_Word off;

	if (dwarf_attr(die, DW_AT_entry_pc, &attr)) {
		switch (dwarf_whatform(&attr)) {
		case DW_FORM_addr:
		case DW_FORM_addrx:
		case DW_FORM_addrx1:
		case DW_FORM_addrx2:
		case DW_FORM_addrx3:
		case DW_FORM_addrx4:
		case DW_FORM_GNU_addr_index:
			if (dwarf_formaddr(&attr, &addr))
				return -1;
			*entry = addr;
			return 0;
		default:
			/* Constant class (DWARF 5): an offset from low_pc; none: unknown. */
			if (dwarf_formudata(&attr, &off) || dwarf_lowpc(die, &low))
				return -1;
			*entry = low + off;
			return 0;
		}
	}
	if (dwarf_lowpc(die, &low) == 0) {
		*entry = low;
		return 0;
	}
	if (!r->nr)
		return -1;
	*entry = r->v[0].lo;
	return 0;
}

/* Instruction starts of the current unit; loaded once per unit, on its first copy. */
static int load_rows(struct walk *w)
{
	Dwarf_Lines *lines;
	Dwarf_Line *line;
	Dwarf_Addr addr;
	size_t n, i, k;
	bool end;

	if (w->rows_loaded)
		return 0;
	w->rows_loaded = true;
	w->nr_rows = 0;
	if (dwarf_getsrclines(&w->cu, &lines, &n) || !n)
		return 0; /* no line table: nothing here can be proven */
	free(w->rows);
	w->rows = malloc(n * sizeof(*w->rows));
	if (!w->rows)
		return -1;
	for (i = 0; i < n; i++) {
		line = dwarf_onesrcline(lines, i);
		/* An end of sequence is one past the last instruction: padding, another function */
		if (!line || dwarf_lineendsequence(line, &end) || end ||
		    dwarf_lineaddr(line, &addr))
			continue;
		w->rows[w->nr_rows++] = addr;
	}
	qsort(w->rows, w->nr_rows, sizeof(*w->rows), cmp_u64);
	for (i = k = 0; i < w->nr_rows; i++)
		if (!k || w->rows[k - 1] != w->rows[i])
			w->rows[k++] = w->rows[i];
	w->nr_rows = k;
	return 0;
}

static bool is_row(const struct walk *w, uint64_t addr)
{
	return w->nr_rows &&
	       bsearch(&addr, w->rows, w->nr_rows, sizeof(*w->rows), cmp_u64) != NULL;
}

static int push_site(struct sites *s, int fn, enum gil_site_role role, uint64_t addr,
		     const char *where)
{
	struct gil_dwarf_site *v;

	if (gil_grow(&s->v, &s->cap, s->nr + 1, sizeof(*s->v)) < 0)
		return -1;
	v = &s->v[s->nr];
	v->where = strdup(where);
	if (!v->where)
		return -1;
	v->fn = (enum gil_func)fn;
	v->role = role;
	v->addr = addr;
	s->nr++;
	return 0;
}

/* The greatest line-table row at or below @addr; false when there is none. */
static bool row_at_or_below(const struct walk *w, uint64_t addr, uint64_t *row)
{
	size_t lo = 0, hi = w->nr_rows, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (w->rows[mid] <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return false;
	*row = w->rows[lo - 1];
	return true;
}

/* The probed object's bytes at [@addr, @addr + @len), all inside one executable segment. */
static const uint8_t *code_bytes(struct walk *w, uint64_t addr, size_t len)
{
	uint64_t off, last;
	bool x, xl;
	Elf_Data *d;

	if (!w->code || !len || gil_elf_addr_to_offset(w->code, addr, &off, &x) || !x ||
	    gil_elf_addr_to_offset(w->code, addr + len - 1, &last, &xl) || !xl ||
	    last - off != len - 1)
		return NULL;
	d = elf_getdata_rawchunk(w->code, (int64_t)off, len, ELF_T_BYTE);
	return d && d->d_size == len ? d->d_buf : NULL;
}


/*
 * The return address of the call site @cs when DWARF proves the callee returns: it names the
 * callee (not an indirect call) and no DIE on its origin chain says DW_AT_noreturn.
 */
static bool call_returns(Dwarf_Die *cs, uint64_t *pc)
{
	Dwarf_Attribute attr;
	Dwarf_Die callee, next;
	Dwarf_Addr addr;
	bool flag;
	int i;

	if (dwarf_attr(cs, DW_AT_call_return_pc, &attr)) {
		if (dwarf_formaddr(&attr, &addr))
			return false;
	} else if (dwarf_tag(cs) != DW_TAG_GNU_call_site || dwarf_lowpc(cs, &addr)) {
		return false; /* DWARF 4's GNU call site keeps the return address in low_pc */
	}
	if ((!dwarf_attr(cs, DW_AT_call_origin, &attr) &&
	     !dwarf_attr(cs, DW_AT_abstract_origin, &attr)) ||
	    !dwarf_formref_die(&attr, &callee))
		return false;
	for (i = 0; i < MAX_CHAIN; i++) {
		if (dwarf_attr(&callee, DW_AT_noreturn, &attr) &&
		    (dwarf_formflag(&attr, &flag) || flag))
			return false;
		if (!dwarf_attr(&callee, DW_AT_abstract_origin, &attr) &&
		    !dwarf_attr(&callee, DW_AT_specification, &attr))
			break;
		if (!dwarf_formref_die(&attr, &next))
			return false;
		callee = next;
	}
	*pc = addr;
	return true;
}

/* Return addresses of the calls in @die's subtree (a copy) whose callee returns. */
static int returning_calls(Dwarf_Die *die, struct ranges *out, int depth)
{
	Dwarf_Die child;
	uint64_t pc;
	int tag;

	if (depth > MAX_DEPTH || dwarf_child(die, &child))
		return 0;
	do {
		tag = dwarf_tag(&child);
		if (tag == DW_TAG_call_site || tag == DW_TAG_GNU_call_site) {
			if (call_returns(&child, &pc) && push_addr(out, pc))
				return -1;
		} else if (tag == DW_TAG_lexical_block || tag == DW_TAG_inlined_subroutine) {
			if (returning_calls(&child, out, depth + 1))
				return -1;
		}
	} while (dwarf_siblingof(&child, &child) == 0);
	return 0;
}

/*
 * Follow the code of one range [@lo, @hi) of the copy @r, from the line-table row at or below
 * @lo, and collect where control leaves the copy: past @hi when the last instruction can fall
 * through (a call only when @returns holds its return address), and the targets of branches
 * that land outside the copy. Returns 1 when the range could not be followed (its exits are
 * unknown), 0 when done, -1 on ENOMEM.
 */
static int range_exits(struct walk *w, const struct ranges *r, const struct ranges *returns,
		       uint64_t lo, uint64_t hi, struct ranges *cand)
{
	enum gil_insn_flow last = GIL_INSN_NEXT;
	const uint8_t *code;
	struct gil_insn in;
	uint64_t start, pos;

	if (w->arch == GIL_ARCH_OTHER || !row_at_or_below(w, lo, &start) || lo - start > MAX_SYNC ||
	    hi - start > MAX_SCAN)
		return 1;
	code = code_bytes(w, start, hi - start);
	if (!code)
		return 1;
	/* Decoding stops exactly at @lo and at @hi, or the instruction stream is not the one
	 * the line table describes: give up rather than guess. */
	for (pos = start; pos < lo; pos += in.len)
		if (gil_insn_decode(w->arch, code + (pos - start), hi - pos, pos, &in))
			return 1;
	if (pos != lo)
		return 1;
	for (; pos < hi; pos += in.len) {
		if (gil_insn_decode(w->arch, code + (pos - start), hi - pos, pos, &in))
			return 1;
		if ((in.flow == GIL_INSN_BRANCH || in.flow == GIL_INSN_JUMP) &&
		    !in_ranges(r, in.target) && push_addr(cand, in.target))
			return -1;
		if (in.flow == GIL_INSN_INDIRECT)
			w->dw->exits_unknown++; /* a computed jump may leave the copy: not seen */
		last = in.flow;
	}
	/* After a jump, a return or a call that does not return comes other code. */
	if ((last == GIL_INSN_NEXT || last == GIL_INSN_BRANCH ||
	     (last == GIL_INSN_CALL && in_ranges(returns, hi))) &&
	    !in_ranges(r, hi) && push_addr(cand, hi))
		return -1;
	return 0;
}

/* One inlined copy of @fn, not nested in another: its entry, and its provable exits. */
static int add_copy(struct walk *w, Dwarf_Die *die, int fn, struct scope *sc)
{
	struct ranges r = { 0 }, cand = { 0 }, returns = { 0 };
	const char *caller;
	char *where = NULL;
	uint64_t entry, x;
	size_t i;
	int ret = -1, k;

	w->dw->copies++;
	if (die_ranges(die, &r) || load_rows(w))
		goto out;
	if (!sc->outer->loaded) {
		sc->outer->loaded = true;
		if (die_ranges(sc->outer->die, &sc->outer->code))
			goto out;
	}
	/*
	 * GCC may put the entry in an empty range, at a caller instruction scheduled where the
	 * copy begins (view 1 of that address): still the one way in, so it only has to be an
	 * instruction start in the caller's code.
	 */
	if (!r.nr || entry_of(die, &r, &entry) || !is_row(w, entry) ||
	    !in_ranges(&sc->outer->code, entry)) {
		w->dw->unproven++;
		ret = 0;
		goto out;
	}
	caller = origin_name(sc->outer->die);
	where = gil_strfmt("%s@%s", fn_names[fn], caller ? caller : "?");
	if (!where || push_site(&w->entries, fn, GIL_SITE_ENTRY, entry, where))
		goto out;
	if (returning_calls(die, &returns, 0))
		goto out;
	for (i = 0; i < r.nr; i++) {
		if (range_add(&w->copies[fn], r.v[i].lo, r.v[i].hi))
			goto out;
		k = range_exits(w, &r, &returns, r.v[i].lo, r.v[i].hi, &cand);
		if (k < 0)
			goto out;
		w->dw->exits_unknown += (size_t)k;
	}
	for (i = 0; i < cand.nr; i++) {
		x = cand.v[i].lo;
		/* An exit goes on in the caller's code, at an instruction that starts a row. */
		if (!is_row(w, x) || !in_ranges(&sc->outer->code, x)) {
			w->dw->exits_refused++;
			continue;
		}
		if (push_site(&w->exits, fn, GIL_SITE_EXIT, x, where))
			goto out;
	}
	ret = 0;
out:
	free(where);
	free(returns.v);
	free(cand.v);
	free(r.v);
	return ret;
}

static int walk_children(struct walk *w, Dwarf_Die *parent, struct scope *sc, int depth);

static int visit(struct walk *w, Dwarf_Die *die, struct scope *sc, int depth)
{
	struct outer outer = { 0 };
	struct scope sub = *sc;
	int tag = dwarf_tag(die), fn, ret;

	switch (tag) {
	case DW_TAG_subprogram:
	case DW_TAG_inlined_subroutine:
		/* Abstract instances and declarations have no code, nor has what they hold. */
		if (!has_code(die))
			return 0;
		if (tag == DW_TAG_subprogram && !sc->outer) {
			outer.die = die;
			sub.outer = &outer;
		}
		fn = copy_of(die);
		if (fn < 0)
			break;
		if (sc->inside & (1u << fn)) {
			w->dw->nested++;
		} else if (tag == DW_TAG_inlined_subroutine && sub.outer) {
			/* The out-of-line body is a symbol-table entry: only inlined copies here */
			if (add_copy(w, die, fn, &sub))
				return -1;
		}
		sub.inside |= 1u << fn;
		break;
	case DW_TAG_lexical_block:
	case DW_TAG_namespace:
	case DW_TAG_module:
		break;
	default:
		return 0;
	}
	ret = walk_children(w, die, &sub, depth + 1);
	free(outer.code.v);
	return ret;
}

static int walk_children(struct walk *w, Dwarf_Die *parent, struct scope *sc, int depth)
{
	Dwarf_Die child;

	if (depth > MAX_DEPTH || dwarf_child(parent, &child))
		return 0;
	do {
		if (visit(w, &child, sc, depth))
			return -1;
	} while (dwarf_siblingof(&child, &child) == 0);
	return 0;
}

/* Sort, drop duplicate addresses (an entry shared by two copies gives one site). */
static void unique_sites(struct sites *s)
{
	size_t i, k;

	if (!s->nr)
		return; /* s->v may be NULL, which qsort() must not get */
	qsort(s->v, s->nr, sizeof(*s->v), cmp_site);
	for (i = k = 0; i < s->nr; i++) {
		if (k && s->v[k - 1].addr == s->v[i].addr) {
			free(s->v[i].where);
			continue;
		}
		s->v[k++] = s->v[i];
	}
	s->nr = k;
}

static bool is_entry(const struct sites *entries, uint64_t addr)
{
	struct gil_dwarf_site key = { .addr = addr };

	return entries->nr &&
	       bsearch(&key, entries->v, entries->nr, sizeof(key), cmp_site) != NULL;
}

/* Entries first, then the exits that no entry and no copy of the same function claims. */
static int finish(struct walk *w)
{
	struct gil_dwarf *dw = w->dw;
	struct gil_dwarf_site *x;
	size_t i;

	unique_sites(&w->entries);
	unique_sites(&w->exits);
	dw->sites = malloc((w->entries.nr + w->exits.nr + 1) * sizeof(*dw->sites));
	if (!dw->sites)
		return -1;
	for (i = 0; i < w->entries.nr; i++)
		dw->sites[dw->nr_sites++] = w->entries.v[i];
	for (i = 0; i < w->exits.nr; i++) {
		x = &w->exits.v[i];
		/* One probe cannot be two events: the entry wins; inside a copy is not an exit. */
		if (is_entry(&w->entries, x->addr) || in_ranges(&w->copies[x->fn], x->addr)) {
			dw->exits_refused++;
			free(x->where);
			continue;
		}
		dw->sites[dw->nr_sites++] = *x;
	}
	/* dw->sites owns the names now */
	w->entries.nr = 0;
	w->exits.nr = 0;
	return 0;
}

static void walk_release(struct walk *w)
{
	size_t i;

	for (i = 0; i < w->entries.nr; i++)
		free(w->entries.v[i].where);
	for (i = 0; i < w->exits.nr; i++)
		free(w->exits.v[i].where);
	free(w->entries.v);
	free(w->exits.v);
	for (i = 0; i < GIL_FN_NR; i++)
		free(w->copies[i].v);
	free(w->rows);
}

int gil_dwarf_read(struct gil_elf *f, Elf *code, struct gil_dwarf **out, char *err,
		   size_t errlen)
{
	struct walk w = { 0 };
	struct scope sc = { 0 };
	Dwarf_Off off = 0, next;
	size_t hsize;
	Dwarf *dbg = NULL;
	int ret = -1;

	*out = NULL;
	w.dw = calloc(1, sizeof(*w.dw));
	if (!w.dw)
		goto out;
	w.dw->supported = true;
	w.code = code;
	w.arch = gil_arch_of(code);
	dbg = gil_elf_dwarf(f); /* kept: attribution reads the same handle */
	if (!dbg) {
		ret = 0; /* no DWARF in this file */
		goto out;
	}
	w.dw->has_dwarf = true;
	for (; dwarf_nextcu(dbg, off, &next, &hsize, NULL, NULL, NULL) == 0; off = next) {
		if (!dwarf_offdie(dbg, off + hsize, &w.cu))
			continue;
		w.rows_loaded = false;
		if (walk_children(&w, &w.cu, &sc, 0))
			goto out;
	}
	if (finish(&w))
		goto out;
	ret = 0;
out:
	walk_release(&w);
	if (ret) {
		gil_dwarf_free(w.dw);
		errno = ENOMEM;
		return gil_err(err, errlen, "out of memory reading DWARF");
	}
	*out = w.dw;
	return 0;
}
