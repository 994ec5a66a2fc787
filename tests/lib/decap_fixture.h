/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * A backend for the backends' program (bpf/decap.bpf.c), shared by
 * tests/test_decap_gue.c and bench/bench_decap.c: in the packet sandbox's
 * network namespace (loader/sim/sandbox.h), whose "in" interface is the
 * backend's, the VIP and a client's address on loopback with real sockets
 * between them, and GUE frames as a balancer sends them, written from
 * draft-ietf-intarea-gue and include/gue.h, independently of the program.
 */
#ifndef XLB_TEST_DECAP_FIXTURE_H
#define XLB_TEST_DECAP_FIXTURE_H

#include <stdbool.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include "gue.h"
#include "sandbox.h"
#include "packets.h"
#include "decap_trust.h"

/* The sandbox: this backend is its "in" interface. */
#define BACKEND4	XLB_SANDBOX_SRC4
#define BACKEND6	XLB_SANDBOX_SRC6
#define BALANCER4	"198.51.100.50"
#define BALANCER6	"2001:db8:100::50"
#define VIP4		"192.0.2.10"
#define VIP6		"2001:db8:f::10"
#define CLIENT4		"203.0.113.5"
#define CLIENT6		"2001:db8:c::5"
/* Previous backends, by the sandbox's routes. */
#define PREV4_TX	"203.0.113.20"		/* out of "in" again */
#define PREV6_TX	"2001:db8:b0::20"
#define PREV4_REDIR	"203.0.113.70"		/* out of "other" */
#define PREV6_REDIR	"2001:db8:b1::70"
#define PREV4_NO_NEIGH	"203.0.113.130"
#define PREV6_NO_NEIGH	"2001:db8:b2::1"
#define PREV4_UNREACH	"203.0.113.200"
#define PREV6_UNREACH	"2001:db8:b3::1"
#define PREV4_SMALL_MTU	"203.0.113.21"		/* routes the tests add */
#define PREV6_SMALL_MTU	"2001:db8:b0::21"
#define OTHER_LOCAL4	"198.51.100.129"	/* the "other" interface's */
/* The fleet: every previous backend above. The balancers: one address. */
#define FLEET4		"203.0.113.0/24"
#define FLEET6		"2001:db8:b0::/46"

#define PORT_TCP	80
#define PORT_UDP_CONN	53	/* a socket connected to CLIENT:PEER_PORT */
#define PORT_UDP_SERV	54	/* an unconnected service socket */
#define PEER_PORT	5353
#define PORT_ESTAB	41000	/* client port of the established connections */
#define PORT_TW		41001	/* of the connections in time-wait */
#define PORT_UNKNOWN	42000

static const __u8 mac_in[6] = XLB_SANDBOX_MAC_IN;
static const __u8 mac_gw[6] = XLB_SANDBOX_MAC_GW;
static const __u8 mac_other[6] = XLB_SANDBOX_MAC_OTHER;
static const __u8 mac_other_gw[6] = XLB_SANDBOX_MAC_OTHER_GW;

/* A GUE frame as a balancer sends it; fields a test may spoil. */
struct gue_frame {
	int outer;			/* 4 or 6 */
	const char *src, *dst;		/* outer addresses */
	const __u8 *dmac, *smac;	/* NULL: mac_in, mac_gw */
	__u8 ttl;			/* 0: 63 (one router since the balancer) */
	bool no_field;			/* hlen 0: no xlb field */
	__u8 hops;
	int prev_family;		/* 0, 4 or 6 */
	const char *prev;
	bool udp_csum_zero;		/* IPv4: none; IPv6: RFC 6935 */
	__u16 port;			/* 0: XLB_GUE_DEFAULT_PORT */
};

/* The inner packet of a flow to the VIP (its IP packet, no Ethernet). */
struct inner {
	int family;
	__u8 proto;
	__u16 sport, dport;
	__u8 tcp_flags;		/* 0: ACK */
	size_t payload_len;	/* 0: 64 bytes */
};

static inline size_t inner_ip(const struct inner *in, __u8 *out)
{
	struct pkt_desc d = {
		.family = in->family,
		.src = in->family == 4 ? CLIENT4 : CLIENT6,
		.dst = in->family == 4 ? VIP4 : VIP6,
		.proto = in->proto, .sport = in->sport, .dport = in->dport,
		.tcp_flags = in->tcp_flags,
		.payload_len = in->payload_len ? in->payload_len : 64,
	};
	__u8 frame[PKT_MAX];
	size_t len = pkt_build(&d, frame);

	if (len < PKT_ETH_LEN)
		return 0;
	memcpy(out, frame + PKT_ETH_LEN, len - PKT_ETH_LEN);
	return len - PKT_ETH_LEN;
}

