// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The backends' XDP program: decapsulation, and the second chance.
 *
 * It strips the outer header of what the balancers send, IPIP, IPv6-in-IP
 * (either outer family) and GUE (include/gue.h), and passes the inner
 * packet up the stack as if it had arrived bare, so the VIP held on
 * loopback receives it. Kernels built without the ipip, ip6tnl or fou
 * drivers need it; with GUE it also gives the second chance:
 *
 * A GUE packet names the previous backend of the packet's table slot. A
 * TCP segment other than a SYN, of a connection this host does not have
 * (no established, request or time-wait socket), or a UDP datagram no
 * socket here takes, is sent on to that backend, once: the forwarded
 * packet says so (hops 1) and is passed up wherever it lands. Everything
 * else is passed up here, where the host answers a stray segment with a
 * reset as it would without the second chance (docs/second-chance.md).
 *
 * It trusts nothing it was not told (include/decap.h), since every field
 * of a packet is the sender's to choose. It decapsulates only a unicast
 * frame whose outer destination is one of this host's tunnel addresses
 * (xlb_decap_addrs), from a balancer when the balancers are known
 * (xlb_decap_lbs), and only an inner packet for one of the host's VIPs:
 * the kernel is never handed an inner packet to route on. It forwards
 * only to a previous backend of the fleet (xlb_decap_fleet) that is no
 * martian, out of the receiving interface unless others are allowed
 * (xlb_decap_out). Its FIB lookup asks as the host itself would, from
 * loopback, so that the receiving interface need not forward: the kernel
 * routes nothing that arrives there.
 *
 * Frames that are not tunnelled (neither IPIP nor UDP to the GUE port)
 * pass unchanged and uncounted; tunnelled ones count one reason each.
 *
 * A frame may come in several buffers (XDP multi-buffer, Linux 5.18: jumbo
 * frames, as drivers hand them over above about 3.5 KB). The headers it
 * reads must be in the first buffer, where drivers put at least a page;
 * the rest of the packet is never read, only its length is checked, and
 * the outer header is taken off the front of the first buffer.
 */
#include <stdbool.h>
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>
#include "xlb.h"
#include "gue.h"
#include "decap.h"
#include "compiler.h"
#include "csum.h"

/* Linux address family numbers, as bpf_fib_lookup wants them. */
#define DECAP_SYS_AF_INET	2
#define DECAP_SYS_AF_INET6	10
/* A forwarded packet starts a new path: the hop limit of a new packet. */
#define DECAP_FORWARD_TTL	64
#define DECAP_TCP_LISTEN	10	/* BPF_TCP_LISTEN */
#define DECAP_LOOPBACK_IFINDEX	1

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xlb_decap_config);
} xlb_decap_cfg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XLB_DECAP__MAX);
	__type(key, __u32);
	__type(value, struct xlb_counter);
} xlb_decap_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, XLB_DECAP_ADDRS_MAX);
	__type(key, struct xlb_decap_addr);
	__type(value, __u32);
} xlb_decap_addrs SEC(".maps");

/* The fleet's and the balancers' prefixes: two tries of one kind. */
struct decap_prefix_trie {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, XLB_DECAP_PREFIXES_MAX);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct xlb_decap_prefix);
	__type(value, __u32);
};
struct decap_prefix_trie xlb_decap_fleet SEC(".maps");
struct decap_prefix_trie xlb_decap_lbs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, XLB_DECAP_EGRESS_MAX);
	__type(key, __u32);
	__type(value, __u32);
} xlb_decap_out SEC(".maps");

/* The outer IP header: where it ends, the packet's length it gives, its
 * family, what it carries and its addresses. */
struct outer {
	__u32 len;		/* bytes of the outer IP header */
	__u32 tot;		/* bytes of the IP packet, by its header */
	__u8 family;		/* enum xlb_family */
	__u8 proto;
	__be32 src[4], dst[4];	/* IPv4 in [0] */
};

/* What a GUE packet carries, as far as the program acts on it. */
struct gue_info {
	__u32 strip;		/* outer IP + UDP + GUE headers */
	__be16 inner_proto;	/* ethertype of the inner packet */
	__u8 inner_family;	/* enum xlb_family */
	struct xlb_gue_priv priv;	/* family XLB_AF_NONE when absent */
};

XLB_INLINE void count(__u32 reason, __u64 bytes)
{
	struct xlb_counter *c = bpf_map_lookup_elem(&xlb_decap_stats, &reason);

	if (c) {
		c->packets++;
		c->bytes += bytes;
	}
}

