// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The XDP datapath, run with BPF_PROG_TEST_RUN in a private network
 * namespace where bpf_fib_lookup resolves (tests/dp_fixture.h). Every
 * expected output is built from the packet description by tests/packets.h
 * and the flow hash over the tables the fixture installed; the program's
 * own parser is never the judge.
 */
#include <sched.h>
#include <sys/wait.h>
#include "pcap_write.h"
#include "dp_fixture.h"
#include "testlib.h"

static struct dp_fixture fx;
static int fx_state;		/* 0: not tried, 1: ready, -1: unusable */
static const char *fx_reason;

static const char *build_dir(void)
{
	const char *b = getenv("BUILD");

	return b && *b ? b : "build";
}

/* Set the fixture up once; false (and the case skipped or failed) when it
 * cannot be. */
static bool fixture(void)
{
	char path[512];

	if (fx_state == 0) {
		fx_state = -1;
		if (!test_have_root()) {
			fx_reason = "needs root (network namespace, BPF)";
		} else {
			snprintf(path, sizeof(path), "%s/xlb.bpf.o", build_dir());
			if (dp_fixture_setup(&fx, path, "xlb_xdp") == 0)
				fx_state = 1;
			else
				fx_reason = "datapath fixture setup failed (see above)";
		}
	}
	if (fx_state < 0) {
		if (test_have_root())
			ASSERT_TRUE(false, fx_reason);
		else
			test_skip_env(fx_reason);
	}
	return fx_state > 0;
}

static void hexdump(const char *what, const __u8 *p, size_t len)
{
	size_t i;

	printf("  %s (%zu bytes):", what, len);
	for (i = 0; i < len; i++)
		printf("%s%02x", i % 16 ? " " : "\n    ", p[i]);
	printf("\n");
}

/* ------------------------------------------------------------------ */
/* Table-driven cases                                                  */

struct dp_case {
	const char *name;
	struct pkt_desc in;
	struct pkt_desc quoted;		/* ICMP errors: the packet quoted */
	size_t quote_max;		/* bytes of it quoted (0: all) */
	size_t pad;			/* zero bytes after the IP packet */
	struct { int at; __u8 val; } corrupt[2];	/* at: offset in the IP packet + 1 */
	bool fix_csum;			/* IPv4 header checksum redone after corrupt */
	int verdict;
	enum xlb_stat reason;
	__u32 vip;			/* forwards: the VIP counted */
	struct dp_flow flow;		/* forwards: the flow it belongs to */
};

#define V4(s, d, p, sp, dp) .family = 4, .src = s, .dst = d, .proto = p, .sport = sp, .dport = dp
#define V6(s, d, p, sp, dp) .family = 6, .src = s, .dst = d, .proto = p, .sport = sp, .dport = dp
#define CLIENT4 "203.0.113.5"
#define CLIENT6 "2001:db8:c::5"
#define VIP4 "192.0.2.10"
#define VIP6 "2001:db8:f::10"
#define ROUTER4 "198.51.100.99"
#define ROUTER6 "2001:db8:100::99"
#define TCP IPPROTO_TCP
#define UDP IPPROTO_UDP
#define FORWARD(v, ...) .verdict = XDP_TX, .reason = XLB_STAT_FORWARD, .vip = v, \
	.flow = { __VA_ARGS__ }
#define PASSED(r) .verdict = XDP_PASS, .reason = XLB_STAT_##r
#define DROPPED(r) .verdict = XDP_DROP, .reason = XLB_STAT_##r

static const __u8 opt_router_alert[] = { 0x94, 0x04, 0x00, 0x00, 0x01, 0x01, 0x01, 0x00 };
static const __u8 opt_40_nops[40] = {
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0,
};

