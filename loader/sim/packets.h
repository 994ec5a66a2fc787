/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Building test packets: a description in, wire bytes out, every checksum
 * right. Header-only, shared by the tests, the benchmarks and the trace
 * generator. It is written from the RFCs, not from the datapath's parser,
 * so the expected outputs of the datapath tests are built independently of
 * the code they check.
 *
 *   struct pkt_desc d = {
 *           .family = 4, .src = "203.0.113.5", .dst = "192.0.2.10",
 *           .proto = IPPROTO_TCP, .sport = 40000, .dport = 80,
 *   };
 *   __u8 frame[PKT_MAX];
 *   size_t len = pkt_build(&d, frame);
 *
 * Covered: Ethernet with up to two VLAN tags, IPv4 with options, IPv6 with
 * hop-by-hop / routing / destination-options headers, fragments of both
 * (first or later), TCP, UDP, ICMP and ICMPv6 (echo, and errors quoting a
 * packet), and the IPIP / IP6IP6 encapsulations xlb produces.
 */
#ifndef XLB_TEST_PACKETS_H
#define XLB_TEST_PACKETS_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <linux/types.h>
#include "gue.h"

#define PKT_MAX		10240	/* a jumbo frame of 9000 bytes and headers */
#define PKT_ETH_LEN	14
#define PKT_ETH_P_IP	0x0800
#define PKT_ETH_P_IPV6	0x86dd
#define PKT_ETH_P_ARP	0x0806
#define PKT_ETH_P_8021Q	0x8100
#define PKT_ETH_P_8021AD 0x88a8
#define PKT_TCP_SYN	0x02
#define PKT_TCP_ACK	0x10

/* An IPv6 extension header before the transport (or fragment) header:
 * type 0 (hop-by-hop), 43 (routing) or 60 (destination options), of
 * (len8 + 1) * 8 bytes. */
struct pkt_ext6 {
	__u8 type;
	__u8 len8;
};

struct pkt_desc {
	/* Ethernet: zero MACs are replaced by 02:00:00:00:00:0{1,2}. */
	__u8 dmac[6], smac[6];
	int vlans;			/* 0, 1 or 2 tags */
	__u16 vlan_tpid[2];		/* outer first; 0 means 802.1Q */
	__u16 vlan_id[2];
	/* IP */
	int family;			/* 4 or 6 */
	const char *src, *dst;		/* text form */
	__u8 tos;			/* IPv6: traffic class */
	__u8 ttl;			/* 0 means 64 */
	bool df;
	const __u8 *ip_opt;		/* IPv4 options, a multiple of 4 bytes */
	size_t ip_opt_len;
	struct pkt_ext6 ext[6];		/* IPv6 extension headers, in order */
	int n_ext;
	/* fragmentation: a fragment header (IPv6) or flags (IPv4) */
	bool frag;
	__u16 frag_off8;		/* offset in 8-byte units; > 0: no transport header */
	bool mf;
	__u32 frag_id;
	/* transport */
	__u8 proto;			/* IPPROTO_TCP, _UDP, _ICMP, _ICMPV6, any */
	__u16 sport, dport;
	__u8 tcp_flags;			/* 0 means ACK */
	__u8 icmp_type, icmp_code;
	__u32 icmp_rest;		/* the 4 bytes after the ICMP checksum */
	const __u8 *quote;		/* ICMP error: the packet quoted */
	size_t quote_len;
	/* payload: the given bytes, or payload_len bytes of a pattern */
	const __u8 *payload;
	size_t payload_len;
};

/* One's complement sum of big-endian 16-bit words, continuing sum. */
static inline __u32 pkt_sum(const void *data, size_t len, __u32 sum)
{
	const __u8 *p = (const __u8 *)data;
	size_t i;

	for (i = 0; i + 1 < len; i += 2)
		sum += (__u32)p[i] << 8 | p[i + 1];
	if (len & 1)
		sum += (__u32)p[len - 1] << 8;
	return sum;
}

static inline __u16 pkt_fold(__u32 sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)~sum;
}

static inline void pkt_put16(__u8 *p, __u16 v)
{
	p[0] = v >> 8;
	p[1] = v & 0xff;
}

static inline void pkt_put32(__u8 *p, __u32 v)
{
	pkt_put16(p, v >> 16);
	pkt_put16(p + 2, v & 0xffff);
}