/* The outer header, or false when the frame is not IP or an outer IPv4
 * fragment (a tunnelled packet in pieces needs reassembly first, which the
 * stack would do; with no tunnel driver it drops them). */
XLB_INLINE bool parse_outer(void *data, void *data_end, struct outer *o)
{
	struct ethhdr *eth = data;
	struct iphdr *ip4 = (void *)(eth + 1);
	struct ipv6hdr *ip6 = (void *)(eth + 1);

	if ((void *)(eth + 1) > data_end)
		return false;
	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		if ((void *)(ip4 + 1) > data_end || ip4->version != 4 || ip4->ihl < 5 ||
		    ip4->frag_off & bpf_htons(0x3fff))
			return false;
		o->family = XLB_AF_INET;
		o->proto = ip4->protocol;
		o->len = ip4->ihl * 4;
		o->tot = bpf_ntohs(ip4->tot_len);
		o->src[0] = ip4->saddr;
		o->dst[0] = ip4->daddr;
		return true;
	}
	if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		if ((void *)(ip6 + 1) > data_end || ip6->version != 6)
			return false;
		o->family = XLB_AF_INET6;
		o->proto = ip6->nexthdr;
		o->len = sizeof(*ip6);
		o->tot = sizeof(*ip6) + bpf_ntohs(ip6->payload_len);
		__builtin_memcpy(o->src, &ip6->saddr, sizeof(o->src));
		__builtin_memcpy(o->dst, &ip6->daddr, sizeof(o->dst));
		return true;
	}
	return false;
}

/* What xlb_decap_addrs says the address is (XLB_DECAP_ADDR_*), 0: none
 * of this host's. */
XLB_INLINE __u32 addr_kind(__u8 family, const __be32 *a)
{
	struct xlb_decap_addr key = { .family = family };
	__u32 *kind;

	if (family == XLB_AF_INET)
		key.addr[0] = a[0];
	else
		__builtin_memcpy(key.addr, a, sizeof(key.addr));
	kind = bpf_map_lookup_elem(&xlb_decap_addrs, &key);
	return kind ? *kind : 0;
}

/* Is the address inside one of the prefixes of the trie? */
XLB_INLINE bool in_prefixes(void *trie, __u8 family, const __be32 *a)
{
	struct xlb_decap_prefix key = { .family = family };

	if (family == XLB_AF_INET) {
		key.prefixlen = XLB_DECAP_PREFIX_BASE + 32;
		key.addr[0] = a[0];
	} else {
		key.prefixlen = XLB_DECAP_PREFIX_BASE + 128;
		__builtin_memcpy(key.addr, a, sizeof(key.addr));
	}
	return bpf_map_lookup_elem(trie, &key) != NULL;
}

/*
 * An address no packet may be sent to, whatever the routing table says:
 * unspecified, loopback, multicast, broadcast and reserved (IPv4 0/8,
 * 127/8, 224/4, 240/4), and IPv6's ::/96 (unspecified, loopback and the
 * old IPv4-compatible form), IPv4-mapped ::ffff:0:0/96 (an IPv4 host
 * written as IPv6, which no IPv6 link reaches) and ff00::/8.
 */
XLB_INLINE bool martian(__u8 family, const __be32 *a)
{
	__u32 w0 = bpf_ntohl(a[0]);

	if (family == XLB_AF_INET)
		return w0 >> 24 == 0 || w0 >> 24 == 127 || w0 >> 28 >= 0xe;
	if (w0 >> 24 == 0xff)
		return true;
	return !a[0] && !a[1] && (!a[2] || a[2] == bpf_htonl(0xffff));
}

/* Link-local (169.254/16, fe80::/10): valid on its own link only. */
XLB_INLINE bool link_local(__u8 family, const __be32 *a)
{
	__u32 w0 = bpf_ntohl(a[0]);

	if (family == XLB_AF_INET)
		return w0 >> 16 == 0xa9fe;
	return w0 >> 22 == (0xfe80 >> 6);
}

/* Take len bytes of outer headers off: the Ethernet header moves in front
 * of the inner packet, whose EtherType it takes. */