/* The frame the stack must see after decapsulation: the inner packet
 * behind the GUE frame's Ethernet addresses. */
static inline size_t inner_frame(const struct inner *in, __u8 *out)
{
	size_t len = inner_ip(in, out + PKT_ETH_LEN);

	memcpy(out, mac_in, 6);
	memcpy(out + 6, mac_gw, 6);
	pkt_put16(out + 12, in->family == 4 ? PKT_ETH_P_IP : PKT_ETH_P_IPV6);
	return len ? PKT_ETH_LEN + len : 0;
}

/* Written from draft-ietf-intarea-gue and include/gue.h: outer IP, UDP
 * with a valid checksum (or zero), GUE base header, xlb's field. */
static inline size_t gue_build(const struct gue_frame *g, const __u8 *inner,
			size_t inner_len, int inner_family, __u8 *out)
{
	size_t ilen = g->outer == 4 ? 20 : 40, ext = g->no_field ? 0 : 20;
	size_t ulen = 8 + 4 + ext + inner_len;
	__u8 *ip = out + PKT_ETH_LEN, *udp = ip + ilen, *gue = udp + 8;
	__u8 src[16], dst[16];
	__u32 sum;

	memcpy(out, g->dmac ? g->dmac : mac_in, 6);
	memcpy(out + 6, g->smac ? g->smac : mac_gw, 6);
	pkt_put16(out + 12, g->outer == 4 ? PKT_ETH_P_IP : PKT_ETH_P_IPV6);
	if (!pkt_addr(g->outer, g->src, src) || !pkt_addr(g->outer, g->dst, dst))
		return 0;
	memset(ip, 0, ilen);
	if (g->outer == 4) {
		ip[0] = 0x45;
		pkt_put16(ip + 2, (__u16)(ilen + ulen));
		pkt_put16(ip + 6, 0x4000);
		ip[8] = g->ttl ? g->ttl : 63;
		ip[9] = IPPROTO_UDP;
		memcpy(ip + 12, src, 4);
		memcpy(ip + 16, dst, 4);
		pkt_put16(ip + 10, pkt_fold(pkt_sum(ip, 20, 0)));
	} else {
		pkt_put32(ip, 6U << 28 | 0x12345);
		pkt_put16(ip + 4, (__u16)ulen);
		ip[6] = IPPROTO_UDP;
		ip[7] = g->ttl ? g->ttl : 63;
		memcpy(ip + 8, src, 16);
		memcpy(ip + 24, dst, 16);
	}
	pkt_put16(udp, 49152 + 7);			/* from the flow hash */
	pkt_put16(udp + 2, g->port ? g->port : XLB_GUE_DEFAULT_PORT);
	pkt_put16(udp + 4, (__u16)ulen);
	pkt_put16(udp + 6, 0);
	gue[0] = (__u8)(ext / 4);			/* variant 0, C 0, hlen */
	gue[1] = inner_family == 4 ? IPPROTO_IPIP : IPPROTO_IPV6;
	pkt_put16(gue + 2, 0);
	if (ext) {
		memset(gue + 4, 0, ext);
		gue[4] = XLB_GUE_PRIV_MAGIC;
		gue[5] = g->hops;
		gue[6] = (__u8)g->prev_family;
		if (g->prev_family && !pkt_addr(g->prev_family, g->prev, gue + 8))
			return 0;
	}
	memcpy(gue + 4 + ext, inner, inner_len);
	if (!g->udp_csum_zero) {
		sum = pkt_pseudo_sum(g->outer, src, dst, IPPROTO_UDP, ulen);
		sum = pkt_fold(pkt_sum(udp, ulen, sum));
		pkt_put16(udp + 6, (__u16)(sum ? sum : 0xffff));
	}
	return PKT_ETH_LEN + ilen + ulen;
}

/* The GUE frame of inner packet in. */
static inline size_t gue_frame(const struct gue_frame *g, const struct inner *in, __u8 *out)
{
	__u8 ip[PKT_MAX];
	size_t len = inner_ip(in, ip);

	return len ? gue_build(g, ip, len, in->family, out) : 0;
}

/* The socket address of addr:port. */
static inline void sockaddr_of(int family, const char *addr, __u16 port,
			       struct sockaddr_storage *ss)
{
	struct sockaddr_in *s4 = (void *)ss;
	struct sockaddr_in6 *s6 = (void *)ss;

	memset(ss, 0, sizeof(*ss));
	if (family == 4) {
		s4->sin_family = AF_INET;
		s4->sin_port = htons(port);
		pkt_addr(4, addr, (__u8 *)&s4->sin_addr);
	} else {
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(port);
		pkt_addr(6, addr, (__u8 *)&s6->sin6_addr);
	}
}

