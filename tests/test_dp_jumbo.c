// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Jumbo frames: xlb's program takes frames of several buffers (XDP
 * multi-buffer), headers in the first and payload in the rest, as a
 * driver hands them over at MTU 9000. A 9000-byte packet is forwarded
 * encapsulated, every byte where it belongs; one that does not fit once
 * encapsulated is answered with ICMP like a smaller one, its quote cut
 * from a frame of several buffers; a frame whose IP packet claims more
 * bytes than all its buffers hold is dropped as malformed, and so is one
 * whose headers go on past the first buffer. The frames are
 * run with BPF_PROG_TEST_RUN, which splits what does not fit one page
 * into fragments for a multi-buffer program.
 */
#include <errno.h>
#include <string.h>
#include "testlib.h"
#include "dp_fixture.h"

/* The bytes of a frame BPF_PROG_TEST_RUN puts in its first buffer: a page
 * less XDP's headroom and the shared info at its end. */
#define FIRST_BUFFER	(4096 - 256 - 320)

static __u8 in[16384], out[16384], want[16384];

/* Run a frame of len bytes, its first head in the first buffer and the
 * rest in fragments. */
static int run_split(const void *frame, __u32 len, __u32 head, __u32 *out_len,
		     __u32 *retval)
{
	struct xdp_md ctx = {
		.data_end = len < head ? len : head,
		.ingress_ifindex = fx.env.ifindex,
	};
	LIBBPF_OPTS(bpf_test_run_opts, opts,
		    .data_in = frame, .data_size_in = len,
		    .data_out = out, .data_size_out = sizeof(out),
		    .ctx_in = &ctx, .ctx_size_in = sizeof(ctx), .repeat = 1);

	if (bpf_prog_test_run_opts(fx.prog_fd, &opts))
		return -errno;
	*out_len = opts.data_size_out;
	*retval = opts.retval;
	return 0;
}

/* As a driver hands a jumbo frame over: a page in the first buffer. */
static int run_jumbo(const void *frame, __u32 len, __u32 *out_len,
		     __u32 *retval)
{
	return run_split(frame, len, FIRST_BUFFER, out_len, retval);
}

/* The route to VIP_MTU4's backend (out of the ingress) at MTU mtu. */
static bool ingress_mtu(int mtu)
{
	char batch[128];

	snprintf(batch, sizeof(batch), "link set " XLB_SANDBOX_IF_IN " mtu %d\n",
		 mtu);
	return ASSERT_OK(xlb_sandbox_ip(batch), "ingress MTU") &&
	       ASSERT_OK(dp_fib_cache_clear(&fx), "clear the FIB cache");
}

static size_t jumbo_frame(__u16 sport, size_t ip_len, bool df,
			  struct xlb_flow *flow, struct pkt_desc *d)
{
	struct dp_flow f = { 4, CLIENT4, "192.0.2.50", sport, 80, IPPROTO_TCP };

	*d = (struct pkt_desc){ V4(CLIENT4, "192.0.2.50", TCP, sport, 80),
				.df = df, .payload_len = ip_len - 40 };
	*flow = dp_xlb_flow(&f);
	return pkt_build(d, in);
}

/* 9000 bytes of IP packet, MTU 9100 towards the backend: forwarded whole. */
static void jumbo_packet_is_forwarded_whole(void)
{
	struct xlb_counter before, after;
	struct pkt_desc d;
	struct xlb_flow flow;
	__u32 out_len, retval, be;
	size_t len, want_len;
	int verdict;

	if (!fixture() || !ingress_mtu(9100))
		return;
	len = jumbo_frame(40300, 9000, true, &flow, &d);
	before = dp_counter(fx.maps.stats, XLB_STAT_FORWARD);
	if (!ASSERT_OK(run_jumbo(in, len, &out_len, &retval),
		       "run a frame of three buffers"))
		goto out;
	after = dp_counter(fx.maps.stats, XLB_STAT_FORWARD);
	want_len = dp_model_forward(&fx, VIP_MTU4, &flow, in + PKT_ETH_LEN,
				    len - PKT_ETH_LEN, want, &verdict, &be);
	ASSERT_EQ(retval, XDP_TX, "forwarded");
	ASSERT_EQ(out_len, want_len, "9000 bytes and the outer header");
	ASSERT_MEM_EQ(out, want, want_len, "every byte where it belongs");
	ASSERT_EQ(after.packets - before.packets, 1, "counted forward");
	ASSERT_EQ(after.bytes - before.bytes, len, "with all its bytes");
out:
	ingress_mtu(XLB_SANDBOX_MTU);
}