XLB_INLINE int strip(struct xdp_md *ctx, __u32 len, __be16 inner_proto)
{
	struct ethhdr eth, *neth;
	void *data = (void *)(long)ctx->data;

	if (data + sizeof(eth) > (void *)(long)ctx->data_end)
		return -1;
	__builtin_memcpy(&eth, data, sizeof(eth));
	if (bpf_xdp_adjust_head(ctx, len))
		return -1;
	neth = (void *)(long)ctx->data;
	if ((void *)(neth + 1) > (void *)(long)ctx->data_end)
		return -1;
	__builtin_memcpy(neth, &eth, sizeof(eth));
	neth->h_proto = inner_proto;
	return 0;
}

/* The setting, with its defaults filled in. */
XLB_INLINE void config(struct xlb_decap_config *c)
{
	__u32 zero = 0;
	struct xlb_decap_config *cfg = bpf_map_lookup_elem(&xlb_decap_cfg, &zero);

	c->gue_port = cfg && cfg->gue_port ? cfg->gue_port
					   : bpf_htons(XLB_GUE_DEFAULT_PORT);
	c->flags = cfg ? cfg->flags : 0;
}

/* May the outer source send this host tunnelled packets? A balancer may;
 * a backend of the fleet may send what it forwarded (hops 1). */
XLB_INLINE bool source_ok(const struct xlb_decap_config *c,
			  const struct outer *o, bool forwarded)
{
	if (!(c->flags & XLB_DECAP_F_CHECK_SOURCE))
		return true;
	return in_prefixes(forwarded ? (void *)&xlb_decap_fleet : (void *)&xlb_decap_lbs,
			   o->family, o->src);
}

/*
 * A length field as a bounded scalar, plus hdr: older verifiers (Linux
 * 6.1) keep no bounds through a byte swap, and refuse to add an unbounded
 * value to a packet pointer; the mask, which the barrier keeps the
 * compiler from folding away, gives them [0, 65535].
 */
XLB_INLINE __u32 inner_len(__u32 field, __u32 hdr)
{
	barrier_var(field);
	return (field & 0xffff) + hdr;
}

/*
 * The inner packet at inner, of the family, in a frame of frame_len bytes
 * (data to data_end its first buffer): 0 when its IP header is whole in
 * the first buffer, its length no more than the frame's bytes from inner
 * on and for one of this host's VIPs, else -reason. The length is the
 * sender's word: what the socket lookup reads and what the stack is handed
 * must be there, and an IPv4 length short of its own header names no
 * packet at all.
 */
XLB_INLINE int inner_check(const __u8 *inner, void *data, void *data_end,
			   __u64 frame_len, __u8 family)
{
	const struct iphdr *ip4 = (const void *)inner;
	const struct ipv6hdr *ip6 = (const void *)inner;
	__be32 dst[4];
	__u32 len;

	if (family == XLB_AF_INET) {
		if ((void *)(ip4 + 1) > data_end)
			return -XLB_DECAP_DROP_TRUNCATED;
		if (ip4->version != 4)
			return -XLB_DECAP_DROP_BAD_PROTO;
		len = inner_len(bpf_ntohs(ip4->tot_len), 0);
		if (len < sizeof(*ip4) || len < ip4->ihl * 4U)
			return -XLB_DECAP_DROP_INNER_TRUNCATED;
		dst[0] = ip4->daddr;
	} else {
		if ((void *)(ip6 + 1) > data_end)
			return -XLB_DECAP_DROP_TRUNCATED;
		if (ip6->version != 6)
			return -XLB_DECAP_DROP_BAD_PROTO;
		len = inner_len(bpf_ntohs(ip6->payload_len), sizeof(*ip6));
		__builtin_memcpy(dst, &ip6->daddr, sizeof(dst));
	}
	if ((__u64)(inner - (__u8 *)data) + len > frame_len)
		return -XLB_DECAP_DROP_INNER_TRUNCATED;
	if (!(addr_kind(family, dst) & XLB_DECAP_ADDR_VIP))
		return -XLB_DECAP_DROP_INNER_NOT_LOCAL;
	return 0;
}

/* IPIP, IPv6-in-IPv4, IP6IP6, IPv4-in-IPv6 to this host (a frame of
 * bytes bytes): passed up decapsulated when a balancer sent it to a VIP of
 * the host. */
