// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * A VIP's table in a change (change.h): computed from its records, made
 * ahead as an inner map by a plan and swapped in by its commit, or
 * computed and swapped in at once; a stateless VIP's with its history.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "addr.h"
#include "change.h"
#include "history.h"
#include "table_map.h"

/*
 * What the table of vip_id is computed from: its size and its live records
 * (ids, addresses, weights, DOWN flags). The change finds the tables its
 * plan made by it, so that it installs none computed from other
 * records.
 */
static __u64 fnv1a(__u64 h, const void *p, size_t n)
{
	const unsigned char *c = p;

	while (n--) {
		h ^= *c++;
		h *= 0x100000001b3ULL;
	}
	return h;
}

static __u64 records_hash(const struct xlb_state *st, __u32 vip_id, __u32 m)
{
	__u64 h = fnv1a(0xcbf29ce484222325ULL, &m, sizeof(m));
	const struct xlb_backend *b;
	__u8 down;
	__u32 i;

	for (i = 1; i < XLB_MAX_BACKENDS; i++) {
		b = &st->backends[i];
		if (!xlb_backend_live(b) || b->vip_id != vip_id)
			continue;
		h = fnv1a(h, &i, sizeof(i));
		h = fnv1a(h, &b->weight, sizeof(b->weight));
		h = fnv1a(h, &b->family, sizeof(b->family));
		h = fnv1a(h, b->addr, sizeof(b->addr));
		down = !!(b->flags & XLB_BE_F_DOWN);
		h = fnv1a(h, &down, sizeof(down));
	}
	return h;
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
	err = xlb_table_read_hist(inst->tables_fd, vip_id, &old_slots, &old_m,
				  &old);
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

/* In a plan: compute the table, and make its map for the commit. */
static int make_table(const struct xlb_instance *inst,
		      const struct xlb_state *st, const char *name,
		      __u32 vip_id, __u32 flags, __u32 m)
{
	struct xlb_plan *made = st->change->plan;
	struct made_table *t;
	double t0 = xlb_now_us();
	__u32 *slots;
	int fd, err;

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
	made->t[made->n++] = (struct made_table){
		.fd = fd,
		.vip_id = vip_id,
		.m = m,
		.records = records_hash(st, vip_id, m),
		.build_us = xlb_now_us() - t0,
	};
	return 0;
nomem:
	p_err("out of memory for the table of %s (%u slots) after %zu of this change; nothing was changed",
	      name, m, made->n);
	return -ENOMEM;
}

/* The table the plan made for this install, when the commit is
 * where the plan was (it always is: the same steps on the same
 * state); NULL otherwise, and the table is computed again. */
static struct made_table *made_for(const struct xlb_state *st, __u32 vip_id,
				   __u32 m)
{
	struct xlb_plan *made = st->change->plan;
	struct made_table *t;

	if (!made)
		return NULL;
	if (made->next >= made->n)
		return NULL;
	t = &made->t[made->next];
	if (t->vip_id != vip_id || t->m != m ||
	    t->records != records_hash(st, vip_id, m))
		return NULL;
	made->next++;
	return t;
}

/* Compute the table the records of vip_id ask for (or take the one made
 * for it) and swap it in. */
int xlb_vip_table_install(struct xlb_instance *inst, struct xlb_state *st,
			 const struct xlb_vip_key *key, __u32 vip_id, __u32 m,
			 __u32 flags)
{
	struct xlb_table_timing timing, *t = inst->timing ?: &timing;
	char name[XLB_VIP_STRLEN];
	double t0, t1, t2, live, build_us;
	struct made_table *mt;
	__u32 *slots = NULL;
	int err, fd = -1;

	xlb_vip_str(key, name, sizeof(name));
	if (st->planning)
		return make_table(inst, st, name, vip_id, flags, m);
	mt = made_for(st, vip_id, m);
	if (mt) {
		t0 = t1 = xlb_now_us();
		build_us = mt->build_us;
		fd = mt->fd;
	} else {
		slots = malloc((size_t)m * sizeof(*slots));
		if (!slots) {
			p_err("out of memory for the table of %s (%u slots)",
			      name, m);
			return -ENOMEM;
		}
		t0 = xlb_now_us();
		err = xlb_state_table_build(st, vip_id, m, slots);
		t1 = xlb_now_us();
		build_us = t1 - t0;
		if (err) {
			p_err("cannot compute the table of %s: %s", name,
			      strerror(-err));
			goto out;
		}
		if (flags & XLB_VIP_F_STATELESS) {
			fd = history_table(inst, st, name, vip_id, slots, m);
			if (fd < 0) {
				err = fd;
				if (fd != -E2BIG)
					p_err("cannot make the table of %s: %s",
					      name, strerror(-fd));
				goto out;
			}
		}
	}
	err = xlb_map_install_table(inst->tables_fd, vip_id, fd, slots, m,
				    inst->verbose || inst->timing ?
				    &live : NULL);
	t2 = xlb_now_us();
	if (fd >= 0)
		close(fd);
	if (mt)
		mt->fd = -1;
	if (err == -ENOMEM) {
		p_err("out of memory installing the table of %s (%u slots)",
		      name, m);
		goto out;
	}
	if (err) {
		p_err("cannot install the table of %s in %s/%s: %s", name,
		      inst->dir, XLB_MAP_TABLES, strerror(-err));
		goto out;
	}
	if (!inst->verbose && !inst->timing)
		goto out;
	t->build_us = build_us;
	t->live_us = live - t1;
	t->return_us = t2 - t1;
	t->since_start_us = t->live_us + t1 - (xlb_now_us() - xlb_elapsed_us());
	if (inst->verbose && mt)
		p_info("xlb: %s: table of %u slots computed and made in %.3f ms before the change's first write, live %.3f ms after its swap began, %.3f ms after command start (update returned after %.3f ms: the kernel waits for packets on the old table)",
		       name, m, t->build_us / 1e3, t->live_us / 1e3,
		       t->since_start_us / 1e3, t->return_us / 1e3);
	else if (inst->verbose)
		p_info("xlb: %s: table of %u slots computed in %.3f ms, live %.3f ms later, %.3f ms after command start (update returned after %.3f ms: the kernel waits for packets on the old table)",
		       name, m, t->build_us / 1e3, t->live_us / 1e3,
		       t->since_start_us / 1e3, t->return_us / 1e3);
out:
	free(slots);
	return err;
}
