// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The baseline every consistent hash is measured against: flow hash modulo
 * the number of backends (ranked by identity). Balanced, but when a backend
 * comes or goes almost every flow changes backend. Weights are not
 * expressed: every backend of positive weight is one bucket.
 */
#include "lb_impl.h"

static int modulo_lookup(const struct lb *lb, __u64 flow_hash)
{
	return lb->index[flow_hash % lb->n];
}

const struct lb_ops lb_modulo_ops = {
	.lookup = modulo_lookup,
};
