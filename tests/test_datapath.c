// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The XDP datapath, run with BPF_PROG_TEST_RUN in a private network
 * namespace where bpf_fib_lookup resolves (tests/dp_fixture.h). Every
 * expected output is built from the packet description by loader/packets.h
 * and the flow hash over the tables the fixture installed; the program's
 * own parser is never the judge.
 */
#include <sched.h>
#include <time.h>
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
	/* Bytes overwritten after building: at > 0 is byte at - 1 of the IP
	 * packet, at < 0 counts back from its start (-1: the EtherType's
	 * low byte), 0 is unused. */
	struct { int at; __u8 val; } corrupt[2];
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

	for (r = 0; r < XLB_STAT_REASONS; r++) {
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

/* ------------------------------------------------------------------ */
/* Truncation and garbage                                              */

/* Every prefix of a valid packet that cuts into its IP packet is dropped
 * as malformed, untouched; none is forwarded. */
static void truncated_packets_are_never_forwarded(void)
{
	__u8 in[PKT_MAX], out[PKT_MAX];
	struct xlb_counter before, after;
	size_t i, len, l3_off, l3_len, cut, tried = 0;
	__u32 out_len, retval;

	if (!fixture())
		return;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct dp_case *c = &cases[i];

		if (c->reason != XLB_STAT_FORWARD)
			continue;
		len = build_case(c, in, &l3_off, &l3_len);
		if (l3_off + l3_len > 600)
			continue;
		for (cut = PKT_ETH_LEN; cut < l3_off + l3_len; cut++) {
			before = dp_counter(fx.maps.stats, XLB_STAT_DROP_MALFORMED);
			if (!ASSERT_OK(dp_run(&fx, in, cut, out, &out_len, &retval), c->name))
				return;
			after = dp_counter(fx.maps.stats, XLB_STAT_DROP_MALFORMED);
			tried++;
			if (!ASSERT_EQ(retval, XDP_DROP, c->name) |
			    !ASSERT_EQ(after.packets - before.packets, 1, "counted drop_malformed") |
			    !ASSERT_EQ(out_len, cut, "length unchanged") ||
			    !ASSERT_MEM_EQ(out, in, cut, "bytes unchanged")) {
				printf("  cut at %zu of %zu\n", cut, len);
				return;
			}
		}
	}
	ASSERT_GT(tried, 1000, "truncation points tried");
}

/* Random bytes, as is and behind IPv4/IPv6/VLAN EtherTypes: passed or
 * dropped, never changed. */
static void garbage_is_passed_or_dropped_unchanged(void)
{
	static const __u16 types[] = { 0, PKT_ETH_P_IP, PKT_ETH_P_IPV6, PKT_ETH_P_8021Q };
	__u8 in[PKT_MAX], out[PKT_MAX];
	__u64 rng = 0x5eed;
	__u32 out_len, retval;
	int i, passed = 0, dropped = 0;
	size_t len, k;

	if (!fixture())
		return;
	for (i = 0; i < 4000; i++) {
		len = PKT_ETH_LEN + dp_seed_rng(&rng) % 300;
		for (k = 0; k < len; k++)
			in[k] = (__u8)dp_seed_rng(&rng);
		if (types[i % 4])
			pkt_put16(in + 12, types[i % 4]);
		if (!ASSERT_OK(dp_run(&fx, in, len, out, &out_len, &retval), "run"))
			return;
		passed += retval == XDP_PASS;
		dropped += retval == XDP_DROP;
		if (!ASSERT_TRUE(retval == XDP_PASS || retval == XDP_DROP, "verdict") |
		    !ASSERT_EQ(out_len, len, "length unchanged") ||
		    !ASSERT_MEM_EQ(out, in, len, "bytes unchanged")) {
			hexdump("input", in, len);
			return;
		}
	}
	/* Both outcomes occur: raw bytes are mostly not IP, the rest broken. */
	ASSERT_GT(passed, 0, "passed");
	ASSERT_GT(dropped, 0, "dropped");
}

/* ------------------------------------------------------------------ */
/* Random flows: the backend is the one userspace computes              */

static size_t random_flow_frame(int family, __u64 *rng, __u8 *frame,
				struct xlb_flow *flow)
{
	char src[INET6_ADDRSTRLEN];
	struct pkt_desc d = { .family = family, .proto = IPPROTO_TCP,
			      .tcp_flags = PKT_TCP_SYN };
	struct dp_flow f;
	__u64 r = dp_seed_rng(rng);
	static const char *const nets4[] = { "192.0.2", "198.51.100", "203.0.113" };

	if (family == 4) {
		snprintf(src, sizeof(src), "%s.%u", nets4[r % 3], (unsigned)(r >> 8) & 0xff);
		d.dst = "192.0.2.40";
		d.dport = 80;
	} else {
		snprintf(src, sizeof(src), "2001:db8:c%03x:%x:%x:%x::%x",
			 (unsigned)(r & 0xfff), (unsigned)(r >> 12) & 0xffff,
			 (unsigned)(r >> 28) & 0xffff, (unsigned)(r >> 44) & 0xffff,
			 (unsigned)dp_seed_rng(rng) & 0xffff);
		d.dst = "2001:db8:f::40";
		d.dport = 443;
	}
	d.src = src;
	d.sport = 1024 + (__u16)(dp_seed_rng(rng) % 64512);
	f = (struct dp_flow){ family, src, d.dst, d.sport, d.dport, IPPROTO_TCP };
	*flow = dp_xlb_flow(&f);
	return pkt_build(&d, frame);
}

