// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * GUE encapsulation (include/gue.h): a backend of a GUE VIP (XLB_BE_F_GUE
 * in its record) receives the packet behind outer IP, UDP to the GUE port
 * with a source port from the flow hash, and GUE's header with xlb's field
 * naming no previous backend; each byte as the model builds it. The
 * backends' program (decap.bpf.o) gives the inner packet back whole. The
 * MTU is checked with GUE's overhead.
 */
#include <arpa/inet.h>
#include "testlib.h"
#include "dp_fixture.h"
#include "gue.h"
#include "decap.skel.h"
#include "decap_trust.h"


/* Mark the records of a VIP's backends GUE, as the loader does for
 * `xlb vip set VIP --encap gue`. */
static bool vip_gue(__u32 vip_id, bool on)
{
	const struct dp_vip *v = &fx.vips[vip_id];
	struct xlb_backend be;
	__u32 i;

	for (i = 0; i < v->n_ids; i++) {
		if (bpf_map_lookup_elem(fx.maps.backends, &v->ids[i], &be))
			return false;
		be.flags = on ? be.flags | XLB_BE_F_GUE : be.flags & ~XLB_BE_F_GUE;
		if (bpf_map_update_elem(fx.maps.backends, &v->ids[i], &be, BPF_ANY))
			return false;
	}
	return true;
}

static bool gue_port(__u16 port)
{
	fx.cfg.gue_port = htons(port);
	return !dp_write_config(&fx);
}

/*
 * The model: the frame pkt_encap() builds for IPIP, with UDP and GUE put
 * after the outer IP header, and the outer header's protocol, length (and
 * IPv4 checksum) made for them. UDP: source 49152 + 14 bits of the flow
 * hash's upper half, destination port, length, checksum 0. GUE: hlen 5,
 * the inner protocol, flags 0; xlb's field: magic, hops 0, family none.
 */
static size_t gue_model(__u32 vip_id, const struct xlb_flow *flow,
			const __u8 *inner, size_t inner_len, __u16 port,
			__u8 *out, __u32 *backend_id)
{
	__u8 ipip[PKT_MAX];
	int verdict;
	size_t len;
	__u64 hash;

	len = dp_model_forward(&fx, vip_id, flow, inner, inner_len, ipip,
			       &verdict, backend_id);
	dp_model_backend(&fx, vip_id, flow, &hash);
	return pkt_encap_gue(out, ipip, len, 0xc000 | ((__u32)(hash >> 32) & 0x3fff),
			     port);
}

/* A TCP packet of the flow (family 4 or 6) from a client port to dst. */
static size_t flow_frame(int family, const char *dst, __u16 dport,
			 __u16 sport, size_t payload, __u8 *frame,
			 struct xlb_flow *flow)
{
	struct pkt_desc d = {
		.family = family, .proto = IPPROTO_TCP,
		.src = family == 4 ? CLIENT4 : CLIENT6, .dst = dst,
		.sport = sport, .dport = dport, .payload_len = payload,
		.tos = 0x28,
	};
	struct dp_flow f = {
		.family = family, .src = d.src, .dst = dst, .sport = sport,
		.dport = dport, .proto = IPPROTO_TCP,
	};

	*flow = dp_xlb_flow(&f);
	return pkt_build(&d, frame);
}

static struct decap *decap;

/* decap.bpf.o plays every backend of the fixture: their addresses are
 * its tunnel addresses, the VIPs its VIPs. */
static int decap_trust_fixture(int addrs)
{
	size_t v, b;

	for (v = 0; v < sizeof(dp_vip_defs) / sizeof(dp_vip_defs[0]); v++) {
		if (decap_trust_addr(addrs, dp_vip_defs[v].addr, XLB_DECAP_ADDR_VIP))
			return -EIO;
		for (b = 0; b < 4 && dp_vip_defs[v].backends[b]; b++)
			if (decap_trust_addr(addrs, dp_vip_defs[v].backends[b],
					     XLB_DECAP_ADDR_TUNNEL))
				return -EIO;
	}
	return 0;
}

/* decap.bpf.o on the frame: its verdict and output. */
static bool decap_frame(const __u8 *in, __u32 len, __u8 *out, __u32 *out_len,
			__u32 *retval)
{
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = in, .data_size_in = len,
		    .data_out = out, .data_size_out = PKT_MAX);

	if (!decap) {
		decap = decap__open_and_load();
		if (!ASSERT_TRUE(decap != NULL, "load decap.bpf.o") ||
		    !ASSERT_OK(decap_trust_fixture(bpf_map__fd(decap->maps.xlb_decap_addrs)),
			       "decap.bpf.o told the backends and VIPs"))
			return false;
	}
	if (!ASSERT_OK(bpf_prog_test_run_opts(bpf_program__fd(decap->progs.xdp_decap),
					      &opts), "run decap.bpf.o"))
		return false;
	*out_len = opts.data_size_out;
	*retval = opts.retval;
	return true;
}

/* Flows of one VIP: the frame as the model says, every source port in
 * the ephemeral range and more than one, and decap.bpf.o's output the
 * inner packet behind the same Ethernet header. */
