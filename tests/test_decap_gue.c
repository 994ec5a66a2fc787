// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The backends' program on GUE (bpf/decap.bpf.c, docs/second-chance.md),
 * run with BPF_PROG_TEST_RUN in a network namespace of the test's own
 * (loader/sim/sandbox.h) that holds the VIP on loopback, real sockets on
 * it and routes to the previous backends, so the program's socket and FIB
 * lookups answer as on a backend:
 *
 * - GUE of either family around either family comes out as the inner
 *   packet behind the same Ethernet addresses;
 * - a SYN, a segment of a connection this host has (established,
 *   time-wait, or in its handshake: a request socket), a packet that was
 *   forwarded already, one that names no previous backend or names this
 *   host: passed up decapsulated;
 * - any other segment goes to the previous backend, once: outer addresses
 *   and hops rewritten, checksums valid, MAC addresses from the FIB;
 * - UDP: a datagram some socket takes stays (a connected socket matches
 *   only its peer, an unconnected one anyone); one no socket takes goes;
 * - malformed headers, an inner length past the frame's end, a loop and
 *   an unreachable previous backend are dropped, each counted under its
 *   reason;
 * - it trusts only what its maps say (include/decap.h): a frame that is
 *   not unicast or not to one of the host's tunnel addresses passes
 *   untouched; a stranger's packet, an inner packet for anything but a
 *   VIP, a martian previous backend, one outside the fleet, and a way out
 *   by an interface not allowed are dropped, each under its reason;
 * - the receiving interface need not forward: only loopback must.
 *
 * And once on real frames: two backends, each a child process in a network
 * namespace of its own with the program attached to its interface, on one
 * bridge with the test; a GUE packet the test sends to one naming the
 * other reaches the other, whose stack answers it.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <net/if.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <linux/if_link.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "xlb.h"
#include "decap.h"
#include "decap.skel.h"
#include "pass.skel.h"
#include "decap_fixture.h"
#include "ip_len.h"
#include "testlib.h"

static struct {
	bool tried, ready;
	struct xlb_sandbox env;
	struct decap *skel;
	struct decap_maps maps;
	int prog_fd;
} t;

static bool setup(void)
{
	if (t.tried)
		return t.ready;
	t.tried = true;
	if (!test_have_root()) {
		test_skip_env("needs root (network namespace, BPF)");
		return false;
	}
	if (xlb_sandbox_setup(&t.env)) {
		test_skip_env("cannot build the test network namespace");
		return false;
	}
	if (!ASSERT_OK(decap_backend_setup(), "addresses and sockets"))
		return false;
	libbpf_set_print(NULL);
	t.skel = decap__open_and_load();
	if (!ASSERT_TRUE(t.skel != NULL, "load decap.bpf.o"))
		return false;
	t.maps = (struct decap_maps){
		.cfg = bpf_map__fd(t.skel->maps.xlb_decap_cfg),
		.addrs = bpf_map__fd(t.skel->maps.xlb_decap_addrs),
		.fleet = bpf_map__fd(t.skel->maps.xlb_decap_fleet),
		.lbs = bpf_map__fd(t.skel->maps.xlb_decap_lbs),
		.out = bpf_map__fd(t.skel->maps.xlb_decap_out),
	};
	if (!ASSERT_OK(decap_trust_backend(&t.maps, t.env.ifindex_other), "trust"))
		return false;
	t.prog_fd = bpf_program__fd(t.skel->progs.xdp_decap);
	t.ready = true;
	return true;
}

/* ------------------------------------------------------------------ */
/* Running                                                             */

/* The counter of reason, summed over CPUs. */
static __u64 counted(enum xlb_decap_stat reason)
{
	int ncpu = libbpf_num_possible_cpus(), i;
	struct xlb_counter c[ncpu > 0 ? ncpu : 1];
	__u32 key = reason;
	__u64 sum = 0;

	if (ncpu <= 0 || bpf_map__lookup_elem(t.skel->maps.xlb_decap_stats, &key,
					      sizeof(key), c, sizeof(c), 0))
		return ~0ULL;
	for (i = 0; i < ncpu; i++)
		sum += c[i].packets;
	return sum;
}

static __u64 counted_all(void)
{
	__u64 sum = 0;
	int r;

	for (r = 0; r < XLB_DECAP__MAX; r++)
		sum += counted(r);
	return sum;
}

struct run {
	__u32 retval;
	__u8 out[PKT_MAX];
	__u32 out_len;
};

/* Run the frame; check the verdict, and that exactly one packet was
 * counted, under reason (or none: reason -1). */
static bool run_frame(const __u8 *frame, size_t len, __u32 verdict, int reason,
		      struct run *r, const char *what)
{
	__u64 before = reason >= 0 ? counted(reason) : 0, all = counted_all();
	bool ok;

	r->out_len = sizeof(r->out);
	if (!ASSERT_GT(len, 0, "frame built") ||
	    !ASSERT_OK(xlb_sandbox_run(t.prog_fd, t.env.ifindex, frame, (__u32)len,
				       r->out, &r->out_len, &r->retval), what))
		return false;
	ok = ASSERT_EQ(r->retval, verdict, what);
	if (reason >= 0)
		ok &= ASSERT_EQ(counted(reason), before + 1, what);
	ok &= ASSERT_EQ(counted_all(), all + (reason >= 0), what);
	return ok;
}

/* The frame is passed up as the inner packet, counted under reason. */
static void expect_decap(const struct gue_frame *g, const struct inner *in,
			 enum xlb_decap_stat reason, const char *what)
{
	__u8 frame[PKT_MAX], want[PKT_MAX];
	size_t len = gue_frame(g, in, frame), want_len = inner_frame(in, want);
	struct run r;

	if (!run_frame(frame, len, XDP_PASS, reason, &r, what))
		return;
	if (ASSERT_EQ(r.out_len, want_len, what))
		ASSERT_MEM_EQ(r.out, want, want_len, what);
}

/* The frame is forwarded to g->prev: the frame a balancer would have sent
 * there, with hops 1, from this backend, fresh TTL, the next hop's MAC
 * addresses, and the outer UDP checksum zero (IPv4) or valid (IPv6). */
static void expect_forward(const struct gue_frame *g, const struct inner *in,
			   __u32 verdict, const __u8 *dmac, const __u8 *smac,
			   const char *what)
{
	struct gue_frame fwd = *g;
	__u8 frame[PKT_MAX], want[PKT_MAX];
	size_t len = gue_frame(g, in, frame), want_len;
	struct run r;

	fwd.src = g->dst;
	fwd.dst = g->prev;
	fwd.hops = 1;
	fwd.ttl = 64;
	fwd.dmac = dmac;
	fwd.smac = smac;
	fwd.udp_csum_zero = g->outer == 4 || g->udp_csum_zero;
	want_len = gue_frame(&fwd, in, want);
	if (!run_frame(frame, len, verdict, XLB_DECAP_FORWARD, &r, what))
		return;
	if (ASSERT_EQ(r.out_len, want_len, what))
		ASSERT_MEM_EQ(r.out, want, want_len, what);
}

static void expect_drop(const __u8 *frame, size_t len, enum xlb_decap_stat reason,
			const char *what)
{
	struct run r;

	run_frame(frame, len, XDP_DROP, reason, &r, what);
}

#define G4(prev_) { .outer = 4, .src = BALANCER4, .dst = BACKEND4, \
		    .prev_family = 4, .prev = (prev_) }
#define G6(prev_) { .outer = 6, .src = BALANCER6, .dst = BACKEND6, \
		    .prev_family = 6, .prev = (prev_) }
#define TCP(fam, port, flags) { .family = (fam), .proto = IPPROTO_TCP, \
				.sport = (port), .dport = PORT_TCP, .tcp_flags = (flags) }
#define UDP(fam, sport_, dport_) { .family = (fam), .proto = IPPROTO_UDP, \
				   .sport = (sport_), .dport = (dport_) }

/* From the balancer, naming the previous backend that XDP_TX reaches. */
static struct gue_frame gue_prev_tx(int family)
{
	struct gue_frame g4 = G4(PREV4_TX), g6 = G6(PREV6_TX);

	return family == 4 ? g4 : g6;
}

/* ------------------------------------------------------------------ */
/* Cases                                                               */

/* Either family in either family, with no xlb field or with one naming
 * no previous backend: the inner packet, whatever it is. */
static void decapsulates_every_family_pair(void)
{
	static const struct { int outer, inner; bool no_field; } pairs[] = {
		{ 4, 4, true }, { 6, 6, true }, { 4, 6, true }, { 6, 4, true },
		{ 4, 4, false }, { 6, 6, false }, { 4, 6, false }, { 6, 4, false },
	};
	size_t i;

	if (!setup())
		return;
	for (i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
		struct gue_frame g = {
			.outer = pairs[i].outer,
			.src = pairs[i].outer == 4 ? BALANCER4 : BALANCER6,
			.dst = pairs[i].outer == 4 ? BACKEND4 : BACKEND6,
			.no_field = pairs[i].no_field,
		};
		struct inner in = TCP(pairs[i].inner, PORT_UNKNOWN, 0);
		char what[64];

		snprintf(what, sizeof(what), "IPv%d in IPv%d%s", pairs[i].inner,
			 pairs[i].outer, pairs[i].no_field ? ", no field" : "");
		expect_decap(&g, &in, XLB_DECAP_PASS_GUE, what);
	}
}

