/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* gil-record --live: a full-screen table of the last second's figures (ncurses). */
#ifndef GIL_LIVE_VIEW_H
#define GIL_LIVE_VIEW_H

#include <stddef.h>

#include "giltrace.h"

struct live_view;

/*
 * live_view_check - before any probe: stdin and stdout are a terminal that ncurses can drive
 * (and this gil-record was built with ncurses). 0, or -1 with one line for the user in @err.
 */
int live_view_check(char *err, size_t errlen);

/*
 * live_view_start - take the screen. From now until live_view_end, what the program writes to
 * stderr is shown at the screen's foot, and written out again when the view ends. NULL with
 * one line in @err.
 */
struct live_view *live_view_start(char *err, size_t errlen);

/*
 * live_view_step - read the keys, and redraw when a new second of @rec's is complete, a key
 * asked for it or the terminal was resized. 1: go on; 0: the user quit.
 */
int live_view_step(struct live_view *v, struct gil_recorder *rec);

/* live_view_end - give the terminal back as it was, then write what stderr got meanwhile. */
void live_view_end(struct live_view *v);

#endif /* GIL_LIVE_VIEW_H */
