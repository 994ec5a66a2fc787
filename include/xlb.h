/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Definitions shared by the XDP program (bpf/) and the userspace tools
 * (loader/, tests/). Everything that crosses the kernel/user boundary is
 * declared here once, with fixed-width types, explicit padding and a size
 * check, so both sides always agree on the layout of every map key and value.
 */
#ifndef XLB_H
#define XLB_H

#include <linux/types.h>

#ifndef __bpf__
#include <assert.h>
#define XLB_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#else
#define XLB_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif

/* Limits, enforced by the loader and documented in xlb(8). */
#define XLB_MAX_VIPS		256
#define XLB_MAX_BACKENDS	4096	/* over all VIPs */
#define XLB_DEFAULT_TABLE_SIZE	65537
#define XLB_MIN_TABLE_SIZE	3
#define XLB_MAX_TABLE_SIZE	1048573	/* largest prime accepted */
#define XLB_MAX_WEIGHT		1000000
#define XLB_NAME_MAX		64	/* backend identity, offline names */

/* Map names, pinned by name (LIBBPF_PIN_BY_NAME): `ip link ... xdp obj`
 * pins them under /sys/fs/bpf/tc/globals or xdp/globals (see below), `xlb
 * attach` under --pin-dir. */
#define XLB_MAP_CONFIG		"xlb_config"
#define XLB_MAP_VIPS		"xlb_vips"
#define XLB_MAP_TABLES		"xlb_tables"
#define XLB_MAP_BACKENDS	"xlb_backends"
#define XLB_MAP_VIP_STATS	"xlb_vip_stats"
#define XLB_MAP_BACKEND_STATS	"xlb_backend_stats"
#define XLB_MAP_STATS		"xlb_stats"
#define XLB_MAP_CONNTRACK	"xlb_conntrack"
#define XLB_MAP_VIP_FILTER	"xlb_vip_filter"
#define XLB_MAP_VIP_ADDRS	"xlb_vip_addrs"
#define XLB_MAP_VIP_SLOTS	"xlb_vip_slots"
#define XLB_MAP_SRC_RANGES	"xlb_src_ranges"
#define XLB_MAP_VIP_RANGED	"xlb_vip_ranged"
#define XLB_MAP_VIP_DENIED	"xlb_vip_denied"

/* iproute2's pin dir. When libxdp made /sys/fs/bpf/xdp a directory before
 * iproute2 made it a symlink to tc/, iproute2 pins in xdp/globals instead;
 * without --pin-dir, xlb takes the instance in either (loader/cli/main.c). */
#define XLB_DEFAULT_PIN_DIR	"/sys/fs/bpf/tc/globals"

/* Address families as stored in maps (values of AF_INET/AF_INET6 differ
 * between headers available to BPF and userspace, so xlb uses its own). */
enum xlb_family {
	XLB_AF_NONE = 0,
	XLB_AF_INET = 4,
	XLB_AF_INET6 = 6,
};

/*
 * The flow: what the flow hash and the connection table are keyed on.
 * IPv4 addresses live in addr[0] with the other words zero. Ports are zero
 * for IP fragments (all fragments of a datagram must hash alike) and for
 * protocols without ports.
 */
struct xlb_flow {
	__be32 src[4];
	__be32 dst[4];
	__be16 sport;
	__be16 dport;
	__u8 proto;
	__u8 family;		/* enum xlb_family */
	__u8 pad[2];		/* zero */
} __attribute__((aligned(8)));	/* hashed and compared as five words */
XLB_STATIC_ASSERT(sizeof(struct xlb_flow) == 40, "xlb_flow layout");

/* Eight bytes read or written as one word: a flow's, or a frame's (XDP on
 * x86 and arm64 allows unaligned access). */
typedef __u64 __attribute__((may_alias)) xlb_word;

/* Key of the VIP map: address, port, protocol. Port 0 is the VIP of the
 * fragments sent to the address with that protocol; port 0 with
 * XLB_VIP_PROTO_ALL_PORTS in proto the VIP of every port of the address
 * that no VIP of its own port takes (its port written as an asterisk). */
