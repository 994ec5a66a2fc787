// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Source ranges per VIP in the datapath (bpf/src_gate.h), on the VIPs
 * of dp_fixture.h:
 *  - a VIP whose record has XLB_VIP_F_SRC_LIST, and whose filter bit is
 *    ranged, asks the trie for its client: the longest prefix under the
 *    VIP's key and the generation its record names (XLB_VIP_F_SRC_GEN)
 *    lets the client in (deny 0) or turns it away (deny 1); a client no
 *    prefix matches is turned away when the record has XLB_VIP_F_SRC_DENY
 *    (an allow list) and let in otherwise (a deny list);
 *  - a client let in is forwarded exactly as without lists; a client
 *    turned away is dropped untouched, counted once as drop_src_denied in
 *    the global counters and once in xlb_vip_denied at its VIP's id, and
 *    nowhere else;
 *  - entries of the other generation have no effect until the record's
 *    generation bit names them: one write of the record swaps a VIP's
 *    lists whole;
 *  - a VIP without XLB_VIP_F_SRC_LIST is never checked, whatever the trie
 *    holds and whatever its filter bit says;
 *  - a VIP with lists whose filter bit is not ranged (its bit absent
 *    from xlb_vip_ranged, or the map switched off) is not
 *    checked either: the loader marks the bit ranged before a record
 *    gains the flag, and clears it only after the record has lost it; a
 *    filter never written (ready 0) tells nothing, and every VIP's lists
 *    are asked;
 *  - the lists are keyed by the key the VIP was found by: an all-port
 *    VIP's by its own key (port 0), on every port, a port whose filter
 *    bit another key holds too; a VIP on one port of that address by its
 *    own;
 *  - the check precedes the stateless path and the connection table: a
 *    stateless VIP's client and an established flow's next packet are
 *    turned away as soon as their prefix is.
 */
#include <arpa/inet.h>
#include "testlib.h"
#include "dp_fixture.h"
#include "history.h"

/* ------------------------------------------------------------------ */
/* The maps of source ranges                                           */

static int src_fd = -1, ranged_fd = -1, filter_fd = -1, denied_fd = -1;
/* The VIP filter's ready as the fixture wrote it, without lists. */
static __u64 fixture_ready;

/* The fixture, and the maps source ranges live in. */
static bool src_fixture(void)
{
	if (!fixture())
		return false;
	src_fd = bpf_object__find_map_fd_by_name(fx.obj, XLB_MAP_SRC_RANGES);
	ranged_fd = bpf_object__find_map_fd_by_name(fx.obj, XLB_MAP_VIP_RANGED);
	filter_fd = bpf_object__find_map_fd_by_name(fx.obj, XLB_MAP_VIP_FILTER);
	denied_fd = bpf_object__find_map_fd_by_name(fx.obj, XLB_MAP_VIP_DENIED);
	if (!fixture_ready && filter_fd >= 0) {
		static struct xlb_vip_filter f;
		__u32 zero = 0;

		if (!bpf_map_lookup_elem(filter_fd, &zero, &f))
			fixture_ready = f.ready;
	}
	return ASSERT_NE(fixture_ready, 0, "the fixture's filter") &
	       ASSERT_GE(src_fd, 0, XLB_MAP_SRC_RANGES) &
	       ASSERT_GE(ranged_fd, 0, XLB_MAP_VIP_RANGED) &
	       ASSERT_GE(filter_fd, 0, XLB_MAP_VIP_FILTER) &
	       ASSERT_GE(denied_fd, 0, XLB_MAP_VIP_DENIED);
}

/* The key a VIP of the fixture is found by. */
static struct xlb_vip_key vip_key(__u32 id)
{
	const struct dp_vip_def *d = fx.vips[id].def;
	struct xlb_vip_key k = {
		.port = htons(d->port), .proto = d->proto,
		.family = d->family == 4 ? XLB_AF_INET : XLB_AF_INET6,
	};

	if (d->all_ports)
		k.proto |= XLB_VIP_PROTO_ALL_PORTS;
	pkt_addr(d->family, d->addr, (__u8 *)k.addr);
	return k;
}

/* The VIP's record with its XLB_VIP_F_SRC_* bits made flags. */
static bool vip_flags(__u32 id, __u32 flags)
{
	struct xlb_vip_key k = vip_key(id);
	struct xlb_vip v;

	if (bpf_map_lookup_elem(fx.maps.vips, &k, &v))
		return false;
	v.flags = (v.flags & ~XLB_VIP_F_SRC) | flags;
	return !xlb_obj_vip_write(&fx.maps, &k, &v);
}

/* The VIP's filter bit in xlb_vip_ranged, set or cleared. */
static bool ranged_bit(__u32 id, bool on)
{
	struct xlb_vip_key k = vip_key(id);
	struct xlb_vip_ranged r;
	__u32 zero = 0, bit = xlb_vip_key_bit(&k);

	if (bpf_map_lookup_elem(ranged_fd, &zero, &r))
		return false;
	if (on)
		r.bits[bit / 64] |= 1ULL << (bit % 64);
	else
		r.bits[bit / 64] &= ~(1ULL << (bit % 64));
	return !bpf_map_update_elem(ranged_fd, &zero, &r, BPF_ANY);
}

/* xlb_vip_ranged's switch: whether any VIP's bit is read at all. */
static bool ranged_on(bool on)
{
	struct xlb_vip_ranged r;
	__u32 zero = 0;

	if (bpf_map_lookup_elem(ranged_fd, &zero, &r))
		return false;
	r.on = on;
	return !bpf_map_update_elem(ranged_fd, &zero, &r, BPF_ANY);
}

