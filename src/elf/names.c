// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Which symbol names are entry points of the GIL functions: take_gil, drop_gil and the clones
 * compilers make of them (.constprop.N, .lto_priv.N, .isra.N, .llvm.N), never fragments.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <ctype.h>
#include <string.h>

#include "common/util.h"
#include "symbols.h"

static const char *const gil_fn_names[GIL_FN_NR] = {
	[GIL_FN_TAKE] = "take_gil",
	[GIL_FN_DROP] = "drop_gil",
};

/* The longest name taken for take_gil/drop_gil: "drop_gil.lto_priv.0.isra.0" and the like. */
#define GIL_SYMBOL_NAME_MAX 128

/* GCC and clang clone suffixes that still name a full entry point (".cold"/".part" do not). */
static const char *const clone_kinds[] = { "constprop", "lto_priv", "isra", "llvm" };

/* Skip one ".<kind>.<digits>" clone suffix at @s; NULL when @s does not start with one. */
static const char *skip_clone_suffix(const char *s)
{
	size_t i, n = 0;

	if (*s != '.')
		return NULL;
	s++;
	for (i = 0; i < GIL_ARRAY_SIZE(clone_kinds); i++) {
		n = strlen(clone_kinds[i]);
		if (!strncmp(s, clone_kinds[i], n) && s[n] == '.')
			break;
	}
	if (i == GIL_ARRAY_SIZE(clone_kinds))
		return NULL;
	s += n + 1;
	if (!isdigit((unsigned char)*s))
		return NULL;
	while (isdigit((unsigned char)*s))
		s++;
	return s;
}

bool gil_symbol_match(const char *name, enum gil_func *fn)
{
	const char *s;
	size_t n;
	int f;

	/* bounded at parse: real clones are under 40 bytes; a longer name is no GIL function */
	if (!name || strnlen(name, GIL_SYMBOL_NAME_MAX + 1) > GIL_SYMBOL_NAME_MAX)
		return false;
	for (f = 0; f < GIL_FN_NR; f++) {
		n = strlen(gil_fn_names[f]);
		if (strncmp(name, gil_fn_names[f], n))
			continue;
		/* Whole name must be base + clone suffixes: refuses drop_gil_impl, take_gil.cold. */
		for (s = name + n; s && *s;)
			s = skip_clone_suffix(s);
		if (!s)
			return false;
		if (fn)
			*fn = (enum gil_func)f;
		return true;
	}
	return false;
}

const char *gil_fn_name(enum gil_func fn)
{
	return fn >= 0 && fn < GIL_FN_NR ? gil_fn_names[fn] : "?";
}
