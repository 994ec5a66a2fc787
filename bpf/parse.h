/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Parsing: from the Ethernet header to the flow xlb balances on.
 *
 * - Ethernet, then at most two VLAN tags (802.1Q / 802.1ad); any other
 *   EtherType, or a third tag, is not IP for xlb and goes to the kernel.
 * - A header xlb must read that is cut short or inconsistent makes the
 *   packet malformed, and it is dropped: an IPv4 header with a wrong
 *   version, IHL, total length or checksum, an IPv6 payload length beyond
 *   the frame, an extension header running past the payload, a TCP or UDP
 *   header that does not fit, an ICMP error quoting too little. The kernel
 *   discards such packets as well.
 * - IPv4 and IPv6 fragments, first or later, carry no ports for xlb: the
 *   flow is (source, destination, protocol) with ports 0, so every fragment
 *   of a datagram hashes alike; the VIP they are looked up under is the one
 *   with port 0 (see select.h).
 * - ICMP errors (destination unreachable, packet too big, time exceeded,
 *   parameter problem) quote a packet that went from a VIP to a client; the
 *   flow is that packet reversed, so the error reaches the backend serving
 *   the client. ICMP echo is never balanced.
 * - A packet xlb does not balance still has its destination and family
 *   in the flow: one to a VIP address is dropped, not passed (select.h).
 * Every read is preceded by a bounds check against the end of the first
 * buffer, where the headers must be; lengths are also checked against the
 * IP packet's own length, so Ethernet padding is never taken for headers.
 * A frame of several buffers (multi-buffer XDP: jumbo frames) holds the
 * rest of the packet beyond the first (xlb_frame_holds()).
 */
#ifndef XLB_BPF_PARSE_H
#define XLB_BPF_PARSE_H

#include <stdbool.h>
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include "xlb.h"
#include "csum.h"

#define XLB_VLAN_MAX		2
#define XLB_IPV6_EXT_MAX	4	/* extension headers walked before the
					 * transport header */
#define XLB_IP_MF		0x2000
#define XLB_IP_OFFSET		0x1fff
#define XLB_IP6_MF		0x0001
#define XLB_IP6_OFFSET		0xfff8

/* ICMP message types (linux/icmp.h pulls in libc headers unusable here). */
#define XLB_ICMP_ECHOREPLY	0
#define XLB_ICMP_DEST_UNREACH	3
#define XLB_ICMP_ECHO		8
#define XLB_ICMP_TIME_EXCEEDED	11
#define XLB_ICMP_PARAMETERPROB	12
#define XLB_ICMP6_DEST_UNREACH	1
#define XLB_ICMP6_PKT_TOOBIG	2
#define XLB_ICMP6_TIME_EXCEED	3
#define XLB_ICMP6_PARAMPROB	4
#define XLB_ICMP6_ECHO_REQUEST	128
#define XLB_ICMP6_ECHO_REPLY	129

/* What parsing hands to the later stages. */
struct xlb_pkt {
	struct xlb_flow flow;
	__u32 l3_off;		/* IP header offset in the frame (after VLAN tags) */
	__u32 l3_len;		/* IP packet length: what gets encapsulated */
	__u8 tos;		/* IPv4 TOS / IPv6 traffic class, kept in the outer header */
	__u8 tcp_flags;		/* of a TCP packet (byte 13: FIN 0x01, SYN 0x02, RST 0x04, ACK 0x10) */
	__u8 icmp_error;	/* the flow is the one an ICMP error quotes */
	__u8 frag;		/* an IPv4 or IPv6 fragment, first or later */
};

struct xlb_vlan_hdr {
	__be16 tci;
	__be16 proto;
};

struct xlb_ipv6_frag_hdr {
	__u8 nexthdr;
	__u8 reserved;
	__be16 frag_off;	/* offset in 8-byte units << 3 | M flag */
	__be32 id;
};

/* ICMP and ICMPv6 share this 8-byte header; an error quotes the offending
 * packet right after it. */
struct xlb_icmp_hdr {
	__u8 type;
	__u8 code;
	__be16 checksum;
	__be32 rest;
};

struct xlb_ports {
	__be16 src;
	__be16 dst;
};

