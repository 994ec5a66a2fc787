// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * A change planned, then committed (update.h). The plan runs the steps
 * once, on a copy of the state: they compute what they change, make
 * every table ahead (tables.c) and record each write (writes.c), and
 * nothing of the instance changes. The commit performs those writes in
 * their order, and the state becomes the one the plan left.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <linux/membarrier.h>

#include "addr.h"
#include "change.h"
#include "hc_store.h"
#include "neigh.h"
#include "report.h"
#include "update.h"

/*
 * The plan holds a descriptor for each table it makes, up to one per
 * VIP at once, where installing one at a time needed one: a soft limit of
 * open files of 256 would refuse a change that fits. The hard limit is
 * there for raising the soft one to.
 */
static void room_for_tables(void)
{
	rlim_t want = 1024 + XLB_MAX_VIPS;
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur >= want)
		return;
	rl.rlim_cur = rl.rlim_max < want ? rl.rlim_max : want;
	setrlimit(RLIMIT_NOFILE, &rl);
}

void xlb_plan_free(struct xlb_plan *plan)
{
	size_t i;

	if (!plan)
		return;
	/* Tables not installed (the commit failed, did not reach them, or
	 * never ran) go with their last reference. */
	for (i = 0; i < plan->n; i++)
		if (plan->t[i].fd >= 0)
			close(plan->t[i].fd);
	xlb_plan_ops_free(plan);
	free(plan->t);
	free(plan->slots);
	free(plan->filter);
	free(plan->ranged);
	free(plan->src);
	free(plan->addrs);
	free(plan->addr_vips);
	free(plan->after);
	free(plan);
}

int xlb_update_plan(struct xlb_instance *inst, struct xlb_state *st,
		    xlb_change_fn change, void *arg, struct xlb_plan **out)
{
	struct xlb_change *ch = change_of(st);
	struct xlb_plan *plan;
	struct xlb_state *copy;
	size_t i;
	int err;

	*out = NULL;
	if (!ch)
		return -EINVAL;
	/* One plan at a time on a change: a step of the plan must run in
	 * it, not make one of its own on the state (it would write during
	 * the plan, and the plan's commit undo it in the state). */
	if (st->planning || ch->plan) {
		p_err("a plan is made on a state, not on another plan");
		return -EINVAL;
	}
	room_for_tables();
	plan = calloc(1, sizeof(*plan));
	copy = malloc(sizeof(*copy));
	if (!plan || !copy) {
		free(plan);
		free(copy);
		p_err("out of memory");
		return -ENOMEM;
	}
	plan->st = st;
	plan->after = copy;
	for (i = 0; i < XLB_MAX_VIPS; i++)
		plan->table_of[i] = TABLE_AS_LIVE;
	memcpy(copy, st, sizeof(*copy));
	copy->planning = true;
	ch->plan = plan;
	err = change(inst, copy, arg);
	ch->plan = NULL;
	ch->batch.n = ch->batch.n_new = ch->batch.n_carry = 0;
	/* The host's neighbour tables have room for the next hops of the
	 * backends the plan adds. */
	if (!err && plan->adds_backends)
		err = xlb_neigh_check(inst, st, copy, NULL, 0);
	if (err) {
		xlb_plan_free(plan);
		return err;
	}
	copy->planning = false;
	*out = plan;
	return 0;
}

/* Swap in the plan's table t (op OP_TABLE), timed for -v. */
static int swap_table(struct xlb_instance *inst, struct made_table *t)
{
	struct xlb_table_timing timing, *tm = inst->timing ?: &timing;
	bool timed = inst->verbose || inst->timing;
	char name[XLB_VIP_STRLEN];
	double live, t1, start;
	int err;

	xlb_vip_str(&t->key, name, sizeof(name));
	err = xlb_map_install_table(inst->tables_fd, t->vip_id, t->fd,
				    timed ? &live : NULL);
	t1 = xlb_now_us();
	close(t->fd);
	t->fd = -1;
	if (err) {
		p_err("cannot install the table of %s in %s/%s: %s", name,
		      inst->dir, XLB_MAP_TABLES, strerror(-err));
		return err;
	}
	if (!timed)
		return 0;
	/* From its slots computed, in the plan, to live: making and filling
	 * its map, what the change wrote before, the swap. */
	tm->build_us = t->build_us;
	tm->live_us = live - t->computed_at;
	tm->return_us = t1 - t->computed_at;
	start = xlb_now_us() - xlb_elapsed_us();
	tm->since_start_us = live - start;
	if (inst->verbose)
		p_info("xlb: %s: table of %u slots computed in %.3f ms, live %.3f ms later, %.3f ms after command start (update returned after %.3f ms: the kernel waits for packets on the old table)",
		       name, t->m, tm->build_us / 1e3, tm->live_us / 1e3,
		       tm->since_start_us / 1e3, tm->return_us / 1e3);
	return 0;
}

/*
 * The datapath runs in RCU read-side sections (XDP in NAPI's softirq):
 * MEMBARRIER_CMD_GLOBAL returns after a grace period (synchronize_rcu()),
 * when every packet that was in the program has left it. A kernel that
 * refuses it (nohz_full) gets a wait far longer than a packet's time in
 * the program.
 */
