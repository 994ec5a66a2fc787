/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The connection table in the kernel (xlb_conntrack, bpf/conntrack.h) from
 * userspace: the flows each backend still holds, and emptying it. (Its
 * size is set when the program is loaded: conntrack_size.h.)
 */
#ifndef XLB_CONNTRACK_MAP_H
#define XLB_CONNTRACK_MAP_H

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

#endif /* XLB_CONNTRACK_MAP_H */
