// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * What a change keeps in step with its VIPs besides their keys: the VIP
 * filter and the set of VIP addresses (both read by the datapath before
 * any VIP lookup), and the settings, with what a command's first write
 * owes (xlb_update_pending()). Written through change.h, so that a plan
 * writes none of it.
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

/*
 * Make xlb_vip_addrs hold the addresses of st's VIPs but skip (a VIP about
 * to be deleted; NULL: none), each with its number of VIPs, writing only
 * what differs. An address is added after its first VIP's key is
 * inserted and deleted before its last VIP's key is: a packet to a VIP
 * port is never dropped as drop_vip_port while its VIP is being added or
 * deleted (it is forwarded, or passed, as before or after the change).
 */
int xlb_vip_addrs_sync(struct xlb_instance *inst, const struct xlb_state *st,
		      const struct xlb_vip_key *skip)
{
	struct xlb_vip_key *want, *stale, k, next, *prev = NULL;
	struct xlb_vip_addr *count, have;
	__u32 i, j, n = 0, n_stale = 0;
	int err = 0;

	if (inst->vip_addrs_fd < 0)
		return 0;
	want = calloc(XLB_MAX_VIPS, sizeof(*want));
	stale = calloc(XLB_MAX_VIPS, sizeof(*stale));
	count = calloc(XLB_MAX_VIPS, sizeof(*count));
	if (!want || !stale || !count) {
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
		if (j == n) {
			want[n] = k;
			count[n++].vips = 0;
		}
		count[j].vips++;
	}
	for (i = 0; i < n && !err; i++) {
		if (!bpf_map_lookup_elem(inst->vip_addrs_fd, &want[i], &have) &&
		    have.vips == count[i].vips)
			continue;
		err = map_update(st, inst->vip_addrs_fd, &want[i], &count[i],
				 0);
	}
	while (!err && n_stale < XLB_MAX_VIPS &&
	       !bpf_map_get_next_key(inst->vip_addrs_fd, prev, &next)) {
		for (j = 0; j < n && memcmp(&want[j], &next, sizeof(next)); j++)
			;
		if (j == n)
			stale[n_stale++] = next;
		k = next;
		prev = &k;
	}
	for (i = 0; i < n_stale && !err; i++) {
		err = map_delete(st, inst->vip_addrs_fd, &stale[i]);
		if (err == -ENOENT)
			err = 0;
	}
	if (err)
		p_err("cannot write %s/%s: %s", inst->dir, XLB_MAP_VIP_ADDRS,
		      strerror(-err));
out:
	free(want);
	free(stale);
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
int xlb_vip_filter_sync(struct xlb_instance *inst, const struct xlb_state *st,
		       const struct xlb_vip_key *extra, __u32 extra_flags)
{
	struct xlb_vip_filter *want = NULL, *have = NULL;
	const struct xlb_vip_key *key;
	struct xlb_vip_key addr;
	__u32 zero = 0, i, bit;
	int err = 0;

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
	if (!want || !have) {
		p_err("out of memory");
		err = -ENOMEM;
		goto out;
	}
	want->ready = XLB_VIP_FILTER_READY;
	for (i = 0; i <= st->n_vips; i++) {
		key = i < st->n_vips ? &st->vips[i].key : extra;
		if (!key)
			continue;
		bit = xlb_vip_filter_bit(key->addr, key->port, key->proto,
					 key->family);
		want->bits[bit / 64] |= 1ULL << (bit % 64);
		/* A stateless VIP's packets skip the connection table. */
		if ((i < st->n_vips ? st->vips[i].vip.flags : extra_flags) &
		    XLB_VIP_F_STATELESS) {
			want->ready |= XLB_VIP_FILTER_STATELESS;
			want->stateless[bit / 64] |= 1ULL << (bit % 64);
		}
		if (inst->vip_addrs_fd < 0)
			continue;
		addr = addr_key(key);
		bit = xlb_vip_filter_bit(addr.addr, 0, 0, addr.family);
		want->bits[bit / 64] |= 1ULL << (bit % 64);
	}
	if (!bpf_map_lookup_elem(inst->vip_filter_fd, &zero, have) &&
	    !memcmp(want, have, sizeof(*want)))
		goto out;
	err = map_update(st, inst->vip_filter_fd, &zero, want, 0);
	if (err)
		p_err("cannot write %s/%s: %s", inst->dir, XLB_MAP_VIP_FILTER,
		      strerror(-err));
out:
	free(want);
	free(have);
	return err;
}

int xlb_config_write(struct xlb_instance *inst, struct xlb_state *st,
		     const struct xlb_config *cfg)
{
	__u32 zero = 0;
	int err;

	if (!memcmp(cfg, &st->config, sizeof(*cfg)) && !st->seeds_pending)
		return 0;
	if (st->filter_pending) {
		err = xlb_vip_filter_sync(inst, st, NULL, 0);
		if (err)
			return err;
		st->filter_pending = false;
	}
	err = map_update(st, inst->config_fd, &zero, cfg, 0);
	if (err) {
		p_err("cannot write %s/%s: %s", inst->dir, XLB_MAP_CONFIG,
		      strerror(-err));
		return err;
	}
	st->config = *cfg;
	st->seeds_pending = false;
	return 0;
}

/* Before the first write of a command, and only if it makes one. */
int xlb_update_pending(struct xlb_instance *inst, struct xlb_state *st)
{
	struct xlb_config cfg = st->config;
	int err;

	if (st->filter_pending) {
		err = xlb_vip_filter_sync(inst, st, NULL, 0);
		if (err)
			return err;
		st->filter_pending = false;
	}
	return st->seeds_pending ? xlb_config_write(inst, st, &cfg) : 0;
}
