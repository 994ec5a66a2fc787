// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * A VIP's table in a plan (change.h): computed from its records and made
 * as an inner map, its swap recorded for the commit; a stateless VIP's
 * with its history, carried over from the table the plan leaves so far.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "addr.h"
#include "change.h"
#include "history.h"
#include "table_map.h"

int xlb_vip_table_read(const struct xlb_instance *inst,
		       const struct xlb_state *st, __u32 vip_id,
		       __u32 **slots, __u32 *m, struct xlb_history *h)
{
	const struct xlb_plan *plan = st->planning ? st->change->plan : NULL;
	int at = plan && vip_id < XLB_MAX_VIPS ? plan->table_of[vip_id] :
						 TABLE_AS_LIVE;

	if (h)
		memset(h, 0, sizeof(*h));
	if (at == TABLE_DELETED)
		return -ENOENT;
	if (at >= 0)
		return xlb_table_read_fd(plan->t[at].fd, slots, m, h);
	return xlb_table_read_hist(inst->tables_fd, vip_id, slots, m, h);
}

int xlb_vip_table_delete(struct xlb_instance *inst, struct xlb_state *st,
			 __u32 vip_id)
{
	struct xlb_plan *plan = plan_of(st);
	int err;

	if (!plan)
		return -EINVAL;
	err = xlb_plan_delete(st, inst->tables_fd, XLB_MAP_TABLES, &vip_id,
			      sizeof(vip_id), true) ?:
	      xlb_plan_what(st, "table %u", vip_id);
	if (!err && vip_id < XLB_MAX_VIPS)
		plan->table_of[vip_id] = TABLE_DELETED;
	return err;
}

/*
 * A stateless VIP's table of slots (flags: its VIP's), made with its
 * history: the given one, or the live table's carried over this change.
 * Returns its fd or -errno after p_err().
 */
static int history_table(const struct xlb_instance *inst,
			 const struct xlb_state *st, const char *name,
			 __u32 vip_id, const __u32 *slots, __u32 m)
{
	struct xlb_history old, next;
	__u32 *old_slots = NULL, old_m;
	int err, fd;

	if (st->change->given_history)
		return xlb_table_create_hist(slots, st->change->given_history,
					     m);
	err = xlb_vip_table_read(inst, st, vip_id, &old_slots, &old_m, &old);
	if (err && err != -ENOENT) {
		p_err("cannot read the table of %s: %s", name, strerror(-err));
		return err;
	}
	if (!err && old_m != m) {
		free(old_slots);
		xlb_history_free(&old);
		old_slots = NULL;
	}
	err = xlb_history_init(&next, m);
	if (!err)
		err = xlb_history_next(st, vip_id, old_slots,
				       old_slots ? &old : NULL, slots,
				       xlb_history_now(),
				       xlb_history_keep(&st->config), &next);
	fd = err ?: xlb_table_create_hist(slots, &next, m);
	if (err == -E2BIG)
		p_err("%s: more than %d previous owners to remember: a shorter history setting keeps fewer",
		      name, XLB_HIST_MAX);
	if (old_slots) {
		free(old_slots);
		xlb_history_free(&old);
	}
	xlb_history_free(&next);
	return fd;
}

/* A VIP's table of slots, with its history if it is stateless. */
static int table_create(const struct xlb_instance *inst,
			const struct xlb_state *st, const char *name,
			__u32 vip_id, __u32 flags, const __u32 *slots, __u32 m)
{
	if (flags & XLB_VIP_F_STATELESS)
		return history_table(inst, st, name, vip_id, slots, m);
	return xlb_table_create(slots, m);
}

/* Compute the table the records of vip_id ask for, make its map, and
 * record its swap. */
int xlb_vip_table_install(struct xlb_instance *inst, struct xlb_state *st,
			  const struct xlb_vip_key *key, __u32 vip_id, __u32 m,
			  __u32 flags)
{
	struct xlb_plan *made = plan_of(st);
	char name[XLB_VIP_STRLEN];
	struct made_table *t;
	double t0 = xlb_now_us(), t1;
	__u32 *slots;
	int fd, err;

	if (!made)
		return -EINVAL;
	if (vip_id >= XLB_MAX_VIPS)
		return -EINVAL;
	xlb_vip_str(key, name, sizeof(name));
	/* One buffer, grown to the largest table: what the plan holds
	 * grows only by the maps, each of which can fail cleanly. */
	if (made->slots_cap < m) {
		slots = realloc(made->slots, (size_t)m * sizeof(*slots));
		if (!slots)
			goto nomem;
		made->slots = slots;
		made->slots_cap = m;
	}
	if (made->n == made->cap) {
		t = realloc(made->t, (made->cap ? made->cap * 2 : 16) * sizeof(*t));
		if (!t)
			goto nomem;
		made->t = t;
		made->cap = made->cap ? made->cap * 2 : 16;
	}
	err = xlb_state_table_build(st, vip_id, m, made->slots);
	if (err == -ENOMEM)
		goto nomem;
	if (err) {
		p_err("cannot compute the table of %s: %s", name, strerror(-err));
		return err;
	}
	t1 = xlb_now_us();
	fd = table_create(inst, st, name, vip_id, flags, made->slots, m);
	if (fd == -ENOMEM)
		goto nomem;
	if (fd == -E2BIG)
		return fd;
	if (fd < 0) {
		p_err("cannot make the table of %s (%u slots) after %zu of this change: %s; nothing was changed",
		      name, m, made->n, strerror(-fd));
		return fd;
	}
	made->t[made->n] = (struct made_table){
		.fd = fd,
		.key = *key,
		.vip_id = vip_id,
		.m = m,
		.build_us = t1 - t0,
		.computed_at = t1,
	};
	err = xlb_plan_table(st, made->n);
	if (err) {
		close(fd);
		return err;
	}
	made->table_of[vip_id] = made->n++;
	return 0;
nomem:
	p_err("out of memory for the table of %s (%u slots) after %zu of this change; nothing was changed",
	      name, m, made->n);
	return -ENOMEM;
}
