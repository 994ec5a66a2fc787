// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * What a change keeps in step with its VIPs besides their keys: the VIP
 * filter and the set of VIP addresses (both read by the datapath before
 * any VIP lookup), and the settings, with what a command's first write
 * owes (xlb_update_pending()). Recorded in the plan (change.h), which
 * keeps the filter and the set as it leaves them, for its next step.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>

#include "change.h"
#include "update.h"
#include "vip_filter.h"

/* The key of a VIP's address in xlb_vip_addrs. */
static struct xlb_vip_key addr_key(const struct xlb_vip_key *vip)
{
	struct xlb_vip_key k = { .family = vip->family };

	memcpy(k.addr, vip->addr, sizeof(k.addr));
	return k;
}

/* The address set as the plan has left it so far: the kernel's, read
 * at first use, with the plan's writes. */
static int addrs_known(const struct xlb_instance *inst, struct xlb_plan *plan)
{
	struct xlb_vip_key k, next, *prev = NULL;
	struct xlb_vip_addr have;

	if (plan->addrs_known)
		return 0;
	plan->addrs = calloc(XLB_MAX_VIPS, sizeof(*plan->addrs));
	plan->addr_vips = calloc(XLB_MAX_VIPS, sizeof(*plan->addr_vips));
	if (!plan->addrs || !plan->addr_vips) {
		p_err("out of memory");
		return -ENOMEM;
	}
	while (plan->n_addrs < XLB_MAX_VIPS &&
	       !bpf_map_get_next_key(inst->vip_addrs_fd, prev, &next)) {
		/* One deleted meanwhile counts as absent (0 VIPs). */
		if (bpf_map_lookup_elem(inst->vip_addrs_fd, &next, &have))
			memset(&have, 0, sizeof(have));
		plan->addrs[plan->n_addrs] = next;
		plan->addr_vips[plan->n_addrs++] = have;
		k = next;
		prev = &k;
	}
	plan->addrs_known = true;
	return 0;
}

static __u32 addr_at(const struct xlb_plan *plan, const struct xlb_vip_key *k)
{
	__u32 i;

	for (i = 0; i < plan->n_addrs && memcmp(&plan->addrs[i], k, sizeof(*k));
	     i++)
		;
	return i;
}

/*
 * Make xlb_vip_addrs hold the addresses of st's VIPs but skip (a VIP about
 * to be deleted; NULL: none), each with its number of VIPs and of those
 * that do not answer ping, writing only what differs. An address is
 * added after its first VIP's key is inserted and deleted before its
 * last VIP's key is: a packet to a VIP port is never dropped as
 * drop_vip_port while its VIP is being added or deleted (it is
 * forwarded, or passed, as before or after the change).
 */
int xlb_vip_addrs_sync(struct xlb_instance *inst, const struct xlb_state *st,
		      const struct xlb_vip_key *skip)
{
	struct xlb_plan *plan = plan_of(st);
	struct xlb_vip_key *want, k;
	struct xlb_vip_addr *count;
	__u32 i, j, n = 0;
	int err = 0;

	if (!plan)
		return -EINVAL;
	if (inst->vip_addrs_fd < 0)
		return 0;
	err = addrs_known(inst, plan);
	if (err)
		return err;
	want = calloc(XLB_MAX_VIPS, sizeof(*want));
	count = calloc(XLB_MAX_VIPS, sizeof(*count));
	if (!want || !count) {
		p_err("out of memory");
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < st->n_vips; i++) {
		if (skip && !memcmp(&st->vips[i].key, skip, sizeof(*skip)))
			continue;
		k = addr_key(&st->vips[i].key);
		for (j = 0; j < n && memcmp(&want[j], &k, sizeof(k)); j++)
			;
		if (j == n)
			want[n++] = k;
		count[j].vips++;
		count[j].no_ping += !!(st->vips[i].vip.flags & XLB_VIP_F_NO_PING);
	}
	for (i = 0; i < n && !err; i++) {
		j = addr_at(plan, &want[i]);
		if (j < plan->n_addrs &&
		    !memcmp(&plan->addr_vips[j], &count[i], sizeof(count[i])))
			continue;
		err = xlb_plan_update(st, inst->vip_addrs_fd, XLB_MAP_VIP_ADDRS,
				      &want[i], sizeof(want[i]), &count[i],
				      sizeof(count[i]), 0);
		if (err || j == XLB_MAX_VIPS)
			continue;
		if (j == plan->n_addrs)
			plan->addrs[plan->n_addrs++] = want[i];
		plan->addr_vips[j] = count[i];
	}
	/* Then the addresses no VIP has any more. */
	for (i = 0; i < plan->n_addrs && !err;) {
		for (j = 0; j < n && memcmp(&want[j], &plan->addrs[i],
					    sizeof(want[j])); j++)
			;
		if (j < n) {
			i++;
			continue;
		}
		err = xlb_plan_delete(st, inst->vip_addrs_fd, XLB_MAP_VIP_ADDRS,
				      &plan->addrs[i], sizeof(plan->addrs[i]),
				      true);
		plan->n_addrs--;
		plan->addrs[i] = plan->addrs[plan->n_addrs];
		plan->addr_vips[i] = plan->addr_vips[plan->n_addrs];
	}
out:
	free(want);
	free(count);
	return err;
}