XLB_INLINE int ipip(struct xdp_md *ctx, const struct outer *o,
		    const struct xlb_decap_config *c, __u64 bytes)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u8 family = o->proto == IPPROTO_IPIP ? XLB_AF_INET : XLB_AF_INET6;
	int ret;

	if (!source_ok(c, o, false))
		ret = -XLB_DECAP_DROP_SOURCE;
	else
		ret = inner_check((__u8 *)data + ETH_HLEN + o->len, data, data_end,
				  bytes, family);
	if (ret) {
		count(-ret, bytes);
		return XDP_DROP;
	}
	if (strip(ctx, o->len, family == XLB_AF_INET ? bpf_htons(ETH_P_IP)
						     : bpf_htons(ETH_P_IPV6))) {
		count(XLB_DECAP_ABORTED, bytes);
		return XDP_ABORTED;
	}
	count(XLB_DECAP_PASS_IPIP, bytes);
	return XDP_PASS;
}

/*
 * The GUE headers after the outer IP header (udp points to the UDP header):
 * 0 and *g filled in, or -reason of a malformed packet. Accepted: variant
 * 0, no control message, no flags, and either no extension (as other
 * senders of GUE write) or exactly xlb's field.
 */
XLB_INLINE int parse_gue(struct udphdr *udp, void *data_end, const struct outer *o,
			 struct gue_info *g)
{
	struct xlb_gue_hdr *h = (void *)(udp + 1);
	struct xlb_gue_priv *priv = (void *)(h + 1);
	__u32 ext, inner_min;
	__u8 *inner, version;

	if ((void *)(h + 1) > data_end)
		return -XLB_DECAP_DROP_TRUNCATED;
	if (h->hlen & 0xe0 || h->flags)
		return -XLB_DECAP_DROP_BAD_HEADER;
	if (h->hlen == XLB_GUE_HLEN)
		ext = sizeof(*priv);
	else if (h->hlen == 0)
		ext = 0;
	else
		return -XLB_DECAP_DROP_BAD_HEADER;
	if (h->proto == IPPROTO_IPIP) {
		g->inner_family = XLB_AF_INET;
		g->inner_proto = bpf_htons(ETH_P_IP);
		inner_min = sizeof(struct iphdr);
		version = 4;
	} else if (h->proto == IPPROTO_IPV6) {
		g->inner_family = XLB_AF_INET6;
		g->inner_proto = bpf_htons(ETH_P_IPV6);
		inner_min = sizeof(struct ipv6hdr);
		version = 6;
	} else {
		return -XLB_DECAP_DROP_BAD_PROTO;
	}
	inner = (__u8 *)(h + 1) + ext;
	if ((void *)(inner + inner_min) > data_end)
		return -XLB_DECAP_DROP_TRUNCATED;
	if (*inner >> 4 != version)
		return -XLB_DECAP_DROP_BAD_PROTO;
	g->strip = o->len + sizeof(*udp) + sizeof(*h) + ext;
	g->priv.family = XLB_AF_NONE;
	if (!ext)
		return 0;
	if ((void *)(priv + 1) > data_end)
		return -XLB_DECAP_DROP_TRUNCATED;
	__builtin_memcpy(&g->priv, priv, sizeof(*priv));
	if (g->priv.magic != XLB_GUE_PRIV_MAGIC ||
	    (g->priv.family != XLB_AF_NONE && g->priv.family != XLB_AF_INET &&
	     g->priv.family != XLB_AF_INET6))
		return -XLB_DECAP_DROP_BAD_FIELD;
	if (g->priv.hops > 1)
		return -XLB_DECAP_DROP_LOOP;
	return 0;
}

/*
 * What host_takes() makes of a header it needs that is not in the first
 * buffer: in a frame of one buffer, a packet too short to hold it, with
 * nothing to look up, which stays; in a frame of several (split), a header
 * that straddles the first buffer's end, which is never read: a drop.
 */
XLB_INLINE int cut_short(bool split)
{
	return split ? -XLB_DECAP_DROP_TRUNCATED : 1;
}

/*
 * Does this host take the inner packet (at inner, of the family, in a
 * frame split over several buffers or not)? 1 when it does, 0 when not,
 * or -reason of a drop. A TCP SYN opens a connection here; another
 * segment belongs here when a socket of its connection exists:
 * established, a request (the handshake's last ACK) or time-wait. A
 * listener alone does not count, except for an ACK that carries a valid
 * SYN cookie of that listener (the connection exists only in the cookie).
 * A UDP datagram belongs here when a socket takes it, connected to its
 * sender or not. Anything else (fragments, IPv6 extension headers, other
 * protocols) has nothing to look up: it stays.
 */
