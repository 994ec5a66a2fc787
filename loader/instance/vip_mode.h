/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * A VIP's way of forwarding (its XLB_VIP_F_MODE flags) by name, one list
 * for `xlb vip add|set`, `xlb show` and `xlb apply`: the encapsulation,
 * ipip (IPIP or IPv6-in-IP, by the backend's family) or gue, and the
 * mode, tracked (the connection table) or stateless (which needs gue);
 * and the fields its flow hash takes, 5-tuple or src-ip (client
 * affinity) with the client prefix that counts as one client.
 */
#ifndef XLB_VIP_MODE_H
#define XLB_VIP_MODE_H

#include <linux/types.h>

/* Set the encapsulation named text in *flags; 0 or -EINVAL with *why. */
int xlb_encap_parse(const char *text, __u32 *flags, const char **why);
/* The name of the encapsulation in flags. */
const char *xlb_encap_str(__u32 flags);

/* The same for the mode. */
int xlb_mode_parse(const char *text, __u32 *flags, const char **why);
const char *xlb_mode_str(__u32 flags);

/* The same for the hash's fields; src-ip leaves the affinity prefix
 * unset (0), for xlb_vip_mode_complete() to fill in. */
int xlb_hash_parse(const char *text, __u32 *flags, const char **why);
const char *xlb_hash_str(__u32 flags);

/* Whether the VIP answers ping of its address: on or off. */
int xlb_ping_parse(const char *text, __u32 *flags, const char **why);
const char *xlb_ping_str(__u32 flags);

/* The affinity prefix length in text, 1..128, into *prefix; 0 or -EINVAL
 * with *why. */
int xlb_affinity_parse(const char *text, __u32 *prefix, const char **why);

/* A VIP of family (enum xlb_family) with src-ip and no affinity prefix
 * gets its family's whole address as one. */
__u32 xlb_vip_mode_complete(__u32 flags, int family);

/* 0, or -EINVAL with *why when the flags cannot go together on a VIP of
 * family (an affinity prefix longer than its addresses, or one without
 * src-ip). */
int xlb_vip_mode_check(__u32 flags, int family, const char **why);

#endif /* XLB_VIP_MODE_H */