/*
 * Make the VIP filter (bpf/maps.h) that of st's VIPs and of extra (a VIP
 * about to be inserted; NULL: none), when the kernel's differs: a VIP's
 * bit is set before its key is inserted and cleared after its key is
 * deleted, so the datapath never filters out a packet of a live VIP. Each
 * VIP address has a bit too (port and protocol 0), and xlb_vip_addrs
 * follows. The program of an older xlb has no filter: nothing to do.
 */
/*
 * Write the ranged bits (xlb_vip_ranged) as want has them, in two halves
 * around the filter's write (filter_write()): the bits it gains before,
 * so that a VIP with source ranges always has its bit when its record
 * says so, and those it loses after. An instance without the map has no
 * VIP with ranges (src_ranges.c refuses them).
 */
static int ranged_write(struct xlb_instance *inst, const struct xlb_state *st,
			struct xlb_plan *plan, const struct xlb_vip_ranged *want,
			bool gain)
{
	struct xlb_vip_ranged next;
	__u32 zero = 0, i;
	bool differs = false;
	int err;

	if (inst->vip_ranged_fd < 0)
		return 0;
	if (!plan->ranged_known) {
		plan->ranged = calloc(1, sizeof(*plan->ranged));
		if (!plan->ranged) {
			p_err("out of memory");
			return -ENOMEM;
		}
		plan->ranged_known = true;
		/* Unreadable: written whatever it holds. */
		if (bpf_map_lookup_elem(inst->vip_ranged_fd, &zero,
					plan->ranged))
			memset(plan->ranged, 0xff, sizeof(*plan->ranged));
	}
	next.on = gain ? plan->ranged->on | want->on : want->on;
	differs = next.on != plan->ranged->on;
	for (i = 0; i < XLB_VIP_FILTER_BITS / 64; i++) {
		next.bits[i] = gain ? plan->ranged->bits[i] | want->bits[i]
				    : want->bits[i];
		differs |= next.bits[i] != plan->ranged->bits[i];
	}
	if (!differs)
		return 0;
	err = xlb_plan_update(st, inst->vip_ranged_fd, XLB_MAP_VIP_RANGED,
			      &zero, sizeof(zero), &next, sizeof(next), 0);
	if (!err)
		memcpy(plan->ranged, &next, sizeof(next));
	return err;
}