/* What this host takes stays, though a previous backend is named. */
static void syn_and_known_connections_stay(void)
{
	static const int fams[] = { 4, 6 };
	size_t i;

	if (!setup())
		return;
	for (i = 0; i < 2; i++) {
		int f = fams[i];
		struct gue_frame gf = gue_prev_tx(f), *g = &gf;
		struct inner syn = TCP(f, PORT_UNKNOWN, PKT_TCP_SYN);
		struct inner ack = TCP(f, PORT_ESTAB, PKT_TCP_ACK);
		struct inner fin = TCP(f, PORT_ESTAB, PKT_TCP_ACK | 0x01);
		struct inner tw = TCP(f, PORT_TW, PKT_TCP_ACK);
		struct inner icmp = { .family = f, .proto = f == 4 ? IPPROTO_ICMP
								    : IPPROTO_ICMPV6 };

		expect_decap(g, &syn, XLB_DECAP_PASS_GUE, f == 4 ? "SYN, IPv4" : "SYN, IPv6");
		expect_decap(g, &ack, XLB_DECAP_PASS_GUE,
			     f == 4 ? "established, IPv4" : "established, IPv6");
		expect_decap(g, &fin, XLB_DECAP_PASS_GUE,
			     f == 4 ? "FIN, established, IPv4" : "FIN, established, IPv6");
		expect_decap(g, &tw, XLB_DECAP_PASS_GUE,
			     f == 4 ? "time-wait, IPv4" : "time-wait, IPv6");
		expect_decap(g, &icmp, XLB_DECAP_PASS_GUE,
			     f == 4 ? "ICMP, nothing to look up" : "ICMPv6, nothing to look up");
	}
}

/* A segment of a connection this host does not have goes to the previous
 * backend: out of the interface it came in by, or of another one. A
 * listener on the port does not make it this host's. */
static void unknown_segments_go_to_the_previous_backend(void)
{
	struct gue_frame g4 = G4(PREV4_TX), g6 = G6(PREV6_TX);
	struct gue_frame r4 = G4(PREV4_REDIR), r6 = G6(PREV6_REDIR);
	struct gue_frame z6 = G6(PREV6_TX);
	struct inner ack4 = TCP(4, PORT_UNKNOWN, PKT_TCP_ACK);
	struct inner ack6 = TCP(6, PORT_UNKNOWN, PKT_TCP_ACK);
	struct inner rst4 = TCP(4, PORT_UNKNOWN, 0x04);
	struct inner synack6 = TCP(6, PORT_UNKNOWN, PKT_TCP_SYN | PKT_TCP_ACK);

	if (!setup())
		return;
	z6.udp_csum_zero = true;
	expect_forward(&g4, &ack4, XDP_TX, mac_gw, mac_in, "IPv4, XDP_TX");
	expect_forward(&g6, &ack6, XDP_TX, mac_gw, mac_in, "IPv6, XDP_TX");
	expect_forward(&g4, &rst4, XDP_TX, mac_gw, mac_in, "IPv4 RST");
	expect_forward(&g6, &synack6, XDP_TX, mac_gw, mac_in, "IPv6 SYN-ACK");
	expect_forward(&z6, &ack6, XDP_TX, mac_gw, mac_in, "IPv6, zero UDP checksum");
	expect_forward(&r4, &ack4, XDP_REDIRECT, mac_other_gw, mac_other,
		       "IPv4, XDP_REDIRECT");
	expect_forward(&r6, &ack6, XDP_REDIRECT, mac_other_gw, mac_other,
		       "IPv6, XDP_REDIRECT");
	/* IPv6 inside IPv4 and the reverse: the outer family decides. */
	expect_forward(&g4, &ack6, XDP_TX, mac_gw, mac_in, "IPv6 in IPv4");
	expect_forward(&g6, &ack4, XDP_TX, mac_gw, mac_in, "IPv4 in IPv6");
}

/* What the previous backend receives is passed up there, known or not:
 * a packet is forwarded once at most. */
static void a_forwarded_packet_is_never_forwarded_again(void)
{
	struct gue_frame g = G4(PREV4_TX), g6 = G6(PREV6_TX);
	struct inner ack = TCP(4, PORT_UNKNOWN, PKT_TCP_ACK);
	struct inner ack6 = TCP(6, PORT_UNKNOWN, PKT_TCP_ACK);
	__u8 frame[PKT_MAX], want[PKT_MAX];
	struct run fwd, again;
	size_t want_len;

	if (!setup())
		return;
	/* From a backend of the fleet, as forwarded packets come. */
	g.hops = 1;
	g.src = PREV4_TX;
	g6.hops = 1;
	g6.src = PREV6_TX;
	expect_decap(&g, &ack, XLB_DECAP_PASS_FORWARDED, "hops 1, IPv4");
	expect_decap(&g6, &ack6, XLB_DECAP_PASS_FORWARDED, "hops 1, IPv6");
	/* The program's own output, fed back to it playing the previous
	 * backend: PREV4_TX its tunnel address, this backend in its fleet. */
	g.hops = 0;
	g.src = BALANCER4;
	if (!run_frame(frame, gue_frame(&g, &ack, frame), XDP_TX, XLB_DECAP_FORWARD,
		       &fwd, "first pass") ||
	    !ASSERT_OK(decap_trust_addr(t.maps.addrs, PREV4_TX, XLB_DECAP_ADDR_TUNNEL),
		       "play the previous backend") ||
	    !ASSERT_OK(decap_trust_prefix(t.maps.fleet, BACKEND4 "/32"), "this one's fleet"))
		return;
	want_len = inner_frame(&ack, want);
	memcpy(want, mac_gw, 6);	/* the forward's MAC addresses stay */
	memcpy(want + 6, mac_in, 6);
	if (run_frame(fwd.out, fwd.out_len, XDP_PASS, XLB_DECAP_PASS_FORWARDED, &again,
		      "second pass") && ASSERT_EQ(again.out_len, want_len, "second pass"))
		ASSERT_MEM_EQ(again.out, want, want_len, "second pass");
	ASSERT_OK(decap_untrust_addr(t.maps.addrs, PREV4_TX), "this backend again");
	ASSERT_OK(decap_untrust_prefix(t.maps.fleet, BACKEND4 "/32"), "its fleet again");
}

/* A previous backend that is this host (the packet's outer destination),
 * or of the other family: passed up. */
static void previous_backend_here_or_of_another_family_stays(void)
{
	struct gue_frame self4 = G4(BACKEND4), self6 = G6(BACKEND6);
	struct gue_frame fam4 = G4(NULL), fam6 = G6(NULL);
	struct inner ack4 = TCP(4, PORT_UNKNOWN, PKT_TCP_ACK);
	struct inner ack6 = TCP(6, PORT_UNKNOWN, PKT_TCP_ACK);

	if (!setup())
		return;
	fam4.prev_family = 6;
	fam4.prev = PREV6_TX;
	fam6.prev_family = 4;
	fam6.prev = PREV4_TX;
	expect_decap(&self4, &ack4, XLB_DECAP_PASS_PREV_SELF, "prev is the outer destination, IPv4");
	expect_decap(&self6, &ack6, XLB_DECAP_PASS_PREV_SELF, "prev is the outer destination, IPv6");
	expect_decap(&fam4, &ack4, XLB_DECAP_PASS_PREV_FAMILY, "IPv6 prev, IPv4 outer");
	expect_decap(&fam6, &ack6, XLB_DECAP_PASS_PREV_FAMILY, "IPv4 prev, IPv6 outer");
}

/* Set a sysctl of the test's namespace; 0 or -errno. */
static int sysctl_set(const char *path, const char *value)
{
	int fd = open(path, O_WRONLY), err = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, value, strlen(value)) != (ssize_t)strlen(value))
		err = -EIO;
	close(fd);
	return err;
}

