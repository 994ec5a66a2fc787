/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Inside a change (update.h): the state it carries from xlb_update_begin()
 * to xlb_update_close(), and its plan: the writes the steps record and
 * the tables they made. Private to the files of loader/instance that make
 * a change: wants.c (what is asked for, checked), update.c (the VIPs'
 * steps), records.c (backend records, VIP keys), tables.c (the tables),
 * vip_sets.c (the VIP filter, the address set, the settings: what a
 * command's first write brings up to date), hc_store.c (health settings),
 * writes.c (the writes, recorded) and plan.c (a plan and its commit).
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
struct xlb_vip_filter;

/* A VIP's source ranges as a plan leaves them (struct xlb_plan). */
struct plan_src {
	struct xlb_vip_key key;
	__u32 n;
};

/* A table made by a plan, swapped in by its commit. */
struct made_table {
	int fd;			/* -1 once installed */
	struct xlb_vip_key key;	/* its VIP's, for -v */
	__u32 vip_id, m;
	double build_us;	/* computing its slots */
	double computed_at;	/* xlb_now_us() when they were */
};

/* What one write of a plan is (struct change_op). */
enum change_op_kind {
	OP_UPDATE,		/* one element: key, value, flags */
	OP_UPDATE_BATCH,	/* n elements in one syscall */
	OP_DELETE,		/* key; -ENOENT is no error with ok_missing */
	OP_TABLE,		/* swap in the plan's table t[index] */
	OP_HC_RESET_VIP,	/* hc_store.h: a, the VIP id */
	OP_HC_COPY_VIP,		/* a to b */
	OP_HC_RESET_BACKENDS,	/* ids[n] */
	OP_HC_COPY_BACKEND,	/* a to b, new gen c */
	OP_HC_VIP_CONFIG,	/* VIP a's settings: value */
	OP_HC_BACKEND_CONFIG,	/* backend a's settings: value */
	OP_NOTE,		/* a line for stderr (p_info()), in order */
	OP_QUIESCE,		/* wait until every packet the datapath had
				 * begun has left it (xlb_plan_quiesce()) */
};

/*
 * One write of a plan, as its commit performs it: a map write with the
 * bytes the plan computed, or a write of the health store, whose own
 * reads (a copy's source) are made then, after the writes before it.
 */
struct change_op {
	enum change_op_kind kind;
	int fd;
	const char *map;	/* its name in the instance directory */
	__u64 flags;
	bool ok_missing;
	bool records;		/* backend records: their next hops follow */
	__u32 n, a, b, c;
	size_t index;
	void *key, *value;	/* n of each for a batch */
	__u32 *ids;		/* new backends of a records batch; hc ids */
	__u32 n_ids;
	char *note;
	char what[64];		/* what it writes, for the commit's error */
};

/* The tables of the VIP ids as a plan leaves them so far. */
#define TABLE_AS_LIVE	(-1)	/* the live one, untouched */
#define TABLE_DELETED	(-2)

/*
 * A change planned (xlb_update_plan()): the state it leaves, and the
 * writes that get there from the state it was planned on, in the order
 * the commit performs them (update.h's). The plan's reads of what it has
 * written already go through what it holds: the tables it made, the VIP
 * filter and address set it wrote.
 */
struct xlb_plan {
	struct xlb_state *st;	/* the state it was planned on */
	struct xlb_state *after;	/* and the one it leaves */
	bool committed;
	struct change_op *ops;
	size_t n_ops, cap_ops;
	bool adds_backends;	/* new records: their next hops need room */
	struct made_table *t;
	size_t n, cap;
	int table_of[XLB_MAX_VIPS];	/* index in t, or TABLE_* */
	__u32 *slots;		/* one buffer for every table computed */
	__u32 slots_cap;
	/* The VIP filter and the address set as written so far (read from
	 * the kernel at first use). */
	struct xlb_vip_filter *filter;
	bool filter_known;
	struct xlb_vip_ranged *ranged;	/* likewise, the ranged bits */
	bool ranged_known;
	/* The VIP keys whose source ranges it wrote or deleted, and how
	 * many prefixes each then has (src_ranges.c): the trie as it
	 * leaves it, for the next step's reads and limits. */
	struct plan_src *src;
	__u32 n_src;
	struct xlb_vip_key *addrs;
	struct xlb_vip_addr *addr_vips;
	__u32 n_addrs;
	bool addrs_known;
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
 * to xlb_update_close(): what its commits have written, for the close's
 * hook, and the plan being made. A plan (st->planning, a copy of the
 * state) shares its state's.
 */
struct xlb_change {
	/* Backend records were written, and which of them are new backends
	 * (their next hops are named if unresolved). */
	bool backends_written;
	bool backends_added[XLB_MAX_BACKENDS];
	bool said4, said6;	/* the notes of xlb_note_sources() */
	struct xlb_plan *plan;	/* the plan being made, or NULL */
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
 * The writes of a change, recorded in its plan (writes.c): every write
 * of a step goes through these and is performed only by the commit
 * (plan.c), in the order recorded. map names the map in the instance
 * directory, for the commit's error. 0 or -ENOMEM after p_err().
 */
int xlb_plan_update(const struct xlb_state *st, int fd, const char *map,
		    const void *key, size_t key_size, const void *value,
		    size_t value_size, __u64 flags);
int xlb_plan_update_batch(const struct xlb_state *st, int fd,
			  const char *map, const void *keys, size_t key_size,
			  const void *values, size_t value_size, __u32 n,
			  const __u32 *new_ids, __u32 n_new);
int xlb_plan_delete(const struct xlb_state *st, int fd, const char *map,
		    const void *key, size_t key_size, bool ok_missing);
int xlb_plan_table(const struct xlb_state *st, size_t index);
int xlb_plan_hc(const struct xlb_state *st, enum change_op_kind kind,
		__u32 a, __u32 b, __u32 c, const __u32 *ids, __u32 n,
		const void *config, size_t config_size);
int xlb_plan_note(const struct xlb_state *st, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* A wait, when the commit reaches it, until the datapath has finished
 * every packet it had begun (an RCU grace period): after it no packet
 * holds what the writes before it replaced. 0 or -ENOMEM. */
int xlb_plan_quiesce(const struct xlb_state *st);
/* Name what the last write recorded writes ("VIP 192.0.2.10:80/tcp"),
 * for the commit's error should it fail. Returns 0. */
int xlb_plan_what(const struct xlb_state *st, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void xlb_plan_ops_free(struct xlb_plan *plan);

/* The plan st is the copy of; p_err() and NULL outside one. */
static inline struct xlb_plan *plan_of(const struct xlb_state *st)
{
	if (!st->planning || !st->change || !st->change->plan) {
		p_err("a step of a change runs in a plan (plan.c)");
		return NULL;
	}
	return st->change->plan;
}

/*
 * Run step(inst, st, arg) in the plan st belongs to, or, when st is no
 * plan's, as a change of its own: planned, then committed
 * (xlb_update_all_or_nothing()). The public steps of update.h are so.
 */
int xlb_update_step(struct xlb_instance *inst, struct xlb_state *st,
		    xlb_change_fn step, void *arg);

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
/* A per-CPU counter of map (its fd and name) made zero on every CPU. */
int xlb_counter_zero(const struct xlb_state *st, int fd, const char *map,
		     __u32 id);
/* Write v's key and value with flags (BPF_EXIST, BPF_NOEXIST). */
int xlb_vip_write(struct xlb_instance *inst, const struct xlb_state *st,
		  const struct xlb_state_vip *v, __u64 flags);

/* tables.c: compute the table the records of vip_id ask for, make it,
 * and record its swap; record the deletion of vip_id's table; read it as
 * the plan leaves it so far (the table it made, or the live one: -ENOENT
 * for none). 0 or -errno after p_err() (the read: none). */
int xlb_vip_table_install(struct xlb_instance *inst, struct xlb_state *st,
			  const struct xlb_vip_key *key, __u32 vip_id, __u32 m,
			  __u32 flags);
int xlb_vip_table_delete(struct xlb_instance *inst, struct xlb_state *st,
			 __u32 vip_id);
int xlb_vip_table_read(const struct xlb_instance *inst,
		       const struct xlb_state *st, __u32 vip_id,
		       __u32 **slots, __u32 *m, struct xlb_history *h);

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

/*
 * The VIP slot (include/xlb.h) of v's filter bit made a copy of v's key
 * and record, after the record's write; or, before the VIP of key is
 * deleted, that of another of st's VIPs with the bit, or empty. Return 0
 * or -errno after p_err().
 */
int xlb_vip_slot_write(struct xlb_instance *inst, const struct xlb_state *st,
		       const struct xlb_state_vip *v);
int xlb_vip_slot_clear(struct xlb_instance *inst, const struct xlb_state *st,
		       const struct xlb_vip_key *key);
/* A repair (update.c): every slot that holds a VIP's key with another
 * record than the VIP's (a command killed between the record's write
 * and its slot's) made a copy of the record again, *wrote set when one
 * was. Empty slots and those of other keys stay for the first write
 * (vip_sets.c). 0 or -errno after p_err(). */
int xlb_vip_slots_repair(struct xlb_instance *inst, const struct xlb_state *st,
			 bool *wrote);

#endif /* XLB_CHANGE_H */