int xlb_vip_filter_sync(struct xlb_instance *inst, const struct xlb_state *st,
		       const struct xlb_vip_key *extra, __u32 extra_flags)
{
	struct xlb_vip_filter *want = NULL, *have = NULL;
	struct xlb_plan *plan = plan_of(st);
	struct xlb_vip_ranged *ranged = NULL;
	const struct xlb_vip_key *key;
	struct xlb_vip_key addr;
	__u32 zero = 0, i, bit, flags;
	int err = 0;

	if (!plan)
		return -EINVAL;
	if (inst->vip_filter_fd < 0)
		return 0;
	/* A VIP about to be inserted gets its address after its key. */
	if (!extra) {
		err = xlb_vip_addrs_sync(inst, st, NULL);
		if (err)
			return err;
	}
	want = calloc(1, sizeof(*want));
	have = calloc(1, sizeof(*have));
	ranged = calloc(1, sizeof(*ranged));
	if (!want || !have || !ranged) {
		p_err("out of memory");
		err = -ENOMEM;
		goto out;
	}
	want->ready = XLB_VIP_FILTER_READY;
	for (i = 0; i <= st->n_vips; i++) {
		key = i < st->n_vips ? &st->vips[i].key : extra;
		if (!key)
			continue;
		bit = xlb_vip_key_bit(key);
		want->bits[bit / 64] |= 1ULL << (bit % 64);
		/* Then a packet whose port has no bit looks for it. */
		if (key->proto & XLB_VIP_PROTO_ALL_PORTS)
			want->ready |= XLB_VIP_FILTER_ALL_PORTS;
		flags = i < st->n_vips ? st->vips[i].vip.flags : extra_flags;
		/* A stateless VIP's packets skip the connection table. */
		if (flags & XLB_VIP_F_STATELESS) {
			want->ready |= XLB_VIP_FILTER_STATELESS;
			want->stateless[bit / 64] |= 1ULL << (bit % 64);
		}
		/* Those of a VIP with source ranges meet them first. */
		if (flags & XLB_VIP_F_SRC_LIST) {
			ranged->on = 1;
			ranged->bits[bit / 64] |= 1ULL << (bit % 64);
		}
		if (inst->vip_addrs_fd < 0)
			continue;
		addr = addr_key(key);
		bit = xlb_vip_filter_bit(addr.addr, 0, 0, addr.family);
		want->bits[bit / 64] |= 1ULL << (bit % 64);
	}
	/* Compared with the filter as the plan leaves it so far. */
	if (!plan->filter_known) {
		plan->filter = have;
		have = NULL;
		plan->filter_known = true;
		if (bpf_map_lookup_elem(inst->vip_filter_fd, &zero,
					plan->filter))
			/* Unreadable: written whatever it holds. */
			plan->filter->ready = ~want->ready;
	}
	err = ranged_write(inst, st, plan, ranged, true);
	if (err || !memcmp(want, plan->filter, sizeof(*want)))
		goto ranged;
	err = xlb_plan_update(st, inst->vip_filter_fd, XLB_MAP_VIP_FILTER,
			      &zero, sizeof(zero), want, sizeof(*want), 0);
	if (!err)
		memcpy(plan->filter, want, sizeof(*want));
ranged:
	if (!err)
		err = ranged_write(inst, st, plan, ranged, false);
out:
	free(want);
	free(have);
	free(ranged);
	return err;
}

static int slot_update(struct xlb_instance *inst, const struct xlb_state *st,
		       __u32 bit, const struct xlb_state_vip *v)
{
	struct xlb_vip_slot slot = { 0 };

	if (v) {
		slot.key = v->key;
		slot.vip = v->vip;
	}
	return xlb_plan_update(st, inst->vip_slots_fd, XLB_MAP_VIP_SLOTS, &bit,
			       sizeof(bit), &slot, sizeof(slot), 0);
}

/*
 * Every VIP of st whose slot holds no VIP of st as it is (a slot map the
 * program of an older xlb did not have, now made empty, or one such a
 * program left behind) given its slot, before the command's first write.
 * A slot held by another VIP of the bit, with its record, stays.
 */
static int vip_slots_sync(struct xlb_instance *inst, const struct xlb_state *st)
{
	struct xlb_vip_slot have;
	__u32 i, j, bit;
	int err = 0;

	if (inst->vip_slots_fd < 0)
		return 0;
	for (i = 0; i < st->n_vips && !err; i++) {
		if (st->vips[i].corrupt[0])
			continue;
		bit = xlb_vip_key_bit(&st->vips[i].key);
		if (bpf_map_lookup_elem(inst->vip_slots_fd, &bit, &have))
			return -errno;
		for (j = 0; j < st->n_vips; j++)
			if (!st->vips[j].corrupt[0] &&
			    !memcmp(&have.key, &st->vips[j].key, sizeof(have.key)) &&
			    !memcmp(&have.vip, &st->vips[j].vip, sizeof(have.vip)))
				break;
		if (j == st->n_vips)
			err = slot_update(inst, st, bit, &st->vips[i]);
	}
	return err;
}

