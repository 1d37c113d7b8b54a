/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Closing perf events off the recorder's loop. Closing the last event of a uprobe waits for an
 * RCU grace period in the kernel (about 50 ms each), so a target let go while recording (an
 * exited process, the last of its interpreter file) would stall the drain of every other
 * target. Its fds are handed to a thread that closes them; the loop goes on at once.
 * Lifecycle: zeroed struct -> gil_closer_close... -> gil_closer_wait (every fd handed over is
 * closed when it returns; before the probes are removed).
 */
#ifndef GIL_CLOSER_H
#define GIL_CLOSER_H

#include <pthread.h>
#include <stdbool.h>

struct gil_closer {
	int pipe[2]; /* fd numbers travel through it */
	pthread_t th;
	bool running;
};

/*
 * gil_closer_close - close @fd now or soon, without waiting. The thread is started on first
 * use; where it cannot be, @fd is closed here.
 */
void gil_closer_close(struct gil_closer *c, int fd);

/** gil_closer_wait - return once every fd handed over is closed; the thread has ended. */
void gil_closer_wait(struct gil_closer *c);

#endif