/* MTU 9000: the same packet does not fit with IPIP's 20 bytes. */
static void jumbo_packet_too_big_is_answered(void)
{
	struct pkt_desc d, a = {
		.family = 4, .src = "192.0.2.50", .dst = CLIENT4,
		.proto = IPPROTO_ICMP, .icmp_type = 3, .icmp_code = 4,
		.icmp_rest = 8980, .quote_len = 548,
	};
	struct xlb_flow flow;
	__u32 out_len, retval;
	size_t len, want_len;

	if (!fixture() || !ingress_mtu(9000))
		return;
	len = jumbo_frame(40301, 9000, true, &flow, &d);
	if (!ASSERT_OK(run_jumbo(in, len, &out_len, &retval), "run"))
		goto out;
	memcpy(a.dmac, in + 6, 6);
	memcpy(a.smac, in, 6);
	a.quote = in + PKT_ETH_LEN;
	want_len = pkt_build(&a, want);
	/* ID 0, where the builder puts one of its own. */
	pkt_put16(want + PKT_ETH_LEN + 4, 0);
	pkt_put16(want + PKT_ETH_LEN + 10, 0);
	pkt_put16(want + PKT_ETH_LEN + 10,
		  pkt_fold(pkt_sum(want + PKT_ETH_LEN, 20, 0)));
	ASSERT_EQ(retval, XDP_TX, "answered");
	ASSERT_EQ(out_len, want_len, "576 bytes of answer");
	ASSERT_MEM_EQ(out, want, want_len, "MTU 8980, 548 bytes quoted");
out:
	ingress_mtu(XLB_SANDBOX_MTU);
}

/* An IP header that claims more than all the buffers hold. */
static void jumbo_frame_shorter_than_its_header_is_malformed(void)
{
	struct xlb_counter before, after;
	struct pkt_desc d;
	struct xlb_flow flow;
	__u32 out_len, retval;
	size_t len;

	if (!fixture() || !ingress_mtu(9100))
		return;
	len = jumbo_frame(40302, 9000, true, &flow, &d);
	before = dp_counter(fx.maps.stats, XLB_STAT_DROP_MALFORMED);
	if (ASSERT_OK(run_jumbo(in, len - 1, &out_len, &retval), "run"))
		ASSERT_EQ(retval, XDP_DROP, "dropped");
	after = dp_counter(fx.maps.stats, XLB_STAT_DROP_MALFORMED);
	ASSERT_EQ(after.packets - before.packets, 1, "counted drop_malformed");
	ingress_mtu(XLB_SANDBOX_MTU);
}

/*
 * A driver's first buffer may end anywhere past the headers it parses
 * itself. Where the IP or TCP header goes on in the next buffer, the frame
 * is dropped as malformed: headers are read from the first buffer only,
 * and a packet to a VIP is never passed to the stack.
 */
static void headers_straddling_the_first_buffer_are_dropped(void)
{
	static const struct { __u32 head; const char *what; } cases[] = {
		{ PKT_ETH_LEN + 10, "half the IP header" },
		{ PKT_ETH_LEN + 20 + 2, "half the ports" },
		{ PKT_ETH_LEN + 20 + 12, "half the TCP header" },
	};
	struct xlb_counter before, after;
	struct pkt_desc d;
	struct xlb_flow flow;
	__u32 out_len, retval;
	size_t i, len;
	int err;

	if (!fixture() || !ingress_mtu(9100))
		return;
	len = jumbo_frame(40303, 9000, true, &flow, &d);
	/* A frame split where no header is cut, to hear the kernel's word. */
	err = run_split(in, len, PKT_ETH_LEN + 40, &out_len, &retval);
	if (err == -EINVAL) {
		test_skip_env("BPF_PROG_TEST_RUN takes no first buffer shorter than a page before Linux 6.18");
		goto out;
	}
	if (!ASSERT_OK(err, "split after the headers") ||
	    !ASSERT_EQ(retval, XDP_TX, "split after the headers: forwarded"))
		goto out;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		before = dp_counter(fx.maps.stats, XLB_STAT_DROP_MALFORMED);
		if (!ASSERT_OK(run_split(in, len, cases[i].head, &out_len, &retval),
			       cases[i].what))
			continue;
		after = dp_counter(fx.maps.stats, XLB_STAT_DROP_MALFORMED);
		ASSERT_EQ(retval, XDP_DROP, cases[i].what);
		ASSERT_EQ(after.packets - before.packets, 1, "counted drop_malformed");
	}
out:
	ingress_mtu(XLB_SANDBOX_MTU);
}

TEST_MAIN(
	TEST(jumbo_packet_is_forwarded_whole),
	TEST(jumbo_packet_too_big_is_answered),
	TEST(jumbo_frame_shorter_than_its_header_is_malformed),
	TEST(headers_straddling_the_first_buffer_are_dropped),
)