struct xlb_vip_key {
	__be32 addr[4];
	__be16 port;
	__u8 proto;		/* IPPROTO_TCP or IPPROTO_UDP, maybe with
				 * XLB_VIP_PROTO_ALL_PORTS */
	__u8 family;		/* enum xlb_family */
};
#define XLB_VIP_PROTO_ALL_PORTS	0x80
XLB_STATIC_ASSERT(sizeof(struct xlb_vip_key) == 20, "xlb_vip_key layout");

/*
 * Value of the VIP map. table_size (M) is fixed for the VIP's lifetime:
 * the loader installs the VIP's table in xlb_tables before it inserts the
 * VIP, and a later table swap keeps M, so the datapath can never combine an
 * M with a table of another size.
 */
/*
 * A VIP's table as the kernel holds it: an inner array (bpf/maps.h) whose
 * element 0 is a header holding M, and each element after it the backend
 * ids of XLB_TABLE_IDS consecutive slots, 16 bits each (backend ids are
 * below XLB_MAX_BACKENDS). The kernel rounds an array's values up to 8
 * bytes: four ids to an element make 2 bytes a slot, where one 32-bit id
 * took 8. Slot k lives in element 1 + k / 4, at k % 4.
 */
#define XLB_TABLE_IDS		4
struct xlb_table_elem {
	__u16 id[XLB_TABLE_IDS];	/* header: M's low and high halves */
};
XLB_STATIC_ASSERT(sizeof(struct xlb_table_elem) == 8, "xlb_table_elem layout");
XLB_STATIC_ASSERT(XLB_MAX_BACKENDS <= 65536, "backend ids fit 16 bits");
#define XLB_TABLE_ELEMS(m)	(1 + ((m) + XLB_TABLE_IDS - 1) / XLB_TABLE_IDS)

/*
 * A stateless VIP's table (XLB_VIP_F_STATELESS) holds each slot's previous
 * owner beside its backend, so that one element read gives both: the
 * header's id[2] is XLB_TABLE_F_HISTORY and id[3] the number n of history
 * entries; slot k lives in element 1 + k / 2, its backend id at
 * id[k % 2 * 2] and the number of its history entry at id[k % 2 * 2 + 1]
 * (0: none). Entry i (from 1) fills the XLB_HIST_ELEMS elements from
 * XLB_HIST_BASE(m) + (i - 1) * XLB_HIST_ELEMS. An entry names the
 * previous owner by address, so that it does not depend on record ids,
 * and is shared by every slot that changed from it at the same time.
 */
#define XLB_TABLE_F_HISTORY	1
#define XLB_HIST_SLOTS		2	/* slots to an element */
#define XLB_HIST_BASE(m)	(1 + ((m) + XLB_HIST_SLOTS - 1) / XLB_HIST_SLOTS)
#define XLB_HIST_ELEMS		3
#define XLB_HIST_MAX		65535	/* entries of a table */
#define XLB_HIST_TABLE_ELEMS(m, n) (XLB_HIST_BASE(m) + (n) * XLB_HIST_ELEMS)

struct xlb_hist_entry {
	__be32 addr[4];		/* the previous owner; IPv4 in addr[0] */
	__u8 family;		/* enum xlb_family */
	__u8 pad[3];		/* zero */
	__u32 since;		/* when the slots changed: Unix time, seconds */
};
XLB_STATIC_ASSERT(sizeof(struct xlb_hist_entry) ==
		  XLB_HIST_ELEMS * sizeof(struct xlb_table_elem),
		  "xlb_hist_entry layout");

/*
 * The VIP filter (include/vip_filter.h): one bit per hash of a destination
 * (address, port, protocol, family), set for every VIP, so that a packet
 * of no VIP leaves the datapath before any lookup. A bit can be shared, by
 * a VIP and a destination that is none: that packet takes the full path.
 */
