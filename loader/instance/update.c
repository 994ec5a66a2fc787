// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Changing an instance in a kill-safe order (see update.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "addr.h"
#include "hc_store.h"
#include "history.h"
#include "neigh.h"
#include "report.h"
#include "table_map.h"
#include "update.h"
#include "vip_filter.h"

struct xlb_table_timing xlb_last_table_timing;
bool xlb_time_tables;
/* Backend records were written since the instance was opened, and which
 * of them are new backends (their next hops are named if unresolved). */
static bool backends_written;
static bool backends_added[XLB_MAX_BACKENDS];

/* A table made in the rehearsal of a change (xlb_update_all_or_nothing). */
struct made_table {
	int fd;			/* -1 once installed */
	__u32 vip_id, m;
	__u64 records;		/* records_hash() it was computed from */
	double build_us;
};

static struct {
	bool rehearsal;		/* nothing is written */
	bool whole;		/* checked whole (xlb_neigh_check()) first */
	struct made_table *t;
	size_t n, cap;
	size_t next;		/* the next to install, in the change */
	__u32 *slots;		/* one buffer for every table computed */
	__u32 slots_cap;
} made;

/*
 * The writes of a change, left out in its rehearsal. Every map write made
 * from a change goes through these (tables through install_table()): one
 * that did not would be made by the rehearsal, before the change has all
 * it needs (tests/test_apply_strict.sh would see the maps change).
 */
static int map_update(int fd, const void *key, const void *value, __u64 flags)
{
	return made.rehearsal ? 0 : xlb_map_update(fd, key, value, flags);
}

static int map_update_batch(int fd, const void *keys, const void *values,
			    __u32 n)
{
	return made.rehearsal ? 0 : xlb_map_update_batch(fd, keys, values, n);
}

static int map_delete(int fd, const void *key)
{
	return made.rehearsal ? 0 : xlb_map_delete(fd, key);
}

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
static int addrs_sync(struct xlb_instance *inst, const struct xlb_state *st,
		      const struct xlb_vip_key *skip)
{
	static struct xlb_vip_key want[XLB_MAX_VIPS], stale[XLB_MAX_VIPS];
	static struct xlb_vip_addr count[XLB_MAX_VIPS];
	struct xlb_vip_key k, next, *prev = NULL;
	struct xlb_vip_addr have;
	__u32 i, j, n = 0, n_stale = 0;
	int err = 0;

	if (inst->vip_addrs_fd < 0)
		return 0;
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
		err = map_update(inst->vip_addrs_fd, &want[i], &count[i], 0);
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
		err = map_delete(inst->vip_addrs_fd, &stale[i]);
		if (err == -ENOENT)
			err = 0;
	}
	if (err)
		p_err("cannot write %s/%s: %s", inst->dir, XLB_MAP_VIP_ADDRS,
		      strerror(-err));
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
static int filter_sync(struct xlb_instance *inst, const struct xlb_state *st,
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
		err = addrs_sync(inst, st, NULL);
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
	err = map_update(inst->vip_filter_fd, &zero, want, 0);
	if (err)
		p_err("cannot write %s/%s: %s", inst->dir, XLB_MAP_VIP_FILTER,
		      strerror(-err));
out:
	free(want);
	free(have);
	return err;
}

static int zero_counter(int fd, __u32 id)
{
	static void *zeros;
	int ncpu;

	if (!zeros) {
		ncpu = libbpf_num_possible_cpus();
		if (ncpu < 0)
			return ncpu;
		zeros = calloc(ncpu, sizeof(struct xlb_counter));
		if (!zeros)
			return -ENOMEM;
	}
	return map_update(fd, &id, zeros, 0);
}

/*
 * Backend records written together in one batch update: a kill lands
 * before or after the syscall, never inside it, so a VIP's change of
 * records is all there or not at all, and the next command never finishes
 * a change that was only half written down.
 */
struct record_batch {
	__u32 n, n_new, n_carry;
	__u32 ids[XLB_MAX_BACKENDS];
	struct xlb_backend recs[XLB_MAX_BACKENDS];
	__u32 new_ids[XLB_MAX_BACKENDS];	/* counters to reset */
	/* New records that take over an old one's health (carry_health()). */
	__u32 carry_from[XLB_MAX_BACKENDS], carry_to[XLB_MAX_BACKENDS];
	__u32 carry_gen[XLB_MAX_BACKENDS];
};