static const struct dp_case cases[] = {
	/* To a VIP: encapsulated to the backend the table names. */
	{ "ipv4 tcp syn to a vip",
	  .in = { V4(CLIENT4, VIP4, TCP, 40000, 80), .tcp_flags = PKT_TCP_SYN },
	  FORWARD(VIP_TCP4, 4, CLIENT4, VIP4, 40000, 80, TCP) },
	{ "ipv4 tcp with payload to a vip",
	  .in = { V4("203.0.113.6", VIP4, TCP, 41000, 80), .payload_len = 300, .tos = 0x28 },
	  FORWARD(VIP_TCP4, 4, "203.0.113.6", VIP4, 41000, 80, TCP) },
	{ "ipv4 udp to a vip",
	  .in = { V4(CLIENT4, VIP4, UDP, 5353, 53), .payload_len = 40 },
	  FORWARD(VIP_UDP4, 4, CLIENT4, VIP4, 5353, 53, UDP) },
	{ "ipv6 tcp to a vip",
	  .in = { V6(CLIENT6, VIP6, TCP, 40000, 443), .tcp_flags = PKT_TCP_SYN },
	  FORWARD(VIP_TCP6, 6, CLIENT6, VIP6, 40000, 443, TCP) },
	{ "ipv6 tcp with traffic class and payload to a vip",
	  .in = { V6("2001:db8:c::6", VIP6, TCP, 40001, 443), .tos = 0xb8, .payload_len = 500 },
	  FORWARD(VIP_TCP6, 6, "2001:db8:c::6", VIP6, 40001, 443, TCP) },
	{ "ipv6 udp to a vip",
	  .in = { V6(CLIENT6, VIP6, UDP, 5353, 53), .payload_len = 33 },
	  FORWARD(VIP_UDP6, 6, CLIENT6, VIP6, 5353, 53, UDP) },
	{ "ipv4 tcp under one 802.1Q tag",
	  .in = { V4(CLIENT4, VIP4, TCP, 40002, 80), .vlans = 1, .vlan_id = { 100 } },
	  FORWARD(VIP_TCP4, 4, CLIENT4, VIP4, 40002, 80, TCP) },
	{ "ipv4 udp under 802.1ad and 802.1Q tags",
	  .in = { V4(CLIENT4, VIP4, UDP, 40003, 53), .vlans = 2,
		  .vlan_tpid = { PKT_ETH_P_8021AD, PKT_ETH_P_8021Q }, .vlan_id = { 10, 20 } },
	  FORWARD(VIP_UDP4, 4, CLIENT4, VIP4, 40003, 53, UDP) },
	{ "ipv6 tcp under two 802.1Q tags",
	  .in = { V6(CLIENT6, VIP6, TCP, 40004, 443), .vlans = 2, .vlan_id = { 1, 4094 } },
	  FORWARD(VIP_TCP6, 6, CLIENT6, VIP6, 40004, 443, TCP) },
	{ "ipv4 tcp with router-alert option",
	  .in = { V4(CLIENT4, VIP4, TCP, 40005, 80), .ip_opt = opt_router_alert,
		  .ip_opt_len = sizeof(opt_router_alert) },
	  FORWARD(VIP_TCP4, 4, CLIENT4, VIP4, 40005, 80, TCP) },
	{ "ipv4 udp with 40 bytes of options",
	  .in = { V4(CLIENT4, VIP4, UDP, 40006, 53), .ip_opt = opt_40_nops,
		  .ip_opt_len = sizeof(opt_40_nops), .payload_len = 8 },
	  FORWARD(VIP_UDP4, 4, CLIENT4, VIP4, 40006, 53, UDP) },
	{ "ipv6 tcp after hop-by-hop, routing and destination options",
	  .in = { V6(CLIENT6, VIP6, TCP, 40007, 443), .n_ext = 3,
		  .ext = { { IPPROTO_HOPOPTS, 0 }, { IPPROTO_ROUTING, 0 }, { IPPROTO_DSTOPTS, 1 } } },
	  FORWARD(VIP_TCP6, 6, CLIENT6, VIP6, 40007, 443, TCP) },
	{ "ipv6 udp after four destination options headers",
	  .in = { V6(CLIENT6, VIP6, UDP, 40008, 53), .n_ext = 4,
		  .ext = { { IPPROTO_DSTOPTS, 0 }, { IPPROTO_DSTOPTS, 0 },
			   { IPPROTO_DSTOPTS, 0 }, { IPPROTO_DSTOPTS, 0 } } },
	  FORWARD(VIP_UDP6, 6, CLIENT6, VIP6, 40008, 53, UDP) },
	{ "ipv6 atomic fragment is an unfragmented packet",
	  .in = { V6(CLIENT6, VIP6, UDP, 40009, 53), .frag = true, .frag_id = 7 },
	  FORWARD(VIP_UDP6, 6, CLIENT6, VIP6, 40009, 53, UDP) },
	{ "ethernet padding after a short ipv4 packet",
	  .in = { V4(CLIENT4, VIP4, TCP, 40010, 80), .tcp_flags = PKT_TCP_SYN }, .pad = 6,
	  FORWARD(VIP_TCP4, 4, CLIENT4, VIP4, 40010, 80, TCP) },

	/* Fragments: the VIP with port 0, hashed without ports. */
	{ "ipv4 udp first fragment",
	  .in = { V4(CLIENT4, VIP4, UDP, 5000, 53), .frag = true, .mf = true,
		  .frag_id = 0x4242, .payload_len = 64 },
	  FORWARD(VIP_FRAG4, 4, CLIENT4, VIP4, 0, 0, UDP) },
	{ "ipv4 udp later fragment",
	  .in = { V4(CLIENT4, VIP4, UDP, 0, 0), .frag = true, .frag_off8 = 9,
		  .frag_id = 0x4242, .payload_len = 20 },
	  FORWARD(VIP_FRAG4, 4, CLIENT4, VIP4, 0, 0, UDP) },
	{ "ipv6 udp first fragment",
	  .in = { V6(CLIENT6, VIP6, UDP, 5000, 53), .frag = true, .mf = true,
		  .frag_id = 0x4243, .payload_len = 64 },
	  FORWARD(VIP_FRAG6, 6, CLIENT6, VIP6, 0, 0, UDP) },
	{ "ipv6 udp later fragment after a destination options header",
	  .in = { V6(CLIENT6, VIP6, UDP, 0, 0), .frag = true, .frag_off8 = 9,
		  .frag_id = 0x4243, .payload_len = 20, .n_ext = 1,
		  .ext = { { IPPROTO_DSTOPTS, 0 } } },
	  FORWARD(VIP_FRAG6, 6, CLIENT6, VIP6, 0, 0, UDP) },
	{ "ipv4 tcp fragment without a port-0 vip is not a vip's",
	  .in = { V4(CLIENT4, VIP4, TCP, 40011, 80), .frag = true, .mf = true, .payload_len = 16 },
	  PASSED(PASS_NOT_VIP) },

	/* ICMP errors about a VIP's reply go to the flow's backend. */
	{ "icmp fragmentation needed quoting a vip reply",
	  .in = { V4(ROUTER4, VIP4, IPPROTO_ICMP, 0, 0), .icmp_type = 3, .icmp_code = 4,
		  .icmp_rest = 1400 },
	  .quoted = { V4(VIP4, CLIENT4, TCP, 80, 40000), .payload_len = 1372 }, .quote_max = 28,
	  FORWARD(VIP_TCP4, 4, CLIENT4, VIP4, 40000, 80, TCP) },
	{ "icmp time exceeded quoting a vip udp reply with ip options",
	  .in = { V4(ROUTER4, VIP4, IPPROTO_ICMP, 0, 0), .icmp_type = 11 },
	  .quoted = { V4(VIP4, CLIENT4, UDP, 53, 5353), .payload_len = 12,
		      .ip_opt = opt_router_alert, .ip_opt_len = sizeof(opt_router_alert) },
	  FORWARD(VIP_UDP4, 4, CLIENT4, VIP4, 5353, 53, UDP) },
	{ "icmpv6 packet too big quoting a vip reply",
	  .in = { V6(ROUTER6, VIP6, IPPROTO_ICMPV6, 0, 0), .icmp_type = 2, .icmp_rest = 1280 },
	  .quoted = { V6(VIP6, CLIENT6, TCP, 443, 40000), .payload_len = 200 },
	  FORWARD(VIP_TCP6, 6, CLIENT6, VIP6, 40000, 443, TCP) },
	{ "icmpv6 time exceeded quoting a reply with a routing header",
	  .in = { V6(ROUTER6, VIP6, IPPROTO_ICMPV6, 0, 0), .icmp_type = 3 },
	  .quoted = { V6(VIP6, CLIENT6, UDP, 53, 5353), .payload_len = 10, .n_ext = 1,
		      .ext = { { IPPROTO_ROUTING, 0 } } },
	  FORWARD(VIP_UDP6, 6, CLIENT6, VIP6, 5353, 53, UDP) },
	{ "icmp error quoting a non-vip flow",
	  .in = { V4(ROUTER4, VIP4, IPPROTO_ICMP, 0, 0), .icmp_type = 3, .icmp_code = 1 },
	  .quoted = { V4(VIP4, CLIENT4, TCP, 8080, 40000) }, .quote_max = 28,
	  PASSED(PASS_NOT_VIP) },
	{ "icmp error quoting too little for ports",
	  .in = { V4(ROUTER4, VIP4, IPPROTO_ICMP, 0, 0), .icmp_type = 3, .icmp_code = 4 },
	  .quoted = { V4(VIP4, CLIENT4, TCP, 80, 40000) }, .quote_max = 22,
	  DROPPED(DROP_MALFORMED) },
	{ "icmp error quoting an icmp packet",
	  .in = { V4(ROUTER4, VIP4, IPPROTO_ICMP, 0, 0), .icmp_type = 11 },
	  .quoted = { V4(VIP4, CLIENT4, IPPROTO_ICMP, 0, 0), .icmp_type = 0 },
	  PASSED(PASS_NOT_VIP) },
	{ "icmp echo request to a vip goes to the kernel",
	  .in = { V4(CLIENT4, VIP4, IPPROTO_ICMP, 0, 0), .icmp_type = 8, .payload_len = 56 },
	  PASSED(PASS_ICMP_ECHO) },
	{ "icmpv6 echo request to a vip goes to the kernel",
	  .in = { V6(CLIENT6, VIP6, IPPROTO_ICMPV6, 0, 0), .icmp_type = 128, .payload_len = 56 },
	  PASSED(PASS_ICMP_ECHO) },
	{ "icmpv6 neighbour solicitation",
	  .in = { V6(CLIENT6, VIP6, IPPROTO_ICMPV6, 0, 0), .icmp_type = 135, .payload_len = 16 },
	  PASSED(PASS_NOT_VIP) },

	/* Next hop. */
	{ "backend routed out of the other interface: redirect",
	  .in = { V4(CLIENT4, "192.0.2.20", TCP, 40012, 80) },
	  .verdict = XDP_REDIRECT, .reason = XLB_STAT_FORWARD, .vip = VIP_REDIR4,
	  .flow = { 4, CLIENT4, "192.0.2.20", 40012, 80, TCP } },
	{ "ipv6 backend routed out of the other interface: redirect",
	  .in = { V6(CLIENT6, "2001:db8:f::20", TCP, 40013, 80) },
	  .verdict = XDP_REDIRECT, .reason = XLB_STAT_FORWARD, .vip = VIP_REDIR6,
	  .flow = { 6, CLIENT6, "2001:db8:f::20", 40013, 80, TCP } },
	{ "backend behind an unresolved neighbour: to the kernel",
	  .in = { V4(CLIENT4, "192.0.2.21", TCP, 40014, 80) }, PASSED(PASS_NEIGH_UNRESOLVED) },
	{ "ipv6 backend behind an unresolved neighbour: to the kernel",
	  .in = { V6(CLIENT6, "2001:db8:f::21", TCP, 40015, 80) }, PASSED(PASS_NEIGH_UNRESOLVED) },
	{ "backend behind an unreachable route",
	  .in = { V4(CLIENT4, "192.0.2.22", TCP, 40016, 80) }, DROPPED(DROP_FIB_FAILED) },
	{ "ipv6 backend behind an unreachable route",
	  .in = { V6(CLIENT6, "2001:db8:f::22", TCP, 40017, 80) }, DROPPED(DROP_FIB_FAILED) },
	{ "1480-byte ipv4 packet fits the MTU in ipv4",
	  .in = { V4(CLIENT4, "192.0.2.50", TCP, 40018, 80), .payload_len = 1440 },
	  FORWARD(VIP_MTU4, 4, CLIENT4, "192.0.2.50", 40018, 80, TCP) },
	{ "1481-byte ipv4 packet does not fit in ipv4",
	  .in = { V4(CLIENT4, "192.0.2.50", TCP, 40019, 80), .payload_len = 1441 },
	  DROPPED(DROP_TOO_BIG) },
	{ "1460-byte ipv4 packet fits the MTU in ipv6",
	  .in = { V4(CLIENT4, "192.0.2.51", TCP, 40020, 80), .payload_len = 1420 },
	  FORWARD(VIP_MTU6, 4, CLIENT4, "192.0.2.51", 40020, 80, TCP) },
	{ "1461-byte ipv4 packet does not fit in ipv6",
	  .in = { V4(CLIENT4, "192.0.2.51", TCP, 40021, 80), .payload_len = 1421 },
	  DROPPED(DROP_TOO_BIG) },

	/* Configuration gaps. */
	{ "vip without a table",
	  .in = { V4(CLIENT4, "192.0.2.30", TCP, 40022, 80) }, DROPPED(DROP_NO_TABLE) },
	{ "vip whose table names no backend",
	  .in = { V4(CLIENT4, "192.0.2.31", TCP, 40023, 80) }, DROPPED(DROP_NO_BACKEND) },

	/* Not for a VIP: to the kernel, untouched. */
	{ "ipv4 tcp to a vip address on another port",
	  .in = { V4(CLIENT4, VIP4, TCP, 40024, 8080) }, PASSED(PASS_NOT_VIP) },
	{ "ipv4 udp to another address",
	  .in = { V4(CLIENT4, "192.0.2.99", UDP, 40025, 53) }, PASSED(PASS_NOT_VIP) },
	{ "ipv6 tcp to a vip address on another port",
	  .in = { V6(CLIENT6, VIP6, TCP, 40026, 80) }, PASSED(PASS_NOT_VIP) },
	{ "ipv4 gre to a vip address",
	  .in = { V4(CLIENT4, VIP4, 47, 0, 0), .payload_len = 24 }, PASSED(PASS_NOT_VIP) },
	{ "ipv6 no-next-header to a vip address",
	  .in = { V6(CLIENT6, VIP6, 59, 0, 0) }, PASSED(PASS_NOT_VIP) },
	{ "ipv6 five extension headers: left to the kernel",
	  .in = { V6(CLIENT6, VIP6, TCP, 40027, 443), .n_ext = 5,
		  .ext = { { IPPROTO_HOPOPTS, 0 }, { IPPROTO_DSTOPTS, 0 }, { IPPROTO_ROUTING, 0 },
			   { IPPROTO_DSTOPTS, 0 }, { IPPROTO_DSTOPTS, 0 } } },
	  PASSED(PASS_NOT_VIP) },
	{ "three vlan tags",
	  .in = { V4(CLIENT4, VIP4, TCP, 40028, 80), .vlans = 2,
		  .vlan_tpid = { PKT_ETH_P_8021Q, PKT_ETH_P_8021Q } },
	  .corrupt = { { -2, 0x81 }, { -1, 0x00 } },	/* EtherType after the tags */
	  PASSED(PASS_NOT_IP) },

	/* Broken: dropped. */
	{ "ipv4 header checksum wrong",
	  .in = { V4(CLIENT4, VIP4, TCP, 40029, 80) }, .corrupt = { { 11, 0x00 }, { 12, 0x00 } },
	  DROPPED(DROP_MALFORMED) },
	{ "ipv4 ihl 4",
	  .in = { V4(CLIENT4, VIP4, TCP, 40030, 80) }, .corrupt = { { 1, 0x44 } }, .fix_csum = true,
	  DROPPED(DROP_MALFORMED) },
	{ "ipv6 packet under the ipv4 ethertype",
	  .in = { V4(CLIENT4, VIP4, TCP, 40031, 80) }, .corrupt = { { 1, 0x65 } }, .fix_csum = true,
	  DROPPED(DROP_MALFORMED) },
	{ "ipv4 total length beyond the frame",
	  .in = { V4(CLIENT4, VIP4, TCP, 40032, 80) }, .corrupt = { { 4, 0x29 } }, .fix_csum = true,
	  DROPPED(DROP_MALFORMED) },
	{ "ipv4 total length shorter than the header",
	  .in = { V4(CLIENT4, VIP4, TCP, 40033, 80) }, .corrupt = { { 4, 0x13 } }, .fix_csum = true,
	  DROPPED(DROP_MALFORMED) },
	{ "tcp data offset 4",
	  .in = { V4(CLIENT4, VIP4, TCP, 40034, 80) }, .corrupt = { { 33, 0x40 } },
	  DROPPED(DROP_MALFORMED) },
	{ "tcp data offset past the packet",
	  .in = { V4(CLIENT4, VIP4, TCP, 40035, 80) }, .corrupt = { { 33, 0x60 } },
	  DROPPED(DROP_MALFORMED) },
	{ "udp length beyond the ip payload",
	  .in = { V4(CLIENT4, VIP4, UDP, 40036, 53), .payload_len = 4 }, .corrupt = { { 26, 0x0d } },
	  DROPPED(DROP_MALFORMED) },
	{ "udp length under 8",
	  .in = { V4(CLIENT4, VIP4, UDP, 40037, 53), .payload_len = 4 }, .corrupt = { { 26, 0x07 } },
	  DROPPED(DROP_MALFORMED) },
	{ "ipv6 payload length beyond the frame",
	  .in = { V6(CLIENT6, VIP6, TCP, 40038, 443) }, .corrupt = { { 6, 0x15 } },
	  DROPPED(DROP_MALFORMED) },
	{ "ipv6 version 4 under the ipv6 ethertype",
	  .in = { V6(CLIENT6, VIP6, TCP, 40039, 443) }, .corrupt = { { 1, 0x40 } },
	  DROPPED(DROP_MALFORMED) },
	{ "ipv6 hop-by-hop after a routing header",
	  .in = { V6(CLIENT6, VIP6, TCP, 40040, 443), .n_ext = 2,
		  .ext = { { IPPROTO_ROUTING, 0 }, { IPPROTO_HOPOPTS, 0 } } },
	  DROPPED(DROP_MALFORMED) },
	{ "ipv6 extension header running past the payload",
	  .in = { V6(CLIENT6, VIP6, TCP, 40041, 443), .n_ext = 1,
		  .ext = { { IPPROTO_DSTOPTS, 0 } } }, .corrupt = { { 42, 0x04 } },
	  DROPPED(DROP_MALFORMED) },
	{ "ipv6 tcp header cut by the payload length",
	  .in = { V6(CLIENT6, VIP6, TCP, 40042, 443) }, .corrupt = { { 6, 0x13 } }, .pad = 1,
	  DROPPED(DROP_MALFORMED) },
};

