// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Changing an instance in a kill-safe order (see update.h): a command's
 * begin (what a kill left, finished) and close (the next hops), and the
 * steps of a VIP (build, modify, remove, health), each run in a plan
 * (plan.c) that its commit performs.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <bpf/bpf.h>

#include "addr.h"
#include "change.h"
#include "hc_store.h"
#include "history.h"
#include "neigh.h"
#include "report.h"
#include "table_map.h"
#include "update.h"
#include "src_ranges.h"
#include "vip_mode.h"

/* The end of a change of a DIRTY VIP's records: the table they ask for,
 * then the REMOVED ones freed, then the VIP clean again. */
static int vip_commit(struct xlb_instance *inst, struct xlb_state *st,
		      struct xlb_state_vip *v)
{
	int err;

	err = xlb_vip_table_install(inst, st, &v->key, v->vip.id, v->vip.table_size,
			    v->vip.flags);
	if (!err)
		err = xlb_backends_free_of(inst, st, v->vip.id, true);
	if (err)
		return err;
	v->vip.flags &= ~XLB_VIP_F_DIRTY;
	return xlb_vip_write(inst, st, v, BPF_EXIST);
}

/* Roll a VIP left DIRTY forward: its records are what was wanted. */
static int finish_vip(struct xlb_instance *inst, struct xlb_state *st,
		      struct xlb_state_vip *v)
{
	char name[XLB_VIP_STRLEN];

	return xlb_plan_note(st, "xlb: %s: finishing a change that was interrupted",
			     xlb_vip_str(&v->key, name, sizeof(name))) ?:
	       vip_commit(inst, st, v);
}

/* Leftovers of interrupted commands: records and tables of ids no VIP
 * holds, REMOVED records of clean VIPs. */
static int free_leftovers(struct xlb_instance *inst, struct xlb_state *st)
{
	bool held[XLB_MAX_VIPS] = {};
	struct xlb_backend *b;
	__u32 i, inner_id;
	int err;

	for (i = 0; i < st->n_vips; i++)
		if (st->vips[i].vip.id < XLB_MAX_VIPS)
			held[st->vips[i].vip.id] = true;
	for (i = 1; i < XLB_MAX_BACKENDS; i++) {
		b = &st->backends[i];
		if (!(b->flags & XLB_BE_F_IN_USE))
			continue;
		if (b->vip_id < XLB_MAX_VIPS && held[b->vip_id] &&
		    !(b->flags & XLB_BE_F_REMOVED))
			continue;
		xlb_batch_free(st, i);
	}
	err = xlb_batch_write(inst, st);
	if (err)
		return err;
	for (i = 0; i < XLB_MAX_VIPS; i++) {
		if (held[i] || bpf_map_lookup_elem(inst->tables_fd, &i, &inner_id))
			continue;
		err = xlb_vip_table_delete(inst, st, i);
		if (err)
			return err;
	}
	return 0;
}

/* A stateless VIP's table again, without what its history no longer
 * keeps (history.h): the slots stay, so no DIRTY is needed. */
static int history_expire(struct xlb_instance *inst, struct xlb_state *st,
			  const struct xlb_state_vip *v)
{
	struct xlb_history h;
	__u32 *slots, m;
	bool stale;

	if (v->corrupt[0] || !(v->vip.flags & XLB_VIP_F_STATELESS))
		return 0;
	if (xlb_vip_table_read(inst, st, v->vip.id, &slots, &m, &h))
		return 0;
	stale = m == v->vip.table_size &&
		xlb_history_stale(st, v->vip.id, &h, slots, xlb_history_now(),
				  xlb_history_keep(&st->config));
	free(slots);
	xlb_history_free(&h);
	if (!stale)
		return 0;
	return xlb_vip_table_install(inst, st, &v->key, v->vip.id,
				     v->vip.table_size, v->vip.flags);
}

/* What a kill left, finished: stale slots, DIRTY VIPs, leftovers,
 * expired history. */
