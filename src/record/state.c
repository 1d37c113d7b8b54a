// SPDX-License-Identifier: LGPL-2.1-or-later
/* The recorder's state, shared by its stages (state.h): its one error line. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stdarg.h>
#include <stdio.h>

#include "state.h"

void rec_set_err(struct gil_recorder *rec, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(rec->err, sizeof(rec->err), fmt, ap);
	va_end(ap);
}