/*
 * The flow is written in whole words, as the connection table's set hash
 * and compare read it (include/ct_entry.h, conntrack.h): a word read back
 * from narrower stores cannot be forwarded from the CPU's store buffer, and
 * the read waits until those stores have reached the cache, on the path of
 * every packet. The unions give each field its place in the word whatever
 * the byte order.
 */
XLB_INLINE void xlb_flow_set_addrs4(struct xlb_flow *flow, __be32 src, __be32 dst)
{
	xlb_word *w = (xlb_word *)flow;
	union {
		__be32 a[2];
		__u64 w;
	} s = { .a = { src, 0 } }, d = { .a = { dst, 0 } };

	w[0] = s.w;
	w[1] = 0;
	w[2] = d.w;
	w[3] = 0;
}

/* Ports as they lie in the TCP or UDP header (source, then destination),
 * protocol and family: the flow's last word. */
XLB_INLINE void xlb_flow_set_tail(struct xlb_flow *flow, __u32 ports,
				  __u8 proto, __u8 family)
{
	union {
		struct {
			__u32 ports;
			__u8 proto;
			__u8 family;
			__u8 pad[2];
		} f;
		__u64 w;
	} t = { .f = { ports, proto, family, { 0, 0 } } };

	((xlb_word *)flow)[4] = t.w;
}

/* TCP or UDP header of an unfragmented packet: must fit the IP payload of
 * len bytes and be self-consistent. *ports: its two ports, as one word. */
XLB_INLINE int xlb_parse_ports(void *data, void *end, __u32 off, __u32 len,
			       __u8 proto, struct xlb_pkt *pkt, __u32 *ports)
{
	if (proto == IPPROTO_TCP) {
		struct tcphdr *th = data + off;

		if ((void *)(th + 1) > end || len < sizeof(*th) ||
		    th->doff < 5 || th->doff * 4U > len)
			return -XLB_STAT_DROP_MALFORMED;
		pkt->tcp_flags = ((__u8 *)th)[13];
	} else {
		struct udphdr *uh = data + off;
		__u32 ulen;

		if ((void *)(uh + 1) > end || len < sizeof(*uh))
			return -XLB_STAT_DROP_MALFORMED;
		ulen = bpf_ntohs(uh->len);
		if (ulen < sizeof(*uh) || ulen > len)
			return -XLB_STAT_DROP_MALFORMED;
	}
	/* Both headers start with the source and destination ports. */
	*ports = *(__u32 *)(data + off);
	return 0;
}

/* The header checksum of an IPv4 header of hlen bytes (options included)
 * sums to zero. */
XLB_INLINE bool xlb_ipv4_csum_ok(struct iphdr *iph, __u32 hlen, void *end)
{
	__u32 *opt = (__u32 *)(iph + 1);
	__u32 nopt = (hlen - sizeof(*iph)) / 4;
	__u64 sum = xlb_csum_words5(iph);
	__u32 i;

	if (!nopt)
		return xlb_csum_ok(sum);
#pragma unroll
	for (i = 0; i < 10; i++) {
		if (i < nopt) {
			if ((void *)(opt + i + 1) > end)
				return false;
			sum += opt[i];
		}
	}
	return xlb_csum_ok(sum);
}

/*
 * An ICMPv4 error about a VIP's packet: flow of the quoted IPv4 packet,
 * reversed. off/len: the ICMP message within the IP payload.
 *
 * This and xlb_parse_icmp6() are functions of their own (BPF-to-BPF calls,
 * which only ICMP pays): inlined, the parser's many exits share registers
 * with the rest of the program, and the compilers spill them to stack
 * slots beyond the 512-byte limit.
 */
