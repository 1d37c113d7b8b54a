// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The native caller of a GIL transition, from what its probe read (callers.h).
 *
 * A walk starts at the probe's site with the frame rule there (gil_ehframe_frame): the CFA is
 * the stack pointer plus an offset, and the return address is saved at the CFA plus another
 * (x86-64: always -8), or still in the link register (AArch64 before the prologue). The
 * caller's stack pointer is the callee's CFA, so each frame's return address is a word of the
 * window at a known index. The walk goes up through the interpreter's frames:
 *
 *  - a frame of a C API function (by its exported symbol's extent) says the caller is wanted;
 *  - a return address outside the file is the native caller, also before any C API frame: a
 *    C API function that tail-called (PyGILState_Release) leaves none;
 *  - one inside the file, in a function that is no C API function, after one: the interpreter
 *    called the API itself (Py_BEGIN_ALLOW_THREADS in os.stat, a thread's bootstrap);
 *  - frames before any C API function are the GIL's own and those between (take_gil,
 *    _PyThreadState_Attach): any other function there is the interpreter's own transition
 *    (the eval loop's drop request in _Py_HandlePending). A file without a symbol table
 *    names none of those between (nor its debug file, when there is one): there a walk that
 *    leaves the window, or runs out of depth, without meeting a C API frame is the
 *    interpreter's own.
 *
 * The window is sized from the frames of the functions a C API call goes through: the API
 * functions themselves and, where the symbol table names them, the internal ones between them
 * and take_gil/drop_gil (3.13+).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "callers.h"
#include "common/util.h"
#include "ehframe.h"

#define MAX_API 48 /* extents of the C API functions (and of those between), parts included */
#define MAX_DEPTH 6 /* frames followed: take_gil <- Attach <- RestoreThread <- Ensure <- caller */
#define CACHE 512 /* frame rules kept, by instruction */
#define SCAN_MAX 4096 /* bytes of a function whose rules are scanned for its deepest frame */
#define ADDR_MASK 0x0000ffffffffffffull /* user addresses; AArch64 signs saved ones (PAC) */

/*
 * The window covers the chains of frames a C API call makes, each the sum of its functions'
 * deepest frames: a take (those between, PyEval_RestoreThread, PyGILState_Ensure over it), a
 * release (the same way down from PyGILState_Release), and the deletion of a thread state.
 */
enum chain { TAKE, DROP, DELETE, NR_CHAINS };

/* The C API calls whose callers are named, and the chains each is part of. */
static const struct {
	const char *name;
	unsigned int chains;
} api_names[] = {
	{ "PyEval_SaveThread", 1u << DROP },
	{ "PyEval_RestoreThread", 1u << TAKE },
	{ "PyGILState_Ensure", 1u << TAKE },
	{ "PyGILState_Release", 1u << DROP | 1u << DELETE },
	{ "PyEval_AcquireThread", 1u << TAKE },
	{ "PyEval_ReleaseThread", 1u << DROP },
	{ "PyEval_AcquireLock", 1u << TAKE },
	{ "PyEval_ReleaseLock", 1u << DROP },
};

/*
 * Internal functions between them and take_gil/drop_gil (3.13's _PyThreadState_Attach, the
 * release of a thread state PyGILState_Release deletes), and the GIL functions themselves:
 * their frames are in the window, and a walk goes through them.
 */
static const struct {
	const char *name;
	unsigned int chains;
} between_names[] = {
	{ "_PyThreadState_Attach", 1u << TAKE },
	{ "_PyEval_AcquireLock", 1u << TAKE },
	{ "tstate_activate", 1u << TAKE },
	{ "_PyThreadState_Detach", 1u << DROP },
	{ "detach_thread", 1u << DROP },
	{ "_PyEval_ReleaseLock", 1u << DROP | 1u << DELETE },
	{ "_PyThreadState_SwapNoGIL", 1u << DROP },
	{ "_PyThreadState_DeleteCurrent", 1u << DELETE },
	{ "PyThreadState_DeleteCurrent", 1u << DELETE },
	{ "take_gil", 0 },
	{ "drop_gil", 0 },
};

struct rule_slot {
	uint64_t pc; /* 0: empty */
	bool ok;
	struct gil_frame_rule r;
};

struct gil_callers {
	Elf *elf; /* libelf's handle, which outlives copies of the struct gil_elf around it */
	struct gil_ehframe eh;
	enum gil_arch arch;
	unsigned int sp_reg;
	struct span {
		uint64_t start, end;
	} api[MAX_API], between[MAX_API];
	size_t nr_api, nr_between;
	/*
	 * the file has a symbol table, which names the functions between: a frame of any other
	 * function before a C API one is the interpreter's own (the eval loop's drop request).
	 * Without one, the walk goes on until it leaves the file or the window.
	 */
	bool named;
	unsigned int words;
	struct rule_slot cache[CACHE];
};

static bool rule_at(struct gil_callers *c, uint64_t pc, struct gil_frame_rule *r)
{
	struct rule_slot *s = &c->cache[(pc ^ (pc >> 9)) % CACHE];

	if (s->pc != pc) {
		s->pc = pc;
		s->ok = gil_ehframe_frame(&c->eh, pc, c->sp_reg, &s->r) == 0;
	}
	*r = s->r;
	return s->ok;
}

/* The deepest CFA offset anywhere in the function at @start (0 when its rules are unreadable). */
static int64_t deepest(struct gil_callers *c, uint64_t start)
{
	struct gil_frame_rule r;
	int64_t max = 0;
	uint64_t pc, end;

	if (gil_ehframe_frame(&c->eh, start, c->sp_reg, &r) < 0)
		return 0;
	end = r.end - r.start > SCAN_MAX ? r.start + SCAN_MAX : r.end;
	for (pc = r.start; pc < end; pc++)
		if (gil_ehframe_frame(&c->eh, pc, c->sp_reg, &r) == 0 && r.cfa_off > max)
			max = r.cfa_off;
	return max;
}

static bool in_spans(const struct span *v, size_t nr, uint64_t pc)
{
	size_t i;

	for (i = 0; i < nr; i++)
		if (pc >= v[i].start && pc < v[i].end)
			return true;
	return false;
}

static bool in_api(const struct gil_callers *c, uint64_t pc)
{
	return in_spans(c->api, c->nr_api, pc);
}

#define MAX_VARIANTS 4

/*
 * The function symbols of @elf named @base, or @base with a suffix GCC gives a copy or a part of
 * it (.lto_priv.0, .constprop.0, .part.0, .cold): at most MAX_VARIANTS into @out, *@cold set for
 * each part split off a function (its frame is its function's). Returns how many.
 */
static size_t variants(Elf *elf, const char *base, GElf_Sym *out, bool *cold)
{
	size_t len = strlen(base), nr = 0, i, n;
	Elf_Scn *scn = NULL;
	const char *name;
	Elf_Data *d;
	GElf_Shdr sh;
	GElf_Sym s;

	while ((scn = elf_nextscn(elf, scn)) && nr < MAX_VARIANTS) {
		if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) ||
		    !sh.sh_entsize || !(d = elf_getdata(scn, NULL)))
			continue;
		n = sh.sh_size / sh.sh_entsize;
		for (i = 0; i < n && nr < MAX_VARIANTS; i++) {
			if (!gelf_getsym(d, (int)i, &s) || !s.st_value ||
			    GELF_ST_TYPE(s.st_info) != STT_FUNC ||
			    !(name = elf_strptr(elf, sh.sh_link, s.st_name)) ||
			    strncmp(name, base, len) || (name[len] && name[len] != '.'))
				continue;
			for (size_t k = 0; k < nr; k++)
				if (out[k].st_value == s.st_value)
					goto dup; /* .dynsym and .symtab name it both */
			cold[nr] = strstr(name + len, ".cold") != NULL;
			out[nr++] = s;
dup:;
		}
	}
	return nr;
}

