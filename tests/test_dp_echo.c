// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Ping of a VIP address, answered by the datapath (bpf/icmp_echo.h),
 * beyond the table cases of test_dp_verdicts:
 *  - a jumbo request (its data in several buffers) is answered whole;
 *  - an address stops answering once every VIP of it has ping off
 *    (xlb_vip_addrs' no_ping), and answers while one of them has it on;
 *  - a flood is held to icmp-rate answers a second on each CPU, the rest
 *    dropped as drop_echo_rate, and it leaves the too-big answers their
 *    own bucket.
 */
#include <sched.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "testlib.h"
#include "dp_fixture.h"

static const struct pkt_desc ping4 = {
	V4(CLIENT4, VIP4, IPPROTO_ICMP, 0, 0), .icmp_type = 8,
	.icmp_rest = 0x00010001, .payload_len = 56,
};

/* 9,000 bytes of data: the first buffer holds the headers, the program
 * reads nothing beyond them. */
static void a_jumbo_request_is_answered(void)
{
	struct pkt_desc d = ping4;
	__u8 in[PKT_MAX], out[PKT_MAX];
	size_t len;
	__u32 out_len;

	if (!fixture())
		return;
	d.payload_len = 9000;
	len = pkt_build(&d, in);
	if (!ASSERT_GT(len, 9000, "a jumbo request"))
		return;
	if (expect_run(&d, XDP_TX, XLB_STAT_ICMP_ECHO_REPLY, out, &out_len,
		       "jumbo echo request"))
		ASSERT_TRUE(dp_is_echo_reply(in, len, out, out_len),
			    "its reply, whole");
}

/* 192.0.2.10 holds three VIPs of the fixture (TCP, UDP, fragments). */
static void an_address_answers_while_one_of_its_vips_does(void)
{
	struct xlb_vip_key key = { .family = XLB_AF_INET };
	struct xlb_vip_addr a, saved;
	__u8 out[PKT_MAX];
	__u32 out_len;
	int fd;

	if (!fixture())
		return;
	fd = bpf_object__find_map_fd_by_name(fx.obj, XLB_MAP_VIP_ADDRS);
	pkt_addr(4, VIP4, (__u8 *)key.addr);
	if (!ASSERT_OK(bpf_map_lookup_elem(fd, &key, &saved), "the address's record") ||
	    !ASSERT_EQ(saved.vips, 3, "three VIPs"))
		return;
	a = saved;
	a.no_ping = 2;
	ASSERT_OK(bpf_map_update_elem(fd, &key, &a, BPF_EXIST), "two with ping off");
	expect_run(&ping4, XDP_TX, XLB_STAT_ICMP_ECHO_REPLY, out, &out_len,
		   "one VIP with ping on: answered");
	a.no_ping = 3;
	ASSERT_OK(bpf_map_update_elem(fd, &key, &a, BPF_EXIST), "all three off");
	expect_run(&ping4, XDP_DROP, XLB_STAT_DROP_VIP_PORT, out, &out_len,
		   "every VIP with ping off: dropped, untouched");
	ASSERT_OK(bpf_map_update_elem(fd, &key, &saved, BPF_EXIST), "restore");
}

/* A flood held to the rate, and the too-big answers' bucket, another,
 * still full after it. */
static void a_flood_is_held_to_the_rate(void)
{
	const struct pkt_desc big = { V4(CLIENT4, "192.0.2.50", TCP, 40210, 80),
				      .df = true, .payload_len = 1441 };
	__u8 out[PKT_MAX];
	__u32 out_len;

	cpu_set_t one, was;

	if (!fixture())
		return;
	/* On one CPU, so that the flood and the runs after it take from
	 * the same CPU's buckets. */
	CPU_ZERO(&one);
	CPU_SET(0, &one);
	if (!ASSERT_OK(sched_getaffinity(0, sizeof(was), &was), "affinity") ||
	    !ASSERT_OK(sched_setaffinity(0, sizeof(one), &one), "run on CPU 0"))
		return;
	dp_expect_rate_held(&ping4, 200, XLB_STAT_ICMP_ECHO_REPLY,
			    XLB_STAT_DROP_ECHO_RATE);
	/* Still under the flood's rate, the echo bucket empty. */
	expect_run(&ping4, XDP_DROP, XLB_STAT_DROP_ECHO_RATE, out, &out_len,
		   "an echo request after the flood: dropped");
	expect_run(&big, XDP_TX, XLB_STAT_ICMP_TOO_BIG, out, &out_len,
		   "a too-big answer after the flood");
	dp_rate_default();
	sched_setaffinity(0, sizeof(was), &was);
}

TEST_MAIN(
	TEST(a_jumbo_request_is_answered),
	TEST(an_address_answers_while_one_of_its_vips_does),
	TEST(a_flood_is_held_to_the_rate),
)