static struct record_batch batch;

/* Queue a record; the state sees it at once, so ids are not handed out
 * twice. */
static void batch_put(struct xlb_state *st, __u32 id,
		      const struct xlb_backend *b)
{
	batch.ids[batch.n] = id;
	batch.recs[batch.n++] = *b;
	st->backends[id] = *b;
}

/* The record keeps its gen, so the slot's next backend gets a new one. */
static void batch_free(struct xlb_state *st, __u32 id)
{
	struct xlb_backend b = { .gen = st->backends[id].gen };

	batch_put(st, id, &b);
}

/* A record's copy of its VIP's flags for the datapath. */
static __u8 be_mode_flags(__u32 vip_flags)
{
	return vip_flags & XLB_VIP_F_GUE ? XLB_BE_F_GUE : 0;
}

static int batch_alloc(struct xlb_state *st, __u32 vip_id, __u32 vip_flags,
		       const struct xlb_want *w)
{
	struct xlb_backend b = {
		.vip_id = vip_id,
		.weight = w->weight,
		.family = w->family,
		.flags = XLB_BE_F_IN_USE | be_mode_flags(vip_flags),
	};
	int id;

	id = xlb_state_alloc_backend_id(st);
	if (id < 0) {
		p_err("no free backend record (limit %d)", XLB_BACKEND_IDS);
		batch.n = batch.n_new = batch.n_carry = 0;
		return id;
	}
	memcpy(b.addr, w->addr, sizeof(b.addr));
	b.gen = st->backends[id].gen + 1;
	batch.new_ids[batch.n_new++] = id;
	batch_put(st, id, &b);
	return 0;
}

/*
 * The record just allocated replaces the live backend of old_vip with its
 * address (a VIP built anew for another table size): it keeps that
 * backend's health, so a backend found down stays out, and the checker
 * goes on from where it was.
 */
static void carry_health(struct xlb_state *st, __u32 old_vip)
{
	struct xlb_backend *b = &batch.recs[batch.n - 1];
	__u32 from, to = batch.ids[batch.n - 1];

	from = xlb_state_backend_find(st, old_vip, b->addr, b->family);
	if (!from)
		return;
	b->flags |= st->backends[from].flags & (XLB_BE_F_DOWN | XLB_BE_F_EVICT);
	st->backends[to] = *b;
	batch.carry_from[batch.n_carry] = from;
	batch.carry_to[batch.n_carry] = to;
	batch.carry_gen[batch.n_carry++] = b->gen;
}

static int batch_write(struct xlb_instance *inst)
{
	__u32 i;
	int err = 0;

	/* A new backend starts from zero, not from its slot's last user:
	 * reset before the record can be reached. */
	for (i = 0; i < batch.n_new && !err; i++)
		err = zero_counter(inst->backend_stats_fd, batch.new_ids[i]);
	if (err) {
		p_err("cannot reset backend counters in %s/%s: %s", inst->dir,
		      XLB_MAP_BACKEND_STATS, strerror(-err));
		goto out;
	}
	/* Its health settings and state too, or those carried over. */
	err = xlb_hc_reset_backends(inst, batch.new_ids, batch.n_new);
	for (i = 0; i < batch.n_carry && !err; i++)
		err = xlb_hc_copy_backend(inst, batch.carry_from[i],
					  batch.carry_to[i], batch.carry_gen[i]);
	if (err)
		goto out;
	if (batch.n)
		err = map_update_batch(inst->backends_fd, batch.ids,
				       batch.recs, batch.n);
	/* Their next hops are seen to when the command closes. */
	backends_written |= batch.n && !made.rehearsal;
	for (i = 0; i < batch.n_new && !made.rehearsal; i++)
		backends_added[batch.new_ids[i]] = true;
	if (err)
		p_err("cannot write %u backend records in %s/%s: %s", batch.n,
		      inst->dir, XLB_MAP_BACKENDS, strerror(-err));
out:
	batch.n = batch.n_new = batch.n_carry = 0;
	return err;
}

