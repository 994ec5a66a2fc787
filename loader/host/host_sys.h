/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The parts of a backend host's network namespace that `xlb host` reads
 * and changes, each one call: sysctls, addresses, tunnel devices, and the
 * namespace's own identity. Each returns 0 or -errno and prints nothing;
 * host.c says what failed.
 */
#ifndef XLB_HOST_SYS_H
#define XLB_HOST_SYS_H

#include <stdbool.h>
#include <linux/types.h>
#include "rtnl.h"

/* An address, or a prefix, of either family (XLB_AF_*). */
struct xlb_host_addr {
	__be32 addr[4];		/* IPv4 in addr[0], the rest 0 */
	__u8 family;
};

struct xlb_host_prefix {
	__be32 addr[4];
	__u8 family;
	__u8 len;		/* bits */
};

bool xlb_host_addr_eq(const struct xlb_host_addr *a,
		      const struct xlb_host_addr *b);
/* The host prefix (/32, /128) of an address. */
bool xlb_host_prefix_single(const struct xlb_host_prefix *p);

/*
 * The network namespace this process is in: the inode of
 * /proc/self/ns/net, which names it while it lives (and may name another
 * after it is gone), and its cookie, which the kernel never gives twice
 * (SO_NETNS_COOKIE, Linux 5.14+; 0 where unknown).
 */
int xlb_host_netns(__u64 *inode, __u64 *cookie);

/*
 * Sysctls by their path under /proc/sys ("net/ipv4/conf/eth0/arp_ignore":
 * a device's name may hold dots, which sysctl(8) writes as '/'). The value
 * as the kernel prints it, without the newline; -ENOENT where the sysctl
 * does not exist (no such device).
 */
#define XLB_SYSCTL_KEY_LEN	96
#define XLB_SYSCTL_VALUE_LEN	32
int xlb_sysctl_read(const char *key, char *value, size_t len);
int xlb_sysctl_write(const char *key, const char *value);
/* The name sysctl(8) gives it: "net.ipv4.conf.eth0.arp_ignore". */
const char *xlb_sysctl_name(const char *key, char *buf, size_t len);

/* Is a an address of this host: does the kernel route it as local? 0 and
 * *local, or -errno. */
int xlb_host_addr_local(struct xlb_rtnl *nl, const struct xlb_host_addr *a,
			bool *local);

/* The addresses of ifindex, of global scope only when global (those the
 * balancers can send to), at most max of them into out; -E2BIG past max. */
int xlb_host_addrs(struct xlb_rtnl *nl, int ifindex, bool global,
		   struct xlb_host_addr *out, __u32 max, __u32 *n);
/* One address, as the host prefix (/32, /128, IPv6 without duplicate
 * address detection), added to or deleted from ifindex. */
int xlb_host_addr_add(struct xlb_rtnl *nl, int ifindex,
		      const struct xlb_host_addr *a);
int xlb_host_addr_del(struct xlb_rtnl *nl, int ifindex,
		      const struct xlb_host_addr *a);

/* A tunnel device of kind "ipip" or "ip6tnl" in external (collect_md)
 * mode, taking any inner protocol: -EOPNOTSUPP when the kernel has no such
 * driver, -EEXIST when the name is taken. */
int xlb_host_tunnel_add(struct xlb_rtnl *nl, const char *name,
			const char *kind);
int xlb_host_link_up(struct xlb_rtnl *nl, const char *name);
int xlb_host_link_del(struct xlb_rtnl *nl, const char *name);

#endif /* XLB_HOST_SYS_H */
