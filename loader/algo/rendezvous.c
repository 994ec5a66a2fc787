// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Rendezvous, or highest random weight, hashing (Thaler & Ravishankar): a
 * flow scores every backend with a hash of (flow, backend) and goes to the
 * highest score. Removing a backend moves only its own flows, at the cost
 * of N hashes per lookup. Weighted as in Schindelhauer & Schomaker: the
 * score is -w / ln(u), u the hash mapped into (0, 1), which gives each
 * backend w / sum(w) of the flows.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "lb_impl.h"

static const __u64 rendezvous_key[2] = { 0x6f767a65646e6572ULL, 0x31762e73756f7675ULL };

/* A 64-bit finaliser (Stafford's mix 13, as in splitmix64): every bit of
 * the flow hash and of the backend's key moves every bit of the score. */
static __u64 mix(__u64 x)
{
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

static int rendezvous_build(struct lb *lb, const struct lb_backend *backends,
			    const struct lb_params *params)
{
	__u32 r;

	lb->keys = malloc(lb->n * sizeof(*lb->keys));
	if (!lb->keys)
		return -ENOMEM;
	for (r = 0; r < lb->n; r++) {
		lb->keys[r] = lb_id_hash(backends[lb->index[r]].id,
					 rendezvous_key[0] ^ params->seed,
					 rendezvous_key[1]);
		lb->weighted |= lb->weight[r] != lb->weight[0];
	}
	return 0;
}

/* Ties (equal 64-bit scores) go to the lower rank. */
static int rendezvous_lookup(const struct lb *lb, __u64 flow_hash)
{
	double score, best_score = -1;
	__u64 h, best_h = 0;
	__u32 r, best = 0;

	for (r = 0; r < lb->n; r++) {
		h = mix(flow_hash ^ lb->keys[r]);
		if (!lb->weighted) {
			/* -w / ln(u) grows with u: compare the hashes. */
			if (h > best_h || !r) {
				best_h = h;
				best = r;
			}
			continue;
		}
		score = -(double)lb->weight[r] /
			log(((h >> 11) + 0.5) * 0x1p-53);
		if (score > best_score) {
			best_score = score;
			best = r;
		}
	}
	return lb->index[best];
}

const struct lb_ops lb_rendezvous_ops = {
	.build = rendezvous_build,
	.lookup = rendezvous_lookup,
};
