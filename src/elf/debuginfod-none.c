// SPDX-License-Identifier: LGPL-2.1-or-later
/* Built without libdebuginfod (configure --without-debuginfod): no debug file is fetched. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "common/util.h"
#include "scan.h"

bool gil_debuginfod_supported(void)
{
	return false;
}

int gil_debuginfod_find(const char *build_id, char *path, size_t pathlen, char *why,
			size_t whylen)
{
	(void)build_id;
	(void)path;
	(void)pathlen;
	return gil_err(why, whylen, "giltrace was built without libdebuginfod");
}
