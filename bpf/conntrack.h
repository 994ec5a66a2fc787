/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The connection table: the backend each flow went to, so that a change of
 * the backend set moves no established flow.
 *
 * xlb_conntrack (maps.h) is one LRU hash shared by all CPUs, keyed by the
 * flow. Shared rather than per CPU: when RSS sends a flow to another CPU
 * (an indirection table change, a queue count change, a second NIC), the
 * flow still finds its entry; the capacity serves all CPUs however unevenly
 * RSS spreads flows; and one table lets `xlb show` count each backend's
 * flows. Lookups take no lock; only new entries touch the LRU's lists, and
 * the rate cap below bounds how often.
 *
 * Per packet, before the VIP lookup (xlb_ct_lookup() says why that is safe):
 * - an entry that has not timed out, whose backend may still take the flow
 *   (ct_entry.h: record in use, not being removed, same generation; a
 *   draining backend may): the flow goes there, and the entry is refreshed.
 *   The entry keeps the flow's hash too, so a hit needs no hashing;
 * - otherwise, for a VIP's flow, the flow is hashed, the VIP's table picks,
 *   and the entry records the choice: in place when the flow has a stale
 *   entry, else as a new entry;
 * - a TCP SYN without ACK opens a new connection: it follows the table
 *   whatever entry its 5-tuple has (a reused port must not reach a
 *   draining backend). Any other packet creates an entry as well, so after
 *   a restart of the balancer mid-stream packets keep going where the
 *   table sends them;
 * - a FIN or RST marks the entry closing: it then times out after the TCP
 *   closing timeout of idleness instead of the TCP timeout;
 * - an ICMP error quoting a flow goes to the flow's backend (a draining one
 *   gets its path-MTU errors) but neither creates nor refreshes an entry.
 *
 * Flood protection: each CPU creates at most ct_rate_limit new entries per
 * second (a counter per one-second window). Beyond that a flow goes by the
 * table without an entry (counted ct_bypass), so a flood of new flows
 * cannot push the established ones out of the LRU; a bypassed flow still
 * reaches the table's backend, and gets an entry on a later packet.
 *
 * Entries are written through the looked-up pointer, as the LRU hands out
 * preallocated elements: should the LRU evict and reuse the element in the
 * instant between lookup and write (possible only when every other entry
 * was used more recently), another flow's entry would be overwritten.
 */
#ifndef XLB_BPF_CONNTRACK_H
#define XLB_BPF_CONNTRACK_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "xlb.h"
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
 * (bpf/ct_bench.bpf.c); it is always on otherwise. */
#ifndef XLB_CT_OFF
#define XLB_CT_OFF() 0
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

/* What xlb_ct_lookup() found, for xlb_ct_record(). */
struct xlb_ct {
	struct xlb_ct_entry *entry;	/* the flow's stale entry, or NULL */
	__u64 now;			/* the packet's bpf_ktime_get_coarse_ns() */
};

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
	__u64 bytes = ctx->data_end - ctx->data;
	const struct xlb_backend *be;
	struct xlb_ct_entry *e;

	ct->entry = NULL;
	if (XLB_CT_OFF())
		return NULL;
	e = bpf_map_lookup_elem(&xlb_conntrack, &pkt->flow);
	ct->entry = e;
	if (!e || (pkt->tcp_flags & (XLB_TCP_SYN | XLB_TCP_ACK)) == XLB_TCP_SYN ||
	    xlb_ct_expired(e, ct->now, xlb_ct_timeout_ns(cfg, pkt->flow.proto,
							 e->flags)))
		return NULL;
	be = xlb_backend_record(e->backend_id);
	if (!be || !xlb_ct_backend_usable(e, be))
		return NULL;
	*backend_id = e->backend_id;
	*hash = e->hash;
	/* Written only when they change (the coarse clock ticks every few
	 * milliseconds): a packet that only reads the entry leaves its cache
	 * line clean, and other CPUs keep their copies. */
	if (!pkt->icmp_error) {
		if (e->last_seen_ns != ct->now)
			e->last_seen_ns = ct->now;
		if ((pkt->tcp_flags & (XLB_TCP_FIN | XLB_TCP_RST)) &&
		    !(e->flags & XLB_CT_F_CLOSING))
			e->flags |= XLB_CT_F_CLOSING;
	}
	xlb_count(&xlb_stats, XLB_STAT_CT_HIT, bytes);
	return be;
}

/* Count a miss: called once the flow is known to be a VIP's, as a packet
 * of no VIP is no concern of the connection table. */
XLB_INLINE void xlb_ct_missed(struct xdp_md *ctx)
{
	if (!XLB_CT_OFF())
		xlb_count(&xlb_stats, XLB_STAT_CT_MISS, ctx->data_end - ctx->data);
}

/*
 * Record the lookup table's choice for the flow: over its stale entry, or
 * as a new entry when the rate cap allows. ICMP errors record nothing.
 */
XLB_INLINE void xlb_ct_record(struct xdp_md *ctx, const struct xlb_pkt *pkt,
			      const struct xlb_config *cfg,
			      const struct xlb_ct *ct, __u32 backend_id,
			      const struct xlb_backend *be, __u64 hash)
{
	__u64 bytes = ctx->data_end - ctx->data;
	struct xlb_ct_entry fresh = {
		.backend_id = backend_id,
		.gen = be->gen,
		.last_seen_ns = ct->now,
		.flags = pkt->tcp_flags & (XLB_TCP_FIN | XLB_TCP_RST) ?
			 XLB_CT_F_CLOSING : 0,
		.hash = hash,
	};

	if (XLB_CT_OFF() || pkt->icmp_error)
		return;
	if (ct->entry) {
		*ct->entry = fresh;
	} else if (!xlb_ct_may_insert(cfg, ct->now)) {
		xlb_count(&xlb_stats, XLB_STAT_CT_BYPASS, bytes);
		return;
	} else if (bpf_map_update_elem(&xlb_conntrack, &pkt->flow, &fresh,
				       BPF_ANY)) {
		return;
	}
	xlb_count(&xlb_stats, XLB_STAT_CT_INSERT, bytes);
}

#endif /* XLB_BPF_CONNTRACK_H */