static __noinline int xlb_parse_icmp4(void *data, void *end, __u32 off,
				      __u32 len, struct xlb_flow *flow)
{
	struct xlb_icmp_hdr *icmp = data + off;
	struct xlb_ports *ports;
	struct iphdr *quoted;
	__u32 qhlen;

	if ((void *)(icmp + 1) > end || len < sizeof(*icmp))
		return -XLB_STAT_DROP_MALFORMED;
	switch (icmp->type) {
	case XLB_ICMP_ECHO:
	case XLB_ICMP_ECHOREPLY:
		return -XLB_STAT_PASS_ICMP_ECHO;
	case XLB_ICMP_DEST_UNREACH:
	case XLB_ICMP_TIME_EXCEEDED:
	case XLB_ICMP_PARAMETERPROB:
		break;
	default:
		return -XLB_STAT_PASS_NOT_VIP;
	}
	off += sizeof(*icmp);
	len -= sizeof(*icmp);
	quoted = data + off;
	if ((void *)(quoted + 1) > end || len < sizeof(*quoted))
		return -XLB_STAT_DROP_MALFORMED;
	qhlen = quoted->ihl * 4;
	if (quoted->version != 4 || qhlen < sizeof(*quoted) ||
	    len < qhlen + sizeof(*ports))
		return -XLB_STAT_DROP_MALFORMED;
	/* A later fragment quotes no ports: no flow to find. */
	if (bpf_ntohs(quoted->frag_off) & XLB_IP_OFFSET)
		return -XLB_STAT_PASS_NOT_VIP;
	if (quoted->protocol != IPPROTO_TCP && quoted->protocol != IPPROTO_UDP)
		return -XLB_STAT_PASS_NOT_VIP;
	ports = data + off + qhlen;
	if ((void *)(ports + 1) > end)
		return -XLB_STAT_DROP_MALFORMED;
	flow->src[0] = quoted->daddr;
	flow->dst[0] = quoted->saddr;
	flow->sport = ports->dst;
	flow->dport = ports->src;
	flow->proto = quoted->protocol;
	return 0;
}

/*
 * Do len bytes from p fit the frame? Those of its first buffer, or, for a
 * frame of several (XDP multi-buffer: jumbo frames, whose headers are in
 * the first buffer and payload in the rest), all of theirs: only a packet
 * longer than the first buffer pays for asking.
 */
XLB_INLINE bool xlb_frame_holds(struct xdp_md *ctx, void *data, void *end,
				void *p, __u32 len)
{
	if (len <= (__u32)(end - p))
		return true;
	return len <= bpf_xdp_get_buff_len(ctx) - (__u64)(p - data);
}

XLB_INLINE int xlb_parse_ipv4(struct xdp_md *ctx, void *data, void *end,
			      __u32 off, struct xlb_pkt *pkt)
{
	struct xlb_flow *flow = &pkt->flow;
	struct iphdr *iph = data + off;
	__u32 hlen, tot, ports;
	__u8 proto;
	int err;

	if ((void *)(iph + 1) > end)
		return -XLB_STAT_DROP_MALFORMED;
	hlen = iph->ihl * 4;
	tot = bpf_ntohs(iph->tot_len);
	if (iph->version != 4 || hlen < sizeof(*iph) || tot < hlen ||
	    !xlb_frame_holds(ctx, data, end, iph, tot) ||
	    !xlb_ipv4_csum_ok(iph, hlen, end))
		return -XLB_STAT_DROP_MALFORMED;
	pkt->l3_len = tot;
	pkt->tos = iph->tos;
	xlb_flow_set_addrs4(flow, iph->saddr, iph->daddr);
	proto = iph->protocol;
	if (bpf_ntohs(iph->frag_off) & (XLB_IP_MF | XLB_IP_OFFSET)) {
		xlb_flow_set_tail(flow, 0, proto, XLB_AF_INET);
		pkt->frag = 1;
		return 0;
	}

	switch (proto) {
	case IPPROTO_TCP:
	case IPPROTO_UDP:
		err = xlb_parse_ports(data, end, off + hlen, tot - hlen, proto,
				      pkt, &ports);
		if (!err)
			xlb_flow_set_tail(flow, ports, proto, XLB_AF_INET);
		return err;
	case IPPROTO_ICMP:
		/* The ICMP parser fills in the quoted flow's fields. */
		xlb_flow_set_tail(flow, 0, proto, XLB_AF_INET);
		pkt->icmp_error = 1;
		return xlb_parse_icmp4(data, end, off + hlen, tot - hlen, flow);
	}
	/* The destination's family, for the VIP address check. */
	xlb_flow_set_tail(flow, 0, proto, XLB_AF_INET);
	return -XLB_STAT_PASS_NOT_VIP;
}

XLB_INLINE bool xlb_ipv6_is_ext(__u8 nexthdr)
{
	return nexthdr == IPPROTO_HOPOPTS || nexthdr == IPPROTO_ROUTING ||
	       nexthdr == IPPROTO_DSTOPTS || nexthdr == IPPROTO_FRAGMENT;
}