/* The VIP filter's ready: set and clear are XLB_VIP_FILTER_* flags. */
static bool filter_ready(__u64 set, __u64 clear)
{
	static struct xlb_vip_filter f;
	__u32 zero = 0;

	if (bpf_map_lookup_elem(filter_fd, &zero, &f))
		return false;
	f.ready = (f.ready | set) & ~clear;
	return !bpf_map_update_elem(filter_fd, &zero, &f, BPF_ANY);
}

/* The VIP's filter bit among the stateless ones, set or cleared, and
 * ready's XLB_VIP_FILTER_STATELESS with it. */
static bool filter_stateless(__u32 id, bool on)
{
	static struct xlb_vip_filter f;
	struct xlb_vip_key k = vip_key(id);
	__u32 zero = 0, bit = xlb_vip_key_bit(&k);

	if (bpf_map_lookup_elem(filter_fd, &zero, &f))
		return false;
	if (on) {
		f.stateless[bit / 64] |= 1ULL << (bit % 64);
		f.ready |= XLB_VIP_FILTER_STATELESS;
	} else {
		f.stateless[bit / 64] &= ~(1ULL << (bit % 64));
		f.ready &= ~XLB_VIP_FILTER_STATELESS;
	}
	return !bpf_map_update_elem(filter_fd, &zero, &f, BPF_ANY);
}

/* An entry of the trie: prefix ("addr/len") under key and gen. */
static bool src_put(const struct xlb_vip_key *key, int gen,
		    const char *prefix, bool deny)
{
	struct xlb_src_key k = { .vip = *key, .gen = gen };
	struct xlb_src_value v = { .deny = deny };
	const char *slash = strchr(prefix, '/');
	char net[INET6_ADDRSTRLEN];

	if (!slash)
		return false;
	snprintf(net, sizeof(net), "%.*s", (int)(slash - prefix), prefix);
	if (!pkt_addr(key->family == XLB_AF_INET ? 4 : 6, net, (__u8 *)k.addr))
		return false;
	k.prefixlen = XLB_SRC_KEY_BITS + atoi(slash + 1);
	return !bpf_map_update_elem(src_fd, &k, &v, BPF_ANY);
}

/* Delete the trie's entries of generation gen (-1: every one). */
static bool src_delete(int gen)
{
	struct xlb_src_key k, next, *prev = NULL;
	bool ok = true;

	while (!bpf_map_get_next_key(src_fd, prev, &next)) {
		k = next;
		prev = &k;
		if (gen >= 0 && next.gen != gen)
			continue;
		ok &= !bpf_map_delete_elem(src_fd, &next);
		/* Deleting moves the walk: start it again. */
		prev = NULL;
	}
	return ok;
}

/* No VIP with lists, none ranged, the trie empty: as the fixture began. */
static bool src_reset(void)
{
	struct xlb_vip_ranged none = { 0 };
	__u32 zero = 0, id;
	bool ok = true;

	for (id = 1; id < VIP__COUNT; id++)
		ok &= vip_flags(id, 0);
	ok &= !bpf_map_update_elem(ranged_fd, &zero, &none, BPF_ANY);
	ok &= filter_ready(fixture_ready, ~fixture_ready);
	return ok & src_delete(-1);
}

/* ------------------------------------------------------------------ */
/* Running a client's packet                                           */

static __u16 next_sport = 20000;

static void read_denied(struct xlb_counter *d)
{
	__u32 id;

	for (id = 0; id < VIP__COUNT; id++)
		d[id] = dp_counter(denied_fd, id);
}

/*
 * A packet of a new flow from client to VIP id (at dport, 0: the VIP's
 * port; a first fragment when frag). Turned away: dropped untouched,
 * drop_src_denied counted once in the global counters and in the VIP's
 * xlb_vip_denied, the VIP's forwards not. Let in: forwarded as the model
 * says, counted for the VIP, no xlb_vip_denied moved. stateless: the
 * VIP's frames are GUE, checked by verdict and counters only.
 */
static void run_client(__u32 id, __u16 dport, bool frag, const char *client,
		       bool denied, bool stateless, const char *what)
{
	const struct dp_vip_def *d = fx.vips[id].def;
	struct xlb_counter before[XLB_STAT__MAX], after[XLB_STAT__MAX];
	struct xlb_counter den0[VIP__COUNT], den1[VIP__COUNT], vip0, vip1;
	struct pkt_desc pd = {
		.family = d->family, .src = client, .dst = d->addr,
		.proto = d->proto, .sport = next_sport++,
		.dport = dport ? dport : d->port, .payload_len = 20,
	};
	struct dp_flow f = { d->family, client, d->addr, pd.sport, pd.dport,
			     d->proto };
	__u8 in[PKT_MAX], out[PKT_MAX], want[PKT_MAX];
	__u32 out_len, retval, be = 0, i;
	size_t len, want_len = 0;
	int verdict = XDP_DROP;

	if (d->proto == IPPROTO_TCP)
		pd.tcp_flags = PKT_TCP_SYN;
	if (frag) {
		pd.frag = pd.mf = true;
		f.sport = f.dport = 0;
	}
	len = pkt_build(&pd, in);
	if (!ASSERT_GT(len, 0, what))
		return;
	if (!denied && !stateless) {
		struct xlb_flow flow = dp_xlb_flow(&f);

		want_len = dp_model_forward(&fx, id, &flow, in + PKT_ETH_LEN,
					    len - PKT_ETH_LEN, want, &verdict, &be);
	} else if (!denied) {
		verdict = XDP_TX;
	} else {
		memcpy(want, in, len);
		want_len = len;
	}
	read_stats(before);
	read_denied(den0);
	vip0 = dp_counter(fx.maps.vip_stats, id);
	if (!ASSERT_OK(dp_run(&fx, in, len, out, &out_len, &retval), what))
		return;
	read_stats(after);
	read_denied(den1);
	vip1 = dp_counter(fx.maps.vip_stats, id);

	ASSERT_EQ(retval, verdict, what);
	if (!stateless || denied) {
		if (!ASSERT_EQ(out_len, want_len, what) ||
		    !ASSERT_MEM_EQ(out, want, want_len, what)) {
			hexdump("input", in, len);
			hexdump("expected", want, want_len);
			hexdump("output", out, out_len);
		}
	}
	check_counted(before, after, denied ? XLB_STAT_DROP_SRC_DENIED :
			     XLB_STAT_FORWARD, len, what);
	ASSERT_EQ(vip1.packets - vip0.packets, !denied, what);
	for (i = 0; i < VIP__COUNT; i++) {
		bool here = denied && i == id;

		if (!ASSERT_EQ(den1[i].packets - den0[i].packets, here, what) |
		    !ASSERT_EQ(den1[i].bytes - den0[i].bytes, here ? len : 0, what))
			printf("  xlb_vip_denied[%u] moved\n", i);
	}
}

