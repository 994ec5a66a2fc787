// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * A stateless VIP (XLB_VIP_F_STATELESS) in the datapath: each packet goes
 * to its slot's backend in GUE, with xlb's field naming the slot's
 * previous owner from the table's history (include/xlb.h), or none; the
 * connection table is never read or written for it (its counters stay,
 * its map stays empty), whether the VIP filter names the VIP stateless or
 * is stale; a tracked VIP beside it keeps its connection table.
 */
#include <arpa/inet.h>
#include <sys/mman.h>
#include "testlib.h"
#include "dp_fixture.h"
#include "gue.h"
#include "history.h"
#include "vip_filter.h"

#define GUE_FIELD(hlen)	(PKT_ETH_LEN + (hlen) + 8 + 4)	/* xlb's field in a frame */

static const char *const prevs[] = { "203.0.113.77", "2001:db8:b0::77" };

/* The history the test gives VIP_TCP4 (M 31, backends in turn): slot k
 * names prevs[k % 5] when k % 5 < 2, none otherwise. */
static bool history(struct xlb_history *h)
{
	__u32 k, i;

	if (xlb_history_init(h, fx.vips[VIP_TCP4].m))
		return false;
	h->e = calloc(2, sizeof(*h->e));
	if (!h->e)
		return false;
	for (i = 0; i < 2; i++) {
		h->e[i].family = i ? XLB_AF_INET6 : XLB_AF_INET;
		pkt_addr(i ? 6 : 4, prevs[i], (__u8 *)h->e[i].addr);
		h->e[i].since = 1000 + i;
	}
	h->n = 2;
	for (k = 0; k < h->m; k++)
		h->slot[k] = k % 5 < 2 ? k % 5 + 1 : 0;
	return true;
}

/* VIP_TCP4 made stateless (GUE records, flag, table with history) or
 * tracked again as the fixture made it. */
static bool make_stateless(bool on)
{
	const struct dp_vip *v = &fx.vips[VIP_TCP4];
	struct xlb_vip_key key = { .port = htons(80), .proto = IPPROTO_TCP,
				   .family = XLB_AF_INET };
	struct xlb_vip vip = { .id = VIP_TCP4, .table_size = v->m,
			       .flags = on ? XLB_VIP_F_GUE | XLB_VIP_F_STATELESS : 0 };
	struct xlb_backend be;
	struct xlb_history h;
	__u32 i;
	int fd, err;

	pkt_addr(4, VIP4, (__u8 *)key.addr);
	for (i = 0; i < v->n_ids; i++) {
		if (bpf_map_lookup_elem(fx.maps.backends, &v->ids[i], &be))
			return false;
		be.flags = on ? be.flags | XLB_BE_F_GUE : be.flags & ~XLB_BE_F_GUE;
		if (bpf_map_update_elem(fx.maps.backends, &v->ids[i], &be, BPF_ANY))
			return false;
	}
	if (on) {
		if (!history(&h))
			return false;
		fd = xlb_table_create_hist(v->table, &h, v->m);
		xlb_history_free(&h);
		if (fd < 0)
			return false;
		err = xlb_table_install_fd(fx.maps.tables, VIP_TCP4, fd);
		close(fd);
	} else {
		err = xlb_table_install(fx.maps.tables, VIP_TCP4, v->table, v->m);
	}
	return !err && !xlb_obj_vip_write(&fx.maps, &key, &vip);
}

/* The VIP filter with VIP_TCP4's bit in the stateless set, or stale
 * (ready, no stateless bits: the VIP's packets go by the connection
 * table's lookup first). */
static bool filter(bool names_stateless)
{
	struct xlb_vip_filter *f = calloc(1, sizeof(*f));
	__be32 addr[4] = {};
	__u32 zero = 0, bit, i;
	int fd = bpf_object__find_map_fd_by_name(fx.obj, XLB_MAP_VIP_FILTER);
	bool ok;

	if (!f || fd < 0)
		return false;
	/* Every bit: no packet of the fixture's VIPs filtered out. */
	for (i = 0; i < XLB_VIP_FILTER_BITS / 64; i++)
		f->bits[i] = ~0ULL;
	f->ready = XLB_VIP_FILTER_READY;
	if (names_stateless) {
		pkt_addr(4, VIP4, (__u8 *)addr);
		bit = xlb_vip_filter_bit(addr, htons(80), IPPROTO_TCP, XLB_AF_INET);
		f->stateless[bit / 64] |= 1ULL << (bit % 64);
		f->ready |= XLB_VIP_FILTER_STATELESS;
	}
	ok = !bpf_map_update_elem(fd, &zero, f, BPF_ANY);
	free(f);
	return ok;
}

