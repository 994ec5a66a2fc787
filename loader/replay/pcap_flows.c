// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Flows out of pcap and pcapng captures (see pcap_flows.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pcap/pcap.h>

#include "report.h"
#include "flow_hash.h"
#include "pcap_flows.h"

#define ETH_P_IPV4	0x0800
#define ETH_P_IPV6	0x86dd
#define ETH_P_8021Q	0x8100
#define ETH_P_8021AD	0x88a8
#define ETH_P_QINQ1	0x9100	/* pre-standard QinQ */

#define TCP_FIN		0x01
#define TCP_SYN		0x02
#define TCP_ACK		0x10

/* Where the network layer starts and what it is. */
enum l3 {
	L3_SHORT = -1,		/* the link header is cut short */
	L3_OTHER = 0,		/* not IP */
	L3_IPV4 = 4,
	L3_IPV6 = 6,
};

/* A packet's TCP/UDP tuple as parsed. */
struct parsed {
	struct xlb_flow tuple;	/* as sent: src -> dst */
	__u8 tcp_flags;
	__u32 l4_len;
};

enum parse_result {
	PARSE_FLOW,
	PARSE_NOT_IP,
	PARSE_NOT_L4,
	PARSE_FRAGMENT,
	PARSE_SHORT,
};

static const __u64 table_key[2] = { 0x78646c2d666c6f77ULL, 0x7461626c65000000ULL };

bool trace_link_supported(int dlt)
{
	switch (dlt) {
	case DLT_EN10MB:
	case DLT_LINUX_SLL:
	case DLT_LINUX_SLL2:
	case DLT_RAW:
	case DLT_IPV4:
	case DLT_IPV6:
	case DLT_NULL:
	case DLT_LOOP:
		return true;
	}
	return false;
}

static __u16 get16(const __u8 *p)
{
	return (__u16)(p[0] << 8 | p[1]);
}

static __u32 get32(const __u8 *p)
{
	return (__u32)p[0] << 24 | (__u32)p[1] << 16 | (__u32)p[2] << 8 | p[3];
}

/* Step over 802.1Q/802.1ad tags (any depth) to the inner EtherType. */
static enum l3 ethertype_l3(const __u8 *p, __u32 len, __u32 *off, __u16 type)
{
	while (type == ETH_P_8021Q || type == ETH_P_8021AD ||
	       type == ETH_P_QINQ1) {
		if (*off + 4 > len)
			return L3_SHORT;
		type = get16(p + *off + 2);
		*off += 4;
	}
	if (type == ETH_P_IPV4)
		return L3_IPV4;
	if (type == ETH_P_IPV6)
		return L3_IPV6;
	return L3_OTHER;
}

/* BSD loopback: the address family of the sending host (DLT_NULL in that
 * host's byte order, DLT_LOOP in network order). IPv6 has three values,
 * one per BSD flavour. */
static enum l3 bsd_family_l3(__u32 af)
{
	if (af > 0xffff)
		af = __builtin_bswap32(af);
	if (af == 2)
		return L3_IPV4;
	if (af == 24 || af == 28 || af == 30)
		return L3_IPV6;
	return L3_OTHER;
}

