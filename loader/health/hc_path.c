// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The path of a probe packet (hc_path.h): bpf/hc.bpf.c loaded against the
 * instance's pinned maps, and per family a rule and a route of xlb's own
 * table that hand every marked packet to it, installed over rtnetlink.
 *
 * The routes go over the device that holds the instance's outer source
 * address, with that address as their preferred source: a probe leaves
 * from the address the backends already reach the balancer at, and its
 * socket sees that device's MTU less the outer header. The kernel hands
 * a packet to an LWT xmit program before it looks for a neighbour, so the
 * VIP needs none, and the balancer needs no route to the VIP of its own.
 */
#include <errno.h>
#include <ifaddrs.h>
#include <limits.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <linux/fib_rules.h>
#include <linux/lwtunnel.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "xlb.h"
#include "hc.h"
#include "report.h"
#include "rtnl.h"
#include "hc_path.h"
#include "hc.skel.h"

#define HC_PROG_NAME	"xlb_hc"

struct xlb_hc_path {
	struct bpf_object *obj;
	int prog_fd;
	struct xlb_rtnl nl;
};

/* ------------------------------------------------------------------ */
/* rtnetlink                                                            */

static void put32(struct nlmsghdr *n, __u16 type, __u32 v)
{
	xlb_rtnl_attr(n, type, &v, sizeof(v));
}

/* Flagged NLA_F_NESTED, as the kernel's strict checking wants a nest. */
static struct rtattr *nest(struct nlmsghdr *n, __u16 type)
{
	return xlb_rtnl_nest(n, type | NLA_F_NESTED);
}

static const char *family_name(int family)
{
	return family == AF_INET ? "IPv4" : "IPv6";
}

/* The rule `fwmark XLB_HC_MARK_BASE/XLB_HC_MARK_MASK lookup XLB_HC_TABLE
 * pref XLB_HC_RULE_PRIO`, added or deleted. */
static void rule_msg(struct xlb_rtnl_req *req, int family, bool add)
{
	struct fib_rule_hdr *rule;

	xlb_rtnl_req_init(req, add ? RTM_NEWRULE : RTM_DELRULE,
			  add ? NLM_F_CREATE | NLM_F_EXCL : 0, sizeof(*rule));
	rule = xlb_rtnl_hdr(req);
	rule->family = family;
	rule->table = RT_TABLE_UNSPEC;	/* above 255: FRA_TABLE */
	rule->action = FR_ACT_TO_TBL;
	put32(&req->n, FRA_PRIORITY, XLB_HC_RULE_PRIO);
	put32(&req->n, FRA_FWMARK, XLB_HC_MARK_BASE);
	put32(&req->n, FRA_FWMASK, XLB_HC_MARK_MASK);
	put32(&req->n, FRA_TABLE, XLB_HC_TABLE);
}

/* Delete every copy of the rule (rules have no replace): returns 0 once
 * none is left. */
static int rules_del(struct xlb_rtnl *nl, int family, char *why,
		     size_t why_len)
{
	struct xlb_rtnl_req req;
	int err, i;

	/* Each delete takes one copy; a few runs killed at the wrong moment
	 * leave a few. */
	for (i = 0; i < 64; i++) {
		rule_msg(&req, family, false);
		err = xlb_rtnl_change(nl, &req.n, why, why_len);
		if (err == -ENOENT)
			return 0;
		if (err)
			return err;
	}
	return -EEXIST;
}

/* A request on a route of the table, its header to complete. */
static struct rtmsg *route_req(struct xlb_rtnl_req *req, __u16 type,
			       __u16 flags, int family)
{
	struct rtmsg *rt;

	xlb_rtnl_req_init(req, type, flags, sizeof(*rt));
	rt = xlb_rtnl_hdr(req);
	rt->rtm_family = family;
	rt->rtm_table = RT_TABLE_UNSPEC;	/* above 255: RTA_TABLE */
	rt->rtm_protocol = RTPROT_STATIC;
	put32(&req->n, RTA_TABLE, XLB_HC_TABLE);
	return rt;
}