#define XLB_VIP_FILTER_BITS	65536
struct xlb_vip_filter {
	__u64 ready;		/* 0: never written, let every packet through;
				 * else XLB_VIP_FILTER_* */
	__u64 bits[XLB_VIP_FILTER_BITS / 64];
	/* The bits of the stateless VIPs, read only when ready has
	 * XLB_VIP_FILTER_STATELESS: their packets skip the connection
	 * table (a tracked VIP sharing a bit is told by its flags). */
	__u64 stateless[XLB_VIP_FILTER_BITS / 64];
};
#define XLB_VIP_FILTER_READY		(1ULL << 0)
#define XLB_VIP_FILTER_STATELESS	(1ULL << 1)	/* some VIP is stateless */
#define XLB_VIP_FILTER_ALL_PORTS	(1ULL << 2)	/* some VIP takes all ports */
XLB_STATIC_ASSERT(sizeof(struct xlb_vip_filter) == 8 + XLB_VIP_FILTER_BITS / 4,
		  "xlb_vip_filter layout");

/* The VIP filter's bits of the VIPs with source ranges
 * (XLB_VIP_F_SRC_LIST), in a map of their own (xlb_vip_ranged): only
 * their packets look up the client before the connection table. Its own
 * map, and its own switch (not a flag of the filter's ready), so that an
 * older xlb, which rewrites the filter as it knows it, cannot turn the
 * checks off. */
struct xlb_vip_ranged {
	__u64 on;		/* 0: no VIP has ranges, the bits unread */
	__u64 bits[XLB_VIP_FILTER_BITS / 64];
};

/*
 * Source ranges (xlb_src_ranges, an LPM trie): who may reach a VIP. A
 * key is the VIP's key, a generation and a client prefix; prefixlen
 * counts XLB_SRC_KEY_BITS for the VIP and the generation, then the
 * prefix's length. The client's longest match says allow or deny; a
 * client no prefix matches is denied when the VIP has an allow list
 * (XLB_VIP_F_SRC_DENY), else let in. A VIP's lists are changed whole:
 * written under the generation its record does not name, then the
 * record switched to it in one write, then the old entries deleted, so
 * that every packet meets the old lists or the new ones.
 */
struct xlb_src_key {
	__u32 prefixlen;
	struct xlb_vip_key vip;
	__u8 gen;		/* 0 or 1: XLB_VIP_F_SRC_GEN of the record */
	__u8 pad[3];		/* zero */
	__be32 addr[4];		/* the client; IPv4 in addr[0] */
};
XLB_STATIC_ASSERT(sizeof(struct xlb_src_key) == 44, "xlb_src_key layout");
#define XLB_SRC_KEY_BITS	(8 * (sizeof(struct xlb_vip_key) + 4))

struct xlb_src_value {
	__u32 deny;		/* 0: allow, 1: deny */
};
XLB_STATIC_ASSERT(sizeof(struct xlb_src_value) == 4, "xlb_src_value layout");

/* Prefixes of one VIP's lists, and of all VIPs'. The trie has room for
 * one VIP's new lists beside every old one while they are swapped. */
#define XLB_SRC_MAX_VIP		1024
#define XLB_SRC_MAX		8192
#define XLB_SRC_MAP_ENTRIES	(XLB_SRC_MAX + XLB_SRC_MAX_VIP)

/*
 * The VIP addresses (xlb_vip_addrs): key an xlb_vip_key with port and
 * proto 0, value how many VIPs the address has. Not the balancer's own
 * addresses: a packet to one that no VIP takes is dropped (drop_vip_port),
 * since the kernel would route it back where it came from. The VIP filter
 * holds a bit for each as well, (address, port 0, proto 0), so that other
 * destinations are told apart without a lookup.
 */
struct xlb_vip_addr {
	__u16 vips;		/* the VIPs at the address */
	__u16 no_ping;		/* of them, those with XLB_VIP_F_NO_PING:
				 * the address answers echo requests while
				 * any VIP of it does (an older xlb wrote
				 * vips as 32 bits: no_ping 0) */
};
XLB_STATIC_ASSERT(sizeof(struct xlb_vip_addr) == 4, "xlb_vip_addr layout");

struct xlb_vip {
	__u32 id;		/* index into xlb_tables and xlb_vip_stats */
	__u32 table_size;	/* M, prime */
	__u32 flags;		/* XLB_VIP_F_* */
	__u32 pad;
};
XLB_STATIC_ASSERT(sizeof(struct xlb_vip) == 16, "xlb_vip layout");

