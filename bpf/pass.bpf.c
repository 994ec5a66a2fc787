// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Passes every frame. Test topologies attach it to the far end of a veth:
 * frames sent out of a veth with XDP_TX or XDP_REDIRECT only arrive when the
 * peer has an XDP program of its own. pass.frags.bpf.o (built with
 * XLB_FRAGS) is the same in section "xdp.frags", which a veth takes at a
 * jumbo MTU.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#ifdef XLB_FRAGS
SEC("xdp.frags")
#else
SEC("xdp")
#endif
int xdp_pass(struct xdp_md *ctx)
{
	(void)ctx;
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
