// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * A VIP's source ranges in the instance (src_ranges.h): read from the
 * trie, and written whole as a step of a change, recorded in its plan
 * (change.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>

#include "addr.h"
#include "change.h"
#include "report.h"
#include "src_ranges.h"
#include "vip_filter.h"

int xlb_src_read_all(const struct xlb_instance *inst, struct xlb_src_all *all)
{
	return xlb_src_read_fd(inst->src_ranges_fd, all);
}

int xlb_src_read_fd(int fd, struct xlb_src_all *all)
{
	struct xlb_src_key k, next, *prev = NULL;
	struct xlb_src_value v;

	all->n = 0;
	all->e = NULL;
	if (fd < 0)
		return 0;
	all->e = calloc(XLB_SRC_MAP_ENTRIES, sizeof(*all->e));
	if (!all->e) {
		p_err("out of memory");
		return -ENOMEM;
	}
	while (all->n < XLB_SRC_MAP_ENTRIES &&
	       !bpf_map_get_next_key(fd, prev, &next)) {
		k = next;
		prev = &k;
		/* One deleted meanwhile is not there. */
		if (bpf_map_lookup_elem(fd, &next, &v))
			continue;
		all->e[all->n].key = next;
		all->e[all->n++].value = v;
	}
	return 0;
}

void xlb_src_all_free(struct xlb_src_all *all)
{
	free(all->e);
	all->e = NULL;
	all->n = 0;
}

/* The generation whose entries v's record names: -1 for none. */
static int named_gen(const struct xlb_state_vip *v)
{
	if (!v || v->corrupt[0] || !(v->vip.flags & XLB_VIP_F_SRC_LIST))
		return -1;
	return !!(v->vip.flags & XLB_VIP_F_SRC_GEN);
}

static bool entry_of(const struct xlb_src_entry *e,
		     const struct xlb_vip_key *key, int gen)
{
	return !memcmp(&e->key.vip, key, sizeof(*key)) &&
	       (gen < 0 || e->key.gen == gen);
}

void xlb_src_of(const struct xlb_src_all *all, const struct xlb_state_vip *v,
		struct xlb_src_list *l)
{
	const struct xlb_src_entry *e;
	struct xlb_src_prefix *p;
	int gen = named_gen(v);
	char why[8];
	__u32 i;

	l->n = 0;
	if (gen < 0)
		return;
	for (i = 0; i < all->n && l->n < XLB_SRC_MAX_VIP; i++) {
		e = &all->e[i];
		if (!entry_of(e, &v->key, gen) ||
		    e->key.prefixlen < XLB_SRC_KEY_BITS)
			continue;
		p = &l->p[l->n++];
		memset(p, 0, sizeof(*p));
		memcpy(p->addr, e->key.addr, sizeof(p->addr));
		p->family = v->key.family;
		p->len = e->key.prefixlen - XLB_SRC_KEY_BITS;
		p->deny = !!e->value.deny;
	}
	/* Sorted; what the trie holds was checked when it was written. */
	xlb_src_check(l, why, sizeof(why));
}

int xlb_src_read(const struct xlb_instance *inst,
		 const struct xlb_state_vip *v, struct xlb_src_list *l)
{
	struct xlb_src_all all;
	int err;

	err = xlb_src_read_all(inst, &all);
	if (!err)
		xlb_src_of(&all, v, l);
	xlb_src_all_free(&all);
	return err;
}

static struct xlb_src_key entry_key(const struct xlb_vip_key *vip, int gen,
				    const struct xlb_src_prefix *p)
{
	struct xlb_src_key k = {
		.prefixlen = XLB_SRC_KEY_BITS + p->len,
		.vip = *vip,
		.gen = gen,
	};

	memcpy(k.addr, p->addr, sizeof(k.addr));
	return k;
}

/* The plan's record of key's ranges, or NULL: the trie's hold. */
static struct plan_src *plan_src_of(const struct xlb_plan *plan,
				    const struct xlb_vip_key *key)
{
	__u32 i;

	for (i = 0; i < plan->n_src; i++)
		if (!memcmp(&plan->src[i].key, key, sizeof(*key)))
			return &plan->src[i];
	return NULL;
}

/* Note that after the plan's writes so far key has n prefixes. */
static int plan_src_set(struct xlb_plan *plan, const struct xlb_vip_key *key,
			__u32 n)
{
	struct plan_src *p = plan_src_of(plan, key);

	if (!p) {
		p = realloc(plan->src, (plan->n_src + 1) * sizeof(*p));
		if (!p) {
			p_err("out of memory");
			return -ENOMEM;
		}
		plan->src = p;
		p = &plan->src[plan->n_src++];
		p->key = *key;
	}
	p->n = n;
	return 0;
}

/*
 * Whether entry e is in use: named by its VIP's record in st. A corrupt
 * record's key keeps every entry: it is left alone, and the datapath may
 * still read it. A slot's copy of a record is not asked: a kill between
 * a record's write and its slot's leaves a stale copy, which the repair
 * rewrites (xlb_vip_slots_repair()) before it deletes what the record
 * does not name.
 */
static bool entry_named(struct xlb_state *st, const struct xlb_src_entry *e)
{
	const struct xlb_state_vip *v = xlb_state_vip_find(st, &e->key.vip);

	return (v && v->corrupt[0]) || named_gen(v) == e->key.gen;
}

/* Delete the entries of all of key (NULL: any VIP's) not in use
 * (entry_named()), but those of a key the plan wrote already. */
static int delete_unnamed(struct xlb_instance *inst, struct xlb_state *st,
			  const struct xlb_src_all *all,
			  const struct xlb_vip_key *key)
{
	struct xlb_plan *plan = plan_of(st);
	const struct xlb_src_entry *e;
	__u32 i;
	int err;

	if (!plan)
		return -EINVAL;
	for (i = 0; i < all->n; i++) {
		e = &all->e[i];
		if ((key && memcmp(&e->key.vip, key, sizeof(*key))) ||
		    plan_src_of(plan, &e->key.vip) ||
		    entry_named(st, e))
			continue;
		err = xlb_plan_delete(st, inst->src_ranges_fd,
				      XLB_MAP_SRC_RANGES, &e->key,
				      sizeof(e->key), true);
		if (err)
			return err;
	}
	return 0;
}

int xlb_src_leftovers(struct xlb_instance *inst, struct xlb_state *st,
		      const struct xlb_vip_key *key)
{
	struct xlb_plan *plan = plan_of(st);
	struct xlb_src_all all;
	int err;

	if (!plan)
		return -EINVAL;
	if (inst->src_ranges_fd < 0)
		return 0;
	err = xlb_src_read_all(inst, &all);
	if (!err)
		err = delete_unnamed(inst, st, &all, key);
	/* Its key has none left, for the plan's next steps. */
	if (!err && key && !xlb_state_vip_find(st, key))
		err = plan_src_set(plan, key, 0);
	xlb_src_all_free(&all);
	return err;
}

/* The prefixes the VIPs of st have after the plan's writes so far, but
 * those of key. */
static __u32 kept_elsewhere(struct xlb_state *st, const struct xlb_plan *plan,
			    const struct xlb_src_all *all,
			    const struct xlb_vip_key *key)
{
	const struct xlb_src_entry *e;
	__u32 i, n = 0;

	for (i = 0; i < all->n; i++) {
		e = &all->e[i];
		if (memcmp(&e->key.vip, key, sizeof(*key)) &&
		    !plan_src_of(plan, &e->key.vip) &&
		    entry_named(st, e))
			n++;
	}
	for (i = 0; i < plan->n_src; i++)
		if (memcmp(&plan->src[i].key, key, sizeof(*key)))
			n += plan->src[i].n;
	return n;
}

struct src_set_arg {
	const struct xlb_vip_key *key;
	const struct xlb_src_list *l;
};

static int src_set(struct xlb_instance *inst, struct xlb_state *st, void *arg)
{
	const struct src_set_arg *a = arg;
	struct xlb_plan *plan = plan_of(st);
	const struct xlb_src_list *l = a->l;
	struct xlb_src_list *have = NULL;
	char name[XLB_VIP_STRLEN];
	struct xlb_src_all all = {};
	struct xlb_state_vip *v;
	struct xlb_src_key k;
	struct xlb_src_value val;
	__u32 i, flags, kept;
	int err, old_gen, gen;
	bool quiesced;

	if (!plan)
		return -EINVAL;
	xlb_vip_str(a->key, name, sizeof(name));
	v = xlb_state_vip_find(st, a->key);
	if (!v || v->corrupt[0]) {
		p_err(v ? "VIP %s is corrupt: `xlb vip del %s` removes it" :
		      "no VIP %s", name, name);
		return v ? -EINVAL : -ENOENT;
	}
	if (inst->src_ranges_fd < 0 || inst->vip_ranged_fd < 0 ||
	    inst->vip_filter_fd < 0) {
		if (!l->n)
			return 0;
		p_err("VIP %s: the instance's program predates source ranges: attach it again (xlb attach) to have them",
		      name);
		return -EOPNOTSUPP;
	}
	/* First what the command's first write owes, the slots' repair
	 * among it: from there on, v's record is what the datapath reads,
	 * even when nothing else is written. */
	err = xlb_update_pending(inst, st);
	have = malloc(sizeof(*have));
	if (!err && !have) {
		p_err("out of memory");
		err = -ENOMEM;
	}
	if (!err)
		err = xlb_src_read_all(inst, &all);
	if (err)
		goto out;
	/* A key whose entries the plan deleted (a VIP removed, then built
	 * anew) has none. */
	if (plan_src_of(plan, a->key))
		have->n = 0;
	else
		xlb_src_of(&all, v, have);
	old_gen = named_gen(v);
	flags = xlb_src_flags(l);
	/* The same lists: nothing to write. A VIP born closed for its lists
	 * (update.h) has none yet, and its flags differ. */
	if (have->n == l->n &&
	    !memcmp(have->p, l->p, l->n * sizeof(l->p[0])) &&
	    (v->vip.flags & (XLB_VIP_F_SRC_LIST | XLB_VIP_F_SRC_DENY)) == flags)
		goto out;
	kept = kept_elsewhere(st, plan, &all, a->key);
	if (kept + l->n > XLB_SRC_MAX) {
		p_err("VIP %s: %u source prefixes, with the %u of the other VIPs, are more than %d (the limit in all)",
		      name, l->n, kept, XLB_SRC_MAX);
		err = -ENOSPC;
		goto out;
	}
	/* What a kill left under the other generation goes first. */
	err = delete_unnamed(inst, st, &all, a->key);
	if (err)
		goto out;
	gen = old_gen == 1 ? 0 : 1;
	for (i = 0; i < l->n && !err; i++) {
		k = entry_key(a->key, gen, &l->p[i]);
		val.deny = l->p[i].deny;
		err = xlb_plan_update(st, inst->src_ranges_fd,
				      XLB_MAP_SRC_RANGES, &k, sizeof(k), &val,
				      sizeof(val), 0) ?:
		      xlb_plan_what(st, "VIP %s: source ranges", name);
	}
	if (err)
		goto out;
	if (flags && gen)
		flags |= XLB_VIP_F_SRC_GEN;
	v->vip.flags = (v->vip.flags & ~XLB_VIP_F_SRC) | flags;
	/* The ranged bit before the record that needs it, after the one
	 * that no longer does. */
	if (flags)
		err = xlb_vip_filter_sync(inst, st, NULL, 0);
	err = err ?: xlb_vip_write(inst, st, v, BPF_EXIST);
	err = err ?: xlb_vip_filter_sync(inst, st, NULL, 0);
	/* A packet that read the old record may still look for the old
	 * entries: they go once it is through (a VIP born closed has
	 * none, and nothing to wait for). */
	for (i = 0, quiesced = false; i < all.n && !err && old_gen >= 0; i++) {
		if (!entry_of(&all.e[i], a->key, old_gen))
			continue;
		if (!quiesced)
			err = xlb_plan_quiesce(st);
		quiesced = true;
		err = err ?: xlb_plan_delete(st, inst->src_ranges_fd,
					     XLB_MAP_SRC_RANGES, &all.e[i].key,
					     sizeof(all.e[i].key), true);
	}
	if (!err)
		err = plan_src_set(plan, a->key, l->n);
out:
	xlb_src_all_free(&all);
	free(have);
	return err;
}

int xlb_vip_src_set(struct xlb_instance *inst, struct xlb_state *st,
		    const struct xlb_vip_key *key, const struct xlb_src_list *l)
{
	struct src_set_arg a = { .key = key, .l = l };

	if (!change_of(st))
		return -EINVAL;
	return xlb_update_step(inst, st, src_set, &a);
}
