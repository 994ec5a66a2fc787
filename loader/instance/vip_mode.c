// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* A VIP's way of forwarding by name (see vip_mode.h). */
#include <errno.h>
#include <string.h>

#include "xlb.h"
#include "vip_mode.h"

int xlb_encap_parse(const char *text, __u32 *flags, const char **why)
{
	if (!strcmp(text, "ipip")) {
		*flags &= ~XLB_VIP_F_GUE;
		return 0;
	}
	if (!strcmp(text, "gue")) {
		*flags |= XLB_VIP_F_GUE;
		return 0;
	}
	*why = "not ipip or gue";
	return -EINVAL;
}

const char *xlb_encap_str(__u32 flags)
{
	return flags & XLB_VIP_F_GUE ? "gue" : "ipip";
}

int xlb_mode_parse(const char *text, __u32 *flags, const char **why)
{
	if (!strcmp(text, "tracked")) {
		*flags &= ~XLB_VIP_F_STATELESS;
		return 0;
	}
	if (!strcmp(text, "stateless")) {
		*flags |= XLB_VIP_F_STATELESS;
		return 0;
	}
	*why = "not tracked or stateless";
	return -EINVAL;
}

const char *xlb_mode_str(__u32 flags)
{
	return flags & XLB_VIP_F_STATELESS ? "stateless" : "tracked";
}

int xlb_vip_mode_check(__u32 flags, const char **why)
{
	/* The previous backend travels in GUE's field. */
	if (flags & XLB_VIP_F_STATELESS && !(flags & XLB_VIP_F_GUE)) {
		*why = "stateless needs encap gue";
		return -EINVAL;
	}
	return 0;
}