/* A socket of type bound to addr:port; -1 on failure. */
static inline int sock_at(int family, int type, const char *addr, __u16 port)
{
	struct sockaddr_storage ss;
	int fd, one = 1;

	fd = socket(family == 4 ? AF_INET : AF_INET6, type, 0);
	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	sockaddr_of(family, addr, port, &ss);
	if (bind(fd, (void *)&ss, sizeof(ss))) {
		close(fd);
		return -1;
	}
	return fd;
}

static inline int connect_to(int fd, int family, const char *addr, __u16 port)
{
	struct sockaddr_storage ss;

	sockaddr_of(family, addr, port, &ss);
	return connect(fd, (void *)&ss, sizeof(ss));
}

/*
 * For each family: a listener on VIP:80; a connection to it from
 * CLIENT:PORT_ESTAB, established; one from CLIENT:PORT_TW that the server
 * closed first, so its server side is in time-wait; a UDP socket on
 * VIP:53 connected to CLIENT:PEER_PORT and one on VIP:54 unconnected.
 * The sockets stay open until the test exits.
 */
static inline int backend_sockets(int family)
{
	const char *vip = family == 4 ? VIP4 : VIP6;
	const char *client = family == 4 ? CLIENT4 : CLIENT6;
	int lfd, cfd, afd, ufd;

	lfd = sock_at(family, SOCK_STREAM, vip, PORT_TCP);
	if (lfd < 0 || listen(lfd, 16))
		return -1;
	cfd = sock_at(family, SOCK_STREAM, client, PORT_ESTAB);
	if (cfd < 0 || connect_to(cfd, family, vip, PORT_TCP) ||
	    accept(lfd, NULL, NULL) < 0)
		return -1;
	cfd = sock_at(family, SOCK_STREAM, client, PORT_TW);
	if (cfd < 0 || connect_to(cfd, family, vip, PORT_TCP))
		return -1;
	afd = accept(lfd, NULL, NULL);
	if (afd < 0)
		return -1;
	close(afd);			/* the server's side closes first */
	usleep(20000);
	close(cfd);
	ufd = sock_at(family, SOCK_DGRAM, vip, PORT_UDP_CONN);
	if (ufd < 0 || connect_to(ufd, family, client, PEER_PORT))
		return -1;
	return sock_at(family, SOCK_DGRAM, vip, PORT_UDP_SERV) < 0 ? -1 : 0;
}

/* The program's maps, as file descriptors. */
struct decap_maps {
	int cfg, addrs, fleet, lbs, out;
};

/*
 * What the backend trusts, as `xlb host setup` would tell it: its "in"
 * address as the tunnel endpoint, the VIPs, the fleet, the balancer
 * (sources checked), and the "other" interface as a way out. 0 or -errno.
 */
static inline int decap_trust_backend(const struct decap_maps *m, int other_ifindex)
{
	if (decap_trust_addr(m->addrs, BACKEND4, XLB_DECAP_ADDR_TUNNEL) ||
	    decap_trust_addr(m->addrs, BACKEND6, XLB_DECAP_ADDR_TUNNEL) ||
	    decap_trust_addr(m->addrs, VIP4, XLB_DECAP_ADDR_VIP) ||
	    decap_trust_addr(m->addrs, VIP6, XLB_DECAP_ADDR_VIP) ||
	    decap_trust_prefix(m->fleet, FLEET4) ||
	    decap_trust_prefix(m->fleet, FLEET6) ||
	    decap_trust_prefix(m->lbs, BALANCER4 "/32") ||
	    decap_trust_prefix(m->lbs, BALANCER6 "/128") ||
	    decap_set_config(m->cfg, 0, XLB_DECAP_F_CHECK_SOURCE) ||
	    decap_allow_egress(m->out, (__u32)other_ifindex, 1))
		return -EIO;
	return 0;
}

/* The backend in the sandbox the caller entered: the addresses on lo and
 * the sockets of backend_sockets() for both families. 0 or -1. */
static inline int decap_backend_setup(void)
{
	static const char addrs[] =
		"addr add " VIP4 "/32 dev lo\n"
		"addr add " VIP6 "/128 dev lo nodad\n"
		"addr add " CLIENT4 "/32 dev lo\n"
		"addr add " CLIENT6 "/128 dev lo nodad\n";

	if (xlb_sandbox_ip(addrs) || backend_sockets(4) || backend_sockets(6))
		return -1;
	return 0;
}

#endif /* XLB_TEST_DECAP_FIXTURE_H */
