/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * gil-record's watchdog output (--alert-hold MS, --alert-cmd CMD): a line per alert on stderr
 * and, once per long hold, CMD run without a shell as the user who ran sudo, its details in
 * its environment (GIL_ALERT_*), rate-limited.
 */
#ifndef GIL_ALERTS_H
#define GIL_ALERTS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "common/runas.h"
#include "giltrace.h"

#define ALERT_CMD_MAX_RUNNING 4 /* commands running at once, at most */
#define ALERT_CMD_GAP_NS 1000000000ull /* between two starts, at least */
#define ALERT_CMD_MAX_WORDS 64

struct alerts {
	char *words; /* CMD's copy, cut at spaces */
	char *argv[ALERT_CMD_MAX_WORDS + 1]; /* argv[0] NULL: no command */
	bool as_root; /* --as-root: keep root for the command */
	struct gil_sudo_user user;
	bool tty; /* stderr shows the status line: clear it first */
	bool quiet;
	pid_t running[ALERT_CMD_MAX_RUNNING];
	size_t nr_running;
	uint64_t last_start_ns;
	unsigned long alerts, holds, commands, not_run, failed; /* holds: ended ones */
};

/*
 * alerts_init - parse @cmd (NULL: none): words at spaces, no shell, no quoting. Returns 0, or
 * -1 with a line for the user in @err (not found, not executable, too many words).
 */
int alerts_init(struct alerts *a, const char *cmd, bool as_root, char *err, size_t errlen);

/* alerts_report - a gil_alert_fn: the line, and the command for a hold's first report. */
void alerts_report(void *ctx, const struct gil_alert *alert);

/* alerts_reap - collect the commands that ended (non-blocking). */
void alerts_reap(struct alerts *a);

/* alerts_finish - wait up to @timeout_ms for the commands running, then say what was not run. */
void alerts_finish(struct alerts *a, int timeout_ms);

#endif /* GIL_ALERTS_H */
