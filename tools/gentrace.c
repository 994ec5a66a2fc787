// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * gentrace: write a synthetic capture for replay tests.
 *
 *   gentrace -n FLOWS -o FILE [-s SEED] [--ipv6 FRACTION] [--udp FRACTION]
 *            [--zipf S] [--max-packets K] [--ports N] [--link TYPE]
 *            [--flows-out FILE]
 *
 * FLOWS distinct connections (distinct also once addressed to one VIP:
 * client address and port, protocol and server port differ), IPv4 and
 * IPv6, TCP and UDP, each with a number of packets drawn from a Zipf
 * distribution over 1..K, both directions, interleaved in time. TCP flows
 * open with a SYN; a few lose it and start at the SYN-ACK, a few start in
 * mid-stream, so readers must find the client without guessing from
 * ports. Server ports are a few services (443, 80, 53, 123), or with
 * --ports N any of 1..N. Only the headers are captured; the wire length is the full
 * packet's. --flows-out lists every flow as the generator made it, for
 * tests to compare with what a reader finds.
 *
 * Link types: ether (default), vlan, qinq, sll, sll2, raw, null, loop.
 * Addresses: clients 198.51.100.0/24, 203.0.113.0/24, 2001:db8:c::/48;
 * servers 192.0.2.0/24, 2001:db8:5::/64.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <netinet/in.h>
#include <pcap/pcap.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flow_hash.h"
#include "packets.h"

struct gen_flow {
	struct xlb_flow tuple;	/* client -> server */
	char client[INET6_ADDRSTRLEN], server[INET6_ADDRSTRLEN];
	__u32 packets;
	__u64 bytes;
	__u64 start_us;
	__u8 opening;		/* enum opening */
};

enum opening {
	OPEN_SYN,		/* SYN, SYN-ACK, data ... */
	OPEN_SYNACK,		/* the SYN was not captured */
	OPEN_MIDSTREAM,		/* the capture starts with data */
	OPEN_UDP,
};

struct event {
	__u64 t_us;
	__u32 flow;
	__u32 seq;		/* packet number within the flow */
};

struct link {
	const char *name;
	int dlt;
};

static const struct link links[] = {
	{ "ether", DLT_EN10MB }, { "vlan", DLT_EN10MB }, { "qinq", DLT_EN10MB },
	{ "sll", DLT_LINUX_SLL }, { "sll2", DLT_LINUX_SLL2 },
	{ "raw", DLT_RAW }, { "null", DLT_NULL }, { "loop", DLT_LOOP },
};

static __u64 rng_state;