static int write_vip(struct xlb_instance *inst, const struct xlb_state_vip *v,
		     __u64 flags)
{
	char name[XLB_VIP_STRLEN];
	int err = map_update(inst->vips_fd, &v->key, &v->vip, flags);

	if (err)
		p_err("cannot write VIP %s in %s/%s: %s",
		      xlb_vip_str(&v->key, name, sizeof(name)), inst->dir,
		      XLB_MAP_VIPS, strerror(-err));
	return err;
}

/*
 * What the table of vip_id is computed from: its size and its live records
 * (ids, addresses, weights, DOWN flags). The change finds the tables its
 * rehearsal made by it, so that it installs none computed from other
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

/* The history xlb apply gives the next table of a stateless VIP, in
 * place of the one the change makes (xlb_vip_converge_mode()). */
static const struct xlb_history *given_history;

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

	if (given_history)
		return xlb_table_create_hist(slots, given_history, m);
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

/* In a rehearsal: compute the table, and make its map for the change. */
static int make_table(const struct xlb_instance *inst,
		      const struct xlb_state *st, const char *name,
		      __u32 vip_id, __u32 flags, __u32 m)
{
	struct made_table *t;
	double t0 = xlb_now_us();
	__u32 *slots;
	int fd, err;

	/* One buffer, grown to the largest table: what the rehearsal holds
	 * grows only by the maps, each of which can fail cleanly. */
	if (made.slots_cap < m) {
		slots = realloc(made.slots, (size_t)m * sizeof(*slots));
		if (!slots)
			goto nomem;
		made.slots = slots;
		made.slots_cap = m;
	}
	if (made.n == made.cap) {
		t = realloc(made.t, (made.cap ? made.cap * 2 : 16) * sizeof(*t));
		if (!t)
			goto nomem;
		made.t = t;
		made.cap = made.cap ? made.cap * 2 : 16;
	}
	err = xlb_state_table_build(st, vip_id, m, made.slots);
	if (err == -ENOMEM)
		goto nomem;
	if (err) {
		p_err("cannot compute the table of %s: %s", name, strerror(-err));
		return err;
	}
	fd = table_create(inst, st, name, vip_id, flags, made.slots, m);
	if (fd == -ENOMEM)
		goto nomem;
	if (fd == -E2BIG)
		return fd;
	if (fd < 0) {
		p_err("cannot make the table of %s (%u slots) after %zu of this change: %s; nothing was changed",
		      name, m, made.n, strerror(-fd));
		return fd;
	}
	made.t[made.n++] = (struct made_table){
		.fd = fd,
		.vip_id = vip_id,
		.m = m,
		.records = records_hash(st, vip_id, m),
		.build_us = xlb_now_us() - t0,
	};
	return 0;
nomem:
	p_err("out of memory for the table of %s (%u slots) after %zu of this change; nothing was changed",
	      name, m, made.n);
	return -ENOMEM;
}

/* The table the rehearsal made for this install, when the change is
 * where the rehearsal was (it always is: the same steps on the same
 * state); NULL otherwise, and the table is computed again. */
static struct made_table *made_for(const struct xlb_state *st, __u32 vip_id,
				   __u32 m)
{
	struct made_table *t;

	if (made.next >= made.n)
		return NULL;
	t = &made.t[made.next];
	if (t->vip_id != vip_id || t->m != m ||
	    t->records != records_hash(st, vip_id, m))
		return NULL;
	made.next++;
	return t;
}

/* Compute the table the records of vip_id ask for (or take the one made
 * for it) and swap it in. */
static int install_table(struct xlb_instance *inst, struct xlb_state *st,
			 const struct xlb_vip_key *key, __u32 vip_id, __u32 m,
			 __u32 flags)
{
	struct xlb_table_timing *t = &xlb_last_table_timing;
	char name[XLB_VIP_STRLEN];
	double t0, t1, t2, live, build_us;
	struct made_table *mt;
	__u32 *slots = NULL;
	int err, fd = -1;

	xlb_vip_str(key, name, sizeof(name));
	if (made.rehearsal)
		return make_table(inst, st, name, vip_id, flags, m);
	mt = made_for(st, vip_id, m);
	if (mt) {
		t0 = t1 = xlb_now_us();
		build_us = mt->build_us;
		xlb_table_install_next(mt->fd, vip_id, m);
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
			xlb_table_install_next(fd, vip_id, m);
		}
	}
	err = xlb_map_install_table(inst->tables_fd, vip_id, slots, m,
				    inst->verbose || xlb_time_tables ?
				    &live : NULL);
	t2 = xlb_now_us();
	if (fd >= 0) {
		xlb_table_install_next(-1, 0, 0);
		close(fd);
	}
	if (mt) {
		xlb_table_install_next(-1, 0, 0);
		close(mt->fd);
		mt->fd = -1;
	}
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
	if (!inst->verbose && !xlb_time_tables)
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