XLB_INLINE int host_takes(struct xdp_md *ctx, __u8 *inner, void *data_end,
			  bool split, __u8 family)
{
	struct bpf_sock_tuple t = {};
	struct bpf_sock *sk;
	struct iphdr *ip4 = (void *)inner;
	struct ipv6hdr *ip6 = (void *)inner;
	__u32 tlen, iph_len;
	struct tcphdr *th;
	__be16 *ports;
	__u8 proto;
	bool ok;

	if (family == XLB_AF_INET) {
		if ((void *)(ip4 + 1) > data_end)
			return cut_short(split);
		if (ip4->ihl < 5 || ip4->frag_off & bpf_htons(0x3fff))
			return 1;
		proto = ip4->protocol;
		th = (void *)(inner + ip4->ihl * 4);
		t.ipv4.saddr = ip4->saddr;
		t.ipv4.daddr = ip4->daddr;
		tlen = sizeof(t.ipv4);
		iph_len = sizeof(*ip4);
	} else {
		if ((void *)(ip6 + 1) > data_end)
			return cut_short(split);
		proto = ip6->nexthdr;
		th = (void *)(ip6 + 1);
		__builtin_memcpy(t.ipv6.saddr, &ip6->saddr, sizeof(t.ipv6.saddr));
		__builtin_memcpy(t.ipv6.daddr, &ip6->daddr, sizeof(t.ipv6.daddr));
		tlen = sizeof(t.ipv6);
		iph_len = sizeof(*ip6);
	}

	/* TCP and UDP headers both start with the two ports. */
	if (proto != IPPROTO_TCP && proto != IPPROTO_UDP)
		return 1;
	ports = (void *)th;
	if ((void *)(ports + 2) > data_end)
		return cut_short(split);
	if (family == XLB_AF_INET) {
		t.ipv4.sport = ports[0];
		t.ipv4.dport = ports[1];
	} else {
		t.ipv6.sport = ports[0];
		t.ipv6.dport = ports[1];
	}
	if (proto == IPPROTO_UDP) {
		sk = bpf_sk_lookup_udp(ctx, &t, tlen, BPF_F_CURRENT_NETNS, 0);
		ok = sk != NULL;
		if (sk)
			bpf_sk_release(sk);
		return ok;
	}
	if ((void *)(th + 1) > data_end)
		return cut_short(split);
	if (th->syn && !th->ack)
		return 1;
	sk = bpf_skc_lookup_tcp(ctx, &t, tlen, BPF_F_CURRENT_NETNS, 0);
	if (!sk)
		return 0;
	ok = sk->state != DECAP_TCP_LISTEN ||
	     bpf_tcp_check_syncookie(sk, inner, iph_len, th, sizeof(*th)) == 0;
	bpf_sk_release(sk);
	return ok;
}

/* The one's complement sum of an address's words (family's length). */
XLB_INLINE __u64 addr_sum(const __be32 *a, __u8 family)
{
	if (family == XLB_AF_INET)
		return a[0];
	return (__u64)a[0] + a[1] + a[2] + a[3];
}

XLB_INLINE __u64 addr_sum_not(const __be32 *a, __u8 family)
{
	if (family == XLB_AF_INET)
		return (__u32)~a[0];
	return (__u64)(__u32)~a[0] + (__u32)~a[1] + (__u32)~a[2] + (__u32)~a[3];
}

/*
 * May the packet go to prev, a previous backend the packet names? 0, or
 * -reason: PASS_PREV_SELF when it is this host, a drop when it is a
 * martian or outside the fleet.
 */
XLB_INLINE int prev_check(const __be32 *prev, __u8 family)
{
	if (martian(family, prev))
		return -XLB_DECAP_DROP_PREV_MARTIAN;
	if (addr_kind(family, prev) & XLB_DECAP_ADDR_TUNNEL)
		return -XLB_DECAP_PASS_PREV_SELF;
	if (!in_prefixes(&xlb_decap_fleet, family, prev))
		return -XLB_DECAP_DROP_PREV_NOT_FLEET;
	return 0;
}

/* May a packet to prev leave as the FIB says (fib: its answer)? By the
 * receiving interface; by another only where the operator allowed it; a
 * link-local prev only on its own link, the receiving one, and not
 * through a gateway (fib's destination then is the gateway's). */
