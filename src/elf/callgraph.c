// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * take_gil and drop_gil found from the code of a build that has no symbol table, debug file or
 * DWARF naming them (Docker's python images, python-build-standalone, a distribution's Python
 * without its -dbg package). doc/compatibility.md ("Builds without symbols") has the method;
 * in short, a function is only ever probed when three things hold:
 *
 *  1. its address is the target of a direct call or jump from the C API functions that take or
 *     release the GIL (PyEval_RestoreThread, PyEval_AcquireThread; PyEval_SaveThread,
 *     PyEval_ReleaseThread, and _Py_HandlePending where exported), followed through at most
 *     CG_DEPTH calls: a call target is a function entry by construction;
 *  2. .eh_frame has a frame description that starts exactly there: every function has one
 *     (unwinding needs it, so strip keeps it), and it gives the function's extent, which the
 *     x86-64 decoder must then walk from end to end without an instruction it does not know;
 *  3. its code, or a cold part it branches to, loads the address of the string "take_gil"
 *     ("drop_gil"): CPython's Py_FatalError passes __func__ (3.9+), and before 3.9 the messages
 *     "take_gil: NULL tstate" and "drop_gil: GIL is not locked" name them.
 *
 * An exported function whose own code names "drop_gil" holds an inlined copy: its entry stands
 * for the copy (PyEval_SaveThread always releases; _Py_HandlePending only when the thread's drop
 * request is set, which the recorder checks per hit). Inlined copies in functions no table names
 * cannot be found this way: the recorder counts the releases it then misses (a take_gil by a
 * thread that still held the GIL) and says so.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "ehframe.h"
#include "scan.h"
#include "x86insn.h"

#define CG_DEPTH 3 /* calls followed from a C API function: RestoreThread -> Attach -> take_gil */
#define CG_MAX_FUNCS 512 /* functions decoded at most: the walk stays inside the GIL's code */
#define CG_MAX_STRINGS 16

/* The strings that name a GIL function in its own code. */
static const struct {
	enum gil_func fn;
	const char *s;
} names[] = {
	{ GIL_FN_TAKE, "take_gil" },
	{ GIL_FN_TAKE, "take_gil: NULL tstate" },
	{ GIL_FN_DROP, "drop_gil" },
	{ GIL_FN_DROP, "drop_gil: GIL is not locked" },
};

/* The exported functions the walk starts from, and which GIL function each reaches. */
static const struct {
	const char *name;
	unsigned int fns; /* 1 << fn for each GIL function it reaches */
	int depth; /* calls followed from it */
	enum gil_host host; /* what an inlined drop_gil in it means */
} roots[] = {
	{ "PyEval_RestoreThread", 1u << GIL_FN_TAKE, CG_DEPTH, GIL_HOST_NONE },
	{ "PyEval_AcquireThread", 1u << GIL_FN_TAKE, CG_DEPTH, GIL_HOST_NONE },
	{ "PyEval_SaveThread", 1u << GIL_FN_DROP, CG_DEPTH, GIL_HOST_ALWAYS },
	{ "PyEval_ReleaseThread", 1u << GIL_FN_DROP, CG_DEPTH, GIL_HOST_ALWAYS },
	{ "_Py_HandlePending", 3u, CG_DEPTH, GIL_HOST_ON_REQUEST },
	/* the eval loop's drop request handler (static before 3.13) and the copies it calls */
	{ "_PyEval_EvalFrameDefault", 3u, 2, GIL_HOST_NONE },
};

struct cg_fn {
	uint64_t start, end;
	bool decoded; /* walked from start to end */
	bool exported; /* .dynsym names a function starting here */
	bool refs[GIL_FN_NR]; /* its code, or a cold part it branches to, names the function */
	unsigned int reach; /* bit 1 << fn: reached from that function's roots */
	int depth;
	uint64_t *calls; /* direct call and jump targets outside its extent */
	size_t nr_calls, cap_calls;
};

struct cg {
	struct scan *sc;
	struct gil_ehframe eh; /* the object's frame descriptions: functions' extents */
	uint64_t str[CG_MAX_STRINGS];
	enum gil_func str_fn[CG_MAX_STRINGS];
	size_t nr_str;
	struct cg_fn *fns;
	size_t nr_fns, cap_fns;
};

/* The code that begins exactly at @addr by the frame descriptions (gil_ehframe_fde). */
static int fde_of(struct cg *cg, uint64_t addr, uint64_t *end, bool *entry)
{
	uint64_t start;

	return gil_ehframe_fde(&cg->eh, addr, false, &start, end, entry);
}

