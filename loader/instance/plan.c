// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * A change of many steps, planned, then committed (update.h): the plan
 * runs the steps on a copy of the state with every write left out and
 * makes each table ahead (tables.c); the commit runs them on the state,
 * writing, and swaps in what the plan made.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>

#include "change.h"
#include "neigh.h"
#include "report.h"
#include "update.h"

bool xlb_update_planning(const struct xlb_state *st)
{
	return st->planning;
}

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
	free(plan->t);
	free(plan->slots);
	free(plan);
}

int xlb_update_plan(struct xlb_instance *inst, struct xlb_state *st,
		    xlb_change_fn change, void *arg, struct xlb_plan **out)
{
	struct xlb_change *ch = change_of(st);
	struct xlb_state *copy = NULL;
	struct xlb_plan *plan;
	int err;

	*out = NULL;
	if (!ch)
		return -EINVAL;
	room_for_tables();
	plan = calloc(1, sizeof(*plan));
	copy = malloc(sizeof(*copy));
	if (!plan || !copy) {
		p_err("out of memory");
		err = -ENOMEM;
		goto out;
	}
	plan->st = st;
	plan->change = change;
	plan->arg = arg;
	/* The same steps on a copy, every write left out. */
	memcpy(copy, st, sizeof(*copy));
	copy->planning = true;
	ch->plan = plan;
	err = change(inst, copy, arg);
	ch->plan = NULL;
	ch->batch.n = ch->batch.n_new = ch->batch.n_carry = 0;
	/* The host's neighbour tables have room for the next hops of the
	 * backends the plan left. */
	if (!err)
		err = xlb_neigh_check(inst, st, copy, NULL, 0);
	plan->whole = true;
	/* What the commit needs is the tables, not the buffer. */
	free(plan->slots);
	plan->slots = NULL;
	plan->slots_cap = 0;
out:
	free(copy);
	if (err) {
		xlb_plan_free(plan);
		return err;
	}
	*out = plan;
	return 0;
}

int xlb_update_commit(struct xlb_instance *inst, struct xlb_state *st,
		      struct xlb_plan *plan)
{
	struct xlb_change *ch = change_of(st);
	int err;

	if (!ch)
		return -EINVAL;
	if (plan->st != st) {
		p_err("a plan is committed on the state it was made from");
		return -EINVAL;
	}
	/* The same steps again, installing the tables the plan made. */
	ch->plan = plan;
	err = plan->change(inst, st, plan->arg);
	ch->plan = NULL;
	return err;
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

