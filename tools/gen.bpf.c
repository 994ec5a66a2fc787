// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The traffic generator's program (tools/xlb-gen.c). It is never attached:
 * xlb-gen runs it with BPF_PROG_TEST_RUN in live-frames mode, where the
 * kernel feeds it frames from a page pool initialised once from one template
 * and transmits every frame it returns XDP_TX for out of the device named by
 * the context's ingress_ifindex.
 *
 * One template would make one flow. So that a balancer sees many flows, the
 * program gives every frame the source address and port of a flow chosen
 * from a frame counter, and recomputes the checksums. The pool's pages are
 * recycled with whatever the receiver left in them (a balancer that
 * encapsulates writes its outer headers over the old Ethernet header; a
 * reflector swaps the MAC addresses), so every frame gets all its headers
 * written afresh from the template, never adjusted from what is there.
 *
 * Flow id -> source: the address varies fastest (src_first + id % naddrs),
 * then the port (sport_first + id / naddrs).
 *
 * A rate is kept here rather than by xlb-gen: every test run with repeat
 * > 1 costs an RCU grace period, so userspace can only pace in coarse
 * bursts, which overflow the receiver's ring. The program instead waits
 * (bpf_loop) until a frame's time has come, so frames leave evenly spaced
 * however long the test run lasts. It waits rather than drops the frames
 * that come too early: a dropped frame goes back to the page pool, and
 * once the pool's per-CPU cache is full, through the lock the receiving
 * CPU takes to give back the frames it is done with, which would charge
 * the receiver for the generator's pacing.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

/* Set by xlb-gen before loading; see gen_config() there. */
const volatile __u8 family = 4;		/* 4 or 6 */
const volatile __u8 proto = IPPROTO_UDP;
const volatile __u32 flows = 1;		/* ids 0..flows-1, without a sequence */
const volatile __u32 seq_len;		/* > 0: ids come from gen_flow_seq */
const volatile __u32 naddrs = 1;
const volatile __u32 src_first;		/* last address word, host order */
const volatile __u16 sport_first;	/* host order */
/* One's-complement sums of the template with the varied fields zeroed. */
const volatile __u32 ip_csum_base;
const volatile __u32 l4_csum_base;
/* Pacing: 0 for as fast as possible, else frames per second. */
const volatile __u64 rate;
/* Frames to send in all; 0: no limit. */
const volatile __u64 limit;

/* The template's headers, Ethernet to TCP or UDP, as xlb-gen built them
 * (source address word, source port and checksums zero). */
#define GEN_HDR_MAX	(ETH_HLEN + 40 + 20)
__u8 tmpl[GEN_HDR_MAX];

/* Frames sent; one test run executes on one CPU, and xlb-gen runs one test
 * run at a time, so plain increments are exact. */
__u64 frames;
/* When the next frame is due, in ns of bpf_ktime_get_ns(), and the
 * fraction of a ns carried (in units of 1/rate ns). */
__u64 next_ns;
__u64 next_frac;

/* The capture's flow sequence (xlb-gen --pcap): frame n uses flow
 * gen_flow_seq[n % seq_len]. Sized by xlb-gen before loading. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} gen_flow_seq SEC(".maps");

/* bpf_loop callback: stop once the next frame is due. */
static long wait_due(__u64 i __attribute__((unused)),
		     void *ctx __attribute__((unused)))
{
	return bpf_ktime_get_ns() >= next_ns;
}

/* Whether a frame may leave now, after waiting up to about a millisecond
 * for its time; at most a batch's worth of frames (64) may catch up on
 * lost time, so a preempted run does not burst. */
static __always_inline int due(void)
{
	__u64 now = bpf_ktime_get_ns();
	__u64 step = 1000000000ULL / rate;

	if (now < next_ns) {
		bpf_loop(1 << 16, wait_due, NULL, 0);
		now = bpf_ktime_get_ns();
	}
	if (now < next_ns)
		return 0;
	if (now - next_ns > 64 * step)
		next_ns = now - 64 * step;
	next_ns += step;
	next_frac += 1000000000ULL % rate;
	if (next_frac >= rate) {
		next_frac -= rate;
		next_ns++;
	}
	return 1;
}

/* Copy the template's n header bytes over the frame's. */
#define RESTORE_HEADERS(data, data_end, n)				\
	({								\
		int __ok = (data) + (n) <= (data_end);			\
		if (__ok)						\
			__builtin_memcpy((data), tmpl, (n));		\
		__ok;							\
	})

static __always_inline __u16 csum_fold(__u32 sum)
{
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)~sum;
}

SEC("xdp")
int xlb_gen(struct xdp_md *ctx)
{
	void *data_end = (void *)(long)ctx->data_end;
	void *data = (void *)(long)ctx->data;
	__u32 id, addr_sum, sum;
	__be32 addr;
	__be16 sport;
	void *l4;
	__u64 n;
	int ok;

	if (limit && frames >= limit)
		return XDP_DROP;
	if (rate && !due())
		return XDP_DROP;
	n = frames++;
	if (seq_len) {
		__u32 k = n % seq_len;
		__u32 *v = bpf_map_lookup_elem(&gen_flow_seq, &k);

		if (!v)
			return XDP_ABORTED;
		id = *v;
	} else {
		id = n % flows;
	}
	addr = bpf_htonl(src_first + id % naddrs);
	sport = bpf_htons(sport_first + id / naddrs);
	addr_sum = (addr & 0xffff) + (addr >> 16);

	if (family == 4 && proto == IPPROTO_TCP)
		ok = RESTORE_HEADERS(data, data_end, ETH_HLEN + 20 + 20);
	else if (family == 4)
		ok = RESTORE_HEADERS(data, data_end, ETH_HLEN + 20 + 8);
	else if (proto == IPPROTO_TCP)
		ok = RESTORE_HEADERS(data, data_end, ETH_HLEN + 40 + 20);
	else
		ok = RESTORE_HEADERS(data, data_end, ETH_HLEN + 40 + 8);
	if (!ok)
		return XDP_ABORTED;

	if (family == 4) {
		struct iphdr *ip = data + ETH_HLEN;

		if ((void *)(ip + 1) > data_end)
			return XDP_ABORTED;
		ip->saddr = addr;
		ip->check = csum_fold(ip_csum_base + addr_sum);
		l4 = ip + 1;
	} else {
		struct ipv6hdr *ip6 = data + ETH_HLEN;

		if ((void *)(ip6 + 1) > data_end)
			return XDP_ABORTED;
		ip6->saddr.in6_u.u6_addr32[3] = addr;
		l4 = ip6 + 1;
	}

	sum = l4_csum_base + addr_sum + sport;
	if (proto == IPPROTO_TCP) {
		struct tcphdr *th = l4;

		if ((void *)(th + 1) > data_end)
			return XDP_ABORTED;
		th->source = sport;
		th->check = csum_fold(sum);
	} else {
		struct udphdr *uh = l4;
		__u16 check = csum_fold(sum);

		if ((void *)(uh + 1) > data_end)
			return XDP_ABORTED;
		uh->source = sport;
		/* 0 means "no checksum" in UDP: a computed 0 is sent as ~0. */
		uh->check = check ? check : 0xffff;
	}
	return XDP_TX;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
