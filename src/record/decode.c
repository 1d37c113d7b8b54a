// SPDX-License-Identifier: LGPL-2.1-or-later
/* libtraceevent decoding of our uprobe samples. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stdlib.h>
#include <string.h>

#include <event-parse.h>

#include "decode.h"
#include "ring.h"
#include <stdio.h>

/* The attribution fields of one probe's event (attrib.c names them); NULL when absent. */
enum {
	F_FR, /* the frame: these three are there whenever a probe reads the frame */
	F_FN,
	F_LINE,
	F_FNS, /* the name's compact and ascii bits: 3 when both are set */
	F_FILE,
	F_FILES,
	F_TS, /* optional: the thread state (when it may be NULL), the type (3.13), the request */
	F_TY,
	F_REQ,
	F_TAG, /* 3.14+: f_executable's tag bits, and the reads as if the tag were 1 */
	F_TTY,
	F_TFN,
	F_TFNS,
	F_TFILE,
	F_TFILES,
	F_TLINE,
	F_HTID, /* the native thread id of the GIL's holder, when that is the thread state */
	F_CODE, /* the pointer set: the code object's address, named by the recorder */
	F_SITE, /* which probe of a multi-probe event fired: its index */
	F_IP, /* which GIL (3.12+): the interpreter, its ceval.gil, its id */
	F_GP,
	F_IID,
	F_STEP, /* gil_mark_step's argument (marker.c) */
	F_NR,
};

/* The reads through the code object: the plain copy, and the one for a tagged reference. */
struct code_fields {
	int ty, fn, fns, file, files, line;
};

static const struct code_fields plain = { F_TY, F_FN, F_FNS, F_FILE, F_FILES, F_LINE };
static const struct code_fields tagged = { F_TTY, F_TFN, F_TFNS, F_TFILE, F_TFILES, F_TLINE };

static const char *const field_names[F_NR] = {
	[F_FR] = "gil_fr",     [F_FN] = "gil_fn",	    [F_LINE] = "gil_line",
	[F_FNS] = "gil_fns",   [F_FILE] = "gil_file",   [F_FILES] = "gil_files",
	[F_TS] = "gil_ts",     [F_TY] = "gil_ty",	    [F_REQ] = "gil_req",
	[F_TAG] = "gil_tag",   [F_TTY] = "gil_tty",	    [F_TFN] = "gil_tfn",
	[F_TFNS] = "gil_tfns", [F_TFILE] = "gil_tfile", [F_TFILES] = "gil_tfiles",
	[F_TLINE] = "gil_tline", [F_HTID] = "gil_htid", [F_CODE] = "gil_code",
	[F_SITE] = "gil_site", [F_IP] = "gil_ip", [F_GP] = "gil_gp", [F_IID] = "gil_iid",
	[F_STEP] = "gil_step",
};

struct probe_fields {
	struct tep_format_field *f[F_NR];
	bool frame; /* the fields up to F_FILES are there */
	bool pointer; /* F_FR and F_CODE are there, and no string */
	bool tagged; /* and F_TAG to F_TLINE */
	bool interp; /* F_IP, F_GP and F_IID are there */
	/* the native caller's reads (elf/callers.h): the pc, AArch64's lr, the stack words */
	struct tep_format_field *pc, *lr, *stk[GIL_CALLERS_MAX_WORDS];
	unsigned int nstk; /* gil_s0 ... gil_s<nstk - 1> are all there */
};

struct gil_decoder {
	struct tep_handle *tep;
	int *probe_of_id; /* trace event id -> (first) probe index, -1 if not ours */
	int *id_of_probe; /* probe index -> trace event id */
	int max_id;
	struct probe_fields *fields; /* per probe */
	int nr;
};

/* Whether fetchargs @own ("name=FETCH:type ...") read @name. */
static bool reads(const char *own, const char *name)
{
	size_t n = strlen(name);
	const char *p;

	for (p = own; (p = strstr(p, name)); p += n)
		if ((p == own || p[-1] == ' ') && p[n] == '=')
			return true;
	return false;
}

/* The native caller's fields of @ev that @own (NULL: all of them) reads. */
static void callers_fields(struct tep_event *ev, const char *own, struct probe_fields *pf)
{
	char name[16];
	unsigned int k;

	if (!own || reads(own, "gil_pc"))
		pf->pc = tep_find_field(ev, "gil_pc");
	if (!pf->pc)
		return;
	if (!own || reads(own, "gil_lr"))
		pf->lr = tep_find_field(ev, "gil_lr");
	for (k = 0; k < GIL_CALLERS_MAX_WORDS; k++) {
		snprintf(name, sizeof(name), "gil_s%u", k);
		if ((own && !reads(own, name)) || !(pf->stk[k] = tep_find_field(ev, name)))
			break;
	}
	pf->nstk = k;
}

