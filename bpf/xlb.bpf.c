// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* xlb: XDP layer-4 load balancer. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "maps.h"

SEC("xdp")
int xlb_xdp(struct xdp_md *ctx)
{
	(void)ctx;
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
