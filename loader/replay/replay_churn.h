/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Churn: which connections of a trace survive a sequence of changes over
 * time (backends added, removed, reweighted; balancers joining or failing
 * behind ECMP), for each way a balancer may keep a connection on its
 * backend:
 *
 *   optimum     only connections whose backend was removed break;
 *   table       every packet goes where the table says now;
 *   tracking    each balancer remembers the connections it has seen
 *               (unbounded); one that has not seen a connection goes by the
 *               table — with flows staying on their balancer, and with
 *               flows moved between balancers by ECMP changes;
 *   stateless   per table slot the current and the previous backend; the
 *               current one keeps a packet of a connection it owns, else
 *               passes it once to the previous one (second chance).
 *
 *   churn_spec.c   the change sequence: parsed, then played on the backend
 *                  set into one set per step (churn_plan)
 *   churn_sim.c    the modes' rules, packet by packet, on given tables
 *   replay_churn.c packets with their times in; a plan run per algorithm
 *   churn_out.c    the terminal table, JSON and CSV
 */
#ifndef XLB_REPLAY_CHURN_H
#define XLB_REPLAY_CHURN_H

#include <stdbool.h>
#include <stdio.h>
#include "replay.h"

/* Balancers are numbered from 1 in the order they join; ids are never
 * reused, and a connection's knowledge is a bit per id. */
#define CHURN_MAX_BALANCERS	64
#define CHURN_MAX_EVENTS	1024
#define CHURN_DEFAULT_HISTORY_US	(300ULL * 1000000)

enum churn_action {
	CHURN_ADD,		/* count backends join, weight */
	CHURN_REMOVE,		/* the last count backends leave, or id */
	CHURN_REWEIGHT,		/* id's weight becomes weight */
	CHURN_LB_JOIN,		/* count balancers join */
	CHURN_LB_FAIL,		/* balancer lb fails (0: the highest live) */
};

struct churn_event {
	__u64 at_us;		/* from the start of each capture */
	enum churn_action action;
	__u32 count;
	__u32 weight;
	__u32 lb;
	char id[XLB_NAME_MAX];
	char text[XLB_NAME_MAX + 32];	/* as given, for reports */
};

/* How the router in front of the balancers spreads flows over them. */
enum churn_ecmp {
	ECMP_THRESHOLD,		/* hash-threshold (RFC 2992), Linux's default */
	ECMP_MODULO,		/* hash modulo the number of balancers */
	ECMP_CONSISTENT,	/* rendezvous: a change moves only what it must */
	ECMP__MAX,
};
extern const char *const churn_ecmp_names[ECMP__MAX];

struct churn_spec {
	struct churn_event *ev;	/* sorted by time, ties in the given order */
	size_t n, cap;
	__u32 balancers;	/* at the start */
	enum churn_ecmp ecmp;
	__u64 history_us;	/* how long a slot keeps its previous backend */
};

/*
 * churn_parse - a change sequence: "TIME:ACTION[,TIME:ACTION...]" or
 * "@FILE" with one TIME:ACTION a line (blank lines and # comments
 * skipped). TIME is a duration from the start of the capture ("90s",
 * "1500ms"). ACTION: "add K[:W]", "remove K", "remove ADDR", "reweight ADDR=W",
 * "lb-join [K]", "lb-fail [ID]". Adds the events to spec (whose
 * balancers, ecmp and history the caller sets). Returns 0 or -EINVAL
 * (-errno for a file) after p_err() naming the event.
 */
int churn_parse(const char *arg, struct churn_spec *spec);
void churn_spec_free(struct churn_spec *spec);
/* The i-th (from 1) name of the default backend sequence, as --backends N
 * and add name them: 203.0.113.i, beyond 254 2001:db8:be::i. */
void replay_backend_name(__u32 i, char *buf, size_t len);

/*
 * The backend sets the sequence goes through. Step 0 is the set at the
 * start, step i + 1 the set after event i (the same set after a balancer
 * event). Every backend that joins is a new incarnation, also when its
 * name was used before: what it had is gone.
 */
struct churn_step {
	struct lb_backend *set;
	size_t n;
	__u32 *inc;		/* set index -> incarnation */
};

struct churn_plan {
	const struct churn_spec *spec;
	struct churn_step *steps;	/* spec->n + 1 */
	__u32 n_inc;			/* incarnations over the whole run */
	__u32 n_balancers_end, n_backends_end;
};

/*
 * churn_plan_build - play spec on start (checked for a table of size m,
 * as every set after it). Returns 0 or -EINVAL after p_err() naming the
 * event that cannot be played, or -ENOMEM.
 */
int churn_plan_build(const struct churn_spec *spec,
		     const struct lb_backend *start, size_t n, __u32 m,
		     struct churn_plan *plan);
void churn_plan_free(struct churn_plan *plan);

/* --- the modes' rules, on tables of slots owned by incarnations ---------- */

enum churn_mode {
	CM_OPTIMUM,
	CM_TABLE,
	CM_TRACK_STAY,
	CM_TRACK_MOVE,
	CM_STATELESS,
	CM_CHAIN,		/* candidates for stateless VIPs: a chain of */
	CM_CHAIN_MEMORY,	/* owners, and backends that remember */
	CM__MAX,
};

