// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Code objects named from the traced process's memory (see coderead.h). What a process keeps
 * at an address is its own: a hostile one can only mislabel its own recording, and every read
 * is bounded (the object's head, a type name of 16 bytes, strings of the function table's
 * caps), so nothing it does costs the recorder more than a few small reads per object.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "coderead.h"
#include "common/util.h"
#include "procs.h"

#define NR_SLOTS (1u << 14) /* entries kept; all are dropped when three quarters are used */
#define HEAD_MAX 512 /* the code object's fields read: every layout's are in its first bytes */

struct entry {
	uint64_t code; /* 0: empty */
	uint64_t type, name, file; /* the pointers read in the object's head */
	uint64_t checked; /* event time of the last read or check */
	uint64_t text; /* hash of the name's and the file's bytes: string objects die too */
	int32_t pid;
	int32_t line;
	uint32_t fn;
};

struct gil_coderead {
	struct entry *slot; /* NR_SLOTS, allocated at the first lookup */
	size_t used;
	struct gil_coderead_stats st;
};

struct gil_coderead *gil_coderead_alloc(void)
{
	return calloc(1, sizeof(struct gil_coderead));
}

void gil_coderead_free(struct gil_coderead *c)
{
	if (!c)
		return;
	free(c->slot);
	free(c);
}

const struct gil_coderead_stats *gil_coderead_stats(const struct gil_coderead *c)
{
	return &c->st;
}

/* Up to @len bytes at @addr in @pid; returns how many were read (0 on any failure), errno set. */
static size_t peek(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec l = { .iov_base = buf, .iov_len = len };
	struct iovec r = { .iov_base = (void *)(uintptr_t)addr, .iov_len = len };
	ssize_t n;

	if (!addr)
		return errno = EFAULT, 0;
	n = process_vm_readv(pid, &l, 1, &r, 1, 0);
	return n > 0 ? (size_t)n : 0;
}

/* Whether @pid's memory is gone: exited, a zombie, or past the release of its address space. */
static bool gone(pid_t pid)
{
	char path[48], *statm;
	bool none;

	if (!gil_proc_exists(pid))
		return true;
	/* still running its exit: its address space may already be released (no pages) */
	snprintf(path, sizeof(path), "/proc/%d/statm", (int)pid);
	statm = gil_read_file(path, 64, NULL);
	none = !statm || !strncmp(statm, "0 ", 2);
	free(statm);
	return none;
}

static uint64_t u64_at(const unsigned char *b, int64_t off)
{
	uint64_t v;

	memcpy(&v, b + off, sizeof(v));
	return v;
}

static bool fits(int64_t off, size_t size, size_t have)
{
	return off >= 0 && (uint64_t)off + size <= have;
}

/* The head of the code object at @code: its type, name, file and line. false: not readable. */
static bool read_head(pid_t pid, const struct gil_layout *lay, uint64_t code, struct entry *e)
{
	unsigned char b[HEAD_MAX];
	size_t n;

	errno = 0;
	n = peek(pid, code, b, sizeof(b));
	if (!fits(lay->code_name, 8, n) || !fits(lay->code_filename, 8, n) ||
	    !fits(lay->code_firstlineno, 4, n))
		return false;
	e->type = fits(lay->ob_type, 8, n) ? u64_at(b, lay->ob_type) : 0;
	e->name = u64_at(b, lay->code_name);
	e->file = u64_at(b, lay->code_filename);
	memcpy(&e->line, b + lay->code_firstlineno, sizeof(e->line));
	return true;
}

/* A string object at @obj as the probe's string fetch reads it: its compact ASCII data. */
struct str {
	char data[GIL_FN_FILE_MAX + 2];
	int len; /* < 0: not readable */
	uint8_t compact, ascii;
};

static void read_str(pid_t pid, const struct gil_layout *lay, uint64_t obj, size_t max,
		     struct str *s)
{
	unsigned char b[64 + GIL_FN_FILE_MAX + 2];
	size_t n, skip;

