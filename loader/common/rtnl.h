/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Talking to the kernel over rtnetlink: one request, its answer. The
 * instance's next hops (loader/instance/neigh.c), the backend host's
 * addresses, neighbours and tunnel devices (loader/host/) and the probe
 * path's rules and routes (loader/health/hc_path.c) go through it.
 *
 *	struct xlb_rtnl nl = XLB_RTNL_INIT;
 *	struct xlb_rtnl_req req;
 *	struct ifaddrmsg *ifa;
 *
 *	xlb_rtnl_req_init(&req, RTM_NEWADDR, NLM_F_CREATE | NLM_F_ACK,
 *			  sizeof(*ifa));
 *	ifa = xlb_rtnl_hdr(&req);
 *	...
 *	xlb_rtnl_attr(&req.n, IFA_LOCAL, addr, 4);
 *	err = xlb_rtnl_talk(&nl, &req.n, NULL);
 *	xlb_rtnl_close(&nl);
 */
#ifndef XLB_RTNL_H
#define XLB_RTNL_H

#include <stddef.h>
#include <linux/types.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

/* A socket, its sequence and its receive buffer; opened on first use. */
struct xlb_rtnl {
	int fd;
	__u32 seq;
	char buf[16384];
};
#define XLB_RTNL_INIT	{ .fd = -1 }

/* Open the socket now rather than at the first request: 0 or -errno. */
int xlb_rtnl_open(struct xlb_rtnl *nl);

/* A request: header, family header (ifaddrmsg, ndmsg, rtmsg, ifinfomsg),
 * room for the attributes. */
struct xlb_rtnl_req {
	struct nlmsghdr n;
	char body[512];
};

/* A request of type with flags (NLM_F_REQUEST added; NLM_F_ACK for a
 * change) and a zeroed family header of hdr_len bytes, which
 * xlb_rtnl_hdr() gives to fill in. */
void xlb_rtnl_req_init(struct xlb_rtnl_req *req, __u16 type, __u16 flags,
		       size_t hdr_len);
static inline void *xlb_rtnl_hdr(struct xlb_rtnl_req *req)
{
	return NLMSG_DATA(&req->n);
}

/* Append an attribute, or begin and end a nested one (IFLA_LINKINFO). */
void xlb_rtnl_attr(struct nlmsghdr *n, __u16 type, const void *data,
		   size_t len);
struct rtattr *xlb_rtnl_nest(struct nlmsghdr *n, __u16 type);
void xlb_rtnl_nest_end(struct nlmsghdr *n, struct rtattr *nest);

/*
 * Send req and take the kernel's answer: for a get, 0 with *reply (in
 * nl->buf, valid until the next call); for a change, 0 once acknowledged;
 * or -errno, the kernel's refusal (nothing printed).
 */
int xlb_rtnl_talk(struct xlb_rtnl *nl, struct nlmsghdr *req,
		  struct nlmsghdr **reply);

/* A change (NLM_F_ACK added) as xlb_rtnl_talk() makes it: 0 or -errno;
 * on a refusal the kernel's own words (extended ack) in why as
 * " (words)", for a message; why is "" when it gave none. */
int xlb_rtnl_change(struct xlb_rtnl *nl, struct nlmsghdr *req, char *why,
		    size_t why_len);

/* A dump (NLM_F_DUMP added): fn(msg, ctx) for each message until the
 * kernel's end; a non-zero return of fn stops it and is returned. */
int xlb_rtnl_dump(struct xlb_rtnl *nl, struct nlmsghdr *req,
		  int (*fn)(const struct nlmsghdr *msg, void *ctx), void *ctx);

/* The type of the kernel's route to dst (af AF_INET or AF_INET6, the
 * whole address): RTN_LOCAL for an address of this host, whatever
 * interface holds it; RTN_UNREACHABLE without a route, RTN_BLACKHOLE and
 * RTN_PROHIBIT for those (which the kernel answers with an error). 0 or
 * -errno. */
int xlb_rtnl_route_type(struct xlb_rtnl *nl, int af, const void *dst,
			__u8 *type);

void xlb_rtnl_close(struct xlb_rtnl *nl);

#endif /* XLB_RTNL_H */
