/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * What the datapath does now with a packet of a flow, and why: `xlb
 * lookup`. The answer is the datapath's own: bpf/lookup.bpf.c, the
 * program of bpf/xlb.bpf.c with a read-only connection table, runs the
 * packet with BPF_PROG_TEST_RUN over the instance's maps, as received on
 * the instance's device. Its verdict, counters, VIP, backend, next hop and
 * GUE field are read back from the run; the reasons beside them (the flow
 * hash, the slot and its owner, the connection-table entry and why it is
 * honoured or not, the next hop's neighbour entry) are read from the same
 * maps with the datapath's own shared code (include/flow_hash.h,
 * include/ct_entry.h), and checked against the run.
 *
 * loader/inspect, the layer above health/ (may include common/, algo/,
 * sim/, instance/, host/, health/): looking inside a running instance
 * without changing it.
 */
#ifndef XLB_LOOKUP_H
#define XLB_LOOKUP_H

#include "src_ranges.h"
#include <stdbool.h>
#include <linux/types.h>
#include "xlb.h"
#include "neigh.h"

struct xlb_instance;
struct xlb_lookup;

/* The largest packet a lookup builds: a jumbo frame's. */
#define XLB_LOOKUP_SIZE_MAX	9000

/* The flow asked about: src the client, dst the VIP (network order, as in
 * struct xlb_flow), and whether the packet is a TCP connection's first
 * (SYN) or a later one (ACK). */
struct xlb_lookup_query {
	struct xlb_flow flow;
	bool syn;
	__u32 size;		/* the IP packet's bytes (IPv4 with DF); 0: headers only */
};

/* Why a connection-table entry is not honoured (XLB_LOOKUP_CT_HONOURED:
 * it is). */
enum xlb_lookup_ct_why {
	XLB_LOOKUP_CT_HONOURED,
	XLB_LOOKUP_CT_SYN,		/* a SYN goes by the table */
	XLB_LOOKUP_CT_EXPIRED,		/* idle past its timeout */
	XLB_LOOKUP_CT_BACKEND_GONE,	/* record not in use, removed or reused */
	XLB_LOOKUP_CT_BACKEND_EVICT,	/* down, its VIP resets connections */
};

struct xlb_lookup_answer {
	/* The run: verdict (XDP_*), the outcome's counter (enum xlb_stat,
	 * below XLB_STAT_REASONS), every counter it counted (bit per
	 * enum xlb_stat), the VIP and backend it named (0: none). */
	__u32 verdict;
	__u32 reason;
	__u32 counted;
	__u32 vip_id, backend_id;
	struct xlb_backend backend;	/* backend_id's record */
	/* GUE's field in the frame sent: the previous owner named (a
	 * stateless VIP's), if any. */
	bool gue;
	bool prev_named;
	__be32 prev[4];
	__u8 prev_family;
	/* Answered too big (icmp_too_big): the MTU the answer names. */
	__u32 answer_mtu;
	/* The next hop the run took (its own next-hop cache), when sent. */
	bool sent;
	__u32 ifindex;			/* out of it */
	__u8 dmac[6], smac[6];
	__u16 mtu;			/* the route's */
	/* The kernel's next hop of the backend and its neighbour entry;
	 * nh_err: -ENETUNREACH without a route, 0 when found. */
	int nh_err;
	struct xlb_nexthop_state nh;

	/* Why, from the maps. is_vip: the destination is a VIP's. */
	bool is_vip;
	struct xlb_vip vip;
	__u64 hash;			/* the flow hash (a tracked VIP's, a
					 * stateless one's) */
	__u32 slot;			/* hash % M */
	__u32 slot_owner;		/* backend id; 0: no table */
	struct xlb_backend owner;	/* slot_owner's record */
	/* The VIP's source ranges: whether it has lists, the client's
	 * longest match in them (src_matched), and whether they deny it. */
	bool src_lists;
	bool src_matched;
	struct xlb_src_prefix src_match;
	bool src_denied;
	/* A stateless VIP's slot history: the previous owner it names. */
	bool hist;
	struct xlb_hist_entry hist_entry;
	/* The flow's connection-table entry, if it has one. */
	bool ct_found;
	__u32 ct_index;			/* its slot in xlb_conntrack */
	struct xlb_ct_entry ct;
	struct xlb_backend ct_backend;	/* ct.backend_id's record */
	__u64 ct_idle_ns;		/* since its last packet */
	__u64 ct_timeout_ns;
	enum xlb_lookup_ct_why ct_why;
	/* NULL, or where the reasons read from the maps disagree with the
	 * run: the maps changed in between (a command, live traffic). */
	const char *mismatch;
};

/*
 * Load the lookup program over inst's maps, to run packets as received on
 * ifindex (a device of the current network namespace: the FIB is asked
 * there). It holds the maps itself: inst may be closed, and its lock
 * released, right after. Returns 0 with *out, or -errno after p_err().
 */
int xlb_lookup_open(struct xlb_instance *inst, int ifindex,
		    struct xlb_lookup **out);
void xlb_lookup_close(struct xlb_lookup *lk);

/*
 * What the datapath does with q's packet now, into *a. Changes nothing of
 * the instance. Tables are read once a VIP per lk: open another for a
 * later change. Returns 0, -EINVAL when q names no flow the datapath
 * could be asked about (mixed families, a size that holds no headers or
 * exceeds XLB_LOOKUP_SIZE_MAX), or -errno after p_err().
 */
int xlb_lookup_flow(struct xlb_lookup *lk, const struct xlb_lookup_query *q,
		    struct xlb_lookup_answer *a);

/* "drop", "pass", "tx", "redirect", "aborted". */
const char *xlb_lookup_verdict_str(__u32 verdict);
/* The counter names of enum xlb_stat ("forward", "ct_hit", ...). */
const char *xlb_lookup_stat_str(__u32 stat);
/* "honoured", "a SYN opens a new connection", ... */
const char *xlb_lookup_ct_why_str(enum xlb_lookup_ct_why why);

#endif /* XLB_LOOKUP_H */
