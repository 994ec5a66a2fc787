// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Refusing a VIP that is an address of this host (see vip_local.h). */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "addr.h"
#include "report.h"
#include "rtnl.h"
#include "vip_local.h"

int xlb_vip_local_check(const struct xlb_vip_key *key, const char *what)
{
	struct xlb_rtnl nl = XLB_RTNL_INIT;
	char addr[XLB_ADDR_STRLEN];
	__u8 type = RTN_UNSPEC;
	int err;

	err = xlb_rtnl_route_type(&nl, key->family == XLB_AF_INET ?
				  AF_INET : AF_INET6, key->addr, &type);
	xlb_rtnl_close(&nl);
	xlb_addr_str(key->addr, key->family, addr, sizeof(addr));
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
