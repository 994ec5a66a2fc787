/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Replay through the datapath: every packet of the trace, addressed to the
 * VIP, run through the XDP program with BPF_PROG_TEST_RUN, the backend
 * read from the encapsulated packet it returns.
 */
#ifndef XLB_REPLAY_BPF_H
#define XLB_REPLAY_BPF_H

#include "replay.h"

/* A packet of the trace, kept for the datapath run. */
struct replay_packet {
	__u32 trace_flow;
	__u32 flow;		/* replay flow, once resolved */
	__u16 l4_len;		/* transport header and payload, as captured */
	__u8 tcp_flags;
	__u8 from_client;	/* the packets the balancer receives */
};

struct replay_packets {
	struct replay_packet *p;
	size_t n, cap;
};

/* trace_read() callback: keep the packet (ctx: struct replay_packets). */
int replay_packets_add(void *ctx, const struct trace_packet *pkt);
/* The replay flow of every packet, once the flows are (re)built. */
void replay_packets_resolve(struct replay_packets *pk,
			    const struct replay_flows *rf);
void replay_packets_free(struct replay_packets *pk);

/* The XDP program loaded for replay, in a network namespace of its own
 * (loader/sim/sandbox.h), its maps private to it. */
struct replay_bpf;

/*
 * The replay's backends are IPv6 records (2001:db8:ee::ID) without GUE:
 * every packet, IPv4 or IPv6, leaves in one outer IPv6 header (IPv4 in
 * IPv6, IP6IP6), 40 bytes more.
 */
#define REPLAY_BPF_ENCAP_LEN	40
/* The path MTU towards the backends (--mtu): from IPv6's minimum to the
 * largest outer packet whose frame the run's buffers hold (PKT_MAX,
 * loader/sim/packets.h, less the Ethernet header). */
#define REPLAY_BPF_MTU_MIN	1280
#define REPLAY_BPF_MTU_MAX	10226

/*
 * Enter the namespace, load the program, set the flow hash key. Needs
 * root. mtu 0: every packet is cut to a size that fits the sandbox's
 * path, and must be forwarded. mtu N: the route to the backends has MTU
 * N, the client's packets are run at their captured length (up to what
 * the buffers hold) and those that do not fit once encapsulated must be
 * answered with ICMP too big (replay_assign_bpf()); a frame longer
 * than a page is run in several buffers (the program takes them, as
 * from a driver at a jumbo MTU). Returns 0 or -errno after p_err().
 */
int replay_bpf_open(const __u64 key[2], __u32 mtu, struct replay_bpf **out);
void replay_bpf_close(struct replay_bpf *dp);

/* What the path MTU did to the packets of one assignment. */
struct replay_too_big {
	__u64 packets;		/* answered with ICMP too big */
	__u64 flows;		/* flows with at least one such packet */
	__u64 dropped;		/* too big from a client never answered
				 * (loopback, multicast, broadcast,
				 * unspecified): dropped, as the datapath
				 * does */
	__u32 mtu4, mtu6;	/* the next-hop MTU the answers named, per
				 * family (0: no answer of that family) */
};

/*
 * replay_assign_bpf - install the Maglev table of the backend set (M =
 * params->table_size) for the VIP at every server port of the flows, TCP
 * and UDP, both families; run every packet through the program and read
 * each flow's backend from the outer header of the frame it returns. All
 * packets of a flow must agree, and every packet must be forwarded, or,
 * at a path MTU it does not fit once encapsulated, answered with the
 * datapath's ICMP too big (XDP_TX from the VIP to the client, the MTU
 * of the path less the encapsulation, at least 1280 for IPv6), which is
 * checked and counted in *tb (may be NULL); a client no one may answer
 * (a loopback, multicast, broadcast or unspecified address) must see
 * its packet dropped instead. A flow learns its backend
 * from a packet that was forwarded; when a packet of a flow that has
 * none yet is answered, the packet is run again without its payload.
 * out has rf->n entries (backend indexes). Returns 0 or -errno after
 * p_err().
 */
int replay_assign_bpf(struct replay_bpf *dp, const struct lb_params *params,
		      const struct lb_backend *backends, size_t n,
		      const struct replay_flows *rf,
		      const struct replay_packets *pk, int *out,
		      struct replay_too_big *tb);

#endif /* XLB_REPLAY_BPF_H */
