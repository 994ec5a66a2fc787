/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The health probes' path, shared by bpf/hc.bpf.c and loader/health: the
 * mark that names the backend a probe is for, and the program's counters.
 *
 * A probe's socket carries XLB_HC_MARK_BASE | backend id (SO_MARK); a
 * policy-routing rule sends every packet whose mark matches it under
 * XLB_HC_MARK_MASK to a routing table of xlb's own, whose routes hand the
 * packet to hc.bpf.c, which encapsulates it to that backend
 * (docs/health.md, "How a probe travels").
 */
#ifndef XLB_HC_H
#define XLB_HC_H

#include <linux/types.h>
#include "xlb.h"

/* Backend ids are below XLB_MAX_BACKENDS, so they fit the low 16 bits. */
#define XLB_HC_MARK_BASE	0x584c0000U
#define XLB_HC_MARK_MASK	0xffff0000U
XLB_STATIC_ASSERT(XLB_MAX_BACKENDS - 1 <= (__u32)~XLB_HC_MARK_MASK,
		  "backend ids fit the mark's low bits");

/* The routing table and the rule's priority (both families); a rule at a
 * lower priority than the main table's (32766) so that a marked packet
 * never takes an ordinary route. */
#define XLB_HC_TABLE		22604	/* 0x584c, "XL" */
#define XLB_HC_RULE_PRIO	1000
/* Room the routes reserve for the outer headers (the largest: IPv6 40,
 * UDP 8 and GUE 24, bpf/encap_hdr.h), so that the probe's socket sees an
 * MTU the encapsulated packet fits. */
#define XLB_HC_HEADROOM		72

/* The program's counters: a per-CPU array of struct xlb_counter, pinned by
 * name beside the instance's maps. */
#define XLB_MAP_HC_STATS	"xlb_hc_stats"

/*
 * What became of the packets the program saw: encapsulated, or dropped
 * and why. One list gives the enum and the names, as XLB_STAT_LIST does.
 */
#define XLB_HC_STAT_LIST(X)						\
	X(ENCAP,		"encap")				\
	X(DROP_NOT_MARKED,	"drop_not_marked")			\
	X(DROP_NO_BACKEND,	"drop_no_backend")			\
	X(DROP_NO_CONFIG,	"drop_no_config")			\
	X(DROP_NO_SOURCE,	"drop_no_source")			\
	X(DROP_NOT_IP,		"drop_not_ip")				\
	X(DROP_TOO_BIG,		"drop_too_big")				\
	X(DROP_ENCAP_FAILED,	"drop_encap_failed")

#define XLB_HC_STAT_ENUM(name, str) XLB_HC_STAT_##name,
enum xlb_hc_stat {
	XLB_HC_STAT_LIST(XLB_HC_STAT_ENUM)
	XLB_HC_STAT__MAX
};
#undef XLB_HC_STAT_ENUM

#endif /* XLB_HC_H */
