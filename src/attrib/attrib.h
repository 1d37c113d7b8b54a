/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Attribution: which Python function was running at each take_gil and drop_gil entry, and
 * whether a release was forced. The kernel reads it during the trap the probe already costs,
 * through uprobe fetchargs built here from struct offsets and argument locations:
 *  - DWARF (pyenv builds, debug packages): the location of the thread-state argument at the
 *    entry of every probed site (clones and inlined copies differ) and every member offset;
 *  - _Py_DebugOffsets in the interpreter's data (3.13 - 3.15) when there is no DWARF;
 *  - a table for 3.8 - 3.15 release builds, verified against DWARF (tests/unit/test-attrib.c).
 * The function table (gil_fntab) turns what the kernel read into numbered functions, and says
 * why when a frame could not be read: nothing is guessed.
 * Lifecycle: gil_attrib_read -> gil_attrib_fetchargs... -> gil_attrib_free.
 */
#ifndef GIL_ATTRIB_H
#define GIL_ATTRIB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "elf/symbols.h"

enum gil_attr_source {
	GIL_ATTR_SRC_NONE = 0,
	GIL_ATTR_SRC_DWARF,
	GIL_ATTR_SRC_DEBUG_OFFSETS,
	GIL_ATTR_SRC_TABLE,
};

/* How the current frame hangs off the thread state. */
enum gil_frame_model {
	GIL_FRAME_NONE = 0,
	GIL_FRAME_OBJECT, /* <= 3.10: tstate->frame (PyFrameObject) ->f_code */
	GIL_FRAME_CFRAME, /* 3.11, 3.12: tstate->cframe->current_frame->f_code */
	GIL_FRAME_CURRENT, /* 3.13: tstate->current_frame->f_executable */
};

/* Where drop_gil sees a pending drop request. */
enum gil_req_model {
	GIL_REQ_NONE = 0,
	GIL_REQ_FLAG, /* a 32-bit gil_drop_request in the struct a drop_gil argument points at */
	GIL_REQ_BIT0, /* bit 0 of tstate->eval_breaker (3.13) */
	GIL_REQ_GLOBAL, /* a 32-bit flag at a fixed address: 3.6's static gil_drop_request,
			   3.7's _PyRuntime.ceval.gil_drop_request (req_addr) */
};

/* Struct member offsets of one interpreter build (bytes; -1: not known). */
struct gil_layout {
	int version; /* major * 100 + minor (312), 0 when unknown */
	int arch; /* enum gil_arch of the probed file: it names the fetchargs' registers */
	enum gil_frame_model frame;
	int64_t ts_frame; /* PyThreadState: frame, cframe or current_frame */
	int64_t cframe_current; /* _PyCFrame.current_frame (GIL_FRAME_CFRAME) */
	int64_t frame_code; /* PyFrameObject.f_code, _PyInterpreterFrame.f_code or f_executable */
	bool code_tagged; /* 3.14+: f_executable is a _PyStackRef, its low two bits are tags */
	int64_t code_name; /* PyCodeObject.co_qualname (3.11+) or co_name */
	bool qualname;
	int64_t code_filename;
	int64_t code_firstlineno;
	int64_t ob_type; /* PyObject.ob_type */
	int64_t tp_name; /* PyTypeObject.tp_name */
	int64_t ascii_size; /* sizeof(PyASCIIObject): compact ASCII data follows */
	int64_t state; /* byte of PyASCIIObject holding the compact and ascii bits */
	int compact_bit, ascii_bit; /* bit numbers in that byte */
	enum gil_req_model req;
	int64_t req_off; /* in the struct the argument named req_arg points at */
	char req_arg[16]; /* drop_gil's argument: "ceval", "ceval2" or "tstate"; "" for a global */
	uint64_t req_addr; /* GIL_REQ_GLOBAL: the flag's link-time address in the probed file */
	/*
	 * The GIL's holder from the globals (_Py_DebugOffsets), for sites without a thread-state
	 * argument (PyEval_SaveThread): _PyRuntime.interpreters.head->ceval.gil->last_holder,
	 * believed only when its native_thread_id is the thread's. 0: not known.
	 */
	uint64_t runtime_addr; /* link-time address of _PyRuntime */
	int64_t rt_interp_head; /* _PyRuntime.interpreters.head */
	int64_t interp_gil; /* PyInterpreterState.ceval.gil */
	int64_t gil_holder; /* struct _gil_runtime_state.last_holder */
	int64_t ts_native_tid; /* PyThreadState.native_thread_id */
	/*
	 * Which GIL a thread takes and drops (3.12+, one per interpreter that has its own):
	 * tstate->interp, its id, and its ceval.gil, which points into the interpreter itself
	 * (interp + interp_own_gil: its _gil) when the GIL is its own, else at the main
	 * interpreter's. interp_gil above is ceval.gil's offset. 0: not known (before 3.12 there
	 * is one GIL, and nothing is read).
	 */
	int64_t ts_interp; /* PyThreadState.interp */
	int64_t interp_id; /* PyInterpreterState.id */
	int64_t interp_own_gil; /* PyInterpreterState._gil */
};

