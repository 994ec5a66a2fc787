/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The backends' XDP program (bpf/decap.bpf.c) as userspace sees it: its
 * setting, the addresses and prefixes it trusts, and its counters
 * (docs/backend.md, docs/second-chance.md).
 *
 * The program acts only on what its maps allow, and they start empty: a
 * freshly loaded program decapsulates nothing (every tunnelled packet
 * passes, counted pass_not_local) and forwards nothing. `xlb host setup`
 * fills them; docs/backend.md also gives them as bpftool commands.
 *
 * None of the maps is pinned by the object: a backend may run the program
 * in several network namespaces of one host, and pins by name would be
 * shared between them. `xlb host setup` pins them itself, under a
 * directory of its network namespace (loader/host/); a program loaded by
 * `ip link` has them found by name with bpftool.
 */
#ifndef XLB_DECAP_H
#define XLB_DECAP_H

#include <linux/types.h>
#include "xlb.h"

/* Map names: at most 15 characters, the kernel's limit, so that the
 * name bpftool matches is the whole name. */
#define XLB_MAP_DECAP_CONFIG	"xlb_decap_cfg"
#define XLB_MAP_DECAP_STATS	"xlb_decap_stats"
#define XLB_MAP_DECAP_ADDRS	"xlb_decap_addrs"
#define XLB_MAP_DECAP_FLEET	"xlb_decap_fleet"
#define XLB_MAP_DECAP_BALANCERS	"xlb_decap_lbs"
#define XLB_MAP_DECAP_EGRESS	"xlb_decap_out"

/* Capacities: addresses of the host, prefixes of each list, interfaces. */
#define XLB_DECAP_ADDRS_MAX	1024
#define XLB_DECAP_PREFIXES_MAX	1024
#define XLB_DECAP_EGRESS_MAX	64

/* The one entry of xlb_decap_cfg. A zero field means its default, so the
 * map as the program's load creates it is the default setting. */
struct xlb_decap_config {
	__be16 gue_port;	/* 0: XLB_GUE_DEFAULT_PORT */
	__u16 flags;		/* XLB_DECAP_F_* */
};
XLB_STATIC_ASSERT(sizeof(struct xlb_decap_config) == 4, "xlb_decap_config layout");

/* Accept a tunnelled packet only from a balancer (outer source in
 * xlb_decap_lbs), or, forwarded once already (GUE hops 1), from a backend
 * of the fleet (xlb_decap_fleet). Set whenever balancers are given. */
#define XLB_DECAP_F_CHECK_SOURCE	0x1

/*
 * xlb_decap_addrs, a hash: this host's addresses as the program needs to
 * know them, each with what it is. An outer destination must be a TUNNEL
 * address (the backend's addresses the balancers send to; broadcast and
 * the subnet's other addresses never are), an inner destination a VIP.
 */
struct xlb_decap_addr {
	__u8 family;		/* XLB_AF_INET or XLB_AF_INET6 */
	__u8 pad[3];		/* 0 */
	__be32 addr[4];		/* IPv4 in addr[0], the rest 0 */
};
XLB_STATIC_ASSERT(sizeof(struct xlb_decap_addr) == 20, "xlb_decap_addr layout");

#define XLB_DECAP_ADDR_TUNNEL	0x1	/* a tunnel endpoint of this host */
#define XLB_DECAP_ADDR_VIP	0x2	/* a VIP this host serves (on lo) */

/*
 * xlb_decap_fleet and xlb_decap_lbs, LPM tries of prefixes (values: __u32
 * 1). The prefix covers the family byte too, so one trie holds both
 * families and an IPv4 prefix never matches an IPv6 address:
 * prefixlen = XLB_DECAP_PREFIX_BASE (the family byte and the padding, in
 * bits) + the prefix's own length.
 */
struct xlb_decap_prefix {
	__u32 prefixlen;	/* XLB_DECAP_PREFIX_BASE + bits */
	__u8 family;		/* XLB_AF_INET or XLB_AF_INET6 */
	__u8 pad[3];		/* 0 */
	__be32 addr[4];
};
XLB_STATIC_ASSERT(sizeof(struct xlb_decap_prefix) == 24, "xlb_decap_prefix layout");
#define XLB_DECAP_PREFIX_BASE	32	/* family + pad, in bits */
XLB_STATIC_ASSERT(XLB_DECAP_PREFIX_BASE == 8 * (__builtin_offsetof(struct xlb_decap_prefix, addr) -
					    __builtin_offsetof(struct xlb_decap_prefix, family)),
		  "xlb_decap_prefix: the base is what precedes addr in the trie's data");

/* xlb_decap_out, a hash of ifindex (__u32) to __u32 1: the interfaces,
 * besides the one a packet arrived on, that a forwarded packet may leave
 * by. Empty: only the receiving interface. */

/*
 * What became of each tunnelled packet the program saw (frames that are
 * not tunnelled, IPIP or UDP to the GUE port, pass uncounted): each counts
 * exactly one of these, in a per-CPU array of struct xlb_counter indexed
 * by the enum. One list gives the enum and the names; a new reason goes
 * at its end, so that the indexes readers know keep their meaning.
 */
#define XLB_DECAP_STAT_LIST(X)						\
	X(PASS_IPIP,		"pass_ipip")				\
	X(PASS_GUE,		"pass_gue")				\
	X(PASS_FORWARDED,	"pass_forwarded")			\
	X(PASS_PREV_SELF,	"pass_prev_self")			\
	X(PASS_PREV_FAMILY,	"pass_prev_family")			\
	X(FORWARD,		"forward")				\
	X(PASS_NOT_UNICAST,	"pass_not_unicast")			\
	X(PASS_NOT_LOCAL,	"pass_not_local")			\
	X(DROP_SOURCE,		"drop_source")				\
	X(DROP_INNER_NOT_LOCAL,	"drop_inner_not_local")			\
	X(DROP_PREV_MARTIAN,	"drop_prev_martian")			\
	X(DROP_PREV_NOT_FLEET,	"drop_prev_not_fleet")			\
	X(DROP_EGRESS,		"drop_egress")				\
	X(DROP_PREV_LOCAL,	"drop_prev_local")			\
	X(DROP_BAD_HEADER,	"drop_bad_header")			\
	X(DROP_TRUNCATED,	"drop_truncated")			\
	X(DROP_BAD_PROTO,	"drop_bad_proto")			\
	X(DROP_BAD_FIELD,	"drop_bad_field")			\
	X(DROP_LOOP,		"drop_loop")				\
	X(DROP_NO_ROUTE,	"drop_no_route")			\
	X(DROP_NO_NEIGH,	"drop_no_neigh")			\
	X(DROP_TOO_BIG,		"drop_too_big")				\
	X(DROP_FWD_DISABLED,	"drop_fwd_disabled")			\
	X(ABORTED,		"aborted")				\
	X(DROP_INNER_TRUNCATED,	"drop_inner_truncated")

#define XLB_DECAP_STAT_ENUM(name, str) XLB_DECAP_##name,
enum xlb_decap_stat {
	XLB_DECAP_STAT_LIST(XLB_DECAP_STAT_ENUM)
	XLB_DECAP__MAX
};
#undef XLB_DECAP_STAT_ENUM

#endif /* XLB_DECAP_H */