/* ------------------------------------------------------------------ */
/* The table of cases                                                  */

/* Record flags: an allow list (a client no prefix matches is turned
 * away), a deny list alone (let in), the entries of generation 1. */
#define ALLOW_LIST	(XLB_VIP_F_SRC_LIST | XLB_VIP_F_SRC_DENY)
#define DENY_LIST	XLB_VIP_F_SRC_LIST
#define GEN1		XLB_VIP_F_SRC_GEN

/* The filter's word on the case's VIPs. */
enum src_filter {
	RANGED,			/* their bits in xlb_vip_ranged, ready says so */
	BIT_NOT_RANGED,		/* ready says so, their bits are not there */
	READY_NOT_RANGED,	/* their bits there, the map switched off */
	NEVER_WRITTEN,		/* ready 0: the filter tells nothing */
};

struct src_vip {
	__u32 id;
	__u32 flags;		/* its record's XLB_VIP_F_SRC_* */
};

struct src_entry {
	const char *prefix;	/* NULL: the end */
	bool deny;
	__u8 gen;
	__u32 vip;		/* 0: the case's first VIP */
	__u16 port;		/* the VIP's address and protocol at this
				 * port, instead of the VIP's key */
};

struct src_probe {
	const char *client;	/* NULL: the end */
	bool denied;
	__u32 vip;		/* 0: the case's first VIP */
	__u16 dport;		/* 0: the VIP's port */
	bool frag;		/* a first fragment, found without ports */
};

struct src_case {
	const char *name;
	struct src_vip vips[2];
	enum src_filter filter;
	struct src_entry e[6];
	struct src_probe p[8];
};

#define ALLOW(p)		{ .prefix = p }
#define DENY(p)			{ .prefix = p, .deny = true }
#define ALLOW_GEN1(p)		{ .prefix = p, .gen = 1 }
#define DENY_GEN1(p)		{ .prefix = p, .deny = true, .gen = 1 }
#define LET_IN(c)		{ .client = c }
#define TURNED_AWAY(c)		{ .client = c, .denied = true }
#define LET_IN_AT(v, port, c)	{ .client = c, .vip = v, .dport = port }
#define TURNED_AWAY_AT(v, port, c) { .client = c, .denied = true, .vip = v, .dport = port }