static void flows_of(__u32 vip_id, int family, const char *dst, __u16 dport)
{
	__u8 in[PKT_MAX], out[PKT_MAX], want[PKT_MAX], inner[PKT_MAX];
	__u32 out_len, retval, be, i, dlen;
	__u16 sport, first = 0;
	bool spread = false, families[2] = {};
	struct xlb_flow flow;
	size_t len, want_len;

	if (!fixture() || !ASSERT_TRUE(vip_gue(vip_id, true), "VIP made GUE"))
		return;
	for (i = 0; i < 200; i++) {
		len = flow_frame(family, dst, dport, 20000 + i * 7, i % 3 * 200,
				 in, &flow);
		want_len = gue_model(vip_id, &flow, in + PKT_ETH_LEN,
				     len - PKT_ETH_LEN, XLB_GUE_DEFAULT_PORT,
				     want, &be);
		if (!ASSERT_OK(dp_run(&fx, in, len, out, &out_len, &retval), "run"))
			break;
		if (!ASSERT_EQ(retval, XDP_TX, "verdict") ||
		    !ASSERT_EQ(out_len, want_len, "frame length") ||
		    !ASSERT_MEM_EQ(out, want, want_len, "frame as the model builds it")) {
			hexdump("got", out, out_len);
			hexdump("want", want, want_len);
			break;
		}
		families[fx.backends[be].family == 6] = true;
		sport = pkt_get16(out + PKT_ETH_LEN +
				  (fx.backends[be].family == 4 ? 20 : 40));
		ASSERT_GE(sport, 49152, "source port in the ephemeral range");
		spread |= i && sport != first;
		first = i ? first : sport;

		if (!decap_frame(out, out_len, inner, &dlen, &retval))
			break;
		if (!ASSERT_EQ(retval, XDP_PASS, "decap verdict") ||
		    !ASSERT_EQ(dlen, len, "decapsulated length") ||
		    !ASSERT_MEM_EQ(inner + PKT_ETH_LEN, in + PKT_ETH_LEN,
				   len - PKT_ETH_LEN, "the inner packet back"))
			break;
	}
	ASSERT_TRUE(spread, "flows spread over source ports");
	ASSERT_TRUE(families[0] && families[1], "IPv4 and IPv6 backends seen");
	vip_gue(vip_id, false);
}

static void ipv4_flows_in_gue(void)
{
	flows_of(VIP_TCP4, 4, VIP4, 80);
}

static void ipv6_flows_in_gue(void)
{
	flows_of(VIP_TCP6, 6, VIP6, 443);
}

/* The GUE port setting is the destination port; IPIP where not GUE. */
static void gue_port_setting_and_ipip_beside(void)
{
	__u8 in[PKT_MAX], out[PKT_MAX], want[PKT_MAX];
	__u32 out_len, retval, be;
	struct xlb_flow flow;
	size_t len, want_len;
	int verdict;

	if (!fixture() || !ASSERT_TRUE(vip_gue(VIP_TCP4, true), "VIP made GUE") ||
	    !ASSERT_TRUE(gue_port(7000), "port set"))
		return;
	len = flow_frame(4, VIP4, 80, 33333, 10, in, &flow);
	want_len = gue_model(VIP_TCP4, &flow, in + PKT_ETH_LEN, len - PKT_ETH_LEN,
			     7000, want, &be);
	if (ASSERT_OK(dp_run(&fx, in, len, out, &out_len, &retval), "run")) {
		ASSERT_EQ(retval, XDP_TX, "verdict");
		ASSERT_EQ(out_len, want_len, "frame length");
		ASSERT_MEM_EQ(out, want, want_len, "to port 7000");
	}
	gue_port(0);
	vip_gue(VIP_TCP4, false);
	want_len = dp_model_forward(&fx, VIP_TCP4, &flow, in + PKT_ETH_LEN,
				    len - PKT_ETH_LEN, want, &verdict, &be);
	if (ASSERT_OK(dp_run(&fx, in, len, out, &out_len, &retval), "run")) {
		ASSERT_EQ(out_len, want_len, "IPIP frame length");
		ASSERT_MEM_EQ(out, want, want_len, "IPIP again");
	}
}

/* VIP_MTU4's backend sits behind a 1500-byte MTU: an inner packet of
 * 1448 bytes fits with GUE, one of 1449 does not (it would with IPIP). */
static void mtu_counts_gue_overhead(void)
{
	__u8 in[PKT_MAX], out[PKT_MAX];
	struct xlb_counter before, after;
	__u32 out_len, retval;
	struct xlb_flow flow;
	size_t len;

	if (!fixture() || !ASSERT_TRUE(vip_gue(VIP_MTU4, true), "VIP made GUE"))
		return;
	len = flow_frame(4, "192.0.2.50", 80, 40100, 1448 - 40, in, &flow);
	ASSERT_EQ(len - PKT_ETH_LEN, 1448, "packet size");
	if (ASSERT_OK(dp_run(&fx, in, len, out, &out_len, &retval), "run")) {
		ASSERT_EQ(retval, XDP_TX, "1448 bytes fit");
		ASSERT_EQ(out_len, PKT_ETH_LEN + 1500, "a full-size frame");
	}
	before = dp_counter(fx.maps.stats, XLB_STAT_DROP_TOO_BIG);
	len = flow_frame(4, "192.0.2.50", 80, 40101, 1449 - 40, in, &flow);
	if (ASSERT_OK(dp_run(&fx, in, len, out, &out_len, &retval), "run"))
		ASSERT_EQ(retval, XDP_DROP, "1449 bytes do not");
	after = dp_counter(fx.maps.stats, XLB_STAT_DROP_TOO_BIG);
	ASSERT_EQ(after.packets - before.packets, 1, "counted drop_too_big");
	vip_gue(VIP_MTU4, false);
}

TEST_MAIN(TEST(ipv4_flows_in_gue),
	  TEST(ipv6_flows_in_gue),
	  TEST(gue_port_setting_and_ipip_beside),
	  TEST(mtu_counts_gue_overhead))
