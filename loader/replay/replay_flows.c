// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * A trace's flows addressed to one VIP. The client side of each flow (the
 * side that opened it) keeps its address and port; the server's address
 * becomes the VIP of the flow's family and its port stays, as if the
 * trace's servers were one VIP serving all their ports from one pool.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include "flow_hash.h"
#include "replay.h"

const char *const replay_metric_names[RM__MAX] = {
	[RM_FLOWS] = "flows",
	[RM_PACKETS] = "packets",
	[RM_BYTES] = "bytes",
};

void replay_vip_tuple(const struct xlb_flow *trace_tuple, struct xlb_flow *out)
{
	*out = *trace_tuple;
	memset(out->dst, 0, sizeof(out->dst));
	if (out->family == XLB_AF_INET6)
		inet_pton(AF_INET6, REPLAY_VIP6, out->dst);
	else
		inet_pton(AF_INET, REPLAY_VIP4, out->dst);
}

struct by_tuple {
	struct xlb_flow tuple;
	__u32 trace_idx;
};

static int tuple_cmp(const void *a, const void *b)
{
	const struct by_tuple *x = a, *y = b;
	int c = memcmp(&x->tuple, &y->tuple, sizeof(x->tuple));

	if (c)
		return c;
	return x->trace_idx < y->trace_idx ? -1 : x->trace_idx > y->trace_idx;
}

int replay_flows_build(const struct trace *t, const __u64 key[2],
		       struct replay_flows *out)
{
	struct by_tuple *sorted = NULL;
	size_t i, n = 0;
	int err = -ENOMEM;

	memset(out, 0, sizeof(*out));
	if (!t->n)
		return -ENODATA;
	sorted = calloc(t->n, sizeof(*sorted));
	out->flows = calloc(t->n, sizeof(*out->flows));
	out->of_trace = calloc(t->n, sizeof(*out->of_trace));
	if (!sorted || !out->flows || !out->of_trace)
		goto cleanup;
	for (i = 0; i < t->n; i++) {
		replay_vip_tuple(&t->flows[i].tuple, &sorted[i].tuple);
		sorted[i].trace_idx = i;
	}
	/* Sorting makes the flows' order independent of the trace's packet
	 * order, and puts trace flows that became one side by side. */
	qsort(sorted, t->n, sizeof(*sorted), tuple_cmp);
	for (i = 0; i < t->n; i++) {
		const struct trace_flow *tf = &t->flows[sorted[i].trace_idx];
		struct replay_flow *f;

		if (!i || memcmp(&sorted[i].tuple, &sorted[i - 1].tuple,
				 sizeof(sorted[i].tuple))) {
			f = &out->flows[n++];
			f->tuple = sorted[i].tuple;
			f->hash = xlb_flow_hash(&f->tuple, key);
			if (f->tuple.family == XLB_AF_INET6)
				out->ipv6++;
			else
				out->ipv4++;
			if (f->tuple.proto == IPPROTO_TCP)
				out->tcp++;
			else
				out->udp++;
		}
		f = &out->flows[n - 1];
		f->packets += tf->packets;
		f->bytes += tf->bytes;
		f->trace_flows++;
		out->of_trace[sorted[i].trace_idx] = n - 1;
	}
	out->n = n;
	out->n_trace = t->n;
	err = 0;
cleanup:
	free(sorted);
	if (err)
		replay_flows_free(out);
	return err;
}

static int client_cmp(const void *a, const void *b)
{
	return memcmp(a, b, sizeof(struct xlb_flow));
}

int replay_flows_hash(struct replay_flows *rf, const __u64 key[2],
		      const __u32 vip_flags[2])
{
	struct xlb_flow *client = calloc(rf->n ? rf->n : 1, sizeof(*client));
	struct replay_flow *f;
	__u32 flags;
	size_t i;

	if (!client)
		return -ENOMEM;
	memcpy(rf->vip_flags, vip_flags, sizeof(rf->vip_flags));
	for (i = 0; i < rf->n; i++) {
		f = &rf->flows[i];
		flags = vip_flags[f->tuple.family == XLB_AF_INET6];
		f->hash = xlb_vip_flow_hash(&f->tuple, flags, key);
		/* The client as the hash sees it, for the count. */
		client[i].family = f->tuple.family;
		memcpy(client[i].src, f->tuple.src, sizeof(client[i].src));
		if (flags & XLB_VIP_F_HASH_SRC)
			xlb_affinity_flow(&client[i], XLB_VIP_AFFINITY(flags));
	}
	qsort(client, rf->n, sizeof(*client), client_cmp);
	for (rf->clients = 0, i = 0; i < rf->n; i++)
		rf->clients += !i || client_cmp(&client[i], &client[i - 1]);
	free(client);
	return 0;
}

void replay_flows_free(struct replay_flows *rf)
{
	free(rf->flows);
	free(rf->of_trace);
	memset(rf, 0, sizeof(*rf));
}