static void random_flows_family(int family, __u32 vip_id)
{
	__u8 in[PKT_MAX], out[PKT_MAX], want[PKT_MAX];
	static bool seen[XLB_MAX_BACKENDS];
	__u32 out_len, retval, be;
	int i, wrong = 0, distinct = 0, verdict;
	__u64 rng = 0xf10f ^ family;
	struct xlb_flow flow;
	size_t len, want_len;

	memset(seen, 0, sizeof(seen));
	for (i = 0; i < 100000; i++) {
		len = random_flow_frame(family, &rng, in, &flow);
		want_len = dp_model_forward(&fx, vip_id, &flow, in + PKT_ETH_LEN,
					    len - PKT_ETH_LEN, 0, want, &verdict, &be);
		if (!ASSERT_OK(dp_run(&fx, in, len, out, &out_len, &retval), "run"))
			return;
		if (retval != XDP_TX || out_len != want_len || memcmp(out, want, want_len)) {
			if (wrong++ < 3)
				hexdump("output differs from the model", out, out_len);
		}
		distinct += !seen[be];
		seen[be] = true;
	}
	ASSERT_EQ(wrong, 0, family == 4 ? "ipv4 flows off the model" : "ipv6 flows off the model");
	ASSERT_EQ(distinct, DP_MAX_VIP_BACKENDS, "every backend chosen");
}

static void random_flows_reach_the_backend_userspace_computes(void)
{
	if (!fixture())
		return;
	random_flows_family(4, VIP_RANDOM4);
	random_flows_family(6, VIP_RANDOM6);
}

/* ------------------------------------------------------------------ */
/* An independent decoder: tshark reads the encapsulated outputs        */

struct decoded_expect {
	int outer_family, inner_family;
	char outer_src[INET6_ADDRSTRLEN], outer_dst[INET6_ADDRSTRLEN];
	char inner_src[INET6_ADDRSTRLEN], inner_dst[INET6_ADDRSTRLEN];
	bool l4_checksum;	/* a whole TCP/UDP segment inside */
};

/* Field i (0-based) of a comma-separated tshark occurrence list. */
static void occurrence(const char *list, int i, char *out, size_t cap)
{
	const char *p = list, *comma;
	size_t n;

	while (i-- > 0 && p)
		p = (p = strchr(p, ',')) ? p + 1 : NULL;
	out[0] = 0;
	if (!p)
		return;
	comma = strchr(p, ',');
	n = comma ? (size_t)(comma - p) : strlen(p);
	snprintf(out, cap, "%.*s", (int)(n < cap ? n : cap - 1), p);
}

static void text_addr(int family, const __u8 *bin, char *out)
{
	inet_ntop(family == 4 ? AF_INET : AF_INET6, bin, out, INET6_ADDRSTRLEN);
}

/* The addresses an output frame must show, from the model. */
static struct decoded_expect expect_of(const __u8 *frame, bool l4_checksum)
{
	struct decoded_expect e = { .l4_checksum = l4_checksum };
	const __u8 *outer = frame + PKT_ETH_LEN, *inner;

	e.outer_family = pkt_get16(frame + 12) == PKT_ETH_P_IP ? 4 : 6;
	text_addr(e.outer_family, outer + (e.outer_family == 4 ? 12 : 8), e.outer_src);
	text_addr(e.outer_family, outer + (e.outer_family == 4 ? 16 : 24), e.outer_dst);
	inner = outer + (e.outer_family == 4 ? 20 : 40);
	e.inner_family = inner[0] >> 4;
	text_addr(e.inner_family, inner + (e.inner_family == 4 ? 12 : 8), e.inner_src);
	text_addr(e.inner_family, inner + (e.inner_family == 4 ? 16 : 24), e.inner_dst);
	return e;
}

enum { F_NUM, F_IP_SRC, F_IP_DST, F_IP_CSUM, F_IP_TTL, F_IP_PROTO, F_IP6_SRC,
       F_IP6_DST, F_IP6_HLIM, F_IP6_NXT, F_TCP_CSUM, F_UDP_CSUM, F_MALFORMED,
       F__COUNT };

