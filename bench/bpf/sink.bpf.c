// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The far end of the throughput benchmark's veth links: drops every frame.
 * Frames sent out of a veth with XDP_TX or XDP_REDIRECT only arrive when the
 * peer runs an XDP program, and dropping them there is the cheapest way to
 * receive them; veth counts them per queue (ethtool -S: xdp_drops), which is
 * what bench/throughput.sh reads.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("xdp")
int xdp_sink(struct xdp_md *ctx)
{
	(void)ctx;
	return XDP_DROP;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
