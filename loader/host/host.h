/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * A backend host set up for xlb's balancers (`xlb host`): decapsulation
 * (decap.bpf.o with its maps filled, or the kernel's tunnel devices), the
 * VIPs on lo, ARP kept quiet about them, and for the second chance the
 * forwarding and neighbour entries it needs (docs/backend.md,
 * docs/second-chance.md). Everything is per network namespace: one setup
 * in each, on one device.
 *
 * A setup records what it changed and every value it replaced, in
 * XLB_HOST_RUN_DIR/host-ns<inode>.json; a teardown undoes exactly that,
 * so nothing the operator had before is lost. A setup computes all it
 * will do first (the plan: every check that can fail), then writes the
 * record of what it is about to change, makes the changes, and records
 * the outcome; if a change fails, what it made is undone and the record
 * is as before. Run again with the same settings it changes nothing; with
 * other settings (but the same device and decapsulation) it changes what
 * differs, against the values recorded the first time.
 *
 * loader/host, the layer above loader/instance (it takes the managed
 * neighbour entries of neigh.h and the bpffs mount of instance.h):
 *   host.h         the setup, its record, teardown
 *   host_record.h  the record as JSON
 *   host_decap.h   the XDP program and its maps
 *   host_sys.h     sysctls, addresses, tunnel devices, the namespace
 *   host_view.c    what is in effect, for show
 */
#ifndef XLB_HOST_H
#define XLB_HOST_H

#include <limits.h>
#include <stdbool.h>
#include <net/if.h>
#include <linux/types.h>
#include "decap.h"
#include "host_sys.h"

#define XLB_HOST_RUN_DIR	"/run/xlb"
#define XLB_HOST_PIN_ROOT	"/sys/fs/bpf/xlb-host"
#define XLB_HOST_IPIP_DEV	"xlb-ipip"
#define XLB_HOST_IP6TNL_DEV	"xlb-ip6tnl"

enum xlb_host_decap {
	XLB_HOST_DECAP_XDP,	/* decap.bpf.o on the device */
	XLB_HOST_DECAP_KERNEL,	/* ipip and ip6tnl devices, external mode */
};

/* What the operator asks for (`xlb host setup`'s arguments), checked. */
struct xlb_host_spec {
	char dev[IF_NAMESIZE];
	enum xlb_host_decap decap;
	__u16 gue_port;		/* 0: the default, XLB_GUE_DEFAULT_PORT */
	__u32 n_vips, n_locals, n_balancers, n_fleet, n_egress;
	struct xlb_host_addr vips[XLB_DECAP_ADDRS_MAX];
	/* Tunnel addresses besides the device's own. */
	struct xlb_host_addr locals[XLB_DECAP_ADDRS_MAX];
	struct xlb_host_prefix balancers[XLB_DECAP_PREFIXES_MAX];
	struct xlb_host_prefix fleet[XLB_DECAP_PREFIXES_MAX];
	char egress[XLB_DECAP_EGRESS_MAX][IF_NAMESIZE];
};

/* A sysctl setup changed, and the value it had before. */
struct xlb_host_sysctl {
	char key[XLB_SYSCTL_KEY_LEN];		/* host_sys.h's form */
	char old[XLB_SYSCTL_VALUE_LEN];
};
#define XLB_HOST_MAX_SYSCTLS	8

/* A neighbour entry setup made managed: the next hop of a fleet member. */
struct xlb_host_neigh {
	struct xlb_host_addr addr;
	int ifindex;
	char dev[IF_NAMESIZE];
};

/* What a setup changed: everything a teardown undoes. */
struct xlb_host_record {
	__u64 netns_cookie;	/* the namespace's (host_sys.h); 0: unknown */
	int ifindex;		/* spec.dev's */
	struct xlb_host_spec spec;
	char pin_dir[PATH_MAX];	/* xdp: the program and its maps */
	bool tunnels;		/* kernel: the two devices were made */
	__u32 n_sysctls, n_vips_added, n_neigh;
	struct xlb_host_sysctl sysctls[XLB_HOST_MAX_SYSCTLS];
	/* VIPs setup put on lo (not those that were there). */
	struct xlb_host_addr vips_added[XLB_DECAP_ADDRS_MAX];
	struct xlb_host_neigh neigh[XLB_DECAP_PREFIXES_MAX];
};

/* The host as one network namespace has it: opened with its lock, its
 * record read. */
struct xlb_host {
	__u64 netns_inode, netns_cookie;
	char record_path[PATH_MAX];
	char pin_dir[PATH_MAX];
	int lock_fd;
	struct xlb_rtnl nl;
	bool verbose;		/* say each change (p_info) */
	bool have_record;
	/* The record is of a namespace that is gone, whose inode this one
	 * has now: its pins are removed and the record dropped by the next
	 * setup or teardown. */
	bool stale;
	struct xlb_host_record rec;
};

/*
 * Open this network namespace's host: the lock (exclusive when write,
 * waiting up to XLB_HOST_LOCK_WAIT_S for another xlb host command), the
 * record if there is one. Returns 0 or -errno after p_err(). Free with
 * xlb_host_close().
 */
#define XLB_HOST_LOCK_WAIT_S	10
int xlb_host_open(struct xlb_host **host, bool write, bool verbose);
void xlb_host_close(struct xlb_host *host);

/* Set the host up as spec says (see above). 0 or -errno after p_err(). */
int xlb_host_setup(struct xlb_host *host, const struct xlb_host_spec *spec);

/* Undo the setup on dev, whatever of it is still there, and remove the
 * record; what cannot be undone stays in the record (p_err names it). */
int xlb_host_teardown(struct xlb_host *host, const char *dev);

/* The record's xdp program and maps, for show and stats: 0, or -ENOENT
 * after p_err() when this namespace has no setup of decap.bpf.o. */
struct xlb_decap_fds;
int xlb_host_decap_open(const struct xlb_host *host, struct xlb_decap_fds *fds);

/* What is in effect (`xlb host show`): with decap.bpf.o, what its maps
 * hold, which is what it acts on; with the kernel's devices, the record. */
struct xlb_host_view {
	const struct xlb_host_record *rec;
	__u32 prog_id;		/* the pinned program; 0: kernel */
	__u32 attached_id;	/* the program on the device; 0: none */
	const char *mode;	/* its attach mode: "native", "generic" */
	__u16 gue_port;		/* in effect: the default for 0 */
	bool check_source;
	__u32 n_vips, n_tunnel, n_fleet, n_balancers, n_egress;
	struct xlb_host_addr vips[XLB_DECAP_ADDRS_MAX];
	struct xlb_host_addr tunnel[XLB_DECAP_ADDRS_MAX];
	struct xlb_host_prefix fleet[XLB_DECAP_PREFIXES_MAX];
	struct xlb_host_prefix balancers[XLB_DECAP_PREFIXES_MAX];
	char egress[XLB_DECAP_EGRESS_MAX][IF_NAMESIZE];
};
/* 0 or -errno after p_err() (-ENOENT: not set up). */
int xlb_host_view(const struct xlb_host *host, struct xlb_host_view *view);

#endif /* XLB_HOST_H */