/* A previous backend that cannot be reached: dropped, counted. */
static void unreachable_previous_backend_is_dropped(void)
{
	static const struct { int fam; const char *prev; enum xlb_decap_stat reason; } cases[] = {
		{ 4, PREV4_NO_NEIGH, XLB_DECAP_DROP_NO_NEIGH },
		{ 6, PREV6_NO_NEIGH, XLB_DECAP_DROP_NO_NEIGH },
		{ 4, PREV4_UNREACH, XLB_DECAP_DROP_NO_ROUTE },
		{ 6, PREV6_UNREACH, XLB_DECAP_DROP_NO_ROUTE },
		{ 4, PREV4_SMALL_MTU, XLB_DECAP_DROP_TOO_BIG },
		{ 6, PREV6_SMALL_MTU, XLB_DECAP_DROP_TOO_BIG },
	};
	__u8 frame[PKT_MAX];
	size_t i;

	if (!setup() ||
	    !ASSERT_OK(xlb_sandbox_ip("route add " PREV4_SMALL_MTU " via " XLB_SANDBOX_GW4
				      " mtu lock 200\n"
				      "route add " PREV6_SMALL_MTU " via " XLB_SANDBOX_GW6
				      " mtu lock 1280\n"), "routes of a small MTU"))
		return;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct gue_frame g4 = G4(cases[i].prev), g6 = G6(cases[i].prev);
		struct inner ack = TCP(cases[i].fam, PORT_UNKNOWN, PKT_TCP_ACK);

		if (cases[i].reason == XLB_DECAP_DROP_TOO_BIG)
			ack.payload_len = 1280;
		expect_drop(frame, gue_frame(cases[i].fam == 4 ? &g4 : &g6, &ack, frame),
			    cases[i].reason, cases[i].prev);
	}
}

/* bpf_fib_lookup answers only where the interface it is asked for
 * forwards: the program asks for loopback, so that is where forwarding
 * must be on; without, the packet is dropped under a reason that says
 * so. */
static void forwarding_off_is_dropped_and_named(void)
{
	static const char *const sysctls[] = {
		"/proc/sys/net/ipv4/conf/lo/forwarding",
		"/proc/sys/net/ipv6/conf/lo/forwarding",
	};
	struct gue_frame g4 = G4(PREV4_TX), g6 = G6(PREV6_TX);
	struct inner ack4 = TCP(4, PORT_UNKNOWN, PKT_TCP_ACK);
	struct inner ack6 = TCP(6, PORT_UNKNOWN, PKT_TCP_ACK);
	__u8 frame[PKT_MAX];
	int i;

	if (!setup())
		return;
	for (i = 0; i < 2; i++) {
		if (!ASSERT_OK(sysctl_set(sysctls[i], "0"), "forwarding off"))
			return;
		expect_drop(frame, i ? gue_frame(&g6, &ack6, frame) : gue_frame(&g4, &ack4, frame),
			    XLB_DECAP_DROP_FWD_DISABLED, i ? "IPv6" : "IPv4");
		ASSERT_OK(sysctl_set(sysctls[i], "1"), "forwarding on again");
	}
}

/* The receiving interface stays a host's, forwarding off, so the kernel
 * routes nothing arriving there: the second chance works all the same. */
static void the_receiving_interface_need_not_forward(void)
{
	static const char *const sysctls[] = {
		"/proc/sys/net/ipv4/conf/" XLB_SANDBOX_IF_IN "/forwarding",
		"/proc/sys/net/ipv6/conf/" XLB_SANDBOX_IF_IN "/forwarding",
	};
	struct gue_frame g4 = G4(PREV4_TX), g6 = G6(PREV6_TX);
	struct inner ack4 = TCP(4, PORT_UNKNOWN, PKT_TCP_ACK);
	struct inner ack6 = TCP(6, PORT_UNKNOWN, PKT_TCP_ACK);
	int i;

	if (!setup())
		return;
	for (i = 0; i < 2; i++)
		if (!ASSERT_OK(sysctl_set(sysctls[i], "0"), "forwarding off on in"))
			goto out;
	expect_forward(&g4, &ack4, XDP_TX, mac_gw, mac_in, "IPv4, in not forwarding");
	expect_forward(&g6, &ack6, XDP_TX, mac_gw, mac_in, "IPv6, in not forwarding");
out:
	for (i = 0; i < 2; i++)
		ASSERT_OK(sysctl_set(sysctls[i], "1"), "forwarding on again");
}

/* UDP: a datagram some socket takes stays; a connected socket takes only
 * its peer's. One no socket takes goes to the previous backend. */
static void udp_stays_where_a_socket_takes_it(void)
{
	static const int fams[] = { 4, 6 };
	size_t i;

	if (!setup())
		return;
	for (i = 0; i < 2; i++) {
		int f = fams[i];
		struct gue_frame gf = gue_prev_tx(f), *g = &gf;
		struct inner peer = UDP(f, PEER_PORT, PORT_UDP_CONN);
		struct inner stranger = UDP(f, PEER_PORT + 1, PORT_UDP_CONN);
		struct inner service = UDP(f, PEER_PORT + 1, PORT_UDP_SERV);
		struct inner nobody = UDP(f, PEER_PORT, PORT_UDP_SERV + 1);

		expect_decap(g, &peer, XLB_DECAP_PASS_GUE,
			     f == 4 ? "connected socket's peer, IPv4" : "connected socket's peer, IPv6");
		expect_decap(g, &service, XLB_DECAP_PASS_GUE,
			     f == 4 ? "unconnected service, IPv4" : "unconnected service, IPv6");
		expect_forward(g, &stranger, XDP_TX, mac_gw, mac_in,
			       f == 4 ? "not the connected peer, IPv4" : "not the connected peer, IPv6");
		expect_forward(g, &nobody, XDP_TX, mac_gw, mac_in,
			       f == 4 ? "no socket, IPv4" : "no socket, IPv6");
	}
}

/* Every malformed header is dropped under its reason: the byte at off
 * (from the UDP header) set to val, or the frame cut to len. */
static void malformed_gue_is_dropped_by_reason(void)
{
	static const struct {
		const char *what;
		int off;		/* from the UDP header; -1: cut */
		__u8 val;
		enum xlb_decap_stat reason;
	} cases[] = {
		{ "version 1",		8, 0x40 | XLB_GUE_HLEN,	XLB_DECAP_DROP_BAD_HEADER },
		{ "control bit",	8, 0x20 | XLB_GUE_HLEN,	XLB_DECAP_DROP_BAD_HEADER },
		{ "hlen 3",		8, 3,			XLB_DECAP_DROP_BAD_HEADER },
		{ "flags",		10, 0x80,		XLB_DECAP_DROP_BAD_HEADER },
		{ "inner protocol UDP",	9, IPPROTO_UDP,		XLB_DECAP_DROP_BAD_PROTO },
		{ "IPv6 said, IPv4 inside", 9, IPPROTO_IPV6,	XLB_DECAP_DROP_BAD_PROTO },
		{ "magic",		12, 'Y',		XLB_DECAP_DROP_BAD_FIELD },
		{ "family 5",		14, 5,			XLB_DECAP_DROP_BAD_FIELD },
		{ "hops 2",		13, 2,			XLB_DECAP_DROP_LOOP },
		{ "hlen past the packet", -1, 8 + 4 + 12,	XLB_DECAP_DROP_TRUNCATED },
		{ "inner header cut",	-1, 8 + 4 + 20 + 10,	XLB_DECAP_DROP_TRUNCATED },
		{ "GUE header cut",	-1, 8 + 2,		XLB_DECAP_DROP_TRUNCATED },
	};
	static const int outers[] = { 4, 6 };
	struct inner ack = TCP(4, PORT_UNKNOWN, PKT_TCP_ACK);
	__u8 frame[PKT_MAX];
	size_t i, o, len, udp;

	if (!setup())
		return;
	for (o = 0; o < 2; o++) {
		struct gue_frame g4 = G4(PREV4_TX), g6 = G6(PREV6_TX);

		udp = PKT_ETH_LEN + (outers[o] == 4 ? 20 : 40);
		for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
			len = gue_frame(outers[o] == 4 ? &g4 : &g6, &ack, frame);
			if (cases[i].off < 0)
				len = udp + cases[i].val;
			else
				frame[udp + cases[i].off] = cases[i].val;
			expect_drop(frame, len, cases[i].reason, cases[i].what);
		}
	}
}

/* Not for the GUE port, or not a whole outer packet: left as it is. */
static void other_udp_and_fragments_pass_unchanged(void)
{
	struct gue_frame g = G4(PREV4_TX);
	struct inner ack = TCP(4, PORT_UNKNOWN, PKT_TCP_ACK);
	__u8 frame[PKT_MAX];
	struct run r;
	size_t len;

	if (!setup())
		return;
	g.port = XLB_GUE_DEFAULT_PORT + 1;
	len = gue_frame(&g, &ack, frame);
	if (run_frame(frame, len, XDP_PASS, -1, &r, "another port"))
		ASSERT_MEM_EQ(r.out, frame, len, "another port");
	g.port = 0;
	len = gue_frame(&g, &ack, frame);
	pkt_put16(frame + PKT_ETH_LEN + 6, 0x2000);	/* MF */
	if (run_frame(frame, len, XDP_PASS, -1, &r, "outer fragment"))
		ASSERT_MEM_EQ(r.out, frame, len, "outer fragment");
}

