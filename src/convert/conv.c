// SPDX-License-Identifier: LGPL-2.1-or-later
/* What every stage of the converter uses (conv.h): its warnings. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stdarg.h>
#include <stdio.h>

#include "conv.h"

void conv_warn(const struct conv_options *opt, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	if (!opt->warn)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	opt->warn(opt->warn_ctx, msg);
}
