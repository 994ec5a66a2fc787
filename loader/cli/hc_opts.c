// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* The health options of vip and backend commands (see hc_opts.h). */
#include <errno.h>
#include <string.h>

#include "hc_opts.h"
#include "report.h"

const char xlb_hc_opts_help[] =
	"HEALTH := health checks of the VIP's backends; on a backend, its own\n"
	"          settings over the VIP's. Each takes \"default\" to unset it.\n"
	"  --health tcp|http|udp|none  the probe: a connection accepted, GET\n"
	"                         answered with the status, a UDP reply; none\n"
	"                         (the default) checks nothing\n"
	"  --health-port P        probe port P (default: the VIP's port)\n"
	"  --interval D           between probes, D as 500ms or 2s (default 2s)\n"
	"  --timeout D            wait for an answer, below the interval\n"
	"                         (default 1s, or half a shorter interval)\n"
	"  --rise N               good probes that bring a down backend back (2)\n"
	"  --fall N               failed probes that take a backend out (3)\n"
	"  --http-path PATH       the GET's path (default /)\n"
	"  --http-status S        the status expected, 100..599 (default 200)\n"
	"  --udp-send TEXT        the UDP probe's payload\n"
	"  --udp-expect TEXT      a reply must hold TEXT (default: any reply)\n"
	"  --on-down keep|reset   connections tracked to a backend found down\n"
	"                         stay (keep, the default) or follow the table,\n"
	"                         whose new backend resets them (reset)\n"
	"A backend found down leaves the table, keeping its weight, unless every\n"
	"backend of its VIP is down; `xlb health run` probes.\n";

static int hc_opt(const char *opt, const char *value, void *dest)
{
	const struct xlb_hc_setting *s = xlb_hc_setting_find(opt);
	struct xlb_hc_opts *h = dest;
	const char *why;

	if (xlb_hc_setting_parse(s, &h->c, value, &why)) {
		p_err("bad %s '%s': %s", opt, value, why);
		return -EINVAL;
	}
	h->given |= 1U << xlb_hc_setting_index(s);
	return 0;
}

void xlb_hc_opts_table(struct xlb_opt *opts, struct xlb_hc_opts *h)
{
	const struct xlb_hc_setting *s;
	size_t i;

	memset(h, 0, sizeof(*h));
	for (i = 0; (s = xlb_hc_setting_at(i)); i++)
		opts[i] = (struct xlb_opt)XLB_OPT_FN(xlb_hc_setting_option(s),
						     hc_opt, h);
}