/* Is a defined FUNC in .dynsym at @addr? Its name into *@name when asked. */
static bool exported_at(Elf *elf, uint64_t addr, const char **name)
{
	const char *n = gil_sites_func_at(elf, addr, true);

	if (n && name)
		*name = n;
	return n != NULL;
}

/*
 * Where the strings of names[] are: any place in a loaded segment's file bytes where the string
 * and its NUL are (the linker may have merged it into the tail of a longer one). Executable
 * segments too: on AArch64 .rodata shares the text's (R E) segment.
 */
static void find_strings(struct cg *cg)
{
	const unsigned char *p, *end, *hit;
	size_t i, k, n, len;
	GElf_Phdr ph;
	Elf_Data *d;

	if (elf_getphdrnum(cg->sc->obj, &n))
		return;
	for (i = 0; i < n; i++) {
		if (!gelf_getphdr(cg->sc->obj, (int)i, &ph) || ph.p_type != PT_LOAD ||
		    ((ph.p_flags & PF_X) && !cg->sc->aarch64) || !ph.p_filesz ||
		    ph.p_offset > cg->sc->obj_size ||
		    ph.p_filesz > cg->sc->obj_size - ph.p_offset)
			continue;
		d = elf_getdata_rawchunk(cg->sc->obj, (int64_t)ph.p_offset, ph.p_filesz,
					 ELF_T_BYTE);
		if (!d || !d->d_buf)
			continue;
		for (k = 0; k < GIL_ARRAY_SIZE(names); k++) {
			len = strlen(names[k].s) + 1;
			p = d->d_buf;
			end = p + d->d_size;
			while (p < end && (hit = memmem(p, (size_t)(end - p), names[k].s, len))) {
				if (cg->nr_str == CG_MAX_STRINGS)
					return;
				cg->str[cg->nr_str] = ph.p_vaddr + (uint64_t)(hit - (const unsigned char *)d->d_buf);
				cg->str_fn[cg->nr_str++] = names[k].fn;
				p = hit + len;
			}
		}
	}
}

/*
 * AArch64 builds an address in two steps, ADRP (its 4 KiB page) then ADD (the rest, in one or
 * more adds: GCC adds a string's offset to its table's), or in one with ADR: the address @in
 * completes, 0 when none. @page holds the address each register is known to hold, @paged which
 * registers hold one.
 */
static uint64_t a64_address(const struct gil_insn *in, uint64_t at, uint64_t *page,
			    uint32_t *paged)
{
	uint64_t imm, target;
	int rd, rn;

	if ((in->word & 0x9f000000) == 0x90000000) {
		rd = (int)(in->word & 31);
		page[rd] = in->imm;
		*paged |= 1u << rd;
		return 0;
	}
	if (gil_a64_adr(in->word, at, &rd, &target)) {
		*paged &= ~(1u << rd);
		return target;
	}
	if (gil_a64_add_imm(in->word, &rd, &rn, &imm) && (*paged & (1u << rn))) {
		target = page[rn] + imm;
		page[rd] = target;
		*paged |= 1u << rd;
		return target;
	}
	if (in->flow == GIL_INSN_CALL)
		*paged &= 0xfff80000u; /* x0 - x18 do not survive a call */
	*paged &= ~gil_a64_writes(in->word);
	return 0;
}

/* The code bytes of [@start, @end) if they lie in one executable segment of the file. */
static const uint8_t *code_of(struct cg *cg, uint64_t start, uint64_t end)
{
	uint64_t off;
	Elf_Data *d;

	if (gil_sites_offset(cg->sc, start, end - start, &off))
		return NULL;
	d = elf_getdata_rawchunk(cg->sc->obj, (int64_t)off, end - start, ELF_T_BYTE);
	if (!d || d->d_size != end - start)
		return NULL;
	return d->d_buf;
}

static int add_call(struct cg_fn *f, uint64_t target)
{
	size_t i;

	for (i = 0; i < f->nr_calls; i++)
		if (f->calls[i] == target)
			return 0;
	if (gil_grow(&f->calls, &f->cap_calls, f->nr_calls + 1, sizeof(*f->calls)) < 0)
		return -1;
	f->calls[f->nr_calls++] = target;
	return 0;
}