/*
 * Add the extents of @base's functions to @v (*@nr of them, MAX_API at most); the deepest
 * frame of any whole one into *@deep. Returns whether one was found.
 */
static bool add_spans(struct gil_callers *c, Elf *se, const char *base, struct span *v,
		      size_t *nr, int64_t *deep)
{
	GElf_Sym sym[MAX_VARIANTS];
	bool cold[MAX_VARIANTS];
	struct gil_frame_rule r;
	size_t n = variants(se, base, sym, cold), i;
	int64_t d;
	bool any = false;

	*deep = 0;
	for (i = 0; i < n && *nr < MAX_API; i++) {
		if (gil_ehframe_frame(&c->eh, sym[i].st_value, c->sp_reg, &r) < 0)
			continue;
		v[*nr].start = r.start;
		v[*nr].end = r.end;
		(*nr)++;
		any = true;
		d = cold[i] ? 0 : deepest(c, sym[i].st_value);
		*deep = d > *deep ? d : *deep;
	}
	return any;
}

struct gil_callers *gil_callers_plan(struct gil_elf *h, Elf *names)
{
	Elf *se = names ? names : h->elf;
	struct gil_callers *c = calloc(1, sizeof(*c));
	int64_t sum[NR_CHAINS] = { 0 }, d, top[NR_CHAINS] = { 0 };
	GElf_Shdr sh;
	size_t i;
	int k;