/* Find the network layer behind the link header of a frame. */
static enum l3 link_l3(int dlt, const __u8 *p, __u32 len, __u32 *off)
{
	switch (dlt) {
	case DLT_EN10MB:
		*off = 14;
		if (len < 14)
			return L3_SHORT;
		return ethertype_l3(p, len, off, get16(p + 12));
	case DLT_LINUX_SLL:
		*off = 16;
		if (len < 16)
			return L3_SHORT;
		return ethertype_l3(p, len, off, get16(p + 14));
	case DLT_LINUX_SLL2:
		*off = 20;
		if (len < 20)
			return L3_SHORT;
		return ethertype_l3(p, len, off, get16(p));
	case DLT_RAW:
		/* Raw IP is defined by its version nibble. */
		*off = 0;
		if (len < 1)
			return L3_SHORT;
		if (p[0] >> 4 == 4)
			return L3_IPV4;
		return p[0] >> 4 == 6 ? L3_IPV6 : L3_OTHER;
	case DLT_IPV4:
		*off = 0;
		return L3_IPV4;
	case DLT_IPV6:
		*off = 0;
		return L3_IPV6;
	case DLT_NULL:
	case DLT_LOOP:
		*off = 4;
		if (len < 4)
			return L3_SHORT;
		if (dlt == DLT_LOOP)
			return bsd_family_l3(get32(p));
		return bsd_family_l3(p[0] | p[1] << 8 | p[2] << 16 |
				     (__u32)p[3] << 24);
	}
	return L3_OTHER;
}

/* The ports (and TCP flags) at the start of the transport header. */
static enum parse_result parse_l4(const __u8 *p, __u32 len, __u8 proto,
				  struct parsed *out)
{
	if (proto != IPPROTO_TCP && proto != IPPROTO_UDP)
		return PARSE_NOT_L4;
	if (len < (proto == IPPROTO_TCP ? 14U : 4U))
		return PARSE_SHORT;
	out->tuple.proto = proto;
	memcpy(&out->tuple.sport, p, 2);
	memcpy(&out->tuple.dport, p + 2, 2);
	out->tcp_flags = proto == IPPROTO_TCP ? p[13] : 0;
	return PARSE_FLOW;
}

static enum parse_result parse_ipv4(const __u8 *p, __u32 len,
				    struct parsed *out)
{
	__u32 hlen, total;

	if (len < 20 || p[0] >> 4 != 4)
		return PARSE_SHORT;
	hlen = (p[0] & 0xf) * 4;
	if (hlen < 20 || len < hlen)
		return PARSE_SHORT;
	if (get16(p + 6) & 0x1fff)
		return PARSE_FRAGMENT;
	out->tuple.family = XLB_AF_INET;
	memcpy(&out->tuple.src[0], p + 12, 4);
	memcpy(&out->tuple.dst[0], p + 16, 4);
	total = get16(p + 2);
	/* A zero total length comes from segmentation offload on the
	 * capturing host: fall back to what was captured. */
	out->l4_len = total > hlen ? total - hlen : len - hlen;
	return parse_l4(p + hlen, len - hlen, p[9], out);
}

static enum parse_result parse_ipv6(const __u8 *p, __u32 len,
				    struct parsed *out)
{
	__u32 off = 40, payload;
	__u8 next;
	int hops;

	if (len < 40 || p[0] >> 4 != 6)
		return PARSE_SHORT;
	out->tuple.family = XLB_AF_INET6;
	memcpy(out->tuple.src, p + 8, 16);
	memcpy(out->tuple.dst, p + 24, 16);
	payload = get16(p + 4);
	next = p[6];
	/* Extension headers, bounded so a malicious chain cannot loop long. */
	for (hops = 0; hops < 8; hops++) {
		if (next != 0 && next != 43 && next != 44 && next != 51 &&
		    next != 60)
			break;
		if (off + 8 > len)
			return PARSE_SHORT;
		if (next == 44) {
			if (get16(p + off + 2) >> 3)
				return PARSE_FRAGMENT;
			next = p[off];
			off += 8;
		} else if (next == 51) {
			__u32 l = (p[off + 1] + 2U) * 4;

			next = p[off];
			off += l;
		} else {
			__u32 l = (p[off + 1] + 1U) * 8;

			next = p[off];
			off += l;
		}
	}
	if (off > len)
		return PARSE_SHORT;
	out->l4_len = payload + 40 > off ? payload + 40 - off : len - off;
	return parse_l4(p + off, len - off, next, out);
}

static enum parse_result parse_packet(int dlt, const __u8 *p, __u32 len,
				      struct parsed *out)
{
	__u32 off = 0;