static bool check_decoded_line(char *line, const struct decoded_expect *e, int frame,
			       bool report)
{
	char *f[F__COUNT], got[INET6_ADDRSTRLEN], *p = line;
	bool ok = true;
	int i;

	for (i = 0; i < F__COUNT; i++) {
		char *bar = strchr(p, '|');

		f[i] = p;
		if (bar)
			*bar = 0;
		p = bar ? bar + 1 : p + strlen(p);
	}
#define EXPECT_FIELD(list, idx, want, what) do {				\
	occurrence(list, idx, got, sizeof(got));				\
	if (strcmp(got, want)) {						\
		if (report)							\
			printf("  frame %d: %s: decoded '%s', expected '%s'\n", \
			       frame, what, got, want);				\
		ok = false;							\
	}									\
} while (0)
	if (e->outer_family == 4) {
		EXPECT_FIELD(f[F_IP_SRC], 0, e->outer_src, "outer source");
		EXPECT_FIELD(f[F_IP_DST], 0, e->outer_dst, "outer destination");
		EXPECT_FIELD(f[F_IP_TTL], 0, "64", "outer ttl");
		EXPECT_FIELD(f[F_IP_PROTO], 0, e->inner_family == 4 ? "4" : "41", "outer protocol");
	} else {
		EXPECT_FIELD(f[F_IP6_SRC], 0, e->outer_src, "outer source");
		EXPECT_FIELD(f[F_IP6_DST], 0, e->outer_dst, "outer destination");
		EXPECT_FIELD(f[F_IP6_HLIM], 0, "64", "outer hop limit");
		EXPECT_FIELD(f[F_IP6_NXT], 0, e->inner_family == 4 ? "4" : "41", "outer next header");
	}
	i = e->outer_family == e->inner_family;
	EXPECT_FIELD(e->inner_family == 4 ? f[F_IP_SRC] : f[F_IP6_SRC], i, e->inner_src, "inner source");
	EXPECT_FIELD(e->inner_family == 4 ? f[F_IP_DST] : f[F_IP6_DST], i, e->inner_dst, "inner destination");
	/* Checksum status 1 is "good", 0 "bad"; every one present is good. */
	if (strchr(f[F_IP_CSUM], '0') || strchr(f[F_TCP_CSUM], '0') ||
	    strchr(f[F_UDP_CSUM], '0')) {
		if (report)
			printf("  frame %d: a bad checksum: ip '%s' tcp '%s' udp '%s'\n",
			       frame, f[F_IP_CSUM], f[F_TCP_CSUM], f[F_UDP_CSUM]);
		ok = false;
	}
	if (e->l4_checksum && !strchr(f[F_TCP_CSUM], '1') && !strchr(f[F_UDP_CSUM], '1')) {
		if (report)
			printf("  frame %d: transport checksum not verified\n", frame);
		ok = false;
	}
	if (*f[F_MALFORMED]) {
		if (report)
			printf("  frame %d: tshark finds it malformed\n", frame);
		ok = false;
	}
#undef EXPECT_FIELD
	return ok;
}

static void tshark_decodes_the_encapsulated_outputs(void)
{
	static struct decoded_expect expect[2000];
	char path[] = "/tmp/xlb-datapath-XXXXXX", cmd[1024], line[4096];
	__u8 in[PKT_MAX], out[PKT_MAX];
	struct xlb_pcap_writer *w = NULL;
	size_t i, len, l3_off, l3_len;
	int fd, n = 0, decoded = 0, control;
	__u32 out_len, retval;
	struct xlb_flow flow;
	__u64 rng = 0xdec0de;
	FILE *ts;

	if (!fixture())
		return;
	if (system("command -v tshark >/dev/null 2>&1")) {
		test_skip_env("tshark not installed (scripts/deps.sh installs it)");
		return;
	}
	fd = mkstemp(path);
	if (!ASSERT_TRUE(fd >= 0, "mkstemp"))
		return;
	close(fd);
	if (!ASSERT_OK(xlb_pcap_create(path, &w), "pcap create"))
		goto cleanup;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct dp_case *c = &cases[i];

		if (c->reason != XLB_STAT_FORWARD)
			continue;
		len = build_case(c, in, &l3_off, &l3_len);
		if (!ASSERT_OK(dp_run(&fx, in, len, out, &out_len, &retval), c->name))
			goto cleanup;
		expect[n] = expect_of(out, !c->in.frag && !c->quoted.family);
		xlb_pcap_add(w, out, out_len, n++);
	}
	for (i = 0; i < 1000; i++) {
		len = random_flow_frame(i % 2 ? 6 : 4, &rng, in, &flow);
		if (!ASSERT_OK(dp_run(&fx, in, len, out, &out_len, &retval), "random flow"))
			goto cleanup;
		expect[n] = expect_of(out, true);
		xlb_pcap_add(w, out, out_len, n++);
	}
	/* A control: the same frame with its outer IPv4 checksum broken
	 * must be reported bad, or the check above proves nothing. */
	do {
		len = random_flow_frame(4, &rng, in, &flow);
		dp_run(&fx, in, len, out, &out_len, &retval);
	} while (pkt_get16(out + 12) != PKT_ETH_P_IP);
	out[PKT_ETH_LEN + 10] ^= 0xff;
	control = n;
	expect[n] = expect_of(out, true);
	xlb_pcap_add(w, out, out_len, n++);
	if (!ASSERT_OK(xlb_pcap_close(w), "pcap write"))
		goto cleanup;
	w = NULL;

	snprintf(cmd, sizeof(cmd),
		 "tshark -r %s --disable-protocol dns --disable-protocol mdns -o ip.check_checksum:TRUE "
		 "-o tcp.check_checksum:TRUE -o udp.check_checksum:TRUE -T fields "
		 "-E separator='|' -e frame.number -e ip.src -e ip.dst "
		 "-e ip.checksum.status -e ip.ttl -e ip.proto -e ipv6.src -e ipv6.dst "
		 "-e ipv6.hlim -e ipv6.nxt -e tcp.checksum.status -e udp.checksum.status "
		 "-e _ws.malformed 2>/dev/null", path);
	ts = popen(cmd, "r");
	if (!ASSERT_TRUE(ts != NULL, "run tshark"))
		goto cleanup;
	while (fgets(line, sizeof(line), ts)) {
		int num = atoi(line) - 1;
		bool ok;

		line[strcspn(line, "\n")] = 0;
		if (num < 0 || num >= n)
			continue;
		decoded++;
		if (num == control) {
			ASSERT_TRUE(!check_decoded_line(line, &expect[num], num + 1, false),
				    "tshark reports the broken control checksum");
			continue;
		}
		ok = check_decoded_line(line, &expect[num], num + 1, true);
		ASSERT_TRUE(ok, "decoded frame as the model says");
	}
	ASSERT_OK(pclose(ts), "tshark exit status");
	ASSERT_EQ(decoded, n, "frames decoded");
