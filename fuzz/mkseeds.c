// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * mkseeds FILE: write the Ethernet capture of fuzz/corpus/pcap/edge.pcap,
 * one frame of each kind the capture reader sorts apart, so the fuzzer
 * starts from every branch of it: IPv4 with options, first and later
 * fragments of both families, IPv6 extension headers, ICMP and ICMPv6,
 * two VLAN tags, ARP, a zero IPv4 total length, headers cut short.
 * Built from loader/sim/packets.h and written by xlb's pcap writer.
 */
#include <stdio.h>
#include <string.h>

#include "packets.h"
#include "pcap_write.h"

static struct xlb_pcap_writer *w;
static unsigned long long usec;

static void put(const __u8 *frame, size_t len)
{
	xlb_pcap_add(w, frame, len, usec += 1000);
}

static size_t build(const struct pkt_desc *d, __u8 *frame)
{
	size_t len = pkt_build(d, frame);

	if (!len) {
		fprintf(stderr, "mkseeds: bad packet description\n");
		return 0;
	}
	put(frame, len);
	return len;
}

int main(int argc, char **argv)
{
	static const __u8 ip_opt[4] = { 1, 1, 1, 0 };	/* NOP NOP NOP EOL */
	struct pkt_desc v4 = {
		.family = 4, .src = "198.51.100.7", .dst = "192.0.2.10",
		.proto = IPPROTO_TCP, .sport = 40000, .dport = 80,
		.tcp_flags = PKT_TCP_SYN,
	};
	struct pkt_desc v6 = {
		.family = 6, .src = "2001:db8:c::7", .dst = "2001:db8:5::10",
		.proto = IPPROTO_UDP, .sport = 40001, .dport = 53, .payload_len = 8,
	};
	struct pkt_desc d;
	__u8 frame[PKT_MAX];
	size_t len;

	if (argc != 2) {
		fprintf(stderr, "usage: mkseeds FILE\n");
		return 2;
	}
	if (xlb_pcap_create(argv[1], &w)) {
		fprintf(stderr, "mkseeds: cannot create %s\n", argv[1]);
		return 1;
	}

	/* A TCP handshake over IPv4, the SYN-ACK with options in IP. */
	build(&v4, frame);
	d = v4;
	d.src = v4.dst, d.dst = v4.src, d.sport = v4.dport, d.dport = v4.sport;
	d.tcp_flags = PKT_TCP_SYN | PKT_TCP_ACK;
	d.ip_opt = ip_opt, d.ip_opt_len = sizeof(ip_opt);
	build(&d, frame);
	/* IPv4 fragments: the first (ports) and a later one (none). */
	d = v4, d.proto = IPPROTO_UDP, d.frag = true, d.mf = true, d.frag_id = 9;
	d.payload_len = 16;
	build(&d, frame);
	d.frag_off8 = 3, d.mf = false;
	build(&d, frame);
	/* IPv4 ICMP echo, behind two VLAN tags (802.1ad outside). */
	d = v4, d.proto = IPPROTO_ICMP, d.icmp_type = 8, d.vlans = 2;
	d.vlan_tpid[0] = PKT_ETH_P_8021AD, d.vlan_id[0] = 100, d.vlan_id[1] = 200;
	build(&d, frame);
	/* IPv4 with a zero total length (segmentation offload). */
	len = build(&v4, frame);
	frame[PKT_ETH_LEN + 2] = frame[PKT_ETH_LEN + 3] = 0;
	put(frame, len);
	/* A TCP header cut short. */
	pkt_build(&v4, frame);
	put(frame, PKT_ETH_LEN + 20 + 10);

	/* IPv6 UDP through hop-by-hop, routing and destination options. */
	build(&v6, frame);
	d = v6;
	d.n_ext = 3;
	d.ext[0] = (struct pkt_ext6){ 0, 0 };
	d.ext[1] = (struct pkt_ext6){ 43, 1 };
	d.ext[2] = (struct pkt_ext6){ 60, 0 };
	build(&d, frame);
	/* IPv6 fragments: the first and a later one. */
	d = v6, d.frag = true, d.mf = true, d.frag_id = 77;
	build(&d, frame);
	d.frag_off8 = 2, d.mf = false;
	build(&d, frame);
	/* ICMPv6 echo. */
	d = v6, d.proto = IPPROTO_ICMPV6, d.icmp_type = 128;
	build(&d, frame);
	/* An IPv6 header cut short. */
	pkt_build(&v6, frame);
	put(frame, PKT_ETH_LEN + 30);

	/* ARP: not IP. */
	d = v4;
	len = pkt_l2(&d, PKT_ETH_P_ARP, frame);
	memset(frame + len, 0, 28);
	put(frame, len + 28);

	return xlb_pcap_close(w) ? 1 : 0;
}