/*
 * GIL_LAYOUT_FIELDS - every field of struct gil_layout, by kind, for code that handles a layout
 * field by field (record/objcache.c keeps layouts on disk). A field added to the struct is added
 * here too, and nowhere else: the cache then writes and reads it, and entries written with
 * another list are not used. objcache.c fails to compile when the two disagree in size.
 */
#define GIL_LAYOUT_FIELDS(I64, INT, BOOL, U64, STR)                                                \
	INT(version) INT(arch) INT(frame) I64(ts_frame) I64(cframe_current) I64(frame_code)       \
	BOOL(code_tagged) I64(code_name) BOOL(qualname) I64(code_filename) I64(code_firstlineno) \
	I64(ob_type) I64(tp_name) I64(ascii_size) I64(state) INT(compact_bit) INT(ascii_bit)      \
	INT(req) I64(req_off) STR(req_arg) U64(req_addr) U64(runtime_addr) I64(rt_interp_head)    \
	I64(interp_gil) I64(gil_holder) I64(ts_native_tid)    \
	I64(ts_interp) I64(interp_id) I64(interp_own_gil)

/* The fetchargs of one probe site, parallel to gil_symbols.sites. */
struct gil_attrib_site {
	char *fetchargs; /* the full set (--attribution=full); NULL: nothing is read here */
	char *pointer; /* the default set: the code object's address at drop_gil entries; which
			  GIL (3.12+) at take_gil entries, and the code object too where a release
			  defers (struct gil_attrib's defers); NULL where nothing is read */
	char *pointer_code; /* while reading: a take_gil entry's set with the code object */
	const char *why; /* when fetchargs is NULL at an entry: why (static) */
};

struct gil_attrib {
	enum gil_attr_source source;
	char *from; /* the file the offsets came from */
	struct gil_layout layout;
	struct gil_attrib_site *sites;
	size_t nr_sites;
	size_t nr_entries; /* entry sites (where attribution is read) */
	size_t nr_attributed; /* entry sites with fetchargs */
	const char *why; /* static; set when no site gets fetchargs */
	/*
	 * a drop_gil site reads the GIL's holder through _PyRuntime.interpreters.head, which is
	 * another thread's with several interpreters: such a release is named by its thread's
	 * next take (record/pairing.h GIL_FN_DEFER), so take_gil entries read the code object
	 */
	bool defers;
	char *owned; /* the why strings' storage when made from the object cache; else NULL */
};

/**
 * gil_attrib_read - work out what to read at each entry site of @syms (found in @object, the
 * probed file; @version "3.12.1" or NULL when unknown). DWARF first (@syms->dwarf_from), then
 * _Py_DebugOffsets, then the table. A build none of them covers gets no fetchargs and ->why.
 * Returns 0 and *@out (free with gil_attrib_free), or -1 with errno and a reason in @err.
 */
int gil_attrib_read(const struct gil_symbols *syms, const char *object, const char *version,
		    struct gil_attrib **out, char *err, size_t errlen);

/**
 * gil_attrib_read_elf - gil_attrib_read() of the object open in @obj (borrowed; NULL: it
 * could not be opened), which @object names in the results. DWARF is read from the
 * descriptor gil_symbols_read() kept (syms->dwarf_elf) or from @obj, never from a path.
 */
int gil_attrib_read_elf(const struct gil_symbols *syms, struct gil_elf *obj,
			const char *object, const char *version, struct gil_attrib **out, char *err,
			size_t errlen);

/** gil_attrib_free - release what gil_attrib_read() returned; NULL is fine. */
void gil_attrib_free(struct gil_attrib *a);

