/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The stages of the datapath, in the order a packet goes through them.
 * bench/bench_datapath.c times variants of the program that stop after each
 * one (bench/bpf/xlb_bench.bpf.c) to show where the time goes.
 */
#ifndef XLB_STAGES_H
#define XLB_STAGES_H

enum xlb_stage {
	XLB_STAGE_PARSE,	/* Ethernet to ports */
	XLB_STAGE_CONNTRACK,	/* config, clock, connection table lookup */
	/* Only a flow without a valid entry goes through the next three. */
	XLB_STAGE_VIP,		/* VIP lookup */
	XLB_STAGE_HASH,		/* flow hash */
	XLB_STAGE_TABLE,	/* table index, backend record, new entry */
	XLB_STAGE_NEXTHOP,	/* FIB (cached) */
	XLB_STAGE_ENCAP,	/* outer headers, the verdict: the whole path */
	XLB_STAGE__COUNT,
};

/* The bytes bench/bpf/xlb_bench.bpf.c's grow_bench puts in front of the frame,
 * as an outer IPv4 header would: the next run's restore must take them
 * off again, as after xlb's encapsulation. */
#define XLB_BENCH_GROW_LEN	20

#endif /* XLB_STAGES_H */
