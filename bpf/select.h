/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Finding the VIP and picking the backend.
 *
 * A VIP is looked up by the flow's destination address, destination port,
 * protocol and family. Fragments have port 0 in their flow, so they find
 * the VIP registered with port 0 for that address and protocol: an operator
 * who expects fragmented traffic to a service adds that VIP (usually with
 * the same backends). A flow no VIP of its port takes (a fragment without
 * that VIP) goes to the all-port VIP of its address and protocol, if
 * there is one; else it is not a VIP's traffic.
 *
 * The backend is one array index: the VIP's table (M backend ids, M prime,
 * chosen per VIP, four to an element) at flow hash mod M.
 */
#ifndef XLB_BPF_SELECT_H
#define XLB_BPF_SELECT_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "xlb.h"
#include "maps.h"
#include "vip_filter.h"
#include "parse.h"
#include "icmp_echo.h"

#include "compiler.h"

/* What the VIP filter says of a flow's destination: none, or maybe a
 * VIP's, and then maybe a stateless one's, maybe one with source ranges. */
enum xlb_vip_guess {
	XLB_VIP_NONE = 0,	/* surely no VIP's */
	XLB_VIP_MAYBE = 1,	/* maybe a VIP's */
	XLB_VIP_MAYBE_STATELESS = 2,
	XLB_VIP_MAYBE_RANGED = 4,
};

/* The filter bit of the all-port VIP of the flow's address. */
XLB_INLINE __u32 xlb_all_port_bit(const struct xlb_flow *flow)
{
	return xlb_vip_filter_bit(flow->dst, 0,
				  flow->proto | XLB_VIP_PROTO_ALL_PORTS,
				  flow->family);
}

/* XLB_VIP_NONE when the flow is surely no VIP's: its destination's bit in
 * the VIP filter is clear. Before anything else, so that traffic sharing
 * the NIC with the VIPs costs the parse and this. Else enum xlb_vip_guess
 * bits. */
XLB_INLINE int xlb_vip_maybe(const struct xlb_flow *flow)
{
	const struct xlb_vip_filter *f;
	const struct xlb_vip_ranged *r;
	__u32 zero = 0, bit, all;
	bool port_bit = true;
	int guess;

	/* VIPs are TCP or UDP: a fragment of protocol 134 or 145 would
	 * otherwise read as an all-port VIP's key. */
	if (flow->proto & XLB_VIP_PROTO_ALL_PORTS)
		return XLB_VIP_NONE;
	f = bpf_map_lookup_elem(&xlb_vip_filter, &zero);
	/* A filter never written tells nothing: every VIP's flags are
	 * asked, its source ranges too. */
	if (!f || !f->ready)
		return XLB_VIP_MAYBE | XLB_VIP_MAYBE_RANGED;
	bit = xlb_vip_filter_bit(flow->dst, flow->dport, flow->proto,
				 flow->family);
	if (!xlb_vip_filter_has(f, bit)) {
		/* No VIP of its port: an all-port VIP of its address? */
		if (!(f->ready & XLB_VIP_FILTER_ALL_PORTS))
			return XLB_VIP_NONE;
		bit = xlb_all_port_bit(flow);
		if (!xlb_vip_filter_has(f, bit))
			return XLB_VIP_NONE;
		port_bit = false;
	}
	guess = XLB_VIP_MAYBE;
	if (__builtin_expect(f->ready & XLB_VIP_FILTER_STATELESS, 0) &&
	    f->stateless[bit / 64] >> (bit % 64) & 1)
		guess |= XLB_VIP_MAYBE_STATELESS;
	r = bpf_map_lookup_elem(&xlb_vip_ranged, &zero);
	if (__builtin_expect(!r || r->on, 0)) {
		/* No map (never: it is the program's own) asks every VIP's
		 * flags. A port's bit may be another destination's, and the
		 * flow the all-port VIP's: its bit counts too, or a port
		 * chosen for its bit would pass by the all-port VIP's
		 * ranges. */
		if (!r || r->bits[bit / 64] >> (bit % 64) & 1)
			guess |= XLB_VIP_MAYBE_RANGED;
		else if (port_bit && f->ready & XLB_VIP_FILTER_ALL_PORTS) {
			all = xlb_all_port_bit(flow);
			if (r->bits[all / 64] >> (all % 64) & 1)
				guess |= XLB_VIP_MAYBE_RANGED;
		}
	}
	return guess;
}

