/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The datapath's next-hop cache (bpf/fib.h), one entry per backend id and
 * CPU, private to each program: `xlb lookup` reads its own program's to
 * say which next hop a packet took.
 */
#ifndef XLB_FIB_CACHE_H
#define XLB_FIB_CACHE_H

#include <linux/types.h>
#include "xlb.h"

struct xlb_nexthop {
	/* The Ethernet header the frame leaves with (next hop's MAC, egress
	 * interface's MAC, EtherType of the backend's family) and two bytes
	 * more: two words, written to the frame in two stores. */
	__u64 eth[2];
	__u32 ifindex;		/* egress interface */
	__u16 mtu;		/* of the route: largest outer packet */
	__u16 pad;
};
XLB_STATIC_ASSERT(sizeof(struct xlb_nexthop) == 24, "xlb_nexthop layout");

struct xlb_fib_cache_entry {
	__u64 expires_ns;	/* bpf_ktime_get_coarse_ns() clock */
	__u32 ingress_ifindex;
	__u32 gen;		/* xlb_backend.gen the entry was made for */
	struct xlb_nexthop nh;
};
XLB_STATIC_ASSERT(sizeof(struct xlb_fib_cache_entry) == 40, "xlb_fib_cache_entry layout");

#endif /* XLB_FIB_CACHE_H */
