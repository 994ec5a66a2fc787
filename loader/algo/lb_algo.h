/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The table algorithms behind one small interface: given weighted backends,
 * build a lookup structure; given a flow hash, name a backend. Maglev is what
 * the datapath uses; the ring, rendezvous, jump and modulo exist so replay
 * and `xlb table` can compare them on the same flows.
 *
 * loader/algo, layer 2 of loader/ (above common/, which it may include):
 *   lb_algo.h      this interface, maglev_build() for the loader
 *   lb_impl.h      what the algorithms share behind it
 *   lb_algo.c      dispatch, identity hashes; lb_backend.c  backend sets
 *   maglev.c ring.c rendezvous.c jump.c modulo.c  one algorithm each
 * Pure computation: no maps, no files, no command line.
 */
#ifndef XLB_LB_ALGO_H
#define XLB_LB_ALGO_H

#include <stddef.h>
#include <linux/types.h>
#include "numbers.h"	/* is_prime() */
#include "xlb.h"

/* A backend as the algorithms see it: a stable identity and a weight. The
 * identity is the backend's address in canonical text form (inet_ntop), or
 * any name in offline use; tables depend only on identities and weights. */
struct lb_backend {
	char id[XLB_NAME_MAX];
	__u32 weight;
};

enum lb_algo_kind {
	LB_MAGLEV,
	LB_RING,
	LB_RENDEZVOUS,
	LB_JUMP,
	LB_MODULO,
	LB__MAX,
};

struct lb_params {
	__u32 table_size;	/* Maglev M (prime); ring: sample points for stats */
	__u32 vnodes;		/* ring: tokens per unit of weight */
	__u64 seed;		/* perturbs the identity hashes; 0 (the datapath's
				 * tables) unless exploring other hash functions */
};

/* The ring's tokens: vnodes * weight / (gcd of the weights) per backend,
 * at most this many in all (lb_build returns -E2BIG beyond). */
#define LB_RING_MAX_TOKENS	(1U << 22)

struct lb;	/* a built table of one algorithm */

/* lb_build - build the structure for n backends (order does not matter).
 * Returns 0 and sets *out, or -errno (-EINVAL for bad parameters; callers
 * check their input with lb_backends_check() first, which names the
 * problem). */
int lb_build(enum lb_algo_kind kind, const struct lb_backend *backends,
	     size_t n, const struct lb_params *params, struct lb **out);
/* lb_lookup - index into the backends array given to lb_build, or -1 when
 * no backend has a positive weight. */
int lb_lookup(const struct lb *lb, __u64 flow_hash);
void lb_free(struct lb *lb);

/* lb_slot - the backend of slot k < table_size, as lb_lookup: Maglev's
 * table entry k; for the other algorithms the owner of the k-th of
 * table_size evenly spaced flow hashes, so that every algorithm can be
 * printed, measured and compared as a table. */
int lb_slot(const struct lb *lb, __u32 k);

const char *lb_algo_name(enum lb_algo_kind kind);
/* Parse an algorithm name; returns the kind or -EINVAL. */
int lb_algo_parse(const char *name);

/*
 * maglev_build - the Maglev table alone, for the loader: fills table[M]
 * with indexes into backends (M prime, n >= 1, at least one weight > 0).
 * Memory O(M + n); returns 0 or -errno.
 */
int maglev_build(const struct lb_backend *backends, size_t n, __u32 m,
		 __u32 *table);

/* Maglev's per-backend permutation parameters (pinned by golden vectors). */
__u64 maglev_offset_hash(const char *id);
__u64 maglev_skip_hash(const char *id);

/* Parse "NAME[:WEIGHT]", "ADDR[:WEIGHT]" or "[IPV6]:WEIGHT" (a bare IPv6
 * address takes weight 1); addresses are canonicalised so "2001:DB8::1" and
 * "2001:db8:0::1" are one identity. Returns 0 or -EINVAL after p_err(). */
int lb_backend_parse(const char *arg, struct lb_backend *out);

/* Check a backend set for a table of size m: at least one backend, no
 * duplicate identity, weights within XLB_MAX_WEIGHT, m prime and in range,
 * and not fewer slots than backends. Returns 0 or -EINVAL after p_err(). */
int lb_backends_check(const struct lb_backend *backends, size_t n, __u32 m);

#endif /* XLB_LB_ALGO_H */
