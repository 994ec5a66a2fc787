/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * `xlb capture`: the datapath hands packets with their outcome to
 * userspace through a ring buffer, only while a capture runs
 * (bpf/capture_ring.h, loader/inspect/capture.h).
 *
 * Switched on by a deadline in each program's .bss (xlb_capture_until,
 * CLOCK_MONOTONIC_COARSE ns) that the capturing process pushes forward
 * every XLB_CAPTURE_RENEW_MS: a capture killed with SIGKILL ends by itself
 * within XLB_CAPTURE_LEASE_MS, and the datapath then clears the deadline.
 * What it keeps is set in xlb_capture_cfg; xlb_capture_stats counts per
 * CPU what it handed over and what the full ring made it lose.
 */
#ifndef XLB_CAPTURE_REC_H
#define XLB_CAPTURE_REC_H

#include <linux/types.h>
#include "xlb.h"

#define XLB_MAP_CAPTURE_RING	"xlb_capture_ring"
#define XLB_MAP_CAPTURE_CFG	"xlb_capture_cfg"
#define XLB_MAP_CAPTURE_STATS	"xlb_capture_stats"

/* The ring's bytes: about 3,400 packets of the largest record. */
#define XLB_CAPTURE_RING_BYTES	(1U << 20)
/* A packet's first bytes kept, at most. */
#define XLB_CAPTURE_BYTES	256
/* bpf/capture_ring.h bounds a copy with a mask. */
XLB_STATIC_ASSERT((XLB_CAPTURE_BYTES & (XLB_CAPTURE_BYTES - 1)) == 0,
		  "XLB_CAPTURE_BYTES a power of two");
#define XLB_CAPTURE_LEASE_MS	2000
#define XLB_CAPTURE_RENEW_MS	500
/* backend_id of the filter: any. */
#define XLB_CAPTURE_ANY		0xffffffffU

/* What the datapath hands over; the rest of a capture's filter (its VIP,
 * the bytes kept) is the reader's, which has every packet's first
 * XLB_CAPTURE_BYTES. */
struct xlb_capture_cfg {
	__u32 reasons;		/* bit per enum xlb_stat below XLB_STAT_REASONS; 0: all */
	__u32 backend_id;	/* XLB_CAPTURE_ANY: any */
	__u32 sample;		/* one packet in sample that passes the filter; 0, 1: all */
	__u32 pad;
};
XLB_STATIC_ASSERT(sizeof(struct xlb_capture_cfg) == 16, "xlb_capture_cfg layout");
XLB_STATIC_ASSERT(XLB_STAT_REASONS <= 32, "a reason a bit of xlb_capture_cfg.reasons");

/* One packet in the ring. */
struct xlb_capture_rec {
	__u64 ts_ns;		/* bpf_ktime_get_ns(): CLOCK_MONOTONIC */
	__u32 len;		/* the frame's bytes as it leaves, every buffer */
	__u32 caplen;		/* of them in data: up to XLB_CAPTURE_BYTES */
	__u32 reason;		/* enum xlb_stat: the outcome's counter */
	__u32 verdict;		/* XDP_* */
	__u32 vip_id;		/* the VIP's, when forwarded (0 is a VIP's id too) */
	__u32 backend_id;	/* the backend named; 0 (XLB_BACKEND_NONE): none */
	__u32 ifindex;		/* received on */
	__u32 pad;
	__u8 data[XLB_CAPTURE_BYTES];	/* the frame as the program left it */
};
XLB_STATIC_ASSERT(sizeof(struct xlb_capture_rec) == 40 + XLB_CAPTURE_BYTES,
		  "xlb_capture_rec layout");

struct xlb_capture_stats {
	__u64 seen;		/* passed the filter (before sampling) */
	__u64 captured;		/* handed over */
	__u64 lost;		/* the ring was full */
};
XLB_STATIC_ASSERT(sizeof(struct xlb_capture_stats) == 24, "xlb_capture_stats layout");

#endif /* XLB_CAPTURE_REC_H */