	if (!c)
		return NULL;
	c->elf = h->elf;
	c->arch = gil_arch_of(h->elf);
	c->sp_reg = c->arch == GIL_ARCH_X86_64 ? 7 : 31;
	gil_ehframe_open(&c->eh, h->elf, h->size);
	if ((c->arch != GIL_ARCH_X86_64 && c->arch != GIL_ARCH_AARCH64) || !c->eh.nr_fde)
		goto none;
	for (i = 0; i < GIL_ARRAY_SIZE(api_names); i++) {
		if (!add_spans(c, se, api_names[i].name, c->api, &c->nr_api, &d))
			continue;
		/* PyGILState_* over the deepest of the others: one of each in a chain */
		for (k = 0; k < NR_CHAINS; k++) {
			if (!(api_names[i].chains & 1u << k))
				continue;
			if (!strncmp(api_names[i].name, "PyGILState_", 11))
				sum[k] += d;
			else if (d > top[k])
				top[k] = d;
		}
	}
	if (!c->nr_api)
		goto none;
	for (i = 0; i < GIL_ARRAY_SIZE(between_names); i++) {
		if (!add_spans(c, se, between_names[i].name, c->between, &c->nr_between, &d))
			continue;
		for (k = 0; k < NR_CHAINS; k++)
			if (between_names[i].chains & 1u << k)
				sum[k] += d;
	}
	c->named = gil_elf_section(se, ".symtab", &sh) != NULL;
	/* the GIL function's own frame (its return address), then the longest chain */
	d = 0;
	for (k = 0; k < NR_CHAINS; k++)
		if (sum[k] + top[k] > d)
			d = sum[k] + top[k];
	d += 8;
	c->words = (unsigned int)(d / 8) + 1;
	if (c->words > GIL_CALLERS_MAX_WORDS)
		c->words = GIL_CALLERS_MAX_WORDS;
	return c;
none:
	free(c);
	return NULL;
}

unsigned int gil_callers_words(const struct gil_callers *c)
{
	return c ? c->words : 0;
}

char *gil_callers_fetchargs(const struct gil_callers *c)
{
	size_t cap = 64 + (size_t)c->words * 32, n;
	char *s = malloc(cap);
	unsigned int i;

	if (!s)
		return NULL;
	if (c->arch == GIL_ARCH_X86_64)
		n = (size_t)snprintf(s, cap, "gil_pc=%%ip:x64");
	else
		n = (size_t)snprintf(s, cap, "gil_pc=%%pc:x64 gil_lr=%%x30:x64");
	for (i = 0; i < c->words; i++)
		n += (size_t)snprintf(s + n, cap - n, " gil_s%u=+%u(%%sp):x64", i, i * 8);
	return s;
}

enum gil_caller_kind gil_callers_walk(struct gil_callers *c, uint64_t site, uint64_t pc,
				      uint64_t lr, const uint64_t *stk, unsigned int n,
				      uint64_t *addr)
{
	struct gil_frame_rule r;
	uint64_t bias = pc - site, at = site, ra, off;
	int64_t sp = 0; /* this frame's stack pointer, in bytes above the probe's */
	bool exec, api_seen = false;
	int depth;

	for (depth = 0; depth < MAX_DEPTH; depth++) {
		if (!rule_at(c, at, &r))
			return api_seen ? GIL_CALLER_UNKNOWN : GIL_CALLER_OWN;
		/* the probed function's own entry (take_gil.lto_priv.0 by any name) is walked */
		if (in_api(c, r.start))
			api_seen = true;
		else if (!api_seen && c->named && !(depth == 0 && site - r.start <= 4) &&
			 !in_spans(c->between, c->nr_between, r.start))
			return GIL_CALLER_OWN; /* the eval loop, an I/O helper: no C API call */
		if (!r.ra_saved) {
			if (depth) /* only the probed frame can keep it in its register */
				return GIL_CALLER_UNKNOWN;
			ra = lr;
		} else {
			off = (uint64_t)(sp + r.cfa_off + r.ra_off);
			if (sp + r.cfa_off + r.ra_off < 0 || off % 8 || off / 8 >= n)
				return api_seen ? GIL_CALLER_UNKNOWN : GIL_CALLER_OWN;
			ra = stk[off / 8];
		}
		ra &= ADDR_MASK;
		if (!ra)
			return GIL_CALLER_UNKNOWN;
		if (gil_elf_addr_to_offset(c->elf, ra - bias, &off, &exec) < 0 || !exec) {
			/*
			 * out of the file: a C API call, its frame gone where it tail-called
			 * (PyGILState_Release -> _PyThreadState_DeleteCurrent). The eval loop's
			 * own frames are too deep for the window to reach a caller past them.
			 */
			*addr = ra;
			return GIL_CALLER_NATIVE;
		}
		/* inside the interpreter: the call is at ra - 1 */
		at = ra - bias - 1;
		if (api_seen && !in_api(c, at))
			return GIL_CALLER_OWN;
		sp += r.cfa_off;
	}
	return api_seen ? GIL_CALLER_UNKNOWN : GIL_CALLER_OWN;
}

void gil_callers_free(struct gil_callers *c)
{
	free(c);
}
