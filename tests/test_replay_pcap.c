// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Reading captures for replay: every supported link type gives the flows
 * the generator wrote (client, server, packets, bytes), pcapng reads like
 * pcap, both directions of a connection are one flow opened by its SYN
 * sender, headers the parser must step over are stepped over, and what is
 * not a TCP/UDP packet is counted by reason. Bad files are refused with a
 * message naming them; a link type that cannot be parsed is reported and
 * skipped, never guessed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <pcap/pcap.h>
#include "pcap_write.h"
#include "packets.h"
#include "replay_fixtures.h"
#include "testlib.h"

#define FLOWS	3000

static const char *const links[] = {
	"ether", "vlan", "qinq", "sll", "sll2", "raw", "null", "loop",
};

struct expect {
	char line[256];
};

/* The generator's list: "family proto client cport server sport packets
 * bytes" per flow. */
static struct expect *read_list(const char *path, size_t *n)
{
	struct expect *e = calloc(FLOWS, sizeof(*e));
	FILE *f = fopen(path, "r");

	*n = 0;
	while (e && f && *n < FLOWS && fgets(e[*n].line, sizeof(e->line), f))
		(*n)++;
	if (f)
		fclose(f);
	return e;
}

static int cmp_line(const void *a, const void *b)
{
	return strcmp(((const struct expect *)a)->line,
		      ((const struct expect *)b)->line);
}

/* The trace's flows in the generator's format, sorted. */
static struct expect *describe(const struct trace *t)
{
	struct expect *e = calloc(t->n ? t->n : 1, sizeof(*e));
	size_t i;

	for (i = 0; e && i < t->n; i++) {
		const struct trace_flow *f = &t->flows[i];
		int af = f->tuple.family == XLB_AF_INET6 ? AF_INET6 : AF_INET;
		char c[INET6_ADDRSTRLEN], s[INET6_ADDRSTRLEN];

		inet_ntop(af, f->tuple.src, c, sizeof(c));
		inet_ntop(af, f->tuple.dst, s, sizeof(s));
		snprintf(e[i].line, sizeof(e[i].line), "%u %u %s %u %s %u %llu %llu\n",
			 f->tuple.family, f->tuple.proto, c, ntohs(f->tuple.sport),
			 s, ntohs(f->tuple.dport), (unsigned long long)f->packets,
			 (unsigned long long)f->bytes);
	}
	if (e)
		qsort(e, t->n, sizeof(*e), cmp_line);
	return e;
}

static void every_link_type_gives_the_generated_flows(void)
{
	struct expect *want, *got;
	char pcap[64];
	size_t n, i, l;

	for (l = 0; l < sizeof(links) / sizeof(links[0]); l++) {
		const char *name = links[l];
		struct trace t = {};
		size_t diff = 0;

		snprintf(pcap, sizeof(pcap), "%s.pcap", name);
		if (!ASSERT_OK(fx_gentrace("-n %d -s 3 -o %s --link %s --flows-out %s",
					   FLOWS, fx_path(pcap), name,
					   fx_path("flows.txt")), name))
			return;
		want = read_list(fx_path("flows.txt"), &n);
		if (!ASSERT_EQ(n, FLOWS, "flow list"))
			return;
		qsort(want, n, sizeof(*want), cmp_line);
		if (!ASSERT_OK(trace_read(&t, fx_path(pcap), NULL, NULL), name))
			return;
		ASSERT_EQ(t.n, FLOWS, name);
		ASSERT_EQ(t.stats.flow_packets, t.stats.packets, "every packet a flow's");
		got = describe(&t);
		for (i = 0; got && i < n && i < t.n; i++) {
			if (strcmp(want[i].line, got[i].line) && !diff++)
				printf("  %s: want %s  got %s", name, want[i].line,
				       got[i].line);
		}
		ASSERT_EQ(diff, 0, name);
		free(got);
		free(want);
		trace_free(&t);
	}
}

