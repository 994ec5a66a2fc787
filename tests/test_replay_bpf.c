// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * `xlb replay --via bpf` and `--via model` agree flow by flow: every packet
 * of a trace, run through the XDP program with BPF_PROG_TEST_RUN (Maglev
 * table installed in its maps, before and after a change), reaches the
 * backend the userspace table names for its flow. Checked on a generated
 * trace (both families, TCP and UDP, server ports in more batches than the
 * VIP map holds), with equal and unequal weights, another table size and
 * another flow hash key, and on the real captures when present.
 *
 * At a path MTU (--mtu), the client's packets run at their captured
 * length: those too big once encapsulated are answered with ICMP too big
 * naming the right MTU, counted as many as the frames' lengths say, and
 * every flow keeps the backend it has without a path MTU, also one whose
 * every packet was too big; frames longer than a page (jumbo) are
 * forwarded whole when they fit.
 */
#include <dirent.h>
#include <errno.h>
#include "replay_bpf.h"
#include "replay_fixtures.h"
#include "packets.h"
#include "pcap_write.h"
#include "testlib.h"

static const __u64 other_key[2] = { 0x1122334455667788ULL, 0x99aabbccddeeff00ULL };

/* Read captures keeping their packets, flows hashed with key. */
static bool load(int n, const char *const *paths, const __u64 key[2],
		 struct trace *t, struct replay_flows *rf,
		 struct replay_packets *pk)
{
	int i;

	memset(t, 0, sizeof(*t));
	memset(pk, 0, sizeof(*pk));
	for (i = 0; i < n; i++)
		if (!ASSERT_OK(trace_read(t, paths[i], replay_packets_add, pk),
			       paths[i]))
			return false;
	if (!ASSERT_OK(replay_flows_build(t, key, rf), "flows"))
		return false;
	replay_packets_resolve(pk, rf);
	return true;
}

/* The model's and the program's backend for every flow: how many differ. */
static long compare(struct replay_bpf *dp, __u32 m, const struct lb_backend *set,
		    size_t n, const struct replay_flows *rf,
		    const struct replay_packets *pk)
{
	struct lb_params p = { .table_size = m };
	int *model = fx_assign(LB_MAGLEV, m, 100, set, n, rf);
	int *bpf = calloc(rf->n, sizeof(*bpf));
	long differ = -1;
	size_t i;

	if (model && bpf && !replay_assign_bpf(dp, &p, set, n, rf, pk, bpf, NULL)) {
		differ = 0;
		for (i = 0; i < rf->n; i++)
			differ += model[i] != bpf[i];
	}
	free(model);
	free(bpf);
	return differ;
}

static bool have_root(void)
{
	if (test_have_root())
		return true;
	test_skip_env("needs root: loads the XDP program");
	return false;
}

static void generated_trace_flow_by_flow(void)
{
	const char *path = fx_path("trace.pcap");
	struct replay_packets pk;
	struct replay_flows rf;
	struct replay_bpf *dp;
	struct lb_backend *set;
	struct trace t;
	size_t n;

	if (!have_root())
		return;
	/* 600 server ports: three batches of the 256-key VIP map. */
	if (!ASSERT_OK(fx_gentrace("-n 8000 -s 11 --ports 600 -o %s", path),
		       "gentrace") ||
	    !load(1, &path, fx_key, &t, &rf, &pk) ||
	    !ASSERT_OK(replay_bpf_open(fx_key, 0, &dp), "load the program"))
		return;
	printf("  %zu flows, %zu packets\n", rf.n, pk.n);
	set = fx_set(101);
	for (n = 10; n <= 100; n += 90) {
		ASSERT_EQ(compare(dp, 65537, set, n, &rf, &pk), 0, "N backends");
		ASSERT_EQ(compare(dp, 65537, set, n - 1, &rf, &pk), 0, "one left");
	}
	ASSERT_EQ(compare(dp, 65537, set, 11, &rf, &pk), 0, "one joined");
	set[0].weight = 3;
	set[1].weight = 0;
	set[2].weight = 2;
	ASSERT_EQ(compare(dp, 65537, set, 10, &rf, &pk), 0, "weights");
	ASSERT_EQ(compare(dp, 251, set, 10, &rf, &pk), 0, "M = 251");
	replay_bpf_close(dp);

	/* Another seed: the program hashes with the key in its config, and
	 * flows hashed with the old one now land elsewhere. */
	if (!ASSERT_OK(replay_bpf_open(other_key, 0, &dp), "load again"))
		return;
	ASSERT_GT(compare(dp, 65537, set, 10, &rf, &pk), rf.n / 2,
		  "the comparison sees a wrong key");
	replay_flows_free(&rf);
	if (!ASSERT_OK(replay_flows_build(&t, other_key, &rf), "rehash"))
		return;
	replay_packets_resolve(&pk, &rf);
	ASSERT_EQ(compare(dp, 65537, set, 10, &rf, &pk), 0, "other key");
	replay_bpf_close(dp);
	replay_flows_free(&rf);
	replay_packets_free(&pk);
	trace_free(&t);
	free(set);
}

