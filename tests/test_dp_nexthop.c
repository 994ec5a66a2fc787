// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The next hop after the kernel's routes and neighbours: changes to them
 * apply within the per-CPU FIB cache's lifetime (bpf/fib.h), and too big
 * an encapsulated packet is dropped, on a lookup and from the cache.
 */
#include <sched.h>
#include <time.h>
#include "testlib.h"
#include "dp_fixture.h"

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

TEST_MAIN(TEST(route_and_neighbour_changes_apply_within_a_second),
	  TEST(mtu_checked_with_and_without_the_cache))