/* The chain modes: the previous owners a slot keeps (the hop limit; one
 * hop more through a backend's memory), and the backends a connection can
 * be remembered by at a time (the model's bound; a backend's own memory is
 * unbounded here). */
#define CHURN_CHAIN		3
#define CHURN_MEMORY		4
extern const char *const churn_mode_names[CM__MAX];	/* "table alone" */
extern const char *const churn_mode_keys[CM__MAX];	/* "table" */

/* What a run measured. */
struct churn_result {
	__u64 connections;	/* that sent a packet */
	__u64 packets;
	__u64 broken[CM__MAX];
	/* stateless mode */
	__u64 forwarded;	/* packets passed to the previous backend */
	__u64 window_packets;	/* packets within the history of a change */
	__u64 window_forwarded;
	__u64 broken_twice;	/* the slot changed twice while it lived */
	__u64 broken_expired;	/* changed once, the previous kept too short */
	__u64 broken_gone;	/* its backend was removed */
	/* chain with memory (CM_CHAIN_MEMORY) */
	__u64 chain_forwarded;	/* packets passed on at least once */
	__u64 chain_multi_hop;	/* of those, passed on more than once (removed
				 * backends left out of the chain) */
	__u64 chain_by_memory;	/* of those, taken through a backend's memory */
	/* the run */
	__u64 slot_changes;	/* slots that changed backend, over all changes */
	__u64 ecmp_moved;	/* connections that changed balancer */
};

/* A connection as the simulation sees it: its table slot and the hash the
 * router spreads it over the balancers with. */
struct churn_conn {
	__u32 slot;
	__u64 ecmp_hash;
};

struct churn_sim;

/*
 * churn_sim_new - m slots, owners from table[m] (incarnations below
 * n_inc), those in use alive; balancers 1..n_balancers. Returns 0 or
 * -ENOMEM.
 */
int churn_sim_new(__u32 m, __u32 n_inc, const __u32 *table,
		  const struct churn_conn *conns, size_t n_conns,
		  __u32 balancers, enum churn_ecmp ecmp, __u64 history_us,
		  struct churn_sim **out);
/* A backend change at t: the new table, and which incarnations exist
 * (alive[n_inc]; a drained backend exists, a removed one does not). */
void churn_sim_backends(struct churn_sim *s, __u64 t, const __u32 *table,
			const bool *alive);
/* A balancer joins (the next id) or balancer lb fails. */
void churn_sim_lb_join(struct churn_sim *s);
void churn_sim_lb_fail(struct churn_sim *s, __u32 lb);
/* A packet of connection c at t, through every mode. */
void churn_sim_packet(struct churn_sim *s, __u64 t, size_t c);
/* Whether connection c is broken in mode m so far. */
bool churn_sim_broken(const struct churn_sim *s, size_t c, enum churn_mode m);
void churn_sim_result(const struct churn_sim *s, struct churn_result *out);
void churn_sim_free(struct churn_sim *s);

/* The balancer ECMP sends a hash to among live[n] (ids). */
__u32 churn_ecmp_pick(enum churn_ecmp ecmp, __u64 hash, const __u32 *live,
		      size_t n);

/* --- packets with their times, and a run per algorithm ------------------- */

struct churn_packet {
	__u64 t_us;
	__u32 flow;		/* trace flow, then replay flow once finished */
	__u32 file;
};

struct churn_packets {
	struct churn_packet *p;
	size_t n, cap;
	__u32 file;		/* the capture being read */
	__u64 span_us;		/* the longest capture, from its start */
};

/* trace_read() callback (ctx: struct churn_packets); set pk->file before
 * reading each capture. */
int churn_packets_add(void *ctx, const struct trace_packet *pkt);
/* Times from each capture's first packet, replay flows, time order. */
int churn_packets_finish(struct churn_packets *pk,
			 const struct replay_flows *rf);
void churn_packets_free(struct churn_packets *pk);

/* The slot of a flow hash in a table of m slots: Maglev's own; for the
 * other algorithms, the hash's place among m equal ranges, whose owner is
 * lb_slot() (the algorithm sampled at the start of each range). */
__u32 churn_slot(enum lb_algo_kind kind, __u64 hash, __u32 m);

/*
 * churn_run - play the plan on the flows' packets under one algorithm.
 * Returns 0 or -errno (-EINVAL when the algorithm cannot build a set).
 */
int churn_run(enum lb_algo_kind kind, const struct lb_params *params,
	      const struct churn_plan *plan, const struct replay_flows *rf,
	      const struct churn_packets *pk, struct churn_result *out);

/* --- what `xlb replay --churn` reports ----------------------------------- */

struct churn_report {
	struct churn_spec spec;
	struct churn_plan plan;
	struct churn_packets packets;
	struct churn_result result[LB__MAX];
};

void churn_report_free(struct churn_report *c);

#endif /* XLB_REPLAY_CHURN_H */