/*
 * xlb_vip_slots at a VIP's filter bit (include/vip_filter.h): a copy of
 * its key and record, written with the record, which the datapath reads
 * in one array lookup instead of hashing the key into xlb_vips. VIPs that
 * share a bit share the slot: it holds one of them, the others (and any
 * packet whose key is not the slot's) go by xlb_vips. An empty slot's
 * family is 0, which no packet's is.
 */
struct xlb_vip_slot {
	struct xlb_vip_key key;
	__u32 pad;		/* zero */
	struct xlb_vip vip;
};
XLB_STATIC_ASSERT(sizeof(struct xlb_vip_slot) == 40, "xlb_vip_slot layout");

/* VIP flags. DIRTY is the loader's; the datapath reads STATELESS and
 * the hash's fields, and GUE in the VIP's backend records
 * (XLB_BE_F_GUE), since a flow the connection table knows finds its
 * backend without the VIP. */
#define XLB_VIP_F_DIRTY		(1U << 0)	/* the loader is changing the VIP's
						 * backends: its table may lag the
						 * records until the next xlb
						 * command rebuilds it */
#define XLB_VIP_F_GUE		(1U << 1)	/* encapsulate in GUE (include/gue.h),
						 * not IPIP / IPv6-in-IP */
#define XLB_VIP_F_STATELESS	(1U << 2)	/* no connection table: each packet
						 * goes to its slot's backend with
						 * the slot's previous owner named
						 * in GUE (needs XLB_VIP_F_GUE); the
						 * table holds the history */
#define XLB_VIP_F_HASH_SRC	(1U << 3)	/* client affinity: the flow hash
						 * takes the client's address (its
						 * first XLB_VIP_AFFINITY() bits),
						 * the VIP's address and the
						 * protocol, and no port, so every
						 * connection of a client (or of
						 * its prefix) gets one backend */
/* Bits 8..15: the affinity prefix length, 1..32 or 1..128 by the VIP's
 * family, with XLB_VIP_F_HASH_SRC (0 without). */
#define XLB_VIP_AFFINITY_SHIFT	8
#define XLB_VIP_AFFINITY_MASK	(0xffU << XLB_VIP_AFFINITY_SHIFT)
#define XLB_VIP_AFFINITY(flags)	(((flags) & XLB_VIP_AFFINITY_MASK) >> \
				 XLB_VIP_AFFINITY_SHIFT)
#define XLB_VIP_F_NO_PING	(1U << 4)	/* the VIP does not answer ICMP
						 * echo requests to its address
						 * (bpf/icmp_echo.h) */
/* Source ranges (struct xlb_src_key): the VIP has lists; with them, a
 * client no prefix matches is denied (an allow list); the generation of
 * the entries that apply. Set by xlb_vip_src_set(), never by a mode. */
#define XLB_VIP_F_SRC_LIST	(1U << 5)
#define XLB_VIP_F_SRC_DENY	(1U << 6)
#define XLB_VIP_F_SRC_GEN	(1U << 7)
#define XLB_VIP_F_SRC		(XLB_VIP_F_SRC_LIST | XLB_VIP_F_SRC_DENY | \
				 XLB_VIP_F_SRC_GEN)
/* The fields a VIP's flow hash takes. */
#define XLB_VIP_F_HASH		(XLB_VIP_F_HASH_SRC | XLB_VIP_AFFINITY_MASK)
/* The VIP flags a command or a file sets: its way of forwarding. */
#define XLB_VIP_F_MODE		(XLB_VIP_F_GUE | XLB_VIP_F_STATELESS | \
				 XLB_VIP_F_HASH | XLB_VIP_F_NO_PING)
/* Those that decide where a flow goes: in the fingerprint. */
#define XLB_VIP_F_FLOWS		(XLB_VIP_F_MODE & ~XLB_VIP_F_NO_PING)

/* Backend flags. */
#define XLB_BE_F_IN_USE		(1U << 0)	/* slot allocated; flows may be sent here */
#define XLB_BE_F_REMOVED	(1U << 1)	/* being deleted: still IN_USE for
						 * the datapath until a table without
						 * it is live, then freed (loader only) */