static int repair(struct xlb_instance *inst, struct xlb_state *st, void *arg)
{
	bool slots = false;
	__u32 i;
	int err;

	(void)arg;
	/* First the slots a kill left with a stale copy of their record:
	 * once no packet reads the copies, what only they named can go. */
	err = xlb_vip_slots_repair(inst, st, &slots);
	if (!err && slots)
		err = xlb_plan_quiesce(st);
	for (i = 0; i < st->n_vips && !err; i++) {
		if (st->vips[i].corrupt[0] ||
		    !(st->vips[i].vip.flags & XLB_VIP_F_DIRTY))
			continue;
		err = finish_vip(inst, st, &st->vips[i]);
		if (err)
			return err;
	}
	err = err ?: free_leftovers(inst, st) ?:
	      xlb_src_leftovers(inst, st, NULL);
	for (i = 0; i < st->n_vips && !err; i++)
		err = history_expire(inst, st, &st->vips[i]);
	return err;
}

/*
 * An instance's first update gives it its random seeds: the flow hash's
 * (unless the command sets one) and the connection table's, kept for good
 * so that a reseed leaves the table's entries where the datapath finds
 * them (an instance made before it had one gets it now).
 */
/* Draw the seeds a new instance lacks (see seeds_pending). */
static int first_use(struct xlb_state *st, bool seed_given)
{
	struct xlb_config cfg = st->config;
	int err;

	if (!seed_given && !(cfg.flags & XLB_CFG_F_INITIALIZED)) {
		if (getrandom(cfg.hash_key, sizeof(cfg.hash_key), 0) !=
		    sizeof(cfg.hash_key))
			goto no_random;
		cfg.flags |= XLB_CFG_F_INITIALIZED;
	}
	if (!cfg.ct_seed) {
		if (getrandom(&cfg.ct_seed, sizeof(cfg.ct_seed), 0) !=
		    sizeof(cfg.ct_seed))
			goto no_random;
		/* 0 means none yet. */
		cfg.ct_seed |= !cfg.ct_seed;
	}
	if (memcmp(&cfg, &st->config, sizeof(cfg))) {
		st->config = cfg;
		st->seeds_pending = true;
	}
	return 0;
no_random:
	err = -errno;
	p_err("cannot get a random seed: %s", strerror(-err));
	return err;
}

int xlb_update_begin(struct xlb_instance *inst, struct xlb_state **out,
		     bool seed_given)
{
	struct xlb_state *st;
	__u32 i;
	int err;

	err = xlb_state_read(inst, &st);
	if (err)
		return err;
	st->change = calloc(1, sizeof(*st->change));
	if (!st->change) {
		p_err("out of memory");
		xlb_state_free(st);
		return -ENOMEM;
	}
	for (i = 0; i < st->n_vips; i++)
		if (st->vips[i].corrupt[0])
			xlb_state_vip_corrupt_note(&st->vips[i]);
	err = xlb_update_all_or_nothing(inst, st, repair, NULL);
	if (err)
		goto fail;
	st->filter_pending = true;
	err = first_use(st, seed_given);
	if (err)
		goto fail;
	*out = st;
	return 0;
fail:
	xlb_state_free(st);
	return err;
}

int xlb_update_open(struct xlb_instance *inst,
		    const struct xlb_instance_opts *opts, struct xlb_state **st,
		    bool seed_given)
{
	int err;

	*st = NULL;
	err = xlb_instance_open(inst, opts, XLB_LOCK_WRITE);
	if (err)
		return err;
	err = xlb_update_begin(inst, st, seed_given);
	if (err)
		xlb_instance_close(inst);
	return err;
}

void xlb_update_close(struct xlb_instance *inst, struct xlb_state *st)
{
	/* One hook for every change of backends, made or half made. */
	if (st && st->change && st->change->backends_written)
		xlb_neigh_sync(inst, st, st->change->backends_added);
	xlb_state_free(st);
	xlb_instance_close(inst);
}

/* A VIP from scratch under a new id; the key is inserted, or switched
 * from the old id, last. It keeps the source ranges it had (they go by
 * its key); a new one takes born, its flags until its lists are written
 * (update.h). */
