/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The packet's time, for the connection table's timeouts and the FIB
 * cache: CLOCK_MONOTONIC_COARSE in ns, the clock `xlb show` compares
 * entries with.
 *
 * bpf_ktime_get_coarse_ns() is a helper call, and on kernels with return
 * thunks (the speculation mitigations) its three calls and returns cost an
 * established flow's packet 1-2 ns (bench/bench_datapath.c). The coarse
 * clock only moves at a timer tick, as jiffies do, and the verifier turns
 * bpf_jiffies64() into one load (64-bit JITs, Linux 5.5 on).
 * So the program keeps the clock's value with the jiffies it was read at,
 * in two global variables, and calls the helper again only once jiffies
 * have moved: once a tick, not once a packet. Globals rather than a
 * per-CPU map: a load, with no lookup; the CPUs write them once a tick.
 *
 * Races are harmless. The time is stored before its jiffies, and x86
 * keeps stores in order, so a reader that sees the new jiffies sees the
 * new time too, or a later one; two CPUs that both see jiffies move both
 * read the clock. The tick updates jiffies just before the clock, so a CPU
 * that reads in between keeps the last tick's time until the next tick:
 * the time is then two ticks old instead of one (8 ms at HZ=250), against
 * timeouts of seconds and a FIB cache of half a second.
 */
#ifndef XLB_BPF_CLOCK_H
#define XLB_BPF_CLOCK_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "compiler.h"

/* Private to the program: a fresh load reads the clock anew. */
__u64 xlb_clock_jiffies;	/* bpf_jiffies64() when xlb_clock_ns was read */
__u64 xlb_clock_ns;		/* bpf_ktime_get_coarse_ns() */

XLB_INLINE __u64 xlb_now(void)
{
	__u64 jiffies = bpf_jiffies64(), now;

	if (*(volatile __u64 *)&xlb_clock_jiffies == jiffies)
		return *(volatile __u64 *)&xlb_clock_ns;
	now = bpf_ktime_get_coarse_ns();
	*(volatile __u64 *)&xlb_clock_ns = now;
	*(volatile __u64 *)&xlb_clock_jiffies = jiffies;
	return now;
}

#endif /* XLB_BPF_CLOCK_H */