/* Free the records of vip_id: all of them, or those marked REMOVED. */
static int free_backends_of(struct xlb_instance *inst, struct xlb_state *st,
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
		batch_free(st, i);
	}
	return batch_write(inst);
}

/* The end of a change of a DIRTY VIP's records: the table they ask for,
 * then the REMOVED ones freed, then the VIP clean again. */
static int vip_commit(struct xlb_instance *inst, struct xlb_state *st,
		      struct xlb_state_vip *v)
{
	int err;

	err = install_table(inst, st, &v->key, v->vip.id, v->vip.table_size,
			    v->vip.flags);
	if (!err)
		err = free_backends_of(inst, st, v->vip.id, true);
	if (err)
		return err;
	v->vip.flags &= ~XLB_VIP_F_DIRTY;
	return write_vip(inst, v, BPF_EXIST);
}

/* Roll a VIP left DIRTY forward: its records are what was wanted. */
static int finish_vip(struct xlb_instance *inst, struct xlb_state *st,
		      struct xlb_state_vip *v)
{
	char name[XLB_VIP_STRLEN];

	p_info("xlb: %s: finishing a change that was interrupted",
	       xlb_vip_str(&v->key, name, sizeof(name)));
	return vip_commit(inst, st, v);
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
		batch_free(st, i);
	}
	err = batch_write(inst);
	if (err)
		return err;
	for (i = 0; i < XLB_MAX_VIPS; i++) {
		if (held[i] || bpf_map_lookup_elem(inst->tables_fd, &i, &inner_id))
			continue;
		err = xlb_map_delete(inst->tables_fd, &i);
		if (err && err != -ENOENT) {
			p_err("cannot delete table %u in %s/%s: %s", i,
			      inst->dir, XLB_MAP_TABLES, strerror(-err));
			return err;
		}
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
	int err;

	if (v->corrupt[0] || !(v->vip.flags & XLB_VIP_F_STATELESS))
		return 0;
	if (xlb_table_read_hist(inst->tables_fd, v->vip.id, &slots, &m, &h))
		return 0;
	stale = m == v->vip.table_size &&
		xlb_history_stale(st, v->vip.id, &h, slots, xlb_history_now(),
				  xlb_history_keep(&st->config));
	free(slots);
	xlb_history_free(&h);
	if (!stale)
		return 0;
	err = install_table(inst, st, &v->key, v->vip.id, v->vip.table_size,
			    v->vip.flags);
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
	for (i = 0; i < st->n_vips; i++) {
		if (st->vips[i].corrupt[0]) {
			xlb_state_vip_corrupt_note(&st->vips[i]);
			continue;
		}
		if (!(st->vips[i].vip.flags & XLB_VIP_F_DIRTY))
			continue;
		err = finish_vip(inst, st, &st->vips[i]);
		if (err)
			goto fail;
	}
	err = free_leftovers(inst, st);
	if (err)
		goto fail;
	for (i = 0; i < st->n_vips; i++) {
		err = history_expire(inst, st, &st->vips[i]);
		if (err)
			goto fail;
	}
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
	if (st && backends_written)
		xlb_neigh_sync(inst, st, backends_added);
	backends_written = false;
	memset(backends_added, 0, sizeof(backends_added));
	xlb_state_free(st);
	xlb_instance_close(inst);
}

size_t xlb_vip_wants(const struct xlb_state *st, __u32 vip_id,
		     struct xlb_want *want)
{
	static __u32 ids[XLB_MAX_BACKENDS];
	const struct xlb_backend *b;
	size_t n, i;

