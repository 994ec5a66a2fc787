// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * xlb-gen: a traffic generator for benchmarking xlb. It pushes TCP (SYNs
 * by default, or any flags) or UDP frames of many flows out of a device
 * with BPF_PROG_TEST_RUN's live-frames mode (kernel >= 5.18), the in-kernel
 * path xdp-trafficgen uses: the kernel builds a page pool of frames from
 * one template and transmits every frame the program (tools/gen.bpf.c)
 * returns XDP_TX for.
 * The program rewrites each frame's source address and port from a frame
 * counter, so one template gives as many flows as asked for.
 *
 * --write FILE runs the same program frame by frame and writes what it
 * would have sent to a pcap instead, so the frames can be checked by an
 * independent decoder.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "report.h"
#include "gen.skel.h"
#include "pcap_flows.h"

#define GEN_MAX_FRAME		3000	/* fits a live-frames page with headroom */
#define GEN_MAX_SEQ		(16U << 20)	/* frames of a --pcap sequence */
#define GEN_DEFAULT_FLOWS	1024
#define GEN_DEFAULT_COUNT	1000000
#define GEN_DEFAULT_BATCH	64
#define GEN_TCP_SYN	0x02
#define GEN_TCP_ACK	0x10

struct gen_opts {
	const char *dev;
	const char *write_path;
	const char *pcap_path;
	__u64 count;		/* 0: until duration */
	double duration;	/* seconds, 0: until count */
	__u64 rate;		/* frames per second, 0: as fast as possible */
	__u64 flows;		/* 0: every source the ranges allow */
	__u32 size;		/* frame length without FCS, 0: default */
	__u32 batch;
	int cpu;		/* -1: not pinned */
	bool json;
	__u8 proto;
	__u8 tcp_flags;		/* TCP header byte 13 */
	int family;		/* 4 or 6, from --dst */
	__u8 dst[16];
	__u16 dport;
	__u8 src[16];		/* source prefix */
	int src_len;
	bool have_src;
	__u32 sport_lo, sport_hi;
	__u8 dst_mac[ETH_ALEN], src_mac[ETH_ALEN];
	bool have_dst_mac, have_src_mac;
};

/* The frame every test run starts from, and what the program needs to
 * vary it (see tools/gen.bpf.c). */
struct gen_template {
	__u8 frame[GEN_MAX_FRAME];
	__u32 len;
	__u32 hdr_len;		/* Ethernet to TCP/UDP */
	__u32 naddrs;
	__u32 src_first;
	__u64 max_flows;	/* naddrs * ports */
	__u32 ip_csum_base;
	__u32 l4_csum_base;
};

/* The flow sequence of a capture (--pcap). */
struct gen_seq {
	__u32 *ids;
	size_t n, cap;
	size_t flows;
};

static volatile sig_atomic_t stop, alarmed;

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: xlb-gen --dev DEV --dst-mac MAC --dst ADDR:PORT [OPTIONS]\n"
		"       xlb-gen --write FILE --dst ADDR:PORT [OPTIONS]\n"
		"Push TCP or UDP frames of many flows out of DEV (BPF_PROG_TEST_RUN\n"
		"live frames, kernel >= 5.18), or write them to a pcap.\n"
		"  -i, --dev DEV          device to send out of\n"
		"  -w, --write FILE       write the frames to a pcap instead of sending\n"
		"  -d, --dst ADDR:PORT    destination (the VIP): 192.0.2.10:80, [2001:db8::10]:80\n"
		"  -p, --proto tcp|udp    TCP (default) or UDP\n"
		"  -F, --tcp-flags FLAGS  TCP flags, letters of FSRPAUEC (default S: new\n"
		"                         connections; A: packets of established ones)\n"
		"  -n, --count N          frames to send (default %d; k/M/G suffixes)\n"
		"  -t, --duration SEC     send for SEC seconds instead\n"
		"  -r, --rate PPS         frames per second (default: as fast as possible)\n"
		"  -f, --flows N|max      distinct flows, cycled (default %d)\n"
		"  -s, --src PREFIX       source addresses (default 198.51.100.0/24,\n"
		"                         2001:db8:ffff::/64)\n"
		"  -P, --sport LO-HI      source ports (default 1024-65535)\n"
		"  -l, --size BYTES       frame length without FCS (default 64, at least\n"
		"                         the headers)\n"
		"  -c, --pcap FILE        flows in the order and sizes of a capture's\n"
		"                         client packets (sources still from --src)\n"
		"  -m, --dst-mac MAC      destination MAC (required with --dev)\n"
		"  -M, --src-mac MAC      source MAC (default: DEV's)\n"
		"  -b, --batch N          frames per kernel batch, 1..256 (default %d)\n"
		"  -C, --cpu N            run on CPU N\n"
		"  -j, --json             print the result as JSON\n",
		GEN_DEFAULT_COUNT, GEN_DEFAULT_FLOWS, GEN_DEFAULT_BATCH);
}

