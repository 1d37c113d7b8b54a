// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libFuzzer harness for gil-convert's input side: whatever bytes a recording holds (ours, the
 * reference tool's, cut, corrupt), conv_run either converts them or fails with a message, and
 * never crashes, hangs or leaks. Built by tests/fuzz/build.sh with clang -fsanitize=fuzzer.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "convert/convert.h"

static char dir[64];

/* libFuzzer has no teardown hook: the directory goes at exit (fuzz-smoke.sh's TMPDIR, if killed) */
static void cleanup(void)
{
	char p[128];

	snprintf(p, sizeof(p), "%s/GIL_1_rank_0.json", dir);
	unlink(p);
	snprintf(p, sizeof(p), "%s/out.json", dir);
	unlink(p);
	rmdir(dir);
}

static void quiet(void *ctx, const char *msg)
{
	(void)ctx;
	(void)msg;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char in[128], out[128], err[512];
	const char *inputs[1] = { in };
	struct conv_options o;
	FILE *f;

	if (!dir[0]) {
		const char *tmp = getenv("TMPDIR");

		snprintf(dir, sizeof(dir), "%s/gilfuzz.XXXXXX", tmp && *tmp ? tmp : "/tmp");
		if (!mkdtemp(dir))
			abort();
		atexit(cleanup);
	}
	snprintf(in, sizeof(in), "%s/GIL_1_rank_0.json", dir);
	snprintf(out, sizeof(out), "%s/out.json", dir);
	f = fopen(in, "w");
	if (!f)
		abort();
	if (size && fwrite(data, 1, size, f) != size)
		abort();
	fclose(f);
	memset(&o, 0, sizeof(o));
	o.inputs = inputs;
	o.ninputs = 1;
	o.output = out;
	o.flows = true;
	o.counter = true;
	o.window_ms = CONV_WINDOW_MS_DEFAULT;
	o.verbosity = -1;
	o.warn = quiet;
	conv_run(&o, err, sizeof(err));
	unlink(out);
	return 0;
}
