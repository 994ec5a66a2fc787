// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The rules of each way of keeping connections, packet by packet, on a
 * table of slots that changes over time. Backends are incarnations (a
 * backend that leaves and comes back is a new one); a connection's owner
 * is the backend that took its first packet: the table's backend for its
 * slot then, in every mode (a SYN, or a first packet seen, is accepted by
 * whoever receives it first). From then on each mode breaks the
 * connection the first time a packet does not reach its owner.
 *
 * The chain modes are candidates for stateless VIPs, measured here before
 * any datapath has them. A slot keeps its last CHURN_CHAIN owners, each
 * for the history from when it lost the slot; a packet that its slot's
 * backend does not own is passed along that chain, newest first, up to
 * CHURN_CHAIN hops, to the first that owns it (CM_CHAIN); removed
 * backends, which the balancer knows, are left out. With memory
 * (CM_CHAIN_MEMORY), a backend that passed a connection's packet on and
 * saw it taken remembers the connection's owner, so it passes the next
 * ones straight there, after the chain has forgotten the owner, and
 * through later changes when it is itself on the chain: one hop more, so
 * up to CHURN_CHAIN + 1. A backend's memory ends with it (removed); a
 * connection is remembered by at most CHURN_MEMORY backends at a time.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "replay_churn.h"

#define NO_BACKEND	UINT32_MAX

const char *const churn_mode_names[CM__MAX] = {
	[CM_OPTIMUM] = "optimum (backend removed)",
	[CM_TABLE] = "table alone",
	[CM_TRACK_STAY] = "tracking, flows stay",
	[CM_TRACK_MOVE] = "tracking, flows move",
	[CM_STATELESS] = "stateless, second chance",
	[CM_CHAIN] = "stateless, chain of 3",
	[CM_CHAIN_MEMORY] = "stateless, chain + memory",
};

const char *const churn_mode_keys[CM__MAX] = {
	[CM_OPTIMUM] = "optimum",
	[CM_TABLE] = "table",
	[CM_TRACK_STAY] = "tracking_stay",
	[CM_TRACK_MOVE] = "tracking_move",
	[CM_STATELESS] = "stateless",
	[CM_CHAIN] = "chain",
	[CM_CHAIN_MEMORY] = "chain_memory",
};

struct conn_state {
	__u64 known;		/* balancers that have seen it (a bit per id) */
	__u32 owner;		/* NO_BACKEND until its first packet */
	__u32 changes0;		/* its slot's changes at its first packet */
	__u32 lb;		/* the balancer of its last packet */
	__u8 broken;		/* a bit per mode */
	bool moved;		/* ECMP moved it to another balancer */
	__u32 memory[CHURN_MEMORY];	/* backends that remember its owner */
};

_Static_assert(CM__MAX <= 8, "conn_state.broken holds a bit per mode");

struct churn_sim {
	__u32 m, n_inc;
	__u32 *cur, *prev;	/* per slot: backend now, and before */
	__u64 *changed_at;	/* per slot: when cur took over */
	__u32 *changes;		/* per slot: how often it changed */
	__u32 (*chain)[CHURN_CHAIN];	/* per slot: owners before, newest first */
	__u64 (*left_at)[CHURN_CHAIN];	/* and when each lost the slot */
	bool *alive;		/* per incarnation */
	const struct churn_conn *conns;
	struct conn_state *cs;
	size_t n_conns;
	__u32 live[CHURN_MAX_BALANCERS];
	size_t n_live;
	__u32 next_lb;
	enum churn_ecmp ecmp;
	__u64 history_us;
	bool changed;		/* a backend change happened */
	__u64 last_change;
	struct churn_result res;
};

