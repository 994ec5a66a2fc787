// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Refusing a VIP that is an address of this host (see vip_local.h). */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "addr.h"
#include "report.h"
#include "rtnl.h"
#include "vip_local.h"

/* The type of the route to dst, as RTM_GETROUTE gives it: RTN_LOCAL for
 * an address of this host, whatever interface holds it. */
static int route_type(struct xlb_rtnl *nl, const __be32 dst[4], __u8 family,
		      __u8 *type)
{
	size_t len = family == XLB_AF_INET ? 4 : 16;
	struct xlb_rtnl_req req;
	struct nlmsghdr *h;
	struct rtmsg *r;
	int err;

	xlb_rtnl_req_init(&req, RTM_GETROUTE, 0, sizeof(*r));
	r = xlb_rtnl_hdr(&req);
	r->rtm_family = family == XLB_AF_INET ? AF_INET : AF_INET6;
	r->rtm_dst_len = len * 8;
	xlb_rtnl_attr(&req.n, RTA_DST, dst, len);
	err = xlb_rtnl_talk(nl, &req.n, &h);
	if (err)
		return err;
	if (h->nlmsg_type != RTM_NEWROUTE)
		return -EPROTO;
	*type = ((struct rtmsg *)NLMSG_DATA(h))->rtm_type;
	return 0;
}

int xlb_vip_local_check(const struct xlb_vip_key *key, const char *what)
{
	struct xlb_rtnl nl = XLB_RTNL_INIT;
	char addr[XLB_ADDR_STRLEN];
	__u8 type = RTN_UNSPEC;
	int err;

	err = route_type(&nl, key->addr, key->family, &type);
	xlb_rtnl_close(&nl);
	xlb_addr_str(key->addr, key->family, addr, sizeof(addr));
	/* No route at all: certainly not an address of this host. */
	if (err == -ENETUNREACH || err == -EHOSTUNREACH)
		return 0;
	if (err) {
		p_err("%s: cannot ask the routes about %s: %s", what, addr,
		      strerror(-err));
		return err;
	}
	if (type != RTN_LOCAL)
		return 0;
	p_err("%s: %s is an address of this host (routed as local): the host answers packets to it itself, and probes of its backends would reach this host; use an address no interface here holds",
	      what, addr);
	return -EADDRNOTAVAIL;
}
