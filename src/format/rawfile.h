/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The recording format (doc/format.md): one record per line, written as events arrive, readable
 * after a crash up to the last complete line. Writer: create -> header -> records... -> finish
 * -> free. Reader: open -> next... -> close.
 */
#ifndef GIL_RAWFILE_H
#define GIL_RAWFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <json-c/json.h>

#define GIL_RAWFILE_MAGIC "{\"format\":\"giltrace\",\"version\":1,\"records\":["

/* One interval, as the pairing produces it and the file stores it. */
struct gil_interval {
	int32_t tid;
	uint8_t kind; /* enum gil_kind */
	uint32_t flags; /* enum gil_flag */
	uint64_t start; /* ns on the recording clock */
	uint64_t dur; /* ns */
	uint32_t fn; /* attribution: function id of a {"fn":...} record, 0 = not recorded */
	uint8_t reason; /* attribution: enum gil_reason */
	/* a hold, from the recorder's pairing: threads waiting when it ended (not in the file) */
	uint32_t waiters;
	uint32_t interp; /* the interpreter's id (0: the main one; 3.12+) */
	uint32_t gil; /* its GIL's: the id of the interpreter whose GIL it is (0: the main one) */
	/*
	 * from the recorder's pairing (not in the file): fn is why the function could not be
	 * read at this release; the thread's next wait (take_gil) names it
	 */
	bool name_later;
	/*
	 * the native code at the C API transition that began it (a wait and a hold: the take's
	 * caller; a release: the drop's): a {"native":...} record's id, GIL_NATIVE_OWN the
	 * interpreter itself (eval loop, its I/O helpers), 0 not read
	 */
	uint32_t native;
};

#define GIL_NATIVE_OWN UINT32_MAX

/* ---- writer ---- */
struct gil_rawfile;

/**
 * gil_rawfile_create - create @name in directory @dirfd for writing: never follows a symlink,
 * never replaces an existing file (O_EXCL), mode 0640. Returns NULL and a reason in @err.
 * Pair with gil_rawfile_free().
 */
struct gil_rawfile *gil_rawfile_create(int dirfd, const char *name, char *err, size_t errlen);

/**
 * gil_rawfile_discard - a writer that writes nothing (gil-record --no-files): it counts the
 * intervals, as gil_rawfile_intervals() says, and every call succeeds. NULL on ENOMEM.
 */
struct gil_rawfile *gil_rawfile_discard(void);

/** gil_rawfile_header - write the first line and the header record (takes no ownership). */
int gil_rawfile_header(struct gil_rawfile *w, struct json_object *header);
int gil_rawfile_thread(struct gil_rawfile *w, int32_t tid, const char *name, uint64_t ts);
int gil_rawfile_interval(struct gil_rawfile *w, const struct gil_interval *iv);
int gil_rawfile_lost(struct gil_rawfile *w, int cpu, uint64_t count, uint64_t ts);
int gil_rawfile_exit(struct gil_rawfile *w, int32_t tid, uint64_t ts);
/* gil_rawfile_step - thread @tid marked the end of a step at @ts (@n: its number, -1 none). */
int gil_rawfile_step(struct gil_rawfile *w, int32_t tid, uint64_t ts, int64_t n);

/*
 * gil_rawfile_native - native caller @id is @name (return address @addr in the process):
 * written when the recorder has named it, which may be after intervals that carry @id.
 */
int gil_rawfile_native(struct gil_rawfile *w, uint32_t id, const char *name, uint64_t addr);

/**
 * gil_rawfile_set_attribution - write intervals as [tid,kind,start,dur,flags,fn,reason] from now
 * on (the header says so); without it they keep their five elements.
 */
void gil_rawfile_set_attribution(struct gil_rawfile *w, bool on);

/**
 * gil_rawfile_function - write the definition of one function, {"fn":{"id":N,"name":...,
 * "file":...,"line":N}}, with "unreadable" saying why when name, file or line are null.
 */
int gil_rawfile_function(struct gil_rawfile *w, uint32_t id, const char *name, const char *file,
			 int32_t line, const char *why);

/** gil_rawfile_flush - push buffered lines to the file, so a killed recorder loses little. */
int gil_rawfile_flush(struct gil_rawfile *w);

/** gil_rawfile_finish - write the footer record and the closing line, flush and close. */
int gil_rawfile_finish(struct gil_rawfile *w, struct json_object *footer);

/** gil_rawfile_error - the first write error as one line ("" if none). Errors are sticky. */
const char *gil_rawfile_error(const struct gil_rawfile *w);
uint64_t gil_rawfile_intervals(const struct gil_rawfile *w);
void gil_rawfile_free(struct gil_rawfile *w);

