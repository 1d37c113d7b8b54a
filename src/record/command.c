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
#include "objects.h"
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

static enum gil_exec_kind launch_classify(void *ctx, pid_t pid)
{
	struct gil_symbols *syms = NULL;
	enum gil_exec_kind kind = GIL_EXEC_OTHER;
	char exe[64], root[64], err[256];

	(void)ctx;
	snprintf(exe, sizeof(exe), "/proc/%d/exe", (int)pid);
	snprintf(root, sizeof(root), "/proc/%d/root", (int)pid);
	if (gil_symbols_read(exe, root, &syms, err, sizeof(err)) == 0 && syms->has_take &&
	    syms->has_drop)
		kind = GIL_EXEC_PYTHON_NOW;
	else if (needs_libpython(exe))
		kind = GIL_EXEC_PYTHON_LOADING;
	gil_symbols_free(syms);
	return kind;
}

static int launch_attach(void *ctx, pid_t pid)
{
	struct gil_recorder *rec = ctx;
	char why[512] = "";
	int obj, ret;

	if (rec_target_of(rec, pid))
		return 1;
	obj = rec_python_object(rec, pid, why, sizeof(why));
	if (obj == -1)
		return -1;
	if (obj < 0)
		return 0; /* not mapped yet */
	ret = rec_add_target(rec, pid, true);
	return ret == 0 ? 1 : ret == -2 ? 0 : -1;
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
