// SPDX-License-Identifier: GPL-2.0-or-later
/* gil-convert: GIL recordings -> Chrome Trace JSON. Option parsing only; src/convert does the work. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json_c_version.h>

#include "convert/convert.h"
#include "common/msg.h"
#include "giltrace.h"

#define PROG "gil-convert"

enum {
	OPT_CLOCK = 256,
	OPT_PROF,
	OPT_MERGE,
	OPT_NO_FLOWS,
	OPT_NO_COUNTER,
	OPT_WINDOW,
	OPT_TS_FORMAT,
	OPT_SUMMARY,
	OPT_SUMMARY_JSON,
	OPT_SVG,
	OPT_FORMAT,
};

static const struct option long_opts[] = {
	{ "input", required_argument, NULL, 'i' },
	{ "output", required_argument, NULL, 'o' },
	{ "format", required_argument, NULL, OPT_FORMAT },
	{ "clock", required_argument, NULL, OPT_CLOCK },
	{ "profiling-data", required_argument, NULL, OPT_PROF },
	{ "merge", required_argument, NULL, OPT_MERGE },
	{ "no-flows", no_argument, NULL, OPT_NO_FLOWS },
	{ "no-counter", no_argument, NULL, OPT_NO_COUNTER },
	{ "reorder-window", required_argument, NULL, OPT_WINDOW },
	{ "ts-format", required_argument, NULL, OPT_TS_FORMAT },
	{ "summary", no_argument, NULL, OPT_SUMMARY },
	{ "summary-json", required_argument, NULL, OPT_SUMMARY_JSON },
	{ "svg", required_argument, NULL, OPT_SVG },
	{ "quiet", no_argument, NULL, 'q' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

/* The names --format takes, for a usage error: "chrome" or "chrome, x or y". */
static const char *formats(void)
{
	static char buf[256];
	size_t i, n = 0;

	for (i = 0; conv_backends[i] && n < sizeof(buf); i++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%s",
				      !i ? "" : conv_backends[i + 1] ? ", " : " or ",
				      conv_backends[i]->name);
	return buf;
}

static void usage(void)
{
	size_t i;

	printf("Usage: " PROG " [OPTION]... --input RECORDING [--output TRACE.json]\n"
	       "Convert GIL recordings (gil-record's GIL_<pid>_rank_<rank>.json, or the sysTrace\n"
	       "GIL tracer's files) into one Chrome Trace JSON timeline for MindStudio Insight,\n"
	       "Perfetto or chrome://tracing: take_gil/hold_gil/drop_gil slices per thread, a\n"
	       "\"GIL waiters\" counter and hand-off arrows per process.\n"
	       "\n"
	       "  -i, --input=PATH           a recording, or a directory of GIL_*_rank_*.json files;\n"
	       "                             repeat it for several (one process row each, by rank)\n"
	       "  -o, --output=FILE          the trace to write ('-' for standard output); default for\n"
	       "                             one input X.json: X_trace.json beside it\n"
	       "      --format=FORMAT        what the trace is written as (default chrome; below)\n"
	       "      --clock=CLOCK          time base: realtime (default, epoch microseconds),\n"
	       "                             monotonic or monotonic_raw (the recording clock)\n"
	       "      --profiling-data=DIR   align on an msprof/torch_npu PROF_ directory's\n"
	       "                             host/start_info and clip to its start_info..end_info window\n"
	       "      --merge=TRACE.json     write one file holding this profiler trace (torch.profiler/\n"
	       "                             Kineto, or msprof trace_view.json) plus the GIL rows on its\n"
	       "                             time axis\n"
	       "      --no-flows             no hand-off arrows (s/f events)\n"
	       "      --no-counter           no \"GIL waiters\" counter (C events)\n"
	       "      --ts-format=FORMAT     ts as a 'string' (default: exact in MindStudio Insight and\n"
	       "                             Perfetto) or a 'number' (Chrome DevTools, speedscope)\n"
	       "      --reorder-window=MS    how far back, in recording time, a take_gil wait may start\n"
	       "                             and still be counted exactly (default %d)\n"
	       "      --summary              print statistics: the most waiting (starving) thread\n"
	       "                             of each process first, then per process and thread\n"
	       "                             (longest waiting first, with the function it was mostly\n"
	       "                             in) wait, hold and release time and percentiles, forced\n"
	       "                             and voluntary releases, GIL utilization, hand-offs, the\n"
	       "                             Python functions that hold the GIL longest, the longest\n"
	       "                             holds; without --output no trace is written\n"
	       "      --summary-json=FILE    the same numbers as JSON ('-' for standard output)\n"
	       "      --svg=FILE             a picture of GIL utilization and per-thread wait/hold\n"
	       "                             over time\n"
	       "  -q, --quiet                no warnings\n"
	       "  -v, --verbose              say what was converted\n"
	       "  -h, --help                 show this help and exit\n"
	       "  -V, --version              show the version and exit\n"
	       "\n"
	       "Formats:\n",
	       CONV_WINDOW_MS_DEFAULT);
	for (i = 0; conv_backends[i]; i++)
		printf("  %-26s %s\n", conv_backends[i]->name, conv_backends[i]->about);
	printf("\n"
	       "Warnings (a cut or empty recording, lost events) go to standard error. The output\n"
	       "appears only when complete. Exit status: 0 converted, 1 conversion failed, 2 usage.\n"
	       "See gil-convert(1).\n");
}