/* A count with an optional decimal suffix k, M or G; with a suffix, a
 * fraction is allowed as long as the result is whole (1.5M). */
static int parse_count(const char *s, __u64 max, __u64 *out)
{
	double v, mult = 1;
	char *end;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	*out = strtoull(s, &end, 10);
	if (errno)
		return -ERANGE;
	if (!*end)
		return *out > max ? -ERANGE : 0;
	v = strtod(s, &end);
	if (*end == 'k')
		mult = 1e3;
	else if (*end == 'M')
		mult = 1e6;
	else if (*end == 'G')
		mult = 1e9;
	else
		return -EINVAL;
	if (end[1])
		return -EINVAL;
	v *= mult;
	if (v != floor(v) || v > (double)max || v >= 0x1p64)
		return -ERANGE;
	*out = (__u64)v;
	return 0;
}

static int parse_u32_opt(const char *name, const char *s, __u64 min, __u64 max,
			 __u32 *out)
{
	__u64 v;

	if (parse_count(s, UINT64_MAX, &v) || v < min || v > max) {
		p_err("%s: '%s' is not a number from %llu to %llu", name, s,
		      (unsigned long long)min, (unsigned long long)max);
		return -EINVAL;
	}
	*out = (__u32)v;
	return 0;
}

/* ADDR:PORT or [ADDR6]:PORT. */
static int parse_dst(const char *s, struct gen_opts *o)
{
	char buf[INET6_ADDRSTRLEN + 8];
	const char *port;
	char *addr = buf;
	__u32 p;

	if (strlen(s) >= sizeof(buf))
		goto bad;
	strcpy(buf, s);
	if (*addr == '[') {
		char *close = strchr(addr, ']');

		if (!close || close[1] != ':')
			goto bad;
		*close = '\0';
		addr++;
		port = close + 2;
		o->family = 6;
		if (inet_pton(AF_INET6, addr, o->dst) != 1)
			goto bad;
	} else {
		char *colon = strrchr(addr, ':');

		if (!colon)
			goto bad;
		*colon = '\0';
		port = colon + 1;
		o->family = 4;
		if (inet_pton(AF_INET, addr, o->dst) != 1)
			goto bad;
	}
	if (parse_u32_opt("--dst port", port, 1, 65535, &p))
		return -EINVAL;
	o->dport = (__u16)p;
	return 0;
bad:
	p_err("--dst: '%s' is not ADDR:PORT or [ADDR6]:PORT", s);
	return -EINVAL;
}

static int parse_prefix(const char *s, struct gen_opts *o)
{
	char buf[INET6_ADDRSTRLEN + 8];
	char *slash;
	__u32 len;
	int i, max;

	if (strlen(s) >= sizeof(buf))
		goto bad;
	strcpy(buf, s);
	slash = strchr(buf, '/');
	if (!slash)
		goto bad;
	*slash = '\0';
	memset(o->src, 0, sizeof(o->src));
	if (inet_pton(AF_INET, buf, o->src) == 1)
		max = 32;
	else if (inet_pton(AF_INET6, buf, o->src) == 1)
		max = 128;
	else
		goto bad;
	if (parse_u32_opt("--src prefix length", slash + 1, 0, (__u64)max, &len))
		return -EINVAL;
	o->src_len = (int)len;
	for (i = (int)len; i < max; i++) {
		if (o->src[i / 8] & (0x80 >> (i % 8))) {
			p_err("--src: '%s' has host bits set", s);
			return -EINVAL;
		}
	}
	o->have_src = true;
	return max;
bad:
	p_err("--src: '%s' is not ADDR/LEN", s);
	return -EINVAL;
}

/* TCP flags as letters, tcpdump's order: FIN SYN RST PSH ACK URG ECE CWR. */
static int parse_tcp_flags(const char *s, __u8 *flags)
{
	static const char letters[] = "FSRPAUEC";
	const char *c, *at;

	*flags = 0;
	for (c = s; *c; c++) {
		at = strchr(letters, *c);
		if (!at) {
			p_err("--tcp-flags: '%s' is not letters of %s", s, letters);
			return -EINVAL;
		}
		*flags |= (__u8)(1 << (at - letters));
	}
	if (!*flags) {
		p_err("--tcp-flags: no flag given");
		return -EINVAL;
	}
	return 0;
}

