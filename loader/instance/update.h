/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Changing an instance, in an order that survives a kill at any point.
 *
 * The maps cannot change together, so every change is a sequence of writes
 * ordered so that the datapath always works on a whole old or whole new
 * table, and the next xlb command can tell what was being done:
 *
 *  - a new VIP: its stats zeroed, its backend records written, its table
 *    installed, and only then its key inserted (the commit). Until then
 *    the records and table belong to an id no VIP holds: ignored, and freed
 *    by the next change.
 *  - a VIP removed: its key deleted first (the commit), then its table and
 *    records, which are leftovers of nobody from then on.
 *  - backends of a VIP changed: the VIP is flagged DIRTY, the records are
 *    written (new ones, weights, REMOVED marks), the table computed from
 *    the records is installed in one swap, REMOVED records are freed, and
 *    DIRTY is cleared. The records are the intent: a command that finds a
 *    DIRTY VIP rebuilds its table from them and finishes the change.
 *  - a VIP's table size changed: the VIP is built again under a new id and
 *    the key's value switched to it in one update (the commit).
 *
 * At no point does a table name a backend record that is not IN_USE.
 */
#ifndef XLB_UPDATE_H
#define XLB_UPDATE_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include "instance.h"
#include "state.h"

/* A backend as a command or a file wants it. */
struct xlb_want {
	__be32 addr[4];
	__u8 family;
	__u32 weight;
};

/* How a VIP's wanted shape differs from its current one. */
struct xlb_vip_diff {
	bool exists;		/* the VIP is there */
	bool rebuild;		/* new, or its table size changes */
	size_t adds;		/* records to allocate */
	size_t reweights;
	size_t removes;
	size_t old_backends;	/* live records now */
	size_t dropped;		/* of those, the ones the change removes
				 * (removes, but for a rebuild, which
				 * replaces every record) */
};


/*
 * Start a change on an instance opened with XLB_LOCK_WRITE: read its state,
 * finish whatever an interrupted command left (DIRTY VIPs, leftover records
 * and tables), and give a new instance a random seed unless the caller
 * sets one itself (seed_given). Returns 0 or -errno after p_err().
 */
int xlb_update_begin(struct xlb_instance *inst, struct xlb_state **st,
		     bool seed_given);

/* xlb_instance_open(XLB_LOCK_WRITE), then xlb_update_begin(). */
int xlb_update_open(struct xlb_instance *inst,
		    const struct xlb_instance_opts *opts, struct xlb_state **st,
		    bool seed_given);
void xlb_update_close(struct xlb_instance *inst, struct xlb_state *st);

/* The live backends of vip_id as wants (want[] holds XLB_MAX_BACKENDS);
 * returns how many. */
size_t xlb_vip_wants(const struct xlb_state *st, __u32 vip_id,
		     struct xlb_want *want);

/* Compare a VIP's wanted shape (table size m, backends want[n]) with the
 * state. Pure. */
void xlb_vip_diff(const struct xlb_state *st, const struct xlb_vip_key *key,
		  __u32 m, const struct xlb_want *want, size_t n,
		  struct xlb_vip_diff *d);

/*
 * Check a wanted VIP before any write: weights, duplicates, table size,
 * backends per table, and room for it in the maps given vips_free VIP ids
 * and ids_free backend ids. `what` prefixes the error (e.g. the file key).
 * Returns 0 or -EINVAL after p_err().
 */
int xlb_vip_check(const struct xlb_state *st, const struct xlb_vip_key *key,
		  __u32 m, const struct xlb_want *want, size_t n,
		  size_t vips_free, size_t ids_free, const char *what);

/* Make the VIP what is wanted, writing only what differs (nothing when
 * nothing does); it keeps its mode (a new VIP: tracked, IPIP). Call
 * xlb_vip_check() first. Returns 0 or -errno after p_err(). */
int xlb_vip_converge(struct xlb_instance *inst, struct xlb_state *st,
		     const struct xlb_vip_key *key, __u32 m,
		     const struct xlb_want *want, size_t n);
/*
 * The same, with its mode (XLB_VIP_F_MODE flags; STATELESS needs GUE) made
 * mode too, and for a stateless VIP its history made hist (sorted,
 * xlb_history_sort(), of m slots) where given (NULL: carried over the
 * change, history.h). -EINVAL without a message for a bad mode or hist.
 * A VIP keeps its source ranges (src_ranges.h); a new one that is to
 * have them is born closed, with XLB_VIP_F_SRC_LIST | XLB_VIP_F_SRC_DENY
 * in mode (every client denied until xlb_vip_src_set() writes its lists
 * and opens it), which is ignored for a VIP that exists.
 */
struct xlb_history;
int xlb_vip_converge_mode(struct xlb_instance *inst, struct xlb_state *st,
			  const struct xlb_vip_key *key, __u32 m, __u32 mode,
			  const struct xlb_history *hist,
			  const struct xlb_want *want, size_t n);