#define XLB_BE_F_DOWN		(1U << 2)	/* found down by the health checker:
						 * out of its VIP's table as with
						 * weight 0, unless every backend of
						 * the VIP is down (fail open) */
#define XLB_BE_F_EVICT		(1U << 3)	/* down, and its VIP's on_down is
						 * reset: the datapath takes tracked
						 * flows of it for new ones */
#define XLB_BE_F_GUE		(1U << 4)	/* its VIP's XLB_VIP_F_GUE, kept in
						 * step by the loader */

/* Backend id 0 is never allocated: a table slot holding it (as every slot
 * of a freshly created table does) names no backend. */
#define XLB_BACKEND_NONE	0

/*
 * A backend of one VIP (the same address under two VIPs is two records, so
 * every counter is per VIP and backend). gen changes whenever the slot is
 * reused, so state that remembers a backend id (the connection table) can
 * tell a removed backend from its successor.
 */
struct xlb_backend {
	__be32 addr[4];
	__u32 vip_id;
	__u32 weight;		/* 0: draining, no table slots */
	__u32 gen;
	__u8 family;		/* enum xlb_family */
	__u8 flags;		/* XLB_BE_F_* */
	__u16 pad;
};
XLB_STATIC_ASSERT(sizeof(struct xlb_backend) == 32, "xlb_backend layout");

/* Config flags. */
#define XLB_CFG_F_INITIALIZED	(1U << 0)	/* the loader has set a seed */

/* The single entry of xlb_config: settings of the running instance. */
struct xlb_config {
	__u64 hash_key[2];	/* flow hash seed (SipHash key) */
	__be32 src4;		/* outer IPv4 source */
	__be32 src6[4];		/* outer IPv6 source */
	__u32 flags;		/* XLB_CFG_F_* */
	/* The connection table (bpf/conntrack.h); 0 means the default below. */
	__u32 udp_timeout_s;	/* UDP idle timeout */
	__u32 tcp_timeout_s;	/* TCP idle timeout */
	__u32 ct_rate_limit;	/* new connection entries per second per CPU */
	__u32 tcp_closing_timeout_s; /* TCP idle timeout once a FIN or RST passed */
	__u32 ct_size;		/* entries of xlb_conntrack, applied by the next
				 * `xlb attach` (the datapath does not read it) */
	__u32 ct_seed;		/* keys the connection table's set hash: random,
				 * set once by the loader and kept, unlike the
				 * flow hash seed, so entries outlive a reseed */
	__be16 gue_port;	/* GUE's UDP destination port; 0: the default
				 * (XLB_GUE_DEFAULT_PORT, include/gue.h) */
	__u16 icmp_rate;	/* ICMP too-big answers per second per CPU
				 * (bpf/icmp.h); 0: XLB_ICMP_RATE_DEFAULT */
	__u32 history_s;	/* how long a stateless VIP's table keeps a
				 * slot's previous owner; 0: the default
				 * (the loader's, the datapath reads none) */
};
XLB_STATIC_ASSERT(sizeof(struct xlb_config) == 72, "xlb_config layout");
#define XLB_HISTORY_DEFAULT_S		300
#define XLB_ICMP_RATE_DEFAULT		1000

/* A CPU's token bucket of ICMP answers (bpf/icmp.h). */
struct xlb_icmp_bucket {
	__u64 tokens;
	__u64 last_ns;
};

/* Connection-table defaults, used where the setting is 0. */
#define XLB_CT_DEFAULT_SIZE		262144	/* entries of xlb_conntrack */
/* Sizes are powers of two, so that a flow's set is a mask of its hash. */
#define XLB_CT_MIN_SIZE			1024
#define XLB_CT_MAX_SIZE			67108864
#define XLB_CT_UDP_TIMEOUT_S		30
#define XLB_CT_TCP_TIMEOUT_S		300
#define XLB_CT_TCP_CLOSING_TIMEOUT_S	10
#define XLB_CT_RATE_LIMIT		100000	/* per second per CPU */

/* Connection-table entry flags. */
#define XLB_CT_F_CLOSING	(1U << 0)	/* a FIN or RST passed: the TCP
						 * closing timeout applies */
