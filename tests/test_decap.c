// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The backends' XDP decapsulation (bpf/decap.bpf.c), run with
 * BPF_PROG_TEST_RUN: every tunnelled frame xlb can send (IPIP, IP6IP6, and
 * the mixed IPv6-in-IPv4 and IPv4-in-IPv6) comes out as the inner packet
 * behind the same Ethernet addresses; everything else, and what cannot be
 * decapsulated safely, passes unchanged. A decapsulated frame counts
 * under pass_ipip; one whose inner header is cut short, or whose inner
 * length says more than the frame holds, is dropped. The
 * program is told, as `xlb host setup` tells it, the backend's tunnel
 * addresses and its VIPs (tests/lib/decap_trust.h). GUE and what the
 * program refuses have tests/test_decap_gue.c; the end-to-end tests run
 * the program on real traffic.
 */
#include <errno.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "decap.h"
#include "decap.skel.h"
#include "decap_trust.h"
#include "ip_len.h"
#include "packets.h"
#include "testlib.h"

static const __u8 dmac[6] = { 2, 0, 0, 0, 0, 1 };
static const __u8 smac[6] = { 2, 0, 0, 0, 0, 2 };

static struct decap *skel;

struct run {
	int retval;
	__u8 out[PKT_MAX];
	__u32 out_len;
};

/* The backend's tunnel addresses and VIPs, as the frames below use them. */
static int trust(int addrs)
{
	return decap_trust_addr(addrs, "198.51.100.11", XLB_DECAP_ADDR_TUNNEL) ||
	       decap_trust_addr(addrs, "2001:db8:b::11", XLB_DECAP_ADDR_TUNNEL) ||
	       decap_trust_addr(addrs, "192.0.2.10", XLB_DECAP_ADDR_VIP) ||
	       decap_trust_addr(addrs, "2001:db8:f::10", XLB_DECAP_ADDR_VIP);
}

/* The program, loaded once; false (the case skipped) when it cannot be. */
static bool loaded(void)
{
	static int load_err;

	if (!skel && !load_err) {
		libbpf_set_print(NULL);
		skel = decap__open_and_load();
		if (!skel)
			load_err = -errno;
		else if (trust(bpf_map__fd(skel->maps.xlb_decap_addrs)))
			load_err = -EIO;
	}
	if (!skel)
		test_skip_env(load_err == -EPERM ? "loading BPF needs root"
						 : "cannot load decap.bpf.o");
	return skel != NULL;
}

/* Run the program once on frame; false (the case skipped or failed) when
 * it cannot be loaded or run. */
static bool decap_run(const __u8 *frame, size_t len, struct run *r)
{
	LIBBPF_OPTS(bpf_test_run_opts, opts,
		.data_in = frame, .data_size_in = len,
		.data_out = r->out, .data_size_out = sizeof(r->out),
		.repeat = 1);
	int err;

	if (!loaded())
		return false;
	err = bpf_prog_test_run_opts(bpf_program__fd(skel->progs.xdp_decap), &opts);
	if (!ASSERT_OK(err, "BPF_PROG_TEST_RUN"))
		return false;
	r->retval = opts.retval;
	r->out_len = opts.data_size_out;
	return true;
}

/* The frames counted under reason so far, over all CPUs. */
static __u64 counted(enum xlb_decap_stat reason)
{
	int ncpu = libbpf_num_possible_cpus(), i;
	struct xlb_counter c[ncpu > 0 ? ncpu : 1];
	__u32 key = reason;
	__u64 sum = 0;

	if (ncpu <= 0 || bpf_map__lookup_elem(skel->maps.xlb_decap_stats, &key,
					      sizeof(key), c, sizeof(c), 0))
		return ~0ULL;
	for (i = 0; i < ncpu; i++)
		sum += c[i].packets;
	return sum;
}

/* The inner packet's frame as the backend's stack must see it. */
static size_t inner_frame(int family, __u8 *out)
{
	struct pkt_desc d = {
		.family = family,
		.src = family == 4 ? "203.0.113.11" : "2001:db8:c::11",
		.dst = family == 4 ? "192.0.2.10" : "2001:db8:f::10",
		.proto = IPPROTO_TCP, .sport = 40000, .dport = 80,
		.tcp_flags = PKT_TCP_SYN, .payload_len = 100,
	};

	memcpy(d.dmac, dmac, 6);
	memcpy(d.smac, smac, 6);
	return pkt_build(&d, out);
}

