/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Launch mode's glue: which process of the command to record. */
#ifndef GIL_REC_COMMAND_H
#define GIL_REC_COMMAND_H

#include "state.h"

extern const struct gil_launch_ops rec_launch_ops;

#endif /* GIL_REC_COMMAND_H */
