// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The datapath as bench/bench_datapath.c times it. Two things differ from
 * bpf/xlb.bpf.c, both set through read-only data before loading, so the
 * verifier removes what a variant does not use:
 *
 * - bench_stage ends the path after that stage (enum xlb_stage), the
 *   packet still counted, to show where the time goes;
 * - bench_capture 0 takes the capture's check (bpf/capture_ring.h) out, to
 *   time what it costs while no capture runs;
 * - BPF_PROG_TEST_RUN with repeat hands every run the previous run's
 *   output, an encapsulated packet xlb would pass. Each program here first
 *   puts the benchmark frame back (bench_restore), and the baseline does
 *   the same, so both pay for it.
 */
#include <linux/types.h>
#include "stages.h"

const volatile __u32 bench_stage = XLB_STAGE_ENCAP;	/* ENCAP: the whole path */
const volatile __u32 bench_len;		/* the benchmark frame's length */
const volatile __u64 bench_l2[2];	/* and its Ethernet header (14 bytes) */
const volatile __u32 bench_capture = 1;	/* 0: without the capture's check */

#define xlb_capture_on()						\
	(bench_capture &&						\
	 __builtin_expect(*(volatile __u64 *)&xlb_capture_until != 0, 0))

#define XLB_STAGE_END(stage)						\
	do {								\
		if (bench_stage == (stage))				\
			return XDP_TX;					\
	} while (0)

#include "xlb.bpf.c"

/* Undo the previous run's encapsulation, if any, and rewrite the Ethernet
 * header it overwrote. */
XLB_INLINE int bench_restore(struct xdp_md *ctx)
{
	int delta = (int)(ctx->data_end - ctx->data) - (int)bench_len;
	__u64 tail = bench_l2[1];
	__u8 *data;

	if (delta && bpf_xdp_adjust_head(ctx, delta))
		return -1;
	data = (void *)(long)ctx->data;
	if ((void *)(data + ETH_HLEN) > (void *)(long)ctx->data_end)
		return -1;
	*(__u64 *)data = bench_l2[0];
	*(__u32 *)(data + 8) = (__u32)tail;
	*(__u16 *)(data + 12) = (__u16)(tail >> 32);
	return 0;
}

SEC("xdp")
int xlb_bench(struct xdp_md *ctx)
{
	if (bench_restore(ctx))
		return XDP_ABORTED;
	return xlb_run(ctx);
}

/* The baseline (bench/bpf/reflector.bpf.c) behind the same restore. */
XLB_INLINE int bench_reflect(struct xdp_md *ctx)
{
	struct ethhdr *eth;
	__u8 tmp[ETH_ALEN];

	if (bench_restore(ctx))
		return XDP_ABORTED;
	eth = (void *)(long)ctx->data;
	if ((void *)(eth + 1) > (void *)(long)ctx->data_end)
		return XDP_ABORTED;
	__builtin_memcpy(tmp, eth->h_dest, ETH_ALEN);
	__builtin_memcpy(eth->h_dest, eth->h_source, ETH_ALEN);
	__builtin_memcpy(eth->h_source, tmp, ETH_ALEN);
	return XDP_TX;
}

SEC("xdp")
int reflect_bench(struct xdp_md *ctx)
{
	return bench_reflect(ctx);
}

/*
 * The baseline, then an outer header's worth of bytes pushed in front: the
 * next run's restore takes them off with bpf_xdp_adjust_head(), as it does
 * after xlb's encapsulation, which the baseline's restore never has to.
 * This costs the baseline plus two bpf_xdp_adjust_head() calls.
 */
SEC("xdp")
int grow_bench(struct xdp_md *ctx)
{
	int ret = bench_reflect(ctx);

	if (ret != XDP_TX || bpf_xdp_adjust_head(ctx, -XLB_BENCH_GROW_LEN))
		return XDP_ABORTED;
	return XDP_TX;
}

/* One FIB lookup per run, without the cache: what the cache saves. */
const volatile __u32 bench_backend;

SEC("xdp")
int fib_bench(struct xdp_md *ctx)
{
	const struct xlb_backend *be;
	const struct xlb_config *cfg;
	struct xlb_nexthop nh;
	__u32 zero = 0, id = bench_backend;

	if (bench_restore(ctx))
		return XDP_ABORTED;
	cfg = bpf_map_lookup_elem(&xlb_config, &zero);
	be = bpf_map_lookup_elem(&xlb_backends, &id);
	if (!cfg || !be)
		return XDP_ABORTED;
	if (xlb_fib_lookup(ctx, be, cfg, 100, XLB_AF_INET, 0, &nh))
		return XDP_DROP;
	return XDP_TX;
}
