/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The health options of `xlb vip add|set` and `xlb backend add|set`
 * (--health, --interval, ...): one option per setting of hc_store.h's
 * list, each parsed into a scratch record with a bit for "given", so a
 * command changes only what it was given.
 */
#ifndef XLB_HC_OPTS_H
#define XLB_HC_OPTS_H

#include <linux/types.h>
#include "hc_store.h"
#include "opts.h"

struct xlb_hc_opts {
	struct xlb_hc_config c;
	__u32 given;		/* bit i: setting i of hc_store.h's list */
};

/* opts[0..XLB_HC_SETTINGS) get one entry per health option, parsing
 * into *h (zeroed here). */
void xlb_hc_opts_table(struct xlb_opt *opts, struct xlb_hc_opts *h);

#define XLB_HC_OPTS_USAGE "[HEALTH...]"
/* The help lines about HEALTH, shared by both objects' help. */
extern const char xlb_hc_opts_help[];

#endif /* XLB_HC_OPTS_H */
