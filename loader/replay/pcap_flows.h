/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Flows out of packet captures: pcap and pcapng files read with libpcap,
 * TCP and UDP over IPv4 and IPv6 found behind the common link types, and
 * both directions of a connection counted as one flow, oriented from the
 * side that opened it.
 */
#ifndef XLB_PCAP_FLOWS_H
#define XLB_PCAP_FLOWS_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include "xlb.h"

/* One connection of the trace. */
struct trace_flow {
	struct xlb_flow tuple;	/* client -> server */
	__u64 packets;		/* both directions */
	__u64 bytes;		/* both directions, frame length on the wire */
	bool by_syn;		/* orientation fixed by a SYN or SYN-ACK */
};

/* What a trace held, packet by packet. Every packet read is counted in
 * exactly one of flow_packets and the skipped_* counters. */
struct trace_stats {
	__u64 files;
	__u64 files_skipped;	/* link type not supported */
	__u64 packets;
	__u64 flow_packets;	/* TCP or UDP, given to a flow */
	__u64 skipped_not_ip;	/* ARP, LLC, MPLS, PPPoE, ... */
	__u64 skipped_not_l4;	/* ICMP, ESP, GRE, ... */
	__u64 skipped_fragment;	/* non-first IP fragments: no ports */
	__u64 skipped_short;	/* headers cut by the snapshot length, or bad */
};

/* A packet given to the caller while reading: which flow it belongs to
 * and what the load balancer would see of it. */
struct trace_packet {
	size_t flow;		/* index into trace.flows */
	bool from_client;
	__u8 tcp_flags;		/* 0 for UDP */
	__u32 l4_len;		/* TCP/UDP header and payload, on the wire */
	__u32 wire_len;		/* frame length on the wire */
	__u64 ts_us;		/* capture timestamp, microseconds */
};

typedef int (*trace_packet_fn)(void *ctx, const struct trace_packet *pkt);

struct trace {
	struct trace_flow *flows;
	size_t n, cap;
	/* private: the flows' direction-free keys, hashed by open addressing
	 * (slot = flow index + 1, 0 empty) */
	struct xlb_flow *keys;
	__u32 *slots;
	size_t n_slots;
	struct trace_stats stats;
	bool progress;		/* report progress on stderr */
};

/*
 * trace_read - add the flows of one capture file to t. Packets of a flow
 * already in t (from this file or an earlier one) count to that flow.
 * fn, when not NULL, is called for every TCP/UDP packet after its flow is
 * updated; a non-zero return stops the read and is returned.
 * A file whose link type is not supported is reported and skipped (returns
 * 0, counted in files_skipped). Returns 0 or -errno after p_err() naming
 * the file: missing, unreadable, not a capture, or truncated.
 */
int trace_read(struct trace *t, const char *path, trace_packet_fn fn,
	       void *ctx);
void trace_free(struct trace *t);

/* Whether trace_read() can parse captures of this libpcap link type. */
bool trace_link_supported(int dlt);

#endif /* XLB_PCAP_FLOWS_H */