static void real_captures_flow_by_flow(void)
{
	const char *dir = getenv("XLB_PCAP_DIR") ?: "../shared/pcaps";
	char **paths = calloc(1024, sizeof(*paths));
	struct replay_packets pk;
	struct replay_flows rf;
	struct replay_bpf *dp;
	struct lb_backend *set;
	struct dirent *e;
	struct trace t;
	int n = 0, *model;
	DIR *d;

	if (!have_root())
		return;
	d = opendir(dir);
	while (d && paths && (e = readdir(d)) && n < 1024) {
		if (strstr(e->d_name, ".pcap")) {
			paths[n] = malloc(PATH_MAX);
			snprintf(paths[n++], PATH_MAX, "%s/%s", dir, e->d_name);
		}
	}
	if (d)
		closedir(d);
	if (!n) {
		test_skip("no captures (set XLB_PCAP_DIR)");
		free(paths);
		return;
	}
	if (!load(n, (const char *const *)paths, fx_key, &t, &rf, &pk) ||
	    !ASSERT_OK(replay_bpf_open(fx_key, 0, &dp), "load the program"))
		return;
	printf("  %d captures: %zu flows, %zu packets\n", n, rf.n, pk.n);
	set = fx_set(10);
	ASSERT_EQ(compare(dp, 65537, set, 10, &rf, &pk), 0, "10 backends");
	ASSERT_EQ(compare(dp, 65537, set, 9, &rf, &pk), 0, "one left");
	replay_bpf_close(dp);
	/* At MTU 1500, some of their packets are answered, some from
	 * loopback clients dropped: every flow keeps its backend. */
	model = fx_assign(LB_MAGLEV, 65537, 100, set, 10, &rf);
	if (model && ASSERT_OK(replay_bpf_open(fx_key, 1500, &dp), "MTU 1500")) {
		int *got = calloc(rf.n, sizeof(*got));
		struct lb_params p = { .table_size = 65537 };
		struct replay_too_big tb = {};
		long differ = 0;
		size_t i;

		if (got && ASSERT_OK(replay_assign_bpf(dp, &p, set, 10, &rf, &pk,
						       got, &tb), "MTU 1500")) {
			for (i = 0; i < rf.n; i++)
				differ += got[i] != model[i];
			printf("  MTU 1500: %llu packets of %llu flows too big, "
			       "%llu dropped\n", (unsigned long long)tb.packets,
			       (unsigned long long)tb.flows,
			       (unsigned long long)tb.dropped);
			ASSERT_EQ(differ, 0, "MTU 1500: the model's backends");
			ASSERT_GT(tb.packets, 0, "MTU 1500: packets too big");
		}
		free(got);
		replay_bpf_close(dp);
	}
	free(model);
	replay_flows_free(&rf);
	replay_packets_free(&pk);
	trace_free(&t);
	free(set);
	while (n--)
		free(paths[n]);
	free(paths);
}

/* The IP length of every packet of a capture of Ethernet frames without
 * VLAN tags: the frame's length on the wire less its Ethernet header. */
struct wire_sizes {
	struct {
		size_t trace_flow;
		__u32 ip_len;
		bool from_client;
	} *p;
	size_t n, cap;
};

static int keep_wire_size(void *ctx, const struct trace_packet *pkt)
{
	struct wire_sizes *ws = ctx;

	if (ws->n == ws->cap) {
		size_t cap = ws->cap ? 2 * ws->cap : 1024;
		void *p = realloc(ws->p, cap * sizeof(*ws->p));

		if (!p)
			return -ENOMEM;
		ws->p = p;
		ws->cap = cap;
	}
	ws->p[ws->n].trace_flow = pkt->flow;
	ws->p[ws->n].ip_len = pkt->wire_len - PKT_ETH_LEN;
	ws->p[ws->n++].from_client = pkt->from_client;
	return 0;
}

static bool wire_sizes(const char *path, struct wire_sizes *ws)
{
	struct trace t = {};
	bool ok;

	memset(ws, 0, sizeof(*ws));
	ok = ASSERT_OK(trace_read(&t, path, keep_wire_size, ws), "sizes");
	trace_free(&t);
	return ok;
}

/* What a path MTU must answer, from the sizes alone: the packets the
 * balancer receives (the client's; the server's go straight to the
 * client) whose IP packet and an outer IPv6 header exceed it. */