static inline __u16 pkt_get16(const __u8 *p)
{
	return (__u16)(p[0] << 8 | p[1]);
}

/* Parse a text address of the family (4 or 6) into out (4 or 16 bytes);
 * returns the address length, 0 when it does not parse. */
static inline size_t pkt_addr(int family, const char *text, __u8 *out)
{
	if (family == 4)
		return inet_pton(AF_INET, text, out) == 1 ? 4 : 0;
	return inet_pton(AF_INET6, text, out) == 1 ? 16 : 0;
}

/* The transport checksum's pseudo-header sum (RFC 768, RFC 8200 8.1). */
static inline __u32 pkt_pseudo_sum(int family, const __u8 *src, const __u8 *dst,
				   __u8 proto, size_t len)
{
	size_t alen = family == 4 ? 4 : 16;
	__u32 sum = 0;

	sum = pkt_sum(src, alen, sum);
	sum = pkt_sum(dst, alen, sum);
	sum += proto;
	sum += (__u32)(len >> 16) + (__u32)(len & 0xffff);
	return sum;
}

static inline size_t pkt_payload(const struct pkt_desc *d, __u8 *out)
{
	size_t i;

	if (d->payload) {
		memcpy(out, d->payload, d->payload_len);
	} else {
		for (i = 0; i < d->payload_len; i++)
			out[i] = (__u8)(i * 7 + 13);
	}
	return d->payload_len;
}

/* Transport header and payload, checksummed against the pseudo-header
 * (ICMPv4 has none). A later fragment is payload only. */
static inline size_t pkt_build_l4(const struct pkt_desc *d, const __u8 *src,
				  const __u8 *dst, __u8 *out)
{
	size_t len, hlen = 0;
	__u32 sum;
	int csum_at = -1;

	if (d->frag && d->frag_off8 > 0)
		return pkt_payload(d, out);

	switch (d->proto) {
	case IPPROTO_TCP:
		hlen = 20;
		memset(out, 0, hlen);
		pkt_put16(out, d->sport);
		pkt_put16(out + 2, d->dport);
		pkt_put32(out + 4, 1);			/* sequence number */
		out[12] = 5 << 4;			/* data offset */
		out[13] = d->tcp_flags ? d->tcp_flags : PKT_TCP_ACK;
		pkt_put16(out + 14, 65535);		/* window */
		csum_at = 16;
		break;
	case IPPROTO_UDP:
		hlen = 8;
		pkt_put16(out, d->sport);
		pkt_put16(out + 2, d->dport);
		pkt_put16(out + 4, (__u16)(8 + d->payload_len));
		pkt_put16(out + 6, 0);
		csum_at = 6;
		break;
	case IPPROTO_ICMP:
	case IPPROTO_ICMPV6:
		hlen = 8;
		out[0] = d->icmp_type;
		out[1] = d->icmp_code;
		pkt_put16(out + 2, 0);
		pkt_put32(out + 4, d->icmp_rest);
		csum_at = 2;
		break;
	}
	if (d->quote) {
		memcpy(out + hlen, d->quote, d->quote_len);
		len = hlen + d->quote_len;
	} else {
		len = hlen + pkt_payload(d, out + hlen);
	}
	if (csum_at < 0)
		return len;
	sum = d->proto == IPPROTO_ICMP ? 0 :
	      pkt_pseudo_sum(d->family, src, dst, d->proto, len);
	sum = pkt_fold(pkt_sum(out, len, sum));
	if (d->proto == IPPROTO_UDP && sum == 0)
		sum = 0xffff;
	pkt_put16(out + csum_at, (__u16)sum);
	return len;
}

/* IPv6 extension header of (len8 + 1) * 8 bytes: options headers are
 * filled with one PadN option, routing headers are of type 253 (RFC 4727,
 * experimental) with no segment left, so every node ignores them. */
static inline void pkt_ext6_fill(const struct pkt_ext6 *e, __u8 next, __u8 *out)
{
	size_t len = (e->len8 + 1) * 8;

	memset(out, 0, len);
	out[0] = next;
	out[1] = e->len8;
	if (e->type == IPPROTO_ROUTING) {
		out[2] = 253;
		out[3] = 0;
	} else {
		out[2] = 1;			/* PadN */
		out[3] = (__u8)(len - 4);
	}
}

/* The IP packet alone (no link layer); returns its length, 0 on an
 * address that does not parse. */