/*
 * Decode [@start, @end) into @f: the names its code loads, its calls and jumps out, and (not
 * for a @cold part itself) the cold parts it branches to: a conditional branch to the start of
 * another frame description, which GCC's hot/cold splitting makes of a function's unlikely
 * paths (where Py_FatalError is called). Returns 0, 1 when the bytes are not all instructions
 * the decoder knows, -1 on ENOMEM.
 */
static int decode(struct cg *cg, struct cg_fn *f, uint64_t start, uint64_t end, bool cold)
{
	enum gil_arch arch = cg->sc->x86_64 ? GIL_ARCH_X86_64 : GIL_ARCH_AARCH64;
	uint64_t pos, at, e, page[32], addr = 0;
	uint32_t paged = 0; /* AArch64: registers an ADRP left a page in */
	const uint8_t *code;
	struct gil_insn in;
	bool entry;
	size_t k;
	int r;

	code = code_of(cg, start, end);
	if (!code)
		return 1;
	for (pos = 0; pos < end - start; pos += in.len) {
		at = start + pos;
		if (gil_insn_decode(arch, code + pos, end - start - pos, at, &in))
			return 1;
		if (arch == GIL_ARCH_AARCH64)
			addr = a64_address(&in, at, page, &paged);
		for (k = 0; (in.riprel || in.imm || addr) && k < cg->nr_str; k++)
			if (in.riprel == cg->str[k] || (arch == GIL_ARCH_X86_64 && in.imm == cg->str[k]) ||
			    addr == cg->str[k])
				f->refs[cg->str_fn[k]] = true;
		if (in.flow != GIL_INSN_CALL && in.flow != GIL_INSN_JUMP &&
		    in.flow != GIL_INSN_BRANCH)
			continue;
		if (!in.target || (in.target >= start && in.target < end))
			continue;
		if (cold || fde_of(cg, in.target, &e, &entry))
			continue;
		if (!entry) {
			/* a part split off this function: its code is the function's */
			if (in.flow == GIL_INSN_CALL)
				continue;
			r = decode(cg, f, in.target, e, true);
			if (r)
				return r;
			continue;
		}
		/* a call, or a tail call, to the start of a function */
		if (add_call(f, in.target))
			return -1;
	}
	return 0;
}

/* The function at @addr, decoded on first sight; NULL when it is none we can prove. */
static struct cg_fn *fn_at(struct cg *cg, uint64_t addr, int *err)
{
	struct cg_fn *f;
	uint64_t e;
	bool entry;
	size_t i;
	int r;

	for (i = 0; i < cg->nr_fns; i++)
		if (cg->fns[i].start == addr)
			return cg->fns[i].decoded ? &cg->fns[i] : NULL;
	if (cg->nr_fns == CG_MAX_FUNCS)
		return NULL;
	if (gil_grow(&cg->fns, &cg->cap_fns, cg->nr_fns + 1, sizeof(*cg->fns)) < 0) {
		*err = -1;
		return NULL;
	}
	f = &cg->fns[cg->nr_fns++];
	memset(f, 0, sizeof(*f));
	f->start = addr;
	/* a call target with a frame description beginning exactly there, as a function's does */
	if (fde_of(cg, addr, &e, &entry) || !entry)
		return NULL;
	f->end = e;
	r = decode(cg, f, addr, e, false);
	if (r < 0) {
		*err = -1;
		return NULL;
	}
	if (r)
		return NULL;
	f->decoded = true;
	f->exported = exported_at(cg->sc->obj, addr, NULL);
	return f;
}

/* Mark what @root reaches within @max calls as reached from @fn's roots. */
static int walk(struct cg *cg, uint64_t root, enum gil_func fn, int max)
{
	struct cg_fn *f, *g;
	size_t i, k;
	int err = 0, depth;

	f = fn_at(cg, root, &err);
	if (!f)
		return err;
	/* breadth first, one depth at a time, over the functions the last round added */
	f->reach |= 1u << fn;
	f->depth = 0;
	for (depth = 0; depth < max; depth++) {
		size_t n = cg->nr_fns;

		for (i = 0; i < n; i++) {
			f = &cg->fns[i];
			if (!f->decoded || !(f->reach & (1u << fn)) || f->depth != depth)
				continue;
			for (k = 0; k < f->nr_calls; k++) {
				uint64_t t = f->calls[k];

				g = fn_at(cg, t, &err);
				if (err)
					return err;
				if (!g)
					continue;
				f = &cg->fns[i]; /* fn_at may have moved the array */
				if (g->reach & (1u << fn))
					continue;
				g->reach |= 1u << fn;
				g->depth = depth + 1;
			}
		}
	}
	return 0;
}