/* splitmix64's finaliser: the rendezvous score of a balancer. */
static __u64 mix64(__u64 z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

__u32 churn_ecmp_pick(enum churn_ecmp ecmp, __u64 hash, const __u32 *live,
		      size_t n)
{
	__u64 best = 0, score;
	size_t i, at = 0;

	switch (ecmp) {
	case ECMP_MODULO:
		return live[hash % n];
	case ECMP_CONSISTENT:
		for (i = 0; i < n; i++) {
			score = mix64(hash ^ (live[i] * 0x9e3779b97f4a7c15ULL));
			if (!i || score > best) {
				best = score;
				at = i;
			}
		}
		return live[at];
	default:
		/* n equal ranges of the hash space, in the order the next
		 * hops are listed: a change shifts every boundary. */
		return live[((hash >> 32) * n) >> 32];
	}
}

int churn_sim_new(__u32 m, __u32 n_inc, const __u32 *table,
		  const struct churn_conn *conns, size_t n_conns,
		  __u32 balancers, enum churn_ecmp ecmp, __u64 history_us,
		  struct churn_sim **out)
{
	struct churn_sim *s = calloc(1, sizeof(*s));
	size_t i;

	*out = NULL;
	if (!s)
		return -ENOMEM;
	s->m = m;
	s->n_inc = n_inc;
	s->cur = malloc(m * sizeof(*s->cur));
	s->prev = malloc(m * sizeof(*s->prev));
	s->changed_at = calloc(m, sizeof(*s->changed_at));
	s->changes = calloc(m, sizeof(*s->changes));
	s->chain = malloc(m * sizeof(*s->chain));
	s->left_at = calloc(m, sizeof(*s->left_at));
	s->alive = calloc(n_inc ? n_inc : 1, sizeof(*s->alive));
	s->cs = calloc(n_conns ? n_conns : 1, sizeof(*s->cs));
	if (!s->cur || !s->prev || !s->changed_at || !s->changes ||
	    !s->chain || !s->left_at || !s->alive || !s->cs) {
		churn_sim_free(s);
		return -ENOMEM;
	}
	memcpy(s->cur, table, m * sizeof(*s->cur));
	for (i = 0; i < m; i++) {
		s->prev[i] = NO_BACKEND;
		memset(s->chain[i], 0xff, sizeof(s->chain[i]));
		s->alive[table[i]] = true;
	}
	s->conns = conns;
	s->n_conns = n_conns;
	for (i = 0; i < n_conns; i++) {
		s->cs[i].owner = NO_BACKEND;
		memset(s->cs[i].memory, 0xff, sizeof(s->cs[i].memory));
	}
	for (s->next_lb = 1; s->next_lb <= balancers; s->next_lb++)
		s->live[s->n_live++] = s->next_lb;
	s->ecmp = ecmp;
	s->history_us = history_us;
	*out = s;
	return 0;
}

void churn_sim_free(struct churn_sim *s)
{
	if (!s)
		return;
	free(s->cur);
	free(s->prev);
	free(s->changed_at);
	free(s->changes);
	free(s->chain);
	free(s->left_at);
	free(s->alive);
	free(s->cs);
	free(s);
}

void churn_sim_backends(struct churn_sim *s, __u64 t, const __u32 *table,
			const bool *alive)
{
	__u32 k;

	for (k = 0; k < s->m; k++) {
		if (table[k] == s->cur[k])
			continue;
		s->prev[k] = s->cur[k];
		memmove(&s->chain[k][1], &s->chain[k][0],
			(CHURN_CHAIN - 1) * sizeof(s->chain[k][0]));
		memmove(&s->left_at[k][1], &s->left_at[k][0],
			(CHURN_CHAIN - 1) * sizeof(s->left_at[k][0]));
		s->chain[k][0] = s->cur[k];
		s->left_at[k][0] = t;
		s->cur[k] = table[k];
		s->changed_at[k] = t;
		s->changes[k]++;
		s->res.slot_changes++;
	}
	memcpy(s->alive, alive, s->n_inc * sizeof(*s->alive));
	s->changed = true;
	s->last_change = t;
}

void churn_sim_lb_join(struct churn_sim *s)
{
	if (s->n_live < CHURN_MAX_BALANCERS && s->next_lb <= CHURN_MAX_BALANCERS)
		s->live[s->n_live++] = s->next_lb++;
}

void churn_sim_lb_fail(struct churn_sim *s, __u32 lb)
{
	size_t i, at = s->n_live - 1;

	for (i = 0; lb && i < s->n_live; i++)
		if (s->live[i] == lb)
			at = i;
	if (s->n_live <= 1 || (lb && s->live[at] != lb))
		return;
	memmove(&s->live[at], &s->live[at + 1],
		(s->n_live - at - 1) * sizeof(s->live[0]));
	s->n_live--;
}

static bool broken(const struct conn_state *c, enum churn_mode m)
{
	return c->broken & (1U << m);
}

static void breaks(struct churn_sim *s, struct conn_state *c,
		   enum churn_mode m)
{
	c->broken |= 1U << m;
	s->res.broken[m]++;
}

/* Tracking with flows moving between balancers: a balancer that has seen
 * the connection sends it to its owner; one that has not goes by the
 * table, and remembers the connection when that is the owner. */
static void track_move(struct churn_sim *s, size_t i, __u32 lb, bool gone)
{
	struct conn_state *c = &s->cs[i];

	if (c->known & (1ULL << (lb - 1))) {
		if (gone)
			breaks(s, c, CM_TRACK_MOVE);
	} else if (s->cur[s->conns[i].slot] != c->owner) {
		breaks(s, c, CM_TRACK_MOVE);
	} else {
		c->known |= 1ULL << (lb - 1);
	}
}

/* Stateless: the slot's backend keeps what it owns, else passes the packet
 * once to the slot's previous backend while that is kept. */
static void stateless(struct churn_sim *s, size_t i, __u64 t, bool gone,
		      bool window)
{
	struct conn_state *c = &s->cs[i];
	__u32 k = s->conns[i].slot;

	if (s->cur[k] == c->owner)
		return;
	if (!gone && s->prev[k] == c->owner &&
	    t - s->changed_at[k] < s->history_us) {
		s->res.forwarded++;
		s->res.window_forwarded += window;
		return;
	}
	breaks(s, c, CM_STATELESS);
	if (gone)
		s->res.broken_gone++;
	else if (s->changes[k] - c->changes0 >= 2)
		s->res.broken_twice++;
	else
		s->res.broken_expired++;
}

/* Whether backend b, alive, remembers connection c's owner. */
static bool remembers(const struct churn_sim *s, const struct conn_state *c,
		      __u32 b)
{
	int j;

	for (j = 0; j < CHURN_MEMORY; j++)
		if (c->memory[j] == b)
			return s->alive[b];
	return false;
}

/* b passed c's packet on and saw it taken: it remembers, in a free place
 * or one of a removed backend, if the bound leaves one. */
static void remember(const struct churn_sim *s, struct conn_state *c, __u32 b)
{
	int j, at = -1;

	for (j = 0; j < CHURN_MEMORY; j++) {
		if (c->memory[j] == b)
			return;
		if (at < 0 && (c->memory[j] == NO_BACKEND ||
			       !s->alive[c->memory[j]]))
			at = j;
	}
	if (at >= 0)
		c->memory[at] = b;
}

/* The chain modes: the slot's backend keeps what it owns (or, with memory,
 * passes on what it remembers); else the packet goes along the slot's
 * previous owners kept, newest first, each passing it on unless it owns
 * it or remembers its owner. */
static void chain(struct churn_sim *s, size_t i, __u64 t, bool gone,
		  bool memory)
{
	enum churn_mode mode = memory ? CM_CHAIN_MEMORY : CM_CHAIN;
	struct conn_state *c = &s->cs[i];
	__u32 k = s->conns[i].slot, at = s->cur[k], b;
	int j, hops = 0;	/* backends of the chain passed, at excepted */

	if (at == c->owner)
		return;
	if (!gone && memory && remembers(s, c, at)) {
		s->res.chain_forwarded++;
		s->res.chain_by_memory++;
		return;
	}
	for (j = 0; !gone && j < CHURN_CHAIN; j++) {
		b = s->chain[k][j];
		/* Older owners lost the slot earlier still. */
		if (b == NO_BACKEND || t - s->left_at[k][j] >= s->history_us)
			break;
		/* A removed backend is skipped: the balancer knows it. */
		if (!s->alive[b])
			continue;
		if (b != c->owner && !(memory && remembers(s, c, b))) {
			hops++;
			continue;
		}
		if (memory) {
			s->res.chain_forwarded++;
			s->res.chain_multi_hop += hops > 0 || b != c->owner;
			s->res.chain_by_memory += b != c->owner;
			/* Each that passed it on saw it taken. */
			remember(s, c, at);
			while (j--)
				if (s->alive[s->chain[k][j]])
					remember(s, c, s->chain[k][j]);
		}
		return;
	}
	breaks(s, c, mode);
}

void churn_sim_packet(struct churn_sim *s, __u64 t, size_t i)
{
	struct conn_state *c = &s->cs[i];
	__u32 k = s->conns[i].slot, lb;
	bool gone, window;

	s->res.packets++;
	/* Changes come in time order, before the packets after them. */
	window = s->changed && t - s->last_change < s->history_us;
	s->res.window_packets += window;
	if (c->owner == NO_BACKEND) {
		c->owner = s->cur[k];
		c->changes0 = s->changes[k];
		c->lb = churn_ecmp_pick(s->ecmp, s->conns[i].ecmp_hash, s->live,
					s->n_live);
		c->known = 1ULL << (c->lb - 1);
		s->res.connections++;
		return;
	}
	lb = churn_ecmp_pick(s->ecmp, s->conns[i].ecmp_hash, s->live,
			     s->n_live);
	if (lb != c->lb && !c->moved) {
		c->moved = true;
		s->res.ecmp_moved++;
	}
	c->lb = lb;
	gone = !s->alive[c->owner];
	if (!broken(c, CM_OPTIMUM) && gone)
		breaks(s, c, CM_OPTIMUM);
	if (!broken(c, CM_TABLE) && s->cur[k] != c->owner)
		breaks(s, c, CM_TABLE);
	/* Every packet on the balancer that saw the first. */
	if (!broken(c, CM_TRACK_STAY) && gone)
		breaks(s, c, CM_TRACK_STAY);
	if (!broken(c, CM_TRACK_MOVE))
		track_move(s, i, lb, gone);
	if (!broken(c, CM_STATELESS))
		stateless(s, i, t, gone, window);
	if (!broken(c, CM_CHAIN))
		chain(s, i, t, gone, false);
	if (!broken(c, CM_CHAIN_MEMORY))
		chain(s, i, t, gone, true);
}

bool churn_sim_broken(const struct churn_sim *s, size_t c, enum churn_mode m)
{
	return broken(&s->cs[c], m);
}

void churn_sim_result(const struct churn_sim *s, struct churn_result *out)
{
	*out = s->res;
}
