/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * A stateless VIP's history: for each table slot, the owner it had before
 * its last change and when that was (include/xlb.h, XLB_TABLE_F_HISTORY).
 * The table holds it, so it changes with the slots in one swap; xlb show
 * prints it, xlb apply writes it, the fingerprint covers it, so balancers
 * with the same state name the same previous backend for every packet.
 *
 * The rule, at each change of the table: a slot that gets another owner
 * remembers the one it had, as of now; a slot that keeps its owner keeps
 * what it remembered. What is remembered goes once it is older than the
 * history setting, or once that backend is no longer one of the VIP's
 * (deleted; one drained to weight 0 still is): the next xlb command that
 * writes clears it.
 */
#ifndef XLB_HISTORY_H
#define XLB_HISTORY_H

#include <stdbool.h>
#include <stddef.h>
#include <json-c/json.h>
#include <linux/types.h>
#include "xlb.h"
#include "state.h"

struct xlb_want;

struct xlb_history {
	__u32 m;		/* slots */
	__u16 *slot;		/* per slot: entry number, 1..n; 0: none */
	struct xlb_hist_entry *e;	/* n entries, each named by a slot */
	__u32 n;
};

/* An empty history of m slots (slot[] zero); 0 or -ENOMEM. */
int xlb_history_init(struct xlb_history *h, __u32 m);
void xlb_history_free(struct xlb_history *h);

/* The time of a change, Unix seconds. Each table is computed once in a
 * change (xlb_update_all_or_nothing() installs the one its plan
 * made), so the slots it changes share one entry; a long-running command
 * (xlb health run) dates each of its changes anew. */
__u32 xlb_history_now(void);

/*
 * How far ahead of this balancer's clock a history read from a file may
 * be dated: the file may come from another balancer whose clock runs a
 * little ahead. Further, the entry is a mistake, and one that would
 * outlive the history setting.
 */
#define XLB_HISTORY_SKEW_S	60

/* How long an entry lives: the setting, or its default. */
__u32 xlb_history_keep(const struct xlb_config *cfg);

/*
 * The history after the slots of vip_id change from old_slots (NULL: the
 * VIP had no table) to new_slots, both of h->m slots, with old its history
 * before (NULL: none). st holds the records of both tables' backends
 * (those being deleted still marked REMOVED). out must be
 * xlb_history_init()ed; returns 0 or -E2BIG (more than XLB_HIST_MAX
 * entries).
 */
int xlb_history_next(const struct xlb_state *st, __u32 vip_id,
		     const __u32 *old_slots, const struct xlb_history *old,
		     const __u32 *new_slots, __u32 now, __u32 keep_s,
		     struct xlb_history *out);

/* Would xlb_history_next() with the same slots drop anything of h? */
bool xlb_history_stale(const struct xlb_state *st, __u32 vip_id,
		       const struct xlb_history *h, const __u32 *slots,
		       __u32 now, __u32 keep_s);

/* The entries of h in a canonical order (by time, then address), the
 * slots renumbered: equal histories compare equal bytewise. */
void xlb_history_sort(struct xlb_history *h);
bool xlb_history_equal(const struct xlb_history *a,
		       const struct xlb_history *b);

/*
 * The JSON form, compact: one object per entry, in xlb_history_sort()'s
 * order, with the slots that name it as one string of ascending slots and
 * ranges (one JSON value however many runs a change scattered):
 *   [ { "prev": "ADDR", "since": UNIX_SECONDS, "slots": "0-4,9,12-20" } ]
 * NULL when out of memory.
 */
struct json_object *xlb_history_json(const struct xlb_history *h);
/*
 * h (init'ed for m slots) from that form, sorted, each entry held to what
 * xlb_history_next() could have written for the VIP it is for: its
 * previous backend one of backends[n] (the VIP's backends after the
 * change, drained ones with weight 0 too: the entries next() keeps), its
 * time no later than now + XLB_HISTORY_SKEW_S, its slots at least one,
 * within the table and named by no other entry nor twice, its previous
 * backend and time those of no other entry. 0, or -EINVAL or -ENOMEM
 * with *why (a static string) and *at the index of the entry at fault,
 * XLB_HISTORY_WHOLE when it is no one entry's (not an array, too many
 * entries, out of memory).
 */
#define XLB_HISTORY_WHOLE	((size_t)-1)
int xlb_history_from_json(struct json_object *o,
			  const struct xlb_want *backends, size_t n,
			  __u32 now, struct xlb_history *h,
			  const char **why, size_t *at);

/* Fold h into a VIP's fingerprint. */
__u64 xlb_history_fingerprint(__u64 fp, const struct xlb_history *h);

#endif /* XLB_HISTORY_H */
