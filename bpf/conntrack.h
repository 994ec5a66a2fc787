/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The connection table: the backend each flow went to, so that a change of
 * the backend set moves no established flow.
 *
 * xlb_conntrack (maps.h) is one table shared by all CPUs. Shared rather
 * than per CPU: when RSS sends a flow to another CPU (an indirection table
 * change, a queue count change, a second NIC), the flow still finds its
 * entry; the capacity serves all CPUs however unevenly RSS spreads flows;
 * and one table lets `xlb show` count each backend's flows.
 *
 * It is set-associative, in an array: a flow's entry lives in one of the
 * XLB_CT_WAYS slots of the set that a cheap keyed hash of the flow picks
 * (include/ct_entry.h). A lookup is a few inlined array accesses and key
 * compares within one page, with no call and no lock. The kernel's LRU
 * hash, used before, cost a call, a hash of the 40-byte key and a walk of
 * a bucket whose elements lie on other pages, a TLB and a cache miss
 * each. The price: a set can fill while the table has room. A new flow
 * then takes the slot whose entry matters least: an empty one, else one
 * timed out, else the longest idle of the entries that never saw a second
 * packet, else the longest idle (counted ct_evict: the table or its sets
 * are too full; docs/conntrack.md).
 *
 * Per packet, before the VIP lookup (xlb_ct_lookup() says why that is safe):
 * - an entry that has not timed out, whose backend may still take the flow
 *   (ct_entry.h: record in use, not being removed, same generation; a
 *   draining backend may): the flow goes there, and the entry is refreshed.
 *   The entry keeps the flow's hash too, so a hit needs no hashing;
 * - otherwise, for a VIP's flow, the flow is hashed, the VIP's table picks,
 *   and the entry records the choice: in place when the flow has a stale
 *   entry, else in a slot of its set;
 * - a TCP SYN without ACK opens a new connection: it follows the table
 *   whatever entry its 5-tuple has (a reused port must not reach a
 *   draining backend). Any other packet creates an entry as well, so after
 *   a restart of the balancer mid-stream packets keep going where the
 *   table sends them;
 * - the packet that establishes an entry (its flow's second) moves it ahead
 *   of the one-packet entries of its set (xlb_ct_promote());
 * - a FIN or RST marks the entry closing: it then times out after the TCP
 *   closing timeout of idleness instead of the TCP timeout;
 * - an ICMP error quoting a flow goes to the flow's backend (a draining one
 *   gets its path-MTU errors) but neither creates nor refreshes an entry.
 *
 * Concurrency: each slot is a seqlock. A writer (a new entry, an entry
 * replaced, a flag set) takes the slot by moving its even seq to odd with
 * a compare-and-swap, writes, and releases it at the next even value; a
 * CPU that loses the race leaves the slot alone. A reader reads seq, the
 * key and the entry, then seq again, and trusts what it read only if seq
 * was even and unchanged: otherwise the packet goes by the lookup table,
 * which is where its entry sends it anyway unless the backends changed at
 * that very instant. The order of those plain loads and stores is the
 * program order on x86, whose memory model orders loads with loads and
 * stores with stores; compiler barriers keep that order in the code. The
 * refresh of last_seen_ns is a lone 8-byte store outside the lock: should
 * the slot change hands in between, the new entry is refreshed to a time
 * of about when it was written anyway. Two CPUs may also both insert one
 * new flow, in two slots of its set: both name the same backend, and the
 * lookup finds the first; the other times out unused.
 *
 * Flood protection: each CPU creates at most ct_rate_limit new entries per
 * second (a counter per one-second window). Beyond that a flow goes by the
 * table without an entry (counted ct_bypass, as is an insertion that lost
 * a slot to another CPU), so a flood of new flows cannot churn the table;
 * a bypassed flow still reaches the table's backend, and gets an entry on
 * a later packet. And what a flood does insert evicts only one-packet
 * entries while a set has any.
 */
#ifndef XLB_BPF_CONNTRACK_H
#define XLB_BPF_CONNTRACK_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "xlb.h"
#include "compiler.h"
#include "ct_entry.h"
#include "maps.h"
#include "parse.h"
#include "select.h"
#include "stats.h"

