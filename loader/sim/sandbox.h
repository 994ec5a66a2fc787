/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The packet sandbox: the XDP program run on frames with BPF_PROG_TEST_RUN, with a kernel
 * routing and neighbour table behind it so that bpf_fib_lookup resolves.
 * Used by the datapath tests, the benchmarks and `xlb replay --via bpf`.
 *
 * xlb_sandbox_setup() moves the calling process into a network
 * namespace of its own (unshare(CLONE_NEWNET)): nothing it creates can touch
 * the host's interfaces or outlive the process. Inside it:
 *
 *   in    (ingress, "xlbt0")  198.51.100.1/25      2001:db8:100::1/64
 *         gateway .2 / ::2 (static neighbour XLB_SANDBOX_MAC_GW);
 *         default routes of both families point there: XDP_TX
 *   other ("xlbt1")           198.51.100.129/25    2001:db8:101::1/64
 *         gateway .130 / ::2 (XLB_SANDBOX_MAC_OTHER_GW)
 *
 *   backends in                            next hop
 *   203.0.113.64/26   2001:db8:b1::/48      via other: XDP_REDIRECT
 *   203.0.113.128/26  2001:db8:b2::/48      gateway without neighbour entry
 *   203.0.113.192/26  2001:db8:b3::/48      unreachable route
 *   anything else                           via in: XDP_TX
 *
 * Forwarding is on (bpf_fib_lookup requires it); the outer source addresses
 * are the in interface's: XLB_SANDBOX_SRC4 / XLB_SANDBOX_SRC6. Interfaces have
 * the default MTU, 1500.
 *
 * loader/sim, layer 3 of loader/ (may include common/ and algo/):
 *   sandbox.h      this sandbox
 *   packets.h      frames built byte by byte, independently of the datapath
 *   pcap_write.h   frames out to a pcap file
 * The tests, the benchmarks and `xlb replay --via bpf` share it.
 */
#ifndef XLB_SANDBOX_H
#define XLB_SANDBOX_H

#include <linux/types.h>

struct bpf_object;

#define XLB_SANDBOX_IF_IN		"xlbt0"
#define XLB_SANDBOX_IF_OTHER	"xlbt1"
#define XLB_SANDBOX_SRC4		"198.51.100.1"
#define XLB_SANDBOX_SRC6		"2001:db8:100::1"
#define XLB_SANDBOX_NET_REDIRECT4	"203.0.113.64/26"
#define XLB_SANDBOX_NET_REDIRECT6	"2001:db8:b1::/48"
#define XLB_SANDBOX_NET_UNRESOLVED4 "203.0.113.128/26"
#define XLB_SANDBOX_NET_UNRESOLVED6 "2001:db8:b2::/48"
#define XLB_SANDBOX_NET_UNREACHABLE4 "203.0.113.192/26"
#define XLB_SANDBOX_NET_UNREACHABLE6 "2001:db8:b3::/48"
#define XLB_SANDBOX_GW4		"198.51.100.2"
#define XLB_SANDBOX_GW6		"2001:db8:100::2"
#define XLB_SANDBOX_MTU		1500

#define XLB_SANDBOX_MAC_IN		{ 0x02, 0x58, 0x4c, 0x42, 0x00, 0x01 }
#define XLB_SANDBOX_MAC_GW		{ 0x02, 0x58, 0x4c, 0x42, 0x00, 0x02 }
#define XLB_SANDBOX_MAC_OTHER	{ 0x02, 0x58, 0x4c, 0x42, 0x01, 0x01 }
#define XLB_SANDBOX_MAC_OTHER_GW	{ 0x02, 0x58, 0x4c, 0x42, 0x01, 0x02 }

struct xlb_sandbox {
	int ifindex;		/* "in": ctx ingress, XDP_TX egress */
	int ifindex_other;	/* "other": XDP_REDIRECT egress */
};

/* Enter a fresh network namespace and build the topology above.
 * Returns 0 or -errno after p_err() (-EPERM: not root). */
int xlb_sandbox_setup(struct xlb_sandbox *env);

/*
 * Give the route to prefix (IPv6, out of "in" to its gateway) an MTU of
 * mtu, locked: bpf_fib_lookup checks the packets against it, not the
 * device's. Returns 0 or -EIO.
 */
int xlb_sandbox_route_mtu(const char *prefix6, __u32 mtu);

/* Run ip(8) with a batch of commands (one per line) in the current network
 * namespace, its output discarded. Returns 0 or -EIO. */
int xlb_sandbox_ip(const char *batch);

/*
 * Open and load a BPF object file with none of its maps pinned (the maps
 * are the object's own, invisible to a running instance). Returns 0 and
 * sets *obj, or -errno after p_err() (verifier log included).
 */
int xlb_sandbox_load(const char *path, struct bpf_object **obj);

/* The pinned-by-name maps of an xlb object, as file descriptors. */
struct xlb_obj_maps {
	int config;
	int vips;
	int tables;
	int backends;
	int vip_stats;
	int backend_stats;
	int stats;
	int conntrack;
	int vip_slots;		/* -1: an object without them */
};

/* Returns 0 or -ENOENT when the object lacks one of them. */
int xlb_obj_maps(struct bpf_object *obj, struct xlb_obj_maps *maps);

/*
 * A VIP's record written into the object's VIP map and copied into its
 * slot (include/xlb.h), or deleted and its slot emptied if it holds the
 * VIP, as the loader does. Return 0 or -errno.
 */
int xlb_obj_vip_write(const struct xlb_obj_maps *m,
		      const struct xlb_vip_key *key, const struct xlb_vip *vip);
int xlb_obj_vip_delete(const struct xlb_obj_maps *m,
		       const struct xlb_vip_key *key);

/* The bytes of a frame BPF_PROG_TEST_RUN puts in its first buffer: a page
 * less XDP's headroom and the shared info at its end. */
#define XLB_SANDBOX_FIRST_BUFFER	(4096 - 256 - 320)

/*
 * Run prog once on a frame received on ifindex (0: the namespace's
 * loopback). A frame longer than XLB_SANDBOX_FIRST_BUFFER is handed over
 * in several buffers, as a driver would, which only a multi-buffer
 * program (BPF_F_XDP_HAS_FRAGS) takes. out receives the frame as the program left it, whatever the
 * verdict; *out_len is its capacity on entry and the frame length on
 * return. Returns 0 or -errno.
 */
int xlb_sandbox_run(int prog_fd, int ifindex, const void *in, __u32 len,
		void *out, __u32 *out_len, __u32 *retval);

#endif /* XLB_SANDBOX_H */
