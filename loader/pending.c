// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* TEMPORARY during development: commands not written yet. Each owner
 * deletes its function from here when its cmd_*.c lands; this file goes. */
#include <errno.h>
#include "cli.h"

#define PENDING(fn, name)					\
int fn(int argc, char **argv)					\
{								\
	(void)argc; (void)argv;					\
	p_err("'%s' is not available yet", name);		\
	return -EOPNOTSUPP;					\
}

PENDING(do_replay, "replay")
