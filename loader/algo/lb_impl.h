/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Inside the table algorithms: the built structure they share and the
 * helpers every algorithm file uses. Users of the algorithms include
 * lb_algo.h only.
 */
#ifndef XLB_LB_IMPL_H
#define XLB_LB_IMPL_H

#include <stdbool.h>
#include "lb_algo.h"

/*
 * One built table. Every algorithm sees only the backends with a positive
 * weight, ranked by identity (rank r is index[r] in the caller's array), so
 * nothing depends on the order the backends were given in.
 */
struct lb {
	enum lb_algo_kind kind;
	__u32 m;		/* table size, or sample points */
	__u64 step;		/* distance between sample points */
	__u32 n;		/* backends with a positive weight */
	__u32 *index;		/* rank -> index into the caller's array */
	__u32 *weight;		/* rank -> weight */

	__u32 *table;		/* maglev: m indexes into the caller's array */

	__u64 *tokens;		/* ring: sorted token positions */
	__u32 *owners;		/* ring: token -> index into the caller's array */
	__u32 n_tokens;

	__u64 *keys;		/* rendezvous: rank -> identity hash */
	bool weighted;		/* rendezvous: weights differ */
};

/* Per algorithm: fill the structure from lb->n ranked backends (n >= 1;
 * no build when the ranking is all it needs), and answer a lookup with an
 * index into the caller's array. */
struct lb_ops {
	int (*build)(struct lb *lb, const struct lb_backend *backends,
		     const struct lb_params *params);
	int (*lookup)(const struct lb *lb, __u64 flow_hash);
};

extern const struct lb_ops lb_maglev_ops;
extern const struct lb_ops lb_ring_ops;
extern const struct lb_ops lb_rendezvous_ops;
extern const struct lb_ops lb_jump_ops;
extern const struct lb_ops lb_modulo_ops;

/* SipHash-1-3 (the flow hash's variant) of a NUL-terminated identity under
 * the key {k0, k1}. Tables are built from these: changing them changes
 * every balancer's table, which the golden vectors catch. */
__u64 lb_id_hash(const char *id, __u64 k0, __u64 k1);

/*
 * Rank backends by identity: order[] receives the indexes of those with a
 * positive weight (all of them when with_zero), sorted by identity; *count
 * their number. -EINVAL when two backends share an identity (the table
 * would then depend on their order); order[] is sorted all the same, so
 * the caller can name them.
 */
int lb_rank(const struct lb_backend *backends, size_t n, bool with_zero,
	    __u32 *order, __u32 *count);

/* Maglev on ranked backends: order[0..count) index backends, all with a
 * positive weight; seed perturbs the permutation hashes (0 in the
 * datapath's tables). */
int maglev_fill(const struct lb_backend *backends, const __u32 *order,
		__u32 count, __u32 m, __u64 seed, __u32 *table);

#endif /* XLB_LB_IMPL_H */