	s->len = -1;
	s->compact = s->ascii = 0;
	if (lay->ascii_size < 0 || lay->state < 0 || lay->state >= lay->ascii_size ||
	    lay->ascii_size - lay->state > 64)
		return;
	/* from the state byte to one byte past what is kept: a longer string is cut, counted */
	skip = (size_t)(lay->ascii_size - lay->state);
	n = peek(pid, obj + (uint64_t)lay->state, b, skip + max + 1);
	if (n <= skip)
		return;
	s->compact = (b[0] >> lay->compact_bit) & 1;
	s->ascii = (b[0] >> lay->ascii_bit) & 1;
	memcpy(s->data, b + skip, n - skip);
	s->len = (int)strnlen(s->data, n - skip);
}

static uint64_t fnv(uint64_t h, const struct str *s)
{
	int i;

	for (i = 0; i < s->len; i++)
		h = (h ^ (unsigned char)s->data[i]) * 0x100000001b3ull;
	return (h ^ (uint64_t)(s->len + 1)) * 0x100000001b3ull;
}

/* The hash of the strings of @e as they are now; 0: not readable. */
static uint64_t text_of(pid_t pid, const struct gil_layout *lay, const struct entry *e,
			struct str *name, struct str *file)
{
	read_str(pid, lay, e->name, GIL_FN_NAME_MAX, name);
	read_str(pid, lay, e->file, GIL_FN_FILE_MAX, file);
	if (name->len < 0 || file->len < 0)
		return 0;
	return fnv(fnv(0xcbf29ce484222325ull, name), file) | 1;
}

static size_t slot_of(pid_t pid, uint64_t code)
{
	uint64_t h = (code >> 3) * 0x9e3779b97f4a7c15ull ^ (uint64_t)(uint32_t)pid * 0xff51afd7ed558ccdull;

	return (size_t)(h >> 32) & (NR_SLOTS - 1);
}

static struct entry *find(struct gil_coderead *c, pid_t pid, uint64_t code, bool *found)
{
	size_t s;

	for (s = slot_of(pid, code);; s = (s + 1) & (NR_SLOTS - 1)) {
		if (!c->slot[s].code) {
			*found = false;
			return &c->slot[s];
		}
		if (c->slot[s].code == code && c->slot[s].pid == pid) {
			*found = true;
			return &c->slot[s];
		}
	}
}

/* Read the object at @code afresh into @e (head already in it) and name it in @t. */
static __thread struct str name, file; /* big: not on the stack */
static __thread char type[17]; /* raw->type points here after name_it() */

static uint32_t name_it(struct gil_coderead *c, struct gil_fntab *t, const struct gil_layout *lay,
			pid_t pid, struct gil_frame_raw *raw, struct entry *e, bool *keep)
{
	size_t n;

	c->st.reads++;
	raw->has_type = e->type != 0 || lay->ob_type >= 0;
	raw->type = type;
	raw->type_len = -1;
	if (raw->has_type) {
		uint64_t tp;

		if (peek(pid, e->type + (uint64_t)lay->tp_name, &tp, sizeof(tp)) == sizeof(tp) &&
		    (n = peek(pid, tp, type, sizeof(type) - 1)) > 0) {
			type[n] = 0;
			raw->type_len = (int)strnlen(type, n);
		}
		if (raw->type_len < 0) {
			c->st.failed++;
			*keep = false; /* unreadable now: read again next time */
			return gil_fntab_intern(t, raw);
		}
		if (raw->type_len != 4 || memcmp(type, "code", 4))
			return gil_fntab_intern(t, raw); /* not code: kept so, and checked again */
	}
	e->text = text_of(pid, lay, e, &name, &file);
	raw->name = name.len >= 0 ? name.data : NULL;
	raw->name_len = name.len;
	raw->name_compact = name.compact;
	raw->name_ascii = name.ascii;
	raw->file = file.len >= 0 ? file.data : NULL;
	raw->file_len = file.len;
	raw->file_compact = file.compact;
	raw->file_ascii = file.ascii;
	raw->line = e->line;
	if (name.len < 0 || file.len < 0) {
		c->st.failed++;
		*keep = false;
	}
	return gil_fntab_intern(t, raw);
}

