// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Jumbo frames on the backends (bpf/decap.bpf.c): the program, loaded
 * multi-buffer as `xlb host setup` loads it, takes frames of several
 * buffers, headers in the first and payload in the rest, as a driver hands
 * them over at MTU 9000:
 *
 * - a 9000-byte packet in IPIP, IP6IP6 or GUE of either family is passed
 *   up decapsulated whole, every byte where it belongs, and counted with
 *   all of its bytes;
 * - a 9000-byte segment of a connection this host does not have goes to
 *   the previous backend whole, where the route's MTU takes it, and is
 *   dropped as too big where it does not: the MTU is checked against the
 *   whole frame, not its first buffer;
 * - an inner length past the last buffer is dropped as truncated;
 * - headers are read from the first buffer only: a frame whose inner IP
 *   or TCP header straddles its end is dropped, counted drop_truncated.
 *
 * The frames are run with BPF_PROG_TEST_RUN in the packet sandbox of
 * tests/lib/decap_fixture.h (the VIP, sockets and routes of a backend),
 * which puts a frame's first bytes in its first buffer and the rest in
 * fragments.
 */
#include <errno.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "xlb.h"
#include "decap.h"
#include "decap.skel.h"
#include "decap_fixture.h"
#include "testlib.h"

/* What BPF_PROG_TEST_RUN puts in a frame's first buffer at most: a page
 * less XDP's headroom and the shared info at its end. */
#define FIRST_BUFFER	(4096 - 256 - 320)
#define JUMBO		9000	/* bytes of the inner IP packet */
/* The sandbox's "in" interface: room for 9000 bytes and GUE over IPv6
 * (9072), and an MTU the same packet forwarded does not fit. */
#define MTU_ROOM	9100
#define MTU_TIGHT	9000

static struct {
	bool tried, ready;
	struct xlb_sandbox env;
	struct decap *skel;
	struct decap_maps maps;
	int prog_fd;
} t;

/* The sandbox's "in" interface, by which forwarded frames leave, at mtu. */
static int in_mtu(int mtu)
{
	char batch[64];

	snprintf(batch, sizeof(batch), "link set " XLB_SANDBOX_IF_IN " mtu %d\n", mtu);
	return xlb_sandbox_ip(batch);
}

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
	t.skel = decap__open();
	if (!ASSERT_TRUE(t.skel != NULL, "open decap.bpf.o"))
		return false;
	bpf_program__set_flags(t.skel->progs.xdp_decap,
			       bpf_program__flags(t.skel->progs.xdp_decap) |
			       BPF_F_XDP_HAS_FRAGS);
	if (decap__load(t.skel)) {
		test_skip_env("this kernel has no multi-buffer XDP (Linux 5.18)");
		return false;
	}
	t.maps = (struct decap_maps){
		.cfg = bpf_map__fd(t.skel->maps.xlb_decap_cfg),
		.addrs = bpf_map__fd(t.skel->maps.xlb_decap_addrs),
		.fleet = bpf_map__fd(t.skel->maps.xlb_decap_fleet),
		.lbs = bpf_map__fd(t.skel->maps.xlb_decap_lbs),
		.out = bpf_map__fd(t.skel->maps.xlb_decap_out),
	};
	if (!ASSERT_OK(decap_trust_backend(&t.maps, t.env.ifindex_other), "trust") ||
	    !ASSERT_OK(in_mtu(MTU_ROOM), "room for jumbo frames"))
		return false;
	t.prog_fd = bpf_program__fd(t.skel->progs.xdp_decap);
	t.ready = true;
	return true;
}

/* The counter of reason, summed over CPUs. */
static struct xlb_counter counted(enum xlb_decap_stat reason)
{
	int ncpu = libbpf_num_possible_cpus(), i;
	struct xlb_counter c[ncpu > 0 ? ncpu : 1], sum = { ~0ULL, ~0ULL };
	__u32 key = reason;