cleanup:
	if (w)
		xlb_pcap_close(w);
	unlink(path);
}

/* ------------------------------------------------------------------ */
/* Fuzzing against a reference classifier                               */

/*
 * The reference: from the rules in README "The datapath", written by byte
 * offsets over the frame, whether it is a well-formed packet with a flow xlb
 * balances, and which flow. A forward of anything it rejects is a bug.
 */
struct ref_pkt {
	struct xlb_flow flow;
	size_t l3_off, l3_len;
};

static bool ref_is_ext6(__u8 nh)
{
	return nh == 0 || nh == 43 || nh == 60 || nh == 44;
}

static bool ref_walk6(const __u8 *ip, size_t stop, size_t *off, __u8 *nh,
		      bool quoted, bool *frag)
{
	int i;

	for (i = 0; i < 4; i++) {
		if (*nh == 44) {
			__u16 fo;

			if (*off + 8 > stop)
				return false;
			fo = pkt_get16(ip + *off + 2);
			*nh = ip[*off];
			*off += 8;
			if ((fo & 0xfff8) || ((fo & 1) && !quoted)) {
				if (quoted && (fo & 0xfff8))
					return false;
				*frag = true;
				return true;
			}
			continue;
		}
		if (*nh == 0 && i > 0)
			return false;
		if (*nh != 0 && *nh != 43 && *nh != 60)
			return true;
		if (*off + 8 > stop || *off + (ip[*off + 1] + 1) * 8 > stop)
			return false;
		*nh = ip[*off];
		*off += (ip[*off + 1] + 1) * 8;
	}
	return !ref_is_ext6(*nh);
}

static bool ref_ports(const __u8 *l4, size_t len, __u8 proto, struct xlb_flow *f)
{
	if (proto == IPPROTO_TCP) {
		if (len < 20 || l4[12] >> 4 < 5 || (size_t)(l4[12] >> 4) * 4 > len)
			return false;
	} else if (proto == IPPROTO_UDP) {
		if (len < 8 || pkt_get16(l4 + 4) < 8 || pkt_get16(l4 + 4) > len)
			return false;
	} else {
		return false;
	}
	memcpy(&f->sport, l4, 2);
	memcpy(&f->dport, l4 + 2, 2);
	return true;
}

static bool ref_ipv4(const __u8 *ip, size_t avail, struct ref_pkt *r)
{
	size_t hlen, tot, qhlen;
	const __u8 *l4, *q;
	struct xlb_flow *f = &r->flow;

	if (avail < 20)
		return false;
	hlen = (ip[0] & 15) * 4;
	tot = pkt_get16(ip + 2);
	if (ip[0] >> 4 != 4 || hlen < 20 || tot < hlen || tot > avail ||
	    pkt_fold(pkt_sum(ip, hlen, 0)) != 0)
		return false;
	r->l3_len = tot;
	f->family = XLB_AF_INET;
	f->proto = ip[9];
	memcpy(f->src, ip + 12, 4);
	memcpy(f->dst, ip + 16, 4);
	if (pkt_get16(ip + 6) & 0x3fff)
		return true;
	l4 = ip + hlen;
	if (f->proto != IPPROTO_ICMP)
		return ref_ports(l4, tot - hlen, f->proto, f);
	if (tot - hlen < 8 || (l4[0] != 3 && l4[0] != 11 && l4[0] != 12))
		return false;
	q = l4 + 8;
	qhlen = (q[0] & 15) * 4;
	if (tot - hlen - 8 < 20 || q[0] >> 4 != 4 || qhlen < 20 ||
	    tot - hlen - 8 < qhlen + 4 || (pkt_get16(q + 6) & 0x1fff) ||
	    (q[9] != IPPROTO_TCP && q[9] != IPPROTO_UDP))
		return false;
	f->proto = q[9];
	memcpy(f->src, q + 16, 4);
	memcpy(f->dst, q + 12, 4);
	memcpy(&f->sport, q + qhlen + 2, 2);
	memcpy(&f->dport, q + qhlen, 2);
	return true;
}

static bool ref_ipv6(const __u8 *ip, size_t avail, struct ref_pkt *r)
{
	struct xlb_flow *f = &r->flow;
	size_t tot, off = 40, qoff;
	bool frag = false;
	__u8 nh;

	if (avail < 40)
		return false;
	tot = 40 + pkt_get16(ip + 4);
	if (ip[0] >> 4 != 6 || tot > avail)
		return false;
	r->l3_len = tot;
	f->family = XLB_AF_INET6;
	memcpy(f->src, ip + 8, 16);
	memcpy(f->dst, ip + 24, 16);
	nh = ip[6];
	if (!ref_walk6(ip, tot, &off, &nh, false, &frag))
		return false;
	f->proto = nh;
	if (frag)
		return true;
	if (nh != IPPROTO_ICMPV6)
		return ref_ports(ip + off, tot - off, nh, f);
	if (off + 8 > tot || ip[off] < 1 || ip[off] > 4)
		return false;
	qoff = off + 8;
	if (qoff + 40 > tot || ip[qoff] >> 4 != 6)
		return false;
	off = qoff + 40;
	nh = ip[qoff + 6];
	if (!ref_walk6(ip, tot, &off, &nh, true, &frag) ||
	    (nh != IPPROTO_TCP && nh != IPPROTO_UDP) || off + 4 > tot)
		return false;
	f->proto = nh;
	memcpy(f->src, ip + qoff + 24, 16);
	memcpy(f->dst, ip + qoff + 8, 16);
	memcpy(&f->sport, ip + off + 2, 2);
	memcpy(&f->dport, ip + off, 2);
	return true;
}

