// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The datapath's verdict on each kind of packet, from the table of cases
 * in dp_fixture.h: forwarded to the backend the table names (through
 * VLAN tags, IP options, IPv6 extension headers, as fragments and as ICMP
 * errors), an echo request to a VIP address answered, or passed to the
 * kernel or dropped, untouched, with the one reason counted. The build by clang 19 must give the same verdicts.
 */
#include "testlib.h"
#include "dp_fixture.h"

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
					    l3_len, want,
					    &verdict, &be);
		ASSERT_EQ(verdict, c->verdict, "the case's verdict matches its routes");
		vip0 = dp_counter(fx.maps.vip_stats, c->vip);
		be0 = dp_counter(fx.maps.backend_stats, be);
	} else if (c->reason != XLB_STAT_ICMP_ECHO_REPLY) {
		memcpy(want, in, len);
		want_len = len;
	}
	read_stats(before);
	if (!ASSERT_OK(dp_run(&fx, in, len, out, &out_len, &retval), c->name))
		return;
	read_stats(after);

	/* An echo reply: the request made its reply (dp_is_echo_reply()). */
	if (c->reason == XLB_STAT_ICMP_ECHO_REPLY &&
	    ASSERT_TRUE(dp_is_echo_reply(in, len, out, out_len), c->name)) {
		memcpy(want, out, out_len);
		want_len = out_len;
	}
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
	  TEST(clang19_build_passes_the_table_cases))
