/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The connection table in the kernel (xlb_conntrack, bpf/conntrack.h) from
 * userspace: the flows each backend still holds, and emptying it. (Its
 * size is set when the program is loaded: conntrack_size.h.)
 */
#ifndef XLB_CONNTRACK_MAP_H
#define XLB_CONNTRACK_MAP_H

#include <stdbool.h>
#include <linux/types.h>
#include "xlb.h"

/*
 * A census of the table. An entry is live when the datapath would still
 * use it: not timed out (include/ct_entry.h, the same rules and clock as
 * the datapath) and its backend record usable (in use, not being removed,
 * same generation; draining counts). Slots are read while the datapath
 * keeps changing them, so the figures are approximate: flows that ended
 * without a FIN or RST count until their idle timeout, and a full set may
 * already have given up an idle flow's entry to a new flow.
 */
struct xlb_ct_census {
	__u32 size;			/* slots (max_entries) */
	__u64 entries;			/* in the map, live or not */
	__u64 live;
	__u32 flows[XLB_MAX_BACKENDS];	/* live entries per backend id */
};

/* Is entry e of flow live at now (CLOCK_MONOTONIC_COARSE ns, the
 * datapath's clock), as the census counts it? backends: the
 * XLB_MAX_BACKENDS records by id. */
bool xlb_ct_live(const struct xlb_flow *flow, const struct xlb_ct_entry *e,
		 const struct xlb_config *cfg, const struct xlb_backend *backends,
		 __u64 now);

/* backends: the XLB_MAX_BACKENDS records by id. Returns 0 or -errno. */
int xlb_ct_census(int ct_fd, const struct xlb_config *cfg,
		  const struct xlb_backend *backends,
		  struct xlb_ct_census *out);

/* Delete every entry. Returns 0 or -errno. */
int xlb_ct_flush(int ct_fd);

/*
 * Put the entry e for flow into its set (for the table's seed, the
 * config's ct_seed), where the datapath will find it: over the flow's
 * entry or into an empty slot, not over another flow's. For tests and
 * benchmarks, on a table no datapath writes to. Returns 0, -ENOSPC when
 * the set is full, or -errno.
 */
int xlb_ct_insert(int ct_fd, __u32 seed, const struct xlb_flow *flow,
		  const struct xlb_ct_entry *e);

/* The flow's entry, timed out or not, into *e. Returns its way, the place
 * of its slot in the set (0 to XLB_CT_WAYS - 1, the order lookups read
 * them in), -ENOENT or -errno. */
int xlb_ct_find(int ct_fd, __u32 seed, const struct xlb_flow *flow,
		struct xlb_ct_entry *e);

/*
 * Every entry of the table, timed out or not, in slot order: fn(slot
 * index, flow, entry, ctx) for each; a non-zero return stops the walk and
 * is returned. The table is read through a mapping of it, with the
 * datapath's seqlock (an entry being written is skipped), so a walk takes
 * no lock and never stalls the datapath or a writer; entries written
 * meanwhile may or may not be seen. Returns 0, fn's value, or -errno.
 */
typedef int (*xlb_ct_walk_fn)(__u32 index, const struct xlb_flow *flow,
			      const struct xlb_ct_entry *e, void *ctx);
int xlb_ct_walk(int ct_fd, xlb_ct_walk_fn fn, void *ctx);

/*
 * End the entries for which match(flow, entry, ctx) is true: each one's
 * backend becomes XLB_BACKEND_NONE, under the slot's seqlock, so that the
 * flow's next packet goes by its VIP's table (and records the choice in
 * place), as after an idle timeout. An entry is never emptied: a lookup
 * stops at the first empty slot of a set, and would miss the entries
 * after it. Each entry's change is made under its slot's lock, so a kill
 * midway leaves every entry either ended or as it was, and running it
 * again finishes the job.
 * *ended (may be NULL) counts them. Returns 0 or -errno.
 */
typedef bool (*xlb_ct_match_fn)(const struct xlb_flow *flow,
				const struct xlb_ct_entry *e, void *ctx);
int xlb_ct_end(int ct_fd, xlb_ct_match_fn match, void *ctx, __u64 *ended);

/* End the flow's entry, as above: 0, -ENOENT when it has none (or one
 * ended already), -errno. */
int xlb_ct_end_flow(int ct_fd, __u32 seed, const struct xlb_flow *flow);

#endif /* XLB_CONNTRACK_MAP_H */