static void pcapng_reads_like_pcap(void)
{
	struct trace a = {}, b = {};
	struct expect *ea, *eb;
	char cmd[1024];
	size_t i, diff = 0;

	if (system("command -v editcap >/dev/null 2>&1")) {
		test_skip("editcap (wireshark-common) is not installed");
		return;
	}
	if (!ASSERT_OK(fx_gentrace("-n 500 -s 4 -o %s --link vlan",
				   fx_path("ng.pcap")), "gentrace"))
		return;
	snprintf(cmd, sizeof(cmd), "editcap -F pcapng %s %s", fx_path("ng.pcap"),
		 fx_path("ng.pcapng"));
	if (!ASSERT_OK(system(cmd), "editcap"))
		return;
	ASSERT_OK(trace_read(&a, fx_path("ng.pcap"), NULL, NULL), "pcap");
	ASSERT_OK(trace_read(&b, fx_path("ng.pcapng"), NULL, NULL), "pcapng");
	ASSERT_EQ(a.n, 500, "flows");
	if (!ASSERT_EQ(a.n, b.n, "same flows"))
		return;
	ea = describe(&a);
	eb = describe(&b);
	for (i = 0; i < a.n; i++)
		diff += strcmp(ea[i].line, eb[i].line) != 0;
	ASSERT_EQ(diff, 0, "identical flows");
	free(ea);
	free(eb);
	trace_free(&a);
	trace_free(&b);
}

/* Frames built here, one case per line. */
struct frame_case {
	const char *what;
	struct pkt_desc d;
	__u16 ethertype;	/* non-IP frame when set */
	size_t cut;		/* keep only this many bytes (header cut) */
};

static const __u8 ip_options[] = { 1, 1, 1, 0 };	/* NOP NOP NOP EOL */

static const struct frame_case frame_cases[] = {
	{ .what = "tcp syn", .d = { .family = 4, .src = "198.51.100.1", .dst = "192.0.2.1",
		       .proto = IPPROTO_TCP, .sport = 40000, .dport = 80,
		       .tcp_flags = PKT_TCP_SYN } },
	{ .what = "its answer", .d = { .family = 4, .src = "192.0.2.1", .dst = "198.51.100.1",
			  .proto = IPPROTO_TCP, .sport = 80, .dport = 40000,
			  .tcp_flags = PKT_TCP_SYN | PKT_TCP_ACK } },
	{ .what = "ipv4 options", .d = { .family = 4, .src = "198.51.100.1", .dst = "192.0.2.1",
			    .proto = IPPROTO_TCP, .sport = 40000, .dport = 80,
			    .ip_opt = ip_options, .ip_opt_len = 4 } },
	{ .what = "first fragment", .d = { .family = 4, .src = "198.51.100.2", .dst = "192.0.2.1",
			      .proto = IPPROTO_UDP, .sport = 5000, .dport = 53,
			      .frag = true, .mf = true, .payload_len = 64 } },
	{ .what = "later fragment", .d = { .family = 4, .src = "198.51.100.2", .dst = "192.0.2.1",
			      .proto = IPPROTO_UDP, .frag = true, .frag_off8 = 9,
			      .payload_len = 64 } },
	{ .what = "ipv6 extension headers", .d = { .family = 6, .src = "2001:db8::1",
				      .dst = "2001:db8::2", .proto = IPPROTO_UDP,
				      .sport = 5353, .dport = 53, .n_ext = 3,
				      .ext = { { 0, 0 }, { 43, 1 }, { 60, 0 } } } },
	{ .what = "ipv6 first fragment", .d = { .family = 6, .src = "2001:db8::3",
				   .dst = "2001:db8::2", .proto = IPPROTO_TCP,
				   .sport = 40001, .dport = 443, .frag = true,
				   .mf = true, .tcp_flags = PKT_TCP_SYN } },
	{ .what = "ipv6 later fragment", .d = { .family = 6, .src = "2001:db8::3",
				   .dst = "2001:db8::2", .proto = IPPROTO_TCP,
				   .frag = true, .frag_off8 = 20, .payload_len = 32 } },
	{ .what = "vlan tagged", .d = { .family = 4, .src = "198.51.100.3", .dst = "192.0.2.1",
			   .proto = IPPROTO_UDP, .sport = 6000, .dport = 53,
			   .vlans = 2, .vlan_tpid = { PKT_ETH_P_8021AD, 0 } } },
	{ .what = "icmp", .d = { .family = 4, .src = "198.51.100.1", .dst = "192.0.2.1",
		    .proto = IPPROTO_ICMP, .icmp_type = 8 } },
	{ .what = "arp", .d = { .family = 4 }, .ethertype = PKT_ETH_P_ARP },
	{ .what = "cut tcp header", .d = { .family = 4, .src = "198.51.100.4", .dst = "192.0.2.1",
			      .proto = IPPROTO_TCP, .sport = 1, .dport = 2 },
	  .cut = PKT_ETH_LEN + 20 + 8 },
};