static int parse_mac(const char *name, const char *s, __u8 *mac)
{
	unsigned int b[ETH_ALEN];
	char end;
	int i;

	if (sscanf(s, "%x:%x:%x:%x:%x:%x%c", &b[0], &b[1], &b[2], &b[3], &b[4],
		   &b[5], &end) != ETH_ALEN) {
		p_err("%s: '%s' is not a MAC address", name, s);
		return -EINVAL;
	}
	for (i = 0; i < ETH_ALEN; i++) {
		if (b[i] > 0xff) {
			p_err("%s: '%s' is not a MAC address", name, s);
			return -EINVAL;
		}
		mac[i] = (__u8)b[i];
	}
	return 0;
}

static int parse_args(int argc, char **argv, struct gen_opts *o)
{
	static const struct option longopts[] = {
		{ "dev",	required_argument, NULL, 'i' },
		{ "write",	required_argument, NULL, 'w' },
		{ "dst",	required_argument, NULL, 'd' },
		{ "proto",	required_argument, NULL, 'p' },
		{ "tcp-flags",	required_argument, NULL, 'F' },
		{ "count",	required_argument, NULL, 'n' },
		{ "duration",	required_argument, NULL, 't' },
		{ "rate",	required_argument, NULL, 'r' },
		{ "flows",	required_argument, NULL, 'f' },
		{ "src",	required_argument, NULL, 's' },
		{ "sport",	required_argument, NULL, 'P' },
		{ "size",	required_argument, NULL, 'l' },
		{ "pcap",	required_argument, NULL, 'c' },
		{ "dst-mac",	required_argument, NULL, 'm' },
		{ "src-mac",	required_argument, NULL, 'M' },
		{ "batch",	required_argument, NULL, 'b' },
		{ "cpu",	required_argument, NULL, 'C' },
		{ "json",	no_argument,	   NULL, 'j' },
		{ "help",	no_argument,	   NULL, 'h' },
		{}
	};
	bool have_count = false, have_flows = false, have_flags = false;
	int src_family = 0, opt;
	__u32 v32;
	char *end;

	while ((opt = getopt_long(argc, argv, "i:w:d:p:F:n:t:r:f:s:P:l:c:m:M:b:C:jh",
				  longopts, NULL)) != -1) {
		switch (opt) {
		case 'i':
			o->dev = optarg;
			break;
		case 'w':
			o->write_path = optarg;
			break;
		case 'd':
			if (parse_dst(optarg, o))
				return -EINVAL;
			break;
		case 'p':
			if (!strcmp(optarg, "tcp")) {
				o->proto = IPPROTO_TCP;
			} else if (!strcmp(optarg, "udp")) {
				o->proto = IPPROTO_UDP;
			} else {
				p_err("--proto: '%s' is not tcp or udp", optarg);
				return -EINVAL;
			}
			break;
		case 'F':
			if (parse_tcp_flags(optarg, &o->tcp_flags))
				return -EINVAL;
			have_flags = true;
			break;
		case 'n':
			if (parse_count(optarg, UINT64_MAX, &o->count) || !o->count) {
				p_err("--count: '%s' is not a positive count", optarg);
				return -EINVAL;
			}
			have_count = true;
			break;
		case 't':
			errno = 0;
			o->duration = strtod(optarg, &end);
			if (errno || *end || end == optarg || !(o->duration > 0) ||
			    o->duration > 86400) {
				p_err("--duration: '%s' is not a number of seconds (0 to 86400)",
				      optarg);
				return -EINVAL;
			}
			break;
		case 'r':
			if (parse_count(optarg, 1000000000ULL, &o->rate) || !o->rate) {
				p_err("--rate: '%s' is not a rate from 1 to 1G frames per second",
				      optarg);
				return -EINVAL;
			}
			break;
		case 'f':
			if (!strcmp(optarg, "max")) {
				o->flows = 0;
			} else if (parse_count(optarg, UINT32_MAX, &o->flows) || !o->flows) {
				p_err("--flows: '%s' is not a count from 1 to %u, or max",
				      optarg, UINT32_MAX);
				return -EINVAL;
			}
			have_flows = true;
			break;
		case 's':
			src_family = parse_prefix(optarg, o);
			if (src_family < 0)
				return -EINVAL;
			src_family = src_family == 32 ? 4 : 6;
			break;
		case 'P': {
			unsigned int lo, hi;
			char c;

			if (sscanf(optarg, "%u-%u%c", &lo, &hi, &c) != 2 || lo < 1 ||
			    lo > hi || hi > 65535) {
				p_err("--sport: '%s' is not LO-HI within 1-65535", optarg);
				return -EINVAL;
			}
			o->sport_lo = lo;
			o->sport_hi = hi;
			break;
		}
		case 'l':
			if (parse_u32_opt("--size", optarg, 1, GEN_MAX_FRAME, &o->size))
				return -EINVAL;
			break;
		case 'c':
			o->pcap_path = optarg;
			break;
		case 'm':
			if (parse_mac("--dst-mac", optarg, o->dst_mac))
				return -EINVAL;
			o->have_dst_mac = true;
			break;
		case 'M':
			if (parse_mac("--src-mac", optarg, o->src_mac))
				return -EINVAL;
			o->have_src_mac = true;
			break;
		case 'b':
			if (parse_u32_opt("--batch", optarg, 1, 256, &o->batch))
				return -EINVAL;
			break;
		case 'C':
			if (parse_u32_opt("--cpu", optarg, 0, CPU_SETSIZE - 1, &v32))
				return -EINVAL;
			o->cpu = (int)v32;
			break;
		case 'j':
			o->json = true;
			break;
		case 'h':
			usage(stdout);
			exit(EXIT_SUCCESS);
		default:
			usage(stderr);
			return -EINVAL;
		}
	}
	if (optind < argc) {
		p_err("unexpected argument '%s' (see --help)", argv[optind]);
		return -EINVAL;
	}
	if (!o->dev == !o->write_path) {
		p_err("give exactly one of --dev DEV and --write FILE");
		return -EINVAL;
	}
	if (!o->family) {
		p_err("--dst ADDR:PORT is required");
		return -EINVAL;
	}
	if (o->dev && !o->have_dst_mac) {
		p_err("--dst-mac is required with --dev (the next hop's MAC address)");
		return -EINVAL;
	}
	if (src_family && src_family != o->family) {
		p_err("--src is IPv%d but --dst is IPv%d", src_family, o->family);
		return -EINVAL;
	}
	if (have_count && o->duration > 0) {
		p_err("give --count or --duration, not both");
		return -EINVAL;
	}
	if (o->write_path && (o->duration > 0 || o->rate)) {
		p_err("--write takes --count, not --duration or --rate");
		return -EINVAL;
	}
	if (!have_count && !(o->duration > 0))
		o->count = GEN_DEFAULT_COUNT;
	if (have_flags && o->proto != IPPROTO_TCP) {
		p_err("--tcp-flags is for --proto tcp");
		return -EINVAL;
	}
	if (o->pcap_path && have_flows) {
		p_err("--pcap gives the flows; --flows cannot be combined with it");
		return -EINVAL;
	}
	return 0;
}

