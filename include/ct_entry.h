/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * What an entry of the connection table means, for the XDP program
 * (bpf/conntrack.h) and for `xlb show`, which counts the flows each backend
 * still holds: when an entry times out, and whether its backend may still
 * take the flow. Header-only, compiled by both sides.
 */
#ifndef XLB_CT_ENTRY_H
#define XLB_CT_ENTRY_H

#include <linux/types.h>
#include "xlb.h"

#define XLB_NS_PER_S	1000000000ULL
#define XLB_CT_IPPROTO_TCP 6	/* <linux/in.h> and <netinet/in.h> clash */

/* Idle time after which an entry of a flow of proto counts as gone. */
static inline __u64 xlb_ct_timeout_ns(const struct xlb_config *cfg,
				      __u8 proto, __u32 entry_flags)
{
	__u32 s;

	if (proto != XLB_CT_IPPROTO_TCP)
		s = cfg->udp_timeout_s ? cfg->udp_timeout_s : XLB_CT_UDP_TIMEOUT_S;
	else if (entry_flags & XLB_CT_F_CLOSING)
		s = cfg->tcp_closing_timeout_s ? cfg->tcp_closing_timeout_s :
		    XLB_CT_TCP_CLOSING_TIMEOUT_S;
	else
		s = cfg->tcp_timeout_s ? cfg->tcp_timeout_s : XLB_CT_TCP_TIMEOUT_S;
	return s * XLB_NS_PER_S;
}

/* Timed out at now (CLOCK_MONOTONIC ns)? Written so that an entry another
 * CPU has just refreshed, seen after now was read, is not. */
static inline int xlb_ct_expired(const struct xlb_ct_entry *e, __u64 now,
				 __u64 timeout_ns)
{
	return now > e->last_seen_ns + timeout_ns;
}

/*
 * May the entry's backend still take the flow? Its record must be in use,
 * not being removed, and of the same generation as when the entry was made
 * (a removed backend's id may serve another backend since). A draining
 * backend (weight 0) may: that is what draining means.
 */
static inline int xlb_ct_backend_usable(const struct xlb_ct_entry *e,
					const struct xlb_backend *be)
{
	return (be->flags & (XLB_BE_F_IN_USE | XLB_BE_F_REMOVED)) ==
	       XLB_BE_F_IN_USE && be->gen == e->gen;
}

#endif /* XLB_CT_ENTRY_H */