static const struct src_case cases_src[] = {
	/* Allow lists. */
	{ "ipv4 allow list: its clients let in, the rest turned away",
	  .vips = { { VIP_TCP4, ALLOW_LIST } },
	  .e = { ALLOW("203.0.113.0/24"), ALLOW("198.51.100.7/32") },
	  .p = { LET_IN("203.0.113.5"), LET_IN("203.0.113.255"), LET_IN("198.51.100.7"),
		 TURNED_AWAY("198.51.100.8"), TURNED_AWAY("203.0.112.255"),
		 TURNED_AWAY("192.0.2.99") } },
	{ "ipv6 allow list: its clients let in, the rest turned away",
	  .vips = { { VIP_TCP6, ALLOW_LIST } },
	  .e = { ALLOW("2001:db8:c::/48"), ALLOW("2001:db8:d::7/128") },
	  .p = { LET_IN("2001:db8:c::5"), LET_IN("2001:db8:c:ffff::1"), LET_IN("2001:db8:d::7"),
		 TURNED_AWAY("2001:db8:d::8"), TURNED_AWAY("2001:db8:b::5") } },
	{ "ipv4 udp allow list",
	  .vips = { { VIP_UDP4, ALLOW_LIST } },
	  .e = { ALLOW("203.0.113.0/24") },
	  .p = { LET_IN("203.0.113.5"), TURNED_AWAY("198.51.100.1") } },
	{ "allowed clients of a vip whose backend is out of the other interface: redirected",
	  .vips = { { VIP_REDIR4, ALLOW_LIST } },
	  .e = { ALLOW("203.0.113.0/24") },
	  .p = { LET_IN("203.0.113.5"), TURNED_AWAY("198.51.100.1") } },
	{ "an allow list without entries turns every client away",
	  .vips = { { VIP_TCP4, ALLOW_LIST } },
	  .p = { TURNED_AWAY("203.0.113.5"), TURNED_AWAY("198.51.100.1") } },

	/* Deny lists alone. */
	{ "ipv4 deny list: its clients turned away, the rest let in",
	  .vips = { { VIP_UDP4, DENY_LIST } },
	  .e = { DENY("198.51.100.0/24") },
	  .p = { TURNED_AWAY("198.51.100.7"), TURNED_AWAY("198.51.100.0"),
		 LET_IN("203.0.113.5"), LET_IN("198.51.101.1") } },
	{ "ipv6 deny list: its clients turned away, the rest let in",
	  .vips = { { VIP_UDP6, DENY_LIST } },
	  .e = { DENY("2001:db8:bad::/48"), DENY("2001:db8:c::66/128") },
	  .p = { TURNED_AWAY("2001:db8:bad::1"), TURNED_AWAY("2001:db8:c::66"),
		 LET_IN("2001:db8:c::5"), LET_IN("2001:db8:c::67") } },
	{ "a deny list without entries lets every client in",
	  .vips = { { VIP_TCP4, DENY_LIST } },
	  .p = { LET_IN("203.0.113.5"), LET_IN("198.51.100.1") } },

	/* The longest match decides, either way. */
	{ "ipv4 deny /32 inside an allow /24: the /32 turned away",
	  .vips = { { VIP_TCP4, ALLOW_LIST } },
	  .e = { ALLOW("203.0.113.0/24"), DENY("203.0.113.66/32") },
	  .p = { LET_IN("203.0.113.65"), TURNED_AWAY("203.0.113.66"), LET_IN("203.0.113.67"),
		 TURNED_AWAY("198.51.100.1") } },
	{ "ipv6 deny /128 inside an allow /48: the /128 turned away",
	  .vips = { { VIP_TCP6, ALLOW_LIST } },
	  .e = { ALLOW("2001:db8:c::/48"), DENY("2001:db8:c::66/128") },
	  .p = { LET_IN("2001:db8:c::65"), TURNED_AWAY("2001:db8:c::66"), LET_IN("2001:db8:c::67"),
		 TURNED_AWAY("2001:db8:d::66") } },
	{ "ipv4 allow /25 inside a deny /24 of a deny list: the /25 let in",
	  .vips = { { VIP_TCP4, DENY_LIST } },
	  .e = { DENY("203.0.113.0/24"), ALLOW("203.0.113.0/25") },
	  .p = { LET_IN("203.0.113.5"), LET_IN("203.0.113.127"), TURNED_AWAY("203.0.113.128"),
		 TURNED_AWAY("203.0.113.200"), LET_IN("198.51.100.1") } },
	{ "ipv6 allow /64 inside a deny /48 of a deny list: the /64 let in",
	  .vips = { { VIP_TCP6, DENY_LIST } },
	  .e = { DENY("2001:db8:c::/48"), ALLOW("2001:db8:c::/64") },
	  .p = { LET_IN("2001:db8:c::5"), LET_IN("2001:db8:c::ffff:ffff:ffff:ffff"),
		 TURNED_AWAY("2001:db8:c:1::5"), TURNED_AWAY("2001:db8:c:ffff::1"),
		 LET_IN("2001:db8:d::5") } },
	{ "ipv4 three nested prefixes: each client by its longest",
	  .vips = { { VIP_TCP4, ALLOW_LIST } },
	  .e = { ALLOW("198.51.100.0/22"), DENY("198.51.101.0/24"), ALLOW("198.51.101.128/26") },
	  .p = { LET_IN("198.51.100.1"), TURNED_AWAY("198.51.101.1"), LET_IN("198.51.101.130"),
		 TURNED_AWAY("198.51.101.192"), LET_IN("198.51.103.255"),
		 TURNED_AWAY("198.51.104.0") } },

	/* Every address: 0.0.0.0/0 and ::/0. */
	{ "ipv4 allow 0.0.0.0/0 with a deny /32: every client in but the /32",
	  .vips = { { VIP_TCP4, ALLOW_LIST } },
	  .e = { ALLOW("0.0.0.0/0"), DENY("203.0.113.66/32") },
	  .p = { LET_IN("203.0.113.5"), LET_IN("198.51.100.1"), LET_IN("100.64.0.1"),
		 LET_IN("0.0.0.1"), TURNED_AWAY("203.0.113.66") } },
	{ "ipv4 deny 0.0.0.0/0 with an allow /24: every client away but the /24",
	  .vips = { { VIP_TCP4, DENY_LIST } },
	  .e = { DENY("0.0.0.0/0"), ALLOW("203.0.113.0/24") },
	  .p = { TURNED_AWAY("198.51.100.1"), TURNED_AWAY("100.64.0.1"),
		 TURNED_AWAY("223.255.255.254"), LET_IN("203.0.113.5") } },
	{ "ipv6 allow ::/0 with a deny /128: every client in but the /128",
	  .vips = { { VIP_TCP6, ALLOW_LIST } },
	  .e = { ALLOW("::/0"), DENY("2001:db8:c::66/128") },
	  .p = { LET_IN("2001:db8:c::5"), LET_IN("2001:db8:ffff::1"), LET_IN("fc00::1"),
		 TURNED_AWAY("2001:db8:c::66") } },
	{ "ipv6 deny ::/0 with an allow /48: every client away but the /48",
	  .vips = { { VIP_UDP6, DENY_LIST } },
	  .e = { DENY("::/0"), ALLOW("2001:db8:c::/48") },
	  .p = { TURNED_AWAY("2001:db8:d::5"), TURNED_AWAY("fc00::1"), LET_IN("2001:db8:c::5") } },

	/* The lists are the VIP key's: another VIP of the address, another
	 * family, another protocol has its own or none. */
	{ "the lists of one vip do not reach another vip of its address",
	  .vips = { { VIP_TCP4, DENY_LIST }, { VIP_UDP4, DENY_LIST } },
	  .e = { DENY("0.0.0.0/0"), DENY("198.51.100.0/24") },
	  .p = { TURNED_AWAY("203.0.113.5"), TURNED_AWAY("198.51.100.1"),
		 LET_IN_AT(VIP_UDP4, 0, "203.0.113.5"), LET_IN_AT(VIP_UDP4, 0, "198.51.100.1"),
		 LET_IN_AT(VIP_TCP6, 0, "2001:db8:c::5") } },
	{ "two vips with lists each meet their own",
	  .vips = { { VIP_TCP4, ALLOW_LIST }, { VIP_UDP4, DENY_LIST } },
	  .e = { ALLOW("203.0.113.0/24"), { .prefix = "203.0.113.0/24", .deny = true, .vip = VIP_UDP4 } },
	  .p = { LET_IN("203.0.113.5"), TURNED_AWAY("198.51.100.1"),
		 TURNED_AWAY_AT(VIP_UDP4, 0, "203.0.113.5"), LET_IN_AT(VIP_UDP4, 0, "198.51.100.1") } },

	/* The generation: the record names the entries that apply. */
	{ "entries of generation 1 are ignored while the record names generation 0",
	  .vips = { { VIP_TCP4, ALLOW_LIST } },
	  .e = { ALLOW("203.0.113.0/24"), ALLOW_GEN1("198.51.100.0/24"), DENY_GEN1("203.0.113.5/32") },
	  .p = { LET_IN("203.0.113.5"), LET_IN("203.0.113.6"), TURNED_AWAY("198.51.100.7") } },
	{ "the record's generation bit makes generation 1 apply, generation 0 ignored",
	  .vips = { { VIP_TCP4, ALLOW_LIST | GEN1 } },
	  .e = { ALLOW("203.0.113.0/24"), ALLOW_GEN1("198.51.100.0/24"), DENY_GEN1("203.0.113.5/32") },
	  .p = { TURNED_AWAY("203.0.113.5"), TURNED_AWAY("203.0.113.6"), LET_IN("198.51.100.7") } },
	{ "a deny list of generation 1 alone, the record naming generation 0: nothing matches",
	  .vips = { { VIP_TCP6, DENY_LIST } },
	  .e = { DENY_GEN1("::/0") },
	  .p = { LET_IN("2001:db8:c::5"), LET_IN("2001:db8:d::5") } },
	{ "an allow list of generation 0 alone, the record naming generation 1: nothing matches",
	  .vips = { { VIP_TCP4, ALLOW_LIST | GEN1 } },
	  .e = { ALLOW("0.0.0.0/0") },
	  .p = { TURNED_AWAY("203.0.113.5"), TURNED_AWAY("198.51.100.1") } },

	/* No XLB_VIP_F_SRC_LIST: never checked. */
	{ "a vip without a list is let through though entries deny everyone and its bit is ranged",
	  .vips = { { VIP_TCP4, 0 } },
	  .e = { DENY("0.0.0.0/0"), DENY_GEN1("0.0.0.0/0") },
	  .p = { LET_IN("203.0.113.5"), LET_IN("198.51.100.1") } },
	{ "the allow-list and generation bits without the list bit mean nothing",
	  .vips = { { VIP_TCP6, XLB_VIP_F_SRC_DENY | GEN1 } },
	  .e = { DENY("::/0"), DENY_GEN1("::/0") },
	  .p = { LET_IN("2001:db8:c::5"), LET_IN("2001:db8:d::5") } },

	/* The filter: a VIP whose bit is not ranged is not asked. The loader
	 * marks the bit ranged before the record has XLB_VIP_F_SRC_LIST. */
	{ "a vip with lists whose bit is not in xlb_vip_ranged is not checked",
	  .vips = { { VIP_TCP4, ALLOW_LIST } }, .filter = BIT_NOT_RANGED,
	  .e = { DENY("0.0.0.0/0") },
	  .p = { LET_IN("203.0.113.5"), LET_IN("198.51.100.1") } },
	{ "a vip with lists while xlb_vip_ranged is switched off is not checked",
	  .vips = { { VIP_TCP6, ALLOW_LIST } }, .filter = READY_NOT_RANGED,
	  .e = { DENY("::/0") },
	  .p = { LET_IN("2001:db8:c::5") } },

	{ "a filter never written asks every vip's lists",
	  .vips = { { VIP_TCP4, DENY_LIST } }, .filter = NEVER_WRITTEN,
	  .e = { DENY("198.51.100.0/24") },
	  .p = { TURNED_AWAY("198.51.100.1"), LET_IN("203.0.113.5"),
		 LET_IN_AT(VIP_UDP4, 0, "198.51.100.1") } },

	/* All-port VIPs: the key they were found by, port 0. */
	{ "ipv4 all-port vip's allow list, on any port",
	  .vips = { { VIP_ALL4, ALLOW_LIST } },
	  .e = { ALLOW("203.0.113.0/24") },
	  .p = { LET_IN_AT(VIP_ALL4, 8080, "203.0.113.5"), LET_IN_AT(VIP_ALL4, 42, "203.0.113.6"),
		 TURNED_AWAY_AT(VIP_ALL4, 8080, "198.51.100.1"),
		 TURNED_AWAY_AT(VIP_ALL4, 42, "198.51.100.1"),
		 /* Port 80 is another VIP's, without lists. */
		 LET_IN_AT(VIP_ALL4_80, 80, "198.51.100.1"),
		 { .client = "198.51.100.1", .denied = true, .vip = VIP_ALL4, .frag = true },
		 { .client = "203.0.113.5", .vip = VIP_ALL4, .frag = true } } },
	{ "ipv6 all-port vip's deny list, on any port",
	  .vips = { { VIP_ALL6, DENY_LIST } },
	  .e = { DENY("2001:db8:bad::/48") },
	  .p = { TURNED_AWAY_AT(VIP_ALL6, 9999, "2001:db8:bad::1"),
		 TURNED_AWAY_AT(VIP_ALL6, 53, "2001:db8:bad::1"),
		 LET_IN_AT(VIP_ALL6, 9999, "2001:db8:c::5") } },
	{ "an all-port vip's lists are not those of the flow's port",
	  .vips = { { VIP_ALL4, ALLOW_LIST } },
	  .e = { { .prefix = "0.0.0.0/0", .port = 8080 }, { .prefix = "0.0.0.0/0", .port = 80 } },
	  .p = { TURNED_AWAY_AT(VIP_ALL4, 8080, "203.0.113.5"),
		 TURNED_AWAY_AT(VIP_ALL4, 42, "203.0.113.5") } },
	{ "a vip on one port of an all-port vip's address keeps its own lists",
	  .vips = { { VIP_ALL4_80, DENY_LIST } },
	  .e = { DENY("198.51.100.0/24") },
	  .p = { TURNED_AWAY_AT(VIP_ALL4_80, 80, "198.51.100.1"),
		 LET_IN_AT(VIP_ALL4_80, 80, "203.0.113.5"),
		 LET_IN_AT(VIP_ALL4, 8080, "198.51.100.1") } },
};