/*
 * Whether a destination no VIP takes is a VIP's address all the same (on
 * another port or protocol, an ICMP echo): not the balancer's own, so the
 * kernel would route it back to the router that sent it here, until its
 * TTL ran out. The filter's address bit spares most destinations the
 * lookup (a filter never written tells nothing: the map is asked).
 */
XLB_INLINE const struct xlb_vip_addr *xlb_vip_addr(const struct xlb_flow *flow)
{
	struct xlb_vip_key key = { .family = flow->family };
	const struct xlb_vip_filter *f;
	__u32 zero = 0;

	f = bpf_map_lookup_elem(&xlb_vip_filter, &zero);
	if (f && f->ready &&
	    !xlb_vip_filter_has(f, xlb_vip_filter_bit(flow->dst, 0, 0,
						       flow->family)))
		return NULL;
	__builtin_memcpy(key.addr, flow->dst, sizeof(key.addr));
	return bpf_map_lookup_elem(&xlb_vip_addrs, &key);
}

/* The outcome of a packet that is no VIP's (err: the pass reason): to the
 * kernel, unless it is addressed to a VIP address, where an echo request
 * is answered while a VIP of the address answers ping. */
XLB_INLINE int xlb_not_vip(struct xdp_md *ctx, const struct xlb_pkt *pkt,
			   int err)
{
	const struct xlb_vip_addr *a;

	if (err != -XLB_STAT_PASS_NOT_VIP && err != -XLB_STAT_PASS_ICMP_ECHO)
		return err;
	a = xlb_vip_addr(&pkt->flow);
	if (!a)
		return err;
	if (err == -XLB_STAT_PASS_ICMP_ECHO && a->vips > a->no_ping)
		return xlb_icmp_echo(ctx, pkt);
	return -XLB_STAT_DROP_VIP_PORT;
}

/*
 * The flow's VIP: the record in the slot of its filter bit, when the slot
 * holds the flow's key, which is one array index and a compare; else the
 * key's in xlb_vips, which hashes it (tens of nanoseconds of a packet
 * that goes by the table). Then, if no VIP has the flow's port (for a
 * fragment, port 0: the fragments' VIP), the all-port VIP of its address
 * and protocol, the same way: the more specific VIP wins. *found is the
 * key it was found by.
 */
XLB_INLINE const struct xlb_vip *xlb_vip_find(const struct xlb_flow *flow,
					      struct xlb_vip_key *found)
{
	struct xlb_vip_key key = {
		.port = flow->dport,
		.proto = flow->proto,
		.family = flow->family,
	};
	const struct xlb_vip_slot *slot;
	const struct xlb_vip *vip;
	const __u32 *a, *b;
	__u32 bit, diff;
	int i, k;

	if (flow->proto & XLB_VIP_PROTO_ALL_PORTS)
		return NULL;
	__builtin_memcpy(key.addr, flow->dst, sizeof(key.addr));
	for (k = 0; k < 2; k++) {
		bit = xlb_vip_key_bit(&key);
		slot = bpf_map_lookup_elem(&xlb_vip_slots, &bit);
		if (slot) {
			a = (const __u32 *)&slot->key;
			b = (const __u32 *)&key;
			diff = 0;
			for (i = 0; i < (int)(sizeof(key) / sizeof(*a)); i++)
				diff |= a[i] ^ b[i];
			if (!diff) {
				*found = key;
				return &slot->vip;
			}
		}
		vip = bpf_map_lookup_elem(&xlb_vips, &key);
		if (vip) {
			*found = key;
			return vip;
		}
		key.port = 0;
		key.proto |= XLB_VIP_PROTO_ALL_PORTS;
	}
	return NULL;
}

