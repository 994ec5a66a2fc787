/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The packet's time, for the connection table's timeouts and the FIB
 * cache: CLOCK_MONOTONIC_COARSE in ns, the clock `xlb show` compares
 * entries with.
 *
 * bpf_ktime_get_coarse_ns() is a helper call, and on kernels with return
 * thunks (the speculation mitigations) its three calls and returns cost an
 * established flow's packet about 2 ns of its 25. The coarse clock only
 * moves at a timer tick, as jiffies do, and the verifier turns
 * bpf_jiffies64() into one load (x86-64 and arm64 JITs, Linux 5.5 on).
 * So each CPU keeps the clock's value with the jiffies it was read at, and
 * calls the helper again only once jiffies have moved: once a tick, not
 * once a packet.
 *
 * The tick updates jiffies just before the clock, so a CPU that reads in
 * between keeps the last tick's time until the next tick: the time is at
 * most two ticks old instead of one (8 ms at HZ=250), against timeouts of
 * seconds and a FIB cache of half a second.
 */
#ifndef XLB_BPF_CLOCK_H
#define XLB_BPF_CLOCK_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#ifndef XLB_INLINE
#define XLB_INLINE static inline __attribute__((always_inline))
#endif

struct xlb_clock {
	__u64 jiffies;		/* bpf_jiffies64() when now_ns was read */
	__u64 now_ns;		/* bpf_ktime_get_coarse_ns() */
};

/* Private to the program (not pinned): a fresh load reads the clock anew. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xlb_clock);
} xlb_clock SEC(".maps");

XLB_INLINE __u64 xlb_now(void)
{
	__u64 jiffies = bpf_jiffies64();
	struct xlb_clock *c;
	__u32 zero = 0;

	c = bpf_map_lookup_elem(&xlb_clock, &zero);
	if (!c)
		return bpf_ktime_get_coarse_ns();
	if (c->jiffies != jiffies) {
		c->now_ns = bpf_ktime_get_coarse_ns();
		c->jiffies = jiffies;
	}
	return c->now_ns;
}

#endif /* XLB_BPF_CLOCK_H */