static void check_decap(int outer, int inner, const char *what)
{
	__u8 expect[PKT_MAX], frame[PKT_MAX];
	size_t elen = inner_frame(inner, expect), flen;
	struct run r;
	__u64 before;

	flen = pkt_encap(frame, dmac, smac, outer,
			 outer == 4 ? "198.51.100.2" : "2001:db8:b::2",
			 outer == 4 ? "198.51.100.11" : "2001:db8:b::11", 7,
			 expect + PKT_ETH_LEN, elen - PKT_ETH_LEN, inner);
	if (!ASSERT_GT(flen, 0, "encapsulated frame") || !loaded())
		return;
	before = counted(XLB_DECAP_PASS_IPIP);
	if (!decap_run(frame, flen, &r))
		return;
	ASSERT_EQ(r.retval, XDP_PASS, what);
	ASSERT_EQ(counted(XLB_DECAP_PASS_IPIP), before + 1, "counted as pass_ipip");
	if (ASSERT_EQ(r.out_len, elen, what))
		ASSERT_MEM_EQ(r.out, expect, elen, what);
}

static void ipip(void) { check_decap(4, 4, "IPv4 in IPv4"); }
static void ip6ip6(void) { check_decap(6, 6, "IPv6 in IPv6"); }
static void ipv6_in_ipv4(void) { check_decap(4, 6, "IPv6 in IPv4"); }
static void ipv4_in_ipv6(void) { check_decap(6, 4, "IPv4 in IPv6"); }

/* Outer IPv4 options are skipped with the header (IHL counts them). */
static void ipip_outer_options(void)
{
	__u8 expect[PKT_MAX], frame[PKT_MAX], *ip = frame + PKT_ETH_LEN;
	size_t elen = inner_frame(4, expect), flen;
	struct run r;

	flen = pkt_encap(frame, dmac, smac, 4, "198.51.100.2", "198.51.100.11",
			 0, expect + PKT_ETH_LEN, elen - PKT_ETH_LEN, 4);
	memmove(ip + 24, ip + 20, flen - PKT_ETH_LEN - 20);
	memset(ip + 20, 1, 4);	/* four NOPs */
	ip[0] = 0x46;
	pkt_put16(ip + 2, pkt_get16(ip + 2) + 4);
	pkt_put16(ip + 10, 0);
	pkt_put16(ip + 10, pkt_fold(pkt_sum(ip, 24, 0)));
	if (!decap_run(frame, flen + 4, &r))
		return;
	ASSERT_EQ(r.retval, XDP_PASS, "verdict");
	if (ASSERT_EQ(r.out_len, elen, "length"))
		ASSERT_MEM_EQ(r.out, expect, elen, "inner frame");
}

/* pass_unchanged: the frame leaves exactly as it came. */
static void pass_unchanged(const __u8 *frame, size_t len, const char *what)
{
	struct run r;

	if (!decap_run(frame, len, &r))
		return;
	ASSERT_EQ(r.retval, XDP_PASS, what);
	if (ASSERT_EQ(r.out_len, len, what))
		ASSERT_MEM_EQ(r.out, frame, len, what);
}

static void plain_packets_untouched(void)
{
	__u8 frame[PKT_MAX];

	pass_unchanged(frame, inner_frame(4, frame), "IPv4 TCP");
	pass_unchanged(frame, inner_frame(6, frame), "IPv6 TCP");
	memset(frame, 0, 60);
	pkt_put16(frame + 12, PKT_ETH_P_ARP);
	pass_unchanged(frame, 60, "ARP");
	pkt_put16(frame + 12, PKT_ETH_P_IP);
	pass_unchanged(frame, PKT_ETH_LEN, "IPv4 ethertype, no header");
}

/* What cannot be decapsulated whole is left to the stack as it is, but
 * for a packet to this host whose inner header is cut short: dropped. */
static void unsafe_tunnels_untouched(void)
{
	__u8 inner[PKT_MAX], frame[PKT_MAX];
	size_t ilen = inner_frame(4, inner), flen;
	struct run r;

	flen = pkt_encap(frame, dmac, smac, 4, "198.51.100.2", "198.51.100.11",
			 0, inner + PKT_ETH_LEN, ilen - PKT_ETH_LEN, 4);
	if (decap_run(frame, PKT_ETH_LEN + 20 + 10, &r))
		ASSERT_EQ(r.retval, XDP_DROP, "inner header cut short");
	pkt_put16(frame + PKT_ETH_LEN + 6, 0x2000);	/* MF: a first fragment */
	pass_unchanged(frame, flen, "outer fragment");
	pkt_put16(frame + PKT_ETH_LEN + 6, 0x0001);	/* a later fragment */
	pass_unchanged(frame, flen, "outer later fragment");
	pkt_put16(frame + PKT_ETH_LEN + 6, 0x4000);
	frame[PKT_ETH_LEN] = 0x44;			/* IHL below 5 */
	pass_unchanged(frame, flen, "bad IHL");
}