	n = xlb_state_vip_backends(st, vip_id, ids);
	for (i = 0; i < n; i++) {
		b = &st->backends[ids[i]];
		memcpy(want[i].addr, b->addr, sizeof(want[i].addr));
		want[i].family = b->family;
		want[i].weight = b->weight;
	}
	return n;
}

static bool want_has(const struct xlb_want *want, size_t n,
		     const struct xlb_backend *b, __u32 *weight)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (want[i].family == b->family &&
		    !memcmp(want[i].addr, b->addr, sizeof(b->addr))) {
			*weight = want[i].weight;
			return true;
		}
	}
	return false;
}

void xlb_vip_diff(const struct xlb_state *st, const struct xlb_vip_key *key,
		  __u32 m, const struct xlb_want *want, size_t n,
		  struct xlb_vip_diff *d)
{
	static __u32 ids[XLB_MAX_BACKENDS];
	const struct xlb_state_vip *v;
	__u32 weight;
	size_t i, k;

	memset(d, 0, sizeof(*d));
	v = xlb_state_vip_find((struct xlb_state *)st, key);
	d->rebuild = true;
	d->adds = n;
	if (!v)
		return;
	d->exists = true;
	k = xlb_state_vip_backends(st, v->vip.id, ids);
	d->old_backends = k;
	for (i = 0; i < k; i++) {
		const struct xlb_backend *b = &st->backends[ids[i]];

		if (!want_has(want, n, b, &weight))
			d->dropped++;
		else if (weight != b->weight)
			d->reweights++;
	}
	if (v->vip.table_size != m) {
		d->removes = k;
		d->reweights = 0;
		return;
	}
	d->rebuild = false;
	d->removes = d->dropped;
	d->adds = n - (k - d->removes);
}

static int want_cmp(const void *a, const void *b)
{
	const struct xlb_want *x = a, *y = b;

	if (x->family != y->family)
		return x->family - y->family;
	return memcmp(x->addr, y->addr, sizeof(x->addr));
}

int xlb_vip_check(const struct xlb_state *st, const struct xlb_vip_key *key,
		  __u32 m, const struct xlb_want *want, size_t n,
		  size_t vips_free, size_t ids_free, const char *what)
{
	char a[XLB_ADDR_STRLEN];
	struct xlb_vip_diff d;
	struct xlb_want *sorted;
	const char *why;
	size_t i;

	if (xlb_table_size_check(m, &why)) {
		p_err("%s: %s", what, why);
		return -EINVAL;
	}
	for (i = 0; i < n; i++) {
		if (want[i].weight > XLB_MAX_WEIGHT) {
			p_err("%s: weight %u too large (0-%d)", what,
			      want[i].weight, XLB_MAX_WEIGHT);
			return -EINVAL;
		}
	}
	sorted = malloc((n ? n : 1) * sizeof(*sorted));
	if (!sorted) {
		p_err("out of memory");
		return -ENOMEM;
	}
	if (n)
		memcpy(sorted, want, n * sizeof(*sorted));
	qsort(sorted, n, sizeof(*sorted), want_cmp);
	for (i = 1; i < n; i++) {
		if (!want_cmp(&sorted[i - 1], &sorted[i])) {
			p_err("%s: duplicate backend %s", what,
			      xlb_addr_str(sorted[i].addr, sorted[i].family,
					   a, sizeof(a)));
			free(sorted);
			return -EINVAL;
		}
	}
	free(sorted);
	if (n > m) {
		p_err("%s: %zu backends do not fit a table of %u slots (at most one backend per slot)",
		      what, n, m);
		return -EINVAL;
	}
	xlb_vip_diff(st, key, m, want, n, &d);
	if (d.rebuild && !vips_free) {
		p_err(d.exists ?
		      "%s: changing the table size needs a spare VIP id, and all %d are in use" :
		      "%s: too many VIPs (limit %d)", what, XLB_MAX_VIPS);
		return -EINVAL;
	}
	/* The records of the backends it drops can be freed first
	 * (xlb_vip_converge_mode() does when it must); those it keeps are
	 * held until its new records are written. */
	if (d.adds > ids_free + d.dropped) {
		p_err("%s: too many backends: %zu more needed, %zu free (limit %d over all VIPs)",
		      what, d.adds - d.dropped, ids_free, XLB_BACKEND_IDS);
		return -EINVAL;
	}
	return 0;
}

