/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Ping of a VIP, answered: an ICMP or ICMPv6 echo request to a VIP
 * address is turned, in place, into its echo reply and sent back out of
 * the interface it came in by. `ping VIP` is what operators and monitors
 * try first; the kernel of the balancer does not own the address, so
 * without this the request would only be dropped.
 *
 * - Only while a VIP of the address answers ping (the default; `xlb vip
 *   set VIP --ping off`): xlb_vip_addrs counts its VIPs that do not.
 * - The reply is the request with addresses and MACs swapped, TTL (hop
 *   limit) 64, type echo reply, the checksums updated for the words that
 *   changed (RFC 1624): identifier, sequence and data stay, so a jumbo
 *   request's data beyond the first buffer is never read.
 * - Never to a multicast, broadcast, unspecified or loopback source, nor
 *   for a frame sent to a group MAC address, a fragment, an IPv4 request
 *   with options or an IPv6 request behind extension headers: those, and
 *   echo replies sent to a VIP, are dropped as drop_vip_port, as before.
 * - At most icmp_rate replies a second on each CPU, a bucket of their own
 *   (bpf/icmp.h): the rest are dropped, counted drop_echo_rate.
 * A reply counts icmp_echo_reply.
 */
#ifndef XLB_BPF_ICMP_ECHO_H
#define XLB_BPF_ICMP_ECHO_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "xlb.h"
#include "clock.h"
#include "icmp.h"
#include "parse.h"

/* A 16-bit checksum with one 16-bit word of what it covers changed from
 * old to new (RFC 1624, eqn. 3); all three as they lie in the packet. */
XLB_INLINE __u16 xlb_csum_replace(__u16 check, __u16 old, __u16 new)
{
	__u32 s = (__u16)~check + (__u16)~old + new;

	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	return (__u16)~s;
}

XLB_INLINE void xlb_swap_macs(void *data)
{
	__u8 mac[ETH_ALEN];

	__builtin_memcpy(mac, data, ETH_ALEN);
	__builtin_memcpy(data, data + ETH_ALEN, ETH_ALEN);
	__builtin_memcpy(data + ETH_ALEN, mac, ETH_ALEN);
}

/*
 * pkt, an echo request or reply to a VIP address (the parser said
 * pass_icmp_echo): -XLB_STAT_ICMP_ECHO_REPLY with the frame made the
 * reply, -XLB_STAT_DROP_ECHO_RATE, or -XLB_STAT_DROP_VIP_PORT.
 */
XLB_INLINE int xlb_icmp_echo(struct xdp_md *ctx, const struct xlb_pkt *pkt)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	const struct xlb_config *cfg;
	struct xlb_icmp_hdr *ic;
	__u32 l3 = pkt->l3_off, zero = 0;
	__u16 old;

	/* A frame sent to a group: its reply would come from the group's
	 * address. */
	if (pkt->frag || l3 > XLB_L2_MAX || data + ETH_HLEN > end ||
	    *(__u8 *)data & 1)
		return -XLB_STAT_DROP_VIP_PORT;
	if (pkt->flow.family == XLB_AF_INET) {
		struct iphdr *ip = data + xlb_l2_len(l3);

		/* Options (a source or record route) would need answering
		 * in kind: not answered. */
		if ((void *)(ip + 1) > end || ip->ihl != 5)
			return -XLB_STAT_DROP_VIP_PORT;
		ic = (void *)(ip + 1);
		if ((void *)(ic + 1) > end || ic->type != XLB_ICMP_ECHO ||
		    !xlb_icmp_src_ok4(pkt->flow.src[0]))
			return -XLB_STAT_DROP_VIP_PORT;
	} else {
		struct ipv6hdr *ip6 = data + xlb_l2_len(l3);

		ic = (void *)(ip6 + 1);
		if ((void *)(ic + 1) > end || ip6->nexthdr != IPPROTO_ICMPV6 ||
		    ic->type != XLB_ICMP6_ECHO_REQUEST ||
		    !xlb_icmp_src_ok6(pkt->flow.src))
			return -XLB_STAT_DROP_VIP_PORT;
	}
	cfg = bpf_map_lookup_elem(&xlb_config, &zero);
	if (!cfg || !xlb_icmp_token(cfg, xlb_now(), XLB_ICMP_BUCKET_ECHO))
		return -XLB_STAT_DROP_ECHO_RATE;

	/* The headers again, for the verifier (they passed above): each
	 * check comes before the first write, so a drop leaves the frame
	 * as it came. */
	if (pkt->flow.family == XLB_AF_INET) {
		struct iphdr *ip = data + xlb_l2_len(l3);

		ic = (void *)(ip + 1);
		if ((void *)(ic + 1) > end)
			return -XLB_STAT_DROP_VIP_PORT;
		/* TTL shares a checksummed word with the protocol. */
		old = *(__u16 *)&ip->ttl;
		ip->ttl = XLB_ICMP_TTL;
		ip->check = xlb_csum_replace(ip->check, old, *(__u16 *)&ip->ttl);
		/* A swap leaves the header's sum as it was. */
		ip->saddr = pkt->flow.dst[0];
		ip->daddr = pkt->flow.src[0];
		old = *(__u16 *)ic;
		ic->type = XLB_ICMP_ECHOREPLY;
	} else {
		struct ipv6hdr *ip6 = data + xlb_l2_len(l3);

		ic = (void *)(ip6 + 1);
		if ((void *)(ic + 1) > end)
			return -XLB_STAT_DROP_VIP_PORT;
		ip6->hop_limit = XLB_ICMP_TTL;
		/* ICMPv6's pseudo-header sums both addresses: a swap leaves
		 * it as it was. */
		__builtin_memcpy(&ip6->saddr, pkt->flow.dst, 16);
		__builtin_memcpy(&ip6->daddr, pkt->flow.src, 16);
		old = *(__u16 *)ic;
		ic->type = XLB_ICMP6_ECHO_REPLY;
	}
	ic->checksum = xlb_csum_replace(ic->checksum, old, *(__u16 *)ic);
	xlb_swap_macs(data);
	return -XLB_STAT_ICMP_ECHO_REPLY;
}

#endif /* XLB_BPF_ICMP_ECHO_H */
