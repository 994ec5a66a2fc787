/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * loader/common: the bottom layer of xlb's userspace, used by every layer
 * above it (algo, sim, instance, replay, cli) and including none of them.
 *   report.h  how every part reports: one error path (p_err), notes (p_info)
 *   addr.h    what users type: addresses and VIPs
 *   numbers.h numbers: counts, weights, table sizes, seeds
 *
 * An error is printed once, at the boundary where it is detected, as
 * "PROGNAME: message" on stderr, or as a JSON object on stdout when the
 * program asked for JSON (xlb -j). Programs that link libxlb (tests,
 * benchmarks, tools) set their own name, or a hook that keeps the message
 * for their checks.
 */
#ifndef XLB_REPORT_H
#define XLB_REPORT_H

#include <stdbool.h>

void p_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* An informational note on stderr (never mixed into JSON on stdout). */
void p_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

extern const char *xlb_progname;
/* Errors as {"error":"..."} on stdout instead of a line on stderr. */
extern bool xlb_report_json;
extern void (*p_err_hook)(const char *msg);

#endif /* XLB_REPORT_H */