XLB_INLINE bool egress_ok(struct xdp_md *ctx, const struct bpf_fib_lookup *fib,
			  const __be32 *prev, __u8 family)
{
	__u32 ifindex = fib->ifindex;

	if (link_local(family, prev)) {
		if (ifindex != ctx->ingress_ifindex)
			return false;
		if (family == XLB_AF_INET)
			return fib->ipv4_dst == prev[0];
		return fib->ipv6_dst[0] == prev[0] && fib->ipv6_dst[1] == prev[1] &&
		       fib->ipv6_dst[2] == prev[2] && fib->ipv6_dst[3] == prev[3];
	}
	if (ifindex == ctx->ingress_ifindex)
		return true;
	return bpf_map_lookup_elem(&xlb_decap_out, &ifindex) != NULL;
}

/*
 * Send the packet on to the previous backend: outer destination prev,
 * source this packet's outer destination (an address of this host the
 * balancers use), hops 1, and the next hop's MAC addresses from the FIB;
 * the frame, of frame_len bytes, leaves whole. Returns XDP_TX or
 * XDP_REDIRECT, or -reason: a drop when prev may not or cannot be reached,
 * PASS_PREV_SELF when prev is this host.
 *
 * The FIB is asked from loopback, as for a packet this host sends: it
 * then needs forwarding on lo, not on the receiving interface, which
 * stays a host's (the kernel routes nothing that arrives there).
 */
XLB_INLINE int forward(struct xdp_md *ctx, const struct outer *o, const __be32 *prev,
		       __u64 frame_len)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip4 = (void *)(eth + 1);
	struct ipv6hdr *ip6 = (void *)(eth + 1);
	struct bpf_fib_lookup fib = {
		.ifindex = DECAP_LOOPBACK_IFINDEX,
		.l4_protocol = IPPROTO_UDP,
	};
	/* The frame's size, not the header's word for it: the MTU check is
	 * of what leaves, every buffer of it (no IP packet is longer than
	 * 64 KiB; a frame of more stays too big). */
	__u16 tot_len = frame_len - ETH_HLEN > 0xffff ? 0xffff
						      : (__u16)(frame_len - ETH_HLEN);
	__be32 src[4], dst[4];
	struct xlb_gue_priv *priv;
	struct udphdr *udp;
	__u16 old_word, new_word;
	__u64 sum;
	int rc;

	rc = prev_check(prev, o->family);
	if (rc)
		return rc;
	/* What leaves from this host's address carries no IPv4 options the
	 * sender wrote (a source route among them); balancers send none. */
	if (o->len != sizeof(*ip4) && o->family == XLB_AF_INET)
		return -XLB_DECAP_DROP_BAD_HEADER;
	if (o->family == XLB_AF_INET) {
		if ((void *)(ip4 + 1) > data_end)
			return -XLB_DECAP_ABORTED;
		udp = (void *)((__u8 *)ip4 + o->len);
		src[0] = ip4->saddr;
		dst[0] = ip4->daddr;
		fib.family = DECAP_SYS_AF_INET;
		fib.tot_len = tot_len;
		fib.ipv4_src = dst[0];
		fib.ipv4_dst = prev[0];
	} else {
		if ((void *)(ip6 + 1) > data_end)
			return -XLB_DECAP_ABORTED;
		udp = (void *)(ip6 + 1);
		__builtin_memcpy(src, &ip6->saddr, sizeof(src));
		__builtin_memcpy(dst, &ip6->daddr, sizeof(dst));
		fib.family = DECAP_SYS_AF_INET6;
		fib.tot_len = tot_len;
		__builtin_memcpy(fib.ipv6_src, dst, sizeof(fib.ipv6_src));
		__builtin_memcpy(fib.ipv6_dst, prev, sizeof(fib.ipv6_dst));
	}
	priv = (void *)((__u8 *)udp + sizeof(*udp) + sizeof(struct xlb_gue_hdr));
	if ((void *)(priv + 1) > data_end)
		return -XLB_DECAP_ABORTED;
	fib.sport = udp->source;
	fib.dport = udp->dest;

	rc = bpf_fib_lookup(ctx, &fib, sizeof(fib), 0);
	switch (rc) {
	case BPF_FIB_LKUP_RET_SUCCESS:
		break;
	/* A local, broadcast or multicast route: an address of this host
	 * that is not a tunnel endpoint, or a subnet's broadcast. */
	case BPF_FIB_LKUP_RET_NOT_FWDED:
		return -XLB_DECAP_DROP_PREV_LOCAL;
	case BPF_FIB_LKUP_RET_NO_NEIGH:
		return -XLB_DECAP_DROP_NO_NEIGH;
	case BPF_FIB_LKUP_RET_FRAG_NEEDED:
		return -XLB_DECAP_DROP_TOO_BIG;
	case BPF_FIB_LKUP_RET_FWD_DISABLED:
		return -XLB_DECAP_DROP_FWD_DISABLED;
	default:
		return -XLB_DECAP_DROP_NO_ROUTE;
	}
	if (!egress_ok(ctx, &fib, prev, o->family))
		return link_local(o->family, prev) ? -XLB_DECAP_DROP_PREV_MARTIAN
						   : -XLB_DECAP_DROP_EGRESS;

	/* The hops byte shares a 16-bit word of the UDP payload with the
	 * magic: that word changes from (magic, 0) to (magic, 1). */
	old_word = *(__u16 *)priv;
	priv->hops = 1;
	new_word = *(__u16 *)priv;
	if (o->family == XLB_AF_INET) {
		/* RFC 1624 over what changes: TTL, source, destination. */
		old_word = *(__u16 *)&ip4->ttl;
		ip4->ttl = DECAP_FORWARD_TTL;
		sum = (__u16)~ip4->check + (__u16)~old_word + *(__u16 *)&ip4->ttl +
		      addr_sum_not(src, XLB_AF_INET) + addr_sum(dst, XLB_AF_INET) +
		      addr_sum_not(dst, XLB_AF_INET) + addr_sum(prev, XLB_AF_INET);
		ip4->check = xlb_csum_fold(sum);
		ip4->saddr = dst[0];
		ip4->daddr = prev[0];
		/* Zero: no checksum, which IPv4 allows (RFC 768); the inner
		 * packet carries its own. */
		udp->check = 0;
	} else {
		ip6->hop_limit = DECAP_FORWARD_TTL;
		/* IPv6 needs the UDP checksum (a zero one only where both ends
		 * agree to it, RFC 6935): updated for the new pseudo-header
		 * and the hops byte, RFC 1624. A zero one stays zero. */
		if (udp->check) {
			sum = (__u16)~udp->check + (__u16)~old_word + new_word +
			      addr_sum_not(src, XLB_AF_INET6) +
			      addr_sum(dst, XLB_AF_INET6) +
			      addr_sum_not(dst, XLB_AF_INET6) +
			      addr_sum(prev, XLB_AF_INET6);
			udp->check = xlb_csum_fold(sum) ?: 0xffff;
		}
		__builtin_memcpy(&ip6->saddr, dst, sizeof(dst));
		__builtin_memcpy(&ip6->daddr, prev, sizeof(dst));
	}
	__builtin_memcpy(eth->h_dest, fib.dmac, ETH_ALEN);
	__builtin_memcpy(eth->h_source, fib.smac, ETH_ALEN);
	if (fib.ifindex == ctx->ingress_ifindex)
		return XDP_TX;
	return bpf_redirect(fib.ifindex, 0);
}

