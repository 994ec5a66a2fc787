/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Packets from the running datapath with their outcome: `xlb capture`
 * (include/capture_rec.h says how the datapath hands them over).
 *
 * Starting a capture takes a lock of its own (one capture an instance),
 * writes the datapath's filter and switches capturing on in every program
 * that runs on the instance's maps, by a deadline in its .bss that
 * xlb_capture_poll() keeps pushing forward: when the process dies, even by
 * SIGKILL, the datapath stops handing packets over within
 * XLB_CAPTURE_LEASE_MS. xlb_capture_stop() switches it off at once.
 */
#ifndef XLB_CAPTURE_H
#define XLB_CAPTURE_H

#include <linux/types.h>
#include "capture_rec.h"

struct xlb_instance;
struct xlb_capture;

/* Called with each packet handed over; a negative return stops the poll
 * and is xlb_capture_poll()'s (-ECANCELED: enough). */
typedef int (*xlb_capture_fn)(const struct xlb_capture_rec *rec, void *ctx);

/* Start capturing what cfg lets through. Returns 0 with *out, or -errno
 * after p_err(): -EBUSY when another capture runs on the instance,
 * -ENOENT when no program runs on it or its program has no capture. */
int xlb_capture_start(struct xlb_instance *inst, const struct xlb_capture_cfg *cfg,
		      struct xlb_capture **out);

/* Hand the packets waiting, and those that come within timeout_ms, to fn;
 * keep the capture on. Returns 0, fn's negative value, or -errno. */
int xlb_capture_poll(struct xlb_capture *c, int timeout_ms, xlb_capture_fn fn,
		     void *ctx);

/* Switch capturing off, then free c; *totals (may be NULL) receives what
 * the datapath counted during the capture (seen, captured, lost). */
void xlb_capture_stop(struct xlb_capture *c, struct xlb_capture_stats *totals);

/* The programs a capture switches (for its message). */
unsigned int xlb_capture_programs(const struct xlb_capture *c);

#endif /* XLB_CAPTURE_H */
