/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Replay: the flows of a trace addressed to one VIP, assigned to backends
 * by each table algorithm, before and after a change of the backend set;
 * how evenly they spread, against what a uniformly random assignment of the
 * same flows would give, and how many move.
 *
 * loader/replay, layer 5 of loader/ (may include common/, algo/, sim/,
 * instance/):
 *   pcap_flows.h   captures in (pcap, pcapng): flows and their packets
 *   replay.h       the assignment and its statistics (replay_*.c)
 *   replay_bpf.h   the same through the XDP program (--via bpf, sim/)
 *   replay_report.h  tables, JSON, CSV and plots out
 *   replay_churn.h   sequences of changes over time: which connections break
 */
#ifndef XLB_REPLAY_H
#define XLB_REPLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include "lb_algo.h"
#include "pcap_flows.h"

/* The VIP every flow of a trace is addressed to, one address per family;
 * the port is the flow's own server port. */
#define REPLAY_VIP4	"192.0.2.10"
#define REPLAY_VIP6	"2001:db8::10"

/* A flow as the balancer sees it: client address and port, the VIP, the
 * server port, the protocol. Trace flows that differ only in their server
 * address become one. */
struct replay_flow {
	struct xlb_flow tuple;	/* client -> VIP */
	__u64 hash;		/* xlb_flow_hash() of tuple under the seed */
	__u64 packets;
	__u64 bytes;
	__u32 trace_flows;	/* trace flows merged into this one */
};

struct replay_flows {
	struct replay_flow *flows;
	size_t n;
	__u32 *of_trace;	/* trace flow index -> replay flow index */
	size_t n_trace;
	size_t ipv4, ipv6, tcp, udp;
	/* The fields the VIPs' flow hash takes (XLB_VIP_F_HASH flags, 0:
	 * the 5-tuple), of the IPv4 VIP and of the IPv6 one. */
	__u32 vip_flags[2];
	size_t clients;		/* with affinity: the clients (prefixes) */
};

/*
 * replay_flows_build - address every flow of t to the VIP and hash it with
 * key. Returns 0, -ENODATA when t has no flow, or -ENOMEM.
 */
int replay_flows_build(const struct trace *t, const __u64 key[2],
		       struct replay_flows *out);
void replay_flows_free(struct replay_flows *rf);
/* Hash every flow again as VIPs with these hash fields (vip_flags[0] of
 * the IPv4 VIP, [1] of the IPv6 one) would: client affinity; and count
 * the clients. Returns 0 or -ENOMEM. */
int replay_flows_hash(struct replay_flows *rf, const __u64 key[2],
		      const __u32 vip_flags[2]);
/* The tuple a trace flow is replayed as (client -> VIP, server port). */
void replay_vip_tuple(const struct xlb_flow *trace_tuple,
		      struct xlb_flow *out);

enum replay_metric {
	RM_FLOWS,
	RM_PACKETS,
	RM_BYTES,
	RM__MAX,
};
extern const char *const replay_metric_names[RM__MAX];

/* How unevenly a load spreads over backends, each backend's load divided
 * by its fair share (total * weight / sum of weights); backends without
 * weight are left out. */
struct replay_spread {
	double max_mean;
	double min_mean;
	double cv;		/* coefficient of variation */
};

/* 1st, 50th and 99th percentile of a spread value over many uniformly
 * random assignments of the same flows. */
struct replay_band {
	double p01, p50, p99;
};

struct replay_random {
	unsigned int reps;
	struct replay_band max_mean[RM__MAX];
	struct replay_band min_mean[RM__MAX];
	struct replay_band cv[RM__MAX];
	/* Flows: the band of the k-th busiest backend's load / fair share,
	 * k = 0 .. backends with a weight - 1 (equal weights only, else
	 * NULL): what a load profile sorted busiest first is read against. */
	struct replay_band *by_rank;
	size_t n_rank;
};

struct replay_load {
	__u64 v[RM__MAX];
};

/*
 * replay_loads - per-backend loads of an assignment: assign[i] is the
 * backend index of flow i (-1: none, not counted). loads has n_backends
 * entries.
 */
void replay_loads(const struct replay_flows *rf, const int *assign,
		  size_t n_backends, struct replay_load *loads);
void replay_spread(const struct replay_load *loads,
		   const struct lb_backend *backends, size_t n,
		   enum replay_metric m, struct replay_spread *out);

/*
 * replay_random_band - assign the flows reps times uniformly at random
 * (each backend with probability proportional to its weight) and give the
 * percentiles of each spread value. Deterministic for a given seed.
 * Returns 0 or -ENOMEM.
 */
int replay_random_band(const struct replay_flows *rf,
		       const struct lb_backend *backends, size_t n,
		       unsigned int reps, __u64 seed,
		       struct replay_random *out);
void replay_random_free(struct replay_random *rnd);
/* A number of repetitions that keeps the simulation near 2e7 flow draws. */
unsigned int replay_random_reps(size_t flows);

/*
 * The change of the backend set, and the share of flows it must move at
 * least: the total variation distance between the shares before and after
 * (1/N when one of N equal backends leaves, K/(N+K) when K join).
 */
double replay_optimum(const struct lb_backend *before, size_t n_before,
		      const struct lb_backend *after, size_t n_after);

struct replay_disruption {
	__u64 flows;
	__u64 moved;		/* flows whose backend changed */
	__u64 moved_kept;	/* of those, between backends in both sets */
	__u64 on_leaving;	/* flows whose backend left the set */
	__u64 moved_v[RM__MAX];	/* moved flows, packets, bytes */
	double fraction;	/* moved / flows */
	double optimum;
	double ratio;		/* fraction / optimum */
};

/*
 * replay_disruption - compare two assignments by backend identity.
 * before[i] indexes b, after[i] indexes a. A backend is in both sets when
 * its identity is in both with a positive weight. Returns 0 or -ENOMEM.
 */
int replay_disruption(const struct replay_flows *rf,
		      const struct lb_backend *b, size_t nb, const int *before,
		      const struct lb_backend *a, size_t na, const int *after,
		      struct replay_disruption *out);

/*
 * replay_assign_model - the backend of every flow under one algorithm in
 * userspace. out has rf->n entries. Returns 0 or -errno (-EINVAL when the
 * algorithm cannot build this set).
 */
int replay_assign_model(enum lb_algo_kind kind, const struct lb_params *p,
			const struct lb_backend *backends, size_t n,
			const struct replay_flows *rf, int *out);

#endif /* XLB_REPLAY_H */
