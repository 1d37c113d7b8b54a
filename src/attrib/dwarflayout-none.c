// SPDX-License-Identifier: LGPL-2.1-or-later
/* Attribution without libdw: no DWARF source; debug offsets and the table still serve. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "attrib-int.h"
#include "common/util.h"

int attrib_dwarf(struct gil_attrib *a, const struct gil_symbols *syms, struct gil_elf *obj,
		 int version, char *err, size_t errlen)
{
	return 0;
}

int gil_layout_dwarf(const char *path, struct gil_layout *out, char *err, size_t errlen)
{
	return gil_err(err, errlen, "built without libdw");
}
