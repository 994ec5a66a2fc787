/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Packets to `xlb capture` (include/capture_rec.h). While no capture runs the
 * datapath pays one load and a branch a packet (xlb_capture_on()); the
 * rest runs only while one does.
 */
#ifndef XLB_BPF_CAPTURE_RING_H
#define XLB_BPF_CAPTURE_RING_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "xlb.h"
#include "capture_rec.h"
#include "compiler.h"
#include "stats.h"

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, XLB_CAPTURE_RING_BYTES);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} xlb_capture_ring SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xlb_capture_cfg);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} xlb_capture_cfg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xlb_capture_stats);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} xlb_capture_stats SEC(".maps");

/* Until when a capture runs (0: none). The program's own: `xlb capture`
 * finds it through the program's .bss, as each program on the instance's
 * maps has its own. */
__u64 xlb_capture_until;

/* Benchmarks time the datapath without the check too
 * (bench/bpf/xlb_bench.bpf.c). */
#ifndef xlb_capture_on
#define xlb_capture_on() \
	__builtin_expect(*(volatile __u64 *)&xlb_capture_until != 0, 0)
#endif

/* Hand the frame, as the program leaves it, to the capture with its
 * outcome (ret as xlb_account() takes it), if the capture's filter takes
 * it. */
static __noinline int xlb_capture(struct xdp_md *ctx, int ret, __u32 vip_id,
				  __u32 backend_id)
{
	__u32 zero = 0, reason = ret < 0 ? -ret : XLB_STAT_FORWARD, caplen;
	__u64 until = xlb_capture_until, now = bpf_ktime_get_coarse_ns();
	const struct xlb_capture_cfg *cfg;
	struct xlb_capture_stats *st;
	struct xlb_capture_rec *rec;
	__u64 len;

	/* A capture that stopped renewing is over: off for the next packet,
	 * unless it renewed meanwhile. */
	if (now > until) {
		__sync_val_compare_and_swap(&xlb_capture_until, until, 0);
		return 0;
	}
	cfg = bpf_map_lookup_elem(&xlb_capture_cfg, &zero);
	st = bpf_map_lookup_elem(&xlb_capture_stats, &zero);
	if (!cfg || !st || reason >= 32)
		return 0;
	if ((cfg->reasons && !(cfg->reasons & (1U << reason))) ||
	    (cfg->backend_id != XLB_CAPTURE_ANY && cfg->backend_id != backend_id))
		return 0;
	if (st->seen++ % (cfg->sample > 1 ? cfg->sample : 1))
		return 0;
	rec = bpf_ringbuf_reserve(&xlb_capture_ring, sizeof(*rec), 0);
	if (!rec) {
		st->lost++;
		return 0;
	}
	/* The frame as it leaves: grown by an encapsulation, or an ICMP
	 * answer in place of the packet. */
	len = bpf_xdp_get_buff_len(ctx);
	caplen = len < XLB_CAPTURE_BYTES ? (__u32)len : XLB_CAPTURE_BYTES;
	if (caplen) {
		/* 1..XLB_CAPTURE_BYTES in a form every verifier reads: Linux
		 * 6.1's learns no lower bound from a test against 0, and the
		 * helper takes no empty copy. */
		caplen -= 1;
		asm volatile("" : "+r"(caplen));
		caplen = (caplen & (XLB_CAPTURE_BYTES - 1)) + 1;
		if (bpf_xdp_load_bytes(ctx, 0, rec->data, caplen))
			caplen = 0;
	}
	rec->ts_ns = bpf_ktime_get_ns();
	rec->len = len;
	rec->caplen = caplen;
	rec->reason = reason;
	rec->verdict = ret < 0 ? xlb_reason_verdict(reason) : ret;
	rec->vip_id = vip_id;
	rec->backend_id = backend_id;
	rec->ifindex = ctx->ingress_ifindex;
	rec->pad = 0;
	bpf_ringbuf_submit(rec, 0);
	st->captured++;
	return 0;
}

#endif /* XLB_BPF_CAPTURE_RING_H */