uint32_t gil_coderead_fn(struct gil_coderead *c, struct gil_fntab *t, const struct gil_layout *lay,
			 pid_t pid, struct gil_frame_raw *raw, uint64_t code, uint64_t now)
{
	struct entry *e, head;
	bool found, keep = true;
	uint32_t fn;

	c->st.lookups++;
	if (lay->code_tagged) {
		/* 3.14+: bit 0 marks a reference without a refcount; bit 1 no object at all */
		raw->tag = (uint8_t)(code & 3);
		code &= ~3ull;
	}
	/* what the probe read beside the address says why there is no function */
	if (!raw->tstate || raw->other_thread || !raw->frame || raw->tag > 1)
		return gil_fntab_intern(t, raw);
	if (!code) {
		raw->has_type = true;
		raw->type_len = -1;
		return gil_fntab_intern(t, raw);
	}
	if (!c->slot) {
		c->slot = calloc(NR_SLOTS, sizeof(*c->slot));
		if (!c->slot)
			return 0;
	}
	e = find(c, pid, code, &found);
	if (found && now < e->checked + GIL_CODEREAD_CHECK_NS)
		return e->fn;
	memset(&head, 0, sizeof(head));
	if (!read_head(pid, lay, code, &head)) {
		int err = errno;

		/*
		 * Kept, and now unreadable: the process exited (its last events are read after
		 * it) or freed the object after the event. The object was the frame's when the
		 * probe read it, and nothing else was seen at its address since: keep its name.
		 */
		if (found)
			return e->fn;
		c->st.failed++;
		if (err == ESRCH || gone(pid)) {
			raw->why = "process exited before its code object was read";
			c->st.exited++;
		}
		raw->has_type = true;
		raw->type_len = -1;
		/* not kept: the next event reads again */
		return gil_fntab_intern(t, raw);
	}
	if (found) {
		c->st.checks++;
		if (head.type == e->type && head.name == e->name && head.file == e->file &&
		    head.line == e->line && text_of(pid, lay, e, &name, &file) == e->text) {
			e->checked = now;
			return e->fn;
		}
		c->st.changed++;
	}
	fn = name_it(c, t, lay, pid, raw, &head, &keep);
	if (found && (!keep || fn != e->fn) && raw->has_type &&
	    (raw->type_len != 4 || memcmp(raw->type, "code", 4))) {
		/*
		 * No code object there now: freed since the probe saw one. What the address held
		 * when last checked is what the event saw, unless it was reused and freed again
		 * in between: keep that name.
		 */
		return e->fn;
	}
	if (!fn || !keep) {
		if (found)
			e->checked = 0; /* what is kept no longer holds: read again next time */
		return fn;
	}
	if (!found) {
		if (c->used >= NR_SLOTS / 4 * 3) {
			memset(c->slot, 0, NR_SLOTS * sizeof(*c->slot));
			c->used = 0;
			e = find(c, pid, code, &found);
		}
		c->used++;
	}
	*e = head;
	e->code = code;
	e->pid = pid;
	e->fn = fn;
	e->checked = now;
	return fn;
}

void gil_coderead_forget(struct gil_coderead *c, pid_t pid)
{
	struct entry *old;
	bool found;
	size_t i, n = 0;

	if (!c || !c->slot)
		return;
	for (i = 0; i < NR_SLOTS; i++)
		n += c->slot[i].code && c->slot[i].pid == pid;
	if (!n)
		return;
	/* open addressing: rebuild without them rather than leave holes in probe chains */
	old = c->slot;
	c->slot = calloc(NR_SLOTS, sizeof(*c->slot));
	if (!c->slot) {
		/* keep nothing rather than what may be another process's now */
		c->slot = old;
		memset(c->slot, 0, NR_SLOTS * sizeof(*c->slot));
		c->used = 0;
		return;
	}
	c->used = 0;
	for (i = 0; i < NR_SLOTS; i++) {
		if (!old[i].code || old[i].pid == pid)
			continue;
		*find(c, old[i].pid, old[i].code, &found) = old[i];
		c->used++;
	}
	free(old);
}