static bool ref_classify(const __u8 *frame, size_t len, struct ref_pkt *r)
{
	size_t off = PKT_ETH_LEN;
	__u16 type;
	int tags;

	memset(r, 0, sizeof(*r));
	if (len < PKT_ETH_LEN)
		return false;
	type = pkt_get16(frame + 12);
	for (tags = 0; tags < 2 && (type == PKT_ETH_P_8021Q || type == PKT_ETH_P_8021AD); tags++) {
		if (off + 4 > len)
			return false;
		type = pkt_get16(frame + off + 2);
		off += 4;
	}
	r->l3_off = off;
	if (type == PKT_ETH_P_IP)
		return ref_ipv4(frame + off, len - off, r);
	if (type == PKT_ETH_P_IPV6)
		return ref_ipv6(frame + off, len - off, r);
	return false;
}

/* The fixture's VIP for a flow, 0 when none. */
static __u32 ref_vip(const struct xlb_flow *f)
{
	size_t i;

	for (i = 0; i < sizeof(dp_vip_defs) / sizeof(dp_vip_defs[0]); i++) {
		const struct dp_vip_def *d = &dp_vip_defs[i];
		__u8 addr[16] = {};

		pkt_addr(d->family, d->addr, addr);
		if ((d->family == 4 ? XLB_AF_INET : XLB_AF_INET6) == f->family &&
		    d->proto == f->proto && htons(d->port) == f->dport &&
		    !memcmp(addr, f->dst, 16))
			return d->id;
	}
	return 0;
}

static const __u8 fuzz_interesting[] = { 0x00, 0x01, 0x05, 0x06, 0x0f, 0x11, 0x2c,
					 0x3a, 0x40, 0x45, 0x4f, 0x60, 0x7f, 0x80,
					 0x81, 0x86, 0x88, 0xa8, 0xdd, 0xfe, 0xff };

static size_t fuzz_mutate(__u8 *p, size_t len, __u64 *rng)
{
	int n = 1 + dp_seed_rng(rng) % 3, i;
	size_t at, k;

	for (i = 0; i < n; i++) {
		__u64 r = dp_seed_rng(rng);

		at = len ? (r >> 8) % len : 0;
		switch (r % 8) {
		case 0:
			p[at] ^= 1 << ((r >> 40) % 8);
			break;
		case 1:
			p[at] = (__u8)(r >> 40);
			break;
		case 2:
			p[at] = fuzz_interesting[(r >> 40) % sizeof(fuzz_interesting)];
			break;
		case 3:	/* truncate */
			len = PKT_ETH_LEN + (r >> 40) % (len - PKT_ETH_LEN + 1);
			break;
		case 4:	/* append bytes */
			for (k = 0; k < (r >> 40) % 64 && len < 1600; k++)
				p[len++] = (__u8)dp_seed_rng(rng);
			break;
		case 5:	/* a 16-bit field, often a length */
			if (at + 1 < len)
				pkt_put16(p + at, (__u16)(r >> 40));
			break;
		case 6:	/* insert a VLAN tag */
			if (len + 4 <= 1600) {
				memmove(p + 16, p + 12, len - 12);
				pkt_put16(p + 12, (r >> 40) & 1 ? PKT_ETH_P_8021Q : PKT_ETH_P_8021AD);
				len += 4;
			}
			break;
		case 7:	/* random bytes behind an IP EtherType */
			len = PKT_ETH_LEN + (r >> 40) % 200;
			for (k = 0; k < len; k++)
				p[k] = (__u8)dp_seed_rng(rng);
			pkt_put16(p + 12, (r >> 36) & 1 ? PKT_ETH_P_IP : PKT_ETH_P_IPV6);
			p[PKT_ETH_LEN] = (r >> 36) & 1 ? 0x45 : 0x60;
			break;
		}
	}
	return len;
}

