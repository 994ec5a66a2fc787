// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Sysctls, addresses and tunnel devices of the backend host (host_sys.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <net/if.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <linux/if_addr.h>
#include <linux/if_link.h>
#include <linux/if_tunnel.h>

#include "host_sys.h"
#include "xlb.h"

bool xlb_host_addr_eq(const struct xlb_host_addr *a,
		      const struct xlb_host_addr *b)
{
	return a->family == b->family && !memcmp(a->addr, b->addr, sizeof(a->addr));
}

bool xlb_host_prefix_single(const struct xlb_host_prefix *p)
{
	return p->len == (p->family == XLB_AF_INET ? 32 : 128);
}

int xlb_host_netns(__u64 *inode, __u64 *cookie)
{
	socklen_t len = sizeof(*cookie);
	struct stat st;
	int fd;

	if (stat("/proc/self/ns/net", &st))
		return -errno;
	*inode = st.st_ino;
	*cookie = 0;
	fd = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (getsockopt(fd, SOL_SOCKET, SO_NETNS_COOKIE, cookie, &len))
		*cookie = 0;
	close(fd);
	return 0;
}

static int sysctl_path(const char *key, char *path, size_t len)
{
	if (snprintf(path, len, "/proc/sys/%s", key) >= (int)len)
		return -ENAMETOOLONG;
	return 0;
}

int xlb_sysctl_read(const char *key, char *value, size_t len)
{
	char path[160];
	ssize_t n;
	int fd, err;

	err = sysctl_path(key, path, sizeof(path));
	if (err)
		return err;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, value, len - 1);
	err = n < 0 ? -errno : 0;
	close(fd);
	if (err)
		return err;
	while (n > 0 && (value[n - 1] == '\n' || value[n - 1] == ' '))
		n--;
	value[n] = '\0';
	return 0;
}

int xlb_sysctl_write(const char *key, const char *value)
{
	char path[160];
	size_t len = strlen(value);
	int fd, err;

	err = sysctl_path(key, path, sizeof(path));
	if (err)
		return err;
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	err = write(fd, value, len) == (ssize_t)len ? 0 : -errno;
	close(fd);
	return err;
}

const char *xlb_sysctl_name(const char *key, char *buf, size_t len)
{
	size_t i;

	for (i = 0; key[i] && i + 1 < len; i++)
		buf[i] = key[i] == '/' ? '.' : key[i] == '.' ? '/' : key[i];
	buf[i] = '\0';
	return buf;
}

static size_t addr_len(__u8 family)
{
	return family == XLB_AF_INET ? 4 : 16;
}

struct addr_dump {
	int ifindex;
	bool global;
	struct xlb_host_addr *out;
	__u32 max, n;
};

static int addr_one(const struct nlmsghdr *h, void *ctx)
{
	struct addr_dump *d = ctx;
	const struct ifaddrmsg *ifa = NLMSG_DATA(h);
	const void *local = NULL, *address = NULL, *a;
	struct xlb_host_addr *out;
	struct rtattr *rta;
	int len;

	if (h->nlmsg_type != RTM_NEWADDR || (int)ifa->ifa_index != d->ifindex ||
	    (ifa->ifa_family != AF_INET && ifa->ifa_family != AF_INET6) ||
	    (d->global && ifa->ifa_scope != RT_SCOPE_UNIVERSE))
		return 0;
	len = IFA_PAYLOAD(h);
	for (rta = IFA_RTA(ifa); RTA_OK(rta, len); rta = RTA_NEXT(rta, len)) {
		if (rta->rta_type == IFA_LOCAL)
			local = RTA_DATA(rta);
		else if (rta->rta_type == IFA_ADDRESS)
			address = RTA_DATA(rta);
	}
	/* IFA_ADDRESS is the peer's on a point-to-point link; IFA_LOCAL,
	 * when there is one, the host's own. */
	a = local ? local : address;
	if (!a)
		return 0;
	if (d->n == d->max)
		return -E2BIG;
	out = &d->out[d->n++];
	memset(out, 0, sizeof(*out));
	out->family = ifa->ifa_family == AF_INET ? XLB_AF_INET : XLB_AF_INET6;
	memcpy(out->addr, a, addr_len(out->family));
	return 0;
}

int xlb_host_addr_local(struct xlb_rtnl *nl, const struct xlb_host_addr *a,
			bool *local)
{
	__u8 type = RTN_UNSPEC;
	int err;

	err = xlb_rtnl_route_type(nl, a->family == XLB_AF_INET ? AF_INET :
				  AF_INET6, a->addr, &type);
	*local = !err && type == RTN_LOCAL;
	return err;
}