#define XLB_TCP_FIN	0x01
#define XLB_TCP_SYN	0x02
#define XLB_TCP_RST	0x04
#define XLB_TCP_ACK	0x10

/* Benchmarks time the path without the connection table
 * (bench/bpf/ct_bench.bpf.c); it is always on otherwise. */
#ifndef XLB_CT_OFF
#define XLB_CT_OFF() 0
#endif

/* `xlb lookup` runs the datapath on the instance's own table and must
 * change nothing there (bpf/lookup.bpf.c): it builds with 0, which turns
 * every write of an entry into the count the write would have made. */
#ifndef XLB_CT_WRITES
#define XLB_CT_WRITES 1
#endif

/* New entries made on this CPU in the current one-second window. */
struct xlb_ct_rate {
	__u64 window_ns;
	__u64 count;
};

/* Private to the program (not pinned): a fresh load starts a new window. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xlb_ct_rate);
} xlb_ct_rate SEC(".maps");

XLB_INLINE bool xlb_ct_may_insert(const struct xlb_config *cfg, __u64 now)
{
	__u32 zero = 0, limit = cfg->ct_rate_limit ? cfg->ct_rate_limit :
				XLB_CT_RATE_LIMIT;
	struct xlb_ct_rate *r = bpf_map_lookup_elem(&xlb_ct_rate, &zero);

	if (!r)
		return false;
	if (now >= r->window_ns + XLB_NS_PER_S) {
		r->window_ns = now;
		r->count = 0;
	}
	if (r->count >= limit)
		return false;
	r->count++;
	return true;
}

/* The seqlock above orders its plain loads and stores with compiler
 * barriers alone, which is right only where the CPU keeps loads in order
 * with loads and stores with stores (x86-TSO). Elsewhere it would need
 * fences that BPF cannot express without an atomic operation per lookup:
 * refuse to build rather than run a table that may return torn entries. */
#ifndef __TARGET_ARCH_x86
#error "bpf/conntrack.h: the connection table's seqlock relies on x86 memory ordering; xlb's datapath builds for x86 only"
#endif

/* Slots of xlb_conntrack less one. `xlb attach` sets it with the map's
 * size; the default matches the map's default, which `ip link` loads. */
const volatile __u32 xlb_ct_mask = XLB_CT_DEFAULT_SIZE - 1;

/* What xlb_ct_lookup() found, for xlb_ct_record(). */
/* Whether the rate cap lets the packet make a new entry (struct xlb_ct). */
enum xlb_ct_admit {
	XLB_CT_ADMIT_ASK,	/* not asked yet: ask when it comes to it */
	XLB_CT_ADMIT_YES,	/* asked, and counted as one of the window's */
	XLB_CT_ADMIT_NO,	/* asked: over the cap */
};

struct xlb_ct {
	struct xlb_ct_slot *slot;	/* the flow's slot, if it has one */
	__u32 seq;			/* slot's seq when it was read */
	__u32 set;			/* the set's first slot */
	__u64 now;			/* the packet's bpf_ktime_get_coarse_ns() */
	enum xlb_ct_admit admit;
};

/* A TCP SYN (no ACK) opens a flow: it goes by the lookup table whatever
 * an entry says, and records the table's choice. */
XLB_INLINE bool xlb_ct_opens(const struct xlb_pkt *pkt)
{
	return (pkt->tcp_flags & (XLB_TCP_SYN | XLB_TCP_ACK)) == XLB_TCP_SYN;
}

XLB_INLINE struct xlb_ct_slot *xlb_ct_slot_at(__u32 i)
{
	return bpf_map_lookup_elem(&xlb_conntrack, &i);
}

/* Does the slot hold flow f? The ports and the source's first word tell
 * most other flows apart; the other three words only then. */
XLB_INLINE bool xlb_ct_holds(const struct xlb_ct_slot *s,
			     const struct xlb_flow *f)
{
	const xlb_word *a = (const xlb_word *)&s->flow;
	const xlb_word *b = (const xlb_word *)f;

	if ((a[4] ^ b[4]) | (a[0] ^ b[0]))
		return false;
	return !((a[1] ^ b[1]) | (a[2] ^ b[2]) | (a[3] ^ b[3]));
}

/* Take slot s, last seen at seq, for writing: false if another CPU has
 * changed or taken it since. */