/* ---- reader (streaming; memory does not grow with the file) ---- */
enum gil_input_format {
	GIL_INPUT_GILTRACE = 1, /* this project's recordings (doc/format.md) */
	GIL_INPUT_SYSTRACE = 2, /* the reference tool's bare array of X (or B/E) events */
};

/* What a sysTrace file held besides the intervals its events made. */
struct gil_systrace_stats {
	uint64_t events;
	uint64_t ignored; /* other names or phases, malformed times, unmatched E */
	uint64_t unclosed; /* B without E (at the end: dropped) */
};

enum gil_rec_type {
	GIL_REC_HEADER = 1,
	GIL_REC_THREAD,
	GIL_REC_INTERVAL,
	GIL_REC_LOST,
	GIL_REC_EXIT,
	GIL_REC_FOOTER,
	GIL_REC_FUNCTION, /* a function definition of attribution: see fn */
	GIL_REC_UNKNOWN, /* a record type this reader does not know: skip it */
	GIL_REC_STEP, /* a step mark: thread tid called gil_mark_step at ts (step: its number) */
	GIL_REC_NATIVE, /* a native caller's name: see native */
};

struct gil_record {
	enum gil_rec_type type;
	struct gil_interval iv; /* GIL_REC_INTERVAL */
	int32_t tid; /* THREAD, EXIT, STEP */
	int64_t step; /* STEP: the number the program gave, -1 none */
	const char *name; /* THREAD; valid until the next call */
	uint64_t ts; /* THREAD, LOST, EXIT, STEP */
	int cpu; /* LOST */
	uint64_t count; /* LOST */
	struct {
		int64_t id; /* 0 when missing or not an integer */
		const char *name, *file; /* NULL when not read */
		int32_t line; /* -1 when not read */
		const char *why; /* "unreadable": why name, file or line are missing, or NULL */
	} fn; /* FUNCTION; strings valid until the next call */
	struct {
		int64_t id; /* >= 1 */
		const char *name; /* "module!symbol+0xoff", or "module+0xoff" without a symbol */
		uint64_t addr; /* the return address in the process */
	} native; /* NATIVE; name valid until the next call */
	struct json_object *obj; /* HEADER, FOOTER, UNKNOWN: the parsed object, owned by the
				    reader, valid until the next call (NULL for an UNKNOWN null) */
};

struct gil_reader;

/**
 * gil_reader_open - open @path and detect its format. Returns NULL with a one-line reason in
 * @err (missing file, not JSON, unknown format or version), starting with the path. An empty
 * file, or one cut inside its first line, opens as a truncated giltrace recording with no
 * records. Pair with gil_reader_close().
 */
struct gil_reader *gil_reader_open(const char *path, char *err, size_t errlen);
enum gil_input_format gil_reader_format(const struct gil_reader *r);

/**
 * gil_reader_next - the next record. Returns 1 with *@rec filled, 0 at the end (complete or
 * cut: see gil_reader_truncated), -1 on a read error (reason in gil_reader_error). A sysTrace
 * file's events come out as the intervals they make (GIL_REC_INTERVAL, epoch nanoseconds).
 */
int gil_reader_next(struct gil_reader *r, struct gil_record *rec);

/**
 * gil_reader_footer - the footer record of a complete recording, read from the end of the file
 * (pread: the stream position is unchanged), so that clock offsets sampled at the end are known
 * before the first interval. NULL for a cut file, a sysTrace file or a non-seekable input.
 * Owned by the reader, valid until gil_reader_close().
 */
struct json_object *gil_reader_footer(struct gil_reader *r);

/** gil_reader_systrace_pid - the "pid" of a sysTrace file's first event; false if none. */
bool gil_reader_systrace_pid(const struct gil_reader *r, int64_t *pid);

/** gil_reader_systrace_stats - a sysTrace file's event counts so far; false for giltrace. */
bool gil_reader_systrace_stats(const struct gil_reader *r, struct gil_systrace_stats *st);

/** gil_reader_truncated - true when the input ended before its closing line (or mid-record). */
bool gil_reader_truncated(const struct gil_reader *r);
/** gil_reader_records - complete records returned so far. */
uint64_t gil_reader_records(const struct gil_reader *r);
/** gil_reader_offset - bytes of the input consumed by complete records. */
uint64_t gil_reader_offset(const struct gil_reader *r);
const char *gil_reader_error(const struct gil_reader *r);
void gil_reader_close(struct gil_reader *r);

#endif /* GIL_RAWFILE_H */
