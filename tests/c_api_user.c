// SPDX-License-Identifier: LGPL-2.1-or-later
/* Uses the public C API as a program embedding giltrace would: records a pid for a while. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "giltrace.h"

/* Usage: c_api_user PID SECONDS OUTDIR -> records PID via gil_trace_record_start_opts. */
int main(int argc, char **argv)
{
	struct gil_options o;
	char dir2[4096], second[1024];
	pid_t pid;
	int i;

	if (argc != 4)
		return 2;
	pid = (pid_t)atoi(argv[1]);
	gil_options_init(&o);
	o.pids = &pid;
	o.nr_pids = 1;
	o.output_dir = argv[3];
	if (gil_trace_record_start_opts(&o) < 0) {
		printf("error %s\n", gil_trace_record_error());
		return 1;
	}
	/* naming: bad arguments refused; a thread of a process not recorded is fine (ignored) */
	if (gil_trace_record_name_thread(0, "x") == 0 || errno != EINVAL ||
	    gil_trace_record_name_thread(getpid(), "") == 0 || errno != EINVAL ||
	    gil_trace_record_name_thread(getpid(), "c_api_user main") < 0)
		return 4;
	usleep((useconds_t)(atof(argv[2]) * 1e6));
	if (gil_trace_record_stop() < 0) {
		printf("error %s\n", gil_trace_record_error());
		return 1;
	}
	if (gil_trace_record_stop() == 0 || !gil_trace_record_error()[0])
		return 3; /* a second stop must fail with a reason */
	snprintf(second, sizeof(second), "%s", gil_trace_record_error());
	if (gil_trace_record_name_thread(getpid(), "late") == 0 || errno != ESRCH)
		return 5; /* no recording: nothing to name */
	/* a recording ended by its duration writes no more names: they queue up to a bound */
	snprintf(dir2, sizeof(dir2), "%s/again", argv[3]);
	if (mkdir(dir2, 0755) < 0)
		return 6;
	o.output_dir = dir2;
	o.duration = 0.2;
	if (gil_trace_record_start_opts(&o) < 0) {
		printf("error %s\n", gil_trace_record_error());
		return 1;
	}
	usleep(800000);
	for (i = 0; i < 4096; i++)
		if (gil_trace_record_name_thread(getpid(), "n") < 0)
			return 7;
	if (gil_trace_record_name_thread(getpid(), "n") == 0 || errno != EAGAIN)
		return 8;
	if (gil_trace_record_stop() < 0) {
		printf("error %s\n", gil_trace_record_error());
		return 1;
	}
	printf("ok %s\n", second);
	return 0;
}
