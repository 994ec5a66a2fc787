// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The encapsulated output: random flows reach the backend userspace
 * computes from the flow hash and the table, in the frame the model
 * builds, and an independent decoder (tshark) reads the outputs as the
 * addresses the model names, with good checksums.
 */
#include "pcap_write.h"
#include "testlib.h"
#include "dp_fixture.h"

/* ------------------------------------------------------------------ */
/* Random flows: the backend is the one userspace computes              */

#define RANDOM_FLOWS	100000

/* The VIP's backend (its index in v->ids) that an output frame's outer
 * destination names, or -1: what the program did, not what the model
 * says it should. */
static int sent_to(const struct dp_vip *v, const __u8 *frame, __u32 len)
{
	__u16 type = len >= PKT_ETH_LEN ? pkt_get16(frame + 12) : 0;
	int family = type == PKT_ETH_P_IP ? 4 : type == PKT_ETH_P_IPV6 ? 6 : 0;
	const __u8 *dst = frame + PKT_ETH_LEN + (family == 4 ? 16 : 24);
	__u32 i;

	if (!family || len < PKT_ETH_LEN + (family == 4 ? 20 : 40))
		return -1;
	for (i = 0; i < v->n_ids; i++) {
		const struct dp_backend *b = &fx.backends[v->ids[i]];

		if (b->family == family && !memcmp(b->bin, dst, family == 4 ? 4 : 16))
			return i;
	}
	return -1;
}

static void random_flows_family(int family, __u32 vip_id)
{
	__u8 in[PKT_MAX], out[PKT_MAX], want[PKT_MAX];
	const struct dp_vip *v = &fx.vips[vip_id];
	struct xlb_counter before[DP_MAX_VIP_BACKENDS];
	bool seen[DP_MAX_VIP_BACKENDS] = {};
	__u32 out_len, retval, be, k;
	int i, wrong = 0, distinct = 0, counted = 0, verdict, to;
	__u64 rng = 0xf10f ^ family, packets = 0;
	struct xlb_flow flow;
	size_t len, want_len;

	if (!ASSERT_EQ(v->n_ids, DP_MAX_VIP_BACKENDS, "the VIP's backends"))
		return;
	for (k = 0; k < v->n_ids; k++)
		before[k] = dp_counter(fx.maps.backend_stats, v->ids[k]);
	for (i = 0; i < RANDOM_FLOWS; i++) {
		len = random_flow_frame(family, &rng, in, &flow);
		want_len = dp_model_forward(&fx, vip_id, &flow, in + PKT_ETH_LEN,
					    len - PKT_ETH_LEN, want, &verdict, &be);
		if (!ASSERT_OK(dp_run(&fx, in, len, out, &out_len, &retval), "run"))
			return;
		if (retval != XDP_TX || out_len != want_len || memcmp(out, want, want_len)) {
			if (wrong++ < 3)
				hexdump("output differs from the model", out, out_len);
		}
		/* The backend the output frame went to. */
		to = retval == XDP_TX ? sent_to(v, out, out_len) : -1;
		if (to >= 0) {
			distinct += !seen[to];
			seen[to] = true;
		}
	}
	ASSERT_EQ(wrong, 0, family == 4 ? "ipv4 flows off the model" : "ipv6 flows off the model");
	ASSERT_EQ(distinct, DP_MAX_VIP_BACKENDS, "every backend sent flows (outer destinations)");
	/* And as the program counted them, per backend. */
	for (k = 0; k < v->n_ids; k++) {
		struct xlb_counter after = dp_counter(fx.maps.backend_stats, v->ids[k]);

		counted += after.packets > before[k].packets;
		packets += after.packets - before[k].packets;
	}
	ASSERT_EQ(counted, DP_MAX_VIP_BACKENDS, "every backend counted packets");
	ASSERT_EQ(packets, RANDOM_FLOWS, "packets counted for the VIP's backends");
}

static void random_flows_reach_the_backend_userspace_computes(void)
{
	if (!fixture())
		return;
	random_flows_family(4, VIP_RANDOM4);
	random_flows_family(6, VIP_RANDOM6);
}

/* ------------------------------------------------------------------ */
/* An independent decoder: tshark reads the encapsulated outputs        */

struct decoded_expect {
	int outer_family, inner_family;
	char outer_src[INET6_ADDRSTRLEN], outer_dst[INET6_ADDRSTRLEN];
	char inner_src[INET6_ADDRSTRLEN], inner_dst[INET6_ADDRSTRLEN];
	bool l4_checksum;	/* a whole TCP/UDP segment inside */
};