static int vip_build(struct xlb_instance *inst, struct xlb_state *st,
		     const struct xlb_vip_key *key, __u32 m, __u32 mode,
		     __u32 born, const struct xlb_want *want, size_t n)
{
	struct xlb_state_vip nv = { .key = *key }, *old;
	__u32 old_id, old_flags;
	size_t i;
	int id, err;

	old = xlb_state_vip_find(st, key);
	id = xlb_state_alloc_vip_id(st);
	if (id < 0) {
		p_err("too many VIPs (limit %d)", XLB_MAX_VIPS);
		return id;
	}
	nv.vip.id = id;
	nv.vip.table_size = m;
	nv.vip.flags = mode | (old ? old->vip.flags & XLB_VIP_F_SRC : born);
	/* Its counters from zero; its health settings those of the VIP it
	 * replaces, or none. */
	err = xlb_counter_zero(st, inst->vip_stats_fd, XLB_MAP_VIP_STATS, id) ?:
	      (inst->vip_denied_fd < 0 ? 0 :
	       xlb_counter_zero(st, inst->vip_denied_fd, XLB_MAP_VIP_DENIED,
				id)) ?:
	      (old ? xlb_plan_hc(st, OP_HC_COPY_VIP, old->vip.id, id, 0, NULL,
				 0, NULL, 0) :
		     xlb_plan_hc(st, OP_HC_RESET_VIP, id, 0, 0, NULL, 0, NULL,
				 0));
	if (err)
		return err;
	for (i = 0; i < n; i++) {
		err = xlb_batch_alloc(st, id, mode, &want[i]);
		if (err)
			return err;
		if (old)
			xlb_batch_carry_health(st, old->vip.id);
	}
	err = xlb_batch_write(inst, st);
	if (!err)
		err = xlb_vip_table_install(inst, st, key, id, m, mode);
	if (err)
		return err;

	if (!old) {
		err = xlb_vip_filter_sync(inst, st, key, nv.vip.flags) ?:
		      xlb_vip_write(inst, st, &nv, BPF_NOEXIST);
		if (!err)
			err = xlb_state_vip_insert(st, &nv);
		return err ?: xlb_vip_addrs_sync(inst, st, NULL);
	}
	old_id = old->vip.id;
	old_flags = old->vip.flags;
	/* Made stateless: its filter bit says so before its key does. */
	if (mode & ~old_flags & XLB_VIP_F_STATELESS) {
		err = xlb_vip_filter_sync(inst, st, key, nv.vip.flags);
		if (err)
			return err;
	}
	err = xlb_vip_write(inst, st, &nv, BPF_EXIST);
	if (err)
		return err;
	old->vip = nv.vip;
	if (old_flags & ~mode & XLB_VIP_F_STATELESS) {
		err = xlb_vip_filter_sync(inst, st, NULL, 0);
		if (err)
			return err;
	}
	/* Whether the address answers ping may have changed. */
	err = xlb_vip_addrs_sync(inst, st, NULL);
	if (err)
		return err;
	return xlb_vip_table_delete(inst, st, old_id) ?:
	       xlb_backends_free_of(inst, st, old_id, false);
}

/* Same table size: write only the records that change, then the table.
 * A new mode (the VIP's flags first, then its records') leaves the
 * datapath with a mix of the old and new encapsulation for a moment,
 * which the backends take both. */
static int vip_modify(struct xlb_instance *inst, struct xlb_state *st,
		      struct xlb_state_vip *v, __u32 mode,
		      const struct xlb_want *want, size_t n)
{
	__u32 ids[XLB_MAX_BACKENDS];
	__u8 be_mode = xlb_be_mode_flags(mode);
	struct xlb_backend b;
	__u32 weight, id;
	size_t i, k;
	int err;

	v->vip.flags = (v->vip.flags & ~XLB_VIP_F_MODE) | mode | XLB_VIP_F_DIRTY;
	err = xlb_vip_write(inst, st, v, BPF_EXIST) ?:
	      xlb_vip_addrs_sync(inst, st, NULL);
	if (err)
		return err;

	/* New records, new weights and REMOVED marks: one batch-> */
	k = xlb_state_vip_backends(st, v->vip.id, ids);
	for (i = 0; i < n; i++) {
		id = xlb_state_backend_find(st, v->vip.id, want[i].addr,
					    want[i].family);
		if (!id) {
			err = xlb_batch_alloc(st, v->vip.id, mode, &want[i]);
			if (err)
				return err;
		} else if (st->backends[id].weight != want[i].weight ||
			   (st->backends[id].flags & XLB_BE_F_GUE) != be_mode) {
			b = st->backends[id];
			b.weight = want[i].weight;
			b.flags = (b.flags & ~XLB_BE_F_GUE) | be_mode;
			xlb_batch_put(st, id, &b);
		}
	}
	for (i = 0; i < k; i++) {
		b = st->backends[ids[i]];
		if (xlb_want_has(want, n, &b, &weight))
			continue;
		b.flags |= XLB_BE_F_REMOVED;
		xlb_batch_put(st, ids[i], &b);
	}
	err = xlb_batch_write(inst, st);
	if (err)
		return err;
	return vip_commit(inst, st, v);
}