static void expect_too_big(const struct wire_sizes *ws,
			   const struct replay_flows *rf, __u32 mtu,
			   struct replay_too_big *want)
{
	bool *seen = calloc(rf->n, sizeof(*seen));
	size_t i;

	memset(want, 0, sizeof(*want));
	for (i = 0; seen && i < ws->n; i++) {
		__u32 flow = rf->of_trace[ws->p[i].trace_flow];

		if (!ws->p[i].from_client || ws->p[i].ip_len + 40 <= mtu)
			continue;
		want->packets++;
		if (!seen[flow]) {
			seen[flow] = true;
			want->flows++;
		}
	}
	free(seen);
}

/* Run the flows at path MTU mtu: every flow on the backend of base (its
 * assignment without one), the answers as want says, each naming the
 * MTU less 40 (IPv6: at least 1280). */
static void check_at_mtu(__u32 mtu, const struct lb_backend *set, size_t n,
			 const struct replay_flows *rf,
			 const struct replay_packets *pk, const int *base,
			 const struct replay_too_big *want)
{
	struct lb_params p = { .table_size = 65537 };
	int *got = calloc(rf->n, sizeof(*got));
	struct replay_too_big tb = {};
	struct replay_bpf *dp;
	long differ = 0;
	size_t i;
	char what[64];

	snprintf(what, sizeof(what), "MTU %u: load the program", mtu);
	if (!got || !ASSERT_OK(replay_bpf_open(fx_key, mtu, &dp), what)) {
		free(got);
		return;
	}
	snprintf(what, sizeof(what), "MTU %u: the run", mtu);
	if (ASSERT_OK(replay_assign_bpf(dp, &p, set, n, rf, pk, got, &tb), what)) {
		for (i = 0; i < rf->n; i++)
			differ += got[i] != base[i];
		printf("  MTU %u: %llu packets of %llu flows too big\n", mtu,
		       (unsigned long long)tb.packets,
		       (unsigned long long)tb.flows);
		ASSERT_EQ(differ, 0, "flows on their backend without a path MTU");
		ASSERT_EQ(tb.packets, want->packets, "packets answered");
		ASSERT_EQ(tb.flows, want->flows, "flows answered");
		ASSERT_EQ(tb.dropped, want->dropped, "dropped, never answered");
		ASSERT_EQ(tb.mtu4, want->mtu4, "next-hop MTU of IPv4's answers");
		ASSERT_EQ(tb.mtu6, want->mtu6, "MTU of IPv6's answers");
	}
	replay_bpf_close(dp);
	free(got);
}

static void generated_trace_at_path_mtu(void)
{
	const char *path = fx_path("mtu.pcap");
	static const __u32 mtus[] = { 1500, 1300 };
	struct replay_too_big want;
	struct replay_packets pk;
	struct replay_flows rf;
	struct replay_bpf *dp;
	struct wire_sizes ws;
	struct lb_backend *set;
	int *base;
	struct trace t;
	size_t i;

	if (!have_root())
		return;
	/* Payloads up to 1448 bytes: IP packets up to 1488 (IPv4) and 1508
	 * (IPv6), some of them more than 1500 less 40. */
	if (!ASSERT_OK(fx_gentrace("-n 4000 -s 13 --ports 300 -o %s", path),
		       "gentrace") ||
	    !load(1, &path, fx_key, &t, &rf, &pk) || !wire_sizes(path, &ws))
		return;
	set = fx_set(10);
	base = fx_assign(LB_MAGLEV, 65537, 100, set, 10, &rf);
	if (ASSERT_OK(replay_bpf_open(fx_key, 0, &dp), "without a path MTU")) {
		ASSERT_EQ(compare(dp, 65537, set, 10, &rf, &pk), 0,
			  "without a path MTU, the model's backends");
		replay_bpf_close(dp);
	}
	for (i = 0; base && i < sizeof(mtus) / sizeof(mtus[0]); i++) {
		expect_too_big(&ws, &rf, mtus[i], &want);
		ASSERT_GT(want.packets, 10, "the trace has packets too big");
		want.mtu4 = mtus[i] - 40;
		want.mtu6 = mtus[i] - 40 < 1280 ? 1280 : mtus[i] - 40;
		check_at_mtu(mtus[i], set, 10, &rf, &pk, base, &want);
	}
	free(base);
	free(set);
	free(ws.p);
	replay_flows_free(&rf);
	replay_packets_free(&pk);
	trace_free(&t);
}

/* One packet of a built capture: family, protocol, client port, its IP
 * length, from the client or the server, the IP length its header claims
 * when only the headers were captured (0: all of it), the client. */
struct built_packet {
	int family;
	__u8 proto;
	__u16 sport;
	__u32 ip_len;
	bool from_server;
	__u8 tcp_flags;
	__u32 claimed;
	const char *client;	/* NULL: 198.51.100.7 / 2001:db8:c::7 */
};

