// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * xlb: XDP layer-4 load balancer. A packet is parsed; an established
 * flow's goes to the backend its connection-table entry names, any other
 * packet for a VIP to the backend at its flow's hash mod M in the VIP's
 * table; either is encapsulated and sent towards that backend. A
 * stateless VIP's packets skip the connection table: each goes to its
 * slot's backend, with the slot's previous owner named in GUE. A VIP
 * with source ranges turns a client they deny away first. Anything
 * else goes to the kernel untouched, but what is addressed to a VIP
 * address, which the kernel would only route back, is dropped. Each stage
 * returns 0 or a negative reason (enum xlb_stat) and xlb_account() counts
 * exactly one outcome per packet.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "xlb.h"
#include "flow_hash.h"
#include "maps.h"
#include "parse.h"
#include "select.h"
#include "src_gate.h"
#include "fib.h"
#include "encap.h"
#include "stats.h"
#include "clock.h"
#include "conntrack.h"
#include "icmp.h"
#include "capture_ring.h"
#include "stages.h"

/* Benchmarks end the path early here (bench/bpf/xlb_bench.bpf.c); no-op otherwise. */
#ifndef XLB_STAGE_END
#define XLB_STAGE_END(stage)
#endif

/*
 * A stateless VIP's packet: the backend its slot names, and the slot's
 * previous owner into *prev (*named then points to it), with no
 * connection table. Returns 0 or a negative reason.
 */
XLB_INLINE int xlb_stateless(const struct xlb_vip *vip, const struct xlb_pkt *pkt,
			     const struct xlb_config *cfg, __u32 *backend_id,
			     __u64 *hash, struct xlb_hist_entry *prev,
			     const struct xlb_hist_entry **named,
			     const struct xlb_backend **be)
{
	int err;

	if (!(cfg->flags & XLB_CFG_F_INITIALIZED))
		return -XLB_STAT_DROP_NO_CONFIG;
	*hash = xlb_vip_flow_hash(&pkt->flow, vip->flags, cfg->hash_key);
	XLB_STAGE_END(XLB_STAGE_HASH);
	err = xlb_table_pick_prev(vip, *hash, backend_id, prev, named);
	if (err)
		return err;
	*be = xlb_backend_get(*backend_id, vip);
	XLB_STAGE_END(XLB_STAGE_TABLE);
	return *be ? 0 : -XLB_STAT_DROP_NO_BACKEND;
}