static inline size_t pkt_build_ip(const struct pkt_desc *d, __u8 *out)
{
	__u8 src[16], dst[16], l4[PKT_MAX];
	size_t l4len, off;
	int i;

	if (!pkt_addr(d->family, d->src, src) || !pkt_addr(d->family, d->dst, dst))
		return 0;
	l4len = pkt_build_l4(d, src, dst, l4);

	if (d->family == 4) {
		size_t hlen = 20 + d->ip_opt_len;
		__u16 frag = (d->df ? 0x4000 : 0) | (d->mf ? 0x2000 : 0) |
			     (d->frag ? d->frag_off8 : 0);

		out[0] = 0x40 | (__u8)(hlen / 4);
		out[1] = d->tos;
		pkt_put16(out + 2, (__u16)(hlen + l4len));
		pkt_put16(out + 4, d->frag ? (__u16)d->frag_id : 0x1234);
		pkt_put16(out + 6, frag);
		out[8] = d->ttl ? d->ttl : 64;
		out[9] = d->proto;
		pkt_put16(out + 10, 0);
		memcpy(out + 12, src, 4);
		memcpy(out + 16, dst, 4);
		if (d->ip_opt_len)
			memcpy(out + 20, d->ip_opt, d->ip_opt_len);
		pkt_put16(out + 10, pkt_fold(pkt_sum(out, hlen, 0)));
		memcpy(out + hlen, l4, l4len);
		return hlen + l4len;
	}

	off = 40;
	for (i = 0; i < d->n_ext; i++) {
		__u8 next = i + 1 < d->n_ext ? d->ext[i + 1].type :
			    d->frag ? IPPROTO_FRAGMENT : d->proto;

		pkt_ext6_fill(&d->ext[i], next, out + off);
		off += (d->ext[i].len8 + 1) * 8;
	}
	if (d->frag) {
		out[off] = d->proto;
		out[off + 1] = 0;
		pkt_put16(out + off + 2, (__u16)(d->frag_off8 << 3 | (d->mf ? 1 : 0)));
		pkt_put32(out + off + 4, d->frag_id);
		off += 8;
	}
	pkt_put32(out, 6U << 28 | (__u32)d->tos << 20);
	pkt_put16(out + 4, (__u16)(off - 40 + l4len));
	out[6] = d->n_ext ? d->ext[0].type : d->frag ? IPPROTO_FRAGMENT : d->proto;
	out[7] = d->ttl ? d->ttl : 64;
	memcpy(out + 8, src, 16);
	memcpy(out + 24, dst, 16);
	memcpy(out + off, l4, l4len);
	return off + l4len;
}

/* Ethernet header (and tags) before a body of the given EtherType. */
static inline size_t pkt_l2(const struct pkt_desc *d, __u16 ethertype, __u8 *out)
{
	static const __u8 def_dst[6] = { 2, 0, 0, 0, 0, 1 };
	static const __u8 def_src[6] = { 2, 0, 0, 0, 0, 2 };
	static const __u8 zero[6];
	size_t off = 12;
	int i;

	memcpy(out, memcmp(d->dmac, zero, 6) ? d->dmac : def_dst, 6);
	memcpy(out + 6, memcmp(d->smac, zero, 6) ? d->smac : def_src, 6);
	for (i = 0; i < d->vlans && i < 2; i++) {
		pkt_put16(out + off, d->vlan_tpid[i] ? d->vlan_tpid[i] : PKT_ETH_P_8021Q);
		pkt_put16(out + off + 2, d->vlan_id[i] & 0x0fff);
		off += 4;
	}
	pkt_put16(out + off, ethertype);
	return off + 2;
}

/* The whole frame; returns its length, 0 on a bad address. */
static inline size_t pkt_build(const struct pkt_desc *d, __u8 *out)
{
	size_t l2 = pkt_l2(d, d->family == 4 ? PKT_ETH_P_IP : PKT_ETH_P_IPV6, out);
	size_t l3 = pkt_build_ip(d, out + l2);

	return l3 ? l2 + l3 : 0;
}

/*
 * The frame xlb sends for an IP packet (inner, inner_len bytes, of family
 * inner_family): Ethernet dmac/smac, then an outer header of outer_family
 * from src to dst. IPv4 outer: TOS copied, ID 0, DF, TTL 64, protocol 4 or
 * 41, checksum. IPv6 outer: traffic class copied, flow_label, hop limit 64,
 * next header 4 or 41. Returns the frame length, 0 on a bad address.
 */
