// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* The connection table from userspace (see conntrack_map.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "conntrack_map.h"
#include "ct_entry.h"

/* Entries per batch call: far more than one hash bucket ever holds, which
 * a batch must fit whole. */
#define CT_BATCH	4096

struct ct_batch {
	struct xlb_flow keys[CT_BATCH];
	struct xlb_ct_entry vals[CT_BATCH];
};

typedef void (*ct_entry_fn)(void *ctx, const struct xlb_flow *flow,
			    const struct xlb_ct_entry *e);

/* Every entry through fn, read (and with del, deleted) a batch at a time. */
static int ct_walk(int fd, bool del, ct_entry_fn fn, void *ctx)
{
	LIBBPF_OPTS(bpf_map_batch_opts, opts);
	struct ct_batch *b = malloc(sizeof(*b));
	__u64 token = 0;
	bool first = true, last = false;
	__u32 count, i;
	int err = 0;

	if (!b)
		return -ENOMEM;
	while (!last) {
		count = CT_BATCH;
		if (del)
			err = bpf_map_lookup_and_delete_batch(fd, first ? NULL : &token,
							      &token, b->keys, b->vals,
							      &count, &opts);
		else
			err = bpf_map_lookup_batch(fd, first ? NULL : &token, &token,
						   b->keys, b->vals, &count, &opts);
		if (err && errno != ENOENT) {
			err = -errno;
			break;
		}
		/* ENOENT: this batch is the last. */
		last = err != 0;
		err = 0;
		first = false;
		for (i = 0; fn && i < count; i++)
			fn(ctx, &b->keys[i], &b->vals[i]);
	}
	free(b);
	return err;
}

struct census_ctx {
	const struct xlb_config *cfg;
	const struct xlb_backend *backends;
	__u64 now;
	struct xlb_ct_census *out;
};

static void census_entry(void *ctx, const struct xlb_flow *flow,
			 const struct xlb_ct_entry *e)
{
	struct census_ctx *c = ctx;

	c->out->entries++;
	if (e->backend_id == XLB_BACKEND_NONE || e->backend_id >= XLB_MAX_BACKENDS ||
	    !xlb_ct_backend_usable(e, &c->backends[e->backend_id]) ||
	    xlb_ct_expired(e, c->now, xlb_ct_timeout_ns(c->cfg, flow->proto,
							e->flags)))
		return;
	c->out->live++;
	c->out->flows[e->backend_id]++;
}

int xlb_ct_census(int ct_fd, const struct xlb_config *cfg,
		  const struct xlb_backend *backends, struct xlb_ct_census *out)
{
	struct census_ctx c = { .cfg = cfg, .backends = backends, .out = out };
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);
	struct timespec ts;

	memset(out, 0, sizeof(*out));
	if (bpf_obj_get_info_by_fd(ct_fd, &info, &len))
		return -errno;
	out->size = info.max_entries;
	/* The datapath's bpf_ktime_get_coarse_ns() is this clock. */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	c.now = ts.tv_sec * XLB_NS_PER_S + ts.tv_nsec;
	return ct_walk(ct_fd, false, census_entry, &c);
}

int xlb_ct_flush(int ct_fd)
{
	return ct_walk(ct_fd, true, NULL, NULL);
}