/* One's-complement sum of 16-bit words as they lie in memory, folded to
 * 16 bits; the program adds the varied words the same way. */
static __u32 csum_add(__u32 sum, const void *p, size_t len)
{
	const __u8 *b = p;
	__u16 w;

	for (; len > 1; len -= 2, b += 2) {
		memcpy(&w, b, 2);
		sum += w;
	}
	if (len) {
		w = 0;
		memcpy(&w, b, 1);
		sum += w;
	}
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return sum;
}

static __u32 csum_add16(__u32 sum, __u16 v)
{
	return csum_add(sum, &v, sizeof(v));
}

/* The source range: addresses src_first .. src_first + naddrs - 1 in the
 * last 32-bit word of the prefix, leaving out the prefix's own address
 * (and IPv4's broadcast) where the prefix has room for that. */
static void source_range(const struct gen_opts *o, struct gen_template *t)
{
	int host = (o->family == 4 ? 32 : 128) - o->src_len;
	__u32 low;
	__u64 n;

	memcpy(&low, o->src + (o->family == 4 ? 0 : 12), 4);
	low = ntohl(low);
	if (host > 32)
		host = 32;
	n = 1ULL << host;
	if (n > 2) {
		low++;
		n -= o->family == 4 && host < 32 ? 2 : 1;
	}
	if (n > UINT32_MAX - (__u64)low + 1)
		n = UINT32_MAX - (__u64)low + 1;
	t->src_first = low;
	t->naddrs = (__u32)n;
	t->max_flows = n * (o->sport_hi - o->sport_lo + 1);
}

