/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Jumbo frames and XDP, as the commands that attach a program see them
 * (`xlb attach`, `xlb host setup`): whether the kernel loads programs
 * that take frames of several buffers (XDP multi-buffer, Linux 5.18), a
 * device's MTU and driver, and the words for a driver's refusal of an MTU.
 */
#ifndef XLB_XDP_FRAGS_H
#define XLB_XDP_FRAGS_H

#include <stdbool.h>
#include <stddef.h>

/* The largest MTU a veth takes for a single-buffer program: a page less
 * XDP's headroom and the shared info. Other drivers' limits are close. */
#define XLB_XDP_PAGE_MTU	3498

/* Does the kernel load XDP programs flagged BPF_F_XDP_HAS_FRAGS? */
bool xlb_xdp_frags_supported(void);

/* The MTU of dev in this network namespace, 0 when it cannot be read. */
int xlb_dev_mtu(const char *dev);

/*
 * Was err, a driver's refusal of an XDP program in native mode on dev,
 * for dev's MTU? veth says ERANGE; others (virtio-net before Linux 6.3)
 * EINVAL, which an MTU above a page explains.
 */
bool xlb_xdp_mtu_refused(int err, const char *dev);

/*
 * Why dev refused a program (multi-buffer when frags) for its MTU, into
 * buf: "its MTU 9000 is above what its driver (virtio_net) takes for XDP
 * ...: lower it (...)", naming the MTU, the driver and what fits.
 */
void xlb_xdp_mtu_refusal(const char *dev, bool frags, char *buf, size_t len);

#endif /* XLB_XDP_FRAGS_H */