static inline size_t pkt_encap(__u8 *out, const __u8 dmac[6], const __u8 smac[6],
			       int outer_family, const char *src, const char *dst,
			       __u32 flow_label, const __u8 *inner,
			       size_t inner_len, int inner_family)
{
	__u8 proto = inner_family == 4 ? IPPROTO_IPIP : IPPROTO_IPV6;
	__u8 tos = inner_family == 4 ? inner[1] :
		   (__u8)((inner[0] & 0x0f) << 4 | inner[1] >> 4);
	__u8 *ip = out + PKT_ETH_LEN;
	size_t hlen = outer_family == 4 ? 20 : 40;

	memcpy(out, dmac, 6);
	memcpy(out + 6, smac, 6);
	pkt_put16(out + 12, outer_family == 4 ? PKT_ETH_P_IP : PKT_ETH_P_IPV6);
	if (outer_family == 4) {
		ip[0] = 0x45;
		ip[1] = tos;
		pkt_put16(ip + 2, (__u16)(20 + inner_len));
		pkt_put16(ip + 4, 0);
		pkt_put16(ip + 6, 0x4000);
		ip[8] = 64;
		ip[9] = proto;
		pkt_put16(ip + 10, 0);
		if (!pkt_addr(4, src, ip + 12) || !pkt_addr(4, dst, ip + 16))
			return 0;
		pkt_put16(ip + 10, pkt_fold(pkt_sum(ip, 20, 0)));
	} else {
		pkt_put32(ip, 6U << 28 | (__u32)tos << 20 | (flow_label & 0xfffff));
		pkt_put16(ip + 4, (__u16)inner_len);
		ip[6] = proto;
		ip[7] = 64;
		if (!pkt_addr(6, src, ip + 8) || !pkt_addr(6, dst, ip + 24))
			return 0;
	}
	memcpy(ip + hlen, inner, inner_len);
	return PKT_ETH_LEN + hlen + inner_len;
}

/*
 * The GUE form of the IPIP or IP6IP6 frame pkt_encap() built (len bytes),
 * into out: UDP (source sport, destination dport, checksum 0) and GUE
 * (include/gue.h: hlen 5, the inner protocol, flags 0; xlb's field with
 * hops 0 and no previous backend) after the outer IP header, whose
 * protocol and length (and IPv4 checksum) say so. Returns its length.
 */
#define PKT_GUE_OVERHEAD	(8 + sizeof(struct xlb_gue))
static inline size_t pkt_encap_gue(__u8 *out, const __u8 *ipip, size_t len,
				   __u16 sport, __u16 dport)
{
	size_t hlen = pkt_get16(ipip + 12) == PKT_ETH_P_IP ? 20 : 40;
	size_t inner_len = len - PKT_ETH_LEN - hlen;
	__u8 *ip = out + PKT_ETH_LEN, *udp = ip + hlen;
	__u8 proto = hlen == 20 ? ipip[PKT_ETH_LEN + 9] : ipip[PKT_ETH_LEN + 6];

	memcpy(out, ipip, PKT_ETH_LEN + hlen);
	memcpy(udp + PKT_GUE_OVERHEAD, ipip + PKT_ETH_LEN + hlen, inner_len);
	memset(udp, 0, PKT_GUE_OVERHEAD);
	pkt_put16(udp, sport);
	pkt_put16(udp + 2, dport);
	pkt_put16(udp + 4, (__u16)(PKT_GUE_OVERHEAD + inner_len));
	udp[8] = XLB_GUE_HLEN;
	udp[9] = proto;
	udp[12] = XLB_GUE_PRIV_MAGIC;
	udp[14] = XLB_AF_NONE;
	if (hlen == 20) {
		ip[9] = IPPROTO_UDP;
		pkt_put16(ip + 2, (__u16)(20 + PKT_GUE_OVERHEAD + inner_len));
		pkt_put16(ip + 10, 0);
		pkt_put16(ip + 10, pkt_fold(pkt_sum(ip, 20, 0)));
	} else {
		ip[6] = IPPROTO_UDP;
		pkt_put16(ip + 4, (__u16)(PKT_GUE_OVERHEAD + inner_len));
	}
	return len + PKT_GUE_OVERHEAD;
}

#endif /* XLB_TEST_PACKETS_H */