static int config_write(struct xlb_instance *inst, struct xlb_state *st,
			void *arg)
{
	const struct xlb_config *cfg = arg;
	__u32 zero = 0;
	int err;

	if (!memcmp(cfg, &st->config, sizeof(*cfg)) && !st->seeds_pending)
		return 0;
	if (st->filter_pending) {
		err = xlb_vip_filter_sync(inst, st, NULL, 0) ?:
		      vip_slots_sync(inst, st);
		if (err)
			return err;
		st->filter_pending = false;
	}
	err = xlb_plan_update(st, inst->config_fd, XLB_MAP_CONFIG, &zero,
			      sizeof(zero), cfg, sizeof(*cfg), 0);
	if (err)
		return err;
	st->config = *cfg;
	st->seeds_pending = false;
	return 0;
}

int xlb_config_write(struct xlb_instance *inst, struct xlb_state *st,
		     const struct xlb_config *cfg)
{
	struct xlb_config c = *cfg;

	if (!change_of(st))
		return -EINVAL;
	/* Nothing to write: no change at all. */
	if (!memcmp(cfg, &st->config, sizeof(*cfg)) && !st->seeds_pending)
		return 0;
	return xlb_update_step(inst, st, config_write, &c);
}

static int pending(struct xlb_instance *inst, struct xlb_state *st, void *arg)
{
	struct xlb_config cfg = st->config;
	int err;

	(void)arg;
	if (st->filter_pending) {
		err = xlb_vip_filter_sync(inst, st, NULL, 0) ?:
		      vip_slots_sync(inst, st);
		if (err)
			return err;
		st->filter_pending = false;
	}
	return st->seeds_pending ? config_write(inst, st, &cfg) : 0;
}

/* Before the first write of a command, and only if it makes one. */
int xlb_update_pending(struct xlb_instance *inst, struct xlb_state *st)
{
	if (!change_of(st))
		return -EINVAL;
	if (!st->filter_pending && !st->seeds_pending)
		return 0;
	return xlb_update_step(inst, st, pending, NULL);
}

/*
 * A slot is only ever a copy of a record of xlb_vips: written after the
 * record, emptied (or given to another VIP of its bit) before the record's
 * deletion, so that a command killed between two writes never leaves a
 * slot naming a VIP that is gone (vip_slots_sync() repairs the slots of
 * the VIPs there are). A corrupt record (its id may be another VIP's)
 * gets no slot.
 */
int xlb_vip_slot_write(struct xlb_instance *inst, const struct xlb_state *st,
		       const struct xlb_state_vip *v)
{
	if (inst->vip_slots_fd < 0)
		return 0;
	if (v->corrupt[0])
		return xlb_vip_slot_clear(inst, st, &v->key);
	return slot_update(inst, st, xlb_vip_key_bit(&v->key), v);
}

int xlb_vip_slots_repair(struct xlb_instance *inst, const struct xlb_state *st,
			 bool *wrote)
{
	const struct xlb_state_vip *v;
	struct xlb_vip_slot have;
	__u32 i, bit;
	int err = 0;

	if (inst->vip_slots_fd < 0)
		return 0;
	for (i = 0; i < st->n_vips && !err; i++) {
		v = &st->vips[i];
		bit = xlb_vip_key_bit(&v->key);
		if (v->corrupt[0] ||
		    bpf_map_lookup_elem(inst->vip_slots_fd, &bit, &have) ||
		    memcmp(&have.key, &v->key, sizeof(have.key)) ||
		    !memcmp(&have.vip, &v->vip, sizeof(have.vip)))
			continue;
		err = slot_update(inst, st, bit, v);
		*wrote = true;
	}
	return err;
}

int xlb_vip_slot_clear(struct xlb_instance *inst, const struct xlb_state *st,
		       const struct xlb_vip_key *key)
{
	const struct xlb_state_vip *other = NULL;
	__u32 bit = xlb_vip_key_bit(key), i;

	if (inst->vip_slots_fd < 0)
		return 0;
	for (i = 0; i < st->n_vips && !other; i++)
		if (!st->vips[i].corrupt[0] &&
		    memcmp(&st->vips[i].key, key, sizeof(*key)) &&
		    xlb_vip_key_bit(&st->vips[i].key) == bit)
			other = &st->vips[i];
	return slot_update(inst, st, bit, other);
}