/* Give the case's VIPs their lists; the entries under the case's VIP
 * (or theirs) and generation. */
static bool apply_case(const struct src_case *c)
{
	bool ok = src_reset();
	size_t i;

	for (i = 0; i < 2 && c->vips[i].id; i++) {
		ok &= vip_flags(c->vips[i].id, c->vips[i].flags);
		if (c->filter != BIT_NOT_RANGED)
			ok &= ranged_bit(c->vips[i].id, true);
	}
	if (c->filter == NEVER_WRITTEN)
		ok &= filter_ready(0, ~0ULL);
	else if (c->filter != READY_NOT_RANGED)
		ok &= ranged_on(true);
	for (i = 0; i < 6 && c->e[i].prefix; i++) {
		const struct src_entry *e = &c->e[i];
		struct xlb_vip_key k = vip_key(e->vip ? e->vip : c->vips[0].id);

		if (e->port) {
			k.port = htons(e->port);
			k.proto &= ~XLB_VIP_PROTO_ALL_PORTS;
		}
		ok &= src_put(&k, e->gen, e->prefix, e->deny);
	}
	return ok;
}

static void run_src_case(const struct src_case *c)
{
	char what[256];
	size_t i;

	if (!ASSERT_TRUE(apply_case(c), c->name))
		return;
	for (i = 0; i < 8 && c->p[i].client; i++) {
		const struct src_probe *p = &c->p[i];
		__u32 id = p->vip ? p->vip : c->vips[0].id;

		snprintf(what, sizeof(what), "%s: %s%s %s", c->name,
			 p->client, p->frag ? " (fragment)" : "",
			 p->denied ? "turned away" : "let in");
		run_client(id, p->dport, p->frag, p->client, p->denied, false, what);
	}
}