static void quiesce(void)
{
	if (syscall(__NR_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0))
		usleep(20000);
}

/* Perform one write of a plan. */
static int op_do(struct xlb_instance *inst, struct xlb_change *ch,
		 struct xlb_plan *plan, const struct change_op *op)
{
	const char *what = "write";
	__u32 i;
	int err;

	switch (op->kind) {
	case OP_UPDATE:
		err = xlb_map_update(op->fd, op->key, op->value, op->flags);
		break;
	case OP_UPDATE_BATCH:
		err = xlb_map_update_batch(op->fd, op->key, op->value, op->n);
		/* Their next hops are seen to when the command closes, also
		 * after a write that failed (it may have been made). */
		ch->backends_written |= op->records;
		for (i = 0; i < op->n_ids; i++)
			ch->backends_added[op->ids[i]] = true;
		break;
	case OP_DELETE:
		what = op->what[0] ? "delete" : "delete from";
		err = xlb_map_delete(op->fd, op->key);
		if (err == -ENOENT && op->ok_missing)
			err = 0;
		break;
	case OP_TABLE:
		return swap_table(inst, &plan->t[op->index]);
	case OP_HC_RESET_VIP:
		return xlb_hc_reset_vip(inst, op->a);
	case OP_HC_COPY_VIP:
		return xlb_hc_copy_vip(inst, op->a, op->b);
	case OP_HC_RESET_BACKENDS:
		return xlb_hc_reset_backends(inst, op->ids, op->n_ids);
	case OP_HC_COPY_BACKEND:
		return xlb_hc_copy_backend(inst, op->a, op->b, op->c);
	case OP_HC_VIP_CONFIG:
		return xlb_hc_vip_write(inst, NULL, op->a, op->value);
	case OP_HC_BACKEND_CONFIG:
		return xlb_hc_backend_write(inst, NULL, op->a, op->value);
	case OP_NOTE:
		p_info("%s", op->note);
		return 0;
	case OP_QUIESCE:
		quiesce();
		return 0;
	default:
		return -EINVAL;
	}
	if (err && op->what[0])
		p_err("cannot %s %s in %s/%s: %s", what, op->what, inst->dir,
		      op->map, strerror(-err));
	else if (err)
		p_err("cannot %s %s/%s: %s", what, inst->dir, op->map,
		      strerror(-err));
	return err;
}

/*
 * A commit that stopped midway left the instance between the two states:
 * st is read again from the maps, which are its only copy (state.h),
 * keeping what the maps cannot say yet (seeds drawn, not written).
 */
static void state_reread(const struct xlb_instance *inst,
			 struct xlb_state *st)
{
	struct xlb_state *now;

	if (xlb_state_read(inst, &now)) {
		p_err("the state of %s is not known after the failed write: the next command reads it again",
		      inst->dir);
		return;
	}
	/* Seeds drawn and not written stay, to be written first. */
	if (!st->seeds_pending ||
	    (!memcmp(now->config.hash_key, st->config.hash_key,
		     sizeof(st->config.hash_key)) &&
	     now->config.ct_seed == st->config.ct_seed)) {
		st->config = now->config;
		st->seeds_pending = false;
	}
	st->n_vips = now->n_vips;
	memcpy(st->vips, now->vips, sizeof(st->vips));
	memcpy(st->backends, now->backends, sizeof(st->backends));
	st->filter_pending = true;
	xlb_state_free(now);
}

int xlb_update_commit(struct xlb_instance *inst, struct xlb_state *st,
		      struct xlb_plan *plan)
{
	struct xlb_change *ch = change_of(st);
	struct xlb_change *keep;
	size_t i;
	int err = 0;

	if (!ch)
		return -EINVAL;
	if (plan->st != st || plan->committed) {
		p_err("a plan is committed once, on the state it was made from");
		return -EINVAL;
	}
	plan->committed = true;
	for (i = 0; i < plan->n_ops && !err; i++)
		err = op_do(inst, ch, plan, &plan->ops[i]);
	/* The buffer the tables were computed in goes only now: giving its
	 * pages back takes long enough (0.1 ms for 655,373 slots) to show
	 * between a table computed and live. */
	free(plan->slots);
	plan->slots = NULL;
	plan->slots_cap = 0;
	if (err) {
		state_reread(inst, st);
		return err;
	}
	keep = st->change;
	memcpy(st, plan->after, sizeof(*st));
	st->change = keep;
	return 0;
}

int xlb_update_all_or_nothing(struct xlb_instance *inst, struct xlb_state *st,
			      xlb_change_fn change, void *arg)
{
	struct xlb_plan *plan;
	int err;

	err = xlb_update_plan(inst, st, change, arg, &plan) ?:
	      xlb_update_commit(inst, st, plan);
	xlb_plan_free(plan);
	return err;
}

int xlb_update_step(struct xlb_instance *inst, struct xlb_state *st,
		    xlb_change_fn step, void *arg)
{
	if (st->planning)
		return step(inst, st, arg);
	return xlb_update_all_or_nothing(inst, st, step, arg);
}