XLB_INLINE bool xlb_ct_lock(struct xlb_ct_slot *s, __u32 seq)
{
	return !(seq & 1) &&
	       __sync_val_compare_and_swap(&s->e.seq, seq, seq + 1) == seq;
}

XLB_INLINE void xlb_ct_unlock(struct xlb_ct_slot *s, __u32 seq)
{
	xlb_barrier();
	XLB_WRITE_ONCE(s->e.seq, seq + 2);
}

/* Set flags on the entry a hit found (at seq), once. */
XLB_INLINE void xlb_ct_flag(struct xlb_ct_slot *s, __u32 seq, __u16 flags)
{
	if (!xlb_ct_lock(s, seq))
		return;
	xlb_barrier();
	s->e.flags = flags;
	xlb_ct_unlock(s, seq);
}

/*
 * Promote the flow in slot s (read at seq), whose entry has just become
 * established, to slot a (read at aseq), the first of its set that the
 * lookup passed whose entry is not established: the two swap places.
 *
 * Why: a lookup reads the set's slots in order, one cache line each, up
 * to the flow's. A flow that arrives while its set is full of a flood's
 * one-packet entries takes one of their slots, any of them, and a
 * long-lived flow would pay for the lines before it on every packet:
 * between veth links, hits of 4,096 flows that came into full sets cost
 * 350 ns of the balancer's CPU a packet, 275 ns once swapped. Swapped once,
 * on the packet that establishes the flow, it stays ahead of the set's
 * one-packet entries, as new entries take an empty slot (after every
 * entry) or a one-packet entry's. Which entry gives way when the set is
 * full does not depend on the order, so this changes nothing else.
 *
 * Both slots are locked. A lookup of either flow on another CPU meanwhile
 * sees an odd seq, or reads the first slot before the swap and the second
 * after it, and misses the flow: the packet goes by the lookup table, as
 * for any entry being written, and the table may record the flow anew,
 * behind its moved entry, which lookups keep finding first. That takes a
 * flow's packets on two CPUs in the same few nanoseconds, once in the
 * flow's life. When the second lock fails the first is released
 * unchanged, and only the flag is set.
 */
/* Write flow and entry e into slot s, which the caller holds: every field
 * but the slot's seq. */
XLB_INLINE void xlb_ct_fill(struct xlb_ct_slot *s, const struct xlb_flow *flow,
			    const struct xlb_ct_entry *e)
{
	s->flow = *flow;
	s->e.backend_id = e->backend_id;
	s->e.flags = e->flags;
	s->e.gen = e->gen;
	s->e.last_seen_ns = e->last_seen_ns;
	s->e.hash = e->hash;
}

XLB_INLINE void xlb_ct_promote(struct xlb_ct_slot *s, __u32 seq,
			       struct xlb_ct_slot *a, __u32 aseq, __u16 flags)
{
	struct xlb_ct_entry e, moved;
	struct xlb_flow flow;

	if (!xlb_ct_lock(a, aseq)) {
		xlb_ct_flag(s, seq, flags);
		return;
	}
	if (!xlb_ct_lock(s, seq)) {
		xlb_ct_unlock(a, aseq);
		return;
	}
	xlb_barrier();
	flow = a->flow;
	e = a->e;
	moved = s->e;
	moved.flags = flags;
	xlb_ct_fill(a, &s->flow, &moved);
	xlb_ct_fill(s, &flow, &e);
	xlb_ct_unlock(s, seq);
	xlb_ct_unlock(a, aseq);
}

/*
 * The backend the connection table holds for the packet's flow, if it may
 * still take the flow: its record, with *backend_id and the flow's *hash
 * (kept in the entry: the outer IPv6 header's flow label is made of it).
 * NULL when the flow must go by the lookup table.
 *
 * This runs before the VIP lookup, which a hit does without: the entry was
 * made for the VIP the flow belongs to, and a valid entry's backend (same
 * generation, in use) still belongs to that VIP, since a backend record
 * never changes VIP without a new generation and deleting a VIP deletes its
 * backends. A packet of no VIP has no entry, so it only pays this lookup
 * on its way to the kernel, which costs far more.
 */
