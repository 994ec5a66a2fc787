// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Health probes on the traffic's path: an LWT xmit program on the routes of
 * xlb's probe table (loader/health/hc_path.c). A probe's packet, addressed
 * to the VIP, carries XLB_HC_MARK_BASE | backend id in its mark; the
 * program puts in front of it the outer headers the datapath puts in front
 * of a client's packet for that backend (bpf/encap_hdr.h: IP, and UDP and
 * GUE for a backend of a GUE VIP), from the instance's own maps, and hands
 * the result back to the kernel to be routed to the backend, whose next
 * hop the kernel resolves as for any packet it sends. So a probe finds a
 * backend down that answers ping but lacks the VIP or its decapsulation,
 * as client traffic would.
 *
 * Only marked packets are routed here; anything else that arrives is
 * dropped, and every drop is counted by reason (include/hc.h).
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>
#include "xlb.h"
#include "hc.h"
#include "encap_hdr.h"

/*
 * The instance's maps, as bpf/maps.h declares them but unpinned: the
 * loader gives the program the pinned ones (bpf_map__reuse_fd) before
 * loading it, so a probe never creates an instance where there is none.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xlb_config);
} xlb_config SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XLB_MAX_BACKENDS);
	__type(key, __u32);
	__type(value, struct xlb_backend);
} xlb_backends SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XLB_HC_STAT__MAX);
	__type(key, __u32);
	__type(value, struct xlb_counter);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} xlb_hc_stats SEC(".maps");

/* The carried packet's family and TOS (traffic class). The kernel gives
 * an LWT program the packet from its IP header on. */
XLB_INLINE int xlb_hc_inner(struct __sk_buff *skb, __u8 *family, __u8 *tos)
{
	void *data = (void *)(long)skb->data;
	void *end = (void *)(long)skb->data_end;

	if (skb->protocol == bpf_htons(ETH_P_IP)) {
		struct iphdr *iph = data;

		if ((void *)(iph + 1) > end)
			return -XLB_HC_STAT_DROP_NOT_IP;
		*family = XLB_AF_INET;
		*tos = iph->tos;
	} else if (skb->protocol == bpf_htons(ETH_P_IPV6)) {
		__u8 *b = data;

		if ((void *)(b + sizeof(struct ipv6hdr)) > end)
			return -XLB_HC_STAT_DROP_NOT_IP;
		*family = XLB_AF_INET6;
		/* Version 4 bits, traffic class 8, flow label 20. */
		*tos = (b[0] << 4) | (b[1] >> 4);
	} else {
		return -XLB_HC_STAT_DROP_NOT_IP;
	}
	return 0;
}

/* The outer headers of a backend of each family: its IP header, then,
 * for a backend of a GUE VIP (XLB_BE_F_GUE), UDP and GUE. */
struct xlb_hc_outer4 {
	struct iphdr ip;
	struct udphdr udp;
	struct xlb_gue gue;
};

struct xlb_hc_outer6 {
	struct ipv6hdr ip;
	struct udphdr udp;
	struct xlb_gue gue;
};
XLB_STATIC_ASSERT(sizeof(struct xlb_hc_outer6) <= XLB_HC_HEADROOM,
		  "the routes' headroom fits the largest outer headers");

XLB_INLINE int xlb_hc_encap(struct __sk_buff *skb)
{
	const struct xlb_config *cfg;
	const struct xlb_backend *be;
	/* Zeroed: the verifier knows the length pushed only as a range, up
	 * to the largest headers, and lets no helper read stack never
	 * written on older kernels (6.1) or without CAP_PERFMON. */
	union {
		struct xlb_hc_outer4 v4;
		struct xlb_hc_outer6 v6;
	} outer = {};
	__u32 id, zero = 0, len = skb->len, ip_len, hash;
	__u8 family, tos, proto;
	struct udphdr *udp;
	__u64 flow_hash;
	bool gue;
	int err;

	if ((skb->mark & XLB_HC_MARK_MASK) != XLB_HC_MARK_BASE)
		return -XLB_HC_STAT_DROP_NOT_MARKED;
	id = skb->mark & ~XLB_HC_MARK_MASK;
	be = bpf_map_lookup_elem(&xlb_backends, &id);
	if (!be || id == XLB_BACKEND_NONE || !(be->flags & XLB_BE_F_IN_USE))
		return -XLB_HC_STAT_DROP_NO_BACKEND;
	cfg = bpf_map_lookup_elem(&xlb_config, &zero);
	if (!cfg)
		return -XLB_HC_STAT_DROP_NO_CONFIG;
	if (!xlb_outer_source_ok(be, cfg))
		return -XLB_HC_STAT_DROP_NO_SOURCE;
	err = xlb_hc_inner(skb, &family, &tos);
	if (err)
		return err;
	if (len + xlb_outer_len(be) > 0xffff)
		return -XLB_HC_STAT_DROP_TOO_BIG;

	/* The kernel's hash of the probe's connection stands for the
	 * datapath's flow hash, whose low bits give the IPv6 flow label and
	 * whose high half the UDP source port: both from this one, so every
	 * packet of a probe takes one path and one queue of the backend. */
	hash = bpf_get_hash_recalc(skb);
	flow_hash = (__u64)hash << 32 | hash;
	gue = be->flags & XLB_BE_F_GUE;
	ip_len = gue ? len + XLB_GUE_OVERHEAD : len;
	proto = gue ? IPPROTO_UDP : xlb_inner_proto(family);
	if (be->family == XLB_AF_INET) {
		xlb_write_ipv4_proto(&outer.v4.ip, ip_len, tos, proto, be, cfg);
		udp = &outer.v4.udp;
	} else {
		xlb_write_ipv6_proto(&outer.v6.ip, ip_len, tos, proto, be, cfg,
				     flow_hash);
		udp = &outer.v6.udp;
	}
	/* A probe opens a new connection, which the backend takes itself:
	 * GUE names no previous backend. */
	if (gue)
		xlb_write_gue(udp, len, family, cfg, NULL, flow_hash);
	err = bpf_lwt_push_encap(skb, BPF_LWT_ENCAP_IP, &outer,
				 xlb_outer_len(be));
	if (err)
		return -XLB_HC_STAT_DROP_ENCAP_FAILED;
	/* The outer packet is routed again, without the mark: with it,
	 * the probe table would take it once more. */
	skb->mark = 0;
	return BPF_LWT_REROUTE;
}

SEC("lwt_xmit")
int xlb_hc(struct __sk_buff *skb)
{
	__u32 reason = XLB_HC_STAT_ENCAP, len = skb->len;
	struct xlb_counter *c;
	int ret;

	ret = xlb_hc_encap(skb);
	if (ret < 0) {
		reason = -ret;
		ret = BPF_DROP;
	}
	c = bpf_map_lookup_elem(&xlb_hc_stats, &reason);
	if (c) {
		c->packets++;
		c->bytes += len;
	}
	return ret;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
