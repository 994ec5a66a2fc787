// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Flows to backends through the userspace table algorithms. */
#include <errno.h>

#include "replay.h"

int replay_assign_model(enum lb_algo_kind kind, const struct lb_params *p,
			const struct lb_backend *backends, size_t n,
			const struct replay_flows *rf, int *out)
{
	struct lb *lb = NULL;
	size_t i;
	int err;

	err = lb_build(kind, backends, n, p, &lb);
	if (err)
		return err;
	for (i = 0; i < rf->n; i++) {
		out[i] = lb_lookup(lb, rf->flows[i].hash);
		if (out[i] < 0) {
			err = -ENOENT;
			break;
		}
	}
	lb_free(lb);
	return err;
}
