/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Encapsulation for direct server return. The received IP packet, unchanged,
 * goes inside one outer header to the backend, which decapsulates it with a
 * standard ipip/ip6tnl device and answers the client directly:
 *   IPv4 backend: outer IPv4, protocol 4 (IPv4 inside) or 41 (IPv6 inside)
 *   IPv6 backend: outer IPv6, next header 4 or 41
 * VLAN tags of the received frame are not carried over: the frame leaves
 * through the interface the FIB chose, with a plain Ethernet header.
 */
#ifndef XLB_BPF_ENCAP_H
#define XLB_BPF_ENCAP_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>
#include "xlb.h"
#include "csum.h"
#include "fib.h"
#include "parse.h"
#include "stats.h"

#define XLB_OUTER_TTL		64
#define XLB_IP_DF		0x4000

/* Bytes the outer header adds for a backend of this family. */
XLB_INLINE __u32 xlb_outer_len(const struct xlb_backend *be)
{
	return be->family == XLB_AF_INET ? sizeof(struct iphdr)
					 : sizeof(struct ipv6hdr);
}

/* The outer source address of the backend's family is configured. */
XLB_INLINE bool xlb_outer_source_ok(const struct xlb_backend *be,
				    const struct xlb_config *cfg)
{
	if (be->family == XLB_AF_INET)
		return cfg->src4 != 0;
	return (cfg->src6[0] | cfg->src6[1] | cfg->src6[2] | cfg->src6[3]) != 0;
}

XLB_INLINE __u8 xlb_inner_proto(const struct xlb_pkt *pkt)
{
	return pkt->flow.family == XLB_AF_INET ? IPPROTO_IPIP : IPPROTO_IPV6;
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
XLB_INLINE void xlb_write_ipv4(struct iphdr *iph, const struct xlb_pkt *pkt,
			       const struct xlb_backend *be,
			       const struct xlb_config *cfg)
{
	__u32 *w = (__u32 *)iph;
	__u32 w0, w1, w2;

	/* version 4, IHL 5, TOS, total length | ID 0, DF | TTL, protocol,
	 * checksum 0: in network order, as they lie in the packet. */
	w0 = bpf_htonl(0x45U << 24 | (__u32)pkt->tos << 16 |
		       (pkt->l3_len + sizeof(*iph)));
	w1 = bpf_htonl(XLB_IP_DF);
	w2 = bpf_htonl((__u32)XLB_OUTER_TTL << 24 | (__u32)xlb_inner_proto(pkt) << 16);
	w[0] = w0;
	w[1] = w1;
	w[2] = w2;
	w[3] = cfg->src4;
	w[4] = be->addr[0];
	iph->check = xlb_csum_fold((__u64)w0 + w1 + w2 + cfg->src4 + be->addr[0]);
}

/* Outer IPv6: traffic class copied, flow label from the flow hash so
 * routers between balancer and backend spread flows over equal paths. */
XLB_INLINE void xlb_write_ipv6(struct ipv6hdr *ip6h, const struct xlb_pkt *pkt,
			       const struct xlb_backend *be,
			       const struct xlb_config *cfg, __u64 hash)
{
	*(__be32 *)ip6h = bpf_htonl(6U << 28 | (__u32)pkt->tos << 20 |
				    ((__u32)hash & 0xfffff));
	ip6h->payload_len = bpf_htons(pkt->l3_len);
	ip6h->nexthdr = xlb_inner_proto(pkt);
	ip6h->hop_limit = XLB_OUTER_TTL;
	__builtin_memcpy(&ip6h->saddr, cfg->src6, sizeof(ip6h->saddr));
	__builtin_memcpy(&ip6h->daddr, be->addr, sizeof(ip6h->daddr));
}

/*
 * Replace the L2 header (and VLAN tags) by Ethernet + outer IP header. The
 * next hop holds the Ethernet header as two words; the second one's last
 * two bytes land where the IP header goes, which is written after it.
 */
XLB_INLINE int xlb_encap(struct xdp_md *ctx, const struct xlb_pkt *pkt,
			 const struct xlb_backend *be,
			 const struct xlb_config *cfg,
			 const struct xlb_nexthop *nh, __u64 hash)
{
	int delta = xlb_outer_len(be) - (pkt->l3_off - sizeof(struct ethhdr));
	/* Bytes after the IP packet: Ethernet's padding of short frames, or
	 * trailing bytes a sender added. They are no part of the packet and
	 * would make the outer one longer than its header says (and than the
	 * MTU checked for it): cut them. */
	__u64 len = xlb_frame_len(ctx), ip_end = pkt->l3_off + pkt->l3_len;
	void *data, *end;
	xlb_word *eth;

	if (len > ip_end && bpf_xdp_adjust_tail(ctx, -(int)(len - ip_end)))
		return -XLB_STAT_DROP_ENCAP_FAILED;
	if (bpf_xdp_adjust_head(ctx, -delta))
		return -XLB_STAT_DROP_ENCAP_FAILED;
	data = (void *)(long)ctx->data;
	end = (void *)(long)ctx->data_end;
	eth = data;
	if ((void *)(eth + 2) > end)
		return -XLB_STAT_DROP_ENCAP_FAILED;
	eth[0] = nh->eth[0];
	eth[1] = nh->eth[1];
	if (be->family == XLB_AF_INET) {
		struct iphdr *iph = data + sizeof(struct ethhdr);

		if ((void *)(iph + 1) > end)
			return -XLB_STAT_DROP_ENCAP_FAILED;
		xlb_write_ipv4(iph, pkt, be, cfg);
	} else {
		struct ipv6hdr *ip6h = data + sizeof(struct ethhdr);

		if ((void *)(ip6h + 1) > end)
			return -XLB_STAT_DROP_ENCAP_FAILED;
		xlb_write_ipv6(ip6h, pkt, be, cfg, hash);
	}
	return 0;
}

#endif /* XLB_BPF_ENCAP_H */