/* The GUE port is xlb_decap_cfg's, the default while it is zero. */
static void the_gue_port_is_a_setting(void)
{
	struct xlb_decap_config cfg = { .gue_port = htons(7777),
					.flags = XLB_DECAP_F_CHECK_SOURCE };
	struct gue_frame g = G4(PREV4_TX);
	struct inner ack = TCP(4, PORT_ESTAB, PKT_TCP_ACK);
	__u8 frame[PKT_MAX];
	__u32 zero = 0;
	struct run r;
	size_t len;

	if (!setup())
		return;
	if (!ASSERT_OK(bpf_map__update_elem(t.skel->maps.xlb_decap_cfg, &zero,
					    sizeof(zero), &cfg, sizeof(cfg), 0),
		       "set the port"))
		return;
	len = gue_frame(&g, &ack, frame);
	if (run_frame(frame, len, XDP_PASS, -1, &r, "the default port, no more"))
		ASSERT_MEM_EQ(r.out, frame, len, "the default port, no more");
	g.port = 7777;
	expect_decap(&g, &ack, XLB_DECAP_PASS_GUE, "the port set");
	cfg.gue_port = 0;
	ASSERT_OK(bpf_map__update_elem(t.skel->maps.xlb_decap_cfg, &zero, sizeof(zero),
				       &cfg, sizeof(cfg), 0), "back to the default");
	g.port = 0;
	expect_decap(&g, &ack, XLB_DECAP_PASS_GUE, "the default port again");
}

/* Where the SYN-cookie case's client is: not a local address, so the
 * listener's answer leaves by the default route. */
#define COOKIE_CLIENT4	"203.0.113.6"
#define COOKIE_CLIENT6	"2001:db8:c::6"
#define COOKIE_PORT	43000

/* The IP packet of a TCP segment from the cookie client's port to the
 * VIP, with sequence number seq, acknowledging ack; returns its length. */
static size_t cookie_segment(int family, __u16 port, __u8 flags, __u32 seq, __u32 ack,
			     __u8 *ip)
{
	struct pkt_desc d = { .family = family,
			      .src = family == 4 ? COOKIE_CLIENT4 : COOKIE_CLIENT6,
			      .dst = family == 4 ? VIP4 : VIP6,
			      .proto = IPPROTO_TCP, .sport = port,
			      .dport = PORT_TCP, .tcp_flags = flags };
	size_t len = pkt_build_ip(&d, ip), hlen = family == 4 ? 20 : 40;
	__u8 *th = ip + hlen;
	size_t alen = family == 4 ? 4 : 16, src = family == 4 ? 12 : 8;

	pkt_put32(th + 4, seq);
	pkt_put32(th + 8, ack);
	pkt_put16(th + 16, 0);
	pkt_put16(th + 16, pkt_fold(pkt_sum(th, len - hlen,
					    pkt_pseudo_sum(family, ip + src, ip + src + alen,
							   IPPROTO_TCP, len - hlen))));
	return len;
}

/*
 * Send a SYN (sequence number 1) from the cookie client's port to VIP:80
 * through a raw socket, and read the listener's SYN-ACK leaving by the
 * default route: with tcp_syncookies 2 its sequence number is a SYN
 * cookie; otherwise the listener keeps a request socket, which the client,
 * not a local address, never answers. 0 and *seq, or -errno.
 */
static int syn_ack_seq(int family, __u16 port, __u32 *seq)
{
	struct sockaddr_ll ll = { .sll_family = AF_PACKET,
				  .sll_protocol = htons(ETH_P_ALL),
				  .sll_ifindex = t.env.ifindex };
	size_t hlen = family == 4 ? 20 : 40, alen = family == 4 ? 4 : 16;
	size_t dst = family == 4 ? 16 : 24;
	struct timeval tv = { .tv_sec = 2 };
	__u8 ip[PKT_MAX], buf[PKT_MAX], *th = buf + hlen;
	size_t len = cookie_segment(family, port, PKT_TCP_SYN, 1, 0, ip);
	int raw, cap, err = -ETIMEDOUT;
	struct sockaddr_storage to;
	ssize_t n;

	sockaddr_of(family, family == 4 ? VIP4 : VIP6, 0, &to);
	/* Only ETH_P_ALL taps see the frames a host sends. */
	cap = socket(AF_PACKET, SOCK_DGRAM, htons(ETH_P_ALL));
	/* IPPROTO_RAW: the header is the caller's, in both families. */
	raw = socket(family == 4 ? AF_INET : AF_INET6, SOCK_RAW, IPPROTO_RAW);
	if (cap < 0 || raw < 0 || bind(cap, (void *)&ll, sizeof(ll)) ||
	    setsockopt(cap, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) ||
	    sendto(raw, ip, len, 0, (void *)&to, sizeof(to)) != (ssize_t)len) {
		err = -errno;
		goto out;
	}
	/* The SYN-ACK: to the client's address and port, IPv4 without
	 * options (the kernel sends none). */
	while ((n = recv(cap, buf, sizeof(buf), 0)) >= 0) {
		if ((size_t)n >= hlen + 20 && buf[0] >> 4 == family &&
		    buf[family == 4 ? 9 : 6] == IPPROTO_TCP &&
		    !memcmp(buf + dst, ip + dst - alen, alen) &&
		    pkt_get16(th + 2) == port &&
		    th[13] == (PKT_TCP_SYN | PKT_TCP_ACK)) {
			*seq = (__u32)pkt_get16(th + 4) << 16 | pkt_get16(th + 6);
			err = 0;
			break;
		}
	}
out:
	if (cap >= 0)
		close(cap);
	if (raw >= 0)
		close(raw);
	return err;
}

/* The handshake's last ACK from the cookie client's port, acknowledging
 * ack, in GUE naming a previous backend: passed up here, decapsulated. */
static void expect_last_ack_stays(int family, __u16 port, __u32 ack, const char *what)
{
	struct gue_frame g = gue_prev_tx(family);
	__u8 ip[PKT_MAX], frame[PKT_MAX], want[PKT_MAX];
	size_t ilen = cookie_segment(family, port, PKT_TCP_ACK, 2, ack, ip);
	size_t len = gue_build(&g, ip, ilen, family, frame);
	struct run r;

	memcpy(want, mac_in, 6);
	memcpy(want + 6, mac_gw, 6);
	pkt_put16(want + 12, family == 4 ? PKT_ETH_P_IP : PKT_ETH_P_IPV6);
	memcpy(want + PKT_ETH_LEN, ip, ilen);
	if (run_frame(frame, len, XDP_PASS, XLB_DECAP_PASS_GUE, &r, what) &&
	    ASSERT_EQ(r.out_len, PKT_ETH_LEN + ilen, what))
		ASSERT_MEM_EQ(r.out, want, PKT_ETH_LEN + ilen, what);
}

/* Under a SYN flood the listener answers with SYN cookies and keeps no
 * socket: the handshake's last ACK is known by its cookie and stays; a
 * wrong cookie is not this host's. */
static void syn_cookie_handshakes_stay(void)
{
	static const char cookies[] = "/proc/sys/net/ipv4/tcp_syncookies";
	__u8 ip[PKT_MAX], frame[PKT_MAX];
	size_t ilen, len;
	__u32 cookie;
	struct run r;
	int f;

	if (!setup() || !ASSERT_OK(sysctl_set(cookies, "2"), "tcp_syncookies 2"))
		return;
	for (f = 4; f <= 6; f += 2) {
		struct gue_frame g = gue_prev_tx(f);

		cookie = 0;
		if (!ASSERT_OK(syn_ack_seq(f, COOKIE_PORT, &cookie),
			       f == 4 ? "IPv4 SYN-ACK with a cookie" : "IPv6 SYN-ACK with a cookie"))
			continue;
		expect_last_ack_stays(f, COOKIE_PORT, cookie + 1, "valid cookie");
		/* Its hash bits spoiled (a cookie only a few off may name
		 * another of the MSS values and still be valid). */
		ilen = cookie_segment(f, COOKIE_PORT, PKT_TCP_ACK, 2, (cookie ^ 0x00ff0000) + 1, ip);
		len = gue_build(&g, ip, ilen, f, frame);
		run_frame(frame, len, XDP_TX, XLB_DECAP_FORWARD, &r, "wrong cookie");
	}
	ASSERT_OK(sysctl_set(cookies, "1"), "tcp_syncookies 1");
}

/* The client port of the handshake left half done. */
#define REQUEST_PORT	43001

/* A handshake in progress: the listener answered a SYN and keeps a request
 * socket (no SYN flood, no cookies), which the handshake's last ACK finds.
 * That connection is this host's: passed up, not sent to the previous
 * backend, as the connection it becomes would stay once established. */