/* Does @f call or jump to a function whose code names take_gil? */
static bool calls_take(struct cg *cg, const struct cg_fn *f)
{
	size_t i, k;

	for (i = 0; i < f->nr_calls; i++)
		for (k = 0; k < cg->nr_fns; k++)
			if (cg->fns[k].start == f->calls[i] && cg->fns[k].decoded &&
			    cg->fns[k].refs[GIL_FN_TAKE])
				return true;
	return false;
}

/* Add @f as a whole-function site of @fn found by the call graph. */
static int add_found(struct cg *cg, struct cg_fn *f, enum gil_func fn, const char *symbol,
		     enum gil_host host)
{
	uint64_t off;
	size_t before = cg->sc->syms->nr_sites;

	if (gil_sites_offset(cg->sc, f->start, f->end - f->start, &off))
		return 0;
	if (gil_sites_add_func(cg->sc, fn, symbol, f->start, off, f->end - f->start,
			       host == GIL_HOST_NONE ? "callgraph" : "exported-host", false))
		return -1;
	if (cg->sc->syms->nr_sites > before) {
		cg->sc->syms->sites[before].host = host;
		/* _Py_HandlePending returns after taking the GIL again: no end of a release */
		if (host == GIL_HOST_ON_REQUEST)
			cg->sc->syms->sites[before].retprobe = false;
	}
	return 0;
}

int gil_callgraph_scan(struct scan *sc, bool take, bool drop)
{
	struct cg cg = { .sc = sc };
	const char *name;
	struct cg_fn *f;
	size_t i, k, found[GIL_FN_NR] = { 0 };
	GElf_Sym sym;
	int ret = -1, err = 0;

	if (!sc->x86_64 && !sc->aarch64)
		return 0;
	gil_ehframe_open(&cg.eh, sc->obj, sc->obj_size);
	if (!cg.eh.nr_fde)
		return 0;
	find_strings(&cg);
	if (!cg.nr_str)
		goto done;
	for (i = 0; i < GIL_ARRAY_SIZE(roots); i++) {
		if (!gil_elf_find_symbol(sc->obj, roots[i].name, &sym) ||
		    GELF_ST_TYPE(sym.st_info) != STT_FUNC)
			continue;
		for (k = 0; k < GIL_FN_NR; k++)
			if ((roots[i].fns & (1u << k)) && (k == GIL_FN_TAKE ? take : drop) &&
			    walk(&cg, sym.st_value, (enum gil_func)k, roots[i].depth))
				goto out;
	}
	/* the copies: static functions reached from their roots that name themselves */
	for (i = 0; i < cg.nr_fns; i++) {
		f = &cg.fns[i];
		for (k = 0; k < GIL_FN_NR; k++) {
			if (!f->decoded || f->exported || !(f->reach & (1u << k)) || !f->refs[k])
				continue;
			/*
			 * take_gil holds an inlined drop_gil (a thread told to exit), and a
			 * function that drops and takes again holds both or calls take_gil (the
			 * eval loop's handler, os.stat with PyEval_SaveThread inlined): drop_gil
			 * itself never takes the GIL.
			 */
			if (k == GIL_FN_DROP && (f->refs[GIL_FN_TAKE] || calls_take(&cg, f)))
				continue;
			if (add_found(&cg, f, (enum gil_func)k, gil_fn_name((enum gil_func)k),
				      GIL_HOST_NONE))
				goto out;
			found[k]++;
		}
	}
	/* exported functions holding an inlined drop_gil: their entry stands for the copy */
	for (i = 0; drop && i < GIL_ARRAY_SIZE(roots); i++) {
		if (roots[i].host == GIL_HOST_NONE ||
		    !gil_elf_find_symbol(sc->obj, roots[i].name, &sym))
			continue;
		f = fn_at(&cg, sym.st_value, &err);
		if (err)
			goto out;
		if (!f || !f->refs[GIL_FN_DROP] || !exported_at(sc->obj, f->start, &name))
			continue;
		if (add_found(&cg, f, GIL_FN_DROP, roots[i].name, roots[i].host))
			goto out;
		found[GIL_FN_DROP]++;
	}
done:
	sc->syms->nr_callgraph = found[GIL_FN_TAKE] + found[GIL_FN_DROP];
	ret = 0;
out:
	for (i = 0; i < cg.nr_fns; i++)
		free(cg.fns[i].calls);
	free(cg.fns);
	return ret;
}
