/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The backends' XDP program (bpf/decap.bpf.c) as userspace sees it: its
 * setting and its counters (docs/second-chance.md).
 *
 * Neither map is pinned: a backend may attach the program to several
 * interfaces, or several network namespaces of one host may each run it,
 * and pins by name would be shared between them and outlive them. Both
 * are found by name with bpftool (`bpftool map dump name xlb_decap_stats`)
 * and live as long as the program does.
 */
#ifndef XLB_DECAP_H
#define XLB_DECAP_H

#include <linux/types.h>
#include "xlb.h"

/* Map names: at most 15 characters, the kernel's limit, so that the
 * name bpftool matches is the whole name. */
#define XLB_MAP_DECAP_CONFIG	"xlb_decap_cfg"
#define XLB_MAP_DECAP_STATS	"xlb_decap_stats"

/* The one entry of xlb_decap_cfg. A zero field means its default, so the
 * map as the program's load creates it is the default setting. */
struct xlb_decap_config {
	__be16 gue_port;	/* 0: XLB_GUE_DEFAULT_PORT */
	__u16 pad;
};
XLB_STATIC_ASSERT(sizeof(struct xlb_decap_config) == 4, "xlb_decap_config layout");

/*
 * What became of each tunnelled packet the program saw (frames that are
 * not tunnelled to it pass uncounted): each counts exactly one of these,
 * in a per-CPU array of struct xlb_counter indexed by the enum. One list
 * gives the enum and the names.
 */
#define XLB_DECAP_STAT_LIST(X)						\
	X(PASS_IPIP,		"pass_ipip")				\
	X(PASS_GUE,		"pass_gue")				\
	X(PASS_FORWARDED,	"pass_forwarded")			\
	X(PASS_PREV_SELF,	"pass_prev_self")			\
	X(PASS_PREV_FAMILY,	"pass_prev_family")			\
	X(FORWARD,		"forward")				\
	X(DROP_BAD_HEADER,	"drop_bad_header")			\
	X(DROP_TRUNCATED,	"drop_truncated")			\
	X(DROP_BAD_PROTO,	"drop_bad_proto")			\
	X(DROP_BAD_FIELD,	"drop_bad_field")			\
	X(DROP_LOOP,		"drop_loop")				\
	X(DROP_NO_ROUTE,	"drop_no_route")			\
	X(DROP_NO_NEIGH,	"drop_no_neigh")			\
	X(DROP_TOO_BIG,		"drop_too_big")				\
	X(DROP_FWD_DISABLED,	"drop_fwd_disabled")			\
	X(ABORTED,		"aborted")

#define XLB_DECAP_STAT_ENUM(name, str) XLB_DECAP_##name,
enum xlb_decap_stat {
	XLB_DECAP_STAT_LIST(XLB_DECAP_STAT_ENUM)
	XLB_DECAP__MAX
};
#undef XLB_DECAP_STAT_ENUM

#endif /* XLB_DECAP_H */
