// SPDX-License-Identifier: LGPL-2.1-or-later
/* The output backends --format can name: one line each (see convert.h). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>

#include "conv.h"

extern const struct conv_backend_ops conv_chrome_ops;

const struct conv_backend_ops *const conv_backends[] = {
	&conv_chrome_ops, /* the default */
	NULL,
};

const struct conv_backend_ops *conv_backend(const char *name)
{
	size_t i;

	for (i = 0; conv_backends[i]; i++)
		if (!strcmp(conv_backends[i]->name, name))
			return conv_backends[i];
	return NULL;
}
