// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * `xlb lookup`: the datapath of bpf/xlb.bpf.c, line for line, run by
 * BPF_PROG_TEST_RUN on a packet the loader builds, over the instance's own
 * maps (reused by fd: its VIPs, tables, backends, configuration, VIP
 * filter and connection table). Its answer is the datapath's, not a second
 * opinion. Two things differ, so that a lookup changes nothing:
 *
 * - the connection table is only read: XLB_CT_WRITES 0 turns each write of
 *   an entry (a refresh, a flag, a promotion, a new entry) into the count
 *   that write would have made (bpf/conntrack.h);
 * - the counters, the next-hop cache, the ICMP token buckets and the
 *   insertion rate are the program's own maps, not the instance's: the
 *   loader reads what the run counted from them, and the next hop it took.
 *
 * Test runs transmit nothing: an XDP_TX or XDP_REDIRECT verdict is
 * returned, never acted on.
 */
#define XLB_CT_WRITES 0
#include "xlb.bpf.c"
#include "lookup_result.h"

/* The last run's outcome (include/lookup_result.h). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xlb_lookup_result);
} xlb_lookup_result SEC(".maps");

SEC("xdp")
int xlb_lookup(struct xdp_md *ctx)
{
	__u64 bytes = xlb_frame_len(ctx);
	__u32 vip_id = 0, backend_id = 0, zero = 0;
	struct xlb_lookup_result *r;
	int ret;

	ret = xlb_process(ctx, &vip_id, &backend_id, &bytes);
	r = bpf_map_lookup_elem(&xlb_lookup_result, &zero);
	if (r) {
		r->ret = ret;
		r->vip_id = vip_id;
		r->backend_id = backend_id;
		r->runs++;
	}
	return xlb_account(ret, bytes, vip_id, backend_id);
}
