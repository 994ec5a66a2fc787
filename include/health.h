/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Health checks: settings per VIP and per backend, and each backend's
 * health as the checker (`xlb health run`) last saw it. Both live in
 * pinned maps of the instance, like the rest of its state, so every xlb
 * command and a restarted checker read the same thing. The datapath reads
 * neither: a backend found down carries XLB_BE_F_DOWN in its record
 * (include/xlb.h), which takes it out of its VIP's table as a drain does.
 */
#ifndef XLB_HEALTH_H
#define XLB_HEALTH_H

#include <linux/types.h>
#include "xlb.h"

#define XLB_MAP_HC_CONFIG	"xlb_hc_config"
#define XLB_MAP_HC_STATE	"xlb_hc_state"

enum xlb_hc_kind {
	XLB_HC_INHERIT = 0,	/* a backend's: its VIP's kind; a VIP's: none */
	XLB_HC_NONE,		/* not checked: always up */
	XLB_HC_TCP,		/* the connection is accepted */
	XLB_HC_HTTP,		/* GET path answered with http_status */
	XLB_HC_UDP,		/* send answered by a datagram holding expect */
};

/* What happens to connections tracked to a backend found down. */
enum xlb_hc_on_down {
	XLB_HC_ON_DOWN_INHERIT = 0,
	XLB_HC_ON_DOWN_KEEP,	/* they stay, as with a drain (default) */
	XLB_HC_ON_DOWN_RESET,	/* they follow the table: the new backend
				 * resets them, rather than a black hole */
};

#define XLB_HC_PATH_MAX		64	/* with its NUL */
#define XLB_HC_DATA_MAX		64

/* Defaults where a VIP's setting is 0 (and its kind is not none). */
#define XLB_HC_DEFAULT_INTERVAL_MS	2000
#define XLB_HC_DEFAULT_TIMEOUT_MS	1000
#define XLB_HC_DEFAULT_RISE		2
#define XLB_HC_DEFAULT_FALL		3
#define XLB_HC_DEFAULT_HTTP_STATUS	200
#define XLB_HC_DEFAULT_PATH		"/"

/*
 * Settings. The map holds XLB_MAX_VIPS entries by VIP id, then
 * XLB_MAX_BACKENDS entries by backend id (key XLB_MAX_VIPS + id): a
 * backend's non-zero fields override its VIP's, field by field (path,
 * send and expect when their length is non-zero). A record is reset to
 * zero when its VIP or backend id is handed out again, before anything
 * can reach the id (so a kill cannot leave a new VIP or backend with its
 * id's last user's settings); a VIP built anew under another id for
 * another table size takes its settings and its backends' along.
 */
struct xlb_hc_config {
	__u8 kind;		/* enum xlb_hc_kind */
	__u8 on_down;		/* enum xlb_hc_on_down */
	__u8 rise;		/* good probes that bring a down backend back */
	__u8 fall;		/* failed probes that take an up one out */
	__u32 interval_ms;
	__u32 timeout_ms;	/* below interval_ms */
	__u16 port;		/* host order; 0: the VIP's port */
	__u16 http_status;	/* 100..599 */
	__u8 send_len;		/* UDP request */
	__u8 expect_len;	/* UDP reply must contain this */
	__u8 pad[6];
	char path[XLB_HC_PATH_MAX];	/* HTTP; begins with '/' */
	__u8 send[XLB_HC_DATA_MAX];
	__u8 expect[XLB_HC_DATA_MAX];
};
XLB_STATIC_ASSERT(sizeof(struct xlb_hc_config) == 216, "xlb_hc_config layout");
#define XLB_HC_CONFIG_ENTRIES	(XLB_MAX_VIPS + XLB_MAX_BACKENDS)

enum xlb_hc_health {
	XLB_HC_UNKNOWN = 0,	/* not probed yet: counts as up */
	XLB_HC_UP,
	XLB_HC_DOWN,
};

/*
 * A backend's health, written by the checker, by backend id. gen is the
 * backend record's gen it is about: a record of another gen (the id was
 * reused) is stale and reads as unknown.
 */
struct xlb_hc_state {
	__u32 gen;
	__u8 health;		/* enum xlb_hc_health */
	__u8 pad[3];
	__u32 good_run;		/* consecutive good probes */
	__u32 bad_run;		/* consecutive failed probes */
	__u64 since_ns;		/* CLOCK_REALTIME of the last change */
	__u64 last_probe_ns;	/* CLOCK_REALTIME */
	__u32 last_rtt_us;
	__u32 downs;		/* up -> down transitions */
	__u32 ups;		/* down -> up transitions */
	__u32 fail_open;	/* times it stayed in the table because every
				 * backend of its VIP was down */
	char last_error[64];
};
XLB_STATIC_ASSERT(sizeof(struct xlb_hc_state) == 112, "xlb_hc_state layout");

#endif /* XLB_HEALTH_H */
