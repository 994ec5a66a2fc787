// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The floor of the throughput benchmark: the least a Maglev balancer can
 * do and still be one. Parse Ethernet, IPv4 and TCP; hash the 5-tuple by
 * multiply and xor; read the backend id at hash mod M in one array of
 * M = 65537 slots; read that backend's prebuilt Ethernet and outer IPv4
 * header; push 20 bytes, write them, set the outer length and checksum;
 * count the packet; XDP_TX. No connection table, no keyed hash, no VIP
 * lookup, no next-hop resolution, no IPv6, no options: what xlb does
 * beyond this is what its features cost. bench/floor_attach.c fills the
 * maps (a Maglev table of loader/algo) and attaches it.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/tcp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "floor.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, FLOOR_M);
	__type(key, __u32);
	__type(value, __u32);
} floor_slots SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, FLOOR_MAX_BACKENDS);
	__type(key, __u32);
	__type(value, struct floor_backend);
} floor_backends SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, FLOOR_STAT__COUNT);
	__type(key, __u32);
	__type(value, __u64);
} floor_stats SEC(".maps");

static __always_inline int floor_count(__u32 stat, int verdict)
{
	__u64 *n = bpf_map_lookup_elem(&floor_stats, &stat);

	if (n)
		*n += 1;
	return verdict;
}

SEC("xdp")
int floor_xdp(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	const struct floor_backend *be;
	struct ethhdr *eth = data;
	struct iphdr *ip = data + ETH_HLEN, *outer;
	struct tcphdr *tcp = data + ETH_HLEN + sizeof(*ip);
	__u32 h, slot, *id, csum;
	__u16 inner_len;

	if ((void *)(tcp + 1) > data_end || eth->h_proto != bpf_htons(ETH_P_IP) ||
	    ip->ihl != 5 || ip->protocol != IPPROTO_TCP)
		return floor_count(FLOOR_STAT_PASS, XDP_PASS);
	h = ip->saddr * 0x9e3779b1u ^ ip->daddr * 0x85ebca77u ^
	    (*(__u32 *)&tcp->source) * 0xc2b2ae3du ^ ip->protocol;
	h ^= h >> 15;
	slot = h % FLOOR_M;
	id = bpf_map_lookup_elem(&floor_slots, &slot);
	if (!id)
		return floor_count(FLOOR_STAT_PASS, XDP_PASS);
	be = bpf_map_lookup_elem(&floor_backends, id);
	if (!be)
		return floor_count(FLOOR_STAT_PASS, XDP_PASS);
	inner_len = bpf_ntohs(ip->tot_len);

	if (bpf_xdp_adjust_head(ctx, -(int)sizeof(struct iphdr)))
		return floor_count(FLOOR_STAT_PASS, XDP_DROP);
	data = (void *)(long)ctx->data;
	data_end = (void *)(long)ctx->data_end;
	if (data + FLOOR_HDR_LEN > data_end)
		return floor_count(FLOOR_STAT_PASS, XDP_DROP);
	__builtin_memcpy(data, be->hdr, FLOOR_HDR_LEN);
	outer = data + ETH_HLEN;
	outer->tot_len = bpf_htons(inner_len + sizeof(*outer));
	/* The prebuilt header's checksum leaves out the length: add it. */
	csum = (__u16)~outer->check + (__u32)outer->tot_len;
	csum = (csum & 0xffff) + (csum >> 16);
	outer->check = ~((csum & 0xffff) + (csum >> 16));
	return floor_count(FLOOR_STAT_FORWARDED, XDP_TX);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