/* A VIP from scratch under a new id; the key is inserted, or switched
 * from the old id, last. */
static int vip_build(struct xlb_instance *inst, struct xlb_state *st,
		     const struct xlb_vip_key *key, __u32 m, __u32 mode,
		     const struct xlb_want *want, size_t n)
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
	nv.vip.flags = mode;
	err = zero_counter(inst->vip_stats_fd, id);
	if (err) {
		p_err("cannot reset counters of VIP id %d: %s", id,
		      strerror(-err));
		return err;
	}
	/* Health settings: those of the VIP it replaces, or none. */
	err = old ? xlb_hc_copy_vip(inst, old->vip.id, id) :
		    xlb_hc_reset_vip(inst, id);
	if (err)
		return err;
	for (i = 0; i < n; i++) {
		err = batch_alloc(st, id, mode, &want[i]);
		if (err)
			return err;
		if (old)
			carry_health(st, old->vip.id);
	}
	err = batch_write(inst);
	if (!err)
		err = install_table(inst, st, key, id, m, mode);
	if (err)
		return err;

	if (!old) {
		err = filter_sync(inst, st, key, mode) ?:
		      write_vip(inst, &nv, BPF_NOEXIST);
		if (!err)
			err = xlb_state_vip_insert(st, &nv);
		return err ?: addrs_sync(inst, st, NULL);
	}
	old_id = old->vip.id;
	old_flags = old->vip.flags;
	/* Made stateless: its filter bit says so before its key does. */
	if (mode & ~old_flags & XLB_VIP_F_STATELESS) {
		err = filter_sync(inst, st, key, mode);
		if (err)
			return err;
	}
	err = write_vip(inst, &nv, BPF_EXIST);
	if (err)
		return err;
	old->vip = nv.vip;
	if (old_flags & ~mode & XLB_VIP_F_STATELESS) {
		err = filter_sync(inst, st, NULL, 0);
		if (err)
			return err;
	}
	err = map_delete(inst->tables_fd, &old_id);
	if (err && err != -ENOENT) {
		p_err("cannot delete table %u in %s/%s: %s", old_id, inst->dir,
		      XLB_MAP_TABLES, strerror(-err));
		return err;
	}
	return free_backends_of(inst, st, old_id, false);
}

/* Same table size: write only the records that change, then the table.
 * A new mode (the VIP's flags first, then its records') leaves the
 * datapath with a mix of the old and new encapsulation for a moment,
 * which the backends take both. */
static int vip_modify(struct xlb_instance *inst, struct xlb_state *st,
		      struct xlb_state_vip *v, __u32 mode,
		      const struct xlb_want *want, size_t n)
{
	static __u32 ids[XLB_MAX_BACKENDS];
	__u8 be_mode = be_mode_flags(mode);
	struct xlb_backend b;
	__u32 weight, id;
	size_t i, k;
	int err;

	v->vip.flags = (v->vip.flags & ~XLB_VIP_F_MODE) | mode | XLB_VIP_F_DIRTY;
	err = write_vip(inst, v, BPF_EXIST);
	if (err)
		return err;

	/* New records, new weights and REMOVED marks: one batch. */
	k = xlb_state_vip_backends(st, v->vip.id, ids);
	for (i = 0; i < n; i++) {
		id = xlb_state_backend_find(st, v->vip.id, want[i].addr,
					    want[i].family);
		if (!id) {
			err = batch_alloc(st, v->vip.id, mode, &want[i]);
			if (err)
				return err;
		} else if (st->backends[id].weight != want[i].weight ||
			   (st->backends[id].flags & XLB_BE_F_GUE) != be_mode) {
			b = st->backends[id];
			b.weight = want[i].weight;
			b.flags = (b.flags & ~XLB_BE_F_GUE) | be_mode;
			batch_put(st, id, &b);
		}
	}
	for (i = 0; i < k; i++) {
		b = st->backends[ids[i]];
		if (want_has(want, n, &b, &weight))
			continue;
		b.flags |= XLB_BE_F_REMOVED;
		batch_put(st, ids[i], &b);
	}
	err = batch_write(inst);
	if (err)
		return err;
	return vip_commit(inst, st, v);
}

