/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The path of a probe packet (probe.h): a policy-routing rule sends every
 * packet marked XLB_HC_MARK_BASE/XLB_HC_MARK_MASK to a routing table of
 * xlb's own, whose routes hand it to bpf/hc.bpf.c (a lightweight-tunnel
 * BPF program, LWT xmit). The program reads the mark's backend id, looks
 * the backend up in the instance's pinned xlb_backends, and encapsulates
 * the packet to it with the datapath's own header code and the instance's
 * outer source (xlb_config); the kernel then routes the outer packet to
 * the backend and resolves its next hop as for any packet it sends.
 *
 * Installing replaces what an earlier run left (a checker killed with
 * kill -9), so it is idempotent; removing takes away the rules and routes.
 */
#ifndef XLB_HEALTH_HC_PATH_H
#define XLB_HEALTH_HC_PATH_H

struct xlb_hc_path;

/*
 * Load bpf/hc.bpf.o (obj_path, or the copy built into the binary when
 * NULL) against the instance pinned in pin_dir and install, per family, a
 * rule and a route over the device that holds the instance's outer
 * source of that family. A family the kernel refuses (IPv6 disabled on
 * the device, the device down) is skipped with a note: its table gets an
 * unreachable route, so its probes fail rather than leave unencapsulated.
 * Returns 0, or -errno after p_err() when the instance has no outer
 * source, no device holds it, or neither family could be installed.
 */
int xlb_hc_path_install(const char *pin_dir, const char *obj_path,
			struct xlb_hc_path **out);
/* Remove the rules and routes and free. */
void xlb_hc_path_remove(struct xlb_hc_path *path);

#endif /* XLB_HEALTH_HC_PATH_H */