static void fuzz_never_aborts_or_forwards_what_is_not_a_vip_packet(void)
{
	enum { SEEDS = 64, RUNS = 1000000 };
	static __u8 seeds[SEEDS][PKT_MAX];
	static size_t seed_len[SEEDS];
	__u8 in[PKT_MAX], out[PKT_MAX], want[PKT_MAX];
	size_t n_seeds = 0, i, len, l3_off, l3_len, want_len;
	int run, bad = 0, forwards = 0, verdict;
	__u32 out_len, retval, be, vip;
	struct xlb_flow flow;
	struct ref_pkt ref;
	__u64 rng = 0xf022;

	if (!fixture())
		return;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]) && n_seeds < SEEDS; i++)
		if (cases[i].in.payload_len < 1000)
			seed_len[n_seeds] = build_case(&cases[i], seeds[n_seeds], &l3_off, &l3_len),
			n_seeds++;
	while (n_seeds < SEEDS) {
		seed_len[n_seeds] = random_flow_frame(n_seeds % 2 ? 4 : 6, &rng,
						      seeds[n_seeds], &flow);
		n_seeds++;
	}

	for (run = 0; run < RUNS; run++) {
		i = dp_seed_rng(&rng) % SEEDS;
		memcpy(in, seeds[i], seed_len[i]);
		len = fuzz_mutate(in, seed_len[i], &rng);
		if (dp_run(&fx, in, len, out, &out_len, &retval)) {
			ASSERT_TRUE(false, "BPF_PROG_TEST_RUN failed");
			return;
		}
		if (retval == XDP_PASS || retval == XDP_DROP) {
			if (out_len != len || memcmp(out, in, len)) {
				if (bad++ < 3)
					hexdump("passed or dropped, but changed", in, len);
			}
			continue;
		}
		forwards++;
		vip = ref_classify(in, len, &ref) ? ref_vip(&ref.flow) : 0;
		if (!vip || (retval != XDP_TX && retval != XDP_REDIRECT)) {
			if (bad++ < 3) {
				printf("  verdict %u for a packet the reference rejects\n", retval);
				hexdump("input", in, len);
			}
			continue;
		}
		want_len = dp_model_forward(&fx, vip, &ref.flow, in + ref.l3_off,
					    ref.l3_len, len - ref.l3_off - ref.l3_len,
					    want, &verdict, &be);
		if ((int)retval != verdict || out_len != want_len || memcmp(out, want, want_len)) {
			if (bad++ < 3) {
				hexdump("forwarded input", in, len);
				hexdump("output", out, out_len);
				hexdump("model", want, want_len);
			}
		}
	}
	ASSERT_EQ(bad, 0, "fuzzed packets handled wrongly");
	/* The mutations keep many packets valid: forwards are exercised. */
	ASSERT_GT(forwards, RUNS / 20, "fuzzed packets forwarded");
	printf("  %d runs, %d forwarded\n", RUNS, forwards);
}

/* ------------------------------------------------------------------ */
/* Configuration, tables, next-hop changes                              */

/* Run the packet of d; assert the verdict, the one reason counted and, for
 * passes and drops, an untouched frame. The output lands in out. */
static bool expect_run(const struct pkt_desc *d, int verdict, enum xlb_stat reason,
		       __u8 *out, __u32 *out_len, const char *what)
{
	struct xlb_counter before[XLB_STAT__MAX], after[XLB_STAT__MAX];
	__u8 in[PKT_MAX];
	size_t len = pkt_build(d, in);
	__u32 retval;
	bool ok;

	read_stats(before);
	if (!ASSERT_OK(dp_run(&fx, in, len, out, out_len, &retval), what))
		return false;
	read_stats(after);
	ok = ASSERT_EQ(retval, verdict, what);
	check_counted(before, after, reason, len, what);
	if (verdict == XDP_PASS || verdict == XDP_DROP)
		ok &= ASSERT_EQ(*out_len, len, what) && ASSERT_MEM_EQ(out, in, len, what);
	return ok && !test_failed;
}

static const struct pkt_desc to_mtu4 = { V4(CLIENT4, "192.0.2.50", TCP, 40100, 80) };
static const struct pkt_desc to_mtu6 = { V4(CLIENT4, "192.0.2.51", TCP, 40101, 80) };

static void missing_config_and_source_are_counted_drops(void)
{
	struct pkt_desc other = { V4(CLIENT4, "192.0.2.99", TCP, 40102, 80) };
	struct xlb_config saved = fx.cfg;
	__u8 out[PKT_MAX];
	__u32 out_len;

	if (!fixture())
		return;
	fx.cfg.flags = 0;
	if (!ASSERT_OK(dp_write_config(&fx), "config without a seed"))
		return;
	expect_run(&to_mtu4, XDP_DROP, XLB_STAT_DROP_NO_CONFIG, out, &out_len, "vip, no config");
	expect_run(&other, XDP_PASS, XLB_STAT_PASS_NOT_VIP, out, &out_len, "not a vip, no config");

	fx.cfg = saved;
	fx.cfg.src4 = 0;
	ASSERT_OK(dp_write_config(&fx), "config without an ipv4 source");
	expect_run(&to_mtu4, XDP_DROP, XLB_STAT_DROP_NO_SOURCE, out, &out_len, "no ipv4 source");
	expect_run(&to_mtu6, XDP_TX, XLB_STAT_FORWARD, out, &out_len, "ipv6 backend needs no ipv4 source");

	fx.cfg = saved;
	memset(fx.cfg.src6, 0, sizeof(fx.cfg.src6));
	ASSERT_OK(dp_write_config(&fx), "config without an ipv6 source");
	expect_run(&to_mtu6, XDP_DROP, XLB_STAT_DROP_NO_SOURCE, out, &out_len, "no ipv6 source");
	expect_run(&to_mtu4, XDP_TX, XLB_STAT_FORWARD, out, &out_len, "ipv4 backend needs no ipv6 source");

	fx.cfg = saved;
	ASSERT_OK(dp_write_config(&fx), "config restored");
}

/* The outer destination of an output frame, as text. */
static void outer_dst(const __u8 *frame, char *out)
{
	if (pkt_get16(frame + 12) == PKT_ETH_P_IP)
		text_addr(4, frame + PKT_ETH_LEN + 16, out);
	else
		text_addr(6, frame + PKT_ETH_LEN + 24, out);
}