/* The template frame: Ethernet, IPv4 or IPv6, a TCP or UDP header and
 * zero payload up to the frame size; the source address's last word, the
 * source port and the checksums are left for the program. */
static int build_template(const struct gen_opts *o, struct gen_template *t)
{
	__u32 hdrs, l3_len, l4_len, size = o->size;
	__u8 *p = t->frame;
	struct ethhdr *eth = (void *)p;
	__u32 sum;
	void *l4;

	hdrs = ETH_HLEN + (o->family == 4 ? sizeof(struct iphdr) : sizeof(struct ipv6hdr)) +
	       (o->proto == IPPROTO_TCP ? sizeof(struct tcphdr) : sizeof(struct udphdr));
	if (!size)
		size = hdrs > 64 ? hdrs : 64;
	if (size < hdrs) {
		p_err("--size %u is smaller than the headers (%u bytes)", size, hdrs);
		return -EINVAL;
	}
	memset(t->frame, 0, sizeof(t->frame));
	t->len = size;
	t->hdr_len = hdrs;
	memcpy(eth->h_dest, o->dst_mac, ETH_ALEN);
	memcpy(eth->h_source, o->src_mac, ETH_ALEN);
	l3_len = size - ETH_HLEN;

	if (o->family == 4) {
		struct iphdr *ip = (void *)(p + ETH_HLEN);

		eth->h_proto = htons(ETH_P_IP);
		ip->version = 4;
		ip->ihl = 5;
		ip->tot_len = htons((__u16)l3_len);
		ip->frag_off = htons(0x4000);	/* DF */
		ip->ttl = 64;
		ip->protocol = o->proto;
		memcpy(&ip->daddr, o->dst, 4);
		t->ip_csum_base = csum_add(0, ip, sizeof(*ip));
		l4 = ip + 1;
		l4_len = l3_len - sizeof(*ip);
		sum = csum_add(0, &ip->daddr, 4);
	} else {
		struct ipv6hdr *ip6 = (void *)(p + ETH_HLEN);

		eth->h_proto = htons(ETH_P_IPV6);
		ip6->version = 6;
		l4_len = l3_len - sizeof(*ip6);
		ip6->payload_len = htons((__u16)l4_len);
		ip6->nexthdr = o->proto;
		ip6->hop_limit = 64;
		memcpy(&ip6->saddr, o->src, 12);
		memcpy(&ip6->daddr, o->dst, 16);
		t->ip_csum_base = 0;
		l4 = ip6 + 1;
		sum = csum_add(0, &ip6->saddr, 12);
		sum = csum_add(sum, &ip6->daddr, 16);
	}
	/* The pseudo-header's length and protocol. */
	sum = csum_add16(sum, htons((__u16)l4_len));
	sum = csum_add16(sum, htons(o->proto));

	if (o->proto == IPPROTO_TCP) {
		struct tcphdr *th = l4;

		th->dest = htons(o->dport);
		th->seq = htonl(1);
		if (o->tcp_flags & GEN_TCP_ACK)
			th->ack_seq = htonl(1);
		th->doff = sizeof(*th) / 4;
		((__u8 *)th)[13] = o->tcp_flags;
		th->window = htons(65535);
	} else {
		struct udphdr *uh = l4;

		uh->dest = htons(o->dport);
		uh->len = htons((__u16)l4_len);
	}
	t->l4_csum_base = csum_add(sum, l4, l4_len);
	source_range(o, t);
	return 0;
}

static int seq_add(void *ctx, const struct trace_packet *pkt)
{
	struct gen_seq *s = ctx;

	/* A balancer only sees the client's side of a connection. */
	if (!pkt->from_client)
		return 0;
	if (s->n == GEN_MAX_SEQ)
		return 0;
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 4096;
		__u32 *ids = realloc(s->ids, cap * sizeof(*ids));

		if (!ids)
			return -ENOMEM;
		s->ids = ids;
		s->cap = cap;
	}
	s->ids[s->n++] = (__u32)pkt->flow;
	return 0;
}

/* The capture's flows in the order their client packets came: frame i
 * of the run belongs to flow ids[i % n]. What a capture gives is the shape
 * of real traffic (how many flows, how many packets each, interleaved how);
 * its addresses are not used: each flow gets a source from --src and
 * --sport like any other, so only the addresses chosen here are sent. */
static int load_sequence(const struct gen_opts *o, const struct gen_template *t,
			 struct gen_seq *s)
{
	struct trace tr = {};
	int err;

