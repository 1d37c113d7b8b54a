// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Start modes: how a recording finds its targets. One entry each; the recorder's lifecycle
 * calls them and knows no mode by name (doc/architecture.md, "Where to change what").
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <signal.h>

#include "state.h"
#include "command.h"
#include "modes.h"
#include "targets.h"

/* --pid: the processes named, each made a target at setup; one that cannot be is skipped. */
static int pids_setup(struct gil_recorder *rec)
{
	size_t i;
	int ret;

	for (i = 0; i < rec->opts.nr_pids; i++) {
		if (rec_target_of(rec, rec->pids[i]))
			continue;
		ret = rec_add_target(rec, rec->pids[i], false);
		/* one --pid that cannot be recorded is skipped, the others are recorded */
		if (ret < 0 && (rec->opts.nr_pids == 1 || rec_skip_target(rec, rec->pids[i])))
			return -1;
	}
	if (!rec->nr_targets) {
		/* none could be: say why for the first */
		rec_set_err(rec, "%s", rec->skipped[0]);
		return -1;
	}
	return 0;
}

/* All-process mode: every CPython on the host, and each that starts later, found by a rescan. */
static int all_setup(struct gil_recorder *rec)
{
	return rec_scan_all(rec, false);
}

static int all_round(struct gil_recorder *rec, uint64_t now)
{
	if (rec_take_found(rec) < 0)
		return -1;
	if (now - rec->last_scan < RESCAN_NS)
		return 0;
	rec->last_scan = now;
	return rec_scan_all(rec, true);
}

/* Launch mode: the command, stopped before its exec until the recorder starts (launch.c). */
static int launch_setup(struct gil_recorder *rec)
{
	return gil_launch_spawn(&rec->launch, rec->opts.command, !rec->opts.command_as_root,
				rec->err, sizeof(rec->err));
}

static int launch_start(struct gil_recorder *rec)
{
	return gil_launch_resume(&rec->launch, rec->err, sizeof(rec->err));
}

static int launch_round(struct gil_recorder *rec, uint64_t now)
{
	(void)now;
	if (rec_take_found(rec) < 0)
		return -1;
	return gil_launch_step(&rec->launch, &rec_launch_ops, rec, rec->err, sizeof(rec->err));
}

/* the command, while it runs, may start a CPython yet */
static bool launch_more(const struct gil_recorder *rec)
{
	return rec->launch.running;
}

static bool always(const struct gil_recorder *rec)
{
	(void)rec;
	return true;
}

static void all_finish(struct gil_recorder *rec, bool started)
{
	(void)started;
	rec_stop_finding(rec);
}

static void launch_finish(struct gil_recorder *rec, bool started)
{
	rec_stop_finding(rec);
	gil_launch_release(&rec->launch);
	if (!started && rec->launch.running) {
		/* setup failed before the command ran: it must not run unrecorded */
		kill(rec->launch.child, SIGKILL);
		gil_launch_wait(&rec->launch);
	}
}

const struct rec_mode_ops rec_modes[REC_MODE_NR] = {
	[REC_MODE_PIDS] = { .name = "pids", .setup = pids_setup },
	[REC_MODE_ALL] = { .name = "all", .setup = all_setup, .round = all_round,
			   .more_may_come = always, .finish = all_finish },
	[REC_MODE_LAUNCH] = { .name = "launch", .setup = launch_setup, .start = launch_start,
			      .round = launch_round, .more_may_come = launch_more,
			      .finish = launch_finish },
};

enum rec_mode rec_mode_of(const struct gil_options *opts)
{
	if (opts->command)
		return REC_MODE_LAUNCH;
	if (opts->pids && opts->nr_pids)
		return REC_MODE_PIDS;
	return REC_MODE_ALL;
}