/** gil_attrib_source_name - "dwarf", "debug_offsets", "table" or NULL. */
const char *gil_attrib_source_name(enum gil_attr_source src);

/**
 * gil_layout_table - the built-in offsets of a release build of @version (312 for 3.12), or
 * NULL when the table has none.
 */
const struct gil_layout *gil_layout_table(int version);

/**
 * gil_layout_dwarf - read the layout from the DWARF in @path (no argument locations). For the
 * tests that hold the table against DWARF. Returns 0, or -1 with a reason in @err.
 */
int gil_layout_dwarf(const char *path, struct gil_layout *out, char *err, size_t errlen);

/**
 * gil_layout_debug_offsets - read the layout from _Py_DebugOffsets in the data of @path
 * (3.13 - 3.15 release candidates and finals; 3.13's drop-request offset from the table).
 * Returns 0, or -1 with a reason in @err.
 */
int gil_layout_debug_offsets(const char *path, struct gil_layout *out, char *err, size_t errlen);

/**
 * gil_layout_debug_offsets_buf - the same from @len bytes of _PyRuntime's start at @buf.
 * Returns 0, or -1 with a reason in @err.
 */
int gil_layout_debug_offsets_buf(const void *buf, size_t len, struct gil_layout *out, char *err,
				 size_t errlen);

/* ---- what the kernel read at one hit, and the functions it names ---- */

/* Fields of one sample, as decoded; strings are not NUL-terminated and may be absent. */
struct gil_frame_raw {
	uint64_t tstate, frame;
	uint8_t tag; /* 3.14+: f_executable's tag bits (1: read through the untagged copies) */
	bool other_thread; /* the thread state read from the GIL's holder is another thread's */
	bool has_type; /* the type was read (3.13); else the name proves the frame readable */
	const char *type; /* tp_name of the frame's code object's type: "code" */
	int type_len; /* < 0: the kernel could not read it (fault) */
	const char *name;
	int name_len; /* < 0: not read (fault) */
	uint8_t name_compact, name_ascii;
	const char *file;
	int file_len;
	uint8_t file_compact, file_ascii;
	int32_t line;
	const char *why; /* static: why nothing was read, when that is known better than above */
};

/* struct gil_fn, and the interner the table numbers functions with */
#include "format/fntab.h"

/* The functions the probes of one recorder name; gil_fn.why points to static strings. */
struct gil_fntab;

/** gil_fntab_alloc - an empty function table; NULL on ENOMEM. Pair with gil_fntab_free(). */
struct gil_fntab *gil_fntab_alloc(void);

/**
 * gil_fntab_intern - the id of the function @raw names (a new one the first time). Frames
 * that cannot be read get ids of their own that say why. Returns 0 on ENOMEM.
 */
uint32_t gil_fntab_intern(struct gil_fntab *t, const struct gil_frame_raw *raw);

/** gil_fntab_get - function @id, or NULL. */
const struct gil_fn *gil_fntab_get(const struct gil_fntab *t, uint32_t id);

/**
 * gil_fntab_display - function @id of @t (NULL or id 0: none) as the recorder shows it: its
 * name, "<why>" when it was unreadable, "" when there is none. Into @out (@len bytes).
 */
void gil_fntab_display(const struct gil_fntab *t, uint32_t id, char *out, size_t len);

/** gil_fntab_size - functions known (the largest id). */
size_t gil_fntab_size(const struct gil_fntab *t);

/** gil_fntab_free - release the table and every function in it; NULL is fine. */
void gil_fntab_free(struct gil_fntab *t);

/*
 * Bounds a traced process cannot push the recorder past (its memory, its files): distinct
 * functions (later ones share one "too many" entry), and the bytes kept of a name and a file
 * (the kernel reads up to 4 KiB of each). What was cut is counted: gil_fntab_capped().
 */
#define GIL_FNTAB_MAX (1u << 15)
#define GIL_FN_NAME_MAX 256
#define GIL_FN_FILE_MAX 1024

struct gil_fntab_caps {
	uint64_t names_cut, files_cut; /* function records whose name or file was cut */
	uint64_t over_max; /* entries that came past GIL_FNTAB_MAX distinct functions */
};

/** gil_fntab_capped - what the bounds above cut so far. */
const struct gil_fntab_caps *gil_fntab_capped(const struct gil_fntab *t);

#endif /* GIL_ATTRIB_H */