int xlb_host_addrs(struct xlb_rtnl *nl, int ifindex, bool global,
		   struct xlb_host_addr *out, __u32 max, __u32 *n)
{
	struct addr_dump d = { .ifindex = ifindex, .global = global,
			       .out = out, .max = max };
	struct xlb_rtnl_req req;
	struct ifaddrmsg *ifa;
	int err;

	xlb_rtnl_req_init(&req, RTM_GETADDR, 0, sizeof(*ifa));
	ifa = xlb_rtnl_hdr(&req);
	ifa->ifa_family = AF_UNSPEC;
	ifa->ifa_index = ifindex;
	err = xlb_rtnl_dump(nl, &req.n, addr_one, &d);
	*n = d.n;
	return err;
}

static int addr_change(struct xlb_rtnl *nl, __u16 type, __u16 flags,
		       int ifindex, const struct xlb_host_addr *a)
{
	struct xlb_rtnl_req req;
	struct ifaddrmsg *ifa;
	size_t len = addr_len(a->family);

	xlb_rtnl_req_init(&req, type, NLM_F_ACK | flags, sizeof(*ifa));
	ifa = xlb_rtnl_hdr(&req);
	ifa->ifa_family = a->family == XLB_AF_INET ? AF_INET : AF_INET6;
	ifa->ifa_prefixlen = len * 8;
	ifa->ifa_index = ifindex;
	ifa->ifa_scope = RT_SCOPE_UNIVERSE;
	/* A VIP is the balancers' to announce: no duplicate address
	 * detection, which would hold it tentative and probe for it. */
	if (a->family == XLB_AF_INET6)
		ifa->ifa_flags = IFA_F_NODAD;
	xlb_rtnl_attr(&req.n, IFA_LOCAL, a->addr, len);
	xlb_rtnl_attr(&req.n, IFA_ADDRESS, a->addr, len);
	return xlb_rtnl_talk(nl, &req.n, NULL);
}

int xlb_host_addr_add(struct xlb_rtnl *nl, int ifindex,
		      const struct xlb_host_addr *a)
{
	return addr_change(nl, RTM_NEWADDR, NLM_F_CREATE | NLM_F_EXCL, ifindex, a);
}

int xlb_host_addr_del(struct xlb_rtnl *nl, int ifindex,
		      const struct xlb_host_addr *a)
{
	return addr_change(nl, RTM_DELADDR, 0, ifindex, a);
}

/* A request about the link called name. */
static void link_req(struct xlb_rtnl_req *req, __u16 type, __u16 flags,
		     const char *name)
{
	xlb_rtnl_req_init(req, type, NLM_F_ACK | flags, sizeof(struct ifinfomsg));
	xlb_rtnl_attr(&req->n, IFLA_IFNAME, name, strlen(name) + 1);
}

int xlb_host_tunnel_add(struct xlb_rtnl *nl, const char *name,
			const char *kind)
{
	struct rtattr *info, *data;
	struct xlb_rtnl_req req;
	__u8 any = 0;

	link_req(&req, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, name);
	info = xlb_rtnl_nest(&req.n, IFLA_LINKINFO);
	xlb_rtnl_attr(&req.n, IFLA_INFO_KIND, kind, strlen(kind));
	data = xlb_rtnl_nest(&req.n, IFLA_INFO_DATA);
	/* ip6tnl: IPv4 and IPv6 inside, as `ip link add ... type ip6tnl
	 * external` makes it; ipip has IPv4 inside only. */
	if (!strcmp(kind, "ip6tnl"))
		xlb_rtnl_attr(&req.n, IFLA_IPTUN_PROTO, &any, sizeof(any));
	xlb_rtnl_attr(&req.n, IFLA_IPTUN_COLLECT_METADATA, NULL, 0);
	xlb_rtnl_nest_end(&req.n, data);
	xlb_rtnl_nest_end(&req.n, info);
	return xlb_rtnl_talk(nl, &req.n, NULL);
}

int xlb_host_link_up(struct xlb_rtnl *nl, const char *name)
{
	struct xlb_rtnl_req req;
	struct ifinfomsg *ifi;

	link_req(&req, RTM_NEWLINK, 0, name);
	ifi = xlb_rtnl_hdr(&req);
	ifi->ifi_flags = IFF_UP;
	ifi->ifi_change = IFF_UP;
	return xlb_rtnl_talk(nl, &req.n, NULL);
}

int xlb_host_link_del(struct xlb_rtnl *nl, const char *name)
{
	struct xlb_rtnl_req req;

	link_req(&req, RTM_DELLINK, 0, name);
	return xlb_rtnl_talk(nl, &req.n, NULL);
}