/* The flow's VIP, as xlb_vip_find() without the key it was found by. */
XLB_INLINE const struct xlb_vip *xlb_vip_lookup(const struct xlb_flow *flow)
{
	struct xlb_vip_key found;

	return xlb_vip_find(flow, &found);
}

/* The backend id in the VIP's table at slot hash mod M. */
XLB_INLINE int xlb_table_pick(const struct xlb_vip *vip, __u64 hash,
			      __u32 *backend_id)
{
	const struct xlb_table_elem *e;
	__u32 slot, elem;
	void *table;

	table = bpf_map_lookup_elem(&xlb_tables, &vip->id);
	if (!table || vip->table_size == 0)
		return -XLB_STAT_DROP_NO_TABLE;
	slot = (__u32)hash % vip->table_size;
	elem = 1 + slot / XLB_TABLE_IDS;
	/* NULL when the VIP's M is larger than its table. */
	e = bpf_map_lookup_elem(table, &elem);
	if (!e)
		return -XLB_STAT_DROP_NO_TABLE;
	*backend_id = e->id[slot % XLB_TABLE_IDS];
	return 0;
}

/*
 * A stateless VIP's pick: the backend id at slot hash mod M and, in
 * *prev, the slot's previous owner, *named pointing to it (left NULL
 * when the slot has none), from the table with history (include/xlb.h).
 * The entry's three elements are read one by one, as an array map's
 * lookup gives one.
 */
XLB_INLINE int xlb_table_pick_prev(const struct xlb_vip *vip, __u64 hash,
				   __u32 *backend_id,
				   struct xlb_hist_entry *prev,
				   const struct xlb_hist_entry **named)
{
	const struct xlb_table_elem *e;
	__u32 slot, elem, entry, i;
	xlb_word *to = (xlb_word *)prev;
	void *table;

	table = bpf_map_lookup_elem(&xlb_tables, &vip->id);
	if (!table || vip->table_size == 0)
		return -XLB_STAT_DROP_NO_TABLE;
	slot = (__u32)hash % vip->table_size;
	elem = 1 + slot / XLB_HIST_SLOTS;
	e = bpf_map_lookup_elem(table, &elem);
	if (!e)
		return -XLB_STAT_DROP_NO_TABLE;
	*backend_id = e->id[slot % XLB_HIST_SLOTS * 2];
	entry = e->id[slot % XLB_HIST_SLOTS * 2 + 1];
	if (!entry)
		return 0;
	elem = XLB_HIST_BASE(vip->table_size) + (entry - 1) * XLB_HIST_ELEMS;
	for (i = 0; i < XLB_HIST_ELEMS; i++) {
		__u32 at = elem + i;

		e = bpf_map_lookup_elem(table, &at);
		/* Beyond the table: a previous owner the loader never
		 * wrote, so none. */
		if (!e)
			return 0;
		to[i] = *(const xlb_word *)e;
	}
	*named = prev;
	return 0;
}

/* The backend record of an id, if the id is in use. */
XLB_INLINE const struct xlb_backend *xlb_backend_record(__u32 backend_id)
{
	const struct xlb_backend *be;

	be = bpf_map_lookup_elem(&xlb_backends, &backend_id);
	if (!be || !(be->flags & XLB_BE_F_IN_USE) ||
	    (be->family != XLB_AF_INET && be->family != XLB_AF_INET6))
		return NULL;
	return be;
}

/* The backend record, if it may receive this VIP's flows. */
XLB_INLINE const struct xlb_backend *xlb_backend_get(__u32 backend_id,
						     const struct xlb_vip *vip)
{
	const struct xlb_backend *be = xlb_backend_record(backend_id);

	if (!be || be->vip_id != vip->id)
		return NULL;
	return be;
}

#endif /* XLB_BPF_SELECT_H */