struct health_arg {
	const struct xlb_health_change *ch;
	size_t n;
};

static int set_health(struct xlb_instance *inst, struct xlb_state *st,
		      void *arg)
{
	const struct xlb_health_change *ch = ((struct health_arg *)arg)->ch;
	size_t n = ((struct health_arg *)arg)->n;
	struct xlb_state_vip *v;
	struct xlb_backend b;
	bool *dirty = NULL;
	size_t i;
	__u32 id;
	int err;

	if (!change_of(st))
		return -EINVAL;
	for (i = 0; i < n; i++) {
		id = ch[i].id;
		if (id == XLB_BACKEND_NONE || id >= XLB_MAX_BACKENDS ||
		    !xlb_backend_live(&st->backends[id])) {
			p_err("no backend with id %u", id);
			return -ENOENT;
		}
		v = xlb_state_vip_by_id(st, st->backends[id].vip_id);
		if (!v || v->corrupt[0]) {
			p_err("backend id %u belongs to no usable VIP", id);
			return -EINVAL;
		}
	}
	err = xlb_update_pending(inst, st);
	if (err)
		return err;
	dirty = calloc(XLB_MAX_VIPS, sizeof(*dirty));
	if (!dirty) {
		p_err("out of memory");
		return -ENOMEM;
	}
	/* The VIPs whose tables change are DIRTY before any record does. */
	for (i = 0; i < n && !err; i++) {
		b = st->backends[ch[i].id];
		if (!!(b.flags & XLB_BE_F_DOWN) == ch[i].down ||
		    dirty[b.vip_id])
			continue;
		v = xlb_state_vip_by_id(st, b.vip_id);
		v->vip.flags |= XLB_VIP_F_DIRTY;
		err = xlb_vip_write(inst, st, v, BPF_EXIST);
		dirty[b.vip_id] = !err;
	}
	/* The records, one batch (EVICT alone changes no table). */
	for (i = 0; i < n && !err; i++) {
		b = st->backends[ch[i].id];
		b.flags &= ~(XLB_BE_F_DOWN | XLB_BE_F_EVICT);
		b.flags |= (ch[i].down ? XLB_BE_F_DOWN : 0) |
			   (ch[i].evict ? XLB_BE_F_EVICT : 0);
		if (b.flags != st->backends[ch[i].id].flags)
			xlb_batch_put(st, ch[i].id, &b);
	}
	err = err ?: xlb_batch_write(inst, st);
	/* Then each of those VIPs' tables, once. */
	for (id = 0; id < XLB_MAX_VIPS && !err; id++) {
		if (!dirty[id])
			continue;
		v = xlb_state_vip_by_id(st, id);
		err = vip_commit(inst, st, v);
	}
	free(dirty);
	return err;
}

int xlb_backends_set_health(struct xlb_instance *inst, struct xlb_state *st,
			    const struct xlb_health_change *ch, size_t n)
{
	struct health_arg a = { .ch = ch, .n = n };

	if (!change_of(st))
		return -EINVAL;
	return xlb_update_step(inst, st, set_health, &a);
}

int xlb_backend_set_health(struct xlb_instance *inst, struct xlb_state *st,
			   __u32 id, bool down, bool evict)
{
	struct xlb_health_change ch = { .id = id, .down = down, .evict = evict };

	return xlb_backends_set_health(inst, st, &ch, 1);
}

