// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The closer (record/closer.h): fds handed over are all closed once gil_closer_wait returns,
 * and handing one over does not wait for its close. A TCP socket that lingers (SO_LINGER, its
 * peer reading nothing) blocks close() for 2 s, as the last event of a uprobe does for a grace
 * period; the closer's thread is then seen inside close() while the caller goes on.
 */
#define _GNU_SOURCE /* POLLRDHUP */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>

#include "record/closer.h"

static bool is_open(int fd)
{
	return fcntl(fd, F_GETFD) >= 0;
}

static void test_all_closed_after_wait(void **state)
{
	struct gil_closer c;
	int fds[200], i, p[2];

	(void)state;
	memset(&c, 0, sizeof(c));
	for (i = 0; i < 200; i += 2) {
		assert_int_equal(pipe(p), 0);
		fds[i] = p[0];
		fds[i + 1] = p[1];
	}
	for (i = 0; i < 200; i++)
		gil_closer_close(&c, fds[i]);
	gil_closer_wait(&c);
	for (i = 0; i < 200; i++)
		assert_false(is_open(fds[i]));
	/* waiting again, or with nothing handed over, is harmless; -1 is ignored */
	gil_closer_wait(&c);
	gil_closer_close(&c, -1);
	gil_closer_wait(&c);
}

/* A connected pair over loopback whose @lingering end blocks in close() for @secs. */
static void lingering_pair(int *lingering, int *peer, int secs)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct linger lg = { .l_onoff = 1, .l_linger = secs };
	socklen_t len = sizeof(a);
	char buf[65536];
	int l, small = 4096;

	l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(l >= 0);
	assert_int_equal(bind(l, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(l, 1), 0);
	assert_int_equal(getsockname(l, (struct sockaddr *)&a, &len), 0);
	*lingering = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(*lingering >= 0);
	/* small buffers both ways: the send side fills at once */
	setsockopt(*lingering, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
	assert_int_equal(connect(*lingering, (struct sockaddr *)&a, sizeof(a)), 0);
	*peer = accept(l, NULL, NULL);
	assert_true(*peer >= 0);
	setsockopt(*peer, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
	close(l);
	memset(buf, 'x', sizeof(buf));
	fcntl(*lingering, F_SETFL, O_NONBLOCK);
	while (send(*lingering, buf, sizeof(buf), MSG_NOSIGNAL) > 0)
		;
	fcntl(*lingering, F_SETFL, 0);
	assert_int_equal(setsockopt(*lingering, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)), 0);
}

/* Another thread of ours is blocked in close(2) (its /proc syscall file), waited for up to 1 s. */
static bool other_thread_in_close(void)
{
	char path[300], line[64];
	struct dirent *d;
	int tries, n, fd;
	DIR *dir;

	for (tries = 0; tries < 100; tries++) {
		dir = opendir("/proc/self/task");
		assert_non_null(dir);
		while ((d = readdir(dir))) {
			if (d->d_name[0] == '.' || atoi(d->d_name) == (int)syscall(SYS_gettid))
				continue;
			snprintf(path, sizeof(path), "/proc/self/task/%s/syscall", d->d_name);
			fd = open(path, O_RDONLY | O_CLOEXEC);
			if (fd < 0)
				continue;
			n = (int)read(fd, line, sizeof(line) - 1);
			close(fd);
			if (n > 0 && (line[n] = '\0', atoi(line) == SYS_close) && line[0] != '-') {
				closedir(dir);
				return true;
			}
		}
		closedir(dir);
		usleep(10000);
	}
	return false;
}

static void test_handing_over_does_not_wait(void **state)
{
	struct gil_closer c;
	char buf[65536];
	int s, peer;

	(void)state;
	memset(&c, 0, sizeof(c));
	lingering_pair(&s, &peer, 2);
	gil_closer_close(&c, s);
	/* back here while the closer's thread is still inside close() */
	assert_true(other_thread_in_close());
	gil_closer_wait(&c);
	assert_false(is_open(s));
	assert_false(other_thread_in_close());
	while (read(peer, buf, sizeof(buf)) > 0)
		;
	close(peer);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_all_closed_after_wait),
		cmocka_unit_test(test_handing_over_does_not_wait),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