	memset(out, 0, sizeof(*out));
	switch (link_l3(dlt, p, len, &off)) {
	case L3_SHORT:
		return PARSE_SHORT;
	case L3_OTHER:
		return PARSE_NOT_IP;
	case L3_IPV4:
		return parse_ipv4(p + off, len - off, out);
	case L3_IPV6:
		return parse_ipv6(p + off, len - off, out);
	}
	return PARSE_NOT_IP;
}

/* Compare the endpoints (address, port) of a tuple: <0 when the source
 * sorts first. */
static int endpoint_order(const struct xlb_flow *f)
{
	int c = memcmp(f->src, f->dst, sizeof(f->src));

	if (c)
		return c;
	return (int)ntohs(f->sport) - (int)ntohs(f->dport);
}

static void reverse(struct xlb_flow *f)
{
	__be32 a[4];
	__be16 p;

	memcpy(a, f->src, sizeof(a));
	memcpy(f->src, f->dst, sizeof(a));
	memcpy(f->dst, a, sizeof(a));
	p = f->sport;
	f->sport = f->dport;
	f->dport = p;
}

/* The key of a connection: the same for both directions. */
static struct xlb_flow direction_free(const struct xlb_flow *f)
{
	struct xlb_flow k = *f;

	if (endpoint_order(&k) > 0)
		reverse(&k);
	return k;
}

static int grow_slots(struct trace *t)
{
	size_t n = t->n_slots ? t->n_slots * 2 : 1024, i;
	__u32 *slots = calloc(n, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (i = 0; i < t->n; i++) {
		size_t s = xlb_flow_hash(&t->keys[i], table_key) & (n - 1);

		while (slots[s])
			s = (s + 1) & (n - 1);
		slots[s] = i + 1;
	}
	free(t->slots);
	t->slots = slots;
	t->n_slots = n;
	return 0;
}

/* The flow of a packet's tuple, created when new; returns its index or
 * -ENOMEM. */
static long flow_of(struct trace *t, const struct xlb_flow *tuple)
{
	struct xlb_flow key = direction_free(tuple);
	size_t s;
	int err;

	if ((t->n + 1) * 2 > t->n_slots) {
		err = grow_slots(t);
		if (err)
			return err;
	}
	s = xlb_flow_hash(&key, table_key) & (t->n_slots - 1);
	for (; t->slots[s]; s = (s + 1) & (t->n_slots - 1)) {
		if (!memcmp(&t->keys[t->slots[s] - 1], &key, sizeof(key)))
			return t->slots[s] - 1;
	}
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 1024;
		struct trace_flow *flows;
		struct xlb_flow *keys;

		flows = realloc(t->flows, cap * sizeof(*flows));
		if (!flows)
			return -ENOMEM;
		t->flows = flows;
		keys = realloc(t->keys, cap * sizeof(*keys));
		if (!keys)
			return -ENOMEM;
		t->keys = keys;
		t->cap = cap;
	}
	t->keys[t->n] = key;
	memset(&t->flows[t->n], 0, sizeof(t->flows[t->n]));
	t->flows[t->n].tuple = *tuple;
	t->slots[s] = t->n + 1;
	return t->n++;
}

static bool same_source(const struct xlb_flow *a, const struct xlb_flow *b)
{
	return !memcmp(a->src, b->src, sizeof(a->src)) && a->sport == b->sport;
}

/*
 * The client is the side that sent the SYN (or received the SYN-ACK);
 * without either, the side that sent the first packet seen.
 */
static void orient(struct trace_flow *f, const struct parsed *p)
{
	bool syn = (p->tcp_flags & (TCP_SYN | TCP_FIN)) == TCP_SYN;
	bool client_sent;

	if (f->by_syn || !syn)
		return;
	client_sent = !(p->tcp_flags & TCP_ACK);
	f->tuple = p->tuple;
	if (!client_sent)
		reverse(&f->tuple);
	f->by_syn = true;
}