	err = trace_read(&tr, o->pcap_path, seq_add, s);
	if (err) {
		if (err == -ENOMEM)
			p_err("%s: out of memory", o->pcap_path);
		goto cleanup;
	}
	s->flows = tr.n;
	if (!s->n) {
		p_err("%s: no TCP or UDP packets over IPv4 or IPv6", o->pcap_path);
		err = -EINVAL;
		goto cleanup;
	}
	if (s->flows > t->max_flows) {
		p_err("%s: %zu flows, but --src and --sport give only %llu sources",
		      o->pcap_path, s->flows, (unsigned long long)t->max_flows);
		err = -EINVAL;
	}
cleanup:
	trace_free(&tr);
	return err;
}

static int device_info(struct gen_opts *o, int *ifindex, __u32 *mtu)
{
	struct ifreq ifr = {};
	int fd, err = 0;

	*ifindex = (int)if_nametoindex(o->dev);
	if (!*ifindex || strlen(o->dev) >= IFNAMSIZ) {
		p_err("--dev: no device '%s' in this network namespace", o->dev);
		return -ENODEV;
	}
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		err = -errno;
		p_err("socket: %s", strerror(errno));
		return err;
	}
	strcpy(ifr.ifr_name, o->dev);
	if (ioctl(fd, SIOCGIFMTU, &ifr)) {
		err = -errno;
		p_err("%s: reading the MTU: %s", o->dev, strerror(errno));
		goto cleanup;
	}
	*mtu = (__u32)ifr.ifr_mtu;
	if (!o->have_src_mac) {
		if (ioctl(fd, SIOCGIFHWADDR, &ifr)) {
			err = -errno;
			p_err("%s: reading the MAC address: %s", o->dev, strerror(errno));
			goto cleanup;
		}
		memcpy(o->src_mac, ifr.ifr_hwaddr.sa_data, ETH_ALEN);
	}
cleanup:
	close(fd);
	return err;
}