static void a_handshake_in_progress_stays(void)
{
	__u32 seq;
	int f;

	if (!setup())
		return;
	for (f = 4; f <= 6; f += 2) {
		seq = 0;
		if (!ASSERT_OK(syn_ack_seq(f, REQUEST_PORT, &seq),
			       f == 4 ? "IPv4 SYN-ACK, a request socket kept"
				      : "IPv6 SYN-ACK, a request socket kept"))
			continue;
		expect_last_ack_stays(f, REQUEST_PORT, seq + 1,
				      f == 4 ? "the handshake's last ACK, IPv4"
					     : "the handshake's last ACK, IPv6");
	}
}

/* ------------------------------------------------------------------ */
/* What a stranger may send                                            */

/* The frame passes exactly as it came, counted under reason. */
static void expect_untouched(const __u8 *frame, size_t len, enum xlb_decap_stat reason,
			     const char *what)
{
	struct run r;

	if (run_frame(frame, len, XDP_PASS, reason, &r, what) &&
	    ASSERT_EQ(r.out_len, len, what))
		ASSERT_MEM_EQ(r.out, frame, len, what);
}

/* Only a unicast frame to one of the host's tunnel addresses is the
 * host's: another host's address (a transit packet, or a spoofed outer
 * destination that would become the forwarded packet's source), the VIP,
 * the subnet's or the limited broadcast, an Ethernet broadcast or
 * multicast frame pass as they came, decapsulated by nothing. */
static void not_this_hosts_tunnel_passes_untouched(void)
{
	static const __u8 bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	static const __u8 mcast[6] = { 0x01, 0x00, 0x5e, 0x00, 0x00, 0x01 };
	static const __u8 mcast6[6] = { 0x33, 0x33, 0x00, 0x00, 0x00, 0x01 };
	static const struct { int outer; const char *dst; const __u8 *dmac;
			      enum xlb_decap_stat reason; const char *what; } cases[] = {
		{ 4, "203.0.113.77", NULL, XLB_DECAP_PASS_NOT_LOCAL, "another host, IPv4" },
		{ 6, "2001:db8:b0::77", NULL, XLB_DECAP_PASS_NOT_LOCAL, "another host, IPv6" },
		{ 4, VIP4, NULL, XLB_DECAP_PASS_NOT_LOCAL, "the VIP as outer destination" },
		{ 6, VIP6, NULL, XLB_DECAP_PASS_NOT_LOCAL, "the IPv6 VIP as outer destination" },
		{ 4, OTHER_LOCAL4, NULL, XLB_DECAP_PASS_NOT_LOCAL, "a local address, not a tunnel's" },
		{ 4, "198.51.100.127", NULL, XLB_DECAP_PASS_NOT_LOCAL, "the subnet's broadcast" },
		{ 4, "255.255.255.255", NULL, XLB_DECAP_PASS_NOT_LOCAL, "the limited broadcast" },
		{ 4, "255.255.255.255", bcast, XLB_DECAP_PASS_NOT_UNICAST, "an Ethernet broadcast" },
		{ 4, BACKEND4, bcast, XLB_DECAP_PASS_NOT_UNICAST, "broadcast frame to this host" },
		{ 4, BACKEND4, mcast, XLB_DECAP_PASS_NOT_UNICAST, "multicast frame" },
		{ 6, BACKEND6, mcast6, XLB_DECAP_PASS_NOT_UNICAST, "IPv6 multicast frame" },
	};
	struct inner ack = TCP(4, PORT_UNKNOWN, PKT_TCP_ACK);
	__u8 frame[PKT_MAX], inner[PKT_MAX];
	size_t i, ilen;

	if (!setup())
		return;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct gue_frame g = cases[i].outer == 4 ? (struct gue_frame)G4(PREV4_TX)
							 : (struct gue_frame)G6(PREV6_TX);
		char what[96];

		g.dst = cases[i].dst;
		g.dmac = cases[i].dmac;
		snprintf(what, sizeof(what), "GUE: %s", cases[i].what);
		expect_untouched(frame, gue_frame(&g, &ack, frame), cases[i].reason, what);
		/* The same as IPIP (or IPv4 in IPv6): what a router on the
		 * way would route on. */
		ilen = inner_ip(&ack, inner);
		snprintf(what, sizeof(what), "IPIP: %s", cases[i].what);
		expect_untouched(frame, pkt_encap(frame, g.dmac ? g.dmac : mac_in, mac_gw,
						  cases[i].outer, g.src, g.dst, 0, inner, ilen, 4),
				 cases[i].reason, what);
	}
}

/* With the balancers known, a tunnelled packet from anyone else is
 * dropped; one forwarded already comes from the fleet, not a balancer. */
static void a_strangers_tunnelled_packet_is_dropped(void)
{
	struct gue_frame g4 = G4(PREV4_TX), g6 = G6(PREV6_TX);
	struct inner ack4 = TCP(4, PORT_UNKNOWN, PKT_TCP_ACK);
	struct inner ack6 = TCP(6, PORT_UNKNOWN, PKT_TCP_ACK);
	__u8 frame[PKT_MAX], inner[PKT_MAX];
	size_t ilen;

	if (!setup())
		return;
	g4.src = "198.51.100.99";
	g6.src = "2001:db8:100::99";
	expect_drop(frame, gue_frame(&g4, &ack4, frame), XLB_DECAP_DROP_SOURCE, "GUE, IPv4");
	expect_drop(frame, gue_frame(&g6, &ack6, frame), XLB_DECAP_DROP_SOURCE, "GUE, IPv6");
	ilen = inner_ip(&ack4, inner);
	expect_drop(frame, pkt_encap(frame, mac_in, mac_gw, 4, g4.src, BACKEND4, 0, inner,
				     ilen, 4), XLB_DECAP_DROP_SOURCE, "IPIP");
	ilen = inner_ip(&ack6, inner);
	expect_drop(frame, pkt_encap(frame, mac_in, mac_gw, 4, g4.src, BACKEND4, 0, inner,
				     ilen, 6), XLB_DECAP_DROP_SOURCE, "IPv6 in IPv4");
	/* hops 1: from a backend of the fleet, not from a balancer or a
	 * stranger. */
	g4.hops = g6.hops = 1;
	expect_drop(frame, gue_frame(&g4, &ack4, frame), XLB_DECAP_DROP_SOURCE,
		    "forwarded, from a stranger");
	expect_drop(frame, gue_frame(&g6, &ack6, frame), XLB_DECAP_DROP_SOURCE,
		    "forwarded, from a stranger, IPv6");
	g4.src = BALANCER4;
	g6.src = BALANCER6;
	expect_drop(frame, gue_frame(&g4, &ack4, frame), XLB_DECAP_DROP_SOURCE,
		    "forwarded, from a balancer");
	expect_drop(frame, gue_frame(&g6, &ack6, frame), XLB_DECAP_DROP_SOURCE,
		    "forwarded, from a balancer, IPv6");
	g4.src = PREV4_TX;
	g6.src = PREV6_TX;
	expect_decap(&g4, &ack4, XLB_DECAP_PASS_FORWARDED, "forwarded, from the fleet");
	expect_decap(&g6, &ack6, XLB_DECAP_PASS_FORWARDED, "forwarded, from the fleet, IPv6");
}

/* An inner packet for anything but one of the host's VIPs is dropped,
 * never handed to the kernel to route: with no previous backend, after a
 * forward, before any forward, and in plain IPIP. */
static void an_inner_packet_not_for_a_vip_is_dropped(void)
{
	static const char *const elsewhere[] = { "198.51.100.99", "2001:db8:c::99" };
	__u8 frame[PKT_MAX], inner[PKT_MAX];
	int f;

	if (!setup())
		return;
	for (f = 0; f < 2; f++) {
		int fam = f ? 6 : 4;
		struct pkt_desc d = { .family = fam, .src = fam == 4 ? CLIENT4 : CLIENT6,
				      .dst = elsewhere[f], .proto = IPPROTO_UDP,
				      .sport = 53, .dport = 53, .payload_len = 32 };
		struct gue_frame none = { .outer = 4, .src = BALANCER4, .dst = BACKEND4,
					  .no_field = true };
		struct gue_frame named = G4(PREV4_TX), fwd = G6(PREV6_TX);
		size_t ilen = pkt_build_ip(&d, inner);

		fwd.hops = 1;
		fwd.src = PREV6_TX;
		expect_drop(frame, gue_build(&none, inner, ilen, fam, frame),
			    XLB_DECAP_DROP_INNER_NOT_LOCAL, "GUE, no previous backend");
		expect_drop(frame, gue_build(&named, inner, ilen, fam, frame),
			    XLB_DECAP_DROP_INNER_NOT_LOCAL, "GUE, a previous backend named");
		expect_drop(frame, gue_build(&fwd, inner, ilen, fam, frame),
			    XLB_DECAP_DROP_INNER_NOT_LOCAL, "GUE, hops 1");
		expect_drop(frame, pkt_encap(frame, mac_in, mac_gw, 4, BALANCER4, BACKEND4, 0,
					     inner, ilen, fam),
			    XLB_DECAP_DROP_INNER_NOT_LOCAL, fam == 4 ? "IPIP" : "IPv6 in IPv4");
		expect_drop(frame, pkt_encap(frame, mac_in, mac_gw, 6, BALANCER6, BACKEND6, 0,
					     inner, ilen, fam),
			    XLB_DECAP_DROP_INNER_NOT_LOCAL, fam == 4 ? "IPv4 in IPv6" : "IP6IP6");
	}
}