/* What to do with a well-formed GUE packet (a frame of frame_len bytes):
 * a -PASS_* reason, a -DROP_* one, or what forward() returns. */
XLB_INLINE int gue_decide(struct xdp_md *ctx, const struct outer *o,
			  const struct gue_info *g, __u64 frame_len)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	int takes;

	if (g->priv.family == XLB_AF_NONE)
		return -XLB_DECAP_PASS_GUE;
	if (g->priv.hops)
		return -XLB_DECAP_PASS_FORWARDED;
	takes = host_takes(ctx, (__u8 *)data + ETH_HLEN + g->strip, data_end,
			   frame_len > (__u64)(data_end - data), g->inner_family);
	if (takes < 0)
		return takes;
	if (takes)
		return -XLB_DECAP_PASS_GUE;
	/* The new outer source would be an address of the other family,
	 * which the packet does not tell. */
	if (g->priv.family != o->family)
		return -XLB_DECAP_PASS_PREV_FAMILY;
	return forward(ctx, o, g->priv.prev, frame_len);
}

/* GUE to this host (a frame of bytes bytes): malformed, from a stranger
 * or not for a VIP here, dropped; otherwise passed up or forwarded, as
 * gue_decide() says. */
XLB_INLINE int gue(struct xdp_md *ctx, const struct outer *o,
		   const struct xlb_decap_config *c, __u64 bytes)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct udphdr *udp = data + ETH_HLEN + o->len;
	struct gue_info g = {};
	__u32 reason;
	int ret;

	if ((void *)(udp + 1) > data_end) {
		count(XLB_DECAP_ABORTED, bytes);	/* tunnelled() checked it */
		return XDP_ABORTED;
	}
	ret = parse_gue(udp, data_end, o, &g);
	if (!ret && !source_ok(c, o, g.priv.family != XLB_AF_NONE && g.priv.hops))
		ret = -XLB_DECAP_DROP_SOURCE;
	if (!ret)
		ret = inner_check((__u8 *)data + ETH_HLEN + g.strip, data, data_end,
				  bytes, g.inner_family);
	if (!ret)
		ret = gue_decide(ctx, o, &g, bytes);
	if (ret >= 0) {
		count(XLB_DECAP_FORWARD, bytes);
		return ret;
	}
	reason = -ret;
	switch (reason) {
	case XLB_DECAP_PASS_GUE:
	case XLB_DECAP_PASS_FORWARDED:
	case XLB_DECAP_PASS_PREV_SELF:
	case XLB_DECAP_PASS_PREV_FAMILY:
		if (strip(ctx, g.strip, g.inner_proto)) {
			count(XLB_DECAP_ABORTED, bytes);
			return XDP_ABORTED;
		}
		count(reason, bytes);
		return XDP_PASS;
	case XLB_DECAP_ABORTED:
		count(reason, bytes);
		return XDP_ABORTED;
	}
	count(reason, bytes);
	return XDP_DROP;
}