/* Field i (0-based) of a comma-separated tshark occurrence list. */
static void occurrence(const char *list, int i, char *out, size_t cap)
{
	const char *p = list, *comma;
	size_t n;

	while (i-- > 0 && p)
		p = (p = strchr(p, ',')) ? p + 1 : NULL;
	out[0] = 0;
	if (!p)
		return;
	comma = strchr(p, ',');
	n = comma ? (size_t)(comma - p) : strlen(p);
	snprintf(out, cap, "%.*s", (int)(n < cap ? n : cap - 1), p);
}


/* The addresses an output frame must show, from the model. */
static struct decoded_expect expect_of(const __u8 *frame, bool l4_checksum)
{
	struct decoded_expect e = { .l4_checksum = l4_checksum };
	const __u8 *outer = frame + PKT_ETH_LEN, *inner;

	e.outer_family = pkt_get16(frame + 12) == PKT_ETH_P_IP ? 4 : 6;
	text_addr(e.outer_family, outer + (e.outer_family == 4 ? 12 : 8), e.outer_src);
	text_addr(e.outer_family, outer + (e.outer_family == 4 ? 16 : 24), e.outer_dst);
	inner = outer + (e.outer_family == 4 ? 20 : 40);
	e.inner_family = inner[0] >> 4;
	text_addr(e.inner_family, inner + (e.inner_family == 4 ? 12 : 8), e.inner_src);
	text_addr(e.inner_family, inner + (e.inner_family == 4 ? 16 : 24), e.inner_dst);
	return e;
}

enum { F_NUM, F_IP_SRC, F_IP_DST, F_IP_CSUM, F_IP_TTL, F_IP_PROTO, F_IP6_SRC,
       F_IP6_DST, F_IP6_HLIM, F_IP6_NXT, F_TCP_CSUM, F_UDP_CSUM, F_MALFORMED,
       F__COUNT };

static bool check_decoded_line(char *line, const struct decoded_expect *e, int frame,
			       bool report)
{
	char *f[F__COUNT], got[INET6_ADDRSTRLEN], *p = line;
	bool ok = true;
	int i;

	for (i = 0; i < F__COUNT; i++) {
		char *bar = strchr(p, '|');

		f[i] = p;
		if (bar)
			*bar = 0;
		p = bar ? bar + 1 : p + strlen(p);
	}
#define EXPECT_FIELD(list, idx, want, what) do {				\
	occurrence(list, idx, got, sizeof(got));				\
	if (strcmp(got, want)) {						\
		if (report)							\
			printf("  frame %d: %s: decoded '%s', expected '%s'\n", \
			       frame, what, got, want);				\
		ok = false;							\
	}									\
} while (0)
	if (e->outer_family == 4) {
		EXPECT_FIELD(f[F_IP_SRC], 0, e->outer_src, "outer source");
		EXPECT_FIELD(f[F_IP_DST], 0, e->outer_dst, "outer destination");
		EXPECT_FIELD(f[F_IP_TTL], 0, "64", "outer ttl");
		EXPECT_FIELD(f[F_IP_PROTO], 0, e->inner_family == 4 ? "4" : "41", "outer protocol");
	} else {
		EXPECT_FIELD(f[F_IP6_SRC], 0, e->outer_src, "outer source");
		EXPECT_FIELD(f[F_IP6_DST], 0, e->outer_dst, "outer destination");
		EXPECT_FIELD(f[F_IP6_HLIM], 0, "64", "outer hop limit");
		EXPECT_FIELD(f[F_IP6_NXT], 0, e->inner_family == 4 ? "4" : "41", "outer next header");
	}
	i = e->outer_family == e->inner_family;
	EXPECT_FIELD(e->inner_family == 4 ? f[F_IP_SRC] : f[F_IP6_SRC], i, e->inner_src, "inner source");
	EXPECT_FIELD(e->inner_family == 4 ? f[F_IP_DST] : f[F_IP6_DST], i, e->inner_dst, "inner destination");
	/* Checksum status 1 is "good", 0 "bad"; every one present is good. */
	if (strchr(f[F_IP_CSUM], '0') || strchr(f[F_TCP_CSUM], '0') ||
	    strchr(f[F_UDP_CSUM], '0')) {
		if (report)
			printf("  frame %d: a bad checksum: ip '%s' tcp '%s' udp '%s'\n",
			       frame, f[F_IP_CSUM], f[F_TCP_CSUM], f[F_UDP_CSUM]);
		ok = false;
	}
	if (e->l4_checksum && !strchr(f[F_TCP_CSUM], '1') && !strchr(f[F_UDP_CSUM], '1')) {
		if (report)
			printf("  frame %d: transport checksum not verified\n", frame);
		ok = false;
	}
	if (*f[F_MALFORMED]) {
		if (report)
			printf("  frame %d: tshark finds it malformed\n", frame);
		ok = false;
	}