/* A previous backend no packet may go to, whatever the routes say, is
 * dropped: though the fleet's prefixes held it. One the routes make local
 * (a subnet's broadcast, an address of this host that is no tunnel's) is
 * dropped under a reason of its own. */
static void a_martian_previous_backend_is_dropped(void)
{
	static const struct { int fam; const char *prev; const char *fleet;
			      enum xlb_decap_stat reason; } cases[] = {
		{ 4, "0.0.0.0", "0.0.0.0/0", XLB_DECAP_DROP_PREV_MARTIAN },
		{ 4, "0.1.2.3", "0.0.0.0/0", XLB_DECAP_DROP_PREV_MARTIAN },
		{ 4, "255.255.255.255", "0.0.0.0/0", XLB_DECAP_DROP_PREV_MARTIAN },
		{ 4, "224.0.0.1", "0.0.0.0/0", XLB_DECAP_DROP_PREV_MARTIAN },
		{ 4, "239.255.0.1", "0.0.0.0/0", XLB_DECAP_DROP_PREV_MARTIAN },
		{ 4, "240.0.0.1", "0.0.0.0/0", XLB_DECAP_DROP_PREV_MARTIAN },
		{ 4, "127.0.0.1", "0.0.0.0/0", XLB_DECAP_DROP_PREV_MARTIAN },
		{ 4, "127.1.2.3", "0.0.0.0/0", XLB_DECAP_DROP_PREV_MARTIAN },
		/* link-local, reached through a gateway: not its own link */
		{ 4, "169.254.1.1", "169.254.0.0/16", XLB_DECAP_DROP_PREV_MARTIAN },
		{ 6, "::", "::/0", XLB_DECAP_DROP_PREV_MARTIAN },
		{ 6, "::1", "::/0", XLB_DECAP_DROP_PREV_MARTIAN },
		{ 6, "::ffff:198.51.100.99", "::/0", XLB_DECAP_DROP_PREV_MARTIAN },
		{ 6, "::198.51.100.99", "::/0", XLB_DECAP_DROP_PREV_MARTIAN },
		{ 6, "ff02::1", "::/0", XLB_DECAP_DROP_PREV_MARTIAN },
		{ 6, "ff0e::1", "::/0", XLB_DECAP_DROP_PREV_MARTIAN },
		{ 4, "198.51.100.127", "198.51.100.0/24", XLB_DECAP_DROP_PREV_LOCAL },
		{ 4, OTHER_LOCAL4, "198.51.100.0/24", XLB_DECAP_DROP_PREV_LOCAL },
		{ 6, "2001:db8:101::1", "2001:db8:101::/64", XLB_DECAP_DROP_PREV_LOCAL },
	};
	__u8 frame[PKT_MAX];
	size_t i;

	if (!setup())
		return;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct gue_frame g = cases[i].fam == 4 ? (struct gue_frame)G4(cases[i].prev)
						       : (struct gue_frame)G6(cases[i].prev);
		struct inner ack = TCP(cases[i].fam, PORT_UNKNOWN, PKT_TCP_ACK);

		if (!ASSERT_OK(decap_trust_prefix(t.maps.fleet, cases[i].fleet), cases[i].fleet))
			return;
		expect_drop(frame, gue_frame(&g, &ack, frame), cases[i].reason, cases[i].prev);
		ASSERT_OK(decap_untrust_prefix(t.maps.fleet, cases[i].fleet), cases[i].fleet);
	}
}

/* A previous backend outside the fleet's prefixes is dropped, and so is
 * one behind an interface the operator did not allow. */
static void outside_the_fleet_or_its_interfaces_is_dropped(void)
{
	struct gue_frame o4 = G4("198.18.0.5"), o6 = G6("2001:db8:ff::5");
	struct gue_frame r4 = G4(PREV4_REDIR), r6 = G6(PREV6_REDIR);
	struct inner ack4 = TCP(4, PORT_UNKNOWN, PKT_TCP_ACK);
	struct inner ack6 = TCP(6, PORT_UNKNOWN, PKT_TCP_ACK);
	__u8 frame[PKT_MAX];

	if (!setup())
		return;
	expect_drop(frame, gue_frame(&o4, &ack4, frame), XLB_DECAP_DROP_PREV_NOT_FLEET,
		    "outside the fleet, IPv4");
	expect_drop(frame, gue_frame(&o6, &ack6, frame), XLB_DECAP_DROP_PREV_NOT_FLEET,
		    "outside the fleet, IPv6");
	if (!ASSERT_OK(decap_allow_egress(t.maps.out, (__u32)t.env.ifindex_other, 0),
		       "other no longer allowed"))
		return;
	expect_drop(frame, gue_frame(&r4, &ack4, frame), XLB_DECAP_DROP_EGRESS,
		    "by another interface, IPv4");
	expect_drop(frame, gue_frame(&r6, &ack6, frame), XLB_DECAP_DROP_EGRESS,
		    "by another interface, IPv6");
	ASSERT_OK(decap_allow_egress(t.maps.out, (__u32)t.env.ifindex_other, 1),
		  "other allowed again");
}

/* An outer IPv4 header with options is never forwarded: what leaves from
 * this host's address carries nothing the sender wrote there (a source
 * route, say). Passed up, it would be the same packet as without. */
static void outer_options_are_not_forwarded(void)
{
	struct gue_frame g = G4(PREV4_TX);
	struct inner ack = TCP(4, PORT_UNKNOWN, PKT_TCP_ACK);
	__u8 frame[PKT_MAX], *ip = frame + PKT_ETH_LEN;
	size_t len;

	if (!setup())
		return;
	len = gue_frame(&g, &ack, frame);
	if (!ASSERT_GT(len, 0, "frame"))
		return;
	memmove(ip + 24, ip + 20, len - PKT_ETH_LEN - 20);
	memcpy(ip + 20, "\x83\x03\x04\x00", 4);	/* LSRR, empty */
	ip[0] = 0x46;
	pkt_put16(ip + 2, pkt_get16(ip + 2) + 4);
	pkt_put16(ip + 10, 0);
	pkt_put16(ip + 10, pkt_fold(pkt_sum(ip, 24, 0)));
	expect_drop(frame, len + 4, XLB_DECAP_DROP_BAD_HEADER, "a source route");
}

/* Nothing trusted, nothing done: the program as its load leaves it
 * decapsulates nothing and forwards nothing. */
static void with_empty_maps_nothing_is_decapsulated(void)
{
	struct gue_frame g = G4(PREV4_TX);
	struct inner ack = TCP(4, PORT_UNKNOWN, PKT_TCP_ACK);
	__u8 frame[PKT_MAX], inner[PKT_MAX];
	struct decap *bare;
	size_t len, ilen;
	struct run r;

	if (!setup())
		return;
	bare = decap__open_and_load();
	if (!ASSERT_TRUE(bare != NULL, "a second copy of the program"))
		return;
	len = gue_frame(&g, &ack, frame);
	r.out_len = sizeof(r.out);
	if (ASSERT_OK(xlb_sandbox_run(bpf_program__fd(bare->progs.xdp_decap), t.env.ifindex,
				      frame, (__u32)len, r.out, &r.out_len, &r.retval), "GUE") &&
	    ASSERT_EQ(r.retval, XDP_PASS, "GUE") && ASSERT_EQ(r.out_len, len, "GUE"))
		ASSERT_MEM_EQ(r.out, frame, len, "GUE untouched");
	ilen = inner_ip(&ack, inner);
	len = pkt_encap(frame, mac_in, mac_gw, 4, BALANCER4, BACKEND4, 0, inner, ilen, 4);
	r.out_len = sizeof(r.out);
	if (ASSERT_OK(xlb_sandbox_run(bpf_program__fd(bare->progs.xdp_decap), t.env.ifindex,
				      frame, (__u32)len, r.out, &r.out_len, &r.retval), "IPIP") &&
	    ASSERT_EQ(r.retval, XDP_PASS, "IPIP") && ASSERT_EQ(r.out_len, len, "IPIP"))
		ASSERT_MEM_EQ(r.out, frame, len, "IPIP untouched");
	decap__destroy(bare);
}

/* GUE of the outer family around inner packet ip (ilen bytes, of family
 * inner) to this backend: naming the previous backend XDP_TX reaches, or
 * (named false) with no xlb field. */
static size_t gue_around(int outer, bool named, const __u8 *ip, size_t ilen, int inner,
			 __u8 *frame)
{
	struct gue_frame g = gue_prev_tx(outer);

	g.no_field = !named;
	return gue_build(&g, ip, ilen, inner, frame);
}