/* Is h the live table's history of v? */
static bool history_is(const struct xlb_instance *inst,
		       const struct xlb_state *st, const struct xlb_state_vip *v,
		       const struct xlb_history *h)
{
	struct xlb_history live;
	__u32 *slots, m;
	bool same;

	if (xlb_vip_table_read(inst, st, v->vip.id, &slots, &m, &live))
		return false;
	xlb_history_sort(&live);
	same = xlb_history_equal(&live, h);
	free(slots);
	xlb_history_free(&live);
	return same;
}

/*
 * A change that fits only once the backends it removes are gone (a full
 * set replaced by another when the records are all in use): first the VIP
 * with only the backends it keeps, at its table size and mode of now,
 * which frees the others' records, then the change itself. Between the
 * two, the removed backends' slots are the kept ones' (or empty, their
 * packets dropped as drop_no_backend): the same VIP both sides of it,
 * and every record in use named by one table at any moment. The kept
 * records stay as they are, health included, for a table built anew to
 * carry it over (xlb_batch_carry_health()).
 */
static int free_replaced_first(struct xlb_instance *inst, struct xlb_state *st,
			       struct xlb_state_vip *v, bool rebuild,
			       const struct xlb_want *want, size_t n)
{
	char name[XLB_VIP_STRLEN];
	struct xlb_want *kept;
	size_t i, nk = 0;
	__u32 id;
	int err;

	kept = malloc((n ? n : 1) * sizeof(*kept));
	if (!kept) {
		p_err("out of memory");
		return -ENOMEM;
	}
	/* At the size of now, a kept backend keeps its weight until the
	 * change itself. */
	for (i = 0; i < n; i++) {
		id = xlb_state_backend_find(st, v->vip.id, want[i].addr,
					    want[i].family);
		if (!id)
			continue;
		kept[nk] = want[i];
		if (rebuild)
			kept[nk].weight = st->backends[id].weight;
		nk++;
	}
	err = xlb_plan_note(st, "xlb: %s: the records of the backends it removes are freed first, to make room for those it adds: for a moment it has only the %zu it keeps",
			    xlb_vip_str(&v->key, name, sizeof(name)), nk) ?:
	      vip_modify(inst, st, v, v->vip.flags & XLB_VIP_F_MODE, kept, nk);
	free(kept);
	return err;
}

static int vip_remove(struct xlb_instance *inst, struct xlb_state *st,
		      const struct xlb_vip_key *key);

struct converge_arg {
	const struct xlb_vip_key *key;
	__u32 m, mode;
	const struct xlb_history *hist;
	const struct xlb_want *want;
	size_t n;
};

static int converge(struct xlb_instance *inst, struct xlb_state *st,
		    void *arg)
{
	const struct converge_arg *a = arg;
	const struct xlb_vip_key *key = a->key;
	const struct xlb_history *hist = a->hist;
	const struct xlb_want *want = a->want;
	__u32 m = a->m, mode = a->mode & XLB_VIP_F_MODE;
	__u32 born = a->mode & XLB_VIP_F_SRC;
	struct xlb_change *ch = st->change;
	struct xlb_state_vip *v;
	struct xlb_vip_diff d;
	size_t n = a->n;
	bool same;
	int err;
	v = xlb_state_vip_find(st, key);
	if (v && v->corrupt[0]) {
		/* Made anew, with an id of its own: nothing of the corrupt
		 * record can be trusted. */
		err = vip_remove(inst, st, key);
		ch->given_history = hist;
		err = err ?: vip_build(inst, st, key, m, mode, born, want, n);
		ch->given_history = NULL;
		return err;
	}
	xlb_vip_diff(st, key, m, want, n, &d);
	/* A VIP changes between tracked and stateless as it changes its
	 * table size: built anew, its key switched in one update, so that
	 * its flags and its table's layout change together. */
	d.rebuild |= v && (v->vip.flags ^ mode) & XLB_VIP_F_STATELESS;
	if (d.rebuild)
		d.adds = n;
	same = !d.rebuild && !d.adds && !d.reweights && !d.removes &&
	       (v->vip.flags & XLB_VIP_F_MODE) == mode;
	if (same && (!hist || history_is(inst, st, v, hist)))
		return 0;
	/* Room for the next hops of the backends it adds is checked on the
	 * whole plan (plan.c). */
	err = xlb_update_pending(inst, st);
	if (err)
		return err;
	if (v && d.adds > xlb_backend_ids_free(st)) {
		err = free_replaced_first(inst, st, v, d.rebuild, want, n);
		if (err)
			return err;
		v = xlb_state_vip_find(st, key);
	}
	ch->given_history = hist;
	if (d.rebuild)
		err = vip_build(inst, st, key, m, mode, born, want, n);
	else
		err = vip_modify(inst, st, xlb_state_vip_find(st, key), mode,
				 want, n);
	ch->given_history = NULL;
	return err;
}

