/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The outer header of direct server return, one way for every program
 * that writes it: the XDP datapath (bpf/encap.h) and the health probes'
 * LWT program (bpf/hc.bpf.c), so a probe reaches a backend in exactly
 * the header client traffic does. Plain inputs only, no packet context and
 * no maps: inner_len is the length of the IP packet carried, tos its IPv4
 * TOS or IPv6 traffic class, inner_family its enum xlb_family.
 *
 * A backend of a GUE VIP (XLB_BE_F_GUE) gets a UDP header and GUE's
 * (include/gue.h) after the outer IP header, from either program.
 */
#ifndef XLB_BPF_ENCAP_HDR_H
#define XLB_BPF_ENCAP_HDR_H

#include <stdbool.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <bpf/bpf_endian.h>
#include <linux/udp.h>
#include "xlb.h"
#include "gue.h"
#include "compiler.h"
#include "csum.h"

#define XLB_OUTER_TTL		64
#define XLB_IP_DF		0x4000

/* Bytes UDP and GUE add after the outer IP header. */
#define XLB_GUE_OVERHEAD	(sizeof(struct udphdr) + sizeof(struct xlb_gue))

/* Bytes the outer headers add for this backend. */
XLB_INLINE __u32 xlb_outer_len(const struct xlb_backend *be)
{
	return (be->family == XLB_AF_INET ? sizeof(struct iphdr)
					  : sizeof(struct ipv6hdr)) +
	       (be->flags & XLB_BE_F_GUE ? XLB_GUE_OVERHEAD : 0);
}

/* The outer source address of the backend's family is configured. */
XLB_INLINE bool xlb_outer_source_ok(const struct xlb_backend *be,
				    const struct xlb_config *cfg)
{
	if (be->family == XLB_AF_INET)
		return cfg->src4 != 0;
	return (cfg->src6[0] | cfg->src6[1] | cfg->src6[2] | cfg->src6[3]) != 0;
}

/* The outer header's protocol: what it carries (enum xlb_family). */
XLB_INLINE __u8 xlb_inner_proto(__u8 inner_family)
{
	return inner_family == XLB_AF_INET ? IPPROTO_IPIP : IPPROTO_IPV6;
}

/*
 * Outer IPv4: DF set (the MTU was checked against the route; with DF the
 * zero IP ID is valid, RFC 6864), TOS copied from the inner packet.
 *
 * The header is made as five 32-bit words in registers, the checksum
 * summed from them, then stored: summing it back from the packet would
 * read words just written in smaller pieces, which the CPU cannot forward
 * from its store buffer and stalls on.
 */
XLB_INLINE void xlb_write_ipv4_proto(struct iphdr *iph, __u32 payload_len,
				     __u8 tos, __u8 proto,
				     const struct xlb_backend *be,
				     const struct xlb_config *cfg)
{
	__u32 *w = (__u32 *)iph;
	__u32 w0, w1, w2;

	/* version 4, IHL 5, TOS, total length | ID 0, DF | TTL, protocol,
	 * checksum 0: in network order, as they lie in the packet. */
	w0 = bpf_htonl(0x45U << 24 | (__u32)tos << 16 |
		       (payload_len + sizeof(*iph)));
	w1 = bpf_htonl(XLB_IP_DF);
	w2 = bpf_htonl((__u32)XLB_OUTER_TTL << 24 | (__u32)proto << 16);
	w[0] = w0;
	w[1] = w1;
	w[2] = w2;
	w[3] = cfg->src4;
	w[4] = be->addr[0];
	iph->check = xlb_csum_fold((__u64)w0 + w1 + w2 + cfg->src4 + be->addr[0]);
}

/* The IP packet right behind the outer IPv4 header (IPIP, IPv6-in-IP). */
XLB_INLINE void xlb_write_ipv4(struct iphdr *iph, __u32 inner_len, __u8 tos,
			       __u8 inner_family, const struct xlb_backend *be,
			       const struct xlb_config *cfg)
{
	xlb_write_ipv4_proto(iph, inner_len, tos, xlb_inner_proto(inner_family),
			     be, cfg);
}

/* Outer IPv6: traffic class copied, flow label from the flow's hash so
 * routers between balancer and backend spread flows over equal paths. */
XLB_INLINE void xlb_write_ipv6_proto(struct ipv6hdr *ip6h, __u32 payload_len,
				     __u8 tos, __u8 proto,
				     const struct xlb_backend *be,
				     const struct xlb_config *cfg, __u64 hash)
{
	*(__be32 *)ip6h = bpf_htonl(6U << 28 | (__u32)tos << 20 |
				    ((__u32)hash & 0xfffff));
	ip6h->payload_len = bpf_htons(payload_len);
	ip6h->nexthdr = proto;
	ip6h->hop_limit = XLB_OUTER_TTL;
	__builtin_memcpy(&ip6h->saddr, cfg->src6, sizeof(ip6h->saddr));
	__builtin_memcpy(&ip6h->daddr, be->addr, sizeof(ip6h->daddr));
}

XLB_INLINE void xlb_write_ipv6(struct ipv6hdr *ip6h, __u32 inner_len, __u8 tos,
			       __u8 inner_family, const struct xlb_backend *be,
			       const struct xlb_config *cfg, __u64 hash)
{
	xlb_write_ipv6_proto(ip6h, inner_len, tos, xlb_inner_proto(inner_family),
			     be, cfg, hash);
}

/*
 * UDP and GUE after the outer IP header. The UDP source port is taken
 * from the flow hash, in the ephemeral range (49152-65535), so that a
 * backend's NIC spreads flows over its queues as it would plain traffic.
 * The UDP checksum is 0, none: IPv4 allows it (RFC 768); over IPv6 it
 * is allowed for tunnels (RFC 6935, RFC 6936) and Linux's fou and
 * decap.bpf.c accept it; the inner packet carries its own checksums.
 * The GUE field names prev, the slot's previous owner (NULL: none, as
 * for every tracked VIP's packet).
 */
XLB_INLINE void xlb_write_gue(struct udphdr *udp, __u32 inner_len,
			      __u8 inner_family, const struct xlb_config *cfg,
			      const struct xlb_hist_entry *prev, __u64 hash)
{
	struct xlb_gue *g = (struct xlb_gue *)(udp + 1);
	__u32 *w = (__u32 *)udp;

	udp->source = bpf_htons(0xc000 | ((__u32)(hash >> 32) & 0x3fff));
	udp->dest = cfg->gue_port ?: bpf_htons(XLB_GUE_DEFAULT_PORT);
	w[1] = bpf_htonl((inner_len + XLB_GUE_OVERHEAD) << 16);
	/* hlen, proto, flags 0 | magic, hops 0, family, pad */
	w[2] = bpf_htonl(XLB_GUE_HLEN << 24 |
			 (__u32)xlb_inner_proto(inner_family) << 16);
	g->priv.magic = XLB_GUE_PRIV_MAGIC;
	g->priv.hops = 0;
	g->priv.pad = 0;
	if (prev) {
		g->priv.family = prev->family;
		__builtin_memcpy(g->priv.prev, prev->addr, sizeof(g->priv.prev));
	} else {
		g->priv.family = XLB_AF_NONE;
		__builtin_memset(g->priv.prev, 0, sizeof(g->priv.prev));
	}
}

#endif /* XLB_BPF_ENCAP_HDR_H */
