// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The attacker of tests/integration/hostile-swap.py, run as an unprivileged user: it maps a
 * crafted ELF whose take_gil/drop_gil sit at offsets of its choosing, waits for root's first
 * open of it (inotify IN_OPEN), renames a symbolic link to the victim over its path and execs
 * the victim, so that a recorder that resolves the path again probes the victim's code.
 * Usage: swap_attacker CRAFTED LINK VICTIM
 */
#include <fcntl.h>
#include <stdio.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	char buf[4096];
	struct stat st;
	void *map;
	int fd, in;

	if (argc != 4)
		return 2;
	fd = open(argv[1], O_RDONLY);
	if (fd < 0 || fstat(fd, &st) < 0)
		return 3;
	map = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return 4;
	in = inotify_init1(0);
	if (in < 0 || inotify_add_watch(in, argv[1], IN_OPEN) < 0)
		return 5;
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	if (read(in, buf, sizeof(buf)) <= 0)
		return 6;
	if (rename(argv[2], argv[1]) < 0)
		return 7;
	execl(argv[3], "victim", "3600", (char *)NULL);
	return 8;
}
