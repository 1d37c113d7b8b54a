// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Launch mode (gil-record -- CMD): the command and the processes it forks become targets
 * once they run a Python; launch.c runs and follows them.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stdio.h>

#include "state.h"
#include "command.h"
#include "targets.h"

/* Does the ELF file at @path list a libpython among its DT_NEEDED entries? */
static bool needs_libpython(const char *path)
{
	struct gil_elf h;
	bool found;

	if (gil_elf_open(&h, path, NULL, 0) < 0)
		return false;
	found = gil_elf_needs(h.elf, "libpython3");
	gil_elf_close(&h);
	return found;
}

/* Cheap: whether ld.so will map a libpython; the files themselves are read by the resolver. */
static enum gil_exec_kind launch_classify(void *ctx, pid_t pid)
{
	char exe[64];

	(void)ctx;
	snprintf(exe, sizeof(exe), "/proc/%d/exe", (int)pid);
	return needs_libpython(exe) ? GIL_EXEC_PYTHON_LOADING : GIL_EXEC_OTHER;
}

/* Its files are read by the resolver's worker, as all-process mode's are: the rings drain. */
static int launch_attach(void *ctx, pid_t pid)
{
	return rec_attach_found(ctx, pid);
}

const struct gil_launch_ops rec_launch_ops = {
	.classify = launch_classify,
	.attach = launch_attach,
};

pid_t gil_recorder_command(struct gil_recorder *rec, bool *running, int *status)
{
	if (rec->mode != REC_MODE_LAUNCH)
		return 0;
	if (running)
		*running = rec->launch.running;
	if (status)
		*status = rec->launch.status;
	return rec->launch.child;
}

int gil_recorder_command_wait(struct gil_recorder *rec)
{
	if (rec->mode != REC_MODE_LAUNCH)
		return 0;
	gil_launch_release(&rec->launch);
	return gil_launch_wait(&rec->launch);
}