/* Non-empty slots of the connection table; emptied first if clear. */
static __u32 ct_used(bool clear)
{
	struct bpf_map *map = bpf_object__find_map_by_name(fx.obj, XLB_MAP_CONNTRACK);
	__u32 n = bpf_map__max_entries(map), used = 0, i;
	size_t len = (size_t)n * sizeof(struct xlb_ct_slot);
	struct xlb_ct_slot *s;

	s = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED,
		 bpf_map__fd(map), 0);
	if (s == MAP_FAILED)
		return ~0U;
	if (clear)
		memset(s, 0, len);
	for (i = 0; i < n; i++)
		used += s[i].flow.family != 0;
	munmap(s, len);
	return used;
}

static __u64 ct_events(void)
{
	return dp_counter(fx.maps.stats, XLB_STAT_CT_HIT).packets +
	       dp_counter(fx.maps.stats, XLB_STAT_CT_MISS).packets +
	       dp_counter(fx.maps.stats, XLB_STAT_CT_INSERT).packets +
	       dp_counter(fx.maps.stats, XLB_STAT_CT_EVICT).packets;
}

/* Flows of VIP_TCP4: the backend the slot names, and the field the
 * slot's history entry. */
static void flows(const char *what)
{
	__u8 in[PKT_MAX], out[PKT_MAX], want_prev[16];
	const struct dp_vip *v = &fx.vips[VIP_TCP4];
	__u32 out_len, retval, slot, hlen, i;
	int seen[3] = {}, fam;
	const __u8 *field;
	__u64 hash;
	size_t len;

	for (i = 0; i < 300; i++) {
		struct pkt_desc d = { .family = 4, .proto = IPPROTO_TCP,
				      .src = CLIENT4, .dst = VIP4,
				      .sport = 30000 + i, .dport = 80,
				      .tcp_flags = i % 2 ? PKT_TCP_SYN : 0 };
		struct dp_flow f = { .family = 4, .src = CLIENT4, .dst = VIP4,
				     .sport = 30000 + i, .dport = 80,
				     .proto = IPPROTO_TCP };
		struct xlb_flow flow = dp_xlb_flow(&f);
		const struct dp_backend *b;

		len = pkt_build(&d, in);
		if (!ASSERT_OK(dp_run(&fx, in, len, out, &out_len, &retval), what) ||
		    !ASSERT_EQ(retval, XDP_TX, "verdict"))
			return;
		b = &fx.backends[dp_model_backend(&fx, VIP_TCP4, &flow, &hash)];
		slot = (__u32)hash % v->m;
		hlen = b->family == 4 ? 20 : 40;
		if (!ASSERT_MEM_EQ(out + PKT_ETH_LEN + (b->family == 4 ? 16 : 24),
				   b->bin, b->family == 4 ? 4 : 16,
				   "to the slot's backend"))
			return;
		field = out + GUE_FIELD(hlen);
		ASSERT_EQ(field[0], XLB_GUE_PRIV_MAGIC, "magic");
		ASSERT_EQ(field[1], 0, "hops");
		fam = slot % 5 < 2 ? slot % 5 : 2;
		seen[fam]++;
		if (fam == 2) {
			ASSERT_EQ(field[2], XLB_AF_NONE, "no previous owner");
			continue;
		}
		memset(want_prev, 0, sizeof(want_prev));
		pkt_addr(fam ? 6 : 4, prevs[fam], want_prev);
		if (!ASSERT_EQ(field[2], fam ? XLB_AF_INET6 : XLB_AF_INET,
			       "previous owner's family") ||
		    !ASSERT_MEM_EQ(field + 4, want_prev, 16, "previous owner"))
			return;
	}
	ASSERT_TRUE(seen[0] && seen[1] && seen[2], "slots of every kind met");
}

