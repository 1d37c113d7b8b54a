/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* CPython versions as giltrace meets them: "X.Y" text and PY_VERSION_HEX words. */
#ifndef GIL_PYVERSION_H
#define GIL_PYVERSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A PY_VERSION_HEX word taken apart: 0x030e00c2 is 3.14.0, level 0xc (rc), serial 2. */
struct gil_pyversion {
	unsigned int major, minor, micro;
	unsigned int level; /* 0xa alpha, 0xb beta, 0xc release candidate, 0xf final */
	unsigned int serial;
};

/* gil_pyversion_hex - take the PY_VERSION_HEX word @hex apart into @v. */
void gil_pyversion_hex(uint64_t hex, struct gil_pyversion *v);

/*
 * gil_pyversion_text - @v as CPython writes it ("3.11.4", "3.14.0rc2", "3.15.0a1") into @buf;
 * returns what snprintf returns.
 */
int gil_pyversion_text(const struct gil_pyversion *v, char *buf, size_t len);

/*
 * gil_pyversion_num - the "X.Y" that @text starts with as X * 100 + Y (3.11 is 311, 2.7 is
 * 207); 0 when @text is NULL or does not start so.
 */
int gil_pyversion_num(const char *text);

/* gil_pyversion_below - whether @text is a known version ("X.Y...") below @major.@minor. */
bool gil_pyversion_below(const char *text, unsigned int major, unsigned int minor);

#endif /* GIL_PYVERSION_H */
