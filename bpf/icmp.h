/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Too big, answered: a client's packet that will not fit the route to its
 * backend once encapsulated is turned, in place, into the ICMP error that
 * tells the client's TCP (or its application) a smaller size, and sent
 * back out of the interface it came in by. Dropped alone, the client,
 * never told, would send it again for good: a path-MTU black hole.
 *
 * - IPv4: "fragmentation needed" (type 3, code 4, RFC 792 and 1191) when
 *   the packet has DF set; its next-hop MTU is the route's less the
 *   encapsulation. Without DF the sender allows fragmenting, which XDP
 *   cannot do: such a packet is dropped, counted drop_too_big (a sender
 *   without DF does no path-MTU discovery, and an answer would not help
 *   it).
 * - IPv6: "packet too big" (type 2, RFC 4443), its MTU never below 1280.
 * - From the VIP's address to the client, TTL (hop limit) 64, quoting the
 *   start of the packet: up to 548 bytes of it for IPv4 (an answer of 576
 *   bytes, RFC 1812 4.3.2.3), 1232 for IPv6 (an answer of 1280, RFC 4443
 *   2.4), in whole 32-bit words.
 * - Never in answer to an ICMP message, to a fragment (a later one has
 *   no ports; the first one's answer would not cover the rest), or to a
 *   packet from a multicast, broadcast, unspecified or loopback address
 *   (RFC 1122 3.2.2, RFC 4443 2.4): those are dropped, drop_too_big.
 * - At most icmp_rate answers a second on each CPU (a token bucket that
 *   holds a tenth of a second's worth), so that a flood of big packets is
 *   not reflected at the rate it comes: the rest are dropped, counted
 *   drop_too_big.
 * An answer counts icmp_too_big, and the packet it replaces nothing else.
 */
#ifndef XLB_BPF_ICMP_H
#define XLB_BPF_ICMP_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "xlb.h"
#include "csum.h"
#include "parse.h"

#define XLB_IP_DF		0x4000
#define XLB_ICMP_FRAG_NEEDED	4
#define XLB_ICMP4_QUOTE_MAX	548
#define XLB_ICMP6_QUOTE_MAX	1232
#define XLB_IPV6_MIN_MTU	1280
#define XLB_ICMP_TTL		64
/* The Ethernet header and VLAN tags are moved as one block this long
 * (two tags' worth), whatever the frame has. */
#define XLB_L2_MAX		22
/* A power of two less one, at least XLB_L2_MAX: the mask xlb_l2_len()
 * bounds an offset with. */
#define XLB_L2_MASK		31
_Static_assert(XLB_L2_MASK >= XLB_L2_MAX && !((XLB_L2_MASK + 1) & XLB_L2_MASK),
	       "XLB_L2_MASK covers XLB_L2_MAX");

/* l3, checked against XLB_L2_MAX before, bounded again where the verifier
 * sees it: the compiler may keep the checked copy in another register or
 * spill it, and Linux 6.1's verifier then loses the bound (a packet
 * pointer plus an unbounded offset is refused). */
XLB_INLINE __u32 xlb_l2_len(__u32 l3)
{
	asm volatile("" : "+r"(l3));
	return l3 & XLB_L2_MASK;
}

/* Which bucket of each CPU's: the too-big answers', the echo replies'
 * (bpf/icmp_echo.h), so that a ping flood cannot silence the answers
 * path-MTU discovery needs. */
enum xlb_icmp_kind {
	XLB_ICMP_BUCKET_TOO_BIG,
	XLB_ICMP_BUCKET_ECHO,
	XLB_ICMP_BUCKETS,
};

/* The buckets of each CPU: per program, not part of an instance. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XLB_ICMP_BUCKETS);
	__type(key, __u32);
	__type(value, struct xlb_icmp_bucket);
} xlb_icmp_bucket SEC(".maps");

/* Take a token of this CPU's bucket of that kind; false when it is
 * empty. */
XLB_INLINE bool xlb_icmp_token(const struct xlb_config *cfg, __u64 now,
			       enum xlb_icmp_kind kind)
{
	__u64 rate = cfg->icmp_rate ?: XLB_ICMP_RATE_DEFAULT;
	__u64 cap = rate / 10 + 1, elapsed, add;
	struct xlb_icmp_bucket *b;
	__u32 key = kind;

	b = bpf_map_lookup_elem(&xlb_icmp_bucket, &key);
	if (!b)
		return false;
	/* A second's worth at most: no overflow, and the bucket is full. */
	elapsed = now - b->last_ns;
	if (elapsed > 1000000000ULL)
		elapsed = 1000000000ULL;
	add = elapsed * rate / 1000000000ULL;
	if (add) {
		b->tokens = b->tokens + add > cap ? cap : b->tokens + add;
		b->last_ns = now;
	}
	if (!b->tokens)
		return false;
	b->tokens--;
	return true;
}

/* May a client at this address be answered? */
XLB_INLINE bool xlb_icmp_src_ok4(__be32 a)
{
	__u32 h = bpf_ntohl(a);

	return h && h != 0xffffffff && (h >> 28) != 0xe && (h >> 24) != 127;
}

XLB_INLINE bool xlb_icmp_src_ok6(const __be32 *a)
{
	if ((bpf_ntohl(a[0]) >> 24) == 0xff)
		return false;
	return a[0] || a[1] || a[2] || (a[3] && a[3] != bpf_htonl(1));
}

/* The sum of the 32-bit words from p to end, at most max of them. */
XLB_INLINE __u64 xlb_icmp_sum(void *p, void *end, int max)
{
	__u64 s = 0;
	int i;

#pragma clang loop unroll(disable)
	for (i = 0; i < max; i++) {
		if (p + 4 > end)
			break;
		s += *(__u32 *)p;
		p += 4;
	}
	return s;
}

/*
 * Answer pkt, which does not fit the route of mtu bytes less overhead
 * (the encapsulation) towards its backend: -XLB_STAT_ICMP_TOO_BIG with
 * the frame made the answer (sent back, XDP_TX), or -XLB_STAT_DROP_TOO_BIG.
 */
XLB_INLINE int xlb_icmp_too_big(struct xdp_md *ctx, const struct xlb_pkt *pkt,
				const struct xlb_config *cfg, __u32 mtu,
				__u32 overhead, __u64 now)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	bool v6 = pkt->flow.family == XLB_AF_INET6;
	__u32 l3 = pkt->l3_off, q, hl;
	struct xlb_icmp_hdr *ic;
	__u8 mac[ETH_ALEN];
	__u64 sum;

	if (pkt->icmp_error || pkt->frag || l3 > XLB_L2_MAX)
		return -XLB_STAT_DROP_TOO_BIG;
	mtu = mtu > overhead ? mtu - overhead : 0;
	if (!v6) {
		struct iphdr *iph = data + xlb_l2_len(l3);

		if ((void *)(iph + 1) > end ||
		    !(iph->frag_off & bpf_htons(XLB_IP_DF)) ||
		    !xlb_icmp_src_ok4(pkt->flow.src[0]))
			return -XLB_STAT_DROP_TOO_BIG;
		q = pkt->l3_len < XLB_ICMP4_QUOTE_MAX ? pkt->l3_len :
							XLB_ICMP4_QUOTE_MAX;
		hl = sizeof(struct iphdr) + sizeof(*ic);
	} else {
		if (!xlb_icmp_src_ok6(pkt->flow.src))
			return -XLB_STAT_DROP_TOO_BIG;
		q = pkt->l3_len < XLB_ICMP6_QUOTE_MAX ? pkt->l3_len :
							XLB_ICMP6_QUOTE_MAX;
		hl = sizeof(struct ipv6hdr) + sizeof(*ic);
		if (mtu < XLB_IPV6_MIN_MTU)
			mtu = XLB_IPV6_MIN_MTU;
	}
	q &= ~3U;
	if (!xlb_icmp_token(cfg, now, XLB_ICMP_BUCKET_TOO_BIG))
		return -XLB_STAT_DROP_TOO_BIG;

	/* The frame cut to its headers and the quote, then room made in
	 * front for the answer's IP and ICMP headers. */
	if (bpf_xdp_adjust_tail(ctx, (int)(l3 + q) -
				     (int)bpf_xdp_get_buff_len(ctx)) ||
	    bpf_xdp_adjust_head(ctx, -(int)hl))
		return -XLB_STAT_DROP_TOO_BIG;
	data = (void *)(long)ctx->data;
	end = (void *)(long)ctx->data_end;
	if (data + hl + XLB_L2_MAX > end)
		return -XLB_STAT_DROP_TOO_BIG;
	/* Ethernet and VLAN headers to the front, MACs swapped: back to
	 * whoever sent it, from the interface it came in by. */
	__builtin_memcpy(data, data + hl, XLB_L2_MAX);
	__builtin_memcpy(mac, data, ETH_ALEN);
	__builtin_memcpy(data, data + ETH_ALEN, ETH_ALEN);
	__builtin_memcpy(data + ETH_ALEN, mac, ETH_ALEN);

	if (!v6) {
		struct iphdr *ip = data + xlb_l2_len(l3);

		ic = (void *)(ip + 1);
		if ((void *)(ic + 1) > end)
			return -XLB_STAT_DROP_TOO_BIG;
		ip->version = 4;
		ip->ihl = 5;
		ip->tos = 0;
		ip->tot_len = bpf_htons(hl + q);
		ip->id = 0;
		ip->frag_off = 0;
		ip->ttl = XLB_ICMP_TTL;
		ip->protocol = IPPROTO_ICMP;
		ip->check = 0;
		ip->saddr = pkt->flow.dst[0];
		ip->daddr = pkt->flow.src[0];
		ip->check = xlb_csum_fold(xlb_csum_words5(ip));
		ic->type = XLB_ICMP_DEST_UNREACH;
		ic->code = XLB_ICMP_FRAG_NEEDED;
		ic->checksum = 0;
		ic->rest = bpf_htonl(mtu & 0xffff);
		sum = xlb_icmp_sum(ic, end,
				   (sizeof(*ic) + XLB_ICMP4_QUOTE_MAX) / 4);
	} else {
		struct ipv6hdr *ip6 = data + xlb_l2_len(l3);

		ic = (void *)(ip6 + 1);
		if ((void *)(ic + 1) > end)
			return -XLB_STAT_DROP_TOO_BIG;
		*(__be32 *)ip6 = bpf_htonl(6U << 28);
		ip6->payload_len = bpf_htons(sizeof(*ic) + q);
		ip6->nexthdr = IPPROTO_ICMPV6;
		ip6->hop_limit = XLB_ICMP_TTL;
		__builtin_memcpy(&ip6->saddr, pkt->flow.dst, 16);
		__builtin_memcpy(&ip6->daddr, pkt->flow.src, 16);
		ic->type = XLB_ICMP6_PKT_TOOBIG;
		ic->code = 0;
		ic->checksum = 0;
		ic->rest = bpf_htonl(mtu);
		/* The pseudo-header: addresses, length, next header. */
		sum = (__u64)pkt->flow.src[0] + pkt->flow.src[1] +
		      pkt->flow.src[2] + pkt->flow.src[3] +
		      pkt->flow.dst[0] + pkt->flow.dst[1] +
		      pkt->flow.dst[2] + pkt->flow.dst[3] +
		      bpf_htonl(sizeof(*ic) + q) + bpf_htonl(IPPROTO_ICMPV6);
		sum += xlb_icmp_sum(ic, end,
				    (sizeof(*ic) + XLB_ICMP6_QUOTE_MAX) / 4);
	}
	ic->checksum = xlb_csum_fold(sum);
	return -XLB_STAT_ICMP_TOO_BIG;
}

#endif /* XLB_BPF_ICMP_H */