#define XLB_CT_F_ESTABLISHED	(1U << 1)	/* a later packet hit the entry:
						 * a flood's one-packet flows are
						 * evicted before it */

/* Ways of a set of the connection table (bpf/conntrack.h): a flow's entry
 * is in one of the XLB_CT_WAYS slots of the set its hash picks. */
#define XLB_CT_WAYS		8

/* Connection-table entry: which backend a flow went to, and when it was
 * last seen. */
struct xlb_ct_entry {
	__u16 backend_id;
	__u16 flags;		/* XLB_CT_F_* */
	__u32 gen;		/* xlb_backend.gen at the time of the choice */
	__u64 last_seen_ns;	/* bpf_ktime_get_coarse_ns(): CLOCK_MONOTONIC */
	__u32 hash;		/* the flow hash's low half: the outer IPv6
				 * flow label, without hashing again */
	__u32 seq;		/* even: stable; odd: a CPU is rewriting the
				 * slot (bpf/conntrack.h) */
};
XLB_STATIC_ASSERT(sizeof(struct xlb_ct_entry) == 24, "xlb_ct_entry layout");
XLB_STATIC_ASSERT(XLB_MAX_BACKENDS <= 65536, "backend ids fit xlb_ct_entry");

/* A slot of xlb_conntrack: one cache line. A slot whose flow has family 0
 * is empty. */
struct xlb_ct_slot {
	struct xlb_flow flow;
	struct xlb_ct_entry e;
};
XLB_STATIC_ASSERT(sizeof(struct xlb_ct_slot) == 64, "xlb_ct_slot layout");

/* A packet/byte counter; per-CPU maps hold one per CPU. */
struct xlb_counter {
	__u64 packets;
	__u64 bytes;
};
XLB_STATIC_ASSERT(sizeof(struct xlb_counter) == 16, "xlb_counter layout");

/*
 * Every way a packet leaves the program other than forwarded to a backend,
 * plus connection-table events. One list gives both the enum and the names
 * printed by `xlb stats`, so they cannot drift apart.
 */
#define XLB_STAT_LIST(X)						\
	X(FORWARD,		"forward")				\
	X(PASS_NOT_IP,		"pass_not_ip")				\
	X(PASS_NOT_VIP,		"pass_not_vip")				\
	X(PASS_ICMP_ECHO,	"pass_icmp_echo")			\
	X(DROP_NEIGH_UNRESOLVED,"drop_neigh_unresolved")		\
	X(DROP_MALFORMED,	"drop_malformed")			\
	X(DROP_NO_TABLE,	"drop_no_table")			\
	X(DROP_NO_BACKEND,	"drop_no_backend")			\
	X(DROP_TOO_BIG,		"drop_too_big")				\
	X(ICMP_TOO_BIG,		"icmp_too_big")				\
	X(DROP_FIB_FAILED,	"drop_fib_failed")			\
	X(DROP_ENCAP_FAILED,	"drop_encap_failed")			\
	X(DROP_NO_CONFIG,	"drop_no_config")			\
	X(DROP_NO_SOURCE,	"drop_no_source")			\
	X(DROP_VIP_PORT,	"drop_vip_port")			\
	X(ICMP_ECHO_REPLY,	"icmp_echo_reply")			\
	X(DROP_ECHO_RATE,	"drop_echo_rate")			\
	X(DROP_SRC_DENIED,	"drop_src_denied")			\
	X(CT_HIT,		"ct_hit")				\
	X(CT_MISS,		"ct_miss")				\
	X(CT_INSERT,		"ct_insert")				\
	X(CT_BYPASS,		"ct_bypass")				\
	X(CT_EVICT,		"ct_evict")

#define XLB_STAT_ENUM(name, str) XLB_STAT_##name,
enum xlb_stat {
	XLB_STAT_LIST(XLB_STAT_ENUM)
	XLB_STAT__MAX
};
#undef XLB_STAT_ENUM

/* A packet counts exactly one of the reasons before XLB_STAT_REASONS, and
 * any of the connection-table events from there on. */
#define XLB_STAT_REASONS	XLB_STAT_CT_HIT

#endif /* XLB_H */