	if (ncpu <= 0 || bpf_map__lookup_elem(t.skel->maps.xlb_decap_stats, &key,
					      sizeof(key), c, sizeof(c), 0))
		return sum;
	sum = (struct xlb_counter){ 0 };
	for (i = 0; i < ncpu; i++) {
		sum.packets += c[i].packets;
		sum.bytes += c[i].bytes;
	}
	return sum;
}

struct run {
	__u32 retval;
	__u8 out[PKT_MAX];
	__u32 out_len;
};

/* Run a frame of len bytes, its first head bytes (at most FIRST_BUFFER)
 * in the first buffer and the rest in fragments. -EINVAL: the kernel
 * takes no first buffer shorter than a page's (before Linux 6.18). */
static int run_split(const __u8 *frame, size_t len, __u32 head, struct run *r)
{
	struct xdp_md ctx = {
		.data_end = len < head ? (__u32)len : head,
		.ingress_ifindex = (__u32)t.env.ifindex,
	};
	LIBBPF_OPTS(bpf_test_run_opts, opts,
		    .data_in = frame, .data_size_in = (__u32)len,
		    .data_out = r->out, .data_size_out = sizeof(r->out),
		    .ctx_in = &ctx, .ctx_size_in = sizeof(ctx), .repeat = 1);

	if (bpf_prog_test_run_opts(t.prog_fd, &opts))
		return -errno;
	r->retval = opts.retval;
	r->out_len = opts.data_size_out;
	return 0;
}

/*
 * Run the frame split after head bytes; check the verdict, that it was
 * counted once under reason with all its bytes, and that the output is
 * want (want_len bytes; NULL: not checked).
 */
static void expect(const __u8 *frame, size_t len, __u32 head, __u32 verdict,
		   enum xlb_decap_stat reason, const __u8 *want, size_t want_len,
		   const char *what)
{
	struct xlb_counter before = counted(reason), after;
	struct run r;

	if (!ASSERT_GT(len, 0, "frame built") ||
	    !ASSERT_OK(run_split(frame, len, head, &r), what))
		return;
	after = counted(reason);
	ASSERT_EQ(r.retval, verdict, what);
	ASSERT_EQ(after.packets - before.packets, 1, "counted once under its reason");
	ASSERT_EQ(after.bytes - before.bytes, len, "with all its bytes");
	if (want && ASSERT_EQ(r.out_len, want_len, what))
		ASSERT_MEM_EQ(r.out, want, want_len, what);
}

/* A TCP segment of JUMBO bytes from the client to the VIP. */
static struct inner jumbo_segment(int family, __u16 sport, __u8 flags)
{
	struct inner in = {
		.family = family, .proto = IPPROTO_TCP, .sport = sport,
		.dport = PORT_TCP, .tcp_flags = flags,
		.payload_len = JUMBO - (family == 4 ? 20 : 40) - 20,
	};

	return in;
}

/* The IPIP or IP6IP6 frame of in, from the balancer. */
static size_t ipip_frame(const struct inner *in, __u8 *out)
{
	static __u8 ip[PKT_MAX];
	size_t len = inner_ip(in, ip);
	int f = in->family;

	return len ? pkt_encap(out, mac_in, mac_gw, f, f == 4 ? BALANCER4 : BALANCER6,
			       f == 4 ? BACKEND4 : BACKEND6, 7, ip, len, f) : 0;
}

#define G4(prev_) { .outer = 4, .src = BALANCER4, .dst = BACKEND4, \
		    .prev_family = 4, .prev = (prev_) }
#define G6(prev_) { .outer = 6, .src = BALANCER6, .dst = BACKEND6, \
		    .prev_family = 6, .prev = (prev_) }

static __u8 frame[PKT_MAX], want[PKT_MAX];

/* ------------------------------------------------------------------ */
/* Cases                                                               */