/* Remove a VIP, its table and its backends. */
int xlb_vip_remove(struct xlb_instance *inst, struct xlb_state *st,
		   const struct xlb_vip_key *key);

/*
 * Every change is planned, then committed. The plan runs change() once,
 * on a copy of the state (st->planning): each step computes what it
 * changes and makes every check that can fail, each table it installs is
 * computed and made as an inner map (xlb_table_create()), and each write
 * is recorded, with its bytes, in the plan (change.h); nothing of the
 * instance changes. Then, only if the plan succeeded, the commit performs
 * the recorded writes in their order (the kill-safe order above), and st
 * becomes the state the plan left. A plan that fails leaves st and the
 * instance as they were, ready for another change. Running out of
 * memory, of file descriptors, of VIP or backend ids, of room for the
 * backends' neighbour entries thus stops the change before it has
 * written anything. The price: the old tables and all the new ones are in
 * memory together, where one step at a time frees each old table after
 * its swap.
 * The steps of this header (xlb_config_write, xlb_vip_remove,
 * xlb_vip_converge*, xlb_backend*_set_health, xlb_update_pending) are
 * so alone, each a change of its own; within change() they are steps of
 * its plan. change() must print nothing but errors (a note for the
 * commit to print goes in the plan). What can still fail midway is a map
 * write refused for another reason, or a kill: st is read again from the
 * maps, the next command repairs as after any interrupted change (a
 * DIRTY VIP is finished, leftovers freed), and the same change again
 * converges the rest.
 * Returns 0 or -errno after p_err().
 */
typedef int (*xlb_change_fn)(struct xlb_instance *inst, struct xlb_state *st,
			     void *arg);
int xlb_update_all_or_nothing(struct xlb_instance *inst, struct xlb_state *st,
			      xlb_change_fn change, void *arg);

/*
 * The two halves of xlb_update_all_or_nothing(), for a caller that wants
 * the plan as a value: xlb_update_plan() runs change() as the plan and
 * gives *plan (NULL on error, when nothing was written and st is as it
 * was: another change, or the same one again, may follow);
 * xlb_update_commit() performs its writes on st, the state it was planned
 * on, unchanged since, once; xlb_plan_free() releases the tables it made,
 * committed or not (a plan never committed is a dry run). Return 0 or
 * -errno after p_err().
 */
struct xlb_plan;
int xlb_update_plan(struct xlb_instance *inst, struct xlb_state *st,
		    xlb_change_fn change, void *arg, struct xlb_plan **plan);
int xlb_update_commit(struct xlb_instance *inst, struct xlb_state *st,
		      struct xlb_plan *plan);
void xlb_plan_free(struct xlb_plan *plan);

/*
 * What an opened instance may lack, written by a command's first write and
 * only if it makes one (a command that fails changes nothing): a stale VIP
 * filter, the seeds of a first use. xlb attach calls it itself, since it
 * changes the device whatever it writes. Returns 0 or -errno after p_err().
 */
int xlb_update_pending(struct xlb_instance *inst, struct xlb_state *st);

/*
 * The health checker's verdict on live backend id: set or clear
 * XLB_BE_F_DOWN and XLB_BE_F_EVICT in its record. A change of DOWN swaps
 * its VIP's table as any change of its backends does (DIRTY, record,
 * table, clean): kill-safe, and under XLB_LOCK_WRITE (after
 * xlb_update_begin()) never interleaved with a command. Nothing is
 * written when the flags are already so. The table leaves out DOWN
 * backends unless all of the VIP's are down (xlb_state_vip_fail_open()).
 * Returns 0 or -errno after p_err().
 */
int xlb_backend_set_health(struct xlb_instance *inst, struct xlb_state *st,
			   __u32 id, bool down, bool evict);

/* One verdict of the checker (xlb_backends_set_health()). */
struct xlb_health_change {
	__u32 id;		/* a live backend */
	bool down;		/* XLB_BE_F_DOWN */
	bool evict;		/* XLB_BE_F_EVICT */
};

/*
 * The verdicts of a round at once: as xlb_backend_set_health() for each,
 * but every VIP they change swaps its table once (all its DIRTY marks, then
 * every record in one batch, then each table), so that a mass outage of
 * thousands of backends costs a table per VIP, not one per backend. Nothing
 * is written when one of them names no live backend.
 */
int xlb_backends_set_health(struct xlb_instance *inst, struct xlb_state *st,
			    const struct xlb_health_change *ch, size_t n);

/* Write the settings (one update) when they differ from the state's. */
int xlb_config_write(struct xlb_instance *inst, struct xlb_state *st,
		     const struct xlb_config *cfg);

/* A note on stderr when backends of a family are wanted but the outer
 * source address of that family is not set. */
void xlb_note_sources(const struct xlb_state *st, const struct xlb_want *want,
		      size_t n);

/* Free VIP ids and backend ids in the state. */
size_t xlb_vips_free(const struct xlb_state *st);
size_t xlb_backend_ids_free(const struct xlb_state *st);

#endif /* XLB_UPDATE_H */