/* Every slot of VIP_TCP4's table (and the model's) to the next backend. */
static void rotate_table(void)
{
	struct dp_vip *v = &fx.vips[VIP_TCP4];
	__u32 k, first = v->table[0];

	for (k = 0; k + 1 < v->m; k++)
		v->table[k] = v->table[k + 1];
	v->table[v->m - 1] = first;
}

/*
 * By the filter: while the VIP is tracked, two of its flows (source ports
 * 30000 and 30001) get their entries; then every slot changes owner and
 * the VIP turns stateless: a datapath that still read the connection
 * table would send those flows to their old backends. With a stale
 * filter the table is looked up (a real change of mode makes the VIP
 * anew, with backend records no entry names) and must stay empty.
 */
static void stateless_flows(bool filter_names_it)
{
	__u8 in[PKT_MAX], out[PKT_MAX];
	__u32 out_len, retval, i, want_used = filter_names_it ? 2 : 0;
	__u64 events, inserts;
	size_t len;

	if (!fixture() || !ASSERT_TRUE(make_stateless(false), "VIP tracked") ||
	    !ASSERT_EQ(ct_used(true), 0, "the connection table emptied") ||
	    !ASSERT_TRUE(filter(filter_names_it), "filter"))
		return;
	for (i = 0; i < want_used; i++) {
		struct pkt_desc d = { .family = 4, .proto = IPPROTO_TCP,
				      .src = CLIENT4, .dst = VIP4,
				      .sport = 30000 + i, .dport = 80,
				      .tcp_flags = PKT_TCP_SYN };

		len = pkt_build(&d, in);
		ASSERT_OK(dp_run(&fx, in, len, out, &out_len, &retval), "tracked run");
		ASSERT_EQ(retval, XDP_TX, "tracked verdict");
	}
	ASSERT_EQ(ct_used(false), want_used, "the tracked flows' entries");
	rotate_table();
	if (!ASSERT_TRUE(make_stateless(true), "VIP made stateless"))
		return;
	events = ct_events();
	inserts = dp_counter(fx.maps.stats, XLB_STAT_CT_INSERT).packets;
	flows(filter_names_it ? "stateless, by the filter" : "stateless, filter stale");
	ASSERT_EQ(ct_used(false), want_used, "nothing written to the connection table");
	if (filter_names_it)
		ASSERT_EQ(ct_events(), events, "no hit, miss or insert counted");
	else
		ASSERT_EQ(dp_counter(fx.maps.stats, XLB_STAT_CT_INSERT).packets,
			  inserts, "no insert counted");
	/* Back as the fixture made it (M 31: 31 turns are a whole one). */
	for (i = 0; i < fx.vips[VIP_TCP4].m - 1; i++)
		rotate_table();
}

static void stateless_vip_by_the_filter(void)
{
	stateless_flows(true);
}

static void stateless_vip_with_a_stale_filter(void)
{
	stateless_flows(false);
}

/* Back to tracked, the same flows fill the connection table again: the
 * check above is one that can fail. */
static void tracked_vip_fills_the_connection_table(void)
{
	__u8 in[PKT_MAX], out[PKT_MAX];
	__u32 out_len, retval;
	size_t len;
	struct pkt_desc d = { .family = 4, .proto = IPPROTO_TCP, .src = CLIENT4,
			      .dst = VIP4, .sport = 30001, .dport = 80,
			      .tcp_flags = PKT_TCP_SYN };

	if (!fixture() || !ASSERT_TRUE(make_stateless(false), "VIP tracked") ||
	    !ASSERT_EQ(ct_used(true), 0, "the connection table emptied") ||
	    !ASSERT_TRUE(filter(true), "filter"))
		return;
	len = pkt_build(&d, in);
	ASSERT_OK(dp_run(&fx, in, len, out, &out_len, &retval), "run");
	ASSERT_EQ(retval, XDP_TX, "verdict");
	ASSERT_EQ(ct_used(false), 1, "its entry");
}

TEST_MAIN(TEST(stateless_vip_by_the_filter),
	  TEST(stateless_vip_with_a_stale_filter),
	  TEST(tracked_vip_fills_the_connection_table))
