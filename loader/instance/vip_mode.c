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

int xlb_hash_parse(const char *text, __u32 *flags, const char **why)
{
	if (!strcmp(text, "5-tuple")) {
		*flags &= ~XLB_VIP_F_HASH;
		return 0;
	}
	if (!strcmp(text, "src-ip")) {
		*flags = (*flags & ~XLB_VIP_F_HASH) | XLB_VIP_F_HASH_SRC;
		return 0;
	}
	*why = "not 5-tuple or src-ip";
	return -EINVAL;
}

const char *xlb_hash_str(__u32 flags)
{
	return flags & XLB_VIP_F_HASH_SRC ? "src-ip" : "5-tuple";
}

int xlb_ping_parse(const char *text, __u32 *flags, const char **why)
{
	if (!strcmp(text, "on")) {
		*flags &= ~XLB_VIP_F_NO_PING;
		return 0;
	}
	if (!strcmp(text, "off")) {
		*flags |= XLB_VIP_F_NO_PING;
		return 0;
	}
	*why = "not on or off";
	return -EINVAL;
}

const char *xlb_ping_str(__u32 flags)
{
	return flags & XLB_VIP_F_NO_PING ? "off" : "on";
}

int xlb_affinity_parse(const char *text, __u32 *prefix, const char **why)
{
	__u32 v = 0;
	size_t i;

	for (i = 0; text[i] >= '0' && text[i] <= '9' && v <= 128; i++)
		v = v * 10 + (text[i] - '0');
	if (!i || text[i] || v < 1 || v > 128) {
		*why = "not a prefix length 1..128";
		return -EINVAL;
	}
	*prefix = v;
	return 0;
}

static __u32 family_bits(int family)
{
	return family == XLB_AF_INET6 ? 128 : 32;
}

__u32 xlb_vip_mode_complete(__u32 flags, int family)
{
	if (flags & XLB_VIP_F_HASH_SRC && !XLB_VIP_AFFINITY(flags))
		flags |= family_bits(family) << XLB_VIP_AFFINITY_SHIFT;
	return flags;
}

int xlb_vip_mode_check(__u32 flags, int family, const char **why)
{
	__u32 prefix = XLB_VIP_AFFINITY(flags);

	if (!(flags & XLB_VIP_F_HASH_SRC) && prefix) {
		*why = "an affinity prefix needs hash src-ip";
		return -EINVAL;
	}
	/* Prefix 0 would be one client: every flow on one backend. */
	if (flags & XLB_VIP_F_HASH_SRC &&
	    (prefix < 1 || prefix > family_bits(family))) {
		*why = family == XLB_AF_INET6 ?
		       "the affinity prefix of an IPv6 VIP is 1..128" :
		       "the affinity prefix of an IPv4 VIP is 1..32";
		return -EINVAL;
	}
	/* The previous backend travels in GUE's field. */
	if (flags & XLB_VIP_F_STATELESS && !(flags & XLB_VIP_F_GUE)) {
		*why = "stateless needs encap gue";
		return -EINVAL;
	}
	return 0;
}