int xlb_backends_set_health(struct xlb_instance *inst, struct xlb_state *st,
			    const struct xlb_health_change *ch, size_t n)
{
	struct xlb_state_vip *v;
	struct xlb_backend b;
	bool *dirty = NULL;
	size_t i;
	__u32 id;
	int err;

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
		err = write_vip(inst, v, BPF_EXIST);
		dirty[b.vip_id] = !err;
	}
	/* The records, one batch (EVICT alone changes no table). */
	for (i = 0; i < n && !err; i++) {
		b = st->backends[ch[i].id];
		b.flags &= ~(XLB_BE_F_DOWN | XLB_BE_F_EVICT);
		b.flags |= (ch[i].down ? XLB_BE_F_DOWN : 0) |
			   (ch[i].evict ? XLB_BE_F_EVICT : 0);
		if (b.flags != st->backends[ch[i].id].flags)
			batch_put(st, ch[i].id, &b);
	}
	err = err ?: batch_write(inst);
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

int xlb_backend_set_health(struct xlb_instance *inst, struct xlb_state *st,
			   __u32 id, bool down, bool evict)
{
	struct xlb_health_change ch = { .id = id, .down = down, .evict = evict };

	return xlb_backends_set_health(inst, st, &ch, 1);
}

bool xlb_update_rehearsal(void)
{
	return made.rehearsal;
}

int xlb_config_write(struct xlb_instance *inst, struct xlb_state *st,
		     const struct xlb_config *cfg)
{
	__u32 zero = 0;
	int err;

	if (!memcmp(cfg, &st->config, sizeof(*cfg)) && !st->seeds_pending)
		return 0;
	if (st->filter_pending) {
		err = filter_sync(inst, st, NULL, 0);
		if (err)
			return err;
		st->filter_pending = false;
	}
	err = map_update(inst->config_fd, &zero, cfg, 0);
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
		err = filter_sync(inst, st, NULL, 0);
		if (err)
			return err;
		st->filter_pending = false;
	}
	return st->seeds_pending ? xlb_config_write(inst, st, &cfg) : 0;
}

/* Is h the live table's history of v? */
static bool history_is(const struct xlb_instance *inst,
		       const struct xlb_state_vip *v, const struct xlb_history *h)
{
	struct xlb_history live;
	__u32 *slots, m;
	bool same;

	if (xlb_table_read_hist(inst->tables_fd, v->vip.id, &slots, &m, &live))
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
 * carry it over (carry_health()).
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
	if (!made.rehearsal)
		p_info("xlb: %s: the records of the backends it removes are freed first, to make room for those it adds: for a moment it has only the %zu it keeps",
		       xlb_vip_str(&v->key, name, sizeof(name)), nk);
	err = vip_modify(inst, st, v, v->vip.flags & XLB_VIP_F_MODE, kept, nk);
	free(kept);
	return err;
}