/*
 * An inner packet whose length says more than the frame holds is dropped,
 * under a counter of its own, in every pairing of families, whether it
 * would be passed up (no previous backend named) or sent on (one named,
 * its connection unknown here): neither the socket lookup nor the stack
 * is handed what is not there. So is an IPv4 length short of its header.
 */
static void an_inner_length_past_the_frame_is_dropped(void)
{
	static const int pairs[][2] = { { 4, 4 }, { 6, 6 }, { 4, 6 }, { 6, 4 } };
	static const struct { __u16 len; __u8 ihl; const char *what; } short4[] = {
		{ 19, 4, "length 19, IHL 4" },
		{ 22, 6, "length 22, IHL 6" },
	};
	__u8 ip[PKT_MAX], frame[PKT_MAX];
	size_t i, k, ilen;
	char what[96];
	int named;

	if (!setup())
		return;
	for (i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
		int outer = pairs[i][0], inner = pairs[i][1];
		struct inner ack = TCP(inner, PORT_UNKNOWN, PKT_TCP_ACK);

		for (named = 0; named < 2; named++) {
			const char *how = named ? "a previous backend named" : "no field";

			ilen = inner_ip(&ack, ip);
			ip_len_set(ip, (__u16)(ilen + 1));
			snprintf(what, sizeof(what), "IPv%d in IPv%d, %s, one byte short",
				 inner, outer, how);
			expect_drop(frame, gue_around(outer, named, ip, ilen, inner, frame),
				    XLB_DECAP_DROP_INNER_TRUNCATED, what);
			ip_len_set(ip, 65535);
			snprintf(what, sizeof(what), "IPv%d in IPv%d, %s, length 65535",
				 inner, outer, how);
			expect_drop(frame, gue_around(outer, named, ip, ilen, inner, frame),
				    XLB_DECAP_DROP_INNER_TRUNCATED, what);
			for (k = 0; inner == 4 && k < sizeof(short4) / sizeof(short4[0]); k++) {
				ip[0] = 0x40 | short4[k].ihl;
				ip_len_set(ip, short4[k].len);
				snprintf(what, sizeof(what), "IPv4 in IPv%d, %s, %s", outer, how,
					 short4[k].what);
				expect_drop(frame, gue_around(outer, named, ip, ilen, inner, frame),
					    XLB_DECAP_DROP_INNER_TRUNCATED, what);
			}
		}
	}
}

/* Bytes past the inner packet's length (a link's padding) are no harm:
 * the stack trims them. Passed up as they came, padding and all. */
static void bytes_past_the_inner_length_pass(void)
{
	struct inner est4 = TCP(4, PORT_ESTAB, PKT_TCP_ACK), est6 = TCP(6, PORT_ESTAB, PKT_TCP_ACK);
	const struct inner *ins[] = { &est4, &est6 };
	__u8 frame[PKT_MAX], want[PKT_MAX];
	size_t i, len, want_len;
	struct run r;

	if (!setup())
		return;
	for (i = 0; i < 2; i++) {
		const char *what = i ? "IPv6 in IPv6, padded" : "IPv4 in IPv4, padded";

		want_len = inner_frame(ins[i], want);
		memset(want + want_len, 0, 6);
		want_len += 6;
		len = gue_around(ins[i]->family, true, want + PKT_ETH_LEN,
				 want_len - PKT_ETH_LEN, ins[i]->family, frame);
		if (run_frame(frame, len, XDP_PASS, XLB_DECAP_PASS_GUE, &r, what) &&
		    ASSERT_EQ(r.out_len, want_len, what))
			ASSERT_MEM_EQ(r.out, want, want_len, what);
	}
}

/* ------------------------------------------------------------------ */
/* On real frames                                                      */

/* One segment, 192.0.2.240/28, on the bridge LIVE_BRIDGE of the test's
 * namespace: the test sends from LIVE_SENDER, the packet goes to backend
 * "b", which forwards it to backend "a". */
#define LIVE_BRIDGE	"gue-br"
#define LIVE_SENDER	"192.0.2.241"
#define LIVE_B		"192.0.2.242"
#define LIVE_A		"192.0.2.243"
#define LIVE_MAC_B	"02:58:4c:42:02:02"
#define LIVE_MAC_A	"02:58:4c:42:02:03"
#define LIVE_PORT	42000

struct live_backend {
	const char *name;	/* "a" or "b": its interface is eth-NAME */
	const char *addr;
	const char *peer;	/* the other backend: the fleet */
	const char *batch;	/* more ip commands in its namespace */
	pid_t pid;
	int cmd, reply;		/* pipes: test to child, child to test */
};

/* Read one byte that must be want; false on anything else, EOF too. */
static bool read_byte(int fd, char want)
{
	char c;

	return read(fd, &c, 1) == 1 && c == want;
}

/*
 * The child's life: a namespace of its own ('n' once in it), its
 * interface configured and the program attached ('a'), then, on 'd', its
 * counters to the test, and exit. It exits at once when the test goes
 * away (EOF on cmd), so nothing outlives the test.
 */
static void live_child(struct live_backend *be)
{
	char batch[1024], ifname[16], fleet[32];
	__u64 counts[XLB_DECAP__MAX];
	struct decap_maps m;
	struct decap *skel;
	int ifindex, r;

	if (unshare(CLONE_NEWNET) || write(be->reply, "n", 1) != 1 ||
	    !read_byte(be->cmd, 'g'))
		_exit(1);
	snprintf(ifname, sizeof(ifname), "eth-%s", be->name);
	snprintf(batch, sizeof(batch),
		 "link set lo up\n"
		 "link set %s up\n"
		 "addr add %s/28 dev %s\n"
		 "addr add " VIP4 "/32 dev lo\n%s",
		 ifname, be->addr, ifname, be->batch);
	snprintf(fleet, sizeof(fleet), "%s/32", be->peer);
	ifindex = if_nametoindex(ifname);
	libbpf_set_print(NULL);
	skel = decap__open_and_load();
	if (!skel)
		_exit(1);
	m = (struct decap_maps){
		.cfg = bpf_map__fd(skel->maps.xlb_decap_cfg),
		.addrs = bpf_map__fd(skel->maps.xlb_decap_addrs),
		.fleet = bpf_map__fd(skel->maps.xlb_decap_fleet),
		.lbs = bpf_map__fd(skel->maps.xlb_decap_lbs),
		.out = bpf_map__fd(skel->maps.xlb_decap_out),
	};
	/* As docs/backend.md sets a backend up: never the VIP as the source
	 * of an ARP request, which the sender's segment could not answer;
	 * forwarding on lo only; the sender as the balancer, the other
	 * backend as the fleet. */
	if (!ifindex || xlb_sandbox_ip(batch) ||
	    sysctl_set("/proc/sys/net/ipv4/conf/lo/forwarding", "1") ||
	    sysctl_set("/proc/sys/net/ipv4/conf/all/arp_announce", "2") ||
	    decap_trust_addr(m.addrs, be->addr, XLB_DECAP_ADDR_TUNNEL) ||
	    decap_trust_addr(m.addrs, VIP4, XLB_DECAP_ADDR_VIP) ||
	    decap_trust_prefix(m.fleet, fleet) ||
	    decap_trust_prefix(m.lbs, LIVE_SENDER "/32") ||
	    decap_set_config(m.cfg, 0, XLB_DECAP_F_CHECK_SOURCE) ||
	    bpf_xdp_attach(ifindex, bpf_program__fd(skel->progs.xdp_decap),
			   XDP_FLAGS_DRV_MODE, NULL))
		_exit(1);
	if (write(be->reply, "a", 1) != 1 || !read_byte(be->cmd, 'd'))
		_exit(1);
	for (r = 0; r < XLB_DECAP__MAX; r++) {
		int ncpu = libbpf_num_possible_cpus(), i;
		struct xlb_counter c[ncpu > 0 ? ncpu : 1];
		__u32 key = r;

		counts[r] = 0;
		if (ncpu > 0 && !bpf_map__lookup_elem(skel->maps.xlb_decap_stats, &key,
						      sizeof(key), c, sizeof(c), 0))
			for (i = 0; i < ncpu; i++)
				counts[r] += c[i].packets;
	}
	_exit(write(be->reply, counts, sizeof(counts)) == sizeof(counts) ? 0 : 1);
}

/* Start the child, and move its interface (the veth's end) into its
 * namespace. */
static bool live_start(struct live_backend *be)
{
	int cmd[2], reply[2];
	char batch[256];

	if (pipe(cmd) || pipe(reply))
		return false;
	be->pid = fork();
	if (be->pid < 0)
		return false;
	if (be->pid == 0) {
		close(cmd[1]);
		close(reply[0]);
		be->cmd = cmd[0];
		be->reply = reply[1];
		live_child(be);
	}
	close(cmd[0]);
	close(reply[1]);
	be->cmd = cmd[1];
	be->reply = reply[0];
	snprintf(batch, sizeof(batch), "link set eth-%s netns %d\n", be->name, be->pid);
	return read_byte(be->reply, 'n') && !xlb_sandbox_ip(batch) &&
	       write(be->cmd, "g", 1) == 1 && read_byte(be->reply, 'a');
}

