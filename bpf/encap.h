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
#include "encap_hdr.h"
#include "fib.h"
#include "parse.h"
#include "stats.h"

/* The outer IP, UDP and GUE headers, after the Ethernet header at data. */
XLB_INLINE int xlb_encap_gue(void *data, void *end, const struct xlb_pkt *pkt,
			     const struct xlb_backend *be,
			     const struct xlb_config *cfg,
			     const struct xlb_hist_entry *prev, __u64 hash)
{
	__u32 payload = pkt->l3_len + XLB_GUE_OVERHEAD;
	struct udphdr *udp;

	if (be->family == XLB_AF_INET) {
		struct iphdr *iph = data + sizeof(struct ethhdr);

		udp = (struct udphdr *)(iph + 1);
		if ((void *)udp + XLB_GUE_OVERHEAD > end)
			return -XLB_STAT_DROP_ENCAP_FAILED;
		xlb_write_ipv4_proto(iph, payload, pkt->tos, IPPROTO_UDP, be,
				     cfg);
	} else {
		struct ipv6hdr *ip6h = data + sizeof(struct ethhdr);

		udp = (struct udphdr *)(ip6h + 1);
		if ((void *)udp + XLB_GUE_OVERHEAD > end)
			return -XLB_STAT_DROP_ENCAP_FAILED;
		xlb_write_ipv6_proto(ip6h, payload, pkt->tos, IPPROTO_UDP, be,
				     cfg, hash);
	}
	xlb_write_gue(udp, pkt->l3_len, pkt->flow.family, cfg, prev, hash);
	return 0;
}

/*
 * Replace the L2 header (and VLAN tags) by Ethernet + outer IP header (and
 * UDP + GUE for a GUE backend, naming prev). The next hop holds the
 * Ethernet header as two words; the second one's last two bytes land where
 * the IP header goes, which is written after it.
 */
XLB_INLINE int xlb_encap(struct xdp_md *ctx, const struct xlb_pkt *pkt,
			 const struct xlb_backend *be,
			 const struct xlb_config *cfg,
			 const struct xlb_nexthop *nh,
			 const struct xlb_hist_entry *prev, __u64 hash)
{
	int delta = xlb_outer_len(be) - (pkt->l3_off - sizeof(struct ethhdr));
	/* Bytes after the IP packet: Ethernet's padding of short frames, or
	 * trailing bytes a sender added. They are no part of the packet and
	 * would make the outer one longer than its header says (and than the
	 * MTU checked for it): cut them. */
	__u64 len = xlb_frame_len(ctx), ip_end = pkt->l3_off + pkt->l3_len;
	void *data, *end;
	xlb_word *eth;

	/* A frame of several buffers (a jumbo frame) is longer than its
	 * first. */
	if (len < ip_end)
		len = bpf_xdp_get_buff_len(ctx);
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
	/* IPIP is the expected path; GUE is laid out as the unlikely one. */
	if (__builtin_expect(be->flags & XLB_BE_F_GUE, 0))
		return xlb_encap_gue(data, end, pkt, be, cfg, prev, hash);
	if (be->family == XLB_AF_INET) {
		struct iphdr *iph = data + sizeof(struct ethhdr);

		if ((void *)(iph + 1) > end)
			return -XLB_STAT_DROP_ENCAP_FAILED;
		xlb_write_ipv4(iph, pkt->l3_len, pkt->tos, pkt->flow.family,
			       be, cfg);
	} else {
		struct ipv6hdr *ip6h = data + sizeof(struct ethhdr);

		if ((void *)(ip6h + 1) > end)
			return -XLB_STAT_DROP_ENCAP_FAILED;
		xlb_write_ipv6(ip6h, pkt->l3_len, pkt->tos, pkt->flow.family,
			       be, cfg, hash);
	}
	return 0;
}

#endif /* XLB_BPF_ENCAP_H */