int xlb_vip_converge_mode(struct xlb_instance *inst, struct xlb_state *st,
			  const struct xlb_vip_key *key, __u32 m, __u32 mode,
			  const struct xlb_history *hist,
			  const struct xlb_want *want, size_t n)
{
	struct xlb_state_vip *v;
	struct xlb_vip_diff d;
	bool same;
	int err;

	if (mode & ~XLB_VIP_F_MODE ||
	    (mode & XLB_VIP_F_STATELESS && !(mode & XLB_VIP_F_GUE)) ||
	    (hist && hist->m != m))
		return -EINVAL;
	if (!(mode & XLB_VIP_F_STATELESS))
		hist = NULL;
	v = xlb_state_vip_find(st, key);
	if (v && v->corrupt[0]) {
		/* Made anew, with an id of its own: nothing of the corrupt
		 * record can be trusted. */
		err = xlb_vip_remove(inst, st, key);
		given_history = hist;
		err = err ?: vip_build(inst, st, key, m, mode, want, n);
		given_history = NULL;
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
	if (same && (!hist || history_is(inst, v, hist)))
		return 0;
	/* Room for the next hops of the backends it adds, before its first
	 * write; a change of several steps is checked whole. */
	err = made.rehearsal || made.whole ? 0 :
	      xlb_neigh_check(inst, st, NULL, want, n);
	err = err ?: xlb_update_pending(inst, st);
	if (err)
		return err;
	if (v && d.adds > xlb_backend_ids_free(st)) {
		err = free_replaced_first(inst, st, v, d.rebuild, want, n);
		if (err)
			return err;
		v = xlb_state_vip_find(st, key);
	}
	given_history = hist;
	if (d.rebuild)
		err = vip_build(inst, st, key, m, mode, want, n);
	else
		err = vip_modify(inst, st, xlb_state_vip_find(st, key), mode,
				 want, n);
	given_history = NULL;
	return err;
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

int xlb_vip_remove(struct xlb_instance *inst, struct xlb_state *st,
		   const struct xlb_vip_key *key)
{
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
	err = addrs_sync(inst, st, key);
	if (err)
		return err;
	err = map_delete(inst->vips_fd, key);
	if (err) {
		p_err("cannot delete VIP %s from %s/%s: %s", name, inst->dir,
		      XLB_MAP_VIPS, strerror(-err));
		return err;
	}
	xlb_state_vip_erase(st, key);
	err = filter_sync(inst, st, NULL, 0);
	/* A corrupt record's id may be out of range or another VIP's: the
	 * key alone was its own. Records of an id no VIP holds are freed as
	 * leftovers by the next change. */
	if (err || corrupt)
		return err;
	err = map_delete(inst->tables_fd, &id);
	if (err && err != -ENOENT) {
		p_err("cannot delete table %u in %s/%s: %s", id, inst->dir,
		      XLB_MAP_TABLES, strerror(-err));
		return err;
	}
	return free_backends_of(inst, st, id, false);
}

/*
 * The rehearsal holds a descriptor for each table it makes, up to one per
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

int xlb_update_all_or_nothing(struct xlb_instance *inst, struct xlb_state *st,
			      xlb_change_fn change, void *arg)
{
	struct xlb_state *copy;
	size_t i;
	int err;

	room_for_tables();
	copy = malloc(sizeof(*copy));
	if (!copy) {
		p_err("out of memory");
		return -ENOMEM;
	}
	memcpy(copy, st, sizeof(*copy));
	made.rehearsal = true;
	err = change(inst, copy, arg);
	made.rehearsal = false;
	batch.n = batch.n_new = batch.n_carry = 0;
	/* The host's neighbour tables have room for the next hops of the
	 * backends the rehearsal left. */
	if (!err)
		err = xlb_neigh_check(inst, st, copy, NULL, 0);
	made.whole = true;
	free(copy);
	free(made.slots);
	made.slots = NULL;
	made.slots_cap = 0;
	if (!err)
		err = change(inst, st, arg);
	/* Those not installed (the change failed or did not reach them)
	 * go with their last reference. */
	for (i = 0; i < made.n; i++)
		if (made.t[i].fd >= 0)
			close(made.t[i].fd);
	free(made.t);
	memset(&made, 0, sizeof(made));
	return err;
}

size_t xlb_vips_free(const struct xlb_state *st)
{
	return XLB_MAX_VIPS - st->n_vips;
}

size_t xlb_backend_ids_free(const struct xlb_state *st)
{
	return XLB_BACKEND_IDS - xlb_state_backends_in_use(st);
}

void xlb_note_sources(const struct xlb_state *st, const struct xlb_want *want,
		      size_t n)
{
	static const __be32 none[4];
	static bool said4, said6;	/* once per command */
	bool need4 = false, need6 = false;
	size_t i;

	for (i = 0; i < n; i++) {
		need4 |= want[i].family == XLB_AF_INET && !said4;
		need6 |= want[i].family == XLB_AF_INET6 && !said6;
	}
	said4 |= need4;
	said6 |= need6;
	if (need4 && !st->config.src4)
		p_info("xlb: note: src4 is not set, so packets to IPv4 backends are dropped (drop_no_source): xlb config set src4 ADDR");
	if (need6 && !memcmp(st->config.src6, none, sizeof(none)))
		p_info("xlb: note: src6 is not set, so packets to IPv6 backends are dropped (drop_no_source): xlb config set src6 ADDR");
}
