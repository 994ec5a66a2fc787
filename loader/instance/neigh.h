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
 * - An entry the operator made permanent, or made managed himself, is left
 *   alone. xlb records the entries it made in a map pinned next to the
 *   instance's (XLB_NEIGH_MAP), and removes those, and only those, once no
 *   backend needs them.
 * - A kernel without managed entries: xlb says so once, creates an
 *   ordinary entry and has the kernel resolve it at once (NTF_USE). Such
 *   an entry ages out when unused, and the frames XDP sends do not use it;
 *   every xlb command that changes backends resolves the missing ones
 *   again, and so does `xlb attach`.
 */
#ifndef XLB_NEIGH_H
#define XLB_NEIGH_H

#include <stdbool.h>
#include <linux/types.h>
#include "instance.h"
#include "state.h"

#define XLB_NEIGH_MAP	"xlb_neigh"

/* How long a change waits for the next hops it asked for (below). */
#define XLB_NEIGH_WAIT_MS	1000

/* A backend's next hop as the kernel's FIB and neighbour table hold it. */
struct xlb_nexthop_state {
	__be32 addr[4];		/* the gateway, or the backend on-link */
	__u8 family;		/* enum xlb_family */
	int ifindex;		/* egress device */
	__u16 nud;		/* NUD_* of its neighbour entry; 0: none */
	__u8 flags;		/* NTF_* */
	__u32 ext_flags;	/* NTF_EXT_* */
	__u8 lladdr[32];
	__u8 lladdr_len;
};

/*
 * The next hop of the backend at addr, with cfg's outer source: 0, or
 * -ENETUNREACH (no unicast route, nothing to resolve), or -errno when the
 * kernel cannot be asked (nothing printed).
 */
int xlb_nexthop_get(const struct xlb_config *cfg, const __be32 addr[4],
		    __u8 family, struct xlb_nexthop_state *nh);

/* Whether the datapath finds a MAC address for it (NUD_VALID). */
bool xlb_nexthop_resolved(const struct xlb_nexthop_state *nh);

/* "REACHABLE", "FAILED", ...; "none" without an entry. */
const char *xlb_nexthop_nud_str(__u16 nud);

/*
 * Give nh's next hop (as xlb_nexthop_get() found it) a managed entry,
 * replacing an entry learned by traffic (its address kept meanwhile), and
 * read it back into nh; on a kernel without managed entries, an ordinary
 * one resolved at once (a note, once). 0 or -errno (nothing printed).
 */
int xlb_nexthop_manage(struct xlb_nexthop_state *nh);

/* Remove the entry of nh's next hop unless the operator has made it
 * permanent meanwhile; none is no error. 0 or -errno. */
int xlb_nexthop_forget(const struct xlb_nexthop_state *nh);

/*
 * Make the next hops of st's live backends managed entries and remove
 * those xlb made that no backend needs any more, on an instance opened
 * for writing. Entries it had to create are waited for, up to
 * XLB_NEIGH_WAIT_MS; then a backend whose next hop is not resolved is
 * named (p_info) when its entry was created now or named[id] is set (the
 * backends a command added; NULL: every backend). A failure is a note too
 * (p_info): the change it follows is made. Returns 0 or -errno.
 */
int xlb_neigh_sync(struct xlb_instance *inst, const struct xlb_state *st,
		   const bool *named);

#endif /* XLB_NEIGH_H */