static void version(void)
{
	printf(PROG " (giltrace) " VERSION "\n"
	       "reads: giltrace recordings version %d, sysTrace GIL files (X and B/E)\n"
	       "writes: Chrome Trace JSON (phases M X I C s f); merges Kineto and msprof traces\n"
	       "json-c %s\n",
	       GILTRACE_FORMAT_VERSION, json_c_version());
}

static void warn(void *ctx, const char *msg)
{
	gil_warning("%s", msg);
}

/* X.json -> X_trace.json */
static char *default_output(const char *in)
{
	size_t n = strlen(in);
	char *out = malloc(n + sizeof("_trace.json"));

	if (!out)
		return NULL;
	while (n > 1 && in[n - 1] == '/')
		n--;
	if (n > 5 && !strcmp(in + n - 5, ".json"))
		n -= 5;
	memcpy(out, in, n);
	strcpy(out + n, "_trace.json");
	return out;
}

int main(int argc, char **argv)
{
	struct conv_options opt = {
		.flows = true,
		.counter = true,
		.window_ms = CONV_WINDOW_MS_DEFAULT,
		.warn = warn,
	};
	/* static: still reachable when a usage error returns from main (leak checkers agree) */
	static const char **inputs;
	char err[1024], *out_alloc = NULL, *end;
	unsigned long ms;
	int c, ret;

	inputs = calloc((size_t)argc + 1, sizeof(*inputs));
	if (!inputs) {
		gil_msg("out of memory");
		return 1;
	}
	opt.inputs = inputs;
	opterr = 0; /* our messages say gil-convert, not argv[0] */
	gil_msg_prog(PROG);
	while ((c = getopt_long(argc, argv, ":i:o:qvhV", long_opts, NULL)) != -1) {
		switch (c) {
		case 'i':
			inputs[opt.ninputs++] = optarg;
			break;
		case 'o':
			if (!*optarg)
				return gil_usage_error("invalid --output value '%s'", optarg);
			opt.output = optarg;
			break;
		case OPT_CLOCK:
			if (!strcmp(optarg, "realtime"))
				opt.clock = CONV_CLOCK_REALTIME;
			else if (!strcmp(optarg, "monotonic"))
				opt.clock = CONV_CLOCK_MONOTONIC;
			else if (!strcmp(optarg, "monotonic_raw"))
				opt.clock = CONV_CLOCK_MONOTONIC_RAW;
			else
				return gil_usage_error("invalid --clock value '%s' (realtime, monotonic or "
					  "monotonic_raw)", optarg);
			opt.clock_given = true;
			break;
		case OPT_PROF:
			opt.profiling_data = optarg;
			break;
		case OPT_MERGE:
			opt.merge = optarg;
			break;
		case OPT_NO_FLOWS:
			opt.flows = false;
			break;
		case OPT_NO_COUNTER:
			opt.counter = false;
			break;
		case OPT_WINDOW:
			errno = 0;
			ms = strtoul(optarg, &end, 10);
			if (end == optarg || *end || errno || *optarg == '-' || ms > 3600000)
				return gil_usage_error("invalid --reorder-window value '%s' (milliseconds, "
					  "0 to 3600000)", optarg);
			opt.window_ms = (unsigned)ms;
			break;
		case OPT_SUMMARY:
			opt.summary = true;
			break;
		case OPT_SUMMARY_JSON:
			if (!*optarg)
				return gil_usage_error("invalid --summary-json value '%s'", optarg);
			opt.summary_json = optarg;
			break;
		case OPT_SVG:
			if (!*optarg || !strcmp(optarg, "-"))
				return gil_usage_error("invalid --svg value '%s': give a file", optarg);
			opt.svg = optarg;
			break;
		case OPT_FORMAT:
			opt.format = conv_backend(optarg);
			if (!opt.format)
				return gil_usage_error("invalid --format value '%s' (%s)", optarg,
						       formats());
			break;
		case OPT_TS_FORMAT:
			if (strcmp(optarg, "string") && strcmp(optarg, "number"))
				return gil_usage_error("invalid --ts-format value '%s' (string or number)", optarg);
			opt.ts_number = !strcmp(optarg, "number");
			break;
		case 'q':
			opt.verbosity = -1;
			opt.warn = NULL;
			break;
		case 'v':
			opt.verbosity = 1;
			break;
		case 'h':
			usage();
			free(inputs);
			return 0;
		case 'V':
			version();
			free(inputs);
			return 0;
		case ':':
			return gil_usage_error("option '%s' requires an argument", argv[optind - 1]);
		default:
			if (optopt)
				return gil_usage_error("invalid option -- '%c'", optopt);
			return gil_usage_error("unrecognized option '%s'", argv[optind - 1]);
		}
	}
	while (optind < argc)
		inputs[opt.ninputs++] = argv[optind++];
	if (!opt.ninputs)
		return gil_usage_error("no input: give a recording with --input");
	if (opt.clock_given && opt.profiling_data)
		return gil_usage_error("--clock and --profiling-data both choose the time base: give one");
	if (opt.merge && opt.clock != CONV_CLOCK_REALTIME)
		return gil_usage_error("--merge puts the GIL rows on the profiler's wall-clock axis: it does not "
			  "go with --clock %s", opt.clock == CONV_CLOCK_MONOTONIC ? "monotonic" :
			  "monotonic_raw");
	if (opt.summary && opt.summary_json && !strcmp(opt.summary_json, "-"))
		return gil_usage_error("--summary and --summary-json - both write to standard output: give "
			  "--summary-json a file");
	if (opt.output && !strcmp(opt.output, "-") &&
	    (opt.summary || (opt.summary_json && !strcmp(opt.summary_json, "-"))))
		return gil_usage_error("the trace and the summary would both go to standard output: give "
			  "--output a file");
	/* statistics only: no trace unless --output asks for one */
	if (!opt.output && !opt.summary && !opt.summary_json && !opt.svg) {
		if (opt.ninputs > 1)
			return gil_usage_error("several inputs: name the trace to write with --output");
		out_alloc = default_output(inputs[0]);
		if (!out_alloc) {
			gil_msg("out of memory");
			return 1;
		}
		opt.output = out_alloc;
	}
	ret = conv_run(&opt, err, sizeof(err));
	if (ret < 0)
		gil_msg("%s", err);
	else if (opt.verbosity > 0 && opt.output)
		gil_msg("wrote %s", opt.output);
	free(out_alloc);
	free(inputs);
	return ret < 0 ? 1 : 0;
}
