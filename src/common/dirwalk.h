/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Paths that other users may control, walked without following their links: the recorder's
 * output directory, gil-convert's outputs. A link is followed only when the caller or root made
 * it in a directory only they can write (/home -> /data/home, /dev/stdout); any other link
 * could point anywhere by the time it is used.
 */
#ifndef GIL_DIRWALK_H
#define GIL_DIRWALK_H

#include <stdbool.h>
#include <stddef.h>

/**
 * gil_link_trusted - is @name in the directory @dirfd a symbolic link owned by root or by us,
 * in a directory owned by root or by us that no one else may write?
 */
bool gil_link_trusted(int dirfd, const char *name);

/**
 * gil_dir_walk - open the directory @path (O_PATH) one component at a time through directory
 * descriptors. A component that is a link is followed only when gil_link_trusted() says so,
 * and never when it is the last one and @last_link_ok is false. With @create, missing
 * components are made (mode 0750) and must then be ours. Returns the descriptor, or -1 with
 * errno and in @at the path up to the component that failed: ELOOP a link refused, ENOTDIR not
 * a directory, ESTALE a directory we made was replaced, else the system's errno.
 */
int gil_dir_walk(const char *path, bool create, bool last_link_ok, char *at, size_t atlen);

#endif /* GIL_DIRWALK_H */