static const struct built_packet built[] = {
	{ .family = 4, .proto = IPPROTO_TCP, .sport = 40001, .ip_len = 9000 },
	{ .family = 6, .proto = IPPROTO_UDP, .sport = 40002, .ip_len = 1500 },
	/* A segment the sender's NIC cut up later: 60000 bytes claimed. */
	{ .family = 4, .proto = IPPROTO_TCP, .sport = 40003, .ip_len = 40,
	  .claimed = 60000 },
	/* 1460 fits 1500 exactly, 1461 does not. */
	{ .family = 4, .proto = IPPROTO_UDP, .sport = 40004, .ip_len = 1460 },
	{ .family = 6, .proto = IPPROTO_TCP, .sport = 40005, .ip_len = 1461 },
	/* A SYN, and the server's 8040 bytes back. */
	{ .family = 4, .proto = IPPROTO_TCP, .sport = 40006, .ip_len = 40,
	  .tcp_flags = PKT_TCP_SYN },
	{ .family = 4, .proto = IPPROTO_TCP, .sport = 40006, .ip_len = 8040,
	  .from_server = true },
	/* Too big from loopback: never answered, dropped. */
	{ .family = 6, .proto = IPPROTO_UDP, .sport = 40007, .ip_len = 1500,
	  .client = "::1" },
};

static bool write_built(const char *path)
{
	static __u8 frame[PKT_MAX];
	struct xlb_pcap_writer *w;
	size_t i, len;
	bool ok = true;

	if (!ASSERT_OK(xlb_pcap_create(path, &w), "create the capture"))
		return false;
	for (i = 0; i < sizeof(built) / sizeof(built[0]); i++) {
		const struct built_packet *b = &built[i];
		const char *client = b->client ? b->client :
				     b->family == 4 ? "198.51.100.7" : "2001:db8:c::7";
		const char *server = b->family == 4 ? "192.0.2.80" : "2001:db8:5::1";
		size_t hdr = (b->family == 4 ? 20 : 40) +
			     (b->proto == IPPROTO_TCP ? 20 : 8);
		struct pkt_desc d = {
			.family = b->family,
			.src = b->from_server ? server : client,
			.dst = b->from_server ? client : server,
			.proto = b->proto,
			.sport = b->from_server ? 443 : b->sport,
			.dport = b->from_server ? b->sport : 443,
			.tcp_flags = b->tcp_flags,
			.payload_len = b->ip_len - hdr,
		};

		len = pkt_build(&d, frame);
		if (b->claimed)
			pkt_put16(frame + PKT_ETH_LEN + 2, b->claimed);
		ok &= ASSERT_OK(xlb_pcap_add(w, frame, len, 1000 * (i + 1)), "add");
	}
	return ASSERT_OK(xlb_pcap_close(w), "write the capture") && ok;
}

/* Hand-built packets (above): each too-big flow has that one packet, its
 * backend learnt without the payload; a jumbo frame of several buffers
 * forwarded whole at MTU 9100, the TSO segment cut still too big at the
 * largest MTU; the server's packet never counted. */
static void built_capture_at_path_mtu(void)
{
	const char *path = fx_path("built.pcap");
	static const struct {
		__u32 mtu;
		struct replay_too_big want;
	} cases[] = {
		/* the first two, the third, the fifth; the last dropped */
		{ 1500, { 4, 4, 1, 1460, 1460 } },
		{ 1280, { 5, 5, 1, 1240, 1280 } },	/* and the fourth */
		{ 9100, { 1, 1, 0, 9060, 0 } },		/* the third */
		{ REPLAY_BPF_MTU_MAX, { 1, 1, 0, REPLAY_BPF_MTU_MAX - 40, 0 } },
	};
	struct replay_packets pk;
	struct replay_flows rf;
	struct lb_backend *set;
	struct trace t;
	int *base;
	size_t i;

	if (!have_root() || !write_built(path) ||
	    !load(1, &path, fx_key, &t, &rf, &pk))
		return;
	ASSERT_EQ(rf.n, 7, "flows");
	set = fx_set(10);
	base = fx_assign(LB_MAGLEV, 65537, 100, set, 10, &rf);
	for (i = 0; base && i < sizeof(cases) / sizeof(cases[0]); i++)
		check_at_mtu(cases[i].mtu, set, 10, &rf, &pk, base,
			     &cases[i].want);
	free(base);
	free(set);
	replay_flows_free(&rf);
	replay_packets_free(&pk);
	trace_free(&t);
}

TEST_MAIN(
	TEST(generated_trace_flow_by_flow),
	TEST(real_captures_flow_by_flow),
	TEST(generated_trace_at_path_mtu),
	TEST(built_capture_at_path_mtu),
)
