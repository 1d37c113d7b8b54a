/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the programs say: one line on stderr, after the program's name (shared/STYLE.md:
 * "gil-record: invalid --duration value 'x'" plus "Try 'gil-record --help'"). Library code
 * never prints: it returns errors, and the programs say them with these.
 */
#ifndef GIL_MSG_H
#define GIL_MSG_H

/* gil_msg_prog - the program's name, put before every line (set once, by main). */
void gil_msg_prog(const char *name);

/* gil_msg - "PROG: <what>" and a newline. */
void gil_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* gil_warning - "PROG: warning: <what>" and a newline. */
void gil_warning(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * gil_usage_error - "PROG: <what is wrong>", then "Try 'PROG --help' for more information.";
 * returns 2, the exit status of bad usage: `return gil_usage_error(...)` in main.
 */
int gil_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif /* GIL_MSG_H */
