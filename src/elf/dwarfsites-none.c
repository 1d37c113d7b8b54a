// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Built without libdw (configure --without-libdw): no DWARF is read, so no inlined copy is
 * found; the symbol tables still give every out-of-line site. The build picks this file or
 * dwarfsites.c.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <stdlib.h>

#include "common/util.h"
#include "dwarfsites.h"

void gil_dwarf_free(struct gil_dwarf *dw)
{
	free(dw);
}

bool gil_dwarf_supported(void)
{
	return false;
}

int gil_dwarf_read(struct gil_elf *f, Elf *code, struct gil_dwarf **out, char *err,
		   size_t errlen)
{
	*out = calloc(1, sizeof(**out));
	if (!*out) {
		errno = ENOMEM;
		return gil_err(err, errlen, "out of memory");
	}
	return 0;
}