/* Build a case's frame; returns its length and the IP packet's offset and
 * length. */
static size_t build_case(const struct dp_case *c, __u8 *frame, size_t *l3_off,
			 size_t *l3_len)
{
	struct pkt_desc d = c->in;
	__u8 quote[PKT_MAX];
	size_t len, i;

	if (c->quoted.family) {
		d.quote = quote;
		d.quote_len = pkt_build_ip(&c->quoted, quote);
		if (c->quote_max && c->quote_max < d.quote_len)
			d.quote_len = c->quote_max;
	}
	len = pkt_build(&d, frame);
	*l3_off = PKT_ETH_LEN + 4 * d.vlans;
	*l3_len = len - *l3_off;
	for (i = 0; i < 2; i++) {
		int at = c->corrupt[i].at;

		if (at)
			frame[*l3_off + (at > 0 ? at - 1 : at)] = c->corrupt[i].val;
	}
	if (c->fix_csum) {
		__u8 *ip = frame + *l3_off;
		size_t hlen = (ip[0] & 0x0f) * 4;

		pkt_put16(ip + 10, 0);
		pkt_put16(ip + 10, pkt_fold(pkt_sum(ip, hlen < 20 ? 20 : hlen, 0)));
	}
	memset(frame + len, 0, c->pad);
	return len + c->pad;
}

