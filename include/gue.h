/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * GUE (Generic UDP Encapsulation, draft-ietf-intarea-gue, variant 0): the
 * inner IP packet behind an outer IP header, a UDP header to the backends'
 * GUE port, and this header. The outer UDP source port is taken from the
 * flow hash, so a backend's NIC spreads flows over its receive queues.
 *
 * xlb carries one field of its own after the base header, counted in
 * hlen but named by no flag: the slot's previous backend ("second
 * chance"). A backend that does not know a packet's connection forwards
 * it, once, to that backend (bpf/decap.bpf.c); hops says whether it was
 * forwarded already, so nothing loops. With no flag set, a kernel GUE
 * receiver (`ip fou add port P gue`) skips the field and decapsulates as
 * usual, so backends with the fou driver need no BPF (without the second
 * chance).
 */
#ifndef XLB_GUE_H
#define XLB_GUE_H

#include <linux/types.h>
#include "xlb.h"

#define XLB_GUE_DEFAULT_PORT	6080

/* GUE's base header, variant 0: version 0 and C 0 in the top bits of the
 * first byte, hlen the 32-bit words of extensions after it. */
struct xlb_gue_hdr {
	__u8 hlen;		/* low 5 bits; top 3 bits (variant, C): 0 */
	__u8 proto;		/* IPPROTO_IPIP or IPPROTO_IPV6 */
	__be16 flags;		/* 0 */
};
XLB_STATIC_ASSERT(sizeof(struct xlb_gue_hdr) == 4, "xlb_gue_hdr layout");

#define XLB_GUE_PRIV_MAGIC	0x58	/* 'X': xlb's field */

/* xlb's field: the slot's previous backend, if any. */
struct xlb_gue_priv {
	__u8 magic;		/* XLB_GUE_PRIV_MAGIC */
	__u8 hops;		/* 0 from the balancer; 1 once forwarded */
	__u8 family;		/* enum xlb_family of prev; XLB_AF_NONE: none */
	__u8 pad;
	__be32 prev[4];		/* IPv4 in prev[0] */
};
XLB_STATIC_ASSERT(sizeof(struct xlb_gue_priv) == 20, "xlb_gue_priv layout");

/* What xlb writes after the outer UDP header. */
struct xlb_gue {
	struct xlb_gue_hdr h;	/* hlen = sizeof(priv) / 4 */
	struct xlb_gue_priv priv;
};
XLB_STATIC_ASSERT(sizeof(struct xlb_gue) == 24, "xlb_gue layout");
#define XLB_GUE_HLEN		(sizeof(struct xlb_gue_priv) / 4)

#endif /* XLB_GUE_H */