XLB_INLINE int xlb_process(struct xdp_md *ctx, __u32 *vip_id, __u32 *backend_id,
			   __u64 *bytes)
{
	const struct xlb_config *cfg;
	const struct xlb_backend *be;
	const struct xlb_vip *vip;
	struct xlb_pkt pkt = {};
	const struct xlb_nexthop *nh;
	/* The slot's previous owner, for GUE: NULL, none. */
	const struct xlb_hist_entry *named = NULL;
	struct xlb_hist_entry prev;
	int guess = XLB_VIP_NONE;
	__u32 zero = 0, tot_len;
	struct xlb_ct ct;
	__u64 hash = 0;
	int err;

	err = xlb_parse(ctx, &pkt);
	/* A jumbo frame's bytes are in several buffers (l3_len is 0 when
	 * the parser did not get that far). */
	if (__builtin_expect(pkt.l3_off + pkt.l3_len > *bytes, 0))
		*bytes = bpf_xdp_get_buff_len(ctx);
	if (!err) {
		guess = xlb_vip_maybe(&pkt.flow);
		if (guess == XLB_VIP_NONE)
			err = -XLB_STAT_PASS_NOT_VIP;
	}
	if (err)
		return xlb_not_vip(ctx, &pkt, err);
	XLB_STAGE_END(XLB_STAGE_PARSE);

	cfg = bpf_map_lookup_elem(&xlb_config, &zero);
	if (!cfg)
		return -XLB_STAT_DROP_NO_CONFIG;
	/* One clock read serves the connection table and the FIB cache. */
	ct.now = xlb_now();

	/* A VIP with source ranges asks them first (bpf/src_gate.h). */
	if (__builtin_expect(guess & XLB_VIP_MAYBE_RANGED, 0)) {
		err = xlb_src_gate(&pkt.flow, vip_id);
		if (err)
			return err;
	}

	/* A stateless VIP's packet never touches the connection table: the
	 * filter names its destination, the VIP comes first (a tracked VIP
	 * sharing its bit is looked up again below, after its table). The
	 * tracked path is laid out as the expected one. */
	if (__builtin_expect(guess & XLB_VIP_MAYBE_STATELESS, 0)) {
		vip = xlb_vip_lookup(&pkt.flow);
		if (vip && vip->flags & XLB_VIP_F_STATELESS) {
			*vip_id = vip->id;
			XLB_STAGE_END(XLB_STAGE_VIP);
			err = xlb_stateless(vip, &pkt, cfg, backend_id, &hash,
					    &prev, &named, &be);
			if (err)
				return err;
			goto send;
		}
	}

	/* The backend: an established flow's is in the connection table,
	 * with the flow's hash, and the flow's VIP is its backend's... */
	be = xlb_ct_lookup(ctx, &pkt, cfg, &ct, backend_id, &hash);
	XLB_STAGE_END(XLB_STAGE_CONNTRACK);
	if (be) {
		*vip_id = be->vip_id;
	} else {
		/* ...any other flow of a VIP goes where the VIP's table says
		 * for its hash, and the connection table records it. */
		vip = xlb_vip_lookup(&pkt.flow);
		if (!vip)
			return xlb_not_vip(ctx, &pkt, -XLB_STAT_PASS_NOT_VIP);
		*vip_id = vip->id;
		/* A stateless VIP the filter did not name (a stale filter):
		 * after a connection-table miss, which wrote no slot. */
		if (__builtin_expect(vip->flags & XLB_VIP_F_STATELESS, 0)) {
			err = xlb_stateless(vip, &pkt, cfg, backend_id, &hash,
					    &prev, &named, &be);
			if (err)
				return err;
			goto send;
		}
		if (!(cfg->flags & XLB_CFG_F_INITIALIZED))
			return -XLB_STAT_DROP_NO_CONFIG;
		xlb_ct_missed(ctx);
		XLB_STAGE_END(XLB_STAGE_VIP);
		hash = xlb_vip_flow_hash(&pkt.flow, vip->flags, cfg->hash_key);
		XLB_STAGE_END(XLB_STAGE_HASH);
		err = xlb_table_pick(vip, hash, backend_id);
		if (err)
			return err;
		be = xlb_backend_get(*backend_id, vip);
		if (!be)
			return -XLB_STAT_DROP_NO_BACKEND;
		xlb_ct_record(ctx, &pkt, cfg, &ct, *backend_id, be, hash);
		XLB_STAGE_END(XLB_STAGE_TABLE);
	}

send:
	if (!xlb_outer_source_ok(be, cfg))
		return -XLB_STAT_DROP_NO_SOURCE;
	tot_len = pkt.l3_len + xlb_outer_len(be);
	if (tot_len > 0xffff)
		return -XLB_STAT_DROP_TOO_BIG;
	/* Before the packet is touched: a pass must hand over the original. */
	err = xlb_nexthop(ctx, *backend_id, be, cfg, tot_len, pkt.flow.family,
			  pkt.tos, ct.now, &nh);
	if (__builtin_expect(err == -XLB_STAT_DROP_TOO_BIG, 0))
		return xlb_icmp_too_big(ctx, &pkt, cfg, nh->mtu,
					xlb_outer_len(be), ct.now);
	if (err)
		return err;
	XLB_STAGE_END(XLB_STAGE_NEXTHOP);

	err = xlb_encap(ctx, &pkt, be, cfg, nh, named, hash);
	if (err)
		return err;
	if (nh->ifindex == ctx->ingress_ifindex)
		return XDP_TX;
	/* bpf_redirect rather than a device map: the FIB picks the egress,
	 * so nothing has to be configured, and since Linux 5.x both go
	 * through the same per-CPU bulk queue. */
	return bpf_redirect(nh->ifindex, 0);
}

XLB_INLINE int xlb_run(struct xdp_md *ctx)
{
	__u64 bytes = xlb_frame_len(ctx);
	__u32 vip_id = 0, backend_id = 0;
	int ret;

	ret = xlb_process(ctx, &vip_id, &backend_id, &bytes);
	if (xlb_capture_on())
		xlb_capture(ctx, ret, vip_id, backend_id);
	return xlb_account(ret, bytes, vip_id, backend_id);
}

/*
 * The program takes frames of several buffers (XDP multi-buffer, Linux
 * 5.18: jumbo frames). Its section stays "xdp", which `ip link ... sec
 * xdp` and any kernel take as a single-buffer program; `xlb attach` loads
 * it multi-buffer where the kernel can, and xlb.frags.bpf.o (built with
 * XLB_FRAGS) is the same program in section "xdp.frags", for `ip link` on
 * a device whose MTU needs it.
 */
#ifdef XLB_FRAGS
SEC("xdp.frags")
#else
SEC("xdp")
#endif
int xlb_xdp(struct xdp_md *ctx)
{
	return xlb_run(ctx);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
