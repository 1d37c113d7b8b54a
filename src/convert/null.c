// SPDX-License-Identifier: LGPL-2.1-or-later
/* The output backend when only statistics are asked for (no --output): it writes nothing. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "conv.h"

static int null_header(struct conv_out *o)
{
	return 0;
}

static int null_event(struct conv_out *o, const struct conv_event *ev)
{
	return 0;
}

static int null_footer(struct conv_out *o, struct json_object *other)
{
	return 0;
}

const struct conv_backend_ops conv_null_ops = {
	.name = "none",
	.header = null_header,
	.event = null_event,
	.footer = null_footer,
};