int xlb_vip_converge_mode(struct xlb_instance *inst, struct xlb_state *st,
			  const struct xlb_vip_key *key, __u32 m, __u32 mode,
			  const struct xlb_history *hist,
			  const struct xlb_want *want, size_t n)
{
	struct converge_arg a = {
		.key = key, .m = m, .mode = mode, .want = want, .n = n,
		.hist = mode & XLB_VIP_F_STATELESS ? hist : NULL,
	};
	const char *why;

	if (!change_of(st))
		return -EINVAL;
	if (mode & ~(XLB_VIP_F_MODE | XLB_VIP_F_SRC_LIST | XLB_VIP_F_SRC_DENY) ||
	    xlb_vip_mode_check(mode & XLB_VIP_F_MODE, key->family, &why) ||
	    (hist && hist->m != m))
		return -EINVAL;
	return xlb_update_step(inst, st, converge, &a);
}

int xlb_vip_converge(struct xlb_instance *inst, struct xlb_state *st,
		     const struct xlb_vip_key *key, __u32 m,
		     const struct xlb_want *want, size_t n)
{
	const struct xlb_state_vip *v = xlb_state_vip_find(st, key);

	return xlb_vip_converge_mode(inst, st, key, m,
				     v && !v->corrupt[0] ?
				     v->vip.flags & XLB_VIP_F_MODE : 0, NULL,
				     want, n);
}

static int vip_remove(struct xlb_instance *inst, struct xlb_state *st,
		      const struct xlb_vip_key *key_in)
{
	/* A copy: key_in may point into st->vips, which the erase shifts. */
	const struct xlb_vip_key k = *key_in, *key = &k;
	struct xlb_state_vip *v = xlb_state_vip_find(st, key);
	char name[XLB_VIP_STRLEN];
	bool corrupt;
	__u32 id;
	int err;

	xlb_vip_str(key, name, sizeof(name));
	if (!v) {
		p_err("no VIP %s", name);
		return -ENOENT;
	}
	err = xlb_update_pending(inst, st);
	if (err)
		return err;
	id = v->vip.id;
	corrupt = v->corrupt[0];
	/* The slot before the key: a command killed in between leaves the
	 * VIP found by its key, and the next one gives it its slot again. */
	err = xlb_vip_addrs_sync(inst, st, key) ?:
	      xlb_vip_slot_clear(inst, st, key);
	if (err)
		return err;
	err = xlb_plan_delete(st, inst->vips_fd, XLB_MAP_VIPS, key,
			      sizeof(*key), false) ?:
	      xlb_plan_what(st, "VIP %s", name);
	if (err)
		return err;
	xlb_state_vip_erase(st, key);
	err = xlb_vip_filter_sync(inst, st, NULL, 0) ?:
	      xlb_src_leftovers(inst, st, key);
	/* A corrupt record's id may be out of range or another VIP's: the
	 * key alone was its own. Records of an id no VIP holds are freed as
	 * leftovers by the next change. */
	if (err || corrupt)
		return err;
	return xlb_vip_table_delete(inst, st, id) ?:
	       xlb_backends_free_of(inst, st, id, false);
}

static int remove_step(struct xlb_instance *inst, struct xlb_state *st,
		       void *arg)
{
	return vip_remove(inst, st, arg);
}

int xlb_vip_remove(struct xlb_instance *inst, struct xlb_state *st,
		   const struct xlb_vip_key *key)
{
	if (!change_of(st))
		return -EINVAL;
	return xlb_update_step(inst, st, remove_step, (void *)key);
}
