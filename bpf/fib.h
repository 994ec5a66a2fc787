/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The next hop towards a backend: egress interface, MAC addresses and MTU,
 * from the kernel's routing and neighbour tables (bpf_fib_lookup), so no
 * one has to configure MAC addresses.
 *
 * A FIB lookup costs more than the rest of the datapath together, so each
 * CPU caches the answer per backend for XLB_FIB_CACHE_NS: a changed route,
 * neighbour or MTU takes effect within that time (half a second), a reused
 * backend slot (new gen) or another ingress interface at once. Only
 * successful lookups are cached; an unresolved neighbour (the packet is
 * dropped) is asked again on the next packet.
 */
#ifndef XLB_BPF_FIB_H
#define XLB_BPF_FIB_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>
#include "xlb.h"
#include "fib_cache.h"

#include "compiler.h"

#define XLB_FIB_CACHE_NS	(500ULL * 1000 * 1000)

/* Linux address family numbers, as bpf_fib_lookup wants them. */
#define XLB_SYS_AF_INET		2
#define XLB_SYS_AF_INET6	10

/* Private to the program (not pinned): a fresh load starts empty. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XLB_MAX_BACKENDS);
	__type(key, __u32);
	__type(value, struct xlb_fib_cache_entry);
} xlb_fib_cache SEC(".maps");

/*
 * Ask the kernel for the route to the backend of an outer packet of tot_len
 * bytes from cfg's source. The kernel also checks tot_len against the
 * route's MTU, and since Linux 5.12 returns that MTU in mtu_result.
 */
XLB_INLINE int xlb_fib_lookup(struct xdp_md *ctx, const struct xlb_backend *be,
			      const struct xlb_config *cfg, __u32 tot_len,
			      __u8 inner_family, __u8 tos, struct xlb_nexthop *nh)
{
	struct bpf_fib_lookup fib = {
		.ifindex = ctx->ingress_ifindex,
		.tot_len = tot_len,
		.l4_protocol = inner_family == XLB_AF_INET ? IPPROTO_IPIP
							    : IPPROTO_IPV6,
	};
	union {
		struct ethhdr h;
		__u64 w[2];
	} l2 = {};
	int rc;

	if (be->family == XLB_AF_INET) {
		fib.family = XLB_SYS_AF_INET;
		fib.tos = tos;
		fib.ipv4_src = cfg->src4;
		fib.ipv4_dst = be->addr[0];
	} else {
		fib.family = XLB_SYS_AF_INET6;
		__builtin_memcpy(fib.ipv6_src, cfg->src6, sizeof(fib.ipv6_src));
		__builtin_memcpy(fib.ipv6_dst, be->addr, sizeof(fib.ipv6_dst));
	}
	rc = bpf_fib_lookup(ctx, &fib, sizeof(fib), 0);
	switch (rc) {
	case BPF_FIB_LKUP_RET_SUCCESS:
		break;
	case BPF_FIB_LKUP_RET_NO_NEIGH:
		/* Dropped, not passed: the kernel does not own the VIP and
		 * would route the packet back to the router. The loader
		 * keeps a managed neighbour entry for every backend's next
		 * hop (loader/instance/neigh.h), so this lasts until the
		 * kernel has resolved it, within a second. */
		return -XLB_STAT_DROP_NEIGH_UNRESOLVED;
	case BPF_FIB_LKUP_RET_FRAG_NEEDED:
		/* The route's MTU, for the answer (bpf/icmp.h); the entry
		 * stays expired. */
		nh->mtu = fib.mtu_result;
		return -XLB_STAT_DROP_TOO_BIG;
	default:
		return -XLB_STAT_DROP_FIB_FAILED;
	}
	nh->ifindex = fib.ifindex;
	nh->mtu = fib.mtu_result;
	__builtin_memcpy(l2.h.h_dest, fib.dmac, ETH_ALEN);
	__builtin_memcpy(l2.h.h_source, fib.smac, ETH_ALEN);
	l2.h.h_proto = be->family == XLB_AF_INET ? bpf_htons(ETH_P_IP)
						 : bpf_htons(ETH_P_IPV6);
	nh->eth[0] = l2.w[0];
	nh->eth[1] = l2.w[1];
	return 0;
}

/*
 * The next hop for an outer packet of tot_len bytes: *nhp points to this
 * CPU's cache entry, used in place (a copy would be read back in pieces
 * that the CPU cannot forward from its store buffer). Every backend id
 * has an entry: the cache and xlb_backends have XLB_MAX_BACKENDS each.
 */
XLB_INLINE int xlb_nexthop(struct xdp_md *ctx, __u32 backend_id,
			   const struct xlb_backend *be,
			   const struct xlb_config *cfg, __u32 tot_len,
			   __u8 inner_family, __u8 tos, __u64 now,
			   const struct xlb_nexthop **nhp)
{
	struct xlb_fib_cache_entry *c;
	int err;

	c = bpf_map_lookup_elem(&xlb_fib_cache, &backend_id);
	if (!c)
		return -XLB_STAT_DROP_FIB_FAILED;
	*nhp = &c->nh;
	if (c->expires_ns > now && c->gen == be->gen &&
	    c->ingress_ifindex == ctx->ingress_ifindex)
		return tot_len > c->nh.mtu ? -XLB_STAT_DROP_TOO_BIG : 0;
	/* A failed lookup leaves the entry expired: it is asked again. */
	c->expires_ns = 0;
	err = xlb_fib_lookup(ctx, be, cfg, tot_len, inner_family, tos, &c->nh);
	if (!err) {
		c->gen = be->gen;
		c->ingress_ifindex = ctx->ingress_ifindex;
		c->expires_ns = now + XLB_FIB_CACHE_NS;
	}
	return err;
}

#endif /* XLB_BPF_FIB_H */