/*
 * Walk the IPv6 extension headers from *off (whose type is *nexthdr) to the
 * transport header, which must start before stop (the end of the IP
 * packet). Hop-by-hop options are only valid first. A fragment header of a
 * real fragment ends the walk with *frag set and *nexthdr the protocol it
 * names; in a quoted packet (quoted = true) a first fragment is walked
 * through and a later one has no flow. Longer chains than XLB_IPV6_EXT_MAX
 * are left to the kernel.
 */
XLB_INLINE int xlb_ipv6_skip_ext(void *data, void *end, __u32 *off,
				 __u32 stop, __u8 *nexthdr, bool quoted,
				 bool *frag)
{
	__u32 pos = *off;
	__u8 nh = *nexthdr;
	int i;

#pragma unroll
	for (i = 0; i < XLB_IPV6_EXT_MAX; i++) {
		if (nh == IPPROTO_FRAGMENT) {
			struct xlb_ipv6_frag_hdr *fh = data + pos;
			__u16 fo;

			if ((void *)(fh + 1) > end || pos + sizeof(*fh) > stop)
				return -XLB_STAT_DROP_MALFORMED;
			fo = bpf_ntohs(fh->frag_off);
			nh = fh->nexthdr;
			pos += sizeof(*fh);
			if (fo & XLB_IP6_OFFSET) {
				if (quoted)
					return -XLB_STAT_PASS_NOT_VIP;
				*frag = true;
				goto done;
			}
			if ((fo & XLB_IP6_MF) && !quoted) {
				*frag = true;
				goto done;
			}
			/* An atomic fragment, or the first fragment of a
			 * quoted packet: the transport header follows. */
			continue;
		}
		if (nh == IPPROTO_HOPOPTS) {
			if (i != 0)
				return -XLB_STAT_DROP_MALFORMED;
		} else if (nh != IPPROTO_ROUTING && nh != IPPROTO_DSTOPTS) {
			goto done;
		}
		{
			struct ipv6_opt_hdr *opt = data + pos;

			if ((void *)(opt + 1) > end)
				return -XLB_STAT_DROP_MALFORMED;
			nh = opt->nexthdr;
			pos += (opt->hdrlen + 1) * 8;
			if (pos > stop)
				return -XLB_STAT_DROP_MALFORMED;
		}
	}
	if (xlb_ipv6_is_ext(nh))
		return -XLB_STAT_PASS_NOT_VIP;
done:
	*off = pos;
	*nexthdr = nh;
	return 0;
}

/* An ICMPv6 error about a VIP's packet: flow of the quoted IPv6 packet,
 * reversed. off: the ICMPv6 message; stop: end of the IP packet. */
static __noinline int xlb_parse_icmp6(void *data, void *end, __u32 off,
				      __u32 stop, struct xlb_flow *flow)
{
	struct xlb_icmp_hdr *icmp6 = data + off;
	struct xlb_ports *ports;
	struct ipv6hdr *quoted;
	bool frag = false;
	__u8 nh;
	int err;

	if ((void *)(icmp6 + 1) > end || off + sizeof(*icmp6) > stop)
		return -XLB_STAT_DROP_MALFORMED;
	switch (icmp6->type) {
	case XLB_ICMP6_ECHO_REQUEST:
	case XLB_ICMP6_ECHO_REPLY:
		return -XLB_STAT_PASS_ICMP_ECHO;
	case XLB_ICMP6_DEST_UNREACH:
	case XLB_ICMP6_PKT_TOOBIG:
	case XLB_ICMP6_TIME_EXCEED:
	case XLB_ICMP6_PARAMPROB:
		break;
	default:
		return -XLB_STAT_PASS_NOT_VIP;
	}
	off += sizeof(*icmp6);
	quoted = data + off;
	if ((void *)(quoted + 1) > end || off + sizeof(*quoted) > stop ||
	    quoted->version != 6)
		return -XLB_STAT_DROP_MALFORMED;
	nh = quoted->nexthdr;
	off += sizeof(*quoted);
	err = xlb_ipv6_skip_ext(data, end, &off, stop, &nh, true, &frag);
	if (err)
		return err;
	if (nh != IPPROTO_TCP && nh != IPPROTO_UDP)
		return -XLB_STAT_PASS_NOT_VIP;
	ports = data + off;
	if ((void *)(ports + 1) > end || off + sizeof(*ports) > stop)
		return -XLB_STAT_DROP_MALFORMED;
	__builtin_memcpy(flow->src, &quoted->daddr, sizeof(flow->src));
	__builtin_memcpy(flow->dst, &quoted->saddr, sizeof(flow->dst));
	flow->sport = ports->dst;
	flow->dport = ports->src;
	flow->proto = nh;
	return 0;
}

