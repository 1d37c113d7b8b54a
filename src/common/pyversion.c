// SPDX-License-Identifier: LGPL-2.1-or-later
/* CPython versions: one reading of "X.Y" and of PY_VERSION_HEX for the whole tree. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <ctype.h>
#include <stdio.h>

#include "pyversion.h"

void gil_pyversion_hex(uint64_t hex, struct gil_pyversion *v)
{
	v->major = (unsigned int)(hex >> 24) & 0xff;
	v->minor = (unsigned int)(hex >> 16) & 0xff;
	v->micro = (unsigned int)(hex >> 8) & 0xff;
	v->level = (unsigned int)(hex >> 4) & 0xf;
	v->serial = (unsigned int)hex & 0xf;
}

int gil_pyversion_text(const struct gil_pyversion *v, char *buf, size_t len)
{
	static const char *const level[16] = { [0xa] = "a", [0xb] = "b", [0xc] = "rc" };

	if (v->level == 0xf || !level[v->level])
		return snprintf(buf, len, "%u.%u.%u", v->major, v->minor, v->micro);
	return snprintf(buf, len, "%u.%u.%u%s%u", v->major, v->minor, v->micro, level[v->level],
			v->serial);
}

/* A run of at most two decimal digits at *@s, advanced past it; -1 if none. */
static int number(const char **s)
{
	int n = 0, digits = 0;

	while (isdigit((unsigned char)**s) && digits < 3) {
		n = n * 10 + (**s - '0');
		(*s)++;
		digits++;
	}
	return digits && digits < 3 ? n : -1;
}

int gil_pyversion_num(const char *text)
{
	int major, minor;

	if (!text)
		return 0;
	major = number(&text);
	if (major <= 0 || *text++ != '.')
		return 0;
	minor = number(&text);
	return minor < 0 ? 0 : major * 100 + minor;
}

bool gil_pyversion_below(const char *text, unsigned int major, unsigned int minor)
{
	int v = gil_pyversion_num(text);

	return v && v < (int)(major * 100 + minor);
}