#undef EXPECT_FIELD
	return ok;
}

static void tshark_decodes_the_encapsulated_outputs(void)
{
	static struct decoded_expect expect[2000];
	char path[] = "/tmp/xlb-datapath-XXXXXX", cmd[1024], line[4096];
	__u8 in[PKT_MAX], out[PKT_MAX];
	struct xlb_pcap_writer *w = NULL;
	size_t i, len, l3_off, l3_len;
	int fd, n = 0, decoded = 0, control;
	__u32 out_len, retval;
	struct xlb_flow flow;
	__u64 rng = 0xdec0de;
	FILE *ts;

	if (!fixture())
		return;
	if (system("command -v tshark >/dev/null 2>&1")) {
		test_skip_env("tshark not installed (scripts/deps.sh installs it)");
		return;
	}
	fd = mkstemp(path);
	if (!ASSERT_TRUE(fd >= 0, "mkstemp"))
		return;
	close(fd);
	if (!ASSERT_OK(xlb_pcap_create(path, &w), "pcap create"))
		goto cleanup;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct dp_case *c = &cases[i];

		if (c->reason != XLB_STAT_FORWARD)
			continue;
		len = build_case(c, in, &l3_off, &l3_len);
		if (!ASSERT_OK(dp_run(&fx, in, len, out, &out_len, &retval), c->name))
			goto cleanup;
		expect[n] = expect_of(out, !c->in.frag && !c->quoted.family);
		xlb_pcap_add(w, out, out_len, n++);
	}
	for (i = 0; i < 1000; i++) {
		len = random_flow_frame(i % 2 ? 6 : 4, &rng, in, &flow);
		if (!ASSERT_OK(dp_run(&fx, in, len, out, &out_len, &retval), "random flow"))
			goto cleanup;
		expect[n] = expect_of(out, true);
		xlb_pcap_add(w, out, out_len, n++);
	}
	/* A control: the same frame with its outer IPv4 checksum broken
	 * must be reported bad, or the check above proves nothing. */
	do {
		len = random_flow_frame(4, &rng, in, &flow);
		dp_run(&fx, in, len, out, &out_len, &retval);
	} while (pkt_get16(out + 12) != PKT_ETH_P_IP);
	out[PKT_ETH_LEN + 10] ^= 0xff;
	control = n;
	expect[n] = expect_of(out, true);
	xlb_pcap_add(w, out, out_len, n++);
	if (!ASSERT_OK(xlb_pcap_close(w), "pcap write"))
		goto cleanup;
	w = NULL;

	snprintf(cmd, sizeof(cmd),
		 "tshark -r %s --disable-protocol dns --disable-protocol mdns -o ip.check_checksum:TRUE "
		 "-o tcp.check_checksum:TRUE -o udp.check_checksum:TRUE -T fields "
		 "-E separator='|' -e frame.number -e ip.src -e ip.dst "
		 "-e ip.checksum.status -e ip.ttl -e ip.proto -e ipv6.src -e ipv6.dst "
		 "-e ipv6.hlim -e ipv6.nxt -e tcp.checksum.status -e udp.checksum.status "
		 "-e _ws.malformed 2>/dev/null", path);
	ts = popen(cmd, "r");
	if (!ASSERT_TRUE(ts != NULL, "run tshark"))
		goto cleanup;
	while (fgets(line, sizeof(line), ts)) {
		int num = atoi(line) - 1;
		bool ok;

		line[strcspn(line, "\n")] = 0;
		if (num < 0 || num >= n)
			continue;
		decoded++;
		if (num == control) {
			ASSERT_TRUE(!check_decoded_line(line, &expect[num], num + 1, false),
				    "tshark reports the broken control checksum");
			continue;
		}
		ok = check_decoded_line(line, &expect[num], num + 1, true);
		ASSERT_TRUE(ok, "decoded frame as the model says");
	}
	ASSERT_OK(pclose(ts), "tshark exit status");
	ASSERT_EQ(decoded, n, "frames decoded");
cleanup:
	if (w)
		xlb_pcap_close(w);
	unlink(path);
}

TEST_MAIN(TEST(random_flows_reach_the_backend_userspace_computes),
	  TEST(tshark_decodes_the_encapsulated_outputs))
