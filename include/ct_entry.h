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

/*
 * The first slot of the flow's set in a table of mask + 1 slots (a power
 * of two, at least XLB_CT_WAYS), for the connection table's seed: a keyed
 * multiply-add hash of the flow's five words, a few instructions where
 * SipHash would cost an established flow's packet 15 ns. It only spreads
 * flows over sets; a sender who could aim flows at one set would evict
 * little but other one-packet flows there (bpf/conntrack.h), and only as
 * fast as the insertion cap allows.
 */
static inline __u32 xlb_ct_set_of(const struct xlb_flow *f, __u32 seed,
				  __u32 mask)
{
	const xlb_word *w = (const xlb_word *)f;
	__u64 k = (seed | 1ULL << 32) * 0x9e3779b97f4a7c15ULL;
	__u64 h = (w[0] ^ k) * 0x9e3779b97f4a7c15ULL +
		  (w[1] ^ k) * 0xc2b2ae3d27d4eb4fULL +
		  (w[2] ^ k) * 0x165667b19e3779f9ULL +
		  (w[3] ^ k) * 0xd6e8feb86659fd93ULL +
		  (w[4] ^ k) * 0xff51afd7ed558ccdULL;

	/* A product carries a word's differences only upwards: fold the high
	 * half (where an IPv6 address's last bytes land) down and multiply
	 * once more. The high bits mix best; 26 cover XLB_CT_MAX_SIZE. */
	h = (h ^ h >> 32) * 0x9e3779b97f4a7c15ULL;
	return (__u32)(h >> 38) & mask & ~(__u32)(XLB_CT_WAYS - 1);
}

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
