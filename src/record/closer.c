// SPDX-License-Identifier: LGPL-2.1-or-later
/* Closing perf events off the recorder's loop (closer.h). */
#include "config.h"

#include "closer.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

static void *closer_main(void *arg)
{
	struct gil_closer *c = arg;
	int fd;
	ssize_t n;

	for (;;) {
		n = read(c->pipe[0], &fd, sizeof(fd));
		if (n < 0 && errno == EINTR)
			continue;
		if (n != (ssize_t)sizeof(fd))
			break; /* the write end closed: every fd before it is closed */
		close(fd);
	}
	return NULL;
}

static bool start(struct gil_closer *c)
{
	if (pipe2(c->pipe, O_CLOEXEC) < 0)
		return false;
	if (pthread_create(&c->th, NULL, closer_main, c) != 0) {
		close(c->pipe[0]);
		close(c->pipe[1]);
		return false;
	}
	c->running = true;
	return true;
}

void gil_closer_close(struct gil_closer *c, int fd)
{
	ssize_t n;

	if (fd < 0)
		return;
	if (!c->running && !start(c)) {
		close(fd);
		return;
	}
	/* an int is written whole to a pipe (PIPE_BUF); a full pipe blocks until the thread reads */
	do
		n = write(c->pipe[1], &fd, sizeof(fd));
	while (n < 0 && errno == EINTR);
	if (n != (ssize_t)sizeof(fd))
		close(fd);
}

void gil_closer_wait(struct gil_closer *c)
{
	if (!c->running)
		return;
	close(c->pipe[1]);
	pthread_join(c->th, NULL);
	close(c->pipe[0]);
	c->running = false;
}
