// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Hostile frames: truncated, random and mutated ones. The datapath never
 * changes what it passes or drops, and forwards only what a reference
 * classifier finds to be a well-formed packet of a VIP's flow, as the
 * model says.
 */
#include "testlib.h"
#include "dp_fixture.h"

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

/* The fixture's VIP for a flow, 0 when none: the VIP of its port, else
 * the all-port VIP of its address. */
static __u32 ref_vip(const struct xlb_flow *f)
{
	size_t i;
	int all;

	for (all = 0; all < 2; all++) {
		for (i = 0; i < sizeof(dp_vip_defs) / sizeof(dp_vip_defs[0]); i++) {
			const struct dp_vip_def *d = &dp_vip_defs[i];
			__u8 addr[16] = {};

			pkt_addr(d->family, d->addr, addr);
			if ((d->family == 4 ? XLB_AF_INET : XLB_AF_INET6) == f->family &&
			    d->proto == f->proto && d->all_ports == all &&
			    (all || htons(d->port) == f->dport) &&
			    !memcmp(addr, f->dst, 16))
				return d->id;
		}
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
	int run, bad = 0, forwards = 0, echoes = 0, verdict;
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
		/* A ping of a VIP address, answered. */
		if (retval == XDP_TX && dp_is_echo_reply(in, len, out, out_len)) {
			echoes++;
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
					    ref.l3_len, want, &verdict, &be);
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
	printf("  %d runs, %d forwarded, %d echo requests answered\n", RUNS,
	       forwards, echoes);
}

TEST_MAIN(TEST(truncated_packets_are_never_forwarded),
	  TEST(garbage_is_passed_or_dropped_unchanged),
	  TEST(fuzz_never_aborts_or_forwards_what_is_not_a_vip_packet))
