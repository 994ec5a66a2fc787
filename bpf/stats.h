/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Counting. Every stage returns 0 or a negative enum xlb_stat reason; the
 * program turns the outcome into a verdict and counts it once, at its single
 * exit, so no path can leave uncounted.
 */
#ifndef XLB_BPF_STATS_H
#define XLB_BPF_STATS_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "xlb.h"
#include "maps.h"

#include "compiler.h"

/* The frame's length, for byte counters. Read as pointers: with 32-bit
 * subregisters (-mcpu=v3) the compiler may otherwise keep ctx->data as a
 * 32-bit value and spill it in 4 bytes, which the verifier refuses for a
 * packet pointer. */
XLB_INLINE __u64 xlb_frame_len(const struct xdp_md *ctx)
{
	return (__u64)((char *)(long)ctx->data_end - (char *)(long)ctx->data);
}

XLB_INLINE void xlb_count(void *map, __u32 key, __u64 bytes)
{
	struct xlb_counter *c = bpf_map_lookup_elem(map, &key);

	if (c) {
		c->packets++;
		c->bytes += bytes;
	}
}

/* Passes hand the packet to the kernel untouched, an ICMP answer goes
 * back out (bpf/icmp.h, bpf/icmp_echo.h); everything else that is not a
 * forward is a drop. */
XLB_INLINE int xlb_reason_verdict(__u32 reason)
{
	switch (reason) {
	case XLB_STAT_PASS_NOT_IP:
	case XLB_STAT_PASS_NOT_VIP:
	case XLB_STAT_PASS_ICMP_ECHO:
		return XDP_PASS;
	case XLB_STAT_ICMP_TOO_BIG:
	case XLB_STAT_ICMP_ECHO_REPLY:
		return XDP_TX;
	}
	return XDP_DROP;
}

/*
 * The exit: ret is an XDP verdict (a forward) or -reason. bytes is the frame
 * length as received. A forward also counts for its VIP and backend, a
 * client its VIP's source ranges turned away for that VIP.
 */
XLB_INLINE int xlb_account(int ret, __u64 bytes, __u32 vip_id, __u32 backend_id)
{
	__u32 reason = XLB_STAT_FORWARD;

	if (ret < 0) {
		reason = -ret;
		ret = xlb_reason_verdict(reason);
		if (reason == XLB_STAT_DROP_SRC_DENIED)
			xlb_count(&xlb_vip_denied, vip_id, bytes);
	} else {
		xlb_count(&xlb_vip_stats, vip_id, bytes);
		xlb_count(&xlb_backend_stats, backend_id, bytes);
	}
	xlb_count(&xlb_stats, reason, bytes);
	return ret;
}

#endif /* XLB_BPF_STATS_H */
