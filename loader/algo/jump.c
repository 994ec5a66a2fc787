// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Jump consistent hash (Lamping & Veach, 2014): no table, a few steps of a
 * linear congruential generator per lookup, and perfect balance. It numbers
 * buckets 0..n-1 and stays consistent only when the last bucket comes or
 * goes; here the buckets are the backends ranked by identity, so removing
 * any other backend renumbers the ones after it and moves their flows too.
 * Weights are not expressed: every backend of positive weight is one
 * bucket.
 */
#include "lb_impl.h"

static int jump_lookup(const struct lb *lb, __u64 flow_hash)
{
	__s64 bucket = -1, j = 0;
	__u64 key = flow_hash;

	while (j < lb->n) {
		bucket = j;
		key = key * 2862933555777941757ULL + 1;
		j = (bucket + 1) * ((double)(1LL << 31) / (double)((key >> 33) + 1));
	}
	return lb->index[bucket];
}

const struct lb_ops lb_jump_ops = {
	.lookup = jump_lookup,
};
