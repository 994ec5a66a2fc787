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
	__u16 l4_len;		/* transport header and payload */
	__u8 tcp_flags;
	__u8 pad;
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
 * (loader/sandbox.h), its maps private to it. */
struct replay_bpf;

/* Enter the namespace, load the program, set the flow hash key. Needs
 * root. Returns 0 or -errno after p_err(). */
int replay_bpf_open(const __u64 key[2], struct replay_bpf **out);
void replay_bpf_close(struct replay_bpf *dp);

/*
 * replay_assign_bpf - install the Maglev table of the backend set (M =
 * params->table_size) for the VIP at every server port of the flows, TCP
 * and UDP, both families; run every packet through the program and read
 * each flow's backend from the outer header of the frame it returns. All
 * packets of a flow must agree, and every packet must be forwarded.
 * out has rf->n entries (backend indexes). Returns 0 or -errno after
 * p_err().
 */
int replay_assign_bpf(struct replay_bpf *dp, const struct lb_params *params,
		      const struct lb_backend *backends, size_t n,
		      const struct replay_flows *rf,
		      const struct replay_packets *pk, int *out);

#endif /* XLB_REPLAY_BPF_H */