/* The table's default route through prog (add), or away (delete). */
static void route_msg(struct xlb_rtnl_req *req, int family, bool add,
		      int ifindex, const void *src, int prog_fd)
{
	struct rtattr *encap, *xmit;
	struct rtmsg *rt;

	rt = route_req(req, add ? RTM_NEWROUTE : RTM_DELROUTE,
		       add ? NLM_F_CREATE | NLM_F_REPLACE : 0, family);
	if (!add) {
		/* Any scope and type: the unreachable route goes too. */
		rt->rtm_scope = RT_SCOPE_NOWHERE;
		return;
	}
	/* As `ip route add default dev D` makes it: no gateway, on link. */
	rt->rtm_scope = family == AF_INET ? RT_SCOPE_LINK : RT_SCOPE_UNIVERSE;
	rt->rtm_type = RTN_UNICAST;
	put32(&req->n, RTA_OIF, ifindex);
	if (src)
		xlb_rtnl_attr(&req->n, RTA_PREFSRC, src,
			      family == AF_INET ? 4 : 16);
	xlb_rtnl_attr(&req->n, RTA_ENCAP_TYPE, &(__u16){ LWTUNNEL_ENCAP_BPF },
		      sizeof(__u16));
	encap = nest(&req->n, RTA_ENCAP);
	xmit = nest(&req->n, LWT_BPF_XMIT);
	put32(&req->n, LWT_BPF_PROG_FD, prog_fd);
	xlb_rtnl_attr(&req->n, LWT_BPF_PROG_NAME, HC_PROG_NAME,
		      sizeof(HC_PROG_NAME));
	xlb_rtnl_nest_end(&req->n, xmit);
	put32(&req->n, LWT_BPF_XMIT_HEADROOM, XLB_HC_HEADROOM);
	xlb_rtnl_nest_end(&req->n, encap);
}

/* The table's default route of a family whose probes cannot be sent:
 * `unreachable default`, so that they fail at once rather than leave
 * unencapsulated by the main table's routes (to a router that would hand
 * them back to the balancer, and to another backend than the one probed). */
static void route_unreachable_msg(struct xlb_rtnl_req *req, int family)
{
	struct rtmsg *rt;

	rt = route_req(req, RTM_NEWROUTE, NLM_F_CREATE | NLM_F_REPLACE, family);
	rt->rtm_scope = RT_SCOPE_UNIVERSE;
	rt->rtm_type = RTN_UNREACHABLE;
}

/* ------------------------------------------------------------------ */
/* The device                                                           */

struct hc_dev {
	int ifindex;
	char name[IF_NAMESIZE];
	bool has4, has6;	/* the outer source of the family is on it */
};

static bool addr_is(const struct sockaddr *sa, int family, const void *addr)
{
	if (!sa || sa->sa_family != family)
		return false;
	if (family == AF_INET)
		return !memcmp(&((const struct sockaddr_in *)sa)->sin_addr, addr, 4);
	return !memcmp(&((const struct sockaddr_in6 *)sa)->sin6_addr, addr, 16);
}

static bool on_dev(const struct ifaddrs *all, const char *dev, int family,
		   const void *addr)
{
	const struct ifaddrs *i;

	for (i = all; i; i = i->ifa_next)
		if (!strcmp(i->ifa_name, dev) && addr_is(i->ifa_addr, family, addr))
			return true;
	return false;
}

static bool has_src6(const struct xlb_config *cfg)
{
	static const __be32 none6[4];

	return memcmp(cfg->src6, none6, sizeof(none6)) != 0;
}