/*
 * Is the frame, IPIP or UDP, tunnelled (UDP: to the GUE port)? And is it
 * this host's to decapsulate: a unicast frame to one of its tunnel
 * addresses?
 * What is not passes untouched, as the kernel would take it (which, with
 * no tunnel to hand it to and no forwarding on the interface, is to drop
 * it or answer it as any other packet). Returns true when it is tunnelled,
 * *reason then 0 or a PASS_NOT_* reason.
 */
XLB_INLINE bool tunnelled(void *data, void *data_end, const struct outer *o,
			  const struct xlb_decap_config *c, __u32 *reason)
{
	struct ethhdr *eth = data;
	struct udphdr *udp = data + ETH_HLEN + o->len;

	if (o->proto == IPPROTO_UDP &&
	    ((void *)(udp + 1) > data_end || udp->dest != c->gue_port))
		return false;
	*reason = 0;
	if (eth->h_dest[0] & 1)		/* group bit: broadcast, multicast */
		*reason = XLB_DECAP_PASS_NOT_UNICAST;
	else if (!(addr_kind(o->family, o->dst) & XLB_DECAP_ADDR_TUNNEL))
		*reason = XLB_DECAP_PASS_NOT_LOCAL;
	return true;
}

/* The program; bench/bpf/decap_bench.bpf.c times it behind a restore. */
XLB_INLINE int decap_run(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u64 bytes = (__u64)((char *)data_end - (char *)data);
	struct xlb_decap_config c;
	struct outer o;
	__u32 reason;

	if (!parse_outer(data, data_end, &o) ||
	    (o.proto != IPPROTO_UDP && o.proto != IPPROTO_IPIP && o.proto != IPPROTO_IPV6))
		return XDP_PASS;
	config(&c);
	if (!tunnelled(data, data_end, &o, &c, &reason))
		return XDP_PASS;
	/* A packet longer than the first buffer, by its header, is a frame of
	 * several (a jumbo frame): only such a packet pays for asking. */
	if (__builtin_expect(ETH_HLEN + o.tot > bytes, 0))
		bytes = bpf_xdp_get_buff_len(ctx);
	if (reason) {
		count(reason, bytes);
		return XDP_PASS;
	}
	if (o.proto == IPPROTO_UDP)
		return gue(ctx, &o, &c, bytes);
	return ipip(ctx, &o, &c, bytes);
}

/*
 * Its section stays "xdp", which `ip link ... sec xdp` and any kernel take
 * as a single-buffer program; `xlb host setup` loads it multi-buffer where
 * the kernel can, and decap.frags.bpf.o (built with XLB_FRAGS) is the same
 * program in section "xdp.frags", for `ip link` on a device whose MTU
 * needs it.
 */
#ifdef XLB_FRAGS
SEC("xdp.frags")
#else
SEC("xdp")
#endif
int xdp_decap(struct xdp_md *ctx)
{
	return decap_run(ctx);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
