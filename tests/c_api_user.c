// SPDX-License-Identifier: LGPL-2.1-or-later
/* Uses the public C API as a program embedding giltrace would: records a pid for a while. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "giltrace.h"

/* Whether a recording in @dir is complete (ends with its "]}" line): the recording is over. */
static int complete_in(const char *dir)
{
	char path[8192], tail[3];
	struct dirent *d;
	DIR *dp = opendir(dir);
	int done = 0, fd;

	while (dp && !done && (d = readdir(dp))) {
		if (strncmp(d->d_name, "GIL_", 4))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, d->d_name);
		fd = open(path, O_RDONLY);
		if (fd < 0)
			continue;
		done = lseek(fd, -3, SEEK_END) >= 0 && read(fd, tail, 3) == 3 &&
		       !memcmp(tail, "]}\n", 3);
		close(fd);
	}
	if (dp)
		closedir(dp);
	return done;
}

/*
 * Usage: c_api_user PID SECONDS OUTDIR -> records PID via gil_trace_record_start_opts, for
 * SECONDS, or with SECONDS "-" until a line on stdin (after printing "recording").
 */
int main(int argc, char **argv)
{
	struct gil_options o;
	char dir2[4096], second[1024], line[64];
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
	if (!strcmp(argv[2], "-")) {
		printf("recording\n");
		fflush(stdout);
		if (!fgets(line, sizeof(line), stdin))
			return 9;
	} else {
		usleep((useconds_t)(atof(argv[2]) * 1e6));
	}
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
	/* over when its file is complete (the worker finishes the files when the loop ends) */
	for (i = 0; i < 1200 && !complete_in(dir2); i++)
		usleep(100000);
	if (!complete_in(dir2))
		return 10; /* not ended by its duration within 120 s */
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
