// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The datapath ended after one stage, end to end: bench/throughput.sh puts
 * it in xlb's place on the instance's own maps (bench/stage_load.c) and
 * reads its time per run in real traffic, stage by stage, where
 * bench/bench_datapath.c's BPF_PROG_TEST_RUN loop only shows warm caches.
 * stage_end is set through read-only data before loading, so the verifier
 * removes the rest of the path. A packet that ends early goes back out of
 * the link it came in on, unencapsulated (XDP_TX), and is counted a
 * forward, as in bench/bpf/xlb_bench.bpf.c.
 */
#include <linux/types.h>
#include "stages.h"

const volatile __u32 stage_end = XLB_STAGE_ENCAP;	/* ENCAP: the whole path */

#define XLB_STAGE_END(stage)						\
	do {								\
		if (stage_end == (stage))				\
			return XDP_TX;					\
	} while (0)

#include "xlb.bpf.c"
