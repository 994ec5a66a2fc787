// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The connection table as bench/bench_conntrack.c and tests/test_conntrack.c
 * drive it: the programs of bench/bpf/xlb_bench.bpf.c (the datapath and the
 * baseline, each behind a restore of the benchmark frame), plus
 *
 * - bench_table_only: the datapath without the connection table, the path
 *   a connection-table hit or miss is compared with;
 * - xlb_new_flow: the datapath on a new flow every run: before each run
 *   the frame gets its source port and the last byte of its source address
 *   from a counter (2^24 flows), so that runs with repeat each miss the
 *   connection table, or flood it; with bench_flows, on bench_flows flows
 *   in turn, so that after the first round each run hits an entry of a
 *   table of that many.
 */
#include <stdbool.h>
#include <linux/types.h>

const volatile bool bench_table_only;
const volatile __u32 bench_flows;	/* 0: 2^24 */

#define XLB_CT_OFF() (bench_table_only)

#include "xlb_bench.bpf.c"

/* Flows made so far; the next run makes flow new_flow_seq. */
__u32 new_flow_seq;

/* One's complement update of the IPv4 header checksum for one 16-bit word
 * changed from old to new (RFC 1624, eqn. 3); all in network order. */
XLB_INLINE void bench_csum_replace(__u16 *check, __u16 old, __u16 new)
{
	__u32 sum = (__u16)~*check + (__u16)~old + new;

	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	*check = ~sum;
}

/* The frame (Ethernet, IPv4 without options or IPv6, then TCP or UDP)
 * becomes flow new_flow_seq. */
XLB_INLINE int bench_new_flow(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	__u32 seq = new_flow_seq++ % (bench_flows ? bench_flows : 1U << 24);
	struct xlb_ports *ports;
	__u16 old, *word;

	if ((void *)(eth + 1) > end)
		return -1;
	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *iph = (void *)(eth + 1);

		if ((void *)(iph + 1) > end)
			return -1;
		word = (__u16 *)&iph->saddr + 1;
		old = *word;
		((__u8 *)&iph->saddr)[3] = seq >> 16;
		bench_csum_replace(&iph->check, old, *word);
		ports = (void *)(iph + 1);
	} else {
		struct ipv6hdr *ip6h = (void *)(eth + 1);

		if ((void *)(ip6h + 1) > end)
			return -1;
		ip6h->saddr.in6_u.u6_addr8[15] = seq >> 16;
		ports = (void *)(ip6h + 1);
	}
	if ((void *)(ports + 1) > end)
		return -1;
	ports->src = bpf_htons(seq & 0xffff);
	return 0;
}

SEC("xdp")
int xlb_new_flow(struct xdp_md *ctx)
{
	if (bench_restore(ctx) || bench_new_flow(ctx))
		return XDP_ABORTED;
	return xlb_run(ctx);
}
