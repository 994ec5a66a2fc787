/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Next hops of backends kept resolved. The datapath (bpf/fib.h) takes a
 * backend's next hop from bpf_fib_lookup, which never resolves a missing
 * neighbour entry: the packet is dropped (drop_neigh_unresolved). So xlb
 * asks the kernel's FIB for every live backend's route (from the outer
 * source address when set, as the datapath does) and gives the next hop
 * (the gateway, or the backend itself on-link) a managed neighbour entry
 * (NTF_EXT_MANAGED, Linux 5.16 and later), which the kernel resolves at
 * once and keeps resolved without traffic.
 *
 * Whose entry it is:
 * - xlb makes an entry only where there is none, and marks it: managed,
 *   externally learned (NTF_EXT_LEARNED) and of protocol XLB_NEIGH_PROTO
 *   (NDA_PROTOCOL). It records it in a map pinned next to the instance's
 *   (XLB_NEIGH_MAP) before making it, so that a kill in between leaves a
 *   record of nothing, which the next sync drops; the record's value is
 *   the marks the kernel kept (XLB_NEIGH_MARK_*, read back).
 * - An entry is still xlb's while it is recorded and carries every mark
 *   recorded. Any write of the operator's without extern_learn (`ip neigh
 *   replace ... managed`, `... nud permanent`, `... nud reachable`) clears
 *   NTF_EXT_LEARNED: the entry is his from then on, its record is dropped
 *   and xlb never changes or deletes it. An entry xlb did not make (learned
 *   by the kernel, made by the operator) is never converted, changed or
 *   deleted either; a backend behind it is resolved only as long as the
 *   kernel keeps it so.
 * - xlb deletes its entries, and only those, once no backend needs them.
 *
 * The host's room: the neighbour tables are shared by every network
 * namespace of the host, and past gc_thresh3 entries (1024 by default)
 * counted against it no namespace can make a new one (`neighbor table
 * overflow`). Entries marked extern_learn are exempt from that count
 * (Linux 4.20 and later), so xlb's entries take none of it. Where the
 * kernel drops the mark (read back, and then recorded so), they count:
 * a change whose new entries would leave more than 3/4 of gc_thresh3 in
 * use is refused before it writes anything (xlb_neigh_check()), and a
 * sync stops making entries at that share. The count is the table's
 * (RTM_GETNEIGHTBL, every namespace) less the exempt entries of this
 * namespace: a bound from above.
 *
 * A kernel without managed entries: xlb says so once, creates an ordinary
 * entry with the same other marks and has the kernel resolve it at once
 * (NTF_USE). Such an entry ages out when unused, and the frames XDP sends
 * do not use it; every xlb command that changes backends resolves the
 * missing ones again, and so does `xlb attach`.
 */
#ifndef XLB_NEIGH_H
#define XLB_NEIGH_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include "instance.h"
#include "rtnl.h"
#include "state.h"

#define XLB_NEIGH_MAP	"xlb_neigh"

/* NDA_PROTOCOL of the entries xlb makes: 'X', not a value of iproute2's
 * rt_protos. */
#define XLB_NEIGH_PROTO	88

/* The marks of an entry xlb made (the record's value). */
#define XLB_NEIGH_MARK_MANAGED	(1u << 0)	/* NTF_EXT_MANAGED */
#define XLB_NEIGH_MARK_LEARNED	(1u << 1)	/* NTF_EXT_LEARNED */
#define XLB_NEIGH_MARK_PROTO	(1u << 2)	/* NDA_PROTOCOL XLB_NEIGH_PROTO */
/* Read back from the kernel, not only asked for. A record made before
 * the marks were recorded holds 1: managed, nothing else known. */
#define XLB_NEIGH_MARK_READ	(1u << 3)
#define XLB_NEIGH_MARKS		(XLB_NEIGH_MARK_MANAGED | \
				 XLB_NEIGH_MARK_LEARNED | XLB_NEIGH_MARK_PROTO)

/* Of the host's neighbour table, the share in use (entries counted
 * against gc_thresh3) past which xlb makes no entry that counts. */
#define XLB_NEIGH_SHARE_NUM	3
#define XLB_NEIGH_SHARE_DEN	4

/* How long a change waits for the next hops it asked for (below). */
#define XLB_NEIGH_WAIT_MS	1000

/* A backend's next hop as the kernel's FIB and neighbour table hold it. */
struct xlb_nexthop_state {
	__be32 addr[4];		/* the gateway, or the backend on-link */
	__u8 family;		/* enum xlb_family */
	int ifindex;		/* egress device */
	__u16 nud;		/* NUD_* of its neighbour entry; 0: none */
	__u8 flags;		/* NTF_* */
	__u8 protocol;		/* NDA_PROTOCOL; 0: none */
	__u32 ext_flags;	/* NTF_EXT_* */
	__u8 lladdr[32];
	__u8 lladdr_len;
};

/*
 * The kernel asked about next hops: a route netlink socket, opened on
 * first use, and whether the note on kernels without managed entries was
 * given. One per caller (a command, a checker's round), closed by
 * xlb_nexthops_close().
 */
struct xlb_nexthops {
	struct xlb_rtnl nl;
	bool said_unmanaged;
};
#define XLB_NEXTHOPS_INIT	{ .nl = XLB_RTNL_INIT }
void xlb_nexthops_close(struct xlb_nexthops *nx);

/*
 * The next hop of the backend at addr, with cfg's outer source: 0, or
 * -ENETUNREACH (no unicast route, nothing to resolve), or -errno when the
 * kernel cannot be asked (nothing printed).
 */
int xlb_nexthop_get(struct xlb_nexthops *nx, const struct xlb_config *cfg,
		    const __be32 addr[4], __u8 family,
		    struct xlb_nexthop_state *nh);

/* Whether the datapath finds a MAC address for it (NUD_VALID). */
bool xlb_nexthop_resolved(const struct xlb_nexthop_state *nh);

/* "REACHABLE", "FAILED", ...; "none" without an entry. */
const char *xlb_nexthop_nud_str(__u16 nud);

/* The XLB_NEIGH_MARK_* its entry carries (none without an entry). */
__u32 xlb_nexthop_marks(const struct xlb_nexthop_state *nh);

/*
 * Make nh's next hop (as xlb_nexthop_get() found it) an entry of xlb's,
 * marked as above, and read it back into nh; on a kernel without managed
 * entries, an ordinary one resolved at once (a note, once). Only where
 * there is none: -EEXIST, nothing changed, when there is one. 0 or -errno
 * (nothing printed).
 */
int xlb_nexthop_manage(struct xlb_nexthops *nx, struct xlb_nexthop_state *nh);

/* Remove the entry of nh's next hop if it is still one xlb made (not
 * permanent, extern_learn and protocol XLB_NEIGH_PROTO); none, or one
 * that is not xlb's, is left and no error. 0 or -errno. */
int xlb_nexthop_forget(struct xlb_nexthops *nx,
		       const struct xlb_nexthop_state *nh);

/*
 * Before a change writes anything: refuse it (-ENOBUFS after p_err()
 * naming the sysctl to raise) when the next hops of the backends it adds
 * need new entries that count against the host's gc_thresh3 beyond
 * XLB_NEIGH_SHARE of it. The backends it adds: those live in after (the
 * state its plan left; NULL: none) or in want[n] (a VIP's as one
 * change wants them), less those live in st, the state before it. 0 or
 * -errno after p_err().
 */
struct xlb_want;
int xlb_neigh_check(struct xlb_instance *inst, const struct xlb_state *st,
		    const struct xlb_state *after, const struct xlb_want *want,
		    size_t n);

/*
 * Give the next hops of st's live backends entries of xlb's where they
 * have none and remove those xlb made that no backend needs any more, on
 * an instance opened for writing. Entries it had to create are waited for,
 * up to XLB_NEIGH_WAIT_MS; then a backend whose next hop is not resolved
 * is named (p_info) when its entry was created now or named[id] is set
 * (the backends a command added; NULL: every backend). A backend whose
 * next hop got no entry (the kernel refused it, the host's table has no
 * room) is always named, with the reason: its packets are dropped until a
 * later change or `xlb attach` makes the entry. The change it follows is
 * made either way. Returns 0 or -errno (printed).
 */
int xlb_neigh_sync(struct xlb_instance *inst, const struct xlb_state *st,
		   const bool *named);

/*
 * As xlb_neigh_sync(), for a process that runs all along (the checker):
 * without waiting for the entries it makes, and silent, since it runs
 * again and again and the command that changed the backends has said what
 * it found. It asks through nx, the process's own, kept from one pass
 * to the next (one socket, a note once). 0 or -errno (nothing printed).
 */
int xlb_neigh_refresh(struct xlb_instance *inst, const struct xlb_state *st,
		      struct xlb_nexthops *nx);

#endif /* XLB_NEIGH_H */
