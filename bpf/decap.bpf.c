// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Backend-side decapsulation in XDP, for kernels built without the ipip and
 * ip6tnl drivers (CONFIG_NET_IPIP, CONFIG_IPV6_TUNNEL): strips the outer
 * IPv4 or IPv6 header of an IPIP, IPv6-in-IPv4, IP6IP6 or IPv4-in-IPv6
 * packet and passes the inner packet up the stack as if it had arrived
 * bare, so the VIP held on loopback receives it. Everything else passes
 * unchanged. Where the kernel has the tunnel drivers, backends use them
 * instead (see the README). Like a tunnel device in external mode, it
 * accepts tunnelled packets from any source: attach it only where the
 * balancers are the only senders of such packets.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

/* Length of the outer header to strip, or 0 to leave the frame alone;
 * *inner_proto is the ethertype of what is inside. */
static __always_inline int outer_len(void *data, void *data_end,
				     __be16 *inner_proto)
{
	struct ethhdr *eth = data;
	struct iphdr *ip4 = (void *)(eth + 1);
	struct ipv6hdr *ip6 = (void *)(eth + 1);
	__u8 proto;
	int len;

	if ((void *)(eth + 1) > data_end)
		return 0;
	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		if ((void *)(ip4 + 1) > data_end || ip4->ihl < 5)
			return 0;
		/* A fragment of a tunnelled packet needs reassembly first,
		 * which the stack would do; no tunnel driver here, so it
		 * is left to be dropped there. */
		if (ip4->frag_off & bpf_htons(0x3fff))
			return 0;
		proto = ip4->protocol;
		len = ip4->ihl * 4;
	} else if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		if ((void *)(ip6 + 1) > data_end)
			return 0;
		proto = ip6->nexthdr;
		len = sizeof(*ip6);
	} else {
		return 0;
	}
	if (proto == IPPROTO_IPIP)
		*inner_proto = bpf_htons(ETH_P_IP);
	else if (proto == IPPROTO_IPV6)
		*inner_proto = bpf_htons(ETH_P_IPV6);
	else
		return 0;
	/* The inner header must be there, or the stack would get garbage. */
	if (data + sizeof(*eth) + len + sizeof(struct iphdr) > data_end)
		return 0;
	return len;
}

SEC("xdp")
int xdp_decap(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr eth, *neth;
	__be16 inner_proto;
	int len;

	len = outer_len(data, data_end, &inner_proto);
	if (len <= 0 || len > 60)
		return XDP_PASS;
	__builtin_memcpy(&eth, data, sizeof(eth));
	if (bpf_xdp_adjust_head(ctx, len))
		return XDP_PASS;
	data = (void *)(long)ctx->data;
	data_end = (void *)(long)ctx->data_end;
	neth = data;
	if ((void *)(neth + 1) > data_end)
		return XDP_DROP;
	__builtin_memcpy(neth, &eth, sizeof(eth));
	neth->h_proto = inner_proto;
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
