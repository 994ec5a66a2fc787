/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The health checker, `xlb health run`: it probes every live backend whose
 * settings name a kind of check (probe.h), each at its own interval, and
 * turns runs of results into health (include/health.h):
 *
 *   unknown  not probed yet; in the table. The first good probe makes it
 *            up, `fall` failed ones in a row down.
 *   up       `fall` failed probes in a row take it down.
 *   down     out of its VIP's table (XLB_BE_F_DOWN, and XLB_BE_F_EVICT
 *            when its on_down is reset), the operator's weight kept;
 *            `rise` good probes in a row bring it back.
 *
 * A change of flags is one transactional table swap under the instance's
 * write lock (update.h), so it never interleaves with an operator's
 * command and a kill at any moment leaves a consistent instance. The
 * backend's flag is the truth about down: a run that finds the flag and
 * the health record disagreeing (killed between the two writes) takes the
 * flag's word and completes the record. Every probe result is written to
 * the backend's xlb_hc_state record (within FLUSH_MS, and at once with a
 * change of health), so the next run continues from the recorded runs:
 * a down backend stays out until `rise` good probes.
 *
 * The checker re-reads the instance at the shortest interval in use
 * (between 100 ms and 1 s; the settings, a lookup per backend, at most
 * once a second), so backends and settings that come and go are picked
 * up as it runs. It prints nothing itself: it reports changes to its
 * caller (struct xlb_hc_event) and errors through p_err().
 */
#ifndef XLB_HEALTH_CHECKER_H
#define XLB_HEALTH_CHECKER_H

#include <signal.h>
#include <stdbool.h>
#include <linux/types.h>
#include "health.h"
#include "instance.h"
#include "xlb.h"

enum xlb_hc_event_kind {
	XLB_HC_EV_CHANGE,	/* a backend's health changed */
	XLB_HC_EV_FAIL_OPEN,	/* every backend of a VIP is down: the VIP
				 * keeps its table rather than none */
};

struct xlb_hc_event {
	enum xlb_hc_event_kind kind;
	struct xlb_vip_key vip;
	/* XLB_HC_EV_CHANGE: */
	__be32 addr[4];
	__u8 family;
	__u8 from;		/* enum xlb_hc_health */
	__u8 to;
	bool by_probes;		/* decided by run of count probes; otherwise
				 * by what the instance holds (why says) */
	__u32 run;		/* good or failed probes in a row */
	__u32 count;		/* rise or fall */
	char why[80];		/* the last probe's error, or why not probes */
};

typedef void (*xlb_hc_event_fn)(const struct xlb_hc_event *ev, void *ctx);

struct xlb_checker_opts {
	const struct xlb_instance_opts *instance;
	/* Probe every checked backend once, apply the results, and return. */
	bool once;
	/* Set by the caller's signal handler: write what is pending, return. */
	volatile sig_atomic_t *stop;
	xlb_hc_event_fn event;
	void *ctx;
};

/*
 * Run until *stop (or one round with once). The probe path (hc_path.h)
 * must be installed. Returns 0, or -errno after p_err() when the instance
 * is gone or the checker cannot go on.
 */
int xlb_checker_run(const struct xlb_checker_opts *opts);

/*
 * A checked backend's health from its flags and its record s (read with
 * its gen): the flag XLB_BE_F_DOWN decides down, as the table follows
 * it; a record that says down without the flag awaits its completion by
 * the next run (checker.h) and reads as up. Pure.
 */
__u8 xlb_hc_health_of(const struct xlb_backend *b,
		      const struct xlb_hc_state *s);

#endif /* XLB_HEALTH_CHECKER_H */