/* The child's counters, and its end. */
static bool live_counts(struct live_backend *be, __u64 *counts)
{
	bool ok = write(be->cmd, "d", 1) == 1 &&
		  read(be->reply, counts, sizeof(__u64) * XLB_DECAP__MAX) ==
		  (ssize_t)(sizeof(__u64) * XLB_DECAP__MAX);

	close(be->cmd);
	close(be->reply);
	waitpid(be->pid, NULL, 0);
	be->pid = 0;
	return ok;
}

static void live_stop(struct live_backend *be)
{
	if (be->pid > 0) {
		kill(be->pid, SIGKILL);
		waitpid(be->pid, NULL, 0);
		close(be->cmd);
		close(be->reply);
	}
}

/* The test's end of the segment: the bridge, with an XDP program on the
 * ports (a veth delivers what its peer sends with XDP_TX only to an end
 * that has one). */
static bool live_segment(struct pass **pass)
{
	static const char batch[] =
		"link add " LIVE_BRIDGE " type bridge\n"
		"link add gue-pb type veth peer name eth-b address " LIVE_MAC_B "\n"
		"link add gue-pa type veth peer name eth-a address " LIVE_MAC_A "\n"
		"link set gue-pb master " LIVE_BRIDGE "\n"
		"link set gue-pa master " LIVE_BRIDGE "\n"
		"link set gue-pb up\n"
		"link set gue-pa up\n"
		"link set " LIVE_BRIDGE " up\n"
		"addr add " LIVE_SENDER "/28 dev " LIVE_BRIDGE "\n";
	static const char *const ports[] = { "gue-pb", "gue-pa" };
	int i;

	if (!ASSERT_OK(xlb_sandbox_ip(batch), "the segment"))
		return false;
	*pass = pass__open_and_load();
	if (!ASSERT_TRUE(*pass != NULL, "load pass.bpf.o"))
		return false;
	for (i = 0; i < 2; i++)
		if (!ASSERT_OK(bpf_xdp_attach(if_nametoindex(ports[i]),
					      bpf_program__fd((*pass)->progs.xdp_pass),
					      XDP_FLAGS_DRV_MODE, NULL), ports[i]))
			return false;
	return true;
}

/* Send the GUE payload (GUE header, xlb's field, inner packet) of frame
 * g, of len bytes, from the sender's UDP socket to g's destination. */
static bool live_send(const struct gue_frame *g, const __u8 *frame, size_t len)
{
	size_t off = PKT_ETH_LEN + 20 + 8;
	struct sockaddr_in to = { .sin_family = AF_INET,
				  .sin_port = htons(XLB_GUE_DEFAULT_PORT) };
	int fd = sock_at(4, SOCK_DGRAM, g->src, 49152 + 7);
	bool ok;

	pkt_addr(4, g->dst, (__u8 *)&to.sin_addr);
	ok = fd >= 0 && sendto(fd, frame + off, len - off, 0, (void *)&to, sizeof(to)) ==
			(ssize_t)(len - off);
	if (fd >= 0)
		close(fd);
	return ok;
}

/* Wait for the reset backend "a" sends the sender, from the VIP's port
 * to LIVE_PORT, leaving a's interface; true once it came. */
static bool live_reset_seen(int cap)
{
	static const __u8 mac_a[6] = { 0x02, 0x58, 0x4c, 0x42, 0x02, 0x03 };
	__u8 buf[PKT_MAX], *ip = buf + PKT_ETH_LEN, *th;
	ssize_t n;

	while ((n = recv(cap, buf, sizeof(buf), 0)) >= 0) {
		th = ip + (ip[0] & 0x0f) * 4;
		if (n >= PKT_ETH_LEN + 40 && pkt_get16(buf + 12) == PKT_ETH_P_IP && ip[9] == IPPROTO_TCP &&
		    !memcmp(buf + 6, mac_a, 6) && pkt_get16(th) == PORT_TCP &&
		    pkt_get16(th + 2) == LIVE_PORT && th[13] & 0x04)
			return true;
	}
	return false;
}

/*
 * A segment of a connection "b" lacks, naming "a": b forwards it out of
 * its interface with XDP_TX, a passes it up (it arrived forwarded), and
 * a's stack, which lacks the connection too, answers the sender with a
 * reset: the forwarded frame reached a's TCP whole, checksums included.
 */
static void live_forward_reaches_the_previous_backend(void)
{
	struct live_backend a = { .name = "a", .addr = LIVE_A, .peer = LIVE_B, .batch = "" };
	struct live_backend b = { .name = "b", .addr = LIVE_B, .peer = LIVE_A,
				  .batch = "neigh add " LIVE_A " lladdr " LIVE_MAC_A
					   " dev eth-b nud permanent\n" };
	struct gue_frame g = { .outer = 4, .src = LIVE_SENDER, .dst = LIVE_B,
			       .prev_family = 4, .prev = LIVE_A };
	struct pkt_desc ack = { .family = 4, .src = LIVE_SENDER, .dst = VIP4,
				.proto = IPPROTO_TCP, .sport = LIVE_PORT,
				.dport = PORT_TCP, .tcp_flags = PKT_TCP_ACK,
				.payload_len = 64 };
	struct sockaddr_ll ll = { .sll_family = AF_PACKET,
				  .sll_protocol = htons(ETH_P_ALL) };
	struct timeval tv = { .tv_sec = 2 };
	__u64 counts_a[XLB_DECAP__MAX], counts_b[XLB_DECAP__MAX];
	__u8 ip[PKT_MAX], frame[PKT_MAX];
	struct pass *pass = NULL;
	int cap = -1;
	size_t len;

	if (!setup() || !live_segment(&pass))
		goto out;
	if (!ASSERT_TRUE(live_start(&a), "backend a") ||
	    !ASSERT_TRUE(live_start(&b), "backend b"))
		goto out;
	/* The inner packet comes from the sender, so that a's answer
	 * comes back to it. */
	len = gue_build(&g, ip, pkt_build_ip(&ack, ip), 4, frame);
	ll.sll_ifindex = if_nametoindex(LIVE_BRIDGE);
	cap = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL));
	if (!ASSERT_GE(cap, 0, "capture") ||
	    !ASSERT_OK(bind(cap, (void *)&ll, sizeof(ll)), "capture on the bridge") ||
	    !ASSERT_OK(setsockopt(cap, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), "timeout"))
		goto out;
	if (!ASSERT_TRUE(live_send(&g, frame, len), "send to b"))
		goto out;
	ASSERT_TRUE(live_reset_seen(cap), "a's reset reaches the sender");
	if (ASSERT_TRUE(live_counts(&b, counts_b), "b's counters"))
		ASSERT_EQ(counts_b[XLB_DECAP_FORWARD], 1, "b forwarded it");
	if (ASSERT_TRUE(live_counts(&a, counts_a), "a's counters"))
		ASSERT_EQ(counts_a[XLB_DECAP_PASS_FORWARDED], 1, "a passed it up");
out:
	if (cap >= 0)
		close(cap);
	live_stop(&a);
	live_stop(&b);
	pass__destroy(pass);
}

TEST_MAIN(TEST(decapsulates_every_family_pair),
	  TEST(syn_and_known_connections_stay),
	  TEST(unknown_segments_go_to_the_previous_backend),
	  TEST(a_forwarded_packet_is_never_forwarded_again),
	  TEST(previous_backend_here_or_of_another_family_stays),
	  TEST(unreachable_previous_backend_is_dropped),
	  TEST(forwarding_off_is_dropped_and_named),
	  TEST(the_receiving_interface_need_not_forward),
	  TEST(syn_cookie_handshakes_stay),
	  TEST(a_handshake_in_progress_stays),
	  TEST(udp_stays_where_a_socket_takes_it),
	  TEST(malformed_gue_is_dropped_by_reason),
	  TEST(other_udp_and_fragments_pass_unchanged),
	  TEST(the_gue_port_is_a_setting),
	  TEST(not_this_hosts_tunnel_passes_untouched),
	  TEST(a_strangers_tunnelled_packet_is_dropped),
	  TEST(an_inner_packet_not_for_a_vip_is_dropped),
	  TEST(a_martian_previous_backend_is_dropped),
	  TEST(outside_the_fleet_or_its_interfaces_is_dropped),
	  TEST(outer_options_are_not_forwarded),
	  TEST(with_empty_maps_nothing_is_decapsulated),
	  TEST(an_inner_length_past_the_frame_is_dropped),
	  TEST(bytes_past_the_inner_length_pass),
	  TEST(live_forward_reaches_the_previous_backend))