static void table_cases(void)
{
	size_t i;

	if (!src_fixture())
		return;
	for (i = 0; i < sizeof(cases_src) / sizeof(cases_src[0]); i++) {
		bool failed_before = test_failed;

		test_failed = false;
		run_src_case(&cases_src[i]);
		if (test_failed)
			printf("  case failed: %s\n", cases_src[i].name);
		test_failed |= failed_before;
	}
	ASSERT_TRUE(src_reset(), "reset");
}

/* ------------------------------------------------------------------ */
/* Sequences                                                           */

/*
 * A VIP's lists replaced as the loader replaces them: the new entries
 * written under the other generation change nothing; the record's one
 * write switches every client to them; deleting the old entries changes
 * nothing more.
 */
static void lists_swap_whole_by_a_generation_flip(void)
{
	struct xlb_vip_key k;

	if (!src_fixture() || !ASSERT_TRUE(src_reset(), "reset"))
		return;
	k = vip_key(VIP_TCP4);
	ASSERT_TRUE(ranged_bit(VIP_TCP4, true) &&
		    ranged_on(true) &&
		    src_put(&k, 0, "203.0.113.0/24", false) &&
		    vip_flags(VIP_TCP4, ALLOW_LIST), "the old lists");
	run_client(VIP_TCP4, 0, false, "203.0.113.5", false, false, "old: 203.0.113.5 in");
	run_client(VIP_TCP4, 0, false, "198.51.100.7", true, false, "old: 198.51.100.7 away");

	ASSERT_TRUE(src_put(&k, 1, "198.51.100.0/24", false) &&
		    src_put(&k, 1, "203.0.113.5/32", true), "the new lists, generation 1");
	run_client(VIP_TCP4, 0, false, "203.0.113.5", false, false, "written: 203.0.113.5 still in");
	run_client(VIP_TCP4, 0, false, "198.51.100.7", true, false, "written: 198.51.100.7 still away");

	ASSERT_TRUE(vip_flags(VIP_TCP4, ALLOW_LIST | GEN1), "the record names generation 1");
	run_client(VIP_TCP4, 0, false, "203.0.113.5", true, false, "flipped: 203.0.113.5 away");
	run_client(VIP_TCP4, 0, false, "203.0.113.6", true, false, "flipped: 203.0.113.6 away");
	run_client(VIP_TCP4, 0, false, "198.51.100.7", false, false, "flipped: 198.51.100.7 in");

	ASSERT_TRUE(src_delete(0), "the old entries deleted");
	run_client(VIP_TCP4, 0, false, "203.0.113.5", true, false, "cleaned: 203.0.113.5 away");
	run_client(VIP_TCP4, 0, false, "198.51.100.7", false, false, "cleaned: 198.51.100.7 in");

	/* The lists removed: the record first, the ranged bit after. */
	ASSERT_TRUE(vip_flags(VIP_TCP4, 0), "the record without lists");
	run_client(VIP_TCP4, 0, false, "203.0.113.5", false, false, "no lists: 203.0.113.5 in");
	ASSERT_TRUE(src_reset(), "reset");
}

