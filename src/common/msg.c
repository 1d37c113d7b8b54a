// SPDX-License-Identifier: LGPL-2.1-or-later
/* The programs' messages on stderr (see msg.h). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "msg.h"

static const char *prog = "giltrace";

void gil_msg_prog(const char *name)
{
	prog = name;
}

/* One line: "PROG: ", @what, the message and a newline, in one write (stderr is unbuffered). */
static void say(const char *what, const char *fmt, va_list ap)
{
	char buf[1024], *line = buf;
	va_list again;
	int n;

	va_copy(again, ap);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	if (n >= (int)sizeof(buf) && (line = malloc((size_t)n + 1)))
		vsnprintf(line, (size_t)n + 1, fmt, again);
	va_end(again);
	fprintf(stderr, "%s: %s%s\n", prog, what, line ? line : buf);
	if (line != buf)
		free(line);
}

void gil_msg(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say("", fmt, ap);
	va_end(ap);
}

void gil_warning(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say("warning: ", fmt, ap);
	va_end(ap);
}

int gil_usage_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say("", fmt, ap);
	va_end(ap);
	fprintf(stderr, "Try '%s --help' for more information.\n", prog);
	return 2;
}