static __u64 rnd(void)
{
	__u64 z = (rng_state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static __u32 rnd_below(__u32 n)
{
	return (__u32)(((unsigned __int128)rnd() * n) >> 64);
}

static double rnd_unit(void)
{
	return (rnd() >> 11) * 0x1.0p-53;
}

/* Zipf over 1..k by inverse transform on a cumulative table. */
static double *zipf_table(double s, __u32 k)
{
	double *cdf = calloc(k, sizeof(*cdf)), sum = 0;
	__u32 i;

	if (!cdf)
		return NULL;
	for (i = 0; i < k; i++)
		cdf[i] = (sum += pow(i + 1, -s));
	for (i = 0; i < k; i++)
		cdf[i] /= sum;
	return cdf;
}

static __u32 zipf_draw(const double *cdf, __u32 k)
{
	double u = rnd_unit();
	__u32 lo = 0, hi = k - 1;

	while (lo < hi) {
		__u32 mid = (lo + hi) / 2;

		if (cdf[mid] < u)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo + 1;
}

static void random_flow(struct gen_flow *f, double ipv6, double udp,
			__u32 ports)
{
	static const __u16 tcp_ports[] = { 443, 443, 443, 80 };
	static const __u16 udp_ports[] = { 53, 443, 123 };
	bool v6 = rnd_unit() < ipv6;

	memset(f, 0, sizeof(*f));
	f->tuple.family = v6 ? XLB_AF_INET6 : XLB_AF_INET;
	f->tuple.proto = rnd_unit() < udp ? IPPROTO_UDP : IPPROTO_TCP;
	if (v6) {
		__u64 host = rnd();

		inet_pton(AF_INET6, "2001:db8:c::", f->tuple.src);
		memcpy(&f->tuple.src[2], &host, 8);
		inet_pton(AF_INET6, "2001:db8:5::1", f->tuple.dst);
		((__u8 *)f->tuple.dst)[15] = 1 + rnd_below(16);
	} else {
		__u8 *s = (__u8 *)f->tuple.src, *d = (__u8 *)f->tuple.dst;

		inet_pton(AF_INET, rnd_below(2) ? "198.51.100.0" : "203.0.113.0", s);
		s[3] = 1 + rnd_below(254);
		inet_pton(AF_INET, "192.0.2.0", d);
		d[3] = 100 + rnd_below(16);
	}
	inet_ntop(v6 ? AF_INET6 : AF_INET, f->tuple.src, f->client,
		  sizeof(f->client));
	inet_ntop(v6 ? AF_INET6 : AF_INET, f->tuple.dst, f->server,
		  sizeof(f->server));
	f->tuple.sport = htons(1024 + rnd_below(65536 - 1024));
	if (f->tuple.proto == IPPROTO_UDP) {
		f->tuple.dport = htons(udp_ports[rnd_below(3)]);
		f->opening = OPEN_UDP;
	} else {
		double u = rnd_unit();

		f->tuple.dport = htons(tcp_ports[rnd_below(4)]);
		f->opening = u < 0.03 ? OPEN_SYNACK :
			     u < 0.06 ? OPEN_MIDSTREAM : OPEN_SYN;
	}
	if (ports)
		f->tuple.dport = htons(1 + rnd_below(ports));
}

/* What a flow is once addressed to a VIP: everything but the server's
 * address. Generated flows must differ there too. */
static __u64 vip_key(const struct gen_flow *f)
{
	static const __u64 k[2] = { 1, 2 };
	struct xlb_flow t = f->tuple;

	memset(t.dst, 0, sizeof(t.dst));
	return xlb_flow_hash(&t, k);
}

/* Insert key into an open-addressing set; false when already there. */
static bool set_add(__u64 *set, size_t size, __u64 key)
{
	size_t s = key & (size - 1);

	key |= 1;	/* 0 marks an empty slot */
	for (; set[s]; s = (s + 1) & (size - 1))
		if (set[s] == key)
			return false;
	set[s] = key;
	return true;
}

static int cmp_event(const void *a, const void *b)
{
	const struct event *x = a, *y = b;

	if (x->t_us != y->t_us)
		return x->t_us < y->t_us ? -1 : 1;
	if (x->flow != y->flow)
		return x->flow < y->flow ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The link header of a type without Ethernet, before an IP packet of
 * family v6; returns its length. */
static size_t link_header(const char *link, __u8 *p, bool v6, bool from_client)
{
	__u16 type = v6 ? PKT_ETH_P_IPV6 : PKT_ETH_P_IP;
	__u32 af;

	if (!strcmp(link, "null") || !strcmp(link, "loop")) {
		/* DLT_NULL: the writing host's order (AF_INET6 of macOS);
		 * DLT_LOOP: network order (AF_INET6 of OpenBSD). */
		bool null = !strcmp(link, "null");

		af = v6 ? (null ? 30 : 24) : 2;
		if (!null)
			af = htonl(af);
		memcpy(p, &af, 4);
		return 4;
	}
	if (!strcmp(link, "sll")) {
		memset(p, 0, 16);
		pkt_put16(p, from_client ? 0 : 4);	/* to us / outgoing */
		pkt_put16(p + 2, 1);			/* ARPHRD_ETHER */
		pkt_put16(p + 4, 6);
		p[6] = 0x02;
		p[11] = from_client ? 1 : 2;
		pkt_put16(p + 14, type);
		return 16;
	}
	if (!strcmp(link, "sll2")) {
		memset(p, 0, 20);
		pkt_put16(p, type);
		p[7] = 2;				/* ifindex */
		pkt_put16(p + 8, 1);
		p[10] = from_client ? 0 : 4;
		p[11] = 6;
		p[12] = 0x02;
		p[17] = from_client ? 1 : 2;
		return 20;
	}
	return 0;	/* raw */
}

/* Flags of TCP packet seq of a flow, and who sends it. */
static __u8 tcp_flags(const struct gen_flow *f, __u32 seq, bool *from_client)
{
	__u32 k = seq + (f->opening == OPEN_SYNACK ? 1 : 0);

	if (f->opening == OPEN_MIDSTREAM) {
		*from_client = !(seq & 1);
		return 0x18;	/* PSH ACK */
	}
	*from_client = !(k & 1);
	if (k == 0)
		return PKT_TCP_SYN;
	if (k == 1)
		return PKT_TCP_SYN | PKT_TCP_ACK;
	return k == 2 ? PKT_TCP_ACK : 0x18;
}

/* Write one packet: the headers are captured, the wire length counts the
 * payload too. Returns the wire length. */
static __u32 write_packet(pcap_dumper_t *d, const char *link,
			  const struct gen_flow *f, __u32 seq, __u64 t_us)
{
	static __u8 frame[PKT_MAX];
	bool tcp = f->tuple.proto == IPPROTO_TCP, from_client = true;
	bool ether = !strcmp(link, "ether") || !strcmp(link, "vlan") ||
		     !strcmp(link, "qinq");
	struct pkt_desc p = {
		.family = f->tuple.family == XLB_AF_INET6 ? 6 : 4,
		.proto = f->tuple.proto,
		.df = true,
	};
	struct pcap_pkthdr h = {};
	size_t link_len, len;

	if (tcp)
		p.tcp_flags = tcp_flags(f, seq, &from_client);
	else
		from_client = !(seq & 1);
	p.src = from_client ? f->client : f->server;
	p.dst = from_client ? f->server : f->client;
	p.sport = ntohs(from_client ? f->tuple.sport : f->tuple.dport);
	p.dport = ntohs(from_client ? f->tuple.dport : f->tuple.sport);
	p.payload_len = tcp ? (p.tcp_flags & 0x08 ? 1 + rnd_below(1448) : 0) :
			      20 + rnd_below(1180);
	p.smac[5] = from_client ? 1 : 2;
	p.dmac[5] = from_client ? 2 : 1;
	p.smac[0] = p.dmac[0] = 0x02;
	if (!strcmp(link, "vlan") || !strcmp(link, "qinq")) {
		p.vlans = link[0] == 'q' ? 2 : 1;
		p.vlan_tpid[0] = link[0] == 'q' ? PKT_ETH_P_8021AD : 0;
		p.vlan_id[0] = 10;
		p.vlan_id[1] = 100;
	}
	if (ether)
		link_len = pkt_l2(&p, p.family == 6 ? PKT_ETH_P_IPV6 : PKT_ETH_P_IP,
				  frame);
	else
		link_len = link_header(link, frame, p.family == 6, from_client);
	len = link_len + pkt_build_ip(&p, frame + link_len);
	h.ts.tv_sec = t_us / 1000000;
	h.ts.tv_usec = t_us % 1000000;
	h.len = len;
	h.caplen = len - p.payload_len;
	pcap_dump((u_char *)d, &h, frame);
	return h.len;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: gentrace -n FLOWS -o FILE [-s SEED] [--ipv6 FRACTION] "
		"[--udp FRACTION]\n                [--zipf S] [--max-packets K] [--ports N] "
		"[--link ether|vlan|qinq|sll|sll2|raw|null|loop]\n"
		"                [--flows-out FILE]\n");
}

static int parse_double(const char *s, double min, double max, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	if (errno || end == s || *end || *out < min || *out > max) {
		fprintf(stderr, "gentrace: '%s' is not a number in [%g, %g]\n",
			s, min, max);
		return -EINVAL;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "flows", required_argument, NULL, 'n' },
		{ "out", required_argument, NULL, 'o' },
		{ "seed", required_argument, NULL, 's' },
		{ "ipv6", required_argument, NULL, '6' },
		{ "udp", required_argument, NULL, 'u' },
		{ "zipf", required_argument, NULL, 'z' },
		{ "max-packets", required_argument, NULL, 'k' },
		{ "ports", required_argument, NULL, 'p' },
		{ "link", required_argument, NULL, 'l' },
		{ "flows-out", required_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	double ipv6 = 0.25, udp = 0.25, zipf = 2.0, v, *cdf = NULL;
	const char *out = NULL, *flows_out = NULL, *link = "ether";
	__u64 n_flows = 0, seed = 1, n_events = 0, *set = NULL;
	struct gen_flow *flows = NULL;
	struct event *events = NULL;
	pcap_dumper_t *dumper = NULL;
	__u32 max_packets = 1000, ports = 0;
	pcap_t *dead = NULL;
	size_t set_size, i, e;
	int c, dlt = -1, rc = 1;
	FILE *list = NULL;

	while ((c = getopt_long(argc, argv, "n:o:s:h", opts, NULL)) != -1) {
		switch (c) {
		case 'n':
			if (parse_double(optarg, 1, 1e8, &v))
				return 1;
			n_flows = (__u64)v;
			break;
		case 'o':
			out = optarg;
			break;
		case 's':
			if (parse_double(optarg, 0, 1e18, &v))
				return 1;
			seed = (__u64)v;
			break;
		case '6':
			if (parse_double(optarg, 0, 1, &ipv6))
				return 1;
			break;
		case 'u':
			if (parse_double(optarg, 0, 1, &udp))
				return 1;
			break;
		case 'z':
			if (parse_double(optarg, 0, 10, &zipf))
				return 1;
			break;
		case 'k':
			if (parse_double(optarg, 1, 1e6, &v))
				return 1;
			max_packets = (__u32)v;
			break;
		case 'p':
			if (parse_double(optarg, 1, 65535, &v))
				return 1;
			ports = (__u32)v;
			break;
		case 'l':
			link = optarg;
			break;
		case 'f':
			flows_out = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 1;
		}
	}
	for (i = 0; i < sizeof(links) / sizeof(links[0]); i++)
		if (!strcmp(link, links[i].name))
			dlt = links[i].dlt;
	if (!n_flows || !out || optind != argc || dlt < 0) {
		usage(stderr);
		return 1;
	}
	rng_state = seed;
	cdf = zipf_table(zipf, max_packets);
	flows = calloc(n_flows, sizeof(*flows));
	for (set_size = 1024; set_size < 2 * n_flows; set_size *= 2)
		;
	set = calloc(set_size, sizeof(*set));
	if (!cdf || !flows || !set)
		goto oom;
	for (i = 0; i < n_flows; i++) {
		struct gen_flow *f = &flows[i];

		do
			random_flow(f, ipv6, udp, ports);
		while (!set_add(set, set_size, vip_key(f)));
		f->packets = zipf_draw(cdf, max_packets);
		f->start_us = rnd_below(60000000);
		n_events += f->packets;
	}
	events = calloc(n_events, sizeof(*events));
	if (!events)
		goto oom;
	for (i = 0, e = 0; i < n_flows; i++) {
		__u64 t = flows[i].start_us;
		__u32 s;

		for (s = 0; s < flows[i].packets; s++, e++) {
			events[e] = (struct event){ t, i, s };
			t += 100 + rnd_below(20000);
		}
	}
	qsort(events, n_events, sizeof(*events), cmp_event);

	dead = pcap_open_dead(dlt, 65535);
	dumper = dead ? pcap_dump_open(dead, out) : NULL;
	if (!dumper) {
		fprintf(stderr, "gentrace: %s: %s\n", out,
			dead ? pcap_geterr(dead) : "cannot open");
		goto cleanup;
	}
	for (e = 0; e < n_events; e++) {
		struct gen_flow *f = &flows[events[e].flow];

		f->bytes += write_packet(dumper, link, f, events[e].seq,
					 events[e].t_us);
	}
	if (pcap_dump_flush(dumper)) {
		fprintf(stderr, "gentrace: %s: write failed\n", out);
		goto cleanup;
	}
	if (flows_out) {
		list = fopen(flows_out, "w");
		if (!list) {
			fprintf(stderr, "gentrace: %s: %s\n", flows_out,
				strerror(errno));
			goto cleanup;
		}
		/* One flow a line: family proto client port server port
		 * packets bytes. */
		for (i = 0; i < n_flows; i++) {
			const struct gen_flow *f = &flows[i];

			fprintf(list, "%u %u %s %u %s %u %u %llu\n",
				f->tuple.family, f->tuple.proto, f->client,
				ntohs(f->tuple.sport), f->server, ntohs(f->tuple.dport),
				f->packets, (unsigned long long)f->bytes);
		}
		if (fclose(list)) {
			fprintf(stderr, "gentrace: %s: write failed\n", flows_out);
			list = NULL;
			goto cleanup;
		}
		list = NULL;
	}
	rc = 0;
	goto cleanup;
oom:
	fprintf(stderr, "gentrace: out of memory\n");
cleanup:
	if (dumper)
		pcap_dump_close(dumper);
	if (dead)
		pcap_close(dead);
	if (list)
		fclose(list);
	free(events);
	free(set);
	free(flows);
	free(cdf);
	if (rc)
		remove(out);
	return rc;
}