static void a_9000_byte_ipip_packet_is_passed_whole(void)
{
	static const int fams[] = { 4, 6 };
	size_t i, len, want_len;

	if (!setup())
		return;
	for (i = 0; i < 2; i++) {
		struct inner in = jumbo_segment(fams[i], PORT_UNKNOWN, PKT_TCP_SYN);

		len = ipip_frame(&in, frame);
		want_len = inner_frame(&in, want);
		ASSERT_EQ(want_len, PKT_ETH_LEN + JUMBO, "9000 bytes of IP packet");
		expect(frame, len, FIRST_BUFFER, XDP_PASS, XLB_DECAP_PASS_IPIP, want,
		       want_len, fams[i] == 4 ? "IPIP, 3 buffers" : "IP6IP6, 3 buffers");
	}
}

static void a_9000_byte_gue_packet_is_passed_whole(void)
{
	struct gue_frame g4 = G4(PREV4_TX), g6 = G6(PREV6_TX);
	struct inner syn4 = jumbo_segment(4, PORT_UNKNOWN, PKT_TCP_SYN);
	struct inner est6 = jumbo_segment(6, PORT_ESTAB, PKT_TCP_ACK);
	size_t len, want_len;

	if (!setup())
		return;
	/* A SYN opens a connection here; an established one's stays. */
	len = gue_frame(&g4, &syn4, frame);
	want_len = inner_frame(&syn4, want);
	expect(frame, len, FIRST_BUFFER, XDP_PASS, XLB_DECAP_PASS_GUE, want, want_len,
	       "SYN in GUE over IPv4");
	len = gue_frame(&g6, &est6, frame);
	want_len = inner_frame(&est6, want);
	expect(frame, len, FIRST_BUFFER, XDP_PASS, XLB_DECAP_PASS_GUE, want, want_len,
	       "established segment in GUE over IPv6");
}

/* The frame that leaves: the balancer's, to the previous backend, hops 1
 * (tests/test_decap_gue.c checks each field of it). */
static size_t forwarded(const struct gue_frame *g, const struct inner *in, __u8 *out)
{
	struct gue_frame fwd = *g;

	fwd.src = g->dst;
	fwd.dst = g->prev;
	fwd.hops = 1;
	fwd.ttl = 64;
	fwd.dmac = mac_gw;
	fwd.smac = mac_in;
	fwd.udp_csum_zero = g->outer == 4;
	return gue_frame(&fwd, in, out);
}

static void a_9000_byte_segment_of_another_backend_is_forwarded_whole(void)
{
	struct gue_frame g4 = G4(PREV4_TX), g6 = G6(PREV6_TX);
	struct inner ack4 = jumbo_segment(4, PORT_UNKNOWN, PKT_TCP_ACK);
	struct inner ack6 = jumbo_segment(6, PORT_UNKNOWN, PKT_TCP_ACK);
	size_t len, want_len;

	if (!setup())
		return;
	len = gue_frame(&g4, &ack4, frame);
	want_len = forwarded(&g4, &ack4, want);
	expect(frame, len, FIRST_BUFFER, XDP_TX, XLB_DECAP_FORWARD, want, want_len,
	       "GUE over IPv4, out of the ingress");
	len = gue_frame(&g6, &ack6, frame);
	want_len = forwarded(&g6, &ack6, want);
	expect(frame, len, FIRST_BUFFER, XDP_TX, XLB_DECAP_FORWARD, want, want_len,
	       "GUE over IPv6, out of the ingress");
}

/* Route MTU 9000: the 9052- and 9072-byte frames do not fit, though their
 * first buffers would. */