/*
 * A port of an all-port VIP's address whose filter bit another key set
 * (the filter is a hash: a client may pick such a port) still meets the
 * all-port VIP's lists: the VIP's ranged bit is asked too.
 */
static void an_all_port_vip_holds_its_lists_on_a_port_whose_bit_is_taken(void)
{
	static const struct {
		__u32 vip;
		const char *allow, *in, *away;
	} vips[] = {
		{ VIP_ALL4, "203.0.113.0/24", "203.0.113.5", "198.51.100.1" },
		{ VIP_ALL6, "2001:db8:c::/48", "2001:db8:c::5", "2001:db8:d::5" },
	};
	static struct xlb_vip_filter f;
	struct xlb_vip_key k, at;
	__u32 zero = 0, port, taken, i;
	char what[128];

	if (!src_fixture())
		return;
	for (i = 0; i < sizeof(vips) / sizeof(vips[0]); i++) {
		if (!ASSERT_TRUE(src_reset(), "reset") ||
		    !ASSERT_OK(bpf_map_lookup_elem(filter_fd, &zero, &f), "the filter"))
			return;
		k = vip_key(vips[i].vip);
		at = k;
		at.proto &= ~XLB_VIP_PROTO_ALL_PORTS;
		/* A port no VIP has (80 is VIP_ALL4_80's), whose bit is set
		 * and is not the all-port VIP's. */
		for (taken = 0, port = 1; port < 65536 && !taken; port++) {
			at.port = htons(port);
			if (port != 80 && xlb_vip_filter_has(&f, xlb_vip_key_bit(&at)) &&
			    xlb_vip_key_bit(&at) != xlb_vip_key_bit(&k))
				taken = port;
		}
		if (!ASSERT_GT(taken, 0, "a port whose bit another key set"))
			return;
		ASSERT_TRUE(ranged_bit(vips[i].vip, true) &&
			    ranged_on(true) &&
			    src_put(&k, 0, vips[i].allow, false) &&
			    vip_flags(vips[i].vip, ALLOW_LIST), "an allow list of one client");
		snprintf(what, sizeof(what), "port %u: %s turned away", taken, vips[i].away);
		run_client(vips[i].vip, taken, false, vips[i].away, true, false, what);
		snprintf(what, sizeof(what), "port %u: %s let in", taken, vips[i].in);
		run_client(vips[i].vip, taken, false, vips[i].in, false, false, what);
	}
	ASSERT_TRUE(src_reset(), "reset");
}

/* A packet of one established flow of VIP_TCP4 (source port 45000). */
static const struct pkt_desc established = {
	V4("203.0.113.5", VIP4, TCP, 45000, 80), .tcp_flags = PKT_TCP_ACK,
	.payload_len = 10,
};

/* Forwarded as the model says, by its connection-table entry (a hit). */
static void established_forwarded(const char *what)
{
	const struct dp_flow f = { 4, "203.0.113.5", VIP4, 45000, 80, TCP };
	struct xlb_flow flow = dp_xlb_flow(&f);
	__u8 in[PKT_MAX], out[PKT_MAX], want[PKT_MAX];
	size_t len = pkt_build(&established, in), want_len;
	__u32 out_len, retval, be;
	__u64 hits = dp_counter(fx.maps.stats, XLB_STAT_CT_HIT).packets;
	int verdict;

	want_len = dp_model_forward(&fx, VIP_TCP4, &flow, in + PKT_ETH_LEN,
				    len - PKT_ETH_LEN, want, &verdict, &be);
	if (!ASSERT_OK(dp_run(&fx, in, len, out, &out_len, &retval), what))
		return;
	ASSERT_EQ(retval, verdict, what);
	ASSERT_EQ(out_len, want_len, what);
	ASSERT_MEM_EQ(out, want, want_len, what);
	ASSERT_EQ(dp_counter(fx.maps.stats, XLB_STAT_CT_HIT).packets - hits, 1,
		  "by its connection-table entry");
}

/*
 * An established flow (its connection-table entry made by its first
 * packet) is turned away at its next packet once its prefix is denied,
 * without the connection table read; let through again by the same
 * entry once the lists are gone.
 */
static void an_established_flow_is_cut_once_its_prefix_is_denied(void)
{
	struct xlb_counter den0, den1;
	struct xlb_vip_key k;
	__u8 out[PKT_MAX];
	__u32 out_len;
	__u64 hits;

	if (!src_fixture() || !ASSERT_TRUE(src_reset(), "reset"))
		return;
	{
		struct pkt_desc syn = established;

		syn.tcp_flags = PKT_TCP_SYN;
		syn.payload_len = 0;
		expect_run(&syn, XDP_TX, XLB_STAT_FORWARD, out, &out_len,
			   "the flow's first packet, no lists");
	}
	established_forwarded("established, no lists");

	k = vip_key(VIP_TCP4);
	ASSERT_TRUE(ranged_bit(VIP_TCP4, true) &&
		    ranged_on(true) &&
		    src_put(&k, 0, "203.0.113.0/24", true) &&
		    src_put(&k, 0, "203.0.113.0/30", false) &&
		    vip_flags(VIP_TCP4, DENY_LIST), "deny 203.0.113.0/24 but /30");
	/* 203.0.113.5 is outside the /30: turned away. */
	hits = dp_counter(fx.maps.stats, XLB_STAT_CT_HIT).packets;
	den0 = dp_counter(denied_fd, VIP_TCP4);
	expect_run(&established, XDP_DROP, XLB_STAT_DROP_SRC_DENIED, out, &out_len,
		   "established, its prefix denied: dropped");
	den1 = dp_counter(denied_fd, VIP_TCP4);
	ASSERT_EQ(den1.packets - den0.packets, 1, "counted for its VIP");
	ASSERT_EQ(dp_counter(fx.maps.stats, XLB_STAT_CT_HIT).packets, hits,
		  "the connection table not read");

	ASSERT_TRUE(src_put(&k, 0, "203.0.113.4/30", false), "allow 203.0.113.4/30");
	established_forwarded("established, its /30 allowed");

	ASSERT_TRUE(src_reset(), "lists gone");
	established_forwarded("established, lists gone");
}