struct gil_decoder *gil_decoder_alloc(struct tep_handle *tep, const int *ids,
				      const char *const *own, int nr)
{
	struct gil_decoder *d = calloc(1, sizeof(*d));
	struct tep_event *ev;
	int i, k;

	if (!d)
		return NULL;
	d->tep = tep;
	d->nr = nr;
	for (i = 0; i < nr; i++)
		if (ids[i] > d->max_id)
			d->max_id = ids[i];
	d->probe_of_id = malloc(((size_t)d->max_id + 1) * sizeof(int));
	d->id_of_probe = malloc(((size_t)nr + 1) * sizeof(int));
	d->fields = calloc((size_t)nr + 1, sizeof(*d->fields));
	if (!d->probe_of_id || !d->id_of_probe || !d->fields)
		goto fail;
	for (i = 0; i <= d->max_id; i++)
		d->probe_of_id[i] = -1;
	for (i = 0; i < nr; i++) {
		d->id_of_probe[i] = ids[i];
		if (ids[i] < 0)
			continue;
		if (d->probe_of_id[ids[i]] < 0)
			d->probe_of_id[ids[i]] = i;
		ev = tep ? tep_find_event(tep, ids[i]) : NULL;
		if (!ev)
			continue;
		for (k = 0; k < F_NR; k++)
			if (k == F_SITE || !own || !own[i] || reads(own[i], field_names[k]))
				d->fields[i].f[k] = tep_find_field(ev, field_names[k]);
		callers_fields(ev, own ? own[i] : NULL, &d->fields[i]);
		d->fields[i].interp = d->fields[i].f[F_IP] && d->fields[i].f[F_GP] &&
				      d->fields[i].f[F_IID];
		d->fields[i].frame = true;
		for (k = F_FR; k <= F_FILES; k++)
			if (!d->fields[i].f[k])
				d->fields[i].frame = false;
		d->fields[i].pointer = !d->fields[i].frame && d->fields[i].f[F_FR] &&
				       d->fields[i].f[F_CODE];
		d->fields[i].tagged = d->fields[i].frame;
		for (k = F_TAG; k <= F_TLINE; k++)
			if (!d->fields[i].f[k] && (k != F_TTY || d->fields[i].f[F_TY]))
				d->fields[i].tagged = false;
	}
	return d;
fail:
	gil_decoder_free(d);
	return NULL;
}

/* A number field of @size bytes at @f in @data (the raw record of @len bytes). */
static bool number(const struct tep_format_field *f, const char *data, uint32_t len, uint64_t *v)
{
	uint64_t x = 0;

	if (!f || (uint32_t)f->offset + (uint32_t)f->size > len || f->size > 8)
		return false;
	memcpy(&x, data + f->offset, (size_t)f->size); /* little-endian: as the kernel wrote it */
	if (f->size == 4 && (f->flags & TEP_FIELD_IS_SIGNED))
		x = (uint64_t)(int64_t)(int32_t)x;
	*v = x;
	return true;
}

/* A __data_loc string: its bytes up to the NUL; *@n < 0 when the kernel could not read it. */
static const char *string(const struct tep_format_field *f, const char *data, uint32_t len,
			  int *n)
{
	uint32_t loc, off, size;
	const char *s;

	*n = -1;
	if (!f || (uint32_t)f->offset + 4 > len)
		return NULL;
	memcpy(&loc, data + f->offset, 4);
	off = loc & 0xffff;
	size = loc >> 16;
	/* a fault stores no bytes, not even the NUL */
	if (!size || off + size > len)
		return NULL;
	s = data + off;
	*n = (int)strnlen(s, size);
	return s;
}

static void decode_frame(const struct probe_fields *pf, const char *data, uint32_t len,
			 struct gil_event *ev)
{
	struct gil_frame_raw *fr = &ev->frame;
	const struct code_fields *c;
	uint64_t v;

