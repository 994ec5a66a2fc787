/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The whole state of an instance as read from its maps: settings, VIPs and
 * backend records; id allocation; and the Maglev table a VIP's records ask
 * for. The maps are the only copy of the state, so every command reads it
 * afresh (under the instance lock).
 *
 * A VIP's backends are the records with its id in vip_id, flagged IN_USE and
 * not REMOVED ("live"); those with weight > 0 make its table. Records of an
 * id no VIP holds are leftovers of an interrupted command and count for
 * nothing until the next change frees them (update.h).
 */
#ifndef XLB_STATE_H
#define XLB_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include "instance.h"
#include "xlb.h"

struct xlb_change;

struct xlb_state_vip {
	struct xlb_vip_key key;
	struct xlb_vip vip;
	/* Why the record cannot be right (written by hand, or by a bug), or
	 * "": such a VIP is left alone, until `xlb vip del` removes it or
	 * `xlb apply` replaces it. */
	char corrupt[64];
};

struct xlb_state {
	struct xlb_config config;
	/* config holds seeds drawn for a first use, not yet written: the
	 * first write of the command writes them first, and a command that
	 * writes nothing leaves the instance as it was. */
	bool seeds_pending;
	/* The VIP filter may not be the image of the VIPs (an older xlb's
	 * instance, a program `ip link` loaded afresh): rewritten, if it
	 * differs, by the command's first write, as the seeds are. */
	bool filter_pending;
	/* The copy a change's plan runs on (update.h): its writes are
	 * recorded for the commit. */
	bool planning;
	/* The change in progress, from xlb_update_begin() to
	 * xlb_update_close() (update.c's; NULL in a state only read). */
	struct xlb_change *change;
	__u32 n_vips;
	struct xlb_state_vip vips[XLB_MAX_VIPS];	/* sorted by key */
	struct xlb_backend backends[XLB_MAX_BACKENDS];	/* by id */
};

/* Backend ids usable for backends: 0 is XLB_BACKEND_NONE. */
#define XLB_BACKEND_IDS	(XLB_MAX_BACKENDS - 1)

int xlb_state_read(const struct xlb_instance *inst, struct xlb_state **out);
/* Open the --pin-dir instance for reading (shared lock) and read its
 * state; on error nothing is left open. */
int xlb_state_open(struct xlb_instance *inst,
		   const struct xlb_instance_opts *opts, struct xlb_state **out);
void xlb_state_free(struct xlb_state *st);

/* Keep the state in step with a VIP written or deleted. */
int xlb_state_vip_insert(struct xlb_state *st, const struct xlb_state_vip *v);
void xlb_state_vip_erase(struct xlb_state *st, const struct xlb_vip_key *key);

/* The note printed about a corrupt VIP by the commands that meet it. */
void xlb_state_vip_corrupt_note(const struct xlb_state_vip *v);

struct xlb_state_vip *xlb_state_vip_find(struct xlb_state *st,
					 const struct xlb_vip_key *key);
struct xlb_state_vip *xlb_state_vip_by_id(struct xlb_state *st, __u32 id);

static inline bool xlb_backend_live(const struct xlb_backend *b)
{
	return (b->flags & (XLB_BE_F_IN_USE | XLB_BE_F_REMOVED)) ==
	       XLB_BE_F_IN_USE;
}

/* The live backends of a VIP, ids sorted by address; returns how many. */
size_t xlb_state_vip_backends(const struct xlb_state *st, __u32 vip_id,
			      __u32 ids[XLB_MAX_BACKENDS]);
/* The live backend of vip_id with this address: its id, or 0. */
__u32 xlb_state_backend_find(const struct xlb_state *st, __u32 vip_id,
			     const __be32 addr[4], __u8 family);
/* Backend records in use (live or not). */
size_t xlb_state_backends_in_use(const struct xlb_state *st);

/* The lowest free VIP id / backend id, or -ENOSPC. */
int xlb_state_alloc_vip_id(const struct xlb_state *st);
int xlb_state_alloc_backend_id(const struct xlb_state *st);

/*
 * The table the live records of vip_id ask for: slots[m] filled with
 * backend ids by Maglev over the live backends of weight > 0 and not
 * XLB_BE_F_DOWN (identity = canonical address text), or with
 * XLB_BACKEND_NONE when there are none. A DOWN backend keeps its weight
 * in its record, for when it comes back.
 */
int xlb_state_table_build(const struct xlb_state *st, __u32 vip_id, __u32 m,
			  __u32 *slots);

/*
 * Every live backend of vip_id with weight > 0 is flagged XLB_BE_F_DOWN
 * (and there is one): its table is built as if none were (fail open),
 * never empty because of health.
 */
bool xlb_state_vip_fail_open(const struct xlb_state *st, __u32 vip_id);

/*
 * A fingerprint of what a VIP does with flows: its key, table size, the
 * instance seed, its mode and GUE port when GUE or stateless, and every
 * slot as the address of its backend. Two
 * balancers with equal fingerprints send every flow of the VIP to the same
 * backend address.
 */
__u64 xlb_state_fingerprint(const struct xlb_state *st,
			    const struct xlb_state_vip *v, const __u32 *slots);

#endif /* XLB_STATE_H */
