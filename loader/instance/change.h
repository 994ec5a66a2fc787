/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Inside a change (update.h): the state it carries from xlb_update_begin()
 * to xlb_update_close(), and the writes a plan leaves out. Private to the
 * files of loader/instance that make a change: wants.c (what is asked
 * for, checked), update.c (the VIPs' steps), plan.c (a plan and its
 * commit), records.c (backend records, VIP keys), tables.c (the tables)
 * and vip_sets.c (the VIP filter, the address set, the settings: what a
 * command's first write brings up to date).
 */
#ifndef XLB_CHANGE_H
#define XLB_CHANGE_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include "instance.h"
#include "report.h"
#include "state.h"
#include "update.h"
#include "xlb.h"

struct xlb_history;

/* A table made by the plan of a change (xlb_update_plan()). */
struct made_table {
	int fd;			/* -1 once installed */
	__u32 vip_id, m;
	__u64 records;		/* records_hash() it was computed from */
	double build_us;
};

/* A change planned (xlb_update_plan()): its steps, and what the plan made
 * for their commit. */
struct xlb_plan {
	struct xlb_state *st;	/* the state it was planned on */
	xlb_change_fn change;
	void *arg;
	bool whole;		/* checked whole (xlb_neigh_check()) first */
	struct made_table *t;
	size_t n, cap;
	size_t next;		/* the next to install, in the commit */
	__u32 *slots;		/* one buffer for every table computed */
	__u32 slots_cap;
};

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
	/* New records that take over an old one's health
	 * (xlb_batch_carry_health()). */
	__u32 carry_from[XLB_MAX_BACKENDS], carry_to[XLB_MAX_BACKENDS];
	__u32 carry_gen[XLB_MAX_BACKENDS];
};

/*
 * The change in progress on one opened instance, from xlb_update_begin()
 * to xlb_update_close(): what it has written, for the close's hook, and
 * the plan it commits. A plan (st->planning, a copy of the state) shares
 * its commit's.
 */
struct xlb_change {
	/* Backend records were written, and which of them are new backends
	 * (their next hops are named if unresolved). */
	bool backends_written;
	bool backends_added[XLB_MAX_BACKENDS];
	bool said4, said6;	/* the notes of xlb_note_sources() */
	struct xlb_plan *plan;	/* NULL: tables computed as installed */
	/* The history xlb apply gives the next table of a stateless VIP, in
	 * place of the one the change makes (xlb_vip_converge_mode()). */
	const struct xlb_history *given_history;
	struct record_batch batch;	/* the records of one step */
};

/* The change st belongs to; p_err() when st was not opened for one. */
static inline struct xlb_change *change_of(const struct xlb_state *st)
{
	if (!st->change)
		p_err("a change needs a state from xlb_update_begin()");
	return st->change;
}

/*
 * The writes of a change, left out in its plan. Every map write made
 * from a change goes through these (tables through
 * xlb_vip_table_install()): one that did not would be made by the plan,
 * before the change has all it needs (tests/test_apply_strict.sh would
 * see the maps change).
 */
static inline int map_update(const struct xlb_state *st, int fd,
			     const void *key, const void *value, __u64 flags)
{
	return st->planning ? 0 : xlb_map_update(fd, key, value, flags);
}

static inline int map_update_batch(const struct xlb_state *st, int fd,
				   const void *keys, const void *values, __u32 n)
{
	return st->planning ? 0 : xlb_map_update_batch(fd, keys, values, n);
}

static inline int map_delete(const struct xlb_state *st, int fd, const void *key)
{
	return st->planning ? 0 : xlb_map_delete(fd, key);
}

/* records.c: a record's copy of its VIP's flags for the datapath. */
__u8 xlb_be_mode_flags(__u32 vip_flags);
/* Queue a record in st's batch; the state sees it at once, so ids are not
 * handed out twice. _free keeps its gen, so the slot's next backend gets
 * a new one; _alloc takes a free id for a backend of vip_id (-errno after
 * p_err() when none is left, the batch dropped). */
void xlb_batch_put(struct xlb_state *st, __u32 id, const struct xlb_backend *b);
void xlb_batch_free(struct xlb_state *st, __u32 id);
struct xlb_want;
int xlb_batch_alloc(struct xlb_state *st, __u32 vip_id, __u32 vip_flags,
		    const struct xlb_want *w);
/* The record just allocated replaces old_vip's live backend of the same
 * address (a VIP built anew): it keeps that backend's health. */
void xlb_batch_carry_health(struct xlb_state *st, __u32 old_vip);
/* Write the batch: the new records' counters and health first, then
 * every record in one syscall. 0 or -errno after p_err(). */
int xlb_batch_write(struct xlb_instance *inst, struct xlb_state *st);
/* Free vip_id's records, all or those marked REMOVED (one batch). */
int xlb_backends_free_of(struct xlb_instance *inst, struct xlb_state *st,
			 __u32 vip_id, bool removed_only);
/* A per-CPU counter made zero on every CPU. */
int xlb_counter_zero(const struct xlb_state *st, int fd, __u32 id);
/* Write v's key and value with flags (BPF_EXIST, BPF_NOEXIST). */
int xlb_vip_write(struct xlb_instance *inst, const struct xlb_state *st,
		  const struct xlb_state_vip *v, __u64 flags);

/* tables.c: compute the table the records of vip_id ask for (in a plan:
 * and make it, held for the commit; in a commit: take the one the plan
 * made for it) and swap it in. 0 or -errno after p_err(). */
int xlb_vip_table_install(struct xlb_instance *inst, struct xlb_state *st,
			  const struct xlb_vip_key *key, __u32 vip_id, __u32 m,
			  __u32 flags);

/* wants.c: whether want[0..n) holds b's address, and its weight there. */
bool xlb_want_has(const struct xlb_want *want, size_t n,
		  const struct xlb_backend *b, __u32 *weight);

/*
 * Make the VIP filter that of st's VIPs and of extra (a VIP about to be
 * inserted, with its flags; NULL: none), and the address set that of st's
 * VIPs but skip (a VIP about to be deleted; NULL: none). vip_sets.c says
 * in which order around a key's write. Return 0 or -errno after p_err().
 */
int xlb_vip_filter_sync(struct xlb_instance *inst, const struct xlb_state *st,
			const struct xlb_vip_key *extra, __u32 extra_flags);
int xlb_vip_addrs_sync(struct xlb_instance *inst, const struct xlb_state *st,
		       const struct xlb_vip_key *skip);

#endif /* XLB_CHANGE_H */
