// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * A plan's writes of backend records, in batches, and of VIP keys
 * (change.h): the counters and health a new record starts from, the
 * records themselves in one syscall.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/libbpf.h>

#include "addr.h"
#include "change.h"
#include "hc_store.h"
#include "update.h"

/* A per-CPU counter made zero on every CPU. */
int xlb_counter_zero(const struct xlb_state *st, int fd, const char *map,
		     __u32 id)
{
	void *zeros;
	int ncpu, err;

	ncpu = libbpf_num_possible_cpus();
	if (ncpu < 0) {
		p_err("cannot count the CPUs for %s: %s", map, strerror(-ncpu));
		return ncpu;
	}
	zeros = calloc(ncpu, sizeof(struct xlb_counter));
	if (!zeros) {
		p_err("out of memory");
		return -ENOMEM;
	}
	err = xlb_plan_update(st, fd, map, &id, sizeof(id), zeros,
			      ncpu * sizeof(struct xlb_counter), 0) ?:
	      xlb_plan_what(st, "the counters of id %u", id);
	free(zeros);
	return err;
}

/* Queue a record; the state sees it at once, so ids are not handed out
 * twice. */
void xlb_batch_put(struct xlb_state *st, __u32 id,
		      const struct xlb_backend *b)
{
	struct record_batch *batch = &st->change->batch;

	batch->ids[batch->n] = id;
	batch->recs[batch->n++] = *b;
	st->backends[id] = *b;
}

/* The record keeps its gen, so the slot's next backend gets a new one. */
void xlb_batch_free(struct xlb_state *st, __u32 id)
{
	struct xlb_backend b = { .gen = st->backends[id].gen };

	xlb_batch_put(st, id, &b);
}

/* A record's copy of its VIP's flags for the datapath. */
__u8 xlb_be_mode_flags(__u32 vip_flags)
{
	return vip_flags & XLB_VIP_F_GUE ? XLB_BE_F_GUE : 0;
}

int xlb_batch_alloc(struct xlb_state *st, __u32 vip_id, __u32 vip_flags,
		       const struct xlb_want *w)
{
	struct xlb_backend b = {
		.vip_id = vip_id,
		.weight = w->weight,
		.family = w->family,
		.flags = XLB_BE_F_IN_USE | xlb_be_mode_flags(vip_flags),
	};
	struct record_batch *batch = &st->change->batch;
	int id;

	id = xlb_state_alloc_backend_id(st);
	if (id < 0) {
		p_err("no free backend record (limit %d)", XLB_BACKEND_IDS);
		batch->n = batch->n_new = batch->n_carry = 0;
		return id;
	}
	memcpy(b.addr, w->addr, sizeof(b.addr));
	b.gen = st->backends[id].gen + 1;
	batch->new_ids[batch->n_new++] = id;
	xlb_batch_put(st, id, &b);
	return 0;
}

/*
 * The record just allocated replaces the live backend of old_vip with its
 * address (a VIP built anew for another table size): it keeps that
 * backend's health, so a backend found down stays out, and the checker
 * goes on from where it was.
 */
void xlb_batch_carry_health(struct xlb_state *st, __u32 old_vip)
{
	struct record_batch *batch = &st->change->batch;
	struct xlb_backend *b = &batch->recs[batch->n - 1];
	__u32 from, to = batch->ids[batch->n - 1];

	from = xlb_state_backend_find(st, old_vip, b->addr, b->family);
	if (!from)
		return;
	b->flags |= st->backends[from].flags & (XLB_BE_F_DOWN | XLB_BE_F_EVICT);
	st->backends[to] = *b;
	batch->carry_from[batch->n_carry] = from;
	batch->carry_to[batch->n_carry] = to;
	batch->carry_gen[batch->n_carry++] = b->gen;
}

int xlb_batch_write(struct xlb_instance *inst, struct xlb_state *st)
{
	struct record_batch *batch = &st->change->batch;
	__u32 i;
	int err = 0;

	/* A new backend starts from zero, not from its slot's last user:
	 * reset before the record can be reached. */
	for (i = 0; i < batch->n_new && !err; i++)
		err = xlb_counter_zero(st, inst->backend_stats_fd,
				       XLB_MAP_BACKEND_STATS, batch->new_ids[i]);
	/* Its health settings and state too, or those carried over. */
	if (!err && batch->n_new)
		err = xlb_plan_hc(st, OP_HC_RESET_BACKENDS, 0, 0, 0,
				  batch->new_ids, batch->n_new, NULL, 0);
	for (i = 0; i < batch->n_carry && !err; i++)
		err = xlb_plan_hc(st, OP_HC_COPY_BACKEND, batch->carry_from[i],
				  batch->carry_to[i], batch->carry_gen[i], NULL,
				  0, NULL, 0);
	/* Their next hops are seen to when the command closes. */
	if (!err && batch->n)
		err = xlb_plan_update_batch(st, inst->backends_fd,
					    XLB_MAP_BACKENDS, batch->ids,
					    sizeof(batch->ids[0]), batch->recs,
					    sizeof(batch->recs[0]), batch->n,
					    batch->new_ids, batch->n_new) ?:
		      xlb_plan_what(st, "%u backend records", batch->n);
	batch->n = batch->n_new = batch->n_carry = 0;
	return err;
}

int xlb_vip_write(struct xlb_instance *inst, const struct xlb_state *st,
		     const struct xlb_state_vip *v, __u64 flags)
{
	char name[XLB_VIP_STRLEN];

	return xlb_plan_update(st, inst->vips_fd, XLB_MAP_VIPS, &v->key,
			       sizeof(v->key), &v->vip, sizeof(v->vip), flags) ?:
	       xlb_vip_slot_write(inst, st, v) ?:
	       xlb_plan_what(st, "VIP %s",
			     xlb_vip_str(&v->key, name, sizeof(name)));
}

/* Free the records of vip_id: all of them, or those marked REMOVED. */
int xlb_backends_free_of(struct xlb_instance *inst, struct xlb_state *st,
			    __u32 vip_id, bool removed_only)
{
	struct xlb_backend *b;
	__u32 i;

	for (i = 1; i < XLB_MAX_BACKENDS; i++) {
		b = &st->backends[i];
		if (!(b->flags & XLB_BE_F_IN_USE) || b->vip_id != vip_id)
			continue;
		if (removed_only && !(b->flags & XLB_BE_F_REMOVED))
			continue;
		xlb_batch_free(st, i);
	}
	return xlb_batch_write(inst, st);
}
