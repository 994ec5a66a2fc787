// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * A packet too big for its backend's route once encapsulated is answered
 * (bpf/icmp.h): an IPv4 one with DF by "fragmentation needed" and the
 * route's MTU less the encapsulation, an IPv6 one by "packet too big",
 * from the VIP to the client, quoting the start of the packet, back out
 * of the interface it came in by; never an ICMP message, a fragment or a
 * packet from a multicast, broadcast or unspecified source; and no more
 * answers a second than icmp-rate. The expected answers are built byte
 * by byte by loader/sim/packets.h.
 */
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "testlib.h"
#include "dp_fixture.h"

#define VIP_MTU4_ADDR	"192.0.2.50"
#define VIP_REDIR6_ADDR	"2001:db8:f::20"

/* The answer xlb should make for the packet of d (family 4 or 6) built
 * into in[len]: quoting q bytes of it, with this MTU. */
static size_t answer(const struct pkt_desc *d, const __u8 *in, size_t len,
		     size_t q, __u32 mtu, __u8 *out)
{
	struct pkt_desc a = {
		.family = d->family, .src = d->dst, .dst = d->src,
		.proto = d->family == 4 ? IPPROTO_ICMP : IPPROTO_ICMPV6,
		.icmp_type = d->family == 4 ? 3 : 2,
		.icmp_code = d->family == 4 ? 4 : 0,
		.icmp_rest = mtu,
		.quote = in + PKT_ETH_LEN, .quote_len = q,
	};
	size_t n;

	memcpy(a.dmac, in + 6, 6);
	memcpy(a.smac, in, 6);
	if (q > len - PKT_ETH_LEN)
		return 0;
	n = pkt_build(&a, out);
	if (d->family == 4 && n) {
		/* ID 0, where the builder puts one of its own. */
		pkt_put16(out + PKT_ETH_LEN + 4, 0);
		pkt_put16(out + PKT_ETH_LEN + 10, 0);
		pkt_put16(out + PKT_ETH_LEN + 10,
			  pkt_fold(pkt_sum(out + PKT_ETH_LEN, 20, 0)));
	}
	return n;
}

static bool run_answer(const struct pkt_desc *d, size_t q, __u32 mtu,
		       const char *what)
{
	__u8 in[PKT_MAX], out[PKT_MAX], want[PKT_MAX];
	size_t len = pkt_build(d, in), want_len;
	__u32 out_len;

	if (!expect_run(d, XDP_TX, XLB_STAT_ICMP_TOO_BIG, out, &out_len, what))
		return false;
	want_len = answer(d, in, len, q, mtu, want);
	if (!ASSERT_EQ(out_len, want_len, what) ||
	    !ASSERT_MEM_EQ(out, want, want_len, what)) {
		hexdump("expected", want, want_len);
		hexdump("output", out, out_len);
		return false;
	}
	return true;
}

/* IPv4 with DF: 1481 bytes do not fit 1500 with IPIP's 20. */
static void ipv4_with_df_is_told_the_mtu(void)
{
	struct pkt_desc big = { V4(CLIENT4, VIP_MTU4_ADDR, TCP, 40200, 80),
				.df = true, .payload_len = 1441 };
	__u8 out[PKT_MAX];
	__u32 out_len;

	if (!fixture())
		return;
	ASSERT_OK(dp_fib_cache_clear(&fx), "clear the FIB cache");
	run_answer(&big, 548, 1480, "on a lookup: 548 bytes quoted, MTU 1480");
	run_answer(&big, 548, 1480, "from the cache");
	big.df = false;
	expect_run(&big, XDP_DROP, XLB_STAT_DROP_TOO_BIG, out, &out_len,
		   "without DF: dropped, not answered");
}

