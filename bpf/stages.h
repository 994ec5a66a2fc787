/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The stages of the datapath, in the order a packet goes through them.
 * bench/bench_datapath.c times variants of the program that stop after each
 * one (bpf/xlb_bench.bpf.c) to show where the time goes.
 */
#ifndef XLB_BPF_STAGES_H
#define XLB_BPF_STAGES_H

enum xlb_stage {
	XLB_STAGE_PARSE,	/* Ethernet to ports */
	XLB_STAGE_VIP,		/* VIP and config lookups */
	XLB_STAGE_CONNTRACK,	/* connection table lookup */
	XLB_STAGE_HASH,		/* flow hash (a flow without entry) */
	XLB_STAGE_TABLE,	/* table index and backend record, or the entry's */
	XLB_STAGE_NEXTHOP,	/* FIB (cached) */
	XLB_STAGE_ENCAP,	/* outer headers, the verdict: the whole path */
	XLB_STAGE__COUNT,
};

#endif /* XLB_BPF_STAGES_H */