static void headers_stepped_over_and_skips_counted(void)
{
	struct xlb_pcap_writer *w;
	__u8 frame[PKT_MAX];
	struct trace t = {};
	size_t i, len;
	char tuple[128];
	int af;

	if (!ASSERT_OK(xlb_pcap_create(fx_path("cases.pcap"), &w), "create"))
		return;
	for (i = 0; i < sizeof(frame_cases) / sizeof(frame_cases[0]); i++) {
		const struct frame_case *c = &frame_cases[i];

		if (c->ethertype) {
			len = pkt_l2(&c->d, c->ethertype, frame);
			memset(frame + len, 0, 28);
			len += 28;
		} else {
			len = pkt_build(&c->d, frame);
		}
		if (c->cut)
			len = c->cut;
		ASSERT_OK(xlb_pcap_add(w, frame, len, i), c->what);
	}
	ASSERT_OK(xlb_pcap_close(w), "close");
	if (!ASSERT_OK(trace_read(&t, fx_path("cases.pcap"), NULL, NULL), "read"))
		return;
	ASSERT_EQ(t.stats.packets, 12, "packets");
	ASSERT_EQ(t.stats.flow_packets, 7, "tcp/udp packets");
	ASSERT_EQ(t.stats.skipped_fragment, 2, "later fragments");
	ASSERT_EQ(t.stats.skipped_not_l4, 1, "icmp");
	ASSERT_EQ(t.stats.skipped_not_ip, 1, "arp");
	ASSERT_EQ(t.stats.skipped_short, 1, "cut header");
	ASSERT_EQ(t.n, 5, "flows: syn+answer+options, v4 frag, v6 ext, v6 frag, vlan");
	/* The SYN, its SYN-ACK and the packet with options: one flow, from
	 * the SYN's sender. */
	af = t.flows[0].tuple.family == XLB_AF_INET6 ? AF_INET6 : AF_INET;
	inet_ntop(af, t.flows[0].tuple.src, tuple, sizeof(tuple));
	ASSERT_EQ(t.flows[0].packets, 3, "both directions are one flow");
	ASSERT_TRUE(!strcmp(tuple, "198.51.100.1"), "client is the SYN sender");
	ASSERT_EQ(ntohs(t.flows[0].tuple.sport), 40000, "client port");
	ASSERT_EQ(ntohs(t.flows[3].tuple.dport), 443, "v6 first fragment's ports");
	trace_free(&t);
}

/* The SYN-ACK names the client even when the SYN was not captured. */
static void synack_orients_without_syn(void)
{
	struct pkt_desc d = { .family = 6, .src = "2001:db8::80", .dst = "2001:db8::c",
			      .proto = IPPROTO_TCP, .sport = 443, .dport = 50000,
			      .tcp_flags = PKT_TCP_SYN | PKT_TCP_ACK };
	struct xlb_pcap_writer *w;
	__u8 frame[PKT_MAX];
	struct trace t = {};
	char client[INET6_ADDRSTRLEN];

	if (!ASSERT_OK(xlb_pcap_create(fx_path("synack.pcap"), &w), "create"))
		return;
	xlb_pcap_add(w, frame, pkt_build(&d, frame), 0);
	d.src = "2001:db8::c", d.dst = "2001:db8::80";
	d.sport = 50000, d.dport = 443, d.tcp_flags = PKT_TCP_ACK;
	xlb_pcap_add(w, frame, pkt_build(&d, frame), 1);
	ASSERT_OK(xlb_pcap_close(w), "close");
	if (!ASSERT_OK(trace_read(&t, fx_path("synack.pcap"), NULL, NULL), "read"))
		return;
	ASSERT_EQ(t.n, 1, "one flow");
	inet_ntop(AF_INET6, t.flows[0].tuple.src, client, sizeof(client));
	ASSERT_TRUE(!strcmp(client, "2001:db8::c"), "the SYN-ACK's receiver");
	ASSERT_EQ(ntohs(t.flows[0].tuple.dport), 443, "server port");
	ASSERT_TRUE(t.flows[0].by_syn, "fixed by the handshake");
	trace_free(&t);
}