static int gen_open(const struct gen_opts *o, const struct gen_template *t,
		    const struct gen_seq *s, struct gen **out)
{
	struct gen *skel;
	int err;

	skel = gen__open();
	if (!skel) {
		err = -errno;
		p_err("opening the generator program: %s", strerror(errno));
		return err;
	}
	skel->rodata->family = (__u8)o->family;
	skel->rodata->proto = o->proto;
	skel->rodata->flows = (__u32)(o->flows ? o->flows : t->max_flows);
	skel->rodata->seq_len = (__u32)s->n;
	skel->rodata->naddrs = t->naddrs;
	skel->rodata->src_first = t->src_first;
	skel->rodata->sport_first = (__u16)o->sport_lo;
	skel->rodata->ip_csum_base = t->ip_csum_base;
	skel->rodata->l4_csum_base = t->l4_csum_base;
	memcpy(skel->bss->tmpl, t->frame, t->hdr_len);
	skel->rodata->rate = o->rate;
	skel->rodata->limit = o->count;
	if (s->n)
		bpf_map__set_max_entries(skel->maps.gen_flow_seq, (__u32)s->n);
	err = gen__load(skel);
	if (err) {
		p_err("loading the generator program: %s (root or CAP_BPF needed)",
		      strerror(-err));
		goto fail;
	}
	if (s->n) {
		LIBBPF_OPTS(bpf_map_batch_opts, bopts);
		__u32 *keys = malloc(s->n * sizeof(*keys));
		__u32 i, n = (__u32)s->n;

		if (!keys) {
			err = -ENOMEM;
			p_err("out of memory");
			goto fail;
		}
		for (i = 0; i < n; i++)
			keys[i] = i;
		err = bpf_map_update_batch(bpf_map__fd(skel->maps.gen_flow_seq), keys,
					   s->ids, &n, &bopts);
		free(keys);
		if (err) {
			p_err("filling the flow sequence: %s", strerror(-err));
			goto fail;
		}
	}
	*out = skel;
	return 0;
fail:
	gen__destroy(skel);
	return err;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void arm_timer(double secs)
{
	struct itimerval it = {};

	it.it_value.tv_sec = (time_t)secs;
	it.it_value.tv_usec = (suseconds_t)((secs - (double)it.it_value.tv_sec) * 1e6);
	alarmed = 0;
	setitimer(ITIMER_REAL, &it, NULL);
}

/*
 * Send until the count, the duration or a signal ends it. Every test run
 * with repeat > 1 first swaps the kernel's XDP dispatcher, which waits for
 * an RCU grace period (about 25 ms here), so runs are made as long as
 * possible: one run for a count, and otherwise one run that SIGALRM
 * interrupts (the kernel checks for signals between batches). With a rate
 * the program paces itself and stops at the count, so the alarm is set
 * for when the last frame is due. The program's frame counter is the
 * number sent: an interrupted run has sent what it counted.
 */
static int run_live(const struct gen_opts *o, const struct gen_template *t,
		    struct gen *skel, int ifindex, __u64 *sent, double *secs)
{
	struct xdp_md ctx = {
		.data_end = t->len,
		.ingress_ifindex = (__u32)ifindex,
	};
	LIBBPF_OPTS(bpf_test_run_opts, opts,
		.data_in = t->frame,
		.data_size_in = t->len,
		.ctx_in = &ctx,
		.ctx_size_in = sizeof(ctx),
		.flags = BPF_F_TEST_XDP_LIVE_FRAMES,
		.batch_size = o->batch,
	);
	int fd = bpf_program__fd(skel->progs.xlb_gen);
	double start;
	int err = 0;

	start = now_s();
	if (o->duration > 0)
		arm_timer(o->duration);
	while (!stop) {
		__u64 done = skel->bss->frames, left = o->count - done;

		if (o->count && !left)
			break;
		if (o->duration > 0 && alarmed)
			break;
		opts.repeat = INT_MAX;
		if (o->count && !o->rate)
			opts.repeat = left < INT_MAX ? (int)left : INT_MAX;
		if (o->count && o->rate)
			arm_timer((double)left / (double)o->rate + 0.01);
		if (bpf_prog_test_run_opts(fd, &opts)) {
			if (errno == EINTR)
				continue;
			err = -errno;
			p_err("sending on %s: %s%s", o->dev, strerror(errno),
			      errno == EINVAL ? " (live frames need kernel >= 5.18)" : "");
			break;
		}
	}
	*secs = now_s() - start;
	*sent = skel->bss->frames;
	return err;
}

/*
 * The classic pcap file format, written directly: libpcap's headers and
 * the kernel's linux/bpf.h both define struct bpf_insn.
 */
struct pcap_file_header_v2_4 {
	__u32 magic;		/* 0xa1b2c3d4: microsecond timestamps */
	__u16 version_major;
	__u16 version_minor;
	__s32 thiszone;
	__u32 sigfigs;
	__u32 snaplen;
	__u32 linktype;		/* 1: Ethernet */
};

struct pcap_record_header {
	__u32 ts_sec;
	__u32 ts_usec;
	__u32 caplen;
	__u32 len;
};

/* Run the program once per frame (not live) and write its output. */
static int run_write(const struct gen_opts *o, const struct gen_template *t,
		     struct gen *skel, __u64 *sent, double *secs)
{
	const struct pcap_file_header_v2_4 fh = {
		.magic = 0xa1b2c3d4,
		.version_major = 2,
		.version_minor = 4,
		.snaplen = GEN_MAX_FRAME,
		.linktype = 1,
	};
	__u8 out[GEN_MAX_FRAME];
	LIBBPF_OPTS(bpf_test_run_opts, opts,
		.data_in = t->frame,
		.data_size_in = t->len,
		.data_out = out,
		.repeat = 1,
	);
	int fd = bpf_program__fd(skel->progs.xlb_gen);
	double start = now_s();
	int err = 0;
	FILE *f;
	__u64 i;

	f = fopen(o->write_path, "wb");
	if (!f) {
		err = -errno;
		p_err("%s: %s", o->write_path, strerror(errno));
		return err;
	}
	fwrite(&fh, sizeof(fh), 1, f);
	for (i = 0; i < o->count && !stop; i++) {
		struct pcap_record_header rh;
		struct timeval tv;

		opts.data_size_out = sizeof(out);
		if (bpf_prog_test_run_opts(fd, &opts)) {
			err = -errno;
			p_err("running the generator program: %s", strerror(errno));
			goto cleanup;
		}
		if (opts.retval != XDP_TX) {
			p_err("the generator program returned %u, not XDP_TX", opts.retval);
			err = -EPROTO;
			goto cleanup;
		}
		gettimeofday(&tv, NULL);
		rh.ts_sec = (__u32)tv.tv_sec;
		rh.ts_usec = (__u32)tv.tv_usec;
		rh.caplen = rh.len = opts.data_size_out;
		fwrite(&rh, sizeof(rh), 1, f);
		fwrite(out, opts.data_size_out, 1, f);
	}
cleanup:
	if ((ferror(f) | fclose(f)) && !err) {
		err = -EIO;
		p_err("%s: write failed", o->write_path);
	}
	*secs = now_s() - start;
	*sent = skel->bss->frames;
	return err;
}

static void on_signal(int sig)
{
	if (sig == SIGALRM)
		alarmed = 1;
	else
		stop = 1;
}

static void report(const struct gen_opts *o, const struct gen_template *t,
		   __u64 flows, __u64 sent, double secs)
{
	static const char letters[] = "FSRPAUEC";
	double pps = secs > 0 ? (double)sent / secs : 0;
	char what[16] = "UDP";
	size_t i, n;

	if (o->proto == IPPROTO_TCP) {
		n = (size_t)snprintf(what, sizeof(what), "TCP ");
		for (i = 0; i < 8; i++)
			if (o->tcp_flags & (1 << i))
				what[n++] = letters[i];
		what[n] = '\0';
	}
	if (o->json) {
		printf("{\"sent\":%llu,\"seconds\":%.6f,\"pps\":%.0f,\"flows\":%llu,"
		       "\"size\":%u,\"family\":%d,\"proto\":\"%s\"}\n",
		       (unsigned long long)sent, secs, pps, (unsigned long long)flows,
		       t->len, o->family, what);
		return;
	}
	printf("%s %llu frames (%u bytes, IPv%d %s, %llu flows) in %.3f s: %.0f pps\n",
	       o->write_path ? "wrote" : "sent", (unsigned long long)sent, t->len,
	       o->family, what, (unsigned long long)flows, secs, pps);
}

int main(int argc, char **argv)
{
	static struct gen_template t;
	struct gen_opts o = {
		.flows = GEN_DEFAULT_FLOWS,
		.batch = GEN_DEFAULT_BATCH,
		.cpu = -1,
		.proto = IPPROTO_TCP,
		.tcp_flags = GEN_TCP_SYN,
		.sport_lo = 1024,
		.sport_hi = 65535,
		.dst_mac = { 0x02, 0, 0, 0, 0, 0x02 },
		.src_mac = { 0x02, 0, 0, 0, 0, 0x01 },
	};
	struct sigaction sa = { .sa_handler = on_signal };
	struct gen_seq seq = {};
	struct gen *skel = NULL;
	int ifindex = 0, err;
	__u64 flows, sent = 0;
	__u32 mtu = 0;
	double secs = 0;

	xlb_progname = "xlb-gen";
	err = parse_args(argc, argv, &o);
	if (err)
		return EXIT_FAILURE;
	if (!o.have_src) {
		if (o.family == 4)
			parse_prefix("198.51.100.0/24", &o);
		else
			parse_prefix("2001:db8:ffff::/64", &o);
	}
	if (o.dev) {
		err = device_info(&o, &ifindex, &mtu);
		if (err)
			return EXIT_FAILURE;
	}
	err = build_template(&o, &t);
	if (err)
		return EXIT_FAILURE;
	if (o.dev && t.len > mtu + ETH_HLEN) {
		p_err("--size %u exceeds %s's MTU %u plus the Ethernet header", t.len,
		      o.dev, mtu);
		return EXIT_FAILURE;
	}
	if (o.flows > t.max_flows) {
		p_err("--flows %llu: --src and --sport give only %llu distinct sources",
		      (unsigned long long)o.flows, (unsigned long long)t.max_flows);
		return EXIT_FAILURE;
	}
	if (!o.flows && t.max_flows > UINT32_MAX)
		t.max_flows = UINT32_MAX;
	if (o.pcap_path) {
		err = load_sequence(&o, &t, &seq);
		if (err)
			goto cleanup;
	}
	flows = seq.n ? seq.flows : (o.flows ? o.flows : t.max_flows);

	if (o.cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(o.cpu, &set);
		if (sched_setaffinity(0, sizeof(set), &set)) {
			err = -errno;
			p_err("--cpu %d: %s", o.cpu, strerror(errno));
			goto cleanup;
		}
	}
	err = gen_open(&o, &t, &seq, &skel);
	if (err)
		goto cleanup;

	/* No SA_RESTART: a signal must end a running test run. */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGALRM, &sa, NULL);
	if (o.write_path)
		err = run_write(&o, &t, skel, &sent, &secs);
	else
		err = run_live(&o, &t, skel, ifindex, &sent, &secs);
	if (!err)
		report(&o, &t, flows, sent, secs);
cleanup:
	gen__destroy(skel);
	free(seq.ids);
	return err ? EXIT_FAILURE : EXIT_SUCCESS;
}
