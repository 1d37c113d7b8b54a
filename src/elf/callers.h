/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The native caller of a GIL transition: the code outside the interpreter that called the C
 * API (PyEval_SaveThread, PyEval_RestoreThread, PyGILState_Ensure, PyGILState_Release,
 * PyEval_AcquireThread, PyEval_ReleaseThread) whose call reached a probed take_gil or drop_gil.
 *
 * The probes read the program counter, AArch64's link register and a window of stack words
 * (gil_callers_fetchargs); from them the recorder walks the interpreter's own frames with the
 * object's CFA rules (.eh_frame): no extra trap, no frame pointers.
 */
#ifndef GIL_CALLERS_H
#define GIL_CALLERS_H

#include <stdbool.h>
#include <stdint.h>

#include "elf.h"

#define GIL_CALLERS_MAX_WORDS 32 /* stack words a probe reads at most */

struct gil_callers;

/* What a walk found. */
enum gil_caller_kind {
	GIL_CALLER_UNKNOWN = 0, /* the frames could not be followed (no rule, outside the window) */
	GIL_CALLER_OWN, /* the interpreter's own transition: eval loop, its I/O helpers, a thread's
			   bootstrap */
	GIL_CALLER_NATIVE, /* native code outside the interpreter called the C API: *addr */
};

/**
 * gil_callers_plan - what the probes of @h (an interpreter: the file defining take_gil and
 * drop_gil) read, and how the walk reads it: the C API functions' extents from the symbols of
 * @names (its debug file; NULL: @h's own) and its frame descriptions. @h must stay open while
 * the plan is used. NULL when the file has no .eh_frame_hdr, an instruction set giltrace does
 * not follow, or no C API function.
 */
struct gil_callers *gil_callers_plan(struct gil_elf *h, Elf *names);

/* gil_callers_words - stack words each entry probe reads. */
unsigned int gil_callers_words(const struct gil_callers *c);

/**
 * gil_callers_fetchargs - the fetchargs that read them (gil_pc, AArch64's gil_lr, gil_s0...),
 * malloc'd; NULL on ENOMEM.
 */
char *gil_callers_fetchargs(const struct gil_callers *c);

/**
 * gil_callers_walk - the caller at a probe hit at virtual address @site of the file, the
 * process's program counter there being @pc (so the file is mapped at @pc - @site), with link
 * register @lr (AArch64) and the @n stack words @stk from the stack pointer up. The native
 * return address into the caller goes to *@addr (GIL_CALLER_NATIVE).
 */
enum gil_caller_kind gil_callers_walk(struct gil_callers *c, uint64_t site, uint64_t pc,
				      uint64_t lr, const uint64_t *stk, unsigned int n,
				      uint64_t *addr);

void gil_callers_free(struct gil_callers *c);

#endif /* GIL_CALLERS_H */