/* A line a second at most: *last is when it was last written, one per read. */
static void show_progress(struct trace *t, const char *path, time_t *last,
			  bool done)
{
	time_t now;

	if (!t->progress)
		return;
	if (done) {
		fprintf(stderr, "\r\033[K");
		return;
	}
	now = time(NULL);
	if (now == *last)
		return;
	*last = now;
	fprintf(stderr, "\r\033[Kreading %s: %llu packets, %zu flows", path,
		(unsigned long long)t->stats.packets, t->n);
}

static int read_packets(struct trace *t, pcap_t *pc, const char *path,
			trace_packet_fn fn, void *ctx)
{
	int dlt = pcap_datalink(pc);
	struct pcap_pkthdr *hdr;
	const u_char *data;
	time_t shown = 0;
	int ret;

	while ((ret = pcap_next_ex(pc, &hdr, &data)) == 1) {
		struct trace_packet tp = {};
		struct trace_flow *f;
		struct parsed p;
		long idx;

		t->stats.packets++;
		if (!(t->stats.packets & 0xffff))
			show_progress(t, path, &shown, false);
		switch (parse_packet(dlt, data, hdr->caplen, &p)) {
		case PARSE_FLOW:
			break;
		case PARSE_NOT_IP:
			t->stats.skipped_not_ip++;
			continue;
		case PARSE_NOT_L4:
			t->stats.skipped_not_l4++;
			continue;
		case PARSE_FRAGMENT:
			t->stats.skipped_fragment++;
			continue;
		case PARSE_SHORT:
			t->stats.skipped_short++;
			continue;
		}
		idx = flow_of(t, &p.tuple);
		if (idx < 0) {
			p_err("%s: %s", path, strerror((int)-idx));
			return (int)idx;
		}
		f = &t->flows[idx];
		orient(f, &p);
		f->packets++;
		f->bytes += hdr->len;
		t->stats.flow_packets++;
		if (!fn)
			continue;
		tp.flow = idx;
		tp.from_client = same_source(&p.tuple, &f->tuple);
		tp.tcp_flags = p.tcp_flags;
		tp.l4_len = p.l4_len;
		tp.wire_len = hdr->len;
		tp.ts_us = (__u64)hdr->ts.tv_sec * 1000000 + hdr->ts.tv_usec;
		ret = fn(ctx, &tp);
		if (ret)
			return ret;
	}
	show_progress(t, path, &shown, true);
	if (ret == PCAP_ERROR) {
		p_err("%s: %s", path, pcap_geterr(pc));
		return -EIO;
	}
	return 0;
}

int trace_read(struct trace *t, const char *path, trace_packet_fn fn,
	       void *ctx)
{
	char errbuf[PCAP_ERRBUF_SIZE] = "";
	pcap_t *pc = NULL;
	FILE *fp;
	int dlt, err;

	/* Open the file ourselves so every message names it the same way. */
	fp = fopen(path, "rb");
	if (!fp) {
		err = -errno;
		p_err("%s: %s", path, strerror(errno));
		return err;
	}
	pc = pcap_fopen_offline(fp, errbuf);
	if (!pc) {
		fclose(fp);
		p_err("%s: not a pcap or pcapng capture (%s)", path, errbuf);
		return -EINVAL;
	}
	t->stats.files++;
	dlt = pcap_datalink(pc);
	if (!trace_link_supported(dlt)) {
		const char *name = pcap_datalink_val_to_name(dlt);

		p_info("%s: link type %d (%s) is not supported; file skipped",
		       path, dlt, name ? name : "unknown");
		t->stats.files_skipped++;
		err = 0;
		goto cleanup;
	}
	err = read_packets(t, pc, path, fn, ctx);
cleanup:
	pcap_close(pc);
	return err;
}

void trace_free(struct trace *t)
{
	free(t->flows);
	free(t->keys);
	free(t->slots);
	memset(t, 0, sizeof(*t));
}
