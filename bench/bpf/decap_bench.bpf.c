// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The backends' program (bpf/decap.bpf.c) as bench/bench_decap.c times it.
 * BPF_PROG_TEST_RUN with repeat hands every run the previous run's output:
 * a decapsulated packet, or one rewritten for the previous backend. Each
 * program here first puts the benchmark frame back (bench_restore), the
 * baselines too, so all pay for it.
 */
#include <linux/types.h>

/* Bytes of the frame's head the restore rewrites: more than any path
 * changes (Ethernet, outer IPv6, UDP and GUE headers: 86 bytes). */
#define DECAP_BENCH_HEAD	96

const volatile __u32 bench_len;		/* the benchmark frame's length */
const volatile __u64 bench_head[DECAP_BENCH_HEAD / 8];	/* and its head */
const volatile __u32 bench_shrink;	/* bytes shrink_bench takes off */

#include "decap.bpf.c"

/* Give back what the previous run took off the front, and rewrite the
 * head it may have changed. */
XLB_INLINE int bench_restore(struct xdp_md *ctx)
{
	int delta = (int)(ctx->data_end - ctx->data) - (int)bench_len;
	__u64 *head;
	int i;

	if (delta && bpf_xdp_adjust_head(ctx, delta))
		return -1;
	head = (void *)(long)ctx->data;
	if ((void *)(head + DECAP_BENCH_HEAD / 8) > (void *)(long)ctx->data_end)
		return -1;
	for (i = 0; i < DECAP_BENCH_HEAD / 8; i++)
		head[i] = bench_head[i];
	return 0;
}

SEC("xdp")
int decap_bench(struct xdp_md *ctx)
{
	if (bench_restore(ctx))
		return XDP_ABORTED;
	return decap_run(ctx);
}

/* The baseline: a program that passes every frame, behind the restore. */
SEC("xdp")
int pass_bench(struct xdp_md *ctx)
{
	if (bench_restore(ctx))
		return XDP_ABORTED;
	return XDP_PASS;
}

/*
 * The baseline, then bench_shrink bytes taken off the front as a
 * decapsulation does: the next run's restore gives them back with
 * bpf_xdp_adjust_head(), which the baseline's restore never has to. This
 * costs the baseline plus two bpf_xdp_adjust_head() calls.
 */
SEC("xdp")
int shrink_bench(struct xdp_md *ctx)
{
	if (bench_restore(ctx) || bpf_xdp_adjust_head(ctx, bench_shrink))
		return XDP_ABORTED;
	return XDP_PASS;
}