static void table_swap_read_back_and_removal(void)
{
	__u32 slots[3], *got = NULL, m = 0, a = 0, b, i, out_len;
	char dst[INET6_ADDRSTRLEN];
	/* SYNs: a new connection follows the table, whatever the connection
	 * table remembers of the 5-tuple (bpf/conntrack.h). */
	struct pkt_desc syn = { V4(CLIENT4, "192.0.2.50", TCP, 40100, 80),
				.tcp_flags = PKT_TCP_SYN };
	__u8 out[PKT_MAX];
	struct dp_vip *v;

	if (!fixture())
		return;
	/* The big random table reads back exactly. */
	v = &fx.vips[VIP_RANDOM4];
	if (ASSERT_OK(xlb_table_read(fx.maps.tables, VIP_RANDOM4, &got, &m), "read back"))
		ASSERT_TRUE(m == v->m && !memcmp(got, v->table, m * sizeof(*got)),
			    "65537-slot table read back");
	free(got);
	got = NULL;

	v = &fx.vips[VIP_MTU4];
	a = v->table[0];
	if (!ASSERT_OK(dp_add_backend(&fx, VIP_MTU4, "203.0.113.51", &b), "second backend"))
		return;
	for (i = 0; i < 3; i++)
		slots[i] = b;
	ASSERT_OK(xlb_table_install(fx.maps.tables, VIP_MTU4, slots, 3), "swap to b");
	expect_run(&syn, XDP_TX, XLB_STAT_FORWARD, out, &out_len, "after the swap");
	outer_dst(out, dst);
	ASSERT_TRUE(!strcmp(dst, "203.0.113.51"), "the new table's backend");
	if (ASSERT_OK(xlb_table_read(fx.maps.tables, VIP_MTU4, &got, &m), "read back"))
		ASSERT_TRUE(m == 3 && got[0] == b && got[1] == b && got[2] == b, "new table read back");
	free(got);
	got = NULL;

	/* Refused installs change nothing. */
	ASSERT_EQ(xlb_table_install(fx.maps.tables, VIP_MTU4, v->table, 2), -EINVAL, "m too small");
	slots[1] = XLB_MAX_BACKENDS;
	ASSERT_EQ(xlb_table_install(fx.maps.tables, VIP_MTU4, slots, 3), -EINVAL, "slot out of range");
	ASSERT_EQ(xlb_table_install(fx.maps.tables, XLB_MAX_VIPS, v->table, 3), -EINVAL, "vip id out of range");
	expect_run(&syn, XDP_TX, XLB_STAT_FORWARD, out, &out_len, "after refused installs");
	outer_dst(out, dst);
	ASSERT_TRUE(!strcmp(dst, "203.0.113.51"), "still the installed table");

	ASSERT_OK(xlb_table_remove(fx.maps.tables, VIP_MTU4), "remove");
	ASSERT_EQ(xlb_table_read(fx.maps.tables, VIP_MTU4, &got, &m), -ENOENT, "read a removed table");
	expect_run(&syn, XDP_DROP, XLB_STAT_DROP_NO_TABLE, out, &out_len, "table removed");

	ASSERT_OK(xlb_table_install(fx.maps.tables, VIP_MTU4, v->table, v->m), "restore");
	expect_run(&syn, XDP_TX, XLB_STAT_FORWARD, out, &out_len, "restored");
	outer_dst(out, dst);
	ASSERT_TRUE(v->table[0] == a && !strcmp(dst, "203.0.113.50"), "the first backend again");
}

/* The FIB cache's entry lifetime, XLB_FIB_CACHE_NS in bpf/fib.h. */
#define FIB_CACHE_MS	500

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static bool pin_to_this_cpu(void)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(sched_getcpu(), &set);
	return ASSERT_OK(sched_setaffinity(0, sizeof(set), &set), "pin to one CPU");
}

/* The per-CPU FIB cache holds an answer for at most a second: a neighbour
 * and a route change both show within that time, not before the cache
 * entry ages out. */