XLB_INLINE const struct xlb_backend *
xlb_ct_lookup(struct xdp_md *ctx, const struct xlb_pkt *pkt,
	      const struct xlb_config *cfg, struct xlb_ct *ct,
	      __u32 *backend_id, __u64 *hash)
{
	__u64 bytes = xlb_frame_len(ctx);
	struct xlb_ct_slot *s = NULL, *ahead = NULL;
	const struct xlb_backend *be;
	__u32 w, seq = 0, ahead_seq = 0;
	struct xlb_ct_entry e;
	__u16 flags;

	ct->slot = NULL;
	ct->seq = 0;
	ct->set = 0;
	ct->admit = XLB_CT_ADMIT_ASK;
	if (XLB_CT_OFF())
		return NULL;
	/* A SYN's lookup only finds where to record it. Past the cap nothing
	 * will be recorded, so the set is not even read: a SYN flood costs
	 * no connection-table memory traffic, and the cap is asked first. */
	if (xlb_ct_opens(pkt)) {
		ct->admit = xlb_ct_may_insert(cfg, ct->now) ? XLB_CT_ADMIT_YES :
							      XLB_CT_ADMIT_NO;
		if (ct->admit == XLB_CT_ADMIT_NO)
			return NULL;
	}
	ct->set = xlb_ct_set_of(&pkt->flow, cfg->ct_seed, xlb_ct_mask);
#pragma clang loop unroll(full)
	for (w = 0; w < XLB_CT_WAYS; w++) {
		s = xlb_ct_slot_at(ct->set + w);
		if (!s)
			return NULL;
		seq = XLB_READ_ONCE(s->e.seq);
		xlb_barrier();
		if (!(seq & 1) && xlb_ct_holds(s, &pkt->flow))
			goto found;
		/* Slots are only ever emptied all at once (a flush), and a
		 * new entry takes the set's first empty slot: none follows. */
		if (!s->flow.family)
			return NULL;
		/* Where the flow goes once established (xlb_ct_promote()). */
		if (!ahead && !(s->e.flags & XLB_CT_F_ESTABLISHED)) {
			ahead = s;
			ahead_seq = seq;
		}
	}
	return NULL;
found:
	e = s->e;
	xlb_barrier();
	if (XLB_READ_ONCE(s->e.seq) != seq)
		return NULL;
	ct->slot = s;
	ct->seq = seq;
	if (xlb_ct_opens(pkt) ||
	    xlb_ct_expired(&e, ct->now, xlb_ct_timeout_ns(cfg, pkt->flow.proto,
							  e.flags)))
		return NULL;
	be = xlb_backend_record(e.backend_id);
	/* A backend found down whose VIP resets its connections (EVICT):
	 * the flow goes where the table says now, and its new backend
	 * answers with a reset rather than the flow vanishing. */
	if (!be || !xlb_ct_backend_usable(&e, be) ||
	    (be->flags & XLB_BE_F_EVICT))
		return NULL;
	*backend_id = e.backend_id;
	*hash = e.hash;
	/* Written only when they change (the coarse clock ticks every few
	 * milliseconds): a packet that only reads the entry leaves its cache
	 * line clean, and other CPUs keep their copies. */
	if (!pkt->icmp_error && XLB_CT_WRITES) {
		if (e.last_seen_ns != ct->now)
			XLB_WRITE_ONCE(s->e.last_seen_ns, ct->now);
		flags = e.flags | XLB_CT_F_ESTABLISHED;
		if (pkt->tcp_flags & (XLB_TCP_FIN | XLB_TCP_RST))
			flags |= XLB_CT_F_CLOSING;
		if (ahead && !(e.flags & XLB_CT_F_ESTABLISHED))
			xlb_ct_promote(s, seq, ahead, ahead_seq, flags);
		else if (flags != e.flags)
			xlb_ct_flag(s, seq, flags);
	}
	xlb_count(&xlb_stats, XLB_STAT_CT_HIT, bytes);
	return be;
}

/* Count a miss: called once the flow is known to be a VIP's, as a packet
 * of no VIP is no concern of the connection table. */
XLB_INLINE void xlb_ct_missed(struct xdp_md *ctx)
{
	if (!XLB_CT_OFF())
		xlb_count(&xlb_stats, XLB_STAT_CT_MISS, xlb_frame_len(ctx));
}

