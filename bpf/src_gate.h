/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Source ranges: whether a VIP lets the flow's client in (include/xlb.h,
 * struct xlb_src_key). Asked before the connection table, so that a
 * denied client's packet costs a VIP lookup and a trie lookup, less than
 * an accepted one, and a connection of a prefix denied since it began
 * is cut at its next packet. The health checker's probes never meet it:
 * they leave the balancer through the probe path (bpf/hc.bpf.c), not
 * through this program.
 */
#ifndef XLB_BPF_SRC_GATE_H
#define XLB_BPF_SRC_GATE_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "xlb.h"
#include "maps.h"
#include "select.h"

#include "compiler.h"

/* 0, or -XLB_STAT_DROP_SRC_DENIED when the VIP found by key turns the
 * flow's client away. */
XLB_INLINE int xlb_src_check(const struct xlb_vip_key *key,
			     const struct xlb_vip *vip,
			     const struct xlb_flow *flow)
{
	const struct xlb_src_value *v;
	struct xlb_src_key k;
	__u32 deny;

	if (!(vip->flags & XLB_VIP_F_SRC_LIST))
		return 0;
	k.prefixlen = XLB_SRC_KEY_BITS +
		      (flow->family == XLB_AF_INET6 ? 128 : 32);
	k.vip = *key;
	k.gen = !!(vip->flags & XLB_VIP_F_SRC_GEN);
	k.pad[0] = k.pad[1] = k.pad[2] = 0;
	__builtin_memcpy(k.addr, flow->src, sizeof(k.addr));
	v = bpf_map_lookup_elem(&xlb_src_ranges, &k);
	deny = v ? v->deny : !!(vip->flags & XLB_VIP_F_SRC_DENY);
	return deny ? -XLB_STAT_DROP_SRC_DENIED : 0;
}

/* The flow's VIP's answer: 0, or -XLB_STAT_DROP_SRC_DENIED with the
 * VIP's id in *vip_id. A function of its own, so that the verifier
 * walks the rest of the program once whatever path it took. */
static __attribute__((noinline)) int xlb_src_gate(const struct xlb_flow *flow,
						  __u32 *vip_id)
{
	const struct xlb_vip *vip;
	struct xlb_vip_key found;
	int err;

	vip = xlb_vip_find(flow, &found);
	if (!vip)
		return 0;
	err = xlb_src_check(&found, vip, flow);
	if (err)
		*vip_id = vip->id;
	return err;
}

#endif /* XLB_BPF_SRC_GATE_H */