static void a_jumbo_segment_too_big_for_the_route_is_dropped(void)
{
	struct gue_frame g4 = G4(PREV4_TX), g6 = G6(PREV6_TX);
	struct inner ack4 = jumbo_segment(4, PORT_UNKNOWN, PKT_TCP_ACK);
	struct inner ack6 = jumbo_segment(6, PORT_UNKNOWN, PKT_TCP_ACK);

	if (!setup() || !ASSERT_OK(in_mtu(MTU_TIGHT), "MTU 9000 towards the backend"))
		return;
	expect(frame, gue_frame(&g4, &ack4, frame), FIRST_BUFFER, XDP_DROP,
	       XLB_DECAP_DROP_TOO_BIG, NULL, 0, "GUE over IPv4");
	expect(frame, gue_frame(&g6, &ack6, frame), FIRST_BUFFER, XDP_DROP,
	       XLB_DECAP_DROP_TOO_BIG, NULL, 0, "GUE over IPv6");
	ASSERT_OK(in_mtu(MTU_ROOM), "MTU 9100 again");
}

/* The frame a byte shorter than its inner packet says. */
static void an_inner_length_past_the_last_buffer_is_dropped(void)
{
	struct inner syn4 = jumbo_segment(4, PORT_UNKNOWN, PKT_TCP_SYN);
	struct inner syn6 = jumbo_segment(6, PORT_UNKNOWN, PKT_TCP_SYN);
	struct gue_frame g6 = G6(PREV6_TX);

	if (!setup())
		return;
	expect(frame, ipip_frame(&syn4, frame) - 1, FIRST_BUFFER, XDP_DROP,
	       XLB_DECAP_DROP_INNER_TRUNCATED, NULL, 0, "IPIP");
	expect(frame, gue_frame(&g6, &syn6, frame) - 1, FIRST_BUFFER, XDP_DROP,
	       XLB_DECAP_DROP_INNER_TRUNCATED, NULL, 0, "GUE over IPv6");
}

/*
 * A driver's first buffer may end anywhere past the headers it parses
 * itself. Where the inner IP header, the ports or the rest of the TCP
 * header the second chance reads go on in the next buffer, the frame is
 * dropped: headers are read from the first buffer only.
 */
static void inner_headers_straddling_the_first_buffer_are_dropped(void)
{
	const __u32 ipip_inner = PKT_ETH_LEN + 20, gue_inner = PKT_ETH_LEN + 20 + 8 + 4 + 20;
	static const struct { bool gue; __u32 head; const char *what; } cases[] = {
		{ false, ipip_inner + 10, "IPIP, half the inner IP header" },
		{ true, gue_inner + 10, "GUE, half the inner IP header" },
		{ true, gue_inner + 20 + 2, "GUE, half the ports" },
		{ true, gue_inner + 20 + 12, "GUE, half the TCP header" },
	};
	struct inner ack4 = jumbo_segment(4, PORT_UNKNOWN, PKT_TCP_ACK);
	struct gue_frame g4 = G4(PREV4_TX);
	struct run r;
	size_t i, len;

	if (!setup())
		return;
	/* A frame split where no header is cut, to hear the kernel's word. */
	len = gue_frame(&g4, &ack4, frame);
	if (run_split(frame, len, gue_inner + 40, &r) == -EINVAL) {
		test_skip_env("BPF_PROG_TEST_RUN takes no first buffer shorter than a page before Linux 6.18");
		return;
	}
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		len = cases[i].gue ? gue_frame(&g4, &ack4, frame) : ipip_frame(&ack4, frame);
		expect(frame, len, cases[i].head, XDP_DROP, XLB_DECAP_DROP_TRUNCATED,
		       NULL, 0, cases[i].what);
	}
}

TEST_MAIN(
	TEST(a_9000_byte_ipip_packet_is_passed_whole),
	TEST(a_9000_byte_gue_packet_is_passed_whole),
	TEST(a_9000_byte_segment_of_another_backend_is_forwarded_whole),
	TEST(a_jumbo_segment_too_big_for_the_route_is_dropped),
	TEST(an_inner_length_past_the_last_buffer_is_dropped),
	TEST(inner_headers_straddling_the_first_buffer_are_dropped),
)
