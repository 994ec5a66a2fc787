/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * A VIP must not be one of the balancer's own addresses: the host would
 * answer packets to it itself (XDP_PASS of what no VIP takes), and the
 * health probes of its backends, which leave from this host to the VIP,
 * would reach this host and find it "up".
 */
#ifndef XLB_VIP_LOCAL_H
#define XLB_VIP_LOCAL_H

#include "xlb.h"

/* 0 when the current network namespace does not route key's address as
 * local (RTN_LOCAL); -EADDRNOTAVAIL after p_err() naming what (a VIP, or
 * the file and where in it) when it does; -errno after p_err() when the
 * route cannot be asked for. */
int xlb_vip_local_check(const struct xlb_vip_key *key, const char *what);

#endif /* XLB_VIP_LOCAL_H */
