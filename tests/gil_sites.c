// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The probe sites gil-record would choose in one interpreter or libpython, as JSON lines:
 * {"fn":..,"symbol":..,"address":..,"size":..,"method":..,"host":..} per site, then a line with
 * "approximate" and "reason". For the tests that compare sites found from the code with the ones
 * a symbol table names (tests/integration/stripped.py).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stdio.h>

#include "elf/symbols.h"

int main(int argc, char **argv)
{
	struct gil_symbols *syms;
	char err[512];
	size_t i;

	if (argc != 2 && argc != 3) {
		fprintf(stderr, "usage: gil_sites FILE [ROOT]\n");
		return 2;
	}
	if (gil_symbols_read(argv[1], argc == 3 ? argv[2] : NULL, &syms, err, sizeof(err))) {
		fprintf(stderr, "gil_sites: %s\n", err);
		return 1;
	}
	for (i = 0; i < syms->nr_sites; i++) {
		const struct gil_site *s = &syms->sites[i];

		printf("{\"fn\": \"%s\", \"symbol\": \"%s\", \"role\": \"%s\", \"address\": %llu, "
		       "\"offset\": %llu, \"skipped\": %u, \"size\": %llu, \"method\": \"%s\", "
		       "\"host\": %d}\n",
		       gil_fn_name(s->fn), s->symbol, s->role == GIL_SITE_ENTRY ? "entry" : "exit",
		       (unsigned long long)s->addr, (unsigned long long)s->offset, s->skipped,
		       (unsigned long long)s->size, s->method, (int)s->host);
	}
	printf("{\"approximate\": %s, \"version\": \"%s\", \"reason\": \"%s\"}\n",
	       syms->approximate ? "true" : "false", syms->version,
	       syms->reason ? syms->reason : "");
	gil_symbols_free(syms);
	return 0;
}