/*
 * The inner packet of an outer one of family outer, its length field set to
 * len (0: as built), its IPv4 IHL to ihl (0: 5), then pad bytes after it:
 * run, and check the verdict and that it counted under reason.
 */
static void check_inner_len(int outer, int inner, __u16 len, __u8 ihl, size_t pad,
			    __u32 verdict, enum xlb_decap_stat reason, const char *what)
{
	__u8 expect[PKT_MAX], frame[PKT_MAX], *ip = expect + PKT_ETH_LEN;
	size_t elen = inner_frame(inner, expect), flen;
	struct run r;
	__u64 before;

	if (ihl)
		ip[0] = 0x40 | ihl;
	ip_len_set(ip, len ? len : (__u16)ip_len_of(ip));
	memset(expect + elen, 0, pad);
	elen += pad;
	flen = pkt_encap(frame, dmac, smac, outer,
			 outer == 4 ? "198.51.100.2" : "2001:db8:b::2",
			 outer == 4 ? "198.51.100.11" : "2001:db8:b::11", 7,
			 ip, elen - PKT_ETH_LEN, inner);
	if (!ASSERT_GT(flen, 0, "encapsulated frame") || !loaded())
		return;
	before = counted(reason);
	if (!decap_run(frame, flen, &r))
		return;
	ASSERT_EQ(r.retval, verdict, what);
	ASSERT_EQ(counted(reason), before + 1, what);
	if (verdict == XDP_PASS && ASSERT_EQ(r.out_len, elen, what))
		ASSERT_MEM_EQ(r.out, expect, elen, what);
}

/* An inner packet whose length says more than the frame holds is dropped,
 * under a counter of its own, in every pairing of families: what the
 * stack is handed must be there. So is an IPv4 length short of the
 * header's (IHL's) or of the 20 bytes every IPv4 header has, which names
 * no packet. */
static void an_inner_length_past_the_frame_is_dropped(void)
{
	static const int pairs[][2] = { { 4, 4 }, { 6, 6 }, { 4, 6 }, { 6, 4 } };
	size_t i;

	for (i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
		int outer = pairs[i][0], inner = pairs[i][1];
		__u8 built[PKT_MAX];
		__u16 whole;
		char what[64];

		inner_frame(inner, built);
		whole = (__u16)ip_len_of(built + PKT_ETH_LEN);

		snprintf(what, sizeof(what), "IPv%d in IPv%d, one byte short", inner, outer);
		check_inner_len(outer, inner, whole + 1, 0, 0, XDP_DROP,
				XLB_DECAP_DROP_INNER_TRUNCATED, what);
		snprintf(what, sizeof(what), "IPv%d in IPv%d, length 65535", inner, outer);
		check_inner_len(outer, inner, 65535, 0, 0, XDP_DROP,
				XLB_DECAP_DROP_INNER_TRUNCATED, what);
		if (inner != 4)
			continue;
		snprintf(what, sizeof(what), "IPv4 in IPv%d, length 19, IHL 4", outer);
		check_inner_len(outer, inner, 19, 4, 0, XDP_DROP,
				XLB_DECAP_DROP_INNER_TRUNCATED, what);
		snprintf(what, sizeof(what), "IPv4 in IPv%d, length 22, IHL 6", outer);
		check_inner_len(outer, inner, 22, 6, 0, XDP_DROP,
				XLB_DECAP_DROP_INNER_TRUNCATED, what);
	}
}

/* Bytes past the inner packet's length (a link's padding) are no harm:
 * the stack trims them. Passed up, as an exact length is. */
static void bytes_past_the_inner_length_pass(void)
{
	check_inner_len(4, 4, 0, 0, 6, XDP_PASS, XLB_DECAP_PASS_IPIP, "IPIP, padded");
	check_inner_len(6, 6, 0, 0, 6, XDP_PASS, XLB_DECAP_PASS_IPIP, "IP6IP6, padded");
}

TEST_MAIN(TEST(ipip), TEST(ip6ip6), TEST(ipv6_in_ipv4), TEST(ipv4_in_ipv6),
	  TEST(ipip_outer_options), TEST(plain_packets_untouched),
	  TEST(unsafe_tunnels_untouched),
	  TEST(an_inner_length_past_the_frame_is_dropped),
	  TEST(bytes_past_the_inner_length_pass))