XLB_INLINE int xlb_parse_ipv6(struct xdp_md *ctx, void *data, void *end,
			      __u32 off, struct xlb_pkt *pkt)
{
	struct xlb_flow *flow = &pkt->flow;
	struct ipv6hdr *ip6h = data + off;
	const xlb_word *w;
	__u32 tot, stop, ports;
	bool frag = false;
	__u8 nh;
	int err;

	if ((void *)(ip6h + 1) > end)
		return -XLB_STAT_DROP_MALFORMED;
	tot = sizeof(*ip6h) + bpf_ntohs(ip6h->payload_len);
	if (ip6h->version != 6 || !xlb_frame_holds(ctx, data, end, ip6h, tot))
		return -XLB_STAT_DROP_MALFORMED;
	pkt->l3_len = tot;
	pkt->tos = ip6h->priority << 4 | ip6h->flow_lbl[0] >> 4;
	/* Source and destination: four words, as xlb_flow_set_addrs4(). */
	w = (const xlb_word *)&ip6h->saddr;
	((xlb_word *)flow)[0] = w[0];
	((xlb_word *)flow)[1] = w[1];
	((xlb_word *)flow)[2] = w[2];
	((xlb_word *)flow)[3] = w[3];

	stop = off + tot;
	nh = ip6h->nexthdr;
	off += sizeof(*ip6h);
	err = xlb_ipv6_skip_ext(data, end, &off, stop, &nh, false, &frag);
	if (err) {
		/* The destination's family, for the VIP address check. */
		xlb_flow_set_tail(flow, 0, nh, XLB_AF_INET6);
		return err;
	}
	if (frag) {
		xlb_flow_set_tail(flow, 0, nh, XLB_AF_INET6);
		pkt->frag = 1;
		return 0;
	}

	switch (nh) {
	case IPPROTO_TCP:
	case IPPROTO_UDP:
		err = xlb_parse_ports(data, end, off, stop - off, nh, pkt, &ports);
		if (!err)
			xlb_flow_set_tail(flow, ports, nh, XLB_AF_INET6);
		return err;
	case IPPROTO_ICMPV6:
		xlb_flow_set_tail(flow, 0, nh, XLB_AF_INET6);
		pkt->icmp_error = 1;
		return xlb_parse_icmp6(data, end, off, stop, flow);
	}
	xlb_flow_set_tail(flow, 0, nh, XLB_AF_INET6);
	return -XLB_STAT_PASS_NOT_VIP;
}

/* Fill pkt from the frame; 0 or a negative enum xlb_stat reason. pkt must
 * come zeroed: tcp_flags, icmp_error and frag are only set where they
 * apply. */
XLB_INLINE int xlb_parse(struct xdp_md *ctx, struct xlb_pkt *pkt)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	__u32 off = sizeof(*eth);
	__be16 proto;
	int i;

	if ((void *)(eth + 1) > end)
		return -XLB_STAT_DROP_MALFORMED;
	proto = eth->h_proto;
#pragma unroll
	for (i = 0; i < XLB_VLAN_MAX; i++) {
		struct xlb_vlan_hdr *vlan = data + off;

		if (proto != bpf_htons(ETH_P_8021Q) &&
		    proto != bpf_htons(ETH_P_8021AD))
			break;
		if ((void *)(vlan + 1) > end)
			return -XLB_STAT_DROP_MALFORMED;
		proto = vlan->proto;
		off += sizeof(*vlan);
	}
	pkt->l3_off = off;
	if (proto == bpf_htons(ETH_P_IP))
		return xlb_parse_ipv4(ctx, data, end, off, pkt);
	if (proto == bpf_htons(ETH_P_IPV6))
		return xlb_parse_ipv6(ctx, data, end, off, pkt);
	return -XLB_STAT_PASS_NOT_IP;
}

#endif /* XLB_BPF_PARSE_H */