/* How much the entry in slot s matters, lowest first: empty, timed out,
 * one packet only, established; within a class, the longest idle first. */
XLB_INLINE __u64 xlb_ct_worth(const struct xlb_ct_slot *s,
			      const struct xlb_config *cfg, __u64 now)
{
	__u64 class;

	if (!s->flow.family)
		return 0;
	if (xlb_ct_expired(&s->e, now, xlb_ct_timeout_ns(cfg, s->flow.proto,
							 s->e.flags)))
		class = 1;
	else if (!(s->e.flags & XLB_CT_F_ESTABLISHED))
		class = 2;
	else
		class = 3;
	/* last_seen_ns >> 8 < 2^56 */
	return class << 56 | s->e.last_seen_ns >> 8;
}

/*
 * Record the lookup table's choice for the flow: over its stale entry, or
 * in the slot of its set whose entry matters least, when the rate cap
 * allows a new entry. ICMP errors record nothing.
 */
XLB_INLINE void xlb_ct_record(struct xdp_md *ctx, const struct xlb_pkt *pkt,
			      const struct xlb_config *cfg,
			      const struct xlb_ct *ct, __u32 backend_id,
			      const struct xlb_backend *be, __u64 hash)
{
	__u64 bytes = xlb_frame_len(ctx), worth, least = ~0ULL;
	struct xlb_ct_slot *s = ct->slot, *cand;
	__u32 w, seq = ct->seq;
	__u16 flags = pkt->tcp_flags & (XLB_TCP_FIN | XLB_TCP_RST) ?
		      XLB_CT_F_CLOSING : 0;

	if (XLB_CT_OFF() || pkt->icmp_error)
		return;
	/* The flow's entry already says all this (a SYN sent again): only
	 * its time changes, a lone store as a hit makes, with no lock. */
	if (s && s->e.backend_id == backend_id && s->e.gen == be->gen &&
	    s->e.hash == hash && s->e.flags == flags) {
		if (XLB_CT_WRITES && s->e.last_seen_ns != ct->now)
			XLB_WRITE_ONCE(s->e.last_seen_ns, ct->now);
		xlb_count(&xlb_stats, XLB_STAT_CT_INSERT, bytes);
		return;
	}
	if (!s) {
		if (ct->admit == XLB_CT_ADMIT_NO ||
		    (ct->admit == XLB_CT_ADMIT_ASK &&
		     !xlb_ct_may_insert(cfg, ct->now))) {
			xlb_count(&xlb_stats, XLB_STAT_CT_BYPASS, bytes);
			return;
		}
#pragma clang loop unroll(full)
		for (w = 0; w < XLB_CT_WAYS; w++) {
			cand = xlb_ct_slot_at(ct->set + w);
			if (!cand)
				return;
			worth = xlb_ct_worth(cand, cfg, ct->now);
			if (worth < least) {
				least = worth;
				s = cand;
			}
			if (!worth)
				break;
		}
		if (!s)
			return;
		seq = XLB_READ_ONCE(s->e.seq);
	}
	if (!XLB_CT_WRITES) {
		if (!ct->slot && least >> 56 >= 2)
			xlb_count(&xlb_stats, XLB_STAT_CT_EVICT, bytes);
		xlb_count(&xlb_stats, XLB_STAT_CT_INSERT, bytes);
		return;
	}
	if (!xlb_ct_lock(s, seq)) {
		xlb_count(&xlb_stats, XLB_STAT_CT_BYPASS, bytes);
		return;
	}
	xlb_barrier();
	if (!ct->slot) {
		/* Live entries are worth 2 << 56 and more. */
		if (least >> 56 >= 2)
			xlb_count(&xlb_stats, XLB_STAT_CT_EVICT, bytes);
		s->flow = pkt->flow;
	}
	s->e.backend_id = backend_id;
	s->e.flags = flags;
	s->e.gen = be->gen;
	s->e.last_seen_ns = ct->now;
	s->e.hash = hash;
	xlb_ct_unlock(s, seq);
	xlb_count(&xlb_stats, XLB_STAT_CT_INSERT, bytes);
}

#endif /* XLB_BPF_CONNTRACK_H */