#define STAT_NAME(name, str) str,
static const char *const stat_names[] = { XLB_STAT_LIST(STAT_NAME) };
#undef STAT_NAME

static void read_stats(struct xlb_counter *s)
{
	__u32 r;

	for (r = 0; r < XLB_STAT__MAX; r++)
		s[r] = dp_counter(fx.maps.stats, r);
}

/* Exactly one reason counted, once, with the frame's bytes. */
static void check_counted(const struct xlb_counter *before,
			  const struct xlb_counter *after, enum xlb_stat reason,
			  size_t bytes, const char *name)
{
	__u32 r;

	for (r = 0; r < XLB_STAT__MAX; r++) {
		__u64 dp = after[r].packets - before[r].packets;
		__u64 db = after[r].bytes - before[r].bytes;

		if (r == reason) {
			ASSERT_EQ(dp, 1, name);
			ASSERT_EQ(db, bytes, name);
		} else if (!ASSERT_EQ(dp, 0, name)) {
			printf("  counted instead: %s\n", stat_names[r]);
		}
	}
}

static void run_case(const struct dp_case *c)
{
	struct xlb_counter before[XLB_STAT__MAX], after[XLB_STAT__MAX];
	struct xlb_counter vip0, vip1, be0, be1;
	__u8 in[PKT_MAX], out[PKT_MAX], want[PKT_MAX];
	size_t len, l3_off, l3_len, want_len = 0;
	__u32 out_len, retval, be = 0;
	int verdict = c->verdict;

	len = build_case(c, in, &l3_off, &l3_len);
	if (!ASSERT_GT(len, 0, c->name))
		return;
	if (c->reason == XLB_STAT_FORWARD) {
		struct xlb_flow flow = dp_xlb_flow(&c->flow);

		want_len = dp_model_forward(&fx, c->vip, &flow, in + l3_off,
					    l3_len, c->pad, want,
					    &verdict, &be);
		ASSERT_EQ(verdict, c->verdict, "the case's verdict matches its routes");
		vip0 = dp_counter(fx.maps.vip_stats, c->vip);
		be0 = dp_counter(fx.maps.backend_stats, be);
	} else {
		memcpy(want, in, len);
		want_len = len;
	}
	read_stats(before);
	if (!ASSERT_OK(dp_run(&fx, in, len, out, &out_len, &retval), c->name))
		return;
	read_stats(after);

	if (!ASSERT_EQ(retval, c->verdict, c->name) |
	    !ASSERT_EQ(out_len, want_len, c->name) ||
	    !ASSERT_MEM_EQ(out, want, want_len, c->name)) {
		hexdump("input", in, len);
		hexdump("expected", want, want_len);
		hexdump("output", out, out_len);
	}
	check_counted(before, after, c->reason, len, c->name);
	if (c->reason == XLB_STAT_FORWARD) {
		vip1 = dp_counter(fx.maps.vip_stats, c->vip);
		be1 = dp_counter(fx.maps.backend_stats, be);
		ASSERT_EQ(vip1.packets - vip0.packets, 1, "vip packets");
		ASSERT_EQ(vip1.bytes - vip0.bytes, len, "vip bytes");
		ASSERT_EQ(be1.packets - be0.packets, 1, "backend packets");
		ASSERT_EQ(be1.bytes - be0.bytes, len, "backend bytes");
	}
}

static void table_cases(void)
{
	size_t i;

	if (!fixture())
		return;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		bool failed_before = test_failed;

		test_failed = false;
		run_case(&cases[i]);
		if (test_failed)
			printf("  case failed: %s\n", cases[i].name);
		test_failed |= failed_before;
	}
}

TEST_MAIN(TEST(table_cases))