/* The device holding the outer IPv4 source, or else the IPv6 one. */
static int find_dev(const struct xlb_config *cfg, struct hc_dev *dev)
{
	bool want6 = has_src6(cfg);
	struct ifaddrs *all, *i;
	const char *name = NULL;

	if (!cfg->src4 && !want6) {
		p_err("the instance has no outer source address: set src4 or src6 first (xlb config set)");
		return -ENOENT;
	}
	if (getifaddrs(&all)) {
		p_err("cannot list the addresses of this host: %s", strerror(errno));
		return -errno;
	}
	for (i = all; i && !name; i = i->ifa_next)
		if (cfg->src4 && addr_is(i->ifa_addr, AF_INET, &cfg->src4))
			name = i->ifa_name;
	for (i = all; i && !name; i = i->ifa_next)
		if (want6 && addr_is(i->ifa_addr, AF_INET6, cfg->src6))
			name = i->ifa_name;
	if (name) {
		snprintf(dev->name, sizeof(dev->name), "%s", name);
		dev->ifindex = if_nametoindex(name);
		dev->has4 = cfg->src4 && on_dev(all, name, AF_INET, &cfg->src4);
		dev->has6 = want6 && on_dev(all, name, AF_INET6, cfg->src6);
	}
	freeifaddrs(all);
	if (!name || !dev->ifindex) {
		p_err("no device of this host holds the instance's outer source address: probes leave from it");
		return -EADDRNOTAVAIL;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* The program                                                          */

static int reuse_pinned(struct bpf_object *obj, const char *pin_dir,
			const char *name)
{
	char path[PATH_MAX];
	struct bpf_map *map;
	int fd, err;

	map = bpf_object__find_map_by_name(obj, name);
	if (!map)
		return -ENOENT;
	snprintf(path, sizeof(path), "%s/%s", pin_dir, name);
	fd = bpf_obj_get(path);
	if (fd < 0) {
		err = -errno;
		p_err("cannot open %s: %s (no xlb instance in %s?)", path,
		      strerror(-err), pin_dir);
		return err;
	}
	err = bpf_map__reuse_fd(map, fd);
	close(fd);
	if (err)
		p_err("cannot use %s: %s", path, strerror(-err));
	return err;
}

static int load(struct xlb_hc_path *path, const char *pin_dir,
		const char *obj_path)
{
	DECLARE_LIBBPF_OPTS(bpf_object_open_opts, opts,
			    .object_name = "hc", .pin_root_path = pin_dir);
	struct bpf_program *prog;
	const void *bytes;
	size_t size;
	int err;

	if (obj_path) {
		path->obj = bpf_object__open_file(obj_path, &opts);
	} else {
		/* Embedded in the binary, as xlb.bpf.o is: nothing to find
		 * on disk. */
		bytes = hc__elf_bytes(&size);
		path->obj = bpf_object__open_mem(bytes, size, &opts);
	}
	err = libbpf_get_error(path->obj);
	if (err) {
		path->obj = NULL;
		p_err("cannot open the probe program %s: %s",
		      obj_path ? obj_path : "(built in)", strerror(-err));
		return err;
	}
	err = reuse_pinned(path->obj, pin_dir, XLB_MAP_CONFIG) ?:
	      reuse_pinned(path->obj, pin_dir, XLB_MAP_BACKENDS);
	if (err)
		return err;
	err = bpf_object__load(path->obj);
	if (err) {
		p_err("cannot load the probe program: %s", strerror(-err));
		return err;
	}
	prog = bpf_object__find_program_by_name(path->obj, HC_PROG_NAME);
	if (!prog) {
		p_err("the probe program has no %s", HC_PROG_NAME);
		return -ENOENT;
	}
	path->prog_fd = bpf_program__fd(prog);
	return 0;
}

static int read_config(const struct xlb_hc_path *path, struct xlb_config *cfg)
{
	struct bpf_map *map = bpf_object__find_map_by_name(path->obj,
							    XLB_MAP_CONFIG);
	__u32 zero = 0;

	if (bpf_map_lookup_elem(bpf_map__fd(map), &zero, cfg)) {
		p_err("cannot read the instance's %s: %s", XLB_MAP_CONFIG,
		      strerror(errno));
		return -errno;
	}
	return 0;
}

/* ------------------------------------------------------------------ */

/* The rule to the table, replacing any copy a killed run left. */
static int install_rule(struct xlb_rtnl *nl, int family, char *why,
			size_t why_len)
{
	struct xlb_rtnl_req req;
	int err;

	err = rules_del(nl, family, why, why_len);
	if (err)
		return err;
	rule_msg(&req, family, true);
	return xlb_rtnl_change(nl, &req.n, why, why_len);
}

/*
 * The probe path of one family (the family of the VIPs probed): the route
 * through the program, then the rule. A family the kernel refuses (IPv6
 * disabled on the device, say) is skipped with a note: its probes are
 * then sent nowhere (an unreachable route, where the kernel takes one),
 * and each reports its failure as a result. Returns 0 when the family's
 * probes can be sent, or the kernel's -errno.
 */
static int install_family(struct xlb_hc_path *path, int family,
			  const struct hc_dev *dev, const void *src)
{
	const char *what = "route";
	struct xlb_rtnl_req req;
	char why[256];
	int err;

	route_msg(&req, family, true, dev->ifindex, src, path->prog_fd);
	err = xlb_rtnl_change(&path->nl, &req.n, why, sizeof(why));
	if (!err) {
		what = "rule";
		err = install_rule(&path->nl, family, why, sizeof(why));
		if (!err)
			return 0;
	}
	p_info("xlb: no probe path for %s VIPs: cannot add its %s (table %u over %s): %s%s; their backends cannot be probed, each probe fails (no route to host)",
	       family_name(family), what, XLB_HC_TABLE, dev->name,
	       strerror(-err), why);
	route_unreachable_msg(&req, family);
	if (!xlb_rtnl_change(&path->nl, &req.n, why, sizeof(why)))
		install_rule(&path->nl, family, why, sizeof(why));
	return err;
}

static void remove_family(struct xlb_rtnl *nl, int family)
{
	struct xlb_rtnl_req req;
	char why[256];

	rules_del(nl, family, why, sizeof(why));
	route_msg(&req, family, false, 0, NULL, -1);
	xlb_rtnl_change(nl, &req.n, why, sizeof(why));
}

int xlb_hc_path_install(const char *pin_dir, const char *obj_path,
			struct xlb_hc_path **out)
{
	struct xlb_hc_path *path;
	struct xlb_config cfg;
	struct hc_dev dev = {};
	int err, err4;

	path = calloc(1, sizeof(*path));
	if (!path)
		return -ENOMEM;
	path->nl = (struct xlb_rtnl)XLB_RTNL_INIT;
	err = load(path, pin_dir, obj_path) ?: read_config(path, &cfg) ?:
	      find_dev(&cfg, &dev);
	if (err)
		goto fail;
	/* The program drops a probe to a backend of a family without an
	 * outer source (drop_no_source): say so once here. */
	if (!cfg.src4)
		p_info("xlb: the instance has no outer IPv4 source: probes of IPv4 backends fail until `xlb config set src4`");
	if (!has_src6(&cfg))
		p_info("xlb: the instance has no outer IPv6 source: probes of IPv6 backends fail until `xlb config set src6`");
	err = xlb_rtnl_open(&path->nl);
	if (err) {
		p_err("cannot open rtnetlink: %s", strerror(-err));
		goto fail;
	}
	err4 = install_family(path, AF_INET, &dev, dev.has4 ? &cfg.src4 : NULL);
	err = install_family(path, AF_INET6, &dev, dev.has6 ? cfg.src6 : NULL);
	if (err4 && err) {
		p_err("cannot install the probe path over %s for either family (the notes above say why)",
		      dev.name);
		goto fail;
	}
	*out = path;
	return 0;
fail:
	xlb_hc_path_remove(path);
	return err;
}

void xlb_hc_path_remove(struct xlb_hc_path *path)
{
	if (!path)
		return;
	/* Open once the install began: nothing of this run to remove
	 * before. */
	if (path->nl.fd >= 0) {
		remove_family(&path->nl, AF_INET);
		remove_family(&path->nl, AF_INET6);
		xlb_rtnl_close(&path->nl);
	}
	bpf_object__close(path->obj);
	free(path);
}