/* VIP_MTU4's record: its mode stateless or not (tracked, as the fixture
 * made it), its lists src_flags. */
static bool mtu4_flags(bool stateless, __u32 src_flags)
{
	struct xlb_vip_key k = vip_key(VIP_MTU4);
	struct xlb_vip v;

	if (bpf_map_lookup_elem(fx.maps.vips, &k, &v))
		return false;
	v.flags &= ~(XLB_VIP_F_SRC | XLB_VIP_F_GUE | XLB_VIP_F_STATELESS);
	if (stateless)
		v.flags |= XLB_VIP_F_GUE | XLB_VIP_F_STATELESS;
	v.flags |= src_flags;
	return !xlb_obj_vip_write(&fx.maps, &k, &v);
}

/* VIP_MTU4 (one backend) stateless, or tracked as the fixture made it:
 * GUE records, the table with an empty history, the record, the filter's
 * stateless bit. */
static bool mtu4_stateless(bool on)
{
	const struct dp_vip *v = &fx.vips[VIP_MTU4];
	struct xlb_backend be;
	struct xlb_history h;
	__u32 i;
	int fd, err;

	for (i = 0; i < v->n_ids; i++) {
		if (bpf_map_lookup_elem(fx.maps.backends, &v->ids[i], &be))
			return false;
		be.flags = on ? be.flags | XLB_BE_F_GUE : be.flags & ~XLB_BE_F_GUE;
		if (bpf_map_update_elem(fx.maps.backends, &v->ids[i], &be, BPF_ANY))
			return false;
	}
	if (on) {
		if (xlb_history_init(&h, v->m))
			return false;
		fd = xlb_table_create_hist(v->table, &h, v->m);
		xlb_history_free(&h);
		if (fd < 0)
			return false;
		err = xlb_table_install_fd(fx.maps.tables, VIP_MTU4, fd);
		close(fd);
	} else {
		err = xlb_table_install(fx.maps.tables, VIP_MTU4, v->table, v->m);
	}
	return !err && mtu4_flags(on, 0) && filter_stateless(VIP_MTU4, on);
}

static __u64 ct_events(void)
{
	return dp_counter(fx.maps.stats, XLB_STAT_CT_HIT).packets +
	       dp_counter(fx.maps.stats, XLB_STAT_CT_MISS).packets +
	       dp_counter(fx.maps.stats, XLB_STAT_CT_INSERT).packets +
	       dp_counter(fx.maps.stats, XLB_STAT_CT_EVICT).packets;
}

/* A stateless VIP, named stateless by the filter, meets its lists before
 * its stateless path: its allowed clients forwarded in GUE without the
 * connection table, the others turned away. */
static void a_stateless_vip_meets_its_lists_first(void)
{
	struct xlb_vip_key k;
	__u64 events;

	if (!src_fixture() || !ASSERT_TRUE(src_reset(), "reset"))
		return;
	if (!ASSERT_TRUE(mtu4_stateless(true), "VIP_MTU4 stateless"))
		goto out;
	k = vip_key(VIP_MTU4);
	ASSERT_TRUE(ranged_bit(VIP_MTU4, true) &&
		    ranged_on(true) &&
		    src_put(&k, 0, "203.0.113.0/24", false) &&
		    src_put(&k, 0, "203.0.113.66/32", true) &&
		    mtu4_flags(true, ALLOW_LIST), "allow 203.0.113.0/24 but .66");
	events = ct_events();
	run_client(VIP_MTU4, 0, false, "203.0.113.5", false, true, "stateless: 203.0.113.5 in");
	run_client(VIP_MTU4, 0, false, "203.0.113.66", true, true, "stateless: 203.0.113.66 away");
	run_client(VIP_MTU4, 0, false, "198.51.100.1", true, true, "stateless: 198.51.100.1 away");
	ASSERT_EQ(ct_events(), events, "the connection table untouched");
	/* The generation flipped: no entry of generation 1, everyone away. */
	ASSERT_TRUE(mtu4_flags(true, ALLOW_LIST | GEN1), "generation 1");
	run_client(VIP_MTU4, 0, false, "203.0.113.5", true, true, "stateless, gen 1: 203.0.113.5 away");
out:
	ASSERT_TRUE(mtu4_stateless(false), "VIP_MTU4 tracked again");
	ASSERT_TRUE(src_reset(), "reset");
	run_client(VIP_MTU4, 0, false, "198.51.100.1", false, false, "tracked, no lists: in");
}

TEST_MAIN(TEST(table_cases),
	  TEST(lists_swap_whole_by_a_generation_flip),
	  TEST(an_all_port_vip_holds_its_lists_on_a_port_whose_bit_is_taken),
	  TEST(an_established_flow_is_cut_once_its_prefix_is_denied),
	  TEST(a_stateless_vip_meets_its_lists_first))