static bool error_mentions(const char *what)
{
	return strstr(fx_last_err, what) != NULL;
}

static void bad_files_are_refused(void)
{
	struct trace t = {};
	FILE *f;
	char cmd[1024];

	fx_last_err[0] = 0;
	ASSERT_EQ(trace_read(&t, fx_path("missing.pcap"), NULL, NULL), -ENOENT,
		  "missing");
	ASSERT_TRUE(error_mentions("missing.pcap"), "message names the file");

	f = fopen(fx_path("empty.pcap"), "w");
	fclose(f);
	ASSERT_EQ(trace_read(&t, fx_path("empty.pcap"), NULL, NULL), -EINVAL,
		  "empty");
	ASSERT_TRUE(error_mentions("not a pcap or pcapng"), "empty: says why");

	f = fopen(fx_path("text.pcap"), "w");
	fputs("this is not a capture, only some text long enough to look\n", f);
	fclose(f);
	ASSERT_EQ(trace_read(&t, fx_path("text.pcap"), NULL, NULL), -EINVAL,
		  "text");
	ASSERT_TRUE(error_mentions("text.pcap: not a pcap"), "text: says why");

	/* Cut in the middle of a record. */
	if (!ASSERT_OK(fx_gentrace("-n 100 -s 5 -o %s", fx_path("whole.pcap")),
		       "gentrace"))
		return;
	snprintf(cmd, sizeof(cmd), "head -c 3001 %s > %s", fx_path("whole.pcap"),
		 fx_path("cut.pcap"));
	ASSERT_OK(system(cmd), "cut");
	ASSERT_EQ(trace_read(&t, fx_path("cut.pcap"), NULL, NULL), -EIO,
		  "truncated");
	ASSERT_TRUE(error_mentions("truncated"), "truncated: says so");
	trace_free(&t);
}

static void unknown_link_type_is_skipped(void)
{
	static const __u8 frame[64];
	struct pcap_pkthdr h = { .caplen = 64, .len = 64 };
	struct trace t = {};
	pcap_dumper_t *d;
	pcap_t *p;

	p = pcap_open_dead(DLT_IEEE802_11, 65535);
	d = pcap_dump_open(p, fx_path("wifi.pcap"));
	if (!ASSERT_TRUE(d != NULL, "write"))
		return;
	pcap_dump((u_char *)d, &h, frame);
	pcap_dump_close(d);
	pcap_close(p);
	ASSERT_OK(trace_read(&t, fx_path("wifi.pcap"), NULL, NULL), "not an error");
	ASSERT_EQ(t.stats.files_skipped, 1, "skipped");
	ASSERT_EQ(t.stats.packets, 0, "nothing read from it");
	ASSERT_EQ(t.n, 0, "no flow guessed");
	ASSERT_TRUE(trace_link_supported(DLT_LINUX_SLL2), "SLL2 supported");
	ASSERT_TRUE(!trace_link_supported(DLT_IEEE802_11), "802.11 not");
	trace_free(&t);
}

TEST_MAIN(
	TEST(every_link_type_gives_the_generated_flows),
	TEST(pcapng_reads_like_pcap),
	TEST(headers_stepped_over_and_skips_counted),
	TEST(synack_orients_without_syn),
	TEST(bad_files_are_refused),
	TEST(unknown_link_type_is_skipped),
)