/* A small one quotes what it has, in whole words: 61 bytes, 60 quoted. */
static void ipv4_quote_is_what_the_packet_has(void)
{
	struct pkt_desc big = { V4(CLIENT4, VIP_MTU4_ADDR, TCP, 40201, 80),
				.df = true, .payload_len = 21 };

	if (!fixture())
		return;
	/* The route to the backend made small enough for a 61-byte packet
	 * not to fit. */
	ASSERT_OK(xlb_sandbox_ip("route replace 203.0.113.50/32 via "
				 XLB_SANDBOX_GW4 " mtu lock 80\n"),
		  "route of 80 bytes");
	ASSERT_OK(dp_fib_cache_clear(&fx), "clear the FIB cache");
	run_answer(&big, 60, 60, "MTU 80 less 20, quote of 60");
	ASSERT_OK(xlb_sandbox_ip("route del 203.0.113.50/32\n"), "route back");
	ASSERT_OK(dp_fib_cache_clear(&fx), "clear the FIB cache");
}

/* IPv6: 1461 bytes do not fit 1500 with IP6IP6's 40; quoted 1232 bytes,
 * and answered back out of the ingress though the backend is routed out
 * of the other interface. */
static void ipv6_is_told_the_mtu(void)
{
	struct pkt_desc big = { V6(CLIENT6, VIP_REDIR6_ADDR, TCP, 40202, 80),
				.payload_len = 1461 - 40 - 20 };

	if (!fixture())
		return;
	ASSERT_OK(dp_fib_cache_clear(&fx), "clear the FIB cache");
	run_answer(&big, 1232, 1460, "on a lookup");
	run_answer(&big, 1232, 1460, "from the cache");
}

static void never_answered(void)
{
	struct pkt_desc cases[] = {
		{ V4("224.0.0.5", VIP_MTU4_ADDR, TCP, 40203, 80), .df = true,
		  .payload_len = 1441 },
		{ V4("255.255.255.255", VIP_MTU4_ADDR, TCP, 40204, 80),
		  .df = true, .payload_len = 1441 },
		{ V4("0.0.0.0", VIP_MTU4_ADDR, TCP, 40205, 80), .df = true,
		  .payload_len = 1441 },
		{ V6("ff02::1", VIP_REDIR6_ADDR, TCP, 40206, 80),
		  .payload_len = 1401 },
		{ V6("::", VIP_REDIR6_ADDR, TCP, 40207, 80), .payload_len = 1401 },
		/* The first fragment of a datagram to the port-0 VIPs. */
		{ V4(CLIENT4, VIP4, UDP, 40208, 53), .df = true, .frag = true,
		  .mf = true, .frag_id = 7, .payload_len = 1472 },
		{ V6(CLIENT6, VIP6, UDP, 40209, 53), .frag = true, .mf = true,
		  .frag_id = 8, .payload_len = 1448 },
	};
	static const char *const what[] = {
		"from a multicast address", "from the broadcast address",
		"from 0.0.0.0", "from an IPv6 multicast address",
		"from ::", "an IPv4 fragment", "an IPv6 fragment",
	};
	__u8 out[PKT_MAX];
	__u32 out_len;
	size_t i;

	if (!fixture())
		return;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		expect_run(&cases[i], XDP_DROP, XLB_STAT_DROP_TOO_BIG, out,
			   &out_len, what[i]);
}

/* icmp-rate 20: a bucket of 3, refilled at 20 a second. */
static void answers_are_held_to_the_rate(void)
{
	struct pkt_desc big = { V4(CLIENT4, VIP_MTU4_ADDR, TCP, 40210, 80),
				.df = true, .payload_len = 1441 };

	if (!fixture())
		return;
	dp_expect_rate_held(&big, 200, XLB_STAT_ICMP_TOO_BIG,
			    XLB_STAT_DROP_TOO_BIG);
	dp_rate_default();
}

TEST_MAIN(
	TEST(ipv4_with_df_is_told_the_mtu),
	TEST(ipv4_quote_is_what_the_packet_has),
	TEST(ipv6_is_told_the_mtu),
	TEST(never_answered),
	TEST(answers_are_held_to_the_rate),
)