	memset(fr, 0, sizeof(*fr));
	ev->has_frame = pf->frame;
	ev->req = -1;
	if (pf->f[F_REQ] && number(pf->f[F_REQ], data, len, &v))
		ev->req = v != 0;
	if (!pf->frame && !pf->pointer)
		return;
	/* without a gil_ts field the thread state is not a plain register: never NULL */
	fr->tstate = 1;
	if (pf->f[F_TS] && !number(pf->f[F_TS], data, len, &fr->tstate))
		fr->tstate = 0;
	if (!number(pf->f[F_FR], data, len, &fr->frame))
		fr->frame = 0;
	if (pf->f[F_HTID] && (!number(pf->f[F_HTID], data, len, &v) || v != (uint64_t)ev->tid))
		fr->other_thread = true;
	if (pf->pointer) {
		ev->has_frame = false;
		ev->has_code = number(pf->f[F_CODE], data, len, &ev->code);
		return;
	}
	c = &plain;
	if (pf->tagged && number(pf->f[F_TAG], data, len, &v)) {
		fr->tag = (uint8_t)(v & 3);
		if (fr->tag == 1)
			c = &tagged; /* the copy read one byte lower: at the untagged pointer */
	}
	fr->has_type = pf->f[F_TY] != NULL;
	if (fr->has_type)
		fr->type = string(pf->f[c->ty], data, len, &fr->type_len);
	fr->name = string(pf->f[c->fn], data, len, &fr->name_len);
	fr->file = string(pf->f[c->file], data, len, &fr->file_len);
	if (number(pf->f[c->fns], data, len, &v)) {
		fr->name_compact = v & 1;
		fr->name_ascii = (v >> 1) & 1;
	}
	if (number(pf->f[c->files], data, len, &v)) {
		fr->file_compact = v & 1;
		fr->file_ascii = (v >> 1) & 1;
	}
	if (number(pf->f[c->line], data, len, &v))
		fr->line = (int32_t)v;
}

int gil_decode_sample(const struct gil_decoder *d, const struct perf_event_header *h,
		      struct gil_event *ev)
{
	const struct gil_sample_head *s = (const void *)h;
	const struct probe_fields *pf;
	struct tep_record rec;
	uint64_t site, step;
	int type;

	if (h->size < sizeof(*s) || sizeof(*s) + s->raw_size > h->size)
		return -1;
	memset(&rec, 0, sizeof(rec));
	rec.ts = s->time;
	rec.size = (int)s->raw_size;
	rec.data = (void *)(s + 1);
	type = tep_data_type(d->tep, &rec);
	if (type < 0 || type > d->max_id || d->probe_of_id[type] < 0)
		return -1;
	ev->pid = s->pid;
	ev->tid = s->tid;
	ev->ts = s->time;
	ev->probe = d->probe_of_id[type];
	if (d->fields[ev->probe].f[F_SITE]) {
		/* one of the sites of a multi-probe event: the one whose number it carries */
		if (!number(d->fields[ev->probe].f[F_SITE], rec.data, s->raw_size, &site) ||
		    site >= (uint64_t)d->nr || d->id_of_probe[site] != type)
			return -1;
		ev->probe = (int)site;
	}
	ev->has_frame = ev->has_code = false;
	ev->req = -1;
	ev->has_interp = d->fields[ev->probe].interp &&
			 number(d->fields[ev->probe].f[F_IP], rec.data, s->raw_size, &ev->interp) &&
			 number(d->fields[ev->probe].f[F_GP], rec.data, s->raw_size, &ev->gil) &&
			 number(d->fields[ev->probe].f[F_IID], rec.data, s->raw_size, &ev->interp_id) &&
			 ev->interp;
	ev->has_step = d->fields[ev->probe].f[F_STEP] &&
		       number(d->fields[ev->probe].f[F_STEP], rec.data, s->raw_size, &step);
	ev->step = ev->has_step ? (int64_t)step : -1;
	pf = &d->fields[ev->probe];
	ev->nstk = 0;
	ev->has_pc = pf->pc && number(pf->pc, rec.data, s->raw_size, &ev->pc) && ev->pc;
	if (ev->has_pc) {
		if (!pf->lr || !number(pf->lr, rec.data, s->raw_size, &ev->lr))
			ev->lr = 0;
		while (ev->nstk < pf->nstk &&
		       number(pf->stk[ev->nstk], rec.data, s->raw_size, &ev->stk[ev->nstk]))
			ev->nstk++;
	}
	if (d->fields[ev->probe].frame || d->fields[ev->probe].pointer ||
	    d->fields[ev->probe].f[F_REQ])
		decode_frame(&d->fields[ev->probe], rec.data, s->raw_size, ev);
	else
		memset(&ev->frame, 0, sizeof(ev->frame));
	return 0;
}

void gil_decoder_free(struct gil_decoder *d)
{
	if (!d)
		return;
	free(d->probe_of_id);
	free(d->id_of_probe);
	free(d->fields);
	free(d);
}