static void route_and_neighbour_changes_apply_within_a_second(void)
{
	static const __u8 new_mac[6] = { 0x02, 0x58, 0x4c, 0x42, 0x00, 0x99 };
	struct pkt_desc to_tcp4 = { V4(CLIENT4, VIP4, TCP, 0, 80) };
	__u8 out[PKT_MAX];
	__u32 out_len;
	struct xlb_flow flow;
	struct dp_flow f;
	double primed;
	__u64 hash;
	__u16 port;

	if (!fixture() || !pin_to_this_cpu())
		return;
	/* A flow of VIP_TCP4 whose backend is 203.0.113.1. */
	for (port = 40200; port < 41200; port++) {
		f = (struct dp_flow){ 4, CLIENT4, VIP4, port, 80, TCP };
		flow = dp_xlb_flow(&f);
		if (!strcmp(fx.backends[dp_model_backend(&fx, VIP_TCP4, &flow, &hash)].addr,
			    "203.0.113.1"))
			break;
	}
	to_tcp4.sport = port;
	ASSERT_OK(dp_fib_cache_clear(&fx), "clear the FIB cache");

	expect_run(&to_mtu4, XDP_TX, XLB_STAT_FORWARD, out, &out_len, "mtu4 before");
	ASSERT_MEM_EQ(out, dp_mac_gw, 6, "gateway MAC before");
	expect_run(&to_tcp4, XDP_TX, XLB_STAT_FORWARD, out, &out_len, "tcp4 before");

	primed = now_ms();
	ASSERT_OK(xlb_sandbox_ip("neigh replace " XLB_SANDBOX_GW4 " lladdr 02:58:4c:42:00:99 dev "
				 XLB_SANDBOX_IF_IN " nud permanent\n"
				 "route add 203.0.113.1/32 via 198.51.100.130\n"),
		  "change the neighbour and a route");
	/* Within the entries' lifetime the cache still answers; on a slow
	 * machine (an emulated VM) running ip(8) may outlast it. */
	if (now_ms() - primed < FIB_CACHE_MS / 2) {
		expect_run(&to_mtu4, XDP_TX, XLB_STAT_FORWARD, out, &out_len, "mtu4 at once");
		ASSERT_MEM_EQ(out, dp_mac_gw, 6, "served from the cache at once");
		expect_run(&to_tcp4, XDP_TX, XLB_STAT_FORWARD, out, &out_len, "tcp4 at once");
	} else {
		printf("  changing took %.0f ms: the cached answers had aged out, not checked\n",
		       now_ms() - primed);
	}

	usleep(2 * FIB_CACHE_MS * 1000);
	expect_run(&to_mtu4, XDP_TX, XLB_STAT_FORWARD, out, &out_len, "mtu4 a second later");
	ASSERT_MEM_EQ(out, new_mac, 6, "new neighbour MAC a second later");
	expect_run(&to_tcp4, XDP_REDIRECT, XLB_STAT_FORWARD, out, &out_len, "tcp4 a second later");
	ASSERT_MEM_EQ(out, dp_mac_other_gw, 6, "new route a second later");

	ASSERT_OK(xlb_sandbox_ip("neigh replace " XLB_SANDBOX_GW4 " lladdr 02:58:4c:42:00:02 dev "
				 XLB_SANDBOX_IF_IN " nud permanent\n"
				 "route del 203.0.113.1/32\n"), "restore");
	ASSERT_OK(dp_fib_cache_clear(&fx), "clear the FIB cache");
}

/* Too big is caught by the kernel's check on a lookup and by the cached
 * MTU afterwards. */
static void mtu_checked_with_and_without_the_cache(void)
{
	struct pkt_desc fits4 = to_mtu4, big4 = to_mtu4, fits6 = to_mtu6, big6 = to_mtu6;
	__u8 out[PKT_MAX];
	__u32 out_len;

	if (!fixture() || !pin_to_this_cpu())
		return;
	fits4.payload_len = XLB_SANDBOX_MTU - 20 - 40;
	big4.payload_len = fits4.payload_len + 1;
	fits6.payload_len = XLB_SANDBOX_MTU - 40 - 40;
	big6.payload_len = fits6.payload_len + 1;
	ASSERT_OK(dp_fib_cache_clear(&fx), "clear the FIB cache");
	expect_run(&big4, XDP_DROP, XLB_STAT_DROP_TOO_BIG, out, &out_len, "ipv4 outer, lookup");
	expect_run(&big6, XDP_DROP, XLB_STAT_DROP_TOO_BIG, out, &out_len, "ipv6 outer, lookup");
	expect_run(&fits4, XDP_TX, XLB_STAT_FORWARD, out, &out_len, "ipv4 outer fits");
	expect_run(&fits6, XDP_TX, XLB_STAT_FORWARD, out, &out_len, "ipv6 outer fits");
	ASSERT_EQ(out_len, PKT_ETH_LEN + XLB_SANDBOX_MTU, "a full-MTU frame");
	expect_run(&big4, XDP_DROP, XLB_STAT_DROP_TOO_BIG, out, &out_len, "ipv4 outer, cached");
	expect_run(&big6, XDP_DROP, XLB_STAT_DROP_TOO_BIG, out, &out_len, "ipv6 outer, cached");
	expect_run(&fits4, XDP_TX, XLB_STAT_FORWARD, out, &out_len, "ipv4 outer fits, cached");
}

/* The same program built by clang 19 loads, passes the verifier and
 * behaves the same on every table case. */
static void clang19_build_passes_the_table_cases(void)
{
	char path[512];

	if (!fixture())
		return;
	snprintf(path, sizeof(path), "%s/clang19/xlb.bpf.o", build_dir());
	if (access(path, R_OK)) {
		test_skip_env("no clang-19 build (clang-19 missing; scripts/deps.sh installs it)");
		return;
	}
	dp_fixture_unload(&fx);
	if (ASSERT_OK(dp_fixture_load(&fx, path, "xlb_xdp"), "load the clang 19 build"))
		table_cases();
	dp_fixture_unload(&fx);
	snprintf(path, sizeof(path), "%s/xlb.bpf.o", build_dir());
	if (!ASSERT_OK(dp_fixture_load(&fx, path, "xlb_xdp"), "reload the clang 14 build"))
		fx_state = -1;
}

TEST_MAIN(TEST(table_cases),
	  TEST(truncated_packets_are_never_forwarded),
	  TEST(garbage_is_passed_or_dropped_unchanged),
	  TEST(random_flows_reach_the_backend_userspace_computes),
	  TEST(tshark_decodes_the_encapsulated_outputs),
	  TEST(fuzz_never_aborts_or_forwards_what_is_not_a_vip_packet),
	  TEST(missing_config_and_source_are_counted_drops),
	  TEST(table_swap_read_back_and_removal),
	  TEST(route_and_neighbour_changes_apply_within_a_second),
	  TEST(mtu_checked_with_and_without_the_cache),
	  TEST(clang19_build_passes_the_table_cases))
