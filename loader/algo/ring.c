// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Consistent hashing on a ring with virtual nodes (Karger et al.), for
 * comparison with Maglev: each backend places tokens at the hashes of
 * "identity#0", "identity#1", ... on the 64-bit ring, and a flow belongs to
 * the first token at or after its hash, wrapping around. Removing a backend
 * hands only its arcs to the next tokens' owners; balance depends on the
 * number of tokens.
 *
 * Weights are token counts: vnodes * w / g for a backend of weight w, g the
 * greatest common divisor of the weights, so equal weights give vnodes
 * tokens each whatever their value.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lb_impl.h"

static const __u64 token_key[2] = { 0x6e656b6f742e676eULL, 0x31762e676e69722eULL };

struct token {
	__u64 pos;
	__u32 rank;
};

static int cmp_token(const void *a, const void *b)
{
	const struct token *x = a, *y = b;

	if (x->pos != y->pos)
		return x->pos < y->pos ? -1 : 1;
	/* Equal positions (never seen in practice) go by rank, so the ring
	 * still does not depend on input order. */
	return x->rank < y->rank ? -1 : x->rank > y->rank;
}

static __u32 gcd(__u32 a, __u32 b)
{
	__u32 t;

	while (b) {
		t = a % b;
		a = b;
		b = t;
	}
	return a;
}

/* The hash of "identity#i". */
static __u64 token_pos(const char *id, __u32 i, __u64 seed)
{
	char name[XLB_NAME_MAX + 16];

	snprintf(name, sizeof(name), "%s#%u", id, i);
	return lb_id_hash(name, token_key[0] ^ seed, token_key[1]);
}

static int ring_build(struct lb *lb, const struct lb_backend *backends,
		      const struct lb_params *params)
{
	struct token *t;
	__u64 total = 0, per;
	__u32 g = 0, r, i, k = 0;

	if (!params->vnodes)
		return -EINVAL;
	for (r = 0; r < lb->n; r++)
		g = gcd(lb->weight[r], g);
	for (r = 0; r < lb->n; r++)
		total += (__u64)params->vnodes * (lb->weight[r] / g);
	if (total > LB_RING_MAX_TOKENS)
		return -E2BIG;
	t = malloc(total * sizeof(*t));
	lb->tokens = malloc(total * sizeof(*lb->tokens));
	lb->owners = malloc(total * sizeof(*lb->owners));
	if (!t || !lb->tokens || !lb->owners) {
		free(t);
		return -ENOMEM;
	}
	for (r = 0; r < lb->n; r++) {
		per = (__u64)params->vnodes * (lb->weight[r] / g);
		for (i = 0; i < per; i++, k++) {
			t[k].pos = token_pos(backends[lb->index[r]].id, i,
					     params->seed);
			t[k].rank = r;
		}
	}
	qsort(t, total, sizeof(*t), cmp_token);
	for (k = 0; k < total; k++) {
		lb->tokens[k] = t[k].pos;
		lb->owners[k] = lb->index[t[k].rank];
	}
	lb->n_tokens = total;
	free(t);
	return 0;
}

/* The first token at or after the hash; past the last, the first. */
static int ring_lookup(const struct lb *lb, __u64 flow_hash)
{
	__u32 lo = 0, hi = lb->n_tokens, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (lb->tokens[mid] < flow_hash)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lb->owners[lo == lb->n_tokens ? 0 : lo];
}

const struct lb_ops lb_ring_ops = {
	.build = ring_build,
	.lookup = ring_lookup,
};
